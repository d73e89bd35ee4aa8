"""nn.TransformerEncoderLayer / nn.TransformerEncoder (issue 22) against PyTorch with the same
weights (dropout off), gradients, masks; copy.deepcopy of modules and tensors."""
import copy

import numpy as np
import pytest

import clgrad

torch = pytest.importorskip("torch")  # the oracle (not in the dev extra)

RNG = np.random.default_rng(0)


def _load(mc, mt):
    assert list(mc.state_dict()) == list(mt.state_dict())
    mc.load_state_dict({k: clgrad.tensor(v.detach().numpy()) for k, v in
                        mt.state_dict().items()})


@pytest.mark.parametrize("norm_first,activation,batch_first",
                         [(False, "relu", False), (True, "gelu", True), (False, "gelu", True)])
def test_encoder_matches_torch(norm_first, activation, batch_first):
    torch.manual_seed(0)
    kw = dict(dim_feedforward=16, dropout=0.1, activation=activation, norm_first=norm_first,
              batch_first=batch_first)
    lt = torch.nn.TransformerEncoderLayer(8, 2, **kw).double()
    et = torch.nn.TransformerEncoder(lt, 2, norm=torch.nn.LayerNorm(8).double(),
                                     enable_nested_tensor=False)
    lc = clgrad.nn.TransformerEncoderLayer(8, 2, dtype=clgrad.float64, **kw)
    ec = clgrad.nn.TransformerEncoder(lc, 2, norm=clgrad.nn.LayerNorm(8, dtype=clgrad.float64))
    _load(ec, et)
    et.eval()
    ec.eval()
    x = RNG.standard_normal((3, 5, 8) if batch_first else (5, 3, 8))  # S = 5, N = 3
    mask = clgrad.nn.Transformer.generate_square_subsequent_mask(5, dtype=clgrad.float64)
    mask_t = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    np.testing.assert_array_equal(mask.numpy(), mask_t.numpy())
    for m_c, m_t in ((None, None), (mask, mask_t)):
        xc = clgrad.tensor(x, requires_grad=True)
        xt = torch.tensor(x, requires_grad=True)
        kc = {"mask": m_c}
        kt = {"mask": m_t}
        if batch_first and m_c is None:
            pm = np.zeros((3, 5), bool)
            pm[1, 3:] = True
            kc["src_key_padding_mask"] = clgrad.tensor(pm)
            kt["src_key_padding_mask"] = torch.tensor(pm)
        oc, ot = ec(xc, **kc), et(xt, **kt)
        np.testing.assert_allclose(oc.detach().numpy(), ot.detach().numpy(), rtol=1e-9,
                                   atol=1e-10)
        r = RNG.standard_normal(tuple(ot.shape))
        (oc * clgrad.tensor(r)).sum().backward()
        (ot * torch.tensor(r)).sum().backward()
        np.testing.assert_allclose(xc.grad.numpy(), xt.grad.numpy(), rtol=1e-8, atol=1e-10)
        for (n, pc), (_, pt) in zip(ec.named_parameters(), et.named_parameters()):
            np.testing.assert_allclose(pc.grad.numpy(), pt.grad.numpy(), rtol=1e-8,
                                       atol=1e-10, err_msg=n)
        ec.zero_grad()
        et.zero_grad()


def test_layers_are_independent_copies_and_training_dropout_runs():
    lc = clgrad.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)
    ec = clgrad.nn.TransformerEncoder(lc, 3)
    ps = [layer.linear1.weight for layer in ec.layers]
    assert len({id(p) for p in ps}) == 3 and len({id(p._storage) for p in ps}) == 3
    np.testing.assert_array_equal(ps[0].detach().numpy(), ps[2].detach().numpy())
    out = ec(clgrad.randn(4, 2, 8))
    out.sum().backward()
    assert tuple(out.shape) == (4, 2, 8) and ps[1].grad is not None
    with pytest.raises(RuntimeError):
        clgrad.nn.TransformerEncoderLayer(8, 2, activation="tanh")


def test_deepcopy_of_tensors_and_modules():
    x = clgrad.arange(6.0).reshape(2, 3).requires_grad_()
    (x * 2).sum().backward()
    y = copy.deepcopy(x)
    assert y is not x and y._storage is not x._storage and y.requires_grad and y.is_leaf
    assert y.tolist() == x.tolist() and y.grad.tolist() == x.grad.tolist()
    y.data.add_(1)
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    base = clgrad.arange(4.0)
    pair = copy.deepcopy([base, base[1:]])
    pair[0].add_(10)
    assert pair[1].tolist() == [11.0, 12.0, 13.0]  # the view still views the copied base
    with pytest.raises(RuntimeError, match="leaves"):
        copy.deepcopy(x * 2)
    m = clgrad.nn.Sequential(clgrad.nn.Linear(3, 2), clgrad.nn.BatchNorm1d(2))
    m2 = copy.deepcopy(m)
    assert isinstance(m2[0].weight, clgrad.nn.Parameter) and m2[0].weight.requires_grad
    inp = clgrad.randn(4, 3)
    np.testing.assert_array_equal(m2(inp).detach().numpy(), m(inp).detach().numpy())
    with clgrad.no_grad():
        m2[0].weight.mul_(0)
    assert (m[0].weight.detach().numpy() != 0).any()
    ref = copy.deepcopy(torch.nn.Linear(3, 2))
    assert isinstance(ref.weight, torch.nn.Parameter)
