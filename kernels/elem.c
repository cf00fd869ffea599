/* elem.c - element-wise kernels: binary with broadcasting, unary (activations, exp/log/sqrt...), the fused erf-form GELU. */
#include "kset_names.h"

#include "elem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <omp.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "epi.h"
#include "kpriv.h"
#include "vmath.h"

/* ---------------- element-wise binary with broadcasting ---------------- */

typedef struct bin_plan {
    so_op op;
    int act;
    float lo, hi;
    int nd;               /* collapsed rank */
    int64_t dim[SO_MAX_RANK], sa[SO_MAX_RANK], sb[SO_MAX_RANK];
    int64_t outer, inner, total;
    int rows_b; /* -1, or which input (0 or 1) is the [X][1][inner] one of bin_rows' shape (Add / Mul, nd == 3) */
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

/* o[m][j] = a[m][j] op b[j] for m < rows, j < n: one b row reused down the rows (Add / Mul only). */
#define ROWS_LOOP(N, EXPR)                                                                                             \
    for (int64_t m = 0; m < rows; m++, a += (N), o += (N))                                                             \
        _Pragma("omp simd") for (int64_t j = 0; j < (N); j++) o[j] = a[j] EXPR b[j]
static void bin_rows(so_op op, const float *restrict a, const float *restrict b, float *restrict o, int64_t rows, int64_t n)
{
    if (op == SO_OP_MUL) {
        if (n == 16) ROWS_LOOP(16, *);
        else if (n == 8) ROWS_LOOP(8, *);
        else ROWS_LOOP(n, *);
    } else {
        if (n == 16) ROWS_LOOP(16, +);
        else if (n == 8) ROWS_LOOP(8, +);
        else ROWS_LOOP(n, +);
    }
}
#undef ROWS_LOOP

/* bin_run's loops, orphaned worksharing loops (kpriv.h, SO_PAR_RUN); a single row (outer = 1) is never run by a team. */
static void bin_all(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const bin_plan *p = priv;
    const float *A = in[0].data, *B = in[1].data;
    float *O = out[0].data;
    int nd = p->nd;
    int64_t inner = p->inner;
    if (p->rows_b >= 0) { /* [X][M][inner] op [X][1][inner] (a blocked per-channel scale): b rows reused down M */
        if (p->rows_b == 0) {
            const float *t = A;
            A = B, B = t;
        }
        const int64_t X = p->dim[0], M = p->dim[1];
#pragma omp for nowait
        for (int64_t x = 0; x < X; x++) {
            bin_rows(p->op, A + x * M * inner, B + x * inner, O + x * M * inner, M, inner);
            if (p->act) so_epi_act(p->act, p->lo, p->hi, O + x * M * inner, M * inner);
        }
        return;
    }
    if (p->outer == 1) {
        bin_inner(p->op, A, p->sa[nd - 1], B, p->sb[nd - 1], O, inner);
        if (p->act) so_epi_act(p->act, p->lo, p->hi, O, inner);
        return;
    }
#pragma omp for nowait
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
        if (p->act) so_epi_act(p->act, p->lo, p->hi, o, inner);
    }
}

