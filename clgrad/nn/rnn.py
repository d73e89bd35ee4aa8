"""Recurrent layers (PyTorch's torch.nn.RNN, LSTM, GRU, RNNCell, LSTMCell, GRUCell): PyTorch's
arguments, parameter names and shapes (so state dicts load both ways), gate order and
equations. Built from linear, sigmoid, tanh, chunk and cat, so autograd flows through every
step; the input-to-hidden products of a whole layer are one GEMM before the time loop.

Equations (PyTorch's; gates in this order along the rows of weight_ih/weight_hh):
    RNN   h' = tanh|relu(x W_ih^T + b_ih + h W_hh^T + b_hh)
    LSTM  i, f, g, o = chunks of (x W_ih^T + b_ih + h W_hh^T + b_hh); c' = s(f) c + s(i) tanh(g);
          h' = s(o) tanh(c'), then h' W_hr^T with proj_size
    GRU   r, z, n: r = s(x_r + h_r), z = s(x_z + h_z), n = tanh(x_n + r h_n) (x_* and h_* the
          chunks of x W_ih^T + b_ih and h W_hh^T + b_hh); h' = (1 - z) n + z h
Packed sequences (clgrad.nn.utils.rnn.PackedSequence) run step t on the first batch_sizes[t]
sequences; the others keep their hidden state.
"""
from __future__ import annotations

import math
import numbers
import warnings

from clgrad.creation import empty, zeros
from clgrad.nn import functional as F
from clgrad.nn import init
from clgrad.nn.module import Module, Parameter
from clgrad.nn.utils.rnn import PackedSequence
from clgrad.ops.index import cat, index_select, stack
from clgrad.ops._util import same_device
from clgrad.ops.matmul import linear
from clgrad.tensor import Tensor

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _cell(mode: str, xw: Tensor, h: Tensor, c, w_hh, b_hh, w_hr):
    """One step: xw = x W_ih^T + b_ih (N, G), h (N, Hr), c (N, H) or None -> (h', c')."""
    hw = linear(h, w_hh, b_hh)
    if mode == "LSTM":
        i, f, g, o = (xw + hw).chunk(4, 1)
        c2 = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h2 = o.sigmoid() * c2.tanh()
        return (h2 if w_hr is None else linear(h2, w_hr)), c2
    if mode == "GRU":
        xr, xz, xn = xw.chunk(3, 1)
        hr, hz, hn = hw.chunk(3, 1)
        z = (xz + hz).sigmoid()
        n = (xn + (xr + hr).sigmoid() * hn).tanh()
        return n + z * (h - n), None
    pre = xw + hw
    return (pre.tanh() if mode == "RNN_TANH" else pre.relu()), None


def _direction(mode, xw, sizes, h, c, w_hh, b_hh, w_hr, reverse):
    """Run one direction of one layer over packed steps: xw (sum(sizes), G) the projected
    inputs, step t the next sizes[t] rows; h (N, Hr), c (N, H) or None. Returns the outputs
    (sum(sizes), Hr) in step order and the final h, c (N, ...)."""
    offsets = [0]
    for s in sizes[:-1]:
        offsets.append(offsets[-1] + s)
    n = h.shape[0]
    outs = [None] * len(sizes)
    for t in (reversed(range(len(sizes))) if reverse else range(len(sizes))):
        bs = sizes[t]
        part = bs < n
        h2, c2 = _cell(mode, xw.narrow(0, offsets[t], bs), h.narrow(0, 0, bs) if part else h,
                       None if c is None else (c.narrow(0, 0, bs) if part else c),
                       w_hh, b_hh, w_hr)
        outs[t] = h2
        if part:   # the sequences that ended (or, reversed, not begun) keep their state
            h = cat([h2, h.narrow(0, bs, n - bs)], 0)
            c = None if c is None else cat([c2, c.narrow(0, bs, n - bs)], 0)
        else:
            h, c = h2, c2
    return (cat(outs, 0) if len(outs) > 1 else outs[0]), h, c


