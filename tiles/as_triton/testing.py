"""``triton.testing`` in the compatibility mode: ``tiles.testing`` and the NVIDIA helpers
(``nvsmi``, ``get_dram_gbps``, ``get_max_tensorcore_tflops``, ``get_max_simd_tflops``) that libraries
import from it (cut-cross-entropy does, at import time), from ``tiles.runtime.gpu_model``."""

from ..runtime.gpu_model import get_dram_gbps, get_max_simd_tflops, get_max_tensorcore_tflops, nvsmi
from ..testing import Benchmark, Mark, assert_close, do_bench, do_bench_cudagraph, perf_report

__all__ = ["Benchmark", "Mark", "assert_close", "do_bench", "do_bench_cudagraph", "get_dram_gbps",
           "get_max_simd_tflops", "get_max_tensorcore_tflops", "nvsmi", "perf_report"]
