// kernels/elementwise.cl — elementwise ops over strided views, one work item per element.
// Defines: T element type; IS_FLOAT for floating types (enables the math ops); IS_BOOL for
// bool (T uchar holding 0 or 1).
// Every kernel: (n, nd, shape, out, out view, operands with their views[, scalars]).
// Scalar variants end in _sa (scalar is the first operand) or _sb (scalar is the second).
#include "common.h"

#define EW_HEAD long i = get_global_id(0); if (i >= n) return;

#ifdef CONTIG
// <name>_x4, in CONTIG builds (every operand contiguous like the output; GPUs take them:
// clgrad/ops/_util.py flat_plan): work item g takes elements g, g + G, g + 2G, g + 3G (G the
// global size, so each step is coalesced), all its loads issued before its stores: four
// loads in flight per work item (one per item reached 63 % of the copy bandwidth on an
// H200, bench/gpu/bandwidth.py). An operand may be the output itself (in-place ops): each
// element is read before it is written, by the one work item that writes it.
#define X4_IDX                                                                              \
    const long G = get_global_size(0), i0 = get_global_id(0), i1 = i0 + G, i2 = i1 + G,    \
               i3 = i2 + G;
#define X4_LD(p, v, k) (i##k < n ? (p)[(v).off + i##k] : (T)0)
#define X4_LD4(r, p, v) const T r##0 = X4_LD(p, v, 0), r##1 = X4_LD(p, v, 1),              \
                                r##2 = X4_LD(p, v, 2), r##3 = X4_LD(p, v, 3);
#define X4_PUT(k, expr) if (i##k < n) out[vo.off + i##k] = (expr);
#define UNARY_X4(name, expr)                                                                \
__kernel void name##_x4(long n, int nd, shape_t sh, __global T *out, view_t vo,            \
                        __global const T *a, view_t va) {                                  \
    X4_IDX X4_LD4(xa, a, va)                                                                \
    { OPM x = xa0; X4_PUT(0, expr) } { OPM x = xa1; X4_PUT(1, expr) }                       \
    { OPM x = xa2; X4_PUT(2, expr) } { OPM x = xa3; X4_PUT(3, expr) }                       \
}
#define BINARY_OUT_X4(name, OUT, SY, expr)                                                  \
__kernel void name##_x4(long n, int nd, shape_t sh, __global OUT *out, view_t vo,          \
                        __global const T *a, view_t va, __global const T *b, view_t vb) {  \
    X4_IDX X4_LD4(xa, a, va) X4_LD4(yb, b, vb)                                              \
    { OPM x = xa0; OPM y = yb0; X4_PUT(0, expr) }                                           \
    { OPM x = xa1; OPM y = yb1; X4_PUT(1, expr) }                                           \
    { OPM x = xa2; OPM y = yb2; X4_PUT(2, expr) }                                           \
    { OPM x = xa3; OPM y = yb3; X4_PUT(3, expr) }                                           \
}                                                                                           \
__kernel void name##_sb_x4(long n, int nd, shape_t sh, __global OUT *out, view_t vo,       \
                           __global const T *a, view_t va, SCALAR_T ys) {                  \
    X4_IDX X4_LD4(xa, a, va) const OPM y = (SY)ys;                                          \
    { OPM x = xa0; X4_PUT(0, expr) } { OPM x = xa1; X4_PUT(1, expr) }                       \
    { OPM x = xa2; X4_PUT(2, expr) } { OPM x = xa3; X4_PUT(3, expr) }                       \
}                                                                                           \
__kernel void name##_sa_x4(long n, int nd, shape_t sh, __global OUT *out, view_t vo,       \
                           SCALAR_T xs, __global const T *b, view_t vb) {                  \
    X4_IDX X4_LD4(yb, b, vb) const OPM x = (SY)xs;                                          \
    { OPM y = yb0; X4_PUT(0, expr) } { OPM y = yb1; X4_PUT(1, expr) }                       \
    { OPM y = yb2; X4_PUT(2, expr) } { OPM y = yb3; X4_PUT(3, expr) }                       \
}
#else
#define UNARY_X4(name, expr)
#define BINARY_OUT_X4(name, OUT, SY, expr)
#endif

#define UNARY(name, expr)                                                                   \
__kernel void name(long n, int nd, shape_t sh, __global T *out, view_t vo,                 \
                   __global const T *a, view_t va) {                                       \
    EW_HEAD long oo, oa; off2(i, nd, sh, vo, va, &oo, &oa);                                \
    OPM x = a[oa]; out[oo] = (expr);                                                        \
}                                                                                           \
UNARY_X4(name, expr)

// The number of the _sa / _sb forms arrives as SCALAR_T (float for half: the host's
// opscalar) and is used as SY: the arithmetic ops (ARITH) keep it (PyTorch's opmath: half
// x / 70000. is 1.43e-05, not x / inf), every other op rounds it to T first, as before.
// Operands and numbers are computed with in OPM (kernels/common.h: float for half), the
// result rounded to T once.
#ifndef SCALAR_T
#define SCALAR_T T
#endif
#define BINARY_OUT_S(name, OUT, SY, expr)                                                   \
__kernel void name(long n, int nd, shape_t sh, __global OUT *out, view_t vo,               \
                   __global const T *a, view_t va, __global const T *b, view_t vb) {       \
    EW_HEAD long oo, oa, ob; off3(i, nd, sh, vo, va, vb, &oo, &oa, &ob);                   \
    OPM x = a[oa]; OPM y = b[ob]; out[oo] = (expr);                                         \
}                                                                                           \
__kernel void name##_sb(long n, int nd, shape_t sh, __global OUT *out, view_t vo,          \
                        __global const T *a, view_t va, SCALAR_T ys) {                     \
    EW_HEAD long oo, oa; off2(i, nd, sh, vo, va, &oo, &oa);                                \
    const OPM y = (SY)ys; OPM x = a[oa]; out[oo] = (OUT)(expr);                             \
}                                                                                           \
__kernel void name##_sa(long n, int nd, shape_t sh, __global OUT *out, view_t vo,          \
                        SCALAR_T xs, __global const T *b, view_t vb) {                     \
    EW_HEAD long oo, ob; off2(i, nd, sh, vo, vb, &oo, &ob);                                \
    const OPM x = (SY)xs; OPM y = b[ob]; out[oo] = (OUT)(expr);                             \
}                                                                                           \
BINARY_OUT_X4(name, OUT, SY, (OUT)(expr))
#define BINARY_OUT(name, OUT, expr) BINARY_OUT_S(name, OUT, T, expr)
#define ARITH(name, expr) BINARY_OUT_S(name, T, SCALAR_T, expr)

