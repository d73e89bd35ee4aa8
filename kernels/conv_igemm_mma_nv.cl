// kernels/conv_igemm_mma_nv.cl — float16 implicit-GEMM convolution on NVIDIA's tensor cores
// (inline PTX: mma.sync m16n8k16, cp.async, ldmatrix; built where clgrad/ops/conv/mma.py's
// available() found it matching NumPy), on the problem of conv.h: per group g, Y[g] (o x
// pixels) = K[g] (o x K) @ col[g] (K x pixels), K = c*kh*kw taps in (c, kh, kw) order, pixels
// the (n, oh, ow) of the whole batch; the im2col matrix is gathered on the fly, never stored.
// Forward, and the input gradient as the forward problem with zero insertion (U > 1) on a
// copy of the flipped, transposed weight (clgrad/ops/conv/mma.py).
//
// Precision: X and K float16 (read as bits), products exact, summed in float32 by the tensor
// cores; the bias added in float32 and Y rounded to float16 once (vstore_half: to nearest
// even): im2col's float16 GEMMs (matmul_mma_async_nv.cl) sum the same way.
//
// Operands: the weight rows (o) are read by cp.async in 16-byte chunks (STAGES tiles in
// flight), so its taps are contiguous (unit stride along k), and its row stride, group stride
// and offset are multiples of 8 halves (the host copies any other view); a chunk past K reads
// only the taps before K and zero-fills the rest (cp.async's src-size). The window (B: K x
// pixels) is gathered through registers: work item tid stages pixel column tid % BN and taps
// tid / BN + l * GSTEP of each BK-deep tile (the (c, kh, kw) digits walk by GSTEP, no
// division in the loop), loaded while the tensor cores multiply the current tile and stored
// to local memory after it; zero where a tap falls in the padding, on an inserted zero or past
// K. Local tiles and fragment reads: matmul_mma_async_nv.cl's ([row][k] swizzled for the
// weight, read by ldmatrix; [k][pixel] swizzled for the window, read by ldmatrix.trans).
// Tiling: WARPS_M x WARPS_N warps, each (MT * 16) x (NT * 8) outputs; BK = 32 taps a tile.
// Where C (the channels a group) is a multiple of 8, on an NHWC copy of X made by to_nhwc,
// both tiles by cp.async, the taps in (kh, kw, c) order: the forward problem in the build
// with NHWC defined (igemm_mma_fwd_nhwc, at the end; that build has no weight gradient), the
// weight gradient in the other (igemm_mma_wgrad_nhwc).
// Defines: T (half), KH KW SH SW DH DW UH UW, WARPS_M WARPS_N MT NT STAGES WAIT (STAGES - 2),
// I32 (offsets in one (n, g) slab of X fit an int), P32 (n*oh*ow + BN fits an int),
// SMEM_CVTA (as matmul_mma_async_nv.cl), MMA_EMULATE (mma_async_nv.h: no PTX, the tests), NHWC.
// Launch igemm_mma_fwd: global (ceil(n*oh*ow / BN) * NTHR, ceil(o / BM), g), local (NTHR, 1, 1).
#include "conv.h"

typedef ushort TIN;
#define EV 8          // halves a 16-byte chunk
#define ES 2          // bytes a half
#define KSTEP 16      // an mma's depth
#define TF32_ROUND(x)
#define MMA_F16 1
#include "mma_nv.h"

#define NTHR (WARPS_M * WARPS_N * 32)
#define BM (WARPS_M * MT * 16)
#define BN (WARPS_N * NT * 8)
#define BK 32
#define A_KR 0        // the weight tile kept [row][k]
#ifdef NHWC
#define B_KR 0        // the window tile kept [pixel][k]: a tap's channels contiguous in NHWC
#else
#define B_KR 1        // the window tile kept [k][pixel]
#endif
#define A_SZ (BM * BK)
#define B_SZ (BN * BK)
#define STAGE_SZ (A_SZ + B_SZ)
#define SMEM smem     // (mma_async_nv.h's emulation reads the kernel's local array by name)
#include "mma_async_nv.h"

#define KHW (KH * KW)
#define GSTEP (NTHR / BN)        // taps between a work item's staged elements of one tile
#define LB (BK / GSTEP)          // window elements a work item stages per tile
#define LA (BM * BK / EV / NTHR) // weight chunks a work item copies per tile
#if BM < 64 || BN < 64 || (NT % 2) || NTHR % BN || BK % GSTEP || (BM * BK / EV) % NTHR || \
    STAGES < 2
