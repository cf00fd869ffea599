/* rule_shape.c - the rule language's symbolic shapes: rule dims as a dim algebra, one shape rule per
   operator (ops.def -> src/shape.c so_dims_*), and the rule check (arity, references, shapes of both sides). */
#include "rule_shape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* ---------------- symbolic shapes ---------------- */

static so_dimx dx_const(int64_t c)
{
    so_dimx d;
    memset(&d, 0, sizeof d);
    d.c = (int32_t)c;
    return d;
}

/* a + b; returns 0 if the result has too many symbols. */
static int dx_add(const so_dimx *a, const so_dimx *b, so_dimx *out)
{
    if (a->n_sym + b->n_sym > SO_DIMX_MAX_SYM) return 0;
    so_dimx r = *a;
    if (__builtin_add_overflow(r.c, b->c, &r.c)) return 0;
    for (int i = 0; i < b->n_sym; i++) r.sym[r.n_sym++] = b->sym[i];
    so_dimx_norm(&r);
    *out = r;
    return 1;
}

static int dx_is(const so_dimx *d, int64_t c) { return d->n_sym == 0 && d->c == c; }
static int dx_div(const so_dimx *d, int64_t b, so_dimx *q);
static int dx_mul(const so_dimx *d, int64_t b, so_dimx *p);
static int dx_window(const so_dimx *h, int64_t k, int64_t st, int64_t pb, int64_t pe, int64_t dil, int ceil, so_dimx *out);

/* The rule language's dims in the dim algebra (src/shape.h): the shape rules so_dims_* are shape.c's;
   dim_sym's context is the rule (its symbol names print). */
static const so_dimx dimx_one = {1, 0, {0}};
static int dimx_is_one(const void *cx, const void *d)
{
    (void)cx;
    return dx_is(d, 1);
}
static int dimx_eq(const void *cx, const void *a, const void *b)
{
    (void)cx;
    return so_dimx_eq(a, b);
}
/* a symbolic dim counts as >= k (its symbols are >= 1; instantiation checks the numbers) */
static int dimx_at_least(const void *cx, const void *d, int64_t k)
{
    (void)cx;
    const so_dimx *x = d;
    return x->n_sym > 0 || x->c >= k;
}
static int dimx_add(const void *cx, const void *a, const void *b, void *out)
{
    (void)cx;
    return dx_add(a, b, out);
}
static int dimx_mul(const void *cx, const void *a, int64_t k, void *out)
{
    (void)cx;
    return dx_mul(a, k, out);
}
/* a product of dims is linear only when one side is a number (>= 1) */
static int dimx_muld(const void *cx, const void *a, const void *b, void *out)
{
    (void)cx;
    const so_dimx *x = a, *y = b;
    if (x->n_sym == 0) return dx_mul(y, x->c, out);
    if (y->n_sym == 0) return dx_mul(x, y->c, out);
    return 0;
}
static int dimx_div(const void *cx, const void *a, int64_t k, int round_up, void *out)
{
    (void)cx;
    const so_dimx *d = a;
    if (d->n_sym == 0 && !round_up) { /* dx_div rounds a constant up */
        if (k < 1 || d->c < 0) return 0;
        *(so_dimx *)out = dx_const(d->c / k);
        return 1;
    }
    return dx_div(d, k, out);
}
static int dimx_as_const(const void *cx, const void *d, int64_t *v)
{
    (void)cx;
    *v = ((const so_dimx *)d)->c;
    return ((const so_dimx *)d)->n_sym == 0;
}
static int dimx_of_const(const void *cx, int64_t v, void *out)
{
    (void)cx;
    if (v < -SO_RULE_INT_MAX || v > SO_RULE_INT_MAX) return 0;
    *(so_dimx *)out = dx_const(v);
    return 1;
}
static int dimx_window(const void *cx, const void *h, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, int ceil_mode, void *out)
{
    (void)cx;
    return dx_window(h, k, s, pb, pe, d, ceil_mode, out);
}
static void dimx_print(const void *cx, const void *d, char *buf, size_t n)
{
    so_sbuf b = {0};
    if (!cx) { /* no rule to name the symbols: s<index> */
        const so_dimx *x = d;
        for (int i = 0; i < x->n_sym; i++) so_sbuf_printf(&b, "%ss%d", i ? "+" : "", (int)x->sym[i]);
        if (x->c || !x->n_sym) so_sbuf_printf(&b, x->n_sym && x->c > 0 ? "+%d" : "%d", (int)x->c);
    } else {
        so_dimx_print(&b, d, cx);
    }
    snprintf(buf, n, "%s", b.s ? b.s : "");
    free(b.s);
}
static const so_dim_alg dim_sym = {sizeof(so_dimx), &dimx_one, NULL, dimx_is_one, dimx_eq, dimx_at_least, dimx_add, dimx_mul,
                                   dimx_muld, dimx_div, dimx_as_const, dimx_of_const, dimx_window, NULL, dimx_print, 0};

