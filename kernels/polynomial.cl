// kernels/polynomial.cl — the orthogonal polynomials of torch.special
// (clgrad/ops/polynomial.py): p_n(x) elementwise, x and n broadcast (BINARY: x the first
// operand, n the second, either may be a number: the _sa / _sb forms). elementwise.cl's
// machinery (BINARY, W, WC) is included: its kernels are built into this program too. Floats
// only (float16 and bfloat16 raise in Python, as PyTorch's); computed in W.
// Conventions: PyTorch's (aten/src/ATen/native/Math.h, *_polynomial_*_forward): n is
// truncated to an integer, and n < 0 gives 0; a NaN or infinite n (or |n| >= 2^63) counts as
// negative (x86's conversion of such n gives INT64_MIN in PyTorch); the values at the ends of
// [-1, 1] are exact; inside (-1, 1) the Chebyshev polynomials of large n take their closed
// trigonometric forms (DLMF 18.5.1-18.5.4: T_n(cos t) = cos(n t), U_n = sin((n+1) t) / sin t,
// V_n = cos((n+1/2) t) / cos(t/2), W_n = sin((n+1/2) t) / sin(t/2)); everywhere else (|x| > 1
// too) the three-term recurrences (DLMF 18.9.1, 18.9.2), which stop at the first NaN. The
// recurrences take n steps (PyTorch's: its cost grows with n).
#include "elementwise.cl"

#ifdef IS_FLOAT
#ifdef IS_DOUBLE
#define HERMITE_MAX 512  // PyTorch's getHermitianLimit: NaN above (the values overflow)
#else
#define HERMITE_MAX 128
#endif
inline long poly_n(W n) { return fabs(n) < WC(9.2e18) ? (long)n : -1L; }
// T (kind 0), U (1), V (2), W (3) at x; the closed forms inside (-1, 1) from n > big (PyTorch's
// thresholds: 6 for T, 8 for U, V, W; shifted: 6, 6, 6, 4)
inline W chebyshev_w(W x, long n, int kind, long big) {
    if (n < 0) return WC(0.0);
    W m = (W)(n + n + 1);
    int odd = (int)(n & 1);
    if (fabs(x) == WC(1.0)) {
        W s = x > WC(0.0) || !odd ? WC(1.0) : WC(-1.0);
        if (kind == 0) return s;
        if (kind == 1) return s * (W)(n + 1);
        if (kind == 2) return x > WC(0.0) ? WC(1.0) : s * m;
        return x > WC(0.0) ? m : s;
    }
    if (n > big && fabs(x) < WC(1.0)) {
        W t = acos(x);
        if (kind == 0) return cos((W)n * t);
        if (kind == 1) {
            W s = sin(t);
            return s != WC(0.0) ? sin((W)(n + 1) * t) / s : (W)(n + 1) * cos((W)(n + 1) * t) / x;
        }
        if (kind == 2) {
            if (sin(t / WC(2.0)) != WC(1.0)) return cos(((W)n + WC(0.5)) * t) / cos(t / WC(2.0));
            return odd ? -m : m;
        }
        if (cos(t / WC(2.0)) != WC(1.0)) return sin(((W)n + WC(0.5)) * t) / sin(t / WC(2.0));
        return x > WC(0.0) ? m : odd ? WC(-1.0) : WC(1.0);
    }
    if (n == 0) return WC(1.0);
    W p = WC(1.0), q = kind == 0 ? x : kind == 1 ? x + x : kind == 2 ? x + x - WC(1.0)
                                                                     : x + x + WC(1.0);
    for (long k = 2; k <= n && !isnan(q); ++k) {
        W r = (x + x) * q - p;
        p = q;
        q = r;
    }
    return q;
}
// the physicists' H_n (H_(k+1) = 2x H_k - 2k H_(k-1)) and the probabilists' He_n
// (He_(k+1) = x He_k - k He_(k-1)); NaN for n > HERMITE_MAX (PyTorch's)
inline W hermite_w(W x, long n, int phys) {
    if (n < 0) return WC(0.0);
    if (n == 0) return WC(1.0);
    W q = phys ? x + x : x, p = WC(1.0);
    if (n == 1) return q;
    if (n > HERMITE_MAX) return (W)NAN;
    for (long k = 1; k < n; ++k) {
        W r = phys ? (x + x) * q - (W)(k + k) * p : x * q - (W)k * p;
        p = q;
        q = r;
    }
    return q;
}
// Laguerre's L_n ((k+1) L_(k+1) = (2k + 1 - x) L_k - k L_(k-1)); 1 at x = 0
inline W laguerre_w(W x, long n) {
    if (n < 0) return WC(0.0);
    if (x == WC(0.0) || n == 0) return WC(1.0);
    W p = WC(1.0), q = WC(1.0) - x;
    for (long k = 1; k < n && !isnan(q); ++k) {
        W r = (((W)(k + k) + (WC(1.0) - x)) * q - (W)k * p) / (W)(k + 1);
        p = q;
        q = r;
    }
    return q;
}
// Legendre's P_n ((k+1) P_(k+1) = (2k+1) x P_k - k P_(k-1)); +-1 at x = +-1
inline W legendre_w(W x, long n) {
    if (n < 0) return WC(0.0);
    if (fabs(x) == WC(1.0)) return x > WC(0.0) || !(n & 1) ? WC(1.0) : WC(-1.0);
    if (n == 0) return WC(1.0);
    W p = WC(1.0), q = x;
    for (long k = 1; k < n && !isnan(q); ++k) {
        W r = ((W)(k + k + 1) * x * q - (W)k * p) / (W)(k + 1);
        p = q;
        q = r;
    }
    return q;
}
BINARY(chebyshev_t_op, (T)chebyshev_w((W)x, poly_n((W)y), 0, 6))
BINARY(chebyshev_u_op, (T)chebyshev_w((W)x, poly_n((W)y), 1, 8))
BINARY(chebyshev_v_op, (T)chebyshev_w((W)x, poly_n((W)y), 2, 8))
BINARY(chebyshev_w_op, (T)chebyshev_w((W)x, poly_n((W)y), 3, 8))
// the shifted polynomials: p*_n(x) = p_n(2x - 1) (DLMF 18.7.11-18.7.14)
BINARY(shifted_chebyshev_t_op, (T)chebyshev_w((W)x + (W)x - WC(1.0), poly_n((W)y), 0, 6))
BINARY(shifted_chebyshev_u_op, (T)chebyshev_w((W)x + (W)x - WC(1.0), poly_n((W)y), 1, 6))
BINARY(shifted_chebyshev_v_op, (T)chebyshev_w((W)x + (W)x - WC(1.0), poly_n((W)y), 2, 6))
BINARY(shifted_chebyshev_w_op, (T)chebyshev_w((W)x + (W)x - WC(1.0), poly_n((W)y), 3, 4))
BINARY(hermite_h_op, (T)hermite_w((W)x, poly_n((W)y), 1))
BINARY(hermite_he_op, (T)hermite_w((W)x, poly_n((W)y), 0))
BINARY(laguerre_l_op, (T)laguerre_w((W)x, poly_n((W)y)))
BINARY(legendre_p_op, (T)legendre_w((W)x, poly_n((W)y)))
#endif
