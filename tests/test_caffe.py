"""load_caffe: prototxt + caffemodel files written here -> a clgrad Module whose forward equals
the NumPy float64 forward of tests/caffe_reference.py; grouped convs stay grouped."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import caffe_reference as ref
import clgrad
from clgrad.io import load_caffe
from clgrad.io.caffe_net import describe_net
from clgrad.io.caffemodel import blobs_by_name, decode_caffemodel, encode_caffemodel
from clgrad.io.prototxt import parse_prototxt
from test_caffe_format import LEGACY_INPUT_DIM, MODERN_INPUT, SMALL, alexnet
from subproc import checkout_env

ROOT = Path(__file__).resolve().parents[1]


def alexnet_blobs(d, rng):
    """Caffe-layout blobs of the AlexNet-shaped net with dims ``d`` (test_caffe_format),
    written out by hand: grouped layers hold (C_out, C_in / 2, k, k)."""
    side = (d["size"] - 11) // 4 + 1  # conv1; conv2-5 keep the size; pool1, pool2, pool5:
    for _ in range(3):
        side = ref.pooled_size(side, 3, 2, 0, ceil_mode=True)
    shapes = {"conv1": (d["c1"], 3, 11, 11), "conv2": (d["c2"], d["c1"] // 2, 5, 5),
              "conv3": (d["c3"], d["c2"], 3, 3), "conv4": (d["c4"], d["c3"] // 2, 3, 3),
              "conv5": (d["c5"], d["c4"] // 2, 3, 3), "fc6": (d["f6"], d["c5"] * side * side),
              "fc7": (d["f7"], d["f6"]), "fc8": (d["f8"], d["f7"])}
    return [random_layer(name, shape, rng) for name, shape in shapes.items()]


def random_layer(name, weight_shape, rng, bias=True, type_="Convolution"):
    fan_in = int(np.prod(weight_shape[1:]))
    blobs = [rng.standard_normal(weight_shape).astype(np.float32) * (2.0 / fan_in) ** 0.5]
    if bias:
        blobs.append(rng.standard_normal(weight_shape[0]).astype(np.float32) * 0.1)
    if name.startswith("fc") or name.startswith("ip"):
        type_ = "InnerProduct"
    return {"name": name, "type": type_, "blobs": blobs}


def write(tmp_path, text, layers, **encode):
    proto, model = tmp_path / "net.prototxt", tmp_path / "net.caffemodel"
    proto.write_text(text)
    model.write_bytes(encode_caffemodel(layers, **encode))
    return proto, model


def strided(array):
    """A non-contiguous clgrad view (every other row of a taller storage) of ``array``."""
    tall = np.zeros(array.shape[:-2] + (2 * array.shape[-2],) + array.shape[-1:], array.dtype)
    tall[..., ::2, :] = array
    return clgrad.from_numpy(tall)[..., ::2, :]


def assert_matches_reference(proto, model, inputs, rtol=1e-4):
    """Every blob of the loaded net equals the float64 reference forward of the same files."""
    layers = describe_net(parse_prototxt(proto.read_text()))
    blobs = blobs_by_name(decode_caffemodel(model.read_bytes()))
    want = ref.forward(layers, inputs, blobs)
    net = load_caffe(proto, model)
    got = net.run({name: strided(x.astype(np.float32)) for name, x in inputs.items()})
    assert set(got) == set(want)
    for name, value in got.items():
        scale = np.abs(want[name]).max() + 1e-12
        np.testing.assert_allclose(value.detach().numpy(), want[name], rtol=rtol, atol=rtol * scale,
                                   err_msg=f"blob {name}")
    return net


# -- AlexNet-shaped: group=2, LRN, ceil-mode pooling, in-place ReLU/Dropout, InnerProduct ------

@pytest.mark.parametrize("v1", [False, True], ids=["current", "v1_legacy4d"])
def test_alexnet_matches_reference_with_native_groups(tmp_path, v1):
    rng = np.random.default_rng(1)
    blobs = alexnet_blobs(SMALL, rng)
    text = alexnet(LEGACY_INPUT_DIM if v1 else MODERN_INPUT, SMALL)
    proto, model = write(tmp_path, text, blobs, v1=v1,
                         blob_format="legacy4d" if v1 else "packed")
    x = rng.standard_normal((2, 3, SMALL["size"], SMALL["size"])) * 50
    net = assert_matches_reference(proto, model, {"data": x})
    for name, groups in (("conv1", 1), ("conv2", 2), ("conv3", 1), ("conv4", 2), ("conv5", 2)):
        conv = getattr(net, name)
        assert isinstance(conv, clgrad.nn.Conv2d) and conv.groups == groups
        want = next(b["blobs"][0] for b in blobs if b["name"] == name)
        assert tuple(conv.weight.shape) == want.shape  # (C_out, C_in / group, k, k): not dense
        np.testing.assert_array_equal(conv.weight.detach().numpy(), want)
    assert net.output_names == ["prob"] and net.input_names == ["data"]
    assert list(net.state_dict())[:4] == ["conv1.weight", "conv1.bias", "conv2.weight",
                                          "conv2.bias"]
    assert tuple(net.fc6.weight.shape) == blobs[5]["blobs"][0].shape
    prob = net(x.astype(np.float32))
    assert tuple(prob.shape) == (2, SMALL["f8"])


def test_prototxt_alone_gives_a_default_initialized_net(tmp_path):
    proto = tmp_path / "net.prototxt"
    proto.write_text(alexnet(dims=SMALL))
    net = load_caffe(proto)
    assert tuple(net.conv2.weight.shape) == (SMALL["c2"], SMALL["c1"] // 2, 5, 5)
    prob = net(np.zeros((1, 3, SMALL["size"], SMALL["size"]), np.float32)).detach().numpy()
    np.testing.assert_allclose(prob.sum(axis=1), 1.0, rtol=1e-5)


# -- Concat, Eltwise, padded AVE and global pooling, depthwise, two outputs --------------------

BRANCHES = """
name: "branches"
input: "data"
input_shape { dim: 2 dim: 4 dim: 9 dim: 9 }
layer { name: "b1" type: "Convolution" bottom: "data" top: "b1"
        convolution_param { num_output: 4 kernel_size: 1 } }
