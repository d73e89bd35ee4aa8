"""The device check: can a runtime build what clgrad ships? (clgrad/_probe.py, run by
runtime/discovery.py in child processes), and the launch-time error for a missing kernel.

PoCL 3.0 (LLVM 14) on AMD Zen 4 passed the one-kernel probe, then returned programs without
their kernels (INVALID_KERNEL_NAME inside ops) or aborted the process in LLVM. These tests fake
those runtimes around the real one (a program whose binary lacks a kernel, a child process that
aborts) and check the verdicts, the reasons and what the device choice does with them.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

import clgrad
from clgrad import _probe
from clgrad.runtime import DeviceError, discovery
from clgrad.ops._util import defines_for


def _dev():
    return clgrad.default_device()


def test_unconditional_kernels_are_the_top_level_ones():
    src = textwrap.dedent("""
        __kernel void always(__global float *x) { x[0] = 1; }
        #ifdef RUNS
        __kernel void sometimes(__global float *x) { x[0] = 2; }
        #if defined(A) || defined(B)
        __kernel void nested(__global float *x) { }
        #endif
        #endif
        #define MAKE(name) \\
            __kernel void name(__global float *x) { }
        MAKE(generated)
        __kernel  void  spaced ( __global float *x) { }
        """)
    assert _probe.unconditional_kernels(src) == {"always", "spaced"}


@pytest.mark.filterwarnings("ignore::pyopencl.CompilerWarning")
@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_every_program_of_the_check_builds_with_all_its_kernels(kind):
    """The check's table names real defines: every entry (the CPU kernels at this device's
    width, and the GPU kernels, which also compile for a CPU) builds here with every kernel it
    declares, from source and from its binary. A define an ops module renames shows here."""
    import pyopencl as cl
    dev = _dev()
    width = dev.vector_width if dev.kind == "cpu" else 16
    todo = _probe.programs(kind == "cpu", width, dev.fp64)
    files = {f for f, _ in todo}
    shipped = {p.name for p in clgrad.runtime.kernel_dir().glob("*.cl")} - {"structs.cl"}
    other = {f for f in shipped if f.endswith("_gpu.cl" if kind == "cpu" else "_cpu.cl")}
    # NVIDIA's only (inline PTX): clgrad/ops/matmul.py has_mma builds and checks them there at
    # first use, and keeps the FMA kernels if they fail
    other |= {f for f in shipped if f.endswith("_nv.cl")}
    assert shipped - other <= files, sorted(shipped - other - files)  # every kernel file
    assert any(d.get("T") == "double" for _, d in todo) == dev.fp64
    ctx = dev.context
    for file, defines in todo:
        assert _probe.check_program(cl, ctx, dev.cl_device, str(clgrad.runtime.kernel_dir()),
                                    file, defines) == ""


class _DropOnReload:
    """pyopencl with one change: a program re-created from a binary lacks kernel ``drop`` (as
    PoCL 3.0 on Zen 4 gave programs without their kernels)."""

    def __init__(self, cl, drop, src):
        self._cl, self._drop, self._src = cl, drop, src

    def __getattr__(self, name):
        return getattr(self._cl, name)

    def Program(self, ctx, *args):  # noqa: N802  (pyopencl's name)
        if len(args) == 2:  # (devices, binaries): build the source without ``drop`` instead
            return self._cl.Program(ctx, self._src.replace(f"void {self._drop}(",
                                                           f"void {self._drop}_gone("))
        return self._cl.Program(ctx, *args)


@pytest.mark.filterwarnings("ignore::pyopencl.CompilerWarning")
def test_a_program_that_loses_a_kernel_from_its_binary_is_named():
    import pyopencl as cl
    dev = _dev()
    kdir = clgrad.runtime.kernel_dir()
    src = (kdir / "copy.cl").read_text()
    fake = _DropOnReload(cl, "copy", src)
    d = {"S": "float", "D": "float"}
    why = _probe.check_program(fake, dev.context, dev.cl_device, str(kdir), "copy.cl", d)
    assert why.startswith("kernels/copy.cl (S=float D=float) re-created from its binary lacks "
                          "kernel(s) copy (has "), why
    assert _probe.check_program(cl, dev.context, dev.cl_device, str(kdir), "copy.cl", d) == ""


def test_a_missing_kernel_at_launch_names_program_kernel_and_device():
    dev = _dev()
    with pytest.raises(DeviceError) as info:
        dev.kernel("elementwise.cl", "no_such_kernel", defines_for(clgrad.float32))
    msg = str(info.value)
    assert "kernel 'no_such_kernel' is missing from kernels/elementwise.cl" in msg
    assert dev.name in msg and dev.platform in msg and "python -m clgrad devices" in msg
    assert "'T': 'float'" in msg and "kernel(s) (" in msg  # the defines, what it does hold
    assert "INVALID_KERNEL_NAME" in msg or "KERNEL" in msg.upper()
    # the real kernels of that program still come
    assert dev.kernel("elementwise.cl", "fill", defines_for(clgrad.float32)) is not None


class _Fake:
    """A CPU candidate as _check_programs sees it (no pyopencl device behind it)."""

    def __init__(self, native=16):
        self.spec, self.name, self.platform_name, self.kind = "0:0", "fake cpu", "Fake CL", "cpu"
        self.usable, self.reason, self.checked, self.vector_width = True, "ok", False, None
        self.device = type("D", (), {"native_vector_width_float": native})()

    def key(self):
        return "fake | probe v2"


def _fake_probe(tmp_path, monkeypatch, body):
    """Point discovery at a fake clgrad/_probe.py whose main is ``body`` (Python source run
    with ``argv``, ``emit(row)`` and ``os`` in scope); the clgrad cache goes to tmp_path."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "_probe.py").write_text(
        "import json, os, sys\nargv = sys.argv[1:]\n"
        "def emit(row):\n    print(json.dumps({'index': argv[-1], **row}), flush=True)\n"
        + textwrap.dedent(body))
    monkeypatch.setattr(discovery, "_PKG", pkg)
    monkeypatch.setattr(discovery, "_KERNELS_DIGEST", ["fakedigest"])
    monkeypatch.setenv("CLGRAD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CLGRAD_PROBE", raising=False)


