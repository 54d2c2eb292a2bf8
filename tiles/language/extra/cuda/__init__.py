"""``tl.extra.cuda``: the same portable libdevice functions under Triton's cuda spelling, and
the grid-dependence controls of programmatic dependent launch."""

from . import libdevice  # noqa: F401


def gdc_wait() -> None:
    """Wait until the grids this launch depends on have finished and their writes are visible.
    tiles never overlaps a launch with the one before it (``launch_pdl`` is an accepted hint), so
    that already holds wherever this runs: a no-op on every backend."""


def gdc_launch_dependents() -> None:
    """Allow a dependent launch to start early (programmatic dependent launch).  tiles starts the
    next launch only after this one ends, so this changes nothing: a no-op on every backend."""
