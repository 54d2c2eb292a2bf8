"""The stepping interpreter's rewrite of a kernel: Python control flow kept, values typed as traced.

The tracer's rewrite (``core/frontend.py``) turns ``for``/``while``/``if`` into calls that trace
each body once.  When a kernel runs one program at a time on real values, the bodies can simply
run: this rewrite keeps every statement where it is (so pdb's ``next``/``step`` walk the kernel's
own lines), and changes only what decides *types*, exactly as the tracer does:

- ``for t in range(...)`` / ``tl.range(...)`` gives ``t`` as an int32/int64 scalar tile (the
  tracer's loop index), through ``__tiles_step__.iterate``;
- ``if c`` / ``while c`` ask ``__tiles_step__.cond(c)`` (a scalar tile's value; a tile of more
  elements is refused as the tracer refuses it);
- ``assert c, msg`` is checked on the data (``__tiles_step__.check``), always, as in Triton's
  interpreter (compiled kernels keep it only with ``debug``);
- expressions (``and``/``or``/``not``, chained comparisons, ``x if c else y``, ``min``/``max``/
  ``print``) and plain assignments go through the tracer's own helpers (``__tiles__``).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import weakref
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ..core.builder import register_code
from ..core.errors import CompilationError
from ..core.frontend import RET, ExpressionRewriter, ast_lock, helper_call
from ..core.ir import Loc

STEP = "__tiles_step__"


def _s(attr: str, *args: ast.expr) -> ast.Call:
    return ast.Call(ast.Attribute(ast.Name(STEP, ast.Load()), attr, ast.Load()), list(args), [])


class _Statements(ast.NodeTransformer):
    """Rewrites a kernel's statements, leaving nested functions (lambdas, defs) alone."""

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:  # noqa: N802
        return node

    def _body(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            new = self.visit(s)
            out.extend(new if isinstance(new, list) else [new])
        return out

    def visit_For(self, node: ast.For) -> ast.AST:  # noqa: N802
        it = ExpressionRewriter().visit(node.iter)
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
            it = ast.copy_location(ast.Call(ast.Attribute(ast.Name("__tiles__", ast.Load()), "range",
                                                          ast.Load()), it.args, it.keywords), it)
        node.iter = ast.copy_location(_s("iterate", it), node.iter)
        node.body = self._body(node.body)
        node.orelse = self._body(node.orelse)
        return node

    def visit_While(self, node: ast.While) -> ast.AST:  # noqa: N802
        node.test = ast.copy_location(_s("cond", ExpressionRewriter().visit(node.test)), node.test)
        node.body = self._body(node.body)
        node.orelse = self._body(node.orelse)
        return node

    def visit_If(self, node: ast.If) -> ast.AST:  # noqa: N802
        node.test = ast.copy_location(_s("cond", ExpressionRewriter().visit(node.test)), node.test)
        node.body = self._body(node.body)
        node.orelse = self._body(node.orelse)
        return node

    def visit_Assert(self, node: ast.Assert) -> ast.AST:  # noqa: N802
        msg = node.msg if node.msg is not None else ast.Constant(ast.unparse(node.test))
        args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                             kwarg=None, defaults=[])
        call = _s("check", ExpressionRewriter().visit(node.test), ast.Lambda(args, ExpressionRewriter().visit(msg)))
        return ast.copy_location(ast.Expr(call), node)

    def visit_Assign(self, node: ast.Assign) -> ast.AST:  # noqa: N802
        node = ExpressionRewriter().visit(node)
        if not any(isinstance(t, ast.Name) and t.id == RET for t in node.targets):
            node.value = ast.copy_location(helper_call("assigned", node.value), node.value)
        return node

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            return ExpressionRewriter().visit(node)
        return super().generic_visit(node)


# one stepping version per kernel function (and per @jit helper), made on first use
_CACHE: weakref.WeakKeyDictionary[Callable[..., Any], Callable[..., Any]] = weakref.WeakKeyDictionary()


def stepping_function(fn: Callable[..., Any], helpers: ModuleType, step_helpers: ModuleType
                      ) -> Callable[..., Any]:
    """``fn`` rewritten to run one program at a time on real values (see the module docstring)."""
    found = _CACHE.get(fn)
    if found is None:
        with ast_lock:
            found = _CACHE[fn] = _rewrite(fn, helpers, step_helpers)
    return found


def _rewrite(fn: Callable[..., Any], helpers: ModuleType, step_helpers: ModuleType) -> Callable[..., Any]:
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise CompilationError(f"cannot read the source of {fn.__qualname__}: {e}; "
                               "kernels must be defined in a file") from None
    filename = inspect.getsourcefile(fn) or "<unknown>"
    tree = ast.parse(textwrap.dedent("".join(lines)))
    ast.increment_lineno(tree, first - 1)
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise CompilationError(f"{fn.__qualname__} is not a plain function", Loc(filename, first))
    fdef.decorator_list = []
    fdef.returns = None
    for a in fdef.args.args + fdef.args.kwonlyargs:
        a.annotation = None
    fdef.body = _Statements()._body(fdef.body)
    freevars = list(fn.__code__.co_freevars)
    fargs = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in freevars], vararg=None,
                          kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    factory = ast.FunctionDef(name="__tiles_step_factory", args=fargs,
                              body=[fdef, ast.Return(ast.Name(fdef.name, ast.Load()))], decorator_list=[])
    module = ast.Module([factory], [])
    ast.fix_missing_locations(module)
    code = compile(module, filename, "exec")
    register_code(code)
    namespace = fn.__globals__
    namespace.setdefault("__tiles__", helpers)
    namespace.setdefault(STEP, step_helpers)
    scope: dict[str, Any] = {}
    exec(code, namespace, scope)
    cells = [c.cell_contents for c in (fn.__closure__ or ())]
    return scope["__tiles_step_factory"](*cells)
