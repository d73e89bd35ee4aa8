// kernels/conv_dw_gpu.cl — depthwise-style convolution for GPUs (few channels per group: the
// planner in clgrad/ops/conv_gpu.py takes C/G * O/G small), on the problem of conv.h. Many
// work items, no local-memory staging: neighbouring work items read overlapping input rows,
// which the caches serve; each work item keeps its taps, an input row segment and its outputs
// in registers. The input gradient of a depthwise conv (O/G == 1 after the transpose, see
// conv.h) is the same forward kernel on the flipped weight view.
// Defines: T element type (ACC, the registers' type, float where T is half: defines_of gives
// it; the halves are read, summed in float and rounded once at the store, the float32
// kernel's arithmetic on values that float32 holds exactly, so a float16 result equals the
// float32 kernel's on float32 copies rounded to half; the weight gradient's partial sums ws
// and the local tree are ACC); KH, KW, SH, SW, DH, DW, UH, UW: kernel, stride, dilation and
// insertion of the problem (fully unrolled); VX, VY: outputs per work item along W and H;
// wgrad also CG (= p.c: input channels per group) and WG (work-group size, a power of two).
// Launch:
//   dwg_fwd:   (ceil(oh/VY)*ceil(ow/VX)*g*o rounded up to the local size, n, 1); any local
//              size. Work item i takes output tile i % tiles of plane (g, o) = i / tiles: the
//              planes of small maps share work-groups (one plane per group left 15 of 16
//              work items idle on 8 x 8 maps).
//   dwg_wgrad: (WG, g*o, split), local (WG, 1, 1); partial sums ws[split][g][o][K+1]
//              (K = c*kh*kw, column K the bias gradient), as igemm_wgrad (conv_igemm_cpu.cl),
//              summed by wgrad_reduce; split s covers rows [s*R/split, (s+1)*R/split) of the
//              R = n*oh output rows. local red[WG].
#include "conv.h"

#ifndef ACC
#define ACC T
#endif

#define NCX ((VX - 1) * SW + (KW - 1) * DW + 1)  // input columns a work item reads per row
#define NRY ((VY - 1) * SH + (KH - 1) * DH + 1)  // input rows it reads (forward)

// Index arithmetic: offsets inside one (n, g, c) plane of a view are IT (int when the host
// found every plane's extent below 2^31: I32), plane bases are pointers; XS1/YS1/GS1 say that
// X's/Y's/GO's columns are contiguous, so a row's loads take immediate offsets. 64-bit
// multiplies and divisions are kept out of the per-output path: at one work item per output
// they made the kernel instruction-bound at ~450 GB/s on an H200.
#ifdef I32
typedef int IT;
#else
typedef long IT;
#endif
#ifdef XS1
#define XCOL(col) ((IT)(col))
#else
#define XCOL(col) ((IT)(col) * (IT)p.x.s[4])
#endif

// Input column (virtual, with inserted zeros) j of a work item whose first output column is
// ox0: its offset within the row (cols[j]) and whether it is inside (ok[j]).
INL void columns(const conv_t p, int ox0, IT *cols, bool *ok) {
#pragma unroll
    for (int j = 0; j < NCX; ++j) {
        const int x = ox0 * SW - (int)p.pw + j;
        ok[j] = x >= 0 && x % UW == 0 && x / UW < (int)p.w;
        cols[j] = XCOL(x / UW);
    }
}

// Virtual input row y: whether it is inside (not padding, not an inserted zero) and its
// offset within a plane.
INL bool row_ok(const conv_t p, int y) { return y >= 0 && y % UH == 0 && y / UH < (int)p.h; }
INL IT row_off(const conv_t p, int y) { return row_ok(p, y) ? (IT)(y / UH) * (IT)p.x.s[3] : 0; }

__kernel void dwg_fwd(const conv_t p, __global const T *X, __global const T *K, __global T *Y,
                      __global const T *B) {
    const int nwx = ((int)p.ow + VX - 1) / VX, items = nwx * (((int)p.oh + VY - 1) / VY);
    const long gi = get_global_id(0);
    if (gi >= (long)items * p.g * p.o) return;  // no barrier in this kernel
    const int go = (int)(gi / items), i = (int)(gi - (long)go * items);
    const int by = i / nwx, oy0 = by * VY, ox0 = (i - by * nwx) * VX;
    const int g = go / (int)p.o, o = go - g * (int)p.o;
    const long n = get_global_id(1);
    const ACC b = p.bias ? (ACC)B[p.boff + go * p.bs] : (ACC)0;
    ACC acc[VY][VX];
#pragma unroll
    for (int q = 0; q < VY; ++q)
#pragma unroll
        for (int j = 0; j < VX; ++j) acc[q][j] = b;
    IT cols[NCX];
    bool ok[NCX];
    columns(p, ox0, cols, ok);
    IT rows[NRY];
    bool rok[NRY];
#pragma unroll
    for (int r = 0; r < NRY; ++r) {
        rows[r] = row_off(p, oy0 * SH - (int)p.ph + r);
        rok[r] = row_ok(p, oy0 * SH - (int)p.ph + r);
    }
    __global const T *xn = X + p.x.off + n * p.x.s[0] + g * p.x.s[1];
    __global const T *kn = K + p.k.off + g * p.k.s[0] + o * p.k.s[1];
    for (int c = 0; c < (int)p.c; ++c) {
        __global const T *xc = xn + c * p.x.s[2], *kc = kn + c * p.k.s[2];
        ACC w[KH][KW];
#pragma unroll
        for (int kh = 0; kh < KH; ++kh)
#pragma unroll
            for (int kw = 0; kw < KW; ++kw)
                w[kh][kw] = (ACC)kc[kh * (IT)p.k.s[3] + kw * (IT)p.k.s[4]];
#pragma unroll
        for (int r = 0; r < NRY; ++r) {
            bool used = false;  // does any (output row q, tap kh) read input row r? (constant)
#pragma unroll
            for (int q = 0; q < VY; ++q)
#pragma unroll
                for (int kh = 0; kh < KH; ++kh) used = used || q * SH + kh * DH == r;
            if (!used) continue;
            __global const T *xr = xc + rows[r];
            ACC v[NCX];
#pragma unroll
            for (int j = 0; j < NCX; ++j) v[j] = (rok[r] && ok[j]) ? (ACC)xr[cols[j]] : (ACC)0;
#pragma unroll
            for (int q = 0; q < VY; ++q)
#pragma unroll
                for (int kh = 0; kh < KH; ++kh) {
                    if (q * SH + kh * DH != r) continue;
#pragma unroll
                    for (int kw = 0; kw < KW; ++kw)
#pragma unroll
                        for (int j = 0; j < VX; ++j)
                            acc[q][j] += w[kh][kw] * v[j * SW + kw * DW];
                }
        }
    }
    __global T *yp = Y + p.y.off + n * p.y.s[0] + g * p.y.s[1] + o * p.y.s[2];
#ifdef YS1
    const IT ys4 = 1;
#else
    const IT ys4 = (IT)p.y.s[4];
#endif
#pragma unroll
    for (int q = 0; q < VY; ++q)
#pragma unroll
        for (int j = 0; j < VX; ++j)
            if (oy0 + q < (int)p.oh && ox0 + j < (int)p.ow)
                yp[(oy0 + q) * (IT)p.y.s[3] + (ox0 + j) * ys4] = (T)acc[q][j];
}

