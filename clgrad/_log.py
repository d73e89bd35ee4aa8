"""clgrad's logger, the ``CLGRAD_DEBUG`` switch and the few lines every user should see.

``logging.getLogger("clgrad")`` carries, at DEBUG level: the OpenCL platforms and devices found,
each probe verdict (cached or measured), the choice of the default device and why, every
OpenCL program build (file, defines, device, seconds) and conv2d's 'auto' choices (once per
pass and problem shape). Configure it as any logger, or set ``CLGRAD_DEBUG=1`` (as tinygrad's
``DEBUG`` or JAX's ``JAX_LOG_COMPILES``): clgrad then attaches a stderr handler at DEBUG level
itself, when it is imported.

Notices (``notice``): one line on stderr for the waits a newcomer would otherwise take for a
hang, the first probe of the OpenCL devices and the first build of the kernels on a device
(``clgrad: building OpenCL kernels for <device> (first run only; cached in <folder>)``). They
go to the ``clgrad`` logger at INFO level when logging is configured (the application's, or
``CLGRAD_DEBUG``'s handler), else straight to stderr. After the build notice, a terminal shows
the builds' progress every 3 s (``BuildProgress``: ``clgrad: built 12 of ~24 OpenCL programs,
9 s``).
"""
from __future__ import annotations

import logging
import sys
import time

logger = logging.getLogger("clgrad")

_HANDLER: list = []


def debug_requested(environ=None) -> bool:
    """True when ``CLGRAD_DEBUG`` asks for the DEBUG log: any value but '', '0', 'false',
    'no' and 'off' (case-insensitive); read through clgrad.settings."""
    from clgrad import settings
    value = (settings.getenv("CLGRAD_DEBUG") if environ is None
             else environ.get("CLGRAD_DEBUG", ""))
    return value.strip().lower() not in ("", "0", "false", "no", "off")


def configure() -> None:
    """Attach a stderr handler at DEBUG level to the ``clgrad`` logger when ``CLGRAD_DEBUG``
    asks for it (once per process; called when clgrad.runtime is imported)."""
    if _HANDLER or not debug_requested():
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("clgrad %(levelname)s %(relativeCreated).0f ms: "
                                           "%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    _HANDLER.append(handler)


def notice(message: str) -> None:
    """Show ``message`` (one line) to the user: through the ``clgrad`` logger at INFO level
    when some handler is configured for it, else as ``clgrad: <message>`` on stderr."""
    if logger.hasHandlers():
        logger.info(message)
    else:
        print(f"clgrad: {message}", file=sys.stderr, flush=True)


# How many OpenCL programs a first run is expected to build (the training job sets it: its
# first epoch and evaluation build ~24); None shows the count alone.
expected_builds: int | None = None


class BuildProgress:
    """The first run's builds, counted on stderr when it is a terminal and no logging handler
    takes clgrad's lines: every ``every`` seconds of building, one line ``clgrad: built 12 of
    ~24 OpenCL programs, 9 s`` (it first clears the line a progress bar may be drawing; the bar
    redraws below it). Elsewhere (a log file, a pipe, pytest) it writes nothing: the DEBUG log
    has each build. ``stream`` is for tests."""

    def __init__(self, stream=None, every: float = 3.0):
        self.stream = stream if stream is not None else sys.stderr
        self.every, self.count, self.start = every, 0, time.perf_counter()
        self.shown = self.start

    def built(self) -> None:
        """One more program built: a line when ``every`` seconds passed since the last one."""
        self.count += 1
        now = time.perf_counter()
        isatty = getattr(self.stream, "isatty", None)
        if now - self.shown < self.every or logger.hasHandlers() or not (isatty and isatty()):
            return
        self.shown = now
        n = expected_builds
        of = f" of ~{n}" if n and self.count <= n else ""
        self.stream.write(f"\r\x1b[Kclgrad: built {self.count}{of} OpenCL programs, "
                          f"{now - self.start:.0f} s\n")
        self.stream.flush()
