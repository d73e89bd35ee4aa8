// kernels/copy.cl — copy between any two strided views, converting the element type.
// Defines: S source type, D destination type, D_IS_BOOL when D holds bool (0/1);
// D_VIA_LONG for a floating S into uchar (uint8 through int64, as PyTorch's
// static_cast_with_inter_type: -2.5 gives 254 on every device, where NVIDIA's direct
// conversion saturates to 0); S_BF16 / D_BF16 when S / D is bfloat16 (ushort bits,
// kernels/bf16.h: a conversion between it and another type goes through float; between two
// bfloat16 views the bits are copied); copy_runs also RUNS (the rank of its collapsed
// geometry) and UNIT (both last-dim strides are 1).
// Launch: 1-D; copy: one work item per element, copy_runs: see there. Each checks its bound.
#include "common.h"
#include "bf16.h"

// CVT(v): the source element v (type S) as a D
#if defined(S_BF16) && !defined(D_BF16)
#define SRC_VAL(v) bf16_to_float(v)
#else
#define SRC_VAL(v) (v)
#endif
#if defined(D_BF16) && !defined(S_BF16)
#define CVT(v) float_to_bf16((float)(v))
#elif defined(D_IS_BOOL)
#define CVT(v) ((SRC_VAL(v) != (S)0) ? 1 : 0)
#elif defined(D_VIA_LONG)
#define CVT(v) ((D)(long)SRC_VAL(v))
#else
#define CVT(v) ((D)SRC_VAL(v))
#endif

__kernel void copy(long n, int nd, shape_t sh, __global D *out, view_t vo,
                   __global const S *a, view_t va) {
    long i = get_global_id(0);
    if (i >= n) return;
    long oo, oa;
    off2(i, nd, sh, vo, va, &oo, &oa);
    out[oo] = CVT(a[oa]);
}

#ifdef CONTIG
// copy_x4 (CONTIG builds; GPUs take it for large dense copies, clgrad/ops/_util.py flat_plan,
// as elementwise.cl's _x4 forms): work item g copies elements g, g + G, g + 2G, g + 3G (G the
// global size), its four loads issued before its stores.
#define COPY_CONV(v) CVT(v)
__kernel void copy_x4(long n, int nd, shape_t sh, __global D *out, view_t vo,
                      __global const S *a, view_t va) {
    const long G = get_global_size(0), i0 = get_global_id(0), i1 = i0 + G, i2 = i1 + G,
               i3 = i2 + G;
    const S a0 = i0 < n ? a[va.off + i0] : (S)0, a1 = i1 < n ? a[va.off + i1] : (S)0,
            a2 = i2 < n ? a[va.off + i2] : (S)0, a3 = i3 < n ? a[va.off + i3] : (S)0;
    if (i0 < n) out[vo.off + i0] = COPY_CONV(a0);
    if (i1 < n) out[vo.off + i1] = COPY_CONV(a1);
    if (i2 < n) out[vo.off + i2] = COPY_CONV(a2);
    if (i3 < n) out[vo.off + i3] = COPY_CONV(a3);
}
#endif

// copy_runs: the copy for CPU devices, one work item per run of about `run` elements of a
// collapsed strided geometry (RUNS dims, a define): the offset arithmetic (a division per dim)
// is done once per row of the last dim instead of once per element, and with UNIT (both
// last-dim strides 1) a row is a plain unit-stride loop the compiler vectorises. A row longer
// than `run` is split into nrun runs (work item w copies run w % nrun of row w / nrun); with
// nrun == 1, work item w copies the whole rows [w * rpw, (w + 1) * rpw). Launch: 1-D, `total`
// work items (padded; each checks its bound).
#if defined(RUNS) || defined(CAT_SLOTS)
// What copy_runs and cat_runs share: the element conversion from source type ST, the hand-
// vectorised unit-stride row copy, and the rows [r0, r1) and the span [j0, j0 + len) of them
// that work item w copies (rows, inner, rpw, run, nrun: clgrad/ops/_util.py's
// copy_run_geometry).
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#ifdef D_IS_BOOL
#define CONVERT_FROM(v, ST) (((v) != (ST)0) ? 1 : 0)
#else
#define CONVERT_FROM(v, ST) ((D)(v))
#endif
#if !defined(D_IS_BOOL) && !defined(LOOP_VECTORIZER) && \
    (defined(S_BF16) == defined(D_BF16))
