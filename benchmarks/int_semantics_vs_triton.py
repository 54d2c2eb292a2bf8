"""Integer semantics: tiles' interpreter against Triton's CPU interpreter, as a throwaway sweep.

Every binary integer operator users write (+ - * // % << >> & | ^, comparisons, tl.minimum,
tl.maximum, tl.cdiv, tl.umulhi) over every pair of integer types (int1 included), as tile op tile,
tile op number / number op tile (a constexpr, i.e. a literal) and tile op int argument, with random
values and each type's edges.  Each side records the result type and bits (or the error); the
compare step lists every disagreement, apart from elements whose result is undefined in Triton
(division by zero, INT_MIN // -1, shift amounts outside [0, bits)), which it counts as "ub-value".

Run it in three steps (Triton lives in its own virtual environment; no Triton is needed in CI):
  TRITON_INTERPRET=1 /path/to/triton-venv/bin/python benchmarks/int_semantics_vs_triton.py triton t.pkl
  python benchmarks/int_semantics_vs_triton.py tiles x.pkl
  python benchmarks/int_semantics_vs_triton.py compare t.pkl x.pkl
ONLY=shr,umulhi limits the operators; ARGS=1 adds the run-time int argument forms.
"""
import importlib.util
import os
import pickle
import sys
import tempfile

import numpy as np

SIDE = sys.argv[1]
WORKDIR = os.environ.get("SWEEP_DIR", tempfile.gettempdir())

BIN = {"add": "{x} + {y}", "sub": "{x} - {y}", "mul": "{x} * {y}", "floordiv": "{x} // {y}", "mod": "{x} % {y}",
       "shl": "{x} << {y}", "shr": "{x} >> {y}", "and": "{x} & {y}", "or": "{x} | {y}", "xor": "{x} ^ {y}",
       "lt": "{x} < {y}", "le": "{x} <= {y}", "gt": "{x} > {y}", "ge": "{x} >= {y}", "eq": "{x} == {y}",
       "ne": "{x} != {y}",
       "minimum": "tl.minimum({x}, {y})", "maximum": "tl.maximum({x}, {y})", "cdiv": "tl.cdiv({x}, {y})",
       "umulhi": "tl.umulhi({x}, {y})"}
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "int1"]
LITS = [True, False, 0, 1, 2, 3, 7, -1, -3, 127, 128, 255, 2**31 - 1, 2**31, -2**31, 2**32 - 1, 2**63 - 1,
        -2**63, 2**63, 2**64 - 1]
N = 64


