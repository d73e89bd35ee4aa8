"""einsum: Einstein summation built from views, sums, broadcast products and batched matmul.

No kernel of its own: each operand's repeated labels become a ``diagonal`` view, labels seen
in one operand only (and not in the output) are summed first, and the operands are folded
left to right. One fold of A and B splits the labels into batch (in both, still needed),
contracted (in both, needed no more), left (A only) and right (B only); A is permuted to
(batch, left, contracted) and B to (batch, contracted, right), the groups are flattened, and
one batched ``matmul`` gives (batch, left, right) — a broadcast ``mul`` when nothing is
contracted. The result is summed over what the output lacks and permuted to its order.
Gradients flow through those ops. bfloat16 operands: the whole sum in float32 on float32
copies, rounded once.
"""
from __future__ import annotations

from clgrad import dtypes, layout
from clgrad.ops import elementwise as ew
from clgrad.ops import matmul as mm
from clgrad.ops import reduce as rd
from clgrad.tensor import Tensor

__all__ = ["einsum"]

_BF16 = dtypes.bfloat16
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def einsum(equation, *operands) -> Tensor:
    """Einstein summation over the operands' labelled dims (PyTorch's ``torch.einsum``).

    ``equation``: comma-separated subscripts of letters a-z/A-Z, each optionally holding one
    ``...`` (broadcast dims, right-aligned across operands), then optionally ``->`` and the
    output's subscripts. Without ``->`` the output is ``...`` followed by the letters seen
    exactly once, in alphabetical order. A letter repeated within one operand takes its
    diagonal ('ii->i'); a letter absent from the output is summed. Operands may also be
    passed as one list, or in the sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])``.
    Shapes: a label's sizes must agree across operands, or be 1 (broadcast).
    Grad: through diagonal/permute/reshape/sum/mul/matmul.
    Raises: ValueError for a malformed equation (bad character, a second '...', an output
    label repeated or not in any input, an operand count or rank that does not match);
    RuntimeError for sizes that do not broadcast or a diagonal of unequal dims.
    """
    if isinstance(equation, Tensor):
        equation, operands = _from_sublists((equation,) + operands)
    elif len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum: expected an equation string, got {type(equation).__name__}")
    for t in operands:
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum: expected Tensor operands, got {type(t).__name__}")
    if operands and all(t.dtype is _BF16 for t in operands):  # in float32, rounded once
        return ew.via_float32(einsum, equation, *operands)
    terms, out_labels = _parse(equation, operands)
    sizes = _label_sizes(terms, operands)
    ops = [_prepare(t, labels, i) for i, (t, labels) in enumerate(zip(operands, terms))]
    for i, (t, labels) in enumerate(ops):  # sum labels no other operand nor the output has
        others = set(out_labels).union(*(set(lb) for j, (_, lb) in enumerate(ops) if j != i))
        ops[i] = _sum_out(t, labels, others)
    t, labels = ops[0]
    for k in range(1, len(ops)):
        needed = set(out_labels).union(*(set(lb) for _, lb in ops[k + 1:]))
        t, labels = _fold(t, labels, ops[k][0], ops[k][1], needed, sizes)
    t, labels = _sum_out(t, labels, set(out_labels))
    t = t.permute(*[labels.index(lb) for lb in out_labels]) if labels else t
    want = tuple(sizes[lb] for lb in out_labels)
    return t if tuple(t.shape) == want else ew.contiguous(t.expand(want))


def _parse(equation: str, operands):
    """(list of label lists per operand, output labels); '...' becomes labels '.0', '.1'..."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    if "->" in rhs:
        raise ValueError(f"einsum: expected at most one '->', got {equation!r}")
    subs = lhs.split(",")
    if len(subs) != len(operands):
        raise ValueError(f"einsum: the equation {equation!r} has {len(subs)} operand "
                         f"subscripts, got {len(operands)} operands")
    n_ell = 0
    parsed = []
    for i, (s, t) in enumerate(zip(subs, operands)):
        letters, has_ell = _letters(s, equation)
        if has_ell:
            e = t.ndim - (len(letters) - 1)
            if e < 0:
                raise ValueError(f"einsum: operand {i} has {t.ndim} dims, fewer than the "
                                 f"{len(letters) - 1} labels of {s!r}")
            n_ell = max(n_ell, e)
        elif len(letters) != t.ndim:
            raise ValueError(f"einsum: operand {i} has {t.ndim} dims but the subscript {s!r} "
                             f"labels {len(letters)}")
        parsed.append((letters, t.ndim))
    ell = [f".{k}" for k in range(n_ell)]
    terms = []
    for letters, ndim in parsed:
        if "..." in letters:
            p = letters.index("...")
            e = ndim - (len(letters) - 1)
            letters = letters[:p] + ell[n_ell - e:] + letters[p + 1:]
        terms.append(letters)
    if arrow:
        out, has_ell = _letters(rhs, equation)
        if has_ell:
            p = out.index("...")
            out = out[:p] + ell + out[p + 1:]
        seen = set().union(*(set(t) for t in terms))
        for lb in out:
            if out.count(lb) > 1:
                raise ValueError(f"einsum: output label {lb!r} appears more than once in "
                                 f"{equation!r}")
            if lb not in seen and not lb.startswith("."):
                raise ValueError(f"einsum: output label {lb!r} does not appear in any input "
                                 f"subscript of {equation!r}")
    else:
        counts = {}
        for t in terms:
            for lb in t:
                counts[lb] = counts.get(lb, 0) + 1
        out = ell + sorted(lb for lb, c in counts.items() if c == 1 and not lb.startswith("."))
    return terms, out


def _letters(s: str, equation: str):
    """The labels of one subscript ('...' kept as one entry) and whether it had '...'."""
    if s.count("...") > 1:
        raise ValueError(f"einsum: expected at most one '...' per subscript, got {s!r}")
    has_ell = "..." in s
    out = []
    for part_i, part in enumerate(s.split("...")):
        if part_i:
            out.append("...")
        for c in part:
            if c not in _LETTERS:
                raise ValueError(f"einsum: expected subscripts of letters a-z, A-Z and '...', "
                                 f"got {c!r} in {equation!r}")
            out.append(c)
    return out, has_ell


def _label_sizes(terms, operands) -> dict:
    """Each label's size: equal across operands, or 1 (broadcast)."""
    sizes = {}
    for t, labels in zip(operands, terms):
        for lb, n in zip(labels, t.shape):
            prev = sizes.get(lb)
            if prev is None or prev == 1:
                sizes[lb] = n
            elif n != prev and n != 1:
                name = "..." if lb.startswith(".") else lb
                raise RuntimeError(f"einsum: operands do not broadcast: label {name!r} has "
                                   f"sizes {prev} and {n}")
    return sizes


