"""Command line: ``python -m clgrad devices | info | train``."""
from __future__ import annotations

import argparse
import sys


def _devices(args) -> int:
    import clgrad
    rows = clgrad.devices()
    if not rows:
        print("no OpenCL device found (pip install 'pyopencl[pocl]' for the CPU device)")
        return 1
    default = clgrad.default_device()
    for r in rows:
        mark = "*" if r["index"] == f"{default.platform_index}:{default.device_index}" else " "
        print(f"{mark} {r['index']:>4}  {r['type']:<5} {r['name']}  [{r['platform']}]  "
              f"CUs={r['compute_units']}  mem={r['global_mem_bytes'] / 2**30:.1f} GiB  "
              f"fp64={'yes' if r['fp64'] else 'no'}  fp16={'yes' if r['fp16'] else 'no'}")
    print("(* = default; choose with CLGRAD_DEVICE=cpu|gpu|P:D|name)")
    return 0


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
