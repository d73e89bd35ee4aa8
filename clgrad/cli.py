"""Command line of clgrad (python -m clgrad COMMAND, or the clgrad script).

  devices             list the OpenCL devices (* marks the default), probing each once
  info                the default device: name, platform (Intel's CPU runtime or PoCL ...)
  train [OPTIONS]     train a small CNN on digits or MNIST (train --help for its options)
  dedupe-libs VENV    hard-link the duplicate shared-library copies pip wrote into VENV
  --version           clgrad's version, with Python's, pyopencl's and numpy's

The default device: CLGRAD_DEVICE if set (cpu, gpu, cuda, cuda:N, P:D as listed by devices,
intel, pocl, or a substring of a device name), else a GPU when there is one, else the CPU.
CLGRAD_DEBUG=1 shows the clgrad logger's DEBUG lines (devices found, probe verdicts, the device
chosen, each kernel build, conv2d's choices) on stderr.
"""
from __future__ import annotations

import argparse
import sys


def _devices(args) -> int:
    from clgrad import runtime
    rows = runtime.devices()
    for note in runtime.runtime_notes():
        print(f"note: {note}")
    if not rows:
        from clgrad.errors import CPU_RUNTIME_HINT
        print(f"no OpenCL device found: {CPU_RUNTIME_HINT}, or install a GPU driver "
              f"(README \"Devices\")")
        return 1
    try:
        default = runtime.default_device()
        mark_at = f"{default.platform_index}:{default.device_index}"
    except runtime.DeviceError as e:
        default, mark_at = None, None
        print(f"clgrad: {e}", file=sys.stderr)
    for r in rows:
        mark = "*" if r["index"] == mark_at else " "
        state = ("usable" + ("" if r["reason"] == "ok" else f" ({r['reason']})")
                 if r["usable"] else f"UNUSABLE: {r['reason']}")
        print(f"{mark} {r['index']:>4}  {r['type']:<5} {r['name']}  [{r['platform']} "
              f"{r['driver']}]  CUs={r['compute_units']}  "
              f"mem={r['global_mem_bytes'] / 2**30:.1f} GiB  "
              f"fp64={'yes' if r['fp64'] else 'no'}  fp16={'yes' if r['fp16'] else 'no'}  "
              f"{state}")
    print("(* = default; choose with CLGRAD_DEVICE=cpu|gpu|cuda:N|P:D|intel|pocl|name)")
    print("GPU vendors' OpenCL libraries: " + "; ".join(
        f"{vendor} {state}" for vendor, state in runtime.discovery.vendor_libraries().items()))
    return 0 if default is not None else 2


def _info(args) -> int:
    import clgrad
    d = clgrad.default_device()
    print(f"clgrad {clgrad.__version__} on {d.name} [{d.platform}] ({d.kind}), fp64={d.fp64}, "
          f"max work-group {d.max_work_group_size}, local mem {d.local_mem_size} B")
    return 0


def _train(args, rest) -> int:
    from clgrad.train import main as train_main
    return train_main(rest, prog="clgrad train")


def _dedupe_libs(args) -> int:
    from clgrad import _dedupe_libs
    return _dedupe_libs.main(args.venv)


def _version() -> str:
    """'clgrad X.Y.Z (Python A.B.C, pyopencl V, numpy W)', without touching any device."""
    import platform

    import numpy
    import pyopencl

    import clgrad
    return (f"clgrad {clgrad.__version__} (Python {platform.python_version()}, pyopencl "
            f"{pyopencl.VERSION_TEXT}, numpy {numpy.__version__})")


def main(argv=None) -> int:
    """Entry point of ``python -m clgrad`` and the ``clgrad`` script."""
    p = argparse.ArgumentParser(prog="clgrad", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="store_true", help="show the version and exit")
    sub = p.add_subparsers(dest="cmd")
    sub.add_parser("devices", help="list OpenCL devices").set_defaults(fn=_devices)
    sub.add_parser("info", help="show the default device").set_defaults(fn=_info)
    dd = sub.add_parser("dedupe-libs", help="hard-link the copies pip makes of a wheel's "
                        "shared libraries (about 300 MB of Intel's CPU runtime)")
    dd.add_argument("venv", metavar="VENV", help="the virtual environment (a folder with lib/)")
    dd.set_defaults(fn=_dedupe_libs)
    sub.add_parser("train", add_help=False,
                   help="train the grouped CNN on digits or MNIST (train --help for options)"
                   ).set_defaults(fn=_train)
    args, rest = p.parse_known_args(argv)
    if args.version:
        print(_version())
        return 0
    if args.cmd is None:
        p.error("expected a command: devices, info, train or dedupe-libs (or --version)")
    if args.cmd != "train" and rest:
        p.error(f"unrecognized arguments: {' '.join(rest)}")
    from clgrad.errors import DeviceError
    try:
        return args.fn(args, rest) if args.cmd == "train" else args.fn(args)
    except DeviceError as e:
        print(f"clgrad: {e}", file=sys.stderr)
        return 2
    except ValueError as e:  # a CLGRAD_* setting's value (clgrad/settings.py): one line
        if not str(e).startswith("CLGRAD_"):
            raise
        print(f"clgrad: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