#ifdef CG
#define NT (CG * KH * KW)  // weight taps of one (g, o); the bias gradient is tap NT

// Weight and bias gradient, stage one: a work-group sums, for one (g, o), the products of the
// output gradient and the input window over its split's rows, each work item over VX outputs
// at a time in registers; then a tree in local memory reduces the work items' sums.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void dwg_wgrad(const conv_t p, __global const T *X, __global const T *GO, v5_t gv,
               __global ACC *ws, __local ACC *red) {
    const int lid = (int)get_local_id(0);
    const int go = (int)get_group_id(1), g = go / (int)p.o, o = go - g * (int)p.o;
    const long sp = get_group_id(2);
    const int nwx = ((int)p.ow + VX - 1) / VX, oh = (int)p.oh;
    const long nrows = p.n * p.oh, r0 = sp * nrows / p.split, r1 = (sp + 1) * nrows / p.split;
#ifdef GS1
    const IT gs4 = 1;
#else
    const IT gs4 = (IT)gv.s[4];
#endif
    ACC acc[NT + 1];
#pragma unroll
    for (int t = 0; t <= NT; ++t) acc[t] = (ACC)0;
    // work item lid takes column block lid % cstep of rows r0 + lid / cstep, stepping `per`
    // rows (a row of column blocks per step when nwx > WG)
    const int per = MAX(1, WG / nwx), cstep = nwx > WG ? WG : nwx;
    if (lid < per * cstep) {
        long rr = r0 + lid / cstep, n = rr / oh;
        int oy = (int)(rr - n * oh);
        __global const T *gn = GO + gv.off + n * gv.s[0] + g * gv.s[1] + o * gv.s[2];
        __global const T *xn = X + p.x.off + n * p.x.s[0] + g * p.x.s[1];
        for (; rr < r1; rr += per) {
            __global const T *gp = gn + oy * (IT)gv.s[3];
            IT rows[KH];
            bool rok[KH];
#pragma unroll
            for (int kh = 0; kh < KH; ++kh) {
                rows[kh] = row_off(p, oy * SH - (int)p.ph + kh * DH);
                rok[kh] = row_ok(p, oy * SH - (int)p.ph + kh * DH);
            }
            for (int wx = lid % cstep; wx < nwx; wx += cstep) {
                const int ox0 = wx * VX;
                ACC gq[VX];
#pragma unroll
                for (int j = 0; j < VX; ++j) {
                    gq[j] = ox0 + j < (int)p.ow ? (ACC)gp[(ox0 + j) * gs4] : (ACC)0;
                    acc[NT] += gq[j];
                }
                IT cols[NCX];
                bool ok[NCX];
                columns(p, ox0, cols, ok);
#pragma unroll
                for (int c = 0; c < CG; ++c) {
                    __global const T *xc = xn + c * p.x.s[2];
#pragma unroll
                    for (int kh = 0; kh < KH; ++kh) {
                        __global const T *xr = xc + rows[kh];
                        ACC v[NCX];
#pragma unroll
                        for (int j = 0; j < NCX; ++j)
                            v[j] = (rok[kh] && ok[j]) ? (ACC)xr[cols[j]] : (ACC)0;
#pragma unroll
                        for (int kw = 0; kw < KW; ++kw)
#pragma unroll
                            for (int j = 0; j < VX; ++j)
                                acc[(c * KH + kh) * KW + kw] += gq[j] * v[j * SW + kw * DW];
                    }
                }
            }
            oy += per;  // next row: per < oh mostly, so this loop runs once or not at all
            while (oy >= oh) {
                oy -= oh;
                gn += gv.s[0];
                xn += p.x.s[0];
            }
        }
    }
    __global ACC *dst = ws + (sp * p.g * p.o + go) * (NT + 1);
#pragma unroll
    for (int t = 0; t <= NT; ++t) {
        red[lid] = acc[t];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int s = WG / 2; s > 0; s >>= 1) {
            if (lid < s) red[lid] += red[lid + s];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (lid == 0) dst[t] = red[0];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
#endif
