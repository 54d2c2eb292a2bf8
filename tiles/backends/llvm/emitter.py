"""An ``Emitter`` that writes LLVM IR text for a GPU ``LLVMTarget``.

The kernel frame, memory, local memory and structured control flow live here;
arithmetic is in ``arith.py``, warp shuffles in ``warp.py``, and the register/block
plumbing in ``builder.py``.  Vendor-only instructions (NVIDIA tensor cores, ``cp.async``)
are added by the backend's subclass (``backends/cuda/emitter.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...core.dtypes import DType, ScalarType
from ...core.errors import UnsupportedError
from ...core.ir import Loc
from ...core.ops import Op
from ..base import Target
from ..lowering.emitter import Carried, Emitter
from .arith import LLVMArithmetic
from .builder import _INT_TY, LLVMBuilder, Reg
from .target import LLVMTarget
from .warp import LLVMWarpOps

# LLVM's ordering for each Triton ``sem``.
_ORDER = {"relaxed": "monotonic", "acquire": "acquire", "release": "release", "acq_rel": "acq_rel"}


class LLVMEmitter(LLVMArithmetic, LLVMWarpOps, Emitter):
    def __init__(self, target: Target, llvm_target: LLVMTarget) -> None:
        LLVMBuilder.__init__(self, target, llvm_target)

    # ------------------------------------------------------------ kernel frame
    def begin_kernel(self, name: str, params: Sequence[tuple[str, ScalarType]], threads: int) -> list[Any]:
        self.name, self.threads = name, threads
        handles = []
        for i, (_name, dtype) in enumerate(params):
            reg = Reg(f"%arg{i}", self.ty(dtype))
            self.params.append((reg.ty, reg.name))
            handles.append(reg)
        for axis in "xyz":
            self.params.append(("i32", f"%grid_{axis}"))
        return handles

    def finish(self, local_bytes: int) -> str:
        self._emit("ret void")
        t = self.t
        lines = [f'target triple = "{t.triple}"', f'target datalayout = "{t.data_layout}"', ""]
        if self.uses_smem:
            lines.append(f"@tiles_smem = external addrspace({t.shared_addrspace}) global [0 x i8], align 1024")
        lines += self.globals
        cc = f"{t.kernel_calling_conv} " if t.kernel_calling_conv else ""
        args = ", ".join(f"{ty} {n}" for ty, n in self.params)
        lines.append(f"define {cc}void @{self.name}({args}) #0 {{")
        for label in self.order:
            lines.append(f"{label}:")
            lines.extend(self.blocks[label])
        lines.append("}")
        lines += sorted(self.decls.values())
        attrs = " ".join(f'"{k}"="{v.format(threads=self.threads)}"' for k, v in t.kernel_attributes.items())
        lines.append(f"attributes #0 = {{ nounwind {attrs} }}")
        if t.module_flags:
            ids = [f"!{i}" for i in range(len(t.module_flags))]
            lines.append(f"!llvm.module.flags = !{{{', '.join(ids)}}}")
            lines += [f"{i} = {node}" for i, node in zip(ids, t.module_flags)]
        lines += self.loop_metadata
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------ values
    def thread_id(self) -> Reg:
        return self._call(self.t.thread_id, "i32", [])

    def program_id(self, axis: int) -> Reg:
        return self._call(self.t.block_id[axis], "i32", [])

    def num_programs(self, axis: int) -> Reg:
        return Reg(f"%grid_{'xyz'[axis]}", "i32")


    # ------------------------------------------------------------ global memory
    def _guarded(self, mask: Any, ty: str, make: Callable[[], Reg], other: Reg) -> Reg:
        if mask is None:
            return make()
        if mask.name == "true":
            return make()
        if mask.name == "false":
            return other
        then, done = self._new_block("ld"), self._new_block("ldend")
        before = self.cur
        self._branch(mask, then, done)
        self.cur = then
        v = make()
        after = self.cur
        self._jump(done)
        self.cur = done
        return self._val(ty, f"phi {ty} [ {v.name}, %{after} ], [ {other.name}, %{before} ]")

    def load(self, p: Any, dtype: DType, mask: Any, other: Any) -> Reg:
        mt = self.mem_ty(dtype)
        other = other if other is not None else self._zero(dtype)

        def make() -> Reg:
            v = self._val(mt, f"load {mt}, {p}, align {max(dtype.itemsize, 1)}")
            return self._from_mem(v, dtype)
        return self._guarded(mask, self.ty(dtype), make, other)

    def load_volatile(self, p: Any, dtype: DType, mask: Any, other: Any) -> Reg:
        mt = self.mem_ty(dtype)
        other = other if other is not None else self._zero(dtype)

        def make() -> Reg:
            v = self._val(mt, f"load volatile {mt}, {p}, align {max(dtype.itemsize, 1)}")
            return self._from_mem(v, dtype)
        return self._guarded(mask, self.ty(dtype), make, other)

    def load_vector(self, p: Any, dtype: DType, width: int, mask: Any, others: Any) -> list[Any]:
        mt = self.mem_ty(dtype)
        vt = f"<{width} x {mt}>"
        if others is None:
            other = Reg("zeroinitializer", vt)
        else:
            other = Reg("undef", vt)
            for i, o in enumerate(others):
                other = self._val(vt, f"insertelement {other}, {self._to_mem(o, dtype)}, i32 {i}")
        vec = self._guarded(mask, vt, lambda: self._val(vt, f"load {vt}, {p}, align {dtype.itemsize * width}"),
                            other)
        return [self._from_mem(self._val(mt, f"extractelement {vec}, i32 {i}"), dtype) for i in range(width)]

    def store(self, p: Any, value: Any, dtype: DType, mask: Any) -> None:
        def do() -> None:
            v = self._to_mem(value, dtype)
            self._emit(f"store {v}, {p}, align {max(dtype.itemsize, 1)}")
        self._when(mask, do)

    def store_vector(self, p: Any, values: Sequence[Any], dtype: DType, mask: Any) -> None:
        mt = self.mem_ty(dtype)
        vt = f"<{len(values)} x {mt}>"

        def do() -> None:
            vec = Reg("undef", vt)
            for i, v in enumerate(values):
                vec = self._val(vt, f"insertelement {vec}, {self._to_mem(v, dtype)}, i32 {i}")
            self._emit(f"store {vec}, {p}, align {dtype.itemsize * len(values)}")
        self._when(mask, do)

    def vector_ok(self, dtype: DType, width: int) -> bool:
        return width in (2, 4, 8, 16) and not dtype.is_bool and dtype.itemsize * width <= 16

    def _when(self, mask: Any, body: Callable[[], None]) -> None:
        if mask is None or mask.name == "true":
            body()
            return
        if mask.name == "false":
            return
        then, done = self._new_block("st"), self._new_block("stend")
        self._branch(mask, then, done)
        self.cur = then
        body()
        self._jump(done)
        self.cur = done

    def atomic_rmw(self, kind: str, p: Any, value: Any, dtype: DType, mask: Any, loc: Loc,
                   sem: str = "acq_rel", scope: str = "gpu") -> Reg:
        ty = self.ty(dtype)

        def make() -> Reg:
            if dtype.is_floating and kind in ("max", "min"):
                return self._cas_loop(p, value, dtype, Op.MAXIMUM if kind == "max" else Op.MINIMUM, sem, scope)
            if dtype.is_floating:
                op = {"add": "fadd", "xchg": "xchg"}.get(kind)
                if op is None:
                    raise UnsupportedError(f"atomic_{kind} on {dtype}", loc)
            else:
                op = {"add": "add", "and": "and", "or": "or", "xor": "xor", "xchg": "xchg",
                      "max": "max" if dtype.is_signed else "umax",
                      "min": "min" if dtype.is_signed else "umin"}[kind]
            if not self.t.fence_ordered_rmw:
                return self._val(ty, f"atomicrmw {op} {p}, {value}{self._scope(scope)} {_ORDER[sem]}, "
                                     f"align {dtype.itemsize}")
            self._fence_before(sem, scope)
            old = self._val(ty, f"atomicrmw {op} {p}, {value}{self._scope(scope)} monotonic, "
                                f"align {dtype.itemsize}")
            self._fence_after(sem, scope)
            return old
        return self._guarded(mask, ty, make, self._zero(dtype))

    def _scope(self, scope: str) -> str:
        name = self.t.sync_scopes[scope]
        return f' syncscope("{name}")' if name else ""

    def _fence_before(self, sem: str, scope: str) -> None:
        if sem in ("release", "acq_rel"):
            self._emit(f"fence{self._scope(scope)} release")

    def _fence_after(self, sem: str, scope: str) -> None:
        if sem in ("acquire", "acq_rel"):
            self._emit(f"fence{self._scope(scope)} acquire")

    def _cmpxchg(self, p: Reg, cmp: Any, new: Any, it: str, align: int, sem: str, scope: str) -> Reg:
        """``cmpxchg`` with Triton's ordering; the pair {old, swapped}."""
        failure = "acquire" if sem in ("acquire", "acq_rel") else "monotonic"
        return self._val(f"{{ {it}, i1 }}", f"cmpxchg {p}, {cmp}, {new}{self._scope(scope)} {_ORDER[sem]} "
                                            f"{failure}, align {align}")

    def _cas_loop(self, p: Reg, value: Reg, dtype: DType, op: Op, sem: str, scope: str) -> Reg:
        it = _INT_TY[dtype.bits]
        init = self._val(self.ty(dtype), f"load atomic {self.ty(dtype)}, {p}{self._scope(scope)} monotonic, "
                                         f"align {dtype.itemsize}")
        before = self.cur
        loop, done = self._new_block("cas"), self._new_block("casend")
        self._jump(loop)
        self.cur = loop
        self.counter += 1
        old = Reg(f"%v{self.counter}", self.ty(dtype))
        phi_at = len(self.blocks[loop])
        new = self.binary(op, old, value, dtype)
        oi = self._val(it, f"bitcast {old} to {it}")
        ni = self._val(it, f"bitcast {new} to {it}")
        pair = self._cmpxchg(p, oi, ni, it, dtype.itemsize, sem, scope)
        got = self._val(it, f"extractvalue {pair}, 0")
        ok = self._val("i1", f"extractvalue {pair}, 1")
        got_f = self._val(self.ty(dtype), f"bitcast {got} to {self.ty(dtype)}")
        self.blocks[loop].insert(phi_at, f"  {old.name} = phi {old.ty} [ {init.name}, %{before} ], "
                                         f"[ {got_f.name}, %{self.cur} ]")
        self._branch(ok, done, loop)
        self.cur = done
        return got_f

    def atomic_cas(self, p: Any, cmp: Any, value: Any, dtype: DType, mask: Any, loc: Loc,
                   sem: str = "acq_rel", scope: str = "gpu") -> Reg:
        ty = self.ty(dtype)
        it = _INT_TY[dtype.bits]

        def make() -> Reg:
            c, v = cmp, value
            if dtype.is_floating:
                c = self._val(it, f"bitcast {cmp} to {it}")
                v = self._val(it, f"bitcast {value} to {it}")
            pair = self._cmpxchg(p, c, v, it, dtype.itemsize, sem, scope)
            old = self._val(it, f"extractvalue {pair}, 0")
            return self._val(ty, f"bitcast {old} to {ty}") if dtype.is_floating else old
        return self._guarded(mask, ty, make, self._zero(dtype))


    # ------------------------------------------------------------ local memory
    def local_load(self, byte_offset: int, index: Any, dtype: ScalarType) -> Reg:
        q = self._local_ptr(byte_offset, index, dtype)
        lt = self.local_ty(dtype)
        v = self._val(lt, f"load {lt}, {q}")
        return self._from_mem(v, dtype)

    def local_store(self, byte_offset: int, index: Any, value: Any, dtype: ScalarType, mask: Any) -> None:
        def do() -> None:
            q = self._local_ptr(byte_offset, index, dtype)
            self._emit(f"store {self._to_mem(value, dtype)}, {q}")
        self._when(mask, do)

    def local_store_vector(self, byte_offset: int, index: Any, values: Sequence[Any], dtype: DType,
                           mask: Any) -> None:
        if len(values) == 1 or dtype.is_bool:
            super().local_store_vector(byte_offset, index, values, dtype, mask)
            return
        lt = self.local_ty(dtype)
        vt = f"<{len(values)} x {lt}>"

        def do() -> None:
            q = self._local_ptr(byte_offset, index, dtype)
            vec = Reg("undef", vt)
            for i, v in enumerate(values):
                vec = self._val(vt, f"insertelement {vec}, {v}, i32 {i}")
            self._emit(f"store {vec}, {q}, align {dtype.itemsize * len(values)}")
        self._when(mask, do)

    def local_load_vector(self, byte_offset: int, index: Any, width: int, dtype: DType) -> list[Any]:
        if width == 1 or dtype.is_bool:
            return super().local_load_vector(byte_offset, index, width, dtype)
        lt = self.local_ty(dtype)
        vt = f"<{width} x {lt}>"
        q = self._local_ptr(byte_offset, index, dtype)
        vec = self._val(vt, f"load {vt}, {q}, align {dtype.itemsize * width}")
        return [self._val(lt, f"extractelement {vec}, i32 {i}") for i in range(width)]


    def barrier(self) -> None:
        scope = self.t.barrier_fence_scope
        if scope:
            self._emit(f'fence syncscope("{scope}") release')
        self._declare(self.t.barrier, "void", [])
        self._emit(f"call void @{self.t.barrier}()")
        if scope:
            self._emit(f'fence syncscope("{scope}") acquire')

    # ------------------------------------------------------------ control flow
    def for_range(self, lb: Any, ub: Any, step: Any, iv_dtype: DType, carried: Carried,
                  body: Callable[[Any, list[Any]], list[Any]], unroll: int | None = None) -> list[Any]:
        ity = self.ty(iv_dtype)
        pre = self.cur
        head, loop, done = self._new_block("for"), self._new_block("body"), self._new_block("endfor")
        up = self._val("i1", f"icmp sgt {step}, 0")
        self._jump(head)
        self.cur = head
        iv = self._fresh(ity)
        regs = [self._fresh(self.ty(dt)) for _, dt in carried]
        lt = self._val("i1", f"icmp slt {iv}, {ub.name}")
        gt = self._val("i1", f"icmp sgt {iv}, {ub.name}")
        go = self._val("i1", f"select {up}, {lt}, {gt}")
        self._branch(go, loop, done)
        self.cur = loop
        new = body(iv, regs)
        nxt = self._val(ity, f"add {iv}, {step.name}")
        latch = self.cur
        if unroll is None:
            self._jump(head)
        else:
            self._emit(f"br label %{head}, !llvm.loop {self._unroll_metadata(unroll)}")
        phis = [f"  {iv.name} = phi {ity} [ {lb.name}, %{pre} ], [ {nxt.name}, %{latch} ]"]
        for r, (init, _), n in zip(regs, carried, new):
            phis.append(f"  {r.name} = phi {r.ty} [ {init.name}, %{pre} ], [ {n.name}, %{latch} ]")
        self.blocks[head][:0] = phis
        self.cur = done
        return regs

    def _unroll_metadata(self, count: int) -> str:
        """A loop-metadata node asking LLVM's unroller for ``count`` copies of the body."""
        first = len(self.t.module_flags) + len(self.loop_metadata)
        self.loop_metadata += [f"!{first} = distinct !{{!{first}, !{first + 1}}}",
                               f'!{first + 1} = !{{!"llvm.loop.unroll.count", i32 {count}}}']
        return f"!{first}"

    def _fresh(self, ty: str) -> Reg:
        self.counter += 1
        return Reg(f"%v{self.counter}", ty)

    def while_loop(self, carried: Carried, cond: Callable[[list[Any]], Any],
                   body: Callable[[list[Any]], list[Any]]) -> list[Any]:
        pre = self.cur
        head, loop, done = self._new_block("while"), self._new_block("wbody"), self._new_block("endwhile")
        self._jump(head)
        self.cur = head
        regs = [self._fresh(self.ty(dt)) for _, dt in carried]
        c = cond(regs)
        self._branch(c, loop, done)
        self.cur = loop
        new = body(regs)
        latch = self.cur
        self._jump(head)
        self.blocks[head][:0] = [f"  {r.name} = phi {r.ty} [ {i.name}, %{pre} ], [ {n.name}, %{latch} ]"
                                 for r, (i, _), n in zip(regs, carried, new)]
        self.cur = done
        return regs

    def if_else(self, cond: Any, result_types: Sequence[ScalarType], then: Callable[[], list[Any]],
                otherwise: Callable[[], list[Any]]) -> list[Any]:
        tb, eb, done = self._new_block("then"), self._new_block("else"), self._new_block("endif")
        self._branch(cond, tb, eb)
        self.cur = tb
        tv = then()
        t_end = self.cur
        self._jump(done)
        self.cur = eb
        ev = otherwise()
        e_end = self.cur
        self._jump(done)
        self.cur = done
        return [self._val(a.ty, f"phi {a.ty} [ {a.name}, %{t_end} ], [ {b.name}, %{e_end} ]")
                for a, b in zip(tv, ev)]

    def when(self, cond: Any, body: Callable[[], None]) -> None:
        self._when(cond, body)

    def device_print(self, prefix: str, values: Sequence[tuple[Any, ScalarType]]) -> None:
        raise UnsupportedError(f"device_print is not supported on {self.target.backend} yet")