#ifdef IS_FLOAT
#define IS_NAN(v) isnan(v)
#else
#define IS_NAN(v) 0  // integers: never NaN
#endif

#define BINARY(name, expr) BINARY_OUT(name, T, expr)
#define COMPARE(name, expr) BINARY_OUT(name, uchar, (uchar)((expr) ? 1 : 0))

// <op>_op: a kernel whose plain name is an OpenCL C built-in (exp, clamp, sign ...), or
// reads like one (where); never a PyTorch in-place name.
UNARY(neg, -x)
UNARY(abs_op, x < (T)0 ? -x : x)
UNARY(relu, x < (T)0 ? (T)0 : x)  // NaN (and -0) pass through, as PyTorch
UNARY(sign_op, (T)((x > (T)0) - (x < (T)0)))
UNARY(logical_not, (T)(x == (T)0))

#ifdef IS_BOOL
#define ADD(x, y) (T)((x) || (y))  // bool: PyTorch's True + True is True (1), never the byte 2
#else
#define ADD(x, y) ((x) + (y))
#endif
ARITH(add, ADD(x, y))
ARITH(sub, x - y)
ARITH(mul, x * y)
// NaN in either operand gives NaN (x is NaN: x; y is NaN: the comparison fails, so y).
BINARY(maximum, x > y || IS_NAN(x) ? x : y)
BINARY(minimum, x < y || IS_NAN(x) ? x : y)
COMPARE(eq, x == y)
COMPARE(ne, x != y)
COMPARE(lt, x < y)
COMPARE(le, x <= y)
COMPARE(gt, x > y)
COMPARE(ge, x >= y)
BINARY(logical_and, (T)((x != (T)0) && (y != (T)0)))
BINARY(logical_or, (T)((x != (T)0) || (y != (T)0)))

