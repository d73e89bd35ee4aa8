"""Pickling tensors (``pickle.dumps``/``loads``, ``copy.copy``, other processes): values bit-exact
for every dtype (NaN payloads, -0.0, inf), shape, strides and offsets of views, one storage per
pickle for views pickled together, requires_grad, Parameter and subclasses, devices; the
autograd rules measured in PyTorch 2.13 (no .grad, a non-leaf comes back a leaf); clgrad.load
never accepting these pickles. Oracles: NumPy arrays and their bits; PyTorch where importable."""
import copy
import io
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import clgrad
from clgrad import nn
from clgrad.errors import DeviceError
from clgrad.tensor import _rebuild_storage

import mp_worker  # a spawned child imports the Pool's task from tests/
from subproc import checkout_env

TESTS = Path(__file__).resolve().parent
DEV = clgrad.default_device()

# dtype name -> NumPy values to store (floats with the special values and NaN payloads)
_F32_BITS = np.array([0x7FC00001, 0xFF800000, 0x7F800000, 0x80000000, 0x00000001, 0x3F800000,
                      0xC0490FDB], np.uint32)
_F16_BITS = np.array([0x7E01, 0xFC00, 0x7C00, 0x8000, 0x0001, 0x3C00, 0xC248], np.uint16)
_BF16_BITS = np.array([0x7FC1, 0xFF80, 0x7F80, 0x8000, 0x0001, 0x3F80, 0xC049], np.uint16)
_F64_BITS = np.array([0x7FF8000000000001, 0xFFF0000000000000, 0x8000000000000000, 1,
                      0x400921FB54442D18], np.uint64)
DTYPES = {
    "float32": _F32_BITS.view(np.float32), "float64": _F64_BITS.view(np.float64),
    "float16": _F16_BITS.view(np.float16), "bfloat16": _BF16_BITS,
    "int64": np.array([-2**63, -1, 0, 2**62 + 7, 2**63 - 1], np.int64),
    "int32": np.array([-2**31, -5, 0, 2**31 - 1], np.int32),
    "int16": np.array([-2**15, 3, 2**15 - 1], np.int16),
    "int8": np.array([-128, 0, 127], np.int8), "uint8": np.array([0, 1, 255], np.uint8),
    "bool": np.array([True, False, True]),
}


def _bits(t):
    """The stored elements of ``t`` as a NumPy array of unsigned ints (bfloat16: its bits)."""
    a = t.detach()._host_bits()
    return a.view(f"u{a.itemsize}") if a.dtype != np.bool_ else a


def _tensor(name, values):
    """A tensor of dtype ``name`` storing exactly ``values`` (bfloat16: the uint16 bits)."""
    dt = getattr(clgrad, name)
    if name == "bfloat16":
        t = clgrad.empty(values.shape, dtype=dt)
        t._storage.write(0, values)
        return t
    return clgrad.tensor(values, dtype=dt)


def _round_trip(obj, protocol=pickle.HIGHEST_PROTOCOL):
    return pickle.loads(pickle.dumps(obj, protocol=protocol))


def _usable(name):
    if name == "float64" and not DEV.fp64 or name == "float16" and not DEV.fp16:
        pytest.skip(f"{name}: the default device lacks it")


@pytest.mark.parametrize("name", list(DTYPES))
@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_every_dtype_round_trips_bit_exactly(name, protocol):
    _usable(name)
    values = DTYPES[name]
    t = _tensor(name, values)
    back = _round_trip(t, protocol)
    expect = values.view(f"u{values.itemsize}") if values.dtype != np.bool_ else values
    assert back.dtype is t.dtype and back.shape == t.shape and back.device == t.device
    np.testing.assert_array_equal(_bits(back), expect)
    assert back._storage is not t._storage  # a copy: writing one leaves the other
    # 0-dim, empty, and a strided view of a larger storage (offset, step, transpose)
    scalar = _round_trip(t[1], protocol)
    assert scalar.shape == () and _bits(scalar) == expect[1]
    empty = _round_trip(t[:0].reshape(0, 1, 0), protocol)
    assert empty.shape == (0, 1, 0) and empty.dtype is t.dtype and empty.numel() == 0
    grid = _tensor(name, np.tile(values, 6)).reshape(3, -1)
    view = grid.t()[1::2]
    back = _round_trip(view, protocol)
    assert back.shape == view.shape and back.stride() == view.stride()
    assert back.storage_offset() == view.storage_offset() == 1
    np.testing.assert_array_equal(_bits(back), _bits(view))


