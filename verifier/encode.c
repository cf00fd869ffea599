/* encode.c - rule encoding: both sides of a rule as Z3 terms with well-formedness (shape) conditions. */
#include "verify_priv.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <z3.h>

/* ------------------------------------------------------------------ rule encoding */

/* A ground term of a rule with its symbolic shape (valid when ok holds). */

static Z3_ast dimx_ast(renc *e, const so_dimx *d)
{
    Z3_ast x = vp_mk_int(e->v, d->c);
    for (int k = 0; k < d->n_sym; k++) x = vp_mk_add(e->v, x, e->sym[d->sym[k]]);
    return x;
}

static int unsupported(renc *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int unsupported(renc *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->unsupported, sizeof e->unsupported, fmt, ap);
    va_end(ap);
    return 1;
}

static const gterm *ref_term(renc *e, int side, so_rref ref)
{
    if (ref.node < 0) return &e->in[-(ref.node + 1)];
    return &e->node[side][ref.node][ref.slot];
}

static Z3_ast all_dims_eq(so_verifier *v, const gterm *a, const gterm *b, int skip_axis)
{
    Z3_ast c = Z3_mk_true(v->ctx);
    for (int i = 0; i < a->rank; i++)
        if (i != skip_axis) c = vp_mk_and2(v, c, vp_mk_eq(v, a->dim[i], b->dim[i]));
    return c;
}

static Z3_ast apply_act(renc *e, Z3_ast t, int act)
{
    switch (act) {
    case SO_ACT_NONE: return t;
    case SO_ACT_RELU: return vp_mk_fn(e->v, ZF_RELU, NULL, &t);
    case SO_ACT_SIGMOID: return vp_mk_fn(e->v, ZF_SIGMOID, NULL, &t);
    case SO_ACT_TANH: return vp_mk_fn(e->v, ZF_TANH, NULL, &t);
    default: return NULL;
    }
}

static int stride_of(int s) { return s > 0 ? s : 1; }

/* Encodes pattern node `ni` of side `side`: terms, shapes, and well-typedness (wf, without
   the inputs' own ok). Returns 0, or 1 if the node has no Z3 semantics (e->unsupported set). */
/* ---------------- Z3 semantics, one encoder per operator (ops.def) ----------------
   z3_<op> encodes pattern node ni of one side of a rule: its term(s), shape, and well-typedness
   (w, without the inputs' own ok). Returns 0, or 1 if this instance has no Z3 semantics
   (e->unsupported set, e.g. a conv with asymmetric pads). */

typedef struct zctx {
    renc *e;
    int side, ni;
    const so_rnode *n;
    const gterm *const *x; /* the inputs' terms */
    gterm *o;              /* output 0's term (split: all outputs, e->node[side][ni][k]) */
    Z3_ast *wf;
} zctx;

#define Z3_LOCALS                                                                             \
    renc *e = cx->e;                                                                          \
    so_verifier *v = e->v;                                                                    \
    int side = cx->side, ni = cx->ni;                                                         \
    const so_rnode *n = cx->n;                                                                \
    const so_attr *a = &n->attr;                                                              \
    const gterm *const *x = cx->x;                                                            \
    gterm *o = cx->o;                                                                         \
    Z3_ast w = Z3_mk_true(v->ctx);                                                            \
    const char *opname = so_ops[n->op].name;                                                  \
    (void)e, (void)v, (void)side, (void)ni, (void)n, (void)a, (void)x, (void)o, (void)w, (void)opname

static int zdone(zctx *cx, Z3_ast w)
{
    *cx->wf = w;
    return 0;
}

static int z3_identity(zctx *cx)
{
    Z3_LOCALS;
    *o = *x[0]; return zdone(cx, w);
}

static int z3_relu(zctx *cx)
{
    Z3_LOCALS;
    *o = *x[0];
    o->t = vp_mk_fn(v, n->op == SO_OP_RELU ? ZF_RELU : n->op == SO_OP_SIGMOID ? ZF_SIGMOID : ZF_TANH, NULL, &x[0]->t);
    return zdone(cx, w);
}

static int z3_add(zctx *cx)
{
    Z3_LOCALS;
    const gterm *A = x[0], *Bt = x[1];
    Z3_ast ts[2] = {A->t, Bt->t};
    o->t = vp_mk_fn(v, n->op == SO_OP_ADD ? ZF_ADD : ZF_MUL, NULL, ts);
    /* numpy broadcasting, right-aligned */
    int r = SO_MAX(A->rank, Bt->rank);
    o->rank = r;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - A->rank), ib = i - (r - Bt->rank);
        Z3_ast da = ia >= 0 ? A->dim[ia] : NULL, db = ib >= 0 ? Bt->dim[ib] : NULL;
        if (!da) o->dim[i] = db;
        else if (!db) o->dim[i] = da;
        else {
            Z3_ast one = vp_mk_int(v, 1);
            Z3_ast alts[3] = {vp_mk_eq(v, da, db), vp_mk_eq(v, da, one), vp_mk_eq(v, db, one)};
            w = vp_mk_and2(v, w, Z3_mk_or(v->ctx, 3, alts));
            o->dim[i] = Z3_mk_ite(v->ctx, vp_mk_eq(v, da, one), db, da);
        }
    }
    if (n->op == SO_OP_ADD && !(o->t = apply_act(e, o->t, a->act))) return unsupported(e, "add with activation %d", a->act);
    return zdone(cx, w);
}

