"""The nested containers torch.func walks (PyTorch's ``torch.utils._pytree``, the part vmap and
the autodiff transforms use): tuples, lists, dicts (OrderedDict too) and namedtuples are nodes;
everything else (a Tensor, a number, None) is a leaf, as in PyTorch 2.14 (where None is a leaf
of ``tree_flatten`` too).

``tree_flatten(tree) -> (leaves, spec)``; ``tree_unflatten(leaves, spec) -> tree``;
``broadcast_flatten(prefix, spec)``: a prefix tree (vmap's ``in_dims``/``out_dims``) spread
over the leaves of ``spec`` (a leaf of the prefix covers a whole subtree), or None where the
prefix does not fit. Specs compare equal when the structures are the same; their repr is
PyTorch's (``TreeSpec(tuple, None, [*, *])``), so error messages read as there.
"""
from __future__ import annotations

from collections import OrderedDict

__all__ = ["TreeSpec", "LEAF", "tree_flatten", "tree_unflatten", "tree_map",
           "broadcast_flatten"]


class TreeSpec:
    """The structure of a tree: the node's type, its context (a dict's keys, a namedtuple's
    class) and one spec per child; ``LEAF`` (type None) for a leaf."""

    __slots__ = ("type", "context", "children", "num_leaves")

    def __init__(self, type_, context, children):
        self.type, self.context, self.children = type_, context, tuple(children)
        self.num_leaves = 1 if type_ is None else sum(c.num_leaves for c in self.children)

    def is_leaf(self) -> bool:
        return self.type is None

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.type is other.type
                and self.context == other.context and self.children == other.children)

    def __hash__(self):
        return hash((self.type, len(self.children)))

    def __repr__(self, indent: int = 0):
        if self.type is None:
            return "*"
        head = f"TreeSpec({self.type.__name__}, {self.context}, ["
        indent += 2
        parts = [c.__repr__(indent) for c in self.children]
        return head + (",\n" + " " * indent).join(parts) + "])"


LEAF = TreeSpec(None, None, ())


def _node(x):
    """(type, context, children) of a container, or None for a leaf."""
    t = type(x)
    if t is tuple or t is list:
        return t, None, x
    if t is dict or t is OrderedDict:
        return t, list(x.keys()), list(x.values())
    if isinstance(x, tuple) and hasattr(t, "_fields"):  # a namedtuple
        return t, t, tuple(x)
    return None


def tree_flatten(tree):
    """``(leaves, spec)``: the leaves in order (a dict's in its key order) and the structure."""
    leaves = []
    return leaves, _flatten(tree, leaves)


def _flatten(x, leaves) -> TreeSpec:
    node = _node(x)
    if node is None:
        leaves.append(x)
        return LEAF
    t, ctx, children = node
    return TreeSpec(t, ctx, [_flatten(c, leaves) for c in children])


def tree_unflatten(leaves, spec: TreeSpec):
    """The tree of ``spec`` with ``leaves`` in order. Raises ValueError for a wrong count."""
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"tree_unflatten: expected {spec.num_leaves} leaves for {spec!r}, "
                         f"got {len(leaves)}")
    it = iter(leaves)
    return _build(spec, it)


def _build(spec: TreeSpec, it):
    if spec.type is None:
        return next(it)
    children = [_build(c, it) for c in spec.children]
    if spec.type is dict or spec.type is OrderedDict:
        return spec.type(zip(spec.context, children))
    if spec.type is tuple or spec.type is list:
        return spec.type(children)
    return spec.type(*children)  # a namedtuple


def tree_map(fn, tree):
    """``tree`` with ``fn`` applied to each leaf."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def broadcast_flatten(prefix, spec: TreeSpec):
    """One entry of ``prefix`` per leaf of ``spec``: a leaf of ``prefix`` (an int, None)
    repeated over the subtree it stands at; dicts are matched by key. None where ``prefix``
    has a container that ``spec`` lacks or that differs in type, length or keys."""
    out = []
    return out if _broadcast(prefix, spec, out) else None


def _broadcast(prefix, spec: TreeSpec, out) -> bool:
    node = _node(prefix)
    if node is None:
        out.extend([prefix] * spec.num_leaves)
        return True
    t, ctx, children = node
    if spec.type is None or t is not spec.type or len(children) != len(spec.children):
        return False
    if isinstance(prefix, dict):  # matched by key, whatever the order
        if set(ctx) != set(spec.context):
            return False
        children = [prefix[k] for k in spec.context]
    return all(_broadcast(c, s, out) for c, s in zip(children, spec.children))
