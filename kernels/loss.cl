// kernels/loss.cl — softmax / log_softmax along one dim, and cross-entropy / nll fused with it.
// Defines: T element type (float or double); WG: 1 for one work item per row (launched in
// groups of any size; each checks r < nrows), or a power of two for one work-group per row.
// Geometry: a "row" is every element along the reduced dim (the class dim). Row r of a tensor
// starts at off1(r, nd, sh, v) and steps by the dim's stride; sh holds the other dims
// collapsed, v their strides and the tensor's offset.
// Log-sum-exp is one pass (online max and rescaled sum), so logits like 1e8 are safe.
// ACC: the type the row passes and the cross-entropy kernels compute and keep their row
// statistics in (float for half: clgrad/ops/_util.py defines_of; T otherwise), so a float16
// loss or gradient is rounded once. LOSS_T: ce_fwd's per-row losses (the host defines it as
// float for a float16 loss that ce_finish reduces; T, the result itself, for 'none').
#include "common.h"

#ifndef ACC
#define ACC T
#endif
#ifndef LOSS_T
#define LOSS_T T
#endif

#if WG > 1
#define REQD __attribute__((reqd_work_group_size(WG, 1, 1)))
#define ROW_HEAD(nrows) long r = get_group_id(0); int lid = get_local_id(0);  \
                        __local ACC buf_m[WG]; __local ACC buf_s[WG];
#define ROW_LSE(m, s) row_lse(&m, &s, buf_m, buf_s)
#define ROW_SUM(v) v = row_sum(v, buf_s)
#else
#define REQD
#define ROW_HEAD(nrows) long r = get_global_id(0); if (r >= nrows) return; int lid = 0;
#define ROW_LSE(m, s)
#define ROW_SUM(v)
#endif

// Fold v into the running (max m, sum s of exp(x - m)). -inf adds nothing; NaN propagates.
inline void lse_add(ACC v, ACC *m, ACC *s) {
    if (v > *m) {
        *s = *s * exp(*m - v) + (ACC)1;
        *m = v;
    } else if (*m > -INFINITY || isnan(v)) {
        *s += exp(v - *m);
    }
}

inline void lse_merge(ACC m2, ACC s2, ACC *m, ACC *s) {
    if (s2 == (ACC)0) return;
    if (*s == (ACC)0) {
        *m = m2;
        *s = s2;
    } else if (m2 > *m) {
        *s = *s * exp(*m - m2) + s2;
        *m = m2;
    } else {
        *s += s2 * exp(m2 - *m);
    }
}