#error "igemm_mma: BM, BN >= 64, NT even, NTHR a multiple of BN, whole chunks per item"
#endif
// GSTEP as (c, kh, kw) digits: one carry at most per digit and step
#define GC (GSTEP / KHW)
#define GH ((GSTEP % KHW) / KW)
#define GW (GSTEP % KW)
#ifdef I32
typedef int IT;
#else
typedef long IT;
#endif

// What both kernels start with: the shared address of their local array, the work item,
// its lane (g8, t4: mma's fragment row and column pair), its warp's rows wm and columns wn of
// the work-group's tile, and its ldmatrix rows and depths (a_r, a_k, b_r, b_k)
#define WARP_SETUP(smem)                                                                       \
    const uint sbase = smem_addr(smem);                                                        \
    const int tid = get_local_id(0);                                                           \
    const uint lane = lane_of(tid), g8 = lane >> 2, t4 = lane & 3;                             \
    const int warp = tid >> 5, wm = (warp / WARPS_N) * (MT * 16),                              \
              wn = (warp % WARPS_N) * (NT * 8);                                                \
    A_LANE(lane, a_r, a_k);                                                                    \
    B_LANE(lane, b_r, b_k)

// Copy the weight tile of rows bm.., taps k0.. (row r at A[r * lda], taps contiguous) into the
// local [row][k] tile at shared address s: LA chunks of 8 taps per work item.
INL void copy_w(__local ushort *smem, uint s, __global const TIN *A, long lda, int M, int K,
                int bm, int k0, int tid) {
#pragma unroll
    for (int e = 0; e < LA; ++e) {
        const int v = tid + e * NTHR, rr = v / (BK / EV), cc = (v % (BK / EV)) * EV;
        const int k = k0 + cc, left = K - k;
        const bool in = bm + rr < M && left > 0;
        CP_ASYNC16(s + ES * IDX_RK(rr, cc), in ? A + (bm + rr) * lda + k : A,
                   in ? (left >= EV ? 16 : 2 * left) : 0);
    }
}

// Y (p.y) = acc + the bias, rounded to float16 once, for the work-group's tile at (bm, bn)
// and the warp's at (wm, wn): accumulator q of mma tile (i, j) is row g8 (+8 for q >= 2),
// column 2 t4 (+1 for odd q)
INL void store_y(const conv_t p, __global half *Y, __global const half *Bias,
                 float acc[MT][NT][4], long grp, long bn, int bm, int wm, int wn, uint g8,
                 uint t4) {
    const long plane = p.oh * p.ow, npix = p.n * plane;
    long yo[NT][2];
    bool yin[NT][2];
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const long c = bn + wn + j * 8 + 2 * t4 + e;
            PIXEL_OF(c, plane, p.ow, n, oy, ox);
            yin[j][e] = c < npix;
            yo[j][e] = p.y.off + n * p.y.s[0] + grp * p.y.s[1] + oy * p.y.s[3] + ox * p.y.s[4];
        }
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int m = bm + wm + i * 16 + g8 + h * 8;
            if (m >= (int)p.o) continue;
            const float b = p.bias ? vload_half(p.boff + (grp * p.o + m) * p.bs, Bias) : 0.0f;
            const long mo = m * p.y.s[2];
#pragma unroll
            for (int j = 0; j < NT; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e)
                    if (yin[j][e]) vstore_half(acc[i][j][2 * h + e] + b, yo[j][e] + mo, Y);
        }
}

