// kernels/copy.cl — copy between any two strided views, converting the element type.
// Defines: S source type, D destination type, D_IS_BOOL when D holds bool (0/1); copy_runs
// also RUNS (the rank of its collapsed geometry) and UNIT (both last-dim strides are 1).
// Launch: 1-D; copy: one work item per element, copy_runs: see there. Each checks its bound.
#include "common.h"

__kernel void copy(long n, int nd, shape_t sh, __global D *out, view_t vo,
                   __global const S *a, view_t va) {
    long i = get_global_id(0);
    if (i >= n) return;
    long oo, oa;
    off2(i, nd, sh, vo, va, &oo, &oa);
#ifdef D_IS_BOOL
    out[oo] = (a[oa] != (S)0) ? 1 : 0;
#else
    out[oo] = (D)a[oa];
#endif
}

// copy_runs: the copy for CPU devices, one work item per run of about `run` elements of a
// collapsed strided geometry (RUNS dims, a define): the offset arithmetic (a division per dim)
// is done once per row of the last dim instead of once per element, and with UNIT (both
// last-dim strides 1) a row is a plain unit-stride loop the compiler vectorises. A row longer
// than `run` is split into nrun runs (work item w copies run w % nrun of row w / nrun); with
// nrun == 1, work item w copies the whole rows [w * rpw, (w + 1) * rpw). Launch: 1-D, `total`
// work items (padded; each checks its bound).
#ifdef RUNS
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define CONVERT16(v) CAT(convert_, CAT(D, 16))(v)
#ifdef D_IS_BOOL
#define CONVERT(v) (((v) != (S)0) ? 1 : 0)
#else
#define CONVERT(v) ((D)(v))
#endif
__kernel void copy_runs(long total, long rows, long inner, long rpw, long run, long nrun,
                        shape_t sh, __global D *out, view_t vo, __global const S *a,
                        view_t va) {
    long w = get_global_id(0);
    if (w >= total) return;
    long r0, r1, j0, len;
    if (nrun > 1) {
        r0 = w / nrun;
        r1 = r0 + 1;
        j0 = (w - r0 * nrun) * run;
        len = min(run, inner - j0);
    } else {
        r0 = w * rpw;
        r1 = min(rows, r0 + rpw);
        j0 = 0;
        len = inner;
    }
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
#if !defined(D_IS_BOOL) && !defined(LOOP_VECTORIZER)
        // 16 at a time by hand: Intel's CPU compiler vectorises across work items, not the
        // loops inside one (PoCL's does: LOOP_VECTORIZER, its scalar loop is faster)
        for (; j + 16 <= len; j += 16) vstore16(CONVERT16(vload16(0, s + j)), 0, o + j);
#endif
        for (; j < len; ++j) o[j] = CONVERT(s[j]);
#else
        for (long j = 0; j < len; ++j) out[oo + j * so] = CONVERT(a[oa + j * sa]);
#endif
    }
}
#endif  // RUNS
