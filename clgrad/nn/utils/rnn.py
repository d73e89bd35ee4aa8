"""torch.nn.utils.rnn's names: PackedSequence, pack_padded_sequence, pad_packed_sequence,
pad_sequence, pack_sequence, unpad_sequence, unpack_sequence (PyTorch's layouts and results).

A PackedSequence holds the time steps of a batch of sequences sorted by decreasing length:
``data`` (sum(lengths), *) is step 0 of every sequence, then step 1 of those longer than 1...,
and ``batch_sizes`` (int64, one per step) how many sequences each step holds. Every
rearrangement here is one ``index_select`` of the rows (index computed on the host from the
lengths), so gradients flow back to the padded or packed input.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from clgrad import creation, dtypes
from clgrad.ops.index import cat, index_select
from clgrad.tensor import Tensor

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "pack_sequence", "unpad_sequence", "unpack_sequence"]


class PackedSequence(NamedTuple):
    """(data, batch_sizes, sorted_indices, unsorted_indices), as PyTorch's.

    data (sum(lengths), *); batch_sizes int64 (max length,); sorted_indices/unsorted_indices
    int64 (batch,) or None: the sequence at sorted position j is input sequence
    sorted_indices[j], and unsorted_indices is its inverse permutation.
    """
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def to(self, *args, **kwargs):
        """A PackedSequence with ``data.to(*args, **kwargs)`` (indices follow its device)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        idx = [None if t is None else t.to(device=data.device)
               for t in (self.sorted_indices, self.unsorted_indices)]
        return PackedSequence(data, self.batch_sizes.to(device=data.device), *idx)

    def cpu(self):
        """The PackedSequence on the "cpu" device (see Tensor.cpu)."""
        return self.to("cpu")

    def cuda(self, device=None):
        """The PackedSequence on a GPU (see Tensor.cuda)."""
        return self.to("cuda" if device is None else device)

    def double(self):
        """data as float64."""
        return self.to(dtype=dtypes.float64)

    def float(self):
        """data as float32."""
        return self.to(dtype=dtypes.float32)

    @property
    def is_cuda(self) -> bool:
        """Whether the data lives on a GPU (see Tensor.is_cuda)."""
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        """Always False: clgrad has no pinned host memory."""
        return False


def _host_lengths(lengths, op: str) -> np.ndarray:
    if isinstance(lengths, Tensor):
        if lengths.dtype.is_floating_point or lengths.ndim != 1:
            raise TypeError(f"{op}: expected lengths as a 1-D int64 tensor or list of ints, got "
                            f"a {lengths.ndim}-D {lengths.dtype} tensor")
        if lengths._storage.device.type != "cpu":  # PyTorch's rule, whatever input's device
            raise RuntimeError(f"{op}: 'lengths' argument should be a 1D CPU int64 tensor, but "
                               f"got {lengths.ndim}D {lengths.device} "
                               f"{dtypes.torch_name(lengths.dtype)} tensor")
        return lengths.numpy().astype(np.int64)
    lens = np.asarray(lengths)
    if lens.ndim != 1 or (lens.size and lens.dtype.kind not in "iu"):
        raise TypeError(f"{op}: expected lengths as a 1-D int64 tensor or list of ints, got "
                        f"{lengths!r}")
    return lens.astype(np.int64)


def _index(values: np.ndarray, device) -> Tensor:
    return creation.tensor(np.ascontiguousarray(values, dtype=np.int64), dtype=dtypes.int64,
                           device=device)


def _rows(x: Tensor) -> Tensor:
    """x (a, b, *) as (a * b, *) (a copy only when x is not viewable so)."""
    return x.reshape((x.shape[0] * x.shape[1],) + tuple(x.shape[2:]))


