"""torch.nn.utils.prune: masks that zero parts of a parameter, PyTorch 2.14's mechanism
(torch/nn/utils/prune.py, followed step by step).

Pruning ``module.weight`` moves the Parameter to ``weight_orig``, adds the buffer
``weight_mask`` and a forward pre-hook (the pruning method object) that sets the plain
attribute ``module.weight = weight_orig * weight_mask`` before each forward; pruning the same
tensor again combines the masks in a PruningContainer (a new method acts only on what is
still unpruned). ``remove`` makes the pruned values permanent.

Masks are PyTorch's: the ``amount`` entries (int) or ``round(amount * n)`` entries (float in
[0, 1], Python's round) of lowest importance are zeroed, chosen by ``topk``.
Deliberately different from PyTorch: among equal importances clgrad's topk prefers the lowest
flat index, whereas PyTorch's CPU topk picks by its selection algorithm (unspecified), so a
mask can differ where a tie straddles the cut; and the random methods (random_unstructured,
random_structured) draw from clgrad's generator, not PyTorch's, so their masks differ for one
seed (their counts do not).
"""
from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

from clgrad.creation import ones_like, rand, rand_like, zeros_like
from clgrad.nn.utils.convert_parameters import parameters_to_vector
from clgrad.ops.linalg import matrix_norm, vector_norm
from clgrad.ops.sort import kthvalue, topk

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask",
           "identity", "random_unstructured", "l1_unstructured", "random_structured",
           "ln_structured", "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


