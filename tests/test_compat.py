"""PyTorch's import paths that programs use for flags and markers: torch.backends.*,
torch.jit, torch.fx, nn.DataParallel, Tensor.is_xpu/is_mps (issue 22)."""
import importlib

import pytest
import torch

import clgrad


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
    assert cb.cudnn.is_available() is tb.cudnn.is_available() is False
    assert cb.cudnn.version() is None and tb.cudnn.version() is None
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
