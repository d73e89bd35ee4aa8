"""S5: one training epoch of a MobileNet-style network on CIFAR-size inputs (images/s), clgrad
against PyTorch (and tinygrad where it runs the same net).

    python bench/s5_mobilenet.py          # CPU, 1 and 2 threads
    python bench/s5_mobilenet.py --gpu    # GPU (PyTorch CUDA, TF32 off)

Model (a small MobileNet v1: depthwise-separable blocks with BatchNorm and ReLU, 32x32x3 in):
conv 3->16 3x3 s1 + BN + ReLU, then blocks (depthwise 3x3 + BN + ReLU + pointwise 1x1 + BN +
ReLU) 16->32 s1, 32->64 s2, 64->64 s1, 64->128 s2, 128->128 s1, global average pool, linear
128->10, cross-entropy; SGD lr 0.05, momentum 0.9, weight decay 5e-4 (the public PyTorch CIFAR
recipes). An "epoch" is 8 steps at batch 64 over fixed random data (512 images), in train mode
(BatchNorm batch statistics and running-stat updates included); the device is synchronised
once per epoch. The same initial weights and batches in every framework: the first losses agree
to ~6 digits, which checks that the nets match.
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

BATCH = 64
STEPS = 8
# (in, out, stride) of the depthwise-separable blocks
BLOCKS = [(16, 32, 1), (32, 64, 2), (64, 64, 1), (64, 128, 2), (128, 128, 1)]


def build(nn):
    """The S5 model in any framework with PyTorch's torch.nn names (torch.nn, clgrad.nn)."""
    layers = [nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU()]
    for cin, cout, s in BLOCKS:
        layers += [nn.Conv2d(cin, cin, 3, stride=s, padding=1, groups=cin, bias=False),
                   nn.BatchNorm2d(cin), nn.ReLU(),
                   nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10)]
    return nn.Sequential(*layers)


def data(seed=1):
    import numpy as np
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((BATCH, 3, 32, 32), dtype=np.float32),
             rng.integers(0, 10, BATCH).astype(np.int64)) for _ in range(STEPS)]


def _weights_for(model):
    import numpy as np
    rng = np.random.default_rng(0)
    ws = []
    for name, p in model.named_parameters():
        s = tuple(p.shape)
        if len(s) == 1 and "bias" not in name:      # BN gamma
            ws.append(np.ones(s, np.float32))
        elif len(s) == 1:                            # BN beta, linear bias
            ws.append(np.zeros(s, np.float32))
        else:
            fan = int(np.prod(s[1:]))
            ws.append((rng.uniform(-1, 1, s) / np.sqrt(fan)).astype(np.float32))
    return ws


def _epoch(fw, batches, to_device, sync):
    """(epoch function, first-loss function) for framework ``fw`` (clgrad or torch): the S5
    model with the shared initial weights, SGD, CrossEntropyLoss, the batches on the device."""
    model = build(fw.nn)
    with fw.no_grad():
        for p, v in zip(model.parameters(), _weights_for(model)):
            p.copy_(fw.from_numpy(v))
    model = to_device(model)
    opt = fw.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    loss_fn = fw.nn.CrossEntropyLoss()
    data_dev = [(to_device(fw.from_numpy(x)), to_device(fw.from_numpy(y))) for x, y in batches]

    def epoch():
        loss = None
        for x, y in data_dev:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
        sync()
        return loss

    def first_loss():
        return float(loss_fn(model(data_dev[0][0]), data_dev[0][1]).detach().cpu().numpy())
    return epoch, first_loss


def clgrad_epoch(batches):
    import clgrad
    import clgrad.nn  # noqa: F401 (fw.nn, fw.optim below)
    import clgrad.optim  # noqa: F401
    return _epoch(clgrad, batches, lambda t: t, clgrad.synchronize)


def torch_epoch(torch, batches, dev):
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    return _epoch(torch, batches, lambda t: t.to(dev), sync)


def worker(args, w: common.Worker):
    common.require_clgrad_nn(w, "s5_mobilenet", training=True)
    w.device()
    batches = data()
    fns, firsts = {}, {}
    fns["clgrad"], firsts["clgrad"] = clgrad_epoch(batches)
    if w.want("torch") or w.want("torch-cuda"):
        torch = w.setup_torch()
        key = "torch-cuda" if w.gpu else "torch"
        fns[key], firsts[key] = torch_epoch(torch, batches, "cuda" if w.gpu else "cpu")
    losses = {k: f() for k, f in firsts.items()}  # same weights and batch: these must agree
    first = {}
    for k, fn in fns.items():
        t = time.perf_counter()
        fn()
        first[k] = time.perf_counter() - t
    print("first epoch s:", {k: round(v, 2) for k, v in first.items()}, "first loss:", losses,
          flush=True)
    times = common.measure(fns, args.reps, warmup=1, budget=args.budget)
    for peer, ts in times.items():
        w.emit(f"S5 MobileNet 32x32 batch {BATCH} x {STEPS} steps", peer, "training epoch",
               "images/s", ts, scale=BATCH * STEPS, higher_is_better=True,
               first_loss=losses[peer], first_epoch_s=first[peer])
    w.emit_meta()


if __name__ == "__main__":
    common.main("s5_mobilenet", __doc__, worker)
