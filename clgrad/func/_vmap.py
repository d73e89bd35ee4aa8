"""``vmap``: PyTorch's ``torch.vmap``/``torch.func.vmap`` as a Python loop over the mapped
dimension, and the random-number guard its ``randomness`` argument (and jacfwd's) selects.

clgrad has no batching rules (no BatchedTensor that every op knows how to batch), so
``vmap(f)(x)`` runs ``f`` once per slice ``x.select(in_dim, i)`` and stacks the outputs along
``out_dim``: the same values as PyTorch (a slice is what PyTorch's batching rules pretend each
example is), no speed-up over writing the loop yourself. Everything that follows from the loop
is listed in :func:`vmap`'s docstring and README "Deliberately different from PyTorch".
"""
from __future__ import annotations

import functools

from clgrad import creation
from clgrad.func._pytree import broadcast_flatten, tree_flatten, tree_unflatten
from clgrad.ops.index import stack
from clgrad.ops.numeric import equal
from clgrad.tensor import Tensor

__all__ = ["vmap", "RandomGuard", "check_randomness"]

_RANDOMNESS = ("error", "different", "same")
_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either "
                 "use the 'same' or 'different' randomness flags on vmap or perform the "
                 "randomness operation out of vmap")


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """``func`` mapped over a dimension of its inputs (PyTorch's ``torch.vmap``).

    ``vmap(func, in_dims, out_dims)(*args, **kwargs)``: for each ``i`` of the mapped size B,
    ``func`` is called with every tensor of ``args`` whose in_dim is an int replaced by its
    slice ``arg.select(in_dim, i)`` (the others, and ``kwargs``, passed as they are); the
    tensors ``func`` returns are stacked along ``out_dims``.

    Args:
      in_dims: an int or None for every tensor of ``args``, or a tuple with one entry per
        positional argument; each entry an int, None, or a tuple/list/dict nested as that
        argument is (a leaf of ``in_dims`` covers the whole subtree under it). Negative dims
        count from the end.
      out_dims: an int or None for every output, or a tuple/list/dict matching the structure of
        ``func``'s output (a Tensor, or tuples/lists/dicts/namedtuples of them). None: the
        output is not mapped (it must be the same for every slice; it is returned once).
      randomness: 'error' (a random op in ``func`` raises), 'different' (each slice draws its
        own numbers: the loop as it is), 'same' (clgrad's global generator is reset to its
        state at the call before each slice, so every slice draws the same numbers; after the
        call it stands where one slice left it).
      chunk_size: None or a positive int; accepted for PyTorch's API (PyTorch maps that many
        slices at once to bound memory). The loop maps one slice at a time whatever it is.

    Shapes:  an input (..., B at in_dim, ...) gives func slices without that dim; an output of
             shape S per slice becomes S with B inserted at out_dim.
    Dtypes:  any; the outputs keep func's dtypes.
    Grad:    yes: the slices are differentiable views and the outputs a differentiable stack,
             so grad(vmap(f)) and vmap(grad(f)) work (both loops of ordinary autograd).

    Deliberately different from PyTorch (it is a loop; README "Deliberately different"):
      * no speed-up: func runs B times, as a hand-written loop would;
      * B = 0 raises ValueError (there is no slice to run func on to learn the output's shape;
        PyTorch's batching rules know it without running);
      * randomness='error' raises after the slice that drew ran (PyTorch: at the random op);
        'different' draws other numbers than PyTorch's (its generator is another);
      * in-place writes: a write into a tensor captured from outside func happens once per
        slice, in order (PyTorch refuses to write a batched value into an unbatched tensor);
        a write into an argument's slice writes that slice of the argument, as in PyTorch;
      * out_dims None for a tensor output: accepted when every slice returns an equal tensor
        (PyTorch refuses any output that depends on a mapped input, equal or not).

    Raises:
      ValueError: in_dims/out_dims of another type or structure than the inputs/outputs
        (PyTorch's messages, naming both structures), an int in_dim for a non-tensor or out of
        range, mapped sizes that differ, no mapped tensor, no inputs, B = 0, a non-tensor output
        with an int out_dim, outputs whose structure changes between slices, an unmapped
        (out_dims None) output that changes between slices, randomness not one of 'error',
        'different', 'same', chunk_size not None or positive.
      RuntimeError: with randomness='error', when func draws random numbers; with 'same', when
        it draws from an explicit clgrad.Generator (only the global generator is reset).
    """
    check_randomness(randomness, "vmap")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")
    _check_out_dims(out_dims, func)

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        size, flat_dims, flat_args, spec = _batched_inputs(in_dims, args, func)
        guard = RandomGuard(randomness)
        outs = []
        for i in range(size):
            sliced = [a if d is None else a.select(d, i) for a, d in zip(flat_args, flat_dims)]
            with guard:
                outs.append(func(*tree_unflatten(sliced, spec), **kwargs))
        return _stack_outputs(outs, out_dims, func)

    return wrapped