// The cp.async pipeline of the NHWC kernels, whose tiles both come in by cp.async: tiles
// 0 .. ntiles - 1 multiplied into acc with STAGES - 1 tiles in flight; COPY(st, t) issues
// tile t's copies into stage st. Tile kt is read from stage rd while tile kt + STAGES - 1 is
// written to stage wr (its last readers, tile kt - 1's, are done by the barrier before).
#define CP_PIPELINE(ntiles, COPY, acc)                                                         \
    {                                                                                          \
        _Pragma("unroll") for (int s_ = 0; s_ < STAGES - 1; ++s_) {                            \
            if (s_ < (ntiles)) COPY(s_, s_);                                                   \
            cp_commit();                                                                       \
        }                                                                                      \
        int rd_ = 0, wr_ = STAGES - 1;                                                         \
        for (int kt_ = 0; kt_ < (ntiles); ++kt_) {                                             \
            cp_wait();                     /* this work item's copies of tile kt_ are in */    \
            barrier(CLK_LOCAL_MEM_FENCE);  /* everyone's; tile kt_ - 1 was read */             \
            if (kt_ + STAGES - 1 < (ntiles)) COPY(wr_, kt_ + STAGES - 1);                      \
            cp_commit();                                                                       \
            const uint sa_ = sbase + ES * rd_ * STAGE_SZ, sb_ = sa_ + ES * A_SZ;               \
            MMA_TILE(sa_, sb_, wm, wn, a_r, a_k, b_r, b_k, acc)                                \
            rd_ = rd_ == STAGES - 1 ? 0 : rd_ + 1;                                             \
            wr_ = wr_ == STAGES - 1 ? 0 : wr_ + 1;                                             \
        }                                                                                      \
        cp_wait_all();                                                                         \
    }

