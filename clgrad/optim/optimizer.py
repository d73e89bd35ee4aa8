"""The Optimizer base class: parameter groups, per-parameter state, zero_grad, state dicts.

Subclasses define ``_update(p, grad, group, state)``, which updates one parameter in place on
its device with ONE fused kernel launch (kernels/optim.cl); ``step`` calls it for every
parameter that has a gradient. Nothing is read back to the host during a step.
"""
from __future__ import annotations

import functools
import types
from collections import OrderedDict, defaultdict

import numpy as np

from clgrad import capture as _capture
from clgrad.autograd import enable_grad, no_grad
from clgrad.creation import from_numpy
from clgrad.ops import elementwise as ew
from clgrad.ops._util import same_device
# (the multi-tensor launches are the ops layer's: GradScaler uses them too)
from clgrad.ops.foreach import (MULTI, MULTI_CPU_MAX, launch_multi,  # noqa: F401
                                multi_chunks, multi_ok)
from clgrad.tensor import Tensor
from clgrad import dtypes

_BF16, _F32 = dtypes.bfloat16, dtypes.float32

__all__ = ["Optimizer", "required", "check_nonnegative", "state_buffer", "scalar_state",
           "check_execution_flags", "MULTI", "multi_default", "multi_chunks", "launch_multi"]


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


