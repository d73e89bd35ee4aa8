"""PyTorch's import paths that programs use for flags and markers: torch.backends.*,
torch.jit, torch.fx, nn.DataParallel, Tensor.is_xpu/is_mps (issue 22)."""
import importlib
import math

import numpy as np

import pytest

import clgrad

torch = pytest.importorskip("torch")  # the oracle (not in the dev extra)


def test_backends_is_a_package_with_pytorch_submodules():
    cudnn = importlib.import_module("clgrad.backends.cudnn")
    assert clgrad.backends.cudnn is cudnn
    for name in ("cudnn", "cuda", "mps"):
        assert importlib.import_module(f"clgrad.backends.{name}") is getattr(clgrad.backends,
                                                                             name)
    # the conv settings of the old module are still there
    assert clgrad.backends.conv_algorithm in clgrad.backends.CONV_ALGORITHMS
    assert isinstance(clgrad.backends.last_conv_algorithms, dict)


def test_backend_flags_defaults_as_cpu_pytorch():
    cb, tb = clgrad.backends, torch.backends
    for name in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(cb.cudnn, name) == getattr(tb.cudnn, name), name
    # clgrad has no cuDNN, whatever the machine: as a CPU build of PyTorch (the installed torch
    # may be a CUDA build, as on the GPU machine, so its answers are not the oracle here)
    assert cb.cudnn.is_available() is False
    assert cb.cudnn.version() is None
    assert cb.mps.is_available() is False and cb.mps.is_built() is False
    assert cb.cuda.matmul.allow_tf32 == tb.cuda.matmul.allow_tf32
    assert cb.cuda.is_built() is False


def test_backend_flags_are_stored_and_flags_context_restores():
    cudnn = clgrad.backends.cudnn
    old = cudnn.benchmark, cudnn.deterministic
    try:
        cudnn.benchmark = True
        cudnn.deterministic = True
        assert clgrad.backends.cudnn.benchmark is True
        with cudnn.flags(enabled=False, benchmark=False):
            assert cudnn.enabled is False and cudnn.benchmark is False
        assert cudnn.enabled is True and cudnn.benchmark is True
        clgrad.backends.cuda.matmul.allow_tf32 = True
        assert clgrad.backends.cuda.matmul.allow_tf32 is True
    finally:
        cudnn.benchmark, cudnn.deterministic = old
        clgrad.backends.cuda.matmul.allow_tf32 = False


def test_jit_queries_and_markers():
    jit = clgrad.jit
    assert jit.is_scripting() is False and jit.is_tracing() is False
    assert jit.Final is torch.jit.Final

    def f(x):
        return x + 1
    for deco in (jit.unused, jit.ignore, jit.export, jit._overload, jit._overload_method,
                 jit.ignore(drop=True), jit.script_if_tracing):
        assert deco(f) is f
    from clgrad.jit.annotations import List, Optional, Tuple  # noqa: F401

    class M(clgrad.nn.Module):
        @jit.unused
        def slow(self, x):
            return x * 2

        @jit.ignore
        def fast(self, x):
            return x * 3
    m = M()
    assert m.slow(2) == 4 and m.fast(2) == 6


@pytest.mark.parametrize("fn", ["script", "trace"])
def test_jit_script_and_trace_raise_clearly(fn):
    with pytest.raises(NotImplementedError, match="eager"):
        getattr(clgrad.jit, fn)(clgrad.nn.Linear(2, 2))


def test_fx_wrap():
    def f(x):
        return x
    assert clgrad.fx.wrap(f) is f
    assert clgrad.fx.wrap("f") == "f"
    with pytest.raises(RuntimeError):
        clgrad.fx.wrap(3)
    with pytest.raises(RuntimeError):
        torch.fx.wrap(3)


