"""The small integer dtypes uint8, int8 and int16: creation, casts, PyTorch's type promotion,
wraparound arithmetic, comparisons and reductions, against NumPy and hand values.

A representative set of (op, dtype) pairs, not the cross product: every new dtype pair costs
an OpenCL program build."""
import numpy as np
import pytest

import clgrad
from clgrad import dtypes

U8, I8, I16 = clgrad.uint8, clgrad.int8, clgrad.int16
SMALL = [U8, I8, I16]


def test_names_aliases_and_numpy_types():
    assert (U8.np, I8.np, I16.np) == (np.dtype(np.uint8), np.dtype(np.int8), np.dtype(np.int16))
    assert clgrad.short is I16 and repr(U8) == "clgrad.uint8"
    assert dtypes.to_dtype("uint8") is U8 and dtypes.to_dtype("byte") is U8
    assert dtypes.to_dtype("char") is I8 and dtypes.to_dtype(np.int16) is I16
    assert not U8.is_floating_point and not U8.is_bool and U8.itemsize == 1


@pytest.mark.parametrize("np_dtype,dt", [(np.uint8, U8), (np.int8, I8), (np.int16, I16)])
def test_numpy_arrays_and_scalars_keep_their_dtype(np_dtype, dt):
    a = np.array([[0, 1, 2], [3, 4, 127]], dtype=np_dtype)
    for t in (clgrad.tensor(a), clgrad.from_numpy(a), clgrad.as_tensor(a)):
        assert t.dtype is dt
        assert t.numpy().dtype == np_dtype
        np.testing.assert_array_equal(t.numpy(), a)
    assert clgrad.tensor(np_dtype(5)).dtype is dt


def test_unsupported_unsigned_types_still_widen():
    t = clgrad.tensor(np.array([1, 65535], np.uint16))
    assert t.dtype is clgrad.int64 and t.numpy().tolist() == [1, 65535]


@pytest.mark.parametrize("dt", SMALL)
def test_factories(dt):
    assert clgrad.zeros(2, 3, dtype=dt).numpy().tolist() == [[0] * 3] * 2
    assert clgrad.ones(3, dtype=dt).dtype is dt
    assert clgrad.arange(5, dtype=dt).numpy().tolist() == [0, 1, 2, 3, 4]
    assert clgrad.full((2,), -1 if dt is not U8 else 255, dtype=dt).numpy().tolist() == \
        [-1 if dt is not U8 else 255] * 2
    assert clgrad.tensor([1, 2], dtype=dt).dtype is dt


# PyTorch's rule: an unsigned dtype takes -max..max (uint8 -1 fills 255), so -256 overflows
@pytest.mark.parametrize("dt,value", [(U8, 256), (U8, -256), (I8, 128), (I16, -32769)])
def test_fill_values_out_of_range_raise(dt, value):
    with pytest.raises(RuntimeError, match=f"cannot be converted to type {dt.name}"):
        clgrad.full((2,), value, dtype=dt)
    with pytest.raises(RuntimeError, match="without overflow"):
        clgrad.zeros(2, dtype=dt).fill_(value)


# (source dtype, destination dtype): each pair is one program of kernels/copy.cl.
CASTS = [(U8, clgrad.float32), (clgrad.float32, U8), (I8, clgrad.float32),
         (clgrad.float32, I8), (I16, clgrad.float32), (U8, clgrad.int64), (clgrad.int64, I16),
         (U8, I16), (I8, I16), (I16, U8), (U8, clgrad.bool), (clgrad.bool, U8)]


@pytest.mark.parametrize("src,dst", CASTS, ids=lambda d: d.name)
def test_casts_between_dtypes(src, dst):
    vals = {U8: [0, 1, 7, 255], I8: [-128, -1, 0, 127], I16: [-300, 0, 1, 32767],
            clgrad.float32: [0.0, 1.7, 99.9, 126.5], clgrad.int64: [-5, 0, 70000, 3],
            clgrad.bool: [True, False, True, True]}[src]
    x = clgrad.tensor(np.array(vals, dtype=src.np))
    y = x.to(dst)
    assert y.dtype is dst
    # Oracle: NumPy's cast (truncation toward zero for floats, modular for ints, != 0 to bool)
    np.testing.assert_array_equal(y.numpy(), np.array(vals, dtype=src.np).astype(dst.np))