def gen_module(side):
    head = ("import triton\nimport triton.language as tl\njit = triton.jit\n" if side == "triton"
            else "import tiles\nimport tiles.language as tl\njit = tiles.jit\n")
    src = [head, "SEEN = {}\n\ndef record(key, dt):\n    SEEN[str(key)] = str(dt)\n"]
    for name, expr in BIN.items():
        for form, (xs, ys) in {"tt": ("tl.load(x_ptr + offs)", "tl.load(y_ptr + offs)"),
                               "tc": ("tl.load(x_ptr + offs)", "C"),
                               "ct": ("C", "tl.load(y_ptr + offs)"),
                               "ts": ("tl.load(x_ptr + offs)", "S"),
                               "st": ("S", "tl.load(y_ptr + offs)")}.items():
            src.append(f"""
@jit
def k_{name}_{form}(x_ptr, y_ptr, o_ptr, S, C: tl.constexpr, KEY: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    r = {expr.format(x=xs, y=ys)}
    record(KEY, r.dtype)
    tl.store(o_ptr + offs, r)
""")
    path = os.path.join(WORKDIR, f"int_sweep_kernels_{side}.py")
    with open(path, "w") as f:
        f.write("".join(src))
    spec = importlib.util.spec_from_file_location(f"int_sweep_kernels_{side}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def np_dtype(name):
    return np.bool_ if name == "int1" else np.dtype(name)


def values(rng, name):
    if name == "int1":
        return rng.integers(0, 2, N).astype(np.bool_)
    info = np.iinfo(name)
    v = rng.integers(info.min, info.max, N, dtype=name, endpoint=True)
    edge = [info.min, info.max, 0, 1, 2, info.max - 1] + ([-1, -2, info.min + 1] if info.min < 0 else [])
    v[:len(edge)] = edge
    bits = info.bits
    # shift-friendly amounts in the second half
    v[N // 2:N // 2 + 16] = rng.integers(0, bits, 16)
    return v


def dev(a):
    if SIDE == "triton":
        import torch
        if a.dtype == np.uint16 or a.dtype == np.uint32 or a.dtype == np.uint64:
            t = torch.from_numpy(a.view(a.dtype.name.replace("u", ""))).view(getattr(torch, a.dtype.name))
            return t
        return torch.from_numpy(a.copy())
    return a


def host(t):
    if SIDE == "triton":
        import torch
        if t.dtype in (torch.uint16, torch.uint32, torch.uint64):
            s = {torch.uint16: (torch.int16, np.uint16), torch.uint32: (torch.int32, np.uint32),
                 torch.uint64: (torch.int64, np.uint64)}[t.dtype]
            return t.view(s[0]).numpy().view(s[1])
        return t.numpy()
    return t


def run_case(mod, name, form, xt, yt, c, x, y):
    key = f"{name}|{form}|{xt}|{yt}|{c}"
    kern = getattr(mod, f"k_{name}_{form}")
    guess = "int64"
    for _ in range(2):
        o = np.zeros(N, np_dtype(guess))
        od = dev(o)
        try:
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                kern[(1,)](dev(x), dev(y), od, c if c is not None else 0, C=c if c is not None else 0, KEY=key, N=N)
        except Exception as e:  # noqa: BLE001
            msg = str(e).strip().splitlines()
            return ("err", type(e).__name__ + ": " + (msg[-1] if msg else ""))
        dt = mod.SEEN.get(key)
        if dt == guess:
            return ("ok", dt, host(od).copy())
        guess = dt
    return ("odd", guess)


def produce(out):
    mod = gen_module(SIDE)
    rng = np.random.default_rng(1234)
    vals = {t: values(rng, t) for t in INTS}
    res = {}
    only = os.environ.get("ONLY")
    for name in BIN:
        if only and name not in only.split(","):
            continue
        for xt in INTS:
            for yt in INTS:
                res[(name, "tt", xt, yt, None)] = run_case(mod, name, "tt", xt, yt, None, vals[xt], vals[yt])
            for c in LITS:
                res[(name, "tc", xt, None, c)] = run_case(mod, name, "tc", xt, "int8", c, vals[xt], vals["int8"])
                res[(name, "ct", None, xt, c)] = run_case(mod, name, "ct", "int8", xt, c, vals["int8"], vals[xt])
                if os.environ.get("ARGS") and not isinstance(c, bool):
                    res[(name, "ts", xt, None, c)] = run_case(mod, name, "ts", xt, "int8", c, vals[xt], vals["int8"])
                    res[(name, "st", None, xt, c)] = run_case(mod, name, "st", "int8", xt, c, vals["int8"], vals[xt])
        print(name, len(res), file=sys.stderr, flush=True)
    with open(out, "wb") as f:
        pickle.dump({"vals": vals, "res": res}, f)


if __name__ == "__main__":
    if SIDE in ("triton", "tiles"):
        produce(sys.argv[2])


def as_ct(v, ct, n=N):
    a = np.asarray(v)
    if a.ndim == 0:
        a = np.full(n, int(a), dtype=object)
        if ct == "int1":
            return a.astype(np.int64) != 0
        bits = np.dtype(ct).itemsize * 8
        m = [(int(z) & ((1 << bits) - 1)) for z in a]
        return np.array(m, dtype=np.uint64).astype(np.dtype("u%d" % (bits // 8))).view(ct)
    return a.astype(np_dtype(ct))


def ub_mask(name, xt, yt, c, x, y, ct):
    if ct == "int1" or name not in ("floordiv", "mod", "cdiv", "shl", "shr"):
        return np.zeros(N, bool)
    xv = as_ct(c if xt is None else x, ct)
    yv = as_ct(c if yt is None else y, ct)
    bits = np.dtype(ct).itemsize * 8
    if name in ("shl", "shr"):
        return yv.view("u%d" % (bits // 8)).astype(np.uint64) >= bits
    bad = yv == 0
    if np.dtype(ct).kind == "i":
        bad |= (xv == np.iinfo(ct).min) & (yv == -1)
    return bad


def bitsof(a):
    a = np.asarray(a)
    if a.dtype == np.bool_:
        return a.astype(np.uint8).astype(np.uint64)
    return a.view("u%d" % a.dtype.itemsize).astype(np.uint64)


def compare(pt, px):
    T = pickle.load(open(pt, "rb"))
    X = pickle.load(open(px, "rb"))
    vals = T["vals"]
    rows = []
    for key, rt in T["res"].items():
        rx = X["res"].get(key)
        if rx is None:
            continue
        name, form, xt, yt, c = key
        x = vals[xt] if xt else vals["int8"]
        y = vals[yt] if yt else vals["int8"]
        if rt[0] != "ok" or rx[0] != "ok":
            if rt[0] != rx[0]:
                rows.append((key, "status", rt[:2], rx[:2]))
            continue
        if rt[1] != rx[1]:
            rows.append((key, "dtype", rt[1], rx[1]))
            continue
        ub = ub_mask(name, xt, yt, c, x, y, rt[1])
        diff = (bitsof(rt[2]) != bitsof(rx[2]))
        bad = diff & ~ub
        ubdiff = diff & ub
        if bad.any():
            i = int(np.argmax(bad))
            xi = c if xt is None else x[i]
            yi = c if yt is None else y[i]
            rows.append((key, "value", f"{int(bad.sum())} elems e.g. x={xi!r} y={yi!r} "
                                       f"triton={rt[2][i]!r} tiles={rx[2][i]!r}", ""))
        if ubdiff.any():
            i = int(np.argmax(ubdiff))
            xi = c if xt is None else x[i]
            yi = c if yt is None else y[i]
            rows.append((key, "ub-value", f"{int(ubdiff.sum())} elems e.g. x={xi!r} y={yi!r} "
                                          f"triton={rt[2][i]!r} tiles={rx[2][i]!r}", ""))
    return rows


if __name__ == "__main__" and SIDE == "compare":
    rows = compare(sys.argv[2], sys.argv[3])
    for r in rows:
        print(*r, sep="  ")
    print(len(rows), "disagreements", file=sys.stderr)