layer { name: "b2" type: "Convolution" bottom: "data" top: "b2"
        convolution_param { num_output: 6 kernel_size: 3 pad: 1 group: 2 } }
layer { name: "b2_relu" type: "ReLU" bottom: "b2" top: "b2" relu_param { negative_slope: 0.1 } }
layer { name: "b3" type: "Pooling" bottom: "data" top: "b3"
        pooling_param { pool: MAX kernel_size: 3 stride: 1 pad: 1 } }
layer { name: "cat" type: "Concat" bottom: "b1" bottom: "b2" bottom: "b3" top: "cat" }
layer { name: "dw" type: "Convolution" bottom: "cat" top: "dw"
        convolution_param { num_output: 14 kernel_size: 3 pad: 1 group: 14 bias_term: false } }
layer { name: "mix" type: "Eltwise" bottom: "cat" bottom: "dw" top: "mix"
        eltwise_param { operation: SUM coeff: 1 coeff: -0.5 } }
layer { name: "mx" type: "Eltwise" bottom: "mix" bottom: "cat" top: "mx"
        eltwise_param { operation: MAX } }
layer { name: "side" type: "Pooling" bottom: "mx" top: "side"
        pooling_param { pool: MAX global_pooling: true } }
layer { name: "avg" type: "Pooling" bottom: "mx" top: "avg"
        pooling_param { pool: AVE kernel_size: 3 stride: 2 pad: 1 } }
layer { name: "gap" type: "Pooling" bottom: "avg" top: "gap"
        pooling_param { pool: AVE global_pooling: true } }
layer { name: "flat" type: "Flatten" bottom: "gap" top: "flat" }
layer { name: "ip" type: "InnerProduct" bottom: "flat" top: "ip"
        inner_product_param { num_output: 5 } }
