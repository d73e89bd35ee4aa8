"""clgrad.multiprocessing (issue 33): Tensor.share_memory_ / is_shared, tensors sent to spawned
processes and through Queues map the same memory (writes in a child are seen by the parent,
hand-computed values), spawn's error propagation, the refusals (fork after OpenCL, GPU
tensors, non-leaf tensors), and PyTorch's Hogwild example (tests/programs/mnist_hogwild.py)
training one shared model in 2 processes."""
import os
import pickle
import re
import subprocess
import sys
from multiprocessing.reduction import ForkingPickler
from pathlib import Path

import numpy as np
import pytest

import clgrad
import clgrad.multiprocessing as mp
from clgrad.runtime.shared import check_shareable

import mp_worker  # the children's functions (a spawned child imports them from tests/)
from subproc import checkout_env

TESTS = Path(__file__).resolve().parent

pytestmark = pytest.mark.skipif(clgrad.default_device().kind != "cpu",
                                reason="shared memory needs a CPU device")


def test_share_memory_in_place_keeps_values_and_views():
    x = clgrad.arange(6.0).reshape(2, 3)
    col = x[:, 1]
    assert not x.is_shared()
    assert x.share_memory_() is x and x.is_shared() and col.is_shared()
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]] and col.tolist() == [1, 4]
    x.add_(1)
    assert col.tolist() == [2, 5] and (x * 2).sum().item() == 42
    # the storage is the shared mapping itself: host writes reach the tensor
    x._storage.shared.host[:4].view(np.float32)[0] = 42.0
    assert x[0, 0].item() == 42.0
    m = clgrad.nn.Sequential(clgrad.nn.Linear(2, 2), clgrad.nn.BatchNorm1d(2))
    before = {k: v.tolist() for k, v in m.state_dict().items()}
    assert m.share_memory() is m
    assert all(t.is_shared() for t in (*m.parameters(), *m.buffers()))
    assert {k: v.tolist() for k, v in m.state_dict().items()} == before


def test_spawned_processes_write_the_parents_memory():
    x = clgrad.zeros(2, 3).share_memory_()
    y = clgrad.ones(4)
    view = y[1::2]  # a view: the child gets a view of the same storage
    mp.spawn(mp_worker.add_rows, args=(x, view), nprocs=2)
    assert x.tolist() == [[10.0] * 3, [20.0] * 3]
    assert y.is_shared() and y.tolist() == [1.0, 2.0, 1.0, 2.0]  # shared when sent
    with pytest.raises(mp.ProcessRaisedException, match="child 1 failed on purpose"):
        mp.spawn(mp_worker.add_then_fail, args=(x,), nprocs=2)


def test_queue_round_trip_with_a_spawned_process():
    ctx = mp.get_context("spawn")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=mp_worker.queue_round_trip, args=(inbox, outbox))
    p.start()
    t = clgrad.tensor([1.0, -2.0, 3.0])
    inbox.put(t)
    made = outbox.get(timeout=120)
    back = outbox.get(timeout=120)
    inbox.put("received")
    p.join(timeout=120)
    assert p.exitcode == 0
    assert t.is_shared() and t.tolist() == [-1.0, 2.0, -3.0]  # negated by the child
    assert made.dtype == clgrad.float64 and made.tolist() == [0.0, 0.5, 1.0]
    assert back._storage is t._storage  # our own storage came back


def test_fork_after_opencl_refuses_clearly():
    x = clgrad.zeros(2).share_memory_()
    ctx = mp.get_context("fork")
    report = ctx.SimpleQueue()
    p = ctx.Process(target=mp_worker.touch_in_fork, args=(x, report))
    p.start()
    p.join(timeout=120)
    got = report.get()
    assert got.startswith("OpenCLInForkedProcess") and "spawn" in got, got
    assert x.tolist() == [0.0, 0.0]


def test_refusals():
    with pytest.raises(RuntimeError, match="Cowardly refusing"):
        ForkingPickler.dumps(clgrad.ones(2, requires_grad=True) * 2)

    class Gpu:
        kind, name = "gpu", "Some GPU"
    with pytest.raises(RuntimeError, match="expected a tensor on a CPU device.*'cpu' first"):
        check_shareable(Gpu(), "share_memory_")
    assert mp.get_all_sharing_strategies() == {"file_descriptor"}
    with pytest.raises(ValueError, match="file_system"):
        mp.set_sharing_strategy("file_system")
    t = clgrad.ones(2)  # plain pickle (not multiprocessing's) copies, and shares nothing
    back = pickle.loads(pickle.dumps(t))
    back.add_(1)
    assert not t.is_shared() and not back.is_shared() and t.tolist() == [1.0, 1.0]


def test_gpu_tensor_refuses_to_share():
    from test_device_cross import _run
    r = _run("import clgrad\n"
             "x = clgrad.ones(2)\n"
             "assert x._storage.device.kind == 'gpu'\n"
             "try:\n"
             "    x.share_memory_()\n"
             "except RuntimeError as e:\n"
             "    print('refused:', e)\n", as_gpu="*")
    assert "refused: share_memory_: expected a tensor on a CPU device" in r.stdout
    assert "no inter-process memory handles" in r.stdout


def test_hogwild_program_trains_one_shared_model_in_two_processes(tmp_path):
    from test_programs import PROGRAMS, rewrite_imports
    for name in ("mnist_hogwild", "mnist_hogwild_train"):
        (tmp_path / f"{name}.py").write_text(rewrite_imports(
            (PROGRAMS / f"{name}.py").read_text()))
    local = (PROGRAMS / "local_data.py").read_text()
    (tmp_path / "local_data.py").write_text(local.replace(
        'Path(__file__).resolve().parents[2]', repr(str(TESTS.parent)).join(("Path(", ")"))))
    env = checkout_env()
    r = subprocess.run([sys.executable, "mnist_hogwild.py", "--epochs", "1", "--train-size",
                        "256", "--test-size", "200", "--batch-size", "32", "--log-interval",
                        "1", "--lr", "0.1", "--num-processes", "2"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    losses = [float(v) for v in re.findall(r"Test set: Average loss: ([\d.]+)", r.stdout)]
    pids = set(re.findall(r"^(\d+)\tTrain Epoch", r.stdout, re.M))
    assert len(pids) == 2 and str(os.getpid()) not in pids, r.stdout
    # the parent never trains: its test loss fell only because it sees the children's writes
    assert len(losses) == 2 and losses[1] < losses[0] - 0.05, r.stdout


def test_a_runtime_that_copies_host_pointer_buffers_refuses_to_share(monkeypatch):
    from clgrad.runtime import shared
    x = clgrad.ones(3)
    dev = x._storage.device
    monkeypatch.delitem(shared._ZERO_COPY, dev, raising=False)
    monkeypatch.setitem(vars(dev), "fill", lambda *args: None)  # device writes miss the host
    with pytest.raises(RuntimeError, match="USE_HOST_PTR buffers in memory of its own"):
        x.share_memory_()
    assert not x.is_shared() and x.tolist() == [1.0, 1.0, 1.0]
