// kernels/conv_dw_cpu.cl — direct stencils for groups with few channels (depthwise: C/G == 1,
// channel multiplier O/G allowed) on the problem of conv.h: no GEMM. The input gradient of a
// depthwise conv (O/G == 1 after the transpose) is the same forward kernel. Two layouts
// (clgrad/ops/conv_algorithms.py picks): channels in vector lanes (dw_cv_*, below: pure
// depthwise maps of windows up to DW_CV_WINDOW, zero insertion too) and phase planes (dw_fwd,
// dw_wgrad: any C/G, O/G; U = 1, a strided input gradient runs as phases: clgrad/ops/conv.py).
//
// Layout (phase planes). A tile of th x tw outputs of one (n, g) reads, per input channel, the
// window rows y0 + m*sh + a and columns x0 + q*sw + b: it is staged as sh*sw phase planes
// (a, b), each `rows` rows of pitch rp = tw + (kw-1)*dw/sw, at (a*sw + b)*rows*rp; a channel
// takes cp elements (the planes and a zeroed tail of SLACK). Tap (kh, kw) with kh*dh = sh*ay + a
// and kw*dw = sw*ax + b then reads, for output (r, j), plane (a, b) at row r + ay, column
// j + ax: with the outputs numbered flat as i = r*rp + j, every tap is the one offset
// toff[tap] = ((a*sw + b)*rows + ay)*rp + ax from i, whatever the stride, and a tile is a 1-D
// stencil over i in [0, (th-1)*rp + tw): vectors of VW consecutive i, the columns j >= tw
// computed and dropped (forward) or multiplied by a zero output gradient (weight gradient).
// Stride-2 layers cost as much per output as stride-1 ones; a 4x4 map wastes 2 of 6 lanes
// (3x3), not 3 of 4 as a vector per row would.
//
// Defines: T element type (IS_DOUBLE for double), WIDE (conv.h). Launch (local size 1):
//   dw_fwd:   (tiles, ceil(n*g / planes)); arg planes = (n, g) planes per work-group;
//             local xt[c*cp], ot[fl + 4*VW] (fl = th*rp), wl[o*c*kk], toff[kk] (int).
//   dw_wgrad: (ceil(g / gpw), split); split == 1: sums written into gw (view gwv) and gb;
//             else partial sums ws[split][g][o][c*kk + 1] for wgrad_reduce
//             (conv_igemm_cpu.cl); local xt[c*cp], gt[o*cpg], wacc[o*(c*kk + 1)], toff[kk].
#include "conv.h"

#define SLACK (4 * VW)
#if defined(__clang__)
#define LDG(p) (*(__global const VU *)(p))
#else
#define LDG(p) VLOAD(0, (p))
#endif

// Columns [lo, hi) of the phase-b run of a window row are inside the input: q with
// 0 <= x0 + b + q*sw < w (int arithmetic, once per plane).
INL void dw_cols(long x0, int b, const conv_t p, int len, int *lo, int *hi) {
    const int s = (int)p.sw, x = (int)x0 + b, w = (int)p.w;
    const int l = x >= 0 ? 0 : (-x + s - 1) / s, h = w > x ? (w - x + s - 1) / s : 0;
    *lo = MIN(l, len);
    *hi = MIN(MAX(h, *lo), len);
}

// dst[q] = src[q*st] for q in [lo, hi), zero elsewhere in [0, len).
INL void dw_run(__local T *dst, __global const T *src, long st, int lo, int hi, int len) {
    int q = 0;
    for (; q < lo; ++q) dst[q] = (T)0;
    if (st == 1)
        for (; q + VW <= hi; q += VW) STL(dst + q, LDG(src + q));
    for (; q < hi; ++q) dst[q] = src[q * st];
    for (; q < len; ++q) dst[q] = (T)0;
}

