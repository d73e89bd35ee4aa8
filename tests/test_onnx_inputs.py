"""load_onnx: Dropout's training_mode, float64 kept as float64, and weights, statistics and
shapes fed as graph inputs. Oracles: NumPy float64 and hand values (always), onnxruntime where
installed (the reference runtime)."""
import numpy as np
import pytest

import clgrad
from clgrad.io import load_onnx

onnx = pytest.importorskip("onnx", reason="ONNX loading needs the onnx package: pip install onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

RNG = np.random.default_rng(12)
F32, F64, I64, BOOL = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64, TensorProto.BOOL


def save(path, nodes, inputs, outputs, inits=(), opset=17):
    """A model of ``nodes`` with inputs/outputs [(name, elem type, shape)], IR version 8."""
    graph = helper.make_graph(
        nodes, "t", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def ort_run(path, feeds):
    ort = pytest.importorskip("onnxruntime")
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)


def conv_ref(x, w, b, pads, stride=1):
    """Direct float64 cross-correlation with (top, left, bottom, right) zero padding."""
    t, l, bo, r = pads
    xp = np.pad(x, ((0, 0), (0, 0), (t, bo), (l, r)))
    n, c, h, wd = xp.shape
    o, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out + (b.reshape(1, -1, 1, 1) if b is not None else 0)


# -- Dropout training_mode ----------------------------------------------------------------------
@pytest.mark.parametrize("as_input", [False, True])
def test_dropout_training_mode_true_applies_dropout(tmp_path, as_input):
    node = helper.make_node("Dropout", ["x", "ratio", "mode"], ["y"])
    inputs = [("x", F32, [100, 100])]
    inits = [("ratio", np.array(0.25, np.float32))]
    if as_input:
        inputs.append(("mode", BOOL, []))
    else:
        inits.append(("mode", np.array(True)))
    path = save(tmp_path / "d.onnx", [node], inputs, [("y", F32, [100, 100])], inits)
    net = load_onnx(path)
    x = np.ones((100, 100), np.float32)
    feeds = [x, np.array(True)] if as_input else [x]
    y = net(*feeds).numpy()
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)       # survivors scaled
    assert abs(kept.mean() - 0.75) < 0.02                           # 10 000 draws
    if as_input:                                                    # false: the identity
        np.testing.assert_array_equal(net(x, np.array(False)).numpy(), x)


def test_dropout_training_mode_false_or_absent_is_identity(tmp_path):
    nodes = [helper.make_node("Dropout", ["x", "ratio", "mode"], ["h"]),
             helper.make_node("Dropout", ["h"], ["y"])]
    path = save(tmp_path / "d.onnx", nodes, [("x", F32, [3, 4])], [("y", F32, [3, 4])],
                [("ratio", np.array(0.5, np.float32)), ("mode", np.array(False))])
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_array_equal(load_onnx(path)(x).numpy(), x)


# -- float64 is kept ----------------------------------------------------------------------------
def test_float64_inputs_and_initializers_stay_float64(tmp_path):
    if not clgrad.default_device().fp64:
        pytest.skip("the device has no float64")
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]),
             helper.make_node("Mul", ["s", "k"], ["y"])]
    path = save(tmp_path / "f64.onnx", nodes, [("a", F64, [1, 2]), ("b", F64, [2])],
                [("y", F64, [1, 2])], [("k", np.array([1e-300, 3.0]))])
    a, b = np.array([[1e200, 2.0]]), np.array([1.0, 1e-310])
    y = load_onnx(path)(a, b)
    assert y.dtype == clgrad.float64
    np.testing.assert_array_equal(y.detach().numpy(),
                                  (a + b) * [1e-300, 3.0])  # 1e-100, 6: no inf/0
    try:
        np.testing.assert_array_equal(ort_run(path, {"a": a, "b": b})[0], y.detach().numpy())
    except pytest.skip.Exception:
        pass


def test_float64_conv_and_batchnorm_weights_stay_float64(tmp_path):
    if not clgrad.default_device().fp64:
        pytest.skip("the device has no float64")
    w = RNG.standard_normal((3, 2, 3, 3)) * 1e-200      # would flush to 0 in float32
    stats = [RNG.standard_normal(3), RNG.standard_normal(3) * 1e-200,   # scale, B, mean, var
             RNG.standard_normal(3) * 1e-200, RNG.random(3) + 0.5]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["y"],
                              epsilon=1e-3)]   # (an ONNX float attribute is float32)
    path = save(tmp_path / "c64.onnx", nodes, [("x", F64, [1, 2, 4, 4])],
                [("y", F64, [1, 3, 4, 4])],
                [("w", w)] + list(zip(("s", "bb", "m", "v"), stats)))
    x = RNG.standard_normal((1, 2, 4, 4))
    y = load_onnx(path)(x)
    assert y.dtype == clgrad.float64
    c = conv_ref(x, w, None, (1, 1, 1, 1))
    s, bb, m, v = (a.reshape(1, 3, 1, 1) for a in stats)
    eps = float(np.float32(1e-3))
    np.testing.assert_allclose(y.detach().numpy(), (c - m) / np.sqrt(v + eps) * s + bb, rtol=1e-9)


