"""clgrad.utils.tensorboard.SummaryWriter: event files TensorBoard reads (checked with
TensorBoard's own reader where it is installed; the framing, CRCs and fields are checked by
hand everywhere)."""
import struct

import numpy as np
import pytest

import clgrad
from clgrad.utils.tensorboard import SummaryWriter, crc32c


def _records(path):
    """The TFRecords of an event file, each CRC checked by an independent formula."""
    def masked(c):
        return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    data, out, pos = path.read_bytes(), [], 0
    while pos < len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        (c1,) = struct.unpack_from("<I", data, pos + 8)
        assert c1 == masked(crc32c(data[pos:pos + 8]))
        body = data[pos + 12:pos + 12 + n]
        (c2,) = struct.unpack_from("<I", data, pos + 12 + n)
        assert c2 == masked(crc32c(body))
        out.append(body)
        pos += 12 + n + 4
    return out


def test_crc32c_known_values():
    assert crc32c(b"123456789") == 0xE3069283          # the CRC-32C check value (RFC 3720)
    assert crc32c(b"") == 0
    assert crc32c(bytes(32)) == 0x8A9136AA              # RFC 3720 B.4: 32 bytes of zeros


def test_scalar_event_bytes(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("loss/train", 0.5, 3, walltime=1000.0)
        w.add_scalar("loss/train", clgrad.tensor(0.25), np.int64(4), walltime=1001.0)
    (f,) = tmp_path.glob("events.out.tfevents.*")
    first, a, b = _records(f)
    assert first[0] == 0x09 and first[9:] == b"\x1a\x0dbrain.Event:2"   # wall_time, version
    value = b"\x0a\x0aloss/train" + b"\x15" + struct.pack("<f", 0.5)    # tag, simple_value
    assert a == (b"\x09" + struct.pack("<d", 1000.0) + b"\x10\x03" +     # wall_time, step 3
                 b"\x2a" + bytes([len(value) + 2]) + b"\x0a" + bytes([len(value)]) + value)
    assert b.endswith(struct.pack("<f", 0.25)) and b"\x10\x04" in b


def test_tensorboard_reads_scalars_histogram_text(tmp_path):
    rng = np.random.default_rng(0)
    values = rng.standard_normal(1000)
    with SummaryWriter(tmp_path) as w:
        for step in range(5):
            w.add_scalar("loss", 1.0 / (step + 1), step)
        w.add_scalars("acc", {"train": 0.9, "val": 0.8}, 4)
        w.add_histogram("weights", clgrad.tensor(values), 4, bins=10)
        w.add_text("note", "hello **tensorboard**", 0)
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(str(tmp_path), size_guidance={"tensors": 0})
    acc.Reload()
    got = [(e.step, e.value) for e in acc.Scalars("loss")]
    assert got == [(s, pytest.approx(1.0 / (s + 1))) for s in range(5)]
    (h,) = acc.Histograms("weights")
    assert h.step == 4 and h.histogram_value.num == 1000
    assert h.histogram_value.sum == pytest.approx(values.sum())
    assert h.histogram_value.min == values.min() and h.histogram_value.max == values.max()
    counts, edges = np.histogram(values, bins=10)
    assert list(h.histogram_value.bucket) == list(counts)
    np.testing.assert_allclose(h.histogram_value.bucket_limit, edges[1:])
    (t,) = acc.Tensors("note/text_summary")
    assert t.tensor_proto.string_val == [b"hello **tensorboard**"]
    sub = EventAccumulator(str(tmp_path / "acc_val"))
    sub.Reload()
    assert [(e.step, e.value) for e in sub.Scalars("acc")] == [(4, pytest.approx(0.8))]


def test_histogram_counts_without_tensorboard(tmp_path):
    values = np.array([0.0, 0.0, 1.0, 3.0])
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("h", values, 0, bins=3)
    (f,) = tmp_path.glob("events.out.tfevents.*")
    rec = _records(f)[1]
    # bucket_limit (field 6) and bucket (field 7) packed doubles: edges 1, 2, 3; counts 2, 1, 1
    assert b"\x32\x18" + np.array([1.0, 2.0, 3.0], "<f8").tobytes() in rec
    assert b"\x3a\x18" + np.array([2.0, 1.0, 1.0], "<f8").tobytes() in rec


def test_bad_values_and_unsupported_methods(tmp_path):
    w = SummaryWriter(tmp_path)
    with pytest.raises(TypeError, match=r"add_scalar\(\): scalar_value: expected a number or a "
                       r"one-element tensor, got Tensor\(3,\)"):
        w.add_scalar("x", clgrad.ones(3), 0)
    with pytest.raises(TypeError, match=r"add_scalars\(\): tag_scalar_dict"):
        w.add_scalars("x", [1.0], 0)
    with pytest.raises(ValueError, match=r"add_histogram\(\): values: expected at least one"):
        w.add_histogram("h", np.zeros(0), 0)
    with pytest.raises(AttributeError, match=r"SummaryWriter.add_image is not implemented"):
        w.add_image("img", np.zeros((3, 4, 4)), 0)
    assert w.get_logdir() == str(tmp_path)
    w.close()