def check_randomness(randomness, op: str):
    """ValueError unless ``randomness`` is one of 'error', 'different', 'same'."""
    if randomness not in _RANDOMNESS:
        raise ValueError(f"{op}: Only allowed values for randomness are 'error', 'different', "
                         f"or 'same'. Got {randomness!r}")


class RandomGuard:
    """A ``with`` block per call of func: 'error' raises if the block drew random numbers
    (clgrad's global generator moved or was reseeded, or an explicit clgrad.Generator was
    drawn from: ``creation.EXPLICIT_DRAWS``); 'same' puts the global generator back to its
    state at the guard's creation before each block; 'different' does nothing."""

    def __init__(self, randomness: str):
        self.mode = randomness
        self.rng = creation._RNG[0]
        self.state = self.rng.bit_generator.state
        self.seed = creation._SEED[0]
        self.blocks = 0

    def __enter__(self):
        self.explicit = creation.EXPLICIT_DRAWS[0]
        if self.mode == "same" and self.blocks:
            creation._RNG[0], creation._SEED[0] = self.rng, self.seed
            self.rng.bit_generator.state = self.state
        self.blocks += 1
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None or self.mode == "different":
            return False
        explicit = creation.EXPLICIT_DRAWS[0] != self.explicit
        if self.mode == "same":
            if explicit:
                raise RuntimeError("vmap: randomness='same' resets only clgrad's global "
                                   "generator, got a draw from an explicit clgrad.Generator; "
                                   "use randomness='different' or draw outside vmap")
            return False
        if explicit or creation._RNG[0] is not self.rng or \
                self.rng.bit_generator.state != self.state:
            raise RuntimeError(_RANDOM_ERROR)
        return False


def _name(func) -> str:
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)


