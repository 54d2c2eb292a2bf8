"""The ``tiles`` command: ``info``, ``dump``, ``bench``, ``conformance``."""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import platform
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DUMP_EXAMPLE = ("tiles dump kernels.py:add_kernel --backend interpreter "
                "--signature 'x=*fp32,y=*fp32,out=*fp32,n=i32' --constexpr BLOCK=1024 --stage ir")


class CommandError(Exception):
    """A mistake in the command line or its inputs; printed without a traceback."""


# ---------------------------------------------------------------- info


def _versions() -> list[tuple[str, str]]:
    from importlib.metadata import PackageNotFoundError, version

    from . import __version__
    found = [("tiles", __version__), ("python", platform.python_version())]
    for package in ("numpy", "llvmlite", "ml_dtypes", "pyopencl", "pycuda", "torch"):
        try:
            found.append((package, version(package)))
        except PackageNotFoundError:
            continue
    return found


def _devices(backend: Any) -> str:
    describe = getattr(backend, "devices", None)
    if callable(describe):
        try:
            return ", ".join(str(d) for d in describe())
        except Exception as e:
            return f"(could not list devices: {e})"
    try:
        target = backend.target()
    except Exception:
        return ""
    return target.arch


def cmd_info(args: argparse.Namespace) -> int:
    from .backends import registry
    for name, value in _versions():
        print(f"{name:10} {value}")
    print("backends:")
    try:
        default = registry.default().name
    except Exception:
        default = ""
    for name in registry.known():
        try:
            ok, why = registry.status(name)
        except Exception as e:  # a broken backend module must not hide the others
            ok, why = False, f"failed to load: {type(e).__name__}: {e}"
        mark = " (default)" if name == default else ""
        if ok:
            devices = _devices(registry.get(name))
            print(f"  {name:12} available{mark}" + (f"; devices: {devices}" if devices else ""))
        else:
            print(f"  {name:12} unavailable: {why}")
    return 0


# ---------------------------------------------------------------- dump


def load_script(path: str) -> Any:
    """Import a kernel file as a module (its folder goes on sys.path for sibling imports)."""
    file = Path(path).resolve()
    if not file.is_file():
        raise CommandError(f"no such file: {path}")
    name = f"tiles_cli_{file.stem}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise CommandError(f"cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(file.parent))
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def parse_signature(text: str, param_names: Sequence[str]) -> dict[str | int, str]:
    """``"x=*fp32,n=i32"`` by name, or ``"*fp32,i32"`` in the order of ``param_names``."""
    signature: dict[str | int, str] = {}
    positional = iter(param_names)
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        name, eq, type_text = item.partition("=")
        if eq:
            signature[name.strip()] = type_text.strip()
        else:
            try:
                signature[next(positional)] = item
            except StopIteration:
                raise CommandError(f"--signature has more types than the kernel has "
                                   f"run-time parameters ({', '.join(param_names)})") from None
    return signature


def parse_constexpr(items: Sequence[str]) -> dict[str | int, Any]:
    """``["BLOCK=1024", "DTYPE=tl.float16"]`` -> values (Python literals, ``tl.`` names or text)."""
    import tiles.language as tl
    values: dict[str | int, Any] = {}
    for item in items:
        name, eq, text = item.partition("=")
        if not eq:
            raise CommandError(f"--constexpr takes NAME=VALUE, got {item!r}")
        text = text.strip()
        if text.startswith("tl.") and hasattr(tl, text[3:]):
            values[name.strip()] = getattr(tl, text[3:])
            continue
        try:
            values[name.strip()] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            values[name.strip()] = text
    return values


def cmd_dump(args: argparse.Namespace) -> int:
    from .runtime.heuristics import unwrap
    file, sep, kernel_name = args.target.rpartition(":")
    if not sep or not file:
        raise CommandError(f"expected FILE.py:KERNEL, got {args.target!r}")
    module = load_script(file)
    if not hasattr(module, kernel_name):
        raise CommandError(f"{file} defines no {kernel_name!r}")
    try:
        kernel = unwrap(getattr(module, kernel_name))
    except TypeError as e:
        raise CommandError(str(e)) from None
    runtime_params = [n for n in kernel.arg_names if n not in kernel.constexprs]
    signature = parse_signature(args.signature or "", runtime_params)
    compiled = kernel.compile(signature, parse_constexpr(args.constexpr), backend=args.backend,
                              num_warps=args.num_warps, num_stages=args.num_stages)
    stage = args.stage
    if stage not in compiled.asm:
        raise CommandError(f"backend {args.backend or 'default'} produced no stage {stage!r}; "
                           f"its stages: {', '.join(compiled.asm)}")
    value = compiled.asm[stage]
    if isinstance(value, bytes):
        sys.stdout.buffer.write(value)
    else:
        print(value)
    return 0


# ---------------------------------------------------------------- bench and conformance


