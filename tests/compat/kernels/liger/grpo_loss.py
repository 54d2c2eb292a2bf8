"""Liger-Kernel style GRPO loss (fused per-token log-softmax + clipped policy loss), forward and
backward, one (batch, position) pair per program on a 2-D grid.

Language features exercised: module-level ``NAME: tl.constexpr = tl.constexpr(0)`` globals compared
against a ``LOSS_TYPE`` constexpr in an ``if/elif`` chain where one branch binds a Python float
(``is_clipped = 0.0``) and another a tensor; optional pointers tested with ``if PTR is not None``
(and combined with a constexpr test by ``and``); pointer *arguments* advanced in place
(``LOGITS += off_b * (L + 1) * N``); ``tl.program_id(..).cast(tl.int64)``; an early ``return``
under a runtime test on a loaded mask byte (after zero-filling with ``tl.store(ptr, 0.0, mask=)``
in a loop); float hyper-parameters passed as constexprs (``TEMPERATURE``, ``EPS_LOW``, ``DELTA !=
0.0``) and a ``BLOCK_N: tl.constexpr = 16`` default; an online log-sum-exp whose carried
``m_i = float("-inf")`` / ``l_i = 0.0`` start as Python floats; ``tl.clamp`` with constexpr bounds;
a float tensor multiplied by an ``int1`` comparison; a scalar gather ``tl.load(LOGITS + idx)`` with
a loaded int64 index; ``off_l % STRIDE`` for a (B, 1) broadcast ratio; ``tl.debug_barrier``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl

_LOSS_TYPE_GRPO: tl.constexpr = tl.constexpr(0)
_LOSS_TYPE_CISPO: tl.constexpr = tl.constexpr(1)
_LOSS_TYPE_SAPO: tl.constexpr = tl.constexpr(2)


@tiles.jit
def _grpo_fwd(LOGITS, OLD_LOGP, REF_LOGP, INPUT_IDS, COMPLETION_MASK, ADVANTAGES, IS_RATIO, IS_RATIO_STRIDE,
              LOSS, LSE, KL, IS_CLIPPED,
              TEMPERATURE: tl.constexpr, BETA: tl.constexpr, EPS_LOW: tl.constexpr, EPS_HIGH: tl.constexpr,
              LOSS_TYPE: tl.constexpr, SAPO_POS: tl.constexpr, SAPO_NEG: tl.constexpr, DELTA: tl.constexpr,
              BIAS_CORRECT_KL: tl.constexpr, L: tl.constexpr, N: tl.constexpr, BLOCK_N: tl.constexpr = 16):
    off_b = tl.program_id(0).cast(tl.int64)
    off_l = tl.program_id(1).cast(tl.int64)
    if COMPLETION_MASK is not None:
        COMPLETION_MASK += off_b * L + off_l
        keep = tl.load(COMPLETION_MASK)
        if keep == 0:
            return
    LOGITS += off_b * (L + 1) * N + off_l * N
    INPUT_IDS += off_b * L + off_l
    ADVANTAGES += off_b
    LOSS += off_b * L + off_l
    LSE += off_b * L + off_l
    IS_CLIPPED += off_b * L + off_l

    m_i = float("-inf")
    l_i = 0.0
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        z = tl.load(LOGITS + cols, mask=cols < N, other=float("-inf")).to(tl.float32) / TEMPERATURE
        m_new = tl.maximum(m_i, tl.max(z))
        l_i = l_i * tl.exp(m_i - m_new) + tl.sum(tl.exp(z - m_new))
        m_i = m_new
    lse = m_i + tl.log(l_i)

    tok = tl.load(INPUT_IDS)
    logp = tl.load(LOGITS + tok).to(tl.float32) / TEMPERATURE - lse
    if OLD_LOGP is None:
        old_logp = logp
    else:
        OLD_LOGP += off_b * L + off_l
        old_logp = tl.load(OLD_LOGP).to(tl.float32)
    ratio = tl.exp(logp - old_logp)
    adv = tl.load(ADVANTAGES).to(tl.float32)

    if LOSS_TYPE == _LOSS_TYPE_GRPO:
        clipped_ratio = tl.clamp(ratio, 1 - EPS_LOW, 1 + EPS_HIGH)
        is_clipped = ((ratio < 1 - EPS_LOW) & (adv < 0)) | ((ratio > 1 + EPS_HIGH) & (adv > 0))
        if DELTA != 0.0:
            ratio = tl.minimum(ratio, DELTA)
        loss = -tl.minimum(ratio * adv, clipped_ratio * adv)
    elif LOSS_TYPE == _LOSS_TYPE_CISPO:
        loss = -tl.minimum(ratio, EPS_HIGH) * adv * logp
        is_clipped = (ratio > EPS_HIGH) & (adv > 0)
    elif LOSS_TYPE == _LOSS_TYPE_SAPO:
        tau = tl.where(adv > 0, SAPO_POS, SAPO_NEG)
        loss = -(tl.sigmoid(tau * (ratio - 1.0)) * 4.0 / tau) * adv
        is_clipped = 0.0

    if IS_RATIO is not None and LOSS_TYPE != _LOSS_TYPE_SAPO:
        w = tl.load(IS_RATIO + off_b * IS_RATIO_STRIDE + off_l % IS_RATIO_STRIDE).to(tl.float32)
        loss = loss * w

    if BETA != 0.0:
        REF_LOGP += off_b * L + off_l
        KL += off_b * L + off_l
        ref = tl.load(REF_LOGP).to(tl.float32)
        kl = tl.exp(ref - logp) - (ref - logp) - 1
        if BIAS_CORRECT_KL:
            kl = kl * tl.exp(logp - old_logp)
        loss += BETA * kl
        tl.store(KL, kl)
    tl.store(LOSS, loss)
    tl.store(LSE, lse)
    tl.store(IS_CLIPPED, is_clipped)


@tiles.jit
def _grpo_bwd(DLOSS, DLOGITS, LOGITS, OLD_LOGP, REF_LOGP, INPUT_IDS, ADVANTAGES, COMPLETION_MASK, LSE,
              TEMPERATURE: tl.constexpr, BETA: tl.constexpr, EPS_LOW: tl.constexpr, EPS_HIGH: tl.constexpr,
              DELTA: tl.constexpr, loss_stride0, loss_stride1, L: tl.constexpr, N: tl.constexpr,
              BLOCK_N: tl.constexpr = 16):
    off_b = tl.program_id(0).cast(tl.int64)
    off_l = tl.program_id(1).cast(tl.int64)
    DLOGITS += off_b * (L + 1) * N + off_l * N
    if COMPLETION_MASK is not None:
        COMPLETION_MASK += off_b * L + off_l
        if tl.load(COMPLETION_MASK) == 0:
            for start in range(0, N, BLOCK_N):
                cols = tl.arange(0, BLOCK_N) + start
                tl.store(DLOGITS + cols, 0.0, mask=cols < N)
            return
    LOGITS += off_b * (L + 1) * N + off_l * N
    DLOSS += off_b * loss_stride0 + off_l * loss_stride1
    INPUT_IDS += off_b * L + off_l
    ADVANTAGES += off_b
    LSE += off_b * L + off_l
    dloss = tl.load(DLOSS).to(tl.float32)
    lse = tl.load(LSE).to(tl.float32)
    tok = tl.load(INPUT_IDS)
    logp = tl.load(LOGITS + tok).to(tl.float32) / TEMPERATURE - lse
    OLD_LOGP += off_b * L + off_l
    old_logp = tl.load(OLD_LOGP).to(tl.float32)
    ratio = tl.exp(logp - old_logp)
    adv = tl.load(ADVANTAGES).to(tl.float32)
    clipped_ratio = tl.clamp(ratio, 1 - EPS_LOW, 1 + EPS_HIGH)
    if DELTA != 0.0:
        ratio_for_loss = tl.minimum(ratio, DELTA)
    else:
        ratio_for_loss = ratio
    unclipped_wins = clipped_ratio * adv >= ratio_for_loss * adv
    dlogp = -ratio * adv * unclipped_wins
    if DELTA != 0.0:
        dlogp = dlogp * (ratio <= DELTA)
    if BETA != 0.0:
        REF_LOGP += off_b * L + off_l
        ref = tl.load(REF_LOGP).to(tl.float32)
        dlogp += BETA * (1 - tl.exp(ref - logp))
    dlogp = dlogp * dloss / TEMPERATURE
    tl.debug_barrier()
    for start_n in tl.range(0, N, BLOCK_N):
        cols = start_n + tl.arange(0, BLOCK_N)
        z = tl.load(LOGITS + cols, mask=cols < N, other=-float("inf")).to(tl.float32) / TEMPERATURE
        p = tl.exp(z - lse)
        tl.store(DLOGITS + cols, tl.where(cols == tok, 1 - p, -p) * dlogp, mask=cols < N)


def _log_softmax_pick(logits, ids, temp):
    z = logits[:, :-1].astype(np.float64) / temp
    m = z.max(-1, keepdims=True)
    lse = (m + np.log(np.exp(z - m).sum(-1, keepdims=True)))[..., 0]
    picked = np.take_along_axis(z, ids[..., None], -1)[..., 0]
    return picked - lse, lse, z


def check(rng):
    B, L, N = 3, 5, 37
    temp, beta, eps_lo, eps_hi, delta = 0.9, 0.04, 0.2, 0.28, 1.5
    logits = (rng.standard_normal((B, L + 1, N)) * 2).astype(np.float32)
    ids = rng.integers(0, N, (B, L)).astype(np.int64)
    mask = (rng.random((B, L)) > 0.25).astype(np.int32)
    mask[0, 0] = 0
    adv = np.array([1.3, -0.7, 0.4], np.float32)
    logp, lse, z = _log_softmax_pick(logits, ids, temp)
    old = (logp + rng.standard_normal((B, L)) * 0.4).astype(np.float32)
    ref = (logp + rng.standard_normal((B, L)) * 0.3).astype(np.float32)
    is_ratio = np.array([[0.9], [1.1], [1.0]], np.float32)
    sentinel = np.float32(-7.0)

    def outs():
        return [np.full((B, L), sentinel, np.float32) for _ in range(4)]

    # PPO-style clipping with delta, mask, ratio correction and bias-corrected KL
    loss, lse_out, kl, clipped = outs()
    _grpo_fwd[(B, L)](logits, old, ref, ids, mask, adv, is_ratio, 1, loss, lse_out, kl, clipped,
                      TEMPERATURE=temp, BETA=beta, EPS_LOW=eps_lo, EPS_HIGH=eps_hi, LOSS_TYPE=0,
                      SAPO_POS=1.0, SAPO_NEG=1.05, DELTA=delta, BIAS_CORRECT_KL=True, L=L, N=N)
    A = adv.astype(np.float64)[:, None]
    r = np.exp(logp - old)
    r2 = np.clip(r, 1 - eps_lo, 1 + eps_hi)
    exp_clip = ((r < 1 - eps_lo) & (A < 0)) | ((r > 1 + eps_hi) & (A > 0))
    exp_loss = -np.minimum(np.minimum(r, delta) * A, r2 * A) * is_ratio
    exp_kl = (np.exp(ref - logp) - (ref - logp) - 1) * r
    exp_loss = exp_loss + beta * exp_kl
    on = mask.astype(bool)
    close(lse_out[on], lse[on], rtol=1e-5, atol=1e-5)
    close(loss[on], exp_loss[on], rtol=1e-4, atol=1e-5)
    close(kl[on], exp_kl[on], rtol=1e-4, atol=1e-5)
    close(clipped[on], exp_clip[on].astype(np.float32))
    for out in (loss, lse_out, kl, clipped):
        assert (out[~on] == sentinel).all()

    # SAPO gate: no mask, no old log-probs (ratio 1), no KL pointer needed (BETA == 0)
    loss, lse_out, kl, clipped = outs()
    clipped[:] = 5.0
    _grpo_fwd[(B, L)](logits, None, None, ids, None, adv, None, 1, loss, lse_out, None, clipped,
                      TEMPERATURE=temp, BETA=0.0, EPS_LOW=eps_lo, EPS_HIGH=eps_hi, LOSS_TYPE=2,
                      SAPO_POS=1.0, SAPO_NEG=1.05, DELTA=0.0, BIAS_CORRECT_KL=False, L=L, N=N)
    tau = np.where(A > 0, 1.0, 1.05)
    exp_sapo = -(1 / (1 + np.exp(-tau * 0.0)) * 4.0 / tau) * A * np.ones((B, L))
    close(loss, exp_sapo, rtol=1e-5, atol=1e-6)
    close(clipped, np.zeros((B, L), np.float32))
    assert (kl == sentinel).all()

    # backward: d loss / d logits, through a transposed dloss (strides 1, B)
    dloss = np.ascontiguousarray(rng.standard_normal((L, B)).astype(np.float32)).T
    dlogits = np.full((B, L + 1, N), sentinel, np.float32)
    _grpo_bwd[(B, L)](dloss, dlogits, logits, old, ref, ids, adv, mask, lse.astype(np.float32),
                      TEMPERATURE=temp, BETA=beta, EPS_LOW=eps_lo, EPS_HIGH=eps_hi, DELTA=delta,
                      loss_stride0=1, loss_stride1=B, L=L, N=N)
    unclipped = r2 * A >= np.minimum(r, delta) * A
    dlogp = -r * A * unclipped * (r <= delta) + beta * (1 - np.exp(ref - logp))
    dlogp = dlogp * dloss / temp
    p = np.exp(z - lse[..., None])
    onehot = np.arange(N)[None, None, :] == ids[..., None]
    exp_d = np.where(onehot, 1 - p, -p) * dlogp[..., None]
    exp_d[~on] = 0.0
    close(dlogits[:, :L], exp_d, rtol=1e-4, atol=1e-6)
    assert (dlogits[:, L] == sentinel).all()
