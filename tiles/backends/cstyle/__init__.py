"""C-style source emitters: one base (``emitter.CStyleEmitter``) that writes C statements
from a dialect table (``dialect.CDialect``: types, qualifiers, builtins, barriers, atomics,
math spellings).  OpenCL C is one dialect (``backends/opencl/emit_c.py``);
docs/writing-a-backend.md shows how to add another."""
