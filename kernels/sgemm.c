/* sgemm.c - the library sgemm every sgemm-based kernel calls: sgemv for vectors, a streaming small-M path, then oneDNN's dnnl_sgemm at the avx512 level (when libdnnl loads) or OpenBLAS split statically over the executor's OpenMP team; our GEMV / GEMM instead of an OpenBLAS below this level (blas.h). */
#include "kset_names.h"

#include "sgemm.h"

#include "blas.h"
#include "dnnl.h"
#include "fast.h"
#include "gemm.h"
#include "gemv.h"

#include <cblas.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#ifdef __AVX512F__
#include <dlfcn.h>
#include <string.h>
#endif

#ifndef SO_KSET_LEVEL
#define SO_KSET_LEVEL SO_ISA_SCALAR /* (kset.c: this compilation's level) */
#endif


/* C[M,N] = alpha A[M,K] B[K,N] + beta C for a small M: B is streamed once, by rows, four rows
   at a time, into an M x NB block of C that stays in L2 (each load and store of C carries
   four multiply-adds). */
static void smallm_sgemm(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda, const float *B,
                         int64_t ldb, float beta, float *C, int64_t ldc)
{
    /* the whole width at once while the C rows fit half of L2 (B then streams sequentially;
       a narrower block reads each row of B in pieces, stride ldb, which the prefetchers do
       not follow: 2.5x slower for [5,512]x[512,4096]) */
    int64_t NB = N;
    if (NB * M * 4 > (256 << 10)) NB = ((256 << 10) / (M * 4)) & ~(int64_t)15;
    for (int64_t j0 = 0; j0 < N; j0 += NB) {
        int64_t nb = N - j0 < NB ? N - j0 : NB;
        for (int64_t m = 0; m < M; m++) {
            float *c = C + m * ldc + j0;
            if (beta == 0.f)
                for (int64_t j = 0; j < nb; j++) c[j] = 0.f;
            else if (beta != 1.f)
                for (int64_t j = 0; j < nb; j++) c[j] *= beta;
        }
        int64_t k = 0;
        for (; k + 4 <= K; k += 4) {
            const float *b0 = B + k * ldb + j0, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
            for (int64_t m = 0; m < M; m++) {
                const float *a = A + m * lda + k;
                const float a0 = alpha * a[0], a1 = alpha * a[1], a2 = alpha * a[2], a3 = alpha * a[3];
                float *restrict c = C + m * ldc + j0;
#pragma omp simd
                for (int64_t j = 0; j < nb; j++) c[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
            }
        }
        for (; k < K; k++) {
            const float *b0 = B + k * ldb + j0;
            for (int64_t m = 0; m < M; m++) {
                const float a0 = alpha * A[m * lda + k];
                float *restrict c = C + m * ldc + j0;
#pragma omp simd
                for (int64_t j = 0; j < nb; j++) c[j] += a0 * b0[j];
            }
        }
    }
}

#ifdef __AVX512F__
/* oneDNN's sgemm (Debian libdnnl2), loaded at the first use (dlopen: an optional run-time dependency,
   never loaded below the avx512 level, so valgrind's avx2 runs never see its JIT code).
   SUPEROPT_ONEDNN=0 keeps OpenBLAS (A/B measurements). Row-major, like cblas_sgemm; oneDNN threads
   itself on the caller's OpenMP team (libgomp, the executor's fixed team). */
typedef int (*dnnl_sgemm_fn)(char transa, char transb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                             const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
static dnnl_sgemm_fn dnnl_sgemm_p;
static pthread_once_t dnnl_once = PTHREAD_ONCE_INIT;

static void dnnl_load(void)
{
    void *h = so_dnnl_lib(); /* kernels/dnnl.c: NULL in sanitizer builds and with SUPEROPT_ONEDNN=0 */
    void *f = h ? dlsym(h, "dnnl_sgemm") : NULL;
    if (f) memcpy(&dnnl_sgemm_p, &f, sizeof f); /* (object pointer to function pointer without a cast warning) */
}

int so_sgemm_onednn(void)
{
    if (!so_fast_use_onednn) return 0;
    pthread_once(&dnnl_once, dnnl_load);
    return dnnl_sgemm_p != NULL;
}
#else
int so_sgemm_onednn(void) { return 0; }
#endif

/* so_sgemm's M = 1 or N = 1 case over outputs [i0, i0 + n): one sgemv (y = C's row 0 or column 0). */
static void sgemv_range(int trans_a, int trans_b, int64_t M, int64_t K, float alpha, const float *A, int64_t lda, const float *B,
                        int64_t ldb, float beta, float *C, int64_t ldc, int64_t i0, int64_t n)
{
    int64_t incy = M == 1 ? 1 : ldc;
    float *y = C + i0 * incy;
    if (M == 1) { /* y[N] = op(B)^T x, x = row 0 of op(A) */
        int64_t incx = trans_a ? lda : 1;
        if (trans_b)
            cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)n, (int)K, alpha, B + i0 * ldb, (int)ldb, A, (int)incx, beta, y, (int)incy);
        else
            cblas_sgemv(CblasRowMajor, CblasTrans, (int)K, (int)n, alpha, B + i0, (int)ldb, A, (int)incx, beta, y, (int)incy);
    } else { /* y[M] = op(A) x, x = column 0 of op(B) */
        int64_t incx = trans_b ? 1 : ldb;
        if (trans_a)
            cblas_sgemv(CblasRowMajor, CblasTrans, (int)K, (int)n, alpha, A + i0, (int)lda, B, (int)incx, beta, y, (int)incy);
        else
            cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)n, (int)K, alpha, A + i0 * lda, (int)lda, B, (int)incx, beta, y, (int)incy);
    }
}

