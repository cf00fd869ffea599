/* gemv.c - the M = 1 product of a packed weight (gemv.h): up to 4 column panels of 16 per pass over K, one vector accumulator chain (two at AVX-512) per panel, the per-column epilogue on each thread's finished range. */
#include "kset_names.h"

#include "gemv.h"

#include <omp.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#define PW 16 /* panel width: gemm.h SO_GEMM_NR, the layout so_gemm_pack_b writes */

/* Panels [p0, p0 + u) (u = 1..4, a constant after inlining) into out[0 .. 16u): out = sum_k x[k] * panel rows k.
   Every panel's sum runs in the same order whatever u is, so the grouping of panels (which depends on the
   thread split) never changes a result. */
static inline __attribute__((always_inline)) void panels(int u, int64_t K, const float *x, int64_t incx, const float *w, float *out)
{
    const int64_t ps = K * PW; /* floats per panel */
#if defined(__AVX512F__)
    /* two chains per panel (even / odd k), summed at the end: 8 independent FMAs in flight for u = 4 */
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    int64_t k = 0;
    for (; k + 2 <= K; k += 2) {
        const float *q = w + k * PW;
        const __m512 x0 = _mm512_set1_ps(x[k * incx]), x1 = _mm512_set1_ps(x[(k + 1) * incx]);
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(q), x0, a0);
        b0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + PW), x1, b0);
        if (u > 1) a1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + ps), x0, a1), b1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + ps + PW), x1, b1);
        if (u > 2) a2 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 2 * ps), x0, a2), b2 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 2 * ps + PW), x1, b2);
        if (u > 3) a3 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 3 * ps), x0, a3), b3 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 3 * ps + PW), x1, b3);
    }
    if (k < K) {
        const float *q = w + k * PW;
        const __m512 x0 = _mm512_set1_ps(x[k * incx]);
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(q), x0, a0);
        if (u > 1) a1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + ps), x0, a1);
        if (u > 2) a2 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 2 * ps), x0, a2);
        if (u > 3) a3 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 3 * ps), x0, a3);
    }
    _mm512_storeu_ps(out, _mm512_add_ps(a0, b0));
    if (u > 1) _mm512_storeu_ps(out + PW, _mm512_add_ps(a1, b1));
    if (u > 2) _mm512_storeu_ps(out + 2 * PW, _mm512_add_ps(a2, b2));
    if (u > 3) _mm512_storeu_ps(out + 3 * PW, _mm512_add_ps(a3, b3));
#elif defined(__AVX2__)
    /* a panel is two ymm: 8 independent chains for u = 4 */
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    for (int64_t k = 0; k < K; k++) {
        const float *q = w + k * PW;
        const __m256 xk = _mm256_set1_ps(x[k * incx]);
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q), xk, a0), b0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + 8), xk, b0);
        if (u > 1) a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + ps), xk, a1), b1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + ps + 8), xk, b1);
        if (u > 2) a2 = _mm256_fmadd_ps(_mm256_loadu_ps(q + 2 * ps), xk, a2), b2 = _mm256_fmadd_ps(_mm256_loadu_ps(q + 2 * ps + 8), xk, b2);
        if (u > 3) a3 = _mm256_fmadd_ps(_mm256_loadu_ps(q + 3 * ps), xk, a3), b3 = _mm256_fmadd_ps(_mm256_loadu_ps(q + 3 * ps + 8), xk, b3);
    }
    _mm256_storeu_ps(out, a0), _mm256_storeu_ps(out + 8, b0);
    if (u > 1) _mm256_storeu_ps(out + PW, a1), _mm256_storeu_ps(out + PW + 8, b1);
    if (u > 2) _mm256_storeu_ps(out + 2 * PW, a2), _mm256_storeu_ps(out + 2 * PW + 8, b2);
    if (u > 3) _mm256_storeu_ps(out + 3 * PW, a3), _mm256_storeu_ps(out + 3 * PW + 8, b3);
#else
    for (int p = 0; p < u; p++) {
        float acc[PW] = {0};
        const float *q = w + p * ps;
        for (int64_t k = 0; k < K; k++) {
            const float xk = x[k * incx];
            for (int j = 0; j < PW; j++) acc[j] += q[k * PW + j] * xk;
        }
        for (int j = 0; j < PW; j++) out[p * PW + j] = acc[j];
    }
#endif
}

/* Panels [p0, p1) into y (clipped at N), then the epilogue on the range they cover. */
static void gemv_range(int64_t K, int64_t N, float alpha, const float *x, int64_t incx, const float *wp, float *y, const so_epi *ep,
                       const float *res, int64_t p0, int64_t p1)
{
    float out[4 * PW];
    for (int64_t p = p0; p < p1;) {
        const int u = p1 - p >= 4 ? 4 : (int)(p1 - p);
        const float *w = wp + p * K * PW;
        switch (u) {
        case 4: panels(4, K, x, incx, w, out); break;
        case 3: panels(3, K, x, incx, w, out); break;
        case 2: panels(2, K, x, incx, w, out); break;
        default: panels(1, K, x, incx, w, out); break;
        }
        const int64_t j0 = p * PW, n = N - j0 < u * PW ? N - j0 : u * PW;
        for (int64_t j = 0; j < n; j++) y[j0 + j] = alpha * out[j];
        p += u;
    }
    const int64_t j0 = p0 * PW, j1 = p1 * PW < N ? p1 * PW : N;
    if (ep && j1 > j0) so_epi_cols(ep, j0, y + j0, res ? res + j0 : NULL, j1 - j0);
    else if (res)
        for (int64_t j = j0; j < j1; j++) y[j] += res[j];
}

void so_gemv_packed(int64_t K, int64_t N, float alpha, const float *x, int64_t incx, const float *wp, float *y, const so_epi *ep,
                    const float *res, int threads)
{
    const int64_t np = (N + PW - 1) / PW;
    int T = threads < 1 ? 1 : threads;
    /* a parallel region costs a few microseconds: only for weights of 512 KB and more, 4 panels per thread at least */
    if (K * N < ((int64_t)1 << 17) || np < 4 * T) T = 1;
    if (T == 1) {
        gemv_range(K, N, alpha, x, incx, wp, y, ep, res, 0, np);
        return;
    }
#pragma omp parallel for num_threads(T) schedule(static)
    for (int t = 0; t < T; t++) gemv_range(K, N, alpha, x, incx, wp, y, ep, res, np * t / T, np * (t + 1) / T);
}
