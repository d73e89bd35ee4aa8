"""Normalisation layers with PyTorch's names, arguments, parameters and buffers: BatchNorm1d,
LayerNorm, GroupNorm, InstanceNorm1d/2d. The math and gradients live in clgrad/ops/norm.py."""
from __future__ import annotations

import math

from clgrad import dtypes
from clgrad._args import _check_positive
from clgrad.autograd import no_grad
from clgrad.creation import ones, zeros
from clgrad.nn import functional as F
from clgrad.nn.lazy import LazyModuleMixin
from clgrad.nn.module import (Module, Parameter, UninitializedBuffer, UninitializedParameter,
                              is_lazy)
from clgrad.ops import elementwise as ew
from clgrad.ops import norm
from clgrad.ops._util import bump_version, same_device
from clgrad.tensor import Tensor

__all__ = ["BatchNorm2d", "LocalResponseNorm", "BatchNorm1d", "LayerNorm", "GroupNorm",
           "InstanceNorm1d", "InstanceNorm2d", "RMSNorm", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "SyncBatchNorm"]


def _counts_in_launch(nbt, x) -> bool:
    """Whether batch_norm's forward launch can add 1 to ``nbt`` (a one-element int64 tensor on
    x's device: what a module's own num_batches_tracked is unless a user replaced it)."""
    return (isinstance(nbt, Tensor) and isinstance(x, Tensor) and
            nbt._storage.dtype is dtypes.int64 and math.prod(nbt._shape) == 1 and
            nbt._storage.device is x._storage.device)  # (the slots: no property calls)


class BatchNorm2d(Module):
    """Batch normalisation over (N, H, W) per channel (Ioffe & Szegedy, ICML 2015).

    Shapes:  x (N, C, H, W) -> same
    Params:  weight (C,) = 1 and bias (C,) = 0 when ``affine``
    Buffers: running_mean (C,) = 0, running_var (C,) = 1, num_batches_tracked () int64 = 0
             when ``track_running_stats`` (all in the state dict, PyTorch's names)
    Train:   normalise with the batch mean and biased variance; update
             running = (1 - momentum) running + momentum batch_stat (the unbiased variance);
             ``momentum=None`` uses the cumulative average 1 / num_batches_tracked
    Eval:    normalise with the running statistics (batch statistics if they are None)
    As PyTorch's, ``track_running_stats`` set to False after construction keeps the buffers:
    training then neither updates them nor counts, and eval still normalises with them.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None,
                 dtype=None):
        super().__init__()
        _norm_state(self, "BatchNorm2d", num_features, eps, momentum, affine,
                    track_running_stats, device, dtype)

    _version = 2  # PyTorch's: version 2 added num_batches_tracked

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        """As Module's; a checkpoint of version < 2 (or without metadata) that lacks
        ``num_batches_tracked`` keeps the module's count instead of reporting it missing."""
        version = local_metadata.get("version", None)
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and \
                key not in state_dict and self.num_batches_tracked is not None:
            state_dict[key] = self.num_batches_tracked
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def reset_running_stats(self):
        """running_mean = 0, running_var = 1, num_batches_tracked = 0."""
        if self.track_running_stats:
            for buf, value in ((self.running_mean, 0), (self.running_var, 1),
                               (self.num_batches_tracked, 0)):
                ew.fill_raw(buf, value)
                bump_version(buf)

    def _check_input_dim(self, x: Tensor):
        if (len(x._shape) if isinstance(x, Tensor) else x.ndim) != 4:  # (the slot: a call less)
            raise ValueError(f"BatchNorm2d: expected 4D input (N, C, H, W), got "
                             f"{x.ndim}D input of shape {tuple(x.shape)}")

    def forward(self, x: Tensor) -> Tensor:
        """Normalise ``x`` per channel (see the class docstring for train and eval).

        Shapes:  x (N, C, H, W) -> same; see clgrad.nn.functional.batch_norm
        In training with tracked statistics, num_batches_tracked += 1 and the running statistics
        are updated in place; ``momentum=None`` reads num_batches_tracked on the host (a sync).
        Raises:  ValueError for an input that is not 4-D; as F.batch_norm otherwise
        """
        return self._forward(x)

    def _forward(self, x: Tensor, activation=None) -> Tensor:
        """forward, then ``activation`` (None, "relu", "relu6", "silu") in the same launches:
        nn.Sequential's BatchNorm2d + ReLU / ReLU6 / SiLU."""
        self._check_input_dim(x)
        momentum = 0.0 if self.momentum is None else self.momentum
        count = None
        nbt = self.num_batches_tracked
        if self.training and self.track_running_stats and nbt is not None:
            if self.momentum is None or not _counts_in_launch(nbt, x):
                same_device(type(self).__name__, x, nbt)  # before counting the batch
                with no_grad():
                    nbt.add_(1)  # one launch (ops/inplace.scalar_inplace)
                if self.momentum is None:  # cumulative moving average: the count on the host
                    momentum = 1.0 / float(nbt.item())
            else:
                count = nbt  # num_batches_tracked += 1 in the forward's launch
        # As PyTorch's _BatchNorm.forward: batch statistics in training, and in eval when the
        # buffers are None; the buffers are passed (and so updated in training) only in eval or
        # when tracked, so a flag turned off after construction neither updates nor ignores them.
        use_batch_stats = self.training or (self.running_mean is None and
                                            self.running_var is None)
        use_buffers = not self.training or self.track_running_stats
        return norm.batch_norm(x, self.running_mean if use_buffers else None,
                               self.running_var if use_buffers else None, self.weight,
                               self.bias, use_batch_stats, momentum, self.eps, count=count,
                               activation=activation)

    def extra_repr(self):
        """num_features, eps, momentum, affine and track_running_stats, as PyTorch's repr."""
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


