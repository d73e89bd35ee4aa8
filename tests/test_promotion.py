"""Type promotion (issue 32 §2): ``dtypes.result_type`` is PyTorch's torch.result_type, and
every binary op, comparison, where, clamp and in-place op computes in it.

The rules: operands are dimensioned tensors > 0-dim tensors > Python numbers; the dtypes of
the highest category present promote; a lower category counts only when of a higher kind
(bool < integer < floating), a 0-dim tensor with its own dtype, a number with its kind's
default (int64, float32). In-place ops cast the result back when ``can_cast`` allows it.

Oracles: hand-computed values and NumPy (no torch needed: CI has none), and the installed
torch (skipped when absent) over a sweep of dtype pairs x operand categories x ops, dtype and
values both.
"""
import operator

import numpy as np
import pytest

import clgrad
from clgrad import dtypes

_DEV = clgrad.default_device()
NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float32"] + \
    (["float16"] if _DEV.fp16 else []) + (["float64"] if _DEV.fp64 else [])
F32, I64, U8, I8, I32 = clgrad.float32, clgrad.int64, clgrad.uint8, clgrad.int8, clgrad.int32


def _np(t):
    return t.numpy()


# -- the rule itself, hand-written (torch-free) -------------------------------------------------
@pytest.mark.parametrize("operands, want", [
    ((clgrad.tensor([1, 2], dtype=U8), clgrad.tensor(300)), "uint8"),      # 0-dim: same kind
    ((clgrad.tensor([True]), clgrad.tensor(2)), "int64"),                   # 0-dim lifts kind
    ((clgrad.tensor([True]), clgrad.tensor(2, dtype=I8)), "int8"),          # with its own dtype
    ((clgrad.tensor([1], dtype=I32), 2.5), "float32"),                      # number: default
    ((clgrad.tensor([1], dtype=I32), clgrad.tensor(2.5, dtype=clgrad.float64)), "float64"),
    ((clgrad.tensor([1.0]), clgrad.tensor(2.5, dtype=clgrad.float64)), "float32"),
    ((clgrad.tensor([True]), 2), "int64"),
    ((clgrad.tensor([True]), True), "bool"),
    ((clgrad.tensor([3], dtype=I8), True), "int8"),
    ((clgrad.tensor([3], dtype=U8), clgrad.tensor([3], dtype=I8)), "int16"),
    ((clgrad.tensor(3, dtype=U8), clgrad.tensor(3, dtype=I8)), "int16"),     # both 0-dim
    ((clgrad.tensor(3, dtype=U8), 2.5), "float32"),
    ((1, 2.0), "float32"),
    ((True, 1), "int64"),
    ((clgrad.tensor([1], dtype=I8), clgrad.tensor(1), 2.5), "float32"),    # three operands
    ((clgrad.tensor([1], dtype=I8), clgrad.tensor(1.5, dtype=clgrad.float64), 2.5), "float64"),
])
def test_result_type_rule(operands, want):
    assert dtypes.result_type(*operands).name == want
    if len(operands) == 2:
        assert clgrad.result_type(*operands).name == want


def test_promote_types_and_can_cast():
    assert clgrad.promote_types(U8, I8) is clgrad.int16
    assert clgrad.promote_types(clgrad.bool, clgrad.float16) is clgrad.float16
    assert clgrad.can_cast(I64, F32) and clgrad.can_cast(clgrad.bool, U8)
    assert not clgrad.can_cast(F32, I32) and not clgrad.can_cast(I64, clgrad.bool)
    assert clgrad.can_cast(clgrad.float64, clgrad.float16) and clgrad.can_cast(I64, I8)
    with pytest.raises(TypeError, match=r"promote_types\(\): argument 'type1' \(position 1\) "
                                        r"must be torch.dtype, not ndarray"):
        clgrad.promote_types(np.ones(2), I8)
    with pytest.raises(TypeError, match=r"can_cast\(\): argument 'to' \(position 2\)"):
        clgrad.can_cast(I8, "float32")
    with pytest.raises(TypeError, match=r"argument 'tensor' \(position 1\) must be Tensor"):
        clgrad.result_type(np.ones(2), 1)


