/* pool.c - pooling kernels: max/average pooling (3x3 stride-2 max and 3x3 stride-1 average in registers with AVX2), Pad + AveragePool as one step, GlobalAveragePool. */
#include "kset_names.h"

#include "pool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <omp.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "kpriv.h"
#include "vmath.h"

/* ---------------- pooling ---------------- */

typedef struct pool_plan {
    int64_t planes, H, W, Ho, Wo, Hp, Wp;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    int is_max;
    float *div;  /* avg: divisor per output position [Ho*Wo] */
    float *rdiv; /* avg 3x3 stride 1: 1 / div (0 for an empty window) */
    struct mp_vec *mv; /* max 3x3 stride 2: the nmv vectors of an output row (mp_vecs) */
    int64_t nmv;
} pool_plan;
typedef struct mp_vec mp_vec;

static void pool_free(void *pp)
{
    pool_plan *p = pp;
    free(p->div);
    free(p->rdiv);
    free(p->mv);
    free(p);
}

/* ev[i] = x[2i], od[i] = x[2i+1] for the n floats of x. */
void so_pool_deinterleave2(const float *restrict x, int64_t n, float *restrict ev, float *restrict od)
{
    int64_t i = 0;
#ifdef __AVX2__
    for (; i + 16 <= n; i += 16) {
        __m256 lo = _mm256_loadu_ps(x + i), hi = _mm256_loadu_ps(x + i + 8);
        __m256 e = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)), o = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
        _mm256_storeu_ps(ev + i / 2, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), 0xD8)));
        _mm256_storeu_ps(od + i / 2, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), 0xD8)));
    }
#endif
    for (; i < n; i++) {
        if (i % 2)
            od[i / 2] = x[i];
        else
            ev[i / 2] = x[i];
    }
}

/* tr = first ? xs : max(tr, xs) (or sum) over n floats; a NaN on either side wins, as in the
   reference. */
static inline void pool_row(float *restrict tr, const float *restrict xs, int64_t n, int is_max, int first)
{
    if (first) {
        memcpy(tr, xs, sizeof *tr * (size_t)n);
    } else if (is_max) {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) tr[i] = xs[i] > tr[i] || xs[i] != xs[i] ? xs[i] : tr[i];
    } else {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) tr[i] += xs[i];
    }
}

/* Pooling one output row at a time: the window's input rows are combined (max / sum) into
   a bordered row trow [Wp] (border -inf for max, 0 for avg; padding rows skipped), then the
   horizontal pass writes the output row (stride 1/2: unit-stride vector loops, stride 2 on
   the deinterleaved row). One pass over the input, nothing but a row in scratch. Max pooling
   propagates NaN like the reference. */
static void pool_rows(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const pool_plan *p = priv;
    const float *X = in[0].data;
    float *Y = out[0].data;
    const int64_t Wp = p->Wp, Wo = p->Wo, Ho = p->Ho, W = p->W, per = 2 * Wp + 2;
    const int64_t c0 = SO_MIN(p->pw, Wp), c1 = SO_MAX(c0, SO_MIN(Wp, p->pw + W)); /* trow columns from the input */
    const float border = p->is_max ? -INFINITY : 0.f;
#pragma omp for nowait
    for (int64_t q = 0; q < p->planes; q++) {
        float *restrict trow = scratch + (int64_t)omp_get_thread_num() * per, *ev = trow + Wp, *od = ev + (Wp + 1) / 2;
        const float *x = X + q * p->H * W;
        float *y = Y + q * Ho * Wo;
        for (int64_t oh = 0; oh < Ho; oh++) {
            int rows = 0;
            for (int64_t i = 0; i < p->kh; i++) {
                int64_t ir = oh * p->sh - p->ph + i * p->dh;
                if (ir < 0 || ir >= p->H) continue;
                const float *restrict xr = x + ir * W + (c0 - p->pw);
                if (!rows) {
                    for (int64_t c = 0; c < c0; c++) trow[c] = border;
                    memcpy(trow + c0, xr, sizeof *trow * (size_t)(c1 - c0));
                    for (int64_t c = c1; c < Wp; c++) trow[c] = border;
                } else {
                    pool_row(trow + c0, xr, c1 - c0, p->is_max, 0);
                }
                rows++;
            }
            if (!rows)
                for (int64_t c = 0; c < Wp; c++) trow[c] = border;
            float *restrict yr = y + oh * Wo;
            if (p->sw == 2) { /* deinterleave the row, then every tap is a unit-stride run */
                so_pool_deinterleave2(trow, Wp, ev, od);
                for (int64_t j = 0; j < p->kw; j++) {
                    int64_t t = j * p->dw;
                    pool_row(yr, (t % 2 ? od : ev) + t / 2, Wo, p->is_max, j == 0);
                }
            } else if (p->sw == 1) {
                for (int64_t j = 0; j < p->kw; j++) pool_row(yr, trow + j * p->dw, Wo, p->is_max, j == 0);
            } else {
                for (int64_t ow = 0; ow < Wo; ow++) yr[ow] = trow[ow * p->sw];
                for (int64_t j = 1; j < p->kw; j++) {
                    const float *xs = trow + j * p->dw;
                    if (p->is_max)
                        for (int64_t ow = 0; ow < Wo; ow++) {
                            float v = xs[ow * p->sw];
                            yr[ow] = v > yr[ow] || v != v ? v : yr[ow];
                        }
                    else
                        for (int64_t ow = 0; ow < Wo; ow++) yr[ow] += xs[ow * p->sw];
                }
            }
            if (!p->is_max) {
                const float *dv = p->div + oh * Wo;
                for (int64_t ow = 0; ow < Wo; ow++) yr[ow] /= dv[ow];
            }
        }
    }
}

