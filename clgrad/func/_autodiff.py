"""torch.func's autodiff transforms over clgrad's tape: grad, grad_and_value, vjp, jacrev,
jacfwd, hessian, jvp.

PyTorch's functorch wraps the inputs of each transform in a tensor of its own "level"; clgrad
has one tape, so a transform gives ``func`` a fresh differentiable alias of each input it
differentiates (``x.detach().requires_grad_()``, or ``x.view_as(x)`` when ``x`` is tracked by
an enclosing computation, so that the result stays differentiable with respect to ``x``) and
calls ``clgrad.autograd.grad`` on ``func``'s output. Gradients are themselves differentiable
(``create_graph=True``) exactly when something outside the transform can still use that: grad
mode was on at the call and the output depends on a tensor tracked outside the transform (an
enclosing transform's input, a model parameter that requires grad), or, for a vjp, on
cotangents that require grad. Otherwise the results carry no graph (as PyTorch's, unwrapped
from their level). So ``grad(grad(f))``, ``hessian``, ``jvp`` and ``grad`` of a function of
parameters that require grad need ``autograd.grad(..., create_graph=True)``.

jacfwd is computed in reverse mode (clgrad has no forward-mode AD): the same Jacobian as
jacrev, one backward per output element; jvp is the double-vjp trick: with ``g(u) = J^T u``
(a vjp with a dummy cotangent ``u`` that requires grad), ``J v`` is the vjp of ``g`` with
respect to ``u`` along ``v`` (Townsend, "A new trick for calculating Jacobian vector
products", 2017).
"""
from __future__ import annotations

import functools

from clgrad.autograd import graph as _graph
from clgrad.autograd.grad_mode import enable_grad, is_grad_enabled
from clgrad.creation import zeros_like
from clgrad.func._pytree import tree_flatten, tree_map, tree_unflatten
from clgrad.func._vmap import RandomGuard, check_randomness
from clgrad.ops.index import stack
from clgrad.tensor import Tensor

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian"]


def grad(func, argnums=0, has_aux: bool = False):
    """The gradient of a scalar function (PyTorch's ``torch.func.grad``).

    ``grad(func, argnums)(*args, **kwargs)`` returns d func(*args, **kwargs) / d args[argnums]:
    for an int ``argnums`` one tree shaped as that argument (a Tensor, or a dict/tuple/list of
    tensors, e.g. a model's parameters), for a tuple of ints a tuple of such trees. Every
    tensor differentiated must be floating point; ``func`` must return a 0-dim floating tensor
    (``has_aux``: a pair ``(that tensor, aux)``; then ``(gradients, aux)`` is returned).
    A tensor the output does not depend on gets zeros. Grad mode is on inside ``func`` whatever
    it is outside (a no_grad inside func is obeyed), as in PyTorch.

    Raises: RuntimeError for a non-Tensor or non-0-dim output, a bad has_aux output, argnums
            not an int or a tuple of unique ints in range (PyTorch's messages); ValueError for
            a non-tensor among the differentiated arguments; NotImplementedError from
            autograd.grad when a nested derivative needs create_graph=True and clgrad's
            autograd lacks it (see the module docstring).
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grads, (_, aux) = _grad_and_value(func, argnums, has_aux, args, kwargs)
        return (grads, aux) if has_aux else grads

    return wrapper


def grad_and_value(func, argnums=0, has_aux: bool = False):
    """``(gradients, value)`` of a scalar function in one evaluation (PyTorch's
    ``torch.func.grad_and_value``): the gradients as :func:`grad` gives them, the value
    ``func``'s output (``has_aux``: ``(gradients, (value, aux))``). Raises as :func:`grad`."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grads, (value, aux) = _grad_and_value(func, argnums, has_aux, args, kwargs)
        return (grads, (value, aux)) if has_aux else (grads, value)

    return wrapper