# -- the cases of the issue, torch-free -------------------------------------------------------
def test_zero_dim_integer_of_another_dtype_is_not_wrapped_first():
    x = clgrad.tensor([100, 200, 50], dtype=U8)
    s = x.long().sum()  # int64 350: wrapped into uint8 it would be 94
    want = np.array([100, 200, 50]) / 350.0
    got = x / s
    assert got.dtype is F32
    np.testing.assert_allclose(_np(got), want, rtol=1e-6)
    np.testing.assert_allclose(_np(clgrad.atan2(x, s)), np.arctan2([100, 200, 50], 350.0),
                               rtol=1e-6)
    np.testing.assert_allclose(_np(clgrad.div(s, x)), 350.0 / np.array([100, 200, 50]),
                               rtol=1e-6)
    # integer results keep the dimensioned operand's dtype, the 0-dim value wrapping into it
    got = x + clgrad.tensor(300)
    assert got.dtype is U8 and _np(got).tolist() == [144, 244, 94]


def test_bool_tensor_with_zero_dim_integer():
    m = clgrad.tensor([True, False, True])
    two = clgrad.tensor(2)
    cases = {"mul": (m * two, [2, 0, 2]), "add": (m + two, [3, 2, 3]),
             "maximum": (clgrad.maximum(m, two), [2, 2, 2]),
             "minimum": (clgrad.minimum(m, two), [1, 0, 1]),
             "floordiv": (m // two, [0, 0, 0]), "mod": (m % two, [1, 0, 1]),
             "lshift": (m << two, [4, 0, 4]), "and": (m & clgrad.tensor(3), [1, 0, 1]),
             "where": (clgrad.where(m, m, two), [1, 2, 1])}
    for name, (got, want) in cases.items():
        assert got.dtype is I64, name
        assert _np(got).tolist() == want, name
    assert _np(m == two).tolist() == [False, False, False]
    assert _np(m < two).tolist() == [True, True, True]
    assert _np(m != clgrad.tensor(1)).tolist() == [False, True, False]


def test_sum_and_prod_with_dtype_wrap_in_it():
    x = clgrad.tensor([100, 100], dtype=I8)
    s = x.sum(dtype=I8)
    assert s.dtype is I8 and s.item() == -56  # 200 wrapped into int8
    p = x.prod(dtype=I8)
    assert p.dtype is I8 and p.item() == 16    # 10000 = 39 * 256 + 16
    assert clgrad.prod(x, dtype=clgrad.int16).item() == 10000
    assert x.sum().dtype is I64 and x.sum().item() == 200
    assert x.prod().item() == 10000
    y = clgrad.tensor([[1.5, 2.5], [3.0, 4.0]])
    assert y.sum(0, dtype=clgrad.int32).numpy().tolist() == [4, 6]  # cast first, then summed
    assert y.prod(1, dtype=clgrad.int32).numpy().tolist() == [2, 12]


def test_clamp_integer_with_float_bounds_is_float():
    x = clgrad.tensor([1, 5, 9])
    for got in (x.clamp(2.5, 7.5), clgrad.clip(x, 2.5, 7.5)):
        assert got.dtype is F32
        assert _np(got).tolist() == [2.5, 5.0, 7.5]
    got = x.clamp(min=clgrad.tensor(2.5))  # a 0-dim float bound lifts the kind too
    assert got.dtype is F32 and _np(got).tolist() == [2.5, 5.0, 9.0]
    got = clgrad.clamp(x, clgrad.tensor(2), 7.5)
    assert got.dtype is F32 and _np(got).tolist() == [2.0, 5.0, 7.5]
    got = x.clamp(max=clgrad.tensor(7, dtype=I8))  # same kind: x's dtype stays
    assert got.dtype is I64 and _np(got).tolist() == [1, 5, 7]
    for bad in (lambda: x.clone().clamp_(2.5), lambda: x.clone().clip_(max=7.5),
                lambda: x.clone().clamp_min_(0.5)):
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                               "output type Long"):
            bad()
    y = x.clone()
    y.clamp_(2, 7)
    assert _np(y).tolist() == [2, 5, 7]
    with pytest.raises(RuntimeError, match="overflow"):
        clgrad.tensor([1], dtype=U8).clamp(max=300)


