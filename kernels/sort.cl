// kernels/sort.cl — sorting along one dim; every kernel writes the int64 permutation only.
//   topk_insert:  k <= KCAP (small): one work item per row keeps the best k in private
//                 memory, O(n k) per row; also sorts whole rows of up to 32 elements.
//   sort_bitonic: one work-group per row, a bitonic network in local memory over the row
//                 padded to SORT_P (a power of two >= n, at most 2048): O(P log^2 P) compares.
//   sort_rank:    longer rows: one work item per element counts the elements that precede
//                 it, its position in the sorted row. O(n) per element, no barriers and no
//                 local memory, so any row length works on any device.
// Order: NaN is the largest value (PyTorch); ties are broken by the original index, so all
// kernels give the same (stable) permutation. DESC sorts descending (NaN first, as PyTorch).
// Defines: T element type; IS_FLOAT (NaN-aware compare); SORT_P and WG (sort_bitonic: padded
// row length and work-group size, powers of two, WG <= SORT_P / 2); KCAP (topk_insert).
// Geometry: row o starts at off1(o, outer view); its elements are `sx` apart. Indices are
// written at off1(o, index view) + rank * si, for rank < k (topk: k < n).
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

#ifdef SORT_P
// a strictly before b, with positions ia, ib: real elements (position < n) by value then
// position; padding (position >= n) after every real element.
inline int before_at(T a, int ia, T b, int ib, long n) {
    if (ia >= n || ib >= n) return ia < ib;
    if (BEFORE(a, b)) return 1;
    if (BEFORE(b, a)) return 0;
    return ia < ib;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sort_bitonic(long n, long k, int ndo, shape_t sho, __global const T *x, view_t vx,
                  long sx, __global long *idx, view_t vi, long si) {
    __local T key[SORT_P];
    __local int pos[SORT_P];
    long o = get_group_id(0);
    int lid = get_local_id(0);
    long base = off1(o, ndo, sho, vx);
    for (int j = lid; j < SORT_P; j += WG) {
        key[j] = j < n ? x[base + j * sx] : (T)0;
        pos[j] = j;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int size = 2; size <= SORT_P; size <<= 1) {
        for (int h = size >> 1; h > 0; h >>= 1) {
            for (int t = lid; t < SORT_P / 2; t += WG) {
                int i = (t / h) * 2 * h + (t % h);
                int l = i + h;
                T a = key[i], b = key[l];
                int ia = pos[i], ib = pos[l];
                int swap = (i & size) == 0 ? before_at(b, ib, a, ia, n)
                                           : before_at(a, ia, b, ib, n);
                if (swap) {
                    key[i] = b;
                    key[l] = a;
                    pos[i] = ib;
                    pos[l] = ia;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    long bi = off1(o, ndo, sho, vi);
    for (int j = lid; j < k; j += WG) idx[bi + j * si] = pos[j];
}
#endif

#ifdef KCAP
// topk for small k (k <= KCAP): one work item per row keeps the best k seen so far, in order,
// in private memory (insertion; an element equal to one kept comes after it, so ties keep
// index order as in the sorts above). O(n k) per row, rows in parallel.
__kernel void topk_insert(long rows, long n, long k, int ndo, shape_t sho,
                          __global const T *x, view_t vx, long sx,
                          __global long *idx, view_t vi, long si) {
    long o = get_global_id(0);
    if (o >= rows) return;
    T best[KCAP];
    long at[KCAP];
    long base = off1(o, ndo, sho, vx);
    long count = 0;
    for (long j = 0; j < n; ++j) {
        T a = x[base + j * sx];
        if (count == k && !BEFORE(a, best[k - 1])) continue;
        long p = count < k ? count++ : k - 1;  // the slot freed at the end
        while (p > 0 && BEFORE(a, best[p - 1])) {
            best[p] = best[p - 1];
            at[p] = at[p - 1];
            --p;
        }
        best[p] = a;
        at[p] = j;
    }
    long bi = off1(o, ndo, sho, vi);
    for (long j = 0; j < k; ++j) idx[bi + j * si] = at[j];
}
#endif

// searchsorted (PyTorch's torch.searchsorted / bucketize): one work item per value, a binary
// search of value i in row i / m of the sorted sequence (rows of n elements; row 0 for every
// value when rows == 1); sequence, values and output contiguous from their offsets. The
// comparisons are PyTorch's (cus_lower_bound / cus_upper_bound): left is the first j with
// seq[j] >= v, right the first with seq[j] > v, so a NaN value gives n. OUT_T: long or int.
#ifndef OUT_T
#define OUT_T long
#endif
__kernel void searchsorted(long total, long m, long n, long rows,
                           __global const T *seq, long so, __global const T *val, long vo,
                           __global OUT_T *out, long oo, int right) {
    long i = get_global_id(0);
    if (i >= total) return;
    long base = so + (rows == 1 ? 0 : (i / m) * n);
    T v = val[vo + i];
    long lo = 0, hi = n;
    while (lo < hi) {
        long mid = lo + ((hi - lo) >> 1);
        T s = seq[base + mid];
        if (right ? !(s > v) : !(s >= v)) lo = mid + 1;
        else hi = mid;
    }
    out[oo + i] = (OUT_T)lo;
}
