"""clgrad.utils.data and its readers (clgrad.utils.data.datasets): datasets from local files,
batching, the digits split."""

import gzip
import os
import pickle
import struct

import numpy as np
import pytest

import clgrad
from clgrad.utils.data import DataLoader, Dataset, TensorDataset
from clgrad.utils.data.datasets import (CIFAR10, MNIST, FashionMNIST, digits_split, load_digits,
                                        read_idx)

# ------------------------------------------------------------------------------ file writers


def idx_bytes(array, code=0x08):
    """IDX encoding of `array`: magic 0x0000<code><ndim>, big-endian uint32 sizes, data."""
    big = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}[code]
    head = bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return head + array.astype(big).tobytes()


def write(path, data, gz=False):
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        path = path.with_name(path.name + ".gz")
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def mnist_arrays(n, seed):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    images[0, 0, 0], images[0, 0, 1] = 0, 255  # both ends of the range
    return images, rng.integers(0, 10, size=n, dtype=np.uint8)


def write_mnist(folder, prefix, images, labels, gz=False):
    write(folder / f"{prefix}-images-idx3-ubyte", idx_bytes(images), gz)
    write(folder / f"{prefix}-labels-idx1-ubyte", idx_bytes(labels), gz)


class Py2StylePickler(pickle._Pickler):
    """Pickles str and bytes as Python 2 `str` (BINSTRING), as the real CIFAR files do."""

    dispatch = pickle._Pickler.dispatch.copy()

    def save_py2_str(self, obj):
        raw = obj.encode("latin1") if isinstance(obj, str) else obj
        if len(raw) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(raw)]) + raw)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(raw)) + raw)
        self.memoize(obj)

    dispatch[str] = save_py2_str
    dispatch[bytes] = save_py2_str


def cifar_pickle(images, labels, style):
    batch = {"batch_label": "batch", "labels": [int(v) for v in labels], "data": images,
             "filenames": [f"img{i}.png" for i in range(len(labels))]}
    if style == "py2":
        import io
        buf = io.BytesIO()
        Py2StylePickler(buf, protocol=2).dump(batch)
        # NumPy 1 (as in the real files) spells the module numpy.core, NumPy 2 numpy._core.
        return buf.getvalue().replace(b"cnumpy._core.", b"cnumpy.core.")
    return pickle.dumps(batch, protocol=style)


def write_cifar(folder, sizes, style=4, seed=0):
    """data_batch_1..5 (sizes[0..4] images) and test_batch (sizes[5]); returns the arrays."""
    rng = np.random.default_rng(seed)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    out = {}
    for name, n in zip(names, sizes):
        images = rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)
        labels = rng.integers(0, 10, size=n)
        write(folder / name, cifar_pickle(images, labels, style))
        out[name] = (images, labels)
    return out


class Evil:
    """Unpickling this would run `system(command)`."""

    def __init__(self, func, command):
        self.func, self.command = func, command

    def __reduce__(self):
        return self.func, (self.command,)


# ------------------------------------------------------------------------------ MNIST family


@pytest.mark.parametrize("cls", [MNIST, FashionMNIST])
@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("train", [True, False])
def test_mnist_reads_idx_files(tmp_path, cls, gz, train):
    images, labels = mnist_arrays(5, seed=1)
    other_images, other_labels = mnist_arrays(3, seed=2)  # the other split, must not be read
    write_mnist(tmp_path, "train" if train else "t10k", images, labels, gz)
    write_mnist(tmp_path, "t10k" if train else "train", other_images, other_labels, gz)

    ds = cls(tmp_path, train=train)

    assert len(ds) == 5
    x, y = ds.arrays
    assert x.shape == (5, 1, 28, 28) and x.dtype == np.float32
    assert y.shape == (5,) and y.dtype == np.int64
    np.testing.assert_array_equal(x[:, 0], images.astype(np.float32) / np.float32(255))
    assert x.min() == 0.0 and x.max() == 1.0
    np.testing.assert_array_equal(y, labels.astype(np.int64))
    xi, yi = ds[3]  # Tensors, as PyTorch's datasets give
    assert isinstance(xi, clgrad.Tensor) and xi.shape == (1, 28, 28) and yi.shape == ()
    np.testing.assert_array_equal(xi.numpy()[0], images[3] / np.float32(255))
    assert yi.item() == labels[3]
    assert len(cls.classes) == 10