/* ---------------- a rule node's shapes, one rule per operator (ops.def) ----------------
   sym_<op> maps rule node n onto its shape rule (src/shape.c so_dims_*) over any dim algebra A: in[0..n_in) the
   inputs' dims (every rank known), ndx the node's own dims (n->dx in A: split sizes, nchwc_out's (b, C), the
   constants' shapes, expand and reshape targets), out[0..n_out) with dim storage set by the caller. It writes
   the outputs or fails with a message. The rule checker runs it over dim_sym, the verifier over solver terms
   (verifier/encode.c): so_rule_node_dims. */

static so_status sym_unary(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)n, (void)ndx;
    return so_dims_same(A, &in[0], out);
}

static so_status sym_binary(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)n, (void)ndx;
    return so_dims_bcast(A, &in[0], &in[1], out);
}

/* Blocked layout in rules (issue 15): generated rules use exact blocking, channels = b * k.
   ceil(d / b) as a symbolic dim: a concrete d (hand-written rules may pad), or the constant and
   every symbol's multiplicity divisible by b; 0 if it is neither. */
static int dx_div(const so_dimx *d, int64_t b, so_dimx *q)
{
    memset(q, 0, sizeof *q);
    if (b >= 1 && d->n_sym == 0) {
        q->c = (int32_t)((d->c + b - 1) / b);
        return q->c > 0;
    }
    if (b < 1 || d->c % b) return 0;
    q->c = (int32_t)(d->c / b);
    for (int i = 0; i < d->n_sym;) {
        int j = i;
        while (j < d->n_sym && d->sym[j] == d->sym[i]) j++;
        if ((j - i) % b) return 0;
        for (int k = 0; k < (j - i) / b; k++) q->sym[q->n_sym++] = d->sym[i];
        i = j;
    }
    return q->n_sym > 0 || q->c > 0;
}

/* d * b as a symbolic dim; 0 if too many symbols. */
static int dx_mul(const so_dimx *d, int64_t b, so_dimx *p)
{
    memset(p, 0, sizeof *p);
    if (b < 1 || d->n_sym * b > SO_DIMX_MAX_SYM) return 0;
    p->c = (int32_t)(d->c * b);
    for (int i = 0; i < d->n_sym; i++)
        for (int k = 0; k < b; k++) p->sym[p->n_sym++] = d->sym[i];
    so_dimx_norm(p);
    return 1;
}

/* nchwc_in / nchwc_out (shape.h so_dims_nchwc_*): generated rules use exact blocking, channels = b * k;
   nchwc_out's (b, C) are the node's dims (ints=b,C may name a symbol) */
static so_status sym_nchwc_in(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_nchwc_in(A, &n->attr, &in[0], out);
}

static so_status sym_nchwc_out(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)n;
    return so_dims_nchwc_out(A, ndx, &in[0], out);
}

