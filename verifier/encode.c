/* encode.c - rule encoding: both sides of a rule as Z3 terms; their shapes and well-formedness conditions come from the shared shape rules (src/shape.c) over solver terms. */
#include "verify_priv.h"

#include "../rules/rule_shape.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <z3.h>

/* ------------------------------------------------------------------ rule encoding */

/* a rule dim (constant plus a sum of symbols) as a Z3 term */
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

static Z3_ast all_dims_eq(so_verifier *v, const gterm *a, const gterm *b)
{
    Z3_ast c = Z3_mk_true(v->ctx);
    for (int i = 0; i < a->rank; i++) c = vp_mk_and2(v, c, vp_mk_eq(v, a->dim[i], b->dim[i]));
    return c;
}

/* ---------------- the dim algebra over solver terms (src/shape.h so_dim_alg) ----------------
   A dim is a Z3 integer term, so a rule node's shapes and well-typedness are the shared shape rules' (rules/rule_shape.c
   so_rule_node_dims, src/shape.c so_dims_*), the statement import and the rule checker use. The requirements a rule
   states (eq, at_least, a window that fits, two dims that broadcast) are conjoined into the node's condition *w and
   answered 1; decisions (is_one, as_const) answer for numerals only. Terms are built as the rules state them. */
typedef struct zalg {
    so_verifier *v;
    Z3_ast one;
    Z3_ast *w; /* the node's well-typedness: its shape rule's requirements */
} zalg;

#define ZD(d) (*(const Z3_ast *)(d))
#define ZSET(o, t) (*(Z3_ast *)(o) = (t), 1)

static void zreq(const zalg *z, Z3_ast c) { *z->w = vp_mk_and2(z->v, *z->w, c); }

static int z_as_const(const void *cx, const void *d, int64_t *val)
{
    const zalg *z = cx;
    Z3_ast t = ZD(d);
    if (!Z3_is_numeral_ast(z->v->ctx, t)) t = Z3_simplify(z->v->ctx, t);
    return Z3_is_numeral_ast(z->v->ctx, t) && Z3_get_numeral_int64(z->v->ctx, t, val);
}
static int z_is_one(const void *cx, const void *d)
{
    int64_t val;
    return z_as_const(cx, d, &val) && val == 1;
}
static int z_eq(const void *cx, const void *a, const void *b)
{
    const zalg *z = cx;
    if (ZD(a) != ZD(b)) zreq(z, vp_mk_eq(z->v, ZD(a), ZD(b)));
    return 1;
}
static int z_at_least(const void *cx, const void *d, int64_t k)
{
    const zalg *z = cx;
    zreq(z, Z3_mk_ge(z->v->ctx, ZD(d), vp_mk_int(z->v, k)));
    return 1;
}
static int z_add(const void *cx, const void *a, const void *b, void *out) { return ZSET(out, vp_mk_add(((const zalg *)cx)->v, ZD(a), ZD(b))); }
static int z_mul(const void *cx, const void *a, int64_t k, void *out)
{
    const zalg *z = cx;
    return ZSET(out, Z3_mk_mul(z->v->ctx, 2, (Z3_ast[]){ZD(a), vp_mk_int(z->v, k)}));
}
static int z_muld(const void *cx, const void *a, const void *b, void *out)
{
    return ZSET(out, Z3_mk_mul(((const zalg *)cx)->v->ctx, 2, (Z3_ast[]){ZD(a), ZD(b)}));
}
static int z_div(const void *cx, const void *a, int64_t k, int round_up, void *out)
{
    const zalg *z = cx;
    if (k < 1) return 0;
    Z3_ast num = round_up ? vp_mk_add(z->v, ZD(a), vp_mk_int(z->v, k - 1)) : ZD(a);
    return ZSET(out, Z3_mk_div(z->v->ctx, num, vp_mk_int(z->v, k)));
}
static int z_of_const(const void *cx, int64_t val, void *out) { return ZSET(out, vp_mk_int(((const zalg *)cx)->v, val)); }
/* so_window_out over a term: requires span = h + pb + pe - (d (k - 1) + 1) >= 0; floor(span / s) + 1, or with
   ceil_mode ceil(span / s) + 1 less one when the last window would start past h + pb (only possible when the
   window is shorter than pe + s: concrete in the attributes) */