def test_mnist_torchvision_layout(tmp_path):
    images, labels = mnist_arrays(4, seed=3)
    write_mnist(tmp_path / "FashionMNIST" / "raw", "train", images, labels, gz=True)
    ds = FashionMNIST(tmp_path)
    np.testing.assert_array_equal(ds.arrays[1], labels)
    with pytest.raises(FileNotFoundError):  # MNIST looks in MNIST/raw, not FashionMNIST/raw
        MNIST(tmp_path)


@pytest.mark.parametrize("cls", [MNIST, FashionMNIST])
def test_mnist_download_from_a_mirror_checks_md5(tmp_path, monkeypatch, cls):
    import hashlib
    images, labels = mnist_arrays(6, seed=5)
    server = tmp_path / "server"
    write_mnist(server, "t10k", images, labels, gz=True)
    md5 = {p.name: hashlib.md5(p.read_bytes()).hexdigest() for p in server.iterdir()}
    dead = (tmp_path / "dead").as_uri() + "/"                 # a mirror that does not answer
    monkeypatch.setattr(cls, "mirrors", (dead, server.as_uri() + "/"))
    monkeypatch.setattr(cls, "resources", md5)
    root = tmp_path / "root"
    ds = cls(root, train=False, download=True)
    raw = root / cls._folder / "raw"
    assert sorted(p.name for p in raw.iterdir()) == sorted(md5)   # no .part leftovers
    np.testing.assert_array_equal(ds.arrays[0][:, 0], images / np.float32(255))
    np.testing.assert_array_equal(ds.arrays[1], labels)
    (server / "t10k-images-idx3-ubyte.gz").unlink()               # present: not fetched again
    np.testing.assert_array_equal(cls(root, train=False, download=True).arrays[1], labels)
    # a wrong MD5 on every mirror: nothing written, a message naming both and the files to place
    monkeypatch.setattr(cls, "resources", dict(md5, **{"train-labels-idx1-ubyte.gz": "0" * 32,
                                                       "train-images-idx3-ubyte.gz": "0" * 32}))
    write_mnist(server, "train", images, labels, gz=True)
    with pytest.raises(FileNotFoundError) as err:
        cls(root, train=True, download=True)
    msg = str(err.value)
    assert f"{cls.__name__}: download=True could not fetch train-images-idx3-ubyte.gz" in msg
    assert "expected MD5 00000000000000000000000000000000, got " in msg and dead in msg
    assert (f"put train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz (or the unpacked "
            f"files) in {raw} or {root}") in msg
    assert not (raw / "train-images-idx3-ubyte.gz").exists()


def test_mnist_missing_files_named(tmp_path):
    images, labels = mnist_arrays(2, seed=4)
    write(tmp_path / "train-images-idx3-ubyte", idx_bytes(images))
    with pytest.raises(FileNotFoundError) as err:
        MNIST(tmp_path)
    msg = str(err.value)
    assert "train-labels-idx1-ubyte" in msg and str(tmp_path) in msg and ".gz" in msg
    assert "train-images-idx3-ubyte" in msg  # the fix names both files of the split
    with pytest.raises(FileNotFoundError, match="t10k-images-idx3-ubyte"):
        MNIST(tmp_path, train=False)
    with pytest.raises(FileNotFoundError, match="no-such-folder"):
        MNIST(tmp_path / "no-such-folder")


def _bad_mnist_cases():
    images, labels = mnist_arrays(3, seed=5)
    good_i, good_l = idx_bytes(images), idx_bytes(labels)
    return {
        "images magic is a labels magic": (idx_bytes(labels), good_l, "images", "0x00000803"),
        "images stored as int32": (idx_bytes(images.astype(np.int32), 0x0C), good_l, "images",
                                   "0x00000803"),
        "images 27x28": (idx_bytes(images[:, :27]), good_l, "images", "28x28"),
        "images truncated": (good_i[:-1], good_l, "images", str(len(good_i) - 1)),
        "labels 2-D": (good_i, idx_bytes(labels.reshape(3, 1)), "labels", "0x00000801"),
        "labels too few": (good_i, idx_bytes(labels[:2]), "labels", "expected 3 labels"),
        "label 10": (good_i, idx_bytes(np.array([1, 10, 2], np.uint8)), "labels", "0..9"),
        "header cut short": (good_i[:10], good_l, "images", "header"),
        "bad gzip": (b"\x1f\x8b" + b"garbage" * 5, good_l, "images", "gzip"),
    }


