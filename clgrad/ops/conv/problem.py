"""The convolution problem of kernels/conv.h on the host: ``Problem`` (conv_t up to its tiling),
``Tiles`` (its tiling fields), ``Plan`` (what a planner chose) and the view helpers shared by
clgrad/ops/conv/op.py (the op) and clgrad/ops/conv/algorithms.py (planners and launchers).
"""
from __future__ import annotations

import struct
from collections import namedtuple
from typing import NamedTuple

from clgrad.kernel_structs import CONV_T, longs
from clgrad.layout import cdiv
from clgrad.tensor import Tensor

__all__ = ["Problem", "Tiles", "Plan", "cdiv", "raw", "v5"]

_Z5 = (0,) * 6  # a v5_t that is not used: offset 0, strides 0
_PROBLEM = "n g c h w o oh ow kh kw sh sw dh dw ph pw uh uw x k y boff bs bias"
_TILES = "mc th tw cc ntw split rows rp cp kws slab"


class Problem(namedtuple("Problem", _PROBLEM, defaults=(1, 1, _Z5, _Z5, _Z5, 0, 0, 0))):
    """One convolution of a batch of groups: ``conv_t`` of kernels/conv.h up to its tiling, in
    the struct's order (see conv.h for what each field means). x, k, y are v5_t views
    (offset, 5 strides) of X (n, g, c, h, w), K (g, o, c, kh, kw) and Y (n, g, o, oh, ow);
    uh, uw (zero insertion) default to 1, the bias fields to 0 (no bias)."""
    __slots__ = ()

    def pack(self, tiles: "Tiles" = None) -> bytes:
        """``conv_t`` (this problem and ``tiles``) as the bytes of a by-value kernel argument."""
        return _CONV_T.pack(*self[:18], *self.x, *self.k, *self.y, self.boff, self.bs,
                            self.bias, *(tiles or _NO_TILES))


# The tiling fields of conv_t, chosen by a planner (all 0 unless set): tiles of th output rows
# x tw columns (ntw tiles per row) of mc output channels, cc input channels staged at a time,
# split batch splits (weight gradient); the staged window's rows, pitch rp, channel pitch cp,
# tap offset kws and layout slab (kernels/conv.h).
Tiles = namedtuple("Tiles", _TILES, defaults=(0,) * len(_TILES.split()))
_NO_TILES = Tiles()
_CONV_T = struct.Struct(f"<{longs(CONV_T)}q")  # conv_t: all longs


class Plan(NamedTuple):
    """What a planner chose: the tiles, the local-memory arguments (bytes each), for
    igemm_wgrad the input channels per work-group (cr, an argument of its own), and whether
    the kernels run zero insertion (U > 1) themselves (inserts: conv._grad_input then runs a
    strided layer's input gradient as one problem, not as phases)."""
    tiles: Tiles = _NO_TILES
    local: tuple = ()
    cr: int = 0
    inserts: bool = False


def raw(t: Tensor, shape, strides, offset=None) -> Tensor:
    """An alias of t's storage with this layout, outside autograd (a kernel operand)."""
    return Tensor(t._storage, shape, strides, t._offset if offset is None else offset)


def v5(t: Tensor, g: int) -> tuple:
    """(offset, strides) of the (N, G, C/G, H, W) view of a 4-D (N, C, H, W) tensor."""
    sn, sc, sh, sw = t._strides
    return (t._offset, sn, sc * (t.shape[1] // g), sc, sh, sw)
