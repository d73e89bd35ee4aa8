"""Real PyTorch programs run with only the import changed (issue 13).

tests/programs/ holds PyTorch programs written as PyTorch users write them (`import torch`,
`import torch.nn as nn`, `from torch.utils.data import ...`): the MNIST example of PyTorch's
examples repository, the CIFAR-10 "Training a classifier" tutorial, the "What is torch.nn
really?" tutorial, and torchvision's ResNet (BasicBlock) and MobileNetV2 in small training
loops. Their dataset downloads are replaced by local data (tests/programs/local_data.py).

`load_program` rewrites only the import lines (`import torch` -> `import clgrad as torch`,
`torch.x` -> `clgrad.x` in `import`/`from` lines) and checks that nothing else changed; the
tests run each program's own main() and assert that it learns. Where torch is importable, the
same file runs unchanged under PyTorch, and the first training steps are compared with copied
weights on the same batch: losses within 1e-5 relative, gradients against PyTorch's float64
gradients of the same model, parameters and BatchNorm buffers after the steps.
"""
import math
import re
import types
import zipfile
from pathlib import Path

import numpy as np
import pytest

import clgrad

PROGRAMS = Path(__file__).parent / "programs"

# (pattern, replacement) for import lines only: the one change a user makes.
_IMPORTS = [
    (re.compile(r"^import torch$", re.M), "import clgrad as torch"),
    (re.compile(r"^import torch\.([\w.]+) as (\w+)$", re.M), r"import clgrad.\1 as \2"),
    (re.compile(r"^import torch\.([\w.]+)$", re.M), r"import clgrad.\1"),  # binds `clgrad`
    (re.compile(r"^from torch\.([\w.]+) import ", re.M), r"from clgrad.\1 import "),
    (re.compile(r"^from torch import ", re.M), "from clgrad import "),
]


def rewrite_imports(source: str) -> str:
    """`source` with its torch imports pointed at clgrad; every other line unchanged."""
    new = source
    for pattern, repl in _IMPORTS:
        new = pattern.sub(repl, new)
    old_lines, new_lines = source.splitlines(), new.splitlines()
    assert len(old_lines) == len(new_lines)
    for a, b in zip(old_lines, new_lines):
        if a != b:
            assert a.startswith(("import torch", "from torch")), (a, b)
    assert re.search(r"^\s*(import|from) torch\b", new, re.M) is None, "a torch import is left"
    return new


def load_program(name: str, framework: str = "clgrad") -> types.ModuleType:
    """Execute tests/programs/<name>.py as a module (its main() not run), under clgrad (the
    imports rewritten) or under PyTorch (the file as it is)."""
    path = PROGRAMS / f"{name}.py"
    source = path.read_text()
    if framework == "clgrad":
        source = rewrite_imports(source)
    module = types.ModuleType(f"program_{name}_{framework}")
    module.__file__ = str(path)
    # A program's import-time `DEVICE = "cuda" if torch.cuda.is_available() else "cpu"` picks
    # the CPU here, for the PyTorch reference (on a machine with CUDA it would run on the GPU,
    # with TF32 convolutions and tensors that .numpy() refuses) and for clgrad unless the
    # default device is a GPU (CLGRAD_DEVICE=gpu: the programs' GPU paths): the tests feed
    # both the CPU tensors they make themselves
    if framework == "clgrad":
        lib = clgrad
        hide = clgrad.default_device().kind == "cpu"
    else:
        import torch as lib
        hide = True
    real = lib.cuda.is_available
    if hide:
        lib.cuda.is_available = lambda: False
    try:
        exec(compile(source, str(path), "exec"), module.__dict__)
    finally:
        lib.cuda.is_available = real
    return module


def copy_state(tm, cm) -> None:
    """Load a PyTorch module's state into the clgrad module ``cm`` (the same weights)."""
    cm.load_state_dict({k: clgrad.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})


def load_both(name: str):
    """(torch seeded 0, the program under PyTorch, the program under clgrad)."""
    torch = _torch()
    torch.manual_seed(0)
    return torch, load_program(name, "torch"), load_program(name)


def _torch():
    return pytest.importorskip("torch")