@pytest.mark.parametrize("case", sorted(_bad_mnist_cases()))
def test_mnist_malformed_raises_value_error_naming_file(tmp_path, case):
    images_bytes, labels_bytes, bad, phrase = _bad_mnist_cases()[case]
    write(tmp_path / "train-images-idx3-ubyte", images_bytes)
    write(tmp_path / "train-labels-idx1-ubyte", labels_bytes)
    with pytest.raises(ValueError) as err:
        MNIST(tmp_path)
    msg = str(err.value)
    assert f"train-{bad}-idx" in msg and phrase in msg


@pytest.mark.parametrize("code,dtype", [(0x08, np.uint8), (0x09, np.int8), (0x0B, np.int16),
                                        (0x0C, np.int32), (0x0D, np.float32),
                                        (0x0E, np.float64)])
def test_read_idx_all_types(tmp_path, code, dtype):
    a = (np.arange(24).reshape(2, 3, 4) - 5).astype(dtype)
    if dtype == np.uint8:
        a = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    got = read_idx(write(tmp_path / "x.idx", idx_bytes(a, code), gz=code == 0x0D))
    assert got.dtype == dtype and got.dtype.isnative and got.shape == (2, 3, 4)
    np.testing.assert_array_equal(got, a)


def test_read_idx_bad_type_code(tmp_path):
    path = write(tmp_path / "x.idx", bytes([0, 0, 0x07, 1, 0, 0, 0, 0]))
    with pytest.raises(ValueError, match=r"x\.idx.*type code.*0x7"):
        read_idx(path)


# ------------------------------------------------------------------------------ CIFAR-10


@pytest.mark.parametrize("style", ["py2", 4, 5])
def test_cifar10_reads_batches(tmp_path, style):
    arrays = write_cifar(tmp_path / "cifar-10-batches-py", [2, 1, 3, 1, 2, 4], style)

    train, test = CIFAR10(tmp_path), CIFAR10(tmp_path, train=False)

    assert len(train) == 9 and len(test) == 4
    for ds, names in [(train, [f"data_batch_{i}" for i in range(1, 6)]), (test, ["test_batch"])]:
        x, y = ds.arrays
        assert x.shape == (len(ds), 3, 32, 32) and x.dtype == np.float32
        assert y.dtype == np.int64
        raw = np.concatenate([arrays[n][0] for n in names])
        np.testing.assert_array_equal(x, (raw.astype(np.float32) / np.float32(255))
                                      .reshape(-1, 3, 32, 32))
        np.testing.assert_array_equal(y, np.concatenate([arrays[n][1] for n in names]))
    # channel-major rows: the first 1024 bytes of a row are the red plane
    np.testing.assert_array_equal(train.arrays[0][0, 0].ravel(),
                                  arrays["data_batch_1"][0][0, :1024] / np.float32(255))


def test_cifar10_batches_in_root_itself(tmp_path):
    arrays = write_cifar(tmp_path, [1, 1, 1, 1, 1, 2])
    np.testing.assert_array_equal(CIFAR10(tmp_path, train=False).arrays[1],
                                  arrays["test_batch"][1])


def test_cifar10_missing_files_named(tmp_path):
    write_cifar(tmp_path / "cifar-10-batches-py", [1, 1, 1, 1, 1, 1])
    os.remove(tmp_path / "cifar-10-batches-py" / "data_batch_4")
    with pytest.raises(FileNotFoundError) as err:
        CIFAR10(tmp_path)
    msg = str(err.value)
    assert "data_batch_4" in msg and "data_batch_3" in msg  # missing one + the full list
    assert str(tmp_path / "cifar-10-batches-py") in msg
    assert len(CIFAR10(tmp_path, train=False)) == 1


