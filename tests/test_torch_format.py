"""PyTorch's checkpoint format: files real PyTorch wrote load in clgrad (shipped ones always,
more generated where torch is importable), files clgrad writes load in real torch, the
restricted unpickler refuses code, map_location / weights_only, and clgrad.save's dispatch.

Oracles: tests/data/torch_expected.npz (the values, written by torch beside the .pt files, see
tests/data/make_torch_files.py), hand-built pickles, and real torch where installed.
"""
import collections
import io
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

import clgrad

DATA = Path(__file__).resolve().parent / "data"
EXPECTED = np.load(DATA / "torch_expected.npz", allow_pickle=False)


def check_against_expected(stem, obj, prefix=None):
    """Every tensor in obj equals torch's value at its key path; returns the number checked."""
    prefix = prefix or stem
    if isinstance(obj, clgrad.Tensor):
        want = EXPECTED[prefix]
        got = obj.numpy()
        assert got.dtype == want.dtype, prefix
        assert got.shape == want.shape, prefix
        np.testing.assert_array_equal(got, want, err_msg=prefix)
        return 1
    if isinstance(obj, dict):
        return sum(check_against_expected(stem, v, f"{prefix}/{k}") for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return sum(check_against_expected(stem, v, f"{prefix}/{i}") for i, v in enumerate(obj))
    return 0


def test_shipped_state_dict_loads_into_a_clgrad_model():
    sd = clgrad.load(DATA / "torch_state_dict.pt", map_location="cpu", weights_only=True)
    assert isinstance(sd, collections.OrderedDict)
    assert list(sd) == ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                        "1.running_var", "1.num_batches_tracked", "3.weight", "3.bias"]
    assert check_against_expected("torch_state_dict", sd) == 9
    assert sd["1.num_batches_tracked"].dtype == clgrad.int64 and sd["0.weight"].shape == (
        2, 1, 3, 3)
    assert hasattr(sd, "_metadata")  # the OrderedDict's attributes come along, as in torch
    model = clgrad.nn.Sequential(clgrad.nn.Conv2d(1, 2, 3), clgrad.nn.BatchNorm2d(2),
                                 clgrad.nn.Flatten(), clgrad.nn.Linear(8, 3))
    model.load_state_dict(sd)
    np.testing.assert_array_equal(model[3].weight.detach().numpy(),
                                  EXPECTED["torch_state_dict/3.weight"])


def test_shipped_optimizer_state_dict():
    sd = clgrad.load(DATA / "torch_optimizer.pt")
    assert sorted(sd["state"]) == list(range(6))  # int keys, as torch wrote them
    assert check_against_expected("torch_optimizer", sd) == 18
    group, = sd["param_groups"]
    assert group["lr"] == 1e-3 and group["betas"] == (0.9, 0.999) and group["params"] == list(
        range(6))
    assert group["amsgrad"] is False and group["foreach"] is None
    assert sd["state"][0]["step"].shape == () and sd["state"][0]["step"].item() == 1.0


def test_shipped_views_and_dtypes():
    d = clgrad.load(DATA / "torch_views.pt")
    assert check_against_expected("torch_views", d) == 9
    # Views of one torch storage stay views of one clgrad storage, with torch's geometry.
    assert d["view"]._storage is d["base"]._storage is d["t"]._storage is d["row"]._storage
    assert d["view"].stride() == (6, 2) and d["view"].storage_offset() == 6
    assert d["t"].stride() == (1, 6) and not d["t"].is_contiguous()
    assert d["u8"].dtype == clgrad.uint8 and d["u8"].tolist() == [0, 200, 255]
    assert d["mask"].dtype == clgrad.bool and d["scalar"].shape == ()
    assert d["meta"] == {"epoch": 3, "name": "run", "none": None, "pair": (1, 2.5)}


