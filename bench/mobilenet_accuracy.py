"""Float32 accuracy of a MobileNetV2 step in clgrad and PyTorch (issue 13's lead).

torchvision's MobileNetV2 (width 0.5; written out here, the same layers and init) on 32x32
inputs, where the last stages run BatchNorm over 2x2 and 1x1 maps. Both frameworks get the
same weights and batch; each float32 first-step gradient is compared with PyTorch float64
(relative error of all gradients together), over several batches (seeds).
``--train LR`` also trains 3 epochs on the digits (8x8 upscaled to 32x32) with the same init
and batch order, SGD(LR, momentum ``--momentum``), and prints test accuracy per epoch.

    python bench/mobilenet_accuracy.py [--seeds 6] [--batch 32] [--train 0.05 --momentum 0]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


def make_divisible(v, d=8):
    nv = max(d, int(v + d / 2) // d * d)
    return nv + d if nv < 0.9 * v else nv


def build(T, width=0.5, ncls=10):
    """torchvision.models.MobileNetV2(width_mult=width) against the namespace T."""
    nn = T.nn

    def cna(i, o, k, s, g=1, act=True):
        layers = [nn.Conv2d(i, o, k, s, (k - 1) // 2, groups=g, bias=False), nn.BatchNorm2d(o)]
        return layers + ([nn.ReLU6(inplace=True)] if act else [])

    class InvertedResidual(nn.Module):
        def __init__(self, i, o, s, t):
            super().__init__()
            h = int(round(i * t))
            self.res = s == 1 and i == o
            layers = cna(i, h, 1, 1) if t != 1 else []
            self.conv = nn.Sequential(*(layers + cna(h, h, 3, s, g=h) + cna(h, o, 1, 1, act=False)))

        def forward(self, x):
            return x + self.conv(x) if self.res else self.conv(x)

    cfg = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1],
           [6, 160, 3, 2], [6, 320, 1, 1]]
    c = make_divisible(32 * width)
    feats = cna(3, c, 3, 2)
    for t, ch, n, s in cfg:
        o = make_divisible(ch * width)
        for k in range(n):
            feats.append(InvertedResidual(c, o, s if k == 0 else 1, t))
            c = o
    feats += cna(c, 1280, 1, 1)

    class MobileNetV2(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(*feats)
            self.classifier = nn.Linear(1280, ncls)

        def forward(self, x):
            x = T.nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1)).flatten(1)
            return self.classifier(x)
    return MobileNetV2()


def load(T, sd, dtype):
    m = build(T)
    m.load_state_dict({k: T.tensor(v) for k, v in sd.items()})
    return m.to(dtype)


def first_step_grads(T, sd, x, y, dtype):
    m = load(T, sd, dtype)
    m.train()
    T.nn.functional.cross_entropy(m(T.tensor(x).to(dtype)), T.tensor(y)).backward()
    return [p.grad.numpy().astype(np.float64) for p in m.parameters()]


def train(T, sd, data, lr, momentum, seed):
    (xtr, ytr), (xte, yte) = data
    m = load(T, sd, T.float32)
    opt = T.optim.SGD(m.parameters(), lr=lr, momentum=momentum)
    accs = []
    for e in range(3):
        m.train()
        order = np.random.default_rng(seed * 100 + e).permutation(len(ytr))
        for i in range(0, len(ytr) - 31, 32):
            idx = order[i:i + 32]
            loss = T.nn.functional.cross_entropy(m(T.tensor(xtr[idx])), T.tensor(ytr[idx]))
            opt.zero_grad()
            loss.backward()
            opt.step()
        m.eval()
        with T.no_grad():
            pred = np.concatenate([m(T.tensor(xte[j:j + 120])).numpy().argmax(1)
                                   for j in range(0, len(yte), 120)])
        accs.append(round(float((pred == yte).mean()), 3))
    return accs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--train", type=float, default=None, metavar="LR")
    ap.add_argument("--momentum", type=float, default=0.0)
    args = ap.parse_args()
    import torch
    import clgrad
    torch.manual_seed(0)
    sd = {k: v.numpy().copy() for k, v in build(torch).state_dict().items()}
    print("seed  torch32  clgrad32   (relative error of all first-step gradients vs torch "
          "float64)")
    for seed in range(args.seeds):
        rng = np.random.default_rng(seed)
        x = rng.standard_normal((args.batch, 3, 32, 32)).astype(np.float32)
        y = rng.integers(0, 10, args.batch)
        truth = first_step_grads(torch, sd, x, y, torch.float64)
        norm = np.sqrt(sum((t ** 2).sum() for t in truth))
        errs = []
        for T in (torch, clgrad):
            g = first_step_grads(T, sd, x, y, T.float32)
            errs.append(np.sqrt(sum(((a - t) ** 2).sum() for a, t in zip(g, truth))) / norm)
        print(f"{seed:4d}  {errs[0]:.1e}  {errs[1]:.1e}", flush=True)
    if args.train is not None:
        from clgrad.utils.data.datasets import digits_split

        def up(a):  # 8x8 -> 32x32 (nearest), 3 channels, normalised
            a = np.repeat(np.repeat(a, 4, 2), 4, 3)
            return np.repeat((a - 0.3) / 0.4, 3, 1).astype(np.float32)
        tr, te = (d.arrays for d in digits_split())
        data = ((up(tr[0]), tr[1]), (up(te[0]), te[1]))
        for seed in range(3):
            torch.manual_seed(seed)
            sd = {k: v.numpy().copy() for k, v in build(torch).state_dict().items()}
            for name, T in (("torch", torch), ("clgrad", clgrad)):
                accs = train(T, sd, data, args.train, args.momentum, seed)
                print(f"train lr={args.train} momentum={args.momentum} seed={seed} {name:6s} "
                      f"test accuracy per epoch {accs}", flush=True)


if __name__ == "__main__":
    main()
