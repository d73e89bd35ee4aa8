"""The op table (clgrad/ops/registry.py): one test per row, generated from the table.

For each row: every face it declares exists and is the row's function (or its public-entry
wrapper: the argument check, out=), its in-place variants write the op's values into self and
return self, its operators compute the op (reflected: operands swapped), its out= kind and
argument names are PyTorch's; no name is declared twice. And every op taking a floating tensor
has an entry in one of the oracle tables of the suite (``ORACLE_TABLES``: gradcheck cases and
NumPy oracles), or a stated reason in ``NO_TABLE_ENTRY``.
"""
import ast
import inspect
import pathlib
import re

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.ops import registry
from clgrad.ops.registry import FUNCTIONAL, METHOD, OPS, OWN, TORCH

T = clgrad.Tensor
ROWS = [pytest.param(row, id=row.name) for row in OPS]


def _unwrapped(fn):
    """The function under the public-entry wrappers (check_tensor_args, with_out)."""
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    return fn


def test_no_name_is_declared_twice():
    """Each face's names (rows and aliases), in-place variants and operators are unique."""
    for which in (TORCH, FUNCTIONAL, METHOD):
        names = [n for row in OPS if row.faces & which for n in row.names()]
        assert len(names) == len(set(names)), which
    rows = [row.name for row in OPS]
    assert len(rows) == len(set(rows))
    generated = [n for n, _, _ in registry.inplace_variants()]
    generated += [n for n, _, _ in registry.operators()]
    generated += list(registry.methods())
    assert len(generated) == len(set(generated))


def test_the_faces_list_exactly_the_table_and_their_own_names():
    """clgrad.__all__ and F.__all__ hold every op name of the table; F's __all__ is only that."""
    assert set(registry.names(TORCH)) <= set(clgrad.__all__)
    assert F.__all__ == registry.names(FUNCTIONAL)
    assert len(set(clgrad.__all__)) == len(clgrad.__all__)  # no op name shadows another name


@pytest.mark.parametrize("row", ROWS)
def test_each_declared_face_is_the_rows_function(row):
    for n in row.names():
        if row.faces & TORCH:
            assert n in clgrad.__all__
            assert _unwrapped(getattr(clgrad, n)) is (row.torch or row.fn), n
        if row.faces & FUNCTIONAL:
            assert n in F.__all__
            got = F.__dict__[n]
            if row.functional == OWN:  # defined in clgrad/nn/functional.py itself
                assert _unwrapped(got).__module__ == "clgrad.nn.functional", n
            else:
                assert _unwrapped(got) is (row.functional or row.fn), n
        if row.faces & METHOD:
            assert _unwrapped(inspect.getattr_static(T, n)) is (row.method or row.fn), n
        else:
            assert row.method is None
        if not row.faces & TORCH:
            assert row.torch is None
            assert n not in clgrad.__all__ or getattr(clgrad, n) is not row.fn
    if row.out:
        assert row.faces & TORCH
        for n in row.names():
            assert getattr(getattr(clgrad, n), "__with_out__", False), n


# -- sample operands: the first kind of input the op takes (floats, then integers) ----------
_RNG = np.random.default_rng(34)
_KINDS = [(np.float64, (2, 2)), (np.float64, (1, 2, 2)), (np.int64, (2, 2))]


def _operands(kind, n):
    dt, shape = kind
    if dt is np.int64:
        vals = [_RNG.integers(1, 5, size=shape) for _ in range(n)]
    else:
        vals = [_RNG.uniform(0.5, 2.0, size=shape) for _ in range(n)]
    return [clgrad.tensor(v) for v in vals]


def _call(fn, n_tensors, extra=()):
    """(operands, fn(*operands, *extra)) for the first sample kind the op accepts, or None."""
    for kind in _KINDS:
        xs = _operands(kind, n_tensors)
        try:
            return xs, fn(*xs, *extra)
        except (TypeError, RuntimeError, ValueError):
            continue
    return None


def _required(fn) -> int:
    """The number of required positional parameters (self included)."""
    return sum(1 for p in inspect.signature(fn).parameters.values()
               if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty)