def test_clgrad_file_layout_matches_torchs(tmp_path):
    x = clgrad.arange(12.0).reshape(3, 4)
    clgrad.save({"x": x, "v": x[1:, ::2]}, tmp_path / "ck.pt")
    with zipfile.ZipFile(tmp_path / "ck.pt") as zf:
        names = zf.namelist()
        assert {"ck/data.pkl", "ck/byteorder", "ck/version", "ck/data/0"} <= set(names)
        assert "ck/data/1" not in names  # the view shares the storage record
        assert zf.read("ck/byteorder") == b"little" and zf.read("ck/version") == b"3\n"
        np.testing.assert_array_equal(np.frombuffer(zf.read("ck/data/0"), "<f4"),
                                      np.arange(12.0))
        for info in zf.infolist():  # data aligned to 64 bytes as torch writes it
            assert (info.header_offset + 30 + len(info.filename) + len(info.extra)) % 64 == 0
        ops = [op.name for op, _, _ in __import__("pickletools").genops(zf.read("ck/data.pkl"))]
        assert ops[0] == "PROTO" and "BINPERSID" in ops
    back = clgrad.load(tmp_path / "ck.pt")
    assert back["v"].tolist() == [[4.0, 6.0], [8.0, 10.0]] and back["v"]._storage is \
        back["x"]._storage


@pytest.mark.parametrize("name", ["m.pt", "m.pth", "m.bin", "m", "m.ckpt"])
def test_round_trip_whatever_the_name(tmp_path, name):
    model = clgrad.nn.Sequential(clgrad.nn.Conv2d(1, 2, 3), clgrad.nn.BatchNorm2d(2))
    opt = clgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    state = {"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 4,
             "loss": float("nan"), "big": 2**70, "tag": "x", "none": None, "flag": True,
             "np": np.arange(6, dtype=np.int32).reshape(2, 3).T, "np_scalar": np.float32(0.5),
             "nested": [(1, 2.5), {"k": [clgrad.ones(2, dtype=clgrad.float64)]}]}
    clgrad.save(state, tmp_path / name)
    with open(tmp_path / name, "rb") as f:
        assert f.read(2) == b"PK"  # PyTorch's zip format, not safetensors
    got = clgrad.load(tmp_path / name)
    for k, v in state["model"].items():
        assert got["model"][k].dtype == v.dtype
        np.testing.assert_array_equal(got["model"][k].numpy(), v.numpy())
    assert got["optim"] == state["optim"]  # no tensors in SGD's state before a step
    assert got["epoch"] == 4 and np.isnan(got["loss"]) and got["big"] == 2**70
    assert got["tag"] == "x" and got["none"] is None and got["flag"] is True
    assert isinstance(got["np"], np.ndarray) and got["np"].dtype == np.int32
    np.testing.assert_array_equal(got["np"], [[0, 3], [1, 4], [2, 5]])
    assert got["np_scalar"] == 0.5 and type(got["np_scalar"]) is np.float32
    assert got["nested"][0] == (1, 2.5) and got["nested"][1]["k"][0].tolist() == [1.0, 1.0]


def test_parameters_round_trip_as_parameters(tmp_path):
    p = clgrad.nn.Parameter(clgrad.arange(3.0))
    frozen = clgrad.nn.Parameter(clgrad.ones(1), requires_grad=False)
    clgrad.save({"p": p, "frozen": frozen, "plain": p.detach()}, tmp_path / "p.pt")
    got = clgrad.load(tmp_path / "p.pt")
    assert isinstance(got["p"], clgrad.nn.Parameter) and got["p"].requires_grad
    assert isinstance(got["frozen"], clgrad.nn.Parameter) and not got["frozen"].requires_grad
    assert not isinstance(got["plain"], clgrad.nn.Parameter) and got["p"].tolist() == [0, 1, 2]


def test_safetensors_name_still_writes_safetensors(tmp_path):
    clgrad.save({"w": clgrad.ones(2)}, tmp_path / "c.safetensors")
    assert (tmp_path / "c.safetensors").read_bytes()[:2] != b"PK"
    got = clgrad.load(tmp_path / "c.safetensors", map_location=clgrad.device("cpu"))
    assert got["w"].tolist() == [1.0, 1.0] and got["w"].device == clgrad.device("cpu")


def test_file_objects(tmp_path):
    buf = io.BytesIO()
    clgrad.save({"w": clgrad.arange(3)}, buf)
    buf.seek(0)
    assert clgrad.load(buf)["w"].tolist() == [0, 1, 2]