def test_import_torch_backends_cudnn_in_a_program():
    ns = {}
    exec("import clgrad as torch\nimport clgrad.backends.cudnn as cudnn\n"
         "cudnn.benchmark = True\nok = torch.backends.cudnn.benchmark", ns)
    assert ns["ok"] is True
    clgrad.backends.cudnn.benchmark = False


def test_data_parallel_forwards_and_prefixes_state_dict_like_torch():
    clgrad.manual_seed(0)
    inner = clgrad.nn.Sequential(clgrad.nn.Linear(3, 4), clgrad.nn.ReLU(),
                                 clgrad.nn.Linear(4, 2))
    dp = clgrad.nn.DataParallel(inner, device_ids=[0])
    assert dp.module is inner
    ref = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(),
                                                    torch.nn.Linear(4, 2)))
    assert list(dp.state_dict()) == list(ref.state_dict())
    x = clgrad.randn(5, 3)
    np.testing.assert_array_equal(dp(x).detach().numpy(), inner(x).detach().numpy())
    dp(x).sum().backward()
    assert all(p.grad is not None for p in inner.parameters())
    assert [n for n, _ in dp.named_parameters()] == [n for n, _ in ref.named_parameters()]
    # a checkpoint saved from DataParallel loads back into one, and into the bare module
    # once the prefix is stripped (the common idiom)
    sd = dp.state_dict()
    dp2 = clgrad.nn.DataParallel(clgrad.nn.Sequential(clgrad.nn.Linear(3, 4), clgrad.nn.ReLU(),
                                                      clgrad.nn.Linear(4, 2)))
    dp2.load_state_dict(sd)
    np.testing.assert_array_equal(dp2(x).detach().numpy(), dp(x).detach().numpy())
    bare = clgrad.nn.Sequential(clgrad.nn.Linear(3, 4), clgrad.nn.ReLU(), clgrad.nn.Linear(4, 2))
    bare.load_state_dict({k[len("module."):]: v for k, v in sd.items()})
    np.testing.assert_array_equal(bare(x).detach().numpy(), dp(x).detach().numpy())
    assert clgrad.nn.parallel.DataParallel is clgrad.nn.DataParallel
    with pytest.raises(TypeError):
        clgrad.nn.DataParallel(lambda v: v)


def test_tensor_device_kind_flags():
    x = clgrad.zeros(2)
    assert x.is_xpu is False and x.is_mps is False
    assert x.is_cuda is (clgrad.device(x.device).type == "cuda")
    assert x.is_xpu == torch.zeros(2).is_xpu and x.is_mps == torch.zeros(2).is_mps


def test_init_sparse_and_deprecated_names():
    init = clgrad.nn.init
    w = clgrad.empty(40, 30)
    assert init.sparse_(w, sparsity=0.25, std=0.5) is w
    a = w.numpy()
    assert ((a == 0).sum(0) == math.ceil(0.25 * 40)).all()  # per column, as PyTorch
    nz = a[a != 0]
    assert abs(nz.std() - 0.5) < 0.05 and abs(nz.mean()) < 0.05
    with pytest.raises(ValueError):
        init.sparse_(clgrad.empty(2, 3, 4), 0.1)
    for old in ("uniform", "normal", "xavier_uniform", "xavier_normal", "kaiming_uniform",
                "kaiming_normal", "orthogonal"):
        assert hasattr(torch.nn.init, old)
        t = clgrad.zeros(5, 6)
        with pytest.warns(FutureWarning, match=f"nn.init.{old}_"):
            getattr(init, old)(t)
        assert (t.numpy() != 0).any()
    t = clgrad.zeros(3, 3)
    with pytest.warns(FutureWarning):
        init.constant(t, 2.5)
    assert (t.numpy() == 2.5).all()
    with pytest.warns(FutureWarning):
        init.eye(t)
    np.testing.assert_array_equal(t.numpy(), np.eye(3))