def _batch_sizes(sorted_lengths: np.ndarray) -> np.ndarray:
    steps = np.arange(int(sorted_lengths[0]) if sorted_lengths.size else 0)
    return (sorted_lengths[None, :] > steps[:, None]).sum(1).astype(np.int64)


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch of sequences (PyTorch's torch.nn.utils.rnn.pack_padded_sequence).

    Shapes:  input (T, B, *), or (B, T, *) with batch_first; lengths B ints (list or int64
             tensor), each in [1, T] -> PackedSequence with data (sum(lengths), *)
    Sorting: enforce_sorted=True expects lengths in decreasing order (sorted_indices None);
             False sorts them (stable) and records the permutation.
    Grad:    input (one index_select of its rows).
    Raises:  RuntimeError for lengths not decreasing with enforce_sorted, a length <= 0 or
             > T, or a lengths tensor on a GPU (PyTorch: a CPU tensor, also for a GPU
             input); ValueError for len(lengths) != B; TypeError for non-integer lengths.
    """
    op = "pack_padded_sequence"
    lens = _host_lengths(lengths, op)
    if input.ndim < 2:
        raise ValueError(f"{op}: expected input of at least 2 dims (T, B, *), got shape "
                         f"{tuple(input.shape)}")
    b_dim, t_dim = (0, 1) if batch_first else (1, 0)
    nb, nt = input.shape[b_dim], input.shape[t_dim]
    if lens.size != nb:
        raise ValueError(f"{op}: expected `len(lengths)` to be equal to batch_size, but got "
                         f"{lens.size} (batch_size={nb})")
    if lens.size and lens.min() <= 0:
        raise RuntimeError(f"{op}: Length of all samples has to be greater than 0, but found "
                           f"an element in 'lengths' that is <= 0 (lengths {lens.tolist()})")
    if lens.size and lens.max() > nt:
        raise RuntimeError(f"{op}: expected every length <= the sequence length {nt}, got "
                           f"lengths {lens.tolist()}")
    if enforce_sorted:
        if np.any(np.diff(lens) > 0):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
        order = np.arange(nb)
    else:
        order = np.argsort(-lens, kind="stable")
    sizes = _batch_sizes(lens[order])
    t = np.repeat(np.arange(sizes.size), sizes)
    b = np.concatenate([order[:s] for s in sizes]) if sizes.size else np.zeros(0, np.int64)
    flat = b * nt + t if batch_first else t * nb + b
    dev = input._storage.device
    data = index_select(_rows(input), 0, _index(flat, dev))
    if enforce_sorted:
        return PackedSequence(data, _index(sizes, dev), None, None)
    return PackedSequence(data, _index(sizes, dev), _index(order, dev),
                          _index(np.argsort(order), dev))


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None):
    """Unpack a PackedSequence into a padded batch (PyTorch's pad_packed_sequence).

    Shapes:  -> (padded (T, B, *) or (B, T, *) with batch_first, lengths int64 (B,) on the
             "cpu" device, as PyTorch's), in the original order of the sequences
             (unsorted_indices); T = total_length or the longest length.
    Grad:    sequence.data (one index_select of its rows and a padding row).
    Raises:  ValueError when total_length < the longest length.
    """
    data, sizes_t, _, unsorted = sequence
    sizes = sizes_t.numpy().astype(np.int64)
    nt, nb = int(sizes.size), int(sizes[0]) if sizes.size else 0
    if total_length is not None:
        if total_length < nt:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {nt}")
        nt = int(total_length)
    lens_sorted = (sizes[None, :] > np.arange(nb)[:, None]).sum(1)
    perm = unsorted.numpy().astype(np.int64) if unsorted is not None else np.arange(nb)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    t = np.arange(nt)[:, None]
    j = perm[None, :]                                     # sorted position of each sequence
    valid = t < lens_sorted[j]
    rows = np.where(valid, offsets[np.minimum(t, max(sizes.size - 1, 0))] + j, data.shape[0])
    if batch_first:
        rows = rows.T
    pad = data.new_full((1,) + tuple(data.shape[1:]), padding_value)
    padded = index_select(cat([data, pad], 0), 0, _index(rows.reshape(-1), data.device))
    padded = padded.reshape(rows.shape + tuple(data.shape[1:]))
    return padded, creation.tensor(lens_sorted[perm].astype(np.int64), dtype=dtypes.int64,
                                   device="cpu")


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences of different lengths, padded (PyTorch's pad_sequence).

    Shapes:  sequences B tensors (L_i, *) with the same * and dtype -> (max L, B, *), or
             (B, max L, *) with batch_first
    Grad:    every sequence (one index_select of their rows and a padding row).
    Raises:  ValueError for padding_side other than 'left'/'right' or an empty list;
             RuntimeError when the trailing dims differ.
    """
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    seqs = list(sequences)
    if not seqs:
        raise ValueError("pad_sequence: received an empty list of sequences")
    trail = tuple(seqs[0].shape[1:])
    for i, s in enumerate(seqs):
        if s.ndim < 1 or tuple(s.shape[1:]) != trail:
            raise RuntimeError(f"pad_sequence: expected every sequence of shape (L, *{trail}), "
                               f"got shape {tuple(s.shape)} at index {i}")
    lens = np.array([s.shape[0] for s in seqs], dtype=np.int64)
    nt, total = int(lens.max()), int(lens.sum())
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
    t = np.arange(nt)[:, None]
    shift = nt - lens[None, :] if padding_side == "left" else 0
    src = t - shift
    rows = np.where((src >= 0) & (src < lens[None, :]), starts[None, :] + src, total)
    if batch_first:
        rows = rows.T
    pad = seqs[0].new_full((1,) + trail, padding_value)
    out = index_select(cat(seqs + [pad], 0), 0, _index(rows.reshape(-1), seqs[0].device))
    return out.reshape(rows.shape + trail)


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of (L_i, *) sequences (pad_sequence then pack_padded_sequence)."""
    seqs = list(sequences)
    return pack_padded_sequence(pad_sequence(seqs), [s.shape[0] for s in seqs],
                                enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False):
    """The list of sequences (L_i, *) of a padded batch (views of it)."""
    lens = _host_lengths(lengths, "unpad_sequence")
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[i].narrow(0, 0, int(n)) for i, n in enumerate(lens)]


def unpack_sequence(packed_sequences: PackedSequence):
    """The list of sequences (L_i, *) of a PackedSequence, in their original order."""
    padded, lens = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lens, batch_first=True)
