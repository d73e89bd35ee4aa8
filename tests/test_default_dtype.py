"""``clgrad.set_default_dtype`` / ``get_default_dtype`` with PyTorch's semantics: what follows
the default (Python floats, the float factories, ``Tensor(...)``, nn layers' parameters and
buffers, integer operands promoted by a float, true division or a float function, printing),
what does not (integers, NumPy data, checkpoints, ``FloatTensor``, ``float()``), its scope
(the process: every thread sees one value, as PyTorch's) and its errors. Every test leaves
the default at float32 (the autouse fixture, also on failure), and compares with PyTorch
where it is importable (the ``torch`` fixture skips otherwise)."""
import math
import os
import re
import sys
import threading

import numpy as np
import pytest

import clgrad

DEFAULTS = ("float64", "float16", "bfloat16", "float32")
# relative tolerance of values computed in each dtype (against PyTorch or exact ones)
RTOL = {"float64": 1e-12, "float32": 1e-6, "float16": 2e-3, "bfloat16": 2 ** -7}


@pytest.fixture(autouse=True)
def _restore_default():
    """The default back to float32 after each test, whatever happened in it (torch's too)."""
    try:
        yield
    finally:
        clgrad.set_default_dtype(clgrad.float32)
        if "torch" in sys.modules:
            sys.modules["torch"].set_default_dtype(sys.modules["torch"].float32)


@pytest.fixture(autouse=True)
def _float16_needs_the_device(request):
    """A float16 case (a parameter naming float16) skipped where the default device lacks
    cl_khr_fp16 (PoCL's CPU device): making its tensors raises TypeError there."""
    spec = getattr(request.node, "callspec", None)
    named = spec is not None and any(re.search(r"(?<!b)float16", str(v))
                                     for v in spec.params.values())
    if named and not clgrad.default_device().fp16:
        pytest.skip("this device has no float16 (cl_khr_fp16)")


def _runnable(exprs):
    """The expressions this device can run: those making float16 tensors only where it has
    cl_khr_fp16 (PoCL's CPU device has not)."""
    if clgrad.default_device().fp16:
        return list(exprs)
    return [e for e in exprs if not re.search(r"(?<!b)float16|half", e)]


@pytest.fixture
def torch():
    return pytest.importorskip("torch")  # the oracle (not in the dev extra)


def _dt(name):
    return getattr(clgrad, name)


def _values(t):
    return np.asarray(t.tolist(), dtype=np.float64)


# -- the setting itself ------------------------------------------------------------------------
def test_default_is_float32_and_each_allowed_dtype_sets():
    assert clgrad.get_default_dtype() is clgrad.float32
    for name in DEFAULTS:
        assert clgrad.set_default_dtype(_dt(name)) is None
        assert clgrad.get_default_dtype() is _dt(name)
        if name != "float16" or clgrad.default_device().fp16:  # (else no float16 here)
            assert clgrad.tensor(1.5).dtype is _dt(name)


BAD = [("int64", lambda m: m.int64), ("int32", lambda m: m.int32),
       ("uint8", lambda m: m.uint8), ("bool", lambda m: m.bool),
       ("str", lambda m: "float64"), ("float", lambda m: float), ("None", lambda m: None),
       ("np.float64", lambda m: np.float64), ("np.dtype", lambda m: np.dtype("float64"))]


@pytest.mark.parametrize("what", [b[1] for b in BAD], ids=[b[0] for b in BAD])
def test_other_values_raise_type_error_and_keep_the_default(what):
    clgrad.set_default_dtype(clgrad.float64)
    bad = what(clgrad)
    with pytest.raises(TypeError) as e:
        clgrad.set_default_dtype(bad)
    msg = str(e.value)
    assert "set_default_dtype" in msg and "'d'" in msg and "floating" in msg
    assert (repr(bad) if isinstance(bad, clgrad.dtype) else type(bad).__name__) in msg
    assert clgrad.get_default_dtype() is clgrad.float64