def test_legacy_tensor_types_and_variable():
    assert tuple(clgrad.FloatTensor(2, 3).shape) == (2, 3)
    assert clgrad.FloatTensor(2, 3).dtype is clgrad.float32
    assert tuple(clgrad.FloatTensor().shape) == tuple(torch.FloatTensor().shape) == (0,)
    for name in ("FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "ByteTensor",
                 "BoolTensor"):
        c, t = getattr(clgrad, name)([1, 0, 2]), getattr(torch, name)([1, 0, 2])
        assert c.dtype.name == str(t.dtype).replace("torch.", "") and c.tolist() == t.tolist()
    x = clgrad.zeros(2)
    on_gpu = bool(x.is_cuda)
    assert isinstance(x, clgrad.FloatTensor) is not on_gpu
    assert isinstance(x, clgrad.cuda.FloatTensor) is on_gpu
    assert not isinstance(x, clgrad.LongTensor) and not isinstance(3, clgrad.FloatTensor)
    assert isinstance(clgrad.zeros(2, dtype=clgrad.int64), clgrad.LongTensor) is not on_gpu
    alias = clgrad.FloatTensor(x)
    alias.add_(1)
    assert x.tolist() == [1.0, 1.0]  # shares the storage, as PyTorch
    with pytest.raises(TypeError):
        clgrad.FloatTensor(clgrad.zeros(2, dtype=clgrad.int64))
    v = clgrad.autograd.Variable(x, requires_grad=True)
    tv = torch.autograd.Variable(torch.ones(2), requires_grad=True)
    assert v.requires_grad and v.is_leaf and tv.is_leaf and v is not x
    assert not x.requires_grad


def test_rng_state_round_trip_and_fork_rng():
    state = clgrad.get_rng_state()
    assert state.dtype is clgrad.uint8 and state.ndim == 1
    a = clgrad.randn(4).numpy()
    clgrad.set_rng_state(state)
    np.testing.assert_array_equal(clgrad.randn(4).numpy(), a)
    with clgrad.random.fork_rng():
        clgrad.randn(10)
    b = clgrad.randn(3).numpy()
    clgrad.set_rng_state(state)
    clgrad.randn(4)
    np.testing.assert_array_equal(clgrad.randn(3).numpy(), b)
    assert clgrad.random.get_rng_state is clgrad.get_rng_state
    with pytest.raises(RuntimeError):
        clgrad.set_rng_state(clgrad.zeros(3, dtype=clgrad.uint8))
    with pytest.raises(TypeError):
        clgrad.set_rng_state(clgrad.zeros(45))


def test_resize_as_torch():
    for sizes in ((2, 3), (4,), (3, 3), (0,), (2, 5)):
        c, t = clgrad.arange(6.0), torch.arange(6.0)
        c.resize_(*sizes)
        t.resize_(*sizes)
        assert tuple(c.shape) == tuple(t.shape) and c.is_contiguous()
        k = min(6, c.numel())
        np.testing.assert_array_equal(c.numpy().ravel()[:k], t.numpy().ravel()[:k])
    c = clgrad.arange(6.0)
    assert c.resize_as_(clgrad.zeros(3, 2)) is c and tuple(c.shape) == (3, 2)
    with pytest.raises(RuntimeError, match="require grad"):
        clgrad.zeros(2, requires_grad=True).resize_(3)


