"""Slips that once passed the whole ci profile (issue 31), planted as ``planted.py`` plants its
defects; ``test_planted.py: CAUGHT_BY`` names the ci case that now reports each.

* a ``for`` loop with a negative step compared as if the step were positive (no ci kernel counted
  down: ``control/step_minus_one`` and its neighbours now do);
* a masked vector store writing its masked-off lanes (ci outputs started as zeros, the value those
  lanes held after a masked load's ``other=0``: outputs now start as a sentinel, ``sentinel.py``).

The third slip of the issue, a float atomic max/min done on the integer bits, is
``planted_sync.FloatAtomicMaxOnBits`` (the ``sync`` family compares two negatives).
"""

from __future__ import annotations

import re
from typing import Any

from .planted import EMITTER, Planted

_FOR = re.compile(r"^for \((?P<init>[^;]*); (?P<cond>.*); (?P<iv>\w+) \+= (?P<step>.*)\) \{$")


def _upward(cond: str) -> str:
    """The loop condition as if the step were positive: ``i < ub``."""
    if cond.startswith("(") and " ? " in cond:  # (step > 0 ? i < ub : i > ub)
        return cond.split(" ? ", 1)[1].rsplit(" : ", 1)[0]
    return cond.replace(" > ", " < ", 1)


class NegativeStepLoopNeverRuns(Planted):
    """``for`` headers compare ``i < ub`` whatever the step's sign: loops that count down never run."""
    name = "planted-negative-step-upward"
    target_name = f"{EMITTER}._line"

    @staticmethod
    def replace(original: Any) -> Any:
        def _line(self: Any, text: str) -> None:
            m = _FOR.match(text)
            if m:
                text = f"for ({m['init']}; {_upward(m['cond'])}; {m['iv']} += {m['step']}) {{"
            original(self, text)
        return _line


class VectorStoreIgnoresMask(Planted):
    """A vector store (a chunk of neighbours known to share one mask) writes the chunk whether its
    mask is on or off."""
    name = "planted-vector-store-ignores-mask"
    target_name = "tiles.backends.opencl.emit_c:OpenCLEmitter.store_vector"

    @staticmethod
    def replace(original: Any) -> Any:
        def store_vector(self: Any, p: Any, values: Any, dtype: Any, mask: Any) -> None:
            original(self, p, values, dtype, None)
        return store_vector


DEFECTS: tuple[type[Planted], ...] = (NegativeStepLoopNeverRuns, VectorStoreIgnoresMask)
TARGETS = {d.name: d.target_name for d in DEFECTS}
