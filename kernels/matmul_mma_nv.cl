// kernels/matmul_mma_nv.cl — batched GEMM on NVIDIA's tensor cores through inline PTX mma.sync:
// C[b] = alpha * A[b] @ B[b] + beta * C[b], the operands strided views as in kernels/matmul.cl
// (same arguments, except alpha and beta are float). Built on NVIDIA's OpenCL only (sm_80 and
// newer), where clgrad/ops/matmul.py's has_mma found it building and matching NumPy at first
// use; matmul.py's mma_precision picks it (issue 35, part 2).
//
// Precision (one define):
//   MMA_F16  — T = half: A, B float16; products exact, summed in float32 (mma.sync m16n8k16
//              .f32.f16.f16.f32), C rounded to float16 once at the store (vstore_half, round to
//              nearest even): PyTorch CUDA's float16 GEMM (cuBLAS, float32 accumulation).
//   MMA_TF32 — T = float with TF32 allowed (torch.backends.cuda.matmul.allow_tf32 or
//              set_float32_matmul_precision('high'/'medium')): A, B rounded to TF32 (10-bit
//              mantissa, cvt.rna: nearest, ties away) as they enter local memory, products
//              summed in float32 (m16n8k8 .f32.tf32.tf32.f32): relative error about 1e-3 of
//              the operands' magnitudes, as PyTorch's TF32 matmul.
// Half values travel as their bits (ushort): no half arithmetic, so no cl_khr_fp16 needed.
//
// Tiling: a work-group of WARPS_M x WARPS_N warps (32 work items each, 1-D) computes a
// BM x BN tile of C (BM = WARPS_M * MT * 16, BN = WARPS_N * NT * 8); each warp an
// (MT * 16) x (NT * 8) block as MT x NT mma tiles of 16 x 8, accumulators in registers. Depth
// BK = 32 per tile: A's tile kept [m][k], B's [n][k] in local memory (row pitch LDK: the
// fragment reads, row g and column t of lane (g = lane / 4, t = lane % 4), fall on 32
// different banks); the next tile's global loads are in flight (registers) while this one is
// multiplied. Fragment layouts: PTX ISA, "Matrix fragments for mma.m16n8k8" (.tf32) and
// "mma.m16n8k16" (.f16); checked by bench/gpu/mma_probe.py and tests/test_matmul_mma.py.
// Defines: MMA_F16 or MMA_TF32; WARPS_M WARPS_N MT NT; A_LOAD, B_LOAD: how each operand's tile
// is read (the loaders below); EXACT: M, N, K multiples of BM, BN, BK (no bounds checks).
// Launch: global (ceil(N / BN) * NTHR, ceil(M / BM), batches), local (NTHR, 1, 1).
#include "common.h"
#include "mma_nv.h"

#define NTHR (WARPS_M * WARPS_N * 32)
#define BM (WARPS_M * MT * 16)
#define BN (WARPS_N * NT * 8)
#define BK 32

#ifdef MMA_F16
typedef ushort TIN;   // A and B read as bits
typedef ushort E;     // a float16's bits
#define LDK (BK + 8)  // 20 words a row: rows g = 0..7 start on banks 20g mod 32, 4 apart
#define KSTEP 16
#define ZERO ((E)0)
#define TO_E(p, i) ((p)[i])
#else
typedef float TIN;
typedef uint E;       // a TF32 value's bits (a float with its low 13 mantissa bits zero)
#define LDK (BK + 4)  // rows g start on banks 4g: lanes (g, t) on 4g + t, all different
#define KSTEP 8
#define ZERO 0u
#define TO_E(p, i) to_tf32((p)[i])
#endif

