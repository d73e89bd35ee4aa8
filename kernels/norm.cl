// kernels/norm.cl — the normalisation family, one section per op (ops: clgrad/ops/norm.py):
//   batch norm     bn_fwd, bn_bwd            one work-group per channel (GPUs)
//                  bn_fwd_rows, bn_bwd_rows  one work item per channel, no barriers (CPUs)
//                  (both: relu, relu6 or silu fusable, BN_RELU / BN_RELU6 / BN_SILU)
//   local response lrn_fwd, lrn_bwd          one work item per element
//   layer / group  rn_fwd, rn_bwd            one work-group per row (layer_norm: a row is one
//   (row norm)                               sample's normalised dims; group_norm: (n, group);
//                                            instance_norm is group_norm with C groups)
// Defines: T element type (float or double); WG work-group size of the work-group kernels
// (a power of two); UNIT (bn_*_rows: every view has unit inner stride); BN_HALF (batch norm
// only, with T float: PyTorch's mixed batch norm, see below).
// Geometry: the channel dim (dim 1) is split from the others. Element j of channel c of a
// tensor is at off1(j, nd, sh, v) + c * sc, where sh holds the other dims (N, *spatial)
// collapsed, v their strides (and the tensor's offset) and sc the channel stride.
#include "common.h"

#ifndef WG  // the work-group kernels' size; the *_rows variants (work-groups of one) set none
#define WG 64
#endif

// Batch norm's storage type S of x, y, gy and gx, read and written only through LD1/ST1 (one
// element), LD4/ST4 (BN_VEC) and LD8/ST8 (the *_rows variants' vectors); everything else (the
// parameters, running and saved statistics, gw, gb, the partial states, every accumulator and
// the fused activation) is T. S is T, except with BN_HALF (norm.py: a float16 input with
// float32 parameters, PyTorch's mixed batch norm): S is half and T float; the halves are read
// and written with the core vload_half / vstore_half*_rte (round to nearest even), which need
// no cl_khr_fp16 (NVIDIA's OpenCL lists none). vloada_half4 / vstorea_half4_rte need 8-byte
// alignment: BN_VEC's conditions (offsets and strides multiples of 4 elements) give it.
#ifdef BN_HALF
#define S half
#define LD1(p, i) vload_half((i), (p))
#define ST1(p, i, v) vstore_half_rte((v), (i), (p))
#define LD8(p) vload_half8(0, (p))
#define ST8(v, p) vstore_half8_rte((v), 0, (p))
#else
#define S T
#define LD1(p, i) ((p)[i])
#define ST1(p, i, v) ((p)[i] = (v))
#define LD8(p) vload8(0, (p))
#define ST8(v, p) vstore8((v), 0, (p))
#endif

// flags of bn_fwd / bn_bwd
#define BN_TRAIN 1    // batch statistics (else the running ones)
#define BN_W 2        // weight given
#define BN_B 4        // bias given
#define BN_UPDATE 8   // update running_mean / running_var (training)
#define BN_GX 16      // backward: grad of the input wanted
#define BN_GW 32      // backward: grad of the weight wanted
#define BN_GB 64      // backward: grad of the bias wanted
#define BN_RELU 128   // an activation fused after the normalisation (nn.Sequential's
#define BN_RELU6 512  // BatchNorm2d + ReLU / ReLU6 / SiLU): the forward stores act(v), the
#define BN_SILU 1024  // backward multiplies gy by act'(v) at the pre-activation v recomputed
                      // from x by the forward's own expression; act and act' are
                      // activation.cl's relu / hardtanh(0, 6) / silu (kinks and NaN alike)
#define BN_COUNT 256  // forward: count[count_off] += 1 (BatchNorm's num_batches_tracked, a
                      // long), by channel 0's first work item: the module's count in the
                      // same launch

// relu's gradient passes where relu's output is > 0 (elementwise.cl's relu_grad), relu6's
// where it is strictly inside (0, 6). That output is act(v), except with BN_HALF, where the
// separate op reads v rounded to half (nearest even): v <= 2^-25 rounds to +0 and
// v >= 6 - 2^-9 to 6, so the fused masks cut there (bit for bit as batch norm then the
// activation, with autocast's float16 output between them).
#ifdef BN_HALF
#define RELU_CUT 0x1p-25f
#define RELU6_TOP 5.998046875f
#else
#define RELU_CUT 0
#define RELU6_TOP 6
#endif
// relu as elementwise.cl's (NaN and -0 pass), on a vector and on a scalar
#define RELU8(v) select((v), (V8)0, (v) < (V8)0)
#define RELU1(v) ((v) < (T)0 ? (T)0 : (v))
#define BN_ACTS (BN_RELU | BN_RELU6 | BN_SILU)
#define SIG1(v) ((T)1 / ((T)1 + exp(-(v))))

// The fused activation of a pre-activation v, and gy times its derivative at v (relu: gy
// where v > 0; relu6: gy strictly inside (0, 6); silu: gy s (1 + v (1 - s)), s = sigmoid v).
inline T bn_act(T v, int flags) {
    if (flags & BN_RELU) return RELU1(v);
    if (flags & BN_RELU6) return v < (T)0 ? (T)0 : v > (T)6 ? (T)6 : v;
    if (flags & BN_SILU) return v * SIG1(v);
    return v;
}
inline T bn_act_grad(T gy, T v, int flags) {
    if (flags & BN_RELU) return v <= (T)RELU_CUT ? (T)0 : gy;
    if (flags & BN_RELU6) return (v <= (T)RELU_CUT || v >= (T)RELU6_TOP) ? (T)0 : gy;
    if (flags & BN_SILU) return gy * SIG1(v) * ((T)1 + v * ((T)1 - SIG1(v)));
    return gy;
}

