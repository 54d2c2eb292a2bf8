"""The AST rewrite that lets kernels use ordinary ``for``/``while``/``if``.

Each statement whose outcome may depend on run-time values becomes a call into
the language's helper module (``tiles.language.control``, handed in by the caller so
that the core does not import the language) with its body as a nested function of the names it
assigns::

    for i in range(lo, hi):          def __tiles_for_1(__tiles_iv, acc):
        acc += f(i)          ==>         i = __tiles_iv
                                         acc += f(i)
                                         return (acc, i)
                                     (acc, i) = __tiles__.for_(__tiles__.range(lo, hi),
                                         __tiles_for_1, ('acc',), __tiles__.lookup(locals(), ('acc',)),
                                         ('i',), __tiles__.lookup(locals(), ('i',)))

``and``/``or``/``not``, chained comparisons, ``is``/``is not`` (on constexprs' values),
``x if c else y``, ``min``/``max``, ``print`` and ``assert`` become helper calls that work on tiles and on Python
values alike; the value of every plain assignment goes through ``assigned`` (a Python
number binds as a scalar tile, as in Triton).  An ``if`` that returns early takes the rest of the block into its
other branch, so ``if pid >= n: return`` needs no special IR.  Line numbers are
kept, so every op records the user's file:line.
"""

from __future__ import annotations

import ast
import copy
import inspect
import itertools
import linecache
import textwrap
import threading
import weakref
from collections.abc import Callable
from types import CodeType, ModuleType
from typing import Any

from .builder import register_code
from .errors import CompilationError
from .ir import Loc

RET = "_tiles_ret_"
_counter = itertools.count(1)


def _error(node: ast.AST, filename: str, message: str) -> CompilationError:
    return CompilationError(message, Loc(filename, getattr(node, "lineno", 0)))


def _h(attr: str) -> ast.Attribute:
    return ast.Attribute(ast.Name("__tiles__", ast.Load()), attr, ast.Load())


def helper_call(attr: str, *args: ast.expr) -> ast.Call:
    return ast.Call(_h(attr), list(args), [])


def _lambda(body: ast.expr) -> ast.Lambda:
    args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                         kwarg=None, defaults=[])
    return ast.Lambda(args=args, body=body)


def _fix_missing_locations(tree: ast.AST) -> None:
    """``ast.fix_missing_locations`` without its recursion through every context and operator node
    (a node takes its parent's location where it has none)."""
    pending: list[tuple[ast.AST, int, int, int, int]] = [(tree, 1, 0, 1, 0)]
    while pending:
        node, line, col, end_line, end_col = pending.pop()
        if node._attributes:
            if "lineno" in node._attributes:
                if not hasattr(node, "lineno"):
                    node.lineno = line  # type: ignore[attr-defined]
                else:
                    line = node.lineno  # type: ignore[attr-defined]
            if "end_lineno" in node._attributes:
                if getattr(node, "end_lineno", None) is None:
                    node.end_lineno = end_line  # type: ignore[attr-defined]
                else:
                    end_line = node.end_lineno  # type: ignore[attr-defined]
            if "col_offset" in node._attributes:
                if not hasattr(node, "col_offset"):
                    node.col_offset = col  # type: ignore[attr-defined]
                else:
                    col = node.col_offset  # type: ignore[attr-defined]
            if "end_col_offset" in node._attributes:
                if getattr(node, "end_col_offset", None) is None:
                    node.end_col_offset = end_col  # type: ignore[attr-defined]
                else:
                    end_col = node.end_col_offset  # type: ignore[attr-defined]
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                pending.extend((item, line, col, end_line, end_col) for item in value
                               if isinstance(item, ast.AST) and (item._fields or item._attributes))
            elif isinstance(value, ast.AST) and (value._fields or value._attributes):
                pending.append((value, line, col, end_line, end_col))


def _fdef(name: str, params: list[str], body: list[ast.stmt]) -> ast.FunctionDef:
    args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    return ast.FunctionDef(name=name, args=args, body=body, decorator_list=[])


