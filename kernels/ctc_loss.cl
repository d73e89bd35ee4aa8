// kernels/ctc_loss.cl — the CTC loss (Graves et al. 2006, "Connectionist Temporal
// Classification"): the forward (alpha) and backward (beta) recursions in log space over the
// extended label sequence l' = (blank, l1, blank, l2, ..., blank), and the gradient.
// Defines (set by clgrad/ops/ctc_loss.py): T element type (float or double).
// Operands are contiguous: lp (Tm, N, C) from element offset lp_off; ext (N, SP) int64 (the
// extended labels, blank past 2 tl + 1); il, tl (N,) int64; alpha, beta (Tm, N, SP); nll (N,).
// Launch of ctc_alpha / ctc_beta: one work-group per sample n (N groups of any size); each
// work item walks s = lid, lid + size, ... and the time steps are separated by barriers (the
// condition t < il[n] is uniform across the group). ctc_grad: 1-D, one work item per (t, n, c).
#include "common.h"

#define LP(t, c) lp[lp_off + ((long)(t) * N + n) * C + (c)]
#define AT(a, t, s) a[((long)(t) * N + n) * SP + (s)]

// log(exp(a) + exp(b) + exp(c)); -inf when all are -inf; NaN propagates
inline T lse3(T a, T b, T c) {
    T m = a > b ? a : b;
    m = m > c ? m : c;
    if (m == -INFINITY) return isnan(a + b + c) ? NAN : -INFINITY;
    return m + log(exp(a - m) + exp(b - m) + exp(c - m));
}

__kernel void ctc_alpha(long N, long Tm, long C, long SP, __global const T *lp, long lp_off,
                        __global const long *ext, __global const long *il,
                        __global const long *tl, __global T *alpha, __global T *nll) {
    long n = get_group_id(0);
    long lid = get_local_id(0), ls = get_local_size(0);
    __global const long *e = ext + n * SP;
    long in_len = il[n], sn = 2 * tl[n] + 1;  // sn: the extended length of sample n
    for (long s = lid; s < SP; s += ls)       // t = 0: start in the first blank or label
        AT(alpha, 0, s) = (in_len > 0 && s < 2 && s < sn) ? LP(0, e[s]) : -INFINITY;
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (long t = 1; t < Tm; ++t) {
        for (long s = lid; s < SP; s += ls) {
            T v = -INFINITY;
            if (t < in_len && s < sn) {
                T a0 = AT(alpha, t - 1, s);
                T a1 = s >= 1 ? AT(alpha, t - 1, s - 1) : -INFINITY;
                // skip the blank between two labels only when they differ
                T a2 = (s >= 2 && (s & 1) && e[s] != e[s - 2]) ? AT(alpha, t - 1, s - 2)
                                                                : -INFINITY;
                v = lse3(a0, a1, a2) + LP(t, e[s]);
            }
            AT(alpha, t, s) = v;
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
    if (lid == 0) {  // -log(alpha(T-1, end) + alpha(T-1, end - 1)), T = il[n]
        if (in_len == 0) {
            nll[n] = sn == 1 ? (T)0 : INFINITY;
        } else {
            T a = AT(alpha, in_len - 1, sn - 1);
            T b = sn > 1 ? AT(alpha, in_len - 1, sn - 2) : -INFINITY;
            nll[n] = -lse3(a, b, -INFINITY);
        }
    }
}

__kernel void ctc_beta(long N, long Tm, long C, long SP, __global const T *lp, long lp_off,
                       __global const long *ext, __global const long *il,
                       __global const long *tl, __global T *beta) {
    long n = get_group_id(0);
    long lid = get_local_id(0), ls = get_local_size(0);
    __global const long *e = ext + n * SP;
    long in_len = il[n], sn = 2 * tl[n] + 1;
    for (long t = Tm - 1; t >= 0; --t) {
        for (long s = lid; s < SP; s += ls) {
            T v = -INFINITY;
            if (t == in_len - 1) {  // end in the last label or the last blank
                if (s == sn - 1 || s == sn - 2) v = LP(t, e[s]);
            } else if (t < in_len && s < sn) {
                T b0 = AT(beta, t + 1, s);
                T b1 = s + 1 < sn ? AT(beta, t + 1, s + 1) : -INFINITY;
                T b2 = (s + 2 < sn && (s & 1) && e[s + 2] != e[s]) ? AT(beta, t + 1, s + 2)
                                                                    : -INFINITY;
                v = lse3(b0, b1, b2) + LP(t, e[s]);
            }
            AT(beta, t, s) = v;
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}

// grad[t, n, c] = (exp(lp) - exp(log(sum over s with l'_s = c of alpha beta) + nll - lp)) g[n]
// for t < il[n] (PyTorch's ctc_loss_backward: the gradient of the loss with respect to the
// logits of a softmax, see ctc_loss.py); 0 for t >= il[n], and for the whole sample when
// zero_inf and its loss is +inf.
__kernel void ctc_grad(long total, long N, long C, long SP, __global const T *lp, long lp_off,
                       __global const long *ext, __global const long *il,
                       __global const long *tl, __global const T *alpha,
                       __global const T *beta, __global const T *nll,
                       __global const T *g, long g_off, int zero_inf, __global T *grad) {
    long i = get_global_id(0);
    if (i >= total) return;
    long c = i % C, n = (i / C) % N, t = i / (C * N);
    T nl = nll[n];
    if (t >= il[n] || (zero_inf && nl == INFINITY)) {
        grad[i] = (T)0;
        return;
    }
    __global const long *e = ext + n * SP;
    long sn = 2 * tl[n] + 1;
    T m = -INFINITY, acc = (T)0;  // log-sum-exp of alpha + beta over s with l'_s = c
    // blank sits at the even places, the labels (never blank: checked) at the odd ones
    for (long s = c == e[0] ? 0 : 1; s < sn; s += 2) {
        if (e[s] != c) continue;
        T v = AT(alpha, t, s) + AT(beta, t, s);
        if (v > m) {
            acc = acc * exp(m - v) + (T)1;
            m = v;
        } else if (v > -INFINITY) {
            acc += exp(v - m);
        } else if (isnan(v)) {
            acc = NAN;
        }
    }
    T lcab = m == -INFINITY ? -INFINITY : m + log(acc);
    T x = LP(t, c);
    grad[i] = (exp(x) - exp(lcab + nl - x)) * g[g_off + n];
}
