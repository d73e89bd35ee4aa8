// kernels/sort.cl — sorting along one dim by rank: one work item per element of a row counts
// the elements that precede it, which is its position in the sorted row. O(n) per element,
// no barriers and no local memory, so any row length works on any device (rows of a few
// thousand elements cost a few million compares each).
// Order: NaN is the largest value (PyTorch); ties keep their original order (stable), so the
// result is a permutation. DESC sorts descending (NaN first, as PyTorch).
// Defines: T element type; IS_FLOAT (NaN-aware compare).
// Geometry: the row of element (o, j) starts at off1(o, outer view); its elements are `sx`
// apart. Indices are written at off1(o, index view) + rank * si, for rank < k (topk: k < n).
#include "common.h"

#ifdef IS_FLOAT
#define IS_NAN(v) isnan(v)
#else
#define IS_NAN(v) 0
#endif

// a strictly before b in ascending order (NaN last)
#define LESS(a, b) (!IS_NAN(a) && (IS_NAN(b) || (a) < (b)))
#ifdef DESC
#define BEFORE(a, b) LESS(b, a)
#else
#define BEFORE(a, b) LESS(a, b)
#endif

__kernel void sort_rank(long total, long n, long k, int ndo, shape_t sho,
                        __global const T *x, view_t vx, long sx,
                        __global long *idx, view_t vi, long si) {
    long g = get_global_id(0);
    if (g >= total) return;
    long o = g / n;
    long j = g - o * n;
    long base = off1(o, ndo, sho, vx);
    T a = x[base + j * sx];
    long r = 0;
    for (long m = 0; m < n; ++m) {
        T b = x[base + m * sx];
        r += BEFORE(b, a) || (m < j && !BEFORE(a, b));
    }
    if (r < k) idx[off1(o, ndo, sho, vi) + r * si] = j;
}
