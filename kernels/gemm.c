/* gemm.c - our packed single-precision GEMM (AVX2+FMA): 6x16 register-blocked micro-kernel, KC/MC cache blocking, packed A per call and B packed once at load, fused epilogues on each finished tile, static column-panel split over threads. */
#include "kset_names.h"

#include "gemm.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <omp.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif


/* Micro-tile: MR rows x NR = 16 columns (one packed B panel). AVX-512: 16 rows, one zmm accumulator
   each (16 of the 32 registers; M = 64 and channel counts 16k split without an edge); otherwise 6
   rows of two ymm (12 of 16 registers). Packed A panels are MR rows wide, so A is packed by the level
   that runs the kernel (weights-as-A are packed at selection, by the same level). */
#ifdef __AVX512F__
#define MR 16
#else
#define MR 6
#endif
#define NR SO_GEMM_NR

/* The blocking tunables (so_gemm_kc, _mc, _nc_bytes, _direct_a, _ap_nc, _conv_max_w) are defined once
   for every level in tune.c, with the reasons for their defaults. */

static int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

/* Threads: every parallel region below asks for exactly `threads` (the executor runs fixed
   OpenMP teams, omp_set_dynamic(0), kernels/exec.c); each thread's share is a fixed range,
   so results depend on the team size only, never on timing. */

size_t so_gemm_packed_b_floats(int64_t K, int64_t N)
{
    int64_t np = (N + NR - 1) / NR;
    return (size_t)(np * K * NR);
}

void so_gemm_pack_b(int trans_b, int64_t K, int64_t N, const float *B, int64_t ldb, float *dst)
{
    int64_t np = (N + NR - 1) / NR;
    for (int64_t p = 0; p < np; p++) {
        int64_t j0 = p * NR, nr = imin(NR, N - j0);
        float *d = dst + p * K * NR;
        for (int64_t k = 0; k < K; k++, d += NR) {
            if (!trans_b) {
                const float *s = B + k * ldb + j0;
                for (int64_t j = 0; j < nr; j++) d[j] = s[j];
            } else {
                for (int64_t j = 0; j < nr; j++) d[j] = B[(j0 + j) * ldb + k];
            }
            for (int64_t j = nr; j < NR; j++) d[j] = 0.f;
        }
    }
}

/* Packs rows [i0, i0 + mc) x columns [k0, k0 + kc) of op(A) into ceil(mc / MR) micro-panels,
   each kc groups of MR floats (rows past mc zero). */
static void pack_a(int trans_a, const float *A, int64_t lda, int64_t i0, int64_t mc, int64_t k0, int64_t kc, float *dst)
{
    for (int64_t ir = 0; ir < mc; ir += MR) {
        int64_t mr = imin(MR, mc - ir);
        float *d = dst + ir * kc;
        if (trans_a) {
            for (int64_t k = 0; k < kc; k++) {
                const float *s = A + (k0 + k) * lda + i0 + ir;
                int64_t r = 0;
                for (; r < mr; r++) d[k * MR + r] = s[r];
                for (; r < MR; r++) d[k * MR + r] = 0.f;
            }
        } else if (mr == MR) { /* row after row: sequential reads (A is often cold in DRAM) */
            for (int64_t r = 0; r < MR; r++) {
                const float *sr = A + (i0 + ir + r) * lda + k0;
                for (int64_t k = 0; k < kc; k++) d[k * MR + r] = sr[k];
            }
        } else {
            for (int64_t k = 0; k < kc; k++) {
                int64_t r = 0;
                for (; r < mr; r++) d[k * MR + r] = A[(i0 + ir + r) * lda + k0 + k];
                for (; r < MR; r++) d[k * MR + r] = 0.f;
            }
        }
    }
}

/* C tile (mr x nr at c) = alpha * acc + beta * C (beta = 0: C not read). t: the MR x NR
   accumulator tile, row-major. */
static void store_tile_slow(const float *t, float *c, int64_t ldc, int mr, int nr, float alpha, float beta)
{
    for (int r = 0; r < mr; r++)
        for (int j = 0; j < nr; j++) {
            float v = alpha * t[r * NR + j];
            c[r * ldc + j] = beta == 0.f ? v : v + beta * c[r * ldc + j];
        }
}

#ifdef __AVX512F__
/* R rows (a constant at each call: the accumulators stay in zmm registers) of the MR x 16 tile over
   kc steps; a(r, k) at a[r*rs + k*ks], each broadcast straight into the FMA (embedded broadcast).
   pf: one line of the next B micro-panel prefetched into L2 per step. */
static inline __attribute__((always_inline)) void uk512(int R, int64_t kc, const float *restrict a, int64_t rs, int64_t ks,
                                                       const float *restrict b, __m512 *acc, const float *pf)
{
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) acc[r] = _mm512_setzero_ps();
#pragma GCC unroll 2
    for (int64_t k = 0; k < kc; k++) {
        const __m512 bv = _mm512_loadu_ps(b);
        _mm_prefetch((const char *)pf, _MM_HINT_T1);
        pf += NR;
#pragma GCC unroll 16
        for (int r = 0; r < R; r++) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r * rs]), bv, acc[r]);
        a += ks;
        b += NR;
    }
}

