"""TILES_DUMP: known stages are printed to stderr; an unknown name is an error that lists the known ones."""

from __future__ import annotations

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles import config


def fresh_kernel():
    @tiles.jit
    def negate(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, -tl.load(x_ptr + offs))
    return negate


def test_a_known_stage_is_printed(monkeypatch, capsys, rng):
    monkeypatch.setenv("TILES_DUMP", "ir")
    x = rng.standard_normal(8).astype(np.float32)
    out = np.empty_like(x)
    fresh_kernel()[(1,)](x, out, BLOCK=8)
    np.testing.assert_array_equal(out, -x)
    err = capsys.readouterr().err
    assert "// ---- negate: ir\nkernel negate(" in err


def test_an_unknown_stage_is_an_error_listing_the_known_ones(monkeypatch, rng):
    monkeypatch.setenv("TILES_DUMP", "ir, ptxx")
    x = rng.standard_normal(8).astype(np.float32)
    with pytest.raises(ValueError) as info:
        fresh_kernel()[(1,)](x, np.empty_like(x), BLOCK=8)
    message = str(info.value)
    assert message.startswith("TILES_DUMP='ir, ptxx': no stage called 'ptxx'; known stages: "
                              "ir, opencl, binary, llir, ptx, amdgcn, hsaco")
    assert "separated by commas" in message


def test_a_backends_own_stage_names_are_accepted(monkeypatch):
    monkeypatch.setenv("TILES_DUMP", "ir,spirv")
    assert config.dump_stages(produced=["ir", "spirv"]) == {"ir", "spirv"}
    with pytest.raises(ValueError, match="no stage called 'spirv'"):
        config.dump_stages()
    monkeypatch.setenv("TILES_DUMP", "")
    assert config.dump_stages() == set()
