"""Autotuning as real libraries drive it: ``prune_configs_by`` with an early-prune function that sees
the named arguments, ``reset_to_zero`` for an atomically accumulated output, ``restore_value`` for an
in-place update, a ``Config(pre_hook=)``, and ``warmup``/``rep``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl

SEEN = {}


def _prune(configs, named_args, **kwargs):
    SEEN["n"] = named_args["n"]
    return [c for c in configs if c.kwargs["BLOCK"] <= tiles.next_power_of_2(named_args["n"])]


def _hook(nargs):
    SEEN["hooked"] = SEEN.get("hooked", 0) + 1


@tiles.autotune(
    configs=[tiles.Config({"BLOCK": 32}, num_warps=1, pre_hook=_hook), tiles.Config({"BLOCK": 64}, num_warps=2),
             tiles.Config({"BLOCK": 4096}, num_warps=4)],
    key=["n"],
    prune_configs_by={"early_config_prune": _prune, "perf_model": None, "top_k": None},
    reset_to_zero=["total_ptr"],
    restore_value=["x_ptr"],
    warmup=1,
    rep=1,
)
@tiles.jit
def sum_and_scale_kernel(x_ptr, total_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.atomic_add(total_ptr, tl.sum(x, 0))
    tl.store(x_ptr + offs, x * 2.0, mask=mask)


def check(rng):
    n = 500
    x = rng.integers(-8, 8, n).astype(np.float32)
    original = x.copy()
    total = np.zeros(1, np.float32)
    grid = lambda meta: (tiles.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    sum_and_scale_kernel[grid](x, total, n)
    close(total, np.array([original.sum()], np.float32), rtol=0, atol=0)
    close(x, original * 2, rtol=0, atol=0)
    assert SEEN["n"] == n
    assert sum_and_scale_kernel.best_config.kwargs["BLOCK"] in (32, 64)