/* Full tile: C = alpha acc + beta C from the registers (ab = {alpha, beta}; beta = 0: C not read). */
static void __attribute__((noinline)) uk512_full(int64_t kc, const float *restrict a, int64_t rs, int64_t ks, const float *restrict b,
                                                 float *restrict c, int64_t ldc, const float *ab, const float *pf)
{
    __m512 acc[MR];
    uk512(MR, kc, a, rs, ks, b, acc, pf);
    const float alpha = ab[0], beta = ab[1];
#pragma GCC unroll 16
    for (int r = 0; r < MR; r++) {
        __m512 v = alpha == 1.f ? acc[r] : _mm512_mul_ps(_mm512_set1_ps(alpha), acc[r]);
        if (beta == 1.f) v = _mm512_add_ps(_mm512_loadu_ps(c + r * ldc), v);
        else if (beta != 0.f) v = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_loadu_ps(c + r * ldc), v);
        _mm512_storeu_ps(c + r * ldc, v);
    }
}

/* Edge tiles: R >= mr rows (the packed panel is zero past mr) into t, then stored. */
#define UK512_EDGE(R)                                                                                                   \
    static void __attribute__((noinline)) uk512_acc##R(int64_t kc, const float *restrict a, int64_t rs, int64_t ks,     \
                                                       const float *restrict b, float *restrict t, const float *pf)      \
    {                                                                                                                   \
        __m512 acc[R];                                                                                                  \
        uk512(R, kc, a, rs, ks, b, acc, pf);                                                                            \
        _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) _mm512_storeu_ps(t + r * NR, acc[r]);                     \
    }
UK512_EDGE(4)
UK512_EDGE(8)
UK512_EDGE(16)

/* a: A's micro-panel, element (r, k) at a[r*rs + k*ks]: packed (rs 1, ks MR) or read in place
   from a row-major A (rs lda, ks 1: only for full tiles). */
static void ukernel_s(int64_t kc, const float *restrict a, int64_t rs, int64_t ks, const float *restrict b, float *restrict c,
                      int64_t ldc, int mr, int nr, float alpha, float beta, const float *pf)
{
    if (mr == MR && nr == NR) {
        const float ab[2] = {alpha, beta};
        uk512_full(kc, a, rs, ks, b, c, ldc, ab, pf);
        return;
    }
    _Alignas(64) float t[MR * NR];
    if (mr <= 4) uk512_acc4(kc, a, rs, ks, b, t, pf);
    else if (mr <= 8) uk512_acc8(kc, a, rs, ks, b, t, pf);
    else uk512_acc16(kc, a, rs, ks, b, t, pf);
    store_tile_slow(t, c, ldc, mr, nr, alpha, beta);
}
#elif defined(__AVX2__)
#define ROW_FMA(r)                                                                                                     \
    do {                                                                                                               \
        const __m256 av = _mm256_broadcast_ss(a + (r) * rs);                                                           \
        c##r##0 = _mm256_fmadd_ps(av, b0, c##r##0);                                                                    \
        c##r##1 = _mm256_fmadd_ps(av, b1, c##r##1);                                                                    \
    } while (0)

/* The k loop every micro-kernel shares: one B row (NR floats) against ROWS rows of A (ROWS:
   a ROW_FMA list), prefetching one line of the next B panel per step. */
#define K_LOOP(ROWS)                                                                                                   \
    _Pragma("GCC unroll 4") for (int64_t k = 0; k < kc; k++)                                                          \
    {                                                                                                                  \
        const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);                                             \
        _mm_prefetch((const char *)pf, _MM_HINT_T1);                                                                   \
        pf += NR;                                                                                                      \
        ROWS;                                                                                                          \
        a += ks;                                                                                                       \
        b += NR;                                                                                                       \
    }
#define ROWS6 ROW_FMA(0); ROW_FMA(1); ROW_FMA(2); ROW_FMA(3); ROW_FMA(4); ROW_FMA(5)
#define ROWS4 ROW_FMA(0); ROW_FMA(1); ROW_FMA(2); ROW_FMA(3)

#define ROW_SPILL(r)                                                                                                   \
    do {                                                                                                               \
        _mm256_store_ps(t + (r) * NR, c##r##0);                                                                        \
        _mm256_store_ps(t + (r) * NR + 8, c##r##1);                                                                    \
    } while (0)

/* The micro-kernel: t[MR x NR] = sum over kc of a (kc x MR packed) times b (kc x NR packed),
   accumulated in 12 ymm registers (nothing else live in the loop: alpha/beta are applied by
   store_tile, so nothing spills). pf: kc lines of 64 bytes (the next B micro-panel) to bring
   into L2, one per iteration: the first tile of each column panel fetches the next panel
   while it computes, so no tile waits on memory for its B. */
static void __attribute__((noinline)) ukernel_acc(int64_t kc, const float *restrict a, int64_t rs, int64_t ks,
                                                  const float *restrict b, float *restrict t, const float *pf)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
           c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    K_LOOP(ROWS6)
    ROW_SPILL(0);
    ROW_SPILL(1);
    ROW_SPILL(2);
    ROW_SPILL(3);
    ROW_SPILL(4);
    ROW_SPILL(5);
}

#define ROW_OUT(r)                                                                                                     \
    do {                                                                                                               \
        float *cr = c + (r) * ldc;                                                                                     \
        if (ab[0] != 1.f) {                                                                                            \
            c##r##0 = _mm256_mul_ps(_mm256_broadcast_ss(ab), c##r##0);                                                 \
            c##r##1 = _mm256_mul_ps(_mm256_broadcast_ss(ab), c##r##1);                                                 \
        }                                                                                                              \
        if (ab[1] == 1.f) {                                                                                            \
            c##r##0 = _mm256_add_ps(_mm256_loadu_ps(cr), c##r##0);                                                     \
            c##r##1 = _mm256_add_ps(_mm256_loadu_ps(cr + 8), c##r##1);                                                 \
        } else if (ab[1] != 0.f) {                                                                                     \
            c##r##0 = _mm256_fmadd_ps(_mm256_broadcast_ss(ab + 1), _mm256_loadu_ps(cr), c##r##0);                      \
            c##r##1 = _mm256_fmadd_ps(_mm256_broadcast_ss(ab + 1), _mm256_loadu_ps(cr + 8), c##r##1);                  \
        }                                                                                                              \
        _mm256_storeu_ps(cr, c##r##0);                                                                                 \
        _mm256_storeu_ps(cr + 8, c##r##1);                                                                             \
    } while (0)

/* The full-tile micro-kernel: as ukernel_acc, then C = alpha acc + beta C straight from the
   registers (ab = {alpha, beta} in memory, read only after the loop, so the loop keeps its 12
   accumulators without spills; beta = 0: C not read). */
static void __attribute__((noinline)) ukernel_full(int64_t kc, const float *restrict a, int64_t rs, int64_t ks,
                                                   const float *restrict b, float *restrict c, int64_t ldc, const float *ab,
                                                   const float *pf)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
           c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    for (int r = 0; r < MR; r++) {
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + r * ldc + NR - 1), _MM_HINT_T0);
    }
    K_LOOP(ROWS6)
    ROW_OUT(0);
    ROW_OUT(1);
    ROW_OUT(2);
    ROW_OUT(3);
    ROW_OUT(4);
    ROW_OUT(5);
}

