"""Autotuned and heuristic kernels for test_autotune (each test module gets fresh tuning state)."""

import rt_kernels as kernels

import tiles

BLOCKS = (16, 32, 64)


def make_tuned_add(blocks=BLOCKS, **options):
    return tiles.autotune([tiles.Config({"BLOCK": b}, num_warps=4) for b in blocks], key=["n"],
                          warmup=1, rep=2, **options)(kernels.add_kernel)


def make_tuned_sum(**options):
    return tiles.autotune([tiles.Config({"BLOCK": b}) for b in BLOCKS], key=["n"], warmup=1, rep=2,
                          **options)(kernels.sum_kernel)


def make_tuned_increment(**options):
    return tiles.autotune([tiles.Config({"BLOCK": b}) for b in BLOCKS], key=["n"], warmup=1, rep=2,
                          **options)(kernels.increment_kernel)


def make_tuned_scale(kernel=kernels.scale_kernel):
    with_heuristics = tiles.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(kernel)
    return tiles.autotune([tiles.Config({"BLOCK": b}) for b in BLOCKS], key=["n"], warmup=1, rep=2)(
        with_heuristics)


tuned_scale = make_tuned_scale()
