// kernels/reduce.cl — reductions over any set of dims of a strided view.
// Defines: T input type; ACC accumulator type; OUT output type; OP one of OP_SUM, OP_PROD,
// OP_MAX, OP_MIN; WG work-group size (power of two); ARG to also produce the index of the
// max/min (first occurrence on ties); ACC_FLOAT when ACC is a floating type.
// Geometry: output element o has a multi-index over the kept ("outer") dims; the reduced
// ("inner") dims are walked by j. The input offset is off1(o, outer) + off1(j, inner).
// Sums use Kahan compensation per work item, then a tree in local memory. WG == 1 (few
// reduced elements): each work item computes one output alone (o = its global id; the host
// launches work-groups of any size, the global size rounded up past no). SPLIT (GPUs, few
// outputs of many reduced elements): SPLIT work-groups per output write partial results,
// which a second `reduce` launch over them (T = OUT = ACC) combines and scales.
// DIV_SCALE: the result is divided by `scale` instead of multiplied (mean: the sum divided
// by the count, correctly rounded as PyTorch's CPU mean, sum then div_; times 1/n was one
// ulp off at times).
#include "common.h"

#ifdef DIV_SCALE
#define SCALED(a) ((a) / scale)
#else
#define SCALED(a) ((a) * scale)
#endif

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
    int lid = get_local_id(0);
#ifdef SPLIT
    // SPLIT work-groups per output (reduce.py's split): group (o, sp) reduces chunk sp of the
    // reduced elements into out[group id] (ACC, unscaled); a second launch reduces the parts
    long o = get_group_id(0) / SPLIT, sp = get_group_id(0) % SPLIT;
    long chunk = (ni + SPLIT - 1) / SPLIT, j0 = sp * chunk, j1 = min(ni, j0 + chunk);
#else
    long o = get_group_id(0), j0 = 0, j1 = ni;
#endif
#else
    long o = get_global_id(0), j0 = 0, j1 = ni;
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
    for (long j = j0 + lid; j < j1; j += WG) {
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
    out[off1(o, ndo, sho, vout)] = (OUT)SCALED(acc);
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
#ifdef SPLIT
        out[get_group_id(0)] = (OUT)buf[0];
#else
        out[off1(o, ndo, sho, vout)] = (OUT)SCALED(buf[0]);
#endif
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
    out[off1(o, ndo, sho, vout)] = (OUT)SCALED(total);
}
#endif

#if defined(COLS) && defined(OP_SUM)
// reduce_cols: a sum whose reduced dims lie outside a run of outputs that neighbour each other
// in memory (x.sum(0) of a (B, F) tensor, a (S, ...) stack of partial sums summed over S, any
// sum over dims strided wider than the outputs' innermost dim). The outputs are rows of a run
// of L along the innermost kept dim (x stride xs, out stride os) times R rows over the other
// kept dims (sho, va_outer / vout). A work item sums NV vectors of VW neighbouring outputs
// (VW == 1: one output) over the reduced elements, so neighbouring items (and a vector's
// lanes) read neighbouring addresses: vector loads on CPUs, coalesced reads on GPUs. The
// `reduce` kernel's work-group per output read each output's elements a stride apart instead
// (a (4096, 1000) float32 sum over dim 0: 45 ms on Intel's CPU runtime).
// Float sums are Kahan-compensated per lane, as reduce_runs. WR > 1 (GPUs): the WR work items
// of a work-group column take every WR-th reduced element, and their compensated partial
// sums are added as a tree in local memory (as `reduce`). WR == 1 (CPUs): one item walks the
// reduced elements as rows of the innermost reduced dim (offset arithmetic once per row).
// Defines: T, ACC, OUT (integer T: ACC long, exact sums), CONVERT (T is not ACC), VW (1, 4, 8
// or 16), NV, CB (reduced elements summed pairwise per compensated add), WO x WR (the
// work-group), XUNIT (xs == 1: vector loads), OVEC (os == 1 and
// OUT == ACC: vector stores), ACC_FLOAT, IS_DOUBLE_ACC.
// Launch: global (ceil(L / (NV * VW)) rounded up to WO, R * WR), local (WO, WR).
#ifndef CAT
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#endif
#if VW == 1
#define AV ACC
#define TOACC(x) ((ACC)(x))
#else
#define AV CAT(ACC, VW)
#ifdef CONVERT
#define TOACC(x) CAT(convert_, AV)(x)
#else
#define TOACC(x) (x)
#endif
// under-aligned vector types, not vloadN/vstoreN: PoCL calls those built-ins per element
// (as kernels/conv_pw_cpu.cl)
#ifdef __clang__
typedef T TVU __attribute__((ext_vector_type(VW), aligned(sizeof(T))));
typedef OUT OVU __attribute__((ext_vector_type(VW), aligned(sizeof(OUT))));
#define LOADX(p) TOACC(*(__global const TVU *)(p))
#define STOREO(v, p) (*(__global OVU *)(p) = (v))
#else
#define LOADX(p) TOACC(CAT(vload, VW)(0, p))
#define STOREO(v, p) CAT(vstore, VW)(v, 0, p)
#endif
#endif
#if defined(ACC_FLOAT) && VW == 1
#define NOT_INF(c, s) (isinf(s) ? (ACC)0 : (c))
#elif defined(ACC_FLOAT) && defined(IS_DOUBLE_ACC)
#define NOT_INF(c, s) select((c), (AV)0, (CAT(long, VW))isinf(s))
#elif defined(ACC_FLOAT)
#define NOT_INF(c, s) select((c), (AV)0, (CAT(int, VW))isinf(s))
#endif
#define NB (NV * VW)