def test_cast_of_a_strided_view():  # one pair: each strided pair is one more program
    x = clgrad.tensor(np.repeat(np.array([0, 3, 255], np.uint8), 2))[::2]
    assert x.to(clgrad.float32).numpy().tolist() == [0.0, 3.0, 255.0]


def test_method_casts():
    x = clgrad.tensor([1.5, -2.5, 300.0])
    assert x.byte().dtype is U8 and x.char().dtype is I8 and x.short().dtype is I16
    assert x.short().numpy().tolist() == [1, -2, 300]


# PyTorch's promotion (torch.promote_types); the NumPy oracle agrees on every pair here.
PROMOTE = [(U8, U8, U8), (U8, I8, I16), (I8, I16, I16), (U8, clgrad.int64, clgrad.int64),
           (I16, clgrad.int32, clgrad.int32), (U8, clgrad.float32, clgrad.float32),
           (clgrad.bool, U8, U8), (I8, clgrad.float16, clgrad.float16)]


@pytest.mark.parametrize("a,b,want", PROMOTE, ids=str)
def test_promotion_table(a, b, want):
    assert dtypes.promote(a, b) is want and dtypes.promote(b, a) is want
    assert np.promote_types(a.np, b.np) == want.np


def test_uint8_arithmetic_wraps_around_as_numpy():
    a_np = np.array([200, 100, 0, 255], np.uint8)
    b_np = np.array([100, 200, 1, 255], np.uint8)
    a, b = clgrad.tensor(a_np), clgrad.tensor(b_np)
    for got, want in [(a + b, a_np + b_np), (a - b, a_np - b_np), (a * b, a_np * b_np),
                      (-a, (-a_np.astype(np.int64)) % 256)]:
        assert got.dtype is U8
        np.testing.assert_array_equal(got.numpy(), want.astype(np.uint8))
    # a Python int keeps the tensor's dtype and wraps (PyTorch); hand oracle in int64
    np.testing.assert_array_equal((a + 300).numpy(), (a_np.astype(np.int64) + 300) % 256)


@pytest.mark.parametrize("src", ["float32", "float64", "float16", "bfloat16"])
def test_float_to_uint8_goes_through_int64(src):
    """A float converted to uint8 truncates to int64, then wraps (PyTorch's
    static_cast_with_inter_type: torch gives 254 for -2.5 on CPU and CUDA alike), where a
    direct C conversion of a negative float is undefined (NVIDIA's saturates to 0); NaN and
    values beyond int64 stay undefined, as in PyTorch. Hand oracle: (trunc(x) mod 256)."""
    dev = clgrad.default_device()
    if (src == "float16" and not dev.fp16) or (src == "float64" and not dev.fp64):
        pytest.skip(f"{dev.name!r} lacks {src}")
    vals = [-2.5, -7.75, -1.0, -300.75, 300.25, 1.9, 255.0, -0.5, 0.0]
    want = [254, 249, 255, 212, 44, 1, 255, 0, 0]
    x = clgrad.tensor(vals, dtype=getattr(clgrad, src))
    for got in (x.to(U8), x[::2].to(U8), x.byte()):  # dense, strided, the method
        assert got.dtype is U8
    np.testing.assert_array_equal(x.to(U8).numpy(), want)
    np.testing.assert_array_equal(x[::2].to(U8).numpy(), want[::2])


