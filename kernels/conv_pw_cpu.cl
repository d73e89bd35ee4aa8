// kernels/conv_pw_cpu.cl — the pointwise (1 x 1, stride 1, unpadded) convolution on CPUs as
// one GEMM per group, whose depth (k) and column (j) indices may each run over two dims of the
// tensors (a "split" index: i -> (q, r) = (i / Q, i % Q), address q * s_hi + r * s_lo):
//   forward / input gradient: C[g] (M = O, J = N * P) = A[g] (O, C) @ B[g] (C, (n, p)),
//     the columns flattened over (sample, pixel): a 4 x 4 map at batch 8 is 128 columns, not
//     8 launches' worth of 16 (clgrad/ops/matmul.py's gemm ran a (O, P) GEMM per sample);
//   weight gradient: C[g] (O, C) = A[g] (O, (n, p)) @ B[g] ((n, p), C), the depth flattened
//     over (sample, pixel): the sum over the batch happens inside the kernel (no per-sample
//     partial sums and no reduction pass).
// The micro-kernel is GEMM_CPU's (kernels/matmul.cl): a work item computes MT register tiles
// of MR x (NV * VW) along one column block; for each depth block of KC the B panel (KC x NR,
// zero past J) is packed into private memory (stays in L1), A is read as broadcasts, partial
// sums go through C between depth blocks. Plain multiply-adds and under-aligned vector types
// (not fma() and vloadN: PoCL calls those built-ins, kernels/conv_blocked_cpu.cl).
// Defines: T (IS_DOUBLE), MR NV VW KC; B_VEC: B's columns are whole vectors (NQ % VW == 0 and
// b_nlo == 1: vector loads); C_VEC likewise for C (c_nlo == 1); B_KIN: B is packed k-inner
// (b_klo == 1, scalar columns: the weight gradient's x read along pixels); HAS_BIAS.
// Launch: global (ceil(J / NR), ceil(M / (MR * MT)), G), local (1, 1, 1).
#include "common.h"

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define NR (NV * VW)
#define VT CAT(T, VW)
#if defined(__clang__) && defined(VW)
typedef T VTU __attribute__((ext_vector_type(VW), aligned(sizeof(T))));  // unaligned vector
#define VLOAD(p) (*(__global const VTU *)(p))
#define VSTORE(v, p) (*(__global VTU *)(p) = (v))
#else
#define VLOAD(p) CAT(vload, VW)(0, p)
#define VSTORE(v, p) CAT(vstore, VW)(v, 0, p)
#endif

// Element offset of split index i (Q per q; strides hi, lo).
inline long split_off(long i, long Q, long hi, long lo) {
    const long q = i / Q;
    return q * hi + (i - q * Q) * lo;
}

