"""The tiles command, run in-process."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiles import cli

KERNELS = Path(__file__).with_name("rt_kernels.py")


def run(capsys, *argv):
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_info_lists_version_and_backends(capsys):
    code, out, _ = run(capsys, "info")
    assert code == 0
    assert "tiles      0.1.0" in out
    assert "interpreter  available" in out
    for name in ("cuda", "opencl", "rocm"):
        assert f"  {name}" in out  # available or with the reason it is not


def test_dump_prints_the_requested_stage(capsys):
    code, out, _ = run(capsys, "dump", f"{KERNELS}:add_kernel", "--backend", "interpreter",
                       "--signature", "x_ptr=*fp32:16,y_ptr=*fp32,out_ptr=*fp32,n=i32",
                       "--constexpr", "BLOCK=256", "--stage", "ir")
    assert code == 0
    assert out.startswith("kernel add_kernel(")
    assert "ptr<float32> (div 16)" in out and "<256x" in out


def test_dump_with_positional_types(capsys):
    code, out, _ = run(capsys, "dump", f"{KERNELS}:copy_specialized", "--backend", "interpreter",
                       "--signature", "*fp16,*fp16,i64", "--constexpr", "BLOCK=8")
    assert code == 0 and "ptr<float16>" in out and "n: int64" in out


def test_dump_sees_through_autotune_and_heuristics(capsys):
    code, out, _ = run(capsys, "dump", f"{KERNELS.with_name('at_kernels.py')}:tuned_scale",
                       "--backend", "interpreter", "--signature", "*fp32,*fp32,i32",
                       "--constexpr", "BLOCK=16", "--constexpr", "EVEN=True")
    assert code == 0 and out.startswith("kernel scale_kernel(")


@pytest.mark.parametrize("argv, message", [
    (["--stage", "ptx"], "produced no stage 'ptx'; its stages: ir"),
    (["--signature", "x_ptr=*fp32"], "give a type for 'y_ptr'"),
    (["--constexpr", "BLOCK"], "NAME=VALUE"),
])
def test_dump_mistakes_are_reported(capsys, argv, message):
    base = ["dump", f"{KERNELS}:add_kernel", "--backend", "interpreter", "--signature",
            "*fp32,*fp32,*fp32,i32", "--constexpr", "BLOCK=8"]
    code, _, err = run(capsys, *base, *argv)
    assert code == 1 and message in err


def test_dump_unknown_kernel_and_file(capsys, tmp_path):
    code, _, err = run(capsys, "dump", f"{KERNELS}:nope")
    assert code == 1 and "no 'nope'" in err
    code, _, err = run(capsys, "dump", f"{tmp_path / 'missing.py'}:k")
    assert code == 1 and "no such file" in err


def test_bench_runs_the_script_as_main(capsys, tmp_path):
    script = tmp_path / "bench_me.py"
    script.write_text("import sys\nif __name__ == '__main__':\n    print('ran', sys.argv[1:])\n")
    code, out, _ = run(capsys, "bench", str(script), "--rows", "3")
    assert code == 0 and "ran ['--rows', '3']" in out


def test_conformance_forwards_its_arguments(capsys, monkeypatch):
    forwarded = []
    monkeypatch.setattr(cli, "run_conformance", lambda argv: forwarded.append(argv) or 7)
    assert cli.main(["conformance", "--backend", "opencl", "--help"]) == 7
    assert forwarded == [["--backend", "opencl", "--help"]]


@pytest.mark.parametrize("command", [[], ["info"], ["dump"], ["bench"]])
def test_help(capsys, command):
    with pytest.raises(SystemExit) as info:
        cli.main([*command, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "usage: tiles" in out
    if command == ["dump"]:
        assert "--signature" in out and "example:" in out
