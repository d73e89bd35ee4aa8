"""NumPy scalars and arrays as operands of tensor arithmetic, checked against real PyTorch
(values and result dtypes), in both operand orders."""
import numpy as np
import pytest

import clgrad

pytestmark = pytest.mark.filterwarnings("ignore:__array_wrap__:DeprecationWarning")  # torch's

torch = pytest.importorskip("torch")

OPS = {"mul": lambda a, b: a * b, "rmul": lambda a, b: b * a, "add": lambda a, b: a + b,
       "radd": lambda a, b: b + a, "sub": lambda a, b: a - b, "rsub": lambda a, b: b - a,
       "div": lambda a, b: a / b, "rdiv": lambda a, b: b / a, "pow": lambda a, b: a ** b,
       "lt": lambda a, b: a < b, "rgt": lambda a, b: b > a, "eq": lambda a, b: a == b,
       "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b}
SCALARS = [np.float32(2), np.float64(2.5), np.float16(2), np.int64(3), np.int32(2), np.int8(2),
           np.uint8(2), np.True_]
BASES = {"float32": lambda m: m.tensor([1.0, -2.0, 4.5]),
         "int64": lambda m: m.tensor([1, 2, 4]),
         "float64": lambda m: m.tensor([1.0, 2.0], dtype=m.float64),
         "int32": lambda m: m.tensor([1, 5], dtype=m.int32),
         "uint8": lambda m: m.tensor([1, 7], dtype=m.uint8)}


def _same(ours, theirs):
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy().astype(np.float64),
                               theirs.numpy().astype(np.float64), rtol=1e-6)


@pytest.mark.parametrize("base", list(BASES))
@pytest.mark.parametrize("s", SCALARS, ids=repr)
def test_numpy_scalars_count_as_python_scalars(base, s):
    for name, op in OPS.items():
        try:
            want = op(BASES[base](torch), s)
        except (RuntimeError, TypeError):
            continue  # what torch refuses is not checked here
        if name == "rmul" or name == "radd":
            assert type(op(BASES[base](clgrad), s)) is clgrad.Tensor  # numpy defers to us
        _same(op(BASES[base](clgrad), s), want)


def test_numpy_scalar_keeps_autograd():
    x = clgrad.tensor([1.0, 2.0], requires_grad=True)
    (x * np.float32(3) + np.float64(1) - np.int64(2)).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    y = np.float64(2.0) * x
    assert isinstance(y, clgrad.Tensor) and y.dtype == clgrad.float32
    loss = clgrad.tensor(0.5)
    assert f"{loss * np.float32(2):.3f}" == "1.000"


@pytest.mark.parametrize("arr", [np.array(2.0), np.array(3), np.array(2.0, dtype=np.float32),
                                 np.array([[2.0], [4.0]]), np.array(2, dtype=np.int8)],
                         ids=lambda a: f"{a.dtype}{list(a.shape)}")
def test_tensor_op_numpy_array_follows_torch(arr):
    for base in ("float32", "int64", "float64"):
        for name in ("mul", "add", "sub", "lt", "eq"):
            t = BASES[base](torch)
            got = OPS[name](BASES[base](clgrad), arr)
            assert isinstance(got, clgrad.Tensor)
            try:
                want = OPS[name](t, arr)
            except TypeError:  # torch refuses tensor < ndarray: NumPy is the oracle
                want = torch.from_numpy(np.asarray(OPS[name](t.numpy(), arr)))
            _same(got, want)


def test_numpy_array_operand_gradient():
    x = clgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * np.array([1.0, 10.0, 100.0])  # float64 result, as torch (through NumPy)
    assert y.dtype == clgrad.float64
    y.sum().backward()
    assert x.grad.dtype == clgrad.float32 and x.grad.tolist() == [1.0, 10.0, 100.0]
