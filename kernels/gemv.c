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

/* ---------------- unpacked vector products (so_gemv) ---------------- */

/* Dot products of R rows r, r + ldr, .. (R = 1..4, a constant after inlining) with x (contiguous) into out[0 .. R).
   Each row's sum takes the same steps whatever R is (two vector chains over alternate blocks of K, the masked tail
   into the second, then a fixed reduction), so a row's result does not depend on which rows it is grouped with. */
static inline __attribute__((always_inline)) void dot_rows(int R, int64_t K, const float *r, int64_t ldr, const float *x, float *out)
{
#if defined(__AVX512F__)
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    const float *r0 = r, *r1 = r + ldr, *r2 = r + 2 * ldr, *r3 = r + 3 * ldr;
    int64_t k = 0;
    for (; k + 32 <= K; k += 32) {
        const __m512 x0 = _mm512_loadu_ps(x + k), x1 = _mm512_loadu_ps(x + k + 16);
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(r0 + k), x0, a0), b0 = _mm512_fmadd_ps(_mm512_loadu_ps(r0 + k + 16), x1, b0);
        if (R > 1) a1 = _mm512_fmadd_ps(_mm512_loadu_ps(r1 + k), x0, a1), b1 = _mm512_fmadd_ps(_mm512_loadu_ps(r1 + k + 16), x1, b1);
        if (R > 2) a2 = _mm512_fmadd_ps(_mm512_loadu_ps(r2 + k), x0, a2), b2 = _mm512_fmadd_ps(_mm512_loadu_ps(r2 + k + 16), x1, b2);
        if (R > 3) a3 = _mm512_fmadd_ps(_mm512_loadu_ps(r3 + k), x0, a3), b3 = _mm512_fmadd_ps(_mm512_loadu_ps(r3 + k + 16), x1, b3);
    }
    if (k + 16 <= K) {
        const __m512 x0 = _mm512_loadu_ps(x + k);
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(r0 + k), x0, a0);
        if (R > 1) a1 = _mm512_fmadd_ps(_mm512_loadu_ps(r1 + k), x0, a1);
        if (R > 2) a2 = _mm512_fmadd_ps(_mm512_loadu_ps(r2 + k), x0, a2);
        if (R > 3) a3 = _mm512_fmadd_ps(_mm512_loadu_ps(r3 + k), x0, a3);
        k += 16;
    }
    if (k < K) {
        const __mmask16 m = (__mmask16)((1u << (K - k)) - 1);
        const __m512 x0 = _mm512_maskz_loadu_ps(m, x + k);
        b0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, r0 + k), x0, b0);
        if (R > 1) b1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, r1 + k), x0, b1);
        if (R > 2) b2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, r2 + k), x0, b2);
        if (R > 3) b3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, r3 + k), x0, b3);
    }
    out[0] = _mm512_reduce_add_ps(_mm512_add_ps(a0, b0));
    if (R > 1) out[1] = _mm512_reduce_add_ps(_mm512_add_ps(a1, b1));
    if (R > 2) out[2] = _mm512_reduce_add_ps(_mm512_add_ps(a2, b2));
    if (R > 3) out[3] = _mm512_reduce_add_ps(_mm512_add_ps(a3, b3));
