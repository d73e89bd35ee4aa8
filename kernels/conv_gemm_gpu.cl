// kernels/conv_gemm_gpu.cl — implicit GEMM for GPUs on the problem of conv.h: work-groups of
// (TS/WPT)^2 work items compute TS x TS tiles with WPT x WPT outputs each, operands staged
// through local memory TK deep; the im2col matrix is gathered on the fly, never stored.
// Defines: T; TS tile, WPT outputs per work item per axis, TK depth (the host passes
// TS=64, WPT=4, TK=16). Launch: local (TS/WPT, TS/WPT, 1);
//   gemm_fwd:   global (ceil(n*oh*ow / TS)*RTS, ceil(o / TS)*RTS, g). Per group, rows are
//               output channels, columns the pixels (n, oh, ow) of the whole batch.
//   gemm_wgrad: global (ceil((K+1) / TS)*RTS, ceil(o / TS)*RTS, g*split); rows are output
//               channels, columns the taps k = (c, kh, kw) and one column of ones (k == K:
//               the bias gradient), the reduction runs over (n, oh, ow) of split sp; partial
//               sums ws[sp][g][o][K+1] for wgrad_reduce (conv_igemm_cpu.cl).
#include "conv.h"

#define RTS (TS / WPT)

// Tap k = (c, kh, kw): its channel, and kh, kw.
INL void tap(long k, const conv_t p, long *c, long *kh, long *kw) {
    long r = k % (p.kh * p.kw);
    *c = k / (p.kh * p.kw);
    *kh = r / p.kw;
    *kw = r % p.kw;
}

