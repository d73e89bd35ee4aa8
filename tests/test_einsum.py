"""einsum against NumPy's einsum (forward, float64) and float64 finite differences (backward).
"""
import numpy as np
import pytest

import clgrad

# (equation, operand shapes): the contractions CNN and attention code uses, and the edge forms.
CASES = {
    "matmul": ("ij,jk->ik", [(3, 4), (4, 5)]),
    "bmm": ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    "channel_mix": ("bchw,bkc->bkhw", [(2, 3, 2, 3), (2, 4, 3)]),
    "diagonal": ("ii->i", [(4, 4)]),
    "transpose": ("ij->ji", [(3, 4)]),
    "dot": ("i,i->", [(5,), (5,)]),
    "outer": ("i,j->ij", [(3,), (4,)]),
    "batched_ellipsis_broadcast": ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    "trace_implicit": ("ii", [(3, 3)]),
    "hadamard": ("ij,ij->ij", [(3, 4), (3, 4)]),
    "sum_all": ("ijk->", [(2, 3, 4)]),
    "diagonal_then_sum": ("iij->j", [(3, 3, 2)]),
    "chain": ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    "implicit_output": ("ij,jk", [(2, 3), (3, 4)]),
    "attention_scores": ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    "three_way_product": ("i,i,i->i", [(4,), (4,), (4,)]),
    "size_one_broadcast": ("ab,cd->abcd", [(2, 3), (1, 2)]),
    "ellipsis_sum": ("...i->...", [(2, 3, 4)]),
    "matvec": ("ij,j->i", [(3, 4), (4,)]),
    "bilinear": ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    "spaces_upper": (" iJ , Jk -> ki ", [(2, 3), (3, 4)]),
    "later_operand_broadcasts_label": ("ij,jk,i->k", [(1, 3), (3, 4), (5,)]),
    "contracted_size_one": ("ij,jk->ik", [(2, 1), (3, 4)]),
}
GRAD_CASES = ["matmul", "channel_mix", "diagonal", "batched_ellipsis_broadcast",
              "diagonal_then_sum", "chain", "bilinear", "outer"]


def _operands(shapes, seed=0, requires_grad=False):
    rng = np.random.default_rng(seed)
    arrs = [rng.standard_normal(s) for s in shapes]
    # strided views: each operand is every other element of a wider tensor along its last dim
    ts = []
    for a in arrs:
        wide = np.repeat(a, 2, axis=-1) if a.ndim else a
        t = clgrad.tensor(wide)[..., ::2] if a.ndim else clgrad.tensor(a)
        ts.append(t)
    if requires_grad:
        ts = [clgrad.tensor(a, requires_grad=True) for a in arrs]
    return arrs, ts


@pytest.mark.parametrize("name", CASES)
def test_einsum_forward_against_numpy(name):
    eq, shapes = CASES[name]
    arrs, ts = _operands(shapes)
    ref = np.einsum(eq.replace(" ", ""), *arrs)
    out = clgrad.einsum(eq, *ts)
    assert out.shape == ref.shape
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", GRAD_CASES)
def test_einsum_gradcheck(name):
    eq, shapes = CASES[name]
    _, ts = _operands(shapes, seed=1, requires_grad=True)
    assert clgrad.autograd.gradcheck(lambda *t: clgrad.einsum(eq, *t), ts)


def test_operand_list_and_sublist_forms():
    arrs, (a, b) = _operands([(3, 4), (4, 2)])
    ref = arrs[0] @ arrs[1]
    np.testing.assert_allclose(clgrad.einsum("ij,jk->ik", [a, b]).numpy(), ref)
    np.testing.assert_allclose(clgrad.einsum(a, [0, 1], b, [1, 2], [0, 2]).numpy(), ref)
    np.testing.assert_allclose(clgrad.einsum(a, [Ellipsis, 1], b, [1, 2]).numpy(), ref)


def test_float32_matches_float64_reference():
    arrs, _ = _operands([(2, 3, 4, 5), (2, 6, 3)])
    a, b = (clgrad.tensor(x, dtype=clgrad.float32) for x in arrs)
    np.testing.assert_allclose(clgrad.einsum("bchw,bkc->bkhw", a, b).numpy(),
                               np.einsum("bchw,bkc->bkhw", *arrs), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("eq,shapes,exc,match", [
    ("ij,jk->ik", [(2, 3)], ValueError, r"2 operand subscripts, got 1 operands"),
    ("ij->i", [(2, 3, 4)], ValueError, r"operand 0 has 3 dims but the subscript 'ij' labels 2"),
    ("i1->i", [(2, 2)], ValueError, r"expected subscripts of letters"),
    ("ij->ii", [(2, 2)], ValueError, r"output label 'i' appears more than once"),
    ("ij->k", [(2, 2)], ValueError, r"output label 'k' does not appear"),
    ("......i->i", [(2,)], ValueError, r"at most one '\.\.\.'"),
    ("ij,jk->ik", [(2, 3), (4, 5)], RuntimeError, r"label 'j' has sizes 3 and 4"),
    ("ii->i", [(2, 3)], RuntimeError, r"label 'i' has sizes 2 and 3"),
    ("ii->i", [(1, 3)], RuntimeError, r"sizes don't match, 1 != 3"),
    ("ij->i->j", [(2, 3)], ValueError, r"at most one '->'"),
])
def test_einsum_errors(eq, shapes, exc, match):
    _, ts = _operands(shapes)
    with pytest.raises(exc, match=match):
        clgrad.einsum(eq, *ts)


@pytest.mark.parametrize("name", ["channel_mix", "batched_ellipsis_broadcast", "bilinear",
                                  "diagonal_then_sum"])
def test_einsum_against_pytorch(name):
    torch = pytest.importorskip("torch")
    eq, shapes = CASES[name]
    arrs, _ = _operands(shapes, seed=2)
    tt = [torch.tensor(a, requires_grad=True) for a in arrs]
    ct = [clgrad.tensor(a, requires_grad=True) for a in arrs]
    w = np.random.default_rng(3).standard_normal(tuple(torch.einsum(eq, *tt).shape))
    (torch.einsum(eq, *tt) * torch.tensor(w)).sum().backward()
    (clgrad.einsum(eq, *ct) * clgrad.tensor(w)).sum().backward()
    for a, b in zip(ct, tt):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)
