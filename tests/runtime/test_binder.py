"""The per-kernel binder (``runtime/binder.py``) and the launch path it keys.

Equal binder facts must mean equal specializations; the binder must bind like Python does;
a launch served by its key must still follow the chosen backend, the current target, and
refuse bad input with the general path's messages."""

from __future__ import annotations

import inspect
import itertools

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry
from tiles.backends.interpreter import InterpreterBackend
from tiles.core.errors import LaunchError
from tiles.runtime.binder import make_binder
from tiles.runtime.jit import FastLaunch
from tiles.runtime.specialize import classify


def _values():
    aligned = np.zeros(8, np.float32)
    unaligned = np.zeros(9, np.float32)[1:]
    frozen = np.zeros(8, np.float32)
    frozen.flags.writeable = False
    ints = [0, 1, 2, 15, 16, 17, -16, -1, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**40, 2**63 - 1,
            2**63, 2**64 - 1, np.int64(16), np.int32(1)]
    return [*ints, True, False, 1.0, 0.5, float("nan"), np.float32(2.0), None, "s",
            aligned, unaligned, frozen, np.zeros(8, np.float16), np.zeros(8, np.int32)]


@pytest.mark.parametrize("kind", ["s", "n"])
def test_equal_facts_mean_equal_specializations(kind):
    signature = inspect.Signature([inspect.Parameter("v", inspect.Parameter.POSITIONAL_OR_KEYWORD)])
    bind = make_binder(signature, (kind,))
    values = _values()
    facts = [bind(v)[0] for v in values]
    specs = [classify("v", v, False, kind == "s").key() for v in values]
    for (fa, sa, va), (fb, sb, vb) in itertools.combinations(zip(facts, specs, values), 2):
        if fa == fb:
            assert sa == sb, f"{va!r} and {vb!r} share the fact {fa!r} but specialize as {sa} and {sb}"


def test_binds_like_python():
    def kernel(x, n, alpha=2.0, BLOCK=64):
        pass
    signature = inspect.signature(kernel)
    bind = make_binder(signature, ("s", "s", "s", "c"))
    assert bind(1.0, 16)[1] == (1.0, 16, 2.0, 64)
    assert bind(1.0, n=3, BLOCK=128)[1] == (1.0, 3, 2.0, 128)
    assert bind(1.0, 3, 0.5, 32)[0][-1] == 32  # a constexpr contributes its value
    for args, kwargs in (((1.0,), {}), ((1.0, 2), {"x": 3}), ((1.0, 2), {"num_ctas": 1}), ((1, 2, 3, 4, 5), {})):
        with pytest.raises(TypeError):
            bind(*args, **kwargs)


@tiles.jit
def binder_copy(x, out, n, SCALE: tl.constexpr):
    offs = tl.arange(0, 16)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * SCALE, mask=mask)


