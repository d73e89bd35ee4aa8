"""The main job end to end: learning on the real digits, checkpoints, resuming, MNIST files."""
import argparse
import gzip

import numpy as np
import pytest

import clgrad
from clgrad import nn, optim
from clgrad.cli import main as cli_main
from clgrad.data import DataLoader, digits_split
from clgrad.train import digits_net, evaluate, fit, main


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    """A short run of the main job (3 epochs of 90 steps) in a fresh output folder."""
    out = tmp_path_factory.mktemp("digits")
    args = argparse.Namespace(dataset="digits", data=None, epochs=3, batch_size=16, lr=3e-3,
                              weight_decay=1e-4, device=None, out=str(out), resume=None,
                              seed=0, quiet=True)
    return out, fit(args)


def test_short_training_run_learns_the_digits(short_run, capsys):
    out, summary = short_run
    assert summary["test_acc"] >= 0.90, summary["history"]
    assert summary["history"]["train_loss"][-1] < summary["history"]["train_loss"][0]
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The best checkpoint holds the best epoch's weights: evaluating it gives its accuracy.
    best = clgrad.load(out / "best.safetensors")
    assert best["progress"]["epoch"] == summary["best_epoch"]
    assert best["progress"]["best_acc"] == summary["best_acc"]
    model = digits_net()
    model.load_state_dict(best["model"])
    _, test = digits_split()
    _, acc = evaluate(model, DataLoader(test, batch_size=512), nn.CrossEntropyLoss())
    assert acc == pytest.approx(summary["best_acc"], abs=1e-9)
    last = clgrad.load(out / "last.safetensors")
    assert last["progress"]["epoch"] == 3 and len(last["progress"]["history"]["test_acc"]) == 3
    assert set(last) >= {"model", "optimizer", "scheduler", "config"}


def test_summary_line_and_resume_from_last_checkpoint(short_run, capsys):
    out, summary = short_run
    main(["--resume", str(out / "last.safetensors"), "--epochs", "3", "--out", str(out),
          "--quiet"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("resumed from") and "after epoch 3" in lines[0]
    assert len(lines) == 2  # nothing left to train: straight to the one summary line
    assert lines[1].startswith(f"test accuracy: {summary['test_acc']:.3f} | best ")
    assert "images/s" in lines[1] and clgrad.default_device().name in lines[1]


def test_resume_gives_the_same_next_step_losses(tmp_path):
    train, _ = digits_split()
    batches = list(DataLoader(train, batch_size=24, shuffle=True,
                              generator=clgrad.Generator().manual_seed(3)))[:6]

    def steps(model, opt, chunk):
        losses = []
        for x, y in chunk:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    def fresh(seed):
        clgrad.manual_seed(seed)
        model = digits_net()
        return model, optim.AdamW(model.parameters(), lr=3e-3)

    model, opt = fresh(0)
    steps(model, opt, batches[:3])
    clgrad.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 3},
                tmp_path / "ckpt.safetensors")
    clgrad.manual_seed(42)  # the dropout masks of the continuation
    uninterrupted = steps(model, opt, batches[3:])

    model2, opt2 = fresh(1)  # different initial weights: everything must come from the file
    ck = clgrad.load(tmp_path / "ckpt.safetensors")
    model2.load_state_dict(ck["model"])
    opt2.load_state_dict(ck["optimizer"])
    clgrad.manual_seed(42)
    assert steps(model2, opt2, batches[3:]) == uninterrupted


def _write_idx(path, array, code=0x08):
    header = bytes([0, 0, code, array.ndim]) + b"".join(
        int(n).to_bytes(4, "big") for n in array.shape)
    path.write_bytes(gzip.compress(header + array.astype(">u1").tobytes()))


def test_mnist_job_on_small_idx_files(tmp_path, capsys):
    rng = np.random.default_rng(0)
    for prefix, n in (("train", 48), ("t10k", 16)):
        labels = rng.integers(0, 10, n)
        images = rng.integers(0, 40, (n, 28, 28))
        images[np.arange(n), 2 * labels + 3, 4:24] = 255  # a learnable stripe per class
        _write_idx(tmp_path / f"{prefix}-images-idx3-ubyte.gz", images)
        _write_idx(tmp_path / f"{prefix}-labels-idx1-ubyte.gz", labels)
    main(["--data", str(tmp_path), "--epochs", "1", "--batch-size", "16",
          "--out", str(tmp_path / "run"), "--quiet"], dataset="mnist")
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("test accuracy: ")
    ck = clgrad.load(tmp_path / "run" / "last.safetensors")
    assert ck["config"]["dataset"] == "mnist" and ck["model"]["0.weight"].shape == (32, 1, 3, 3)


def test_mnist_job_explains_missing_files(tmp_path):
    # main() is the command line: the FileNotFoundError becomes a one-line exit message.
    with pytest.raises(SystemExit, match="FileNotFoundError: .*train-images-idx3-ubyte"):
        main(["--data", str(tmp_path), "--out", str(tmp_path / "run"), "--quiet"],
             dataset="mnist")
    assert not (tmp_path / "run").exists()  # nothing is created before the data is found
    with pytest.raises(SystemExit, match="--data DIR"):
        main(["--dataset", "mnist"])


def test_cli_train_help(capsys):
    with pytest.raises(SystemExit) as e:
        cli_main(["train", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: clgrad train") and "--resume CHECKPOINT" in out


def test_resume_with_more_epochs_keeps_learning(short_run, tmp_path, capsys):
    """The cosine schedule anneals over the new --epochs: epoch 4 runs at a learning rate > 0
    (with the old T_max=3 it would be exactly 0 and no weight would move)."""
    out, _ = short_run
    ckpt = tmp_path / "epoch3.safetensors"
    ckpt.write_bytes((out / "last.safetensors").read_bytes())
    main(["--resume", str(ckpt), "--epochs", "4", "--out", str(tmp_path), "--quiet",
          "--batch-size", "16"])
    assert "continuing over --epochs 4" in capsys.readouterr().out
    before = clgrad.load(ckpt)["model"]["0.weight"].numpy()
    after = clgrad.load(tmp_path / "last.safetensors")["model"]["0.weight"].numpy()
    assert np.abs(after - before).max() > 1e-4


def test_cli_train_reports_bad_files_in_one_line(tmp_path):
    with pytest.raises(SystemExit, match="train: FileNotFoundError: .*no such file"):
        main(["--resume", str(tmp_path / "missing.safetensors"), "--quiet"])
    with pytest.raises(SystemExit, match="expected --lr to be a positive number"):
        main(["--lr", "nan", "--quiet"])
