"""nn.TransformerDecoderLayer, nn.TransformerDecoder and nn.Transformer: a NumPy float64 oracle
of the layers (Vaswani et al. 2017 as PyTorch's modules compose them), PyTorch's state_dict
keys and shapes, causal and key-padding masks (perturbing what a position must not see leaves
it unchanged), gradients (gradcheck), errors; against PyTorch with its checkpoints loaded (eval
mode, dropout off) where it is importable."""
import math

import numpy as np
import pytest

import clgrad
from clgrad import nn

RNG = np.random.default_rng(3)
F64 = clgrad.float64
_erf = np.vectorize(math.erf)


# -- the NumPy oracle ---------------------------------------------------------------------------
def np_ln(x, sd, key, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    y = (x - mu) / np.sqrt(x.var(-1, keepdims=True) + eps) * sd[key + ".weight"]
    return y + sd[key + ".bias"] if key + ".bias" in sd else y


def np_mha(q, k, v, sd, key, nhead, mask=None, kpm=None):
    """(L, N, E) queries over (S, N, E) keys and values; float mask added, bool True masked."""
    E = q.shape[-1]
    W, b = sd[key + ".in_proj_weight"], sd.get(key + ".in_proj_bias", np.zeros(3 * E))
    Q, K, V = (t @ W[i * E:(i + 1) * E].T + b[i * E:(i + 1) * E]
               for i, t in enumerate((q, k, v)))
    L, N, _ = Q.shape
    D = E // nhead
    Q, K, V = (t.reshape(t.shape[0], N, nhead, D).transpose(1, 2, 0, 3) for t in (Q, K, V))
    sc = Q @ K.transpose(0, 1, 3, 2) / math.sqrt(D)  # (N, H, L, S)
    if mask is not None:
        sc = np.where(mask, -np.inf, sc) if mask.dtype == bool else sc + mask
    if kpm is not None:
        sc = np.where(kpm[:, None, None, :], -np.inf, sc)
    a = np.exp(sc - sc.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    o = (a @ V).transpose(2, 0, 1, 3).reshape(L, N, E)
    return o @ sd[key + ".out_proj.weight"].T + sd.get(key + ".out_proj.bias", 0.0)


def np_ff(x, sd, key, act):
    h = x @ sd[key + "linear1.weight"].T + sd.get(key + "linear1.bias", 0.0)
    h = np.maximum(h, 0) if act == "relu" else 0.5 * h * (1 + _erf(h / math.sqrt(2)))
    return h @ sd[key + "linear2.weight"].T + sd.get(key + "linear2.bias", 0.0)


def np_decoder_layer(x, mem, sd, key, nhead, norm_first, act="relu", tgt_mask=None,
                     memory_mask=None, tgt_kpm=None, mem_kpm=None):
    def sa(y):
        return np_mha(y, y, y, sd, key + "self_attn", nhead, tgt_mask, tgt_kpm)

    def ca(y):
        return np_mha(y, mem, mem, sd, key + "multihead_attn", nhead, memory_mask, mem_kpm)

    def ln(y, i):
        return np_ln(y, sd, f"{key}norm{i}")
    if norm_first:
        x = x + sa(ln(x, 1))
        x = x + ca(ln(x, 2))
        return x + np_ff(ln(x, 3), sd, key, act)
    x = ln(x + sa(x), 1)
    x = ln(x + ca(x), 2)
    return ln(x + np_ff(x, sd, key, act), 3)


def np_encoder_layer(x, sd, key, nhead, norm_first, act="relu", mask=None, kpm=None):
    def sa(y):
        return np_mha(y, y, y, sd, key + "self_attn", nhead, mask, kpm)
    if norm_first:
        x = x + sa(np_ln(x, sd, key + "norm1"))
        return x + np_ff(np_ln(x, sd, key + "norm2"), sd, key, act)
    x = np_ln(x + sa(x), sd, key + "norm1")
    return np_ln(x + np_ff(x, sd, key, act), sd, key + "norm2")


def _sd(m):
    return {k: v.detach().numpy() for k, v in m.state_dict().items()}


def _randomise(m):
    """Random values in every parameter (LayerNorm's 1 and 0 too), so each one matters."""
    with clgrad.no_grad():
        for p in m.parameters():
            p.copy_(clgrad.tensor(RNG.uniform(-0.5, 0.5, tuple(p.shape)), dtype=p.dtype))
    return m


def _layer_keys(prefix, cross=True, bias=True):
    attn = ["self_attn"] + (["multihead_attn"] if cross else [])
    keys = []
    for a in attn:
        keys += [f"{a}.in_proj_weight"] + [f"{a}.in_proj_bias"] * bias
        keys += [f"{a}.out_proj.weight"] + [f"{a}.out_proj.bias"] * bias
    for name in ("linear1", "linear2"):
        keys += [f"{name}.weight"] + [f"{name}.bias"] * bias
    for i in range(1, 4 if cross else 3):
        keys += [f"norm{i}.weight"] + [f"norm{i}.bias"] * bias
    return [prefix + k for k in keys]


# -- without PyTorch ----------------------------------------------------------------------------
@pytest.mark.parametrize("norm_first,act", [(False, "relu"), (True, "gelu")])
def test_decoder_layer_matches_numpy(norm_first, act):
    m = _randomise(nn.TransformerDecoderLayer(8, 2, 12, dropout=0.3, activation=act,
                                              norm_first=norm_first, dtype=F64)).eval()
    sd = _sd(m)
    tgt, mem = RNG.standard_normal((5, 3, 8)), RNG.standard_normal((4, 3, 8))
    tmask = np.triu(np.full((5, 5), -np.inf), 1)
    mmask = RNG.uniform(-1, 0, (5, 4))
    kpm = np.zeros((3, 4), bool)
    kpm[1, 2:] = True
    got = m(clgrad.tensor(tgt), clgrad.tensor(mem), tgt_mask=clgrad.tensor(tmask),
            memory_mask=clgrad.tensor(mmask), memory_key_padding_mask=clgrad.tensor(kpm))
    want = np_decoder_layer(tgt, mem, sd, "", 2, norm_first, act, tmask, mmask, None, kpm)
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-10, atol=1e-10)


def test_transformer_matches_numpy():
    m = _randomise(nn.Transformer(8, 2, 2, 3, 12, dropout=0.2, dtype=F64)).eval()
    sd = _sd(m)
    src, tgt = RNG.standard_normal((6, 2, 8)), RNG.standard_normal((4, 2, 8))
    tmask = nn.Transformer.generate_square_subsequent_mask(4, dtype=F64)
    skpm = np.zeros((2, 6), bool)
    skpm[0, 4:] = True
    got = m(clgrad.tensor(src), clgrad.tensor(tgt), tgt_mask=tmask,
            src_key_padding_mask=clgrad.tensor(skpm),
            memory_key_padding_mask=clgrad.tensor(skpm))
    x = src
    for i in range(2):
        x = np_encoder_layer(x, sd, f"encoder.layers.{i}.", 2, False, kpm=skpm)
    mem = np_ln(x, sd, "encoder.norm")
    y = tgt
    for i in range(3):
        y = np_decoder_layer(y, mem, sd, f"decoder.layers.{i}.", 2, False,
                             tgt_mask=tmask.numpy(), mem_kpm=skpm)
    np.testing.assert_allclose(got.detach().numpy(), np_ln(y, sd, "decoder.norm"), rtol=1e-10,
                               atol=1e-10)


def test_state_dict_keys_and_shapes_are_pytorchs():
    layer = nn.TransformerDecoderLayer(8, 2, 12)
    assert list(layer.state_dict()) == _layer_keys("")
    shapes = {k: tuple(v.shape) for k, v in layer.state_dict().items()}
    assert shapes["self_attn.in_proj_weight"] == (24, 8)
    assert shapes["multihead_attn.out_proj.weight"] == (8, 8)
    assert shapes["linear1.weight"] == (12, 8) and shapes["linear2.weight"] == (8, 12)
    assert shapes["norm3.bias"] == (8,)
    assert list(nn.TransformerDecoderLayer(8, 2, 12, bias=False).state_dict()) == \
        _layer_keys("", bias=False)
    dec = nn.TransformerDecoder(layer, 2, norm=nn.LayerNorm(8))
    assert list(dec.state_dict()) == (_layer_keys("layers.0.") + _layer_keys("layers.1.") +
                                      ["norm.weight", "norm.bias"])
    t = nn.Transformer(8, 2, 2, 1, 12)
    want = (_layer_keys("encoder.layers.0.", cross=False) +
            _layer_keys("encoder.layers.1.", cross=False) +
            ["encoder.norm.weight", "encoder.norm.bias"] + _layer_keys("decoder.layers.0.") +
            ["decoder.norm.weight", "decoder.norm.bias"])
    assert list(t.state_dict()) == want
    assert list(nn.Transformer(8, 2, 1, 1, 12, bias=False).state_dict()) == (
        _layer_keys("encoder.layers.0.", cross=False, bias=False) + ["encoder.norm.weight"] +
        _layer_keys("decoder.layers.0.", bias=False) + ["decoder.norm.weight"])
    # xavier_uniform_ on every parameter of more than one dim; the biases as the layers set them
    for k, v in t.state_dict().items():
        if v.ndim > 1:
            bound = math.sqrt(6 / sum(v.shape[:2]))
            assert np.abs(v.numpy()).max() <= bound, k
        if k.endswith("in_proj_bias") or k.endswith("out_proj.bias"):
            assert not v.numpy().any(), k
    # the copies are independent parameters with equal values
    p0, p1 = dec.layers[0].linear1.weight, dec.layers[1].linear1.weight
    assert p0 is not p1 and p0._storage is not p1._storage
    np.testing.assert_array_equal(p0.detach().numpy(), p1.detach().numpy())


@pytest.mark.parametrize("batch_first", [False, True])
def test_shapes_batch_first_and_unbatched(batch_first):
    m = nn.Transformer(8, 2, 1, 2, 16, dropout=0.0, batch_first=batch_first).eval()
    src = clgrad.randn(3, 6, 8) if batch_first else clgrad.randn(6, 3, 8)
    tgt = clgrad.randn(3, 4, 8) if batch_first else clgrad.randn(4, 3, 8)
    out = m(src, tgt)
    assert tuple(out.shape) == tuple(tgt.shape)
    un = m(src[0] if batch_first else src[:, 0], tgt[0] if batch_first else tgt[:, 0])
    assert tuple(un.shape) == (4, 8)
    np.testing.assert_allclose(un.detach().numpy(),
                               (out[0] if batch_first else out[:, 0]).detach().numpy(),
                               rtol=1e-5, atol=1e-5)
    layer = nn.TransformerDecoderLayer(8, 2, 16, batch_first=batch_first)
    mem = m.encoder(src)
    assert tuple(layer(tgt, mem).shape) == tuple(tgt.shape)


@pytest.mark.parametrize("how", ["float_mask", "bool_mask", "is_causal"])
def test_a_causal_mask_hides_later_positions(how):
    """Output t depends on tgt[:t + 1] only: perturbing later tgt positions leaves it."""
    m = nn.Transformer(8, 2, 1, 2, 16, dropout=0.0, dtype=F64).eval()
    src, tgt = RNG.standard_normal((5, 2, 8)), RNG.standard_normal((6, 2, 8))
    kw = {"float_mask": {"tgt_mask": nn.Transformer.generate_square_subsequent_mask(6,
                                                                                   dtype=F64)},
          "bool_mask": {"tgt_mask": clgrad.tensor(np.triu(np.ones((6, 6), bool), 1))},
          "is_causal": {"tgt_is_causal": True}}[how]
    base = m(clgrad.tensor(src), clgrad.tensor(tgt), **kw).detach().numpy()
    for t in range(5):
        moved = tgt.copy()
        moved[t + 1:] += RNG.standard_normal(moved[t + 1:].shape)
        out = m(clgrad.tensor(src), clgrad.tensor(moved), **kw).detach().numpy()
        np.testing.assert_allclose(out[:t + 1], base[:t + 1], rtol=1e-12, atol=1e-12)
        assert np.abs(out[t + 1:] - base[t + 1:]).max() > 1e-6
    # without the mask, later positions do reach earlier ones
    free = m(clgrad.tensor(src), clgrad.tensor(moved)).detach().numpy()
    plain = m(clgrad.tensor(src), clgrad.tensor(tgt)).detach().numpy()
    assert np.abs(free[0] - plain[0]).max() > 1e-6


def test_key_padding_masks_hide_padded_positions():
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, dtype=F64), 2)
    dec.eval()
    tgt, mem = RNG.standard_normal((5, 2, 8)), RNG.standard_normal((4, 2, 8))
    tkpm, mkpm = np.zeros((2, 5), bool), np.zeros((2, 4), bool)
    tkpm[0, 3:] = True
    mkpm[1, 1:] = True
    kw = dict(tgt_key_padding_mask=clgrad.tensor(tkpm),
              memory_key_padding_mask=clgrad.tensor(mkpm))
    base = dec(clgrad.tensor(tgt), clgrad.tensor(mem), **kw).detach().numpy()
    tgt2, mem2 = tgt.copy(), mem.copy()
    tgt2[3:, 0] += 5.0  # padded tgt keys of sample 0
    mem2[1:, 1] -= 5.0  # padded memory keys of sample 1
    out = dec(clgrad.tensor(tgt2), clgrad.tensor(mem2), **kw).detach().numpy()
    np.testing.assert_allclose(out[:3, 0], base[:3, 0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out[:, 1], base[:, 1], rtol=1e-12, atol=1e-12)


def test_gradcheck_of_a_decoder_layer():
    for norm_first in (False, True):
        m = _randomise(nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0, norm_first=norm_first,
                                                  dtype=F64))
        tgt = clgrad.tensor(RNG.standard_normal((3, 2, 4)), requires_grad=True)
        mem = clgrad.tensor(RNG.standard_normal((2, 2, 4)), requires_grad=True)
        mask = nn.Transformer.generate_square_subsequent_mask(3, dtype=F64)
        assert clgrad.autograd.gradcheck(lambda a, b: m(a, b, tgt_mask=mask), [tgt, mem])


