"""The generated code of ``realworld_attention.py``'s kernel, tiles against Triton, without a GPU:
both compile the same kernel text for sm_90a with the benchmark's operands (contiguous
``Z x H x N_CTX x HEAD_DIM`` fp16, unit strides specialized to 1); ``ptxas`` assembles both and
``nvdisasm`` disassembles them; per configuration and per loop that issues warpgroup MMAs
(causal kernels have two: off the diagonal band and on it), the registers, spills, and the loop's
SASS counted by opcode, with where the warpgroup waits sit.

    python benchmarks/attention_sass.py --triton-python /path/to/python-with-triton \\
        [--head-dims 64,128] [--configs 128x64_w8_s3] [--causal] [--bin DIR] [--dump DIR]

``--dump`` writes each side's PTX and SASS there for reading.  This compares generated code
only: speed is ``realworld_attention.py``'s.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).resolve().parents[1])]
from gemm_sass import assemble, opcode, tool  # noqa: E402
from memory_bound import load_kernels  # noqa: E402
from realworld_attention import CONFIGS, KERNELS  # noqa: E402

Z, H, N_CTX = 4, 32, 4096
KEY = ("GMMA", "WARPGROUP", "FMUL", "FFMA", "FADD", "MUFU", "FMNMX", "FSETP", "FSEL", "SHFL", "F2FP",
       "MOV", "R2UR", "LDGSTS", "DEPBAR", "BAR", "LDG", "STS", "LDS", "IMAD", "IADD3", "ISETP", "SEL", "LOP3")


def name(cfg: tuple[int, ...]) -> str:
    return f"{cfg[0]}x{cfg[1]}_w{cfg[2]}_s{cfg[3]}"


def spec(d: int, causal: bool, cfg: tuple[int, ...]) -> tuple[dict[str, tuple[str, bool]], dict[str, Any]]:
    """({param: (type, divisible by 16)}, constexprs) as the benchmark launches the kernel."""
    sig: dict[str, tuple[str, bool]] = {"Q": ("*fp16", True), "K": ("*fp16", True), "V": ("*fp16", True),
                                        "sm_scale": ("fp32", False), "M": ("*fp32", True),
                                        "Out": ("*fp16", True)}
    consts: dict[str, Any] = dict(HEAD_DIM=d, BLOCK_M=cfg[0], BLOCK_N=cfg[1], STAGE=3 if causal else 1)
    strides = (H * N_CTX * d, N_CTX * d, d, 1)
    for t in "qkvo":
        for axis, value in zip(("z", "h", "m" if t in "qo" else ("n" if t == "k" else "k"),
                                "k" if t in "qk" else "n"), strides):
            if value == 1:
                consts[f"stride_{t}{axis}"] = 1
            else:
                sig[f"stride_{t}{axis}"] = ("i32", value % 16 == 0)
    for n, value in (("Z", Z), ("H", H), ("N_CTX", N_CTX)):
        sig[n] = ("i32", value % 16 == 0)
    return sig, consts


def tiles_ptx(mod: Any, d: int, causal: bool, cfg: tuple[int, ...]) -> str:
    from tiles.backends.base import CodegenChoices, Options
    from tiles.backends.cuda import CUDABackend, nvptx_target, toolchain
    from tiles.backends.cuda.choices import lower_chosen
    sig, consts = spec(d, causal, cfg)
    options = Options(cfg[2], cfg[3], fp_fusion=CUDABackend.fp_fusion_default,  # as a launch compiles it
                      codegen=CodegenChoices.from_env())
    typed = {n: t + (":16" if div else "") for n, (t, div) in sig.items()}
    ir = mod.attn_fwd.compile(typed, consts, backend="cuda", num_warps=cfg[2], num_stages=cfg[3]).ir
    return toolchain.to_ptx(lower_chosen(ir, nvptx_target("sm_90a"), options).code, "sm_90a")  # as a launch picks


def triton_ptx(mod: Any, d: int, causal: bool, cfg: tuple[int, ...]) -> str:
    import triton
    from triton.backends.compiler import GPUTarget
    sig, consts = spec(d, causal, cfg)
    fn = mod.attn_fwd
    signature = {n: t for n, (t, _) in sig.items()} | {n: "constexpr" for n in consts}
    attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n, (_, div) in sig.items() if div}
    src = triton.compiler.ASTSource(fn, signature=signature, constexprs=consts, attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": cfg[2], "num_stages": cfg[3]}).asm["ptx"]


def mma_loops(sass: str) -> list[list[str]]:
    """Every innermost loop (a label up to a branch back to it, no other such loop inside) that
    issues a warpgroup MMA, in program order."""
    lines = sass.splitlines()
    labels = {m.group(1): i for i, line in enumerate(lines) if (m := re.match(r"\s*(\.L_x_\d+):", line))}
    spans = []
    for i, line in enumerate(lines):
        m = re.search(r"BRA\s+`?\(?(\.L_x_\d+)", line)
        if m and labels.get(m.group(1), i) < i:
            spans.append((labels[m.group(1)], i))
    loops = []
    for lo, hi in spans:
        if any(lo <= a and b <= hi and (a, b) != (lo, hi) for a, b in spans):
            continue
        body = [b for b in lines[lo:hi + 1] if re.search(r"/\*[0-9a-f]{4}\*/", b)]
        if any(re.search(r"\b[HIQ]GMMA\b", b) for b in body):
            loops.append(body)
    return loops


def waits(loop: list[str]) -> str:
    """The loop's order of MMAs, warpgroup waits/arrives, copy waits and barriers."""
    seq = []
    for line in loop:
        op = opcode(line)
        full = re.sub(r"^\s*/\*[0-9a-f]+\*/\s*(@!?U?P\w+\s+)?", "", line).split()[0]
        if op.endswith("GMMA"):
            seq.append("MMA")
        elif op in ("WARPGROUP", "DEPBAR", "BAR", "WARPSYNC") or op.startswith("LDGDEPBAR"):
            seq.append(full.rstrip(";") + (" " + line.split(full, 1)[1].split(";")[0].strip()
                                           if op == "DEPBAR" else ""))
    out: list[str] = []
    for s in seq:  # runs of MMAs collapsed
        if out and s == "MMA" and out[-1].startswith("MMA"):
            n = int(out[-1][4:] or 1) + 1 if out[-1] != "MMA" else 2
            out[-1] = f"MMAx{n}"
        else:
            out.append(s)
    return " > ".join(out)


