"""Probe: does this OpenCL driver compile inline PTX tensor-core instructions (mma.sync), and
are the results right? (issue 35, part 2's first question)

    CLGRAD_DEVICE=gpu python bench/gpu/mma_probe.py

NVIDIA's OpenCL compiler passes ``asm volatile(...)`` statements through to PTX. Two tests, one
warp each: TF32 m16n8k8 (mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32) and FP16
m16n8k16 with float32 accumulation. Operands travel as raw bits (uint for tf32, ushort for
float16: NVIDIA's OpenCL has no cl_khr_fp16), fragments laid out as PTX ISA 8.x's "Matrix
fragments for mma.m16n8k8/.m16n8k16" tables describe. Then a throughput loop (each warp
issues dependent-free mma's in registers) gives the tensor-core ceiling reachable from OpenCL.
Prints PASS/FAIL with the error against float64 NumPy, and TFLOP/s; exits 0 either way.
"""
import sys
import time

import numpy as np
import pyopencl as cl

SRC = r"""
inline uint lane_id(void) { uint l; asm volatile("mov.u32 %0, %%laneid;" : "=r"(l)); return l; }

// D (16x8) = A (16x8, row-major) @ B (8x8, row-major here; read as the col layout) in TF32
__kernel void mma_tf32(__global const float *A, __global const float *B, __global float *D) {
    uint l = lane_id(), g = l >> 2, t = l & 3;
    uint a0 = as_uint(A[g * 8 + t]), a1 = as_uint(A[(g + 8) * 8 + t]);
    uint a2 = as_uint(A[g * 8 + t + 4]), a3 = as_uint(A[(g + 8) * 8 + t + 4]);
    uint b0 = as_uint(B[t * 8 + g]), b1 = as_uint(B[(t + 4) * 8 + g]);
    float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    D[g * 8 + 2 * t] = d0; D[g * 8 + 2 * t + 1] = d1;
    D[(g + 8) * 8 + 2 * t] = d2; D[(g + 8) * 8 + 2 * t + 1] = d3;
}

inline uint pack2(ushort lo, ushort hi) { return (uint)lo | ((uint)hi << 16); }

// D (16x8, f32) = A (16x16 f16, row-major) @ B (16x8 f16, row-major) with f32 accumulation
__kernel void mma_f16(__global const ushort *A, __global const ushort *B, __global float *D) {
    uint l = lane_id(), g = l >> 2, t = l & 3;
    uint a0 = pack2(A[g * 16 + 2 * t], A[g * 16 + 2 * t + 1]);
    uint a1 = pack2(A[(g + 8) * 16 + 2 * t], A[(g + 8) * 16 + 2 * t + 1]);
    uint a2 = pack2(A[g * 16 + 2 * t + 8], A[g * 16 + 2 * t + 9]);
    uint a3 = pack2(A[(g + 8) * 16 + 2 * t + 8], A[(g + 8) * 16 + 2 * t + 9]);
    uint b0 = pack2(B[(2 * t) * 8 + g], B[(2 * t + 1) * 8 + g]);
    uint b1 = pack2(B[(2 * t + 8) * 8 + g], B[(2 * t + 9) * 8 + g]);
    float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    D[g * 8 + 2 * t] = d0; D[g * 8 + 2 * t + 1] = d1;
    D[(g + 8) * 8 + 2 * t] = d2; D[(g + 8) * 8 + 2 * t + 1] = d3;
}

// throughput: ITERS x 4 independent mma chains per warp, operands from registers; one kernel
// per (name, instruction, A's bit pattern)
#define MMA_LOOP(NAME, INSTR, ONE)                                                            \
__kernel void NAME(__global float *D, int iters) {                                           \
    uint l = lane_id();                                                                      \
    uint a0 = l * ONE, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, b0 = l, b1 = l + 7;           \
    float d[16];                                                                             \
    for (int i = 0; i < 16; ++i) d[i] = 0;                                                   \
    for (int it = 0; it < iters; ++it) {                                                     \
        _Pragma("unroll")                                                                    \
        for (int c = 0; c < 4; ++c)                                                          \
            asm volatile(INSTR " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"     \
                         : "+f"(d[4 * c]), "+f"(d[4 * c + 1]), "+f"(d[4 * c + 2]),          \
                           "+f"(d[4 * c + 3])                                               \
                         : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));           \
    }                                                                                        \
    float s = 0;                                                                             \
    for (int i = 0; i < 16; ++i) s += d[i];                                                  \
    D[get_global_id(0)] = s;                                                                 \
}
MMA_LOOP(mma_f16_loop, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 0x3c003c00u)
MMA_LOOP(mma_tf32_loop, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 0x3f800000u)
"""