INPLACE = [pytest.param(row, n, id=n + "_") for row in OPS if row.inplace for n in row.names()]
INT_AFTER_SELF = {"polygamma": (2,), "mvlgamma": (2,)}  # x.polygamma_(n), x.mvlgamma_(p)


@pytest.mark.parametrize("row, name", INPLACE)
def test_inplace_variant_writes_the_ops_values_into_self(row, name):
    """``x.<name>_(*args)`` returns x holding ``x.<name>(*args)``'s values (``x.add_(y)`` is
    ``x.add(y)``, ``x.relu_()`` is ``x.relu()``), computed here with NumPy-made operands."""
    method = getattr(T, name)
    inplace = getattr(T, name + "_")
    assert inplace.__name__ == name + "_"
    n = max(_required(row.method or row.fn), 1)
    extras = ((), (0.9,))  # (0.9,): clamp needs a bound (PyTorch's error without one)
    if name in INT_AFTER_SELF:
        n, extras = 1, (INT_AFTER_SELF[name],)
    for extra in extras:
        called = _call(method, n, extra)
        if called is not None:
            break
    assert called is not None, f"{name}: no sample operands fit"
    xs, want = called
    before = xs[0].numpy().copy()
    got = inplace(*xs, *extra)
    assert got is xs[0]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    assert not np.array_equal(before, got.numpy()) or np.array_equal(before, want.numpy())


OPERATORS = [pytest.param(*o, id=o[0]) for o in registry.operators()
             if o[0] not in ("__getitem__", "__setitem__")]


@pytest.mark.parametrize("dunder, fn, kind", OPERATORS)
def test_operators_compute_the_op(dunder, fn, kind):
    method = getattr(T, dunder)
    if kind == registry.ALIAS:  # x += y is x.add_(y): the same function
        assert method is getattr(T, fn)
        return
    called = _call(fn, _required(fn))
    assert called is not None, f"{dunder}: no sample operands fit"
    xs, want = called
    if kind == "reflected":  # y.__radd__(x) is add(x, y)
        got = method(xs[1], xs[0])
    elif kind == registry.OWN:  # x.__iand__(y): in place, named after the operator
        assert method.__name__ == dunder
        got = method(*xs)
        assert got is xs[0]
    else:  # binary ones wrapped: NotImplemented for operands they do not take (x == None)
        assert method is fn or method.__wrapped__ is fn
        got = method(*xs)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_indexing_operators_are_the_indexing_ops():
    x = clgrad.tensor(np.arange(6.0).reshape(2, 3))
    assert x[1, 2].item() == 5.0
    x[0, 1] = 7.0
    assert x.numpy().tolist() == [[0.0, 7.0, 2.0], [3.0, 4.0, 5.0]]
    rows = {o[0]: o[1] for o in registry.operators()}
    assert T.__getitem__ is rows["__getitem__"] and T.__setitem__ is rows["__setitem__"]


def test_out_kinds_are_pytorchs():
    """EXACT rows: out must have the result's dtype (PyTorch raises, with a message of its own
    per op); CAST rows: the result is cast into out. A sample of each kind, both libraries."""
    torch = pytest.importorskip("torch")
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    want = {"mm": x @ x, "clamp": np.minimum(x, 2.0), "add": x + x, "mul": x * x}
    two = lambda m: (m.tensor(x), m.tensor(x))  # noqa: E731
    args = {"mm": two, "add": two, "mul": two, "clamp": lambda m: (m.tensor(x), None, 2.0)}
    for name, exact in [("mm", True), ("clamp", True), ("add", False), ("mul", False)]:
        assert registry.outs()[name] is exact
        for m in (torch, clgrad):
            out = m.zeros(2, 2, dtype=m.float32)  # the result is float64
            if exact:
                with pytest.raises(RuntimeError, match=None if m is torch else
                                   rf"^{name}\(\): Expected out tensor to have dtype "
                                   r"clgrad\.float64, but got clgrad\.float32 instead$"):
                    getattr(m, name)(*args[name](m), out=out)
            else:
                assert getattr(m, name)(*args[name](m), out=out) is out
                assert out.dtype == m.float32
                np.testing.assert_allclose(out.numpy(), want[name])


