// kernels/conv_igemm_gpu.cl — implicit-GEMM convolution for GPUs, built like GEMM_TILED of
// kernels/matmul.cl, on the problem of conv.h: per group g, Y[g] (o x pixels) = K[g] (o x K) @
// col[g] (K x pixels), K = c*kh*kw taps, pixels = the (n, oh, ow) of the whole batch, the
// im2col matrix gathered on the fly. One launch over all groups (the third launch dimension).
// A work-group of (TSN/WPTN) x (TSM/WPTM) work items computes a TSM x TSN tile, each work item
// a WPTM x WPTN block in registers (rows ty*4 + {0..3} + 4*RTSM*i, columns tx*4 + {0..3} +
// 4*RTSN*j, local memory read as 4-vectors); the weight and window tiles, TSK deep, are
// double-buffered in local memory (the next tile's global loads are in flight while the
// current one is used; one barrier per tile). Each work item stages always the same pixel
// (NTHR is a multiple of TSN), so its sample base and window origin are computed once.
// Forward, and the input gradient as the forward problem on the flipped weight view (conv.h).
// Defines: T; TSM TSN TSK WPTM WPTN (WPTM, WPTN multiples of 4); KH KW SH SW DH DW UH UW: the
// problem's geometry (tap decoding by constants); I32: offsets inside one (n, g) slab of X,
// and inside one group of K (of GO), fit an int; P32: so does the pixel count n*oh*ow; W_KC,
// W_FLAT: how the forward reads weight tiles (below); TAPS_OUTER: the forward's depth
// ordered taps outer, channels inner (below); WG_DIRECT: the weight gradient written
// into gw and gb directly (split == 1), not into the workspace; XS1: X's column stride is 1.
// Launch igemm_gpu_fwd: global (ceil(n*oh*ow / TSN) * RTSN, ceil(o / TSM) * RTSM, g),
//   local (RTSN, RTSM, 1).
// igemm_gpu_wgrad: per group, GW (o x (K+1)) = GO (o x pixels) @ col^T (pixels x (K+1)), the
//   column K all ones (the bias gradient), split-K over the pixels: split sp sums pixels
//   [sp*P/split, (sp+1)*P/split) of P = n*oh*ow into ws[sp][g][o][K+1] (wgrad_reduce of
//   conv_igemm_cpu.cl sums the splits). Tiles as the forward, rows o, columns taps, depth
//   pixels; loads are pixel-inner (TSK consecutive pixels per run of work items). Launch: global
//   (ceil((K+1) / TSN) * RTSN, ceil(o / TSM) * RTSM, g * split), local (RTSN, RTSM, 1).
#include "conv.h"

#define RTSM (TSM / WPTM)
#define RTSN (TSN / WPTN)
#define NTHR (RTSM * RTSN)
#define LA (TSM * TSK / NTHR)  // weight elements loaded per work item per tile
#define LB (TSN * TSK / NTHR)  // window elements
#define PADM (TSM + 4)
#define PADN (TSN + 4)
#define KHW (KH * KW)
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define T4 CAT(T, 4)
#ifdef IS_FLOAT
#define FMA(a, b, c) fma(a, b, c)
#else
#define FMA(a, b, c) ((a) * (b) + (c))
#endif
#ifdef I32
typedef int IT;
#else
typedef long IT;
#endif
#ifdef XS1  // X's columns are adjacent
#define XS4 1
#else
#define XS4 ((IT)p.x.s[4])
#endif
#if NTHR % TSN != 0 || (TSM * TSK) % NTHR != 0 || (TSN * TSK) % NTHR != 0
#error "tiles: the work-group size must divide TSM*TSK and TSN*TSK and be a multiple of TSN"
#endif

// Tap step of one depth tile, as (c, kh, kw) digits: TSK = DKC*KH*KW + DKH*KW + DKW.
#define DKC (TSK / KHW)
#define DKH ((TSK % KHW) / KW)
#define DKW (TSK % KW)
#define KSTEP (NTHR / TSN)  // window rows (taps) between a work item's loads of one tile

