// kernels/optim.cl — fused optimizer updates, in place: one launch per parameter per step, or
// per eight contiguous parameters (the *_multi kernels at the end, the default).
// Defines: T element type (a float type); variants: AMSGRAD (adam), CENTERED and MOMENTUM
// (rmsprop), each adding one state operand. nadam, radam, adamax, rprop and asgd: none.
// Launch: 1-D over the parameter's elements (dims collapsed by clgrad.ops._util.launch_1d);
// every tensor argument is (data, view_t) with its own strides, so any strided view works.
// The update equations are PyTorch's (torch.optim.SGD / Adam / AdamW, single-tensor path);
// clgrad/optim/*.py documents them and computes the per-step scalars on the host.
// `gsign` is -1 for maximize=True (PyTorch negates the gradient first), else 1. NaN in a
// gradient reaches the parameter through the arithmetic (nothing clamps or skips it).
#include "common.h"

#define OPT_HEAD long i = get_global_id(0); if (i >= n) return;

// SGD without momentum: p -= lr * (g + wd * p).
__kernel void sgd(long n, int nd, shape_t sh, __global T *p, view_t vp,
                  __global const T *g, view_t vg, T lr, T weight_decay, T gsign) {
    OPT_HEAD
    long op, og;
    off2(i, nd, sh, vp, vg, &op, &og);
    T x = p[op];
    T d = gsign * g[og] + weight_decay * x;
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
                           int first, T gsign) {
    OPT_HEAD
    long op, og, ob;
    off3(i, nd, sh, vp, vg, vb, &op, &og, &ob);
    T x = p[op];
    T d = gsign * g[og] + weight_decay * x;
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
//   AMSGRAD (Reddi et al. 2018): vmax = maximum(vmax, v) (NaN propagates), used for v below
//   p -= step_size * m / (sqrt(v) / bc2_sqrt + eps),  step_size = lr / (1 - beta1^t),
//                                                       bc2_sqrt = sqrt(1 - beta2^t)
__kernel void adam(long n, int nd, shape_t sh, __global T *p, view_t vp,
                   __global const T *g, view_t vg, __global T *m, view_t vm,
                   __global T *v, view_t vv,
#ifdef AMSGRAD
                   __global T *vmax, view_t vx,
#endif
                   T lr, T beta1, T beta2, T eps, T weight_decay,
                   T step_size, T bc2_sqrt, int decoupled, T gsign) {
    OPT_HEAD
    long op, og, om, ov;
    off4(i, nd, sh, vp, vg, vm, vv, &op, &og, &om, &ov);
    T x = p[op];
    T gr = gsign * g[og];
    if (decoupled) x *= (T)1 - lr * weight_decay;
    else gr += weight_decay * x;
    T mi = beta1 * m[om] + ((T)1 - beta1) * gr;
    T vi = beta2 * v[ov] + ((T)1 - beta2) * gr * gr;
    m[om] = mi;
    v[ov] = vi;
#ifdef AMSGRAD
    long ox = off1(i, nd, sh, vx);
    T old = vmax[ox];
    vi = (isnan(old) || old >= vi) ? old : vi;  // torch.maximum: NaN wins on either side
    vmax[ox] = vi;
#endif
    p[op] = x - step_size * mi / (sqrt(vi) / bc2_sqrt + eps);
}

// Adagrad (Duchi, Hazan & Singer, JMLR 2011), PyTorch's form; clr = lr / (1 + (t-1) lr_decay):
//   g += wd * p;  sum += g * g;  p -= clr * g / (sqrt(sum) + eps)
__kernel void adagrad(long n, int nd, shape_t sh, __global T *p, view_t vp,
                      __global const T *g, view_t vg, __global T *sum, view_t vs,
                      T clr, T weight_decay, T eps, T gsign) {
    OPT_HEAD
    long op, og, os;
    off3(i, nd, sh, vp, vg, vs, &op, &og, &os);
    T x = p[op];
    T gr = gsign * g[og] + weight_decay * x;
    T s = sum[os] + gr * gr;
    sum[os] = s;
    p[op] = x - clr * gr / (sqrt(s) + eps);
}

// Adadelta (M. D. Zeiler, arXiv:1212.5701, 2012), PyTorch's form:
//   g += wd * p
//   sq = rho * sq + (1 - rho) * g * g
//   delta = sqrt(acc + eps) / sqrt(sq + eps) * g
//   acc = rho * acc + (1 - rho) * delta * delta
//   p -= lr * delta
__kernel void adadelta(long n, int nd, shape_t sh, __global T *p, view_t vp,
                       __global const T *g, view_t vg, __global T *sq, view_t vs,
                       __global T *acc, view_t va, T lr, T rho, T eps, T weight_decay,
                       T gsign) {
    OPT_HEAD
    long op, og, os, oa;
    off4(i, nd, sh, vp, vg, vs, va, &op, &og, &os, &oa);
    T x = p[op];
    T gr = gsign * g[og] + weight_decay * x;
    T s = rho * sq[os] + ((T)1 - rho) * gr * gr;
    sq[os] = s;
    T a = acc[oa];
    T delta = sqrt(a + eps) / sqrt(s + eps) * gr;
    acc[oa] = rho * a + ((T)1 - rho) * delta * delta;
    p[op] = x - lr * delta;
}

// RMSprop (G. Hinton, Neural Networks for Machine Learning, lecture 6e; centered: A. Graves,
// arXiv:1308.0850, 2013), PyTorch's form:
//   g += wd * p
//   sq = alpha * sq + (1 - alpha) * g * g
//   CENTERED: ga = alpha * ga + (1 - alpha) * g;  avg = sqrt(sq - ga * ga) + eps
//   else:     avg = sqrt(sq) + eps
//   MOMENTUM: buf = momentum * buf + g / avg;  p -= lr * buf
//   else:     p -= lr * g / avg
__kernel void rmsprop(long n, int nd, shape_t sh, __global T *p, view_t vp,
                      __global const T *g, view_t vg, __global T *sq, view_t vs,
#ifdef CENTERED
                      __global T *ga, view_t vga,
#endif
#ifdef MOMENTUM
                      __global T *buf, view_t vb,
#endif
                      T lr, T alpha, T eps, T weight_decay, T momentum, T gsign) {
    OPT_HEAD
    long op, og, os;
    off3(i, nd, sh, vp, vg, vs, &op, &og, &os);
    T x = p[op];
    T gr = gsign * g[og] + weight_decay * x;
    T s = alpha * sq[os] + ((T)1 - alpha) * gr * gr;
    sq[os] = s;
#ifdef CENTERED
    long oga = off1(i, nd, sh, vga);
    T mean = ga[oga] + ((T)1 - alpha) * (gr - ga[oga]);  // torch: grad_avg.lerp_(g, 1 - alpha)
    ga[oga] = mean;
    T avg = sqrt(s - mean * mean) + eps;
#else
    T avg = sqrt(s) + eps;
#endif
#ifdef MOMENTUM
    long ob = off1(i, nd, sh, vb);
    T b = momentum * buf[ob] + gr / avg;
    buf[ob] = b;
    p[op] = x - lr * b;
#else
    p[op] = x - lr * gr / avg;
#endif
}

// torch.lerp's two forms (the one it picks by the weight), so a moment matches its bits.
inline T lerp_t(T a, T b, T w) {
    return w < (T)0.5f ? a + w * (b - a) : b - (b - a) * ((T)1 - w);
}

// NAdam's and RAdam's shared first half: x = p * decay, gr = the (L2-decayed) gradient, and
// the moments m and v updated in place as mi and vi (Adam's).
#define DECAYED_MOMENTS \
    OPT_HEAD \
    long op, og, om, ov; \
    off4(i, nd, sh, vp, vg, vm, vv, &op, &og, &om, &ov); \
    T x = p[op] * decay; \
    T gr = gsign * g[og] + l2 * x; \
    T mi = lerp_t(m[om], gr, (T)1 - beta1); \
    m[om] = mi; \
    T vi = beta2 * v[ov] + ((T)1 - beta2) * gr * gr; \
    v[ov] = vi;

// NAdam (T. Dozat, "Incorporating Nesterov Momentum into Adam", ICLR 2016 workshop), PyTorch's
// form; the host computes decay = 1 - lr wd (decoupled) or 1, l2 = wd (not decoupled) or 0,
// bc2 = 1 - beta2^t, c_grad = -lr (1 - mu_t) / (1 - prod mu), c_avg = -lr mu_{t+1} /
// (1 - prod mu mu_{t+1}):
//   p *= decay;  g += l2 * p
//   m = lerp(m, g, 1 - beta1);  v = beta2 v + (1 - beta2) g g;  d = sqrt(v / bc2) + eps
//   p += c_grad * (g / d);  p += c_avg * (m / d)
__kernel void nadam(long n, int nd, shape_t sh, __global T *p, view_t vp,
                    __global const T *g, view_t vg, __global T *m, view_t vm,
                    __global T *v, view_t vv, T decay, T l2, T beta1, T beta2, T bc2,
                    T c_grad, T c_avg, T eps, T gsign) {
    DECAYED_MOMENTS
    T d = sqrt(vi / bc2) + eps;
    x = x + c_grad * (gr / d);
    p[op] = x + c_avg * (mi / d);
}

// RAdam (L. Liu et al., "On the Variance of the Adaptive Learning Rate and Beyond", ICLR
// 2020), PyTorch's form; the host computes decay / l2 as nadam's, bc1 = 1 - beta1^t,
// bc2_sqrt = sqrt(1 - beta2^t), rect (the variance rectification term) and rectify (rho_t > 5):
//   p *= decay;  g += l2 * p
//   m = lerp(m, g, 1 - beta1);  v = beta2 v + (1 - beta2) g g
//   rectify: p -= m / bc1 * lr * (bc2_sqrt / (sqrt(v) + eps)) * rect
//   else:    p -= m / bc1 * lr
__kernel void radam(long n, int nd, shape_t sh, __global T *p, view_t vp,
                    __global const T *g, view_t vg, __global T *m, view_t vm,
                    __global T *v, view_t vv, T decay, T l2, T beta1, T beta2, T lr, T bc1,
                    T bc2_sqrt, T rect, T eps, T gsign, int rectify) {
    DECAYED_MOMENTS
    T u = mi / bc1 * lr;
    if (rectify) u = u * (bc2_sqrt / (sqrt(vi) + eps)) * rect;
    p[op] = x - u;
}

// Adamax (Kingma & Ba 2015, section 7.1), PyTorch's form; clr = lr / (1 - beta1^t):
//   g += wd * p;  m = lerp(m, g, 1 - beta1)
//   u = maximum(beta2 u, |g| + eps)  (NaN wins, as torch.maximum);  p += -clr * (m / u)
__kernel void adamax(long n, int nd, shape_t sh, __global T *p, view_t vp,
                     __global const T *g, view_t vg, __global T *m, view_t vm,
                     __global T *u, view_t vu, T beta1, T beta2, T eps, T weight_decay,
                     T clr, T gsign) {
    OPT_HEAD
    long op, og, om, ou;
    off4(i, nd, sh, vp, vg, vm, vu, &op, &og, &om, &ou);
    T x = p[op];
    T gr = gsign * g[og] + weight_decay * x;
    T mi = lerp_t(m[om], gr, (T)1 - beta1);
    m[om] = mi;
    T a = u[ou] * beta2, b = fabs(gr) + eps;
    T ui = (isnan(a) || a >= b) ? a : b;
    u[ou] = ui;
    p[op] = x + (-clr) * (mi / ui);
}

// Rprop (M. Riedmiller and H. Braun, "A Direct Adaptive Method for Faster Backpropagation
// Learning: The RPROP Algorithm", ICNN 1993), PyTorch's form:
//   s = sign(g * prev);  f = etaplus (s > 0), etaminus (s < 0), 1 (s == 0)
//   step = clamp(step * f, step_min, step_max)     (NaN stays NaN, as torch.clamp)
//   g = 0 where f == etaminus;  p -= sign(g) * step;  prev = g
// SIGN_T: sign with NaN -> 0, as torch.sign's (OpenCL's sign has no half overload on NVIDIA:
// tools/nvidia_half_check.py).
#define SIGN_T(x) ((x) > (T)0 ? (T)1 : ((x) < (T)0 ? (T)(-1) : (T)0))
__kernel void rprop(long n, int nd, shape_t sh, __global T *p, view_t vp,
                    __global const T *g, view_t vg, __global T *prev, view_t vr,
                    __global T *step, view_t vs, T etaminus, T etaplus, T step_min,
                    T step_max, T gsign) {
    OPT_HEAD
    long op, og, opv, os;
    off4(i, nd, sh, vp, vg, vr, vs, &op, &og, &opv, &os);
    T gr = gsign * g[og];
    T s = SIGN_T(gr * prev[opv]);
    T f = s > (T)0 ? etaplus : (s < (T)0 ? etaminus : (s == (T)0 ? (T)1 : s));
    T st = step[os] * f;
    st = st < step_min ? step_min : (st > step_max ? step_max : st);
    step[os] = st;
    if (f == etaminus) gr = (T)0;
    p[op] = p[op] + (T)(-1) * SIGN_T(gr) * st;
    prev[opv] = gr;
}

// ASGD (B. T. Polyak and A. B. Juditsky, "Acceleration of Stochastic Approximation by
// Averaging", SIAM J. Control Optim. 1992), PyTorch's form; eta and mu are this step's
// (computed on the host from the previous step count):
//   g += wd * p;  p *= 1 - lambd * eta;  p += -eta * g
//   ax = mu != 1 ? ax + (p - ax) * mu : p
__kernel void asgd(long n, int nd, shape_t sh, __global T *p, view_t vp,
                   __global const T *g, view_t vg, __global T *ax, view_t va,
                   T decay, T eta, T weight_decay, T mu, T gsign, int average) {
    OPT_HEAD
    long op, og, oa;
    off3(i, nd, sh, vp, vg, va, &op, &og, &oa);
    T x = p[op];
    T gr = gsign * g[og] + weight_decay * x;
    x = x * decay;
    x = x + (-eta) * gr;
    p[op] = x;
    T a = ax[oa];
    ax[oa] = average ? a + (x - a) * mu : x;
}

// Multi-tensor updates (foreach / fused, the default): up to MULTI = 8 parameters per launch.
// Slot k covers elements [0, n_k) of contiguous operands, each at its own element offset
// (o..k); an unused slot has n_k = 0. Launch: 1-D, ceil(n_k / L) work-groups of L items for
// each slot in turn (L the work-group size), so a work-group lies in one slot: the slot is
// picked per work-group (SLOT_PICK walks the groups' counts), a uniform branch, and the
// group's items run the per-element arithmetic of sgd / sgd_momentum / adam above, expression
// for expression (a multi-tensor step gives the single-tensor step's bits). With the slot
// picked per item, CPU compilers could not vectorise the items (their pointers differed):
// AlexNet's update took 4x the one-launch-per-parameter time on Intel's runtime. 8 slots keep
// the largest argument list (adam_multi: 8 x 72 bytes + scalars) under OpenCL's minimum
// CL_DEVICE_MAX_PARAMETER_SIZE of 1024 bytes.

#define SLOTS8(M) M(0), M(1), M(2), M(3), M(4), M(5), M(6), M(7)
// The slot of this work-group: c_k = ceil(n_k / L) groups per slot, the group index counted
// down past the slots before; SET(k) binds slot k's operands. Groups past every slot, and
// items past their slot's end, return; i is the item's element within its slot.
#define SLOT_NEXT(k, j, SET) \
    else if ((grp -= c##j) < (c##k = (n##k + L - 1) / L)) { SET(k) nk = n##k; }
#define SLOT_PICK(SET) \
    long L = (long)get_local_size(0), grp = (long)get_group_id(0), nk = 0; \
    long c0, c1, c2, c3, c4, c5, c6, c7; \
    if (grp < (c0 = (n0 + L - 1) / L)) { SET(0) nk = n0; } \
    SLOT_NEXT(1, 0, SET) SLOT_NEXT(2, 1, SET) SLOT_NEXT(3, 2, SET) SLOT_NEXT(4, 3, SET) \
    SLOT_NEXT(5, 4, SET) SLOT_NEXT(6, 5, SET) SLOT_NEXT(7, 6, SET) else return; \
    long i = grp * L + (long)get_local_id(0); \
    if (i >= nk) return;

#define SGD_SLOT(k) long n##k, __global T *p##k, long op##k, __global const T *g##k, long og##k
#define SGD_SET(k) p = p##k + op##k; g = g##k + og##k;
__kernel void sgd_multi(SLOTS8(SGD_SLOT), T lr, T weight_decay, T gsign) {
    __global T *p;
    __global const T *g;
    SLOT_PICK(SGD_SET)
    T x = p[i];
    T d = gsign * g[i] + weight_decay * x;
    p[i] = x - lr * d;
}

// (the per-slot first-step flags come last: they change between steps, see capture.dynamic)
#define SGDM_SLOT(k) long n##k, __global T *p##k, long op##k, __global const T *g##k, \
    long og##k, __global T *b##k, long ob##k
#define SGDM_SET(k) p = p##k + op##k; g = g##k + og##k; buf = b##k + ob##k; first = first##k;
#define FIRST_FLAG(k) int first##k
__kernel void sgd_momentum_multi(SLOTS8(SGDM_SLOT), T lr, T momentum, T dampening,
                                 T weight_decay, int nesterov, T gsign, SLOTS8(FIRST_FLAG)) {
    __global T *p;
    __global const T *g;
    __global T *buf;
    int first;
    SLOT_PICK(SGDM_SET)
    T x = p[i];
    T d = gsign * g[i] + weight_decay * x;
    T b = first ? d : momentum * buf[i] + ((T)1 - dampening) * d;
    buf[i] = b;
    d = nesterov ? d + momentum * b : b;
    p[i] = x - lr * d;
}

#define ADAM_SLOT(k) long n##k, __global T *p##k, long op##k, __global const T *g##k, \
    long og##k, __global T *m##k, long om##k, __global T *v##k, long ov##k
#define ADAM_SET(k) p = p##k + op##k; g = g##k + og##k; m = m##k + om##k; v = v##k + ov##k;
__kernel void adam_multi(SLOTS8(ADAM_SLOT), T lr, T beta1, T beta2, T eps, T weight_decay,
                         T step_size, T bc2_sqrt, int decoupled, T gsign) {
    __global T *p;
    __global const T *g;
    __global T *m;
    __global T *v;
    SLOT_PICK(ADAM_SET)
    T x = p[i];
    T gr = gsign * g[i];
    if (decoupled) x *= (T)1 - lr * weight_decay;
    else gr += weight_decay * x;
    T mi = beta1 * m[i] + ((T)1 - beta1) * gr;
    T vi = beta2 * v[i] + ((T)1 - beta2) * gr * gr;
    m[i] = mi;
    v[i] = vi;
    p[i] = x - step_size * mi / (sqrt(vi) / bc2_sqrt + eps);
}

// GradScaler.unscale_ (clgrad/amp.py; PyTorch's _amp_foreach_non_finite_check_and_unscale_):
// each slot's gradient g is multiplied by inv (1 / scale, a float32 value) in place, and the
// slot's flag f[0] (a float32 0-dim tensor, 0 before the launch; the same tensor in every
// slot) is set to 1 where an element of g was inf or NaN before the multiply. Every writer
// stores the same value, so the unordered stores need no atomics.
#define UNSCALE_SLOT(k) long n##k, __global T *g##k, long og##k, __global float *f##k, long of##k
#define UNSCALE_SET(k) g = g##k + og##k; f = f##k + of##k;
__kernel void unscale_multi(SLOTS8(UNSCALE_SLOT), T inv) {
    __global T *g;
    __global float *f;
    SLOT_PICK(UNSCALE_SET)
    T x = g[i];
    if (!isfinite(x)) f[0] = 1.0f;
    g[i] = x * inv;
}
