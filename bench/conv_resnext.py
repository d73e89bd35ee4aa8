"""Per-layer conv timings of ResNeXt-29 32x4d (issue 23, bench/zoo_models): every distinct conv
of the model (1x1 bottleneck convs, the grouped 3x3 with groups=32, the strided shortcuts),
each pass alone (forward, input gradient, weight gradient), clgrad against PyTorch CPU, with
the algorithm clgrad's 'auto' picks per pass and GFLOP/s; then the step's conv total
(count x median per pass, both frameworks).

    python bench/conv_resnext.py --batch 8 --threads 1 [--device intel|pocl] [--only 3x3]

Runs in one worker process (common.worker_env: thread counts set before the first OpenCL
call); peers alternate (common.measure, via common.time_conv_layer); medians with min-max.
--out FILE.jsonl appends one JSON line per (layer, pass).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def model_layers():
    """[((C, O, H, k, stride, pad, groups), count)]: every conv of ResNeXt-29 32x4d, from
    forward hooks on PyTorch's build of bench/zoo_models at one 32x32 image."""
    import torch
    import zoo_models as zm
    return list(zm.conv_shapes("resnext29", torch, lambda mod, x: (
        mod.in_channels, mod.out_channels, x.shape[2], mod.kernel_size[0], mod.stride[0],
        mod.padding[0], mod.groups)).items())


def worker(args):
    import torch
    import clgrad
    from clgrad import backends
    torch.set_num_threads(args.threads)
    if args.algo:
        backends.conv_algorithm = args.algo
    clgrad.ones(1)
    total = {"clgrad": 0.0, "torch": 0.0}
    for (c, o, h, k, s, pad, g), count in model_layers():
        name = f"{c}-{o} {k}x{k} {h}" + (f"s{s}" if s > 1 else "") + (
            f" g{g}" if g > 1 else "") + f" x{count}"
        if args.only and not any(t in name for t in args.only.split(",")):
            continue
        for row in common.time_conv_layer(args, name, c, o, h, k, s, pad, g):
            for peer in total:
                total[peer] += count * row[f"{peer}_ms"]
    print(f"convs per step (count x median, 3 passes): clgrad {total['clgrad']:.1f} ms, "
          f"torch {total['torch']:.1f} ms, ratio {total['clgrad'] / total['torch']:.2f}")


def main():
    ap = common.layer_parser(__doc__, reps=7)
    ap.add_argument("--algo", default="")
    ap.add_argument("--budget", type=float, default=4.0, help="seconds per pass (measure)")
    common.run_layer_bench(ap, worker, __file__)


if __name__ == "__main__":
    main()
