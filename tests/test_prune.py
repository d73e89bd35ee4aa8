"""torch.nn.utils.prune: masks, the weight_orig / weight_mask / pre-hook mechanism, iterative
pruning through PruningContainer, global pruning, remove, and training a pruned layer.

Oracles: NumPy float64 (the masks written out: argsort of |w| or of channel norms, the
number pruned = amount or round(amount * n) as PyTorch), hand-built masks, and PyTorch 2.14
where importable (the same weights pruned by both: masks, state_dict keys, checkpoints).
"""
import numpy as np
import pytest

import clgrad
import clgrad.nn as nn
import clgrad.nn.utils.prune as prune


def _torch():
    return pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy().astype(np.float64)


def _conv(seed=0):
    clgrad.manual_seed(seed)
    return nn.Conv2d(3, 6, 3)


def _l1_oracle(w, k, keep=None):
    """Zero the k entries of smallest |w| among ``keep`` (all by default)."""
    flat = np.abs(w).ravel()
    keep = np.ones(flat.shape, bool) if keep is None else keep.ravel().astype(bool)
    idx = np.flatnonzero(keep)
    mask = keep.astype(np.float64)
    mask[idx[np.argsort(flat[idx], kind="stable")[:k]]] = 0
    return mask.reshape(w.shape)


@pytest.mark.parametrize("amount,k", [(5, 5), (0, 0), (0.25, 40), (0.5, 81), (1.0, 162),
                                      (0.3, 49), (162, 162)])
def test_l1_unstructured_mask_and_reparametrization(amount, k):
    m = _conv()
    w0 = _np(m.weight)
    assert k == (amount if isinstance(amount, int) else round(amount * 162))
    prune.l1_unstructured(m, "weight", amount=amount)
    mask = _np(m.weight_mask)
    np.testing.assert_array_equal(mask, _l1_oracle(w0, k))
    assert (mask == 0).sum() == k
    np.testing.assert_array_equal(_np(m.weight), w0 * mask)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    assert [n for n, _ in m.named_buffers()] == ["weight_mask"]
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    assert prune.is_pruned(m) and "weight" not in m._parameters


def test_rounding_is_pythons():
    lin = nn.Linear(5, 2)  # 10 weights: 0.25 -> round(2.5) = 2, 0.35 -> round(3.5) = 4
    prune.l1_unstructured(lin, "weight", amount=0.25)
    assert (_np(lin.weight_mask) == 0).sum() == 2
    lin = nn.Linear(5, 2)
    prune.l1_unstructured(lin, "weight", amount=0.35)
    assert (_np(lin.weight_mask) == 0).sum() == 4


def test_importance_scores_and_ties_prefer_the_lowest_index():
    lin = nn.Linear(4, 2)
    scores = clgrad.tensor([[3., 1., 1., 1.], [2., 0., 0., 5.]])
    prune.l1_unstructured(lin, "weight", amount=3, importance_scores=scores)
    # 0, 0 then one of the three 1s: clgrad takes the first (README: PyTorch's CPU topk
    # picks among equal values by its selection algorithm)
    np.testing.assert_array_equal(_np(lin.weight_mask), [[1, 0, 1, 1], [1, 0, 0, 1]])
    with pytest.raises(ValueError, match="importance_scores should have the same shape"):
        prune.l1_unstructured(nn.Linear(4, 2), "weight", 1, importance_scores=clgrad.ones(3))


def test_nan_importance_counts_as_largest_and_nan_weights_stay_nan():
    lin = nn.Linear(4, 2)
    w = np.array([[0.5, np.nan, -0.1, 0.3], [0.2, -0.7, np.nan, 0.05]], np.float32)
    with clgrad.no_grad():
        lin.weight.copy_(clgrad.tensor(w))
    prune.l1_unstructured(lin, "weight", amount=3)  # the 3 smallest |w|; NaN kept (PyTorch)
    np.testing.assert_array_equal(_np(lin.weight_mask), [[1, 1, 0, 1], [0, 1, 1, 0]])
    out = _np(lin.weight)
    assert np.isnan(out[0, 1]) and np.isnan(out[1, 2])
    assert (out == 0).sum() == 3


