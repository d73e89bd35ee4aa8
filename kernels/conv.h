// kernels/conv.h — shared by kernels/conv*.cl: the problem description, vector types, unaligned
// vector access, the tile fills that gather a zero-padded window of a strided view into local
// memory, the virtual-input read xv and the micro-tile store put.
//
// One problem (conv_t, passed by value) is a convolution of a batch of groups:
//   Y[n,g,o,oh,ow] = bias[g*O+o] + sum_{c,kh,kw} K[g,o,c,kh,kw] * Xv[n,g,c, oh*SH-PH+kh*DH,
//                                                                        ow*SW-PW+kw*DW]
// where Xv is X with UH-1 (UW-1) zeros inserted between rows (columns) and zero outside. The
// forward pass has U = 1; the input gradient is the same problem on the output gradient with
// U = stride, stride 1, padding (k-1)*d - p and the kernel view transposed and flipped (negative
// strides). With stride > 1 the host runs it as stride_h*stride_w phase problems with U = 1
// (dense convolutions of the output gradient with the taps of one phase: a strided kernel view,
// writing a strided view of the input gradient), so no inserted zero is multiplied; the kernels
// take U > 1 all the same. X, K and Y are 5-D views (offset, strides in elements) of the
// caller's tensors.
#ifndef CLGRAD_CONV_H
#define CLGRAD_CONV_H

#include "common.h"

#ifndef CAT
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#endif

// The vector helpers below are for float and double: kernels that only move elements
// (conv_im2col_any.cl) set CONV_PROBLEM_ONLY, and float16 builds (IS_HALF, set by the host:
// depthwise_gpu, wgrad_reduce) sum in ACC = float without vectors.
#if !defined(CONV_PROBLEM_ONLY) && !defined(IS_HALF)
// WIDE (set by the host on devices with 16-float native vectors, AVX-512): vectors twice as
// long, so a micro-tile row is two zmm registers.
#if defined(IS_DOUBLE) && defined(WIDE)
#define VW 8
typedef double8 V;
#elif defined(IS_DOUBLE)
#define VW 4
typedef double4 V;
#elif defined(WIDE)
#define VW 16
typedef float16 V;
#else
#define VW 8
typedef float8 V;
#endif

// Unaligned vector loads/stores. PoCL does not inline vloadN, so a vload in a hot loop is a call
// that spills every vector register: use an under-aligned vector type instead (clang).
// Local tiles are read the same way: drivers need not align __local arguments to a vector.
#if defined(__clang__)
typedef T VU __attribute__((ext_vector_type(VW), aligned(sizeof(T))));
#define LDL(p) (*(__local const VU *)(p))
#define STL(p, v) (*(__local VU *)(p) = (v))
#define STG(p, v) (*(__global VU *)(p) = (v))
#else
#define LDL(p) VLOAD(0, (p))
#define STL(p, v) VSTORE((v), 0, (p))
#define STG(p, v) VSTORE((v), 0, (p))
#endif
#define VLOAD CAT(vload, VW)
#define VSTORE CAT(vstore, VW)
#endif

// PoCL does not inline the min/max/clamp built-ins either: these are plain expressions.
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define INL inline __attribute__((always_inline))

#define NR (2 * VW)  // output columns of a micro-tile: two vectors

// The pixel q (< n * oh * ow, plane = oh * ow) as its sample n and output row and column oy,
// ox, declared here: 32-bit divisions where P32 says the pixel count fits an int (a 64-bit
// division costs ~70 instructions on GPUs).
#ifdef P32
#define PIXEL_OF(q, plane, ow, n, oy, ox)                                                      \
    const int n = (int)(q) / (int)(plane), n##_r = (int)(q) - n * (int)(plane),                \
              oy = n##_r / (int)(ow), ox = n##_r - oy * (int)(ow)
