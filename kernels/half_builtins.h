// kernels/half_builtins.h — the half overloads of OpenCL C's built-in functions that clgrad's
// kernels call, for a compiler that runs half arithmetic under the cl_khr_fp16 pragma but does
// not declare the extension's built-ins (NVIDIA's OpenCL: the H200's driver lists no
// cl_khr_fp16, builds `half x = a * b` right, and finds `exp(x)` ambiguous between the float and
// double overloads). kernels/common.h includes this file only there (CLGRAD_FP16_PRAGMA set by
// clgrad/runtime/device.py from clgrad/_probe.py's probe_fp16 verdict, and the compiler not
// defining cl_khr_fp16 itself).
//
// Each overload computes in float and rounds once to half, as the OpenCL C specification
// allows for the half built-ins (section 7.4, "Relative error as ULPs" for half: float's
// results carry more than twice half's 11 significant bits, so a float result rounded to half
// is within the half functions' error bounds). The relational functions return int for half
// and shortN for halfN (the specification's types: -1 where true for vectors). vloadN/vstoreN
// move halfN as the ushortN of the same bits. Conversions are spelled per component (the
// extension's convert_halfN/convert_floatN are not declared either).
#ifndef CLGRAD_HALF_BUILTINS_H
#define CLGRAD_HALF_BUILTINS_H

#define HB_OVL __attribute__((overloadable))

// halfN <-> floatN, intN -> shortN, per component
HB_OVL inline float2 hb_f(half2 x) { return (float2)((float)x.s0, (float)x.s1); }
HB_OVL inline float3 hb_f(half3 x) { return (float3)((float)x.s0, (float)x.s1, (float)x.s2); }
HB_OVL inline float4 hb_f(half4 x) { return (float4)(hb_f(x.lo), hb_f(x.hi)); }
HB_OVL inline float8 hb_f(half8 x) { return (float8)(hb_f(x.lo), hb_f(x.hi)); }
HB_OVL inline float16 hb_f(half16 x) { return (float16)(hb_f(x.lo), hb_f(x.hi)); }
HB_OVL inline half2 hb_h(float2 x) { return (half2)((half)x.s0, (half)x.s1); }
HB_OVL inline half3 hb_h(float3 x) { return (half3)((half)x.s0, (half)x.s1, (half)x.s2); }
HB_OVL inline half4 hb_h(float4 x) { return (half4)(hb_h(x.lo), hb_h(x.hi)); }
HB_OVL inline half8 hb_h(float8 x) { return (half8)(hb_h(x.lo), hb_h(x.hi)); }
HB_OVL inline half16 hb_h(float16 x) { return (half16)(hb_h(x.lo), hb_h(x.hi)); }
HB_OVL inline short2 hb_s(int2 x) { return (short2)((short)x.s0, (short)x.s1); }
HB_OVL inline short3 hb_s(int3 x) { return (short3)((short)x.s0, (short)x.s1, (short)x.s2); }
HB_OVL inline short4 hb_s(int4 x) { return (short4)(hb_s(x.lo), hb_s(x.hi)); }
HB_OVL inline short8 hb_s(int8 x) { return (short8)(hb_s(x.lo), hb_s(x.hi)); }
HB_OVL inline short16 hb_s(int16 x) { return (short16)(hb_s(x.lo), hb_s(x.hi)); }

// f(x) for half and halfN
#define HB_UNARY_N(f, n) \
    HB_OVL inline half##n f(half##n x) { return hb_h(f(hb_f(x))); }
#define HB_UNARY(f) \
    HB_OVL inline half f(half x) { return (half)f((float)x); } \
    HB_UNARY_N(f, 2) HB_UNARY_N(f, 3) HB_UNARY_N(f, 4) HB_UNARY_N(f, 8) HB_UNARY_N(f, 16)

// f(x, y): both halfN; with SCALAR, also (halfN, half) as min, max, fmin and fmax have
#define HB_BINARY_N(f, n) \
    HB_OVL inline half##n f(half##n x, half##n y) { return hb_h(f(hb_f(x), hb_f(y))); }
#define HB_BINARY_S(f, n) \
    HB_OVL inline half##n f(half##n x, half y) { return hb_h(f(hb_f(x), (float)y)); }
#define HB_BINARY(f) \
    HB_OVL inline half f(half x, half y) { return (half)f((float)x, (float)y); } \
    HB_BINARY_N(f, 2) HB_BINARY_N(f, 3) HB_BINARY_N(f, 4) HB_BINARY_N(f, 8) HB_BINARY_N(f, 16)
#define HB_BINARY_SCALAR(f) HB_BINARY(f) \
    HB_BINARY_S(f, 2) HB_BINARY_S(f, 3) HB_BINARY_S(f, 4) HB_BINARY_S(f, 8) HB_BINARY_S(f, 16)

// f(x, y, z): all halfN (fma, mad); clamp also (halfN, half, half)
#define HB_TERNARY_N(f, n) \
    HB_OVL inline half##n f(half##n x, half##n y, half##n z) { \
        return hb_h(f(hb_f(x), hb_f(y), hb_f(z))); }