static void pool_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const pool_plan *p = priv;
    SO_PAR_RUN(p->planes * p->Ho * p->Wo * p->kh * p->kw > SO_PAR_MIN, , pool_rows(priv, in, out, scratch));
}

#ifdef __AVX2__
/* Max pooling 3x3 stride 2 (dilation 1, any padding, ceil mode) straight from the input,
   vectorised along W with the window in registers: per 8 outputs, the 16 (+2) input floats
   of each window row are loaded (offsets 0, 8, 2, 10), combined over the (up to 3) in-range
   rows, and split by in-lane shuffles into the three column taps (outputs in lane order
   [0 1 4 5 | 2 3 6 7], one permute before the store). Two output rows at a time where the
   five input rows they read are all in range (their shared row is loaded once; the next
   pair's four new rows are prefetched, the same columns: ~5-8 % on SqueezeNet's planes). The vectors
   of an output row are made once per plan (p->mv): those reaching past either edge use
   masked loads with -inf in the masked-off lanes; the last vector overlaps the previous one
   (Wo >= 8) or is stored masked (Wo < 8). Propagates NaN exactly like the reference (mp_max3). */
static const int32_t mp_mask_tab[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

static inline __m256i mp_mask(int64_t q, int64_t W)
{
    __m256i idx = _mm256_add_epi32(_mm256_set1_epi32((int)q), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    return _mm256_and_si256(_mm256_cmpgt_epi32(idx, _mm256_set1_epi32(-1)), _mm256_cmpgt_epi32(_mm256_set1_epi32((int)W), idx));
}

/* One vector of 8 outputs of a row: columns ow.., first input column b; need[k]: load k (input
   columns b + mp_off[k] ..+7) reaches past an edge and uses mask mk[k]; partial: store n < 8. */
struct mp_vec {
    int64_t ow, b, n;
    int edge, partial, need[4];
    int32_t mk[4][8];
};
static const int mp_off[4] = {0, 8, 2, 10};

static void mp_vecs(pool_plan *p)
{
    p->nmv = (p->Wo + 7) / 8;
    p->mv = so_xcalloc((size_t)p->nmv, sizeof *p->mv);
    for (int64_t i = 0; i < p->nmv; i++) {
        mp_vec *v = &p->mv[i];
        v->ow = p->Wo >= 8 ? SO_MIN(8 * i, p->Wo - 8) : 0;
        v->b = v->ow * 2 - p->pw;
        v->n = p->Wo - v->ow;
        v->partial = p->Wo < 8;
        v->edge = v->partial;
        for (int k = 0; k < 4; k++) {
            v->need[k] = v->b + mp_off[k] < 0 || v->b + mp_off[k] + 8 > p->W;
            v->edge |= v->need[k];
            _mm256_storeu_si256((__m256i *)v->mk[k], mp_mask(v->b + mp_off[k], p->W));
        }
    }
}

/* The reference's max over a, b, c in this order (a NaN anywhere gives a NaN): _mm256_max_ps(x, y)
   returns y when either is NaN, so max(c, max(b, a)) keeps a NaN of a; one unordered compare of b
   and c sets all bits (a NaN) where either is NaN. Ties keep the earlier operand, as the reference. */
static inline __m256 mp_max3(__m256 a, __m256 b, __m256 c)
{
    return _mm256_or_ps(_mm256_max_ps(c, _mm256_max_ps(b, a)), _mm256_cmp_ps(b, c, _CMP_UNORD_Q));
}

static inline __m256 mp_max2(__m256 a, __m256 b) { return _mm256_or_ps(_mm256_max_ps(b, a), _mm256_cmp_ps(b, b, _CMP_UNORD_Q)); }

/* Load k of vector e at p (e NULL: an interior vector, plain loads). */
static inline __attribute__((always_inline)) __m256 mp_ld(const float *p, const mp_vec *e, int k)
{
    if (!e || !e->need[k]) return _mm256_loadu_ps(p);
    const __m256i m = _mm256_loadu_si256((const __m256i *)e->mk[k]);
    return _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
}

/* The three column taps of the combined rows l[4] (loads 0..3), maxed, in output order, stored. */
static inline __attribute__((always_inline)) void mp_taps(const __m256 *l, const mp_vec *e, float *y)
{
    __m256 v = mp_max3(_mm256_shuffle_ps(l[0], l[1], _MM_SHUFFLE(2, 0, 2, 0)), _mm256_shuffle_ps(l[0], l[1], _MM_SHUFFLE(3, 1, 3, 1)),
                       _mm256_shuffle_ps(l[2], l[3], _MM_SHUFFLE(2, 0, 2, 0)));
    v = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), 0xD8));
    if (!e || !e->partial)
        _mm256_storeu_ps(y, v);
    else
        _mm256_maskstore_ps(y, _mm256_loadu_si256((const __m256i *)(mp_mask_tab + 8 - e->n)), v);
}

