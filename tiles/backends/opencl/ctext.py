"""OpenCL C names of tiles types, and the helper functions every generated program starts
with (16-bit and 8-bit float rounding and bits): the text half of the OpenCL dialect."""

from __future__ import annotations

from ...core import dtypes as D  # noqa: N812
from ...core.dtypes import DType

# how a value lives in a register; 16- and 8-bit floats are held as float, rounded after every op
REGISTER: dict[DType, str] = {
    D.int1: "bool", D.int8: "char", D.int16: "short", D.int32: "int", D.int64: "long",
    D.uint8: "uchar", D.uint16: "ushort", D.uint32: "uint", D.uint64: "ulong",
    D.float8e4nv: "float", D.float8e5: "float",
    D.float16: "float", D.bfloat16: "float", D.float32: "float", D.float64: "double",
}
# how an element lives in global memory: 16-bit floats as their bits (every access one type: pocl
# misplaced stores through a ushort* cast of a half* pointer, vLLM's fused MoE on its dead blocks)
MEMORY: dict[DType, str] = {**REGISTER, D.int1: "uchar", D.float16: "ushort", D.bfloat16: "ushort",
                            D.float8e4nv: "uchar", D.float8e5: "uchar"}
# local memory holds register values (bool as uchar, pointers as ulong)
LOCAL: dict[DType, str] = {**REGISTER, D.int1: "uchar"}
UNSIGNED: dict[int, str] = {8: "uchar", 16: "ushort", 32: "uint", 64: "ulong"}


