"""vLLM ``merge_attn_states`` (cascade / chunked-prefill merge of two partial attention results by
their log-sum-exps) and SGLang's ``merge_state`` (the same merge with base-2 LSEs, as FlashInfer
keeps them).  vLLM's form maps an LSE of ``+inf`` (FA3's "empty" marker) to ``-inf`` with a
conditional expression on a loaded scalar (``float('-inf') if lse == float('inf') else lse``),
reads the grid size with ``tl.num_programs`` to index the [heads, tokens] LSE tensor, pads the head
dimension to a power of two (``PADDED_HEAD_SIZE``) with a mask, and writes the merged LSE only when
``OUTPUT_LSE``.  SGLang's uses ``tl.exp2``/``tl.log2`` and bf16 values accumulated in fp32.  Edge
cases: one side empty (+inf or -inf LSE), both empty (NaN, as the kernel's arithmetic gives)."""

import numpy as np
from compat_harness import BF16, close

import tiles
import tiles.language as tl


@tiles.jit
def merge_attn_states_kernel(output, output_lse, prefix_output, prefix_lse, suffix_output, suffix_lse,
                             HEAD_SIZE: tl.constexpr, PADDED_HEAD_SIZE: tl.constexpr, OUTPUT_LSE: tl.constexpr):
    token_idx = tl.program_id(0)
    num_tokens = tl.num_programs(0)
    head_idx = tl.program_id(1)
    num_heads = tl.num_programs(1)
    p_lse = tl.load(prefix_lse + head_idx * num_tokens + token_idx)
    s_lse = tl.load(suffix_lse + head_idx * num_tokens + token_idx)
    p_lse = float("-inf") if p_lse == float("inf") else p_lse
    s_lse = float("-inf") if s_lse == float("inf") else s_lse
    max_lse = tl.maximum(p_lse, s_lse)
    p_lse = p_lse - max_lse
    s_lse = s_lse - max_lse
    out_se = tl.exp(p_lse) + tl.exp(s_lse)
    if OUTPUT_LSE:
        out_lse = tl.log(out_se) + max_lse
        tl.store(output_lse + head_idx * num_tokens + token_idx, out_lse)
    head_arange = tl.arange(0, PADDED_HEAD_SIZE)
    head_mask = head_arange < HEAD_SIZE
    base = token_idx * num_heads * HEAD_SIZE + head_idx * HEAD_SIZE
    p_out = tl.load(prefix_output + base + head_arange, mask=head_mask)
    s_out = tl.load(suffix_output + base + head_arange, mask=head_mask)
    p_scale = tl.exp(p_lse) / out_se
    s_scale = tl.exp(s_lse) / out_se
    out = p_out * p_scale + s_out * s_scale
    tl.store(output + base + head_arange, out, mask=head_mask)


@tiles.jit
def merge_state_kernel(v_a_ptr, s_a_ptr, v_b_ptr, s_b_ptr, v_merged_ptr, s_merged_ptr, num_heads,
                       head_dim, BLOCK_SIZE: tl.constexpr):
    pos = tl.program_id(axis=0)
    for head_idx in range(num_heads):
        s_a = tl.load(s_a_ptr + pos * num_heads + head_idx)
        s_b = tl.load(s_b_ptr + pos * num_heads + head_idx)
        s_max = tl.maximum(s_a, s_b)
        s_a = s_a - s_max
        s_b = s_b - s_max
        s_a = tl.exp2(s_a)
        s_b = tl.exp2(s_b)
        s_sum = s_a + s_b
        tl.store(s_merged_ptr + pos * num_heads + head_idx, tl.log2(s_sum) + s_max)
        for i in range(0, head_dim, BLOCK_SIZE):
            offs = i + tl.arange(0, BLOCK_SIZE)
            m = offs < head_dim
            v_a = tl.load(v_a_ptr + (pos * num_heads + head_idx) * head_dim + offs, mask=m).to(tl.float32)
            v_b = tl.load(v_b_ptr + (pos * num_heads + head_idx) * head_dim + offs, mask=m).to(tl.float32)
            v_merged = (v_a * s_a + v_b * s_b) / s_sum
            tl.store(v_merged_ptr + (pos * num_heads + head_idx) * head_dim + offs,
                     v_merged.to(v_merged_ptr.dtype.element_ty), mask=m)


def _merge(pa, la, pb, lb, exp, log):
    la = np.where(la == np.inf, -np.inf, la)
    lb = np.where(lb == np.inf, -np.inf, lb)
    m = np.maximum(la, lb)
    with np.errstate(invalid="ignore", divide="ignore"):
        ea, eb = exp(la - m), exp(lb - m)
        se = ea + eb
        return pa * (ea / se)[..., None] + pb * (eb / se)[..., None], log(se) + m


def check(rng):
    T, H, D = 11, 3, 40
    po, so = (rng.standard_normal((T, H, D)).astype(np.float32) for _ in range(2))
    pl, sl = (rng.standard_normal((H, T)).astype(np.float32) * 3 for _ in range(2))
    pl[0, 0], pl[1, 2], sl[1, 3] = np.inf, -np.inf, np.inf
    pl[2, 4], sl[2, 4] = -np.inf, -np.inf
    pl[0, 5], sl[0, 5] = np.inf, np.inf
    for want_lse in (True, False):
        out = np.full((T, H, D), 7.0, np.float32)
        out_lse = np.full((H, T), 7.0, np.float32)
        merge_attn_states_kernel[(T, H)](out, out_lse if want_lse else None, po, pl, so, sl, HEAD_SIZE=D,
                                         PADDED_HEAD_SIZE=64, OUTPUT_LSE=want_lse)
        eo, el = _merge(po.astype(np.float64), pl.T.astype(np.float64), so.astype(np.float64),
                        sl.T.astype(np.float64), np.exp, np.log)
        close(out, eo, rtol=1e-5, atol=1e-5)
        assert np.isnan(out[4, 2]).all() and np.isnan(out[5, 0]).all()
        if want_lse:
            close(out_lse, el.T, rtol=1e-5, atol=1e-5)
        else:
            assert (out_lse == 7.0).all()
    # SGLang merge_state: base-2 lse, bf16 values
    N, Hs, Ds = 9, 2, 72
    va, vb = (rng.standard_normal((N, Hs, Ds)).astype(BF16) for _ in range(2))
    sa, sb = (rng.standard_normal((N, Hs)).astype(np.float32) * 4 for _ in range(2))
    sa[3, 1] = -np.inf
    vm = np.empty((N, Hs, Ds), BF16)
    sm = np.empty((N, Hs), np.float32)
    merge_state_kernel[(N,)](va, sa, vb, sb, vm, sm, Hs, Ds, BLOCK_SIZE=32)
    eo, el = _merge(va.astype(np.float64), sa.astype(np.float64), vb.astype(np.float64), sb.astype(np.float64),
                    np.exp2, np.log2)
    close(vm, eo, rtol=1e-2, atol=1e-2)
    close(sm, el, rtol=1e-5, atol=1e-5)