def test_map_location_forms():
    path = DATA / "torch_views.pt"
    cpu = clgrad.device("cpu")
    for m in (None, "cpu", cpu, clgrad.default_device(), {"cpu": "cpu"},
              lambda storage, loc: storage, lambda storage, loc: storage.cpu(),
              lambda storage, loc: "cpu"):
        d = clgrad.load(path, map_location=m)
        dflt = m is None or m is clgrad.default_device()  # a GPU on GPU machines
        want = clgrad.default_device() if dflt else clgrad.runtime.get_device("cpu")
        assert d["base"].device.opencl is want and d["t"].device.opencl is want
        assert d["base"].device == clgrad.device(want)
        assert d["row"].tolist() == list(np.arange(12.0, 18.0))
    with pytest.raises(TypeError, match="map_location callable"):
        clgrad.load(path, map_location=lambda storage, loc: 3.5)
    if not clgrad.cuda.is_available():
        with pytest.raises(RuntimeError, match="no OpenCL GPU"):
            clgrad.load(path, map_location="cuda")


def test_load_argument_errors():
    with pytest.raises(TypeError, match="weights_only"):
        clgrad.load(DATA / "torch_views.pt", weights_only="yes")
    with pytest.raises(TypeError, match="pickle_module"):
        clgrad.load(DATA / "torch_views.pt", pickle_module=pickle)
    for flag in (True, False, None):
        assert clgrad.load(DATA / "torch_views.pt", weights_only=flag)["meta"]["epoch"] == 3


def _zip_with_pickle(path, payload, storages=None):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("a/data.pkl", payload)
        zf.writestr("a/byteorder", b"little")
        for k, v in (storages or {}).items():
            zf.writestr(f"a/data/{k}", v)


class _Evil:
    def __init__(self, func, arg):
        self.func, self.arg = func, arg

    def __reduce__(self):
        return self.func, (self.arg,)


@pytest.mark.parametrize("func, arg", [(print, "PWNED"), (eval, "1+1"),
                                       (__import__("os").system, "true")])
def test_code_in_the_pickle_is_refused_and_not_run(tmp_path, func, arg, capsys):
    path = tmp_path / "evil.pt"
    _zip_with_pickle(path, pickle.dumps({"x": _Evil(func, arg)}, protocol=2))
    with pytest.raises(pickle.UnpicklingError, match=f"refusing to load the global "
                                                     f".*{func.__name__}"):
        clgrad.load(path, weights_only=False)
    assert "PWNED" not in capsys.readouterr().out


