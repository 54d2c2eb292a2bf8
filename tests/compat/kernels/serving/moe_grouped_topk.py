"""DeepSeek-V3 style grouped top-k routing as the serving stacks write it in Triton (vLLM /
SGLang / LightLLM ``grouped_topk`` with a correction bias): a token's expert scores plus bias are
``tl.reshape``d to (groups, group_size); each group is scored by its two best experts (``tl.max``,
then ``tl.argmax`` masked out and ``tl.max`` again); ``topk_group`` groups are chosen by repeated
``tl.argmax`` under ``tl.static_range`` (ties to the lowest index); the other groups' experts are
set to ``-inf`` through a broadcast ``[:, None]`` group mask and the tile is reshaped back; the
top-k experts are picked the same way, their *unbiased* scores gathered with a one-hot
``tl.sum(tl.where(...))``, renormalised and scaled.  Rows with exact ties included."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def grouped_topk_kernel(scores_ptr, bias_ptr, topk_ids_ptr, topk_w_ptr, routed_scaling_factor,
                        N_EXPERTS: tl.constexpr, N_GROUP: tl.constexpr, TOPK_GROUP: tl.constexpr,
                        TOPK: tl.constexpr, RENORMALIZE: tl.constexpr):
    token = tl.program_id(0).to(tl.int64)
    GROUP_SIZE: tl.constexpr = N_EXPERTS // N_GROUP
    offs = tl.arange(0, N_EXPERTS)
    scores = tl.load(scores_ptr + token * N_EXPERTS + offs)
    biased = scores + tl.load(bias_ptr + offs)
    grouped = tl.reshape(biased, (N_GROUP, GROUP_SIZE))
    in_group = tl.arange(0, GROUP_SIZE)[None, :]
    top1 = tl.max(grouped, axis=1)
    first = tl.argmax(grouped, axis=1)
    top2 = tl.max(tl.where(in_group == first[:, None], float("-inf"), grouped), axis=1)
    group_scores = top1 + top2
    group_ids = tl.arange(0, N_GROUP)
    chosen = tl.zeros([N_GROUP], dtype=tl.int1)
    for _ in tl.static_range(TOPK_GROUP):
        g = tl.argmax(tl.where(chosen, float("-inf"), group_scores), axis=0)
        chosen = chosen | (group_ids == g)
    masked = tl.reshape(tl.where(chosen[:, None], grouped, float("-inf")), (N_EXPERTS,))
    k_offs = tl.arange(0, TOPK)
    ids = tl.zeros([TOPK], dtype=tl.int32)
    weights = tl.zeros([TOPK], dtype=tl.float32)
    for k in tl.static_range(TOPK):
        e = tl.argmax(masked, axis=0)
        w = tl.sum(tl.where(offs == e, scores, 0.0), axis=0)
        ids = tl.where(k_offs == k, e, ids)
        weights = tl.where(k_offs == k, w, weights)
        masked = tl.where(offs == e, float("-inf"), masked)
    if RENORMALIZE:
        weights = weights / tl.sum(weights, axis=0)
    tl.store(topk_ids_ptr + token * TOPK + k_offs, ids)
    tl.store(topk_w_ptr + token * TOPK + k_offs, weights * routed_scaling_factor)


def _first_argmax(v, taken):
    return int(np.argmax(np.where(taken, -np.inf, v)))


def _reference(scores, bias, n_group, topk_group, topk, renorm, scaling):
    n, e = scores.shape
    ids = np.empty((n, topk), np.int32)
    weights = np.empty((n, topk), np.float64)
    for t in range(n):
        biased = (scores[t] + bias).astype(np.float32)
        grouped = biased.reshape(n_group, -1)
        first = grouped.argmax(1)
        rest = grouped.copy()
        rest[np.arange(n_group), first] = -np.inf
        gs = (grouped.max(1) + rest.max(1)).astype(np.float32)
        chosen = np.zeros(n_group, bool)
        for _ in range(topk_group):
            chosen[_first_argmax(gs, chosen)] = True
        masked = np.where(chosen[:, None], grouped, -np.inf).reshape(-1)
        taken = np.zeros(e, bool)
        for k in range(topk):
            ids[t, k] = _first_argmax(masked, taken)
            taken[ids[t, k]] = True
        w = scores[t, ids[t]].astype(np.float64)
        weights[t] = (w / w.sum() if renorm else w) * scaling
    return ids, weights


def check(rng):
    n_tokens, n_experts, n_group, topk_group, topk = 37, 64, 8, 3, 8
    scores = (1 / (1 + np.exp(-rng.standard_normal((n_tokens, n_experts))))).astype(np.float32)
    bias = (rng.standard_normal(n_experts) * 0.05).astype(np.float32)
    scores[0] = 0.5  # every expert ties: the biases decide, then the lowest index
    bias[8:16] = bias[0:8]
    scores[1, :] = scores[1, 0]
    for renorm in (True, False):
        ids = np.full((n_tokens, topk), -1, np.int32)
        w = np.full((n_tokens, topk), np.nan, np.float32)
        grouped_topk_kernel[(n_tokens,)](scores, bias, ids, w, 2.5, N_EXPERTS=n_experts, N_GROUP=n_group,
                                         TOPK_GROUP=topk_group, TOPK=topk, RENORMALIZE=renorm)
        ref_ids, ref_w = _reference(scores, bias, n_group, topk_group, topk, renorm, 2.5)
        close(ids, ref_ids)
        close(w, ref_w, rtol=1e-5, atol=1e-6)
