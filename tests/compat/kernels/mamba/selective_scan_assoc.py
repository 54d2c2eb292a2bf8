"""mamba style selective scan over a [channels, time] tile: the recurrence
``h[t] = exp(dt[t] * A) * h[t-1] + dt[t] * B[t] * x[t]`` as ``tl.associative_scan`` of a *tuple*
along axis 1 with a ``@jit`` combine function, and the adjoint recurrence of the backward pass as
the same scan with ``reverse=True`` (which scans from the end, so its decay must be the next
step's); an initial state folded in through the first element, outputs ``y = C * h + D * x``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _linear_combine(a_left, b_left, a_right, b_right):
    return a_left * a_right, b_left * a_right + b_right


@tiles.jit
def _scan_fwd(x_ptr, dt_ptr, A_ptr, B_ptr, C_ptr, D_ptr, h0_ptr, y_ptr, h_last_ptr, grad_ptr, dim, seqlen,
              BLOCK_D: tl.constexpr, BLOCK_T: tl.constexpr):
    d = tl.program_id(0) * BLOCK_D + tl.arange(0, BLOCK_D)
    t = tl.arange(0, BLOCK_T)
    d_ok = d < dim
    ok = d_ok[:, None] & (t[None, :] < seqlen)
    offs = d[:, None] * seqlen + t[None, :]
    x = tl.load(x_ptr + offs, mask=ok, other=0.0)
    dt = tl.load(dt_ptr + offs, mask=ok, other=0.0)
    A = tl.load(A_ptr + d, mask=d_ok, other=0.0)
    Bt = tl.load(B_ptr + t, mask=t < seqlen, other=0.0)
    Ct = tl.load(C_ptr + t, mask=t < seqlen, other=0.0)
    Dd = tl.load(D_ptr + d, mask=d_ok, other=0.0)
    h0 = tl.load(h0_ptr + d, mask=d_ok, other=0.0)
    decay = tl.exp(dt * A[:, None])
    inject = dt * Bt[None, :] * x
    inject = tl.where(t[None, :] == 0, inject + decay * h0[:, None], inject)
    _, h = tl.associative_scan((decay, inject), 1, _linear_combine)
    y = h * Ct[None, :] + Dd[:, None] * x
    tl.store(y_ptr + offs, y, mask=ok)
    last = tl.sum(tl.where(t[None, :] == seqlen - 1, h, 0.0), axis=1)
    tl.store(h_last_ptr + d, last, mask=d_ok)
    # adjoint: g[t] = C[t] + exp(dt[t+1] A) g[t+1], scanned from the end
    next_decay = tl.exp(tl.load(dt_ptr + offs + 1, mask=ok & (t[None, :] + 1 < seqlen), other=0.0) * A[:, None])
    next_decay = tl.where(t[None, :] + 1 < seqlen, next_decay, 0.0)
    _, g = tl.associative_scan((next_decay, tl.where(ok, Ct[None, :] + 0.0 * x, 0.0)), 1, _linear_combine,
                               reverse=True)
    tl.store(grad_ptr + offs, g, mask=ok)


def check(rng):
    dim, seqlen = 11, 27
    x = rng.standard_normal((dim, seqlen)).astype(np.float32)
    dt = rng.uniform(0.01, 0.3, (dim, seqlen)).astype(np.float32)
    A = -rng.uniform(0.5, 2, dim).astype(np.float32)
    B = rng.standard_normal(seqlen).astype(np.float32)
    C = rng.standard_normal(seqlen).astype(np.float32)
    D = rng.standard_normal(dim).astype(np.float32)
    h0 = rng.standard_normal(dim).astype(np.float32)
    y = np.empty_like(x)
    h_last = np.empty(dim, np.float32)
    grad = np.empty_like(x)
    _scan_fwd[(tiles.cdiv(dim, 4),)](x, dt, A, B, C, D, h0, y, h_last, grad, dim, seqlen, BLOCK_D=4, BLOCK_T=32)
    h = h0.astype(np.float64)
    hs = np.empty((dim, seqlen))
    for t in range(seqlen):
        h = np.exp(dt[:, t] * A) * h + dt[:, t] * B[t] * x[:, t]
        hs[:, t] = h
    close(y, hs * C + D[:, None] * x, rtol=1e-4, atol=1e-5)
    close(h_last, hs[:, -1], rtol=1e-4, atol=1e-5)
    g = np.zeros(dim)
    gs = np.empty((dim, seqlen))
    for t in reversed(range(seqlen)):
        nxt = np.exp(dt[:, t + 1] * A) if t + 1 < seqlen else 0
        g = C[t] + nxt * g
        gs[:, t] = g
    close(grad, gs, rtol=1e-4, atol=1e-5)