__kernel __attribute__((reqd_work_group_size(RTS, RTS, 1)))
void gemm_fwd(const conv_t p, __global const T *X, __global const T *K, __global T *Y,
              __global const T *B) {
    const int tx = get_local_id(0), ty = get_local_id(1), lin = ty * RTS + tx;
    const long g = get_group_id(2), col0 = (long)get_group_id(0) * TS;
    const long row0 = (long)get_group_id(1) * TS, npix = p.n * p.oh * p.ow;
    const long kall = p.c * p.kh * p.kw;
    __local T As[TK][TS + 1], Bs[TK][TS + 1];
    __local long koff[TK], kcol[TK], kdy[TK], kdx[TK];
    // the column (pixel) this work item stages, fixed for the whole reduction
    const int bj = lin % TS;
    const long q = col0 + bj, qn = q / (p.oh * p.ow), qr = q % (p.oh * p.ow);
    const long y0 = (qr / p.ow) * p.sh - p.ph, x0 = (qr % p.ow) * p.sw - p.pw;
    const long xb = p.x.off + qn * p.x.s[0] + g * p.x.s[1];
    T acc[WPT][WPT];
    for (int i = 0; i < WPT; ++i)
        for (int j = 0; j < WPT; ++j) acc[i][j] = (T)0;
    for (long k0 = 0; k0 < kall; k0 += TK) {
        if (lin < TK) {
            long c, kh, kw;
            tap(MIN(k0 + lin, kall - 1), p, &c, &kh, &kw);
            koff[lin] = c * p.k.s[2] + kh * p.k.s[3] + kw * p.k.s[4];
            kcol[lin] = c;
            kdy[lin] = kh * p.dh;
            kdx[lin] = kw * p.dw;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int e = lin; e < TS * TK; e += RTS * RTS) {
            int mm = e / TK, kk = e % TK;
            long m = row0 + mm;
            As[kk][mm] = (m < p.o && k0 + kk < kall)
                ? K[p.k.off + g * p.k.s[0] + m * p.k.s[1] + koff[kk]] : (T)0;
        }
        for (int kk = lin / TS; kk < TK; kk += RTS * RTS / TS) {
            T v = (T)0;
            if (q < npix && k0 + kk < kall)
                v = xv(X, xb + kcol[kk] * p.x.s[2], y0 + kdy[kk], x0 + kdx[kk], p);
            Bs[kk][bj] = v;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < TK; ++kk) {
            T a[WPT], b[WPT];
            for (int w = 0; w < WPT; ++w) {
                a[w] = As[kk][ty + w * RTS];
                b[w] = Bs[kk][tx + w * RTS];
            }
            for (int i = 0; i < WPT; ++i)
                for (int j = 0; j < WPT; ++j) acc[i][j] += a[i] * b[j];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int j = 0; j < WPT; ++j) {
        const long qq = col0 + tx + j * RTS;
        if (qq >= npix) continue;
        const long n = qq / (p.oh * p.ow), rr = qq % (p.oh * p.ow);
        const long yb = p.y.off + n * p.y.s[0] + g * p.y.s[1] + (rr / p.ow) * p.y.s[3]
                        + (rr % p.ow) * p.y.s[4];
        for (int i = 0; i < WPT; ++i) {
            const long m = row0 + ty + i * RTS;
            if (m >= p.o) continue;
            T b = p.bias ? B[p.boff + (g * p.o + m) * p.bs] : (T)0;
            Y[yb + m * p.y.s[2]] = acc[i][j] + b;
        }
    }
}

__kernel __attribute__((reqd_work_group_size(RTS, RTS, 1)))
void gemm_wgrad(const conv_t p, __global const T *X, __global const T *GO, v5_t gv,
                __global T *ws) {
    const int tx = get_local_id(0), ty = get_local_id(1), lin = ty * RTS + tx;
    const long g = get_group_id(2) % p.g, sp = get_group_id(2) / p.g;
    const long col0 = (long)get_group_id(0) * TS, row0 = (long)get_group_id(1) * TS;
    const long kall = p.c * p.kh * p.kw, P = p.oh * p.ow;
    const long r0 = sp * p.n * P / p.split, r1 = (sp + 1) * p.n * P / p.split;
    __local T As[TK][TS + 1], Bs[TK][TS + 1];
    __local long gofs[TK], xofs[TK], ry[TK], rx[TK];
    // the column (tap) this work item stages
    const int bj = lin % TS;
    const long kq = col0 + bj;
    long c, dy, dx;
    tap(MIN(kq, kall - 1), p, &c, &dy, &dx);
    dy *= p.dh;
    dx *= p.dw;
    T acc[WPT][WPT];
    for (int i = 0; i < WPT; ++i)
        for (int j = 0; j < WPT; ++j) acc[i][j] = (T)0;
    for (long t0 = r0; t0 < r1; t0 += TK) {
        if (lin < TK) {
            long r = MIN(t0 + lin, r1 - 1), n = r / P, pr = r % P;
            long oh = pr / p.ow, ow = pr % p.ow;
            gofs[lin] = gv.off + n * gv.s[0] + g * gv.s[1] + oh * gv.s[3] + ow * gv.s[4];
            xofs[lin] = p.x.off + n * p.x.s[0] + g * p.x.s[1];
            ry[lin] = oh * p.sh - p.ph;
            rx[lin] = ow * p.sw - p.pw;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int e = lin; e < TS * TK; e += RTS * RTS) {
            int mm = e / TK, kk = e % TK;
            long m = row0 + mm;
            As[kk][mm] = (m < p.o && t0 + kk < r1) ? GO[gofs[kk] + m * gv.s[2]] : (T)0;
        }
        for (int kk = lin / TS; kk < TK; kk += RTS * RTS / TS) {
            T v = (T)0;
            if (t0 + kk < r1) {
                if (kq == kall) v = (T)1;
                else if (kq < kall)
                    v = xv(X, xofs[kk] + c * p.x.s[2], ry[kk] + dy, rx[kk] + dx, p);
            }
            Bs[kk][bj] = v;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < TK; ++kk) {
            T a[WPT], b[WPT];
            for (int w = 0; w < WPT; ++w) {
                a[w] = As[kk][ty + w * RTS];
                b[w] = Bs[kk][tx + w * RTS];
            }
            for (int i = 0; i < WPT; ++i)
                for (int j = 0; j < WPT; ++j) acc[i][j] += a[i] * b[j];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    __global T *w = ws + (sp * p.g + g) * p.o * (kall + 1);
    for (int i = 0; i < WPT; ++i) {
        const long m = row0 + ty + i * RTS;
        if (m >= p.o) continue;
        for (int j = 0; j < WPT; ++j) {
            const long k = col0 + tx + j * RTS;
            if (k <= kall) w[m * (kall + 1) + k] = acc[i][j];
        }
    }
}
