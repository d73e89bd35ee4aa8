// kernels/conv_dw_cpu.cl — direct stencils for groups with few channels (depthwise: C/G == 1,
// channel multiplier O/G allowed), on the problem of conv.h: no GEMM; per (output, input)
// channel pair each tap is one scalar times a vector of the staged input window, vectors along
// output rows. The input gradient of a depthwise conv (O/G == 1 after the transpose) is the same
// forward kernel.
// Defines: T element type (IS_DOUBLE for double). Launch (local size 1 x 1 x 1):
//   dw_fwd:   (tiles, ceil(n*g / planes)); arg planes = (n, g) planes per work-group;
//             local xt[c*cp + sh*rp + 2*NR] (two output rows at a time may read one past).
//   dw_wgrad: (ceil(g / gpw), split); partial sums ws[split][g][o][K+1] as igemm_wgrad
//             (conv_igemm_cpu.cl),
//             summed by wgrad_reduce; local xt[c*cp], gt[o*th*tw], wacc[o*(c*kh*kw + 1)].
#include "conv.h"

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void dw_fwd(const conv_t p, long planes, __global const T *X, __global const T *K,
            __global T *Y, __global const T *B, __local T *xt) {
    long oh0, ow0;
    tile_origin(p, get_group_id(0), &oh0, &ow0);
    const int nrow = (int)MIN(p.th, p.oh - oh0), ncol = (int)MIN(p.tw, p.ow - ow0);
    const int nstrip = (ncol + NR - 1) / NR;
    const long pl0 = get_group_id(1) * planes, pl1 = MIN(pl0 + planes, p.n * p.g);
    const int rstep = (int)(p.sh * p.rp), dstep = (int)(p.dh * p.rp);
    for (long pl = pl0; pl < pl1; ++pl) {
        const long n = pl / p.g, g = pl % p.g;
        fill_window(xt, X, p.x.off + n * p.x.s[0] + g * p.x.s[1], (int)p.c, oh0, ow0, p);
        for (long o = 0; o < p.o; ++o) {
            const T b = p.bias ? B[p.boff + (g * p.o + o) * p.bs] : (T)0;
            __global const T *kw0 = K + p.k.off + g * p.k.s[0] + o * p.k.s[1];
            __global T *yo = Y + p.y.off + n * p.y.s[0] + g * p.y.s[1] + o * p.y.s[2]
                             + oh0 * p.y.s[3] + ow0 * p.y.s[4];
            for (int r = 0; r < nrow; r += 2) {
                const bool two = r + 1 < nrow;
                for (int s = 0; s < nstrip; ++s) {
                    V a0 = (V)b, a1 = (V)b, a2 = (V)b, a3 = (V)b;
                    for (int c = 0; c < p.c; ++c) {
                        __local const T *xc = xt + c * p.cp + r * rstep + s * NR;
                        for (int kh = 0; kh < p.kh; ++kh, xc += dstep) {
                            __global const T *kk = kw0 + c * p.k.s[2] + kh * p.k.s[3];
                            __local const T *xp = xc;
                            for (int kw = 0; kw < p.kw; ++kw, xp += p.kws) {
                                const T w = kk[kw * p.k.s[4]];
                                a0 += w * LDL(xp);
                                a1 += w * LDL(xp + VW);
                                a2 += w * LDL(xp + rstep);
                                a3 += w * LDL(xp + rstep + VW);
                            }
                        }
                    }
                    const int j0 = s * NR, nj = MIN(NR, ncol - j0);
                    for (int q = 0; q < (two ? 2 : 1); ++q) {
                        __global T *y = yo + (r + q) * p.y.s[3] + j0 * p.y.s[4];
                        V u0 = q ? a2 : a0, u1 = q ? a3 : a1;
                        put(y, u0, u1, nj, p.y.s[4]);
                    }
                }
            }
        }
    }
}

