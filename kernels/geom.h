// kernels/geom.h — the by-value geometry structs of the pooling and resampling kernels
// (host mirrors: clgrad/kernel_structs.py, GEOM_T and UGEOM_T; sizes checked against the
// device by tests/test_kernel_structs.py).
#ifndef CLGRAD_GEOM_H
#define CLGRAD_GEOM_H

// pool.cl: input N, C, H, W; output OH, OW; kernel kH, kW; stride sH, sW; padding pH, pW;
// dilation dH, dW.
typedef struct { long n, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw; } geom_t;
// upsample.cl: input n, c, h, w; output oh, ow.
typedef struct { long n, c, h, w, oh, ow; } ugeom_t;

// The element (n, c, y, x) of a 4-D view (common.h's view_t: offset, then a stride per dim).
inline long at4(const view_t v, long n, long c, long y, long x) {
    return v.off + n * v.s[0] + c * v.s[1] + y * v.s[2] + x * v.s[3];
}

#endif
