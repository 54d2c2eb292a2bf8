"""The CUDA backend's native launch path, in one room.

``launcher.py`` builds a compiled kernel's launchers (``general`` for any arguments, ``keyed`` for
one launch key of the jit); the rest makes launches cheap with native code JIT-compiled once per
process by llvmlite and wrapped as Python builtins:

- ``trampoline.py``: one call from a record ``struct.pack`` built to ``cuLaunchKernel``;
- ``direct_launch.py``: the launch from the arguments themselves (the jit's binder calls it);
- ``hot_launch.py`` (its IR in ``hot_launch_ir.py``): the jit's native inline cache, which checks
  one launch key's facts (``backends/launch_facts.py``) and calls the direct launch;
- ``capi.py``: what their C-API LLVM IR shares: the constants' layouts, the declarations, the
  template filling, the object layout they read, and building the builtins.

``docs/internals.md`` (section 1) follows a launch through them.
"""