static void bin_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const bin_plan *p = priv;
    SO_PAR_RUN(p->total > SO_PAR_MIN && (p->rows_b >= 0 || p->outer > 1), , bin_all(priv, in, out, scratch));
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
    p->rows_b = -1;
    if (nd == 3 && p->inner <= 64 && (p->op == SO_OP_MUL || p->op == SO_OP_ADD)) {
        const int64_t in = p->inner, M = p->dim[1];
        if (p->sa[2] == 1 && p->sa[1] == in && p->sa[0] == M * in && p->sb[2] == 1 && p->sb[1] == 0 && p->sb[0] == in) p->rows_b = 1;
        if (p->sb[2] == 1 && p->sb[1] == in && p->sb[0] == M * in && p->sa[2] == 1 && p->sa[1] == 0 && p->sa[0] == in) p->rows_b = 0;
    }
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
    case SO_OP_SIGMOID: so_vsigmoid_row(x, y, n, 0); break;
    case SO_OP_TANH: _Pragma("omp simd") for (int64_t j = 0; j < n; j++) y[j] = vtanhf(x[j]); break;
    case SO_OP_ERF: so_verf_row(x, y, n); break;
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
        const __m256 zero = _mm256_setzero_ps(), al = _mm256_set1_ps(p->alpha);
        for (; j + 8 <= n; j += 8) {
            __m256 v = _mm256_loadu_ps(x + j), r;
            if (p->op == SO_OP_HARDSWISH)
                r = so_vhardswish8(v);
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

/* un_run above SO_PAR_MIN elements: chunks of 8192 over the team (an orphaned worksharing loop, kpriv.h) */
static void un_chunks(const un_plan *p, const float *x, float *y)
{
    const int64_t CH = 8192;
    int64_t nch = (p->n + CH - 1) / CH;
#pragma omp for nowait
    for (int64_t t = 0; t < nch; t++) {
        int64_t s = t * CH, e = SO_MIN(p->n, s + CH);
        un_chunk(p, x + s, y + s, e - s);
    }
}

static void un_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const un_plan *p = priv;
    const float *x = in[0].data;
    float *y = out[0].data;
    if (p->n <= SO_PAR_MIN) {
        un_chunk(p, x, y, p->n);
        return;
    }
    SO_PAR_RUN(1, , un_chunks(p, x, y));
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

/* ---------------- GELU, erf form: x * (erf(x / c) + 1) * 0.5 ---------------- */
/* Div(x, c) -> Erf -> Add(., a) -> Mul(x, .) -> Mul(., h) with scalar weights c, a, h (BERT's and ConvNeXt's
   exported GELU) in one pass instead of five: Y = X * (erf(X * (1/c)) + a) * h, erf by vmath.h's polynomial
   (so_verf16 / so_verf8 / verff: the same bits at AVX2 and AVX-512, tails included). X * (1/c) instead of
   X / c: at most 1 ulp apart, erf moves by < 1e-7 (the divide was ~10 % of the pass with the polynomial erf:
   microbenchmark, Intel Xeon model 207, load ~4). Session 17: the polynomial erf (no divide, no exp) in place
   of the Abramowitz-Stegun form with exp and a refined reciprocal: 1.07 -> 0.51 ns per element at AVX-512,
   1.62 -> 0.83 at AVX2, in cache, 1 thread (bench/gelu_ab.sh: the kernel and ConvNeXt-T against an older binary). */

typedef struct gelu_plan {
    int64_t n;
    float c, a, h;
    int divide; /* c is subnormal: 1/c overflows where X / c does not, so the rare plain loop with the divide */
} gelu_plan;

static void gelu_blocks(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const gelu_plan *p = priv;
    const float *X = in[0].data;
    float *Y = out[0].data;
    const float rc = 1.f / p->c, a = p->a, h = p->h;
    const int64_t n = p->n, nb = (n + 4095) / 4096;
#pragma omp for schedule(static) nowait
    for (int64_t b = 0; b < nb; b++) {
        const int64_t j0 = b * 4096, j1 = j0 + 4096 < n ? j0 + 4096 : n;
        int64_t j = j0;
        if (p->divide) {
            for (; j < j1; j++) Y[j] = X[j] * (verff(X[j] / p->c) + a) * h;
            continue;
        }
#if defined(__AVX512F__)
        const __m512 wc = _mm512_set1_ps(rc), wa = _mm512_set1_ps(a), wh = _mm512_set1_ps(h);
        for (; j + 16 <= j1; j += 16) {
            const __m512 x = _mm512_loadu_ps(X + j);
            _mm512_storeu_ps(Y + j, _mm512_mul_ps(_mm512_mul_ps(x, _mm512_add_ps(so_verf16(_mm512_mul_ps(x, wc)), wa)), wh));
        }
#elif defined(__AVX2__)
        const __m256 vc = _mm256_set1_ps(rc), va = _mm256_set1_ps(a), vh = _mm256_set1_ps(h);
        for (; j + 8 <= j1; j += 8) {
            const __m256 x = _mm256_loadu_ps(X + j);
            _mm256_storeu_ps(Y + j, _mm256_mul_ps(_mm256_mul_ps(x, _mm256_add_ps(so_verf8(_mm256_mul_ps(x, vc)), va)), vh));
        }
#endif
#pragma omp simd
        for (int64_t q = j; q < j1; q++) Y[q] = X[q] * (verff(X[q] * rc) + a) * h;
    }
}

static void gelu_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const gelu_plan *p = priv;
    SO_PAR_RUN(p->n > SO_PAR_MIN, , gelu_blocks(priv, in, out, scratch));
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
    p->divide = fpclassify(cv) == FP_SUBNORMAL;
    k->n_fused = 4;
    memcpy(k->fused, u, sizeof(int32_t) * 4);
    k->run = gelu_run;
    k->priv = p;
    k->free_priv = free;
    k->name = "gelu_erf";
    return 1;
}


so_status so_elem_select(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    switch (c->g->nodes[i].op) {
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
    default: return so_errorf("so_elem_select: no case for %s (kernels/fast.c sends it here)", so_ops[c->g->nodes[i].op].name);
    }
}