/* Rows 0..3 only (an M edge of at most 4 rows, e.g. M = 64 = 10 x 6 + 4: the full kernel
   would spend a third of that tile's multiply-adds on zero rows); rows 4, 5 of t undefined. */
static void __attribute__((noinline)) ukernel_acc4(int64_t kc, const float *restrict a, int64_t rs, int64_t ks,
                                                   const float *restrict b, float *restrict t, const float *pf)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
    K_LOOP(ROWS4)
    ROW_SPILL(0);
    ROW_SPILL(1);
    ROW_SPILL(2);
    ROW_SPILL(3);
}

#define ROWS5 ROW_FMA(0); ROW_FMA(1); ROW_FMA(2); ROW_FMA(3); ROW_FMA(4)

/* Five rows, for small M = 6q + 4 with A read in place (rs lda, ks 1; worker_small): its last 10 rows as two 5-row
   tiles instead of a full tile and the 4-row edge (packed, through t, and at about 80 % of a full tile's speed per
   multiply-add: BERT's M = 64 = 10 x 6 + 4, the edge 6.2 % of its samples for 6.25 % of the FLOPs). Full-width
   tiles are stored from the registers as in ukernel_full (ab = {alpha, beta}), N-edge tiles through t. */
static void __attribute__((noinline)) ukernel_5(int64_t kc, const float *restrict a, int64_t rs, int64_t ks, const float *restrict b,
                                               float *restrict c, int64_t ldc, int nr, const float *ab, const float *pf)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
           c40 = c00, c41 = c00;
    for (int r = 0; r < 5; r++) {
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + r * ldc + NR - 1), _MM_HINT_T0);
    }
    K_LOOP(ROWS5)
    if (nr == NR) {
        ROW_OUT(0);
        ROW_OUT(1);
        ROW_OUT(2);
        ROW_OUT(3);
        ROW_OUT(4);
        return;
    }
    _Alignas(32) float t[MR * NR];
    ROW_SPILL(0);
    ROW_SPILL(1);
    ROW_SPILL(2);
    ROW_SPILL(3);
    ROW_SPILL(4);
    store_tile_slow(t, c, ldc, 5, nr, ab[0], ab[1]);
}

/* a: A's micro-panel, element (r, k) at a[r*rs + k*ks]: packed (rs 1, ks MR) or read in place
   from a row-major A (rs lda, ks 1; then rows past mr are never read: only full tiles and
   the 4-row kernel for mr = 4 may take it). */
static void ukernel_s(int64_t kc, const float *restrict a, int64_t rs, int64_t ks, const float *restrict b, float *restrict c,
                      int64_t ldc, int mr, int nr, float alpha, float beta, const float *pf)
{
    if (mr == MR && nr == NR) {
        const float ab[2] = {alpha, beta};
        ukernel_full(kc, a, rs, ks, b, c, ldc, ab, pf);
    } else if (mr <= 4) {
        _Alignas(32) float t[MR * NR];
        ukernel_acc4(kc, a, rs, ks, b, t, pf);
        store_tile_slow(t, c, ldc, mr, nr, alpha, beta);
    } else {
        _Alignas(32) float t[MR * NR];
        ukernel_acc(kc, a, rs, ks, b, t, pf);
        store_tile_slow(t, c, ldc, mr, nr, alpha, beta);
    }
}
#else
static void ukernel_s(int64_t kc, const float *restrict a, int64_t rs, int64_t ks, const float *restrict b, float *restrict c,
                      int64_t ldc, int mr, int nr, float alpha, float beta, const float *pf)
{
    (void)pf;
    float t[MR * NR] = {0};
    for (int64_t k = 0; k < kc; k++, a += ks, b += NR)
        for (int r = 0; r < mr; r++)
            for (int j = 0; j < NR; j++) t[r * NR + j] += a[r * rs] * b[j];
    store_tile_slow(t, c, ldc, mr, nr, alpha, beta);
}
#endif

/* Packed A micro-panel (kc x MR). */
static void ukernel(int64_t kc, const float *restrict a, const float *restrict b, float *restrict c, int64_t ldc, int mr,
                    int nr, float alpha, float beta, const float *pf)
{
    ukernel_s(kc, a, 1, MR, b, c, ldc, mr, nr, alpha, beta, pf);
}

