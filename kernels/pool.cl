// kernels/pool.cl — 2-D pooling of (N, C, H, W) strided views; one work item per element.
// Defines: T element type (half, float or double); ACC the sums' type (default T; the host's
// defines_of sets float for half: PyTorch sums half windows in float).
// Geometry: geom_t, by value: input N, C, H, W; output OH, OW; kernel kH, kW; stride sH, sW;
// padding pH, pW; dilation dH, dW. A tensor argument is (data, view_t) whose view holds the
// element offset and the strides of N, C, H, W (0 for N when the input is unbatched).
// Outputs and gradients are written contiguous; the max-pool indices (int64) are contiguous
// and hold y * W + x within the (H, W) plane, as PyTorch's.
// Backward kernels gather (one work item per input element, summing the outputs whose
// window holds it): deterministic, no atomics, no zero fill.
// Launch: 1-D over the elements written, each kernel checks i < total.
#include "common.h"
#include "geom.h"

#ifndef ACC
#define ACC T
#endif

// Max pooling is launched 3-D: dim 0 along a row (output columns for max_fwd, column groups
// for max_bwd), dim 1 over the rows (oh, or y), dim 2 over the planes (n, c). No work item
// divides a 64-bit value: a 1-D launch decomposing its index spent ~18 64-bit divisions per
// element (S4: 78 % of a training step on Intel's CPU runtime); here one 32-bit division per
// work item splits the plane into (n, c), uniform along dim 0.

// The max of each window; padding counts as -inf. Ties keep the first element (row-major),
// NaN wins (PyTorch's rule), so the gradient goes to exactly one element.
__kernel void max_fwd(geom_t g, __global T *out, __global long *idx, __global const T *x,
                      view_t vx) {
    long ow = get_global_id(0), oh = get_global_id(1);
    uint plane = get_global_id(2);
    if (ow >= g.ow || oh >= g.oh) return;
    uint n = plane / (uint)g.c;
    long c = plane - n * (uint)g.c, row = (long)plane * g.oh + oh;
    long y0 = oh * g.sh - g.ph, x0 = ow * g.sw - g.pw;
    long base = vx.off + n * vx.s[0] + c * vx.s[1];
    T best = -INFINITY;
    long bi = -1;
    for (long kh = 0; kh < g.kh; ++kh) {
        long y = y0 + kh * g.dh;
        if (y < 0 || y >= g.h) continue;
        for (long kw = 0; kw < g.kw; ++kw) {
            long xx = x0 + kw * g.dw;
            if (xx < 0 || xx >= g.w) continue;
            T v = x[base + y * vx.s[2] + xx * vx.s[3]];
            if (bi < 0 || v > best || isnan(v)) {
                best = v;
                bi = y * g.w + xx;
            }
        }
    }
    long o = row * g.ow + ow;
    out[o] = best;
    idx[o] = bi;
}

// grad_x[n, c, y, x] = sum of grad_out over the windows whose saved index is (y, x).
// Work item (grp, y, plane = (n, c)) writes the sw input columns x = grp * sw - pw + j,
// j < sw: x + pw = grp * sw + j, so its covering output columns are found by stepping down
// from grp without a division. The covering output rows depend on the row alone.
__kernel void max_bwd(long groups, geom_t g, __global T *gx, __global const T *gy, view_t vgy,
                      __global const long *idx) {
    long grp = get_global_id(0), y = get_global_id(1);
    uint plane = get_global_id(2);
    if (grp >= groups || y >= g.h) return;
    uint n = plane / (uint)g.c;
    long c = plane - n * (uint)g.c, row = (long)plane * g.h + y;
    long span_h = (g.kh - 1) * g.dh, span_w = (g.kw - 1) * g.dw;
    long num_h = y + g.ph;
    long oh_hi = min((long)((uint)num_h / (uint)g.sh), g.oh - 1);
    long oh_lo = num_h - span_h <= 0 ? 0 : (uint)(num_h - span_h + g.sh - 1) / (uint)g.sh;
    long gbase = vgy.off + n * vgy.s[0] + c * vgy.s[1];
    __global const long *pidx = idx + plane * g.oh * g.ow;
    for (long j = 0; j < g.sw; ++j) {
        long xx = grp * g.sw - g.pw + j;
        if (xx < 0 || xx >= g.w) continue;
        long me = y * g.w + xx;
        ACC acc = 0;
        for (long oh = oh_lo; oh <= oh_hi; ++oh) {
            long offh = num_h - oh * g.sh;
            if (g.dh != 1 && (uint)offh % (uint)g.dh) continue;
            for (long ow = min(grp, g.ow - 1); ow >= 0; --ow) {
                long offw = grp * g.sw + j - ow * g.sw;
                if (offw > span_w) break;
                if (g.dw != 1 && (uint)offw % (uint)g.dw) continue;
                if (pidx[oh * g.ow + ow] == me) acc += gy[gbase + oh * vgy.s[2] + ow * vgy.s[3]];
            }
        }
        gx[row * g.w + xx] = (T)acc;
    }
}

