"""``torch.multiprocessing.spawn``: start ``nprocs`` processes running ``fn(i, *args)``; when one
fails, the others are terminated and the failure is raised in the parent with the child's
traceback (PyTorch's ProcessRaisedException / ProcessExitedException)."""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import signal
import traceback

__all__ = ["spawn", "start_processes", "ProcessContext", "ProcessException",
           "ProcessRaisedException", "ProcessExitedException"]


class ProcessException(Exception):
    """A process of ``spawn`` failed: ``error_index`` (its i) and ``error_pid``."""

    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg, self.error_index, self.error_pid = msg, error_index, error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A process of ``spawn`` raised; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A process of ``spawn`` exited with a non-zero code or was killed by a signal."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code,
                            self.signal_name)


def _wrap(fn, i, args, error_queue):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent terminated this process
    except Exception:  # noqa: BLE001  (sent to the parent, which raises it)
        error_queue.put(traceback.format_exc())
        raise SystemExit(1) from None


class ProcessContext:
    """The processes of one ``spawn(..., join=False)``: ``processes``, ``pids()``, ``join``."""

    def __init__(self, processes, error_queues):
        self.processes, self.error_queues = processes, error_queues
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list:
        """The process ids."""
        return [int(p.pid) for p in self.processes]

    def join(self, timeout=None) -> bool:
        """Wait up to ``timeout`` seconds (None: until one ends) for the processes; True once
        all ended successfully.

        Raises:  ProcessRaisedException (the child's traceback) or ProcessExitedException
                 (its exit code or signal) for the first process that failed; the others
                 are terminated first
        """
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for sentinel in ready:
            i = self.sentinels.pop(sentinel)
            p = self.processes[i]
            p.join()
            if p.exitcode != 0 and failed is None:
                failed = i
        if failed is None:
            return not self.sentinels
        for p in self.processes:
            if p.is_alive():
                p.terminate()
            p.join()
        p = self.processes[failed]
        q = self.error_queues[failed]
        if not q.empty():
            raise ProcessRaisedException(
                f"\n\n-- Process {failed} terminated with the following error:\n{q.get()}",
                failed, p.pid)
        if p.exitcode < 0:
            name = signal.Signals(-p.exitcode).name
            raise ProcessExitedException(f"process {failed} terminated with signal {name}",
                                         failed, p.pid, p.exitcode, name)
        raise ProcessExitedException(f"process {failed} terminated with exit code "
                                     f"{p.exitcode}", failed, p.pid, p.exitcode)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start ``nprocs`` processes of ``start_method`` running ``fn(i, *args)``; with ``join``
    wait for all (returns None), else return their ProcessContext. See ``spawn``."""
    ctx = multiprocessing.get_context(start_method)
    processes, queues = [], []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        p = ctx.Process(target=_wrap, args=(fn, i, args, q), daemon=daemon)
        p.start()
        processes.append(p)
        queues.append(q)
    context = ProcessContext(processes, queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run ``fn(i, *args)`` in ``nprocs`` new processes, i = 0 .. nprocs - 1 (PyTorch's
    torch.multiprocessing.spawn). ``fn`` must be importable (defined at a module's top level).
    Tensors in ``args`` are shared (see clgrad.multiprocessing).

    Returns: None with ``join`` (after every process ended), else a ProcessContext
    Raises:  ProcessRaisedException / ProcessExitedException when a process fails (the others
             are terminated); RuntimeError for a GPU tensor in ``args``
    """
    return start_processes(fn, args, nprocs, join, daemon, start_method)
