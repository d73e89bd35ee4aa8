"""Probe: what float16 does this OpenCL driver run, beyond what it lists? (issue 35, part 2)

    python bench/gpu/fp16_probe.py

NVIDIA's OpenCL driver does not list ``cl_khr_fp16``. Three kernels, each built and run on
every GPU device, compared with NumPy float16 rounding of a float64 reference:

1. ``arith``: ``#pragma OPENCL EXTENSION cl_khr_fp16 : enable`` and ``half`` arithmetic
   (a * b + c computed in half, stored through a ``half *``).
2. ``storage``: core OpenCL's ``vload_half``/``vstore_half`` (no extension: float arithmetic,
   half storage, round-to-nearest-even on the store).
3. ``convert``: ``vstore_half_rtz`` and ``vload_half4`` (the vector forms).

Prints, per kernel, BUILD FAIL with the compiler's first lines, or the largest error
relative to |a*b| + |c| in float16 epsilons; exits 0 either way.
"""
import sys

import numpy as np
import pyopencl as cl

ARITH = r"""
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__kernel void arith(__global const half *a, __global const half *b, __global const half *c,
                    __global half *o) {
    size_t i = get_global_id(0);
    half x = a[i], y = b[i], z = c[i];
    o[i] = x * y + z;
}
"""

STORAGE = r"""
__kernel void storage(__global const half *a, __global const half *b, __global const half *c,
                      __global half *o) {
    size_t i = get_global_id(0);
    float x = vload_half(i, a), y = vload_half(i, b), z = vload_half(i, c);
    vstore_half(x * y + z, i, o);
}
"""

CONVERT = r"""
__kernel void convert(__global const half *a, __global const half *b, __global const half *c,
                      __global half *o) {
    size_t i = get_global_id(0);
    float4 x = vload_half4(i, a), y = vload_half4(i, b), z = vload_half4(i, c);
    vstore_half4(x * y + z, i, o);
}
"""


def err(got, want, scale):
    """Largest |got - want| over scale (|a*b| + |c|: cancellation makes ULPs of the result
    meaningless), in units of float16's epsilon (2^-10)."""
    d = np.abs(got.astype(np.float64) - want.astype(np.float64)) / scale
    return float(np.max(d) / 2.0 ** -10)


def main():
    rng = np.random.default_rng(0)
    n = 1 << 16
    a, b, c = (rng.standard_normal(n).astype(np.float16) for _ in range(3))
    # half arithmetic rounds a*b to half, then adds; float arithmetic rounds once at the store
    want_half = (a * b + c).astype(np.float16)
    want_float = (a.astype(np.float32) * b.astype(np.float32) + c.astype(np.float32)).astype(
        np.float16)
    scale = np.abs(a.astype(np.float64) * b) + np.abs(c.astype(np.float64)) + 1e-30
    for plat in cl.get_platforms():
        for dev in plat.get_devices():
            print(f"{plat.name} / {dev.name}: cl_khr_fp16 listed: "
                  f"{'cl_khr_fp16' in dev.extensions}; driver {dev.driver_version}")
            ctx = cl.Context([dev])
            q = cl.CommandQueue(ctx)
            mf = cl.mem_flags
            bufs = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x) for x in (a, b, c)]
            out = cl.Buffer(ctx, mf.WRITE_ONLY, a.nbytes)
            for name, src, want, size in (("arith", ARITH, want_half, n),
                                          ("storage", STORAGE, want_float, n),
                                          ("convert", CONVERT, want_float, n // 4)):
                try:
                    prg = cl.Program(ctx, src).build()
                except cl.RuntimeError as e:
                    msg = " | ".join(str(e).splitlines()[:6])
                    print(f"  {name}: BUILD FAIL: {msg[:400]}")
                    continue
                try:
                    getattr(prg, name)(q, (size,), None, *bufs, out)
                    got = np.empty_like(a)
                    cl.enqueue_copy(q, got, out)
                    q.finish()
                except cl.Error as e:
                    print(f"  {name}: RUN FAIL: {e}")
                    continue
                other = want_float if want is want_half else want_half
                print(f"  {name}: built and ran; max error {err(got, want, scale):.3f} eps16 "
                      f"against the expected rounding, {err(got, other, scale):.3f} against the "
                      f"other (eps16 = 2^-10, relative to |a*b| + |c|)")
    sys.exit(0)


if __name__ == "__main__":
    main()
