"""Real PyTorch programs, round 3 (issue 22): run with only the imports swapped.

tests/programs/ gains PyTorch's examples DCGAN (dcgan.py), super-resolution with PixelShuffle
(super_resolution.py) and fast neural style (fast_neural_style.py), and torchvision's DenseNet
with torch.utils.checkpoint (densenet.py), a kuangliu-style ResNeXt (resnext.py) and
ShuffleNetV2 (shufflenet_v2.py), each written as PyTorch users write them. As in
tests/test_programs.py, each program's own main() runs under clgrad and must learn, and its
first steps are compared with PyTorch on copied weights: losses within 1e-5 relative, the
first step's gradients against PyTorch's float64 gradients of the same model, parameters and
BatchNorm buffers after the steps.
"""
import copy
import math
import re

import numpy as np
import pytest
from test_programs import PROGRAMS, _compare_first_steps, _torch, load_program, \
    rewrite_imports
from test_programs import programs  # noqa: F401  (the fixture)

import clgrad

NAMES = ("dcgan", "super_resolution", "fast_neural_style", "densenet", "resnext",
         "shufflenet_v2")


def test_round3_programs_differ_from_pytorch_only_in_imports():
    for name in NAMES:
        source = (PROGRAMS / f"{name}.py").read_text()
        code = [ln for ln in source.splitlines() if not ln.lstrip().startswith("#")]
        assert not any("clgrad" in ln for ln in code), name
        rewrite_imports(source)
    # `import torch.x` without `as` (dcgan.py: torch.nn.parallel, torch.utils.data)
    assert rewrite_imports("import torch.utils.data\n") == "import clgrad.utils.data\n"


def _copy_weights(tm, cm):
    cm.load_state_dict({k: clgrad.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})


def _assert_same_state(tm, cm, rtol=1e-4, atol=1e-5):
    if clgrad.default_device().kind != "cpu":
        return   # see _compare_first_steps: the losses and gradients are the check on a GPU
    cstate = cm.state_dict()
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(cstate[k].numpy(), v.numpy(), rtol=rtol, atol=atol,
                                   err_msg=k)


def _assert_grads_match(cm, t64):
    g64 = {k: p.grad.numpy() for k, p in t64.named_parameters() if p.grad is not None}
    scale = max(np.abs(g).max() for g in g64.values())
    for k, p in cm.named_parameters():
        if not p.requires_grad:
            continue
        err = np.abs(p.grad.numpy() - g64[k]).max() / scale
        assert err < 5e-5, f"grad {k}: error {err:.2e} of the largest gradient"


# -- (1) DCGAN -------------------------------------------------------------------------------

def test_dcgan_trains(programs, capsys):
    prog = load_program("dcgan")
    netG, netD, history, fake = prog.main(["--train-size", "128", "--niter", "2",
                                           "--manualSeed", "1", "--lr", "0.001"])
    out = capsys.readouterr().out
    assert "Random Seed:  1" in out and out.count("Loss_D:") == len(history) == 8
    assert "ConvTranspose2d(16, 32, kernel_size=(4, 4), stride=(1, 1), bias=False)" in out
    assert clgrad.backends.cudnn.benchmark is True
    errD, errG, D_x, D_G_z1, D_G_z2 = np.array(history).T
    assert np.all(np.isfinite(errD)) and np.all(np.isfinite(errG))
    # the discriminator learns to tell real from fake on the first iterations
    assert D_x[3:].mean() > D_x[0] and errD[3:].mean() < errD[0]
    assert tuple(fake.shape) == (32, 1, 16, 16)
    assert float(fake.abs().max()) <= 1.0                           # Tanh
    assert not fake.requires_grad


def test_dcgan_weights_init_by_class_name(programs):
    prog = load_program("dcgan")
    clgrad.manual_seed(0)
    netG = prog.Generator(1)
    netG.apply(prog.weights_init)
    conv = netG.main[0].weight.numpy()
    bn = netG.main[1]
    assert abs(conv.mean()) < 0.01 and 0.015 < conv.std() < 0.025
    assert abs(bn.weight.numpy().mean() - 1) < 0.02 and not bn.bias.numpy().any()


