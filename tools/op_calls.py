"""Python function calls per op call on a cached signature (issue 34's host-overhead measure).

    python tools/op_calls.py            # one row: op -> calls (forward, backward)
    python tools/op_calls.py --list OP  # the calls of one case, in order (where to cut)
    python tools/op_calls.py --json     # {case: [fwd, bwd] or calls, "device kind": k}

``CLGRAD_TEST_AS_GPU=<platform substring> CLGRAD_DEVICE=gpu`` counts the GPU paths on a
device that poses as a GPU (as tests/conftest.py: the runtime's device kind patched before
the first device query), e.g. ``intel`` for Intel's CPU runtime.

Each case runs 3 times (warm-up: kernels built, plans cached), then once under
``sys.setprofile``; what is counted is the profiler's 'call' events (Python frames; C calls are
not counted) of that one call, the case's own lambda excluded, with its result dropped inside
the counted region (so freeing a result counts, as it does in a loop), with the cyclic garbage
collector off (its collections free other objects at random points). The backward cases make
the forward outside the counted region, set the leaves' ``.grad`` to None (as
``zero_grad()`` does; in the warm-up rounds too, so the counted round takes a warmed path)
and count ``y.backward(g)`` (the engine, the closure and handing the gradients to the
leaves); the ``+ sum`` cases count a loss's ``loss.backward()`` (the implicit gradient 1,
the sum's backward, then the op's). Shapes: ``a + b``, ``a * 2``, ``relu``, ``sum`` on 1000
float32; ``conv2d`` 3x3, 16 -> 16 channels, 8x8, batch 2, padding 1, with bias;
``batch_norm`` training on (2, 16, 8, 8) with weight, bias and running stats; ``linear``
(8, 64) x (32, 64) + bias; ``cross_entropy`` (8, 10) logits and uploaded int64 targets,
'mean' (its backward: ``loss.backward()``, the implicit 1). The optimizer rows (``--list``
takes them too) count one
``SGD.step()`` (momentum 0.9, weight decay 5e-4, gradients set), one ``Adam.step()`` (weight
decay 5e-4) and one ``zero_grad()`` over the 6 parameters of the conv2d, batch_norm and
linear cases.
"""
from __future__ import annotations

import argparse
import json
import os
import gc
import sys
from pathlib import Path

if __name__ == "__main__":  # run from a checkout: measure that checkout's clgrad
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

WARMUP = 3


def pose_as_gpu(which: str):
    """Make the runtime treat the OpenCL devices whose "platform name version" contains
    ``which`` (lower case; "*": every device) as GPUs, as tests/conftest.py does for
    CLGRAD_TEST_AS_GPU. Call it before the first device query."""
    from clgrad.runtime import device as rt_device
    from clgrad.runtime import discovery as rt_discovery

    def as_gpu(d, kind=rt_device._kind_of, which=which.lower()):
        label = f"{d.platform.name} {d.platform.version}".lower()
        return "gpu" if which == "*" or which in label else kind(d)
    rt_device._kind_of = rt_discovery._kind_of = as_gpu


def _count(fn, keep: list | None = None, warmup: int = WARMUP) -> int:
    """'call' events of one ``fn()`` after ``warmup`` calls, ``fn``'s own frame excluded; the
    names of the calls are appended to ``keep`` when given."""
    for _ in range(warmup):
        fn()
    names = []

    def prof(frame, event, arg):
        if event == "call":
            c = frame.f_code
            names.append(f"{c.co_filename}:{c.co_firstlineno}:{c.co_name}")

    # the cyclic collector off while counting: a collection that frees other objects (a
    # Tensor's __del__ and the device's free) would count calls of this one op that are not
    # its own (seen in a full test run: linear 124 calls, 122 alone)
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
        if enabled:
            gc.enable()
    if keep is not None:
        keep.extend(names[1:])
    return len(names) - 1


def cases():
    """{name: (forward callable, backward callable)}: the measured cases (module docstring)."""
    import clgrad
    import clgrad.nn.functional as F
    clgrad.manual_seed(0)
    a, b = clgrad.randn(1000), clgrad.randn(1000)
    ag = clgrad.randn(1000, requires_grad=True)
    x = clgrad.randn(2, 16, 8, 8)
    xg = clgrad.randn(2, 16, 8, 8, requires_grad=True)
    cw = clgrad.randn(16, 16, 3, 3, requires_grad=True)
    cb = clgrad.randn(16, requires_grad=True)
    w, bias = clgrad.randn(16, requires_grad=True), clgrad.randn(16, requires_grad=True)
    rm, rv = clgrad.zeros(16), clgrad.ones(16)
    li, lw, lb = clgrad.randn(8, 64), clgrad.randn(32, 64), clgrad.randn(32)
    lig = clgrad.randn(8, 64, requires_grad=True)
    g1000, gmap, glin = clgrad.randn(1000), clgrad.randn(2, 16, 8, 8), clgrad.randn(8, 32)
    gone = clgrad.ones(())
    lo, log_ = clgrad.randn(8, 10), clgrad.randn(8, 10, requires_grad=True)
    tgt = clgrad.tensor([3, 1, 4, 1, 5, 9, 2, 6])  # (uploaded: its range checked on the host)
    with clgrad.no_grad():
        cw_, cb_, w_, bias_ = cw.detach(), cb.detach(), w.detach(), bias.detach()

    fwd = {
        "a + b": lambda: a + b,
        "a * 2": lambda: a * 2,
        "relu": lambda: F.relu(a),
        "conv2d": lambda: F.conv2d(x, cw_, cb_, padding=1),
        "batch_norm": lambda: F.batch_norm(x, rm, rv, w_, bias_, training=True),
        "linear": lambda: F.linear(li, lw, lb),
        "sum": lambda: a.sum(),
        "a + b + sum": lambda: (a + b).sum(),
        "relu + sum": lambda: F.relu(a).sum(),
        "conv2d + sum": lambda: F.conv2d(x, cw_, cb_, padding=1).sum(),
        "batch_norm + sum": lambda: F.batch_norm(x, rm, rv, w_, bias_, training=True).sum(),
        "linear + sum": lambda: F.linear(li, lw, lb).sum(),
        "cross_entropy": lambda: F.cross_entropy(lo, tgt),
    }
    bwd = {
        "a + b": (lambda: ag + b, g1000),
        "a * 2": (lambda: ag * 2, g1000),
        "relu": (lambda: F.relu(ag), g1000),
        "conv2d": (lambda: F.conv2d(xg, cw, cb, padding=1), gmap),
        "batch_norm": (lambda: F.batch_norm(xg, rm, rv, w, bias, training=True), gmap),
        "linear": (lambda: F.linear(lig, lw, lb), glin),
        "sum": (lambda: ag.sum(), gone),
        "a + b + sum": (lambda: (ag + b).sum(), None),
        "relu + sum": (lambda: F.relu(ag).sum(), None),
        "conv2d + sum": (lambda: F.conv2d(xg, cw, cb, padding=1).sum(), None),
        "batch_norm + sum": (lambda: F.batch_norm(xg, rm, rv, w, bias, training=True).sum(),
                             None),
        "linear + sum": (lambda: F.linear(lig, lw, lb).sum(), None),
        "cross_entropy": (lambda: F.cross_entropy(log_, tgt), None),
    }
    return fwd, bwd