def test_amp_runs_full_precision_with_a_disabled_scaler(cpu_default):
    clgrad.manual_seed(0)
    m = clgrad.nn.Linear(3, 1)
    w0 = m.weight.detach().numpy().copy()
    opt = clgrad.optim.SGD(m.parameters(), lr=0.1)
    scaler = clgrad.amp.GradScaler(enabled=False)  # a pass-through (tests/test_grad_scaler.py)
    x = clgrad.randn(4, 3)
    with clgrad.autocast(device_type="cuda", dtype=clgrad.float16):
        loss = m(x).square().mean()
    assert loss.dtype is clgrad.float32
    scaler.scale(loss).backward()
    g = m.weight.grad.numpy().copy()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(m.weight.detach().numpy(), w0 - 0.1 * g, rtol=1e-6)
    ref = torch.amp.GradScaler(enabled=False)
    assert scaler.get_scale() == ref.get_scale() and scaler.state_dict() == ref.state_dict()
    assert scaler.is_enabled() is ref.is_enabled() is False
    from clgrad.cuda.amp import GradScaler, autocast  # noqa: F401  (the old import path)
    assert importlib.import_module("clgrad.cuda.amp").GradScaler is clgrad.amp.GradScaler

    @clgrad.autocast("cpu")
    def f(v):
        return v * 2
    assert f(clgrad.ones(2)).tolist() == [2.0, 2.0]
    assert clgrad.is_autocast_enabled() is False
    assert clgrad.compile(m) is m and clgrad.compile(mode="max-autotune")(m) is m


def test_get_default_dtype():
    assert clgrad.get_default_dtype() is clgrad.float32
    assert str(torch.get_default_dtype()) == "torch.float32"
    assert clgrad.tensor([1.5]).dtype is clgrad.get_default_dtype()


def test_factories_take_requires_grad():
    """eye, arange, full, linspace, logspace and the *_like factories take requires_grad=, as
    PyTorch's; values from NumPy; integer dtypes refuse it (RuntimeError, as PyTorch)."""
    x = clgrad.ones(2, 3)
    cases = {"eye": (clgrad.eye(3, requires_grad=True), np.eye(3)),
             "arange": (clgrad.arange(0.0, 2.0, 0.5, requires_grad=True),
                        np.arange(0.0, 2.0, 0.5)),
             "full": (clgrad.full((2,), 1.5, requires_grad=True), np.full(2, 1.5)),
             "linspace": (clgrad.linspace(0, 1, 5, requires_grad=True), np.linspace(0, 1, 5)),
             "logspace": (clgrad.logspace(0, 2, 3, base=2.0, requires_grad=True),
                          np.logspace(0, 2, 3, base=2.0)),
             "full_like": (clgrad.full_like(x, 7.0, requires_grad=True), np.full((2, 3), 7.0)),
             "zeros_like": (clgrad.zeros_like(x, requires_grad=True), np.zeros((2, 3)))}
    for name, (t, want) in cases.items():
        assert t.requires_grad and t.is_leaf and t.dtype == clgrad.float32, name
        np.testing.assert_allclose(t.detach().numpy(), want, rtol=1e-6, err_msg=name)
    assert clgrad.empty_like(x, requires_grad=True).requires_grad
    assert clgrad.randn_like(x, requires_grad=True).requires_grad
    e = clgrad.eye(2, requires_grad=True)
    (e * 3).sum().backward()
    np.testing.assert_array_equal(e.grad.numpy(), np.full((2, 2), 3.0))
    with pytest.raises(RuntimeError, match="floating point"):
        clgrad.eye(2, dtype=clgrad.int64, requires_grad=True)


def test_factories_requires_grad_match_pytorch():
    torch = pytest.importorskip("torch")
    for name, args, kw in [("eye", (3,), {}), ("arange", (4.0,), {}), ("full", ((2,), 1.0), {}),
                           ("linspace", (0, 1, 4), {}), ("logspace", (0, 1, 4), {}),
                           ("logspace", (0, 3, 4), {"base": 2.0})]:
        c = getattr(clgrad, name)(*args, requires_grad=True, **kw)
        t = getattr(torch, name)(*args, requires_grad=True, **kw)
        assert c.requires_grad and t.requires_grad
        np.testing.assert_allclose(c.detach().numpy(), t.detach().numpy(), rtol=1e-6)