#elif defined(__AVX2__)
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    const float *r0 = r, *r1 = r + ldr, *r2 = r + 2 * ldr, *r3 = r + 3 * ldr;
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) {
        const __m256 x0 = _mm256_loadu_ps(x + k), x1 = _mm256_loadu_ps(x + k + 8);
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(r0 + k), x0, a0), b0 = _mm256_fmadd_ps(_mm256_loadu_ps(r0 + k + 8), x1, b0);
        if (R > 1) a1 = _mm256_fmadd_ps(_mm256_loadu_ps(r1 + k), x0, a1), b1 = _mm256_fmadd_ps(_mm256_loadu_ps(r1 + k + 8), x1, b1);
        if (R > 2) a2 = _mm256_fmadd_ps(_mm256_loadu_ps(r2 + k), x0, a2), b2 = _mm256_fmadd_ps(_mm256_loadu_ps(r2 + k + 8), x1, b2);
        if (R > 3) a3 = _mm256_fmadd_ps(_mm256_loadu_ps(r3 + k), x0, a3), b3 = _mm256_fmadd_ps(_mm256_loadu_ps(r3 + k + 8), x1, b3);
    }
    if (k + 8 <= K) {
        const __m256 x0 = _mm256_loadu_ps(x + k);
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(r0 + k), x0, a0);
        if (R > 1) a1 = _mm256_fmadd_ps(_mm256_loadu_ps(r1 + k), x0, a1);
        if (R > 2) a2 = _mm256_fmadd_ps(_mm256_loadu_ps(r2 + k), x0, a2);
        if (R > 3) a3 = _mm256_fmadd_ps(_mm256_loadu_ps(r3 + k), x0, a3);
        k += 8;
    }
    if (k < K) {
        static const int32_t lanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
        const __m256i m = _mm256_loadu_si256((const __m256i *)(lanes + 8 - (K - k)));
        const __m256 x0 = _mm256_maskload_ps(x + k, m);
        b0 = _mm256_fmadd_ps(_mm256_maskload_ps(r0 + k, m), x0, b0);
        if (R > 1) b1 = _mm256_fmadd_ps(_mm256_maskload_ps(r1 + k, m), x0, b1);
        if (R > 2) b2 = _mm256_fmadd_ps(_mm256_maskload_ps(r2 + k, m), x0, b2);
        if (R > 3) b3 = _mm256_fmadd_ps(_mm256_maskload_ps(r3 + k, m), x0, b3);
    }
    const __m256 s[4] = {_mm256_add_ps(a0, b0), _mm256_add_ps(a1, b1), _mm256_add_ps(a2, b2), _mm256_add_ps(a3, b3)};
    for (int q = 0; q < R; q++) {
        __m128 h = _mm_add_ps(_mm256_castps256_ps128(s[q]), _mm256_extractf128_ps(s[q], 1));
        h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        h = _mm_add_ss(h, _mm_movehdup_ps(h));
        out[q] = _mm_cvtss_f32(h);
    }
#else
    for (int q = 0; q < R; q++) {
        float s = 0.f;
        for (int64_t k = 0; k < K; k++) s += r[q * ldr + k] * x[k];
        out[q] = s;
    }
#endif
}

static inline float put(float alpha, float s, float beta, const float *y) { return beta == 0.f ? alpha * s : alpha * s + beta * *y; }

/* rows = 1, outputs [i0, i1) */
static void gemv_rows(int64_t i0, int64_t i1, int64_t K, float alpha, const float *R, int64_t ldr, const float *x, int64_t incx, float beta,
                      float *y, int64_t incy)
{
    if (incx != 1) { /* a strided x (rare): one plain sum per row, k in order */
        for (int64_t i = i0; i < i1; i++) {
            float s = 0.f;
            for (int64_t k = 0; k < K; k++) s += R[i * ldr + k] * x[k * incx];
            y[i * incy] = put(alpha, s, beta, y + i * incy);
        }
        return;
    }
    float out[4];
    int64_t i = i0;
    for (; i + 4 <= i1; i += 4) {
        dot_rows(4, K, R + i * ldr, ldr, x, out);
        for (int q = 0; q < 4; q++) y[(i + q) * incy] = put(alpha, out[q], beta, y + (i + q) * incy);
    }
    for (; i < i1; i++) {
        dot_rows(1, K, R + i * ldr, ldr, x, out);
        y[i * incy] = put(alpha, out[0], beta, y + i * incy);
    }
}

#define GEMV_CB 1024 /* columns per block: the block's sums (4 KB) stay in L1 while K rows stream through */

/* rows = 0, outputs [j0, j1): per block of columns, the sums s[j] = fma(R[k, j], x[k], s[j]) for k = 0, 1, .. in
   order, four rows per pass over the block (one load and store of s per four FMAs); the tail columns take the same
   FMAs one at a time, so a column's bits do not depend on its block or lane. */
