// kernels/conv_direct_any.cl — direct convolution, one work item per output element (forward and,
// on the transformed problem of conv.h, input gradient) or per weight element and batch split
// (weight gradient). Any device; no local memory; the portable baseline.
// Defines: T element type. Launch: 1-D, global size rounded up to the local size; each kernel
// checks its index.
//   direct_fwd:   n*g*o*oh*ow items.
//   direct_wgrad: split*g*o*(K+1) items (K = c*kh*kw; item K sums the output gradient: bias);
//                 partial sums ws[split][g][o][K+1], summed by wgrad_reduce (conv_igemm_cpu.cl).
#include "conv.h"

__kernel void direct_fwd(const conv_t p, __global const T *X, __global const T *K,
                         __global T *Y, __global const T *B) {
    long i = get_global_id(0);
    if (i >= p.n * p.g * p.o * p.oh * p.ow) return;
    const long ow = i % p.ow, oh = (i / p.ow) % p.oh, o = (i / (p.ow * p.oh)) % p.o;
    const long ng = i / (p.ow * p.oh * p.o), n = ng / p.g, g = ng % p.g;
    T acc = p.bias ? B[p.boff + (g * p.o + o) * p.bs] : (T)0;
    const long kb = p.k.off + g * p.k.s[0] + o * p.k.s[1];
    for (long c = 0; c < p.c; ++c) {
        const long xb = p.x.off + n * p.x.s[0] + g * p.x.s[1] + c * p.x.s[2];
        for (long kh = 0; kh < p.kh; ++kh) {
            const long y = oh * p.sh - p.ph + kh * p.dh;
            for (long kw = 0; kw < p.kw; ++kw) {
                T v = xv(X, xb, y, ow * p.sw - p.pw + kw * p.dw, p);
                acc += K[kb + c * p.k.s[2] + kh * p.k.s[3] + kw * p.k.s[4]] * v;
            }
        }
    }
    Y[p.y.off + n * p.y.s[0] + g * p.y.s[1] + o * p.y.s[2] + oh * p.y.s[3] + ow * p.y.s[4]] = acc;
}

__kernel void direct_wgrad(const conv_t p, __global const T *X, __global const T *GO, v5_t gv,
                           __global T *ws) {
    const long kall = p.c * p.kh * p.kw;
    long i = get_global_id(0);
    if (i >= p.split * p.g * p.o * (kall + 1)) return;
    const long k = i % (kall + 1), o = (i / (kall + 1)) % p.o;
    const long g = (i / ((kall + 1) * p.o)) % p.g, sp = i / ((kall + 1) * p.o * p.g);
    const long c = k / (p.kh * p.kw), kh = (k / p.kw) % p.kh, kw = k % p.kw;
    T acc = (T)0;
    for (long n = sp * p.n / p.split; n < (sp + 1) * p.n / p.split; ++n) {
        const long gb = gv.off + n * gv.s[0] + g * gv.s[1] + o * gv.s[2];
        const long xb = p.x.off + n * p.x.s[0] + g * p.x.s[1] + c * p.x.s[2];
        for (long oh = 0; oh < p.oh; ++oh) {
            for (long ow = 0; ow < p.ow; ++ow) {
                T gq = GO[gb + oh * gv.s[3] + ow * gv.s[4]];
                acc += k == kall ? gq : gq * xv(X, xb, oh * p.sh - p.ph + kh * p.dh,
                                                ow * p.sw - p.pw + kw * p.dw, p);
            }
        }
    }
    ws[i] = acc;
}
