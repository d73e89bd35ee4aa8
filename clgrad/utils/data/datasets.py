"""The readers of the datasets clgrad ships or reads from local files; each returns a
TensorDataset (clgrad.utils.data.dataset), usable with the DataLoader.

    load_digits, digits_split                 the 1 797 8x8 digits of scikit-learn, shipped
                                              in _digits/ (BSD-3 notice there; no download)
    MNIST, FashionMNIST                       IDX files from a local folder (raw or .gz)
    CIFAR10                                   python batch files, unpickled without running code
    read_idx                                  any IDX file -> NumPy array
"""

import gzip
import math
import pickle
from pathlib import Path

import numpy as np

from clgrad._unpickle import AllowlistUnpickler
from clgrad.utils.data.dataset import TensorDataset

__all__ = ["load_digits", "digits_split", "MNIST", "FashionMNIST", "CIFAR10", "read_idx"]


def load_digits():
    """The 1 797 handwritten 8x8 digits scikit-learn ships (``sklearn.datasets.load_digits``),
    read from the copy inside clgrad (``clgrad/utils/data/_digits/digits.csv.gz``, 57 KB, with
    scikit-learn's BSD-3 notice in ``_digits/LICENSE``): no download, no scikit-learn needed.

    Returns: TensorDataset of images float32 (1797, 1, 8, 8) in [0, 1] (pixel / 16) and labels
             int64 (1797,) in 0..9, in scikit-learn's order; `.classes` is ("0", ..., "9")
    Raises:  ValueError naming the file if the shipped copy is damaged
    """
    path = _DIGITS_FILE
    with gzip.open(path, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.int64, ndmin=2)
    if table.shape != (1797, 65) or table[:, :64].min() < 0 or table[:, :64].max() > 16 \
            or not set(np.unique(table[:, 64])) <= set(range(10)):
        raise ValueError(f"load_digits: expected 1797 rows of 64 pixels in 0..16 and a label "
                         f"in 0..9 in {path}, got shape {table.shape}")
    images = (table[:, :64].astype(np.float32) / np.float32(16.0)).reshape(-1, 1, 8, 8)
    ds = TensorDataset(images, table[:, 64].copy())
    ds.classes = tuple(str(d) for d in range(10))
    return ds


_DIGITS_FILE = Path(__file__).resolve().parent / "_digits" / "digits.csv.gz"


def digits_split(test_fraction=0.2, seed=0):
    """Deterministic stratified train/test split of `load_digits()`.

    Each class c with n_c samples gives round(n_c * test_fraction) samples, chosen by a NumPy
    Generator seeded with `seed`, to the test set; the rest go to train. Both keep the original
    sample order. Same (test_fraction, seed) -> the same split on every machine.

    Returns: (train, test) TensorDatasets as in `load_digits`
    Raises:  ValueError if test_fraction is not in (0, 1) or leaves either side empty
    """
    ds = load_digits()
    images, labels = ds.arrays
    train_idx, test_idx = _stratified_split(labels, test_fraction, seed, op="digits_split")
    train = TensorDataset(images[train_idx], labels[train_idx])
    test = TensorDataset(images[test_idx], labels[test_idx])
    train.classes = test.classes = ds.classes
    return train, test


def read_idx(path):
    """Read one IDX file (the MNIST format), raw or gzip-compressed (detected by content).

    Format:  magic = 0x00 0x00 <type code> <ndim>, then ndim big-endian uint32 sizes, then data
    Returns: np.ndarray of shape (sizes...) in native byte order; type codes 0x08 uint8,
             0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64
    Raises:  FileNotFoundError if path is missing; ValueError naming the file for a bad magic,
             an unknown type code, a size that does not match the header, or corrupt gzip data
    """
    return _parse_idx(_read_maybe_gzip(path, "read_idx"), path, "read_idx")


