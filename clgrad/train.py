"""The main job: train a small grouped CNN on handwritten digits, end to end.

    python examples/train_digits.py            (same as: python -m clgrad train --dataset digits)
    python examples/train_mnist.py --data DIR  (same as: python -m clgrad train --dataset mnist)

One epoch = one pass over the training split with a tqdm bar (loss, accuracy, images/s), then
an evaluation of the held-out split. ``OUT/last.safetensors`` (model + optimizer + scheduler +
epoch + history) is written every epoch and ``OUT/best.safetensors`` whenever the test accuracy
improves, both atomically (clgrad.save); ``OUT/curves.png`` plots loss and accuracy per epoch.
The run ends with one summary line: ``test accuracy: 0.9xx | ... s | ... images/s | device``.

Reproducible: ``--seed`` fixes the initial weights, and each epoch reseeds its shuffle order and
its dropout masks from (seed, epoch), so ``--resume OUT/last.safetensors`` continues exactly as
the uninterrupted run would have.
"""
from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

import clgrad
from clgrad import nn, optim
from clgrad.utils.data import DataLoader
from clgrad.utils.data.datasets import MNIST, digits_split

__all__ = ["digits_net", "mnist_net", "main", "fit", "evaluate", "train_epoch"]

DEFAULTS = {  # per dataset: epochs, batch size, learning rate (AdamW + cosine schedule)
    "digits": dict(epochs=8, batch_size=32, lr=3e-3),
    "mnist": dict(epochs=3, batch_size=128, lr=2e-3),
}


def digits_net(num_classes: int = 10) -> nn.Sequential:
    """The CNN for 1x8x8 digits: dense conv, grouped conv, depthwise-separable conv, linear.

    conv 1->16 3x3 | BN | ReLU                        16x8x8
    conv 16->32 3x3 groups=4 | BN | ReLU               32x8x8   (4 groups: 4 -> 8 channels)
    max pool 2                                         32x4x4
    conv 32->32 3x3 groups=32 (depthwise) | BN | ReLU  32x4x4
    conv 32->64 1x1 (pointwise: mixes the groups) | BN | ReLU   64x4x4
    flatten | dropout 0.25 | linear 1024->10
    """
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1, groups=4, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 32, 3, padding=1, groups=32, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
        nn.Flatten(), nn.Dropout(0.25), nn.Linear(64 * 4 * 4, num_classes))


def mnist_net(num_classes: int = 10) -> nn.Sequential:
    """The same design scaled to 1x28x28 MNIST images (a pooling stage per conv stage)."""
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1, groups=4, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(64, 64, 3, padding=1, groups=64, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
        nn.Conv2d(64, 128, 1, bias=False), nn.BatchNorm2d(128), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.25), nn.Linear(128, num_classes))


