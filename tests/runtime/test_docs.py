"""docs/language.md covers every IR op and every tl function (regenerate it when this fails)."""

from pathlib import Path

import tiles.language as tl
from tiles.core.ops import Op

LANGUAGE_MD = Path(__file__).resolve().parents[2] / "docs" / "language.md"
HINT = "run `python docs/generate_language.py` to regenerate docs/language.md"


def test_language_reference_covers_every_op_and_function():
    text = LANGUAGE_MD.read_text()
    missing_ops = [op.value for op in Op if f"| `{op.value}` |" not in text]
    assert not missing_ops, f"{HINT}; ops missing: {missing_ops}"
    functions = [n for n in tl.__all__ if callable(getattr(tl, n)) and not isinstance(getattr(tl, n), type)]
    missing = [n for n in functions if f"| `tl.{n}` |" not in text]
    assert not missing, f"{HINT}; functions missing: {missing}"
