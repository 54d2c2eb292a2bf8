"""Kernel arguments that become several parameters: host ``TensorDescriptor``s and tuples.

A descriptor expands into its base pointer, sizes and strides (``descriptor_args.py``).  A tuple
(Triton 3's tuple arguments: ``kernel[grid]((x, y), ...)``) expands into a marker spec named
after the parameter (``ArgSpec.tuple_len``: a compile-time slot with no IR parameter) followed
by each element's own specs, named ``<name>_<i>`` and classified as if passed alone (so a tuple
may hold arrays, numbers, ``None``, descriptors or tuples).  The kernel receives a Python tuple
of the traced elements (``regroup``); the launcher gets one flattened value per spec
(``flatten``), through ``expanding`` on the paths that hold the kernel's own arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..backends.launch_facts import ParamKind
from ..tools.tensor_descriptor import TensorDescriptor
from .specialize import ArgSpec, classify, descriptor_specs, is_tuple_argument, namedtuple_class


def specs_of(name: str, value: Any, constexpr: bool, specialize: bool) -> list[ArgSpec]:
    """The specs of one argument: one for a plain value, several for a descriptor or a tuple."""
    if isinstance(value, TensorDescriptor):
        if constexpr:
            raise TypeError(f"argument {name!r} is a tl.constexpr parameter; a TensorDescriptor "
                            "is a run-time argument: drop the tl.constexpr annotation")
        return descriptor_specs(name, value, specialize)
    if is_tuple_argument(value) and not constexpr:
        specs = [ArgSpec(name, True, namedtuple_class(value), tuple_len=len(value))]
        for i, item in enumerate(value):
            specs += specs_of(f"{name}_{i}", item, False, specialize)
        return specs
    return [classify(name, value, constexpr, specialize)]


def _constexpr(kinds: Sequence[str] | None, i: int) -> bool:
    return kinds is not None and i < len(kinds) and kinds[i] == ParamKind.CONSTEXPR


def has_expansion(values: Sequence[Any], kinds: Sequence[str] | None = None) -> bool:
    """Whether ``values`` hold a descriptor or a run-time tuple; ``kinds``: the parameters'
    ``ParamKind``s (a ``tl.constexpr`` one's tuple is one compile-time value)."""
    return any((is_tuple_argument(v) and not _constexpr(kinds, i)) or isinstance(v, TensorDescriptor)
               for i, v in enumerate(values))


def flatten(values: Sequence[Any], kinds: Sequence[str] | None = None) -> list[Any]:
    """The launch values, one per spec: a descriptor as its base, sizes and strides; a run-time
    tuple as itself (its marker's slot) followed by its elements, flattened."""
    out: list[Any] = []
    for i, v in enumerate(values):
        if isinstance(v, TensorDescriptor):
            out += [v.base, *v.shape, *v.strides]
        elif is_tuple_argument(v) and not _constexpr(kinds, i):
            out.append(v)
            out += flatten(v)
        else:
            out.append(v)
    return out


def regroup(specs: Sequence[ArgSpec], leaves: Sequence[Any], count: int | None = None) -> list[Any]:
    """The kernel's call arguments from the traced leaves of ``specs`` (one per spec): each
    descriptor's base, sizes and strides become one ``tl.make_tensor_descriptor``, each tuple's
    elements one Python tuple.  Call it while tracing."""
    out, _ = _take(specs, leaves, 0, len(specs) if count is None else count)
    return out


def _take(specs: Sequence[ArgSpec], leaves: Sequence[Any], i: int, count: int) -> tuple[list[Any], int]:
    """``count`` arguments rebuilt from ``specs[i:]``, and the index after them."""
    from ..language.memory import make_tensor_descriptor
    out: list[Any] = []
    while len(out) < count and i < len(specs):
        spec = specs[i]
        if spec.tuple_len is not None:
            items, i = _take(specs, leaves, i + 1, spec.tuple_len)
            out.append(tuple(items) if spec.value is None else spec.value(*items))
        elif spec.descriptor is not None:
            rank = len(spec.descriptor)
            base, rest = leaves[i], leaves[i + 1:i + 1 + 2 * rank]
            out.append(make_tensor_descriptor(base, list(rest[:rank]), list(rest[rank:]), list(spec.descriptor),
                                              padding_option=spec.padding))
            i += 1 + 2 * rank
        else:
            out.append(leaves[i])
            i += 1
    return out, i


def expanding(launcher: Callable[..., None], kinds: Sequence[str] | None = None) -> Callable[..., None]:
    """``launcher`` (which takes the expanded values) as a launcher of the kernel's own values."""
    def launch(grid: tuple[int, int, int], values: Sequence[Any], stream: Any = None) -> None:
        if stream is None:
            launcher(grid, flatten(values, kinds))
        else:
            launcher(grid, flatten(values, kinds), stream=stream)
    return launch