def test_rewrite_changes_only_import_lines():
    src = ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
           "from torch.optim.lr_scheduler import StepLR\nfrom torch import nn\n"
           "x = torch.zeros(2)  # import torch\n")
    assert rewrite_imports(src) == (
        "import clgrad as torch\nimport clgrad.nn as nn\nimport clgrad.nn.functional as F\n"
        "from clgrad.optim.lr_scheduler import StepLR\nfrom clgrad import nn\n"
        "x = torch.zeros(2)  # import torch\n")
    for name in ("mnist_main", "cifar10_tutorial", "nn_tutorial", "resnet_basicblock",
                 "mobilenet_v2"):
        rewrite_imports((PROGRAMS / f"{name}.py").read_text())


# -- (1) PyTorch examples: mnist/main.py ------------------------------------------------------

def _mnist_args(extra=()):
    return ["--epochs", "2", "--train-size", "192", "--test-size", "100", "--log-interval",
            "1", *extra]


def test_mnist_main_trains_and_saves_a_pytorch_checkpoint(programs, capsys):
    prog = load_program("mnist_main")
    model, (test_loss, accuracy) = prog.main(_mnist_args(["--save-model", "--no-accel"]))
    out = capsys.readouterr().out
    losses = [float(v) for v in re.findall(r"Loss: ([\d.]+)", out)]
    assert len(losses) == 6                      # 3 batches of 64 per epoch, each logged
    assert np.mean(losses[3:]) < np.mean(losses[:3]) < math.log(10) + 0.2
    assert test_loss < 2.1 and accuracy >= 0.3   # chance 0.1; clgrad 1.15, 0.67; PyTorch 1.52, 0.46
    assert "Test set: Average loss:" in out and "/100 (" in out
    # torch.save(model.state_dict(), "mnist_cnn.pt") writes PyTorch's zip format
    path = programs / "mnist_cnn.pt"
    assert zipfile.is_zipfile(path)
    state = clgrad.load(str(path), weights_only=True)
    fresh = prog.Net()
    fresh.load_state_dict(state)
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(fresh.state_dict()[k].numpy(), v.numpy())


def test_mnist_checkpoint_loads_in_pytorch(programs, capsys):
    torch = _torch()
    model, _ = load_program("mnist_main").main(
        ["--epochs", "1", "--train-size", "64", "--test-size", "10", "--save-model"])
    capsys.readouterr()
    tnet = load_program("mnist_main", "torch").Net()
    tnet.load_state_dict(torch.load("mnist_cnn.pt", weights_only=True))
    for k, v in tnet.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), model.state_dict()[k].numpy(), err_msg=k)


def test_mnist_main_accelerator_branch(programs, monkeypatch, capsys):
    """The `use_accel` branch: current_accelerator() as the device, and the DataLoader kwargs
    num_workers=1, persistent_workers=True, pin_memory=True, shuffle=True. No OpenCL GPU
    here, so accelerator.is_available() is made True with the CPU device standing in."""
    monkeypatch.setattr(clgrad.accelerator, "is_available", lambda: True)
    monkeypatch.setattr(clgrad.accelerator, "current_accelerator",
                        lambda check_available=False: clgrad.device("cpu"))
    prog = load_program("mnist_main")
    _, (test_loss, accuracy) = prog.main(_mnist_args(["--dry-run"]))
    out = capsys.readouterr().out
    assert len(re.findall(r"Loss: ([\d.]+)", out)) == 2   # --dry-run: one batch per epoch
    assert math.isfinite(test_loss) and 0 <= accuracy <= 1


def test_mnist_main_first_steps_match_pytorch(programs):
    torch = _torch()
    x, y = load_program("mnist_main").mnist_like(train=True, n=64)
    _compare_first_steps(
        "mnist_main", lambda p: p.Net(), (x, y),
        loss=lambda p, F, out, t: F.nll_loss(out, t),
        optimizer=lambda optim, params: optim.Adadelta(params, lr=1.0),
        eval_mode=True, torch=torch)


# -- (2) the CIFAR-10 "Training a classifier" tutorial ----------------------------------------

def test_cifar10_tutorial_trains_saves_loads_and_counts_per_class(programs, capsys):
    prog = load_program("cifar10_tutorial")
    losses, accuracy, correct_pred, total_pred = prog.main(
        ["--epochs", "2", "--train-size", "200", "--test-size", "100", "--log-every", "25",
         "--lr", "0.01"])
    out = capsys.readouterr().out
    assert len(losses) == 4 and losses[-1] < losses[0]
    assert accuracy >= 0.25     # chance is 0.1; clgrad 0.39 (no seed), 0.45-0.76 seeds 1-6;
    #                             PyTorch 0.40-0.61 unseeded, 0.44-0.73 seeds 1-6
    assert sum(total_pred.values()) == 100
    assert sum(correct_pred.values()) == round(accuracy * 100)
    assert "Finished Training" in out and "GroundTruth:" in out and "Predicted:" in out
    want = "cuda:0" if clgrad.cuda.is_available() else "cpu"   # the tutorial's print(device)
    assert re.search(rf"^{want}$", out, re.M)
    assert zipfile.is_zipfile(programs / "cifar_net.pth")


