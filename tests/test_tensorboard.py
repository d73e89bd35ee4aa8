"""clgrad.utils.tensorboard.SummaryWriter over tensorboardX: the event files are read back
record by record (TFRecord framing and CRC-32C checked by a bitwise formula here, each record
parsed with tensorboardX's bundled Event protocol buffer) and the values written compared with
NumPy's. Skipped only where tensorboardX is not importable (the dev extra installs it)."""
import io
import struct
import sys

import numpy as np
import pytest

import clgrad
from clgrad import nn


def _crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for byte in data:
        c ^= byte
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    return c ^ 0xFFFFFFFF


def _masked(data: bytes) -> int:
    c = _crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _events(folder):
    """Every Event of the one event file in ``folder``, in order."""
    from tensorboardX.proto import event_pb2
    (path,) = folder.glob("events.out.tfevents.*")
    data, out, pos = path.read_bytes(), [], 0
    while pos < len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        assert struct.unpack_from("<I", data, pos + 8)[0] == _masked(data[pos:pos + 8])
        body = data[pos + 12:pos + 12 + n]
        assert struct.unpack_from("<I", data, pos + 12 + n)[0] == _masked(body)
        out.append(event_pb2.Event.FromString(body))
        pos += 16 + n
    assert out[0].file_version == "brain.Event:2"
    return out[1:]


def _values(folder):
    """[(step, Summary.Value)] of the event file in ``folder``."""
    return [(e.step, v) for e in _events(folder) for v in e.summary.value]


@pytest.fixture
def writer(tmp_path):
    pytest.importorskip("tensorboardX")
    from clgrad.utils.tensorboard import SummaryWriter
    return SummaryWriter(tmp_path)


def test_scalars_from_tensors_parameters_and_numbers(writer, tmp_path):
    p = nn.Parameter(clgrad.tensor(0.125))                    # requires grad: detached here
    with writer as w:
        w.add_scalar("loss", clgrad.tensor(0.5), 0)
        w.add_scalar("loss", p, clgrad.tensor(1))
        w.add_scalar("loss", 0.25, np.int64(2))
        w.add_scalar("loss", clgrad.tensor([3.5], dtype=clgrad.float64), 3)
        w.add_scalar("loss", clgrad.tensor(1.5, dtype=clgrad.bfloat16), 4)
    got = [(s, v.tag, v.simple_value) for s, v in _values(tmp_path)]
    assert got == [(0, "loss", 0.5), (1, "loss", 0.125), (2, "loss", 0.25), (3, "loss", 3.5),
                   (4, "loss", 1.5)]
    assert writer.get_logdir() == str(tmp_path)


def test_scalars_each_in_its_run(writer, tmp_path):
    with writer as w:
        w.add_scalars("acc", {"train": clgrad.tensor(0.75), "val": 0.5}, 7)
    for key, want in (("train", 0.75), ("val", 0.5)):
        ((step, v),) = _values(tmp_path / f"acc_{key}")
        assert (step, v.tag, v.simple_value) == (7, "acc", want)


def test_histogram_of_a_parameter(writer, tmp_path):
    values = np.random.default_rng(0).standard_normal((40, 25))
    w = nn.Parameter(clgrad.tensor(values))
    with writer as wr:
        wr.add_histogram("weights", w, 3)
        wr.add_histogram("ten", clgrad.tensor(values), 4, bins=10)
    (s3, h3), (s4, h4) = _values(tmp_path)
    assert (s3, s4) == (3, 4)
    for h in (h3.histo, h4.histo):
        assert h.num == values.size and h.min == values.min() and h.max == values.max()
        assert h.sum == pytest.approx(values.sum(), rel=1e-12)
        assert h.sum_squares == pytest.approx((values ** 2).sum(), rel=1e-12)
        assert sum(h.bucket) == values.size
    counts, edges = np.histogram(values, bins=10)   # an empty bucket first holds the left edge
    assert list(h4.histo.bucket) == [0, *counts]
    np.testing.assert_allclose(h4.histo.bucket_limit, edges, rtol=1e-12)


def test_images_chw_and_nchw_decode_to_the_pixels(writer, tmp_path):
    from PIL import Image
    rng = np.random.default_rng(1)
    chw = rng.uniform(0, 1, (3, 4, 5))
    nchw = rng.uniform(0, 1, (2, 3, 4, 5))
    with writer as w:
        w.add_image("img", clgrad.tensor(chw, dtype=clgrad.float32), 0)
        w.add_images("imgs", clgrad.tensor(nchw, dtype=clgrad.float32), 1)
        w.add_image("hwc", clgrad.tensor(chw.transpose(1, 2, 0).copy()), 2, dataformats="HWC")
    (_, img), (_, imgs), (_, hwc) = _values(tmp_path)
    px = np.asarray(Image.open(io.BytesIO(img.image.encoded_image_string)))
    assert (img.image.height, img.image.width, img.image.colorspace) == (4, 5, 3)
    want = np.clip(chw * 255 + 0.5, 0, 255).astype(np.uint8).transpose(1, 2, 0)  # [0,1]->255
    assert np.abs(px.astype(int) - want.astype(int)).max() <= 1
    grid = np.asarray(Image.open(io.BytesIO(imgs.image.encoded_image_string)))
    assert grid.shape[2] == 3 and grid.shape[0] >= 4 and grid.shape[1] >= 10  # 2 in a grid
    assert hwc.image.encoded_image_string == img.image.encoded_image_string


def test_text_embedding_and_generic_methods(writer, tmp_path):
    feats = clgrad.tensor(np.arange(12.0).reshape(4, 3))
    with writer as w:
        w.add_text("note", "hello **tensorboard**", 0)
        w.add_embedding(feats, metadata=["a", "b", "c", "d"], global_step=5, tag="emb")
        w.add_pr_curve("pr", clgrad.tensor([1, 0, 1, 1]), clgrad.tensor([0.9, 0.2, 0.6, 0.4]),
                       2)
    vals = {v.tag: (s, v) for s, v in _values(tmp_path)}
    assert vals["note/text_summary"][1].tensor.string_val == [b"hello **tensorboard**"]
    assert vals["pr"][0] == 2 and len(vals["pr"][1].tensor.float_val) > 0
    (tsv,) = tmp_path.glob("**/tensors.tsv")                       # the projector's matrix
    np.testing.assert_array_equal(np.loadtxt(tsv, ndmin=2), np.arange(12.0).reshape(4, 3))


def test_errors(writer):
    with pytest.raises(TypeError, match=r"add_scalar\(\): scalar_value: expected a number or a "
                       r"one-element tensor, got ndarray\(3,\)"):
        writer.add_scalar("x", clgrad.ones(3), 0)
    with pytest.raises(TypeError, match=r"add_scalars\(\): tag_scalar_dict"):
        writer.add_scalars("x", [1.0], 0)
    with pytest.raises(NotImplementedError, match="double_precision"):
        writer.add_scalar("x", 1.0, 0, double_precision=True)
    with pytest.raises(NotImplementedError, match="no tracer"):
        writer.add_graph(nn.Linear(2, 2), clgrad.ones(1, 2))
    with pytest.raises(AttributeError):
        writer.add_nothing_such
    writer.close()


def test_missing_tensorboardx_names_the_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)       # import fails
    from clgrad.utils.tensorboard import SummaryWriter
    with pytest.raises(ImportError, match=r"pip install tensorboardX"):
        SummaryWriter(tmp_path)