#ifdef IS_FLOAT
UNARY(exp_op, EXP_T(x))
UNARY(log_op, log(x))
UNARY(sqrt_op, sqrt(x))
UNARY(rsqrt_op, rsqrt(x))
UNARY(tanh_op, tanh(x))
// one exp, of -|x| (never overflows): 1 / (1 + e) for x >= 0, e / (1 + e) below (a select,
// not fabs: PoCL's fabs is a call that keeps the loop scalar)
UNARY(sigmoid, (x >= (T)0 ? (T)1 : EXP_T(x < (T)0 ? x : -x)) / ((T)1 + EXP_T(x < (T)0 ? x : -x)))
UNARY(sin_op, sin(x))
UNARY(cos_op, cos(x))
UNARY(floor_op, floor(x))
UNARY(ceil_op, ceil(x))
UNARY(round_op, rint(x))
UNARY(reciprocal, (T)1 / x)
UNARY(square, x * x)
UNARY(log1p_op, log1p(x))  // accurate for |x| << 1 (OpenCL's log1p, <= 2 ulp)
UNARY(expm1_op, expm1(x))
UNARY(erf_op, erf(x))
ARITH(div, x / y)
// The divisor's gradient of x / y, g the incoming gradient: -(g (x / y)) / y, in OPM and
// rounded once. float16: neither the quotient nor g times it is rounded to half, nor
// overflows there (6e4 / 100 with g = 200: g x / y is 1.2e5, inf in half; the gradient
// -1200); in float and double the very roundings of div's own backward before (a / b, g
// times it, over b). _sa: x a number (SCALAR_T, in OPM as div's).
__kernel void div_grad_b(long n, int nd, shape_t sh, __global T *out, view_t vo,
                         __global const T *g, view_t vg, __global const T *a, view_t va,
                         __global const T *b, view_t vb) {
    EW_HEAD long oo, og, oa, ob; off4(i, nd, sh, vo, vg, va, vb, &oo, &og, &oa, &ob);
    OPM y = b[ob];
    out[oo] = -((OPM)g[og] * ((OPM)a[oa] / y)) / y;
}
__kernel void div_grad_b_sa(long n, int nd, shape_t sh, __global T *out, view_t vo,
                            __global const T *g, view_t vg, SCALAR_T xs,
                            __global const T *b, view_t vb) {
    EW_HEAD long oo, og, ob; off3(i, nd, sh, vo, vg, vb, &oo, &og, &ob);
    OPM y = b[ob];
    out[oo] = -((OPM)g[og] * ((OPM)xs / y)) / y;
}
BINARY(pow_op, pow(x, y))
BINARY(atan2_op, atan2(x, y))  // the angle of (y=x, x=y): atan2(input, other), as PyTorch
// -- special functions (clgrad/ops/special.py) ---------------------------------------------
// W: the type they compute in (float for half and float, double for double).
// WC(v): the literal v in W (a float literal for float: no double constants on a device
// without fp64); W_PI, W_2_SQRTPI, W_LOG2E: OpenCL's constants in W.
#ifdef IS_DOUBLE
#define W double
#define WC(v) v
#define W_PI M_PI
#define W_2_SQRTPI M_2_SQRTPI
#define W_LOG2E M_LOG2E
#else
#define W float
#define WC(v) v##f
#define W_PI M_PI_F
#define W_2_SQRTPI M_2_SQRTPI_F
#define W_LOG2E M_LOG2E_F
#endif
// x and y are OPM (float for half), never half: NVIDIA's compiler has no half overloads of
// erfc, lgamma or hypot (kernels/half_builtins.h lacks them; tools/nvidia_half_check.py).
UNARY(erfc_op, erfc(x))
UNARY(lgamma_op, lgamma(x))
UNARY(trunc_op, trunc(x))
UNARY(frac_op, x - trunc(x))
BINARY(hypot_op, hypot(x, y))
BINARY(copysign_op, copysign(x, y))
// log(exp(x) + exp(y)) without overflow; equal infinities give themselves (PyTorch's)
inline W logaddexp_w(W a, W b) {
    if (isinf(a) && a == b) return a;
    W m = fmax(a, b);
    return isnan(a) || isnan(b) ? a + b : m + log1p(exp(-fabs(a - b)));
}
inline W logaddexp2_w(W a, W b) {
    if (isinf(a) && a == b) return a;
    W m = fmax(a, b);
    return isnan(a) || isnan(b) ? a + b : m + log1p(exp2(-fabs(a - b))) * W_LOG2E;
}
BINARY(logaddexp_op, (T)logaddexp_w((W)x, (W)y))
BINARY(logaddexp2_op, (T)logaddexp2_w((W)x, (W)y))
// x * log(y), 0 where x is 0 unless y is NaN (PyTorch's xlogy)
BINARY(xlogy_op, isnan(y) ? y : x == (T)0 ? (OPM)0 : x * log(y))
// erfinv (no OpenCL built-in): Giles' single-precision approximation (M. Giles,
// "Approximating the erfinv function", GPU Computing Gems Jade, 2011; relative error < 4e-7
// for |y| < 1 - 2^-24), then refined: Halley steps on erf(x) = |y| (|y| <= 0.5; cubic), or,
// in the tails, Newton steps on log(erfc(x)) = log(1 - |y|), where 1 - |y| is exact and erfc
// keeps its relative accuracy (and the log form converges from the approximation's larger
// error beyond float's range, up to 1 - |y| = 2^-53): one step for float (half computes in
// float), four for double. What remains is the error of OpenCL's erf/erfc (<= 16 ulp, the
// spec's bound), measured against a float64 reference in tests/test_special.py (float32
// within 4 ulp, float64 within 1e-14 relative). |y| = 1 gives +-inf, |y| > 1 NaN.
inline W erfinv_w(W y) {
    W a = fabs(y);
    if (!(a < WC(1.0))) return a == WC(1.0) ? copysign((W)INFINITY, y) : (W)NAN;
    W t = WC(1.0) - a;
    float w = -log((float)t * (float)(WC(1.0) + a)), p;
    if (w < 5.0f) {
        w -= 2.5f;
        p = 2.81022636e-08f;
        p = 3.43273939e-07f + p * w; p = -3.5233877e-06f + p * w;
        p = -4.39150654e-06f + p * w; p = 0.00021858087f + p * w;
        p = -0.00125372503f + p * w; p = -0.00417768164f + p * w;
        p = 0.246640727f + p * w; p = 1.50140941f + p * w;
    } else {
        w = sqrt(w) - 3.0f;
        p = -0.000200214257f;
        p = 0.000100950558f + p * w; p = 0.00134934322f + p * w;
        p = -0.00367342844f + p * w; p = 0.00573950773f + p * w;
        p = -0.0076224613f + p * w; p = 0.00943887047f + p * w;
        p = 1.00167406f + p * w; p = 2.83297682f + p * w;
    }
    W x = (W)p * a;
#ifdef IS_DOUBLE
    for (int k = 0; k < 4; ++k) {
#else
    {
#endif
        W d = W_2_SQRTPI * exp(-x * x);  // erf'(x)
        if (a <= WC(0.5)) {
            W f = erf(x) - a;
            x -= f / (d + x * f);             // Halley: f'' = -2x f'
        } else {
            W e = erfc(x);                    // Newton on log(erfc(x)) = log(t): nearly
            x += (log(e) - log(t)) * e / d;   // linear in the tail, far from the root too
        }
    }
    return copysign(x, y);
}
UNARY(erfinv_op, (T)erfinv_w((W)x))
// digamma and trigamma (PyTorch's calc_digamma / calc_trigamma, aten/src/ATen/native/Math.h):
// reflection below 0 (digamma) or 0.5 (trigamma), the recurrence up to x >= 10, then the
// asymptotic series. digamma(+-0) is -+inf, a negative integer NaN (PyTorch's). trigamma's
// series runs to B_14 from 10 on (PyTorch's: 6 recurrence steps and 3 terms, 5e-10 relative
// error: trigamma(1) = 1.6449340676 for pi^2 / 6 = 1.6449340668).
inline W digamma_w(W x) {
    if (x == WC(0.0)) return copysign((W)INFINITY, -x);
    W result = WC(0.0);
    if (x < WC(0.0)) {
        if (x == trunc(x)) return (W)NAN;
        result = -W_PI / tan(W_PI * (x - trunc(x)));  // tan of the fraction: accurate
        x = WC(1.0) - x;
    }
    while (x < WC(10.0)) { result -= WC(1.0) / x; x += WC(1.0); }
    if (x == WC(10.0)) return result + WC(2.25175258906672110764);
    W y = WC(0.0);
    if (x < WC(1.0e17)) {
        W z = WC(1.0) / (x * x);
        y = WC(8.33333333333333333333E-2);
        y = y * z - WC(2.10927960927960927961E-2);
        y = y * z + WC(7.57575757575757575758E-3);
        y = y * z - WC(4.16666666666666666667E-3);
        y = y * z + WC(3.96825396825396825397E-3);
        y = y * z - WC(8.33333333333333333333E-3);
        y = y * z + WC(8.33333333333333333333E-2);
        y *= z;
    }
    return result + log(x) - WC(0.5) / x - y;
}
inline W trigamma_w(W x) {
    W sign = WC(1.0), result = WC(0.0);
    if (x < WC(0.5)) {
        sign = WC(-1.0);
        W sp = sinpi(x);
        result -= W_PI * W_PI / (sp * sp);
        x = WC(1.0) - x;
    }
    while (x < WC(10.0)) { result += WC(1.0) / (x * x); x += WC(1.0); }
    W ixx = WC(1.0) / (x * x);  // the asymptotic series to B_14 (next term < 1e-16 relative)
    W s = WC(7.0) / WC(6.0);
    s = WC(-691.0) / WC(2730.0) + ixx * s;
    s = WC(5.0) / WC(66.0) + ixx * s;
    s = WC(-1.0) / WC(30.0) + ixx * s;
    s = WC(1.0) / WC(42.0) + ixx * s;
    s = WC(-1.0) / WC(30.0) + ixx * s;
    s = WC(1.0) / WC(6.0) + ixx * s;
    result += (WC(1.0) + WC(1.0) / (WC(2.0) * x) + ixx * s) / x;
    return sign * result;
}
UNARY(digamma_op, (T)digamma_w((W)x))
UNARY(trigamma_op, (T)trigamma_w((W)x))
// Backward helpers: y is the saved input or output, x the incoming gradient.
BINARY(relu_grad, y <= (T)0 ? (T)0 : x)  // passes at a NaN output, as PyTorch's
BINARY(sigmoid_grad, x * y * ((T)1 - y))
BINARY(tanh_grad, x * ((T)1 - y * y))
// Rounding divisions and remainders as PyTorch's (c10 div_floor_floating, remainder, fmod):
// the floor quotient from fmod, so that it agrees with the remainder; a zero divisor gives
// IEEE's x / 0 (inf or nan) for both divisions, nan for the remainders.
inline T floor_div_f(T x, T y) {
    if (y == (T)0) return x / y;
    T m = fmod(x, y), d = (x - m) / y;
    if (m != (T)0 && (y < (T)0) != (m < (T)0)) d -= (T)1;
    if (d == (T)0) return copysign((T)0, x / y);
    T f = floor(d);
    return d - f > (T)0.5f ? f + (T)1 : f;
}
inline T remainder_f(T x, T y) {
    T m = fmod(x, y);
    return m != (T)0 && (y < (T)0) != (m < (T)0) ? m + y : m;
}
BINARY(floor_divide, floor_div_f(x, y))
BINARY(trunc_divide, trunc(x / y))
BINARY(remainder_op, remainder_f(x, y))
BINARY(fmod_op, fmod(x, y))
#else
// -- integer arithmetic: exact, wrapping in T (two's complement) as PyTorch ----------------
// UT: an unsigned type at least as wide as T, so that wrapping products are defined
// behaviour (signed overflow is undefined in C); char/short/uchar are computed in uint and
// truncated back. T_SIGNED: a constant the compiler folds.
#if defined(IS_LONG)
#define UT ulong
#else
#define UT uint
#endif
#define T_SIGNED ((T)(-1) < (T)0)
#define T_BITS ((int)sizeof(T) * 8)

// x / y and x % y truncated as C, for y != 0; y == -1 apart: MIN / -1 traps on x86 (and
// overflows anywhere), PyTorch gives MIN (wrapping) and 0.
inline T idiv_trunc(T x, T y) {
    return T_SIGNED && y == (T)(-1) ? (T)((UT)0 - (UT)x) : (T)(x / y);
}
inline T irem_trunc(T x, T y) { return T_SIGNED && y == (T)(-1) ? (T)0 : (T)(x % y); }
// Python's // and % (sign of the divisor), as PyTorch's div_floor_integer and remainder.
inline T idiv_floor(T x, T y) {
    T q = idiv_trunc(x, y);
    return T_SIGNED && ((x < (T)0) != (y < (T)0)) && irem_trunc(x, y) != (T)0 ? (T)(q - 1) : q;
}
inline T irem_floor(T x, T y) {
    T r = irem_trunc(x, y);
    return r != (T)0 && (r < (T)0) != (y < (T)0) ? (T)((UT)r + (UT)y) : r;
}
// x ** y by squaring, wrapping in T (PyTorch's powi): a negative exponent gives 1 for x == 1,
// +-1 for x == -1, else 0.
inline T ipow_t(T x, T y) {
    if (T_SIGNED && y < (T)0) {
        if (x == (T)1) return (T)1;
        if (x == (T)(-1)) return (y & (T)1) ? (T)(-1) : (T)1;
        return (T)0;
    }
    UT r = 1, base = (UT)x;
    while (y != (T)0) {
        if (y & (T)1) r *= base;
        y = (T)(y >> 1);  // y >= 0 here: the shift brings in zeros
        base *= base;
    }
    return (T)r;
}
// Shifts as PyTorch's: a count that is negative (read as signed) or not below the width gives
// 0 to the left, and the sign fill (0 for unsigned T) to the right.
inline int neg_count(T y) { return T_SIGNED ? y < (T)0 : (char)y < (char)0; }
inline T ishl(T x, T y) {
    return neg_count(y) || (long)y >= T_BITS ? (T)0 : (T)((UT)x << (UT)y);
}
inline T ishr(T x, T y) {
    if (neg_count(y) || (long)y >= T_BITS - (T_SIGNED ? 1 : 0))
        return T_SIGNED && x < (T)0 ? (T)(-1) : (T)0;
    return (T)(x >> y);
}

BINARY(ipow, ipow_t(x, y))
BINARY(bitwise_and, (T)(x & y))
BINARY(bitwise_or, (T)(x | y))
BINARY(bitwise_xor, (T)(x ^ y))
BINARY(lshift, ishl(x, y))
BINARY(rshift, ishr(x, y))
UNARY(bitwise_not, (T)(~x))

// Integer divisions: a zero divisor cannot raise on the device, so it sets err[0] (the host
// reads it after the launch and raises) and writes 0. The _sb form (scalar divisor) is only
// launched with a divisor the host checked, and takes no err.
#define BINARY_DIV(name, expr)                                                              \
__kernel void name(long n, int nd, shape_t sh, __global T *out, view_t vo,                 \
                   __global const T *a, view_t va, __global const T *b, view_t vb,         \
                   __global int *err) {                                                    \
    EW_HEAD long oo, oa, ob; off3(i, nd, sh, vo, va, vb, &oo, &oa, &ob);                   \
    T x = a[oa]; T y = b[ob];                                                               \
    if (y == (T)0) { err[0] = 1; out[oo] = (T)0; return; }                                  \
    out[oo] = (expr);                                                                       \
}                                                                                           \
__kernel void name##_sb(long n, int nd, shape_t sh, __global T *out, view_t vo,            \
                        __global const T *a, view_t va, T y) {                             \
    EW_HEAD long oo, oa; off2(i, nd, sh, vo, va, &oo, &oa);                                \
    T x = a[oa]; out[oo] = (expr);                                                          \
}                                                                                           \
__kernel void name##_sa(long n, int nd, shape_t sh, __global T *out, view_t vo,            \
                        T x, __global const T *b, view_t vb, __global int *err) {          \
    EW_HEAD long oo, ob; off2(i, nd, sh, vo, vb, &oo, &ob);                                \
    T y = b[ob];                                                                            \
    if (y == (T)0) { err[0] = 1; out[oo] = (T)0; return; }                                  \
    out[oo] = (expr);                                                                       \
}