layer { name: "prob" type: "Softmax" bottom: "ip" top: "prob" }
"""


def test_concat_eltwise_pooling_net_matches_reference(tmp_path):
    rng = np.random.default_rng(2)
    blobs = [random_layer("b1", (4, 4, 1, 1), rng), random_layer("b2", (6, 2, 3, 3), rng),
             random_layer("dw", (14, 1, 3, 3), rng, bias=False),
             random_layer("ip", (5, 14), rng)]
    proto, model = write(tmp_path, BRANCHES, blobs)
    x = rng.standard_normal((2, 4, 9, 9))
    net = assert_matches_reference(proto, model, {"data": x})
    assert net.output_names == ["side", "prob"]
    side, prob = net(x.astype(np.float32))
    assert tuple(side.shape) == (2, 14, 1, 1) and tuple(prob.shape) == (2, 5)
    assert net.dw.groups == 14 and tuple(net.dw.weight.shape) == (14, 1, 3, 3)


# -- BatchNorm + Scale, WITHIN_CHANNEL LRN, pooling padded past half the kernel ---------------

BN_SCALE = """
name: "bn"
layer { name: "data" type: "Input" top: "data"
        input_param { shape { dim: 3 dim: 3 dim: 10 dim: 11 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 5 kernel_size: 3 pad: 1 bias_term: false } }
layer { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "conv1"
        batch_norm_param { eps: 0.001 } }
layer { name: "sc1" type: "Scale" bottom: "conv1" top: "conv1" scale_param { bias_term: true } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "norm" type: "LRN" bottom: "conv1" top: "norm"
        lrn_param { local_size: 3 alpha: 0.5 beta: 0.75 norm_region: WITHIN_CHANNEL } }
layer { name: "pool1" type: "Pooling" bottom: "norm" top: "pool1"
        pooling_param { pool: AVE kernel_size: 3 stride: 2 pad: 2 } }
layer { name: "pool2" type: "Pooling" bottom: "pool1" top: "pool2"
        pooling_param { pool: MAX kernel_size: 2 stride: 2 pad: 1 } }
layer { name: "ip" type: "InnerProduct" bottom: "pool2" top: "ip"
        inner_product_param { num_output: 7 } }
layer { name: "bn2" type: "BatchNorm" bottom: "ip" top: "bn2" }
layer { name: "sc2" type: "Scale" bottom: "bn2" top: "bn2" scale_param { bias_term: true } }
layer { name: "prob" type: "Softmax" bottom: "bn2" top: "prob" }
"""


def test_batchnorm_scale_net_matches_reference(tmp_path):
    rng = np.random.default_rng(3)

    def stats(c, factor):
        mean, var = rng.standard_normal(c), rng.uniform(0.5, 2.0, c)
        return [(mean * factor).astype(np.float32), (var * factor).astype(np.float32),
                np.array([factor], np.float32)]

    def scale(c):
        return [rng.uniform(0.5, 1.5, c).astype(np.float32),
                rng.standard_normal(c).astype(np.float32)]

    def pooled(side):  # pool1 then pool2
        return ref.pooled_size(ref.pooled_size(side, 3, 2, 2, True), 2, 2, 1, True)

    pool2 = pooled(10), pooled(11)
    blobs = [random_layer("conv1", (5, 3, 3, 3), rng, bias=False),
             {"name": "bn1", "type": "BatchNorm", "blobs": stats(5, 2.5)},
             {"name": "sc1", "type": "Scale", "blobs": scale(5)},
             random_layer("ip", (7, 5 * pool2[0] * pool2[1]), rng),
             {"name": "bn2", "type": "BatchNorm", "blobs": stats(7, 0.0)},  # s = 0: stats 0
             {"name": "sc2", "type": "Scale", "blobs": scale(7)}]
    proto, model = write(tmp_path, BN_SCALE, blobs)
    net = assert_matches_reference(proto, model, {"data": rng.standard_normal((3, 3, 10, 11))})
    np.testing.assert_allclose(net.bn1.running_mean.numpy(), blobs[1]["blobs"][0] / 2.5,
                               rtol=1e-6)
    assert list(net.bn2.running_var.numpy()) == [0.0] * 7


# -- errors ---------------------------------------------------------------------------------

def test_truncated_and_corrupted_caffemodels_raise_clear_errors(tmp_path):
    rng = np.random.default_rng(4)
    proto, model = write(tmp_path, alexnet(dims=SMALL), alexnet_blobs(SMALL, rng))
    data = model.read_bytes()
    model.write_bytes(data[:len(data) * 2 // 3])
    with pytest.raises(ValueError, match=r"load_caffe: .*net.caffemodel: caffemodel: byte \d+: "
                                         r".*truncated"):
        load_caffe(proto, model)
    corrupt = bytearray(data)
    corrupt[0] = 0x07  # field 0, wire type 7: not a protobuf tag
    model.write_bytes(bytes(corrupt))
    with pytest.raises(ValueError, match=r"caffemodel: byte 0: NetParameter: expected a field "
                                         r"number"):
        load_caffe(proto, model)


def test_unknown_layer_type_names_the_layer(tmp_path):
    text = alexnet(dims=SMALL).replace('name: "relu3" type: "ReLU"', 'name: "relu3" type: "Swish"')
    proto = tmp_path / "net.prototxt"
    proto.write_text(text)
    with pytest.raises(ValueError, match=r"net.prototxt: describe_net: layer 'relu3' \(type "
                                         r"Swish\): unsupported layer type 'Swish'"):
        load_caffe(proto)


def test_blob_shape_mismatch_names_layer_and_shapes(tmp_path):
    rng = np.random.default_rng(5)
    blobs = alexnet_blobs(SMALL, rng)
    o, half = SMALL["c2"], SMALL["c1"] // 2
    blobs[1]["blobs"][0] = np.zeros((o, 2 * half, 5, 5), np.float32)  # a densified weight
    proto, model = write(tmp_path, alexnet(dims=SMALL), blobs)
    expected = (rf"layer 'conv2' \(Convolution\): expected the weight blob of shape "
                rf"\({o}, {half}, 5, 5\) \(num_output {o}, {2 * half} input channels / group 2,"
                rf" kernel 5x5\), got shape \({o}, {2 * half}, 5, 5\)")
    with pytest.raises(ValueError, match=expected):
        load_caffe(proto, model)


@pytest.mark.parametrize("change,message", [
    (lambda blobs: blobs.pop(6), r"layer 'fc7' \(InnerProduct\): expected 2 blobs \(weight, "
                                 r"bias\) in the caffemodel, got no layer named 'fc7'"),
    (lambda blobs: blobs[0]["blobs"].pop(), r"layer 'conv1' \(Convolution\): expected 2 blobs "
                                            r"\(weight, bias\), got 1 with shapes"),
])
def test_missing_blobs_are_errors(tmp_path, change, message):
    blobs = alexnet_blobs(SMALL, np.random.default_rng(6))
    change(blobs)
    proto, model = write(tmp_path, alexnet(dims=SMALL), blobs)
    with pytest.raises(ValueError, match=message):
        load_caffe(proto, model)


def test_runtime_shape_errors_name_the_layer(tmp_path):
    proto, model = write(tmp_path, alexnet(dims=SMALL),
                         alexnet_blobs(SMALL, np.random.default_rng(7)))
    net = load_caffe(proto, model)
    with pytest.raises(RuntimeError, match=r"layer 'fc6' \(InnerProduct\): linear: "):
        net(np.zeros((1, 3, 131, 131), np.float32))  # pool5 3x3, not 2x2


# -- the example ----------------------------------------------------------------------------

def test_example_classifies_an_image(tmp_path):
    rng = np.random.default_rng(8)
    proto, model = write(tmp_path, alexnet(dims=SMALL), alexnet_blobs(SMALL, rng))
    image = tmp_path / "image.npy"
    np.save(image, rng.integers(0, 256, (40, 50, 3)).astype(np.uint8))
    labels = tmp_path / "synset_words.txt"
    labels.write_text("".join(f"n{i:08d} class number {i}\n" for i in range(SMALL["f8"])))
    cmd = [sys.executable, str(ROOT / "examples" / "caffe_alexnet.py"), str(proto), str(model),
           str(image), "--labels", str(labels), "--resize", "80"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    ranked = [line for line in lines if line[:2] in ("1.", "2.", "3.", "4.", "5.")]
    assert len(ranked) == 5 and "class number" in ranked[0], out.stdout
    assert any(line.startswith("load: ") and "forward: first" in line for line in lines)


def test_example_with_missing_files_is_one_usage_line(tmp_path):
    proto = tmp_path / "deploy.prototxt"
    proto.write_text("name: 'x'\n")
    cmd = [sys.executable, str(ROOT / "examples" / "caffe_alexnet.py"), str(proto),
           str(tmp_path / "bvlc_alexnet.caffemodel"), str(tmp_path / "cat.jpg")]
    env = checkout_env()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.splitlines()[-1] == (
        f"caffe_alexnet.py: error: no such file: CAFFEMODEL {tmp_path}/bvlc_alexnet.caffemodel, "
        f"IMAGE {tmp_path}/cat.jpg (--help shows how to download BVLC AlexNet's "
        f"deploy.prototxt, weights and labels)")
    helped = subprocess.run(cmd[:2] + ["--help"], capture_output=True, text=True, timeout=120,
                            env=env)
    assert helped.returncode == 0 and "wget http://dl.caffe.berkeleyvision.org/" in helped.stdout