def main():
    plats = [p for p in cl.get_platforms() if "NVIDIA" in p.name]
    if not plats:
        print("SKIP: no NVIDIA OpenCL platform")
        return
    dev = plats[0].get_devices()[0]
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx)
    print(f"device {dev.name}, driver {dev.driver_version}, {dev.version}")
    try:
        prg = cl.Program(ctx, SRC).build()
    except cl.RuntimeError as e:
        print("FAIL build: inline PTX mma.sync not accepted\n", str(e)[:3000])
        return
    print("PASS build: the driver compiled inline PTX mma.sync")
    mf = cl.mem_flags
    rng = np.random.default_rng(0)
    # TF32 correctness
    a = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal((8, 8)).astype(np.float32)
    d = np.zeros((16, 8), np.float32)
    ab = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
    bb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
    db = cl.Buffer(ctx, mf.WRITE_ONLY, d.nbytes)
    prg.mma_tf32(q, (32,), (32,), ab, bb, db)
    cl.enqueue_copy(q, d, db)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = np.abs(d - ref).max() / np.abs(ref).max()
    print(f"{'PASS' if err < 5e-3 else 'FAIL'} tf32 m16n8k8: max rel error {err:.2e} "
          f"(tf32 has a 10-bit mantissa: ~1e-3 expected)")
    # FP16 correctness
    a16 = rng.standard_normal((16, 16)).astype(np.float16)
    b16 = rng.standard_normal((16, 8)).astype(np.float16)
    ab = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a16.view(np.uint16))
    bb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b16.view(np.uint16))
    prg.mma_f16(q, (32,), (32,), ab, bb, db)
    cl.enqueue_copy(q, d, db)
    ref = a16.astype(np.float64) @ b16.astype(np.float64)
    err = np.abs(d - ref).max() / np.abs(ref).max()
    print(f"{'PASS' if err < 1e-5 else 'FAIL'} f16 m16n8k16 (f32 accumulate): max rel error "
          f"{err:.2e} (exact products, f32 sums: ~1e-7 expected)")
    # throughput
    cus = dev.max_compute_units
    for name, flop in (("mma_f16_loop", 2 * 16 * 8 * 16), ("mma_tf32_loop", 2 * 16 * 8 * 8)):
        k = getattr(prg, name)
        groups, wg, iters = cus * 8, 128, 4096
        out = cl.Buffer(ctx, mf.WRITE_ONLY, 4 * groups * wg)
        k(q, (groups * wg,), (wg,), out, np.int32(iters))
        q.finish()
        best = 1e9
        for _ in range(5):
            t = time.perf_counter()
            k(q, (groups * wg,), (wg,), out, np.int32(iters))
            q.finish()
            best = min(best, time.perf_counter() - t)
        tf = groups * wg / 32 * iters * 4 * flop / best / 1e12
        print(f"{name}: {tf:.0f} TFLOP/s from OpenCL ({groups} work-groups of {wg}, "
              f"{best * 1e3:.2f} ms)")


if __name__ == "__main__":
    sys.exit(main())
