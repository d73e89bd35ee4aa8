"""Cold start: seconds from starting Python to the end of the first S4 training step
(bench/train_step.py's model and batch), with an empty and with a warm program cache.

    python bench/cold_start.py          # CPU device, 1 and 2 threads
    python bench/cold_start.py --gpu

Each measurement is a fresh process (``--child``) timed from before its start to the end of
its first step (synchronised), so it includes the interpreter, imports, device set-up,
program builds (or cache loads) and the step. 'empty cache': every cache the process could
use points into a new empty folder (XDG_CACHE_HOME for pyopencl's binaries and clgrad's
tuned tiles, POCL_CACHE_DIR for PoCL's kernels, CUDA_CACHE_PATH for NVIDIA's compute cache,
CACHEDB for tinygrad's); 'warm cache': the same folders after one run has filled them.
The child also reports where the time went (import, device, first step). Each process is
expensive, so: 3 repetitions (1 for tinygrad, whose cold step takes tens of seconds).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def extra_args(p):
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)


def child(peer: str):
    """Run one first step of ``peer`` and print the phase times as JSON."""
    t0 = time.perf_counter()
    import train_step as ts
    xn, yn = ts.batch()
    ws = ts.initial_weights()
    if peer == "clgrad":
        import clgrad
        t1 = time.perf_counter()
        clgrad.default_device()
        t2 = time.perf_counter()
        step = ts.clgrad_step(xn, yn, ws)
    elif peer.startswith("torch"):
        import torch
        t1 = time.perf_counter()
        dev = "cuda" if peer == "torch-cuda" else "cpu"
        torch.zeros(1, device=dev)
        t2 = time.perf_counter()
        step = ts.torch_step(torch, xn, yn, ws, dev)
    else:
        import pyopencl
        pyopencl.get_platforms()  # tinygrad's ctypes loader after pyopencl's (see common)
        from tinygrad import Device
        t1 = time.perf_counter()
        Device["CL"]
        t2 = time.perf_counter()
        step = ts.tinygrad_step(xn, yn, ws)
    step()
    t3 = time.perf_counter()
    print("@@CHILD " + json.dumps({"import": t1 - t0, "device": t2 - t1, "first_step": t3 - t2,
                                   "end": time.time()}), flush=True)


def run_child(peer: str, cache: Path, env: dict) -> dict:
    env = dict(env, XDG_CACHE_HOME=str(cache), POCL_CACHE_DIR=str(cache / "pocl"),
               CUDA_CACHE_PATH=str(cache / "nv"), CACHEDB=str(cache / "tinygrad.db"))
    t = time.time()
    out = subprocess.run([sys.executable, __file__, "--child", peer], env=env,
                         capture_output=True, text=True, timeout=600)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("@@CHILD ")), None)
    if line is None:
        raise RuntimeError(f"{peer} child failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    r = json.loads(line[8:])
    r["total"] = r["end"] - t
    return r


def worker(args, w: common.Worker):
    common.require_clgrad_nn(w, "cold_start", training=True)
    w.device()
    peers = ["clgrad"]
    if w.want("torch") or w.want("torch-cuda"):
        w.setup_torch()
        peers.append("torch-cuda" if w.gpu else "torch")
    if w.want("tinygrad") and not args.quick:
        peers.append("tinygrad")
    env = dict(os.environ)
    for peer in peers:
        empty, warm, phases = [], [], []
        for _ in range(1 if peer == "tinygrad" else max(1, min(args.reps, 3))):
            cache = Path(tempfile.mkdtemp(prefix="clgrad-cold-"))
            try:
                r = run_child(peer, cache, env)
                empty.append(r["total"])
                r2 = run_child(peer, cache, env)
                warm.append(r2["total"])
                phases.append((r, r2))
            except Exception as e:  # noqa: BLE001  (a peer that cannot start: a note)
                w.note(f"cold start {peer}: {e}")
                break
            finally:
                shutil.rmtree(cache, ignore_errors=True)
        if not empty:
            continue
        print(peer, "phases (empty, warm):", json.dumps(phases[-1]), flush=True)
        w.emit("empty cache", peer, "time to first training step", "s", empty,
               phases=phases[-1][0])
        w.emit("warm cache", peer, "time to first training step", "s", warm,
               phases=phases[-1][1])
    w.emit_meta()


if __name__ == "__main__":
    if "--child" in sys.argv:
        child(sys.argv[sys.argv.index("--child") + 1])
    else:
        common.main("cold_start", __doc__, worker, extra_args)
