"""Imports only point down: the declared layers of ``tiles/``, no import cycle anywhere, and the
imports some packages must not make.

The graph is read from the source with ``ast``: every ``import``/``from ... import`` anywhere
in a module counts — at module level, inside functions and under ``if TYPE_CHECKING:`` —
so moving an import into a function does not hide a dependency.  ``from pkg import name``
is an edge to ``pkg.name`` when that is a module, else to ``pkg``.  Importing a submodule
also runs its parent packages' ``__init__``; those implicit edges are not counted.
The layers are described in docs/internals.md ("Layers").  The graph covers the whole package,
the conformance suite (``tiles.conformance``) included, and the top-level ``conformance`` shim.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).parents[2]
ROOT = REPO / "tiles"
# the package, and the conformance suite's old top-level name (a shim forwarding to tiles.conformance)
ROOTS = (ROOT, REPO / "conformance")

# Lowest first.  A module may import its own package's modules (cycles checked below) and any
# module of a lower layer; packages on one layer are peers and must not import each other.
LAYERS: list[set[str]] = [
    {"tiles.config", "tiles.version"},
    {"tiles.core", "tiles.progress", "tiles.benchmark_report"},
    {"tiles.interp", "tiles.language"},
    {"tiles.backends"},
    {"tiles.testing", "tiles.tools"},
    {"tiles.runtime", "tiles.compiler", "tiles.knobs"},
    {"tiles.as_triton"},  # the Triton compatibility mode: triton.* module names served by tiles
    {"tiles"},  # the package itself: the public names
    {"tiles.conformance"},  # the conformance suite (python -m conformance), on the public names
    {"tiles.cli", "tiles.run", "conformance"},
]

# Imports a package must not make, whatever the layers allow: (importer, imported, why); each is a
# package or module name, covering its submodules.  Rooms of backends (issue 33): the shared
# lowering serves every backend and knows none of them, a target's additions coming in through
# an extension it is handed (lowering/mma/extension.py; CUDA's Hopper parts, backends/cuda/hopper/,
# passed by cuda/choices.py); the simulator that checks the CUDA lowering is for tests.
_SHARED = "the shared lowering knows no backend: a target's additions come in as an MMAExtension"
FORBIDDEN: list[tuple[str, str, str]] = [
    ("tiles.backends.lowering", "tiles.config",
     "the lowering reads every code choice from Options (Options.codegen), never the environment"),
    *(("tiles.backends.lowering", f"tiles.backends.{backend}", _SHARED)
      for backend in ("cuda", "rocm", "opencl", "llvm", "cstyle", "interpreter", "stepping", "registry")),
    *((f"tiles.backends.cuda.{room}", "tiles.backends.cuda.simulator",
       "the simulator checks the lowering from outside: only tests import it")
      for room in ("hopper", "choices", "emitter")),
    # The native launch room calls the driver; it knows nothing of how kernels are generated.
    *(("tiles.backends.cuda.launch", f"tiles.backends.{generation}",
       "launching knows the driver and the launch facts, not code generation")
      for generation in ("lowering", "llvm", "cuda.hopper", "cuda.emitter", "cuda.choices", "cuda.simulator")),
    # Code generation knows nothing of how kernels are launched.
    *((f"tiles.backends.{generation}", "tiles.backends.cuda.launch",
       "code generation produces PTX and launch facts; the launch room consumes them")
      for generation in ("lowering", "cuda.hopper", "cuda.emitter", "cuda.choices")),
]

# Edges other helpers are removing; the coordinator deletes each line when its fix is merged.
KNOWN: set[tuple[str, str]] = set()


def module_names() -> dict[str, Path]:
    names = {}
    for root in ROOTS:
        for path in root.rglob("*.py"):
            parts = list(path.relative_to(root.parent).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            names[".".join(parts)] = path
    return names


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom,
             modules: set[str] | dict[str, Path]) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level:
        base = base[:len(base) - node.level + 1]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    for alias in node.names:
        full = f"{prefix}.{alias.name}"
        yield full if full in modules else prefix


def imports_of(name: str, is_package: bool, source: str, modules: set[str] | dict[str, Path]) -> set[str]:
    """The tiles modules ``source`` (module ``name``) imports: nearest existing module of each name."""
    edges = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        for target in _targets(name, is_package, node, modules):
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in modules and target != name:
                edges.add(target)
    return edges


def import_graph() -> dict[str, set[str]]:
    """module -> the tiles modules it imports."""
    modules = module_names()
    return {name: imports_of(name, path.name == "__init__.py", path.read_text(), modules)
            for name, path in modules.items()}


def layer_of(module: str) -> tuple[int, str]:
    """(layer index, package) of the most specific declared package holding ``module``."""
    best = (-1, "")
    for i, packages in enumerate(LAYERS):
        for package in packages:
            if (module == package or module.startswith(package + ".")) and len(package) > len(best[1]):
                best = (i, package)
    assert best[0] >= 0, f"{module} is on no layer: add its package to LAYERS (and docs/internals.md)"
    return best


def test_graph_sees_every_kind_of_import():
    modules = {"tiles.core", "tiles.core.ir", "tiles.core.ops", "tiles.language", "tiles.language.core",
               "tiles.runtime", "tiles.runtime.jit", "tiles.runtime.cache", "tiles.config"}
    source = """