class MNIST(TensorDataset):
    """MNIST handwritten digits from the four standard IDX files in a local folder.

    Files:   train=True:  train-images-idx3-ubyte, train-labels-idx1-ubyte
             train=False: t10k-images-idx3-ubyte,  t10k-labels-idx1-ubyte
             each raw or with a .gz suffix, in `root` or in `root/MNIST/raw` (torchvision layout)
    download: True fetches the split's two missing .gz files into `root/MNIST/raw` from the
             first of `mirrors` that answers (torchvision's), each checked against its MD5
    Returns: images float32 (N, 1, 28, 28) in [0, 1] (pixel / 255), labels int64 (N,) in 0..9
    Raises:  FileNotFoundError naming the missing files and the folder to put them in (with
             download=True and no mirror reachable: also the URLs tried and why each failed);
             ValueError naming the file for a wrong magic number, image size, truncated data,
             image/label count mismatch or a label outside 0..9
    """

    classes = tuple(str(d) for d in range(10))
    _folder = "MNIST"
    # torchvision's mirrors and MD5s of the .gz files (each file is checked after download)
    mirrors = ("https://ossci-datasets.s3.amazonaws.com/mnist/",
               "http://yann.lecun.com/exdb/mnist/")
    resources = {"train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
                 "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
                 "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
                 "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c"}

    def __init__(self, root, train=True, *, download=False):
        name = type(self).__name__
        prefix = "train" if train else "t10k"
        if download:
            _download(name, (f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte"),
                      Path(root), Path(root) / self._folder / "raw", self.mirrors,
                      self.resources)
        images_path, labels_path = _find_files(
            name, (f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte"),
            (Path(root), Path(root) / self._folder / "raw"), gz=True)
        images = _read_idx_checked(name, images_path, 0x08, 3, "(N, 28, 28) uint8 images")
        if images.shape[1:] != (28, 28):
            raise ValueError(f"{name}: {images_path}: expected images of 28x28 pixels, "
                             f"got {images.shape[1]}x{images.shape[2]}")
        labels = _read_idx_checked(name, labels_path, 0x08, 1, "(N,) uint8 labels")
        _check_labels(name, labels_path, labels, len(images), len(self.classes))
        images = (images.astype(np.float32) / np.float32(255.0)).reshape(-1, 1, 28, 28)
        super().__init__(images, labels.astype(np.int64))
        self.root, self.train = Path(root), bool(train)


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST: the same files, names, layout and errors as MNIST.

    Files:   as MNIST, in `root` or in `root/FashionMNIST/raw`
    Returns: images float32 (N, 1, 28, 28) in [0, 1], labels int64 (N,) in 0..9 (see `.classes`)
    """

    classes = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
               "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")
    _folder = "FashionMNIST"
    mirrors = ("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",)
    resources = {"train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
                 "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
                 "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
                 "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310"}


class CIFAR10(TensorDataset):
    """CIFAR-10 from the standard python batch files, unpickled without running any code.

    Files:   `root/cifar-10-batches-py/` (or `root` itself) holding data_batch_1 .. data_batch_5
             (train=True) or test_batch (train=False), as extracted from cifar-10-python.tar.gz
    Safety:  a restricted unpickler resolves only the NumPy globals that rebuild arrays and
             dtypes; any other global (os.system, builtins.eval, ...) raises
             pickle.UnpicklingError before it could be called
    Returns: images float32 (N, 3, 32, 32) in [0, 1] (pixel / 255), labels int64 (N,) in 0..9
    Raises:  FileNotFoundError naming the missing files and the folder; pickle.UnpicklingError
             for a disallowed global; ValueError naming the file for any other malformed content
    """

    classes = ("airplane", "automobile", "bird", "cat", "deer",
               "dog", "frog", "horse", "ship", "truck")

    def __init__(self, root, train=True):
        root = Path(root)
        names = [f"data_batch_{i}" for i in range(1, 6)] if train else ["test_batch"]
        paths = _find_files("CIFAR10", names, (root / "cifar-10-batches-py", root), gz=False)
        images, labels = zip(*(_read_cifar_batch(p) for p in paths))
        images = np.concatenate(images).reshape(-1, 3, 32, 32)
        super().__init__(images.astype(np.float32) / np.float32(255.0), np.concatenate(labels))
        self.root, self.train = root, bool(train)


# ---------------------------------------------------------------------------- private helpers

_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}

def _stratified_split(labels, test_fraction, seed, op):
    """(train_idx, test_idx), both sorted: round(n_c * test_fraction) of each class to test."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"{op}: expected 0 < test_fraction < 1, got {test_fraction}")
    rng = np.random.default_rng(seed)
    test = []
    for c in np.unique(labels):
        members = np.flatnonzero(labels == c)
        test.append(rng.permutation(members)[:round(len(members) * test_fraction)])
    is_test = np.zeros(len(labels), dtype=bool)
    is_test[np.concatenate(test)] = True
    train_idx, test_idx = np.flatnonzero(~is_test), np.flatnonzero(is_test)
    if len(train_idx) == 0 or len(test_idx) == 0:
        raise ValueError(f"{op}: test_fraction={test_fraction} leaves {len(train_idx)} train "
                         f"and {len(test_idx)} test samples; expected both non-empty")
    return train_idx, test_idx


def _find_files(op, names, folders, gz):
    """Path of each name (or name.gz when gz) in the first of `folders` that holds it."""
    found, missing = [], []
    for name in names:
        variants = (name, name + ".gz") if gz else (name,)
        hit = next((f / v for f in folders for v in variants if (f / v).is_file()), None)
        (found if hit else missing).append(hit or name)
    if missing:
        also = " (raw or .gz)" if gz else ""
        where = " or ".join(str(f) for f in folders)
        raise FileNotFoundError(f"{op}: expected {', '.join(missing)}{also} in {where}, got no "
                                f"such file; put {', '.join(names)}{also} in {folders[0]}")
    return found


def _download(op, names, root, folder, mirrors, resources, timeout=30.0):
    """Fetch ``name.gz`` of each of ``names`` found neither in ``root`` nor in ``folder`` into
    ``folder``: from the first mirror that answers with the MD5 of ``resources``; written
    through a temporary file, so an interrupted download leaves nothing that looks complete."""
    import hashlib
    import urllib.request

    todo = [n for n in names if not any((f / v).is_file() for f in (root, folder)
                                        for v in (n, n + ".gz"))]
    for name in todo:
        gz, failures = name + ".gz", []
        for mirror in mirrors:
            url = mirror + gz
            try:
                with urllib.request.urlopen(url, timeout=timeout) as r:
                    data = r.read()
            except (OSError, ValueError) as e:   # URLError, HTTPError, timeouts are OSErrors
                failures.append(f"{url}: {e}")
                continue
            got = hashlib.md5(data, usedforsecurity=False).hexdigest()
            if got != resources[gz]:
                failures.append(f"{url}: expected MD5 {resources[gz]}, got {got}")
                continue
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f".{gz}.part"
            tmp.write_bytes(data)
            tmp.replace(folder / gz)
            break
        else:
            raise FileNotFoundError(
                f"{op}: download=True could not fetch {gz} ({'; '.join(failures)}); "
                f"without network access, put {', '.join(n + '.gz' for n in names)} (or the "
                f"unpacked files) in {folder} or {root}")


def _read_maybe_gzip(path, op):
    data = Path(path).read_bytes()
    if data[:2] != b"\x1f\x8b":
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError) as e:
        raise ValueError(f"{op}: {path}: expected valid gzip data, got {e}") from e


def _parse_idx(data, path, op):
    """IDX bytes -> native-order array; see read_idx."""
    if len(data) < 4 or data[:2] != b"\x00\x00":
        raise ValueError(f"{op}: {path}: expected an IDX magic number 0x0000TTNN, "
                         f"got 0x{data[:4].hex()}")
    code, ndim = data[2], data[3]
    if code not in _IDX_TYPES:
        codes = ", ".join(hex(c) for c in _IDX_TYPES)
        raise ValueError(f"{op}: {path}: expected an IDX type code in {{{codes}}}, "
                         f"got {hex(code)}")
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"{op}: {path}: expected a {header}-byte header for {ndim} "
                         f"dimensions, got a {len(data)}-byte file")
    shape = tuple(int(s) for s in np.frombuffer(data, ">u4", ndim, offset=4))
    dtype = np.dtype(_IDX_TYPES[code])
    expected = header + math.prod(shape) * dtype.itemsize
    if len(data) != expected:
        raise ValueError(f"{op}: {path}: expected {expected} bytes for shape {shape} of "
                         f"{dtype.name}, got {len(data)}")
    flat = np.frombuffer(data, dtype, math.prod(shape), offset=header)
    return flat.astype(dtype.newbyteorder("="), copy=True).reshape(shape)


