"""Integer arithmetic (issue 20, "never silently wrong"): ``//``, ``%``, fmod, div with a
rounding mode, ``**``, bitwise ops and shifts on every integer dtype, exact and wrapping as
PyTorch's; float remainder/fmod/floor division with PyTorch's formulas and gradients; the
overflow checks on Python literals (tensor(), full(), fill_ ...).

Oracles: exact Python ints (wrapped into the dtype) for the integer ops, and PyTorch itself
(the installed torch, skipped when absent) on random inputs with the extremes (MIN, MAX, 0,
+-1, 2**62). Run on both CPU runtimes: ``CLGRAD_DEVICE=pocl pytest tests/test_integer.py``.
"""
import operator

import numpy as np
import pytest

import clgrad

INTS = ["uint8", "int8", "int16", "int32", "int64"]


def _torch():
    return pytest.importorskip("torch")


def _values(dtype: str, n: int, seed: int, nonzero=False) -> np.ndarray:
    """n values of ``dtype``: the extremes first, then uniform over the whole range."""
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    special = [lo, hi, lo + 1, hi - 1, 0, 1, 2, 3, 7, hi // 2, hi // 3 + 1]
    if lo < 0:
        special += [-1, -2, -3, -7, lo // 2, lo // 3]
    if dtype == "int64":
        special += [2**62, 2**62 + 1, -2**62, 3037000499, 2**31, -2**31 - 1]
    rng = np.random.default_rng(seed)
    rand = rng.integers(lo, hi, size=n, dtype=dtype, endpoint=True)
    small = rng.integers(max(lo, -100), min(hi, 100), size=n, dtype=dtype, endpoint=True)
    v = np.concatenate([np.array(special, dtype=dtype), rand, small])
    if nonzero:
        v = np.where(v == 0, np.array(1, dtype=dtype), v)
    return v


def _pairs(dtype: str, seed: int, nonzero=False):
    """(a, b): every special value against every special value, plus random pairs."""
    a = _values(dtype, 300, seed)
    b = _values(dtype, 300, seed + 1, nonzero)
    return np.concatenate([np.repeat(a[:20], 20), a]), np.concatenate([np.tile(b[:20], 20), b])


def _wrap(v: int, dtype: str) -> int:
    """The Python int v wrapped into dtype (two's complement), as PyTorch's results."""
    bits = np.iinfo(dtype).bits
    v &= (1 << bits) - 1
    return v - (1 << bits) if np.iinfo(dtype).min < 0 and v >> (bits - 1) else v


def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _ipow(a, b, dtype):
    if b < 0:
        return 1 if a == 1 else (-1 if b % 2 else 1) if a == -1 else 0
    return _wrap(pow(a, b, 1 << 64), dtype)


_PY_ORACLES = {
    "floor_divide": lambda a, b, dt: _wrap(a // b, dt),
    "remainder": lambda a, b, dt: _wrap(a % b, dt),
    "fmod": lambda a, b, dt: _wrap(a - _trunc_div(a, b) * b, dt),
    "trunc": lambda a, b, dt: _wrap(_trunc_div(a, b), dt),
}
_OURS = {
    "floor_divide": lambda a, b: a // b,
    "remainder": lambda a, b: a % b,
    "fmod": lambda a, b: clgrad.fmod(a, b),
    "trunc": lambda a, b: clgrad.div(a, b, rounding_mode="trunc"),
}


# -- exact results against Python ints --------------------------------------------------------
@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", sorted(_PY_ORACLES))
def test_integer_division_is_exact(op, dtype):
    a, b = _pairs(dtype, 1, nonzero=True)
    got = _OURS[op](clgrad.tensor(a), clgrad.tensor(b))
    assert got.dtype is getattr(clgrad, dtype)
    want = [_PY_ORACLES[op](int(x), int(y), dtype) for x, y in zip(a, b)]
    np.testing.assert_array_equal(got.numpy(), np.array(want, dtype=dtype))


def test_issue_examples_exact():
    assert (clgrad.tensor([2147483647], dtype=clgrad.int32) // 3).item() == 715827882
    assert (clgrad.tensor([28542212], dtype=clgrad.int32) % 3).item() == 2
    assert (clgrad.tensor([2**62 + 1]) % 7).item() == (2**62 + 1) % 7
    assert (clgrad.tensor([3]) ** 39).item() == 3**39
    assert (clgrad.tensor([3037000499]) ** 2).item() == 3037000499**2
    np.testing.assert_array_equal((~clgrad.tensor([0, 255], dtype=clgrad.uint8)).numpy(),
                                  [255, 0])
    np.testing.assert_array_equal((clgrad.tensor([0x1234, -1]) & 0xFF).numpy(), [0x34, 0xFF])


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_min_divided_by_minus_one_wraps(dtype):
    lo = int(np.iinfo(dtype).min)
    x = clgrad.tensor([lo, lo], dtype=getattr(clgrad, dtype))
    m1 = clgrad.tensor([-1, -1], dtype=x.dtype)
    np.testing.assert_array_equal((x // m1).numpy(), [lo, lo])  # PyTorch: MIN, not a trap
    np.testing.assert_array_equal((x % m1).numpy(), [0, 0])
    np.testing.assert_array_equal((x // -1).numpy(), [lo, lo])
    np.testing.assert_array_equal(clgrad.fmod(x, -1).numpy(), [0, 0])


@pytest.mark.parametrize("dtype", INTS)
def test_integer_pow_is_exact_and_wraps(dtype):
    a = _values(dtype, 100, 3)
    rng = np.random.default_rng(4)
    lo = -3 if np.iinfo(dtype).min < 0 else 0
    b = rng.integers(lo, min(np.iinfo(dtype).max, 70), size=len(a), endpoint=True).astype(dtype)
    got = clgrad.tensor(a) ** clgrad.tensor(b)
    want = [_ipow(int(x), int(y), dtype) for x, y in zip(a, b)]
    np.testing.assert_array_equal(got.numpy(), np.array(want, dtype=dtype))
    for e in (0, 1, 2, 3, 5, 39, int(np.iinfo(dtype).max)):
        got = clgrad.tensor(a) ** e
        np.testing.assert_array_equal(got.numpy(), np.array([_ipow(int(x), e, dtype)
                                                             for x in a], dtype=dtype))


def test_integer_pow_errors_and_scalar_base():
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not "
                                           "allowed."):
        clgrad.tensor([3]) ** -1
    with pytest.raises(RuntimeError, match="without overflow"):
        clgrad.tensor([3], dtype=clgrad.uint8) ** 256
    np.testing.assert_array_equal((2 ** clgrad.tensor([3, 62, 63, 64, -1])).numpy(),
                                  [8, 2**62, -2**63, 0, 0])
    assert (clgrad.tensor([3]) ** 2.0).dtype is clgrad.float32


@pytest.mark.parametrize("dtype", INTS)
def test_bitwise_ops_and_shifts(dtype):
    a, b = _pairs(dtype, 5)
    bits = np.iinfo(dtype).bits
    ta, tb = clgrad.tensor(a), clgrad.tensor(b)
    for op in (operator.and_, operator.or_, operator.xor):
        np.testing.assert_array_equal(op(ta, tb).numpy(), op(a, b))
    np.testing.assert_array_equal((~ta).numpy(), ~a)
    counts = np.arange(-2, bits + 3)
    signed = np.iinfo(dtype).min < 0
    for c in counts:
        x = clgrad.tensor(a)
        cnt = clgrad.full(a.shape, int(c), dtype=x.dtype)
        neg = c < 0 or (not signed and _wrap(int(c), dtype) >= 128 and bits == 8)
        want_l = [0 if neg or c >= bits else _wrap(int(v) << int(c), dtype) for v in a]
        want_r = [(-1 if v < 0 else 0) if neg or c >= bits - signed else int(v) >> int(c)
                  for v in a]
        np.testing.assert_array_equal((x << cnt).numpy(), np.array(want_l, dtype=dtype))
        np.testing.assert_array_equal((x >> cnt).numpy(), np.array(want_r, dtype=dtype))
        if c >= 0:
            np.testing.assert_array_equal((x << int(c)).numpy(), np.array(want_l, dtype=dtype))
            np.testing.assert_array_equal((x >> int(c)).numpy(), np.array(want_r, dtype=dtype))


def test_bitwise_on_bool_and_float():
    t, f = clgrad.tensor([True, True, False]), clgrad.tensor([True, False, False])
    assert (t & f).dtype is clgrad.bool
    np.testing.assert_array_equal((t & f).numpy(), [True, False, False])
    np.testing.assert_array_equal((t | f).numpy(), [True, True, False])
    np.testing.assert_array_equal((t ^ f).numpy(), [False, True, False])
    np.testing.assert_array_equal((~t).numpy(), [False, False, True])
    np.testing.assert_array_equal((t & 1).numpy(), [1, 1, 0])  # bool with an int: int64
    assert (t & 1).dtype is clgrad.int64
    np.testing.assert_array_equal((clgrad.tensor([True]) & clgrad.tensor([2])).numpy(), [0])
    x = clgrad.tensor([1.0])
    for bad in (lambda: ~x, lambda: x & 1, lambda: x | x, lambda: x ^ 1, lambda: x << 1,
                lambda: x >> 1, lambda: clgrad.bitwise_and(x, x)):
        with pytest.raises(TypeError, match="Float|integer"):
            bad()
    with pytest.raises(TypeError, match="Bool"):
        t << t


def test_reflected_and_inplace_forms():
    t = clgrad.tensor([2, -2, 3])
    np.testing.assert_array_equal((5 // t).numpy(), [2, -3, 1])
    np.testing.assert_array_equal((5 % t).numpy(), [1, -1, 2])
    np.testing.assert_array_equal((6 & t).numpy(), [6 & 2, 6 & -2, 6 & 3])
    np.testing.assert_array_equal((1 << clgrad.tensor([3, 4])).numpy(), [8, 16])
    np.testing.assert_array_equal((-16 >> clgrad.tensor([2, 70])).numpy(), [-4, -1])
    a = clgrad.tensor([7, -7, 9])
    a //= 2
    np.testing.assert_array_equal(a.numpy(), [3, -4, 4])
    a %= 3
    np.testing.assert_array_equal(a.numpy(), [0, 2, 1])
    a <<= 2
    a |= 1
    a ^= 3
    a &= 0xE
    a >>= 1
    np.testing.assert_array_equal(a.numpy(), [((((v << 2) | 1) ^ 3) & 0xE) >> 1
                                              for v in (0, 2, 1)])
    b = clgrad.tensor([7, -7])
    b.div_(2, rounding_mode="floor")
    np.testing.assert_array_equal(b.numpy(), [3, -4])
    b.floor_divide_(-2)
    b.remainder_(3)
    b.fmod_(2)
    np.testing.assert_array_equal(b.numpy(), [(((3 // -2) % 3) % 2), 2 % 2])
    c = clgrad.tensor([12, 10])
    c.bitwise_and_(6).bitwise_or_(1).bitwise_xor_(2).bitwise_left_shift_(1)
    c.bitwise_right_shift_(1).bitwise_not_()
    np.testing.assert_array_equal(c.numpy(), [~(((12 & 6) | 1) ^ 2), ~(((10 & 6) | 1) ^ 2)])
    with pytest.raises(RuntimeError, match="can't be cast"):
        a //= 2.5
    with pytest.raises(RuntimeError, match="can't be cast"):
        clgrad.tensor([5]).div_(2)


def test_strided_and_broadcast_operands():
    base = _values("int32", 40, 9)[:96].reshape(-1, 4)
    a_np = base[:, ::2]
    b_np = _values("int32", 40, 10, nonzero=True)[-2:]
    a, b = clgrad.tensor(base)[:, ::2], clgrad.tensor(b_np)
    for op in (operator.floordiv, operator.mod):
        want = [[_wrap(op(int(x), int(y)), "int32") for x, y in zip(row, b_np)]
                for row in a_np]
        np.testing.assert_array_equal(op(a, b).numpy(), np.array(want, dtype=np.int32))
        want = [[_wrap(op(int(y), int(x) or 1), "int32") for x, y in zip(row, b_np)]
                for row in a_np]
        denom = clgrad.where(a == 0, clgrad.ones((), dtype=clgrad.int32), a)
        np.testing.assert_array_equal(op(b, denom).numpy(), np.array(want, dtype=np.int32))


# -- division by zero ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", INTS)
def test_integer_division_by_zero_raises(dtype):
    dt = getattr(clgrad, dtype)
    x = clgrad.tensor([7, 1, 0], dtype=dt)
    z = clgrad.tensor([1, 0, 1], dtype=dt)
    for f in (lambda a, b: a // b, lambda a, b: a % b, clgrad.fmod, clgrad.remainder,
              clgrad.floor_divide, lambda a, b: clgrad.div(a, b, rounding_mode="trunc"),
              lambda a, b: clgrad.divide(a, b, rounding_mode="floor")):
        for a, b in ((x, z), (x, 0), (5, z), (x[:1], z[1:2].expand(4))):
            with pytest.raises(RuntimeError, match="ZeroDivisionError"):
                f(a, b)
            with pytest.raises(ZeroDivisionError):
                f(a, b)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        clgrad.tensor([1], dtype=clgrad.int32) % 2**32  # the scalar wraps to 0 (PyTorch)
    # true division of integers is float: inf/nan, no error
    np.testing.assert_array_equal((x / z).numpy(), np.array([7, np.inf, 0], np.float32))


def test_float_division_by_zero_is_ieee():
    x = clgrad.tensor([1.0, -1.0, 0.0])
    np.testing.assert_array_equal((x // 0).numpy(), [np.inf, -np.inf, np.nan])
    np.testing.assert_array_equal((x % 0).numpy(), [np.nan] * 3)
    np.testing.assert_array_equal(clgrad.fmod(x, 0.0).numpy(), [np.nan] * 3)
    np.testing.assert_array_equal(clgrad.div(x, 0, rounding_mode="trunc").numpy(),
                                  [np.inf, -np.inf, np.nan])


# -- float remainder / fmod / floor division --------------------------------------------------
def test_float_remainder_special_values():
    inf = float("inf")
    x = clgrad.tensor([1.0, -1.0, 7.0, -7.0, -0.0, 3.0, -3.0])
    np.testing.assert_array_equal((x % inf).numpy(), [1.0, inf, 7.0, inf, -0.0, 3.0, inf])
    np.testing.assert_array_equal((x // inf).numpy(), [0.0, -1.0, 0.0, -1.0, -0.0, 0.0, -1.0])
    np.testing.assert_array_equal(clgrad.fmod(x, inf).numpy(), x.numpy())
    np.testing.assert_array_equal(clgrad.fmod(x, 3.0).numpy(), np.fmod(x.numpy(), 3.0))
    assert np.signbit((clgrad.tensor([-3.0]) % 3).numpy()[0])  # fmod's -0, as PyTorch


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_divmod_against_torch(dtype):
    torch = _torch()
    rng = np.random.default_rng(11)
    a = np.concatenate([rng.uniform(-1e9, 1e9, 3000), rng.uniform(-10, 10, 1000),
                        [0.0, -0.0, 1e30, -1e30, np.inf, -np.inf, np.nan, 5.0]]).astype(dtype)
    b = np.concatenate([rng.choice([3.0, -3.0, 0.7, -0.1, 1e-3, 7.5], 3000),
                        rng.uniform(-10, 10, 1000),
                        [3.0, -3.0, 3.0, -7.0, 3.0, 2.0, 2.0, np.inf]]).astype(dtype)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    ca, cb = clgrad.tensor(a), clgrad.tensor(b)
    np.testing.assert_array_equal((ca % cb).numpy(), (ta % tb).numpy())
    np.testing.assert_array_equal((ca // cb).numpy(), (ta // tb).numpy())
    np.testing.assert_array_equal(clgrad.fmod(ca, cb).numpy(), torch.fmod(ta, tb).numpy())
    np.testing.assert_array_equal(clgrad.div(ca, cb, rounding_mode="trunc").numpy(),
                                  torch.div(ta, tb, rounding_mode="trunc").numpy())
    np.testing.assert_array_equal((ca % 3).numpy(), (ta % 3).numpy())
    np.testing.assert_array_equal((7.5 % cb).numpy(), (7.5 % tb).numpy())
    np.testing.assert_array_equal((ca // -3).numpy(), (ta // -3).numpy())


@pytest.mark.parametrize("op", ["remainder", "fmod"])
def test_remainder_fmod_gradients(op):
    torch = _torch()
    a = np.array([5.0, -7.5, 7.25, -2.0, 0.5])
    b = np.array([3.0, 2.0, -1.5, -0.75, 4.0])
    x = clgrad.tensor(a, dtype=clgrad.float64, requires_grad=True)
    y = clgrad.tensor(b, dtype=clgrad.float64, requires_grad=True)
    w = np.array([1.0, 2.0, -1.0, 0.5, 3.0])
    (getattr(clgrad, op)(x, y) * clgrad.tensor(w)).sum().backward()
    tx = torch.tensor(a, requires_grad=True)
    ty = torch.tensor(b, requires_grad=True)
    (getattr(torch, op)(tx, ty) * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_array_equal(y.grad.numpy(), ty.grad.numpy())
    # finite differences away from the jumps (independent of torch)
    eps = 1e-6
    f = getattr(np, "mod" if op == "remainder" else "fmod")
    fd_b = (f(a, b + eps) - f(a, b - eps)) / (2 * eps) * w
    np.testing.assert_allclose(y.grad.numpy(), fd_b, rtol=1e-6)
    z = clgrad.tensor(a, requires_grad=True)
    getattr(clgrad, op)(z, 3.0).sum().backward()
    np.testing.assert_array_equal(z.grad.numpy(), np.ones(5))


# -- against torch on random integer inputs -----------------------------------------------------
_TORCH_BINARY = [
    ("floordiv", operator.floordiv, True), ("mod", operator.mod, True),
    ("fmod", "fmod", True), ("div_trunc", ("div", "trunc"), True),
    ("div_floor", ("div", "floor"), True), ("and", operator.and_, False),
    ("or", operator.or_, False), ("xor", operator.xor, False),
    ("lshift", operator.lshift, False), ("rshift", operator.rshift, False),
]


def _apply(lib, f, a, b):
    if isinstance(f, str):
        return getattr(lib, f)(a, b)
    if isinstance(f, tuple):
        return getattr(lib, f[0])(a, b, rounding_mode=f[1])
    return f(a, b)


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("name,f,nonzero", _TORCH_BINARY, ids=[t[0] for t in _TORCH_BINARY])
def test_integer_binary_against_torch(name, f, nonzero, dtype):
    torch = _torch()
    a, b = _pairs(dtype, 21, nonzero)
    if name in ("lshift", "rshift"):
        bits = np.iinfo(dtype).bits
        b = np.random.default_rng(2).integers(-2 if dtype != "uint8" else 0, bits + 3,
                                              len(a)).astype(dtype)
    if np.iinfo(dtype).min < 0:  # torch's own kernels trap (SIGFPE) on some MIN / -1:
        b = np.where((a == np.iinfo(dtype).min) & (b == -1), np.array(-2, dtype), b)
    want = _apply(torch, f, torch.from_numpy(a), torch.from_numpy(b))  # (tested above)
    got = _apply(clgrad, f, clgrad.tensor(a), clgrad.tensor(b))
    assert got.dtype.name == str(want.dtype).replace("torch.", "")
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    for s in (3, -5, 1, 2**20 + 1):  # Python int scalars, both sides (they wrap into dtype)
        if name in ("lshift", "rshift") and s > 70:
            continue
        np.testing.assert_array_equal(_apply(clgrad, f, clgrad.tensor(a), s).numpy(),
                                      _apply(torch, f, torch.from_numpy(a), s).numpy())
        if name not in ("fmod", "div_trunc", "div_floor"):  # torch: Tensor first only
            np.testing.assert_array_equal(_apply(clgrad, f, s, clgrad.tensor(b)).numpy(),
                                          _apply(torch, f, s, torch.from_numpy(b)).numpy())


@pytest.mark.parametrize("dtype", INTS)
def test_integer_pow_and_not_against_torch(dtype):
    torch = _torch()
    a = _values(dtype, 200, 31)
    lo = -3 if np.iinfo(dtype).min < 0 else 0
    b = np.random.default_rng(3).integers(lo, 70, len(a)).astype(dtype)
    np.testing.assert_array_equal((clgrad.tensor(a) ** clgrad.tensor(b)).numpy(),
                                  (torch.from_numpy(a) ** torch.from_numpy(b)).numpy())
    for e in (0, 2, 7, 63):
        if e <= np.iinfo(dtype).max:
            np.testing.assert_array_equal((clgrad.tensor(a) ** e).numpy(),
                                          (torch.from_numpy(a) ** e).numpy())
    np.testing.assert_array_equal((3 ** clgrad.tensor(b)).numpy(),
                                  (3 ** torch.from_numpy(b)).numpy())
    np.testing.assert_array_equal((~clgrad.tensor(a)).numpy(), (~torch.from_numpy(a)).numpy())


def test_mixed_dtypes_promote_as_torch():
    torch = _torch()
    u = np.array([5, 200, 255], np.uint8)
    s = np.array([-3, 7, -128], np.int8)
    for f in (operator.floordiv, operator.mod, operator.and_, operator.rshift, operator.pow):
        want = f(torch.from_numpy(u), torch.from_numpy(s))
        got = f(clgrad.tensor(u), clgrad.tensor(s))
        assert got.dtype.name == str(want.dtype).replace("torch.", "")
        np.testing.assert_array_equal(got.numpy(), want.numpy())


# -- Python literals that do not fit --------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda v, dt: clgrad.tensor([v], dtype=dt), lambda v, dt: clgrad.tensor(v, dtype=dt),
    lambda v, dt: clgrad.full((2,), v, dtype=dt), lambda v, dt: clgrad.zeros(2, dtype=dt).fill_(v),
    lambda v, dt: clgrad.zeros(2, dtype=dt).masked_fill(clgrad.tensor([True, False]), v),
])
def test_out_of_range_literals_raise(make):
    for v, dt in ((256, clgrad.uint8), (-256, clgrad.uint8), (-129, clgrad.int8),
                  (128, clgrad.int8), (2**15, clgrad.int16), (2**31, clgrad.int32),
                  (-2**31 - 1, clgrad.int32), (255.5, clgrad.uint8), (-1.0, clgrad.uint8),
                  (float("nan"), clgrad.int64), (float("inf"), clgrad.int32)):
        with pytest.raises(RuntimeError, match=f"cannot be converted to type {dt.name} "
                                               f"without overflow"):
            make(v, dt)
    # in range (PyTorch: an unsigned dtype takes -max..max, negative ints wrap)
    for v, dt, want in ((255, clgrad.uint8, 255), (-1, clgrad.uint8, 255),
                        (-255, clgrad.uint8, 1), (-128, clgrad.int8, -128),
                        (2**31 - 1, clgrad.int32, 2**31 - 1), (127.0, clgrad.int8, 127)):
        assert make(v, dt).numpy().ravel()[0] == want


def test_out_of_range_literals_match_torch():
    torch = _torch()
    for data, name in (([256], "uint8"), ([-1], "uint8"), ([-255], "uint8"), ([-256], "uint8"),
                       ([[1, 2], [3, 256]], "uint8"), ([-129], "int8"), ([1.5e10], "int32"),
                       ([2147483647.0], "int32"), ([-128.9], "int8"), ([True, 2], "uint8"),
                       ([1e40], "float32"), ([2], "bool")):
        try:
            want = torch.tensor(data, dtype=getattr(torch, name)).numpy()
        except RuntimeError:
            with pytest.raises(RuntimeError, match="without overflow"):
                clgrad.tensor(data, dtype=getattr(clgrad, name))
            continue
        np.testing.assert_array_equal(clgrad.tensor(data, dtype=getattr(clgrad, name)).numpy(),
                                      want)


def test_scalar_operands_wrap_as_torch():
    u = clgrad.tensor([1, 5], dtype=clgrad.uint8)
    np.testing.assert_array_equal((u + 300).numpy(), [45, 49])  # arithmetic wraps the scalar
    np.testing.assert_array_equal((u & -1).numpy(), [1, 5])
    np.testing.assert_array_equal((u | 256).numpy(), [1, 5])
    with pytest.raises(RuntimeError, match="without overflow"):
        u.clamp(max=300)
    np.testing.assert_array_equal(u.clamp(min=-1).numpy(), [255, 255])


def test_bool_add_stays_zero_or_one():
    """bool + bool is bool with PyTorch's and NumPy's values: True + True is True (logical
    or), stored as 1, never the byte 2 (which printed as True but counted 2 in sum(), int()
    and float(): silently wrong). Every face, the tensor-number forms, alpha=True, and the
    later calls of a signature (the binary fast path's launch plans)."""
    an = np.array([True, False, True, False])
    bn = np.array([True, True, False, False])
    want = np.add(an, bn)  # NumPy's bool add: logical or
    assert want.dtype == np.bool_
    for _ in range(3):
        a, b = clgrad.tensor(an), clgrad.tensor(bn)
        for got in (a + b, clgrad.add(a, b), a.add(b), clgrad.add(a, b, alpha=True),
                    clgrad.add(a, b, out=clgrad.empty(4, dtype=clgrad.bool))):
            assert got.dtype == clgrad.bool
            np.testing.assert_array_equal(got.to(clgrad.int32).numpy(), want.astype(np.int32))
            assert got.sum().item() == int(want.sum())
        for got, w in ((a + True, np.add(an, True)), (True + a, np.add(True, an)),
                       (a + a, np.add(an, an)), (a + False, an)):
            assert got.dtype == clgrad.bool
            np.testing.assert_array_equal(got.to(clgrad.int32).numpy(), w.astype(np.int32))
    torch = pytest.importorskip("torch")
    t = torch.tensor(an) + torch.tensor(bn)
    np.testing.assert_array_equal(t.int().numpy(), want.astype(np.int32))
