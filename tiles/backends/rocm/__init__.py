"""The ROCm backend: tile IR -> LLVM IR (shared emitter) -> AMDGPU ISA -> HSACO -> HIP.

Compiling needs only llvmlite and an ``ld.lld``; launching needs hip-python and a ROCm
device.  Stages: ``ir`` (tile IR text), ``llir``, ``amdgcn`` (ISA text), ``hsaco`` (bytes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import config
from ...core.errors import CompilationError, LaunchError, UnsupportedError
from ...core.ir import Kernel
from ...core.printer import format_kernel
from ..base import Backend, CompiledKernel, LaunchArg, Options, Stage, Staged, Target
from ..lowering import Lowered
from . import runtime, toolchain
from .codeobject import CodeObject, CodeObjectError, KernelInfo, read_code_object
from .kernargs import pack_arguments
from .target import backend_target, llvm_target

__all__ = ["ROCmBackend"]

# Code object version to write into LLVM IR when no linker is found to ask (LLVM's default).
VERSION_WITHOUT_LINKER = 5


def lower_to_llvm_ir(kernel: Kernel, arch: str, options: Options) -> Lowered:
    """The shared LLVM emitter's output for ``kernel`` on ``arch``."""
    from ..llvm.emit import lower_module
    linker = toolchain.find_linker()
    version = toolchain.code_object_version(linker, arch) if linker else VERSION_WITHOUT_LINKER
    caps = backend_target(arch)
    try:
        target = llvm_target(arch, version, max_workgroup_size=options.threads(caps))
    except ValueError as e:
        raise UnsupportedError(f"num_warps={options.num_warps}: {e}", kernel.loc) from None
    return lower_module(kernel, target, options, caps)


def kernel_in(code: CodeObject, name: str) -> KernelInfo:
    """The kernel called ``name``, or the code object's only kernel."""
    if len(code.kernels) == 1:
        return code.kernels[0]
    return code.kernel(name)


class ROCmBackend(Backend):
    name = "rocm"
    fp_fusion_default = True  # as Triton: a * b + c contracts to an FMA unless enable_fp_fusion=False

    def available(self) -> tuple[bool, str]:
        return runtime.available()

    def arch(self) -> str:
        """The device's architecture when there is one, else ``TILES_ROCM_ARCH``."""
        ok, _ = runtime.available()
        return runtime.device_arch() if ok else config.rocm_arch()

    def target(self) -> Target:
        return backend_target(self.arch())

    def target_key(self) -> tuple[str, int]:
        return (self.arch(), self.current_device())

    def stages(self, options: Options) -> dict[str, Stage]:
        arch = self.arch()

        def ir(kernel: Kernel, compiled: CompiledKernel) -> str:
            return format_kernel(kernel)

        def llir(_: str, compiled: CompiledKernel) -> Staged:
            # shared: dynamic LDS, given at launch
            return Staged.lowered(lower_to_llvm_ir(compiled.ir, arch, options))

        def amdgcn(llir_text: str, compiled: CompiledKernel) -> Staged:
            code = toolchain.emit_machine_code(toolchain.optimize(llir_text, arch), arch)
            return Staged(code.assembly, next=code.object)  # the assembly is shown; hsaco links the object

        def hsaco(amdgpu_object: bytes, compiled: CompiledKernel) -> Staged:
            try:
                image = toolchain.link(amdgpu_object)
            except toolchain.ToolchainError as e:
                raise CompilationError(str(e), compiled.ir.loc) from None
            code = read_code_object(image)
            info = kernel_in(code, compiled.name)
            return Staged(image, arch=arch, extra=dict(kernel_name=info.name, warp_size=info.wavefront_size,
                                                       code_object_version=code.code_object_version,
                                                       **info.resources()))

        return {"ir": ir, "llir": llir, "amdgcn": amdgcn, "hsaco": hsaco}

    def toolchain_version(self) -> str:
        return toolchain.toolchain_version()

    def load_cached(self, asm: dict[str, Any], metadata: dict[str, Any], kernel: Kernel,
                    options: Options) -> CompiledKernel | None:
        image = asm.get("hsaco")
        if not isinstance(image, bytes) or "threads" not in metadata:
            return None
        try:
            read_code_object(image)
        except CodeObjectError:
            return None
        return CompiledKernel.restore(kernel, options, asm, metadata, image)

    def launch(self, compiled: CompiledKernel, grid: tuple[int, int, int],
               args: Sequence[LaunchArg], stream: Any = None) -> None:
        """Run on the arguments' device and on ``stream`` (see ``runtime``'s docstring)."""
        from ..streams import stream_handle
        image: bytes = compiled.asm["hsaco"]
        info = kernel_in(read_code_object(image), compiled.name)
        block = compiled.threads
        if block > info.max_flat_workgroup_size:
            raise LaunchError(f"{compiled.name}: {block} work-items per program, but the code object "
                              f"allows at most {info.max_flat_workgroup_size}")
        device = runtime.launch_device(args)
        with runtime.OnDevice(device):
            if not isinstance(compiled.handle, runtime.LoadedKernel):
                compiled.handle = runtime.LoadedKernel(image, info.name)
            cupy_args = any("cupy" in type(a.value).__module__ for a in args if a.is_pointer)
            handle = stream_handle(stream, device, cupy_args)
            dtypes = [p.value.type.dtype for p in compiled.ir.params]
            staging = runtime.ArgumentStaging(handle)
            try:
                kernargs = pack_arguments(info, args, dtypes, grid, staging.device_address)
                compiled.handle.launch(grid, block, kernargs, compiled.shared,
                                       stream=handle, device=device)
            finally:
                staging.finish()