// The sum of v over the work-group, returned to every work item.
inline T group_sum(T v, __local T *buf) {
    int lid = get_local_id(0);
    buf[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) buf[lid] += buf[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    T r = buf[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

// The work-group's Welford states (count, mean, M2 of each work item) merged into work item
// 0's, returned to every work item: Chan, Golub & LeVeque's pairwise update (mean += d nb / n,
// M2 += M2b + d^2 na nb / n, d the difference of the means). buf holds 3 * WG values.
inline void group_welford(T *cnt, T *mean, T *m2, __local T *buf) {
    int lid = get_local_id(0);
    buf[lid] = *cnt;
    buf[WG + lid] = *mean;
    buf[2 * WG + lid] = *m2;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) {
            T na = buf[lid], nb = buf[lid + s];
            if (nb > (T)0) {
                T n = na + nb, f = nb / n;
                T d = buf[WG + lid + s] - buf[WG + lid];
                buf[WG + lid] += d * f;
                // d * (d * na * f), not d * d * na * f: an empty state (na = 0) adds 0,
                // where |d| > 1.8e19 (float) made inf * 0 = NaN
                buf[2 * WG + lid] += buf[2 * WG + lid + s] + d * (d * na * f);
                buf[lid] = n;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    *cnt = buf[0];
    *mean = buf[WG];
    *m2 = buf[2 * WG];
    barrier(CLK_LOCAL_MEM_FENCE);
}

// The element offsets of a channel's element j (without the channel's own offset c * stride).
#ifdef BN_FAST
// Every view of the launch has at most 2 dims besides the channel (N and the spatial dims,
// collapsed) and unit inner stride, and m < 2^31 (norm.py's _bn_kernel): element j sits at
// off + (j / hw) * s[0] + j % hw, in 32-bit arithmetic. The general off1 divides in 64 bits
// per element and operand, most of bn_fwd's time on an H200 (ResNeXt-29 at batch 128:
// bn_fwd + bn_bwd 17.5 ms of a 64 ms step).
#define BN_AT(j, v) ((v).off + (long)((uint)(j) / hw) * (v).s[0] + (long)((uint)(j) % hw))
#else
#define BN_AT(j, v) off1((j), nd, sh, (v))
#endif
#define BN_GEOM int nd, shape_t sh, uint hw  // what BN_AT reads (hw: the inner dim's length)
#define BN_HW(nd, sh, m) ((nd) == 2 ? (uint)(sh).n[1] : (uint)(m))

#ifdef BN_VEC
// Every view's offset, batch stride and channel stride and the inner length are multiples of 4
// (norm.py's _bn_kernel, with BN_FAST), and so are the loops' bounds (m; the split kernels'
// chunks are rounded up to 4): elements j..j+3 (j a multiple of 4) are contiguous and
// 4-aligned, read and written as one T4. A work item takes every 4*WG-th group of 4.
#ifdef IS_DOUBLE
typedef double4 T4;
#else
typedef float4 T4;
#endif
#define BN_STEP (4 * WG)
#define BN_FIRST(j0) ((j0) + 4 * get_local_id(0))
#ifdef BN_HALF
#define LD4(p, i) vloada_half4(0, (p) + (i))
#define ST4(p, i, v) vstorea_half4_rte((v), 0, (p) + (i))
#else
#define LD4(p, i) (*(__global const T4 *)((p) + (i)))
#define ST4(p, i, v) (*(__global T4 *)((p) + (i)) = (v))
#endif
#define SUM4(v) (((v).s0 + (v).s1) + ((v).s2 + (v).s3))
inline T4 bn_act4(T4 v, int flags) {
    return (T4)(bn_act(v.s0, flags), bn_act(v.s1, flags), bn_act(v.s2, flags),
                bn_act(v.s3, flags));
}
inline T4 bn_act_grad4(T4 gy, T4 v, int flags) {
    return (T4)(bn_act_grad(gy.s0, v.s0, flags), bn_act_grad(gy.s1, v.s1, flags),
                bn_act_grad(gy.s2, v.s2, flags), bn_act_grad(gy.s3, v.s3, flags));
}

// The loops below take two groups of 4 a step (j and j + BN_STEP), both loaded before either
// is used: two loads in flight per work item; the groups are used in the same order as one a
// step would (the results are the same bits).
#define BN_TWO(j, j1) const bool two = (j) + BN_STEP < (j1)

// This work item's Welford state over its groups of 4 in [j0, j1): each group's mean and M2,
// merged in by Chan et al.'s update (as group_welford).
inline void bn_merge4(T4 v, T *cnt, T *mu, T *q) {
    T m4 = SUM4(v * (T)0.25f);  // each lane scaled first: no overflow near float max
    T4 e = v - (T4)m4;
    T n = *cnt + (T)4, f = (T)4 / n, d = m4 - *mu;
    *mu += d * f;
    *q += SUM4(e * e) + d * (d * *cnt * f);  // as group_welford
    *cnt = n;
}
inline void bn_welford(long j0, long j1, BN_GEOM, __global const S *x, view_t vx, long xc,
                       T *cnt, T *mu, T *q) {
    for (long j = BN_FIRST(j0); j < j1; j += 2 * BN_STEP) {
        BN_TWO(j, j1);
        T4 v0 = LD4(x, BN_AT(j, vx) + xc);
        T4 v1 = two ? LD4(x, BN_AT(j + BN_STEP, vx) + xc) : (T4)0;
        bn_merge4(v0, cnt, mu, q);
        if (two) bn_merge4(v1, cnt, mu, q);
    }
}

inline void bn_apply(long j0, long j1, BN_GEOM, __global S *y, view_t vy, long yc,
                     __global const S *x, view_t vx, long xc, T mu, T scale, T bc, int flags) {
    for (long j = BN_FIRST(j0); j < j1; j += 2 * BN_STEP) {
        BN_TWO(j, j1);
        T4 v0 = LD4(x, BN_AT(j, vx) + xc);
        T4 v1 = two ? LD4(x, BN_AT(j + BN_STEP, vx) + xc) : (T4)0;
        ST4(y, BN_AT(j, vy) + yc, bn_act4((v0 - (T4)mu) * scale + bc, flags));
        if (two) ST4(y, BN_AT(j + BN_STEP, vy) + yc, bn_act4((v1 - (T4)mu) * scale + bc, flags));
    }
}

inline void bn_gsums(long j0, long j1, BN_GEOM, __global const S *gy, view_t vgy, long gyc,
                     __global const S *x, view_t vx, long xc, T mu, T is, T fscale, T fshift,
                     int flags, T *sg, T *sgx) {
    for (long j = BN_FIRST(j0); j < j1; j += 2 * BN_STEP) {
        BN_TWO(j, j1);
        T4 x0 = LD4(x, BN_AT(j, vx) + xc), g0 = LD4(gy, BN_AT(j, vgy) + gyc);
        T4 x1 = two ? LD4(x, BN_AT(j + BN_STEP, vx) + xc) : (T4)0;
        T4 g1 = two ? LD4(gy, BN_AT(j + BN_STEP, vgy) + gyc) : (T4)0;
        x0 -= (T4)mu;
        g0 = bn_act_grad4(g0, x0 * fscale + fshift, flags);
        *sg += SUM4(g0);
        *sgx += SUM4(g0 * x0) * is;
        if (two) {
            x1 -= (T4)mu;
            g1 = bn_act_grad4(g1, x1 * fscale + fshift, flags);
            *sg += SUM4(g1);
            *sgx += SUM4(g1 * x1) * is;
        }
    }
}

inline void bn_gx(long j0, long j1, BN_GEOM, __global S *gx, view_t vgx, long gxc,
                  __global const S *gy, view_t vgy, long gyc, __global const S *x, view_t vx,
                  long xc, T mu, T is, T fscale, T fshift, T k, T a, T bq, int flags) {
    for (long j = BN_FIRST(j0); j < j1; j += 2 * BN_STEP) {
        BN_TWO(j, j1);
        T4 x0 = LD4(x, BN_AT(j, vx) + xc), g0 = LD4(gy, BN_AT(j, vgy) + gyc);
        T4 x1 = two ? LD4(x, BN_AT(j + BN_STEP, vx) + xc) : (T4)0;
        T4 g1 = two ? LD4(gy, BN_AT(j + BN_STEP, vgy) + gyc) : (T4)0;
        x0 -= (T4)mu;
        g0 = bn_act_grad4(g0, x0 * fscale + fshift, flags);
        ST4(gx, BN_AT(j, vgx) + gxc, (flags & BN_TRAIN) ? k * (g0 - a - x0 * is * bq) : k * g0);
        if (two) {
            x1 -= (T4)mu;
            g1 = bn_act_grad4(g1, x1 * fscale + fshift, flags);
            ST4(gx, BN_AT(j + BN_STEP, vgx) + gxc,
                (flags & BN_TRAIN) ? k * (g1 - a - x1 * is * bq) : k * g1);
        }
    }
}
#else
// This work item's Welford state over elements j0 + lid, j0 + lid + WG, ... < j1 of x.
inline void bn_welford(long j0, long j1, BN_GEOM, __global const S *x, view_t vx, long xc,
                       T *cnt, T *mu, T *q) {
    for (long j = j0 + get_local_id(0); j < j1; j += WG) {
        T v = LD1(x, BN_AT(j, vx) + xc);
        *cnt += (T)1;
        T d = v - *mu;
        *mu += d / *cnt;
        *q += d * (v - *mu);
    }
}

// y = act((x - mu) * scale + bc) over this work item's elements of [j0, j1).
inline void bn_apply(long j0, long j1, BN_GEOM, __global S *y, view_t vy, long yc,
                     __global const S *x, view_t vx, long xc, T mu, T scale, T bc, int flags) {
    for (long j = j0 + get_local_id(0); j < j1; j += WG)
        ST1(y, BN_AT(j, vy) + yc, bn_act((LD1(x, BN_AT(j, vx) + xc) - mu) * scale + bc, flags));
}

// The backward's per-channel sums over this work item's elements of [j0, j1): sum g and
// sum g * xhat, g = gy times act' at the pre-activation recomputed as the forward did.
inline void bn_gsums(long j0, long j1, BN_GEOM, __global const S *gy, view_t vgy, long gyc,
                     __global const S *x, view_t vx, long xc, T mu, T is, T fscale, T fshift,
                     int flags, T *sg, T *sgx) {
    for (long j = j0 + get_local_id(0); j < j1; j += WG) {
        T xi = LD1(x, BN_AT(j, vx) + xc);
        T g = bn_act_grad(LD1(gy, BN_AT(j, vgy) + gyc), (xi - mu) * fscale + fshift, flags);
        *sg += g;
        *sgx += g * (xi - mu) * is;
    }
}

// gx = k * (g - a - xhat * bq) over this work item's elements of [j0, j1); in eval (a and bq
// 0) k * g, not reading x there: a NaN input gives a finite gradient, as PyTorch's.
inline void bn_gx(long j0, long j1, BN_GEOM, __global S *gx, view_t vgx, long gxc,
                  __global const S *gy, view_t vgy, long gyc, __global const S *x, view_t vx,
                  long xc, T mu, T is, T fscale, T fshift, T k, T a, T bq, int flags) {
    for (long j = j0 + get_local_id(0); j < j1; j += WG) {
        T xi = LD1(x, BN_AT(j, vx) + xc);
        T g = bn_act_grad(LD1(gy, BN_AT(j, vgy) + gyc), (xi - mu) * fscale + fshift, flags);
        ST1(gx, BN_AT(j, vgx) + gxc, (flags & BN_TRAIN) ? k * (g - a - (xi - mu) * is * bq)
                                                        : k * g);
    }
}

#endif

// The forward's scale/shift of channel c: weight * invstd and bias (1 and 0 when absent).
#define BN_W_OF(c) ((flags & BN_W) ? w[vw.off + (c) * vw.s[0]] : (T)1)
#define BN_B_OF(c) ((flags & BN_B) ? b[vb.off + (c) * vb.s[0]] : (T)0)

// y = (x - mean) * invstd * w + b for channel c = group id, m elements per channel.
// Training: mean and biased variance of the batch (one pass of Welford updates per work item,
// merged pairwise: offsets do not cancel, and x is read twice, not three times),
// running stats updated with the unbiased variance. mean_out/invstd_out are saved for
// backward (also in eval, where they hold the running statistics).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bn_fwd(long m, int nd, shape_t sh, __global S *y, view_t vy, long syc,
            __global const S *x, view_t vx, long sxc, __global const T *w, view_t vw,
            __global const T *b, view_t vb, __global T *rm, view_t vrm, __global T *rv,
            view_t vrv, __global T *mean_out, __global T *invstd_out, T momentum, T eps,
            int flags, __global long *count, long count_off) {
    __local T buf[3 * WG];
    const uint hw = BN_HW(nd, sh, m);
    long c = get_group_id(0);
    int lid = get_local_id(0);
    if ((flags & BN_COUNT) && c == 0 && lid == 0) count[count_off] += 1;
    long irm = vrm.off + c * vrm.s[0], irv = vrv.off + c * vrv.s[0];
    // The reductions run in every mode (over no elements in eval): no barrier sits in a
    // branch (PoCL 3.0 miscompiled bn_fwd when they did, even with a uniform condition).
    int train = flags & BN_TRAIN;
    T cnt = 0, mu = 0, q = 0;
    bn_welford(0, train ? m : 0, nd, sh, hw, x, vx, c * sxc, &cnt, &mu, &q);
    group_welford(&cnt, &mu, &q, buf);
    T var = q / (T)m;
    if (!train) {
        mu = rm[irm];
        var = rv[irv];
    } else if (lid == 0 && (flags & BN_UPDATE)) {
        rm[irm] = ((T)1 - momentum) * rm[irm] + momentum * mu;
        rv[irv] = ((T)1 - momentum) * rv[irv] + momentum * var * (T)m / (T)(m - 1);
    }
    T is = (T)1 / sqrt(var + eps);
    bn_apply(0, m, nd, sh, hw, y, vy, c * syc, x, vx, c * sxc, mu, BN_W_OF(c) * is, BN_B_OF(c),
             flags);
    if (lid == 0) {
        mean_out[c] = mu;
        invstd_out[c] = is;
    }
}

// With xh = (x - mean) * invstd: gb = sum(g), gw = sum(g * xh), and
// gx = w * invstd * (g - gb / m - xh * gw / m) in training, w * invstd * g in eval.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bn_bwd(long m, int nd, shape_t sh, __global S *gx, view_t vgx, long sgxc,
            __global const S *gy, view_t vgy, long sgyc, __global const S *x, view_t vx,
            long sxc, __global const T *w, view_t vw, __global const T *mean,
            __global const T *invstd, __global T *gw, __global T *gb, int flags,
            __global const T *b, view_t vb) {
    __local T buf[WG];
    const uint hw = BN_HW(nd, sh, m);
    long c = get_group_id(0);
    int lid = get_local_id(0);
    T mu = mean[c], is = invstd[c];
    // BN_ACTS: the forward's scale and shift, so the pre-activation is recomputed bit for bit
    const T fscale = BN_W_OF(c) * is, fshift = BN_B_OF(c);
    T sg = 0, sgx = 0;
    bn_gsums(0, m, nd, sh, hw, gy, vgy, c * sgyc, x, vx, c * sxc, mu, is, fscale, fshift, flags,
             &sg, &sgx);
    sg = group_sum(sg, buf);
    sgx = group_sum(sgx, buf);
    if (lid == 0 && (flags & BN_GW)) gw[c] = sgx;
    if (lid == 0 && (flags & BN_GB)) gb[c] = sg;
    int train = flags & BN_TRAIN;
    bn_gx(0, (flags & BN_GX) ? m : 0, nd, sh, hw, gx, vgx, c * sgxc, gy, vgy, c * sgyc, x, vx,
          c * sxc, mu, is, fscale, fshift, fscale, train ? sg / (T)m : (T)0,
          train ? sgx / (T)m : (T)0, flags);
}

// -- GPU batch norm over S work-groups per channel (training; norm.py's _bn_nsplit): where C
// work-groups alone leave most compute units idle and channels are long (ResNet-18 at batch
// 128: 64 channels of 131072 elements on an H200's 132 units), each direction takes two
// launches: *_part: group (c, s) reduces chunk s of channel c (elements [s * chunk,
// (s + 1) * chunk), chunk = ceil(m / S)) into part[c][s] (forward: its Welford state, count,
// mean, M2; backward: sum g, sum g * xhat); *_split: group (c, s) merges channel c's S partial
// states in order (every work item alike), then writes chunk s (and, in group s = 0, the
// per-channel outputs).
#ifdef BN_VEC
#define BN_ROUND(n) (((n) + 3) & ~3L)  // chunks of whole groups of 4
#else
#define BN_ROUND(n) (n)
#endif
#define BN_CHUNK                                                     \
    const uint hw = BN_HW(nd, sh, m);                                \
    long c = get_group_id(0) / nsplit, s = get_group_id(0) % nsplit; \
    long chunk = BN_ROUND((m + nsplit - 1) / nsplit);                \
    long j0 = s * chunk, j1 = min(m, j0 + chunk);                    \
    int lid = get_local_id(0);

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bn_fwd_part(long m, int nd, shape_t sh, __global const S *x, view_t vx, long sxc,
                 long nsplit, __global T *part) {
    __local T buf[3 * WG];
    BN_CHUNK
    T cnt = 0, mu = 0, q = 0;
    bn_welford(j0, j1, nd, sh, hw, x, vx, c * sxc, &cnt, &mu, &q);
    group_welford(&cnt, &mu, &q, buf);
    if (lid == 0) {
        __global T *p = part + (c * nsplit + s) * 3;
        p[0] = cnt;
        p[1] = mu;
        p[2] = q;
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bn_fwd_split(long m, int nd, shape_t sh, __global S *y, view_t vy, long syc,
                  __global const S *x, view_t vx, long sxc, __global const T *w, view_t vw,
                  __global const T *b, view_t vb, __global T *rm, view_t vrm, __global T *rv,
                  view_t vrv, __global T *mean_out, __global T *invstd_out, T momentum, T eps,
                  int flags, __global long *count, long count_off, long nsplit,
                  __global const T *part) {
    BN_CHUNK
    if ((flags & BN_COUNT) && c == 0 && s == 0 && lid == 0) count[count_off] += 1;
    T n = 0, mu = 0, q = 0;
    for (long k = 0; k < nsplit; ++k) {  // Chan et al.'s merge, as group_welford
        __global const T *p = part + (c * nsplit + k) * 3;
        T nb = p[0];
        if (nb > (T)0) {
            T tot = n + nb, f = nb / tot, d = p[1] - mu;
            mu += d * f;
            q += p[2] + d * (d * n * f);  // as group_welford
            n = tot;
        }
    }
    T var = q / (T)m, is = (T)1 / sqrt(var + eps);
    if (s == 0 && lid == 0) {
        long irm = vrm.off + c * vrm.s[0], irv = vrv.off + c * vrv.s[0];
        if (flags & BN_UPDATE) {
            rm[irm] = ((T)1 - momentum) * rm[irm] + momentum * mu;
            rv[irv] = ((T)1 - momentum) * rv[irv] + momentum * var * (T)m / (T)(m - 1);
        }
        mean_out[c] = mu;
        invstd_out[c] = is;
    }
    bn_apply(j0, j1, nd, sh, hw, y, vy, c * syc, x, vx, c * sxc, mu, BN_W_OF(c) * is,
             BN_B_OF(c), flags);
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bn_bwd_part(long m, int nd, shape_t sh, __global const S *gy, view_t vgy, long sgyc,
                 __global const S *x, view_t vx, long sxc, __global const T *w, view_t vw,
                 __global const T *mean, __global const T *invstd, int flags,
                 __global const T *b, view_t vb, long nsplit, __global T *part) {
    __local T buf[WG];
    BN_CHUNK
    T mu = mean[c], is = invstd[c], sg = 0, sgx = 0;
    bn_gsums(j0, j1, nd, sh, hw, gy, vgy, c * sgyc, x, vx, c * sxc, mu, is, BN_W_OF(c) * is,
             BN_B_OF(c), flags, &sg, &sgx);
    sg = group_sum(sg, buf);
    sgx = group_sum(sgx, buf);
    if (lid == 0) {
        part[(c * nsplit + s) * 2] = sg;
        part[(c * nsplit + s) * 2 + 1] = sgx;
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bn_bwd_split(long m, int nd, shape_t sh, __global S *gx, view_t vgx, long sgxc,
                  __global const S *gy, view_t vgy, long sgyc, __global const S *x, view_t vx,
                  long sxc, __global const T *w, view_t vw, __global const T *mean,
                  __global const T *invstd, __global T *gw, __global T *gb, int flags,
                  __global const T *b, view_t vb, long nsplit, __global const T *part) {
    BN_CHUNK
    T sg = 0, sgx = 0;
    for (long k = 0; k < nsplit; ++k) {
        sg += part[(c * nsplit + k) * 2];
        sgx += part[(c * nsplit + k) * 2 + 1];
    }
    if (s == 0 && lid == 0 && (flags & BN_GW)) gw[c] = sgx;
    if (s == 0 && lid == 0 && (flags & BN_GB)) gb[c] = sg;
    T mu = mean[c], is = invstd[c], fscale = BN_W_OF(c) * is;
    bn_gx(j0, (flags & BN_GX) ? j1 : j0, nd, sh, hw, gx, vgx, c * sgxc, gy, vgy, c * sgyc, x,
          vx, c * sxc, mu, is, fscale, BN_B_OF(c), fscale, sg / (T)m, sgx / (T)m, flags);
}

// -- CPU variants of bn_fwd / bn_bwd: one work item per channel (launched with work-groups of
// one), no barriers; the channel is walked as rows of the collapsed geometry (nd <= 2: (outer,
// inner), e.g. (N, H*W)), with 8-wide vector loads along a row when every view has an inner
// stride of 1 (UNIT). On Intel's CPU runtime the work-group versions above ran ~25x slower than
// a ReLU of the same tensor (S5, a MobileNet epoch: 80 % of the time in bn_fwd/bn_bwd); these
// stream. nd > 2 (views that do not collapse) walks the flat index with off1.
#define V8 CAT(T, 8)
#define CAT(a, b) CAT_(a, b)
#define CAT_(a, b) a##b

inline long rows_outer(int nd, const shape_t sh) { return nd == 2 ? sh.n[0] : 1; }
inline long rows_inner(long m, int nd, const shape_t sh) {
    return nd == 2 ? sh.n[1] : (nd == 1 ? sh.n[0] : m);
}
// Offset of element (o, i) in view v.
inline long row_off(long o, long i, int nd, const shape_t sh, const view_t v) {
    if (nd == 2) return v.off + o * v.s[0] + i * v.s[1];
    if (nd == 1) return v.off + i * v.s[0];
    return off1(i, nd, sh, v);
}
#ifdef UNIT
#define ROW_VECTORS 1  // rows are unit-stride in every view: vector loads along them
#else
#define ROW_VECTORS 0
#endif

// relu6 and silu on a vector, as bn_act's scalars (NaN passes through both)
#define RELU6_8(v) select(select((v), (V8)6, (v) > (V8)6), (V8)0, (v) < (V8)0)
#define SIG8(v) ((V8)1 / ((V8)1 + exp(-(v))))
// gy times the activation's derivative at v, on vectors (bn_act_grad)
inline V8 bn_act_grad8(V8 g, V8 v, int flags) {
    if (flags & BN_RELU) return select(g, (V8)0, v <= (V8)RELU_CUT);
    if (flags & BN_RELU6)
        return select(g, (V8)0, (v <= (V8)RELU_CUT) | (v >= (V8)RELU6_TOP));
    if (flags & BN_SILU) {
        V8 sg = SIG8(v);
        return g * sg * ((V8)1 + v * ((V8)1 - sg));
    }
    return g;
}

inline T hsum8(V8 v) { return ((v.s0 + v.s1) + (v.s2 + v.s3)) + ((v.s4 + v.s5) + (v.s6 + v.s7)); }

// Sums over the channel of d = x - mu and of d * d (one pass): *s1 and *s2.
inline void rows_sums(__global const S *x, long xc, view_t vx, long m, int nd,
                      const shape_t sh, T mu, T *s1, T *s2) {
    long outer = rows_outer(nd, sh), inner = rows_inner(m, nd, sh);
    T t1 = 0, t2 = 0;
    for (long o = 0; o < outer; ++o) {
        long i = 0;
        V8 a1 = (V8)0, a2 = (V8)0;
        T r1 = 0, r2 = 0;
        if (ROW_VECTORS && nd <= 2) {
            __global const S *px = x + row_off(o, 0, nd, sh, vx) + xc;
            for (; i + 8 <= inner; i += 8) {
                V8 d = LD8(px + i) - (V8)mu;
                a1 += d;
                a2 += d * d;
            }
        }
        for (; i < inner; ++i) {
            T d = LD1(x, row_off(o, i, nd, sh, vx) + xc) - mu;
            r1 += d;
            r2 += d * d;
        }
        t1 += hsum8(a1) + r1;
        t2 += hsum8(a2) + r2;
    }
    *s1 = t1;
    *s2 = t2;
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void bn_fwd_rows(long m, int nd, shape_t sh, __global S *y, view_t vy, long syc,
                 __global const S *x, view_t vx, long sxc, __global const T *w, view_t vw,
                 __global const T *b, view_t vb, __global T *rm, view_t vrm, __global T *rv,
                 view_t vrv, __global T *mean_out, __global T *invstd_out, T momentum, T eps,
                 int flags, __global long *count, long count_off) {
    long c = get_global_id(0);
    if ((flags & BN_COUNT) && c == 0) count[count_off] += 1;
    long xc = c * sxc, yc = c * syc;
    long irm = vrm.off + c * vrm.s[0], irv = vrv.off + c * vrv.s[0];
    T mu, var;
    if (flags & BN_TRAIN) {
        // The corrected two-pass algorithm (Chan, Golub and LeVeque, "Algorithms for computing
        // the sample variance", 1983): a first mean, then the sums of d = x - mean and d^2;
        // sum(d) / m corrects the mean, and the variance loses nothing to offsets.
        T s1, s2;
        rows_sums(x, xc, vx, m, nd, sh, (T)0, &s1, &s2);
        T mu0 = s1 / (T)m;
        rows_sums(x, xc, vx, m, nd, sh, mu0, &s1, &s2);
        mu = mu0 + s1 / (T)m;
        var = s2 / (T)m - (s1 / (T)m) * (s1 / (T)m);
        if (var < (T)0) var = (T)0;  // rounding at var ~ 0; NaN stays NaN
        if (flags & BN_UPDATE) {
            rm[irm] = ((T)1 - momentum) * rm[irm] + momentum * mu;
            rv[irv] = ((T)1 - momentum) * rv[irv] + momentum * var * (T)m / (T)(m - 1);
        }
    } else {
        mu = rm[irm];
        var = rv[irv];
    }
    T is = (T)1 / sqrt(var + eps);
    T wc = (flags & BN_W) ? w[vw.off + c * vw.s[0]] : (T)1;
    T bc = (flags & BN_B) ? b[vb.off + c * vb.s[0]] : (T)0;
    T scale = wc * is, shift = bc - mu * scale;
    long outer = rows_outer(nd, sh), inner = rows_inner(m, nd, sh);
    for (long o = 0; o < outer; ++o) {
        long i = 0;
        if (ROW_VECTORS && nd <= 2) {
            __global const S *px = x + row_off(o, 0, nd, sh, vx) + xc;
            __global S *py = y + row_off(o, 0, nd, sh, vy) + yc;
            if (flags & BN_RELU) {
                for (; i + 8 <= inner; i += 8) {
                    V8 v = LD8(px + i) * (V8)scale + (V8)shift;
                    ST8(RELU8(v), py + i);
                }
            } else if (flags & BN_RELU6) {
                for (; i + 8 <= inner; i += 8) {
                    V8 v = LD8(px + i) * (V8)scale + (V8)shift;
                    ST8(RELU6_8(v), py + i);
                }
            } else if (flags & BN_SILU) {
                for (; i + 8 <= inner; i += 8) {
                    V8 v = LD8(px + i) * (V8)scale + (V8)shift;
                    ST8(v * SIG8(v), py + i);
                }
            } else {
                for (; i + 8 <= inner; i += 8)
                    ST8(LD8(px + i) * (V8)scale + (V8)shift, py + i);
            }
        }
        for (; i < inner; ++i) {
            T v = LD1(x, row_off(o, i, nd, sh, vx) + xc) * scale + shift;
            ST1(y, row_off(o, i, nd, sh, vy) + yc, bn_act(v, flags));
        }
    }
    mean_out[c] = mu;
    invstd_out[c] = is;
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void bn_bwd_rows(long m, int nd, shape_t sh, __global S *gx, view_t vgx, long sgxc,
                 __global const S *gy, view_t vgy, long sgyc, __global const S *x, view_t vx,
                 long sxc, __global const T *w, view_t vw, __global const T *mean,
                 __global const T *invstd, __global T *gw, __global T *gb, int flags,
                 __global const T *b, view_t vb) {
    long c = get_global_id(0);
    long xc = c * sxc, gyc = c * sgyc, gxc = c * sgxc;
    T mu = mean[c], is = invstd[c];
    long outer = rows_outer(nd, sh), inner = rows_inner(m, nd, sh);
    // BN_ACTS: the forward's scale and shift, so the pre-activation is recomputed bit for bit
    const int relu = flags & BN_ACTS;
    const T fscale = ((flags & BN_W) ? w[vw.off + c * vw.s[0]] : (T)1) * is;
    const T fshift = ((flags & BN_B) ? b[vb.off + c * vb.s[0]] : (T)0) - mu * fscale;
    T sg = 0, sgx = 0;
    for (long o = 0; o < outer; ++o) {
        long i = 0;
        V8 ag = (V8)0, agx = (V8)0;
        T tg = 0, tgx = 0;
        if (ROW_VECTORS && nd <= 2) {
            __global const S *px = x + row_off(o, 0, nd, sh, vx) + xc;
            __global const S *pg = gy + row_off(o, 0, nd, sh, vgy) + gyc;
            for (; i + 8 <= inner; i += 8) {
                V8 g = LD8(pg + i), xv8 = LD8(px + i);
                if (relu) g = bn_act_grad8(g, xv8 * (V8)fscale + (V8)fshift, flags);
                ag += g;
                agx += g * (xv8 - (V8)mu);
            }
        }
        for (; i < inner; ++i) {
            T g = LD1(gy, row_off(o, i, nd, sh, vgy) + gyc);
            T xi = LD1(x, row_off(o, i, nd, sh, vx) + xc);
            if (relu) g = bn_act_grad(g, xi * fscale + fshift, flags);
            tg += g;
            tgx += g * (xi - mu);
        }
        sg += hsum8(ag) + tg;
        sgx += hsum8(agx) + tgx;
    }
    sgx *= is;
    if (flags & BN_GW) gw[c] = sgx;
    if (flags & BN_GB) gb[c] = sg;
    if (!(flags & BN_GX)) return;
    T k = ((flags & BN_W) ? w[vw.off + c * vw.s[0]] : (T)1) * is;
    int train = flags & BN_TRAIN;
    T a = train ? sg / (T)m : (T)0, bq = train ? sgx / (T)m : (T)0;
    // gx = k * (g - a - (x - mu) * is * bq) = k * g + (x - mu) * kq - k * a, kq = -k * is * bq
    T kq = -k * is * bq, k0 = -k * a;
    for (long o = 0; o < outer; ++o) {
        long i = 0;
        if (ROW_VECTORS && nd <= 2) {
            __global const S *px = x + row_off(o, 0, nd, sh, vx) + xc;
            __global const S *pg = gy + row_off(o, 0, nd, sh, vgy) + gyc;
            __global S *pgx = gx + row_off(o, 0, nd, sh, vgx) + gxc;
            for (; i + 8 <= inner; i += 8) {
                V8 g = LD8(pg + i), xv8 = LD8(px + i);
                if (relu) g = bn_act_grad8(g, xv8 * (V8)fscale + (V8)fshift, flags);
                ST8(train ? (V8)k * g + (xv8 - (V8)mu) * (V8)kq + (V8)k0 : (V8)k * g,
                    pgx + i);
            }
        }
        for (; i < inner; ++i) {
            T g = LD1(gy, row_off(o, i, nd, sh, vgy) + gyc);
            T xi = LD1(x, row_off(o, i, nd, sh, vx) + xc);
            if (relu) g = bn_act_grad(g, xi * fscale + fshift, flags);
            ST1(gx, row_off(o, i, nd, sh, vgx) + gxc,
                train ? k * g + (xi - mu) * kq + k0 : k * g);  // (eval: x not read, bn_gx)
        }
    }
}

// s^-beta for s > 0. AlexNet's beta = 0.75 takes square roots: s^-3/4 = s^-1/2 * s^-1/4
// (exp and log cost 10x more on PoCL; pow() 40x).
inline T pow_neg(T s, T beta) {
    if (beta == (T)0.75f) {  // f: float32 builds must not see a double literal
        T r = rsqrt(s);
        return r * sqrt(r);
    }
    return exp(-beta * log(s));
}

// Local response norm across channels (PyTorch = Caffe/AlexNet):
// scale_c = k + alpha / size * sum_{c' = c - size/2}^{c + (size-1)/2} x_c'^2 (zero padded),
// y_c = x_c * scale_c^-beta. Element i of the contiguous (N, C, S) output is channel
// c = (i / S) % C of rest element j = (i / (C S)) * S + i % S. scale is saved for backward.
__kernel void lrn_fwd(long total, long nc, long ns, int nd, shape_t sh, __global T *y,
                      __global T *scale, __global const T *x, view_t vx, long sxc, long size,
                      T alpha, T beta, T k) {
    long i = get_global_id(0);
    if (i >= total) return;
    long c = (i / ns) % nc;
    long j = (i / (nc * ns)) * ns + i % ns;
    long base = off1(j, nd, sh, vx);
    long lo = max(c - size / 2, 0L), hi = min(c + (size - 1) / 2, nc - 1);
    T acc = 0;
    for (long q = lo; q <= hi; ++q) {
        T v = x[base + q * sxc];
        acc += v * v;
    }
    T sc = k + alpha / (T)size * acc;
    scale[i] = sc;
    y[i] = x[base + c * sxc] * pow_neg(sc, beta);
}

// gx_c = g_c scale_c^-beta - 2 alpha beta / size * x_c * sum over the channels q whose window
// holds c (q in [c - (size-1)/2, c + size/2]) of g_q x_q scale_q^(-beta-1), where
// x_q scale_q^(-beta-1) = y_q / scale_q (y the saved output): one power per element.
__kernel void lrn_bwd(long total, long nc, long ns, int nd, shape_t sh, __global T *gx,
                      __global const T *gy, view_t vgy, long sgc, __global const T *x,
                      view_t vx, long sxc, __global const T *y, __global const T *scale,
                      long size, T alpha, T beta) {
    long i = get_global_id(0);
    if (i >= total) return;
    long c = (i / ns) % nc;
    long j = (i / (nc * ns)) * ns + i % ns;
    long bg, bx;
    off2(j, nd, sh, vgy, vx, &bg, &bx);
    long lo = max(c - (size - 1) / 2, 0L), hi = min(c + size / 2, nc - 1);
    T acc = 0;
    for (long q = lo; q <= hi; ++q) {
        long iq = i + (q - c) * ns;
        acc += gy[bg + q * sgc] * y[iq] / scale[iq];
    }
    T xc = x[bx + c * sxc];
    gx[i] = gy[bg + c * sgc] * pow_neg(scale[i], beta) -
            (T)2 * alpha * beta / (T)size * xc * acc;
}

// Row normalisation (layer_norm, group_norm): one work-group per row r of m elements,
// y = (x - mean_r) * rstd_r * w[a] + b[a], with the affine index a = (r % ng) * cg + j / sp
// (layer_norm: ng = 1, sp = 1, a = j; group_norm: rows (n, g), a = the channel of element j).
// Element j of row r of a strided tensor is at off1(r, ndr, shr, vr) + off1(j, ndm, shm, vm)
// (vr holds the tensor's offset, vm.off = 0); y, gx and gxh are contiguous (r * m + j).
// Statistics in two passes (mean, then the mean squared deviation), as bn_fwd.
#define RN_W 1        // weight given
#define RN_B 2        // bias given
#define RN_GX 4       // backward: write gx
#define RN_GXH 8      // backward: write gxh = g * xhat (for the weight gradient)

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rn_fwd(long m, int ndr, shape_t shr, int ndm, shape_t shm, __global T *y,
            __global const T *x, view_t vxr, view_t vxm, __global const T *w, view_t vw,
            __global const T *b, view_t vb, __global T *mean_out, __global T *rstd_out, T eps,
            long ng, long cg, long sp, int flags) {
    __local T buf[WG];
    long r = get_group_id(0);
    int lid = get_local_id(0);
    long xr = off1(r, ndr, shr, vxr);
    T s = 0;
    for (long j = lid; j < m; j += WG) s += x[xr + off1(j, ndm, shm, vxm)];
    T mu = group_sum(s, buf) / (T)m;
    T q = 0;
    for (long j = lid; j < m; j += WG) {
        T d = x[xr + off1(j, ndm, shm, vxm)] - mu;
        q += d * d;
    }
    T is = (T)1 / sqrt(group_sum(q, buf) / (T)m + eps);
    long a0 = (r % ng) * cg;
    for (long j = lid; j < m; j += WG) {
        long a = a0 + j / sp;
        T wa = (flags & RN_W) ? w[vw.off + a * vw.s[0]] : (T)1;
        T ba = (flags & RN_B) ? b[vb.off + a * vb.s[0]] : (T)0;
        y[r * m + j] = (x[xr + off1(j, ndm, shm, vxm)] - mu) * is * wa + ba;
    }
    if (lid == 0) {
        mean_out[r] = mu;
        rstd_out[r] = is;
    }
}

// With xh = (x - mean) * rstd and gh = g * w[a]:
// gx = rstd * (gh - mean_j(gh) - xh * mean_j(gh * xh)); gxh = g * xh (summed by the caller
// into the weight gradient).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rn_bwd(long m, int ndr, shape_t shr, int ndm, shape_t shm, __global T *gx,
            __global T *gxh, __global const T *gy, view_t vgr, view_t vgm,
            __global const T *x, view_t vxr, view_t vxm, __global const T *w, view_t vw,
            __global const T *mean, __global const T *rstd, long ng, long cg, long sp,
            int flags) {
    __local T buf[WG];
    long r = get_group_id(0);
    int lid = get_local_id(0);
    long xr = off1(r, ndr, shr, vxr), gr = off1(r, ndr, shr, vgr);
    T mu = mean[r], is = rstd[r];
    long a0 = (r % ng) * cg;
    T s1 = 0, s2 = 0;
    for (long j = lid; j < m; j += WG) {
        long a = a0 + j / sp;
        T g = gy[gr + off1(j, ndm, shm, vgm)];
        T xh = (x[xr + off1(j, ndm, shm, vxm)] - mu) * is;
        T gh = g * ((flags & RN_W) ? w[vw.off + a * vw.s[0]] : (T)1);
        s1 += gh;
        s2 += gh * xh;
        if (flags & RN_GXH) gxh[r * m + j] = g * xh;
    }
    s1 = group_sum(s1, buf) / (T)m;
    s2 = group_sum(s2, buf) / (T)m;
    long mx = (flags & RN_GX) ? m : 0;
    for (long j = lid; j < mx; j += WG) {
        long a = a0 + j / sp;
        T g = gy[gr + off1(j, ndm, shm, vgm)];
        T xh = (x[xr + off1(j, ndm, shm, vxm)] - mu) * is;
        T gh = g * ((flags & RN_W) ? w[vw.off + a * vw.s[0]] : (T)1);
        gx[r * m + j] = is * (gh - s1 - xh * s2);
    }
}