static int z_window(const void *cx, const void *h, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, int ceil_mode, void *out)
{
    const zalg *z = cx;
    so_verifier *v = z->v;
    const int64_t eff = d * (k - 1) + 1;
    if (s < 1 || k < 1 || d < 1) return 0;
    Z3_ast span = vp_mk_sub(v, vp_mk_add(v, ZD(h), vp_mk_int(v, pb + pe)), vp_mk_int(v, eff));
    zreq(z, Z3_mk_ge(v->ctx, span, vp_mk_int(v, 0)));
    if (ceil_mode) span = vp_mk_add(v, span, vp_mk_int(v, s - 1));
    Z3_ast o = vp_mk_add(v, Z3_mk_div(v->ctx, span, vp_mk_int(v, s)), vp_mk_int(v, 1));
    if (ceil_mode && eff < pe + s) {
        Z3_ast start = Z3_mk_mul(v->ctx, 2, (Z3_ast[]){vp_mk_sub(v, o, vp_mk_int(v, 1)), vp_mk_int(v, s)});
        Z3_ast past = Z3_mk_ge(v->ctx, start, vp_mk_add(v, ZD(h), vp_mk_int(v, pb)));
        o = Z3_mk_ite(v->ctx, past, vp_mk_sub(v, o, vp_mk_int(v, 1)), o);
    }
    return ZSET(out, o);
}
/* numpy broadcasting of two present dims: equal or either is 1, the result the one that is not 1 */
static int z_bcast(const void *cx, const void *a, const void *b, void *out)
{
    const zalg *z = cx;
    so_verifier *v = z->v;
    if (ZD(a) == ZD(b)) return ZSET(out, ZD(a));
    Z3_ast alts[3] = {vp_mk_eq(v, ZD(a), ZD(b)), vp_mk_eq(v, ZD(a), z->one), vp_mk_eq(v, ZD(b), z->one)};
    zreq(z, Z3_mk_or(v->ctx, 3, alts));
    return ZSET(out, Z3_mk_ite(v->ctx, alts[1], ZD(b), ZD(a)));
}
static void z_print(const void *cx, const void *d, char *buf, size_t n) { snprintf(buf, n, "%s", Z3_ast_to_string(((const zalg *)cx)->v->ctx, ZD(d))); }

static const so_dim_alg dim_z3 = {sizeof(Z3_ast), NULL, NULL, z_is_one, z_eq, z_at_least, z_add, z_mul, z_muld,
                                  z_div, z_as_const, z_of_const, z_window, z_bcast, z_print, 0};

/* ---------------- Z3 semantics, one term builder per operator (ops.def) ----------------
   z3_<op> builds the term(s) of pattern node ni of one side of a rule, its shapes already computed by the shape
   rule (the outputs' ranks and dims set, the inputs' dims at hand). Returns 0, or 1 if this instance has no Z3
   semantics (e->unsupported set, e.g. a conv with asymmetric pads). */

typedef struct zctx {
    renc *e;
    int side, ni;
    const so_rnode *n;
    const gterm *const *x; /* the inputs' terms */
    gterm *o;              /* output 0's term (split: all outputs, e->node[side][ni][k]) */
    const Z3_ast *ndx;     /* the node's own dims n->dx as terms */
} zctx;

#define Z3_LOCALS                                                                             \
    renc *e = cx->e;                                                                          \
    so_verifier *v = e->v;                                                                    \
    const so_rnode *n = cx->n;                                                                \
    const so_attr *a = &n->attr;                                                              \
    const gterm *const *x = cx->x;                                                            \
    gterm *o = cx->o;                                                                         \
    const char *opname = so_ops[n->op].name;                                                  \
    (void)e, (void)v, (void)n, (void)a, (void)x, (void)o, (void)opname

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

