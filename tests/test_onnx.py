"""load_onnx: models built with onnx.helper run in clgrad and match onnxruntime within 1e-4."""

import numpy as np
import pytest

import clgrad
from clgrad.io import load_onnx

onnx = pytest.importorskip("onnx", reason="ONNX loading needs the onnx package: pip install onnx")
ort = pytest.importorskip("onnxruntime", reason="the oracle: pip install onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx_pins import ONNX_IR_VERSION  # noqa: E402

RNG = np.random.default_rng(7)


# -- model building -------------------------------------------------------------------------

class Builder:
    """Nodes and initializers of one test model; ``save`` writes it with opset ``opset``,
    inputs [(name, shape)] and outputs [(name, rank)]."""

    def __init__(self):
        self.nodes, self.inits = [], []

    def init(self, name, shape, scale=0.3, offset=0.0):
        values = (RNG.standard_normal(shape) * scale + offset).astype(np.float32)
        self.inits.append(numpy_helper.from_array(values, name))
        return name

    def const(self, name, values):
        self.inits.append(numpy_helper.from_array(np.asarray(values), name))
        return name

    def node(self, op, inputs, output, **attrs):
        self.nodes.append(helper.make_node(op, inputs, [output], name=f"{op}_{output}", **attrs))
        return output

    def save(self, path, inputs, outputs, opset=17):
        graph = helper.make_graph(
            self.nodes, "test", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                                 for n, s in inputs],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, [None] * rank)
             for n, rank in outputs],
            self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = ONNX_IR_VERSION
        onnx.checker.check_model(model)
        onnx.save(model, str(path))
        return path


def strided(array):
    """A non-contiguous clgrad view (every other column of a wider storage) of ``array``."""
    wide = np.zeros(array.shape[:-1] + (2 * array.shape[-1] + 1,), array.dtype)
    wide[..., 1::2] = array
    return clgrad.from_numpy(wide)[..., 1::2]


def check(path, feeds, atol=1e-4):
    """Run the model in clgrad and onnxruntime on ``feeds``; compare every output."""
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    net = load_onnx(path)
    got = net(*(strided(v) for v in feeds.values()))
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == w.shape
        np.testing.assert_allclose(g.detach().numpy(), w, rtol=1e-4, atol=atol)
    return net


# -- whole models ---------------------------------------------------------------------------