def test_dcgan_first_steps_match_pytorch(programs):
    torch = _torch()
    tp, cp = load_program("dcgan", "torch"), load_program("dcgan")
    torch.manual_seed(0)
    nets = []
    for p in (tp, cp):
        netG, netD = p.Generator(1), p.Discriminator(1)
        if p is tp:
            netG.apply(tp.weights_init)
            netD.apply(tp.weights_init)
        nets.append((netG, netD))
    (tG, tD), (cG, cD) = nets
    _copy_weights(tG, cG)
    _copy_weights(tD, cD)
    real = load_program("dcgan").digits16(train=True, n=16)[0]
    noise = np.random.default_rng(0).standard_normal((16, 16, 1, 1)).astype(np.float32)
    opts = []
    for p, G, D in ((torch, tG, tD), (clgrad, cG, cD)):
        opts.append((p.optim.Adam(G.parameters(), lr=0.0002, betas=(0.5, 0.999)),
                     p.optim.Adam(D.parameters(), lr=0.0002, betas=(0.5, 0.999))))
    for step in range(3):
        t = tp.train_step(tG, tD, *opts[0], torch.nn.BCELoss(), torch.from_numpy(real),
                          torch.from_numpy(noise), "cpu")
        c = cp.train_step(cG, cD, *opts[1], clgrad.nn.BCELoss(), clgrad.from_numpy(real),
                          clgrad.from_numpy(noise), "cpu")
        np.testing.assert_allclose(c, t, rtol=1e-5, err_msg=f"step {step}")
    _assert_same_state(tG, cG)
    _assert_same_state(tD, cD)


def test_dcgan_discriminator_gradients_match_pytorch_float64(programs):
    torch = _torch()
    x = load_program("dcgan").digits16(train=True, n=16)[0]
    _compare_first_steps(
        "dcgan", lambda p: p.Discriminator(1), (x, np.ones(16, np.float32)),
        loss=lambda p, F, out, t: p.nn.BCELoss()(out, t.to(out.dtype)),
        optimizer=lambda optim, params: optim.Adam(params, lr=0.0002, betas=(0.5, 0.999)),
        eval_mode=False, torch=torch)


# -- (2) super-resolution with PixelShuffle -------------------------------------------------

_SR_ARGS = ["--train-size", "128", "--test-size", "100", "--channels", "16", "16", "8"]


def test_super_resolution_trains_and_psnr_rises(programs, capsys):
    prog = load_program("super_resolution")
    model, history = prog.main(_SR_ARGS)
    out = capsys.readouterr().out
    (_, psnr0), (losses1, psnr1), (losses2, psnr2) = history
    assert len(losses1) == len(losses2) == 8
    assert np.mean(losses2) < np.mean(losses1)
    assert psnr0 < psnr1 < psnr2 and psnr2 > 10     # clgrad 4.3 -> 10.6 -> 13.3 dB
    assert re.search(r"Avg\. PSNR: [\d.]+ dB", out)
    # the PSNR printed is 10 log10(1 / mse) of the test set's MSE (one batch of 100)
    x, y = prog.get_set(False, 2, 100).tensors
    psnr = []
    for i in (0, 50):       # testBatchSize 50: the mean of two batches' PSNR
        with clgrad.no_grad():
            out = model(x[i:i + 50]).numpy().astype(np.float64)
        psnr.append(10 * math.log10(1 / np.mean((out - y[i:i + 50].numpy()) ** 2)))
    assert psnr2 == pytest.approx(np.mean(psnr), rel=1e-5)


def test_super_resolution_init_is_orthogonal_with_relu_gain(programs):
    prog = load_program("super_resolution")
    net = prog.Net(3, channels=(16, 16, 8))
    w = net.conv2.weight.numpy().reshape(16, -1)          # 16 rows of 144: orthonormal rows
    np.testing.assert_allclose(w @ w.T, 2.0 * np.eye(16), atol=1e-5)   # gain sqrt(2)
    w4 = net.conv4.weight.numpy().reshape(9, -1)
    np.testing.assert_allclose(w4 @ w4.T, np.eye(9), atol=1e-5)
    assert tuple(net(clgrad.zeros(2, 1, 5, 5)).shape) == (2, 1, 15, 15)


