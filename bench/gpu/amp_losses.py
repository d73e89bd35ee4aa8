"""Mixed precision's losses against float32's, in clgrad and in PyTorch (issue 35, part 2:
"losses within PyTorch AMP's own run-to-run spread of the float32 losses").

Per model, five fresh training runs of ``--steps`` steps from the same initial weights
(PyTorch's ``state_dict`` loaded into clgrad) on the same batches (``--batches`` fixed random
batches, cycled; Dropout in eval mode throughout, so that every run is deterministic but for
the kernels' own rounding):

    torch32   PyTorch float32 (cuDNN, TF32 off)
    torch16   PyTorch autocast(float16) + GradScaler
    torch16b  the same again (PyTorch AMP's run-to-run spread: cuDNN's algorithm choice and
              atomics)
    cl32      clgrad float32
    cl16      clgrad autocast(float16) + GradScaler

The step is bench/zoo.py's (SGD lr 0.01, momentum 0.9, weight decay 5e-4, cross-entropy).
Per run, the loss of every step (read after the step). Deviations, each the largest over the
steps of |a - b| / |b|:

    torch AMP spread   torch16 against torch32: what float16 does to PyTorch's losses
    clgrad AMP         cl16 against torch32 (and against cl32)
    float32            cl32 against torch32 (the two frameworks' float32 rounding)
    rerun              torch16b against torch16

"within" is clgrad AMP against torch32 <= PyTorch's own AMP spread (torch16 and torch16b
against torch32, the larger). Rows: one JSON line per model in ``--out``; a Markdown table.

    CLGRAD_DEVICE=gpu python bench/gpu/amp_losses.py [--models resnet18,vgg11] [--steps 20]
    python bench/gpu/amp_losses.py --quick      # smoke run on any device with float16
"""
from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent.parent))
import zoo  # noqa: E402
import zoo_models  # noqa: E402

import clgrad  # noqa: E402


def parse(argv=None):
    p = argparse.ArgumentParser(prog="bench/gpu/amp_losses.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="resnet18,vgg11,resnext29,mobilenetv2",
                   help="comma list of " + ", ".join(zoo_models.MODELS) + ", or all")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, default=20, help="training steps per run")
    p.add_argument("--batches", type=int, default=4, help="fixed random batches, cycled")
    p.add_argument("--quick", action="store_true", help="batch 4, 4 steps, ResNet-18 only")
    p.add_argument("--out", default=None, help="JSON-lines file to append rows to")
    args = p.parse_args(argv)
    if args.quick:
        args.batch, args.steps, args.models = 4, 4, "resnet18"
    args.model_list = zoo_models.MODELS if args.models == "all" else \
        [m.strip() for m in args.models.split(",") if m.strip()]
    bad = [m for m in args.model_list if m not in zoo_models.MODELS]
    if bad:
        p.error(f"--models: unknown {bad}; expected some of {zoo_models.MODELS}")
    if args.steps < 1 or args.batch < 1 or args.batches < 1:
        p.error("--steps, --batch and --batches: expected >= 1")
    return args


def run(fw, name, init, data, steps, amp, dev):
    """The losses of ``steps`` training steps of a fresh ``name`` on framework ``fw``."""
    torch_side = fw is not clgrad
    model = zoo_models.build(name, fw)
    model.load_state_dict({k: fw.from_numpy(v) for k, v in init.items()})
    if torch_side:  # clgrad's model and batches are on its default device (CLGRAD_DEVICE)
        model = model.to(dev)
    model.train()
    zoo._dropout_eval(model, True, fw.nn)
    opt = fw.optim.SGD(model.parameters(), lr=zoo.LR, momentum=zoo.MOMENTUM,
                       weight_decay=zoo.WEIGHT_DECAY)
    dev_type = dev if torch_side else clgrad.default_device().type
    scaler = fw.amp.GradScaler(dev_type) if amp else None
    batches = [(fw.from_numpy(x), fw.from_numpy(y)) for x, y in data]
    if torch_side:
        batches = [(x.to(dev), y.to(dev)) for x, y in batches]
    losses = []
    for i in range(steps):
        x, y = batches[i % len(batches)]
        opt.zero_grad()
        if amp:
            with fw.autocast(dev_type, dtype=fw.float16):
                loss = fw.nn.functional.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss = fw.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        losses.append(float(loss.item()))
    del model, opt, batches
    gc.collect()
    return losses