def test_convnet_grouped_depthwise_lrn_pools_bn_gemm_softmax(tmp_path):
    b = Builder()
    y = b.node("Conv", ["x", b.init("w1", (8, 2, 3, 3)), b.init("b1", (8,))], "c1", group=2,
               pads=[1, 1, 1, 1], strides=[2, 1])
    y = b.node("Relu", [y], "r1")
    y = b.node("LRN", [y], "n1", size=5, alpha=1e-2, beta=0.75, bias=2.0)
    y = b.node("MaxPool", [y], "p1", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    y = b.node("Conv", [y, b.init("w2", (8, 1, 3, 3))], "c2", group=8, pads=[0, 1, 1, 0])
    y = b.node("LeakyRelu", [y], "l2", alpha=0.1)
    y = b.node("AveragePool", [y], "p2", kernel_shape=[2, 2], strides=[1, 1], pads=[1, 1, 1, 1],
               count_include_pad=1, ceil_mode=1)
    y = b.node("BatchNormalization", [y, b.init("g", (8,), 0.2, 1.0), b.init("be", (8,)),
                                      b.init("m", (8,)), b.init("v", (8,), 0.1, 1.0)], "bn",
               epsilon=1e-3)
    y = b.node("Conv", [y, b.init("w3", (6, 4, 3, 3)), b.init("b3", (6,))], "c3", group=2,
               auto_pad="SAME_UPPER", strides=[2, 2])
    y = b.node("GlobalAveragePool", [y], "gap")
    y = b.node("Flatten", [y], "flat")
    y = b.node("Gemm", [y, b.init("fw", (5, 6)), b.init("fb", (5,))], "fc", transB=1)
    b.node("Softmax", [y], "prob", axis=1)
    path = b.save(tmp_path / "convnet.onnx", [("x", [2, 4, 15, 13])], [("prob", 2)])
    x = RNG.standard_normal((2, 4, 15, 13)).astype(np.float32)
    net = check(path, {"x": x})
    # native groups: ONE weight tensor per conv, never a block-diagonal dense one
    assert net.Conv_c1.groups == 2 and tuple(net.Conv_c1.weight.shape) == (8, 2, 3, 3)
    assert net.Conv_c2.groups == 8 and tuple(net.Conv_c2.weight.shape) == (8, 1, 3, 3)
    assert net.Conv_c3.groups == 2 and tuple(net.Conv_c3.weight.shape) == (6, 4, 3, 3)


def test_branches_concat_add_mul_matmul_reshape_gemm(tmp_path):
    b = Builder()
    left = b.node("Conv", ["x", b.init("wl", (3, 2, 1, 1))], "left")
    right = b.node("Conv", ["x", b.init("wr", (2, 2, 3, 3)), b.init("br", (2,))], "right",
                   pads=[1, 1, 1, 1])
    y = b.node("Concat", [left, right], "cat", axis=1)
    y = b.node("Add", [y, b.init("shift", (5, 1, 1))], "add")
    y = b.node("Mul", [y, b.init("gain", (1, 5, 1, 4))], "mul")
    y = b.node("Identity", [y], "ident")
    y = b.node("Dropout", [y], "drop")
    y = b.node("Reshape", [y, b.const("shape", np.array([0, -1], np.int64))], "flat")
    y = b.node("MatMul", [y, b.init("mm", (60, 7))], "mm_out")
    y = b.node("Relu", [y], "relu")
    y = b.node("Gemm", [y, b.init("gw", (2, 7)), b.init("gc", (7, 1))], "gemm", transA=1,
               alpha=0.5, beta=2.0)
    b.node("Softmax", [y], "prob", axis=1)
    path = b.save(tmp_path / "branches.onnx", [("x", [2, 2, 3, 4])], [("prob", 2), ("cat", 4)],
                  opset=11)
    x = RNG.standard_normal((2, 2, 3, 4)).astype(np.float32)
    net = check(path, {"x": x})
    assert {"shift", "gain", "mm", "gw", "gc"} <= set(net.state_dict())


def test_softmax_before_opset_13_flattens_to_2d(tmp_path):
    b = Builder()
    b.node("Softmax", ["x"], "y", axis=1)
    path = b.save(tmp_path / "softmax11.onnx", [("x", [2, 3, 2, 2])], [("y", 4)], opset=11)
    check(path, {"x": RNG.standard_normal((2, 3, 2, 2)).astype(np.float32)})


POOLS = [  # op, attributes; input (2, 3, 9, 10)
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)),
    ("MaxPool", dict(kernel_shape=[2, 3], strides=[2, 2], pads=[0, 0, 1, 2])),
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 3], pads=[2, 2, 2, 2], ceil_mode=1)),
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], dilations=[2, 2])),
    ("MaxPool", dict(kernel_shape=[3, 2], strides=[2, 2], auto_pad="SAME_UPPER")),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1,
                         count_include_pad=1)),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[3, 3], ceil_mode=1)),
    ("AveragePool", dict(kernel_shape=[3, 4], strides=[2, 2], pads=[1, 0, 2, 1])),
    ("AveragePool", dict(kernel_shape=[3, 4], strides=[2, 2], pads=[1, 0, 2, 1],
                         count_include_pad=1)),
    ("AveragePool", dict(kernel_shape=[2, 2], strides=[2, 2], auto_pad="SAME_LOWER")),
]


@pytest.mark.parametrize("op,attrs", POOLS)
def test_pooling_windows(tmp_path, op, attrs):
    b = Builder()
    b.node(op, ["x"], "y", **attrs)
    path = b.save(tmp_path / "pool.onnx", [("x", [2, 3, 9, 10])], [("y", 4)])
    check(path, {"x": RNG.standard_normal((2, 3, 9, 10)).astype(np.float32)})


