"""Tensors of two devices in one op: PyTorch's RuntimeError ("expected all tensors on the same
device"), raised before any kernel launch, the inputs left as they were -- for every public op
that takes two or more tensors (tests/test_device_cross.py has the copies across devices).

The second device is a second ``clgrad.runtime.Device`` made for the default OpenCL device: it
has its own context, so its buffers are foreign to the first device's kernels exactly as a
GPU's are to a CPU's (a buffer of another context reaching a kernel was
``pyopencl LogicError: clSetKernelArg failed: INVALID_MEM_OBJECT`` on the H200). Both are CPU
devices, so a 0-dim operand may join the other device (PyTorch's rule for 0-dim CPU tensors):
every case uses tensors of one dim or more.

CASES lists a call per op; ``test_every_multi_tensor_op_is_covered`` enumerates the public
faces (``clgrad.__all__``, ``clgrad.nn.functional.__all__``, ``clgrad.linalg.__all__`` and
Tensor's methods) and fails for an op that may take two tensors and is neither in CASES nor
in LEGAL (ops where tensors of two devices are allowed, each with its reason).
"""
import functools
import inspect
import math
import operator

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.runtime import Device, launch_count

MATCH = "expected all tensors on the same device"


@pytest.fixture(scope="module")
def devices():
    """(the default device, a second Device of its own context on the same OpenCL device; its
    index, an unused one, only makes messages name two devices: "cpu" and "cpu:7")."""
    a = clgrad.default_device()
    return a, Device(a.cl_device, a.platform_index, a.device_index, index=(a.index or 0) + 7)


@pytest.fixture
def cpu_devices(cpu_default):
    """``devices`` made from the "cpu" device, which is also the default for the test (the
    tests of what a 0-dim or index tensor on the CPU may join: on a machine whose default is a
    GPU, CLGRAD_DEVICE=gpu, new tensors would be on the GPU)."""
    a = cpu_default
    return a, Device(a.cl_device, a.platform_index, a.device_index, index=(a.index or 0) + 7)


_RNG = np.random.default_rng(0)


def r(*shape, grad=False):
    """float32 values in [-1, 1) on the default device."""
    return clgrad.tensor(_RNG.uniform(-1, 1, shape).astype(np.float32), requires_grad=grad)


def pos(*shape):
    """float32 values in [0.5, 1.5)."""
    return clgrad.tensor(_RNG.uniform(0.5, 1.5, shape).astype(np.float32))


def prob(*shape):
    """float32 values in (0.1, 0.9)."""
    return clgrad.tensor(_RNG.uniform(0.1, 0.9, shape).astype(np.float32))


def ints(hi, *shape):
    """int64 values in [0, hi)."""
    return clgrad.tensor(_RNG.integers(0, hi, shape))


def bools(*shape):
    return clgrad.tensor(_RNG.uniform(size=shape) > 0.5)


def _binary(fn, make=lambda: (r(2, 3), r(2, 3))):
    return lambda: (make(), fn)


# name -> () -> (inputs, call): ``call(*inputs)`` runs the op on the inputs, all tensors of
# one dim or more; the test moves each input in turn to the other device.
CASES = {}


def case(name, make, call, match=MATCH, cpu_ok=()):
    """``cpu_ok``: positions of inputs that PyTorch takes on the CPU for a tensor of another
    device (an index of index_put, a 0-dim value): not moved here, where both devices are
    CPUs (test_zero_dim_cpu_values_and_cpu_indices_join runs those)."""
    CASES[name] = lambda: (make(), call, match, cpu_ok)


# -- elementwise: binary, comparisons, ternary -------------------------------------------------
_BINARY = ["add", "sub", "mul", "div", "divide", "true_divide", "floor_divide", "pow",
           "maximum", "minimum", "remainder", "fmod", "atan2", "arctan2", "eq", "ne", "lt", "le",
           "gt", "ge", "logical_and", "logical_or", "logical_xor", "isclose", "allclose",
           "equal"]
for _n in _BINARY:
    case(f"torch.{_n}", lambda: (pos(2, 3), pos(2, 3)), getattr(clgrad, _n))
    case(f"Tensor.{_n}", lambda: (pos(2, 3), pos(2, 3)),
         lambda a, b, _n=_n: getattr(a, _n)(b))
for _n in ["add_", "sub_", "mul_", "div_", "divide_", "true_divide_", "floor_divide_", "pow_",
           "maximum_", "minimum_", "remainder_", "fmod_", "atan2_", "arctan2_",
           "logical_xor_"]:
    case(f"Tensor.{_n}", lambda: (pos(2, 3), pos(2, 3)),
         lambda a, b, _n=_n: getattr(a, _n)(b))
for _n in ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
           "bitwise_right_shift"]:
    case(f"torch.{_n}", lambda: (ints(4, 2, 3), ints(4, 2, 3)), getattr(clgrad, _n))
    case(f"Tensor.{_n}", lambda: (ints(4, 2, 3), ints(4, 2, 3)),
         lambda a, b, _n=_n: getattr(a, _n)(b))
    case(f"Tensor.{_n}_", lambda: (ints(4, 2, 3), ints(4, 2, 3)),
         lambda a, b, _n=_n: getattr(a, _n + "_")(b))
for _op in ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
            "xor", "lt", "le", "gt", "ge", "eq", "ne"]:
    _make = (lambda: (ints(4, 3, 3), ints(4, 3, 3))) if _op in ("and", "or", "xor") else (
        lambda: (pos(3, 3), pos(3, 3)))
    case(f"Tensor.__{_op}__", _make, getattr(operator, _op if _op not in ("and", "or") else
                                             _op + "_"))
    if _op not in ("lt", "le", "gt", "ge", "eq", "ne", "matmul"):
        case(f"Tensor.__i{_op}__", _make, getattr(operator, f"i{_op}" if _op not in (
            "and", "or") else f"i{_op}"))
case("Tensor.__rsub__", lambda: (pos(3), pos(3)), lambda a, b: a.__rsub__(b))
case("torch.where", lambda: (bools(2, 3), r(2, 3), r(2, 3)), clgrad.where)
case("Tensor.where", lambda: (r(2, 3), bools(2, 3), r(2, 3)), lambda x, c, y: x.where(c, y))
case("torch.clamp", lambda: (r(2, 3), r(2, 3) - 0.5, r(2, 3) + 0.5),
     lambda x, lo, hi: clgrad.clamp(x, lo, hi))
case("torch.clip", lambda: (r(2, 3), r(2, 3) - 0.5, r(2, 3) + 0.5),
     lambda x, lo, hi: clgrad.clip(x, lo, hi))
case("Tensor.clamp", lambda: (r(2, 3), r(2, 3) - 0.5), lambda x, lo: x.clamp(lo))
case("Tensor.clip", lambda: (r(2, 3), r(2, 3) + 0.5), lambda x, hi: x.clip(max=hi))
case("Tensor.clamp_", lambda: (r(2, 3), r(2, 3) - 0.5, r(2, 3) + 0.5),
     lambda x, lo, hi: x.clamp_(lo, hi))
case("Tensor.clip_", lambda: (r(2, 3), r(2, 3) - 0.5), lambda x, lo: x.clip_(min=lo))
case("Tensor.clamp_min", lambda: (r(2, 3), r(2, 3)), lambda x, m: x.clamp_min(m))
case("Tensor.clamp_max", lambda: (r(2, 3), r(2, 3)), lambda x, m: x.clamp_max(m))
case("Tensor.clamp_min_", lambda: (r(2, 3), r(2, 3)), lambda x, m: x.clamp_min_(m))
case("Tensor.clamp_max_", lambda: (r(2, 3), r(2, 3)), lambda x, m: x.clamp_max_(m))
case("torch.lerp", lambda: (r(2, 3), r(2, 3), prob(2, 3)), clgrad.lerp)
case("Tensor.lerp", lambda: (r(2, 3), r(2, 3)), lambda a, b: a.lerp(b, 0.25))
case("Tensor.lerp_", lambda: (r(2, 3), r(2, 3), prob(2, 3)), lambda a, b, w: a.lerp_(b, w))
for _n in ["addcmul", "addcdiv"]:
    case(f"torch.{_n}", lambda: (r(2, 3), r(2, 3), pos(2, 3)), getattr(clgrad, _n))
    case(f"Tensor.{_n}", lambda: (r(2, 3), r(2, 3), pos(2, 3)),
         lambda a, b, c, _n=_n: getattr(a, _n)(b, c))
    case(f"Tensor.{_n}_", lambda: (r(2, 3), r(2, 3), pos(2, 3)),
         lambda a, b, c, _n=_n: getattr(a, _n + "_")(b, c))
case("torch.diff", lambda: (r(2, 3), r(2, 1), r(2, 2)),
     lambda x, p, a: clgrad.diff(x, prepend=p, append=a))
case("Tensor.diff", lambda: (r(2, 3), r(2, 1)), lambda x, p: x.diff(prepend=p))
case("torch.normal", lambda: (r(2, 3), pos(2, 3)), lambda m, s: clgrad.normal(m, s))
case("torch.bernoulli", lambda: (prob(2, 3), r(2, 3)), lambda p, o: clgrad.bernoulli(p, out=o))

# -- matmul, einsum ------------------------------------------------------------------------------
for _n in ["matmul", "mm"]:
    case(f"torch.{_n}", lambda: (r(2, 3), r(3, 4)), getattr(clgrad, _n))
    case(f"Tensor.{_n}", lambda: (r(2, 3), r(3, 4)), lambda a, b, _n=_n: getattr(a, _n)(b))
