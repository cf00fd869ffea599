/* fast.c - fast kernel selection and the non-conv fast kernels: sgemm MatMul/Gemm with fused epilogues, broadcasting element-wise, softmax, layernorm, batchnorm, pooling, transpose, concat, split, pad. */
#include "kset_names.h"

#include "fast.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <omp.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "conv.h"
#include "fuse.h"
#include "gemm.h"

#define PAR_MIN 32768 /* elements below which our loops stay single-threaded */

int so_fast_threads(void) { return omp_get_max_threads(); }

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

void so_fast_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                   const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    /* M = 1 or N = 1: sgemv (measured 3-4x faster than this OpenBLAS's sgemm for
       [1,512]x[512,2048] and [1,64]x[64,256]). y is zeroed first when beta = 0 so stale
       arena contents (NaN/Inf) cannot leak through a 0 * y scaling. */
    if ((M == 1 || N == 1) && K > 0) {
        int64_t len = M == 1 ? N : M, incy = M == 1 ? 1 : ldc;
        if (beta == 0.f)
            for (int64_t i = 0; i < len; i++) C[i * incy] = 0.f;
        if (M == 1) { /* y[N] = op(B)^T x, x = row 0 of op(A) */
            int64_t incx = trans_a ? lda : 1;
            if (trans_b)
                cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)N, (int)K, alpha, B, (int)ldb, A, (int)incx, beta, C, (int)incy);
            else
                cblas_sgemv(CblasRowMajor, CblasTrans, (int)K, (int)N, alpha, B, (int)ldb, A, (int)incx, beta, C, (int)incy);
        } else { /* y[M] = op(A) x, x = column 0 of op(B) */
            int64_t incx = trans_b ? 1 : ldb;
            if (trans_a)
                cblas_sgemv(CblasRowMajor, CblasTrans, (int)K, (int)M, alpha, A, (int)lda, B, (int)incx, beta, C, (int)incy);
            else
                cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)M, (int)K, alpha, A, (int)lda, B, (int)incx, beta, C, (int)incy);
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
        int T = so_fast_threads();
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
    /* OpenBLAS runs single-threaded (exec.c): with T threads, the product is split here into T
       contiguous column ranges (16-multiples) or, when N is narrow, row ranges, one
       single-threaded sgemm each, on the executor's OpenMP team, so one thread pool serves both
       our loops and sgemm (two spinning pools on the same cores fought each other). */
    int T = so_fast_threads();
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

static const so_shape *shape_of(const so_graph *g, so_edge e) { return &g->nodes[e.node].out[e.slot]; }

/* Data of a float WEIGHT input, else NULL. */
static const float *weight_f32(const so_graph *g, so_edge e) { return so_fuse_weight_f32(g, e); }

/* Scalar f32 weight at edge e into *v. */
static int scalar_weight(const so_graph *g, so_edge e, float *v) { return so_fuse_scalar_weight(g, e, v); }

/* The other input of binary node j (the one that is not node `from`'s output). */
static int other_in(const so_node *nj, int32_t from, so_edge *o) { return so_fuse_other_in(nj, from, o); }

/* activation role (ops.def column) */
static int act_of_op(so_op op) { return so_ops[op].act; }

/* expf for vectorised loops (omp simd): range reduction x = n ln2 + r (n by the 1.5*2^23
   rounding trick), degree-6 polynomial (Cephes), 2^n through the exponent bits. The input
   is clamped to [-87, 88] with integer operations (float compares would keep GCC from
   if-converting the loop under -ftrapping-math). Relative error ~2e-7. Like expf, NaN gives
   NaN, +inf gives +inf and -inf gives 0 (selected by the same integer masks at the end). */
static inline float vexpf(float x)
{
    union { float f; int32_t i; } ux = {.f = x};
    const int32_t in = ux.i;
    int32_t mag = ux.i & 0x7fffffff, lim = ux.i < 0 ? 0x42AE0000 : 0x42B00000; /* 87, 88 */
    const int32_t nonfin = (0x7f7fffff - mag) >> 31; /* all ones where x is NaN or +-inf */
    mag = mag > lim ? lim : mag;
    ux.i = (int32_t)((uint32_t)ux.i & 0x80000000u) | mag;
    x = ux.f;
    union { float f; int32_t i; } t = {.f = x * 1.44269504088896341f + 12582912.f};
    float n = t.f - 12582912.f;
    float r = x - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.f;
    union { int32_t i; float f; } u = {.i = (t.i - 0x4B400000 + 127) * (1 << 23)}, res = {.f = p * u.f};
    /* non-finite x: x itself (NaN, +inf), or 0 for -inf */
    const int32_t special = in == (int32_t)0xff800000u ? 0 : in;
    res.i = (res.i & ~nonfin) | (special & nonfin);
    return res.f;
}

/* erf: odd Taylor series for |x| < 0.5 (relative accuracy near 0), Abramowitz-Stegun
   7.1.26 above (absolute error 1.5e-7, i.e. < 3e-7 relative where erf >= 0.52). */
static inline float verff(float x)
{
    float a = __builtin_fabsf(x);
    float x2 = x * x;
    float small = x * (1.1283791671f + x2 * (-0.3761263890f + x2 * (0.1128379167f + x2 * (-0.0268661706f + x2 * (0.0052239776f + x2 * -0.0008548327f)))));
    float t = 1.f / (1.f + 0.3275911f * a);
    float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
    float big = __builtin_copysignf(1.f - poly * vexpf(-a * a), x);
    /* select small where a < 0.5 by bit masks (non-negative floats order as integers) */
    union { float f; int32_t i; } ua = {.f = a}, us = {.f = small}, ub = {.f = big}, r;
    int32_t m = (ua.i - 0x3F000000) >> 31; /* all ones where a < 0.5 */
    r.i = (us.i & m) | (ub.i & ~m);
    return r.f;
}

static inline float vsigmoidf(float x) { return 1.f / (1.f + vexpf(-x)); }

/* Softmax of one contiguous row x[0..L) into y (y may be x): vectorised max, exp + sum, scale. */
static inline void softmax_row(const float *x, float *y, int64_t L)
{
    float mx = x[0], sum = 0.f;
#pragma omp simd reduction(max : mx)
    for (int64_t j = 1; j < L; j++) mx = x[j] > mx ? x[j] : mx;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < L; j++) {
        float e = vexpf(x[j] - mx);
        y[j] = e;
        sum += e;
    }
    float inv = 1.f / sum;
#pragma omp simd
    for (int64_t j = 0; j < L; j++) y[j] *= inv;
}

/* tanh: odd Cephes polynomial for |x| < 0.625 (relative accuracy near 0), 1 - 2/(e^{2|x|}+1)
   above (vexpf clamps, so large |x| gives exactly +-1); selected by bit masks like verff. */
static inline float vtanhf(float x)
{
    float a = __builtin_fabsf(x);
    float z = x * x;
    float small = x + x * z * ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z + 1.33314422036e-1f) * z - 3.33332819422e-1f);
    float big = __builtin_copysignf(1.f - 2.f / (vexpf(2.f * a) + 1.f), x);
    union { float f; int32_t i; } ua = {.f = a}, us = {.f = small}, ub = {.f = big}, r;
    int32_t m = (ua.i - 0x3F200000) >> 31; /* all ones where a < 0.625 */
    r.i = (us.i & m) | (ub.i & ~m);
    return r.f;
}

void so_fast_act(int act, float lo, float hi, float *x, int64_t n)
{
    switch (act) {
    case SO_ACT_RELU:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) x[i] = x[i] < 0.f ? 0.f : x[i]; /* NaN passes, as in the reference */
        break;
    case SO_ACT_SIGMOID:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) x[i] = vsigmoidf(x[i]);
        break;
    case SO_ACT_TANH:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) x[i] = vtanhf(x[i]);
        break;
    case SO_ACT_CLIP:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            float v = x[i] < lo ? lo : x[i];
            x[i] = v > hi ? hi : v;
        }
        break;
    default:
        break;
    }
}

/* y = act(y * s + t) in one vectorised pass for the cheap activations. */
static void affine_act(float *restrict y, int64_t n, float s, float t, int act, float lo, float hi)
{
    switch (act) {
    case SO_ACT_NONE:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) y[i] = y[i] * s + t;
        break;
    case SO_ACT_RELU:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            float v = y[i] * s + t;
            y[i] = v < 0.f ? 0.f : v;
        }
        break;
    case SO_ACT_CLIP:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            float v = y[i] * s + t;
            v = v < lo ? lo : v;
            y[i] = v > hi ? hi : v;
        }
        break;
    default:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) y[i] = y[i] * s + t;
        so_fast_act(act, lo, hi, y, n);
        break;
    }
}

void so_fast_epi_row(const so_epi *ep, int64_t c, float *y, const float *res, int64_t n)
{
    float s = ep->scale ? ep->scale[c] : 1.f, t = ep->shift ? ep->shift[c] : 0.f;
    if (ep->scale || ep->shift || ep->act1) affine_act(y, n, s, t, ep->act1, ep->lo1, ep->hi1);
    if (res) {
        const float *restrict r = res;
        float *restrict yy = y;
        if (ep->act2 == SO_ACT_RELU) {
#pragma omp simd
            for (int64_t i = 0; i < n; i++) {
                float v = yy[i] + r[i];
                yy[i] = v < 0.f ? 0.f : v;
            }
        } else {
#pragma omp simd
            for (int64_t i = 0; i < n; i++) yy[i] += r[i];
            if (ep->act2) so_fast_act(ep->act2, ep->lo2, ep->hi2, y, n);
        }
    }
}

