"""Per-layer 1x1 conv timings (issue 23): the pointwise (1x1, stride 1, unpadded) convs of the
zoo's MobileNetV2, EfficientNet-B0, DenseNet-BC and ShuffleNetV2 (CIFAR forms, bench/zoo_models),
each pass alone (forward, input gradient, weight gradient), clgrad against PyTorch CPU
(torch.nn.functional.conv2d / aten.convolution_backward), with the algorithm clgrad's 'auto'
picks per pass and GFLOP/s.

    python bench/pointwise.py --batch 8 --threads 1 [--device intel|pocl] [--set layers|models]

--ab adds the peer "before": the same passes through the batched gemm that CPUs ran before
kernels/conv_pw_cpu.cl (conv.algorithms.PW_CPU off), timed in the same alternation.
--set layers (default): a few distinct shapes per model (LAYERS). --set models: every 1x1
conv of the four models with its count (MODEL_LAYERS, taken from the models by forward hooks
on PyTorch's), and a per-model total of count x median per pass and framework.
Runs in one worker process (common.worker_env: thread counts set before the first OpenCL
call); peers alternate (common.measure); medians with min-max. --out FILE.jsonl appends one
JSON line per (layer, pass) (and per model total with --set models).
"""
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

# (name, C, O, H, groups): 1x1 stride 1 on H x H maps
LAYERS = [("m 16-96 32", 16, 96, 32, 1), ("m 96-24 32", 96, 24, 32, 1),
          ("m 32-192 16", 32, 192, 16, 1), ("m 192-32 16", 192, 32, 16, 1),
          ("m 64-384 8", 64, 384, 8, 1), ("m 384-64 8", 384, 64, 8, 1),
          ("m 160-960 4", 160, 960, 4, 1), ("m 960-160 4", 960, 160, 4, 1),
          ("m 320-1280 4", 320, 1280, 4, 1), ("e 1152-192 4", 1152, 192, 4, 1),
          ("e 672-28 1", 672, 28, 1, 1), ("e 28-672 1", 28, 672, 1, 1),
          ("d 96-48 32", 96, 48, 32, 1), ("d 180-48 16", 180, 48, 16, 1),
          ("d 300-48 8", 300, 48, 8, 1), ("d 372-48 4", 372, 48, 4, 1),
          ("s 58-58 16", 58, 58, 16, 1), ("s 116-116 8", 116, 116, 8, 1),
          ("s 232-232 4", 232, 232, 4, 1), ("x 128-256 g4 16", 128, 256, 16, 4)]


def model_layers():
    """model -> [((C, O, H, groups), count)]: every 1x1 stride-1 conv of the four models,
    from forward hooks on PyTorch's build of bench/zoo_models at one 32x32 image."""
    import torch
    import zoo_models as zm
    out = {}
    for name in ("mobilenetv2", "efficientnet_b0", "densenet", "shufflenetv2"):
        out[name] = sorted(zm.conv_shapes(name, torch, lambda mod, x: (
            mod.in_channels, mod.out_channels, x.shape[2], mod.groups) if
            mod.kernel_size == (1, 1) and mod.stride == (1, 1) else None).items())
    return out