static int z3_matmul(zctx *cx)
{
    Z3_LOCALS;
    const gterm *A = x[0], *Bt = x[1];
    Z3_ast ts[2] = {A->t, Bt->t};
    if (A->rank == 3 && Bt->rank == 2) {
        /* numpy matmul of a rank-3 activation by a matrix: [s0,s1,k] @ [k,m] = [s0,s1,m] (axioms mm3-*) */
        o->t = vp_mk_fn(v, ZF_MATMUL, NULL, ts);
        o->rank = 3;
        w = vp_mk_and2(v, w, vp_mk_eq(v, A->dim[2], Bt->dim[0]));
        o->dim[0] = A->dim[0];
        o->dim[1] = A->dim[1];
        o->dim[2] = Bt->dim[1];
        if (!(o->t = apply_act(e, o->t, a->act))) return unsupported(e, "matmul with activation %d", a->act);
        return zdone(cx, w);
    }
    if (A->rank < 2 || A->rank != Bt->rank) return unsupported(e, "matmul of ranks %d and %d", A->rank, Bt->rank);
    int r = A->rank;
    o->t = vp_mk_fn(v, ZF_MATMUL, NULL, ts);
    o->rank = r;
    for (int i = 0; i < r - 2; i++) {
        w = vp_mk_and2(v, w, vp_mk_eq(v, A->dim[i], Bt->dim[i])); /* batch dims: broadcasting only when equal */
        o->dim[i] = A->dim[i];
    }
    w = vp_mk_and2(v, w, vp_mk_eq(v, A->dim[r - 1], Bt->dim[r - 2]));
    o->dim[r - 2] = A->dim[r - 2];
    o->dim[r - 1] = Bt->dim[r - 1];
    if (r > 2) {
        /* batch broadcasting (a dim 1 against n) is real semantics we do not model: refuse unless the
           batch dims are equal for every symbol value, which the condition above only assumes */
        for (int i = 0; i < r - 2; i++) {
            Z3_ast d = Z3_simplify(v->ctx, vp_mk_sub(v, A->dim[i], Bt->dim[i]));
            int64_t val;
            if (!Z3_get_numeral_int64(v->ctx, d, &val) || val != 0) return unsupported(e, "matmul with batch broadcasting");
        }
    }
    if (!(o->t = apply_act(e, o->t, a->act))) return unsupported(e, "matmul with activation %d", a->act);
    return zdone(cx, w);
}

/* A conv's group as a Z3 term: the attribute, or for group=dw (SO_RULE_GROUP_DW, rules only) the kernel's
   output channels W.dim0, with W.dim1 == 1 added to *w (the conv's well-formedness). */
static Z3_ast conv_group(zctx *cx, const gterm *W, Z3_ast *wf)
{
    so_verifier *v = cx->e->v;
    const so_attr *a = &cx->n->attr;
    if (a->group != SO_RULE_GROUP_DW) return vp_mk_int(v, a->group > 0 ? a->group : 1);
    *wf = vp_mk_and2(v, *wf, vp_mk_eq(v, W->dim[1], vp_mk_int(v, 1)));
    return W->dim[0];
}

static int z3_conv(zctx *cx)
{
    Z3_LOCALS;
    if (a->pad[0] != a->pad[2] || a->pad[1] != a->pad[3]) return unsupported(e, "conv with asymmetric pads");
    if (stride_of(a->dilation[0]) != 1 || stride_of(a->dilation[1]) != 1) return unsupported(e, "dilated conv");
    const gterm *X = x[0], *W = x[1];
    if (X->rank != 4 || W->rank != 4) return unsupported(e, "conv of rank %d/%d", X->rank, W->rank);
    int g = a->group > 0 ? a->group : 1;
    int sh = stride_of(a->stride[0]), sw = stride_of(a->stride[1]);
    Z3_ast gi = conv_group(cx, W, &w);
    Z3_ast ints[5] = {vp_mk_int(v, sh), vp_mk_int(v, sw), vp_mk_int(v, a->pad[0]), vp_mk_int(v, a->pad[1]), gi};
    Z3_ast ts[2] = {X->t, W->t};
    o->t = vp_mk_fn(v, ZF_CONV, ints, ts);
    if (n->n_in == 3) {
        const gterm *Bv = x[2];
        if (Bv->rank != 1) return unsupported(e, "conv bias of rank %d", Bv->rank);
        w = vp_mk_and2(v, w, vp_mk_eq(v, Bv->dim[0], W->dim[0]));
        Z3_ast bt[2] = {o->t, Bv->t};
        o->t = vp_mk_fn(v, ZF_BIAS, NULL, bt);
    }
    w = vp_mk_and2(v, w, vp_mk_eq(v, X->dim[1], Z3_mk_mul(v->ctx, 2, (Z3_ast[]){W->dim[1], gi})));
    if (a->group != SO_RULE_GROUP_DW) w = vp_mk_and2(v, w, vp_mk_eq(v, Z3_mk_mod(v->ctx, W->dim[0], vp_mk_int(v, g)), vp_mk_int(v, 0)));
    o->rank = 4;
    o->dim[0] = X->dim[0];
    o->dim[1] = W->dim[0];
    for (int k = 0; k < 2; k++) {
        Z3_ast padded = vp_mk_add(v, X->dim[2 + k], vp_mk_int(v, 2 * a->pad[k]));
        Z3_ast span = vp_mk_sub(v, padded, W->dim[2 + k]);
        w = vp_mk_and2(v, w, Z3_mk_ge(v->ctx, span, vp_mk_int(v, 0)));
        o->dim[2 + k] = vp_mk_add(v, Z3_mk_div(v->ctx, span, vp_mk_int(v, k ? sw : sh)), vp_mk_int(v, 1));
    }
    if (!(o->t = apply_act(e, o->t, a->act))) return unsupported(e, "conv with activation %d", a->act);
    return zdone(cx, w);
}

