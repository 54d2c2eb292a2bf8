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


@tiles.jit
def loop_with_invariants(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, n):
        base = offs * 2 + 1          # invariant
        factor = scale * 3.0         # invariant
        acc += tl.load(x_ptr + base - 1 + i * 0) * factor + i
    tl.store(out_ptr + offs, acc)
