"""Real PyTorch programs, round 4: tutorial and textbook code as people copy it.

tests/programs/ gains d2l.ai's linear regression, MLP and LeNet with Lazy modules
(d2l_lenet.py), "Learning PyTorch with Examples"' polynomial fits (polynomial_fit.py), the
nn.Transformer language-model tutorial and a padded-batch classifier (transformer_lm.py),
PyTorch's examples VAE (vae.py), the DCGAN tutorial's loop at 16x16 (tiny_gan.py), a
packed-sequence LSTM name classifier and a multinomial-sampling generator (names_lstm.py),
and a checkpoint/resume training skeleton with StepLR and OneCycleLR (checkpoint_resume.py).
Each program's main() runs under clgrad with only its imports rewritten; where PyTorch is
importable, its training functions run in both frameworks from copied weights on the same
deterministic data, and the losses must agree (1e-5 relative for a few steps, 1e-4 after
hundreds).
"""
import numpy as np
import pytest
from test_programs import load_program
from test_programs import copy_state as _copy, load_both as _both


NAMES = ("d2l_lenet", "polynomial_fit", "transformer_lm", "vae", "tiny_gan", "names_lstm",
         "checkpoint_resume")


def test_round4_programs_differ_from_pytorch_only_in_imports():
    from test_programs import PROGRAMS, rewrite_imports
    for name in NAMES:
        source = (PROGRAMS / f"{name}.py").read_text()
        assert "clgrad" not in source, name
        rewrite_imports(source)


# -- d2l.ai ----------------------------------------------------------------------------------


def test_d2l_lenet_runs(programs, capsys):
    prog = load_program("d2l_lenet")
    (w, b), mlp, lenet, test_acc = prog.main(num_epochs=1, n=100)
    out = capsys.readouterr().out
    np.testing.assert_allclose(w.reshape(-1).numpy(), [2, -3.4], atol=0.02)
    assert abs(b.item() - 4.2) < 0.02
    assert "Flatten output shape:\t clgrad.Size([1, 400])" in out
    assert all(np.isfinite(loss) for loss, _ in mlp + lenet) and 0 <= test_acc <= 1


def test_d2l_lenet_matches_pytorch():
    torch, tp, cp = _both("d2l_lenet")
    X, y = tp.fashion_like(40)
    cX, cy = cp.fashion_like(40)
    np.testing.assert_allclose(cX.numpy(), X.numpy(), atol=1e-6)
    for build in (lambda p: p.LeNet(), lambda p: p.torch.nn.Sequential(
            p.nn.Flatten(), p.nn.LazyLinear(256), p.nn.ReLU(), p.nn.LazyLinear(10))):
        tm, cm = build(tp), build(cp)
        if isinstance(tm, tp.LeNet):
            tm.apply_init([X], tp.init_cnn)
            cm.apply_init([cX], cp.init_cnn)
        else:
            tm(X), cm(cX)
            tm.apply(tp.init_weights)
        _copy(tm, cm)
        res = []
        for p, m, data in ((tp, tm, (X, y)), (cp, cm, (cX, cy))):
            it = p.load_array(data, 10, is_train=False)
            opt = p.torch.optim.SGD(m.parameters(), lr=0.9)
            loss = p.nn.CrossEntropyLoss(reduction='none')
            res.append([v for _ in range(2) for v in p.train_epoch_ch3(m, it, loss, opt)]
                       + [p.evaluate_accuracy(m, it)])
        np.testing.assert_allclose(np.array(res[1]), np.array(res[0]), rtol=1e-5)


# -- Learning PyTorch with Examples ----------------------------------------------------------

def test_polynomial_fit_matches_pytorch(capsys):
    torch, tp, cp = _both("polynomial_fit")
    steps = 300
    res = {"torch": [], "clgrad": []}
    tmods = [tp.make_nn_model(), tp.make_nn_model(), tp.Polynomial3()]
    cmods = [cp.make_nn_model(), cp.make_nn_model(), cp.Polynomial3()]
    for tm, cm in zip(tmods, cmods):
        _copy(tm, cm)
    for fw, p, mods in (("torch", tp, tmods), ("clgrad", cp, cmods)):
        x, y = p.data()
        init = [0.1, -0.2, 0.3, -0.05]
        a, b, c, d = (p.torch.tensor(v) for v in init)
        res[fw].append(p.tensors_manual(x, y, a, b, c, d, steps))
        a, b, c, d = (p.torch.tensor(v, requires_grad=True) for v in init)
        res[fw].append(p.autograd_fit(x, y, a, b, c, d, steps))
        a, b, c, d = (p.torch.tensor(v, requires_grad=True) for v in (0.0, -1.0, 0.0, 0.3))
        res[fw].append(p.legendre_fit(x, y, a, b, c, d, steps))
        xx = p.features(x)
        assert tuple(xx.shape) == (2000, 3)
        res[fw].append(p.nn_fit(xx, y, mods[0], steps))
        res[fw].append(p.optim_fit(xx, y, mods[1], steps))
        res[fw].append(p.module_fit(x, y, mods[2], steps))
    out = capsys.readouterr().out
    assert out.count("Result: y = ") == 10
    np.testing.assert_allclose(res["clgrad"], res["torch"], rtol=1e-4)