def test_malformed_files(tmp_path):
    (tmp_path / "legacy.pt").write_bytes(pickle.dumps(0x1950a86a20f9469cfc6c, protocol=2))
    with pytest.raises(ValueError, match="legacy"):
        clgrad.load(tmp_path / "legacy.pt")
    with zipfile.ZipFile(tmp_path / "script.pt", "w") as zf:
        zf.writestr("m/constants.pkl", b"")
        zf.writestr("m/code/m.py", b"")
    with pytest.raises(ValueError, match="TorchScript"):
        clgrad.load(tmp_path / "script.pt")
    with zipfile.ZipFile(tmp_path / "nopkl.pt", "w") as zf:
        zf.writestr("x.txt", b"hi")
    with pytest.raises(ValueError, match="data.pkl"):
        clgrad.load(tmp_path / "nopkl.pt")
    # A tensor whose storage record is missing, then one that reaches past its storage.
    good = (DATA / "torch_views.pt").read_bytes()
    with zipfile.ZipFile(io.BytesIO(good)) as zf:
        pkl = zf.read("torch_views/data.pkl")
    _zip_with_pickle(tmp_path / "missing_record.pt", pkl)
    with pytest.raises(ValueError, match="expected the record a/data/0"):
        clgrad.load(tmp_path / "missing_record.pt")
    (tmp_path / "trunc.pt").write_bytes(good[:len(good) // 2])
    with pytest.raises(ValueError):
        clgrad.load(tmp_path / "trunc.pt")


def test_unsupported_values_raise(tmp_path):
    with pytest.raises(TypeError, match="at key 'a.b'"):  # unpicklable, as in torch.save
        clgrad.save({"a": {"b": lambda: 0}}, tmp_path / "x.pt")
    assert not (tmp_path / "x.pt").exists()
    # a NumPy array of any dtype is pickled as NumPy does (as torch.save), not as a tensor
    clgrad.save({"c": np.array([1 + 2j, -3j], np.complex64)}, tmp_path / "c.pt")
    got = clgrad.load(tmp_path / "c.pt")["c"]
    assert got.dtype == np.complex64 and got.tolist() == [1 + 2j, -3j]


# ------------------------------------------------------------------ with real PyTorch

def test_torch_reads_what_clgrad_writes(tmp_path):
    torch = pytest.importorskip("torch")
    model = clgrad.nn.Sequential(clgrad.nn.Conv2d(1, 2, 3), clgrad.nn.BatchNorm2d(2),
                                 clgrad.nn.Flatten(), clgrad.nn.Linear(8, 3))
    x = clgrad.arange(24.0, dtype=clgrad.float64).reshape(4, 6)
    obj = {"sd": model.state_dict(), "view": x[1:3, ::2], "t": x.t(), "x": x,
           "ints": clgrad.tensor([2**40, -1]), "mask": clgrad.tensor([True, False]),
           "meta": [1, 2.5, "s", None, (True, 2**70)],
           "k": {3: "int key"}, "param": clgrad.nn.Parameter(clgrad.ones(2))}
    clgrad.save(obj, tmp_path / "from_clgrad.pt")
    got = torch.load(tmp_path / "from_clgrad.pt", weights_only=True)
    tmodel = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2),
                                 torch.nn.Flatten(), torch.nn.Linear(8, 3))
    tmodel.load_state_dict(got["sd"])
    for k, v in model.state_dict().items():
        assert str(got["sd"][k].dtype) == f"torch.{v.dtype.name}"
        np.testing.assert_array_equal(got["sd"][k].numpy(), v.numpy())
    np.testing.assert_array_equal(got["view"].numpy(), x.numpy()[1:3, ::2])
    np.testing.assert_array_equal(got["t"].numpy(), x.numpy().T)
    assert got["view"].untyped_storage().data_ptr() == got["x"].untyped_storage().data_ptr()
    assert got["ints"].tolist() == [2**40, -1] and got["mask"].dtype == torch.bool
    assert got["meta"] == [1, 2.5, "s", None, (True, 2**70)] and got["k"] == {3: "int key"}
    assert isinstance(got["param"], torch.nn.Parameter) and got["param"].requires_grad


def test_clgrad_reads_what_torch_writes(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(1)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, groups=1), torch.nn.BatchNorm2d(4),
                            torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(4, 2))
    opt = torch.optim.AdamW(m.parameters())
    m(torch.randn(2, 3, 3, 3)).sum().backward()
    opt.step()
    big = torch.randn(5, 7, dtype=torch.float64)
    obj = {"sd": m.state_dict(), "opt": opt.state_dict(), "slice": big[1:4, 2::2],
           "exp": torch.ones(3, 1).expand(3, 4), "perm": big.t()[::2], "big": big,
           "param": torch.nn.Parameter(torch.ones(2)), "i16": torch.tensor([-3, 5],
                                                                          dtype=torch.int16),
           "size": torch.Size([2, 3]), "dev": torch.device("cpu"), "raw": b"\x00\xff"}
    torch.save(obj, tmp_path / "from_torch.pt")
    got = clgrad.load(tmp_path / "from_torch.pt", map_location="cpu")

    def same(t, c):
        assert c.shape == tuple(t.shape)
        np.testing.assert_array_equal(c.numpy(), t.detach().numpy().astype(c.numpy().dtype))

    for k, v in m.state_dict().items():
        assert got["sd"][k].dtype.name == str(v.dtype)[6:]
        same(v, got["sd"][k])
    for i, st in opt.state_dict()["state"].items():
        for k, v in st.items():
            same(v, got["opt"]["state"][i][k])
    for k in ("slice", "exp", "perm", "big", "i16"):
        same(obj[k], got[k])
    # an expanded tensor keeps its 3-element storage and stride 0 (issue 20), as torch does
    assert got["exp"].stride() == obj["exp"].stride() == (1, 0)
    assert isinstance(got["param"], clgrad.nn.Parameter) and got["param"].requires_grad
    assert got["size"] == (2, 3) and got["dev"] == clgrad.device("cpu") and got["raw"] == \
        b"\x00\xff"
    # bfloat16 loads bit-exact (tests/test_bf16_io.py has more); complex has no clgrad dtype
    bf = torch.tensor([1.0, -2.5, 1 / 3, float("nan")], dtype=torch.bfloat16)
    torch.save({"b": bf, "c": torch.ones(2, dtype=torch.complex64)}, tmp_path / "bf.pt")
    torch.save({"b": bf}, tmp_path / "bf_only.pt")
    got = clgrad.load(tmp_path / "bf_only.pt")["b"]
    assert got.dtype is clgrad.bfloat16
    assert got._host_bits().tolist() == bf.view(torch.int16).numpy().view(np.uint16).tolist()
    with pytest.raises(TypeError, match="complex"):
        clgrad.load(tmp_path / "bf.pt")