def test_masked_fill_keeps_the_tensor_dtype():
    m = clgrad.tensor([True, False, True])
    y = clgrad.tensor([1, 5, 9])
    y.masked_fill_(m, 2.5)
    assert y.dtype is I64 and _np(y).tolist() == [2, 5, 2]
    got = clgrad.tensor([1, 5, 9], dtype=U8).masked_fill(m, -1)
    assert got.dtype is U8 and _np(got).tolist() == [255, 5, 255]
    got = clgrad.tensor([1, 5, 9]).masked_fill(m, clgrad.tensor(2.7))
    assert got.dtype is I64 and _np(got).tolist() == [2, 5, 2]
    got = clgrad.tensor([True, False, False]).masked_fill(m, 2.5)
    assert got.dtype is clgrad.bool and _np(got).tolist() == [True, False, True]
    got = clgrad.tensor([1.0, 2.0, 3.0]).masked_fill(m, 7)
    assert got.dtype is F32 and _np(got).tolist() == [7.0, 2.0, 7.0]
    with pytest.raises(RuntimeError, match="0-dimensional value tensor"):
        clgrad.tensor([1, 5, 9]).masked_fill(m, clgrad.tensor([2]))
    with pytest.raises(RuntimeError, match="overflow"):
        clgrad.tensor([1, 5, 9], dtype=U8).masked_fill(m, 300)
    for v in (clgrad.tensor(300), clgrad.tensor(-2.0)):  # value tensors are checked too
        with pytest.raises(RuntimeError, match="overflow"):
            clgrad.tensor([1, 5, 9], dtype=U8).masked_fill(m, v)
    with pytest.raises(RuntimeError, match="overflow"):
        clgrad.tensor([1, 5, 9]).masked_fill(m, float("nan"))


def test_square_keeps_integer_dtypes():
    x = clgrad.tensor([2**13 + 1, -3], dtype=I32)
    got = x.square()
    # (2^13 + 1)^2 = 67125249 > 2^24: a float32 result would round it to 67125248
    assert got.dtype is I32 and _np(got).tolist() == [67125249, 9]
    got = clgrad.square(clgrad.tensor([3, 12], dtype=I8))
    assert got.dtype is I8 and _np(got).tolist() == [9, -112]  # 144 wraps
    got = clgrad.square(clgrad.tensor([True, False]))
    assert got.dtype is I64 and _np(got).tolist() == [1, 0]
    got = clgrad.square(clgrad.tensor([1.5, -2.0]))
    assert got.dtype is F32 and _np(got).tolist() == [2.25, 4.0]


@pytest.mark.parametrize("stmt", ["b += 1", "b *= 2", "b.add_(clgrad.tensor(1))",
                                  "b |= 3", "b &= clgrad.tensor(1)"])
def test_bool_inplace_needing_an_integer_result_raises(stmt):
    b = clgrad.tensor([True, False])
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired "
                                           "output type Bool"):
        exec(stmt, {"b": b, "clgrad": clgrad})
    assert _np(b).tolist() == [True, False]  # untouched


def test_bool_inplace_with_bool_stays_bool():
    b = clgrad.tensor([True, False])
    b += True
    assert b.dtype is clgrad.bool and _np(b).tolist() == [True, True]
    b *= clgrad.tensor([True, False])
    assert _np(b).tolist() == [True, False]


def test_bool_subtraction_and_negation_raise():
    b = clgrad.tensor([True, False])
    for bad in (lambda: b - b, lambda: b.sub(True), lambda: b.clone().sub_(True)):
        with pytest.raises(RuntimeError, match="with two bool tensors is not supported"):
            bad()
    for bad in (lambda: b - 1, lambda: 1 - b, lambda: clgrad.tensor([1, 2]) - True,
                lambda: clgrad.tensor([1.0]) - b, lambda: clgrad.tensor([1, 2]).sub_(True),
                lambda: clgrad.tensor([1.0]).sub_(True)):
        with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
            bad()
    for bad in (lambda: -b, lambda: b.neg(), lambda: clgrad.neg(b)):
        with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor"):
            bad()


