/* norm.c - normalisation and reduction kernels: Softmax, LayerNorm, BatchNorm (when not fused into a conv), ReduceMean and ReduceSum over contiguous axes. */
#include "kset_names.h"

#include "norm.h"

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

/* ---------------- softmax ---------------- */

typedef struct sm_plan {
    int64_t outer, len, inner;
} sm_plan;

static void sm_rows(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const sm_plan *p = priv;
    const float *X = in[0].data;
    float *Y = out[0].data;
    int64_t L = p->len, Inn = p->inner;
#pragma omp for nowait
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

static void sm_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const sm_plan *p = priv;
    SO_PAR_RUN(p->outer * p->len * p->inner > SO_PAR_MIN, , sm_rows(priv, in, out, scratch));
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

static void ln_rows(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const ln_plan *p = priv;
    const float *X = in[0].data, *S = in[1].data, *Bi = p->has_bias ? in[2].data : NULL;
    float *Y = out[0].data;
    int64_t D = p->d;
#pragma omp for nowait
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

static void ln_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const ln_plan *p = priv;
    SO_PAR_RUN(p->rows * p->d > SO_PAR_MIN, , ln_rows(priv, in, out, scratch));
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

static void bn_planes(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const bn_plan *p = priv;
    const float *X = in[0].data;
    float *Y = out[0].data;
#pragma omp for nowait
    for (int64_t q = 0; q < p->n * p->c; q++) {
        int64_t ch = q % p->c;
        const float *x = X + q * p->plane;
        float *y = Y + q * p->plane;
        float s = p->s[ch], t = p->t[ch];
#pragma omp simd
        for (int64_t j = 0; j < p->plane; j++) y[j] = x[j] * s + t;
    }
}

static void bn_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const bn_plan *p = priv;
    SO_PAR_RUN(p->n * p->c * p->plane > SO_PAR_MIN, , bn_planes(priv, in, out, scratch));
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

/* ---------------- reduce mean / sum ---------------- */

typedef struct rm_plan {
    int64_t outer, red, inner;
    float inv; /* 1 / red for ReduceMean, 1 for ReduceSum */
} rm_plan;

/* Mean (ReduceMean) or sum (ReduceSum) over a contiguous block of axes viewed as [outer, red, inner]. */
static void rm_rows(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const rm_plan *p = priv;
    const float *X = in[0].data;
    float *Y = out[0].data;
    const int64_t R = p->red, Inn = p->inner;
    const float inv = p->inv;
#pragma omp for nowait
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

static void rm_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const rm_plan *p = priv;
    SO_PAR_RUN(p->outer * p->red * p->inner > SO_PAR_MIN, , rm_rows(priv, in, out, scratch));
}

static so_status select_reduce(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
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
    p->inv = n->op == SO_OP_REDUCESUM ? 1.f : 1.f / (float)p->red;
    k->run = rm_run;
    k->priv = p;
    k->free_priv = free;
    k->name = n->op == SO_OP_REDUCESUM ? "reducesum" : "reducemean";
    return SO_OK;
}


so_status so_norm_select(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    switch (c->g->nodes[i].op) {
    case SO_OP_SOFTMAX: return select_softmax(c, i, k);
    case SO_OP_LAYERNORM: return select_layernorm(c, i, k);
    case SO_OP_BATCHNORM: return select_batchnorm(c, i, k);
    case SO_OP_REDUCEMEAN:
    case SO_OP_REDUCESUM: return select_reduce(c, i, k);
    default: return so_errorf("so_norm_select: no case for %s (kernels/fast.c sends it here)", so_ops[c->g->nodes[i].op].name);
    }
}