/* Output plane dim of a window (kernel k, stride st, pads pb + pe, dilation dil, ceil_mode) over h.
   Concrete h: the number (so_window_out, src/shape.h). Symbolic h, stride 1, floor: h + shift. Otherwise (a stride or ceil_mode
   on a symbolic dim, or a dim derived so before) floor/ceil((h + shift) / st) + 1 is no sum of
   symbols: the result is an opaque derived dim, a negative constant hashed from (h, the window), so
   that both sides of a rule derive equal dims from equal windows over equal dims (no real dim is
   negative; a dim is compared, never evaluated, in rules). Returns 0 when the window cannot fit. */
static int dx_window(const so_dimx *h, int64_t k, int64_t st, int64_t pb, int64_t pe, int64_t dil, int ceil, so_dimx *out)
{
    int64_t shift = pb + pe - dil * (k - 1); /* out = (h + shift - 1) / st + 1 */
    if (h->n_sym == 0 && h->c > 0) {
        int64_t o = so_window_out(h->c, k, st, pb, pe, dil, ceil);
        if (o < 1) return 0;
        *out = dx_const(o);
        return 1;
    }
    if (h->n_sym > 0 && st == 1 && !ceil) {
        if (shift < -SO_RULE_INT_MAX || shift > SO_RULE_INT_MAX) return 0;
        *out = *h;
        out->c += (int32_t)shift;
        return 1;
    }
    int64_t key[5] = {shift, st, ceil, h->c, h->n_sym};
    uint64_t x = XXH3_64bits_withSeed(h->sym, (size_t)h->n_sym, XXH3_64bits(key, sizeof key));
    *out = dx_const(-1 - (int64_t)(x & 0x3fffffff));
    return 1;
}

/* conv_nchwc / pools on a blocked value (shape.h so_dims_*_nchwc) */
/* A group=dw conv's shapes are those of the dense conv of the same channel count: kernel [C,1,kh,kw] read as
   [C,C,kh,kw], group 1 (w, at); its input's C channels must equal the kernel's C (checked by the shape rule). */
/* the dense kernel's dims land in buf (room for 4 dims of A) */
#define DW_BUF (4 * 64)
static so_status dw_dense(const so_dim_alg *A, const so_rnode *n, const so_dims *in, so_dims *w, char *buf, so_attr *at)
{
    *w = in[1];
    *at = n->attr;
    if (at->group != SO_RULE_GROUP_DW) return SO_OK;
    int64_t d1 = 0;
    const int known = w->rank == 4 && A->as_const(A->cx, (const char *)w->dim + A->size, &d1);
    if (!known || d1 != 1 || A->size > DW_BUF / 4)
        return so_errorf("group=dw needs a kernel [C,1,kh,kw], not rank %d with dim 1 %s", (int)w->rank, w->rank == 4 && !known ? "symbolic" : "!= 1");
    memcpy(buf, w->dim, 4 * A->size);
    memcpy(buf + A->size, buf, A->size);
    w->dim = buf;
    at->group = 1;
    return SO_OK;
}

static so_status sym_conv_nchwc(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    _Alignas(16) char buf[DW_BUF];
    so_dims w;
    so_attr at;
    if (dw_dense(A, n, in, &w, buf, &at)) return SO_ERR;
    return so_dims_conv_nchwc(A, &at, &in[0], &w, n->n_in == 3 ? &in[2] : NULL, out);
}

static so_status sym_pool_nchwc(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    if (n->op == SO_OP_GLOBALAVGPOOL_NCHWC) return so_dims_globalpool_nchwc(A, &in[0], out);
    return so_dims_pool_nchwc(A, &n->attr, n->op == SO_OP_MAXPOOL_NCHWC, &in[0], out);
}

static so_status sym_conv(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    _Alignas(16) char buf[DW_BUF];
    so_dims w;
    so_attr at;
    if (dw_dense(A, n, in, &w, buf, &at)) return SO_ERR;
    return so_dims_conv(A, &at, &in[0], &w, n->n_in == 3 ? &in[2] : NULL, out);
}

