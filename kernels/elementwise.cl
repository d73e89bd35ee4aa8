// kernels/elementwise.cl — elementwise ops over strided views, one work item per element.
// Defines: T element type; IS_FLOAT for floating types (enables the math ops).
// Every kernel: (n, nd, shape, out, out view, operands with their views[, scalars]).
// Scalar variants end in _sa (scalar is the first operand) or _sb (scalar is the second).
#include "common.h"

#define EW_HEAD long i = get_global_id(0); if (i >= n) return;

#define UNARY(name, expr)                                                                   \
__kernel void name(long n, int nd, shape_t sh, __global T *out, view_t vo,                 \
                   __global const T *a, view_t va) {                                       \
    EW_HEAD long oo, oa; off2(i, nd, sh, vo, va, &oo, &oa);                                \
    T x = a[oa]; out[oo] = (expr);                                                          \
}

#define BINARY_OUT(name, OUT, expr)                                                         \
__kernel void name(long n, int nd, shape_t sh, __global OUT *out, view_t vo,               \
                   __global const T *a, view_t va, __global const T *b, view_t vb) {       \
    EW_HEAD long oo, oa, ob; off3(i, nd, sh, vo, va, vb, &oo, &oa, &ob);                   \
    T x = a[oa]; T y = b[ob]; out[oo] = (expr);                                             \
}                                                                                           \
__kernel void name##_sb(long n, int nd, shape_t sh, __global OUT *out, view_t vo,          \
                        __global const T *a, view_t va, T y) {                             \
    EW_HEAD long oo, oa; off2(i, nd, sh, vo, va, &oo, &oa);                                \
    T x = a[oa]; out[oo] = (expr);                                                          \
}                                                                                           \
__kernel void name##_sa(long n, int nd, shape_t sh, __global OUT *out, view_t vo,          \
                        T x, __global const T *b, view_t vb) {                             \
    EW_HEAD long oo, ob; off2(i, nd, sh, vo, vb, &oo, &ob);                                \
    T y = b[ob]; out[oo] = (expr);                                                          \
}

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

BINARY(add, x + y)
BINARY(sub, x - y)
BINARY(mul, x * y)
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
UNARY(exp_op, exp(x))
UNARY(log_op, log(x))
UNARY(sqrt_op, sqrt(x))
UNARY(rsqrt_op, rsqrt(x))
UNARY(tanh_op, tanh(x))
UNARY(sigmoid, x >= (T)0 ? (T)1 / ((T)1 + exp(-x)) : exp(x) / ((T)1 + exp(x)))
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
BINARY(div, x / y)
BINARY(pow_op, pow(x, y))
BINARY(atan2_op, atan2(x, y))  // the angle of (y=x, x=y): atan2(input, other), as PyTorch
// Backward helpers: y is the saved input or output, x the incoming gradient.
BINARY(relu_grad, y <= (T)0 ? (T)0 : x)  // passes at a NaN output, as PyTorch's
BINARY(sigmoid_grad, x * y * ((T)1 - y))
BINARY(tanh_grad, x * ((T)1 - y * y))
#else
// Integer division truncates toward zero like C; the Python side implements floor semantics.
BINARY(div, x / y)
BINARY(remainder, x % y)
#endif

// where(cond, a, b): cond is bool (uchar).
__kernel void where_op(long n, int nd, shape_t sh, __global T *out, view_t vo,
                       __global const uchar *c, view_t vc, __global const T *a, view_t va,
                       __global const T *b, view_t vb) {
    EW_HEAD
    long oo, oc, oa, ob;
    off4(i, nd, sh, vo, vc, va, vb, &oo, &oc, &oa, &ob);
    out[oo] = c[oc] ? a[oa] : b[ob];
}

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