def test_training_mode_dropout_and_backward_reach_every_parameter():
    m = nn.Transformer(8, 2, 1, 1, 16, dropout=0.5)
    out = m(clgrad.randn(5, 2, 8), clgrad.randn(3, 2, 8))
    out.sum().backward()
    missing = [n for n, p in m.named_parameters() if p.grad is None]
    assert missing == []


def test_custom_encoder_decoder_and_errors():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 1)
    m = nn.Transformer(8, 2, custom_encoder=enc, num_decoder_layers=1, dim_feedforward=16)
    assert m.encoder is enc and len(m.decoder.layers) == 1
    assert tuple(m(clgrad.randn(4, 2, 8), clgrad.randn(3, 2, 8)).shape) == (3, 2, 8)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        m(clgrad.randn(4, 2, 8), clgrad.randn(3, 3, 8))
    with pytest.raises(RuntimeError, match="must be equal to d_model"):
        m(clgrad.randn(4, 2, 6), clgrad.randn(3, 2, 6))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerDecoderLayer(8, 2, activation="tanh")
    with pytest.raises(ValueError, match="divisible by num_heads"):
        nn.TransformerDecoderLayer(8, 3)
    layer = nn.TransformerDecoderLayer(8, 2, 16, activation=clgrad.tanh)
    assert layer.activation is clgrad.tanh
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    assert mask.tolist() == [[0.0, -np.inf, -np.inf], [0.0, 0.0, -np.inf], [0.0, 0.0, 0.0]]