def deviation(a, b) -> float:
    """max over steps of |a - b| / |b| (NaN where either has a NaN: never hidden)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-12)))


def main(argv=None):
    args = parse(argv)
    try:
        import torch
    except ImportError:
        torch = None
    tdev = "cuda" if torch is not None and torch.cuda.is_available() else "cpu"
    if torch is not None:
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    print(f"clgrad on {clgrad.default_device()}; PyTorch "
          f"{torch.__version__ + ' on ' + tdev if torch else 'not installed'}", flush=True)
    rows = []
    for name in args.model_list:
        (c, h, w), classes = zoo_models.input_shape(name)
        rng = np.random.default_rng(args.batch)
        data = [(rng.standard_normal((args.batch, c, h, w), dtype=np.float32),
                 rng.integers(0, classes, args.batch).astype(np.int64))
                for _ in range(args.batches)]
        if torch is not None:
            torch.manual_seed(0)
            init = {k: v.detach().numpy() for k, v in zoo_models.build(name, torch)
                    .state_dict().items()}
        else:
            clgrad.manual_seed(0)
            init = {k: v.detach().numpy() for k, v in zoo_models.build(name, clgrad)
                    .state_dict().items()}
        L = {}
        if torch is not None and (tdev == "cuda" or args.quick):
            L["torch32"] = run(torch, name, init, data, args.steps, False, tdev)
            L["torch16"] = run(torch, name, init, data, args.steps, True, tdev)
            L["torch16b"] = run(torch, name, init, data, args.steps, True, tdev)
        L["cl32"] = run(clgrad, name, init, data, args.steps, False, clgrad.default_device())
        L["cl16"] = run(clgrad, name, init, data, args.steps, True, clgrad.default_device())
        row = dict(model=name, batch=args.batch, steps=args.steps,
                   device=str(clgrad.default_device()), losses=L,
                   clgrad_amp_vs_cl32=deviation(L["cl16"], L["cl32"]))
        if "torch32" in L:
            spread = max(deviation(L["torch16"], L["torch32"]),
                         deviation(L["torch16b"], L["torch32"]))
            row.update(torch_amp_spread=spread,
                       clgrad_amp_vs_torch32=deviation(L["cl16"], L["torch32"]),
                       float32_vs_torch32=deviation(L["cl32"], L["torch32"]),
                       torch_rerun=deviation(L["torch16b"], L["torch16"]))
            row["within"] = row["clgrad_amp_vs_torch32"] <= spread
        rows.append(row)
        print(f"{name}: " + ", ".join(f"{k} {v[0]:.5f}..{v[-1]:.5f}" for k, v in L.items()),
              flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")
    print(f"\n| model (batch {args.batch}, {args.steps} steps) | PyTorch AMP spread | "
          "clgrad AMP vs PyTorch f32 | clgrad AMP vs clgrad f32 | clgrad f32 vs PyTorch f32 "
          "| PyTorch AMP rerun | within |\n|---|---|---|---|---|---|---|")
    for r in rows:
        def f(k):
            return f"{r[k]:.2e}" if k in r else "—"
        print(f"| {r['model']} | {f('torch_amp_spread')} | {f('clgrad_amp_vs_torch32')} | "
              f"{f('clgrad_amp_vs_cl32')} | {f('float32_vs_torch32')} | {f('torch_rerun')} | "
              f"{r.get('within', '—')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