/* Blocked channel layout (issue 15): blk b x = nchwc_in, [n, ceil(c/b), h, w, b] with zero padding lanes. */
static int z3_nchwc_in(zctx *cx)
{
    Z3_LOCALS;
    const gterm *X = x[0];
    if (X->rank != 4 || a->n_ints != 1 || a->ints[0] < 1) return unsupported(e, "nchwc_in of rank %d", X->rank);
    Z3_ast b = vp_mk_int(v, a->ints[0]);
    o->t = vp_mk_fn(v, ZF_BLK, &b, &X->t);
    o->rank = 5;
    o->dim[0] = X->dim[0], o->dim[2] = X->dim[2], o->dim[3] = X->dim[3], o->dim[4] = b;
    o->dim[1] = Z3_mk_div(v->ctx, vp_mk_add(v, X->dim[1], vp_mk_int(v, a->ints[0] - 1)), b);
    return zdone(cx, w);
}

/* unblk b c y = nchwc_out: the c channels of a blocked value back as [n, c, h, w]. In rules c is
   symbolic (n->dx[1], c = b * k: exact blocking), in hand-written rules it may be concrete. */
static int z3_nchwc_out(zctx *cx)
{
    Z3_LOCALS;
    const gterm *Y = x[0];
    int64_t b = n->n_dx == 2 ? n->dx[0].c : a->n_ints == 2 ? a->ints[0] : 0;
    if (Y->rank != 5 || b < 1 || (n->n_dx != 2 && a->ints[1] < 1)) return unsupported(e, "nchwc_out of rank %d", Y->rank);
    Z3_ast ints[2] = {vp_mk_int(v, b), n->n_dx == 2 ? dimx_ast(e, &n->dx[1]) : vp_mk_int(v, a->ints[1])};
    o->t = vp_mk_fn(v, ZF_UNBLK, ints, &Y->t);
    w = vp_mk_and2(v, w, vp_mk_eq(v, Y->dim[4], ints[0]));
    w = vp_mk_and2(v, w, vp_mk_eq(v, Y->dim[1], Z3_mk_div(v->ctx, vp_mk_add(v, ints[1], vp_mk_int(v, b - 1)), ints[0])));
    o->rank = 4;
    o->dim[0] = Y->dim[0], o->dim[1] = ints[1], o->dim[2] = Y->dim[2], o->dim[3] = Y->dim[3];
    return zdone(cx, w);
}

/* conv_nchwc, by its definition (ops.def): the kernel reads only the C = W.dim1 * group real
   channels of its blocked input and writes zero padding lanes, so
   conv_nchwc(X, W[, B]) = blk b (act (conv (unblk b C X) W [+ B])). */
static int z3_conv_nchwc(zctx *cx)
{
    Z3_LOCALS;
    if (a->pad[0] != a->pad[2] || a->pad[1] != a->pad[3]) return unsupported(e, "conv_nchwc with asymmetric pads");
    if (stride_of(a->dilation[0]) != 1 || stride_of(a->dilation[1]) != 1) return unsupported(e, "dilated conv_nchwc");
    const gterm *X = x[0], *W = x[1];
    if (X->rank != 5 || W->rank != 4) return unsupported(e, "conv_nchwc of rank %d/%d", X->rank, W->rank);
    int g = a->group > 0 ? a->group : 1;
    int sh = stride_of(a->stride[0]), sw = stride_of(a->stride[1]);
    Z3_ast b = X->dim[4], bm1 = vp_mk_sub(v, b, vp_mk_int(v, 1)), gi = conv_group(cx, W, &w);
    Z3_ast cin = Z3_mk_mul(v->ctx, 2, (Z3_ast[]){W->dim[1], gi});
    Z3_ast ub[2] = {b, cin};
    Z3_ast xu = vp_mk_fn(v, ZF_UNBLK, ub, &X->t);
    Z3_ast ints[5] = {vp_mk_int(v, sh), vp_mk_int(v, sw), vp_mk_int(v, a->pad[0]), vp_mk_int(v, a->pad[1]), gi};
    Z3_ast ts[2] = {xu, W->t};
    Z3_ast t = vp_mk_fn(v, ZF_CONV, ints, ts);
    if (n->n_in == 3) {
        const gterm *Bv = x[2];
        if (Bv->rank != 1) return unsupported(e, "conv_nchwc bias of rank %d", Bv->rank);
        w = vp_mk_and2(v, w, vp_mk_eq(v, Bv->dim[0], W->dim[0]));
        Z3_ast bt[2] = {t, Bv->t};
        t = vp_mk_fn(v, ZF_BIAS, NULL, bt);
    }
    if (!(t = apply_act(e, t, a->act))) return unsupported(e, "conv_nchwc with activation %d", a->act);
    o->t = vp_mk_fn(v, ZF_BLK, &b, &t);
    w = vp_mk_and2(v, w, vp_mk_eq(v, X->dim[1], Z3_mk_div(v->ctx, vp_mk_add(v, cin, bm1), b)));
    if (a->group != SO_RULE_GROUP_DW) w = vp_mk_and2(v, w, vp_mk_eq(v, Z3_mk_mod(v->ctx, W->dim[0], vp_mk_int(v, g)), vp_mk_int(v, 0)));
    o->rank = 5;
    o->dim[0] = X->dim[0];
    o->dim[1] = Z3_mk_div(v->ctx, vp_mk_add(v, W->dim[0], bm1), b);
    o->dim[4] = b;
    for (int k = 0; k < 2; k++) {
        Z3_ast span = vp_mk_sub(v, vp_mk_add(v, X->dim[2 + k], vp_mk_int(v, 2 * a->pad[k])), W->dim[2 + k]);
        w = vp_mk_and2(v, w, Z3_mk_ge(v->ctx, span, vp_mk_int(v, 0)));
        o->dim[2 + k] = vp_mk_add(v, Z3_mk_div(v->ctx, span, vp_mk_int(v, k ? sw : sh)), vp_mk_int(v, 1));
    }
    return zdone(cx, w);
}

