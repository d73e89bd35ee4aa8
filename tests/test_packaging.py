"""The wheel ships the kernels and runs from a fresh venv outside the checkout."""
import importlib.util
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

_missing = [m for m in ("venv", "pip", "hatchling") if importlib.util.find_spec(m) is None]
pytestmark = pytest.mark.skipif(
    bool(_missing), reason=f"cannot build or install a wheel here: {', '.join(_missing)} not "
                           f"installed (hatchling is the build backend named in pyproject.toml)")


def _run(cmd, **kw):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=300, **kw)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{r.stdout}\n{r.stderr}"
    return r


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    sources = sorted(p.name for p in (ROOT / "kernels").iterdir() if p.suffix in (".cl", ".h"))
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
          "--no-index", "-w", out, ROOT])
    wheels = list(out.glob("clgrad-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0], sources  # sources listed before the build: other work may add kernels


def test_wheel_contains_the_kernels(wheel):
    wheel, sources = wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "common.h" in sources and "elementwise.cl" in sources
    for name in sources:
        assert f"clgrad/kernels/{name}" in names, f"{name} missing from {wheel.name}"
    assert "clgrad/__init__.py" in names and "clgrad/ops/elementwise.py" in names
    assert "clgrad/py.typed" in names                 # PEP 561: the annotations are public
    # the faces' stubs (tools/gen_stubs.py): what type checkers read of clgrad and F
    assert {"clgrad/__init__.pyi", "clgrad/nn/functional.pyi"} <= names
    # the digits data and its BSD-3 notice ship; both licenses land in the metadata (PEP 639)
    assert {"clgrad/utils/data/_digits/digits.csv.gz",
            "clgrad/utils/data/_digits/LICENSE"} <= names
    info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    assert {f"{info}/licenses/LICENSE",
            f"{info}/licenses/clgrad/utils/data/_digits/LICENSE"} <= names, sorted(names)
    meta = zipfile.ZipFile(wheel).read(f"{info}/METADATA").decode()
    assert "License-Expression: MIT" in meta
    assert "Project-URL: Changelog, " in meta and "Project-URL: Source, " in meta
    assert "Classifier: Programming Language :: Python :: 3.13" in meta
    requires = [ln for ln in meta.splitlines() if ln.startswith("Requires-Dist:")]
    core = [ln for ln in requires if "extra ==" not in ln]
    assert not any(p in ln for ln in core for p in ("scikit-learn", "matplotlib", "tqdm"))
    # lean core: the CPU runtimes come with the `cpu` extra only (README "Installing")
    runtimes = ("intel-opencl-rt", "intel-cmplr-lib-rt", "pocl-binary-distribution")
    assert not any(p in ln for ln in core for p in runtimes), core
    for p in runtimes:
        assert any(p in ln and "extra == 'cpu'" in ln for ln in requires), p


def test_dedupe_hard_links_identical_library_copies(tmp_path):
    from clgrad._dedupe_libs import dedupe     # python -m clgrad dedupe-libs VENV
    lib = tmp_path / "lib"
    lib.mkdir()
    same = os.urandom(5000)
    for name in ("libA.so", "libA.so.2", "libA.so.2.20"):
        (lib / name).write_bytes(same)
    (lib / "libB.so").write_bytes(same)            # same bytes, other library: left alone
    (lib / "libC.so").write_bytes(b"x" * 100)
    (lib / "libC.so.1").write_bytes(b"y" * 100)    # same size, other bytes: left alone
    assert dedupe(lib) == 2 * 5000
    inode = (lib / "libA.so").stat().st_ino
    assert all((lib / n).stat().st_ino == inode for n in ("libA.so.2", "libA.so.2.20"))
    assert all((lib / n).read_bytes() == same for n in ("libA.so", "libA.so.2", "libA.so.2.20"))
    assert (lib / "libB.so").stat().st_ino != inode
    assert (lib / "libC.so.1").read_bytes() == b"y" * 100
    assert sorted(p.name for p in lib.iterdir()) == [
        "libA.so", "libA.so.2", "libA.so.2.20", "libB.so", "libC.so", "libC.so.1"]
    assert dedupe(lib) == 0                        # idempotent


def test_wheel_runs_a_kernel_from_a_fresh_venv(wheel, tmp_path):
    wheel, _ = wheel
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv])
    py = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", py, "install", "--no-deps", "--no-index",
          "--disable-pip-version-check", wheel])
    script = (
        "import clgrad, clgrad.utils.data.datasets, pathlib\n"
        "from clgrad.runtime import kernel_dir\n"
        "x = clgrad.arange(6.0).reshape(2, 3)\n"
        "print(pathlib.Path(clgrad.__file__).resolve())\n"
        "print(kernel_dir().resolve())\n"
        "print((x.T * 2).sum().item())\n"
        "print(len(clgrad.utils.data.datasets.load_digits()))\n")
    env = dict(os.environ, PYTHONPATH=sysconfig.get_paths()["purelib"])  # numpy, pyopencl
    env.pop("PYTHONHOME", None)
    r = _run([py, "-c", script], cwd=tmp_path, env=env)
    pkg_file, kdir, value, digits = r.stdout.strip().splitlines()[-4:]
    assert digits == "1797"  # the data ship in the wheel
    assert Path(pkg_file).is_relative_to(venv.resolve()), pkg_file
    assert Path(kdir) == Path(pkg_file).parent / "kernels"
    assert not Path(kdir).is_relative_to(ROOT)
    assert float(value) == 30.0
