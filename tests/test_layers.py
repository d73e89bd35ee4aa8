"""The layers of docs/internals.md: tools/import_graph.py, and the contract in pyproject.toml.

`make lint` runs import-linter on the contract; the test below re-checks its direct imports with
tools/import_graph.py, so a run without import-linter installed still catches an upward import.
"""
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import import_graph  # noqa: E402


def _write(root: Path, files: dict):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_import_graph_edges_cycles_and_function_level_imports(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from pkg import b\n",
        "pkg/b.py": "def f():\n    from pkg import a\n    return a\n",
        "pkg/c.py": "import pkg.a\nfrom .sub import d\nfrom . import b as _b\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/d.py": "from ..c import name\nclass K:\n    from pkg.sub import e\n",
        "pkg/sub/e.py": "import numpy\nimport pkg.sub.d.K\n",
    })
    modules, edges = import_graph.graph(tmp_path / "pkg")
    assert sorted(modules) == ["pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.sub", "pkg.sub.d",
                               "pkg.sub.e"]
    assert edges == {
        ("pkg.a", "pkg.b"): [(1, False)],
        ("pkg.b", "pkg.a"): [(2, True)],          # inside a function
        ("pkg.c", "pkg.a"): [(1, False)],
        ("pkg.c", "pkg.sub.d"): [(2, False)],     # relative, a module of the package
        ("pkg.c", "pkg.b"): [(3, False)],
        ("pkg.sub.d", "pkg.c"): [(1, False)],     # `from ..c import name`: the module c
        ("pkg.sub.d", "pkg.sub.e"): [(3, False)],  # a class body runs at import
        ("pkg.sub.e", "pkg.sub.d"): [(2, False)],  # `import pkg.sub.d.K`: its module
    }
    adjacency = {}
    for a, b in edges:
        adjacency.setdefault(a, set()).add(b)
    assert import_graph.cycles(sorted(modules), adjacency) == [
        ["pkg.c", "pkg.sub.d", "pkg.sub.e"], ["pkg.a", "pkg.b"]]
    assert import_graph.main(["--root", str(tmp_path / "pkg"), "--check"]) == 1
    assert import_graph.main(["--root", str(tmp_path / "pkg")]) == 0


def test_clgrad_has_no_import_cycle():
    """No cycle in clgrad's import graph, imports inside functions included (`make lint` runs
    tools/import_graph.py --check too); Tensor meets the ops only through bound methods."""
    modules, edges = import_graph.graph(ROOT / "clgrad")
    adjacency = {}
    for a, b in edges:
        adjacency.setdefault(a, set()).add(b)
    assert import_graph.cycles(sorted(modules), adjacency) == []
    assert import_graph.main(["--check"]) == 0


def _contract():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c.get("containers") == ["clgrad"]]
    return contract


def _layer_of(contract):
    """Module name -> (layer number, counted from the top; the group of independent siblings it
    belongs to, or None). The package root, in no layer of the contract, sits just below the
    programs (cli and train use it as user code does): no module below may import it."""
    places = {"clgrad": (1.5, None)}
    for number, layer in enumerate(contract["layers"], start=1):
        independent = "|" in layer
        for tail in layer.replace("|", ":").split(":"):
            tail = tail.strip().strip("()")  # (name): a module that may be absent
            places["clgrad." + tail] = (number, tail if independent else None)

    def layer_of(module):
        name = module
        while name not in places:
            name = name.rpartition(".")[0]
        return places[name]
    return layer_of


def test_no_module_imports_a_layer_above_it():
    contract = _contract()
    layer_of = _layer_of(contract)
    ignored = {tuple(x.strip() for x in line.split("->"))
               for line in contract.get("ignore_imports", [])}
    _, edges = import_graph.graph(ROOT / "clgrad")
    upward = []
    for (a, b), sites in sorted(edges.items()):
        (la, ga), (lb, gb) = layer_of(a), layer_of(b)
        if (la > lb or (la == lb and ga != gb)) and (a, b) not in ignored:
            upward.append(f"{a} -> {b} (lines {[line for line, _ in sites]})")
    assert upward == []
    # every ignored import still exists (import-linter fails on a stale one too)
    assert sorted(ignored - set(edges)) == []


