"""The environment of a child Python that must import this checkout's clgrad."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def checkout_env(**extra) -> dict:
    """os.environ with this checkout first on PYTHONPATH, then the caller's PYTHONPATH (where
    pyopencl may live, as on the GPU machine's wheel folder), plus ``extra``."""
    path = os.pathsep.join([str(ROOT)] + [p for p in os.environ.get(
        "PYTHONPATH", "").split(os.pathsep) if p])
    return dict(os.environ, PYTHONPATH=path, **extra)


def run_as_gpu(code: str, as_gpu: str = "pocl", timeout: int = 600,
               **extra) -> subprocess.CompletedProcess:
    """Run ``code`` in a child Python whose runtime treats the devices of platform ``as_gpu``
    as GPUs (CLGRAD_TEST_AS_GPU, tests/conftest.py), with the variables ``extra`` set
    (CLGRAD_DEVICE unset unless among them); asserts exit 0."""
    env = checkout_env(CLGRAD_TEST_AS_GPU=as_gpu)
    env.pop("CLGRAD_DEVICE", None)
    env.update(extra)
    pre = ("import os, sys\n"
           "sys.path.insert(0, os.path.join(os.environ['PYTHONPATH'].split(os.pathsep)[0], "
           "'tests'))\n"
           "import conftest  # noqa: F401  (CLGRAD_TEST_AS_GPU)\n")
    r = subprocess.run([sys.executable, "-c", pre + code], capture_output=True, text=True,
                       env=env, timeout=timeout, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    return r