# -- against PyTorch (its checkpoints load; eval mode, dropout off) --------------------------------
def _load(mc, mt):
    assert list(mc.state_dict()) == list(mt.state_dict())
    for (k, vc), vt in zip(mc.state_dict().items(), mt.state_dict().values()):
        assert tuple(vc.shape) == tuple(vt.shape), k
    res = mc.load_state_dict({k: clgrad.tensor(v.detach().numpy())
                              for k, v in mt.state_dict().items()})
    assert list(res.missing_keys) == [] and list(res.unexpected_keys) == []


def _compare(torch, mc, mt, args_c, args_t, kw_c, kw_t):
    oc, ot = mc(*args_c, **kw_c), mt(*args_t, **kw_t)
    np.testing.assert_allclose(oc.detach().numpy(), ot.detach().numpy(), rtol=1e-9, atol=1e-10)
    r = RNG.standard_normal(tuple(ot.shape))
    (oc * clgrad.tensor(r)).sum().backward()
    (ot * torch.tensor(r)).sum().backward()
    for a, b in zip(args_c, args_t):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-8, atol=1e-10)
    for (n, pc), (_, pt) in zip(mc.named_parameters(), mt.named_parameters()):
        np.testing.assert_allclose(pc.grad.numpy(), pt.grad.numpy(), rtol=1e-8, atol=1e-10,
                                   err_msg=n)


