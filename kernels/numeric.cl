// kernels/numeric.cl — NaN/inf tests, NaN/inf replacement and closeness, elementwise over
// strided views (one work item per output element, as kernels/elementwise.cl).
// Defines: T a floating element type (the Python side handles integer inputs).
#include "common.h"

#define HEAD long i = get_global_id(0); if (i >= n) return;

#define PREDICATE(name, expr)                                                               \
__kernel void name(long n, int nd, shape_t sh, __global uchar *out, view_t vo,             \
                   __global const T *a, view_t va) {                                       \
    HEAD long oo, oa; off2(i, nd, sh, vo, va, &oo, &oa);                                   \
    T x = a[oa]; out[oo] = (expr) ? 1 : 0;                                                  \
}

PREDICATE(isnan_, isnan(x))
PREDICATE(isinf_, isinf(x))
PREDICATE(isfinite_, isfinite(x))

// nan_to_num: NaN -> nan_v, +inf -> posinf, -inf -> neginf, others unchanged.
__kernel void nan_to_num_(long n, int nd, shape_t sh, __global T *out, view_t vo,
                          __global const T *a, view_t va, T nan_v, T posinf, T neginf) {
    HEAD
    long oo, oa;
    off2(i, nd, sh, vo, va, &oo, &oa);
    T x = a[oa];
    out[oo] = isnan(x) ? nan_v : isinf(x) ? (x > (T)0 ? posinf : neginf) : x;
}

// isclose (PyTorch's rule): a == b, or both NaN when equal_nan, or
// |a - b| finite and <= atol + |rtol * b|.
__kernel void isclose_(long n, int nd, shape_t sh, __global uchar *out, view_t vo,
                       __global const T *a, view_t va, __global const T *b, view_t vb,
                       T rtol, T atol, int equal_nan) {
    HEAD
    long oo, oa, ob;
    off3(i, nd, sh, vo, va, vb, &oo, &oa, &ob);
    T x = a[oa], y = b[ob];
    T err = fabs(x - y);
    int close = x == y || (equal_nan && isnan(x) && isnan(y)) ||
                (isfinite(err) && err <= atol + fabs(rtol * y));
    out[oo] = close ? 1 : 0;
}
