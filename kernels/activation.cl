// kernels/activation.cl — leaky_relu and the pointwise activations (ACT).
// Defines: T element type; IS_FLOAT for floating types; OPM the type they compute in
// (kernels/common.h: float for half). Their scalar parameters arrive in OPM too (the host's
// scalar(dtype, value, opmath=True)): a float16 result of leaky_relu(x, 0.01) is x times
// 0.01 rounded once, not x times half(0.01) (0.92 ulp off), and its comparisons (threshold,
// hardtanh, softplus's threshold) are with the number itself, as PyTorch's float16.
// The kernels follow elementwise.cl's signature (n, nd, shape, out, view, operands with
// views, scalars).
// Launch: 1-D, global size rounded up to the work-group size; each kernel checks its bound.
#include "common.h"

#define EW_HEAD long i = get_global_id(0); if (i >= n) return;

#ifdef IS_FLOAT
__kernel void leaky_relu_fwd(long n, int nd, shape_t sh, __global T *out, view_t vo,
                             __global const T *a, view_t va, OPM slope) {
    EW_HEAD
    long oo, oa;
    off2(i, nd, sh, vo, va, &oo, &oa);
    OPM x = a[oa];
    out[oo] = x > (OPM)0 ? x : x * slope;
}

// gx = g where x > 0, else g * slope (x is the saved input).
__kernel void leaky_relu_bwd(long n, int nd, shape_t sh, __global T *out, view_t vo,
                             __global const T *g, view_t vg, __global const T *a, view_t va,
                             OPM slope) {
    EW_HEAD
    long oo, og, oa;
    off3(i, nd, sh, vo, vg, va, &oo, &og, &oa);
    out[oo] = a[oa] > (T)0 ? (OPM)g[og] : (OPM)g[og] * slope;
}

// Pointwise activations: name_fwd(x) and name_bwd(g, x) -> g * f'(x), with the saved input x
// and two scalar parameters p0, p1 (unused ones are 0). Formulas and the choices at kinks are
// PyTorch's (aten/src/ATen/native/Activation.cpp and cpu/Activation.cpp).
#define ACT(name, FWD, DERIV)                                                               \
__kernel void name##_fwd(long n, int nd, shape_t sh, __global T *out, view_t vo,           \
                         __global const T *a, view_t va, OPM p0, OPM p1) {                 \
    EW_HEAD long oo, oa; off2(i, nd, sh, vo, va, &oo, &oa);                                \
    OPM x = a[oa]; out[oo] = (FWD);                                                         \
}                                                                                           \
__kernel void name##_bwd(long n, int nd, shape_t sh, __global T *out, view_t vo,           \
                         __global const T *g, view_t vg, __global const T *a, view_t va,  \
                         OPM p0, OPM p1) {                                                  \
    EW_HEAD long oo, og, oa; off3(i, nd, sh, vo, vg, va, &oo, &og, &oa);                   \
    OPM x = a[oa]; OPM gy = g[og]; out[oo] = (DERIV);                                       \
}

#define SIG(v) ((T)1 / ((T)1 + EXP_T(-(v))))
// Constants at the build's precision (gelu's tanh approximation: A = 0.044715, 3A = 0.134145).
#ifdef IS_DOUBLE
#define SQRT1_2 0.70710678118654752440
#define SQRT2_PI 0.79788456080286535588       // sqrt(2 / pi)
#define INV_SQRT_2PI 0.39894228040143267794
#define GELU_A 0.044715
#define GELU_3A 0.134145
#else
#define SQRT1_2 0.70710678118654752440f
#define SQRT2_PI 0.79788456080286535588f
#define INV_SQRT_2PI 0.39894228040143267794f
#define GELU_A 0.044715f
#define GELU_3A 0.134145f
#endif
// softplus(v) = log(1 + exp(v)) without overflow
#define SOFTPLUS(v) ((v) > (T)0 ? (v) + log1p(exp(-(v))) : log1p(exp(v)))

// hardtanh(min p0, max p1) (relu6: 0, 6): the gradient is 0 at and outside the bounds.
ACT(hardtanh, x < p0 ? p0 : x > p1 ? p1 : x, (x <= p0 || x >= p1) ? (T)0 : gy)
// gelu exact: x Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2
ACT(gelu, x * (T)0.5f * ((T)1 + erf(x * SQRT1_2)),
    gy * ((T)0.5f * ((T)1 + erf(x * SQRT1_2)) + x * INV_SQRT_2PI * exp((T)-0.5f * x * x)))
