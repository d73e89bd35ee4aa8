"""``torch.utils.tensorboard``'s ``SummaryWriter``: TensorBoard event files, written without
TensorBoard or TensorFlow installed (``pip install tensorboard`` only to view them:
``tensorboard --logdir runs``).

    from clgrad.utils.tensorboard import SummaryWriter
    with SummaryWriter("runs/exp1") as w:
        for step in range(100):
            w.add_scalar("loss/train", loss, step)

Supported, with PyTorch's names and arguments: ``add_scalar``, ``add_scalars``,
``add_histogram``, ``add_text``, ``flush``, ``close``, ``get_logdir``; other ``add_*``
methods (images, graphs, embeddings ...) raise AttributeError saying they are not implemented.

Format: a file ``events.out.tfevents.<time>.<host>.<pid>.<n>`` of TFRecords (length, masked
CRC-32C of the length, an ``Event`` protocol buffer, masked CRC-32C of it), the first record
``file_version: "brain.Event:2"``; scalars as ``simple_value`` (float32), as PyTorch writes them.
The protocol buffers are encoded by hand (tensorflow/core/util/event.proto, summary.proto).
"""
from __future__ import annotations

import os
import socket
import struct
import time
from datetime import datetime
from pathlib import Path

import numpy as np

from clgrad.io.caffemodel import _len_field, _varint_field

__all__ = ["SummaryWriter"]

_FIXED64, _FIXED32 = 1, 5


def _double_field(number: int, value: float) -> bytes:
    return bytes([number << 3 | _FIXED64]) + struct.pack("<d", float(value))


def _float_field(number: int, value: float) -> bytes:
    return bytes([number << 3 | _FIXED32]) + struct.pack("<f", float(value))


