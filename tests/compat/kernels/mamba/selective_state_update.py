"""mamba style selective state update (one decode step of an SSM): four stacked ``heuristics``
deciding optional pointers from ``None`` arguments, string annotations ``'tl.constexpr'``, a 3-D
grid (dim blocks, batch, heads), grouped B/C shared by ``nheads // ngroups`` heads, softplus through
``tl.math.log(tl.math.exp(..) + 1)`` and a state tile read, decayed and written back in place."""

import numpy as np
from compat_harness import close, stride

import tiles
import tiles.language as tl


@tiles.jit
def _softplus(dt):
    return tl.where(dt <= 20.0, tl.math.log(tl.math.exp(dt) + 1), dt)


@tiles.heuristics({"HAS_BIAS": lambda args: args["bias_ptr"] is not None})
@tiles.heuristics({"HAS_SKIP": lambda args: args["skip_ptr"] is not None})
@tiles.heuristics({"HAS_GATE": lambda args: args["gate_ptr"] is not None})
@tiles.heuristics({"BLOCK_N": lambda args: tiles.next_power_of_2(args["dstate"])})
@tiles.jit
def _ssm_step(state_ptr, x_ptr, dt_ptr, bias_ptr, A_ptr, B_ptr, C_ptr, skip_ptr, gate_ptr, out_ptr,
              dim, dstate, heads_per_group,
              s_state_b, s_state_h, s_state_d, s_x_b, s_x_h, s_dt_b, s_dt_h, s_A_h, s_A_d,
              s_B_b, s_B_g, s_out_b, s_out_h,
              SOFTPLUS: 'tl.constexpr', BLOCK_M: 'tl.constexpr', HAS_BIAS: 'tl.constexpr',
              HAS_SKIP: 'tl.constexpr', HAS_GATE: 'tl.constexpr', BLOCK_N: 'tl.constexpr'):
    pid_m = tl.program_id(axis=0)
    b = tl.program_id(axis=1)
    h = tl.program_id(axis=2)
    state_ptr += b * s_state_b + h * s_state_h
    x_ptr += b * s_x_b + h * s_x_h
    dt_ptr += b * s_dt_b + h * s_dt_h
    A_ptr += h * s_A_h
    group = h // heads_per_group
    B_ptr += b * s_B_b + group * s_B_g
    C_ptr += b * s_B_b + group * s_B_g
    out_ptr += b * s_out_b + h * s_out_h
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    row_ok = rows < dim
    col_ok = cols < dstate
    tile_ok = row_ok[:, None] & col_ok[None, :]
    state_ptrs = state_ptr + rows[:, None] * s_state_d + cols[None, :]
    state = tl.load(state_ptrs, mask=tile_ok, other=0.0)
    x = tl.load(x_ptr + rows, mask=row_ok, other=0.0).to(tl.float32)
    dt = tl.load(dt_ptr + rows, mask=row_ok, other=0.0).to(tl.float32)
    if HAS_BIAS:
        dt += tl.load(bias_ptr + h * dim + rows, mask=row_ok, other=0.0).to(tl.float32)
    if SOFTPLUS:
        dt = _softplus(dt)
    A = tl.load(A_ptr + rows[:, None] * s_A_d + cols[None, :], mask=tile_ok, other=0.0).to(tl.float32)
    decay = tl.exp(A * dt[:, None])
    Bv = tl.load(B_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    Cv = tl.load(C_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    state = state * decay + Bv[None, :] * (x * dt)[:, None]
    tl.store(state_ptrs, state, mask=tile_ok)
    out = tl.sum(state * Cv[None, :], axis=1)
    if HAS_SKIP:
        out += x * tl.load(skip_ptr + h * dim + rows, mask=row_ok, other=0.0).to(tl.float32)
    if HAS_GATE:
        z = tl.load(gate_ptr + b * s_x_b + h * s_x_h + rows, mask=row_ok, other=0.0).to(tl.float32)
        out *= z * tl.sigmoid(z)
    tl.store(out_ptr + rows, out, mask=row_ok)


def _reference(state, x, dt, bias, A, B, C, skip, gate, softplus, heads_per_group):
    dt = dt + (bias[None] if bias is not None else 0)
    if softplus:
        dt = np.where(dt <= 20, np.log1p(np.exp(np.minimum(dt, 20))), dt)
    Bh = np.repeat(B, heads_per_group, axis=1)
    Ch = np.repeat(C, heads_per_group, axis=1)
    new = state * np.exp(A[None] * dt[..., None]) + Bh[:, :, None, :] * (x * dt)[..., None]
    out = (new * Ch[:, :, None, :]).sum(-1)
    if skip is not None:
        out = out + x * skip[None]
    if gate is not None:
        out = out * gate / (1 + np.exp(-gate))
    return new, out


def _step(rng, batch, heads, groups, dim, dstate, with_optionals, softplus):
    f32 = np.float32
    state = rng.standard_normal((batch, heads, dim, dstate)).astype(f32)
    x = rng.standard_normal((batch, heads, dim)).astype(f32)
    dt = (rng.standard_normal((batch, heads, dim)) * 2).astype(f32)
    dt[0, 0, :3] = [25.0, 20.0, -30.0]
    A = -rng.uniform(0.1, 1.0, (heads, dim, dstate)).astype(f32)
    B = rng.standard_normal((batch, groups, dstate)).astype(f32)
    C = rng.standard_normal((batch, groups, dstate)).astype(f32)
    bias = rng.standard_normal((heads, dim)).astype(f32) if with_optionals else None
    skip = rng.standard_normal((heads, dim)).astype(f32) if with_optionals else None
    gate = rng.standard_normal((batch, heads, dim)).astype(f32) if with_optionals else None
    out = np.empty_like(x)
    expected_state, expected_out = _reference(state.copy(), x, dt, bias, A, B, C, skip, gate, softplus,
                                              heads // groups)
    block_m = 8

    def grid(meta):
        return (tiles.cdiv(dim, meta["BLOCK_M"]), batch, heads)

    _ssm_step[grid](state, x, dt, bias, A, B, C, skip, gate, out, dim, dstate, heads // groups,
                    stride(state, 0), stride(state, 1), stride(state, 2), stride(x, 0), stride(x, 1),
                    stride(dt, 0), stride(dt, 1), stride(A, 0), stride(A, 1), stride(B, 0), stride(B, 1),
                    stride(out, 0), stride(out, 1), SOFTPLUS=softplus, BLOCK_M=block_m)
    close(state, expected_state, rtol=1e-4, atol=1e-5)
    close(out, expected_out, rtol=1e-4, atol=1e-4)


def check(rng):
    _step(rng, batch=2, heads=4, groups=2, dim=13, dstate=10, with_optionals=True, softplus=True)
    _step(rng, batch=1, heads=3, groups=1, dim=9, dstate=5, with_optionals=False, softplus=False)
