"""Command line: ``python -m clgrad devices | info | train``."""
from __future__ import annotations

import argparse
import sys


def _devices(args) -> int:
    from clgrad import runtime
    rows = runtime.devices()
    for note in runtime.runtime_notes():
        print(f"note: {note}")
    if not rows:
        print("no OpenCL device found: pip install intel-opencl-rt intel-cmplr-lib-rt (a CPU "
              "runtime for any x86-64 CPU) or pocl-binary-distribution, or install a GPU driver")
        return 1
    try:
        default = runtime.default_device()
        mark_at = f"{default.platform_index}:{default.device_index}"
    except runtime.DeviceError as e:
        default, mark_at = None, None
        print(f"clgrad: {e}", file=sys.stderr)
    for r in rows:
        mark = "*" if r["index"] == mark_at else " "
        state = "usable" if r["usable"] else f"UNUSABLE: {r['reason']}"
        print(f"{mark} {r['index']:>4}  {r['type']:<5} {r['name']}  [{r['platform']} "
              f"{r['driver']}]  CUs={r['compute_units']}  "
              f"mem={r['global_mem_bytes'] / 2**30:.1f} GiB  "
              f"fp64={'yes' if r['fp64'] else 'no'}  fp16={'yes' if r['fp16'] else 'no'}  "
              f"{state}")
    print("(* = default; choose with CLGRAD_DEVICE=cpu|gpu|cuda:N|P:D|intel|pocl|name)")
    return 0 if default is not None else 2


def _info(args) -> int:
    import clgrad
    d = clgrad.default_device()
    print(f"clgrad {clgrad.__version__} on {d.name} ({d.kind}), fp64={d.fp64}, "
          f"max work-group {d.max_work_group_size}, local mem {d.local_mem_size} B")
    return 0


def _train(args, rest) -> int:
    from clgrad.train import main as train_main
    return train_main(rest, prog="clgrad train")


def main(argv=None) -> int:
    """Entry point of ``python -m clgrad`` and the ``clgrad`` script."""
    p = argparse.ArgumentParser(prog="clgrad", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("devices", help="list OpenCL devices").set_defaults(fn=_devices)
    sub.add_parser("info", help="show the default device").set_defaults(fn=_info)
    sub.add_parser("train", add_help=False,
                   help="train the grouped CNN on digits or MNIST (train --help for options)"
                   ).set_defaults(fn=_train)
    args, rest = p.parse_known_args(argv)
    if args.cmd != "train" and rest:
        p.error(f"unrecognized arguments: {' '.join(rest)}")
    from clgrad.errors import DeviceError
    try:
        return args.fn(args, rest) if args.cmd == "train" else args.fn(args)
    except DeviceError as e:
        print(f"clgrad: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
