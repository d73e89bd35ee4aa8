// kernels/mma_async_nv.h — what the pipelined tensor-core kernels (matmul_mma_async_nv.cl,
// conv_igemm_mma_nv.cl; NVIDIA's OpenCL only: inline PTX) share: the shared-window address of
// a local pointer, cp.async copies global -> local, ldmatrix fragment reads, the XOR-swizzled
// tile layouts and the fragments of one depth step (load_frags, MMA_TILE).
//
// Always: smem_addr64 / smem_addr (SMEM_CVTA: by cvta.to.shared), cp_async16, cp_commit,
// cp_wait_all, ldsm4, ldsm4t. With the tile defines (unless SMEM_PROBE): TIN, EV (elements a
// 16-byte chunk), ES (bytes an element), KSTEP (an mma's depth), TF32_ROUND, BM, BN, BK, MT,
// NT, A_KR, B_KR (see matmul_mma_async_nv.cl), WAIT (cp_wait's literal): the swizzles
// IDX_RK / IDX_KR, load_frags and MMA_TILE.
//
// MMA_EMULATE (float16 only; conv_igemm_mma_nv.cl's tests on any OpenCL device): no PTX.
// Shared addresses are byte offsets into the kernel's local array SMEM (a name the including
// kernel defines), cp.async a plain copy with the same zero fill, and MMA_TILE sums the products
// of the swizzled tiles in float32 per accumulator, at the rows and columns mma's D fragment
// gives each lane: the tiles, swizzles, gathers, copies' bounds and stores are exercised; the
// lanes' ldmatrix addresses (A_LANE, B_LANE, load_frags), cp.async's alignment and its wait
// counts are not (they are the pipelined GEMM's, checked on NVIDIA's devices only).

#ifdef MMA_EMULATE
#define smem_addr64(p) ((ulong)0)
#define smem_addr(p) ((uint)0)
#define lane_of(tid) ((uint)(tid) & 31)
// (dst: byte offset into SMEM; bytes < 16: the rest of the chunk zero, as cp.async's src-size)
#define CP_ASYNC16(dst, src, bytes)                                                            \
    {                                                                                          \
        __local ushort *d_ = SMEM + (dst) / 2;                                                 \
        _Pragma("unroll") for (int e_ = 0; e_ < 8; ++e_)                                       \
            d_[e_] = 2 * e_ < (int)(bytes) ? (src)[e_] : (ushort)0;                            \
    }
#define cp_commit()
#define cp_wait()
#define cp_wait_all()
#else
// the shared-state-space address of a local pointer (what cp.async and ldmatrix take), in 64
// bits; its low 32 bits are what the instructions below take
inline ulong smem_addr64(__local const ushort *p) {
#ifdef SMEM_CVTA
    ulong s;
    __asm__("cvta.to.shared.u64 %0, %1;" : "=l"(s) : "l"((ulong)p));
    return s;
#else
    return (ulong)p;
#endif
}
#define smem_addr(p) ((uint)smem_addr64(p))
#define lane_of(tid) lane_id()  // (mma_nv.h)