#ifdef TKH
// T v[TKH * TKW]: the window's elements (row-major) from plane px at rows y0.. and columns
// x0.., `fill` where the window is clipped (past y1 or x1), every load issued at once
#define LOAD_WINDOW(v, fill)                                                             \
    T v[TKH * TKW];                                                                    \
    _Pragma("unroll") for (int dy = 0; dy < TKH; ++dy)                                 \
    _Pragma("unroll") for (int dx = 0; dx < TKW; ++dx)                                 \
        v[dy * TKW + dx] = (y0 + dy < y1 && x0 + dx < x1)                              \
                               ? px[(y0 + dy) * vx.s[2] + (x0 + dx) * vx.s[3]] : (fill)
#endif

// The opening of the *_fwd_tiled kernels: this work item's output (ow, oh, plane), returning
// past the output's end; its window rows [y0, y1) and columns [x0, x1), clipped to the input
// (a window starts inside it); px, the input plane (n, c) of x.
#define TILED_WINDOW(g, x, vx)                                                    \
    long ow = get_global_id(0), oh = get_global_id(1);                          \
    uint plane = get_global_id(2);                                              \
    if (ow >= (g).ow || oh >= (g).oh) return;                                   \
    uint n = plane / (uint)(g).c;                                               \
    long c = plane - n * (uint)(g).c;                                           \
    long y0 = oh * (g).sh, x0 = ow * (g).sw;                                    \
    long y1 = min(y0 + (g).kh, (g).h), x1 = min(x0 + (g).kw, (g).w);            \
    __global const T *px = (x) + (vx).off + n * (vx).s[0] + c * (vx).s[1]

// max_fwd for windows that tile the input (kernel == stride, no padding, no dilation): the
// window starts inside the input, so it has a first element, and only a last (ceil_mode)
// window is clipped. Same tie and NaN rules as max_fwd.
__kernel void max_fwd_tiled(geom_t g, __global T *out, __global long *idx, __global const T *x,
                            view_t vx) {
    TILED_WINDOW(g, x, vx);
    T best = px[y0 * vx.s[2] + x0 * vx.s[3]];
    long bi = y0 * g.w + x0;
#ifdef TKH
    // TKH x TKW (the window, kernel == stride, a define: pool.py sets it for small windows):
    // every load of the window issued before the comparisons, in the same order as below
    LOAD_WINDOW(v, best);
#pragma unroll
    for (int dy = 0; dy < TKH; ++dy)
#pragma unroll
        for (int dx = 0; dx < TKW; ++dx) {
            T u = v[dy * TKW + dx];
            if ((dy | dx) && y0 + dy < y1 && x0 + dx < x1 && (u > best || isnan(u))) {
                best = u;
                bi = (y0 + dy) * g.w + x0 + dx;
            }
        }
#else
    for (long y = y0; y < y1; ++y) {
        for (long xx = x0; xx < x1; ++xx) {
            T v = px[y * vx.s[2] + xx * vx.s[3]];
            if (v > best || isnan(v)) {
                best = v;
                bi = y * g.w + xx;
            }
        }
    }
#endif
    long o = ((long)plane * g.oh + oh) * g.ow + ow;
    out[o] = best;
    idx[o] = bi;
}

