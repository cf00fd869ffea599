/* sgemm.h - the OpenBLAS sgemm wrapper of the sgemm-based kernels (sgemv for vectors, small-M streaming, team split). */
#ifndef SO_SGEMM_H
#define SO_SGEMM_H

#include <stdint.h>

#include "gemm.h" /* so_sgemm_threads */

/* Row-major C = alpha op(A) op(B) + beta C. OpenBLAS threads itself (opts.threads); never
   call it from inside an OpenMP parallel region: this OpenBLAS (pthreads build) serialises
   concurrent callers behind a lock, which made per-thread sgemm chunks 25x slower.
   M = 1 or N = 1 (K > 0) goes to sgemv. When OpenBLAS runs below this kernel set's level (blas.h so_blas_ours),
   those go to our so_gemv and the other products, where oneDNN does not take them, to our GEMM (so_gemm_small or
   so_gemm on a per-thread buffer this file keeps): bitwise the same at any thread count. */
void so_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
              const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
/* 1 when so_sgemm runs oneDNN's sgemm (the avx512 level, libdnnl.so.2 loadable, SUPEROPT_ONEDNN not 0,
   so_fast_use_onednn):
   then kernel selection prefers it to our GEMM. */
int so_sgemm_onednn(void);
/* 1 when so_sgemm runs our GEMV / GEMM instead of OpenBLAS at this kernel set's level (blas.h so_blas_ours): callers
   that call cblas_sgemm themselves (Winograd's products) then call so_sgemm. */
int so_sgemm_ours(void);

#endif
