import tiles
import tiles.language as tl


@tiles.jit
def folded(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    two = tl.full([BLOCK], 7, tl.int32) // tl.full([BLOCK], -2, tl.int32)  # C division: -3
    k = tl.full([BLOCK], 1.5, tl.float32) * 4.0
    x = tl.load(x_ptr + offs)
    y = x * k + two.to(tl.float32)
    z = x * k + two.to(tl.float32)  # the same expression again: CSE reuses it
    tl.store(out_ptr + offs, y + z)
