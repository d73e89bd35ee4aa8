// kernels/index.cl — scatter-add into (possibly overlapping) strided views, gathers, scatters.
// Defines: T element type; IS_FLOAT; IS_DOUBLE (64-bit compare-and-swap); IS_LONG; IS_INT.
// Launch: 1-D, one work item per source element.
#include "common.h"
#include "atomic.h"

// out[view(i)] += g[i], safe when several i address the same element.
__kernel void scatter_add(long n, int nd, shape_t sh, __global T *out, view_t vo,
                          __global const T *g, view_t vg) {
    long i = get_global_id(0);
    if (i >= n) return;
    long oo, og;
    off2(i, nd, sh, vo, vg, &oo, &og);
    atomic_add_T(out + oo, g[og]);
}

// Gather along one dim: out[..., j, ...] = a[..., idx[j], ...]. The view of `a` has the
// indexed dim's stride replaced by 0 and `sa` holds its real stride; `idx` is a view with
// stride only along that dim (and 0 elsewhere).
__kernel void gather_dim(long n, int nd, shape_t sh, __global T *out, view_t vo,
                         __global const T *a, view_t va, __global const long *idx, view_t vi,
                         long sa, long size) {
    long i = get_global_id(0);
    if (i >= n) return;
    long oo, oa, oi;
    off3(i, nd, sh, vo, va, vi, &oo, &oa, &oi);
    long k = idx[oi];
    if (k < 0) k += size;
    out[oo] = a[oa + k * sa];
}

// Scatter along one dim: out[..., idx[j], ...] (+)= g[..., j, ...]. STORE is the write:
// scatter_add_dim accumulates (the backward of gather_dim, repeated indices add up);
// scatter_dim assigns (index_put / setitem with an index tensor; duplicates: one wins).
#define SCATTER_DIM(name, STORE)                                                              \
__kernel void name(long n, int nd, shape_t sh, __global T *out, view_t vo,                   \
                   __global const T *g, view_t vg, __global const long *idx, view_t vi,      \
                   long so, long size) {                                                     \
    long i = get_global_id(0);                                                               \
    if (i >= n) return;                                                                      \
    long oo, og, oi;                                                                         \
    off3(i, nd, sh, vo, vg, vi, &oo, &og, &oi);                                              \
    long k = idx[oi];                                                                        \
    if (k < 0) k += size;                                                                    \
    STORE(out + oo + k * so, g[og]);                                                         \
}

#define ASSIGN(p, v) (*(p) = (v))
SCATTER_DIM(scatter_add_dim, atomic_add_T)
SCATTER_DIM(scatter_dim, ASSIGN)