// The tile loaders. An operand X is read as rows (A's m, B's n) by depth (k): element (r, c)
// at X[r * xr + c * xk] (A: xr = a_rs, xk = a_cs; B: xr = b_cs, xk = b_rs), rows R, depth K.
// Its tile (ROWS x BK, from row r0 and depth k0) goes through registers into local memory as
// S[row * LDK + depth]. Three ways (the host picks per operand: A_LOAD, B_LOAD), and for B a
// fourth (B_LOAD 3, below the loaders):
//   1 VEC-vectors along k (xk == 1; K, xr, the offsets multiples of VEC: a vector is aligned
//     and wholly inside or outside), 16 bytes a work item a load, 16-byte local stores;
//   0 scalars, k fastest across a warp's work items (32 consecutive k of one row);
//   2 scalars, rows fastest: a warp takes 8 rows x 4 depths (8 consecutive elements of 4
//     rows of X in memory, whole 32-byte sectors), stored at banks 4 * row + depth (tf32) or
//     20 * row + depth / 2 (f16): no two work items of the warp on one bank.
#ifdef EXACT
#define INSIDE(r, c) 1
#else
#define INSIDE(r, c) ((r) < R && (c) < K)
#endif
#define NWARPS (NTHR / 32)
#ifdef MMA_F16
#define VEC 8
#define LOADV(p) vload4(0, (__global const uint *)(p))
#else
#define VEC 4
inline uint4 tf32_4(float4 v) { return (uint4)(to_tf32(v.x), to_tf32(v.y), to_tf32(v.z), to_tf32(v.w)); }
#define LOADV(p) tf32_4(vload4(0, p))
#endif
#define LOADER_VEC(NAME, ROWS)                                                                 \
inline void load_##NAME(uint4 *rv, __global const TIN *X, long xr, long xk, long R, long K,    \
                        long r0, long k0, int tid) {                                           \
    _Pragma("unroll")                                                                          \
    for (int e = 0; e < ROWS * BK / VEC / NTHR; ++e) {                                         \
        const int v = tid + e * NTHR, rr = v / (BK / VEC), cc = (v % (BK / VEC)) * VEC;        \
        const long r = r0 + rr, c = k0 + cc;                                                   \
        rv[e] = INSIDE(r, c) ? LOADV(X + r * xr + c) : (uint4)0;                               \
    }                                                                                          \
}                                                                                              \
inline void store_##NAME(__local E *S, const uint4 *rv, int tid) {                             \
    _Pragma("unroll")                                                                          \
    for (int e = 0; e < ROWS * BK / VEC / NTHR; ++e) {                                         \
        const int v = tid + e * NTHR;                                                          \
        vstore4(rv[e], 0, (__local uint *)(S + (v / (BK / VEC)) * LDK + (v % (BK / VEC)) * VEC)); \
    }                                                                                          \
}
#define LOADER_SCALAR(NAME, ROWS, RFAST)                                                       \
inline int row_of_##NAME(int tid, int e) {                                                     \
    const int i = tid + e * NTHR, w = (tid >> 5) + e * NWARPS, l = tid & 31;                   \
    return RFAST ? (w % (ROWS / 8)) * 8 + (l & 7) : i / BK;                                    \
}                                                                                              \
inline int depth_of_##NAME(int tid, int e) {                                                   \
    const int i = tid + e * NTHR, w = (tid >> 5) + e * NWARPS, l = tid & 31;                   \
    return RFAST ? (w / (ROWS / 8)) * 4 + (l >> 3) : i % BK;                                   \
}                                                                                              \
inline void load_##NAME(E *rv, __global const TIN *X, long xr, long xk, long R, long K,        \
                        long r0, long k0, int tid) {                                           \
    _Pragma("unroll")                                                                          \
    for (int e = 0; e < ROWS * BK / NTHR; ++e) {                                               \
        const long r = r0 + row_of_##NAME(tid, e), c = k0 + depth_of_##NAME(tid, e);           \
        rv[e] = INSIDE(r, c) ? TO_E(X, r * xr + c * xk) : ZERO;                                \
    }                                                                                          \
}                                                                                              \
inline void store_##NAME(__local E *S, const E *rv, int tid) {                                 \
    _Pragma("unroll")                                                                          \
    for (int e = 0; e < ROWS * BK / NTHR; ++e)                                                 \
        S[row_of_##NAME(tid, e) * LDK + depth_of_##NAME(tid, e)] = rv[e];                      \
}
#if A_LOAD == 1
LOADER_VEC(a, BM)
#define A_REGS uint4 ra[BM * BK / VEC / NTHR]
#else
LOADER_SCALAR(a, BM, A_LOAD == 2)
#define A_REGS E ra[BM * BK / NTHR]
#endif
#if B_LOAD == 3
// B_LOAD 3: VEC-vectors along n (b_cs == 1; N, b_rs, the offsets multiples of VEC), kept
// [k][n] in local memory (row pitch LDN) and stored as they came. Fragment reads: TF32 lane
// (g, t) reads k = t (+4), n = g: banks 8t + g, all different (LDN = BN + 8); f16 packs two
// halves of rows k = 2t, 2t + 1 (two 16-bit reads, on words 68k + n / 2: banks 8t + n / 2, a
// word shared by two lanes is one read).
#define LDN (BN + 8)
#define BS_SIZE (BK * LDN)
inline void load_b(uint4 *rv, __global const TIN *X, long xr, long xk, long R, long K,
                   long r0, long k0, int tid) {
#pragma unroll
    for (int e = 0; e < BN * BK / VEC / NTHR; ++e) {
        const int v = tid + e * NTHR, cc = v / (BN / VEC), rr = (v % (BN / VEC)) * VEC;
        const long r = r0 + rr, c = k0 + cc;
        rv[e] = INSIDE(r, c) ? LOADV(X + c * xk + r) : (uint4)0;
    }
}
inline void store_b(__local E *S, const uint4 *rv, int tid) {
#pragma unroll
    for (int e = 0; e < BN * BK / VEC / NTHR; ++e) {
        const int v = tid + e * NTHR;
        vstore4(rv[e], 0, (__local uint *)(S + (v / (BN / VEC)) * LDN + (v % (BN / VEC)) * VEC));
    }
}
#define B_REGS uint4 rb[BN * BK / VEC / NTHR]
#elif B_LOAD == 1
LOADER_VEC(b, BN)
#define B_REGS uint4 rb[BN * BK / VEC / NTHR]
#else
LOADER_SCALAR(b, BN, B_LOAD == 2)
#define B_REGS E rb[BN * BK / NTHR]
#endif