#ifdef MR
// Pack B[k0:k0+kl, j0:j0+NR] (row-major, NR wide) into Bs, zeros past J. col[j]: the column
// offsets (valid for j < nl).
inline void pack_b(VT *Bsv, __global const T *B, const long *col, int nl, long k0, int kl,
                   long KQ, long b_khi, long b_klo) {
    T *Bs = (T *)Bsv;
#ifdef B_VEC
    if (nl == NR) {
        for (int k = 0; k < kl; ++k) {
            __global const T *bk = B + split_off(k0 + k, KQ, b_khi, b_klo);
#pragma unroll
            for (int v = 0; v < NV; ++v) Bsv[k * NV + v] = VLOAD(bk + col[v * VW]);
        }
        return;
    }
#endif
#ifdef B_KIN
    // depth segments inside one q: contiguous along k for each column
    for (int k = 0; k < kl;) {
        const long kk = k0 + k, q = kk / KQ, r = kk - q * KQ;
        const int seg = (int)min((long)(kl - k), KQ - r);
        const long kb = q * b_khi + r * b_klo;
        for (int j = 0; j < nl; ++j) {
            __global const T *src = B + kb + col[j];
            for (int s = 0; s < seg; ++s) Bs[(k + s) * NR + j] = src[s];
        }
        k += seg;
    }
#else
    for (int k = 0; k < kl; ++k) {
        __global const T *bk = B + split_off(k0 + k, KQ, b_khi, b_klo);
        for (int j = 0; j < nl; ++j) Bs[k * NR + j] = bk[col[j]];
    }
#endif
    if (nl < NR)
        for (int k = 0; k < kl; ++k)
            for (int j = nl; j < NR; ++j) Bs[k * NR + j] = (T)0;
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void pw_gemm(long M, long J, long K, long MT, long KQ, long NQ,
             __global T *C, long c_off, long c_g, long c_m, long c_nhi, long c_nlo,
             __global const T *A, long a_off, long a_g, long a_m, long a_khi, long a_klo,
             __global const T *B, long b_off, long b_g, long b_khi, long b_klo, long b_nhi,
             long b_nlo, __global const T *bias, long bias_off, long bias_s) {
    const long g = get_global_id(2);
    const long j0 = get_global_id(0) * NR, mblk = get_global_id(1) * (MR * MT);
    const int nl = (int)min((long)NR, J - j0);
    C += c_off + g * c_g;
    A += a_off + g * a_g;
    B += b_off + g * b_g;
    long bcol[NR], ccol[NR];
    for (int j = 0; j < NR; ++j) {
        const long jj = min(j0 + j, J - 1);
        bcol[j] = split_off(jj, NQ, b_nhi, b_nlo);
        ccol[j] = split_off(jj, NQ, c_nhi, c_nlo);
    }
    VT Bsv[KC * NV];
    // k0 == 0 runs even when K == 0 (C = bias or 0 is still written)
    for (long k0 = 0; k0 == 0 || k0 < K; k0 += KC) {
        const int kl = (int)max(0L, min((long)KC, K - k0));
        pack_b(Bsv, B, bcol, nl, k0, kl, KQ, b_khi, b_klo);
        for (long it = 0; it < MT; ++it) {
            const long m0 = mblk + it * MR;
            if (m0 >= M) break;
            const int full = nl == NR && m0 + MR <= M;
            VT acc[MR][NV];
            if (k0 == 0) {
#pragma unroll
                for (int i = 0; i < MR; ++i) {
#ifdef HAS_BIAS
                    const T b0 = bias[bias_off + (g * M + min(m0 + i, M - 1)) * bias_s];
#else
                    const T b0 = (T)0;
#endif
#pragma unroll
                    for (int v = 0; v < NV; ++v) acc[i][v] = (VT)b0;
                }
            } else {
#ifdef C_VEC
                if (full) {
#pragma unroll
                    for (int i = 0; i < MR; ++i)
#pragma unroll
                        for (int v = 0; v < NV; ++v)
                            acc[i][v] = VLOAD(C + (m0 + i) * c_m + ccol[v * VW]);
                } else
#endif
                {
                    T *ap = (T *)acc;
                    for (int i = 0; i < MR; ++i)
                        for (int j = 0; j < NR; ++j)
                            ap[i * NR + j] = (m0 + i < M && j < nl)
                                ? C[(m0 + i) * c_m + ccol[j]] : (T)0;
                }
            }
            // rows past M read row M - 1 (their results are not stored)
            __global const T *Ar[MR];
#pragma unroll
            for (int i = 0; i < MR; ++i) Ar[i] = A + min(m0 + i, M - 1) * a_m;
            for (int k = 0; k < kl;) {
                const long kk = k0 + k, q = kk / KQ, r = kk - q * KQ;
                const int seg = (int)min((long)(kl - k), KQ - r);
                const long ka = q * a_khi + r * a_klo;
                const VT *bs = Bsv + k * NV;
                for (int s = 0; s < seg; ++s) {
#pragma unroll
                    for (int i = 0; i < MR; ++i) {
                        const VT a = (VT)Ar[i][ka + s * a_klo];
#pragma unroll
                        for (int v = 0; v < NV; ++v) acc[i][v] += a * bs[s * NV + v];
                    }
                }
                k += seg;
            }
#ifdef C_VEC
            if (full) {
#pragma unroll
                for (int i = 0; i < MR; ++i)
#pragma unroll
                    for (int v = 0; v < NV; ++v)
                        VSTORE(acc[i][v], C + (m0 + i) * c_m + ccol[v * VW]);
                continue;
            }
#endif
            const T *ap = (const T *)acc;
            for (int i = 0; i < MR; ++i)
                for (int j = 0; j < nl; ++j)
                    if (m0 + i < M) C[(m0 + i) * c_m + ccol[j]] = ap[i * NR + j];
        }
    }
}
#endif  // MR

// pw_wgrad — the weight gradient for long pixel rows: gw[g] (O, C) = sum over (n, p) of
// G[n, g] (O, p) * X[n, g] (C, p) as dot products along the pixels, which are contiguous in
// both (stride 1, P a multiple of VW): a work item keeps RO x RC vector accumulators (partial
// sums per lane) over every sample and pixel, then sums each one's lanes and writes it. No
// packing (pw_gemm packs x transposed, element by element: on 32 x 32 maps with few output
// channels that took longer than its multiply-adds). Large batches run in chunks of NS
// samples (a chunk's rows stay in L2), chunk s writing its sums at W + s * w_s, summed
// by the host (reduce.sum_into). Defines: T, VW, RO, RC.
// Launch: global (ceil(O / RO), ceil(C / RC), NG * chunks), local (1, 1, 1).
#if VW == 16
#define HSUM(v) hsum8((v).lo + (v).hi)
#elif VW == 8
#define HSUM(v) hsum8(v)
#elif VW == 4
#define HSUM(v) hsum4(v)
#endif
#ifdef RO
#define T4 CAT(T, 4)
#define T8 CAT(T, 8)
inline T hsum4(T4 v) { v.lo += v.hi; return v.x + v.y; }
#if VW >= 8
inline T hsum8(T8 v) { return hsum4(v.lo + v.hi); }
#endif

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void pw_wgrad(long O, long C, long N, long P, long NG, long NS,
              __global T *W, long w_off, long w_g, long w_o, long w_c, long w_s,
              __global const T *G, long g_off, long g_g, long g_n, long g_c,
              __global const T *X, long x_off, long x_g, long x_n, long x_c) {
    const long o0 = get_global_id(0) * RO, c0 = get_global_id(1) * RC;
    const long g = get_global_id(2) % NG, sc = get_global_id(2) / NG;  // group, sample chunk
    const long n0 = sc * NS, n1 = min(N, n0 + NS);
    __global const T *Gr[RO], *Xr[RC];
#pragma unroll
    for (int i = 0; i < RO; ++i) Gr[i] = G + g_off + g * g_g + min(o0 + i, O - 1) * g_c;
#pragma unroll
    for (int j = 0; j < RC; ++j) Xr[j] = X + x_off + g * x_g + min(c0 + j, C - 1) * x_c;
    VT acc[RO][RC];
#pragma unroll
    for (int i = 0; i < RO; ++i)
#pragma unroll
        for (int j = 0; j < RC; ++j) acc[i][j] = (VT)0;
    for (long n = n0; n < n1; ++n) {
        const long gn = n * g_n, xn = n * x_n;
        for (long p = 0; p < P; p += VW) {
            VT gv[RO];
#pragma unroll
            for (int i = 0; i < RO; ++i) gv[i] = VLOAD(Gr[i] + gn + p);
#pragma unroll
            for (int j = 0; j < RC; ++j) {
                const VT xv = VLOAD(Xr[j] + xn + p);
#pragma unroll
                for (int i = 0; i < RO; ++i) acc[i][j] += gv[i] * xv;
            }
        }
    }
    W += w_off + g * w_g + sc * w_s;
#pragma unroll
    for (int i = 0; i < RO; ++i)
#pragma unroll
        for (int j = 0; j < RC; ++j)
            if (o0 + i < O && c0 + j < C) W[(o0 + i) * w_o + (c0 + j) * w_c] = HSUM(acc[i][j]);
}
#endif
