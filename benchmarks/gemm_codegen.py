"""The tensor-core loop of ``realworld_gemm.py``'s kernels as tiles and Triton compile them for
sm_90a, side by side, without a GPU: per form and configuration, the main loop's order of
waits, barriers, MMAs and copies, its wgmma shapes and ``cp.async`` sizes, its PTX instruction
count, and (with ``ptxas`` on PATH) registers and spills; then, before the loop (prologue) and
after it (epilogue), instruction counts and global/shared accesses by width.  The operands are
those the benchmark passes (``--size``-cubed, leading strides divisible by 16, unit strides
specialized to 1).

    python benchmarks/gemm_codegen.py [--forms fp8,grouped] [--configs 128x256x64] \\
        [--triton-python /path/to/python-with-triton]

Triton compiles ahead of time for ``GPUTarget("cuda", 90, 32)`` (no GPU needed); when it is not
importable here, ``--triton-python`` names an interpreter that has it (this script runs there
with ``--emit-triton`` and hands the PTX back as JSON).  This compares generated code only: speed
is measured by ``realworld_gemm.py`` on a GPU.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).resolve().parents[1])]  # this checkout's tiles
from memory_bound import load_kernels  # noqa: E402
from realworld_gemm import CONFIGS, KERNELS  # noqa: E402

SMS = 132  # H200
# label: (kernel, operand type, B stored N x K, WRAP_AND_MASK)
FORMS: dict[str, tuple[str, str, bool, bool, str]] = {  # kernel, A/B type, B transposed, wrap + masks, C type
    "tutorial (wrap + K masks)": ("tutorial_matmul", "fp16", False, True, "fp16"),
    "tutorial (no masks)": ("tutorial_matmul", "fp16", False, False, "fp16"),
    "persistent": ("persistent_matmul", "fp16", False, False, "fp16"),
    "flat persistent": ("flat_persistent_matmul", "fp16", False, False, "fp16"),
    "flat persistent, fp32 C": ("flat_persistent_matmul", "fp16", False, False, "fp32"),
    "tutorial bf16": ("tutorial_matmul", "bf16", False, False, "fp16"),
    "tutorial, B transposed": ("tutorial_matmul", "fp16", True, False, "fp16"),
    "tutorial fp8 e4m3, B transposed": ("tutorial_matmul", "fp8e4nv", True, False, "fp16"),
    "grouped": ("grouped_matmul", "fp16", False, False, "fp16"),
}


def spec(form: str, cfg: tuple[int, ...], size: int) -> tuple[str, dict[str, tuple[str, bool]], dict[str, Any]]:
    """(kernel, {param: (type, divisible by 16)}, constexprs) of one form as the benchmark launches it."""
    kernel, dtype, trans_b, wrap, out = FORMS[form]
    bm, bn, bk = cfg[:3]
    if kernel == "grouped_matmul":
        sig = {n: ("*i64", True) for n in ("a_addrs", "b_addrs", "c_addrs")}
        sig.update(sizes=("*i32", True), lds=("*i32", True), group_size=("i32", False))
        return kernel, sig, dict(NUM_SMS=SMS, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk)
    sig = {"a_ptr": (f"*{dtype}", True), "b_ptr": (f"*{dtype}", True), "c_ptr": (f"*{out}", True)}
    consts: dict[str, Any] = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8)
    if kernel == "tutorial_matmul":
        consts["WRAP_AND_MASK"] = wrap
    else:
        consts["NUM_SMS"] = SMS
    unit = {"stride_ak", "stride_cn", "stride_bk" if trans_b else "stride_bn"}
    for name in ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn"):
        if name in unit:
            consts[name] = 1
        else:
            sig[name] = ("i32", size % 16 == 0)
    return kernel, sig, consts


def cases(forms: list[str], configs: list[tuple[int, ...]]) -> list[tuple[str, tuple[int, ...]]]:
    return [(f, c) for f in forms for c in configs]


def tiles_ptx(mod: Any, form: str, cfg: tuple[int, ...], size: int) -> str:
    from tiles.backends import registry
    from tiles.backends.base import CodegenChoices, Options
    from tiles.backends.cuda import nvptx_target, toolchain
    from tiles.backends.cuda.choices import lower_kernel
    kernel, sig, consts = spec(form, cfg, size)
    warps, stages = cfg[3], cfg[4]
    typed = {n: t + (":16" if div else "") for n, (t, div) in sig.items()}
    ir = getattr(mod, kernel).compile(typed, consts, backend="cuda", num_warps=warps, num_stages=stages).ir
    options = Options(warps, stages, codegen=CodegenChoices.from_env())  # TILES_STMATRIX=0 etc. for A/B
    caps = registry.get("cuda").target()  # the backend's limits (227 KiB of shared memory), as a launch sees them
    return toolchain.to_ptx(lower_kernel(ir, nvptx_target("sm_90a"), options, caps), "sm_90a")


def triton_ptx(mod: Any, form: str, cfg: tuple[int, ...], size: int) -> str:
    import triton
    from triton.backends.compiler import GPUTarget
    kernel, sig, consts = spec(form, cfg, size)
    fn = getattr(mod, kernel)
    signature = {n: t for n, (t, _) in sig.items()} | {n: "constexpr" for n in consts}
    attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n, (_, div) in sig.items() if div}
    src = triton.compiler.ASTSource(fn, signature=signature, constexprs=consts, attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": cfg[3], "num_stages": cfg[4]}
                          ).asm["ptx"]


def emit_triton(forms: list[str], configs: list[tuple[int, ...]], size: int) -> dict[str, str]:
    mod = load_kernels("triton", Path(tempfile.mkdtemp()), KERNELS, "gemm_codegen")
    out = {}
    for form, cfg in cases(forms, configs):
        try:
            out[f"{form}|{cfg}"] = triton_ptx(mod, form, cfg, size)
        except Exception as e:  # a configuration Triton refuses: reported, not fatal
            out[f"{form}|{cfg}"] = f"error: {type(e).__name__}: {str(e)[:200]}"
    return out


def registers(ptx: str) -> str:
    """``ptxas -v``'s registers and spills (the PTX version lowered to what this ptxas reads)."""
    from tiles.backends.cuda import toolchain
    if toolchain.ptxas_path() is None:
        return "no ptxas"
    for _ in range(2):
        try:
            info = toolchain.ptxas_info(ptx, "sm_90a")
            return f"{info.get('registers')} regs, {info.get('spill_stores', 0)} B spilled"
        except RuntimeError as e:
            known = re.search(r"current version is '([\d.]+)'", str(e))
            if known is None:
                return f"ptxas: {str(e).splitlines()[-1][:80]}"
            ptx = re.sub(r"^\.version [\d.]+", f".version {known.group(1)}", ptx, flags=re.M)
    return "ptxas refused the PTX"


