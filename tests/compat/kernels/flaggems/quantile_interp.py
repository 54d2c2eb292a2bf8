"""FlagGems style ``torch.quantile`` over host-sorted rows, all five interpolation modes.

Language features exercised: a *string* constexpr (``interpolation: tl.constexpr``) compared with
``==`` in an ``if``/``elif`` chain; ``@heuristics(values={...})`` whose functions call
``next_power_of_2``/``cdiv`` on launch arguments; positional ``mask``/``other`` in
``tl.load(ptr, mask, 0.0)`` and a positional mask in ``tl.store(ptr, value, mask)``;
``ctype = inp.dtype.element_ty`` (the element type of a *pointer* argument's dtype) used in
``.to(ctype)``; ``tl.floor``/``tl.ceil`` of a float tile cast to int32 and used as gather columns
``offsets_N[:, None] * M + q_lower[None, :]``; libdevice ``rint`` (round half to even) compared
with the ceiling for ``nearest``; integer-minus-float ``q_block - q_lower``; a 2-D grid lambda
reading the heuristic values from ``meta``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl
from tiles.language.extra.libdevice import rint


def heur_block_q(args):
    return tiles.next_power_of_2(min(tiles.cdiv(args["Q"], 8), 16))


def heur_block_n(args):
    if args["N"] >= 4096:
        return tiles.next_power_of_2(tiles.cdiv(args["N"], 128))
    elif args["N"] >= 64:
        return 32
    elif args["N"] >= 32:
        return 4
    else:
        return 1


@tiles.heuristics(values={"BLOCK_Q": heur_block_q, "BLOCK_N": heur_block_n})
@tiles.jit
def quantile_kernel(inp, q, out, N, M, Q, BLOCK_Q: tl.constexpr, BLOCK_N: tl.constexpr,
                    interpolation: tl.constexpr):
    pid_Q = tl.program_id(0)
    pid_N = tl.program_id(1)
    ctype = inp.dtype.element_ty
    offsets_Q = pid_Q * BLOCK_Q + tl.arange(0, BLOCK_Q)
    mask_Q = offsets_Q < Q
    offsets_N = pid_N * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_N = offsets_N < N
    out_ptrs = out + offsets_N[:, None] * Q + offsets_Q[None, :]
    mask_out = mask_N[:, None] & mask_Q[None, :]
    q_block = tl.load(q + offsets_Q, mask_Q, 0.0).to(ctype) * (M - 1)
    q_lower = tl.floor(q_block).to(tl.int32)
    q_upper = tl.ceil(q_block).to(tl.int32)
    inp_lower = tl.load(inp + offsets_N[:, None] * M + q_lower[None, :], mask_N[:, None], 0.0)
    inp_upper = tl.load(inp + offsets_N[:, None] * M + q_upper[None, :], mask_N[:, None], 0.0)
    if interpolation == "linear":
        q_frac = q_block - q_lower
        tl.store(out_ptrs, inp_lower + (inp_upper - inp_lower) * q_frac, mask_out)
    elif interpolation == "lower":
        tl.store(out_ptrs, inp_lower, mask_out)
    elif interpolation == "higher":
        tl.store(out_ptrs, inp_upper, mask_out)
    elif interpolation == "nearest":
        q_round = rint(q_block)
        tl.store(out_ptrs, tl.where(q_round == q_upper, inp_upper, inp_lower), mask_out)
    elif interpolation == "midpoint":
        tl.store(out_ptrs, (inp_lower + inp_upper) / 2, mask_out)


def check(rng):
    N, M = 37, 11
    x = np.sort(rng.standard_normal((N, M)).astype(np.float32), axis=1)
    x[0] = np.sort(np.array([-np.inf, -1, -0.5, 0, 0, 0.25, 1, 2, 3, 4, np.inf], np.float32))
    q = np.concatenate([[0.0, 1.0, 0.25, 0.35, 0.45, 0.5, 0.15], rng.random(13)]).astype(np.float32)
    Q = len(q)
    pos = q * np.float32(M - 1)
    lo, hi = np.floor(pos).astype(np.int64), np.ceil(pos).astype(np.int64)
    xl, xh = x[:, lo].astype(np.float64), x[:, hi].astype(np.float64)
    frac = (pos - lo).astype(np.float64)
    with np.errstate(invalid="ignore"):
        expected = {
            "linear": xl + (xh - xl) * frac,
            "lower": xl,
            "higher": xh,
            "nearest": np.where(np.rint(pos) == hi, xh, xl),
            "midpoint": (xl + xh) / 2,
        }
    grid = lambda meta: (tiles.cdiv(Q, meta["BLOCK_Q"]), tiles.cdiv(N, meta["BLOCK_N"]))  # noqa: E731
    for mode, ref in expected.items():
        out = np.full((N, Q), 5.0, np.float32)
        quantile_kernel[grid](x, q, out, N, M, Q, interpolation=mode)
        if mode == "linear":
            # inf - inf inside the blend is NaN where both ends are the same infinity
            ref = np.where(np.isinf(xl) & (xl == xh), xl, ref)
            got = np.where(np.isinf(xl) & (xl == xh), xl, out)
            close(got, ref, rtol=1e-5, atol=1e-6)
        else:
            close(out, ref, rtol=1e-6, atol=1e-6)