static int z3_transpose(zctx *cx)
{
    Z3_LOCALS;
    const gterm *X = x[0];
    if (a->n_ints != X->rank || X->rank > 4 || X->rank < 1) return unsupported(e, "transpose perm of %d ints on rank %d", a->n_ints, X->rank);
    int64_t p[4];
    int seen = 0;
    for (int i = 0; i < X->rank; i++) {
        p[i] = a->ints[i];
        if (p[i] < 0 || p[i] >= X->rank || (seen & (1 << p[i]))) return unsupported(e, "invalid transpose perm");
        seen |= 1 << p[i];
    }
    Z3_ast code = vp_mk_int(v, so_perm_code(X->rank, p));
    o->t = vp_mk_fn(v, ZF_TR, &code, &X->t);
    o->rank = X->rank;
    for (int i = 0; i < X->rank; i++) o->dim[i] = X->dim[p[i]];
    return zdone(cx, w);
}

static int z3_concat(zctx *cx)
{
    Z3_LOCALS;
    int ax = a->axis, r = x[0]->rank;
    if (ax < 0 || ax >= r) return unsupported(e, "concat axis %d on rank %d", ax, r);
    for (int k = 1; k < n->n_in; k++) {
        if (x[k]->rank != r) return unsupported(e, "concat of different ranks");
        w = vp_mk_and2(v, w, all_dims_eq(v, x[0], x[k], ax));
    }
    Z3_ast axi = vp_mk_int(v, ax);
    Z3_ast t = x[n->n_in - 1]->t, sum = x[n->n_in - 1]->dim[ax];
    for (int k = n->n_in - 2; k >= 0; k--) {
        Z3_ast ts[2] = {x[k]->t, t};
        t = vp_mk_fn(v, ZF_CONCAT, &axi, ts);
        sum = vp_mk_add(v, x[k]->dim[ax], sum);
    }
    *o = *x[0];
    o->t = t;
    o->dim[ax] = sum;
    return zdone(cx, w);
}

static int z3_split(zctx *cx)
{
    Z3_LOCALS;
    const gterm *X = x[0];
    int ax = a->axis;
    if (ax < 0 || ax >= X->rank) return unsupported(e, "split axis %d on rank %d", ax, X->rank);
    if (n->n_dx != n->n_out || n->n_out > SO_RULE_MAX_OUTPUTS) return unsupported(e, "split with %d sizes for %d outputs", n->n_dx, n->n_out);
    Z3_ast off = vp_mk_int(v, 0);
    for (int k = 0; k < n->n_out; k++) {
        Z3_ast sz = dimx_ast(e, &n->dx[k]);
        gterm *ok = &e->node[side][ni][k];
        *ok = *X;
        Z3_ast ints[3] = {vp_mk_int(v, ax), off, sz};
        ok->t = vp_mk_fn(v, ZF_SPL, ints, &X->t);
        ok->dim[ax] = sz;
        w = vp_mk_and2(v, w, Z3_mk_ge(v->ctx, sz, vp_mk_int(v, 1)));
        off = vp_mk_add(v, off, sz);
    }
    w = vp_mk_and2(v, w, vp_mk_eq(v, off, X->dim[ax]));
    return zdone(cx, w);
}

static int z3_enlarge(zctx *cx)
{
    Z3_LOCALS;
    const gterm *W = x[0];
    if (W->rank != 4) return unsupported(e, "enlarge of rank %d", W->rank);
    Z3_ast ints[2] = {vp_mk_int(v, a->kernel[0]), vp_mk_int(v, a->kernel[1])};
    o->t = vp_mk_fn(v, ZF_ENLARGE, ints, &W->t);
    *o = (gterm){o->t, NULL, 4, {W->dim[0], W->dim[1], ints[0], ints[1]}};
    for (int k = 0; k < 2; k++) {
        Z3_ast diff = vp_mk_sub(v, ints[k], W->dim[2 + k]);
        w = vp_mk_and2(v, w, Z3_mk_ge(v->ctx, diff, vp_mk_int(v, 0)));
        w = vp_mk_and2(v, w, vp_mk_eq(v, Z3_mk_mod(v->ctx, diff, vp_mk_int(v, 2)), vp_mk_int(v, 0)));
    }
    return zdone(cx, w);
}

