"""docs/porting-from-triton.md has a status for every public Triton name, and its 'supported'
rows name things tiles really has (regenerate with `python docs/generate_porting.py`)."""

import importlib.util
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
HINT = "run `python docs/generate_porting.py` (and add a line to docs/porting_notes.txt for a name without a status)"


def _generator():
    if "generate_porting" not in sys.modules:
        spec = importlib.util.spec_from_file_location("generate_porting", DOCS / "generate_porting.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["generate_porting"] = module
        spec.loader.exec_module(module)
    return sys.modules["generate_porting"]


def _documented_rows():
    text = (DOCS / "porting-from-triton.md").read_text()
    return re.findall(r"^\| `([^`]+)` \| `([^`]+)` \| ([^|]*) \|", text, re.MULTILINE)


def test_every_triton_name_has_a_status():
    generator = _generator()
    missing = [row.name for row in generator.rows() if not row.status]
    assert not missing, f"{HINT}; Triton names without a status: {missing}"


def test_every_triton_name_is_in_the_table():
    generator = _generator()
    documented = {name for name, _, status in _documented_rows() if "no status" not in status}
    missing = [name for name in generator.triton_names() if name not in documented]
    assert not missing, f"{HINT}; not in the table: {missing}"


def test_supported_names_exist_in_tiles():
    generator = _generator()
    claimed = [(name, spelled) for name, spelled, status in _documented_rows() if status.startswith("supported")]
    assert len(claimed) > 100
    absent = [name for name, spelled in claimed if not generator.present(spelled)]
    assert not absent, f"{HINT}; marked supported but missing from tiles: {absent}"


def test_table_is_current():
    generator = _generator()
    page = (DOCS / "porting-from-triton.md").read_text()
    assert generator.render(page, generator.rows()) == page, f"{HINT}; the table is stale"


def test_notes_are_well_formed():
    generator = _generator()
    for name, (kind, text) in generator.notes().items():
        assert text, f"porting_notes.txt: {name} ({kind}) has no explanation"