case("torch.matmul[batched]", lambda: (r(2, 2, 3), r(3, 4)), clgrad.matmul)
case("torch.bmm", lambda: (r(2, 2, 3), r(2, 3, 4)), clgrad.bmm)
case("linalg.solve", lambda: (r(2, 3, 3), r(2, 3, 2)), clgrad.linalg.solve)
case("linalg.lstsq", lambda: (r(2, 4, 3), r(2, 4, 2)), clgrad.linalg.lstsq)
case("linalg.solve_triangular", lambda: (r(2, 3, 3), r(2, 3, 2)),
     lambda a, b: clgrad.linalg.solve_triangular(a, b, upper=True))
case("linalg.householder_product", lambda: (r(2, 4, 3), r(2, 2)),
     clgrad.linalg.householder_product)
case("torch.orgqr", lambda: (r(2, 4, 3), r(2, 2)), clgrad.orgqr)
case("Tensor.orgqr", lambda: (r(2, 4, 3), r(2, 2)), lambda a, t: a.orgqr(t))
case("torch.cholesky_solve", lambda: (r(2, 3, 2), r(2, 3, 3)), clgrad.cholesky_solve)
case("Tensor.cholesky_solve", lambda: (r(2, 3, 2), r(2, 3, 3)), lambda b, l: b.cholesky_solve(l))
case("Tensor.bmm", lambda: (r(2, 2, 3), r(2, 3, 4)), lambda a, b: a.bmm(b))
for _n in ["dot", "outer", "ger"]:
    case(f"torch.{_n}", lambda: (r(3), r(3)), getattr(clgrad, _n))
    case(f"Tensor.{_n}", lambda: (r(3), r(3)), lambda a, b, _n=_n: getattr(a, _n)(b))
for _n in ["mv"]:
    case(f"torch.{_n}", lambda: (r(2, 3), r(3)), getattr(clgrad, _n))
    case(f"Tensor.{_n}", lambda: (r(2, 3), r(3)), lambda a, b: a.mv(b))
case("torch.addmm", lambda: (r(2, 4), r(2, 3), r(3, 4)), clgrad.addmm)
case("Tensor.addmm", lambda: (r(2, 4), r(2, 3), r(3, 4)), lambda c, a, b: c.addmm(a, b))
case("Tensor.addmm_", lambda: (r(2, 4), r(2, 3), r(3, 4)), lambda c, a, b: c.addmm_(a, b))
case("torch.addmv", lambda: (r(2), r(2, 3), r(3)), clgrad.addmv)
case("Tensor.addmv", lambda: (r(2), r(2, 3), r(3)), lambda c, a, b: c.addmv(a, b))
case("torch.baddbmm", lambda: (r(2, 2, 4), r(2, 2, 3), r(2, 3, 4)), clgrad.baddbmm)
case("Tensor.baddbmm", lambda: (r(2, 2, 4), r(2, 2, 3), r(2, 3, 4)),
     lambda c, a, b: c.baddbmm(a, b))
case("Tensor.baddbmm_", lambda: (r(2, 2, 4), r(2, 2, 3), r(2, 3, 4)),
     lambda c, a, b: c.baddbmm_(a, b))
case("torch.einsum", lambda: (r(2, 3), r(3, 4)), lambda a, b: clgrad.einsum("ij,jk->ik", a, b))
case("torch.einsum[list]", lambda: (r(2, 3), r(2, 3)),
     lambda a, b: clgrad.einsum("ij,ij->i", [a, b]))
case("F.linear", lambda: (r(2, 3), r(4, 3), r(4)), F.linear)
case("F.linear[no bias]", lambda: (r(2, 3), r(4, 3)), F.linear)
case("F.bilinear", lambda: (r(2, 3), r(2, 4), r(5, 3, 4), r(5)), F.bilinear)
case("F.bilinear[no bias]", lambda: (r(2, 3), r(2, 4), r(5, 3, 4)), F.bilinear)
case("F.scaled_dot_product_attention", lambda: (r(1, 2, 3, 4), r(1, 2, 3, 4), r(1, 2, 3, 4)),
     F.scaled_dot_product_attention)
case("F.scaled_dot_product_attention[mask]",
     lambda: (r(1, 2, 3, 4), r(1, 2, 3, 4), r(1, 2, 3, 4), r(3, 3)),
     lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m))

# -- conv ----------------------------------------------------------------------------------------
case("F.conv1d", lambda: (r(1, 2, 5), r(3, 2, 3), r(3)), F.conv1d)
case("F.conv2d", lambda: (r(1, 2, 5, 5), r(3, 2, 3, 3), r(3)), F.conv2d)
case("F.conv2d[no bias]", lambda: (r(1, 2, 5, 5), r(3, 2, 3, 3)), F.conv2d)
case("F.conv_transpose1d", lambda: (r(1, 2, 5), r(2, 3, 3), r(3)), F.conv_transpose1d)
case("F.conv_transpose2d", lambda: (r(1, 2, 5, 5), r(2, 3, 3, 3), r(3)), F.conv_transpose2d)
case("F.conv3d", lambda: (r(1, 2, 4, 5, 5), r(3, 2, 2, 3, 3), r(3)), F.conv3d)
case("F.conv_transpose3d", lambda: (r(1, 2, 3, 5, 5), r(2, 3, 2, 3, 3), r(3)),
     F.conv_transpose3d)
case("torch.conv3d", lambda: (r(1, 2, 4, 5, 5), r(3, 2, 2, 3, 3), r(3)), clgrad.conv3d)
case("torch.conv_transpose3d", lambda: (r(1, 2, 3, 5, 5), r(2, 3, 2, 3, 3), r(3)),
     clgrad.conv_transpose3d)
case("F.prelu", lambda: (r(2, 3, 4), r(3)), F.prelu)

# -- normalization -------------------------------------------------------------------------------
case("F.batch_norm[eval]", lambda: (r(4, 3), r(3), pos(3), r(3), r(3)),
     lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=False))
case("F.batch_norm[train]", lambda: (r(4, 3), r(3), pos(3), r(3), r(3)),
     lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=True))
case("F.batch_norm[train, no stats]", lambda: (r(4, 3, 2), r(3), r(3)),
     lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True))
case("F.layer_norm", lambda: (r(2, 3), r(3), r(3)), lambda x, w, b: F.layer_norm(x, (3,), w, b))
case("F.group_norm", lambda: (r(2, 4, 3), r(4), r(4)), lambda x, w, b: F.group_norm(x, 2, w, b))
case("F.rms_norm", lambda: (r(2, 3), r(3)), lambda x, w: F.rms_norm(x, (3,), w))
case("F.max_unpool2d", lambda: (r(1, 1, 2, 2), clgrad.zeros(1, 1, 2, 2, dtype=clgrad.int64)),
     lambda x, i: F.max_unpool2d(x, i, 2))
case("F.max_unpool1d", lambda: (r(1, 1, 2), clgrad.zeros(1, 1, 2, dtype=clgrad.int64)),
     lambda x, i: F.max_unpool1d(x, i, 2))
case("F.instance_norm", lambda: (r(2, 3, 4), r(3), pos(3), r(3), r(3)),
     lambda x, m, v, w, b: F.instance_norm(x, m, v, w, b))

# -- index family --------------------------------------------------------------------------------
case("F.embedding", lambda: (ints(4, 2, 3), r(4, 5)), F.embedding)
case("torch.gather", lambda: (r(3, 4), ints(4, 3, 2)), lambda x, i: clgrad.gather(x, 1, i))
case("Tensor.gather", lambda: (r(3, 4), ints(4, 3, 2)), lambda x, i: x.gather(1, i))
case("torch.index_select", lambda: (r(3, 4), ints(4, 3)),
     lambda x, i: clgrad.index_select(x, 1, i))
case("Tensor.index_select", lambda: (r(3, 4), ints(4, 3)), lambda x, i: x.index_select(1, i))
case("torch.scatter", lambda: (r(3, 4), ints(4, 3, 2), r(3, 2)),
     lambda x, i, s: clgrad.scatter(x, 1, i, s))
case("Tensor.scatter", lambda: (r(3, 4), ints(4, 3, 2), r(3, 2)),
     lambda x, i, s: x.scatter(1, i, s))
case("Tensor.scatter_", lambda: (r(3, 4), ints(4, 3, 2), r(3, 2)),
     lambda x, i, s: x.scatter_(1, i, s))
case("Tensor.scatter_[reduce]", lambda: (r(3, 4), ints(4, 3, 2), r(3, 2)),
     lambda x, i, s: x.scatter_(1, i, s, reduce="add"))
case("torch.scatter_add", lambda: (r(3, 4), ints(4, 3, 2), r(3, 2)),
     lambda x, i, s: clgrad.scatter_add(x, 1, i, s))
case("Tensor.scatter_add", lambda: (r(3, 4), ints(4, 3, 2), r(3, 2)),
     lambda x, i, s: x.scatter_add(1, i, s))
case("Tensor.scatter_add_", lambda: (r(3, 4), ints(4, 3, 2), r(3, 2)),
     lambda x, i, s: x.scatter_add_(1, i, s))
case("torch.index_add", lambda: (r(3, 4), ints(3, 2), r(2, 4)),
     lambda x, i, s: clgrad.index_add(x, 0, i, s))
case("Tensor.index_add", lambda: (r(3, 4), ints(3, 2), r(2, 4)),
     lambda x, i, s: x.index_add(0, i, s))
