"""clgrad.distributed, DistributedDataParallel and DistributedSampler.

The collective and DDP checks run in 2 ranks launched with the pip MPI's ``mpiexec`` (the
``mpich`` wheel) on tests/dist_worker.py; each rank checks its results against NumPy, and DDP
against single-process training on the full batch. Every launch is bounded by a timeout.
The sampler is checked in-process against hand-computed partitions.
"""
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import clgrad.distributed as dist
from clgrad.distributed import DistributedSampler

HERE = Path(__file__).resolve().parent


def find_mpiexec():
    """The mpiexec of this interpreter's environment (the mpich wheel puts one next to python),
    else the first on PATH, else None."""
    for cand in (Path(sys.executable).with_name("mpiexec"), Path(sys.prefix, "bin", "mpiexec")):
        if cand.exists():
            return str(cand)
    return shutil.which("mpiexec")


def launcher(mpiexec, is_root=None, has_rsh=None):
    """(argv prefix, extra environment) to start ranks with ``mpiexec``. Open MPI refuses to
    run as root unless told (``--allow-run-as-root`` and OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM)=1),
    refuses more ranks than cores unless ``--oversubscribe``, and (4.x) stops before a local
    launch when neither ssh nor rsh is installed (containers) unless its rsh launcher is
    left out (OMPI_MCA_plm=^rsh: the local 'isolated' one starts the ranks); MPICH's Hydra
    needs none of these."""
    is_root = os.geteuid() == 0 if is_root is None else is_root
    if has_rsh is None:
        has_rsh = bool(shutil.which("ssh") or shutil.which("rsh"))
    try:
        v = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30)
        text = v.stdout + v.stderr
    except (OSError, subprocess.TimeoutExpired):
        text = ""
    if "Open MPI" not in text and "OpenRTE" not in text:
        return [mpiexec], {}
    extra = {} if has_rsh else {"OMPI_MCA_plm": "^rsh"}
    if not is_root:
        return [mpiexec, "--oversubscribe"], extra
    return ([mpiexec, "--oversubscribe", "--allow-run-as-root"],
            {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", **extra})


MPIEXEC = find_mpiexec()

# find_spec, not dist.is_available(): importing mpi4py.MPI would start MPI in pytest itself
needs_mpi = pytest.mark.skipif(not (importlib.util.find_spec("mpi4py") and MPIEXEC),
                               reason="needs mpi4py and mpiexec (pip install "
                                      "'clgrad[distributed]')")


def launch(args, timeout=120, cwd=None):
    """Run ``mpiexec -n 2 python ARGS``; returns (exit status, stdout + stderr, seconds)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMI_", "OMPI_", "PMIX_", "MPI_", "HYDRA_"))}
    env.pop("RANK", None)
    env.pop("WORLD_SIZE", None)
    argv, extra = launcher(MPIEXEC)
    env.update(extra)
    start = time.monotonic()
    p = subprocess.run([*argv, "-n", "2", sys.executable, *args], capture_output=True,
                       text=True, timeout=timeout, env=env, cwd=cwd)
    return p.returncode, p.stdout + p.stderr, time.monotonic() - start


def _fake_mpiexec(tmp_path, version_text):
    path = tmp_path / "mpiexec"
    path.write_text(f"#!/bin/sh\necho '{version_text}'\n")
    path.chmod(0o755)
    return str(path)


def test_launcher_passes_open_mpis_root_flags(tmp_path):
    fake = _fake_mpiexec(tmp_path, "mpiexec (Open MPI) 5.0.3")
    argv, env = launcher(fake, is_root=True, has_rsh=True)
    assert argv == [fake, "--oversubscribe", "--allow-run-as-root"]
    assert env == {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    assert launcher(fake, is_root=False, has_rsh=True) == ([fake, "--oversubscribe"], {})
    old = _fake_mpiexec(tmp_path, "mpiexec (OpenRTE) 4.1.2")
    assert launcher(old, is_root=True)[0][-1] == "--allow-run-as-root"
    # a container without ssh/rsh (the H200 machine): Open MPI 4.1 stopped at "plm_rsh_agent:
    # ssh : rsh ... could not be found" before starting two local ranks
    assert launcher(old, is_root=False, has_rsh=False) == (
        [old, "--oversubscribe"], {"OMPI_MCA_plm": "^rsh"})
    assert launcher(old, is_root=True, has_rsh=False)[1]["OMPI_MCA_plm"] == "^rsh"


def test_launcher_leaves_mpich_alone(tmp_path):
    fake = _fake_mpiexec(tmp_path, "HYDRA build details:\n    Version: 4.2.0")
    assert launcher(fake, is_root=True) == ([fake], {})


def test_the_environments_own_mpiexec_comes_first(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    own = _fake_mpiexec(bin_dir, "HYDRA")
    on_path = tmp_path / "elsewhere"
    on_path.mkdir()
    _fake_mpiexec(on_path, "mpiexec (Open MPI) 5.0.3")
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    monkeypatch.setenv("PATH", str(on_path))
    assert find_mpiexec() == own
    Path(own).unlink()
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "nowhere"))
    assert find_mpiexec() == str(on_path / "mpiexec")


@needs_mpi
def test_collectives_match_numpy_on_two_ranks():
    # all_reduce (5 ops) / broadcast / all_gather over 5 dtypes x {contiguous, step slice,
    # transpose, 0-d}; the *_into_tensor, reduce_scatter, reduce, gather, scatter, send/recv
    # and async forms; NaN propagation; version bumps; mismatch errors on both ranks.
    rc, out, _ = launch([str(HERE / "dist_worker.py"), "collectives"])
    assert rc == 0, out
    for r in (0, 1):
        assert f"rank {r}: collectives ok" in out, out
        assert (f"rank {r}: mismatch error: all_reduce: expected the same dtype, shape and "
                f"arguments on every rank, got rank 0: float32 (2,)") in out, out


@needs_mpi
def test_ddp_matches_single_process_training_on_the_global_batch():
    # 3 SGD steps of a small grouped CNN on 2 x 4 samples == 3 steps on the 8 samples in one
    # process; plus no_sync accumulation, BatchNorm buffer broadcast, unused parameters,
    # init_process_group's checks and the parameter-mismatch error.
    rc, out, _ = launch([str(HERE / "dist_worker.py"), "ddp"])
    assert rc == 0, out
    for r in (0, 1):
        for what in ("ddp equals single-process training", "no_sync", "buffers",
                     "unused parameters", "ddp"):
            assert f"rank {r}: {what} ok" in out, out


@needs_mpi
def test_a_rank_that_hangs_makes_the_others_time_out_with_a_message():
    rc, out, seconds = launch([str(HERE / "dist_worker.py"), "hang"], timeout=60)
    assert rc != 0
    assert "all_reduce on rank 0 of 2 did not complete within 2 s" in out, out
    assert "MPI_Abort" in out
    assert seconds < 40


@needs_mpi
def test_a_rank_that_dies_ends_the_job():
    rc, out, seconds = launch([str(HERE / "dist_worker.py"), "crash"], timeout=60)
    assert rc != 0, out
    assert seconds < 40


@needs_mpi
def test_training_cli_under_mpiexec(tmp_path):
    rc, out, _ = launch(["-m", "clgrad", "train", "--epochs", "1", "--quiet", "--out",
                         str(tmp_path / "run")], timeout=300)
    assert rc == 0, out
    assert out.count("test accuracy:") == 1, out  # only rank 0 reports
    assert "2 processes" in out, out
    acc = float(out.split("test accuracy:")[1].split("|")[0])
    assert acc > 0.7, out  # 1 epoch of the digits job (one process reaches ~0.9)
    assert (tmp_path / "run" / "last.safetensors").is_file()
    assert (tmp_path / "run" / "curves.png").is_file()


def test_missing_mpi4py_is_a_clear_error():
    code = ("import sys; sys.modules['mpi4py'] = None\n"
            "import clgrad.distributed as dist\n"
            "assert not dist.is_available()\n"
            "try:\n"
            "    dist.init_process_group('mpi')\n"
            "except RuntimeError as e:\n"
            "    print(e)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert "needs mpi4py and an MPI library" in p.stdout
    assert "pip install 'clgrad[distributed]'" in p.stdout


def test_uninitialised_group_raises():
    with pytest.raises(ValueError, match="not been initialized"):
        dist.get_world_size()
    with pytest.raises(ValueError, match="not been initialized"):
        dist.all_reduce(None)
    with pytest.raises(ValueError, match="not been initialized"):
        DistributedSampler(range(4))


# -- DistributedSampler: hand-computed partitions ----------------------------------------------
@pytest.mark.parametrize("n, replicas, drop_last, expected", [
    # padded with the first indices: [0..9, 0, 1], rank r takes positions r, r+3, ...
    (10, 3, False, [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]),
    # truncated to 9 = 3 * ceil((10 - 3) / 3)
    (10, 3, True, [[0, 3, 6], [1, 4, 7], [2, 5, 8]]),
    (8, 2, False, [[0, 2, 4, 6], [1, 3, 5, 7]]),
    (8, 2, True, [[0, 2, 4, 6], [1, 3, 5, 7]]),
    # fewer samples than ranks: the order repeats as often as needed, [0, 1, 0, 1, 0]
    (2, 5, False, [[0], [1], [0], [1], [0]]),
    (1, 2, True, [[], []]),
])
def test_sampler_partition_without_shuffle(n, replicas, drop_last, expected):
    got = [list(DistributedSampler(range(n), replicas, r, shuffle=False, drop_last=drop_last))
           for r in range(replicas)]
    assert got == expected
    assert all(len(DistributedSampler(range(n), replicas, r, shuffle=False,
                                      drop_last=drop_last)) == len(e)
               for r, e in enumerate(expected))


def test_sampler_shuffle_is_one_seeded_permutation_split_across_ranks():
    n, replicas = 11, 3

    def parts(epoch, seed=0):
        out = []
        for r in range(replicas):
            s = DistributedSampler(range(n), replicas, r, shuffle=True, seed=seed)
            s.set_epoch(epoch)
            out.append(list(s))
        return out

    a = parts(0)
    perm = np.random.default_rng(0).permutation(n)
    padded = np.concatenate([perm, perm[:1]])  # 12 = 3 * 4
    assert a == [padded[r::replicas].tolist() for r in range(replicas)]
    assert sorted(sum(a, [])) == sorted(list(range(n)) + [int(perm[0])])
    assert parts(0) == a  # same seed and epoch: same order on every rank and every call
    assert parts(1) != a and parts(0, seed=5) != a
    assert parts(1) == [np.concatenate([p, p[:1]])[r::3].tolist() for r in range(3)
                        for p in [np.random.default_rng(1).permutation(n)]]


def test_sampler_rejects_bad_ranks():
    with pytest.raises(ValueError, match="Invalid rank 3"):
        DistributedSampler(range(4), num_replicas=3, rank=3)
    with pytest.raises(ValueError, match="num_replicas >= 1"):
        DistributedSampler(range(4), num_replicas=0, rank=0)


def test_launched_world_size_reads_the_launchers_environment(monkeypatch):
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    assert dist.launched_world_size() == 0
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    assert dist.launched_world_size() == 4
    monkeypatch.setenv("PMI_SIZE", "3")
    assert dist.launched_world_size() == 3


def test_training_cli_needs_a_global_batch_divisible_by_the_ranks(monkeypatch, tmp_path):
    from clgrad.train import main
    monkeypatch.setenv("PMI_SIZE", "3")
    with pytest.raises(SystemExit, match="--batch-size divisible by the 3 processes"):
        main(["--batch-size", "32", "--out", str(tmp_path)])
