"""``tiles.profiler`` (proton's calls, timed on the host) and its viewer."""

import json

import numpy as np
import pytest

import tiles
import tiles.language as tl
import tiles.profiler as proton
import tiles.profiler.viewer as proton_viewer


@tiles.jit
def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def test_scopes_count_time_and_sum_metrics(tmp_path, monkeypatch, rng, capsys):
    monkeypatch.chdir(tmp_path)
    x = rng.standard_normal(100).astype(np.float32)
    out = np.zeros_like(x)
    session = proton.start("run", hook="triton")
    proton.deactivate(session)
    with proton.scope("ignored"):  # not recorded while deactivated
        pass
    proton.activate(session)
    for _ in range(3):
        with proton.scope("double", {"bytes": 2 * x.nbytes, "flops32": x.size}):
            double[(1,)](x, out, 100, BLOCK=128)

    @proton.scope("decorated")
    def twice():
        return 2
    assert twice() == 2
    proton.finalize()
    np.testing.assert_array_equal(out, 2 * x)

    [root] = json.loads((tmp_path / "run.hatchet").read_text())
    names = [c["frame"]["name"] for c in root["children"]]
    assert names == ["double", "decorated"]
    metrics = root["children"][0]["metrics"]
    assert metrics["count"] == 3 and metrics["time (ns)"] > 0
    assert metrics["bytes"] == 3 * 2 * x.nbytes and metrics["flops32"] == 3 * x.size

    tree, shown = proton_viewer.parse(["time/ms", "gbyte/s", "gflop32/s"], "run.hatchet")
    node = tree[0]["children"][0]
    ms = node["derived"]["time/ms"]
    assert ms == pytest.approx(metrics["time (ns)"] / 3 * 1e-6)
    assert node["derived"]["gbyte/s"] == pytest.approx(2 * x.nbytes / (ms * 1e-3) / 1e9)
    proton_viewer.print_tree(tree, shown)
    assert "double" in capsys.readouterr().out


def test_unknown_session_and_metric_say_what_exists(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="no session 41"):
        proton.activate(41)
    proton.start("m")
    with proton.scope("s"):
        pass
    proton.finalize()
    with pytest.raises(ValueError, match="unknown metric 'speed'.*time/ms"):
        proton_viewer.parse(["speed"], "m.hatchet")
