"""Host ``TensorDescriptor`` arguments: expanded into plain parameters for every backend.

A kernel parameter given a ``tiles.tools.tensor_descriptor.TensorDescriptor`` becomes, in the
specialization and the IR, the parameters ``<name>_base`` (a pointer), ``<name>_shape<i>`` and
``<name>_stride<i>`` (integers; the last stride is the constant 1) — see
``specialize.descriptor_specs``.  The trace hands the kernel what
``tl.make_tensor_descriptor`` makes of them, so ``desc.load``/``desc.store`` become the
DESC_LOAD/DESC_STORE ops a device-side descriptor gives (TMA on sm_90 unless ``TILES_TMA=0``,
masked accesses elsewhere), and checked mode bounds-checks the base array as any pointer.
Expanding, flattening and regrouping are ``expanded_args.py``'s (tuple arguments expand too).
"""

from __future__ import annotations

import re

from ..core.dtypes import BY_NAME, PointerType
from ..tools.tensor_descriptor import block_shape_problem
from .specialize import ArgSpec, descriptor_names

_TYPE_STRING = re.compile(r"tensordesc<\s*(\w+)\s*\[([\d,\s]*)\]\s*>")


def specs_from_type_string(name: str, text: str) -> list[ArgSpec] | None:
    """Triton's signature type ``"tensordesc<fp16[64, 64]>"`` as the expanded specs (sizes and
    strides as unspecialized int32 parameters); None when ``text`` is not one; ValueError when
    it is malformed."""
    if not text.strip().startswith("tensordesc"):
        return None
    match = _TYPE_STRING.fullmatch(text.strip())
    dtype = BY_NAME.get(match.group(1)) if match else None
    if match is None or dtype is None:
        raise ValueError(f"parameter {name!r}: cannot read {text!r}; expected e.g. 'tensordesc<fp16[64, 64]>'")
    block = [int(b) for b in match.group(2).split(",") if b.strip()]
    why = block_shape_problem(block, len(block)) if block else "an empty block shape"
    if why:
        raise ValueError(f"parameter {name!r}: {text!r}: {why}")
    names = descriptor_names(name, len(block))
    int32 = BY_NAME["int32"]
    return [ArgSpec(names[0], False, type=PointerType(dtype), divisibility=16, descriptor=tuple(block)),
            *(ArgSpec(n, False, type=int32) for n in names[1:-1]), ArgSpec(names[-1], True, 1)]
