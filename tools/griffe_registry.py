"""griffe extension (mkdocs.yml): the ops of clgrad's faces, read from the op table, for the API
reference.

clgrad/__init__.py and clgrad/nn/functional.py take their ops from the op table,
clgrad/ops/registry.py, when they are imported (``globals().update(registry.face(...))``, ``__all__
+= registry.names(...)``), which static analysis cannot follow. This reads the table statically,
as any reader can (the ``OPS`` rows of the source: name, the implementing function as
``<module alias>.<name>``, faces, aliases, nn.functional's and clgrad's own functions), and adds
each op to its faces as an alias of its implementing function, exported: the API pages show
``clgrad.add`` as the explicit imports made them show it before the table. Nothing of clgrad
is imported (the docs build needs no OpenCL).
"""
from __future__ import annotations

import ast

import griffe

_FACES = {"TORCH": 1, "FUNCTIONAL": 2, "METHOD": 4}
_FACES["TM"] = _FACES["TORCH"] | _FACES["METHOD"]


def _faces(node) -> int:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return _FACES[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _faces(node.left) | _faces(node.right)
    raise ValueError(f"griffe_registry: faces: expected names of faces, got {ast.dump(node)}")


def _target(node, modules: dict) -> str | None:
    """``ew.add`` -> 'clgrad.ops.elementwise.add'; None for anything else (OWN, a lambda)."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
            node.value.id in modules:
        return f"{modules[node.value.id]}.{node.attr}"
    return None


def rows(source: str) -> list:
    """``[(names, target, faces, functional target or "own" or None)]`` of the table's rows;
    ``target`` is the clgrad face's (the row's ``torch=`` function where it has one, else its
    function; nn.functional's is the row's function)."""
    tree = ast.parse(source)
    modules = {a.asname or a.name: f"{n.module}.{a.name}" for n in tree.body
               if isinstance(n, ast.ImportFrom) for a in n.names}
    table = next(n.value for n in tree.body if isinstance(n, ast.Assign) and
                 any(isinstance(t, ast.Name) and t.id == "OPS" for t in n.targets))
    out = []
    for call in table.elts:
        kw = {k.arg: k.value for k in call.keywords}
        names = [call.args[0].value]
        if "aliases" in kw:
            names += [e.value for e in kw["aliases"].elts]
        functional = kw.get("functional")
        own = isinstance(functional, ast.Name) and functional.id == "OWN"
        fn = _target(call.args[1], modules)
        functional = "own" if own else _target(functional, modules)
        if "torch" in kw:  # clgrad's own function: nn.functional keeps the row's
            fn, functional = _target(kw["torch"], modules), functional or fn
        out.append((names, fn, _faces(call.args[2]), functional))
    return out


class RegistryFaces(griffe.Extension):
    """Adds the op table's ops to the clgrad and clgrad.nn.functional modules."""

    def on_package(self, *, pkg, **kwargs) -> None:
        if pkg.path != "clgrad":
            return
        faces = {_FACES["TORCH"]: pkg, _FACES["FUNCTIONAL"]: pkg["nn.functional"]}
        for names, target, face_bits, functional in rows(pkg["ops.registry"].filepath
                                                         .read_text()):
            for bit, mod in faces.items():
                if not face_bits & bit:
                    continue
                where = functional if bit == _FACES["FUNCTIONAL"] and functional else target
                for name in names:
                    known = mod.members.get(name)
                    # "own": the face defines it (griffe found it); a submodule of the same
                    # name (clgrad.tensor) stays the module griffe resolves other names through;
                    # an alias (the import of the face's stub, clgrad/__init__.pyi) is replaced
                    # unresolved (griffe cannot follow ``eq, ne, ... = (...)``)
                    if where != "own" and not (known is not None and not known.is_alias
                                               and known.is_module):
                        mod.set_member(name, griffe.Alias(name, where, parent=mod))
                    if name not in mod.exports:
                        mod.exports.append(name)
