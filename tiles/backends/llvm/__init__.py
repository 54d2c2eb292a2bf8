"""LLVM IR generation shared by the CUDA (NVPTX) and ROCm (AMDGPU) backends."""
