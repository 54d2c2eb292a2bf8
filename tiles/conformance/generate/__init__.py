"""Generated programs: Hypothesis builds random well-typed kernels as Python source."""
