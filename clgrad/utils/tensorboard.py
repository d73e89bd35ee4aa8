"""``torch.utils.tensorboard``'s ``SummaryWriter`` over tensorboardX (``pip install
tensorboardX``, or ``pip install 'clgrad[tensorboard]'``; ``pip install tensorboard`` only to
view the files: ``tensorboard --logdir runs``).

    from clgrad.utils.tensorboard import SummaryWriter
    with SummaryWriter("runs/exp1") as w:
        for step in range(100):
            w.add_scalar("loss/train", loss, step)

tensorboardX keeps PyTorch's ``SummaryWriter`` API (the same methods, arguments and event
files); this module hands it NumPy: every clgrad Tensor (a Parameter too, one that requires
grad too) among a method's arguments, also inside a list, tuple or dict, is copied to the host
first (bfloat16 as float32, which NumPy can hold). What cannot be handed on raises:
``add_graph`` (NotImplementedError: clgrad has no tracer to record a model's graph with).

Raises ImportError naming ``pip install tensorboardX`` when tensorboardX is missing (when the
writer is made, as PyTorch's module raises when tensorboard is missing).
"""
from __future__ import annotations

import importlib
import os
import time

from clgrad import dtypes
from clgrad.tensor import Tensor

__all__ = ["SummaryWriter"]

_INSTALL = ("clgrad.utils.tensorboard.SummaryWriter writes through tensorboardX, which is not "
            "installed: pip install tensorboardX (or pip install 'clgrad[tensorboard]')")


def _host(value):
    """``value`` with every clgrad Tensor in it (in lists, tuples and dict values too) as a
    NumPy array (detached; bfloat16 as float32); anything else unchanged."""
    if isinstance(value, Tensor):
        t = value.detach()
        return (t.float() if t.dtype is dtypes.bfloat16 else t).numpy()
    if isinstance(value, (list, tuple)):
        return type(value)(_host(v) for v in value)
    if isinstance(value, dict):
        return {k: _host(v) for k, v in value.items()}
    return value


def _scalar(name: str, value):
    """A Python/NumPy number, or a one-element Tensor or array as a float; TypeError naming
    ``name`` otherwise (tensorboardX would fail on it with a bare assertion)."""
    value = _host(value)
    size = getattr(value, "size", 1)
    if isinstance(value, (str, bytes)) or size != 1:
        raise TypeError(f"{name}: expected a number or a one-element tensor, got "
                        f"{type(value).__name__}{tuple(getattr(value, 'shape', ()))}")
    return float(value.item() if hasattr(value, "item") else value)


class SummaryWriter:
    """PyTorch's ``SummaryWriter``: TensorBoard event files in ``log_dir``, written by
    tensorboardX's ``SummaryWriter`` (the ``writer`` attribute).

    Args:    log_dir (default ``runs/<date>_<time>_<host><comment>``, as PyTorch),
             comment, purge_step, max_queue, flush_secs, filename_suffix: PyTorch's, passed on
    Methods: every ``add_*`` of PyTorch's (add_scalar, add_scalars, add_histogram, add_image
             (CHW by default), add_images (NCHW), add_text, add_embedding, add_pr_curve,
             add_hparams, add_mesh, add_video, add_audio, add_figure, add_custom_scalars ...),
             ``flush``, ``close``, ``get_logdir``; clgrad Tensors converted to NumPy first
    Raises:  ImportError (naming ``pip install tensorboardX``) when tensorboardX is missing;
             TypeError for a scalar value that is not one number; NotImplementedError for
             ``add_graph``; tensorboardX's errors otherwise
    """

    def __init__(self, log_dir=None, comment: str = "", purge_step=None, max_queue: int = 10,
                 flush_secs: float = 120, filename_suffix: str = ""):
        try:
            tbx = importlib.import_module("tensorboardX")
        except ImportError as e:
            raise ImportError(_INSTALL) from e
        self._queue = dict(max_queue=max_queue, flush_secs=flush_secs,
                           filename_suffix=filename_suffix)
        self.writer = tbx.SummaryWriter(logdir=None if log_dir is None else str(log_dir),
                                        comment=comment, purge_step=purge_step, **self._queue)
        self.log_dir = self.writer.logdir

    def get_logdir(self) -> str:
        """The folder the event files go to."""
        return self.log_dir

    def add_scalar(self, tag: str, scalar_value, global_step=None, walltime=None,
                   new_style: bool = False, double_precision: bool = False):
        """One scalar (float32 ``simple_value``) at ``global_step``: a number or a one-element
        Tensor (0-dim included). ``new_style``/``double_precision`` (PyTorch's tensor-valued,
        float64 form) raise NotImplementedError: tensorboardX writes the float32 form only."""
        if new_style or double_precision:
            raise NotImplementedError("SummaryWriter.add_scalar: new_style and "
                                      "double_precision are not available through "
                                      "tensorboardX (it writes float32 simple_value scalars)")
        self.writer.add_scalar(tag, _scalar("add_scalar(): scalar_value", scalar_value),
                               _host(global_step), walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step=None,
                    walltime=None):
        """Several scalars in one chart: each key's value goes to its own run
        ``log_dir/<main_tag>_<key>`` under the tag ``main_tag`` (PyTorch's layout)."""
        if not isinstance(tag_scalar_dict, dict):
            raise TypeError(f"add_scalars(): tag_scalar_dict: expected a dict of tag -> number, "
                            f"got {type(tag_scalar_dict).__name__}")
        summary = importlib.import_module("tensorboardX.summary")
        file_writer = importlib.import_module("tensorboardX.writer").FileWriter
        walltime = time.time() if walltime is None else walltime
        runs = self.writer.all_writers  # (tensorboardX's: flushed and closed with the writer)
        for key, v in tag_scalar_dict.items():
            value = _scalar(f"add_scalars(): tag_scalar_dict[{key!r}]", v)
            folder = os.path.join(self.log_dir, f"{main_tag.replace('/', '_')}_{key}")
            if folder not in runs:  # PyTorch's layout (tensorboardX's own: main_tag/key)
                runs[folder] = file_writer(logdir=folder, **self._queue)
            runs[folder].add_summary(summary.scalar(main_tag, value), _host(global_step),
                                     walltime)

    def add_graph(self, model, input_to_model=None, verbose: bool = False, *args, **kwargs):
        """Not available: PyTorch's records the graph with its JIT tracer, which clgrad lacks.
        Raises NotImplementedError."""
        raise NotImplementedError("SummaryWriter.add_graph: clgrad has no tracer to record a "
                                  "model's graph with (PyTorch's uses torch.jit.trace); log "
                                  "an ONNX export with add_onnx_graph(path) instead")

    def flush(self):
        """Write what was added to disk."""
        self.writer.flush()

    def close(self):
        """Flush and close the event files."""
        self.writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getattr__(self, name):
        """tensorboardX's method ``name``, its clgrad Tensor arguments as NumPy arrays."""
        if name == "writer":  # (not made: __init__ raised)
            raise AttributeError(name)
        method = getattr(self.writer, name)
        if not name.startswith("add_") or not callable(method):
            return method

        def call(*args, **kwargs):
            return method(*_host(args), **_host(kwargs))
        call.__name__ = call.__qualname__ = name
        call.__doc__ = method.__doc__
        return call