/* Epilogue with the channel on the last axis: y is [m, n], channel = column. */
static void epi_cols(const so_epi *ep, float *y, const float *res, int64_t m, int64_t n)
{
    if (!ep->scale && !ep->shift && !ep->act1 && !res) return;
#pragma omp parallel for if (m * n > PAR_MIN)
    for (int64_t r = 0; r < m; r++) {
        float *yr = y + r * n;
        if (ep->scale) {
            for (int64_t j = 0; j < n; j++) yr[j] = yr[j] * ep->scale[j] + (ep->shift ? ep->shift[j] : 0.f);
        } else if (ep->shift) {
            for (int64_t j = 0; j < n; j++) yr[j] += ep->shift[j];
        }
        if (ep->act1) so_fast_act(ep->act1, ep->lo1, ep->hi1, yr, n);
        if (res) {
            const float *rr = res + r * n;
            for (int64_t j = 0; j < n; j++) yr[j] += rr[j];
            if (ep->act2) so_fast_act(ep->act2, ep->lo2, ep->hi2, yr, n);
        }
    }
}

/* ---------------- fusion chains ---------------- */

static float *ensure(float **p, int64_t n, float init)
{
    if (!*p) {
        *p = so_xmalloc(sizeof **p * (size_t)(n > 0 ? n : 1));
        for (int64_t j = 0; j < n; j++) (*p)[j] = init;
    }
    return *p;
}

void so_fast_chain_build(const so_fast_ctx *c, int32_t i, int chan_axis, int64_t nch, const float *bias, so_fast_chain *ch)
{
    const so_graph *g = c->g;
    const so_node *h = &g->nodes[i];
    memset(ch, 0, sizeof *ch);
    if (bias) {
        ch->shift = so_xmalloc(sizeof *ch->shift * (size_t)nch);
        memcpy(ch->shift, bias, sizeof *ch->shift * (size_t)nch);
    }
    if (so_ops[h->op].flags & SO_F_ACT) {
        ch->ep.act1 = h->attr->act;
        ch->ep.lo1 = h->attr->clip_min;
        ch->ep.hi1 = h->attr->clip_max;
    }
    /* which users are absorbed is decided once, in kernels/fuse.c (the cost model asks the same) */
    so_fuse f;
    so_fuse_chain(g, c->user, c->absorbed, i, chan_axis, nch, ch->ep.act1 != 0, &f);
    for (int s = 0; s < f.n; s++) {
        int32_t u = f.node[s];
        const so_node *un = &g->nodes[u];
        switch (f.step[s]) {
        case SO_FUSE_BN: {
            const float *sc = weight_f32(g, un->in[1]), *bb = weight_f32(g, un->in[2]), *mean = weight_f32(g, un->in[3]),
                        *var = weight_f32(g, un->in[4]);
            float *S = ensure(&ch->scale, nch, 1.f), *T = ensure(&ch->shift, nch, 0.f);
            for (int64_t k = 0; k < nch; k++) {
                float sv = sc[k] / sqrtf(var[k] + un->attr->epsilon);
                S[k] *= sv;
                T[k] = T[k] * sv + (bb[k] - mean[k] * sv);
            }
            break;
        }
        case SO_FUSE_BIAS: {
            int32_t cur = s ? f.node[s - 1] : i;
            int me = (un->in[0].node == cur && un->in[0].slot == 0) ? 0 : 1;
            so_edge other = un->in[1 - me];
            const float *w = weight_f32(g, other);
            int64_t numel = so_shape_numel(shape_of(g, other));
            float *T = ensure(&ch->shift, nch, 0.f);
            for (int64_t k = 0; k < nch; k++) T[k] += numel == 1 ? w[0] : w[k];
            ch->ep.act1 = un->attr->act;
            ch->ep.lo1 = un->attr->clip_min;
            ch->ep.hi1 = un->attr->clip_max;
            break;
        }
        case SO_FUSE_RESIDUAL:
            ch->has_extra = 1;
            ch->extra = f.extra;
            ch->ep.has_res = 1;
            ch->ep.act2 = un->attr->act;
            ch->ep.lo2 = un->attr->clip_min;
            ch->ep.hi2 = un->attr->clip_max;
            break;
        case SO_FUSE_ACT1:
            ch->ep.act1 = act_of_op(un->op);
            ch->ep.lo1 = un->attr->clip_min;
            ch->ep.hi1 = un->attr->clip_max;
            break;
        default: /* SO_FUSE_ACT2 */
            ch->ep.act2 = act_of_op(un->op);
            ch->ep.lo2 = un->attr->clip_min;
            ch->ep.hi2 = un->attr->clip_max;
            break;
        }
        ch->fused[ch->n_fused++] = u;
    }
    ch->ep.scale = ch->scale;
    ch->ep.shift = ch->shift;
}

void so_fast_chain_apply(const so_fast_chain *ch, so_fast_kernel *k)
{
    k->n_fused = ch->n_fused;
    memcpy(k->fused, ch->fused, sizeof k->fused);
    k->has_extra = ch->has_extra;
    k->extra_in = ch->extra;
}

/* ---------------- MatMul / Gemm ---------------- */

typedef struct mm_plan {
    int64_t M, N, K, lda, ldb;
    int ta, tb;
    float alpha, beta;
    int64_t nb;           /* batch count */
    int64_t *aoff, *boff; /* per batch, in floats */
    so_fast_chain ch;
    int res_in;           /* index of the residual in in[] or -1 */
    int c_mode;           /* Gemm C: 0 none or folded, 1 broadcast-fill before sgemm */
    int64_t cM, cN;       /* C broadcast dims */
    float *bp;            /* so_gemm: B (a weight) packed at load, or NULL */
    int T;                /* threads the so_gemm scratch was sized for */
} mm_plan;

static void mm_free(void *p)
{
    mm_plan *m = p;
    free(m->aoff);
    free(m->boff);
    free(m->ch.scale);
    free(m->ch.shift);
    free(m->bp);
    free(m);
}

static void mm_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const mm_plan *p = priv;
    const float *A = in[0].data, *B = in[1].data;
    float *Y = out[0].data;
    float beta = 0.f;
    if (p->c_mode == 1) {
        const float *C = in[2].data;
        for (int64_t m = 0; m < p->M; m++)
            for (int64_t n = 0; n < p->N; n++)
                Y[m * p->N + n] = p->beta * C[(p->cM == 1 ? 0 : m) * p->cN + (p->cN == 1 ? 0 : n)];
        beta = 1.f;
    }
    const float *res = p->res_in >= 0 ? in[p->res_in].data : NULL;
    int T = so_fast_threads() < p->T ? so_fast_threads() : p->T;
    if (p->bp) { /* our GEMM, weight packed at load, epilogue on each finished tile */
        so_gemm_epi ge = {.ep = &p->ch.ep, .per_row = 0, .res = res, .ldr = p->N};
        so_gemm_packed(p->ta, p->M, p->N, p->K, p->alpha, A, p->lda, p->bp, beta, Y, p->N, &ge, scratch, T);
        return;
    }
    for (int64_t b = 0; b < p->nb; b++)
        so_fast_sgemm(p->ta, p->tb, p->M, p->N, p->K, p->alpha, A + p->aoff[b], p->lda, B + p->boff[b], p->ldb, beta,
                      Y + b * p->M * p->N, p->N);
    epi_cols(&p->ch.ep, Y, res, p->nb * p->M, p->N);
}

/* Our GEMM (gemm.c) instead of sgemm for a weight B (packed once here) when both dims are
   >= 2 (M = 1 / N = 1 stay on sgemv) and M <= 1024. Batched products of activations stay on
   OpenBLAS: BERT's 12 x [64,64]x[64,64] attention products with B packed per batch
   (so_gemm, batches over threads) took 1.05-1.6x OpenBLAS's time in-model. Measured
   against this OpenBLAS in bench/gemm_bench.c. */
static void mm_use_gemm(const so_graph *g, const so_node *n, mm_plan *p, so_fast_kernel *k)
{
    /* M > 1024: this OpenBLAS is as fast or faster (2048^3: 0.88x ours) */
    if (!so_fast_use_gemm || p->M < 2 || p->N < 2 || p->K < 1 || p->M > 1024) return;
    p->T = so_fast_threads() < 1 ? 1 : so_fast_threads();
    const float *w = weight_f32(g, n->in[1]);
    if (p->nb == 1 && w) {
        p->bp = aligned_alloc(64, (so_gemm_packed_b_floats(p->K, p->N) * sizeof(float) + 63) / 64 * 64);
        if (!p->bp) return; /* stays on sgemm */
        so_gemm_pack_b(p->tb, p->K, p->N, w, p->ldb, p->bp);
        k->packed_bytes = so_gemm_packed_b_floats(p->K, p->N) * sizeof(float);
        k->in1_copied = 1;
        k->scratch_bytes = so_gemm_scratch_floats(p->M, p->K, p->T) * sizeof(float);
    }
}

/* ---------------- attention ---------------- */
/* MatMul(Q, Kt) -> Div (or Mul) by a scalar weight -> Softmax over the last axis -> MatMul(., V)
   [-> Transpose (0, 2, 1, 3)]: BERT's per-head attention, Q [.., S, D], Kt [.., D, S2],
   V [.., S2, Dv] with the same batch dims (no broadcast). One step: per batch (head), on one
   thread, the S x S2 scores by our GEMM into a thread-private block (L1/L2), scaled and
   softmaxed in place (same operations as the Div and softmax kernels), then times V by our
   GEMM straight into the output, transposed by the output's leading dimension. Pure kernel
   selection: the absorbed nodes' outputs never exist. */
typedef struct attn_plan {
    int64_t nb, S, D, S2, Dv;
    int64_t heads;  /* transposed output [B, S, heads, Dv]: batch b = b0 * heads + h; else 1 */
    float c;
    int mul;        /* scores * c (Mul) instead of / c (Div) */
    int64_t per;    /* scratch floats per thread */
} attn_plan;

static void attn_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const attn_plan *p = priv;
    const float *Q = in[0].data, *Kt = in[1].data, *V = in[2].data;
    float *Y = out[0].data;
    const int64_t S = p->S, D = p->D, S2 = p->S2, Dv = p->Dv, H = p->heads;
    const float cv = p->c;
