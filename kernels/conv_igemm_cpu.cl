// kernels/conv_igemm_cpu.cl — implicit-GEMM convolution of a batch of groups for CPUs (see
// conv.h for the problem; conv kernel files are named conv_<algorithm>_<cpu|gpu|any>.cl): no
// workspace; a work-group of one work item stages an input window in local memory and runs
// register-blocked micro-kernels (6 or 4 output channels x NR = 2*VW output columns, vectors
// along the output row), reading the weights through their view.
// Defines: T element type (IS_DOUBLE for double). Launch (local size 1 x 1 x 1):
//   igemm:        (tiles, ceil(o / mc), n * g); local xt[cc*cp], koff[2*cc*kh*kw] (ints),
//                 ot[(mc+4)*th*tw]. Forward, and the input gradient (see conv.h).
//   igemm_wgrad:  (ceil(c / cr), ceil(o / mc), g * split); partial sums ws[split][g][o][K+1]
//                 (K = c*kh*kw; column K: the bias gradient).
//   wgrad_reduce: (K+1, min(g*o, 65535)) items, local (64, 1): sums ws over the splits into
//                 the weight and bias gradients (also for conv_dw_cpu.cl, conv_direct_any.cl,
//                 conv_gemm_gpu.cl, conv_gpu.py).
#include "conv.h"

#ifndef IS_HALF  // (float16 builds hold only wgrad_reduce: conv.h)

// One micro-tile: rows (output channels) i0..i0+5 (or +3) times NR output columns, as two
// vectors per row. Weights are read through their view: row pointers w0..w5 (clamped to the
// last real row) and the per-tap offset table woff; the window through koff.
#define ZERO_ROW(i) V c##i##0 = (V)0, c##i##1 = (V)0;
#define LOAD_ROW(i) c##i##0 = LDL(o + i * tsz); c##i##1 = LDL(o + i * tsz + VW);
#define FMA_ROW(i) { T a = w##i[wk]; c##i##0 += a * b0; c##i##1 += a * b1; }
#define STORE_ROW(i) STL(o + i * tsz, c##i##0); STL(o + i * tsz + VW, c##i##1);
#define OUT_ROW(i) if (i0 + i < nco) put(Y + yb + (i0 + i) * p.y.s[2], c##i##0 + bv##i, \
                                         c##i##1 + bv##i, ncol - s * NR, p.y.s[4]);
#define WROW(i) __global const T *w##i = K + kbase + MIN(i0 + i, nco - 1) * p.k.s[1]; \
                const T bv##i = p.bias ? B[p.boff + (g * p.o + co0 + MIN(i0 + i, nco - 1)) \
                                           * p.bs] : (T)0;
#define ROWS6(M) M(0) M(1) M(2) M(3) M(4) M(5)
#define ROWS4(M) M(0) M(1) M(2) M(3)
#define MICRO(ROWS)                                                             \
    for (int r = 0; r < nrow; ++r) {                                           \
        for (int s = 0; s < nstrip; ++s) {                                     \
            __local const T *xb = xt + r * (int)(p.sh * p.rp) + s * NR;        \
            __local T *o = ot + i0 * tsz + r * (int)p.tw + s * NR;            \
            const long yb = ybase + r * p.y.s[3] + s * NR * p.y.s[4];          \
            ROWS(ZERO_ROW)                                                     \
            if (c0 > 0) { ROWS(LOAD_ROW) }                                     \
            for (int k = 0; k < kc; ++k) {                                     \
                __local const T *xp = xb + koff[k];                            \
                const int wk = woff[k];                                        \
                V b0 = LDL(xp), b1 = LDL(xp + VW);                             \
                ROWS(FMA_ROW)                                                  \
            }                                                                  \
            if (last) { ROWS(OUT_ROW) } else { ROWS(STORE_ROW) }               \
        }                                                                      \
    }