def _names_tuple(names: list[str]) -> ast.Tuple:
    return ast.Tuple([ast.Constant(n) for n in names], ast.Load())


def _assigned(stmts: list[ast.stmt]) -> list[str]:
    """Names a statement list binds at its own level (not inside nested functions)."""
    found: dict[str, None] = {}

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
                             ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            if not node.id.startswith("__tiles"):
                found[node.id] = None
        for child in ast.iter_child_nodes(node):
            visit(child)

    for s in stmts:
        visit(s)
    return list(found)


def _pin(node: ast.AST, line: int) -> None:
    """Give generated nodes one line: the statement they replace (for error locations)."""
    for n in ast.walk(node):
        if isinstance(n, (ast.expr, ast.stmt)):
            n.lineno = n.end_lineno = line
            n.col_offset = n.end_col_offset = 0


def _contains(stmts: list[ast.stmt], kinds: tuple[type, ...]) -> bool:
    def visit(node: ast.AST) -> bool:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        if isinstance(node, kinds):
            return True
        return any(visit(c) for c in ast.iter_child_nodes(node))
    return any(visit(s) for s in stmts)


def _ends_with_return(stmts: list[ast.stmt]) -> bool:
    return bool(stmts) and isinstance(stmts[-1], ast.Return)


class _Rewriter:
    def __init__(self, filename: str) -> None:
        self.filename = filename

    # -- early returns ----------------------------------------------------
    def lower_returns(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for i, s in enumerate(stmts):
            if isinstance(s, (ast.For, ast.While)) and _contains(s.body + s.orelse, (ast.Return,)):
                raise _error(s, self.filename, "return inside a loop is not supported; "
                             "keep a flag in the loop and return after it")
            if isinstance(s, ast.If) and _contains([s], (ast.Return,)):
                rest = stmts[i + 1:]
                body = s.body if _ends_with_return(s.body) else s.body + copy.deepcopy(rest)
                orelse = s.orelse if _ends_with_return(s.orelse) else s.orelse + copy.deepcopy(rest)
                body, orelse = self.lower_returns(body), self.lower_returns(orelse)
                valued = any(_ends_with_return(b) and b[-1].value is not None  # type: ignore[attr-defined]
                             for b in (body, orelse))
                s.body = self._tail_to_assign(body) or [ast.Pass()]
                s.orelse = self._tail_to_assign(orelse)
                s.tiles_ends_function = True  # type: ignore[attr-defined]  # see if_
                if valued:  # a path that falls off the end returns None, as in Python (and Triton)
                    out.append(ast.copy_location(ast.Assign([ast.Name(RET, ast.Store())], ast.Constant(None)), s))
                out.append(s)
                if valued:
                    out.append(ast.Return(ast.Name(RET, ast.Load())))
                return out
            out.append(s)
        return out

    def _tail_to_assign(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        if not _ends_with_return(stmts):
            return stmts
        ret = stmts[-1]
        assert isinstance(ret, ast.Return)
        if ret.value is None:
            return stmts[:-1]
        assign = ast.Assign([ast.Name(RET, ast.Store())], ret.value)
        return stmts[:-1] + [ast.copy_location(assign, ret)]

    # -- statements ---------------------------------------------------------
    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s: ast.stmt) -> list[ast.stmt]:
        if isinstance(s, (ast.Break, ast.Continue)):
            raise _error(s, self.filename, f"`{type(s).__name__.lower()}` is not supported in kernels; "
                         "use a while loop with a condition or a mask")
        if isinstance(s, ast.For):
            return self.for_(s)
        if isinstance(s, ast.While):
            return self.while_(s)
        if isinstance(s, ast.If):
            return self.if_(s)
        if isinstance(s, ast.Assert):
            msg = s.msg if s.msg is not None else ast.Constant(ast.unparse(s.test))
            call = helper_call("assert_", ExpressionRewriter().visit(s.test), ExpressionRewriter().visit(msg))
            return [ast.copy_location(ast.Expr(call), s)]
        if isinstance(s, (ast.FunctionDef, ast.ClassDef)):
            return [s]
        s = ExpressionRewriter().visit(s)
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):  # a result dropped: must_use_result
            s.value.func = ast.copy_location(helper_call("discarding", s.value.func), s.value.func)
        if isinstance(s, ast.Assign) and not any(isinstance(t, ast.Name) and t.id == RET for t in s.targets):
            s.value = ast.copy_location(helper_call("assigned", s.value), s.value)  # numbers bind as tiles
        return [s]

    def _def(self, name: str, params: list[str], body: list[ast.stmt], returns: list[str],
             at: ast.stmt) -> ast.FunctionDef:
        ret = ast.Return(ast.Tuple([ast.Name(n, ast.Load()) for n in returns], ast.Load()))
        fn = _fdef(name, params, body + [ret])
        for node in (fn, ret):
            ast.copy_location(node, at)
        ast.fix_missing_locations(fn)
        return fn

    def _bind(self, names: list[str], call: ast.Call, at: ast.stmt) -> ast.stmt:
        if not names:
            stmt: ast.stmt = ast.Expr(call)
        else:
            target = ast.Tuple([ast.Name(n, ast.Store()) for n in names], ast.Store())
            stmt = ast.Assign([target], call)
        _pin(stmt, at.lineno)
        return stmt

    def _lookup(self, names: list[str]) -> ast.Call:
        locals_call = ast.Call(ast.Name("locals", ast.Load()), [], [])
        return helper_call("lookup", locals_call, _names_tuple(names))

    def for_(self, s: ast.For) -> list[ast.stmt]:
        if s.orelse:
            raise _error(s, self.filename, "for ... else is not supported in kernels")
        body = self.block(s.body)
        target_names = _assigned([ast.Assign([s.target], ast.Constant(0))])
        names = [n for n in _assigned(body) if n not in target_names]
        n = next(_counter)
        iv = "__tiles_iv"
        bind_target = ast.copy_location(ast.Assign([s.target], ast.Name(iv, ast.Load())), s)
        # the body also returns the loop variables: after the loop they hold the last iteration's
        # values where the loop is unrolled, and are undefined after a run-time loop (control.for_)
        fn = self._def(f"__tiles_for_{n}", [iv, *names], [bind_target, *body], names + target_names, s)
        it = ExpressionRewriter().visit(s.iter)
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
            it = ast.Call(_h("range"), it.args, it.keywords)
        call = helper_call("for_", it, ast.Name(fn.name, ast.Load()), _names_tuple(names), self._lookup(names),
                           _names_tuple(target_names), self._lookup(target_names))
        return [fn, self._bind(names + target_names, call, s)]

    def while_(self, s: ast.While) -> list[ast.stmt]:
        if s.orelse:
            raise _error(s, self.filename, "while ... else is not supported in kernels")
        body = self.block(s.body)
        names = _assigned(body)
        n = next(_counter)
        cond_ret = ast.copy_location(ast.Return(ExpressionRewriter().visit(s.test)), s)
        cond = _fdef(f"__tiles_cond_{n}", names, [cond_ret])
        ast.copy_location(cond, s)
        fn = self._def(f"__tiles_while_{n}", names, body, names, s)
        call = helper_call("while_", ast.Name(cond.name, ast.Load()), ast.Name(fn.name, ast.Load()),
                     _names_tuple(names), self._lookup(names))
        return [cond, fn, self._bind(names, call, s)]

    def if_(self, s: ast.If) -> list[ast.stmt]:
        """An ``if`` as two branch functions of the names it assigns.  One that returns early
        holds the rest of the function in its branches (``lower_returns``): nothing after it reads
        what they assign, so only the return value leaves it, and a name re-typed on one path
        (cut-cross-entropy's backward: ``if filtered: return`` then ``d = d.to(bf16)``) is never
        merged, as in Triton, where the returning branch ends the function."""
        body, orelse = self.block(s.body), self.block(s.orelse)
        names = _assigned(body + orelse)
        outs = [n for n in names if n == RET] if getattr(s, "tiles_ends_function", False) else names
        params = outs + [n for n in names if n not in outs]  # the helper pairs outs with the first values
        n = next(_counter)
        then_fn = self._def(f"__tiles_then_{n}", params, body or [ast.Pass()], outs, s)
        else_fn = self._def(f"__tiles_else_{n}", params, orelse or [ast.Pass()], outs, s)
        call = helper_call("if_", ExpressionRewriter().visit(s.test), ast.Name(then_fn.name, ast.Load()),
                     ast.Name(else_fn.name, ast.Load()), _names_tuple(outs), self._lookup(params))
        return [then_fn, else_fn, self._bind(outs, call, s)]


