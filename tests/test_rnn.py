"""Recurrent layers (nn.RNN, LSTM, GRU, the cells) and nn.utils.rnn's packing.

Oracles: PyTorch on copied weights (values and gradients of the input, h0/c0 and every
parameter) where torch is installed; without it, NumPy float64 recurrences written from
PyTorch's documented equations, hand-built packed layouts, and float64 gradcheck.
"""
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import clgrad
from clgrad import nn
from clgrad.autograd import gradcheck
from clgrad.nn.utils.rnn import (PackedSequence, pack_padded_sequence, pack_sequence,
                                 pad_packed_sequence, pad_sequence, unpack_sequence,
                                 unpad_sequence)

RNG = np.random.default_rng(33)


def sig(x):
    return 1 / (1 + np.exp(-x))


def np_layer(mode, x, h, c, p, sfx=""):
    """NumPy float64 recurrence of one layer/direction over x (L, N, in)."""
    w_ih, w_hh = p["weight_ih" + sfx], p["weight_hh" + sfx]
    b_ih, b_hh = p.get("bias_ih" + sfx, 0), p.get("bias_hh" + sfx, 0)
    outs = []
    for xt in x:
        gi, gh = xt @ w_ih.T + b_ih, h @ w_hh.T + b_hh
        if mode == "LSTM":
            i, f, g, o = np.split(gi + gh, 4, axis=1)
            c = sig(f) * c + sig(i) * np.tanh(g)
            h = sig(o) * np.tanh(c)
            if "weight_hr" + sfx in p:
                h = h @ p["weight_hr" + sfx].T
        elif mode == "GRU":
            xr, xz, xn = np.split(gi, 3, axis=1)
            hr, hz, hn = np.split(gh, 3, axis=1)
            r, z = sig(xr + hr), sig(xz + hz)
            n = np.tanh(xn + r * hn)
            h = (1 - z) * n + z * h
        else:
            h = np.tanh(gi + gh)
        outs.append(h)
    return np.stack(outs), h, c


def host_params(m):
    return {k: v.numpy().astype(np.float64) for k, v in m.state_dict().items()}


# -- torch-free: values against NumPy, gradcheck --------------------------------------------

@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_two_layer_bidirectional_values_match_numpy(cls):
    clgrad.manual_seed(0)
    kw = {"proj_size": 2} if cls == "LSTM" else {}
    m = getattr(nn, cls)(3, 4, num_layers=2, bidirectional=True, **kw)
    hr = 2 if cls == "LSTM" else 4
    x = RNG.standard_normal((5, 2, 3)).astype(np.float32)
    h0 = RNG.standard_normal((4, 2, hr)).astype(np.float32)
    c0 = RNG.standard_normal((4, 2, 4)).astype(np.float32)
    hx = (clgrad.tensor(h0), clgrad.tensor(c0)) if cls == "LSTM" else clgrad.tensor(h0)
    out, hn = m(clgrad.tensor(x), hx)
    p = host_params(m)
    layer_in, hs, cs = x.astype(np.float64), [], []
    for layer in range(2):
        sfx = f"_l{layer}"
        of, hf, cf = np_layer(cls, layer_in, h0[2 * layer], c0[2 * layer], p, sfx)
        ob, hb, cb = np_layer(cls, layer_in[::-1], h0[2 * layer + 1], c0[2 * layer + 1], p,
                              sfx + "_reverse")
        layer_in = np.concatenate([of, ob[::-1]], axis=2)
        hs += [hf, hb]
        cs += [cf, cb]
    np.testing.assert_allclose(out.detach().numpy(), layer_in, rtol=1e-5, atol=1e-5)
    if cls == "LSTM":
        hn, cn = hn
        np.testing.assert_allclose(cn.detach().numpy(), np.stack(cs), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(hn.detach().numpy(), np.stack(hs), rtol=1e-5, atol=1e-5)


def test_lstm_cell_step_by_hand():
    """One LSTMCell step with hand-set weights: every gate pre-activation is known."""
    cell = nn.LSTMCell(2, 1).double()
    cell.load_state_dict({
        "weight_ih": clgrad.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, -0.5]]).double(),
        "weight_hh": clgrad.tensor([[0.5], [-1.0], [2.0], [0.0]]).double(),
        "bias_ih": clgrad.tensor([0.0, 0.0, 0.0, 0.0]).double(),
        "bias_hh": clgrad.tensor([0.1, 0.2, -0.3, 0.0]).double()})
    x = clgrad.tensor([[1.0, 2.0]], dtype=clgrad.float64)
    h = clgrad.tensor([[0.5]], dtype=clgrad.float64)
    c = clgrad.tensor([[-1.0]], dtype=clgrad.float64)
    h1, c1 = cell(x, (h, c))
    i, f, g, o = sig(1 + 0.25 + 0.1), sig(2 - 0.5 + 0.2), np.tanh(3 + 1 - 0.3), sig(-0.5)
    np.testing.assert_allclose(c1.detach().numpy(), [[f * -1.0 + i * g]], rtol=1e-8)
    np.testing.assert_allclose(h1.detach().numpy(), [[o * np.tanh(f * -1.0 + i * g)]], rtol=1e-8)


