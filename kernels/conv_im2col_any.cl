// kernels/conv_im2col_any.cl — the im2col algorithm's data movement (the products are
// clgrad.ops.matmul.gemm): im2col gathers samples [n0, n0 + nc) of the problem of conv.h
// (u = 1) into col[g][k][n - n0][oh*ow + ow] with k = (c, kh, kw); col2im sums such a column
// gradient back into the input gradient (view y of (n, g, c, h, w)).
// Defines: T element type. Launch: 1-D, one work item per element written; each checks its
// index.
#include "conv.h"

__kernel void im2col(const conv_t p, long n0, long nc, __global const T *X, __global T *col) {
    const long P = p.oh * p.ow, kall = p.c * p.kh * p.kw;
    long i = get_global_id(0);
    if (i >= p.g * kall * nc * P) return;
    const long q = i % P, nl = (i / P) % nc, k = (i / (P * nc)) % kall, g = i / (P * nc * kall);
    const long c = k / (p.kh * p.kw), kh = (k / p.kw) % p.kh, kw = k % p.kw;
    const long y = (q / p.ow) * p.sh - p.ph + kh * p.dh, x = (q % p.ow) * p.sw - p.pw + kw * p.dw;
    T v = (T)0;
    if (y >= 0 && y < p.h && x >= 0 && x < p.w)
        v = X[p.x.off + (n0 + nl) * p.x.s[0] + g * p.x.s[1] + c * p.x.s[2] + y * p.x.s[3]
              + x * p.x.s[4]];
    col[i] = v;
}

__kernel void col2im(const conv_t p, long n0, long nc, __global const T *col, __global T *Y) {
    const long P = p.oh * p.ow, kall = p.c * p.kh * p.kw;
    long i = get_global_id(0);
    if (i >= nc * p.g * p.c * p.h * p.w) return;
    const long x = i % p.w, y = (i / p.w) % p.h, c = (i / (p.w * p.h)) % p.c;
    const long g = (i / (p.w * p.h * p.c)) % p.g, nl = i / (p.w * p.h * p.c * p.g);
    T acc = (T)0;
    for (long kh = 0; kh < p.kh; ++kh) {
        long ty = y + p.ph - kh * p.dh;
        if (ty < 0 || ty % p.sh) continue;
        long oh = ty / p.sh;
        if (oh >= p.oh) continue;
        for (long kw = 0; kw < p.kw; ++kw) {
            long tx = x + p.pw - kw * p.dw;
            if (tx < 0 || tx % p.sw) continue;
            long ow = tx / p.sw;
            if (ow >= p.ow) continue;
            long k = (c * p.kh + kh) * p.kw + kw;
            acc += col[((g * kall + k) * nc + nl) * P + oh * p.ow + ow];
        }
    }
    Y[p.y.off + (n0 + nl) * p.y.s[0] + g * p.y.s[1] + c * p.y.s[2] + y * p.y.s[3]
      + x * p.y.s[4]] = acc;
}