def worker(args):
    import numpy as np
    import torch
    import clgrad
    from clgrad import backends
    from clgrad.ops.conv import algorithms as alg
    torch.set_num_threads(args.threads)
    if args.algo:
        backends.conv_algorithm = args.algo
    dev = clgrad.ones(1)._storage.device
    n = args.batch
    if args.set == "models":
        per_model = model_layers()
        cases = {}
        for model, rows in per_model.items():
            for (c, o, h, g), _ in rows:
                cases[(c, o, h, g)] = f"{c}-{o} {h}" + (f" g{g}" if g > 1 else "")
        cases = [(name, *key) for key, name in cases.items()]
    else:
        cases = LAYERS
    results = {}
    for name, c, o, h, g in cases:
        if args.only and not any(k in name for k in args.only.split(",")):
            continue
        rng = np.random.default_rng(0)
        xn = rng.standard_normal((n, c, h, h), dtype=np.float32)
        wn = (rng.standard_normal((o, c // g, 1, 1)) / np.sqrt(c // g)).astype(np.float32)
        gn = rng.standard_normal((n, o, h, h), dtype=np.float32)
        x, w, gr = (clgrad.from_numpy(v) for v in (xn, wn, gn))
        passes = common.conv_passes(x, w, gr, 1, 0, g)
        fwd, dgrad, wgrad = (passes[k] for k in ("forward", "grad_input", "grad_weight"))
        algos = passes["algos"]
        tx, tw_, tg = (torch.from_numpy(v) for v in (xn, wn, gn))
        def before(fn):
            """fn with the pointwise passes through the batched gemm (alg.PW_CPU off)."""
            def run():
                alg.PW_CPU = False
                try:
                    fn()
                finally:
                    alg.PW_CPU = True
            return run

        conv_bw = torch.ops.aten.convolution_backward
        peers = {
            "forward": (fwd, lambda: torch.nn.functional.conv2d(tx, tw_, None, 1, 0, 1, g)),
            "grad_input": (dgrad, lambda: conv_bw(tg, tx, tw_, None, [1, 1], [0, 0], [1, 1],
                                                  False, [0, 0], g, [True, False, False])),
            "grad_weight": (wgrad, lambda: conv_bw(tg, tx, tw_, None, [1, 1], [0, 0], [1, 1],
                                                   False, [0, 0], g, [False, True, False])),
        }
        flop = 2.0 * n * o * h * h * (c // g)
        fwd(), dgrad(), wgrad()
        ref = {"forward": peers["forward"][1](), "grad_input": peers["grad_input"][1]()[0],
               "grad_weight": peers["grad_weight"][1]()[1]}
        got = passes["got"]
        for pas, (cf, tf) in peers.items():
            r = ref[pas].numpy()
            err = float(np.abs(got[pas].numpy() - r).max() / max(np.abs(r).max(), 1e-30))
            fns = {"clgrad": cf, "torch": tf}
            if args.ab:
                fns["before"] = before(cf)
            t = common.measure(fns, reps=args.reps, budget=args.budget)
            mc, mt = statistics.median(t["clgrad"]), statistics.median(t["torch"])
            mb = statistics.median(t["before"]) if args.ab else None
            results[(c, o, h, g, pas)] = (mc, mt, mb)
            row = dict(layer=name, c=c, o=o, h=h, groups=g, n=n, pass_=pas, algo=algos[pas],
                       clgrad_ms=mc * 1e3,
                       clgrad_minmax=[min(t["clgrad"]) * 1e3, max(t["clgrad"]) * 1e3],
                       torch_ms=mt * 1e3, torch_minmax=[min(t["torch"]) * 1e3,
                                                        max(t["torch"]) * 1e3],
                       ratio=mc / mt, clgrad_gflops=flop / mc / 1e9,
                       torch_gflops=flop / mt / 1e9, relerr=err, device=dev.name,
                       before_ms=None if mb is None else mb * 1e3,
                       vw=dev.vector_width, threads=args.threads, tag=args.tag)
            print(f"{name:18s} {pas:11s} {algos[pas]:9s} clgrad {mc*1e3:7.3f} ms "
                  f"({flop/mc/1e9:5.1f} GF/s) torch {mt*1e3:7.3f} ms ({flop/mt/1e9:5.1f}) "
                  f"ratio {mc/mt:5.2f} err {err:.1e}"
                  + (f" | before {mb*1e3:7.3f} ms ratio {mb/mt:5.2f}" if args.ab else ""),
                  flush=True)
            _append(args.out, row)
    if args.set == "models":
        for model, rows in per_model.items():
            tot = {}  # pass -> [clgrad, torch, before] seconds, count x median summed
            for (c, o, h, g), count in rows:
                for pas in ("forward", "grad_input", "grad_weight"):
                    got = results.get((c, o, h, g, pas), (0.0, 0.0, None))
                    acc = tot.setdefault(pas, [0.0, 0.0, 0.0])
                    for i, v in enumerate(got):
                        acc[i] += count * (v or 0.0)
            allc, allt, allb = (sum(v[i] for v in tot.values()) for i in range(3))
            print(f"== {model}: " + "  ".join(
                f"{pas} {a*1e3:.1f}/{b*1e3:.1f} ms" for pas, (a, b, _) in tot.items())
                + f"  all {allc*1e3:.1f}/{allt*1e3:.1f} ms ratio {allc/allt:.2f}"
                + (f"  before {allb*1e3:.1f} ms ratio {allb/allt:.2f}" if args.ab else ""),
                flush=True)
            _append(args.out, dict(model=model, n=n, total_ms={p: [v * 1e3 for v in abc]
                                                               for p, abc in tot.items()},
                                   clgrad_ms=allc * 1e3, torch_ms=allt * 1e3,
                                   before_ms=allb * 1e3 if args.ab else None,
                                   ratio=allc / allt, device=dev.name, vw=dev.vector_width,
                                   threads=args.threads, tag=args.tag))


def _append(path, row):
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")


def main():
    ap = common.layer_parser(__doc__, reps=9)
    ap.add_argument("--set", default="layers", choices=("layers", "models"))
    ap.add_argument("--algo", default="")
    ap.add_argument("--budget", type=float, default=2.0)
    ap.add_argument("--ab", action="store_true",
                    help="also time the batched-gemm path (clgrad before its CPU kernels)")
    common.run_layer_bench(ap, worker, __file__)


if __name__ == "__main__":
    main()