# -- non-tensor objects, TORCH_FORCE_*_WEIGHTS_ONLY_LOAD, module versions (issue 33) ---------
def _plain_objects():
    return {"arr": np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2],
            "ints": np.array([2**40, -1]), "scalar": np.float64(2.5), "n": 7,
            "nested": {"d": [1, (2, "x")], "e": None}}


def _check_plain_objects(got):
    assert isinstance(got["arr"], np.ndarray) and got["arr"].dtype == np.float32
    assert got["arr"].tolist() == [[0.0, 2.0], [4.0, 6.0], [8.0, 10.0]]
    assert isinstance(got["ints"], np.ndarray) and got["ints"].tolist() == [2**40, -1]
    assert type(got["scalar"]) is np.float64 and got["scalar"] == 2.5
    assert got["n"] == 7 and got["nested"] == {"d": [1, (2, "x")], "e": None}


def test_ndarrays_and_plain_objects_load_back_as_themselves(tmp_path):
    clgrad.save(_plain_objects(), tmp_path / "o.pt")
    _check_plain_objects(clgrad.load(tmp_path / "o.pt"))
    clgrad.save(np.arange(3), tmp_path / "a.pt")  # a bare array, as torch.save(ndarray)
    got = clgrad.load(tmp_path / "a.pt")
    assert isinstance(got, np.ndarray) and got.tolist() == [0, 1, 2]


def test_ndarrays_and_plain_objects_cross_torch_both_ways(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save(_plain_objects(), tmp_path / "t.pt")
    _check_plain_objects(clgrad.load(tmp_path / "t.pt"))
    clgrad.save(_plain_objects(), tmp_path / "c.pt")
    _check_plain_objects(torch.load(tmp_path / "c.pt", weights_only=False))
    with pytest.raises(pickle.UnpicklingError):  # torch's weights_only refuses arrays too
        torch.load(tmp_path / "c.pt", weights_only=True)


def test_torch_force_weights_only_environment_variables(tmp_path, monkeypatch):
    clgrad.save({"m": clgrad.nn.Linear(2, 1)}, tmp_path / "m.pt")  # needs weights_only=False
    monkeypatch.delenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", raising=False)
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", raising=False)
    with pytest.raises(pickle.UnpicklingError, match="Linear"):
        clgrad.load(tmp_path / "m.pt")
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.warns(UserWarning, match="TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"):
        got = clgrad.load(tmp_path / "m.pt")
    assert isinstance(got["m"], clgrad.nn.Linear) and tuple(got["m"].weight.shape) == (1, 2)
    with pytest.raises(pickle.UnpicklingError):  # an explicit argument wins, as in torch
        clgrad.load(tmp_path / "m.pt", weights_only=True)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0")
    with pytest.raises(pickle.UnpicklingError):
        clgrad.load(tmp_path / "m.pt")
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "yes")  # overrides the argument
    with pytest.raises(pickle.UnpicklingError):
        clgrad.load(tmp_path / "m.pt", weights_only=False)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "true")
    with pytest.raises(RuntimeError, match="Only one of|only one of"):
        clgrad.load(tmp_path / "m.pt")


