"""Random-number kernels whose outputs pin tiles' streams to Triton's, bit for bit.

The same kernels are built with tiles (default) or with Triton
(``RANDOM_REFERENCE_IMPL=triton``).  Run with Triton's interpreter to print the
known answers kept in ``test_random_triton.py``::

    RANDOM_REFERENCE_IMPL=triton TRITON_INTERPRET=1 /tmp/tritonvenv/bin/python \\
        tests/language/random_reference.py

``python random_reference.py --json OFFSETS32 OFFSETS64 SEEDS`` (comma-separated)
prints every output for those inputs as JSON; the live test runs it under Triton.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

if os.environ.get("RANDOM_REFERENCE_IMPL") == "triton":
    import torch
    import triton as jit_module
    import triton.language as tl
else:
    import tiles as jit_module
    import tiles.language as tl

jit = jit_module.jit
N = 8  # offsets per case


@jit
def randint4x_kernel(out, offs, seed, N: tl.constexpr, ROUNDS: tl.constexpr):
    i = tl.arange(0, N)
    a, b, c, d = tl.randint4x(seed, tl.load(offs + i), ROUNDS)
    tl.store(out + i, a.to(tl.int32, bitcast=True))
    tl.store(out + N + i, b.to(tl.int32, bitcast=True))
    tl.store(out + 2 * N + i, c.to(tl.int32, bitcast=True))
    tl.store(out + 3 * N + i, d.to(tl.int32, bitcast=True))


@jit
def randint_const_seed_kernel(out, offs, N: tl.constexpr, SEED: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out + i, tl.randint(SEED, tl.load(offs + i)).to(tl.int32, bitcast=True))


@jit
def floats_kernel(out, offs, seed, N: tl.constexpr, ROUNDS: tl.constexpr):
    i = tl.arange(0, N)
    o = tl.load(offs + i)
    tl.store(out + i, tl.rand(seed, o, ROUNDS))
    tl.store(out + N + i, tl.randn(seed, o, ROUNDS))
    u1, u2, u3, u4 = tl.rand4x(seed, o, ROUNDS)
    n1, n2, n3, n4 = tl.randn4x(seed, o, ROUNDS)
    tl.store(out + 2 * N + i, u1)
    tl.store(out + 3 * N + i, u4)
    tl.store(out + 4 * N + i, n2)
    tl.store(out + 5 * N + i, n3)
    tl.store(out + 6 * N + i, tl.uint_to_uniform_float(o))


@jit
def philox_kernel(out, offs, seed, N: tl.constexpr, ROUNDS: tl.constexpr):
    i = tl.arange(0, N)
    o = tl.load(offs + i)
    a, b, c, d = tl.philox(seed, o, o * 3 + 1, ~o, o ^ 0x5A5A, ROUNDS)
    tl.store(out + i, a.to(o.dtype, bitcast=True))
    tl.store(out + N + i, b.to(o.dtype, bitcast=True))
    tl.store(out + 2 * N + i, c.to(o.dtype, bitcast=True))
    tl.store(out + 3 * N + i, d.to(o.dtype, bitcast=True))


def _launch(kernel, out: np.ndarray, offs: np.ndarray, *args, **kwargs) -> np.ndarray:
    if os.environ.get("RANDOM_REFERENCE_IMPL") == "triton":
        t_out, t_offs = torch.from_numpy(out), torch.from_numpy(offs)
        kernel[(1,)](t_out, t_offs, *args, **kwargs)
        return t_out.numpy()
    kernel[(1,)](out, offs, *args, **kwargs)
    return out


def _bits(a: np.ndarray) -> list[int]:
    return [int(v) for v in a.view(np.uint32 if a.itemsize == 4 else np.uint64)]


def outputs(offsets32: list[int], offsets64: list[int], seeds: list[int]) -> dict[str, list[int]]:
    """Every kernel's output bits for these offsets (N of each) and seeds, keyed by case name."""
    o32, o64 = np.array(offsets32, np.int32), np.array(offsets64, np.int64)
    result: dict[str, list[int]] = {}
    for seed in seeds:
        for rounds in (10, 7):
            for name, offs in (("i32", o32), ("i64", o64)):
                tag = f"seed={seed} rounds={rounds} {name}"
                result[f"randint4x {tag}"] = _bits(_launch(
                    randint4x_kernel, np.zeros(4 * N, np.int32), offs, seed, N=N, ROUNDS=rounds))
                result[f"floats {tag}"] = _bits(_launch(
                    floats_kernel, np.zeros(7 * N, np.float32), offs, seed, N=N, ROUNDS=rounds))
                result[f"philox {tag}"] = _bits(_launch(
                    philox_kernel, np.zeros(4 * N, offs.dtype), offs, seed, N=N, ROUNDS=rounds))
        result[f"randint constexpr seed={seed}"] = _bits(_launch(
            randint_const_seed_kernel, np.zeros(N, np.int32), o32, N=N, SEED=seed))
    return result


# Inputs of the known answers: edge offsets (0, -1, int min/max, beyond 2**32) and
# seeds that exercise the key's high word, a negative seed and a 64-bit seed.
KNOWN_OFFSETS32 = [0, 1, -1, 12345, 2**31 - 1, -(2**31), 7, 1000003]
KNOWN_OFFSETS64 = [0, 2**32, -1, 2**40 + 5, 2**63 - 1, -(2**63), 3 * 2**33 + 17, 99]
KNOWN_SEEDS = [0, 42, -7, 2**33 + 11]


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--json":
        def ints(text: str) -> list[int]:
            return [int(v) for v in text.split(",")]
        print(json.dumps(outputs(ints(sys.argv[2]), ints(sys.argv[3]), ints(sys.argv[4]))))
    else:
        answers = outputs(KNOWN_OFFSETS32, KNOWN_OFFSETS64, KNOWN_SEEDS)
        print("KNOWN = {")
        for key, value in answers.items():
            print(f"    {key!r}: [{', '.join(hex(v) for v in value)}],")
        print("}")