#ifdef __AVX2__
static inline __m256 act_v(int act, __m256 v, __m256 lo, __m256 hi)
{
    /* v second: _mm256_max_ps/_min_ps return the second operand when either is NaN, so a NaN
       passes as in the reference */
    if (act == SO_ACT_RELU) return _mm256_max_ps(_mm256_setzero_ps(), v);
    if (act == SO_ACT_CLIP) return _mm256_min_ps(hi, _mm256_max_ps(lo, v));
    return v;
}

/* Full-width tile rows with cheap activations (none/relu/clip), in registers: the per-tile
   cost must stay small next to a short-K tile's compute (ResNet's 1x1 convs have K = 64). */
static void epi_tile_fast(const so_gemm_epi *e, float *c, int64_t ldc, int64_t i0, int64_t j0, int mr)
{
    const so_epi *ep = e->ep;
    const int a1 = ep ? ep->act1 : 0, a2 = ep ? ep->act2 : 0;
    const __m256 lo1 = _mm256_set1_ps(ep ? ep->lo1 : 0.f), hi1 = _mm256_set1_ps(ep ? ep->hi1 : 0.f);
    const __m256 lo2 = _mm256_set1_ps(ep ? ep->lo2 : 0.f), hi2 = _mm256_set1_ps(ep ? ep->hi2 : 0.f);
    __m256 s0 = _mm256_set1_ps(1.f), s1 = s0, t0 = _mm256_setzero_ps(), t1 = t0;
    if (ep && !e->per_row) {
        if (ep->scale) s0 = _mm256_loadu_ps(ep->scale + j0), s1 = _mm256_loadu_ps(ep->scale + j0 + 8);
        if (ep->shift) t0 = _mm256_loadu_ps(ep->shift + j0), t1 = _mm256_loadu_ps(ep->shift + j0 + 8);
    }
    for (int r = 0; r < mr; r++) {
        float *y = c + r * ldc;
        __m256 v0 = _mm256_loadu_ps(y), v1 = _mm256_loadu_ps(y + 8);
        if (ep) {
            if (e->per_row) {
                int64_t ch = i0 + r;
                s0 = s1 = _mm256_set1_ps(ep->scale ? ep->scale[ch] : 1.f);
                t0 = t1 = _mm256_set1_ps(ep->shift ? ep->shift[ch] : 0.f);
            }
            v0 = _mm256_fmadd_ps(v0, s0, t0);
            v1 = _mm256_fmadd_ps(v1, s1, t1);
            v0 = act_v(a1, v0, lo1, hi1);
            v1 = act_v(a1, v1, lo1, hi1);
        }
        if (e->res) {
            const float *rr = e->res + (i0 + r) * e->ldr + j0;
            v0 = act_v(a2, _mm256_add_ps(v0, _mm256_loadu_ps(rr)), lo2, hi2);
            v1 = act_v(a2, _mm256_add_ps(v1, _mm256_loadu_ps(rr + 8)), lo2, hi2);
        }
        _mm256_storeu_ps(y, v0);
        _mm256_storeu_ps(y + 8, v1);
    }
}

static int cheap_act(int act) { return act == SO_ACT_NONE || act == SO_ACT_RELU || act == SO_ACT_CLIP; }
#endif

/* The epilogue on the finished mr x nr tile at row i0, column j0 of C. */
static void epi_tile(const so_gemm_epi *e, float *c, int64_t ldc, int64_t i0, int64_t j0, int mr, int nr)
{
    const so_epi *ep = e->ep;
#ifdef __AVX2__
    if (nr == NR && (!ep || (cheap_act(ep->act1) && (!e->res || cheap_act(ep->act2))))) {
        epi_tile_fast(e, c, ldc, i0, j0, mr);
        return;
    }
#endif
    for (int r = 0; r < mr; r++) {
        float *y = c + r * ldc;
        if (ep) {
            if (e->per_row) {
                int64_t ch = i0 + r;
                float s = ep->scale ? ep->scale[ch] : 1.f, t = ep->shift ? ep->shift[ch] : 0.f;
                if (ep->scale || ep->shift)
                    for (int j = 0; j < nr; j++) y[j] = y[j] * s + t;
            } else if (ep->scale) {
                const float *s = ep->scale + j0, *t = ep->shift ? ep->shift + j0 : NULL;
                for (int j = 0; j < nr; j++) y[j] = y[j] * s[j] + (t ? t[j] : 0.f);
            } else if (ep->shift) {
                const float *t = ep->shift + j0;
                for (int j = 0; j < nr; j++) y[j] += t[j];
            }
            if (ep->act1) so_epi_act(ep->act1, ep->lo1, ep->hi1, y, nr);
        }
        if (e->res) {
            const float *rr = e->res + (i0 + r) * e->ldr + j0;
            for (int j = 0; j < nr; j++) y[j] += rr[j];
            if (ep && ep->act2) so_epi_act(ep->act2, ep->lo2, ep->hi2, y, nr);
        }
    }
}

static int64_t mc_block(int64_t M)
{
    int64_t mc = so_gemm_mc < MR ? MR : so_gemm_mc / MR * MR;
    return imin(mc, (M + MR - 1) / MR * MR);
}

static int64_t kc_block(void) { return so_gemm_kc < 1 ? 1 : so_gemm_kc; }

size_t so_gemm_scratch_floats(int64_t M, int64_t K, int threads)
{
    if (threads < 1) threads = 1;
    if (M <= mc_block(M) && M <= so_gemm_mc) /* one shared full packed A */
        return (size_t)(((M + MR - 1) / MR * MR * (K < 1 ? 1 : K) + 15) / 16 * 16);
    int64_t per = mc_block(M) * imin(kc_block(), K < 1 ? 1 : K);
    per = (per + 15) / 16 * 16; /* 64-byte aligned slices */
    return (size_t)(per * threads);
}

