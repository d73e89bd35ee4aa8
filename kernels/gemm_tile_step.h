// kernels/gemm_tile_step.h — one depth tile of GEMM_TILED's micro-kernel, a code fragment
// (no guard) pasted by #include where it runs (kernels/matmul.cl, conv_igemm_gpu.cl), so
// every user compiles the same unrolled code. Needs in scope: T, T4, FMA, TSK, WPTM, WPTN,
// RTSM, RTSN, PADM, PADN; `as`/`bs` (the current local tiles at this work item's first
// row/column) and the accumulators acc[WPTM][WPTN]. A work item's rows are 4-vectors of `as`
// every 4*RTSM, its columns 4-vectors of `bs` every 4*RTSN.
#pragma unroll
            for (int k = 0; k < TSK; ++k) {
                T a[WPTM], b[WPTN];
#pragma unroll
                for (int i = 0; i < WPTM / 4; ++i) {
                    T4 v = *(__local const T4 *)(as + k * PADM + i * 4 * RTSM);
                    a[4 * i] = v.s0; a[4 * i + 1] = v.s1; a[4 * i + 2] = v.s2;
                    a[4 * i + 3] = v.s3;
                }
#pragma unroll
                for (int j = 0; j < WPTN / 4; ++j) {
                    T4 v = *(__local const T4 *)(bs + k * PADN + j * 4 * RTSN);
                    b[4 * j] = v.s0; b[4 * j + 1] = v.s1; b[4 * j + 2] = v.s2;
                    b[4 * j + 3] = v.s3;
                }
#pragma unroll
                for (int i = 0; i < WPTM; ++i)
#pragma unroll
                    for (int j = 0; j < WPTN; ++j) acc[i][j] = FMA(a[i], b[j], acc[i][j]);
            }