case("Tensor.index_add_", lambda: (r(3, 4), ints(3, 2), r(2, 4)),
     lambda x, i, s: x.index_add_(0, i, s))
case("torch.index_put", lambda: (r(3, 4), ints(3, 2), r(2, 4)),
     lambda x, i, v: clgrad.index_put(x, (i,), v), cpu_ok=(1,))
case("Tensor.index_put", lambda: (r(3, 4), ints(3, 2), r(2, 4)),
     lambda x, i, v: x.index_put((i,), v), cpu_ok=(1,))
case("Tensor.index_put_", lambda: (r(3, 4), ints(3, 2), r(2, 4)),
     lambda x, i, v: x.index_put_((i,), v, accumulate=True), cpu_ok=(1,))
case("torch.masked_fill", lambda: (r(2, 3), bools(2, 3)),
     lambda x, m: clgrad.masked_fill(x, m, 0.5))
case("Tensor.masked_fill", lambda: (r(2, 3), bools(2, 3)), lambda x, m: x.masked_fill(m, 0.5))
case("Tensor.masked_fill_", lambda: (r(2, 3), bools(2, 3)), lambda x, m: x.masked_fill_(m, 0.5))
case("Tensor.masked_fill[value tensor]", lambda: (r(2, 3), bools(2, 3), r(1)),
     lambda x, m, v: x.masked_fill(m, v.reshape(())), cpu_ok=(2,))  # a 0-dim CPU value
case("torch.masked_select", lambda: (r(2, 3), bools(2, 3)), clgrad.masked_select)
case("Tensor.masked_select", lambda: (r(2, 3), bools(2, 3)), lambda x, m: x.masked_select(m))
case("Tensor.__setitem__[mask]", lambda: (r(2, 3), bools(2, 3), r(1)),
     lambda x, m, v: x.__setitem__(m, v), cpu_ok=(1,))  # a CPU mask: PyTorch moves it
case("Tensor.__setitem__[slice, tensor value]", lambda: (r(2, 3), r(3)),
     lambda x, v: x.__setitem__((slice(None), [0, 2, 1]), v))
case("torch.cat", lambda: (r(2, 3), r(1, 3)), lambda a, b: clgrad.cat([a, b]))
case("torch.concat", lambda: (r(2, 3), r(1, 3), r(2, 3)), lambda a, b, c: clgrad.concat((a, b, c)))
case("torch.stack", lambda: (r(2, 3), r(2, 3)), lambda a, b: clgrad.stack([a, b], 1))
case("torch.meshgrid", lambda: (r(2), r(3)),
     lambda a, b: [t + 0 for t in clgrad.meshgrid(a, b, indexing="ij")])
case("torch.repeat_interleave", lambda: (r(3), ints(3, 3)), clgrad.repeat_interleave)
case("Tensor.repeat_interleave", lambda: (r(3), ints(3, 3)), lambda x, n: x.repeat_interleave(n))

# -- special functions, search (clgrad/ops/special.py, sort.py) ----------------------------------
for _n in ("hypot", "logaddexp", "logaddexp2", "xlogy", "copysign"):
    case(f"torch.{_n}", lambda: (pos(2, 3), pos(2, 3)), getattr(clgrad, _n))
    case(f"Tensor.{_n}", lambda: (pos(2, 3), pos(2, 3)), lambda a, b, _n=_n: getattr(a, _n)(b))
for _n in ("hypot_", "xlogy_", "copysign_"):
    case(f"Tensor.{_n}", lambda: (pos(2, 3), pos(2, 3)), lambda a, b, _n=_n: getattr(a, _n)(b))
for _n in ("clamp_min", "clamp_max"):
    case(f"torch.{_n}", lambda: (r(2, 3), r(2, 3)), getattr(clgrad, _n))
for _n in ("igamma", "igammac"):  # (clgrad/ops/gamma.py)
    case(f"torch.{_n}", lambda: (pos(2, 3), pos(2, 3)), getattr(clgrad, _n))
    case(f"Tensor.{_n}", lambda: (pos(2, 3), pos(2, 3)), lambda a, b, _n=_n: getattr(a, _n)(b))
    case(f"Tensor.{_n}_", lambda: (pos(2, 3), pos(2, 3)),
         lambda a, b, _n=_n: getattr(a, _n + "_")(b))
case("torch.float_power", lambda: (pos(2, 3), pos(2, 3)), clgrad.float_power)
case("Tensor.float_power", lambda: (pos(2, 3), pos(2, 3)), lambda a, b: a.float_power(b))
case("Tensor.float_power_", lambda: (pos(2, 3).double(), pos(2, 3)),
     lambda a, b: a.float_power_(b))
# -- math ops (clgrad/ops/math_ops.py) and PyTorch's other names of binary ops ----------------
for _n in ("fmax", "fmin", "heaviside", "ldexp", "nextafter", "multiply", "subtract", "greater",
           "greater_equal", "less", "less_equal", "not_equal"):
    case(f"torch.{_n}", lambda: (pos(2, 3), pos(2, 3)), getattr(clgrad, _n))
    case(f"Tensor.{_n}", lambda: (pos(2, 3), pos(2, 3)), lambda a, b, _n=_n: getattr(a, _n)(b))
for _n in ("heaviside_", "ldexp_", "nextafter_", "multiply_", "subtract_"):
    case(f"Tensor.{_n}", lambda: (pos(2, 3), pos(2, 3)), lambda a, b, _n=_n: getattr(a, _n)(b))
for _n in ("gcd", "lcm"):
    case(f"torch.{_n}", lambda: (ints(9, 2, 3), ints(9, 2, 3)), getattr(clgrad, _n))
    for _m in (_n, _n + "_"):
        case(f"Tensor.{_m}", lambda: (ints(9, 2, 3), ints(9, 2, 3)),
             lambda a, b, _m=_m: getattr(a, _m)(b))
case("torch.searchsorted", lambda: (clgrad.arange(5.0), r(3)), clgrad.searchsorted)
case("torch.bucketize", lambda: (r(3), clgrad.arange(5.0)), clgrad.bucketize)
case("torch.isin", lambda: (r(3), r(4)), clgrad.isin)

# -- shape helpers and products (clgrad/ops/shaping.py, products.py) ------------------------------
case("torch.block_diag", lambda: (r(2, 3), r(1, 2)), clgrad.block_diag)
case("torch.cartesian_prod", lambda: (r(2), r(3)), clgrad.cartesian_prod)
case("torch.index_fill", lambda: (r(3, 4), ints(3, 2)),
     lambda x, i: clgrad.index_fill(x, 0, i, 1.0))
case("Tensor.index_fill", lambda: (r(3, 4), ints(3, 2)), lambda x, i: x.index_fill(0, i, 1.0))
case("Tensor.index_fill_", lambda: (r(3, 4), ints(3, 2)), lambda x, i: x.index_fill_(0, i, 1.0))
case("torch.take", lambda: (r(3, 4), ints(12, 5)), clgrad.take)
case("Tensor.take", lambda: (r(3, 4), ints(12, 5)), lambda x, i: x.take(i))
case("torch.take_along_dim", lambda: (r(3, 4), ints(4, 3, 2)),
     lambda x, i: clgrad.take_along_dim(x, i, 1))
case("Tensor.take_along_dim", lambda: (r(3, 4), ints(4, 3, 2)),
     lambda x, i: x.take_along_dim(i, 1))
for _n in ("kron", "dist"):
    case(f"torch.{_n}", lambda: (r(2, 3), r(2, 3)), getattr(clgrad, _n))
    case(f"Tensor.{_n}", lambda: (r(2, 3), r(2, 3)), lambda a, b, _n=_n: getattr(a, _n)(b))
case("torch.tensordot", lambda: (r(2, 3), r(3, 4)), lambda a, b: clgrad.tensordot(a, b, 1))
case("torch.cdist", lambda: (r(2, 3), r(4, 3)), clgrad.cdist)
case("torch.addr", lambda: (r(2, 3), r(2), r(3)), clgrad.addr)
case("Tensor.addr", lambda: (r(2, 3), r(2), r(3)), lambda c, a, b: c.addr(a, b))
case("Tensor.addr_", lambda: (r(2, 3), r(2), r(3)), lambda c, a, b: c.addr_(a, b))
case("torch.addbmm", lambda: (r(2, 4), r(3, 2, 3), r(3, 3, 4)), clgrad.addbmm)
case("Tensor.addbmm", lambda: (r(2, 4), r(3, 2, 3), r(3, 3, 4)), lambda c, a, b: c.addbmm(a, b))
case("Tensor.addbmm_", lambda: (r(2, 4), r(3, 2, 3), r(3, 3, 4)),
     lambda c, a, b: c.addbmm_(a, b))

# -- losses --------------------------------------------------------------------------------------
for _n in ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div"]:
    case(f"F.{_n}", lambda: (r(2, 3, grad=True), r(2, 3)), getattr(F, _n))
case("F.binary_cross_entropy", lambda: (prob(2, 3), prob(2, 3), pos(2, 3)),
     F.binary_cross_entropy)
case("F.binary_cross_entropy_with_logits", lambda: (r(2, 3), prob(2, 3), pos(2, 3), pos(3)),
     lambda x, t, w, p: F.binary_cross_entropy_with_logits(x, t, w, pos_weight=p))
case("F.cross_entropy", lambda: (r(4, 3, grad=True), ints(3, 4), pos(3)),
     lambda x, t, w: F.cross_entropy(x, t, w))
