"""gradcheck (float64, central differences) over every differentiable op, non-contiguous inputs.

Each row of CASES is (fn, input specs). A spec is a shape, or (shape, kind) with kind picking
the values: 'normal' in [-2, 2], 'pos' in [0.5, 2.5] (log, sqrt, division ...), 'distinct'
(a shuffled grid 0.37 apart: no ties, no value near a kink). Every input is a leaf laid out
non-contiguously -- a storage offset, reversed storage order, a step of 2 and a negative step
(see ``strided_leaf``) -- so every kernel and every backward reads through real strides.
Views, broadcasts and stride-0 expansions are built inside ``fn``, so a perturbation of an
input moves exactly one element.
"""
import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck

f64 = clgrad.float64


def host_values(rng, shape, kind):
    n = int(np.prod(shape))
    if kind == "distinct":
        return (rng.permutation(n) * 0.37 - n * 0.17).reshape(shape)
    lo, hi = (0.5, 2.5) if kind == "pos" else (-2.0, 2.0)
    return rng.uniform(lo, hi, size=shape)


def strided_leaf(host: np.ndarray):
    """A float64 leaf requiring grad, equal to ``host``, stored non-contiguously: dims in
    reversed storage order, every other element, the first stored dim walked backwards."""
    if host.ndim == 0:
        return clgrad.tensor(host, dtype=f64, requires_grad=True)
    rev = tuple(range(host.ndim))[::-1]
    stored = host.transpose(rev)
    big = np.zeros(tuple(2 * s + 1 for s in stored.shape))
    key = tuple(slice(2 * s - 1, 0, -2) if i == 0 and s > 0 else slice(1, 2 * s + 1, 2)
                for i, s in enumerate(stored.shape))
    big[key] = stored
    t = clgrad.tensor(big, dtype=f64)[key].permute(*rev).detach().requires_grad_()
    assert not t.is_contiguous() or t.numel() <= 1
    np.testing.assert_array_equal(t.detach().numpy(), host)
    return t


def make_inputs(specs, seed):
    rng = np.random.default_rng(seed)
    out = []
    for spec in specs:
        shape, kind = spec if spec and isinstance(spec[-1], str) else (spec, "normal")
        out.append(strided_leaf(host_values(rng, shape, kind)))
    return out


def _idx(values):
    return clgrad.tensor(np.array(values), dtype=clgrad.int64)


IDX = _idx([2, 0, 2, 1])
GATHER_IDX = _idx([[0, 2, 2], [1, 1, 0]])
SCATTER_IDX = _idx([[0, 1, 0], [1, 0, 1]])
COND = clgrad.tensor(np.array([[True, False, True], [False, False, True]]))
MASK = clgrad.tensor(np.array([True, False, True]))