# -- nn.Transformer tutorial -----------------------------------------------------------------

def test_transformer_lm_runs(programs, capsys):
    history, best_val, clf_losses, acc = load_program("transformer_lm").main(epochs=2)
    assert "| end of epoch   1 |" in capsys.readouterr().out
    # chance: ln(35 tokens) = 3.56; lr 5.0 and dropout make it noisy (measured 1.47, 1.50)
    assert np.all(np.isfinite(history)) and best_val < 3.0
    assert clf_losses[-1] < 0.1 * clf_losses[0] and acc == 1.0


def test_transformer_lm_matches_pytorch():
    torch, tp, cp = _both("transformer_lm")
    res = []
    tm = tp.TransformerModel(30, 16, 2, 32, 2, dropout=0.0)
    cm = cp.TransformerModel(30, 16, 2, 32, 2, dropout=0.0)
    _copy(tm, cm)
    tc, cc = tp.TextClassifier(30, d_model=16), cp.TextClassifier(30, d_model=16)
    _copy(tc, cc)
    for p, m, clf in ((tp, tm, tc), (cp, cm, cc)):
        vocab = p.Vocab(p.TEXT.split())
        data = p.data_process(vocab, p.TEXT)[:130]
        train_data = p.batchify(data, 4)
        opt = p.torch.optim.SGD(m.parameters(), lr=5.0)
        sched = p.torch.optim.lr_scheduler.StepLR(opt, 1.0, gamma=0.95)
        crit = p.nn.CrossEntropyLoss()
        r = p.train(m, train_data, crit, opt, sched, 30, 1)
        r.append(p.evaluate(m, p.batchify(data[100:], 2), crit, 30))
        x, y = p.classifier_data(vocab)
        opt = p.torch.optim.Adam(clf.parameters(), lr=1e-2)
        for step in range(4):
            loss = p.nn.functional.cross_entropy(clf(x, causal=step % 2 == 1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            r.append(loss.item())
        res.append(r)
    np.testing.assert_allclose(res[1], res[0], rtol=1e-5)


# -- VAE -------------------------------------------------------------------------------------

def test_vae_runs(programs, capsys):
    _, history = load_program("vae").main(["--epochs", "2"])
    assert "====> Test set loss:" in capsys.readouterr().out
    assert history[1][0] < history[0][0] and history[1][1] < history[0][1]


def test_vae_loss_matches_pytorch():
    torch, tp, cp = _both("vae")
    tm, cm = tp.VAE(), cp.VAE()
    _copy(tm, cm)
    res = []
    for p, m in ((tp, tm), (cp, cm)):
        x, _ = p.blobs(16)
        opt = p.optim.Adam(m.parameters(), lr=1e-3)
        r = []
        for _ in range(3):
            mu, logvar = m.encode(x.view(-1, 784))
            recon = m.decode(mu + 0.1 * p.torch.exp(0.5 * logvar))   # a fixed "eps"
            loss = p.loss_function(recon, x, mu, logvar)
            opt.zero_grad()
            loss.backward()
            opt.step()
            r.append(loss.item())
        res.append(r)
    np.testing.assert_allclose(res[1], res[0], rtol=1e-5)


# -- DCGAN tutorial --------------------------------------------------------------------------

def test_tiny_gan_runs(capsys):
    G_losses, D_losses, img_list = load_program("tiny_gan").main(num_epochs=1)
    assert "ConvTranspose2d(8, 32, kernel_size=(4, 4), stride=(1, 1), bias=False)" in \
        capsys.readouterr().out
    assert len(G_losses) == 4 and all(np.isfinite(G_losses + D_losses))
    assert tuple(img_list[0].shape) == (16, 1, 16, 16)


def test_tiny_gan_steps_match_pytorch():
    torch, tp, cp = _both("tiny_gan")
    nets = []
    for p in (tp, cp):
        G, D = p.Generator(), p.Discriminator()
        G.apply(p.weights_init)
        D.apply(p.weights_init)
        nets.append((G, D))
    for t, c in zip(*nets):
        _copy(t, c)
    noise = np.sin(np.arange(16 * 8, dtype=np.float32)).reshape(16, 8, 1, 1)
    res = []
    for p, (G, D) in zip((tp, cp), nets):
        optD = p.optim.Adam(D.parameters(), lr=0.0002, betas=(0.5, 0.999))
        optG = p.optim.Adam(G.parameters(), lr=0.0002, betas=(0.5, 0.999))
        real = p.rings(16)
        res.append([p.train_step(G, D, optG, optD, p.nn.BCELoss(), real,
                                 p.torch.tensor(noise), "cpu") for _ in range(3)])
    np.testing.assert_allclose(np.array(res[1]), np.array(res[0]), rtol=1e-5, atol=1e-6)


# -- LSTM on packed sequences ----------------------------------------------------------------

def test_names_lstm_runs(capsys):
    losses, acc, gen_losses, names = load_program("names_lstm").main(epochs=4)
    assert "Tanaka -> " in capsys.readouterr().out
    assert losses[-1] < losses[0] and gen_losses[-1] < gen_losses[0]
    assert [n[0] for n in names] == list("SRT") and all(len(n) <= 9 for n in names)


def test_names_lstm_matches_pytorch():
    torch, tp, cp = _both("names_lstm")
    tm, cm = tp.CharLSTM(tp.n_letters, 8, 16, 3), cp.CharLSTM(cp.n_letters, 8, 16, 3)
    tg, cg = tp.CharGenerator(tp.n_letters, 16), cp.CharGenerator(cp.n_letters, 16)
    _copy(tm, cm)
    _copy(tg, cg)
    res = []
    for p, m, g in ((tp, tm, tg), (cp, cm, cg)):
        loader = p.DataLoader(p.NamesDataset(), batch_size=8, shuffle=False,
                              collate_fn=p.collate_batch)
        names = [n for ns in p.NAMES.values() for n in ns]
        res.append(p.train_classifier(m, loader, 2) + p.train_generator(g, names, 3))
    np.testing.assert_allclose(res[1], res[0], rtol=1e-5)


# -- checkpoint / resume ---------------------------------------------------------------------

def test_checkpoint_resume_runs(programs, capsys):
    _, history, lrs, final = load_program("checkpoint_resume").main([])
    out = capsys.readouterr().out
    assert "Resumed from epoch 1" in out and len(history) == 4
    assert history[-1][0] < history[0][0]
    # OneCycleLR's lr after each epoch of 4 batches: PyTorch 2.14's values
    assert lrs == pytest.approx([0.005559840141227016, 0.0007664159383425634], rel=1e-12)
    assert final[1] > 0.4


def test_checkpoint_resume_matches_pytorch_and_loads_there(programs):
    torch, tp, cp = _both("checkpoint_resume")
    tm, cm = tp.MLP(p=0.0), cp.MLP(p=0.0)
    _copy(tm, cm)
    res = []
    for p, m in ((tp, tm), (cp, cm)):
        loader = p.DataLoader(p.SpiralDataset(), batch_size=30, shuffle=False,
                              collate_fn=p.collate_fn)
        opt = p.torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
        sched = p.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        crit = p.nn.CrossEntropyLoss()
        r = []
        for _ in range(2):
            r += [*p.train_one_epoch(m, loader, opt, crit), *p.evaluate(m, loader, crit)]
            sched.step()
        one = p.lr_scheduler.OneCycleLR(opt, max_lr=0.01, epochs=1, steps_per_epoch=4)
        r += [*p.train_one_epoch(m, loader, opt, crit, one), one.get_last_lr()[0]]
        p.save_checkpoint(f"{p.__name__}.pth", m, opt, sched, 1, r[-2])
        res.append(r)
    np.testing.assert_allclose(res[1], res[0], rtol=1e-5)
    # clgrad's checkpoint (model, SGD momentum buffers, StepLR) resumes in PyTorch
    ck = torch.load(f"{cp.__name__}.pth")
    ref = torch.load(f"{tp.__name__}.pth")
    assert ck['epoch'] == 1 and ck['scheduler']['last_epoch'] == 2
    assert ck['scheduler']['_last_lr'] == pytest.approx(ref['scheduler']['_last_lr'])
    m2 = tp.MLP(p=0.0)
    m2.load_state_dict(ck['model_state_dict'])
    opt2 = torch.optim.SGD(m2.parameters(), lr=0.05, momentum=0.9)
    opt2.load_state_dict(ck['optimizer_state_dict'])
    for k, v in ref['optimizer_state_dict']['state'].items():
        np.testing.assert_allclose(opt2.state_dict()['state'][k]['momentum_buffer'].numpy(),
                                   v['momentum_buffer'].numpy(), rtol=1e-4, atol=1e-6)
