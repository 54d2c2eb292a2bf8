"""vLLM / causal-conv1d style decode step of a depthwise causal convolution (Mamba's conv1d):
each sequence brings ``seqlen`` new tokens, its rolling state is found through a continuous-batching
index table whose pad slot (-1) makes the program ``return`` early, as does a program past the
batch (``batch: int`` annotated argument).  The state columns are bound under a chain of
``if KERNEL_WIDTH >= k:`` constexpr branches, then rebound inside ``tl.static_range`` loops by
``if KERNEL_WIDTH == w: ... elif`` on the loop index; the state is shifted with two masked 2-D
loads merged by ``tl.where`` (``tl.debug_barrier`` between reading and rewriting it), and a SiLU
is applied under a constexpr flag.  Run for kernel widths 4 and 3, with and without bias."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl

PAD_SLOT_ID = -1


@tiles.jit
def _causal_conv1d_update_kernel(x_ptr, w_ptr, bias_ptr, conv_state_ptr, conv_state_indices_ptr, o_ptr,
                                 batch: int, dim: tl.constexpr, seqlen: tl.int32, state_len: tl.constexpr,
                                 stride_x_seq, stride_x_dim: tl.constexpr, stride_x_token: tl.constexpr,
                                 stride_w_dim: tl.constexpr, stride_w_width: tl.constexpr,
                                 stride_state_seq, stride_state_dim: tl.constexpr, stride_state_tok: tl.constexpr,
                                 stride_o_seq, stride_o_dim: tl.constexpr, stride_o_token: tl.constexpr,
                                 pad_slot_id: tl.constexpr, HAS_BIAS: tl.constexpr, KERNEL_WIDTH: tl.constexpr,
                                 SILU_ACTIVATION: tl.constexpr, USE_PAD_SLOT: tl.constexpr,
                                 NP2_STATELEN: tl.constexpr, NP2_SEQLEN: tl.constexpr, BLOCK_N: tl.constexpr):
    idx_seq = tl.program_id(0)
    if idx_seq >= batch:
        return
    idx_feats = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    coord = tl.load(conv_state_indices_ptr + idx_seq).to(tl.int64)
    if USE_PAD_SLOT:
        if coord == pad_slot_id:
            return
    mask_w = idx_feats < dim
    state_base = conv_state_ptr + coord * stride_state_seq + idx_feats * stride_state_dim
    if KERNEL_WIDTH >= 2:
        col0 = tl.load(state_base + (state_len - KERNEL_WIDTH + 1) * stride_state_tok, mask_w, 0.0)
    if KERNEL_WIDTH >= 3:
        col1 = tl.load(state_base + (state_len - KERNEL_WIDTH + 2) * stride_state_tok, mask_w, 0.0)
    if KERNEL_WIDTH >= 4:
        col2 = tl.load(state_base + (state_len - KERNEL_WIDTH + 3) * stride_state_tok, mask_w, 0.0)

    # the state keeps the last state_len inputs: old columns shifted left by seqlen, then the new tokens
    x_base = x_ptr + idx_seq * stride_x_seq + idx_feats * stride_x_dim
    cols = tl.arange(0, NP2_STATELEN)
    from_old = (cols + seqlen < state_len)[None, :]
    old = tl.load(state_base[:, None] + (cols + seqlen)[None, :] * stride_state_tok,
                  mask=mask_w[:, None] & from_old, other=0.0)
    new_tok = cols + seqlen - state_len
    new = tl.load(x_base[:, None] + new_tok[None, :] * stride_x_token,
                  mask=mask_w[:, None] & ~from_old & (new_tok >= 0)[None, :] & (cols < state_len)[None, :],
                  other=0.0)
    tl.debug_barrier()
    tl.store(state_base[:, None] + cols[None, :] * stride_state_tok, tl.where(from_old, old, new),
             mask=mask_w[:, None] & (cols < state_len)[None, :])

    w_base = w_ptr + idx_feats * stride_w_dim
    w_col0 = tl.load(w_base, mask_w, other=0.0)
    w_col1 = tl.load(w_base + 1 * stride_w_width, mask_w, other=0.0)
    if KERNEL_WIDTH >= 3:
        w_col2 = tl.load(w_base + 2 * stride_w_width, mask_w, other=0.0)
    if KERNEL_WIDTH >= 4:
        w_col3 = tl.load(w_base + 3 * stride_w_width, mask_w, other=0.0)
    if HAS_BIAS:
        bias = tl.load(bias_ptr + idx_feats, mask=mask_w, other=0.0).to(tl.float32)
    else:
        bias = tl.zeros((BLOCK_N,), dtype=tl.float32)

    for idx_token in tl.static_range(NP2_SEQLEN):
        acc = bias
        matrix_w = w_col0
        matrix_x = col0
        for j in tl.static_range(KERNEL_WIDTH):
            if KERNEL_WIDTH == 3:
                if j == 1:
                    matrix_w = w_col1
                    matrix_x = col1
                elif j == 2:
                    matrix_w = w_col2
                    matrix_x = tl.load(x_base + idx_token * stride_x_token, mask=mask_w & (idx_token < seqlen))
            elif KERNEL_WIDTH == 4:
                if j == 1:
                    matrix_w = w_col1
                    matrix_x = col1
                elif j == 2:
                    matrix_w = w_col2
                    matrix_x = col2
                elif j == 3:
                    matrix_w = w_col3
                    matrix_x = tl.load(x_base + idx_token * stride_x_token, mask=mask_w & (idx_token < seqlen))
            acc += matrix_x * matrix_w
        if KERNEL_WIDTH == 3:
            col0 = col1
            col1 = matrix_x
        elif KERNEL_WIDTH == 4:
            col0 = col1
            col1 = col2
            col2 = matrix_x
        if SILU_ACTIVATION:
            acc = acc / (1 + tl.exp(-acc))
        tl.store(o_ptr + idx_seq * stride_o_seq + idx_feats * stride_o_dim + idx_token * stride_o_token, acc,
                 mask=mask_w & (idx_token < seqlen))


def causal_conv1d_update(x, conv_state, weight, bias, silu, indices, batch_programs):
    batch, dim, seqlen = x.shape
    width = weight.shape[1]
    state_len = conv_state.shape[2]
    out = np.full_like(x, 7.0)
    grid = (batch_programs, tiles.cdiv(dim, 32))
    st = [s // 4 for s in conv_state.strides]
    _causal_conv1d_update_kernel[grid](
        x, weight, bias, conv_state, indices, out, batch, dim, seqlen, state_len,
        x.strides[0] // 4, x.strides[1] // 4, x.strides[2] // 4, weight.strides[0] // 4, weight.strides[1] // 4,
        st[0], st[1], st[2], out.strides[0] // 4, out.strides[1] // 4, out.strides[2] // 4, PAD_SLOT_ID,
        HAS_BIAS=bias is not None, KERNEL_WIDTH=width, SILU_ACTIVATION=silu, USE_PAD_SLOT=True,
        NP2_STATELEN=tiles.next_power_of_2(state_len), NP2_SEQLEN=tiles.next_power_of_2(seqlen), BLOCK_N=32)
    return out


def _reference(x, state, weight, bias, silu, indices):
    out = np.full_like(x, 7.0)
    state = state.astype(np.float64).copy()
    width = weight.shape[1]
    for b, line in enumerate(indices):
        if line == PAD_SLOT_ID:
            continue
        window = np.concatenate([state[line], x[b].astype(np.float64)], axis=1)
        for t in range(x.shape[2]):
            seg = window[:, state.shape[2] - width + 1 + t: state.shape[2] + 1 + t]
            acc = (seg * weight).sum(1) + (0.0 if bias is None else bias)
            out[b, :, t] = acc / (1 + np.exp(-acc)) if silu else acc
        state[line] = window[:, -state.shape[2]:]
    return out, state


def check(rng):
    batch, dim, seqlen = 5, 77, 3
    for width, with_bias, silu in ((4, True, True), (3, False, False)):
        state_len = width - 1 + 2  # cache lines longer than the kernel needs (vLLM's larger lines)
        x = rng.standard_normal((batch, dim, seqlen)).astype(np.float32)
        weight = rng.standard_normal((dim, width)).astype(np.float32)
        bias = rng.standard_normal(dim).astype(np.float32) if with_bias else None
        conv_state = rng.standard_normal((batch + 3, dim, state_len)).astype(np.float32)
        indices = np.array([6, PAD_SLOT_ID, 0, 3, 7], np.int32)
        out_ref, state_ref = _reference(x, conv_state, weight, bias, silu, indices)
        out = causal_conv1d_update(x, conv_state, weight, bias, silu, indices, batch_programs=batch + 2)
        close(out, out_ref, rtol=1e-5, atol=1e-5)
        close(conv_state, state_ref, rtol=0, atol=0)