CASES = {
    # -- elementwise, broadcasting ------------------------------------------------------------
    "add_bcast": (lambda a, b: a + b, [(3, 1), (1, 4)]),
    "add_alpha": (lambda a, b: clgrad.add(a, b, alpha=-2.5), [(2, 3), (3,)]),
    "add_scalar": (lambda a: 1.5 + a, [(2, 3)]),
    "sub_bcast": (lambda a, b: a - b, [(2, 3), (2, 1)]),
    "rsub_scalar": (lambda a: 2.0 - a, [(3,)]),
    "mul_bcast": (lambda a, b: a * b, [(2, 1, 3), (4, 3)]),
    "mul_scalar": (lambda a: a * -3.0, [(2, 3)]),
    "mul_0dim": (lambda a, b: a * b, [(2, 3), ()]),
    "div": (lambda a, b: a / b, [(2, 3), ((3,), "pos")]),
    "rdiv_scalar": (lambda a: 1.5 / a, [((2, 3), "pos")]),
    "pow_tensor": (lambda a, b: a ** b, [((2, 3), "pos"), (2, 3)]),
    "pow_scalar": (lambda a: a ** 2.5, [((2, 3), "pos")]),
    "pow_2": (lambda a: a ** 2, [(2, 3)]),
    "rpow": (lambda a: 2.0 ** a, [(2, 3)]),
    "maximum": (lambda a, b: clgrad.maximum(a, b), [(2, 3), (3,)]),
    "minimum": (lambda a, b: clgrad.minimum(a, b), [(2, 3), (2, 1)]),
    "neg": (lambda a: -a, [(2, 3)]),
    "abs": (lambda a: a.abs(), [((2, 3), "distinct")]),
    "exp": (lambda a: a.exp(), [(2, 3)]),
    "log": (lambda a: a.log(), [((2, 3), "pos")]),
    "sqrt": (lambda a: a.sqrt(), [((2, 3), "pos")]),
    "rsqrt": (lambda a: a.rsqrt(), [((2, 3), "pos")]),
    "tanh": (lambda a: a.tanh(), [(2, 3)]),
    "sigmoid": (lambda a: a.sigmoid(), [(2, 3)]),
    "relu": (lambda a: a.relu(), [((2, 3), "distinct")]),
    "sin": (lambda a: a.sin(), [(2, 3)]),
    "cos": (lambda a: a.cos(), [(2, 3)]),
    "square": (lambda a: clgrad.square(a), [(2, 3)]),
    "reciprocal": (lambda a: clgrad.reciprocal(a), [((2, 3), "pos")]),
    "where": (lambda a, b: clgrad.where(COND, a, b), [(2, 3), (3,)]),
    "where_scalar": (lambda a: clgrad.where(COND, 0.5, a), [(2, 3)]),
    "clamp": (lambda a: a.clamp(-0.5, 0.5), [((3, 4), "distinct")]),
    "clamp_min": (lambda a: a.clamp(min=0.2), [((3, 4), "distinct")]),
    "clamp_max": (lambda a: clgrad.clamp(a, max=-0.1), [((3, 4), "distinct")]),
    "clamp_tensors": (lambda a, lo, hi: a.clamp(lo, hi - 3.0),
                      [((2, 3), "distinct"), (3,), ((2, 1), "pos")]),
    "contiguous": (lambda a: a.t().contiguous(), [(2, 3)]),
    "clone": (lambda a: a.clone(), [(2, 3)]),
    # -- reductions ---------------------------------------------------------------------------
    "sum_all": (lambda a: a.sum(), [(2, 3)]),
    "sum_dim": (lambda a: a.sum(1), [(2, 3, 2)]),
    "sum_dims_keepdim": (lambda a: a.sum((0, 2), keepdim=True), [(2, 3, 2)]),
    "mean": (lambda a: a.mean(-1), [(2, 3)]),
    "mean_all": (lambda a: a.mean(), [(2, 3)]),
    "prod_dim": (lambda a: a.prod(1), [((2, 3), "pos")]),
    "prod_all": (lambda a: a.prod(), [((2, 3), "pos")]),
    "max_all": (lambda a: a.max(), [((2, 3), "distinct")]),
    "max_dim": (lambda a: a.max(1).values, [((3, 4), "distinct")]),
    "min_dim_keepdim": (lambda a: a.min(0, keepdim=True).values, [((3, 4), "distinct")]),
    "amax_dims": (lambda a: a.amax((0, 2)), [((2, 3, 2), "distinct")]),
    "amin": (lambda a: a.amin(1), [((3, 4), "distinct")]),
    "var": (lambda a: a.var(1), [(2, 4)]),
    "std_all": (lambda a: a.std(), [(2, 3)]),
    "std_biased": (lambda a: a.std(0, correction=0), [(3, 2)]),
    "softmax": (lambda a: a.softmax(1), [(2, 4)]),
    "softmax_dim0": (lambda a: clgrad.softmax(a, 0), [(3, 2, 2)]),
    "log_softmax": (lambda a: a.log_softmax(-1), [(2, 4)]),
    "logsumexp": (lambda a: a.logsumexp(1), [(3, 4)]),
    "logsumexp_keepdim": (lambda a: clgrad.logsumexp(a, 0, keepdim=True), [(3, 4)]),
    "norm2": (lambda a: a.norm(), [(2, 3)]),
    "norm1_dim": (lambda a: a.norm(p=1, dim=1), [((2, 3), "distinct")]),
    "norm3": (lambda a: a.norm(p=3, dim=0), [((2, 3), "distinct")]),
    "msort": (lambda a: a.msort(), [((3, 2), "distinct")]),
    # -- matmul on strided views --------------------------------------------------------------
    "matmul_t": (lambda a, b: a.t() @ b, [(4, 3), (4, 2)]),
    "matmul_views": (lambda a, b: a[:, ::2] @ b.transpose(0, 1), [(3, 4), (3, 2)]),
    "matmul_batched_bcast": (lambda a, b: a @ b, [(2, 3, 4), (4, 2)]),
    "matmul_batch_expand": (lambda a, b: a.expand(2, 3, 4) @ b, [(1, 3, 4), (2, 4, 2)]),
    "matmul_vec_mat": (lambda a, b: a @ b, [(4,), (4, 3)]),
    "matmul_mat_vec": (lambda a, b: clgrad.matmul(a, b), [(3, 4), (4,)]),
    # scaling and squaring: entries in [-2, 2] give 1-norms above theta_13 (squarings run)
    "matrix_exp": (lambda a: clgrad.linalg.matrix_exp(a), [(2, 4, 4)]),
    "orgqr": (lambda a, t: clgrad.orgqr(a, t), [(2, 5, 3), (2, 2)]),
    "dot": (lambda a, b: clgrad.dot(a, b), [(5,), (5,)]),
    "mm": (lambda a, b: clgrad.mm(a, b.T), [(2, 3), (4, 3)]),
    "bmm": (lambda a, b: clgrad.bmm(a, b.mT), [(2, 2, 3), (2, 4, 3)]),
    # -- casts --------------------------------------------------------------------------------
    "to_float32_and_back": (lambda a: a.float().double() * 1.5, [(2, 3)]),
    # -- joining, splitting, indexing ---------------------------------------------------------
    "cat_dim1": (lambda a, b: clgrad.cat([a, b], dim=1), [(2, 3), (2, 2)]),
    "cat_three": (lambda a, b: clgrad.cat([a, b, a * 2.0], 0), [(1, 3), (2, 3)]),
    "stack": (lambda a, b: clgrad.stack([a, b], dim=1), [(2, 3), (2, 3)]),
    "split_sizes": (lambda a: a.split([1, 2], dim=1), [(2, 3)]),
    "split_int": (lambda a: clgrad.split(a, 2, 0), [(5, 2)]),
    "chunk": (lambda a: a.chunk(2, dim=-1), [(2, 5)]),
    "unbind": (lambda a: a.unbind(1), [(2, 3)]),
    "index_select": (lambda a: a.index_select(0, IDX), [(3, 2)]),
    "index_select_dim1": (lambda a: clgrad.index_select(a, 1, IDX), [(2, 3)]),
    "gather": (lambda a: a.gather(1, GATHER_IDX), [(2, 3)]),
    "scatter_add": (lambda a, s: a.scatter_add(0, SCATTER_IDX, s), [(2, 3), (2, 3)]),
    "getitem_index_tensor": (lambda a: a[IDX], [(3, 2)]),
    "getitem_bool_mask": (lambda a: a[MASK], [(3, 2)]),
    # -- views --------------------------------------------------------------------------------
    "narrow": (lambda a: a.narrow(1, 1, 2), [(2, 4)]),
    "narrow_negative_start": (lambda a: clgrad.narrow(a, 0, -2, 2), [(3, 2)]),
    "select": (lambda a: a.select(0, 1), [(3, 2)]),
    "select_negative": (lambda a: a.select(-1, -1), [(3, 2)]),
    "getitem_steps": (lambda a: a[::2, 1::2], [(3, 5)]),
    "getitem_negative_steps": (lambda a: a[::-1, ::-2], [(3, 5)]),
    "getitem_int_none_ellipsis": (lambda a: a[1, None, ..., -1], [(3, 2, 4)]),
    "transpose": (lambda a: a.transpose(0, 2), [(2, 3, 2)]),
    "permute": (lambda a: a.permute(2, 0, 1), [(2, 3, 2)]),
    "T": (lambda a: a.T, [(2, 3)]),
    "mT": (lambda a: a.mT, [(2, 3, 2)]),
    "t": (lambda a: clgrad.t(a), [(2, 3)]),
    "swapaxes": (lambda a: a.swapaxes(0, 1), [(2, 3)]),
    "movedim": (lambda a: a.movedim(0, -1), [(2, 3, 2)]),
    "movedim_seq": (lambda a: clgrad.movedim(a, (0, 1), (2, 0)), [(2, 3, 2)]),
    "expand": (lambda a: a.expand(3, 2, 4), [(2, 1)]),
    "expand_as": (lambda a: a.expand_as(clgrad.zeros(2, 3)), [(3,)]),
    "view_contiguous": (lambda a: a.contiguous().view(3, 2), [(2, 3)]),
    "view_of_strided": (lambda a: a.T.view(-1), [(3, 1)]),
    "view_as": (lambda a: a.t()[:, :2].contiguous().view_as(clgrad.zeros(4)), [(2, 2)]),
    "reshape_copy": (lambda a: a.reshape(6), [(2, 3)]),
    "reshape_view": (lambda a: a.reshape(2, 1, 3, 1), [(2, 3)]),
    "reshape_as": (lambda a: a.t().reshape_as(clgrad.zeros(6)), [(2, 3)]),
    "ravel": (lambda a: a.t().ravel(), [(2, 3)]),
    "flatten": (lambda a: a.flatten(), [(2, 3, 2)]),
    "flatten_dims": (lambda a: a.flatten(1, 2), [(2, 3, 2)]),
    "unflatten": (lambda a: a.unflatten(1, (2, 2)), [(3, 4)]),
    "unsqueeze": (lambda a: a.unsqueeze(1), [(2, 3)]),
    "squeeze": (lambda a: a.unsqueeze(0).unsqueeze(-1).squeeze(), [(2, 3)]),
    "squeeze_dim": (lambda a: a.squeeze(1), [(3, 1)]),
    "as_strided_overlap": (lambda a: a.contiguous().as_strided((3, 3), (1, 1), 0), [(5,)]),
    "as_strided_on_strided": (lambda a: a.as_strided((2, 2), (2, 1), a.storage_offset()),
                              [(3, 2)]),
    "unfold": (lambda a: a.unfold(1, 2, 2), [(2, 5)]),
    "unfold_overlap": (lambda a: a.unfold(0, 3, 1), [(5, 2)]),
    "F_unfold": (lambda a: clgrad.nn.functional.unfold(a, (2, 3), (1, 2), 1, (2, 1)),
                 [(2, 2, 4, 5)]),
    "F_fold": (lambda a: clgrad.nn.functional.fold(a, (4, 5), 2, 1, 1, (1, 2)),
               [(2, 8, 15)]),
    "bilinear": (lambda a, b, w, c: clgrad.nn.functional.bilinear(a, b, w, c),
                 [(2, 3), (2, 4), (2, 3, 4), (2,)]),
    "diagonal": (lambda a: a.diagonal(), [(3, 4)]),
    "diagonal_offsets": (lambda a: clgrad.diagonal(a, 1, 0, 1) * a.diagonal(-1)[:2],
                         [(3, 3)]),
    "diagonal_3d": (lambda a: a.diagonal(0, 2, 0), [(3, 2, 3)]),
    "view_chain": (lambda a: a.T[1:, ::-1].unsqueeze(0).expand(2, 3, 2).sum(0), [(2, 4)]),
}

