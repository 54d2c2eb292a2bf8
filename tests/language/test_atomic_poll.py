"""``tl.atomic_poll``: spin until memory holds a value.  A program waits for a flag that an
earlier part of the same launch set (the branch ``pid == 0`` releases, the others acquire),
a poll that sees its value at once returns True, and a timeout ends a poll for a value that
never comes with False."""

import numpy as np
import pytest

import tiles
import tiles.language as tl


@tiles.jit
def handoff_kernel(flag_ptr, payload_ptr, out_ptr, value, EXPECTED: tl.constexpr):
    pid = tl.program_id(0)
    if pid == 0:
        tl.store(payload_ptr, value)
        tl.atomic_xchg(flag_ptr, EXPECTED, sem="release")
    else:
        seen = tl.atomic_poll(flag_ptr, EXPECTED, sem="acquire")
        tl.store(out_ptr + pid, tl.load(payload_ptr) + seen.to(tl.int32) * 1000 + pid)


@pytest.mark.backends("interpreter")
@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64])
def test_a_later_branch_waits_for_a_flag(rng, dtype):
    """The interpreter runs ``pid == 0``'s branch first, so every poller finds the flag set."""
    value = int(rng.integers(-500, 500))
    for expected in (1, -7):
        flag = np.zeros(1, dtype)
        payload = np.zeros(1, np.int32)
        out = np.full(5, -1, np.int32)
        handoff_kernel[(5,)](flag, payload, out, value, EXPECTED=expected)
        assert flag[0] == expected
        assert out[1:].tolist() == [value + 1000 + p for p in range(1, 5)]


@tiles.jit
def poll_kernel(flag_ptr, out_ptr, expected, SEM: tl.constexpr, TIMEOUT: tl.constexpr):
    p = flag_ptr + tl.program_id(0)
    if TIMEOUT is None:
        seen = p.atomic_poll(expected, sem=SEM)  # the tensor method, as Triton's
    else:
        seen = tl.atomic_poll(p, expected, timeout_ns=TIMEOUT)
    tl.store(out_ptr + tl.program_id(0), seen)


@pytest.mark.parametrize("sem", ["acquire", "relaxed"])
def test_a_value_already_there_ends_the_poll(rng, sem):
    out = np.zeros(6, np.bool_)
    value = int(rng.integers(-1000, 1000))
    poll_kernel[(6,)](np.full(6, value, np.int64), out, value, SEM=sem, TIMEOUT=None)
    assert out.all()
    out[:] = False
    poll_kernel[(6,)](np.full(6, value, np.int16), out, value, SEM=sem, TIMEOUT=None)
    assert out.all()


@pytest.mark.parametrize("timeout", [0, 1, 50])
def test_timeouts_give_false_where_the_value_never_comes(rng, timeout):
    """Nothing writes the flags while the programs poll, so each ends with what it read first."""
    flags = rng.integers(0, 3, 40).astype(np.int32)
    for as_constexpr in (True, False):
        out = np.zeros(40, np.bool_)
        if as_constexpr:
            poll_kernel[(40,)](flags, out, 1, SEM="acquire", TIMEOUT=timeout)
        else:
            runtime_timeout_kernel[(40,)](flags, out, 1, timeout)
        np.testing.assert_array_equal(out, flags == 1)


@tiles.jit
def runtime_timeout_kernel(flag_ptr, out_ptr, expected, timeout_ns):
    p = flag_ptr + tl.program_id(0)
    tl.store(out_ptr + tl.program_id(0), tl.atomic_poll(p, expected, timeout_ns=timeout_ns))


@tiles.jit
def bad_poll_kernel(flag_ptr, CASE: tl.constexpr):
    if CASE == 0:
        tl.atomic_poll(flag_ptr + tl.arange(0, 4), 1)
    elif CASE == 1:
        tl.atomic_poll(flag_ptr, 1, sem="release")
    elif CASE == 2:
        tl.atomic_poll(flag_ptr, 1, timeout_ns=-1)
    else:
        tl.atomic_poll(flag_ptr, 1, timeout_ns=1.5)


@pytest.mark.backends("interpreter")
@pytest.mark.parametrize("case,match", [(0, "scalar pointer"), (1, "acquire and relaxed"),
                                        (2, "non-negative"), (3, "scalar integer")])
def test_refusals_name_the_kernel_line(case, match):
    with pytest.raises(tiles.CompilationError, match=match) as info:
        bad_poll_kernel[(1,)](np.ones(4, np.int32), CASE=case)
    assert "test_atomic_poll.py" in str(info.value)
