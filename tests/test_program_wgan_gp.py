"""The WGAN-GP program (tests/programs/wgan_gp.py): a gradient penalty through
autograd.grad(create_graph=True), as PyTorch-GAN writes it. It runs under clgrad with only its
imports rewritten; its penalty's gradient matches float64 finite differences; where PyTorch
is importable, critic and generator steps from copied weights on the same data agree."""
import numpy as np
from test_programs import PROGRAMS, _torch, load_program, rewrite_imports

import clgrad


def test_wgan_gp_differs_from_pytorch_only_in_imports():
    source = (PROGRAMS / "wgan_gp.py").read_text()
    assert "clgrad" not in source
    rewrite_imports(source)


def test_wgan_gp_runs(capsys):
    history, generator, discriminator = load_program("wgan_gp").main(n_epochs=1, n=48)
    assert "[GP:" in capsys.readouterr().out
    assert len(history) == 3
    assert all(np.isfinite(d) and np.isfinite(gp) and gp >= 0 for d, gp, _ in history)
    assert history[0][2] is not None and np.isfinite(history[0][2])
    # the penalty trained the critic: its weights got gradients and moved
    assert all(p.grad is not None for p in discriminator.parameters())


def test_wgan_gp_penalty_gradient_matches_finite_differences():
    prog = load_program("wgan_gp")
    clgrad.manual_seed(1)
    D = prog.Discriminator().double()
    real = prog.blobs(4).double()
    rng = np.random.default_rng(2)
    fake = clgrad.tensor(rng.uniform(-1, 1, (4, 1, 8, 8)))
    alpha = clgrad.tensor(rng.uniform(size=(4, 1, 1, 1)))
    gp = prog.compute_gradient_penalty(D, real, fake, alpha)
    gp.backward()
    for p in (D.model[0].weight, D.adv_layer.weight):
        base = p.detach().numpy().copy()
        for k in (0, 5, base.size - 1):
            vals = []
            for sign in (1, -1):
                v = base.copy()
                v.reshape(-1)[k] += sign * 1e-6
                with clgrad.no_grad():
                    p.copy_(clgrad.tensor(v))
                vals.append(prog.compute_gradient_penalty(D, real, fake, alpha).item())
            with clgrad.no_grad():
                p.copy_(clgrad.tensor(base))
            np.testing.assert_allclose(p.grad.numpy().reshape(-1)[k],
                                       (vals[0] - vals[1]) / 2e-6, rtol=1e-5, atol=1e-9)


def test_wgan_gp_steps_match_pytorch():
    torch = _torch()
    tp, cp = load_program("wgan_gp", "torch"), load_program("wgan_gp")
    torch.manual_seed(0)
    nets = []
    for p in (tp, cp):
        nets.append([p.Generator(), p.Discriminator()])
    for tm, cm in zip(*nets):
        cm.load_state_dict({k: clgrad.tensor(v.detach().numpy())
                            for k, v in tm.state_dict().items()})
    real = tp.blobs(16).numpy()
    results = []
    for lib, p, (G, D) in ((torch, tp, nets[0]), (clgrad, cp, nets[1])):
        opt_G = lib.optim.Adam(G.parameters(), lr=p.lr, betas=(p.b1, p.b2))
        opt_D = lib.optim.Adam(D.parameters(), lr=p.lr, betas=(p.b1, p.b2))
        r = np.random.default_rng(0)
        out = []
        for step in range(4):
            z = lib.tensor(r.standard_normal((16, p.latent_dim)).astype(np.float32))
            alpha = lib.tensor(r.uniform(size=(16, 1, 1, 1)).astype(np.float32))
            out.append(p.critic_step(G, D, opt_D, lib.tensor(real), z, alpha))
            if step % 2 == 0:
                out.append((p.generator_step(G, D, opt_G, z),))
        results.append((out, [v.detach().numpy() for v in D.state_dict().values()]))
    for a, b in zip(results[0][0], results[1][0]):
        np.testing.assert_allclose(b, a, rtol=2e-5, atol=1e-6)
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)