// Stage the phase planes of cc channels of X at xbase (the view offset of (n, g, 0)) for the
// tile whose first output is (oh0, ow0). Unit-stride rows of stride-2 tiles are split into
// their two phases with vectors (even and odd lanes of two loads).
INL void dw_stage(__local T *xt, __global const T *X, long xbase, int cc, long oh0, long ow0,
                  const conv_t p) {
    const long y0 = oh0 * p.sh - p.ph, x0 = ow0 * p.sw - p.pw, xs = p.x.s[4];
    const int rows = (int)p.rows, rp = (int)p.rp, sw = (int)p.sw, ppl = rows * rp;
    int lo0, hi0, lo1 = 0, hi1 = 0;
    dw_cols(x0, 0, p, rp, &lo0, &hi0);
    if (sw == 2 && xs == 1) dw_cols(x0, 1, p, rp, &lo1, &hi1);
    const int qa = MAX(lo0, lo1), qb = MIN(hi0, hi1);
    const bool pair = sw == 2 && xs == 1 && qa < qb;  // lo0, lo1 <= qa < qb <= hi0, hi1
    for (int c = 0; c < cc; ++c) {
        __global const T *xc = X + xbase + c * p.x.s[2];
        for (int a = 0; a < p.sh; ++a) {
            for (int m = 0; m < rows; ++m) {
                const long y = y0 + m * p.sh + a;
                __local T *dst = xt + c * p.cp + (a * sw * rows + m) * rp;
                if (y < 0 || y >= p.h) {
                    for (int b = 0; b < sw; ++b)
                        for (int q = 0; q < rp; ++q) dst[b * ppl + q] = (T)0;
                    continue;
                }
                __global const T *row = xc + y * p.x.s[3];
                if (pair) {  // dst (phase 0), dst + ppl (phase 1)
                    __local T *d1 = dst + ppl;
                    __global const T *s = row + x0;
                    int q = 0;
                    for (; q < lo0; ++q) dst[q] = (T)0;
                    for (; q < qa; ++q) dst[q] = s[2 * q];
                    for (q = 0; q < lo1; ++q) d1[q] = (T)0;
                    for (; q < qa; ++q) d1[q] = s[2 * q + 1];
                    for (; q + VW <= qb; q += VW) {
                        const V u0 = LDG(s + 2 * q), u1 = LDG(s + 2 * q + VW);
                        STL(dst + q, ((V)(u0.even, u1.even)));
                        STL(d1 + q, ((V)(u0.odd, u1.odd)));
                    }
                    const int q1 = q;
                    for (; q < hi0; ++q) dst[q] = s[2 * q];
                    for (; q < rp; ++q) dst[q] = (T)0;
                    for (q = q1; q < hi1; ++q) d1[q] = s[2 * q + 1];
                    for (; q < rp; ++q) d1[q] = (T)0;
                    continue;
                }
                for (int b = 0; b < sw; ++b) {
                    int lo = lo0, hi = hi0;
                    if (b) dw_cols(x0, b, p, rp, &lo, &hi);
                    dw_run(dst + b * ppl, row + (x0 + b) * xs, sw * xs, lo, hi, rp);
                }
            }
        }
    }
}

