// kernels/conv_im2col_any.cl — the im2col algorithm's data movement (the products are
// clgrad.ops.matmul.gemm): im2col gathers samples [n0, n0 + nc) of the problem of conv.h
// (u = 1) into col[g][k][n - n0][oh*ow + ow] with k = (c, kh, kw); col2im sums such a column
// gradient back into the input gradient (view y of (n, g, c, h, w)).
// Defines: T element type; ACC col2im's accumulator type (default T; the host's defines_of
// sets float for half, so a sum of kh * kw column values is rounded once). Launch: 3-D, dim 0
// over the pixels of one map (padded to the work-group: each item checks its index), dim 1
// over the channels of every group (g * C/G + c), dim 2 over the chunk's samples (n - n0): a
// work item runs im2col's kh * kw taps of one output pixel (rows k = (c, kh, kw) of col,
// nc * oH * oW apart), or col2im's sum for one input pixel. Index math in 32 bits
// (conv_algorithms.py launches maps, channel counts and chunks below 2^31 elements), two
// divisions per work item.
#define CONV_PROBLEM_ONLY  // conv_t only: no float vectors (T may be half)
#include "conv.h"

#ifndef ACC
#define ACC T
#endif

__kernel void im2col(const conv_t p, long n0, long nc, __global const T *X, __global T *col) {
    const int P = (int)(p.oh * p.ow), q = (int)get_global_id(0);
    if (q >= P) return;
    const int C = (int)p.c, call = (int)get_global_id(1), nl = (int)get_global_id(2);
    const int g = call / C, c = call - g * C;
    const int ow = (int)p.ow, qh = q / ow, qw = q - qh * ow;
    const int KH = (int)p.kh, KW = (int)p.kw, H = (int)p.h, W = (int)p.w;
    const int y0 = qh * (int)p.sh - (int)p.ph, x0 = qw * (int)p.sw - (int)p.pw;
    __global const T *xp = X + p.x.off + (n0 + nl) * p.x.s[0] + g * p.x.s[1] + c * p.x.s[2];
    const long tap = nc * P;  // col's stride between rows k and k + 1
    __global T *out = col + ((long)call * KH * KW * nc + nl) * P + q;
    for (int kh = 0; kh < KH; ++kh) {
        const int y = y0 + kh * (int)p.dh;
        const bool yin = y >= 0 && y < H;
        for (int kw = 0; kw < KW; ++kw) {
            const int x = x0 + kw * (int)p.dw;
            *out = (yin && x >= 0 && x < W) ? xp[y * p.x.s[3] + x * p.x.s[4]] : (T)0;
            out += tap;
        }
    }
}

__kernel void col2im(const conv_t p, long n0, long nc, __global const T *col, __global T *Y) {
    const int W = (int)p.w, pix = (int)get_global_id(0);
    if (pix >= (int)p.h * W) return;
    const int C = (int)p.c, call = (int)get_global_id(1), nl = (int)get_global_id(2);
    const int g = call / C, c = call - g * C;
    const int y = pix / W, x = pix - y * W;
    const int KH = (int)p.kh, KW = (int)p.kw, SH = (int)p.sh, SW = (int)p.sw;
    const int OH = (int)p.oh, OW = (int)p.ow;
    const long P = (long)OH * OW;
    __global const T *cp = col + ((long)call * KH * KW * nc + nl) * P;
    const long tap = nc * P;
    ACC acc = (ACC)0;
    for (int kh = 0; kh < KH; ++kh) {
        const int ty = y + (int)p.ph - kh * (int)p.dh;
        if (ty < 0 || (SH != 1 && ty % SH)) continue;
        const int oh = SH == 1 ? ty : ty / SH;
        if (oh >= OH) continue;
        for (int kw = 0; kw < KW; ++kw) {
            const int tx = x + (int)p.pw - kw * (int)p.dw;
            if (tx < 0 || (SW != 1 && tx % SW)) continue;
            const int ow = SW == 1 ? tx : tx / SW;
            if (ow >= OW) continue;
            acc += (ACC)cp[(kh * KW + kw) * tap + oh * OW + ow];
        }
    }
    Y[p.y.off + (n0 + nl) * p.y.s[0] + g * p.y.s[1] + c * p.y.s[2] + y * p.y.s[3]
      + x * p.y.s[4]] = (T)acc;
}
