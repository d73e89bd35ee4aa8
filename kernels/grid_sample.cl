// kernels/grid_sample.cl — grid_sample of (N, C, H, W) strided views at the points of a
// (N, OH, OW, 2) grid of normalised (x, y) in [-1, 1], and its backward.
// Defines: T element type (float or double); IS_FLOAT, IS_DOUBLE (atomic.h).
// Geometry: ugeom_t n, c, h, w of the input; oh, ow of the grid. Tensor arguments are (data,
// view_t) whose view holds the offset and the strides of N, C, H, W (input, output gradient)
// or N, OH, OW, 2 (grid); outputs are contiguous.
// Arguments: mode 0 bilinear, 1 nearest; padding 0 zeros, 1 border, 2 reflection; align 0/1.
// Launch: 1-D, one work item per grid point (n, oy, ox), looping over the channels; each checks
// i < total. The input gradient is a scatter-add (atomic.h: order, so last bits, may vary);
// the grid gradient is written once per point. Source coordinates, weights and their
// gradients are PyTorch's (aten/src/ATen/native/GridSampler.h).
#include "common.h"
#include "geom.h"
#include "atomic.h"

// [-1, 1] -> pixel coordinates; *mult = d(pixel) / d(normalised).
inline T unnormalize(T coord, long size, int align, T *mult) {
    if (align) {
        *mult = (T)(size - 1) / (T)2;
        return (coord + (T)1) / (T)2 * (T)(size - 1);
    }
    *mult = (T)size / (T)2;
    return ((coord + (T)1) * (T)size - (T)1) / (T)2;
}

// Clamp to [0, size - 1], NaN to 0 (PyTorch's CPU clip_coordinates: clamp_min(0, in) keeps
// the 0 where in is NaN); *g the derivative (0 at and beyond the bounds, as PyTorch).
inline T clip_grad(T in, long size, T *g) {
    T hi = (T)(size - 1);
    if (!(in > (T)0)) {
        *g = (T)0;
        return (T)0;
    }
    if (in >= hi) {
        *g = (T)0;
        return hi;
    }
    *g = (T)1;
    return in;
}

// Reflect into [twice_low / 2, twice_high / 2]; *g the derivative (+1 or -1). PyTorch's CPU
// reflect_coordinates (GridSamplerKernel.cpp): |in - low| folded by twice the span, so a
// NaN or infinite coordinate gives NaN (then clip_grad's 0).
inline T reflect_grad(T in, long twice_low, long twice_high, T *g) {
    if (twice_low == twice_high) {
        *g = (T)0;
        return (T)0;
    }
    T lo = (T)twice_low / (T)2, twice_span = (T)(twice_high - twice_low);
    T d = in - lo;
    T a = fabs(d);
    T extra = a - trunc(a / twice_span) * twice_span;
    T reflected = twice_span - extra;
    int flip = extra > reflected;
    *g = (flip != (d < (T)0)) ? (T)-1 : (T)1;
    return (flip ? reflected : extra) + lo;
}

// The source pixel coordinate of normalised coord along an axis of size pixels, with padding;
// *mult its derivative. With 'zeros' a NaN or infinite coordinate stays so (its weights are
// NaN, as PyTorch's); 'border' and 'reflection' clip it into the input (NaN to 0).
inline T source(T coord, long size, int padding, int align, T *mult) {
    T m, g1 = (T)1, g2 = (T)1;
    T c = unnormalize(coord, size, align, &m);
    if (padding == 2)
        c = align ? reflect_grad(c, 0, 2 * (size - 1), &g1)
                  : reflect_grad(c, -1, 2 * size - 1, &g1);
    if (padding != 0) c = clip_grad(c, size, &g2);
    *mult = m * g1 * g2;
    return c;
}

// A pixel index from a whole-valued coordinate: out of bounds (-100) for a NaN, infinite or
// huge one (PyTorch's safe_downgrade_to_int_range; its masks skip such pixels).
inline long pixel(T v) {
    return fabs(v) <= (T)2147483647 ? (long)v : -100;
}

inline int inside(long y, long x, long h, long w) {
    return y >= 0 && y < h && x >= 0 && x < w;
}

// x[n, c, y, x] or 0 outside the input.
inline T pix(__global const T *x, const view_t v, long n, long c, long y, long xx, long h,
             long w) {
    return inside(y, xx, h, w) ? x[at4(v, n, c, y, xx)] : (T)0;
}