class RNNBase(Module):
    """The recurrent layers' common part (see RNN, LSTM, GRU and the module docstring).

    Parameters, per layer k and direction (suffix '' or '_reverse'), in PyTorch's order:
        weight_ih_l{k} (G*H, in_k), weight_hh_l{k} (G*H, Hr), bias_ih_l{k} (G*H,),
        bias_hh_l{k} (G*H,), weight_hr_l{k} (proj_size, H) with proj_size;
    G = 4 (LSTM), 3 (GRU), 1 (RNN); Hr = proj_size or hidden_size; in_0 = input_size, else
    Hr * directions. Init: every parameter U(-1/sqrt(H), 1/sqrt(H)).
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None, dtype=None):
        super().__init__()
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + str(mode))
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or \
                not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        for name, value in (("bias", bias), ("batch_first", batch_first)):
            if not isinstance(value, bool):
                raise TypeError(f"{name} should be of type bool, got: {type(value).__name__}")
        for name, value in (("input_size", input_size), ("hidden_size", hidden_size)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
            if value <= 0:
                raise ValueError(f"{name} must be greater than zero")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError(f"num_layers must be greater than zero, got {num_layers!r}")
        if not isinstance(proj_size, int) or proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, \
            proj_size
        dirs = 2 if bidirectional else 1
        gate, real = _GATES[mode] * hidden_size, proj_size or hidden_size
        kw = {"dtype": dtype, "device": device}
        self._flat_weights_names, self._all_weights = [], []
        for layer in range(num_layers):
            for d in range(dirs):
                width = input_size if layer == 0 else real * dirs
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                shapes = [("weight_ih", (gate, width)), ("weight_hh", (gate, real))]
                if bias:
                    shapes += [("bias_ih", (gate,)), ("bias_hh", (gate,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                names = [name + sfx for name, _ in shapes]
                for name, (_, shape) in zip(names, shapes):
                    setattr(self, name, Parameter(empty(*shape, **kw)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self):
        """Every parameter U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def flatten_parameters(self):
        """A no-op (PyTorch compacts cuDNN's weight buffer; clgrad keeps no such buffer)."""

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters per layer and direction, as PyTorch's ``all_weights``."""
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def _weights(self, layer, d):
        names = self._all_weights[layer * (2 if self.bidirectional else 1) + d]
        p = {n.split("_l")[0]: getattr(self, n) for n in names}
        return p["weight_ih"], p.get("bias_ih"), p["weight_hh"], p.get("bias_hh"), \
            p.get("weight_hr")

    def _expected_hidden(self, batch):
        dirs = 2 if self.bidirectional else 1
        return (self.num_layers * dirs, batch, self.proj_size or self.hidden_size)

    def _check_input(self, x: Tensor, packed: bool):
        w = self.weight_ih_l0
        if x.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({x.dtype}) does not match weight dtype "
                             f"({w.dtype}). Convert input: input.to({w.dtype}), or convert "
                             f"model: model.to({x.dtype})")
        want = 2 if packed else 3
        if x.ndim != want:
            raise RuntimeError(f"input must have {want} dimensions, got {x.ndim}")
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {x.shape[-1]}")

    def _run(self, data: Tensor, sizes, h0: Tensor, c0):
        """All layers over packed rows: data (sum(sizes), in), h0 (layers*dirs, N, Hr),
        c0 like h0 with H or None -> (out (sum(sizes), Hr*dirs), h_n, c_n or None)."""
        dirs = 2 if self.bidirectional else 1
        x, hs, cs = data, [], []
        for layer in range(self.num_layers):
            if layer and self.dropout and self.training:
                x = F.dropout(x, self.dropout, True)
            outs = []
            for d in range(dirs):
                w_ih, b_ih, w_hh, b_hh, w_hr = self._weights(layer, d)
                k = layer * dirs + d
                out, h, c = _direction(self.mode, linear(x, w_ih, b_ih), sizes, h0[k],
                                       None if c0 is None else c0[k], w_hh, b_hh, w_hr,
                                       reverse=d == 1)
                outs.append(out)
                hs.append(h)
                cs.append(c)
            x = outs[0] if dirs == 1 else cat(outs, 1)
        return x, stack(hs, 0), (stack(cs, 0) if c0 is not None else None)

    def forward(self, input, hx=None):
        """Run the layers over a sequence.

        Shapes:  input (L, N, input_size), (N, L, input_size) with batch_first, (L,
                 input_size) unbatched, or a PackedSequence; hx (layers*dirs, N, Hr)
                 ((layers*dirs, Hr) unbatched; for LSTM a pair (h0, c0), c0 with H), zeros
                 when None -> (output (L, N, dirs*Hr) (batch_first: (N, L, .)) or a
                 PackedSequence, h_n like hx (LSTM: (h_n, c_n)))
        Dtypes:  input's dtype must be the weights' (ValueError)
        Raises:  ValueError for an input not 2-D or 3-D; RuntimeError for a wrong input size
                 or hidden shape (PyTorch's messages), or for input, hx and the weights not
                 all on one device
        """
        lstm = self.mode == "LSTM"
        name = {"LSTM": "LSTM", "GRU": "GRU"}.get(self.mode, "RNN")
        packed = isinstance(input, PackedSequence)
        unbatched = False
        hxs = hx if isinstance(hx, (tuple, list)) else (hx,)
        same_device(name, input.data if packed else input, *self._flat_weights,
                    *(h for h in hxs if isinstance(h, Tensor)))  # before any launch
        if packed:
            data, sizes_t, sorted_idx, unsorted_idx = input
            sizes = [int(s) for s in sizes_t.tolist()]
            batch = sizes[0]
            self._check_input(data, True)
        else:
            if not isinstance(input, Tensor):
                raise TypeError(f"{name}: expected input as a Tensor or PackedSequence, got "
                                f"{type(input).__name__}")
            if input.ndim not in (2, 3):
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D "
                                 f"tensor instead")
            unbatched = input.ndim == 2
            x = input.unsqueeze(1) if unbatched else \
                (input.transpose(0, 1) if self.batch_first else input)
            self._check_input(x, False)
            steps, batch = x.shape[0], x.shape[1]
            sizes = [batch] * steps
            data, sorted_idx, unsorted_idx = x.reshape(steps * batch, x.shape[2]), None, None
        h0, c0 = self._initial(hx, lstm, unbatched, batch, data, sorted_idx)
        if not sizes:
            raise RuntimeError(f"{name}: expected a sequence of at least one step, got none")
        out, hn, cn = self._run(data, sizes, h0, c0)
        if unsorted_idx is not None:
            hn = index_select(hn, 1, unsorted_idx)
            cn = None if cn is None else index_select(cn, 1, unsorted_idx)
        if packed:
            output = PackedSequence(out, sizes_t, sorted_idx, unsorted_idx)
        else:
            output = out.reshape(len(sizes), batch, out.shape[1])
            if unbatched:
                output, hn = output.squeeze(1), hn.squeeze(1)
                cn = None if cn is None else cn.squeeze(1)
            elif self.batch_first:
                output = output.transpose(0, 1)
        return output, ((hn, cn) if lstm else hn)

    def _initial(self, hx, lstm, unbatched, batch, data, sorted_idx):
        """(h0, c0 or None) as (layers*dirs, N, .) tensors, checked, in sorted order."""
        want_h = self._expected_hidden(batch)
        want_c = want_h[:2] + (self.hidden_size,)
        if hx is None:
            kw = {"dtype": data.dtype, "device": data.device}
            return zeros(*want_h, **kw), (zeros(*want_c, **kw) if lstm else None)
        if lstm:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise RuntimeError("LSTM: expected hx as a tuple (h_0, c_0), got "
                                   f"{type(hx).__name__}")
            h, c = hx
            rank = 2 if unbatched else 3
            if h.ndim != rank or c.ndim != rank:
                kind = "unbatched 2-D" if unbatched else "batched 3-D"
                raise RuntimeError(f"For {kind} input, hx and cx should also be {rank}-D but "
                                   f"got ({h.ndim}-D, {c.ndim}-D) tensors")
        else:
            h, c = hx, None
            rank = 2 if unbatched else 3
            if h.ndim != rank:
                kind = "unbatched 2-D" if unbatched else "batched 3-D"
                raise RuntimeError(f"For {kind} input, hx should also be {rank}-D but got "
                                   f"{h.ndim}-D tensor")
        if unbatched:
            h, c = h.unsqueeze(1), (None if c is None else c.unsqueeze(1))
        if tuple(h.shape) != want_h:
            tag = "Expected hidden[0] size {}, got {}" if lstm else \
                "Expected hidden size {}, got {}"
            raise RuntimeError(tag.format(want_h, list(h.shape)))
        if c is not None and tuple(c.shape) != want_c:
            raise RuntimeError(f"Expected hidden[1] size {want_c}, got {list(c.shape)}")
        if sorted_idx is not None:
            h = index_select(h, 1, sorted_idx)
            c = None if c is None else index_select(c, 1, sorted_idx)
        return h, c

    def extra_repr(self):
        """PyTorch's repr: sizes, then the arguments that differ from their defaults."""
        s = f"{self.input_size}, {self.hidden_size}"
        for key, default in (("proj_size", 0), ("num_layers", 1), ("bias", True),
                             ("batch_first", False), ("dropout", 0.0),
                             ("bidirectional", False)):
            if getattr(self, key) != default:
                s += f", {key}={getattr(self, key)}"
        return s


