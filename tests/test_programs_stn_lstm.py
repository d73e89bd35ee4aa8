"""Real PyTorch programs, round 4 part B (issue 33): run with only the imports swapped.

tests/programs/ gains PyTorch's spatial transformer tutorial (spatial_transformer.py:
F.affine_grid and F.grid_sample inside a classifier) and PyTorch's examples
word_language_model on characters (char_lstm.py: nn.LSTM/GRU/RNN with dropout, tied weights,
truncated BPTT with repackage_hidden, clip_grad_norm_ and a hand-written SGD update) and the
packed-sequence sentiment model of bentrevett's tutorials (packed_sentiment.py: a bidirectional
2-layer LSTM over pack_padded_sequence with unsorted lengths, pad_packed_sequence). As in
tests/test_programs.py, each program's own main() runs under clgrad and must learn; where torch
is installed, the first steps are compared with PyTorch on copied weights: losses within 1e-5
relative, the first step's gradients against PyTorch's float64 gradients of the same model.
"""
import copy
import math

import numpy as np
import pytest
from test_programs import PROGRAMS, _compare_first_steps, _torch, load_program, rewrite_imports

import clgrad

NAMES = ("spatial_transformer", "char_lstm", "packed_sentiment")


def test_programs_differ_from_pytorch_only_in_imports():
    for name in NAMES:
        source = (PROGRAMS / f"{name}.py").read_text()
        code = [ln for ln in source.splitlines() if not ln.lstrip().startswith("#")]
        assert not any("clgrad" in ln for ln in code), name
        rewrite_imports(source)


# -- (1) the spatial transformer tutorial ----------------------------------------------------

def test_spatial_transformer_trains(programs, capsys):
    prog = load_program("spatial_transformer")
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        model, history, transformed = prog.main(
            ["--epochs", "8", "--train-size", "512", "--test-size", "100", "--lr", "0.02",
             "--batch-size", "32"])
    out = capsys.readouterr().out
    # lr 0.02: a stable regime. At 0.1 training is chaotic (CPU, seeds 1-4: final test loss
    # 1.01-2.13); at 0.05 the transform can blow up late (CPU seed 3 at epoch 8; the H200 run
    # ended at chance, 2.30). At 0.02 every seed's epoch mean falls each epoch (CPU seeds 1-4:
    # 2.30 -> 1.51-1.89, test loss 1.09-1.58, accuracy 0.63-0.80).
    means = [np.mean(h[0]) for h in history]
    assert means[-1] < means[0] - 0.3                 # clgrad (CPU, seed 1) 2.30 -> 1.89
    test_loss, accuracy = history[-1][1]
    assert test_loss < 1.9 and accuracy >= 0.45       # chance 2.30, 0.1; clgrad 1.58, 0.63
    assert "Test set: Average loss:" in out
    assert transformed.shape == (32, 1, 28, 28) and np.isfinite(transformed).all()
    # the localisation net learnt a transform: not the identity it started from any more
    theta = model.fc_loc[2].bias.detach().numpy()
    assert np.abs(theta - [1, 0, 0, 0, 1, 0]).max() > 1e-4


def _off_identity(prog):
    """The tutorial's Net with its affine regressor's bias moved off the identity: identity
    grid points fall exactly on pixel centres, where bilinear sampling has a kink whose side
    float32 rounding picks; elsewhere the float64 gradients are an oracle."""
    net = prog.Net()
    with prog.torch.no_grad():
        net.fc_loc[2].bias.add_(prog.torch.tensor([0.03, 0.011, 0.021, -0.013, 0.04, 0.017]))
    return net


def test_spatial_transformer_first_steps_match_pytorch(programs):
    torch = _torch()
    x, y = load_program("spatial_transformer").mnist_like(train=True, n=16)
    with pytest.warns(UserWarning):
        _compare_first_steps(
            "spatial_transformer", _off_identity, (x, y),
            loss=lambda p, F, out, t: F.nll_loss(out, t),
            optimizer=lambda optim, params: optim.SGD(params, lr=0.05),
            eval_mode=True, torch=torch)


# -- (2) word_language_model on characters ----------------------------------------------------

@pytest.mark.parametrize("args", [[], ["--model", "GRU", "--tied", "--nlayers", "1"],
                                  ["--model", "RNN_TANH", "--dropout", "0"]])
def test_char_lstm_trains(programs, capsys, args):
    prog = load_program("char_lstm")
    model, history, text = prog.main(["--epochs", "3"] + args)
    out = capsys.readouterr().out
    chance = math.log(len(prog.Corpus(prog.TEXT).idx2char))
    assert history[0][0][0] == pytest.approx(chance, abs=0.1)   # uniform at the start
    assert np.mean(history[-1][0]) < chance - 0.3               # clgrad LSTM 2.89
    assert history[-1][1] < chance - 0.2                        # clgrad LSTM 2.98
    assert "| end of epoch   3 |" in out
    assert text.startswith("it was the ") and len(text) == 31
    state = clgrad.load(str(programs / "model.pt"), weights_only=True)
    assert set(state) == set(model.state_dict())
    if "--tied" in args:
        assert model.decoder.weight is model.encoder.weight