// Weight tiles. The host picks how they are read (clgrad/ops/conv/gpu.py, _W_READ and
// _igemm_weight; by default it copies every weight into a [g][taps][rows] layout read as
// W_FLAT, taps outer or inner; W_KC and W_FLAT over the caller's own weight view are options):
// W_KC: taps contiguous per row (a plain weight: k.s[4] == 1, k.s[3] == KW, k.s[2] == KH*KW):
//   tap k of row m at m*s1 + k; read along k (runs of KR consecutive taps per row, so a warp
//   reads 32/KR rows KR floats each, whole sectors), stored transposed into As[k][m]. With
//   PADM = 4 mod 32 (TSM a multiple of 32) the 32 stores of a warp hit 32 banks when KR = 8
//   (banks 4*kr + m); TSK = 16 keeps KR = 8, so stores stay conflict-free there too.
// W_FLAT (without W_KC): taps flatten (k.s[3] == KW*s4, k.s[2] == KH*KW*s4): tap k at
//   m*s1 + k*s4; read along m (element e is (k = e / TSM, m = e % TSM)), coalesced where
//   s1 == 1: the layout of the host's copy [g][k][o] of any other weight view.
// neither: any view, (c, kh, kw) decoded per element and tile (what the kernel did before).
#if defined(W_KC) && !defined(W_FLAT)
#define W_FLAT 1
#endif
#ifdef TAPS_OUTER  // the flat taps' stride: channels are the inner digit
#define WUNIT p.k.s[2]
#else
#define WUNIT p.k.s[4]
#endif
#if defined(W_KC)
#if TSK % 8 == 0
#define KR 8
#elif TSK % 4 == 0
#define KR 4
#else
#define KR 1
#endif
#define WM(e) ((e) / KR % TSM)
#define WK(e) ((e) / (KR * TSM) * KR + (e) % KR)
#else
#define WM(e) ((e) % TSM)
#define WK(e) ((e) / TSM)
#endif

// This work item's weight elements: row (bm + WM(e)) and tile-local tap WK(e) of e = tid +
// l*NTHR, and (W_FLAT) their offsets at tile 0, computed once.
typedef struct {
    int m[LA], k[LA];
#ifdef W_FLAT
    IT off[LA];
#endif
} wslots_t;

INL void load_w(T ra[LA], __global const T *Kg, const conv_t p, const wslots_t *ws, int k0,
                int kall) {
#pragma unroll
    for (int l = 0; l < LA; ++l) {
        const int k = k0 + ws->k[l];
        const bool ok = ws->m[l] < (int)p.o && k < kall;
#if defined(W_KC)
        ra[l] = ok ? Kg[ws->off[l] + k0] : (T)0;
#elif defined(W_FLAT)
        ra[l] = ok ? Kg[ws->off[l] + k0 * (IT)WUNIT] : (T)0;
#else
        const int c = k / KHW, r = k - c * KHW, kh = r / KW, kw = r - kh * KW;
        ra[l] = ok ? Kg[ws->m[l] * (IT)p.k.s[1] + c * (IT)p.k.s[2] + kh * (IT)p.k.s[3] +
                        kw * (IT)p.k.s[4]]
                   : (T)0;
#endif
    }
}

INL void store_w(__local T *As, const T ra[LA], const wslots_t *ws, int bm) {
#pragma unroll
    for (int l = 0; l < LA; ++l) As[ws->k[l] * PADM + ws->m[l] - bm] = ra[l];
}

#ifdef TAPS_OUTER
// The window, taps outer: k = (kh*KW + kw)*C + c (the weight copied by the host in that
// order, [g][kh][kw][c][rows], read as W_FLAT), C a multiple of TSK, so a tile lies in one
// tap: its bounds check and row offset are computed once per tile, and element l of this
// work item is channel c0 + tid / TSN + l*KSTEP: one multiply-add per element.
typedef struct {
    int c0, kb, kh, kw;  // the tile's first channel and tap; kb = tid / TSN
} xtaps_t;

