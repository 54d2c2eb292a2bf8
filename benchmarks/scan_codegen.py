"""The scan kernels (and Mamba's state update) of ``corpus_speed.py`` as tiles and Triton compile them
for sm_90a, side by side, without a GPU: per case, ``ptxas -v`` registers and spills, then barriers,
shuffles and global / shared accesses by width in the PTX.  The specializations are the benchmark's
(FlagGems' ``scan_part_sum_kernel`` at BLOCK_SIZE 1024 with ``N`` not specialized; Mamba's
``_chunk_cumsum`` at BLOCK_H 16, BLOCK_CHUNK 256; ``_ssm_step`` at its BLOCK_M by dstate, the
``@heuristics`` constexprs as the benchmark's arguments decide them; 4 warps, unit strides and
``heads_per_group`` 1 specialized to 1, the others divisible by 16 where the benchmark's are).

    python benchmarks/scan_codegen.py [--cases mamba] [--triton-python /path/to/python-with-triton] \\
        [--out /tmp/scan_ptx]

Triton compiles ahead of time for ``GPUTarget("cuda", 90, 32)``; when it is not importable here,
``--triton-python`` names an interpreter that has it.  Generated code only: speed is measured by
``python benchmarks/corpus_speed.py --cases cumsum`` (``--cases state_update``) on a GPU.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parent / "tests" / "compat")]  # this checkout's tiles
from corpus_speed import load  # noqa: E402
from gemm_codegen import memory_ops, registers  # noqa: E402

Spec = tuple[str, str, dict[str, tuple[str, bool]], dict[str, Any], int]  # module, kernel, signature, constexprs, warps


def cases() -> dict[str, Spec]:
    out: dict[str, Spec] = {}
    for m, n, k in [(4096, 4096, 1), (64, 4096, 256)]:
        sig = {"inp": ("*fp32", True), "out": ("*fp32", True), "M": ("i32", m % 16 == 0), "N": ("i32", False)}
        consts: dict[str, Any] = {"BLOCK_SIZE": 1024}
        if k == 1:
            consts["K"] = 1
        else:
            sig["K"] = ("i32", k % 16 == 0)
        out[f"fg_cumsum {m}x{n}x{k}"] = ("flaggems/cumsum", "scan_part_sum_kernel", sig, consts, 4)
    for b, s, h, c in [(8, 4096, 80, 256), (32, 8192, 128, 256)]:
        nch = -(-s // c)
        sig = {p: ("*fp32", True) for p in ("dt_ptr", "A_ptr", "bias_ptr", "dt_out_ptr", "dA_cumsum_ptr")}
        sig |= {k_: ("i32", v % 16 == 0) for k_, v in dict(seqlen=s, nheads=h, chunk_size=c).items()}
        sig |= {"dt_min": ("fp32", False), "dt_max": ("fp32", False)}
        consts = dict(HAS_BIAS=True, DT_SOFTPLUS=True, BLOCK_H=16, BLOCK_CHUNK=256)
        for k_, v in dict(s_dt_b=s * h, s_dt_s=h, s_dt_h=1, s_out_b=h * nch * c, s_out_h=nch * c, s_out_c=c).items():
            if v == 1:
                consts[k_] = 1
            else:
                sig[k_] = ("i32", v % 16 == 0)
        out[f"mamba_chunk_cumsum {b}x{s}x{h} chunk{c}"] = ("mamba/chunk_cumsum", "_chunk_cumsum", sig, consts, 4)
    for batch, heads, dim, dstate in [(64, 80, 64, 128), (64, 1, 5120, 16)]:
        out[f"mamba_state_update b{batch}_h{heads}_{dim}x{dstate}"] = state_update(batch, heads, dim, dstate)
    return out


def state_update(batch: int, heads: int, dim: int, dstate: int) -> Spec:
    """Mamba's ``_ssm_step`` as ``corpus_speed.py`` launches it (one group, bias, skip and gate given)."""
    sig = {p: ("*fp32", True) for p in ("state_ptr", "x_ptr", "dt_ptr", "bias_ptr", "A_ptr", "B_ptr", "C_ptr",
                                        "skip_ptr", "gate_ptr", "out_ptr")}
    block_m = 32 if dstate <= 16 else 16 if dstate <= 32 else 8 if dstate <= 64 else 4
    consts: dict[str, Any] = dict(SOFTPLUS=True, BLOCK_M=block_m, HAS_BIAS=True, HAS_SKIP=True, HAS_GATE=True,
                                  BLOCK_N=1 << (dstate - 1).bit_length())
    ints = dict(dim=dim, dstate=dstate, heads_per_group=heads, s_state_b=heads * dim * dstate, s_state_h=dim * dstate,
                s_state_d=dstate, s_x_b=heads * dim, s_x_h=dim, s_dt_b=heads * dim, s_dt_h=dim,
                s_A_h=dim * dstate, s_A_d=dstate, s_B_b=dstate, s_B_g=dstate, s_out_b=heads * dim, s_out_h=dim)
    for k_, v in ints.items():
        if v == 1:
            consts[k_] = 1
        else:
            sig[k_] = ("i32", v % 16 == 0)
    return ("mamba/selective_state_update", "_ssm_step", sig, consts, 4)


