// kernels/conv_blocked_cpu.cl — convolution blocked over output channels, for CPUs on small
// maps (see conv.h for the problem): vectors run along output channels (BW of them: 16 floats
// on AVX-512, 8 on AVX2), as in oneDNN's nChw16c kernels, so a 4 x 4 or 2 x 2 map no longer
// leaves most of a vector along output columns empty. The input is read as scalars and
// broadcast. Small passes rearrange the operands first:
//   pad_input:  Xp[g][n][c][hp][wp] = Xv[n, g, c, y - ph, x - pw] (zero outside; zero
//               insertion and negative padding included), so the main loops need no bounds;
//               one item per chunk of planes.
//   pack_weight (one item per lane, Intel's runtime vectorises across lanes) or
//   pack_weight_t (one item per chunk of taps, LG lanes at a time; PoCL, and the input
//               gradient's transposed view): Wb[g][obm][c][kh][kw][MB][BW] = K[g, (obm*MB +
//               m)*BW + lane, c, kh, kw], 0 past o (read through the weight's view), and the
//               tap offset table koff[c][kh][kw] (offsets into Xp's planes).
//   pack_grad_t: Gt[g][obm][n*oh*ow][MB][BW] = GO[n, g, (obm*MB + m)*BW + lane, oh, ow], 0
//               past o; one item per chunk of pixels, and the pixel offset table qoff.
// Then (local size 1 x 1 x 1 for all):
//   blocked_fwd:   (ceil(n*oh*ow / (PX*tpw)), obm, g): tiles of PX output pixels (flattened
//                  over n, oh, ow) x MB vectors of BW output channels, summed over c, kh, kw;
//                  tpw tiles per work-group. Forward, and the input gradient run as a forward
//                  problem.
//   blocked_fwd_fused: (1, obm, g): the forward of layers with a large weight, each
//                  work-group packing its own block (and tap offsets) before all the pixels.
//   blocked_wgrad: (ceil(c*kh*kw / (TK*kb)), obm, g): kb blocks of TK taps (c, kh, kw) x MB
//                  vectors of output channels per work-group, summed over n, oh, ow: per
//                  chunk of qc pixels the kb blocks one after the other (the chunk stays in
//                  cache), partial sums stored packed as Wb (vector stores); then
//   unpack_wgrad (per lane) or unpack_wgrad_t (per chunk of taps, as the packs): write them
//                  through gw's view (no batch split, no reduction pass; the bias gradient is
//                  the host's sum).
// Defines: T element type (IS_DOUBLE for double), BW (lanes: 4, 8 or 16), MB (vectors per
// block), PX (pixels per forward tile), TK (taps per weight-gradient block).
#include "conv.h"

#define VB CAT(T, BW)
// Loads through an under-aligned vector type and plain multiply-adds, not vloadN and fma():
// PoCL calls those built-ins (spilling every vector register) where Intel's compiler inlines
// them (conv.h); the blocked loops ran at 12-19 GFLOP/s on PoCL with them.
#if defined(__clang__)
typedef T VBU __attribute__((ext_vector_type(BW), aligned(sizeof(T))));
#define VBLD(p) (*(__global const VBU *)(p))
#define VBST(p, v) (*(__global VBU *)(p) = (v))
#else
#define VBLD(p) CAT(vload, BW)(0, (p))
#define VBST(p, v) CAT(vstore, BW)((v), 0, (p))
#endif
#define VBSTORE CAT(vstore, BW)