def test_views_pickled_together_share_one_storage():
    base = np.arange(24.0, dtype=np.float32).reshape(4, 6)
    a = clgrad.tensor(base)
    views = [a, a.t()[1:], a[1:, ::2], a.reshape(-1)[::-1], a[0].expand(3, 6), a[2:3, 4:]]
    oracles = [base, base.T[1:], base[1:, ::2], base.reshape(-1)[::-1],
               np.broadcast_to(base[0], (3, 6)), base[2:3, 4:]]
    back = _round_trip(views)
    for got, v, want in zip(back, views, oracles):
        assert got._storage is back[0]._storage  # one storage, as before pickling
        assert got.shape == want.shape and got.stride() == v.stride()
        assert got.storage_offset() == v.storage_offset()
        np.testing.assert_array_equal(got.numpy(), want)
    assert back[0]._storage.size == 24 and back[0]._base is None and back[1]._base is not None
    back[0].mul_(-1)  # a write through the root shows in every view, as in the original
    for got, want in zip(back, oracles):
        np.testing.assert_array_equal(got.numpy(), -want)
    np.testing.assert_array_equal(a.numpy(), base)  # the original is untouched
    alone = _round_trip(views[2])  # pickled alone, a view keeps the whole storage (PyTorch)
    assert alone._storage.size == 24 and alone.stride() == (6, 2)
    assert alone.storage_offset() == 6
    np.testing.assert_array_equal(alone.numpy(), oracles[2])


def test_same_tensor_twice_is_one_object_and_copy_copy_shares():
    t = clgrad.arange(3.0)
    x, y = _round_trip([t, t])
    assert x is y
    shallow = copy.copy(t)  # as PyTorch: a new tensor over the same storage
    assert shallow is not t and shallow._storage is t._storage
    shallow[0] = 7.0
    assert t.tolist() == [7.0, 1.0, 2.0]


def test_autograd_state_follows_pytorchs_pickle():
    x = clgrad.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    assert x.grad is not None
    leaf = _round_trip(x)
    assert leaf.requires_grad and leaf.is_leaf and leaf.grad is None  # .grad is not pickled
    np.testing.assert_array_equal(leaf.detach().numpy(), [1.0, -2.0, 3.0])
    y = x * 2  # a non-leaf: comes back a leaf that requires grad (PyTorch's pickle)
    back = _round_trip(y)
    assert back.requires_grad and back.is_leaf and back.grad_fn is None
    (back * 3).sum().backward()
    np.testing.assert_array_equal(back.grad.numpy(), [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, -4.0, 6.0])  # x's graph untouched
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(y)  # deepcopy refuses a non-leaf (PyTorch)
    deep = copy.deepcopy(x)  # and keeps .grad (PyTorch)
    np.testing.assert_array_equal(deep.grad.numpy(), [2.0, -4.0, 6.0])
    plain = _round_trip(clgrad.ones(2))
    assert not plain.requires_grad and plain.is_leaf


def test_pytorch_agrees_on_the_autograd_and_layout_rules():
    torch = pytest.importorskip("torch")
    results = {}
    for lib in (torch, clgrad):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        x.grad = lib.tensor([5.0, 6.0])
        a = lib.arange(12.0).reshape(3, 4)
        view = a.t()[1:]
        nonleaf, leaf, v = _round_trip([x * 2, x, view])
        p = _round_trip(lib.nn.Parameter(lib.ones(2), requires_grad=False))
        results[lib] = (nonleaf.requires_grad, nonleaf.is_leaf, leaf.requires_grad,
                        leaf.grad is None, tuple(v.shape), v.stride(), v.storage_offset(),
                        v.tolist(), type(p).__name__, p.requires_grad,
                        copy.deepcopy(x).grad.tolist(), copy.copy(x).grad)
    assert results[clgrad] == results[torch]


def test_parameters_and_modules():
    p = nn.Parameter(clgrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    frozen = nn.Parameter(clgrad.zeros(2), requires_grad=False)
    p2, f2 = _round_trip([p, frozen])
    assert type(p2) is nn.Parameter and p2.requires_grad and p2.is_leaf
    assert type(f2) is nn.Parameter and not f2.requires_grad
    np.testing.assert_array_equal(p2.detach().numpy(), [[1.0, 2.0], [3.0, 4.0]])
    clgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 4))
    model[2].bias = model[0].bias  # tied: one Parameter in two places
    x = clgrad.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
    twin = _round_trip(model)
    assert twin[2].bias is twin[0].bias and twin[0].weight is not model[0].weight
    np.testing.assert_array_equal(twin(x).detach().numpy(), model(x).detach().numpy())
    twin(x).sum().backward()  # the loaded parameters train
    assert twin[0].weight.grad is not None and model[0].weight.grad is None
    buf = nn.Buffer(clgrad.ones(2), persistent=False)
    b2 = _round_trip(buf)
    assert type(b2) is nn.Buffer and b2.persistent is False


