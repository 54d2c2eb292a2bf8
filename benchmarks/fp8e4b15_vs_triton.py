"""tl.float8e4b15 conversions: tiles' interpreter against Triton's CPU interpreter, as a throwaway sweep.

The same kernels (tl.load, .to(), tl.store over ``reinterpret(..., tl.float8e4b15)``) run on both:
every byte widened to float32 and float16, abs of every byte, and float32 / float16 inputs (every
float16 bit pattern, a float32 stride through all bit patterns, normal samples, edges) narrowed with
the default rounding, "rtne" and "rtz".  The compare step counts the disagreements by the region of
the input's magnitude, and checks that every one of them is one of Triton's interpreter's own
defects (its ``_convert_float``): a rounding carry ORed into an odd exponent, subnormal results, inputs
below 2**-18, and |x| >= 1.9375, infinities and NaN, where it keeps the mantissa of a clamped exponent.

Run it in two steps (Triton lives in its own virtual environment; no Triton is needed in CI):
  TRITON_INTERPRET=1 /path/to/triton-venv/bin/python benchmarks/fp8e4b15_vs_triton.py triton t.json
  python benchmarks/fp8e4b15_vs_triton.py compare t.json
"""
import json
import sys

import numpy as np

SIDE = sys.argv[1]
if SIDE == "triton":
    import torch
    import triton as jitlib
    import triton.language as tl
else:
    import tiles as jitlib
    import tiles.language as tl


@jitlib.jit
def narrow(src, dst, n, rounding: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(dst + i, tl.load(src + i, mask=m).to(dst.dtype.element_ty, fp_downcast_rounding=rounding), mask=m)


@jitlib.jit
def convert(src, dst, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(dst + i, tl.load(src + i, mask=m).to(dst.dtype.element_ty), mask=m)


@jitlib.jit
def absolute(src, dst, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(dst + i, tl.abs(tl.load(src + i)))


def inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    f32 = np.concatenate([
        np.arange(0, 1 << 32, 4099, dtype=np.uint64).astype(np.uint32).view(np.float32),
        rng.normal(0, 1, 5000).astype(np.float32),
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.875, 1.9, 1.9375, 2.0, 3.0, 1e30, 2.0 ** -17,
                  2.0 ** -18, 3 * 2.0 ** -19, 2.0 ** -14, 0.484375, 0.96875, 1e-30], np.float32)])
    f16 = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    return {"f32": f32, "f16": f16}


def run() -> dict[str, list[int]]:
    """The bytes (or float bits) each conversion gives on this side."""
    if SIDE == "triton":
        def arr(a): return torch.from_numpy(np.ascontiguousarray(a))
        def e4(a): return jitlib.reinterpret(arr(a.view(np.int8)), tl.float8e4b15)
    else:
        def arr(a): return a
        def e4(a): return jitlib.reinterpret(a, tl.float8e4b15)
    out: dict[str, list[int]] = {}
    bits = np.arange(256, dtype=np.uint32).astype(np.uint8)
    for name, dt, ut in (("f32", np.float32, np.uint32), ("f16", np.float16, np.uint16)):
        d = np.zeros(256, dt)
        dt_arr = arr(d)
        convert[(1,)](e4(bits), dt_arr, 256, BLOCK=256)
        out[f"widen_{name}"] = np.asarray(dt_arr).view(ut).tolist()
    a = np.zeros(256, np.uint8)
    absolute[(1,)](e4(bits), e4(a), BLOCK=256)
    out["abs"] = a.tolist()
    for name, src in inputs().items():
        for rounding in (None, "rtne", "rtz"):
            d = np.zeros(src.size, np.uint8)
            narrow[((src.size + 1023) // 1024,)](arr(src), e4(d), src.size, rounding, BLOCK=1024)
            out[f"narrow_{name}_{rounding}"] = d.tolist()
    return out


def compare(path: str) -> None:
    theirs = json.load(open(path))
    ours = run()
    code = np.arange(256)
    e, m = (code >> 3) & 0xF, code & 7
    mag = np.where(e == 0, m / 8 * 2.0 ** -14, (1 + m / 8) * 2.0 ** (e - 15.0))
    table = np.where(code & 0x80, -mag, mag)
    for name in ("widen_f32", "widen_f16", "abs"):
        same = theirs[name] == ours[name]
        print(f"{name}: {'same' if same else 'differs'}")
        if not same:
            ut = np.uint32 if name.endswith("f32") else np.uint16
            ft = np.float32 if name.endswith("f32") else np.float16
            t = np.array(theirs[name], np.int64).astype(ut).view(ft)
            bad = np.flatnonzero(t.astype(np.float64) != table)
            ours_ok = np.array_equal(np.array(ours[name], np.int64).astype(ut).view(ft).astype(np.float64), table)
            print(f"  Triton's interpreter differs from the layout at bytes {[hex(b) for b in bad]}; tiles "
                  f"{'matches the layout' if ours_ok else 'DOES NOT match the layout'}")
    for name, src in inputs().items():
        x = np.abs(src.astype(np.float64))
        regions = {"[2**-14, 1.9375) normal": (x >= 2.0 ** -14) & (x < 1.9375),
                   "[2**-18, 2**-14) subnormal": (x >= 2.0 ** -18) & (x < 2.0 ** -14),
                   "below 2**-18": x < 2.0 ** -18, "1.9375 and up, inf, NaN": ~(x < 1.9375)}
        for rounding in (None, "rtne", "rtz"):
            key = f"narrow_{name}_{rounding}"
            t, o = np.array(theirs[key], np.uint8), np.array(ours[key], np.uint8)
            diff = t != o
            counts = {r: f"{int((diff & sel).sum())}/{int(sel.sum())}" for r, sel in regions.items()}
            # in the normal range every disagreement must be Triton's lost carry: tiles' result one
            # exponent up with a zero mantissa, Triton's the odd exponent with a zero mantissa
            d = diff & regions["[2**-14, 1.9375) normal"]
            carry = ((o & 7) == 0) & ((t & 7) == 0) & ((t >> 3 & 15) % 2 == 1) & ((o >> 3 & 15) == (t >> 3 & 15) + 1)
            print(f"{key}: disagreements by |x|: {counts}; normal-range ones all lost carries: "
                  f"{bool(np.all(carry[d]))}")


if __name__ == "__main__":
    if SIDE == "triton":
        json.dump(run(), open(sys.argv[2], "w"))
    else:
        compare(sys.argv[2])
