"""The jit's native inline cache: launch keys served without the Python launch function.

After a launch key has launched through its direct form (``runtime/binder.py``), the launch
function asks ``install`` for the key's *hot* launch: a backend builtin (the CUDA keyed
launcher's ``make_hot``, ``backends/cuda/launch/hot_launch.py``) that binds the call, checks every
argument against the key's facts (in the words of ``backends/launch_facts.py``) and the backend choice, and
launches; on any mismatch it hands the call on with the same arguments.  ``kernel[grid]`` then
binds the grid to the hot builtin instead of the launch function (``JITFunction._fast_launch``).
A kernel keeps up to ``CHAIN_LENGTH`` hot launches chained (``chained``): each hands what it
declines to the next, the last to the launch function, which puts the key it launched first.
Each ``FastLaunch`` keeps the hot launch built for it (``hot``, with the ``backend=`` and registry
state it was built for, ``hot_form``), so going back to a key costs no build.

Served only: ``warmup``, ``num_warps``, ``num_stages``, ``debug`` left out or at their defaults,
``stream`` None or an int, no unknown keywords; the entry's plan fixed by its arguments'
device (``FastLaunch.target`` None); for the default backend, a registry whose state can be
watched (``registry.default_state``).  Launch plans dropped (``_launches.clear()``) or a hot
launch rebuilt for another ``backend=``/registry state: ``retire`` (it hands every call on).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ..backends import registry
from ..backends.launch_facts import MISSING_DEFAULT, Alignment, ArgKind, Expected, IntClass, ParamKind
from .binder import MISSING
from .specialize import FLOAT_FACT, NONE_FACT

NOT_BUILT = False  # FastLaunch.hot when no hot launch can be built for the entry
CHAIN_LENGTH = 4  # hot launches of one kernel tried in turn, most recently used first
Chain = list[tuple[Any, Callable[..., Any]]]  # (FastLaunch, its hot launch)


def expectations(key: tuple[Any, ...], kinds: Sequence[str], tensor: type) -> list[Expected] | None:
    """Each parameter's ``Expected`` from a binder key ``(backend, options, debug, *slots)`` of a
    kernel with parameter ``kinds`` (``ParamKind``s); None when a fact has no native check (an
    int beyond int64, a tensor subclass, an array that is not a torch tensor, ...)."""
    slots = iter(key[3:])
    found = []
    for kind in kinds:
        if kind == ParamKind.CONSTEXPR:
            found.append(Expected(ArgKind.CONSTANT, obj=next(slots)))
            continue
        fact, device = next(slots), next(slots)
        if device is not None:  # the binder's inline torch tensor case: dtype, or (dtype, UNALIGNED)
            unaligned = type(fact) is tuple and len(fact) == 2 and fact[1] == Alignment.UNALIGNED
            alignment = (Alignment.ANY if kind != ParamKind.SPECIALIZED
                         else Alignment.UNALIGNED if unaligned else Alignment.ALIGNED)
            found.append(Expected(ArgKind.TENSOR, tensor, fact[0] if unaligned else fact, device, alignment))
        elif type(fact) is int or type(fact) is IntClass:  # an int's IntClass (binder.py, fact_of)
            found.append(Expected(ArgKind.INT, expect=IntClass(fact)))
        elif type(fact) is str and fact == FLOAT_FACT:
            found.append(Expected(ArgKind.FLOAT))
        elif type(fact) is tuple and fact == NONE_FACT:
            found.append(Expected(ArgKind.NONE))
        else:
            return None
    return found


def install(entry: Any, key: tuple[Any, ...], backend: Any, kinds: Sequence[str], tensor: type,
            signature: inspect.Signature, fallback: Callable[..., Any],
            guards: Sequence[Any] = ()) -> Callable[..., Any] | None:
    """The hot launch of ``entry`` (a ``FastLaunch`` found under ``key``) for launches with this
    ``backend=`` (None: the default backend, as the registry chooses it now); kept on the entry
    (``hot``, ``hot_form``) and rebuilt only for another ``backend=`` or registry state.  None
    when it cannot be built (then ``entry.hot`` is False: not tried again).  ``guards``: the
    kernel's ``global_guards.Guard`` list, checked natively on every launch."""
    state = None
    if backend is None:
        state = registry.default_state()
        if state is None:
            entry.hot = NOT_BUILT
            return None
    form = (backend, None if state is None else (state[0].value, *state[3]))
    if entry.hot is not None and entry.hot is not NOT_BUILT and _same_form(entry.hot_form, form):
        hot: Callable[..., Any] | None = entry.hot
        return hot
    hot = _build(entry, key, backend, kinds, tensor, signature, fallback, state, guards)
    retire([entry])  # the one built for another backend= or registry state
    entry.hot, entry.hot_form = (NOT_BUILT if hot is None else hot), form
    return hot


