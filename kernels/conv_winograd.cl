// kernels/conv_winograd.cl — Winograd convolution F(m x m, 3 x 3), m = 2 or 4 (WM), for 3 x 3
// kernels, stride 1, dilation 1 (forward, and the input gradient as conv.h's forward problem
// on the flipped weight view), and the weight gradient F(3 x 3, m x m): Lavin & Gray, "Fast
// Algorithms for Convolutional Neural Networks", CVPR 2016 (arXiv:1509.09308). An output tile
// Y (m x m) of one channel pair is
//   Y = A^T [ (G g G^T) .* (B^T d B) ] A
// with g the 3 x 3 filter and d the alpha x alpha input tile (alpha = m + 2) whose first
// element sits at (tile row * m - ph, tile column * m - pw), zero outside the input. The
// matrices B^T, G, A^T are the ones the paper prints for F(2x2,3x3) (interpolation points 0,
// 1, -1 and infinity) and F(4x4,3x3) (points 0, 1, -1, 2, -2 and infinity), the same as the
// first author's generator andravin/wincnn writes for those points; checked against direct
// sums (tests/test_conv_winograd.py, float64 to 1e-10). Over channels the element-wise
// product becomes alpha^2 * groups GEMMs, one per transformed element a = (i, j) and group:
//   M[a][g] (o x tiles) = U[a][g] (o x c) @ V[a][g] (c x tiles)
// run by clgrad.ops.matmul.gemm (one batched launch) between the kernels here:
//   wino_weight: U[a][g][o][c] = (G K[g,o,c] G^T)[a]       items (c, o, g)
//   wino_input:  V[a][g][c][t] = (B^T d B)[a]               items (ld, c, g)
//   wino_output: Y[n,g,o, tile] = A^T M[.][g][o][t] A (+ bias), through Y's view, the tile
//                clipped at the output's edge              items (tiles, o, g)
// t = (n * ceil(oh/m) + tile row) * ceil(ow/m) + tile column. Workspaces are contiguous; V's
// rows are ld >= tiles long (the weight gradient pads them; the tiles past the last are
// written as zeros).
//
// The weight gradient dW[g,o,c] (3 x 3) = sum over n and the output tiles of the correlation
// of the input tile d (alpha x alpha, the forward's) with the m x m tile e of dY: a 3 x 3
// output of an m x m "filter", F(3 x 3, m x m) with the same points. In 1-D, F(m, 3) computes
// y[i] = sum_{r<3, k} AT[i][k] G[k][r] BT[k][j] g[r] d[j] with sum_k AT[i][k] G[k][r] BT[k][j]
// = [j == i + r]; dW[r] = sum_{i<m} e[i] d[i + r] is the same sum with the roles of i and r
// exchanged, so F(3, m) has the input transform B^T again, the "filter" transform
// G' = A (alpha x m: e's polynomial evaluated at the points) and the output transform
// A'^T = G^T (3 x alpha: the interpolation, whose 1/2 (1/4, 1/6 ...) factors it carries):
//   dW[g,o,c] = G^T [ sum_t (A e A^T)[a] * (B^T d B)[a] ] G  (the sum over tiles a GEMM)
//   wino_dy:     E[a][g][o][t] = (A e A^T)[a] (e zero past dY's edge; 0 for t >= tiles)
//                                                          items (ld, o, g)
//   wino_input:  V[a][g][c][t] as above (ld = the same padded pitch)
//   gemm:        P[s][a][g][o][c] = E[a][g][o][slice s] @ V[a][g][c][slice s]^T, the tiles cut
//                into `splits` slices of equal depth (one batched launch); their sum
//                W[a][g][o][c] (reduce.cl, clgrad.ops.reduce.sum_into)
//   wino_wgrad:  dW[g,o,c] = G^T W[.][g][o][c] G through the kernel view p.k
//                                                          items (c, o, g)
// A's column 1 (the point 1) is all ones: E[(1, 1)][g][o][t] is the sum of the tile e, so the
// bias gradient is the sum of that row (clgrad/ops/conv/winograd.py).
// 5 x 5 kernels (KS = 5): the weight gradient F(5 x 5, 2 x 2) likewise, from F(2, 5) with the
// points of F(4, 3) (alpha = 6, the same B^T; G and A^T of F(2, 5) in the table below, G's
// scaling that of F(4, 3)'s): dW = G^T [sum_t (A e A^T) .* (B^T d B)] G, 5 x 5. The kernels
// take any KS of the table (wino_weight and wino_output would run F(2x2, 5x5); the host runs
// 5 x 5 kernels in the weight gradient only).
// Defines: T (float/double, IS_DOUBLE), WM (2 or 4), KS (3, default, or 5 with WM = 2).
// Launch sizes are rounded up to the work-group size: each kernel checks its index.
#include "conv.h"