/* Vector v of one output row y from its nr (1..3) in-range input rows (e: v if it is an edge vector, else NULL). */
static inline __attribute__((always_inline)) void mp3s2_vec(const float *const *rows, int nr, const mp_vec *v, const mp_vec *e, float *y)
{
    __m256 l[4];
#pragma GCC unroll 4 /* l[] in registers (not unrolled at -O2: on the stack, ~15 % slower) */
    for (int k = 0; k < 4; k++) {
        const int64_t c = v->b + mp_off[k];
        const __m256 r0 = mp_ld(rows[0] + c, e, k);
        l[k] = nr == 1 ? r0 : nr == 2 ? mp_max2(r0, mp_ld(rows[1] + c, e, k)) : mp_max3(r0, mp_ld(rows[1] + c, e, k), mp_ld(rows[2] + c, e, k));
    }
    mp_taps(l, e, y + v->ow);
}

/* Vector v of two output rows y, y + Wo from the five input rows at x0 (row stride W). */
static inline __attribute__((always_inline)) void mp3s2_vec2(const float *x0, int64_t W, const mp_vec *v, const mp_vec *e, float *y, int64_t Wo)
{
    __m256 la[4], lb[4];
    const float *xb = x0 + v->b;
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        const float *c = xb + mp_off[k];
        const __m256 r2 = mp_ld(c + 2 * W, e, k);
        la[k] = mp_max3(mp_ld(c, e, k), mp_ld(c + W, e, k), r2);
        lb[k] = mp_max3(r2, mp_ld(c + 3 * W, e, k), mp_ld(c + 4 * W, e, k));
    }
    mp_taps(la, e, y + v->ow);
    mp_taps(lb, e, y + Wo + v->ow);
}

/* An edge vector of two output rows, out of line: inlined, its masked loads' addresses were computed
   with the interior's, 20 pointers spilled to the stack in the interior loop (~15 % slower). */
static __attribute__((noinline)) void mp3s2_edge2(const float *x0, int64_t W, const mp_vec *v, float *y, int64_t Wo)
{
    mp3s2_vec2(x0, W, v, v, y, Wo);
}

/* Runs plane(p, x, y) for every input plane x [H][W] and output plane y [Ho][Wo], planes split over the team
   (pool_planes_team: an orphaned worksharing loop, kpriv.h). */