@pytest.mark.parametrize("rnn_type", ["LSTM", "GRU"])
def test_char_lstm_first_steps_match_pytorch(programs, rnn_type, cpu_default):
    """The program's train() step (truncated BPTT over two batches with the hidden state
    carried and detached, clip_grad_norm_, p.data.add_) in both frameworks on copied weights;
    without dropout (its masks differ)."""
    torch = _torch()
    tp, cp = load_program("char_lstm", "torch"), load_program("char_lstm")
    torch.manual_seed(0)
    tm = tp.RNNModel(rnn_type, 27, 16, 16, 2, dropout=0.0)
    cm = cp.RNNModel(rnn_type, 27, 16, 16, 2, dropout=0.0)
    assert list(tm.state_dict()) == list(cm.state_dict())
    cm.load_state_dict({k: clgrad.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    t64 = copy.deepcopy(tm).double()
    ids = np.random.default_rng(4).integers(0, 27, 200)
    tdata = tp.batchify(torch.tensor(ids), 4, "cpu")
    cdata = cp.batchify(clgrad.tensor(ids), 4, "cpu")
    th, ch, h64 = tm.init_hidden(4), cm.init_hidden(4), t64.init_hidden(4)
    for step, i in enumerate(range(0, 3 * 10, 10)):
        (tx, ty), (cx, cy) = tp.get_batch(tdata, i, 10), cp.get_batch(cdata, i, 10)
        np.testing.assert_array_equal(cx.numpy(), tx.numpy())
        th, ch, h64 = (tp.repackage_hidden(th), cp.repackage_hidden(ch),
                       tp.repackage_hidden(h64))
        tm.zero_grad()
        cm.zero_grad()
        t64.zero_grad()
        tout, th = tm(tx, th)
        cout, ch = cm(cx, ch)
        tl = torch.nn.functional.nll_loss(tout, ty)
        cl = clgrad.nn.functional.nll_loss(cout, cy)
        assert cl.item() == pytest.approx(tl.item(), rel=1e-5), f"step {step}"
        tl.backward()
        cl.backward()
        out64, h64 = t64(tx, h64)
        torch.nn.functional.nll_loss(out64, ty).backward()
        g64 = {k: p.grad.numpy() for k, p in t64.named_parameters()}
        scale = max(np.abs(g).max() for g in g64.values())
        for k, p in cm.named_parameters():
            err = np.abs(p.grad.numpy() - g64[k]).max() / scale
            assert err < 5e-5, f"step {step} grad {k}: error {err:.2e} of the largest gradient"
        for m, mod in ((tm, torch), (cm, clgrad), (t64, torch)):
            mod.nn.utils.clip_grad_norm_(m.parameters(), 0.25)
            for p in m.parameters():
                p.data.add_(p.grad, alpha=-2.0)


# -- (3) packed padded sequences: sentiment analysis -----------------------------------------

_SENTIMENT_ARGS = ["--epochs", "4", "--max-len", "8", "--batch-size", "64", "--train-size",
                   "512", "--valid-size", "128", "--dropout", "0.2"]


def test_packed_sentiment_trains(programs, capsys):
    prog = load_program("packed_sentiment")
    model, history = prog.main(_SENTIMENT_ARGS)
    out = capsys.readouterr().out
    assert "trainable parameters" in out and "Val. Acc:" in out
    first, last = history[0], history[-1]
    assert last[0] < first[0] - 0.03 and last[2] < first[2] - 0.03   # clgrad 0.692 -> 0.625
    assert last[3] >= 0.75                                            # clgrad 0.94; chance 0.5


def test_packed_sentiment_first_steps_match_pytorch(programs, cpu_default):
    """Two Adam steps of the program's model on one batch of unsorted lengths, in both
    frameworks on copied weights (eval mode: no dropout masks): losses, and the first step's
    gradients against PyTorch's float64 gradients."""
    torch = _torch()
    tp, cp = load_program("packed_sentiment", "torch"), load_program("packed_sentiment")
    torch.manual_seed(0)
    args = (30, 8, 6, 1, 2, True, 0.5, tp.PAD_IDX)
    tm, cm = tp.RNN(*args), cp.RNN(*args)
    cm.load_state_dict({k: clgrad.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})
    t64 = copy.deepcopy(tm).double()
    for m in (tm, cm, t64):
        m.eval()
    reviews, labels = tp.make_reviews(6, 30, 7, seed=3)
    (tx, tl, ty), = tp.batches(reviews, labels, 6, "cpu")
    (cx, cl, cy), = cp.batches(reviews, labels, 6, "cpu")
    assert len(set(tl.tolist())) > 2 and tl.tolist() != sorted(tl.tolist(), reverse=True)
    tcrit, ccrit = torch.nn.BCEWithLogitsLoss(), clgrad.nn.BCEWithLogitsLoss()
    tcrit(t64(tx, tl).squeeze(1), ty.double()).backward()
    g64 = {k: p.grad.numpy() for k, p in t64.named_parameters()}
    scale = max(np.abs(g).max() for g in g64.values())
    topt = torch.optim.Adam(tm.parameters())
    copt = clgrad.optim.Adam(cm.parameters())
    for step in range(2):
        topt.zero_grad()
        copt.zero_grad()
        tloss = tcrit(tm(tx, tl).squeeze(1), ty)
        closs = ccrit(cm(cx, cl).squeeze(1), cy)
        assert closs.item() == pytest.approx(tloss.item(), rel=1e-5), f"step {step}"
        tloss.backward()
        closs.backward()
        if step == 0:
            for k, p in cm.named_parameters():
                err = np.abs(p.grad.numpy() - g64[k]).max() / scale
                assert err < 5e-5, f"grad {k}: error {err:.2e} of the largest gradient"
        topt.step()
        copt.step()