__kernel void grid_fwd(long total, ugeom_t g, __global T *out, __global const T *x, view_t vx,
                       __global const T *grid, view_t vg, int mode, int padding, int align) {
    long i = get_global_id(0);
    if (i >= total) return;
    long ox = i % g.ow, t = i / g.ow, oy = t % g.oh, n = t / g.oh;
    T mx, my;
    T ix = source(grid[at4(vg, n, oy, ox, 0)], g.w, padding, align, &mx);
    T iy = source(grid[at4(vg, n, oy, ox, 1)], g.h, padding, align, &my);
    long plane = g.oh * g.ow, o = n * g.c * plane + oy * g.ow + ox;
    if (mode == 1) {
        long nx = pixel(rint(ix)), ny = pixel(rint(iy));
        for (long c = 0; c < g.c; ++c) out[o + c * plane] = pix(x, vx, n, c, ny, nx, g.h, g.w);
        return;
    }
    // the weights are NaN where the coordinate is NaN or infinite ('zeros' padding), as
    // PyTorch's; the pixels of such a point are out of bounds
    T fx = floor(ix), fy = floor(iy);
    long x0 = pixel(fx), y0 = pixel(fy);
    T e = (fx + (T)1) - ix, wst = ix - fx, s = (fy + (T)1) - iy, nth = iy - fy;
    for (long c = 0; c < g.c; ++c)
        out[o + c * plane] = pix(x, vx, n, c, y0, x0, g.h, g.w) * e * s +
                             pix(x, vx, n, c, y0, x0 + 1, g.h, g.w) * wst * s +
                             pix(x, vx, n, c, y0 + 1, x0, g.h, g.w) * e * nth +
                             pix(x, vx, n, c, y0 + 1, x0 + 1, g.h, g.w) * wst * nth;
}

// gx += the share of go at input pixel (y, x), when inside (gx contiguous (N, C, H, W)).
inline void add_at(__global T *gx, ugeom_t g, long n, long c, long y, long x, T v) {
    if (inside(y, x, g.h, g.w)) atomic_add_T(gx + ((n * g.c + c) * g.h + y) * g.w + x, v);
}

// want_x: accumulate the input gradient into gx (zero-filled); want_grid: write the grid
// gradient ggrid (contiguous (N, OH, OW, 2)). x is read only for the grid gradient.
__kernel void grid_bwd(long total, ugeom_t g, __global T *gx, __global T *ggrid,
                       __global const T *gy, view_t vgy, __global const T *x, view_t vx,
                       __global const T *grid, view_t vg, int mode, int padding, int align,
                       int want_x, int want_grid) {
    long i = get_global_id(0);
    if (i >= total) return;
    long ox = i % g.ow, t = i / g.ow, oy = t % g.oh, n = t / g.oh;
    T mx, my;
    T ix = source(grid[at4(vg, n, oy, ox, 0)], g.w, padding, align, &mx);
    T iy = source(grid[at4(vg, n, oy, ox, 1)], g.h, padding, align, &my);
    if (mode == 1) {
        long nx = pixel(rint(ix)), ny = pixel(rint(iy));
        for (long c = 0; c < g.c && want_x; ++c)
            add_at(gx, g, n, c, ny, nx, gy[at4(vgy, n, c, oy, ox)]);
        if (want_grid) {
            ggrid[2 * i] = (T)0;
            ggrid[2 * i + 1] = (T)0;
        }
        return;
    }
    T fx = floor(ix), fy = floor(iy);
    long x0 = pixel(fx), y0 = pixel(fy);
    T e = (fx + (T)1) - ix, wst = ix - fx, s = (fy + (T)1) - iy, nth = iy - fy;
    T gix = (T)0, giy = (T)0;
    for (long c = 0; c < g.c; ++c) {
        T go = gy[at4(vgy, n, c, oy, ox)];
        if (want_x) {
            add_at(gx, g, n, c, y0, x0, e * s * go);
            add_at(gx, g, n, c, y0, x0 + 1, wst * s * go);
            add_at(gx, g, n, c, y0 + 1, x0, e * nth * go);
            add_at(gx, g, n, c, y0 + 1, x0 + 1, wst * nth * go);
        }
        if (want_grid) {
            T nw = pix(x, vx, n, c, y0, x0, g.h, g.w), ne = pix(x, vx, n, c, y0, x0 + 1, g.h, g.w);
            T sw = pix(x, vx, n, c, y0 + 1, x0, g.h, g.w);
            T se = pix(x, vx, n, c, y0 + 1, x0 + 1, g.h, g.w);
            gix += go * ((ne - nw) * s + (se - sw) * nth);
            giy += go * ((sw - nw) * e + (se - ne) * wst);
        }
    }
    if (want_grid) {
        ggrid[2 * i] = gix * mx;
        ggrid[2 * i + 1] = giy * my;
    }
}
