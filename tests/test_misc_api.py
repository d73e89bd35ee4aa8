"""PyTorch names real programs use that clgrad lacked (the misc-api branch): Python types as
dtypes, the statistics, scatter and product ops, module-level helpers and window functions,
Tensor's small methods. Values against NumPy float64 (and PyTorch where importable),
gradients by float64 gradcheck, inputs non-contiguous."""
import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck


def _torch():
    return pytest.importorskip("torch")


# -- 1. Python types as dtypes: float -> float64, int -> int64, bool -> bool ------------------
ENTRY_POINTS = {
    "tensor": lambda dt: clgrad.tensor([1, 2], dtype=dt),
    "as_tensor": lambda dt: clgrad.as_tensor([1, 2], dtype=dt),
    "zeros": lambda dt: clgrad.zeros(2, dtype=dt),
    "ones": lambda dt: clgrad.ones(2, dtype=dt),
    "empty": lambda dt: clgrad.empty(2, dtype=dt),
    "full": lambda dt: clgrad.full((2,), 1, dtype=dt),
    "arange": lambda dt: clgrad.arange(3, dtype=dt),
    "eye": lambda dt: clgrad.eye(2, dtype=dt),
    "zeros_like": lambda dt: clgrad.zeros_like(clgrad.ones(2), dtype=dt),
    "full_like": lambda dt: clgrad.full_like(clgrad.ones(2), 1, dtype=dt),
    "to": lambda dt: clgrad.ones(2).to(dt),
    "to_kw": lambda dt: clgrad.ones(2).to(dtype=dt),
    "to_device_dtype": lambda dt: clgrad.ones(2).to(clgrad.ones(1).device, dt),
    "new_zeros": lambda dt: clgrad.ones(2).new_zeros(2, dtype=dt),
    "new_full": lambda dt: clgrad.ones(2).new_full((2,), 1, dtype=dt),
    "new_tensor": lambda dt: clgrad.ones(2).new_tensor([1, 2], dtype=dt),
    "sum": lambda dt: clgrad.ones(2).sum(dtype=dt),
    "cumsum": lambda dt: clgrad.ones(2).cumsum(0, dtype=dt),
}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("py, want", [(float, "float64"), (int, "int64"), (bool, "bool")])
def test_python_types_as_dtypes(entry, py, want):
    if entry in ("sum", "cumsum", "arange", "eye") and py is bool:
        pytest.skip("PyTorch refuses bool here too")
    assert ENTRY_POINTS[entry](py).dtype is getattr(clgrad, want)


def test_python_float_is_float64_whatever_the_default():
    old = clgrad.get_default_dtype()
    try:
        clgrad.set_default_dtype(clgrad.float64)
        assert clgrad.zeros(1, dtype=float).dtype is clgrad.float64
        clgrad.set_default_dtype(clgrad.float32)
        assert clgrad.zeros(1, dtype=float).dtype is clgrad.float64
    finally:
        clgrad.set_default_dtype(old)


def test_complex_dtype_is_a_clear_error():
    with pytest.raises(TypeError, match="no complex dtypes"):
        clgrad.zeros(2, dtype=complex)
    with pytest.raises(TypeError, match="no complex dtypes"):
        clgrad.ones(2).to(complex)


def test_type_takes_legacy_types_and_refuses_python_types():
    x = clgrad.arange(3.0)[::2]
    assert x.type(clgrad.DoubleTensor).dtype is clgrad.float64
    assert x.type(clgrad.LongTensor).tolist() == [0, 2]
    assert x.type(clgrad.cuda.FloatTensor).dtype is clgrad.float32
    assert x.type(clgrad.float64).dtype is clgrad.float64
    assert x.type("torch.IntTensor").dtype is clgrad.int32
    with pytest.raises(ValueError, match="invalid type: 'float'"):  # as PyTorch
        x.type(float)


def test_python_types_match_torch():
    torch = _torch()
    for py in (float, int, bool):
        assert str(torch.zeros(1, dtype=py).dtype).split(".")[1] == \
            clgrad.zeros(1, dtype=py).dtype.name
    with pytest.raises(ValueError):
        torch.ones(1).type(float)