static so_status sym_maxpool(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    const int dilated = n->op == SO_OP_MAXPOOL || n->op == SO_OP_MAXPOOL_NCHWC;
    return so_dims_pool(A, &n->attr, dilated, &in[0], out);
}

static so_status sym_lppool(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_pool(A, &n->attr, 1, &in[0], out);
}

static so_status sym_globalavgpool(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)n, (void)ndx;
    return so_dims_globalpool(A, &in[0], out);
}

static so_status sym_softmax(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_softmax(A, n->attr.axis, &in[0], out);
}

static so_status sym_batchnorm(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)n, (void)ndx;
    return so_dims_batchnorm(A, &in[0], &in[1], out);
}

static so_status sym_bnfold_w(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)n, (void)ndx;
    return so_dims_bnfold_w(A, &in[0], &in[1], out);
}

static so_status sym_bnfold_b(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    const so_dims *p[SO_RULE_MAX_IN];
    for (int k = 0; k < n->n_in; k++) p[k] = &in[k];
    return so_dims_bnfold_b(A, p, n->n_in, out);
}

static so_status sym_matmul(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)n, (void)ndx;
    return so_dims_matmul(A, &in[0], &in[1], out);
}

static so_status sym_transpose(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_transpose(A, n->attr.ints, n->attr.n_ints, &in[0], out);
}

static so_status sym_concat(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_concat(A, n->attr.axis, in, n->n_in, out);
}

/* split sizes are the node's dims (sizes=...) */
static so_status sym_split(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    return so_dims_split(A, n->attr.axis, &in[0], ndx, n->n_out, out);
}

static so_status sym_enlarge(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_enlarge(A, &n->attr, &in[0], out);
}

/* the constants' shapes are the node's dims (shape=...) */
static so_status sym_const_pool(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)in;
    return so_dims_const(A, n->op, ndx, out);
}

/* scatterelements, gathernd (batch_dims = axis), gridsample (shape.h so_dims_*) */
static so_status sym_scatterelements(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_scatterelements(A, n->attr.axis, &in[0], &in[1], &in[2], out);
}

static so_status sym_gathernd(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_gathernd(A, n->attr.axis, &in[0], &in[1], out);
}

static so_status sym_gridsample(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_gridsample(A, &n->attr, &in[0], &in[1], out);
}

/* flatten and slice (shape.h so_dims_*) */
static so_status sym_flatten(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_flatten(A, n->attr.axis, &in[0], out);
}

static so_status sym_slice(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_slice(A, &n->attr, &in[0], out);
}

static so_status sym_reshape(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)n;
    return so_dims_reshape(A, &in[0], ndx, out);
}

/* reductions, argmax/argmin, squeeze, unsqueeze, gather (shape.h so_dims_*) */
static so_status sym_reduce(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_reduce(A, &n->attr, &in[0], out);
}

static so_status sym_argmax(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_argreduce(A, &n->attr, &in[0], out);
}

static so_status sym_squeeze(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_squeeze(A, &n->attr, &in[0], out);
}

static so_status sym_unsqueeze(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_unsqueeze(A, &n->attr, &in[0], out);
}

static so_status sym_gather(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_gather(A, n->attr.axis, &in[0], &in[1], out);
}

/* gemm, layernorm / rmsnorm, expand (target: the node's dims), pad (shape.h so_dims_*) */
static so_status sym_gemm(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_gemm(A, &n->attr, &in[0], &in[1], n->n_in == 3 ? &in[2] : NULL, out);
}

static so_status sym_layernorm(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_layernorm(A, n->attr.axis, &in[0], &in[1], n->n_in == 3 ? &in[2] : NULL, out);
}

static so_status sym_expand(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)n;
    return so_dims_expand(A, &in[0], ndx, out);
}

static so_status sym_pad(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_pad(A, &n->attr, &in[0], out);
}

static so_status sym_where(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)n, (void)ndx;
    return so_dims_where(A, &in[0], &in[1], &in[2], out);
}

static so_status sym_trilu(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)n, (void)ndx;
    return so_dims_trilu(A, &in[0], out);
}

