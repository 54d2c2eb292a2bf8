"""PTX of the benchmark specializations, one file each, for checking that a change to the lowering
leaves generated code byte-identical (or seeing exactly where it does not).  No GPU needed.

Compiles, for CUDA in compile-only mode: ``realworld_gemm.py``'s forms at each of its
configurations for sm_90a (as ``gemm_codegen.py`` specializes them) and at one configuration for
sm_80 (``mma.sync``); ``tma_gemm.py``'s descriptor matmuls; ``realworld_attention.py``'s
attention in both forms (block pointers, device-side descriptors) at its configurations, with
and without TMA, causal or not; a few runs with one code choice turned off (``stmatrix``,
``producer``, ``persistent``, ``inflight``); ``atomics.py``'s kernels; and every kernel the
examples compile.  Each kernel
goes through ``cuda.choices.lower_chosen`` (the whole search; ptxas on PATH settles the same
choices a launch would) and ``toolchain.to_ptx``.

    python benchmarks/ptx_snapshot.py --out /tmp/ptx_before [-k attention]
    ... change the lowering ...
    python benchmarks/ptx_snapshot.py --out /tmp/ptx_after
    python benchmarks/ptx_snapshot.py --compare /tmp/ptx_before /tmp/ptx_after
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this checkout's tiles
from gemm_codegen import FORMS, spec  # noqa: E402
from memory_bound import load_kernels  # noqa: E402

Case = tuple[str, Callable[[], str]]


def _ptx(fn: Any, sig: dict[str, str], consts: dict[str, Any], warps: int, stages: int, arch: str = "sm_90a",
         off: tuple[str, ...] = (), fp_fusion: bool = True) -> str:
    from tiles.backends import registry
    from tiles.backends.base import CodegenChoices, Options
    from tiles.backends.cuda import nvptx_target, toolchain
    from tiles.backends.cuda.choices import lower_chosen
    ir = fn.compile(sig, consts, backend="cuda", num_warps=warps, num_stages=stages).ir
    options = Options(warps, stages, fp_fusion=fp_fusion, codegen=CodegenChoices.from_env())  # TILES_* for A/B
    for name in off:
        options = options.without(name)
    caps = registry.get("cuda").target()
    return toolchain.to_ptx(lower_chosen(ir, nvptx_target(arch), options, caps).code, arch)


def gemm_cases(tmp: Path) -> Iterator[Case]:
    from realworld_gemm import CONFIGS, KERNELS
    mod = load_kernels("tiles", tmp, KERNELS, "snapshot_gemm")

    def one(form: str, cfg: tuple[int, ...], arch: str, off: tuple[str, ...] = ()) -> Callable[[], str]:
        def run() -> str:
            kernel, sig, consts = spec(form, cfg, 4096)
            typed = {n: t + (":16" if div else "") for n, (t, div) in sig.items()}
            return _ptx(getattr(mod, kernel), typed, consts, cfg[3], cfg[4], arch, off)
        return run
    for form in FORMS:
        slug = form.replace(" ", "_").replace(",", "").replace("(", "").replace(")", "").replace("+", "")
        for cfg in CONFIGS:
            yield f"gemm.{slug}.{'x'.join(map(str, cfg[:3]))}_w{cfg[3]}_s{cfg[4]}.sm_90a", one(form, cfg, "sm_90a")
        cfg = CONFIGS[0]
        yield f"gemm.{slug}.{'x'.join(map(str, cfg[:3]))}_w{cfg[3]}_s{cfg[4]}.sm_80", one(form, cfg, "sm_80")
    for form in ("tutorial (no masks)", "grouped"):
        slug = form.split()[0]
        yield f"gemm.{slug}.no_stmatrix.sm_90a", one(form, CONFIGS[1], "sm_90a", ("stmatrix",))
        yield f"gemm.{slug}.no_inflight.sm_90a", one(form, CONFIGS[1], "sm_90a", ("inflight",))


def tma_gemm_cases(tmp: Path) -> Iterator[Case]:
    from tma_gemm import CONFIGS, KERNELS
    mod = load_kernels("tiles", tmp, KERNELS, "snapshot_tma_gemm")
    sig = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16", "M": "i32:16", "N": "i32:16", "K": "i32:16"}

    def one(name: str, cfg: tuple[int, ...], off: tuple[str, ...] = ()) -> Callable[[], str]:
        consts: dict[str, Any] = dict(BLOCK_M=cfg[0], BLOCK_N=cfg[1], BLOCK_K=cfg[2], GROUP_M=8)
        if name.startswith("persistent"):
            consts["NUM_SMS"] = 132
        return lambda: _ptx(getattr(mod, name), sig, consts, cfg[3], cfg[4], off=off)
    for name in ("descriptor_matmul", "persistent_descriptor_matmul"):
        for cfg in CONFIGS:
            yield f"tma_gemm.{name}.{'x'.join(map(str, cfg[:3]))}_w{cfg[3]}_s{cfg[4]}", one(name, cfg)
        for off in (("tma",), ("producer",), ("persistent",)):
            yield f"tma_gemm.{name}.no_{off[0]}", one(name, CONFIGS[0], off)


def attention_cases(tmp: Path) -> Iterator[Case]:
    from realworld_attention import CONFIGS, KERNELS, KERNELS_DESC
    forms = {"block_ptr": load_kernels("tiles", tmp, KERNELS, "snapshot_attn"),
             "descriptor": load_kernels("tiles", tmp, KERNELS_DESC, "snapshot_attn_desc")}

    def one(form: str, d: int, cfg: tuple[int, ...], causal: bool, off: tuple[str, ...] = ()) -> Callable[[], str]:
        bm, bn, warps, stages = cfg
        consts: dict[str, Any] = dict(HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, STAGE=3 if causal else 1)
        sig = {"Q": "*fp16:16", "K": "*fp16:16", "V": "*fp16:16", "sm_scale": "fp32", "M": "*fp32:16",
               "Out": "*fp16:16"}
        if form == "block_ptr":
            for t, inner, rows in (("q", "k", "m"), ("k", "k", "n"), ("v", "n", "k"), ("o", "n", "m")):
                sig.update({f"stride_{t}z": "i32:16", f"stride_{t}h": "i32:16", f"stride_{t}{rows}": "i32:16"})
                consts[f"stride_{t}{inner}"] = 1
        sig.update(Z="i32", H="i32:16", N_CTX="i32:16")
        return lambda: _ptx(forms[form].attn_fwd, sig, consts, warps, stages, off=off)
    for form in forms:
        for d in (64, 128):
            for cfg in CONFIGS:
                if cfg[1] > d:
                    continue
                for causal in (False, True):
                    name = f"attention.{form}.d{d}.{cfg[0]}x{cfg[1]}_w{cfg[2]}_s{cfg[3]}"
                    yield f"{name}.{'causal' if causal else 'full'}", one(form, d, cfg, causal)
        for off in (("tma",), ("producer",), ("inflight",), ("stmatrix",)):
            yield f"attention.{form}.d128.no_{off[0]}", one(form, 128, (128, 64, 8, 3), False, off)


def atomics_cases(tmp: Path) -> Iterator[Case]:
    import atomics
    mod = atomics.load("tiles", tmp)
    f32, i32 = "*fp32:16", "*i32:16"
    locked_sig = dict.fromkeys(("DX", "DY", "DW", "DB", "X", "W", "Mean", "Rstd"), f32)
    locked_sig.update(Lock=i32, stride="i32:16", N="i32:16")
    locked_consts = dict(GROUP_SIZE_M=128, BLOCK_SIZE_N=4096)
    for arch in ("sm_90a", "sm_80"):
        yield f"atomics.locked.{arch}", lambda arch=arch: _ptx(mod.locked, locked_sig, locked_consts, 8, 3, arch)
    yield "atomics.scatter_add", lambda: _ptx(mod.scatter_add, dict(x_ptr=f32, idx_ptr=i32, out_ptr=f32, n="i32:16"),
                                              dict(BLOCK=1024), 4, 3)
    yield "atomics.take_ticket", lambda: _ptx(mod.take_ticket, dict(counter_ptr=i32, order_ptr=i32), {}, 4, 3)


def example_cases() -> Iterator[Case]:
    examples = sorted((HERE.parent / "examples").glob("0*.py"))
    for path in examples:
        def run(path: Path = path) -> str:
            import numpy as np

            from tiles.backends.cuda import CUDABackend

            class CompileOnly(CUDABackend):
                name = "cuda-snapshot"

                def __init__(self) -> None:
                    self.compiled: list[Any] = []

                def available(self) -> tuple[bool, str]:
                    return True, ""

                def arch(self) -> str:
                    return "sm_90a"

                def make_launcher(self, compiled: Any, plan: Any) -> Any:
                    return lambda grid, values, stream=None: self.compiled.append(compiled)

                def launch(self, compiled: Any, grid: Any, args: Any, stream: Any = None) -> None:
                    self.compiled.append(compiled)
            spec_ = importlib.util.spec_from_file_location(f"snapshot_{path.stem}", path)
            module = importlib.util.module_from_spec(spec_)  # type: ignore[arg-type]
            spec_.loader.exec_module(module)  # type: ignore[union-attr]
            backend = CompileOnly()
            with np.errstate(all="ignore"):
                try:
                    module.main(backend=backend)
                except AssertionError:
                    pass  # outputs are not computed in compile-only mode
            seen: dict[str, str] = {}
            for c in backend.compiled:
                seen.setdefault(f"{c.name} {sorted(c.metadata.items())!r}", c.asm["ptx"])
            return "".join(f"//// {key}\n{ptx}\n" for key, ptx in sorted(seen.items()))
        yield f"example.{path.stem}", run


def compare(before: Path, after: Path) -> int:
    a = {p.name: p.read_bytes() for p in before.glob("*.ptx")}
    b = {p.name: p.read_bytes() for p in after.glob("*.ptx")}
    same = sorted(n for n in a if b.get(n) == a[n])
    differ = sorted(n for n in a if n in b and b[n] != a[n])
    print(f"{len(same)} byte-identical, {len(differ)} different, {len(set(a) - set(b))} only before, "
          f"{len(set(b) - set(a))} only after")
    for n in differ + sorted(set(a) ^ set(b)):
        print("  ", n)
    return 1 if differ or set(a) ^ set(b) else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="folder for <case>.ptx")
    ap.add_argument("-k", default="", help="only cases whose name contains this")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args()
    if args.compare:
        sys.exit(compare(Path(args.compare[0]), Path(args.compare[1])))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp())
    every = [*gemm_cases(tmp), *tma_gemm_cases(tmp), *attention_cases(tmp), *atomics_cases(tmp), *example_cases()]
    for name, make in every:
        if args.k not in name:
            continue
        t0 = time.time()
        try:
            text = make()
        except Exception as e:  # recorded: a failure before must fail the same way after
            text = f"error: {type(e).__name__}: {e}\n"
        (out / f"{name}.ptx").write_text(text)
        print(f"{name}: {len(text.splitlines())} lines, {time.time() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