def _group_world_size(process_group) -> int:
    """The size of ``process_group`` (None: the default group); 1 when clgrad.distributed has
    no initialised process group (its module not even imported: none can be)."""
    import sys
    pg = sys.modules.get("clgrad.distributed.process_group")
    if pg is None or not pg.is_initialized():
        return 1
    return pg.get_world_size(process_group)


class SyncBatchNorm(BatchNorm2d):
    """PyTorch's SyncBatchNorm, without the synchronisation: batch normalisation of an input
    (N, C, *) of any rank >= 2, per channel, as BatchNorm1d/2d/3d by the input's rank.

    Shapes:  x (N, C) or (N, C, *) -> same (parameters and buffers: BatchNorm2d's)
    Args:    BatchNorm2d's, and ``process_group`` (kept; PyTorch's: the group to sync over)
    Differs from PyTorch: clgrad does not all-reduce batch statistics across processes. In
             one process (no clgrad.distributed process group, or one of size 1) PyTorch does
             not sync either, and this module computes exactly BatchNorm's result (on any
             device: PyTorch then accepts CPU input too). In training with a process group
             of more than one rank it raises instead of silently normalising with per-rank
             statistics; eval (running statistics) works everywhere.
    Raises:  ValueError for an input of fewer than 2 dims; NotImplementedError in training
             with a process group of more than one rank
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype)
        self.process_group = process_group

    def _check_input_dim(self, x: Tensor):
        if x.ndim < 2:
            raise ValueError(f"SyncBatchNorm: expected at least 2D input (got {x.ndim}D "
                             f"input)")

    def forward(self, x: Tensor) -> Tensor:
        """BatchNorm's forward for x (N, C, *) (see the class docstring).
        Raises:  ValueError for fewer than 2 dims; NotImplementedError in training with a
                 process group of more than one rank"""
        if self.training and _group_world_size(self.process_group) > 1:
            raise NotImplementedError(
                "SyncBatchNorm: clgrad cannot synchronise batch statistics across processes; "
                "use nn.BatchNorm1d/2d/3d (per-process statistics) or train in one process")
        return self._forward(x)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """Return ``module`` itself, unchanged: clgrad's DistributedDataParallel does not
        synchronise batch statistics, so its BatchNorm layers stay (each process normalises
        with its own batch's statistics, as with PyTorch's plain BatchNorm under DDP).
        PyTorch instead replaces every BatchNorm layer by a SyncBatchNorm. With a process
        group of more than one rank initialised, warns (UserWarning) that statistics are not
        synchronised."""
        if _group_world_size(process_group) > 1:
            import warnings
            warnings.warn("SyncBatchNorm.convert_sync_batchnorm: clgrad does not synchronise "
                          "batch statistics across processes; the BatchNorm layers are kept "
                          "and normalise with per-process statistics", UserWarning,
                          stacklevel=2)
        return module


class LocalResponseNorm(Module):
    """Normalise each channel by the activity of ``size`` neighbouring channels:
    b_c = a_c / (k + alpha / size * sum_{c'} a_{c'}^2) ^ beta (Krizhevsky et al., 2012)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        _check_positive("LocalResponseNorm", size=size)
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, x):
        """Local response normalisation across channels.

        Shapes:  (N, C, *) with at least 3 dims -> same;
                 see clgrad.nn.functional.local_response_norm
        """
        return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        """'size, alpha=A, beta=B, k=K', as PyTorch's repr."""
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class BatchNorm1d(BatchNorm2d):
    """Batch normalisation of (N, C) or (N, C, L) per channel (see BatchNorm2d)."""

    def _check_input_dim(self, x: Tensor):
        if x.ndim not in (2, 3):
            raise ValueError(f"BatchNorm1d: expected 2D or 3D input (N, C) or (N, C, L), got "
                             f"{x.ndim}D input of shape {tuple(x.shape)}")


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dims (biased variance).

    Params:  weight = 1 and bias = 0 of shape normalized_shape when
             ``elementwise_affine`` (bias only if ``bias``)
    """

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        ns = (normalized_shape,) if isinstance(normalized_shape, int) else \
            tuple(normalized_shape)
        _check_positive("LayerNorm", **{f"normalized_shape[{i}]": v for i, v in enumerate(ns)})
        self.normalized_shape, self.eps = ns, eps
        self.elementwise_affine = elementwise_affine
        kw = dict(dtype=dtype, device=device)
        self.weight = Parameter(ones(ns, **kw)) if elementwise_affine else None
        self.bias = Parameter(zeros(ns, **kw)) if elementwise_affine and bias else None

    def forward(self, x):
        """Normalise over the trailing normalized_shape dims.

        Shapes:  (*, *normalized_shape) -> same; see clgrad.nn.functional.layer_norm
        """
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        """'normalized_shape, eps=E, elementwise_affine=B', as PyTorch's repr."""
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class RMSNorm(Module):
    """Root-mean-square normalisation over the trailing ``normalized_shape`` dims (Zhang &
    Sennrich 2019): x / sqrt(mean(x^2) + eps) * weight.

    Params:  weight = 1 of shape normalized_shape when ``elementwise_affine``
    eps:     None means the float32 machine epsilon (float64's for float64 inputs), as
             PyTorch's
    """

    def __init__(self, normalized_shape, eps: float | None = None,
                 elementwise_affine: bool = True, device=None, dtype=None):
        super().__init__()
        ns = (normalized_shape,) if isinstance(normalized_shape, int) else \
            tuple(normalized_shape)
        self.normalized_shape, self.eps = ns, eps
        self.elementwise_affine = elementwise_affine
        self.weight = Parameter(ones(ns, dtype=dtype, device=device)) if elementwise_affine \
            else None

    def reset_parameters(self):
        """weight = 1."""
        if self.weight is not None:
            ew.fill_raw(self.weight, 1)
            bump_version(self.weight)

    def forward(self, x):
        """Shapes:  (*, *normalized_shape) -> same; see clgrad.nn.functional.rms_norm"""
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        """'normalized_shape, eps=E, elementwise_affine=B', as PyTorch's repr."""
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class GroupNorm(Module):
    """Normalise ``num_groups`` groups of channels per sample; affine per channel."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device=None, dtype=None):
        super().__init__()
        _check_positive("GroupNorm", num_groups=num_groups, num_channels=num_channels)
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: expected num_channels divisible by num_groups, got "
                             f"num_channels={num_channels}, num_groups={num_groups}")
        self.num_groups, self.num_channels, self.eps, self.affine = (num_groups, num_channels,
                                                                     eps, affine)
        kw = dict(dtype=dtype, device=device)
        self.weight = Parameter(ones(num_channels, **kw)) if affine else None
        self.bias = Parameter(zeros(num_channels, **kw)) if affine else None

    def forward(self, x):
        """Normalise each group of channels per sample, then scale and shift per channel.

        Shapes:  (N, num_channels, *) -> same; see clgrad.nn.functional.group_norm
        """
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        """'num_groups, num_channels, eps=E, affine=B', as PyTorch's repr."""
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class InstanceNorm2d(Module):
    """Normalise each (sample, channel) plane over H, W. Defaults as PyTorch: no affine, no
    running statistics (``track_running_stats=True`` keeps and uses them in eval).
    Not a BatchNorm2d subclass (as in PyTorch, ``isinstance(m, nn.BatchNorm2d)`` is False)."""
    _ndim = 4

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None):
        super().__init__()
        _norm_state(self, type(self).__name__, num_features, eps, momentum, affine,
                    track_running_stats, device, dtype)

    _version = 2  # as PyTorch's _InstanceNorm

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        """As PyTorch's: a checkpoint without a version (before 0.4) that has running stats
        for a module without them is an error (and the keys are dropped); one of version < 2
        without num_batches_tracked keeps the module's count (as BatchNorm2d)."""
        version = local_metadata.get("version", None)
        if version is None and not self.track_running_stats:
            keys = [prefix + n for n in ("running_mean", "running_var") if prefix + n in
                    state_dict]
            if keys:
                error_msgs.append(f"Unexpected running stats buffer(s) "
                                  f"{' and '.join(map(repr, keys))} for "
                                  f"{type(self).__name__} with track_running_stats=False: "
                                  f"remove these keys from the state_dict, or set "
                                  f"track_running_stats=True to use them")
                for k in keys:
                    state_dict.pop(k)
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and \
                key not in state_dict and self.num_batches_tracked is not None:
            state_dict[key] = self.num_batches_tracked
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def forward(self, x):
        """Normalise each (sample, channel) plane; running statistics updated with ``momentum``
        (None: kept as they are; num_batches_tracked never counts, as PyTorch's InstanceNorm).

        Shapes:  (N, C, H, W) -> same (InstanceNorm1d: (N, C, L));
                 see clgrad.nn.functional.instance_norm
        Raises:  ValueError for another rank; unlike PyTorch, unbatched (C, H, W) / (C, L)
                 inputs are not accepted
        """
        name = type(self).__name__
        if x.ndim != self._ndim:
            raise ValueError(f"{name}: expected {self._ndim}D input, got {x.ndim}D input of "
                             f"shape {tuple(x.shape)}")
        # PyTorch's _InstanceNorm: momentum None means 0 (the running statistics stay as they
        # are; no cumulative average, unlike BatchNorm), and num_batches_tracked never counts
        momentum = 0.0 if self.momentum is None else self.momentum
        use_input_stats = self.training or not self.track_running_stats
        return F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                               use_input_stats, momentum, self.eps)

    def extra_repr(self):
        """num_features, eps, momentum, affine and track_running_stats, as PyTorch's repr."""
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class InstanceNorm1d(InstanceNorm2d):
    """Normalise each (sample, channel) row of an (N, C, L) input over L."""
    _ndim = 3


