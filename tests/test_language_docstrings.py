"""Every public ``tl`` name that can be called says in one line what it means."""

import inspect

import pytest

import tiles.language as tl
import tiles.language.math as tl_math


def _own_doc(obj) -> str:
    """The docstring ``obj`` itself carries (a dataclass's generated signature does not count)."""
    doc = inspect.getdoc(obj) if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    doc = (doc or "").strip()
    if inspect.isclass(obj) and doc.startswith(f"{obj.__name__}("):
        return ""  # @dataclass writes "Name(field: type, ...)" when the class has no docstring
    return doc


def _public_callables(module):
    return [name for name in module.__all__ if callable(getattr(module, name))]


@pytest.mark.parametrize("module", [tl, tl_math], ids=["tl", "tl.math"])
def test_every_public_callable_has_a_one_line_docstring(module):
    names = _public_callables(module)
    assert len(names) > 50, f"{module.__name__}.__all__ lists only {len(names)} callables"
    missing = [n for n in names if not _own_doc(getattr(module, n))]
    assert not missing, f"{module.__name__}: public callables without a docstring: {missing}"


def test_the_check_sees_a_missing_docstring():
    def undocumented():
        pass

    class Record:
        pass

    assert _own_doc(undocumented) == ""
    assert _own_doc(tl.program_id).startswith("The index of this program")
    from dataclasses import dataclass
    assert _own_doc(dataclass(Record)) == ""