def _comparison(left: ast.expr, op: ast.cmpop, right: ast.expr) -> ast.expr:
    """One comparison; ``is``/``is not`` compare the values inside constexprs (as Triton's code
    generator does), so a dtype handed to a helper as a constexpr still ``is tl.float32``."""
    if isinstance(op, (ast.Is, ast.IsNot)):
        return helper_call("is_" if isinstance(op, ast.Is) else "is_not", left, right)
    return ast.Compare(left, [op], [right])


class ExpressionRewriter(ast.NodeTransformer):
    def visit_BoolOp(self, node: ast.BoolOp) -> ast.expr:  # noqa: N802
        values = [self.visit(v) for v in node.values]
        helper = "and_" if isinstance(node.op, ast.And) else "or_"
        out = values[-1]
        for v in reversed(values[:-1]):
            out = helper_call(helper, v, _lambda(out))
        return ast.copy_location(out, node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:  # noqa: N802
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(helper_call("not_", node.operand), node)
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.expr:  # noqa: N802
        self.generic_visit(node)
        if len(node.ops) == 1:
            return ast.copy_location(_comparison(node.left, node.ops[0], node.comparators[0]), node)
        parts = []
        left = node.left
        for op, right in zip(node.ops, node.comparators):
            parts.append(_comparison(left, op, right))
            left = right
        out: ast.expr = parts[-1]
        for p in reversed(parts[:-1]):
            out = helper_call("and_", p, _lambda(out))
        return ast.copy_location(out, node)

    def visit_IfExp(self, node: ast.IfExp) -> ast.expr:  # noqa: N802
        self.generic_visit(node)
        return ast.copy_location(helper_call("ifexp", node.test, _lambda(node.body), _lambda(node.orelse)), node)

    def visit_Call(self, node: ast.Call) -> ast.expr:  # noqa: N802
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max", "print"):
            node.func = ast.copy_location(_h(f"builtin_{node.func.id}"), node.func)
        return node


def _names(fdef: ast.FunctionDef) -> tuple[set[str], list[ast.Name]]:
    """Every name the function binds anywhere (parameters, assignments, loop targets, imports, defs),
    and the names its body reads (in order; one walk of the tree for both)."""
    names = {a.arg for a in fdef.args.posonlyargs + fdef.args.args + fdef.args.kwonlyargs}
    names |= {a.arg for a in (fdef.args.vararg, fdef.args.kwarg) if a is not None}
    reads: list[ast.Name] = []
    in_body = {id(stmt) for stmt in fdef.body}  # (reads in the body only, not in defaults: Triton allows those)
    pending: list[tuple[ast.AST, bool]] = [(fdef, False)]
    while pending:
        node, body = pending.pop()
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                if body:
                    reads.append(node)
            else:
                names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not fdef:
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        pending.extend((child, body or id(child) in in_body) for child in reversed(list(ast.iter_child_nodes(node))))
    reads.sort(key=lambda n: (n.lineno, n.col_offset))
    return names, reads


def check_globals(fn: Callable[..., Any], fdef: ast.FunctionDef, filename: str,
                  allowed: Callable[[Any], bool]) -> None:
    """Refuse a kernel that reads a module global holding data (Triton does: its value would be baked in);
    ``allowed(value)`` is the language's rule for what a kernel may read."""
    local, reads = _names(fdef)
    local |= set(fn.__code__.co_freevars)
    absent = object()
    for node in reads:
        if node.id in local:
            continue
        value = fn.__globals__.get(node.id, absent)
        if value is absent or allowed(value):
            continue
        loc = Loc(filename, node.lineno, fn.__name__, linecache.getline(filename, node.lineno).strip())
        raise CompilationError(
            f"the kernel reads the global {node.id!r}, a {type(value).__name__} that is not a constexpr; "
            f"kernels may only read globals that are modules, functions, dtypes or tl.constexpr(...) "
            f"values (as in Triton). Define it as {node.id} = tl.constexpr({value!r:.40}) or pass it "
            f"as an argument", loc)


# a function's source lines and first line, found once per code object: ``inspect`` tokenizes the
# file's block on each call, and the frontend and the compile cache's fingerprint both ask
_LINES: weakref.WeakKeyDictionary[CodeType, tuple[list[str], int]] = weakref.WeakKeyDictionary()


def source_lines(fn: Callable[..., Any]) -> tuple[list[str], int]:
    """``inspect.getsourcelines(fn)``, kept per code object for plain functions."""
    code = getattr(fn, "__code__", None)
    if not isinstance(code, CodeType) or hasattr(fn, "__wrapped__"):
        return inspect.getsourcelines(fn)
    found = _LINES.get(code)
    if found is None:
        lines, first = inspect.getsourcelines(fn)
        found = _LINES[code] = (list(lines), first)
    return list(found[0]), found[1]


# CPython (3.11, 3.12) keeps one recursion counter per interpreter while converting
# between Python and C ASTs, so ast.parse/compile racing in two threads can fail with
# "SystemError: AST constructor recursion depth mismatch": rewrites take turns.
ast_lock = threading.RLock()


def rewrite(fn: Callable[..., Any], helpers: ModuleType,
            text: tuple[str, int, str] | None = None) -> tuple[Callable[..., Any], str]:
    """The kernel function with control flow rewritten, and its source text.

    ``helpers`` is the module the rewritten code calls as ``__tiles__`` (``for_``, ``if_``,
    ``range``, ...); its ``global_allowed(value)`` says which module globals a kernel may read.
    ``text``: (source, line of its first line, linecache name) to rewrite instead of the
    function's file (an edited ``kernel.src``, a kernel made by ``exec``: runtime/kernel_source.py).
    """
    with ast_lock:
        return _rewrite(fn, helpers, text)


def _rewrite(fn: Callable[..., Any], helpers: ModuleType,
             text: tuple[str, int, str] | None) -> tuple[Callable[..., Any], str]:
    if text is not None:
        lines, first, filename = text[0].splitlines(keepends=True), text[1], text[2]
    else:
        try:
            lines, first = source_lines(fn)
        except (OSError, TypeError) as e:
            raise CompilationError(
                f"cannot read the source of {fn.__qualname__}: {e}; kernels must be defined in a file, a "
                "notebook cell, or by exec() of a string that the code calling exec() keeps in a variable "
                "(or registers in linecache)") from None
        filename = inspect.getsourcefile(fn) or "<unknown>"
    source = textwrap.dedent("".join(lines))
    tree = ast.parse("\n" * (first - 1) + source)  # (the file's line numbers, without a walk to shift them)
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise CompilationError(f"{fn.__qualname__} is not a plain function", Loc(filename, first))
    check_globals(fn, fdef, filename, helpers.global_allowed)
    fdef.decorator_list = []
    fdef.returns = None
    for a in fdef.args.args + fdef.args.kwonlyargs:
        a.annotation = None
    rw = _Rewriter(filename)
    fdef.body = rw.block(rw.lower_returns(fdef.body))
    freevars = list(fn.__code__.co_freevars)
    factory = _fdef("__tiles_factory", freevars, [fdef, ast.Return(ast.Name(fdef.name, ast.Load()))])
    module = ast.Module([factory], [])
    _fix_missing_locations(module)
    code = compile(module, filename, "exec")
    register_code(code)
    namespace = fn.__globals__
    namespace.setdefault("__tiles__", helpers)
    scope: dict[str, Any] = {}
    exec(code, namespace, scope)
    cells = [c.cell_contents for c in (fn.__closure__ or ())]
    return scope["__tiles_factory"](*cells), source