// 16 at a time by hand: Intel's CPU compiler vectorises across work items, not the loops
// inside one (PoCL's does: LOOP_VECTORIZER, its scalar loop is faster)
#define COPY_VEC16(o, s, j, len) \
    for (; j + 16 <= len; j += 16) vstore16(CAT(convert_, CAT(D, 16))(vload16(0, s + j)), 0, o + j);
#else
#define COPY_VEC16(o, s, j, len)
#endif
inline void run_span(long w, long rows, long inner, long rpw, long run, long nrun, long *r0,
                     long *r1, long *j0, long *len) {
    if (nrun > 1) {
        *r0 = w / nrun;
        *r1 = *r0 + 1;
        *j0 = (w - *r0 * nrun) * run;
        *len = min(run, inner - *j0);
    } else {
        *r0 = w * rpw;
        *r1 = min(rows, *r0 + rpw);
        *j0 = 0;
        *len = inner;
    }
}
#endif

#ifdef RUNS
#define CONVERT(v) CVT(v)
__kernel void copy_runs(long total, long rows, long inner, long rpw, long run, long nrun,
                        shape_t sh, __global D *out, view_t vo, __global const S *a,
                        view_t va) {
    long w = get_global_id(0);
    if (w >= total) return;
    long r0, r1, j0, len;
    run_span(w, rows, inner, rpw, run, nrun, &r0, &r1, &j0, &len);
    long so = vo.s[RUNS - 1], sa = va.s[RUNS - 1];
    for (long r = r0; r < r1; ++r) {
        long oo = vo.off + j0 * so, oa = va.off + j0 * sa, q = r;
#pragma unroll
        for (int d = RUNS - 2; d >= 0; --d) {
            long t = q / sh.n[d];
            long c = q - t * sh.n[d];
            oo += c * vo.s[d];
            oa += c * va.s[d];
            q = t;
        }
#ifdef UNIT
        __global D *o = out + oo;
        __global const S *s = a + oa;
        long j = 0;
        COPY_VEC16(o, s, j, len)
        for (; j < len; ++j) o[j] = CONVERT(s[j]);
#else
        for (long j = 0; j < len; ++j) out[oo + j * so] = CONVERT(a[oa + j * sa]);
#endif
    }
}
#endif  // RUNS

#ifdef CAT_SLOTS
// cat: the inputs of torch.cat (up to CAT_SLOTS = 8 of them, the slots) copied into their
// slices of the output in one launch (a launch per input cost 50-100 us of host time on a GPU:
// DenseNet's concatenations). Each slot has its own source type (defines S0 .. S7; an unused
// slot any) and its own geometry in `meta` (CAT_M longs a slot, __constant: the same for every
// item):
//   [0] the slot's first work item (the items of all slots counted in slot order), [1] the
//   rank nd of its collapsed geometry, [2] rows, [3] inner, [4] rpw, [5] run, [6] nrun (as
//   copy_runs' arguments), [7] 1: unit (both last-dim strides 1), 2 (cat_elems only): unit,
//   the input of the output's type, and every offset and stride a multiple of 4, so that a
//   work item copies 4 elements as one vector (of the integer type of the element's
//   size, CAT_BITS, a define: a bit copy), [8 .. 15] its shape,
//   [16] the output slice's offset, [17 .. 24] its strides, [25] the input's offset,
//   [26 .. 33] its strides; meta[CAT_SLOTS * CAT_M] = nslot, the slots in use.
// cat_elems (GPUs): a work item per element (per 4 for slots of kind 2: the index and slot
// arithmetic of an element held a cat of 4 x (128,32,32,32) floats at 35 % of an H100's copy
// bandwidth), neighbouring items neighbouring elements of one input (coalesced); cat_runs
// (CPUs): a work item per run of about COPY_RUN elements, as copy_runs. Launch: 1-D, `total` work items (padded; each checks its bound).
#define CAT_M 34