#pragma omp parallel for schedule(static) if (p->nb * S * S2 * (D + Dv) > PAR_MIN)
    for (int64_t b = 0; b < p->nb; b++) {
        float *sc = scratch + (int64_t)omp_get_thread_num() * p->per;
        so_gemm_small(S, S2, D, Q + b * S * D, D, Kt + b * D * S2, S2, sc, S2);
        for (int64_t r = 0; r < S; r++) {
            float *x = sc + r * S2;
            if (p->mul) {
#pragma omp simd
                for (int64_t j = 0; j < S2; j++) x[j] *= cv;
            } else {
#pragma omp simd
                for (int64_t j = 0; j < S2; j++) x[j] /= cv;
            }
            softmax_row(x, x, S2);
        }
        float *y = H > 1 ? Y + (b / H) * S * H * Dv + (b % H) * Dv : Y + b * S * Dv;
        so_gemm_small(S, Dv, S2, sc, S2, V + b * S2 * Dv, Dv, y, H * Dv);
    }
}

static int select_attention(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_graph *g = c->g;
    const so_node *n = &g->nodes[i];
    so_fuse f;
    if (!so_fuse_attention(g, c->user, c->absorbed, i, &f)) return 0; /* the decision: kernels/fuse.c */
    const int32_t *u = f.node;
    const so_shape *q = shape_of(g, n->in[0]), *kt = shape_of(g, n->in[1]), *v = shape_of(g, f.extra);
    const int r = q->rank;
    const so_node *dv = &g->nodes[u[0]];
    float cv;
    so_edge o;
    other_in(dv, i, &o);
    scalar_weight(g, o, &cv);
    attn_plan *p = so_xcalloc(1, sizeof *p);
    p->S = q->dim[r - 2];
    p->D = q->dim[r - 1];
    p->S2 = kt->dim[r - 1];
    p->Dv = v->dim[r - 1];
    p->nb = 1;
    for (int d = 0; d < r - 2; d++) p->nb *= q->dim[d];
    p->heads = f.n == 4 ? q->dim[1] : 1;
    p->c = cv;
    p->mul = dv->op == SO_OP_MUL;
    int nf = f.n;
    const int T = omp_get_max_threads() < 1 ? 1 : omp_get_max_threads();
    p->per = (p->S * p->S2 + 15) / 16 * 16;
    k->scratch_bytes = sizeof(float) * (size_t)p->per * (size_t)T;
    k->n_fused = nf;
    memcpy(k->fused, u, sizeof(int32_t) * (size_t)nf);
    k->has_extra = 1;
    k->extra_in = f.extra;
    k->run = attn_run;
    k->priv = p;
    k->free_priv = free;
    k->name = "attention";
    return 1;
}

static so_status select_matmul(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_graph *g = c->g;
    const so_node *n = &g->nodes[i];
    so_shape a = *shape_of(g, n->in[0]), b = *shape_of(g, n->in[1]);
    const so_shape *o = &n->out[0];
    if (a.dtype != SO_F32 || b.dtype != SO_F32) return SO_OK;
    if (select_attention(c, i, k)) return SO_OK;
    if (a.rank == 1) { a.rank = 2; a.dim[1] = a.dim[0]; a.dim[0] = 1; }
    if (b.rank == 1) { b.rank = 2; b.dim[1] = 1; }
    mm_plan *p = so_xcalloc(1, sizeof *p);
    p->M = a.dim[a.rank - 2];
    p->K = a.dim[a.rank - 1];
    p->N = b.dim[b.rank - 1];
    p->lda = p->K;
    p->ldb = p->N;
    p->alpha = 1.f;
    p->res_in = -1;
    /* broadcast batch dims */
    int ra = a.rank - 2, rb = b.rank - 2, r = SO_MAX(ra, rb);
    int64_t bd[SO_MAX_RANK], sa[SO_MAX_RANK], sb[SO_MAX_RANK];
    int64_t acc_a = p->M * p->K, acc_b = p->K * p->N;
    for (int d = r - 1; d >= 0; d--) {
        int ia = d - (r - ra), ib = d - (r - rb);
        int64_t da = ia >= 0 ? a.dim[ia] : 1, db = ib >= 0 ? b.dim[ib] : 1;
        bd[d] = SO_MAX(da, db);
        sa[d] = da == 1 ? 0 : acc_a;
        sb[d] = db == 1 ? 0 : acc_b;
        acc_a *= da;
        acc_b *= db;
    }
    int64_t nb = 1;
    for (int d = 0; d < r; d++) nb *= bd[d];
    int b_shared = 1;
    for (int d = 0; d < r; d++)
        if (sb[d]) b_shared = 0;
    int a_full = 1;
    for (int d = 0; d < r; d++)
        if (bd[d] > 1 && !sa[d]) a_full = 0;
    if (b_shared && a_full) { /* fold batch into M */
        p->M *= nb;
        nb = 1;
    }
    p->nb = nb;
    p->aoff = so_xcalloc((size_t)nb, sizeof *p->aoff);
    p->boff = so_xcalloc((size_t)nb, sizeof *p->boff);
    if (!(b_shared && a_full))
        for (int64_t t = 0; t < nb; t++) {
            int64_t rem = t, oa = 0, ob = 0;
            for (int d = r - 1; d >= 0; d--) {
                int64_t idx = rem % bd[d];
                rem /= bd[d];
                oa += idx * sa[d];
                ob += idx * sb[d];
            }
            p->aoff[t] = oa;
            p->boff[t] = ob;
        }
    if (shape_of(g, n->in[1])->rank >= 2 && o->rank >= 1) {
        so_fast_chain_build(c, i, o->rank - 1, p->N, NULL, &p->ch);
    } else {
        /* vector B drops N: the last axis is not the channel; no per-channel chain */
        p->ch.ep.act1 = n->attr->act;
        p->ch.ep.lo1 = n->attr->clip_min;
        p->ch.ep.hi1 = n->attr->clip_max;
    }
    if (p->ch.has_extra) p->res_in = n->n_in;
    so_fast_chain_apply(&p->ch, k);
    k->run = mm_run;
    k->priv = p;
    k->free_priv = mm_free;
    mm_use_gemm(g, n, p, k);
    k->name = p->bp ? "matmul_so_gemm" : nb > 1 ? "matmul_batched_sgemm" : "matmul_sgemm";
    return SO_OK;
}

static so_status select_gemm(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_graph *g = c->g;
    const so_node *n = &g->nodes[i];
    const so_attr *at = n->attr;
    const so_shape *a = shape_of(g, n->in[0]), *b = shape_of(g, n->in[1]);
    mm_plan *p = so_xcalloc(1, sizeof *p);
    p->ta = at->trans_a;
    p->tb = at->trans_b;
    p->M = p->ta ? a->dim[1] : a->dim[0];
    p->K = p->ta ? a->dim[0] : a->dim[1];
    p->N = p->tb ? b->dim[0] : b->dim[1];
    p->lda = a->dim[1];
    p->ldb = b->dim[1];
    p->alpha = at->alpha;
    p->beta = at->beta;
    p->nb = 1;
    p->aoff = so_xcalloc(1, sizeof *p->aoff);
    p->boff = so_xcalloc(1, sizeof *p->boff);
    p->res_in = -1;
    float *bias = NULL;
    int has_c = n->n_in > 2 && n->in[2].node >= 0;
    if (has_c) {
        const so_shape *cs = shape_of(g, n->in[2]);
        p->cN = cs->rank >= 1 ? cs->dim[cs->rank - 1] : 1;
        p->cM = cs->rank >= 2 ? cs->dim[cs->rank - 2] : 1;
        const float *cw = weight_f32(g, n->in[2]);
        if (cw && p->cM == 1) {
            bias = so_xmalloc(sizeof *bias * (size_t)p->N);
            for (int64_t j = 0; j < p->N; j++) bias[j] = p->beta * cw[p->cN == 1 ? 0 : j];
        } else {
            p->c_mode = 1;
        }
    }
    so_fast_chain_build(c, i, 1, p->N, bias, &p->ch);
    free(bias);
    if (p->ch.has_extra) p->res_in = n->n_in;
    so_fast_chain_apply(&p->ch, k);
    k->run = mm_run;
    k->priv = p;
    k->free_priv = mm_free;
    mm_use_gemm(g, n, p, k);
    k->name = p->bp ? "gemm_so_gemm" : "gemm_sgemm";
    return SO_OK;
}

/* ---------------- element-wise binary with broadcasting ---------------- */

typedef struct bin_plan {
    so_op op;
    int act;
    float lo, hi;
    int nd;               /* collapsed rank */
    int64_t dim[SO_MAX_RANK], sa[SO_MAX_RANK], sb[SO_MAX_RANK];
    int64_t outer, inner, total;
} bin_plan;

#define BIN_LOOP(EXPR)                                                                                                 \
    do {                                                                                                               \
        if (ia == 1 && ib == 1)                                                                                        \
            _Pragma("omp simd") for (int64_t j = 0; j < n; j++) { float x = a[j], y = b[j]; o[j] = (EXPR); }                               \
        else if (ia == 1 && ib == 0) {                                                                                 \
            float y = b[0];                                                                                            \
            _Pragma("omp simd") for (int64_t j = 0; j < n; j++) { float x = a[j]; o[j] = (EXPR); }                                         \
        } else if (ia == 0 && ib == 1) {                                                                               \
            float x = a[0];                                                                                            \
            _Pragma("omp simd") for (int64_t j = 0; j < n; j++) { float y = b[j]; o[j] = (EXPR); }                                         \
        } else                                                                                                         \
            for (int64_t j = 0; j < n; j++) { float x = a[j * ia], y = b[j * ib]; o[j] = (EXPR); }                     \
    } while (0)

static void bin_inner(so_op op, const float *a, int64_t ia, const float *b, int64_t ib, float *o, int64_t n)
{
    switch (op) {
    case SO_OP_ADD: BIN_LOOP(x + y); break;
    case SO_OP_SUB: BIN_LOOP(x - y); break;
    case SO_OP_MUL: BIN_LOOP(x * y); break;
    case SO_OP_DIV: BIN_LOOP(x / y); break;
    case SO_OP_POW: BIN_LOOP(powf(x, y)); break;
    default: break;
    }
}

