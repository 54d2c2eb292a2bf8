"""FlagGems style ``torch.masked_select``: a single-program path (one ``tl.cumsum`` over the whole
input) and a two-kernel path for larger inputs where each program counts the selected elements
of a row of blocks, takes a ticket with ``tl.atomic_add(counter, 1, sem="acq_rel")`` and the
last program to arrive turns the per-program counts into exclusive prefix sums for everyone.

Language features exercised: a ``bool`` mask array loaded through an ``*i1`` pointer and cast
``.to(tl.int1)``; Python ``and`` between two tensors as a store mask (``offsets < N and
select``); the builtin ``min(...)`` on runtime scalars inside a kernel; a ``for`` over
``range(start_block, last_block_id)`` with runtime bounds and a peeled last iteration; the
accumulator dtype taken from ``part_sums_ptr.dtype.element_ty`` and from
``tl.constexpr(part_sums_ptr.dtype.element_ty)``; a pointer argument advanced inside a loop
(``out_ptr += advance``) with the increment computed in the previous iteration; the
"last-block-done" ticket compared with ``tl.num_programs(0) - 1``, bound to a local named ``np``
that shadows the module's NumPy import; ``do_not_specialize`` naming an argument that does not
exist (``"nr"``), as FlagGems does."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _select_single_pass(inp_ptr, mask_ptr, out_ptr, N, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    inp = tl.load(inp_ptr + offsets, mask=offsets < N)
    select = tl.load(mask_ptr + offsets, mask=offsets < N).to(tl.int1)
    out_offsets = tl.cumsum(select.to(tl.int32), axis=0) - 1
    tl.store(out_ptr + out_offsets, inp, mask=offsets < N and select)


@tiles.jit(do_not_specialize=["N", "nr", "row_stride"])
def _count_per_row(inp_ptr, mask_ptr, part_sums_ptr, counter_ptr, N, num_blocks, num_blocks_per_row,
                   NP_BLOCK: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    row_id = tl.program_id(0)
    start_block = row_id * num_blocks_per_row
    offset = start_block * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    acc = tl.zeros((BLOCK_SIZE,), dtype=part_sums_ptr.dtype.element_ty)
    last_block_id = min(num_blocks - 1, start_block + num_blocks_per_row - 1)
    for _block_id in range(start_block, last_block_id):
        acc += tl.load(mask_ptr + offset).to(part_sums_ptr.dtype.element_ty)
        offset += BLOCK_SIZE
    acc += tl.load(mask_ptr + offset, mask=offset < N, other=0).to(part_sums_ptr.dtype.element_ty)
    tl.store(part_sums_ptr + row_id, tl.sum(acc, axis=0))
    ticket = tl.atomic_add(counter_ptr, 1, sem="acq_rel")
    np = tl.num_programs(0)
    if ticket == np - 1:
        live = tl.arange(0, NP_BLOCK) < np
        sums = tl.load(part_sums_ptr + tl.arange(0, NP_BLOCK), mask=live)
        total = tl.sum(sums, axis=0)
        tl.store(part_sums_ptr + tl.arange(0, NP_BLOCK), tl.cumsum(sums, axis=0) - sums, mask=live)
        tl.store(part_sums_ptr + np, total)


@tiles.jit(do_not_specialize=["N", "nr", "row_stride"])
def _write_selected(inp_ptr, mask_ptr, part_sums_ptr, out_ptr, N, num_blocks, num_blocks_per_row,
                    NP_BLOCK: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    row_id = tl.program_id(0)
    start_block = row_id * num_blocks_per_row
    offset = start_block * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    advance = tl.load(part_sums_ptr + row_id)
    last_block_id = min(num_blocks - 1, start_block + num_blocks_per_row - 1)
    for _block_id in range(start_block, last_block_id):
        inp = tl.load(inp_ptr + offset)
        select = tl.load(mask_ptr + offset).to(tl.int1)
        ints = select.to(tl.constexpr(part_sums_ptr.dtype.element_ty))
        out_ptr += advance
        advance = tl.sum(ints, axis=0)
        tl.store(out_ptr + tl.cumsum(ints, axis=0) - 1, inp, mask=select)
        offset += BLOCK_SIZE
    inp = tl.load(inp_ptr + offset, mask=offset < N)
    select = tl.load(mask_ptr + offset, mask=offset < N, other=0).to(tl.int1)
    ints = select.to(tl.constexpr(part_sums_ptr.dtype.element_ty))
    out_ptr += advance
    tl.store(out_ptr + tl.cumsum(ints, axis=0) - 1, inp, mask=offset < N and select)


def check(rng):
    # single pass, float16 with specials
    n = 301
    x = rng.standard_normal(n).astype(np.float16)
    x[:4] = [np.nan, -0.0, np.inf, -np.inf]
    m = rng.random(n) < 0.4
    m[:4] = True
    out = np.full(int(m.sum()) + 3, 9.0, np.float16)
    _select_single_pass[(1,)](x, m, out, n, BLOCK_SIZE=512)
    close(out[:-3], x[m])
    assert np.signbit(out[1]) and (out[-3:] == 9.0).all()

    # two kernels over rows of blocks: 16 blocks of 64 in 3 rows (6, 6, 4 blocks), ragged tail
    n, block = 1000, 64
    x = rng.integers(-(2**31), 2**31 - 1, n, dtype=np.int64).astype(np.int32)
    x[:2] = [np.iinfo(np.int32).min, np.iinfo(np.int32).max]
    m = rng.random(n) < 0.3
    m[:2] = True
    m[-1] = True
    n_blocks = -(-n // block)
    programs = 3
    per_row = -(-n_blocks // programs)
    programs = -(-n_blocks // per_row)
    part_sums = np.full(programs + 1, -1, np.int32)
    counter = np.zeros((), np.int32)
    _count_per_row[(programs,)](x, m, part_sums, counter, n, n_blocks, per_row, NP_BLOCK=4, BLOCK_SIZE=block)
    counts = [m[r * per_row * block:(r + 1) * per_row * block].sum() for r in range(programs)]
    np.testing.assert_array_equal(part_sums, np.concatenate([[0], np.cumsum(counts)]))
    assert int(counter) == programs
    out = np.zeros(int(part_sums[-1]) + 2, np.int32)
    _write_selected[(programs,)](x, m, part_sums, out, n, n_blocks, per_row, NP_BLOCK=4, BLOCK_SIZE=block)
    close(out[:-2], x[m])
    assert (out[-2:] == 0).all()
