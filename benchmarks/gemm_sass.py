"""The SASS of the tensor-core main loop of ``realworld_gemm.py``'s kernels, tiles against Triton,
without a GPU: ``gemm_codegen.py``'s PTX (same forms, configurations and operands) assembled by
``ptxas`` for sm_90a and disassembled by ``nvdisasm``; per kernel, the registers and the
instructions of the loop that issues warpgroup MMAs (``HGMMA``/``IGMMA``/``QGMMA``; label up to
its backward branch), counted by opcode, and the shared-memory stores and loads outside it (the
epilogue's conversion out of the MMA layout) by opcode and width.

    python benchmarks/gemm_sass.py --triton-python /path/to/python-with-triton \\
        [--forms wrap,persistent] [--configs 128x256x64] [--bin DIR] [--tiles-ptxas PATH]

``--bin`` names a folder holding ``ptxas`` and ``nvdisasm`` (default: Triton's bundled ones when
that interpreter has Triton, else PATH); the PTX version is lowered to what that ptxas reads.
Which ptxas matters: on the GPU tiles' PTX goes through the driver's JIT and Triton's through
its bundled ptxas.  This compares generated code only; speed is ``realworld_gemm.py``'s.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).resolve().parents[1])]
from gemm_codegen import CONFIGS, FORMS, cases, tiles_ptx  # noqa: E402
from memory_bound import load_kernels  # noqa: E402
from realworld_gemm import KERNELS  # noqa: E402

KEY = ("GMMA", "LDGSTS", "ISETP", "SEL", "R2UR", "MEMBAR", "BAR", "SHFL")


def tool(folder: str | None, name: str) -> str:
    found = str(Path(folder) / name) if folder else shutil.which(name)
    if not found or not Path(found).exists():
        sys.exit(f"{name} not found (give --bin)")
    return found


def assemble(ptx: str, ptxas: str, nvdisasm: str) -> tuple[str, str]:
    """(``ptxas -v``'s register line, the disassembly) of ``ptx``."""
    with tempfile.TemporaryDirectory() as tmp:
        src, cubin = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        for _ in range(2):
            src.write_text(ptx)
            proc = subprocess.run([ptxas, "-arch=sm_90a", "-v", str(src), "-o", str(cubin)],
                                  capture_output=True, text=True)
            known = re.search(r"current version is '([\d.]+)'", proc.stderr)
            if proc.returncode == 0 or known is None:
                break
            ptx = re.sub(r"^\.version [\d.]+", f".version {known.group(1)}", ptx, flags=re.M)
        if proc.returncode:
            return f"ptxas failed: {proc.stderr.strip().splitlines()[-1][:80]}", ""
        regs = re.search(r"Used (\d+) registers", proc.stderr)
        sass = subprocess.run([nvdisasm, "-c", str(cubin)], capture_output=True, text=True, check=True).stdout
    return (f"{regs.group(1)} regs" if regs else "?"), sass


def mma_loop(sass: str) -> list[str]:
    """The instructions of the shortest loop (a label up to a branch back to it) holding a warpgroup
    MMA (HGMMA for 16-bit floats and tf32, IGMMA for 8-bit integers, QGMMA for fp8)."""
    lines = sass.splitlines()
    labels = {m.group(1): i for i, line in enumerate(lines) if (m := re.match(r"\s*(\.L_x_\d+):", line))}
    best: list[str] = []
    for i, line in enumerate(lines):
        m = re.search(r"BRA\s+`?\(?(\.L_x_\d+)", line)
        if m and labels.get(m.group(1), i) < i:
            body = lines[labels[m.group(1)]:i + 1]
            if any(re.search(r"\b[HIQ]GMMA\b", b) for b in body) and (not best or len(body) < len(best)):
                best = body
    return [b for b in best if re.search(r"/\*[0-9a-f]{4}\*/", b)]


def opcode(line: str) -> str:
    text = re.sub(r"^\s*/\*[0-9a-f]+\*/\s*(@!?U?P\w+\s+)?", "", line)
    return text.split()[0].split(".")[0].rstrip(";")


def shared_outside_loop(sass: str, loop: list[str]) -> str:
    """The kernel's shared-memory stores and loads outside the main loop (the epilogue's conversion
    out of the MMA layout: ``STSM``/``STS``, ``LDS``/``LDSM``), by opcode and width."""
    inside = set(loop)
    ops = Counter()
    for line in sass.splitlines():
        if line in inside or not re.search(r"/\*[0-9a-f]{4}\*/", line):
            continue
        text = re.sub(r"^\s*/\*[0-9a-f]+\*/\s*(@!?U?P\w+\s+)?", "", line)
        name = text.split()[0].rstrip(";") if text.split() else ""
        if re.fullmatch(r"(STS|LDS|STSM|LDSM)(\.[\w.]+)?", name):
            ops[name] += 1
    return ", ".join(f"{k} {n}" for k, n in sorted(ops.items())) or "none"


def summary(regs: str, sass: str) -> str:
    loop = mma_loop(sass)
    if not loop:
        return f"{regs} | no warpgroup-MMA loop"
    ops = Counter("GMMA" if opcode(b).endswith("GMMA") else opcode(b) for b in loop)
    key = ", ".join(f"{k} {ops[k]}" for k in KEY if ops[k])
    return f"{regs} | loop {len(loop)} SASS: {key} | outside the loop, shared: {shared_outside_loop(sass, loop)}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--forms", default="")
    ap.add_argument("--configs", default="")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--triton-python", default=None)
    ap.add_argument("--bin", default=None, help="folder with ptxas and nvdisasm")
    ap.add_argument("--tiles-ptxas", default=None,
                    help="another ptxas for tiles' PTX (the driver's JIT on the GPU: that CUDA version's)")
    args = ap.parse_args()
    wanted = [f for f in args.forms.split(",") if f]
    forms = [f for f in FORMS if not wanted or any(w in f for w in wanted)]
    picks = [c for c in args.configs.split(",") if c]
    configs = [c for c in CONFIGS if not picks or any(f"{c[0]}x{c[1]}x{c[2]}_w{c[3]}_s{c[4]}".startswith(p)
                                                      for p in picks)]
    theirs: dict[str, str] = {}
    folder = args.bin
    if args.triton_python:
        cmd = [args.triton_python, str(Path(__file__).parent / "gemm_codegen.py"), "--emit-triton", "--size",
               str(args.size), "--forms", ",".join(forms),
               "--configs", ",".join(f"{c[0]}x{c[1]}x{c[2]}_w{c[3]}_s{c[4]}" for c in configs)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            sys.exit(f"Triton side failed:\n{proc.stderr[-2000:]}")
        theirs = json.loads(proc.stdout.strip().splitlines()[-1])
        if folder is None:
            where = subprocess.run([args.triton_python, "-c", "import triton, os; print(os.path.dirname("
                                    "triton.__file__))"], capture_output=True, text=True).stdout.strip()
            folder = str(Path(where) / "backends" / "nvidia" / "bin")
    ptxas, nvdisasm = tool(folder, "ptxas"), tool(folder, "nvdisasm")
    assembler = {"tiles": args.tiles_ptxas or ptxas, "triton": ptxas}
    mod = load_kernels("tiles", Path(tempfile.mkdtemp()), KERNELS, "gemm_sass")
    for form, cfg in cases(forms, configs):
        print(f"\n{form}, {cfg[0]}x{cfg[1]}x{cfg[2]} w{cfg[3]} s{cfg[4]}, {args.size}^3")
        for who, ptx in (("tiles", tiles_ptx(mod, form, cfg, args.size)), ("triton", theirs.get(f"{form}|{cfg}"))):
            if ptx is None:
                continue
            if ptx.startswith("error:"):
                print(f"  {who:6s} {ptx}")
                continue
            print(f"  {who:6s} {summary(*assemble(ptx, assembler[who], nvdisasm))}")


if __name__ == "__main__":
    main()