def report(regs: str, sass: str) -> list[str]:
    out = []
    for i, loop in enumerate(mma_loops(sass)):
        ops = Counter("GMMA" if opcode(b).endswith("GMMA") else opcode(b) for b in loop)
        key = ", ".join(f"{k} {ops[k]}" for k in KEY if ops[k])
        rest = ", ".join(f"{k} {n}" for k, n in ops.most_common() if k not in KEY)
        out.append(f"loop {i}: {len(loop)} SASS | {key} | other: {rest}")
        out.append(f"        {waits(loop)}")
    return [regs] + (out or ["no warpgroup-MMA loop"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--head-dims", default="64,128")
    ap.add_argument("--configs", default="128x64_w8_s3,128x128_w8_s2")
    ap.add_argument("--causal", action="store_true", help="the causal kernels too")
    ap.add_argument("--triton-python", default=None)
    ap.add_argument("--bin", default=None, help="folder with ptxas and nvdisasm")
    ap.add_argument("--dump", default=None, help="folder for each side's PTX and SASS")
    ap.add_argument("--emit-triton", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    picks = [c for c in args.configs.split(",") if c]
    cases = [(d, causal, cfg) for d in (int(x) for x in args.head_dims.split(","))
             for causal in ((False, True) if args.causal else (False,))
             for cfg in CONFIGS if cfg[1] <= d and (not picks or any(name(cfg).startswith(p) for p in picks))]
    if args.emit_triton:
        mod = load_kernels("triton", Path(tempfile.mkdtemp()), KERNELS, "attention_sass")
        out = {}
        for d, causal, cfg in cases:
            try:
                out[f"{d}|{causal}|{cfg}"] = triton_ptx(mod, d, causal, cfg)
            except Exception as e:  # a configuration Triton refuses: reported, not fatal
                out[f"{d}|{causal}|{cfg}"] = f"error: {type(e).__name__}: {str(e)[:200]}"
        print(json.dumps(out))
        return
    theirs: dict[str, str] = {}
    folder = args.bin
    if args.triton_python:
        cmd = [args.triton_python, __file__, "--emit-triton", "--head-dims", args.head_dims,
               "--configs", args.configs] + (["--causal"] if args.causal else [])
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            sys.exit(f"Triton side failed:\n{proc.stderr[-2000:]}")
        theirs = json.loads(proc.stdout.strip().splitlines()[-1])
        if folder is None:
            where = subprocess.run([args.triton_python, "-c", "import triton, os; print(os.path.dirname("
                                    "triton.__file__))"], capture_output=True, text=True).stdout.strip()
            folder = str(Path(where) / "backends" / "nvidia" / "bin")
    ptxas, nvdisasm = tool(folder, "ptxas"), tool(folder, "nvdisasm")
    mod = load_kernels("tiles", Path(tempfile.mkdtemp()), KERNELS, "attention_sass")
    dump = Path(args.dump) if args.dump else None
    if dump:
        dump.mkdir(parents=True, exist_ok=True)
    for d, causal, cfg in cases:
        print(f"\nd={d}{' causal' if causal else ''}, {name(cfg)}, {Z}x{H}x{N_CTX}")
        for who, ptx in (("tiles", tiles_ptx(mod, d, causal, cfg)), ("triton", theirs.get(f"{d}|{causal}|{cfg}"))):
            if ptx is None:
                continue
            if ptx.startswith("error:"):
                print(f"  {who:6s} {ptx}")
                continue
            regs, sass = assemble(ptx, ptxas, nvdisasm)
            if dump:
                stem = f"{who}_d{d}{'_causal' if causal else ''}_{name(cfg)}"
                (dump / f"{stem}.ptx").write_text(ptx)
                (dump / f"{stem}.sass").write_text(sass)
            lines = report(regs, sass)
            print(f"  {who:6s} {lines[0]}")
            for line in lines[1:]:
                print(f"         {line}")


if __name__ == "__main__":
    main()
