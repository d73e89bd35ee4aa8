"""Hooks for saved tensors (PyTorch's torch.autograd.graph.saved_tensors_hooks, save_on_cpu,
disable_saved_tensors_hooks).

Inside ``saved_tensors_hooks(pack_hook, unpack_hook)`` every tensor an op saves for backward
is handed to ``pack_hook`` when the op is recorded, and what it returned is kept with the
op's Node; when backward runs that Node, ``unpack_hook`` gets it back and must return a
tensor of the saved one's shape and dtype (PyTorch: "the same content"). The hooks of a
context stay with the Nodes recorded under it. Contexts nest (the innermost pair applies)
and are per thread, as PyTorch's.

Which tensors an op saves: the ``saved`` list of its record() call (clgrad/autograd/
__init__.py lists them: mul saves each operand the other's gradient needs, relu/exp/tanh
their output, linear its input and weight ...), and what a custom Function passed to
``ctx.save_for_backward``. A saved output reaches ``pack_hook`` detached (clgrad's Nodes hold
outputs that way; PyTorch hands the output itself).

Deliberately different from PyTorch: a built-in op's backward reads the tensors its closure
kept, not what ``unpack_hook`` returned, so hooks cannot free memory (save_on_cpu, saving to
disk) and an unpack that changes values (undefined in PyTorch) does not change gradients;
``unpack_hook`` still runs, once per saved tensor each time backward runs the Node, and its
result is checked. A custom Function's ``ctx.saved_tensors`` does return what
``unpack_hook`` gives, on each access, as PyTorch's.
"""
from __future__ import annotations

import contextlib
import threading

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks"]

_STATE = threading.local()  # .stack: [(pack, unpack)], .disabled: the error message or None
# how many threads have a hook context open: record() reads ACTIVE[0] before any
# thread-local lookup, so recording without hooks costs one list read
ACTIVE = [0]
_LOCK = threading.Lock()


def current():
    """The (pack_hook, unpack_hook) pair in effect on this thread, or None."""
    if not ACTIVE[0]:
        return None
    stack = getattr(_STATE, "stack", None)
    return stack[-1] if stack else None


def pack_all(hooks, tensors) -> tuple:
    """``pack_hook`` of ``hooks`` over ``tensors`` (None stays None); the hooks are off
    while it runs, so ops inside a pack hook save their tensors plainly."""
    pack = hooks[0]
    stack = _STATE.stack
    _STATE.stack = []
    try:
        return tuple(None if t is None else pack(t) for t in tensors)
    finally:
        _STATE.stack = stack


def unpack_all(hooks, packed, originals) -> tuple:
    """``unpack_hook`` of ``hooks`` over ``packed``, each result checked against the tensor
    that was packed (``originals``: Tensor or None, or (shape, dtype) pairs).

    Raises: TypeError for a result that is not a tensor (PyTorch's message); RuntimeError for
            one of another shape or dtype than the saved tensor's."""
    unpack = hooks[1]
    out = []
    for p, t in zip(packed, originals):
        if t is None:
            out.append(None)
            continue
        u = unpack(p)
        if not hasattr(u, "_storage"):
            raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but "
                            f"got result of type {type(u).__name__}")
        shape, dtype = (tuple(t.shape), t.dtype) if hasattr(t, "_storage") else t
        if tuple(u.shape) != shape or u.dtype is not dtype:
            raise RuntimeError(f"saved tensor unpack_hook returned a tensor of shape "
                               f"{tuple(u.shape)} and dtype {u.dtype}; the saved tensor has "
                               f"shape {shape} and dtype {dtype} (unpack_hook must return "
                               f"the packed tensor's content)")
        out.append(u)
    return tuple(out)


class saved_tensors_hooks:
    """Context manager: ``pack_hook(tensor) -> Any`` runs on every tensor an op saves for
    backward inside it, ``unpack_hook(packed) -> Tensor`` when backward needs it (see the
    module docstring for what clgrad's built-in ops do with the result).

    Raises: RuntimeError (with the message given) on entry inside
            ``disable_saved_tensors_hooks``."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        message = getattr(_STATE, "disabled", None)
        if message is not None:
            raise RuntimeError(message)
        stack = getattr(_STATE, "stack", None)
        if stack is None:
            stack = _STATE.stack = []
        if not stack:
            with _LOCK:
                ACTIVE[0] += 1
        stack.append((self.pack_hook, self.unpack_hook))
        return None

    def __exit__(self, *args):
        stack = _STATE.stack
        stack.pop()
        if not stack:
            with _LOCK:
                ACTIVE[0] -= 1
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors go to the "cpu" device when saved and back to their device when
    backward needs them (PyTorch's torch.autograd.graph.save_on_cpu). clgrad's "cpu" is the
    OpenCL CPU device (README), so a tensor already there is not copied. ``pin_memory`` and
    ``device_type`` are accepted (no pinned memory in OpenCL: the copy is a plain one)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        def pack_to_cpu(tensor):
            return (tensor.device, tensor.cpu())

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """Context manager under which entering ``saved_tensors_hooks`` (or ``save_on_cpu``)
    raises RuntimeError(error_message) (PyTorch's); the previous state comes back after.

    Raises: RuntimeError(error_message) on entry while a ``saved_tensors_hooks`` context is
            open on this thread (PyTorch's), which would otherwise stay in effect."""
    if getattr(_STATE, "stack", None):
        raise RuntimeError(error_message)
    previous = getattr(_STATE, "disabled", None)
    _STATE.disabled = error_message
    try:
        yield
    finally:
        _STATE.disabled = previous
