// kernels/optim.cl — fused optimizer updates: one launch per parameter per step, in place.
// Defines: T element type (a float type).
// Launch: 1-D over the parameter's elements (dims collapsed by clgrad.ops._util.launch_1d);
// every tensor argument is (data, view_t) with its own strides, so any strided view works.
// The update equations are PyTorch's (torch.optim.SGD / Adam / AdamW, single-tensor path);
// clgrad/optim/*.py documents them and computes the per-step scalars on the host.
#include "common.h"

#define OPT_HEAD long i = get_global_id(0); if (i >= n) return;

// SGD without momentum: p -= lr * (g + wd * p).
__kernel void sgd(long n, int nd, shape_t sh, __global T *p, view_t vp,
                  __global const T *g, view_t vg, T lr, T weight_decay) {
    OPT_HEAD
    long op, og;
    off2(i, nd, sh, vp, vg, &op, &og);
    T x = p[op];
    T d = g[og] + weight_decay * x;
    p[op] = x - lr * d;
}

// SGD with momentum (Sutskever et al. 2013, PyTorch's form):
//   d = g + wd * p
//   buf = first ? d : momentum * buf + (1 - dampening) * d
//   d = nesterov ? d + momentum * buf : buf
//   p -= lr * d
__kernel void sgd_momentum(long n, int nd, shape_t sh, __global T *p, view_t vp,
                           __global const T *g, view_t vg, __global T *buf, view_t vb,
                           T lr, T momentum, T dampening, T weight_decay, int nesterov,
                           int first) {
    OPT_HEAD
    long op, og, ob;
    off3(i, nd, sh, vp, vg, vb, &op, &og, &ob);
    T x = p[op];
    T d = g[og] + weight_decay * x;
    T b = first ? d : momentum * buf[ob] + ((T)1 - dampening) * d;
    buf[ob] = b;
    d = nesterov ? d + momentum * b : b;
    p[op] = x - lr * d;
}

// Adam (Kingma & Ba 2015) and AdamW (Loshchilov & Hutter 2019), PyTorch's form:
//   AdamW: p *= 1 - lr * wd                 (decoupled; decoupled != 0)
//   Adam:  g += wd * p                      (L2 in the gradient; decoupled == 0)
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   p -= step_size * m / (sqrt(v) / bc2_sqrt + eps),  step_size = lr / (1 - beta1^t),
//                                                       bc2_sqrt = sqrt(1 - beta2^t)
__kernel void adam(long n, int nd, shape_t sh, __global T *p, view_t vp,
                   __global const T *g, view_t vg, __global T *m, view_t vm,
                   __global T *v, view_t vv, T lr, T beta1, T beta2, T eps, T weight_decay,
                   T step_size, T bc2_sqrt, int decoupled) {
    OPT_HEAD
    long op, og, om, ov;
    off4(i, nd, sh, vp, vg, vm, vv, &op, &og, &om, &ov);
    T x = p[op];
    T gr = g[og];
    if (decoupled) x *= (T)1 - lr * weight_decay;
    else gr += weight_decay * x;
    T mi = beta1 * m[om] + ((T)1 - beta1) * gr;
    T vi = beta2 * v[ov] + ((T)1 - beta2) * gr * gr;
    m[om] = mi;
    v[ov] = vi;
    p[op] = x - step_size * mi / (sqrt(vi) / bc2_sqrt + eps);
}