def test_lint_imports_keeps_the_contracts():
    pytest.importorskip("importlinter")
    lint_imports = Path(sys.executable).parent / "lint-imports"
    if not lint_imports.exists():
        pytest.skip("lint-imports is not installed beside this Python")
    run = subprocess.run([str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_moved_names_keep_their_public_paths():
    """Untangling moved code down (or up) a layer; the old public paths still name it."""
    import clgrad
    from clgrad import _legacy, _tensor_str, autograd, capture
    from clgrad.autograd import graph
    assert capture.compile is clgrad.compile  # clgrad/_compile.py binds them on capture
    assert capture.make_graphed_callables is clgrad.cuda.make_graphed_callables
    assert capture.RECOMPILE_LIMIT == 8
    assert autograd.Variable is _legacy.Variable
    assert _tensor_str.grad_fn_name is graph.grad_fn_name


def test_softmax_and_norm_faces_after_their_move():
    """torch.softmax/log_softmax/norm moved from ops/reduce.py to ops/composite.py (above loss
    and linalg, which they call): same values, and dim still required as in PyTorch."""
    import numpy as np

    import clgrad
    a = np.array([[1.0, 2.0, -1.0], [3.0, 5.0, 0.5]])
    x = clgrad.tensor(a)
    e = np.exp(a - a.max(1, keepdims=True))
    want = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(clgrad.softmax(x, 1).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(x.softmax(1).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(clgrad.log_softmax(x, 1).numpy(), np.log(want), rtol=1e-12)
    np.testing.assert_allclose(x.norm().item(), np.sqrt((a * a).sum()), rtol=1e-12)
    np.testing.assert_allclose(clgrad.norm(x, 1, dim=0).numpy(), np.abs(a).sum(0), rtol=1e-12)
    with pytest.raises(TypeError):
        clgrad.softmax(x)  # PyTorch: dim is required (F.softmax alone has a legacy default)
    with pytest.raises(ValueError, match="norm: expected p to be a number, 'fro' or 'nuc'"):
        clgrad.norm(x, "bad")


def test_softmax_and_norm_faces_match_torch():
    torch = pytest.importorskip("torch")
    import numpy as np

    import clgrad
    a = np.random.default_rng(3).standard_normal((3, 4))
    x, t = clgrad.tensor(a), torch.tensor(a)
    for dim in (0, 1, -1):
        np.testing.assert_allclose(clgrad.softmax(x, dim).numpy(), torch.softmax(t, dim).numpy(),
                                   rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(x.log_softmax(dim).numpy(), t.log_softmax(dim).numpy(),
                                   rtol=1e-12, atol=1e-15)
    for p in (1, 2, 3.5, float("inf"), "fro"):
        np.testing.assert_allclose(clgrad.norm(x, p).item(), torch.norm(t, p).item(), rtol=1e-12)
    with pytest.raises(TypeError):
        torch.softmax(t)  # the oracle: dim is required


def test_capture_recompile_limit_still_sets_the_limit(monkeypatch):
    """compile moved to clgrad/_compile.py; clgrad.capture.RECOMPILE_LIMIT, its setting, is
    still read at each call: 2 captures at most, then eager with the warning."""
    import warnings

    import clgrad
    from clgrad import capture, nn

    class Scaled(nn.Module):
        scale = 2.0

        def forward(self, x):
            return x * self.scale

    monkeypatch.setattr(capture, "RECOMPILE_LIMIT", 2)
    m = Scaled()
    cm = clgrad.compile(m, mode="reduce-overhead")
    x = clgrad.tensor([1.0])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for i in range(5):
            m.scale = float(i)
            for _ in range(2):
                assert cm(x).numpy().tolist() == [float(i)]
    assert cm._stats["captures"] == 2
    assert sum("recompile limit (2," in str(msg.message) for msg in w) == 1


# the packages issue 34 split a file into (a module per idea): their own contracts
SPLIT_PACKAGES = ["ops.conv", "capture"]


@pytest.mark.parametrize("package", SPLIT_PACKAGES)
def test_split_package_modules_are_ordered_and_listed(package):
    """A split package's contract in pyproject.toml lists every module of its folder (so
    lint-imports stays exhaustive there), and no module imports one above it in that order or
    the package's face (its __init__): checked here without import-linter."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c.get("containers") == [f"clgrad.{package}"]]
    assert contract["exhaustive"] is True
    layers = [re.split(r"[|:]", layer) for layer in contract["layers"]]  # from the top;
    order = [m.strip() for layer in layers for m in layer]  # siblings ("a | b") share a rank
    folder = ROOT / "clgrad" / package.replace(".", "/")
    assert sorted(order) == sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
    rank = {f"clgrad.{package}.{m.strip()}": len(layers) - i
            for i, layer in enumerate(layers) for m in layer}
    _, edges = import_graph.graph(ROOT / "clgrad")
    within = [(a, b) for a, b in edges if a in rank and b.startswith(f"clgrad.{package}")]
    assert within  # the modules do import each other: the check below sees them
    wrong = [(a, b) for a, b in within if b not in rank or rank[b] >= rank[a]]  # (siblings
    # may not import each other: "|" is import-linter's independent siblings)
    assert wrong == []