case("F.cross_entropy[probabilities]", lambda: (r(4, 3), prob(4, 3)), F.cross_entropy)
case("F.nll_loss", lambda: (r(4, 3), ints(3, 4), pos(3)), lambda x, t, w: F.nll_loss(x, t, w))


def sign(*shape):
    """float32 values of -1 and 1."""
    return clgrad.tensor(_RNG.choice([-1.0, 1.0], shape).astype(np.float32))


for _f in (F, clgrad):
    _p = "F" if _f is F else "torch"
    case(f"{_p}.margin_ranking_loss", lambda: (r(4), r(4), sign(4)), _f.margin_ranking_loss)
    case(f"{_p}.hinge_embedding_loss", lambda: (r(4), sign(4)), _f.hinge_embedding_loss)
    case(f"{_p}.cosine_embedding_loss", lambda: (r(4, 3), r(4, 3), sign(4)),
         _f.cosine_embedding_loss)
    case(f"{_p}.triplet_margin_loss", lambda: (r(4, 3), r(4, 3), r(4, 3)),
         _f.triplet_margin_loss)
    case(f"{_p}.poisson_nll_loss", lambda: (r(4, 3), pos(4, 3)), _f.poisson_nll_loss)
    case(f"{_p}.cosine_similarity", lambda: (r(4, 3), r(4, 3)), _f.cosine_similarity)
    case(f"{_p}.pairwise_distance", lambda: (r(4, 3), r(4, 3)), _f.pairwise_distance)
case("F.soft_margin_loss", lambda: (r(4), sign(4)), F.soft_margin_loss)
case("F.multilabel_soft_margin_loss", lambda: (r(4, 3), prob(4, 3).round(), pos(3)),
     lambda x, t, w: F.multilabel_soft_margin_loss(x, t, w))
case("F.multi_margin_loss", lambda: (r(4, 3), ints(3, 4), pos(3)),
     lambda x, t, w: F.multi_margin_loss(x, t, weight=w))
case("F.gaussian_nll_loss", lambda: (r(4, 3), r(4, 3), pos(4, 3)), F.gaussian_nll_loss)
case("F.multilabel_margin_loss", lambda: (r(4, 3), ints(3, 4, 3)), F.multilabel_margin_loss)
case("F.triplet_margin_with_distance_loss", lambda: (r(4, 3), r(4, 3), r(4, 3)),
     F.triplet_margin_with_distance_loss)
case("F.embedding_bag", lambda: (ints(4, 6), r(4, 5), clgrad.tensor([0, 2, 2])),
     F.embedding_bag)
case("F.embedding_bag[per_sample_weights]", lambda: (ints(4, 2, 3), r(4, 5), r(2, 3)),
     lambda i, w, s: F.embedding_bag(i, w, mode="sum", per_sample_weights=s))

# -- sampling, padding, pooling with tensors ------------------------------------------------------
case("F.grid_sample", lambda: (r(1, 2, 4, 4), r(1, 3, 3, 2)),
     lambda x, g: F.grid_sample(x, g, align_corners=False))
case("F.affine_grid[grid_sample]",
     lambda: (r(1, 2, 4, 4), F.affine_grid(r(1, 2, 3), (1, 2, 3, 3), align_corners=False)),
     lambda x, g: F.grid_sample(x, g, align_corners=False))

# -- out= and in-place writes -----------------------------------------------------------------
case("torch.add[out]", lambda: (r(2, 3), r(2, 3), r(2, 3)), lambda a, b, o: clgrad.add(a, b, out=o))
case("torch.exp[out]", lambda: (r(2, 3), r(2, 3)), lambda a, o: clgrad.exp(a, out=o))
case("torch.sum[out]", lambda: (r(2, 3), r(2)), lambda a, o: clgrad.sum(a, 1, out=o))
case("torch.matmul[out]", lambda: (r(2, 3), r(3, 4), r(2, 4)),
     lambda a, b, o: clgrad.matmul(a, b, out=o))
case("torch.cat[out]", lambda: (r(2, 3), r(1, 3), r(3, 3)),
     lambda a, b, o: clgrad.cat([a, b], out=o))
case("torch.where[out]", lambda: (bools(2, 3), r(2, 3), r(2, 3), r(2, 3)),
     lambda c, a, b, o: clgrad.where(c, a, b, out=o))
case("torch.sort[out]", lambda: (r(2, 3), r(2, 3), ints(3, 2, 3)),
     lambda a, v, i: clgrad.sort(a, out=(v, i)))
case("torch.add[number, out]", lambda: (r(2, 3), r(2, 3)),
     lambda a, o: clgrad.add(a, 1.0, out=o))
case("Tensor.add_[alpha]", lambda: (r(2, 3), r(2, 3)), lambda a, b: a.add_(b, alpha=2))
case("Tensor.backward[gradient]", lambda: (r(2, 3, grad=True), r(2, 3)),
     lambda a, g: a.backward(g), "invalid gradient at index 0 - expected device")


# -- nn modules, optimizers, sequences ------------------------------------------------------------
@functools.cache
def _module(kind):
    """An nn module on the default device, made once (outside the counted calls)."""
    clgrad.manual_seed(0)
    nn = clgrad.nn
    return {"LSTM": lambda: nn.LSTM(3, 4, batch_first=True),
            "GRU": lambda: nn.GRU(3, 4), "RNNCell": lambda: nn.RNNCell(3, 4),
            "LSTMCell": lambda: nn.LSTMCell(3, 4), "Linear": lambda: nn.Linear(3, 4),
            "Conv2d": lambda: nn.Conv2d(2, 3, 3), "Conv1d": lambda: nn.Conv1d(2, 3, 3),
            "ConvTranspose2d": lambda: nn.ConvTranspose2d(2, 3, 3),
            "BatchNorm2d": lambda: nn.BatchNorm2d(2), "BatchNorm1d": lambda: nn.BatchNorm1d(3),
            "LayerNorm": lambda: nn.LayerNorm(3), "GroupNorm": lambda: nn.GroupNorm(2, 4),
            "InstanceNorm1d": lambda: nn.InstanceNorm1d(3, affine=True,
                                                        track_running_stats=True),
            "Embedding": lambda: nn.Embedding(5, 3), "PReLU": lambda: nn.PReLU(3),
            "MultiheadAttention": lambda: nn.MultiheadAttention(4, 2),
            "TransformerEncoderLayer": lambda: nn.TransformerEncoderLayer(
                4, 2, dim_feedforward=8, dropout=0.0)}[kind]()


def _with_module(kind, *shapes):
    """A make function: the module first, then the inputs."""
    def make():
        _module(kind)
        return tuple(r(*s) for s in shapes)
    return make


def _sgd_step(p, g):
    p = clgrad.nn.Parameter(p)
    p.grad = g
    clgrad.optim.SGD([p], lr=0.1, momentum=0.9).step()


def _adam_step(p, g):
    p = clgrad.nn.Parameter(p)
    p.grad = g
    clgrad.optim.Adam([p], lr=0.1).step()


case("nn.LSTM[h0, c0]", _with_module("LSTM", (2, 5, 3), (1, 2, 4), (1, 2, 4)),
     lambda x, h, c: _module("LSTM")(x, (h, c)))
case("nn.GRU[h0]", _with_module("GRU", (5, 2, 3), (1, 2, 4)), lambda x, h: _module("GRU")(x, h))
case("nn.RNNCell[hx]", _with_module("RNNCell", (2, 3), (2, 4)),
     lambda x, h: _module("RNNCell")(x, h))
case("nn.LSTMCell[hx]", _with_module("LSTMCell", (2, 3), (2, 4), (2, 4)),
     lambda x, h, c: _module("LSTMCell")(x, (h, c)))
# a model on one device, its input on another (the H200 crash: F.embedding's kernel)
for _kind, _shape in [("Linear", (2, 3)), ("Conv2d", (1, 2, 5, 5)), ("Conv1d", (1, 2, 5)),
                      ("ConvTranspose2d", (1, 2, 4, 4)), ("BatchNorm2d", (2, 2, 3, 3)),
                      ("BatchNorm1d", (4, 3)), ("LayerNorm", (2, 3)), ("GroupNorm", (2, 4, 3)),
                      ("InstanceNorm1d", (2, 3, 4)), ("PReLU", (2, 3, 4)),
                      ("TransformerEncoderLayer", (3, 2, 4))]:
    case(f"nn.{_kind}[input]", _with_module(_kind, _shape), lambda x, _k=_kind: _module(_k)(x))
case("nn.BatchNorm2d[eval, input]", _with_module("BatchNorm2d", (2, 2, 3, 3)),
     lambda x: _module("BatchNorm2d").eval()(x))
case("nn.Embedding[input]", lambda: (_module("Embedding"), (ints(5, 2, 3),))[1],
     lambda i: _module("Embedding")(i))
case("nn.MultiheadAttention[query, key, value]",
     _with_module("MultiheadAttention", (3, 2, 4), (5, 2, 4), (5, 2, 4)),
     lambda q, k, v: _module("MultiheadAttention")(q, k, v))
case("optim.SGD.step[grad]", lambda: (r(2, 3), r(2, 3)), _sgd_step, "on the same device")
case("optim.Adam.step[grad]", lambda: (r(2, 3), r(2, 3)), _adam_step, "on the same device")

# -- torch's top-level forms of nn.functional ops, in-place forms (tests/test_top_level_aliases) --
for _n in ["eq_", "ne_", "lt_", "le_", "gt_", "ge_", "logical_and_", "logical_or_"]:
    case(f"Tensor.{_n}", lambda: (pos(2, 3), pos(2, 3)), lambda a, b, _n=_n: getattr(a, _n)(b))
