"""A per-kernel binder: the launch's argument values and its specialization key in one call.

``make_binder`` writes (once per kernel) a Python function with the kernel's own signature,
so Python itself binds positional and keyword arguments and fills defaults.  For every
run-time parameter it computes a small *fact* inline for the common types: a torch tensor
gives (dtype, address % 16 == 0, device index), an int in int32 range a code for "is 1" /
"multiple of 16" / "other", a float ``"f"``; any other value gets ``specialize.fact_of``.
Constexpr parameters contribute their value.  Equal facts imply equal specializations
(``specialize.classify``), so the facts key the jit's launch cache.

The binder raises ``TypeError`` for arguments that do not bind (and for unhashable
constexprs when the key is looked up): the caller then takes the general path, which
reports the error with the kernel's file:line.
"""

from __future__ import annotations

import inspect
import keyword
import sys
from collections.abc import Callable
from typing import Any

from .specialize import fact_of

Binder = Callable[..., tuple[tuple[Any, ...], tuple[Any, ...]]]

# int facts: ``kind == "s"``: 0 for the value 1, 16 for a multiple of 16, 17 otherwise;
# ``kind == "n"``: 18.  Only ints in int32 range take these codes; others get fact_of's tuples.
INT_ONE, INT_DIV16, INT_OTHER, INT_ANY = 0, 16, 17, 18
_PREFIX = "_tiles_"


class _NoTensor:
    """Stands for torch.Tensor before torch is imported (no value has this type)."""


def tensor_type() -> type:
    torch = sys.modules.get("torch")
    tensor = getattr(torch, "Tensor", None)
    return tensor if isinstance(tensor, type) else _NoTensor


def can_bind(signature: inspect.Signature) -> bool:
    """Whether ``make_binder`` can write a binder for this signature."""
    for name, param in signature.parameters.items():
        if param.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD:
            return False
        if name.startswith(_PREFIX) or keyword.iskeyword(name) or not name.isidentifier():
            return False
    return True


def _fact_lines(name: str, slot: str, kind: str) -> list[str]:
    if kind == "c":
        return [f"    {slot} = {name}"]
    tensor = (f"({name}.dtype, not {name}.data_ptr() & 15, {name}.get_device())" if kind == "s"
              else f"({name}.dtype, {name}.get_device())")
    integer = (f"{INT_ONE} if {name} == 1 else {INT_DIV16} if not {name} & 15 else {INT_OTHER}"
               if kind == "s" else str(INT_ANY))
    return [f"    {_PREFIX}t = type({name})",
            f"    if {_PREFIX}t is {_PREFIX}tensor: {slot} = {tensor}",
            f"    elif {_PREFIX}t is {_PREFIX}int and -0x80000000 <= {name} <= 0x7fffffff: {slot} = {integer}",
            f"    elif {_PREFIX}t is {_PREFIX}float: {slot} = 'f'",
            f"    else: {slot} = {_PREFIX}fact({name}, {kind!r})"]


def make_binder(signature: inspect.Signature, kinds: tuple[str, ...]) -> Binder:
    """The binder for a kernel with ``signature``; ``kinds`` per parameter: ``c`` constexpr,
    ``s`` specialized, ``n`` do_not_specialize.  Call ``can_bind`` first."""
    names = list(signature.parameters)
    namespace: dict[str, Any] = {f"{_PREFIX}tensor": tensor_type(), f"{_PREFIX}int": int,
                                 f"{_PREFIX}float": float, f"{_PREFIX}fact": fact_of}
    params = []
    for name, param in signature.parameters.items():
        if param.default is inspect.Parameter.empty:
            params.append(name)
        else:
            namespace[f"{_PREFIX}default_{name}"] = param.default
            params.append(f"{name}={_PREFIX}default_{name}")
    lines = [f"def bind({', '.join(params)}):"]
    slots = [f"{_PREFIX}k{i}" for i in range(len(names))]
    for name, slot, kind in zip(names, slots, kinds):
        lines += _fact_lines(name, slot, kind)
    lines.append(f"    return ({''.join(s + ', ' for s in slots)}), ({''.join(n + ', ' for n in names)})")
    exec("\n".join(lines), namespace)  # noqa: S102 - the text is built from the kernel's parameter names
    binder: Binder = namespace["bind"]
    return binder