// Weight gradient of groups [g0, g0 + gpw) over the samples of one split: per sample and
// output tile, stage the input window (all c channels) and the output gradient (zero past the
// tile), then per (o, c, kh) and taps kw in threes, three vector accumulators along the output
// columns, summed into wacc at the end of the tile.
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void dw_wgrad(const conv_t p, long gpw, __global const T *X, __global const T *GO, v5_t gv,
              __global T *ws, __local T *xt, __local T *gt, __local T *wacc) {
    const long sp = (long)get_group_id(1), n0 = sp * p.n / p.split, n1 = (sp + 1) * p.n / p.split;
    const int khw = (int)(p.kh * p.kw), kall = (int)p.c * khw, tsz = (int)(p.th * p.tw);
    const long ntiles = ((p.oh + p.th - 1) / p.th) * p.ntw;
    const int rstep = (int)(p.sh * p.rp);
    const long g0 = (long)get_group_id(0) * gpw, g1 = MIN(g0 + gpw, p.g);
    for (long g = g0; g < g1; ++g) {
        for (int i = 0; i < p.o * (kall + 1); ++i) wacc[i] = (T)0;
        for (long n = n0; n < n1; ++n) {
            for (long t = 0; t < ntiles; ++t) {
                long oh0, ow0;
                tile_origin(p, t, &oh0, &ow0);
                const int nrow = (int)MIN(p.th, p.oh - oh0), ncol = (int)MIN(p.tw, p.ow - ow0);
                const int nvec = (ncol + VW - 1) / VW;
                for (int o = 0; o < p.o; ++o) {
                    for (int r = 0; r < nrow; ++r) {
                        __global const T *s = GO + gv.off + n * gv.s[0] + g * gv.s[1]
                                              + o * gv.s[2] + (oh0 + r) * gv.s[3]
                                              + ow0 * gv.s[4];
                        __local T *d = gt + o * tsz + r * (int)p.tw;
                        for (int j = 0; j < ncol; ++j) d[j] = s[j * gv.s[4]];
                        for (int j = ncol; j < p.tw; ++j) d[j] = (T)0;
                    }
                    V sum = (V)0;
                    for (int r = 0; r < nrow; ++r)
                        for (int v = 0; v < nvec; ++v) sum += LDL(gt + o * tsz + r * p.tw + v * VW);
                    wacc[o * (kall + 1) + kall] += hsum(sum);
                }
                fill_window(xt, X, p.x.off + n * p.x.s[0] + g * p.x.s[1], (int)p.c, oh0, ow0, p);
                for (int o = 0; o < p.o; ++o) {
                    for (int c = 0; c < p.c; ++c) {
                        for (int kh = 0; kh < p.kh; ++kh) {
                            for (int k0 = 0; k0 < p.kw; k0 += 3) {
                                const int o1 = (int)(MIN(k0 + 1, (int)p.kw - 1) * p.kws),
                                          o2 = (int)(MIN(k0 + 2, (int)p.kw - 1) * p.kws);
                                V s0 = (V)0, s1 = (V)0, s2 = (V)0;
                                for (int r = 0; r < nrow; ++r) {
                                    __local const T *xr = xt + c * p.cp
                                        + (r * p.sh + kh * p.dh) * p.rp + k0 * p.kws;
                                    __local const T *gp = gt + o * tsz + r * (int)p.tw;
                                    for (int v = 0; v < nvec; ++v, xr += VW, gp += VW) {
                                        V gq = LDL(gp);
                                        s0 += gq * LDL(xr);
                                        s1 += gq * LDL(xr + o1 - k0 * p.kws);
                                        s2 += gq * LDL(xr + o2 - k0 * p.kws);
                                    }
                                }
                                __local T *wa = wacc + o * (kall + 1) + (c * p.kh + kh) * p.kw;
                                wa[k0] += hsum(s0);
                                if (k0 + 1 < p.kw) wa[k0 + 1] += hsum(s1);
                                if (k0 + 2 < p.kw) wa[k0 + 2] += hsum(s2);
                            }
                        }
                    }
                }
            }
        }
        __global T *w = ws + (sp * p.g + g) * p.o * (kall + 1);
        for (int i = 0; i < p.o * (kall + 1); ++i) w[i] = wacc[i];
    }
}