case("torch.xlogy_", lambda: (pos(2, 3), pos(2, 3)), clgrad.xlogy_)
case("torch.ldexp_", lambda: (pos(2, 3), pos(2, 3)), clgrad.ldexp_)
for _n in ("gcd_", "lcm_"):
    case(f"torch.{_n}", lambda: (ints(9, 2, 3), ints(9, 2, 3)), getattr(clgrad, _n))
case("Tensor.addmv_", lambda: (r(2), r(2, 3), r(3)), lambda c, a, b: c.addmv_(a, b))
case("torch.addmv_", lambda: (r(2), r(2, 3), r(3)), clgrad.addmv_)
case("torch.rsub", lambda: (r(2, 3), r(2, 3)), clgrad.rsub)
case("torch.bilinear", lambda: (r(2, 3), r(2, 4), r(5, 3, 4), r(5)), clgrad.bilinear)
case("torch.conv1d", lambda: (r(1, 2, 5), r(3, 2, 3), r(3)), clgrad.conv1d)
case("torch.conv2d", lambda: (r(1, 2, 5, 5), r(3, 2, 3, 3), r(3)), clgrad.conv2d)
case("torch.conv_transpose1d", lambda: (r(1, 2, 5), r(2, 3, 3), r(3)), clgrad.conv_transpose1d)
case("torch.conv_transpose2d", lambda: (r(1, 2, 5, 5), r(2, 3, 3, 3), r(3)),
     clgrad.conv_transpose2d)
case("torch.convolution", lambda: (r(1, 2, 5, 5), r(3, 2, 3, 3), r(3)),
     lambda x, w, b: clgrad.convolution(x, w, b, (1, 1), (0, 0), (1, 1), False, (0, 0), 1))
case("torch.prelu", lambda: (r(2, 3, 4), r(3)), clgrad.prelu)
case("torch.batch_norm", lambda: (r(4, 3), r(3), r(3), r(3), pos(3)),
     lambda x, w, b, m, v: clgrad.batch_norm(x, w, b, m, v, True, 0.1, 1e-5, False))
case("torch.instance_norm", lambda: (r(2, 3, 4), r(3), r(3)),
     lambda x, w, b: clgrad.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False))
case("torch.layer_norm", lambda: (r(2, 3), r(3), r(3)),
     lambda x, w, b: clgrad.layer_norm(x, (3,), w, b))
case("torch.group_norm", lambda: (r(2, 4, 3), r(4), r(4)),
     lambda x, w, b: clgrad.group_norm(x, 2, w, b))
case("torch.rms_norm", lambda: (r(2, 3), r(3)), lambda x, w: clgrad.rms_norm(x, (3,), w))
case("torch.embedding", lambda: (r(4, 5), ints(4, 2, 3)), clgrad.embedding)
case("torch.embedding_bag", lambda: (r(4, 5), ints(4, 6), clgrad.tensor([0, 2, 2]), r(6)),
     lambda w, i, o, s: clgrad.embedding_bag(w, i, o, False, 0, False, s))
case("torch.embedding_renorm_", lambda: (r(4, 5), ints(4, 2, 3)),
     lambda w, i: clgrad.embedding_renorm_(w, i, 0.5, 2.0))
case("F.embedding[max_norm]", lambda: (ints(4, 2, 3), r(4, 5)),
     lambda i, w: F.embedding(i, w, max_norm=0.5))
case("torch.binary_cross_entropy_with_logits", lambda: (r(2, 3), prob(2, 3), pos(2, 3), pos(3)),
     clgrad.binary_cross_entropy_with_logits)
case("torch.kl_div", lambda: (r(2, 3, grad=True), r(2, 3)), clgrad.kl_div)


def _moved(t, dev):
    """A copy of ``t`` on ``dev``: a leaf, requiring grad where t does."""
    m = t.detach().to(dev)
    return m.requires_grad_() if t.requires_grad else m


@pytest.mark.parametrize("name", sorted(CASES))
def test_two_devices_raise_before_any_launch(name, devices):
    _, other = devices
    inputs, call, match, cpu_ok = CASES[name]()
    assert all(t.ndim >= 1 for t in inputs), name  # a 0-dim CPU tensor may join another device
    call(*[_moved(t, inputs[0]._storage.device) for t in inputs])  # one device: it runs
    for i in (i for i in range(len(inputs)) if i not in cpu_ok):
        moved = [_moved(t, other if j == i else t._storage.device) for j, t in enumerate(inputs)]
        before = [(t.detach().numpy().copy(), t._version) for t in moved]
        launches = launch_count()
        with pytest.raises(RuntimeError, match=match) as err:
            call(*moved)
        assert launch_count() == launches, f"{name}: input {i} on another device: a launch ran"
        assert "reached it" not in str(err.value), f"{name}: only the launch layer caught it"
        for t, (v, version) in zip(moved, before):
            assert t._version == version and t.grad is None, (name, i)
            np.testing.assert_array_equal(t.detach().numpy(), v)


# -- misc-api: statistics, scatters, products (tests/test_misc_api.py) -------------------------
_IX = lambda: clgrad.tensor([[0, 1, 0], [2, 2, 1]])  # noqa: E731
for _p in ("torch", "Tensor"):
    _f = (lambda n: getattr(clgrad, n)) if _p == "torch" else (
        lambda n: lambda a, *rest: getattr(a, n)(*rest))
    case(f"{_p}.bincount", lambda: (ints(4, 5), r(5)), _f("bincount"))
    case(f"{_p}.cov", lambda: (r(2, 5), prob(5)), lambda x, w, _p=_p: (
        clgrad.cov if _p == "torch" else clgrad.Tensor.cov)(x, aweights=w))
    case(f"{_p}.cross", lambda: (r(4, 3), r(4, 3)), _f("cross"))
    case(f"{_p}.inner", lambda: (r(2, 3), r(4, 3)), _f("inner"))
    case(f"{_p}.vdot", lambda: (r(3), r(3)), _f("vdot"))
    case(f"{_p}.diagonal_scatter", lambda: (r(3, 3), r(3)), _f("diagonal_scatter"))
    case(f"{_p}.select_scatter", lambda: (r(3, 3), r(3)),
         lambda a, b, _f=_f: _f("select_scatter")(a, b, 0, 1))
    case(f"{_p}.slice_scatter", lambda: (r(3, 3), r(1, 3)),
         lambda a, b, _f=_f: _f("slice_scatter")(a, b, 0, 0, 1))
    case(f"{_p}.index_copy", lambda: (r(3, 3), ints(3, 2), r(3, 2)),
         lambda a, i, b, _f=_f: _f("index_copy")(a, 1, i, b))
    case(f"{_p}.masked_scatter", lambda: (r(3, 3), bools(3, 3), r(9)), _f("masked_scatter"))
    case(f"{_p}.put", lambda: (r(3, 3), ints(9, 2), r(2)), _f("put"))
    case(f"{_p}.scatter_reduce", lambda: (r(3, 3), _IX(), r(2, 3)),
         lambda a, i, b, _f=_f: _f("scatter_reduce")(a, 0, i, b, "amax"))
case("torch.trapezoid", lambda: (r(2, 4), r(4)), clgrad.trapezoid)
case("torch.trapz", lambda: (r(2, 4), r(4)), clgrad.trapz)
case("torch.cumulative_trapezoid", lambda: (r(2, 4), r(4)), clgrad.cumulative_trapezoid)
case("linalg.cross", lambda: (r(4, 3), r(4, 3)), clgrad.linalg.cross)
case("Tensor.index_copy_", lambda: (r(3, 3), ints(3, 2), r(3, 2)),
     lambda a, i, b: a.index_copy_(1, i, b))
case("Tensor.masked_scatter_", lambda: (r(3, 3), bools(3, 3), r(9)),
     lambda a, m, b: a.masked_scatter_(m, b))
case("Tensor.put_", lambda: (r(3, 3), ints(9, 2), r(2)), lambda a, i, b: a.put_(i, b))
case("Tensor.scatter_reduce_", lambda: (r(3, 3), _IX(), r(2, 3)),
     lambda a, i, b: a.scatter_reduce_(0, i, b, "sum"))