def _mnasnet_like(lib):
    """A module that converts checkpoints by version as torchvision's MNASNet does."""

    class Net(lib.nn.Module):
        _version = 2

        def __init__(self):
            super().__init__()
            self.stem = lib.nn.Linear(2, 2)
            self.bn = lib.nn.BatchNorm1d(2)
            self.seen = []

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                                  missing_keys, unexpected_keys, error_msgs):
            version = local_metadata.get("version", None)
            if version not in [1, 2]:
                raise ValueError(f"version should be set to 1 or 2 instead of {version}")
            self.seen.append((prefix, version))
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                          missing_keys, unexpected_keys, error_msgs)
    return Net()


@pytest.mark.parametrize("name", ["v.pt", "v.safetensors"])
def test_module_versions_survive_save_and_reach_load_from_state_dict(tmp_path, name):
    net = _mnasnet_like(clgrad)
    sd = net.state_dict()
    assert dict(sd._metadata) == {"": {"version": 2}, "stem": {"version": 1},
                                  "bn": {"version": 2}}
    clgrad.save(sd, tmp_path / name)
    back = clgrad.load(tmp_path / name)
    assert dict(back._metadata) == dict(sd._metadata)
    other = _mnasnet_like(clgrad)
    other.load_state_dict(back)
    assert other.seen == [("", 2)]
    np.testing.assert_array_equal(other.stem.weight.detach().numpy(),
                                  net.stem.weight.detach().numpy())
    with pytest.raises(ValueError, match="instead of None"):  # a plain dict has no versions
        other.load_state_dict(dict(back))


def test_module_versions_cross_torch_both_ways(tmp_path):
    torch = pytest.importorskip("torch")
    ours, theirs = _mnasnet_like(clgrad), _mnasnet_like(torch)
    assert dict(ours.state_dict()._metadata) == dict(theirs.state_dict()._metadata)
    torch.save(theirs.state_dict(), tmp_path / "t.pt")
    ours.load_state_dict(clgrad.load(tmp_path / "t.pt"))
    assert ours.seen == [("", 2)]
    np.testing.assert_array_equal(ours.stem.weight.detach().numpy(),
                                  theirs.stem.weight.detach().numpy())
    ours.stem.weight.data.fill_(0.25)
    clgrad.save(ours.state_dict(), tmp_path / "c.pt")
    theirs.load_state_dict(torch.load(tmp_path / "c.pt", weights_only=True))
    assert theirs.seen == [("", 2)] and theirs.stem.weight.tolist() == [[0.25] * 2] * 2


def test_a_shape_is_saved_as_torch_size_and_loads_as_a_size():
    """torch.save({'shape': x.shape}): torch.Size in the pickle (what PyTorch writes and its
    weights_only load takes), a Size again on load."""
    x = clgrad.zeros(2, 3)
    buf = io.BytesIO()
    clgrad.save({"shape": x.shape, "pair": (1, clgrad.Size(x.shape[1:]))}, buf)
    data = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    pkl = next(n for n in data.namelist() if n.endswith("data.pkl"))
    assert b"ctorch\nSize\n" in data.read(pkl)
    buf.seek(0)
    back = clgrad.load(buf)
    assert type(back["shape"]) is clgrad.Size and back["shape"] == (2, 3)
    assert back["shape"].numel() == 6 and back["pair"] == (1, (3,))
    assert type(back["pair"][1]) is clgrad.Size


def test_save_takes_torch_saves_arguments():
    obj = {"w": clgrad.arange(3.0)}
    for protocol in (2, 4, 5):
        buf = io.BytesIO()
        clgrad.save(obj, buf, pickle_protocol=protocol, _disable_byteorder_record=True)
        buf.seek(0)
        assert clgrad.load(buf)["w"].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(TypeError, match="pickle_protocol to be an int in 2..5, got 1"):
        clgrad.save(obj, io.BytesIO(), pickle_protocol=1)
    with pytest.raises(TypeError, match="pickle_module is not supported"):
        clgrad.save(obj, io.BytesIO(), pickle_module=pickle)
    with pytest.raises(NotImplementedError, match="legacy pre-1.6 format"):
        clgrad.save(obj, io.BytesIO(), _use_new_zipfile_serialization=False)