BINARY_DIV(floor_divide, idiv_floor(x, y))
BINARY_DIV(trunc_divide, idiv_trunc(x, y))
BINARY_DIV(remainder_op, irem_floor(x, y))
BINARY_DIV(fmod_op, irem_trunc(x, y))
#endif

// -- math ops (clgrad/ops/math_ops.py) ----------------------------------------------------
// fmax/fmin: NaN-ignoring (a NaN operand gives the other one; both NaN give NaN); a tie gives
// x (PyTorch's: fmax(-0., 0.) is -0.). Integers and bool: max/min.
BINARY(fmax_op, IS_NAN(y) || x >= y ? x : y)
BINARY(fmin_op, IS_NAN(y) || x <= y ? x : y)
// heaviside(x, values): 0 below 0 (and at NaN), values at +-0, 1 above (PyTorch's)
BINARY(heaviside_op, x == (OPM)0 ? y : (OPM)(x > (OPM)0))
#ifdef IS_FLOAT
// x and y are OPM (float for half), never half (NVIDIA's half built-ins: see erfc_op).
UNARY(tan_op, tan(x))
UNARY(asin_op, asin(x))
UNARY(acos_op, acos(x))
UNARY(atan_op, atan(x))
UNARY(sinh_op, sinh(x))
UNARY(cosh_op, cosh(x))
UNARY(asinh_op, asinh(x))
UNARY(acosh_op, acosh(x))
UNARY(atanh_op, atanh(x))
UNARY(log2_op, log2(x))
UNARY(log10_op, log10(x))
UNARY(exp2_op, exp2(x))
// sinc(x) = sin(pi x) / (pi x), 1 at 0. sinpi, not sin(pi * x) (PyTorch's): exact 0 at the
// integers and no rounding of pi * x, which costs float32 all its digits near x = 1000.
// +0 at the nonzero integers whatever sign the runtime's sinpi gives its zero (PoCL's sinpi(1)
// is -0 on AMD Zen 3, where IEEE 754's sinPi(+n) is +0).
inline W sinc_w(W x) {
    if (x == WC(0.0)) return WC(1.0);
    W s = sinpi(x);
    return s == WC(0.0) ? WC(0.0) : s / (W_PI * x);
}
UNARY(sinc_op, (T)sinc_w((W)x))
// d/dx sinc = (cos(pi x) - sinc(x)) / x, 0 at 0; near 0 (|pi x| < 0.1, where the difference
// cancels) its series -z/3 (1 - z^2/10 + z^4/280 - z^6/15120 + z^8/1330560) pi, z = pi x.
inline W sinc_grad_w(W x) {
    W z = W_PI * x, z2 = z * z;
    if (fabs(z) < WC(0.1))
        return -z / WC(3.0) * W_PI * (WC(1.0) - z2 / WC(10.0) * (WC(1.0) - z2 / WC(28.0) *
               (WC(1.0) - z2 / WC(54.0) * (WC(1.0) - z2 / WC(88.0)))));
    return (cospi(x) - sinc_w(x)) / x;
}
BINARY(sinc_grad, (T)((W)x * sinc_grad_w((W)y)))  // x: the incoming gradient, y: the input
// logit: log(x / (1 - x)), x first clamped to [eps, 1 - eps] where eps (y) >= 0 (PyTorch's;
// eps < 0 stands for eps=None: no clamp, NaN outside [0, 1]). A NaN x stays NaN. From 0.25
// on as log1p((2x - 1) / (1 - x)), 2x - 1 exact there: accurate near 0.5, where logit is
// near 0 and log(x / (1 - x)) (PyTorch's) has an absolute error of W's epsilon.
inline W logit_w(W x, W eps) {
    if (eps >= WC(0.0)) x = x < eps ? eps : x > WC(1.0) - eps ? WC(1.0) - eps : x;
    return x < WC(0.25) ? log(x / (WC(1.0) - x)) : log1p((x + x - WC(1.0)) / (WC(1.0) - x));
}
BINARY(logit_op, (T)logit_w((W)x, (W)y))
// I0 and I1, the modified Bessel functions of the first kind (torch.i0; I1 = I0' for its
// gradient), n = 0 or 1. Below |x| = I_BIG the power series (x/2)^n sum_k q^k / (k! (k+n)!),
// q = x^2 / 4 (positive terms: no cancellation); above, the asymptotic series e^x /
// sqrt(2 pi x) sum_k prod_{j<=k} ((2j-1)^2 - 4n^2) / (j 8x), whose smallest term there,
// ~e^(-2x), is below W's epsilon. Each series: its length N found forward (terms until one
// is negligible, or stops shrinking), then summed by Horner's rule from the last term (the
// rounding errors of the small terms stay small). e^x is taken as e^(x/2) twice: results
// near W's largest value do not overflow early (PyTorch's float32 i0 is inf from 89 on,
// I0(91.9) = 3.4e38). +-inf gives NaN (PyTorch's and NumPy's i0). ``scaled``: e^-|x| I_n(x)
// (torch.special.i0e / i1e): the series times e^-|x|, the asymptotic series without e^|x|
// (finite for every x: 0 at +-inf, as PyTorch's).
#ifdef IS_DOUBLE
#define I_BIG 20.0
#define I_EPS DBL_EPSILON
#else
#define I_BIG 10.0f
#define I_EPS FLT_EPSILON
#endif
inline W bessel_i_w(W x, int n, int scaled) {
    W a = fabs(x), t = WC(1.0), s = WC(1.0);
    int k = 1;
    if (isinf(a)) return scaled ? copysign(WC(0.0), n ? x : WC(1.0)) : (W)NAN;
    if (!(a >= I_BIG)) {  // (NaN here: NaN out)
        W q = a * a * WC(0.25);
        for (; k < 100 && t > s * I_EPS; ++k) {
            t *= q / (W)(k * (k + n));
            s += t;
        }
        for (s = WC(1.0); --k > 0;) s = WC(1.0) + s * (q / (W)(k * (k + n)));
        s *= n ? a * WC(0.5) : WC(1.0);
        if (scaled) s *= exp(-a);
    } else {
        W mu = (W)(4 * n * n), ea = WC(8.0) * a;
        for (; k < 100; ++k) {
            W m = (W)(2 * k - 1), tk = t * (m * m - mu) / ((W)k * ea);
            if (fabs(tk) >= fabs(t) || fabs(tk) < s * I_EPS) break;
            t = tk;
            s += t;
        }
        for (s = WC(1.0); --k > 0;) {
            W m = (W)(2 * k - 1);
            s = WC(1.0) + s * ((m * m - mu) / ((W)k * ea));
        }
        W h = scaled ? WC(1.0) : exp(a * WC(0.5));
        s = h * (h * s / sqrt(WC(2.0) * W_PI * a));
    }
    return n && x < WC(0.0) ? -s : s;
}
UNARY(i0_op, (T)bessel_i_w((W)x, 0, 0))
UNARY(i1_op, (T)bessel_i_w((W)x, 1, 0))
UNARY(i0e_op, (T)bessel_i_w((W)x, 0, 1))
UNARY(i1e_op, (T)bessel_i_w((W)x, 1, 1))
// -- torch.special's own functions (clgrad/ops/special.py) ---------------------------------
#ifdef IS_DOUBLE
#define W_SQRT1_2 M_SQRT1_2
#define W_EPS DBL_EPSILON
#define ERFCX_CF 4.0   // from here on erfcx's continued fraction, ERFCX_N terms (< 1 ulp)
#define ERFCX_N 24
#else
#define W_SQRT1_2 M_SQRT1_2_F
#define W_EPS FLT_EPSILON
#define ERFCX_CF 2.0f
#define ERFCX_N 16
#endif
// entr: -x log x, 0 at 0, -inf below 0, NaN at NaN (PyTorch's)
inline W entr_w(W x) {
    return x > WC(0.0) ? -x * log(x) : x == WC(0.0) ? WC(0.0) : isnan(x) ? x : (W)(-INFINITY);
}
UNARY(entr_op, (T)entr_w((W)x))
// x * log1p(y), 0 where x is 0 unless y is NaN (PyTorch's xlog1py)
BINARY(xlog1py_op, isnan(y) ? y : x == (T)0 ? (OPM)0 : x * log1p(y))
// e^(c x^2) as e^(c h) (1 + c l), h + l = x^2 (fma: l is x*x's rounding error; e^(c h) itself
// where it is inf or 0), so that the relative error does not grow with x^2 (as e^(fl(x*x))
// does: 7e-14 at x = 26 in double); c = 1 or -1/2
inline W exp_square(W x, W c) {
    W h = x * x, e = exp(c * h);
    return isinf(e) || e == WC(0.0) ? e : e + e * (c * fma(x, x, -h));
}
// erfcx(x) = e^(x^2) erfc(x) for x >= 0: below ERFCX_CF e^(x^2) erfc(x) (both accurate,
// erfc far from underflow); from there the continued fraction erfc(x) = e^(-x^2) / sqrt(pi) /
// (x + (1/2) / (x + (2/2) / (x + (3/2) / ...))) of ERFCX_N terms, summed from the last (its
// truncation error measured below W's epsilon at ERFCX_CF; finite for every x, 1 / (x sqrt pi)
// for large x). Below 0: 2 e^(x^2) - erfcx(-x), inf where e^(x^2) overflows (PyTorch's).
inline W erfcx_pos(W x) {
    if (x < ERFCX_CF) return exp_square(x, WC(1.0)) * erfc(x);
    W f = x;
    for (int k = ERFCX_N; k >= 1; --k) f = x + (W)k * WC(0.5) / f;
    return WC(1.0) / (sqrt(W_PI) * f);
}
inline W erfcx_w(W x) {
    if (isnan(x)) return x;
    return x < WC(0.0) ? WC(2.0) * exp_square(x, WC(1.0)) - erfcx_pos(-x) : erfcx_pos(x);
}
UNARY(erfcx_op, (T)erfcx_w((W)x))
// ndtr(x) = (1 + erf(x / sqrt 2)) / 2: through erfc of |x / sqrt 2| beyond 1 / sqrt 2 (Cephes'
// ndtr, PyTorch's), and below -1 as erfcx(-x / sqrt 2) e^(-x^2 / 2) / 2 with x^2 kept exactly:
// erfc(fl(x / sqrt 2)) is off by x^2 ulp in the left tail (2e-14 at x = -11.5 in double)
inline W ndtr_w(W x) {
    W t = x * W_SQRT1_2, z = fabs(t);
    if (x < WC(-1.0)) return isinf(x) ? WC(0.0) : WC(0.5) * erfcx_w(-t) * exp_square(x, WC(-0.5));
    if (z < W_SQRT1_2) return WC(0.5) + WC(0.5) * erf(t);
    W y = WC(0.5) * erfc(z);
    return t > WC(0.0) ? WC(1.0) - y : y;
}
UNARY(ndtr_op, (T)ndtr_w((W)x))
// log(ndtr(x)): below -1 log(erfcx(-x / sqrt 2) / 2) - x^2 / 2, finite far into the left tail
// (log_ndtr(-40) = -804.6; PyTorch's form); up to 0 log(ndtr(x)); above, log1p(-ndtr(-x))
// (PyTorch's log1p(-erfc(x / sqrt 2) / 2) is off by x^2 ulp where erfc's argument is rounded:
// 35 ulp at x = 5.8 in float32)
inline W log_ndtr_w(W x) {
    if (x < WC(-1.0)) return log(erfcx_w(-x * W_SQRT1_2) * WC(0.5)) - x * x * WC(0.5);
    return x <= WC(0.0) ? log(ndtr_w(x)) : log1p(-ndtr_w(-x));
}
UNARY(log_ndtr_op, (T)log_ndtr_w((W)x))
// ndtri, the inverse of ndtr: Cephes' ndtri (S. L. Moshier, Cephes Math Library 2.8, 2000;
// PyTorch's calc_ndtri): for |p - 1/2| <= 1/2 - e^-2 a rational function of (p - 1/2)^2; in
// the tails, z = sqrt(-2 log p) (p or 1 - p: both exact there), x = z - log(z) / z - R(1/z)
// with one rational function for z < 8 and one up to z = 64 (p down to 1e-890): relative
// error 4.6e-16 in double over [3e-308, 0.135] (Cephes' table), accurate for tiny p in float
// too. ndtri(0) = -inf, ndtri(1) = inf, NaN outside [0, 1].
inline W ndtri_poly(W x, __private const W *c, int n) {
    W r = c[0];
    for (int i = 1; i <= n; ++i) r = r * x + c[i];
    return r;
}
inline W ndtri_w(W p) {
    const W P0[5] = {WC(-5.99633501014107895267E1), WC(9.80010754185999661536E1),
                     WC(-5.66762857469070293439E1), WC(1.39312609387279679503E1),
                     WC(-1.23916583867381258016E0)};
    const W Q0[9] = {WC(1.0), WC(1.95448858338141759834E0), WC(4.67627912898881538453E0),
                     WC(8.63602421390890590575E1), WC(-2.25462687854119370527E2),
                     WC(2.00260212380060660359E2), WC(-8.20372256168333339912E1),
                     WC(1.59056225126211695515E1), WC(-1.18331621121330003142E0)};
    const W P1[9] = {WC(4.05544892305962419923E0), WC(3.15251094599893866154E1),
                     WC(5.71628192246421288162E1), WC(4.40805073893200834700E1),
                     WC(1.46849561928858024014E1), WC(2.18663306850790267539E0),
                     WC(-1.40256079171354495875E-1), WC(-3.50424626827848203418E-2),
                     WC(-8.57456785154685413611E-4)};
    const W Q1[9] = {WC(1.0), WC(1.57799883256466749731E1), WC(4.53907635128879210584E1),
                     WC(4.13172038254672030440E1), WC(1.50425385692907503408E1),
                     WC(2.50464946208309415979E0), WC(-1.42182922854787788574E-1),
                     WC(-3.80806407691578277194E-2), WC(-9.33259480895457427372E-4)};
    const W P2[9] = {WC(3.23774891776946035970E0), WC(6.91522889068984211695E0),
                     WC(3.93881025292474443415E0), WC(1.33303460815807542389E0),
                     WC(2.01485389549179081538E-1), WC(1.23716634817820021358E-2),
                     WC(3.01581553508235416007E-4), WC(2.65806974686737550832E-6),
                     WC(6.23974539184983293730E-9)};
    const W Q2[9] = {WC(1.0), WC(6.02427039364742014255E0), WC(3.67983563856160859403E0),
                     WC(1.37702099489081330271E0), WC(2.16236993594496635890E-1),
                     WC(1.34204006088543189037E-2), WC(3.28014464682127739104E-4),
                     WC(2.89247864745380683936E-6), WC(6.79019408009981274425E-9)};
    const W E2 = WC(0.13533528323661269189);  // e^-2
    if (p == WC(0.0)) return (W)(-INFINITY);
    if (p == WC(1.0)) return (W)INFINITY;
    if (!(p > WC(0.0) && p < WC(1.0))) return (W)NAN;
    int lower = 1;
    W y = p;
    if (y > WC(1.0) - E2) { y = WC(1.0) - y; lower = 0; }
    if (y > E2) {
        y -= WC(0.5);
        W y2 = y * y;
        return (y + y * (y2 * ndtri_poly(y2, P0, 4) / ndtri_poly(y2, Q0, 8))) *
               WC(2.50662827463100050242E0);
    }
    W z = sqrt(WC(-2.0) * log(y)), r = WC(1.0) / z;
    W x1 = z < WC(8.0) ? r * ndtri_poly(r, P1, 8) / ndtri_poly(r, Q1, 8)
                       : r * ndtri_poly(r, P2, 8) / ndtri_poly(r, Q2, 8);
    W x = z - log(z) / z - x1;
    return lower ? -x : x;
}
UNARY(ndtri_op, (T)ndtri_w((W)x))
// The Hurwitz zeta function zeta(x, q) = sum_k (q + k)^-x: Cephes' zeta (PyTorch's): inf at
// x = 1, NaN below; at q <= 0 inf where q is an integer, NaN unless x is; else the direct sum
// until the terms fall below W's epsilon (at least 9 terms, and q + k > 9), then the
// Euler-Maclaurin tail with up to 12 Bernoulli terms (A[i] = (2i + 2)! / B_(2i+2)). q = +inf
// gives 0, and x = +inf 0 for q > 1, 1 at q = 1, inf for 0 < q < 1 (PyTorch's: NaN).
inline W zeta_w(W x, W q) {
    const W A[12] = {WC(12.0), WC(-720.0), WC(30240.0), WC(-1209600.0), WC(47900160.0),
                     WC(-1.8924375803183791606e9), WC(7.47242496e10),
                     WC(-2.950130727918164224e12), WC(1.1646782814350067249e14),
                     WC(-4.5979787224074726105e15), WC(1.8152105401943546773e17),
                     WC(-7.1661652561756670113e18)};
    const W eps = W_EPS * WC(0.5);
    if (x == WC(1.0)) return (W)INFINITY;
    if (!(x >= WC(1.0))) return (W)NAN;  // (and NaN x)
    if (q <= WC(0.0)) {
        if (q == floor(q)) return (W)INFINITY;
        if (x != floor(x)) return (W)NAN;
    }
    if (isinf(q)) return WC(0.0);
    if (isinf(x)) return q > WC(1.0) ? WC(0.0) : q == WC(1.0) ? WC(1.0) : (W)INFINITY;
    W s = pow(q, -x), a = q, b = WC(0.0);
    int i = 0;
    while (i < 9 || a <= WC(9.0)) {
        i += 1;
        a += WC(1.0);
        b = pow(a, -x);
        s += b;
        if (-eps * s < b && b < eps * s) return s;
    }
    W w = a, k = WC(0.0), t;
    s += b * w / (x - WC(1.0));
    s -= WC(0.5) * b;
    a = WC(1.0);
    for (int j = 0; j < 12; ++j) {
        a *= x + k;
        b /= w;
        t = a * b / A[j];
        s = s + t;
        if (fabs(t / s) < eps) return s;
        k += WC(1.0);
        a *= x + k;
        b /= w;
        k += WC(1.0);
    }
    return s;
}
BINARY(zeta_op, (T)zeta_w((W)x, (W)y))
// polygamma(n, y) (x holds n, a whole number): digamma and trigamma for n = 0, 1, else
// (-1)^(n+1) n! zeta(n + 1, y) (PyTorch's calc_polygamma; n! as a product, not
// exp(lgamma(n + 1)): exact in W up to 22! in double); 0 at y = +inf (PyTorch's: NaN).
inline W polygamma_w(int n, W x) {
    if (n == 0) return digamma_w(x);
    if (n == 1) return trigamma_w(x);
    if (isinf(x) && x > WC(0.0)) return WC(0.0);
    W f = WC(1.0);
    for (int k = 2; k <= n && f < (W)INFINITY; ++k) f *= (W)k;
    return ((n & 1) ? f : -f) * zeta_w((W)(n + 1), x);
}
BINARY(polygamma_op, (T)polygamma_w((int)x, (W)y))
// nextafter in a format of M fraction bits, least normal exponent EMIN and largest finite
// value MAXV, for an x it holds (half: its values are floats; bfloat16: computed on float32
// copies): one step of that format's spacing toward y, which is half as wide below a power of
// two when moving toward zero; the smallest subnormal from 0; y when x == y (-0. and 0.).
inline float nextafter_narrow(float x, float y, int M, int EMIN, float MAXV) {
    if (isnan(x) || isnan(y)) return x + y;
    if (x == y) return y;
    if (isinf(x)) return copysign(MAXV, x);
    if (x == 0.0f) return copysign(ldexp(1.0f, EMIN - M), y);
    int e = ilogb(x);
    if (fabs(x) == ldexp(1.0f, e) && (x > y) == (x > 0.0f)) e -= 1;
    float s = ldexp(1.0f, max(e, EMIN) - M);
    return x < y ? x + s : x - s;
}
#ifdef IS_DOUBLE
BINARY(nextafter_op, nextafter(x, y))
#else
BINARY(nextafter_op, sizeof(T) == 2 ? nextafter_narrow(x, y, 10, -14, 65504.0f)
                                    : nextafter((float)x, (float)y))