static int z3_avgpool(zctx *cx)
{
    Z3_LOCALS;
    const gterm *X = x[0];
    if (X->rank != 4) return unsupported(e, "pool of rank %d", X->rank);
    if (a->pad[0] != a->pad[2] || a->pad[1] != a->pad[3]) return unsupported(e, "pool with asymmetric pads");
    if (a->ceil_mode && (n->op != SO_OP_MAXPOOL || a->pad[0] || a->pad[1])) return unsupported(e, "pool with ceil_mode (only max pooling without pads)");
    if (n->op == SO_OP_MAXPOOL && (stride_of(a->dilation[0]) != 1 || stride_of(a->dilation[1]) != 1)) return unsupported(e, "dilated maxpool");
    if (n->op == SO_OP_AVGPOOL && !a->count_include_pad && (a->pad[0] || a->pad[1]))
        return unsupported(e, "avgpool with pads not counted (count_include_pad=0)");
    int sh = stride_of(a->stride[0]), sw = stride_of(a->stride[1]);
    if (a->kernel[0] < 1 || a->kernel[1] < 1 || a->pad[0] >= a->kernel[0] || a->pad[1] >= a->kernel[1] || a->pad[0] < 0 || a->pad[1] < 0)
        return unsupported(e, "pool with invalid kernel/pads");
    Z3_ast ints[6] = {vp_mk_int(v, a->kernel[0]), vp_mk_int(v, a->kernel[1]), vp_mk_int(v, sh), vp_mk_int(v, sw), vp_mk_int(v, a->pad[0]), vp_mk_int(v, a->pad[1])};
    o->t = vp_mk_fn(v, n->op == SO_OP_AVGPOOL ? ZF_AVGPOOL : a->ceil_mode ? ZF_MAXPOOLC : ZF_MAXPOOL, ints, &X->t);
    o->rank = 4;
    o->dim[0] = X->dim[0];
    o->dim[1] = X->dim[1];
    for (int k = 0; k < 2; k++) {
        Z3_ast span = vp_mk_sub(v, vp_mk_add(v, X->dim[2 + k], vp_mk_int(v, 2 * a->pad[k])), vp_mk_int(v, a->kernel[k]));
        w = vp_mk_and2(v, w, Z3_mk_ge(v->ctx, span, vp_mk_int(v, 0)));
        int st = k ? sw : sh;
        if (a->ceil_mode) span = vp_mk_add(v, span, vp_mk_int(v, st - 1));
        o->dim[2 + k] = vp_mk_add(v, Z3_mk_div(v->ctx, span, vp_mk_int(v, st)), vp_mk_int(v, 1));
    }
    return zdone(cx, w);
}

static int z3_globalavgpool(zctx *cx)
{
    Z3_LOCALS;
    const gterm *X = x[0];
    if (X->rank != 4) return unsupported(e, "globalavgpool of rank %d", X->rank);
    *o = *X;
    o->t = vp_mk_fn(v, ZF_GAP, NULL, &X->t);
    o->dim[2] = o->dim[3] = vp_mk_int(v, 1);
    return zdone(cx, w);
}

/* The blocked pools, by their definition (ops.def): they pool every lane of a blocked value
   (zero padding lanes stay zero), so pool_nchwc(X) = blk b (pool (unblk b (b * blocks) X)): the
   plain pool's encoding on the unblocked lanes, blocked again. The definitions are self-checked
   against the kernels (axioms maxpoolb-def, gapb-def). */
static int z3_pool_nchwc(zctx *cx)
{
    Z3_LOCALS;
    const gterm *X = x[0];
    if (X->rank != 5) return unsupported(e, "%s of rank %d", opname, X->rank);
    Z3_ast b = X->dim[4];
    Z3_ast ub[2] = {b, Z3_mk_mul(v->ctx, 2, (Z3_ast[]){X->dim[1], b})};
    gterm plain = *X;
    plain.t = vp_mk_fn(v, ZF_UNBLK, ub, &X->t);
    plain.rank = 4;
    plain.dim[1] = ub[1];
    const gterm *px = &plain;
    so_rnode pn = *n;
    pn.op = n->op == SO_OP_MAXPOOL_NCHWC ? SO_OP_MAXPOOL : n->op == SO_OP_AVGPOOL_NCHWC ? SO_OP_AVGPOOL : SO_OP_GLOBALAVGPOOL;
    gterm po;
    Z3_ast pw = NULL;
    zctx sub = {e, side, ni, &pn, &px, &po, &pw};
    int rc = pn.op == SO_OP_GLOBALAVGPOOL ? z3_globalavgpool(&sub) : z3_avgpool(&sub);
    if (rc) return rc;
    o->t = vp_mk_fn(v, ZF_BLK, &b, &po.t);
    o->rank = 5;
    o->dim[0] = po.dim[0], o->dim[1] = X->dim[1], o->dim[2] = po.dim[2], o->dim[3] = po.dim[3], o->dim[4] = b;
    return zdone(cx, vp_mk_and2(v, w, pw));
}

static int z3_batchnorm(zctx *cx)
{
    Z3_LOCALS;
    const gterm *X = x[0];
    if (X->rank < 2) return unsupported(e, "batchnorm of rank %d", X->rank);
    uint32_t bits;
    memcpy(&bits, &a->epsilon, sizeof bits);
    Z3_ast eps = vp_mk_int(v, bits);
    Z3_ast ts[5];
    for (int k = 0; k < 5; k++) {
        ts[k] = x[k]->t;
        if (k && x[k]->rank != 1) return unsupported(e, "batchnorm parameter of rank %d", x[k]->rank);
        if (k) w = vp_mk_and2(v, w, vp_mk_eq(v, x[k]->dim[0], X->dim[1]));
    }
    *o = *X;
    o->t = vp_mk_fn(v, ZF_BN, &eps, ts);
    return zdone(cx, w);
}

