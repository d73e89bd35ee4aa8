"""Real PyTorch programs: the "Pruning Tutorial" and the "Parametrizations Tutorial".

tests/programs/pruning_tutorial.py (LeNet; random_unstructured, l1_unstructured,
ln_structured on top, the state_dict of a pruned model, remove, per-layer and global pruning,
a custom BasePruningMethod) and tests/programs/parametrizations_tutorial.py (Symmetric and
Skew weights, cached(), Skew + Cayley map: an orthogonal weight, right_inverse, a pruning
parametrization, remove_parametrizations) run unchanged under clgrad but for their imports.
Where PyTorch is importable the same functions run in both frameworks from copied weights
and the masks, sparsities and training losses must agree (masks exactly, losses 1e-5
relative). Left out of the parametrizations tutorial: its MatrixExponential examples
(torch.matrix_exp, which clgrad lacks; README "Deliberately different from PyTorch").
"""
import numpy as np
import pytest
from test_programs import PROGRAMS, load_program, rewrite_imports
from test_programs_round4 import _both, _copy

import clgrad

NAMES = ("pruning_tutorial", "parametrizations_tutorial")
LENET = ("conv1", "conv2", "fc1", "fc2", "fc3")


def test_programs_differ_from_pytorch_only_in_imports():
    for name in NAMES:
        source = (PROGRAMS / f"{name}.py").read_text()
        assert "clgrad" not in source, name
        rewrite_imports(source)


# -- Pruning Tutorial ------------------------------------------------------------------------

def test_pruning_tutorial_runs(capsys):
    history, keys, buffers, sparsity, global_sparsity, losses, still_zero, bias_mask = \
        load_program("pruning_tutorial").main()
    out = capsys.readouterr().out
    assert history == ["RandomUnstructured", "LnStructured"]
    assert keys[:4] == ["conv1.weight_orig", "conv1.bias_orig", "conv1.weight_mask",
                        "conv1.bias_mask"] and keys[4:] == [
        f"{n}.{p}" for n in LENET[1:] for p in ("weight", "bias")]
    assert buffers == [f"{n}.weight_mask" for n in LENET]
    # 20% of LeNet's 61470 weights, chosen globally: round(12294.0) zeros
    assert global_sparsity == pytest.approx(20.0, abs=1e-12)
    sizes = [150, 2400, 48000, 10080, 840]
    assert round(sum(s * n / 100 for s, n in zip(sparsity, sizes))) == 12294
    assert "Global sparsity: 20.00%" in out and "Sparsity in fc1.weight: " in out
    assert "<clgrad.nn.utils.prune.RandomUnstructured object at" in out
    assert losses[-1] < losses[0]
    assert still_zero == pytest.approx(sparsity[2] * 480)  # pruned weights stayed zero
    np.testing.assert_array_equal(bias_mask.numpy(), np.arange(10) % 2)


def test_pruning_tutorial_matches_pytorch(capsys):
    torch, tp, cp = _both("pruning_tutorial")
    tm, cm = tp.LeNet(), cp.LeNet()
    _copy(tm, cm)
    res = []
    for p, m in ((tp, tm), (cp, cm)):
        res.append(p.prune_many(m))
    assert res[0] == res[1]
    for n in LENET:
        np.testing.assert_array_equal(getattr(cm, n).weight_mask.numpy(),
                                      getattr(tm, n).weight_mask.numpy(), err_msg=n)
    tm, cm = tp.LeNet(), cp.LeNet()
    _copy(tm, cm)
    x, y = tp.digits()
    res = []
    for p, m, data in ((tp, tm, (x, y)), (cp, cm, (clgrad.tensor(x.numpy()),
                                                   clgrad.tensor(y.numpy())))):
        sparsity, total = p.global_pruning(m)
        res.append([*sparsity, total, *p.train_pruned(m, *data, steps=6)])
    np.testing.assert_allclose(res[1], res[0], rtol=1e-5)
    for n in LENET:
        np.testing.assert_array_equal(getattr(cm, n).weight_mask.numpy(),
                                      getattr(tm, n).weight_mask.numpy(), err_msg=n)
        np.testing.assert_allclose(getattr(cm, n).weight_orig.detach().numpy(),
                                   getattr(tm, n).weight_orig.detach().numpy(), rtol=1e-4,
                                   atol=1e-6, err_msg=n)
    # the iterative pruning of conv1 from the same weights (the random step aside: its
    # mask is copied, clgrad's generator is not PyTorch's)
    tm, cm = tp.LeNet(), cp.LeNet()
    _copy(tm, cm)
    tp.prune.random_unstructured(tm.conv1, name="weight", amount=0.3)
    cp.prune.custom_from_mask(cm.conv1, name="weight",
                              mask=clgrad.tensor(tm.conv1.weight_mask.numpy()))
    for p, m in ((tp, tm), (cp, cm)):
        p.prune.l1_unstructured(m.conv1, name="bias", amount=3)
        p.prune.ln_structured(m.conv1, name="weight", amount=0.5, n=2, dim=0)
    for k in ("weight_mask", "bias_mask"):
        np.testing.assert_array_equal(getattr(cm.conv1, k).numpy(),
                                      getattr(tm.conv1, k).numpy(), err_msg=k)


