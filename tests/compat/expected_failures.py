# ruff: noqa: E501  (the reasons are the exact error messages)
"""Corpus cases that fail today, with the exact error each raises.

Keyed by kernel name, then backend ("*" = every backend).  The reasons are the
errors seen on the interpreter and on OpenCL (pocl); they come from missing
language/runtime surface that other branches are adding.  Remove an entry when
its case passes (the marks are strict, so a passing case fails the run).
"""

EXPECTED_FAILURES: dict[str, dict[str, str]] = {
    # OpenCL has no fp8 types yet (backends/opencl/__init__.py UNSUPPORTED_DTYPES).
    'vllm_per_token_group_quant_fp8': {
        'opencl': 'UnsupportedError: tests/compat/kernels/vllm_per_token_group_quant_fp8.py:15 in _group_quant: tests/compat/kernels/vllm_per_token_group_quant_fp8.py:19 in _group_quant: dtype float8e4nv is not supported on opencl; tests/compat/kernels/vllm_per_token_group_quant_fp8.py:26 in _group_quant: dtype float8e4nv is not supported on opencl; tests/compat/kernels/vllm_per_token_group_quant_fp8.py:27 in _group_quant: dtype float8e4nv is not supported on opencl',
    },
}

# Cases that fail in some runs only (a race being fixed): not strict.
INTERMITTENT_FAILURES: dict[str, dict[str, str]] = {}