def test_inplace_computes_in_the_result_type_then_casts_back():
    a = clgrad.tensor([1, 2], dtype=I32)
    a += clgrad.tensor(2**33 + 5)  # 0-dim int64: int32 result, the value wrapped: + 5
    assert a.dtype is I32 and _np(a).tolist() == [6, 7]
    h = clgrad.tensor([1.0, 2.0], dtype=F32)
    h += clgrad.tensor([0.5, 0.25], dtype=clgrad.float64 if _DEV.fp64 else F32)
    assert h.dtype is F32 and _np(h).tolist() == [1.5, 2.25]
    i = clgrad.tensor([7, -7])
    i //= clgrad.tensor([2, 2], dtype=I8)
    assert i.dtype is I64 and _np(i).tolist() == [3, -4]
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        clgrad.tensor([1, 2]).mul_(2.5)
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        clgrad.tensor([1, 2]).add_(clgrad.tensor(0.5))


def test_where_dtypes():
    c = clgrad.tensor([True, False, True])
    assert clgrad.where(c, 1, 0).dtype is I64
    assert clgrad.where(c, 1.0, 0).dtype is F32
    i8 = clgrad.tensor([1, 2, 3], dtype=I8)
    got = clgrad.where(c, i8, 2.5)
    assert got.dtype is F32 and _np(got).tolist() == [1.0, 2.5, 3.0]
    got = clgrad.where(c, i8, clgrad.tensor(300))  # 0-dim int64: int8, 300 wraps to 44
    assert got.dtype is I8 and _np(got).tolist() == [1, 44, 3]
    with pytest.raises(RuntimeError, match="overflow"):
        clgrad.where(c, i8, 300)
    got = clgrad.where(clgrad.tensor([1, 0, 2], dtype=U8), 1.0, 0.0)  # legacy uint8 condition
    assert _np(got).tolist() == [1.0, 0.0, 1.0]
    for cond, name in ((clgrad.tensor([1.0, 0.0, 1.0]), "Float"), (clgrad.tensor([1, 0, 1]),
                                                                   "Long")):
        with pytest.raises(RuntimeError, match="where expected condition to be a boolean "
                                               f"tensor, but got a tensor with dtype {name}"):
            clgrad.where(cond, 1.0, 0.0)