def _norm_state(m, op, num_features, eps, momentum, affine, track_running_stats, device,
                dtype):
    """The parameters (weight = 1, bias = 0 when ``affine``) and buffers (running_mean = 0,
    running_var = 1, num_batches_tracked = 0 when tracking) of the per-channel norms."""
    _check_positive(op, num_features=num_features)
    m.num_features, m.eps, m.momentum = num_features, eps, momentum
    m.affine, m.track_running_stats = affine, track_running_stats
    kw = dict(dtype=dtype, device=device)
    m.weight = Parameter(ones(num_features, **kw)) if affine else None
    m.bias = Parameter(zeros(num_features, **kw)) if affine else None
    if track_running_stats:
        m.register_buffer("running_mean", zeros(num_features, **kw))
        m.register_buffer("running_var", ones(num_features, **kw))
        m.register_buffer("num_batches_tracked", zeros((), dtype=dtypes.int64, device=device))
    else:
        m.running_mean = m.running_var = m.num_batches_tracked = None


class _LazyNormMixin(LazyModuleMixin):
    """num_features inferred from the first input's dim 1; weight, bias, running_mean and
    running_var materialised then and initialised as the eager class's (PyTorch's
    _LazyNormBase; its defaults affine=True, track_running_stats=True for the instance
    norms too)."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None):
        super().__init__(1, eps, momentum, affine, track_running_stats, device, dtype)
        self.num_features = 0
        kw = dict(device=device, dtype=dtype)
        if affine:
            self.weight = UninitializedParameter(**kw)
            self.bias = UninitializedParameter(**kw)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(**kw)
            self.running_var = UninitializedBuffer(**kw)

    def reset_parameters(self):
        """weight 1, bias 0, running_mean 0, running_var 1, num_batches_tracked 0 (once
        materialised)."""
        if self.has_uninitialized_params() or self.num_features == 0:
            return
        for t, v in ((self.weight, 1), (self.bias, 0), (self.running_mean, 0),
                     (self.running_var, 1), (self.num_batches_tracked, 0)):
            if t is not None:
                ew.fill_raw(t, v)
                bump_version(t)

    def initialize_parameters(self, input, *args, **kwargs):
        """num_features = input.shape[1]; materialise; the eager init."""
        if not self.has_uninitialized_params():
            return
        if input.ndim < 2:
            raise ValueError(f"{type(self).__name__}: expected an input with a channel dim "
                             f"(N, C, *), got shape {tuple(input.shape)}")
        self.num_features = c = input.shape[1]
        with no_grad():
            for t in (self.weight, self.bias, self.running_mean, self.running_var):
                if t is not None and is_lazy(t):
                    t.materialize((c,))
            self.reset_parameters()

    def _sizes_from_params(self):
        for t in (self.weight, self.running_mean):
            if t is not None and not is_lazy(t):
                self.num_features = t.shape[0]
                return


class LazyBatchNorm1d(_LazyNormMixin, BatchNorm1d):
    """A BatchNorm1d whose num_features is inferred at the first call."""
    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNormMixin, BatchNorm2d):
    """A BatchNorm2d whose num_features is inferred at the first call."""
    cls_to_become = BatchNorm2d


class LazyInstanceNorm1d(_LazyNormMixin, InstanceNorm1d):
    """An InstanceNorm1d whose num_features is inferred at the first call (defaults
    affine=True, track_running_stats=True, as PyTorch's LazyInstanceNorm1d)."""
    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyNormMixin, InstanceNorm2d):
    """An InstanceNorm2d whose num_features is inferred at the first call (defaults
    affine=True, track_running_stats=True, as PyTorch's LazyInstanceNorm2d)."""
    cls_to_become = InstanceNorm2d