/* One thread: column panels [p0, p1) of C, all rows, all of K. */
static void worker(int trans_a, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda, const float *Bp,
                   float beta, float *C, int64_t ldc, const so_gemm_epi *epi, int64_t p0, int64_t p1, float *abuf)
{
    const int64_t KC = kc_block(), MC = mc_block(M);
    for (int64_t pc = 0; pc < K; pc += KC) {
        int64_t kc = imin(KC, K - pc);
        float bk = pc == 0 ? beta : 1.f;
        int last = pc + kc == K;
        for (int64_t ic = 0; ic < M; ic += MC) {
            int64_t mc = imin(MC, M - ic);
            pack_a(trans_a, A, lda, ic, mc, pc, kc, abuf);
            for (int64_t jp = p0; jp < p1; jp++) {
                const float *bp = Bp + jp * K * NR + pc * NR;
                int64_t j0 = jp * NR;
                int nr = (int)imin(NR, N - j0);
                for (int64_t ir = 0; ir < mc; ir += MR) {
                    int mr = (int)imin(MR, mc - ir);
                    float *c = C + (ic + ir) * ldc + j0;
                    ukernel(kc, abuf + ir * kc, bp, c, ldc, mr, nr, alpha, bk, ir == 0 && jp + 1 < p1 ? bp + K * NR : bp);
                    if (last && epi) epi_tile(epi, c, ldc, ic + ir, j0, mr, nr);
                }
            }
        }
    }
}

/* AVX2 (MR = 6): small M = 6q + 4 (q >= 1) read in place ends in two 5-row tiles (ukernel_5), no packed edge. */
#if defined(__AVX2__) && !defined(__AVX512F__)
#define SPLIT5_LEVEL 1
#define SPLIT5(M) ((M) > MR && (M) % MR == 4)
#else
#define SPLIT5_LEVEL 0
#define SPLIT5(M) 0
#endif

/* Small M: one thread's column panels [p0, p1) against the fully packed A (ap: ceil(M/MR)
   micro-panels of K x MR), in NC blocks. */
static void worker_small(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda, const float *ap, const float *Bp,
                         float beta, float *C, int64_t ldc, const so_gemm_epi *epi, int64_t p0, int64_t p1)
{
    const int64_t KC = kc_block();
    const int five = A && SPLIT5(M); /* in place: the last 10 rows as two 5-row tiles (ukernel_5) */
    int64_t ncp = so_gemm_nc_bytes / (M * NR * (int64_t)sizeof(float));
    if (ncp < 1) ncp = 1;
    for (int64_t jc = p0; jc < p1; jc += ncp) {
        int64_t je = imin(jc + ncp, p1);
        for (int64_t pc = 0; pc < K; pc += KC) {
            int64_t kc = imin(KC, K - pc);
            float bk = pc == 0 ? beta : 1.f;
            int last = pc + kc == K;
            for (int64_t jp = jc; jp < je; jp++) {
                const float *bp = Bp + jp * K * NR + pc * NR;
                /* the B micro-panel needed after this one */
                const float *nx = jp + 1 < je ? bp + K * NR : !last ? Bp + jc * K * NR + (pc + kc) * NR : je < p1 ? Bp + je * K * NR : bp;
                int64_t j0 = jp * NR;
                int nr = (int)imin(NR, N - j0);
                for (int64_t ir = 0, mr; ir < M; ir += mr) {
                    mr = five && M - ir <= MR + 4 ? 5 : imin(MR, M - ir);
                    float *c = C + ir * ldc + j0;
                    if (A && mr == MR) /* full row panel read in place */
                        ukernel_s(kc, A + ir * lda + pc, lda, 1, bp, c, ldc, (int)mr, nr, alpha, bk, ir == 0 ? nx : bp);
#if SPLIT5_LEVEL
                    else if (five) { /* the last 10 rows of M = 6q + 4, in place */
                        const float ab[2] = {alpha, bk};
                        ukernel_5(kc, A + ir * lda + pc, lda, 1, bp, c, ldc, nr, ab, ir == 0 ? nx : bp);
                    }
#endif
                    else if (A) /* the packed edge panel */
                        ukernel(kc, ap + pc * MR, bp, c, ldc, (int)mr, nr, alpha, bk, ir == 0 ? nx : bp);
                    else
                        ukernel(kc, ap + ir * K + pc * MR, bp, c, ldc, (int)mr, nr, alpha, bk, ir == 0 ? nx : bp);
                    if (last && epi) epi_tile(epi, c, ldc, ir, j0, (int)mr, nr);
                }
            }
        }
    }
}

