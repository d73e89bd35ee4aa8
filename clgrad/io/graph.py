"""A Module that runs a network given as steps over named blobs (Caffe's and ONNX's model).

    g = Graph(["data"], label="layer")
    g.add_step("conv1", nn.Conv2d(3, 8, 3), ["data"], ["conv1"], kind="Convolution")
    g.add_step("relu1", nn.ReLU(), ["conv1"], ["conv1"], kind="ReLU")  # in place: name rebound
    g(x)                          -> the output (a tuple when there are several)
    g.run({"data": x})            -> {blob name: tensor} for every blob

Each step's module is a child named after its layer (``state_dict`` keys ``conv1.weight``);
a blob name that a step writes again (Caffe's in-place layers) is simply rebound, so no tensor
is modified in place and autograd sees an ordinary graph. Steps with several bottoms (Concat,
Eltwise) make non-sequential nets. Graph constants (ONNX initializers that no step owns) are
buffers, or Parameters when they are floating point.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from clgrad.creation import from_numpy
from clgrad.nn.module import Module, Parameter
from clgrad.tensor import Tensor

__all__ = ["Graph"]

_Step = namedtuple("_Step", ["key", "where", "bottoms", "tops"])
_RENAMED = (ValueError, RuntimeError, TypeError, IndexError, KeyError, NotImplementedError)


class Graph(Module):
    """Steps over named blobs; see the module docstring.

    inputs:  blob names bound to forward's positional (or keyword) arguments, in order.
    outputs: blob names forward returns; None: Caffe's rule, every blob that no later step
             reads (in-place rewrites count as the same blob).
    label:   how errors name a step: "layer" gives ``layer 'conv2' (Convolution): ...``.
    input_shapes: {input name: shape} the net was described with (for callers that prepare
             inputs, e.g. an image classifier); kept as the ``input_shapes`` attribute.
    input_dtypes: {input name: NumPy dtype name} the net declares (ONNX); a NumPy array fed to
             such an input becomes a tensor of that dtype, any other one a float32 tensor.
    """

    def __init__(self, inputs, outputs=None, label: str = "step", input_shapes=None,
                 input_dtypes=None):
        super().__init__()
        self._inputs, self._label = list(inputs), label
        self.input_shapes = dict(input_shapes or {})
        self.input_dtypes = {k: v for k, v in (input_dtypes or {}).items() if v}
        self._declared_outputs = None if outputs is None else list(outputs)
        self._steps: list[_Step] = []
        self._constants: dict[str, str] = {}  # blob name -> attribute name
        self._defined = set(self._inputs)

    @property
    def input_names(self) -> list[str]:
        """The names of the graph's inputs, in the order forward takes them positionally."""
        return list(self._inputs)

    @property
    def output_names(self) -> list[str]:
        """The output blob names: the declared ones (ONNX), else every blob that no step consumes,
        inputs included, in order of definition (Caffe's rule).
        """
        if self._declared_outputs is not None:
            return list(self._declared_outputs)
        available: dict[str, None] = dict.fromkeys(self._inputs)  # ordered set
        for step in self._steps:
            for b in step.bottoms:
                available.pop(b, None)
            available.update(dict.fromkeys(step.tops))
        return list(available)

    def add_step(self, name: str, module: Module, bottoms, tops, kind: str | None = None) -> str:
        """Append ``module`` as a step reading ``bottoms`` and writing ``tops``.

        The module is registered as a child called ``name`` ('.' becomes '_'; a repeated name
        gets a suffix); returns that attribute name.
        Raises ValueError naming the step for a bottom that no input or earlier step defines.
        """
        where = f"{self._label} '{name}' ({kind or type(module).__name__})"
        missing = [b for b in bottoms if b not in self._defined]
        if missing:
            raise ValueError(f"{where}: expected bottoms produced by an input or an earlier "
                             f"{self._label}, got undefined {missing}")
        key = self._free_name(name)
        self.add_module(key, module)
        self._steps.append(_Step(key, where, tuple(bottoms), tuple(tops)))
        self._defined.update(tops)
        return key

    def add_constant(self, blob: str, value) -> str:
        """Define blob ``blob`` as a constant (NumPy array or Tensor): a Parameter when it is
        floating point, else a buffer. Returns its attribute name."""
        t = value if isinstance(value, Tensor) else from_numpy(np.ascontiguousarray(value))
        key = self._free_name(blob)
        if t.dtype.is_floating_point:
            self.register_parameter(key, Parameter(t))
        else:
            self.register_buffer(key, t)
        self._constants[blob] = key
        self._defined.add(blob)
        return key

    def has_blob(self, blob: str) -> bool:
        """True when an input, a constant or an earlier step defines ``blob``."""
        return blob in self._defined

    def forward(self, *args, **kwargs):
        """Run the net on its inputs (tensors or NumPy arrays, positional in ``input_names``
        order, or by name); return the output, or a tuple of the ``output_names`` blobs."""
        if len(args) > len(self._inputs):
            raise TypeError(f"Graph: expected at most {len(self._inputs)} positional inputs "
                            f"{self._inputs}, got {len(args)}")
        inputs = dict(zip(self._inputs, args))
        for name, value in kwargs.items():
            if name in inputs:
                raise TypeError(f"Graph: input {name!r} given twice")
            inputs[name] = value
        names = self.output_names
        values = self.run(inputs, names)
        return values[names[0]] if len(names) == 1 else tuple(values[n] for n in names)

    def run(self, inputs: dict, outputs=None) -> dict:
        """Run every step; return {blob name: tensor} for ``outputs`` (default: every blob,
        with the last value of a blob rewritten in place).

        Raises the error of a failing step with the step named in front, e.g.
        ``RuntimeError: layer 'conv2' (Convolution): conv2d: ...``.
        """
        if set(inputs) != set(self._inputs):
            raise ValueError(f"Graph: expected inputs {self._inputs}, got {sorted(inputs)}")
        blobs = {b: getattr(self, key) for b, key in self._constants.items()}
        for name, value in inputs.items():
            if isinstance(value, np.ndarray):
                dtype = self.input_dtypes.get(name, np.float32)
                value = from_numpy(np.ascontiguousarray(value, dtype=dtype))
            blobs[name] = value
        for step in self._steps:
            try:
                y = self._modules[step.key](*(blobs[b] for b in step.bottoms))
            except _RENAMED as e:
                if type(e) not in _RENAMED:
                    raise
                raise type(e)(f"{step.where}: {e.args[0] if e.args else e}") from e
            ys = y if isinstance(y, tuple) else (y,)
            if len(ys) != len(step.tops):
                raise RuntimeError(f"{step.where}: expected {len(step.tops)} outputs "
                                   f"{list(step.tops)}, got {len(ys)}")
            blobs.update(zip(step.tops, ys))
        if outputs is None:
            return blobs
        unknown = [n for n in outputs if n not in blobs]
        if unknown:
            raise KeyError(f"Graph: expected output blobs of this net, got unknown {unknown}")
        return {n: blobs[n] for n in outputs}

    def extra_repr(self) -> str:
        """'inputs=[...], outputs=[...]'."""
        return f"inputs={self._inputs}, outputs={self.output_names}"

    def _free_name(self, name: str) -> str:
        base = name.replace(".", "_") or "_"
        key, n = base, 1
        while (key in self.__dict__ or key in self._modules or key in self._parameters or
               key in self._buffers or hasattr(type(self), key)):
            key, n = f"{base}_{n}", n + 1
        return key
