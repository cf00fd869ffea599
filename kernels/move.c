/* move.c - data movement kernels: Transpose (8x8 register tiles with AVX2), Concat, Split, constant Pad, Resize (taps tabulated at load). */
#include "kset_names.h"

#include "move.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <omp.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "fuse.h"
#include "kpriv.h"
#include "nchwc.h"
#include "pool.h"
#include "vmath.h"

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

static void rs_rows(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const rs_plan *p = priv;
    const float *X = in[0].data;
    float *Y = out[0].data;
#pragma omp for nowait
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

static void rs_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const rs_plan *p = priv;
    SO_PAR_RUN(p->planes * p->Ho * p->Wo > SO_PAR_MIN, , rs_rows(priv, in, out, scratch));
}

static so_status select_resize(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_node *n = &c->g->nodes[i];
    const so_shape *x = shape_of(c->g, n->in[0]), *o = &n->out[0];
    if (x->dtype != SO_F32 || x->rank != 4 || !so_ref_resize_two_tap(n->attr)) return SO_OK;
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

/* ---------------- transpose ---------------- */

typedef struct tr_plan {
    int r;
    int64_t od[SO_MAX_RANK], is[SO_MAX_RANK]; /* output dims, input stride per output axis */
    int64_t outer, inner, esz;
} tr_plan;

static void tr_rows(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const tr_plan *p = priv;
    int r = p->r;
    int64_t inner = p->inner, st = p->is[r - 1];
#pragma omp for nowait
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

static void tr_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const tr_plan *p = priv;
    SO_PAR_RUN(p->outer * p->inner > SO_PAR_MIN, , tr_rows(priv, in, out, scratch));
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

static void trt_rows(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const trt_plan *p = priv;
    const tr_plan *t = &p->t;
    const int r = t->r, a = p->a;
    const int64_t na = t->od[a], nl = t->od[r - 1], st = t->is[r - 1], osa = p->osa;
    const float *X = in[0].data;
    float *Y = out[0].data;
#pragma omp for schedule(static) nowait
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

static void trt_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const trt_plan *p = priv;
    SO_PAR_RUN(p->n2 * p->t.od[p->a] * p->t.od[p->t.r - 1] > SO_PAR_MIN, , trt_rows(priv, in, out, scratch));
}
#endif

#ifndef SO_NCHWC_LEVEL
#ifdef SO_KSET_LEVEL
#define SO_NCHWC_LEVEL SO_KSET_LEVEL /* as kernels/fast.c: this kernel set's level picks the blocked kernels */
#else
#define SO_NCHWC_LEVEL SO_ISA_SCALAR
#endif
#endif

static so_status select_transpose(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_node *n = &c->g->nodes[i];
    { /* Transpose (0,3,1,2) [-> Mul] -> NCHWC_IN [-> Add] (kernels/fuse.c so_fuse_nhwc): one blocked step */
        so_fuse f;
        if (so_fuse_nhwc(c->g, c->user, c->absorbed, i, &f)) {
            so_status st = so_nchwc_select(c, i, k, SO_NCHWC_LEVEL);
            if (st != SO_OK || k->run) return st;
            memset(k, 0, sizeof *k);
        }
    }
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
    /* merge output axes that are adjacent and in order in the input too (ShuffleNet's channel
       shuffle [1,2,C/2,H,W] perm (0,2,1,3,4): H and W become one run of H*W floats per copy) */
    int m = 0;
    for (int d = 1; d < r; d++)
        if (p->is[m] == p->is[d] * p->od[d]) {
            p->od[m] *= p->od[d];
            p->is[m] = p->is[d];
        } else {
            m++;
            p->od[m] = p->od[d];
            p->is[m] = p->is[d];
        }
    r = m + 1;
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
    if (so_pool_fuse_pad(c, i, k)) return SO_OK;
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

/* ---------------- slice: one contiguous run ---------------- */
/* A Slice whose output is one contiguous run of its input (so_fuse_slice_run) that the executor could not make a
   view (ShuffleNet's first channel half, written straight into the next block's zero-copy Concat): one memcpy. */
typedef struct sl_plan {
    size_t off, bytes;
} sl_plan;

static void slice_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const sl_plan *p = priv;
    memcpy(out[0].data, (const char *)in[0].data + p->off, p->bytes);
}

static so_status select_slice(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_node *n = &c->g->nodes[i];
    const so_shape *x = shape_of(c->g, n->in[0]);
    const int64_t off = so_fuse_slice_run(n, x);
    if (off < 0) return SO_OK;
    sl_plan *p = so_xcalloc(1, sizeof *p);
    p->off = (size_t)off;
    p->bytes = (size_t)so_shape_numel(&n->out[0]) * (x->dtype == SO_I64 ? 8 : 4);
    k->run = slice_run;
    k->priv = p;
    k->free_priv = free;
    k->name = "slice_copy";
    return SO_OK;
}

so_status so_move_select(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    switch (c->g->nodes[i].op) {
    case SO_OP_SLICE: return select_slice(c, i, k);
    case SO_OP_TRANSPOSE: return select_transpose(c, i, k);
    case SO_OP_CONCAT:
    case SO_OP_SPLIT: return select_concat_split(c, i, k);
    case SO_OP_PAD: return select_pad(c, i, k);
    case SO_OP_RESIZE: return select_resize(c, i, k);
    default: return so_errorf("so_move_select: no case for %s (kernels/fast.c sends it here)", so_ops[c->g->nodes[i].op].name);
    }
}
