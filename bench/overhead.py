"""Per-op dispatch overhead: microseconds per small elementwise op issued back to back.

    python bench/overhead.py          # CPU device, 1 and 2 threads
    python bench/overhead.py --gpu

An op is ``c = a + b`` on 1000 float32 elements (and the same through autograd, with
``a.requires_grad``); OPS of them are issued without synchronising, then the device is
synchronised once; the time per op is the total over OPS (wall clock, the target's
measure). What is measured is the host cost of an op (argument checks, output allocation,
argument packing, the enqueue), since the kernels are tiny. A second table gives the CPU
time of the issuing thread alone (time.thread_time, without the final synchronise): on a
loaded 2-core machine the wall clock also counts the time the thread waited for a core, and
for clgrad the time PoCL's worker threads took from it. tinygrad realizes every op (its
per-op path: schedule + launch).
``--clgrad-path DIR`` measures another checkout of clgrad (e.g. the one before a change).
"""
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

OPS = 2000
N = 1000


def extra_args(p):
    p.add_argument("--clgrad-path", default=None,
                   help="import clgrad from this checkout instead (before/after comparisons)")


def record_host(fn, out: list):
    """Wrap a loop so that each call appends its issuing thread's CPU time to ``out``."""
    def run():
        fn()
        out.append(fn.host)
    return run


def worker(args, w: common.Worker):
    if args.clgrad_path:
        sys.path.insert(0, os.path.abspath(args.clgrad_path))
    import numpy as np
    import clgrad
    w.device()
    rng = np.random.default_rng(0)
    an, bn = rng.standard_normal(N, dtype=np.float32), rng.standard_normal(N, dtype=np.float32)
    cases = {"a + b": {}, "a + b, autograd": {}}
    a, b = clgrad.from_numpy(an), clgrad.from_numpy(bn)
    ag = clgrad.from_numpy(an).requires_grad_()

    host = {}  # (case, peer) -> thread CPU seconds of the issuing loop, per run

    def loop(fn, sync):
        def run():
            c0 = time.thread_time()
            for _ in range(OPS):
                fn()
            run.host = time.thread_time() - c0
            sync()
        return run
    cases["a + b"]["clgrad"] = loop(lambda: a + b, clgrad.synchronize)
    cases["a + b, autograd"]["clgrad"] = loop(lambda: ag + b, clgrad.synchronize)
    if w.want("numpy"):
        cases["a + b"]["numpy"] = loop(lambda: an + bn, lambda: None)
    if w.want("torch") or w.want("torch-cuda"):
        torch = w.setup_torch()
        dev = "cuda" if w.gpu else "cpu"
        sync = torch.cuda.synchronize if w.gpu else (lambda: None)
        ta, tb = torch.from_numpy(an).to(dev), torch.from_numpy(bn).to(dev)
        tg = ta.clone().requires_grad_()
        key = "torch-cuda" if w.gpu else "torch"
        cases["a + b"][key] = loop(lambda: ta + tb, sync)
        cases["a + b, autograd"][key] = loop(lambda: tg + tb, sync)
    if w.want("tinygrad") and w.setup_tinygrad() is not None:
        from tinygrad import Device, Tensor
        ga, gb = Tensor(an).realize(), Tensor(bn).realize()
        cases["a + b"]["tinygrad"] = loop(lambda: (ga + gb).realize(),
                                          Device["CL"].synchronize)
    for case, fns in cases.items():
        timed = {k: record_host(fn, host.setdefault((case, k), [])) for k, fn in fns.items()}
        times = common.measure(timed, args.reps, warmup=1, budget=args.budget)
        for peer, ts in times.items():
            w.emit(case, peer, "per-op dispatch", "µs", ts, scale=1e6 / OPS,
                   clgrad_path=args.clgrad_path if peer == "clgrad" else None)
            w.emit(case, peer, "per-op host CPU time (issuing thread)", "µs",
                   host[(case, peer)][-len(ts):], scale=1e6 / OPS)
    w.emit_meta()


if __name__ == "__main__":
    common.main("overhead", __doc__, worker, extra_args)
