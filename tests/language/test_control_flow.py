"""Control flow: run-time for/while/if, static_range, early return, helper calls, boolean ops."""

import numpy as np
import pytest

import tiles
import tiles.language as tl


@tiles.jit
def for_kernel(x_ptr, out_ptr, lo, hi, step, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    count = 0
    for i in range(lo, hi, step):
        acc += tl.load(x_ptr + i * BLOCK + offs)
        count += 1
    tl.store(out_ptr + offs, acc)
    tl.store(out_ptr + BLOCK, count.to(tl.float32))


@pytest.mark.parametrize("lo,hi,step", [(0, 7, 1), (2, 9, 3), (5, 5, 1), (6, 0, -2), (3, 1, 1)])
def test_for_with_runtime_bounds_and_carried_tiles(rng, lo, hi, step):
    x = rng.standard_normal((10, 8)).astype(np.float32)
    out = np.empty(9, np.float32)
    for_kernel[(1,)](x, out, lo, hi, step, BLOCK=8)
    rows = list(range(lo, hi, step))
    want = x[rows].sum(0, dtype=np.float32) if rows else np.zeros(8, np.float32)
    np.testing.assert_allclose(out[:8], want, rtol=1e-6)
    assert out[8] == len(rows)


@tiles.jit
def per_program_trip_count_kernel(out_ptr):
    pid = tl.program_id(0)
    total = 0
    i = 0
    while i < pid:               # a different trip count in every program
        total += i * i
        i += 1
    tl.store(out_ptr + pid, total)


def test_while_with_per_program_trip_counts():
    out = np.full(12, -1, np.int32)
    per_program_trip_count_kernel[(12,)](out)
    np.testing.assert_array_equal(out, [sum(i * i for i in range(p)) for p in range(12)])


@tiles.jit
def static_range_kernel(out_ptr, N: tl.constexpr):
    offs = tl.arange(0, 8)
    acc = tl.zeros([8], tl.int32)
    for k in tl.static_range(1, N, 2):
        acc += offs * k
    tl.store(out_ptr + offs, acc)


def test_static_range_unrolls():
    out = np.empty(8, np.int32)
    static_range_kernel[(1,)](out, N=7)
    np.testing.assert_array_equal(out, np.arange(8) * (1 + 3 + 5))
    assert "for(" not in static_range_kernel.ir(out, N=7)


@tiles.jit
def branch_kernel(x_ptr, out_ptr, MODE: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    if x < 0:
        y = -x * 10
    elif x == 0:
        y = x + 99
    else:
        y = x
        if MODE == "double":
            y = y * 2
    tl.store(out_ptr + pid, y)


@pytest.mark.parametrize("mode", ["plain", "double"])
def test_if_elif_else_on_runtime_scalars_and_constexprs(mode):
    x = np.array([-3, 0, 4, -1, 7, 0], np.int32)
    out = np.empty(6, np.int32)
    branch_kernel[(6,)](x, out, MODE=mode)
    factor = 2 if mode == "double" else 1
    np.testing.assert_array_equal(out, np.where(x < 0, -x * 10, np.where(x == 0, 99, x * factor)))


@tiles.jit
def early_return_kernel(x_ptr, out_ptr, n):
    pid = tl.program_id(0)
    if pid >= n:
        return
    tl.store(out_ptr + pid, tl.load(x_ptr + pid) + 1)


def test_early_return():
    x = np.arange(5, dtype=np.int32)
    out = np.full(8, -1, np.int32)
    early_return_kernel[(8,)](x, out, 5)
    np.testing.assert_array_equal(out, [1, 2, 3, 4, 5, -1, -1, -1])


@tiles.jit
def doubled_unless_small(v, limit):
    """A helper returning a value on both paths; ``v`` changes type only after the early return."""
    if tl.max(tl.abs(v), 0) < limit:
        return v * 0 - 1
    v = v.to(tl.float16)
    return (v * 2).to(tl.float32)


@tiles.jit
def retyped_after_early_return(x_ptr, out_ptr, alt_ptr, limit, FILTER: tl.constexpr, BLOCK: tl.constexpr):
    """cut-cross-entropy's backward: ``if filtered: return`` inside a compile-time ``if``, then the
    same name rebound to a narrower type (Triton compiles it: the returning path ends the kernel)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    d = tl.load(x_ptr + offs)
    tl.store(alt_ptr + offs, doubled_unless_small(d, limit))
    if FILTER:
        if tl.max(tl.abs(d), 0) < limit:
            return
    d = (d * 3).to(tl.bfloat16)
    scale = 0.5
    tl.store(out_ptr + offs, d.to(tl.float32) * scale)


@pytest.mark.parametrize("filter_", [True, False])
def test_a_name_retyped_after_an_early_return_is_not_merged(rng, filter_):
    import tiles.core.dtypes as D
    from tiles.core.floats import narrow
    block, programs, limit = 16, 6, 1.0
    x = (rng.standard_normal((programs, block)) * 0.3).astype(np.float32)
    x[::2, 5] = rng.uniform(1.5, 3, programs // 2).astype(np.float32)  # even programs pass the filter
    out = np.full((programs, block), -7.0, np.float32)
    alt = np.full((programs, block), -7.0, np.float32)
    retyped_after_early_return[(programs,)](x, out, alt, limit, FILTER=filter_, BLOCK=block)
    big = np.abs(x).max(1) >= limit
    want = narrow((x * 3).astype(np.float64), D.bfloat16).astype(np.float32) * 0.5
    kept = big if filter_ else np.ones(programs, bool)
    np.testing.assert_array_equal(out[kept], want[kept])
    np.testing.assert_array_equal(out[~kept], -7.0)
    halves = x.astype(np.float16).astype(np.float32) * 2
    np.testing.assert_array_equal(alt, np.where(big[:, None], halves, -1.0))


@tiles.jit
def clamp_to_unit(v, LIMIT: tl.constexpr):
    if LIMIT > 0:
        return tl.minimum(tl.maximum(v, -LIMIT), LIMIT)
    return v


@tiles.jit
def sign_of(v):
    if v > 0:
        s = 1
    else:
        s = -1
    return s


@tiles.jit
def helper_call_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, clamp_to_unit(x, 2.0))
    tl.store(out_ptr + BLOCK + offs, clamp_to_unit(x, 0))
    first = tl.load(x_ptr)
    tl.store(out_ptr + 2 * BLOCK, sign_of(first).to(tl.float32))


def test_calls_to_other_jit_functions(rng):
    x = (rng.standard_normal(16) * 3).astype(np.float32)
    out = np.empty(33, np.float32)
    helper_call_kernel[(1,)](x, out, BLOCK=16)
    np.testing.assert_array_equal(out[:16], np.clip(x, -2, 2))
    np.testing.assert_array_equal(out[16:32], x)
    assert out[32] == (1 if x[0] > 0 else -1)


@tiles.jit
def boolean_kernel(x_ptr, out_ptr, FLAG: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    both = (x > 0) and (x < 10)
    either = x < -5 or x > 5
    negated = not (x == 3)
    pick = x * 2 if x > 2 else x - 100
    const_pick = 1 if FLAG and not False else 2
    tl.store(out_ptr + pid * 5, both.to(tl.int32))
    tl.store(out_ptr + pid * 5 + 1, either.to(tl.int32))
    tl.store(out_ptr + pid * 5 + 2, negated.to(tl.int32))
    tl.store(out_ptr + pid * 5 + 3, pick)
    tl.store(out_ptr + pid * 5 + 4, const_pick + 0 * x)
    if 0 <= x < 5:               # a chained comparison on run-time values
        tl.store(out_ptr + pid * 5 + 4, -7)


def test_and_or_not_and_conditional_expressions():
    x = np.array([-8, 0, 3, 4, 9, 12], np.int32)
    out = np.empty(30, np.int32)
    boolean_kernel[(6,)](x, out, FLAG=True)
    got = out.reshape(6, 5)
    np.testing.assert_array_equal(got[:, 0], (x > 0) & (x < 10))
    np.testing.assert_array_equal(got[:, 1], (x < -5) | (x > 5))
    np.testing.assert_array_equal(got[:, 2], x != 3)
    np.testing.assert_array_equal(got[:, 3], np.where(x > 2, x * 2, x - 100))
    np.testing.assert_array_equal(got[:, 4], np.where((0 <= x) & (x < 5), -7, 1))


@tiles.jit
def nested_loops_kernel(out_ptr, n, m):
    total = 0
    for i in range(n):
        for j in range(i, m):
            if (i + j) % 2 == 0:
                total += i * j
    tl.store(out_ptr, total)


def test_nested_loops_with_branch():
    out = np.empty(1, np.int32)
    nested_loops_kernel[(1,)](out, 6, 9)
    assert out[0] == sum(i * j for i in range(6) for j in range(i, 9) if (i + j) % 2 == 0)


@tiles.jit
def lazy_conditional_kernel(cu_ptr, out_ptr):
    pid = tl.program_id(0)
    start = 0 if pid == 0 else tl.load(cu_ptr + pid - 1)   # p[-1] must not be read
    block = tl.zeros([4], tl.float32) if pid > 1 else tl.full([4], 2.0, tl.float32)
    tl.store(out_ptr + pid * 5, start.to(tl.float32))
    tl.store(out_ptr + pid * 5 + 1 + tl.arange(0, 4), block)


def test_conditional_expression_evaluates_only_the_branch_taken():
    """Triton lowers ``a if c else b`` on a run-time scalar to an scf.if: the other branch's load
    never runs (vLLM's rejection sampler loads ``cu[req - 1]`` only for ``req > 0``)."""
    cu = np.array([3, 5, 9], np.int32)
    out = np.empty(15, np.float32)
    lazy_conditional_kernel[(3,)](cu, out)
    np.testing.assert_array_equal(out.reshape(3, 5), [[0, 2, 2, 2, 2], [3, 2, 2, 2, 2], [5, 0, 0, 0, 0]])


@tiles.jit
def conditional_types_kernel(out_ptr):
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, 0.5 if pid == 0 else 1)


def test_conditional_expression_branches_must_agree_in_type():
    with pytest.raises(tiles.CompilationError, match="conditional expression.*float32 in the then-branch but int32"):
        conditional_types_kernel[(2,)](np.empty(2, np.float32))


@tiles.jit
def loop_variable_after_loop(out_ptr, n, HOW: tl.constexpr):
    i = 100
    last = -1
    if HOW == "range":
        for i in range(0, n):
            last = i
        tl.store(out_ptr, last)
        tl.store(out_ptr + 1, i)
    elif HOW == "range_copy":
        for i in range(0, n):
            last = i * 3
        tl.store(out_ptr, last)
    elif HOW == "static":
        for i in tl.static_range(0, 4):
            last = i * 2
        tl.store(out_ptr, last)
        tl.store(out_ptr + 1, i)
    elif HOW == "static_reassigned":
        for i in tl.static_range(1, 7, 2):
            i = i * 10
        tl.store(out_ptr + 1, i)
    else:  # an unrolled loop that runs no iteration leaves the name as it was
        for i in tl.static_range(3, 3):
            last = i
        tl.store(out_ptr, last)
        tl.store(out_ptr + 1, i)


@pytest.mark.parametrize("how, want", [("range_copy", [18, 0]), ("static", [6, 3]), ("static_reassigned", [0, 50]),
                                       ("static_empty", [-1, 100])])
def test_loop_variables_after_the_loop(how, want):
    # as Triton: an unrolled loop's variable holds its last value after the loop (Python's rule)
    out = np.zeros(2, np.int32)
    loop_variable_after_loop[(1,)](out, 7, HOW=how)
    assert out.tolist() == want


def test_a_run_time_loops_variable_read_after_the_loop_is_refused():
    # compiled Triton reads poison there (its interpreter: the last value); tiles read the value from
    # before the loop (100), silently
    out = np.zeros(2, np.int32)
    with pytest.raises(tiles.CompilationError, match="variable of a run-time for loop") as info:
        loop_variable_after_loop[(1,)](out, 7, HOW="range")
    assert "test_control_flow.py" in str(info.value) and "tl.store(out_ptr + 1, i)" in str(info.value)