_MEMORY = re.compile(r"\b(ld|st)\.(global|shared)((?:\.v\d)?\.[bfsu]\d+)"
                     r"|\b((?:st|ld)matrix)(?:\.sync\.aligned\.m8n8(\.x\d)(\.trans)?)?|\bbar\.sync\b")


def _instructions(text: str) -> list[str]:
    """Instruction lines (labels, directives, braces and comments left out)."""
    return [t for t in (raw.strip() for raw in text.splitlines())
            if t and t not in ("{", "}") and not t.startswith(("//", ".", "$L")) and not t.endswith(":")]


def memory_ops(text: str) -> str:
    """Counts of global and shared accesses by width (``st.global.b16``, ``ld.shared.v4.b32``),
    ``stmatrix``/``ldmatrix`` by count and transposition (``stmatrix.x4.trans``) and barriers in a
    stretch of PTX."""
    counts: dict[str, int] = {}
    for m in _MEMORY.finditer(text):
        if m.group(1):
            key = f"{m.group(1)}.{m.group(2)}{m.group(3)}"
        else:
            key = "".join(g for g in m.group(4, 5, 6) if g) if m.group(4) else "bar.sync"
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{n}x {k}" for k, n in sorted(counts.items())) or "none"


def whole(ptx: str) -> str:
    """Counts of the pipeline's instructions in a kernel whose loop has several blocks (a run-time
    ``if`` in its body, as the flattened persistent form's)."""
    keys = ("wgmma.mma_async", "cp.async.cg", "cp.async.wait_group", "wgmma.wait_group", "bar.sync",
            "ld.global", "stmatrix")
    return ", ".join(f"{ptx.count(k)}x {k}" for k in keys)


