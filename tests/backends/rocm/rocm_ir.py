"""Hand-written LLVM IR kernels built from an ``LLVMTarget``, as the shared emitter will write them."""

from __future__ import annotations

from tiles.backends.llvm.target import LLVMTarget
from tiles.backends.rocm.target import LDS_BARRIER

GRID_PARAMS = "i32 %num_programs_x, i32 %num_programs_y, i32 %num_programs_z"


def _attributes(target: LLVMTarget) -> str:
    return " ".join(f'"{k}"="{v}"' for k, v in target.kernel_attributes.items())


def module(target: LLVMTarget, body: str, declarations: str = "") -> str:
    flags = "".join(f"!{i} = {flag}\n" for i, flag in enumerate(target.module_flags))
    flag_refs = ", ".join(f"!{i}" for i in range(len(target.module_flags)))
    return (f'target datalayout = "{target.data_layout}"\n'
            f'target triple = "{target.triple}"\n\n'
            f"declare i32 @{target.thread_id}()\n"
            + "".join(f"declare i32 @{b}()\n" for b in target.block_id)
            + f"declare void @{target.barrier}()\n{declarations}\n{body}\n"
            f"attributes #0 = {{ {_attributes(target)} }}\n"
            f"!llvm.module.flags = !{{{flag_refs}}}\n{flags}")


def vector_add(target: LLVMTarget, name: str = "vector_add", block: int = 256) -> str:
    """out[i] = x[i] + y[i] for i < n, one element per work-item."""
    g = target.global_addrspace
    return f"""
define {target.kernel_calling_conv} void @{name}(ptr addrspace({g}) %x, ptr addrspace({g}) %y,
    ptr addrspace({g}) %out, i32 %n, {GRID_PARAMS}) #0 {{
entry:
  %tid = call i32 @{target.thread_id}()
  %pid = call i32 @{target.block_id[0]}()
  %base = mul i32 %pid, {block}
  %i = add i32 %base, %tid
  %in_bounds = icmp slt i32 %i, %n
  br i1 %in_bounds, label %body, label %exit
body:
  %px = getelementptr float, ptr addrspace({g}) %x, i32 %i
  %py = getelementptr float, ptr addrspace({g}) %y, i32 %i
  %po = getelementptr float, ptr addrspace({g}) %out, i32 %i
  %a = load float, ptr addrspace({g}) %px
  %b = load float, ptr addrspace({g}) %py
  %s = fadd float %a, %b
  store float %s, ptr addrspace({g}) %po
  br label %exit
exit:
  ret void
}}
"""


def scale(target: LLVMTarget, name: str = "scale") -> str:
    """x[pid] *= alpha (a double scalar, so the metadata has an 8-byte by_value slot)."""
    g = target.global_addrspace
    return f"""
define {target.kernel_calling_conv} void @{name}(ptr addrspace({g}) %x, double %alpha,
    {GRID_PARAMS}) #0 {{
  %pid = call i32 @{target.block_id[0]}()
  %p = getelementptr double, ptr addrspace({g}) %x, i32 %pid
  %v = load double, ptr addrspace({g}) %p
  %r = fmul double %v, %alpha
  store double %r, ptr addrspace({g}) %p
  ret void
}}
"""


def reverse_through_lds(target: LLVMTarget, block: int = 256) -> str:
    """out[t] = x[block - 1 - t] via shared memory: needs the fenced barrier."""
    g, s = target.global_addrspace, target.shared_addrspace
    barrier = "\n  ".join(LDS_BARRIER)
    return f"""
@tile = internal addrspace({s}) global [{block} x float] poison, align 16

define {target.kernel_calling_conv} void @reverse(ptr addrspace({g}) %x, ptr addrspace({g}) %out,
    {GRID_PARAMS}) #0 {{
  %t = call i32 @{target.thread_id}()
  %px = getelementptr float, ptr addrspace({g}) %x, i32 %t
  %v = load float, ptr addrspace({g}) %px
  %ps = getelementptr [{block} x float], ptr addrspace({s}) @tile, i32 0, i32 %t
  store float %v, ptr addrspace({s}) %ps
  {barrier}
  %r = sub i32 {block - 1}, %t
  %pr = getelementptr [{block} x float], ptr addrspace({s}) @tile, i32 0, i32 %r
  %w = load float, ptr addrspace({s}) %pr
  %po = getelementptr float, ptr addrspace({g}) %out, i32 %t
  store float %w, ptr addrspace({g}) %po
  ret void
}}
"""
