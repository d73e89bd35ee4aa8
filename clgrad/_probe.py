"""Probe OpenCL devices: build and run one tiny kernel on each; print one JSON line per device.

Run by ``clgrad.runtime`` as a separate process (``python _probe.py P:D [P:D ...]``), so that a
runtime which crashes or hangs while compiling cannot take the user's process with it. It
imports only pyopencl and NumPy, never the clgrad package. Output per device:
``{"index": "P:D", "usable": bool, "reason": str}``; the reason is one line.
"""
import json
import sys

# The probe kernel exercises what every clgrad kernel relies on: a by-value struct argument,
# 64-bit integer index arithmetic, float division and sqrt, and a barrier in a work-group.
SOURCE = r"""
typedef struct { long offset; long stride; } view_t;
__kernel void probe(__global float *out, __global const float *x, const view_t v, const long n) {
    __local float tile[64];
    long i = get_global_id(0);
    int l = get_local_id(0);
    tile[l] = i < n ? x[v.offset + i * v.stride] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i < n) out[i] = sqrt(tile[l]) / 3.0f + tile[63 - l];
}
"""


def fp32_options(cl, device) -> list:
    """Build options that make float32 division and sqrt correctly rounded where the device
    advertises CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT (OpenCL 1.2+, section 5.8.4.3)."""
    flag = getattr(cl.device_fp_config, "CORRECTLY_ROUNDED_DIVIDE_SQRT", 0)
    try:
        config = device.single_fp_config
    except Exception:  # noqa: BLE001 — a device that cannot answer gets no extra option
        return []
    return ["-cl-fp32-correctly-rounded-divide-sqrt"] if flag and config & flag else []


def probe_one(cl, np, device) -> tuple:
    """(usable, reason) for one pyopencl device."""
    try:
        ctx = cl.Context([device])
        queue = cl.CommandQueue(ctx)
        prg = cl.Program(ctx, SOURCE).build(options=fp32_options(cl, device))
        n = 64
        x = np.arange(2 * n, dtype=np.float32)
        mf = cl.mem_flags
        xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
        ob = cl.Buffer(ctx, mf.WRITE_ONLY, size=4 * n)
        view = np.array([1, 2], dtype=np.int64)
        prg.probe(queue, (n,), (n,), ob, xb, view, np.int64(n))
        out = np.empty(n, dtype=np.float32)
        cl.enqueue_copy(queue, out, ob)
        queue.finish()
    except Exception as e:  # noqa: BLE001 — any failure makes the device unusable
        return False, _one_line(e)
    tile = x[1::2][:n]
    want = np.sqrt(tile) / np.float32(3) + tile[::-1]
    if not np.allclose(out, want, rtol=1e-5, atol=1e-5):
        bad = int(np.argmax(np.abs(out - want)))
        return False, f"wrong result from the probe kernel (element {bad}: {out[bad]} != " \
                      f"{want[bad]})"
    return True, "ok"


def _one_line(e) -> str:
    text = " ".join(str(e).split())
    for marker in ("error:", "Error:", "ERROR:"):  # a compiler's first error says most
        at = text.find(marker)
        if at >= 0:
            text = text[at:]
            break
    return f"{type(e).__name__}: {text[:300]}"


def main(argv) -> int:
    """Probe the devices named 'P:D' in ``argv``; one JSON line each on stdout."""
    import numpy as np
    import pyopencl as cl
    platforms = cl.get_platforms()
    for spec in argv:
        pi, di = (int(s) for s in spec.split(":"))
        usable, reason = probe_one(cl, np, platforms[pi].get_devices()[di])
        print(json.dumps({"index": spec, "usable": usable, "reason": reason}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
