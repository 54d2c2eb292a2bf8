"""``tl.rand*``: the Philox stream must match bit for bit; normals within math tolerance."""

from __future__ import annotations

import numpy as np

import tiles
import tiles.language as tl

from ..case import Case, case
from ..compare import EXACT, tol
from ..profiles import Profile


@tiles.jit
def random_kernel(out_ptr, seed, KIND: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if KIND == "randint":
        r = tl.randint(seed, offs)
    elif KIND == "rand":
        r = tl.rand(seed, offs)
    elif KIND == "randn":
        r = tl.randn(seed, offs)
    else:
        a, b, c, d = tl.randint4x(seed, offs)
        r = a ^ b ^ c ^ d
    tl.store(out_ptr + offs, r)


def cases(profile: Profile) -> list[Case]:
    out = []
    block = profile.shapes[-1]
    for kind, dtype, rule in (("randint", np.uint32, EXACT), ("rand", np.float32, EXACT),
                              ("randn", np.float32, tol(1e-5, 1e-5)), ("randint4x", np.uint32, EXACT)):
        for seed in (0, 123456789, 2**40 + 7):
            def make(rng, dtype=dtype, seed=seed):
                return [np.zeros(4 * block, dtype), seed]
            out.append(case("random", f"{kind}[seed={seed}]", random_kernel, make, (4,), {0: rule},
                            constexprs={"KIND": kind, "BLOCK": block}))
    return out