// Xh (NHWC, contiguous: (n, h, w, g * c)) = X (conv.h's view p.x: n, g, c, h, w) through a
// local tile of 32 channels x 32 pixels of a sample, so that both the reads (along the
// pixels) and the writes (along the channels) of a warp are 32 neighbours; h * w and g * c
// fit an int (32-bit divisions: a 64-bit one costs ~70 instructions on GPUs).
// Launch to_nhwc: global (ceil(h * w / 32) * 32, ceil(g * c / 32) * 8, n), local (32, 8, 1).
__kernel __attribute__((reqd_work_group_size(32, 8, 1)))
void to_nhwc(const conv_t p, __global const TIN *X, __global TIN *Xh) {
    __local TIN t[32][33];
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int hw = (int)(p.h * p.w), gc = (int)(p.g * p.c), C = (int)p.c, W = (int)p.w;
    const int p0 = get_group_id(0) * 32, c0 = get_group_id(1) * 32;
    const long n = get_group_id(2);
    const int px = p0 + lx, y = px / W;  // this work item's pixel of the reads
    __global const TIN *xs = X + p.x.off + n * p.x.s[0] + y * p.x.s[3] + (px - y * W) * p.x.s[4];
    if (px < hw) {
        for (int r = ly; r < 32 && c0 + r < gc; r += 8) {
            const int ch = c0 + r, g = ch / C;
            t[r][lx] = xs[g * p.x.s[1] + (ch - g * C) * p.x.s[2]];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (c0 + lx < gc) {
        __global TIN *o = Xh + (n * hw + p0) * gc + c0 + lx;
        for (int r = ly; r < 32 && p0 + r < hw; r += 8) o[(long)r * gc] = t[lx][r];
    }
}

// to_nhwc where X's (h, w) planes are contiguous and come in 16-byte chunks (h * w, the
// offset and the sample, group and channel strides multiples of 8 halves; C a multiple of
// 8): a work item moves 8 channels x 8 pixels through its registers, 16-byte loads along the
// pixels and 16-byte stores along the channels, no local memory. A warp (8 x 4 items) reads
// 128 contiguous bytes of a channel and writes 64 of a pixel: whole 32-byte sectors.
// Launch to_nhwc8: global (ceil(n * h * w / 64) * 8, ceil(g * c / 64) * 8, 1), local (8, 8, 1).
#define TCOL(j) as_uint4((ushort8)(a0.s##j, a1.s##j, a2.s##j, a3.s##j, \
                                   a4.s##j, a5.s##j, a6.s##j, a7.s##j))
__kernel __attribute__((reqd_work_group_size(8, 8, 1)))
void to_nhwc8(const conv_t p, __global const TIN *X, __global TIN *Xh) {
    const long hw8 = p.h * p.w / 8, q = get_global_id(0);  // q: the batch's 8-pixel block
    const int cb = (int)get_global_id(1), gc = (int)(p.g * p.c);
    if (q >= p.n * hw8 || cb * 8 >= gc) return;
    const long n = q / hw8;
    const int ch = cb * 8, g = ch / (int)p.c;
    const long cs = p.x.s[2];
    __global const TIN *xs = X + p.x.off + n * p.x.s[0] + g * p.x.s[1] + (ch - g * p.c) * cs
                             + (q - n * hw8) * 8;
#define LD(k) as_ushort8(*(__global const uint4 *)(xs + (k) * cs))
    const ushort8 a0 = LD(0), a1 = LD(1), a2 = LD(2), a3 = LD(3),
                  a4 = LD(4), a5 = LD(5), a6 = LD(6), a7 = LD(7);
#undef LD
    __global uint4 *o = (__global uint4 *)(Xh + q * 8 * gc + ch);
    const int os = gc / 8;  // a pixel's stride in chunks
    o[0] = TCOL(0); o[os] = TCOL(1); o[2 * os] = TCOL(2); o[3 * os] = TCOL(3);
    o[4 * os] = TCOL(4); o[5 * os] = TCOL(5); o[6 * os] = TCOL(6); o[7 * os] = TCOL(7);
}
#undef TCOL

#ifndef NHWC
// The window: this work item's LB taps of the next tile at its pixel (y0, x0: the window's
// origin in Xv's rows and columns; xq: its sample and group in X), the digits (c, kh, kw) of
// its first tap walked by GSTEP per element (so by BK per tile).
INL void gather(TIN rb[LB], __global const TIN *xq, bool qok, int y0, int x0, const conv_t p,
                int *c, int *kh, int *kw) {
    const IT cs = (IT)p.x.s[2], hs = (IT)p.x.s[3], ws = (IT)p.x.s[4];
#pragma unroll
    for (int l = 0; l < LB; ++l) {
        const int y = y0 + *kh * DH, x = x0 + *kw * DW;
        const bool ok = qok && *c < (int)p.c && y >= 0 && x >= 0 && y % UH == 0 &&
                        x % UW == 0 && y / UH < (int)p.h && x / UW < (int)p.w;
        rb[l] = ok ? xq[*c * cs + (y / UH) * hs + (x / UW) * ws] : (TIN)0;
        int w2 = *kw + GW, cy = w2 >= KW;
        *kw = cy ? w2 - KW : w2;
        int h2 = *kh + GH + cy;
        cy = h2 >= KH;
        *kh = cy ? h2 - KH : h2;
        *c += GC + cy;
    }
}

INL void store_window(__local ushort *smem, int stage, const TIN rb[LB], int jc, int kb) {
    __local ushort *bs = smem + stage * STAGE_SZ + A_SZ;
#pragma unroll
    for (int l = 0; l < LB; ++l) bs[IDX_KR(BN, kb + l * GSTEP, jc)] = rb[l];
}

__kernel __attribute__((reqd_work_group_size(NTHR, 1, 1)))
void igemm_mma_fwd(const conv_t p, __global const TIN *X, __global const TIN *Kw,
                   __global half *Y, __global const half *Bias) {
    __local ushort smem[STAGES * STAGE_SZ] __attribute__((aligned(128)));
    WARP_SETUP(smem);
    const long grp = get_group_id(2), bn = (long)get_group_id(0) * BN;
    const int bm = (int)get_group_id(1) * BM, M = (int)p.o, kall = (int)(p.c * KHW);
    const long plane = p.oh * p.ow, npix = p.n * plane;
    // this work item's staged pixel and first tap
    const int jc = tid % BN, kb = tid / BN;
    const long q = bn + jc;
    const bool qok = q < npix;
    PIXEL_OF(qok ? q : 0, plane, p.ow, qn, qy, qx);
    const int y0 = qy * SH - (int)p.ph, x0 = qx * SW - (int)p.pw;
    __global const TIN *xq = X + p.x.off + qn * p.x.s[0] + grp * p.x.s[1];
    __global const TIN *Ag = Kw + p.k.off + grp * p.k.s[0];
    const long lda = p.k.s[1];
    int dc = kb / KHW, dh = (kb % KHW) / KW, dw = kb % KW;
    float acc[MT][NT][4];
    ZERO_ACC(acc)
    const int ntiles = (kall + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ntiles) copy_w(smem, sbase + ES * s * STAGE_SZ, Ag, lda, M, kall, bm, s * BK, tid);
        cp_commit();
    }
    TIN rb[LB];
    gather(rb, xq, qok, y0, x0, p, &dc, &dh, &dw);
    store_window(smem, 0, rb, jc, kb);
    // stages: tile kt is read from rd, tile kt + 1's window written to bw, tile kt + STAGES -
    // 1's weight to wr (each stage's last readers are done by the barrier before the writes)
    int rd = 0, bw = 1 % STAGES, wr = STAGES - 1;
    for (int kt = 0; kt < ntiles; ++kt) {
        cp_wait();                      // this work item's weight copies of tile kt are in
        barrier(CLK_LOCAL_MEM_FENCE);   // everyone's, and the window; tile kt - 1 was read
        const int nk = kt + STAGES - 1;
        if (nk < ntiles) copy_w(smem, sbase + ES * wr * STAGE_SZ, Ag, lda, M, kall, bm, nk * BK, tid);
        cp_commit();
        const bool more = kt + 1 < ntiles;
        if (more) gather(rb, xq, qok, y0, x0, p, &dc, &dh, &dw);  // in flight meanwhile
        const uint sa = sbase + ES * rd * STAGE_SZ, sb = sa + ES * A_SZ;
        MMA_TILE(sa, sb, wm, wn, a_r, a_k, b_r, b_k, acc)
        if (more) store_window(smem, bw, rb, jc, kb);
        rd = rd == STAGES - 1 ? 0 : rd + 1;
        bw = bw == STAGES - 1 ? 0 : bw + 1;
        wr = wr == STAGES - 1 ? 0 : wr + 1;
    }
    cp_wait_all();
    store_y(p, Y, Bias, acc, grp, bn, bm, wm, wn, g8, t4);
}

// A weight gradient's float32 split sums w[o][k] (K + 1 columns, the bias column last) =
// acc, for the work-group's tile at (bm, bn) and the warp's at (wm, wn); the tile's columns
// are taps in (c, kh, kw) order, or with C > 0 in (kh, kw, c) order (C channels), stored in
// (c, kh, kw) order all the same.
INL void store_ws(__global float *w, float acc[MT][NT][4], int bm, int bn, int wm, int wn,
                  uint g8, uint t4, int M, int kall, int C) {
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int m = bm + wm + i * 16 + g8 + h * 8;
            if (m >= M) continue;
#pragma unroll
            for (int j = 0; j < NT; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int k = bn + wn + j * 8 + 2 * t4 + e, tp = C > 0 ? k / C : 0;
                    const int at = C == 0 || k == kall ? k : (k - tp * C) * KHW + tp;
                    if (k <= kall) w[(long)m * (kall + 1) + at] = acc[i][j][2 * h + e];
                }
        }
}