class RNN(RNNBase):
    """Elman RNN (PyTorch's nn.RNN): h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh), or relu.

    RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None)
    Raises:  ValueError for a nonlinearity other than 'tanh'/'relu' (see RNNBase)
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             f"'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory (PyTorch's nn.LSTM; Hochreiter & Schmidhuber 1997), with
    PyTorch's proj_size (Sak et al. 2014). See the module docstring and RNNBase.forward.

    LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, proj_size=0, device=None, dtype=None)
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device=device, dtype=dtype)


class GRU(RNNBase):
    """Gated recurrent unit (PyTorch's nn.GRU; Cho et al. 2014). See the module docstring.

    GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, device=None, dtype=None)
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, device=device, dtype=dtype)


class RNNCellBase(Module):
    """One step of a recurrent layer. Parameters weight_ih (G*H, input_size), weight_hh
    (G*H, H), bias_ih and bias_hh (G*H,) (None without bias); init U(-1/sqrt(H), 1/sqrt(H)).
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None):
        super().__init__()
        for name, value in (("input_size", input_size), ("hidden_size", hidden_size)):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{type(self).__name__}: expected {name} as a positive int, "
                                 f"got {value!r}")
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        kw = {"dtype": dtype, "device": device}
        gate = num_chunks * hidden_size
        self.weight_ih = Parameter(empty(gate, input_size, **kw))
        self.weight_hh = Parameter(empty(gate, hidden_size, **kw))
        if bias:
            self.bias_ih = Parameter(empty(gate, **kw))
            self.bias_hh = Parameter(empty(gate, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Every parameter U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def _prepare(self, x, states):
        """Checks; (x (N, in), states each (N, .) or None, batched?)."""
        cls = type(self).__name__
        if not isinstance(x, Tensor) or x.ndim not in (1, 2):
            got = f"{x.ndim}D" if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"{cls}: Expected input to be 1D or 2D, got {got} instead")
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"{cls}: input has inconsistent input_size: got "
                               f"{x.shape[-1]} expected {self.input_size}")
        if x.dtype != self.weight_ih.dtype:
            raise ValueError(f"{cls}: input dtype ({x.dtype}) does not match weight dtype "
                             f"({self.weight_ih.dtype})")
        same_device(cls, x, self.weight_ih, *(s for s in states if isinstance(s, Tensor)))
        batched = x.ndim == 2
        x = x if batched else x.unsqueeze(0)
        out = []
        for i, s in enumerate(states):
            what = "hidden" if len(states) == 1 else f"hx[{i}]"
            if s is None:
                out.append(zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device))
                continue
            if s.ndim not in (1, 2):
                raise ValueError(f"{cls}: Expected {what} to be 1D or 2D, got {s.ndim}D "
                                 f"instead")
            s = s if batched else s.unsqueeze(0)
            if tuple(s.shape) != (x.shape[0], self.hidden_size):
                raise RuntimeError(f"{cls}: Expected {what} size "
                                   f"{(x.shape[0], self.hidden_size)}, got {list(s.shape)}")
            out.append(s)
        return x, out, batched

    def extra_repr(self):
        """'input_size, hidden_size' and bias/nonlinearity when not the defaults."""
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class RNNCell(RNNCellBase):
    """One Elman RNN step (PyTorch's nn.RNNCell).

    forward(input, hx=None): input (N, input_size) or (input_size,), hx (N, H) or (H,)
    (zeros when None) -> h' like hx.
    Raises:  ValueError for a nonlinearity other than 'tanh'/'relu' or inputs not 1-D/2-D
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        """See the class docstring."""
        x, (h,), batched = self._prepare(input, [hx])
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        h2, _ = _cell(mode, linear(x, self.weight_ih, self.bias_ih), h, None, self.weight_hh,
                      self.bias_hh, None)
        return h2 if batched else h2.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step (PyTorch's nn.LSTMCell).

    forward(input, hx=None): input (N, input_size) or (input_size,), hx a pair (h, c) each
    (N, H) or (H,) (zeros when None) -> (h', c').
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        """See the class docstring."""
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise RuntimeError(f"LSTMCell: expected hx as a tuple (h_0, c_0), got "
                               f"{type(hx).__name__}")
        x, (h, c), batched = self._prepare(input, [None, None] if hx is None else list(hx))
        h2, c2 = _cell("LSTM", linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh,
                       self.bias_hh, None)
        return (h2, c2) if batched else (h2.squeeze(0), c2.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step (PyTorch's nn.GRUCell).

    forward(input, hx=None): input (N, input_size) or (input_size,), hx (N, H) or (H,)
    (zeros when None) -> h' like hx.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        """See the class docstring."""
        x, (h,), batched = self._prepare(input, [hx])
        h2, _ = _cell("GRU", linear(x, self.weight_ih, self.bias_ih), h, None, self.weight_hh,
                      self.bias_hh, None)
        return h2 if batched else h2.squeeze(0)