def test_a_compiler_abort_is_a_verdict_naming_the_program(tmp_path, monkeypatch):
    _fake_probe(tmp_path, monkeypatch, """
        emit({"building": "kernels/a.cl (T=float)"})
        emit({"building": "kernels/b.cl (T=double BW=8)"})
        emit({"built": "kernels/a.cl (T=float)"})
        emit({"building": "kernels/c.cl (T=float)"})
        sys.stderr.write("LLVM ERROR: Cannot emit physreg copy instruction\\n")
        sys.stderr.flush()
        os.abort()
        """)
    c = _Fake(native=8)  # no narrower width to try
    assert discovery._check_programs(c) is False
    assert not c.usable and not c.checked
    assert c.reason.startswith("cannot build clgrad's kernels: the runtime's compiler ended the "
                               "process (exit "), c.reason
    assert "LLVM ERROR: Cannot emit physreg copy instruction" in c.reason
    # the programs in flight when it died (the child builds a few at a time)
    assert c.reason.endswith("while building kernels/b.cl (T=double BW=8) or kernels/c.cl "
                             "(T=float)"), c.reason
    cache = json.loads((tmp_path / "cache" / "probe.json").read_text())
    assert cache["fake | probe v2 | programs fakedigest"]["usable"] is False  # cached
    c2 = _Fake(native=8)  # a later process: the cached verdict, no child
    (tmp_path / "pkg" / "_probe.py").write_text("raise SystemExit(3)\n")
    assert discovery._check_programs(c2) is False and c2.reason == c.reason