// The weight gradient: per group g, GW[g] (o x (K+1)) = GO[g] (o x pixels) @ col[g]^T (pixels
// x (K+1)), column K all ones (the bias gradient), the depth (the batch's pixels) split:
// split sp sums pixels [sp * QS, (sp + 1) * QS) into ws[sp][g][o][K+1] in float32 (QS a
// multiple of BK; wgrad_reduce of conv_igemm_cpu.cl sums the splits and rounds once). Both
// tiles are gathered through registers (two local stages: the next tile's loads in flight
// while this one is multiplied): work item tid stages depth (pixel) tid % BK of every tile,
// so a warp reads 32 consecutive pixels of one row (output channel, or tap) at a time; its
// rows are tid / BK + l * (NTHR / BK), decoded into (c, kh, kw) per tile (division by
// constants). Launch igemm_mma_wgrad: global (ceil((K+1) / BN) * NTHR, ceil(o / BM), g *
// split), local (NTHR, 1, 1).
#define RSTEP (NTHR / BK)          // rows between a work item's staged elements
#define WA (BM / RSTEP)            // output-gradient elements a work item stages per tile
#define WB (BN / RSTEP)            // window elements
#if NTHR % BK || BM % RSTEP || BN % RSTEP
#error "igemm_mma_wgrad: NTHR a multiple of BK, BM and BN multiples of NTHR / BK"
#endif

