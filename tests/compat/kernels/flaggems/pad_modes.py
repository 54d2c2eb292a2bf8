"""FlagGems style ``F.pad`` on the last two dimensions with the mode a string ``tl.constexpr``:
each output element maps back to a source index (``constant``: masked load with the fill value as
``other``; ``reflect``: ``tl.abs`` folding at both edges; ``replicate``: ``tl.minimum``/
``tl.maximum`` clamping; ``circular``: a C-style ``%`` fixed up for negatives), with negative
padding (cropping) on one side and int32 data."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _source_index(o, before, size, MODE: tl.constexpr):
    i = o - before
    if MODE == "reflect":
        i = tl.abs(i)
        i = (size - 1) - tl.abs((size - 1) - i)
    elif MODE == "replicate":
        i = tl.minimum(tl.maximum(i, 0), size - 1)
    elif MODE == "circular":
        i = i % size
        i = tl.where(i < 0, i + size, i)
    return i


@tiles.jit
def _pad2d(x_ptr, out_ptr, H, W, OH, OW, top, left, value, MODE: tl.constexpr, BLOCK_H: tl.constexpr,
           BLOCK_W: tl.constexpr):
    plane = tl.program_id(0)
    oh = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    ow = tl.program_id(2) * BLOCK_W + tl.arange(0, BLOCK_W)
    out_mask = (oh[:, None] < OH) & (ow[None, :] < OW)
    ih = _source_index(oh, top, H, MODE)
    iw = _source_index(ow, left, W, MODE)
    inside = (ih[:, None] >= 0) & (ih[:, None] < H) & (iw[None, :] >= 0) & (iw[None, :] < W)
    x = tl.load(x_ptr + plane * H * W + ih[:, None] * W + iw[None, :], mask=out_mask & inside, other=value)
    tl.store(out_ptr + plane * OH * OW + oh[:, None] * OW + ow[None, :], x, mask=out_mask)


def check(rng):
    planes, H, W = 3, 7, 9
    x = rng.integers(-1000, 1000, (planes, H, W)).astype(np.int32)
    pads = (2, 3, -1, 4)  # top, bottom, left, right
    top, bottom, left, right = pads
    OH, OW = H + top + bottom, W + left + right
    numpy_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}
    for mode in ("constant", "reflect", "replicate", "circular"):
        out = np.empty((planes, OH, OW), np.int32)
        grid = (planes, tiles.cdiv(OH, 8), tiles.cdiv(OW, 8))
        _pad2d[grid](x, out, H, W, OH, OW, top, left, -5, MODE=mode, BLOCK_H=8, BLOCK_W=8)
        kwargs = {"constant_values": -5} if mode == "constant" else {}
        # the negative left pad crops one column: pad on the right only, then drop it
        full = np.pad(x, ((0, 0), (top, bottom), (0, right)), mode=numpy_mode[mode], **kwargs)
        expected = full[:, :, -left:]
        close(out, expected)
