"""The main job: train a small grouped CNN on handwritten digits, end to end.

    python examples/train_digits.py            (same as: python -m clgrad train --dataset digits)
    python examples/train_mnist.py --data DIR  (same as: python -m clgrad train --dataset mnist)

A validation split (``--val-fraction``, 10 % by default: stratified by class, seeded by
``--seed``) is carved from the training data. One epoch = one pass over the rest of the
training data with a tqdm bar (loss, accuracy, images/s), then an evaluation of the validation
split. ``OUT/last.safetensors`` (model + optimizer + scheduler + epoch + history) is written
every epoch and ``OUT/best.safetensors`` whenever the validation accuracy improves, both
atomically (clgrad.save); ``OUT/metrics.csv`` holds one row per epoch (train and validation
loss and accuracy, images/s) and ``OUT/curves.png`` plots them; with the tensorboardX package
installed, TensorBoard event files in OUT carry the same (``tensorboard --logdir runs``). The
test split is evaluated once, at the end, with the final model (its accuracy is added to the
plot), so the choice of "best" never sees it.
The run ends with one summary line: ``test accuracy: 0.9xx | best validation accuracy 0.9xx at
epoch N (OUT/best.safetensors) | ... s | ... images/s | device: ...`` (with ``--amp``:
``... | mixed precision (float16 autocast, GradScaler)``).

Bad input ends with one line naming the option (``train: --resume CKPT: ...``) and exit status
1. ``--resume`` of a checkpoint that already reached ``--epochs`` (which counts every epoch,
the resumed ones included) says there is nothing to train, evaluates the checkpoint's model on
the test split and prints the summary line (exit status 0). Ctrl-C prints one line and exits
with status 130; the last checkpoint stays intact (saves are atomic).

Data-parallel: the same command under ``mpiexec -n K`` (``mpiexec -n 2 python -m clgrad train``)
trains on K processes: the model is wrapped in DistributedDataParallel, each rank takes its
DistributedSampler share of every epoch with ``--batch-size / K`` samples per step (the global
batch stays ``--batch-size``), and only rank 0 evaluates, writes checkpoints and plots, draws
the progress bar and prints the summary (loss, accuracy and images/s over all ranks).

Reproducible: ``--seed`` fixes the initial weights, and each epoch reseeds its shuffle order and
its dropout masks from (seed, epoch), so ``--resume OUT/last.safetensors`` continues exactly as
the uninterrupted run would have.
"""
from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from pathlib import Path

import numpy as np

from clgrad import _compile, _log, amp, autograd, creation, dtypes, runtime
from clgrad._generator import Generator
from clgrad.io import serialization
from clgrad import nn, optim
from clgrad.utils.data import DataLoader, TensorDataset
from clgrad.utils.data.datasets import MNIST, _stratified_split, digits_split

__all__ = ["digits_net", "mnist_net", "main", "fit", "evaluate", "train_epoch",
           "validation_split", "write_metrics", "restart_rate"]

# What a first run's notice counts up to (clgrad/_log.py BuildProgress): the digits job's first
# epoch and evaluation build 24 OpenCL programs (CLGRAD_DEBUG=1 lists them).
_FIRST_RUN_BUILDS = 24

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


