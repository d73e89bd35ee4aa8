"""GEMM: float32 C = A @ B for square sizes, clgrad against NumPy, PyTorch and tinygrad.

    python bench/gemm.py                 # CPU: 2048^3 (and 1024^3), 1 and 2 threads
    python bench/gemm.py --gpu           # GPU: 2048^3, 8192^3 (PyTorch CUDA with TF32 off)
    python bench/gemm.py --tune [--gpu]  # time every tile candidate, store the winner

``--tune`` times each config of clgrad.ops.matmul.CPU_CANDIDATES / GPU_CANDIDATES on this
device and writes the fastest into clgrad.ops.matmul.tiles_file() under the device's key
(platform, name, driver), which gemm then uses in every process.
"""
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def extra_args(p):
    p.add_argument("--sizes", default=None, help="comma-separated sizes (default per device)")
    p.add_argument("--tune", action="store_true", help="tune tile sizes first (see above)")


def tune(w: common.Worker, n: int):
    """Time every candidate config at n^3, store the fastest for this device."""
    import clgrad
    from clgrad.ops import matmul as mm
    dev = w.device()
    a, b, c = clgrad.randn(n, n), clgrad.randn(n, n), clgrad.empty(n, n)
    cands = mm.CPU_CANDIDATES if dev.kind == "cpu" else mm.GPU_CANDIDATES[:-1]
    best = None
    for cfg in cands:
        def fn(cfg=cfg):
            mm.gemm(c, a, b, tiles_override=cfg)
            clgrad.synchronize()
        t = common.measure({"x": fn}, reps=5, warmup=1, budget=3.0)["x"]
        med = sorted(t)[len(t) // 2]
        print(f"tune {n}^3 {cfg}: {2 * n ** 3 / med / 1e9:.1f} GFLOP/s", flush=True)
        if best is None or med < best[0]:
            best = (med, cfg)
    key = mm.device_key(dev)
    path = mm.tiles_file()
    stored = json.loads(path.read_text()) if path.exists() else {}
    stored[key] = best[1] if dev.kind == "cpu" else {**mm.GPU_TILES, "large": best[1]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(stored, indent=1))
    mm._TUNED.clear()
    w.note(f"tuned GEMM tiles for {key}: {best[1]} ({2 * n ** 3 / best[0] / 1e9:.0f} GFLOP/s "
           f"at {n}^3), stored in {path}")


def worker(args, w: common.Worker):
    import numpy as np
    import clgrad
    w.device()
    if args.tune and (w.gpu or w.cfg == args.threads.split(",")[0].strip()):
        tune(w, 4096 if w.gpu else 1024)
    sizes = ([int(s) for s in args.sizes.split(",")] if args.sizes else
             [2048, 8192] if w.gpu else [1024, 2048])
    if args.quick:
        sizes = sizes[:1]
    torch = w.setup_torch() if (w.want("torch") or w.want("torch-cuda")) else None
    tg = w.setup_tinygrad() if w.want("tinygrad") else None
    for n in sizes:
        rng = np.random.default_rng(0)
        an = rng.standard_normal((n, n), dtype=np.float32)
        bn = rng.standard_normal((n, n), dtype=np.float32)
        fns = {}
        a, b = clgrad.from_numpy(an), clgrad.from_numpy(bn)
        fns["clgrad"] = lambda: ((a @ b), clgrad.synchronize())
        ref = an[:256].astype(np.float64) @ bn  # rows 0..255 against float64
        err = np.abs((a @ b).numpy()[:256] - ref).max() / np.abs(ref).max()
        if w.want("numpy") and (not w.gpu or n <= 2048):
            fns["numpy"] = lambda: an @ bn
        if torch is not None:
            dev = "cuda" if w.gpu else "cpu"
            ta, tb = torch.from_numpy(an).to(dev), torch.from_numpy(bn).to(dev)
            sync = torch.cuda.synchronize if w.gpu else (lambda: None)
            fns["torch-cuda" if w.gpu else "torch"] = lambda: (torch.mm(ta, tb), sync())
        if tg is not None:
            from tinygrad import Device, Tensor
            ga, gb = Tensor(an).realize(), Tensor(bn).realize()
            fns["tinygrad"] = lambda: ((ga @ gb).realize(), Device["CL"].synchronize())
        times = common.measure(fns, args.reps, budget=args.budget)
        for peer, ts in times.items():
            w.emit(f"{n}^3", peer, "GFLOP/s", "GFLOP/s", ts, scale=2 * n ** 3 / 1e9,
                   higher_is_better=True, **({"max_rel_err": float(err)}
                                             if peer == "clgrad" else {}))
        print(f"{n}^3 done ({time.strftime('%X')})", flush=True)
    w.emit_meta()


if __name__ == "__main__":
    common.main("gemm", __doc__, worker, extra_args)
