// kernels/activation.cl — leaky_relu, the pointwise activations (ACT), dropout
// (counter-based RNG) and pad.
// Defines: T element type; IS_FLOAT for floating types.
// leaky_relu and dropout follow elementwise.cl's signature (n, nd, shape, out, view,
// operands with views, scalars); pad_* take the full shapes.
// Launch: 1-D, global size rounded up to the work-group size; each kernel checks its bound.
#include "common.h"

#define EW_HEAD long i = get_global_id(0); if (i >= n) return;

#ifdef IS_FLOAT
__kernel void leaky_relu_fwd(long n, int nd, shape_t sh, __global T *out, view_t vo,
                             __global const T *a, view_t va, T slope) {
    EW_HEAD
    long oo, oa;
    off2(i, nd, sh, vo, va, &oo, &oa);
    T x = a[oa];
    out[oo] = x > (T)0 ? x : x * slope;
}

// gx = g where x > 0, else g * slope (x is the saved input).
__kernel void leaky_relu_bwd(long n, int nd, shape_t sh, __global T *out, view_t vo,
                             __global const T *g, view_t vg, __global const T *a, view_t va,
                             T slope) {
    EW_HEAD
    long oo, og, oa;
    off3(i, nd, sh, vo, vg, va, &oo, &og, &oa);
    out[oo] = a[oa] > (T)0 ? g[og] : g[og] * slope;
}

// Philox4x32-10 (Salmon et al., SC'11; Random123): a counter-based generator, so element k's
// random number depends only on (key, k): forward and backward regenerate the same mask.
// The 32x32 -> 64-bit products are plain ulong multiplies (mul_hi was 5x slower on PoCL).
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

inline void philox4x32_10(uint *c, uint k0, uint k1) {
    for (int round = 0; round < 10; ++round) {
        ulong p0 = (ulong)PHILOX_M0 * c[0], p1 = (ulong)PHILOX_M1 * c[2];
        uint n0 = (uint)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint)(p0 >> 32) ^ c[3] ^ k1;
        c[1] = (uint)p1;
        c[3] = (uint)p0;
        c[0] = n0;
        c[2] = n2;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
}

// out = a * scale where the element is kept, else a * 0 (so NaN stays NaN, as PyTorch's
// input * mask). Work item i handles the elements
// k = 4i .. 4i+3 (row-major over the shape) with the four words of
// philox((i_lo, i_hi, 0, 0), (k0, k1)): element k is kept when word k % 4 >= threshold,
// threshold = round(p * 2^32), so P(keep) = 1 - p. Used for the input and its gradient.
// Launch: ceil(n / 4) work items.
__kernel void dropout(long n, int nd, shape_t sh, __global T *out, view_t vo,
                      __global const T *a, view_t va, uint k0, uint k1, ulong threshold,
                      T scale) {
    long i = get_global_id(0);
    if (4 * i >= n) return;
    uint c[4] = {(uint)i, (uint)((ulong)i >> 32), 0u, 0u};
    philox4x32_10(c, k0, k1);
    for (int j = 0; j < 4 && 4 * i + j < n; ++j) {
        long oo, oa;
        off2(4 * i + j, nd, sh, vo, va, &oo, &oa);
        out[oo] = a[oa] * ((ulong)c[j] >= threshold ? scale : (T)0);  // NaN * 0 is NaN
    }
}


// Pointwise activations: name_fwd(x) and name_bwd(g, x) -> g * f'(x), with the saved input x
// and two scalar parameters p0, p1 (unused ones are 0). Formulas and the choices at kinks are
// PyTorch's (aten/src/ATen/native/Activation.cpp and cpu/Activation.cpp).
#define ACT(name, FWD, DERIV)                                                               \
__kernel void name##_fwd(long n, int nd, shape_t sh, __global T *out, view_t vo,           \
                         __global const T *a, view_t va, T p0, T p1) {                     \
    EW_HEAD long oo, oa; off2(i, nd, sh, vo, va, &oo, &oa);                                \
    T x = a[oa]; out[oo] = (FWD);                                                           \
}                                                                                           \
__kernel void name##_bwd(long n, int nd, shape_t sh, __global T *out, view_t vo,           \
                         __global const T *g, view_t vg, __global const T *a, view_t va,  \
                         T p0, T p1) {                                                      \
    EW_HEAD long oo, og, oa; off3(i, nd, sh, vo, vg, va, &oo, &og, &oa);                   \
    T x = a[oa]; T gy = g[og]; out[oo] = (DERIV);                                           \
}