INL void load_x(T rb[LB], __global const T *xq, bool qok, int y0, int x0, const conv_t p,
                xtaps_t *xt) {
    const int y = y0 + xt->kh * DH, x = x0 + xt->kw * DW;
    const bool ok = qok && y >= 0 && x >= 0 && y % UH == 0 && x % UW == 0 &&
                    y / UH < (int)p.h && x / UW < (int)p.w;
    const IT cs = (IT)p.x.s[2];
    __global const T *xp = xq + (ok ? (y / UH) * (IT)p.x.s[3] + (x / UW) * XS4 : 0)
                           + (xt->c0 + xt->kb) * cs;
#pragma unroll
    for (int l = 0; l < LB; ++l) rb[l] = ok ? xp[l * KSTEP * cs] : (T)0;
    xt->c0 += TSK;  // the next tile: the next TSK channels, or the next tap's first
    if (xt->c0 == (int)p.c) {
        xt->c0 = 0;
        xt->kw += 1;
        if (xt->kw == KW) {
            xt->kw = 0;
            xt->kh += 1;
        }
    }
}
#else
// The window: element l of this work item is tap k = k0 + tid / TSN + l*KSTEP at its pixel;
// taps are kept as (c, kh, kw) digits, advanced by TSK per tile (no division per element).
typedef struct {
    int c[LB], kh[LB], kw[LB];
} xtaps_t;

INL void load_x(T rb[LB], __global const T *xq, bool qok, int y0, int x0, const conv_t p,
                xtaps_t *xt) {
#pragma unroll
    for (int l = 0; l < LB; ++l) {
        const int c = xt->c[l], y = y0 + xt->kh[l] * DH, x = x0 + xt->kw[l] * DW;
        const bool ok = qok && c < (int)p.c && y >= 0 && x >= 0 && y % UH == 0 &&
                        x % UW == 0 && y / UH < (int)p.h && x / UW < (int)p.w;
        rb[l] = ok ? xq[c * (IT)p.x.s[2] + (y / UH) * (IT)p.x.s[3] + (x / UW) * XS4]
                   : (T)0;
        // the next tile's tap: k + TSK, one carry at most per digit
        int kw = xt->kw[l] + DKW, cy = kw >= KW;
        xt->kw[l] = cy ? kw - KW : kw;
        int kh = xt->kh[l] + DKH + cy;
        cy = kh >= KH;
        xt->kh[l] = cy ? kh - KH : kh;
        xt->c[l] += DKC + cy;
    }
}
#endif

INL void store_x(__local T *Bs, const T rb[LB], int tid) {
#pragma unroll
    for (int l = 0; l < LB; ++l) Bs[(tid / TSN + l * KSTEP) * PADN + tid % TSN] = rb[l];
}