@pytest.mark.parametrize("size", [1, 3, 5])
def test_lrn_odd_sizes(tmp_path, size):
    b = Builder()
    b.node("LRN", ["x"], "y", size=size, alpha=0.05, beta=0.6, bias=1.5)
    path = b.save(tmp_path / "lrn.onnx", [("x", [2, 6, 3, 4])], [("y", 4)])
    check(path, {"x": RNG.standard_normal((2, 6, 3, 4)).astype(np.float32) * 2})


@pytest.mark.parametrize("size", [2, 4])
def test_lrn_even_sizes_follow_the_onnx_window(tmp_path, size):
    """onnxruntime refuses even sizes; the oracle is the spec's formula: channels
    c - floor((size-1)/2) .. c + ceil((size-1)/2)."""
    b = Builder()
    b.node("LRN", ["x"], "y", size=size, alpha=0.05, beta=0.6, bias=1.5)
    path = b.save(tmp_path / "lrn.onnx", [("x", [2, 6, 3, 4])], [("y", 4)])
    x = RNG.standard_normal((2, 6, 3, 4)) * 2
    sq = np.pad(x * x, ((0, 0), ((size - 1) // 2, size // 2), (0, 0), (0, 0)))
    total = sum(sq[:, i:i + 6] for i in range(size))
    want = x / (1.5 + 0.05 / size * total) ** 0.6
    got = load_onnx(path)(strided(x.astype(np.float32))).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_gradients_flow_through_a_loaded_model(tmp_path):
    b = Builder()
    y = b.node("Conv", ["x", b.init("w", (4, 1, 3, 3)), b.init("bias", (4,))], "c", group=2,
               pads=[1, 1, 1, 1])
    y = b.node("MaxPool", [y], "p", kernel_shape=[2, 2], strides=[2, 2])
    b.node("Gemm", [b.node("Flatten", [y], "f"), b.init("fw", (3, 16))], "out", transB=1)
    path = b.save(tmp_path / "grad.onnx", [("x", [1, 2, 4, 4])], [("out", 2)])
    net = load_onnx(path)
    out = net(RNG.standard_normal((1, 2, 4, 4)).astype(np.float32))
    out.sum().backward()
    assert tuple(net.Conv_c.weight.grad.shape) == (4, 1, 3, 3)
    assert tuple(net.fw.grad.shape) == (3, 16)


# -- errors ---------------------------------------------------------------------------------

def test_unsupported_ops_are_listed_together(tmp_path):
    b = Builder()
    y = b.node("Sigmoid", ["x"], "s")
    y = b.node("Tanh", [y], "t")
    y = b.node("Relu", [y], "r")
    b.node("Sigmoid", [y], "y")
    path = b.save(tmp_path / "unsupported.onnx", [("x", [1, 2])], [("y", 2)])
    with pytest.raises(NotImplementedError) as info:
        load_onnx(path)
    message = str(info.value)
    assert "2 unsupported op type(s)" in message
    assert "Sigmoid (nodes: Sigmoid_s, Sigmoid_y)" in message and "Tanh (nodes: Tanh_t)" in message


def test_conv_weight_fed_as_a_graph_input(tmp_path):
    """Once refused; now read at run time (more in tests/test_onnx_inputs.py)."""
    b = Builder()
    b.node("Conv", ["x", "w"], "y")
    path = b.save(tmp_path / "dynamic.onnx", [("x", [1, 2, 4, 4]), ("w", [3, 2, 3, 3])], [("y", 4)])
    check(path, {"x": RNG.standard_normal((1, 2, 4, 4)).astype(np.float32),
                 "w": RNG.standard_normal((3, 2, 3, 3)).astype(np.float32)})


def test_truncated_and_corrupted_files(tmp_path):
    b = Builder()
    b.node("Conv", ["x", b.init("w", (4, 2, 3, 3))], "y")
    path = b.save(tmp_path / "good.onnx", [("x", [1, 2, 5, 5])], [("y", 4)])
    data = path.read_bytes()
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="load_onnx: .*truncated.onnx"):
        load_onnx(truncated)
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\xff" * 64 + data[64:])
    with pytest.raises(ValueError, match="load_onnx: .*garbage.onnx"):
        load_onnx(garbage)
    with pytest.raises(FileNotFoundError):
        load_onnx(tmp_path / "missing.onnx")
