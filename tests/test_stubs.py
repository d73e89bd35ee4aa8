"""The stubs of the faces, clgrad/__init__.pyi and clgrad/nn/functional.pyi (tools/gen_stubs.py):
what static readers (mypy, pyright, editors) see of ``clgrad`` and ``clgrad.nn.functional``,
whose ops are set at import time from the op table. The committed stubs are those the running
modules give, and every name they bind is the object the module has under that name."""
import ast
import importlib
import inspect
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.dtypes import DType
from clgrad.ops import elementwise as ew

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import gen_stubs  # noqa: E402

STUBS = {"clgrad/__init__.pyi": clgrad, "clgrad/nn/functional.pyi": F}
# the attributes every module has; __getattr__ is kept out of the stubs on purpose
MODULE_DUNDERS = {"__name__", "__doc__", "__package__", "__loader__", "__spec__", "__path__",
                  "__file__", "__cached__", "__builtins__", "__all__", "__getattr__",
                  "__annotations__", "__dir__"}


def _stub(path: str) -> ast.Module:
    return ast.parse((ROOT / path).read_text())


def _bindings(tree: ast.Module) -> dict:
    """{public name: its statement} of a stub (``from M import N as A``, ``A: T``, ``def A``)."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            out.update({a.asname: node for a in node.names if a.asname})
        elif isinstance(node, ast.AnnAssign):
            out[node.target.id] = node
        elif isinstance(node, ast.FunctionDef):
            out[node.name] = node
    return out


def _under_face_wrappers(obj):
    """``obj`` and the objects under the faces' wrappers (the argument check, out=)."""
    chain = [obj]
    while getattr(obj, "__wrapped_checks__", None) is not None or \
            getattr(obj, "__with_out__", False):
        obj = obj.__wrapped__
        chain.append(obj)
    return chain


def _imported(module: str, name: str):
    mod = importlib.import_module(module)
    if hasattr(mod, name):
        return getattr(mod, name)
    return importlib.import_module(f"{module}.{name}")  # a submodule not yet imported


def test_the_committed_stubs_are_those_the_running_modules_give(capsys):
    """``python tools/gen_stubs.py --check``: what CI runs to catch a row without its stub."""
    assert gen_stubs.main(["--check"]) == 0, capsys.readouterr().err


def test_check_mode_names_a_stale_stub_and_the_command(monkeypatch, tmp_path, capsys):
    """A new op row without regenerating: the face has a name the committed stub lacks."""
    for path in STUBS:
        text = (ROOT / path).read_text()
        if path == "clgrad/nn/functional.pyi":
            text = text.replace("from clgrad.ops.loss import kl_div as kl_div\n", "")
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    monkeypatch.setattr(gen_stubs, "ROOT", tmp_path)
    assert gen_stubs.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "clgrad/nn/functional.pyi differs" in err and "`python tools/gen_stubs.py`" in err
    assert "+from clgrad.ops.loss import kl_div as kl_div" in err
    assert "clgrad/__init__.pyi" not in err
    assert gen_stubs.main([]) == 0  # writes the stub in tmp_path
    assert gen_stubs.main(["--check"]) == 0
    assert (tmp_path / "clgrad/nn/functional.pyi").read_text() == \
        (ROOT / "clgrad/nn/functional.pyi").read_text()


def test_the_generator_keeps_later_submodules_out():
    """``import clgrad.train`` attaches ``clgrad.train``: no name of the face (the stubs do not
    depend on what the process imported before)."""
    import clgrad.train  # noqa: F401
    assert "train" in vars(clgrad) and "train" in gen_stubs.public_names(clgrad)
    assert "train" not in gen_stubs.fresh_names("clgrad")
    assert {"nn", "ops", "dtypes"} <= set(gen_stubs.fresh_names("clgrad"))


def test_the_generator_refuses_a_name_it_cannot_write():
    """An incomplete stub would hide the name from type checkers: the generator raises."""
    class Local:
        pass
    face = types.ModuleType("face")
    face.__all__ = []
    face.made_here, face.a_value, face.add = (lambda x: x), Local(), clgrad.add
    assert gen_stubs.stub_text(face, ["add"]).splitlines()[-2:] == ["__all__ = [", "]"]
    assert "from clgrad.ops.elementwise import add as add" in gen_stubs.stub_text(face, ["add"])
    with pytest.raises(ValueError, match=r"^gen_stubs: face\.made_here: <function .*lambda.* "
                                         r"is not importable by its name from its __module__ "
                                         r"\(test_stubs\)"):
        gen_stubs.stub_text(face, ["made_here"])
    with pytest.raises(ValueError, match=r"^gen_stubs: a_value: cannot write <class '.*Local'>"):
        gen_stubs.stub_text(face, ["a_value"])
    with pytest.raises(ValueError, match=r"^gen_stubs: the stub of face binds \[\] too many and "
                                         r"misses \['add'\]"):
        gen_stubs._Stub(face, ["add"]).check("__all__ = []\n")