static int z3_bnfold_w(zctx *cx)
{
    Z3_LOCALS;
    /* conv+BN folding weights: bnfw eps W scale var; bnfb eps scale B mean var; bnfbc ... cbias */
    uint32_t bits;
    memcpy(&bits, &a->epsilon, sizeof bits);
    Z3_ast eps = vp_mk_int(v, bits);
    Z3_ast ts[5];
    int wop = n->op == SO_OP_BNFOLD_W;
    if (wop && x[0]->rank < 1) return unsupported(e, "bnfold_w of rank %d", x[0]->rank);
    for (int k = 0; k < n->n_in; k++) {
        ts[k] = x[k]->t;
        if ((k || !wop) && x[k]->rank != 1) return unsupported(e, "%s vector of rank %d", opname, x[k]->rank);
        if (k) w = vp_mk_and2(v, w, vp_mk_eq(v, x[k]->dim[0], x[0]->dim[0]));
    }
    *o = *x[0];
    o->t = vp_mk_fn(v, wop ? ZF_BNFW : n->n_in == 5 ? ZF_BNFBC : ZF_BNFB, &eps, ts);
    return zdone(cx, w);
}

static int z3_const_pool(zctx *cx)
{
    Z3_LOCALS;
    if (n->n_dx != 4) return unsupported(e, "%s with %d dims", opname, n->n_dx);
    Z3_ast d[4];
    for (int k = 0; k < 4; k++) d[k] = dimx_ast(e, &n->dx[k]);
    Z3_ast ints[3] = {d[0], d[2], d[3]};
    o->t = vp_mk_fn(v, n->op == SO_OP_CONST_POOL ? ZF_CPOOL : ZF_CIDCONV, ints, NULL);
    o->rank = 4;
    for (int k = 0; k < 4; k++) o->dim[k] = d[k];
    if (n->op == SO_OP_CONST_POOL) {
        w = vp_mk_and2(v, w, vp_mk_eq(v, d[1], vp_mk_int(v, 1)));
    } else {
        w = vp_mk_and2(v, w, vp_mk_eq(v, d[0], d[1]));
        for (int k = 2; k < 4; k++) w = vp_mk_and2(v, w, vp_mk_eq(v, Z3_mk_mod(v->ctx, d[k], vp_mk_int(v, 2)), vp_mk_int(v, 1)));
    }
    return zdone(cx, w);
}

static int z3_const_idmat(zctx *cx)
{
    Z3_LOCALS;
    if (n->n_dx != 2) return unsupported(e, "const_idmat with %d dims", n->n_dx);
    Z3_ast d0 = dimx_ast(e, &n->dx[0]), d1 = dimx_ast(e, &n->dx[1]);
    o->t = vp_mk_fn(v, ZF_CIDMAT, &d0, NULL);
    o->rank = 2;
    o->dim[0] = d0;
    o->dim[1] = d1;
    w = vp_mk_and2(v, w, vp_mk_eq(v, d0, d1));
    return zdone(cx, w);
}


/* The Z3 decision of every operator: its encoder, or Z3_NOT_IN_RULES for operators outside the
   rule language (the generator never produces them; a hand-written rule that uses one is refused
   with "no Z3 semantics"). An operator without a decision is an undeclared identifier. */
#define Z3_NOT_IN_RULES NULL
#define z3_input Z3_NOT_IN_RULES
#define z3_weight Z3_NOT_IN_RULES
#define z3_opaque Z3_NOT_IN_RULES
#define z3_gemm Z3_NOT_IN_RULES
#define z3_sub Z3_NOT_IN_RULES
#define z3_div Z3_NOT_IN_RULES
#define z3_pow Z3_NOT_IN_RULES
#define z3_erf Z3_NOT_IN_RULES
#define z3_sqrt Z3_NOT_IN_RULES
#define z3_exp Z3_NOT_IN_RULES
#define z3_log Z3_NOT_IN_RULES
#define z3_neg Z3_NOT_IN_RULES
#define z3_reciprocal Z3_NOT_IN_RULES
#define z3_clip Z3_NOT_IN_RULES
#define z3_softmax Z3_NOT_IN_RULES
#define z3_reducemean Z3_NOT_IN_RULES
#define z3_layernorm Z3_NOT_IN_RULES
#define z3_rmsnorm Z3_NOT_IN_RULES
#define z3_lppool Z3_NOT_IN_RULES
#define z3_pad Z3_NOT_IN_RULES
#define z3_flatten Z3_NOT_IN_RULES
#define z3_reshape Z3_NOT_IN_RULES
#define z3_squeeze Z3_NOT_IN_RULES
#define z3_unsqueeze Z3_NOT_IN_RULES
#define z3_expand Z3_NOT_IN_RULES
#define z3_gather Z3_NOT_IN_RULES
#define z3_slice Z3_NOT_IN_RULES
#define z3_lstm Z3_NOT_IN_RULES
#define z3_const_ones Z3_NOT_IN_RULES
#define z3_hardsigmoid Z3_NOT_IN_RULES
#define z3_hardswish Z3_NOT_IN_RULES
#define z3_leakyrelu Z3_NOT_IN_RULES
#define z3_elu Z3_NOT_IN_RULES
#define z3_maxpool_nchwc z3_pool_nchwc
#define z3_avgpool_nchwc z3_pool_nchwc
#define z3_globalavgpool_nchwc z3_pool_nchwc
#define z3_concat_nchwc Z3_NOT_IN_RULES
#define z3_resize Z3_NOT_IN_RULES
#define z3_reducesum Z3_NOT_IN_RULES
#define z3_sigmoid z3_relu
#define z3_tanh z3_relu
#define z3_mul z3_add
#define z3_maxpool z3_avgpool
#define z3_bnfold_b z3_bnfold_w
#define z3_const_idconv z3_const_pool

