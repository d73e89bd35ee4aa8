"""Functions that tests/test_multiprocessing.py runs in child processes (a spawned child
imports them from here, so they live in a plain module, not in the test file)."""
import clgrad


def add_rows(i, x, view):
    """Process i adds 10 * (i + 1) to row i of x, and process 0 also doubles ``view``;
    process 1 of a spawn with ``fail`` raises."""
    x[i].add_(10.0 * (i + 1))
    if i == 0:
        view.mul_(2)


def add_then_fail(i, x):
    """Process 0 adds 1 to x; process 1 raises ValueError."""
    if i == 1:
        raise ValueError("child 1 failed on purpose")
    x.add_(1.0)


def queue_round_trip(inbox, outbox):
    """Take a tensor from ``inbox``, negate it in place, send back a new one made here (and
    the same tensor again, which must arrive as the parent's own storage); stay alive until
    the parent says it has both (a sender must outlive the transfer of its descriptors, as in
    PyTorch)."""
    t = inbox.get()
    t.neg_()
    outbox.put(clgrad.arange(3.0, dtype=clgrad.float64) * 0.5)
    outbox.put(t)
    inbox.get()


def touch_in_fork(x, report):
    """In a forked child: report what touching a tensor does."""
    try:
        x.add_(1.0)
        report.put("no error")
    except Exception as e:  # noqa: BLE001  (reported to the parent)
        report.put(f"{type(e).__name__}: {e}")


def scaled(t, factor):
    """A new tensor: ``t * factor`` (a Pool task of tests/test_pickle_tensor.py)."""
    return t * factor