// Matrix entries are integers in T or quotients of them (no floating literal: exact in both
// float and double builds, tests/test_kernel_sources.py).
#define H ((T)1 / (T)2)

#ifndef KS
#define KS 3
#endif
#define ALPHA (WM + KS - 1)

#if WM == 2 && KS == 3
#define BT_ROWS {{(T)1, (T)0, (T)-1, (T)0}, \
                 {(T)0, (T)1, (T)1, (T)0},  \
                 {(T)0, (T)-1, (T)1, (T)0}, \
                 {(T)0, (T)1, (T)0, (T)-1}}
#define G_ROWS {{(T)1, (T)0, (T)0},  \
                {H, H, H},  \
                {H, -H, H}, \
                {(T)0, (T)0, (T)1}}
#define AT_ROWS {{(T)1, (T)1, (T)1, (T)0}, \
                 {(T)0, (T)1, (T)-1, (T)-1}}
#elif ALPHA == 6  // F(4, 3) and F(2, 5): points 0, 1, -1, 2, -2 and infinity
#define BT_ROWS {{(T)4, (T)0, (T)-5, (T)0, (T)1, (T)0},  \
                 {(T)0, (T)-4, (T)-4, (T)1, (T)1, (T)0}, \
                 {(T)0, (T)4, (T)-4, (T)-1, (T)1, (T)0}, \
                 {(T)0, (T)-2, (T)-1, (T)2, (T)1, (T)0}, \
                 {(T)0, (T)2, (T)-1, (T)-2, (T)1, (T)0}, \
                 {(T)0, (T)4, (T)0, (T)-5, (T)0, (T)1}}
#if WM == 4
#define G_ROWS {{(T)1 / (T)4, (T)0, (T)0},                       \
                {(T)-1 / (T)6, (T)-1 / (T)6, (T)-1 / (T)6}, \
                {(T)-1 / (T)6, (T)1 / (T)6, (T)-1 / (T)6},  \
                {(T)1 / (T)24, (T)1 / (T)12, (T)1 / (T)6},  \
                {(T)1 / (T)24, (T)-1 / (T)12, (T)1 / (T)6}, \
                {(T)0, (T)0, (T)1}}
#define AT_ROWS {{(T)1, (T)1, (T)1, (T)1, (T)1, (T)0},   \
                 {(T)0, (T)1, (T)-1, (T)2, (T)-2, (T)0}, \
                 {(T)0, (T)1, (T)1, (T)4, (T)4, (T)0},   \
                 {(T)0, (T)1, (T)-1, (T)8, (T)-8, (T)1}}
#else  // F(2, 5): G[k][r] = p_k^r / prod_{j != k} (p_k - p_j) over the finite points
#define G_ROWS {{(T)1 / (T)4, (T)0, (T)0, (T)0, (T)0},                                      \
                {(T)-1 / (T)6, (T)-1 / (T)6, (T)-1 / (T)6, (T)-1 / (T)6, (T)-1 / (T)6},    \
                {(T)-1 / (T)6, (T)1 / (T)6, (T)-1 / (T)6, (T)1 / (T)6, (T)-1 / (T)6},      \
                {(T)1 / (T)24, (T)1 / (T)12, (T)1 / (T)6, (T)1 / (T)3, (T)2 / (T)3},      \
                {(T)1 / (T)24, (T)-1 / (T)12, (T)1 / (T)6, (T)-1 / (T)3, (T)2 / (T)3},    \
                {(T)0, (T)0, (T)0, (T)0, (T)1}}