// One item (local size 1) per chunk of pc planes (g, n, c) of Xp, hp rows each; a row's
// interior copied as vectors where the input's columns are contiguous. One item per plane
// without a local size, which Intel's compiler vectorised across planes (16 planes' rows at
// once: scattered stores) took 3-4x a copy's time.
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void pad_input(const conv_t p, long hp, long wp, long pc, __global const T *X,
               __global T *Xp) {
    const long lo = MIN(MAX(p.pw, 0), wp), hi = MAX(MIN(p.w + p.pw, wp), lo);
    const long e = MIN((get_group_id(0) + 1) * pc, p.g * p.n * p.c);
    for (long gnc = get_group_id(0) * pc; gnc < e; ++gnc) {
    const long c = gnc % p.c, gn = gnc / p.c, n = gn % p.n, g = gn / p.n;
    const long xb = p.x.off + n * p.x.s[0] + g * p.x.s[1] + c * p.x.s[2];
    __global T *d = Xp + gnc * hp * wp;
    for (long y = 0; y < hp; ++y, d += wp) {
        const long yv = y - p.ph;
        // (no division without zero insertion: two per row took most of the pass's time)
        const long yr = p.uh == 1 ? yv : yv / p.uh;
        if (yv < 0 || yr >= p.h || (p.uh != 1 && yv % p.uh != 0)) {
            for (long x = 0; x < wp; ++x) d[x] = (T)0;
        } else if (p.uw == 1) {
            __global const T *s = X + xb + yr * p.x.s[3];
            for (long x = 0; x < lo; ++x) d[x] = (T)0;
            if (p.x.s[4] == 1) {
                long x = lo;
                for (; x + BW <= hi; x += BW) VBST(d + x, VBLD(s + x - p.pw));
                for (; x < hi; ++x) d[x] = s[x - p.pw];
            } else {
                for (long x = lo; x < hi; ++x) d[x] = s[(x - p.pw) * p.x.s[4]];
            }
            for (long x = hi; x < wp; ++x) d[x] = (T)0;
        } else {
            for (long x = 0; x < wp; ++x) d[x] = xv(X, xb, yv, x - p.pw, p);
        }
    }
    }
}

// One item per (lane l of a block, g * obm + block): (MB*BW, g*obm) items, each reading the
// (c, kh, kw) taps of output channel o = block*MB*BW + l in order (a dense weight's row), and
// writing one lane of every packed vector. Consecutive items fill the same vectors, which stay
// in cache. An item per (c, block) reading kh*kw taps of MB*BW rows took 1.3-1.5x the time
// (Xeon, 256-512 channels), also for the input gradient's transposed view.
// Item (0, 0) also writes the tap offset table koff[c][kh][kw] (offsets into Xp's planes).
__kernel void pack_weight(const conv_t p, long obm, long hp, long wp, __global const T *K,
                          __global T *Wb, __global int *koff) {
    const int khw = (int)(p.kh * p.kw), l = (int)get_global_id(0);
    const long gb = get_global_id(1);
    if (l >= MB * BW || gb >= p.g * obm) return;
    const long b = gb % obm, g = gb / obm, o = b * (MB * BW) + l;
    if (l == 0 && gb == 0)
        for (int c = 0; c < (int)p.c; ++c)
            for (int kh = 0; kh < (int)p.kh; ++kh)
                for (int kw = 0; kw < (int)p.kw; ++kw)
                    koff[(c * (int)p.kh + kh) * (int)p.kw + kw] =
                        (int)((c * hp + kh * p.dh) * wp + kw * p.dw);
    __global T *d = Wb + gb * p.c * khw * (MB * BW) + l;
    if (o >= p.o) {
        for (long k = 0; k < p.c * khw; ++k) d[k * (MB * BW)] = (T)0;
        return;
    }
    __global const T *s = K + p.k.off + g * p.k.s[0] + o * p.k.s[1];
    for (int c = 0; c < (int)p.c; ++c)
        for (int kh = 0; kh < (int)p.kh; ++kh)
            for (int kw = 0; kw < (int)p.kw; ++kw, d += MB * BW)
                *d = s[c * p.k.s[2] + kh * p.k.s[3] + kw * p.k.s[4]];
}

// Tap offsets counted up over (c, kh, kw) from tap k0 (no divisions per tap).
#define TAPS_FROM(k0)                                                                       \
    const int khw_ = (int)(p.kh * p.kw), c0_ = (k0) / khw_, r0_ = (k0) - c0_ * khw_;        \
    int c = c0_, kh = r0_ / (int)p.kw, kw = r0_ - kh * (int)p.kw
#define TAPS_NEXT()                                                                         \
    if (++kw == (int)p.kw) {                                                                \
        kw = 0;                                                                             \
        if (++kh == (int)p.kh) {                                                            \
            kh = 0;                                                                         \
            ++c;                                                                            \
        }                                                                                   \
    }

// Packing by chunks of taps (pack_weight_t, blocked_fwd_fused; unpack_wgrad_t): LG rows
// (lanes) at a time. The rows of a dense 512-channel weight lie 18 KB apart, in 2 of the 64 L1
// sets, so 32 rows at once missed L1 on every read; one row at a time (the taps inside) read
// short runs of 8 cache lines from memory, 3-4x slower.
#define LG 8

