// kernels/reduce.cl — reductions over any set of dims of a strided view.
// Defines: T input type; ACC accumulator type; OUT output type; OP one of OP_SUM, OP_PROD,
// OP_MAX, OP_MIN; WG work-group size (power of two); ARG to also produce the index of the
// max/min (first occurrence on ties); ACC_FLOAT when ACC is a floating type.
// Geometry: output element o has a multi-index over the kept ("outer") dims; the reduced
// ("inner") dims are walked by j. The input offset is off1(o, outer) + off1(j, inner).
// Sums use Kahan compensation per work item, then a tree in local memory. WG == 1 (few
// reduced elements): each work item computes one output alone (o = its global id; the host
// launches work-groups of any size, the global size rounded up past no).
#include "common.h"

#if defined(OP_SUM)
#define INIT ((ACC)0)
#elif defined(OP_PROD)
#define INIT ((ACC)1)
#else
#define INIT ((ACC)0)  // max/min start from the first element seen (see `best`)
#define MINMAX 1
#endif

#if defined(OP_MAX)
#define BETTER(x, y) ((x) > (y) || isnan((float)(x)) && !isnan((float)(y)))
#elif defined(OP_MIN)
#define BETTER(x, y) ((x) < (y) || isnan((float)(x)) && !isnan((float)(y)))
#endif
// Equal, or both NaN: the lower index wins, so the first NaN is reported (PyTorch).
#define SAME(x, y) ((x) == (y) || isnan((float)(x)) && isnan((float)(y)))

#if WG > 1
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
#else
__kernel
#endif
void reduce(long no, int ndo, shape_t sho, __global OUT *out, view_t vout,
            long ni, int ndi, shape_t shi, __global const T *a, view_t va_outer,
            view_t va_inner, ACC scale, __global long *idx_out, view_t vidx) {
#if WG > 1
    __local ACC buf[WG];
#ifdef MINMAX
    __local long ibuf[WG];
#endif
    long o = get_group_id(0);
    int lid = get_local_id(0);
#else
    long o = get_global_id(0);
    const int lid = 0;
    if (o >= no) return;
#endif
    long base = off1(o, ndo, sho, va_outer);
    ACC acc = INIT;
#ifdef MINMAX
    long best = -1;
#endif
#if defined(OP_SUM)
    ACC comp = 0;
#endif
    for (long j = lid; j < ni; j += WG) {
        ACC x = (ACC)a[base + off1(j, ndi, shi, va_inner)];
#if defined(OP_SUM)
        ACC y = x - comp;
        ACC s = acc + y;
#ifdef ACC_FLOAT
        comp = isinf(s) ? (ACC)0 : (s - acc) - y;  // else inf - inf poisons the sum with NaN
#else
        comp = (s - acc) - y;
#endif
        acc = s;
#elif defined(OP_PROD)
        acc *= x;
#else
        if (best < 0 || BETTER(x, acc)) {
            acc = x;
            best = j;
        }
#endif
    }
#if WG == 1
    out[off1(o, ndo, sho, vout)] = (OUT)(acc * scale);
#ifdef ARG
    idx_out[off1(o, ndo, sho, vidx)] = best;
#endif
#else
    buf[lid] = acc;
#ifdef MINMAX
    ibuf[lid] = best;
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) {
#if defined(OP_SUM)
            buf[lid] += buf[lid + s];
#elif defined(OP_PROD)
            buf[lid] *= buf[lid + s];
#else
            ACC x = buf[lid + s];
            long jx = ibuf[lid + s];
            ACC y = buf[lid];
            long jy = ibuf[lid];
            if (jx >= 0 && (jy < 0 || BETTER(x, y) || (SAME(x, y) && jx < jy))) {
                buf[lid] = x;
                ibuf[lid] = jx;
            }
#endif
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        out[off1(o, ndo, sho, vout)] = (OUT)(buf[0] * scale);
#ifdef ARG
        idx_out[off1(o, ndo, sho, vidx)] = ibuf[0];
#endif
    }
#endif  // WG == 1
}

// Scatter g[o] into z at the position ARG reported: the gradient of max/min(dim) goes to the
// index returned.
__kernel void scatter_arg(long no, int ndo, shape_t sho, __global T *z, view_t vz_outer,
                          int ndi, shape_t shi, view_t vz_inner, __global const T *g, view_t vg,
                          __global const long *idx, view_t vidx) {
    long o = get_global_id(0);
    if (o >= no) return;
    long oz, og;
    off2(o, ndo, sho, vz_outer, vg, &oz, &og);
    long j = idx[off1(o, ndo, sho, vidx)];
    z[oz + off1(j, ndi, shi, vz_inner)] = g[og];
}

#if defined(RUNS) && defined(OP_SUM) && defined(ACC_FLOAT)
// reduce_runs: the sum of a CPU device (T == ACC, float or double). One work item (a
// work-group of one) per output o, as the WG == 1 form, but the reduced elements are walked as
// rows of the innermost reduced dim: the offset arithmetic is done once per row, and with
// IUNIT (that dim has stride 1) a row is summed 8 elements at a time into 8 Kahan-compensated
// partial sums (a T8 vector: SIMD lanes, no loop-carried latency per element). The work-group
// tree of `reduce` cost more than the sum on the CPU runtimes (SE block's mean over 16x16
// maps: 1.6 GB/s). The partial sums, less their compensations, are added at the end.
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define T8 CAT(T, 8)
#ifdef IS_DOUBLE_ACC
#define MASK8 long8
#else
#define MASK8 int8
#endif
__kernel void reduce_runs(long no, int ndo, shape_t sho, __global OUT *out, view_t vout,
                          long ni, int ndi, shape_t shi, __global const T *a,
                          view_t va_outer, view_t va_inner, ACC scale) {
    long o = get_global_id(0);
    if (o >= no) return;
    long base = off1(o, ndo, sho, va_outer);
    long len = shi.n[ndi - 1], si = va_inner.s[ndi - 1];
    long nrow = ni / len;
    T8 acc = (T8)0, comp = (T8)0;
    ACC sacc = 0, scomp = 0;
    for (long r = 0; r < nrow; ++r) {
        long p = base, q = r;
        for (int d = ndi - 2; d >= 0; --d) {
            long t = q / shi.n[d];
            p += (q - t * shi.n[d]) * va_inner.s[d];
            q = t;
        }
        long j = 0;
#ifdef IUNIT
        for (; j + 8 <= len; j += 8) {
            T8 y = vload8(0, a + p + j) - comp;
            T8 s = acc + y;
            comp = select((s - acc) - y, (T8)0, (MASK8)isinf(s));  // as reduce: no inf - inf
            acc = s;
        }
#endif
        for (; j < len; ++j) {
            ACC y = (ACC)a[p + j * si] - scomp;
            ACC s = sacc + y;
            scomp = isinf(s) ? (ACC)0 : (s - sacc) - y;
            sacc = s;
        }
    }
    acc -= comp;
    ACC total = (((acc.s0 + acc.s1) + (acc.s2 + acc.s3)) + ((acc.s4 + acc.s5) +
                 (acc.s6 + acc.s7))) + (sacc - scomp);
    out[off1(o, ndo, sho, vout)] = (OUT)(total * scale);
}
#endif