def train_epoch(model, loader, loss_fn, optimizer, bar=None, refresh_every: int = 10):
    """One pass over ``loader``: forward, backward, step. Returns (loss, accuracy, images/s).

    Loss and hit counts accumulate on the device; the host reads them only every
    ``refresh_every`` steps to update ``bar`` (a tqdm bar counting images) and at the end.
    """
    model.train()
    device = clgrad.default_device()
    loss_sum = clgrad.zeros((), dtype=clgrad.float32)
    hits = clgrad.zeros((), dtype=clgrad.int64)
    seen = 0
    start = time.perf_counter()
    for step, (x, y) in enumerate(loader, 1):
        out = model(x)
        loss = loss_fn(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with clgrad.no_grad():
            loss_sum += loss.detach() * x.shape[0]
            hits += (out.argmax(1) == y).sum()
        seen += x.shape[0]
        if bar is not None:
            bar.update(x.shape[0])
            if step % refresh_every == 0:
                bar.set_postfix(loss=f"{loss_sum.item() / seen:.4f}",
                                acc=f"{hits.item() / seen:.4f}", refresh=False)
    device.synchronize()
    elapsed = time.perf_counter() - start
    return loss_sum.item() / seen, hits.item() / seen, seen / elapsed


def evaluate(model, loader, loss_fn):
    """(mean loss, accuracy) of ``model`` in eval mode over ``loader``, without autograd."""
    model.eval()
    loss_sum = clgrad.zeros((), dtype=clgrad.float32)
    hits = clgrad.zeros((), dtype=clgrad.int64)
    seen = 0
    with clgrad.no_grad():
        for x, y in loader:
            out = model(x)
            loss_sum += loss_fn(out, y) * x.shape[0]
            hits += (out.argmax(1) == y).sum()
            seen += x.shape[0]
    return loss_sum.item() / seen, hits.item() / seen


def fit(args) -> dict:
    """Run the job described by the parsed ``args`` (see ``build_parser``).

    Returns the progress dict also stored in the checkpoints: ``epoch``, ``best_acc``,
    ``best_epoch``, ``history`` (per-epoch lists), plus ``test_acc`` (last epoch),
    ``seconds`` (wall time of the whole job), ``images_per_s`` (median over epochs; the first
    epoch also pays for building the kernels) and ``device``.
    """
    from tqdm import tqdm

    t0 = time.perf_counter()
    if args.device:
        clgrad.set_default_device(args.device)
    device = clgrad.default_device()
    train_set, test_set, make_model = _datasets(args)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    clgrad.manual_seed(args.seed)
    model = make_model()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    progress = {"epoch": 0, "best_acc": -1.0, "best_epoch": 0,
                "history": {k: [] for k in _HISTORY}}
    if args.resume:
        progress = _resume(args.resume, model, optimizer, scheduler)
        if scheduler.T_max != args.epochs:  # anneal over the new total, not the old one
            print(f"note: the checkpoint annealed over {scheduler.T_max} epochs; continuing "
                  f"over --epochs {args.epochs}")
            scheduler.T_max = args.epochs
            scheduler.last_epoch -= 1
            scheduler.step()  # this epoch's lr from the new horizon

    test_loader = DataLoader(test_set, batch_size=512)
    for epoch in range(progress["epoch"] + 1, args.epochs + 1):
        # Per-epoch seeds: the shuffle order and dropout masks do not depend on earlier epochs.
        clgrad.manual_seed(args.seed * 100_003 + epoch)
        loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                            generator=clgrad.Generator().manual_seed(args.seed * 100_003 + epoch))
        with tqdm(total=len(train_set), desc=f"epoch {epoch}/{args.epochs}", unit="img",
                  dynamic_ncols=True, disable=args.quiet) as bar:
            tr_loss, tr_acc, ips = train_epoch(model, loader, loss_fn, optimizer, bar)
            te_loss, te_acc = evaluate(model, test_loader, loss_fn)
            bar.set_postfix(loss=f"{tr_loss:.4f}", acc=f"{tr_acc:.4f}",
                            test_acc=f"{te_acc:.4f}", img_s=f"{ips:.0f}")
        scheduler.step()
        for k, v in zip(_HISTORY, (tr_loss, tr_acc, te_loss, te_acc, ips)):
            progress["history"][k].append(v)
        progress["epoch"] = epoch
        improved = te_acc > progress["best_acc"]
        if improved:
            progress["best_acc"], progress["best_epoch"] = te_acc, epoch
        state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                 "scheduler": scheduler.state_dict(), "progress": progress,
                 "config": {k: getattr(args, k) for k in _CONFIG}}
        if improved:
            clgrad.save(state, out_dir / "best.safetensors")
        clgrad.save(state, out_dir / "last.safetensors")
        _plot(progress["history"], out_dir / "curves.png", args.dataset)

    history = progress["history"]
    summary = dict(progress, seconds=time.perf_counter() - t0, device=device.name,
                   test_acc=history["test_acc"][-1] if history["test_acc"] else float("nan"),
                   images_per_s=float(np.median(history["images_per_s"] or [0.0])))
    print(f"test accuracy: {summary['test_acc']:.3f} | best {summary['best_acc']:.3f} at "
          f"epoch {summary['best_epoch']} ({out_dir / 'best.safetensors'}) | "
          f"{summary['seconds']:.1f} s | {summary['images_per_s']:.0f} images/s | "
          f"device: {device.name} ({device.kind})")
    return summary