@pytest.mark.parametrize("func", [os.system, eval])
def test_cifar10_malicious_pickle_not_executed(tmp_path, func):
    folder = tmp_path / "cifar-10-batches-py"
    write_cifar(folder, [1, 1, 1, 1, 1, 1])
    marker = tmp_path / "pwned"
    command = (f"touch {marker}" if func is os.system
               else f"open({str(marker)!r}, 'w').close()")
    payload = {"data": Evil(func, command), "labels": [0]}
    write(folder / "data_batch_2", pickle.dumps(payload, protocol=2))
    with pytest.raises(pickle.UnpicklingError) as err:
        CIFAR10(tmp_path)
    assert "data_batch_2" in str(err.value)
    assert func.__name__ in str(err.value)
    assert not marker.exists()
    # the same payload does run under plain pickle: the test would notice a silent pass
    pickle.loads(pickle.dumps(Evil(func, command)))
    assert marker.exists()


@pytest.mark.parametrize("batch,phrase", [
    ([1, 2, 3], "dict"),
    ({b"data": np.zeros((2, 3072), np.float32), b"labels": [0, 1]}, "uint8"),
    ({b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}, "3072"),
    ({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0]}, "expected 2 labels"),
    ({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 10]}, "0..9"),
    ({b"labels": [0]}, "'data'"),
])
def test_cifar10_malformed_batch(tmp_path, batch, phrase):
    write_cifar(tmp_path, [1, 1, 1, 1, 1, 1])
    write(tmp_path / "test_batch", pickle.dumps(batch, protocol=4))
    with pytest.raises(ValueError) as err:
        CIFAR10(tmp_path, train=False)
    assert "test_batch" in str(err.value) and phrase in str(err.value)


def test_cifar10_truncated_pickle(tmp_path):
    write_cifar(tmp_path, [1, 1, 1, 1, 1, 1])
    data = (tmp_path / "test_batch").read_bytes()
    write(tmp_path / "test_batch", data[: len(data) // 2])
    with pytest.raises((ValueError, pickle.UnpicklingError), match="test_batch"):
        CIFAR10(tmp_path, train=False)


# ------------------------------------------------------------------------------ digits


def test_load_digits_values():
    # hand-checked against scikit-learn 1.9.1's load_digits: per-class counts, the first image
    # and the pixel sum; the sklearn cross-check below runs where scikit-learn is installed
    ds = load_digits()
    x, y = ds.arrays
    assert x.shape == (1797, 1, 8, 8) and x.dtype == np.float32
    assert y.shape == (1797,) and y.dtype == np.int64
    assert x.min() == 0.0 and x.max() == 1.0
    np.testing.assert_array_equal(np.bincount(y),
                                  [178, 182, 177, 183, 181, 182, 181, 179, 174, 180])
    np.testing.assert_array_equal(
        x[0, 0] * 16,
        [[0, 0, 5, 13, 9, 1, 0, 0], [0, 0, 13, 15, 10, 15, 5, 0], [0, 3, 15, 2, 0, 11, 8, 0],
         [0, 4, 12, 0, 0, 8, 8, 0], [0, 5, 8, 0, 0, 9, 8, 0], [0, 4, 11, 0, 1, 12, 7, 0],
         [0, 2, 14, 5, 10, 12, 0, 0], [0, 0, 6, 13, 10, 0, 0, 0]])
    assert y[:10].tolist() == list(range(10))
    assert ds.classes == tuple("0123456789")


def test_load_digits_equals_scikit_learn():
    sk_datasets = pytest.importorskip("sklearn.datasets", reason="the oracle: scikit-learn")
    x, y = load_digits().arrays
    sk = sk_datasets.load_digits()
    np.testing.assert_array_equal(x.reshape(1797, 64) * 16, sk.data)
    np.testing.assert_array_equal(y, sk.target)


def test_digits_ship_with_their_license_notice():
    import clgrad.utils.data.datasets as datasets_mod

    folder = datasets_mod._DIGITS_FILE.parent
    text = (folder / "LICENSE").read_text()
    assert "BSD 3-Clause License" in text and "scikit-learn developers" in text
    assert datasets_mod._DIGITS_FILE.stat().st_size < 60_000


def test_digits_split_sizes_stratified_deterministic():
    train, test = digits_split(test_fraction=0.2, seed=0)
    y_all = load_digits().arrays[1]
    counts = np.bincount(y_all, minlength=10)
    expected_test = np.array([round(c * 0.2) for c in counts])
    np.testing.assert_array_equal(np.bincount(test.arrays[1], minlength=10), expected_test)
    np.testing.assert_array_equal(np.bincount(train.arrays[1], minlength=10),
                                  counts - expected_test)
    assert len(train) + len(test) == 1797 and len(test) == expected_test.sum() == 359

    again_train, again_test = digits_split(test_fraction=0.2, seed=0)
    for a, b in zip(train.arrays + test.arrays, again_train.arrays + again_test.arrays):
        np.testing.assert_array_equal(a, b)
    _, other_test = digits_split(test_fraction=0.2, seed=1)
    assert not np.array_equal(other_test.arrays[0], test.arrays[0])


def test_digits_split_partitions_the_samples():
    from clgrad.utils.data.datasets import _stratified_split

    labels = load_digits().arrays[1]
    train_idx, test_idx = _stratified_split(labels, 0.25, seed=3, op="t")
    assert np.all(np.diff(train_idx) > 0) and np.all(np.diff(test_idx) > 0)
    np.testing.assert_array_equal(np.sort(np.concatenate([train_idx, test_idx])),
                                  np.arange(len(labels)))


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1, 0.0001])
def test_digits_split_bad_fraction(fraction):
    with pytest.raises(ValueError, match="test_fraction"):
        digits_split(test_fraction=fraction)


