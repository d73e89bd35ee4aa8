"""Replace identical copies of a shared library in a virtual environment by hard links.

    python -m clgrad dedupe-libs VENV       (make train / make test run it after installing)

Wheels cannot hold symbolic links, so pip writes ``libX.so``, ``libX.so.2`` and ``libX.so.2.20``
as three full copies when a wheel lists them: Intel's OpenCL CPU runtime (libintelocl,
libcommon_clang: about 290 MB twice), tbb and tcmlib. This finds files under ``VENV/lib`` whose
names are ``<stem>.so`` and ``<stem>.so.<version>`` in one folder with the same size and the
same bytes, and hard-links the copies to one of them: same names, same contents (the loader and
pip's RECORD hashes see no difference, ``pip uninstall`` still removes every name), one copy on
disk. Prints the bytes saved. Files on another file system, or not writable, are left alone.
"""
from __future__ import annotations

import filecmp
import os
import re
import sys
from pathlib import Path

_SO = re.compile(r"^(?P<stem>.+?\.so)(?:\.[0-9][0-9.]*)?$")


def dedupe(root: Path) -> int:
    """Hard-link identical same-folder copies of ``<stem>.so[.version]`` under ``root``;
    returns the bytes saved."""
    saved = 0
    for folder, _, files in os.walk(root):
        groups: dict = {}
        for name in files:
            m = _SO.match(name)
            path = Path(folder, name)
            if m and not path.is_symlink():
                groups.setdefault(m["stem"], []).append(path)
        for paths in groups.values():
            keep = min(paths, key=lambda p: len(p.name))  # the plain libX.so
            st = keep.stat()
            for p in paths:
                other = p.stat()
                if p == keep or other.st_ino == st.st_ino or other.st_size != st.st_size \
                        or other.st_dev != st.st_dev or not filecmp.cmp(keep, p, shallow=False):
                    continue
                tmp = p.with_name(f".{p.name}.dedupe")
                try:
                    os.link(keep, tmp)
                    os.replace(tmp, p)
                except OSError:
                    tmp.unlink(missing_ok=True)
                    continue
                saved += other.st_size
    return saved


def main(venv: str) -> int:
    """``python -m clgrad dedupe-libs VENV``: dedupe ``VENV/lib``, print the MiB saved; 2 when
    VENV has no lib/ folder."""
    if not (Path(venv) / "lib").is_dir():
        print(f"clgrad dedupe-libs: expected a virtual environment (a folder with lib/), got "
              f"{venv!r}", file=sys.stderr)
        return 2
    n = dedupe(Path(venv) / "lib")
    print(f"dedupe-libs: {n / 2**20:.0f} MiB of duplicate shared-library copies hard-linked")
    return 0