# -- weights as graph inputs ----------------------------------------------------------------
@pytest.mark.parametrize("attrs, pads", [
    ({"pads": [1, 0, 1, 2]}, (1, 0, 1, 2)),                 # asymmetric: a pad step first
    ({"auto_pad": "SAME_UPPER"}, (1, 1, 1, 1)),
    ({}, (0, 0, 0, 0)),
])
def test_conv_weight_and_bias_as_graph_inputs(tmp_path, attrs, pads):
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)
    path = save(tmp_path / "c.onnx", [node], [("x", F32, [2, 2, 5, 5]),
                                              ("w", F32, [3, 2, 3, 3]), ("b", F32, [3])],
                [("y", F32, [None] * 4)])
    x = RNG.standard_normal((2, 2, 5, 5)).astype(np.float32)
    w = RNG.standard_normal((3, 2, 3, 3)).astype(np.float32)
    b = RNG.standard_normal(3).astype(np.float32)
    net = load_onnx(path)
    y = net(x, w, b)
    np.testing.assert_allclose(y.numpy(), conv_ref(x, w, b, pads), rtol=1e-4, atol=1e-5)
    w2 = w * 2                                              # really read at run time
    np.testing.assert_allclose(net(x, w2, b).numpy(), conv_ref(x, w2, b, pads), rtol=1e-4,
                               atol=1e-5)
    try:
        np.testing.assert_allclose(y.numpy(), ort_run(path, {"x": x, "w": w, "b": b})[0],
                                   rtol=1e-4, atol=1e-5)
    except pytest.skip.Exception:
        pass


def test_conv_gradient_reaches_a_weight_given_as_input(tmp_path):
    node = helper.make_node("Conv", ["x", "w"], ["y"], group=2)
    path = save(tmp_path / "g.onnx", [node], [("x", F32, [1, 4, 3, 3]),
                                              ("w", F32, [2, 2, 1, 1])], [("y", F32, [None] * 4)])
    x = clgrad.tensor(RNG.standard_normal((1, 4, 3, 3)).astype(np.float32))
    w = clgrad.tensor(RNG.standard_normal((2, 2, 1, 1)).astype(np.float32),
                      requires_grad=True)
    load_onnx(path)(x, w).sum().backward()
    xs = x.numpy().sum(axis=(2, 3))[0]                       # d sum / d w[o, c] = sum x[g, c]
    np.testing.assert_allclose(w.grad.numpy()[:, :, 0, 0], [xs[0:2], xs[2:4]], rtol=1e-5)


def test_batchnorm_statistics_as_graph_inputs(tmp_path):
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"],
                            epsilon=1e-3)
    path = save(tmp_path / "bn.onnx", [node],
                [("x", F32, [2, 3, 2, 2]), ("m", F32, [3]), ("v", F32, [3])],
                [("y", F32, [2, 3, 2, 2])],
                [("s", np.array([1.0, 2.0, -1.0], np.float32)),
                 ("b", np.array([0.0, 0.5, 1.0], np.float32))])
    x = RNG.standard_normal((2, 3, 2, 2)).astype(np.float32)
    m, v = np.array([0.1, -0.2, 0.3], np.float32), np.array([1.0, 0.5, 2.0], np.float32)
    y = load_onnx(path)(x, m, v).detach().numpy()
    r = lambda a: a.reshape(1, 3, 1, 1).astype(np.float64)  # noqa: E731
    ref = (x - r(m)) / np.sqrt(r(v) + 1e-3) * r(np.array([1.0, 2.0, -1.0])) + \
        r(np.array([0.0, 0.5, 1.0]))
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


def test_reshape_shape_as_graph_input(tmp_path):
    node = helper.make_node("Reshape", ["x", "shape"], ["y"])
    path = save(tmp_path / "r.onnx", [node], [("x", F32, [2, 3, 4]), ("shape", I64, [3])],
                [("y", F32, [None] * 3)])
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    net = load_onnx(path)
    y = net(x, np.array([0, -1, 2], np.int64))              # 0 copies the dim, -1 is inferred
    np.testing.assert_array_equal(y.numpy(), x.reshape(2, 6, 2))
    np.testing.assert_array_equal(net(x, np.array([4, 3, 2])).numpy(), x.reshape(4, 3, 2))
    with pytest.raises(ValueError, match="1-D integer shape tensor"):
        net(x, clgrad.tensor([[1.0]]))


def test_refusals_are_clear(tmp_path, monkeypatch):
    node = helper.make_node("Conv", ["x", "w"], ["y"])
    path = save(tmp_path / "c3.onnx", [node], [("x", F32, [1, 1, 4, 4, 4]),
                                               ("w", F32, [1, 1, 2, 2, 2])],
                [("y", F32, [None] * 5)])
    net = load_onnx(path)
    with pytest.raises(NotImplementedError, match=r"node 'Conv_0' \(Conv\): .*2-D convolution"):
        net(np.ones((1, 1, 4, 4, 4), np.float32), np.ones((1, 1, 2, 2, 2), np.float32))
    add = helper.make_node("Add", ["a", "k"], ["y"])
    path = save(tmp_path / "f64.onnx", [add], [("a", F64, [2])], [("y", F64, [2])],
                [("k", np.ones(2))])
    monkeypatch.setattr(clgrad.default_device(), "fp64", False)    # a device without fp64
    with pytest.raises(TypeError, match=r"float64 \(k, a\).*lacks cl_khr_fp64.*not narrow"):
        load_onnx(path)