// Offsets in the output and the input of element e of a slot (row-major over its shape).
inline void cat_offsets(long e, __constant const long *m, long *oo, long *oa) {
    const int nd = (int)m[1];
    long o = m[16], s = m[25];
    for (int d = nd - 1; d >= 1; --d) {
        long q = e / m[8 + d];
        long c = e - q * m[8 + d];
        o += c * m[17 + d];
        s += c * m[26 + d];
        e = q;
    }
    *oo = o + e * m[17];
    *oa = s + e * m[26];
}

#define CAT_SLOT(k) \
inline void cat_elem_##k(long e, __constant const long *m, __global D *out, \
                         __global const S##k *a) { \
    long oo, oa; \
    if (m[7] == 2) { \
        cat_offsets(e * 4, m, &oo, &oa); \
        *(__global CAT(CAT_BITS, 4) *)(out + oo) = \
            *(__global const CAT(CAT_BITS, 4) *)(a + oa); \
        return; \
    } \
    cat_offsets(e, m, &oo, &oa); \
    out[oo] = CONVERT_FROM(a[oa], S##k); \
} \
inline void cat_run_##k(long w, __constant const long *m, __global D *out, \
                        __global const S##k *a) { \
    const long inner = m[3]; \
    long r0, r1, j0, len; \
    run_span(w, m[2], inner, m[4], m[5], m[6], &r0, &r1, &j0, &len); \
    const int nd = (int)m[1]; \
    const long so = m[17 + nd - 1], sa = m[26 + nd - 1]; \
    for (long r = r0; r < r1; ++r) { \
        long oo, oa; \
        cat_offsets(r * inner + j0, m, &oo, &oa); \
        if (m[7]) { \
            __global D *o = out + oo; \
            __global const S##k *s = a + oa; \
            long j = 0; \
            COPY_VEC16(o, s, j, len) \
            for (; j < len; ++j) o[j] = CONVERT_FROM(s[j], S##k); \
        } else { \
            for (long j = 0; j < len; ++j) \
                out[oo + j * so] = CONVERT_FROM(a[oa + j * sa], S##k); \
        } \
    } \
}
CAT_SLOT(0)
CAT_SLOT(1)
CAT_SLOT(2)
CAT_SLOT(3)
CAT_SLOT(4)
CAT_SLOT(5)
CAT_SLOT(6)
CAT_SLOT(7)

#define CAT_ARGS __global const S0 *a0, __global const S1 *a1, __global const S2 *a2, \
    __global const S3 *a3, __global const S4 *a4, __global const S5 *a5, \
    __global const S6 *a6, __global const S7 *a7
#define CAT_SWITCH(fn) \
    switch (k) { \
    case 0: fn##_0(i, m, out, a0); break; \
    case 1: fn##_1(i, m, out, a1); break; \
    case 2: fn##_2(i, m, out, a2); break; \
    case 3: fn##_3(i, m, out, a3); break; \
    case 4: fn##_4(i, m, out, a4); break; \
    case 5: fn##_5(i, m, out, a5); break; \
    case 6: fn##_6(i, m, out, a6); break; \
    default: fn##_7(i, m, out, a7); break; \
    }

// The slot of work item i: the last one starting at or before it.
inline int cat_slot(long i, __constant const long *meta) {
    const int nslot = (int)meta[CAT_SLOTS * CAT_M];
    int k = 0;
    while (k + 1 < nslot && meta[(k + 1) * CAT_M] <= i) ++k;
    return k;
}

// The two kernels differ in what a work item copies: an element (cat_elem) or a run (cat_run).
#define CAT_KERNEL(name, each)                                                                \
    __kernel void name(long total, __constant const long *meta, __global D *out, CAT_ARGS) { \
        long i = get_global_id(0);                                                          \
        if (i >= total) return;                                                             \
        const int k = cat_slot(i, meta);                                                    \
        __constant const long *m = meta + k * CAT_M;                                        \
        i -= m[0];                                                                          \
        CAT_SWITCH(each)                                                                    \
    }
CAT_KERNEL(cat_elems, cat_elem)
CAT_KERNEL(cat_runs, cat_run)
#endif  // CAT_SLOTS