/* The packed B and A blocks of our GEMM when it stands in for OpenBLAS's sgemm (so_sgemm has no scratch of its
   caller's): one buffer per thread (callers inside a team call with T = 1, each on its own thread), grown to the
   largest product it ran and kept, freed when the thread ends. NULL when memory is short (then OpenBLAS runs). */
typedef struct gemm_buf {
    float *p;
    size_t n;
} gemm_buf;
static pthread_key_t buf_key;
static pthread_once_t buf_once = PTHREAD_ONCE_INIT;
static int buf_key_ok;
static void buf_free(void *v)
{
    gemm_buf *b = v;
    free(b->p);
    free(b);
}
static void buf_init(void) { buf_key_ok = pthread_key_create(&buf_key, buf_free) == 0; }
static float *gemm_scratch(size_t floats)
{
    pthread_once(&buf_once, buf_init);
    if (!buf_key_ok) return NULL;
    gemm_buf *b = pthread_getspecific(buf_key);
    if (!b) {
        if (!(b = calloc(1, sizeof *b))) return NULL;
        if (pthread_setspecific(buf_key, b)) {
            free(b);
            return NULL;
        }
    }
    if (b->n < floats) {
        free(b->p);
        b->p = aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64);
        b->n = b->p ? floats : 0;
    }
    return b->p;
}

int so_sgemm_ours(void) { return so_blas_ours(SO_KSET_LEVEL); }