def sections(ptx: str) -> dict[str, str] | None:
    """The kernel's basic blocks outside the tensor-core loop, in two parts: the epilogue (blocks
    that store to global memory, drain the MMAs or use ``stmatrix``) and the prologue (the rest:
    address loads, pointer set-up, the pipeline's first copies, outer loops' heads)."""
    from tiles.backends.cuda.ptx_loops import mma_loop
    loop = mma_loop(ptx)
    if not loop:
        return None
    out = {"prologue": "", "epilogue": ""}
    for block in re.split(r"^(?=\$L__BB\d+_\d+:)", ptx.replace(loop, "", 1), flags=re.M):
        ends = re.search(r"st\.global|stmatrix|wgmma\.wait_group\.sync\.aligned\s+0", block)
        out["epilogue" if ends else "prologue"] += block
    return out


def section_lines(ptx: str) -> list[str]:
    parts = sections(ptx)
    if parts is None:
        return []
    return [f"{name}: {len(_instructions(text))} instrs | {memory_ops(text)}" for name, text in parts.items()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--forms", default="", help="comma-separated substrings of the form names")
    ap.add_argument("--configs", default="", help="comma-separated prefixes such as 128x256x64 or 128x128x64_w8_s3")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--triton-python", default=None, help="an interpreter with Triton, when this one has none")
    ap.add_argument("--emit-triton", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    wanted = [f for f in args.forms.split(",") if f]
    forms = [f for f in FORMS if not wanted or any(w in f for w in wanted)]
    picks = [c for c in args.configs.split(",") if c]
    configs = [c for c in CONFIGS if not picks or any(f"{c[0]}x{c[1]}x{c[2]}_w{c[3]}_s{c[4]}".startswith(p)
                                                      for p in picks)]
    if args.emit_triton:
        print(json.dumps(emit_triton(forms, configs, args.size)))
        return

    from tiles.backends.cuda.ptx_loops import summarize
    if args.triton_python:
        cmd = [args.triton_python, __file__, "--emit-triton", "--size", str(args.size),
               "--forms", ",".join(forms), "--configs", ",".join(f"{c[0]}x{c[1]}x{c[2]}_w{c[3]}_s{c[4]}"
                                                                   for c in configs)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            sys.exit(f"Triton side failed:\n{proc.stderr[-2000:]}")
        theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    else:
        try:
            theirs = emit_triton(forms, configs, args.size)
        except ImportError as e:
            print(f"Triton not importable ({e}); tiles only (see --triton-python)")
            theirs = {}
    mod = load_kernels("tiles", Path(tempfile.mkdtemp()), KERNELS, "gemm_codegen")
    for form, cfg in cases(forms, configs):
        print(f"\n{form}, {cfg[0]}x{cfg[1]}x{cfg[2]} w{cfg[3]} s{cfg[4]}, {args.size}^3")
        outputs = {"tiles": tiles_ptx(mod, form, cfg, args.size), "triton": theirs.get(f"{form}|{cfg}")}
        for who, ptx in outputs.items():
            if ptx is None:
                continue
            if ptx.startswith("error:"):
                print(f"  {who:6s} {ptx}")
                continue
            summary = summarize(ptx)
            loop = summary.line() if summary else f"no single-block wgmma loop; whole kernel: {whole(ptx)}"
            print(f"  {who:6s} {registers(ptx)} | {loop}")
            for line in section_lines(ptx):
                print(f"         {line}")


if __name__ == "__main__":
    main()