#endif
BINARY(nextafter_bf16, nextafter_narrow(x, y, 7, -126, 0x1.fep127f))
#else
// gcd and lcm of the magnitudes, in the unsigned UT (|MIN| fits; products wrap as PyTorch's)
inline UT umag(T v) { return T_SIGNED && v < (T)0 ? (UT)0 - (UT)v : (UT)v; }
inline UT ugcd(UT a, UT b) {
    while (a != 0) { UT c = a; a = b % a; b = c; }
    return b;
}
inline T ilcm(T x, T y) {
    UT a = umag(x), b = umag(y), g = ugcd(a, b);
    return g == 0 ? (T)0 : (T)(a / g * b);
}
BINARY(gcd_op, (T)ugcd(umag(x), umag(y)))
BINARY(lcm_op, ilcm(x, y))
#endif

// signbit: a bool (uchar) result; floats read the sign bit (-0.0 and -NaN are set)
__kernel void signbit_op(long n, int nd, shape_t sh, __global uchar *out, view_t vo,
                         __global const T *a, view_t va) {
    EW_HEAD long oo, oa; off2(i, nd, sh, vo, va, &oo, &oa);
#ifdef IS_FLOAT
    out[oo] = signbit((OPM)a[oa]) ? 1 : 0;  // OPM: see erfc_op (a conversion keeps the sign)
#else
    out[oo] = a[oa] < (T)0 ? 1 : 0;
#endif
}