// NV vectors of x (outputs i0 .. i0 + NB - 1 of the run) at each of the cnt reduced elements
// p, p + step, ..., summed pairwise, then added into acc, Kahan-compensated by comp for floats
// (inf: no compensation, else inf - inf would be NaN). A float sum of any n elements, cnt =
// CB = 8 at a time, is so within about 5 eps of the sum of magnitudes (3 from the pairwise
// blocks, 2 from the compensated sum), as reduce_runs' (Kahan per lane, a pairwise tree of 8
// lanes), at a compensation per 8 elements (Kahan per element cost more than the reads).
// VECX (XUNIT, VW > 1): vector loads, outputs i0 + NB <= L (the caller's; cols_tail sums the
// rest); else elements gathered one by one, lanes past L reading output L - 1. (A gather
// path beside the vector loads, even untaken, made Intel's runtime 1.4x slower.)
#if defined(XUNIT) && VW > 1
#define VECX 1
#endif
#define CB_LEVELS ((CB > 1) + (CB > 2) + (CB > 4) + (CB > 8))  // of the pairwise tree
__attribute__((always_inline)) inline void cols_add(AV *acc, AV *comp, __global const T *a,
                                                    long p, long step, const int cnt, long i0,
                                                    long L, long xs) {
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        AV x[CB];
#pragma unroll
        for (int e = 0; e < cnt; ++e) {
            const long pe = p + e * step;
#if defined(VECX)
            x[e] = LOADX(a + pe + i0 + v * VW);
#elif VW == 1
            x[e] = (ACC)a[pe + min(i0 + v, L - 1) * xs];
#else
            union { AV v; ACC s[VW]; } t;
#pragma unroll
            for (int k = 0; k < VW; ++k)
                t.s[k] = (ACC)a[pe + min(i0 + v * VW + k, L - 1) * xs];
            x[e] = t.v;
#endif
        }
#pragma unroll
        for (int lv = 0; lv < CB_LEVELS; ++lv)  // (a constant trip count: unrolled)
#pragma unroll
            for (int e = 0; e + (1 << lv) < cnt; e += 2 << lv) x[e] += x[e + (1 << lv)];
#ifdef ACC_FLOAT
        AV y = x[0] - comp[v];
        AV s = acc[v] + y;
        comp[v] = NOT_INF((s - acc[v]) - y, s);
        acc[v] = s;
#else
        acc[v] += x[0];
#endif
    }
}

// The len elements p, p + step, ... added into acc (CB at a time, then the rest).
#define COLS_ROW() do { \
        long j = 0; \
        for (; j + CB <= len; j += CB) \
            cols_add(acc, comp, a, p + j * step, step, CB, i0, L, xs); \
        for (; j < len; ++j) cols_add(acc, comp, a, p + j * step, step, 1, i0, L, xs); \
    } while (0)

// The offset of reduced row q0 (rows of the innermost reduced dim) from p.
inline long cols_row(long p, long q, int ndi, const shape_t shi, const view_t va_inner) {
    for (int d = ndi - 2; d >= 0; --d) {
        long t = q / shi.n[d];
        p += (q - t * shi.n[d]) * va_inner.s[d];
        q = t;
    }
    return p;
}