def test_mixed_promotion_in_ops():
    u = clgrad.tensor(np.array([250, 3], np.uint8))
    i8 = clgrad.tensor(np.array([-100, 100], np.int8))
    s = u + i8
    assert s.dtype is I16 and s.numpy().tolist() == [150, 103]
    w = u + clgrad.tensor([1000, 2000])
    assert w.dtype is clgrad.int64 and w.numpy().tolist() == [1250, 2003]
    f = u + 0.5
    assert f.dtype is clgrad.float32 and f.numpy().tolist() == [250.5, 3.5]
    q = u / clgrad.tensor(np.array([4, 2], np.uint8))
    assert q.dtype is clgrad.float32 and q.numpy().tolist() == [62.5, 1.5]
    assert (u // 4).dtype is U8 and (u // 4).numpy().tolist() == [62, 0]
    # a 0-dim int64 tensor does not lift the dtype (PyTorch's rule for 0-dim operands)
    assert (u * clgrad.tensor(2)).dtype is U8


def test_int8_signed_ops():
    x_np = np.array([-128, -7, 0, 5, 127], np.int8)
    x = clgrad.tensor(x_np)
    np.testing.assert_array_equal(x.abs().numpy(), np.abs(x_np))  # abs(-128) wraps to -128
    np.testing.assert_array_equal((x % 3).numpy(), np.remainder(x_np, np.int8(3)))
    np.testing.assert_array_equal(x.clamp(-10, 10).numpy(), np.clip(x_np, -10, 10))
    np.testing.assert_array_equal(clgrad.maximum(x, clgrad.tensor(np.int8(0))).numpy(),
                                  np.maximum(x_np, 0))


@pytest.mark.parametrize("dt", SMALL)
def test_comparisons_give_bool(dt):
    a_np = np.array([0, 5, 100, 7], dt.np)
    b_np = np.array([1, 5, 99, 8], dt.np)
    a, b = clgrad.tensor(a_np), clgrad.tensor(b_np)
    for got, want in [(a < b, a_np < b_np), (a == b, a_np == b_np), (a >= 7, a_np >= 7)]:
        assert got.dtype is clgrad.bool
        np.testing.assert_array_equal(got.numpy(), want)


def test_reductions():
    u_np = np.full(1000, 200, np.uint8)
    u = clgrad.tensor(u_np)
    s = u.sum()
    assert s.dtype is clgrad.int64 and s.item() == 200_000  # no uint8 overflow (PyTorch)
    x_np = np.array([[-3, 7, 2], [9, -128, 0]], np.int8)
    x = clgrad.tensor(x_np)
    assert x.max().dtype is I8 and x.max().item() == 9
    vals, idx = x.min(dim=1)
    assert vals.numpy().tolist() == [-3, -128] and idx.numpy().tolist() == [0, 1]
    assert clgrad.tensor(np.array([2, 3, 4], np.int16)).prod().item() == 24


def test_promotion_matches_pytorch_for_every_pair():
    torch = pytest.importorskip("torch")
    names = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
             "float64"]
    for a in names:
        for b in names:
            want = torch.promote_types(getattr(torch, a), getattr(torch, b))
            assert dtypes.promote(dtypes.to_dtype(a), dtypes.to_dtype(b)).name == \
                str(want).split(".")[1], (a, b)


@pytest.mark.parametrize("data, expected", [
    ([np.float64(1.0), 2.0], "float64"),       # the scalar's own dtype, not the default
    ([np.float32(1.0), 2.0], "float32"),
    ([1, np.float64(2.0)], "float64"),
    ([np.int32(1)], "int32"),
    ([np.int32(1), 2], "int64"),                # int32 with a Python int (int64)
    ([np.int32(1), 2.5], "float32"),            # with a Python float: the default dtype
    ([np.float16(1.0), 2], "float16"),          # float16 outranks int64
    ([np.int8(1), np.uint8(2)], "int16"),       # the smallest type holding both
    ([[np.int16(1)], [np.int16(2)]], "int16"),  # nested
    ([np.bool_(True), False], "bool"),
    ([np.float32(1.5), np.int64(2)], "float32"),
    ([1.0, 2.0], "float32"),                    # no NumPy value: the plain rules
])
def test_a_list_of_numpy_scalars_promotes_their_own_dtypes(data, expected):
    if expected == "float16" and not clgrad.default_device().fp16:
        pytest.skip("this device has no float16 (cl_khr_fp16)")
    # PyTorch's infer_scalar_type over the elements with promoteTypes (torch 2.14 gives each
    # of these dtypes); before, every NumPy float scalar in a list took the default dtype
    t = clgrad.tensor(data)
    assert t.dtype is getattr(clgrad, expected)
    np.testing.assert_array_equal(t.numpy().astype(np.float64),
                                  np.asarray(data, dtype=np.float64))
