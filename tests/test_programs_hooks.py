"""A public-style program on module hooks (issue 33): tests/programs/feature_extraction.py,
run with only the imports swapped. Forward hooks fill a feature dict, Grad-CAM takes a
layer's output and its gradient from a forward and a full backward hook, the global forward
hook gathers per-layer statistics. Checked against NumPy on the program's own model, and
against PyTorch on copied weights where torch is installed."""
import math

import numpy as np
import pytest
from test_programs import PROGRAMS, load_program, rewrite_imports

import clgrad


def test_feature_extraction_differs_from_pytorch_only_in_imports():
    source = (PROGRAMS / "feature_extraction.py").read_text()
    assert "clgrad" not in source
    rewrite_imports(source)


def _cam_numpy(model, x):
    """Grad-CAM on conv2 by hand: conv2's output a, the class score's gradient through
    relu, 2x2 max-pool and fc, the channel weights and the normalised map."""
    with clgrad.no_grad():
        h = model.pool(clgrad.relu(model.bn1(model.conv1(x))))
        a = model.conv2(h).numpy().astype(np.float64)
        logits = model(x).numpy()
    k = logits.argmax(1)
    r = np.maximum(a, 0)
    n, c, hh, ww = r.shape
    win = r.reshape(n, c, hh // 2, 2, ww // 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(
        n, c, hh // 2, ww // 2, 4)
    first_max = np.eye(4)[win.argmax(-1)]            # the max-pool's chosen element
    g_pool = model.fc.weight.detach().numpy().astype(np.float64)[k].reshape(n, c, hh // 2, ww // 2)
    g = (first_max * g_pool[..., None]).reshape(n, c, hh // 2, ww // 2, 2, 2).transpose(
        0, 1, 2, 4, 3, 5).reshape(n, c, hh, ww) * (a > 0)
    cam = np.maximum((g.mean((2, 3), keepdims=True) * a).sum(1), 0)
    return cam / (cam.max((1, 2), keepdims=True) + 1e-8), k, g


def test_feature_extraction_program_runs_and_hooks_see_the_layers(programs, capsys):
    prog = load_program("feature_extraction")
    model, feats, logits, heatmap, stats, losses = prog.main(["--steps", "12"])
    out = capsys.readouterr().out
    assert "grad-cam: (8, 8, 8)" in out and "conv1: (8, 8, 16, 16)" in out
    assert np.mean(losses[-4:]) < np.mean(losses[:4]) and losses[0] < math.log(10) + 0.5
    x = clgrad.from_numpy(prog.digits16(train=False, n=8)[0])
    with clgrad.no_grad():
        c1 = model.conv1(x)
        c2 = model.conv2(model.pool(clgrad.relu(model.bn1(c1))))
    np.testing.assert_array_equal(feats["conv1"].numpy(), c1.numpy())
    np.testing.assert_array_equal(feats["conv2"].numpy(), c2.numpy())
    np.testing.assert_array_equal(feats["fc"].numpy(), logits.numpy())
    cam, k, _ = _cam_numpy(model, x)
    np.testing.assert_allclose(heatmap.numpy(), cam, rtol=1e-4, atol=1e-5)
    assert list(stats) == ["conv1", "conv2", "fc"]
    f = feats["fc"].numpy().astype(np.float64)
    np.testing.assert_allclose(stats["fc"], (f.mean(), f.std(ddof=1), (f > 0).mean()),
                               rtol=1e-5)
    assert not model.conv2._forward_hooks and not model.conv2._backward_hooks  # removed


def test_feature_extraction_matches_pytorch(programs, capsys):
    torch = pytest.importorskip("torch")
    tp, cp = load_program("feature_extraction", "torch"), load_program("feature_extraction")
    torch.manual_seed(0)
    tm, cm = tp.Net(), cp.Net()
    cm.load_state_dict({k: clgrad.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})
    tm.eval()
    cm.eval()
    x = tp.digits16(train=False, n=8)[0]
    tx, cx = torch.from_numpy(x), clgrad.from_numpy(x)
    for prog, m, xx in ((tp, tm, tx), (cp, cm, cx)):
        m.conv2.register_forward_hook(prog.get_activation("conv2"))
        m.fc.register_forward_hook(prog.get_activation("fc"))
        with prog.torch.no_grad():
            m(xx)
    for name in ("conv2", "fc"):
        np.testing.assert_allclose(cp.activation[name].numpy(), tp.activation[name].numpy(),
                                   rtol=1e-5, atol=1e-5)
    tcam, cgc = tp.GradCAM(tm, tm.conv2), cp.GradCAM(cm, cm.conv2)
    (th, tk), (ch, ck) = tcam(tx), cgc(cx)
    assert ck.tolist() == tk.tolist()
    np.testing.assert_allclose(cgc.gradients.numpy(), tcam.gradients.numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(ch.numpy(), th.numpy(), rtol=1e-4, atol=1e-5)
    ts, cs = tp.activation_stats(tm, tx), cp.activation_stats(cm, cx)
    assert list(ts) == list(cs)
    for k in ts:
        np.testing.assert_allclose(cs[k], ts[k], rtol=1e-4, atol=1e-6)