static so_status sym_depthtospace(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_blockmove(A, n->op == SO_OP_DEPTHTOSPACE, n->attr.kernel[0], &in[0], out);
}

static so_status sym_gatherelements(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_gatherelements(A, n->attr.axis, &in[0], &in[1], out);
}

static so_status sym_lrn(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_lrn(A, &n->attr, &in[0], out);
}

static so_status sym_det(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)n, (void)ndx;
    return so_dims_det(A, &in[0], out);
}

static so_status sym_resize(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_resize(A, &n->attr, &in[0], out);
}

/* topk: values and indices of one shape */
static so_status sym_topk(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    so_status st = so_dims_topk(A, &n->attr, &in[0], out);
    if (st == SO_OK && n->n_out > 1) {
        out[1].rank = out[0].rank;
        memcpy(out[1].dim, out[0].dim, (size_t)out[0].rank * A->size);
    }
    return st;
}

static so_status sym_prelu(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)n, (void)ndx;
    return so_dims_prelu(A, &in[0], &in[1], out);
}

static so_status sym_reversesequence(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_reversesequence(A, &n->attr, &in[0], &in[1], out);
}

/* maxpool with indices, maxunpool (the output shape from ints), roialign, nllloss, scatternd (shape.h so_dims_*) */
static so_status sym_maxpoolidx(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_maxpoolidx(A, &n->attr, &in[0], out);
}

static so_status sym_maxunpool(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_maxunpool(A, &n->attr, &in[0], &in[1], out);
}

static so_status sym_roialign(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_roialign(A, &n->attr, &in[0], &in[1], &in[2], out);
}

static so_status sym_nllloss(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_nllloss(A, &n->attr, &in[0], &in[1], n->n_in > 2 ? &in[2] : NULL, out);
}

static so_status sym_scatternd(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)n, (void)ndx;
    return so_dims_scatternd(A, &in[0], &in[1], &in[2], out);
}

/* LSTM / GRU / RNN (inputs at their ONNX positions, the absent trailing ones NULL), the 3-D family, transposed
   convs, DFT / STFT, TfIdfVectorizer, blocked concat (shape.h so_dims_*) */
static so_status sym_recurrent(const so_dim_alg *A, const so_rnode *n, const so_dims *in, so_dims *out, int64_t gates)
{
    const so_dims *v[8];
    for (int k = 0; k < 8; k++) v[k] = k < n->n_in ? &in[k] : NULL;
    return so_dims_recurrent(A, &n->attr, gates, v, n->n_out, out);
}
static so_status sym_lstm(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return sym_recurrent(A, n, in, out, 4);
}
static so_status sym_gru(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return sym_recurrent(A, n, in, out, 3);
}
static so_status sym_rnn(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return sym_recurrent(A, n, in, out, 1);
}
static so_status sym_conv3d(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_conv3d(A, &n->attr, &in[0], &in[1], n->n_in > 2 ? &in[2] : NULL, out);
}
static so_status sym_convtranspose3d(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_convtranspose3d(A, &n->attr, &in[0], &in[1], n->n_in > 2 ? &in[2] : NULL, out);
}
static so_status sym_pool3d(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_pool3d(A, &n->attr, &in[0], out);
}
static so_status sym_convtranspose(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_convtranspose(A, &n->attr, &in[0], &in[1], n->n_in > 2 ? &in[2] : NULL, out);
}
static so_status sym_dft(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_dft(A, &n->attr, &in[0], out);
}
static so_status sym_stft(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_stft(A, &n->attr, &in[0], n->n_in > 1 ? &in[1] : NULL, out);
}
static so_status sym_tfidfvectorizer(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    const so_dims *v[5] = {&in[0], &in[1], &in[2], &in[3], n->n_in > 4 ? &in[4] : NULL};
    return so_dims_tfidfvectorizer(A, &n->attr, v, n->n_in, out);
}
static so_status sym_concat_nchwc(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)ndx;
    return so_dims_concat_nchwc(A, &n->attr, in, n->n_in, out);
}