def vjp(func, *primals, has_aux: bool = False):
    """``(output, vjp_fn)`` (``has_aux``: ``(output, vjp_fn, aux)``): ``func(*primals)`` and
    the function of its vector-Jacobian product (PyTorch's ``torch.func.vjp``).

    ``vjp_fn(cotangents, retain_graph=True, create_graph=None)``: ``cotangents`` has the
    structure of ``output`` (each tensor of its output's shape); returns a tuple with, per
    primal, the tree ``sum_k cotangent_k^T d output_k / d primal`` (zeros where the output
    does not depend on it). It may be called several times. ``create_graph=None``: a graph
    when grad mode is on at the call and something outside can differentiate the result (the
    output depends on a tracked tensor, or a cotangent requires grad; module docstring).
    PyTorch's None means grad mode alone, which here would ask for a graph on every call.

    Raises: RuntimeError for outputs that are not all floating tensors (or an empty output),
            cotangents of another structure than the output, a bad has_aux output; ValueError
            for a non-tensor among the primals (PyTorch's messages).
    """
    core = _Vjp(func, primals, None, has_aux, "vjp(f, *primals)")
    out = core.output()

    def vjp_fn(cotangents, retain_graph: bool = True, create_graph=None):
        flat, spec = tree_flatten(cotangents)
        if spec != core.out_spec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function. cotangents: "
                               f"{spec!r}, primal output: {core.out_spec!r}")
        return tree_unflatten(core.pullback(flat, retain_graph, create_graph), core.in_spec)

    return (out, vjp_fn, core.aux) if has_aux else (out, vjp_fn)


def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size=None):
    """The Jacobian of ``func`` with respect to ``args[argnums]``, by reverse mode (PyTorch's
    ``torch.func.jacrev``).

    Shapes: for an output of shape O and a differentiated input of shape I, a tensor of shape
    O + I (element [o, i] = d out[o] / d in[i]); several outputs or inputs give the nested
    structure PyTorch gives: the output's tree, each leaf holding the input's tree (a tuple of
    them for a tuple ``argnums``). ``has_aux``: returns ``(jacobian, aux)``. ``chunk_size``
    (None or > 0) is accepted for PyTorch's API; clgrad computes one row (one backward per
    output element, the graph retained) at a time whatever it is.

    Raises: ValueError for chunk_size <= 0 (PyTorch's message) and as :func:`vjp`.
    """
    if chunk_size is not None and not chunk_size > 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args):
        core = _Vjp(func, args, argnums, has_aux, "jacrev")
        jac = core.jacobian()
        return (jac, core.aux) if has_aux else jac

    return wrapper


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """The Jacobian of ``func`` (PyTorch's ``torch.func.jacfwd``), computed IN REVERSE MODE.

    clgrad has no forward-mode AD, so this is :func:`jacrev`: the same Jacobian (same
    shapes, same numbers up to rounding), at the cost of one backward per OUTPUT element
    rather than one forward per input element (README "Deliberately different").
    ``randomness`` ('error', 'different', 'same'): PyTorch vmaps func over the basis, so a
    random op in func raises under 'error'; here func runs once: 'error' raises if it drew
    random numbers, 'same' and 'different' give the Jacobian of that one draw.

    Raises: as :func:`jacrev`; ValueError for another randomness; RuntimeError when func
            draws random numbers under randomness='error'.
    """
    check_randomness(randomness, "jacfwd")
    rev = jacrev(func, argnums, has_aux=has_aux)

    @functools.wraps(func)
    def wrapper(*args):
        with RandomGuard("error" if randomness == "error" else "different"):
            return rev(*args)

    return wrapper


def hessian(func, argnums=0):
    """The Hessian of a scalar ``func`` with respect to ``args[argnums]`` (PyTorch's
    ``torch.func.hessian``): ``jacfwd(jacrev(func, argnums), argnums)``, so an input of shape
    I gives I + I. Needs ``autograd.grad(create_graph=True)`` (a derivative of a derivative).
    """
    return jacfwd(jacrev(func, argnums), argnums)


def jvp(func, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """``(func(*primals), J @ tangents)``, the Jacobian-vector product (PyTorch's
    ``torch.func.jvp``), computed by the double-vjp trick (module docstring) since clgrad has
    no forward mode: the same numbers, two backwards instead of one forward.

    ``primals``: a tuple of tensors (or trees of them), ``tangents`` the same structure with
    the same shapes. ``has_aux``: func returns ``(output, aux)``, jvp ``(output, jvp_out,
    aux)``. ``strict``: raise when an output does not depend on the primals (otherwise its
    tangent is zeros). Needs ``autograd.grad(create_graph=True)``.

    Raises: RuntimeError for primals that are not a tuple, tangents of another structure or
            shape, a non-tensor among them, non-tensor or non-floating outputs (PyTorch's
            messages).
    """
    api = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to "
                           f"call f(*primals).")
    flat_t, t_spec = tree_flatten(tangents)
    p_spec = tree_flatten(primals)[1]
    if p_spec != t_spec:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python "
                           f"structure. For example, if primals is a tuple of 3 tensors, "
                           f"tangents also must be. Got primals with structure {p_spec!r} and "
                           f"tangents with structure {t_spec!r}")
    _tensors_only(tree_flatten(primals)[0], api, "primals")
    _tensors_only(flat_t, api, "tangents")
    core = _Vjp(func, primals, None, has_aux, api)
    for i, (p, t) in enumerate(zip(core.fresh, flat_t)):
        if t.shape != p.shape:
            raise RuntimeError(f"{api}: tangent {i} has shape {tuple(t.shape)}, expected the "
                               f"shape of its primal, {tuple(p.shape)}")
    out = core.output()
    tangents_out = core.pushforward(flat_t, strict)
    result = tree_unflatten(tangents_out, core.out_spec)
    return (out, result, core.aux) if has_aux else (out, result)


