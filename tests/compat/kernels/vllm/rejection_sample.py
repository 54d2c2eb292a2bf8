"""vLLM speculative decoding's greedy rejection sampler and its recovered-token sampler.  Forms:
``@jit(do_not_specialize=["max_spec_len"])``, an optional pointer tested with
``True if is_greedy_ptr is None else tl.load(...)`` and a program that ``return``s when its request
is not greedy, ``start_idx = 0`` rebound from a load under ``if req_idx > 0`` (an int literal
merged with an int32 scalar), a loop-carried ``rejected`` flag tested with ``if not rejected``, a
module-level ``PLACEHOLDER_TOKEN_ID: tl.constexpr`` and a constexpr default argument
(``BLOCK_SIZE: tl.constexpr = 256``).  The recovered tokens take ``tl.argmax`` of
``max(target - draft, 0) / q`` with the draft token's probability zeroed when there are no draft
probabilities (``NO_DRAFT_PROBS``), and ties broken toward the lowest index."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl

PLACEHOLDER_TOKEN_ID: tl.constexpr = -1


@tiles.jit(do_not_specialize=["max_spec_len"])
def rejection_greedy_sample_kernel(output_token_ids_ptr, cu_num_draft_tokens_ptr, draft_token_ids_ptr,
                                   target_argmax_ptr, bonus_token_ids_ptr, is_greedy_ptr, max_spec_len):
    req_idx = tl.program_id(0)
    is_greedy = True if is_greedy_ptr is None else tl.load(is_greedy_ptr + req_idx)
    if not is_greedy:
        return
    start_idx = 0
    if req_idx > 0:
        start_idx = tl.load(cu_num_draft_tokens_ptr + req_idx - 1).to(tl.int32)
    end_idx = tl.load(cu_num_draft_tokens_ptr + req_idx).to(tl.int32)
    num_draft_tokens = end_idx - start_idx
    rejected = False
    for pos in range(num_draft_tokens):
        if not rejected:
            draft_token_id = tl.load(draft_token_ids_ptr + start_idx + pos)
            target_argmax_id = tl.load(target_argmax_ptr + start_idx + pos)
            tl.store(output_token_ids_ptr + req_idx * (max_spec_len + 1) + pos, target_argmax_id)
            if draft_token_id != target_argmax_id:
                rejected = True
    if not rejected:
        bonus_token_id = tl.load(bonus_token_ids_ptr + req_idx)
        tl.store(output_token_ids_ptr + req_idx * (max_spec_len + 1) + num_draft_tokens, bonus_token_id)


@tiles.jit
def sample_recovered_tokens_kernel(output_token_ids_ptr, cu_num_draft_tokens_ptr, draft_token_ids_ptr,
                                   draft_probs_ptr, target_probs_ptr, q_ptr, vocab_size,
                                   PADDED_VOCAB_SIZE: tl.constexpr, NO_DRAFT_PROBS: tl.constexpr,
                                   BLOCK_SIZE: tl.constexpr = 256):
    req_idx = tl.program_id(0)
    start_idx = 0 if req_idx == 0 else tl.load(cu_num_draft_tokens_ptr + req_idx - 1)
    end_idx = tl.load(cu_num_draft_tokens_ptr + req_idx)
    pos = tl.program_id(1)
    if pos >= end_idx - start_idx:
        return
    vocab_offset = tl.arange(0, PADDED_VOCAB_SIZE)
    in_vocab = vocab_offset < vocab_size
    token_idx = start_idx + pos
    if NO_DRAFT_PROBS:
        draft_token_id = tl.load(draft_token_ids_ptr + token_idx)
        prob = tl.load(target_probs_ptr + token_idx * vocab_size + vocab_offset,
                       mask=in_vocab & (vocab_offset != draft_token_id), other=0.0)
    else:
        draft_prob = tl.load(draft_probs_ptr + token_idx * vocab_size + vocab_offset, mask=in_vocab, other=0.0)
        target_prob = tl.load(target_probs_ptr + token_idx * vocab_size + vocab_offset, mask=in_vocab, other=0.0)
        prob = tl.maximum(target_prob - draft_prob, 0)
    q = tl.load(q_ptr + req_idx * vocab_size + vocab_offset, mask=in_vocab, other=float("-inf"))
    recovered_id = tl.argmax(prob / q, axis=-1)
    tl.store(output_token_ids_ptr + token_idx, recovered_id)


def check(rng):
    num_draft = np.array([3, 0, 4, 2, 5, 1], np.int32)
    batch, max_spec_len, vocab = len(num_draft), 5, 203
    cu = np.cumsum(num_draft).astype(np.int32)
    n = int(cu[-1])
    draft = rng.integers(0, vocab, n).astype(np.int32)
    target = np.where(rng.random(n) < 0.6, draft, rng.integers(0, vocab, n)).astype(np.int32)
    target[:3] = draft[:3]  # request 0 accepts every draft token and gets its bonus token
    bonus = rng.integers(0, vocab, batch).astype(np.int32)
    is_greedy = np.array([1, 1, 0, 1, 1, 0], np.int32) != 0
    for greedy in (None, is_greedy):
        out = np.full((batch, max_spec_len + 1), PLACEHOLDER_TOKEN_ID, np.int32)
        rejection_greedy_sample_kernel[(batch,)](out, cu, draft, target, bonus, greedy, max_spec_len)
        expected = np.full_like(out, PLACEHOLDER_TOKEN_ID)
        for r in range(batch):
            if greedy is not None and not greedy[r]:
                continue
            start = cu[r] - num_draft[r]
            for p in range(num_draft[r]):
                expected[r, p] = target[start + p]
                if draft[start + p] != target[start + p]:
                    break
            else:
                expected[r, num_draft[r]] = bonus[r]
        close(out, expected)

    target_probs = rng.random((n, vocab)).astype(np.float32)
    draft_probs = rng.random((n, vocab)).astype(np.float32)
    q = rng.exponential(size=(batch, vocab)).astype(np.float32)
    target_probs[1, 17] = target_probs[1, 40] = 4.0  # a tie: the lower index wins
    q[0, 17] = q[0, 40] = 1.0
    for no_draft in (True, False):
        out = np.full(n, -5, np.int32)
        sample_recovered_tokens_kernel[(batch, max_spec_len)](out, cu, draft, None if no_draft else draft_probs,
                                                              target_probs, q, vocab, PADDED_VOCAB_SIZE=256,
                                                              NO_DRAFT_PROBS=no_draft)
        req = np.repeat(np.arange(batch), num_draft)
        if no_draft:
            prob = target_probs.copy()
            prob[np.arange(n), draft] = 0
        else:
            prob = np.maximum(target_probs - draft_probs, 0)
        close(out, np.argmax(prob / q[req], axis=1).astype(np.int32))