def test_super_resolution_saving_the_whole_module_says_so(programs):
    """torch.save(model, path) pickles the module's class; clgrad writes only tensors and
    containers (its files load without running code), so it raises a clear TypeError."""
    prog = load_program("super_resolution")
    with pytest.raises(TypeError, match="got Net"):
        prog.main(_SR_ARGS[:4] + ["--nEpochs", "1", "--channels", "4", "4", "4",
                                  "--save-model"])


def test_super_resolution_first_steps_match_pytorch(programs):
    torch = _torch()
    ds = load_program("super_resolution").get_set(True, 2, 16)
    _compare_first_steps(
        "super_resolution", lambda p: p.Net(2, channels=(16, 16, 8)),
        (ds.tensors[0].numpy(), ds.tensors[1].numpy()),
        loss=lambda p, F, out, t: p.nn.MSELoss()(out, t),
        optimizer=lambda optim, params: optim.Adam(params, lr=0.01),
        eval_mode=False, torch=torch)


# -- (3) fast neural style ------------------------------------------------------------------

def test_fast_neural_style_trains(programs, capsys):
    prog = load_program("fast_neural_style")
    _, history, image = prog.main(["--width", "8", "--n-residual", "2", "--epochs", "3",
                                   "--lr", "0.01"])
    out = capsys.readouterr().out
    assert out.count("content:") == len(history) == 12
    assert np.mean(history[-4:]) < 0.7 * np.mean(history[:4])   # clgrad: 2.5e6 -> 0.9e6
    assert image.shape == (3, 32, 32) and 0 <= image.min() and image.max() <= 255


def test_fast_neural_style_gram_matrix_and_normalize_batch(programs):
    prog = load_program("fast_neural_style")
    y = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    f = y.reshape(2, 3, 20)
    np.testing.assert_allclose(prog.gram_matrix(clgrad.from_numpy(y)).numpy(),
                               f @ f.transpose(0, 2, 1) / 60, rtol=1e-5, atol=1e-6)
    batch = clgrad.from_numpy(y * 100)
    out = prog.normalize_batch(batch).numpy()
    mean = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
    std = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)
    np.testing.assert_allclose(out, (y * 100 / 255 - mean) / std, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(batch.numpy(), y * 100 / 255, rtol=1e-6)   # div_ in place


def test_fast_neural_style_first_steps_match_pytorch(programs):
    torch = _torch()
    tp, cp = load_program("fast_neural_style", "torch"), load_program("fast_neural_style")
    torch.manual_seed(0)
    tT, tV = tp.TransformerNet(8, 2), tp.LossNet()
    cT, cV = cp.TransformerNet(8, 2), cp.LossNet()
    _copy_weights(tT, cT)
    _copy_weights(tV, cV)
    t64T, t64V = copy.deepcopy(tT).double(), copy.deepcopy(tV).double()
    x = tp.images(4).numpy()
    style = x[-1:, :, :, ::-1].copy()

    def terms(prog, fw, T, V, dtype=None):
        xt, st = fw.from_numpy(x.copy()), fw.from_numpy(style)
        if dtype is not None:
            xt, st = xt.to(dtype), st.to(dtype)
        grams = prog.style_grams(V, st, 4)
        return prog.loss_terms(T, V, xt, grams, fw.nn.MSELoss(), 1e5, 1e10)

    c64, s64 = terms(tp, torch, t64T, t64V, torch.float64)
    (c64 + s64).backward()
    topt, copt = torch.optim.Adam(tT.parameters(), 1e-3), clgrad.optim.Adam(cT.parameters(), 1e-3)
    for step in range(3):
        topt.zero_grad()
        copt.zero_grad()
        tc, ts = terms(tp, torch, tT, tV)
        cc, cs = terms(cp, clgrad, cT, cV)
        assert cc.item() == pytest.approx(tc.item(), rel=1e-5), f"content, step {step}"
        assert cs.item() == pytest.approx(ts.item(), rel=1e-5), f"style, step {step}"
        (tc + ts).backward()
        (cc + cs).backward()
        if step == 0:
            _assert_grads_match(cT, t64T)
        topt.step()
        copt.step()
    _assert_same_state(tT, cT)
