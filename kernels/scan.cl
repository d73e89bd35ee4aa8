// kernels/scan.cl — inclusive scans along one dim: one work item per row walks the row in
// order (rows run in parallel). Sums are Kahan-compensated, so a float32 cumsum of many small
// terms stays within float32 rounding of the exact running sum.
// Defines: T element type; ACC accumulator type; OP_SUM or OP_PROD; REVERSE scans from the
// end of the row (the backward of cumsum).
// Geometry: row o starts at off1(o, outer view) in x and in out; elements are sx / so apart.
#include "common.h"

__kernel void scan(long rows, long n, int ndo, shape_t sho,
                   __global T *out, view_t vo, long so,
                   __global const T *x, view_t vx, long sx) {
    long o = get_global_id(0);
    if (o >= rows) return;
    long bx = off1(o, ndo, sho, vx);
    long bo = off1(o, ndo, sho, vo);
#ifdef OP_SUM
    ACC acc = 0, comp = 0;
#else
    ACC acc = 1;
#endif
    for (long t = 0; t < n; ++t) {
#ifdef REVERSE
        long j = n - 1 - t;
#else
        long j = t;
#endif
        ACC v = (ACC)x[bx + j * sx];
#ifdef OP_SUM
        ACC y = v - comp;
        ACC s = acc + y;
        comp = (s - acc) - y;
        acc = s;
#else
        acc *= v;
#endif
        out[bo + j * so] = (T)acc;
    }
}

// Gradient of cumprod, exact when x holds zeros (no division): one work item per element,
//   grad[i] = sum_{j >= i} g[j] * prod_{k <= j, k != i} x[k]
// O(n) per element. Same geometry as scan, plus g's row view.
__kernel void cumprod_grad(long total, long n, int ndo, shape_t sho,
                           __global T *out, view_t vo, long so,
                           __global const T *x, view_t vx, long sx,
                           __global const T *g, view_t vg, long sg) {
    long e = get_global_id(0);
    if (e >= total) return;
    long o = e / n;
    long i = e - o * n;
    long bx = off1(o, ndo, sho, vx);
    long bg = off1(o, ndo, sho, vg);
    ACC before = 1;
    for (long k = 0; k < i; ++k) before *= (ACC)x[bx + k * sx];
    ACC q = before, acc = (ACC)g[bg + i * sg] * q;
    for (long j = i + 1; j < n; ++j) {
        q *= (ACC)x[bx + j * sx];
        acc += (ACC)g[bg + j * sg] * q;
    }
    out[off1(o, ndo, sho, vo) + i * so] = (T)acc;
}

// cummax (CMP_GE) / cummin (CMP_LE): the running extreme along the row and the index where it
// was last reached: ties take the later index; from the first NaN on the value is NaN and the
// index follows each new NaN (PyTorch's cummax/cummin). ind is int64, with its own view.
#ifdef IS_FLOAT
#define SCAN_NAN(v) isnan(v)
#else
#define SCAN_NAN(v) 0
#endif
#ifdef CMP_GE
#define BETTER(v, b) ((v) >= (b))
#else
#define BETTER(v, b) ((v) <= (b))
#endif
__kernel void scan_arg(long rows, long n, int ndo, shape_t sho,
                       __global T *out, view_t vo, long so,
                       __global long *ind, view_t vi, long si,
                       __global const T *x, view_t vx, long sx) {
    long o = get_global_id(0);
    if (o >= rows) return;
    long bx = off1(o, ndo, sho, vx);
    long bo = off1(o, ndo, sho, vo);
    long bi = off1(o, ndo, sho, vi);
    T best = x[bx];
    long at = 0;
    for (long j = 0; j < n; ++j) {
        T v = x[bx + j * sx];
        if (SCAN_NAN(v) || (!SCAN_NAN(best) && BETTER(v, best))) {
            best = v;
            at = j;
        }
        out[bo + j * so] = best;
        ind[bi + j * si] = at;
    }
}
