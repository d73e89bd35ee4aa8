# PyTorch's tutorial "Introduction to torch.compile" (torch_compile_tutorial.py), the parts
# that run on a CPU: compiling a function (torch.compile(foo) and the @torch.compile
# decorator), nested function calls, a module (mod.compile() and torch.compile(mod)) and its
# submodules, and "Demonstrating Speedups": inference and training (compiling a train step
# that runs backward and the optimizer, mode="reduce-overhead"), eager against compiled, timed
# with the tutorial's timed() (CUDA events on a GPU; on a CPU, time.perf_counter, as the
# tutorial's CPU note suggests). torchvision's densenet121 is replaced by a small CNN, the
# sizes are parameters, and the speedup assertion is left out (a CPU need not show one).
import time

import numpy as np
import torch
import torch.nn.functional as F


######################################################################
# Basic Usage
# ------------
#
# ``torch.compile`` is included in the latest PyTorch.
# Running TorchInductor on GPU requires Triton, which is included with the PyTorch 2.0 nightly
# binary. If Triton is still missing, try installing ``torchtriton`` via pip
# (``pip install torchtriton --extra-index-url "https://download.pytorch.org/whl/nightly/cu117"``
# for CUDA 11.7).
#
# Arbitrary Python functions can be optimized by passing the callable to
# ``torch.compile``. We can then call the returned optimized
# function in place of the original function.

def foo(x, y):
    a = torch.sin(x)
    b = torch.cos(y)
    return a + b


opt_foo1 = torch.compile(foo)


######################################################################
# Alternatively, we can decorate the function.

@torch.compile
def opt_foo2(x, y):
    a = torch.sin(x)
    b = torch.cos(y)
    return a + b


######################################################################
# We can also optimize ``torch.nn.Module`` instances.

class MyModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(100, 10)

    def forward(self, x):
        return torch.nn.functional.relu(self.lin(x))


######################################################################
# Nested function calls within the decorated function will also be compiled.

def nested_function(x):
    return torch.sin(x)


@torch.compile
def outer_function(x, y):
    a = nested_function(x)
    b = torch.cos(y)
    return a + b


######################################################################
# In the same fashion, when compiling a module all sub-modules and methods
# within it, that are not in a skip list, are also compiled.

class OuterModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner_module = MyModule()
        self.outer_lin = torch.nn.Linear(10, 2)

    def forward(self, x):
        x = self.inner_module(x)
        return torch.nn.functional.relu(self.outer_lin(x))


def basic_usage():
    torch.manual_seed(0)
    out = {}
    print(opt_foo1(torch.randn(10, 10), torch.randn(10, 10)))
    t1 = torch.randn(10, 10)
    t2 = torch.randn(10, 10)
    out["foo"] = (t1, t2, opt_foo1(t1, t2), opt_foo2(t1, t2), foo(t1, t2))
    print(opt_foo2(t1, t2))

    mod = MyModule()
    x = torch.randn(10, 100)
    opt_mod = torch.compile(mod)
    out["mod"] = (mod, x, opt_mod(x), mod(x))
    print(opt_mod(x))

    print(outer_function(t1, t2))
    out["nested"] = outer_function(t1, t2)

    outer_mod = OuterModule()
    eager = outer_mod(x)
    outer_mod.compile()
    out["outer_mod"] = (outer_mod, eager, outer_mod(x))
    print(outer_mod(x))
    return out


######################################################################
# Demonstrating Speedups
# -----------------------
#
# Let's now demonstrate that using ``torch.compile`` can speed
# up real models. We will compare standard eager mode and
# ``torch.compile`` by evaluating and training a small convolutional network
# (the tutorial: torchvision's ``densenet121``) on random data.
#
# Before we start, we need to define some utility functions.

# Returns the result of running `fn()` and the time it took for `fn()` to run,
# in seconds. We use CUDA events and synchronization for the most accurate
# measurements on a GPU, and the wall clock on a CPU.
def timed(fn):
    if torch.cuda.is_available():
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        result = fn()
        end.record()
        torch.cuda.synchronize()
        return result, start.elapsed_time(end) / 1000
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


# Generates random input and targets data for the model, where `b` is
# batch size.
def generate_data(b, size=32):
    return (
        torch.randn(b, 3, size, size).to(torch.float32),
        torch.randint(10, (b,)),
    )


class SmallNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.conv2(x))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def init_model():
    return SmallNet().to(torch.float32)


def inference(N_ITERS=10, batch=16):
    torch.manual_seed(0)
    model = init_model()

    # Note that we generally recommend directly compiling a torch.nn.Module by calling
    # its .compile() method.
    model_opt = init_model()
    model_opt.load_state_dict(model.state_dict())
    model_opt.eval()
    model.eval()
    model_opt.compile(mode="reduce-overhead")

    inp = generate_data(batch)[0]
    with torch.no_grad():
        print("eager:", timed(lambda: model(inp))[1])
        print("compile:", timed(lambda: model_opt(inp))[1])

    eager_times, compile_times, outputs = [], [], []
    for i in range(N_ITERS):
        inp = generate_data(batch)[0]
        with torch.no_grad():
            out_eager, eager_time = timed(lambda: model(inp))
            out_compiled, compile_time = timed(lambda: model_opt(inp))
        eager_times.append(eager_time)
        compile_times.append(compile_time)
        outputs.append((out_eager, out_compiled.clone()))
        print(f"eager eval time {i}: {eager_time}")
        print(f"compile eval time {i}: {compile_time}")
    print("~" * 10)

    eager_med = np.median(eager_times)
    compile_med = np.median(compile_times)
    speedup = eager_med / compile_med
    print(f"(eval) eager median: {eager_med}, compile median: {compile_med}, "
          f"speedup: {speedup}x")
    print("~" * 10)
    return outputs


def training(N_ITERS=10, batch=16):
    torch.manual_seed(0)
    datas = [generate_data(batch) for _ in range(N_ITERS)]
    model = init_model()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    opt = torch.optim.Adam(model.parameters())

    def train(mod, data):
        opt.zero_grad(True)
        pred = mod(data[0])
        loss = torch.nn.CrossEntropyLoss()(pred, data[1])
        loss.backward()
        opt.step()
        return loss

    eager_times, eager_losses = [], []
    for i in range(N_ITERS):
        inp = datas[i]
        loss, eager_time = timed(lambda: train(model, inp))
        eager_times.append(eager_time)
        eager_losses.append(loss.item())
        print(f"eager train time {i}: {eager_time}")
    print("~" * 10)
    eager_model = model

    model = init_model()
    model.load_state_dict(state)
    opt = torch.optim.Adam(model.parameters())
    train_opt = torch.compile(train, mode="reduce-overhead")

    compile_times, compile_losses = [], []
    for i in range(N_ITERS):
        inp = datas[i]
        loss, compile_time = timed(lambda: train_opt(model, inp))
        compile_times.append(compile_time)
        compile_losses.append(loss.item())
        print(f"compile train time {i}: {compile_time}")
    print("~" * 10)

    eager_med = np.median(eager_times)
    compile_med = np.median(compile_times)
    speedup = eager_med / compile_med
    print(f"(train) eager median: {eager_med}, compile median: {compile_med}, "
          f"speedup: {speedup}x")
    print("~" * 10)
    return eager_model, model, eager_losses, compile_losses


def main(N_ITERS=10, batch=16):
    out = basic_usage()
    outputs = inference(N_ITERS, batch)
    trained = training(N_ITERS, batch)
    return out, outputs, trained


if __name__ == "__main__":
    main()