def _ln_norms(w, n, dim):
    axes = tuple(a for a in range(w.ndim) if a != dim % w.ndim)
    moved = np.moveaxis(w, dim, 0).reshape(w.shape[dim], -1)
    if n == "nuc":
        return np.array([np.linalg.norm(np.moveaxis(w, dim, 0)[i], "nuc")
                         for i in range(w.shape[dim])])
    if n == "fro":
        n = 2
    if n == np.inf:
        return np.abs(moved).max(1)
    if n == -np.inf:
        return np.abs(moved).min(1)
    return (np.abs(w) ** n).sum(axis=axes) ** (1 / n)


@pytest.mark.parametrize("n,dim,amount", [(2, 0, 0.5), (1, 1, 1), (np.inf, -1, 2),
                                          (-np.inf, 0, 0.34), (3, 2, 1), ("fro", 0, 2)])
def test_ln_structured_mask(n, dim, amount):
    m = _conv(1)
    w0 = _np(m.weight)
    prune.ln_structured(m, "weight", amount=amount, n=n, dim=dim)
    size = w0.shape[dim]
    k = amount if isinstance(amount, int) else round(amount * size)
    pruned = np.argsort(_ln_norms(w0, n, dim), kind="stable")[:k]
    want = np.ones(size)
    want[pruned] = 0
    shape = [1] * 4
    shape[dim] = size
    np.testing.assert_array_equal(_np(m.weight_mask), np.broadcast_to(want.reshape(shape),
                                                                       w0.shape))


def test_ln_structured_nuclear_norm_of_a_3d_weight():
    clgrad.manual_seed(2)
    m = nn.Conv1d(4, 5, 3)
    w0 = _np(m.weight)
    prune.ln_structured(m, "weight", amount=2, n="nuc", dim=0)
    norms = _ln_norms(w0, "nuc", 0)
    want = np.ones(5)
    want[np.argsort(norms)[:2]] = 0
    np.testing.assert_array_equal(_np(m.weight_mask)[:, 0, 0], want)


def test_iterative_pruning_builds_a_container_and_respects_the_old_mask():
    m = _conv(3)
    w0 = _np(m.weight)
    prune.l1_unstructured(m, "weight", amount=20)
    first = _np(m.weight_mask)
    prune.l1_unstructured(m, "weight", amount=10)  # 10 more among the unpruned
    np.testing.assert_array_equal(_np(m.weight_mask), _l1_oracle(w0, 30))
    prune.ln_structured(m, "weight", amount=2, n=1, dim=0)
    hooks = list(m._forward_pre_hooks.values())
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer)
    assert [type(h).__name__ for h in hooks[0]] == ["L1Unstructured", "L1Unstructured",
                                                    "LnStructured"]
    mask = _np(m.weight_mask)
    assert np.all(mask <= first)
    gone = np.flatnonzero(mask.reshape(6, -1).sum(1) == 0)
    norms = np.abs(w0).reshape(6, -1).sum(1)  # L1 of the ORIGINAL weights per channel
    np.testing.assert_array_equal(gone, np.sort(np.argsort(norms, kind="stable")[:2]))
    # structured again: only the 4 channels left are candidates
    prune.ln_structured(m, "weight", amount=1, n=1, dim=0)
    left = np.flatnonzero(_np(m.weight_mask).reshape(6, -1).sum(1) != 0)
    assert len(left) == 3


def test_random_methods_prune_the_right_counts():
    clgrad.manual_seed(4)
    m = _conv()
    prune.random_unstructured(m, "weight", amount=0.3)
    assert (_np(m.weight_mask) == 0).sum() == round(0.3 * 162)
    prune.random_unstructured(m, "weight", amount=10)
    assert (_np(m.weight_mask) == 0).sum() == round(0.3 * 162) + 10
    m = _conv()
    prune.random_structured(m, "weight", amount=2, dim=1)
    chan = _np(m.weight_mask).sum(axis=(0, 2, 3))
    assert sorted(chan.tolist()) == [0, 0, 54] or sorted(chan.tolist()) == [0, 54, 54]
    assert (chan == 0).sum() == 2 and set(chan.tolist()) <= {0.0, 54.0}