__kernel __attribute__((reqd_work_group_size(RTSN, RTSM, 1)))
void igemm_gpu_fwd(const conv_t p, __global const T *X, __global const T *K, __global T *Y,
                   __global const T *B) {
    __local T As[2 * TSK * PADM] __attribute__((aligned(4 * sizeof(T))));
    __local T Bs[2 * TSK * PADN] __attribute__((aligned(4 * sizeof(T))));
    const int tx = get_local_id(0), ty = get_local_id(1), tid = ty * RTSN + tx;
    const long g = get_group_id(2), bn = (long)get_group_id(0) * TSN;
    const int bm = (int)get_group_id(1) * TSM;
    const long npix = p.n * p.oh * p.ow, plane = p.oh * p.ow;
    const int kall = (int)(p.c * KHW);
    // this work item's staged pixel
    const long q = bn + tid % TSN, qn = q / plane, qr = q - qn * plane;
    const bool qok = q < npix;
    const int y0 = (int)(qr / p.ow) * SH - (int)p.ph, x0 = (int)(qr % p.ow) * SW - (int)p.pw;
    __global const T *xq = X + p.x.off + (qok ? qn : 0) * p.x.s[0] + g * p.x.s[1];
    __global const T *Kg = K + p.k.off + g * p.k.s[0];
    wslots_t ws;
#pragma unroll
    for (int l = 0; l < LA; ++l) {
        const int e = tid + l * NTHR;
        ws.m[l] = bm + WM(e);
        ws.k[l] = WK(e);
#ifdef W_FLAT
        ws.off[l] = ws.m[l] * (IT)p.k.s[1] + ws.k[l] * (IT)WUNIT;
#endif
    }
    xtaps_t xt;
#ifdef TAPS_OUTER
    xt.c0 = xt.kh = xt.kw = 0;
    xt.kb = tid / TSN;
#else
#pragma unroll
    for (int l = 0; l < LB; ++l) {
        const int k = tid / TSN + l * KSTEP, c = k / KHW, r = k - c * KHW;
        xt.c[l] = c;
        xt.kh[l] = r / KW;
        xt.kw[l] = r - (r / KW) * KW;
    }
#endif
    T acc[WPTM][WPTN];
#pragma unroll
    for (int i = 0; i < WPTM; ++i)
#pragma unroll
        for (int j = 0; j < WPTN; ++j) acc[i][j] = (T)0;
    T ra[LA], rb[LB];
    const int ntiles = (kall + TSK - 1) / TSK;
    load_w(ra, Kg, p, &ws, 0, kall);
    load_x(rb, xq, qok, y0, x0, p, &xt);
    store_w(As, ra, &ws, bm);
    store_x(Bs, rb, tid);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = 0; t < ntiles; ++t) {
        const int cur = t & 1;
        const bool more = t + 1 < ntiles;
        if (more) {
            load_w(ra, Kg, p, &ws, (t + 1) * TSK, kall);
            load_x(rb, xq, qok, y0, x0, p, &xt);
        }
        __local const T *as = As + cur * TSK * PADM + ty * 4;
        __local const T *bs = Bs + cur * TSK * PADN + tx * 4;
#include "gemm_tile_step.h"
        if (more) {
            store_w(As + (1 - cur) * TSK * PADM, ra, &ws, bm);
            store_x(Bs + (1 - cur) * TSK * PADN, rb, tid);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#pragma unroll
    for (int j = 0; j < WPTN; ++j) {
        const long qq = bn + tx * 4 + (j / 4) * 4 * RTSN + (j % 4);
        if (qq >= npix) continue;
#ifdef P32  // 32-bit divisions (a 64-bit one costs ~70 instructions on GPUs)
        const int n = (int)qq / (int)plane, rr = (int)qq - n * (int)plane;
        const int oy = rr / (int)p.ow, ox = rr - oy * (int)p.ow;
#else
        const long n = qq / plane, rr = qq - n * plane, oy = rr / p.ow, ox = rr - oy * p.ow;
#endif
        __global T *yq = Y + p.y.off + n * p.y.s[0] + g * p.y.s[1] + oy * p.y.s[3] +
                         ox * p.y.s[4];
#pragma unroll
        for (int i = 0; i < WPTM; ++i) {
            const int m = bm + ty * 4 + (i / 4) * 4 * RTSM + (i % 4);
            if (m >= (int)p.o) continue;
            const T b = p.bias ? B[p.boff + (g * p.o + m) * p.bs] : (T)0;
            yq[m * p.y.s[2]] = acc[i][j] + b;
        }
    }
}

// The pixel-inner tiles of the weight gradient: element e = tid + l*NTHR is (k = e % TSK,
// row = e / TSK); a work item's depth index k is the same for every l (NTHR % TSK == 0).
#if NTHR % TSK != 0
#error "tiles: the work-group size must be a multiple of TSK"
#endif

INL void store_km(__local T *S, const T r[], int len, int pad, int tid) {
    for (int l = 0; l < len; ++l) {
        const int e = tid + l * NTHR;
        S[(e % TSK) * pad + e / TSK] = r[l];
    }
}

__kernel __attribute__((reqd_work_group_size(RTSN, RTSM, 1)))
void igemm_gpu_wgrad(const conv_t p, __global const T *X, __global const T *GO, v5_t gv,
                     __global T *ws, __global T *GW, v5_t gwv, __global T *GB, long gboff,
                     long gbs, int want_b) {
    __local T As[2 * TSK * PADM] __attribute__((aligned(4 * sizeof(T))));
    __local T Bs[2 * TSK * PADN] __attribute__((aligned(4 * sizeof(T))));
    const int tx = get_local_id(0), ty = get_local_id(1), tid = ty * RTSN + tx;
    const long g = get_group_id(2) % p.g, sp = get_group_id(2) / p.g;
    const int bn = (int)get_group_id(0) * TSN, bm = (int)get_group_id(1) * TSM;
    const int kall = (int)(p.c * KHW);
    const long plane = p.oh * p.ow, npix = p.n * plane;
    const long q0 = sp * npix / p.split, q1 = (sp + 1) * npix / p.split;
    const int kq = tid % TSK;  // this work item's pixel within every depth tile
    // its taps (columns bn + tid / TSK + l * NTHR / TSK): window offsets, bias column flags
    IT toff[LB];
    int tdy[LB], tdx[LB];
    bool tin[LB], tone[LB];
#pragma unroll
    for (int l = 0; l < LB; ++l) {
        const int k = bn + (tid + l * NTHR) / TSK;
        const int kc = MIN(k, kall - 1), c = kc / KHW, r = kc - c * KHW, kh = r / KW;
        const int kw = r - kh * KW;
        tdy[l] = kh * DH;
        tdx[l] = kw * DW;
        toff[l] = c * (IT)p.x.s[2];
        tin[l] = k < kall;
        tone[l] = k == kall;
    }
    __global const T *Xg = X + p.x.off + g * p.x.s[1];
    __global const T *Gg = GO + gv.off + g * gv.s[1];
    T acc[WPTM][WPTN];
#pragma unroll
    for (int i = 0; i < WPTM; ++i)
#pragma unroll
        for (int j = 0; j < WPTN; ++j) acc[i][j] = (T)0;
    T ra[LA], rb[LB];
    const int ntiles = (int)((q1 - q0 + TSK - 1) / TSK);
    for (int t = -1; t < ntiles; ++t) {
        // loads of tile t + 1 (in flight while tile t is used)
        const long q = q0 + (long)(t + 1) * TSK + kq;
        const bool qok = q < q1;
        PIXEL_OF(qok ? q : 0, plane, p.ow, n, oy, ox);
        if (t + 1 < ntiles) {
            __global const T *gq = Gg + n * gv.s[0] + oy * (IT)gv.s[3] + ox * (IT)gv.s[4];
#pragma unroll
            for (int l = 0; l < LA; ++l) {
                const int m = bm + (tid + l * NTHR) / TSK;
                ra[l] = (qok && m < (int)p.o) ? gq[m * (IT)gv.s[2]] : (T)0;
            }
            __global const T *xq = Xg + n * p.x.s[0];
            const int y0 = oy * SH - (int)p.ph, x0 = ox * SW - (int)p.pw;
#pragma unroll
            for (int l = 0; l < LB; ++l) {
                const int y = y0 + tdy[l], x = x0 + tdx[l];
                const bool ok = qok && tin[l] && y >= 0 && x >= 0 && y < (int)p.h &&
                                x < (int)p.w;
                rb[l] = ok ? xq[toff[l] + y * (IT)p.x.s[3] + x * XS4]
                           : (qok && tone[l]) ? (T)1 : (T)0;
            }
        }
        if (t >= 0) {
            __local const T *as = As + (t & 1) * TSK * PADM + ty * 4;
            __local const T *bs = Bs + (t & 1) * TSK * PADN + tx * 4;
#include "gemm_tile_step.h"
        }
        if (t + 1 < ntiles) {
            store_km(As + ((t + 1) & 1) * TSK * PADM, ra, LA, PADM, tid);
            store_km(Bs + ((t + 1) & 1) * TSK * PADN, rb, LB, PADN, tid);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#ifdef WG_DIRECT
    // one split: tap column k of row m straight into gw's grouped view, column kall into gb
    __global T *w = GW + gwv.off + g * gwv.s[0];
    long woff[WPTN];
#pragma unroll
    for (int j = 0; j < WPTN; ++j) {
        const int k = MIN(bn + tx * 4 + (j / 4) * 4 * RTSN + (j % 4), kall - 1);
        const int c = k / KHW, r = k - c * KHW, kh = r / KW, kw = r - kh * KW;
        woff[j] = c * gwv.s[2] + kh * gwv.s[3] + kw * gwv.s[4];
    }
#else
    __global T *w = ws + (sp * p.g + g) * p.o * (kall + 1);
#endif
#pragma unroll
    for (int i = 0; i < WPTM; ++i) {
        const int m = bm + ty * 4 + (i / 4) * 4 * RTSM + (i % 4);
        if (m >= (int)p.o) continue;
#pragma unroll
        for (int j = 0; j < WPTN; ++j) {
            const int k = bn + tx * 4 + (j / 4) * 4 * RTSN + (j % 4);
#ifdef WG_DIRECT
            if (k < kall)
                w[m * gwv.s[1] + woff[j]] = acc[i][j];
            else if (k == kall && want_b)
                GB[gboff + (g * p.o + m) * gbs] = acc[i][j];
#else
            if (k <= kall) w[(long)m * (kall + 1) + k] = acc[i][j];
#endif
        }
    }
}
