"""The CUDA backend: shared lowering -> LLVM IR -> NVPTX PTX (llvmlite) -> the CUDA driver.

Stages: ``ir``, ``llir`` (LLVM IR text), ``ptx``; on a machine with an NVIDIA GPU
the PTX is loaded through libcuda (ctypes, ``driver.py``) when the kernel first launches
in a context; ``runtime.py`` picks the device, context and stream of each launch.  Without a GPU,
kernels still compile to PTX for ``TILES_CUDA_ARCH`` (default sm_90).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

from ...core import dtypes as D
from ...core.ops import Op
from ...core.printer import format_kernel
from ..base import (
    Backend,
    CodegenChoices,
    CompiledKernel,
    LaunchArg,
    LaunchPlan,
    Options,
    PlannedArg,
    Stage,
    Staged,
    Target,
)
from ..llvm.target import LLVMTarget
from . import toolchain

UNSUPPORTED_OPS = frozenset({Op.DEVICE_ASSERT})
SUPPORTED_DTYPES = D.LOWERED_DTYPES  # float8 on sm_89+ (fp8_ops.py)


LIBDEVICE_F32 = {"sin": "__nv_sinf", "cos": "__nv_cosf", "erf": "__nv_erff", "log": "__nv_logf",
                 "fmod": "__nv_fmodf"}
LIBDEVICE_F64 = {"exp": "__nv_exp", "exp2": "__nv_exp2", "log": "__nv_log", "log2": "__nv_log2",
                 "sin": "__nv_sin", "cos": "__nv_cos", "erf": "__nv_erf", "fmod": "__nv_fmod"}


EPS32 = 2.0 ** -23
FLUSHED = 2.0 ** -126  # largest result a flush-to-zero approximation drops


def approximate_math(libdevice: bool) -> tuple[tuple[Op | str, float, float], ...]:
    """float32 math on the hardware approximations (as Triton): exp2 = ex2.approx.ftz (2 ulp;
    results below 2^-126 flush to zero, as Triton's), exp = ex2.approx.ftz(x * log2 e), whose
    rounded argument costs up to ~46 ulp near the ends of exp's finite range; lg2.approx
    is 2^-22 in absolute terms near 1; without libdevice, log = lg2 * ln 2 and sin/cos use
    sin/cos.approx (absolute error about 2^-20.5 on [-pi, pi], growing outside); ``/`` (a DIV whose
    attrs allow it) is div.full.f32, 2 ulp over the full range (subnormal results assumed flushed)."""
    out: list[tuple[Op | str, float, float]] = [(Op.EXP, 64 * EPS32, FLUSHED), (Op.EXP2, 2 * EPS32, FLUSHED),
                                                (Op.LOG2, 4 * EPS32, 2.0 ** -22), (Op.DIV, 2 * EPS32, FLUSHED)]
    if not libdevice:
        out += [(Op.LOG, 4 * EPS32, 2.0 ** -22), (Op.SIN, 0.0, 2.0 ** -18), (Op.COS, 0.0, 2.0 ** -18)]
    return tuple(out) + FAST_MATH


# libdevice's __nv_fast_* functions (CUDA Math API, "intrinsic functions"), inside the ranges the
# conformance corpus uses: __expf 2 + 1.173|x| ulp (|x| <= 20), __exp10f 2 + 2.97|x| ulp (|x| <= 8),
# __logf / __log2f / __log10f 2^-21.41 / 2^-22 / 2^-24 absolute near 1 and 3 ulp elsewhere,
# __sinf / __cosf 2^-21.41 absolute on [-pi, pi], __tanf from them, __powf = exp2(y * __log2f(x)),
# __fdividef 2 ulp (0 when 2^126 < |y| < 2^128).
FAST_MATH: tuple[tuple[Op | str, float, float], ...] = (
    ("fast_expf", 32 * EPS32, 0.0), ("fast_exp10f", 32 * EPS32, 0.0),
    ("fast_logf", 4 * EPS32, 2.0 ** -21), ("fast_log2f", 4 * EPS32, 2.0 ** -22),
    ("fast_log10f", 4 * EPS32, 2.0 ** -23), ("fast_sinf", 0.0, 2.0 ** -20),
    ("fast_cosf", 0.0, 2.0 ** -20), ("fast_tanf", 16 * EPS32, 2.0 ** -19),
    ("fast_powf", 64 * EPS32, 0.0), ("fast_dividef", 4 * EPS32, 1e-30),
)


def nvptx_target(arch: str) -> LLVMTarget:
    """NVPTX facts; with libdevice, sin/cos/erf/log and float64 math are accurate (as Triton's),
    without it they fall back to the hardware approximations (float64 math unsupported)."""
    libdevice = toolchain.libdevice_path() is not None
    return LLVMTarget(
        triple=toolchain.TRIPLE, data_layout=toolchain.DATA_LAYOUT, arch=arch, warp_size=32,
        kernel_calling_conv="ptx_kernel", thread_id="llvm.nvvm.read.ptx.sreg.tid.x",
        block_id=("llvm.nvvm.read.ptx.sreg.ctaid.x", "llvm.nvvm.read.ptx.sreg.ctaid.y",
                  "llvm.nvvm.read.ptx.sreg.ctaid.z"),
        barrier="llvm.nvvm.barrier0",
        fence_ordered_rmw=True,
        shuffle_xor="llvm.nvvm.shfl.sync.bfly.i32",
        shuffle_idx="llvm.nvvm.shfl.sync.idx.i32",
        math_f32={"log2": "llvm.nvvm.lg2.approx.f", "exp2": "llvm.nvvm.ex2.approx.ftz.f",
                  **(LIBDEVICE_F32 if libdevice else {})},
        math_f64=LIBDEVICE_F64 if libdevice else {},
        libdevice=libdevice,
        kernel_attributes={"nvvm.maxntid": "{threads}"},
    )


def _ptxas_resources(ptx: str, arch: str) -> dict[str, int]:
    """Registers and spilled bytes per thread as ptxas reports them (empty without ptxas)."""
    info = toolchain.ptxas_info(ptx, arch)
    return {"registers": info["registers"], "spill_stores": info.get("spill_stores", 0)} if "registers" in info else {}


class CUDABackend(Backend):
    name = "cuda"
    fp_fusion_default = True  # as Triton: a * b + c contracts to an FMA unless enable_fp_fusion=False

    def available(self) -> tuple[bool, str]:
        try:
            from . import runtime
            runtime.driver()
        except Exception as e:  # no libcuda, no device
            return False, f"no usable CUDA device: {e}"
        return True, ""

    def arch(self) -> str:
        forced = os.environ.get("TILES_CUDA_ARCH")
        if forced:
            return forced
        ok, _ = self.available()
        if ok:
            from . import runtime
            return runtime.device_arch()
        return "sm_90"

    def target_key(self) -> tuple[str, int, CodegenChoices]:
        """(arch, device, the code choices compiles take now): a launch plan built before a
        ``TILES_*`` switch changed is not reused after (the compile caches key on ``Options``)."""
        return (self.arch(), self.current_device(), self.code_choices())

    def target(self) -> Target:
        return Target("cuda", arch=self.arch(), warp_size=32, max_threads_per_block=1024,
                      shared_memory=227 * 1024, dtypes=SUPPORTED_DTYPES, unsupported_ops=UNSUPPORTED_OPS,
                      approximate=approximate_math(toolchain.libdevice_path() is not None))

    def toolchain_version(self) -> str:
        # ptxas picks between lowerings (choices.py): with and without it they may differ
        return toolchain.toolchain_version() + ("" if toolchain.ptxas_path() else " no-ptxas")

    def stages(self, options: Options) -> dict[str, Stage]:
        arch = self.arch()

        def llir(kernel: Any, compiled: CompiledKernel) -> Staged:
            from .choices import lower_chosen
            from .hopper import persistent
            lowered = lower_chosen(compiled.ir, nvptx_target(arch), options, self.target())
            # TMA: launched with the maps as a hidden argument (tma_launch.py), and the grid as three more
            return Staged.lowered(lowered, arch=arch, tensor_maps=tuple(lowered.tensor_maps),
                                  persistent=persistent.VARIANT in lowered.variants)

        def ptx(text: str, compiled: CompiledKernel) -> Staged:
            code = toolchain.to_ptx(text, arch)
            if options.maxnreg is not None:
                from .occupancy import with_directive
                code = with_directive(code, f".maxnreg {options.maxnreg}") or code
            return Staged(code, loaded={"resources": functools.partial(_ptxas_resources, code, arch)})

        return {"ir": lambda kernel, compiled: format_kernel(kernel), "llir": llir, "ptx": ptx}

    def load_cached(self, asm: dict[str, Any], metadata: dict[str, Any], kernel: Any,
                    options: Options) -> CompiledKernel | None:
        """The cached PTX; the driver loads it at the first launch (its own JIT cache keeps the
        machine code, so that load is quick too)."""
        if not isinstance(asm.get("ptx"), str) or "threads" not in metadata:
            return None
        compiled = CompiledKernel(kernel.name, kernel, options, dict(asm), dict(metadata), asm["ptx"])
        compiled.loaded["resources"] = functools.partial(_ptxas_resources, asm["ptx"], compiled.arch or "sm_80")
        return compiled

    def _loaded(self, compiled: CompiledKernel) -> Any:
        loaded = compiled.loaded.get("cuda")
        if loaded is None:
            from . import runtime
            params = [p.value.type.dtype for p in compiled.ir.params]
            if compiled.tensor_maps:
                params.append(D.PointerType(D.int8))  # the tensor maps' address
            if compiled.persistent:
                params += [D.int32] * 3  # the grid (tma_launch.py)
            loaded = runtime.LoadedKernel(compiled.asm["ptx"], compiled.name, params, compiled.shared,
                                          compiled.threads, compiled.options.codegen.occupancy)
            compiled.loaded["cuda"] = loaded
        return loaded

    def make_launcher(self, compiled: CompiledKernel, plan: LaunchPlan) -> Callable[..., None]:
        """``launcher(grid, values, stream=None)`` for any arguments (``launcher.general``)."""
        from .launch import launcher
        if compiled.tensor_maps:
            return self._with_tensor_maps(compiled, plan, lambda c, p: launcher.general(c, self._loaded(c), p))
        return launcher.general(compiled, self._loaded(compiled), plan)

    def _with_tensor_maps(self, compiled: CompiledKernel, plan: LaunchPlan,
                          make: Callable[..., Callable[..., None]]) -> Callable[..., None]:
        from .tma_launch import with_tensor_maps

        def without_tma() -> CompiledKernel:
            return self.compile(compiled.ir, compiled.options.without("tma"))
        return with_tensor_maps(compiled, plan, make, without_tma)

    def make_keyed_launcher(self, compiled: CompiledKernel, plan: LaunchPlan,
                            example: Sequence[Any]) -> Callable[..., None]:
        """A launcher for values with the types, dtypes and devices of ``example`` (the jit's
        launch key guarantees it): torch CUDA tensors take ``launcher.keyed``'s short path."""
        from .launch import launcher
        if type(self).make_launcher is not CUDABackend.make_launcher:  # a subclass launches its own way
            return self.make_launcher(compiled, plan)
        if compiled.tensor_maps:
            return self._with_tensor_maps(
                compiled, plan,
                lambda c, p: launcher.keyed(c, self._loaded(c), p, [*example, *[0] * (len(p) - len(plan))]))
        return launcher.keyed(compiled, self._loaded(compiled), plan, example)

    def launch(self, compiled: CompiledKernel, grid: tuple[int, int, int],
               args: Sequence[LaunchArg], stream: Any = None) -> None:
        """Run on the arguments' device, on ``stream`` (see ``runtime``'s docstring)."""
        from . import runtime
        if compiled.tensor_maps:  # the maps' address is a hidden argument (tma_launch.py)
            plan = [PlannedArg(i, a.name, a.is_pointer, a.writable) for i, a in enumerate(args)]
            self.make_launcher(compiled, plan)(grid, [a.value for a in args], stream)
            return
        runtime.launch(self._loaded(compiled), grid, compiled.threads, args, stream)

    # -- tiles.runtime.driver's questions, answered by the driver --------------------------
    def current_device(self) -> int:
        from . import runtime
        try:
            return runtime.current_device()
        except Exception:  # no driver or no device: compiling only, for device 0
            return 0

    def set_current_device(self, device: int) -> None:
        from . import runtime
        runtime.set_current_device(int(device))

    def current_stream(self, device: int | None = None) -> Any:
        from ..streams import default_stream
        from . import runtime
        if not self.available()[0]:
            return None
        return default_stream(runtime.current_device() if device is None else int(device), False)

    def device_properties(self, device: int = 0) -> dict[str, Any]:
        """Triton's ``get_device_properties`` keys from the driver (the target's, compiling only)."""
        from . import runtime
        if self.available()[0]:
            return dict(runtime.device_properties(device))
        target = self.target()
        return {"multiprocessor_count": 1, "max_shared_mem": target.shared_memory, "max_num_regs": 65536,
                "warpSize": 32, "max_threads_per_block": target.max_threads_per_block,
                "sm_clock_rate": 0, "mem_clock_rate": 0, "mem_bus_width": 0}