def test_tensor_legacy_constructor():
    """torch.Tensor(...) as PyTorch: data -> a float32 copy, sizes -> uninitialised float32,
    nothing -> shape (0,), a tensor -> an alias of it (any dtype), a Size -> sizes."""
    t = clgrad.Tensor([1, 2])
    assert isinstance(t, clgrad.Tensor) and t.dtype == clgrad.float32 and t.tolist() == [1., 2.]
    assert clgrad.Tensor(np.array([[1, 2]])).tolist() == [[1.0, 2.0]]
    assert clgrad.Tensor((2, 3)).tolist() == [2.0, 3.0]  # a tuple is data, as in PyTorch
    e = clgrad.Tensor(2, 3)
    assert e.shape == (2, 3) and e.dtype == clgrad.float32 and not e.requires_grad
    assert clgrad.Tensor().shape == (0,) and clgrad.Tensor(clgrad.Size([4])).shape == (4,)
    assert clgrad.Tensor(2, 3, 4, 0).shape == (2, 3, 4, 0)
    a = clgrad.ones(2, requires_grad=True)
    b = clgrad.Tensor(a)
    assert b is not a and not b.requires_grad and b.is_leaf
    with clgrad.no_grad():
        b.add_(1)
    assert a.tolist() == [2.0, 2.0]  # shares a's storage
    assert clgrad.Tensor(clgrad.tensor([1, 2])).dtype == clgrad.int64
    with pytest.raises(TypeError, match=r"Tensor: expected sizes \(ints\), a sequence or a "
                                        r"Tensor, got \('str',\)"):
        clgrad.Tensor("x")


def test_tensor_legacy_constructor_matches_pytorch():
    torch = pytest.importorskip("torch")
    for args in ([[1, 2]], [(2, 3)], [2, 3], [], [np.arange(3)]):
        c, t = clgrad.Tensor(*args), torch.Tensor(*args)
        assert tuple(c.shape) == tuple(t.shape) and str(c.dtype)[7:] == str(t.dtype)[6:], args
        if t.numel() and args not in ([2, 3],):
            assert c.tolist() == t.tolist()


def test_where_with_one_argument_is_nonzero_as_tuple():
    c = np.array([[0, 3, 0], [1, 0, 2]])
    got = clgrad.where(clgrad.tensor(c))
    assert isinstance(got, tuple) and len(got) == 2
    for g, want in zip(got, np.nonzero(c)):
        assert g.dtype == clgrad.int64 and g.tolist() == want.tolist()
    x = clgrad.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = clgrad.where(x > 0, x, clgrad.zeros(3))
    y.sum().backward()
    assert y.tolist() == [1.0, 0.0, 3.0] and x.grad.tolist() == [1.0, 0.0, 1.0]
    with pytest.raises(TypeError, match="only one of input and other"):
        clgrad.where(x > 0, x)
    torch = pytest.importorskip("torch")
    want = torch.where(torch.tensor(c))
    assert [g.tolist() for g in got] == [w.tolist() for w in want]


def test_module_half_double_float_bfloat16(cpu_fp16):
    m = clgrad.nn.Sequential(clgrad.nn.Linear(2, 3), clgrad.nn.BatchNorm1d(3))
    w = m[0].weight.detach().numpy().copy()
    assert m.half() is m and m[0].weight.dtype == clgrad.float16
    assert m[1].running_mean.dtype == clgrad.float16
    assert m[1].num_batches_tracked.dtype == clgrad.int64  # integers keep their dtype
    np.testing.assert_array_equal(m[0].weight.detach().numpy(), w.astype(np.float16))
    assert m.double()[0].weight.dtype == clgrad.float64 and m.float()[0].bias.dtype == \
        clgrad.float32
    assert m.bfloat16() is m and m[0].weight.dtype == clgrad.bfloat16
    assert m[1].running_var.dtype == clgrad.bfloat16
    assert m[1].num_batches_tracked.dtype == clgrad.int64
    assert clgrad.ones(2).bfloat16().dtype == clgrad.bfloat16