@pytest.mark.parametrize("path", STUBS)
def test_every_import_of_a_stub_is_the_faces_object(path):
    face = STUBS[path]
    imports = 0
    for node in _stub(path).body:
        if not isinstance(node, ast.ImportFrom):
            continue
        for alias in node.names:
            obj = _imported(node.module, alias.name)
            if alias.asname is None:  # a private import for an annotation: a class
                assert alias.name.startswith("_") and isinstance(obj, type), alias.name
                continue
            imports += 1
            assert obj in _under_face_wrappers(getattr(face, alias.asname)), (
                f"{path}: from {node.module} import {alias.name} as {alias.asname} is not "
                f"{face.__name__}.{alias.asname}")
    assert imports > 50


@pytest.mark.parametrize("path", STUBS)
def test_the_declarations_and_defs_of_a_stub_match_the_face(path):
    face = STUBS[path]
    tree = _stub(path)
    namespace = {"builtins": __import__("builtins")}
    for node in tree.body:  # the stub's names, as the declarations' annotations read them
        if isinstance(node, ast.ImportFrom):
            namespace.update({a.asname or a.name: _imported(node.module, a.name)
                              for a in node.names})
    for name, node in _bindings(tree).items():
        if isinstance(node, ast.AnnAssign):
            want = eval(ast.unparse(node.annotation), namespace)
            assert isinstance(getattr(face, name), want), name
        elif isinstance(node, ast.FunctionDef):
            fn = _under_face_wrappers(getattr(face, name))[-1]
            assert fn.__module__ == face.__name__, name
            args = node.args
            stub_params = [a.arg for a in (*args.posonlyargs, *args.args, *filter(None, [
                args.vararg]), *args.kwonlyargs, *filter(None, [args.kwarg]))]
            assert stub_params == list(inspect.signature(fn).parameters), name


@pytest.mark.parametrize("path", STUBS)
def test_a_stub_binds_every_public_name_of_the_face(path):
    """Every public name a fresh ``import`` of the face gives (its own rule here, not the
    generator's), PyTorch's ``torch._assert`` and ``__version__`` included."""
    face = STUBS[path]
    tree = _stub(path)
    code = (f"import json, sys, __future__; sys.path.insert(0, {str(ROOT)!r}); "
            f"import {face.__name__} as m; print(json.dumps(sorted("
            f"k for k, v in vars(m).items() if not isinstance(v, __future__._Feature) and ("
            f"not k.startswith('_') or k == '_assert' or (k.startswith('__') and k not in "
            f"{sorted(MODULE_DUNDERS)!r})))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    public = set(face.__all__) | set(json.loads(done.stdout.splitlines()[-1]))
    assert set(_bindings(tree)) == public
    stub_all = next(n.value for n in tree.body if isinstance(n, ast.Assign)
                    and n.targets[0].id == "__all__")
    assert ast.literal_eval(stub_all) == face.__all__


def test_the_stubs_say_what_a_reader_needs():
    """Hand-picked lines: an op, an alias, a submodule, a dtype, the face's own function."""
    torch_stub = (ROOT / "clgrad/__init__.pyi").read_text().splitlines()
    f_stub = (ROOT / "clgrad/nn/functional.pyi").read_text().splitlines()
    for line in ("from clgrad.ops.elementwise import add as add",
                 "from clgrad.ops.elementwise import clamp as clip",
                 "from clgrad.ops.matmul import matmul as matmul",
                 "from clgrad import nn as nn", "from clgrad import _rng as random",
                 "from clgrad.dtypes import DType as dtype", "float32: dtype", "int: dtype",
                 "__version__: str", "def is_tensor(obj) -> builtins.bool: ..."):
        assert line in torch_stub, line
    for line in ("from clgrad.ops.loss import cross_entropy as cross_entropy",
                 "from clgrad.tensor import Tensor as Tensor",
                 "def relu(input: Tensor, inplace: bool = ...): ..."):
        assert line in f_stub, line
    assert not any("__getattr__" in line for line in torch_stub + f_stub)
    assert clgrad.add.__wrapped_checks__ is not None and ew.add in _under_face_wrappers(
        clgrad.add)
    assert isinstance(clgrad.float32, DType)


def test_mypy_reads_the_ops_from_the_stubs(tmp_path, monkeypatch):
    """Where mypy is installed: user code over ``import clgrad as torch`` type-checks, and a name
    clgrad lacks is reported."""
    api = pytest.importorskip("mypy.api")
    monkeypatch.chdir(ROOT)  # mypy finds this checkout's clgrad
    good = "import clgrad as torch\nimport clgrad.nn.functional as F\n" \
           "y = torch.add(torch.ones(2), 1)\nz = F.relu(torch.matmul(y, y))\n"
    out, err, status = api.run(["--follow-imports=silent", "--cache-dir", str(tmp_path),
                                "-c", good])
    assert status == 0, out + err
    out, err, status = api.run(["--follow-imports=silent", "--cache-dir", str(tmp_path),
                                "-c", "import clgrad as torch\ntorch.not_an_op(1)\n"])
    assert status == 1 and 'has no attribute "not_an_op"' in out, out + err
