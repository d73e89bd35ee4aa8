// kernels/matmul_mma_async_nv.cl — batched float16 GEMM on NVIDIA's tensor cores, pipelined:
// C[b] = alpha * A[b] @ B[b] + beta * C[b], arguments as kernels/matmul_mma_nv.cl's gemm_mma
// (alpha, beta float). Where that kernel moves tiles through registers and reads fragments
// 32 bits at a time, this one copies them global -> local with cp.async (16 bytes a work item,
// no registers, STAGES tiles in flight) and reads fragments with ldmatrix (four 8 x 8 matrices
// a warp instruction). Built on NVIDIA's OpenCL only (sm_80 and newer), where
// clgrad/ops/matmul.py's has_mma_async found it building and matching NumPy at first use.
//
// Precision: A, B float16 (read as their bits), products exact, summed in float32 (mma.sync
// m16n8k16 .f32.f16.f16.f32), C rounded to float16 once at the store: as matmul_mma_nv.cl.
// With MMA_TF32 (T = float, TF32 allowed; both operands contiguous along k): A, B rounded to
// TF32 (cvt.rna) as their fragments are read, m16n8k8 .tf32, float32 C: as matmul_mma_nv.cl.
//
// Operand layouts (one define each): an operand X is read as rows (A's m, B's n) by depth k.
//   A_KR 0: X contiguous along k (A's a_cs == 1; B's b_rs == 1): the tile kept [row][k],
//           fragments by ldmatrix;
//   A_KR 1: X contiguous along its rows (A's a_rs == 1; B's b_cs == 1): kept [k][row],
//           fragments by ldmatrix.trans.
//   (B_KR likewise.) The contiguous extent (K, or M / N), the row (or depth) stride, the
//   offset and the batch strides are multiples of 8 elements (16 bytes): the host checks, and
//   a 16-byte chunk is wholly inside or outside the operand (outside: cp.async fills zeros).
// Local layouts, XOR-swizzled by 16-byte chunk so that the 8 rows of an ldmatrix matrix and
// the 8 chunks of a copy phase fall on 8 different 4-bank groups:
//   [row][k], BK = 32 halves (4 chunks) a row: chunk c of row r at chunk c ^ ((r >> 1) & 3);
//   [k][row], ROWS halves (ROWS / 8 >= 8 chunks) a row: chunk c of row k at chunk c ^ (k & 7).
// Tiling: WARPS_M x WARPS_N warps, each an (MT * 16) x (NT * 8) block of mma tiles (NT even:
// one ldmatrix.x4 gives two n-tiles of B); BK = 32; STAGES local buffers of A's and B's tiles
// (cp.async.wait_group keeps STAGES - 2 groups in flight while a tile is multiplied; one
// barrier a tile). PTX ISA: "cp.async", "ldmatrix", "Matrix fragments for mma.m16n8k16".
// Defines: WARPS_M WARPS_N MT NT STAGES WAIT (= STAGES - 2, a literal), GROUP_M (rows of
// work-groups swept together, for L2), A_KR B_KR, EXACT (M, N,
// K multiples of BM, BN, BK), SMEM_CVTA (the shared-window address of a __local pointer by
// cvta.to.shared, where has_mma_async found the plain cast is not that address).
// Launch: global (ceil(N / BN) * NTHR, ceil(M / BM), batches), local (NTHR, 1, 1).
#include "common.h"