static void bin_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const bin_plan *p = priv;
    const float *A = in[0].data, *B = in[1].data;
    float *O = out[0].data;
    int nd = p->nd;
    int64_t inner = p->inner;
    if (p->outer == 1) {
        bin_inner(p->op, A, p->sa[nd - 1], B, p->sb[nd - 1], O, inner);
        if (p->act) so_fast_act(p->act, p->lo, p->hi, O, inner);
        return;
    }
#pragma omp parallel for if (p->total > PAR_MIN)
    for (int64_t r = 0; r < p->outer; r++) {
        int64_t rem = r, oa = 0, ob = 0;
        for (int d = nd - 2; d >= 0; d--) {
            int64_t idx = rem % p->dim[d];
            rem /= p->dim[d];
            oa += idx * p->sa[d];
            ob += idx * p->sb[d];
        }
        float *o = O + r * inner;
        bin_inner(p->op, A + oa, p->sa[nd - 1], B + ob, p->sb[nd - 1], o, inner);
        if (p->act) so_fast_act(p->act, p->lo, p->hi, o, inner);
    }
}

static so_status select_binary(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_graph *g = c->g;
    const so_node *n = &g->nodes[i];
    const so_shape *A = shape_of(g, n->in[0]), *B = shape_of(g, n->in[1]), *O = &n->out[0];
    if (A->dtype != SO_F32 || B->dtype != SO_F32) return SO_OK;
    bin_plan *p = so_xcalloc(1, sizeof *p);
    p->op = n->op;
    if (so_ops[n->op].flags & SO_F_ACT) {
        p->act = n->attr->act;
        p->lo = n->attr->clip_min;
        p->hi = n->attr->clip_max;
    }
    int r = O->rank;
    int64_t dim[SO_MAX_RANK], sa[SO_MAX_RANK], sb[SO_MAX_RANK];
    int64_t acc_a = 1, acc_b = 1;
    for (int d = r - 1; d >= 0; d--) {
        int ia = d - (r - A->rank), ib = d - (r - B->rank);
        int64_t da = ia >= 0 ? A->dim[ia] : 1, db = ib >= 0 ? B->dim[ib] : 1;
        dim[d] = O->dim[d];
        sa[d] = da == 1 ? 0 : acc_a;
        sb[d] = db == 1 ? 0 : acc_b;
        acc_a *= da;
        acc_b *= db;
    }
    /* drop size-1 axes, collapse mergeable neighbours */
    int nd = 0;
    for (int d = 0; d < r; d++) {
        if (dim[d] == 1) continue;
        if (nd > 0 && p->sa[nd - 1] == sa[d] * dim[d] && p->sb[nd - 1] == sb[d] * dim[d]) {
            p->dim[nd - 1] *= dim[d];
            p->sa[nd - 1] = sa[d];
            p->sb[nd - 1] = sb[d];
            continue;
        }
        p->dim[nd] = dim[d];
        p->sa[nd] = sa[d];
        p->sb[nd] = sb[d];
        nd++;
    }
    if (nd == 0) {
        p->dim[0] = 1;
        p->sa[0] = p->sb[0] = 0;
        nd = 1;
    }
    p->nd = nd;
    p->inner = p->dim[nd - 1];
    p->total = so_shape_numel(O);
    p->outer = p->total / p->inner;
    k->run = bin_run;
    k->priv = p;
    k->free_priv = free;
    k->name = "binary_bcast";
    return SO_OK;
}

/* ---------------- element-wise unary ---------------- */

typedef struct un_plan {
    so_op op;
    float lo, hi;       /* CLIP */
    float alpha, beta;  /* HARDSIGMOID, LEAKYRELU */
    int64_t n;
} un_plan;

static void un_chunk(const un_plan *p, const float *x, float *y, int64_t n)
{
    switch (p->op) {
    case SO_OP_RELU: _Pragma("omp simd") for (int64_t j = 0; j < n; j++) y[j] = x[j] < 0.f ? 0.f : x[j]; break;
    case SO_OP_SIGMOID: _Pragma("omp simd") for (int64_t j = 0; j < n; j++) y[j] = vsigmoidf(x[j]); break;
    case SO_OP_TANH: _Pragma("omp simd") for (int64_t j = 0; j < n; j++) y[j] = vtanhf(x[j]); break;
    case SO_OP_ERF: _Pragma("omp simd") for (int64_t j = 0; j < n; j++) y[j] = verff(x[j]); break;
    case SO_OP_SQRT: _Pragma("omp simd") for (int64_t j = 0; j < n; j++) y[j] = sqrtf(x[j]); break;
    case SO_OP_EXP: _Pragma("omp simd") for (int64_t j = 0; j < n; j++) y[j] = vexpf(x[j]); break;
    case SO_OP_LOG: for (int64_t j = 0; j < n; j++) y[j] = logf(x[j]); break;
    case SO_OP_NEG: _Pragma("omp simd") for (int64_t j = 0; j < n; j++) y[j] = -x[j]; break;
    case SO_OP_RECIPROCAL: _Pragma("omp simd") for (int64_t j = 0; j < n; j++) y[j] = 1.f / x[j]; break;
    case SO_OP_CLIP:
#pragma omp simd
        for (int64_t j = 0; j < n; j++) {
            float v = x[j] < p->lo ? p->lo : x[j];
            y[j] = v > p->hi ? p->hi : v;
        }
        break;
    case SO_OP_HARDSIGMOID: /* the reference's float expressions, vectorised */
#pragma omp simd
        for (int64_t j = 0; j < n; j++) {
            float t = p->alpha * x[j] + p->beta;
            y[j] = t < 0.f ? 0.f : t > 1.f ? 1.f : t;
        }
        break;
    case SO_OP_HARDSWISH:
    case SO_OP_LEAKYRELU: {
        /* GCC does not if-convert these loops (it did the Clip one), so AVX2 by hand: the same
           float operations as the reference; max/min with the constant first and a LT_OQ
           blend let a NaN through as the reference's comparisons do */
        int64_t j = 0;
#ifdef __AVX2__
        const __m256 six = _mm256_set1_ps(6.f), half = _mm256_set1_ps(0.5f), zero = _mm256_setzero_ps(),
                     one = _mm256_set1_ps(1.f), al = _mm256_set1_ps(p->alpha);
        for (; j + 8 <= n; j += 8) {
            __m256 v = _mm256_loadu_ps(x + j), r;
            if (p->op == SO_OP_HARDSWISH)
                r = _mm256_mul_ps(v, _mm256_min_ps(one, _mm256_max_ps(zero, _mm256_add_ps(_mm256_div_ps(v, six), half))));
            else
                r = _mm256_blendv_ps(v, _mm256_mul_ps(al, v), _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
            _mm256_storeu_ps(y + j, r);
        }
#endif
        for (; j < n; j++) { /* the rest (and everything without AVX2) */
            float v = x[j], t = v / 6.f + 0.5f;
            y[j] = p->op == SO_OP_LEAKYRELU ? (v < 0.f ? p->alpha * v : v) : v * (t < 0.f ? 0.f : t > 1.f ? 1.f : t);
        }
        break;
    }
    default: break;
    }
}

static void un_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const un_plan *p = priv;
    const float *x = in[0].data;
    float *y = out[0].data;
    if (p->n <= PAR_MIN) {
        un_chunk(p, x, y, p->n);
        return;
    }
    const int64_t CH = 8192;
    int64_t nch = (p->n + CH - 1) / CH;
#pragma omp parallel for
    for (int64_t t = 0; t < nch; t++) {
        int64_t s = t * CH, e = SO_MIN(p->n, s + CH);
        un_chunk(p, x + s, y + s, e - s);
    }
}

static so_status select_unary(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_node *n = &c->g->nodes[i];
    if (shape_of(c->g, n->in[0])->dtype != SO_F32) return SO_OK;
    un_plan *p = so_xcalloc(1, sizeof *p);
    p->op = n->op;
    p->lo = n->attr->clip_min;
    p->hi = n->attr->clip_max;
    p->alpha = n->attr->alpha;
    p->beta = n->attr->beta;
    p->n = so_shape_numel(&n->out[0]);
    k->run = un_run;
    k->priv = p;
    k->free_priv = free;
    k->name = "unary";
    return SO_OK;
}

/* ---------------- Resize (4-D, H and W) ---------------- */
/* The reference's taps (so_ref_resize_taps) computed once at load per output row and column instead
   of per element, then the same double blend per element: bitwise the reference's results. torchvision
   DeepLabV3-MobileNet-v3's two bilinear upsamplings (to 21 x 224 x 224) 13.4 -> 2.8 ms, 1 thread. */
typedef struct rs_plan {
    int64_t planes, H, W, Ho, Wo;
    int nearest;
    int64_t *y0, *y1, *x0, *x1; /* [Ho], [Ho], [Wo], [Wo] */
    double *wy, *wx;
} rs_plan;

static void rs_free(void *pp)
{
    rs_plan *p = pp;
    free(p->y0), free(p->y1), free(p->x0), free(p->x1), free(p->wy), free(p->wx);
    free(p);
}

static void rs_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const rs_plan *p = priv;
    const float *X = in[0].data;
    float *Y = out[0].data;
#pragma omp parallel for if (p->planes * p->Ho * p->Wo > PAR_MIN)
    for (int64_t q = 0; q < p->planes; q++)
        for (int64_t oy = 0; oy < p->Ho; oy++) {
            const float *r0 = X + (q * p->H + p->y0[oy]) * p->W, *r1 = X + (q * p->H + p->y1[oy]) * p->W;
            float *y = Y + (q * p->Ho + oy) * p->Wo;
            const double wy = p->wy[oy];
            if (p->nearest) {
                for (int64_t ox = 0; ox < p->Wo; ox++) y[ox] = r0[p->x0[ox]];
                continue;
            }
            for (int64_t ox = 0; ox < p->Wo; ox++) {
                const int64_t a = p->x0[ox], b = p->x1[ox];
                const double wx = p->wx[ox], top = r0[a] + wx * ((double)r0[b] - r0[a]), bot = r1[a] + wx * ((double)r1[b] - r1[a]);
                y[ox] = (float)(top + wy * (bot - top));
            }
        }
}

