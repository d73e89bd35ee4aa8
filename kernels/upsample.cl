// kernels/upsample.cl — nearest and bilinear resampling of (N, C, H, W) strided views.
// Defines: T element type (float or double).
// Geometry: n, c, h, w of the input; oh, ow of the output. Scales (input pixels per output
// pixel) come from the host as PyTorch computes them (area_pixel_compute_scale): nearest in
// float whatever T (PyTorch's nearest_idx), linear in T. Tensor arguments are (data, view_t)
// whose view holds the offset and the strides of N, C, H, W; outputs are contiguous.
// Backward kernels gather (one work item per input element over the outputs that read it):
// deterministic, no atomics. Launch: 1-D over the elements written; each checks i < total.
// Source indices are PyTorch's (aten/src/ATen/native/UpSample.h).
#include "common.h"
#include "geom.h"

// nearest: min(floor(dst * scale), in - 1); exact: min(floor((dst + 0.5) * scale), in - 1);
// identity when the sizes agree, dst >> 1 when doubling (PyTorch's shortcuts).
inline long near_src(long dst, long in, long out, float scale, int exact) {
    if (out == in) return dst;
    if (out == 2 * in) return dst >> 1;
    float s = exact ? ((float)dst + 0.5f) * scale : (float)dst * scale;
    return min((long)floor(s), in - 1);
}

__kernel void nearest_fwd(long total, ugeom_t g, __global T *out, __global const T *x,
                          view_t vx, float sh, float sw, int exact) {
    long i = get_global_id(0);
    if (i >= total) return;
    long n, c, oy, ox;
    nchw_of(i, g.c, g.oh, g.ow, &n, &c, &oy, &ox);
    out[i] = x[at4(vx, n, c, near_src(oy, g.h, g.oh, sh, exact),
                    near_src(ox, g.w, g.ow, sw, exact))];
}

// The outputs [lo, hi) that may read input index y along one axis (a superset, each checked).
inline void near_range(long y, long in, long out, float scale, long *lo, long *hi) {
    float inv = 1.0f / scale;
    *lo = max((long)floor((float)y * inv) - 2, 0L);
    *hi = y == in - 1 ? out : min((long)ceil((float)(y + 1) * inv) + 2, out);
}

__kernel void nearest_bwd(long total, ugeom_t g, __global T *gx, __global const T *gy,
                          view_t vg, float sh, float sw, int exact) {
    long i = get_global_id(0);
    if (i >= total) return;
    long n, c, y, xx;
    nchw_of(i, g.c, g.h, g.w, &n, &c, &y, &xx);
    long y0, y1, x0, x1;
    near_range(y, g.h, g.oh, sh, &y0, &y1);
    near_range(xx, g.w, g.ow, sw, &x0, &x1);
    T acc = 0;
    for (long oy = y0; oy < y1; ++oy) {
        if (near_src(oy, g.h, g.oh, sh, exact) != y) continue;
        for (long ox = x0; ox < x1; ++ox)
            if (near_src(ox, g.w, g.ow, sw, exact) == xx) acc += gy[at4(vg, n, c, oy, ox)];
    }
    gx[i] = acc;
}

// Linear source of output dst: i0, i1 = i0 + (i0 < in - 1) and the weight l1 of i1.
inline void lin_src(long dst, long in, T scale, int align, long *i0, long *i1, T *l1) {
    T s = align ? scale * (T)dst : max(scale * ((T)dst + (T)0.5f) - (T)0.5f, (T)0);
    long h0 = (long)s;
    *i0 = h0;
    *i1 = h0 + (h0 < in - 1 ? 1 : 0);
    *l1 = s - (T)h0;
}

// The weight with which output dst reads input y along one axis.
inline T lin_weight(long dst, long y, long in, T scale, int align) {
    long i0, i1;
    T l1;
    lin_src(dst, in, scale, align, &i0, &i1, &l1);
    return (i0 == y ? (T)1 - l1 : (T)0) + (i1 == y ? l1 : (T)0);
}

__kernel void linear_fwd(long total, ugeom_t g, __global T *out, __global const T *x,
                         view_t vx, T sh, T sw, int align) {
    long i = get_global_id(0);
    if (i >= total) return;
    long n, c, oy, ox;
    nchw_of(i, g.c, g.oh, g.ow, &n, &c, &oy, &ox);
    long y0, y1, x0, x1;
    T ly, lx;
    lin_src(oy, g.h, sh, align, &y0, &y1, &ly);
    lin_src(ox, g.w, sw, align, &x0, &x1, &lx);
    out[i] = ((T)1 - ly) * (((T)1 - lx) * x[at4(vx, n, c, y0, x0)] +
                            lx * x[at4(vx, n, c, y0, x1)]) +
             ly * (((T)1 - lx) * x[at4(vx, n, c, y1, x0)] + lx * x[at4(vx, n, c, y1, x1)]);
}

// The outputs [lo, hi) whose source lies within one pixel of y (a superset, each weighed).
inline void lin_range(long y, long out, T scale, int align, long *lo, long *hi) {
    if (scale <= (T)0) {
        *lo = 0;
        *hi = out;
        return;
    }
    T off = align ? (T)0 : (T)0.5f;
    *lo = max((long)floor(((T)(y - 1) + off) / scale - off) - 1, 0L);
    *hi = min((long)ceil(((T)(y + 1) + off) / scale - off) + 2, out);
}

__kernel void linear_bwd(long total, ugeom_t g, __global T *gx, __global const T *gy,
                         view_t vg, T sh, T sw, int align) {
    long i = get_global_id(0);
    if (i >= total) return;
    long n, c, y, xx;
    nchw_of(i, g.c, g.h, g.w, &n, &c, &y, &xx);
    long y0, y1, x0, x1;
    lin_range(y, g.oh, sh, align, &y0, &y1);
    lin_range(xx, g.ow, sw, align, &x0, &x1);
    T acc = 0;
    for (long oy = y0; oy < y1; ++oy) {
        T wy = lin_weight(oy, y, g.h, sh, align);
        if (wy == (T)0) continue;
        T row = 0;
        for (long ox = x0; ox < x1; ++ox) {
            T wx = lin_weight(ox, xx, g.w, sw, align);
            if (wx != (T)0) row += wx * gy[at4(vg, n, c, oy, ox)];
        }
        acc += wy * row;
    }
    gx[i] = acc;
}
