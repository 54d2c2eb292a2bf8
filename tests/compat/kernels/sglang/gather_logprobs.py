"""SGLang style log-probabilities of chosen tokens: a [ROWS, VOCAB] tile turned into log-softmax
in fp32 (``tl.max``/``tl.sum`` along axis 1, ``tl.log``), then the log-probs of K token ids per
row picked with ``tl.gather(logp, ids, axis=1)`` from an index tile narrower than the source,
plus each row's top-K values by ``tl.topk`` along the last axis; bf16 logits, masked vocab tail."""

import ml_dtypes
import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _gather_logprobs(logits_ptr, ids_ptr, out_ptr, top_ptr, n_rows, vocab, ROWS: tl.constexpr,
                     VOCAB: tl.constexpr, K: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, VOCAB)
    row_ok = rows < n_rows
    x = tl.load(logits_ptr + rows[:, None] * vocab + cols[None, :], mask=row_ok[:, None] & (cols[None, :] < vocab),
                other=float("-inf")).to(tl.float32)
    x = tl.where(row_ok[:, None], x, 0.0)
    m = tl.max(x, axis=1)
    lse = tl.log(tl.sum(tl.exp(x - m[:, None]), axis=1)) + m
    logp = x - lse[:, None]
    ks = tl.arange(0, K)
    ids = tl.load(ids_ptr + rows[:, None] * K + ks[None, :], mask=row_ok[:, None], other=0)
    picked = tl.gather(logp, ids, axis=1)
    tl.store(out_ptr + rows[:, None] * K + ks[None, :], picked, mask=row_ok[:, None])
    tl.store(top_ptr + rows[:, None] * K + ks[None, :], tl.topk(logp, K), mask=row_ok[:, None])


def check(rng):
    n_rows, vocab, K = 11, 100, 4
    logits = (rng.standard_normal((n_rows, vocab)) * 3).astype(ml_dtypes.bfloat16)
    ids = rng.integers(0, vocab, (n_rows, K)).astype(np.int32)
    ids[0] = [0, vocab - 1, 5, 5]
    out = np.empty((n_rows, K), np.float32)
    top = np.empty((n_rows, K), np.float32)
    _gather_logprobs[(tiles.cdiv(n_rows, 4),)](logits, ids, out, top, n_rows, vocab, ROWS=4, VOCAB=128, K=K)
    x = logits.astype(np.float64)
    logp = x - (np.log(np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True)) + x.max(1, keepdims=True))
    close(out, np.take_along_axis(logp, ids, 1), rtol=1e-5, atol=1e-5)
    close(top, -np.sort(-logp, 1)[:, :K], rtol=1e-5, atol=1e-5)
