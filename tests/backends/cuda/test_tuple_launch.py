"""Tuple arguments (``runtime/expanded_args.py``) through the CUDA launcher, over the stand-in
libcuda with fake torch tensors: the launch carries each element as its own parameter, in order,
on the first (general) launch and on the cached ones after it."""

import struct

from test_direct_launch import Tensor, _last, fake, stub  # noqa: F401  (fixtures)

import tiles
import tiles.language as tl


@tiles.jit
def pair_axpy(ptrs, scales, n, BLOCK: tl.constexpr):
    x_ptr, out_ptr = ptrs
    a, b = scales
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * a + b, mask=mask)


def test_tuple_elements_launch_as_their_own_parameters(fake):  # noqa: F811
    pair_axpy._launches.clear()
    x, out = Tensor(0x10000), Tensor(0x20000)
    for scale in (2.5, 0.75, -3.0):  # the general path first, then the cached launch
        pair_axpy[(2,)]((x, out), (scale, -1.0), 100, BLOCK=64, backend="cuda")
        args, stream, grid, _ = _last(fake.lib, "@QQffi3i")
        assert struct.unpack("@QQffi3i", args) == (0x10000, 0x20000, scale, -1.0, 100, 2, 1, 1)
        assert stream == fake.streams[0] and grid == (2, 1, 1)
    other = Tensor(0x30000)
    pair_axpy[(1,)]((other, out), (1.0, 2.0), 7, BLOCK=64, backend="cuda")
    args, _, grid, _ = _last(fake.lib, "@QQffi3i")
    assert struct.unpack("@QQffi3i", args)[:5] == (0x30000, 0x20000, 1.0, 2.0, 7) and grid == (1, 1, 1)