def _read_idx_checked(op, path, code, ndim, what):
    data = _read_maybe_gzip(path, op)
    magic = (code << 8) | ndim
    if data[:4] != magic.to_bytes(4, "big"):
        raise ValueError(f"{op}: {path}: expected magic number 0x{magic:08x} for {what}, "
                         f"got 0x{data[:4].hex()}")
    return _parse_idx(data, path, op)


def _check_labels(op, path, labels, n_images, n_classes):
    if len(labels) != n_images:
        raise ValueError(f"{op}: {path}: expected {n_images} labels (one per image), "
                         f"got {len(labels)}")
    if len(labels) and labels.max() >= n_classes:
        raise ValueError(f"{op}: {path}: expected labels in 0..{n_classes - 1}, "
                         f"got {int(labels.max())}")


def _read_cifar_batch(path):
    """(images uint8 (n, 3072), labels int64 (n,)) from one CIFAR python batch file."""
    with open(path, "rb") as f:
        try:
            batch = _ArrayUnpickler(f, encoding="bytes").load()
        except pickle.UnpicklingError as e:
            raise pickle.UnpicklingError(f"CIFAR10: {path}: {e}") from e
        except Exception as e:  # truncated or garbled streams raise many kinds of errors
            raise ValueError(f"CIFAR10: {path}: expected a pickled batch dict, got {e!r}") from e
    if not isinstance(batch, dict):
        raise ValueError(f"CIFAR10: {path}: expected a pickled dict, "
                         f"got {type(batch).__name__}")
    batch = {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in batch.items()}
    images, labels = batch.get("data"), batch.get("labels")
    if not (isinstance(images, np.ndarray) and images.dtype == np.uint8
            and images.ndim == 2 and images.shape[1] == 3 * 32 * 32):
        got = (f"{images.dtype} array of shape {images.shape}" if isinstance(images, np.ndarray)
               else type(images).__name__)
        raise ValueError(f"CIFAR10: {path}: expected 'data' to be a uint8 array of shape "
                         f"(n, 3072), got {got}")
    try:
        labels = np.asarray(labels, dtype=np.int64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"CIFAR10: {path}: expected 'labels' to be a list of ints, "
                         f"got {type(labels).__name__}") from e
    if labels.ndim != 1:
        raise ValueError(f"CIFAR10: {path}: expected 'labels' to be a list of ints, "
                         f"got shape {labels.shape}")
    _check_labels("CIFAR10", path, labels, len(images), 10)
    if len(labels) and labels.min() < 0:
        raise ValueError(f"CIFAR10: {path}: expected labels in 0..9, got {int(labels.min())}")
    return images, labels


class _ArrayUnpickler(AllowlistUnpickler):
    """Unpickler that can rebuild dicts, lists, str/bytes, numbers and NumPy arrays, nothing else:
    a stream that names os.system (or any other callable) fails before anything runs."""

    def refusal(self, module, name):
        """The message for a global that is not a NumPy array's."""
        return (f"expected only NumPy array globals in the pickle, got {module}.{name}; "
                f"refusing to load it")
