"""The op registry: one row per public op, from which the faces are generated (issue 34).

``OPS`` is the one table. A row names an op once and says where it appears:

- ``faces``: ``TORCH`` (``clgrad.<name>``, in ``clgrad.__all__``), ``FUNCTIONAL``
  (``clgrad.nn.functional.<name>`` and its ``__all__``), ``METHOD`` (``Tensor.<name>``); or'ed.
- ``aliases``: other names of the same function on each of the row's faces (``clip`` for
  ``clamp``); an alias gets its own in-place variant too (``clip_``).
- ``inplace``: ``BINARY`` or ``UNARY``: ``Tensor.<name>_`` (and ``<alias>_``) made by
  ``_tensor_methods``' in-place wrappers (``ip.inplace``; BINARY: the second argument is a
  tensor or number, ``x.add_(1)`` takes one launch; UNARY: no tensor argument after self,
  ``x.relu_()`` writes in one launch where the op allows it).
- ``inplace_faces``: the module faces that hold the in-place form too, where PyTorch's do
  (``TORCH``: ``torch.abs_(input)``; ``FUNCTIONAL``: ``F.relu_``): ``input.<name>_(...)``
  under PyTorch's parameter names (``ip.module_form``).
- ``operator``: Python's operator of the method, ``"add"`` -> ``Tensor.__add__`` (the op
  itself, without the argument check: operators take what the op takes); ``reflected``:
  ``__radd__`` (``fn(other, self)``); ``augmented``: ``__iadd__``, ``ALIAS`` (the in-place
  method itself, ``x += y`` is ``x.add_(y)``) or ``OWN`` (an in-place wrapper named after the
  operator, ``__iand__``, whose errors name it).
- ``out``: ``CAST`` or ``EXACT``: ``clgrad.<name>`` takes PyTorch's ``out=``
  (``inplace.with_out``; EXACT: out must have the result's dtype, as PyTorch checks for
  matmul-like ops, clamp, where, argmax; CAST: the result is cast into out where
  ``dtypes.can_cast`` allows).
- ``method``: Tensor's own function where it differs from ``fn`` (``x.where(cond, y)`` takes
  self as the input; ``x.true_divide`` is ``div``), also used by its in-place variant;
  ``functional``: nn.functional's own function where it differs (``loss.softmax``), or ``OWN``
  when clgrad/nn/functional.py defines it (a signature of its own: ``relu(input, inplace)``);
  ``torch``: the clgrad face's own function where PyTorch's top-level signature differs from
  nn.functional's (``torch.dropout(input, p, train)``, ``torch.embedding(weight, indices)``:
  clgrad/ops/toplevel.py).
- ``torch_names``: PyTorch's names of parameters where they differ from the argument check's
  rule (x, a -> input; b -> other): ``{"b": "mat2"}`` makes ``mm(t, arr)`` raise "argument
  'mat2' (position 2) must be Tensor", as PyTorch's (``torch_names()``, read at binding time).

``fn`` is the function that implements the op, imported normally, so a reader (or an editor's
"go to definition") goes from the row to its definition. Type promotion is not a per-op fact
here: every op takes its dtype from ``dtypes.result_type`` inside its body.

Generated from the table: ``face(TORCH)``/``face(FUNCTIONAL)`` (the module attributes
``clgrad/__init__.py`` and ``clgrad/nn/functional.py`` set), ``names(face)`` (their
``__all__``'s op part), ``outs()`` (the names taking ``out=``), ``torch_names()`` (PyTorch's
parameter names for the argument check), and Tensor's methods, in-place variants and
operators (``methods()``, ``inplace_variants()``, ``operators()``, bound by
``clgrad/_tensor_methods.py``). ``tests/test_registry.py`` runs one test per row; the API
reference reads the rows statically (``tools/griffe_registry.py``): keep each row a plain
``Op("name", module.function, FACES, ...)`` call.

Adding an op: write it (forward, backward, kernel) in ``clgrad/ops/<family>.py``, add its row
here in the family's block, its tests in ``tests/test_<family>.py`` (and a gradcheck case in
``tests/test_gradcheck_ops.py`` for a differentiable float op). Nothing else lists its name by
hand: ``python tools/gen_stubs.py`` then writes it into the faces' stubs (``clgrad/*.pyi``,
what type checkers and editors read; ``tests/test_stubs.py`` checks they are up to date).

Layer: above the op families (it imports them), below everything that binds the faces; no op
module imports it.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from clgrad import creation as cr
from clgrad.ops import activation as act
from clgrad.ops import attention
from clgrad.ops import composite as cp
from clgrad.ops import ctc_loss as ctc
from clgrad.ops import decomp as dc
from clgrad.ops.conv import fold as fo
from clgrad.ops.conv import op as conv
from clgrad.ops.conv import transpose as convt
from clgrad.ops import dropout as do
from clgrad.ops import einsum as es
from clgrad.ops import elementwise as ew
from clgrad.ops import erf
from clgrad.ops import gamma as gm
from clgrad.ops import grid_sample as gs
from clgrad.ops import index as ix
from clgrad.ops import indexing as aix
from clgrad.ops import inplace as ip
from clgrad.ops import linalg as la
from clgrad.ops import loss
from clgrad.ops import math_ops as mo
from clgrad.ops import matmul as mm
from clgrad.ops import norm
from clgrad.ops import numeric as nu
from clgrad.ops import padding
from clgrad.ops import pool
from clgrad.ops import predicates as pd
from clgrad.ops import products as pr
from clgrad.ops import random as rn
from clgrad.ops import scatters as sx
from clgrad.ops import reduce as rd
from clgrad.ops import scan as sc
from clgrad.ops import shaping as sh
from clgrad.ops import shuffle
from clgrad.ops import sort as so
from clgrad.ops import special as sp
from clgrad.ops import stats as st
from clgrad.ops import three_d as td
from clgrad.ops import toplevel as tl
from clgrad.ops import upsample
from clgrad.ops import views as vw
from clgrad.ops import windows as wn

# faces
TORCH, FUNCTIONAL, METHOD = 1, 2, 4
TM = TORCH | METHOD
# in-place kinds, augmented-operator kinds, out= kinds
BINARY, UNARY = "binary", "unary"
ALIAS, OWN = "alias", "own"
CAST, EXACT = "cast", "exact"


class Op(NamedTuple):
    """One public op: its name, the function implementing it, and where it appears (see the
    module's docstring for each field)."""
    name: str
    fn: Callable
    faces: int
    aliases: tuple = ()
    inplace: str = ""
    operator: str = ""
    reflected: bool = False
    augmented: str = ""
    out: str = ""
    method: Callable | None = None
    functional: Callable | str | None = None
    torch_names: dict | None = None
    torch: Callable | None = None
    inplace_faces: int = 0

    def names(self) -> tuple:
        """The row's name and its aliases."""
        return (self.name, *self.aliases)


OPS = (
    # -- creation (clgrad/creation.py; normal/bernoulli: ops/random.py) -----------------------
    Op("tensor", cr.tensor, TORCH),
    Op("as_tensor", cr.as_tensor, TORCH),
    Op("from_numpy", cr.from_numpy, TORCH),
    Op("empty", cr.empty, TORCH, out=CAST),
    Op("zeros", cr.zeros, TORCH, out=CAST),
    Op("ones", cr.ones, TORCH, out=CAST),
    Op("full", cr.full, TORCH, out=CAST),
    Op("arange", cr.arange, TORCH, out=CAST),
    Op("linspace", cr.linspace, TORCH, out=CAST),
    Op("logspace", cr.logspace, TORCH, out=CAST),
    Op("eye", cr.eye, TORCH, out=CAST),
    Op("rand", cr.rand, TORCH, out=CAST),
    Op("randn", cr.randn, TORCH, out=CAST),
    Op("randint", cr.randint, TORCH, out=CAST),
    Op("randperm", cr.randperm, TORCH, out=CAST),
    Op("zeros_like", cr.zeros_like, TORCH),
    Op("ones_like", cr.ones_like, TORCH),
    Op("full_like", cr.full_like, TORCH),
    Op("empty_like", cr.empty_like, TORCH),
    Op("rand_like", cr.rand_like, TORCH),
    Op("randn_like", cr.randn_like, TORCH),
    Op("tril_indices", sh.tril_indices, TORCH),
    Op("triu_indices", sh.triu_indices, TORCH),
    # -- random -------------------------------------------------------------------------------
    Op("normal", rn.normal, TORCH, out=CAST),
    Op("bernoulli", rn.bernoulli, TM, out=CAST),
    Op("bernoulli_", rn.bernoulli_, METHOD),
    Op("normal_", rn.normal_, METHOD),
    Op("uniform_", rn.uniform_, METHOD),
    Op("exponential_", rn.exponential_, METHOD),
    Op("random_", rn.random_, METHOD),
    Op("multinomial", rn.multinomial, TM, out=CAST),
    # -- elementwise: arithmetic --------------------------------------------------------------
    Op("add", ew.add, TM, inplace=BINARY, operator="add", reflected=True, augmented=ALIAS,
       out=CAST),
    Op("sub", ew.sub, TM, inplace=BINARY, operator="sub", reflected=True, augmented=ALIAS,
       out=CAST),
    Op("mul", ew.mul, TM, inplace=BINARY, operator="mul", reflected=True, augmented=ALIAS,
       out=CAST),
    Op("div", ew.div, TM, inplace=BINARY, operator="truediv", reflected=True, augmented=ALIAS,
       out=CAST),
    Op("divide", ew.divide, TM, inplace=BINARY, out=CAST),
    Op("true_divide", ew.true_divide, TM, inplace=BINARY, out=CAST, method=ew.div),
    Op("floor_divide", ew.floor_divide, TM, inplace=BINARY, operator="floordiv",
       reflected=True, augmented=OWN, out=CAST),
    Op("remainder", ew.remainder, TM, inplace=BINARY, operator="mod", reflected=True,
       augmented=OWN, out=CAST),
    Op("fmod", ew.fmod, TM, inplace=BINARY, out=CAST),
    Op("pow", ew.pow, TM, inplace=BINARY, operator="pow", reflected=True, augmented=ALIAS,
       out=CAST, torch_names={"b": "exponent"}),
    Op("maximum", ew.maximum, TM, inplace=BINARY, out=CAST),
    Op("minimum", ew.minimum, TM, inplace=BINARY, out=CAST),
    Op("atan2", ew.atan2, TM, aliases=("arctan2",), inplace=BINARY, out=CAST),
    Op("addcmul", cp.addcmul, TM, inplace=BINARY, out=CAST),
    Op("addcdiv", cp.addcdiv, TM, inplace=BINARY, out=CAST),
    Op("lerp", cp.lerp, TM, inplace=BINARY, out=CAST),
    Op("hypot", sp.hypot, TM, inplace=BINARY, out=CAST),
    Op("logaddexp", sp.logaddexp, TM, out=CAST),
    Op("logaddexp2", sp.logaddexp2, TM, out=CAST),
    Op("xlogy", sp.xlogy, TM, inplace=BINARY, out=CAST, inplace_faces=TORCH),
    Op("copysign", sp.copysign, TM, inplace=BINARY, out=CAST),
    Op("float_power", sp.float_power, TM, out=CAST),
    Op("float_power_", sp.float_power_, METHOD),
    # -- elementwise: unary -------------------------------------------------------------------
    Op("neg", ew.neg, TM, inplace=UNARY, operator="neg", out=CAST, inplace_faces=TORCH),
    Op("abs", ew.abs, TM, inplace=UNARY, operator="abs", out=CAST, inplace_faces=TORCH),
    Op("exp", ew.exp, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("log", ew.log, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("sqrt", ew.sqrt, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("rsqrt", ew.rsqrt, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("tanh", ew.tanh, TM | FUNCTIONAL, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("sigmoid", ew.sigmoid, TM | FUNCTIONAL, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("relu", ew.relu, TM | FUNCTIONAL, inplace=UNARY, functional=OWN,
       inplace_faces=TORCH | FUNCTIONAL),
    Op("sin", ew.sin, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("cos", ew.cos, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("square", ew.square, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("reciprocal", ew.reciprocal, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("sign", ew.sign, TM, inplace=UNARY, out=CAST),
    Op("floor", ew.floor, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("ceil", ew.ceil, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("round", ew.round, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("log1p", ew.log1p, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("expm1", ew.expm1, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("erf", cp.erf, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("clamp", ew.clamp, TM, aliases=("clip",), inplace=UNARY, out=EXACT, inplace_faces=TORCH),
    Op("clamp_min", sp.clamp_min, TM, inplace=UNARY, out=EXACT, inplace_faces=TORCH),
    Op("clamp_max", sp.clamp_max, TM, inplace=UNARY, out=EXACT, inplace_faces=TORCH),
    Op("erfinv", erf.erfinv, TM, inplace=UNARY, out=CAST),
    Op("erfc", erf.erfc, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("lgamma", gm.lgamma, TM, inplace=UNARY, out=CAST),
    Op("digamma", gm.digamma, TM, inplace=UNARY, out=CAST),
    Op("trunc", sp.trunc, TM, aliases=("fix",), inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("frac", sp.frac, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("deg2rad", sp.deg2rad, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("rad2deg", sp.rad2deg, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    # torch.special's functions PyTorch has at the top level too (x.polygamma(n): self first)
    Op("polygamma", gm.polygamma, TM, inplace=BINARY, out=CAST, method=gm._polygamma_method),
    Op("mvlgamma", gm.mvlgamma, TM, inplace=BINARY, out=CAST),
    Op("igamma", gm.igamma, TM, inplace=BINARY, out=CAST),
    Op("igammac", gm.igammac, TM, inplace=BINARY, out=CAST),
    Op("nan_to_num", nu.nan_to_num, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    # -- elementwise: math ops (clgrad/ops/math_ops.py), and PyTorch's other names of ops
    # above (rows of their own, to keep this block whole)
    Op("tan", mo.tan, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("asin", mo.asin, TM, aliases=("arcsin",), inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("acos", mo.acos, TM, aliases=("arccos",), inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("atan", mo.atan, TM, aliases=("arctan",), inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("sinh", mo.sinh, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("cosh", mo.cosh, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("asinh", mo.asinh, TM, aliases=("arcsinh",), inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("acosh", mo.acosh, TM, aliases=("arccosh",), inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("atanh", mo.atanh, TM, aliases=("arctanh",), inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("log2", mo.log2, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("log10", mo.log10, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("exp2", mo.exp2, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("sinc", mo.sinc, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("logit", mo.logit, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("i0", mo.i0, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("positive", mo.positive, TM),
    Op("fmax", mo.fmax, TM, out=CAST),
    Op("fmin", mo.fmin, TM, out=CAST),
    Op("heaviside", mo.heaviside, TM, inplace=BINARY, out=CAST),
    Op("ldexp", mo.ldexp, TM, inplace=BINARY, out=CAST, inplace_faces=TORCH),
    Op("gcd", mo.gcd, TM, inplace=BINARY, out=CAST, inplace_faces=TORCH),
    Op("lcm", mo.lcm, TM, inplace=BINARY, out=CAST, inplace_faces=TORCH),
    Op("nextafter", mo.nextafter, TM, inplace=BINARY, out=CAST),
    Op("sgn", ew.sign, TM, inplace=UNARY, out=CAST),
    Op("negative", ew.neg, TM, inplace=UNARY, out=CAST, inplace_faces=TORCH),
    Op("absolute", ew.abs, TM, inplace=UNARY, out=CAST),
    Op("multiply", ew.mul, TM, inplace=BINARY, out=CAST),
    Op("subtract", ew.sub, TM, inplace=BINARY, out=CAST),
    Op("greater", ew.gt, TM, out=CAST),
    Op("greater_equal", ew.ge, TM, out=CAST),
    Op("less", ew.lt, TM, out=CAST),
    Op("less_equal", ew.le, TM, out=CAST),
    Op("not_equal", ew.ne, TM, out=CAST),
    # -- elementwise: comparisons, logic, bits ------------------------------------------------
    Op("eq", ew.eq, TM, inplace=BINARY, operator="eq", out=CAST),
    Op("ne", ew.ne, TM, inplace=BINARY, operator="ne", out=CAST),
    Op("lt", ew.lt, TM, inplace=BINARY, operator="lt", out=CAST),
    Op("le", ew.le, TM, inplace=BINARY, operator="le", out=CAST),
    Op("gt", ew.gt, TM, inplace=BINARY, operator="gt", out=CAST),
    Op("ge", ew.ge, TM, inplace=BINARY, operator="ge", out=CAST),
    Op("logical_not", ew.logical_not, TM, inplace=UNARY, out=CAST),
    Op("logical_and", ew.logical_and, TM, inplace=BINARY, out=CAST),
    Op("logical_or", ew.logical_or, TM, inplace=BINARY, out=CAST),
    Op("logical_xor", cp.logical_xor, TM, inplace=BINARY, out=CAST),
    Op("bitwise_and", ew.bitwise_and, TM, inplace=BINARY, operator="and", reflected=True,
       augmented=OWN, out=CAST),
    Op("bitwise_or", ew.bitwise_or, TM, inplace=BINARY, operator="or", reflected=True,
       augmented=OWN, out=CAST),
    Op("bitwise_xor", ew.bitwise_xor, TM, inplace=BINARY, operator="xor", reflected=True,
       augmented=OWN, out=CAST),
    Op("bitwise_not", ew.bitwise_not, TM, inplace=UNARY, operator="invert", out=CAST),
    Op("bitwise_left_shift", ew.bitwise_left_shift, TM, inplace=BINARY, operator="lshift",
       reflected=True, augmented=OWN, out=CAST),
    Op("bitwise_right_shift", ew.bitwise_right_shift, TM, inplace=BINARY, operator="rshift",
       reflected=True, augmented=OWN, out=CAST),
    Op("signbit", pd.signbit, TM, out=CAST),
    Op("is_floating_point", pd.is_floating_point, TORCH),
    Op("is_nonzero", pd.is_nonzero, TM),
    Op("isnan", nu.isnan, TM),
    Op("isinf", nu.isinf, TM),
    Op("isfinite", nu.isfinite, TM),
    Op("isclose", nu.isclose, TM),
    Op("allclose", nu.allclose, TM),
    Op("equal", nu.equal, TM),
    # -- elementwise: copies and fills --------------------------------------------------------
    Op("clone", ew.clone, TM),
    Op("contiguous", ew.contiguous, METHOD),
    Op("copy_", ip.copy_, METHOD),
    Op("fill_", ip.fill_, TM, torch_names={"self": "input"}),
    Op("zero_", ip.zero_, TM),
    Op("masked_fill", ew.masked_fill, TM),
    # -- reduce -------------------------------------------------------------------------------
    Op("sum", rd.sum, TM, out=CAST),
    Op("mean", rd.mean, TM, out=CAST),
    Op("prod", rd.prod, TM, out=CAST),
    Op("max", rd.max, TM, out=CAST),
    Op("min", rd.min, TM, out=CAST),
    Op("amax", rd.amax, TM, out=CAST),
    Op("amin", rd.amin, TM, out=CAST),
    Op("argmax", rd.argmax, TM, out=EXACT),
    Op("argmin", rd.argmin, TM, out=EXACT),
    Op("var", rd.var, TM, out=CAST),
    Op("std", rd.std, TM, out=CAST),
    Op("var_mean", cp.var_mean, TORCH),
    Op("std_mean", cp.std_mean, TORCH),
    Op("logsumexp", rd.logsumexp, TM, out=CAST),
    Op("norm", cp.norm, TM, out=CAST),
    Op("normalize", rd.normalize, FUNCTIONAL),
    Op("count_nonzero", rd.count_nonzero, TM),
    Op("any", rd.any, TM, out=CAST),
    Op("all", rd.all, TM, out=CAST),
    Op("nansum", rd.nansum, TM),
    Op("nanmean", rd.nanmean, TM, out=CAST),
    Op("softmax", cp.softmax, TM | FUNCTIONAL, functional=loss.softmax),
    Op("log_softmax", cp.log_softmax, TM | FUNCTIONAL, functional=loss.log_softmax),
    # -- scan, sort ---------------------------------------------------------------------------
    Op("cumsum", sc.cumsum, TM, out=CAST),
    Op("cumprod", sc.cumprod, TM, out=CAST),
    Op("cummax", sc.cummax, TM, out=CAST),
    Op("cummin", sc.cummin, TM, out=CAST),
    Op("diff", sc.diff, TM, out=CAST),
    Op("sort", so.sort, TM, out=CAST),
    Op("msort", so.sort, METHOD, method=lambda self: so.sort(self, 0).values),
    Op("argsort", so.argsort, TM),
    Op("topk", so.topk, TM, out=CAST),
    Op("unique", so.unique, TM),
    Op("searchsorted", so.searchsorted, TORCH, out=EXACT),
    Op("bucketize", so.bucketize, TORCH, out=EXACT),
    Op("isin", so.isin, TORCH, out=EXACT),
    Op("kthvalue", so.kthvalue, TM, out=CAST),
    Op("median", so.median, TM),
    # -- matmul, linalg -----------------------------------------------------------------------
    Op("matmul", mm.matmul, TM, operator="matmul", reflected=True, out=EXACT),
    Op("mm", mm.mm, TM, out=EXACT, torch_names={"b": "mat2"}),
    Op("bmm", mm.bmm, TM, out=EXACT, torch_names={"b": "mat2"}),
    Op("dot", mm.dot, TM, out=EXACT, torch_names={"b": "tensor"}),
    Op("einsum", es.einsum, TORCH),
    Op("addmm", cp.addmm, TM, inplace=BINARY, out=EXACT),
    Op("baddbmm", cp.baddbmm, TM, inplace=BINARY, out=EXACT),
    Op("addmv", cp.addmv, TM, out=EXACT),
    Op("mv", cp.mv, TM, out=EXACT),
    Op("outer", cp.outer, TM, aliases=("ger",), out=EXACT),
    Op("linear", mm.linear, FUNCTIONAL),
    Op("bilinear", cp.bilinear, TORCH | FUNCTIONAL),
    Op("trace", pr.trace, TM),
    Op("kron", pr.kron, TM, out=CAST),
    Op("tensordot", pr.tensordot, TORCH, out=EXACT, torch_names={"a": "a", "b": "b"}),
    Op("cdist", pr.cdist, TORCH),
    Op("dist", pr.dist, TM),
    Op("renorm", pr.renorm, TM),
    Op("addr", pr.addr, TM, out=EXACT),
    Op("addr_", pr.addr_, METHOD),
    Op("addbmm", pr.addbmm, TM, out=EXACT),
    Op("addbmm_", pr.addbmm_, METHOD),
    Op("addmv_", pr.addmv_, TM),
    Op("renorm_", pr.renorm_, METHOD),
    Op("chain_matmul", pr.chain_matmul, TORCH),
    Op("matrix_power", pr.matrix_power, TM, out=EXACT),
    Op("matrix_exp", la.matrix_exp, TM, torch_names={"A": "input"}),
    Op("orgqr", la.householder_product, TM, torch_names={"A": "input"}),
    Op("inverse", dc.inv, TM, torch_names={"A": "input"}),
    Op("det", dc.det, TM, torch_names={"A": "input"}),
    Op("slogdet", dc.slogdet, TM, torch_names={"A": "input"}),
    Op("logdet", dc.logdet, TM, torch_names={"A": "input"}),
    Op("cholesky_solve", dc.cholesky_solve, TM),
    Op("cholesky_inverse", dc.cholesky_inverse, TM, torch_names={"L": "input"}),
    Op("svd", dc.svd_legacy, TM),
    Op("pinverse", dc.pinverse, TM),
    # -- views --------------------------------------------------------------------------------
    Op("narrow", vw.narrow, TM),
    Op("select", vw.select, TM),
    Op("view", vw.view, METHOD),
    Op("view_as", vw.view, METHOD, method=lambda self, other: vw.view(self, other.shape)),
    Op("reshape", vw.reshape, TM),
    Op("reshape_as", vw.reshape, METHOD,
       method=lambda self, other: vw.reshape(self, other.shape)),
    Op("permute", vw.permute, TM),
    Op("transpose", vw.transpose, TM),
    Op("swapaxes", sh.swapaxes, TM),
    Op("swapdims", sh.swapdims, TM),
    Op("broadcast_to", sh.broadcast_to, TM),
    Op("t", vw.t, TM),
    Op("expand", vw.expand, METHOD),
    Op("expand_as", vw.expand, METHOD,
       method=lambda self, other: vw.expand(self, other.shape)),
    Op("unsqueeze", vw.unsqueeze, TM),
    Op("squeeze", vw.squeeze, TM),
    Op("flatten", vw.flatten, TM | FUNCTIONAL),
    Op("unflatten", vw.unflatten, TM),
    Op("split", vw.split, TM, torch_names={"x": "tensor"}),
    Op("chunk", vw.chunk, TM),
    Op("unbind", vw.unbind, TM),
    Op("unfold", vw.unfold, METHOD | FUNCTIONAL, functional=fo.unfold),
    Op("as_strided", vw.as_strided, TM),
    Op("diagonal", vw.diagonal, TM),
    Op("movedim", vw.movedim, TM, aliases=("moveaxis",)),
    Op("flip", vw.flip, TM, method=vw._flip_method),
    Op("fliplr", sh.fliplr, TM),
    Op("flipud", sh.flipud, TM),
    Op("rot90", sh.rot90, TM),
    Op("atleast_1d", sh.atleast_1d, TORCH),
    Op("atleast_2d", sh.atleast_2d, TORCH),
    Op("atleast_3d", sh.atleast_3d, TORCH),
    Op("tensor_split", sh.tensor_split, TM),
    Op("hsplit", sh.hsplit, TM),
    Op("vsplit", sh.vsplit, TM),
    Op("dsplit", sh.dsplit, TM),
    Op("diag_embed", sh.diag_embed, TM),
    Op("repeat", vw.repeat, METHOD),
    Op("tile", cp.tile, TM, method=cp._tile_method),
    Op("repeat_interleave", cp.repeat_interleave, TM),
    Op("broadcast_tensors", cp.broadcast_tensors, TORCH),
    Op("meshgrid", cp.meshgrid, TORCH),
    # -- index --------------------------------------------------------------------------------
    Op("cat", ix.cat, TORCH, aliases=("concat", "concatenate"), out=CAST),
    Op("stack", ix.stack, TORCH, out=CAST),
    Op("hstack", sh.hstack, TORCH, out=CAST),
    Op("vstack", sh.vstack, TORCH, out=CAST),
    Op("row_stack", sh.row_stack, TORCH, out=CAST),
    Op("dstack", sh.dstack, TORCH, out=CAST),
    Op("column_stack", sh.column_stack, TORCH, out=CAST),
    Op("block_diag", sh.block_diag, TORCH),
    Op("cartesian_prod", sh.cartesian_prod, TORCH),
    Op("combinations", sh.combinations, TORCH),
    Op("index_select", ix.index_select, TM, out=CAST),
    Op("gather", ix.gather, TM, out=CAST),
    Op("scatter_add", ix.scatter_add, TM),
    Op("scatter", ix.scatter, TM),
    Op("roll", ix.roll, TM),
    Op("tril", ix.tril, TM, inplace=UNARY, out=CAST),
    Op("triu", ix.triu, TM, inplace=UNARY, out=CAST),
    Op("nonzero", ix.nonzero, TM, out=EXACT),
    Op("argwhere", ix.argwhere, TM),
    Op("index_add", ix.index_add, TM),
    Op("index_fill", sh.index_fill, TM),
    Op("index_fill_", sh.index_fill_, METHOD),
    Op("take", sh.take, TM, out=CAST),
    Op("take_along_dim", sh.take_along_dim, TM, out=CAST),
    Op("where", ix.where, TM, out=EXACT, method=lambda self, condition, other: ew.where(
        condition, self, other)),
    Op("masked_select", cp.masked_select, TM, out=CAST),
    Op("index_put", aix.index_put, TM),
    Op("index_put_", aix.index_put_, TM),
    Op("getitem", aix.getitem, 0, operator="getitem"),
    Op("setitem", aix.setitem, 0, operator="setitem"),
    Op("embedding", sx.embedding, TORCH | FUNCTIONAL, torch=tl.embedding),
    Op("embedding_renorm_", sx.embedding_renorm_, TORCH),
    Op("one_hot", ix.one_hot, FUNCTIONAL),
    # -- conv ---------------------------------------------------------------------------------
    Op("conv1d", convt.conv1d, TORCH | FUNCTIONAL),
    Op("conv2d", conv.conv2d, TORCH | FUNCTIONAL, functional=OWN),
    Op("conv_transpose1d", convt.conv_transpose1d, TORCH | FUNCTIONAL),
    Op("conv_transpose2d", convt.conv_transpose2d, TORCH | FUNCTIONAL),
    Op("fold", fo.fold, FUNCTIONAL),
    # -- pool and resampling ------------------------------------------------------------------
    Op("max_pool1d", pool.max_pool1d, TORCH | FUNCTIONAL, torch=tl.max_pool1d),
    Op("max_pool2d", pool.max_pool2d, TORCH | FUNCTIONAL, torch=tl.max_pool2d),
    Op("avg_pool1d", pool.avg_pool1d, TORCH | FUNCTIONAL),
    Op("avg_pool2d", pool.avg_pool2d, FUNCTIONAL),
    Op("adaptive_avg_pool1d", pool.adaptive_avg_pool1d, TORCH | FUNCTIONAL),
    Op("adaptive_avg_pool2d", pool.adaptive_avg_pool2d, FUNCTIONAL),
    Op("adaptive_max_pool1d", pool.adaptive_max_pool1d, TORCH | FUNCTIONAL,
       torch=tl.adaptive_max_pool1d),
    Op("adaptive_max_pool2d", pool.adaptive_max_pool2d, FUNCTIONAL),
    Op("max_pool1d_with_indices", pool.max_pool1d_with_indices, TORCH | FUNCTIONAL,
       torch=tl.max_pool1d_with_indices),
    Op("max_pool2d_with_indices", pool.max_pool2d_with_indices, FUNCTIONAL),
    Op("adaptive_max_pool1d_with_indices", pool.adaptive_max_pool1d_with_indices, FUNCTIONAL),
    Op("adaptive_max_pool2d_with_indices", pool.adaptive_max_pool2d_with_indices, FUNCTIONAL),
    Op("max_unpool1d", pool.max_unpool1d, FUNCTIONAL),
    Op("max_unpool2d", pool.max_unpool2d, FUNCTIONAL),
    Op("interpolate", upsample.interpolate, FUNCTIONAL, aliases=("upsample",)),
    Op("upsample_nearest", upsample.upsample_nearest, FUNCTIONAL),
    Op("upsample_bilinear", upsample.upsample_bilinear, FUNCTIONAL),
    # -- the 3-D family (clgrad/ops/three_d.py: compositions of the 2-D ops) ----------------
    Op("conv3d", td.conv3d, TORCH | FUNCTIONAL),
    Op("conv_transpose3d", td.conv_transpose3d, TORCH | FUNCTIONAL),
    Op("max_pool3d", td.max_pool3d, TORCH | FUNCTIONAL, torch=td.torch_max_pool3d),
    Op("max_pool3d_with_indices", td.max_pool3d_with_indices, FUNCTIONAL),
    Op("avg_pool3d", td.avg_pool3d, FUNCTIONAL),
    Op("adaptive_avg_pool3d", td.adaptive_avg_pool3d, FUNCTIONAL),
    Op("adaptive_max_pool3d", td.adaptive_max_pool3d, FUNCTIONAL),
    Op("adaptive_max_pool3d_with_indices", td.adaptive_max_pool3d_with_indices, FUNCTIONAL),
    Op("dropout3d", td.dropout3d, FUNCTIONAL),
    Op("grid_sample", gs.grid_sample, FUNCTIONAL),
    Op("affine_grid", gs.affine_grid, FUNCTIONAL),
    # -- norm ---------------------------------------------------------------------------------
    Op("batch_norm", norm.batch_norm, TORCH | FUNCTIONAL, torch=tl.batch_norm),
    Op("layer_norm", norm.layer_norm, TORCH | FUNCTIONAL, torch=tl.layer_norm),
    Op("rms_norm", norm.rms_norm, TORCH | FUNCTIONAL),
    Op("group_norm", norm.group_norm, TORCH | FUNCTIONAL, torch=tl.group_norm),
    Op("instance_norm", norm.instance_norm, TORCH | FUNCTIONAL, torch=tl.instance_norm),
    Op("local_response_norm", norm.local_response_norm, FUNCTIONAL),
    # -- activation ---------------------------------------------------------------------------
    Op("relu6", act.relu6, FUNCTIONAL),
    Op("leaky_relu", act.leaky_relu, FUNCTIONAL),
    Op("hardtanh", act.hardtanh, FUNCTIONAL),
    Op("gelu", act.gelu, FUNCTIONAL),
    Op("silu", act.silu, FUNCTIONAL),
    Op("elu", act.elu, FUNCTIONAL),
    Op("elu_", act.elu_, FUNCTIONAL),
    Op("leaky_relu_", act.leaky_relu_, FUNCTIONAL),
    Op("hardtanh_", act.hardtanh_, FUNCTIONAL),
    Op("hardswish", act.hardswish, FUNCTIONAL),
    Op("hardsigmoid", act.hardsigmoid, FUNCTIONAL),
    Op("softplus", act.softplus, FUNCTIONAL),
    Op("mish", act.mish, FUNCTIONAL),
    Op("prelu", act.prelu, TORCH | FUNCTIONAL),
    Op("logsigmoid", act.logsigmoid, FUNCTIONAL),
    Op("selu", act.selu, TORCH | FUNCTIONAL),
    Op("selu_", act.selu_, TORCH | FUNCTIONAL),
    Op("celu", act.celu, TORCH | FUNCTIONAL),
    Op("celu_", act.celu_, TORCH | FUNCTIONAL),
    Op("softsign", act.softsign, FUNCTIONAL),
    Op("tanhshrink", act.tanhshrink, FUNCTIONAL),
    Op("softshrink", act.softshrink, FUNCTIONAL),
    Op("hardshrink", act.hardshrink, TM | FUNCTIONAL),
    Op("threshold", act.threshold, TORCH | FUNCTIONAL),
    Op("threshold_", act.threshold_, TORCH | FUNCTIONAL),
    Op("rrelu", act.rrelu, TORCH | FUNCTIONAL),
    Op("rrelu_", act.rrelu_, TORCH | FUNCTIONAL),
    Op("glu", act.glu, FUNCTIONAL),
    Op("softmin", act.softmin, FUNCTIONAL),
    Op("gumbel_softmax", act.gumbel_softmax, FUNCTIONAL),
    # -- attention, dropout, padding, shuffles ------------------------------------------------
    Op("scaled_dot_product_attention", attention.scaled_dot_product_attention, FUNCTIONAL),
    Op("dropout", do.dropout, TORCH | FUNCTIONAL, torch=tl.dropout),
    Op("dropout1d", do.dropout1d, FUNCTIONAL),
    Op("dropout2d", do.dropout2d, FUNCTIONAL),
    Op("pad", padding.pad, FUNCTIONAL),
    Op("pixel_shuffle", shuffle.pixel_shuffle, TORCH | FUNCTIONAL),
    Op("pixel_unshuffle", shuffle.pixel_unshuffle, TORCH | FUNCTIONAL),
    Op("channel_shuffle", shuffle.channel_shuffle, TORCH | FUNCTIONAL,
       aliases=("native_channel_shuffle",)),
    # -- loss ---------------------------------------------------------------------------------
    Op("cross_entropy", loss.cross_entropy, FUNCTIONAL),
    Op("nll_loss", loss.nll_loss, FUNCTIONAL),
    Op("mse_loss", loss.mse_loss, FUNCTIONAL),
    Op("l1_loss", loss.l1_loss, FUNCTIONAL),
    Op("smooth_l1_loss", loss.smooth_l1_loss, FUNCTIONAL),
    Op("huber_loss", loss.huber_loss, FUNCTIONAL),
    Op("binary_cross_entropy", loss.binary_cross_entropy, FUNCTIONAL),
    Op("binary_cross_entropy_with_logits", loss.binary_cross_entropy_with_logits,
       TORCH | FUNCTIONAL, torch=tl.binary_cross_entropy_with_logits),
    Op("kl_div", loss.kl_div, TORCH | FUNCTIONAL, torch=tl.kl_div),
    Op("margin_ranking_loss", loss.margin_ranking_loss, TORCH | FUNCTIONAL),
    Op("hinge_embedding_loss", loss.hinge_embedding_loss, TORCH | FUNCTIONAL),
    Op("soft_margin_loss", loss.soft_margin_loss, FUNCTIONAL),
    Op("multilabel_soft_margin_loss", loss.multilabel_soft_margin_loss, FUNCTIONAL),
    Op("cosine_embedding_loss", loss.cosine_embedding_loss, TORCH | FUNCTIONAL),
    Op("triplet_margin_loss", loss.triplet_margin_loss, TORCH | FUNCTIONAL),
    Op("poisson_nll_loss", loss.poisson_nll_loss, TORCH | FUNCTIONAL),
    Op("gaussian_nll_loss", loss.gaussian_nll_loss, FUNCTIONAL),
    Op("multi_margin_loss", loss.multi_margin_loss, FUNCTIONAL),
    Op("ctc_loss", ctc.ctc_loss, FUNCTIONAL),
    # -- distance (clgrad/ops/loss.py) --------------------------------------------------------
    Op("cosine_similarity", loss.cosine_similarity, TORCH | FUNCTIONAL),
    Op("pairwise_distance", loss.pairwise_distance, TORCH | FUNCTIONAL),
    # -- names real programs use (misc-api): statistics, scatters, products, shapes, ----------
    # predicates, factories and windows (tests/test_misc_api.py)
    Op("quantile", st.quantile, TM),
    Op("nanquantile", st.nanquantile, TM),
    Op("nanmedian", st.nanmedian, TM),
    Op("mode", st.mode, TM),
    Op("aminmax", st.aminmax, TM),
    Op("bincount", st.bincount, TM),
    Op("histc", st.histc, TM),
    Op("cov", st.cov, TM),
    Op("corrcoef", st.corrcoef, TM),
    Op("trapezoid", st.trapezoid, TORCH, aliases=("trapz",)),
    Op("cumulative_trapezoid", st.cumulative_trapezoid, TORCH),
    Op("logcumsumexp", sc.logcumsumexp, TM),
    Op("unique_consecutive", so.unique_consecutive, TM),
    Op("scatter_reduce", sx.scatter_reduce, TM),
    Op("index_copy", sx.index_copy, TM),
    Op("masked_scatter", sx.masked_scatter, TM),
    Op("diagonal_scatter", sx.diagonal_scatter, TM),
    Op("select_scatter", sx.select_scatter, TM),
    Op("slice_scatter", sx.slice_scatter, TM),
    Op("put", sx.put, TM),
    Op("put_", sx.put_, METHOD),
    Op("cross", pr.cross, TM),
    Op("inner", pr.inner, TM),
    Op("vdot", pr.vdot, TM),
    Op("vander", pr.vander, TORCH, torch_names={"x": "x"}),
    Op("diag", sh.diag, TM),
    Op("diagflat", sh.diagflat, TM),
    Op("split_with_sizes", sh.split_with_sizes, TM),
    Op("sum_to_size", sh.sum_to_size, METHOD),
    Op("ravel", sh.ravel, TM),
    Op("broadcast_shapes", sh.broadcast_shapes, TORCH),
    Op("fill", sh.fill, TORCH),
    Op("frexp", sp.frexp, TM),
    Op("is_complex", pd.is_complex, TM),
    Op("is_signed", pd.is_signed, TM),
    Op("is_same_size", pd.is_same_size, TM),
    Op("is_inference", pd.is_inference, TM),
    Op("range", cr.range, TORCH),
    Op("scalar_tensor", cr.scalar_tensor, TORCH),
    Op("empty_strided", cr.empty_strided, TORCH),
    Op("randint_like", cr.randint_like, TORCH),
    Op("asarray", cr.asarray, TORCH),
    Op("hann_window", wn.hann_window, TORCH),
    Op("hamming_window", wn.hamming_window, TORCH),
    Op("blackman_window", wn.blackman_window, TORCH),
    Op("bartlett_window", wn.bartlett_window, TORCH),
    Op("kaiser_window", wn.kaiser_window, TORCH),
    # -- nn gaps 2 (tests/test_nn_gaps2.py): alpha dropout, LP pools, pdist, losses, bags ----
    Op("alpha_dropout", do.alpha_dropout, TORCH | FUNCTIONAL, torch=tl.alpha_dropout),
    Op("alpha_dropout_", tl.alpha_dropout_, TORCH),
    Op("feature_alpha_dropout", do.feature_alpha_dropout, TORCH | FUNCTIONAL,
       torch=tl.feature_alpha_dropout),
    Op("feature_alpha_dropout_", tl.feature_alpha_dropout_, TORCH),
    Op("lp_pool1d", pool.lp_pool1d, FUNCTIONAL),
    Op("lp_pool2d", pool.lp_pool2d, FUNCTIONAL),
    Op("pdist", pr.pdist, TORCH | FUNCTIONAL),
    Op("multilabel_margin_loss", loss.multilabel_margin_loss, FUNCTIONAL),
    Op("triplet_margin_with_distance_loss", loss.triplet_margin_with_distance_loss, FUNCTIONAL),
    Op("embedding_bag", sx.embedding_bag, TORCH | FUNCTIONAL, torch=tl.embedding_bag),
    # -- torch's own top-level ops over nn.functional's (ATen signatures: ops/toplevel.py) ---
    Op("convolution", tl.convolution, TORCH),
    Op("dropout_", tl.dropout_, TORCH),
    Op("feature_dropout", do.feature_dropout, TORCH),
    Op("feature_dropout_", do.feature_dropout_, TORCH),
    Op("constant_pad_nd", tl.constant_pad_nd, TORCH),
    Op("rsub", tl.rsub, TORCH),
    Op("detach_", tl.detach_, TORCH),
)


def _face_fn(row: Op, face: int):
    if face == METHOD:
        return row.method or row.fn
    if face == FUNCTIONAL and row.functional is not None:
        return row.functional
    if face == TORCH and row.torch is not None:
        return row.torch
    return row.fn


_FACE_MODULES = {TORCH: "clgrad", FUNCTIONAL: "clgrad.nn.functional"}


def face(which: int) -> dict:
    """``{name: function}`` of a module face (``TORCH`` or ``FUNCTIONAL``), aliases included;
    the names a face defines itself (``functional=OWN``) are left out (the face keeps its
    own)."""
    ops = {n: _face_fn(row, which) for row in OPS if row.faces & which
           and not (which == FUNCTIONAL and row.functional == OWN) for n in row.names()}
    return {**ops, **{n: ip.module_form(n, row.inplace == BINARY, _FACE_MODULES[which])
                      for row in OPS if row.inplace_faces & which for n in _inplace_names(row)}}


def names(which: int) -> list:
    """The op names of a face, aliases included, in the table's order (``__all__``'s op
    part), then its in-place forms (``inplace_faces``: ``abs_``)."""
    return [n for row in OPS if row.faces & which for n in row.names()] + \
        [n for row in OPS if row.inplace_faces & which for n in _inplace_names(row)]


def _inplace_names(row: Op) -> list:
    return [n + "_" for n in row.names()]


def outs() -> dict:
    """``{name: exact}`` of the clgrad face's ops that take ``out=`` (aliases included), in the
    table's order; ``exact``: out must have the result's dtype."""
    return {n: row.out == EXACT for row in OPS if row.out for n in row.names()}


def methods() -> dict:
    """``{name: function}`` of Tensor's methods from the table (aliases included)."""
    return {n: _face_fn(row, METHOD) for row in OPS if row.faces & METHOD for n in row.names()}


def inplace_variants() -> list:
    """``[(name, function, kind)]``: Tensor's generic in-place variants (``add_`` from add,
    ``clip_`` from clamp's alias), kind BINARY or UNARY, over Tensor's function of the row."""
    return [(n + "_", _face_fn(row, METHOD), row.inplace) for row in OPS if row.inplace
            for n in row.names()]


def torch_names() -> dict:
    """``{(op, parameter): PyTorch's name}`` of the rows' ``torch_names`` (the argument
    check's exceptions to its naming rule; ``op``: the implementing function's name)."""
    return {(row.fn.__name__, p): n for row in OPS if row.torch_names
            for p, n in row.torch_names.items()}


def operators() -> list:
    """``[(dunder, function, kind)]`` of Tensor's operators: kind "op" (``__add__``: the
    function), "reflected" (``__radd__``: the function with swapped operands), ALIAS
    (``__iadd__``: the in-place method of the row, named here) or OWN (``__iand__``: an
    in-place wrapper under the operator's name)."""
    out = []
    for row in OPS:
        if not row.operator:
            continue
        out.append((f"__{row.operator}__", row.fn, "op"))
        if row.reflected:
            out.append((f"__r{row.operator}__", row.fn, "reflected"))
        if row.augmented == ALIAS:
            out.append((f"__i{row.operator}__", row.name + "_", ALIAS))
        elif row.augmented == OWN:
            out.append((f"__i{row.operator}__", row.fn, OWN))
    return out
