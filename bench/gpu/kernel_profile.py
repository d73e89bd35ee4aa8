"""Where a zoo model's eager training step spends its device time, kernel by kernel, on the
GPU, beside PyTorch CUDA's kernels (torch.profiler) for the same model, batch and step.

    CLGRAD_DEVICE=gpu python bench/gpu/kernel_profile.py --model densenet --batch 128

clgrad: the device's queue is replaced, before the model is built, by one with
CL_QUEUE_PROFILING_ENABLE, and the runtime's enqueue is wrapped to keep each launch's event:
a kernel's device time is its event's end - start (OpenCL's own clock, no host round trip).
Grouped by kernel name. PyTorch:
torch.profiler's CUDA time per kernel name (self device time). Prints both tables (top rows,
ms per step and share) and the wall time per step measured without the per-launch finishes.
``--amp``: the step of ``bench/zoo.py --amp`` in both (autocast float16 + GradScaler).
"""
import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
import numpy as np  # noqa: E402

import events  # noqa: E402  (sets CLGRAD_ENQUEUE=pyopencl: the profiling queue's events)
import zoo_models  # noqa: E402


def _step_of(torch, model, x, y, opt, amp=False, dev_type="cuda"):
    F = torch.nn.functional
    scaler = torch.amp.GradScaler(dev_type) if amp else None

    def step():
        opt.zero_grad()
        if scaler is None:
            F.cross_entropy(model(x), y).backward()
            opt.step()
            return
        with torch.autocast(dev_type, dtype=torch.float16):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return step


def clgrad_profile(name, batch, top, amp=False):
    import clgrad
    dev = clgrad.default_device()
    rec = events.Recorder(dev)
    (c, h, w), classes = zoo_models.input_shape(name)
    rng = np.random.default_rng(0)
    x = clgrad.from_numpy(rng.standard_normal((batch, c, h, w), dtype=np.float32))
    y = clgrad.from_numpy(rng.integers(0, classes, batch).astype(np.int64))
    m = zoo_models.build(name, clgrad)
    opt = clgrad.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    step = _step_of(clgrad, m, x, y, opt, amp, dev.type)
    for _ in range(4):
        step()
    clgrad.synchronize()
    t0 = time.perf_counter()
    for _ in range(3):
        step()
    clgrad.synchronize()
    wall = (time.perf_counter() - t0) / 3
    rec.clear()
    step()
    clgrad.synchronize()
    rec.stop()
    times, counts = rec.per_kernel()
    total = sum(times.values())
    tag = " amp" if amp else ""
    print(f"\n## clgrad {name} batch {batch}{tag}: wall {wall * 1e3:.2f} ms/step, kernel sum "
          f"{total * 1e3:.2f} ms over {sum(counts.values())} launches")
    print("| kernel | launches | ms | share |\n|---|---:|---:|---:|")
    for nm, t in sorted(times.items(), key=lambda kv: -kv[1])[:top]:
        print(f"| {nm} | {counts[nm]} | {t * 1e3:.3f} | {t / total:.1%} |")


def torch_profile(name, batch, top, amp=False):
    import torch
    from torch.profiler import ProfilerActivity, profile
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    (c, h, w), classes = zoo_models.input_shape(name)
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((batch, c, h, w), dtype=np.float32)).cuda()
    y = torch.from_numpy(rng.integers(0, classes, batch).astype(np.int64)).cuda()
    m = zoo_models.build(name, torch).cuda()
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    step = _step_of(torch, m, x, y, opt, amp)
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / 3
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        t = getattr(e, "self_device_time_total", None)
        if t is None:
            t = getattr(e, "self_cuda_time_total", 0)
        if t > 0:
            rows.append((e.key, e.count, t / 1e3))
    total = sum(r[2] for r in rows)
    tag = " amp" if amp else ""
    print(f"\n## PyTorch CUDA {name} batch {batch}{tag}: wall {wall * 1e3:.2f} ms/step, kernel sum "
          f"{total:.2f} ms")
    print("| kernel | launches | ms | share |\n|---|---:|---:|---:|")
    for k, n, t in sorted(rows, key=lambda r: -r[2])[:top]:
        print(f"| {k[:90]} | {n} | {t:.3f} | {t / total:.1%} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="densenet")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--amp", action="store_true", help="autocast(float16) + GradScaler steps")
    a = ap.parse_args()
    clgrad_profile(a.model, a.batch, a.top, a.amp)
    if not a.no_torch:
        try:
            torch_profile(a.model, a.batch, a.top, a.amp)
        except Exception as e:  # noqa: BLE001 -- the peer is optional
            print(f"PyTorch: {type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
