// kernels/matmul.cl — batched GEMM on strided views: C[b] = alpha * A[b] @ B[b] + beta * C[b].
// A is M x K, B is K x N, C is M x N; each has a row stride, a column stride and a view_t over
// the batch dims (its offset is the operand's element offset). beta == 0: C is never read.
// The batch is looped over get_group_id(2) with step get_num_groups(2), so the host may cap
// the third launch dimension. Two kernels, one per device class (the host picks by a define):
//
// GEMM_TILED — GPUs: a work-group of (TSN/WPTN) x (TSM/WPTM) work items computes a TSM x TSN
//   tile of C; each work item a WPTM x WPTN block in registers, rows ty*4 + {0..3} + 4*RTSM*i
//   and columns tx*4 + {0..3} + 4*RTSN*j, so local memory is read as 4-vectors. A and B tiles
//   of depth TSK are double-buffered in local memory (global loads of the next tile are in
//   flight while the current one is used; one barrier per tile).
//   Defines: TSM TSN TSK WPTM WPTN (WPTM, WPTN multiples of 4); A_LOAD: 0 any strides (scalar),
//   1 a_cs == 1 (4-vectors along k), 2 a_rs == 1 (4-vectors along m); B_LOAD: 0 scalar,
//   1 b_cs == 1 (4-vectors along n), 2 b_rs == 1 (4-vectors along k). The vector modes need the
//   vector dim's size, the other strides and every offset to be multiples of 4 (the host
//   checks): a 4-vector is then aligned and either wholly inside the matrix or wholly outside.
//   EXACT: M, N, K are multiples of TSM, TSN, TSK (no bounds checks at all); I32: every offset
//   inside one batch element's A, B (tile overhang included) fits an int (32-bit index math).
//   Launch: global (ceil(N/TSN) * TSN/WPTN, ceil(M/TSM) * TSM/WPTM, batches),
//   local (TSN/WPTN, TSM/WPTM, 1).
//
// GEMM_CPU — CPUs (PoCL): no local memory and no barriers. A work item computes an
//   (MR*MT) x (NV*VW*NT) block of C as MT x NT register tiles of MR x (NV*VW), VW-vectors of T
//   along n. For each depth block of KC, the B panel of one register tile is packed (times
//   alpha, zero-padded past N) into a private array that stays in L1, then the MT tiles below
//   it run over it, each reading A as broadcasts along k; each depth block's sums start at
//   zero and are added to C's partial sums at the store (two-level summation). Defines: MR
//   NV VW MT NT KC; B_PACK: 0 any strides, 1 b_cs == 1 (vector copies), 2 b_rs == 1 (k-inner
//   copies); C_VEC: c_cs == 1 (vector loads/stores of C).
//   Launch: global (ceil(N/(NV*VW*NT)), ceil(M/(MR*MT)), batches), local (1, 1, 1).
#include "common.h"

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

// ACC (GEMM_TILED): the accumulator type; the host defines it as float for T = half (PyTorch
// accumulates float16 products in float32: ones(1, 3000) @ ones(3000, 1) is 3000, not 2048);
// T otherwise. A and B are read as T and widened; C is rounded to T once, at the store.
// GEMM_CPU keeps partial sums in C between depth blocks, so the host runs float16 through it
// as float32 operands instead (clgrad/ops/matmul.py gemm).
#ifdef ACC
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#else
#define ACC T
#endif

#ifdef GEMM_TILED
#ifdef IS_FLOAT
#define FMA(a, b, c) fma((ACC)(a), (ACC)(b), c)  // one FFMA on GPUs (not PoCL's concern)
#else
#define FMA(a, b, c) ((ACC)(a) * (ACC)(b) + (c))
#endif
#define RTSM (TSM / WPTM)
#define RTSN (TSN / WPTN)
#define NTHR (RTSM * RTSN)
#define T4 CAT(T, 4)
#define LA (TSM * TSK / NTHR)  // A elements loaded per work item per tile
#define LB (TSN * TSK / NTHR)
#define PADM (TSM + 4)         // row pitch of the local tiles: float4-aligned, fewer conflicts
#define PADN (TSN + 4)
#if (A_LOAD != 0 && LA % 4 != 0) || (B_LOAD != 0 && LB % 4 != 0)
#error "4-vector loads need TSM*TSK and TSN*TSK to be multiples of 4 * work-group size"
#endif
#ifdef EXACT
#define INB(cond) 1  // every tile is whole
#else
#define INB(cond) (cond)
#endif
#ifdef I32
typedef int IT;
#else
typedef long IT;
#endif

