"""Host mirrors of the structs the kernels take by value: one NumPy dtype per C struct, the
single description of each layout on the host (the packers derive their formats from these;
tests/test_kernel_structs.py compares every size with the device's sizeof).

    SHAPE_T   kernels/common.h   shape_t  {long n[MAXD]}
    VIEW_T    kernels/common.h   view_t   {long off; long s[MAXD]}
    V5_T      kernels/conv.h     v5_t     {long off, s[5]}
    CONV_T    kernels/conv.h     conv_t   the conv problem and its tiling (all longs)
    GEOM_T    kernels/geom.h     geom_t   2-D pooling geometry
    UGEOM_T   kernels/geom.h     ugeom_t  resampling geometry

Every field is a 64-bit little-endian int (OpenCL's long), so no struct has padding.
"""
from __future__ import annotations

import numpy as np

__all__ = ["MAXD", "SHAPE_T", "VIEW_T", "V5_T", "CONV_T", "GEOM_T", "UGEOM_T", "STRUCTS",
           "longs"]

MAXD = 8  # kernels/common.h: the kernels' rank limit

_L = "<i8"
SHAPE_T = np.dtype([("n", _L, (MAXD,))])
VIEW_T = np.dtype([("off", _L), ("s", _L, (MAXD,))])
V5_T = np.dtype([("off", _L), ("s", _L, (5,))])
CONV_T = np.dtype([(f, _L) for f in "n g c h w o oh ow kh kw sh sw dh dw ph pw uh uw".split()]
                  + [("x", V5_T), ("k", V5_T), ("y", V5_T)]
                  + [(f, _L) for f in "boff bs bias mc th tw cc ntw split rows rp cp kws "
                                      "slab".split()])
GEOM_T = np.dtype([(f, _L) for f in "n c h w oh ow kh kw sh sw ph pw dh dw".split()])
UGEOM_T = np.dtype([(f, _L) for f in "n c h w oh ow".split()])

# The C name of each mirror, in the order kernels/structs.cl reports their sizes.
STRUCTS = {"shape_t": SHAPE_T, "view_t": VIEW_T, "v5_t": V5_T, "conv_t": CONV_T,
           "geom_t": GEOM_T, "ugeom_t": UGEOM_T}


def longs(dtype: np.dtype) -> int:
    """How many 64-bit ints a mirror holds (the length of its ``struct``/``pack`` format)."""
    return dtype.itemsize // 8
