"""The legacy torch.nn.utils.spectral_norm / remove_spectral_norm: a forward pre-hook that
sets ``weight = weight_orig / sigma`` before each forward, sigma = u . (W v) from the power
method's buffers ``weight_u``, ``weight_v`` (advanced in training mode only). PyTorch 2.14's
torch/nn/utils/spectral_norm.py (Miyato et al. 2018, arXiv:1802.05957), followed step by
step, with its state_dict version metadata and its loader of version-0 checkpoints."""
from __future__ import annotations

from clgrad.autograd import no_grad
from clgrad.creation import from_numpy
from clgrad.nn.conv import ConvTranspose1d, ConvTranspose2d
from clgrad.nn.module import Module, Parameter, UninitializedParameter
from clgrad.nn.three_d import ConvTranspose3d
from clgrad.ops.composite import mv
from clgrad.ops.products import vdot
from clgrad.ops.reduce import normalize
from clgrad.tensor import Tensor

__all__ = ["SpectralNorm", "SpectralNormLoadStateDictPreHook", "SpectralNormStateDictHook",
           "spectral_norm", "remove_spectral_norm"]


class SpectralNorm:
    """The forward pre-hook of the legacy spectral_norm (one per parametrized name).
    Invariant after each training forward: u = normalize(W_orig v)."""

    _version: int = 1

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12):
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.dim = name, dim
        self.n_power_iterations, self.eps = n_power_iterations, eps

    def reshape_weight_to_matrix(self, weight):
        """The weight as a (size of dim, rest) matrix, ``dim`` moved first."""
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.dim())
                                                if d != self.dim])
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool):
        """weight_orig / sigma; with ``do_power_iteration`` the power method first updates
        the buffers in place: v <- normalize(W^T u), u <- normalize(W v), n times."""
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(normalize(mv(weight_mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(normalize(mv(weight_mat, v), dim=0, eps=self.eps))
                # clones: a later forward's in-place update must not touch what this saved
                u, v = u.clone(), v.clone()
        sigma = vdot(u, mv(weight_mat, v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        """Put back ``name`` as one Parameter holding weight_orig / sigma (no iteration)."""
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name,
                self.compute_weight(module, do_power_iteration=module.training))

    def _solve_v_and_rescale(self, weight_mat, u, target_sigma):
        """A v with u = normalize(W v) and u . W v = target_sigma (via W's pseudo-inverse)."""
        v = (weight_mat.t().mm(weight_mat).pinverse() @ weight_mat.t() @ u.unsqueeze(1))
        v = v.squeeze(1)
        return v * (target_sigma / vdot(u, mv(weight_mat, v)))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int,
              eps: float) -> SpectralNorm:
        """Move parameter ``name`` to ``name_orig``, add the buffers ``name_u``, ``name_v``
        (random normal, normalized; clgrad's generator, not PyTorch's) and the hooks.
        Raises:  RuntimeError for a second spectral_norm on ``name``; ValueError for a None
                 or uninitialized parameter"""
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `SpectralNorm` can't have uninitialized "
                             "parameters. Make sure to run the dummy forward before applying "
                             "spectral normalization")
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        module._register_state_dict_hook(SpectralNormStateDictHook(fn))
        module._register_load_state_dict_pre_hook(SpectralNormLoadStateDictPreHook(fn))
        return fn


class SpectralNormLoadStateDictPreHook:
    """Loads a version-0 checkpoint (``weight``, ``weight_orig``, ``weight_u`` without
    ``weight_v``): v solved so that u = normalize(W v) and u . W v = mean(W_orig / W)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, state_dict, prefix, local_metadata, strict, missing_keys,
                 unexpected_keys, error_msgs):
        fn = self.fn
        version = local_metadata.get("spectral_norm", {}).get(fn.name + ".version", None)
        if version is not None and version >= 1:
            return
        weight_key = prefix + fn.name
        if version is None and all(weight_key + s in state_dict for s in
                                   ("_orig", "_u", "_v")) and weight_key not in state_dict:
            return
        missing = [weight_key + s for s in ("_orig", "", "_u")
                   if weight_key + s not in state_dict]
        if missing:
            if strict:
                missing_keys.extend(missing)
            return
        with no_grad():
            weight_orig = _as_tensor(state_dict[weight_key + "_orig"])
            weight = _as_tensor(state_dict.pop(weight_key))
            sigma = (weight_orig / weight).mean()
            weight_mat = fn.reshape_weight_to_matrix(weight_orig)
            u = _as_tensor(state_dict[weight_key + "_u"])
            state_dict[weight_key + "_v"] = fn._solve_v_and_rescale(weight_mat, u, sigma)


class SpectralNormStateDictHook:
    """Writes ``{"spectral_norm": {"<name>.version": 1}}`` into the module's state_dict
    metadata (PyTorch's)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata):
        meta = local_metadata.setdefault("spectral_norm", {})
        key = self.fn.name + ".version"
        if key in meta:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        meta[key] = self.fn._version


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Legacy spectral normalization: before every forward ``module.<name>`` is set to
    ``<name>_orig / sigma`` (see SpectralNorm); state_dict keys ``<name>_orig``, ``<name>_u``,
    ``<name>_v`` (PyTorch's). ``dim``: the output dim (default 0, 1 for ConvTranspose).
    Returns: module.
    Raises:  see SpectralNorm.apply"""
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) \
            else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo spectral_norm: ``name`` is one Parameter again (weight_orig / sigma), the hooks
    are gone. Returns: module.  Raises ValueError when ``name`` has no spectral_norm."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            break
    else:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    for store in (module._state_dict_hooks, module._load_state_dict_pre_hooks):
        for k, hook in list(store.items()):
            if isinstance(hook, (SpectralNormStateDictHook, SpectralNormLoadStateDictPreHook)) \
                    and hook.fn.name == name:
                del store[k]
                break
    return module


def _as_tensor(x):
    """A checkpoint value as a Tensor (state dicts may hold NumPy arrays)."""
    return x if isinstance(x, Tensor) else from_numpy(x)