void so_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                   const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    /* OpenBLAS below this level (blas.h: e.g. its Prescott kernels on a CPU it does not know): the vector products on
       our GEMV (so_gemv), the others on oneDNN where this level uses it, else on our GEMM. */
    const int ours = so_blas_ours(SO_KSET_LEVEL);
    if (ours && (M == 1 || N == 1) && K > 0) {
        const int T = so_sgemm_threads();
        if (M == 1) { /* y = C's row 0 = x op(B), x = row 0 of op(A) */
            const int64_t incx = trans_a ? lda : 1;
            so_gemv(trans_b, N, K, alpha, B, ldb, A, incx, beta, C, 1, T);
        } else { /* y = C's column 0 = op(A) x, x = column 0 of op(B) */
            const int64_t incx = trans_b ? 1 : ldb;
            so_gemv(!trans_a, M, K, alpha, A, lda, B, incx, beta, C, ldc, T);
        }
        return;
    }
    /* M = 1 or N = 1: sgemv (measured 3-4x faster than this OpenBLAS's sgemm for
       [1,512]x[512,2048] and [1,64]x[64,256]). y is zeroed first when beta = 0 so stale
       arena contents (NaN/Inf) cannot leak through a 0 * y scaling. */
    if ((M == 1 || N == 1) && K > 0) {
        int64_t len = M == 1 ? N : M, incy = M == 1 ? 1 : ldc;
        if (beta == 0.f)
            for (int64_t i = 0; i < len; i++) C[i * incy] = 0.f;
        /* With several threads and a large matrix stored by output rows (the classifiers of the
           mobile CNNs, Gemm transB = 1: 1000 rows of 1280, 5 MB read once per run), the outputs are
           split into one range of 64-multiples per thread, each an sgemv over its rows: every output
           is still the same dot product over its row, so results do not depend on the thread count
           (tested). Matrices stored by columns (y = A^T x) stay on one thread: this OpenBLAS's
           column kernel gave different roundings for a split (tested too). */
        int T = so_sgemm_threads();
        if (len * K < ((int64_t)1 << 18) || len < 128 * T || (M == 1 ? !trans_b : trans_a)) T = 1;
        if (T == 1) { /* no parallel region: entering one costs more than a small sgemv (kpriv.h, so_par_on) */
            sgemv_range(trans_a, trans_b, M, K, alpha, A, lda, B, ldb, beta, C, ldc, 0, len);
            return;
        }
#pragma omp parallel for num_threads(T) schedule(static)
        for (int t = 0; t < T; t++) {
            int64_t i0 = (len * t / T) & ~(int64_t)63, i1 = t == T - 1 ? len : (len * (t + 1) / T) & ~(int64_t)63;
            if (i1 > i0) sgemv_range(trans_a, trans_b, M, K, alpha, A, lda, B, ldb, beta, C, ldc, i0, i1 - i0);
        }
        return;
    }
    /* 2 <= M <= 8, B not transposed, K and N large (a few activation rows against a weight,
       e.g. NasRNN's inputs of several time steps against one matrix): B read once, by rows
       (smallm_sgemm). This OpenBLAS's sgemm took as long for [5,512]x[512,4096] (1.03 ms) as
       five sgemvs. */
    if (!trans_a && !trans_b && M >= 2 && M <= 8 && K >= 128 && N >= 128) {
        /* with several threads (and enough work), contiguous column ranges of 16-multiples,
           one per thread: each streams its own columns of B */
        int T = so_sgemm_threads();
        if (T > 1 && M * N * K >= ((int64_t)1 << 21) && N >= 64 * T) {
#pragma omp parallel for num_threads(T) schedule(static)
            for (int t = 0; t < T; t++) {
                int64_t j0 = (N * t / T) & ~(int64_t)15, j1 = t == T - 1 ? N : (N * (t + 1) / T) & ~(int64_t)15;
                if (j1 > j0) smallm_sgemm(M, j1 - j0, K, alpha, A, lda, B + j0, ldb, beta, C + j0, ldc);
            }
        } else {
            smallm_sgemm(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        }
        return;
    }
#ifdef __AVX512F__
    /* oneDNN: 1.3-1.5x our AVX-512 GEMM and ~2x this OpenBLAS (Haswell kernels) on every shape measured
       (kernels/README, "oneDNN or ours") */
    if (so_sgemm_onednn()) {
        dnnl_sgemm_p(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
#endif
    if (ours && M > 0 && N > 0 && K > 0) {
        /* one thread below 2^20 multiply-adds, as the OpenBLAS split below: a parallel region costs more there */
        const int T = M * N * K >= ((int64_t)1 << 20) ? so_sgemm_threads() : 1;
        if (!trans_a && !trans_b && alpha == 1.f && beta == 0.f && M * N * K <= ((int64_t)1 << 18)) {
            so_gemm_small(M, N, K, A, lda, B, ldb, C, ldc); /* operands in place, nothing packed (one thread) */
            return;
        }
        float *scr = gemm_scratch(so_gemm_full_scratch_floats(M, N, K, T));
        if (scr) {
            so_gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL, scr, T);
            return;
        }
    }
    /* OpenBLAS runs single-threaded (exec.c): with T threads, the product is split here into T
       contiguous column ranges (16-multiples) or, when N is narrow, row ranges, one
       single-threaded sgemm each, on the executor's OpenMP team, so one thread pool serves both
       our loops and sgemm (two spinning pools on the same cores fought each other). */
    int T = so_sgemm_threads();
    if (T > 1 && M * N * K >= ((int64_t)1 << 20)) {
        int by_cols = N >= 32 * T;
        if (by_cols || M >= 8 * T) {
#pragma omp parallel for num_threads(T) schedule(static)
            for (int t = 0; t < T; t++) {
                if (by_cols) {
                    int64_t j0 = (N * t / T) & ~(int64_t)15, j1 = t == T - 1 ? N : (N * (t + 1) / T) & ~(int64_t)15;
                    if (j1 > j0)
                        cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                                    (int)M, (int)(j1 - j0), (int)K, alpha, A, (int)lda, trans_b ? B + j0 * ldb : B + j0,
                                    (int)ldb, beta, C + j0, (int)ldc);
                } else {
                    int64_t i0 = M * t / T, i1 = M * (t + 1) / T;
                    if (i1 > i0)
                        cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                                    (int)(i1 - i0), (int)N, (int)K, alpha, trans_a ? A + i0 : A + i0 * lda, (int)lda, B,
                                    (int)ldb, beta, C + i0 * ldc, (int)ldc);
                }
            }
            return;
        }
    }
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K,
                alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
}