// where(cond, a, b): cond is bool (uchar).
__kernel void where_op(long n, int nd, shape_t sh, __global T *out, view_t vo,
                       __global const uchar *c, view_t vc, __global const T *a, view_t va,
                       __global const T *b, view_t vb) {
    EW_HEAD
    long oo, oc, oa, ob;
    off4(i, nd, sh, vo, vc, va, vb, &oo, &oc, &oa, &ob);
    out[oo] = c[oc] ? a[oa] : b[ob];
}

#ifdef IS_FLOAT
// lerp(a, b, w) from the nearer end (PyTorch's, aten/src/ATen/native/Lerp.h; its vectorised CPU
// kernel, cpu/LerpKernel.cpp lerp_vec, and nvcc compute each branch as one fused multiply-add):
// |w| < 0.5 ? a + w (b - a) : b - (b - a)(1 - w), each rounded once (fma), so lerp(a, b, 1) is
// b exactly and the result agrees with PyTorch's bits. In OPM (float for half).
inline OPM lerp_f(OPM a, OPM b, OPM w) {
    const OPM d = b - a;
    return fabs(w) < (OPM)0.5f ? fma(w, d, a) : fma(w - (OPM)1, d, b);
}

// lerp with a tensor weight w (broadcast like a and b).
__kernel void lerp_op(long n, int nd, shape_t sh, __global T *out, view_t vo,
                      __global const T *a, view_t va, __global const T *b, view_t vb,
                      __global const T *w, view_t vw) {
    EW_HEAD
    long oo, oa, ob, ow;
    off4(i, nd, sh, vo, va, vb, vw, &oo, &oa, &ob, &ow);
    out[oo] = (T)lerp_f((OPM)a[oa], (OPM)b[ob], (OPM)w[ow]);
}

