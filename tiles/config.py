"""Every environment variable tiles reads, in one place.

| variable | meaning |
|---|---|
| ``TILES_INTERPRET=1`` | run kernels on the NumPy interpreter |
| ``TILES_INTERPRET=step`` | stepping mode: the kernel's Python runs one program at a time on the interpreter's |
|   | values, so ``breakpoint()`` in a kernel stops per program (backend ``step``; docs/debugging.md) |
| ``TILES_PROGRAMS=x,y,z[;...]`` | stepping mode: step only these programs, run the others vectorized (default: all) |
| ``TILES_WATCH=out[3][;...]`` | stepping mode: report every write of this argument element (``out[3]``, |
|   | ``out[2, 5]``), argument (``out``) or host address (``0x7f...``), with file:line and program; stop in pdb |
|   | when a stepped program writes it (``TILES_WATCH_BREAK=0``: report only) |
| ``TILES_BACKEND=<name>`` | run kernels on this backend (``interpreter``, ``opencl``, ``cuda``, ``rocm``) |
| ``TILES_DUMP=<stage>[,<stage>]`` | print these compile stages to stderr (``ir``, ``opencl``, ``llir``, ``ptx``... |
|   | see ``DUMP_STAGES``); a name no backend produces is an error that lists the known ones |
| ``TILES_CHECK=1`` | run the IR verifier after every pass |
| ``TILES_DEBUG=1`` | ``debug=True`` unless ``@jit(debug=)`` says: device_assert, checked memory (docs/debugging.md) |
| ``TILES_CACHE_DIR`` | on-disk compile cache, every backend (default: ``~/.cache/tiles``) |
| ``TILES_ALWAYS_COMPILE=1`` | trace and compile every kernel: the on-disk cache is neither read nor written |
| ``TILES_PROGRESS=0/1`` | progress on stderr: each autotuning config and its time, compiles over 2 s |
|   | (on a terminal: a bar redrawn in place); default: on when stderr is a terminal (progress.py) |
| ``TILES_PRINT_AUTOTUNING=1`` | print each configuration tried, why one failed, and the one the autotuner picks |
| ``TILES_OPENCL_DEVICE`` | OpenCL device: index into all devices, or part of "<platform> <device>" |
| ``TILES_OPENCL_STACK_MB`` | pocl: the stack (MiB, default 256) of the worker threads it starts when tiles first |
|   | lists the platforms; a kernel whose work-group may not fit is refused (opencl/stack.py) |
| ``TILES_INTERPRET_CHECKS=races`` | interpreter: report unsynchronized writes of one address |
| ``TILES_TMA=1/0`` | cuda, sm_90+: copy tensor-descriptor tiles with TMA where it applies (the default), or never |
|   | (cuda/hopper/tma_claim.py); unset: ``TMA_BY_DEFAULT`` |
| ``TILES_STMATRIX=1/0`` | tensor cores: MMA tiles leave the fragment layout through swizzled local memory, |
|   | written with ``stmatrix`` (16-bit, sm_90; else pairs) (the default), or, with 0, through padded |
|   | rows written as pairs, no column strips (the earlier path, for A/B; lowering/mma/staging.py, epilogue.py) |
| ``TILES_APPROX_DIV=1/0`` | cuda: a float32 ``/`` is ``div.full.f32`` (2 ulp, as Triton's; the default), or IEEE's |
| ``TILES_INFLIGHT=1/0`` | tensor cores: a pipelined loop (3+ stages) with several products leaves the last in |
|   | flight into the next iteration where it costs no occupancy (the default), or never |
| ``TILES_PRODUCER=1/0`` | cuda, sm_90: TMA-pipelined ``tl.dot`` loops get one more warp that only issues their |
|   | copies (cuda/hopper/tma_producer.py; the default), or thread 0 of the consumers issues them |
| ``TILES_PERSISTENT=1/0`` | cuda, sm_90: kernels with that warp run persistent, at most one program launched |
|   | per SM, each running several of the kernel's (cuda/hopper/persistent.py; the default), or not |
| ``TILES_OCCUPANCY=1/0`` | cuda: reload a register-bound kernel capped for one more program per SM when that |
|   | spills little, and a heavily spilling one uncapped (backends/cuda/occupancy.py; the default), or never |
| ``TILES_PREDICATED=1/loads/outside_loops/0`` | cuda: masked global loads and stores (``loads``: loads |
|   | only) as predicated ``@p ld.global``/``st.global``, or a branch around a plain access; by default |
|   | (``outside_loops``) loads outside the kernel's loops, in kernels without a ``dot`` |
|   | (cuda/predicated_ops.py, choices.py) |
| ``TILES_REASSOCIATE=1/0`` | cuda, rocm (tensor-core lowering): ``base + rows * stride + cols`` inside |
|   | loops summed as ``(base + cols) + rows * stride``, one 64-bit add per element (default on; |
|   | lowering/reassociate_pointers.py) |
| ``TILES_CUDA_ARCH=<sm_..>`` | cuda: architecture when no device is present (default ``sm_90``) |
| ``TILES_LIBDEVICE=<path>`` | cuda: NVIDIA's libdevice bitcode for accurate math (else CUDA_HOME, usual places) |
| ``TILES_ROCM_ARCH=<gfx...>`` | rocm: architecture when no device is present (default ``gfx942``) |
| ``TILES_CONFORMANCE_REPRO_DIR`` | conformance: where shrunk reproducers are written |
|   | (default ``/tmp/tiles-conformance``) |

The code choices (``TILES_TMA``, ``TILES_STMATRIX``, ``TILES_APPROX_DIV``, ``TILES_INFLIGHT``,
``TILES_PRODUCER``, ``TILES_PERSISTENT``, ``TILES_OCCUPANCY``, ``TILES_PREDICATED``,
``TILES_REASSOCIATE``) are read once per compile by the jit into ``Options.codegen``
(``backends/base.py``: ``CodegenChoices.from_env``), which both compile caches key on; the
lowering reads that, never these functions.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# the stages the built-in backends produce (a third-party backend's own stage names are accepted too)
DUMP_STAGES = ("ir", "opencl", "binary", "llir", "ptx", "amdgcn", "hsaco")


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def interpret() -> bool:
    return _flag("TILES_INTERPRET")


def step_mode() -> bool:
    return os.environ.get("TILES_INTERPRET", "").strip().lower() == "step"


def backend_name() -> str | None:
    if step_mode():
        return "step"
    if interpret():
        return "interpreter"
    return os.environ.get("TILES_BACKEND") or None


def dump_stages(produced: Iterable[str] = ()) -> set[str]:
    """The stages ``TILES_DUMP`` names; ``produced``: stages of the backend at hand, also accepted."""
    names = {s.strip() for s in os.environ.get("TILES_DUMP", "").split(",") if s.strip()}
    known = [*DUMP_STAGES, *(s for s in produced if s not in DUMP_STAGES)]
    unknown = sorted(names - set(known))
    if unknown:
        raise ValueError(f"TILES_DUMP={os.environ['TILES_DUMP']!r}: no stage called "
                         f"{', '.join(map(repr, unknown))}; known stages: {', '.join(known)} "
                         "(give one or more, separated by commas, e.g. TILES_DUMP=ir,ptx)")
    return names


TMA_BY_DEFAULT = True  # the TMA tests and benchmarks/tma_gemm.py passed on the H200 (benchmarks/RESULTS.md)

CODE_CHOICES = ("TILES_TMA", "TILES_PRODUCER", "TILES_PERSISTENT", "TILES_INFLIGHT", "TILES_STMATRIX",
                "TILES_APPROX_DIV", "TILES_OCCUPANCY", "TILES_PREDICATED", "TILES_REASSOCIATE")
# CUDA's target_key reads them on launches: from the dict behind os.environ, undecoded, where it has one
_RAW_ENVIRON: dict[Any, Any] | None = getattr(os.environ, "_data", None)
_encode = getattr(os.environ, "encodekey", None)
_RAW_CODE_CHOICES = tuple(_encode(n) for n in CODE_CHOICES) if callable(_encode) else None


def code_choice_values() -> tuple[Any, ...]:
    """The ``CODE_CHOICES`` variables as set now (undecoded where that is cheaper) and
    ``TMA_BY_DEFAULT``: equal tuples mean equal code choices."""
    raw = _RAW_ENVIRON
    if raw is not None and _RAW_CODE_CHOICES is not None:
        return (*map(raw.get, _RAW_CODE_CHOICES), TMA_BY_DEFAULT)
    return (*map(os.environ.get, CODE_CHOICES), TMA_BY_DEFAULT)


def tma() -> bool:
    value = os.environ.get("TILES_TMA", "").strip().lower()
    return value in ("1", "true", "yes", "on") if value else TMA_BY_DEFAULT


def stmatrix() -> bool:
    """Whether MMA tiles go to local memory swizzled, with ``stmatrix`` (TILES_STMATRIX, default on)."""
    return os.environ.get("TILES_STMATRIX", "").strip().lower() not in ("0", "false", "no", "off")


def approximate_division() -> bool:
    """Whether a float32 ``/`` may use the backend's declared fast division (TILES_APPROX_DIV, default
    on, as Triton's ``div.full.f32`` on CUDA); off, every ``/`` is IEEE's (``tl.math.div_rn``)."""
    return os.environ.get("TILES_APPROX_DIV", "").strip().lower() not in ("0", "false", "no", "off")


def producer_warp() -> bool:
    """Whether TMA-pipelined tensor-core loops get a producer warp that issues their copies
    (TILES_PRODUCER, default on; backends/cuda/hopper/tma_producer.py)."""
    return os.environ.get("TILES_PRODUCER", "").strip().lower() not in ("0", "false", "no", "off")


def persistent() -> bool:
    """Whether kernels with a producer warpgroup run several programs per launched program, at most
    one launched per SM (TILES_PERSISTENT, default on; backends/cuda/hopper/persistent.py)."""
    return os.environ.get("TILES_PERSISTENT", "").strip().lower() not in ("0", "false", "no", "off")


PREDICATED_BY_DEFAULT = "outside_loops"  # which masked global accesses are predicated when TILES_PREDICATED is unset


def predicated_access() -> str:
    """Which masked global accesses are predicated instructions rather than branches around plain
    ones: "all", "loads", "outside_loops" (loads outside loops) or "" (none)
    (TILES_PREDICATED=1/loads/outside_loops/0; cuda/predicated_ops.py)."""
    value = os.environ.get("TILES_PREDICATED", "").strip().lower()
    if not value:
        return PREDICATED_BY_DEFAULT
    if value in ("loads", "outside_loops"):
        return value
    return "all" if value in ("1", "true", "yes", "on", "all") else ""


def reassociate_pointers() -> bool:
    """Whether tensor-core lowerings sum ``base + rows * stride + cols`` inside loops column offsets
    first (TILES_REASSOCIATE, default on; 0 turns it off; lowering/reassociate_pointers.py)."""
    return os.environ.get("TILES_REASSOCIATE", "").strip().lower() not in ("0", "false", "no", "off")


def occupancy() -> bool:
    """Whether the CUDA backend may reload a kernel with a register cap that fits one more program per
    SM, or without ptxas' own cap where that spilled heavily (TILES_OCCUPANCY, default on; cuda/occupancy.py)."""
    return os.environ.get("TILES_OCCUPANCY", "").strip().lower() not in ("0", "false", "no", "off")