static void gemv_cols(int64_t j0, int64_t j1, int64_t K, float alpha, const float *R, int64_t ldr, const float *x, int64_t incx, float beta,
                      float *y, int64_t incy)
{
    float s[GEMV_CB] __attribute__((aligned(64)));
    for (int64_t jb = j0; jb < j1; jb += GEMV_CB) {
        const int64_t n = j1 - jb < GEMV_CB ? j1 - jb : GEMV_CB;
        for (int64_t j = 0; j < n; j++) s[j] = 0.f;
        const float *Rb = R + jb;
        int64_t k = 0;
#if defined(__AVX512F__) || defined(__AVX2__)
#if defined(__AVX512F__)
#define GV 16
#define VT __m512
#define VSET1 _mm512_set1_ps
#define VLOAD _mm512_loadu_ps
#define VSTORE _mm512_storeu_ps
#define VFMA _mm512_fmadd_ps
#else
#define GV 8
#define VT __m256
#define VSET1 _mm256_set1_ps
#define VLOAD _mm256_loadu_ps
#define VSTORE _mm256_storeu_ps
#define VFMA _mm256_fmadd_ps
#endif
        const int64_t nv = n / GV * GV;
        for (; k + 4 <= K; k += 4) {
            const float *q0 = Rb + k * ldr, *q1 = q0 + ldr, *q2 = q1 + ldr, *q3 = q2 + ldr;
            const float f0 = x[k * incx], f1 = x[(k + 1) * incx], f2 = x[(k + 2) * incx], f3 = x[(k + 3) * incx];
            const VT x0 = VSET1(f0), x1 = VSET1(f1), x2 = VSET1(f2), x3 = VSET1(f3);
            for (int64_t j = 0; j < nv; j += GV) {
                VT a = VLOAD(s + j);
                a = VFMA(VLOAD(q0 + j), x0, a);
                a = VFMA(VLOAD(q1 + j), x1, a);
                a = VFMA(VLOAD(q2 + j), x2, a);
                a = VFMA(VLOAD(q3 + j), x3, a);
                VSTORE(s + j, a);
            }
            for (int64_t j = nv; j < n; j++) {
                __m128 a = _mm_set_ss(s[j]);
                a = _mm_fmadd_ss(_mm_set_ss(q0[j]), _mm_set_ss(f0), a);
                a = _mm_fmadd_ss(_mm_set_ss(q1[j]), _mm_set_ss(f1), a);
                a = _mm_fmadd_ss(_mm_set_ss(q2[j]), _mm_set_ss(f2), a);
                a = _mm_fmadd_ss(_mm_set_ss(q3[j]), _mm_set_ss(f3), a);
                s[j] = _mm_cvtss_f32(a);
            }
        }
        for (; k < K; k++) {
            const float *q0 = Rb + k * ldr;
            const float f0 = x[k * incx];
            const VT x0 = VSET1(f0);
            for (int64_t j = 0; j < nv; j += GV) VSTORE(s + j, VFMA(VLOAD(q0 + j), x0, VLOAD(s + j)));
            for (int64_t j = nv; j < n; j++) s[j] = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(q0[j]), _mm_set_ss(f0), _mm_set_ss(s[j])));
        }
#undef GV
#undef VT
#undef VSET1
#undef VLOAD
#undef VSTORE
#undef VFMA
#else
        for (; k < K; k++) {
            const float *q0 = Rb + k * ldr;
            const float f0 = x[k * incx];
            for (int64_t j = 0; j < n; j++) s[j] += q0[j] * f0;
        }
#endif
        for (int64_t j = 0; j < n; j++) y[(jb + j) * incy] = put(alpha, s[j], beta, y + (jb + j) * incy);
    }
}

void so_gemv(int rows, int64_t n, int64_t K, float alpha, const float *R, int64_t ldr, const float *x, int64_t incx, float beta, float *y,
             int64_t incy, int threads)
{
    if (n <= 0) return;
    if (K <= 0) { /* no products: y = beta * y */
        for (int64_t i = 0; i < n; i++) y[i * incy] = beta == 0.f ? 0.f : beta * y[i * incy];
        return;
    }
    int T = threads < 1 ? 1 : threads;
    /* a parallel region costs a few microseconds: only for 1 MB of R and more, 64 outputs per thread at least */
    if (n * K < ((int64_t)1 << 18) || n < 64 * T) T = 1;
    if (T == 1) {
        if (rows) gemv_rows(0, n, K, alpha, R, ldr, x, incx, beta, y, incy);
        else gemv_cols(0, n, K, alpha, R, ldr, x, incx, beta, y, incy);
        return;
    }
#pragma omp parallel for num_threads(T) schedule(static)
    for (int t = 0; t < T; t++) {
        const int64_t i0 = (n * t / T) & ~(int64_t)15, i1 = t == T - 1 ? n : (n * (t + 1) / T) & ~(int64_t)15;
        if (i1 <= i0) continue;
        if (rows) gemv_rows(i0, i1, K, alpha, R, ldr, x, incx, beta, y, incy);
        else gemv_cols(i0, i1, K, alpha, R, ldr, x, incx, beta, y, incy);
    }
}