@pytest.mark.parametrize("what", [b[1] for b in BAD], ids=[b[0] for b in BAD])
def test_other_values_raise_as_pytorch(torch, what):
    with pytest.raises(TypeError):
        torch.set_default_dtype(what(torch))
    with pytest.raises(TypeError):
        clgrad.set_default_dtype(what(clgrad))


def test_positional_only_as_pytorch(torch):
    with pytest.raises(TypeError):
        torch.set_default_dtype(d=torch.float64)
    with pytest.raises(TypeError):
        clgrad.set_default_dtype(d=clgrad.float64)
    assert clgrad.get_default_dtype() is clgrad.float32


def test_one_default_for_every_thread():
    """PyTorch's default dtype is global, not thread-local: a thread's change is the main
    thread's, and a new thread starts from the current value."""
    clgrad.set_default_dtype(clgrad.float64)
    seen = []

    def worker():
        seen.append(clgrad.get_default_dtype())
        seen.append(clgrad.zeros(1).dtype)
        clgrad.set_default_dtype(clgrad.float16)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == [clgrad.float64, clgrad.float64]
    assert clgrad.get_default_dtype() is clgrad.float16


def test_threads_as_pytorch(torch):
    for m in (clgrad, torch):
        m.set_default_dtype(m.float64)
        seen = []

        def worker(m=m, seen=seen):
            seen.append(str(m.get_default_dtype()).split(".")[1])
            m.set_default_dtype(m.bfloat16)

        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert seen == ["float64"]
        assert m.get_default_dtype() is m.bfloat16


# -- what follows it, with values --------------------------------------------------------------
FOLLOW = [  # (expression, its exact values or None for random/uninitialised data)
    ("tensor(1.5)", 1.5),
    ("tensor([1, 2.5])", [1.0, 2.5]),
    ("tensor([[1.0], [-2.0]])", [[1.0], [-2.0]]),
    ("tensor([])", []),
    ("as_tensor([0.5, 2])", [0.5, 2.0]),
    ("empty(2, 3)", None),
    ("zeros(2)", [0.0, 0.0]),
    ("ones((1, 2))", [[1.0, 1.0]]),
    ("full((2,), 1.5)", [1.5, 1.5]),
    ("arange(3.0)", [0.0, 1.0, 2.0]),
    ("arange(0, 1, 0.25)", [0.0, 0.25, 0.5, 0.75]),
    ("linspace(0, 1, 5)", [0.0, 0.25, 0.5, 0.75, 1.0]),
    ("logspace(0, 2, 3)", [1.0, 10.0, 100.0]),
    ("eye(2)", [[1.0, 0.0], [0.0, 1.0]]),
    ("rand(3)", None),
    ("randn(3)", None),
    ("normal(0.0, 1.0, (3,))", None),
    ("Tensor(2, 3)", None),
    ("Tensor([1, 2])", [1.0, 2.0]),
    ("Tensor()", []),
    ("nn.Parameter()", []),
    ("block_diag()", np.zeros((1, 0))),
    ("nn.utils.clip_grad_norm_([], 1.0)", 0.0),
    ("distributions.Normal(0.0, 1.0).loc", 0.0),
]


@pytest.mark.parametrize("default", DEFAULTS)
@pytest.mark.parametrize("expr,want", FOLLOW, ids=[f[0] for f in FOLLOW])
def test_factories_follow_the_default(default, expr, want):
    clgrad.set_default_dtype(_dt(default))
    t = eval(expr, vars(clgrad))
    assert t.dtype is _dt(default), expr
    if want is not None:
        np.testing.assert_array_equal(_values(t), np.asarray(want, np.float64))
    elif expr.startswith("rand("):
        v = _values(t)
        assert ((v >= 0) & (v < 1)).all()


@pytest.mark.parametrize("default", DEFAULTS)
def test_float_tensor_and_float_stay_float32(default):
    clgrad.set_default_dtype(_dt(default))
    assert clgrad.FloatTensor(2).dtype is clgrad.float32
    assert clgrad.FloatTensor([1.5]).dtype is clgrad.float32
    assert clgrad.DoubleTensor([1.5]).dtype is clgrad.float64
    assert clgrad.tensor([1, 2]).float().dtype is clgrad.float32
    assert clgrad.tensor([1, 2]).double().dtype is clgrad.float64