// max_bwd for windows that tile the input (kernel == stride, no padding, no dilation): each
// input element lies in at most one window, so work item (ow, oh, plane) writes its own window
// (the gradient at the saved index, 0 elsewhere) plus the uncovered columns and rows past the
// last window. Reads are unit-stride along dim 0: no gathers.
__kernel void max_bwd_tiled(geom_t g, __global T *gx, __global const T *gy, view_t vgy,
                            __global const long *idx) {
    long ow = get_global_id(0), oh = get_global_id(1);
    uint plane = get_global_id(2);
    if (ow >= g.ow || oh >= g.oh) return;
    uint n = plane / (uint)g.c;
    long c = plane - n * (uint)g.c;
    long o = ((long)plane * g.oh + oh) * g.ow + ow;
    long bi = idx[o];
    T gv = gy[vgy.off + n * vgy.s[0] + c * vgy.s[1] + oh * vgy.s[2] + ow * vgy.s[3]];
    __global T *px = gx + (long)plane * g.h * g.w;
    long y1 = oh == g.oh - 1 ? g.h : min(oh * g.sh + g.kh, g.h);
    long x0 = ow * g.sw, x1 = ow == g.ow - 1 ? g.w : min(x0 + g.kw, g.w);
    for (long y = oh * g.sh; y < y1; ++y)
        for (long xx = x0; xx < x1; ++xx) px[y * g.w + xx] = y * g.w + xx == bi ? gv : (T)0;
}

// The divisor of output (oh, ow) of an average pool, and its window clipped to the input.
// PyTorch's rule: the padded window is clipped to [-pad, size + pad) for count_include_pad.
inline ACC avg_window(const geom_t g, long oh, long ow, long divisor, int include_pad,
                    long *y0, long *y1, long *x0, long *x1) {
    long h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
    long h1 = min(h0 + g.kh, g.h + g.ph), w1 = min(w0 + g.kw, g.w + g.pw);
    long pool = (h1 - h0) * (w1 - w0);
    h0 = max(h0, 0L);
    w0 = max(w0, 0L);
    h1 = min(h1, g.h);
    w1 = min(w1, g.w);
    *y0 = h0;
    *y1 = h1;
    *x0 = w0;
    *x1 = w1;
    if (divisor != 0) return (ACC)divisor;
    return (ACC)(include_pad ? pool : (h1 - h0) * (w1 - w0));
}

// The sum of the window rows [y0, y1) x columns [x0, x1) of plane px, in row-major order.
// With TKH x TKW (windows up to 4 x 4, a define: pool.py) its elements are all loaded before
// the sum, which runs in the same order.
inline ACC window_sum(__global const T *px, const view_t vx, long y0, long y1, long x0,
                      long x1) {
    ACC acc = 0;
#ifdef TKH
    LOAD_WINDOW(v, (T)0);
#pragma unroll
    for (int k = 0; k < TKH * TKW; ++k) acc += v[k];
#else
    for (long y = y0; y < y1; ++y)
        for (long xx = x0; xx < x1; ++xx) acc += px[y * vx.s[2] + xx * vx.s[3]];
#endif
    return acc;
}

// divisor: divisor_override, or 0 for none; include_pad: count_include_pad.
// Launch: (OW, OH, N*C) rounded up to the work-group, as max_fwd (no 64-bit divisions per
// item: the 1-D form's index arithmetic cost more than the window sums on CPUs).
__kernel void avg_fwd(geom_t g, __global T *out, __global const T *x, view_t vx, long divisor,
                      int include_pad) {
    long ow = get_global_id(0), oh = get_global_id(1);
    uint plane = get_global_id(2);
    if (ow >= g.ow || oh >= g.oh) return;
    uint n = plane / (uint)g.c;
    long c = plane - n * (uint)g.c;
    long o = ((long)plane * g.oh + oh) * g.ow + ow;
    long y0, y1, x0, x1;
    ACC div = avg_window(g, oh, ow, divisor, include_pad, &y0, &y1, &x0, &x1);
    if (y0 >= y1 || x0 >= x1) {
        out[o] = 0;
        return;
    }
    __global const T *px = x + vx.off + n * vx.s[0] + c * vx.s[1];
    out[o] = (T)(window_sum(px, vx, y0, y1, x0, x1) / div);
}

