// kernels/copy.cl — copy between any two strided views, converting the element type.
// Defines: S source type, D destination type, D_IS_BOOL when D holds bool (0/1).
// Launch: 1-D, one work item per element; each kernel checks i < n.
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