# ------------------------------------------------------------------------------ DataLoader


def numbered_dataset(n):
    """Sample i has features [i, i + 0.5] (float32) and label i (int64), so order shows."""
    x = np.stack([np.arange(n), np.arange(n) + 0.5], axis=1).astype(np.float32)
    return TensorDataset(x, np.arange(n))


def labels_seen(loader):
    return [int(v) for _, y in loader for v in y.numpy()]


@pytest.mark.parametrize("n,batch,drop_last,sizes", [
    (10, 3, False, [3, 3, 3, 1]),
    (10, 3, True, [3, 3, 3]),
    (9, 3, True, [3, 3, 3]),
    (2, 5, False, [2]),
    (2, 5, True, []),
    (0, 4, False, []),
    (1, 1, False, [1]),
])
def test_loader_batches(n, batch, drop_last, sizes):
    loader = DataLoader(numbered_dataset(n), batch_size=batch, drop_last=drop_last)
    assert len(loader) == len(sizes)
    batches = list(loader)
    assert [len(y.numpy()) for _, y in batches] == sizes
    for x, y in batches:
        assert isinstance(x, clgrad.Tensor) and isinstance(y, clgrad.Tensor)
        assert x.shape == (len(y.numpy()), 2) and x.dtype == clgrad.float32
        assert y.dtype == clgrad.int64
        np.testing.assert_array_equal(x.numpy()[:, 0], y.numpy())
        np.testing.assert_array_equal(x.numpy()[:, 1], y.numpy() + 0.5)
    assert labels_seen(loader) == list(range(sum(sizes)))  # in order without shuffle


def test_loader_one_upload_per_field(monkeypatch):
    calls = []
    real = clgrad.creation.from_numpy   # the loader uploads through clgrad.creation
    monkeypatch.setattr(clgrad.creation, "from_numpy",
                        lambda a: calls.append(a.shape) or real(a))
    list(DataLoader(numbered_dataset(7), batch_size=4))
    assert calls == [(4, 2), (4,), (3, 2), (3,)]