def test_cifar10_tutorial_first_steps_match_pytorch(programs):
    torch = _torch()
    x, y = load_program("cifar10_tutorial").cifar_like(train=True, n=16)
    _compare_first_steps(
        "cifar10_tutorial", lambda p: p.Net(), (x, y),
        loss=lambda p, F, out, t: p.nn.CrossEntropyLoss()(out, t),
        optimizer=lambda optim, params: optim.SGD(params, lr=0.01, momentum=0.9),
        eval_mode=False, torch=torch)


# -- (3) "What is torch.nn really?" ------------------------------------------------------------

def test_nn_tutorial_every_stage_learns(programs, capsys):
    prog = load_program("nn_tutorial")
    report = prog.main(["--train-size", "512", "--valid-size", "256"])
    capsys.readouterr()
    # hand-written log_softmax/nll with requires_grad tensors and in-place no_grad updates
    assert 2.0 < report["scratch_first_loss"] < 3.0          # ~ln(10) at the random start
    assert report["scratch_last_loss"] < 1.2                 # PyTorch: 0.50
    assert report["functional_loss"] == pytest.approx(report["scratch_last_loss"], rel=1e-5)
    assert report["module_loss"] < 1.2                       # PyTorch: 0.57
    assert report["logistic_valid_loss"] < 1.5               # PyTorch: 0.84
    assert math.isfinite(report["cnn_valid_loss"]) and math.isfinite(report["gpu_valid_loss"])


# -- (4) torchvision's ResNet with BasicBlock ----------------------------------------------

_RESNET_ARGS = ["--epochs", "3", "--train-size", "256", "--test-size", "100", "--width", "8",
                "--batch-size", "32"]


def test_resnet_basicblock_trains(programs, capsys):
    prog = load_program("resnet_basicblock")
    model, history = prog.main(_RESNET_ARGS)
    out = capsys.readouterr().out
    assert out.startswith("ResNet(\n  (conv1): Conv2d(3, 8, kernel_size=(7, 7), stride=(2, 2), "
                          "padding=(3, 3), bias=False)\n")
    (first, _), _, (last, acc) = history
    assert np.mean(last) < np.mean(first)
    # seeds 0-3: clgrad 0.88-0.95, PyTorch 0.51-0.93 (BatchNorm's running statistics after
    # 24 steps make the eval-mode accuracy vary); chance is 0.1
    assert acc >= 0.5
    assert not model.training


def test_manual_seed_makes_a_program_reproducible(programs, capsys):
    """torch.manual_seed fixes initialisation and DataLoader(shuffle=True) order."""
    prog = load_program("resnet_basicblock")
    args = ["--epochs", "1", "--train-size", "64", "--test-size", "50", "--width", "4"]
    runs = [prog.main(args + ["--seed", s])[1] for s in ("3", "3", "4")]
    capsys.readouterr()
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_resnet_basicblock_first_steps_match_pytorch(programs):
    torch = _torch()
    prog = load_program("resnet_basicblock")
    x, y = prog.cifar_like(train=True, n=16)
    _compare_first_steps(
        "resnet_basicblock", lambda p: p.ResNet(p.BasicBlock, [1, 1, 1, 1], num_classes=10,
                                                width=8),
        (x, y), loss=lambda p, F, out, t: p.nn.CrossEntropyLoss()(out, t),
        optimizer=lambda optim, params: optim.SGD(params, lr=0.05, momentum=0.9,
                                                  weight_decay=5e-4),
        eval_mode=False, torch=torch)


# -- (5) torchvision's MobileNetV2 ---------------------------------------------------------

def test_mobilenet_v2_trains(programs, capsys):
    prog = load_program("mobilenet_v2")
    _, history = prog.main(["--epochs", "3", "--train-size", "256", "--test-size", "100",
                            "--small", "--lr", "0.05"])
    capsys.readouterr()
    assert np.mean(history[-1][0]) < np.mean(history[0][0])
    # seeds 0-2 with a clamp-based ReLU6 stand-in: clgrad 0.31-0.61, PyTorch 0.49-0.62
    assert history[-1][1] >= 0.2


