// kernels/common.h — index arithmetic shared by every kernel file.
// A tensor argument is (data pointer, view_t): view_t holds the element offset and the strides
// (in elements) of up to MAXD dims. The logical shape is a shape_t, shared by all operands of
// one launch. Both are passed by value: no device buffers for metadata.
#ifndef CLGRAD_COMMON_H
#define CLGRAD_COMMON_H

#ifdef CLGRAD_HAS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#ifdef CLGRAD_FP16_PRAGMA
// half arithmetic on a GPU whose driver does not list cl_khr_fp16 but whose compiler runs it
// right under the pragma (clgrad/_probe.py probe_fp16: NVIDIA's OpenCL)
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#if !defined(cl_khr_fp16) || defined(CLGRAD_HALF_BUILTINS)
// ... and whose compiler declares none of the extension's half built-ins (exp, isnan, vload8)
#include "half_builtins.h"
#endif
#endif

#define MAXD 8

typedef struct { long n[MAXD]; } shape_t;
typedef struct { long off; long s[MAXD]; } view_t;

#if defined(CONTIG)
// Every operand of this launch is contiguous like the output (clgrad/ops/_util.py launch_1d):
// element i sits at offset + i. Plain unit-stride indexing lets the compiler vectorise across
// work items (PoCL: 4.7x on a ReLU against the rank loop below). Only for kernels that index
// every operand by the launch's element index i.
inline long off1(long i, int nd, const shape_t sh, const view_t v) { return v.off + i; }
#elif defined(ROWS2D)
// A 2-D launch (clgrad/ops/_util.py launch_1d, strided operands of rank nd >= 2): dim 0 walks
// the last dim (the kernel's n is its length, so `i >= n` guards the padding), dim 1 the rows
// over the other dims. The row's offsets depend on get_global_id(1) alone, uniform across a
// work-group row, so a runtime that vectorises along dim 0 (Intel's CPU runtime: 16 work items
// per AVX-512 vector) divides once per vector instead of once per element and dim: a strided
// copy of 64x128x8x8 floats took 11 ms as a 1-D launch there. Only for kernels that index
// every operand by the launch's element index i, as CONTIG. ROWS2D is the rank nd (a define, so
// the loop unrolls and the by-value structs are indexed statically).
inline long off1(long i, int nd, const shape_t sh, const view_t v) {
    long r = get_global_id(1), o = v.off + (long)get_global_id(0) * v.s[ROWS2D - 1];
#pragma unroll
    for (int d = ROWS2D - 2; d >= 1; --d) {  // the rank, a define: static struct indexing
        long q = r / sh.n[d];
        o += (r - q * sh.n[d]) * v.s[d];
        r = q;
    }
    return o + r * v.s[0];  // what is left is the outermost index: no division (see off1)
}
#endif
#if defined(CONTIG) || defined(ROWS2D)
inline void off2(long i, int nd, const shape_t sh, const view_t a, const view_t b,
                 long *oa, long *ob) {
    *oa = off1(i, nd, sh, a);
    *ob = off1(i, nd, sh, b);
}
inline void off3(long i, int nd, const shape_t sh, const view_t a, const view_t b,
                 const view_t c, long *oa, long *ob, long *oc) {
    off2(i, nd, sh, a, b, oa, ob);
    *oc = off1(i, nd, sh, c);
}
inline void off4(long i, int nd, const shape_t sh, const view_t a, const view_t b,
                 const view_t c, const view_t e, long *oa, long *ob, long *oc, long *oe) {
    off3(i, nd, sh, a, b, c, oa, ob, oc);
    *oe = off1(i, nd, sh, e);
}
#else
// Offset of the i-th element (row-major over sh) in one view.
inline long off1(long i, int nd, const shape_t sh, const view_t v) {
    if (nd == 1) return v.off + i * v.s[0];  // collapsed (e.g. contiguous): no division
    long o = v.off;
    for (int d = nd - 1; d >= 1; --d) {
        long q = i / sh.n[d];
        o += (i - q * sh.n[d]) * v.s[d];
        i = q;
    }
    // i < sh.n[0] is the outermost index: no division (a 64-bit division costs tens of
    // cycles on a CPU; a broadcast multiply of rank 2 divided per element and operand)
    return o + i * v.s[0];
}