static int z3_identity(zctx *cx)
{
    Z3_LOCALS;
    o->t = x[0]->t;
    return 0;
}

static int z3_relu(zctx *cx)
{
    Z3_LOCALS;
    o->t = vp_mk_fn(v, n->op == SO_OP_RELU ? ZF_RELU : n->op == SO_OP_SIGMOID ? ZF_SIGMOID : ZF_TANH, NULL, &x[0]->t);
    return 0;
}

static int z3_add(zctx *cx)
{
    Z3_LOCALS;
    Z3_ast ts[2] = {x[0]->t, x[1]->t};
    o->t = vp_mk_fn(v, n->op == SO_OP_ADD ? ZF_ADD : ZF_MUL, NULL, ts);
    if (n->op == SO_OP_ADD && !(o->t = apply_act(e, o->t, a->act))) return unsupported(e, "add with activation %d", a->act);
    return 0;
}

/* the matmul axioms cover a rank-3 activation by a matrix ([s0,s1,k] @ [k,m], axioms mm3-*) and equal ranks >= 2
   with equal batch dims: batch broadcasting (a dim 1 against n) is real semantics they do not model, refused unless
   the batch dims are equal for every symbol value */
static int z3_matmul(zctx *cx)
{
    Z3_LOCALS;
    const gterm *A = x[0], *Bt = x[1];
    Z3_ast ts[2] = {A->t, Bt->t};
    if (!(A->rank == 3 && Bt->rank == 2)) {
        if (A->rank < 2 || A->rank != Bt->rank) return unsupported(e, "matmul of ranks %d and %d", A->rank, Bt->rank);
        for (int i = 0; i < A->rank - 2; i++) {
            Z3_ast d = Z3_simplify(v->ctx, vp_mk_sub(v, A->dim[i], Bt->dim[i]));
            int64_t val;
            if (!Z3_get_numeral_int64(v->ctx, d, &val) || val != 0) return unsupported(e, "matmul with batch broadcasting");
        }
    }
    o->t = vp_mk_fn(v, ZF_MATMUL, NULL, ts);
    if (!(o->t = apply_act(e, o->t, a->act))) return unsupported(e, "matmul with activation %d", a->act);
    return 0;
}

/* A conv's group as a Z3 term: the attribute, or for group=dw (SO_RULE_GROUP_DW, rules only) the kernel's
   output channels W.dim0 (the shape rule required the kernel [C,1,kh,kw]). */
static Z3_ast conv_group(zctx *cx, const gterm *W)
{
    const so_attr *a = &cx->n->attr;
    if (a->group != SO_RULE_GROUP_DW) return vp_mk_int(cx->e->v, a->group > 0 ? a->group : 1);
    return W->dim[0];
}

/* the conv's term over input term xt: conv ints (bias) (act) */
static int conv_term(zctx *cx, Z3_ast xt, Z3_ast *t)
{
    Z3_LOCALS;
    if (a->pad[0] != a->pad[2] || a->pad[1] != a->pad[3]) return unsupported(e, "%s with asymmetric pads", opname);
    if (stride_of(a->dilation[0]) != 1 || stride_of(a->dilation[1]) != 1) return unsupported(e, "dilated %s", opname);
    const gterm *W = x[1];
    Z3_ast ints[5] = {vp_mk_int(v, stride_of(a->stride[0])), vp_mk_int(v, stride_of(a->stride[1])), vp_mk_int(v, a->pad[0]),
                      vp_mk_int(v, a->pad[1]), conv_group(cx, W)};
    Z3_ast ts[2] = {xt, W->t};
    *t = vp_mk_fn(v, ZF_CONV, ints, ts);
    if (n->n_in == 3) {
        Z3_ast bt[2] = {*t, x[2]->t};
        *t = vp_mk_fn(v, ZF_BIAS, NULL, bt);
    }
    if (!(*t = apply_act(e, *t, a->act))) return unsupported(e, "%s with activation %d", opname, a->act);
    return 0;
}