// avg_fwd for windows that tile the input (kernel == stride, no padding: each window starts
// inside the input, only a last (ceil_mode) one is clipped, and with no padding both divisor
// rules give the clipped window's size). Same loads and summation order as avg_fwd, without
// avg_window's 64-bit clipping arithmetic: 2x2 over (128,64,32,32) on Intel's CPU runtime
// 6.3-6.6 against 7.0-7.3 ms; on an H100 0.084 ms either way (67 % of the copy bandwidth).
__kernel void avg_fwd_tiled(geom_t g, __global T *out, __global const T *x, view_t vx,
                            long divisor, int include_pad) {
    TILED_WINDOW(g, x, vx);
    ACC div = divisor != 0 ? (ACC)divisor : (ACC)((int)(y1 - y0) * (int)(x1 - x0));
    out[((long)plane * g.oh + oh) * g.ow + ow] = (T)(window_sum(px, vx, y0, y1, x0, x1) / div);
}

// Outputs whose window covers input row y: oh*s - p <= y <= oh*s - p + k - 1 (every value
// here is non-negative and below 2^32 where divided: 32-bit divisions).
inline void covering(long y, long k, long s, long p, long nout, long *lo, long *hi) {
    long num = y + p - k + 1;
    *lo = num <= 0 ? 0 : (long)((uint)(num + s - 1) / (uint)s);
    *hi = min((long)((uint)(y + p) / (uint)s), nout - 1);
}

// Launch: (W, H, N*C) rounded up to the work-group; gx is a new contiguous (N, C, H, W).
__kernel void avg_bwd(geom_t g, __global T *gx, __global const T *gy, view_t vgy,
                      long divisor, int include_pad) {
    long xx = get_global_id(0), y = get_global_id(1);
    uint plane = get_global_id(2);
    if (xx >= g.w || y >= g.h) return;
    uint n = plane / (uint)g.c;
    long c = plane - n * (uint)g.c;
    long oh0, oh1, ow0, ow1;
    covering(y, g.kh, g.sh, g.ph, g.oh, &oh0, &oh1);
    covering(xx, g.kw, g.sw, g.pw, g.ow, &ow0, &ow1);
    __global const T *pg = gy + vgy.off + n * vgy.s[0] + c * vgy.s[1];
    ACC acc = 0;
    for (long oh = oh0; oh <= oh1; ++oh) {
        for (long ow = ow0; ow <= ow1; ++ow) {
            long y0, y1, x0, x1;
            ACC div = avg_window(g, oh, ow, divisor, include_pad, &y0, &y1, &x0, &x1);
            acc += pg[oh * vgy.s[2] + ow * vgy.s[3]] / div;
        }
    }
    gx[((long)plane * g.h + y) * g.w + xx] = (T)acc;
}

// avg_bwd for windows that tile the input (kernel == stride, no padding): each input element
// lies in at most one window, so work item (ow, oh, plane) writes its window (grad / divisor)
// plus the uncovered columns and rows past the last window (zeros), as max_bwd_tiled.
__kernel void avg_bwd_tiled(geom_t g, __global T *gx, __global const T *gy, view_t vgy,
                            long divisor, int include_pad) {
    long ow = get_global_id(0), oh = get_global_id(1);
    uint plane = get_global_id(2);
    if (ow >= g.ow || oh >= g.oh) return;
    uint n = plane / (uint)g.c;
    long c = plane - n * (uint)g.c;
    long y0, y1, x0, x1;
    ACC div = avg_window(g, oh, ow, divisor, include_pad, &y0, &y1, &x0, &x1);
    T gv = (T)(gy[vgy.off + n * vgy.s[0] + c * vgy.s[1] + oh * vgy.s[2] + ow * vgy.s[3]] / div);
    __global T *px = gx + (long)plane * g.h * g.w;
    long ye = oh == g.oh - 1 ? g.h : y1;
    long xe = ow == g.ow - 1 ? g.w : x1;
    for (long y = y0; y < ye; ++y)
        for (long xx = x0; xx < xe; ++xx) px[y * g.w + xx] = y < y1 && xx < x1 ? gv : (T)0;
}

// Adaptive average: output i pools [floor(i * H / OH), ceil((i + 1) * H / OH)).
inline long astart(long i, long in, long out) { return (i * in) / out; }
inline long aend(long i, long in, long out) { return ((i + 1) * in + out - 1) / out; }