static void pool_planes_team(const pool_plan *p, const so_tensor *in, so_tensor *out, void (*plane)(const pool_plan *, const float *, float *))
{
    const float *X = in[0].data;
    float *Y = out[0].data;
#pragma omp for schedule(static) nowait
    for (int64_t q = 0; q < p->planes; q++) plane(p, X + q * p->H * p->W, Y + q * p->Ho * p->Wo);
}

static void pool_planes(const pool_plan *p, const so_tensor *in, so_tensor *out, void (*plane)(const pool_plan *, const float *, float *))
{
    SO_PAR_RUN(p->planes * p->Ho * p->Wo * 9 > SO_PAR_MIN, , pool_planes_team(p, in, out, plane));
}

static void maxpool3s2_plane(const pool_plan *p, const float *x, float *y)
{
    const int64_t Wo = p->Wo, Ho = p->Ho, W = p->W, H = p->H;
    for (int64_t oh = 0; oh < Ho;) {
        const int64_t r0 = oh * 2 - p->ph;
        float *yr = y + oh * Wo;
        if (oh + 1 < Ho && r0 >= 0 && r0 + 4 < H) { /* two output rows */
            const float *x0 = x + r0 * W;
            for (int64_t i = 0; i < p->nmv; i++) {
                const mp_vec *v = &p->mv[i];
                if (v->edge) {
                    mp3s2_edge2(x0, W, v, yr, Wo);
                    continue;
                }
                for (int64_t f = 5; f <= 8; f++) _mm_prefetch((const char *)(x0 + f * W + v->b), _MM_HINT_T0); /* the next pair's rows */
                mp3s2_vec2(x0, W, v, NULL, yr, Wo);
            }
            oh += 2;
            continue;
        }
        const float *rows[3];
        int nr = 0;
        for (int64_t i = 0; i < 3; i++)
            if (r0 + i >= 0 && r0 + i < H) rows[nr++] = x + (r0 + i) * W;
        oh++;
        if (!nr) {
            for (int64_t ow = 0; ow < Wo; ow++) yr[ow] = -INFINITY;
            continue;
        }
        for (int64_t i = 0; i < p->nmv; i++) {
            const mp_vec *v = &p->mv[i];
            if (v->edge)
                mp3s2_vec(rows, nr, v, v, yr);
            else
                mp3s2_vec(rows, nr, v, NULL, yr);
        }
    }
}

static void maxpool3s2_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    pool_planes(priv, in, out, maxpool3s2_plane);
}

/* Average pooling 3x3 stride 1 (any padding; Inception-v3's branch_pool planes 35x35 ..
   8x8) straight from the input, separable in registers: per plane and block of 8 output
   columns (column-block outer: the edge masks are made once per block and plane), walking
   down the rows, each input row's 3-tap horizontal sum is computed once (3 loads, 2 adds)
   and the last three are kept in registers for the vertical sum; times the reciprocal of
   the reference divisor (p->rdiv), one store. Loads reaching past either edge are masked
   (masked-off lanes read 0 = the padding); the last block overlaps the previous one
   (Wo >= 8) or is stored masked (Wo < 8). */
static inline __attribute__((always_inline)) __m256 ap3_hsum(int EDGE, const float *x, int64_t r, int64_t H, int64_t W, int64_t b,
                                                            const __m256i *mk)
{
    if (r < 0 || r >= H) return _mm256_setzero_ps();
    const float *xr = x + r * W + b;
    if (EDGE)
        return _mm256_add_ps(_mm256_add_ps(_mm256_maskload_ps(xr, mk[0]), _mm256_maskload_ps(xr + 1, mk[1])),
                             _mm256_maskload_ps(xr + 2, mk[2]));
    return _mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(xr), _mm256_loadu_ps(xr + 1)), _mm256_loadu_ps(xr + 2));
}

