"""S4: one SGD training step of a small CNN at batch 64 on 28x28 inputs (images/s), clgrad
against PyTorch and tinygrad.

    python bench/train_step.py          # CPU, 1 and 2 threads
    python bench/train_step.py --gpu    # GPU (PyTorch CUDA, TF32 off)

Model: conv(1->16, 3x3, pad 1) - ReLU - maxpool 2 - conv(16->32, 3x3, pad 1, groups 2) - ReLU -
maxpool 2 - linear(1568->10) - cross-entropy; SGD lr 0.01 (no momentum). A step is
zero_grad, forward, backward, update, then the device is synchronised (no value is read).
The same random batch every step; the weights start equal in every framework. NumPy has no
autograd: it is not a peer here. Needs clgrad.nn and clgrad.optim (exits with a note when
they are missing).
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

BATCH = 64


def build(nn):
    """The S4 model in any framework with PyTorch's torch.nn names (torch.nn, clgrad.nn)."""
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1, groups=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(1568, 10))


def initial_weights(seed=0):
    """Weights as NumPy arrays in Sequential's parameter order (0.weight, 0.bias, 3.weight...)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    shapes = [(16, 1, 3, 3), (16,), (32, 8, 3, 3), (32,), (10, 1568), (10,)]
    fan = [9, 9, 72, 72, 1568, 1568]
    return [(rng.uniform(-1, 1, s) / np.sqrt(f)).astype(np.float32) for s, f in zip(shapes, fan)]


def batch(seed=1):
    import numpy as np
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((BATCH, 1, 28, 28), dtype=np.float32),
            rng.integers(0, 10, BATCH).astype(np.int64))


def clgrad_step(xn, yn, ws):
    import clgrad
    import clgrad.nn as nn
    import clgrad.optim as optim
    model = build(nn)
    with clgrad.no_grad():
        for p, v in zip(model.parameters(), ws):
            p.copy_(clgrad.from_numpy(v))
    opt = optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    x, y = clgrad.from_numpy(xn), clgrad.from_numpy(yn)

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        clgrad.synchronize()
        return loss
    return step


def torch_step(torch, xn, yn, ws, dev):
    model = build(torch.nn).to(dev)
    with torch.no_grad():
        for p, v in zip(model.parameters(), ws):
            p.copy_(torch.from_numpy(v))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    x, y = torch.from_numpy(xn).to(dev), torch.from_numpy(yn).to(dev)
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        sync()
        return loss
    return step


def tinygrad_step(xn, yn, ws):
    from tinygrad import Context, Device, Tensor, TinyJit, nn

    class Net:
        def __init__(self):
            self.c1 = nn.Conv2d(1, 16, 3, padding=1)
            self.c2 = nn.Conv2d(16, 32, 3, padding=1, groups=2)
            self.l1 = nn.Linear(1568, 10)

        def __call__(self, x):
            x = self.c1(x).relu().max_pool2d(2)
            x = self.c2(x).relu().max_pool2d(2)
            return self.l1(x.flatten(1))
    net = Net()
    params = [net.c1.weight, net.c1.bias, net.c2.weight, net.c2.bias, net.l1.weight, net.l1.bias]
    for p, v in zip(params, ws):
        p.assign(Tensor(v)).realize()
    opt = nn.optim.SGD(params, lr=0.01)
    x, y = Tensor(xn).realize(), Tensor(yn.astype("int32")).realize()

    @TinyJit
    def jstep(xx, yy):
        with Context(TRAINING=1):
            opt.zero_grad()
            loss = net(xx).sparse_categorical_crossentropy(yy).backward()
            return loss.realize(*opt.schedule_step())  # tinygrad's idiom (beautiful_mnist)

    def step():
        loss = jstep(x, y)
        Device["CL"].synchronize()
        return loss
    return step


def worker(args, w: common.Worker):
    common.require_clgrad_nn(w, "train_step", training=True)
    w.device()
    xn, yn = batch()
    ws = initial_weights()
    fns = {"clgrad": clgrad_step(xn, yn, ws)}
    if w.want("torch") or w.want("torch-cuda"):
        torch = w.setup_torch()
        fns["torch-cuda" if w.gpu else "torch"] = torch_step(torch, xn, yn, ws,
                                                             "cuda" if w.gpu else "cpu")
    if w.want("tinygrad") and w.setup_tinygrad() is not None:
        fns["tinygrad"] = tinygrad_step(xn, yn, ws)
    # the first losses must agree (same weights, same batch): a check that the steps match
    losses, first = {}, {}
    for k, fn in fns.items():
        t = time.perf_counter()
        loss = fn()
        first[k] = time.perf_counter() - t
        losses[k] = float(loss.detach().cpu().numpy() if k.startswith("torch") else
                          loss.detach().numpy())
    print("first step s:", {k: round(v, 2) for k, v in first.items()}, "loss:", losses,
          flush=True)
    times = common.measure(fns, args.reps, warmup=2, budget=args.budget)
    for peer, ts in times.items():
        w.emit(f"S4 batch {BATCH}", peer, "training step", "images/s", ts, scale=BATCH,
               higher_is_better=True, first_loss=losses[peer], first_step_s=first[peer])
    w.emit_meta()


if __name__ == "__main__":
    common.main("train_step", __doc__, worker)