#ifdef MMA_F16
// two adjacent halves of a local row as one 32-bit register (the low half first)
#define PAIR(S, row, col) (*(__local const uint *)((S) + (row) * LDK + (col)))
#endif

__kernel __attribute__((reqd_work_group_size(NTHR, 1, 1)))
void gemm_mma(long M, long N, long K, long nb, int nbd, shape_t bsh,
              __global CT *C, view_t vc, long c_rs, long c_cs,
              __global const T *A, view_t va, long a_rs, long a_cs,
              __global const T *B, view_t vb, long b_rs, long b_cs, float alpha, float beta) {
    __local E As[BM * LDK] __attribute__((aligned(16)));
#ifndef BS_SIZE
#define BS_SIZE (BN * LDK)
#endif
    __local E Bs[BS_SIZE] __attribute__((aligned(16)));
    const int tid = get_local_id(0);
    const uint lane = lane_id(), g = lane >> 2, t = lane & 3;
    const int warp = tid >> 5, wm = (warp / WARPS_N) * (MT * 16), wn = (warp % WARPS_N) * (NT * 8);
    const long bn = (long)get_group_id(0) * BN, bm = (long)get_group_id(1) * BM;
    __global const TIN *Ai = (__global const TIN *)A;
    __global const TIN *Bi = (__global const TIN *)B;
    for (long bi = get_group_id(2); bi < nb; bi += get_num_groups(2)) {
        long oc, oa, ob;
        off3(bi, nbd, bsh, vc, va, vb, &oc, &oa, &ob);
        float acc[MT][NT][4];
        ZERO_ACC(acc)
        A_REGS;
        B_REGS;
        const long ntiles = (K + BK - 1) / BK;
        if (ntiles > 0) {
            load_a(ra, Ai + oa, a_rs, a_cs, M, K, bm, 0, tid);
            load_b(rb, Bi + ob, b_cs, b_rs, N, K, bn, 0, tid);
        }
        for (long kt = 0; kt < ntiles; ++kt) {
            barrier(CLK_LOCAL_MEM_FENCE);  // the previous tile's readers are done
            store_a(As, ra, tid);
            store_b(Bs, rb, tid);
            barrier(CLK_LOCAL_MEM_FENCE);
            if (kt + 1 < ntiles) {  // in flight while this tile is multiplied
                load_a(ra, Ai + oa, a_rs, a_cs, M, K, bm, (kt + 1) * BK, tid);
                load_b(rb, Bi + ob, b_cs, b_rs, N, K, bn, (kt + 1) * BK, tid);
            }
#pragma unroll
            for (int ks = 0; ks < BK; ks += KSTEP) {
                uint af[MT][4], bf[NT][2];
#pragma unroll
                for (int i = 0; i < MT; ++i) {
                    const int r0 = wm + i * 16 + g, r1 = r0 + 8;
#ifdef MMA_F16
                    af[i][0] = PAIR(As, r0, ks + 2 * t);
                    af[i][1] = PAIR(As, r1, ks + 2 * t);
                    af[i][2] = PAIR(As, r0, ks + 2 * t + 8);
                    af[i][3] = PAIR(As, r1, ks + 2 * t + 8);
#else
                    af[i][0] = As[r0 * LDK + ks + t];
                    af[i][1] = As[r1 * LDK + ks + t];
                    af[i][2] = As[r0 * LDK + ks + t + 4];
                    af[i][3] = As[r1 * LDK + ks + t + 4];
#endif
                }
#pragma unroll
                for (int j = 0; j < NT; ++j) {
                    const int c0 = wn + j * 8 + g;
#if B_LOAD == 3 && defined(MMA_F16)
                    bf[j][0] = (uint)Bs[(ks + 2 * t) * LDN + c0] |
                               ((uint)Bs[(ks + 2 * t + 1) * LDN + c0] << 16);
                    bf[j][1] = (uint)Bs[(ks + 2 * t + 8) * LDN + c0] |
                               ((uint)Bs[(ks + 2 * t + 9) * LDN + c0] << 16);
#elif B_LOAD == 3
                    bf[j][0] = Bs[(ks + t) * LDN + c0];
                    bf[j][1] = Bs[(ks + t + 4) * LDN + c0];
#elif defined(MMA_F16)
                    bf[j][0] = PAIR(Bs, c0, ks + 2 * t);
                    bf[j][1] = PAIR(Bs, c0, ks + 2 * t + 8);
#else
                    bf[j][0] = Bs[c0 * LDK + ks + t];
                    bf[j][1] = Bs[c0 * LDK + ks + t + 4];
#endif
                }
#pragma unroll
                for (int i = 0; i < MT; ++i)
#pragma unroll
                    for (int j = 0; j < NT; ++j)
                        __asm__ __volatile__(MMA_INSTR
                                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                                     : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]),
                                       "+f"(acc[i][j][2]), "+f"(acc[i][j][3])
                                     : "r"(af[i][0]), "r"(af[i][1]), "r"(af[i][2]),
                                       "r"(af[i][3]), "r"(bf[j][0]), "r"(bf[j][1]));
            }
        }
        STORE_ACC(acc, C, oc, c_rs, c_cs, bm + wm, bn + wn, M, N, g, t, alpha, beta)
    }
}