// toff[tap] (see the head) and the zeroed tails of the cc staged channels.
INL void dw_setup(__local int *toff, __local T *xt, int cc, const conv_t p) {
    for (int kh = 0; kh < p.kh; ++kh) {
        const int dy = (int)(kh * p.dh), ay = dy / (int)p.sh, a = dy - ay * (int)p.sh;
        for (int kw = 0; kw < p.kw; ++kw) {
            const int dx = (int)(kw * p.dw), ax = dx / (int)p.sw, b = dx - ax * (int)p.sw;
            toff[kh * p.kw + kw] = ((a * (int)p.sw + b) * (int)p.rows + ay) * (int)p.rp + ax;
        }
    }
    const int planes = (int)(p.sh * p.sw * p.rows * p.rp);
    for (int c = 0; c < cc; ++c)
        for (int q = planes; q < p.cp; ++q) xt[c * p.cp + q] = (T)0;
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void dw_fwd(const conv_t p, long planes, __global const T *X, __global const T *K,
            __global T *Y, __global const T *B, __local T *xt, __local T *ot, __local T *wl,
            __local int *toff) {
    long oh0, ow0;
    tile_origin(p, get_group_id(0), &oh0, &ow0);
    const int nrow = (int)MIN(p.th, p.oh - oh0), ncol = (int)MIN(p.tw, p.ow - ow0);
    const int kk = (int)(p.kh * p.kw), rp = (int)p.rp, cc = (int)p.c;
    const int nv = ((nrow - 1) * rp + ncol + VW - 1) / VW;
    dw_setup(toff, xt, cc, p);
    const long pl0 = get_group_id(1) * planes, pl1 = MIN(pl0 + planes, p.n * p.g);
    long n = pl0 / p.g, g = pl0 - n * p.g;
    for (long pl = pl0; pl < pl1; ++pl) {
        dw_stage(xt, X, p.x.off + n * p.x.s[0] + g * p.x.s[1], cc, oh0, ow0, p);
        for (int o = 0; o < p.o; ++o)
            for (int c = 0; c < cc; ++c)
                for (int kh = 0; kh < p.kh; ++kh) {
                    __global const T *kr = K + p.k.off + g * p.k.s[0] + o * p.k.s[1]
                                           + c * p.k.s[2] + kh * p.k.s[3];
                    __local T *wr = wl + (o * cc + c) * kk + kh * (int)p.kw;
                    for (int kw = 0; kw < p.kw; ++kw) wr[kw] = kr[kw * p.k.s[4]];
                }
        for (int o = 0; o < p.o; ++o) {
            const T b = p.bias ? B[p.boff + (g * p.o + o) * p.bs] : (T)0;
            int v = 0;
            for (; v + 4 <= nv; v += 4) {
                V a0 = (V)b, a1 = (V)b, a2 = (V)b, a3 = (V)b;
                for (int c = 0; c < cc; ++c) {
                    __local const T *xc = xt + c * p.cp + v * VW;
                    __local const T *wc = wl + (o * cc + c) * kk;
                    for (int t = 0; t < kk; ++t) {
                        const T w = wc[t];
                        __local const T *xp = xc + toff[t];
                        a0 += w * LDL(xp);
                        a1 += w * LDL(xp + VW);
                        a2 += w * LDL(xp + 2 * VW);
                        a3 += w * LDL(xp + 3 * VW);
                    }
                }
                STL(ot + v * VW, a0);
                STL(ot + (v + 1) * VW, a1);
                STL(ot + (v + 2) * VW, a2);
                STL(ot + (v + 3) * VW, a3);
            }
            for (; v < nv; ++v) {
                V a0 = (V)b;
                for (int c = 0; c < cc; ++c) {
                    __local const T *xc = xt + c * p.cp + v * VW;
                    __local const T *wc = wl + (o * cc + c) * kk;
                    for (int t = 0; t < kk; ++t) a0 += wc[t] * LDL(xc + toff[t]);
                }
                STL(ot + v * VW, a0);
            }
            __global T *yo = Y + p.y.off + n * p.y.s[0] + g * p.y.s[1] + o * p.y.s[2]
                             + oh0 * p.y.s[3] + ow0 * p.y.s[4];
            for (int r = 0; r < nrow; ++r) {
                __global T *y = yo + r * p.y.s[3];
                __local const T *s = ot + r * rp;
                int j = 0;
                if (p.y.s[4] == 1)
                    for (; j + VW <= ncol; j += VW) STG(y + j, LDL(s + j));
                for (; j < ncol; ++j) y[j * p.y.s[4]] = s[j];
            }
        }
        if (++g == p.g) {
            g = 0;
            ++n;
        }
    }
}

// Weight gradient of groups [g0, g0 + gpw) over the samples of one split: per sample and
// tile, stage the input's phase planes (c channels) and the output gradient flat (o channels,
// pitch rp, zero in the columns j >= tw), then per (o, c) and taps in fours, a dot product
// over the flat outputs with four vector accumulators sharing each output-gradient load.
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void dw_wgrad(const conv_t p, long gpw, __global const T *X, __global const T *GO, v5_t gv,
              __global T *ws, v5_t gwv, __global T *GB, __local T *xt, __local T *gt,
              __local T *wacc, __local int *toff) {
    const long sp = (long)get_group_id(1), n0 = sp * p.n / p.split, n1 = (sp + 1) * p.n / p.split;
    const int kk = (int)(p.kh * p.kw), cc = (int)p.c, kall = cc * kk, rp = (int)p.rp;
    const int cpg = (int)(p.th * p.rp) + SLACK;  // output-gradient pitch per channel
    const long ntiles = ((p.oh + p.th - 1) / p.th) * p.ntw;
    const long g0 = (long)get_group_id(0) * gpw, g1 = MIN(g0 + gpw, p.g);
    dw_setup(toff, xt, cc, p);
    for (int i = 0; i < p.o * cpg; ++i) gt[i] = (T)0;
    for (long g = g0; g < g1; ++g) {
        for (int i = 0; i < p.o * (kall + 1); ++i) wacc[i] = (T)0;
        for (long n = n0; n < n1; ++n) {
            for (long t = 0; t < ntiles; ++t) {
                long oh0, ow0;
                tile_origin(p, t, &oh0, &ow0);
                const int nrow = (int)MIN(p.th, p.oh - oh0), ncol = (int)MIN(p.tw, p.ow - ow0);
                const int nv = ((nrow - 1) * rp + ncol + VW - 1) / VW;
                for (int o = 0; o < p.o; ++o) {
                    __global const T *s0 = GO + gv.off + n * gv.s[0] + g * gv.s[1]
                                           + o * gv.s[2] + oh0 * gv.s[3] + ow0 * gv.s[4];
                    __local T *d0 = gt + o * cpg;
                    for (int r = 0; r < nrow; ++r) {
                        __global const T *s = s0 + r * gv.s[3];
                        __local T *d = d0 + r * rp;
                        int j = 0;
                        if (gv.s[4] == 1)
                            for (; j + VW <= ncol; j += VW) STL(d + j, LDG(s + j));
                        for (; j < ncol; ++j) d[j] = s[j * gv.s[4]];
                        for (; j < rp; ++j) d[j] = (T)0;
                    }
                    for (int i = nrow * rp; i < nv * VW; ++i) d0[i] = (T)0;
                    V sum = (V)0;
                    for (int v = 0; v < nv; ++v) sum += LDL(d0 + v * VW);
                    wacc[o * (kall + 1) + kall] += hsum(sum);
                }
                dw_stage(xt, X, p.x.off + n * p.x.s[0] + g * p.x.s[1], cc, oh0, ow0, p);
                for (int o = 0; o < p.o; ++o) {
                    __local const T *go = gt + o * cpg;
                    for (int c = 0; c < cc; ++c) {
                        __local const T *xc = xt + c * p.cp;
                        __local T *wa = wacc + o * (kall + 1) + c * kk;
                        for (int t0 = 0; t0 < kk; t0 += 4) {
                            const int o0 = toff[t0], o1 = toff[MIN(t0 + 1, kk - 1)],
                                      o2 = toff[MIN(t0 + 2, kk - 1)],
                                      o3 = toff[MIN(t0 + 3, kk - 1)];
                            V s0 = (V)0, s1 = (V)0, s2 = (V)0, s3 = (V)0;
                            for (int v = 0; v < nv; ++v) {
                                const V gq = LDL(go + v * VW);
                                __local const T *xv = xc + v * VW;
                                s0 += gq * LDL(xv + o0);
                                s1 += gq * LDL(xv + o1);
                                s2 += gq * LDL(xv + o2);
                                s3 += gq * LDL(xv + o3);
                            }
                            wa[t0] += hsum(s0);
                            if (t0 + 1 < kk) wa[t0 + 1] += hsum(s1);
                            if (t0 + 2 < kk) wa[t0 + 2] += hsum(s2);
                            if (t0 + 3 < kk) wa[t0 + 3] += hsum(s3);
                        }
                    }
                }
            }
        }
        if (p.split == 1) {  // the sums themselves: gw[g*o + o', c, kh, kw] and gb[g*o + o']
            for (int o = 0; o < p.o; ++o) {
                for (int c = 0; c < cc; ++c)
                    for (int t = 0; t < kk; ++t) {
                        const int kh = t / (int)p.kw, kw = t - kh * (int)p.kw;
                        ws[gwv.off + g * gwv.s[0] + o * gwv.s[1] + c * gwv.s[2] + kh * gwv.s[3]
                           + kw * gwv.s[4]] = wacc[o * (kall + 1) + c * kk + t];
                    }
                if (p.bias) GB[p.boff + (g * p.o + o) * p.bs] = wacc[o * (kall + 1) + kall];
            }
        } else {
            __global T *w = ws + (sp * p.g + g) * p.o * (kall + 1);
            for (int i = 0; i < p.o * (kall + 1); ++i) w[i] = wacc[i];
        }
    }
}

// -- channels in vector lanes, for small maps (C/G == O/G == 1) ------------------------------
// A map of a few dozen outputs is too short for vectors along its rows: instead lane l of a
// vector holds group g0 + l (VW consecutive channels of one sample). The whole zero-padded
// input window of the VW maps is staged interleaved, xt[(y*wp + x)*VW + l] (y < p.rows,
// x < wp = p.rp); its border stays zero (staged once per work-group), so any stride or
// dilation is a vector load per tap. Pixel q of the output reads xt at poff[q] + toff[tap].
// Launch (local size 1):
//   dw_cv_fwd:   (ceil(n * nb / blocks),), nb = ceil(g / VW) channel blocks, block
//                gb * n + sample; arg blocks per work-group; local xt[rows*wp*VW],
//                ot[oh*ow*VW], wl[kk*VW], poff[oh*ow], toff[kk], emap[h*w], ptab (int;
//                cv_classes, with zero insertion).
//   dw_cv_wgrad: (nb, split): the samples of one split; split == 1 writes gw (view gwv) and
//                gb, else partial sums ws[split][g][1][kk + 1]; local xt, gt[oh*ow*VW],
//                wacc[(kk + 1)*VW], poff, toff, emap.

// poff, toff and the zeroed window.
INL void cv_setup(__local int *poff, __local int *toff, __local T *xt, const conv_t p) {
    const int wp = (int)p.rp;
    for (int r = 0; r < p.oh; ++r)
        for (int j = 0; j < p.ow; ++j)
            poff[r * p.ow + j] = (int)((r * p.sh * wp + j * p.sw) * VW);
    for (int kh = 0; kh < p.kh; ++kh)
        for (int kw = 0; kw < p.kw; ++kw)
            toff[kh * p.kw + kw] = (int)((kh * p.dh * wp + kw * p.dw) * VW);
    for (int i = 0; i < p.rows * wp; ++i) STL(xt + i * VW, (V)0);
}

// Stage lanes [0, nl) (groups g0 + l of sample n) of a view v5 of (n, g, 0, h, w) maps into
// dst[((y*uy + oy)*pitch + x*ux + ox)*VW + l] for the rows y in [ya, yb), columns [xa, xb).
INL void cv_stage(__local T *dst, __global const T *S, v5_t v, long n, long g0, int nl,
                  int ya, int yb, int xa, int xb, int oy, int ox, int pitch, int uy, int ux) {
    for (int l = 0; l < nl; ++l) {
        __global const T *s = S + v.off + n * v.s[0] + (g0 + l) * v.s[1];
        for (int y = ya; y < yb; ++y) {
            __global const T *sr = s + y * v.s[3];
            __local T *d = dst + ((y * uy + oy) * pitch + ox) * VW + l;
            if (v.s[4] == 1 && ux == 1)
                for (int x = xa; x < xb; ++x) d[x * VW] = sr[x];
            else
                for (int x = xa; x < xb; ++x) d[x * ux * VW] = sr[x * v.s[4]];
        }
    }
}

// The input rows [ya, yb) and columns [xa, xb) inside the window: input (y, x) sits at window
// (y*uh + ph, x*uw + pw) (negative padding: phase problems; zero insertion U > 1: a strided
// layer's input gradient in one launch, the window's inserted zeros never written).
INL int cv_first(long pad, long u) { return pad >= 0 ? 0 : (int)((-pad + u - 1) / u); }
INL int cv_end(long pad, long u, long n, long len) {
    return len - 1 - pad < 0 ? 0 : (int)MIN(n, (len - 1 - pad) / u + 1);
}
#define CV_RANGE                                                                          \
    const int ya = cv_first(p.ph, p.uh), yb = MAX(ya, cv_end(p.ph, p.uh, p.h, p.rows)),    \
              xa = cv_first(p.pw, p.uw), xb = MAX(xa, cv_end(p.pw, p.uw, p.w, p.rp))

#define CV_CHUNK (2048 / VW)  // pixels per chunk of dw_cv_wgrad (8 KB of output gradient)

#if VW == 16
#define LOG2VW 4
#elif VW == 8
#define LOG2VW 3
#else
#define LOG2VW 2
#endif

// m[i] becomes column i of the VW x VW matrix whose rows are m[0..VW): each round sets row i
// (i < VW/2) to the even lanes of rows 2i and 2i+1, row i + VW/2 to their odd lanes, which
// rotates the bits of (row, column) by one; log2(VW) rounds swap row and column.
INL void cv_transpose(V *m) {
#pragma unroll
    for (int round = 0; round < LOG2VW; ++round) {
        V t[VW];
#pragma unroll
        for (int i = 0; i < VW / 2; ++i) {
            t[i] = (V)(m[2 * i].even, m[2 * i + 1].even);
            t[i + VW / 2] = (V)(m[2 * i].odd, m[2 * i + 1].odd);
        }
#pragma unroll
        for (int i = 0; i < VW; ++i) m[i] = t[i];
    }
}

// cv_stage for VW lanes of maps stored densely (h*w elements, rows of w): blocks of VW
// elements of the VW maps transposed in registers, element e stored at dst + emap[e] (emap
// NULL: at dst + e*VW).
INL void cv_stage_dense(__local T *dst, __global const T *S, v5_t v, long n, long g0, int hw,
                        __local const int *emap) {
    __global const T *s = S + v.off + n * v.s[0] + g0 * v.s[1];
    int e0 = 0;
    for (; e0 + VW <= hw; e0 += VW) {
        V m[VW];
#pragma unroll
        for (int i = 0; i < VW; ++i) m[i] = LDG(s + i * v.s[1] + e0);
        cv_transpose(m);
#pragma unroll
        for (int j = 0; j < VW; ++j) STL(dst + (emap ? emap[e0 + j] : (e0 + j) * VW), m[j]);
    }
    for (; e0 < hw; ++e0) {
        __local T *d = dst + (emap ? emap[e0] : e0 * VW);
        for (int l = 0; l < VW; ++l) d[l] = s[l * v.s[1] + e0];
    }
}

// Whether a view v5 holds its maps densely (rows of w elements one after the other).
INL bool cv_dense(v5_t v, long w) { return v.s[4] == 1 && v.s[3] == w; }

// Write the outputs ot[q*VW + l] (q < npix) of lanes [0, nl) to Y (view of (n, g, 0, oh, ow)).
INL void cv_put(__global T *Y, const conv_t p, __local const T *ot, long n, long g0, int nl) {
    const int npix = (int)(p.oh * p.ow);
    __global T *y0 = Y + p.y.off + n * p.y.s[0] + g0 * p.y.s[1];
    if (nl == VW && cv_dense(p.y, p.ow)) {
        int q0 = 0;
        for (; q0 + VW <= npix; q0 += VW) {
            V m[VW];
#pragma unroll
            for (int j = 0; j < VW; ++j) m[j] = LDL(ot + (q0 + j) * VW);
            cv_transpose(m);
#pragma unroll
            for (int l = 0; l < VW; ++l) STG(y0 + l * p.y.s[1] + q0, m[l]);
        }
        for (; q0 < npix; ++q0)
            for (int l = 0; l < VW; ++l) y0[l * p.y.s[1] + q0] = ot[q0 * VW + l];
        return;
    }
    for (int l = 0; l < nl; ++l) {
        __global T *y = y0 + l * p.y.s[1];
        for (int r = 0; r < p.oh; ++r) {
            __global T *yr = y + r * p.y.s[3];
            __local const T *s = ot + r * p.ow * VW + l;
            for (int j = 0; j < p.ow; ++j) yr[j * p.y.s[4]] = s[j * VW];
        }
    }
}

// emap[e] = window offset of input element e (row e / w, column e % w) of a dense map.
INL void cv_emap(__local int *emap, const conv_t p) {
    for (int y = 0; y < p.h; ++y)
        for (int x = 0; x < p.w; ++x)
            emap[y * p.w + x] = (int)(((y * p.uh + p.ph) * p.rp + x * p.uw + p.pw) * VW);
}

// Zero insertion (U > 1): the window holds the input every uh rows and uw columns, zeros
// between. Output pixels fall in uh*uw classes ((r - ph) mod uh, (j - pw) mod uw), each
// meeting the inserted zeros at the same taps: per class its pixels (window offset spo, output
// index sq) and the taps that meet input (offset lto, weight lix), so no zero is multiplied.
// ptab: cs[cls + 1] class starts, lc[cls] tap counts, spo[npix], sq[npix], lto[cls*kk],
// lix[cls*kk].
INL void cv_classes(__local int *ptab, __local const int *poff, __local const int *toff,
                    const conv_t p) {
    const int uh = (int)p.uh, uw = (int)p.uw, cls = uh * uw, kk = (int)(p.kh * p.kw);
    const int npix = (int)(p.oh * p.ow), ph = (int)p.ph, pw = (int)p.pw;
    __local int *cs = ptab, *lc = cs + cls + 1, *spo = lc + cls, *sq = spo + npix,
                *lto = sq + npix, *lix = lto + cls * kk;
    int i = 0;
    for (int c = 0; c < cls; ++c) {
        const int ar = c / uw, ac = c - (c / uw) * uw;
        cs[c] = i;
        for (int r = 0; r < p.oh; ++r) {
            if (((r - ph) % uh + uh) % uh != ar) continue;
            for (int j = 0; j < p.ow; ++j) {
                if (((j - pw) % uw + uw) % uw != ac) continue;
                spo[i] = poff[r * p.ow + j];
                sq[i++] = r * (int)p.ow + j;
            }
        }
        int m = 0;
        for (int kh = 0; kh < p.kh; ++kh) {
            if ((ar + kh * (int)p.dh) % uh) continue;
            for (int kw = 0; kw < p.kw; ++kw) {
                if ((ac + kw * (int)p.dw) % uw) continue;
                lto[c * kk + m] = toff[kh * p.kw + kw];
                lix[c * kk + m++] = (int)((kh * p.kw + kw) * VW);
            }
        }
        lc[c] = m;
    }
    cs[cls] = i;
}

// The outputs ot of one block by classes (cv_classes), four pixels at a time.
INL void cv_sparse(__local T *ot, __local const T *xt, __local const T *wl,
                   __local const int *ptab, V b, int npix, int kk, int cls) {
    __local const int *cs = ptab, *lc = cs + cls + 1, *spo = lc + cls, *sq = spo + npix,
                      *lto = sq + npix, *lix = lto + cls * kk;
    for (int c = 0; c < cls; ++c) {
        const int i1 = cs[c + 1], nt = lc[c];
        __local const int *lt = lto + c * kk, *li = lix + c * kk;
        int i = cs[c];
        for (; i + 4 <= i1; i += 4) {
            V a0 = b, a1 = b, a2 = b, a3 = b;
            __local const T *x0 = xt + spo[i], *x1 = xt + spo[i + 1], *x2 = xt + spo[i + 2],
                            *x3 = xt + spo[i + 3];
            for (int m = 0; m < nt; ++m) {
                const V w = LDL(wl + li[m]);
                const int o = lt[m];
                a0 += w * LDL(x0 + o);
                a1 += w * LDL(x1 + o);
                a2 += w * LDL(x2 + o);
                a3 += w * LDL(x3 + o);
            }
            STL(ot + sq[i] * VW, a0);
            STL(ot + sq[i + 1] * VW, a1);
            STL(ot + sq[i + 2] * VW, a2);
            STL(ot + sq[i + 3] * VW, a3);
        }
        for (; i < i1; ++i) {
            V a0 = b;
            __local const T *x0 = xt + spo[i];
            for (int m = 0; m < nt; ++m) a0 += LDL(wl + li[m]) * LDL(x0 + lt[m]);
            STL(ot + sq[i] * VW, a0);
        }
    }
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void dw_cv_fwd(const conv_t p, long blocks, __global const T *X, __global const T *K,
               __global T *Y, __global const T *B, __local T *xt, __local T *ot,
               __local T *wl, __local int *poff, __local int *toff, __local int *emap,
               __local int *ptab) {
    const int kk = (int)(p.kh * p.kw), npix = (int)(p.oh * p.ow), wp = (int)p.rp;
    const long nb = (p.g + VW - 1) / VW;
    const int cls = (int)(p.uh * p.uw);
    cv_setup(poff, toff, xt, p);
    if (cls > 1) cv_classes(ptab, poff, toff, p);
    CV_RANGE;
    const bool whole = ya == 0 && yb == p.h && xa == 0 && xb == p.w && cv_dense(p.x, p.w);
    if (whole) cv_emap(emap, p);
    const long b0 = get_group_id(0) * blocks, b1 = MIN(b0 + blocks, p.n * nb);
    long gb = b0 / p.n, n = b0 - gb * p.n;  // block index = gb * n + sample
    union { V v; T t[VW]; } bv;
    for (long blk = b0; blk < b1; ++blk) {
        const long g0 = gb * VW;
        const int nl = (int)MIN((long)VW, p.g - g0);
        if (whole && nl == VW)
            cv_stage_dense(xt, X, p.x, n, g0, (int)(p.h * p.w), emap);
        else
            cv_stage(xt, X, p.x, n, g0, nl, ya, yb, xa, xb, (int)p.ph, (int)p.pw, wp,
                     (int)p.uh, (int)p.uw);
        if (blk == b0 || n == 0) {  // the weights and bias of these channels, once per sweep
            for (int l = 0; l < nl; ++l) {
                __global const T *k = K + p.k.off + (g0 + l) * p.k.s[0];
                for (int kh = 0; kh < p.kh; ++kh)
                    for (int kw = 0; kw < p.kw; ++kw)
                        wl[(kh * p.kw + kw) * VW + l] = k[kh * p.k.s[3] + kw * p.k.s[4]];
            }
            for (int l = 0; l < VW; ++l)
                bv.t[l] = p.bias && l < nl ? B[p.boff + (g0 + l) * p.bs] : (T)0;
        }
        if (cls > 1) {
            cv_sparse(ot, xt, wl, ptab, bv.v, npix, kk, cls);
            cv_put(Y, p, ot, n, g0, nl);
            if (++n == p.n) {
                n = 0;
                ++gb;
            }
            continue;
        }
        int q = 0;
        for (; q + 4 <= npix; q += 4) {
            V a0 = bv.v, a1 = bv.v, a2 = bv.v, a3 = bv.v;
            __local const T *x0 = xt + poff[q], *x1 = xt + poff[q + 1],
                            *x2 = xt + poff[q + 2], *x3 = xt + poff[q + 3];
            for (int t = 0; t < kk; ++t) {
                const V w = LDL(wl + t * VW);
                const int o = toff[t];
                a0 += w * LDL(x0 + o);
                a1 += w * LDL(x1 + o);
                a2 += w * LDL(x2 + o);
                a3 += w * LDL(x3 + o);
            }
            STL(ot + q * VW, a0);
            STL(ot + (q + 1) * VW, a1);
            STL(ot + (q + 2) * VW, a2);
            STL(ot + (q + 3) * VW, a3);
        }
        for (; q < npix; ++q) {
            V a0 = bv.v;
            __local const T *x0 = xt + poff[q];
            for (int t = 0; t < kk; ++t) a0 += LDL(wl + t * VW) * LDL(x0 + toff[t]);
            STL(ot + q * VW, a0);
        }
        cv_put(Y, p, ot, n, g0, nl);
        if (++n == p.n) {
            n = 0;
            ++gb;
        }
    }
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void dw_cv_wgrad(const conv_t p, __global const T *X, __global const T *GO, v5_t gv,
                 __global T *ws, v5_t gwv, __global T *GB, __local T *xt, __local T *gt,
                 __local T *wacc, __local int *poff, __local int *toff, __local int *emap) {
    const int kk = (int)(p.kh * p.kw), npix = (int)(p.oh * p.ow), wp = (int)p.rp;
    const long sp = (long)get_group_id(1), n0 = sp * p.n / p.split, n1 = (sp + 1) * p.n / p.split;
    const long g0 = (long)get_group_id(0) * VW;
    const int nl = (int)MIN((long)VW, p.g - g0);
    cv_setup(poff, toff, xt, p);
    CV_RANGE;
    const bool whole = ya == 0 && yb == p.h && xa == 0 && xb == p.w && cv_dense(p.x, p.w)
                       && nl == VW;
    if (whole) cv_emap(emap, p);
    const bool gdense = nl == VW && cv_dense(gv, p.ow);
    for (int i = 0; i <= kk; ++i) STL(wacc + i * VW, (V)0);
    for (int i = 0; i < npix; ++i) STL(gt + i * VW, (V)0);
    for (long n = n0; n < n1; ++n) {
        if (whole)
            cv_stage_dense(xt, X, p.x, n, g0, (int)(p.h * p.w), emap);
        else
            cv_stage(xt, X, p.x, n, g0, nl, ya, yb, xa, xb, (int)p.ph, (int)p.pw, wp,
                     (int)p.uh, (int)p.uw);
        if (gdense)
            cv_stage_dense(gt, GO, gv, n, g0, npix, 0);
        else
            cv_stage(gt, GO, gv, n, g0, nl, 0, (int)p.oh, 0, (int)p.ow, 0, 0, (int)p.ow, 1, 1);
        V bs = (V)0;
        for (int q = 0; q < npix; ++q) bs += LDL(gt + q * VW);
        STL(wacc + kk * VW, LDL(wacc + kk * VW) + bs);
        // pixels in chunks whose output gradient and window rows stay in the L1 cache
        for (int c0 = 0; c0 < npix; c0 += CV_CHUNK) {
            const int c1 = MIN(c0 + CV_CHUNK, npix);
            for (int t0 = 0; t0 < kk; t0 += 4) {  // taps in fours sharing each gradient load
                const int o0 = toff[t0], o1 = toff[MIN(t0 + 1, kk - 1)],
                          o2 = toff[MIN(t0 + 2, kk - 1)], o3 = toff[MIN(t0 + 3, kk - 1)];
                V s0 = (V)0, s1 = (V)0, s2 = (V)0, s3 = (V)0;
                for (int q = c0; q < c1; ++q) {
                    const V gq = LDL(gt + q * VW);
                    __local const T *x = xt + poff[q];
                    s0 += gq * LDL(x + o0);
                    s1 += gq * LDL(x + o1);
                    s2 += gq * LDL(x + o2);
                    s3 += gq * LDL(x + o3);
                }
                STL(wacc + t0 * VW, LDL(wacc + t0 * VW) + s0);
                if (t0 + 1 < kk) STL(wacc + (t0 + 1) * VW, LDL(wacc + (t0 + 1) * VW) + s1);
                if (t0 + 2 < kk) STL(wacc + (t0 + 2) * VW, LDL(wacc + (t0 + 2) * VW) + s2);
                if (t0 + 3 < kk) STL(wacc + (t0 + 3) * VW, LDL(wacc + (t0 + 3) * VW) + s3);
            }
        }
    }
    for (int l = 0; l < nl; ++l) {
        const long g = g0 + l;
        if (p.split == 1) {
            for (int kh = 0; kh < p.kh; ++kh)
                for (int kw = 0; kw < p.kw; ++kw)
                    ws[gwv.off + g * gwv.s[0] + kh * gwv.s[3] + kw * gwv.s[4]] =
                        wacc[(kh * p.kw + kw) * VW + l];
            if (p.bias) GB[p.boff + g * p.bs] = wacc[kk * VW + l];
        } else {
            __global T *w = ws + (sp * p.g + g) * (kk + 1);
            for (int t = 0; t <= kk; ++t) w[t] = wacc[t * VW + l];
        }
    }
}
