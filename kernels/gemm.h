/* gemm.h - our packed single-precision GEMM (AVX2+FMA): 6x16 register-blocked micro-kernel, KC/MC/NC cache blocking, packed A and B (B packed once at load for constant weights), fused per-row/per-column epilogues, 1..T threads over column panels. */
#ifndef SO_GEMM_H
#define SO_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "epi.h"

#define SO_GEMM_MR 6  /* micro-tile rows */
#define SO_GEMM_NR 16 /* micro-tile columns (= packed B panel width) */

/* Cache blocking: K block (default 384), M block (default 144, rounded down to a multiple
   of MR) and, for M <= MC (A packed whole, once per call), the C block's bytes that set the
   column-block width (default 192 KB). Tunables for tests and benchmarks: B's packed layout
   does not depend on them, but scratch sizes do: never change them between sizing a scratch
   and using it, or while a so_gemm call runs. */
extern int64_t so_gemm_kc, so_gemm_mc, so_gemm_nc_bytes;
/* Small M (M <= MC), A not transposed: the micro-kernel reads full MR-row panels of A in
   place and only the edge panel is packed (default 1; 0: A packed whole, for A/B runs). */
extern int so_gemm_direct_a;
/* Column block of the weights-as-A path (default 384 columns). */
extern int64_t so_gemm_ap_nc;
/* Largest weight (M x K floats) a conv packs for the weights-as-A path (default 2^18 = 1 MB). */
extern int64_t so_gemm_conv_max_w;

/* Packed B: ceil(N / NR) column panels, panel p holds rows k = 0..K-1 of columns
   [p*NR, p*NR + NR) as K consecutive groups of NR floats (zero-padded past N). Any K block
   [k0, k0 + kc) of a panel is then one contiguous run at p*K*NR + k0*NR. */
size_t so_gemm_packed_b_floats(int64_t K, int64_t N);
/* Packs op(B) (K x N; trans_b: B is N x K, row-major with leading dimension ldb) into dst,
   which holds so_gemm_packed_b_floats(K, N) floats (32-byte aligned). */
void so_gemm_pack_b(int trans_b, int64_t K, int64_t N, const float *B, int64_t ldb, float *dst);

/* Fused epilogue applied to each finished tile of C: with ep, y = act2(act1(y*scale[ch] +
   shift[ch]) + res) where ch is the column (per_row = 0, MatMul/Gemm) or the row (per_row =
   1, conv: output channel = row of C); res (may be NULL) has C's layout with leading
   dimension ldr. ep->has_res is ignored: res decides. */
typedef struct so_gemm_epi {
    const so_epi *ep; /* NULL: no scale/shift/activations */
    int per_row;
    const float *res;
    int64_t ldr;
} so_gemm_epi;

/* Threads of the team our kernels' parallel regions use (omp_get_max_threads: the executor's fixed team); 1 when
   called inside an active parallel region (no nested regions). Also the split so_sgemm (sgemm.h) uses. */
int so_sgemm_threads(void);

/* Scratch floats so_gemm_packed needs for threads threads (per-thread packed A blocks). */
size_t so_gemm_scratch_floats(int64_t M, int64_t K, int threads);

/* C[M,N] = epi(alpha op(A) B + beta C) with B packed by so_gemm_pack_b (K, N). op(A) is
   M x K: A row-major [M, lda] (trans_a = 0) or [K, lda] transposed. beta = 0 never reads C.
   threads <= 0: so_sgemm_threads(). Column panels are split statically over the threads, and
   every element of C is computed in the same order whatever the thread count (results are
   bitwise identical for 1 and 2 threads). Call from outside any OpenMP parallel region (or
   with threads = 1). scratch: so_gemm_scratch_floats(M, K, threads) floats, 32-byte aligned. */
void so_gemm_packed(int trans_a, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                    const float *Bp, float beta, float *C, int64_t ldc, const so_gemm_epi *epi, float *scratch, int threads);

/* Unpacked B: packs op(B) into scratch first, then so_gemm_packed. scratch holds
   so_gemm_full_scratch_floats(M, N, K, threads) floats, 32-byte aligned. */
size_t so_gemm_full_scratch_floats(int64_t M, int64_t N, int64_t K, int threads);
void so_gemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
             const float *B, int64_t ldb, float beta, float *C, int64_t ldc, const so_gemm_epi *epi, float *scratch,
             int threads);

/* C[M,N] = A[M,K] B[K,N], all row-major and read in place (nothing packed, no scratch): for
   small products whose operands sit in L1/L2 (attention heads, 64 x 64 x 64), where packing
   B per call costs more than it saves. One thread; callable inside a parallel region. */
void so_gemm_small(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc);

/* ---- weights as A (conv: Y[O, HW] = W[O, K] B[K, HW]) ----
   Packed A: ceil(M / MR) row micro-panels, panel i holds rows [i*MR, i*MR + MR) as K groups of
   MR floats (zero-padded past M); the K block [k0, k0 + kc) of a panel is at i*MR*K + k0*MR. */
size_t so_gemm_packed_a_floats(int64_t M, int64_t K);
void so_gemm_pack_a(int64_t M, int64_t K, const float *A, int64_t lda, float *dst);

/* Where B comes from for so_gemm_apacked: a row-major matrix (B, ldb), or (conv != NULL) the
   implicit im2col of one image X [C, H, W] for a kh x kw convolution: row k = (c*kh + i)*kw + j,
   column q = oh*Wo + ow holds X[c, oh*sh - ph + i*dh, ow*sw - pw + j*dw] (0 outside), packed
   straight from the image (no im2col buffer). */
typedef struct so_gemm_conv {
    int64_t C, H, W, kh, kw, sh, sw, ph, pw, dh, dw, Ho, Wo;
} so_gemm_conv;
typedef struct so_gemm_bsrc {
    const float *B; /* B, or the image X */
    int64_t ldb;
    const so_gemm_conv *conv;
} so_gemm_bsrc;

/* Scratch floats for so_gemm_apacked (per-thread packed B blocks). */
size_t so_gemm_apacked_scratch_floats(int64_t M, int64_t N, int64_t K, int threads);
/* C[M,N] = epi(A B + beta C), A packed by so_gemm_pack_a. Threads split the columns (or the
   rows when there are too few column panels); results do not depend on the thread count.
   Same calling rules as so_gemm_packed. */
void so_gemm_apacked(int64_t M, int64_t N, int64_t K, const float *Ap, const so_gemm_bsrc *B, float beta, float *C, int64_t ldc,
                     const so_gemm_epi *epi, float *scratch, int threads);

#endif