// Taps k0 .. k1 of block b (group g) into d0 (Wb's tile of tap k0) and, with koff, their
// offsets in Xp's planes: per group of LG lanes the taps in order, each tap's LG lanes inside.
INL void pack_block(const conv_t p, long hp, long wp, long b, long g, int k0, int k1,
                    __global const T *K, __global T *d0, __global int *koff) {
    const int nv = (int)MIN((long)(MB * BW), p.o - b * (MB * BW));
    const long s1 = p.k.s[1], s2 = p.k.s[2], s3 = p.k.s[3], s4 = p.k.s[4];
    __global const T *s = K + p.k.off + g * p.k.s[0] + b * (MB * BW) * s1;
    if (koff) {
        TAPS_FROM(k0);
        for (int k = k0; k < k1; ++k) {
            koff[k] = (int)((c * hp + kh * p.dh) * wp + kw * p.dw);
            TAPS_NEXT();
        }
    }
    for (int l0 = 0; l0 < MB * BW; l0 += LG) {
        TAPS_FROM(k0);
        __global const T *sl = s + l0 * s1;
        __global T *d = d0 + l0;
        if (l0 + LG <= nv) {
            for (int k = k0; k < k1; ++k, d += MB * BW) {
                __global const T *sk = sl + c * s2 + kh * s3 + kw * s4;
#pragma unroll
                for (int l = 0; l < LG; ++l) d[l] = sk[l * s1];
                TAPS_NEXT();
            }
        } else {
            for (int k = k0; k < k1; ++k, d += MB * BW) {
                __global const T *sk = sl + c * s2 + kh * s3 + kw * s4;
                for (int l = 0; l < LG; ++l) d[l] = l0 + l < nv ? sk[l * s1] : (T)0;
                TAPS_NEXT();
            }
        }
    }
}

// Per (chunk of kc taps k = (c, kh, kw), g * obm + block) one item (local size 1) filling
// Wb[g][b][k0..k1][MB*BW] (kc * MB*BW elements: a tile that stays in L1), lane l of tap k
// from K[g, b*MB*BW + l, c, kh, kw]; item (0, 0) also the tap offsets koff.
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void pack_weight_t(const conv_t p, long obm, long hp, long wp, long kc, __global const T *K,
                   __global T *Wb, __global int *koff) {
    const int kall = (int)(p.c * p.kh * p.kw);
    const int k0 = (int)(get_group_id(0) * kc), k1 = MIN(k0 + (int)kc, kall);
    const long gb = get_group_id(1);
    pack_block(p, hp, wp, gb % obm, gb / obm, k0, k1, K, Wb + (gb * kall + k0) * (MB * BW),
               gb == 0 ? koff : 0);
}

// pack_grad by chunks of qc pixels (one item, local size 1, per chunk and block): per group
// of LG output channels, the chunk's pixels in order, each pixel's LG channels inside (the
// channels' planes of a 32 x 32 map lie 4 KB apart, in one L1 set: the per-pixel kernel, 32
// channels at once, missed L1 on most reads). Item (0, 0) also writes qoff.
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void pack_grad_t(const conv_t p, long obm, long hp, long wp, long qc, v5_t gv,
                 __global const T *GO, __global T *Gt, __global int *qoff) {
    const long ohw = p.oh * p.ow, np = p.n * ohw, gb = get_group_id(1);
    const long q0 = get_group_id(0) * qc, q1 = MIN(q0 + qc, np);
    const long b = gb % obm, g = gb / obm, o0 = b * (MB * BW);
    const int nv = (int)MIN((long)(MB * BW), p.o - o0);
    const long n0 = q0 / ohw, r0 = q0 - n0 * ohw, oh0 = r0 / p.ow, ow0 = r0 - oh0 * p.ow;
    if (gb == 0) {
        long n = n0, oh = oh0, ow = ow0;
        for (long q = q0; q < q1; ++q) {
            qoff[q] = (int)((n * p.c * hp + oh * p.sh) * wp + ow * p.sw);
            if (++ow == p.ow) {
                ow = 0;
                if (++oh == p.oh) {
                    oh = 0;
                    ++n;
                }
            }
        }
    }
    __global const T *s0 = GO + gv.off + g * gv.s[1] + o0 * gv.s[2];
    __global T *d0 = Gt + (gb * np + q0) * (MB * BW);
    for (int l0 = 0; l0 < MB * BW; l0 += LG) {
        long n = n0, oh = oh0, ow = ow0;
        __global const T *sl = s0 + l0 * gv.s[2];
        __global T *d = d0 + l0;
        for (long q = q0; q < q1; ++q, d += MB * BW) {
            __global const T *sq = sl + n * gv.s[0] + oh * gv.s[3] + ow * gv.s[4];
            if (l0 + LG <= nv) {
#pragma unroll
                for (int l = 0; l < LG; ++l) d[l] = sq[l * gv.s[2]];
            } else {
                for (int l = 0; l < LG; ++l) d[l] = l0 + l < nv ? sq[l * gv.s[2]] : (T)0;
            }
            if (++ow == p.ow) {
                ow = 0;
                if (++oh == p.oh) {
                    oh = 0;
                    ++n;
                }
            }
        }
    }
}