def _same_form(a: tuple[Any, Any], b: tuple[Any, Any]) -> bool:
    backend_a, backend_b = a[0], b[0]
    if not (backend_a is backend_b or (type(backend_a) is str and type(backend_b) is str and backend_a == backend_b)):
        return False
    if a[1] is None or b[1] is None:
        return a[1] is b[1]
    return a[1][0] == b[1][0] and all(x is y for x, y in zip(a[1][1:], b[1][1:]))


def _build(entry: Any, key: tuple[Any, ...], backend: Any, kinds: Sequence[str], tensor: type,
           signature: inspect.Signature, fallback: Callable[..., Any], state: Any,
           guards: Sequence[Any] = ()) -> Callable[..., Any] | None:
    make_hot = getattr(entry.launcher, "make_hot", None)
    if make_hot is None or getattr(entry.launcher, "retire_hot", None) is None or entry.target is not None \
            or entry.failed is None or key[1] is not None or key[2] is not None:
        return None
    expected = expectations(key, kinds, tensor)
    if expected is None or (backend is None and registry.default() is not key[0]):
        return None
    defaults = [MISSING_DEFAULT if p.default is inspect.Parameter.empty or p.default is MISSING else p.default
                for p in signature.parameters.values()]
    if guards:
        triples = [(g.namespace, g.name, g.value) for g in guards]
        hot: Callable[..., Any] | None = make_hot(fallback, entry.compiled, entry.failed, list(signature.parameters),
                                                  defaults, expected, backend, state, guards=triples)
        return hot
    hot = make_hot(fallback, entry.compiled, entry.failed, list(signature.parameters), defaults, expected,
                   backend, state)
    return hot


def chained(chain: Chain, entry: Any, hot: Callable[..., Any], fallback: Callable[..., Any]) -> Chain:
    """``chain`` with ``entry``'s ``hot`` launch first (at most ``CHAIN_LENGTH``, one per entry),
    each member linked to the next and the last to ``fallback`` (the launch function); a member
    left out is linked back to its own launch function (a ``kernel[grid]`` the caller kept may
    still call it, and nothing it links to may be freed)."""
    if chain and chain[0][1] is hot:
        return chain
    new = [(entry, hot), *[c for c in chain if c[0] is not entry and c[1] is not hot]][:CHAIN_LENGTH]
    for (member_entry, member), after in zip(new, [c[1] for c in new[1:]] + [fallback]):
        member_entry.launcher.link_hot(member, after)
    for member_entry, member in chain:
        if all(member is not kept for _, kept in new):
            member_entry.launcher.link_hot(member, None)
    return new


def unchained(chain: Chain) -> Chain:
    """An empty chain; each member of ``chain`` linked back to its own launch function."""
    for entry, member in chain:
        entry.launcher.link_hot(member, None)
    return []


def retire(entries: Any) -> None:
    """Retire the hot launches of ``entries`` (launch plans being dropped): each hands every
    call to its launch function from now on."""
    for entry in entries:
        hot = getattr(entry, "hot", None)
        if hot is not None and hot is not NOT_BUILT:
            entry.launcher.retire_hot(hot)