#define HB_TERNARY(f) \
    HB_OVL inline half f(half x, half y, half z) { return (half)f((float)x, (float)y, (float)z); } \
    HB_TERNARY_N(f, 2) HB_TERNARY_N(f, 3) HB_TERNARY_N(f, 4) HB_TERNARY_N(f, 8) HB_TERNARY_N(f, 16)
#define HB_CLAMP_S(n) \
    HB_OVL inline half##n clamp(half##n x, half lo, half hi) { \
        return hb_h(clamp(hb_f(x), (float)lo, (float)hi)); }

// relational: int for half, shortN for halfN
#define HB_REL_N(f, n) \
    HB_OVL inline short##n f(half##n x) { return hb_s(f(hb_f(x))); }
#define HB_REL(f) \
    HB_OVL inline int f(half x) { return f((float)x); } \
    HB_REL_N(f, 2) HB_REL_N(f, 3) HB_REL_N(f, 4) HB_REL_N(f, 8) HB_REL_N(f, 16)

// select(a, b, c): b where c (scalar: c != 0; vectors: c's most significant bit), else a.
// Bits move through unions (the extension's as_halfN are not declared either).
#define HB_SELECT_N(n, C) \
    HB_OVL inline half##n select(half##n a, half##n b, C##n c) { \
        union { half##n h; short##n s; } x, y; \
        x.h = a; \
        y.h = b; \
        x.s = select(x.s, y.s, c); \
        return x.h; }

// vloadN / vstoreN on half pointers, per address space: the ushortN of the same bits
#define HB_VLOAD(n, AS) \
    HB_OVL inline half##n vload##n(size_t i, const AS half *p) { \
        union { ushort##n u; half##n h; } r; \
        r.u = vload##n(i, (const AS ushort *)p); \
        return r.h; }
#define HB_VSTORE(n, AS) \
    HB_OVL inline void vstore##n(half##n v, size_t i, AS half *p) { \
        union { half##n h; ushort##n u; } r; \
        r.h = v; \
        vstore##n(r.u, i, (AS ushort *)p); }
#define HB_VLS(n) \
    HB_VLOAD(n, __global) HB_VLOAD(n, __local) HB_VLOAD(n, __private) HB_VLOAD(n, __constant) \
    HB_VSTORE(n, __global) HB_VSTORE(n, __local) HB_VSTORE(n, __private)

// convert_half16 from every element type and convert_X16 of a half16 (kernels/copy.cl's
// 16-wide copies between dtypes): through float, as a C cast (integers toward zero)
#define HB_CONVERT16(X) \
    HB_OVL inline half16 convert_half16(X##16 x) { \
        return (half16)(hb_h(convert_float8(x.lo)), hb_h(convert_float8(x.hi))); } \
    HB_OVL inline X##16 convert_##X##16(half16 x) { return convert_##X##16(hb_f(x)); }
HB_CONVERT16(char) HB_CONVERT16(uchar) HB_CONVERT16(short) HB_CONVERT16(ushort)
HB_CONVERT16(int) HB_CONVERT16(uint) HB_CONVERT16(long) HB_CONVERT16(ulong) HB_CONVERT16(float)
#ifdef CLGRAD_HAS_FP64
HB_CONVERT16(double)
#endif
HB_OVL inline half16 convert_half16(half16 x) { return x; }

HB_UNARY(exp) HB_UNARY(expm1) HB_UNARY(log) HB_UNARY(log1p) HB_UNARY(log2)
HB_UNARY(sqrt) HB_UNARY(rsqrt) HB_UNARY(tanh) HB_UNARY(erf) HB_UNARY(sin) HB_UNARY(cos)
HB_UNARY(fabs) HB_UNARY(floor) HB_UNARY(ceil) HB_UNARY(trunc) HB_UNARY(round) HB_UNARY(rint)
HB_BINARY_SCALAR(min) HB_BINARY_SCALAR(max) HB_BINARY_SCALAR(fmin) HB_BINARY_SCALAR(fmax)
HB_BINARY(pow) HB_BINARY(fmod) HB_BINARY(atan2) HB_BINARY(copysign)
HB_TERNARY(fma) HB_TERNARY(mad) HB_TERNARY(clamp)
HB_CLAMP_S(2) HB_CLAMP_S(3) HB_CLAMP_S(4) HB_CLAMP_S(8) HB_CLAMP_S(16)
HB_REL(isnan) HB_REL(isinf) HB_REL(isfinite) HB_REL(signbit)
HB_OVL inline half select(half a, half b, short c) { return c ? b : a; }
HB_OVL inline half select(half a, half b, ushort c) { return c ? b : a; }
HB_SELECT_N(2, short) HB_SELECT_N(3, short) HB_SELECT_N(4, short) HB_SELECT_N(8, short)
HB_SELECT_N(16, short) HB_SELECT_N(2, ushort) HB_SELECT_N(3, ushort) HB_SELECT_N(4, ushort)
HB_SELECT_N(8, ushort) HB_SELECT_N(16, ushort)
HB_VLS(2) HB_VLS(3) HB_VLS(4) HB_VLS(8) HB_VLS(16)

#endif  // CLGRAD_HALF_BUILTINS_H