__kernel __attribute__((reqd_work_group_size(NTHR, 1, 1)))
void igemm_mma_wgrad(const conv_t p, __global const TIN *X, __global const TIN *GO, v5_t gv,
                     __global float *ws, long qs) {
    __local ushort smem[2 * STAGE_SZ] __attribute__((aligned(128)));
    WARP_SETUP(smem);
    const long grp = get_group_id(2) % p.g, sp = get_group_id(2) / p.g;
    const int bn = (int)get_group_id(0) * BN, bm = (int)get_group_id(1) * BM, M = (int)p.o;
    const int kall = (int)(p.c * KHW);
    const long plane = p.oh * p.ow, npix = p.n * plane;
    const long q0 = sp * qs, q1 = min(npix, q0 + qs);
    const int kq = tid % BK, r0 = tid / BK;
    __global const TIN *Xg = X + p.x.off + grp * p.x.s[1];
    __global const TIN *Gg = GO + gv.off + grp * gv.s[1];
    const IT cs = (IT)p.x.s[2], hs = (IT)p.x.s[3], xs = (IT)p.x.s[4];
    float acc[MT][NT][4];
    ZERO_ACC(acc)
    TIN ra[WA], rb[WB];
    const int ntiles = (int)((q1 - q0 + BK - 1) / BK);
    for (int kt = -1; kt < ntiles; ++kt) {
        if (kt + 1 < ntiles) {  // tile kt + 1's loads, in flight while tile kt is multiplied
            const long q = q0 + (long)(kt + 1) * BK + kq;
            const bool qok = q < q1;
            PIXEL_OF(qok ? q : 0, plane, p.ow, n, oy, ox);
            __global const TIN *gq = Gg + n * gv.s[0] + oy * gv.s[3] + ox * gv.s[4];
#pragma unroll
            for (int l = 0; l < WA; ++l) {
                const int m = bm + r0 + l * RSTEP;
                ra[l] = qok && m < M ? gq[m * gv.s[2]] : (TIN)0;
            }
            __global const TIN *xq = Xg + n * p.x.s[0];
            const int y0 = oy * SH - (int)p.ph, x0 = ox * SW - (int)p.pw;
#pragma unroll
            for (int l = 0; l < WB; ++l) {
                const int k = bn + r0 + l * RSTEP, c = k / KHW, r = k - c * KHW;
                const int kh = r / KW, y = y0 + kh * DH, x = x0 + (r - kh * KW) * DW;
                const bool ok = qok && k < kall && y >= 0 && x >= 0 && y < (int)p.h &&
                                x < (int)p.w;
                rb[l] = ok ? xq[c * cs + y * hs + x * xs]
                           : qok && k == kall ? (TIN)0x3c00 : (TIN)0;  // (1.0 in float16)
            }
        }
        if (kt >= 0) {
            const uint sa = sbase + ES * (kt & 1) * STAGE_SZ, sb = sa + ES * A_SZ;
            MMA_TILE(sa, sb, wm, wn, a_r, a_k, b_r, b_k, acc)
        }
        if (kt + 1 < ntiles) {
            __local ushort *as = smem + ((kt + 1) & 1) * STAGE_SZ, *bs = as + A_SZ;
#pragma unroll
            for (int l = 0; l < WA; ++l) as[IDX_RK(r0 + l * RSTEP, kq)] = ra[l];
#pragma unroll
            for (int l = 0; l < WB; ++l) bs[IDX_KR(BN, kq, r0 + l * RSTEP)] = rb[l];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    store_ws(ws + (sp * p.g + grp) * p.o * (kall + 1), acc, bm, bn, wm, wn, g8, t4, M, kall, 0);
}

// The weight gradient on the NHWC copy of X (to_nhwc; C a multiple of 8) and an output
// gradient whose (oh, ow) planes are contiguous, their size, offset and strides multiples of
// 8 (clgrad/ops/conv/mma.py checks): both tiles by cp.async, STAGES in flight. The output
// gradient's tile [o][pixel] in chunks of 8 pixels of a plane; the window's [pixel][k] in
// chunks of 8 channels of one tap (taps in (kh, kw, c) order), zero-filled where the tap
// falls in the padding, the bias column's chunk stored as (1, 0, ..., 0). The depth (pixels)
// split and ws as igemm_mma_wgrad's, ws in (c, kh, kw) order. Launch igemm_mma_wgrad_nhwc as
// igemm_mma_wgrad.
#define WCB (BN / EV)            // chunks of a window row (one pixel's BN taps)
#define LW (BK * WCB / NTHR)     // window chunks a work item copies per tile
#if (BK * WCB) % NTHR || NTHR % WCB
#error "igemm_mma_wgrad_nhwc: whole window chunks per work item, one column chunk each"
#endif
#ifdef P32
#define SAMPLE_OF(q, plane) ((int)(q) / (int)(plane))
#else
#define SAMPLE_OF(q, plane) ((q) / (plane))
#endif

// Copy the output gradient's tile of rows bm.., pixels q.. (< q1) into the stage at shared
// address s: LA chunks of 8 pixels per work item.
INL void copy_go(__local ushort *smem, uint s, __global const TIN *Gg, const v5_t gv, long plane,
                 int M, int bm, long q, long q1, int tid) {
#pragma unroll
    for (int e = 0; e < LA; ++e) {
        const int v = tid + e * NTHR, rr = v / (BK / EV), cc = (v % (BK / EV)) * EV;
        const long qq = q + cc;
        const bool in = bm + rr < M && qq < q1;
        const long n = SAMPLE_OF(in ? qq : 0, plane);
        CP_ASYNC16(s + ES * IDX_RK(rr, cc),
                   in ? Gg + n * gv.s[0] + (bm + rr) * gv.s[2] + (qq - n * plane) : Gg,
                   in ? 16 : 0);
    }
}

// Copy the window's tile of pixels q.. (< q1) at this work item's taps (kh, kw, c..c+7; the
// chunk at cc of the tile's columns; kin: below K, kone: the bias column) into the stage whose
// window tile starts at element so of smem (shared address sbase + ES * so).
INL void copy_xw(__local ushort *smem, uint sbase, int so, __global const TIN *Xg,
                 const conv_t p, long plane, long q, long q1, int cc, int kh, int kw, int c,
                 bool kin, bool kone, int tid) {
    const long gc = p.g * p.c;
#pragma unroll
    for (int e = 0; e < LW; ++e) {
        const int d = (tid + e * NTHR) / WCB, at = so + IDX_KR(BN, d, cc);
        const long qq = q + d;
        const bool qok = qq < q1;
        PIXEL_OF(qok ? qq : 0, plane, p.ow, n, oy, ox);
        const int y = oy * SH - (int)p.ph + kh * DH, x = ox * SW - (int)p.pw + kw * DW;
        const bool ok = qok && kin && y >= 0 && x >= 0 && y < (int)p.h && x < (int)p.w;
        if (kone) {
#pragma unroll
            for (int i = 0; i < EV; ++i) smem[at + i] = i == 0 && qok ? (ushort)0x3c00 : 0;
        } else {
            CP_ASYNC16(sbase + ES * at,
                       ok ? Xg + ((n * p.h + y) * p.w + x) * gc + c : Xg, ok ? 16 : 0);
        }
    }
}

__kernel __attribute__((reqd_work_group_size(NTHR, 1, 1)))
void igemm_mma_wgrad_nhwc(const conv_t p, __global const TIN *Xh, __global const TIN *GO,
                          v5_t gv, __global float *ws, long qs) {
    __local ushort smem[STAGES * STAGE_SZ] __attribute__((aligned(128)));
    WARP_SETUP(smem);
    const long grp = get_group_id(2) % p.g, sp = get_group_id(2) / p.g;
    const int bn = (int)get_group_id(0) * BN, bm = (int)get_group_id(1) * BM, M = (int)p.o;
    const int C = (int)p.c, kall = C * KHW;
    const long plane = p.oh * p.ow, npix = p.n * plane;
    const long q0 = sp * qs, q1 = min(npix, q0 + qs);
    __global const TIN *Gg = GO + gv.off + grp * gv.s[1];
    __global const TIN *Xg = Xh + grp * p.c;
    // this work item's window chunk: the taps k.. (kh, kw, c..c+7) at column cc of the tile
    const int cc = (tid % WCB) * EV, k = bn + cc, tap = k / C, c = k - tap * C;
    const int kh = tap / KW, kw = tap - kh * KW;
    const bool kin = k < kall, kone = k == kall;
    float acc[MT][NT][4];
    ZERO_ACC(acc)
    const int ntiles = (int)((q1 - q0 + BK - 1) / BK);
#define COPY_TILE(st, t)                                                                       \
    {                                                                                          \
        copy_go(smem, sbase + ES * (st) * STAGE_SZ, Gg, gv, plane, M, bm, q0 + (long)(t) * BK, \
                q1, tid);                                                                      \
        copy_xw(smem, sbase, (st) * STAGE_SZ + A_SZ, Xg, p, plane, q0 + (long)(t) * BK, q1,    \
                cc, kh, kw, c, kin, kone, tid);                                                \
    }
    CP_PIPELINE(ntiles, COPY_TILE, acc)
#undef COPY_TILE
    store_ws(ws + (sp * p.g + grp) * p.o * (kall + 1), acc, bm, bn, wm, wn, g8, t4, M, kall, C);
}

#else  // NHWC
// The forward problem (conv.h's, zero insertion included) on an NHWC copy of X (to_nhwc
// below): Xh[((n * H + y) * W + x) * G*C + g * C + c], C (channels a group) a multiple of 8,
// the taps in (kh, kw, c) order, so a chunk of 8 taps is 8 channels of one window position:
// both tiles come in by cp.async (STAGES in flight), the window's chunk zero-filled where its
// position falls in the padding, on an inserted zero or past K. The weight rows hold their
// taps in the same (kh, kw, c) order (clgrad/ops/conv/mma.py copies them so). Launch
// igemm_mma_fwd_nhwc as igemm_mma_fwd.
#define CB (BK / EV)             // chunks a pixel's taps of one tile
#define LC (BN * CB / NTHR)      // window chunks a work item copies per tile
#if (BN * CB) % NTHR
#error "igemm_mma_fwd_nhwc: whole window chunks per work item"
#endif

// Copy the window chunks of taps k.. (this work item's depth in the tile at shared address s)
// of its LC pixels (base: their sample's and group's offset in Xh; y0, x0: their window's
// origin in Xv's rows and columns, y0 far below 0 for a pixel past the batch).
INL void copy_x(__local ushort *smem, uint s, __global const TIN *Xh, const conv_t p,
                const long base[LC], const int y0[LC], const int x0[LC], int k, int kall,
                int tid) {
    const int C = (int)p.c, tap = k / C, c = k - tap * C, kh = tap / KW, kw = tap - kh * KW;
    const long gc = p.g * p.c;
#pragma unroll
    for (int e = 0; e < LC; ++e) {
        const int v = tid + e * NTHR, y = y0[e] + kh * DH, x = x0[e] + kw * DW;
        const bool ok = k < kall && y >= 0 && x >= 0 && y % UH == 0 && x % UW == 0 &&
                        y / UH < (int)p.h && x / UW < (int)p.w;
        CP_ASYNC16(s + ES * IDX_RK(v / CB, (v % CB) * EV),
                   ok ? Xh + base[e] + ((long)(y / UH) * p.w + x / UW) * gc + c : Xh,
                   ok ? 16 : 0);
    }
}

__kernel __attribute__((reqd_work_group_size(NTHR, 1, 1)))
void igemm_mma_fwd_nhwc(const conv_t p, __global const TIN *Xh, __global const TIN *Kw,
                        __global half *Y, __global const half *Bias) {
    __local ushort smem[STAGES * STAGE_SZ] __attribute__((aligned(128)));
    WARP_SETUP(smem);
    const long grp = get_group_id(2), bn = (long)get_group_id(0) * BN;
    const int bm = (int)get_group_id(1) * BM, M = (int)p.o, kall = (int)(p.c * KHW);
    const long plane = p.oh * p.ow, npix = p.n * plane;
    const int kc = (tid % CB) * EV;  // this work item's depth in every tile
    long base[LC];
    int y0[LC], x0[LC];
#pragma unroll
    for (int e = 0; e < LC; ++e) {
        const long q = bn + (tid + e * NTHR) / CB;
        const bool qok = q < npix;
        PIXEL_OF(qok ? q : 0, plane, p.ow, qn, qy, qx);
        base[e] = qn * p.h * p.w * p.g * p.c + grp * p.c;
        y0[e] = qok ? qy * SH - (int)p.ph : -0x40000000;
        x0[e] = qx * SW - (int)p.pw;
    }
    __global const TIN *Ag = Kw + p.k.off + grp * p.k.s[0];
    const long lda = p.k.s[1];
    float acc[MT][NT][4];
    ZERO_ACC(acc)
    const int ntiles = (kall + BK - 1) / BK;
#define COPY_TILE(st, t)                                                                       \
    {                                                                                          \
        copy_w(smem, sbase + ES * (st) * STAGE_SZ, Ag, lda, M, kall, bm, (t) * BK, tid);       \
        copy_x(smem, sbase + ES * ((st) * STAGE_SZ + A_SZ), Xh, p, base, y0, x0,               \
               (t) * BK + kc, kall, tid);                                                      \
    }
    CP_PIPELINE(ntiles, COPY_TILE, acc)
#undef COPY_TILE
    store_y(p, Y, Bias, acc, grp, bn, bm, wm, wn, g8, t4);
}
#endif  // NHWC