/* operators the rule language has no symbolic shape rule for: unknown shape, accepted here and
   checked when the rule is instantiated on a graph */
static so_status sym_unknown(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    (void)A, (void)in, (void)ndx;
    for (int j = 0; j < n->n_out; j++) out[j].rank = -1;
    return SO_OK;
}

/* The rule-shape decision of every operator: its rule, or sym_unknown (shape left unknown in the
   rule check, checked at instantiation). An operator without a decision is an undeclared identifier. */
#define sym_input sym_unknown
#define sym_weight sym_unknown
#define sym_opaque sym_unknown
#define sym_add sym_binary
#define sym_sub sym_binary
#define sym_mul sym_binary
#define sym_div sym_binary
#define sym_pow sym_binary
#define sym_relu sym_unary
#define sym_sigmoid sym_unary
#define sym_tanh sym_unary
#define sym_erf sym_unary
#define sym_sqrt sym_unary
#define sym_exp sym_unary
#define sym_log sym_unary
#define sym_neg sym_unary
#define sym_reciprocal sym_unary
#define sym_clip sym_unary
#define sym_hardsigmoid sym_unary
#define sym_hardswish sym_unary
#define sym_leakyrelu sym_unary
#define sym_elu sym_unary
/* blocked layouts: nchwc_in / nchwc_out / conv_nchwc / concat_nchwc have shape rules above (exact blocking) */
#define sym_maxpool_nchwc sym_pool_nchwc
#define sym_avgpool_nchwc sym_pool_nchwc
#define sym_globalavgpool_nchwc sym_pool_nchwc
#define sym_avgpool sym_maxpool
#define sym_globallppool sym_globalavgpool
#define sym_const_idconv sym_const_pool
#define sym_const_idmat sym_const_pool
#define sym_const_ones sym_const_pool
#define sym_reducemean sym_reduce
#define sym_reducesum sym_reduce
#define sym_rmsnorm sym_layernorm

#define sym_identity sym_unary
typedef so_status (*sym_fn)(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out);
#define sym_abs sym_unary
#define sym_floor sym_unary
#define sym_ceil sym_unary
#define sym_round sym_unary
#define sym_sign sym_unary
#define sym_softplus sym_unary
#define sym_softsign sym_unary
#define sym_sin sym_unary
#define sym_cos sym_unary
#define sym_tan sym_unary
#define sym_asin sym_unary
#define sym_acos sym_unary
#define sym_atan sym_unary
#define sym_sinh sym_unary
#define sym_cosh sym_unary
#define sym_asinh sym_unary
#define sym_acosh sym_unary
#define sym_atanh sym_unary
#define sym_mish sym_unary
#define sym_selu sym_unary
#define sym_celu sym_unary
#define sym_thresholdedrelu sym_unary
#define sym_shrink sym_unary
#define sym_gelu sym_unary
#define sym_max sym_binary
#define sym_min sym_binary
#define sym_reducemax sym_reduce
#define sym_reducemin sym_reduce
#define sym_reduceprod sym_reduce
#define sym_reducel1 sym_reduce
#define sym_reducel2 sym_reduce
#define sym_reducesumsquare sym_reduce
#define sym_reducelogsum sym_reduce
#define sym_reducelogsumexp sym_reduce
#define sym_logsoftmax sym_softmax
#define sym_hardmax sym_softmax
#define sym_argmin sym_argmax
#define sym_spacetodepth sym_depthtospace


#define sym_equal sym_binary
#define sym_less sym_binary
#define sym_greater sym_binary
#define sym_lessorequal sym_binary
#define sym_greaterorequal sym_binary
#define sym_isinf sym_unary
#define sym_isnan sym_unary


#define sym_not sym_unary
#define sym_and sym_binary
#define sym_or sym_binary
#define sym_xor sym_binary
#define sym_mod sym_binary
#define sym_cast sym_unary
#define sym_maxpool3d sym_pool3d
#define sym_avgpool3d sym_pool3d