def _batched_inputs(in_dims, args, func):
    """(B, one in_dim per leaf of args, the leaves, args' spec), checked as PyTorch's
    _process_batched_inputs (its messages)."""
    name = _name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` "
                         f"to be int or a (potentially nested) tuple matching the structure of "
                         f"inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add "
                         f"inputs, or you are trying to vmap over a function with no inputs. "
                         f"The latter is unsupported.")
    flat_args, spec = tree_flatten(args)
    flat_dims = broadcast_flatten(in_dims, spec)
    if flat_dims is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
                         f"compatible with the structure of `inputs`. in_dims has structure "
                         f"{tree_flatten(in_dims)[1]!r} but inputs has structure {spec!r}.")
    head = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim="
    for i, (arg, d) in enumerate(zip(flat_args, flat_dims)):
        if d is None:
            continue
        if not isinstance(d, int):
            raise ValueError(f"{head}{d} for an input but in_dim must be either an integer "
                             f"dimension or None.")
        if not isinstance(arg, Tensor):
            raise ValueError(f"{head}{d} for an input but the input is of type {type(arg)}. We "
                             f"cannot vmap over non-Tensor arguments, please use None as the "
                             f"respective in_dim")
        n = arg.dim()
        if not -n <= d < n:
            raise ValueError(f"{head}{d} for some input, but that input is a Tensor of "
                             f"dimensionality {n} so expected in_dim to satisfy -{n} <= in_dim "
                             f"< {n}.")
        flat_dims[i] = d % n
    sizes = [a.shape[d] for a, d in zip(flat_args, flat_dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    if sizes[0] == 0:
        raise ValueError(f"vmap({name}): the mapped dimension has size 0; clgrad's vmap is a "
                         f"loop over the slices and has none to run {name} on to learn the "
                         f"outputs' shapes (PyTorch's batching rules do without); handle the "
                         f"empty batch before calling vmap")
    return sizes[0], flat_dims, flat_args, spec


def _check_out_dims(out_dims, func):
    if isinstance(out_dims, int):
        return
    for d in tree_flatten(out_dims)[0]:
        if d is not None and not isinstance(d, int):
            raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must "
                             f"be an int, None or a python collection of ints representing "
                             f"where in the outputs the vmapped dimension should appear.")


def _stack_outputs(outs, out_dims, func):
    """The slices' outputs, one tree: each leaf stacked along its out_dim (None: one copy)."""
    name = _name(func)
    flat0, spec = tree_flatten(outs[0])
    flats = [flat0]
    for i, out in enumerate(outs[1:], 1):
        flat, s = tree_flatten(out)
        if s != spec:
            raise ValueError(f"vmap({name}, ...): `{name}` returned outputs of another "
                             f"structure for slice {i} ({s!r}) than for slice 0 ({spec!r}); "
                             f"every slice must return the same structure")
        flats.append(flat)
    if isinstance(outs[0], Tensor) and isinstance(out_dims, tuple) and len(out_dims) == 1:
        flat_dims = list(out_dims)  # PyTorch accepts (d,) for a single Tensor output
    else:
        flat_dims = broadcast_flatten(out_dims, spec)
    if flat_dims is None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                         f"compatible with the structure of `outputs`. out_dims has structure "
                         f"{tree_flatten(out_dims)[1]!r} but outputs has structure {spec!r}.")
    result = []
    for j, d in enumerate(flat_dims):
        values = [flat[j] for flat in flats]
        result.append(_unmapped(values, name) if d is None else _stacked(values, d, name))
    return tree_unflatten(result, spec)


def _unmapped(values, name):
    first = values[0]
    for v in values[1:]:
        if v is first:
            continue
        if isinstance(first, Tensor):
            same = (isinstance(v, Tensor) and v.shape == first.shape and v.dtype == first.dtype
                    and equal(v, first))
        else:
            same = v == first
        if not same:
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when "
                             f"out_dim is None (clgrad's vmap, a loop, got an output that "
                             f"differs between slices)")
    return first


def _stacked(values, d, name):
    first = values[0]
    if not isinstance(first, Tensor):
        raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                         f"{type(first)}. Did you mean to set out_dims= to None for output?")
    n = first.dim() + 1
    if not -n <= d < n:
        raise ValueError(f"vmap({name}, ...): out_dim={d} is out of range for an output of "
                         f"{n - 1} dims (expected -{n} <= out_dim < {n})")
    for i, v in enumerate(values[1:], 1):
        if not isinstance(v, Tensor) or v.shape != first.shape or v.dtype != first.dtype:
            got = (f"a tensor of shape {tuple(v.shape)} and dtype {v.dtype}"
                   if isinstance(v, Tensor) else type(v))
            raise ValueError(f"vmap({name}, ...): `{name}` returned {got} for slice {i} and a "
                             f"tensor of shape {tuple(first.shape)} and dtype {first.dtype} "
                             f"for slice 0; a mapped output must have one shape and dtype for "
                             f"every slice")
    return stack(values, d % n)
