// kernels/norm.cl — batch norm (one work-group per channel) and local response norm (one work
// item per element).
// Defines: T element type (float or double); WG work-group size of bn_* (a power of two).
// Geometry: the channel dim (dim 1) is split from the others. Element j of channel c of a
// tensor is at off1(j, nd, sh, v) + c * sc, where sh holds the other dims (N, *spatial)
// collapsed, v their strides (and the tensor's offset) and sc the channel stride.
#include "common.h"

// flags of bn_fwd / bn_bwd
#define BN_TRAIN 1    // batch statistics (else the running ones)
#define BN_W 2        // weight given
#define BN_B 4        // bias given
#define BN_UPDATE 8   // update running_mean / running_var (training)
#define BN_GX 16      // backward: grad of the input wanted
#define BN_GW 32      // backward: grad of the weight wanted
#define BN_GB 64      // backward: grad of the bias wanted

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

// y = (x - mean) * invstd * w + b for channel c = group id, m elements per channel.
// Training: mean and biased variance of the batch (two passes, so offsets do not cancel),
// running stats updated with the unbiased variance. mean_out/invstd_out are saved for
// backward (also in eval, where they hold the running statistics).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bn_fwd(long m, int nd, shape_t sh, __global T *y, view_t vy, long syc,
            __global const T *x, view_t vx, long sxc, __global const T *w, view_t vw,
            __global const T *b, view_t vb, __global T *rm, view_t vrm, __global T *rv,
            view_t vrv, __global T *mean_out, __global T *invstd_out, T momentum, T eps,
            int flags) {
    __local T buf[WG];
    long c = get_group_id(0);
    int lid = get_local_id(0);
    long xc = c * sxc, yc = c * syc;
    long irm = vrm.off + c * vrm.s[0], irv = vrv.off + c * vrv.s[0];
    // The reductions run in every mode (over no elements in eval): no barrier sits in a
    // branch (PoCL 3.0 miscompiled bn_fwd when they did, even with a uniform condition).
    int train = flags & BN_TRAIN;
    long mt = train ? m : 0;
    T s = 0;
    for (long j = lid; j < mt; j += WG) s += x[off1(j, nd, sh, vx) + xc];
    T mu = group_sum(s, buf) / (T)m;
    T q = 0;
    for (long j = lid; j < mt; j += WG) {
        T d = x[off1(j, nd, sh, vx) + xc] - mu;
        q += d * d;
    }
    T var = group_sum(q, buf) / (T)m;
    if (!train) {
        mu = rm[irm];
        var = rv[irv];
    } else if (lid == 0 && (flags & BN_UPDATE)) {
        rm[irm] = ((T)1 - momentum) * rm[irm] + momentum * mu;
        rv[irv] = ((T)1 - momentum) * rv[irv] + momentum * var * (T)m / (T)(m - 1);
    }
    T is = (T)1 / sqrt(var + eps);
    T wc = (flags & BN_W) ? w[vw.off + c * vw.s[0]] : (T)1;
    T bc = (flags & BN_B) ? b[vb.off + c * vb.s[0]] : (T)0;
    T scale = wc * is;
    for (long j = lid; j < m; j += WG) {
        long ox, oy;
        off2(j, nd, sh, vx, vy, &ox, &oy);
        y[oy + yc] = (x[ox + xc] - mu) * scale + bc;
    }
    if (lid == 0) {
        mean_out[c] = mu;
        invstd_out[c] = is;
    }
}

// With xh = (x - mean) * invstd: gb = sum(g), gw = sum(g * xh), and
// gx = w * invstd * (g - gb / m - xh * gw / m) in training, w * invstd * g in eval.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bn_bwd(long m, int nd, shape_t sh, __global T *gx, view_t vgx, long sgxc,
            __global const T *gy, view_t vgy, long sgyc, __global const T *x, view_t vx,
            long sxc, __global const T *w, view_t vw, __global const T *mean,
            __global const T *invstd, __global T *gw, __global T *gb, int flags) {
    __local T buf[WG];
    long c = get_group_id(0);
    int lid = get_local_id(0);
    T mu = mean[c], is = invstd[c];
    T sg = 0, sgx = 0;
    for (long j = lid; j < m; j += WG) {
        long og, ox;
        off2(j, nd, sh, vgy, vx, &og, &ox);
        T g = gy[og + c * sgyc];
        sg += g;
        sgx += g * (x[ox + c * sxc] - mu) * is;
    }
    sg = group_sum(sg, buf);
    sgx = group_sum(sgx, buf);
    if (lid == 0 && (flags & BN_GW)) gw[c] = sgx;
    if (lid == 0 && (flags & BN_GB)) gb[c] = sg;
    T k = ((flags & BN_W) ? w[vw.off + c * vw.s[0]] : (T)1) * is;
    int train = flags & BN_TRAIN;
    T a = train ? sg / (T)m : (T)0, bq = train ? sgx / (T)m : (T)0;
    long mx = (flags & BN_GX) ? m : 0;
    for (long j = lid; j < mx; j += WG) {
        long og, ox, oo;
        off3(j, nd, sh, vgy, vx, vgx, &og, &ox, &oo);
        T xh = (x[ox + c * sxc] - mu) * is;
        gx[oo + c * sgxc] = k * (gy[og + c * sgyc] - a - xh * bq);
    }
}

// s^-beta for s > 0. AlexNet's beta = 0.75 takes square roots: s^-3/4 = s^-1/2 * s^-1/4
// (exp and log cost 10x more on PoCL; pow() 40x).
inline T pow_neg(T s, T beta) {
    if (beta == (T)0.75) {
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
