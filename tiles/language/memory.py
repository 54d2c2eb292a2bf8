"""Loads, stores, atomics, block pointers and tensor descriptors.

Block pointers and tensor descriptors are trace-time objects.  A block pointer's loads and
stores become plain pointer tiles with bounds masks; a descriptor's become DESC_LOAD /
DESC_STORE, which keep base, shape, strides and offsets for backends that copy whole tiles
(TMA on sm_90) and mean the same masked accesses (``core/descriptors.py`` spells them out
for every other backend).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import attrs as A
from ..core import dtypes as D
from ..core.builder import current
from ..core.dtypes import PointerType
from ..core.kinds import AtomicKind
from ..core.ops import Op
from . import semantic as S
from .core import arange
from .shape import Shape
from .tensor import tensor


def _pointer(p: Any, what: str) -> tensor:
    if not isinstance(p, tensor) or not isinstance(p.dtype, PointerType):
        raise S.error(f"{what} expects a pointer (a kernel argument given an array, plus offsets), "
                      f"got {getattr(p, 'type', type(p).__name__)}")
    return p


def _mask(mask: Any, shape: tuple[int, ...]) -> tensor:
    m = S.to_tensor(mask)
    if m.dtype != D.int1:  # Triton: "Mask must have boolean scalar type"
        raise S.error(f"a mask must be a boolean tile (int1), got {m.type}; compare to get one "
                      f"(e.g. mask=offsets < n, or mask=m != 0)")
    return S.broadcast_to(m, shape)


def load(pointer: Any, mask: Any = None, other: Any = None, boundary_check: Any = (),
         padding_option: str = "", cache_modifier: str = "", eviction_policy: str = "",
         volatile: bool = False) -> tensor:
    """Read the elements ``pointer`` points at (or a block pointer's window); masked-off lanes give ``other``."""
    if isinstance(pointer, block_ptr):
        return pointer.load(boundary_check, padding_option)
    p = _pointer(pointer, "tl.load")
    cache_modifier, eviction_policy = S.unwrap(cache_modifier), S.unwrap(eviction_policy)
    shape = p.shape
    if mask is not None:
        shape = S.broadcast_shapes(shape, S.to_tensor(mask).shape)
    if other is not None and mask is None:
        other = None
    if other is not None:
        shape = S.broadcast_shapes(shape, S.to_tensor(other).shape if isinstance(other, tensor) else ())
    operands = [S.broadcast_to(p, shape)]
    if mask is not None:
        operands.append(_mask(mask, shape))
    if other is not None:
        elem = p.dtype.element  # type: ignore[union-attr]
        operands.append(S.broadcast_to(S.cast(other, elem), shape))
    attrs = A.Load(mask is not None, other is not None, cache_modifier, eviction_policy, bool(volatile))
    return S.emit(Op.LOAD, operands, attrs)


def store(pointer: Any, value: Any, mask: Any = None, boundary_check: Any = (),
          cache_modifier: str = "", eviction_policy: str = "") -> None:
    """Write ``value`` where ``pointer`` points (or to a block pointer's window); masked-off lanes write nothing."""
    if isinstance(pointer, block_ptr):
        pointer.store(value, boundary_check)
        return
    p = _pointer(pointer, "tl.store")
    cache_modifier, eviction_policy = S.unwrap(cache_modifier), S.unwrap(eviction_policy)
    shape = p.shape
    if mask is not None:
        shape = S.broadcast_shapes(shape, S.to_tensor(mask).shape)
    elem = p.dtype.element  # type: ignore[union-attr]
    v = S.to_tensor(value)
    if len(v.shape) > len(shape) or S.broadcast_shapes(shape, v.shape) != shape:
        raise S.error(f"tl.store: value of shape {list(v.shape)} does not fit pointer tile "
                      f"of shape {list(shape)}")
    operands = [S.broadcast_to(p, shape), S.broadcast_to(S.cast(v, elem), shape)]
    if mask is not None:
        operands.append(_mask(mask, shape))
    current().emit(Op.STORE, [o.handle for o in operands],
                   A.Store(mask is not None, cache_modifier, eviction_policy))


_SEMS = (None, "acquire", "release", "acq_rel", "relaxed")
_SCOPES = (None, "gpu", "cta", "sys")


def _atomic(kind: str, pointer: Any, val: Any, mask: Any, sem: Any, scope: Any) -> tensor:
    p = _pointer(pointer, f"tl.atomic_{kind}")
    sem, scope = S.unwrap(sem), S.unwrap(scope)
    if sem not in _SEMS or scope not in _SCOPES:
        raise S.error(f"atomic sem must be one of {_SEMS[1:]} and scope one of {_SCOPES[1:]}")
    elem = p.dtype.element  # type: ignore[union-attr]
    if kind in ("and", "or", "xor") and not elem.is_int:
        raise S.error(f"tl.atomic_{kind} needs an integer pointer, got {p.dtype}")
    if elem.bits < 16 or elem.is_fp8:
        raise S.error(f"atomics on {elem} are not supported (16-, 32- and 64-bit types only)")
    v = S.to_tensor(val)
    shape = S.broadcast_shapes(p.shape, v.shape)
    if mask is not None:
        shape = S.broadcast_shapes(shape, S.to_tensor(mask).shape)
    operands = [S.broadcast_to(p, shape), S.broadcast_to(S.cast(v, elem), shape)]
    if mask is not None:
        operands.append(_mask(mask, shape))
    attrs = A.Atomic(AtomicKind(kind), mask is not None, sem or "acq_rel", scope or "gpu")
    return S.emit(Op.ATOMIC, operands, attrs)


def _read_modify_write(kind: str, pointer: Any, val: Any, mask: Any, sem: Any, scope: Any) -> tensor:
    """``tl.atomic_<kind>`` as the user calls it: Triton's element-type rules first, in its mode."""
    elem = getattr(getattr(pointer, "dtype", None), "element", None)
    if elem in (D.int16, D.uint16) or (elem in (D.float16, D.bfloat16) and kind != "add"):
        refusal = S.triton_rule(f"atomic_{kind} does not support {elem}")
        if refusal is not None:
            raise refusal
    return _atomic(kind, pointer, val, mask, sem, scope)


def atomic_add(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> tensor:
    """Atomically add ``val`` to each ``*pointer`` and return the values it held before."""
    return _read_modify_write("add", pointer, val, mask, sem, scope)


def atomic_max(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> tensor:
    """Atomically replace each ``*pointer`` by the larger of it and ``val``; return the values before."""
    return _read_modify_write("max", pointer, val, mask, sem, scope)


def atomic_min(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> tensor:
    """Atomically replace each ``*pointer`` by the smaller of it and ``val``; return the values before."""
    return _read_modify_write("min", pointer, val, mask, sem, scope)


def atomic_and(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> tensor:
    """Atomically bitwise-and ``val`` into each ``*pointer``; return the values before."""
    return _read_modify_write("and", pointer, val, mask, sem, scope)


def atomic_or(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> tensor:
    """Atomically bitwise-or ``val`` into each ``*pointer``; return the values before."""
    return _read_modify_write("or", pointer, val, mask, sem, scope)


def atomic_xor(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> tensor:
    """Atomically bitwise-xor ``val`` into each ``*pointer``; return the values before."""
    return _read_modify_write("xor", pointer, val, mask, sem, scope)


def atomic_xchg(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> tensor:
    """Atomically write ``val`` to each ``*pointer``; return the values it replaced."""
    return _read_modify_write("xchg", pointer, val, mask, sem, scope)


def atomic_cas(pointer: Any, cmp: Any, val: Any, sem: Any = None, scope: Any = None) -> tensor:
    """Atomic compare-and-swap: where ``*pointer == cmp`` write ``val``; return the values before."""
    p = _pointer(pointer, "tl.atomic_cas")
    sem, scope = S.unwrap(sem), S.unwrap(scope)
    elem = p.dtype.element  # type: ignore[union-attr]
    c, v = S.to_tensor(cmp), S.to_tensor(val)
    shape = S.broadcast_shapes(S.broadcast_shapes(p.shape, c.shape), v.shape)
    operands = [S.broadcast_to(p, shape), S.broadcast_to(S.cast(c, elem), shape),
                S.broadcast_to(S.cast(v, elem), shape)]
    return S.emit(Op.ATOMIC_CAS, operands, A.Atomic(AtomicKind.CAS, False, sem or "acq_rel", scope or "gpu"))


def atomic_load(pointer: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> tensor:
    """Atomically read ``*pointer`` (an atomic or with zero on the element's bits)."""
    p = _pointer(pointer, "tl.atomic_load")
    elem = p.dtype.element  # type: ignore[union-attr]
    if elem.is_int:
        return _atomic("or", p, 0, mask, sem, scope)
    bits = D.BY_NAME.get(f"int{elem.bits}")
    if bits is None or elem.bits < 32:
        raise S.error(f"tl.atomic_load supports 32- and 64-bit elements, got {elem}")
    as_int = S.cast(p, PointerType(bits, p.dtype.address_space))  # type: ignore[union-attr]
    return S.cast(_atomic("or", as_int, 0, mask, sem, scope), elem, bitcast=True)


def atomic_store(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> None:
    """Atomically write ``val`` to ``*pointer`` (an exchange whose old value is dropped)."""
    _atomic("xchg", pointer, val, mask, sem, scope)


def atomic_poll(pointer: Any, expected_value: Any, sem: Any = None, scope: Any = None,
                timeout_ns: Any = None) -> tensor:
    """Spin until ``*pointer == expected_value`` (an atomic read per try); True where it was seen.

    As compiled Triton: a scalar pointer to a 16-, 32- or 64-bit integer; ``sem`` "acquire"
    (default) or "relaxed".  tiles has no device clock: with ``timeout_ns`` it gives up after
    ``timeout_ns`` further reads (each takes at least a nanosecond, so never before the budget
    has passed) and returns False; ``timeout_ns=0`` reads once.  On the interpreter a program
    waiting without a timeout for a value only a later program writes never ends (as on Triton's)."""
    from .control import while_
    p = _pointer(pointer, "tl.atomic_poll")
    if p.shape:
        raise S.error(f"tl.atomic_poll takes a scalar pointer, got a tile of shape {list(p.shape)}")
    elem = p.dtype.element  # type: ignore[union-attr]
    if not elem.is_int or elem.bits not in (16, 32, 64):
        raise S.error(f"atomic_poll only supports integer elements with width {{16, 32, 64}}, got {elem}")
    sem, scope, timeout = S.unwrap(sem), S.unwrap(scope), S.unwrap(timeout_ns)
    if sem not in (None, "acquire", "relaxed"):
        raise S.error(f"atomic_poll only supports acquire and relaxed semantics, got {sem!r}")
    if scope not in _SCOPES:
        raise S.error(f"atomic_poll scope must be one of {_SCOPES[1:]}, got {scope!r}")
    expected = S.cast(expected_value, elem)

    def seen() -> tensor:
        return S.compare("eq", _atomic("or", p, 0, None, sem or "acquire", scope), expected)

    if timeout is None:
        while_(lambda: S.compare("ne", _atomic("or", p, 0, None, sem or "acquire", scope), expected),
               lambda: (), [], [])
        return S.const(True, D.int1)
    if isinstance(timeout, tensor):
        if timeout.shape or not timeout.dtype.is_int:
            raise S.error("atomic_poll timeout_ns must be a scalar integer")
        budget = S.cast(timeout, D.uint64)
    elif isinstance(timeout, int) and not isinstance(timeout, bool):
        if timeout < 0:
            raise S.error("atomic_poll timeout_ns must be non-negative")
        if timeout == 0:
            return seen()
        budget = S.const(timeout, D.uint64)
    else:
        raise S.error(f"atomic_poll timeout_ns must be a scalar integer, got {timeout!r}")
    found, _ = while_(lambda ok, n: S.bitwise("and", S.bitwise("xor", ok, True), S.compare("lt", n, budget)),
                      lambda ok, n: (seen(), S.add(n, 1)), ["matched", "reads"],
                      [seen(), S.const(0, D.uint64)])
    return found


# ---------------------------------------------------------------- block pointers


def _index_tiles(block_shape: tuple[int, ...], offsets: list[Any], shape: list[Any],
                 strides: list[Any], checks: tuple[int, ...]) -> tuple[tensor, tensor | None]:
    """Offsets (in elements) of every element of the block, and its in-bounds mask."""
    ndim = len(block_shape)
    total: tensor | None = None
    mask: tensor | None = None
    for d in range(ndim):
        view = tuple(block_shape[d] if i == d else 1 for i in range(ndim))
        # (arange + offset) * stride in int64 as Triton computes it (no int32 wrap), spelled
        # arange * stride + offset * stride: the tile term is loop-invariant and a loop-carried
        # offset costs one scalar product per step, not a 64-bit product per element
        term = S.mul(S.reshape(S.cast(arange(0, block_shape[d]), D.int64), view), strides[d])
        if isinstance(offsets[d], tensor):
            term = S.add(term, S.mul(S.cast(offsets[d], D.int64), strides[d]))
        elif S.unwrap(offsets[d]) != 0:
            term = S.add(term, S.mul(S.unwrap(offsets[d]), strides[d]))
        total = term if total is None else S.add(total, term)
        if d not in checks:
            continue
        idx = S.reshape(S.add(arange(0, block_shape[d]), S.cast(offsets[d], D.int32)
                              if isinstance(offsets[d], tensor) else offsets[d]), view)
        ok = S.bitwise("and", S.compare("ge", idx, 0), S.compare("lt", idx, shape[d]))
        mask = ok if mask is None else S.bitwise("and", mask, ok)
    assert total is not None
    total = S.broadcast_to(total, block_shape)
    if mask is not None:
        mask = S.broadcast_to(mask, block_shape)
    return total, mask


def _descriptor_scalars(base: tensor, shape: list[Any], strides: list[Any], offsets: list[Any]) -> list[tensor]:
    """A descriptor access's operands: base, shapes and strides as int64, offsets as int32."""
    scalars = [*((s, D.int64) for s in (*shape, *strides)), *((o, D.int32) for o in offsets)]
    out = [base]
    for v, dtype in scalars:
        t = S.cast(v, dtype) if isinstance(v, tensor) else S.const(S.unwrap(v), dtype)
        if t.shape:
            raise S.error(f"descriptor shapes, strides and offsets must be scalars, got a tile "
                          f"of shape {list(t.shape)}")
        out.append(t)
    return out


class block_ptr:  # noqa: N801
    """``tl.make_block_ptr``: a window of ``block_shape`` over a strided tensor."""

    def __init__(self, base: tensor, shape: list[Any], strides: list[Any], offsets: list[Any],
                 block_shape: tuple[int, ...], order: tuple[int, ...]) -> None:
        self.base, self.shape, self.strides = base, shape, strides
        self.offsets, self.block_shape, self.order = offsets, block_shape, order

    @property
    def dtype(self) -> Any:
        """The base pointer's type: ``p.dtype.element_ty`` is the element dtype, as in Triton."""
        return self.base.dtype

    @property
    def type(self) -> Any:
        return self.base.dtype

    def _checks(self, boundary_check: Any) -> tuple[int, ...]:
        checks = tuple(int(S.unwrap(c)) for c in (boundary_check or ()))
        for c in checks:
            if not 0 <= c < len(self.block_shape):
                raise S.error(f"boundary_check axis {c} is out of range for a {len(self.block_shape)}D block")
        return checks

    def load(self, boundary_check: Any, padding_option: str) -> tensor:
        """A descriptor load bounded on the checked axes (TMA can copy it, ``tma_rebase.py``);
        NaN padding as masked pointer loads."""
        checks = self._checks(boundary_check)
        if S.unwrap(padding_option) != "nan":
            bounded = tuple(d in checks for d in range(len(self.block_shape)))
            return S.emit(Op.DESC_LOAD, _descriptor_scalars(self.base, self.shape, self.strides, self.offsets),
                          A.Descriptor(self.block_shape, bounded))
        offs, mask = _index_tiles(self.block_shape, self.offsets, self.shape, self.strides, checks)
        ptrs = S.add(self.base, offs)
        return load(ptrs) if mask is None else load(ptrs, mask, float("nan"))

    def store(self, value: Any, boundary_check: Any) -> None:
        offs, mask = _index_tiles(self.block_shape, self.offsets, self.shape, self.strides,
                                  self._checks(boundary_check))
        store(S.add(self.base, offs), value, mask)

    def advance(self, offsets: Any) -> block_ptr:
        if len(offsets) != len(self.offsets):
            raise S.error(f"tl.advance needs {len(self.offsets)} offsets, got {len(offsets)}")
        new = [S.add(o, d) if isinstance(o, tensor) or isinstance(d, tensor) else o + d
               for o, d in zip(self.offsets, offsets)]
        return block_ptr(self.base, self.shape, self.strides, new, self.block_shape, self.order)

    # loop-carried flattening (see tiles.language.control)
    def tiles_flatten(self) -> tuple[list[Any], Any]:
        leaves = [self.base, *self.shape, *self.strides, *self.offsets]
        return leaves, (len(self.shape), self.block_shape, self.order)

    @classmethod
    def tiles_unflatten(cls, aux: Any, leaves: list[Any]) -> block_ptr:
        n, block_shape, order = aux
        base, rest = leaves[0], leaves[1:]
        return cls(base, rest[:n], rest[n:2 * n], rest[2 * n:3 * n], block_shape, order)


def make_block_ptr(base: Any, shape: Any, strides: Any, offsets: Any, block_shape: Any,
                   order: Any) -> block_ptr:
    """A pointer to a ``block_shape`` window at ``offsets`` of a ``shape``/``strides`` tensor, for load and store."""
    b = _pointer(base, "tl.make_block_ptr")
    bs = S.shape_arg(tuple(block_shape))
    n = len(bs)
    if not (len(shape) == len(strides) == len(offsets) == n):
        raise S.error("tl.make_block_ptr: shape, strides, offsets and block_shape need one entry per axis")
    return block_ptr(b, [S.cast(s, D.int64) if isinstance(s, tensor) else S.unwrap(s) for s in shape],
                     [S.cast(s, D.int64) if isinstance(s, tensor) else S.unwrap(s) for s in strides],
                     [S.cast(o, D.int32) if isinstance(o, tensor) else S.unwrap(o) for o in offsets],
                     bs, tuple(S.unwrap(o) for o in order))


def advance(base: block_ptr, offsets: Any) -> block_ptr:
    """The block pointer ``base`` with its window moved by ``offsets`` elements per axis."""
    if not isinstance(base, block_ptr):
        raise S.error("tl.advance expects a block pointer from tl.make_block_ptr")
    return base.advance(list(offsets))


class tensor_descriptor:  # noqa: N801
    """``tl.make_tensor_descriptor``: out-of-bounds reads give zero, writes are dropped."""

    def __init__(self, base: tensor, shape: list[Any], strides: list[Any],
                 block_shape: tuple[int, ...], padding: str = "zero") -> None:
        self.base, self.shape, self.strides, self.block_shape = base, shape, strides, Shape(block_shape)
        self.padding = padding

    @property
    def dtype(self) -> Any:
        return self.base.dtype.element  # type: ignore[union-attr]

    def _tiles(self, offsets: Any) -> tuple[tensor, tensor | None]:
        offs = list(offsets)
        if len(offs) != len(self.block_shape):
            raise S.error(f"a {len(self.block_shape)}D tensor descriptor needs {len(self.block_shape)} offsets")
        return _index_tiles(self.block_shape, offs, self.shape, self.strides,
                            tuple(range(len(self.block_shape))))

    def _operands(self, offsets: Any) -> list[tensor]:
        offs = list(offsets)
        if len(offs) != len(self.block_shape):
            raise S.error(f"a {len(self.block_shape)}D tensor descriptor needs {len(self.block_shape)} offsets, "
                          f"got {len(offs)}")
        return _descriptor_scalars(self.base, self.shape, self.strides, offs)

    def load(self, offsets: Any) -> tensor:
        """The ``block_shape`` tile at ``offsets``; elements outside ``shape`` read 0 (NaN with
        ``padding_option="nan"``)."""
        value = S.emit(Op.DESC_LOAD, self._operands(offsets), A.Descriptor(self.block_shape))
        if self.padding == "nan":
            _, inside = self._tiles(offsets)
            if inside is not None:
                value = S.where(inside, value, S.const(float("nan"), self.dtype))
        return value

    def store(self, offsets: Any, value: Any) -> None:
        """Write ``value`` to the ``block_shape`` tile at ``offsets``; elements outside ``shape`` are dropped."""
        elem = self.dtype
        v = S.to_tensor(value) if isinstance(value, tensor) else S.const(S.unwrap(value), elem)
        if len(v.shape) > len(self.block_shape) or S.broadcast_shapes(self.block_shape, v.shape) != self.block_shape:
            raise S.error(f"desc.store: value of shape {list(v.shape)} does not fit the descriptor's block "
                          f"shape {list(self.block_shape)}")
        v = S.broadcast_to(S.cast(v, elem), self.block_shape)
        current().emit(Op.DESC_STORE, [o.handle for o in (*self._operands(offsets), v)],
                       A.Descriptor(self.block_shape))

    def gather(self, *offsets: Any) -> tensor:
        """Rows ``offsets[0]`` (a 1D int tile) from column ``offsets[1]``: ``gather_rows`` below."""
        if len(offsets) != 2:
            raise S.error(f"descriptor gather only supports 2D indexing, but got {len(offsets)} offsets")
        return gather_rows(self, *offsets)

    def scatter(self, value: Any, *offsets: Any) -> None:
        """Write ``value``'s rows to rows ``offsets[0]`` from column ``offsets[1]``."""
        if len(offsets) != 2:
            raise S.error(f"descriptor scatter only supports 2D indexing, but got {len(offsets)} offsets")
        scatter_rows(self, value, *offsets)

    def _atomic(self, op: Callable[..., tensor], offsets: Any, value: Any) -> tensor:
        """``op`` (``tl.atomic_add``...) on the ``block_shape`` tile at ``offsets``, elements outside
        ``shape`` left alone; returns the old values."""
        offs, mask = self._tiles(offsets)
        return op(S.add(self.base, offs), value, mask)

    def atomic_add(self, offsets: Any, value: Any) -> tensor:
        return self._atomic(atomic_add, offsets, value)

    def atomic_min(self, offsets: Any, value: Any) -> tensor:
        return self._atomic(atomic_min, offsets, value)

    def atomic_max(self, offsets: Any, value: Any) -> tensor:
        return self._atomic(atomic_max, offsets, value)

    def atomic_and(self, offsets: Any, value: Any) -> tensor:
        return self._atomic(atomic_and, offsets, value)

    def atomic_or(self, offsets: Any, value: Any) -> tensor:
        return self._atomic(atomic_or, offsets, value)

    def atomic_xor(self, offsets: Any, value: Any) -> tensor:
        return self._atomic(atomic_xor, offsets, value)

    def tiles_flatten(self) -> tuple[list[Any], Any]:
        return [self.base, *self.shape, *self.strides], (len(self.shape), self.block_shape, self.padding)

    @classmethod
    def tiles_unflatten(cls, aux: Any, leaves: list[Any]) -> tensor_descriptor:
        n, block_shape, padding = aux
        return cls(leaves[0], leaves[1:1 + n], leaves[1 + n:1 + 2 * n], block_shape, padding)


def make_tensor_descriptor(base: Any, shape: Any, strides: Any, block_shape: Any,
                           padding_option: Any = "zero") -> tensor_descriptor:
    """A descriptor to load and store ``block_shape`` tiles of a ``shape``/``strides`` tensor (a
    ``[1, N]`` one also gathers and scatters rows: ``desc.gather(rows, col)``, ``desc.scatter(v, rows, col)``).
    Reads outside ``shape`` give 0, or NaN with ``padding_option="nan"`` (floating types)."""
    b = _pointer(base, "tl.make_tensor_descriptor")
    bs = S.shape_arg(tuple(block_shape))
    if not (len(shape) == len(strides) == len(bs)):
        raise S.error("tl.make_tensor_descriptor: shape, strides and block_shape need one entry per axis")
    padding = S.unwrap(padding_option) or "zero"
    if padding not in ("zero", "nan"):
        raise S.error(f"tl.make_tensor_descriptor: padding_option must be 'zero' or 'nan', got {padding!r}")
    elem = b.dtype.element  # type: ignore[union-attr]
    if bs and bs[-1] * elem.bits < 128:
        refusal = S.triton_rule(f"Descriptor block shape must have at least 16 bytes in the last dimension, "
                                f"but got {bs[-1]} * {elem.bits // 8} = {bs[-1] * elem.bits // 8} bytes")
        if refusal is not None:
            raise refusal
    if padding == "nan" and not elem.is_floating:
        raise S.error(f"tl.make_tensor_descriptor: padding_option='nan' needs a floating element type, not {elem}")
    return tensor_descriptor(b, [S.cast(s, D.int64) if isinstance(s, tensor) else S.unwrap(s) for s in shape],
                             [S.cast(s, D.int64) if isinstance(s, tensor) else S.unwrap(s) for s in strides],
                             bs, padding)


def load_tensor_descriptor(desc: tensor_descriptor, offsets: Any) -> tensor:
    """``desc.load(offsets)`` as a function."""
    return desc.load(offsets)


def store_tensor_descriptor(desc: tensor_descriptor, offsets: Any, value: Any) -> None:
    """``desc.store(offsets, value)`` as a function."""
    desc.store(offsets, value)


# ---------------------------------------------------------------- row gathers and scatters
# Row gathers and scatters through a tensor descriptor: ``desc.gather(rows, col)`` and
# ``desc.scatter(value, rows, col)`` (Triton's Blackwell TMA gather/scatter).
#
# A 2D descriptor whose block is one row, ``[1, N]``, reads (or writes) the ``N`` columns from
# ``col`` of each row that the 1D int16/int32 tile ``rows`` names: an ``[R, N]`` tile, row ``i``
# from tensor row ``rows[i]``.  As the descriptor's loads and stores, elements outside the
# tensor's shape read 0 and are not written.  They are traced as masked pointer loads and stores,
# so every backend runs them; Triton's size rules (at least 8 rows, at least 32 bytes of
# columns) are kept so that a kernel tiles accepts also compiles with Triton.


def _checked_rows(desc: tensor_descriptor, rows: Any, what: str) -> tensor:
    """``rows`` as a tile after Triton's checks on the descriptor and the row offsets."""
    bs = tuple(desc.block_shape)
    if len(bs) != 2:
        raise S.error(f"descriptor {what} needs a 2D descriptor, but its block shape is {list(bs)}")
    if bs[0] != 1:
        raise S.error(f"descriptor {what}: the descriptor's block must have 1 row, but got {list(bs)}")
    x = S.to_tensor(rows)
    if len(x.shape) != 1:
        raise S.error(f"descriptor {what}: the row offsets must be a 1D tile, but got shape {list(x.shape)}")
    if x.dtype not in (D.int16, D.int32):
        raise S.error(f"descriptor {what}: the row offsets must be int16 or int32, but got {x.dtype}")
    if x.shape[0] < 8:
        raise S.error(f"descriptor {what} must have at least 8 rows, but got {list(x.shape)}")
    min_cols = 32 // desc.dtype.bits * 8
    if bs[1] < min_cols:
        raise S.error(f"descriptor {what} of {desc.dtype} must have at least {min_cols} columns, but got {bs[1]}")
    return x


def _row_addresses(desc: tensor_descriptor, x: tensor, col: Any) -> tuple[tensor, tensor]:
    """The element offsets of the ``[R, N]`` tile and its in-bounds mask."""
    n = desc.block_shape[1]
    r = S.reshape(x, (x.shape[0], 1))
    c = S.reshape(S.add(arange(0, n), S.cast(col, D.int32) if isinstance(col, tensor) else S.unwrap(col)), (1, n))
    offs = S.add(S.mul(S.cast(r, D.int64), desc.strides[0]), S.mul(S.cast(c, D.int64), desc.strides[1]))
    row_ok = S.bitwise("and", S.compare("ge", r, 0), S.compare("lt", r, desc.shape[0]))
    col_ok = S.bitwise("and", S.compare("ge", c, 0), S.compare("lt", c, desc.shape[1]))
    shape = (x.shape[0], n)
    return S.broadcast_to(offs, shape), S.broadcast_to(S.bitwise("and", row_ok, col_ok), shape)


def gather_rows(desc: tensor_descriptor, rows: Any, col: Any) -> tensor:
    """The ``[len(rows), N]`` tile of rows ``rows`` and columns ``col .. col + N``; outside reads 0."""
    x = _checked_rows(desc, rows, "gather")
    offs, mask = _row_addresses(desc, x, col)
    return load(S.add(desc.base, offs), mask=mask, other=0)


def scatter_rows(desc: tensor_descriptor, value: Any, rows: Any, col: Any) -> None:
    """Write row ``i`` of ``value`` to row ``rows[i]``, columns ``col .. col + N``; outside is dropped."""
    x = _checked_rows(desc, rows, "scatter")
    offs, mask = _row_addresses(desc, x, col)
    shape = (x.shape[0], desc.block_shape[1])
    v = S.to_tensor(value) if isinstance(value, tensor) else S.const(S.unwrap(value), desc.dtype)
    if S.broadcast_shapes(shape, v.shape) != shape:
        raise S.error(f"descriptor scatter: value of shape {list(v.shape)} does not fit {list(shape)}")
    store(S.add(desc.base, offs), S.cast(v, desc.dtype), mask=mask)
