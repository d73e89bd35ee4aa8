// kernels/mma_nv.h — what the tensor-core GEMMs (matmul_mma_nv.cl, matmul_mma_async_nv.cl;
// NVIDIA's OpenCL only: inline PTX) share: the mma instruction, TF32 rounding, the lane
// index, and the zeroing and the store of a warp's accumulators. Needs T, MT, NT; MMA_F16
// where A and B are float16 (C too, but with C_FLOAT); EXACT where no tile overhangs C.

// the mma of one 16 x 8 tile: float16 m16n8k16 (MMA_F16) or TF32 m16n8k8, float32 sums
#ifdef MMA_F16
#define MMA_INSTR "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
#else
#define MMA_INSTR "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
#endif

#ifndef MMA_EMULATE  // (mma_async_nv.h: the emulation of the float16 kernels, without PTX)
// x rounded to TF32 (10-bit mantissa; cvt.rna: to nearest, ties away), as its bits
inline uint to_tf32(float x) {
    uint r;
    __asm__("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

inline uint lane_id(void) {
    uint l;
    __asm__ __volatile__("mov.u32 %0, %%laneid;" : "=r"(l));
    return l;
}
#endif

// (macros, not functions: a compiler may leave a function taking the accumulator array
// un-inlined, and the array then lives in local (stack) memory)
#define ZERO_ACC(acc)                                                                          \
    _Pragma("unroll") for (int i_ = 0; i_ < MT; ++i_)                                          \
    _Pragma("unroll") for (int j_ = 0; j_ < NT; ++j_)                                          \
    _Pragma("unroll") for (int q_ = 0; q_ < 4; ++q_) (acc)[i_][j_][q_] = 0.0f;

// C's element type CT: T, or float with C_FLOAT (float16 A and B: conv2d's split-K partial
// products, ops/conv/algorithms.py)
#if defined(C_FLOAT)
#define CT float
#define STORE1(C, o, v, beta) { if ((beta) != 0.0f) v += (beta) * (C)[o]; (C)[o] = v; }
#elif defined(MMA_F16)
#define CT T
#define STORE1(C, o, v, beta)                                                                  \
    { if ((beta) != 0.0f) v += (beta) * vload_half(o, C); vstore_half(v, o, C); }
#else
#define CT T
#define STORE1(C, o, v, beta) { if ((beta) != 0.0f) v += (beta) * (C)[o]; (C)[o] = v; }
#endif
#ifdef EXACT
#define OVERHANG(r, c, M, N) 0
#else
#define OVERHANG(r, c, M, N) ((r) >= (M) || (c) >= (N))
#endif

// C[o] = alpha * acc + beta * C[o] for the warp's MT x NT mma tiles of 16 x 8 from row r0,
// column c0 of C (o = oc + r * c_rs + c * c_cs; C read only where beta != 0; float16 C
// rounded once, vstore_half's round to nearest even). Accumulator q of tile (i, j): row g
// (+8 for q >= 2), column 2t (+1 for odd q), PTX's fragment layout of mma's D.
#define STORE_ACC(acc, C, oc, c_rs, c_cs, r0, c0, M, N, g, t, alpha, beta)                     \
    _Pragma("unroll") for (int i_ = 0; i_ < MT; ++i_)                                          \
    _Pragma("unroll") for (int j_ = 0; j_ < NT; ++j_)                                          \
    _Pragma("unroll") for (int q_ = 0; q_ < 4; ++q_) {                                         \
        const long r_ = (r0) + i_ * 16 + (g) + (q_ >> 1) * 8;                                  \
        const long c_ = (c0) + j_ * 8 + 2 * (t) + (q_ & 1);                                    \
        if (OVERHANG(r_, c_, M, N)) continue;                                                  \
        const long o_ = (oc) + r_ * (c_rs) + c_ * (c_cs);                                      \
        float v_ = (alpha) * (acc)[i_][j_][q_];                                                \
        STORE1(C, o_, v_, beta)                                                                \
    }