CONFIGS = [dict(norm_first=False, activation="relu", batch_first=False, bias=True),
           dict(norm_first=True, activation="gelu", batch_first=True, bias=True),
           dict(norm_first=False, activation="gelu", batch_first=True, bias=False)]


@pytest.mark.parametrize("cfg", CONFIGS, ids=["post_relu", "pre_gelu_bf", "nobias_bf"])
def test_decoder_matches_torch(cfg):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    lt = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.1, **cfg).double()
    dt = torch.nn.TransformerDecoder(lt, 2, norm=torch.nn.LayerNorm(8).double()).eval()
    lc = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.1, dtype=F64, **cfg)
    dc = nn.TransformerDecoder(lc, 2, norm=nn.LayerNorm(8, dtype=F64)).eval()
    _load(dc, dt)
    bf = cfg["batch_first"]
    tgt = RNG.standard_normal((3, 5, 8) if bf else (5, 3, 8))
    mem = RNG.standard_normal((3, 4, 8) if bf else (4, 3, 8))
    tkpm = np.zeros((3, 5), bool)
    tkpm[2, 4:] = True
    mkpm = np.zeros((3, 4), bool)
    mkpm[0, 3:] = True
    masks = [({}, {}),
             ({"tgt_mask": nn.Transformer.generate_square_subsequent_mask(5, dtype=F64)},
              {"tgt_mask": torch.nn.Transformer.generate_square_subsequent_mask(
                  5, dtype=torch.float64)}),
             ({"tgt_mask": clgrad.tensor(np.triu(np.ones((5, 5), bool), 1)),
               "tgt_key_padding_mask": clgrad.tensor(tkpm),
               "memory_key_padding_mask": clgrad.tensor(mkpm)},
              {"tgt_mask": torch.tensor(np.triu(np.ones((5, 5), bool), 1)),
               "tgt_key_padding_mask": torch.tensor(tkpm),
               "memory_key_padding_mask": torch.tensor(mkpm)})]
    for kc, kt in masks:
        args_c = [clgrad.tensor(v, requires_grad=True) for v in (tgt, mem)]
        args_t = [torch.tensor(v, requires_grad=True) for v in (tgt, mem)]
        _compare(torch, dc, dt, args_c, args_t, kc, kt)
        dc.zero_grad()
        dt.zero_grad()