@pytest.mark.parametrize("cls", ["RNNCell", "GRUCell"])
def test_cells_match_numpy_and_unbatched(cls):
    clgrad.manual_seed(1)
    cell = getattr(nn, cls)(3, 4)
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    h = RNG.standard_normal((2, 4)).astype(np.float32)
    mode = "GRU" if cls == "GRUCell" else "RNN_TANH"
    _, ref, _ = np_layer(mode, x[None].astype(np.float64), h, None, host_params(cell))
    np.testing.assert_allclose(cell(clgrad.tensor(x), clgrad.tensor(h)).detach().numpy(), ref,
                               rtol=1e-5, atol=1e-6)
    one = cell(clgrad.tensor(x[1]), clgrad.tensor(h[1]))
    assert tuple(one.shape) == (4,)
    np.testing.assert_allclose(one.detach().numpy(), ref[1], rtol=1e-5, atol=1e-6)
    _, zero_h, _ = np_layer(mode, x[None].astype(np.float64), np.zeros((2, 4)), None,
                            host_params(cell))
    np.testing.assert_allclose(cell(clgrad.tensor(x)).detach().numpy(), zero_h, rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("cls,kw", [("LSTM", {"proj_size": 1, "bidirectional": True}),
                                    ("GRU", {"num_layers": 2}),
                                    ("RNN", {"nonlinearity": "relu", "batch_first": True})])
def test_gradcheck_float64(cls, kw):
    clgrad.manual_seed(2)
    hidden = 2 if cls == "LSTM" else 3
    m = getattr(nn, cls)(2, hidden, **kw).double()
    x = clgrad.tensor(RNG.standard_normal((2, 3, 2) if kw.get("batch_first") else (3, 2, 2)),
                      requires_grad=True)
    shape = (2 if kw.get("bidirectional") else kw.get("num_layers", 1), 2,
             kw.get("proj_size", hidden))
    h0 = clgrad.tensor(RNG.standard_normal(shape), requires_grad=True)
    params = list(m.parameters())
    if cls == "LSTM":
        c0 = clgrad.tensor(RNG.standard_normal(shape[:2] + (hidden,)), requires_grad=True)

        def f(a, b, c, *_):
            out, (_, cn) = m(a, (b, c))
            return out, cn
        assert gradcheck(f, [x, h0, c0] + params)
    else:
        assert gradcheck(lambda a, b, *_: m(a, b), [x, h0] + params)


def test_packed_gradcheck_unsorted_lengths():
    clgrad.manual_seed(3)
    m = nn.LSTM(2, 2, bidirectional=True).double()
    x = clgrad.tensor(RNG.standard_normal((3, 3, 2)), requires_grad=True)

    def f(a, *_):
        packed = pack_padded_sequence(a, [2, 3, 1], enforce_sorted=False)
        out, (hn, cn) = m(packed)
        return pad_packed_sequence(out)[0], hn, cn
    assert gradcheck(f, [x] + list(m.parameters()))


def test_packed_equals_each_sequence_alone():
    """A packed batch gives, per sequence, what running that sequence alone gives."""
    clgrad.manual_seed(4)
    m = nn.GRU(3, 4, num_layers=2, bidirectional=True)
    lens = [3, 5, 1, 4]
    seqs = [clgrad.tensor(RNG.standard_normal((n, 3)).astype(np.float32)) for n in lens]
    out, hn = m(pack_sequence(seqs, enforce_sorted=False))
    padded, got_lens = pad_packed_sequence(out, batch_first=True)
    assert got_lens.tolist() == lens
    assert tuple(padded.shape) == (4, 5, 8)
    for b, s in enumerate(seqs):
        alone, h_alone = m(s)          # unbatched
        np.testing.assert_allclose(padded[b, :lens[b]].detach().numpy(), alone.detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
        assert np.all(padded[b, lens[b]:].detach().numpy() == 0)
        np.testing.assert_allclose(hn[:, b].detach().numpy(), h_alone.detach().numpy(),
                                   rtol=1e-5, atol=1e-6)


# -- packing utilities against hand-built layouts -------------------------------------------

def test_pack_padded_layout_and_roundtrip():
    x = np.arange(4 * 3 * 2, dtype=np.float32).reshape(4, 3, 2)   # (T, B, *)
    packed = pack_padded_sequence(clgrad.tensor(x), clgrad.tensor([2, 4, 1], device="cpu"),
                                  enforce_sorted=False)   # lengths on the CPU, as PyTorch's
    assert packed.batch_sizes.tolist() == [3, 2, 1, 1]
    assert packed.sorted_indices.tolist() == [1, 0, 2]
    assert packed.unsorted_indices.tolist() == [1, 0, 2]
    rows = [(0, 1), (0, 0), (0, 2), (1, 1), (1, 0), (2, 1), (3, 1)]
    np.testing.assert_array_equal(packed.data.numpy(), np.stack([x[t, b] for t, b in rows]))
    padded, lens = pad_packed_sequence(packed, padding_value=-1.0, total_length=5)
    want = np.full((5, 3, 2), -1.0, dtype=np.float32)
    for b, n in enumerate([2, 4, 1]):
        want[:n, b] = x[:n, b]
    np.testing.assert_array_equal(padded.numpy(), want)
    assert lens.device.type == "cpu" and lens.tolist() == [2, 4, 1]  # PyTorch's: on the CPU
    assert lens.tolist() == [2, 4, 1]
    bf = pack_padded_sequence(clgrad.tensor(x.transpose(1, 0, 2).copy()), [4, 2, 1],
                              batch_first=True)
    assert bf.sorted_indices is None
    np.testing.assert_array_equal(pad_packed_sequence(bf, batch_first=True)[0].numpy()[0],
                                  x[:, 0])


def examples(n: int) -> int:
    return int(os.environ.get("CLGRAD_HYPOTHESIS_EXAMPLES", n))


@settings(max_examples=examples(25))
@given(lens=st.lists(st.integers(1, 5), min_size=1, max_size=5), batch_first=st.booleans(),
       extra=st.integers(0, 2), data=st.data())
def test_pack_pad_roundtrip_against_numpy(lens, batch_first, extra, data):
    """pack_padded_sequence's rows are the (step, sequence) pairs in step order, sequences by
    decreasing length (stable); pad_packed_sequence puts them back with padding."""
    nt = max(lens) + extra
    nb = len(lens)
    x = RNG.standard_normal((nb, nt, 2) if batch_first else (nt, nb, 2))
    sort = data.draw(st.booleans(), label="enforce_sorted") and lens == sorted(lens)[::-1]
    packed = pack_padded_sequence(clgrad.tensor(x), lens, batch_first=batch_first,
                                  enforce_sorted=sort)
    order = np.argsort(-np.array(lens), kind="stable")
    xt = x.transpose(1, 0, 2) if batch_first else x              # (T, B, 2)
    rows = [xt[t, b] for t in range(max(lens)) for b in order if lens[b] > t]
    np.testing.assert_array_equal(packed.data.numpy(), np.stack(rows))
    assert packed.batch_sizes.tolist() == [sum(n > t for n in lens) for t in range(max(lens))]
    padded, got = pad_packed_sequence(packed, batch_first=batch_first, padding_value=7.0,
                                      total_length=nt)
    want = np.full(xt.shape, 7.0)
    for b, n in enumerate(lens):
        want[:n, b] = xt[:n, b]
    np.testing.assert_array_equal(padded.numpy(), want.transpose(1, 0, 2) if batch_first
                                  else want)
    assert got.tolist() == lens


def test_pad_sequence_sides_and_unpad():
    a = np.array([[1.0], [2.0], [3.0]], dtype=np.float32)
    b = np.array([[4.0]], dtype=np.float32)
    seqs = [clgrad.tensor(a, requires_grad=True), clgrad.tensor(b, requires_grad=True)]
    right = pad_sequence(seqs, batch_first=True, padding_value=9.0)
    np.testing.assert_array_equal(right.detach().numpy()[..., 0], [[1, 2, 3], [4, 9, 9]])
    left = pad_sequence(seqs, padding_side="left")
    np.testing.assert_array_equal(left.detach().numpy()[..., 0], [[1, 0], [2, 0], [3, 4]])
    (left * clgrad.tensor([[[1.0], [10.0]]] * 3)).sum().backward()
    np.testing.assert_array_equal(seqs[0].grad.numpy()[:, 0], [1, 1, 1])
    np.testing.assert_array_equal(seqs[1].grad.numpy()[:, 0], [10])
    parts = unpad_sequence(right, [3, 1], batch_first=True)
    np.testing.assert_array_equal(parts[1].detach().numpy(), b)
    parts = unpack_sequence(pack_sequence(seqs, enforce_sorted=False))
    np.testing.assert_array_equal(parts[0].detach().numpy(), a)


def test_packed_sequence_conversions():
    packed = pack_sequence([clgrad.tensor([[1.0], [2.0]]), clgrad.tensor([[3.0]])])
    d = packed.double()
    assert isinstance(d, PackedSequence) and d.data.dtype == clgrad.float64
    np.testing.assert_array_equal(d.data.numpy().ravel(), [1, 3, 2])
    assert d.batch_sizes.tolist() == [2, 1] and d.sorted_indices is None
    assert d.float().data.dtype == clgrad.float32
    assert packed.cpu().data.device.type == "cpu" and not packed.is_pinned()
    assert packed.to(clgrad.float32) is packed


def test_packing_errors():
    x = clgrad.zeros(3, 2, 1)
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        pack_padded_sequence(x, [1, 3])
    with pytest.raises(RuntimeError, match="greater than 0"):
        pack_padded_sequence(x, [3, 0])
    with pytest.raises(ValueError, match="equal to batch_size"):
        pack_padded_sequence(x, [3])
    with pytest.raises(RuntimeError, match="sequence length 3"):
        pack_padded_sequence(x, [4, 1])
    with pytest.raises(ValueError, match="total_length"):
        pad_packed_sequence(pack_padded_sequence(x, [3, 1]), total_length=2)
    with pytest.raises(ValueError, match="padding_side"):
        pad_sequence([x[:, 0]], padding_side="middle")


# -- module surface: names, errors, dropout --------------------------------------------------

def test_parameter_names_and_shapes():
    m = nn.LSTM(3, 5, num_layers=2, bidirectional=True, proj_size=2)
    shapes = {k: tuple(v.shape) for k, v in m.state_dict().items()}
    assert list(shapes)[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                                "weight_hr_l0"]
    assert shapes["weight_ih_l1_reverse"] == (20, 4)
    assert shapes["weight_hh_l1"] == (20, 2)
    assert shapes["weight_hr_l1_reverse"] == (2, 5)
    assert len(shapes) == 20
    g = nn.GRU(3, 5, bias=False)
    assert list(g.state_dict()) == ["weight_ih_l0", "weight_hh_l0"]
    assert repr(m) == "LSTM(3, 5, proj_size=2, num_layers=2, bidirectional=True)"
    assert len(m.all_weights) == 4
    m.flatten_parameters()


def test_errors():
    m = nn.GRU(3, 4, num_layers=2)
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(2, 5, 4\), got \[1, 5, 4\]"):
        m(clgrad.zeros(2, 5, 3), clgrad.zeros(1, 5, 4))
    with pytest.raises(RuntimeError, match="Expected 3, got 2"):
        m(clgrad.zeros(2, 5, 2))
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D, got 4D"):
        m(clgrad.zeros(1, 2, 5, 3))
    with pytest.raises(RuntimeError, match="hx should also be 2-D"):
        m(clgrad.zeros(2, 3), clgrad.zeros(2, 1, 4))
    with pytest.raises(ValueError, match="does not match weight dtype"):
        m(clgrad.zeros(2, 5, 3, dtype=clgrad.float64))
    lstm = nn.LSTM(3, 4, proj_size=2)
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(1, 5, 4\)"):
        lstm(clgrad.zeros(2, 5, 3), (clgrad.zeros(1, 5, 2), clgrad.zeros(1, 5, 2)))
    with pytest.raises(ValueError, match="proj_size has to be smaller"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match="dropout should be a number"):
        nn.RNN(3, 4, dropout=1.5)
    with pytest.warns(UserWarning, match="non-zero dropout expects"):
        nn.RNN(3, 4, dropout=0.5)
    with pytest.raises(ValueError, match="GRUCell: Expected input to be 1D or 2D, got 3D"):
        nn.GRUCell(3, 4)(clgrad.zeros(1, 1, 3))
    with pytest.raises(RuntimeError, match=r"LSTMCell: Expected hx\[1\] size \(2, 4\)"):
        nn.LSTMCell(3, 4)(clgrad.zeros(2, 3), (clgrad.zeros(2, 4), clgrad.zeros(2, 3)))


def test_dropout_between_layers():
    """dropout=1 zeroes the second layer's input in training: its output is then the
    recurrence on zeros; in eval mode dropout does nothing."""
    clgrad.manual_seed(5)
    m = nn.RNN(2, 3, num_layers=2, dropout=1.0)
    x = clgrad.tensor(RNG.standard_normal((4, 1, 2)).astype(np.float32))
    out_train, _ = m(x)
    p = host_params(m)
    zero_out, _, _ = np_layer("RNN_TANH", np.zeros((4, 1, 3)), np.zeros((1, 3)), None, p, "_l1")
    np.testing.assert_allclose(out_train.detach().numpy(), zero_out, rtol=1e-5, atol=1e-6)
    m.eval()
    first, _, _ = np_layer("RNN_TANH", x.numpy().astype(np.float64), np.zeros((1, 3)), None, p,
                           "_l0")
    second, _, _ = np_layer("RNN_TANH", first, np.zeros((1, 3)), None, p, "_l1")
    np.testing.assert_allclose(m(x)[0].detach().numpy(), second, rtol=1e-5, atol=1e-6)


# -- PyTorch on copied weights ----------------------------------------------------------------

def _copy(tm, cm):
    cm.load_state_dict({k: clgrad.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})


def _assert_grads(tm, cm, pairs):
    for (a, b) in pairs:
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-4, atol=1e-5)
    for (k, tp), (k2, cp) in zip(tm.named_parameters(), cm.named_parameters()):
        assert k == k2
        np.testing.assert_allclose(cp.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=k)


OPTIONS = [
    ("RNN", {}), ("RNN", {"nonlinearity": "relu", "num_layers": 2}),
    ("RNN", {"bidirectional": True, "batch_first": True}),
    ("LSTM", {}), ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"proj_size": 3, "batch_first": True}),
    ("LSTM", {"proj_size": 2, "num_layers": 2, "bidirectional": True, "bias": False}),
    ("GRU", {}), ("GRU", {"num_layers": 2, "batch_first": True}),
    ("GRU", {"bidirectional": True, "num_layers": 2}),
]


