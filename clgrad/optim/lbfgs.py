"""L-BFGS with PyTorch's algorithm, arguments and state (torch.optim.LBFGS), and the refusal
of SparseAdam (clgrad has no sparse gradients)."""
from __future__ import annotations

import math

from clgrad.autograd import enable_grad, no_grad
from clgrad.creation import zeros
from clgrad.ops.index import cat
from clgrad.optim.optimizer import Optimizer, check_nonnegative
from clgrad.tensor import Tensor

__all__ = ["LBFGS", "SparseAdam"]


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clipped to ``bounds``
    (default: the interval between x1 and x2); its middle when the cubic has no minimum
    (J. Nocedal and S. Wright, "Numerical Optimization", 2006, eq. 3.59; PyTorch's form)."""
    if bounds is not None:
        lo, hi = bounds
    else:
        lo, hi = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (lo + hi) / 2.0
    d2 = math.sqrt(d2_square)
    if x1 <= x2:
        pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(pos, lo), hi)


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """A line search along ``d`` for a step ``t`` meeting the strong Wolfe conditions
    (Nocedal and Wright, algorithms 3.5 and 3.6: bracketing, then zoom by cubic
    interpolation), PyTorch's ``_strong_wolfe`` step for step. ``obj_func(x, t, d)`` ->
    (loss, flat gradient) at x + t d. Returns (loss, flat gradient, t, evaluations)."""
    d_norm = _abs_max(d)
    g = g.clone()
    f_new, g_new = obj_func(x, t, d)
    evals = 1
    gtd_new = _dot(g_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:  # bracketing phase
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            break
        min_step, max_step = t + 0.01 * (t - t_prev), t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.clone(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1
    if ls_iter == max_ls:  # reached the maximum number of evaluations
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]
    insufficient = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:  # zoom phase
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1],
                               bracket_f[1], bracket_gtd[1])
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:  # too close to a boundary
            if insufficient or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high] = t, f_new
            bracket_g[high], bracket_gtd[high] = g_new.clone(), gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low] = t, f_new
            bracket_g[low], bracket_gtd[low] = g_new.clone(), gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals


def _dot(a: Tensor, b: Tensor) -> float:
    return float(a.dot(b))


def _abs_max(a: Tensor) -> float:
    return float(a.abs().max())