static inline __attribute__((always_inline)) void ap3s1_col(int EDGE, const pool_plan *p, const float *x, float *y, int64_t ow)
{
    const int64_t W = p->W, H = p->H, Wo = p->Wo, Ho = p->Ho, b = ow - p->pw, r0 = -p->ph;
    const __m256i mk[3] = {mp_mask(b, W), mp_mask(b + 1, W), mp_mask(b + 2, W)};
    const int partial = Wo < 8;
    const __m256i ms = _mm256_loadu_si256((const __m256i *)(mp_mask_tab + 8 - (partial ? Wo : 8)));
    __m256 h0 = ap3_hsum(EDGE, x, r0, H, W, b, mk), h1 = ap3_hsum(EDGE, x, r0 + 1, H, W, b, mk);
    for (int64_t oh = 0; oh < Ho; oh++) {
        __m256 h2 = ap3_hsum(EDGE, x, r0 + oh + 2, H, W, b, mk);
        __m256 v = _mm256_add_ps(_mm256_add_ps(h0, h1), h2);
        h0 = h1;
        h1 = h2;
        const float *rd = p->rdiv + oh * Wo + ow;
        float *yr = y + oh * Wo + ow;
        if (!partial)
            _mm256_storeu_ps(yr, _mm256_mul_ps(v, _mm256_loadu_ps(rd)));
        else
            _mm256_maskstore_ps(yr, ms, _mm256_mul_ps(v, _mm256_maskload_ps(rd, ms)));
    }
}

static void avgpool3s1_plane(const pool_plan *p, const float *x, float *y)
{
    for (int64_t ow = 0; ow < p->Wo; ow += 8) {
        if (ow + 8 > p->Wo && p->Wo >= 8) ow = p->Wo - 8;
        int64_t b = ow - p->pw;
        if (b >= 0 && b + 10 <= p->W)
            ap3s1_col(0, p, x, y, ow);
        else
            ap3s1_col(1, p, x, y, ow);
    }
}

static void avgpool3s1_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    pool_planes(priv, in, out, avgpool3s1_plane);
}
#endif

/* Window extent along one axis for average pooling, as the reference counts it: the window
   clipped to the padded input (begin pad .. size + end pad), then, without
   count_include_pad, to the input. */
static int64_t avg_count(int64_t o, int64_t s, int64_t k, int64_t pb, int64_t pe, int64_t size, int cip)
{
    int64_t a = o * s - pb, b = SO_MIN(a + k, size + pe);
    if (!cip) {
        a = SO_MAX(a, 0);
        b = SO_MIN(b, size);
    }
    return b > a ? b - a : 0;
}

/* Pool plan of a pool node with attributes a over input x [N, C, H, W] to output o, with
   spatial pads pads[4] (top, left, bottom, right) and count_include_pad cip. */
static pool_plan *pool_plan_new(const so_attr *a, int is_max, const so_shape *x, const so_shape *o, const int64_t pads[4], int cip)
{
    pool_plan *p = so_xcalloc(1, sizeof *p);
    p->is_max = is_max;
    p->planes = x->dim[0] * x->dim[1];
    p->H = x->dim[2];
    p->W = x->dim[3];
    p->Ho = o->dim[2];
    p->Wo = o->dim[3];
    p->kh = a->kernel[0];
    p->kw = a->kernel[1];
    p->sh = a->stride[0] > 0 ? a->stride[0] : 1;
    p->sw = a->stride[1] > 0 ? a->stride[1] : 1;
    p->ph = pads[0];
    p->pw = pads[1];
    p->dh = p->is_max && a->dilation[0] > 0 ? a->dilation[0] : 1;
    p->dw = p->is_max && a->dilation[1] > 0 ? a->dilation[1] : 1;
    p->Hp = (p->Ho - 1) * p->sh + (p->kh - 1) * p->dh + 1;
    p->Wp = (p->Wo - 1) * p->sw + (p->kw - 1) * p->dw + 1;
    if (!p->is_max) {
        p->div = so_xmalloc(sizeof *p->div * (size_t)(p->Ho * p->Wo));
        for (int64_t oh = 0; oh < p->Ho; oh++)
            for (int64_t ow = 0; ow < p->Wo; ow++) {
                int64_t cnt = avg_count(oh, p->sh, p->kh, pads[0], pads[2], p->H, cip) * avg_count(ow, p->sw, p->kw, pads[1], pads[3], p->W, cip);
                p->div[oh * p->Wo + ow] = cnt > 0 ? (float)cnt : INFINITY; /* empty window: 0 */
            }
    }
    return p;
}

