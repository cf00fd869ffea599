/* fast.h - fast kernels (OpenBLAS sgemm conv/matmul, vectorised loops) selected per node at load time, with weights pre-packed and epilogues fused. */
#ifndef SO_FAST_H
#define SO_FAST_H

#include "ref.h"

#define SO_FAST_MAX_FUSED 4

#ifdef __AVX2__
#include <immintrin.h>
/* In-register 8x8 transpose of eight rows of 8 floats: r[i][j] -> r[j][i] (the conv kernels'
   channel/pixel tiles, the tiled Transpose). */
static inline void so_tr8x8(__m256 *r)
{
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]), t2 = _mm256_unpacklo_ps(r[2], r[3]),
           t3 = _mm256_unpackhi_ps(r[2], r[3]), t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]),
           t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)), s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2)),
           s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)), s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2)),
           s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0)), s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2)),
           s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0)), s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}
#endif

/* A kernel bound to one node (plus the nodes it absorbs): run(priv, in, out, scratch)
   computes the outputs from the inputs (shapes fixed at selection). scratch has at least
   scratch_bytes (64-byte aligned) and is shared between steps. run == NULL: no fast
   kernel, use the reference kernel. priv is owned by the kernel: free_priv(priv).

   Fusion: the kernel may absorb a chain of single-use successors fused[0..n_fused) (e.g.
   Conv -> BatchNormalization -> Add -> Relu). Then in[] is the head node's inputs
   followed by extra_in (when has_extra: e.g. the residual of an absorbed Add), and out[]
   is the outputs of the last absorbed node. The absorbed nodes' own outputs never exist. */
typedef struct so_fast_kernel {
    void (*run)(void *priv, const so_tensor *in, so_tensor *out, float *scratch);
    void *priv;
    void (*free_priv)(void *priv);
    size_t scratch_bytes;
    size_t packed_bytes; /* bytes of pre-packed weights held in priv */
    int in1_copied;      /* run() never reads input 1: a weight packed/transformed into priv at selection */
    const char *name;
    int32_t n_fused;
    int32_t fused[SO_FAST_MAX_FUSED];
    int has_extra;
    so_edge extra_in;
} so_fast_kernel;

/* What the selector may fuse: user[i] is the only consumer node of node i's output 0
   when that output has exactly one use and is not a graph output, else -1.
   user == NULL disables fusion. absorbed[j] != 0: node j is already fused into another
   kernel and must not be absorbed again (may be NULL). */
typedef struct so_fast_ctx {
    const so_graph *g;
    const int32_t *user;
    const char *absorbed;
} so_fast_ctx;

/* Selects (and prepares: packs WEIGHT inputs) a fast kernel for node i. Sets k->run =
   NULL when the reference kernel should be used. Errors name the node. */
so_status so_fast_select(const so_fast_ctx *c, int32_t i, so_fast_kernel *k);

/* ---- shared helpers for kernel modules ---- */
/* Epilogue: y = act2(act1(x * scale[c] + shift[c]) + res), per channel c over a row of n. */
typedef struct so_epi {
    const float *scale, *shift; /* NULL: 1 / 0 */
    int act1, act2;             /* so_act */
    float lo1, hi1, lo2, hi2;   /* clip bounds */
    int has_res;
} so_epi;

void so_fast_epi_row(const so_epi *ep, int64_t c, float *y, const float *res, int64_t n);
/* Applies a so_act to n floats in place. */
void so_fast_act(int act, float lo, float hi, float *x, int64_t n);
/* Fusion chain after a head node (Conv/MatMul/Gemm) whose output has nch channels on
   axis chan_axis: absorbs BatchNormalization (chan_axis 1 only), Add of a per-channel
   weight, one activation, Add of a same-shape tensor (residual) and its activation.
   bias (length nch, may be NULL) is folded into the shift. ch->scale/shift are
   malloc'd (or NULL) and owned by the caller; ep points into them. */
typedef struct so_fast_chain {
    so_epi ep;
    float *scale, *shift;
    int32_t n_fused, fused[SO_FAST_MAX_FUSED];
    int has_extra;
    so_edge extra;
} so_fast_chain;
void so_fast_chain_build(const so_fast_ctx *c, int32_t i, int chan_axis, int64_t nch, const float *bias, so_fast_chain *ch);
/* Copies chain results into k (fused nodes, extra input). */
void so_fast_chain_apply(const so_fast_chain *ch, so_fast_kernel *k);
/* Row-major C = alpha op(A) op(B) + beta C. OpenBLAS threads itself (opts.threads); never
   call it from inside an OpenMP parallel region: this OpenBLAS (pthreads build) serialises
   concurrent callers behind a lock, which made per-thread sgemm chunks 25x slower.
   M = 1 or N = 1 (K > 0) goes to sgemv. */
void so_fast_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                   const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
/* MatMul/Gemm on our GEMM (gemm.c) instead of sgemm where selected (default 1; 0: sgemm
   everywhere, for A/B measurements). Read at kernel selection. */
extern int so_fast_use_gemm;
/* Sets OpenMP threads used by our loops' parallel regions (also read by kernels). */
int so_fast_threads(void);

/* Splits x[0..n) into its even (ev[i/2] = x[i], i even) and odd elements; ev and od hold (n+1)/2 floats. */
void so_fast_deinterleave2(const float *restrict x, int64_t n, float *restrict ev, float *restrict od);

#endif