def split_backend(script_args: Sequence[str]) -> tuple[str | None, list[str]]:
    """Take ``--backend NAME`` / ``--backend=NAME`` out of the script's arguments (those after a
    ``--`` all stay the script's)."""
    backend, rest = None, []
    args = list(script_args)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest.extend(args[i + 1:])
            break
        if arg == "--backend":
            if i + 1 >= len(args):
                raise CommandError("--backend needs a backend name")
            backend, i = args[i + 1], i + 2
            continue
        if arg.startswith("--backend="):
            backend = arg.partition("=")[2]
        else:
            rest.append(arg)
        i += 1
    return backend, rest


def cmd_bench(args: argparse.Namespace) -> int:
    from .backends import registry
    from .backends.choice import AUTO
    backend, script_args = split_backend(args.script_args)
    backend = backend or args.backend
    path = Path(args.script)
    if not path.is_file():
        raise CommandError(f"no such file: {args.script}")
    if backend == AUTO:
        backend = None
    if backend:
        ok, why = registry.status(backend)
        if not ok:
            raise CommandError(f"the {backend} backend is not available here: {why}")
    saved = sys.argv, os.environ.get("TILES_BACKEND")
    sys.argv = [str(path), *script_args]
    sys.path.insert(0, str(path.resolve().parent))
    try:
        if backend:  # the script's launches without backend= go there; so do its subprocesses
            os.environ["TILES_BACKEND"] = backend
            registry.set_backend(backend)
        print(f"tiles bench: {path.name} runs on the {backend or registry.default().name} backend"
              + ("" if backend else " (the default here; choose one with --backend NAME)"), file=sys.stderr)
        runpy.run_path(str(path), run_name="__main__")
    finally:
        sys.argv = saved[0]
        if saved[1] is None:
            os.environ.pop("TILES_BACKEND", None)
        else:
            os.environ["TILES_BACKEND"] = saved[1]
        if backend:
            registry.set_backend(None)
    return 0


def run_conformance(argv: Sequence[str]) -> int:
    from .conformance.__main__ import main as conformance_main  # the suite, imported only when run
    try:
        return conformance_main(list(argv))
    except SystemExit as e:  # --help, argparse's errors
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)


# ---------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tiles", description="tiles: Triton's tile language in pure Python.",
        epilog="Environment variables (TILES_BACKEND, TILES_DUMP, TILES_CACHE_DIR...) are listed in "
               "tiles/config.py.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    info = sub.add_parser("info", help="versions, backends (available or why not), devices",
                          description="Print the tiles version, each backend with whether it can run "
                                      "here (and why not), and the devices backends report.")
    info.set_defaults(handler=cmd_info)

    dump = sub.add_parser("dump", help="print one compile stage of a kernel, without launching it",
                          description="Compile a kernel for a signature and print one stage. "
                                      "No arrays and, where the toolchain allows, no device needed.",
                          epilog=f"example: {DUMP_EXAMPLE}")
    dump.add_argument("target", metavar="FILE.py:KERNEL", help="the file and the @tiles.jit kernel in it")
    dump.add_argument("--backend", help="backend name (default: TILES_BACKEND or the best available)")
    dump.add_argument("--signature", default="",
                      help="run-time parameter types: 'x=*fp32,n=i32' or in order '*fp32,i32'; "
                           "':16' after a type promises divisibility by 16")
    dump.add_argument("--constexpr", action="append", default=[], metavar="NAME=VALUE",
                      help="a constexpr value (Python literal or tl.<dtype>); repeat for several")
    dump.add_argument("--stage", default="ir",
                      help="stage to print: ir, or a backend stage (opencl, llir, ptx, amdgcn...)")
    dump.add_argument("--num-warps", type=int, default=4)
    dump.add_argument("--num-stages", type=int, default=3)
    dump.set_defaults(handler=cmd_dump)

    bench = sub.add_parser("bench", help="run a benchmark script",
                           description="Run a benchmark script as __main__ (for example one using "
                                       "tiles.testing.perf_report).  --backend, before or after the "
                                       "script, is tiles': it sets TILES_BACKEND for the script's "
                                       "kernels; every argument after `--` goes to the script.",
                           epilog="example: tiles bench examples/03_matmul.py --backend opencl -- --m 64")
    bench.add_argument("script", metavar="FILE.py")
    bench.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    bench.add_argument("--backend", help="run its kernels on this backend: interpreter, opencl, cuda, "
                                         "rocm, a third-party name, or auto (sets TILES_BACKEND)")
    bench.set_defaults(handler=cmd_bench)

    conformance = sub.add_parser("conformance", help="run the conformance suite (python -m conformance)",
                                 description="Forward every argument to `python -m conformance`, "
                                             "e.g. `tiles conformance --backend opencl`.",
                                 add_help=False)
    conformance.add_argument("conformance_args", nargs=argparse.REMAINDER)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from .core.errors import TilesError
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["conformance"]:  # every later argument belongs to the suite, --help included
        try:
            return run_conformance(argv[1:])
        except CommandError as e:
            print(f"tiles conformance: error: {e}", file=sys.stderr)
            return 1
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except (CommandError, TilesError) as e:
        print(f"tiles {args.command}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
