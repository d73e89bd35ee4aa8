"""The host mirrors of the by-value kernel structs (clgrad/kernel_structs.py) against the
device's own sizeof (kernels/structs.cl), and the packers that use them."""
import numpy as np

import clgrad
from clgrad import kernel_structs as ks
from clgrad.ops import _util
from clgrad.ops.conv.problem import _CONV_T, Problem, Tiles


def test_every_mirror_has_the_devices_size():
    dev = clgrad.default_device()
    out = clgrad.zeros(len(ks.STRUCTS), dtype=clgrad.int64)
    dev.launch(dev.kernel("structs.cl", "struct_sizes", _util.defines_for(clgrad.float32)),
               (1,), (1,), out._storage.buffer)
    sizes = dict(zip(ks.STRUCTS, out.numpy().tolist()))
    assert sizes == {name: dt.itemsize for name, dt in ks.STRUCTS.items()}
    # hand-counted from the C declarations: MAXD longs, 1 + MAXD, 6, 18 + 3 * 6 + 3 + 11, 14, 6
    assert [d.itemsize // 8 for d in ks.STRUCTS.values()] == [8, 9, 6, 50, 14, 6]


def test_packers_follow_the_mirrors():
    t = clgrad.zeros(2, 3, 4)[:, 1:, ::2]
    view = np.frombuffer(_util.view_arg(t), dtype=ks.VIEW_T)[0]
    assert view["off"] == t._offset and list(view["s"][:3]) == list(t._strides)
    shape = np.frombuffer(_util.shape_arg((2, 3)), dtype=ks.SHAPE_T)[0]
    assert list(shape["n"]) == [2, 3] + [0] * (ks.MAXD - 2)
    assert _CONV_T.size == ks.CONV_T.itemsize
    names = ks.CONV_T.names
    assert names[:18] == Problem._fields[:18] and names[-len(Tiles._fields):] == Tiles._fields