TOLERANCES = {"to_float32_and_back": dict(eps=1e-3, atol=1e-4, rtol=1e-3)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck(name):
    fn, specs = CASES[name]
    inputs = make_inputs(specs, seed=sum(map(ord, name)))
    assert gradcheck(fn, inputs, **TOLERANCES.get(name, {}))


def test_gradcheck_catches_a_wrong_gradient():
    def bad_square(x):
        out = x.detach() * x.detach()
        return clgrad.autograd.record("bad_square", out, (x,), lambda g: (g * x * 3.0,))
    x = make_inputs([(2, 3)], seed=0)[0]
    with pytest.raises(RuntimeError, match=r"gradcheck: input 0 .*analytic .* numerical"):
        gradcheck(bad_square, [x])
    assert gradcheck(bad_square, [x], raise_exception=False) is False


def test_gradcheck_rejects_overlapping_and_float32_inputs():
    x = clgrad.tensor([1.0, 2.0], dtype=f64, requires_grad=True)
    with pytest.raises(ValueError, match="overlapping"):
        gradcheck(lambda v: v * 2, [x[:1].expand(3)])
    with pytest.raises(TypeError, match="float64"):
        gradcheck(lambda v: v * 2, [clgrad.tensor([1.0], requires_grad=True)])


def test_views_as_gradcheck_inputs():
    # Non-leaf views of a leaf as the checked inputs: gradients are taken at their Nodes.
    base = clgrad.tensor(np.arange(12.0).reshape(3, 4) / 7, dtype=f64, requires_grad=True)
    a, b = base[:, :2].t(), base[::-1, 2:]  # disjoint elements of one storage
    assert not a.is_leaf and not b.is_leaf
    assert gradcheck(lambda u, v: (u @ v.exp()), [a, b])
    assert base.grad is None  # gradcheck uses autograd.grad: nothing accumulates