# -- Parametrizations Tutorial ---------------------------------------------------------------

def test_parametrizations_tutorial_runs(capsys):
    layer, cnn, orth, d1, d2, losses = load_program("parametrizations_tutorial").main()
    out = capsys.readouterr().out
    # once at registration, three times uncached, once inside cached()
    assert out.count("Computing the Parametrization") == 5
    assert "ParametrizedLinear(\n  in_features=3, out_features=3, bias=True\n  " \
           "(parametrizations): ModuleDict(\n    (weight): ParametrizationList(\n" \
           "      (0): Symmetric()\n    )\n  )\n)" in out
    assert "After. Weight has skew-symmetric values but it is unconstrained:\n" \
           "Linear(in_features=3, out_features=3, bias=True)" in out
    W = layer.weight.detach().numpy()
    np.testing.assert_array_equal(W, W.T)
    K = cnn.weight.detach().numpy()
    np.testing.assert_array_equal(K, -np.swapaxes(K, -1, -2))
    assert d1 == 0.0 and np.isfinite(d2)  # (the tutorial's Cayley inverse has its sign
    Q = orth.weight.detach().numpy()      # flipped: d2 > 0 in PyTorch too)
    np.testing.assert_allclose(Q.T @ Q, np.eye(3), atol=1e-5)
    assert losses[-1] < losses[0]


def test_parametrizations_tutorial_matches_pytorch(capsys):
    torch, tp, cp = _both("parametrizations_tutorial")
    res = []
    for p in (tp, cp):
        p.torch.manual_seed(0)
    tl = torch.nn.Linear(3, 3)
    cl = clgrad.nn.Linear(3, 3)
    _copy(tl, cl)
    X = np.array([[0.3, -0.5, 0.2], [0.1, 0.4, -0.3], [-0.6, 0.2, 0.5]], np.float32)
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(8, 3)
    for p, layer in ((tp, tl), (cp, cl)):
        P = p.parametrize
        P.register_parametrization(layer, "weight", p.Skew())
        P.register_parametrization(layer, "weight", p.CayleyMap(3))
        r = [layer.weight.detach().numpy().copy()]
        layer.weight = p.torch.tensor(X) - p.torch.tensor(X).T  # right_inverse of both
        r.append(layer.weight.detach().numpy().copy())
        xx = p.torch.tensor(x)
        r.append(np.array(p.train_orthogonal(layer, xx, xx.flip(-1), steps=5)))
        r.append(layer.parametrizations.weight.original.detach().numpy().copy())
        P.remove_parametrizations(layer, "weight")
        r.append(layer.weight.detach().numpy().copy())
        res.append(r)
    for a, b in zip(res[1], res[0]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # the pruning parametrization with its mask copied, and leave_parametrized=False
    tl, cl = torch.nn.Linear(3, 4), clgrad.nn.Linear(3, 4)
    _copy(tl, cl)
    tpp = tp.PruningParametrization(tl.weight)
    cpp = cp.PruningParametrization(cl.weight)
    cpp.mask = clgrad.tensor(tpp.mask.numpy())
    out = []
    for p, layer, pp in ((tp, tl, tpp), (cp, cl, cpp)):
        p.parametrize.register_parametrization(layer, "weight", pp)
        layer.weight = p.torch.tensor(np.arange(12, dtype=np.float32).reshape(4, 3))
        out.append(layer.weight.detach().numpy().copy())
        p.parametrize.remove_parametrizations(layer, "weight", leave_parametrized=False)
        out.append(layer.weight.detach().numpy().copy())
    np.testing.assert_array_equal(out[2], out[0])
    np.testing.assert_array_equal(out[3], out[1])