def test_integer_division_semantics():
    """// rounds toward -inf and % takes the divisor's sign (Python's), fmod the dividend's,
    with every sign combination and mixed integer dtypes (NumPy's // and % agree)."""
    a = np.array([7, -7, 7, -7, 0, 5], dtype=np.int16)
    b = np.array([2, 2, -2, -2, 3, -5], dtype=np.int8)
    x, y = clgrad.tensor(a), clgrad.tensor(b)
    assert (x // y).dtype is clgrad.int16
    assert _np(x // y).tolist() == (a // b.astype(np.int16)).tolist()
    assert _np(x % y).tolist() == (a % b.astype(np.int16)).tolist()
    assert _np(clgrad.fmod(x, y)).tolist() == np.fmod(a, b.astype(np.int16)).tolist()
    assert _np(x.div(y, rounding_mode="trunc")).tolist() == \
        np.trunc(a / b).astype(np.int16).tolist()
    assert _np(x // -3).tolist() == (a // -3).tolist()
    assert _np(-7 % y).tolist() == (-7 % b.astype(np.int64)).tolist()
    assert _np(x << clgrad.tensor(2)).tolist() == (a << 2).tolist()
    assert _np(x >> 1).tolist() == (a >> 1).tolist()


# -- the sweep against torch ---------------------------------------------------------------------
_A = {"bool": [[True, False, True], [False, True, True]]}
_B = {"bool": [[True, True, False], [True, False, True]]}
_OPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
    "eq": operator.eq, "lt": operator.lt, "ge": operator.ge,
    "and": operator.and_, "xor": operator.xor, "lshift": operator.lshift,
    "maximum": lambda t, a, b: t.maximum(a, b), "minimum": lambda t, a, b: t.minimum(a, b),
    "atan2": lambda t, a, b: t.atan2(a, b), "where": lambda t, a, b: t.where(
        t.tensor([[True, False, True], [False, False, True]]), a, b),
    "clamp": lambda t, a, b: t.clamp(a, min=b),
}
_TORCH_OPS = {"maximum", "minimum", "atan2", "where", "clamp"}


def _values(name, which):
    if name == "bool":
        return (_A if which == "a" else _B)["bool"]
    if which == "a":
        return [[7, -7, 3], [0, 5, -2]] if name != "uint8" else [[7, 250, 3], [0, 5, 128]]
    return [[2, -3, 1], [4, -2, 3]] if name != "uint8" else [[2, 3, 1], [4, 200, 3]]


def _make(lib, name, which, cat):
    """An operand: 'dim' a 2x3 tensor, 'zero' a 0-dim tensor, or a Python number."""
    if cat == "py":
        return {"bool": True, "int": -3 if which == "b" else 7, "float": 2.5}[name]
    v = _values(name, which)
    t = lib.tensor(v if cat == "dim" else v[1][1], dtype=getattr(lib, name))
    return t


def _operand_cases():
    for an in NAMES:
        for acat in ("dim", "zero"):
            for bn in NAMES:
                for bcat in ("dim", "zero"):
                    if (acat, bcat) != ("zero", "zero") or an == bn:
                        yield (an, acat), (bn, bcat)
            for py in ("bool", "int", "float"):
                yield (an, acat), (py, "py")


def _run(lib, op, a, b):
    fn = _OPS[op]
    try:
        out = fn(lib, a, b) if op in _TORCH_OPS else fn(a, b)
    except (RuntimeError, TypeError, ZeroDivisionError, ValueError) as e:
        return e
    return out


def _assert_values(got, want, case):
    """clgrad's ``got`` equals torch's ``want``: exactly for integers and bool, within one
    rounding of the dtype for floats (NaN where torch has NaN)."""
    w, g = want.numpy(), got.numpy()
    if want.dtype.is_floating_point:
        tol = {"torch.float16": 2e-3, "torch.float32": 2e-6}.get(str(want.dtype), 1e-12)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True, err_msg=case)
    else:
        np.testing.assert_array_equal(g, w, err_msg=case)


@pytest.mark.parametrize("op", sorted(_OPS))
def test_sweep_matches_torch(op):
    torch = pytest.importorskip("torch")
    bad = []
    checked = 0
    for (an, acat), (bn, bcat) in _operand_cases():
        ta, tb = _make(torch, an, "a", acat), _make(torch, bn, "b", bcat)
        want = _run(torch, op, ta, tb)
        if bcat == "py" and isinstance(want, TypeError) and "must be Tensor" in str(want):
            continue  # maximum/atan2 with a number: clgrad's extension (torch needs Tensors)
        ca, cb = _make(clgrad, an, "a", acat), _make(clgrad, bn, "b", bcat)
        got = _run(clgrad, op, ca, cb)
        case = f"{op}({an}/{acat}, {bn}/{bcat})"
        if isinstance(want, Exception):
            if not isinstance(got, Exception):
                bad.append(f"{case}: torch raises {type(want).__name__}: {want}, clgrad gives "
                           f"{got.dtype}")
            continue
        if isinstance(got, Exception):
            bad.append(f"{case}: clgrad raises {type(got).__name__}: {got}, torch gives "
                       f"{want.dtype}")
            continue
        checked += 1
        if str(want.dtype) != "torch." + got.dtype.name:
            bad.append(f"{case}: dtype {got.dtype.name}, torch {want.dtype}")
            continue
        _assert_values(got, want, case)
    assert not bad, "\n".join(bad[:40]) + f"\n({len(bad)} mismatches)"
    assert checked > 100


def test_add_sub_alpha_is_checked_against_the_result_type():
    i, b = clgrad.tensor([1, 2]), clgrad.tensor([True, False])
    for bad in (lambda: clgrad.add(i, i, alpha=2.5), lambda: clgrad.add(i, 1, alpha=2.5),
                lambda: clgrad.sub(i, i, alpha=0.5), lambda: i.clone().add_(i, alpha=1.0)):
        with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha must "
                                               "not be a floating point number"):
            bad()
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results"):
        clgrad.add(i, i, alpha=True)
    got = clgrad.add(b, b, alpha=2)  # alpha taken as bool: True
    assert got.dtype is clgrad.bool and _np(got).tolist() == [True, False]
    got = clgrad.add(i, clgrad.tensor([1.5, 2.0]), alpha=2.5)
    assert got.dtype is F32 and _np(got).tolist() == [4.75, 7.0]
    assert _np(clgrad.sub(i, 3, alpha=2)).tolist() == [-5, -4]
    assert _np(clgrad.add(i, i, alpha=3)).tolist() == [4, 8]
    assert _np(clgrad.add(i, True, alpha=2)).tolist() == [3, 4]  # True * 2 is 2, not True
    got = clgrad.add(b, True, alpha=2)
    assert got.dtype is clgrad.bool and _np(got).tolist() == [True, True]


