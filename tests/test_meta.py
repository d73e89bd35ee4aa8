"""The 'meta' device (clgrad/runtime/meta.py): tensors with a shape and a dtype but no data,
for .to('meta'), views, deepcopy and functional_call's stateless modules (the model-ensembling
tutorial); everything that would compute or read raises NotImplementedError. Oracles: hand
values, the real module's outputs, PyTorch's reprs when importable."""
import copy
import importlib

import numpy as np
import pytest

import clgrad

_tensor_module = importlib.import_module("clgrad.tensor")  # (clgrad.tensor is the factory)


def test_device_and_creation():
    d = clgrad.device("meta")
    assert d.type == "meta" and d.index is None and str(d) == "meta" and d == "meta"
    x = clgrad.empty(2, 3, device="meta")
    assert x.is_meta and not x.is_cpu and x.device == d and x.device.type == "meta"
    assert x.shape == (2, 3) and x.stride() == (3, 1) and x.dtype is clgrad.float32
    with clgrad.device("meta"):
        y = clgrad.empty(4, dtype=clgrad.int64)
    assert y.is_meta and y.dtype is clgrad.int64 and not clgrad.empty(1).is_meta
    assert clgrad.empty_like(x).is_meta
    # no memory: a (2^20, 2^20) float32 tensor is 4 TiB of data it does not have
    before = _tensor_module._ALLOCATED[0]
    huge = clgrad.empty(2 ** 20, 2 ** 20, device="meta")
    assert huge.numel() == 2 ** 40 and _tensor_module._ALLOCATED[0] == before


def test_to_meta_views_and_deepcopy():
    x = clgrad.arange(6.0).reshape(2, 3).requires_grad_()
    m = x.to("meta")
    assert m.is_meta and m.shape == (2, 3) and m.dtype is clgrad.float32
    assert m.grad_fn.name() == "ToCopyBackward0"      # recorded, as PyTorch's
    v = m.detach().t()
    assert v.is_meta and v.shape == (3, 2) and v.stride() == (1, 3)
    assert m.detach()[1:, ::2].stride() == (3, 2) and m.detach().view(6).shape == (6,)
    assert m.detach().unsqueeze(0).shape == (1, 2, 3)
    c = copy.deepcopy(m.detach())
    assert c.is_meta and c.shape == (2, 3) and c._storage is not m._storage
    assert x.to("meta", clgrad.float64).dtype is clgrad.float64


def test_reprs():
    x = clgrad.empty(3, 4, device="meta", dtype=clgrad.float64, requires_grad=True)
    assert repr(x) == ("tensor(..., device='meta', size=(3, 4), dtype=clgrad.float64,\n"
                       "       requires_grad=True)")
    assert repr(clgrad.empty(0, device="meta")) == "tensor(..., device='meta', size=(0,))"
    assert repr(clgrad.empty(5, dtype=clgrad.int64, device="meta")) == \
        "tensor(..., device='meta', size=(5,), dtype=clgrad.int64)"
    assert repr(clgrad.nn.Parameter(clgrad.empty(2, device="meta"))) == \
        "Parameter containing:\ntensor(..., device='meta', size=(2,), requires_grad=True)"


def test_reprs_match_pytorch():
    torch = pytest.importorskip("torch")
    for lib in (clgrad, torch):
        lib.x = [repr(lib.empty(3, 4, device="meta", dtype=lib.float64, requires_grad=True)),
                 repr(lib.empty(0, device="meta")), repr(lib.empty(5, dtype=lib.int64,
                                                                   device="meta"))]
    assert [r.replace("clgrad.", "torch.") for r in clgrad.x] == torch.x
    del clgrad.x, torch.x


def test_stateless_module_with_functional_call():
    """The model-ensembling tutorial's base model: a copy moved to 'meta', run through
    functional_call with real parameters, gives the real model's outputs."""
    clgrad.manual_seed(0)
    net = clgrad.nn.Sequential(clgrad.nn.Linear(4, 8), clgrad.nn.BatchNorm1d(8),
                               clgrad.nn.ReLU(), clgrad.nn.Linear(8, 2))
    net.eval()
    base = copy.deepcopy(net).to("meta")
    assert all(t.is_meta for t in (*base.parameters(), *base.buffers()))
    assert all(t.is_meta for t in base.state_dict().values())
    assert not any(t.is_meta for t in net.parameters())
    x = clgrad.randn(5, 4)
    state = {**dict(net.named_parameters()), **dict(net.named_buffers())}
    out = clgrad.func.functional_call(base, state, (x,))
    np.testing.assert_array_equal(out.detach().numpy(), net(x).detach().numpy())
    assert all(t.is_meta for t in base.parameters())   # put back after the call


def test_computing_or_reading_raises():
    m = clgrad.empty(2, 3, device="meta")
    for fn in (lambda: m + 1, lambda: m.sum(), lambda: m.numpy(), lambda: m[0, 0].item(),
               lambda: m.tolist(), lambda: m.to("cpu"), lambda: m.contiguous().fill_(1.0),
               lambda: clgrad.zeros(2, device="meta"), lambda: m.t().contiguous(),
               lambda: clgrad.nn.Linear(2, 2, device="meta"), lambda: print(m.sum())):
        with pytest.raises(NotImplementedError, match="'meta' device has a shape and a "
                                                      "dtype but no data"):
            fn()
    with pytest.raises(RuntimeError, match="same device"):
        clgrad.nn.functional.linear(clgrad.ones(1, 3), m)
    with pytest.raises(ValueError, match="'mps' has no meaning here"):
        clgrad.device("mps")