// 16 bytes global -> local at shared address dst, of which the first ``bytes`` are read and the
// rest filled with zeros (PTX "cp.async": src-size)
inline void cp_async16(uint dst, __global const void *src, uint bytes) {
    __asm__ __volatile__("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                         :: "r"(dst), "l"(src), "r"(bytes) : "memory");
}
#define CP_ASYNC16(dst, src, bytes) cp_async16((dst), (src), (bytes))

inline void cp_commit(void) { __asm__ __volatile__("cp.async.commit_group;" ::: "memory"); }
inline void cp_wait_all(void) { __asm__ __volatile__("cp.async.wait_group 0;" ::: "memory"); }

inline void ldsm4(uint addr, uint *r0, uint *r1, uint *r2, uint *r3) {
    __asm__ __volatile__("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                         : "=r"(*r0), "=r"(*r1), "=r"(*r2), "=r"(*r3) : "r"(addr) : "memory");
}

inline void ldsm4t(uint addr, uint *r0, uint *r1, uint *r2, uint *r3) {
    __asm__ __volatile__("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                         : "=r"(*r0), "=r"(*r1), "=r"(*r2), "=r"(*r3) : "r"(addr) : "memory");
}
#endif  // MMA_EMULATE

#ifndef SMEM_PROBE
#if !defined(MMA_EMULATE)
#define STR_(x) #x
#define STR(x) STR_(x)
inline void cp_wait(void) {
    __asm__ __volatile__("cp.async.wait_group " STR(WAIT) ";" ::: "memory");
}
#endif

// element offsets in a swizzled tile: (row r, depth k) of [row][k]; (k, r) of [k][row] (the
// latter float16 only)
#define IDX_RK(r, k) ((r) * BK + ((((k) / EV) ^ (((r) >> 1) & 3)) * EV) + ((k) % EV))
#define IDX_KR(ROWS, k, r) ((k) * (ROWS) + ((((r) >> 3) ^ ((k) & 7)) << 3) + ((r) & 7))

// the lane's ldmatrix row (a_r, b_r) and depth (a_k, b_k) within a 16 x 16 block (PTX: lanes
// 8i..8i+7 address matrix i), as the layouts A_KR, B_KR read
#if A_KR
#define A_LANE(lane, a_r, a_k) const int a_k = ((lane) & 7) + ((lane) >> 4) * 8, \
                                         a_r = (((lane) >> 3) & 1) * 8
#else
#define A_LANE(lane, a_r, a_k) const int a_r = (lane) & 15, a_k = ((lane) >> 4) * EV
#endif
#if B_KR
#define B_LANE(lane, b_r, b_k) const int b_k = (lane) & 15, b_r = ((lane) >> 4) * 8
#else
#define B_LANE(lane, b_r, b_k) const int b_r = ((lane) & 7) + ((lane) >> 4) * 8, \
                                         b_k = (((lane) >> 3) & 1) * EV
#endif

#ifndef MMA_EMULATE
// The A (MT 16 x 16 blocks) and B (NT 8-column blocks) fragments of depth step ks of the
// tiles at shared addresses sa, sb, for the warp at (wm, wn); (a_r, a_k), (b_r, b_k): the
// lane's ldmatrix row within a 16 x 16 block (A_LANE, B_LANE).
inline void load_frags(uint sa, uint sb, int ks, int wm, int wn, int a_r, int a_k, int b_r,
                       int b_k, uint af[MT][4], uint bf[NT][2]) {
#pragma unroll
    for (int i = 0; i < MT; ++i) {
#if A_KR
        const uint ad = sa + ES * IDX_KR(BM, ks + a_k, wm + i * 16 + a_r);
        ldsm4t(ad, &af[i][0], &af[i][1], &af[i][2], &af[i][3]);
#else
        const uint ad = sa + ES * IDX_RK(wm + i * 16 + a_r, ks + a_k);
        ldsm4(ad, &af[i][0], &af[i][1], &af[i][2], &af[i][3]);
#endif
        TF32_ROUND(af[i][0]); TF32_ROUND(af[i][1]); TF32_ROUND(af[i][2]); TF32_ROUND(af[i][3]);
    }
#pragma unroll
    for (int j = 0; j < NT; j += 2) {
#if B_KR
        const uint ad = sb + ES * IDX_KR(BN, ks + b_k, wn + j * 8 + b_r);
        ldsm4t(ad, &bf[j][0], &bf[j][1], &bf[j + 1][0], &bf[j + 1][1]);
#else
        const uint ad = sb + ES * IDX_RK(wn + j * 8 + b_r, ks + b_k);
        ldsm4(ad, &bf[j][0], &bf[j][1], &bf[j + 1][0], &bf[j + 1][1]);
#endif
        TF32_ROUND(bf[j][0]); TF32_ROUND(bf[j][1]);
        TF32_ROUND(bf[j + 1][0]); TF32_ROUND(bf[j + 1][1]);
    }
}

// acc += the product of the BM x BK tile at shared address sa and the BK x BN one at sb, for
// the warp at (wm, wn): fragments of the next depth step read while this one's mma run
#define MMA_TILE(sa, sb, wm, wn, a_r, a_k, b_r, b_k, acc)                                      \
    {                                                                                          \
        uint af_[2][MT][4], bf_[2][NT][2];                                                     \
        load_frags(sa, sb, 0, wm, wn, a_r, a_k, b_r, b_k, af_[0], bf_[0]);                     \
        _Pragma("unroll") for (int s_ = 0; s_ < BK / KSTEP; ++s_) {                            \
            if (s_ + 1 < BK / KSTEP)                                                           \
                load_frags(sa, sb, (s_ + 1) * KSTEP, wm, wn, a_r, a_k, b_r, b_k,               \
                           af_[(s_ + 1) & 1], bf_[(s_ + 1) & 1]);                              \
            _Pragma("unroll") for (int i_ = 0; i_ < MT; ++i_)                                  \
            _Pragma("unroll") for (int j_ = 0; j_ < NT; ++j_)                                  \
                __asm__(MMA_INSTR "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"     \
                        : "+f"(acc[i_][j_][0]), "+f"(acc[i_][j_][1]), "+f"(acc[i_][j_][2]),    \
                          "+f"(acc[i_][j_][3])                                                 \
                        : "r"(af_[s_ & 1][i_][0]), "r"(af_[s_ & 1][i_][1]),                    \
                          "r"(af_[s_ & 1][i_][2]), "r"(af_[s_ & 1][i_][3]),                    \
                          "r"(bf_[s_ & 1][j_][0]), "r"(bf_[s_ & 1][j_][1]));                   \
        }                                                                                      \
    }
#else
// (emulated: accumulator q of tile (i, j) of lane (g, t) is row g (+8 for q >= 2), column
// 2t (+1 for odd q): PTX's fragment layout of mma's D; float16 operands read from SMEM)
#if A_KR
#define A_AT(r, k) IDX_KR(BM, k, r)
#else
#define A_AT(r, k) IDX_RK(r, k)
#endif
#if B_KR
#define B_AT(c, k) IDX_KR(BN, k, c)
#else
#define B_AT(c, k) IDX_RK(c, k)
#endif
#define MMA_TILE(sa, sb, wm, wn, a_r, a_k, b_r, b_k, acc)                                      \
    {                                                                                          \
        const uint ln_ = lane_of(get_local_id(0)), g_ = ln_ >> 2, t_ = ln_ & 3;                \
        __local const half *A_ = (__local const half *)(SMEM + (sa) / 2);                      \
        __local const half *B_ = (__local const half *)(SMEM + (sb) / 2);                      \
        for (int i_ = 0; i_ < MT; ++i_)                                                        \
        for (int j_ = 0; j_ < NT; ++j_)                                                        \
        for (int q_ = 0; q_ < 4; ++q_) {                                                       \
            const int r_ = (wm) + i_ * 16 + g_ + (q_ >> 1) * 8;                                \
            const int c_ = (wn) + j_ * 8 + 2 * t_ + (q_ & 1);                                  \
            float s_ = 0.0f;                                                                   \
            for (int k_ = 0; k_ < BK; ++k_)                                                    \
                s_ += vload_half(A_AT(r_, k_), A_) * vload_half(B_AT(c_, k_), B_);             \
            acc[i_][j_][q_] += s_;                                                             \
        }                                                                                      \
    }
#endif  // MMA_EMULATE
#endif  // SMEM_PROBE