class LBFGS(Optimizer):
    """L-BFGS (D. C. Liu and J. Nocedal, "On the limited memory BFGS method for large scale
    optimization", Math. Programming 45, 1989), PyTorch's algorithm (after minFunc): each
    ``step(closure)`` runs up to ``max_iter`` iterations, each a two-loop recursion over the
    last ``history_size`` curvature pairs for the direction, then a step of lr (the first
    iteration: min(1, 1 / |g|_1) * lr), or a strong-Wolfe line search when
    ``line_search_fn="strong_wolfe"``. It stops early when max |g| <= tolerance_grad, when
    the function or the step changes by less than tolerance_change, or after ``max_eval``
    evaluations of the closure.

    Args:    params (one group only), lr=1, max_iter=20, max_eval=max_iter * 5 // 4,
             tolerance_grad=1e-7, tolerance_change=1e-9, history_size=100,
             line_search_fn=None or "strong_wolfe"
    step:    ``step(closure)``: closure() re-evaluates the model, calls backward and returns
             the loss (run with grad enabled); returns the closure's first loss
    State:   of the first parameter, PyTorch's keys: ``func_evals``, ``n_iter`` (ints),
             ``d``, ``prev_flat_grad`` (flat tensors of all parameters' numel),
             ``old_dirs``, ``old_stps`` (lists of such tensors), ``ro``, ``al`` (lists),
             ``t``, ``H_diag``, ``prev_loss`` (numbers)
    Differs: the scalars of the recursion and the line search (dot products, step sizes,
             losses) are Python floats (double precision), read from the device once each;
             PyTorch keeps some as 0-d tensors of the parameters' dtype, so float32 iterates
             can differ from PyTorch's in the last bits (float64 ones agree to rounding)
    Raises:  ValueError for a negative lr, parameter groups, or a line_search_fn other than
             None and "strong_wolfe"; TypeError for a missing closure; RuntimeError for
             parameters of different dtypes or devices (the flat vectors need one)
    """

    def __init__(self, params, lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9,
                 history_size: int = 100, line_search_fn: str | None = None):
        if isinstance(lr, Tensor):
            if lr.numel() != 1:
                raise ValueError(f"LBFGS: expected a 1-element Tensor lr, got {lr.numel()} "
                                 f"elements")
            lr = float(lr)
        check_nonnegative("LBFGS", lr=lr)
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: expected line_search_fn None or 'strong_wolfe', got "
                             f"{line_search_fn!r}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size, line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]
        p0 = self._params[0]
        for p in self._params:
            if p.dtype is not p0.dtype or p._storage.device is not p0._storage.device:
                raise RuntimeError(f"LBFGS: expected every parameter of dtype {p0.dtype} on "
                                   f"{p0._storage.device.name}, got one of {p.dtype} on "
                                   f"{p._storage.device.name}")

    def add_param_group(self, param_group: dict):
        """Refused after construction, as PyTorch's LBFGS (one group only)."""
        if self.param_groups:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        super().add_param_group(param_group)

    def load_state_dict(self, state_dict: dict):
        """Optimizer.load_state_dict, then the scalars PyTorch saves as 0-d tensors (``t``,
        ``H_diag``, ``ro``, ``al``) become Python floats, as this class keeps them."""
        super().load_state_dict(state_dict)
        for state in self.state.values():
            for k in ("t", "H_diag", "prev_loss"):
                if isinstance(state.get(k), Tensor):
                    state[k] = float(state[k])
            for k in ("ro", "al"):
                if isinstance(state.get(k), list):
                    state[k] = [float(v) if isinstance(v, Tensor) else v for v in state[k]]

    def _gather_flat_grad(self) -> Tensor:
        p0 = self._params[0]
        return cat([zeros(p.numel(), dtype=p.dtype, device=p0._storage.device)
                    if p.grad is None else p.grad.reshape(-1) for p in self._params], 0)

    def _add_grad(self, step_size: float, update: Tensor):
        offset = 0
        for p in self._params:
            n = p.numel()
            p.add_(update[offset:offset + n].view(p.shape), alpha=step_size)
            offset += n

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        for p, saved in zip(self._params, x):
            p.copy_(saved)
        return loss, flat_grad

    def step(self, closure=None):
        """Up to ``max_iter`` L-BFGS iterations (see the class doc); returns the closure's loss
        at the start.

        Raises:  TypeError when ``closure`` is missing
        """
        if closure is None:
            raise TypeError("LBFGS.step: expected a closure that reevaluates the model and "
                            "returns the loss, got None")
        with no_grad():
            return self._step(closure)

    def _step(self, closure):
        def evaluate():
            with enable_grad():
                return closure()
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]
        state = self.state.setdefault(self._params[0], {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = evaluate()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if _abs_max(flat_grad) <= tolerance_grad:  # already optimal
            return orig_loss
        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag = state.get("H_diag")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:  # the two-loop recursion over the curvature pairs (y, s)
                y = flat_grad.sub(prev_flat_grad)
                s = d.mul(t)
                ys = _dot(y, s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / _dot(y, y)
                num_old = len(old_dirs)
                if "al" not in state:
                    state["al"] = [None] * history_size
                al = state["al"]
                q = flat_grad.neg()
                for i in range(num_old - 1, -1, -1):
                    al[i] = _dot(old_stps[i], q) * ro[i]
                    q.add_(old_dirs[i], alpha=-al[i])
                d = r = q.mul(H_diag)
                for i in range(num_old):
                    be_i = _dot(old_dirs[i], r) * ro[i]
                    r.add_(old_stps[i], alpha=al[i] - be_i)
            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone()
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / float(flat_grad.abs().sum())) * lr
            else:
                t = lr
            gtd = _dot(flat_grad, d)
            if gtd > -tolerance_change:  # not a descent direction
                break
            ls_evals = 0
            if line_search_fn is not None:
                x_init = [p.clone() for p in self._params]
                loss, flat_grad, t, ls_evals = _strong_wolfe(
                    lambda x, t, d: self._directional_evaluate(evaluate, x, t, d),
                    x_init, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = _abs_max(flat_grad) <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    loss = float(evaluate())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = _abs_max(flat_grad) <= tolerance_grad
                    ls_evals = 1
            current_evals += ls_evals
            state["func_evals"] += ls_evals
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if _abs_max(d.mul(t)) <= tolerance_change:  # the step changes too little
                break
            if abs(loss - prev_loss) < tolerance_change:  # so does the function
                break
        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss


class SparseAdam(Optimizer):
    """``torch.optim.SparseAdam``: not supported. It updates only the rows a sparse gradient
    touches (``nn.Embedding(sparse=True)``), and clgrad has no sparse tensors or gradients
    (Embedding's ``sparse=True`` raises); with dense gradients PyTorch's SparseAdam raises too.

    Raises:  NotImplementedError at construction, naming the alternative (``optim.Adam``)
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False):
        raise NotImplementedError(
            "SparseAdam: clgrad has no sparse gradients (nn.Embedding(sparse=True) is not "
            "supported), and SparseAdam does not support dense gradients; use optim.Adam "
            "(the same update applied to every element) instead")