#ifndef SMEM_PROBE
#ifdef MMA_TF32
// TF32: A and B float (read as bits), each element rounded to TF32 (cvt.rna, as
// matmul_mma_nv.cl) after ldmatrix; a 64-byte tile row holds BK = 16 floats, so the copies,
// swizzles and ldmatrix addresses are the float16 kernel's, byte for byte (ldmatrix's 8 x 8
// matrices of 16-bit elements are 8 x 4 of 32-bit ones: lane (g, t) gets row g, column t, the
// m16n8k8 .tf32 fragment layout). Both operands k-contiguous ([row][k]; .trans has no 32-bit
// form).
typedef uint TIN;
#define EV 4        // elements per 16-byte chunk
#define KSTEP 8     // an mma's depth
#if A_KR || B_KR
#error "gemm_mma_async: TF32 takes operands contiguous along k only (A_KR = B_KR = 0)"
#endif
#define TF32_ROUND(x) ((x) = to_tf32(as_float(x)))  // (to_tf32, MMA_INSTR: mma_nv.h)
#else
typedef ushort TIN;
#define EV 8
#define KSTEP 16
#define TF32_ROUND(x)
#define MMA_F16 1  // (A and B float16: mma_nv.h's instruction and store)
#endif
#include "mma_nv.h"

#define ES (16 / EV)  // bytes an element
#define NTHR (WARPS_M * WARPS_N * 32)
#define BM (WARPS_M * MT * 16)
#define BN (WARPS_N * NT * 8)
#define BK (4 * EV)   // tile depth: 64 bytes a row
#define A_SZ (BM * BK)  // elements of one stage's A tile
#define B_SZ (BN * BK)
#define STAGE_SZ (A_SZ + B_SZ)
#if BM < 64 || BN < 64 || (NT % 2) || (BM * 4) % NTHR || (BN * 4) % NTHR || STAGES < 2
// (the [k][row] swizzle spans 8 chunks; ldmatrix.x4 reads two n-tiles; whole chunks per item)
#error "gemm_mma_async: BM, BN >= 64, NT even, BM * 4 and BN * 4 multiples of NTHR, STAGES >= 2"
#endif
#endif  // SMEM_PROBE
#include "mma_async_nv.h"  // cp.async, ldmatrix, swizzles, load_frags, MMA_TILE

// has_mma_async's first check, which reads and writes no local memory through the addresses:
// out[0], out[1] = smem_addr of elements 0 and 1000 of a local array (a shared-window offset
// is below the SM's shared memory size and the two are 2000 bytes apart).
__kernel void smem_window(__global ulong *out) {
    __local ushort probe[1024];
    probe[get_local_id(0)] = 0;
    out[0] = smem_addr64(probe);
    out[1] = smem_addr64(probe + 1000);
}

#ifndef SMEM_PROBE

#ifdef EXACT
#define INSIDE(r, c) 1
#else
#define INSIDE(r, c) ((r) < R && (c) < K)
#endif

// Copy one ROWS x BK tile of X (rows from r0, depths from k0; element (r, c) at
// X[r * xr + c * xk]) into the local tile at shared address s, as the layout KR says. kofs =
// k0 * xk; the rest of a chunk's source offset and its local offset depend on the work item
// only (the compiler keeps them out of the tile loop).
#define COPY_TILE(NAME, ROWS, KR)                                                              \
inline void copy_##NAME(uint s, __global const TIN *X, long xr, long xk, long R, long K,       \
                        long r0, long k0, long kofs, int tid) {                                \
    _Pragma("unroll")                                                                          \
    for (int e = 0; e < ROWS * BK / EV / NTHR; ++e) {                                          \
        const int v = tid + e * NTHR;                                                          \
        int rr, cc, idx;                                                                       \
        if (KR) {                                                                              \
            cc = v / (ROWS / 8);  rr = (v % (ROWS / 8)) * 8;                                   \
            idx = IDX_KR(ROWS, cc, rr);                                                        \
        } else {                                                                               \
            rr = v / (BK / EV);  cc = (v % (BK / EV)) * EV;                                    \
            idx = IDX_RK(rr, cc);                                                              \
        }                                                                                      \
        const long fixed = (r0 + rr) * xr + cc * xk;                                           \
        const int in = INSIDE(r0 + rr, k0 + cc);                                               \
        cp_async16(s + ES * idx, in ? X + fixed + kofs : X, in ? 16 : 0);                      \
    }                                                                                          \
}
COPY_TILE(a, BM, A_KR)
COPY_TILE(b, BN, B_KR)