// gelu tanh: x / 2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3)
ACT(gelu_tanh, (T)0.5f * x * ((T)1 + tanh(SQRT2_PI * (x + (OPM)GELU_A * x * x * x))),
    gy * ((T)0.5f * ((T)1 + tanh(SQRT2_PI * (x + (OPM)GELU_A * x * x * x))) +
          (T)0.5f * x * ((T)1 - tanh(SQRT2_PI * (x + (OPM)GELU_A * x * x * x)) *
                                tanh(SQRT2_PI * (x + (OPM)GELU_A * x * x * x))) *
          SQRT2_PI * ((T)1 + (OPM)GELU_3A * x * x)))
// silu: x sigmoid(x)
ACT(silu, x * SIG(x), gy * SIG(x) * ((T)1 + x * ((T)1 - SIG(x))))
// elu(alpha p0): x > 0 ? x : alpha (exp(x) - 1)
ACT(elu, x > (T)0 ? x : p0 * expm1(x), x > (T)0 ? gy : gy * p0 * exp(x))
// hardswish: x relu6(x + 3) / 6; gradient 0 at and below -3, 1 at and above 3 (PyTorch 2)
ACT(hardswish, x <= (T)-3 ? (T)0 : x >= (T)3 ? x : x * (x + (T)3) / (T)6,
    x <= (T)-3 ? (T)0 : x < (T)3 ? gy * (x / (T)3 + (T)0.5f) : gy)
// hardsigmoid: relu6(x + 3) / 6; gradient 1/6 strictly inside (-3, 3)
ACT(hardsigmoid, x <= (T)-3 ? (T)0 : x >= (T)3 ? (T)1 : x / (T)6 + (T)0.5f,
    (x > (T)-3 && x < (T)3) ? gy / (T)6 : (T)0)
// softplus(beta p0, threshold p1): log(1 + exp(beta x)) / beta, x where beta x > threshold
ACT(softplus, x * p0 > p1 ? x : SOFTPLUS(x * p0) / p0, x * p0 > p1 ? gy : gy * SIG(x * p0))
// logsigmoid: log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), finite for any finite x
// (gradient sigmoid(-x), written so exp never overflows: tiny, not 0, for large x)
ACT(logsigmoid, (x < (T)0 ? x : (T)0) - log1p(exp(-fabs(x))),
    gy * (x > (T)0 ? exp(-x) / ((T)1 + exp(-x)) : (T)1 / ((T)1 + exp(x))))
// mish: x tanh(softplus(x))
ACT(mish, x * tanh(SOFTPLUS(x)),
    gy * (tanh(SOFTPLUS(x)) + x * SIG(x) * ((T)1 - tanh(SOFTPLUS(x)) * tanh(SOFTPLUS(x)))))
// selu (alpha p0, scale p1) and celu (alpha p0): elu's forms (PyTorch's elu with scale and
// input scale 1 / alpha); their gradients at 0 take the exp branch, as PyTorch's.
ACT(selu, x > (T)0 ? p1 * x : p1 * p0 * expm1(x), x > (T)0 ? gy * p1 : gy * p1 * p0 * exp(x))
ACT(celu, x > (T)0 ? x : p0 * expm1(x / p0), x > (T)0 ? gy : gy * exp(x / p0))
// softsign: x / (1 + |x|); tanhshrink: x - tanh(x)
ACT(softsign, x / ((T)1 + fabs(x)), gy / (((T)1 + fabs(x)) * ((T)1 + fabs(x))))
ACT(tanhshrink, x - tanh(x), gy * tanh(x) * tanh(x))
// softshrink / hardshrink (lambd p0): 0 on [-lambd, lambd] (NaN kept), gradient 0 there
ACT(softshrink, x > p0 ? x - p0 : x < -p0 ? x + p0 : x * (T)0,
    (x >= -p0 && x <= p0) ? (T)0 : gy)
ACT(hardshrink, (x >= -p0 && x <= p0) ? (T)0 : x, (x >= -p0 && x <= p0) ? (T)0 : gy)
// threshold (threshold p0, value p1): value where x <= threshold; gradient 0 there
ACT(threshold, x <= p0 ? p1 : x, x <= p0 ? (T)0 : gy)
#endif