def _arrays(seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(16).astype(np.float32), np.full(16, np.nan, np.float32)


def _fast_entries(kernel):
    return [e for e in kernel._launches.values() if isinstance(e, FastLaunch)]


def test_keyed_launches_give_the_general_paths_results(rng):
    for n in (16, 1, 13, 16, 1, 13):
        x, out = _arrays(int(rng.integers(1 << 30)))
        binder_copy[(1,)](x, out, n, SCALE=3)
        np.testing.assert_array_equal(out[:n], x[:n] * 3)
        assert np.isnan(out[n:]).all()
    assert len(_fast_entries(binder_copy)) >= 3  # n == 1, multiple of 16, other


def test_an_int_too_wide_for_64_bits_is_refused_after_a_uint64_launch():
    @tiles.jit
    def add_scalar(out, v):
        tl.store(out + tl.arange(0, 2), tl.zeros((2,), tl.uint64) + v)

    out = np.zeros(2, np.uint64)
    for _ in range(2):
        add_scalar[(1,)](out, 2**64 - 3)
    assert out.tolist() == [2**64 - 3] * 2
    with pytest.raises(LaunchError, match="does not fit in 64 bits"):
        add_scalar[(1,)](out, 2**64)
    # an OverflowError too, as Triton raises; below int64's range is refused, not taken as uint64
    for value in (2**64, -(2**63) - 1, -(2**64) + 3):
        with pytest.raises(OverflowError, match="does not fit in 64 bits"):
            add_scalar[(1,)](out, value)
    add_scalar[(1,)](out, -(2**63))
    assert out.tolist() == [2**63] * 2


class RecordingBackend(InterpreterBackend):
    """The interpreter, counting launches, with a target that can change (a 'current device')."""

    name = "interpreter"

    def __init__(self):
        self.launches = 0
        self.device = 0

    def target_key(self):
        return ("numpy", self.device)

    def launch(self, compiled, grid, args):
        self.launches += 1
        super().launch(compiled, grid, args)


def test_the_default_backend_is_asked_on_every_launch(monkeypatch):
    x, out = _arrays(1)
    binder_copy[(1,)](x, out, 16, SCALE=2)
    binder_copy[(1,)](x, out, 16, SCALE=2)  # now served by the binder's key
    other = RecordingBackend()
    monkeypatch.setattr(registry, "default", lambda: other)
    binder_copy[(1,)](x, out, 16, SCALE=2)
    binder_copy[(1,)](x, out, 16, SCALE=2)
    assert other.launches == 2


def test_a_target_change_is_seen_without_device_arguments():
    backend = RecordingBackend()
    x, out = _arrays(2)
    for _ in range(2):
        binder_copy[(1,)](x, out, 16, SCALE=5, backend=backend)
    compiled = len(binder_copy.cache)
    backend.device = 1  # host arrays: the current device decides where (and for what) to compile
    binder_copy[(1,)](x, out, 16, SCALE=5, backend=backend)
    assert len(binder_copy.cache) == compiled + 1
    np.testing.assert_array_equal(out, x * 5)


def test_bad_input_keeps_the_general_paths_errors():
    x, out = _arrays(3)
    binder_copy[(1,)](x, out, 16, SCALE=1)
    binder_copy[(1,)](x, out, 16, SCALE=1)
    with pytest.raises(LaunchError, match=r"test_binder.py:\d+ in binder_copy.*missing a required argument"):
        binder_copy[(1,)](x, out, SCALE=1)
    with pytest.raises(LaunchError, match="grid size 0 must be an int"):
        binder_copy[(1.5,)](x, out, 16, SCALE=1)
    with pytest.raises(LaunchError, match="num_warps must be a power of two"):
        binder_copy[(1,)](x, out, 16, SCALE=1, num_warps=4.0)
    frozen = out.copy()
    frozen.flags.writeable = False
    with pytest.raises(LaunchError, match="read-only NumPy array"):
        binder_copy[(1,)](x, frozen, 16, SCALE=1)


def test_unhashable_constexprs_and_triton_hints_still_launch():
    x, out = _arrays(4)
    binder_copy[(1,)](x, out, 16, SCALE=2, num_ctas=1)  # a Triton option: the general path
    np.testing.assert_array_equal(out, x * 2)

    @tiles.jit
    def take_first(x, out, SIZES: tl.constexpr):
        offs = tl.arange(0, 16)
        tl.store(out + offs, tl.load(x + offs) + SIZES[0])

    for _ in range(2):
        take_first[(1,)](x, out, SIZES=[3, 4])
        np.testing.assert_array_equal(out, x + 3)


def test_a_parameter_named_like_a_launch_option_gets_the_option():
    @tiles.jit
    def with_stages(x, out, num_stages: tl.constexpr):
        offs = tl.arange(0, 16)
        tl.store(out + offs, tl.load(x + offs) * num_stages)

    assert with_stages._fast_launch is None  # the general path passes the option on
    x, out = _arrays(5)
    for stages in (2, 3, 2):
        with_stages[(1,)](x, out, num_stages=stages)
        np.testing.assert_array_equal(out, x * stages)


def test_the_launch_function_binds_every_way_python_does(rng):
    """``kernel[grid]`` is a generated function: positional, keyword, defaults, a kept ``k = kernel[g]``,
    ``run(grid=)``, and parameters named like the generated code's names (launch_grid, key, ...)."""

    @tiles.jit
    def names_clash(launch_grid, key, entry, options, n, SCALE: tl.constexpr = 2):
        offs = tl.arange(0, 16)
        mask = offs < n
        tl.store(entry + offs, (tl.load(launch_grid + offs, mask=mask) + tl.load(key + offs, mask=mask)) * SCALE
                 + options, mask=mask)

    x, y = (rng.standard_normal(16).astype(np.float32) for _ in range(2))
    launch = names_clash[(1,)]
    for call in (lambda out: launch(x, y, out, 0.5, 16),
                 lambda out: names_clash[(1,)](x, key=y, entry=out, options=0.5, n=16, SCALE=2),
                 lambda out: names_clash[(1,)](n=16, options=0.5, entry=out, key=y, launch_grid=x),
                 lambda out: names_clash.run(x, y, out, 0.5, 16, grid=(1,)),
                 lambda out: names_clash[lambda meta: (meta["n"] // 16,)](x, y, out, 0.5, 16)):
        for _ in range(2):  # the first launch builds the plan, the second is served by its key
            out = np.full(16, np.nan, np.float32)
            call(out)
            np.testing.assert_array_equal(out, (x + y) * np.float32(2) + np.float32(0.5))
    assert _fast_entries(names_clash)
    out = np.full(16, np.nan, np.float32)
    names_clash[(1,)](x, y, out, 0.5, 16, SCALE=3)
    np.testing.assert_array_equal(out, (x + y) * np.float32(3) + np.float32(0.5))


def test_the_launch_function_sends_bad_calls_to_the_general_paths_errors():
    x, out = _arrays(6)
    for _ in range(2):
        binder_copy[(1,)](x, out, 16, SCALE=1)
    with pytest.raises(LaunchError, match=r"test_binder.py:\d+ in binder_copy.*too many positional"):
        binder_copy[(1,)](x, out, 16, 1, 5)
    with pytest.raises(LaunchError, match=r"binder_copy.*SCLAE"):
        binder_copy[(1,)](x, out, 16, SCALE=1, SCLAE=2)
    with pytest.raises(LaunchError, match=r"test_binder.py:\d+ in binder_copy.*missing a required argument: 'x'"):
        binder_copy[(1,)](out=out, n=16, SCALE=1)
    with pytest.raises(TypeError, match=r"binder_copy\(\) got multiple values for argument 'x'"):
        binder_copy[(1,)](x, out, 16, x=x, SCALE=1)
    compiled = binder_copy[(1,)](x, out, 16, SCALE=7, warmup=True)
    assert compiled is binder_copy[(1,)](x, out, 16, SCALE=7, warmup=True)
    assert not np.isin(out, x * 7).any()  # warmup compiles without launching


def test_a_big_endian_array_after_a_little_endian_one_is_refused(rng):
    @tiles.jit
    def copy4(x, out):
        tl.store(out + tl.arange(0, 4), tl.load(x + tl.arange(0, 4)))

    x = rng.integers(-1000, 1000, 4).astype(np.int32)
    out = np.zeros(4, np.int32)
    copy4[(1,)](x, out)
    assert out.tolist() == x.tolist()
    with pytest.raises(LaunchError, match="cannot be passed"):
        copy4[(1,)](x.astype(">i4"), out)  # same dtype name 'int32': must not reuse the launch


@pytest.mark.parametrize("kind", ["s", "n"])
def test_the_binder_and_fact_of_speak_one_int_encoding(kind):
    """An int's fact is its ``launch_facts.IntClass``, whether the binder's inline code or
    ``specialize.fact_of`` computes it (the hot path reads it back without a table)."""
    from tiles.backends.launch_facts import IntClass, int_class
    from tiles.runtime.specialize import fact_of
    signature = inspect.Signature([inspect.Parameter("v", inspect.Parameter.POSITIONAL_OR_KEYWORD)])
    bind = make_binder(signature, (kind,))
    for v in (0, 1, 2, 15, 16, 17, -16, -1, 2**31 - 1, -(2**31), 2**31, 2**40 + 1, -(2**63), 2**63 - 16):
        fact = bind(v)[0][0][0]
        assert fact == fact_of(v, kind) == int_class(v, kind)
        assert IntClass(fact) is int_class(v, kind)
    assert int_class(2**63, kind) is None and not isinstance(fact_of(2**63, kind), int)
    from tiles.runtime.specialize import FLOAT_FACT, NONE_FACT
    assert bind(None)[0][0][0] == NONE_FACT and bind(0.5)[0][0][0] == fact_of(0.5, kind) == FLOAT_FACT
