// kernels/dropout.cl — dropout with a counter-based RNG (one kernel for both directions).
// Defines: T element type; IS_FLOAT for floating types.
// Follows elementwise.cl's signature (n, nd, shape, out, view, operands with views, scalars).
// Launch: 1-D, global size rounded up to the work-group size; the kernel checks its bound.
#include "common.h"

#ifdef IS_FLOAT
// Philox4x32-10 (Salmon et al., SC'11; Random123): a counter-based generator, so element k's
// random number depends only on (key, k): forward and backward regenerate the same mask.
// The 32x32 -> 64-bit products are plain ulong multiplies (mul_hi was 5x slower on PoCL).
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

inline void philox4x32_10(uint *c, uint k0, uint k1) {
    for (int round = 0; round < 10; ++round) {
        ulong p0 = (ulong)PHILOX_M0 * c[0], p1 = (ulong)PHILOX_M1 * c[2];
        uint n0 = (uint)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint)(p0 >> 32) ^ c[3] ^ k1;
        c[1] = (uint)p1;
        c[3] = (uint)p0;
        c[0] = n0;
        c[2] = n2;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
}

// out = a * scale where the element is kept, else a * 0 (so NaN stays NaN, as PyTorch's
// input * mask). Work item i handles the elements
// k = 4i .. 4i+3 (row-major over the shape) with the four words of
// philox((i_lo, i_hi, 0, 0), (k0, k1)): element k is kept when word k % 4 >= threshold,
// threshold = round(p * 2^32), so P(keep) = 1 - p. Used for the input and its gradient.
// Launch: ceil(n / 4) work items.
__kernel void dropout(long n, int nd, shape_t sh, __global T *out, view_t vo,
                      __global const T *a, view_t va, uint k0, uint k1, ulong threshold,
                      T scale) {
    long i = get_global_id(0);
    if (4 * i >= n) return;
    uint c[4] = {(uint)i, (uint)((ulong)i >> 32), 0u, 0u};
    philox4x32_10(c, k0, k1);
    for (int j = 0; j < 4 && 4 * i + j < n; ++j) {
        long oo, oa;
        off2(4 * i + j, nd, sh, vo, va, &oo, &oa);
        out[oo] = a[oa] * ((ulong)c[j] >= threshold ? scale : (T)0);  // NaN * 0 is NaN
    }
}
#endif