static int z3_conv(zctx *cx) { return conv_term(cx, cx->x[0]->t, &cx->o->t); }

/* Blocked channel layout (issue 15): blk b x = nchwc_in, [n, ceil(c/b), h, w, b] with zero padding lanes. */
static int z3_nchwc_in(zctx *cx)
{
    Z3_LOCALS;
    Z3_ast b = vp_mk_int(v, a->ints[0]);
    o->t = vp_mk_fn(v, ZF_BLK, &b, &x[0]->t);
    return 0;
}

/* unblk b c y = nchwc_out: the c channels of a blocked value back as [n, c, h, w] (b, c: the node's dims; in
   generated rules c is symbolic, c = b * k: exact blocking) */
static int z3_nchwc_out(zctx *cx)
{
    Z3_LOCALS;
    Z3_ast ints[2] = {cx->ndx[0], cx->ndx[1]};
    o->t = vp_mk_fn(v, ZF_UNBLK, ints, &x[0]->t);
    return 0;
}

/* conv_nchwc, by its definition (ops.def): the kernel reads only the C = W.dim1 * group real
   channels of its blocked input and writes zero padding lanes, so
   conv_nchwc(X, W[, B]) = blk b (act (conv (unblk b C X) W [+ B])). */
static int z3_conv_nchwc(zctx *cx)
{
    Z3_LOCALS;
    const gterm *X = x[0], *W = x[1];
    Z3_ast b = X->dim[4];
    Z3_ast ub[2] = {b, Z3_mk_mul(v->ctx, 2, (Z3_ast[]){W->dim[1], conv_group(cx, W)})};
    Z3_ast t;
    if (conv_term(cx, vp_mk_fn(v, ZF_UNBLK, ub, &X->t), &t)) return 1;
    o->t = vp_mk_fn(v, ZF_BLK, &b, &t);
    return 0;
}

static int z3_transpose(zctx *cx)
{
    Z3_LOCALS;
    const gterm *X = x[0];
    if (a->n_ints != X->rank || X->rank > 4 || X->rank < 1) return unsupported(e, "transpose perm of %d ints on rank %d", a->n_ints, X->rank);
    Z3_ast code = vp_mk_int(v, so_perm_code(X->rank, a->ints));
    o->t = vp_mk_fn(v, ZF_TR, &code, &X->t);
    return 0;
}

static int z3_concat(zctx *cx)
{
    Z3_LOCALS;
    Z3_ast axi = vp_mk_int(v, a->axis);
    Z3_ast t = x[n->n_in - 1]->t;
    for (int k = n->n_in - 2; k >= 0; k--) {
        Z3_ast ts[2] = {x[k]->t, t};
        t = vp_mk_fn(v, ZF_CONCAT, &axi, ts);
    }
    o->t = t;
    return 0;
}

/* output k = spl axis offset size X, the sizes the node's dims (the outputs' dims on the axis) */
static int z3_split(zctx *cx)
{
    Z3_LOCALS;
    Z3_ast off = vp_mk_int(v, 0);
    for (int k = 0; k < n->n_out; k++) {
        gterm *ok = &e->node[cx->side][cx->ni][k];
        Z3_ast ints[3] = {vp_mk_int(v, a->axis), off, ok->dim[a->axis]};
        ok->t = vp_mk_fn(v, ZF_SPL, ints, &x[0]->t);
        off = vp_mk_add(v, off, ok->dim[a->axis]);
    }
    return 0;
}

