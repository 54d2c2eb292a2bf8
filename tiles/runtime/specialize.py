"""Classifying launch arguments: what each one contributes to the specialization key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..backends.launch_facts import Alignment, ParamKind, int_class
from ..core import dtypes as D
from ..core.dtypes import DType, PointerType, ScalarType
from ..language.constexpr import constexpr as constexpr_object
from ..tools.tensor_descriptor import TensorDescriptor, problem
from .tensor_wrapper import TensorWrapper

# torch dtype names that differ from tiles' (the rest are the same words)
TORCH_ALIASES = {"bool": "int1", "float8_e4m3fn": "float8e4nv", "float8_e5m2": "float8e5",
                 "float8_e4m3fnuz": "float8e4b8", "float8_e5m2fnuz": "float8e5b16"}


@dataclass(frozen=True)
class ArgSpec:
    """How one argument specializes the kernel: constexpr value, or run-time type."""

    name: str
    constexpr: bool
    value: Any = None            # the value when constexpr
    type: ScalarType | None = None
    divisibility: int = 1        # 16 when the address / integer is a multiple of 16
    # On the base pointer of a host TensorDescriptor argument: its block shape.  The shape and
    # stride specs follow it (``descriptor_specs``).
    descriptor: tuple[int, ...] | None = None
    padding: str = "zero"        # the descriptor's padding ("nan": out-of-bounds reads give NaN)
    # On the marker of a tuple argument (a compile-time slot, no parameter): its length.  Each
    # element's specs follow it (``expanded_args.specs_of``).
    tuple_len: int | None = None

    def key(self) -> tuple[Any, ...]:
        if self.tuple_len is not None:  # ``value``: a namedtuple's class, else None
            cls = self.value
            named = None if cls is None else f"{cls.__module__}.{cls.__qualname__}{list(cls._fields)}"
            return (self.name, "tuple", self.tuple_len, named)
        if self.constexpr:
            jit_key = _jit_function_key(self.value)
            if jit_key is not None:  # a @jit function argument: keyed by its source, as Triton's
                return (self.name, "c", jit_key)
            return (self.name, "c", _hashable(self.value))
        if self.descriptor is not None:
            pad = () if self.padding == "zero" else (self.padding,)
            return (self.name, str(self.type), self.divisibility, "desc", self.descriptor, *pad)
        return (self.name, str(self.type), self.divisibility)



def _jit_function_key(v: Any) -> tuple[str, str] | None:
    """A ``@jit`` function's key (its name and the fingerprint of its source and what it
    reaches), so the disk cache tells apart kernels handed different or edited functions."""
    if getattr(type(v), "tiles_jit_function", False):  # runtime/jit.py's JITFunction
        return ("jit", f"{v.fn.__module__}.{v.__qualname__}:{v.cache_key}")
    return None


def _hashable(v: Any) -> Any:
    try:
        hash(v)
        return v
    except TypeError:
        return repr(v)


def array_dtype(value: Any) -> DType | None:
    """The element type of an array-like argument, or None when it is not one."""
    if isinstance(value, np.ndarray):
        return D.from_numpy(value.dtype)
    if isinstance(value, TensorWrapper):  # reinterpret(tensor, tl.float8e4b15)
        return value.dtype
    dt = getattr(value, "dtype", None)
    if dt is None:
        return None
    mod = type(value).__module__
    if mod.startswith("torch") or (hasattr(value, "__dlpack__") and not isinstance(dt, np.dtype)):
        name = str(dt).replace("torch.", "")
        return D.BY_NAME.get(TORCH_ALIASES.get(name, name))
    if hasattr(value, "shape") and (hasattr(value, "gpudata") or hasattr(value, "data")
                                    or hasattr(value, "__cuda_array_interface__")
                                    or hasattr(value, "__dlpack__")):
        try:
            return D.from_numpy(dt)
        except TypeError:
            return None
    return None


def address_of(value: Any) -> int | None:
    if isinstance(value, np.ndarray):
        return value.__array_interface__["data"][0]
    if hasattr(value, "data_ptr"):
        return int(value.data_ptr())
    if hasattr(value, "__cuda_array_interface__"):
        return int(value.__cuda_array_interface__["data"][0])
    if hasattr(value, "gpudata"):
        return int(value.gpudata)
    if hasattr(value, "base_data") and hasattr(value, "offset"):  # pyopencl: buffers are aligned
        return int(value.offset)
    if hasattr(value, "__dlpack__"):
        from ..backends import dlpack
        return dlpack.data_address(value)[0]
    return None


class MockArray:
    """Stands for an array of ``dtype`` in ``kernel.warmup`` (Triton's ``MockTensor``): address 0."""

    def __init__(self, dtype: Any, shape: Any = None) -> None:
        self.dtype = dtype
        self.shape = [1] if shape is None else list(shape)

    @staticmethod
    def data_ptr() -> int:
        return 0

    def element_type(self) -> DType | None:
        if isinstance(self.dtype, np.dtype):
            try:
                return D.from_numpy(self.dtype)
            except TypeError:
                return None
        name = str(self.dtype).replace("torch.", "")
        return D.BY_NAME.get(TORCH_ALIASES.get(name, name))


def mock_dtype_argument(value: Any) -> Any:
    """A torch or NumPy dtype given where an array goes becomes a ``MockArray`` of that dtype."""
    if isinstance(value, type) and issubclass(value, np.generic):
        return MockArray(np.dtype(value))
    if isinstance(value, np.dtype) or (type(value).__name__ == "dtype" and type(value).__module__ == "torch"):
        return MockArray(value)
    return value


def classify(name: str, value: Any, constexpr: bool, specialize: bool) -> ArgSpec:
    if isinstance(value, constexpr_object):  # tl.constexpr(v) from the host: compile-time, keyed on v
        return ArgSpec(name, True, value.value)
    if constexpr:
        return ArgSpec(name, True, value)
    if isinstance(value, MockArray):
        dtype = value.element_type()
        if dtype is None:
            raise TypeError(f"argument {name!r}: tiles has no element type for {value.dtype}")
        return ArgSpec(name, False, type=PointerType(dtype), divisibility=16 if specialize else 1)
    if value is None or isinstance(value, (DType, PointerType, str)):
        return ArgSpec(name, True, value)
    if isinstance(value, (bool, np.bool_)):
        return ArgSpec(name, False, type=D.int1)
    if isinstance(value, (int, np.integer)):
        v = int(value)
        if specialize and v == 1:
            return ArgSpec(name, True, 1)
        if -(2**31) <= v < 2**31:
            ty: DType = D.int32
        elif -(2**63) <= v < 2**63:
            ty = D.int64
        elif 0 <= v < 2**64:
            ty = D.uint64
        else:
            raise OverflowError(f"argument {name}={v} does not fit in 64 bits")
        div = 16 if specialize and v % 16 == 0 else 1
        return ArgSpec(name, False, type=ty, divisibility=div)
    if isinstance(value, (float, np.floating)):
        return ArgSpec(name, False, type=D.float32)
    try:
        dt = array_dtype(value)
    except TypeError:
        raise TypeError(f"argument {name!r}: arrays of {getattr(value, 'dtype', '?')} cannot be passed to a "
                        f"kernel; element types: bool, int8-64, uint8-64, float16, bfloat16, float32, float64, "
                        f"float8 (complex and object arrays: pass .real/.imag or a view as float)") from None
    if dt is not None:
        addr = address_of(value)
        div = 16 if specialize and addr is not None and addr % 16 == 0 else 1
        return ArgSpec(name, False, type=PointerType(dt), divisibility=div)
    if _jit_function_key(value) is not None:  # a @jit function: compile-time, as in Triton
        return ArgSpec(name, True, value)
    raise TypeError(f"argument {name!r}: cannot pass a {type(value).__name__} to a kernel "
                    "(expected an array, a tensor, a number, or a constexpr)")


def descriptor_names(name: str, rank: int) -> list[str]:
    """The hidden parameters a descriptor argument ``name`` expands into: base, sizes, strides."""
    return [f"{name}_base", *(f"{name}_shape{i}" for i in range(rank)),
            *(f"{name}_stride{i}" for i in range(rank))]


def descriptor_specs(name: str, desc: TensorDescriptor, specialize: bool) -> list[ArgSpec]:
    """A host ``TensorDescriptor`` argument as its expanded parameters, as Triton specializes it:
    the element type and block shape are compile-time; the base pointer is promised 16-byte
    aligned (the descriptor's rule); sizes and strides are run-time integers (specialized as
    int arguments are: 1, multiple of 16), except the last stride, always the constant 1."""
    why = problem(desc)
    if why is not None:
        raise TypeError(f"argument {name!r} (a TensorDescriptor): {why}")
    dtype = array_dtype(desc.base)
    if dtype is None:
        raise TypeError(f"argument {name!r}: a TensorDescriptor's base must be an array or tensor, got "
                        f"{type(desc.base).__name__}")
    rank = len(desc.shape)
    names = descriptor_names(name, rank)
    address = address_of(desc.base)
    base = ArgSpec(names[0], False, type=PointerType(dtype),
                   divisibility=16 if address is not None and address % 16 == 0 else 1,
                   descriptor=tuple(int(b) for b in desc.block_shape), padding=desc.padding)
    ints = [classify(n, int(v), False, specialize)
            for n, v in zip(names[1:-1], (*desc.shape, *desc.strides[:-1]))]
    return [base, *ints, ArgSpec(names[-1], True, 1)]


def _descriptor_fact(desc: TensorDescriptor, kind: str) -> tuple[Any, ...]:
    strides = tuple(desc.strides)
    # (the base's alignment specializes even under do_not_specialize: descriptor_specs)
    return ("d", _array_key(desc.base, ParamKind.SPECIALIZED), _hashable(tuple(desc.block_shape)), desc.padding,
            tuple(fact_of(n, kind) for n in desc.shape), tuple(fact_of(n, kind) for n in strides[:-1]),
            strides[-1:])


def _alignment(address: int, kind: str) -> Alignment:
    if kind == ParamKind.NOT_SPECIALIZED:  # the address's alignment does not specialize
        return Alignment.ANY
    return Alignment.UNALIGNED if address % 16 else Alignment.ALIGNED


def _array_key(v: Any, kind: str) -> tuple[Any, ...] | None:
    if isinstance(v, np.ndarray):
        return ("a", v.dtype, _alignment(v.__array_interface__["data"][0], kind), v.flags.writeable)
    ptr = getattr(v, "data_ptr", None)
    if ptr is not None:
        get_device = getattr(v, "get_device", None)
        device = get_device() if callable(get_device) else None
        return ("t", type(v), str(v.dtype), _alignment(ptr(), kind), device)
    return None


def is_tuple_argument(v: Any) -> bool:
    """Whether ``v`` is passed as a tuple argument: any tuple (``torch.Size``, a namedtuple, which
    the kernel gets back as its own class), as Triton's specialization treats them."""
    return isinstance(v, tuple)


def namedtuple_class(v: Any) -> type | None:
    """``v``'s class when it is a namedtuple (rebuilt as such in the kernel), else None."""
    return type(v) if isinstance(v, tuple) and hasattr(type(v), "_fields") else None


FLOAT_FACT = "f"  # the fact of a float argument (the binder writes it inline too)
NONE_FACT = ("o", type(None), None)  # the fact of None


def fact_of(v: Any, kind: str) -> Any:
    """What one argument contributes to the launch key; ``kind``: a ``ParamKind``.  Equal facts
    imply equal ``classify`` results.  An int in int64 range gives its ``IntClass``, as the
    binder's inline code does (``runtime/binder.py``)."""
    if kind == ParamKind.CONSTEXPR:
        return ("c", _hashable(v))
    t = type(v)
    if t is int:
        cls = int_class(v, kind)
        if cls is not None:
            return cls
        width = 65 if 0 <= v < 2**64 else 0  # uint64, or too wide for any parameter
        if kind == ParamKind.NOT_SPECIALIZED:
            return ("i", width)
        return ("i", width, v % 16 == 0)
    if t is float:
        return FLOAT_FACT
    if t is bool:
        return "b"
    if is_tuple_argument(v):
        return ("T", namedtuple_class(v), tuple(fact_of(item, kind) for item in v))
    ak = _array_key(v, kind)
    if ak is None:
        if isinstance(v, TensorDescriptor):
            return _descriptor_fact(v, kind)
        return ("o", t, _hashable(v) if not hasattr(v, "dtype") else str(getattr(v, "dtype", "")))
    return ak


def launch_key(values: list[Any], kinds: tuple[str, ...]) -> tuple[Any, ...]:
    """A cheap key that changes whenever ``classify`` would give a different specialization."""
    return tuple(fact_of(v, kind) for v, kind in zip(values, kinds))
