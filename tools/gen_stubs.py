"""The stub files of clgrad's faces, for readers that do not run the package (mypy, pyright, an
editor's completion and go-to-definition).

    python tools/gen_stubs.py            # writes clgrad/__init__.pyi, clgrad/nn/functional.pyi
    python tools/gen_stubs.py --check    # exit status 1, naming the stub, when one differs

``clgrad/__init__.py`` and ``clgrad/nn/functional.py`` set their ops at import time from the op
table (``globals().update(registry.face(...))``), which a static reader cannot follow; the
package ships ``py.typed``, so a type checker would report ``clgrad.add`` as missing. This
imports the faces and writes, for each, a stub with every public name of the running module:
its ``__all__``, the other public attributes a user reaches (submodules such as
``clgrad.ops``, ``nn.functional.Tensor``), the dunders that are not every module's
(``__version__``) and the private names that are PyTorch's API (``torch._assert``); the names
are read after the face's import in a new interpreter (``fresh_names``: a submodule imported
later, ``clgrad.train``, is none of them). Each name is, in this order of preference:

- an import from where its object is defined, ``from clgrad.ops.elementwise import add as
  add`` (a submodule: ``from clgrad import nn as nn``; an alias under its alias name). A face
  wraps its ops (the argument check, ``out=``: ``functools.wraps`` wrappers marked
  ``__wrapped_checks__``/``__with_out__``); the stub names the op they wrap.
- a ``def`` with the function's signature, for a function the face defines itself
  (``is_tensor``, ``F.relu``); its annotations are written with the stub's names.
- a declaration of its type for any other value, ``float32: dtype``.

A stub is complete (a type checker reads only the ``.pyi`` when one exists): a name this cannot
write raises, and each stub's bindings are checked against the module's public names.
``tests/test_stubs.py`` runs ``--check`` and resolves every import of the stubs. After adding
a row to clgrad/ops/registry.py (or a name to a face): ``python tools/gen_stubs.py``.
"""
from __future__ import annotations

import __future__
import argparse
import ast
import builtins
import difflib
import functools
import importlib
import inspect
import json
import subprocess
import sys
import types
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1]  # the checkout whose clgrad is read
ROOT = SOURCE  # where the stubs are written and compared
WIDTH = 100  # pyproject.toml [tool.ruff] line-length
COMMAND = "python tools/gen_stubs.py"
# face module -> its stub, relative to the repository root
STUBS = {"clgrad": "clgrad/__init__.pyi", "clgrad.nn.functional": "clgrad/nn/functional.pyi"}
# private names of a face that are PyTorch's API (torch._assert): in its stub too
PRIVATE_API = {"clgrad": ("_assert",)}
# the attributes every module has (type checkers know them). ``__getattr__`` is left out on
# purpose: a face's raises AttributeError (a name clgrad lacks), and declaring it would make a
# type checker accept any name.
MODULE_DUNDERS = {"__name__", "__doc__", "__package__", "__loader__", "__spec__", "__path__",
                  "__file__", "__cached__", "__builtins__", "__all__", "__getattr__",
                  "__annotations__", "__dir__"}
# the face wrappers (clgrad/ops/_util.py check_tensor_args, clgrad/ops/inplace.py with_out)
FACE_WRAPPERS = ("__wrapped_checks__", "__with_out__")


def public_names(mod: types.ModuleType) -> list:
    """The names of ``mod`` a user reaches: ``__all__`` (in its order), then the other public
    attributes, PyTorch's private names (``PRIVATE_API``) and the dunders that are not every
    module's; ``from __future__ import`` features are left out (not names of the API)."""
    names = list(mod.__all__)
    for name, value in vars(mod).items():
        if name in names or isinstance(value, type(__future__.annotations)):
            continue
        if name.startswith("__") and name.endswith("__"):
            if name not in MODULE_DUNDERS:
                names.append(name)
        elif not name.startswith("_") or name in PRIVATE_API.get(mod.__name__, ()):
            names.append(name)
    return names