def test_internal_wheres_keep_the_dtype():
    """tril/triu fill with a zero of x's dtype (a number 0 would lift bool to int64)."""
    b = clgrad.tensor([[True, True], [True, True]])
    got = b.tril()
    assert got.dtype is clgrad.bool and _np(got).tolist() == [[True, False], [True, True]]
    got = clgrad.tensor([[1, 2], [3, 4]], dtype=U8).triu()
    assert got.dtype is U8 and _np(got).tolist() == [[1, 2], [0, 4]]


def test_nansum_and_scans_with_integer_dtype_wrap_in_it():
    x = clgrad.tensor([100, 100], dtype=I8)
    got = clgrad.nansum(x, dtype=I8)
    assert got.dtype is I8 and got.item() == -56
    assert clgrad.nansum(x).item() == 200
    assert _np(x.cumsum(0, dtype=I8)).tolist() == [100, -56]
    assert _np(x.cumprod(0, dtype=I8)).tolist() == [100, 16]


# -- ternary ops: addcmul, addcdiv, lerp ----------------------------------------------------------
def test_ternary_ops_compute_in_the_result_type():
    i8 = clgrad.tensor([1, 2], dtype=I8)
    big = clgrad.tensor(100)  # 0-dim int64: int8 result, 100 * 2 = 200 wraps to -56
    got = clgrad.addcmul(i8, i8, big, value=1)
    assert got.dtype is I8 and _np(got).tolist() == [101, -54]  # 1 + 100, 2 + 200 - 256
    got = clgrad.addcmul(clgrad.tensor([1, 2]), clgrad.tensor([1, 2]), clgrad.tensor([1, 2]),
                         value=0.5)  # an integer result takes value truncated: 0
    assert got.dtype is I64 and _np(got).tolist() == [1, 2]
    if _DEV.fp16:  # a device without cl_khr_fp16 (NVIDIA's OpenCL) has no float16 tensors
        f16 = clgrad.tensor([1.0, 2.0], dtype=clgrad.float16)
        got = clgrad.addcdiv(f16, clgrad.tensor([1, 3]), clgrad.tensor(2.0), value=2)
        assert got.dtype is clgrad.float16 and _np(got).tolist() == [2.0, 5.0]
    got = clgrad.lerp(clgrad.tensor([1, 2]), clgrad.tensor([3, 6]), clgrad.tensor(0.5))
    assert got.dtype is F32 and _np(got).tolist() == [2.0, 4.0]
    with pytest.raises(RuntimeError, match="expected dtype clgrad.float32 for `end`"):
        clgrad.lerp(clgrad.tensor([1.0]), clgrad.tensor([2], dtype=I32), 0.5)
    with pytest.raises(TypeError, match="not implemented for 'Long'"):
        clgrad.lerp(clgrad.tensor([1]), clgrad.tensor([2]), 0.5)
    with pytest.raises(TypeError, match="not implemented for 'Bool'"):
        clgrad.addcmul(clgrad.tensor([True]), clgrad.tensor([True]), clgrad.tensor([False]))