# -- the op list -------------------------------------------------------------------------------
# Ops that may take tensors of two devices, each with PyTorch's reason (or that compute nothing
# from the tensors' data), named as in CASES.
LEGAL = {
    "torch.moveaxis": "source and destination are dims (the names read as a tensor's)",
    "Tensor.moveaxis": "source and destination are dims (the names read as a tensor's)",
    **{f"torch.atleast_{k}d": "each tensor comes back on its own device: nothing is combined"
       for k in (1, 2, 3)},
    "F.threshold": "threshold and value are numbers (the name reads as a tensor's)",
    "F.threshold_": "threshold and value are numbers (the name reads as a tensor's)",
    "torch.threshold": "threshold and value are numbers (the name reads as a tensor's)",
    "torch.threshold_": "threshold and value are numbers (the name reads as a tensor's)",
    "Tensor.copy_": "copies across devices, as PyTorch (tests/test_device_cross.py)",
    "Tensor.to": "moves to another device (tests/test_device_cross.py)",
    "Tensor.type_as": "a cast to the other's dtype (clgrad's type names are the CPU ones)",
    "Tensor.expand_as": "reads the other's shape only",
    "Tensor.view_as": "reads the other's shape only",
    "Tensor.reshape_as": "reads the other's shape only",
    "Tensor.resize_as_": "reads the other's shape only",
    "Tensor.new_tensor": "data copied onto self's device, as PyTorch",
    "Tensor.__getitem__": "a CPU index for a tensor on another device, as PyTorch "
                          "(tests/test_index.py); any other index raises",
    "Tensor.__setitem__": "a CPU index and basic-indexing values (copy_) from another device, "
                          "as PyTorch; advanced values on another device raise (CASES)",
    "F.ctc_loss": "targets and lengths are read on the host, from any device (PyTorch takes "
                  "them on the CPU for CUDA log_probs): test_ctc_loss_reads_targets_anywhere",
    "Tensor.index_put": "CPU indices, as PyTorch; values on another device raise (CASES)",
    "Tensor.index_put_": "CPU indices, as PyTorch; values on another device raise (CASES)",
    "torch.index_put": "CPU indices, as PyTorch; values on another device raise (CASES)",
    "torch.result_type": "dtypes only, as PyTorch",
    "torch.broadcast_tensors": "views only (expand), as PyTorch",
    "torch.tensor": "a tensor argument is copied to the device asked for",
    "torch.as_tensor": "as torch.tensor",
    "Tensor.register_hook": "the hook's result is checked at backward (test_device_cross.py)",
    "torch.select": "index is an int", "Tensor.select": "index is an int",
    "torch.movedim": "source and destination are dims", "Tensor.movedim": "as torch.movedim",
    "F.pad": "value is a number",
    "Tensor.normal_": "mean and std are numbers (torch.normal takes tensors: CASES)",
    "Tensor.uniform_": "a and b are numbers",
    "Tensor.polygamma_": "n is an int (the in-place wrapper's 'other' reads as a tensor's)",
    "Tensor.mvlgamma_": "p is an int (the in-place wrapper's 'other' reads as a tensor's)",
    "Tensor.fill_": "value is a number or a 0-dim tensor, copied as copy_ copies",
    "torch.fill_": "as Tensor.fill_", "torch.constant_pad_nd": "value is a number",
    "torch.index_put_": "CPU indices, as PyTorch; values on another device raise (CASES)",
    "Tensor.__radd__": "reflected operators: the forward operator's case covers them",
    "Tensor.__rmul__": "reflected operators: the forward operator's case covers them",
    "Tensor.__rtruediv__": "reflected operators: the forward operator's case covers them",
    "Tensor.__rpow__": "reflected operators: the forward operator's case covers them",
    "Tensor.__rmatmul__": "reflected operators: the forward operator's case covers them",
    "Tensor.__rfloordiv__": "reflected operators: the forward operator's case covers them",
    "Tensor.__rmod__": "reflected operators: the forward operator's case covers them",
    "Tensor.__rand__": "reflected operators: the forward operator's case covers them",
    "Tensor.__ror__": "reflected operators: the forward operator's case covers them",
    "Tensor.__rxor__": "reflected operators: the forward operator's case covers them",
    "torch.histc": "min and max are numbers", "Tensor.histc": "min and max are numbers",
    "torch.is_same_size": "reads the shapes only", "Tensor.is_same_size": "reads the shapes only",
    "torch.fill": "value is a number or a 0-dim tensor (which may be on the CPU, as PyTorch)",
}

# Parameter names that take a tensor in some call of a public op (besides those annotated
# Tensor): an op with two or more of them (self counts for a method) takes two tensors.
_TENSORISH = frozenset({
    "x", "a", "b", "input", "other", "self", "tensor", "weight", "bias", "target", "mask",
    "index", "indices", "src", "source", "values", "value", "end", "min", "max", "m",
    "prepend", "append", "running_mean", "running_var", "pos_weight", "attn_mask", "condition",
    "cond", "tensor1", "tensor2", "mat", "mat1", "mat2", "vec", "vec2", "batch1", "batch2",
    "grid", "theta", "exponent", "mean", "std", "repeats", "gradient", "out", "query", "key",
    "hx", "lengths", "probs"})
_SEQUENCE = frozenset({"tensors", "operands"})


def _public_ops():
    """{name: function} over the faces: torch.*, F.*, linalg.* and Tensor's methods."""
    ops = {}
    for prefix, module in (("torch", clgrad), ("F", F), ("linalg", clgrad.linalg)):
        for n in module.__all__:
            fn = getattr(module, n)
            if callable(fn) and not isinstance(fn, type):
                ops[f"{prefix}.{n}"] = fn
    for n in dir(clgrad.Tensor):
        fn = getattr(clgrad.Tensor, n, None)
        if n.startswith("_") and not (n.startswith("__") and n[2:-2] in _OPERATORS):
            continue
        if callable(fn) and not isinstance(fn, type):
            ops[f"Tensor.{n}"] = fn
    return ops


_OPERATORS = {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
              "xor", "lt", "le", "gt", "ge", "eq", "ne", "rsub", "getitem", "setitem",
              *(f"{p}{o}" for p in ("i", "r") for o in ("add", "sub", "mul", "truediv",
                                                      "floordiv", "mod", "pow", "matmul",
                                                      "and", "or", "xor"))}


def _takes_two_tensors(name, fn) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    params = list(params)
    count = 0
    if name.startswith("Tensor.") and params and params[0].kind != params[0].VAR_POSITIONAL:
        count, params = 1, params[1:]  # self
    for p in params:
        if p.kind == p.VAR_POSITIONAL and p.name in _SEQUENCE:
            return True
        ann = p.annotation if isinstance(p.annotation, str) else ""
        if p.name in _SEQUENCE or p.name in _TENSORISH or "Tensor" in ann:
            count += 1
    return count >= 2


