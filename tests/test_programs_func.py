"""Real PyTorch programs using torch.func: the "Per-sample-gradients" tutorial
(tests/programs/per_sample_grads.py: functional_call + vmap(grad(compute_loss),
in_dims=(None, None, 0, 0)) against a loop of autograd.grad over the examples).

The program's main() runs under clgrad with only its imports rewritten, and its own assertion
(the two ways agree) must hold; the per-sample gradients must also average to the mini-batch
gradient of loss.backward() (an oracle of its own). Where PyTorch is importable, the torch.func
version runs in both frameworks from copied weights on the same data and must agree.
"""
import numpy as np
from test_programs import PROGRAMS, _torch, load_program, rewrite_imports

import clgrad


def test_per_sample_grads_differs_from_pytorch_only_in_imports():
    source = (PROGRAMS / "per_sample_grads.py").read_text()
    assert "clgrad" not in source
    rewrite_imports(source)


def test_per_sample_grads_runs_and_averages_to_the_batch_gradient(programs, capsys):
    prog = load_program("per_sample_grads")
    clgrad.manual_seed(0)
    model, data, targets, loop, ft = prog.main(batch_size=4)
    assert "clgrad.Size([4, 32, 1, 3, 3])" in capsys.readouterr().out
    names = [n for n, _ in model.named_parameters()]
    assert list(ft) == names
    for (name, p), a, b in zip(model.named_parameters(), loop, ft.values()):
        assert tuple(b.shape) == (4, *p.shape)
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-7)
        # the mean loss's gradient (main's loss.backward()) is the mean per-sample gradient
        np.testing.assert_allclose(b.numpy().mean(0), p.grad.numpy(), rtol=1e-4, atol=1e-7)


def test_per_sample_grads_matches_pytorch():
    torch = _torch()
    torch.manual_seed(0)
    tp, cp = load_program("per_sample_grads", "torch"), load_program("per_sample_grads")
    tm, cm = tp.SimpleCNN(), cp.SimpleCNN()
    cm.load_state_dict({k: clgrad.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})
    data, targets = tp.make_data(3)
    tg = tp.ft_per_sample_grads_of(tm, data, targets)
    cg = cp.ft_per_sample_grads_of(cm, clgrad.tensor(data.numpy()),
                                   clgrad.tensor(targets.numpy()))
    assert list(cg) == list(tg)
    for k in tg:
        np.testing.assert_allclose(cg[k].numpy(), tg[k].numpy(), rtol=1e-4, atol=1e-6)