typedef int (*z3_fn)(zctx *cx);
/* operators of other exporters and of the conformance suite: not in the rule language */
#define z3_abs Z3_NOT_IN_RULES
#define z3_floor Z3_NOT_IN_RULES
#define z3_ceil Z3_NOT_IN_RULES
#define z3_round Z3_NOT_IN_RULES
#define z3_sign Z3_NOT_IN_RULES
#define z3_softplus Z3_NOT_IN_RULES
#define z3_softsign Z3_NOT_IN_RULES
#define z3_sin Z3_NOT_IN_RULES
#define z3_cos Z3_NOT_IN_RULES
#define z3_tan Z3_NOT_IN_RULES
#define z3_asin Z3_NOT_IN_RULES
#define z3_acos Z3_NOT_IN_RULES
#define z3_atan Z3_NOT_IN_RULES
#define z3_sinh Z3_NOT_IN_RULES
#define z3_cosh Z3_NOT_IN_RULES
#define z3_asinh Z3_NOT_IN_RULES
#define z3_acosh Z3_NOT_IN_RULES
#define z3_atanh Z3_NOT_IN_RULES
#define z3_mish Z3_NOT_IN_RULES
#define z3_selu Z3_NOT_IN_RULES
#define z3_celu Z3_NOT_IN_RULES
#define z3_thresholdedrelu Z3_NOT_IN_RULES
#define z3_shrink Z3_NOT_IN_RULES
#define z3_gelu Z3_NOT_IN_RULES
#define z3_max Z3_NOT_IN_RULES
#define z3_min Z3_NOT_IN_RULES
#define z3_prelu Z3_NOT_IN_RULES
#define z3_reducemax Z3_NOT_IN_RULES
#define z3_reducemin Z3_NOT_IN_RULES
#define z3_reduceprod Z3_NOT_IN_RULES
#define z3_reducel1 Z3_NOT_IN_RULES
#define z3_reducel2 Z3_NOT_IN_RULES
#define z3_reducesumsquare Z3_NOT_IN_RULES
#define z3_reducelogsum Z3_NOT_IN_RULES
#define z3_reducelogsumexp Z3_NOT_IN_RULES
#define z3_logsoftmax Z3_NOT_IN_RULES
#define z3_hardmax Z3_NOT_IN_RULES
#define z3_argmax Z3_NOT_IN_RULES
#define z3_argmin Z3_NOT_IN_RULES
#define z3_trilu Z3_NOT_IN_RULES
#define z3_gatherelements Z3_NOT_IN_RULES
#define z3_depthtospace Z3_NOT_IN_RULES
#define z3_spacetodepth Z3_NOT_IN_RULES

#define z3_nllloss Z3_NOT_IN_RULES
#define z3_where Z3_NOT_IN_RULES

#define z3_equal Z3_NOT_IN_RULES
#define z3_less Z3_NOT_IN_RULES
#define z3_greater Z3_NOT_IN_RULES
#define z3_lessorequal Z3_NOT_IN_RULES
#define z3_greaterorequal Z3_NOT_IN_RULES
#define z3_isinf Z3_NOT_IN_RULES
#define z3_isnan Z3_NOT_IN_RULES

#define z3_convtranspose Z3_NOT_IN_RULES

#define z3_lrn Z3_NOT_IN_RULES
#define z3_scatterelements Z3_NOT_IN_RULES
#define z3_gathernd Z3_NOT_IN_RULES
#define z3_topk Z3_NOT_IN_RULES
#define z3_det Z3_NOT_IN_RULES
#define z3_not Z3_NOT_IN_RULES
#define z3_and Z3_NOT_IN_RULES
#define z3_or Z3_NOT_IN_RULES
#define z3_xor Z3_NOT_IN_RULES
#define z3_mod Z3_NOT_IN_RULES
#define z3_cast Z3_NOT_IN_RULES
#define z3_gru Z3_NOT_IN_RULES
#define z3_rnn Z3_NOT_IN_RULES
#define z3_conv3d Z3_NOT_IN_RULES
#define z3_convtranspose3d Z3_NOT_IN_RULES
#define z3_maxpool3d Z3_NOT_IN_RULES
#define z3_avgpool3d Z3_NOT_IN_RULES
#define z3_reversesequence Z3_NOT_IN_RULES
#define z3_tfidfvectorizer Z3_NOT_IN_RULES
#define z3_maxpoolidx Z3_NOT_IN_RULES
#define z3_maxunpool Z3_NOT_IN_RULES
#define z3_roialign Z3_NOT_IN_RULES
#define z3_dft Z3_NOT_IN_RULES
#define z3_stft Z3_NOT_IN_RULES
#define z3_gridsample Z3_NOT_IN_RULES
#define z3_scatternd Z3_NOT_IN_RULES

static const z3_fn z3_encoders[SO_OP_COUNT] = {
#define X(e, l, ...) [SO_OP_##e] = z3_##l,
#include "../src/ops.def"
#undef X
};

int so_verify_has_semantics(so_op op) { return z3_encoders[op] != Z3_NOT_IN_RULES; }

static int encode_node(renc *e, int side, int ni, Z3_ast *wf)
{
    const so_rnode *n = &(side ? &e->r->dst : &e->r->src)->nodes[ni];
    if (z3_encoders[n->op] == Z3_NOT_IN_RULES) return unsupported(e, "no Z3 semantics for '%s' (not in the rule language)", so_ops[n->op].name);
    const gterm *x[SO_RULE_MAX_IN];
    for (int k = 0; k < n->n_in; k++) x[k] = ref_term(e, side, n->in[k]);
    gterm *o = &e->node[side][ni][0];
    o->rank = 0;
    zctx cx = {e, side, ni, n, x, o, wf};
    return z3_encoders[n->op](&cx);
}

