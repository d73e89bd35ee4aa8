"""The Connectionist Temporal Classification loss, PyTorch's torch.nn.functional.ctc_loss.

Graves, Fernandez, Gomez, Schmidhuber, "Connectionist Temporal Classification: Labelling
Unsegmented Sequence Data with Recurrent Neural Networks", ICML 2006, section 4.1: the
forward (alpha) and backward (beta) recursions over the extended label sequence
l' = (blank, l1, blank, l2, ..., lS, blank), in log space. The lengths and targets are read on
the host (they are small and decide the loop bounds); the extended labels go to the device.
Kernels: kernels/ctc_loss.cl :: ctc_alpha (one work-group per sample walks the time steps,
and gives the losses), ctc_beta (the same backwards), ctc_grad (one work item per (t, n, c)).
"""
from __future__ import annotations

import math
import operator

import numpy as np

from clgrad import creation, dtypes
from clgrad.autograd import record
from clgrad.ops import elementwise as ew
from clgrad.ops import reduce as rd
from clgrad.ops._util import defines_for, empty
from clgrad.tensor import Tensor

__all__ = ["ctc_loss"]

_FILE = "ctc_loss.cl"
_REDUCTIONS = ("mean", "sum", "none")
_GPU_GROUP = 128  # work items per sample on a GPU (each walks s = lid, lid + 128, ...)
_CPU_GROUP = 1    # on a CPU device one work item walks a sample (tests set others)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """-log p(target | log_probs) summed over every alignment (Graves et al. 2006), PyTorch's.

    Shapes:  log_probs (T, N, C) or unbatched (T, C): log-probabilities over C classes
             (blank included), e.g. log_softmax's; targets padded (N, S) (S >= max target
             length; entries past a sample's length are ignored) or the targets of all samples
             concatenated, (sum(target_lengths),) (the only form for unbatched input, or
             (1, S)); input_lengths, target_lengths (N,) (or () unbatched) integer tensors, or
             tuples/lists of ints -> (N,) ('none'; () unbatched) or () ('mean', 'sum')
    Dtypes:  log_probs float32 or float64; targets of any real dtype (truncated to int64, as
             PyTorch's .to(kLong))
    Per sample: loss = -log sum over alignments pi (paths of length input_length over l'
             collapsing to the target) of prod_t exp(log_probs[t, pi_t]); +inf when no
             alignment fits (the target, with a blank between repeated labels, longer than the
             input), 0 then with ``zero_infinity``. 'mean' divides each loss by its target
             length clamped to >= 1, then means over the batch; 'sum' sums.
    Grad:    log_probs, PyTorch's exactly: for t < input_length,
             (exp(log_probs) - gamma) * g, gamma[t, n, c] the posterior probability that the
             alignment emits c at t; 0 for t >= input_length, and for a sample whose loss
             ``zero_infinity`` zeroed; NaN for an infeasible sample without it. This is the
             gradient with respect to the logits x of log_probs = log_softmax(x) (where
             gamma sums to 1 over c, log_softmax's backward passes it unchanged), NOT the
             derivative of the loss with respect to log_probs itself, which is -gamma * g:
             PyTorch's gradient adds exp(log_probs) * g, and so does clgrad's (measured
             against PyTorch 2.13: its grad minus float64 finite differences of its loss is
             exp(log_probs) * g). Through log_softmax (the usual use) the gradient is exact.
             Not differentiable again (create_graph raises, as PyTorch's).
    Devices: targets and the length tensors are read on the host, so they may live on any
             device (PyTorch takes CPU ones with CUDA log_probs); the result is on
             log_probs' device.
    Raises:  RuntimeError for shapes, lengths (negative, an input length above T, a target
             length above S, sums that differ from the concatenated targets' size), blank
             outside [0, C), target labels outside [0, C) or equal to blank (PyTorch's CPU
             kernel checks neither: garbage loss, or reads out of bounds), an empty log_probs,
             or non-integral length tensors; NotImplementedError for a log_probs dtype other
             than float32/float64; TypeError for lengths that are neither tensors nor
             sequences of ints; ValueError for reduction
    Kernels: kernels/ctc_loss.cl :: ctc_alpha, ctc_beta, ctc_grad
    """
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    for name, v in (("log_probs", log_probs), ("targets", targets)):
        if not isinstance(v, Tensor):
            raise TypeError(f"ctc_loss: expected {name} to be a Tensor, got {type(v).__name__}")
    if log_probs.dtype not in (dtypes.float32, dtypes.float64):
        raise NotImplementedError(f"ctc_loss: expected log_probs of dtype float32 or float64, "
                                  f"got {log_probs.dtype}")
    batched = log_probs.ndim == 3
    if log_probs.ndim not in (2, 3):
        raise RuntimeError(f"ctc_loss: expected log_probs of 3 dims (T, N, C) or 2 dims (T, C), "
                           f"got {log_probs.ndim} dims (shape {tuple(log_probs.shape)})")
    if log_probs.numel() == 0:
        raise RuntimeError("ctc_loss: log_probs tensor must not be empty, got shape "
                           f"{tuple(log_probs.shape)}")
    lp = log_probs if batched else log_probs.unsqueeze(1)
    tm, n, c = lp.shape
    if not (isinstance(blank, int) and 0 <= blank < c):
        raise RuntimeError(f"ctc_loss: blank must be in label range [0, {c}), got {blank}")
    il = _lengths("input_lengths", input_lengths, n)
    tl = _lengths("target_lengths", target_lengths, n)
    if il.size and il.max() > tm:
        raise RuntimeError(f"ctc_loss: Expected input_lengths to have value at most {tm}, but "
                           f"got value {il.max()}")
    ext = _extended(targets, tl, n, c, blank)
    out = _nll(lp, ext, il, tl, bool(zero_infinity))
    if reduction == "mean":
        div = creation.tensor(np.maximum(tl, 1), dtype=lp.dtype, device=lp.device)
        return rd.mean(ew.div(out, div))
    if reduction == "sum":
        return rd.sum(out)
    return out if batched else out.squeeze(0)


def _nll(lp, ext, il, tl, zero_inf):
    """The per-sample losses (N,) and their Node (explicit backward: ctc_grad)."""
    tm, n, c = lp.shape
    dev = lp._storage.device
    x = ew.contiguous(lp)
    sp = ext.shape[1]
    ext_d, il_d, tl_d = (creation.tensor(a, dtype=dtypes.int64, device=lp.device)
                         for a in (ext, il, tl))
    alpha = empty((tm, n, sp), x.dtype, dev)
    nll = empty((n,), x.dtype, dev)
    d = defines_for(x.dtype)
    ls = _CPU_GROUP if dev.kind == "cpu" else _GPU_GROUP
    head = (np.int64(n), np.int64(tm), np.int64(c), np.int64(sp), x._storage.buffer,
            np.int64(x._offset), ext_d._storage.buffer, il_d._storage.buffer,
            tl_d._storage.buffer)
    dev.launch(dev.kernel(_FILE, "ctc_alpha", d), (n * ls,), (ls,), *head,
               alpha._storage.buffer, nll._storage.buffer)
    out = ew.where(ew.eq(nll, math.inf), 0.0, nll) if zero_inf else nll

    def backward(g):
        beta = empty((tm, n, sp), x.dtype, dev)
        dev.launch(dev.kernel(_FILE, "ctc_beta", d), (n * ls,), (ls,), *head,
                   beta._storage.buffer)
        g = ew.contiguous(g)
        grad = empty((tm, n, c), x.dtype, dev)
        total = tm * n * c
        dev.launch(dev.kernel(_FILE, "ctc_grad", d), (total,), (64,), np.int64(total),
                   np.int64(n), np.int64(c), np.int64(sp), *head[4:], alpha._storage.buffer,
                   beta._storage.buffer,
                   nll._storage.buffer, g._storage.buffer, np.int64(g._offset),
                   np.int32(zero_inf), grad._storage.buffer)
        return (grad,)
    return record("ctc_loss", out, (x,), backward, saved=[x])


def _lengths(name, v, n) -> np.ndarray:
    """input_lengths / target_lengths on the host as int64 (N,), checked."""
    if isinstance(v, Tensor):
        if v.dtype.is_floating_point or v.dtype.is_bool:
            raise RuntimeError(f"ctc_loss: {name} must be integral, got {v.dtype}")
        a = v.detach().numpy().astype(np.int64).reshape(-1)
    elif isinstance(v, (list, tuple)):
        try:
            a = np.array([operator.index(i) for i in v], dtype=np.int64)
        except TypeError:
            raise TypeError(f"ctc_loss: expected {name} to be a Tensor or a tuple of ints, got "
                            f"{v!r}") from None
    else:
        raise TypeError(f"ctc_loss: expected {name} to be a Tensor or a tuple of ints, got "
                        f"{type(v).__name__}")
    if a.shape[0] != n:
        raise RuntimeError(f"ctc_loss: {name} must be of size batch_size ({n}), got "
                           f"{a.shape[0]} values")
    if a.size and a.min() < 0:
        raise RuntimeError(f"ctc_loss: Expected {name} to have value at least 0, but got "
                           f"value {a.min()}")
    return a


def _extended(targets, tl, n, c, blank) -> np.ndarray:
    """The extended label sequences l' (N, 2 max(tl) + 1), int64: blank at the even places,
    sample i's labels at the odd places 1, 3, ..., 2 tl[i] - 1, blank past them."""
    if targets.ndim not in (1, 2):
        raise RuntimeError(f"ctc_loss: expected targets of 1 to 2 dims, got {targets.ndim} "
                           f"dims (shape {tuple(targets.shape)})")
    tv = targets.detach().numpy()
    if not (np.issubdtype(tv.dtype, np.number) and not np.issubdtype(tv.dtype, np.bool_)):
        raise RuntimeError(f"ctc_loss: expected targets of a real dtype, got {targets.dtype}")
    tv = tv.astype(np.int64)
    smax = int(tl.max()) if tl.size else 0
    if targets.ndim == 2:  # padded (N, S)
        if tv.shape[0] != n:
            raise RuntimeError(f"ctc_loss: expected targets of size {n} at dimension 0 (the "
                               f"batch), got shape {tuple(targets.shape)}")
        if tv.shape[1] < smax:
            raise RuntimeError(f"ctc_loss: Expected targets to have size at least {smax} at "
                               f"dimension 1 (the largest target length), got shape "
                               f"{tuple(targets.shape)}")
        rows = [tv[i, :tl[i]] for i in range(n)]
    else:  # concatenated
        if tv.shape[0] != int(tl.sum()):
            raise RuntimeError(f"ctc_loss: expected concatenated targets of size "
                               f"sum(target_lengths) = {int(tl.sum())}, got shape "
                               f"{tuple(targets.shape)}")
        starts = np.concatenate([[0], np.cumsum(tl)])
        rows = [tv[starts[i]:starts[i + 1]] for i in range(n)]
    ext = np.full((n, 2 * smax + 1), blank, dtype=np.int64)
    for i, r in enumerate(rows):
        if r.size and ((r < 0) | (r >= c)).any():
            raise RuntimeError(f"ctc_loss: target labels must be in [0, {c}), got "
                               f"{r.tolist()} for sample {i}")
        if r.size and (r == blank).any():
            raise RuntimeError(f"ctc_loss: targets must not contain the blank label {blank}, "
                               f"got {r.tolist()} for sample {i}")
        ext[i, 1:2 * r.size:2] = r
    return ext