static const sym_fn sym_rules[SO_OP_COUNT] = {
#define X(e, l, ...) [SO_OP_##e] = sym_##l,
#include "../src/ops.def"
#undef X
};

so_status so_rule_node_dims(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out)
{
    for (int k = 0; k < n->n_in; k++)
        if (in[k].rank < 0) {
            for (int j = 0; j < n->n_out; j++) out[j].rank = -1;
            return SO_OK;
        }
    out[0].rank = 0;
    return sym_rules[n->op](A, n, in, ndx, out);
}

/* the rule checker's shapes of node n: so_rule_node_dims over dim_sym */
static so_status sym_node(const so_rule *r, const so_rnode *n, const so_sshape *in, so_sshape *out)
{
    so_dim_alg A = dim_sym;
    A.cx = r; /* the symbols' names in messages */
    so_dims iv[SO_RULE_MAX_IN], ov[8];
    const so_dims ndx = {n->n_dx, (void *)n->dx};
    for (int k = 0; k < n->n_in; k++) iv[k] = (so_dims){in[k].rank, (void *)in[k].dim};
    for (int j = 0; j < n->n_out && j < 8; j++) {
        memset(&out[j], 0, sizeof out[j]);
        ov[j] = (so_dims){0, out[j].dim};
    }
    const so_status st = so_rule_node_dims(&A, n, iv, &ndx, ov);
    for (int j = 0; j < n->n_out && j < 8; j++) out[j].rank = ov[j].rank;
    return st;
}

static so_status side_shapes(const so_rule *r, int which, so_sshape (*shp)[SO_RULE_MAX_OUTPUTS > 8 ? SO_RULE_MAX_OUTPUTS : 8])
{
    const so_pattern *p = which ? &r->dst : &r->src;
    for (int i = 0; i < p->n_nodes; i++) {
        const so_rnode *n = &p->nodes[i];
        so_sshape in[SO_RULE_MAX_IN];
        for (int k = 0; k < n->n_in; k++) {
            so_rref ref = n->in[k];
            if (ref.node < 0) {
                const so_rinput *ri = &r->inputs[-(ref.node + 1)];
                in[k].rank = ri->rank;
                memcpy(in[k].dim, ri->dim, sizeof ri->dim);
            } else {
                in[k] = shp[ref.node][ref.slot];
            }
        }
        if (sym_node(r, n, in, shp[i]) != SO_OK) {
            char msg[400];
            snprintf(msg, sizeof msg, "%s", so_error());
            return so_errorf("rule %d: %s node '%s' (%s): %s", (int)r->id, which ? "dst" : "src", n->name,
                             so_ops[n->op].name, msg);
        }
    }
    return SO_OK;
}

so_status so_rule_shape(const so_rule *r, int which, so_rref ref, so_sshape *out)
{
    if (ref.node < 0) {
        const so_rinput *ri = &r->inputs[-(ref.node + 1)];
        out->rank = ri->rank;
        memcpy(out->dim, ri->dim, sizeof ri->dim);
        return SO_OK;
    }
    so_sshape shp[SO_RULE_MAX_NODES][8];
    if (side_shapes(r, which, shp) != SO_OK) return SO_ERR;
    *out = shp[ref.node][ref.slot];
    return SO_OK;
}

static int ref_ok(const so_rule *r, const so_pattern *p, int upto, so_rref ref)
{
    if (ref.node < 0) return -(ref.node + 1) < r->n_inputs && ref.slot == 0;
    return ref.node < upto && ref.slot >= 0 && ref.slot < p->nodes[ref.node].n_out;
}

