"""Command line: ``python -m clgrad devices | info``."""
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


def main(argv=None) -> int:
    """Entry point of ``python -m clgrad`` and the ``clgrad`` script."""
    p = argparse.ArgumentParser(prog="clgrad", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("devices", help="list OpenCL devices").set_defaults(fn=_devices)
    sub.add_parser("info", help="show the default device").set_defaults(fn=_info)
    args = p.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