__kernel void adaptive_fwd(long total, geom_t g, __global T *out, __global const T *x,
                           view_t vx) {
    long i = get_global_id(0);
    if (i >= total) return;
    long ow = i % g.ow, t = i / g.ow;
    long oh = t % g.oh;
    t /= g.oh;
    long c = t % g.c, n = t / g.c;
    long y0 = astart(oh, g.h, g.oh), y1 = aend(oh, g.h, g.oh);
    long x0 = astart(ow, g.w, g.ow), x1 = aend(ow, g.w, g.ow);
    ACC acc = 0;
    for (long y = y0; y < y1; ++y)
        for (long xx = x0; xx < x1; ++xx) acc += x[at4(vx, n, c, y, xx)];
    out[i] = (T)(acc / (ACC)((y1 - y0) * (x1 - x0)));
}

// Outputs covering y are oh in [floor(y * OH / H), ceil((y + 1) * OH / H) - 1]. Launched
// 3-D as max_bwd (x, y, plane): the row's window is uniform along dim 0, and the index math is
// 32-bit (a 1-D launch's ~10 64-bit divisions per element took 16 ms for 64x128x8x8 on Intel's
// CPU runtime).
__kernel void adaptive_bwd(geom_t g, __global T *gx, __global const T *gy, view_t vgy) {
    long xx = get_global_id(0), y = get_global_id(1);
    uint plane = get_global_id(2);
    if (xx >= g.w || y >= g.h) return;
    uint n = plane / (uint)g.c;
    long c = plane - n * (uint)g.c;
    uint H = g.h, W = g.w, OH = g.oh, OW = g.ow;
    uint oh0 = ((uint)y * OH) / H, oh1 = ((uint)(y + 1) * OH + H - 1) / H;
    uint ow0 = ((uint)xx * OW) / W, ow1 = ((uint)(xx + 1) * OW + W - 1) / W;
    __global const T *pg = gy + vgy.off + n * vgy.s[0] + c * vgy.s[1];
    ACC acc = 0;
    for (uint oh = oh0; oh < oh1; ++oh) {
        uint hn = ((oh + 1) * H + OH - 1) / OH - (oh * H) / OH;
        for (uint ow = ow0; ow < ow1; ++ow) {
            uint wn = ((ow + 1) * W + OW - 1) / OW - (ow * W) / OW;
            acc += pg[oh * vgy.s[2] + ow * vgy.s[3]] / (ACC)(hn * wn);
        }
    }
    gx[((long)plane * g.h + y) * g.w + xx] = (T)acc;
}

// Adaptive max over adaptive_fwd's windows; ties keep the first element, NaN wins (max_fwd).
__kernel void adaptive_max_fwd(long total, geom_t g, __global T *out, __global long *idx,
                               __global const T *x, view_t vx) {
    long i = get_global_id(0);
    if (i >= total) return;
    long n, c, oh, ow;
    nchw_of(i, g.c, g.oh, g.ow, &n, &c, &oh, &ow);
    long y0 = astart(oh, g.h, g.oh), y1 = aend(oh, g.h, g.oh);
    long x0 = astart(ow, g.w, g.ow), x1 = aend(ow, g.w, g.ow);
    T best = -INFINITY;
    long bi = -1;
    for (long y = y0; y < y1; ++y)
        for (long xx = x0; xx < x1; ++xx) {
            T v = x[at4(vx, n, c, y, xx)];
            if (bi < 0 || v > best || isnan(v)) {
                best = v;
                bi = y * g.w + xx;
            }
        }
    out[i] = best;
    idx[i] = bi;
}

// grad_x = sum of grad_out over the covering windows (adaptive_bwd) whose index is (y, x).
__kernel void adaptive_max_bwd(long total, geom_t g, __global T *gx, __global const T *gy,
                               view_t vgy, __global const long *idx) {
    long i = get_global_id(0);
    if (i >= total) return;
    long n, c, y, xx;
    nchw_of(i, g.c, g.h, g.w, &n, &c, &y, &xx);
    long oh0 = (y * g.oh) / g.h, oh1 = ((y + 1) * g.oh + g.h - 1) / g.h;
    long ow0 = (xx * g.ow) / g.w, ow1 = ((xx + 1) * g.ow + g.w - 1) / g.w;
    long me = y * g.w + xx, plane = (n * g.c + c) * g.oh;
    ACC acc = 0;
    for (long oh = oh0; oh < oh1; ++oh)
        for (long ow = ow0; ow < ow1; ++ow)
            if (idx[(plane + oh) * g.ow + ow] == me) acc += gy[at4(vgy, n, c, oh, ow)];
    gx[i] = (T)acc;
}