class Optimizer:
    """Base class. ``params``: an iterable of tensors, or of dicts (parameter groups) with a
    ``params`` entry and any hyperparameters that override ``defaults`` for that group.

    Attributes: ``param_groups`` (list of dicts), ``state`` (``defaultdict(dict)``: parameter
    -> dict, as PyTorch's, so ``self.state[p]`` of a new parameter is an empty dict),
    ``defaults``.
    Raises:     ValueError for an empty parameter list, a parameter in two groups, or a missing
                required hyperparameter; TypeError for a non-tensor, a set, or a non-leaf
    """

    def __init__(self, params, defaults: dict):
        self.defaults = dict(defaults)
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list = []
        if isinstance(params, Tensor):
            raise TypeError(f"{type(self).__name__}: params argument given to the optimizer "
                            f"should be an iterable of Tensors or dicts, but got a Tensor")
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__}: optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, param_group: dict):
        """Add a group: ``{'params': [...], 'lr': ..., ...}`` (defaults fill the rest)."""
        name = type(self).__name__
        if not isinstance(param_group, dict):
            raise TypeError(f"{name}: expected a param group dict, got "
                            f"{type(param_group).__name__}")
        params = param_group.get("params")
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(f"{name}: optimizer parameters need to be organized in ordered "
                            f"collections, but the ordering of tensors in sets will change "
                            f"between runs; use a list")
        params = list(params or ())
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"{name}: optimizer can only optimize Tensors, got "
                                f"{type(p).__name__}")
            if not p.is_leaf:
                raise TypeError(f"{name}: can't optimize a non-leaf Tensor")
            if not p.dtype.is_floating_point:
                raise TypeError(f"{name}: expected floating parameters, got {p.dtype}")
        group = {**self.defaults, **param_group, "params": params}
        for k, v in group.items():
            if v is required:
                raise ValueError(f"{name}: parameter group didn't specify a value of required "
                                 f"optimization parameter {k}")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in params}) != len(params) or seen & {id(p) for p in params}:
            raise ValueError(f"{name}: some parameters appear in more than one parameter "
                             f"group (or twice in one)")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True):
        """Reset every parameter's gradient: to None (default) or to zeros in place."""
        for g in self.param_groups:
            for p in g["params"]:
                if p._grad is None:  # (the slot: setting None needs none of the checks)
                    continue
                if set_to_none:
                    p._grad = None
                else:
                    ew.fill_raw(p._grad, 0)

    def step(self, closure=None):
        """One update of every parameter that has a gradient.

        ``closure``: an optional callable that re-evaluates the model and returns the loss
        (run with grad enabled before the update). Returns its loss, or None.
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                todo, bf16 = [], None
                for p in group["params"]:
                    g = p._grad  # (the slots, not the properties: a call less each)
                    if g is None:
                        continue
                    if g._storage.device is not p._storage.device:
                        same_device(f"{type(self).__name__}.step", p, g)
                    if g._storage.dtype is not p._storage.dtype:
                        raise RuntimeError(f"{type(self).__name__}: expected a gradient of "
                                           f"dtype {p.dtype}, got {g.dtype}")
                    if p._storage.dtype is _BF16:
                        bf16 = [*(bf16 or ()), (p, g)]
                        continue
                    todo.append((p, g))
                if bf16:
                    self._update_bf16(bf16, group)
                if todo and (self._multi is True or (self._multi == "auto" and
                                                     todo[0][0]._storage.device.kind != "cpu")):
                    todo = self._update_multi(todo, group)  # what the multi-tensor kernels take
                state = self.state
                for p, g in todo:
                    st = state.get(p)  # (not setdefault: no new dict per parameter and step)
                    if st is None:
                        st = state[p] = {}
                    self._update(p, g, group, st)
                    p._storage.version += 1  # (bump_version, inline: written in place)
        return loss

    def register_step_pre_hook(self, hook):
        """Call ``hook(optimizer, args, kwargs)`` before each ``step(*args, **kwargs)``; it may
        return None or a tuple ``(new_args, new_kwargs)`` that step then runs with. Hooks run
        in registration order. Returns a handle whose ``remove()`` unregisters the hook.
        Raises:  TypeError for a hook that is not callable; RuntimeError (at step) for a hook
                 that returns something else than None or a 2-tuple"""
        return _add_step_hook(self, "_optimizer_step_pre_hooks", hook)

    def register_step_post_hook(self, hook):
        """Call ``hook(optimizer, args, kwargs)`` after each ``step(*args, **kwargs)`` (its
        return value is ignored). Returns a handle whose ``remove()`` unregisters the hook.
        Raises:  TypeError for a hook that is not callable"""
        return _add_step_hook(self, "_optimizer_step_post_hooks", hook)

    _float_state: tuple = ()  # state keys kept as Python floats (PyTorch: 0-d tensors)
    _multi = False  # multi-tensor launches (foreach / fused), where a subclass has _update_multi

    def _update_bf16(self, todo: list, group: dict):
        """``_update`` of bfloat16 parameters [(p, grad)] (no kernel reads bfloat16): on float32
        copies of the parameter, its gradient and its state tensors, each written back rounded
        to bfloat16 once (PyTorch's bfloat16 updates round after each op of the formula, so the
        two may differ in the last bit). The state stays bfloat16, as PyTorch's."""
        for p, g in todo:
            st = self.state.setdefault(p, {})
            st32 = {k: ew.to(v, _F32) if isinstance(v, Tensor) and v.dtype is _BF16 else v
                    for k, v in st.items()}
            p32 = ew.to(p, _F32)
            self._update(p32, ew.to(g, _F32), group, st32)
            ew.copy_raw(p, p32)
            p._storage.version += 1
            for k, v in st32.items():
                old = st.get(k)
                if isinstance(old, Tensor) and old.dtype is _BF16:
                    ew.copy_raw(old, v)
                else:  # made by this first update (float32, p32's dtype), or a number
                    st[k] = ew.to(v, _BF16) if isinstance(v, Tensor) and v.dtype is _F32 \
                        else v

    def _update_multi(self, todo: list, group: dict) -> list:
        """Update parameters of ``todo`` [(p, grad)] in multi-tensor launches; return the pairs
        left for ``_update`` (one launch each)."""
        return todo

    def _update(self, p: Tensor, grad: Tensor, group: dict, state: dict):
        raise NotImplementedError

    # -- state dicts ------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """``{'state': {index: {...}}, 'param_groups': [{..., 'params': [index, ...]}]}``.

        Parameters are numbered across groups in order (PyTorch's layout); ``state`` is keyed
        by those ints, as PyTorch's, so ``torch.optim.<X>.load_state_dict`` of it (or of a
        ``clgrad.save``d .pt file read by ``torch.load``) restores the state.
        ``load_state_dict`` also accepts str keys ('0', '1', ...: what clgrad wrote before).
        The state tensors are the live ones: save or copy the dict before the next step.
        """
        index, groups = {}, []
        for g in self.param_groups:
            ids = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": ids})
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict):
        """Restore hyperparameters and per-parameter state saved by ``state_dict``.

        State tensors are copied (cast to each parameter's dtype and device), never aliased.
        A ``step`` saved as a one-element tensor or array (PyTorch's) becomes an int, the
        scalars a subclass names in ``_float_state`` (NAdam's ``mu_product``) floats.
        Raises ValueError when the number of groups or the group sizes differ.
        """
        name = type(self).__name__
        groups = state_dict.get("param_groups") if isinstance(state_dict, dict) else None
        if groups is None or "state" not in state_dict:
            raise ValueError(f"{name}.load_state_dict: expected a dict with 'state' and "
                             f"'param_groups', got {type(state_dict).__name__}")
        if len(groups) != len(self.param_groups):
            raise ValueError(f"{name}.load_state_dict: loaded state dict has {len(groups)} "
                             f"parameter groups, the optimizer has {len(self.param_groups)}")
        for i, (saved, own) in enumerate(zip(groups, self.param_groups)):
            if len(saved["params"]) != len(own["params"]):
                raise ValueError(f"{name}.load_state_dict: loaded state dict contains a "
                                 f"parameter group {i} of {len(saved['params'])} parameters, "
                                 f"which doesn't match the size of optimizer's group "
                                 f"({len(own['params'])})")
        saved_state = {}
        for k, v in state_dict["state"].items():
            try:
                saved_state[int(k)] = v
            except (TypeError, ValueError):
                raise ValueError(f"{name}.load_state_dict: expected parameter indices (int, "
                                 f"or str of an int) as the keys of 'state', got "
                                 f"{k!r}") from None
        self.state = defaultdict(dict)
        for saved, own in zip(groups, self.param_groups):
            for idx, p in zip(saved["params"], own["params"]):
                s = saved_state.get(int(idx))
                if s is not None:
                    self.state[p] = {k: _step_count(v) if k == "step" else
                                     _host_float(v) if k in self._float_state else
                                     _copy_state(v, p) for k, v in s.items()}
            own.update({k: v for k, v in saved.items() if k != "params"})
            if isinstance(own.get("betas"), list):
                own["betas"] = tuple(own["betas"])

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(g.items()) if k != "params"]
        return "\n".join(lines) + "\n)"


def _add_step_hook(opt, store: str, hook):
    from clgrad.autograd.graph import RemovableHandle, _hook_keys
    if not callable(hook):
        raise TypeError(f"{type(opt).__name__}: expected a callable step hook, got "
                        f"{type(hook).__name__}")
    hooks = opt.__dict__.get(store)
    if hooks is None:
        hooks = opt.__dict__[store] = OrderedDict()
    key = next(_hook_keys)
    hooks[key] = hook
    if "step" not in opt.__dict__:  # the first hook: this optimizer's step runs the hooks
        # (an instance attribute, so that an optimizer without hooks pays no call for them)
        opt.__dict__["step"] = types.MethodType(_hooked_step(type(opt).step), opt)
    return RemovableHandle(hooks, key)


def _hooked_step(step):
    """``step`` (the optimizer class's) running the optimizer's step pre- and post-hooks
    around it; bound to the optimizer by its first hook (_add_step_hook). A subclass's
    ``super().step()`` reaches the class functions, so the hooks run once per call."""
    @functools.wraps(step)
    def hooked(self, *args, **kwargs):
        d = self.__dict__
        if d.get("_in_hooked_step") or not (d.get("_optimizer_step_pre_hooks") or
                                            d.get("_optimizer_step_post_hooks")):
            return step(self, *args, **kwargs)
        for hook in list(d.get("_optimizer_step_pre_hooks", {}).values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f"{hook} must return None or a tuple of (new_args, "
                                       f"new_kwargs), but got {result}.")
                args, kwargs = result
        d["_in_hooked_step"] = True
        try:
            out = step(self, *args, **kwargs)
        finally:
            d["_in_hooked_step"] = False
        for hook in list(d.get("_optimizer_step_post_hooks", {}).values()):
            hook(self, args, kwargs)
        return out
    return hooked


def check_nonnegative(name: str, **values):
    """Raise ValueError ``<name>: expected <k> >= 0, got <v>`` for the first negative value."""
    for k, v in values.items():
        if not v >= 0.0:  # NaN fails too
            raise ValueError(f"{name}: expected {k} >= 0, got {v}")


def check_execution_flags(name: str, differentiable: bool = False):
    """PyTorch's execution flags: ``capturable`` is accepted and changes nothing here (every
    step is capturable, see clgrad/capture/); ``foreach``/``fused`` pick the launches (see
    ``multi_default``); ``differentiable`` must be False. Raises NotImplementedError for
    differentiable=True."""
    if differentiable:
        raise NotImplementedError(f"{name}: differentiable=True (autograd through the update) "
                                  f"is not supported")


def multi_default(foreach, fused):
    """How an optimizer launches its updates: True (``foreach=True`` or ``fused=True``: up to
    MULTI contiguous parameters per launch, the *_multi kernels, on every device), False
    (``foreach=False``: one launch per parameter) or "auto" (``foreach=None``, the default:
    multi-tensor launches on GPUs only). PyTorch's default is likewise its multi-tensor path
    on CUDA and a loop on CPU. The two give the same bits. On a GPU a launch costs 10-60 µs of
    host time; on CPU devices the *_multi kernels gained nothing on Intel's runtime and ran
    2-5x slower on PoCL (not vectorised: ShuffleNetV2's update 8.5 against 4.0 ms)."""
    if fused or foreach:
        return True
    return False if foreach is False else "auto"


def state_buffer(state: dict, key: str, p: Tensor, fill=0.0) -> Tensor:
    """``state[key]``, first made as a tensor of p's shape, dtype and device filled with
    ``fill`` (a state entry a group's hyperparameters start needing is made when needed)."""
    buf = state.get(key)
    if buf is None:
        from clgrad.creation import full
        with _capture.paused():  # made eagerly, never part of a captured step's replay
            buf = state[key] = full(tuple(p.shape), fill, dtype=p.dtype, device=p._storage.device)
    return buf


def scalar_state(value: float) -> float:
    """``value`` rounded as PyTorch's per-parameter scalar state holds it (a 0-d tensor of
    float64 when the default dtype is float64, else float32): NAdam's mu_product, ASGD's eta
    and mu, so that trajectories match PyTorch's to the last bit."""
    if dtypes.get_default_dtype() is dtypes.float64:
        return float(value)
    return float(np.float32(value))


def _step_count(value):
    """A saved step count as an int (PyTorch keeps it as a float tensor)."""
    if isinstance(value, (Tensor, np.ndarray)):
        return int(value.item())
    return value


def _host_float(value):
    """A saved per-parameter scalar (NAdam's mu_product, ASGD's eta and mu) as a float."""
    if isinstance(value, (Tensor, np.ndarray)):
        return float(value.item())
    return value


def _copy_state(value, p: Tensor):
    """A private device copy of a saved state value (tensors follow p's dtype and device;
    lists, tuples and dicts are copied with their items, as PyTorch's _cast: LBFGS's history)."""
    if isinstance(value, (list, tuple)):
        return type(value)(_copy_state(v, p) for v in value)
    if isinstance(value, dict):
        return {k: _copy_state(v, p) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        value = from_numpy(np.ascontiguousarray(value), device=p._storage.device)
    if not isinstance(value, Tensor):
        return value
    if value._storage.device is not p._storage.device:
        value = value.to(p._storage.device)
    if value.dtype.is_floating_point and value.dtype is not p.dtype:
        value = value.to(p.dtype)
    return ew.contiguous(value.detach(), force_copy=True)