def make_train_step(model, loss_fn, optimizer, scaler=None):
    """``step(x, y) -> (loss, hits)``: forward, loss, zero_grad, backward, optimizer step; the
    loss detached and the batch's count of correct argmax predictions (int64, 0-dim), both on
    the device. Reads nothing on the host, so ``clgrad.compile(step, mode="reduce-overhead")``
    can capture and replay it (``--compile``). ``scaler`` (a clgrad.amp.GradScaler, ``--amp``):
    the forward and the loss under ``autocast(float16)`` on the default device's type, the
    backward of the scaled loss, then ``scaler.step`` and ``scaler.update`` (PyTorch's AMP
    recipe; the scaler reads the host once a step for its inf/NaN check)."""
    if scaler is not None:
        device_type = runtime.default_device().type

        def amp_step(x, y):
            with amp.autocast(device_type, dtype=dtypes.float16):
                out = model(x)
                loss = loss_fn(out, y)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            with autograd.no_grad():
                return loss.detach().float(), (out.argmax(1) == y).sum()
        return amp_step

    def train_step(x, y):
        out = model(x)
        loss = loss_fn(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with autograd.no_grad():
            return loss.detach(), (out.argmax(1) == y).sum()
    return train_step


def train_epoch(model, loader, loss_fn, optimizer, bar=None, refresh_every: int = 10,
                step_fn=None, scaler=None):
    """One pass over ``loader``: forward, backward, step. Returns (loss, accuracy, images/s).

    Loss and hit counts accumulate on the device; the host reads them only every
    ``refresh_every`` steps to update ``bar`` (a tqdm bar counting images) and at the end.
    ``step_fn``: the step to run (default ``make_train_step(model, loss_fn, optimizer,
    scaler)``; a compiled one under ``--compile``).
    """
    model.train()
    device = runtime.default_device()
    loss_sum = creation.zeros((), dtype=dtypes.float32)
    hits = creation.zeros((), dtype=dtypes.int64)
    seen = 0
    start = time.perf_counter()
    step_fn = step_fn or make_train_step(model, loss_fn, optimizer, scaler)
    for step, (x, y) in enumerate(loader, 1):
        loss, batch_hits = step_fn(x, y)
        with autograd.no_grad():
            loss_sum += loss * x.shape[0]
            hits += batch_hits
        seen += x.shape[0]
        if bar is not None:
            if step == 1:   # the first batch builds the kernels: its seconds say nothing
                restart_rate(bar)   # (before counting it, so no 9-minute ETA is ever drawn)
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
    loss_sum = creation.zeros((), dtype=dtypes.float32)
    hits = creation.zeros((), dtype=dtypes.int64)
    seen = 0
    with autograd.no_grad():
        for x, y in loader:
            out = model(x)
            loss_sum += loss_fn(out, y) * x.shape[0]
            hits += (out.argmax(1) == y).sum()
            seen += x.shape[0]
    return loss_sum.item() / seen, hits.item() / seen


def validation_split(train_set: TensorDataset, fraction: float, seed: int):
    """(train, validation) TensorDatasets from ``train_set``: round(n_c * fraction) samples of
    each class c go to validation, chosen by a NumPy Generator seeded with ``seed`` (the same
    rule as clgrad.utils.data.datasets.digits_split); both keep the original order."""
    images, labels = train_set.arrays
    tr, va = _stratified_split(labels, fraction, seed, op="validation_split")
    return TensorDataset(images[tr], labels[tr]), TensorDataset(images[va], labels[va])


def fit(args) -> dict:
    """Run the job described by the parsed ``args`` (see ``build_parser``).

    Returns the progress dict also stored in the checkpoints: ``epoch``, ``best_acc`` and
    ``best_epoch`` (validation accuracy), ``history`` (per-epoch lists: train_loss, train_acc,
    val_loss, val_acc, images_per_s), plus ``test_loss``/``test_acc`` (the final model on the
    test split, evaluated once at the end), ``seconds`` (wall time of the whole job),
    ``images_per_s`` (median over epochs; the first epoch also pays for building the kernels)
    and ``device``.
    Raises:  OptionError naming the option for bad input (a --resume checkpoint that does not
             fit, --data files, an --out folder that cannot be written, an unknown --device).
    """
    # the job's device is the default while it runs (its tensors follow it); the caller's
    # default comes back afterwards (main() may be called from a program or a test)
    prev = runtime.discovery._DEFAULT[0]
    try:
        return _fit(args)
    finally:  # as it was, without a device query (a bad --out fails before any)
        with runtime.discovery._LOCK:
            runtime.discovery._DEFAULT[0] = prev


def _fit(args) -> dict:
    """fit's body: the job on the device it sets as the default."""
    progress_bar = _progress_bar_class(args.quiet)
    _log.expected_builds = _FIRST_RUN_BUILDS
    t0 = time.perf_counter()
    world, rank = _join_ranks(args)
    # Everything that can be checked on the host comes before the device: finding and probing
    # the devices takes seconds (a minute on a first run), a typo in a path should not wait.
    with _blame("--data", args.data):  # the MNIST files (digits are bundled)
        train_set, test_set, make_model = _datasets(args)
    with _blame("--val-fraction", args.val_fraction):
        train_set, val_set = validation_split(train_set, args.val_fraction, args.seed)
    out_dir = Path(args.out)
    with _blame("--out", args.out):
        out_dir.mkdir(parents=True, exist_ok=True)
    if args.resume:
        with _blame("--resume", args.resume):
            if not Path(args.resume).exists():  # the words serialization.load uses
                raise FileNotFoundError(f"load: expected a checkpoint file at {args.resume}, "
                                        f"got no such file")
            with open(args.resume, "rb"):
                pass  # a readable file (its contents are checked when loaded)
    if args.device and world == 1:
        with _blame("--device", args.device):
            runtime.set_default_device(args.device)
    elif world == 1:  # the job picks the fastest device (GPU first); new tensors follow it
        runtime.set_default_device(runtime.fastest_device())
    device = runtime.default_device()

    creation.manual_seed(args.seed)
    net = make_model()
    model = nn.parallel.DistributedDataParallel(net) if world > 1 else net
    loss_fn = nn.CrossEntropyLoss()
    optimizer = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    progress = {"epoch": 0, "best_acc": -1.0, "best_epoch": 0,
                "history": {k: [] for k in _HISTORY}}
    scaler_state = None
    if args.resume:
        with _blame("--resume", args.resume):
            progress, scaler_state = _resume(args.resume, net, optimizer, scheduler,
                                             args.epochs)
        if progress["epoch"] < args.epochs and scheduler.T_max != args.epochs:
            print(f"note: the checkpoint annealed over {scheduler.T_max} epochs; continuing "
                  f"over --epochs {args.epochs}")  # anneal over the new total, not the old one
            scheduler.T_max = args.epochs
            # this epoch's lr from the new horizon: the closed form (the chainable step
            # would scale the current lr, which the old horizon may have brought to 0)
            scheduler._update_lr(scheduler.last_epoch)

    val_loader = DataLoader(val_set, batch_size=512)
    step_fn = scaler = None
    if getattr(args, "amp", False):
        with _blame("--amp", True):
            if not device.fp16:
                raise ValueError(f"the device {device.name!r} has no float16 (it lists no "
                                 f"cl_khr_fp16 and the probe found none); train without "
                                 f"--amp or pick another --device")
        scaler = amp.GradScaler(device.type)
        if scaler_state is not None:
            with _blame("--resume", args.resume):
                scaler.load_state_dict(scaler_state)
    if getattr(args, "compile", False):  # replay captured steps (clgrad/_compile.py)
        if world > 1:
            with _blame("--compile", True):
                raise ValueError("captured steps run in one process only (DDP's all-reduce "
                                 "runs on the host)")
        step_fn = _compile.compile(make_train_step(model, loss_fn, optimizer),
                                  mode="reduce-overhead")
    resumed_at = progress["epoch"]
    # nothing to train (a resume past --epochs) writes nothing, TensorBoard events included
    board = _tensorboard(out_dir) if rank == 0 and resumed_at < args.epochs else None
    for epoch in range(progress["epoch"] + 1, args.epochs + 1):
        # Per-epoch seeds: the shuffle order and dropout masks do not depend on earlier epochs.
        creation.manual_seed(args.seed * 100_003 + epoch + 7919 * rank)
        loader = _train_loader(train_set, args, epoch, world, rank)
        with progress_bar(total=len(loader.dataset), desc=f"epoch {epoch}/{args.epochs}",
                          unit="img", dynamic_ncols=True,
                          disable=args.quiet or rank != 0) as bar:
            tr_loss, tr_acc, ips = train_epoch(model, loader, loss_fn, optimizer, bar,
                                               step_fn=step_fn, scaler=scaler)
            if world > 1:
                tr_loss, tr_acc, ips = _over_ranks(tr_loss, tr_acc, ips, world)
                if rank != 0:  # only rank 0 evaluates and writes
                    scheduler.step()
                    progress["epoch"] = epoch
                    continue
            va_loss, va_acc = evaluate(net, val_loader, loss_fn)
            bar.set_postfix(loss=f"{tr_loss:.4f}", acc=f"{tr_acc:.4f}",
                            val_acc=f"{va_acc:.4f}", img_s=f"{ips:.0f}")
        scheduler.step()
        for k, v in zip(_HISTORY, (tr_loss, tr_acc, va_loss, va_acc, ips)):
            progress["history"][k].append(v)
        progress["epoch"] = epoch
        improved = va_acc > progress["best_acc"]
        if improved:
            progress["best_acc"], progress["best_epoch"] = va_acc, epoch
        state = {"model": net.state_dict(), "optimizer": optimizer.state_dict(),
                 "scheduler": scheduler.state_dict(), "progress": progress,
                 "config": {k: getattr(args, k) for k in _CONFIG}}
        if scaler is not None:  # (a resume with --amp continues from its loss scale)
            state["scaler"] = scaler.state_dict()
        with _blame("--out", args.out):
            if improved:
                serialization.save(state, out_dir / "best.safetensors")
            serialization.save(state, out_dir / "last.safetensors")
            write_metrics(progress["history"], out_dir / "metrics.csv")
            _plot(progress["history"], out_dir / "curves.png", args.dataset)
            if board is not None:
                for k in _HISTORY:
                    board.add_scalar(_BOARD_TAGS[k], progress["history"][k][-1], epoch)
                board.flush()

    te_loss, te_acc = (evaluate(net, DataLoader(test_set, batch_size=512), loss_fn)
                       if rank == 0 else (float("nan"), float("nan")))
    if rank == 0 and progress["epoch"] > resumed_at:
        with _blame("--out", args.out):   # the plot again, with the test accuracy
            _plot(progress["history"], out_dir / "curves.png", args.dataset, test_acc=te_acc)
    if board is not None:
        board.add_scalar("test/acc", te_acc, progress["epoch"])
        board.add_scalar("test/loss", te_loss, progress["epoch"])
        board.close()
    summary = dict(progress, seconds=time.perf_counter() - t0, device=device.name,
                   test_loss=te_loss, test_acc=te_acc,
                   images_per_s=float(np.median(progress["history"]["images_per_s"] or [0.0])),
                   world_size=world)
    if rank == 0:
        procs = f" x {world} processes" if world > 1 else ""
        amp_note = " | mixed precision (float16 autocast, GradScaler)" if scaler else ""
        print(f"test accuracy: {te_acc:.3f} | best validation accuracy "
              f"{summary['best_acc']:.3f} at epoch {summary['best_epoch']} "
              f"({out_dir / 'best.safetensors'}) | {summary['seconds']:.1f} s | "
              f"{summary['images_per_s']:.0f} images/s | device: {device.name} "
              f"[{device.platform}] ({device.kind}){procs}{amp_note}")
    return summary


class OptionError(ValueError):
    """Bad input to the training job; the message starts with the option it concerns."""


@contextlib.contextmanager
def _blame(option, value):
    """Turn the errors of bad input (files, checkpoints, names) into one OptionError line."""
    try:
        yield
    except OptionError:
        raise
    except (OSError, ValueError, KeyError, TypeError, RuntimeError, IndexError) as e:
        text = "; ".join(line.strip() for line in str(e).splitlines() if line.strip())
        raise OptionError(f"{option} {value}: {type(e).__name__}: {text}") from e


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
    per = {k: ", ".join(f"{d} {v[k]:g}" for d, v in DEFAULTS.items()) for k in DEFAULTS["digits"]}
    p.add_argument("--epochs", type=int, default=None,
                   help=f"epochs, the resumed ones included (default: {per['epochs']})")
    p.add_argument("--batch-size", type=int, default=None,
                   help=f"batch size (default: {per['batch_size']})")
    p.add_argument("--lr", type=float, default=None, help=f"peak AdamW learning rate, "
                   f"cosine-annealed to 0 (default: {per['lr']})")
    p.add_argument("--weight-decay", type=float, default=1e-4,
                   help="AdamW decoupled decay (default: %(default)g)")
    p.add_argument("--device", default=None,
                   help="cpu, gpu, cuda, cuda:N, P:D (platform:device, as `python -m clgrad "
                        "devices` lists them), intel (Intel's CPU runtime), pocl, or a "
                        "substring of a device name (default: CLGRAD_DEVICE, else a GPU when "
                        "there is one, else the CPU)")
    p.add_argument("--out", default=None, help="output folder: checkpoints, metrics.csv, "
                   "curves.png (default: runs/<dataset>)")
    p.add_argument("--resume", default=None, metavar="CHECKPOINT",
                   help="continue from a last.safetensors or best.safetensors")
    p.add_argument("--val-fraction", type=float, default=0.1, metavar="F",
                   help="share of each class held out of training to choose the best epoch "
                        "(default: %(default)g)")
    p.add_argument("--seed", type=int, default=0, help="seed of weights, shuffling, dropout "
                                                       "and the validation split "
                                                       "(default: %(default)s)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--compile", action="store_true", help="capture the training step once and "
                   "replay its kernels (clgrad.compile(mode='reduce-overhead'))")
    p.add_argument("--amp", action="store_true", help="mixed precision: the forward under "
                   "autocast(float16) (linear layers and convolutions in float16, float32 "
                   "accumulation) with a GradScaler; the device needs float16")
    return p


def main(argv=None, dataset: str | None = None, prog: str | None = None) -> int:
    """Parse ``argv`` and run the job; 0 on success, 130 after Ctrl-C (one line on stderr).

    Bad input raises SystemExit with one line naming the option (exit status 1).
    """
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
    if args.seed < 0:
        raise SystemExit(f"train: expected --seed to be a non-negative integer, got "
                         f"{args.seed}")
    if args.amp and args.compile:
        raise SystemExit("train: --amp with --compile: the GradScaler reads the host every "
                         "step (its inf/NaN check), which a captured step cannot replay")
    if not 0 < args.val_fraction < 1:
        raise SystemExit(f"train: expected --val-fraction in (0, 1), got {args.val_fraction}")
    try:
        fit(args)
    except OptionError as e:
        raise SystemExit(f"train: {e}") from None
    except KeyboardInterrupt:
        last = Path(args.out) / "last.safetensors"
        kept = f"{last} is intact" if last.exists() else "no checkpoint was written yet"
        print(f"train: interrupted (Ctrl-C); {kept}", file=sys.stderr)
        return 130
    return 0


# ---------------------------------------------------------------------------- private helpers

_HISTORY = ("train_loss", "train_acc", "val_loss", "val_acc", "images_per_s")
_CONFIG = ("dataset", "seed", "lr", "weight_decay", "batch_size", "epochs", "val_fraction")


def _resume(path, model, optimizer, scheduler, epochs) -> tuple:
    """Load model, optimizer and scheduler state from a checkpoint; returns (its progress, its
    GradScaler state: a dict where an --amp run wrote one, else None)."""
    ckpt = serialization.load(path)
    if not isinstance(ckpt, dict) or not {"model", "optimizer", "scheduler", "progress"} <= \
            set(ckpt):
        raise ValueError("expected a checkpoint of this job (model, optimizer, scheduler, "
                         "progress), got keys " + repr(sorted(ckpt)))
    progress = _checked_progress(ckpt["progress"])
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    scheduler.load_state_dict(ckpt["scheduler"])
    scaler = ckpt.get("scaler")  # an --amp run's GradScaler (None: not kept)
    done = progress["epoch"]
    rest = "" if done < epochs else (f": nothing to train with --epochs {epochs} (it counts "
                                     f"every epoch, the resumed ones included)")
    print(f"resumed from {path} after epoch {done}{rest}")
    return progress, scaler if isinstance(scaler, dict) else None


def _checked_progress(p) -> dict:
    """The checkpoint's progress dict, or ValueError naming the field that is wrong."""
    def bad(field, want, got):
        raise ValueError(f"expected progress.{field} to be {want}, got {got!r}")

    if not isinstance(p, dict):
        bad("", "a dict", p)
    epoch, best_epoch, best_acc = p.get("epoch"), p.get("best_epoch"), p.get("best_acc")
    if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 0:
        bad("epoch", "a non-negative integer", epoch)
    if not isinstance(best_epoch, int) or isinstance(best_epoch, bool) or \
            not 0 <= best_epoch <= epoch:
        bad("best_epoch", f"an integer in [0, {epoch}]", best_epoch)
    if not isinstance(best_acc, (int, float)) or isinstance(best_acc, bool) or \
            not -1 <= best_acc <= 1:
        bad("best_acc", "an accuracy in [0, 1] (or -1 before the first epoch)", best_acc)
    hist = p.get("history")
    if not isinstance(hist, dict):
        bad("history", "a dict", hist)
    for k in _HISTORY:
        v = hist.get(k)
        if not isinstance(v, list) or len(v) != epoch or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
            bad(f"history.{k}", f"a list of {epoch} numbers (one per epoch)", v)
    return p


def _join_ranks(args):
    """(world size, rank): join the MPI job when launched by mpiexec with K > 1 processes."""
    from clgrad import distributed as dist
    world = dist.launched_world_size()
    if world <= 1:
        return 1, 0
    if args.batch_size % world:
        raise SystemExit(f"train: expected --batch-size divisible by the {world} processes "
                         f"(the global batch is split evenly), got {args.batch_size}")
    if not dist.is_initialized():
        try:
            dist.init_process_group("mpi", device_id=args.device or None)
        except RuntimeError as e:  # mpi4py missing: one line naming the package
            raise SystemExit(f"train: launched on {world} processes, but {e}") from None
    return dist.get_world_size(), dist.get_rank()


def _train_loader(train_set, args, epoch, world, rank):
    """One epoch's loader: the whole shuffled set, or this rank's DistributedSampler share
    in batches of batch_size / world."""
    if world == 1:
        return DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                          generator=Generator().manual_seed(args.seed * 100_003 + epoch))
    from clgrad.utils.data.distributed import DistributedSampler
    sampler = DistributedSampler(train_set, world, rank, shuffle=True, seed=args.seed)
    sampler.set_epoch(epoch)
    return DataLoader(train_set, batch_size=args.batch_size // world, sampler=sampler)


def _over_ranks(loss, acc, images_per_s, world):
    """Mean loss and accuracy (every rank saw as many samples) and summed throughput."""
    from clgrad import distributed as dist
    t = creation.tensor([loss, acc, images_per_s], dtype=dtypes.float32)
    dist.all_reduce(t)
    loss, acc, ips = t.tolist()
    return loss / world, acc / world, ips


def _datasets(args):
    if args.dataset == "digits":
        train, test = digits_split()
        return train, test, digits_net
    return MNIST(args.data, train=True), MNIST(args.data, train=False), mnist_net


_EXTRA_HINT = "pip install 'clgrad[train]' (or: pip install tqdm matplotlib)"
_NOTED: set = set()  # the missing optional packages already mentioned in this process


def _progress_bar_class(quiet: bool):
    """tqdm.tqdm, or (tqdm not installed) _EpochLine, after one line saying how to get bars."""
    try:
        from tqdm import tqdm
        return tqdm
    except ImportError:
        if not quiet and "tqdm" not in _NOTED:
            _NOTED.add("tqdm")
            print(f"note: no progress bars (tqdm is not installed: {_EXTRA_HINT}); one line "
                  f"per epoch instead", file=sys.stderr)
        return _EpochLine


class _EpochLine:
    """The part of tqdm's interface the job uses, printing one line when the epoch ends:
    ``epoch 1/8: 1293 img, loss=..., acc=..., val_acc=..., img_s=...``."""

    def __init__(self, total=None, desc="", unit="it", disable=False, **_):
        self.desc, self.unit, self.disable, self.n, self.postfix = desc, unit, disable, 0, {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if not self.disable and exc[0] is None:
            items = "".join(f", {k}={v}" for k, v in self.postfix.items())
            print(f"{self.desc}: {self.n} {self.unit}{items}", flush=True)
        return False

    def update(self, n=1):
        """Count ``n`` more items (tqdm's update)."""
        self.n += n

    def set_postfix(self, refresh=True, **values):
        """Values shown after the count on the next line (tqdm's set_postfix)."""
        self.postfix = values


_BOARD_TAGS = {"train_loss": "train/loss", "train_acc": "train/acc", "val_loss": "val/loss",
               "val_acc": "val/acc", "images_per_s": "images_per_s"}


def _tensorboard(out_dir: Path):
    """A SummaryWriter on ``out_dir`` when tensorboardX (which clgrad.utils.tensorboard
    writes through) is installed, else None."""
    import importlib.util
    if importlib.util.find_spec("tensorboardX") is None:
        return None
    from clgrad.utils.tensorboard import SummaryWriter
    return SummaryWriter(out_dir)


def write_metrics(history: dict, path: Path):
    """``history`` (per-epoch lists, as in the checkpoints' progress) as CSV, written atomically:
    a header ``epoch,train_loss,train_acc,val_loss,val_acc,images_per_s``, then one row per
    epoch (epoch counted from 1; a resumed run rewrites every row, so the file always matches
    last.safetensors)."""
    rows = [",".join(("epoch",) + _HISTORY)]
    for i, values in enumerate(zip(*(history[k] for k in _HISTORY)), 1):
        rows.append(",".join([str(i)] + [f"{v:.6g}" for v in values]))
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text("\n".join(rows) + "\n")
        tmp.replace(path)
    except BaseException:  # Ctrl-C or a full disk: no half-written leftover
        tmp.unlink(missing_ok=True)
        raise


def restart_rate(bar) -> None:
    """Start a tqdm bar's rate and ETA over from now, keeping its count: called after the
    first batch, whose seconds (a first run builds ~20 OpenCL programs then) would otherwise
    make a 17-second epoch show a 9-minute ETA. The shown elapsed time restarts too. A bar
    without tqdm's ``reset`` (the one-line fallback) is left alone."""
    if getattr(bar, "disable", True) or not hasattr(bar, "reset"):
        return
    n = bar.n
    bar.reset()                      # the start time and the rate's moving averages
    bar.n = bar.last_print_n = bar.initial = n
    bar.refresh()


def _plot(history: dict, path: Path, title: str, test_acc: float | None = None):
    """Loss and accuracy per epoch (train and validation; the final model's ``test_acc`` as a
    dashed line once known) as a PNG with integer epoch ticks, written atomically. Without
    matplotlib: no PNG, and one note (per process) saying how to get it."""
    try:
        import matplotlib
    except ImportError:
        if "matplotlib" not in _NOTED:
            _NOTED.add("matplotlib")
            print(f"note: {path} not written (matplotlib is not installed: {_EXTRA_HINT})",
                  file=sys.stderr)
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    epochs = np.arange(1, len(history["train_loss"]) + 1)
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key, label in ((ax_loss, "loss", "cross-entropy loss"),
                           (ax_acc, "acc", "accuracy")):
        ax.plot(epochs, history["train_" + key], "o-", label="train")
        ax.plot(epochs, history["val_" + key], "s-", label="validation")
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend()
    if test_acc is not None:
        ax_acc.axhline(test_acc, color="k", linestyle="--", label=f"test {test_acc:.3f}")
        ax_acc.legend()
    best = int(np.argmax(history["val_acc"]))
    ax_acc.set_title(f"best validation accuracy {history['val_acc'][best]:.3f} "
                     f"(epoch {best + 1})")
    ax_loss.set_title(f"{title}: loss")
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp.png")
    try:
        fig.savefig(tmp, dpi=100)
        tmp.replace(path)
    except BaseException:  # Ctrl-C or a full disk: no half-written leftover
        tmp.unlink(missing_ok=True)
        raise
    finally:
        plt.close(fig)
