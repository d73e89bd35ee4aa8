"""The tape: Nodes with sequence numbers, backward as a reverse walk, grad mode, gradcheck.

Every differentiable op calls :func:`record` with its output, its inputs and a backward
closure. When grad mode is on and an input requires grad, a :class:`Node` is created with the
next sequence number and becomes ``out.grad_fn``. ``backward()`` collects the Nodes reachable
from the output (iteratively: a chain of any length, no recursion) and runs them in decreasing
sequence number: every consumer of a tensor was recorded after it, so each Node's gradient is
complete when it runs. Leaves accumulate into ``.grad``, one dense tensor of their shape.

Memory. No global list is kept: a graph lives exactly as long as the tensors that reference
it (``out -> Node -> backward closure -> what backward reads``). A closure must not hold its
own output: ``out -> Node -> closure -> out`` is a reference cycle that only the cyclic gc
frees, so device buffers would outlive their loop iteration. Ops that read their output in
backward capture ``out.detach()`` (the same storage, no Node). After a backward without
``retain_graph``, a Node that saved tensors drops its closure (and with it those buffers); a
second backward through it raises RuntimeError. A Node that saved nothing stays usable, as in
PyTorch.

Saved tensors. ``record(..., saved=[...])`` stores each saved tensor with its storage version;
backward compares, so a saved tensor written in place afterwards (directly, through any view
of its storage, through a ``detach()`` alias, with grad mode on or off) raises RuntimeError
naming the op and both versions. What each op saves, hence what must not be written later:
  output:   exp, sqrt, rsqrt, reciprocal, tanh, sigmoid, relu
  input:    log, sin, cos, square, abs, clamp (number bounds), ``x ** 2``, prod
  operands: mul (the other operand), div (divisor and output), pow (both operands and the
            output), maximum/minimum (both; so clamp with tensor bounds), where (the
            condition), matmul (both)
  indices:  max/min/amax/amin (the argmax), index_select/gather/scatter_add (the index);
            advanced indexing and index_put_ copy the indices to the host: nothing saved
  nothing:  add, sub, neg, sign, casts, contiguous/clone, sum, mean, every view op,
            cat/stack/split/chunk/unbind
(Ops of other families say what they save in their own docs.)
So ``y = x.exp(); y.narrow(0, 1, 1).mul_(2)`` raises at backward (exp saved y), exactly as
PyTorch, while ``y = x.sin(); y.narrow(0, 1, 1).mul_(2)`` rebases.

In-place writes and how they rebase the graph: clgrad/ops/inplace.py.

Higher-order gradients: ``create_graph=True`` runs each Node's differentiable backward
(``Node.double``) with grad mode on; a Node without one raises (graph.py ``_apply``);
``functional`` holds jacobian/hessian/vjp/jvp/vhp/hvp on top of it.

Layering: this module imports only tensor, layout and dtypes, never clgrad.ops; the tensors it
makes (implicit gradients, gradcheck's weights) come from Tensor's bound methods.
"""
from clgrad.autograd.grad_mode import (  # grad mode first: the others import it
    enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled)
from clgrad.autograd.graph import (
    Node, RemovableHandle, backward, grad, record, register_hook,
    register_post_accumulate_grad_hook)
from clgrad.autograd.function import Function, FunctionCtx, once_differentiable
from clgrad.autograd.gradcheck import gradcheck, gradgradcheck
from clgrad.autograd import forward_ad, functional
from clgrad.autograd.anomaly_mode import (detect_anomaly, is_anomaly_check_nan_enabled,
                                          is_anomaly_enabled, set_detect_anomaly)

__all__ = ["Node", "record", "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled",
           "is_grad_enabled", "gradcheck", "inference_mode", "Function", "FunctionCtx",
           "register_hook", "RemovableHandle", "once_differentiable",
           "register_post_accumulate_grad_hook", "gradgradcheck", "functional",
           "forward_ad", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]


from clgrad.autograd.variable import Variable  # noqa: E402,F401  (the pre-0.4 name)