def test_mobilenet_v2_first_steps_match_pytorch(programs):
    torch = _torch()
    prog = load_program("mobilenet_v2")
    x, y = prog.cifar_like(train=True, n=16)
    _compare_first_steps(
        "mobilenet_v2", lambda p: p.MobileNetV2(num_classes=10, width_mult=0.5, dropout=0.0,
                                                inverted_residual_setting=p.SMALL_SETTING),
        (x, y), loss=lambda p, F, out, t: p.nn.CrossEntropyLoss()(out, t),
        optimizer=lambda optim, params: optim.SGD(params, lr=0.01, momentum=0.9),
        eval_mode=False, torch=torch)


# ---------------------------------------------------------------------------- helpers

def _compare_first_steps(name, build, batch, loss, optimizer, eval_mode, torch, steps=3):
    """Build the program's model in both frameworks, copy PyTorch's weights and buffers into
    clgrad's, then take `steps` optimizer steps on the same batch and compare each step's loss
    (1e-5 relative). The first step's gradients are compared with PyTorch's in float64 (the
    same model, .double()): every parameter's largest error is below 5e-5 of the largest
    gradient of the model (a gradient that is exactly zero in float64, such as a BatchNorm bias
    followed by another BatchNorm, is float32 noise in both frameworks, so no per-parameter
    relative error). eval_mode=True for models with Dropout (random masks differ)."""
    import copy

    import torch.nn.functional as tF
    import torch.optim as toptim

    import clgrad.nn.functional as cF
    import clgrad.optim as coptim

    tp, cp = load_program(name, "torch"), load_program(name)
    torch.manual_seed(0)
    tm, cm = build(tp), build(cp)
    cm.load_state_dict({k: clgrad.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})
    t64 = copy.deepcopy(tm).double()
    for m in (tm, cm, t64):
        m.eval() if eval_mode else m.train()
    topt, copt = optimizer(toptim, tm.parameters()), optimizer(coptim, cm.parameters())
    x, y = batch
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    cx, cy = clgrad.from_numpy(x), clgrad.from_numpy(y)
    loss(tp, tF, t64(tx.double()), ty).backward()
    g64 = {k: p.grad.numpy() for k, p in t64.named_parameters()}
    scale = max(np.abs(g).max() for g in g64.values())
    first_state = None
    for step in range(steps):
        topt.zero_grad()
        copt.zero_grad(set_to_none=True)
        tl = loss(tp, tF, tm(tx), ty)
        cl = loss(cp, cF, cm(cx), cy)
        assert cl.item() == pytest.approx(tl.item(), rel=1e-5), f"step {step}"
        tl.backward()
        cl.backward()
        if step == 0:
            for k, p in cm.named_parameters():
                err = np.abs(p.grad.numpy() - g64[k]).max() / scale
                assert err < 5e-5, f"grad {k}: error {err:.2e} of the largest gradient"
        topt.step()
        copt.step()
        if step == 0:
            first_state = ({k: v.detach().numpy().copy() for k, v in tm.state_dict().items()},
                           {k: v.numpy() for k, v in cm.state_dict().items()})
    if clgrad.default_device().kind != "cpu":
        # On a GPU the float32 sums run in another order than PyTorch CPU's; Adadelta divides
        # each element's step by its own gradient scale, so a near-zero gradient's rounding
        # shows in the parameter (H200: 2e-5 absolute in 3 of 18432 elements). The losses and
        # the gradients against float64 above are the check there.
        return
    # The parameters after the first step (its gradients were checked against float64 above):
    # later steps' gradients are no oracle in float32 for either framework. A BatchNorm output
    # within a few ulps of zero before a ReLU flips with the sums' order and sends one more
    # element's gradient, which BatchNorm's backward spreads over the channel: ResNeXt's
    # second-step gradients differ from PyTorch float64's by 1.5e-2 of the largest gradient in
    # PyTorch float32 itself at 10 and 14 samples (measured), and clgrad's 1x1 convs on PoCL
    # hit such a flip at 12 where PyTorch's did not (1.8e-3; their losses still agree).
    tstate, cstate = first_state
    for k, v in tstate.items():   # parameters after the first step, BatchNorm buffers
        np.testing.assert_allclose(cstate[k], v, rtol=1e-4, atol=1e-5, err_msg=k)
