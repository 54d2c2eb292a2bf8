"""OpenCL C names of tiles types, and the helper functions every generated program starts
with (16-bit float rounding, bf16 bits): the text half of the OpenCL dialect."""

from __future__ import annotations

from ...core import dtypes as D  # noqa: N812
from ...core.dtypes import DType

# how a value lives in a register; float16/bfloat16 are held as float, rounded after every op
REGISTER: dict[DType, str] = {
    D.int1: "bool", D.int8: "char", D.int16: "short", D.int32: "int", D.int64: "long",
    D.uint8: "uchar", D.uint16: "ushort", D.uint32: "uint", D.uint64: "ulong",
    D.float16: "float", D.bfloat16: "float", D.float32: "float", D.float64: "double",
}
# how an element lives in global memory
MEMORY: dict[DType, str] = {**REGISTER, D.int1: "uchar", D.float16: "half", D.bfloat16: "ushort"}
# local memory holds register values (bool as uchar, pointers as ulong)
LOCAL: dict[DType, str] = {**REGISTER, D.int1: "uchar"}
UNSIGNED: dict[int, str] = {8: "uchar", 16: "ushort", 32: "uint", 64: "ulong"}


PRELUDE = """\
inline float tiles_round_f16(float x) {
  ushort h; vstore_half_rte(x, 0, (__private half*)&h); return vload_half(0, (__private const half*)&h);
}
inline float tiles_round_f16_rtz(float x) {
  ushort h; vstore_half_rtz(x, 0, (__private half*)&h); return vload_half(0, (__private const half*)&h);
}
inline ushort tiles_f16_bits(float x) {
  /* vstore_half turns every NaN into one pattern; keep the payload vload_half carried in */
  if (isnan(x)) {
    uint u = as_uint(x); ushort m = (ushort)((u >> 13) & 0x3ff);
    return (ushort)(((u >> 16) & 0x8000) | 0x7c00 | (m ? m : 0x200));
  }
  ushort h; vstore_half_rte(x, 0, (__private half*)&h); return h;
}
inline float tiles_f16_from_bits(ushort h) {
  /* NVIDIA's vload_half quiets NaNs; build them by hand so their payload survives */
  if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
    return as_float(((uint)(h & 0x8000) << 16) | 0x7f800000u | ((uint)(h & 0x3ff) << 13));
  return vload_half(0, (__private const half*)&h);
}
inline float tiles_round_bf16(float x) {
  uint u = as_uint(x);
  if (isnan(x)) return as_float((u | 0x400000u) & 0xffff0000u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return as_float(u & 0xffff0000u);
}
inline float tiles_round_bf16_rtz(float x) {
  uint u = as_uint(x);
  if (isnan(x)) return as_float((u | 0x400000u) & 0xffff0000u);
  return as_float(u & 0xffff0000u);
}
inline float tiles_bf16_from_bits(ushort b) { return as_float((uint)b << 16); }
inline ushort tiles_bf16_bits(float x) { return (ushort)(as_uint(x) >> 16); }
"""

PRELUDE_FP64 = """\
inline float tiles_round_f16_d(double x) {
  ushort h; vstore_half_rte(x, 0, (__private half*)&h); return vload_half(0, (__private const half*)&h);
}
inline float tiles_round_f16_d_rtz(double x) {
  ushort h; vstore_half_rtz(x, 0, (__private half*)&h); return vload_half(0, (__private const half*)&h);
}
inline float tiles_round_bf16_d(double d) {
  float f = convert_float_rtz(d);
  uint u = as_uint(f);
  if (!isnan(d) && (double)f != d) u |= 1u;  /* round to odd, then to nearest even */
  return tiles_round_bf16(as_float(u));
}
inline float tiles_round_bf16_d_rtz(double d) { return tiles_round_bf16_rtz(convert_float_rtz(d)); }
"""
