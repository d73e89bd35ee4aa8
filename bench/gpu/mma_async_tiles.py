"""Tile configs of the pipelined tensor-core GEMM (kernels/matmul_mma_async_nv.cl) on the H200:
TFLOP/s per (warps, warp tile, stages) and operand layout, beside kernels/matmul_mma_nv.cl's
gemm_mma and cuBLAS, so that clgrad/ops/matmul.py's MMA_ASYNC_TILES are measured choices.

    CLGRAD_DEVICE=gpu python bench/gpu/mma_async_tiles.py [--size 8192] [--reps 7]

float16 C = A @ B (M = N = K = --size; also 2048), A row-major (layout 0: along k) and B
row-major (layout 1: along n) or transposed ((n, k): layout 0). Each row: the median of --reps
launches (queue finished around each, after 2 warm-ups), TFLOP/s, and the error against
float64 NumPy on the 2048 case (max |C - C64| / max |C64|). A config the device cannot build
(local memory, registers) prints its error and is skipped. Exits 0 whatever the outcome.
"""
import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
from gemm_mma import timed  # noqa: E402  (bench/gpu/gemm_mma.py: median of reps after 2 warm-ups)

CONFIGS = [  # WARPS_M, WARPS_N, MT, NT, STAGES, GROUP_M
    (2, 2, 4, 8, 3, 1), (2, 2, 4, 8, 3, 8), (2, 2, 4, 8, 3, 16), (2, 2, 4, 8, 2, 8),
    (2, 4, 4, 8, 2, 8), (4, 2, 4, 8, 2, 8), (2, 4, 4, 4, 3, 8), (4, 2, 2, 8, 3, 8),
    (2, 2, 4, 4, 4, 8), (2, 2, 2, 8, 4, 8), (2, 2, 2, 4, 4, 8),
]


def report_build(dev, mm):
    """ptxas's registers/spills for the large config (NVIDIA's -cl-nv-verbose), the PTX target,
    and whether the compiler takes Hopper's wgmma (sm_90a only)."""
    import pyopencl as cl
    from clgrad.runtime.device import kernel_dir
    kdir = kernel_dir()
    cfg = mm.MMA_ASYNC_TILES["large"]
    d = {"T": "half", **cfg, "WAIT": cfg["STAGES"] - 2, "A_KR": 0, "B_KR": 1, "EXACT": 1}
    opts = [f"-I{kdir}"] + [f"-D{k}={v}" for k, v in sorted(d.items())] + dev.build_options
    src = (kdir / "matmul_mma_async_nv.cl").read_text()
    try:
        prg = cl.Program(dev.context, src).build(options=opts + ["-cl-nv-verbose"])
        log = prg.get_build_info(dev.cl_device, cl.program_build_info.LOG)
        print("ptxas (large config):", " | ".join(ln.strip() for ln in log.splitlines()
                                                  if ln.strip())[:1500])
        ptx = prg.get_info(cl.program_info.BINARIES)[0].decode(errors="replace")
        print("PTX header:", " | ".join(ln for ln in ptx.splitlines()[:30]
                                        if ln.startswith((".version", ".target")))[:300])
    except Exception as e:  # noqa: BLE001
        print("verbose build FAILED:", " ".join(str(e).split())[:800])
    wg = ("__kernel void wg(__global float *o) { "
          "__asm__ __volatile__(\"wgmma.fence.sync.aligned;\"); o[0] = 1.0f; }")
    try:
        cl.Program(dev.context, wg).build()
        print("wgmma.fence: BUILDS")
    except Exception as e:  # noqa: BLE001
        print("wgmma.fence: does not build:", " ".join(str(e).split())[:600])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--configs", default=None, help="';'-separated tuples of CONFIGS' fields "
                   "(default: all of CONFIGS), e.g. '2,2,4,8,3,1;2,2,4,8,3,8'")
    p.add_argument("--no-2048", action="store_true", help="only --size")
    args = p.parse_args()
    configs = CONFIGS if not args.configs else [
        tuple(int(v) for v in c.split(",")) for c in args.configs.split(";")]
    os.environ.setdefault("CLGRAD_DEVICE", "gpu")
    import clgrad
    from clgrad.ops import matmul as mm
    from clgrad.ops._util import MAXD, shape_arg
    dev = clgrad.zeros(1)._storage.device
    print(f"{dev.name} [{dev.platform}]: local memory {dev.local_mem_size} B; has_mma "
          f"{mm.has_mma(dev)}, has_mma_async {mm.has_mma_async(dev)} (SMEM_CVTA "
          f"{mm._SMEM.get(dev)})", flush=True)
    report_build(dev, mm)
    try:
        import torch
    except ImportError:
        torch = None
    v0 = np.zeros(1 + MAXD, np.int64).tobytes()
    one = (np.int64(1), np.int32(1), shape_arg((1,)))
    for size in (args.size,) if args.no_2048 else (2048, args.size):
        m = n = k = size
        rng = np.random.default_rng(0)
        a = rng.standard_normal((m, k)).astype(np.float16)
        b = rng.standard_normal((k, n)).astype(np.float16)
        want = a.astype(np.float64) @ b.astype(np.float64) if size == 2048 else None
        ca, cb = clgrad.tensor(a, device="cuda"), clgrad.tensor(b, device="cuda")
        cbt = clgrad.tensor(np.ascontiguousarray(b.T), device="cuda")
        c = clgrad.empty((m, n), dtype=clgrad.float16, device="cuda")
        flop = 2.0 * m * n * k
        print(f"\n{m}x{k}x{n} float16", flush=True)
        if torch is not None:
            ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
            t = timed(lambda: ta @ tb, torch.cuda.synchronize, args.reps)
            print(f"  cuBLAS: {t * 1e3:.3f} ms, {flop / t / 1e12:.1f} TFLOP/s", flush=True)
        for cfgt in [None] + configs:
            for b_kr in (1, 0):
                bt, (b_rs, b_cs) = (cb, (n, 1)) if b_kr == 1 else (cbt, (1, k))
                label = "gemm_mma (matmul_mma_nv.cl)" if cfgt is None else str(cfgt)
                try:
                    if cfgt is None:
                        kern, gs, ls = mm._mma_kernel(dev, "f16", mm.MMA_TILES["large"], 1,
                                                      3 if b_kr else 1, m, n, 1, True)
                    else:
                        cfg = dict(zip(("WARPS_M", "WARPS_N", "MT", "NT", "STAGES",
                                        "GROUP_M"), cfgt))
                        kern, gs, ls = mm._mma_async_kernel(dev, "f16", cfg, 0, b_kr, m, n, k,
                                                            1)

                    def run():
                        kern(dev.queue, gs, ls, np.int64(m), np.int64(n), np.int64(k), *one,
                             c._storage.buffer, v0, np.int64(n), np.int64(1),
                             ca._storage.buffer, v0, np.int64(k), np.int64(1),
                             bt._storage.buffer, v0, np.int64(b_rs), np.int64(b_cs),
                             np.float32(1.0), np.float32(0.0))
                    t = timed(run, dev.queue.finish, args.reps)
                    err = ""
                    if want is not None:
                        got = c.numpy().astype(np.float64)
                        err = f", error {np.abs(got - want).max() / np.abs(want).max():.1e}"
                    print(f"  {label} B layout {b_kr}: {t * 1e3:.3f} ms, "
                          f"{flop / t / 1e12:.1f} TFLOP/s{err}", flush=True)
                except Exception as e:  # noqa: BLE001 — report and go on
                    print(f"  {label} B layout {b_kr}: FAILED {' '.join(str(e).split())[:400]}",
                          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