// Load this work item's share of the A tile at depth k0 into registers (zero outside A).
// A: the batch element's A (its offset applied).
inline void load_a(T ra[LA], __global const T *A, IT a_rs, IT a_cs, IT M, IT K, IT bm, IT k0,
                   int tid) {
#if A_LOAD == 1
#pragma unroll
    for (int l = 0; l < LA / 4; ++l) {
        int e = tid + l * NTHR, m = e / (TSK / 4), k = (e % (TSK / 4)) * 4;
        T4 v = (T4)0;
        if (INB(bm + m < M && k0 + k < K))
            v = *(__global const T4 *)(A + (bm + m) * a_rs + k0 + k);
        ra[4 * l] = v.s0; ra[4 * l + 1] = v.s1; ra[4 * l + 2] = v.s2; ra[4 * l + 3] = v.s3;
    }
#elif A_LOAD == 2
#pragma unroll
    for (int l = 0; l < LA / 4; ++l) {
        int e = tid + l * NTHR, k = e / (TSM / 4), m = (e % (TSM / 4)) * 4;
        T4 v = (T4)0;
        if (INB(bm + m < M && k0 + k < K))
            v = *(__global const T4 *)(A + bm + m + (k0 + k) * a_cs);
        ra[4 * l] = v.s0; ra[4 * l + 1] = v.s1; ra[4 * l + 2] = v.s2; ra[4 * l + 3] = v.s3;
    }
#else
#pragma unroll
    for (int l = 0; l < LA; ++l) {
        int e = tid + l * NTHR, k = e / TSM, m = e % TSM;
        ra[l] = INB(bm + m < M && k0 + k < K) ? A[(bm + m) * a_rs + (k0 + k) * a_cs] : (T)0;
    }
#endif
}

// Store the registers of load_a into the local tile As[k][m].
inline void store_a(__local T *As, const T ra[LA], int tid) {
#if A_LOAD == 1
#pragma unroll
    for (int l = 0; l < LA / 4; ++l) {
        int e = tid + l * NTHR, m = e / (TSK / 4), k = (e % (TSK / 4)) * 4;
#pragma unroll
        for (int j = 0; j < 4; ++j) As[(k + j) * PADM + m] = ra[4 * l + j];
    }
#elif A_LOAD == 2
#pragma unroll
    for (int l = 0; l < LA / 4; ++l) {
        int e = tid + l * NTHR, k = e / (TSM / 4), m = (e % (TSM / 4)) * 4;
        *(__local T4 *)(As + k * PADM + m) =
            (T4)(ra[4 * l], ra[4 * l + 1], ra[4 * l + 2], ra[4 * l + 3]);
    }
#else
#pragma unroll
    for (int l = 0; l < LA; ++l) {
        int e = tid + l * NTHR;
        As[(e / TSM) * PADM + e % TSM] = ra[l];
    }
#endif
}

// Load this work item's share of the B tile at depth k0 into registers (zero outside B).
inline void load_b(T rb[LB], __global const T *B, IT b_rs, IT b_cs, IT N, IT K, IT bn, IT k0,
                   int tid) {
#if B_LOAD == 1
#pragma unroll
    for (int l = 0; l < LB / 4; ++l) {
        int e = tid + l * NTHR, k = e / (TSN / 4), n = (e % (TSN / 4)) * 4;
        T4 v = (T4)0;
        if (INB(bn + n < N && k0 + k < K))
            v = *(__global const T4 *)(B + (k0 + k) * b_rs + bn + n);
        rb[4 * l] = v.s0; rb[4 * l + 1] = v.s1; rb[4 * l + 2] = v.s2; rb[4 * l + 3] = v.s3;
    }
#elif B_LOAD == 2
#pragma unroll
    for (int l = 0; l < LB / 4; ++l) {
        int e = tid + l * NTHR, n = e / (TSK / 4), k = (e % (TSK / 4)) * 4;
        T4 v = (T4)0;
        if (INB(bn + n < N && k0 + k < K))
            v = *(__global const T4 *)(B + k0 + k + (bn + n) * b_cs);
        rb[4 * l] = v.s0; rb[4 * l + 1] = v.s1; rb[4 * l + 2] = v.s2; rb[4 * l + 3] = v.s3;
    }
#else
#pragma unroll
    for (int l = 0; l < LB; ++l) {
        int e = tid + l * NTHR, k = e / TSN, n = e % TSN;
        rb[l] = INB(bn + n < N && k0 + k < K) ? B[(k0 + k) * b_rs + (bn + n) * b_cs] : (T)0;
    }
#endif
}