def test_processes_checking_at_once_wait_for_one_verdict(tmp_path, monkeypatch):
    """Candidates checked at once (pytest-xdist workers, a distributed launch's ranks; here
    threads, each with its own lock file handle) run the program check once: the others
    wait on probe.json's lock and take the verdict it wrote."""
    import threading
    runs = tmp_path / "runs"
    _fake_probe(tmp_path, monkeypatch, f"""
        import time
        with open({str(runs)!r}, "a") as f:
            f.write("run\\n")
        time.sleep(1.0)
        emit({{"usable": True, "reason": "ok", "programs": 70}})
        """)
    monkeypatch.setattr(discovery, "_check_processes", lambda: 1)
    fakes = [_Fake(native=8) for _ in range(3)]
    threads = [threading.Thread(target=discovery._check_programs, args=(c,)) for c in fakes]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert runs.read_text().splitlines() == ["run"]
    assert all(c.usable and c.checked and c.reason == "ok" for c in fakes)


def test_the_check_runs_in_parts_and_names_the_first_failure_in_table_order(tmp_path,
                                                                          monkeypatch):
    """k processes build programs i, i + k, ... each (PoCL builds one program at a time a
    process); the verdict is the first failing program over all shares, in table order."""
    _fake_probe(tmp_path, monkeypatch, """
        i, k = (int(x) for x in argv[argv.index("--part") + 1].split("/"))
        assert argv[argv.index("--threads") + 1] == "1"
        fail = {0: 2, 2: 1}.get(i)  # share 0 fails at its 3rd program (table 6), 2 at its
        if fail is None:            # 2nd (table 5): table order names share 2's
            emit({"usable": True, "reason": "ok", "programs": 10 + i})
        else:
            emit({"usable": False, "reason": f"program {fail * k + i} lacks a kernel",
                  "programs": fail})
        """)
    monkeypatch.setattr(discovery, "_check_processes", lambda: 3)
    verdict = discovery._run_program_check(_Fake(native=8), None)
    assert verdict == {"usable": False, "reason": "program 5 lacks a kernel", "programs": 1}
    (tmp_path / "pkg" / "_probe.py").write_text(
        (tmp_path / "pkg" / "_probe.py").read_text().replace("{0: 2, 2: 1}", "{}"))
    verdict = discovery._run_program_check(_Fake(native=8), None)
    assert verdict == {"usable": True, "reason": "ok", "programs": 33}


def test_a_check_past_its_time_limit_is_not_cached_and_names_the_builds(tmp_path,
                                                                      monkeypatch):
    _fake_probe(tmp_path, monkeypatch, """
        import time
        emit({"building": "kernels/slow.cl (T=float)"})
        time.sleep(60)
        """)
    monkeypatch.setattr(discovery, "_check_processes", lambda: 2)
    monkeypatch.setattr(discovery, "_PROGRAMS_TIMEOUT_S", 3)
    verdict = discovery._run_program_check(_Fake(native=8), None)
    assert verdict["usable"] is False and verdict["definite"] is False
    assert verdict["reason"] == ("the program check did not finish within 3 s (building "
                                 "kernels/slow.cl (T=float))")


def test_a_cpu_failing_at_16_lanes_is_tried_at_8_and_capped(tmp_path, monkeypatch):
    _fake_probe(tmp_path, monkeypatch, """
        if "--width" in argv and argv[argv.index("--width") + 1] == "8":
            emit({"usable": True, "reason": "ok", "programs": 70})
        else:
            emit({"building": "kernels/conv_blocked_cpu.cl (BW=16)"})
            emit({"usable": False, "reason": "kernels/conv_blocked_cpu.cl (BW=16) built lacks "
                                             "kernel(s) pad_input (has 0 of 9)", "programs": 5})
        """)
    c = _Fake(native=16)
    assert discovery._check_programs(c) is True
    assert c.usable and c.checked and c.vector_width == 8
    assert c.reason == ("ok at float vector width 8 (at 16: kernels/conv_blocked_cpu.cl (BW=16) "
                        "built lacks kernel(s) pad_input (has 0 of 9))")