def build_parser(dataset: str | None = None, prog: str | None = None):
    """The options of the job; ``dataset`` fixes the dataset (the example scripts)."""
    p = argparse.ArgumentParser(prog=prog, description="Train a grouped CNN on handwritten "
                                                       "digits.")
    if dataset is None:
        p.add_argument("--dataset", choices=sorted(DEFAULTS), default="digits",
                       help="digits: scikit-learn's 8x8 digits (bundled); mnist: IDX files "
                            "in --data")
    else:
        p.set_defaults(dataset=dataset)
    p.add_argument("--data", default=None, help="folder with the MNIST IDX files (mnist)")
    p.add_argument("--epochs", type=int, default=None, help="epochs (digits 8, mnist 3)")
    p.add_argument("--batch-size", type=int, default=None, help="batch size (digits 32)")
    p.add_argument("--lr", type=float, default=None, help="peak AdamW learning rate "
                                                          "(cosine-annealed to 0)")
    p.add_argument("--weight-decay", type=float, default=1e-4, help="AdamW decoupled decay")
    p.add_argument("--device", default=None, help="cpu | gpu | P:D | name substring")
    p.add_argument("--out", default=None, help="output folder (default runs/<dataset>)")
    p.add_argument("--resume", default=None, metavar="CHECKPOINT",
                   help="continue from a last.safetensors or best.safetensors")
    p.add_argument("--seed", type=int, default=0, help="seed of weights, shuffling, dropout")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    return p


def main(argv=None, dataset: str | None = None, prog: str | None = None) -> int:
    """Parse ``argv`` and run the job; 0 on success."""
    args = build_parser(dataset, prog).parse_args(argv)
    for k, v in DEFAULTS[args.dataset].items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.out is None:
        args.out = str(Path("runs") / args.dataset)
    if args.dataset == "mnist" and not args.data:
        raise SystemExit("train: --dataset mnist needs --data DIR, the folder with "
                         "train-images-idx3-ubyte(.gz) and the other three MNIST IDX files")
    for name in ("epochs", "batch_size"):
        if getattr(args, name) < 1:
            raise SystemExit(f"train: expected --{name.replace('_', '-')} >= 1, got "
                             f"{getattr(args, name)}")
    if not (math.isfinite(args.lr) and args.lr > 0):
        raise SystemExit(f"train: expected --lr to be a positive number, got {args.lr}")
    if not (math.isfinite(args.weight_decay) and args.weight_decay >= 0):
        raise SystemExit(f"train: expected --weight-decay >= 0, got {args.weight_decay}")
    try:
        fit(args)
    except (OSError, ValueError, KeyError) as e:  # bad paths, files or checkpoints: one line
        raise SystemExit(f"train: {type(e).__name__}: {e}") from None
    return 0


# ---------------------------------------------------------------------------- private helpers

_HISTORY = ("train_loss", "train_acc", "test_loss", "test_acc", "images_per_s")
_CONFIG = ("dataset", "seed", "lr", "weight_decay", "batch_size", "epochs")


def _resume(path, model, optimizer, scheduler) -> dict:
    """Load model, optimizer and scheduler state from a checkpoint; returns its progress."""
    ckpt = clgrad.load(path)
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    scheduler.load_state_dict(ckpt["scheduler"])
    progress = ckpt["progress"]
    print(f"resumed from {path} after epoch {progress['epoch']}")
    return progress


def _datasets(args):
    if args.dataset == "digits":
        train, test = digits_split()
        return train, test, digits_net
    return MNIST(args.data, train=True), MNIST(args.data, train=False), mnist_net


def _plot(history: dict, path: Path, title: str):
    """Loss and accuracy per epoch (train and test) as a PNG, written atomically."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = np.arange(1, len(history["train_loss"]) + 1)
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key, label in ((ax_loss, "loss", "cross-entropy loss"),
                           (ax_acc, "acc", "accuracy")):
        ax.plot(epochs, history["train_" + key], "o-", label="train")
        ax.plot(epochs, history["test_" + key], "s-", label="test")
        ax.set_xlabel("epoch")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend()
    best = int(np.argmax(history["test_acc"]))
    ax_acc.set_title(f"best test accuracy {history['test_acc'][best]:.3f} (epoch {best + 1})")
    ax_loss.set_title(f"{title}: loss")
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    tmp.replace(path)
