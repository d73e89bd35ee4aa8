// kernels/padding.cl — pad_fwd/pad_bwd (constant, reflect, replicate).
// Defines: T element type. pad_* take the full shapes.
// Launch: 1-D, global size rounded up to the work-group size; each kernel checks its bound.
#include "common.h"

#define EW_HEAD long i = get_global_id(0); if (i >= n) return;

// pad modes
#define PAD_CONSTANT 0
#define PAD_REFLECT 1
#define PAD_REPLICATE 2

// out (contiguous, shape osh) from x (view vx, shape ish) with lo[d] elements added before
// dim d (negative: cropped). Reflect and replicate map o to x's index o - lo, mirrored or
// clamped at x's own edges (PyTorch's map, also with a negative lo or hi); reflect needs
// lo, hi < size.
__kernel void pad_fwd(long n, int nd, shape_t osh, __global T *out, __global const T *x,
                      view_t vx, shape_t ish, shape_t lo, int mode, T value) {
    EW_HEAD
    long rem = i, off = vx.off;
    for (int d = nd - 1; d >= 0; --d) {
        long o = rem % osh.n[d];
        rem /= osh.n[d];
        long s = o - lo.n[d], size = ish.n[d];
        if (mode == PAD_REFLECT) {
            s = s < 0 ? -s : s;
            s = s >= size ? 2 * (size - 1) - s : s;
        } else if (mode == PAD_REPLICATE) {
            s = s < 0 ? 0 : s >= size ? size - 1 : s;
        } else if (s < 0 || s >= size) {
            out[i] = value;
            return;
        }
        off += s * vx.s[d];
    }
    out[i] = x[off];
}

// The output positions along one dim that read input position s: up to three ranges
// [a[k], b[k]] (empty when a > b). Returns the number of positions.
inline long pad_sources(long s, long size, long lo, long osize, int mode, long *a, long *b) {
    long o = s + lo;
    a[0] = o; b[0] = o;           // the element itself
    a[1] = 1; b[1] = 0;           // empty
    a[2] = 1; b[2] = 0;
    if (mode == PAD_REPLICATE) {
        if (s == 0) a[0] = 0;
        if (s == size - 1) b[0] = osize - 1;
    } else if (mode == PAD_REFLECT) {
        if (s >= 1 && s <= lo) a[1] = b[1] = lo - s;                       // left mirror
        long r = lo + 2 * (size - 1) - s;
        if (s <= size - 2) a[2] = b[2] = r;                                // right mirror
    }
    long cnt = 0;
    for (int k = 0; k < 3; ++k) {  // within the output: a negative lo or hi crops
        a[k] = max(a[k], 0L);
        b[k] = min(b[k], osize - 1);
        cnt += max(b[k] - a[k] + 1, 0L);
    }
    return cnt;
}

// gx[s] = sum of g over every output position that reads s: a gather, one work item per
// input element (gx contiguous, shape ish), so the sum order is fixed and no atomics are used.
__kernel void pad_bwd(long n, int nd, shape_t ish, __global T *gx, __global const T *g,
                      view_t vg, shape_t osh, shape_t lo, int mode) {
    EW_HEAD
    long a[MAXD][3], b[MAXD][3], cnt[MAXD];
    long rem = i, combos = 1;
    for (int d = nd - 1; d >= 0; --d) {
        long s = rem % ish.n[d];
        rem /= ish.n[d];
        cnt[d] = pad_sources(s, ish.n[d], lo.n[d], osh.n[d], mode, a[d], b[d]);
        combos *= cnt[d];
    }
    T acc = 0;
    for (long k = 0; k < combos; ++k) {
        long q = k, off = vg.off;
        for (int d = nd - 1; d >= 0; --d) {
            long m = q % cnt[d];
            q /= cnt[d];
            for (int r = 0; r < 3; ++r) {
                long len = max(b[d][r] - a[d][r] + 1, 0L);
                if (m < len) {
                    off += (a[d][r] + m) * vg.s[d];
                    break;
                }
                m -= len;
            }
        }
        acc += g[off];
    }
    gx[i] = acc;
}