// lerp with a number weight (SCALAR_T: float for half, as the _sb kernels' numbers).
__kernel void lerp_sw(long n, int nd, shape_t sh, __global T *out, view_t vo,
                      __global const T *a, view_t va, __global const T *b, view_t vb,
                      SCALAR_T w) {
    EW_HEAD
    long oo, oa, ob;
    off3(i, nd, sh, vo, va, vb, &oo, &oa, &ob);
    out[oo] = (T)lerp_f((OPM)a[oa], (OPM)b[ob], (OPM)w);
}
#endif

// clamp(x, lo, hi) with scalar bounds, used where the flags say; a NaN input or bound gives
// NaN (PyTorch).
__kernel void clamp_op(long n, int nd, shape_t sh, __global T *out, view_t vo,
                       __global const T *a, view_t va, T lo, T hi, int use_lo, int use_hi) {
    EW_HEAD
    long oo, oa;
    off2(i, nd, sh, vo, va, &oo, &oa);
    T x = a[oa];
    if (use_lo && (x < lo || IS_NAN(lo))) x = lo;
    if (use_hi && (x > hi || IS_NAN(hi))) x = hi;
    out[oo] = x;
}

// Gradient of clamp: pass where lo <= x <= hi (x is the saved input).
__kernel void clamp_grad(long n, int nd, shape_t sh, __global T *out, view_t vo,
                         __global const T *g, view_t vg, __global const T *a, view_t va,
                         T lo, T hi, int use_lo, int use_hi) {
    EW_HEAD
    long oo, og, oa;
    off3(i, nd, sh, vo, vg, va, &oo, &og, &oa);
    T x = a[oa];
    int pass = (!use_lo || x >= lo) && (!use_hi || x <= hi);
    out[oo] = pass ? g[og] : (T)0;
}

__kernel void fill(long n, int nd, shape_t sh, __global T *out, view_t vo, T value) {
    EW_HEAD
    out[off1(i, nd, sh, vo)] = value;
}

// out = a * alpha + b * beta (axpby), used for fused updates and accumulation.
__kernel void axpby(long n, int nd, shape_t sh, __global T *out, view_t vo,
                    __global const T *a, view_t va, T alpha, __global const T *b, view_t vb,
                    T beta) {
    EW_HEAD
    long oo, oa, ob;
    off3(i, nd, sh, vo, va, vb, &oo, &oa, &ob);
    out[oo] = a[oa] * alpha + b[ob] * beta;
}