#else
#define PIXEL_OF(q, plane, ow, n, oy, ox)                                                      \
    const long n = (q) / (plane), n##_r = (q) - n * (plane);                                   \
    const int oy = (int)(n##_r / (ow)), ox = (int)(n##_r - (long)oy * (ow))
#endif

typedef struct { long off, s[5]; } v5_t;

typedef struct {
    long n, g, c, h, w, o, oh, ow;              // X is (n, g, c, h, w); Y is (n, g, o, oh, ow)
    long kh, kw, sh, sw, dh, dw, ph, pw, uh, uw;  // kernel, stride, dilation, pad, insertion
    v5_t x, k, y;                               // views of X, K (g, o, c, kh, kw) and Y
    long boff, bs, bias;                        // bias view (offset, stride) and whether used
    // Tiling, chosen by the host (clgrad/ops/conv_algorithms.py): a tile is th output rows x
    // tw columns of mc output channels; cc input channels are staged at a time.
    long mc, th, tw, cc, ntw, split;
    // Staged input window: per channel `rows` rows of pitch rp, channel pitch cp. slab == 0:
    // a row holds consecutive input columns (stride 1), tap kw starts kws = dw further on.
    // slab == 1: a row holds kw slabs of tw columns, slab kw holding the columns tap kw reads.
    long rows, rp, cp, kws, slab;
} conv_t;

#if !defined(CONV_PROBLEM_ONLY) && !defined(IS_HALF)

// Output tile (th0, tw0) of work-group tile index t: row and column of its first output.
INL void tile_origin(const conv_t p, long t, long *oh0, long *ow0) {
    *oh0 = (t / p.ntw) * p.th;
    *ow0 = (t % p.ntw) * p.tw;
}

// One row of the input window: dst[j] = Xv[y, x0 + j*step] for j < len, where the source row
// starts at src (already at row y / uh) and xs is the column stride; zero outside [0, w).
INL void fill_run(__local T *dst, __global const T *src, long x0, long step, int len,
                  const conv_t p, long xs) {
    if (p.uw == 1) {  // columns [lo, hi) are inside the row
        long lo = x0 >= 0 ? 0 : (-x0 + step - 1) / step;
        long hi = p.w > x0 ? (p.w - x0 + step - 1) / step : 0;
        lo = MIN(lo, (long)len);
        hi = MIN(MAX(hi, lo), (long)len);
        for (int j = 0; j < lo; ++j) dst[j] = (T)0;
        if (xs == 1 && step == 1) {
            __global const T *s = src + x0;
            for (int j = lo; j < hi; ++j) dst[j] = s[j];
        } else {
            const long st = step * xs;
            __global const T *s = src + x0 * xs;
            for (int j = lo; j < hi; ++j) dst[j] = s[j * st];
        }
        for (int j = hi; j < len; ++j) dst[j] = (T)0;
    } else {
        for (int j = 0; j < len; ++j) {
            long x = x0 + j * step;
            bool ok = x >= 0 && x % p.uw == 0 && x / p.uw < p.w;
            dst[j] = ok ? src[(x / p.uw) * xs] : (T)0;
        }
    }
}

// Stage channels [0, cc) of X at xbase (the view offset of (n, g, c0)) for the tile whose first
// output is (oh0, ow0): per channel p.rows rows starting at input row oh0*sh - ph.
INL void fill_window(__local T *xt, __global const T *X, long xbase, int cc, long oh0,
                     long ow0, const conv_t p) {
    const long y0 = oh0 * p.sh - p.ph, x0 = ow0 * p.sw - p.pw;
    for (int c = 0; c < cc; ++c) {
        for (int r = 0; r < p.rows; ++r) {
            __local T *dst = xt + c * p.cp + r * p.rp;
            long y = y0 + r;
            if (y < 0 || y % p.uh != 0 || y / p.uh >= p.h) {
                for (int j = 0; j < p.rp; ++j) dst[j] = (T)0;
                continue;
            }
            __global const T *src = X + xbase + c * p.x.s[2] + (y / p.uh) * p.x.s[3];
            if (p.slab) {
                for (int kw = 0; kw < p.kw; ++kw)
                    fill_run(dst + kw * p.tw, src, x0 + kw * p.dw, p.sw, (int)p.tw, p, p.x.s[4]);
            } else {
                fill_run(dst, src, x0, 1, (int)p.rp, p, p.x.s[4]);
            }
        }
    }
}

// Offset inside the staged window of tap k = (c, kh, kw) of a chunk.
INL int tap_offset(int k, const conv_t p) {
    int khw = (int)(p.kh * p.kw);
    int c = k / khw, r = k - c * khw, kh = r / (int)p.kw, kw = r - kh * (int)p.kw;
    return c * (int)p.cp + kh * (int)(p.dh * p.rp) + kw * (int)p.kws;
}

INL T hsum(V v) {
#if VW == 16
    float8 w = v.lo + v.hi;
    float4 a = w.lo + w.hi;
#elif VW == 8 && defined(IS_DOUBLE)
    double4 a = v.lo + v.hi;
#elif VW == 8
    float4 a = v.lo + v.hi;
#endif
#if VW == 4
    double2 b = v.lo + v.hi;
#else
    CAT(T, 2) b = a.lo + a.hi;
#endif
    return b.x + b.y;
}

// Xv (above) at virtual (y, x) of channel base xb; 0 outside or between inserted zeros.
INL T xv(__global const T *X, long xb, long y, long x, const conv_t p) {
    if (y < 0 || x < 0 || y % p.uh || x % p.uw) return (T)0;
    y /= p.uh;
    x /= p.uw;
    return (y < p.h && x < p.w) ? X[xb + y * p.x.s[3] + x * p.x.s[4]] : (T)0;
}

// Store n (<= NR) outputs v0:v1 at y with column stride ys.
INL void put(__global T *y, V v0, V v1, int n, long ys) {
    if (n >= NR && ys == 1) {
        STG(y, v0);
        STG(y + VW, v1);
    } else {
        union { V v[2]; T t[NR]; } u;
        u.v[0] = v0;
        u.v[1] = v1;
        for (int j = 0; j < MIN(n, NR); ++j) y[j * ys] = u.t[j];
    }
}

#endif  // CONV_PROBLEM_ONLY, IS_HALF
#endif
