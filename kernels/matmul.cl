// kernels/matmul.cl — batched GEMM on strided views: C[b] = alpha * A[b] @ B[b] + beta * C[b].
// Defines: T element type; TS output tile (TS x TS per work-group); WPT outputs per work item
// along each axis (work-group (TS/WPT) x (TS/WPT)); TK depth of a local-memory tile.
// A is M x K, B is K x N, C is M x N; each has a row stride, a column stride and a view_t over
// the batch dims (its offset is the operand's element offset). Launch: global
// (ceil(N/TS) * TS/WPT, ceil(M/TS) * TS/WPT, batch), local (TS/WPT, TS/WPT, 1).
#include "common.h"

#define RTS (TS / WPT)
#ifdef IS_FLOAT
#define MAD(a, b, c) mad(a, b, c)
#else
#define MAD(a, b, c) ((a) * (b) + (c))
#endif

__kernel __attribute__((reqd_work_group_size(RTS, RTS, 1)))
void gemm(long M, long N, long K, int nbd, shape_t bsh,
          __global T *C, view_t vc, long c_rs, long c_cs,
          __global const T *A, view_t va, long a_rs, long a_cs,
          __global const T *B, view_t vb, long b_rs, long b_cs, T alpha, T beta) {
    const int tx = get_local_id(0), ty = get_local_id(1);
    const long bn = (long)get_group_id(0) * TS, bm = (long)get_group_id(1) * TS;
    long oc, oa, ob;
    off3(get_global_id(2), nbd, bsh, vc, va, vb, &oc, &oa, &ob);
    __local T As[TK][TS + 1];
    __local T Bs[TK][TS + 1];
    T acc[WPT][WPT];
    for (int i = 0; i < WPT; ++i)
        for (int j = 0; j < WPT; ++j) acc[i][j] = (T)0;
    const int lin = ty * RTS + tx;
    for (long k0 = 0; k0 < K; k0 += TK) {
        for (int e = lin; e < TS * TK; e += RTS * RTS) {
            int mm = e / TK, kk = e % TK;
            long gm = bm + mm, gk = k0 + kk;
            As[kk][mm] = (gm < M && gk < K) ? A[oa + gm * a_rs + gk * a_cs] : (T)0;
            int kk2 = e / TS, nn = e % TS;
            long gk2 = k0 + kk2, gn = bn + nn;
            Bs[kk2][nn] = (gk2 < K && gn < N) ? B[ob + gk2 * b_rs + gn * b_cs] : (T)0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < TK; ++kk) {
            T ar[WPT], br[WPT];
            for (int w = 0; w < WPT; ++w) {
                ar[w] = As[kk][ty + w * RTS];
                br[w] = Bs[kk][tx + w * RTS];
            }
            for (int i = 0; i < WPT; ++i)
                for (int j = 0; j < WPT; ++j) acc[i][j] = MAD(ar[i], br[j], acc[i][j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < WPT; ++i) {
        long gm = bm + ty + i * RTS;
        if (gm >= M) continue;
        for (int j = 0; j < WPT; ++j) {
            long gn = bn + tx + j * RTS;
            if (gn >= N) continue;
            long o = oc + gm * c_rs + gn * c_cs;
            T v = alpha * acc[i][j];
            C[o] = beta == (T)0 ? v : v + beta * C[o];
        }
    }
}
