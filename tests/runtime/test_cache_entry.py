"""Cache entries round-trip: the IR read back prints as the IR written, runs the same, and an
entry cannot make the reader import arbitrary code."""

from __future__ import annotations

import hashlib
import importlib.util
import pickle
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tiles
from tiles.core.printer import format_kernel
from tiles.runtime import cache
from tiles.runtime.cache_entry import decode

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("[0-9]*.py"))
# corpus kernels with loops, custom reductions and scans, dots, random streams
CORPUS = ["fla/chunk_scan_dot", "triton_language/associative_scan", "flaggems/topk",
          "triton_tutorials/tut06_fused_attention", "flaggems/dropout_philox", "liger/cross_entropy"]


def load_module(path: Path):
    spec = importlib.util.spec_from_file_location(f"cache_rt_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def renumbered(text: str) -> str:
    numbering: dict[str, str] = {}
    return re.sub(r"%\d+\b", lambda m: numbering.setdefault(m.group(), f"%v{len(numbering)}"), text)


def stored_entries(cache_dir: Path) -> list[Path]:
    return sorted((cache_dir / "kernels").rglob("*" + cache.KERNEL_SUFFIX))


def run_twice_and_compare(run, cache_dir: Path) -> None:
    cache.STATS.clear()
    run()
    paths = stored_entries(cache_dir)
    assert paths and cache.STATS["stores"] == len(paths), dict(cache.STATS)
    for path in paths:
        entry = decode(cache.read_entry(path))
        assert renumbered(format_kernel(entry.kernel)) == renumbered(entry.asm["ir"]), path
    cache.STATS.clear()
    run()  # fresh module, empty memory caches: every kernel comes from disk and is checked again
    assert dict(cache.STATS) == {"hits": len(paths)}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_kernels_round_trip_and_run_from_the_cache(path, private_cache_dir, monkeypatch, rng):
    seed, seeded = int(rng.integers(2**32)), np.random.default_rng
    monkeypatch.setattr(np.random, "default_rng", lambda *_: seeded(seed))  # both runs alike
    run_twice_and_compare(lambda: load_module(path).main(backend="interpreter"), private_cache_dir)


@pytest.mark.parametrize("name", CORPUS)
def test_corpus_kernels_round_trip_and_run_from_the_cache(name, private_cache_dir, monkeypatch, rng):
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "compat"))
    seed = int(rng.integers(2**32))
    path = ROOT / "tests" / "compat" / "kernels" / f"{name}.py"
    run_twice_and_compare(lambda: load_module(path).check(np.random.default_rng(seed)), private_cache_dir)


class _Evil:
    def __reduce__(self):
        return (print, ("an entry ran code",))


def test_an_entry_naming_other_code_is_refused_not_run(private_cache_dir, capsys):
    kernel = tiles.jit(load_module(ROOT / "examples" / "01_vector_add.py").add_kernel.fn)
    kernel.compile({"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32"},
                   {"BLOCK": 64}, backend="interpreter")
    [path] = stored_entries(private_cache_dir)
    payload = pickle.dumps({"version": 1, "key": path.stem, "kernel": _Evil(), "asm": {}})
    header = f"{cache.MAGIC} {cache.FORMAT} {hashlib.sha256(payload).hexdigest()} {len(payload)}\n"
    path.write_bytes(header.encode() + payload)
    cache.STATS.clear()
    with pytest.warns(cache.CacheWarning, match="may not name builtins.print"):
        kernel2 = tiles.jit(kernel.fn)
        kernel2.compile({"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32"},
                        {"BLOCK": 64}, backend="interpreter")
    assert "an entry ran code" not in capsys.readouterr().out
    assert cache.STATS["misses"] == 1 and decode(cache.read_entry(path)).key == path.stem
    sys.modules.pop("cache_rt_01_vector_add", None)