static void pool_kernel(pool_plan *p, so_fast_kernel *k)
{
    k->scratch_bytes = sizeof(float) * (size_t)(2 * p->Wp + 2) * (size_t)omp_get_max_threads();
    k->run = pool_run;
    k->priv = p;
    k->free_priv = pool_free;
    k->name = p->is_max ? "maxpool" : "avgpool";
#ifdef __AVX2__
    if (p->is_max && p->kh == 3 && p->kw == 3 && p->sh == 2 && p->sw == 2 && p->dh == 1 && p->dw == 1) {
        k->scratch_bytes = 0;
        k->run = maxpool3s2_run;
        k->name = "maxpool3x3_s2";
        mp_vecs(p);
    }
    if (!p->is_max && p->kh == 3 && p->kw == 3 && p->sh == 1 && p->sw == 1) {
        k->scratch_bytes = 0;
        k->run = avgpool3s1_run;
        k->name = "avgpool3x3_s1";
        p->rdiv = so_xmalloc(sizeof *p->rdiv * (size_t)(p->Ho * p->Wo));
        for (int64_t j = 0; j < p->Ho * p->Wo; j++) p->rdiv[j] = 1.f / p->div[j];
    }
#endif
}

static so_status select_pool(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_graph *g = c->g;
    const so_node *n = &g->nodes[i];
    const so_attr *a = n->attr;
    int64_t pads[4] = {a->pad[0], a->pad[1], a->pad[2], a->pad[3]};
    pool_kernel(pool_plan_new(a, n->op == SO_OP_MAXPOOL, shape_of(g, n->in[0]), &n->out[0], pads, a->count_include_pad), k);
    return SO_OK;
}

/* Pad (constant 0, spatial dims of a rank-4 tensor, pads >= 0) whose only user is an
   AveragePool without pads of its own: one avgpool step over the unpadded input with the
   Pad's pads counted in the divisor (count_include_pad), as the padded zeros are. */
int so_pool_fuse_pad(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_graph *g = c->g;
    const so_node *n = &g->nodes[i];
    so_fuse f;
    if (!so_fuse_pad_pool(g, c->user, c->absorbed, i, &f)) return 0; /* the decision: kernels/fuse.c */
    int32_t u = f.node[0];
    const so_shape *x = shape_of(g, n->in[0]);
    const so_node *pn = &g->nodes[u];
    const so_attr *pa = pn->attr;
    const int64_t *q = n->attr->ints; /* begin[0..3], end[0..3] */
    int64_t pads[4] = {q[2], q[3], q[6], q[7]};
    pool_kernel(pool_plan_new(pa, 0, x, &pn->out[0], pads, 1), k);
    k->name = strcmp(k->name, "avgpool3x3_s1") ? "pad_avgpool" : "pad_avgpool3x3_s1";
    k->n_fused = 1;
    k->fused[0] = u;
    return 1;
}

typedef struct gap_plan {
    int64_t planes, plane;
} gap_plan;

static void gap_planes(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const gap_plan *p = priv;
    const float *X = in[0].data;
    float *Y = out[0].data;
#pragma omp for nowait
    for (int64_t q = 0; q < p->planes; q++) {
        const float *x = X + q * p->plane;
        float s = 0.f; /* lane-wise partial sums (was one serial add chain: 0.13 ms for SqueezeNet's 1000 x 13 x 13) */
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < p->plane; j++) s += x[j];
        Y[q] = s / (float)p->plane;
    }
}

static void gap_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const gap_plan *p = priv;
    SO_PAR_RUN(p->planes * p->plane > SO_PAR_MIN, , gap_planes(priv, in, out, scratch));
}

static so_status select_gap(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_node *n = &c->g->nodes[i];
    const so_shape *x = shape_of(c->g, n->in[0]);
    gap_plan *p = so_xcalloc(1, sizeof *p);
    p->planes = x->dim[0] * x->dim[1];
    p->plane = 1;
    for (int d = 2; d < x->rank; d++) p->plane *= x->dim[d];
    k->run = gap_run;
    k->priv = p;
    k->free_priv = free;
    k->name = "global_avgpool";
    return SO_OK;
}


so_status so_pool_select(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    switch (c->g->nodes[i].op) {
    case SO_OP_MAXPOOL:
    case SO_OP_AVGPOOL: return select_pool(c, i, k);
    case SO_OP_GLOBALAVGPOOL: return select_gap(c, i, k);
    default: return so_errorf("so_pool_select: no case for %s (kernels/fast.c sends it here)", so_ops[c->g->nodes[i].op].name);
    }
}
