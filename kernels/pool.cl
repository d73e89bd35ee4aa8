// kernels/pool.cl — 2-D pooling of (N, C, H, W) strided views; one work item per element.
// Defines: T element type (float or double).
// Geometry: geom_t, by value: input N, C, H, W; output OH, OW; kernel kH, kW; stride sH, sW;
// padding pH, pW; dilation dH, dW. A tensor argument is (data, view_t) whose view holds the
// element offset and the strides of N, C, H, W (0 for N when the input is unbatched).
// Outputs and gradients are written contiguous; the max-pool indices (int64) are contiguous
// and hold y * W + x within the (H, W) plane, as PyTorch's.
// Backward kernels gather (one work item per input element, summing the outputs whose
// window holds it): deterministic, no atomics, no zero fill.
// Launch: 1-D over the elements written, each kernel checks i < total.
#include "common.h"

typedef struct { long n, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw; } geom_t;

inline long at4(const view_t v, long n, long c, long y, long x) {
    return v.off + n * v.s[0] + c * v.s[1] + y * v.s[2] + x * v.s[3];
}

// The max of each window; padding counts as -inf. Ties keep the first element (row-major),
// NaN wins (PyTorch's rule), so the gradient goes to exactly one element.
__kernel void max_fwd(long total, geom_t g, __global T *out, __global long *idx,
                      __global const T *x, view_t vx) {
    long i = get_global_id(0);
    if (i >= total) return;
    long ow = i % g.ow, t = i / g.ow;
    long oh = t % g.oh;
    t /= g.oh;
    long c = t % g.c, n = t / g.c;
    long y0 = oh * g.sh - g.ph, x0 = ow * g.sw - g.pw;
    T best = -INFINITY;
    long bi = -1;
    for (long kh = 0; kh < g.kh; ++kh) {
        long y = y0 + kh * g.dh;
        if (y < 0 || y >= g.h) continue;
        for (long kw = 0; kw < g.kw; ++kw) {
            long xx = x0 + kw * g.dw;
            if (xx < 0 || xx >= g.w) continue;
            T v = x[at4(vx, n, c, y, xx)];
            if (bi < 0 || v > best || isnan(v)) {
                best = v;
                bi = y * g.w + xx;
            }
        }
    }
    out[i] = best;
    idx[i] = bi;
}

// grad_x[n, c, y, x] = sum of grad_out over the windows whose saved index is (y, x).
__kernel void max_bwd(long total, geom_t g, __global T *gx, __global const T *gy, view_t vgy,
                      __global const long *idx) {
    long i = get_global_id(0);
    if (i >= total) return;
    long xx = i % g.w, t = i / g.w;
    long y = t % g.h;
    t /= g.h;
    long c = t % g.c, n = t / g.c;
    long me = y * g.w + xx, plane = (n * g.c + c) * g.oh;
    T acc = 0;
    for (long kh = 0; kh < g.kh; ++kh) {
        long num_h = y + g.ph - kh * g.dh;
        if (num_h < 0) break;
        if (num_h % g.sh) continue;
        long oh = num_h / g.sh;
        if (oh >= g.oh) continue;
        for (long kw = 0; kw < g.kw; ++kw) {
            long num_w = xx + g.pw - kw * g.dw;
            if (num_w < 0) break;
            if (num_w % g.sw) continue;
            long ow = num_w / g.sw;
            if (ow >= g.ow) continue;
            if (idx[(plane + oh) * g.ow + ow] == me) acc += gy[at4(vgy, n, c, oh, ow)];
        }
    }
    gx[i] = acc;
}

// The divisor of output (oh, ow) of an average pool, and its window clipped to the input.
// PyTorch's rule: the padded window is clipped to [-pad, size + pad) for count_include_pad.
inline T avg_window(const geom_t g, long oh, long ow, long divisor, int include_pad,
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
    if (divisor != 0) return (T)divisor;
    return (T)(include_pad ? pool : (h1 - h0) * (w1 - w0));
}