# -- the core: a function's output and its pullback ------------------------------------------
class _Vjp:
    """``func`` called on fresh differentiable aliases of the differentiated arguments, under
    grad mode; ``pullback`` (vector-Jacobian products), ``jacobian`` and ``pushforward`` (the
    double vjp) of its output. ``connected``: whether the results must keep a graph (grad mode
    was on and the output depends on a tensor tracked outside; the module docstring)."""

    def __init__(self, func, args, argnums, has_aux, api, scalar=False):
        self.api, outer = api, is_grad_enabled()
        args = tuple(args)
        diff = args if argnums is None else _slice_argnums(args, argnums)
        flat, self.in_spec = tree_flatten(diff)
        self.fresh = [_fresh(x, outer) for x in flat]
        new = tree_unflatten(self.fresh, self.in_spec)
        call = new if argnums is None else _replace_args(args, new, argnums)
        with enable_grad():
            out = func(*call)
        self.aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError(f"{api}: output of function f should be a tuple: (output, "
                                   f"aux) if has_aux is True")
            out, self.aux = out
        if scalar:
            _check_scalar(out, api)
        self.flat_out, self.out_spec = tree_flatten(out)
        _check_outputs(self.flat_out, api)
        self.connected = outer and _reaches_outside(self.flat_out, self.fresh)
        if not self.connected and has_aux:
            self.aux = tree_map(_detached, self.aux)

    def output(self):
        """func's output: detached unless it must stay connected."""
        flat = self.flat_out if self.connected else [o.detach() for o in self.flat_out]
        return tree_unflatten(flat, self.out_spec)

    def pullback(self, cotangents, retain_graph=True, create_graph=None):
        """Per fresh input, sum_k cotangent_k^T d out_k / d input (zeros where unused)."""
        for i, (c, o) in enumerate(zip(cotangents, self.flat_out)):
            if not isinstance(c, Tensor) or c.shape != o.shape:
                got = tuple(c.shape) if isinstance(c, Tensor) else type(c)
                raise RuntimeError(f"{self.api}: cotangent {i} must be a Tensor of its "
                                   f"output's shape {tuple(o.shape)}, got {got}")
        if create_graph is None:  # (PyTorch: grad mode, which would always ask for one)
            create_graph = is_grad_enabled() and (
                self.connected or any(c.requires_grad for c in cotangents))
        return _autograd_grad(self.flat_out, self.fresh, cotangents, retain_graph,
                              create_graph)

    def jacobian(self):
        """The Jacobian tree (jacrev's layout): one backward per output element."""
        per_output = []
        for o in self.flat_out:
            n = o.numel()
            rows = [_autograd_grad([o], self.fresh, [_unit(o, i)], True, self.connected)
                    for i in range(n)]
            jacs = []
            for j, x in enumerate(self.fresh):
                shape = tuple(o.shape) + tuple(x.shape)
                jacs.append(stack([r[j] for r in rows]).view(shape) if n else
                            x.new_zeros(shape))
            per_output.append(tree_unflatten(jacs, self.in_spec))
        return tree_unflatten(per_output, self.out_spec)

    def pushforward(self, tangents, strict):
        """Per output, J @ tangents (the double vjp: the vjp of u -> J^T u along tangents)."""
        dummies = [zeros_like(o).requires_grad_() for o in self.flat_out]
        with enable_grad():
            g = _autograd_grad(self.flat_out, self.fresh, dummies, True, True)
        used = [(gi, t) for gi, t in zip(g, tangents) if gi.requires_grad]
        create = is_grad_enabled() and (self.connected or
                                        any(t.requires_grad for t in tangents))
        if not used:
            out = [None] * len(dummies)
        else:
            out = _graph.grad([gi for gi, _ in used], dummies, [t for _, t in used],
                              retain_graph=create, create_graph=create, allow_unused=True)
        result = []
        for o, d, r in zip(self.flat_out, dummies, out):
            if r is None:
                if strict:
                    raise RuntimeError(f"{self.api}, strict=True: The output of f is "
                                       f"independent of the inputs. This is not allowed with "
                                       f"strict=True.")
                r = zeros_like(o)
            result.append(r)
        return result