def test_ctc_loss_reads_targets_anywhere(devices):
    """ctc_loss's targets and lengths on another device than log_probs: the same loss and
    gradient as on one device (they are read on the host; PyTorch takes CPU ones)."""
    a, other = devices
    lp = F.log_softmax(clgrad.tensor(_RNG.standard_normal((6, 2, 4)).astype(np.float32)), -1)
    tg, il, tl = ints(3, 2, 3) + 1, clgrad.tensor([6, 5]), clgrad.tensor([3, 2])
    results = []
    for dev in (a, other):
        x = lp.detach().requires_grad_()
        loss = F.ctc_loss(x, *(t.to(dev) for t in (tg, il, tl)), reduction="sum")
        loss.backward()
        assert loss._storage.device is a
        results.append((loss.item(), x.grad.numpy()))
    assert results[0][0] == results[1][0] and np.isfinite(results[0][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_every_multi_tensor_op_is_covered():
    """Every public op that may take two tensors has a case here, or a reason in LEGAL; a new
    op fails this test until it gets one."""
    covered = {k.split("[")[0] for k in CASES} | set(LEGAL)
    ops = _public_ops()
    missing = sorted(n for n, fn in ops.items() if _takes_two_tensors(n, fn) and
                     n not in covered)
    assert not missing, f"ops that may take tensors of two devices, without a case: {missing}"
    stale = sorted(n for n in covered if n.split(".")[0] in ("torch", "F", "linalg", "Tensor")
                   and n not in ops)
    assert not stale, f"cases of names that are not public ops: {stale}"


def test_launch_names_the_kernel_a_foreign_buffer_reaches(devices):
    """The launch layer's safety net, for an op that missed its check: OpenCL's
    INVALID_MEM_OBJECT (a buffer of another context) becomes a RuntimeError naming the kernel,
    on every launch path (launch_1d's planned launch_split, Device.launch, a capture's
    recording)."""
    if devices[0].platform.startswith("Portable Computing Language"):
        pytest.skip("PoCL runs a buffer of another context of its own device without error "
                    "(host memory either way): nothing for the net to catch")
    from clgrad.ops import _util
    a, other = devices
    foreign = clgrad.tensor([1.0, 2.0, 3.0], device=other)
    out = clgrad.zeros(3)
    with pytest.raises(RuntimeError, match=r"kernel 'copy' on .*: expected all tensors on the "
                                           r"same device, but a tensor of another device "
                                           r"reached it .*INVALID_MEM_OBJECT") as e:
        _util.launch_1d("copy.cl", "copy", {"S": "float", "D": "float"}, out, (foreign,))
    assert "LogicError" in type(e.value.__cause__).__name__
    fill = a.kernel("elementwise.cl", "fill", _util.defines_for(clgrad.float32))
    with pytest.raises(RuntimeError, match=r"kernel 'fill' on .*another device reached it"):
        _util._launch_args(a, fill, 3, foreign, (), (np.float32(7.0),))  # through launch()
    np.testing.assert_array_equal(out.numpy(), np.zeros(3, np.float32))
    np.testing.assert_array_equal(foreign.numpy(), np.array([1.0, 2.0, 3.0], np.float32))
    g = clgrad.capture.CUDAGraph()  # a capture records the launch: the same message
    with pytest.raises(RuntimeError, match=r"kernel 'copy' on .*another device reached it"):
        with clgrad.capture.graph(g):
            _util.launch_1d("copy.cl", "copy", {"S": "float", "D": "float"}, out, (foreign,))
    np.testing.assert_array_equal(out.numpy(), np.zeros(3, np.float32))
    _util.launch_1d("copy.cl", "copy", {"S": "float", "D": "float"}, out, (foreign.to(a),))
    np.testing.assert_array_equal(out.numpy(), np.array([1.0, 2.0, 3.0], np.float32))


def test_zero_dim_cpu_values_and_cpu_indices_join(cpu_devices):
    """What PyTorch allows stays allowed: a 0-dim CPU value for index_put_/masked_fill/where
    and a CPU index for index_put_ on a tensor of another device (values from NumPy)."""
    a, other = cpu_devices
    xv = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = clgrad.tensor(xv, device=other)
    idx = clgrad.tensor([2, 0])                      # on the "cpu" device
    x.index_put_((idx,), clgrad.tensor(-1.0))        # 0-dim value on the "cpu" device
    want = xv.copy()
    want[[2, 0]] = -1.0
    np.testing.assert_array_equal(x.numpy(), want)
    assert x.device.opencl is other
    m = clgrad.tensor(xv > 5, device=other)
    y = x.masked_fill(m, clgrad.tensor(9.0))
    np.testing.assert_array_equal(y.numpy(), np.where(xv > 5, 9.0, want))
    z = clgrad.where(m, x, clgrad.tensor(0.5))
    np.testing.assert_array_equal(z.numpy(), np.where(xv > 5, want, 0.5))
    assert y.device.opencl is other and z.device.opencl is other
    cm = clgrad.tensor(xv > 5)  # a CPU mask: x[mask] = number or 0-dim value (PyTorch moves it)
    x[cm] = 4.0
    want[xv > 5] = 4.0
    np.testing.assert_array_equal(x.numpy(), want)
    x[cm[:, 0]] = clgrad.tensor(-3.0)  # a mask of the first dim
    want[(xv > 5)[:, 0]] = -3.0
    np.testing.assert_array_equal(x.numpy(), want)
    np.testing.assert_array_equal(x[cm].numpy(), want[xv > 5])
    assert x.device.opencl is other and cm.device.opencl is a


def test_optimizer_step_names_both_devices(cpu_devices):
    """A gradient that reached another device than its parameter (not through ``.grad =``,
    which refuses it): the step raises before any update."""
    a, other = cpu_devices
    p = clgrad.nn.Parameter(clgrad.tensor([1.0, 2.0]))
    p._grad = clgrad.tensor([0.5, 0.5], device=other)
    launches = launch_count()
    for opt in (clgrad.optim.SGD([p], lr=0.1, momentum=0.9), clgrad.optim.Adam([p], lr=0.1)):
        with pytest.raises(RuntimeError, match=rf"{type(opt).__name__}.step: {MATCH}"):
            opt.step()
    assert launch_count() == launches and p.tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="attempting to assign a gradient on device cpu:7 "
                                           "to a tensor on device cpu"):
        p.grad = clgrad.tensor([0.5, 0.5], device=other)


def test_pack_padded_sequence_lengths_follow_pytorch(cpu_devices, monkeypatch):
    """PyTorch takes ``lengths`` on the CPU only, whatever the input's device: CPU lengths
    work for an input of another device; lengths on a GPU raise its message."""
    from clgrad.nn.utils.rnn import pack_padded_sequence
    a, other = cpu_devices
    xv = np.arange(12, dtype=np.float32).reshape(3, 2, 2)  # (T, B, *)
    x = clgrad.tensor(xv, device=other)
    packed = pack_padded_sequence(x, clgrad.tensor([3, 2]))  # lengths on "cpu"
    np.testing.assert_array_equal(packed.data.numpy(), xv[[0, 0, 1, 1, 2]][[0, 1, 2, 3, 4],
                                                                             [0, 1, 0, 1, 0]])
    assert packed.batch_sizes.tolist() == [2, 2, 1]
    gpu_lengths = clgrad.tensor([3, 2], device=other)
    monkeypatch.setattr(other, "type", "cuda")  # what a GPU device says
    with pytest.raises(RuntimeError, match="'lengths' argument should be a 1D CPU int64 "
                                           "tensor, but got 1D .* Long tensor"):
        pack_padded_sequence(x, gpu_lengths)


@pytest.mark.parametrize("norm_type", [2.0, float("inf")])
def test_clip_grad_norm_over_two_devices(devices, norm_type):
    """PyTorch's clip_grad_norm_ takes gradients on several devices (norms per device, the
    total on the first gradient's device): so does clgrad; values from NumPy and PyTorch."""
    a, other = devices
    gv = [np.array([3.0, -4.0], np.float32), np.array([[12.0], [-1.0]], np.float32)]
    p = clgrad.nn.Parameter(clgrad.zeros(2))
    q = clgrad.nn.Parameter(clgrad.zeros(2, 1, device=other))
    p.grad, q.grad = clgrad.tensor(gv[0]), clgrad.tensor(gv[1], device=other)
    total = clgrad.nn.utils.clip_grad_norm_([p, q], 5.0, norm_type)
    flat = np.concatenate([g.ravel() for g in gv]).astype(np.float64)
    want = np.abs(flat).max() if np.isinf(norm_type) else np.sqrt((flat ** 2).sum())
    assert total.device.opencl is a
    np.testing.assert_allclose(total.item(), want, rtol=1e-6)
    coef = min(1.0, 5.0 / (want + 1e-6))
    np.testing.assert_allclose(p.grad.numpy(), gv[0] * coef, rtol=1e-6)
    np.testing.assert_allclose(q.grad.numpy(), gv[1] * coef, rtol=1e-6)
    assert q.grad.device.opencl is other
    torch = pytest.importorskip("torch")
    tp = [torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(2, 1))]
    for t, g in zip(tp, gv):
        t.grad = torch.tensor(g)
    t_total = torch.nn.utils.clip_grad_norm_(tp, 5.0, norm_type)
    np.testing.assert_allclose(total.item(), t_total.item(), rtol=1e-6)
    np.testing.assert_allclose(q.grad.numpy(), tp[1].grad.numpy(), rtol=1e-6)