KEEP = [  # (expression, the dtype it keeps whatever the default)
    ("tensor([1, 2])", "int64"),
    ("tensor(True)", "bool"),
    ("arange(3)", "int64"),
    ("full((2,), 1)", "int64"),
    ("full((2,), True)", "bool"),
    ("randint(3, (2,))", "int64"),
    ("randperm(3)", "int64"),
    ("tensor(np.ones(2, np.float32))", "float32"),
    ("tensor(np.float32(1.5))", "float32"),
    ("tensor(np.ones(2))", "float64"),
    ("from_numpy(np.ones(2, np.float16))", "float16"),
    ("as_tensor(np.ones(2, np.float32))", "float32"),
    ("tensor(ones(2, dtype=float32))", "float32"),
    ("zeros_like(ones(2, dtype=float32))", "float32"),
    ("rand_like(ones(2, dtype=float32))", "float32"),
    ("full_like(tensor([1, 2]), 1.5)", "int64"),
    ("tensor([1, 2]).new_tensor([1.5])", "int64"),
    ("ones(2, dtype=float32).new_tensor([1.5])", "float32"),
    ("ones(2, dtype=float32).new_zeros(2)", "float32"),
    ("zeros(2, dtype=float32)", "float32"),
    ("ones(2, dtype=float32) + 1.5", "float32"),
    ("ones(2, dtype=float16) * 2.5", "float16"),
    ("tensor([1, 2]) + tensor(1.5, dtype=float32)", "float32"),
    ("tensor([1, 2]) // 2", "int64"),
    ("tensor([1, 2]).sum()", "int64"),
    ("nn.BatchNorm1d(3).num_batches_tracked", "int64"),
    ("nn.functional.one_hot(tensor([0, 1]))", "int64"),
]


@pytest.mark.parametrize("default", DEFAULTS[:3])
@pytest.mark.parametrize("expr,dtype", KEEP, ids=[k[0] for k in KEEP])
def test_what_does_not_follow(default, expr, dtype):
    clgrad.set_default_dtype(_dt(default))
    assert eval(expr, dict(vars(clgrad), np=np)).dtype is _dt(dtype), expr


# -- promotion -----------------------------------------------------------------------------------
PROMOTE = [  # (expression, values) whose integer or bool operands promote to the default
    ("tensor([1, 2]) * 1.5", [1.5, 3.0]),
    ("1.5 + tensor([1, 2])", [2.5, 3.5]),
    ("tensor([1, 2]) - 0.5", [0.5, 1.5]),
    ("tensor([3, 6]) / tensor([2, 4])", [1.5, 1.5]),
    ("tensor([1, 2]) / 2", [0.5, 1.0]),
    ("2 / tensor([1, 4])", [2.0, 0.5]),
    ("tensor([True, False]) / tensor([True, True])", [1.0, 0.0]),
    ("tensor([True, False]) + 0.5", [1.5, 0.5]),
    ("tensor([4, 9]) ** 0.5", [2.0, 3.0]),
    ("2.0 ** tensor([1, 2])", [2.0, 4.0]),
    ("tensor([4, 9]).sqrt()", [2.0, 3.0]),
    ("tensor([0, 0]).exp()", [1.0, 1.0]),
    ("tensor([0, 1]).erf()", [0.0, math.erf(1.0)]),
    ("deg2rad(tensor([180]))", [math.pi]),
    ("atan2(tensor([1]), tensor([1]))", [math.pi / 4]),
    ("where(tensor([True, False]), 1.0, 0.0)", [1.0, 0.0]),
    ("where(tensor([True, False]), tensor([2, 3]), 0.5)", [2.0, 0.5]),
    ("clamp(tensor([0, 3]), 0.5, 2.5)", [0.5, 2.5]),
    ("logsumexp(tensor([0, 0]), 0)", math.log(2.0)),
    ("tensor(3) * 1.5", 4.5),
    ("tensor(3) / tensor(2)", 1.5),
    ("tensor(4) ** 0.5", 2.0),
    ("where(tensor(True), tensor(2), 0.5)", 2.0),
    ("clamp(tensor(3), max=1.5)", 1.5),
    ("ones(2, dtype=int32) * 2.5", [2.5, 2.5]),
]


