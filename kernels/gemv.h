/* gemv.h - the M = 1 product of a weight, y[N] = epi(alpha x[K] W[K,N]), W packed once at load (the classifiers of the mobile CNNs): column panels streamed front to back, several panels per pass, threads over panels; and the unpacked vector products (so_gemv) so_sgemm runs instead of a degraded OpenBLAS's sgemv. */
#ifndef SO_GEMV_H
#define SO_GEMV_H

#include <stddef.h>
#include <stdint.h>

#include "epi.h"

/* The weight is packed by so_gemm_pack_b (gemm.h: ceil(N / 16) column panels of 16, each K rows
   of 16 consecutive floats, zero past N), so_gemm_packed_b_floats(K, N) floats, 64-byte aligned:
   the layout both this kernel and our GEMM stream.

   y[j] = epi_j(alpha * sum_k x[k * incx] * W[k, j]) for j < N, epi as the GEMM's per-column epilogue
   (ep may be NULL; res, when not NULL, is a row of N added after act1, then act2). Each output is one
   sum in the same order whatever the thread count (bitwise identical at 1 and 2 threads); the panels are
   split into one contiguous range per thread when threads > 1 and the weight is large enough to pay
   for a parallel region. Call from outside a parallel region or with threads = 1. */
void so_gemv_packed(int64_t K, int64_t N, float alpha, const float *x, int64_t incx, const float *wp, float *y, const so_epi *ep,
                    const float *res, int threads);

/* Unpacked operands (activations, weights under the packed GEMV's limit): the vector products so_sgemm sends here
   instead of OpenBLAS's sgemv when OpenBLAS runs below our level (blas.h so_blas_ours).
   rows = 1: y[i * incy] = alpha * sum_k R[i * ldr + k] * x[k * incx] (+ beta * y[i * incy]) for i < n (R's rows);
   rows = 0: y[j * incy] = alpha * sum_k x[k * incx] * R[k * ldr + j] (+ beta * y[j * incy]) for j < n (R's columns).
   beta = 0 never reads y. Each output is one sum in an order fixed by K (and incx) alone, never by the thread count or
   the output's position: the outputs are split over threads (threads > 1 and enough work; call from outside a parallel
   region or with threads = 1) and the results are bitwise identical at any thread count. */
void so_gemv(int rows, int64_t n, int64_t K, float alpha, const float *R, int64_t ldr, const float *x, int64_t incx, float beta, float *y,
             int64_t incy, int threads);

#endif