def test_only_a_cpu_zero_dim_tensor_joins(cpu_devices, monkeypatch):
    """With the other device a GPU (its ``type`` says so): a 0-dim CPU tensor joins a GPU
    tensor, as PyTorch (``gpu_x * cpu_two``), a 0-dim GPU tensor too (nanoGPT's
    ``losses['val'] < best_val_loss``, the second loaded with map_location='cuda'), but a 0-dim
    GPU tensor does not join CPU tensors of one dim or more nor write into a CPU tensor
    (PyTorch raises too), and is refused before any launch."""
    a, other = cpu_devices
    monkeypatch.setattr(other, "type", "cuda")
    g = clgrad.tensor([1.0, 2.0], device=other)
    two = clgrad.tensor(2.0)
    for y in (g * two, clgrad.where(g > 1, g, two), g.clamp(max=clgrad.tensor(1.5))):
        assert y.device.opencl is other
    np.testing.assert_array_equal((g * two).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(clgrad.where(g > 1, g, two).numpy(), [2.0, 2.0])
    x, g0, mask = clgrad.tensor([1.0, 2.0]), clgrad.tensor(2.0, device=other), bools(2)
    three = clgrad.tensor(3.0, requires_grad=True)
    for y, want in ((two < g0, False), (g0 <= two, True), (three * g0, 6.0), (g0 - three, -1.0),
                    (clgrad.maximum(three, g0), 3.0), (g0.clone().mul_(three), 6.0)):
        assert y.device.opencl is other and y.shape == () and y.item() == want
    (three * g0).backward()
    assert three.grad.device.opencl is a and three.grad.item() == 2.0
    # ops that compute the joined operand's gradient on the output's device (clamp, mse_loss:
    # their backward runs where the output is): the engine moves a 0-dim gradient back to its
    # input's device, as PyTorch's (validate_outputs), so .grad accumulates and SGD steps
    w = clgrad.tensor(0.75, requires_grad=True)
    clgrad.clamp(w, min=clgrad.tensor(0.25, device=other)).backward()
    clgrad.nn.functional.mse_loss(w, clgrad.tensor(0.25, device=other)).backward()
    assert w.grad.device.opencl is a and w.grad.item() == 1.0 + 2 * 0.5
    clgrad.optim.SGD([w], lr=0.5).step()
    assert w.item() == 0.75 - 0.5 * 2.0
    lo = clgrad.tensor(0.5, requires_grad=True)
    clgrad.clamp(g0.detach().requires_grad_(), min=lo).backward()
    assert lo.grad.device.opencl is a and lo.grad.item() == 0.0
    z = clgrad.tensor(0.75, requires_grad=True)
    (gz,) = clgrad.autograd.grad(clgrad.clamp(z, min=g0 * 0) ** 2, z, create_graph=True)
    gz.backward()  # d/dz (2 z): through the move, recorded
    assert gz.device.opencl is a and gz.item() == 1.5 and z.grad.item() == 2.0
    launches = launch_count()
    for call in (lambda: x * g0, lambda: clgrad.where(mask, x, g0), lambda: x.add_(g0),
                 lambda: clgrad.mul(x, g0), lambda: x.clamp(max=g0),
                 lambda: two.add_(g0), lambda: clgrad.stack([two, g0]),
                 lambda: clgrad.equal(two, g0), lambda: clgrad.equal(x, g0),
                 lambda: x.__setitem__(clgrad.tensor([True, False], device=other), 1.0)):
        with pytest.raises(RuntimeError, match=MATCH):
            call()
    assert launch_count() == launches and x.tolist() == [1.0, 2.0] and x._version == 0
    assert two.item() == 2.0 and two._version == 0


@pytest.mark.filterwarnings("ignore:.*target size")  # (PyTorch's broadcast warning, expected)
def test_a_cpu_zero_dim_target_joins_isclose_and_the_pointwise_losses(cpu_devices, monkeypatch):
    """PyTorch's isclose and kl_div are elementwise ops, which take a 0-dim CPU operand beside
    a GPU tensor of any dims; its mse, l1, smooth L1 and Huber losses broadcast input and
    target first (torch.broadcast_tensors), so there a 0-dim CPU operand joins only another
    0-dim tensor; binary_cross_entropy's CUDA kernel and BCE-with-logits' in-place update
    refuse it. Values against hand-computed numbers; the CPU operand's gradient comes back
    to the CPU."""
    a, other = cpu_devices
    monkeypatch.setattr(other, "type", "cuda")
    F = clgrad.nn.functional
    g = clgrad.tensor([1.0, 2.0, 3.0], device=other)
    two = clgrad.tensor(2.0)
    close = clgrad.isclose(g, two)
    assert close.device.opencl is other and close.tolist() == [False, True, False]
    assert not clgrad.allclose(g, two) and clgrad.allclose(g * 0 + 2, two)
    s = g.sum()  # 6
    for y, want in ((F.l1_loss(s, two), 4.0), (F.smooth_l1_loss(s, two), 3.5),
                    (F.huber_loss(s, two, delta=2.0), 6.0), (F.mse_loss(two, s), 16.0),
                    (F.kl_div(s, two), 2.0 * (math.log(2.0) - 6.0)),
                    (F.kl_div(g, two, reduction="sum"), 2.0 * (3 * math.log(2.0) - 6.0))):
        assert y.device.opencl is other and y.shape == ()
        assert abs(y.item() - want) < 1e-5 * max(1.0, abs(want)), (y.item(), want)
    t = clgrad.tensor(2.0, requires_grad=True)
    F.l1_loss(s, t).backward()  # d/dt |6 - t| = -1
    assert t.grad.device.opencl is a and t.grad.item() == -1.0
    p = clgrad.sigmoid(s)
    launches = launch_count()
    for call in (lambda: F.l1_loss(g, two), lambda: F.mse_loss(g, two),
                 lambda: F.smooth_l1_loss(two, g), lambda: F.huber_loss(g, two),
                 lambda: F.binary_cross_entropy(p, clgrad.tensor(1.0)),
                 lambda: F.binary_cross_entropy_with_logits(s, clgrad.tensor(1.0))):
        with pytest.raises(RuntimeError, match=MATCH):
            call()
    assert launch_count() == launches


def test_a_one_element_cpu_value_joins_a_gpu_index_put(cpu_devices, monkeypatch):
    """PyTorch's ``x[key] = value`` strips a value's leading size-1 dims (a CPU
    torch.tensor([5.]) is then 0-dim and joins a GPU x), and its index_put_ makes a
    one-element CPU value through a mask on x's device a masked_fill_ (ATen's
    canDispatchToMaskedFill: any dims, other key entries whole slices, the number checked to
    fit x's dtype and cast to it); otherwise a CPU value of one dim or more meets the device
    check, and a tensor of another dtype the dtype check."""
    a, other = cpu_devices
    monkeypatch.setattr(other, "type", "cuda")
    x = clgrad.tensor([1.0, 2.0, 3.0, 4.0], device=other)
    m = x > 2
    five = [1.0, 2.0, 5.0, 5.0]
    for key in (m, clgrad.tensor([False, False, True, True]), clgrad.tensor([2, 3], device=other),
                clgrad.tensor([2, 3])):
        for value in (clgrad.tensor([5.0]), clgrad.tensor([[5.0]]), clgrad.tensor(5.0)):
            y = x.clone()
            y[key] = value
            assert y.device.opencl is other and y.tolist() == five, (key, value)
    y = x.clone()
    y[0] = clgrad.tensor([[7.0]])  # a basic key: copy_ across devices
    assert y.tolist() == [7.0, 2.0, 3.0, 4.0]
    for value in (clgrad.tensor([5.0]), clgrad.tensor([[5]])):  # index_put_: masks only
        assert x.clone().index_put_((m,), value).tolist() == five
        assert clgrad.index_put(x, (m,), value).tolist() == five
    z = clgrad.zeros(2, 3, device=other)
    cols = clgrad.tensor([True, False, True], device=other)
    z[:, cols] = clgrad.tensor([9.0])
    z[..., clgrad.tensor([False, True, False], device=other)] = clgrad.tensor([[8]])
    assert z.tolist() == [[9.0, 8.0, 9.0]] * 2
    assert clgrad.zeros(2, 3, device=other).index_put_((None, cols), clgrad.tensor([9.0])
                                                       ).tolist() == [[9.0, 0.0, 9.0]] * 2
    xi = clgrad.tensor([[1, 2], [3, 4]], device=other)
    xi[xi > 1] = clgrad.tensor([7.9])  # truncated, as masked_fill_ casts its number
    assert xi.tolist() == [[1, 7], [7, 7]]
    v = clgrad.tensor([5.0], requires_grad=True)
    w = clgrad.tensor([1.0, 2.0, 3.0, 4.0], device=other, requires_grad=True)
    y = w * 1
    y[y > 2] = v
    y.sum().backward()  # two elements took v; w's gradient is zero there
    assert v.grad.device.opencl is a and v.grad.tolist() == [2.0]
    assert w.grad.tolist() == [1.0, 1.0, 0.0, 0.0]
    i8 = clgrad.tensor([1, 2, 3], dtype=clgrad.int8, device=other)
    for call, match in (
            (lambda: x.clone().index_put_((clgrad.tensor([0], device=other),),
                                          clgrad.tensor([5.0])), MATCH),
            (lambda: x.clone().index_put_((m,), clgrad.tensor([5.0]), accumulate=True), MATCH),
            (lambda: x.clone().__setitem__(m, clgrad.tensor([5.0, 6.0])), MATCH),
            (lambda: i8.__setitem__(i8 > 1, clgrad.tensor([300])), "without overflow"),
            (lambda: x.clone().__setitem__(m, clgrad.tensor(5.0, dtype=clgrad.float64,
                                                            device=other)), "dtypes match")):
        with pytest.raises(RuntimeError, match=match):
            call()
    assert i8.tolist() == [1, 2, 3] and x.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_a_gradient_on_another_device_than_its_input_raises(cpu_devices):
    """A Function whose backward returns an input's gradient of one dim or more on another
    device: PyTorch's "invalid gradient ... expected device" RuntimeError (a 0-dim one is
    moved, test_only_a_cpu_zero_dim_tensor_joins)."""
    a, other = cpu_devices

    class Elsewhere(clgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return (g * 2).to(other)
    x = clgrad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="invalid gradient - expected device cpu but got "
                                           "cpu:7"):
        Elsewhere.apply(x).sum().backward()
    assert x.grad is None


def test_parameters_to_vector_and_back_with_two_devices(devices):
    """PyTorch's _check_param_device: parameters on two devices raise TypeError (its
    message), before anything is written; a vec of another device is copied over (clgrad
    keeps parameters on their device). Values from NumPy and PyTorch."""
    from clgrad.nn.utils import parameters_to_vector, vector_to_parameters
    a, other = devices
    p = clgrad.nn.Parameter(clgrad.tensor([1.0, 2.0]))
    q = clgrad.nn.Parameter(clgrad.tensor([[3.0]], device=other))
    msg = "Found two parameters on different devices, this is currently not supported"
    with pytest.raises(TypeError, match=msg):
        parameters_to_vector([p, q])
    with pytest.raises(TypeError, match=msg):
        vector_to_parameters(clgrad.zeros(3), [p, q])
    assert p.tolist() == [1.0, 2.0] and q.tolist() == [[3.0]]
    r = clgrad.nn.Parameter(clgrad.tensor([[0.0]]))
    vector_to_parameters(clgrad.tensor([5.0, 6.0, 7.0], device=other), [p, r])
    assert p.tolist() == [5.0, 6.0] and r.tolist() == [[7.0]] and p.device.opencl is a
    np.testing.assert_array_equal(parameters_to_vector([p, r]).detach().numpy(), [5.0, 6.0, 7.0])
    torch = pytest.importorskip("torch")
    tp, tr = torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(1, 1))
    torch.nn.utils.vector_to_parameters(torch.tensor([5.0, 6.0, 7.0]), [tp, tr])
    np.testing.assert_array_equal(parameters_to_vector([p, r]).detach().numpy(),
                                  torch.nn.utils.parameters_to_vector([tp, tr]).detach().numpy())


def test_module_to_moves_gradients(devices):
    """Module.to moves (and casts) each parameter's gradient with it, as PyTorch: an
    optimizer step after model.to(device) finds them there (they were dropped)."""
    a, other = devices
    m = clgrad.nn.Linear(2, 1)
    wv = m.weight.detach().numpy().astype(np.float64)
    m(clgrad.tensor([[1.0, -2.0]])).sum().backward()
    m.to(other)
    assert m.weight.device.opencl is other and m.weight.grad.device.opencl is other
    np.testing.assert_array_equal(m.weight.grad.numpy(), [[1.0, -2.0]])
    clgrad.optim.SGD(m.parameters(), lr=0.5).step()
    np.testing.assert_allclose(m.weight.detach().numpy(), wv - 0.5 * np.array([[1.0, -2.0]]),
                               rtol=1e-6)
    m.double()
    assert m.weight.grad.dtype == clgrad.float64 and m.bias.grad.tolist() == [1.0]
    torch = pytest.importorskip("torch")
    t = torch.nn.Linear(2, 1)
    t(torch.tensor([[1.0, -2.0]])).sum().backward()
    t.double()
    assert t.weight.grad.dtype == torch.float64 and t.bias.grad.tolist() == [1.0]