void so_gemm_packed(int trans_a, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                    const float *Bp, float beta, float *C, int64_t ldc, const so_gemm_epi *epi, float *scratch, int threads)
{
    if (M <= 0 || N <= 0) return;
    if (epi && !epi->ep && !epi->res) epi = NULL;
    if (K <= 0) { /* C = beta C, then the epilogue */
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) C[i * ldc + j] = beta == 0.f ? 0.f : beta * C[i * ldc + j];
        if (epi)
            for (int64_t i = 0; i < M; i += MR)
                for (int64_t j = 0; j < N; j += NR)
                    epi_tile(epi, C + i * ldc + j, ldc, i, j, (int)imin(MR, M - i), (int)imin(NR, N - j));
        return;
    }
    if (threads <= 0) threads = so_sgemm_threads();
    int64_t np = (N + NR - 1) / NR;
    if (threads > np) threads = (int)np;
    /* below ~1 MFLOP the team start-up costs more than the second thread saves */
    if (threads > 1 && M * N * K < ((int64_t)1 << 19)) threads = 1;
    if (M <= mc_block(M) && M <= so_gemm_mc) { /* small M: A packed once, shared */
        int64_t npa = (M + MR - 1) / MR;
        /* In place only while the MR rows do not share L1 sets: 16 rows whose stride is a multiple of
           4 KB (ff2's lda = 3072) all map to one set of the 12-way L1 and thrash (AVX-512, 1 thread,
           5 rounds, loaded machine: ff2 126-130 GFLOP/s in place vs 164 packed; ff1, lda 768: 178-186
           in place vs 158-164 packed). */
        if (!trans_a && so_gemm_direct_a && (MR <= 8 || (lda * (int64_t)sizeof(float)) % 4096 != 0)) {
            /* A (activations, hot in cache) read in place by full row panels; only the edge
               panel (M % MR rows) is packed */
            if (M % MR && !SPLIT5(M)) pack_a(0, A, lda, M / MR * MR, M % MR, 0, K, scratch);
            if (threads <= 1) {
                worker_small(M, N, K, alpha, A, lda, scratch, Bp, beta, C, ldc, epi, 0, np);
                return;
            }
            {
#pragma omp parallel num_threads(threads)
                {
                    int64_t T = omp_get_num_threads(), t = omp_get_thread_num();
                    int64_t p0 = np * t / T, p1 = np * (t + 1) / T;
                    if (p1 > p0) worker_small(M, N, K, alpha, A, lda, scratch, Bp, beta, C, ldc, epi, p0, p1);
                }
            }
            return;
        }
        if (threads <= 1) {
            pack_a(trans_a, A, lda, 0, M, 0, K, scratch);
            worker_small(M, N, K, alpha, NULL, 0, scratch, Bp, beta, C, ldc, epi, 0, np);
            return;
        }
        {
#pragma omp parallel num_threads(threads)
            {
                int64_t T = omp_get_num_threads(), t = omp_get_thread_num();
                int64_t a0 = npa * t / T, a1 = npa * (t + 1) / T;
                if (a1 > a0) pack_a(trans_a, A, lda, a0 * MR, imin(M, a1 * MR) - a0 * MR, 0, K, scratch + a0 * MR * K);
#pragma omp barrier
                int64_t p0 = np * t / T, p1 = np * (t + 1) / T;
                if (p1 > p0) worker_small(M, N, K, alpha, NULL, 0, scratch, Bp, beta, C, ldc, epi, p0, p1);
            }
        }
        return;
    }
    size_t per = so_gemm_scratch_floats(M, K, 1);
    if (threads <= 1) {
        worker(trans_a, M, N, K, alpha, A, lda, Bp, beta, C, ldc, epi, 0, np, scratch);
        return;
    }
    {
#pragma omp parallel num_threads(threads)
        {
            int64_t T = omp_get_num_threads(), t = omp_get_thread_num();
            int64_t p0 = np * t / T, p1 = np * (t + 1) / T;
            if (p1 > p0) worker(trans_a, M, N, K, alpha, A, lda, Bp, beta, C, ldc, epi, p0, p1, scratch + (size_t)t * per);
        }
    }
}

/* 1 inside an active region: a product called by one thread of a team (1x1 conv column ranges, Winograd's shared
   products) is that thread's share; a region of its own there is a nested, inactive one-thread team that libgomp
   still allocates and frees (data/squeezenet at 2 threads: 15 such per run, kpriv.h so_par_on). */
int so_sgemm_threads(void) { return omp_in_parallel() ? 1 : omp_get_max_threads(); }

size_t so_gemm_full_scratch_floats(int64_t M, int64_t N, int64_t K, int threads)
{
    size_t pb = (so_gemm_packed_b_floats(K, N) + 15) / 16 * 16;
    return pb + so_gemm_scratch_floats(M, K, threads < 1 ? 1 : threads);
}

void so_gemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
             const float *B, int64_t ldb, float beta, float *C, int64_t ldc, const so_gemm_epi *epi, float *scratch,
             int threads)
{
    if (M <= 0 || N <= 0) return;
    size_t pb = (so_gemm_packed_b_floats(K, N) + 15) / 16 * 16;
    so_gemm_pack_b(trans_b, K, N, B, ldb, scratch);
    so_gemm_packed(trans_a, M, N, K, alpha, A, lda, scratch, beta, C, ldc, epi, scratch + pb, threads);
}

/* ---------------- small products, nothing packed ---------------- */

#ifdef __AVX2__
#define SR 6 /* rows per tile: 12 ymm accumulators */
/* One R x 16 tile (R <= SR) of C = A B with B read in place (row k at b + k*ldb); MASKED:
   only the columns in masks m0/m1 (N edge) are loaded and stored. R is a constant at every
   call, so the accumulators stay in registers. */
static inline __attribute__((always_inline)) void small_tile(int R, int MASKED, int64_t K, const float *restrict a, int64_t lda,
                                                            const float *restrict b, int64_t ldb, float *restrict c, int64_t ldc,
                                                            __m256i m0, __m256i m1)
{
    __m256 acc[SR][2];
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t k = 0; k < K; k++, b += ldb) {
        const __m256 b0 = MASKED ? _mm256_maskload_ps(b, m0) : _mm256_loadu_ps(b);
        const __m256 b1 = MASKED ? _mm256_maskload_ps(b + 8, m1) : _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            const __m256 av = _mm256_broadcast_ss(a + r * lda + k);
            acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) {
        if (MASKED) {
            _mm256_maskstore_ps(c + r * ldc, m0, acc[r][0]);
            _mm256_maskstore_ps(c + r * ldc + 8, m1, acc[r][1]);
        } else {
            _mm256_storeu_ps(c + r * ldc, acc[r][0]);
            _mm256_storeu_ps(c + r * ldc + 8, acc[r][1]);
        }
    }
}

