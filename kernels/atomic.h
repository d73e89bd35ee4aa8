// kernels/atomic.h — atomic_add_T(p, v): *p += v, safe when several work items add to the same
// element (index.cl's scatter-add, grid_sample.cl's input gradient). Floating point: a
// compare-and-swap loop (double: cl_khr_int64_base_atomics), so the order of the additions,
// and the last bits of a sum, may differ from run to run.
// Defines: T element type; IS_FLOAT; IS_DOUBLE; IS_LONG; IS_INT (else uchar, a logical or).
#ifndef CLGRAD_ATOMIC_H
#define CLGRAD_ATOMIC_H

#ifdef IS_DOUBLE
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
inline void atomic_add_T(volatile __global T *p, T v) {
    union { ulong u; double f; } old, nw;
    do {
        old.f = *p;
        nw.f = old.f + v;
    } while (atom_cmpxchg((volatile __global ulong *)p, old.u, nw.u) != old.u);
}
#elif defined(IS_FLOAT)
inline void atomic_add_T(volatile __global T *p, T v) {
    union { uint u; float f; } old, nw;
    do {
        old.f = *p;
        nw.f = old.f + v;
    } while (atomic_cmpxchg((volatile __global uint *)p, old.u, nw.u) != old.u);
}
#elif defined(IS_LONG)
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
inline void atomic_add_T(volatile __global T *p, T v) { atom_add(p, v); }
#elif defined(IS_INT)
inline void atomic_add_T(volatile __global T *p, T v) { atomic_add(p, v); }
#else
// bool (uchar): "adding" is a logical or, which is race-free when every writer writes 1.
inline void atomic_add_T(volatile __global T *p, T v) { if (v) *p = 1; }
#endif

#endif
