"""Triton's launch keywords: which ones tiles honours and which are accepted as hints.

``kernel[grid](..., num_warps=, num_stages=, debug=, stream=, backend=, enable_fp_fusion=)`` change
what runs (``enable_fp_fusion`` and ``maxnreg`` are read from the hints: ``Options.fp_fusion``,
``Options.maxnreg``, the latter honoured by the CUDA backend only);
every other keyword Triton's CUDA and HIP launchers accept is taken and checked so
Triton code ports unchanged, but does not change results (see
docs/porting-from-triton.md, "Launch options").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..core.errors import LaunchError, UnsupportedError
from ..core.ir import Loc
from .validate import check_positive_int

# Accepted, validated where a wrong value is certainly a mistake, and otherwise without effect
# (tiles never clusters), except enable_fp_fusion and maxnreg, which jit.py turns into Options fields.
HINTS: frozenset[str] = frozenset({
    "num_ctas", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid", "launch_pdl",
    "sanitize_overflow", "ptx_version", "ptx_options", "enable_reflect_ftz", "sched4reg", "clc",
    "extern_libs", "supported_fp8_dtypes", "deprecated_fp8_dot_operand_dtypes",
    "default_dot_input_precision", "allowed_dot_input_precisions", "max_num_imprecise_acc_default",
    "instrumentation_mode", "fpsan_homomorphic_casts", "min_shared_mem", "ir_override",
    # HIP's
    "waves_per_eu", "matrix_instr_nonkdim", "kpack", "allow_flush_denorm", "schedule_hint",
    "instruction_sched_variant", "llvm_fn_attrs", "wgp_cu_mode",
})
# ``@jit`` keywords of Triton's that change nothing in tiles: it inlines every called @jit function
# (noinline), specializes on alignment regardless, and has no profiler hooks (repr, launch_metadata).
JIT_HINTS: frozenset[str] = frozenset({"version", "repr", "launch_metadata", "do_not_specialize_on_alignment",
                                       "noinline"})
# Triton refuses these three (its current device and stream are used); tiles takes ``stream``.
DEVICE_KEYWORDS = frozenset({"device", "device_type"})


def split_hints(kwargs: dict[str, Any], params: Iterable[str], where: Loc, name: str
                ) -> tuple[dict[str, Any], dict[str, Any]]:
    """(keywords for the kernel's parameters, Triton hint options); kernel parameters win a clash."""
    params = set(params)
    kernel_kwargs: dict[str, Any] = {}
    hints: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in params:
            kernel_kwargs[key] = value
        elif key in HINTS:
            hints[key] = value
        elif key in DEVICE_KEYWORDS:
            raise LaunchError(f"{where}: {name}: the {key}= launch option is not taken (Triton refuses it "
                              "too): kernels run on the device that holds their arrays")
        else:
            kernel_kwargs[key] = value  # binding reports it as an unexpected keyword
    check_hints(hints, where, name)
    return kernel_kwargs, hints


def check_hints(hints: dict[str, Any], where: Loc, name: str) -> None:
    if "num_ctas" in hints:
        check_positive_int("num_ctas", hints["num_ctas"], where, name)
    if hints.get("enable_fp_fusion") not in (None, True, False):
        raise LaunchError(f"{where}: enable_fp_fusion must be True or False, got "
                          f"{hints['enable_fp_fusion']!r}")
    if hints.get("maxnreg") is not None:
        check_positive_int("maxnreg", hints["maxnreg"], where, name)
    if hints.get("ir_override") is not None:
        raise UnsupportedError(f"{name}: ir_override={hints['ir_override']!r} names a file of Triton IR; "
                               "tiles compiles its own IR and cannot load one", where)