class BasePruningMethod(ABC):
    """A pruning technique: subclasses define ``compute_mask(t, default_mask)`` and a
    ``PRUNING_TYPE`` ("unstructured", "structured" with a ``dim``, or "global"). An instance
    is the forward pre-hook of the module it prunes."""

    _tensor_name: str = None

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask for ``t`` (importance scores), on top of ``default_mask`` (same shape)."""

    def apply_mask(self, module):
        """``module.<name>_mask * module.<name>_orig`` (differentiable in the original)."""
        if self._tensor_name is None:
            raise RuntimeError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)``: on first pruning move the
        parameter to ``<name>_orig``; compute the mask (from ``importance_scores``, default
        the tensor itself) on top of the existing mask; register ``<name>_mask`` and the hook.
        Returns the method (a PruningContainer when ``name`` was pruned before).
        Raises:  ValueError when importance_scores' shape differs from the tensor's; the
                 method's errors (the module is left as it was)"""
        method = _get_composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise ValueError(f"importance_scores should have the same shape as parameter "
                                 f"{name} of {module}, got {importance_scores.shape} vs "
                                 f"{orig.shape}")
        else:
            importance_scores = orig
        if not isinstance(method, PruningContainer):
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if not isinstance(method, PruningContainer):
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t * compute_mask(importance_scores or t, default_mask or ones)``."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise ValueError(f"importance_scores should have the same shape as tensor t, "
                                 f"got {importance_scores.shape} vs {t.shape}")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module) -> None:
        """Make the pruning permanent: ``<name>_orig`` (the same Parameter object) takes the
        masked values and becomes ``<name>`` again; the mask buffer is dropped."""
        if self._tensor_name is None:
            raise RuntimeError(f"Module {module} has to be pruned before pruning can be "
                               f"removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """The successive pruning methods of one tensor; its mask applies the last method to the
    part the earlier mask keeps: the unpruned entries ("unstructured"), the channels along
    ``dim`` not entirely pruned ("structured"), or everything ("global")."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method) -> None:
        """Append ``method``. Raises TypeError for a non-method, ValueError for a method of
        another tensor name."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found "
                             f"'{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        if method.PRUNING_TYPE == "unstructured":
            slc = default_mask == 1
        elif method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to '
                                     'have the attribute `dim` defined.')
            n_dims = t.dim()
            dim = method.dim + n_dims if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            keep_channel = default_mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            slc = [slice(None)] * n_dims
            slc[dim] = keep_channel
            slc = tuple(slc)
        elif method.PRUNING_TYPE == "global":
            slc = (slice(None),) * len(t.shape)
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        partial_mask = method.compute_mask(t[slc], default_mask=default_mask[slc])
        new_mask[slc] = partial_mask.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing: the reparametrization with a mask of ones."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class _TopKUnstructured(BasePruningMethod):
    """Prune the ``amount`` unpruned entries that ``_chosen`` picks (a count, or a fraction
    of the entries rounded as Python's round)."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        k = _nparams_toprune(self.amount, t.numel())
        mask = default_mask.clone()
        if k != 0:
            mask.view(-1)[self._chosen(t, k)] = 0
        return mask

    def _chosen(self, t, k):
        raise NotImplementedError


class RandomUnstructured(_TopKUnstructured):
    """Prune ``amount`` (int: a count; float in [0, 1]: a fraction, rounded) of the unpruned
    entries at random (the largest of uniform draws, clgrad's generator)."""

    def _chosen(self, t, k):
        return topk(rand_like(t).view(-1), k).indices

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_TopKUnstructured):
    """Prune the ``amount`` unpruned entries of smallest absolute value (topk of |t|,
    largest=False)."""

    def _chosen(self, t, k):
        return topk(t.abs().reshape(-1), k, largest=False).indices

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class _Structured(BasePruningMethod):
    """Prune the ``amount`` channels along ``dim`` that ``_kept`` does not keep, on top of
    the existing mask."""

    PRUNING_TYPE = "structured"

    def compute_mask(self, t, default_mask):
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        size = t.shape[self.dim]
        k = _nparams_toprune(self.amount, size)
        if k == 0:
            return default_mask
        mask = _channel_mask(t, self.dim, self._kept(t, size, k))
        return mask * default_mask.to(dtype=mask.dtype)

    def _kept(self, t, size, k):
        raise NotImplementedError


class RandomStructured(_Structured):
    """Prune ``amount`` whole channels along ``dim`` at random: the channels whose uniform
    draw is at most the k-th smallest (clgrad's generator)."""

    def __init__(self, amount, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount, self.dim = amount, dim

    def _kept(self, t, size, k):
        prob = rand(size, device=t.device)
        return prob > kthvalue(prob, k).values

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_Structured):
    """Prune the ``amount`` channels along ``dim`` of smallest L``n`` norm (keeps the topk
    of the norms); ``n``: a number, inf, -inf, 'fro' or 'nuc' (torch.norm's ``p``)."""

    def __init__(self, amount, n, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def _kept(self, t, size, k):
        return topk(_compute_norm(t, self.n, self.dim), size - k, largest=True).indices

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prune with a given mask (multiplied into the existing one)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise ValueError(f"default_mask shape {default_mask.shape} must match self.mask "
                             f"shape {self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    """Reparametrize ``module.<name>`` as pruned with a mask of ones. Returns module."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prune ``amount`` (int count or float fraction) random unpruned entries of
    ``module.<name>``. Returns module. Raises ValueError/TypeError for a bad amount."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune the ``amount`` unpruned entries of ``module.<name>`` with the smallest |value|
    (or importance score). Returns module. Raises ValueError/TypeError for a bad amount."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prune ``amount`` random channels of ``module.<name>`` along ``dim``. Returns module.
    Raises ValueError for a 1-D tensor or a bad amount, IndexError for a bad dim."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune the ``amount`` channels of ``module.<name>`` along ``dim`` with the smallest
    L``n`` norm. Returns module. Raises as random_structured."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the (module, name) tensors of ``parameters`` together: the method (an
    "unstructured" one, e.g. L1Unstructured with amount=) chooses among all their unpruned
    entries at once; each tensor then gets its part through custom_from_mask.
    Raises:  TypeError for a non-iterable ``parameters``, a non-dict ``importance_scores``
             or a method whose PRUNING_TYPE is not "unstructured" """
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector([importance_scores.get((module, name), getattr(module, name))
                                   for module, name in parameters])
    default_mask = parameters_to_vector([
        getattr(module, name + "_mask", None) if hasattr(module, name + "_mask")
        else ones_like(getattr(module, name)) for module, name in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the '
                        f'`pruning_method`. Found method {pruning_method} of type '
                        f'{method.PRUNING_TYPE}')
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores.detach(), default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        n = param.numel()
        custom_from_mask(module, name, mask=final_mask[pointer:pointer + n].view_as(param))
        pointer += n


def custom_from_mask(module, name, mask):
    """Prune ``module.<name>`` with ``mask`` (same shape; multiplied into an existing mask).
    Returns module. Raises ValueError for a mask of another shape."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name):
    """Make the pruning of ``module.<name>`` permanent (see BasePruningMethod.remove) and drop
    its hook. Returns module. Raises ValueError when ``name`` is not pruned."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                     f"can be removed")


def is_pruned(module) -> bool:
    """Whether ``module`` or a submodule has a pruning hook."""
    return any(isinstance(hook, BasePruningMethod) for _, m in module.named_modules()
               for hook in m._forward_pre_hooks.values())


# ---------------------------------------------------------------------------- private helpers

def _get_composite_method(cls, module, name, *args, **kwargs):
    """The new method, combined with the one already pruning ``name`` (its hook removed)
    into a PruningContainer."""
    old, keys = None, []
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            old = hook
            keys.append(k)
    if len(keys) > 1:
        raise RuntimeError(f"Avoid adding multiple pruning hooks to the same tensor {name} of "
                           f"module {module}. Use a PruningContainer.")
    for k in keys:
        del module._forward_pre_hooks[k]
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if isinstance(old, PruningContainer):
        old.add_pruning_method(method)
        method = old
    elif old is not None:
        container = PruningContainer(old)
        container.add_pruning_method(method)
        method = container
    return method


def _channel_mask(t, dim, channels):
    """Zeros like t with ones in the channels ``channels`` (indices or a bool mask) of dim."""
    mask = zeros_like(t)
    slc = [slice(None)] * len(t.shape)
    slc[dim] = channels
    mask[tuple(slc)] = 1
    return mask


def _validate_pruning_amount_init(amount) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral)
            and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         f"non-negative integer")


def _nparams_toprune(amount, tensor_size) -> int:
    """amount if int, else round(amount * tensor_size) (Python's round, as PyTorch);
    raises ValueError for an int amount above tensor_size."""
    if isinstance(amount, numbers.Integral):
        if amount > tensor_size:
            raise ValueError(f"amount={amount} should be smaller than the number of "
                             f"parameters to prune={tensor_size}")
        return int(amount)
    return round(amount * tensor_size)


def _validate_structured_pruning(t) -> None:
    if len(t.shape) <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional "
                         f"tensors. Found tensor of shape {t.shape} with {len(t.shape)} dims")


def _validate_pruning_dim(t, dim) -> None:
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _compute_norm(t, n, dim):
    """The L``n`` norm of t over every dim but ``dim`` (PyTorch's: 'nuc', and 'fro' over
    two dims, are matrix norms; the rest vector norms, 'fro' as 2)."""
    dims = list(range(t.dim()))
    dims.remove(dims[dim] if dim < 0 else dim)
    is_matrix_dim = len(dims) == 2
    if n == "nuc" or (n == "fro" and is_matrix_dim):
        return matrix_norm(t, ord=n, dim=tuple(dims) if is_matrix_dim else (-2, -1))
    return vector_norm(t, ord=2 if n == "fro" else n, dim=tuple(dims))