// Output pixels q0 .. qe of block b (group g) with the block's packed weights wb and the tap
// offsets koff: tiles of PX pixels one after the other.
INL void fwd_tiles(const conv_t p, long hp, long wp, long b, long g, long qb, long qe,
                   __global const T *Xp, __global const T *wb, __global const int *koff,
                   __global T *Y, __global const T *B) {
    const long ohw = p.oh * p.ow, np = p.n * ohw;
    const int kall = (int)(p.c * p.kh * p.kw);
    const long plane = hp * wp;
    __global const T *xg = Xp + g * p.n * p.c * plane;
    for (long q0 = qb; q0 < qe; q0 += PX) {
        int off[PX];
#pragma unroll
        for (int j = 0; j < PX; ++j) {
            const long q = MIN(q0 + j, np - 1), n = q / ohw, r = q - n * ohw, oh = r / p.ow;
            off[j] = (int)(n * p.c * plane + oh * p.sh * wp + (r - oh * p.ow) * p.sw);
        }
        VB acc[MB][PX];
#pragma unroll
        for (int m = 0; m < MB; ++m)
#pragma unroll
            for (int j = 0; j < PX; ++j) acc[m][j] = (VB)0;
        __global const T *wk = wb;
        // one loop over the taps (c, kh, kw) through the offset table koff: nested loops of kh
        // and kw (3 trips each) kept the accumulators in memory around the innermost one
        for (int k = 0; k < kall; ++k, wk += MB * BW) {
            __global const T *xt = xg + koff[k];
            VB wv[MB];
#pragma unroll
            for (int m = 0; m < MB; ++m) wv[m] = VBLD(wk + m * BW);
#pragma unroll
            for (int j = 0; j < PX; ++j) {
                const T a = xt[off[j]];
#pragma unroll
                for (int m = 0; m < MB; ++m) acc[m][j] += a * wv[m];
            }
        }
        // the tile through private memory, then per output channel its PX pixels: pixel by
        // pixel (32 channels each) every store met another line, and on 32 x 32 maps the
        // channels' planes lie 4 KB apart, in one L1 set: every store missed (the forward of
        // 64-64 32 x 32 ran at 2/3 of the speed of 30 x 30 per multiply-add)
        T t[PX][MB * BW];
        long yo[PX];
        int npx = 0;
        const long obase = p.y.off + g * p.y.s[1];
#pragma unroll
        for (int j = 0; j < PX; ++j) {
#pragma unroll
            for (int m = 0; m < MB; ++m) VBSTORE(acc[m][j], 0, &t[j][m * BW]);
            const long q = MIN(q0 + j, np - 1), n = q / ohw, r = q - n * ohw, oh = r / p.ow;
            yo[j] = obase + n * p.y.s[0] + oh * p.y.s[3] + (r - oh * p.ow) * p.y.s[4];
            npx += q0 + j < np;
        }
        const int nv = (int)MIN((long)(MB * BW), p.o - b * (MB * BW));
        for (int l = 0; l < nv; ++l) {
            const long o = b * (MB * BW) + l;
            const T bv = p.bias ? B[p.boff + (g * p.o + o) * p.bs] : (T)0;
            __global T *y = Y + o * p.y.s[2];
            if (npx == PX) {
#pragma unroll
                for (int j = 0; j < PX; ++j) y[yo[j]] = t[j][l] + bv;
            } else {
                for (int j = 0; j < npx; ++j) y[yo[j]] = t[j][l] + bv;
            }
        }
    }
}


