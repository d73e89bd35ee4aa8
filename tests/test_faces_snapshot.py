"""The public names of the faces do not change: ``dir(clgrad)``, ``clgrad.__all__``,
``clgrad.nn.functional``'s names and ``__all__``, and the public attributes of ``clgrad.Tensor``
(methods, in-place variants, operators), each with its kind, ``inspect.signature``,
``__name__``, whether it checks its Tensor arguments and takes ``out=``, the first line of its
docstring and the names bound to the same object, equal tests/data/faces_snapshot.json,
written from the faces as they were before the op registry (issue 34). Regenerate only for a
deliberate change of a public name: ``python tests/test_faces_snapshot.py`` (and say why in
the commit)."""
import functools
import inspect
import json
import pathlib
import re
import subprocess
import sys

import pytest

SNAPSHOT = pathlib.Path(__file__).parent / "data" / "faces_snapshot.json"
# private names of the clgrad face that are PyTorch's API (torch._assert)
_PRIVATE_API = {"_assert"}


def _public(name: str) -> bool:
    return not name.startswith("_") or name.startswith("__") or name in _PRIVATE_API


def _describe(obj, name="") -> dict:
    """What a face shows of one name: kind, signature, __name__, first docstring line (a value's
    repr for the plain values of public names: dtypes, legacy types, aliases)."""
    if isinstance(obj, property):
        kind = "property"
    elif inspect.ismodule(obj):
        return {"kind": "module", "name": obj.__name__}
    else:
        kind = type(obj).__name__
    out = {"kind": kind}
    if callable(obj) and not isinstance(obj, type):
        try:
            # sentinel defaults print their address: not part of the face
            out["signature"] = re.sub(r" at 0x[0-9a-f]+>", ">", str(inspect.signature(obj)))
        except (TypeError, ValueError):
            out["signature"] = None
        out["name"] = getattr(obj, "__name__", None)
        # the public-entry wrappers: PyTorch's argument TypeError, out=
        out["checked"] = getattr(obj, "__wrapped_checks__", None) is not None
        out["out"] = bool(getattr(obj, "__with_out__", False))
    elif isinstance(obj, type):
        out["name"] = obj.__qualname__
    if kind in ("function", "property", "type", "builtin_function_or_method"):
        doc = (obj.__doc__ or "").strip().splitlines()
        out["doc"] = doc[0].strip() if doc else ""
    if kind not in ("function", "property", "type", "builtin_function_or_method", "module",
                    "method_descriptor", "wrapper_descriptor", "getset_descriptor",
                    "member_descriptor", "classmethod", "staticmethod", "method",
                    "NoneType", "mappingproxy") and not name.startswith("__"):
        out["repr"] = repr(obj)[:80]
    return out


def _face(names, get) -> dict:
    """{name: description} with ``same_as``: the first (sorted) name bound to the same object."""
    first = {}
    out = {}
    for name in sorted(names):
        obj = get(name)
        d = _describe(obj, name)
        if d["kind"] in ("function", "property", "builtin_function_or_method"):
            d["same_as"] = first.setdefault(id(obj), name)
        out[name] = d
    return out


def snapshot() -> dict:
    import clgrad
    import clgrad.nn.functional as F
    T = clgrad.Tensor
    tensor_names = [n for n in dir(T) if _public(n)]
    return {
        "clgrad.dir": _face([n for n in dir(clgrad) if _public(n) and n != "__builtins__"],
                            lambda n: getattr(clgrad, n)),
        "clgrad.__all__": sorted(clgrad.__all__),
        "clgrad.nn.functional.dir": _face([n for n in dir(F) if _public(n)
                                           and n != "__builtins__"], lambda n: getattr(F, n)),
        "clgrad.nn.functional.__all__": sorted(F.__all__),
        # inspect.getattr_static: properties as properties (getattr would call them)
        "clgrad.Tensor": _face(tensor_names, lambda n: inspect.getattr_static(T, n)),
    }


def _diff(want, got, path=""):
    """Readable differences: names gone, names new, changed descriptions."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{path}{k}: gone" for k in sorted(set(want) - set(got))]
        out += [f"{path}{k}: new" for k in sorted(set(got) - set(want))]
        for k in sorted(set(want) & set(got)):
            out += _diff(want[k], got[k], f"{path}{k}.")
        return out
    if isinstance(want, list) and isinstance(got, list):
        return [f"{path}: gone {sorted(set(want) - set(got))}, new "
                f"{sorted(set(got) - set(want))}"] if want != got else []
    return [] if want == got else [f"{path[:-1]}: {want!r} -> {got!r}"]


@pytest.mark.parametrize("part", ["clgrad.dir", "clgrad.__all__", "clgrad.nn.functional.dir",
                                  "clgrad.nn.functional.__all__", "clgrad.Tensor"])
def test_the_public_faces_equal_the_snapshot(part):
    want = json.loads(SNAPSHOT.read_text())[part]
    got = _fresh_snapshot()[part]
    assert _diff(want, got) == []


@functools.lru_cache(maxsize=None)
def _fresh_snapshot() -> dict:
    """The faces as a fresh ``import clgrad`` shows them (a child Python: in this process, the
    submodules other tests imported, clgrad.cli and clgrad.train, are attributes of clgrad)."""
    from subproc import checkout_env
    r = subprocess.run([sys.executable, __file__, "--json"], capture_output=True, text=True,
                       env=checkout_env(), timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_the_fresh_faces_are_this_process_faces_before_other_imports():
    """The child's faces are this process's, apart from submodules imported since."""
    got = json.loads(json.dumps(snapshot()["clgrad.dir"]))
    fresh = _fresh_snapshot()["clgrad.dir"]
    extra = {k for k in set(got) - set(fresh) if got[k]["kind"] == "module"}
    assert set(got) - extra == set(fresh)


def test_the_snapshot_is_not_empty():
    """The snapshot holds the faces (not a stub): hand-counted lower bounds of today's faces."""
    data = json.loads(SNAPSHOT.read_text())
    assert len(data["clgrad.__all__"]) > 250 and "add" in data["clgrad.__all__"]
    assert len(data["clgrad.nn.functional.__all__"]) > 60
    t = data["clgrad.Tensor"]
    assert {"add", "add_", "__add__", "__radd__", "__iadd__", "T"} <= set(t)
    assert t["__iadd__"]["same_as"] == "__iadd__" and t["add_"]["same_as"] == "__iadd__"
    assert t["add"]["signature"] == "(a, b, alpha=1) -> 'Tensor'" and t["add"]["checked"]
    assert data["clgrad.dir"]["add"]["out"] and not t["__add__"]["checked"]
    assert data["clgrad.dir"]["float"]["repr"] == "clgrad.float32"


if __name__ == "__main__":
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))  # this checkout's clgrad
    if sys.argv[1:] == ["--json"]:  # what _fresh_snapshot reads
        print(json.dumps(snapshot()))
    else:
        SNAPSHOT.write_text(json.dumps(snapshot(), indent=1, sort_keys=True) + "\n")
        print(f"wrote {SNAPSHOT}")