// Store the registers of load_b into the local tile Bs[k][n].
inline void store_b(__local T *Bs, const T rb[LB], int tid) {
#if B_LOAD == 1
#pragma unroll
    for (int l = 0; l < LB / 4; ++l) {
        int e = tid + l * NTHR, k = e / (TSN / 4), n = (e % (TSN / 4)) * 4;
        *(__local T4 *)(Bs + k * PADN + n) =
            (T4)(rb[4 * l], rb[4 * l + 1], rb[4 * l + 2], rb[4 * l + 3]);
    }
#elif B_LOAD == 2
#pragma unroll
    for (int l = 0; l < LB / 4; ++l) {
        int e = tid + l * NTHR, n = e / (TSK / 4), k = (e % (TSK / 4)) * 4;
#pragma unroll
        for (int j = 0; j < 4; ++j) Bs[(k + j) * PADN + n] = rb[4 * l + j];
    }
#else
#pragma unroll
    for (int l = 0; l < LB; ++l) {
        int e = tid + l * NTHR;
        Bs[(e / TSN) * PADN + e % TSN] = rb[l];
    }
#endif
}

__kernel __attribute__((reqd_work_group_size(RTSN, RTSM, 1)))
void gemm(long M, long N, long K, long nb, int nbd, shape_t bsh,
          __global T *C, view_t vc, long c_rs, long c_cs,
          __global const T *A, view_t va, long a_rs, long a_cs,
          __global const T *B, view_t vb, long b_rs, long b_cs, T alpha, T beta) {
    __local T As[2 * TSK * PADM] __attribute__((aligned(4 * sizeof(T))));
    __local T Bs[2 * TSK * PADN] __attribute__((aligned(4 * sizeof(T))));
    const int tx = get_local_id(0), ty = get_local_id(1), tid = ty * RTSN + tx;
    const long bn = (long)get_group_id(0) * TSN, bm = (long)get_group_id(1) * TSM;
    for (long bi = get_group_id(2); bi < nb; bi += get_num_groups(2)) {
        long oc, oa, ob;
        off3(bi, nbd, bsh, vc, va, vb, &oc, &oa, &ob);
        ACC acc[WPTM][WPTN];  // every loop over acc is unrolled: it must live in registers
#pragma unroll
        for (int i = 0; i < WPTM; ++i)
#pragma unroll
            for (int j = 0; j < WPTN; ++j) acc[i][j] = (ACC)0;
        T ra[LA], rb[LB];
        const long ntiles = (K + TSK - 1) / TSK;
        if (ntiles > 0) {
            load_a(ra, A + oa, a_rs, a_cs, M, K, bm, 0, tid);
            load_b(rb, B + ob, b_rs, b_cs, N, K, bn, 0, tid);
            store_a(As, ra, tid);
            store_b(Bs, rb, tid);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (long t = 0; t < ntiles; ++t) {
            const int cur = (int)(t & 1);
            if (t + 1 < ntiles) {
                load_a(ra, A + oa, a_rs, a_cs, M, K, bm, (t + 1) * TSK, tid);
                load_b(rb, B + ob, b_rs, b_cs, N, K, bn, (t + 1) * TSK, tid);
            }
            __local const T *as = As + cur * TSK * PADM + ty * 4;
            __local const T *bs = Bs + cur * TSK * PADN + tx * 4;
#include "gemm_tile_step.h"
            if (t + 1 < ntiles) {
                store_a(As + (1 - cur) * TSK * PADM, ra, tid);
                store_b(Bs + (1 - cur) * TSK * PADN, rb, tid);
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
#pragma unroll
        for (int i = 0; i < WPTM; ++i) {
            const long gm = bm + ty * 4 + (i / 4) * 4 * RTSM + (i % 4);
            if (!INB(gm < M)) continue;
#pragma unroll
            for (int j = 0; j < WPTN; ++j) {
                const long gn = bn + tx * 4 + (j / 4) * 4 * RTSN + (j % 4);
                if (!INB(gn < N)) continue;
                __global T *c = C + oc + gm * c_rs + gn * c_cs;
                ACC v = (ACC)alpha * acc[i][j];
                *c = (T)(beta == (T)0 ? v : v + (ACC)beta * (ACC)*c);
            }
        }
    }
}
#endif  // GEMM_TILED

#ifdef GEMM_CPU
#define NR (NV * VW)
#define VT CAT(T, VW)
#ifdef __clang__
typedef T VTU __attribute__((ext_vector_type(VW), aligned(sizeof(T))));  // unaligned vector
#define VLOAD(p) (*(__global const VTU *)(p))
#define VSTORE(v, p) (*(__global VTU *)(p) = (v))
#else
#define VLOAD(p) CAT(vload, VW)(0, p)
#define VSTORE(v, p) CAT(vstore, VW)(v, 0, p)
#endif

// Pack alpha * B[k0:k0+kl, n0:n0+NR] into Bs (row-major, NR wide), zeros past N and past kl.
inline void pack_b(VT *Bsv, __global const T *B, long b_rs, long b_cs, long N, long n0,
                   long k0, int kl, T alpha) {
    T *Bs = (T *)Bsv;
    __global const T *Bp = B + k0 * b_rs + n0 * b_cs;
#if B_PACK == 1
    if (n0 + NR <= N) {
        for (int k = 0; k < kl; ++k)
            for (int v = 0; v < NV; ++v) Bsv[k * NV + v] = alpha * VLOAD(Bp + k * b_rs + v * VW);
        return;
    }
#endif
    const int nl = (int)min((long)NR, N - n0);
#if B_PACK == 2
    for (int j = 0; j < nl; ++j)
        for (int k = 0; k < kl; ++k) Bs[k * NR + j] = alpha * Bp[k + j * b_cs];
#else
    for (int k = 0; k < kl; ++k)
        for (int j = 0; j < nl; ++j) Bs[k * NR + j] = alpha * Bp[k * b_rs + j * b_cs];
#endif
    for (int k = 0; k < kl; ++k)
        for (int j = nl; j < NR; ++j) Bs[k * NR + j] = (T)0;
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void gemm(long M, long N, long K, long nb, int nbd, shape_t bsh,
          __global T *C, view_t vc, long c_rs, long c_cs,
          __global const T *A, view_t va, long a_rs, long a_cs,
          __global const T *B, view_t vb, long b_rs, long b_cs, T alpha, T beta) {
    const long nblk = get_group_id(0) * (NR * NT), mblk = get_group_id(1) * (MR * MT);
    VT Bsv[KC * NV];
    for (long bi = get_group_id(2); bi < nb; bi += get_num_groups(2)) {
        long oc, oa, ob;
        off3(bi, nbd, bsh, vc, va, vb, &oc, &oa, &ob);
        // k0 == 0 runs even when K == 0, so that C = beta * C still happens
        for (long k0 = 0; k0 == 0 || k0 < K; k0 += KC) {
            const int kl = (int)max(0L, min((long)KC, K - k0));
            for (int jt = 0; jt < NT; ++jt) {
                const long n0 = nblk + jt * NR;
                if (n0 >= N) break;
                pack_b(Bsv, B + ob, b_rs, b_cs, N, n0, k0, kl, alpha);
                const int full_n = n0 + NR <= N;
                for (int it = 0; it < MT; ++it) {
                    const long m0 = mblk + it * MR;
                    if (m0 >= M) break;
                    const int full = full_n && m0 + MR <= M;
                    __global T *Cp = C + oc + m0 * c_rs + n0 * c_cs;
                    // Each depth block sums its KC products from zero, then adds C's running
                    // sum (beta * C at k0 == 0) at the store: two-level summation, error
                    // ~(KC + K / KC) ulp instead of ~K (K = 1e6, ones * 0.1: 1 % off before)
                    VT acc[MR][NV];
#pragma unroll
                    for (int i = 0; i < MR; ++i)
#pragma unroll
                        for (int v = 0; v < NV; ++v) acc[i][v] = (VT)0;
                    // rows past M read row M - 1 (their results are not stored)
                    __global const T *Ar[MR];
#pragma unroll
                    for (int i = 0; i < MR; ++i)
                        Ar[i] = A + oa + min(m0 + i, M - 1) * a_rs + k0 * a_cs;
                    for (int k = 0; k < kl; ++k) {
#pragma unroll
                        for (int i = 0; i < MR; ++i) {
                            const VT a = (VT)Ar[i][k * a_cs];
#pragma unroll
                            for (int v = 0; v < NV; ++v) acc[i][v] += a * Bsv[k * NV + v];
                        }
                    }
                    // beta == 0 ignores C (NaN there too), as BLAS and PyTorch
                    const int add_c = k0 > 0 || beta != (T)0;
                    const T s = k0 == 0 ? beta : (T)1;
#ifdef C_VEC
                    if (full) {
#pragma unroll
                        for (int i = 0; i < MR; ++i)
#pragma unroll
                            for (int v = 0; v < NV; ++v) {
                                __global T *cp = Cp + i * c_rs + v * VW;
                                VSTORE(add_c ? acc[i][v] + s * VLOAD(cp) : acc[i][v], cp);
                            }
                        continue;
                    }
#endif
                    const T *ap = (const T *)acc;
                    for (int i = 0; i < MR; ++i)
                        for (int j = 0; j < NR; ++j)
                            if (m0 + i < M && n0 + j < N) {
                                __global T *cp = Cp + i * c_rs + j * c_cs;
                                *cp = add_c ? ap[i * NR + j] + s * *cp : ap[i * NR + j];
                            }
                }
            }
        }
    }
}
#endif  // GEMM_CPU

