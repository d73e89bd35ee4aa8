"""How a Tensor crosses a process boundary (multiprocessing's ForkingPickler; PyTorch's
torch.multiprocessing.reductions): its storage moves into shared memory, the receiver gets
the memory's file descriptor (``multiprocessing.reduction.DupFd``: passed to a spawned child
with its arguments, or through multiprocessing's resource sharer for a Queue) and maps it.

Each process keeps its shared storages by key (weakly), so tensors that share a storage
arrive sharing one, and a tensor sent back to the process it came from is its own storage.
"""
from __future__ import annotations

import os
import weakref
from multiprocessing.reduction import DupFd, ForkingPickler

from clgrad import dtypes, layout
from clgrad.nn.module import Parameter
from clgrad.ops import views
from clgrad.runtime import get_device
from clgrad.runtime.shared import SharedHost
from clgrad.tensor import Storage, Tensor

__all__ = ["init_reductions", "reduce_tensor", "rebuild_tensor"]

_STORAGES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # key -> Storage


def reduce_tensor(t: Tensor):
    """(rebuild_tensor, args) for ``t``: its storage shared first (in place), then the
    descriptor, the layout and ``requires_grad``.

    Raises:  RuntimeError for a non-leaf tensor that requires grad, or a tensor on a GPU
             device (see clgrad/runtime/shared.py)
    """
    if t.requires_grad and not t.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
            "autograd does not support crossing process boundaries.  If you just want to "
            "transfer the data, call detach() on the tensor before serializing (e.g., putting "
            "it on the queue).")
    st = t._storage.share_()
    sh = st.shared
    _STORAGES[sh.key] = st
    dev = st.device
    return (rebuild_tensor, (type(t), DupFd(sh.fd), sh.key, sh.nbytes, st.size, st.dtype.name,
                             f"{dev.platform_index}:{dev.device_index}", tuple(t.shape),
                             tuple(t._strides), t._offset, bool(t.requires_grad)))


def rebuild_tensor(cls, dupfd, key, nbytes, size, dtype, device, shape, strides, offset,
                   requires_grad):
    """The tensor ``reduce_tensor`` described, over the shared memory (mapped once per process
    and key)."""
    fd = dupfd.detach()
    st = _STORAGES.get(key)
    if st is None:
        dev = get_device(device)
        st = Storage(size, dtypes.to_dtype(dtype), dev)
        st.adopt(SharedHost(dev, nbytes, fd=fd, key=key))
        _STORAGES[key] = st
    else:  # mapped already (sent back, or a second tensor of the storage)
        os.close(fd)
    if offset == 0 and layout.numel(shape) == size and layout.is_contiguous(shape, strides):
        t = Tensor(st, shape, strides, 0)  # a root, as it was in the sender
    else:  # a view: of a root over the whole storage
        t = views.as_strided(Tensor(st, (size,), (1,), 0), shape, strides, offset).detach()
    if cls is Parameter:
        return Parameter(t, requires_grad=requires_grad)
    return t.requires_grad_(requires_grad) if requires_grad else t


def init_reductions():
    """Register the reduction for Tensor and Parameter with multiprocessing's pickler."""
    for cls in (Tensor, Parameter):
        ForkingPickler.register(cls, reduce_tensor)
