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
``CLGRAD_DEBUG``'s handler), else straight to stderr.
"""
from __future__ import annotations

import logging
import sys

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
