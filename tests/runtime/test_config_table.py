"""``tiles/config.py``'s table names every environment variable tiles reads."""

import re
from pathlib import Path

import tiles
from tiles import config


def test_every_environment_variable_tiles_reads_is_in_the_config_table():
    root = Path(tiles.__file__).parent
    read: set[str] = set()
    for path in root.rglob("*.py"):
        text = path.read_text()
        read |= set(re.findall(r"""environ(?:\.get)?\(?\[?\s*["'](TILES_[A-Z0-9_]+)["']""", text))
    assert {"TILES_BACKEND", "TILES_OCCUPANCY", "TILES_LIBDEVICE"} <= read  # the pattern finds them
    documented = set(re.findall(r"``(TILES_[A-Z0-9_]+)", config.__doc__ or ""))
    assert read - documented == set(), f"read but not in config.py's table: {sorted(read - documented)}"
