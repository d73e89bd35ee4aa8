"""F.scaled_dot_product_attention and nn.MultiheadAttention (issue 22) against PyTorch:
outputs, attention weights and gradients, masks, batch_first, unbatched, state_dict keys."""
import warnings

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck

torch = pytest.importorskip("torch")  # the oracle (not in the dev extra)

RNG = np.random.default_rng(0)


def _close(c, t, **kw):
    np.testing.assert_allclose(c.detach().numpy(), t.detach().numpy(), **kw)


@pytest.mark.parametrize("mask", [None, "bool", "float", "causal"])
def test_sdpa_matches_torch_with_grads(mask):
    q, k, v = (RNG.standard_normal(s) for s in ((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)))
    kw_c, kw_t = {}, {}
    if mask == "bool":
        m = RNG.random((4, 5)) < 0.7
        m[:, 0] = True
        kw_c["attn_mask"], kw_t["attn_mask"] = clgrad.tensor(m), torch.tensor(m)
    elif mask == "float":
        m = RNG.standard_normal((3, 4, 5))
        kw_c["attn_mask"], kw_t["attn_mask"] = clgrad.tensor(m), torch.tensor(m)
    elif mask == "causal":
        kw_c["is_causal"] = kw_t["is_causal"] = True
    cs = [clgrad.tensor(a, requires_grad=True) for a in (q, k, v)]
    ts = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    oc = F.scaled_dot_product_attention(*cs, **kw_c)
    ot = torch.nn.functional.scaled_dot_product_attention(*ts, **kw_t)
    _close(oc, ot, rtol=1e-12, atol=1e-12)
    r = RNG.standard_normal(tuple(ot.shape))
    (oc * clgrad.tensor(r)).sum().backward()
    (ot * torch.tensor(r)).sum().backward()
    for c, t in zip(cs, ts):
        _close(c.grad, t.grad, rtol=1e-10, atol=1e-12)
    small = [clgrad.tensor(RNG.standard_normal((1, 3, 2)), requires_grad=True)
             for _ in range(3)]
    assert gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, scale=0.7), small)


def _pair_mha(E=8, H=2, batch_first=False, bias=True):
    torch.manual_seed(0)
    mt = torch.nn.MultiheadAttention(E, H, batch_first=batch_first, bias=bias).double()
    mc = clgrad.nn.MultiheadAttention(E, H, batch_first=batch_first, bias=bias,
                                      dtype=clgrad.float64)
    assert list(mc.state_dict()) == list(mt.state_dict())
    mc.load_state_dict({k: clgrad.tensor(v.numpy()) for k, v in mt.state_dict().items()})
    return mc, mt


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("masks", ["none", "padding", "bool", "float", "causal"])
def test_multihead_attention_matches_torch(batch_first, masks):
    mc, mt = _pair_mha(batch_first=batch_first)
    L, S, N, E = 4, 5, 3, 8
    shp = (lambda a, b: (b, a, E)) if batch_first else (lambda a, b: (a, b, E))
    q, k, v = RNG.standard_normal(shp(L, N)), RNG.standard_normal(shp(S, N)), \
        RNG.standard_normal(shp(S, N))
    kc, kt = {}, {}
    if masks == "padding":
        pm = np.zeros((N, S), bool)
        pm[0, 3:] = True
        pm[2, 0] = True
        kc["key_padding_mask"], kt["key_padding_mask"] = clgrad.tensor(pm), torch.tensor(pm)
    elif masks == "bool":
        am = RNG.random((L, S)) < 0.3
        am[:, 1] = False
        kc["attn_mask"], kt["attn_mask"] = clgrad.tensor(am), torch.tensor(am)
    elif masks == "float":
        am = RNG.standard_normal((N * 2, L, S))
        kc["attn_mask"], kt["attn_mask"] = clgrad.tensor(am), torch.tensor(am)
    elif masks == "causal":
        am = np.triu(np.ones((L, S), bool), 1)
        kc["attn_mask"], kt["attn_mask"] = clgrad.tensor(am), torch.tensor(am)
    for avg in (True, False):
        cs = [clgrad.tensor(a, requires_grad=True) for a in (q, k, v)]
        ts = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
        oc, wc = mc(*cs, average_attn_weights=avg, **kc)
        ot, wt = mt(*ts, average_attn_weights=avg, **kt)
        _close(oc, ot, rtol=1e-10, atol=1e-12)
        _close(wc, wt, rtol=1e-10, atol=1e-12)
        r = RNG.standard_normal(tuple(ot.shape))
        (oc * clgrad.tensor(r)).sum().backward()
        (ot * torch.tensor(r)).sum().backward()
        for c, t in zip(cs, ts):
            _close(c.grad, t.grad, rtol=1e-9, atol=1e-12)
        for (n, pc), (_, pt) in zip(mc.named_parameters(), mt.named_parameters()):
            _close(pc.grad, pt.grad, rtol=1e-9, atol=1e-12)
        mc.zero_grad()
        mt.zero_grad()


def test_multihead_attention_mismatched_mask_types_warn():
    """PyTorch's _canonical_mask: a bool key_padding_mask with a float attn_mask (the
    "Language Translation with nn.Transformer" tutorial's decoder) warns, and both still
    apply (a float -inf masks as True does)."""
    mc, mt = _pair_mha(bias=False)
    x = RNG.standard_normal((3, 2, 8))
    causal = np.triu(np.full((3, 3), -np.inf), 1)
    pad = np.array([[False, False, True], [False, False, False]])
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and "
                      "attn_mask is deprecated. Use same type for both instead."):
        oc, wc = mc(*(clgrad.tensor(x),) * 3, key_padding_mask=clgrad.tensor(pad),
                    attn_mask=clgrad.tensor(causal))
    with pytest.warns(UserWarning, match="Support for mismatched"):
        ot, wt = mt(*(torch.tensor(x),) * 3, key_padding_mask=torch.tensor(pad),
                    attn_mask=torch.tensor(causal))
    _close(oc, ot, rtol=1e-10, atol=1e-12)
    _close(wc, wt, rtol=1e-10, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # the same dtype: no warning
        mc(*(clgrad.tensor(x),) * 3, key_padding_mask=clgrad.tensor(pad),
           attn_mask=clgrad.tensor(causal == -np.inf))


def test_multihead_attention_unbatched_self_attention_and_errors():
    mc, mt = _pair_mha(bias=False)
    x = RNG.standard_normal((4, 8))
    oc, wc = mc(*(clgrad.tensor(x),) * 3)
    ot, wt = mt(*(torch.tensor(x),) * 3)
    _close(oc, ot, rtol=1e-10, atol=1e-12)
    _close(wc, wt, rtol=1e-10, atol=1e-12)
    assert mc(*(clgrad.tensor(x),) * 3, need_weights=False)[1] is None
    with pytest.raises(ValueError):
        clgrad.nn.MultiheadAttention(10, 3)
    with pytest.raises(NotImplementedError):
        clgrad.nn.MultiheadAttention(8, 2, kdim=4)