#define AT_ROWS {{(T)1, (T)1, (T)1, (T)1, (T)1, (T)0}, \
                 {(T)0, (T)1, (T)-1, (T)2, (T)-2, (T)1}}
#endif
#else
#error "(WM, KS) must be (2, 3), (4, 3) or (2, 5)"
#endif


// Tiles along rows and columns of the output. The tile index t and its parts are ints (the
// host takes no problem of 2^31 tiles or more): no 64-bit division per work item on GPUs.
#define TILES_H(p) ((int)(((p).oh + WM - 1) / WM))
#define TILES_W(p) ((int)(((p).ow + WM - 1) / WM))

// U[a][g][o][c] = (G k G^T)[a], k = K[g, o, c] (KS x KS, read through the kernel view).
__kernel void wino_weight(const conv_t p, __global const T *K, __global T *U) {
    const long c = get_global_id(0), o = get_global_id(1), g = get_global_id(2);
    if (c >= p.c || o >= p.o || g >= p.g) return;
    const T G[ALPHA][KS] = G_ROWS;
    const long kb = p.k.off + g * p.k.s[0] + o * p.k.s[1] + c * p.k.s[2];
    T k[KS][KS], t[ALPHA][KS];
#pragma unroll
    for (int i = 0; i < KS; ++i)
#pragma unroll
        for (int j = 0; j < KS; ++j) k[i][j] = K[kb + i * p.k.s[3] + j * p.k.s[4]];
#pragma unroll
    for (int i = 0; i < ALPHA; ++i)
#pragma unroll
        for (int j = 0; j < KS; ++j) {
            T acc = (T)0;
#pragma unroll
            for (int r = 0; r < KS; ++r) acc += G[i][r] * k[r][j];
            t[i][j] = acc;
        }
    const long step = p.g * p.o * p.c;  // between transformed elements a
    __global T *u = U + (g * p.o + o) * p.c + c;
#pragma unroll
    for (int i = 0; i < ALPHA; ++i)
#pragma unroll
        for (int j = 0; j < ALPHA; ++j) {
            T acc = (T)0;
#pragma unroll
            for (int r = 0; r < KS; ++r) acc += t[i][r] * G[j][r];
            u[(i * ALPHA + j) * step] = acc;
        }
}

// V[a][g][c][t] = (B^T d B)[a], d the zero-padded alpha x alpha input tile of t; rows of ld
// (>= tiles) elements, zeros past the last tile.
__kernel void wino_input(const conv_t p, const long ld, __global const T *X, __global T *V) {
    const long t = get_global_id(0), c = get_global_id(1), g = get_global_id(2);
    const int th = TILES_H(p), tw = TILES_W(p);
    const long tiles = p.n * th * tw;
    if (t >= ld || c >= p.c || g >= p.g) return;
    const long step = p.g * p.c * ld;  // between transformed elements a
    __global T *v = V + (g * p.c + c) * ld + t;
    if (t >= tiles) {  // the padding of the weight gradient's slices
        for (int a = 0; a < ALPHA * ALPHA; ++a) v[a * step] = (T)0;
        return;
    }
    const T BT[ALPHA][ALPHA] = BT_ROWS;
    const int ti = (int)t, n = ti / (th * tw), r = ti - n * th * tw, ty = r / tw,
              tx = r - ty * tw;
    const long y0 = (long)ty * WM - p.ph, x0 = (long)tx * WM - p.pw;
    const long xb = p.x.off + n * p.x.s[0] + g * p.x.s[1] + c * p.x.s[2];
    T d[ALPHA][ALPHA], s[ALPHA][ALPHA];
#pragma unroll
    for (int i = 0; i < ALPHA; ++i) {
        const long y = y0 + i;
        const bool row = y >= 0 && y < p.h;
#pragma unroll
        for (int j = 0; j < ALPHA; ++j) {
            const long x = x0 + j;
            d[i][j] = row && x >= 0 && x < p.w ? X[xb + y * p.x.s[3] + x * p.x.s[4]] : (T)0;
        }
    }
#pragma unroll
    for (int i = 0; i < ALPHA; ++i)  // s = B^T d
#pragma unroll
        for (int j = 0; j < ALPHA; ++j) {
            T acc = (T)0;
#pragma unroll
            for (int k = 0; k < ALPHA; ++k) acc += BT[i][k] * d[k][j];
            s[i][j] = acc;
        }
#pragma unroll
    for (int i = 0; i < ALPHA; ++i)  // (s B)[i][j] = sum_k s[i][k] * BT[j][k]
#pragma unroll
        for (int j = 0; j < ALPHA; ++j) {
            T acc = (T)0;
#pragma unroll
            for (int k = 0; k < ALPHA; ++k) acc += s[i][k] * BT[j][k];
            v[(i * ALPHA + j) * step] = acc;
        }
}