// Forward (and input gradient). A work-group computes mc output channels x th rows x tw
// columns of one (n, g): for each chunk of cc input channels it stages the input window in xt
// and the tap offsets in koff/woff, then runs micro-tiles of 6 (and, to cover mc exactly with
// 6a + 4b rows, 4) output channels x NR columns; partial sums wait in ot between chunks, the
// last chunk adds the bias and writes through Y's view.
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void igemm(const conv_t p, __global const T *X, __global const T *K, __global T *Y,
           __global const T *B, __local T *xt, __local int *koff, __local T *ot) {
    long oh0, ow0;
    tile_origin(p, get_group_id(0), &oh0, &ow0);
    const long co0 = get_group_id(1) * p.mc;
    const long n = get_group_id(2) / p.g, g = get_group_id(2) % p.g;
    const int nco = (int)MIN(p.mc, p.o - co0);
    const int nrow = (int)MIN(p.th, p.oh - oh0), ncol = (int)MIN(p.tw, p.ow - ow0);
    const int nstrip = (ncol + NR - 1) / NR, khw = (int)(p.kh * p.kw);
    const int tsz = (int)(p.th * p.tw);
    // rows in blocks of 6 then 4: the fewest rows >= nco of the form 6a + 4b
    int n6 = (nco + 5) / 6, n4 = 0;
    for (int b = 1; b <= 2; ++b) {
        int a = MAX(0, (nco - 4 * b + 5) / 6);
        if (6 * a + 4 * b < 6 * n6 + 4 * n4) { n6 = a; n4 = b; }
    }
    const long xbase = p.x.off + n * p.x.s[0] + g * p.x.s[1];
    const long kbase = p.k.off + g * p.k.s[0] + co0 * p.k.s[1];
    const long ybase = p.y.off + n * p.y.s[0] + g * p.y.s[1] + co0 * p.y.s[2] + oh0 * p.y.s[3]
                       + ow0 * p.y.s[4];
    __local int *woff = koff + p.cc * khw;
    for (long c0 = 0; c0 < p.c; c0 += p.cc) {
        const int cc = (int)MIN(p.cc, p.c - c0), kc = cc * khw;
        const bool last = c0 + cc >= p.c;
        fill_window(xt, X, xbase + c0 * p.x.s[2], cc, oh0, ow0, p);
        for (int k = 0; k < kc; ++k) {
            int c = k / khw, r = k - c * khw, kh = r / (int)p.kw, kw = r - kh * (int)p.kw;
            koff[k] = tap_offset(k, p);
            woff[k] = (int)((c0 + c) * p.k.s[2] + kh * p.k.s[3] + kw * p.k.s[4]);
        }
        for (int b = 0; b < n6; ++b) {
            const int i0 = 6 * b;
            ROWS6(WROW)
            MICRO(ROWS6)
        }
        for (int b = 0; b < n4; ++b) {
            const int i0 = 6 * n6 + 4 * b;
            ROWS4(WROW)
            MICRO(ROWS4)
        }
    }
}

#define MRW 4
#define NRW 3
#define WZERO(i) V w##i##0 = (V)0, w##i##1 = (V)0, w##i##2 = (V)0;
#define WFMA(i) { V gq = LDL(gp + i * tsz); w##i##0 += gq * x0; w##i##1 += gq * x1; \
                  w##i##2 += gq * x2; }
