"""Triton's ``triton.knobs``, as far as it has meaning in tiles.

Each group (``knobs.runtime``, ``knobs.cache``...) has Triton 3.9's attribute names.  Those that
mean something in tiles read and write the tiles environment variable that means it
(``knobs.runtime.interpret`` is ``TILES_INTERPRET``, ``knobs.cache.dir`` ``TILES_CACHE_DIR``...:
``LINKED``), so setting one changes what tiles does from the next launch on.  The others are
kept as set and change nothing (tiles has no ptxas options, launch hooks or AMD scheduling
knobs); reading one gives what was set, else Triton's default.  ``group.scope()`` restores a
group's values on exit, as Triton's does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from . import config

# (group, attribute) -> (the tiles environment variable it reads and writes, "bool" or "str")
LINKED: dict[tuple[str, str], tuple[str, str]] = {
    ("runtime", "interpret"): ("TILES_INTERPRET", "bool"),
    ("runtime", "debug"): ("TILES_DEBUG", "bool"),
    ("cache", "dir"): ("TILES_CACHE_DIR", "str"),
    ("compilation", "always_compile"): ("TILES_ALWAYS_COMPILE", "bool"),
    ("autotuning", "print"): ("TILES_PRINT_AUTOTUNING", "bool"),
}

# Triton's other attributes, with its defaults: accepted, kept, without effect in tiles.
UNLINKED: dict[str, dict[str, Any]] = {
    "build": {"cc": None, "cudacrt_path": None, "cudart_path": None, "backend_dirs": None, "impl": None},
    "cache": {"home_dir": os.path.expanduser("~/"), "dump_dir": None, "override_dir": None,
              "manager_class": None, "remote_manager_class": None},
    "compilation": {"override": False, "dump_ir": False, "store_binary_only": False, "use_ir_loc": None,
                    "enable_asan": False, "disable_line_info": False, "front_end_debugging": False,
                    "allow_non_constexpr_globals": False, "listener": None, "instrumentation_mode": ""},
    "autotuning": {"cache": False},
    "runtime": {"override_arch": None, "launch_enter_hook": None, "launch_exit_hook": None,
                "jit_cache_hook": None, "jit_post_compile_hook": None, "add_stages_inspection_hook": None},
    "language": {"fp32_default": None, "default_fp_fusion": True, "force_disable_fp_fusion": False},
    "nvidia": {"ptxas_options": None, "disable_ptxas_opt": False, "dump_nvptx": False, "libdevice_path": None,
               "libcuda_path": None, "mock_ptx_version": None, "dump_ptxas_log": False},
    "amd": {"use_buffer_ops": True, "use_buffer_atomics": True, "dump_amdgcn": False, "libhip_path": None},
    "proton": {"disable": False},
}

_CURRENT = {"TILES_INTERPRET": config.interpret, "TILES_DEBUG": config.debug,
            "TILES_CACHE_DIR": lambda: str(config.cache_dir()), "TILES_ALWAYS_COMPILE": config.always_compile,
            "TILES_PRINT_AUTOTUNING": config.print_autotuning}


class Group:
    """One of Triton's knob groups."""

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_values", dict(UNLINKED.get(name, {})))

    def _linked(self, attr: str) -> tuple[str, str] | None:
        return LINKED.get((self._name, attr))

    def __getattr__(self, attr: str) -> Any:
        linked = self._linked(attr)
        if linked is not None:
            return _CURRENT[linked[0]]()
        values = object.__getattribute__(self, "_values")
        if attr in values:
            return values[attr]
        raise AttributeError(f"triton.knobs.{self._name} has no knob {attr!r} (tiles knows: "
                             f"{', '.join(sorted(self.names()))})")

    def __setattr__(self, attr: str, value: Any) -> None:
        linked = self._linked(attr)
        if linked is None:
            self._values[attr] = value
            return
        variable, kind = linked
        if value is None:
            os.environ.pop(variable, None)
        elif kind == "bool":
            os.environ[variable] = "1" if value else "0"
        else:
            os.environ[variable] = str(value)

    def __delattr__(self, attr: str) -> None:
        linked = self._linked(attr)
        if linked is not None:
            os.environ.pop(linked[0], None)
        else:
            self._values[attr] = UNLINKED.get(self._name, {}).get(attr)

    def names(self) -> set[str]:
        return set(self._values) | {a for g, a in LINKED if g == self._name}

    def copy(self) -> Group:
        """A copy of the group, its kept values copied (Triton's ``knobs.X.copy()``; the linked knobs
        of a copy still read and write their environment variables)."""
        out = Group(self._name)
        out._values.update(self._values)
        return out

    @property
    def knob_descriptors(self) -> dict[str, Any]:
        """Triton's map of knob name -> its environment variable (``.key``), which its test fixture
        ``fresh_knobs`` unsets.  Empty here: the linked knobs' variables are tiles' own
        (``TILES_INTERPRET``...), which a test must not lose in the middle of a run."""
        return {}

    def reset(self) -> Group:
        """Back to the defaults (environment variables of linked knobs are left as they are)."""
        self._values.clear()
        self._values.update(UNLINKED.get(self._name, {}))
        return self

    @contextmanager
    def scope(self) -> Iterator[Group]:
        """Restore every value of this group on exit."""
        saved = dict(self._values)
        env = {v: os.environ.get(v) for (g, _), (v, _) in LINKED.items() if g == self._name}
        try:
            yield self
        finally:
            self._values.clear()
            self._values.update(saved)
            for variable, value in env.items():
                if value is None:
                    os.environ.pop(variable, None)
                else:
                    os.environ[variable] = value


base_knobs = Group  # Triton's base class of the groups (its test fixtures look groups up by it)
propagate_env = True  # Triton's switch for knobs set from the environment; kept, without effect

build = Group("build")
cache = Group("cache")
compilation = Group("compilation")
autotuning = Group("autotuning")
runtime = Group("runtime")
language = Group("language")
nvidia = Group("nvidia")
amd = Group("amd")
proton = Group("proton")

__all__ = ["LINKED", "UNLINKED", "amd", "autotuning", "base_knobs", "build", "cache", "compilation", "language",
           "nvidia", "propagate_env", "proton", "runtime"]