TORCH_NAMES = [pytest.param(row, p, n, id=f"{row.name}.{p}") for row in OPS if row.torch_names
               for p, n in row.torch_names.items()]


def _torch_parameter(torch, name, pos, args):
    """PyTorch's name of parameter ``pos`` of torch.<name>: from its Python signature, else
    from its TypeError for a NumPy array there ("argument 'mat2' (position 2)", or the first
    overload listed by "invalid combination of arguments")."""
    fn = getattr(torch, name)
    try:
        return list(inspect.signature(fn).parameters)[pos]
    except (TypeError, ValueError):
        pass
    with pytest.raises(TypeError) as err:
        fn(*args)
    msg = str(err.value)
    m = re.search(rf"argument '(\w+)' \(position {pos + 1}\)", msg)
    if m:
        return m.group(1)
    if "positional argument" in msg:  # one signature (inverse(input)): the array alone
        with pytest.raises(TypeError) as err:
            fn(*args[:pos + 1])
        return re.search(rf"argument '(\w+)' \(position {pos + 1}\)", str(err.value)).group(1)
    overload = re.search(r"\* \(([^)]*)\)", msg).group(1).split(", ")
    return overload[pos].split()[-1]


@pytest.mark.parametrize("row, param, name", TORCH_NAMES)
def test_torch_names_are_pytorchs_and_name_the_argument(row, param, name):
    """A row's ``torch_names`` entry: clgrad.<op> and Tensor.<op> name the parameter as
    PyTorch does in the argument check's TypeError, and it is torch.<op>'s name there."""
    pos = list(inspect.signature(row.fn).parameters).index(param)
    ones = [np.ones((1, 2, 2) if row.name == "bmm" else (2, 2))] * 2
    args = [clgrad.tensor(v) for v in ones[:pos]] + [ones[pos]] + [1] * (pos == 0)
    with pytest.raises(TypeError, match=rf"^{row.fn.__name__}\(\): argument '{name}' \(position "
                       rf"{pos + 1}\) must be Tensor, not numpy\.ndarray$"):
        getattr(clgrad, row.name)(*args)
    if pos > 0 and row.faces & METHOD:  # x.mm(arr): position counted after self
        with pytest.raises(TypeError, match=rf"argument '{name}' \(position {pos}\)"):
            getattr(args[0], row.name)(*args[1:])
    torch = pytest.importorskip("torch")
    targs = [torch.tensor(v) for v in ones[:pos]] + [ones[pos]] + [1] * (pos == 0)
    assert _torch_parameter(torch, row.name, pos, targs) == name


# -- the oracle tables and what they cover ----------------------------------------------------
TESTS = pathlib.Path(__file__).parent
# (file, table): NumPy/PyTorch oracles and float64 gradchecks, each row naming the ops it calls
# (file, table, op): a table of one op's cases (its entries hold its arguments, not its name)
ORACLE_TABLES = [("test_gradcheck_ops.py", "CASES", None), ("test_elementwise.py", "BINARY", None),
                 ("test_elementwise.py", "UNARY", None), ("test_elementwise.py", "INPLACE", None),
                 ("test_activation.py", "ACTS", None), ("test_composite.py", "CASES", None),
                 ("test_loss.py", "POINTWISE", None), ("test_autograd.py", "INPLACE_CASES", None),
                 ("test_integer.py", "_OURS", None), ("test_integer.py", "_TORCH_BINARY", None),
                 ("test_reduce.py", "REDUCE", None),
                 ("test_einsum.py", "CASES", "einsum"),
                 ("test_activation_loss_more.py", "CASES", None),
                 ("test_math_ops.py", "UNARY", None), ("test_math_ops.py", "BINARY", None)]
_NOT_OURS = {"np", "math", "torch", "TF", "tnn"}  # attributes of the oracles, not of clgrad
_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow",
           ast.MatMult: "matmul", ast.FloorDiv: "floor_divide", ast.Mod: "remainder",
           ast.BitAnd: "bitwise_and", ast.BitOr: "bitwise_or", ast.BitXor: "bitwise_xor",
           ast.LShift: "bitwise_left_shift", ast.RShift: "bitwise_right_shift"}