def inflight() -> bool:
    """Whether a pipelined loop of three stages or more that runs several products may leave the last
    one in flight into the next iteration (TILES_INFLIGHT, default on; cuda/hopper/inflight.py); the
    CUDA backend keeps that code only where ptxas says it costs no occupancy (cuda/choices.py)."""
    return os.environ.get("TILES_INFLIGHT", "").strip().lower() not in ("0", "false", "no", "off")


def step_programs() -> str | None:
    """The programs stepping mode steps (TILES_PROGRAMS; None: all)."""
    return os.environ.get("TILES_PROGRAMS") or None


def watch() -> str:
    """What stepping mode watches (TILES_WATCH; interp/watch.py)."""
    return os.environ.get("TILES_WATCH", "").strip()


def watch_break() -> bool:
    """Whether a watched write by a stepped program stops in pdb (TILES_WATCH_BREAK, default on)."""
    return os.environ.get("TILES_WATCH_BREAK", "").strip().lower() not in ("0", "false", "no", "off")


def check_ir() -> bool:
    return _flag("TILES_CHECK")


def debug() -> bool:
    return _flag("TILES_DEBUG")


def cache_dir() -> Path:
    return Path(os.environ.get("TILES_CACHE_DIR") or Path.home() / ".cache" / "tiles")


def always_compile() -> bool:
    return _flag("TILES_ALWAYS_COMPILE")


def progress() -> bool:
    """Report long compiles and autotuning on stderr: TILES_PROGRESS, else when stderr is a terminal."""
    value = os.environ.get("TILES_PROGRESS", "").strip().lower()
    if value:
        return value in ("1", "true", "yes", "on")
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def print_autotuning() -> bool:
    return _flag("TILES_PRINT_AUTOTUNING")


def interpreter_checks() -> set[str]:
    raw = os.environ.get("TILES_INTERPRET_CHECKS")  # (read on every launch: mostly unset)
    return {s.strip() for s in raw.split(",") if s.strip()} if raw else set()


def rocm_arch() -> str:
    return os.environ.get("TILES_ROCM_ARCH", "").strip() or "gfx942"


def triton_rules() -> bool:
    """Whether Triton's refusals apply: ``import triton`` gives tiles (the compatibility mode,
    tiles/as_triton), so kernels must behave as under Triton."""
    return getattr(sys.modules.get("triton"), "tiles", None) is not None