#define SIG(v) ((T)1 / ((T)1 + exp(-(v))))
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
ACT(gelu_tanh, (T)0.5f * x * ((T)1 + tanh(SQRT2_PI * (x + (T)GELU_A * x * x * x))),
    gy * ((T)0.5f * ((T)1 + tanh(SQRT2_PI * (x + (T)GELU_A * x * x * x))) +
          (T)0.5f * x * ((T)1 - tanh(SQRT2_PI * (x + (T)GELU_A * x * x * x)) *
                                tanh(SQRT2_PI * (x + (T)GELU_A * x * x * x))) *
          SQRT2_PI * ((T)1 + (T)GELU_3A * x * x)))
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
#endif

// pad modes
#define PAD_CONSTANT 0
#define PAD_REFLECT 1
#define PAD_REPLICATE 2

// out (contiguous, shape osh) from x (view vx, shape ish) with lo[d] elements added before
// dim d (negative: cropped; constant mode only). Reflect and replicate need lo, hi < size.
__kernel void pad_fwd(long n, int nd, shape_t osh, __global T *out, __global const T *x,
                      view_t vx, shape_t ish, shape_t lo, int mode, T value) {
    EW_HEAD
    long rem = i, off = vx.off;
    for (int d = nd - 1; d >= 0; --d) {
        long o = rem % osh.n[d];
        rem /= osh.n[d];
        long s = o - lo.n[d], size = ish.n[d];
        if (mode == PAD_REFLECT) {
            s = s < 0 ? -s : s;
            s = s >= size ? 2 * (size - 1) - s : s;
        } else if (mode == PAD_REPLICATE) {
            s = s < 0 ? 0 : s >= size ? size - 1 : s;
        } else if (s < 0 || s >= size) {
            out[i] = value;
            return;
        }
        off += s * vx.s[d];
    }
    out[i] = x[off];
}

// The output positions along one dim that read input position s: up to three ranges
// [a[k], b[k]] (empty when a > b). Returns the number of positions.
inline long pad_sources(long s, long size, long lo, long osize, int mode, long *a, long *b) {
    long o = s + lo;
    a[0] = o; b[0] = o;           // the element itself
    a[1] = 1; b[1] = 0;           // empty
    a[2] = 1; b[2] = 0;
    if (mode == PAD_CONSTANT) {
        if (o < 0 || o >= osize) b[0] = a[0] - 1;
    } else if (mode == PAD_REPLICATE) {
        if (s == 0) a[0] = 0;
        if (s == size - 1) b[0] = osize - 1;
    } else {
        if (s >= 1 && s <= lo) a[1] = b[1] = lo - s;                       // left mirror
        long r = lo + 2 * (size - 1) - s;
        if (s <= size - 2 && r < osize) a[2] = b[2] = r;                   // right mirror
    }
    long cnt = 0;
    for (int k = 0; k < 3; ++k) cnt += max(b[k] - a[k] + 1, 0L);
    return cnt;
}

// gx[s] = sum of g over every output position that reads s: a gather, one work item per
// input element (gx contiguous, shape ish), so the sum order is fixed and no atomics are used.
__kernel void pad_bwd(long n, int nd, shape_t ish, __global T *gx, __global const T *g,
                      view_t vg, shape_t osh, shape_t lo, int mode) {
    EW_HEAD
    long a[MAXD][3], b[MAXD][3], cnt[MAXD];
    long rem = i, combos = 1;
    for (int d = nd - 1; d >= 0; --d) {
        long s = rem % ish.n[d];
        rem /= ish.n[d];
        cnt[d] = pad_sources(s, ish.n[d], lo.n[d], osh.n[d], mode, a[d], b[d]);
        combos *= cnt[d];
    }
    T acc = 0;
    for (long k = 0; k < combos; ++k) {
        long q = k, off = vg.off;
        for (int d = nd - 1; d >= 0; --d) {
            long m = q % cnt[d];
            q /= cnt[d];
            for (int r = 0; r < 3; ++r) {
                long len = max(b[d][r] - a[d][r] + 1, 0L);
                if (m < len) {
                    off += (a[d][r] + m) * vg.s[d];
                    break;
                }
                m -= len;
            }
        }
        acc += g[off];
    }
    gx[i] = acc;
}