#if WG > 1
inline ACC row_sum(ACC v, __local ACC *buf) {
    int lid = get_local_id(0);
    buf[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = WG / 2; k > 0; k >>= 1) {
        if (lid < k) buf[lid] += buf[lid + k];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    ACC out = buf[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return out;
}

inline void row_lse(ACC *m, ACC *s, __local ACC *bm, __local ACC *bs) {
    int lid = get_local_id(0);
    bm[lid] = *m;
    bs[lid] = *s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = WG / 2; k > 0; k >>= 1) {
        if (lid < k) {
            ACC mm = bm[lid], ss = bs[lid];
            lse_merge(bm[lid + k], bs[lid + k], &mm, &ss);
            bm[lid] = mm;
            bs[lid] = ss;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    *m = bm[0];
    *s = bs[0];
    barrier(CLK_LOCAL_MEM_FENCE);
}
#endif

// With m the row's max and s = sum(exp(x - m)): y = x - m - log(s) (log_out) or
// exp(x - m) / s.
__kernel REQD void softmax_fwd(long nrows, int nd, shape_t sh, long len, __global T *y,
                               view_t vy, long sy, __global const T *x, view_t vx, long sx,
                               int log_out) {
    ROW_HEAD(nrows)
    long by, bx;
    off2(r, nd, sh, vy, vx, &by, &bx);
    ACC m = -INFINITY, s = 0;
    for (long j = lid; j < len; j += WG) lse_add(x[bx + j * sx], &m, &s);
    ROW_LSE(m, s);
    if (m == INFINITY) s = NAN;  // +inf - +inf is NaN: the whole row is NaN (PyTorch)
    ACC logs = log(s);  // m + log(s) would round log(s) away when |m| >> 1 in float32
    for (long j = lid; j < len; j += WG) {
        ACC v = x[bx + j * sx] - m;
        y[by + j * sy] = log_out ? v - logs : exp(v) / s;
    }
}

// softmax: gx = y (g - sum(g y)); log_softmax: gx = g - exp(y) sum(g).
__kernel REQD void softmax_bwd(long nrows, int nd, shape_t sh, long len, __global T *gx,
                               view_t vgx, long sgx, __global const T *gy, view_t vgy,
                               long sgy, __global const T *y, view_t vy, long sy,
                               int log_out) {
    ROW_HEAD(nrows)
    long bgx, bgy, by;
    off3(r, nd, sh, vgx, vgy, vy, &bgx, &bgy, &by);
    ACC dot = 0;
    for (long j = lid; j < len; j += WG) {
        ACC g = gy[bgy + j * sgy];
        dot += log_out ? g : g * y[by + j * sy];
    }
    ROW_SUM(dot);
    for (long j = lid; j < len; j += WG) {
        ACC g = gy[bgy + j * sgy], yv = y[by + j * sy];
        gx[bgx + j * sgx] = log_out ? g - exp(yv) * dot : yv * (g - dot);
    }
}

// Per row: loss_r = (1 - eps) w_t (lse - x_t) + eps / C * sum_c w_c (lse - x_c) and its
// weight w_t, both 0 when t == ignore; lse - x = (m - x) + log(s) with m the row's max and
// s = sum(exp(x - m)), which are saved for backward (in ACC). logits == 0 (nll_loss): x holds
// log-probabilities, loss_r = -w_t x_t, no row pass.
__kernel REQD void ce_fwd(long nrows, int nd, shape_t sh, long nc, __global const T *x,
                          view_t vx, long sxc, __global const long *tg, view_t vt,
                          __global const T *w, view_t vw, int has_w, long ignore, ACC eps,
                          int logits, __global LOSS_T *loss, __global ACC *wrow,
                          __global ACC *rmax, __global ACC *rsum) {
    ROW_HEAD(nrows)
    long bx, bt;
    off2(r, nd, sh, vx, vt, &bx, &bt);
    // Barriers stay outside branches (PoCL miscompiles barriers under uniform branches):
    // the passes a variant skips run over no elements.
    ACC m = -INFINITY, s = 0, smooth = 0;
    long len = logits ? nc : 0, slen = (logits && eps != (ACC)0) ? nc : 0;
    for (long j = lid; j < len; j += WG) lse_add(x[bx + j * sxc], &m, &s);
    ROW_LSE(m, s);
    if (m == INFINITY) s = NAN;  // a +inf logit: the row's log-probabilities are NaN (PyTorch)
    ACC logs = logits ? log(s) : (ACC)0;
    for (long j = lid; j < slen; j += WG)
        smooth += (has_w ? (ACC)w[vw.off + j * vw.s[0]] : (ACC)1) *
                  ((m - x[bx + j * sxc]) + logs);
    ROW_SUM(smooth);
    if (lid != 0) return;
    long t = tg[bt];
    ACC l = 0, wt = 0;
    if (t != ignore && (t < 0 || t >= nc)) {  // only in captured steps (no host check): NaN
        l = NAN;
        wt = NAN;
    } else if (t != ignore) {
        wt = has_w ? (ACC)w[vw.off + t * vw.s[0]] : (ACC)1;
        ACC xt = x[bx + t * sxc];
        l = ((ACC)1 - eps) * wt * (logits ? (m - xt) + logs : -xt) + eps / (ACC)nc * smooth;
    }
    loss[r] = l;
    wrow[r] = wt;
    if (logits) {
        rmax[r] = m;
        rsum[r] = s;
    }
}

// out = sum(loss) / sum(wrow) (mean) or sum(loss), summed in ACC and rounded once;
// denom = sum(wrow), kept in ACC for backward. One group of 256.
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void ce_finish(long nrows, __global const LOSS_T *loss, __global const ACC *wrow, int mean,
               __global T *out, __global ACC *denom) {
    __local ACC a[256];
    __local ACC b[256];
    int lid = get_local_id(0);
    ACC sl = 0, sw = 0;
    for (long j = lid; j < nrows; j += 256) {
        sl += loss[j];
        sw += wrow[j];
    }
    a[lid] = sl;
    b[lid] = sw;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 128; k > 0; k >>= 1) {
        if (lid < k) {
            a[lid] += a[lid + k];
            b[lid] += b[lid + k];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        out[0] = mean ? a[0] / b[0] : a[0];
        denom[0] = b[0];
    }
}

// One work item per element of the contiguous (N, C, S) gradient; row r = n S + s.
// With p = exp(x - m) / s (the row's saved max and sum), W = sum_c w_c and g the row's
// upstream gradient (divided by denom for 'mean'):
// gx_c = g (p_c ((1 - eps) w_t + eps W / C) - [c == t] (1 - eps) w_t - eps w_c / C);
// nll (logits == 0): gx_c = -g w_t [c == t]. Rows with t == ignore get 0. Computed in ACC
// and rounded once (float16: neither p nor g / denom rounded to half on the way).
__kernel void ce_bwd(long total, long nc, long ns, int nd, shape_t sh, __global T *gx,
                     __global const T *x, view_t vx, long sxc, __global const long *tg,
                     view_t vt, __global const T *w, view_t vw, int has_w,
                     __global const T *gy, view_t vg, __global const ACC *denom, int mean,
                     __global const ACC *rmax, __global const ACC *rsum,
                     __global const ACC *wsum, long ignore, ACC eps,
                     int logits) {
    long i = get_global_id(0);
    if (i >= total) return;
    long c = (i / ns) % nc;
    long r = (i / (nc * ns)) * ns + i % ns;
    long bx, bt, bg;
    off3(r, nd, sh, vx, vt, vg, &bx, &bt, &bg);
    long t = tg[bt];
    if (t == ignore) {
        gx[i] = 0;
        return;
    }
    if (t < 0 || t >= nc) {  // only in captured steps (no host-side range check): NaN
        gx[i] = NAN;
        return;
    }
    ACC g = gy[bg];
    if (mean) g /= denom[0];
    ACC wt = has_w ? (ACC)w[vw.off + t * vw.s[0]] : (ACC)1;
    ACC hit = c == t ? ((ACC)1 - eps) * wt : (ACC)0;
    if (!logits) {
        gx[i] = -g * hit;
        return;
    }
    ACC wc = has_w ? (ACC)w[vw.off + c * vw.s[0]] : (ACC)1;
    ACC wall = (has_w && eps != (ACC)0) ? wsum[0] : (ACC)nc;
    ACC p = exp(x[bx + c * sxc] - rmax[r]) / rsum[r];
    gx[i] = g * (p * (((ACC)1 - eps) * wt + eps * wall / (ACC)nc) - hit - eps * wc / (ACC)nc);
}

// Pointwise losses over strided views (elementwise.cl's signature): name_fwd writes the loss
// of input x, target t and an auxiliary operand a (bce_logits: the log weight
// 1 + (pos_weight - 1) t; 1 elsewhere), with a scalar p0 (smooth_l1: beta; huber: delta).
// name_bwd writes g * d loss / d(x, t or a), ``which`` = 0, 1 or 2. Formulas and the clamps
// are PyTorch's (aten/src/ATen/native/Loss.cpp, BinaryCrossEntropy.cpp).
#define EW_HEAD long i = get_global_id(0); if (i >= n) return;
#define BCE_EPS ((T)1e-12f)
// log clamped below at -100 (PyTorch's BCE); NaN stays NaN (max() would return -100)
inline T log100(T v) {
    T l = log(v);
    return l < (T)-100 ? (T)-100 : l;
}
#define LOG100(v) log100(v)
#define SOFTPLUS_NEG(v) (log1p(exp(-fabs(v))) + max(-(v), (T)0))   // log(1 + exp(-v))
#define SIGN(v) (T)(((v) > (T)0) - ((v) < (T)0))

#define POINTWISE_LOSS(name, LOSS, DX, DT, DA)                                               \
__kernel void name##_fwd(long n, int nd, shape_t sh, __global T *out, view_t vo,            \
                         __global const T *px, view_t vx, __global const T *pt, view_t vt, \
                         __global const T *pa, view_t va, T p0) {                           \
    EW_HEAD long oo, ox, ot, oa; off4(i, nd, sh, vo, vx, vt, va, &oo, &ox, &ot, &oa);       \
    T x = px[ox], t = pt[ot], a = pa[oa]; out[oo] = (LOSS);                                  \
}                                                                                            \
__kernel void name##_bwd(long n, int nd, shape_t sh, __global T *out, view_t vo,            \
                         __global const T *pg, view_t vg, __global const T *px, view_t vx, \
                         __global const T *pt, view_t vt, __global const T *pa, view_t va, \
                         T p0, int which) {                                                  \
    EW_HEAD long oo, og, ox, ot, oa;                                                         \
    off2(i, nd, sh, vo, vg, &oo, &og); off3(i, nd, sh, vx, vt, va, &ox, &ot, &oa);           \
    T x = px[ox], t = pt[ot], a = pa[oa];                                                    \
    out[oo] = pg[og] * (which == 0 ? (DX) : which == 1 ? (DT) : (DA));                       \
}

POINTWISE_LOSS(l1, fabs(x - t), SIGN(x - t), -SIGN(x - t), (T)0)
POINTWISE_LOSS(smooth_l1,
               fabs(x - t) < p0 ? (T)0.5f * (x - t) * (x - t) / p0 : fabs(x - t) - (T)0.5f * p0,
               fabs(x - t) < p0 ? (x - t) / p0 : SIGN(x - t),
               fabs(x - t) < p0 ? (t - x) / p0 : -SIGN(x - t), (T)0)
POINTWISE_LOSS(huber,
               fabs(x - t) < p0 ? (T)0.5f * (x - t) * (x - t) : p0 * (fabs(x - t) - (T)0.5f * p0),
               clamp(x - t, -p0, p0), -clamp(x - t, -p0, p0), (T)0)
POINTWISE_LOSS(bce, -(t * LOG100(x) + ((T)1 - t) * LOG100((T)1 - x)),
               (x - t) / max(((T)1 - x) * x, BCE_EPS), LOG100((T)1 - x) - LOG100(x), (T)0)
POINTWISE_LOSS(bce_logits, ((T)1 - t) * x + a * SOFTPLUS_NEG(x),
               (T)1 - t - a / ((T)1 + exp(x)), -x, SOFTPLUS_NEG(x))
// kl_div: target probabilities (0 log 0 = 0) or, kl_div_log, log-probabilities
POINTWISE_LOSS(kl_div, (t > (T)0 ? t * log(t) : (T)0) - t * x, -t, log(t) + (T)1 - x, (T)0)
POINTWISE_LOSS(kl_div_log, exp(t) * (t - x), -exp(t), exp(t) * (t - x + (T)1), (T)0)