#define WSUM(i) { __local T *q = wa + i * kr + kb * NRW; q[0] += hsum(w##i##0); \
                  if (kb * NRW + 1 < kc) q[1] += hsum(w##i##1); \
                  if (kb * NRW + 2 < kc) q[2] += hsum(w##i##2); }
#define WROWS(M) M(0) M(1) M(2) M(3)

// Weight gradient: ws[s][g][o][k] = sum over the samples of split s of
//   GO[n,g,o,oh,ow] * Xv[n,g,c,oh*sh-ph+kh*dh, ow*sw-pw+kw*dw],  k = (c, kh, kw);
// column K = c*kh*kw of ws holds sum GO (the bias gradient), written by channel range 0.
// A work-group owns mc output channels and input channels [c_lo, c_lo + cr) of one group and
// one split of the batch. Per sample and output tile it stages the output
// gradient once (gt, zero past the tile's valid rows/columns), then per chunk of cc input
// channels the input window, and runs 4 x 3 micro-tiles (4 output channels x 3 taps) whose
// vectors run along output columns; lanes are summed into wacc at the end of each tile.
// Local: xt[cc*cp], gt[mc4*th*tw], koff[kcp], wacc[mc4*cr*kh*kw + mc4] (mc4 = mc rounded to 4).
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void igemm_wgrad(const conv_t p, long cr, __global const T *X, __global const T *GO, v5_t gv,
                 __global T *ws, __local T *xt, __local T *gt, __local int *koff,
                 __local T *wacc) {
    const long clo = get_group_id(0) * cr, co0 = get_group_id(1) * p.mc;
    const long g = get_group_id(2) % p.g, sp = get_group_id(2) / p.g;
    const int khw = (int)(p.kh * p.kw), ncr = (int)MIN(cr, p.c - clo), kr = ncr * khw;
    const int nco = (int)MIN(p.mc, p.o - co0), nob = (nco + MRW - 1) / MRW;
    const int tsz = (int)(p.th * p.tw);
    const long n0 = sp * p.n / p.split, n1 = (sp + 1) * p.n / p.split;
    __local T *bacc = wacc + nob * MRW * kr;
    for (int i = 0; i < nob * MRW * (kr + 1); ++i) wacc[i] = (T)0;
    const long ntiles = ((p.oh + p.th - 1) / p.th) * p.ntw;
    for (long n = n0; n < n1; ++n) {
        for (long t = 0; t < ntiles; ++t) {
            long oh0, ow0;
            tile_origin(p, t, &oh0, &ow0);
            const int nrow = (int)MIN(p.th, p.oh - oh0), ncol = (int)MIN(p.tw, p.ow - ow0);
            const int nvec = (ncol + VW - 1) / VW;
            for (int i = 0; i < nob * MRW; ++i) {
                for (int r = 0; r < p.th; ++r) {
                    __local T *d = gt + i * tsz + r * (int)p.tw;
                    if (i < nco && r < nrow) {
                        __global const T *s = GO + gv.off + n * gv.s[0] + g * gv.s[1]
                                              + (co0 + i) * gv.s[2] + (oh0 + r) * gv.s[3]
                                              + ow0 * gv.s[4];
                        for (int j = 0; j < ncol; ++j) d[j] = s[j * gv.s[4]];
                        for (int j = ncol; j < p.tw; ++j) d[j] = (T)0;
                    } else {
                        for (int j = 0; j < p.tw; ++j) d[j] = (T)0;
                    }
                }
            }
            if (clo == 0) {
                for (int i = 0; i < nco; ++i) {
                    V s = (V)0;
                    for (int r = 0; r < nrow; ++r)
                        for (int v = 0; v < nvec; ++v) s += LDL(gt + i * tsz + r * p.tw + v * VW);
                    bacc[i] += hsum(s);
                }
            }
            for (int c0 = 0; c0 < ncr; c0 += (int)p.cc) {
                const int cc = MIN((int)p.cc, ncr - c0), kc = cc * khw;
                const int nkb = (kc + NRW - 1) / NRW;
                fill_window(xt, X, p.x.off + n * p.x.s[0] + g * p.x.s[1] + (clo + c0) * p.x.s[2],
                            cc, oh0, ow0, p);
                for (int k = 0; k < nkb * NRW; ++k) koff[k] = tap_offset(MIN(k, kc - 1), p);
                for (int ob = 0; ob < nob; ++ob) {
                    __local T *wa = wacc + ob * MRW * kr + c0 * khw;
                    for (int kb = 0; kb < nkb; ++kb) {
                        WROWS(WZERO)
                        const int o0 = koff[kb * NRW], o1 = koff[kb * NRW + 1],
                                  o2 = koff[kb * NRW + 2];
                        for (int r = 0; r < nrow; ++r) {
                            __local const T *xr = xt + r * (int)(p.sh * p.rp);
                            __local const T *gp = gt + ob * MRW * tsz + r * (int)p.tw;
                            for (int v = 0; v < nvec; ++v, xr += VW, gp += VW) {
                                V x0 = LDL(xr + o0), x1 = LDL(xr + o1), x2 = LDL(xr + o2);
                                WROWS(WFMA)
                            }
                        }
                        WROWS(WSUM)
                    }
                }
            }
        }
    }
    const long kall = p.c * khw;
    __global T *w = ws + ((sp * p.g + g) * p.o + co0) * (kall + 1);
    for (int i = 0; i < nco; ++i) {
        for (int k = 0; k < kr; ++k) w[i * (kall + 1) + clo * khw + k] = wacc[i * kr + k];
        if (clo == 0) w[i * (kall + 1) + kall] = bacc[i];
    }
}

#endif  // IS_HALF

// Sum the split partial sums ws[split][g][o][K+1] into the weight gradient (view gw of
// (g, o, c, kh, kw)) and the bias gradient (offset boff, stride bs). 2-D launch: dim 0 is
// k in [0, K], dim 1 strides over the g*o rows (at most 65535 rows per launch row, for GPU
// grids). No 64-bit division per element (the 1-D form took 8 of them and ran slower than
// the weight-gradient GEMM it follows, h8 2026-12-01): one 32-bit division per row, and the
// (c, kh, kw) split only where gw is not dense over (c, kh, kw). WS: the partial sums' type
// (default T; float for float16 gradients, whose kernels sum in float: the sum is rounded to
// T once, at the store).
#ifndef WS
#define WS T
#endif
__kernel void wgrad_reduce(const conv_t p, __global const WS *ws, __global T *GW, v5_t gw,
                           __global T *GB, long boff, long bs, int want_w, int want_b) {
    const long kall = p.c * p.kh * p.kw, rows = p.g * p.o, per = rows * (kall + 1);
    const long k = get_global_id(0);
    if (k > kall) return;
    const int dense = gw.s[4] == 1 && gw.s[3] == p.kw && gw.s[2] == p.kh * p.kw;
    for (long go = get_global_id(1); go < rows; go += get_global_size(1)) {
        const long i = go * (kall + 1) + k;
        WS s = (WS)0;
        for (long sp = 0; sp < p.split; ++sp) s += ws[sp * per + i];
        if (k == kall) {
            if (want_b) GB[boff + go * bs] = (T)s;
            continue;
        }
        if (!want_w) continue;
        const long g = (int)go / (int)p.o, o = go - g * p.o;
        long off = gw.off + g * gw.s[0] + o * gw.s[1];
        if (dense) {
            off += k;
        } else {
            const long khw = p.kh * p.kw, c = k / khw, r = k - c * khw, kh = r / p.kw;
            off += c * gw.s[2] + kh * gw.s[3] + (r - kh * p.kw) * gw.s[4];
        }
        GW[off] = (T)s;
    }
}

// sizeof(conv_t) and a few of its fields: Problem.pack() (clgrad/ops/conv_problem.py) must
// give this struct (tests/test_conv.py::test_problem_packs_conv_t).
__kernel void conv_t_probe(const conv_t p, __global long *out) {
    out[0] = sizeof(conv_t);
    out[1] = p.n;
    out[2] = p.uw;
    out[3] = p.x.off;
    out[4] = p.y.s[4];
    out[5] = p.bias;
    out[6] = p.mc;
    out[7] = p.slab;
}