@pytest.mark.parametrize("cfg", CONFIGS, ids=["post_relu", "pre_gelu_bf", "nobias_bf"])
def test_transformer_checkpoint_loads_and_matches_torch(cfg):
    torch = pytest.importorskip("torch")
    torch.manual_seed(1)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's nested-tensor notice
        mt = torch.nn.Transformer(8, 2, 2, 2, 16, dropout=0.1, **cfg).double().eval()
    mc = nn.Transformer(8, 2, 2, 2, 16, dropout=0.1, dtype=F64, **cfg).eval()
    _load(mc, mt)
    bf = cfg["batch_first"]
    src = RNG.standard_normal((2, 6, 8) if bf else (6, 2, 8))
    tgt = RNG.standard_normal((2, 4, 8) if bf else (4, 2, 8))
    skpm = np.zeros((2, 6), bool)
    skpm[1, 5:] = True
    kc = {"tgt_mask": nn.Transformer.generate_square_subsequent_mask(4, dtype=F64),
          "src_key_padding_mask": clgrad.tensor(skpm),
          "memory_key_padding_mask": clgrad.tensor(skpm)}
    kt = {"tgt_mask": torch.nn.Transformer.generate_square_subsequent_mask(
              4, dtype=torch.float64),
          "src_key_padding_mask": torch.tensor(skpm),
          "memory_key_padding_mask": torch.tensor(skpm)}
    args_c = [clgrad.tensor(v, requires_grad=True) for v in (src, tgt)]
    args_t = [torch.tensor(v, requires_grad=True) for v in (src, tgt)]
    _compare(torch, mc, mt, args_c, args_t, kc, kt)
    # tgt_is_causal as a hint with the mask (PyTorch's use) gives the same
    oc = mc(clgrad.tensor(src), clgrad.tensor(tgt), tgt_is_causal=True, **kc)
    ot = mt(torch.tensor(src), torch.tensor(tgt), tgt_is_causal=True, **kt)
    np.testing.assert_allclose(oc.detach().numpy(), ot.detach().numpy(), rtol=1e-9, atol=1e-10)