def test_identity_custom_from_mask_and_foobar():
    m = nn.Linear(5, 3)
    prune.identity(m, "bias")
    np.testing.assert_array_equal(_np(m.bias_mask), [1, 1, 1])
    prune.custom_from_mask(m, "bias", mask=clgrad.tensor([0, 1, 0]))
    np.testing.assert_array_equal(_np(m.bias_mask), [0, 1, 0])
    np.testing.assert_array_equal(_np(m.bias), [0, _np(m.bias_orig)[1], 0])

    class FooBar(prune.BasePruningMethod):
        PRUNING_TYPE = "unstructured"

        def compute_mask(self, t, default_mask):
            mask = default_mask.clone()
            mask.view(-1)[::2] = 0
            return mask

    m = nn.Linear(5, 3)
    FooBar.apply(m, "weight")
    np.testing.assert_array_equal(_np(m.weight_mask).ravel(), np.arange(15) % 2)
    # pruning_method.prune on a bare tensor
    t = clgrad.tensor([1., -3., 2., 0.5])
    np.testing.assert_array_equal(prune.L1Unstructured(2).prune(t).numpy(), [0, -3, 2, 0])


def test_global_unstructured_chooses_across_tensors():
    clgrad.manual_seed(5)
    net = nn.Sequential(nn.Linear(10, 4), nn.ReLU(), nn.Linear(4, 3))
    ws = [_np(net[0].weight), _np(net[2].weight)]
    prune.l1_unstructured(net[2], "weight", amount=2)  # an existing mask is respected
    old = _np(net[2].weight_mask)
    prune.global_unstructured([(net[0], "weight"), (net[2], "weight")],
                              pruning_method=prune.L1Unstructured, amount=0.2)
    flat = np.concatenate([w.ravel() for w in ws])
    keep = np.concatenate([np.ones(40), old.ravel()])
    k = round(0.2 * 52)
    want = _l1_oracle(flat, k, keep)
    got = np.concatenate([_np(net[0].weight_mask).ravel(), _np(net[2].weight_mask).ravel()])
    np.testing.assert_array_equal(got, want)
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE'):
        prune.global_unstructured([(net[0], "bias")], prune.RandomStructured, amount=1)


def test_remove_makes_pruning_permanent_on_the_same_parameter():
    m = _conv()
    p = m.weight
    prune.l1_unstructured(m, "weight", amount=30)
    masked = _np(m.weight)
    prune.remove(m, "weight")
    assert m.weight is p and isinstance(m.weight, nn.Parameter)
    np.testing.assert_array_equal(_np(m.weight), masked)
    assert list(m.state_dict()) == ["bias", "weight"] and not prune.is_pruned(m)
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        prune.remove(m, "weight")


def test_amount_validation_errors():
    with pytest.raises(TypeError, match="Invalid type for amount"):
        prune.l1_unstructured(nn.Linear(2, 2), "weight", amount="10")
    with pytest.raises(ValueError, match="should either be a float in the range"):
        prune.l1_unstructured(nn.Linear(2, 2), "weight", amount=1.5)
    with pytest.raises(ValueError, match="should either be a float in the range"):
        prune.l1_unstructured(nn.Linear(2, 2), "weight", amount=-1)
    lin = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="amount=5 should be smaller than the number"):
        prune.l1_unstructured(lin, "weight", amount=5)
    assert list(lin.state_dict()) == ["bias", "weight"]  # rolled back (PyTorch's order)
    with pytest.raises(ValueError, match="Structured pruning can only be applied to "
                       "multidimensional"):
        prune.ln_structured(nn.Linear(2, 2), "bias", amount=1, n=2, dim=0)
    with pytest.raises(IndexError, match="Invalid index 2"):
        prune.ln_structured(nn.Linear(2, 2), "weight", amount=1, n=2, dim=2)


def test_training_a_pruned_layer_keeps_pruned_weights_zero():
    clgrad.manual_seed(6)
    net = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2))
    prune.l1_unstructured(net[0], "weight", amount=0.5)
    mask = _np(net[0].weight_mask)
    x = clgrad.tensor(np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6))
    y = clgrad.tensor([0, 0, 1, 1])  # separable: the rows' sums increase
    opt = clgrad.optim.SGD(net.parameters(), lr=0.5)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(net(x), y)
        loss.backward()
        # the gradient of weight_orig is zero where the mask is (d(mask * w)/dw = mask)
        np.testing.assert_array_equal(_np(net[0].weight_orig.grad) * (1 - mask), 0)
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    np.testing.assert_array_equal(_np(net[0].weight) * (1 - mask), 0)


# -- PyTorch 2.14 ----------------------------------------------------------------------------