// Y[n, g, o, tile] = A^T m A (+ bias), m[a] = M[a][g][o][t]; outputs past the edge are skipped.
__kernel void wino_output(const conv_t p, __global const T *M, __global T *Y,
                          __global const T *B) {
    const long t = get_global_id(0), o = get_global_id(1), g = get_global_id(2);
    const int th = TILES_H(p), tw = TILES_W(p);
    const long tiles = p.n * th * tw;
    if (t >= tiles || o >= p.o || g >= p.g) return;
    const T AT[WM][ALPHA] = AT_ROWS;
    const long step = p.g * p.o * tiles;  // between transformed elements a
    __global const T *mp = M + (g * p.o + o) * tiles + t;
    T m[ALPHA][ALPHA], s[WM][ALPHA];
#pragma unroll
    for (int i = 0; i < ALPHA; ++i)
#pragma unroll
        for (int j = 0; j < ALPHA; ++j) m[i][j] = mp[(i * ALPHA + j) * step];
#pragma unroll
    for (int i = 0; i < WM; ++i)  // s = A^T m
#pragma unroll
        for (int j = 0; j < ALPHA; ++j) {
            T acc = (T)0;
#pragma unroll
            for (int k = 0; k < ALPHA; ++k) acc += AT[i][k] * m[k][j];
            s[i][j] = acc;
        }
    const T bias = p.bias ? B[p.boff + (g * p.o + o) * p.bs] : (T)0;
    const int ti = (int)t, n = ti / (th * tw), r = ti - n * th * tw, ty = r / tw,
              tx = r - ty * tw;
    const long oy = (long)ty * WM, ox = (long)tx * WM;
    __global T *y = Y + p.y.off + n * p.y.s[0] + g * p.y.s[1] + o * p.y.s[2];
#pragma unroll
    for (int i = 0; i < WM; ++i) {
        if (oy + i >= p.oh) break;
#pragma unroll
        for (int j = 0; j < WM; ++j) {  // (s A)[i][j] = sum_k s[i][k] * AT[j][k]
            if (ox + j >= p.ow) break;
            T acc = bias;
#pragma unroll
            for (int k = 0; k < ALPHA; ++k) acc += s[i][k] * AT[j][k];
            y[(oy + i) * p.y.s[3] + (ox + j) * p.y.s[4]] = acc;
        }
    }
}