def _prepare(t: Tensor, labels, i: int):
    """Take the diagonal of each repeated label: (view, unique labels)."""
    labels = list(labels)
    while True:
        dup = next((lb for lb in labels if labels.count(lb) > 1), None)
        if dup is None:
            return t, labels
        a = labels.index(dup)
        b = labels.index(dup, a + 1)
        if t.shape[a] != t.shape[b]:
            raise RuntimeError(f"einsum: subscript {dup!r} is repeated for operand {i} but the "
                               f"sizes don't match, {t.shape[a]} != {t.shape[b]}")
        t = t.diagonal(0, a, b)
        labels = [lb for k, lb in enumerate(labels) if k not in (a, b)] + [dup]


def _sum_out(t: Tensor, labels, keep: set):
    dims = tuple(i for i, lb in enumerate(labels) if lb not in keep)
    if not dims:
        return t, labels
    return rd.sum(t, dim=dims), [lb for lb in labels if lb in keep]


def _fold(a: Tensor, la, b: Tensor, lb, needed: set, sizes: dict):
    """Contract two operands: (result, its labels: batch, left, right)."""
    batch = [x for x in la if x in lb and x in needed]
    contract = [x for x in la if x in lb and x not in needed]
    left = [x for x in la if x not in lb]
    right = [x for x in lb if x not in la]
    a = a.permute(*[la.index(x) for x in batch + left + contract]) if la else a
    b = b.permute(*[lb.index(x) for x in batch + contract + right]) if lb else b
    nb = len(batch)
    a_batch, b_batch = tuple(a.shape[:nb]), tuple(b.shape[:nb])
    left_n = tuple(a.shape[nb:nb + len(left)])  # may still be 1 where a later operand
    right_n = tuple(b.shape[b.ndim - len(right):])  # broadcasts the label
    labels = batch + left + right
    if not contract:  # a broadcast product: outer products, Hadamard products
        a = a.reshape(a_batch + left_n + (1,) * len(right))
        b = b.reshape(b_batch + (1,) * len(left) + right_n)
        return ew.mul(a, b), labels
    cn = tuple(sizes[x] for x in contract)
    a = a.expand(a_batch + left_n + cn) if tuple(a.shape[nb + len(left):]) != cn else a
    b = b.expand(b_batch + cn + right_n) if tuple(b.shape[nb:nb + len(contract)]) != cn else b
    nl, nc, nr = layout.numel(left_n), layout.numel(cn), layout.numel(right_n)
    out = mm.matmul(a.reshape(a_batch + (nl, nc)), b.reshape(b_batch + (nc, nr)))
    return out.reshape(tuple(out.shape[:-2]) + left_n + right_n), labels


def _from_sublists(args):
    """einsum(a, [0, 1], b, [1, 2], [0, 2]) -> ('ab,bc->ac', (a, b)); Ellipsis allowed."""
    def sub(lst):
        out = []
        for v in lst:
            if v is Ellipsis:
                out.append("...")
            elif isinstance(v, int) and 0 <= v < len(_LETTERS):
                out.append(_LETTERS[v])
            else:
                raise ValueError(f"einsum: expected sublist entries in [0, {len(_LETTERS)}) or "
                                 f"Ellipsis, got {v!r}")
        return "".join(out)
    ops, subs = [], []
    k = 0
    while k + 1 < len(args) and isinstance(args[k], Tensor):
        ops.append(args[k])
        subs.append(sub(args[k + 1]))
        k += 2
    eq = ",".join(subs)
    if k < len(args):
        if k != len(args) - 1 or isinstance(args[k], Tensor):
            raise ValueError("einsum: expected (operand, sublist) pairs and an optional output "
                             "sublist")
        eq += "->" + sub(args[k])
    return eq, tuple(ops)