// divisor: divisor_override, or 0 for none; include_pad: count_include_pad.
__kernel void avg_fwd(long total, geom_t g, __global T *out, __global const T *x, view_t vx,
                      long divisor, int include_pad) {
    long i = get_global_id(0);
    if (i >= total) return;
    long ow = i % g.ow, t = i / g.ow;
    long oh = t % g.oh;
    t /= g.oh;
    long c = t % g.c, n = t / g.c;
    long y0, y1, x0, x1;
    T div = avg_window(g, oh, ow, divisor, include_pad, &y0, &y1, &x0, &x1);
    if (y0 >= y1 || x0 >= x1) {
        out[i] = 0;
        return;
    }
    T acc = 0;
    for (long y = y0; y < y1; ++y)
        for (long xx = x0; xx < x1; ++xx) acc += x[at4(vx, n, c, y, xx)];
    out[i] = acc / div;
}

// Outputs whose window covers input row y: oh*s - p <= y <= oh*s - p + k - 1.
inline void covering(long y, long k, long s, long p, long nout, long *lo, long *hi) {
    long num = y + p - k + 1;
    *lo = num <= 0 ? 0 : (num + s - 1) / s;
    *hi = min((y + p) / s, nout - 1);
}

__kernel void avg_bwd(long total, geom_t g, __global T *gx, __global const T *gy, view_t vgy,
                      long divisor, int include_pad) {
    long i = get_global_id(0);
    if (i >= total) return;
    long xx = i % g.w, t = i / g.w;
    long y = t % g.h;
    t /= g.h;
    long c = t % g.c, n = t / g.c;
    long oh0, oh1, ow0, ow1;
    covering(y, g.kh, g.sh, g.ph, g.oh, &oh0, &oh1);
    covering(xx, g.kw, g.sw, g.pw, g.ow, &ow0, &ow1);
    T acc = 0;
    for (long oh = oh0; oh <= oh1; ++oh) {
        for (long ow = ow0; ow <= ow1; ++ow) {
            long y0, y1, x0, x1;
            T div = avg_window(g, oh, ow, divisor, include_pad, &y0, &y1, &x0, &x1);
            acc += gy[at4(vgy, n, c, oh, ow)] / div;
        }
    }
    gx[i] = acc;
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
    T acc = 0;
    for (long y = y0; y < y1; ++y)
        for (long xx = x0; xx < x1; ++xx) acc += x[at4(vx, n, c, y, xx)];
    out[i] = acc / (T)((y1 - y0) * (x1 - x0));
}

// Outputs covering y are oh in [floor(y * OH / H), ceil((y + 1) * OH / H) - 1].
__kernel void adaptive_bwd(long total, geom_t g, __global T *gx, __global const T *gy,
                           view_t vgy) {
    long i = get_global_id(0);
    if (i >= total) return;
    long xx = i % g.w, t = i / g.w;
    long y = t % g.h;
    t /= g.h;
    long c = t % g.c, n = t / g.c;
    long oh0 = (y * g.oh) / g.h, oh1 = ((y + 1) * g.oh + g.h - 1) / g.h;
    long ow0 = (xx * g.ow) / g.w, ow1 = ((xx + 1) * g.ow + g.w - 1) / g.w;
    T acc = 0;
    for (long oh = oh0; oh < oh1; ++oh) {
        long hn = aend(oh, g.h, g.oh) - astart(oh, g.h, g.oh);
        for (long ow = ow0; ow < ow1; ++ow) {
            long wn = aend(ow, g.w, g.ow) - astart(ow, g.w, g.ow);
            acc += gy[at4(vgy, n, c, oh, ow)] / (T)(hn * wn);
        }
    }
    gx[i] = acc;
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
    T acc = 0;
    for (long oh = oh0; oh < oh1; ++oh)
        for (long ow = ow0; ow < ow1; ++ow)
            if (idx[(plane + oh) * g.ow + ow] == me) acc += gy[at4(vgy, n, c, oh, ow)];
    gx[i] = acc;
}
