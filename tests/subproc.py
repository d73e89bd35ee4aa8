"""The environment of a child Python that must import this checkout's clgrad."""
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def checkout_env(**extra) -> dict:
    """os.environ with this checkout first on PYTHONPATH, then the caller's PYTHONPATH (where
    pyopencl may live, as on the GPU machine's wheel folder), plus ``extra``."""
    path = os.pathsep.join([str(ROOT)] + [p for p in os.environ.get(
        "PYTHONPATH", "").split(os.pathsep) if p])
    return dict(os.environ, PYTHONPATH=path, **extra)
