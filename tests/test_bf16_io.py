"""bfloat16 in clgrad's file formats: PyTorch's zip checkpoints (clgrad/io/torch_format.py),
clgrad's safetensors checkpoints (clgrad/io/checkpoint.py) and ONNX initializers.

Oracles: hand-made bytes (bfloat16 bits of known values: 1.0 = 0x3F80, -2.5 = 0xC020, quiet
NaN 0x7FC0, inf 0x7F80, 1/3 rounded = 0x3EAB; pickles and safetensors headers written here
opcode by opcode / byte by byte), the safetensors library's own parser, and real torch where
installed.
"""
import json
import pickle
import pickletools
import struct
import zipfile

import numpy as np
import pytest

import clgrad
from clgrad import dtypes

# 1.0, -2.5, quiet NaN, inf, 1/3 (rounded), -inf, -0.0, the smallest subnormal, a NaN with a
# payload (kept as is: no canonical NaN on the way)
BITS = np.array([0x3F80, 0xC020, 0x7FC0, 0x7F80, 0x3EAB, 0xFF80, 0x8000, 0x0001, 0xFFC1],
                np.uint16)


def bits(t):
    return t._host_bits().tolist()


# ------------------------------------------------------------ PyTorch's format, hand-made

def _str(s):
    b = s.encode()
    return pickle.BINUNICODE + struct.pack("<I", len(b)) + b


def _int(i):
    return pickle.BININT + struct.pack("<i", i)


def _tuple(items):
    return pickle.MARK + b"".join(items) + pickle.TUPLE


def _tensor_pickle(tensors, storage_type=("torch", "BFloat16Storage")):
    """Protocol 2 pickle of {name: tensor} as torch.save writes it: each tensor is
    _rebuild_tensor_v2(persistent storage id, offset, size, stride, False, OrderedDict());
    ``tensors``: {name: (key, numel, offset, size, stride)}."""
    out = [pickle.PROTO + b"\x02", pickle.EMPTY_DICT, pickle.MARK]
    for name, (key, numel, offset, size, stride) in tensors.items():
        pid = _tuple([_str("storage"), pickle.GLOBAL + f"{storage_type[0]}\n"
                      f"{storage_type[1]}\n".encode(), _str(key), _str("cpu"), _int(numel)])
        args = _tuple([pid + pickle.BINPERSID, _int(offset), _tuple(map(_int, size)),
                       _tuple(map(_int, stride)), pickle.NEWFALSE,
                       pickle.GLOBAL + b"collections\nOrderedDict\n" + pickle.EMPTY_TUPLE +
                       pickle.REDUCE])
        out += [_str(name), pickle.GLOBAL + b"torch._utils\n_rebuild_tensor_v2\n", args,
                pickle.REDUCE]
    out += [pickle.SETITEMS, pickle.STOP]
    return b"".join(out)


def _torch_zip(path, payload, records, order="little"):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("a/data.pkl", payload)
        zf.writestr("a/byteorder", order.encode())
        for key, data in records.items():
            zf.writestr(f"a/data/{key}", data)
    return path


@pytest.mark.parametrize("storage_type", [("torch", "BFloat16Storage"), ("torch", "bfloat16")])
@pytest.mark.parametrize("order", ["little", "big"])
def test_hand_made_torch_file_loads_bit_exact(tmp_path, storage_type, order):
    n = BITS.size
    payload = _tensor_pickle({"x": ("0", n, 0, (n,), (1,)),  # shares "0" with "v" and "m"
                              "v": ("0", n, 1, (2,), (3,)),
                              "m": ("0", n, 3, (2, 3), (3, 1)),
                              "one": ("1", 4, 1, (2,), (2,))},  # alone: a compact copy
                             storage_type)
    dt = ">u2" if order == "big" else "<u2"
    path = _torch_zip(tmp_path / "bf.pt", payload,
                      {"0": BITS.astype(dt).tobytes(),
                       "1": np.array([0x3F80, 0x4000, 0x4040, 0x4080], dt).tobytes()}, order)
    got = clgrad.load(path)
    assert all(t.dtype is clgrad.bfloat16 for t in got.values())
    assert bits(got["x"]) == BITS.tolist()
    assert bits(got["v"]) == [0xC020, 0x3EAB] and got["v"].stride() == (3,)
    assert bits(got["m"]) == [[0x7F80, 0x3EAB, 0xFF80], [0x8000, 0x0001, 0xFFC1]]
    assert got["v"]._storage is got["x"]._storage is got["m"]._storage
    assert got["v"].storage_offset() == 1 and got["m"].storage_offset() == 3
    assert got["one"].tolist() == [2.0, 4.0] and got["one"].shape == (2,)
    assert got["x"][:5].tolist()[:2] == [1.0, -2.5]
    assert got["x"]._values()[4] == np.float32(0.333984375)  # 0x3EAB exactly


