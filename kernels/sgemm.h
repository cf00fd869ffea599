/* sgemm.h - the OpenBLAS sgemm wrapper of the sgemm-based kernels (sgemv for vectors, small-M streaming, team split). */
#ifndef SO_SGEMM_H
#define SO_SGEMM_H

#include <stdint.h>

/* Row-major C = alpha op(A) op(B) + beta C. OpenBLAS threads itself (opts.threads); never
   call it from inside an OpenMP parallel region: this OpenBLAS (pthreads build) serialises
   concurrent callers behind a lock, which made per-thread sgemm chunks 25x slower.
   M = 1 or N = 1 (K > 0) goes to sgemv. */
void so_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
              const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
/* 1 when so_sgemm runs oneDNN's sgemm (the avx512 level, libdnnl.so.2 loadable, SUPEROPT_ONEDNN not 0,
   so_fast_use_onednn):
   then kernel selection prefers it to our GEMM. */
int so_sgemm_onednn(void);
/* Threads of the team our kernels' parallel regions use (omp_get_max_threads: the executor's fixed team); 1 when
   called inside an active parallel region (no nested regions). */
int so_sgemm_threads(void);

#endif
