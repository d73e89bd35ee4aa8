"""clgrad.jit's markers run programs eagerly: ScriptModule subclasses with script_method,
ignore, unused, is_scripting (issue 33); hand values, and real TorchScript where installed."""
import numpy as np
import pytest

import clgrad


def _scripted(lib):
    """An old-style TorchScript module written against ``lib`` (clgrad or torch)."""
    jit = lib.jit

    class Affine(jit.ScriptModule):
        __constants__ = ["scale"]

        def __init__(self):
            super().__init__()
            self.scale = 2.0
            self.lin = lib.nn.Linear(3, 2)
            with lib.no_grad():
                self.lin.weight.copy_(lib.tensor([[1.0, 0.0, -1.0], [0.5, 0.5, 0.5]]))
                self.lin.bias.copy_(lib.tensor([0.25, -0.25]))

        @jit.script_method
        def forward(self, x):
            y = self.lin(x) * self.scale
            if jit.is_scripting():
                return y
            return self.eager_only(y)

        @jit.ignore
        def eager_only(self, y):
            return y

        @jit.unused
        def never_called(self, y):
            return y + 1
    return Affine()


def test_script_module_runs_eagerly_with_hand_values():
    m = _scripted(clgrad)
    assert isinstance(m, clgrad.nn.Module) and isinstance(m, clgrad.jit.ScriptModule)
    assert clgrad.jit.is_scripting() is False
    assert clgrad.jit.script(m) is m  # an already scripted module comes back unchanged
    x = clgrad.tensor([[1.0, 2.0, 3.0], [-1.0, 0.0, 4.0]], requires_grad=True)
    y = m(x)
    w = np.array([[1.0, 0.0, -1.0], [0.5, 0.5, 0.5]])
    want = (np.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 4.0]]) @ w.T + [0.25, -0.25]) * 2.0
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.tile(w.sum(0) * 2.0, (2, 1)), rtol=1e-6)
    assert [n for n, _ in m.named_parameters()] == ["lin.weight", "lin.bias"]
    assert m.never_called(clgrad.tensor([1.0])).tolist() == [2.0]
    with pytest.raises(NotImplementedError, match="state_dict"):
        m.save("m.pt")


def test_script_module_matches_torchscript():
    torch = pytest.importorskip("torch")
    ours, theirs = _scripted(clgrad), _scripted(torch)
    assert isinstance(theirs, torch.jit.ScriptModule)  # compiled by TorchScript
    x = np.array([[1.5, -2.0, 0.5], [3.0, 1.0, -4.0]], np.float32)
    np.testing.assert_allclose(ours(clgrad.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-6)
