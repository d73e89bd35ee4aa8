"""The main job end to end: learning on the real digits, checkpoints, resuming, MNIST files."""
import argparse
import gzip

import numpy as np
import pytest

import clgrad
from clgrad import nn, optim, runtime
from clgrad.cli import main as cli_main
from clgrad.utils.data import DataLoader
from clgrad.utils.data.datasets import digits_split
from clgrad.train import digits_net, evaluate, fit, main, validation_split


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    """A short run of the main job (3 epochs of 90 steps) in a fresh output folder."""
    out = tmp_path_factory.mktemp("digits")
    args = argparse.Namespace(dataset="digits", data=None, epochs=3, batch_size=16, lr=3e-3,
                              weight_decay=1e-4, device=None, out=str(out), resume=None,
                              seed=0, quiet=True, val_fraction=0.1)
    return out, fit(args)


def test_short_training_run_learns_the_digits(short_run, capsys):
    out, summary = short_run
    assert summary["test_acc"] >= 0.90, summary["history"]
    assert summary["history"]["train_loss"][-1] < summary["history"]["train_loss"][0]
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The best checkpoint holds the weights of the epoch with the best *validation* accuracy
    # (the test split is not used to choose it): evaluating it on the validation split, carved
    # from the training data with the run's seed, gives that accuracy.
    val_acc = summary["history"]["val_acc"]
    assert summary["best_epoch"] == int(np.argmax(val_acc)) + 1
    assert summary["best_acc"] == max(val_acc)
    best = clgrad.load(out / "best.safetensors")
    assert best["progress"]["epoch"] == summary["best_epoch"]
    assert best["progress"]["best_acc"] == summary["best_acc"]
    model = digits_net()
    model.load_state_dict(best["model"])
    train, test = digits_split()
    _, val = validation_split(train, 0.1, 0)
    _, acc = evaluate(model, DataLoader(val, batch_size=512), nn.CrossEntropyLoss())
    assert acc == pytest.approx(summary["best_acc"], abs=1e-9)
    # The test accuracy is the final model's, on the test split.
    last = clgrad.load(out / "last.safetensors")
    model.load_state_dict(last["model"])
    _, acc = evaluate(model, DataLoader(test, batch_size=512), nn.CrossEntropyLoss())
    assert acc == pytest.approx(summary["test_acc"], abs=1e-9)
    assert last["progress"]["epoch"] == 3 and len(last["progress"]["history"]["val_acc"]) == 3
    assert set(last) >= {"model", "optimizer", "scheduler", "config"}


def test_metrics_csv_has_one_row_per_epoch(short_run):
    out, summary = short_run
    lines = (out / "metrics.csv").read_text().splitlines()
    assert lines[0] == "epoch,train_loss,train_acc,val_loss,val_acc,images_per_s"
    rows = [ln.split(",") for ln in lines[1:]]
    assert [int(r[0]) for r in rows] == [1, 2, 3]
    for j, key in enumerate(("train_loss", "train_acc", "val_loss", "val_acc"), 1):
        np.testing.assert_allclose([float(r[j]) for r in rows], summary["history"][key],
                                   rtol=1e-5)