_UNOPS = {ast.USub: "neg", ast.Invert: "bitwise_not"}
_OPERATOR_MODULE = {"and_": "bitwise_and", "or_": "bitwise_or", "xor": "bitwise_xor",
                    "lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift",
                    "floordiv": "floor_divide", "mod": "remainder", "invert": "bitwise_not"}
_CMPOPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt",
           ast.GtE: "ge"}


def _names_used(node) -> set:
    """Op names a table's source uses: attributes (x.exp(), clgrad.add, F.relu) not of NumPy
    or torch, and Python operators (a + b, operator.add: add; x[i]: getitem)."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and \
                n.value.id == "operator":  # operator.and_ applied to clgrad tensors
            out.add(_OPERATOR_MODULE.get(n.attr, n.attr))
        elif isinstance(n, ast.Attribute) and not (isinstance(n.value, ast.Name)
                                                    and n.value.id in _NOT_OURS):
            out.add(n.attr)
        elif isinstance(n, ast.BinOp) and type(n.op) in _BINOPS:
            out.add(_BINOPS[type(n.op)])
        elif isinstance(n, ast.UnaryOp) and type(n.op) in _UNOPS:
            out.add(_UNOPS[type(n.op)])
        elif isinstance(n, ast.Compare):
            out.update(_CMPOPS[type(o)] for o in n.ops if type(o) in _CMPOPS)
        elif isinstance(n, ast.Subscript):
            out.add("getitem")
    return out


def covered() -> set:
    """Every name the oracle tables use."""
    names = set()
    for file, table, op in ORACLE_TABLES:
        tree = ast.parse((TESTS / file).read_text())
        nodes = [n.value for n in tree.body if isinstance(n, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == table for t in n.targets)]
        assert nodes, f"{file}: no table {table}"
        names |= {op} if op else _names_used(nodes[0])
    return names


def _takes_a_float_tensor(row) -> bool:
    """An op over tensors (not a factory, not an indexing protocol)."""
    fn = row.fn
    if fn.__module__ == "clgrad.creation" or not row.faces:
        return False
    params = list(inspect.signature(fn).parameters)
    return bool(params) and params[0] in ("x", "a", "input", "self", "tensors", "t", "cond",
                                          "condition", "query", "probs", "theta", "mean",
                                          "equation", "tensor", "A")


# Ops taking a floating tensor with no entry in ORACLE_TABLES: the test file that checks them
# instead, with per-op test functions rather than a table row (issue 34's census; the test
# below checks that the file uses the op, and an entry must go once the op is in a table).
_RANDOM = {  # random draws: distribution and seed tests, no fixed values to tabulate
    "normal": "test_random.py", "bernoulli": "test_random.py", "bernoulli_": "test_random.py",
    "normal_": "test_random.py", "uniform_": "test_random.py",
    "exponential_": "test_random.py", "random_": "test_random.py", "dropout": "test_activation.py",
    "multinomial": "test_search.py",
    "dropout1d": "test_nn.py", "dropout2d": "test_nn.py", "dropout3d": "test_three_d.py"}
_NO_GRADIENT = {  # bool or integer results
    "bitwise_not": "test_integer.py", "isnan": "test_numeric.py", "isinf": "test_numeric.py",
    "isfinite": "test_numeric.py", "isclose": "test_numeric.py", "allclose": "test_numeric.py",
    "equal": "test_numeric.py", "logical_xor": "test_composite.py", "argmax": "test_reduce.py",
    "argmin": "test_reduce.py", "count_nonzero": "test_index.py", "any": "test_reduce.py",
    "all": "test_reduce.py", "argsort": "test_sort.py", "nonzero": "test_index.py",
    "argwhere": "test_index.py", "one_hot": "test_index.py", "signbit": "test_special.py",
    "is_floating_point": "test_special.py", "is_nonzero": "test_special.py",
    "bucketize": "test_search.py", "gcd": "test_math_ops.py", "lcm": "test_math_ops.py"}
_OWN_TESTS = {  # values (NumPy or PyTorch) and gradients in the family's test functions
    "rms_norm": "test_nn_gaps.py",
    # brute-force and alpha-recursion oracles; its gradient is PyTorch's, not d loss/d input
    "ctc_loss": "test_ctc_loss.py",
    # the 3-D family: values against PyTorch / a float64 loop, finite-difference gradients
    "conv3d": "test_three_d.py", "conv_transpose3d": "test_three_d.py",
    "max_pool3d": "test_three_d.py", "max_pool3d_with_indices": "test_three_d.py",
    "avg_pool3d": "test_three_d.py", "adaptive_avg_pool3d": "test_three_d.py",
    "adaptive_max_pool3d": "test_three_d.py",
    "adaptive_max_pool3d_with_indices": "test_three_d.py",
    "max_pool2d_with_indices": "test_nn_gaps.py",
    "adaptive_max_pool1d_with_indices": "test_nn_gaps.py",
    "adaptive_max_pool2d_with_indices": "test_nn_gaps.py",
    "max_unpool1d": "test_nn_gaps.py",
    "max_unpool2d": "test_nn_gaps.py",
    "upsample_nearest": "test_nn_gaps.py",
    "upsample_bilinear": "test_nn_gaps.py",
    "elu_": "test_nn_gaps.py",
    "leaky_relu_": "test_nn_gaps.py",
    "hardtanh_": "test_nn_gaps.py",
    "alpha_dropout": "test_nn_gaps2.py",
    "alpha_dropout_": "test_nn_gaps2.py",
    "feature_alpha_dropout": "test_nn_gaps2.py",
    "feature_alpha_dropout_": "test_nn_gaps2.py",
    "lp_pool1d": "test_nn_gaps2.py",
    "lp_pool2d": "test_nn_gaps2.py",
    "pdist": "test_nn_gaps2.py",
    "multilabel_margin_loss": "test_nn_gaps2.py",
    "triplet_margin_with_distance_loss": "test_nn_gaps2.py",
    "embedding_bag": "test_nn_gaps2.py", "embedding_renorm_": "test_embedding_renorm.py",
    "atan2": "test_round3_ops.py", "log1p": "test_round3_ops.py", "expm1": "test_round3_ops.py",
    "nan_to_num": "test_numeric.py", "masked_fill": "test_elementwise.py",
    "var_mean": "test_composite.py", "std_mean": "test_composite.py",
    "normalize": "test_reduce.py", "nansum": "test_round3_ops.py", "nanmean": "test_round3_ops.py",
    "cumsum": "test_scan.py", "cumprod": "test_scan.py", "cummax": "test_round3_ops.py",
    "cummin": "test_round3_ops.py", "diff": "test_round3_ops.py", "sort": "test_sort.py",
    "topk": "test_sort.py", "unique": "test_sort.py", "kthvalue": "test_round3_ops.py",
    "median": "test_round3_ops.py", "linear": "test_matmul.py", "flip": "test_views.py",
    "repeat": "test_views.py", "broadcast_tensors": "test_composite.py",
    "meshgrid": "test_composite.py", "scatter": "test_index.py", "roll": "test_index.py",
    "tril": "test_index.py", "triu": "test_index.py", "index_add": "test_round3_ops.py",
    "masked_select": "test_composite.py", "index_put": "test_index.py",
    "index_put_": "test_index.py", "embedding": "test_index.py", "conv1d": "test_conv_transpose.py",
    "conv2d": "test_conv.py", "conv_transpose1d": "test_conv_transpose.py",
    "conv_transpose2d": "test_conv_transpose.py", "max_pool1d": "test_pool.py",
    "max_pool2d": "test_pool.py", "avg_pool1d": "test_pool.py", "avg_pool2d": "test_pool.py",
    "adaptive_avg_pool1d": "test_pool.py", "adaptive_avg_pool2d": "test_pool.py",
    "adaptive_max_pool1d": "test_pool.py", "adaptive_max_pool2d": "test_pool.py",
    "interpolate": "test_upsample.py", "grid_sample": "test_grid_sample.py",
    "affine_grid": "test_grid_sample.py", "batch_norm": "test_norm.py",
    "layer_norm": "test_norm.py", "group_norm": "test_norm.py", "instance_norm": "test_norm.py",
    "local_response_norm": "test_norm.py", "leaky_relu": "test_activation.py",
    "prelu": "test_activation.py", "logsigmoid": "test_round3_ops.py",
    "scaled_dot_product_attention": "test_attention.py", "pad": "test_activation.py",
    "pixel_shuffle": "test_shuffle.py", "pixel_unshuffle": "test_shuffle.py",
    "channel_shuffle": "test_shuffle.py", "cross_entropy": "test_loss.py",
    "nll_loss": "test_loss.py", "mse_loss": "test_loss.py",
    # clgrad/ops/special.py: tests/test_special.py (NumPy, math, gradchecks, PyTorch)
    "erfinv": "test_special.py", "erfc": "test_special.py", "lgamma": "test_special.py",
    "digamma": "test_special.py", "trunc": "test_special.py", "frac": "test_special.py",
    "deg2rad": "test_special.py", "rad2deg": "test_special.py", "hypot": "test_special.py",
    "logaddexp": "test_special.py", "logaddexp2": "test_special.py", "xlogy": "test_special.py",
    "copysign": "test_special.py", "float_power": "test_special.py",
    "float_power_": "test_special.py", "mvlgamma": "test_special_ns.py",
    "igamma": "test_special_families.py", "igammac": "test_special_families.py"}
_SHAPE_OPS = {  # NumPy-style shape ops and products: values, views and gradients
    "hstack": "test_shape_ops.py", "vstack": "test_shape_ops.py", "row_stack": "test_shape_ops.py",
    "dstack": "test_shape_ops.py", "column_stack": "test_shape_ops.py",
    "tensor_split": "test_shape_ops.py",
    "hsplit": "test_shape_ops.py", "vsplit": "test_shape_ops.py", "dsplit": "test_shape_ops.py",
    "atleast_1d": "test_shape_ops.py", "atleast_2d": "test_shape_ops.py",
    "atleast_3d": "test_shape_ops.py", "broadcast_to": "test_shape_ops.py",
    "addr_": "test_shape_ops.py", "addbmm_": "test_shape_ops.py",
    "swapdims": "test_shape_ops.py", "take": "test_shape_ops.py",
    "take_along_dim": "test_shape_ops.py", "index_fill": "test_shape_ops.py",
    "index_fill_": "test_shape_ops.py", "rot90": "test_shape_ops.py",
    "fliplr": "test_shape_ops.py", "flipud": "test_shape_ops.py", "trace": "test_shape_ops.py",
    "diag_embed": "test_shape_ops.py", "block_diag": "test_shape_ops.py",
    "kron": "test_shape_ops.py", "tensordot": "test_shape_ops.py",
    "cartesian_prod": "test_shape_ops.py", "combinations": "test_shape_ops.py",
    "cdist": "test_shape_ops.py", "dist": "test_shape_ops.py", "renorm": "test_shape_ops.py",
    "addr": "test_shape_ops.py", "addbmm": "test_shape_ops.py",
    "chain_matmul": "test_shape_ops.py", "matrix_power": "test_shape_ops.py"}
_LINALG = {  # host (NumPy LAPACK) decompositions: NumPy oracles, finite-difference gradients
    "inverse": "test_linalg_decomp.py", "det": "test_linalg_decomp.py",
    "slogdet": "test_linalg_decomp.py", "logdet": "test_linalg_decomp.py",
    "cholesky_solve": "test_linalg_decomp.py", "cholesky_inverse": "test_linalg_decomp.py",
    "svd": "test_linalg_decomp.py", "pinverse": "test_linalg_decomp.py"}
_MISC_API = {name: "test_misc_api.py" for name in (  # statistics, scatters, products ...
    "quantile", "nanquantile", "nanmedian", "mode", "aminmax", "bincount", "histc", "cov",
    "corrcoef", "trapezoid", "cumulative_trapezoid", "logcumsumexp", "unique_consecutive",
    "scatter_reduce", "index_copy", "masked_scatter", "diagonal_scatter", "select_scatter",
    "slice_scatter", "put", "put_", "cross", "inner", "vdot", "vander", "diag", "diagflat",
    "split_with_sizes", "sum_to_size", "fill", "frexp", "is_complex", "is_signed",
    "is_same_size", "is_inference")}
_TOP_LEVEL = {  # torch's top-level forms (clgrad/ops/toplevel.py), matrix in-place forms: values
    # against nn.functional / NumPy / PyTorch, in-place rules, gradients
    **{n: "test_top_level_aliases.py" for n in (
        "addmv_", "renorm_", "convolution", "max_pool1d_with_indices", "dropout_",
        "feature_dropout", "feature_dropout_", "constant_pad_nd", "rsub", "detach_")}}
NO_TABLE_ENTRY = {**_RANDOM, **_NO_GRADIENT, **_OWN_TESTS, **_SHAPE_OPS, **_LINALG,
                  **_MISC_API, **_TOP_LEVEL}


def test_every_float_op_has_an_oracle_table_entry_or_a_reason():
    used = covered()
    missing, stale = [], []
    for row in OPS:
        if not _takes_a_float_tensor(row):
            continue
        has = any(n in used for n in row.names())
        if not has and row.name not in NO_TABLE_ENTRY:
            missing.append(row.name)
        if has and row.name in NO_TABLE_ENTRY:
            stale.append(row.name)
    assert missing == [], f"no oracle table entry and no reason: {missing}"
    assert set(NO_TABLE_ENTRY) <= {row.name for row in OPS}
    assert stale == [], f"in an oracle table now: drop from NO_TABLE_ENTRY: {stale}"


@pytest.mark.parametrize("name", sorted(NO_TABLE_ENTRY))
def test_the_file_named_for_an_op_without_a_table_entry_uses_it(name):
    """The file named in NO_TABLE_ENTRY calls the op (x.name(...), F.name, its operator), or
    names it where it calls it through getattr (``@pytest.mark.parametrize("name", [...])``)."""
    row = next(r for r in OPS if r.name == name)
    text = (TESTS / NO_TABLE_ENTRY[name]).read_text()
    calls = _names_used(ast.parse(text))
    assert any(n in calls or f'"{n}"' in text for n in row.names()), NO_TABLE_ENTRY[name]


def test_the_census_reads_the_tables():
    """The table scan sees what the tables hold (a scan that saw nothing would pass vacuously):
    hand-picked entries of each kind, and NumPy's names are not taken for clgrad's."""
    used = covered()
    assert {"add", "neg", "matmul", "getitem", "exp", "gelu", "einsum", "addcmul"} <= used
    # NumPy's and torch's attributes are the oracles', not clgrad's
    assert _names_used(ast.parse("np.exp(x) + torch.tanh(y) - TF.relu(z)")) == {"add", "sub"}
    assert _names_used(ast.parse("operator.and_(a, b)[0]")) == {"bitwise_and", "getitem"}


def test_the_api_pages_read_the_table_as_it_runs():
    """tools/griffe_registry.py (the API reference's static reading of the table) finds every
    row with the names, implementing function, faces and nn.functional function it has at run
    time, so the pages list each op under the faces it is bound to."""
    pytest.importorskip("griffe")
    import importlib.util
    path = TESTS.parent / "tools" / "griffe_registry.py"
    spec = importlib.util.spec_from_file_location("griffe_registry", path)
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    static = ext.rows((TESTS.parent / "clgrad" / "ops" / "registry.py").read_text())
    assert len(static) == len(OPS)
    for (names, target, faces, functional), row in zip(static, OPS):
        assert names == list(row.names())
        top = row.torch or row.fn
        assert target == f"{top.__module__}.{top.__name__}", row.name
        assert faces == row.faces, row.name
        f_fn = row.functional or (row.fn if row.torch else None)  # F's, beside torch=
        want = "own" if row.functional == OWN else (
            None if f_fn is None else f"{f_fn.__module__}.{f_fn.__name__}")
        assert functional == want, row.name