@pytest.mark.parametrize("default", DEFAULTS)
@pytest.mark.parametrize("expr,want", PROMOTE, ids=[p[0] for p in PROMOTE])
def test_integer_operands_promote_to_the_default(default, expr, want):
    """(bfloat16 computes in float32 and rounds once: a 0-dim integer tensor, a where or a
    clamp of integers and numbers must not promote to bfloat16 again inside.)"""
    clgrad.set_default_dtype(_dt(default))
    t = eval(expr, dict(vars(clgrad), int32=clgrad.int32))
    assert t.dtype is _dt(default), expr
    np.testing.assert_allclose(_values(t), np.asarray(want, np.float64), rtol=RTOL[default])


@pytest.mark.parametrize("default", DEFAULTS)
def test_result_type_and_finfo(default):
    clgrad.set_default_dtype(_dt(default))
    i = clgrad.tensor([1, 2])
    assert clgrad.result_type(i, 1.5) is _dt(default)
    assert clgrad.result_type(1, 1.5) is _dt(default)
    assert clgrad.result_type(clgrad.ones(2, dtype=clgrad.float32), 1.5) is clgrad.float32
    assert clgrad.finfo().dtype == default
    assert clgrad.finfo(clgrad.float32).bits == 32


# -- nn ------------------------------------------------------------------------------------------
LAYERS = [  # (constructor, its floating parameters and buffers)
    ("nn.Linear(2, 3)", ("weight", "bias")),
    ("nn.Bilinear(2, 2, 3)", ("weight", "bias")),
    ("nn.Conv1d(2, 3, 3)", ("weight", "bias")),
    ("nn.Conv2d(2, 3, 3)", ("weight", "bias")),
    ("nn.ConvTranspose2d(2, 3, 3)", ("weight", "bias")),
    ("nn.BatchNorm2d(3)", ("weight", "bias", "running_mean", "running_var")),
    ("nn.LayerNorm(3)", ("weight", "bias")),
    ("nn.GroupNorm(1, 3)", ("weight", "bias")),
    ("nn.Embedding(4, 2)", ("weight",)),
    ("nn.RNN(2, 3)", ("weight_ih_l0", "bias_hh_l0")),
    ("nn.LSTM(2, 3)", ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0")),
    ("nn.GRUCell(2, 3)", ("weight_ih", "bias_hh")),
    ("nn.PReLU()", ("weight",)),
    ("nn.MultiheadAttention(4, 2)", ("in_proj_weight", "in_proj_bias")),
]


@pytest.mark.parametrize("default", DEFAULTS[:3])
@pytest.mark.parametrize("ctor,names", LAYERS, ids=[x[0] for x in LAYERS])
def test_layers_are_made_in_the_default(default, ctor, names):
    clgrad.set_default_dtype(_dt(default))
    m = eval(ctor, vars(clgrad))
    for n in names:
        assert getattr(m, n).dtype is _dt(default), n
    assert all(p.dtype is _dt(default) for p in m.parameters())
    if default != "float32":  # an explicit dtype still wins: "nn.Linear(2, 3, dtype=float32)"
        args = ctor[ctor.index("(") + 1:-1]
        explicit = ctor[:ctor.index("(") + 1] + args + (", " if args else "") + "dtype=float32)"
        assert all(p.dtype is clgrad.float32 for p in eval(explicit, vars(clgrad)).parameters())


def test_float64_training_step():
    """A tutorial's opening: set_default_dtype(float64), then a model, Python-float data and
    SGD: every tensor float64, and the loss goes down."""
    clgrad.set_default_dtype(clgrad.float64)
    clgrad.manual_seed(0)
    model = clgrad.nn.Sequential(clgrad.nn.Linear(1, 8), clgrad.nn.Tanh(), clgrad.nn.Linear(8, 1))
    x = clgrad.linspace(-1, 1, 32).reshape(-1, 1)
    y = clgrad.sin(3 * x) + 0.1
    opt = clgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = clgrad.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert x.dtype is y.dtype is loss.dtype is clgrad.float64
    assert all(p.dtype is clgrad.float64 and p.grad.dtype is clgrad.float64
               for p in model.parameters())
    assert opt.state[model[0].weight]["momentum_buffer"].dtype is clgrad.float64
    assert losses[-1] < 0.5 * losses[0]


# -- printing ------------------------------------------------------------------------------------
REPRS = ["tensor([1.5])", "tensor([1.5], dtype=float32)", "tensor([1.5], dtype=float64)",
         "tensor([1.5], dtype=float16)", "tensor([], dtype=float32)", "tensor([])",
         "tensor(2.0, dtype=float32)", "tensor([1, 2])", "zeros((0, 2))",
         "tensor([True])", "tensor([1.0, 2.0], dtype=float32)"]


@pytest.mark.parametrize("default", DEFAULTS)
def test_repr_marks_dtypes_relative_to_the_default(default):
    clgrad.set_default_dtype(_dt(default))
    f32 = repr(clgrad.tensor([1.5], dtype=clgrad.float32))
    f64 = repr(clgrad.tensor([1.5], dtype=clgrad.float64))
    assert ("dtype=" in f32) == (default != "float32")
    assert ("dtype=" in f64) == (default != "float64")
    assert repr(clgrad.tensor([1.5])) == "tensor([1.5000])"
    assert repr(clgrad.tensor([])) == "tensor([])"
    assert repr(clgrad.tensor([1, 2])) == "tensor([1, 2])"


@pytest.mark.parametrize("default", DEFAULTS)
def test_repr_as_pytorch(torch, default):
    for m in (clgrad, torch):
        m.set_default_dtype(getattr(m, default))
    for expr in _runnable(REPRS):
        want = repr(eval(expr, vars(torch))).replace("torch.", "clgrad.")
        assert repr(eval(expr, vars(clgrad))) == want, expr


# -- checkpoints and compile ---------------------------------------------------------------------
@pytest.mark.parametrize("name", ["m.pt", "m.safetensors"])
def test_checkpoints_keep_their_stored_dtypes(tmp_path, name):
    path = os.fspath(tmp_path / name)
    clgrad.manual_seed(0)
    model = clgrad.nn.Linear(2, 3)  # float32
    clgrad.save(model.state_dict(), path)
    clgrad.set_default_dtype(clgrad.float64)
    sd = clgrad.load(path)
    assert all(v.dtype is clgrad.float32 for v in sd.values())
    np.testing.assert_array_equal(_values(sd["weight"]), _values(model.weight))
    m64 = clgrad.nn.Linear(2, 3)  # float64: load_state_dict copies into its dtype (PyTorch's)
    m64.load_state_dict(sd)
    assert m64.weight.dtype is clgrad.float64
    np.testing.assert_allclose(_values(m64.weight), _values(model.weight))
    clgrad.save({"w": clgrad.tensor([0.1])}, path)  # float64, stored so
    clgrad.set_default_dtype(clgrad.float32)
    w = clgrad.load(path)["w"]
    assert w.dtype is clgrad.float64 and w.item() == 0.1


def test_checkpoint_from_pytorch_keeps_float32(torch, tmp_path):
    path = os.fspath(tmp_path / "t.pt")
    torch.save({"w": torch.tensor([0.5, 1.5])}, path)  # torch's default: float32
    clgrad.set_default_dtype(clgrad.float64)
    w = clgrad.load(path)["w"]
    assert w.dtype is clgrad.float32 and w.tolist() == [0.5, 1.5]


def test_compile_keys_on_the_default_dtype():
    """A captured call made under one default must not be replayed under another: its
    factories' and promotions' dtypes were baked in."""
    f = clgrad.compile(lambda x: x / 2 + clgrad.ones(2), mode="reduce-overhead")
    x = clgrad.tensor([2, 4])
    for default in ("float32",) * 3 + ("float64",) * 3 + ("float32",):
        clgrad.set_default_dtype(_dt(default))
        out = f(x)
        assert out.dtype is _dt(default)
        assert out.tolist() == [2.0, 3.0]


# -- devices ---------------------------------------------------------------------------------------
def test_float16_default_checks_the_device_where_a_tensor_is_made(monkeypatch):
    """Setting float16 consults no device; making a float16 tensor on one without
    cl_khr_fp16 raises the existing TypeError."""
    dev = clgrad.empty(0)._storage.device
    monkeypatch.setattr(dev, "fp16", False)
    clgrad.set_default_dtype(clgrad.float16)
    with pytest.raises(TypeError, match="cl_khr_fp16"):
        clgrad.zeros(2)
    with pytest.raises(TypeError, match="cl_khr_fp16"):
        clgrad.tensor([1.5])
    assert clgrad.tensor([1, 2]).dtype is clgrad.int64  # integers need nothing


# -- against PyTorch -----------------------------------------------------------------------------
ORACLE = [e for e, _ in FOLLOW if not e.startswith(("Tensor()", "block_diag", "nn.utils"))] + \
    [e for e, _ in KEEP] + [e for e, _ in PROMOTE] + [
        "nn.Linear(2, 3).weight", "nn.BatchNorm1d(3).running_var", "nn.LSTM(2, 3).bias_hh_l0",
        "nn.Embedding(3, 2).weight", "nn.Transformer.generate_square_subsequent_mask(3)",
        "nn.Linear(2, 3)(ones(1, 2))", "distributions.Bernoulli(0.3).probs",
        "distributions.Categorical(tensor([0.3, 0.7])).sample()",
        "tensor([1, 2]).to(get_default_dtype())", "result_type(tensor([1]), 2.5)"]


def _dtype_name(v):
    return str(getattr(v, "dtype", v)).split(".")[-1]


@pytest.mark.filterwarnings("ignore:To copy construct from a tensor:UserWarning")
@pytest.mark.parametrize("default", DEFAULTS[:3])
def test_dtypes_and_values_as_pytorch(torch, default):
    """Every expression above, evaluated by clgrad and by PyTorch under the same default: the
    same dtype, and the same values where they are not random."""
    bad = []
    for expr in _runnable(ORACLE):
        got = {}
        for m in (clgrad, torch):
            m.set_default_dtype(getattr(m, default))
            m.manual_seed(0)
            env = dict(vars(m), np=np, int32=m.int32)
            got[m.__name__] = eval(expr, env)
        c, t = got["clgrad"], got["torch"]
        if _dtype_name(c) != _dtype_name(t):
            bad.append(f"{expr}: clgrad {_dtype_name(c)}, torch {_dtype_name(t)}")
            continue
        random = expr.startswith(("rand", "empty", "Tensor(2", "normal", "nn.", "distrib"))
        if isinstance(t, torch.Tensor) and not random and t.numel():
            np.testing.assert_allclose(_values(c), np.asarray(t.tolist(), np.float64),
                                       rtol=RTOL.get(_dtype_name(t), 0), err_msg=expr)
    assert not bad, "\n".join(bad)


def test_arange_float_bounds_with_an_integer_dtype_truncate_start_and_step():
    # PyTorch: length ceil((end - start) / step) in double, values int(start) + i * int(step)
    i64 = clgrad.int64
    assert clgrad.arange(0, 5, 1.5, dtype=i64).tolist() == [0, 1, 2, 3]
    assert clgrad.arange(-2.5, 1, dtype=i64).tolist() == [-2, -1, 0, 1]
    assert clgrad.arange(0, 2, 0.5, dtype=i64).tolist() == [0, 0, 0, 0]
    assert clgrad.arange(3.7, -1, -1.5, dtype=clgrad.int32).tolist() == [3, 2, 1, 0]
    assert clgrad.arange(0, 5, 1.5, dtype=clgrad.float64).tolist() == [0.0, 1.5, 3.0, 4.5]
    assert clgrad.arange(0, 5, 2, dtype=clgrad.int32).tolist() == [0, 2, 4]