static int z3_enlarge(zctx *cx)
{
    Z3_LOCALS;
    Z3_ast ints[2] = {vp_mk_int(v, a->kernel[0]), vp_mk_int(v, a->kernel[1])};
    o->t = vp_mk_fn(v, ZF_ENLARGE, ints, &x[0]->t);
    return 0;
}

/* a 2-D pool's term over input term xt (op: maxpool / avgpool / globalavgpool) */
static int pool_term(zctx *cx, so_op op, Z3_ast xt, Z3_ast *t)
{
    Z3_LOCALS;
    if (op == SO_OP_GLOBALAVGPOOL) {
        *t = vp_mk_fn(v, ZF_GAP, NULL, &xt);
        return 0;
    }
    if (a->pad[0] != a->pad[2] || a->pad[1] != a->pad[3]) return unsupported(e, "pool with asymmetric pads");
    if (a->ceil_mode && (op != SO_OP_MAXPOOL || a->pad[0] || a->pad[1])) return unsupported(e, "pool with ceil_mode (only max pooling without pads)");
    if (op == SO_OP_MAXPOOL && (stride_of(a->dilation[0]) != 1 || stride_of(a->dilation[1]) != 1)) return unsupported(e, "dilated maxpool");
    if (op == SO_OP_AVGPOOL && !a->count_include_pad && (a->pad[0] || a->pad[1]))
        return unsupported(e, "avgpool with pads not counted (count_include_pad=0)");
    Z3_ast ints[6] = {vp_mk_int(v, a->kernel[0]), vp_mk_int(v, a->kernel[1]), vp_mk_int(v, stride_of(a->stride[0])),
                      vp_mk_int(v, stride_of(a->stride[1])), vp_mk_int(v, a->pad[0]), vp_mk_int(v, a->pad[1])};
    *t = vp_mk_fn(v, op == SO_OP_AVGPOOL ? ZF_AVGPOOL : a->ceil_mode ? ZF_MAXPOOLC : ZF_MAXPOOL, ints, &xt);
    return 0;
}

static int z3_avgpool(zctx *cx) { return pool_term(cx, cx->n->op, cx->x[0]->t, &cx->o->t); }

static int z3_globalavgpool(zctx *cx)
{
    if (cx->x[0]->rank != 4) return unsupported(cx->e, "globalavgpool of rank %d", cx->x[0]->rank);
    return pool_term(cx, SO_OP_GLOBALAVGPOOL, cx->x[0]->t, &cx->o->t);
}

/* The blocked pools, by their definition (ops.def): they pool every lane of a blocked value
   (zero padding lanes stay zero), so pool_nchwc(X) = blk b (pool (unblk b (b * blocks) X)): the
   plain pool's term on the unblocked lanes, blocked again. The definitions are self-checked
   against the kernels (axioms maxpoolb-def, gapb-def). */
static int z3_pool_nchwc(zctx *cx)
{
    Z3_LOCALS;
    const gterm *X = x[0];
    Z3_ast b = X->dim[4];
    Z3_ast ub[2] = {b, Z3_mk_mul(v->ctx, 2, (Z3_ast[]){X->dim[1], b})};
    const so_op op = n->op == SO_OP_MAXPOOL_NCHWC ? SO_OP_MAXPOOL : n->op == SO_OP_AVGPOOL_NCHWC ? SO_OP_AVGPOOL : SO_OP_GLOBALAVGPOOL;
    Z3_ast t;
    if (pool_term(cx, op, vp_mk_fn(v, ZF_UNBLK, ub, &X->t), &t)) return 1;
    o->t = vp_mk_fn(v, ZF_BLK, &b, &t);
    return 0;
}

/* the epsilon's bits as the operators' integer parameter */
static Z3_ast eps_bits(so_verifier *v, float eps)
{
    uint32_t bits;
    memcpy(&bits, &eps, sizeof bits);
    return vp_mk_int(v, bits);
}