@pytest.mark.parametrize("cls,kw", OPTIONS)
def test_matches_torch(cls, kw):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls)(4, 5, **kw)
    cm = getattr(nn, cls)(4, 5, **kw)
    assert [(k, tuple(v.shape)) for k, v in tm.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in cm.state_dict().items()]
    _copy(tm, cm)
    dirs = 2 if kw.get("bidirectional") else 1
    hshape = (kw.get("num_layers", 1) * dirs, 3, kw.get("proj_size", 0) or 5)
    x = RNG.standard_normal((3, 6, 4) if kw.get("batch_first") else (6, 3, 4))
    h0 = RNG.standard_normal(hshape)
    c0 = RNG.standard_normal(hshape[:2] + (5,))
    tx, th, tc = (torch.tensor(a, dtype=torch.float32, requires_grad=True) for a in (x, h0, c0))
    cx, ch, cc = (clgrad.tensor(a.astype(np.float32), requires_grad=True) for a in (x, h0, c0))
    if cls == "LSTM":
        to, (thn, tcn) = tm(tx, (th, tc))
        co, (chn, ccn) = cm(cx, (ch, cc))
        np.testing.assert_allclose(ccn.detach().numpy(), tcn.detach().numpy(), rtol=1e-5,
                                   atol=1e-5)
    else:
        to, thn = tm(tx, th)
        co, chn = cm(cx, ch)
    np.testing.assert_allclose(co.detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(chn.detach().numpy(), thn.detach().numpy(), rtol=1e-5,
                               atol=1e-5)
    ro, rh = RNG.standard_normal(to.shape), RNG.standard_normal(thn.shape)
    tloss = (to * torch.tensor(ro, dtype=torch.float32)).sum() + \
        (thn * torch.tensor(rh, dtype=torch.float32)).sum()
    closs = (co * clgrad.tensor(ro.astype(np.float32))).sum() + \
        (chn * clgrad.tensor(rh.astype(np.float32))).sum()
    if cls == "LSTM":
        rc = RNG.standard_normal(tcn.shape)
        tloss = tloss + (tcn * torch.tensor(rc, dtype=torch.float32)).sum()
        closs = closs + (ccn * clgrad.tensor(rc.astype(np.float32))).sum()
    tloss.backward()
    closs.backward()
    _assert_grads(tm, cm, [(tx, cx), (th, ch)] + ([(tc, cc)] if cls == "LSTM" else []))


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_packed_matches_torch(cls):
    torch = pytest.importorskip("torch")
    tnn = torch.nn.utils.rnn
    torch.manual_seed(1)
    kw = {"num_layers": 2, "bidirectional": True}
    kw.update({"proj_size": 2} if cls == "LSTM" else {})
    tm, cm = getattr(torch.nn, cls)(3, 4, **kw), getattr(nn, cls)(3, 4, **kw)
    _copy(tm, cm)
    lens = [3, 5, 2, 4]
    x = RNG.standard_normal((4, 5, 3)).astype(np.float32)
    tx = torch.tensor(x, requires_grad=True)
    cx = clgrad.tensor(x, requires_grad=True)
    tp = tnn.pack_padded_sequence(tx, torch.tensor(lens), batch_first=True,
                                  enforce_sorted=False)
    cp = pack_padded_sequence(cx, lens, batch_first=True, enforce_sorted=False)
    np.testing.assert_array_equal(cp.data.detach().numpy(), tp.data.detach().numpy())
    assert cp.batch_sizes.tolist() == tp.batch_sizes.tolist()
    assert cp.sorted_indices.tolist() == tp.sorted_indices.tolist()
    assert cp.unsorted_indices.tolist() == tp.unsorted_indices.tolist()
    hshape = (4, 4, 2 if cls == "LSTM" else 4)
    h0, c0 = RNG.standard_normal(hshape), RNG.standard_normal((4, 4, 4))
    th0, tc0 = (torch.tensor(a, dtype=torch.float32, requires_grad=True) for a in (h0, c0))
    ch0, cc0 = (clgrad.tensor(a.astype(np.float32), requires_grad=True) for a in (h0, c0))
    to, th = tm(tp, (th0, tc0) if cls == "LSTM" else th0)   # h0 in the caller's order
    co, ch = cm(cp, (ch0, cc0) if cls == "LSTM" else ch0)
    assert isinstance(co, PackedSequence)
    tpad, tl = tnn.pad_packed_sequence(to, batch_first=True, padding_value=0.5)
    cpad, cl = pad_packed_sequence(co, batch_first=True, padding_value=0.5)
    assert cl.tolist() == tl.tolist()
    np.testing.assert_allclose(cpad.detach().numpy(), tpad.detach().numpy(), rtol=1e-5,
                               atol=1e-5)
    if cls == "LSTM":   # h_n and c_n, flattened side by side
        th = torch.cat([th[0].flatten(), th[1].flatten()])
        ch = clgrad.cat([ch[0].flatten(), ch[1].flatten()])
    np.testing.assert_allclose(ch.detach().numpy(), th.detach().numpy(), rtol=1e-5, atol=1e-5)
    r, rh = RNG.standard_normal(tpad.shape), RNG.standard_normal(th.shape)
    ((tpad * torch.tensor(r, dtype=torch.float32)).sum() +
     (th * torch.tensor(rh, dtype=torch.float32)).sum()).backward()
    ((cpad * clgrad.tensor(r.astype(np.float32))).sum() +
     (ch * clgrad.tensor(rh.astype(np.float32))).sum()).backward()
    _assert_grads(tm, cm, [(tx, cx), (th0, ch0)] + ([(tc0, cc0)] if cls == "LSTM" else []))


def test_unbatched_lstm_matches_torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(3)
    tm, cm = torch.nn.LSTM(3, 4, bidirectional=True), nn.LSTM(3, 4, bidirectional=True)
    _copy(tm, cm)
    x, h0, c0 = (RNG.standard_normal(s).astype(np.float32) for s in ((5, 3), (2, 4), (2, 4)))
    to, (th, tc) = tm(torch.tensor(x), (torch.tensor(h0), torch.tensor(c0)))
    co, (ch, cc) = cm(clgrad.tensor(x), (clgrad.tensor(h0), clgrad.tensor(c0)))
    for a, b in ((co, to), (ch, th), (cc, tc)):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_cells_match_torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(2)
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    h = RNG.standard_normal((3, 5)).astype(np.float32)
    for cls, kw in (("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}), ("GRUCell", {}),
                    ("GRUCell", {"bias": False})):
        tm, cm = getattr(torch.nn, cls)(4, 5, **kw), getattr(nn, cls)(4, 5, **kw)
        assert list(tm.state_dict()) == list(cm.state_dict())
        assert repr(tm) == repr(cm)
        _copy(tm, cm)
        tx, th = (torch.tensor(a, requires_grad=True) for a in (x, h))
        cx, ch = (clgrad.tensor(a, requires_grad=True) for a in (x, h))
        if cls == "LSTMCell":
            to, tc = tm(tx, (th, th * 0.5))
            co, cc = cm(cx, (ch, ch * 0.5))
            to, co = to + 3 * tc, co + 3 * cc
        else:
            to, co = tm(tx, th), cm(cx, ch)
        np.testing.assert_allclose(co.detach().numpy(), to.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        r = RNG.standard_normal(to.shape).astype(np.float32)
        (to * torch.tensor(r)).sum().backward()
        (co * clgrad.tensor(r)).sum().backward()
        _assert_grads(tm, cm, [(tx, cx), (th, ch)])


def test_state_dict_loads_into_torch():
    torch = pytest.importorskip("torch")
    cm = nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    tm = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in cm.state_dict().items()})
    x = RNG.standard_normal((5, 2, 3)).astype(np.float32)
    np.testing.assert_allclose(cm(clgrad.tensor(x))[0].detach().numpy(),
                               tm(torch.tensor(x))[0].detach().numpy(), rtol=1e-5, atol=1e-6)


def test_pad_sequence_matches_torch():
    torch = pytest.importorskip("torch")
    seqs = [RNG.standard_normal((n, 2)).astype(np.float32) for n in (2, 4, 1)]
    for bf in (False, True):
        for side in ("left", "right"):
            t = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs], batch_first=bf,
                                                padding_value=-2.0, padding_side=side)
            c = pad_sequence([clgrad.tensor(s) for s in seqs], batch_first=bf,
                             padding_value=-2.0, padding_side=side)
            np.testing.assert_array_equal(c.numpy(), t.numpy())


