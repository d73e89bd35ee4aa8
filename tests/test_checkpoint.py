"""clgrad.io checkpoints: exact round trips, safetensors layout, atomic writes, clear errors."""

import json
import math
import os
import time

import numpy as np
import pytest
import safetensors.numpy

import clgrad
import clgrad.io.checkpoint as checkpoint
from clgrad.io import load, save


def state(seed=0):
    """A nested training state: module weights (clgrad), optimizer numbers, NumPy extras."""
    rng = np.random.default_rng(seed)
    return {
        "model": {
            "fc1.weight": clgrad.from_numpy(rng.standard_normal((4, 3)).astype(np.float32)),
            "fc1.bias": clgrad.from_numpy(rng.standard_normal(4).astype(np.float32)),
            "bn.num_batches": clgrad.from_numpy(np.array(2**40 + 3, dtype=np.int64)),
            "bn.mean64": clgrad.from_numpy(rng.standard_normal(5)),
            "mask": clgrad.from_numpy(np.array([True, False, True])),
            "empty": clgrad.from_numpy(np.zeros((0, 3), np.float32)),
        },
        "optim": {
            "lr": 0.1, "momentum": 1e-300, "step": 7, "big": 2**70, "nesterov": False,
            "name": "sgd", "note": None, "history": [1, 2.5, -3, float("inf")],
            "betas": (0.9, 0.999), "groups": [{"lr": 0.01, "params": [0, 1]}], "state": {},
        },
        "epoch": 3,
        "rng_state": rng.integers(0, 2**63, size=4, dtype=np.uint64),
        "counts": np.arange(6, dtype=np.int32).reshape(2, 3).T,  # non-contiguous
    }


def assert_same(got, want, where="root"):
    """Exact equality, and a clgrad Tensor / ndarray / tuple exactly where one was saved."""
    assert type(got) is type(want) or (isinstance(want, clgrad.Tensor)
                                       and isinstance(got, clgrad.Tensor)), where
    if isinstance(want, dict):
        assert list(got) == list(want), where
        for k in want:
            assert_same(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{where}.{i}")
    elif isinstance(want, (clgrad.Tensor, np.ndarray)):
        g, w = (x.numpy() if isinstance(x, clgrad.Tensor) else x for x in (got, want))
        assert g.dtype == w.dtype and g.shape == w.shape, where
        assert g.tobytes() == np.ascontiguousarray(w).tobytes(), where  # bit-exact
    elif isinstance(want, float) and math.isnan(want):
        assert math.isnan(got), where
    else:
        assert got == want, where


def test_round_trip_exact(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    want = state()
    save(want, path)
    got = load(path)
    assert_same(got, want)
    assert got["model"]["fc1.weight"].dtype == clgrad.float32
    assert got["model"]["bn.num_batches"].dtype == clgrad.int64
    assert got["model"]["bn.num_batches"].numpy().ravel().tolist() == [2**40 + 3]
    assert got["model"]["bn.mean64"].dtype == clgrad.float64
    assert isinstance(got["counts"], np.ndarray) and not isinstance(got["counts"], clgrad.Tensor)
    assert got["optim"]["betas"] == (0.9, 0.999) and got["optim"]["big"] == 2**70


def test_zero_dim_values_keep_their_shape(tmp_path):
    path = tmp_path / "c.safetensors"
    save({"t": clgrad.from_numpy(np.array(2**40 + 3)), "a": np.array(1.5, np.float32)}, path)
    got = load(path)
    assert got["a"].shape == () and got["a"].dtype == np.float32 and got["a"] == 1.5
    assert safetensors.numpy.load_file(str(path))["t"].shape == ()
    assert got["t"].shape == () and got["t"].item() == 2**40 + 3


def test_special_floats_and_numpy_scalars(tmp_path):
    path = tmp_path / "c.safetensors"
    save({"nan": float("nan"), "ninf": -math.inf, "tiny": 5e-324, "f32": np.float32(0.1),
          "i64": np.int64(-5), "b": np.bool_(True), "f64": np.float64(1 / 3)}, path)
    got = load(path)
    assert math.isnan(got["nan"]) and got["ninf"] == -math.inf and got["tiny"] == 5e-324
    assert got["f32"] == float(np.float32(0.1)) and type(got["f32"]) is float
    assert got["i64"] == -5 and type(got["i64"]) is int
    assert got["b"] is True and got["f64"] == 1 / 3


def test_dotted_keys_keep_their_structure(tmp_path):
    path = tmp_path / "c.safetensors"
    want = {"a.b": np.arange(3), "a": {"c": np.arange(2.0)}, "": 1, "x": {"y.z": {"w": 2}}}
    save(want, path)
    assert_same(load(path), want)


def test_file_is_plain_safetensors(tmp_path):
    path = tmp_path / "c.safetensors"
    want = state()
    save(want, path)
    raw = path.read_bytes()
    assert not raw.startswith(b"\x80")  # not a pickle stream
    tensors = safetensors.numpy.load_file(str(path))
    assert sorted(tensors) == sorted([
        "model.fc1.weight", "model.fc1.bias", "model.bn.num_batches", "model.bn.mean64",
        "model.mask", "model.empty", "rng_state", "counts"])
    np.testing.assert_array_equal(tensors["model.fc1.weight"],
                                  want["model"]["fc1.weight"].numpy())
    np.testing.assert_array_equal(tensors["counts"], want["counts"])
    header = json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])
    tree = json.loads(header["__metadata__"]["clgrad"])
    assert tree["version"] == 1
    assert tree["tree"]["dict"]["epoch"] == {"value": 3}
    assert tree["tree"]["dict"]["counts"] == {"tensor": "counts", "kind": "numpy"}