static so_status select_resize(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_node *n = &c->g->nodes[i];
    const so_shape *x = shape_of(c->g, n->in[0]), *o = &n->out[0];
    if (x->dtype != SO_F32 || x->rank != 4) return SO_OK;
    rs_plan *p = so_xcalloc(1, sizeof *p);
    p->planes = x->dim[0] * x->dim[1], p->H = x->dim[2], p->W = x->dim[3], p->Ho = o->dim[2], p->Wo = o->dim[3];
    p->nearest = n->attr->mode == 0;
    p->y0 = so_xmalloc(sizeof *p->y0 * (size_t)p->Ho), p->y1 = so_xmalloc(sizeof *p->y1 * (size_t)p->Ho);
    p->wy = so_xmalloc(sizeof *p->wy * (size_t)p->Ho);
    p->x0 = so_xmalloc(sizeof *p->x0 * (size_t)p->Wo), p->x1 = so_xmalloc(sizeof *p->x1 * (size_t)p->Wo);
    p->wx = so_xmalloc(sizeof *p->wx * (size_t)p->Wo);
    for (int64_t t = 0; t < p->Ho; t++) so_ref_resize_taps(n->attr, t, p->Ho, p->H, n->attr->alpha, &p->y0[t], &p->y1[t], &p->wy[t]);
    for (int64_t t = 0; t < p->Wo; t++) so_ref_resize_taps(n->attr, t, p->Wo, p->W, n->attr->beta, &p->x0[t], &p->x1[t], &p->wx[t]);
    k->run = rs_run;
    k->priv = p;
    k->free_priv = rs_free;
    k->name = "resize";
    return SO_OK;
}

/* ---------------- GELU, erf form: x * (erf(x / c) + 1) * 0.5 ---------------- */
/* Div(x, c) -> Erf -> Add(., a) -> Mul(x, .) -> Mul(., h) with scalar weights c, a, h (BERT's
   exported GELU) in one pass instead of five: the same float operations in the same order as
   the five unfused kernels (binary_bcast, verff; the five steps took 2.0 ms per run on
   BERT-base4, 1 thread, about twice ORT 'disabled'). With AVX2, erf8: verff in intrinsics
   with a Newton-refined reciprocal estimate for its one divide (~1e-7 relative from verff):
   BERT-base4's 4 gelu steps 1.46-1.49 -> 0.89-0.93 ms per run (3 alternating runs). */
#ifdef __AVX2__
/* vexpf on 8 lanes for x <= 0 (clamped at -87): the same reduction and polynomial. */
static inline __m256 exp8_neg(__m256 x)
{
    x = _mm256_max_ps(_mm256_set1_ps(-87.f), x); /* x second: a NaN passes */
    const __m256 magic = _mm256_set1_ps(12582912.f);
    __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), magic), n = _mm256_sub_ps(t, magic);
    __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x));
    __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(1.9875691500e-4f), r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(p, r), r, r), _mm256_set1_ps(1.f));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(0x4B400000)), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

/* verff on 8 lanes: the same Taylor / Abramowitz-Stegun split, with 1/(1 + p|x|) as a
   reciprocal estimate refined by one Newton step (relative error ~1e-7) instead of a divide. */
static inline __m256 erf8(__m256 x)
{
    const __m256 sign = _mm256_set1_ps(-0.f), one = _mm256_set1_ps(1.f);
    __m256 a = _mm256_andnot_ps(sign, x), x2 = _mm256_mul_ps(x, x);
    __m256 sm = _mm256_fmadd_ps(x2, _mm256_set1_ps(-0.0008548327f), _mm256_set1_ps(0.0052239776f));
    sm = _mm256_fmadd_ps(sm, x2, _mm256_set1_ps(-0.0268661706f));
    sm = _mm256_fmadd_ps(sm, x2, _mm256_set1_ps(0.1128379167f));
    sm = _mm256_fmadd_ps(sm, x2, _mm256_set1_ps(-0.3761263890f));
    sm = _mm256_mul_ps(x, _mm256_fmadd_ps(sm, x2, _mm256_set1_ps(1.1283791671f)));
    /* |x| capped at 10 (erf is 1 there) so that the Newton step below sees no inf * 0 when
       x = +-inf; min with a second lets a NaN through */
    __m256 d = _mm256_fmadd_ps(_mm256_set1_ps(0.3275911f), _mm256_min_ps(_mm256_set1_ps(10.f), a), one), t = _mm256_rcp_ps(d);
    t = _mm256_mul_ps(t, _mm256_fnmadd_ps(d, t, _mm256_set1_ps(2.f)));
    __m256 po = _mm256_fmadd_ps(t, _mm256_set1_ps(1.061405429f), _mm256_set1_ps(-1.453152027f));
    po = _mm256_fmadd_ps(po, t, _mm256_set1_ps(1.421413741f));
    po = _mm256_fmadd_ps(po, t, _mm256_set1_ps(-0.284496736f));
    po = _mm256_fmadd_ps(po, t, _mm256_set1_ps(0.254829592f));
    po = _mm256_mul_ps(po, t);
    __m256 big = _mm256_fnmadd_ps(po, exp8_neg(_mm256_mul_ps(_mm256_xor_ps(a, sign), a)), one);
    big = _mm256_or_ps(big, _mm256_and_ps(x, sign)); /* big >= 0: copysign */
    return _mm256_blendv_ps(big, sm, _mm256_cmp_ps(a, _mm256_set1_ps(0.5f), _CMP_LT_OQ));
}
#endif

typedef struct gelu_plan {
    int64_t n;
    float c, a, h;
} gelu_plan;

static void gelu_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const gelu_plan *p = priv;
    const float *X = in[0].data;
    float *Y = out[0].data;
    const float c = p->c, a = p->a, h = p->h;
    const int64_t n = p->n, nb = (n + 4095) / 4096;
#pragma omp parallel for schedule(static) if (n > PAR_MIN)
    for (int64_t b = 0; b < nb; b++) {
        const int64_t j0 = b * 4096, j1 = j0 + 4096 < n ? j0 + 4096 : n;
        int64_t j = j0;
#ifdef __AVX2__
        const __m256 vc = _mm256_set1_ps(c), va = _mm256_set1_ps(a), vh = _mm256_set1_ps(h);
        for (; j + 8 <= j1; j += 8) {
            __m256 x = _mm256_loadu_ps(X + j);
            _mm256_storeu_ps(Y + j, _mm256_mul_ps(_mm256_mul_ps(x, _mm256_add_ps(erf8(_mm256_div_ps(x, vc)), va)), vh));
        }
#endif
        for (; j < j1; j++) Y[j] = X[j] * (verff(X[j] / c) + a) * h;
    }
}

static int select_gelu(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_graph *g = c->g;
    const so_node *n = &g->nodes[i];
    so_fuse f;
    if (!so_fuse_gelu(g, c->user, c->absorbed, i, &f)) return 0; /* the decision: kernels/fuse.c */
    const int32_t *u = f.node;
    const so_shape *xs = shape_of(g, n->in[0]);
    float cv, av, hv;
    so_edge o;
    scalar_weight(g, n->in[1], &cv);
    other_in(&g->nodes[u[1]], u[0], &o);
    scalar_weight(g, o, &av);
    other_in(&g->nodes[u[3]], u[2], &o);
    scalar_weight(g, o, &hv);
    gelu_plan *p = so_xcalloc(1, sizeof *p);
    p->n = so_shape_numel(xs);
    p->c = cv;
    p->a = av;
    p->h = hv;
    k->n_fused = 4;
    memcpy(k->fused, u, sizeof(int32_t) * 4);
    k->run = gelu_run;
    k->priv = p;
    k->free_priv = free;
    k->name = "gelu_erf";
    return 1;
}

/* ---------------- softmax ---------------- */

typedef struct sm_plan {
    int64_t outer, len, inner;
} sm_plan;

static void sm_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const sm_plan *p = priv;
    const float *X = in[0].data;
    float *Y = out[0].data;
    int64_t L = p->len, Inn = p->inner;
#pragma omp parallel for if (p->outer * L * Inn > PAR_MIN)
    for (int64_t o = 0; o < p->outer; o++) {
        if (Inn == 1) { /* contiguous rows (the last axis): vectorised max, exp + sum, scale */
            softmax_row(X + o * L, Y + o * L, L);
            continue;
        }
        for (int64_t t = 0; t < Inn; t++) {
            const float *x = X + o * L * Inn + t;
            float *y = Y + o * L * Inn + t;
            float mx = x[0];
            for (int64_t j = 1; j < L; j++) mx = x[j * Inn] > mx ? x[j * Inn] : mx;
            float sum = 0.f;
            for (int64_t j = 0; j < L; j++) {
                float e = expf(x[j * Inn] - mx);
                y[j * Inn] = e;
                sum += e;
            }
            float inv = 1.f / sum;
            for (int64_t j = 0; j < L; j++) y[j * Inn] *= inv;
        }
    }
}

static so_status select_softmax(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_node *n = &c->g->nodes[i];
    const so_shape *x = &n->out[0];
    sm_plan *p = so_xcalloc(1, sizeof *p);
    p->outer = p->inner = 1;
    for (int d = 0; d < x->rank; d++) {
        if (d < n->attr->axis) p->outer *= x->dim[d];
        else if (d > n->attr->axis) p->inner *= x->dim[d];
    }
    p->len = x->dim[n->attr->axis];
    k->run = sm_run;
    k->priv = p;
    k->free_priv = free;
    k->name = "softmax";
    return SO_OK;
}

/* ---------------- layer norm ---------------- */

typedef struct ln_plan {
    int64_t rows, d;
    float eps;
    int has_bias;
} ln_plan;

static void ln_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const ln_plan *p = priv;
    const float *X = in[0].data, *S = in[1].data, *Bi = p->has_bias ? in[2].data : NULL;
    float *Y = out[0].data;
    int64_t D = p->d;
#pragma omp parallel for if (p->rows * D > PAR_MIN)
    for (int64_t r = 0; r < p->rows; r++) {
        const float *x = X + r * D;
        float *y = Y + r * D;
        float sum = 0.f;
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < D; j++) sum += x[j];
        float mean = sum / (float)D;
        float sq = 0.f;