class Tagged(clgrad.Tensor):
    """A user subclass with attributes in its __dict__ (kept, as PyTorch keeps them)."""


def test_a_subclass_keeps_its_class_and_attributes():
    t = Tagged(clgrad.arange(4.0)._storage, (2, 2), (2, 1), 0)
    t.tag, t.me = "weights", None
    t.me = t  # a reference to itself: pickle's memo
    back = _round_trip(t)
    assert type(back) is Tagged and back.tag == "weights" and back.me is back
    np.testing.assert_array_equal(back.numpy(), [[0.0, 1.0], [2.0, 3.0]])


def test_protocol_5_out_of_band_buffers():
    t = clgrad.arange(1000, dtype=clgrad.int64)
    buffers = []
    data = pickle.dumps([t, t[::7]], protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1 and len(data) < 1000  # the elements travel out of band
    a, b = pickle.loads(data, buffers=buffers)
    assert b._storage is a._storage and b.tolist() == list(range(0, 1000, 7))


def test_meta_and_other_devices():
    m = clgrad.empty(2, 3, device="meta")[:, 1:]
    back = _round_trip(m)
    assert back.device.type == "meta" and back.shape == (2, 2) and back.stride() == (3, 1)
    try:
        other = clgrad.ones(3, device="cpu:1") * 2
    except RuntimeError:
        other = None  # one CPU device only
    if other is not None:
        back = _round_trip(other)
        assert back.device == other.device and back._storage.device is other._storage.device
        assert back.tolist() == [2.0, 2.0, 2.0]


class _Crafted:
    """A pickle of a storage on a device this machine lacks (as a GPU tensor pickled on
    another machine)."""

    def __reduce__(self):
        return _rebuild_storage, ("float32", "cuda:63", 2, b"\0" * 8)


def test_a_device_this_process_lacks_raises_clearly():
    with pytest.raises(DeviceError, match="pickle: cannot unpickle a tensor that was on "
                                          "device 'cuda:63'.*before pickling"):
        pickle.loads(pickle.dumps(_Crafted()))
    assert issubclass(DeviceError, RuntimeError)  # PyTorch raises RuntimeError here


def test_clgrad_load_never_runs_these_pickles(tmp_path):
    t = clgrad.arange(3.0)
    raw = tmp_path / "raw.pkl"
    raw.write_bytes(pickle.dumps(t, protocol=2))
    with pytest.raises(ValueError, match="legacy"):  # not a checkpoint: refused, not unpickled
        clgrad.load(raw, weights_only=False)
    archive = tmp_path / "pickled.pt"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("a/data.pkl", pickle.dumps({"x": t}, protocol=2))
        zf.writestr("a/byteorder", b"little")
    for weights_only in (True, False):
        with pytest.raises(pickle.UnpicklingError, match="refusing to load the global "
                                                         "clgrad.tensor._rebuild_tensor"):
            clgrad.load(archive, weights_only=weights_only)
    buf = io.BytesIO()
    clgrad.save({"x": t}, buf)  # torch.save's format, as before
    assert clgrad.load(io.BytesIO(buf.getvalue()))["x"].tolist() == [0.0, 1.0, 2.0]


def test_a_fresh_process_unpickles_and_pickles_back(tmp_path):
    src = np.array([[1.5, -0.0, np.nan], [np.inf, 2.0, 3.0]], np.float32)
    t = clgrad.tensor(src).t()
    (tmp_path / "in.pkl").write_bytes(pickle.dumps({"t": t, "p": nn.Parameter(t * 1)}))
    code = ("import pickle, clgrad\n"
            "d = pickle.load(open('in.pkl', 'rb'))\n"
            "t, p = d['t'], d['p']\n"
            "assert t.stride() == (1, 3) and type(p).__name__ == 'Parameter'\n"
            "pickle.dump([t * 2, p.requires_grad, str(t.device)], open('out.pkl', 'wb'))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=checkout_env(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    doubled, requires_grad, device = pickle.loads((tmp_path / "out.pkl").read_bytes())
    assert requires_grad is True and device == str(t.device)
    np.testing.assert_array_equal(doubled.numpy(), src.T * 2)


@pytest.mark.skipif(DEV.kind != "cpu", reason="multiprocessing shares CPU tensors only")
def test_spawn_pool_passes_tensors_there_and_back():
    ctx = clgrad.multiprocessing.get_context("spawn")
    t = clgrad.arange(6.0).reshape(2, 3)[:, 1:]
    with ctx.Pool(1) as pool:
        out = pool.apply_async(mp_worker.scaled, (t, 3.0)).get(timeout=300)
    np.testing.assert_array_equal(out.numpy(), np.arange(6.0).reshape(2, 3)[:, 1:] * 3)