def test_loader_shuffle_reproducible_and_complete():
    ds = numbered_dataset(23)
    a = DataLoader(ds, batch_size=5, shuffle=True, generator=clgrad.Generator().manual_seed(7))
    b = DataLoader(ds, batch_size=5, shuffle=True, generator=clgrad.Generator().manual_seed(7))
    epochs_a = [labels_seen(a) for _ in range(3)]
    epochs_b = [labels_seen(b) for _ in range(3)]
    assert epochs_a == epochs_b
    for epoch in epochs_a:
        assert sorted(epoch) == list(range(23))  # every sample exactly once
    assert epochs_a[0] != epochs_a[1] != epochs_a[2]  # a new order every epoch
    assert epochs_a[0] != list(range(23))
    other = clgrad.Generator().manual_seed(8)
    assert labels_seen(DataLoader(ds, batch_size=5, shuffle=True, generator=other)) != epochs_a[0]


def test_loader_shuffle_drop_last_sees_distinct_samples():
    loader = DataLoader(numbered_dataset(10), batch_size=4, shuffle=True, drop_last=True)
    seen = labels_seen(loader)
    assert len(seen) == 8 and len(set(seen)) == 8


def test_loader_generic_dataset_and_dtypes():
    class Squares(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return np.full((2, 2), i, np.float64), i * i, np.uint8(i), i % 2 == 0

    (x, y, u, even), (x2, y2, u2, even2) = list(DataLoader(Squares(), batch_size=3))
    assert x.shape == (3, 2, 2) and x.dtype == clgrad.float64
    np.testing.assert_array_equal(x.numpy()[:, 0, 0], [0, 1, 2])
    assert y.dtype == clgrad.int64 and y.numpy().tolist() == [0, 1, 4]
    assert u.dtype == clgrad.int64 and u2.numpy().tolist() == [3, 4]  # uint8 widens
    assert even.dtype == clgrad.bool and even2.numpy().tolist() == [False, True]
    assert y2.numpy().tolist() == [9, 16]


def test_loader_subclass_getitem_is_used():
    class Doubled(TensorDataset):
        def __getitem__(self, i):
            x, y = super().__getitem__(i)
            return x * 2, y

    (x, y), = list(DataLoader(Doubled(np.arange(3.0, dtype=np.float32), np.arange(3)),
                              batch_size=3))
    assert x.numpy().tolist() == [0.0, 2.0, 4.0]


def test_tensor_dataset_inputs_and_errors():
    ds = TensorDataset(clgrad.from_numpy(np.arange(6, dtype=np.float32).reshape(3, 2)),
                       np.array([4, 5, 6], np.int32), [1, 0, 1])
    x, y, z = ds[-1]
    assert x.tolist() == [4.0, 5.0] and y.item() == 6 and y.dtype == clgrad.int32
    assert z.item() == 1 and z.dtype == clgrad.int64
    assert len(ds) == 3
    with pytest.raises(IndexError, match="index 3"):
        ds[3]
    with pytest.raises(ValueError, match="2 for tensor 1"):
        TensorDataset(np.zeros((3, 1)), np.zeros(2))
    with pytest.raises(ValueError, match="at least one"):
        TensorDataset()
    with pytest.raises(ValueError, match="0-d"):
        TensorDataset(np.float32(1.0))
    with pytest.raises(TypeError, match="complex"):
        TensorDataset(np.zeros(3, np.complex64))


def test_loader_argument_errors():
    ds = numbered_dataset(3)
    with pytest.raises(ValueError, match="positive integer value or None, but got batch_size=0"):
        DataLoader(ds, batch_size=0)
    with pytest.raises(ValueError, match="batch_size"):
        DataLoader(ds, batch_size=2.0)
    with pytest.raises(TypeError, match="generator"):
        iter(DataLoader(ds, shuffle=True, generator=7)).__next__()
    with pytest.raises(NotImplementedError, match="__getitem__"):
        Dataset()[0]


def test_loader_over_mnist(tmp_path):
    images, labels = mnist_arrays(5, seed=9)
    write_mnist(tmp_path, "train", images, labels, gz=True)
    (x, y), (x2, y2) = list(DataLoader(MNIST(tmp_path), batch_size=3))
    assert x.shape == (3, 1, 28, 28) and x2.shape == (2, 1, 28, 28)
    assert x.dtype == clgrad.float32 and y.dtype == clgrad.int64
    np.testing.assert_array_equal(x2.numpy()[:, 0], images[3:] / np.float32(255))
    assert y.numpy().tolist() + y2.numpy().tolist() == labels.tolist()