#pragma omp simd reduction(+ : sq)
        for (int64_t j = 0; j < D; j++) {
            float dv = x[j] - mean;
            sq += dv * dv;
        }
        float inv = 1.f / sqrtf(sq / (float)D + p->eps);
        if (Bi)
#pragma omp simd
            for (int64_t j = 0; j < D; j++) y[j] = (x[j] - mean) * inv * S[j] + Bi[j];
        else
            for (int64_t j = 0; j < D; j++) y[j] = (x[j] - mean) * inv * S[j];
    }
}

static so_status select_layernorm(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_graph *g = c->g;
    const so_node *n = &g->nodes[i];
    const so_shape *x = &n->out[0];
    int64_t D = 1;
    for (int d = n->attr->axis; d < x->rank; d++) D *= x->dim[d];
    if (so_shape_numel(shape_of(g, n->in[1])) != D) return SO_OK;
    int has_bias = n->n_in > 2 && n->in[2].node >= 0;
    if (has_bias && so_shape_numel(shape_of(g, n->in[2])) != D) return SO_OK;
    ln_plan *p = so_xcalloc(1, sizeof *p);
    p->d = D;
    p->rows = so_shape_numel(x) / (D ? D : 1);
    p->eps = n->attr->epsilon;
    p->has_bias = has_bias;
    k->run = ln_run;
    k->priv = p;
    k->free_priv = free;
    k->name = "layernorm";
    return SO_OK;
}

/* ---------------- batchnorm (not fused) ---------------- */

typedef struct bn_plan {
    int64_t n, c, plane;
    float *s, *t;
} bn_plan;

static void bn_free(void *pp)
{
    bn_plan *p = pp;
    free(p->s);
    free(p->t);
    free(p);
}

static void bn_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const bn_plan *p = priv;
    const float *X = in[0].data;
    float *Y = out[0].data;
#pragma omp parallel for if (p->n * p->c * p->plane > PAR_MIN)
    for (int64_t q = 0; q < p->n * p->c; q++) {
        int64_t ch = q % p->c;
        const float *x = X + q * p->plane;
        float *y = Y + q * p->plane;
        float s = p->s[ch], t = p->t[ch];
#pragma omp simd
        for (int64_t j = 0; j < p->plane; j++) y[j] = x[j] * s + t;
    }
}

static so_status select_batchnorm(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_graph *g = c->g;
    const so_node *n = &g->nodes[i];
    const float *sc = weight_f32(g, n->in[1]), *bb = weight_f32(g, n->in[2]), *mean = weight_f32(g, n->in[3]),
                *var = weight_f32(g, n->in[4]);
    if (!sc || !bb || !mean || !var) return SO_OK;
    const so_shape *x = &n->out[0];
    bn_plan *p = so_xcalloc(1, sizeof *p);
    p->n = x->dim[0];
    p->c = x->dim[1];
    p->plane = 1;
    for (int d = 2; d < x->rank; d++) p->plane *= x->dim[d];
    p->s = so_xmalloc(sizeof *p->s * (size_t)p->c);
    p->t = so_xmalloc(sizeof *p->t * (size_t)p->c);
    for (int64_t q = 0; q < p->c; q++) {
        p->s[q] = sc[q] / sqrtf(var[q] + n->attr->epsilon);
        p->t[q] = bb[q] - mean[q] * p->s[q];
    }
    k->run = bn_run;
    k->priv = p;
    k->free_priv = bn_free;
    k->name = "batchnorm";
    return SO_OK;
}

/* ---------------- pooling ---------------- */

typedef struct pool_plan {
    int64_t planes, H, W, Ho, Wo, Hp, Wp;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    int is_max;
    float *div;  /* avg: divisor per output position [Ho*Wo] */
    float *rdiv; /* avg 3x3 stride 1: 1 / div (0 for an empty window) */
} pool_plan;

static void pool_free(void *pp)
{
    pool_plan *p = pp;
    free(p->div);
    free(p->rdiv);
    free(p);
}

/* ev[i] = x[2i], od[i] = x[2i+1] for the n floats of x. */
void so_fast_deinterleave2(const float *restrict x, int64_t n, float *restrict ev, float *restrict od)
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
static void pool_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const pool_plan *p = priv;
    const float *X = in[0].data;
    float *Y = out[0].data;
    const int64_t Wp = p->Wp, Wo = p->Wo, Ho = p->Ho, W = p->W, per = 2 * Wp + 2;
    const int64_t c0 = SO_MIN(p->pw, Wp), c1 = SO_MAX(c0, SO_MIN(Wp, p->pw + W)); /* trow columns from the input */
    const float border = p->is_max ? -INFINITY : 0.f;
#pragma omp parallel for if (p->planes * Ho * Wo * p->kh * p->kw > PAR_MIN)
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
                so_fast_deinterleave2(trow, Wp, ev, od);
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

#ifdef __AVX2__
/* Max pooling 3x3 stride 2 (dilation 1, any padding, ceil mode) straight from the input,
   vectorised along W with the window in registers: per 8 outputs, the 16 (+2) input floats
   of each window row are loaded, combined over the (up to 3) in-range rows, and split by
   in-lane shuffles into the three column taps (outputs in lane order [0 1 4 5 | 2 3 6 7],
   one permute before the store). Vectors reaching past either edge use masked loads with
   -inf in the masked-off lanes; the last vector overlaps the previous one (Wo >= 8) or is
   stored masked (Wo < 8). Like pool_run, propagates NaN (max8n). */
static const int32_t mp_mask_tab[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

static inline __m256i mp_mask(int64_t q, int64_t W)
{
    __m256i idx = _mm256_add_epi32(_mm256_set1_epi32((int)q), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    return _mm256_and_si256(_mm256_cmpgt_epi32(idx, _mm256_set1_epi32(-1)), _mm256_cmpgt_epi32(_mm256_set1_epi32((int)W), idx));
}

/* max(a, b) where a NaN in either wins: _mm256_max_ps returns b when either is NaN, so a NaN
   in a is or'ed back in (all ones is a NaN). */
static inline __m256 max8n(__m256 a, __m256 b) { return _mm256_or_ps(_mm256_max_ps(a, b), _mm256_cmp_ps(a, a, _CMP_UNORD_Q)); }

/* m: the mask, read only for EDGE loads (NULL otherwise). */
static inline __attribute__((always_inline)) __m256 mp_ld(int EDGE, const float *p, const __m256i *m)
{
    if (!EDGE) return _mm256_loadu_ps(p);
    return _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), _mm256_maskload_ps(p, *m), _mm256_castsi256_ps(*m));
}

static inline __attribute__((always_inline)) void mp3s2_vec(int EDGE, const float *const *rows, int nr, int64_t b, const __m256i *mk,
                                                           float *y, int partial, int64_t n)
{
    __m256 l0 = mp_ld(EDGE, rows[0] + b, mk + 0), l1 = mp_ld(EDGE, rows[0] + b + 8, mk + 1);
    __m256 l2 = mp_ld(EDGE, rows[0] + b + 2, mk + 2), l3 = mp_ld(EDGE, rows[0] + b + 10, mk + 3);
    for (int r = 1; r < nr; r++) {
        l0 = max8n(l0, mp_ld(EDGE, rows[r] + b, mk + 0));
        l1 = max8n(l1, mp_ld(EDGE, rows[r] + b + 8, mk + 1));
        l2 = max8n(l2, mp_ld(EDGE, rows[r] + b + 2, mk + 2));
        l3 = max8n(l3, mp_ld(EDGE, rows[r] + b + 10, mk + 3));
    }
    __m256 v = max8n(max8n(_mm256_shuffle_ps(l0, l1, _MM_SHUFFLE(2, 0, 2, 0)), _mm256_shuffle_ps(l0, l1, _MM_SHUFFLE(3, 1, 3, 1))),
                             _mm256_shuffle_ps(l2, l3, _MM_SHUFFLE(2, 0, 2, 0)));
    v = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), 0xD8));
    if (!partial)
        _mm256_storeu_ps(y, v);
    else
        _mm256_maskstore_ps(y, _mm256_loadu_si256((const __m256i *)(mp_mask_tab + 8 - n)), v);
}

/* Runs plane(p, x, y) for every input plane x [H][W] and output plane y [Ho][Wo], planes split over the team. */
static void pool_planes(const pool_plan *p, const so_tensor *in, so_tensor *out, void (*plane)(const pool_plan *, const float *, float *))
{
    const float *X = in[0].data;
    float *Y = out[0].data;
#pragma omp parallel for schedule(static) if (p->planes * p->Ho * p->Wo * 9 > PAR_MIN)
    for (int64_t q = 0; q < p->planes; q++) plane(p, X + q * p->H * p->W, Y + q * p->Ho * p->Wo);
}