@functools.lru_cache(maxsize=None)
def fresh_names(face: str) -> tuple:
    """``public_names`` of ``face`` just after its import in a new interpreter: a submodule
    another import attached later (``import clgrad.train`` gives ``clgrad.train``) is no name
    of the face, and the stubs do not depend on what ran before (one run per face and
    process)."""
    code = (f"import importlib, json, sys; sys.path[:0] = {[str(SOURCE), str(SOURCE / 'tools')]};"
            f"import gen_stubs; print(json.dumps(gen_stubs.public_names("
            f"importlib.import_module({face!r}))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=SOURCE, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"gen_stubs: importing {face} failed:\n{done.stderr}")
    return tuple(json.loads(done.stdout.splitlines()[-1]))


def is_face_wrapper(obj) -> bool:
    """True for the wrappers a face puts around an op (the argument check, ``out=``)."""
    return any(getattr(obj, attr, None) for attr in FACE_WRAPPERS) and \
        hasattr(obj, "__wrapped__")


def unwrap_face(obj):
    """The object under a face's wrappers (``obj`` itself when it has none)."""
    while is_face_wrapper(obj):
        obj = obj.__wrapped__
    return obj


def origin(obj, face: str) -> tuple | None:
    """``(module, name)`` that ``obj`` is importable from, by the name it is defined under: a
    submodule from its parent package; else the ``__module__`` and ``__qualname__`` (or
    ``__name__``) of a class or function that module holds under that name (not ``face``
    itself). None for anything else (values, the face's own functions)."""
    if isinstance(obj, types.ModuleType):
        parent, _, name = obj.__name__.rpartition(".")
        return (parent, name) if parent else None
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str) or module == face or module not in sys.modules:
        return None
    # the qualified name; a function a factory made (``_unary_float.<locals>.f``): its __name__
    for name in (getattr(obj, "__qualname__", None), getattr(obj, "__name__", None)):
        if isinstance(name, str) and getattr(sys.modules[module], name, None) is obj:
            return module, name
    return None


class _Text:
    """An annotation or default already written as stub text (``inspect.Signature`` prints
    its repr)."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


class _Stub:
    """The stub of one face (``mod``, binding ``names``): its lines, built name by name."""

    def __init__(self, mod: types.ModuleType, names: list):
        self.mod = mod
        self.names = list(names)
        self.private = set()  # the private imports annotations need
        # the classes the stub names publicly (for annotations): object id -> name
        self.classes = {}
        for name in sorted(self.names, key=lambda n: n != getattr(getattr(mod, n), "__name__",
                                                                   None)):
            obj = unwrap_face(getattr(mod, name))
            if isinstance(obj, type):
                self.classes.setdefault(id(obj), name)

    def type_name(self, obj, where: str) -> str:
        """``obj`` (a class, or None) as stub text: its public name in the stub, a builtin
        (``builtins.int`` where the face rebinds ``int``), or a private import of it."""
        if obj is None or obj is type(None):
            return "None"
        if id(obj) in self.classes:
            return self.classes[id(obj)]
        if isinstance(obj, type) and getattr(builtins, obj.__name__, None) is obj:
            if obj.__name__ not in self.names:
                return obj.__name__
            self.private.add("import builtins")
            return f"builtins.{obj.__name__}"
        at = origin(obj, self.mod.__name__) if isinstance(obj, type) else None
        if at is None or at[1] in self.names:
            raise ValueError(f"gen_stubs: {where}: cannot write {obj!r} in a stub: expected a "
                             f"class the stub names, a builtin or an importable class")
        self.private.add(f"from {at[0]} import {at[1]}")
        return at[1]

    def annotation(self, ann, fn, where: str) -> str:
        """An annotation of ``fn`` as stub text; a string annotation's names are looked up in
        ``fn``'s globals (as ``typing.get_type_hints`` would) and written with the stub's."""
        if not isinstance(ann, str):
            return self.type_name(ann, where)

        stub = self

        class Names(ast.NodeTransformer):
            def visit_Name(self, node):
                if node.id in fn.__globals__:
                    obj = fn.__globals__[node.id]
                elif hasattr(builtins, node.id):
                    obj = getattr(builtins, node.id)
                else:
                    raise ValueError(f"gen_stubs: {where}: the annotation {ann!r} names "
                                     f"{node.id!r}, which {fn.__module__} does not define")
                return ast.parse(stub.type_name(obj, where), mode="eval").body

        return ast.unparse(Names().visit(ast.parse(ann, mode="eval")))

    def function(self, name: str, fn) -> str:
        """``def name(...) -> ...: ...`` with ``fn``'s signature (defaults as ``...``)."""
        sig = inspect.signature(fn)
        empty = inspect.Parameter.empty
        params = [p.replace(
            annotation=empty if p.annotation is empty else
            _Text(self.annotation(p.annotation, fn, f"{name}({p.name})")),
            default=empty if p.default is empty else _Text("..."))
            for p in sig.parameters.values()]
        ret = sig.return_annotation
        sig = sig.replace(parameters=params, return_annotation=empty if ret is empty else
                          _Text(self.annotation(ret, fn, f"{name} -> ...")))
        line = f"def {name}{sig}: ..."
        if len(line) <= WIDTH:
            return line
        # one parameter a line: the parameters' text split at its top-level commas
        params = str(sig.replace(return_annotation=empty))
        items, depth, start = [], 0, 1
        for i, c in enumerate(params[1:-1], 1):
            depth += (c in "([{") - (c in ")]}")
            if c == "," and depth == 0:
                items.append(params[start:i].strip())
                start = i + 1
        items.append(params[start:-1].strip())
        tail = str(sig)[len(params):]
        return "\n".join([f"def {name}(", *(f"    {a}," for a in items), f"){tail}: ..."])

    def statement(self, name: str) -> str:
        """The stub's statement binding ``name``."""
        obj = getattr(self.mod, name)
        inner = unwrap_face(obj)
        at = origin(inner, self.mod.__name__)
        if at is not None:
            line = f"from {at[0]} import {at[1]} as {name}"
            return line if len(line) <= WIDTH else \
                f"from {at[0]} import (\n    {at[1]} as {name},\n)"
        if inspect.isfunction(inner) and inner.__module__ == self.mod.__name__:
            return self.function(name, inner)
        if inspect.isfunction(inner):  # (a class that is not, a legacy type: a declaration)
            raise ValueError(
                f"gen_stubs: {self.mod.__name__}.{name}: {inner!r} is not importable by its "
                f"name from its __module__ ({inner.__module__}): define it at module level "
                f"there, or give it the __name__ it has there")
        return f"{name}: {self.type_name(type(obj), name)}"

    def text(self) -> str:
        """The stub: the private imports, the imports, the declarations and defs (each in the
        face's order, ``__all__``'s: the API pages keep it), then ``__all__``."""
        body = [self.statement(name) for name in self.names]
        body = [s for s in body if s.startswith("from ")] + [""] + \
            [s for s in body if not s.startswith("from ")]
        lines = [f"# The stub of {self.mod.__name__} for static readers (type checkers, editors),",
                 "# generated from the running module by tools/gen_stubs.py: do not edit. After a",
                 "# change of the op table (clgrad/ops/registry.py) or of the face, run",
                 f"# `{COMMAND}`."]
        lines += sorted(self.private, key=lambda line: (line.startswith("from"), line))
        lines += [""] if self.private else []
        lines += body
        lines += ["", *_wrap("__all__ = [", [f'"{n}"' for n in self.mod.__all__], "]")]
        text = "\n".join(lines) + "\n"
        self.check(text)
        return text

    def check(self, text: str):
        """The stub binds exactly the module's public names (it must be complete: a type
        checker reads only the stub)."""
        bound = set()
        for node in ast.parse(text).body:
            if isinstance(node, ast.ImportFrom):
                bound |= {a.asname for a in node.names if a.asname}
            elif isinstance(node, ast.AnnAssign):
                bound.add(node.target.id)
            elif isinstance(node, ast.FunctionDef):
                bound.add(node.name)
        if bound != set(self.names):
            raise ValueError(f"gen_stubs: the stub of {self.mod.__name__} binds "
                             f"{sorted(bound - set(self.names))} too many and misses "
                             f"{sorted(set(self.names) - bound)}")


