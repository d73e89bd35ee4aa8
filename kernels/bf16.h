// kernels/bf16.h — bfloat16 (clgrad/dtypes.py): float32's sign, exponent and top 7 mantissa
// bits, stored as ushort (OpenCL C has no bfloat16 type). Only kernels built with the BF16
// define may see it (clgrad/runtime/device.py refuses the rest).
#ifndef CLGRAD_BF16_H
#define CLGRAD_BF16_H

// Exact: the stored bits are the top half of the float's.
inline float bf16_to_float(ushort v) { return as_float((uint)v << 16); }

// Round to nearest, ties to even; NaN stays a quiet NaN with its sign; beyond the largest
// bfloat16 (after rounding) is inf. Source: c10/util/BFloat16.h, round_to_nearest_even.
inline ushort float_to_bf16(float f) {
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);
    return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
#endif
