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
// and inside one group of K (of GO), fit an int; P32: so does the pixel count n*oh*ow.
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
#if NTHR % TSN != 0 || (TSM * TSK) % NTHR != 0 || (TSN * TSK) % NTHR != 0
#error "tiles: the work-group size must divide TSM*TSK and TSN*TSK and be a multiple of TSN"
#endif

// Weights of taps k0.. for rows bm..: element e = tid + l*NTHR is (k = e / TSM, m = e % TSM).
INL void load_w(T ra[LA], __global const T *Kg, const conv_t p, int bm, int k0, int kall,
                int tid) {
#pragma unroll
    for (int l = 0; l < LA; ++l) {
        const int e = tid + l * NTHR, k = k0 + e / TSM, m = bm + e % TSM;
        const int c = k / KHW, r = k - c * KHW, kh = r / KW, kw = r - kh * KW;
        ra[l] = (m < (int)p.o && k < kall)
            ? Kg[m * (IT)p.k.s[1] + c * (IT)p.k.s[2] + kh * (IT)p.k.s[3] + kw * (IT)p.k.s[4]]
            : (T)0;
    }
}

// Window of taps k0.. at this work item's pixel: element e is (k = e / TSN, n = tid % TSN).
INL void load_x(T rb[LB], __global const T *xq, bool qok, int y0, int x0, const conv_t p,
                int k0, int kall, int tid) {
#pragma unroll
    for (int l = 0; l < LB; ++l) {
        const int k = k0 + (tid + l * NTHR) / TSN;
        const int c = k / KHW, r = k - c * KHW, kh = r / KW, kw = r - kh * KW;
        const int y = y0 + kh * DH, x = x0 + kw * DW;
        const bool ok = qok && k < kall && y >= 0 && x >= 0 && y % UH == 0 && x % UW == 0 &&
                        y / UH < (int)p.h && x / UW < (int)p.w;
        rb[l] = ok ? xq[c * (IT)p.x.s[2] + (y / UH) * (IT)p.x.s[3] + (x / UW) * (IT)p.x.s[4]]
                   : (T)0;
    }
}

INL void store_w(__local T *As, const T ra[LA], int tid) {
#pragma unroll
    for (int l = 0; l < LA; ++l) {
        const int e = tid + l * NTHR;
        As[(e / TSM) * PADM + e % TSM] = ra[l];
    }
}

INL void store_x(__local T *Bs, const T rb[LB], int tid) {
#pragma unroll
    for (int l = 0; l < LB; ++l) {
        const int e = tid + l * NTHR;
        Bs[(e / TSN) * PADN + e % TSN] = rb[l];
    }
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
    T acc[WPTM][WPTN];
#pragma unroll
    for (int i = 0; i < WPTM; ++i)
#pragma unroll
        for (int j = 0; j < WPTN; ++j) acc[i][j] = (T)0;
    T ra[LA], rb[LB];
    const int ntiles = (kall + TSK - 1) / TSK;
    load_w(ra, Kg, p, bm, 0, kall, tid);
    load_x(rb, xq, qok, y0, x0, p, 0, kall, tid);
    store_w(As, ra, tid);
    store_x(Bs, rb, tid);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = 0; t < ntiles; ++t) {
        const int cur = t & 1;
        const bool more = t + 1 < ntiles;
        if (more) {
            load_w(ra, Kg, p, bm, (t + 1) * TSK, kall, tid);
            load_x(rb, xq, qok, y0, x0, p, (t + 1) * TSK, kall, tid);
        }
        __local const T *as = As + cur * TSK * PADM + ty * 4;
        __local const T *bs = Bs + cur * TSK * PADN + tx * 4;
#include "gemm_tile_step.h"
        if (more) {
            store_w(As + (1 - cur) * TSK * PADM, ra, tid);
            store_x(Bs + (1 - cur) * TSK * PADN, rb, tid);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#pragma unroll
    for (int j = 0; j < WPTN; ++j) {
        const long qq = bn + tx * 4 + (j / 4) * 4 * RTSN + (j % 4);
        if (qq >= npix) continue;
        const long n = qq / plane, rr = qq - n * plane;
        __global T *yq = Y + p.y.off + n * p.y.s[0] + g * p.y.s[1] + (rr / p.ow) * p.y.s[3]
                         + (rr % p.ow) * p.y.s[4];
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
                     __global T *ws) {
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
#ifdef P32  // n*oh*ow < 2^31: 32-bit divisions (a 64-bit one costs ~70 instructions here)
        const int n = qok ? (int)q / (int)plane : 0, rr = qok ? (int)q - n * (int)plane : 0;
        const int oy = rr / (int)p.ow, ox = rr - oy * (int)p.ow;
#else
        const long n = qok ? q / plane : 0, rr = qok ? q - n * plane : 0;
        const int oy = (int)(rr / p.ow), ox = (int)(rr - (long)oy * p.ow);
#endif
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
                rb[l] = ok ? xq[toff[l] + y * (IT)p.x.s[3] + x * (IT)p.x.s[4]]
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
    __global T *w = ws + (sp * p.g + g) * p.o * (kall + 1);
#pragma unroll
    for (int i = 0; i < WPTM; ++i) {
        const int m = bm + ty * 4 + (i / 4) * 4 * RTSM + (i % 4);
        if (m >= (int)p.o) continue;
#pragma unroll
        for (int j = 0; j < WPTN; ++j) {
            const int k = bn + tx * 4 + (j / 4) * 4 * RTSN + (j % 4);
            if (k <= kall) w[(long)m * (kall + 1) + k] = acc[i][j];
        }
    }
}