static int z3_batchnorm(zctx *cx)
{
    Z3_LOCALS;
    Z3_ast eps = eps_bits(v, a->epsilon), ts[5];
    for (int k = 0; k < 5; k++) ts[k] = x[k]->t;
    o->t = vp_mk_fn(v, ZF_BN, &eps, ts);
    return 0;
}

/* conv+BN folding weights: bnfw eps W scale var; bnfb eps scale B mean var; bnfbc ... cbias */
static int z3_bnfold_w(zctx *cx)
{
    Z3_LOCALS;
    Z3_ast eps = eps_bits(v, a->epsilon), ts[5];
    for (int k = 0; k < n->n_in; k++) ts[k] = x[k]->t;
    o->t = vp_mk_fn(v, n->op == SO_OP_BNFOLD_W ? ZF_BNFW : n->n_in == 5 ? ZF_BNFBC : ZF_BNFB, &eps, ts);
    return 0;
}

static int z3_const_pool(zctx *cx)
{
    Z3_LOCALS;
    Z3_ast ints[3] = {o->dim[0], o->dim[2], o->dim[3]};
    o->t = vp_mk_fn(v, n->op == SO_OP_CONST_POOL ? ZF_CPOOL : ZF_CIDCONV, ints, NULL);
    return 0;
}

static int z3_const_idmat(zctx *cx)
{
    Z3_LOCALS;
    o->t = vp_mk_fn(v, ZF_CIDMAT, &o->dim[0], NULL);
    return 0;
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
#define z3_globallppool Z3_NOT_IN_RULES
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

/* Pattern node ni of one side: its outputs' shapes and well-typedness *wf (without the inputs' own ok) by the
   shared shape rule over solver terms, then its term(s). Returns 0, or 1 if the node has no Z3 semantics or its
   shape rule fails for every symbol value (e->unsupported set). */
static int encode_node(renc *e, int side, int ni, Z3_ast *wf)
{
    const so_rnode *n = &(side ? &e->r->dst : &e->r->src)->nodes[ni];
    const char *opname = so_ops[n->op].name;
    if (z3_encoders[n->op] == Z3_NOT_IN_RULES) return unsupported(e, "no Z3 semantics for '%s' (not in the rule language)", opname);
    if (n->n_out < 1 || n->n_out > SO_RULE_MAX_OUTPUTS || n->n_dx > SO_MAX_RANK) return unsupported(e, "%s with %d outputs", opname, n->n_out);
    const gterm *x[SO_RULE_MAX_IN];
    so_dims in[SO_RULE_MAX_IN], out[SO_RULE_MAX_OUTPUTS];
    Z3_ast ndx[SO_MAX_RANK];
    for (int k = 0; k < n->n_in; k++) {
        x[k] = ref_term(e, side, n->in[k]);
        in[k] = (so_dims){x[k]->rank, (void *)x[k]->dim};
    }
    for (int k = 0; k < n->n_dx; k++) ndx[k] = dimx_ast(e, &n->dx[k]);
    const so_dims nd = {n->n_dx, ndx};
    for (int j = 0; j < n->n_out; j++) {
        e->node[side][ni][j].rank = 0;
        out[j] = (so_dims){0, e->node[side][ni][j].dim};
    }
    *wf = Z3_mk_true(e->v->ctx);
    zalg z = {e->v, vp_mk_int(e->v, 1), wf};
    so_dim_alg A = dim_z3;
    A.one = &z.one;
    A.cx = &z;
    if (so_rule_node_dims(&A, n, in, &nd, out) != SO_OK) return unsupported(e, "%s: %s", opname, so_error());
    for (int j = 0; j < n->n_out; j++) {
        if (out[j].rank < 0) return unsupported(e, "no shape rule for '%s'", opname);
        e->node[side][ni][j].rank = out[j].rank;
    }
    zctx cx = {e, side, ni, n, x, &e->node[side][ni][0], ndx};
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
            Z3_ast pre = vp_mk_and2(v, vp_mk_and2(v, a->ok, b->ok), all_dims_eq(v, a, b));
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