PRELUDE = """\
/* float16 conversions in integer arithmetic: pocl miscompiled the vstore_half/vload_half forms
   (through an address-taken private ushort) inside loops that also hold a barrier */
inline ushort tiles_f16_bits_mode(float x, bool rtz) {
  uint u = as_uint(x), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) {  /* NaN: the payload's top bits, or 1 when they are all zero (as NumPy) */
    ushort m = (ushort)((u >> 13) & 0x3ffu);
    return (ushort)(sign | 0x7c00u | (m ? m : 1u));
  }
  if (rtz ? a >= 0x47800000u : a >= 0x477ff000u)  /* beyond the largest half after rounding */
    return (ushort)(sign | (rtz && a != 0x7f800000u ? 0x7bffu : 0x7c00u));
  if (a >= 0x38800000u) {  /* a normal half: rebias the exponent, round away 13 mantissa bits */
    uint r = a - 0x38000000u;
    if (!rtz) r += 0xfffu + ((r >> 13) & 1u);
    return (ushort)(sign | (r >> 13));
  }
  float q = as_float(a) * 16777216.0f;  /* a subnormal half (or zero): a whole number of 2^-24 */
  return (ushort)(sign | (uint)(rtz ? trunc(q) : rint(q)));
}
inline ushort tiles_f16_bits(float x) { return tiles_f16_bits_mode(x, false); }
inline float tiles_f16_from_bits(ushort h) {
  uint sign = ((uint)h & 0x8000u) << 16, e = ((uint)h >> 10) & 0x1fu, m = (uint)h & 0x3ffu;
  if (e == 0x1fu) return as_float(sign | 0x7f800000u | (m << 13));  /* infinity, NaN with its payload */
  if (e == 0u) return as_float(sign | as_uint((float)m * 5.9604644775390625e-8f));  /* m * 2^-24 */
  return as_float(sign | ((e + 112u) << 23) | (m << 13));
}
inline float tiles_round_f16(float x) { return tiles_f16_from_bits(tiles_f16_bits_mode(x, false)); }
inline float tiles_round_f16_rtz(float x) { return tiles_f16_from_bits(tiles_f16_bits_mode(x, true)); }
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
/* fp8 with `mbits` mantissa bits and exponent bias `bias`; `fn`: e4m3fn (no infinity, NaN is
   S.1111.111); otherwise e5m2 (IEEE-like).  NaN decodes to the quiet NaN 0x7fc00000 with the
   byte's sign, as ml_dtypes does.  Encoding saturates as floats.narrow: a finite value past the
   largest gives the largest; infinities too with `sat_inf` (a cast to nearest: PTX's satfinite). */
inline float tiles_f8_decode(uchar b, int mbits, int bias, bool fn) {
  int e = (b & 0x7f) >> mbits, m = b & ((1 << mbits) - 1);
  float v;
  if (fn ? (b & 0x7f) == 0x7f : e == (0x7f >> mbits)) v = (fn || m) ? as_float(0x7fc00000u) : INFINITY;
  else if (e == 0) v = ldexp((float)m, 1 - bias - mbits);
  else v = ldexp((float)(m | (1 << mbits)), e - bias - mbits);
  return (b & 0x80) ? -v : v;
}
inline uchar tiles_f8_encode(float x, int mbits, int bias, bool fn, bool rtz, bool sat_inf) {
  uchar sign = (uchar)((as_uint(x) >> 24) & 0x80);
  if (isnan(x)) return sign | (fn ? 0x7f : 0x7e);
  if (!fn && !sat_inf && isinf(x)) return sign | 0x7c;
  float a = fabs(x);
  if (a > (fn ? 448.0f : 57344.0f)) return sign | (fn ? 0x7e : 0x7b);
  if (a < ldexp(1.0f, 1 - bias)) {  /* zero or subnormal: a whole number of the smallest step */
    float q = a * ldexp(1.0f, mbits + bias - 1);
    return sign | (uchar)(rtz ? trunc(q) : rint(q));
  }
  uint u = as_uint(a), shift = 23 - mbits;
  if (!rtz) u += ((1u << (shift - 1)) - 1u) + ((u >> shift) & 1u);
  u >>= shift;
  int e = (int)(u >> mbits) - 127 + bias;
  return sign | (uchar)((e << mbits) | (u & ((1u << mbits) - 1u)));
}
inline float tiles_f8e4_from_bits(uchar b) { return tiles_f8_decode(b, 3, 7, true); }
inline uchar tiles_f8e4_encode(float x, bool rtz) { return tiles_f8_encode(x, 3, 7, true, rtz, true); }
inline uchar tiles_f8e4_bits(float x) { return tiles_f8e4_encode(x, false); }
inline float tiles_round_f8e4(float x) { return tiles_f8e4_from_bits(tiles_f8e4_bits(x)); }
inline float tiles_round_f8e4_satfinite(float x) { return tiles_round_f8e4(x); }
inline float tiles_round_f8e4_rtz(float x) { return tiles_f8e4_from_bits(tiles_f8e4_encode(x, true)); }
inline float tiles_f8e5_from_bits(uchar b) { return tiles_f8_decode(b, 2, 15, false); }
inline uchar tiles_f8e5_encode(float x, bool rtz, bool sat) { return tiles_f8_encode(x, 2, 15, false, rtz, sat); }
inline uchar tiles_f8e5_bits(float x) { return tiles_f8e5_encode(x, false, false); }
inline float tiles_round_f8e5(float x) { return tiles_f8e5_from_bits(tiles_f8e5_bits(x)); }
inline float tiles_round_f8e5_satfinite(float x) { return tiles_f8e5_from_bits(tiles_f8e5_encode(x, false, true)); }
inline float tiles_round_f8e5_rtz(float x) { return tiles_f8e5_from_bits(tiles_f8e5_encode(x, true, false)); }
/* a * b + c of 16- and 8-bit floats held in floats, rounded to odd (the last bit set where inexact),
   so that rounding it to the narrow type is the one rounding of the exact result: the product is
   exact in float, the sum's error comes from TwoSum (FP_CONTRACT is off).  fma() in float then a
   narrowing rounds twice (8.8125 * -6 + 2^-126 gave bfloat16 -53, not -52.75). */
inline float tiles_fma_odd(float a, float b, float c) {
  float p = a * b, s = p + c, v = s - p;
  float err = (p - (s - v)) + (c - v);
  if (!(err != 0.0f) || isnan(err) || (as_uint(s) & 1u)) return s;
  return nextafter(s, err > 0.0f ? INFINITY : -INFINITY);
}
"""

PRELUDE_FP64 = """\
inline float tiles_round_bf16_d(double d) {
  float f = convert_float_rtz(d);
  uint u = as_uint(f);
  if (!isnan(d) && (double)f != d) u |= 1u;  /* round to odd, then to nearest even */
  return tiles_round_bf16(as_float(u));
}
inline float tiles_round_bf16_d_rtz(double d) { return tiles_round_bf16_rtz(convert_float_rtz(d)); }
inline float tiles_round_odd_f32(double d) {
  float f = convert_float_rtz(d);
  uint u = as_uint(f);
  if (!isnan(d) && (double)f != d) u |= 1u;
  return as_float(u);
}
inline float tiles_round_f16_d(double d) { return tiles_round_f16(tiles_round_odd_f32(d)); }
inline float tiles_round_f16_d_rtz(double d) { return tiles_round_f16_rtz(convert_float_rtz(d)); }
inline float tiles_round_f8e4_d_satfinite(double d) { return tiles_round_f8e4(tiles_round_odd_f32(d)); }
inline float tiles_round_f8e4_d_rtz(double d) { return tiles_round_f8e4_rtz(convert_float_rtz(d)); }
inline float tiles_round_f8e5_d_satfinite(double d) { return tiles_round_f8e5_satfinite(tiles_round_odd_f32(d)); }
inline float tiles_round_f8e5_d_rtz(double d) { return tiles_round_f8e5_rtz(convert_float_rtz(d)); }
"""