def test_summary_line_and_resume_from_last_checkpoint(short_run, capsys):
    out, summary = short_run
    main(["--resume", str(out / "last.safetensors"), "--epochs", "3", "--out", str(out),
          "--quiet"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("resumed from") and "after epoch 3" in lines[0]
    assert len(lines) == 2  # nothing left to train: straight to the one summary line
    assert lines[1].startswith(f"test accuracy: {summary['test_acc']:.3f} | best ")
    # the job runs on the fastest device (a GPU where there is one), not the default "cpu"
    assert "images/s" in lines[1] and runtime.fastest_device().name in lines[1]


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
    main(["--data", str(tmp_path), "--epochs", "1", "--batch-size", "16", "--val-fraction",
          "0.25", "--out", str(tmp_path / "run"), "--quiet"], dataset="mnist")
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
    assert "``" not in out                   # plain text, no reST markup
    for value in ("cpu", "gpu", "cuda:N", "P:D", "intel", "pocl", "substring"):
        assert value in out, value           # every --device value
    for default in ("digits 8, mnist 3", "digits 32, mnist 128", "(default: 0.1)",
                    "(default: 0.0001)", "(default: runs/<dataset>)"):
        assert default in " ".join(out.split()), default


def test_cli_help_is_plain_text_and_lists_every_command(capsys):
    with pytest.raises(SystemExit) as e:
        cli_main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "``" not in out
    for cmd in ("devices", "info", "train", "dedupe-libs VENV", "--version", "CLGRAD_DEVICE"):
        assert cmd in out, cmd


def test_cli_info_names_the_platform(capsys):
    assert cli_main(["info"]) == 0
    d = clgrad.default_device()
    assert f"on {d.name} [{d.platform}] ({d.kind})" in capsys.readouterr().out


def test_cli_dedupe_libs(tmp_path, capsys):
    lib = tmp_path / "lib"
    lib.mkdir()
    payload = np.random.default_rng(0).bytes(3 << 20)
    for name in ("libX.so", "libX.so.1"):
        (lib / name).write_bytes(payload)
    assert cli_main(["dedupe-libs", str(tmp_path)]) == 0
    assert capsys.readouterr().out == ("dedupe-libs: 3 MiB of duplicate shared-library copies "
                                       "hard-linked\n")
    assert (lib / "libX.so").stat().st_ino == (lib / "libX.so.1").stat().st_ino
    assert cli_main(["dedupe-libs", str(tmp_path / "nope")]) == 2
    assert "expected a virtual environment (a folder with lib/)" in capsys.readouterr().err


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
    with pytest.raises(SystemExit, match="train: --resume .*: FileNotFoundError: .*no such "
                                         "file"):
        main(["--resume", str(tmp_path / "missing.safetensors"), "--quiet"])
    with pytest.raises(SystemExit, match="expected --lr to be a positive number"):
        main(["--lr", "nan", "--quiet"])


def test_cli_reports_a_bad_setting_in_one_line(monkeypatch, capsys):
    """A CLGRAD_* variable with a bad value: `python -m clgrad devices` (or train) exits 2 with
    the setting's one-line error, not a traceback."""
    monkeypatch.setenv("CLGRAD_FP16", "bogus")
    assert cli_main(["devices"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "clgrad: CLGRAD_FP16: expected 'listed' or 'probe', got 'bogus'"


def test_validation_split_is_stratified_and_seeded():
    train, _ = digits_split()
    labels = train.arrays[1]
    tr, va = validation_split(train, 0.1, 5)
    assert len(tr) + len(va) == len(train)
    for c in range(10):
        n_c = int((labels == c).sum())
        assert int((va.arrays[1] == c).sum()) == round(n_c * 0.1)
    rows = {r.tobytes() for r in train.arrays[0]}
    assert {r.tobytes() for r in tr.arrays[0]} | {r.tobytes() for r in va.arrays[0]} == rows
    assert not {r.tobytes() for r in tr.arrays[0]} & {r.tobytes() for r in va.arrays[0]}
    again = validation_split(train, 0.1, 5)[1]
    assert np.array_equal(again.arrays[0], va.arrays[0])
    assert not np.array_equal(validation_split(train, 0.1, 6)[1].arrays[0], va.arrays[0])


def _broken(src, dst, edit):
    ck = clgrad.load(src)
    edit(ck)
    clgrad.save(ck, dst)
    return str(dst)


@pytest.mark.parametrize("edit, phrase", [
    (lambda ck: ck["model"].__setitem__("0.weight", clgrad.zeros(3, 3)),
     r"RuntimeError: .*size mismatch for 0\.weight"),
    (lambda ck: ck["progress"].__setitem__("epoch", "two"),
     r"progress\.epoch to be a non-negative integer, got 'two'"),
    (lambda ck: ck["progress"].__setitem__("best_epoch", 9),
     r"progress\.best_epoch to be an integer in \[0, 3\], got 9"),
    (lambda ck: ck["progress"]["history"].pop("val_acc"),
     r"progress\.history\.val_acc to be a list of 3 numbers"),
    (lambda ck: ck.pop("scheduler"), r"expected a checkpoint of this job"),
])
def test_bad_resume_checkpoint_is_one_line_naming_the_option(short_run, tmp_path, edit,
                                                             phrase):
    out, _ = short_run
    bad = _broken(out / "last.safetensors", tmp_path / "bad.safetensors", edit)
    with pytest.raises(SystemExit) as err:
        main(["--resume", bad, "--out", str(tmp_path / "run"), "--quiet"])
    msg = str(err.value.code)
    assert msg.startswith(f"train: --resume {bad}: ") and "\n" not in msg
    assert __import__("re").search(phrase, msg), msg
    assert not (tmp_path / "run" / "last.safetensors").exists()


@pytest.mark.parametrize("argv, phrase", [
    (["--seed", "-1"], "expected --seed to be a non-negative integer, got -1"),
    (["--val-fraction", "1"], "expected --val-fraction in (0, 1), got 1.0"),
    (["--device", "no-such-device"], "train: --device no-such-device: DeviceError: "),
])
def test_bad_options_are_one_line_naming_the_option(tmp_path, argv, phrase):
    with pytest.raises(SystemExit) as err:
        main(argv + ["--out", str(tmp_path), "--quiet"])
    assert phrase in str(err.value.code) and "\n" not in str(err.value.code)


def test_amp_job_learns_keeps_its_scaler_and_resumes(tmp_path, capsys):
    """--amp (issue 35, part 2): autocast(float16) forward with a GradScaler learns the digits
    as the float32 job does (3 epochs: 0.975 float32, 0.978 --amp on Intel's CPU runtime); the
    checkpoint keeps the scaler's state and a resume continues from it."""
    dev = clgrad.default_device()
    if not dev.fp16:
        pytest.skip(f"{dev.name} has no float16")
    out = tmp_path / "amp"
    assert main(["--amp", "--epochs", "2", "--out", str(out), "--quiet"]) == 0
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    acc = float(summary.split("test accuracy: ")[1].split(" ")[0])
    assert acc >= 0.9, summary
    ckpt = clgrad.load(out / "last.safetensors")
    scale = ckpt["scaler"]["scale"]
    assert scale > 1  # (a run of only skipped steps would have halved it to ~0)
    assert all(np.isfinite(v.numpy()).all() for v in ckpt["model"].values())
    assert main(["--amp", "--resume", str(out / "last.safetensors"), "--epochs", "3",
                 "--out", str(out), "--quiet"]) == 0
    again = clgrad.load(out / "last.safetensors")["scaler"]
    # loaded, then counted on: a fresh scaler would count the third epoch's steps only (unless
    # a step overflowed there, which halves the scale and restarts the count)
    assert (again["_growth_tracker"] > ckpt["scaler"]["_growth_tracker"] or
            again["scale"] < scale), (again, ckpt["scaler"])


def test_amp_refuses_compile_and_a_device_without_float16(tmp_path, monkeypatch):
    with pytest.raises(SystemExit) as err:
        main(["--amp", "--compile", "--out", str(tmp_path), "--quiet"])
    assert "--amp with --compile" in str(err.value.code)
    dev = runtime.fastest_device()
    monkeypatch.setattr(dev, "fp16", False)
    monkeypatch.setattr(runtime, "fastest_device", lambda: dev)
    with pytest.raises(SystemExit) as err:
        main(["--amp", "--out", str(tmp_path), "--quiet"])
    msg = str(err.value.code)
    assert msg.startswith("train: --amp") and "has no float16" in msg and "\n" not in msg


def test_resume_past_the_epochs_says_nothing_to_train(short_run, tmp_path, capsys,
                                                     monkeypatch):
    out, summary = short_run
    import clgrad.train as train_mod   # with tensorboardX installed: no events file either
    monkeypatch.setattr(train_mod, "_tensorboard", lambda d: pytest.fail("a SummaryWriter"))
    assert main(["--resume", str(out / "last.safetensors"), "--epochs", "1", "--out",
                 str(tmp_path), "--quiet"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == (f"resumed from {out / 'last.safetensors'} after epoch 3: nothing to "
                        f"train with --epochs 1 (it counts every epoch, the resumed ones "
                        f"included)")
    assert len(lines) == 2 and lines[1].startswith(
        f"test accuracy: {summary['test_acc']:.3f} | best validation accuracy "
        f"{summary['best_acc']:.3f} at epoch {summary['best_epoch']} (")
    assert list(tmp_path.iterdir()) == []  # nothing trained, nothing written


def test_ctrl_c_exits_130_with_one_line_and_keeps_the_last_checkpoint(tmp_path):
    import signal
    import subprocess
    import sys
    import time
    out = tmp_path / "run"
    # SIG_DFL in the child: a shell may start the test runner with SIGINT ignored.
    proc = subprocess.Popen([sys.executable, "-m", "clgrad", "train", "--epochs", "50",
                             "--quiet", "--out", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 240
        while not (out / "last.safetensors").exists() and proc.poll() is None:
            assert time.monotonic() < deadline, "no checkpoint within 240 s"
            time.sleep(0.05)
        time.sleep(0.3)                              # now inside a later epoch (or a save)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    stderr = "".join(ln for ln in stderr.splitlines(keepends=True)  # a first run's notices
                     if not ln.startswith(("clgrad: probing ", "clgrad: building OpenCL ")))
    assert stderr == f"train: interrupted (Ctrl-C); {out / 'last.safetensors'} is intact\n"
    last = clgrad.load(out / "last.safetensors")             # complete, checksums verified
    assert last["progress"]["epoch"] >= 1 and "model" in last
    names = {p.name for p in out.iterdir()}                  # no temporary leftovers
    names = {n for n in names if not n.startswith("events.out.tfevents.")}  # tensorboardX
    assert {"best.safetensors", "last.safetensors"} <= names <= {
        "best.safetensors", "last.safetensors", "curves.png", "metrics.csv"}, names


def test_resume_from_a_damaged_checkpoint_names_the_tensor(short_run, tmp_path):
    """4 KiB of random bytes in the data section: the CRC-32 check stops the run at once."""
    out, _ = short_run
    raw = bytearray((out / "last.safetensors").read_bytes())
    start = 8 + int.from_bytes(raw[:8], "little")
    raw[start:start + 4096] = np.random.default_rng(1).bytes(4096)
    bad = tmp_path / "damaged.safetensors"
    bad.write_bytes(bytes(raw))
    with pytest.raises(SystemExit, match=rf"^train: --resume {bad}: ValueError: load: .*tensor "
                                         r"'[\w.]+' is corrupt"):
        main(["--resume", str(bad), "--out", str(tmp_path / "run"), "--quiet"])


def test_job_takes_the_fastest_device_unless_told(tmp_path, monkeypatch, capsys):
    """The training job runs on runtime.fastest_device() (the first GPU) when --device is not
    given, though the library's default device is PyTorch's "cpu"; --device wins."""
    rng = np.random.default_rng(1)
    for prefix, n in (("train", 32), ("t10k", 16)):
        _write_idx(tmp_path / f"{prefix}-images-idx3-ubyte.gz", rng.integers(0, 255, (n, 28, 28)))
        _write_idx(tmp_path / f"{prefix}-labels-idx1-ubyte.gz", rng.integers(0, 10, n))
    cpu = clgrad.runtime.get_device("cpu")
    asked = []
    monkeypatch.setattr(clgrad.runtime, "fastest_device", lambda: asked.append(1) or cpu)
    monkeypatch.setattr(clgrad.runtime.discovery, "_DEFAULT", [None])
    argv = ["--data", str(tmp_path), "--epochs", "1", "--batch-size", "16", "--val-fraction",
            "0.25", "--out", str(tmp_path / "run"), "--quiet"]
    main(argv, dataset="mnist")
    assert asked == [1] and clgrad.runtime.discovery._DEFAULT[0] is None  # the caller's, back
    assert capsys.readouterr().out.strip().splitlines()[-1].endswith(
        f"device: {cpu.name} [{cpu.platform}] (cpu)")
    main(argv + ["--device", "cpu"], dataset="mnist")
    assert asked == [1]


def test_progress_bar_rate_restarts_after_the_first_batch():
    """A slow first batch (kernel builds) must not set the ETA of the rest of the epoch."""
    import io
    import time
    tqdm = pytest.importorskip("tqdm").tqdm
    from clgrad.train import restart_rate
    bar = tqdm(total=1000, file=io.StringIO(), mininterval=0, smoothing=0.3)
    time.sleep(0.5)                                  # the first batch: 0.5 s for 10 items
    bar.update(10)
    slow_eta = (bar.total - bar.n) / bar.format_dict["rate"]
    assert slow_eta > 20                             # 990 items at 20 items/s: ~50 s
    restart_rate(bar)
    assert bar.n == 10 and bar.format_dict["elapsed"] < 0.1
    for _ in range(5):                               # then 10 items every ~2 ms
        time.sleep(0.002)
        bar.update(10)
    fd = bar.format_dict
    assert fd["n"] == 60 and fd["rate"] is not None
    assert (fd["total"] - fd["n"]) / fd["rate"] < 5  # 940 items at ~thousands/s
    bar.close()


def test_job_writes_tensorboard_events_when_tensorboardx_is_installed(tmp_path):
    import struct
    pytest.importorskip("tensorboardX")   # (the dev extra installs it)
    args = argparse.Namespace(dataset="digits", data=None, epochs=2, batch_size=64, lr=3e-3,
                              weight_decay=1e-4, device=None, out=str(tmp_path), resume=None,
                              seed=0, quiet=True, val_fraction=0.1)
    summary = fit(args)
    (events,) = tmp_path.glob("events.out.tfevents.*")
    data = events.read_bytes()
    for tag, values in (("train/loss", summary["history"]["train_loss"]),
                        ("val/acc", summary["history"]["val_acc"])):
        for v in values:   # tag then simple_value (float32), one event per epoch
            key = bytes([0x0A, len(tag)]) + tag.encode() + b"\x15" + struct.pack("<f", v)
            assert data.count(key) == 1, (tag, v)
    assert data.count(b"\x0a\x08test/acc\x15" + struct.pack("<f", summary["test_acc"])) == 1


def test_curves_have_integer_epoch_ticks_and_the_test_accuracy(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt
    from clgrad.train import _plot
    figs = []
    real_close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig: figs.append(fig))
    history = {"train_loss": [1.0, 0.5, 0.3], "val_loss": [0.9, 0.6, 0.4],
               "train_acc": [0.6, 0.8, 0.9], "val_acc": [0.7, 0.85, 0.88]}
    _plot(history, tmp_path / "curves.png", "digits", test_acc=0.875)
    (fig,) = figs
    fig.canvas.draw()
    for ax in fig.axes:
        ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks
    acc_ax = fig.axes[1]
    dashed = [ln for ln in acc_ax.get_lines() if ln.get_linestyle() == "--"]
    assert len(dashed) == 1 and set(dashed[0].get_ydata()) == {0.875}
    assert "test 0.875" in [t.get_text() for t in acc_ax.get_legend().get_texts()]
    real_close(fig)
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"


def test_the_job_gives_back_the_callers_default_device(tmp_path, monkeypatch):
    """The job runs on the fastest device as the default (its tensors follow it) and gives the
    caller's default back when it ends: a program or test calling main() keeps its own."""
    from clgrad import runtime
    mine = runtime.default_device()
    fastest = runtime.Device(mine.cl_device, mine.platform_index, mine.device_index, index=7)
    monkeypatch.setattr(runtime, "fastest_device", lambda: fastest)
    defaults, real = [], runtime.set_default_device
    monkeypatch.setattr(runtime, "set_default_device",
                        lambda spec: defaults.append(spec) or real(spec))
    args = argparse.Namespace(dataset="digits", data=None, epochs=1, batch_size=64, lr=3e-3,
                              weight_decay=1e-4, device=None, out=str(tmp_path), resume=None,
                              seed=0, quiet=True, val_fraction=0.1)
    real(mine)
    try:
        summary = fit(args)
        assert defaults[0] is fastest and summary["epoch"] == 1
        assert runtime.default_device() is mine
    finally:
        real(None)