// E[a][g][o][t] = (A e A^T)[a], e the m x m tile t of dY (the view p.y), zero past its edge;
// rows of ld (>= tiles) elements, zeros past the last tile.
__kernel void wino_dy(const conv_t p, const long ld, __global const T *DY, __global T *E) {
    const long t = get_global_id(0), o = get_global_id(1), g = get_global_id(2);
    const int th = TILES_H(p), tw = TILES_W(p);
    const long tiles = p.n * th * tw;
    if (t >= ld || o >= p.o || g >= p.g) return;
    const long step = p.g * p.o * ld;  // between transformed elements a
    __global T *ep = E + (g * p.o + o) * ld + t;
    if (t >= tiles) {
        for (int a = 0; a < ALPHA * ALPHA; ++a) ep[a * step] = (T)0;
        return;
    }
    const T AT[WM][ALPHA] = AT_ROWS;
    const int ti = (int)t, n = ti / (th * tw), r = ti - n * th * tw, ty = r / tw,
              tx = r - ty * tw;
    const long oy = (long)ty * WM, ox = (long)tx * WM;
    __global const T *dy = DY + p.y.off + n * p.y.s[0] + g * p.y.s[1] + o * p.y.s[2];
    T e[WM][WM], s[ALPHA][WM];
#pragma unroll
    for (int i = 0; i < WM; ++i) {
        const bool row = oy + i < p.oh;
#pragma unroll
        for (int j = 0; j < WM; ++j)
            e[i][j] = row && ox + j < p.ow ? dy[(oy + i) * p.y.s[3] + (ox + j) * p.y.s[4]]
                                           : (T)0;
    }
#pragma unroll
    for (int k = 0; k < ALPHA; ++k)  // s = A e: s[k][j] = sum_i AT[i][k] * e[i][j]
#pragma unroll
        for (int j = 0; j < WM; ++j) {
            T acc = (T)0;
#pragma unroll
            for (int i = 0; i < WM; ++i) acc += AT[i][k] * e[i][j];
            s[k][j] = acc;
        }
#pragma unroll
    for (int k = 0; k < ALPHA; ++k)  // (s A^T)[k][l] = sum_j s[k][j] * AT[j][l]
#pragma unroll
        for (int l = 0; l < ALPHA; ++l) {
            T acc = (T)0;
#pragma unroll
            for (int j = 0; j < WM; ++j) acc += s[k][j] * AT[j][l];
            ep[(k * ALPHA + l) * step] = acc;
        }
}

// dW[g, o, c] = G^T w G through the kernel view p.k (KS x KS), w[a] = W[a][g][o][c].
__kernel void wino_wgrad(const conv_t p, __global const T *W, __global T *DW) {
    const long c = get_global_id(0), o = get_global_id(1), g = get_global_id(2);
    if (c >= p.c || o >= p.o || g >= p.g) return;
    const T G[ALPHA][KS] = G_ROWS;
    const long step = p.g * p.o * p.c;  // between transformed elements a
    __global const T *wp = W + (g * p.o + o) * p.c + c;
    T w[ALPHA][ALPHA], s[KS][ALPHA];
#pragma unroll
    for (int k = 0; k < ALPHA; ++k)
#pragma unroll
        for (int l = 0; l < ALPHA; ++l) w[k][l] = wp[(k * ALPHA + l) * step];
#pragma unroll
    for (int r = 0; r < KS; ++r)  // s = G^T w: s[r][l] = sum_k G[k][r] * w[k][l]
#pragma unroll
        for (int l = 0; l < ALPHA; ++l) {
            T acc = (T)0;
#pragma unroll
            for (int k = 0; k < ALPHA; ++k) acc += G[k][r] * w[k][l];
            s[r][l] = acc;
        }
    __global T *dw = DW + p.k.off + g * p.k.s[0] + o * p.k.s[1] + c * p.k.s[2];
#pragma unroll
    for (int r = 0; r < KS; ++r)
#pragma unroll
        for (int q = 0; q < KS; ++q) {  // (s G)[r][q] = sum_l s[r][l] * G[l][q]
            T acc = (T)0;
#pragma unroll
            for (int l = 0; l < ALPHA; ++l) acc += s[r][l] * G[l][q];
            dw[r * p.k.s[3] + q * p.k.s[4]] = acc;
        }
}