def _packed_doubles(number: int, values) -> bytes:
    return _len_field(number, np.asarray(values, "<f8").tobytes())


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), the checksum of TFRecords; crc32c(b"123456789") == 0xE3069283."""
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC32C[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def _masked(data: bytes) -> bytes:
    c = crc32c(data)
    return struct.pack("<I", (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF)


def _record(event: bytes) -> bytes:
    """One TFRecord: length, masked CRC of the length, the data, masked CRC of the data."""
    header = struct.pack("<Q", len(event))
    return header + _masked(header) + event + _masked(event)


def _event(wall_time: float, step: int | None = None, summary: bytes | None = None,
           file_version: str | None = None) -> bytes:
    """An ``Event``: wall_time 1 (double), step 2 (int64), file_version 3, summary 5."""
    out = _double_field(1, wall_time)
    if step is not None:
        out += _varint_field(2, step)
    if file_version is not None:
        out += _len_field(3, file_version.encode())
    if summary is not None:
        out += _len_field(5, summary)
    return out


def _number(name: str, value) -> float:
    """A Python/NumPy number or a one-element Tensor/array as float; TypeError otherwise."""
    if isinstance(value, (bool, int, float, np.integer, np.floating)):
        return float(value)
    numel = getattr(value, "numel", None)
    size = numel() if callable(numel) else getattr(value, "size", None)
    if size == 1 and hasattr(value, "item"):
        return float(value.item())
    raise TypeError(f"{name}: expected a number or a one-element tensor, got "
                    f"{type(value).__name__}{tuple(getattr(value, 'shape', ()))}")


class _EventFile:
    """One event file in ``folder``, its first record the file version."""

    _count = 0

    def __init__(self, folder: Path, suffix: str = ""):
        folder.mkdir(parents=True, exist_ok=True)
        _EventFile._count += 1
        now = time.time()
        name = (f"events.out.tfevents.{int(now):010d}.{socket.gethostname()}.{os.getpid()}."
                f"{_EventFile._count}{suffix}")
        self.path = folder / name
        self._file = open(self.path, "wb")
        self.write(_event(now, file_version="brain.Event:2"))

    def write(self, event: bytes):
        self._file.write(_record(event))

    def flush(self):
        if not self._file.closed:
            self._file.flush()

    def close(self):
        if not self._file.closed:
            self._file.close()


class SummaryWriter:
    """PyTorch's ``SummaryWriter``: writes TensorBoard event files into ``log_dir``.

    Args:    log_dir (default ``runs/<date>_<time>_<host><comment>``, as PyTorch), comment,
             purge_step (accepted, unused), max_queue and flush_secs (the file is flushed
             after every ``max_queue`` events or ``flush_secs`` seconds, and on
             ``flush``/``close``), filename_suffix.
    Values:  Python or NumPy numbers, or one-element clgrad Tensors (read with ``.item()``).
    Raises:  TypeError naming the argument for anything else; ValueError for an empty
             histogram; AttributeError for ``add_*`` methods clgrad does not implement.
    """

    def __init__(self, log_dir=None, comment: str = "", purge_step=None, max_queue: int = 10,
                 flush_secs: float = 120, filename_suffix: str = ""):
        if log_dir is None:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = str(log_dir)
        self.max_queue, self.flush_secs = int(max_queue), float(flush_secs)
        self._suffix = filename_suffix
        self._file = _EventFile(Path(self.log_dir), filename_suffix)
        self._scalar_files: dict = {}
        self._pending, self._flushed = 0, time.time()

    def get_logdir(self) -> str:
        """The folder the event files go to."""
        return self.log_dir

    def add_scalar(self, tag: str, scalar_value, global_step=None, walltime=None,
                   new_style: bool = False, double_precision: bool = False):
        """One scalar (float32 ``simple_value``) at ``global_step``."""
        value = _float_field(2, _number("add_scalar(): scalar_value", scalar_value))
        self._add(self._file, _len_field(1, _len_field(1, str(tag).encode()) + value),
                  global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step=None,
                    walltime=None):
        """Several scalars in one chart: each key of ``tag_scalar_dict`` goes to its own
        event file in ``log_dir/<main_tag>_<key>``, under the tag ``main_tag`` (PyTorch's)."""
        if not isinstance(tag_scalar_dict, dict):
            raise TypeError(f"add_scalars(): tag_scalar_dict: expected a dict of tag -> number, "
                            f"got {type(tag_scalar_dict).__name__}")
        walltime = time.time() if walltime is None else walltime
        for key, v in tag_scalar_dict.items():
            folder = Path(self.log_dir, f"{main_tag.replace('/', '_')}_{key}")
            f = self._scalar_files.get(folder)
            if f is None:
                f = self._scalar_files[folder] = _EventFile(folder, self._suffix)
            value = _float_field(2, _number(f"add_scalars(): tag_scalar_dict[{key!r}]", v))
            self._add(f, _len_field(1, _len_field(1, str(main_tag).encode()) + value),
                      global_step, walltime)

    def add_histogram(self, tag: str, values, global_step=None, bins="tensorflow",
                      walltime=None, max_bins=None):
        """A histogram of ``values`` (a Tensor or array). ``bins``: NumPy's (an int, a
        sequence of edges or a rule name); 'tensorflow' (PyTorch's default) uses NumPy's
        'auto' rule here, so the buckets can differ from PyTorch's (the counts are exact)."""
        a = values.numpy() if hasattr(values, "numpy") else np.asarray(values)
        a = np.asarray(a, np.float64).reshape(-1)
        if a.size == 0:
            raise ValueError("add_histogram(): values: expected at least one value, got none")
        counts, edges = np.histogram(a, bins="auto" if bins == "tensorflow" else bins)
        nz = np.flatnonzero(counts)  # as PyTorch: drop the empty buckets at both ends
        lo, hi = (nz[0], nz[-1] + 1) if nz.size else (0, len(counts))
        histo = (_double_field(1, a.min()) + _double_field(2, a.max()) +
                 _double_field(3, a.size) + _double_field(4, a.sum()) +
                 _double_field(5, np.dot(a, a)) + _packed_doubles(6, edges[1:][lo:hi]) +
                 _packed_doubles(7, counts[lo:hi]))
        self._add(self._file, _len_field(1, _len_field(1, str(tag).encode()) +
                                         _len_field(5, histo)), global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step=None, walltime=None):
        """Text (Markdown) under ``<tag>/text_summary``, for TensorBoard's text plugin."""
        if not isinstance(text_string, str):
            raise TypeError(f"add_text(): text_string: expected a str, got "
                            f"{type(text_string).__name__}")
        meta = _len_field(1, _len_field(1, b"text") + _len_field(2, b""))  # plugin_data
        tensor = (_varint_field(1, 7) +                       # dtype DT_STRING
                  _len_field(2, _len_field(2, _varint_field(1, 1))) +   # shape [1]
                  _len_field(8, text_string.encode()))         # string_val
        value = (_len_field(1, f"{tag}/text_summary".encode()) + _len_field(9, meta) +
                 _len_field(8, tensor))
        self._add(self._file, _len_field(1, value), global_step, walltime)

    def _add(self, f: _EventFile, summary: bytes, global_step, walltime):
        step = None if global_step is None else int(_number("global_step", global_step))
        f.write(_event(time.time() if walltime is None else float(walltime), step, summary))
        self._pending += 1
        if self._pending >= self.max_queue or time.time() - self._flushed >= self.flush_secs:
            self.flush()

    def flush(self):
        """Write what was added to disk."""
        for f in (self._file, *self._scalar_files.values()):
            f.flush()
        self._pending, self._flushed = 0, time.time()

    def close(self):
        """Flush and close the event files."""
        for f in (self._file, *self._scalar_files.values()):
            f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getattr__(self, name):
        if name.startswith("add_"):
            raise AttributeError(f"SummaryWriter.{name} is not implemented in clgrad (it has "
                                 f"add_scalar, add_scalars, add_histogram and add_text)")
        raise AttributeError(f"'SummaryWriter' object has no attribute {name!r}")