def test_hand_made_complex_storage_still_raises(tmp_path):
    payload = _tensor_pickle({"c": ("0", 1, 0, (1,), (1,))}, ("torch", "ComplexFloatStorage"))
    path = _torch_zip(tmp_path / "c.pt", payload, {"0": bytes(8)})
    with pytest.raises(TypeError, match="ComplexFloatStorage.*complex"):
        clgrad.load(path)


def test_hand_made_bf16_record_of_the_wrong_size_is_refused(tmp_path):
    payload = _tensor_pickle({"x": ("0", 3, 0, (3,), (1,))})
    path = _torch_zip(tmp_path / "short.pt", payload, {"0": bytes(4)})  # 2 elements, not 3
    with pytest.raises(ValueError, match="holds 2 elements .4 bytes., expected 3 .6 bytes."):
        clgrad.load(path)


# ------------------------------------------------------------ clgrad.save in PyTorch's format

def test_save_writes_torchs_bf16_storage(tmp_path):
    x = clgrad.tensor([1.0, -2.5, 1 / 3, float("inf")], dtype=clgrad.bfloat16)
    clgrad.save({"x": x, "dt": clgrad.bfloat16}, tmp_path / "ck.pt")
    with zipfile.ZipFile(tmp_path / "ck.pt") as zf:
        assert zf.read("ck/data/0") == struct.pack("<4H", 0x3F80, 0xC020, 0x3EAB, 0x7F80)
        ops = list(pickletools.genops(zf.read("ck/data.pkl")))
    names = [arg for op, arg, _ in ops if op.name == "GLOBAL"]
    assert "torch BFloat16Storage" in names and "torch bfloat16" in names
    assert "torch HalfStorage" not in names and "torch ShortStorage" not in names
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.pt"]  # no temporary file left


def test_save_load_round_trip_views_and_shared_storages(tmp_path):
    base = clgrad.empty(len(BITS), dtype=clgrad.bfloat16)
    base._storage.device.copy(base._storage.buffer, BITS)
    m = base[:8].reshape(2, 4)
    obj = {"base": base, "view": base[1::3], "t": m.t(), "rev": base[::-1],
           "exp": base[:1].expand(3), "scalar": base[4], "param": clgrad.nn.Parameter(
               clgrad.tensor([0.1, 0.2], dtype=clgrad.bfloat16))}
    clgrad.save(obj, tmp_path / "r.pt")
    got = clgrad.load(tmp_path / "r.pt")
    for k, v in obj.items():
        assert got[k].dtype is clgrad.bfloat16 and got[k].shape == v.shape, k
        assert bits(got[k]) == bits(v), k
    assert got["view"]._storage is got["base"]._storage is got["t"]._storage
    assert got["t"].stride() == (1, 4) and got["exp"].stride() == (0,)
    assert got["scalar"].shape == () and got["scalar"].item() == np.float32(0.333984375)
    assert isinstance(got["param"], clgrad.nn.Parameter) and got["param"].requires_grad
    # an existing file is replaced atomically, and a failed save keeps it
    with pytest.raises(TypeError, match="at key 'bad'"):
        clgrad.save({"x": base, "bad": lambda: 0}, tmp_path / "r.pt")
    assert bits(clgrad.load(tmp_path / "r.pt")["base"]) == BITS.tolist()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.pt"]


@pytest.mark.parametrize("name", ["m.pt", "m.safetensors"])
def test_bf16_state_dict_round_trips_and_loads_into_float32_model(tmp_path, name):
    clgrad.manual_seed(0)
    # (.to(clgrad.bfloat16): at 458d263 Module.bfloat16() passes the string "bfloat16", which
    # Tensor.to takes for a device)
    model = clgrad.nn.Sequential(clgrad.nn.Linear(5, 3), clgrad.nn.BatchNorm1d(3)).to(
        clgrad.bfloat16)
    sd = model.state_dict()
    assert sd["0.weight"].dtype is clgrad.bfloat16
    clgrad.save(sd, tmp_path / name)
    got = clgrad.load(tmp_path / name)
    assert list(got) == list(sd)
    for k, v in sd.items():
        assert got[k].dtype is v.dtype and bits(got[k]) == bits(v), k
    twin = clgrad.nn.Sequential(clgrad.nn.Linear(5, 3), clgrad.nn.BatchNorm1d(3)).to(
        clgrad.bfloat16)
    twin.load_state_dict(got)
    assert bits(twin[0].weight) == bits(model[0].weight)
    wide = clgrad.nn.Sequential(clgrad.nn.Linear(5, 3), clgrad.nn.BatchNorm1d(3))
    wide.load_state_dict(got)
    assert wide[0].weight.dtype is clgrad.float32
    want = dtypes.bf16_to_float32(model[0].weight._host_bits())
    assert wide[0].weight.detach().numpy().tobytes() == want.tobytes()  # converted exactly
    assert wide[1].num_batches_tracked.dtype is clgrad.int64


# ------------------------------------------------------------ safetensors

def _header(data):
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), 8 + n