__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void blocked_fwd(const conv_t p, long hp, long wp, long obm, long tpw, long xoff,
                 __global const T *Xp, __global const T *Wb, __global const int *koff,
                 __global T *Y, __global const T *B) {
    // tpw tiles of PX pixels per work-group (a work-group costs about a microsecond to start:
    // few taps, as in a strided layer's input-gradient phases, leave tiles of a few thousand
    // cycles). Xp + xoff: the padded input (the phases share one padded copy).
    const long b = get_group_id(1), g = get_group_id(2), np = p.n * p.oh * p.ow;
    const long qb = get_group_id(0) * tpw * PX, qe = MIN(qb + tpw * PX, np);
    fwd_tiles(p, hp, wp, b, g, qb, qe, Xp + xoff,
              Wb + (g * obm + b) * p.c * p.kh * p.kw * (MB * BW), koff, Y, B);
}

// blocked_fwd with the weight packed by the work-group itself, one per (block, group): its
// block's weights (and its own copy of the tap offsets) are packed into Wb (koffs) and read
// back from cache by all its tiles, instead of a pack_weight pass writing the whole packed
// weight to memory and blocked_fwd reading it back (512 channels: 9.4 MB each way).
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void blocked_fwd_fused(const conv_t p, long hp, long wp, long obm, __global const T *K,
                       __global T *Wb, __global int *koffs, __global const T *Xp,
                       __global T *Y, __global const T *B) {
    const long b = get_group_id(1), g = get_group_id(2), gb = g * obm + b;
    const int kall = (int)(p.c * p.kh * p.kw);
    __global T *wb = Wb + gb * kall * (MB * BW);
    __global int *koff = koffs + gb * kall;
    pack_block(p, hp, wp, b, g, 0, kall, K, wb, koff);
    fwd_tiles(p, hp, wp, b, g, 0, p.n * p.oh * p.ow, Xp, wb, koff, Y, B);
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void blocked_wgrad(const conv_t p, long hp, long wp, long obm, long kb, long qc,
                   __global const T *Xp, __global const T *Gt, __global const int *qoff,
                   __global T *Wt) {
    const int khw = (int)(p.kh * p.kw), kall = (int)p.c * khw, np = (int)(p.n * p.oh * p.ow);
    const long b = get_group_id(1), g = get_group_id(2), plane = hp * wp;
    // pixels in chunks of qc (the chunk's packed output gradient stays in cache while the
    // work-group's kb tap blocks run over it), partial sums kept in Wt between chunks
    for (int q0 = 0; q0 < np; q0 += (int)qc) {
        const int q1 = MIN(q0 + (int)qc, np);
        __global const T *g0 = Gt + ((g * obm + b) * (p.n * p.oh * p.ow) + q0) * (MB * BW);
        for (int k0 = (int)(get_group_id(0) * kb) * TK;
             k0 < MIN((int)((get_group_id(0) + 1) * kb) * TK, kall); k0 += TK) {
            // tap offsets by counting (c, kh, kw) up from k0: one division per block, not three
            // per tap (at 2 x 2 maps the divisions cost more than the block's multiply-adds)
            const int c0 = k0 / khw, r0 = k0 - c0 * khw, kh0 = r0 / (int)p.kw;
            const int kw0 = r0 - kh0 * (int)p.kw;
            int toff[TK];
            {
                int c = c0, kh = kh0, kw = kw0;
    #pragma unroll
                for (int t = 0; t < TK; ++t) {
                    toff[t] = (int)(c * plane + kh * p.dh * wp + kw * p.dw);
                    if (k0 + t + 1 < kall && ++kw == (int)p.kw) {  // past the last tap: repeat it
                        kw = 0;
                        if (++kh == (int)p.kh) {
                            kh = 0;
                            ++c;
                        }
                    }
                }
            }
            // packed like Wb (vector stores); unpack_wgrad writes them through gw's view
            __global T *wt = Wt + ((g * obm + b) * kall + k0) * (MB * BW);
            VB acc[MB][TK];
    #pragma unroll
            for (int m = 0; m < MB; ++m)
    #pragma unroll
                for (int t = 0; t < TK; ++t)
                    acc[m][t] = q0 == 0 || k0 + t >= kall ? (VB)0
                                                          : VBLD(wt + t * (MB * BW) + m * BW);
            __global const T *gp = g0;
            __global const T *xg = Xp + g * p.n * p.c * plane;
            // one loop over the pixels (n, oh, ow) through the offset table qoff: nested loops
            // (2 x 2 maps: 2 trips each) kept the accumulators in memory around the innermost one
            for (int q = q0; q < q1; ++q, gp += MB * BW) {
                __global const T *xq = xg + qoff[q];
                VB gv[MB];
    #pragma unroll
                for (int m = 0; m < MB; ++m) gv[m] = VBLD(gp + m * BW);
    #pragma unroll
                for (int t = 0; t < TK; ++t) {
                    const T a = xq[toff[t]];
    #pragma unroll
                    for (int m = 0; m < MB; ++m) acc[m][t] += a * gv[m];
                }
            }
    #pragma unroll
            for (int t = 0; t < TK; ++t) {
                if (k0 + t >= kall) break;
    #pragma unroll
                for (int m = 0; m < MB; ++m) VBST(wt + t * (MB * BW) + m * BW, acc[m][t]);
            }
        }
    }
}

// The inverse of pack_weight for the weight gradient: GW (the (g, o, c, kh, kw) view gw) from
// Wt[g][obm][c][kh][kw][MB][BW]; (MB*BW, g*obm) items, one output channel's row each.
__kernel void unpack_wgrad(const conv_t p, long obm, __global const T *Wt, __global T *GW,
                           v5_t gw) {
    const int l = (int)get_global_id(0);
    const long gb = get_global_id(1);
    if (l >= MB * BW || gb >= p.g * obm) return;
    const long b = gb % obm, g = gb / obm, o = b * (MB * BW) + l;
    if (o >= p.o) return;
    __global T *d = GW + gw.off + g * gw.s[0] + o * gw.s[1];
    __global const T *s = Wt + gb * p.c * p.kh * p.kw * (MB * BW) + l;
    for (int c = 0; c < (int)p.c; ++c)
        for (int kh = 0; kh < (int)p.kh; ++kh)
            for (int kw = 0; kw < (int)p.kw; ++kw, s += MB * BW)
                d[c * gw.s[2] + kh * gw.s[3] + kw * gw.s[4]] = *s;
}

// The inverse of pack_weight_t for the weight gradient: per (chunk of kc taps, g * obm +
// block) one item writing GW (the (g, o, c, kh, kw) view gw) from Wt[g][b][k][MB*BW], LG
// rows at a time as there.
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void unpack_wgrad_t(const conv_t p, long obm, long kc, __global const T *Wt, __global T *GW,
                    v5_t gw) {
    const int kall = (int)(p.c * p.kh * p.kw);
    const int k0 = (int)(get_group_id(0) * kc), k1 = MIN(k0 + (int)kc, kall);
    const long gb = get_group_id(1), b = gb % obm, g = gb / obm;
    const int nv = (int)MIN((long)(MB * BW), p.o - b * (MB * BW));
    const long s1 = gw.s[1], s2 = gw.s[2], s3 = gw.s[3], s4 = gw.s[4];
    __global T *dd = GW + gw.off + g * gw.s[0] + b * (MB * BW) * s1;
    __global const T *s0 = Wt + (gb * kall + k0) * (MB * BW);
    for (int l0 = 0; l0 < nv; l0 += LG) {
        TAPS_FROM(k0);
        __global T *dl = dd + l0 * s1;
        __global const T *s = s0 + l0;
        if (l0 + LG <= nv) {
            for (int k = k0; k < k1; ++k, s += MB * BW) {
                __global T *dk = dl + c * s2 + kh * s3 + kw * s4;
#pragma unroll
                for (int l = 0; l < LG; ++l) dk[l * s1] = s[l];
                TAPS_NEXT();
            }
        } else {
            for (int k = k0; k < k1; ++k, s += MB * BW) {
                __global T *dk = dl + c * s2 + kh * s3 + kw * s4;
                for (int l = 0; l < nv - l0; ++l) dk[l * s1] = s[l];
                TAPS_NEXT();
            }
        }
    }
}