def optimizer_cases():
    """{name: (callable, prepare)}: one SGD step, one Adam step and one zero_grad over 6
    parameters whose gradients ``prepare()`` sets (uncounted)."""
    import clgrad
    clgrad.manual_seed(0)
    params = [clgrad.randn(*s, requires_grad=True) for s in
              ((16, 16, 3, 3), (16,), (16,), (16,), (32, 64), (32,))]
    for p in params:
        p.grad = clgrad.randn(*p.shape)
    opt = clgrad.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=5e-4)
    adam = clgrad.optim.Adam(params, lr=1e-3, weight_decay=5e-4)
    grads = [p.grad for p in params]

    def prepare():
        for p, g in zip(params, grads):
            p.grad = g
    return {"sgd step": (opt.step, prepare), "adam step": (adam.step, prepare),
            "zero_grad": (opt.zero_grad, prepare)}


def _backward_count(make, grad, keep=None) -> int:
    """'call' events of ``make().backward(grad)``'s backward alone (the forward uncounted, the
    leaves' gradients None first), after WARMUP forward + backward rounds."""
    for _ in range(WARMUP):
        y = make()
        _clear_leaf_grads(y)
        y.backward(grad)
    y = make()
    _clear_leaf_grads(y)
    return _count(lambda: y.backward(grad), keep, warmup=0)


def _clear_leaf_grads(y):
    """Set ``.grad`` of the leaves y's graph sends to None (as ``zero_grad()``)."""
    import clgrad
    stack, seen = [y.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        for nxt, _ in node.next_functions:
            var = getattr(nxt, "variable", None)
            if isinstance(var, clgrad.Tensor):
                var.grad = None
            else:
                stack.append(nxt)


def counts() -> dict:
    """{case: (forward calls, backward calls)} for every case of ``cases()``."""
    fwd, bwd = cases()
    return {name: (_count(fwd[name]), _backward_count(*bwd[name])) for name in fwd}


def optimizer_counts() -> dict:
    """{case: calls} for every case of ``optimizer_cases()``."""
    return {name: _optimizer_count(*case) for name, case in optimizer_cases().items()}


def _optimizer_count(fn, prepare, keep=None) -> int:
    """'call' events of ``fn()`` after ``prepare()``, after WARMUP rounds of both."""
    for _ in range(WARMUP):
        prepare()
        fn()
    prepare()
    return _count(fn, keep, warmup=0)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--list", metavar="OP", help="list the calls of one case (forward and "
                   "backward)")
    p.add_argument("--json", action="store_true", help="print every count as one JSON object")
    args = p.parse_args(argv)
    if os.environ.get("CLGRAD_TEST_AS_GPU"):
        pose_as_gpu(os.environ["CLGRAD_TEST_AS_GPU"])
    if args.json:
        import clgrad
        print(json.dumps({**counts(), **optimizer_counts(),
                          "device kind": clgrad.default_device().kind}))
        return
    if args.list in optimizer_cases():
        names: list = []
        print(f"{args.list}: {_optimizer_count(*optimizer_cases()[args.list], names)} calls")
        for name in names:
            print("   ", name.split("/clgrad/")[-1] if "/clgrad/" in name else name)
        return
    if args.list:
        fwd, bwd = cases()
        for what, n_calls in (("forward", lambda k: _count(fwd[args.list], k)),
                              ("backward", lambda k: _backward_count(*bwd[args.list], k))):
            names: list = []
            n = n_calls(names)
            print(f"{args.list} {what}: {n} calls")
            for name in names:
                print("   ", name.split("/clgrad/")[-1] if "/clgrad/" in name else name)
        return
    got = counts()
    print("| op | forward calls | backward calls |")
    print("|---|---|---|")
    for name, (f, b) in got.items():
        print(f"| `{name}` | {f} | {b} |")
    print("\n| optimizer | calls |\n|---|---|")
    for name, n in optimizer_counts().items():
        print(f"| `{name}` | {n} |")


if __name__ == "__main__":
    main()
