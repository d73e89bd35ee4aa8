"""Where an eager zoo training step's host time goes, function by function (cProfile).

    CLGRAD_DEVICE=gpu python bench/gpu/host_profile.py [--model resnet18] [--batch 8] [--steps 5]

Builds the model of bench/zoo_models.py, runs 3 warm-up SGD steps, then ``--steps`` steps under
cProfile (each ends with a synchronise), and prints the step's wall time, the number of kernel
launches per step (Device.launch calls) and the top functions by own time, in µs per launch.
The profiler's own cost inflates every figure (roughly 2x on call-heavy code): read shares,
not absolute times.
"""
import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
import numpy as np  # noqa: E402

import clgrad  # noqa: E402
import zoo_models  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args()
    (c, h, w), classes = zoo_models.input_shape(args.model)
    rng = np.random.default_rng(0)
    x = clgrad.from_numpy(rng.standard_normal((args.batch, c, h, w), dtype=np.float32))
    y = clgrad.from_numpy(rng.integers(0, classes, args.batch).astype(np.int64))
    m = zoo_models.build(args.model, clgrad)
    opt = clgrad.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    F = clgrad.nn.functional

    def step():
        opt.zero_grad()
        F.cross_entropy(m(x), y).backward()
        opt.step()
        clgrad.synchronize()

    for _ in range(3):
        step()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    wall = (time.perf_counter() - t0) / args.steps
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(args.steps):
        step()
    pr.disable()
    st = pstats.Stats(pr)
    launches = sum(v[1] for k, v in st.stats.items() if k[2] == "launch") / args.steps
    print(f"{args.model} batch {args.batch} on {clgrad.default_device()}: step {wall * 1e3:.2f} "
          f"ms, {launches:.0f} launches per step")
    rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:args.top]
    total = sum(v[2] for v in st.stats.values()) / args.steps
    print(f"profiled own time per step {total * 1e3:.2f} ms; per launch "
          f"{total / max(launches, 1) * 1e6:.1f} us")
    print(f"{'own us/launch':>13} {'calls/launch':>12}  function")
    for (f, line, name), v in rows:
        per = v[2] / args.steps / max(launches, 1) * 1e6
        print(f"{per:13.2f} {v[1] / args.steps / max(launches, 1):12.2f}  "
              f"{Path(f).name}:{line}({name})")


if __name__ == "__main__":
    main()