/* Encodes the whole rule into the solver (inside a push). Returns 0 ok, 1 unsupported. */
int vp_encode_rule(renc *e)
{
    so_verifier *v = e->v;
    Z3_context c = v->ctx;
    const so_rule *r = e->r;
    for (int s = 0; s < r->n_syms; s++) {
        char nm[32];
        snprintf(nm, sizeof nm, "sym!%s", r->sym_names[s]);
        e->sym[s] = Z3_mk_const(c, Z3_mk_string_symbol(c, nm), v->I);
        Z3_solver_assert(c, v->s, Z3_mk_ge(c, e->sym[s], vp_mk_int(v, 1)));
    }
    for (int p = 0; p < r->n_pre; p++) {
        const so_precond *pc = &r->pre[p];
        if (pc->sym < 0 || pc->sym >= r->n_syms) return unsupported(e, "precondition on unknown symbol");
        if (pc->kind == SO_PRE_GE) Z3_solver_assert(c, v->s, Z3_mk_ge(c, e->sym[pc->sym], vp_mk_int(v, pc->value)));
        else if (pc->kind == SO_PRE_DIV && pc->value > 0)
            Z3_solver_assert(c, v->s, vp_mk_eq(v, Z3_mk_mod(c, e->sym[pc->sym], vp_mk_int(v, pc->value)), vp_mk_int(v, 0)));
        else return unsupported(e, "unknown precondition kind %d", pc->kind);
    }
    for (int i = 0; i < r->n_inputs; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "in!%s", r->inputs[i].name);
        gterm *g = &e->in[i];
        g->t = Z3_mk_const(c, Z3_mk_string_symbol(c, nm), v->T);
        g->ok = Z3_mk_true(c);
        g->rank = r->inputs[i].rank;
        for (int k = 0; k < g->rank; k++) g->dim[k] = dimx_ast(e, &r->inputs[i].dim[k]);
        e->all[e->n_all++] = *g;
    }
    /* ok(t) <=> t type-checks, for every node of both sides; A / D: the source / target
       type-checks. Goal: (A <=> D) and (A => every mapped output is equal). */
    Z3_ast A = Z3_mk_true(c), D = Z3_mk_true(c);
    for (int side = 0; side < 2; side++) {
        const so_pattern *pat = side ? &r->dst : &r->src;
        for (int ni = 0; ni < pat->n_nodes; ni++) {
            const so_rnode *n = &pat->nodes[ni];
            for (int k = 0; k < n->n_in; k++) {
                so_rref ref = n->in[k];
                if ((ref.node < 0 && -(ref.node + 1) >= r->n_inputs) || ref.node >= ni) return unsupported(e, "bad reference");
            }
            Z3_ast wf = NULL;
            if (encode_node(e, side, ni, &wf)) return 1;
            Z3_ast in_ok = Z3_mk_true(c);
            for (int k = 0; k < n->n_in; k++) in_ok = vp_mk_and2(v, in_ok, ref_term(e, side, n->in[k])->ok);
            Z3_ast okc = vp_mk_and2(v, wf, in_ok);
            int nout = n->op == SO_OP_SPLIT ? n->n_out : 1;
            for (int k = 0; k < nout; k++) {
                gterm *g = &e->node[side][ni][k];
                g->ok = vp_mk_ok(v, g->t);
                Z3_solver_assert(c, v->s, vp_mk_eq(v, g->ok, okc));
                if (side) D = vp_mk_and2(v, D, g->ok);
                else A = vp_mk_and2(v, A, g->ok);
                e->all[e->n_all++] = *g;
            }
        }
    }
    /* shape facts: rank and dims of every ground term (when well-typed), equal shapes */
    for (int i = 0; i < e->n_all; i++) {
        gterm *g = &e->all[i];
        Z3_ast f = vp_mk_eq(v, vp_mk_rank(v, g->t), vp_mk_int(v, g->rank));
        for (int k = 0; k < g->rank; k++) f = vp_mk_and2(v, f, vp_mk_eq(v, vp_mk_dim(v, g->t, vp_mk_int(v, k)), g->dim[k]));
        Z3_solver_assert(c, v->s, Z3_mk_implies(c, g->ok, f));
        if (i < r->n_inputs) Z3_solver_assert(c, v->s, vp_mk_ok(v, g->t));
    }
    for (int i = 0; i < e->n_all; i++)
        for (int j = i + 1; j < e->n_all; j++) {
            gterm *a = &e->all[i], *b = &e->all[j];
            if (a->rank != b->rank) continue;
            Z3_ast pre = vp_mk_and2(v, vp_mk_and2(v, a->ok, b->ok), all_dims_eq(v, a, b, -1));
            Z3_solver_assert(c, v->s, Z3_mk_implies(c, pre, vp_mk_eq(v, vp_mk_shp(v, a->t), vp_mk_shp(v, b->t))));
        }
    Z3_ast eqs = Z3_mk_true(c);
    for (int k = 0; k < r->n_outputs; k++) {
        const gterm *s = ref_term(e, 0, r->src_out[k]), *d = ref_term(e, 1, r->dst_out[k]);
        eqs = vp_mk_and2(v, eqs, vp_mk_eq(v, s->t, d->t));
    }
    Z3_ast goal = vp_mk_and2(v, Z3_mk_iff(c, A, D), Z3_mk_implies(c, A, eqs));
    Z3_solver_assert(c, v->s, Z3_mk_not(c, goal));
    return 0;
}
