"""Ops that are short compositions of others (PyTorch's names): their gradients are those of
the ops they are made of. Fused multiply-adds (addcmul, addcdiv, lerp, addmm, baddbmm, addmv),
outer products, var_mean/std_mean, torch.softmax/log_softmax/norm (the faces of the loss and
linalg families' kernels, with PyTorch's torch.* signatures), shape helpers (broadcast_tensors,
meshgrid, tile, repeat_interleave), masked_select, logical_xor, erf, and the small torch.*
functions programs call for their side effects (_assert, thread and determinism flags).

Kernels: none of their own, except lerp's (kernels/elementwise.cl :: lerp_op, lerp_sw; erf is
elementwise.cl :: erf_op, through ops/elementwise.py).
"""
from __future__ import annotations

import numbers
import os

import numpy as np

from clgrad import backends, dtypes, layout
from clgrad.ops import elementwise as ew
from clgrad.ops import linalg
from clgrad.ops import loss
from clgrad.ops import matmul as mm
from clgrad.ops import reduce as rd
from clgrad.autograd import record
from clgrad.ops._util import defines_for, empty, launch_1d, same_device, scalar
from clgrad.tensor import Tensor

__all__ = ["addcmul", "addcdiv", "lerp", "addmm", "baddbmm", "addmv", "mv", "outer", "ger",
           "bilinear", "var_mean", "std_mean", "broadcast_tensors", "meshgrid", "tile",
           "repeat_interleave", "masked_select", "logical_xor", "erf", "softmax", "log_softmax",
           "norm"]


_BF16, _F16 = dtypes.bfloat16, dtypes.float16
_EW_FILE = "elementwise.cl"


def _in_result_type(op, *tensors):
    """The tensors cast to their ``dtypes.result_type`` (PyTorch's for its ternary ops: a
    0-dim operand lifts only the kind), and that dtype. Raises TypeError for a bool one."""
    dt = dtypes.result_type(*tensors)
    if dt.is_bool:
        raise TypeError(f'{op}: "{op}" not implemented for \'Bool\' (expected integer or '
                        f'floating tensors, got {dt})')
    return tuple(ew.to(t, dt) if isinstance(t, Tensor) else t for t in tensors), dt


def _value_in(dt, value):
    """``value`` as the op computes with it in ``dt``: truncated for an integer dt (PyTorch)."""
    return value if dt.is_floating_point else int(value)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, value=1) -> Tensor:
    """input + value * tensor1 * tensor2, with broadcasting. Grad: all three tensors.

    Dtypes: ``dtypes.result_type(input, tensor1, tensor2)``, every operand cast to it first;
    value is taken in it (truncated for integers, as PyTorch).
    Raises TypeError for a bool result type (PyTorch has no bool kernel).
    """
    (input, tensor1, tensor2), dt = _in_result_type("addcmul", input, tensor1, tensor2)
    if dt is _BF16 or dt is _F16:  # in float32, rounded once (PyTorch's opmath)
        return ew.low_via_float32(dt, addcmul, input, tensor1, tensor2, value)
    return ew.add(input, ew.mul(ew.mul(tensor1, tensor2), _value_in(dt, value)))


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, value=1) -> Tensor:
    """input + value * tensor1 / tensor2, with broadcasting (float). Grad: all three.

    Dtypes: as addcmul.
    Raises RuntimeError for integer tensor1 and tensor2 (PyTorch: use div)."""
    if not tensor1.dtype.is_floating_point and not tensor2.dtype.is_floating_point:
        raise RuntimeError("addcdiv: integer division with addcdiv is no longer supported; "
                           "use torch.div")
    (input, tensor1, tensor2), dt = _in_result_type("addcdiv", input, tensor1, tensor2)
    if dt is _BF16 or dt is _F16:
        return ew.low_via_float32(dt, addcdiv, input, tensor1, tensor2, value)
    return ew.add(input, ew.mul(ew.div(tensor1, tensor2), _value_in(dt, value)))