from typing import TYPE_CHECKING
from .. import config
from ..core import ir
if TYPE_CHECKING:
    from ..language.core import tensor
def f():
    from .cache import compile_cached
    import tiles.core.ops
"""
    assert imports_of("tiles.runtime.jit", False, source, modules) == {
        "tiles.config", "tiles.core.ir", "tiles.language.core", "tiles.runtime.cache", "tiles.core.ops"}
    assert imports_of("tiles.runtime", True, "from . import jit\nfrom .jit import x", modules) == {
        "tiles.runtime.jit"}
    assert import_graph()["tiles.backends.lowering.emitter"] >= {"tiles.core.ir", "tiles.backends.base"}


def test_no_upward_or_sideways_imports():
    bad = []
    for module, targets in sorted(import_graph().items()):
        level, package = layer_of(module)
        for target in sorted(targets):
            if (module, target) in KNOWN:
                continue
            t_level, t_package = layer_of(target)
            if t_level > level or (t_level == level and t_package != package):
                bad.append(f"{module} (layer {level}) imports {target} (layer {t_level})")
    assert not bad, "imports that do not point down:\n" + "\n".join(bad)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_anywhere():
    graph = {m: {t for t in targets if (m, t) not in KNOWN} for m, targets in import_graph().items()}
    cycles = _cycles(graph)
    assert not cycles, "import cycles (each a strongly connected component; function-level imports " \
                       "count):\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_graph_covers_the_suite_and_its_shim():
    graph = import_graph()
    assert "tiles.conformance.suite" in graph and "tiles.conformance.generate.search" in graph
    assert graph["conformance.__main__"] >= {"tiles.conformance.__main__"}


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_forbidden_imports():
    bad = [f"{module} imports {target}: {why}"
           for module, targets in sorted(import_graph().items())
           for target in sorted(targets)
           for importer, imported, why in FORBIDDEN
           if _within(module, importer) and _within(target, imported) and (module, target) not in KNOWN]
    assert not bad, "forbidden imports:\n" + "\n".join(bad)


def test_forbidden_imports_are_found():
    graph = {"tiles.backends.lowering.mma.pipeline": {"tiles.config", "tiles.core.ir"}}
    hits = [(m, t) for m, ts in graph.items() for t in ts for importer, imported, _ in FORBIDDEN
            if _within(m, importer) and _within(t, imported)]
    assert hits == [("tiles.backends.lowering.mma.pipeline", "tiles.config")]
