"""``registry.register``: a backend instance made at run time is chosen by name like a built-in one."""

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry
from tiles.backends.interpreter import InterpreterBackend


class CountingInterpreter(InterpreterBackend):
    """The interpreter, counting the launches it runs."""

    def __init__(self) -> None:
        self.launches = 0

    def launch(self, compiled, grid, args, stream=None):
        self.launches += 1
        super().launch(compiled, grid, args, stream)


@tiles.jit
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)


def test_registered_backend_runs_by_name_and_by_set_backend(rng):
    counting = CountingInterpreter()
    registry.register("counting-test", counting)
    x = rng.standard_normal(37).astype(np.float32)
    out = np.full(37, np.nan, np.float32)
    scale[(3,)](x, out, 37, BLOCK=16, backend="counting-test")
    np.testing.assert_array_equal(out, x * 3)
    assert counting.launches == 1 and registry.status("counting-test") == (True, "")
    tiles.set_backend("counting-test")
    try:
        scale[(3,)](x, out, 37, BLOCK=16)
        assert counting.launches == 2 and registry.default() is counting
    finally:
        tiles.set_backend(None)
    assert registry.default() is not counting


def test_register_refuses_what_is_not_a_backend():
    with pytest.raises(TypeError, match="takes a tiles Backend instance"):
        registry.register("not-a-backend", object())  # type: ignore[arg-type]