def lerp(input: Tensor, end: Tensor, weight) -> Tensor:
    """input + weight * (end - input) from the nearer end, weight a number or a tensor.

    PyTorch's two-sided formula (aten/src/ATen/native/Lerp.h): |weight| < 0.5 ? input +
    weight * (end - input) : end - (end - input) * (1 - weight), each branch one fused
    multiply-add (rounded once, as PyTorch's vectorised CPU kernel, cpu/LerpKernel.cpp, and its
    CUDA kernel compute it), so lerp(a, b, 1) is b exactly and the bits agree with PyTorch's.
    Shapes: input, end and a tensor weight broadcast together -> out (new, contiguous).
    Grad (PyTorch's derivatives.yaml): input grad * (1 - weight), end grad * weight, a tensor
    weight grad * (end - input), each summed back to its operand's shape.
    Dtypes (PyTorch's): end, and a weight tensor with dims, of input's dtype; a 0-dim weight
    tensor then joins ``dtypes.result_type`` (int input and end with a float64 0-dim weight
    give float64), a number weight does not; the result type must be floating; float16 and
    bfloat16 compute in float32 and round once (PyTorch's opmath).
    Kernels: kernels/elementwise.cl :: lerp_op (tensor weight), lerp_sw (number weight).
    Raises RuntimeError for an end or weight of another dtype; TypeError for an integer or
    bool result type, or a weight neither a number nor a Tensor.
    """
    weight = ew.numpy_operand(weight)
    if not isinstance(weight, (Tensor, numbers.Real)):
        raise TypeError(f"lerp: expected weight to be a real number or a Tensor, got "
                        f"{type(weight).__name__}")
    for name, t in (("end", end), ("weight", weight)):
        if isinstance(t, Tensor) and (t.ndim or name == "end") and t.dtype is not input.dtype:
            raise RuntimeError(f"lerp: expected dtype {input.dtype} for `{name}` but got dtype "
                               f"{t.dtype}")
    dt = dtypes.result_type(input, end, weight) if isinstance(weight, Tensor) else input.dtype
    if not dt.is_floating_point:
        raise TypeError(f"lerp: \"lerp\" not implemented for '{dtypes.torch_name(dt)}' "
                        f"(expected a floating input or 0-dim weight, got {dt})")
    input, end = ew.to(input, dt), ew.to(end, dt)
    if isinstance(weight, Tensor):
        weight = ew.to(weight, dt)
    if dt is _BF16 or dt is _F16:  # in float32, rounded once (PyTorch's opmath)
        return ew.low_via_float32(dt, lerp, input, end, weight)
    ts = (input, end, weight) if isinstance(weight, Tensor) else (input, end)
    # a 0-dim operand on a CPU device joins the others' device (PyTorch's rule)
    dev = next((t._storage.device for t in ts if t._shape or t._storage.device.type != "cpu"),
               input._storage.device)
    ts = tuple(ew.to_device(t, dev) for t in ts)
    shape = layout.broadcast_shapes(*(t.shape for t in ts), op="lerp")
    out = empty(shape, dt, dev)
    operands = tuple(ew._operand(t, shape) for t in ts)
    input, end = ts[0], ts[1]
    sa = tuple(input.shape) if input.requires_grad else None  # shapes, not the operands
    sb = tuple(end.shape) if end.requires_grad else None
    if len(ts) == 2:  # a number weight
        w = float(weight)
        launch_1d(_EW_FILE, "lerp_sw", defines_for(dt), out, operands,
                  (scalar(dt, w, opmath=True),))

        def backward(g):  # (1 - w in double, as PyTorch's grad * (1 - weight.toDouble()))
            return (ew.sum_to(ew.mul(g, 1.0 - w), sa) if sa is not None else None,
                    ew.sum_to(ew.mul(g, w), sb) if sb is not None else None)
        return record("lerp", out, (input, end), backward, double=True)
    weight = ts[2]
    launch_1d(_EW_FILE, "lerp_op", defines_for(dt), out, operands)
    sw = tuple(weight.shape) if weight.requires_grad else None

    def backward_t(g):
        return (ew.sum_to(ew.mul(g, ew.sub(1.0, weight)), sa) if sa is not None else None,
                ew.sum_to(ew.mul(g, weight), sb) if sb is not None else None,
                ew.sum_to(ew.mul(g, ew.sub(end, input)), sw) if sw is not None else None)
    saved = ([weight] if sa is not None or sb is not None else []) + (
        [input, end] if sw is not None else [])
    return record("lerp", out, (input, end, weight), backward_t, saved=saved, double=True)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, beta=1, alpha=1) -> Tensor:
    """beta * input + alpha * (mat1 @ mat2); mat1 (n, m), mat2 (m, p), input broadcast to
    (n, p). beta = 0 ignores input (NaN in it included), as PyTorch.
    Raises RuntimeError for operands that are not matrices or do not chain."""
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if m.ndim != 2:
            raise RuntimeError(f"addmm: expected {name} to be a matrix, got {m.ndim}-D")
    input, mat1, mat2 = ew.autocast("addmm", input, mat1, mat2)  # all three (PyTorch's)
    return _axpy(input, mm.mm, (mat1, mat2), beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, beta=1, alpha=1) -> Tensor:
    """beta * input + alpha * (batch1 @ batch2) per batch: batch1 (b, n, m), batch2
    (b, m, p), input broadcast to (b, n, p)."""
    for name, m in (("batch1", batch1), ("batch2", batch2)):
        if m.ndim != 3:
            raise RuntimeError(f"baddbmm: expected {name} to be a 3-D tensor, got {m.ndim}-D")
    input, batch1, batch2 = ew.autocast("baddbmm", input, batch1, batch2)
    return _axpy(input, mm.bmm, (batch1, batch2), beta, alpha)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, beta=1, alpha=1) -> Tensor:
    """beta * input + alpha * (mat @ vec); mat (n, m), vec (m,)."""
    return _axpy(input, mv, (mat, vec), beta, alpha)


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix-vector product: input (n, m) @ vec (m,) -> (n,).
    Raises RuntimeError for other ranks."""
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"mv: expected a matrix and a vector, got {input.ndim}-D and "
                           f"{vec.ndim}-D")
    return mm.matmul(input, vec)


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """Outer product of two vectors: (n,) x (m,) -> (n, m). Raises RuntimeError for
    non-vectors."""
    if input.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"outer: expected two 1-D tensors, got {input.ndim}-D and "
                           f"{vec2.ndim}-D")
    return ew.mul(input.unsqueeze(1), vec2.unsqueeze(0))


ger = outer


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None
             ) -> Tensor:
    """The bilinear form y = x1^T A x2 + b (PyTorch's F.bilinear):
    out[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o].

    Shapes:  input1 (*, in1), input2 (*, in2) with the same leading dims (no broadcasting;
             1-D inputs are one sample), weight (out, in1, in2), bias (out,) -> (*, out)
    Dtypes:  one dtype for all (PyTorch's); bfloat16 through its parts (in float32)
    Grad:    input1, input2, weight, bias (through matmul and bmm)
    Raises:  RuntimeError for a weight not 3-D, feature sizes or leading dims that differ,
             a bias not (out,), dtypes that differ; TypeError for a non-Tensor
    How:     input2 @ weight.reshape(out in1, in2)^T (a view: no copy of the weight), then a
             batched (out, in1) @ input1 product per sample
    """
    for name, t in (("input1", input1), ("input2", input2), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"bilinear(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if bias is not None and not isinstance(bias, Tensor):
        raise TypeError(f"bilinear(): argument 'bias' must be Tensor or None, not "
                        f"{type(bias).__name__}")
    same_device("bilinear", input1, input2, weight, bias)
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): expected weight of shape (out_features, "
                           f"in1_features, in2_features), got {list(weight.shape)}")
    if input1.ndim == 0 or input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} "
                           f"and {input2.ndim}")
    for d in range(input1.ndim - 1):
        if input1.shape[d] != input2.shape[d]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: "
                               f"got {input1.shape[d]} and {input2.shape[d]}")
    o, in1, in2 = weight.shape
    if input1.shape[-1] != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {in1}")
    if input2.shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {in2}")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != o):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{list(bias.shape)} but expected [{o}]")
    named = [("input1", input1), ("input2", input2), ("weight", weight)]
    if bias is not None:
        named.append(("bias", bias))
    if len({t.dtype for _, t in named}) != 1:
        raise RuntimeError("bilinear(): All tensors must have the same dtype, got " +
                           ", ".join(f"{n}: {t.dtype}" for n, t in named))
    lead = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, in2)
    b = x1.shape[0]
    t = mm.matmul(x2, weight.reshape(o * in1, in2).t())  # (B, out in1): sum_j W[o,i,j] x2[j]
    y = mm.bmm(t.reshape(b, o, in1), x1.unsqueeze(-1)).reshape(b, o)
    if bias is not None:
        y = ew.add(y, bias)
    return y.reshape(*lead, o)


def softmax(x: Tensor, dim: int, dtype=None) -> Tensor:
    """exp(x - max) / sum(exp(x - max)) along ``dim``; stable for logits like 1e8.

    One fused row kernel each direction: see clgrad.ops.loss.softmax.
    """
    return loss.softmax(x, dim, dtype)


def log_softmax(x: Tensor, dim: int, dtype=None) -> Tensor:
    """(x - max) - log(sum(exp(x - max))) along ``dim``; stable for logits like 1e8.

    One fused row kernel each direction: see clgrad.ops.loss.log_softmax.
    """
    return loss.log_softmax(x, dim, dtype)


def norm(x: Tensor, p=2, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """torch.norm: the vector p-norm over ``dim`` (None: all elements); p a number or 'fro'
    (the 2-norm of the elements over ``dim``) or 'nuc' (the nuclear norm over the 2 dims
    ``dim``, both of a 2-D input when None: linalg.matrix_norm). Scaled, so it overflows
    only when the norm does; the gradient is 0 where the norm is 0. See
    clgrad.linalg.vector_norm.

    Raises:  ValueError for any other string p; RuntimeError for 'nuc' with dim None and an
             input that is not 2-D (PyTorch's).
    """
    if p == "fro" or p is None:
        p = 2
    elif p == "nuc":
        if dim is None and x.ndim != 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                               f"{' '.join(map(str, range(x.ndim)))}")
        return linalg.matrix_norm(x, "nuc", (0, 1) if dim is None else dim, keepdim, dtype)
    elif isinstance(p, str):
        raise ValueError(f"norm: expected p to be a number, 'fro' or 'nuc', got {p!r}")
    return linalg.vector_norm(x, p, dim, keepdim, dtype)


def var_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, correction=None):
    """(var, mean) over ``dim``, as var and mean (a tuple, as PyTorch); a bool ``dim`` is
    ``unbiased`` (``var_mean(x, False)``)."""
    dim, unbiased = rd._bool_dim(dim, unbiased, correction, "var_mean")
    return (rd.var(input, dim, unbiased=unbiased, keepdim=keepdim, correction=correction),
            rd.mean(input, dim, keepdim=keepdim))


def std_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, correction=None):
    """(std, mean) over ``dim``, as std and mean; a bool ``dim`` is ``unbiased``."""
    dim, unbiased = rd._bool_dim(dim, unbiased, correction, "std_mean")
    return (rd.std(input, dim, unbiased=unbiased, keepdim=keepdim, correction=correction),
            rd.mean(input, dim, keepdim=keepdim))


def _tensor_seq(tensors) -> tuple:
    """The Tensors of a ``*tensors`` op (one list or tuple of them also accepted). Raises
    PyTorch's TypeError for an element that is not a Tensor."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            from clgrad.ops._util import _type_name
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{_type_name(t)}")
    return tensors


def broadcast_tensors(*tensors):
    """The tensors expanded (stride-0 views, no copy) to their common broadcast shape.
    Raises ValueError when the shapes do not broadcast; TypeError (PyTorch's message) for an
    argument that is not a Tensor."""
    tensors = _tensor_seq(tensors)
    shape = layout.broadcast_shapes(*(t.shape for t in tensors), op="broadcast_tensors")
    return tuple(t.expand(shape) for t in tensors)


def meshgrid(*tensors, indexing: str | None = None):
    """Coordinate grids from 1-D tensors: N tensors of shape (n1, ..., nN) ('ij', PyTorch's
    default) or with the first two dims swapped ('xy'); stride-0 views of the inputs.
    Raises RuntimeError for a tensor that is not 0-D or 1-D or tensors of two devices (as
    PyTorch), ValueError for another
    indexing, TypeError (PyTorch's message) for an argument that is not a Tensor."""
    tensors = _tensor_seq(tensors)
    same_device("meshgrid", *tensors)
    indexing = indexing or "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: expected indexing 'ij' or 'xy', got {indexing!r}")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"meshgrid: expected 0-D or 1-D tensors, got {t.ndim}-D")
    vecs = [t.reshape(-1) for t in tensors]
    shape = tuple(v.shape[0] for v in vecs)
    out = []
    for i, v in enumerate(vecs):
        view = [1] * len(vecs)
        view[i] = shape[i]
        out.append(v.reshape(view).expand(shape))
    if indexing == "xy" and len(out) >= 2:
        out = [o.transpose(0, 1) for o in out]
    return tuple(out)


def tile(input: Tensor, dims) -> Tensor:
    """Repeat ``input`` along each dim (PyTorch's torch.tile): like repeat, with ``dims``
    padded with leading 1s when shorter than input's rank."""
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    dims = (1,) * (input.ndim - len(dims)) + dims
    return input.repeat(*dims)


def _tile_method(self: Tensor, *dims, **kwargs) -> Tensor:
    """Tensor.tile: ``dims`` as separate ints (``x.tile(2, 2)``) or one tuple/list, as
    PyTorch's method takes both (torch.tile takes the sequence only)."""
    if kwargs or not dims:
        return tile(self, *dims, **kwargs)
    return tile(self, dims[0] if len(dims) == 1 else dims)


def repeat_interleave(input, repeats=None, dim=None, output_size=None) -> Tensor:
    """Each element (or slice along ``dim``) repeated ``repeats`` times in place (an int or a
    1-D tensor of one count per element); no dim: of the flattened input. A single tensor
    argument ``repeat_interleave(counts)`` gives arange(len(counts)) repeated by counts.
    Grad: input (summed back over the copies). Counts are read on the host.
    Raises RuntimeError for negative counts, a count tensor of the wrong length or on another
    device than input; TypeError
    (PyTorch's message) for an input that is not a Tensor ('repeats' in the one-argument form).
    """
    from clgrad import creation
    from clgrad.ops import index as ix
    if not isinstance(input, Tensor):
        from clgrad.ops._util import _type_name
        if repeats is None:
            raise TypeError(f"repeat_interleave(): argument 'repeats' (position 1) must be "
                            f"Tensor, not {_type_name(input)}")
        raise TypeError(f"repeat_interleave(): argument 'input' (position 1) must be Tensor, "
                        f"not {_type_name(input)}")
    if repeats is None:
        counts = input.numpy().astype(np.int64).reshape(-1)
        idx = np.repeat(np.arange(counts.size), counts)
        return creation.tensor(idx, dtype=dtypes.int64, device=input.device)
    same_device("repeat_interleave", input, repeats)  # PyTorch: index_select's check
    if dim is None:
        input, dim = input.reshape(-1), 0
    d = layout.wrap_dim(dim, input.ndim, "repeat_interleave")
    n = input.shape[d]
    counts = (repeats.numpy().astype(np.int64).reshape(-1) if isinstance(repeats, Tensor)
              else np.full(n, int(repeats), dtype=np.int64))
    if counts.size == 1 and n != 1:
        counts = np.full(n, int(counts[0]), dtype=np.int64)
    if counts.size != n:
        raise RuntimeError(f"repeat_interleave: repeats must have the same size as input "
                           f"along dim {d} ({n}), got {counts.size}")
    if (counts < 0).any():
        raise RuntimeError("repeat_interleave: repeats can not be negative")
    idx = np.repeat(np.arange(n), counts)
    return ix.index_select(input, d, creation.tensor(idx, dtype=dtypes.int64,
                                                     device=input.device))


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements of ``input`` where the bool ``mask`` (broadcast with input) is True, as a
    1-D tensor in row-major order. Grad: input (scattered back).
    Raises TypeError for a mask that is not bool."""
    if not isinstance(mask, Tensor) or not mask.dtype.is_bool:
        raise TypeError(f"masked_select: expected a bool mask, got "
                        f"{getattr(mask, 'dtype', type(mask).__name__)}")
    x, m = broadcast_tensors(input, mask)
    return x[m]


def logical_xor(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise exclusive or of the truth values (bool result)."""
    return ew.ne(ew.to(input, dtypes.bool_), ew.to(other, dtypes.bool_))


def erf(input: Tensor) -> Tensor:
    """The error function elementwise (integers give the default dtype).
    Grad: 2/sqrt(pi) exp(-x^2). Kernels: kernels/elementwise.cl :: erf_op."""
    return ew.erf(input)


def _axpy(input, product, operands, beta, alpha):
    """beta * input + alpha * product(*operands), input broadcast to the product's shape;
    beta = 0 ignores input's values (PyTorch). All float16: computed on float32 copies (exact)
    and rounded to float16 once, as PyTorch's addmm epilogue (rounding the product first, then
    the sum, was up to hundreds of float16 units off where the sum cancels)."""
    dt = input.dtype
    if (dt is dtypes.float16 or dt is _BF16) and all(t.dtype is dt for t in operands):
        wide = [t.to(dtypes.float32) for t in operands]  # (bfloat16 likewise)
        out = _axpy(input.to(dtypes.float32), product, wide, beta, alpha)
        return out.to(dt)
    prod = product(*operands)
    if layout.broadcast_shapes(input.shape, prod.shape, op="addmm") != tuple(prod.shape):
        raise RuntimeError(f"addmm: expected input of shape {tuple(input.shape)} to broadcast "
                           f"to the product's {tuple(prod.shape)}")
    if alpha != 1:
        prod = ew.mul(prod, alpha)
    if beta == 0:
        return prod
    return ew.add(ew.mul(input, beta) if beta != 1 else input, prod)


def _assert(condition, message):
    """``torch._assert``: raise AssertionError(message) when condition is false (unlike a
    Python assert, it is not removed under -O)."""
    if isinstance(condition, Tensor):
        condition = bool(condition.item())
    if not condition:
        raise AssertionError(message)


_THREADS = [os.cpu_count() or 1]


def set_num_threads(n: int) -> None:
    """Accepted and stored: clgrad's kernels run on the OpenCL device's own threads."""
    _THREADS[0] = int(n)


def get_num_threads() -> int:
    """The value given to set_num_threads (the host's CPU count before)."""
    return _THREADS[0]


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """PyTorch's switch for run-to-run identical results. clgrad's reductions are always
    deterministic on one device (no atomics). The ops that sum with atomics, whose last bits
    depend on the order the device runs them in, follow the flag: the floating scatter-adds of
    kernels/index.cl (scatter_add, scatter(reduce='add'), index_add, the backward of gather,
    index_select and embedding, and gradients summed into overlapping views) run on the host
    in index order under mode=True (as PyTorch's CUDA kernels switch to a deterministic
    algorithm; slower: a copy to the host and back); grid_sample's input gradient, which has
    no deterministic version, raises RuntimeError under mode=True and warns with
    warn_only=True, as PyTorch's CUDA grid_sampler_2d_backward."""
    backends.determinism.update(deterministic=bool(mode), warn_only=bool(warn_only))


def are_deterministic_algorithms_enabled() -> bool:
    """The flag given to use_deterministic_algorithms."""
    return backends.determinism["deterministic"]


def set_float32_matmul_precision(precision: str) -> None:
    """PyTorch's float32 matmul precision: 'highest' (the default: float32 products and
    sums), 'high' or 'medium' (TF32 allowed: float32 matmul, mm, bmm and linear run on NVIDIA's
    tensor cores in TF32 where clgrad found them, kernels/matmul_mma_nv.cl; elsewhere float32).
    One state with ``backends.cuda.matmul.allow_tf32``, as in PyTorch. Another value (after
    lower-casing) warns and changes nothing, as PyTorch's. Raises TypeError for a non-str."""
    backends.cuda.set_float32_precision(precision)


def get_float32_matmul_precision() -> str:
    """The value given to set_float32_matmul_precision ('highest' before; 'high' after
    ``backends.cuda.matmul.allow_tf32 = True``)."""
    return backends.cuda.float32_precision()
