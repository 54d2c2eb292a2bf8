"""xgrammar / sglang style grammar-constrained decoding: a packed int32 bitmask of allowed tokens
(bit 31 set makes a word negative, so the shift right is arithmetic) is built with ``tl.atomic_or``
(``sem="relaxed"``, ``scope="gpu"``), thinned with ``tl.atomic_and`` and toggled with
``tl.atomic_xor``, then applied in place to the logits by a persistent kernel:
``tl.range(pid, rows * blocks, NUM_SMS)`` over (row, vocab block) work items, the words unpacked
with ``packed[:, None] >> tl.arange(0, 32)[None, :] & 1`` and ``.reshape(BLOCK)``, and the scalar
``-float("inf")`` stored under the joint mask."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def build_bitmask_kernel(allowed_ptr, banned_ptr, toggled_ptr, bitmask_ptr, n_allowed, n_banned, n_toggled,
                         bitmask_size, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = bitmask_ptr + row * bitmask_size
    for start in tl.range(0, n_allowed, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < n_allowed
        tok = tl.load(allowed_ptr + row * n_allowed + offs, mask=m, other=0)
        tl.atomic_or(base + tok // 32, (1 << (tok % 32)).to(tl.int32), mask=m, sem="relaxed", scope="gpu")
    tl.debug_barrier()  # the phases of one program touch the same words: ordered by the barrier
    for start in tl.range(0, n_banned, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < n_banned
        tok = tl.load(banned_ptr + row * n_banned + offs, mask=m, other=0)
        tl.atomic_and(base + tok // 32, ~(1 << (tok % 32)).to(tl.int32), mask=m, sem="acq_rel", scope="cta")
    tl.debug_barrier()
    offs = tl.arange(0, BLOCK)
    m = offs < n_toggled
    tok = tl.load(toggled_ptr + row * n_toggled + offs, mask=m, other=0)
    tl.atomic_xor(base + tok // 32, (1 << (tok % 32)).to(tl.int32), mask=m)


@tiles.jit
def apply_token_bitmask_inplace_kernel(logits_ptr, bitmask_ptr, indices_ptr, num_rows, vocab_size, logits_stride,
                                       bitmask_stride, NUM_SMS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    num_blocks = tl.cdiv(vocab_size, BLOCK)
    for work_id in tl.range(pid, num_rows * num_blocks, NUM_SMS):
        row_id = work_id // num_blocks
        block_offset = (work_id % num_blocks) * BLOCK
        batch_id = tl.load(indices_ptr + row_id)
        offsets = block_offset + tl.arange(0, BLOCK)
        word_offsets = block_offset // 32 + tl.arange(0, BLOCK // 32)
        vocab_mask = offsets < vocab_size
        words = tl.load(bitmask_ptr + batch_id * bitmask_stride + word_offsets,
                        mask=word_offsets < tl.cdiv(vocab_size, 32), other=0)
        banned = ((words[:, None] >> tl.arange(0, 32)[None, :]) & 1) == 0
        banned = banned.reshape(BLOCK)
        tl.store(logits_ptr + batch_id * logits_stride + offsets, -float("inf"), vocab_mask & banned)


def check(rng):
    batch, vocab = 5, 1000
    words = -(-vocab // 32)
    n_allowed, n_banned, n_toggled = 300, 40, 25
    allowed = np.stack([rng.choice(vocab, n_allowed, replace=False) for _ in range(batch)]).astype(np.int32)
    allowed[:, 0] = 31  # bit 31 of word 0: a negative word
    allowed[:, 1] = vocab - 1
    banned = np.stack([rng.choice(allowed[b], n_banned, replace=False) for b in range(batch)]).astype(np.int32)
    toggled = np.stack([rng.choice(vocab, n_toggled, replace=False) for _ in range(batch)]).astype(np.int32)
    bitmask = np.zeros((batch, words), np.int32)
    build_bitmask_kernel[(batch,)](allowed, banned, toggled, bitmask, n_allowed,
                                                              n_banned, n_toggled, words, BLOCK=64)
    keep = np.zeros((batch, words * 32), bool)
    for b in range(batch):
        keep[b, allowed[b]] = True
    for b in range(batch):
        keep[b, banned[b]] = False
        keep[b, toggled[b]] ^= True
    expected_words = (keep.reshape(batch, words, 32).astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(-1)
    close(bitmask.view(np.uint32), expected_words.astype(np.uint32))
    assert (bitmask < 0).any()

    logits = rng.standard_normal((batch + 2, vocab)).astype(np.float32)
    indices = np.array([4, 0, 2, 6], np.int32)  # rows 1, 3 and 5 are left alone
    bitmask_rows = np.zeros((batch + 2, words), np.int32)
    bitmask_rows[:batch] = bitmask
    bitmask_rows[6] = bitmask[3]
    expected = logits.copy()
    for row in indices:
        expected[row, ~keep[row if row < batch else 3, :vocab]] = -np.inf
    apply_token_bitmask_inplace_kernel[(3,)](logits, bitmask_rows, indices, len(indices), vocab, vocab, words,
                                             NUM_SMS=3, BLOCK=256)
    close(logits, expected, rtol=0, atol=0)