def test_overwrite_and_permissions(tmp_path):
    path = tmp_path / "c.safetensors"
    save({"v": 1}, path)
    save({"v": 2, "w": np.ones(2)}, path)
    assert load(path)["v"] == 2
    assert os.listdir(tmp_path) == ["c.safetensors"]
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


class FailingFile:
    """Wraps a file; the second write call writes half its data, then raises."""

    def __init__(self, f, exc):
        self.f, self.exc, self.writes = f, exc, 0

    def write(self, data):
        self.writes += 1
        if self.writes == 2:
            self.f.write(data[: len(data) // 2])
            self.f.flush()
            raise self.exc
        return self.f.write(data)

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


@pytest.mark.parametrize("exc", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_interrupted_write_keeps_old_checkpoint(tmp_path, monkeypatch, exc):
    path = tmp_path / "ckpt.safetensors"
    old = state(seed=1)
    save(old, path)
    before = path.read_bytes()

    real_fdopen = os.fdopen
    opened = []

    def fdopen(fd, mode):
        opened.append(FailingFile(real_fdopen(fd, mode), exc))
        return opened[-1]

    monkeypatch.setattr(checkpoint, "_CHUNK", 64)  # several writes, fail in the second
    monkeypatch.setattr(checkpoint.os, "fdopen", fdopen)
    with pytest.raises(type(exc)):
        save(state(seed=2), path)
    assert opened and opened[0].writes == 2  # it really failed midway through the data

    assert os.listdir(tmp_path) == ["ckpt.safetensors"]  # no temporary file left
    assert path.read_bytes() == before
    assert_same(load(path), old)


def test_failed_fsync_keeps_old_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.safetensors"
    save({"v": 1}, path)

    def fsync(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(checkpoint.os, "fsync", fsync)
    with pytest.raises(OSError, match="Input/output"):
        save({"v": 2}, path)
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]
    monkeypatch.undo()
    assert load(path) == {"v": 1}


def test_first_save_interrupted_leaves_nothing(tmp_path, monkeypatch):
    def replace(src, dst):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(checkpoint.os, "replace", replace)
    with pytest.raises(OSError):
        save({"w": np.ones(3)}, tmp_path / "c.safetensors")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("value,phrase", [
    ({"a": {"b": object()}}, "'a.b'"),
    ({"a": [1, {2, 3}]}, "'a.1'"),
    ({"a": {"x": 1, 1: 2}}, "int key 1 in a"),  # int keys only in a dict, or str only
    ({"a": {1.5: 2}}, "float key 1.5 in a"),
    ({"z": np.zeros(2, np.complex64)}, "complex64"),
    ({"s": np.array(["x"])}, "'s'"),
    ({"o": np.array([None])}, "object"),
    ({"c": 1j}, "complex"),
])
def test_unsupported_values_raise_type_error(tmp_path, value, phrase):
    path = tmp_path / "c.safetensors"
    with pytest.raises(TypeError) as err:
        save(value, path)
    assert phrase in str(err.value)
    assert os.listdir(tmp_path) == []  # checked before anything is written


def test_save_errors(tmp_path):
    with pytest.raises(TypeError, match="expected a dict, got list"):
        save([1, 2], tmp_path / "c.safetensors")
    with pytest.raises(FileNotFoundError, match="missing"):
        save({"a": 1}, tmp_path / "missing" / "c.safetensors")
    with pytest.raises(ValueError, match="'a.b'"):
        save({"a.b": np.ones(1), "a": {"b": np.ones(1)}}, tmp_path / "c.safetensors")


def test_load_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.safetensors"):
        load(tmp_path / "nope.safetensors")


def _corruptions(good):
    n = int.from_bytes(good[:8], "little")
    return {
        "empty file": b"",
        "text": b"hello, this is not a checkpoint at all",
        "pickle": b"\x80\x04\x95" + b"\x00" * 40,
        "header longer than file": (10**6).to_bytes(8, "little") + good[8:],
        "truncated data": good[:-5],
        "bad json": good[:8] + b"{" * n + good[8 + n:],
        "plain safetensors": safetensors.numpy.save({"w": np.ones(2, np.float32)}),
        "no metadata key": safetensors.numpy.save({"w": np.ones(2)}, metadata={"format": "pt"}),
        "bad tree": safetensors.numpy.save(
            {"w": np.ones(2)}, metadata={"clgrad": json.dumps(
                {"version": 1, "tree": {"dict": {"w": {"tensor": "missing", "kind": "numpy"}}}})}),
        "future version": safetensors.numpy.save(
            {}, metadata={"clgrad": json.dumps({"version": 99, "tree": {"dict": {}}})}),
        "metadata not json": safetensors.numpy.save({}, metadata={"clgrad": "{oops"}),
    }


@pytest.mark.parametrize("case", sorted(_corruptions(bytes(16))))  # the names only
def test_load_corrupt_raises_value_error_naming_path(tmp_path, case):
    good_path = tmp_path / "good.safetensors"
    save({"w": np.arange(4.0), "n": 1}, good_path)
    path = tmp_path / "bad.safetensors"
    path.write_bytes(_corruptions(good_path.read_bytes())[case])
    with pytest.raises(ValueError) as err:
        load(path)
    assert str(path) in str(err.value)


# -- integrity: per-tensor CRC-32, stale temporary files, bounded nesting ----------------------
def _data_start(raw):
    return 8 + int.from_bytes(raw[:8], "little")


@pytest.mark.parametrize("how", ["flip a bit", "zero a span"])
def test_damaged_tensor_bytes_are_detected_naming_the_tensor(tmp_path, how):
    path = tmp_path / "c.safetensors"
    w = np.arange(64, dtype=np.float32)
    save({"model": {"a": np.ones(3), "w": clgrad.from_numpy(w)}}, path)
    raw = bytearray(path.read_bytes())
    off = json.loads(raw[8:_data_start(raw)])["model.w"]["data_offsets"][0] + _data_start(raw)
    if how == "flip a bit":
        raw[off + 17] ^= 0x04
    else:
        raw[off + 8:off + 40] = bytes(32)
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"tensor 'model\.w' is corrupt: its bytes have "
                                         r"CRC-32 0x[0-9a-f]{8}, the checkpoint recorded"):
        load(path)


def test_checksums_are_crc32_of_the_bytes(tmp_path):
    """Independent oracle: zlib.crc32 of each tensor as safetensors stores it."""
    import zlib
    path = tmp_path / "c.safetensors"
    arrays = {"x": np.arange(6, dtype=np.int64).reshape(2, 3).T, "y": np.zeros(0),
              "z": np.array(2.5, np.float32)}
    save(arrays, path)
    with open(path, "rb") as f:
        header = json.loads(f.read(_data_start(path.read_bytes()))[8:])
    crc = json.loads(header["__metadata__"]["clgrad"])["crc32"]
    want = {k: zlib.crc32(np.ascontiguousarray(v).astype(v.dtype.newbyteorder("<")).tobytes())
            for k, v in arrays.items()}
    assert crc == want
    assert_same(load(path), arrays)


def test_checkpoint_without_checksums_still_loads(tmp_path):
    """Files written before checksums existed: the same layout without "crc32"."""
    path = tmp_path / "old.safetensors"
    meta = {"clgrad": json.dumps({"version": 1, "tree": {"dict": {
        "w": {"tensor": "w", "kind": "numpy"}, "n": {"value": 3}}}})}
    path.write_bytes(safetensors.numpy.save({"w": np.arange(3.0)}, metadata=meta))
    got = load(path)
    assert got["n"] == 3 and got["w"].tolist() == [0, 1, 2]


def _stale(folder, name, age, hexpart="0123456789ab"):
    tmp = folder / f".{name}.{hexpart}.tmp"
    tmp.write_bytes(b"\0" * 1000)
    t = os.stat(tmp).st_mtime - age
    os.utime(tmp, (t, t))
    return tmp


def test_save_removes_stale_temp_files_of_a_killed_save(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    old = _stale(tmp_path, path.name, age=3600)
    young = _stale(tmp_path, path.name, age=0, hexpart="ba9876543210")   # maybe in progress
    other = _stale(tmp_path, "other.safetensors", age=3600)             # another target's
    unrelated = tmp_path / f".{path.name}.not-hex.tmp"
    unrelated.write_bytes(b"keep")
    save({"v": 1}, path)
    assert not old.exists()
    assert young.exists() and other.exists() and unrelated.exists()
    assert load(path) == {"v": 1}


def test_stale_cleanup_spares_a_temp_file_locked_by_a_live_save(tmp_path):
    fcntl = pytest.importorskip("fcntl")
    path = tmp_path / "ckpt.safetensors"
    busy = _stale(tmp_path, path.name, age=3600)
    with open(busy, "rb") as f:
        fcntl.flock(f, fcntl.LOCK_EX)               # what a writer in progress holds
        save({"v": 1}, path)
        assert busy.exists()
    save({"v": 2}, path)                            # its lock is gone: a killed save's file
    assert not busy.exists()


def test_killed_save_leftover_is_cleaned_by_the_next_save(tmp_path):
    """A real SIGKILL mid-write: the leftover is unlocked; the next save removes it."""
    import signal
    import subprocess
    import sys
    path = tmp_path / "ckpt.safetensors"
    code = ("import os, signal, numpy as np, clgrad.io.checkpoint as c\n"
            "real = os.fsync\n"
            "def die(fd): os.kill(os.getpid(), signal.SIGKILL)\n"
            "c.os.fsync = die\n"
            f"c.save({{'w': np.ones(1000)}}, {str(path)!r})\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    left = [p for p in os.listdir(tmp_path)]
    assert len(left) == 1 and left[0].startswith(".ckpt.safetensors.")
    t = time.time() - 3600
    os.utime(tmp_path / left[0], (t, t))
    save({"v": 1}, path)
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]


def test_deep_metadata_raises_value_error_not_recursion_error(tmp_path):
    path = tmp_path / "deep.safetensors"
    tree = '{"list": [' * 5000 + '{"value": 1}' + "]}" * 5000   # json.dumps would recurse
    path.write_bytes(safetensors.numpy.save(
        {}, metadata={"clgrad": '{"version": 1, "tree": ' + tree + "}"}))
    with pytest.raises(ValueError, match=str(path)) as err:
        load(path)
    assert "nested at most" in str(err.value)
    deep = [1]
    for _ in range(150):
        deep = [deep]
    with pytest.raises(ValueError, match="nested at most 100 deep"):
        save({"d": deep}, tmp_path / "d.safetensors")
    ok = [1]
    for _ in range(90):
        ok = [ok]
    save({"d": ok}, tmp_path / "ok.safetensors")
    assert load(tmp_path / "ok.safetensors") == {"d": ok}


def test_int_keys_round_trip_and_mixed_keys_are_refused(tmp_path):
    """An optimizer's state is keyed by int (PyTorch's layout): int keys come back as ints
    (np.int64 keys as ints too); a dict mixing int and str keys is refused naming the key."""
    obj = {"state": {0: {"m": np.arange(3.0)}, 2: {"m": np.ones(2)}}, "n": {np.int64(5): 1},
           "empty": {}}
    checkpoint.save(obj, tmp_path / "a.safetensors")
    got = checkpoint.load(tmp_path / "a.safetensors")
    assert list(got["state"]) == [0, 2] and all(type(k) is int for k in got["state"])
    np.testing.assert_array_equal(got["state"][0]["m"], np.arange(3.0))
    np.testing.assert_array_equal(got["state"][2]["m"], np.ones(2))
    assert got["n"] == {5: 1} and got["empty"] == {}
    with pytest.raises(TypeError, match="expected str keys .or int keys only., got int key 1"):
        checkpoint.save({"x": {"a": 1, 1: 2}}, tmp_path / "b.safetensors")
    with pytest.raises(TypeError, match="got bool key True"):
        checkpoint.save({"x": {True: 1}}, tmp_path / "b.safetensors")
