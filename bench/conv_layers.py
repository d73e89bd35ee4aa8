"""Per-layer conv timings (issue 23): the 3x3 convs of ResNet-18 and VGG-11 (CIFAR layout) at
one batch size, each pass alone (forward, input gradient, weight gradient), clgrad against
PyTorch CPU, with the algorithm clgrad's 'auto' picks per pass and GFLOP/s.

    python bench/conv_layers.py --batch 8 --threads 1 [--device intel|pocl] [--algo ALGO]

Runs in one worker process (common.worker_env: thread counts set before the first OpenCL
call); peers alternate (common.measure); medians with min-max. --out FILE.jsonl appends one
JSON line per (layer, pass).
"""
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

# (name, C, O, H, stride): 3x3, padding 1; the models' distinct shapes (ResNet-18 layer1-4
# and their strided first convs; VGG-11's 3x3 stack)
LAYERS = [("r.l1 64-64 32", 64, 64, 32, 1), ("r.l2a 64-128 32s2", 64, 128, 32, 2),
          ("r.l2 128-128 16", 128, 128, 16, 1), ("r.l3a 128-256 16s2", 128, 256, 16, 2),
          ("r.l3 256-256 8", 256, 256, 8, 1), ("r.l4a 256-512 8s2", 256, 512, 8, 2),
          ("r.l4 512-512 4", 512, 512, 4, 1), ("v.2 64-128 16", 64, 128, 16, 1),
          ("v.3 128-256 8", 128, 256, 8, 1), ("v.5 256-512 4", 256, 512, 4, 1),
          ("v.7 512-512 2", 512, 512, 2, 1)]


def worker(args):
    import numpy as np
    import torch
    import clgrad
    from clgrad import backends
    torch.set_num_threads(args.threads)
    if args.algo:
        backends.conv_algorithm = args.algo
    dev = clgrad.ones(1)._storage.device
    n = args.batch
    for name, c, o, h, s in LAYERS:
        if args.only and not any(k in name for k in args.only.split(",")):
            continue
        oh = (h + 2 - 3) // s + 1
        rng = np.random.default_rng(0)
        xn = rng.standard_normal((n, c, h, h), dtype=np.float32)
        wn = (rng.standard_normal((o, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
        gn = rng.standard_normal((n, o, oh, oh), dtype=np.float32)
        x, w, g = (clgrad.from_numpy(v) for v in (xn, wn, gn))
        passes = common.conv_passes(x, w, g, s, 1, 1)
        fwd, dgrad, wgrad = (passes[k] for k in ("forward", "grad_input", "grad_weight"))
        algos = passes["algos"]
        tx, tw_, tg = (torch.from_numpy(v) for v in (xn, wn, gn))
        conv_bw = torch.ops.aten.convolution_backward
        peers = {
            "forward": (fwd, lambda: torch.nn.functional.conv2d(tx, tw_, None, s, 1)),
            "grad_input": (dgrad, lambda: conv_bw(tg, tx, tw_, None, [s, s], [1, 1], [1, 1],
                                                  False, [0, 0], 1, [True, False, False])),
            "grad_weight": (wgrad, lambda: conv_bw(tg, tx, tw_, None, [s, s], [1, 1], [1, 1],
                                                   False, [0, 0], 1, [False, True, False])),
        }
        flop = 2.0 * n * o * oh * oh * c * 9
        # correctness against torch once
        fwd(), dgrad(), wgrad()
        ref = {"forward": peers["forward"][1](), "grad_input": peers["grad_input"][1]()[0],
               "grad_weight": peers["grad_weight"][1]()[1]}
        got = passes["got"]
        for pas, (cf, tf) in peers.items():
            err = float(np.abs(got[pas].numpy() - ref[pas].numpy()).max())
            t = common.measure({"clgrad": cf, "torch": tf}, reps=args.reps, budget=4.0)
            mc, mt = statistics.median(t["clgrad"]), statistics.median(t["torch"])
            row = dict(layer=name, n=n, pass_=pas, algo=algos[pas], clgrad_ms=mc * 1e3,
                       clgrad_minmax=[min(t["clgrad"]) * 1e3, max(t["clgrad"]) * 1e3],
                       torch_ms=mt * 1e3, torch_minmax=[min(t["torch"]) * 1e3,
                                                        max(t["torch"]) * 1e3],
                       ratio=mc / mt, clgrad_gflops=flop / mc / 1e9,
                       torch_gflops=flop / mt / 1e9, maxerr=err, device=dev.name,
                       vw=dev.vector_width, threads=args.threads, tag=args.tag)
            print(f"{name:20s} {pas:11s} {algos[pas]:10s} clgrad {mc*1e3:7.2f} ms "
                  f"({flop/mc/1e9:5.1f} GF/s) torch {mt*1e3:7.2f} ms ({flop/mt/1e9:5.1f}) "
                  f"ratio {mc/mt:5.2f} err {err:.1e}", flush=True)
            common.append_row(args.out, row)


def main():
    ap = common.layer_parser(__doc__, reps=7)
    ap.add_argument("--algo", default="")
    common.run_layer_bench(ap, worker, __file__)


if __name__ == "__main__":
    main()