def test_the_vector_width_cap_holds_and_a_wider_forced_width_is_refused(monkeypatch):
    dev = _dev()
    if dev.kind != "cpu":
        pytest.skip("the CPU vector width setting applies to CPU devices")
    monkeypatch.setattr(dev, "max_vector_width", 8)
    monkeypatch.delenv("CLGRAD_CPU_VECTOR_WIDTH", raising=False)
    assert dev.vector_width == min(8, dev.cl_device.native_vector_width_float)
    monkeypatch.setenv("CLGRAD_CPU_VECTOR_WIDTH", "16")
    with pytest.raises(DeviceError, match=r"CLGRAD_CPU_VECTOR_WIDTH=16: .* float vector width 8 "
                                          r"at most"):
        dev.vector_width
    monkeypatch.setenv("CLGRAD_CPU_VECTOR_WIDTH", "8")
    assert dev.vector_width == 8


def test_a_device_failing_the_check_is_never_chosen_and_named_when_asked_for(tmp_path):
    """A fresh interpreter whose probe cache says the default device passed the tiny probe but
    failed the program check (as PoCL on Zen 4): it is listed UNUSABLE with the reason, the
    default falls to another device (or says none works), and naming it raises the reason."""
    d = _dev()
    spec = f"{d.platform_index}:{d.device_index}"
    env = dict(os.environ, CLGRAD_CACHE_DIR=str(tmp_path))
    env.pop("CLGRAD_DEVICE", None)
    reason = "kernels/reduce.cl (T=double) built lacks kernel(s) reduce_runs (has 0 of 3)"
    setup = ("import json, clgrad.runtime.discovery as r\n"
             "found = r._discover()\n"
             "c = next(c for c in found if c.spec == %r)\n"
             "print(json.dumps([c.key() + ' | programs ' + r._kernels_digest()]))\n" % spec)
    out = subprocess.run([sys.executable, "-c", setup], capture_output=True, text=True, env=env,
                         timeout=600, check=True)
    key = json.loads(out.stdout)[0]
    cache = json.loads((tmp_path / "probe.json").read_text())
    cache[key] = {"usable": False, "reason": reason, "programs": 12}
    (tmp_path / "probe.json").write_text(json.dumps(cache))
    code = ("import clgrad\nfrom clgrad import runtime\n"
            "try:\n    d = clgrad.default_device(); print('default', d.platform_index, "
            "d.device_index)\nexcept runtime.DeviceError as e:\n    print('nodefault', e)\n"
            f"try:\n    runtime.get_device({spec!r})\nexcept runtime.DeviceError as e:\n"
            "    print('explicit', e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    assert f"default {spec.replace(':', ' ')}" not in r.stdout
    assert "explicit device: " in r.stdout
    assert f"is not usable: cannot build clgrad's kernels: {reason}" in r.stdout
    cli = subprocess.run([sys.executable, "-m", "clgrad", "devices"], capture_output=True,
                         text=True, env=env, timeout=600)
    line = next(ln for ln in cli.stdout.splitlines() if f" {spec} " in ln)
    assert line.endswith(f"UNUSABLE: cannot build clgrad's kernels: {reason}")
    pinned = subprocess.run([sys.executable, "-c", "import clgrad; clgrad.ones(2)"],
                            capture_output=True, text=True, timeout=600,
                            env=dict(env, CLGRAD_DEVICE=spec))
    assert pinned.returncode != 0
    assert f"CLGRAD_DEVICE={spec!r}" in pinned.stderr and reason in pinned.stderr


# -- float16 without cl_khr_fp16 (probe_fp16: NVIDIA's OpenCL) -------------------------------

def _half_device():
    """The first usable device that lists cl_khr_fp16 (Intel's CPU runtime), or skip."""
    for c in discovery._discover():
        if c.usable and "cl_khr_fp16" in c.device.extensions:
            return c
    pytest.skip("no usable device lists cl_khr_fp16")


def test_probe_fp16_verdicts():
    """Listed: True without a build. Forced on a device with half arithmetic, the kernel
    runs and every result matches NumPy's float16 (the check that admits an unlisted GPU).
    A CPU that does not list it is never built for (PoCL rejects half variables)."""
    import numpy as np
    import pyopencl as cl
    c = _half_device()
    assert _probe.probe_fp16(cl, np, c.device) == (True, "listed")
    assert _probe.probe_fp16(cl, np, c.device, force=True) == (True, "compiler")
    for d in discovery._discover():
        if d.kind == "cpu" and "cl_khr_fp16" not in d.device.extensions:
            ok, why = _probe.probe_fp16(cl, np, d.device)
            assert not ok and "not listed" in why


def test_probe_fp16_wrong_half_arithmetic_is_refused(monkeypatch):
    """A compiler whose half results are off by one unit in an exact operation is refused,
    naming the operation (the kernel's '+' made to round the wrong way)."""
    import numpy as np
    import pyopencl as cl
    c = _half_device()
    monkeypatch.setattr(_probe, "HALF_SOURCE", _probe.HALF_SOURCE.replace(
        "out[6 * i] = x + y;", "out[6 * i] = as_half((short)(as_short(x + y) + 1));"))
    ok, why = _probe.probe_fp16(cl, np, c.device, force=True)
    assert not ok and "wrong (+)" in why, why


def test_an_unlisted_probed_fp16_device_builds_half_kernels(monkeypatch):
    """Device(fp16=True) on a device whose list lacks cl_khr_fp16 has float16 and builds with
    CLGRAD_FP16_PRAGMA (kernels/common.h enables the extension): a float16 add and a sum
    there match NumPy. Without the probe's verdict the device has no float16."""
    import numpy as np
    from clgrad.runtime import device as devmod
    c = _half_device()
    real = devmod._fp_support
    monkeypatch.setattr(devmod, "_fp_support", lambda d: (real(d)[0], False))
    plain = devmod.Device(c.device, c.pi, c.di)
    assert not plain.fp16 and "-DCLGRAD_FP16_PRAGMA=1" not in plain.build_options
    with pytest.raises(TypeError, match="float16: the device .* lacks cl_khr_fp16"):
        clgrad.zeros(3, dtype=clgrad.float16, device=plain)
    dev = devmod.Device(c.device, c.pi, c.di, fp16=True)
    assert dev.fp16 and "-DCLGRAD_FP16_PRAGMA=1" in dev.build_options
    a = np.linspace(-3, 3, 1000).astype(np.float16)
    t = clgrad.tensor(a, device=dev)
    np.testing.assert_array_equal((t + t).numpy(), a + a)
    np.testing.assert_allclose(t.float().sum().item(), a.astype(np.float64).sum(), rtol=1e-6)


def test_clgrad_fp16_setting_gates_the_probed_verdict(monkeypatch):
    """CLGRAD_FP16: 'probe' (default) takes the probe's float16 verdict, 'listed' ignores it,
    anything else is a ValueError naming the variable."""
    class C:
        fp16 = True
    monkeypatch.delenv("CLGRAD_FP16", raising=False)
    assert discovery._probed_fp16(C()) is True
    monkeypatch.setenv("CLGRAD_FP16", "listed")
    assert discovery._probed_fp16(C()) is False
    monkeypatch.setenv("CLGRAD_FP16", "probe")
    assert discovery._probed_fp16(C()) is True
    C.fp16 = None  # not probed (an older cache entry)
    assert discovery._probed_fp16(C()) is False
    monkeypatch.setenv("CLGRAD_FP16", "yes")
    with pytest.raises(ValueError, match="CLGRAD_FP16: expected 'listed' or 'probe'"):
        discovery._probed_fp16(C())