@pytest.mark.parametrize("op", ["addcmul", "addcdiv", "lerp"])
def test_ternary_sweep_matches_torch(op):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    bad, checked = [], 0
    for _ in range(250):
        spec = [(NAMES[rng.integers(len(NAMES))], ("dim", "zero")[rng.integers(2)])
                for _ in range(3)]
        if op == "lerp":  # end of input's dtype, and half the weights (else all raise)
            spec[1] = (spec[0][0], spec[1][1])
            if rng.integers(2):
                spec[2] = (spec[0][0], spec[2][1])
        kw = {} if op == "lerp" else {"value": (1, 2, 0.5)[rng.integers(3)]}
        out = []
        for lib in (torch, clgrad):
            args = [_make(lib, n, "ab"[min(k, 1)], c) for k, (n, c) in enumerate(spec)]
            try:
                out.append(getattr(lib, op)(*args, **kw))
            except (RuntimeError, TypeError) as e:
                out.append(e)
        want, got = out
        case = f"{op}{spec} {kw}"
        if isinstance(want, Exception) or isinstance(got, Exception):
            if isinstance(want, Exception) != isinstance(got, Exception):
                bad.append(f"{case}: torch {want!r:.80}, clgrad {got!r:.80}")
            continue
        checked += 1
        if str(want.dtype) != "torch." + got.dtype.name:
            bad.append(f"{case}: dtype {got.dtype.name}, torch {want.dtype}")
            continue
        np.testing.assert_allclose(got.numpy().astype(np.float64),
                                   want.numpy().astype(np.float64), rtol=2e-3, atol=2e-3,
                                   err_msg=case)
    assert not bad, "\n".join(bad[:40]) + f"\n({len(bad)} mismatches)"
    assert checked > 40


# -- in-place ops: computed in the result type, cast back where can_cast allows ----------------
_INPLACE = {"add_": lambda s, o: s.add_(o), "sub_": lambda s, o: s.sub_(o),
            "mul_": lambda s, o: s.mul_(o), "div_": lambda s, o: s.div_(o),
            "floordiv_": lambda s, o: s.floor_divide_(o),
            "remainder_": lambda s, o: s.remainder_(o), "pow_": lambda s, o: s.pow_(o),
            "iand": lambda s, o: s.__iand__(o), "ilshift": lambda s, o: s.__ilshift__(o),
            "atan2_": lambda s, o: s.atan2_(o), "clamp_": lambda s, o: s.clamp_(min=o),
            "masked_fill_": lambda s, o: s.masked_fill_(
                s.new_tensor([[True, False, True], [False, True, False]]).bool(), o)}


@pytest.mark.parametrize("op", sorted(_INPLACE))
def test_inplace_sweep_matches_torch(op):
    torch = pytest.importorskip("torch")
    fn = _INPLACE[op]
    bad, checked = [], 0
    for (an, acat), (bn, bcat) in _operand_cases():
        if acat != "dim" or (op == "masked_fill_" and bcat == "dim"):
            continue
        ta, tb = _make(torch, an, "a", acat), _make(torch, bn, "b", bcat)
        ca, cb = _make(clgrad, an, "a", acat), _make(clgrad, bn, "b", bcat)
        out = []
        for a, b in ((ta, tb), (ca, cb)):
            try:
                fn(a, b)
                out.append(a)
            except (RuntimeError, TypeError, ZeroDivisionError) as e:
                out.append(e)
        want, got = out
        if bcat == "py" and isinstance(want, TypeError) and "must be Tensor" in str(want):
            continue  # atan2_ with a number: clgrad's extension (torch needs a Tensor)
        case = f"{op}({an}/{acat}, {bn}/{bcat})"
        if isinstance(want, Exception) or isinstance(got, Exception):
            if isinstance(want, Exception) != isinstance(got, Exception):
                bad.append(f"{case}: torch {want!r:.90}, clgrad {got!r:.90}")
            continue
        checked += 1
        _assert_values(got, want, case)
    assert not bad, "\n".join(bad[:40]) + f"\n({len(bad)} mismatches)"
    assert checked > 20