static void maxpool3s2_plane(const pool_plan *p, const float *x, float *y)
{
    const int64_t Wo = p->Wo, Ho = p->Ho, W = p->W, H = p->H;
    for (int64_t oh = 0; oh < Ho; oh++) {
        const float *rows[3];
        int nr = 0;
        for (int64_t i = 0; i < 3; i++) {
            int64_t ir = oh * 2 - p->ph + i;
            if (ir >= 0 && ir < H) rows[nr++] = x + ir * W;
        }
        float *yr = y + oh * Wo;
        if (!nr) {
            for (int64_t ow = 0; ow < Wo; ow++) yr[ow] = -INFINITY;
            continue;
        }
        for (int64_t ow = 0; ow < Wo; ow += 8) {
            if (ow + 8 > Wo && Wo >= 8) ow = Wo - 8;
            int64_t b = ow * 2 - p->pw;
            if (b >= 0 && b + 18 <= W) {
                mp3s2_vec(0, rows, nr, b, NULL, yr + ow, 0, 8);
            } else {
                __m256i mk[4] = {mp_mask(b, W), mp_mask(b + 8, W), mp_mask(b + 2, W), mp_mask(b + 10, W)};
                mp3s2_vec(1, rows, nr, b, mk, yr + ow, Wo < 8, Wo - ow);
            }
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
static int pad_avgpool_fuse(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
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

static void gap_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const gap_plan *p = priv;
    const float *X = in[0].data;
    float *Y = out[0].data;
#pragma omp parallel for if (p->planes * p->plane > PAR_MIN)
    for (int64_t q = 0; q < p->planes; q++) {
        const float *x = X + q * p->plane;
        float s = 0.f; /* lane-wise partial sums (was one serial add chain: 0.13 ms for SqueezeNet's 1000 x 13 x 13) */
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < p->plane; j++) s += x[j];
        Y[q] = s / (float)p->plane;
    }
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

/* ---------------- transpose ---------------- */

typedef struct tr_plan {
    int r;
    int64_t od[SO_MAX_RANK], is[SO_MAX_RANK]; /* output dims, input stride per output axis */
    int64_t outer, inner, esz;
} tr_plan;

static void tr_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const tr_plan *p = priv;
    int r = p->r;
    int64_t inner = p->inner, st = p->is[r - 1];
#pragma omp parallel for if (p->outer * inner > PAR_MIN)
    for (int64_t q = 0; q < p->outer; q++) {
        int64_t rem = q, off = 0;
        for (int d = r - 2; d >= 0; d--) {
            off += (rem % p->od[d]) * p->is[d];
            rem /= p->od[d];
        }
        if (p->esz == 4) {
            const float *x = (const float *)in[0].data + off;
            float *y = (float *)out[0].data + q * inner;
            if (st == 1) memcpy(y, x, sizeof *y * (size_t)inner);
            else
                for (int64_t j = 0; j < inner; j++) y[j] = x[j * st];
        } else {
            const int64_t *x = (const int64_t *)in[0].data + off;
            int64_t *y = (int64_t *)out[0].data + q * inner;
            for (int64_t j = 0; j < inner; j++) y[j] = x[j * st];
        }
    }
}

#ifdef __AVX2__
/* out[j*ost + i] = in[i*ist + j] for i, j < 8, in registers. */
static inline void tr8x8(const float *in, int64_t ist, float *out, int64_t ost)
{
    __m256 r[8];
    for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(in + i * ist);
    so_tr8x8(r);
    for (int i = 0; i < 8; i++) _mm256_storeu_ps(out + i * ost, r[i]);
}

/* Float transposes whose last output axis L is strided in the input while another output
   axis a is the input's unit-stride axis (BERT's K^T, perm (0,2,3,1)): per index of the
   other axes, the (a, L) plane in 8 x 8 register transposes (contiguous 8-float loads along
   a, stores along L), edges element by element. The row-copy kernel read one float per
   cache line there. */
typedef struct trt_plan {
    tr_plan t;
    int a;             /* the output axis with input stride 1 */
    int64_t osa;       /* its output stride */
    int64_t n2;        /* product of the other axes (not a, not L) */
} trt_plan;

static void trt_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const trt_plan *p = priv;
    const tr_plan *t = &p->t;
    const int r = t->r, a = p->a;
    const int64_t na = t->od[a], nl = t->od[r - 1], st = t->is[r - 1], osa = p->osa;
    const float *X = in[0].data;
    float *Y = out[0].data;
#pragma omp parallel for schedule(static) if (p->n2 * na * nl > PAR_MIN)
    for (int64_t q = 0; q < p->n2; q++) {
        int64_t rem = q, ioff = 0, ooff = 0, ost = nl;
        for (int d = r - 2; d >= 0; d--) { /* output strides grow from the last axis */
            if (d != a) {
                int64_t idx = rem % t->od[d];
                rem /= t->od[d];
                ioff += idx * t->is[d];
                ooff += idx * ost;
            }
            ost *= t->od[d];
        }
        const float *x = X + ioff;
        float *y = Y + ooff;
        int64_t i0 = 0;
        for (; i0 + 8 <= na; i0 += 8) {
            int64_t l0 = 0;
            for (; l0 + 8 <= nl; l0 += 8) tr8x8(x + l0 * st + i0, st, y + i0 * osa + l0, osa);
            for (int64_t i = i0; i < i0 + 8; i++)
                for (int64_t l = l0; l < nl; l++) y[i * osa + l] = x[l * st + i];
        }
        for (int64_t i = i0; i < na; i++)
            for (int64_t l = 0; l < nl; l++) y[i * osa + l] = x[l * st + i];
    }
}
#endif

static so_status select_transpose(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_node *n = &c->g->nodes[i];
    const so_shape *x = shape_of(c->g, n->in[0]);
    if (x->rank < 1) return SO_OK;
    tr_plan *p = so_xcalloc(1, sizeof *p);
    int64_t st[SO_MAX_RANK];
    int64_t acc = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        st[d] = acc;
        acc *= x->dim[d];
    }
    /* drop size-1 output axes */
    int r = 0;
    for (int d = 0; d < x->rank; d++) {
        int64_t pd = n->attr->n_ints ? n->attr->ints[d] : x->rank - 1 - d;
        if (x->dim[pd] == 1) continue;
        p->od[r] = x->dim[pd];
        p->is[r] = st[pd];
        r++;
    }
    if (r == 0) {
        p->od[0] = 1;
        p->is[0] = 1;
        r = 1;
    }
    p->r = r;
    p->inner = p->od[r - 1];
    p->outer = so_shape_numel(x) / p->inner;
    p->esz = x->dtype == SO_I64 ? 8 : 4;
    k->run = tr_run;
    k->priv = p;
    k->free_priv = free;
    k->name = "transpose";
#ifdef __AVX2__
    int a = -1;
    for (int d = 0; d + 1 < r; d++)
        if (p->is[d] == 1) a = d;
    if (p->esz == 4 && r >= 2 && p->is[r - 1] > 1 && a >= 0 && p->od[a] >= 8 && p->inner >= 8) {
        trt_plan *tp = so_xcalloc(1, sizeof *tp);
        tp->t = *p;
        tp->a = a;
        tp->osa = 1;
        for (int d = a + 1; d < r; d++) tp->osa *= p->od[d];
        tp->n2 = p->outer / p->od[a];
        free(p);
        k->run = trt_run;
        k->priv = tp;
        k->name = "transpose_tiled";
    }
#endif
    return SO_OK;
}

/* ---------------- concat / split ---------------- */

typedef struct cat_plan {
    int n;              /* inputs (concat) or outputs (split) */
    int64_t outer;      /* product of dims before axis */
    int64_t total;      /* bytes per outer row of the concatenated tensor */
    int64_t *chunk;     /* bytes per outer row of each part */
} cat_plan;

static void cat_free(void *pp)
{
    cat_plan *p = pp;
    free(p->chunk);
    free(p);
}

static void concat_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const cat_plan *p = priv;
    char *y = out[0].data;
    int64_t off = 0;
    for (int k = 0; k < p->n; k++) {
        const char *x = in[k].data;
        int64_t ck = p->chunk[k];
        if (p->outer == 1) memcpy(y + off, x, (size_t)ck);
        else
            for (int64_t o = 0; o < p->outer; o++) memcpy(y + o * p->total + off, x + o * ck, (size_t)ck);
        off += ck;
    }
}

static void split_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const cat_plan *p = priv;
    const char *x = in[0].data;
    int64_t off = 0;
    for (int k = 0; k < p->n; k++) {
        char *y = out[k].data;
        int64_t ck = p->chunk[k];
        for (int64_t o = 0; o < p->outer; o++) memcpy(y + o * ck, x + o * p->total + off, (size_t)ck);
        off += ck;
    }
}

static so_status select_concat_split(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_graph *g = c->g;
    const so_node *n = &g->nodes[i];
    int is_cat = n->op == SO_OP_CONCAT;
    const so_shape *whole = is_cat ? &n->out[0] : shape_of(g, n->in[0]);
    int axis = n->attr->axis;
    int64_t esz = whole->dtype == SO_I64 ? 8 : 4;
    cat_plan *p = so_xcalloc(1, sizeof *p);
    p->n = is_cat ? n->n_in : n->n_out;
    p->chunk = so_xcalloc((size_t)p->n, sizeof *p->chunk);
    p->outer = 1;
    int64_t inner = esz;
    for (int d = 0; d < whole->rank; d++) {
        if (d < axis) p->outer *= whole->dim[d];
        else if (d > axis) inner *= whole->dim[d];
    }
    p->total = whole->dim[axis] * inner;
    for (int q = 0; q < p->n; q++) {
        const so_shape *part = is_cat ? shape_of(g, n->in[q]) : &n->out[q];
        p->chunk[q] = part->dim[axis] * inner;
    }
    k->run = is_cat ? concat_run : split_run;
    k->priv = p;
    k->free_priv = cat_free;
    k->name = is_cat ? "concat" : "split";
    return SO_OK;
}

/* ---------------- pad (constant mode) ---------------- */

typedef struct pad_plan {
    int r;
    int64_t xd[SO_MAX_RANK], od[SO_MAX_RANK], begin[SO_MAX_RANK];
    int64_t nx, no;
    float value;
} pad_plan;

static void pad_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const pad_plan *p = priv;
    const float *x = in[0].data;
    float *y = out[0].data;
    for (int64_t j = 0; j < p->no; j++) y[j] = p->value;
    int r = p->r;
    int64_t inner = p->xd[r - 1], rows = p->nx / (inner ? inner : 1);
    int64_t ost[SO_MAX_RANK], acc = 1;
    for (int d = r - 1; d >= 0; d--) {
        ost[d] = acc;
        acc *= p->od[d];
    }
    for (int64_t q = 0; q < rows; q++) {
        int64_t rem = q, off = p->begin[r - 1];
        int skip = 0;
        for (int d = r - 2; d >= 0; d--) {
            int64_t idx = rem % p->xd[d] + p->begin[d];
            rem /= p->xd[d];
            if (idx < 0 || idx >= p->od[d]) skip = 1;
            off += idx * ost[d];
        }
        if (skip) continue;
        int64_t b = p->begin[r - 1], j0 = SO_MAX(0, -b), j1 = SO_MIN(inner, p->od[r - 1] - b); /* in-range inner run */
        if (j1 > j0) memcpy(y + off + j0, x + q * inner + j0, sizeof *y * (size_t)(j1 - j0));
    }
}