#ifdef VECX
// Outputs i0 .. L - 1 (fewer than NB: a run's last block) one at a time, scalar.
inline void cols_tail(__global OUT *out, long po, long os, __global const T *a, long pa,
                      long i0, long L, long xs, long nrow, long len, long step, int ndi,
                      const shape_t shi, const view_t va_inner, ACC scale) {
    for (long i = i0; i < L; ++i) {
        ACC acc = 0, comp = 0;
        for (long q0 = 0; q0 < nrow; ++q0) {
            const long p = cols_row(pa, q0, ndi, shi, va_inner) + i;
            for (long j = 0; j < len; ++j) {
#ifdef ACC_FLOAT
                ACC y = (ACC)a[p + j * step] - comp;
                ACC s = acc + y;
                comp = isinf(s) ? (ACC)0 : (s - acc) - y;
                acc = s;
#else
                acc += (ACC)a[p + j * step];
#endif
            }
        }
        out[po + i * os] = (OUT)SCALED(acc - comp);
    }
}
#endif

// out[po + (i0 .. i0 + NB - 1) * os] = SCALED(acc) (outputs up to L)
__attribute__((always_inline)) inline void cols_store(__global OUT *out, long po, long os,
                                                      AV *acc, ACC scale, long i0, long L,
                                                      int full) {
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        AV y = SCALED(acc[v]);
#if defined(OVEC) && VW > 1
        if (full) {
            STOREO(y, out + po + i0 + v * VW);
            continue;
        }
#endif
#if VW == 1
        if (i0 + v < L) out[po + (i0 + v) * os] = (OUT)y;
#else
        union { AV v; ACC s[VW]; } t;
        t.v = y;
        for (int k = 0; k < VW; ++k)
            if (i0 + v * VW + k < L) out[po + (i0 + v * VW + k) * os] = (OUT)t.s[k];
#endif
    }
}

__kernel __attribute__((reqd_work_group_size(WO, WR, 1)))
void reduce_cols(long L, long nblk, int ndo, shape_t sho, __global const T *a,
                 view_t va_outer, long xs, __global OUT *out, view_t vout, long os, long ni,
                 int ndi, shape_t shi, view_t va_inner, ACC scale) {
    const long r = get_group_id(1);
    const long pa = off1(r, ndo, sho, va_outer), po = off1(r, ndo, sho, vout);
    AV acc[NV], comp[NV];
#if WR == 1
    // nblk blocks of NB outputs, one after the other (an item's work outweighs its overhead)
    const long len = ni ? shi.n[ndi - 1] : 1, step = va_inner.s[ndi - 1];
    const long nrow = ni / len;
    for (long b = 0; b < nblk; ++b) {
        const long i0 = (get_global_id(0) * nblk + b) * NB;
        if (i0 >= L) return;
        const int full = i0 + NB <= L;
#pragma unroll
        for (int v = 0; v < NV; ++v) acc[v] = comp[v] = (AV)0;
#ifdef VECX
        if (!full) {  // the run's last block (so the item's last)
            cols_tail(out, po, os, a, pa, i0, L, xs, nrow, len, step, ndi, shi, va_inner,
                      scale);
            return;
        }
#endif
        for (long q0 = 0; q0 < nrow; ++q0) {
            const long p = cols_row(pa, q0, ndi, shi, va_inner);
            COLS_ROW();
        }
#pragma unroll
        for (int v = 0; v < NV; ++v) acc[v] -= comp[v];
        cols_store(out, po, os, acc, scale, i0, L, full);
    }
#else
    // one block (nblk == 1, VW == NV == 1: the host's choice); a tree over the WR partial
    // sums of each output
    __local ACC buf[WR][WO];
    const long i0 = get_global_id(0) * NB;
    const int full = i0 + NB <= L;
    acc[0] = comp[0] = (AV)0;
    for (long j = get_local_id(1); j < ni; j += WR)
        cols_add(acc, comp, a, pa + off1(j, ndi, shi, va_inner), 0, 1, i0, L, xs);
    const int l0 = get_local_id(0), l1 = get_local_id(1);
    buf[l1][l0] = acc[0] - comp[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WR / 2; s > 0; s >>= 1) {
        if (l1 < s) buf[l1][l0] += buf[l1 + s][l0];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l1 == 0 && i0 < L) {
        acc[0] = buf[0][l0];
        cols_store(out, po, os, acc, scale, i0, L, full);
    }
#endif
}
#endif
