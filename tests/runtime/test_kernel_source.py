"""Kernels without a source file of their own (issue 32, item 3), in the forms Triton's unit
tests and notebooks make them:

- ``exec()`` of the template's edited text with no ``linecache`` entry: Triton's ``patch_kernel``
  under ``TRITON_INTERPRET=1`` (``python/test/unit/language/test_core.py``); tiles recovers the
  text from the caller's variables;
- ``exec()`` of code compiled under a name registered in ``linecache``;
- ``triton.JITFunction(template.fn)`` then ``kernel._unsafe_update_src(kernel.src.replace(...))``:
  ``patch_kernel`` on a GPU; also ``kernel.src = ...`` (older Triton's spelling);
- an IPython cell (IPython registers each cell in ``linecache``).

Triton 3.9's ``JITFunction.src`` is the text from the ``def`` line on, dedented (checked in
/work/tvenv: ``triton/runtime/jit.py``); results are checked against NumPy.
"""

import inspect
import linecache
import textwrap

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles import CompilationError


@tiles.jit
def template(X, Y, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)  # noqa: F841  (the replaced expression reads it)
    y = GENERATE_TEST_HERE  # noqa: F821  (replaced before the kernel is compiled)
    tl.store(Y + offs, y)


def patch_by_exec(kernel, expr):
    """Triton's test_core.patch_kernel under the interpreter."""
    local_namespace = {}
    src = textwrap.dedent(inspect.getsource(kernel.fn))
    src = src.replace("GENERATE_TEST_HERE", expr)
    exec(src, kernel.fn.__globals__, local_namespace)
    return local_namespace[kernel.fn.__name__]


def patch_by_src(kernel, expr):
    """Triton's test_core.patch_kernel on a GPU."""
    patched = tiles.JITFunction(kernel.fn)
    patched._unsafe_update_src(patched.src.replace("GENERATE_TEST_HERE", expr))
    return patched


@pytest.fixture
def x():
    return np.random.default_rng(3).uniform(-2, 2, 33).astype(np.float32)[:32]


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILES_CACHE_DIR", str(tmp_path / "cache"))


@pytest.mark.parametrize("expr, reference", [
    ("x * 2 + 1", lambda x: x * 2 + 1),
    ("tl.where(x > 0.5, x, -x)", lambda x: np.where(x > 0.5, x, -x)),
    ("tl.sqrt(tl.abs(x))\n    for i in range(3):\n        y += 1.0", lambda x: np.sqrt(np.abs(x)) + 3),
])
def test_exec_without_linecache(x, expr, reference):
    kernel = patch_by_exec(template, expr)
    assert kernel.fn.__code__.co_filename == "<string>"
    y = np.full_like(x, np.nan)
    kernel[(1,)](x, y, 32)
    np.testing.assert_allclose(y, reference(x), rtol=1e-6)
    assert "GENERATE_TEST_HERE" not in kernel.src and kernel.src.startswith("def template(")


def test_exec_error_names_the_recovered_line(x):
    kernel = patch_by_exec(template, "x + undefined_name")
    with pytest.raises(CompilationError, match=r"from exec #\d+>:5 in template[\s\S]*x \+ undefined_name"):
        kernel[(1,)](x, np.empty_like(x), 32)


def test_exec_with_linecache_entry(x):
    src = "import tiles\nimport tiles.language as tl\n\n\n@tiles.jit\ndef k(X, N: tl.constexpr):\n" \
          "    o = tl.arange(0, N)\n    tl.store(X + o, tl.load(X + o) * -3.0)\n"
    name = "<generated kernel k>"
    linecache.cache[name] = (len(src), None, src.splitlines(keepends=True), name)
    namespace = {}
    code = compile(src, name, "exec")
    del src  # nothing left to recover from: linecache alone has the text
    exec(code, namespace)
    y = x.copy()
    namespace["k"][(1,)](y, 32)
    np.testing.assert_array_equal(y, x * np.float32(-3.0))


def test_exec_of_a_text_nobody_keeps_is_refused_clearly():
    namespace = {}
    exec("import tiles\nimport tiles.language as tl\n@tiles.jit\ndef lost(X):\n    tl.store(X, 1)\n"
         .replace("lost", "lost_kernel"), namespace)
    with pytest.raises(CompilationError, match="cannot read the source of lost_kernel.*exec"):
        namespace["lost_kernel"][(1,)](np.zeros(1, np.int32))


def test_edited_src_relaunches(x):
    kernel = patch_by_src(template, "x * 3")
    y = np.empty_like(x)
    kernel[(1,)](x, y, 32)
    np.testing.assert_array_equal(y, x * np.float32(3))
    kernel.src = kernel.src.replace("x * 3", "x - 5")  # the older Triton spelling
    kernel[(1,)](x, y, 32)
    np.testing.assert_array_equal(y, x - np.float32(5))
    # the template itself is untouched, and refuses its placeholder as before
    with pytest.raises(CompilationError, match="GENERATE_TEST_HERE"):
        template[(1,)](x, y, 32)


def test_edited_src_is_not_served_from_the_disk_cache(x):
    """Two edits of one function, in kernels that share nothing but the disk cache."""
    y = np.empty_like(x)
    patch_by_src(template, "x * 2")[(1,)](x, y, 32)
    np.testing.assert_array_equal(y, x * np.float32(2))
    patch_by_src(template, "x * 7")[(1,)](x, y, 32)
    np.testing.assert_array_equal(y, x * np.float32(7))


def test_notebook_cell():
    shell_module = pytest.importorskip("IPython.core.interactiveshell")
    shell = shell_module.InteractiveShell.instance()
    result = shell.run_cell(textwrap.dedent("""
        import numpy as np
        import tiles, tiles.language as tl

        @tiles.jit
        def cell_kernel(X, n, BLOCK: tl.constexpr):
            o = tl.arange(0, BLOCK)
            v = tl.load(X + o, mask=o < n, other=0.0)
            if BLOCK > 4:
                v = v * 2
            tl.store(X + o, v, mask=o < n)

        cell_x = np.arange(7, dtype=np.float32) - 3
        cell_kernel[(1,)](cell_x, 7, BLOCK=8)
        """))
    assert result.success, result.error_in_exec
    np.testing.assert_array_equal(shell.user_ns["cell_x"], (np.arange(7, dtype=np.float32) - 3) * 2)