static so_status select_pad(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_node *n = &c->g->nodes[i];
    const so_shape *x = shape_of(c->g, n->in[0]);
    if (n->attr->mode != 0 || x->dtype != SO_F32 || x->rank < 1) return SO_OK;
    if (pad_avgpool_fuse(c, i, k)) return SO_OK;
    pad_plan *p = so_xcalloc(1, sizeof *p);
    p->r = x->rank;
    for (int d = 0; d < x->rank; d++) {
        p->xd[d] = x->dim[d];
        p->od[d] = n->out[0].dim[d];
        p->begin[d] = n->attr->ints[d];
    }
    p->nx = so_shape_numel(x);
    p->no = so_shape_numel(&n->out[0]);
    p->value = n->attr->value;
    k->run = pad_run;
    k->priv = p;
    k->free_priv = free;
    k->name = "pad_constant";
    return SO_OK;
}

/* ---------------- LSTM on sgemm ---------------- */

typedef struct lstm_plan {
    int64_t T, N, In, H, D;
    int dir;                  /* attr.direction */
    int has_b, has_h0, has_c0;
} lstm_plan;

static void lstm_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const lstm_plan *p = priv;
    const int64_t T = p->T, N = p->N, In = p->In, H = p->H, G4 = 4 * H;
    const float *X = in[0].data, *Wt = in[1].data, *Rt = in[2].data;
    const float *Bt = p->has_b ? in[3].data : NULL, *H0 = p->has_h0 ? in[5].data : NULL, *C0 = p->has_c0 ? in[6].data : NULL;
    float *Y = out[0].data;
    float *gates = scratch, *h = gates + T * N * G4, *c = h + N * H;
    for (int64_t d = 0; d < p->D; d++) {
        const int reverse = p->dir == 1 || d == 1;
        const float *W = Wt + d * G4 * In, *R = Rt + d * G4 * H;
        /* input projection for all steps: gates[T*N, 4H] = X W^T (+ Wb + Rb) */
        so_fast_sgemm(0, 1, T * N, G4, In, 1.f, X, In, W, In, 0.f, gates, G4);
        if (Bt) {
            const float *wb = Bt + d * 8 * H, *rb = wb + G4;
            for (int64_t r = 0; r < T * N; r++)
                for (int64_t j = 0; j < G4; j++) gates[r * G4 + j] += wb[j] + rb[j];
        }
        for (int64_t j = 0; j < N * H; j++) {
            h[j] = H0 ? H0[d * N * H + j] : 0.f;
            c[j] = C0 ? C0[d * N * H + j] : 0.f;
        }
        for (int64_t s = 0; s < T; s++) {
            const int64_t t = reverse ? T - 1 - s : s;
            float *gt = gates + t * N * G4;
            so_fast_sgemm(0, 1, N, G4, H, 1.f, h, H, R, H, 1.f, gt, G4);
            for (int64_t b = 0; b < N; b++) {
                const float *g = gt + b * G4;
                float *hb = h + b * H, *cb = c + b * H;
                float *yb = Y + ((t * p->D + d) * N + b) * H;
#pragma omp simd
                for (int64_t j = 0; j < H; j++) { /* ONNX gate order i, o, f, c */
                    float gi = vsigmoidf(g[j]), go = vsigmoidf(g[H + j]), gf = vsigmoidf(g[2 * H + j]), gc = vtanhf(g[3 * H + j]);
                    float cn = gf * cb[j] + gi * gc;
                    cb[j] = cn;
                    hb[j] = go * vtanhf(cn);
                    yb[j] = hb[j];
                }
            }
        }
        for (int64_t j = 0; j < N * H; j++) {
            if (out[1].data) ((float *)out[1].data)[d * N * H + j] = h[j];
            if (out[2].data) ((float *)out[2].data)[d * N * H + j] = c[j];
        }
    }
}

static so_status select_lstm(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_graph *g = c->g;
    const so_node *n = &g->nodes[i];
    const so_shape *x = shape_of(g, n->in[0]), *r = shape_of(g, n->in[2]);
    int present[8] = {0};
    for (int q = 0; q < n->n_in && q < 8; q++) present[q] = n->in[q].node >= 0;
    if (present[4]) { /* sequence_lens: only all-full lengths (a weight) are handled here */
        const so_node *sl = &g->nodes[n->in[4].node];
        if (sl->op != SO_OP_WEIGHT) return SO_OK;
        const so_weight *w = &g->model->weights[sl->ref];
        int64_t cnt = so_shape_numel(&w->shape);
        for (int64_t j = 0; j < cnt; j++) {
            double v = w->shape.dtype == SO_I64 ? (double)((const int64_t *)w->data)[j] : (double)((const float *)w->data)[j];
            if (v < (double)x->dim[0]) return SO_OK;
        }
    }
    if (present[7] || n->n_out != 3) return SO_OK; /* peepholes: reference */
    lstm_plan *p = so_xcalloc(1, sizeof *p);
    p->T = x->dim[0];
    p->N = x->dim[1];
    p->In = x->dim[2];
    p->H = r->dim[2];
    p->dir = n->attr->direction;
    p->D = p->dir == 2 ? 2 : 1;
    p->has_b = present[3];
    p->has_h0 = present[5];
    p->has_c0 = present[6];
    k->scratch_bytes = sizeof(float) * (size_t)(p->T * p->N * 4 * p->H + 2 * p->N * p->H);
    k->run = lstm_run;
    k->priv = p;
    k->free_priv = free;
    k->name = "lstm_sgemm";
    return SO_OK;
}

/* ---------------- reduce mean ---------------- */

typedef struct rm_plan {
    int64_t outer, red, inner;
} rm_plan;

/* Mean over a contiguous block of axes viewed as [outer, red, inner]. */
static void rm_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const rm_plan *p = priv;
    const float *X = in[0].data;
    float *Y = out[0].data;
    const int64_t R = p->red, Inn = p->inner;
    const float inv = 1.f / (float)R;
#pragma omp parallel for if (p->outer * R * Inn > PAR_MIN)
    for (int64_t o = 0; o < p->outer; o++) {
        const float *x = X + o * R * Inn;
        float *y = Y + o * Inn;
        if (Inn == 1) {
            float acc = 0.f;
#pragma omp simd reduction(+ : acc)
            for (int64_t r = 0; r < R; r++) acc += x[r];
            y[0] = acc * inv;
            continue;
        }
        for (int64_t i = 0; i < Inn; i++) y[i] = 0.f;
        for (int64_t r = 0; r < R; r++) {
            const float *xr = x + r * Inn;
#pragma omp simd
            for (int64_t i = 0; i < Inn; i++) y[i] += xr[i];
        }
#pragma omp simd
        for (int64_t i = 0; i < Inn; i++) y[i] *= inv;
    }
}

static so_status select_reducemean(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_node *n = &c->g->nodes[i];
    const so_shape *x = shape_of(c->g, n->in[0]);
    const so_attr *a = n->attr;
    if (x->dtype != SO_F32 || x->rank < 1) return SO_OK;
    int lo = a->n_ints ? (int)a->ints[0] : 0, hi = a->n_ints ? (int)a->ints[a->n_ints - 1] : x->rank - 1;
    if (a->n_ints && hi - lo + 1 != a->n_ints) return SO_OK; /* not contiguous: reference */
    rm_plan *p = so_xcalloc(1, sizeof *p);
    p->outer = p->red = p->inner = 1;
    for (int d = 0; d < x->rank; d++) {
        if (d < lo) p->outer *= x->dim[d];
        else if (d > hi) p->inner *= x->dim[d];
        else p->red *= x->dim[d];
    }
    if (p->red == 0) {
        free(p);
        return SO_OK;
    }
    k->run = rm_run;
    k->priv = p;
    k->free_priv = free;
    k->name = "reducemean";
    return SO_OK;
}

/* ---------------- dispatch ---------------- */

so_status so_fast_select(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    memset(k, 0, sizeof *k);
    const so_node *n = &c->g->nodes[i];
    for (int32_t q = 0; q < n->n_out; q++)
        if (n->out[q].rank < 0) return SO_OK;
    switch (n->op) {
    case SO_OP_CONV: return so_conv_select(c, i, k);
    case SO_OP_MATMUL: return select_matmul(c, i, k);
    case SO_OP_GEMM: return select_gemm(c, i, k);
    case SO_OP_ADD:
    case SO_OP_SUB:
    case SO_OP_MUL:
    case SO_OP_POW: return select_binary(c, i, k);
    case SO_OP_DIV: return select_gelu(c, i, k) ? SO_OK : select_binary(c, i, k);
    case SO_OP_RELU:
    case SO_OP_SIGMOID:
    case SO_OP_TANH:
    case SO_OP_ERF:
    case SO_OP_SQRT:
    case SO_OP_EXP:
    case SO_OP_LOG:
    case SO_OP_NEG:
    case SO_OP_RECIPROCAL:
    case SO_OP_HARDSIGMOID:
    case SO_OP_HARDSWISH:
    case SO_OP_LEAKYRELU:
    case SO_OP_CLIP: return select_unary(c, i, k);
    case SO_OP_SOFTMAX: return select_softmax(c, i, k);
    case SO_OP_LAYERNORM: return select_layernorm(c, i, k);
    case SO_OP_BATCHNORM: return select_batchnorm(c, i, k);
    case SO_OP_MAXPOOL:
    case SO_OP_AVGPOOL: return select_pool(c, i, k);
    case SO_OP_GLOBALAVGPOOL: return select_gap(c, i, k);
    case SO_OP_TRANSPOSE: return select_transpose(c, i, k);
    case SO_OP_CONCAT:
    case SO_OP_SPLIT: return select_concat_split(c, i, k);
    case SO_OP_PAD: return select_pad(c, i, k);
    case SO_OP_LSTM: return select_lstm(c, i, k);
    case SO_OP_REDUCEMEAN: return select_reducemean(c, i, k);
    case SO_OP_RESIZE: return select_resize(c, i, k);
    default: return SO_OK;
    }
}