so_status so_rule_check(const so_rule *r)
{
    if (r->n_inputs < 0 || r->n_inputs > SO_RULE_MAX_INPUTS || r->src.n_nodes < 1 ||
        r->src.n_nodes > SO_RULE_MAX_NODES || r->dst.n_nodes < 0 || r->dst.n_nodes > SO_RULE_MAX_NODES ||
        r->n_outputs < 1 || r->n_outputs > SO_RULE_MAX_OUTPUTS || r->n_syms > SO_RULE_MAX_SYMS ||
        r->n_pre > SO_RULE_MAX_PRE)
        return so_errorf("rule %d: counts out of range", (int)r->id);
    for (int w = 0; w < 2; w++) {
        const so_pattern *p = w ? &r->dst : &r->src;
        for (int i = 0; i < p->n_nodes; i++) {
            const so_rnode *n = &p->nodes[i];
            if ((int)n->op < 0 || n->op >= SO_OP_COUNT || (so_ops[n->op].flags & (SO_F_SOURCE | SO_F_OPAQUE)))
                return so_errorf("rule %d: %s node '%s' has a bad operator", (int)r->id, w ? "dst" : "src", n->name);
            if (n->n_in < so_ops[n->op].min_in || n->n_in > so_ops[n->op].max_in || n->n_in > SO_RULE_MAX_IN)
                return so_errorf("rule %d: node '%s' (%s) has %d inputs", (int)r->id, n->name, so_ops[n->op].name, (int)n->n_in);
            int want = n->op == SO_OP_SPLIT ? n->n_dx : (so_ops[n->op].n_out > 0 ? so_ops[n->op].n_out : 1);
            if (n->n_out != want || n->n_out < 1 || n->n_out > 8)
                return so_errorf("rule %d: node '%s' (%s) has %d outputs", (int)r->id, n->name, so_ops[n->op].name, (int)n->n_out);
            for (int k = 0; k < n->n_in; k++)
                if (!ref_ok(r, p, i, n->in[k]))
                    return so_errorf("rule %d: node '%s' input %d refers to a missing tensor", (int)r->id, n->name, k);
            if ((so_ops[n->op].flags & SO_F_ACT) && (n->attr.act < 0 || n->attr.act >= SO_ACT_COUNT))
                return so_errorf("rule %d: node '%s' has a bad activation", (int)r->id, n->name);
        }
    }
    for (int k = 0; k < r->n_outputs; k++) {
        if (r->src_out[k].node < 0 || !ref_ok(r, &r->src, r->src.n_nodes, r->src_out[k]) ||
            !ref_ok(r, &r->dst, r->dst.n_nodes, r->dst_out[k]))
            return so_errorf("rule %d: output %d refers to a missing tensor", (int)r->id, k);
    }
    for (int k = 0; k < r->n_pre; k++)
        if (r->pre[k].sym < 0 || r->pre[k].sym >= r->n_syms || (r->pre[k].kind != SO_PRE_GE && r->pre[k].kind != SO_PRE_DIV) ||
            (r->pre[k].kind == SO_PRE_DIV && r->pre[k].value < 1))
            return so_errorf("rule %d: bad precondition %d", (int)r->id, k);
    so_sshape s[SO_RULE_MAX_NODES][8], d[SO_RULE_MAX_NODES][8];
    if (side_shapes(r, 0, s) != SO_OK || side_shapes(r, 1, d) != SO_OK) return SO_ERR;
    for (int k = 0; k < r->n_outputs; k++) {
        so_sshape a = s[r->src_out[k].node][r->src_out[k].slot], b;
        so_rref dr = r->dst_out[k];
        if (dr.node < 0) {
            const so_rinput *ri = &r->inputs[-(dr.node + 1)];
            b.rank = ri->rank;
            memcpy(b.dim, ri->dim, sizeof ri->dim);
        } else {
            b = d[dr.node][dr.slot];
        }
        if (a.rank < 0 || b.rank < 0) continue;
        int eq = a.rank == b.rank;
        for (int i = 0; eq && i < a.rank; i++) eq = so_dimx_eq(&a.dim[i], &b.dim[i]);
        if (!eq) return so_errorf("rule %d: output %d has different shapes in src and dst", (int)r->id, k);
    }
    return SO_OK;
}

int so_rule_has_shape_rule(so_op op) { return sym_rules[op] != sym_unknown; }
