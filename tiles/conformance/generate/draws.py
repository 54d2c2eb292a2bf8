"""Drawing helpers the generators share (``strategies.py``, ``sync.py``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import strategies as st

Draw = Callable[[st.SearchStrategy[Any]], Any]


def choose(draw: Draw, options: Sequence[Any]) -> Any:
    """One of ``options`` (shrinking toward the first), drawn as an index: the integer strategy is
    cached, a ``sampled_from`` would be built and validated anew at every draw (slow shrinking)."""
    return options[draw(st.integers(0, len(options) - 1))]