def _grad_and_value(func, argnums, has_aux, args, kwargs):
    api = "grad_and_value(f)(*args)"
    core = _Vjp(lambda *a: func(*a, **kwargs), args, argnums, has_aux, api, scalar=True)
    grads = _autograd_grad(core.flat_out, core.fresh, None, core.connected, core.connected)
    return tree_unflatten(grads, core.in_spec), (core.output(), core.aux)


def _autograd_grad(outputs, inputs, grad_outputs, retain_graph, create_graph):
    """autograd.grad for the outputs that require grad; zeros for inputs nothing reaches."""
    if grad_outputs is None:
        pairs = [(o, None) for o in outputs if o.requires_grad]
    else:
        pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs:
        return [zeros_like(x) for x in inputs]
    got = _graph.grad([o for o, _ in pairs], inputs,
                      None if grad_outputs is None else [g for _, g in pairs],
                      retain_graph=retain_graph, create_graph=create_graph, allow_unused=True)
    return [zeros_like(x) if g is None else g for g, x in zip(got, inputs)]


def _unit(o, i):
    """The i-th standard basis tensor of o's shape and dtype (a row of the identity, made
    per row: an n x n identity for n outputs would be n^2 memory)."""
    e = o.new_zeros(o.numel())
    e[i] = 1
    return e.view(o.shape)


def _fresh(x, outer: bool):
    """A differentiable alias of ``x`` for one transform: a view of it when an enclosing
    computation tracks it (the result stays differentiable w.r.t. x), else a new leaf."""
    if not isinstance(x, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    if outer and x.requires_grad:
        with enable_grad():
            return x.view_as(x)
    return x.detach().requires_grad_()


def _reaches_outside(outputs, fresh) -> bool:
    """Whether the graph of ``outputs`` reaches a tensor that requires grad other than the
    transform's own fresh leaves (an enclosing transform's input, a parameter)."""
    own = {id(x) for x in fresh if x.grad_fn is None}
    roots = []
    for o in outputs:
        if o.grad_fn is not None:
            roots.append(o.grad_fn)
        elif o.requires_grad and id(o) not in own:
            return True
    leaves = {}
    _graph._collect(roots, leaves)
    return any(k not in own for k in leaves)


def _detached(x):
    return x.detach() if isinstance(x, Tensor) else x


def _check_scalar(out, api):
    if not isinstance(out, Tensor):
        raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got {type(out)}")
    if out.dim() != 0:
        raise RuntimeError(f"{api}: Expected f(*args) to return a scalar Tensor, got tensor "
                           f"with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev "
                           f"APIs instead?")


def _check_outputs(flat, api):
    if not flat or (len(flat) == 1 and flat[0] is None):
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got "
                           f"output = {flat})")
    for o in flat:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got "
                               f"unsupported type {type(o)}")
        if not o.is_floating_point():
            raise RuntimeError(f"{api}: All outputs of f must be floating-point or complex "
                               f"Tensors, got Tensor with dtype {o.dtype}")


def _tensors_only(flat, api, what):
    if not flat:
        raise RuntimeError(f"{api}: Expected {what} to contain at least one Tensor.")
    for x in flat:
        if not isinstance(x, Tensor):
            raise RuntimeError(f"{api}: Expected {what} to only contain Tensors, got {type(x)}")


# -- argnums (PyTorch's rules and messages) ---------------------------------------------------
def _wrap_argnum(argnum, n):
    if not isinstance(argnum, int) or isinstance(argnum, bool):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if -n <= argnum < n:
        return argnum % n
    raise RuntimeError(f"Got argnum={argnum}, but only {n} positional inputs")


def _slice_argnums(args, argnums):
    """args[argnums] (an int) or the tuple of those args (a tuple of ints)."""
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        return args[_wrap_argnum(argnums, len(args))]
    if not isinstance(argnums, tuple):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if len(argnums) == 0:
        raise RuntimeError("argnums must be non-empty")
    wrapped = tuple(_wrap_argnum(a, len(args)) for a in argnums)
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return tuple(args[i] for i in wrapped)


def _replace_args(args, new, argnums):
    out = list(args)
    if isinstance(argnums, int):
        out[_wrap_argnum(argnums, len(args))] = new
    else:
        for a, v in zip(argnums, new):
            out[_wrap_argnum(a, len(args))] = v
    return tuple(out)
