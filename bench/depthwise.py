"""Per-layer depthwise conv timings (issue 23): the distinct depthwise layers of the zoo's
MobileNetV2, EfficientNet-B0 and ShuffleNetV2 (CIFAR form, bench/zoo_models.py) at one batch
size, each pass alone (forward, input gradient, weight gradient), clgrad against PyTorch CPU
conv2d(groups=C), with GB/s (operands read and written once) and GFLOP/s. Depthwise convs are
memory-bound: each row also gives the bandwidth of a plain PyTorch copy of the layer's input
(copy_gbs) to compare with.

    python bench/depthwise.py --batch 8 --threads 1 [--device intel|pocl] [--narrow]

--narrow runs clgrad as on an AVX2 machine (the device's vector width forced to 8: the kernels
build without WIDE). --split adds clgrad's per-kernel split of each pass (a queue finish after
every launch). Runs in one worker process (common.worker_env: thread counts set before the
first OpenCL call); peers alternate (common.measure); medians with min-max, and the ratio of
the minima (ratio_min: steadier than the medians' where other processes share the cores).
--out FILE.jsonl appends one JSON line per (layer, pass).
"""
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

# (C, H, k, stride): padding k // 2, groups C; models: m MobileNetV2, e EfficientNet-B0,
# s ShuffleNetV2 (how many layers of that shape, fwd/bwd of each runs once per step)
LAYERS = [(32, 32, 3, 1, "me"), (96, 32, 3, 1, "me"), (144, 32, 3, 1, "me"),
          (144, 32, 3, 2, "m"), (144, 32, 5, 2, "e"), (24, 32, 3, 2, "s"),
          (58, 32, 3, 2, "s"), (58, 16, 3, 1, "sss"), (192, 16, 3, 1, "mm"),
          (192, 16, 3, 2, "m"), (240, 16, 3, 2, "e"), (240, 16, 5, 1, "e"),
          (116, 16, 3, 2, "ss"), (116, 8, 3, 1, "sssssss"), (384, 8, 3, 1, "mmmm"),
          (480, 8, 3, 1, "ee"), (480, 8, 5, 1, "e"), (576, 8, 3, 1, "mm"),
          (576, 8, 3, 2, "m"), (672, 8, 5, 1, "ee"), (672, 8, 5, 2, "e"),
          (232, 8, 3, 2, "ss"), (232, 4, 3, 1, "sss"), (960, 4, 3, 1, "mmm"),
          (1152, 4, 3, 1, "e"), (1152, 4, 5, 1, "eee")]


def name_of(c, h, k, s):
    return f"dw{k} {c}x{h}{'s2' if s == 2 else ''}"