def jitted(fn: Any, has: str) -> Any:
    """``fn`` with ``@heuristics``/``@autotune`` wrappers looked through, down to what has ``has``."""
    while not hasattr(fn, has):
        fn = fn.fn
    return fn


def tiles_ptx(spec: Spec) -> str:
    from tiles.backends import registry
    from tiles.backends.base import CodegenChoices, Options
    from tiles.backends.cuda import nvptx_target, toolchain
    from tiles.backends.cuda.choices import lower_kernel
    module, kernel, sig, consts, warps = spec
    fn = jitted(getattr(load(module, "tiles", Path(tempfile.mkdtemp())), kernel), "compile")
    typed = {n: t + (":16" if div else "") for n, (t, div) in sig.items()}
    ir = fn.compile(typed, consts, backend="cuda", num_warps=warps).ir
    options = Options(warps, codegen=CodegenChoices.from_env())
    return toolchain.to_ptx(lower_kernel(ir, nvptx_target("sm_90a"), options, registry.get("cuda").target()), "sm_90a")


def triton_ptx(spec: Spec) -> str:
    import triton
    from triton.backends.compiler import GPUTarget
    module, kernel, sig, consts, warps = spec
    fn = jitted(getattr(load(module, "triton", Path(tempfile.mkdtemp())), kernel), "__name__")
    given = {n: t for n, (t, _) in sig.items()} | {n: "constexpr" for n in consts}
    signature = {n: given[n] for n in fn.arg_names}
    attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n, (_, div) in sig.items() if div}
    src = triton.compiler.ASTSource(fn, signature=signature, constexprs=consts, attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps}).asm["ptx"]


def counts(ptx: str) -> str:
    shuffles = {k: ptx.count(f"shfl.sync.{k}") for k in ("up", "down", "bfly", "idx")}
    cta = ptx.count("st.shared::cta")  # Triton's inline-asm stores, which memory_ops does not name
    return ", ".join([f"{n}x shfl.{k}" for k, n in shuffles.items() if n] + [memory_ops(ptx)]
                     + ([f"{cta}x st.shared::cta"] if cta else []))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="", help="comma-separated substrings of the case names")
    ap.add_argument("--triton-python", default=None, help="an interpreter with Triton, when this one has none")
    ap.add_argument("--out", default=None, help="a folder for the PTX files")
    ap.add_argument("--emit-triton", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    wanted = [c for c in args.cases.split(",") if c]
    picked = {k: v for k, v in cases().items() if not wanted or any(w in k for w in wanted)}
    if args.emit_triton:
        print(json.dumps({k: triton_ptx(v) for k, v in picked.items()}))
        return
    if args.triton_python:
        proc = subprocess.run([args.triton_python, __file__, "--emit-triton", "--cases", ",".join(picked)],
                              capture_output=True, text=True)
        if proc.returncode:
            sys.exit(f"Triton side failed:\n{proc.stderr[-2000:]}")
        theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    else:
        try:
            theirs = {k: triton_ptx(v) for k, v in picked.items()}
        except ImportError as e:
            print(f"Triton not importable ({e}); tiles only (see --triton-python)")
            theirs = {}
    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    for name, spec in picked.items():
        print(f"\n{name}")
        for who, ptx in (("tiles", tiles_ptx(spec)), ("triton", theirs.get(name))):
            if ptx is None:
                continue
            if out:
                (out / f"{name.split()[0]}_{name.split()[1]}.{who}.ptx").write_text(ptx)
            print(f"  {who:6s} {registers(ptx)} | {counts(ptx)}")


if __name__ == "__main__":
    main()