static void small_tile_m(int MASKED, int rows, int64_t K, const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                         int64_t ldc, __m256i m0, __m256i m1)
{
    switch (rows) {
    case 6: small_tile(6, MASKED, K, a, lda, b, ldb, c, ldc, m0, m1); break;
    case 5: small_tile(5, MASKED, K, a, lda, b, ldb, c, ldc, m0, m1); break;
    case 4: small_tile(4, MASKED, K, a, lda, b, ldb, c, ldc, m0, m1); break;
    case 3: small_tile(3, MASKED, K, a, lda, b, ldb, c, ldc, m0, m1); break;
    case 2: small_tile(2, MASKED, K, a, lda, b, ldb, c, ldc, m0, m1); break;
    default: small_tile(1, MASKED, K, a, lda, b, ldb, c, ldc, m0, m1); break;
    }
}
#endif

void so_gemm_small(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc)
{
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        for (int64_t i = 0; i < M; i++) memset(C + i * ldc, 0, sizeof *C * (size_t)N);
        return;
    }
#ifdef __AVX2__
    for (int64_t j0 = 0; j0 < N; j0 += NR) {
        const int64_t nr = imin(NR, N - j0);
        const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)nr), idx);
        const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)nr - 8), idx);
        for (int64_t i0 = 0; i0 < M; i0 += SR) {
            const int rows = (int)imin(SR, M - i0);
            if (nr == NR)
                small_tile_m(0, rows, K, A + i0 * lda, lda, B + j0, ldb, C + i0 * ldc + j0, ldc, m0, m1);
            else
                small_tile_m(1, rows, K, A + i0 * lda, lda, B + j0, ldb, C + i0 * ldc + j0, ldc, m0, m1);
        }
    }
#else
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            float acc = 0.f;
            for (int64_t k = 0; k < K; k++) acc += A[i * lda + k] * B[k * ldb + j];
            C[i * ldc + j] = acc;
        }
#endif
}

/* ---------------- weights as A ---------------- */

size_t so_gemm_packed_a_floats(int64_t M, int64_t K) { return (size_t)((M + MR - 1) / MR * MR * K); }

void so_gemm_pack_a(int64_t M, int64_t K, const float *A, int64_t lda, float *dst) { pack_a(0, A, lda, 0, M, 0, K, dst); }

/* n consecutive columns of one B row (values src[0], src[sw], ..., or zeros when src is
   NULL) into the panel layout from column offset t of the block, row kk. */
static void put_run(float *dst, int64_t kc, int64_t kk, int64_t t, const float *src, int64_t sw, int64_t n)
{
    while (n > 0) {
        int64_t lane = t % NR, cnt = imin(NR - lane, n);
        float *d = dst + (t / NR) * kc * NR + kk * NR + lane;
        if (!src)
            for (int64_t e = 0; e < cnt; e++) d[e] = 0.f;
#ifdef __AVX2__
        else if (sw == 1 && cnt == NR) {
            _mm256_storeu_ps(d, _mm256_loadu_ps(src));
            _mm256_storeu_ps(d + 8, _mm256_loadu_ps(src + 8));
        }
#endif
        else if (sw == 1)
            for (int64_t e = 0; e < cnt; e++) d[e] = src[e];
        else
            for (int64_t e = 0; e < cnt; e++) d[e] = src[e * sw];
        if (src) src += cnt * sw;
        t += cnt;
        n -= cnt;
    }
}

/* Packs rows [k0, k0 + kc) x columns [j0, j0 + nc) of B into ceil(nc / NR) panels of kc x NR
   (lanes past nc zero). */
static void pack_b_block(const so_gemm_bsrc *s, int64_t k0, int64_t kc, int64_t j0, int64_t nc, float *dst)
{
    int64_t np = (nc + NR - 1) / NR, tail = nc % NR;
    if (tail)
        for (int64_t kk = 0; kk < kc; kk++)
            for (int64_t l = tail; l < NR; l++) dst[(np - 1) * kc * NR + kk * NR + l] = 0.f;
    if (!s->conv) { /* panel by panel: rows of NR floats read at stride ldb, written contiguously */
        for (int64_t p = 0; p < np; p++) {
            const float *src = s->B + k0 * s->ldb + j0 + p * NR;
            float *d = dst + p * kc * NR;
            if (p * NR + NR <= nc) {
                for (int64_t kk = 0; kk < kc; kk++, src += s->ldb, d += NR) {
#ifdef __AVX2__
                    _mm256_storeu_ps(d, _mm256_loadu_ps(src));
                    _mm256_storeu_ps(d + 8, _mm256_loadu_ps(src + 8));
#else
                    memcpy(d, src, sizeof *d * NR);
#endif
                }
            } else {
                for (int64_t kk = 0; kk < kc; kk++, src += s->ldb, d += NR) memcpy(d, src, sizeof *d * (size_t)tail);
            }
        }
        return;
    }
    const so_gemm_conv *cv = s->conv;
    const int64_t khw = cv->kh * cv->kw, Wo = cv->Wo;
    for (int64_t kk = 0; kk < kc; kk++) {
        int64_t k = k0 + kk, c = k / khw, i = (k % khw) / cv->kw, j = k % cv->kw;
        const float *xc = s->B + c * cv->H * cv->W;
        int64_t off = j * cv->dw - cv->pw; /* iw = ow * sw + off */
        /* valid ow: 0 <= ow * sw + off < W */
        int64_t va = off >= 0 ? 0 : (-off + cv->sw - 1) / cv->sw;
        int64_t vb = cv->W - off > 0 ? (cv->W - off + cv->sw - 1) / cv->sw : 0;
        for (int64_t q = j0; q < j0 + nc;) {
            int64_t oh = q / Wo, ow0 = q % Wo, ow1 = imin(Wo, ow0 + (j0 + nc - q));
            int64_t ih = oh * cv->sh - cv->ph + i * cv->dh, t = q - j0;
            if (ih < 0 || ih >= cv->H) {
                put_run(dst, kc, kk, t, NULL, 1, ow1 - ow0);
            } else {
                int64_t a = imin(imax(va, ow0), ow1), b = imax(a, imin(vb, ow1));
                const float *xr = xc + ih * cv->W;
                put_run(dst, kc, kk, t, NULL, 1, a - ow0);
                put_run(dst, kc, kk, t + a - ow0, xr + a * cv->sw + off, cv->sw, b - a);
                put_run(dst, kc, kk, t + b - ow0, NULL, 1, ow1 - b);
            }
            q += ow1 - ow0;
        }
    }
}