def _wrap(head: str, items: list, tail: str) -> list:
    lines, line = [head], "   "
    for item in items:
        if len(line) + len(item) + 2 > WIDTH:
            lines.append(line)
            line = "   "
        line += f" {item},"
    return lines + ([line] if items else []) + [tail]


def stub_text(mod: types.ModuleType, names: list) -> str:
    """The stub of the module ``mod`` binding ``names`` (ValueError for a name it cannot
    write)."""
    return _Stub(mod, names).text()


def stubs() -> dict:
    """``{path relative to the repository root: text}`` of every face's stub."""
    return {path: stub_text(importlib.import_module(face), fresh_names(face))
            for face, path in STUBS.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="compare the stubs with the running modules; status 1 if one differs")
    args = parser.parse_args(argv)
    status = 0
    for path, text in stubs().items():
        file = ROOT / path
        old = file.read_text() if file.exists() else ""
        if not args.check:
            if old != text:
                file.write_text(text)
                print(f"gen_stubs: wrote {path}")
        elif old != text:
            status = 1
            diff = list(difflib.unified_diff(old.splitlines(), text.splitlines(),
                                             f"{path} (committed)", f"{path} (from the table)",
                                             lineterm="", n=0))
            print(f"gen_stubs: {path} differs from the running module: run `{COMMAND}` and "
                  f"commit it\n" + "\n".join(diff[:40]), file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.path.insert(0, str(SOURCE))  # the clgrad of this checkout
    sys.exit(main())