__kernel __attribute__((reqd_work_group_size(NTHR, 1, 1)))
void gemm_mma_async(long M, long N, long K, long nb, int nbd, shape_t bsh,
                    __global CT *C, view_t vc, long c_rs, long c_cs,
                    __global const T *A, view_t va, long a_rs, long a_cs,
                    __global const T *B, view_t vb, long b_rs, long b_cs,
                    float alpha, float beta) {
    __local ushort smem[STAGES * STAGE_SZ * ES / 2] __attribute__((aligned(128)));
    const uint sbase = smem_addr(smem);
    const int tid = get_local_id(0);
    const uint lane = lane_id(), g = lane >> 2, t = lane & 3;
    const int warp = tid >> 5, wm = (warp / WARPS_N) * (MT * 16), wn = (warp % WARPS_N) * (NT * 8);
    // Work-groups run in id order (x fastest); GROUP_M rows of tiles at a time sweep the
    // columns, so that the A rows and B columns of the work-groups in flight stay in L2
    const long nx = get_num_groups(0), ny = get_num_groups(1);
    const long id = get_group_id(1) * nx + get_group_id(0), first = id / (GROUP_M * nx) * GROUP_M;
    const long gm = min(ny - first, (long)GROUP_M), in_group = id % (GROUP_M * nx);
    const long bm = (first + in_group % gm) * BM, bn = in_group / gm * BN;
    __global const TIN *Ai = (__global const TIN *)A;
    __global const TIN *Bi = (__global const TIN *)B;
    A_LANE(lane, a_r, a_k);
    B_LANE(lane, b_r, b_k);
    for (long bi = get_group_id(2); bi < nb; bi += get_num_groups(2)) {
        long oc, oa, ob;
        off3(bi, nbd, bsh, vc, va, vb, &oc, &oa, &ob);
        __global const TIN *Ab = Ai + oa, *Bb = Bi + ob;
        float acc[MT][NT][4];
        ZERO_ACC(acc)
        const long ntiles = (K + BK - 1) / BK;
#pragma unroll
        for (int s = 0; s < STAGES - 1; ++s) {
            if (s < ntiles) {
                const uint st = sbase + ES * s * STAGE_SZ;
                copy_a(st, Ab, a_rs, a_cs, M, K, bm, s * BK, s * BK * a_cs, tid);
                copy_b(st + ES * A_SZ, Bb, b_cs, b_rs, N, K, bn, s * BK, s * BK * b_rs, tid);
            }
            cp_commit();
        }
        uint rd = 0, wr = STAGES - 1;  // the stages tile kt is read from, tile kt + STAGES - 1
        for (long kt = 0; kt < ntiles; ++kt) {  // written to
            cp_wait();                      // this work item's copies of tile kt are in
            barrier(CLK_LOCAL_MEM_FENCE);   // everyone's are; tile kt - 1's readers are done
            const long nk = kt + STAGES - 1;
            if (nk < ntiles) {              // into the buffer tile kt - 1 used
                const uint st = sbase + ES * wr * STAGE_SZ;
                copy_a(st, Ab, a_rs, a_cs, M, K, bm, nk * BK, nk * BK * a_cs, tid);
                copy_b(st + ES * A_SZ, Bb, b_cs, b_rs, N, K, bn, nk * BK, nk * BK * b_rs, tid);
            }
            cp_commit();
            const uint sa = sbase + ES * rd * STAGE_SZ, sb = sa + ES * A_SZ;
            rd = rd == STAGES - 1 ? 0 : rd + 1;
            wr = wr == STAGES - 1 ? 0 : wr + 1;
            MMA_TILE(sa, sb, wm, wn, a_r, a_k, b_r, b_k, acc)  // (mma_async_nv.h)
        }
        cp_wait_all();
        barrier(CLK_LOCAL_MEM_FENCE);  // the next batch element's copies reuse the buffers
        STORE_ACC(acc, C, oc, c_rs, c_cs, bm + wm, bn + wn, M, N, g, t, alpha, beta)
    }
}
#endif  // SMEM_PROBE
