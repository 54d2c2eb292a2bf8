"""vLLM (v1 GPU sampler) style fused repetition / frequency / presence penalties and temperature on
a logits row block.  Exercises run-time scalar booleans built from loaded values
(``use_rep = rep != 1.0``) combined with Python ``or`` and negated with ``not`` in an ``if`` that
returns early, nested run-time ``if``s that reassign the logits tile used after them, a prompt
bitmask packed 32 tokens per int32 word unpacked with ``(packed[:, None] >> tl.arange(0, 32)[None, :]) & 1``,
``.to(tl.int1)`` and ``.reshape(BLOCK_SIZE)`` (an int, not a list), ``tl.where`` between a loaded
scalar and a literal, a float times a *boolean* tile (``pres * (counts > 0)``), an indirection
through ``idx_mapping`` to per-request state rows, and ``temperature == 0`` (greedy) mapped to 1."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _penalties_and_temperature_kernel(logits_ptr, logits_stride, repetition_penalty_ptr, frequency_penalty_ptr,
                                      presence_penalty_ptr, temperature_ptr, idx_mapping_ptr, prompt_bin_mask_ptr,
                                      prompt_bin_mask_stride, output_bin_counts_ptr, output_bin_counts_stride,
                                      vocab_size, BLOCK_SIZE: tl.constexpr):
    batch_idx = tl.program_id(0)
    rep_penalty = tl.load(repetition_penalty_ptr + batch_idx)
    freq_penalty = tl.load(frequency_penalty_ptr + batch_idx)
    pres_penalty = tl.load(presence_penalty_ptr + batch_idx)
    temperature = tl.load(temperature_ptr + batch_idx)
    temperature = tl.where(temperature == 0.0, 1.0, temperature)
    use_rep_penalty = rep_penalty != 1.0
    use_freq_penalty = freq_penalty != 0.0
    use_pres_penalty = pres_penalty != 0.0
    use_penalty = (use_rep_penalty or use_freq_penalty) or use_pres_penalty
    use_temperature = temperature != 1.0
    if not (use_penalty or use_temperature):
        return
    block_idx = tl.program_id(1)
    block = block_idx * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = block < vocab_size
    logits = tl.load(logits_ptr + batch_idx * logits_stride + block, mask=mask)
    logits = logits.to(tl.float32)
    if use_penalty:
        req_state_idx = tl.load(idx_mapping_ptr + batch_idx)
        output_bin_counts = tl.load(output_bin_counts_ptr + req_state_idx * output_bin_counts_stride + block,
                                    mask=mask)
        output_bin_mask = output_bin_counts > 0
        if use_rep_penalty:
            packed_block = block_idx * BLOCK_SIZE // 32 + tl.arange(0, BLOCK_SIZE // 32)
            packed_mask = tl.load(prompt_bin_mask_ptr + req_state_idx * prompt_bin_mask_stride + packed_block,
                                  mask=packed_block < tl.cdiv(vocab_size, 32))
            prompt_bin_mask = (packed_mask[:, None] >> (tl.arange(0, 32)[None, :])) & 1
            prompt_bin_mask = prompt_bin_mask.to(tl.int1)
            prompt_bin_mask = prompt_bin_mask.reshape(BLOCK_SIZE)
            scale = tl.where(prompt_bin_mask | output_bin_mask, rep_penalty, 1.0)
            logits *= tl.where(logits > 0, 1.0 / scale, scale)
        logits -= freq_penalty * output_bin_counts
        logits -= pres_penalty * output_bin_mask
    logits = logits / temperature
    tl.store(logits_ptr + batch_idx * logits_stride + block, logits, mask=mask)


def check(rng):
    batch, states, vocab, BLOCK = 5, 7, 200, 64
    logits = rng.standard_normal((batch, vocab)).astype(np.float32) * 3
    logits[0, :2] = [0.0, -0.0]
    rep = np.array([1.0, 1.3, 1.0, 0.8, 1.0], np.float32)
    freq = np.array([0.0, 0.5, 0.0, 0.0, 0.2], np.float32)
    pres = np.array([0.0, 0.3, 0.7, 0.0, 0.0], np.float32)
    temp = np.array([1.0, 0.0, 0.7, 1.0, 2.0], np.float32)  # row 0: nothing to do (early return)
    idx_mapping = rng.permutation(states)[:batch].astype(np.int32)
    prompt = rng.random((states, vocab)) < 0.2
    words = -(-vocab // 32)
    padded = np.zeros((states, words * 32), bool)
    padded[:, :vocab] = prompt
    packed = (padded.reshape(states, words, 32).astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(-1)
    packed = packed.astype(np.uint32).view(np.int32)
    counts = np.where(rng.random((states, vocab)) < 0.3, rng.integers(1, 4, (states, vocab)), 0).astype(np.int32)
    out = logits.copy()
    _penalties_and_temperature_kernel[(batch, tiles.cdiv(vocab, BLOCK))](
        out, vocab, rep, freq, pres, temp, idx_mapping, packed, words, counts, vocab, vocab, BLOCK_SIZE=BLOCK)
    expected = logits.astype(np.float64).copy()
    for b in range(batch):
        s = idx_mapping[b]
        row = expected[b]
        if rep[b] != 1.0:
            scale = np.where(prompt[s] | (counts[s] > 0), rep[b], 1.0)
            row *= np.where(row > 0, 1.0 / scale, scale)
        row -= freq[b] * counts[s]
        row -= pres[b] * (counts[s] > 0)
        row /= temp[b] if temp[b] != 0 else 1.0
    close(out, expected, rtol=1e-5, atol=1e-5)
    assert np.signbit(out[0, 1]) and out[0, 0] == 0  # the early-return row is untouched