def _pair(torch, make_t, make_c):
    tm = make_t()
    cm = make_c()
    cm.load_state_dict({k: clgrad.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    return tm, cm


@pytest.mark.parametrize("how", ["l1", "l1_float", "ln2", "ln_inf_dim1", "ln_fro", "ln_nuc",
                                 "iterative", "custom", "identity"])
def test_masks_match_pytorch(how):
    torch = _torch()
    import torch.nn.utils.prune as tprune
    torch.manual_seed(0)
    tm, cm = _pair(torch, lambda: torch.nn.Conv2d(4, 6, 3), lambda: nn.Conv2d(4, 6, 3))
    for p, m in ((tprune, tm), (prune, cm)):
        if how == "l1":
            p.l1_unstructured(m, "weight", amount=37)
        elif how == "l1_float":
            p.l1_unstructured(m, "weight", amount=0.45)
            p.l1_unstructured(m, "bias", amount=0.5)
        elif how == "ln2":
            p.ln_structured(m, "weight", amount=0.5, n=2, dim=0)
        elif how == "ln_inf_dim1":
            p.ln_structured(m, "weight", amount=1, n=float("inf"), dim=1)
        elif how in ("ln_fro", "ln_nuc"):
            try:
                p.ln_structured(m, "weight", amount=2, n=how[3:], dim=-1 if how == "ln_fro"
                                else 0)
            except RuntimeError as e:  # PyTorch 2.11 and 2.13 refuse a 3-dim "fro"/"nuc"
                if p is not tprune or "dim must be a 2-tuple" not in str(e):
                    raise
                pytest.skip(f"PyTorch {torch.__version__}: {e}")
        elif how == "iterative":
            p.l1_unstructured(m, "weight", amount=0.3)
            p.ln_structured(m, "weight", amount=2, n=1, dim=0)
            p.l1_unstructured(m, "weight", amount=10)
        elif how == "custom":
            mask = (np.arange(216).reshape(6, 4, 3, 3) % 3 != 0).astype(np.float32)
            p.custom_from_mask(m, "weight", mask=(torch if p is tprune else clgrad).tensor(mask))
        else:
            p.identity(m, "weight")
    tsd, csd = tm.state_dict(), cm.state_dict()
    assert list(csd) == list(tsd)
    for k in tsd:
        np.testing.assert_array_equal(_np(csd[k]), tsd[k].numpy(), err_msg=k)
    np.testing.assert_array_equal(_np(cm.weight), tm.weight.detach().numpy())


def test_global_pruning_and_checkpoints_match_pytorch():
    torch = _torch()
    import torch.nn.utils.prune as tprune
    torch.manual_seed(1)

    def net(lib):
        return lib.nn.Sequential(lib.nn.Conv2d(2, 4, 3), lib.nn.Flatten(),
                                 lib.nn.Linear(4 * 16, 10))

    tm, cm = _pair(torch, lambda: net(torch), lambda: net(clgrad))
    for p, m in ((tprune, tm), (prune, cm)):
        p.l1_unstructured(m[2], "bias", amount=3)
        p.global_unstructured([(m[0], "weight"), (m[2], "weight"), (m[2], "bias")],
                              pruning_method=p.L1Unstructured, amount=0.3)
    tsd, csd = tm.state_dict(), cm.state_dict()
    assert list(csd) == list(tsd)
    for k in tsd:
        np.testing.assert_array_equal(_np(csd[k]), tsd[k].numpy(), err_msg=k)
    # a pruned PyTorch checkpoint loads into a pruned clgrad model and back
    fresh_c = net(clgrad)
    for mod, name in ((fresh_c[0], "weight"), (fresh_c[2], "weight"), (fresh_c[2], "bias")):
        prune.identity(mod, name)
    fresh_c.load_state_dict({k: clgrad.tensor(v.numpy()) for k, v in tsd.items()})
    x = np.linspace(-1, 1, 2 * 2 * 6 * 6, dtype=np.float32).reshape(2, 2, 6, 6)
    np.testing.assert_allclose(fresh_c(clgrad.tensor(x)).detach().numpy(),
                               tm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    fresh_t = net(torch)
    for mod, name in ((fresh_t[0], "weight"), (fresh_t[2], "weight"), (fresh_t[2], "bias")):
        tprune.identity(mod, name)
    fresh_t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in csd.items()})
    np.testing.assert_allclose(fresh_t(torch.tensor(x)).detach().numpy(),
                               cm(clgrad.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    for p, m in ((tprune, tm), (prune, cm)):
        p.remove(m[0], "weight")
    assert list(cm.state_dict()) == list(tm.state_dict())