def worker(args):
    import numpy as np
    import torch
    import clgrad
    from clgrad.runtime import Device
    torch.set_num_threads(args.threads)
    if args.narrow:
        Device.vector_width = property(lambda self: 8)
    dev = clgrad.ones(1)._storage.device
    n = args.batch
    for c, h, k, s, models in LAYERS:
        name = name_of(c, h, k, s)
        if args.only and not any(o in name for o in args.only.split(",")):
            continue
        pad = k // 2
        oh = (h + 2 * pad - k) // s + 1
        rng = np.random.default_rng(0)
        xn = rng.standard_normal((n, c, h, h), dtype=np.float32)
        wn = (rng.standard_normal((c, 1, k, k)) / k).astype(np.float32)
        gn = rng.standard_normal((n, c, oh, oh), dtype=np.float32)
        x, w, g = (clgrad.from_numpy(v) for v in (xn, wn, gn))
        passes = common.conv_passes(x, w, g, s, pad, c)
        fwd, dgrad, wgrad = (passes[k] for k in ("forward", "grad_input", "grad_weight"))
        tx, tw_, tg = (torch.from_numpy(v) for v in (xn, wn, gn))
        tcopy = torch.empty_like(tx)
        conv_bw = torch.ops.aten.convolution_backward
        peers = {
            "forward": (fwd, lambda: torch.nn.functional.conv2d(tx, tw_, None, s, pad, 1, c)),
            "grad_input": (dgrad, lambda: conv_bw(tg, tx, tw_, None, [s, s], [pad, pad],
                                                  [1, 1], False, [0, 0], c,
                                                  [True, False, False])),
            "grad_weight": (wgrad, lambda: conv_bw(tg, tx, tw_, None, [s, s], [pad, pad],
                                                   [1, 1], False, [0, 0], c,
                                                   [False, True, False])),
        }
        flop = 2.0 * n * c * oh * oh * k * k
        xb, yb = 4.0 * n * c * h * h, 4.0 * n * c * oh * oh
        nbytes = {"forward": xb + yb, "grad_input": xb + yb, "grad_weight": xb + yb}
        fwd(), dgrad(), wgrad()
        ref = {"forward": peers["forward"][1](), "grad_input": peers["grad_input"][1]()[0],
               "grad_weight": peers["grad_weight"][1]()[1]}
        got = passes["got"]
        tc = common.measure({"copy": lambda: tcopy.copy_(tx)}, reps=9, budget=1.0)["copy"]
        copy_gbs = 2 * xb / statistics.median(tc) / 1e9
        for pas, (cf, tf) in peers.items():
            r = ref[pas].numpy()
            err = float(np.abs(got[pas].numpy() - r).max() / max(1.0, np.abs(r).max()))
            t = common.measure({"clgrad": cf, "torch": tf}, reps=args.reps, budget=2.0)
            mc, mt = statistics.median(t["clgrad"]), statistics.median(t["torch"])
            rmin = min(t["clgrad"]) / min(t["torch"])
            row = dict(layer=name, c=c, h=h, k=k, stride=s, models=models, n=n, pass_=pas,
                       clgrad_ms=mc * 1e3, torch_ms=mt * 1e3, ratio=mc / mt, ratio_min=rmin,
                       clgrad_minmax=[min(t["clgrad"]) * 1e3, max(t["clgrad"]) * 1e3],
                       torch_minmax=[min(t["torch"]) * 1e3, max(t["torch"]) * 1e3],
                       clgrad_gbs=nbytes[pas] / mc / 1e9, torch_gbs=nbytes[pas] / mt / 1e9,
                       copy_gbs=copy_gbs, clgrad_gflops=flop / mc / 1e9,
                       torch_gflops=flop / mt / 1e9, relerr=err, device=dev.name,
                       vw=dev.vector_width, threads=args.threads, tag=args.tag)
            split = ""
            if args.split:
                import profile_step
                _, krows = profile_step.per_launch(cf, 3)
                row["kernels"] = [dict(kernel=q["kernel"].split("::")[-1], launches=q["launches"],
                                       ms=round(q["ms"], 3)) for q in krows]
                split = " [" + ", ".join(f"{q['kernel']} {q['launches']:.0f}x {q['ms']:.2f}"
                                         for q in row["kernels"]) + "]"
            print(f"{name:16s} {pas:11s} clgrad {mc*1e3:7.3f} ms ({nbytes[pas]/mc/1e9:5.1f} GB/s"
                  f" {flop/mc/1e9:5.1f} GF/s) torch {mt*1e3:7.3f} ms "
                  f"({nbytes[pas]/mt/1e9:5.1f} GB/s) copy {copy_gbs:5.1f} GB/s ratio "
                  f"{mc/mt:5.2f} (of minima {rmin:5.2f}) err {err:.1e}{split}", flush=True)
            common.append_row(args.out, row)


def main():
    ap = common.layer_parser(__doc__, reps=21)
    ap.add_argument("--narrow", action="store_true")
    ap.add_argument("--split", action="store_true")
    common.run_layer_bench(ap, worker, __file__)


if __name__ == "__main__":
    main()