def test_state_dict_files_load_both_ways(tmp_path):
    """torch.save'd state dicts of LSTM/GRU load into clgrad's modules and back (PyTorch's
    zip format), giving the same outputs."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(5)
    x = RNG.standard_normal((4, 2, 3)).astype(np.float32)
    for cls, kw in (("LSTM", {"num_layers": 2, "proj_size": 2, "bidirectional": True}),
                    ("GRU", {"bias": False})):
        tm, cm = getattr(torch.nn, cls)(3, 4, **kw), getattr(nn, cls)(3, 4, **kw)
        torch.save(tm.state_dict(), tmp_path / "t.pt")
        cm.load_state_dict(clgrad.load(str(tmp_path / "t.pt"), weights_only=True))
        np.testing.assert_allclose(cm(clgrad.tensor(x))[0].detach().numpy(),
                                   tm(torch.tensor(x))[0].detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        clgrad.manual_seed(6)
        cm2 = getattr(nn, cls)(3, 4, **kw)
        clgrad.save(cm2.state_dict(), str(tmp_path / "c.pt"))
        tm.load_state_dict(torch.load(tmp_path / "c.pt", weights_only=True))
        np.testing.assert_allclose(tm(torch.tensor(x))[0].detach().numpy(),
                                   cm2(clgrad.tensor(x))[0].detach().numpy(), rtol=1e-5, atol=1e-6)