// Offsets of the i-th element in two views of the same shape.
inline void off2(long i, int nd, const shape_t sh, const view_t a, const view_t b,
                 long *oa, long *ob) {
    if (nd == 1) {
        *oa = a.off + i * a.s[0];
        *ob = b.off + i * b.s[0];
        return;
    }
    long pa = a.off, pb = b.off;
    for (int d = nd - 1; d >= 1; --d) {
        long q = i / sh.n[d];
        long c = i - q * sh.n[d];
        pa += c * a.s[d];
        pb += c * b.s[d];
        i = q;
    }
    *oa = pa + i * a.s[0];  // the outermost index: no division (see off1)
    *ob = pb + i * b.s[0];
}

// Offsets of the i-th element in three views of the same shape.
inline void off3(long i, int nd, const shape_t sh, const view_t a, const view_t b,
                 const view_t c, long *oa, long *ob, long *oc) {
    if (nd == 1) {
        *oa = a.off + i * a.s[0];
        *ob = b.off + i * b.s[0];
        *oc = c.off + i * c.s[0];
        return;
    }
    long pa = a.off, pb = b.off, pc = c.off;
    for (int d = nd - 1; d >= 1; --d) {
        long q = i / sh.n[d];
        long k = i - q * sh.n[d];
        pa += k * a.s[d];
        pb += k * b.s[d];
        pc += k * c.s[d];
        i = q;
    }
    *oa = pa + i * a.s[0];  // the outermost index: no division (see off1)
    *ob = pb + i * b.s[0];
    *oc = pc + i * c.s[0];
}

// Offsets in four views of the same shape.
inline void off4(long i, int nd, const shape_t sh, const view_t a, const view_t b,
                 const view_t c, const view_t e, long *oa, long *ob, long *oc, long *oe) {
    long pa = a.off, pb = b.off, pc = c.off, pe = e.off;
    for (int d = nd - 1; d >= 1; --d) {
        long q = i / sh.n[d];
        long k = i - q * sh.n[d];
        pa += k * a.s[d];
        pb += k * b.s[d];
        pc += k * c.s[d];
        pe += k * e.s[d];
        i = q;
    }
    *oa = pa + i * a.s[0];  // the outermost index: no division (see off1)
    *ob = pb + i * b.s[0];
    *oc = pc + i * c.s[0];
    *oe = pe + i * e.s[0];
}

#endif  // CONTIG

// OPM: the type the elementwise and activation kernels compute in (PyTorch's "opmath"):
// float for half (clgrad/ops/_util.py defines_of), so that a float16 result is rounded once,
// its intermediates neither rounded to half nor overflowing there; T for every other type.
#ifndef OPM
#define OPM T
#endif

// EXP_T(v): exp of a T (the kernel file's element type), for the sigmoid-like kernels. For
// float and half with POLY_EXP (clgrad/runtime/device.py sets it for PoCL's CPU
// device, whose exp is a scalar library call that stops the work-item loop from vectorising:
// SiLU on 8x96x16x16 took 1.9 ms there against 0.16 ms this way) it is plain arithmetic:
// n = round(x / ln 2) (the 1.5 * 2^23 trick, exact for |x| <= 150), r = x - n ln 2 in two
// parts (Cody-Waite), exp(r) on |r| <= ln 2 / 2 by Cephes expf's polynomial (<= 1 ulp against
// exp), times 2^n in two halves so results down to the denormals and up to overflow (inf) come
// out right; NaN passes through. Elsewhere (and for double) it is the built-in exp.
#if defined(POLY_EXP) && !defined(IS_DOUBLE)
inline float poly_expf(float x) {
    float xc = x < -104.0f ? -104.0f : x;  // exp(-104) is below the least denormal: 0
    xc = xc > 89.0f ? 89.0f : xc;          // exp(89) overflows: inf
    float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = xc - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    int k = (int)n, k1 = k >> 1, k2 = k - k1;
    float y = p * as_float((k1 + 127) << 23) * as_float((k2 + 127) << 23);
    return x != x ? x : y;
}
#define EXP_T(v) ((OPM)poly_expf((float)(v)))
#else
#define EXP_T(v) exp(v)
#endif

// (n, c, y, x) of element i of a contiguous (N, C, H, W) tensor (N implied).
inline void nchw_of(long i, long nc, long h, long w, long *n, long *c, long *y, long *x) {
    *x = i % w;
    i /= w;
    *y = i % h;
    i /= h;
    *c = i % nc;
    *n = i / nc;
}

#endif
