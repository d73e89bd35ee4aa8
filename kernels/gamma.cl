// kernels/gamma.cl — the regularized incomplete gamma functions of torch.special
// (clgrad/ops/gamma.py): P(a, x) = gammainc (igamma) and Q(a, x) = 1 - P = gammaincc (igammac),
// a the first operand, x the second (BINARY, either may be a number: the _sa / _sb forms).
// elementwise.cl's machinery (BINARY, W, WC) is included: its kernels are built into this
// program too. Computed in W (half: float; bfloat16 arrives as float32).
// Sources: Cephes igam.c (S. L. Moshier) as SciPy and PyTorch (aten/src/ATen/native/Math.h)
// revised it: the boundary values, the power series DLMF 8.11.4 for P, the series DLMF 8.7.3
// for Q at small x (no cancellation in 1 - P), Legendre's continued fraction DLMF 8.9.2 for Q
// at x > a. PyTorch's uniform asymptotic expansion for large a near x (DLMF 8.12.3, Temme) is
// not used: there the series and the continued fraction converge too (in ~sqrt(a) terms),
// with the prefactor x^a e^-x / Gamma(a) taken in Stirling's form (below), so the error grows
// like sqrt(a) ulp, not like a (measured in tests/test_special_families.py).
#include "elementwise.cl"

#ifdef IS_FLOAT
#define IGAM_MAXITER 100000
// x^a e^-x / Gamma(a): for a >= 10 as sqrt(a / (2 pi)) e^(-a (d - log1p(d)) - s(a)),
// d = (x - a) / a, s(a) = lgamma(a) - ((a - 1/2) log a - a + log(2 pi) / 2) by its Stirling
// series (DLMF 5.11.1, to B_14: below W's epsilon from 10 on), so that the large terms of
// a log x - x - lgamma(a) cancel exactly; below 10 e^(a log x - x - lgamma(a)).
// The exponent's rounding error, times its size (up to ~a / 2), is the result's relative
// error, so a float (or half) result takes it in double where the device has fp64 (measured
// in tests/test_special_families.py: 257 float32 ulp in float at a = 160, x = 57); the series
// and continued fraction below stay in W.
#if defined(CLGRAD_HAS_FP64) && !defined(IS_DOUBLE)
#define GF double
#define GFC(v) v
#define GF_PI M_PI
#else
#define GF W
#define GFC(v) WC(v)
#define GF_PI W_PI
#endif
inline W igam_fac(W a_, W x_) {
    GF a = (GF)a_, x = (GF)x_;
    if (a >= GFC(10.0)) {
        GF d = (x - a) / a, r = GFC(1.0) / a, r2 = r * r;
        GF s = r * (GFC(1.0) / GFC(12.0) + r2 * (GFC(-1.0) / GFC(360.0) + r2 * (
               GFC(1.0) / GFC(1260.0) + r2 * (GFC(-1.0) / GFC(1680.0) + r2 * (
               GFC(1.0) / GFC(1188.0) + r2 * (GFC(-691.0) / GFC(360360.0) + r2 * (
               GFC(1.0) / GFC(156.0))))))));
        GF l = fabs(d) < GFC(0.5) ? log1p(d) : log(x / a);  // log(x / a), accurately
        return (W)(sqrt(a / (GFC(2.0) * GF_PI)) * exp(-a * (d - l) - s));
    }
    return (W)exp(a * log(x) - x - lgamma(a));
}
// P by DLMF 8.11.4: x^a e^-x / Gamma(a + 1) sum_k x^k / ((a+1) ... (a+k))
inline W igam_series(W a, W x) {
    W ax = igam_fac(a, x);
    if (ax == WC(0.0)) return WC(0.0);
    W r = a, c = WC(1.0), s = WC(1.0);
    for (int i = 0; i < IGAM_MAXITER; ++i) {
        r += WC(1.0);
        c *= x / r;
        s += c;
        if (c <= W_EPS * WC(0.5) * s) break;
    }
    return s * ax / a;
}
// Q by DLMF 8.7.3 (small x): 1 - x^a / Gamma(a + 1) - (x^a / Gamma(a)) sum_n (-x)^n / (n! (a+n))
inline W igamc_series(W a, W x) {
    W fac = WC(1.0), s = WC(0.0), lx = log(x);
    for (int n = 1; n < 2000; ++n) {
        fac *= -x / (W)n;
        W term = fac / (a + (W)n);
        s += term;
        if (fabs(term) <= W_EPS * WC(0.5) * fabs(s)) break;
    }
    return -expm1(a * lx - lgamma(WC(1.0) + a)) - exp(a * lx - lgamma(a)) * s;
}
// Q by Legendre's continued fraction (DLMF 8.9.2), as Cephes igamc: convergents p/q rescaled
// when they grow
inline W igamc_cf(W a, W x) {
    W ax = igam_fac(a, x);
    if (ax == WC(0.0)) return WC(0.0);
    const W big = WC(16777216.0), biginv = WC(5.9604644775390625e-8);
    W y = WC(1.0) - a, z = x + y + WC(1.0), c = WC(0.0);
    W pkm2 = WC(1.0), qkm2 = x, pkm1 = x + WC(1.0), qkm1 = z * x, ans = pkm1 / qkm1;
    for (int i = 0; i < IGAM_MAXITER; ++i) {
        c += WC(1.0);
        y += WC(1.0);
        z += WC(2.0);
        W yc = y * c, pk = pkm1 * z - pkm2 * yc, qk = qkm1 * z - qkm2 * yc, t = WC(1.0);
        if (qk != WC(0.0)) {
            W r = pk / qk;
            t = fabs((ans - r) / r);
            ans = r;
        }
        pkm2 = pkm1; pkm1 = pk; qkm2 = qkm1; qkm1 = qk;
        if (fabs(pk) > big) { pkm2 *= biginv; pkm1 *= biginv; qkm2 *= biginv; qkm1 *= biginv; }
        if (t <= W_EPS * WC(0.5)) break;
    }
    return ans * ax;
}
// Q(a, x) with PyTorch's boundary values (SciPy's): NaN for a < 0 or x < 0 (and NaN in);
// Q(0, x > 0) = 0, Q(0, 0) NaN; Q(a, 0) = 1; Q(inf, x) = 1 (NaN at x = inf); Q(a, inf) = 0.
// upper = 0 gives P = 1 - Q with the same boundaries mirrored.
inline W igamma_w(W a, W x, int upper) {
    if (isnan(a) || isnan(x) || x < WC(0.0) || a < WC(0.0)) return (W)NAN;
    W one = WC(1.0), zero = WC(0.0);
    if (a == WC(0.0)) return x > WC(0.0) ? (upper ? zero : one) : (W)NAN;
    if (x == WC(0.0)) return upper ? one : zero;
    if (isinf(a)) return isinf(x) ? (W)NAN : (upper ? one : zero);
    if (isinf(x)) return upper ? zero : one;
    if (!upper) return x > WC(1.0) && x > a ? one - igamc_cf(a, x) : igam_series(a, x);
    if (x > WC(1.1)) return x < a ? one - igam_series(a, x) : igamc_cf(a, x);
    if (x <= WC(0.5)) return -WC(0.4) / log(x) < a ? one - igam_series(a, x) : igamc_series(a, x);
    return x * WC(1.1) < a ? one - igam_series(a, x) : igamc_series(a, x);
}
BINARY(igamma_op, (T)igamma_w((W)x, (W)y, 0))
BINARY(igammac_op, (T)igamma_w((W)x, (W)y, 1))
#endif