def test_safetensors_writes_bf16_bit_exact(tmp_path):
    safetensors = pytest.importorskip("safetensors")
    x = clgrad.empty(len(BITS), dtype=clgrad.bfloat16)
    x._storage.device.copy(x._storage.buffer, BITS)
    obj = {"x": x.reshape(3, 3), "f": clgrad.tensor([1.5, 2.0]), "n": np.arange(2),
           "s": clgrad.tensor(-2.5, dtype=clgrad.bfloat16, requires_grad=True)}
    clgrad.save(obj, tmp_path / "c.safetensors")
    data = (tmp_path / "c.safetensors").read_bytes()
    header, start = _header(data)
    assert start % 8 == 0
    assert header["x"]["dtype"] == "BF16" and header["x"]["shape"] == [3, 3]
    assert header["s"]["dtype"] == "BF16" and header["s"]["shape"] == []
    assert header["f"]["dtype"] == "F32" and header["n"]["dtype"] == "I64"
    b, e = header["x"]["data_offsets"]
    assert data[start + b:start + e] == BITS.astype("<u2").tobytes()
    b, e = header["s"]["data_offsets"]
    assert data[start + b:start + e] == struct.pack("<H", 0xC020)
    parsed = dict(safetensors.deserialize(data))  # the library reads it as BF16 too
    assert parsed["x"]["dtype"] == "BF16" and bytes(parsed["x"]["data"]) == \
        BITS.astype("<u2").tobytes()
    got = clgrad.load(tmp_path / "c.safetensors")
    assert got["x"].dtype is clgrad.bfloat16 and bits(got["x"]) == BITS.reshape(3, 3).tolist()
    assert got["s"].dtype is clgrad.bfloat16 and got["s"].item() == -2.5
    assert got["s"].requires_grad and got["f"].tolist() == [1.5, 2.0]
    assert got["n"].tolist() == [0, 1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.safetensors"]


def test_safetensors_bf16_corruption_is_detected(tmp_path):
    clgrad.save({"x": clgrad.tensor([1.0, 2.0], dtype=clgrad.bfloat16)},
                tmp_path / "c.safetensors")
    data = bytearray((tmp_path / "c.safetensors").read_bytes())
    header, start = _header(bytes(data))
    data[start + header["x"]["data_offsets"][0]] ^= 1
    (tmp_path / "c.safetensors").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="tensor 'x' is corrupt"):
        clgrad.load(tmp_path / "c.safetensors")


# ------------------------------------------------------------ ONNX

def test_onnx_bf16_initializers_are_widened_exactly(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from onnx_pins import ONNX_IR_VERSION
    from clgrad.io import onnx_format
    w = helper.make_tensor("w", TensorProto.BFLOAT16, [2, 2], [1.0, -2.5, 1 / 3, 0.5])
    b = helper.make_tensor("b", TensorProto.BFLOAT16, [2], BITS[:2].tobytes(), raw=True)
    node = helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="fc")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              ir_version=ONNX_IR_VERSION)
    onnx.save(model, str(tmp_path / "m.onnx"))
    desc = onnx_format.load_onnx(tmp_path / "m.onnx")
    got = desc["initializers"]["w"]
    assert got.dtype == np.float32 and got.tolist() == [[1.0, -2.5], [0.333984375, 0.5]]
    assert desc["initializers"]["b"].tolist() == [1.0, -2.5]
    net = clgrad.io.load_onnx(tmp_path / "m.onnx")
    y = net(clgrad.tensor([[1.0, 2.0]]))
    assert y.tolist() == [[1.0 + 2 * 0.333984375 + 1.0, -2.5 + 1.0 - 2.5]]


# ------------------------------------------------------------ real PyTorch

def test_torch_and_clgrad_read_each_others_bf16(tmp_path):
    torch = pytest.importorskip("torch")
    base = torch.from_numpy(BITS.view(np.int16).copy()).view(torch.bfloat16)
    obj = {"base": base, "view": base[1::3], "m": base[:8].reshape(2, 4).t(),
           "p": torch.nn.Parameter(torch.tensor([0.1, 0.2], dtype=torch.bfloat16))}
    torch.save(obj, tmp_path / "t.pt")
    got = clgrad.load(tmp_path / "t.pt")
    for k, v in obj.items():
        want = v.detach().contiguous().view(torch.int16).numpy().view(np.uint16).tolist()
        assert got[k].dtype is clgrad.bfloat16 and bits(got[k]) == want, k
    assert got["view"]._storage is got["base"]._storage and got["m"].stride() == (1, 4)
    clgrad.save(got, tmp_path / "c.pt")
    back = torch.load(tmp_path / "c.pt", weights_only=True)
    for k, v in obj.items():
        assert back[k].dtype == torch.bfloat16 and torch.equal(
            back[k].view(torch.int16), v.detach().view(torch.int16)), k
    assert back["view"].untyped_storage().data_ptr() == back["base"].untyped_storage().data_ptr()
    assert isinstance(back["p"], torch.nn.Parameter)