static int64_t ap_nc(int64_t N)
{
    int64_t nc = so_gemm_ap_nc < NR ? NR : so_gemm_ap_nc / NR * NR;
    return imin(nc, (N + NR - 1) / NR * NR);
}

size_t so_gemm_apacked_scratch_floats(int64_t M, int64_t N, int64_t K, int threads)
{
    (void)M;
    if (threads < 1) threads = 1;
    int64_t per = imin(kc_block(), K < 1 ? 1 : K) * ap_nc(N < 1 ? 1 : N);
    per = (per + 15) / 16 * 16;
    return (size_t)(per * threads);
}

/* One thread: columns [j0, j1) x rows [i0, i1) (i0, and i1 unless = M, multiples of MR). */
static void worker_ap(int64_t M, int64_t N, int64_t K, const float *Ap, const so_gemm_bsrc *src, float beta, float *C,
                      int64_t ldc, const so_gemm_epi *epi, int64_t j0, int64_t j1, int64_t i0, int64_t i1, float *bbuf)
{
    const int64_t KC = kc_block(), MC = mc_block(M), NC = ap_nc(N);
    for (int64_t jc = j0; jc < j1; jc += NC) {
        int64_t nc = imin(NC, j1 - jc);
        for (int64_t pc = 0; pc < K; pc += KC) {
            int64_t kc = imin(KC, K - pc);
            float bk = pc == 0 ? beta : 1.f;
            int last = pc + kc == K;
            pack_b_block(src, pc, kc, jc, nc, bbuf);
            for (int64_t ic = i0; ic < i1; ic += MC) {
                int64_t me = imin(ic + MC, i1);
                for (int64_t jr = 0; jr < nc; jr += NR) {
                    const float *bp = bbuf + jr * kc;
                    int nr = (int)imin(NR, nc - jr);
                    for (int64_t ir = ic; ir < me; ir += MR) {
                        int mr = (int)imin(MR, M - ir);
                        float *c = C + ir * ldc + jc + jr;
                        const float *ap = Ap + ir * K + pc * MR;
                        /* the first column panel streams A from memory: fetch the next rows' A */
                        ukernel(kc, ap, bp, c, ldc, mr, nr, 1.f, bk, jr == 0 && ir + MR < me ? ap + MR * K : bp);
                        if (last && epi) epi_tile(epi, c, ldc, ir, jc + jr, mr, nr);
                    }
                }
            }
        }
    }
}

void so_gemm_apacked(int64_t M, int64_t N, int64_t K, const float *Ap, const so_gemm_bsrc *B, float beta, float *C, int64_t ldc,
                     const so_gemm_epi *epi, float *scratch, int threads)
{
    if (M <= 0 || N <= 0) return;
    if (epi && !epi->ep && !epi->res) epi = NULL;
    if (K <= 0) {
        so_gemm_packed(0, M, N, 0, 1.f, NULL, 0, NULL, beta, C, ldc, epi, NULL, 1);
        return;
    }
    if (threads <= 0) threads = so_sgemm_threads();
    int64_t np = (N + NR - 1) / NR, mp = (M + MR - 1) / MR;
    if (threads > 1 && M * N * K < ((int64_t)1 << 19)) threads = 1;
    if (threads > 1 && np < 2 * threads && mp < 2 * threads) threads = 1;
    if (threads <= 1) {
        worker_ap(M, N, K, Ap, B, beta, C, ldc, epi, 0, N, 0, M, scratch);
        return;
    }
    size_t per = so_gemm_apacked_scratch_floats(M, N, K, 1);
    const int by_cols = np >= 2 * threads;
    {
#pragma omp parallel num_threads(threads)
        {
            int64_t T = omp_get_num_threads(), t = omp_get_thread_num();
            float *bb = scratch + (size_t)t * per;
            if (by_cols) {
                int64_t p0 = np * t / T, p1 = np * (t + 1) / T;
                if (p1 > p0) worker_ap(M, N, K, Ap, B, beta, C, ldc, epi, p0 * NR, imin(N, p1 * NR), 0, M, bb);
            } else {
                int64_t q0 = mp * t / T, q1 = mp * (t + 1) / T;
                if (q1 > q0) worker_ap(M, N, K, Ap, B, beta, C, ldc, epi, 0, N, q0 * MR, imin(M, q1 * MR), bb);
            }
        }
    }
}
