// kernels/structs.cl — sizeof of every struct the host passes by value, for the size test of
// the host mirrors (clgrad/kernel_structs.py; tests/test_kernel_structs.py).
// Defines: T element type (conv.h needs it). Launch: (1,), (1,).
#include "conv.h"
#include "geom.h"

__kernel void struct_sizes(__global long *out) {
    out[0] = sizeof(shape_t);
    out[1] = sizeof(view_t);
    out[2] = sizeof(v5_t);
    out[3] = sizeof(conv_t);
    out[4] = sizeof(geom_t);
    out[5] = sizeof(ugeom_t);
}
