"""The MMA lowering's extension point (``lowering/mma/extension.py``): the generic lowering runs on
its own, a target's hooks are called for its lowering only, and a hook's ``ChoiceNotApplicableError``
comes back as ``NotApplicable`` (CUDA's Hopper parts, ``cuda/hopper/extension.py``, use them all)."""

import pytest

import tiles
import tiles.language as tl
from tiles.backends.base import CodegenChoices, Options
from tiles.backends.cuda import nvptx_target
from tiles.backends.cuda.emitter import CUDAEmitter
from tiles.backends.cuda.hopper.extension import HOPPER
from tiles.backends.llvm.emit import default_caps
from tiles.backends.lowering import Lowered, NotApplicable
from tiles.backends.lowering.entry import lower_with_tensor_cores
from tiles.backends.lowering.mma import NO_EXTENSION, ChoiceNotApplicableError, MMAExtension
from tiles.backends.lowering.mma.base import TC_RULES
from tiles.core.ops import Op


@tiles.jit
def matmul(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


def _ir():
    sig = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp32:16", "K": "i32:16"}
    return matmul.compile(sig, dict(BM=64, BN=64, BK=32), backend="cuda", num_warps=4, num_stages=3).ir


def _lower(arch, extension):
    target = nvptx_target(arch)
    options = Options(4, 3, codegen=CodegenChoices())
    return lower_with_tensor_cores(_ir(), CUDAEmitter(default_caps(target), target), options, extension)


def test_generic_lowering_alone_is_the_same_on_sm_80():
    """Without Hopper's wgmma and TMA the extension has nothing to take: the generic room alone
    writes the same module (mma.sync, cp.async stages)."""
    plain, hopper = _lower("sm_80", NO_EXTENSION), _lower("sm_80", HOPPER)
    assert isinstance(plain, Lowered) and isinstance(hopper, Lowered)
    assert plain.code == hopper.code
    assert "nvvm.mma.m16n8k16" in plain.code and "cp.async" in plain.code


def test_warpgroup_mmas_need_the_extension():
    """An emitter with wgmma plans warpgroup MMAs; the generic lowering cannot issue them alone."""
    with pytest.raises(AssertionError, match="Warpgroup"):
        _lower("sm_90a", NO_EXTENSION)
    lowered = _lower("sm_90a", HOPPER)
    assert isinstance(lowered, Lowered) and "wgmma" in lowered.code


def test_hooks_are_called_for_that_lowering_only():
    seen = []

    def dot(lw, instr):
        seen.append(instr.op)
        return TC_RULES[Op.DOT](lw, instr)

    def loop(lw, instr):
        seen.append(instr.op)
        return None  # not taken: the generic cp.async pipeline runs
    ext = MMAExtension(rules={Op.DOT: dot}, pipelined_loop=loop, setup=lambda lw: seen.append("setup"))
    custom, plain = _lower("sm_80", ext), _lower("sm_80", NO_EXTENSION)
    assert seen == ["setup", Op.FOR, Op.DOT]
    assert custom.code == plain.code
    assert TC_RULES[Op.DOT] is not dot


def test_a_choice_not_applicable_comes_back():
    class NoRoomError(ChoiceNotApplicableError):
        choice = "persistent"

    def setup(lw):
        raise NoRoomError("no room here")
    result = _lower("sm_80", MMAExtension(setup=setup))
    assert result == NotApplicable("persistent", "no room here")
