/* verify.c - Z3 encoding of operators and axioms, rule proving, numeric guard, and the `verify` subcommand. */
#include "verify.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <z3.h>

#include "../kernels/ref.h"
#include "axioms.h"

/* ------------------------------------------------------------------ signature */

typedef struct fsig {
    const char *name;
    int n_int, n_t;
    int int_result; /* 0: Tensor, 1: Int */
} fsig;

/* Tensor operators (integer attributes first), then permutation helpers. */
static const fsig sigs[] = {
    {"add", 0, 2, 0},     {"mul", 0, 2, 0},     {"relu", 0, 1, 0},   {"sigmoid", 0, 1, 0}, {"tanh", 0, 1, 0},
    {"matmul", 0, 2, 0},  {"conv", 5, 2, 0},    {"tr", 1, 1, 0},     {"concat", 1, 2, 0},  {"spl", 3, 1, 0},
    {"enlarge", 2, 1, 0}, {"avgpool", 6, 1, 0}, {"maxpool", 6, 1, 0}, {"cpool", 3, 0, 0}, {"cidconv", 3, 0, 0},
    {"cidmat", 1, 0, 0},  {"pcomp", 2, 0, 1},   {"pidx", 2, 0, 1},   {"pinv", 2, 0, 1},    {"pswap", 1, 0, 1},
    {"pid", 1, 0, 1},     {"bias", 0, 2, 0},    {"bn", 1, 5, 0},     {"bnfw", 1, 3, 0},   {"bnfb", 1, 4, 0},
    {"bnfbc", 1, 5, 0},
};
#define N_SIGS ((int)SO_ARRAY_LEN(sigs))

struct so_verifier {
    Z3_context ctx;
    Z3_solver s;
    Z3_sort T, S, I, B;
    Z3_func_decl shp, srk, sdim, okf;
    Z3_func_decl fn[N_SIGS];
    int skip_axiom; /* -1, or an axiom left out (redundancy check) */
};

static int sig_index(const char *name)
{
    for (int i = 0; i < N_SIGS; i++)
        if (!strcmp(sigs[i].name, name)) return i;
    return -1;
}

static pthread_once_t z3_once = PTHREAD_ONCE_INIT;
static void z3_global_init(void)
{
    Z3_global_param_set("smt.mbqi", "false");
}

static Z3_ast mk_int(so_verifier *v, int64_t x) { return Z3_mk_int64(v->ctx, x, v->I); }
static Z3_ast mk_and2(so_verifier *v, Z3_ast a, Z3_ast b)
{
    Z3_ast x[2] = {a, b};
    return Z3_mk_and(v->ctx, 2, x);
}
static Z3_ast mk_eq(so_verifier *v, Z3_ast a, Z3_ast b) { return Z3_mk_eq(v->ctx, a, b); }
static Z3_ast mk_add(so_verifier *v, Z3_ast a, Z3_ast b)
{
    Z3_ast x[2] = {a, b};
    return Z3_mk_add(v->ctx, 2, x);
}
static Z3_ast mk_sub(so_verifier *v, Z3_ast a, Z3_ast b)
{
    Z3_ast x[2] = {a, b};
    return Z3_mk_sub(v->ctx, 2, x);
}
static Z3_ast mk_shp(so_verifier *v, Z3_ast t) { return Z3_mk_app(v->ctx, v->shp, 1, &t); }
static Z3_ast mk_rank(so_verifier *v, Z3_ast t)
{
    Z3_ast s = mk_shp(v, t);
    return Z3_mk_app(v->ctx, v->srk, 1, &s);
}
static Z3_ast mk_dim(so_verifier *v, Z3_ast t, Z3_ast i)
{
    Z3_ast a[2] = {mk_shp(v, t), i};
    return Z3_mk_app(v->ctx, v->sdim, 2, a);
}
static Z3_ast mk_ok(so_verifier *v, Z3_ast t)
{
    Z3_ast s = mk_shp(v, t);
    return Z3_mk_app(v->ctx, v->okf, 1, &s);
}
static Z3_ast mk_fn(so_verifier *v, const char *name, const Z3_ast *ints, const Z3_ast *ts)
{
    int k = sig_index(name);
    Z3_ast a[12];
    int n = 0;
    for (int i = 0; i < sigs[k].n_int; i++) a[n++] = ints[i];
    for (int i = 0; i < sigs[k].n_t; i++) a[n++] = ts[i];
    return Z3_mk_app(v->ctx, v->fn[k], (unsigned)n, a);
}

/* ------------------------------------------------------------------ axioms in Z3 */

typedef struct zenv {
    Z3_ast var[AX_MAX_VARS], param[AX_MAX_VARS];
} zenv;

/* Translates an axiom term. Returns NULL on an unknown function (a bug in the table). */
static Z3_ast zterm(so_verifier *v, const zenv *e, const ax_term *t)
{
    Z3_context c = v->ctx;
    switch (t->kind) {
    case AX_TVAR: return e->var[t->var];
    case AX_IVAR: return e->param[t->var];
    case AX_INT: return mk_int(v, t->val);
    case AX_APP: break;
    }
    Z3_ast a[8];
    for (int k = 0; k < t->n; k++)
        if (!(a[k] = zterm(v, e, t->arg[k]))) return NULL;
    const char *f = t->fn;
    if (!strcmp(f, "and")) return Z3_mk_and(c, (unsigned)t->n, a);
    if (!strcmp(f, "or")) return Z3_mk_or(c, (unsigned)t->n, a);
    if (!strcmp(f, "not")) return Z3_mk_not(c, a[0]);
    if (!strcmp(f, "=")) return Z3_mk_eq(c, a[0], a[1]);
    if (!strcmp(f, ">=")) return Z3_mk_ge(c, a[0], a[1]);
    if (!strcmp(f, "<=")) return Z3_mk_le(c, a[0], a[1]);
    if (!strcmp(f, ">")) return Z3_mk_gt(c, a[0], a[1]);
    if (!strcmp(f, "<")) return Z3_mk_lt(c, a[0], a[1]);
    if (!strcmp(f, "+")) return Z3_mk_add(c, (unsigned)t->n, a);
    if (!strcmp(f, "-")) return Z3_mk_sub(c, (unsigned)t->n, a);
    if (!strcmp(f, "*")) return Z3_mk_mul(c, (unsigned)t->n, a);
    if (!strcmp(f, "div")) return Z3_mk_div(c, a[0], a[1]);
    if (!strcmp(f, "mod")) return Z3_mk_mod(c, a[0], a[1]);
    if (!strcmp(f, "ok")) return mk_ok(v, a[0]);
    if (!strcmp(f, "same")) return Z3_mk_eq(c, mk_shp(v, a[0]), mk_shp(v, a[1]));
    if (!strcmp(f, "rank")) return mk_rank(v, a[0]);
    if (!strcmp(f, "dim")) return mk_dim(v, a[0], a[1]);
    int k = sig_index(f);
    if (k < 0 || sigs[k].n_int + sigs[k].n_t != t->n) return NULL;
    return Z3_mk_app(c, v->fn[k], (unsigned)t->n, a);
}

/* Is t usable as a trigger (only uninterpreted functions, variables and literals)? */
static int pattern_ok(const ax_term *t)
{
    if (t->kind != AX_APP) return 1;
    if (sig_index(t->fn) < 0 && strcmp(t->fn, "dim") && strcmp(t->fn, "rank")) return 0;
    for (int k = 0; k < t->n; k++)
        if (!pattern_ok(t->arg[k])) return 0;
    return 1;
}

static void term_vars(const ax_term *t, unsigned *tv, unsigned *pv)
{
    if (t->kind == AX_TVAR) *tv |= 1u << t->var;
    if (t->kind == AX_IVAR) *pv |= 1u << t->var;
    if (t->kind == AX_APP)
        for (int k = 0; k < t->n; k++) term_vars(t->arg[k], tv, pv);
}

/* A trigger for side t: t itself, or its first tensor-operator subterm binding every variable. */
static const ax_term *find_trigger(const ax_term *t, unsigned need_t, unsigned need_p)
{
    unsigned tv = 0, pv = 0;
    term_vars(t, &tv, &pv);
    if ((tv & need_t) != need_t || (pv & need_p) != need_p) return NULL;
    if (t->kind == AX_APP && pattern_ok(t) && sig_index(t->fn) >= 0) return t;
    if (t->kind == AX_APP && pattern_ok(t) && (!strcmp(t->fn, "dim") || !strcmp(t->fn, "rank"))) return t;
    if (t->kind != AX_APP) return NULL;
    for (int k = 0; k < t->n; k++) {
        const ax_term *r = find_trigger(t->arg[k], need_t, need_p);
        if (r) return r;
    }
    return NULL;
}

/* Builds the quantified formula of axiom ap. */
static Z3_ast axiom_formula(so_verifier *v, const ax_parsed *ap)
{
    Z3_context c = v->ctx;
    zenv e;
    Z3_app bound[2 * AX_MAX_VARS];
    unsigned nb = 0;
    for (int i = 0; i < ap->n_vars; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "%s!%s", ap->ax->name, ap->var_names[i]);
        e.var[i] = Z3_mk_const(c, Z3_mk_string_symbol(c, nm), v->T);
        bound[nb++] = Z3_to_app(c, e.var[i]);
    }
    for (int i = 0; i < ap->n_params; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "%s!%s", ap->ax->name, ap->param_names[i]);
        e.param[i] = Z3_mk_const(c, Z3_mk_string_symbol(c, nm), v->I);
        bound[nb++] = Z3_to_app(c, e.param[i]);
    }
    Z3_ast l = zterm(v, &e, ap->lhs), r = zterm(v, &e, ap->rhs);
    Z3_ast g = ap->guard ? zterm(v, &e, ap->guard) : Z3_mk_true(c);
    if (!l || !r || !g) return NULL;
    Z3_ast body = Z3_mk_implies(c, g, Z3_mk_eq(c, l, r));
    unsigned need_t = (1u << ap->n_vars) - 1, need_p = (1u << ap->n_params) - 1;
    Z3_pattern pats[2];
    unsigned np = 0;
    const ax_term *tl = find_trigger(ap->lhs, need_t, need_p);
    if (tl) {
        Z3_ast x = zterm(v, &e, tl);
        pats[np++] = Z3_mk_pattern(c, 1, &x);
    }
    if (!np && ap->guard) {
        const ax_term *tg = find_trigger(ap->guard, need_t, need_p);
        if (tg) {
            Z3_ast x = zterm(v, &e, tg);
            pats[np++] = Z3_mk_pattern(c, 1, &x);
        }
    }
    if (ap->ax->flags & AXF_BIDIR) {
        const ax_term *tr = find_trigger(ap->rhs, need_t, need_p);
        if (tr) {
            Z3_ast x = zterm(v, &e, tr);
            pats[np++] = Z3_mk_pattern(c, 1, &x);
        }
    }
    if (!np) return NULL;
    if (nb == 0) return body;
    return Z3_mk_forall_const(c, 0, nb, bound, np, pats, body);
}

/* Ground facts about the permutation helpers for ranks 1..4. */
static void assert_perm_facts(so_verifier *v)
{
    int64_t perms[5][24][4];
    int np[5] = {0};
    for (int r = 1; r <= 4; r++) {
        int64_t p[4] = {0, 1, 2, 3};
        /* all permutations of 0..r-1 by counting in base r and filtering */
        int64_t total = 1;
        for (int i = 0; i < r; i++) total *= r;
        for (int64_t x = 0; x < total; x++) {
            int64_t y = x;
            int seen = 0, okp = 1;
            for (int i = 0; i < r; i++) {
                p[i] = y % r;
                y /= r;
                if (seen & (1 << p[i])) okp = 0;
                seen |= 1 << p[i];
            }
            if (okp) memcpy(perms[r][np[r]++], p, sizeof p);
        }
    }
    Z3_context c = v->ctx;
    int kc = sig_index("pcomp"), ki = sig_index("pidx"), kv = sig_index("pinv"), ks = sig_index("pswap"), kd = sig_index("pid");
    for (int r = 1; r <= 4; r++) {
        int64_t idp[4] = {0, 1, 2, 3}, sw[4] = {0, 1, 2, 3};
        Z3_ast rr = mk_int(v, r);
        Z3_ast idc = mk_int(v, so_perm_code(r, idp));
        Z3_solver_assert(c, v->s, mk_eq(v, Z3_mk_app(c, v->fn[kd], 1, &rr), idc));
        if (r >= 2) {
            sw[r - 2] = r - 1, sw[r - 1] = r - 2;
            Z3_solver_assert(c, v->s, mk_eq(v, Z3_mk_app(c, v->fn[ks], 1, &rr), mk_int(v, so_perm_code(r, sw))));
        }
        for (int a = 0; a < np[r]; a++) {
            const int64_t *p = perms[r][a];
            Z3_ast pc = mk_int(v, so_perm_code(r, p));
            for (int i = 0; i < r; i++) {
                Z3_ast args[2] = {pc, mk_int(v, i)};
                Z3_solver_assert(c, v->s, mk_eq(v, Z3_mk_app(c, v->fn[ki], 2, args), mk_int(v, p[i])));
                Z3_solver_assert(c, v->s, mk_eq(v, Z3_mk_app(c, v->fn[kv], 2, (Z3_ast[]){pc, mk_int(v, p[i])}), mk_int(v, i)));
            }
            for (int b = 0; b < np[r]; b++) {
                const int64_t *q = perms[r][b];
                int64_t comp[4];
                for (int i = 0; i < r; i++) comp[i] = q[p[i]];
                Z3_ast args[2] = {pc, mk_int(v, so_perm_code(r, q))};
                Z3_solver_assert(c, v->s, mk_eq(v, Z3_mk_app(c, v->fn[kc], 2, args), mk_int(v, so_perm_code(r, comp))));
            }
        }
    }
}

static so_status verifier_init(so_verifier *v, int skip_axiom)
{
    pthread_once(&z3_once, z3_global_init);
    Z3_config cfg = Z3_mk_config();
    v->ctx = Z3_mk_context(cfg);
    Z3_del_config(cfg);
    Z3_context c = v->ctx;
    Z3_set_error_handler(c, NULL);
    v->skip_axiom = skip_axiom;
    v->T = Z3_mk_uninterpreted_sort(c, Z3_mk_string_symbol(c, "Tensor"));
    v->S = Z3_mk_uninterpreted_sort(c, Z3_mk_string_symbol(c, "Shape"));
    v->I = Z3_mk_int_sort(c);
    v->B = Z3_mk_bool_sort(c);
    v->shp = Z3_mk_func_decl(c, Z3_mk_string_symbol(c, "shape"), 1, &v->T, v->S);
    v->srk = Z3_mk_func_decl(c, Z3_mk_string_symbol(c, "rank"), 1, &v->S, v->I);
    Z3_sort sd[2] = {v->S, v->I};
    v->sdim = Z3_mk_func_decl(c, Z3_mk_string_symbol(c, "dim"), 2, sd, v->I);
    v->okf = Z3_mk_func_decl(c, Z3_mk_string_symbol(c, "ok"), 1, &v->S, v->B);
    for (int k = 0; k < N_SIGS; k++) {
        Z3_sort dom[10];
        int n = 0;
        for (int i = 0; i < sigs[k].n_int; i++) dom[n++] = v->I;
        for (int i = 0; i < sigs[k].n_t; i++) dom[n++] = v->T;
        v->fn[k] = Z3_mk_func_decl(c, Z3_mk_string_symbol(c, sigs[k].name), (unsigned)n, dom, sigs[k].int_result ? v->I : v->T);
    }
    v->s = Z3_mk_solver(c);
    Z3_solver_inc_ref(c, v->s);
    assert_perm_facts(v);
    const ax_parsed *ax;
    int n = so_axioms_get(&ax);
    for (int k = 0; k < n; k++) {
        if (k == skip_axiom) continue;
        Z3_ast f = axiom_formula(v, &ax[k]);
        if (!f) return so_errorf("axiom '%s' cannot be encoded (no trigger or unknown function)", ax[k].ax->name);
        Z3_solver_assert(c, v->s, f);
    }
    if (Z3_get_error_code(c) != Z3_OK) return so_errorf("Z3 error while asserting axioms: %s", Z3_get_error_msg(c, Z3_get_error_code(c)));
    return SO_OK;
}

so_status so_verifier_new(so_verifier **out)
{
    so_verifier *v = so_xcalloc(1, sizeof *v);
    if (verifier_init(v, -1) != SO_OK) {
        so_verifier_free(v);
        return SO_ERR;
    }
    *out = v;
    return SO_OK;
}

void so_verifier_free(so_verifier *v)
{
    if (!v) return;
    if (v->ctx) {
        if (v->s) Z3_solver_dec_ref(v->ctx, v->s);
        Z3_del_context(v->ctx);
    }
    free(v);
}

/* ------------------------------------------------------------------ rule encoding */

/* A ground term of a rule with its symbolic shape (valid when ok holds). */
typedef struct gterm {
    Z3_ast t, ok;          /* tensor term; Bool: it is well-typed */
    int rank;
    Z3_ast dim[SO_MAX_RANK];
} gterm;

typedef struct renc {
    so_verifier *v;
    const so_rule *r;
    Z3_ast sym[SO_RULE_MAX_SYMS];
    gterm in[SO_RULE_MAX_INPUTS];
    gterm node[2][SO_RULE_MAX_NODES][SO_RULE_MAX_OUTPUTS];
    gterm all[SO_RULE_MAX_INPUTS + 2 * SO_RULE_MAX_NODES * SO_RULE_MAX_OUTPUTS];
    int n_all;
    char unsupported[96];
} renc;

static Z3_ast dimx_ast(renc *e, const so_dimx *d)
{
    Z3_ast x = mk_int(e->v, d->c);
    for (int k = 0; k < d->n_sym; k++) x = mk_add(e->v, x, e->sym[d->sym[k]]);
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
        if (i != skip_axis) c = mk_and2(v, c, mk_eq(v, a->dim[i], b->dim[i]));
    return c;
}

static Z3_ast apply_act(renc *e, Z3_ast t, int act)
{
    switch (act) {
    case SO_ACT_NONE: return t;
    case SO_ACT_RELU: return mk_fn(e->v, "relu", NULL, &t);
    case SO_ACT_SIGMOID: return mk_fn(e->v, "sigmoid", NULL, &t);
    case SO_ACT_TANH: return mk_fn(e->v, "tanh", NULL, &t);
    default: return NULL;
    }
}

static int stride_of(int s) { return s > 0 ? s : 1; }

/* Encodes pattern node `ni` of side `side`: terms, shapes, and well-typedness (wf, without
   the inputs' own ok). Returns 0, or 1 if the node has no Z3 semantics (e->unsupported set). */
static int encode_node(renc *e, int side, int ni, Z3_ast *wf)
{
    so_verifier *v = e->v;
    const so_rnode *n = &(side ? &e->r->dst : &e->r->src)->nodes[ni];
    const so_attr *a = &n->attr;
    const gterm *x[SO_RULE_MAX_IN];
    for (int k = 0; k < n->n_in; k++) x[k] = ref_term(e, side, n->in[k]);
    gterm *o = &e->node[side][ni][0];
    Z3_ast w = Z3_mk_true(v->ctx);
    const char *opname = so_ops[n->op].name;
    o->rank = 0;
    switch (n->op) {
    case SO_OP_IDENTITY: *o = *x[0]; break;
    case SO_OP_RELU:
    case SO_OP_SIGMOID:
    case SO_OP_TANH: {
        *o = *x[0];
        o->t = mk_fn(v, opname, NULL, &x[0]->t);
        break;
    }
    case SO_OP_ADD:
    case SO_OP_MUL: {
        const gterm *A = x[0], *Bt = x[1];
        Z3_ast ts[2] = {A->t, Bt->t};
        o->t = mk_fn(v, n->op == SO_OP_ADD ? "add" : "mul", NULL, ts);
        /* numpy broadcasting, right-aligned */
        int r = SO_MAX(A->rank, Bt->rank);
        o->rank = r;
        for (int i = 0; i < r; i++) {
            int ia = i - (r - A->rank), ib = i - (r - Bt->rank);
            Z3_ast da = ia >= 0 ? A->dim[ia] : NULL, db = ib >= 0 ? Bt->dim[ib] : NULL;
            if (!da) o->dim[i] = db;
            else if (!db) o->dim[i] = da;
            else {
                Z3_ast one = mk_int(v, 1);
                Z3_ast alts[3] = {mk_eq(v, da, db), mk_eq(v, da, one), mk_eq(v, db, one)};
                w = mk_and2(v, w, Z3_mk_or(v->ctx, 3, alts));
                o->dim[i] = Z3_mk_ite(v->ctx, mk_eq(v, da, one), db, da);
            }
        }
        if (n->op == SO_OP_ADD && !(o->t = apply_act(e, o->t, a->act))) return unsupported(e, "add with activation %d", a->act);
        break;
    }
    case SO_OP_MATMUL: {
        const gterm *A = x[0], *Bt = x[1];
        Z3_ast ts[2] = {A->t, Bt->t};
        if (A->rank == 3 && Bt->rank == 2) {
            /* numpy matmul of a rank-3 activation by a matrix: [s0,s1,k] @ [k,m] = [s0,s1,m] (axioms mm3-*) */
            o->t = mk_fn(v, "matmul", NULL, ts);
            o->rank = 3;
            w = mk_and2(v, w, mk_eq(v, A->dim[2], Bt->dim[0]));
            o->dim[0] = A->dim[0];
            o->dim[1] = A->dim[1];
            o->dim[2] = Bt->dim[1];
            if (!(o->t = apply_act(e, o->t, a->act))) return unsupported(e, "matmul with activation %d", a->act);
            break;
        }
        if (A->rank < 2 || A->rank != Bt->rank) return unsupported(e, "matmul of ranks %d and %d", A->rank, Bt->rank);
        int r = A->rank;
        o->t = mk_fn(v, "matmul", NULL, ts);
        o->rank = r;
        for (int i = 0; i < r - 2; i++) {
            w = mk_and2(v, w, mk_eq(v, A->dim[i], Bt->dim[i])); /* batch dims: broadcasting only when equal */
            o->dim[i] = A->dim[i];
        }
        w = mk_and2(v, w, mk_eq(v, A->dim[r - 1], Bt->dim[r - 2]));
        o->dim[r - 2] = A->dim[r - 2];
        o->dim[r - 1] = Bt->dim[r - 1];
        if (r > 2) {
            /* batch broadcasting (a dim 1 against n) is real semantics we do not model: refuse unless the
               batch dims are equal for every symbol value, which the condition above only assumes */
            for (int i = 0; i < r - 2; i++) {
                Z3_ast d = Z3_simplify(v->ctx, mk_sub(v, A->dim[i], Bt->dim[i]));
                int64_t val;
                if (!Z3_get_numeral_int64(v->ctx, d, &val) || val != 0) return unsupported(e, "matmul with batch broadcasting");
            }
        }
        if (!(o->t = apply_act(e, o->t, a->act))) return unsupported(e, "matmul with activation %d", a->act);
        break;
    }
    case SO_OP_CONV: {
        if (a->pad[0] != a->pad[2] || a->pad[1] != a->pad[3]) return unsupported(e, "conv with asymmetric pads");
        if (stride_of(a->dilation[0]) != 1 || stride_of(a->dilation[1]) != 1) return unsupported(e, "dilated conv");
        const gterm *X = x[0], *W = x[1];
        if (X->rank != 4 || W->rank != 4) return unsupported(e, "conv of rank %d/%d", X->rank, W->rank);
        int g = a->group > 0 ? a->group : 1;
        int sh = stride_of(a->stride[0]), sw = stride_of(a->stride[1]);
        Z3_ast ints[5] = {mk_int(v, sh), mk_int(v, sw), mk_int(v, a->pad[0]), mk_int(v, a->pad[1]), mk_int(v, g)};
        Z3_ast ts[2] = {X->t, W->t};
        o->t = mk_fn(v, "conv", ints, ts);
        if (n->n_in == 3) {
            const gterm *Bv = x[2];
            if (Bv->rank != 1) return unsupported(e, "conv bias of rank %d", Bv->rank);
            w = mk_and2(v, w, mk_eq(v, Bv->dim[0], W->dim[0]));
            Z3_ast bt[2] = {o->t, Bv->t};
            o->t = mk_fn(v, "bias", NULL, bt);
        }
        Z3_ast gi = mk_int(v, g);
        w = mk_and2(v, w, mk_eq(v, X->dim[1], Z3_mk_mul(v->ctx, 2, (Z3_ast[]){W->dim[1], gi})));
        w = mk_and2(v, w, mk_eq(v, Z3_mk_mod(v->ctx, W->dim[0], gi), mk_int(v, 0)));
        o->rank = 4;
        o->dim[0] = X->dim[0];
        o->dim[1] = W->dim[0];
        for (int k = 0; k < 2; k++) {
            Z3_ast padded = mk_add(v, X->dim[2 + k], mk_int(v, 2 * a->pad[k]));
            Z3_ast span = mk_sub(v, padded, W->dim[2 + k]);
            w = mk_and2(v, w, Z3_mk_ge(v->ctx, span, mk_int(v, 0)));
            o->dim[2 + k] = mk_add(v, Z3_mk_div(v->ctx, span, mk_int(v, k ? sw : sh)), mk_int(v, 1));
        }
        if (!(o->t = apply_act(e, o->t, a->act))) return unsupported(e, "conv with activation %d", a->act);
        break;
    }
    case SO_OP_TRANSPOSE: {
        const gterm *X = x[0];
        if (a->n_ints != X->rank || X->rank > 4 || X->rank < 1) return unsupported(e, "transpose perm of %d ints on rank %d", a->n_ints, X->rank);
        int64_t p[4];
        int seen = 0;
        for (int i = 0; i < X->rank; i++) {
            p[i] = a->ints[i];
            if (p[i] < 0 || p[i] >= X->rank || (seen & (1 << p[i]))) return unsupported(e, "invalid transpose perm");
            seen |= 1 << p[i];
        }
        Z3_ast code = mk_int(v, so_perm_code(X->rank, p));
        o->t = mk_fn(v, "tr", &code, &X->t);
        o->rank = X->rank;
        for (int i = 0; i < X->rank; i++) o->dim[i] = X->dim[p[i]];
        break;
    }
    case SO_OP_CONCAT: {
        int ax = a->axis, r = x[0]->rank;
        if (ax < 0 || ax >= r) return unsupported(e, "concat axis %d on rank %d", ax, r);
        for (int k = 1; k < n->n_in; k++) {
            if (x[k]->rank != r) return unsupported(e, "concat of different ranks");
            w = mk_and2(v, w, all_dims_eq(v, x[0], x[k], ax));
        }
        Z3_ast axi = mk_int(v, ax);
        Z3_ast t = x[n->n_in - 1]->t, sum = x[n->n_in - 1]->dim[ax];
        for (int k = n->n_in - 2; k >= 0; k--) {
            Z3_ast ts[2] = {x[k]->t, t};
            t = mk_fn(v, "concat", &axi, ts);
            sum = mk_add(v, x[k]->dim[ax], sum);
        }
        *o = *x[0];
        o->t = t;
        o->dim[ax] = sum;
        break;
    }
    case SO_OP_SPLIT: {
        const gterm *X = x[0];
        int ax = a->axis;
        if (ax < 0 || ax >= X->rank) return unsupported(e, "split axis %d on rank %d", ax, X->rank);
        if (n->n_dx != n->n_out || n->n_out > SO_RULE_MAX_OUTPUTS) return unsupported(e, "split with %d sizes for %d outputs", n->n_dx, n->n_out);
        Z3_ast off = mk_int(v, 0);
        for (int k = 0; k < n->n_out; k++) {
            Z3_ast sz = dimx_ast(e, &n->dx[k]);
            gterm *ok = &e->node[side][ni][k];
            *ok = *X;
            Z3_ast ints[3] = {mk_int(v, ax), off, sz};
            ok->t = mk_fn(v, "spl", ints, &X->t);
            ok->dim[ax] = sz;
            w = mk_and2(v, w, Z3_mk_ge(v->ctx, sz, mk_int(v, 1)));
            off = mk_add(v, off, sz);
        }
        w = mk_and2(v, w, mk_eq(v, off, X->dim[ax]));
        break;
    }
    case SO_OP_ENLARGE: {
        const gterm *W = x[0];
        if (W->rank != 4) return unsupported(e, "enlarge of rank %d", W->rank);
        Z3_ast ints[2] = {mk_int(v, a->kernel[0]), mk_int(v, a->kernel[1])};
        o->t = mk_fn(v, "enlarge", ints, &W->t);
        *o = (gterm){o->t, NULL, 4, {W->dim[0], W->dim[1], ints[0], ints[1]}};
        for (int k = 0; k < 2; k++) {
            Z3_ast diff = mk_sub(v, ints[k], W->dim[2 + k]);
            w = mk_and2(v, w, Z3_mk_ge(v->ctx, diff, mk_int(v, 0)));
            w = mk_and2(v, w, mk_eq(v, Z3_mk_mod(v->ctx, diff, mk_int(v, 2)), mk_int(v, 0)));
        }
        break;
    }
    case SO_OP_AVGPOOL:
    case SO_OP_MAXPOOL: {
        const gterm *X = x[0];
        if (X->rank != 4) return unsupported(e, "pool of rank %d", X->rank);
        if (a->pad[0] != a->pad[2] || a->pad[1] != a->pad[3]) return unsupported(e, "pool with asymmetric pads");
        if (a->ceil_mode) return unsupported(e, "pool with ceil_mode");
        if (n->op == SO_OP_MAXPOOL && (stride_of(a->dilation[0]) != 1 || stride_of(a->dilation[1]) != 1)) return unsupported(e, "dilated maxpool");
        if (n->op == SO_OP_AVGPOOL && !a->count_include_pad && (a->pad[0] || a->pad[1]))
            return unsupported(e, "avgpool with pads not counted (count_include_pad=0)");
        int sh = stride_of(a->stride[0]), sw = stride_of(a->stride[1]);
        if (a->kernel[0] < 1 || a->kernel[1] < 1 || a->pad[0] >= a->kernel[0] || a->pad[1] >= a->kernel[1] || a->pad[0] < 0 || a->pad[1] < 0)
            return unsupported(e, "pool with invalid kernel/pads");
        Z3_ast ints[6] = {mk_int(v, a->kernel[0]), mk_int(v, a->kernel[1]), mk_int(v, sh), mk_int(v, sw), mk_int(v, a->pad[0]), mk_int(v, a->pad[1])};
        o->t = mk_fn(v, n->op == SO_OP_AVGPOOL ? "avgpool" : "maxpool", ints, &X->t);
        o->rank = 4;
        o->dim[0] = X->dim[0];
        o->dim[1] = X->dim[1];
        for (int k = 0; k < 2; k++) {
            Z3_ast span = mk_sub(v, mk_add(v, X->dim[2 + k], mk_int(v, 2 * a->pad[k])), mk_int(v, a->kernel[k]));
            w = mk_and2(v, w, Z3_mk_ge(v->ctx, span, mk_int(v, 0)));
            o->dim[2 + k] = mk_add(v, Z3_mk_div(v->ctx, span, mk_int(v, k ? sw : sh)), mk_int(v, 1));
        }
        break;
    }
    case SO_OP_BATCHNORM: {
        const gterm *X = x[0];
        if (X->rank < 2) return unsupported(e, "batchnorm of rank %d", X->rank);
        uint32_t bits;
        memcpy(&bits, &a->epsilon, sizeof bits);
        Z3_ast eps = mk_int(v, bits);
        Z3_ast ts[5];
        for (int k = 0; k < 5; k++) {
            ts[k] = x[k]->t;
            if (k && x[k]->rank != 1) return unsupported(e, "batchnorm parameter of rank %d", x[k]->rank);
            if (k) w = mk_and2(v, w, mk_eq(v, x[k]->dim[0], X->dim[1]));
        }
        *o = *X;
        o->t = mk_fn(v, "bn", &eps, ts);
        break;
    }
    case SO_OP_BNFOLD_W:
    case SO_OP_BNFOLD_B: {
        /* conv+BN folding weights: bnfw eps W scale var; bnfb eps scale B mean var; bnfbc ... cbias */
        uint32_t bits;
        memcpy(&bits, &a->epsilon, sizeof bits);
        Z3_ast eps = mk_int(v, bits);
        Z3_ast ts[5];
        int wop = n->op == SO_OP_BNFOLD_W;
        if (wop && x[0]->rank < 1) return unsupported(e, "bnfold_w of rank %d", x[0]->rank);
        for (int k = 0; k < n->n_in; k++) {
            ts[k] = x[k]->t;
            if ((k || !wop) && x[k]->rank != 1) return unsupported(e, "%s vector of rank %d", opname, x[k]->rank);
            if (k) w = mk_and2(v, w, mk_eq(v, x[k]->dim[0], x[0]->dim[0]));
        }
        *o = *x[0];
        o->t = mk_fn(v, wop ? "bnfw" : n->n_in == 5 ? "bnfbc" : "bnfb", &eps, ts);
        break;
    }
    case SO_OP_CONST_POOL:
    case SO_OP_CONST_IDCONV: {
        if (n->n_dx != 4) return unsupported(e, "%s with %d dims", opname, n->n_dx);
        Z3_ast d[4];
        for (int k = 0; k < 4; k++) d[k] = dimx_ast(e, &n->dx[k]);
        Z3_ast ints[3] = {d[0], d[2], d[3]};
        o->t = mk_fn(v, n->op == SO_OP_CONST_POOL ? "cpool" : "cidconv", ints, NULL);
        o->rank = 4;
        for (int k = 0; k < 4; k++) o->dim[k] = d[k];
        if (n->op == SO_OP_CONST_POOL) {
            w = mk_and2(v, w, mk_eq(v, d[1], mk_int(v, 1)));
        } else {
            w = mk_and2(v, w, mk_eq(v, d[0], d[1]));
            for (int k = 2; k < 4; k++) w = mk_and2(v, w, mk_eq(v, Z3_mk_mod(v->ctx, d[k], mk_int(v, 2)), mk_int(v, 1)));
        }
        break;
    }
    case SO_OP_CONST_IDMAT: {
        if (n->n_dx != 2) return unsupported(e, "const_idmat with %d dims", n->n_dx);
        Z3_ast d0 = dimx_ast(e, &n->dx[0]), d1 = dimx_ast(e, &n->dx[1]);
        o->t = mk_fn(v, "cidmat", &d0, NULL);
        o->rank = 2;
        o->dim[0] = d0;
        o->dim[1] = d1;
        w = mk_and2(v, w, mk_eq(v, d0, d1));
        break;
    }
    default: return unsupported(e, "no Z3 semantics for '%s'", opname);
    }
    *wf = w;
    return 0;
}

/* Encodes the whole rule into the solver (inside a push). Returns 0 ok, 1 unsupported. */
static int encode_rule(renc *e)
{
    so_verifier *v = e->v;
    Z3_context c = v->ctx;
    const so_rule *r = e->r;
    for (int s = 0; s < r->n_syms; s++) {
        char nm[32];
        snprintf(nm, sizeof nm, "sym!%s", r->sym_names[s]);
        e->sym[s] = Z3_mk_const(c, Z3_mk_string_symbol(c, nm), v->I);
        Z3_solver_assert(c, v->s, Z3_mk_ge(c, e->sym[s], mk_int(v, 1)));
    }
    for (int p = 0; p < r->n_pre; p++) {
        const so_precond *pc = &r->pre[p];
        if (pc->sym < 0 || pc->sym >= r->n_syms) return unsupported(e, "precondition on unknown symbol");
        if (pc->kind == SO_PRE_GE) Z3_solver_assert(c, v->s, Z3_mk_ge(c, e->sym[pc->sym], mk_int(v, pc->value)));
        else if (pc->kind == SO_PRE_DIV && pc->value > 0)
            Z3_solver_assert(c, v->s, mk_eq(v, Z3_mk_mod(c, e->sym[pc->sym], mk_int(v, pc->value)), mk_int(v, 0)));
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
            for (int k = 0; k < n->n_in; k++) in_ok = mk_and2(v, in_ok, ref_term(e, side, n->in[k])->ok);
            Z3_ast okc = mk_and2(v, wf, in_ok);
            int nout = n->op == SO_OP_SPLIT ? n->n_out : 1;
            for (int k = 0; k < nout; k++) {
                gterm *g = &e->node[side][ni][k];
                g->ok = mk_ok(v, g->t);
                Z3_solver_assert(c, v->s, mk_eq(v, g->ok, okc));
                if (side) D = mk_and2(v, D, g->ok);
                else A = mk_and2(v, A, g->ok);
                e->all[e->n_all++] = *g;
            }
        }
    }
    /* shape facts: rank and dims of every ground term (when well-typed), equal shapes */
    for (int i = 0; i < e->n_all; i++) {
        gterm *g = &e->all[i];
        Z3_ast f = mk_eq(v, mk_rank(v, g->t), mk_int(v, g->rank));
        for (int k = 0; k < g->rank; k++) f = mk_and2(v, f, mk_eq(v, mk_dim(v, g->t, mk_int(v, k)), g->dim[k]));
        Z3_solver_assert(c, v->s, Z3_mk_implies(c, g->ok, f));
        if (i < r->n_inputs) Z3_solver_assert(c, v->s, mk_ok(v, g->t));
    }
    for (int i = 0; i < e->n_all; i++)
        for (int j = i + 1; j < e->n_all; j++) {
            gterm *a = &e->all[i], *b = &e->all[j];
            if (a->rank != b->rank) continue;
            Z3_ast pre = mk_and2(v, mk_and2(v, a->ok, b->ok), all_dims_eq(v, a, b, -1));
            Z3_solver_assert(c, v->s, Z3_mk_implies(c, pre, mk_eq(v, mk_shp(v, a->t), mk_shp(v, b->t))));
        }
    Z3_ast eqs = Z3_mk_true(c);
    for (int k = 0; k < r->n_outputs; k++) {
        const gterm *s = ref_term(e, 0, r->src_out[k]), *d = ref_term(e, 1, r->dst_out[k]);
        eqs = mk_and2(v, eqs, mk_eq(v, s->t, d->t));
    }
    Z3_ast goal = mk_and2(v, Z3_mk_iff(c, A, D), Z3_mk_implies(c, A, eqs));
    Z3_solver_assert(c, v->s, Z3_mk_not(c, goal));
    return 0;
}

static void set_why(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_why(char *why, size_t len, const char *fmt, ...)
{
    if (!why || !len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

typedef struct watchdog {
    Z3_context ctx;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    double deadline;
} watchdog;

static void *watchdog_main(void *arg)
{
    watchdog *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->done) {
        double now = so_now();
        if (now >= w->deadline) {
            Z3_interrupt(w->ctx);
            break;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double wait = SO_MIN(w->deadline - now, 0.25);
        ts.tv_sec += (time_t)wait;
        ts.tv_nsec += (long)((wait - (double)(time_t)wait) * 1e9);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Z3_solver_check with a watchdog thread that interrupts the context 0.5 s after the
   timeout: Z3's own timeout is not checked inside every E-matching loop. */
static Z3_lbool check_with_watchdog(Z3_context c, Z3_solver s, unsigned ms)
{
    watchdog wd = {.ctx = c, .done = 0, .deadline = so_now() + (double)ms / 1000.0 + 0.5};
    pthread_mutex_init(&wd.mu, NULL);
    pthread_cond_init(&wd.cv, NULL);
    pthread_t wt;
    int have_wd = pthread_create(&wt, NULL, watchdog_main, &wd) == 0;
    Z3_lbool res = Z3_solver_check(c, s);
    if (have_wd) {
        pthread_mutex_lock(&wd.mu);
        wd.done = 1;
        pthread_cond_signal(&wd.cv);
        pthread_mutex_unlock(&wd.mu);
        pthread_join(wt, NULL);
    }
    pthread_cond_destroy(&wd.cv);
    pthread_mutex_destroy(&wd.mu);
    return res;
}

so_status so_verifier_prove(so_verifier *v, const so_rule *r, double timeout_s, int *status, double *seconds, char *why, size_t why_len)
{
    Z3_context c = v->ctx;
    double t0 = so_now();
    *status = SO_RULE_FAILED;
    renc *e = so_xcalloc(1, sizeof *e);
    e->v = v;
    e->r = r;
    Z3_solver_push(c, v->s);
    int uns = encode_rule(e);
    if (Z3_get_error_code(c) != Z3_OK) {
        set_why(why, why_len, "Z3 error while encoding: %s", Z3_get_error_msg(c, Z3_get_error_code(c)));
        Z3_set_error(c, Z3_OK);
    } else if (uns) {
        set_why(why, why_len, "%s", e->unsupported);
    } else {
        Z3_params p = Z3_mk_params(c);
        Z3_params_inc_ref(c, p);
        unsigned ms = timeout_s > 0 ? (unsigned)(timeout_s * 1000.0) : 2000u;
        Z3_params_set_uint(c, p, Z3_mk_string_symbol(c, "timeout"), ms);
        Z3_solver_set_params(c, v->s, p);
        Z3_params_dec_ref(c, p);
        Z3_lbool res = check_with_watchdog(c, v->s, ms);
        double dt = so_now() - t0;
        if (res == Z3_L_FALSE) {
            *status = SO_RULE_PROVED;
            set_why(why, why_len, "proved");
        } else if (res == Z3_L_TRUE) {
            set_why(why, why_len, "counter-model found");
        } else {
            Z3_string reason = Z3_solver_get_reason_unknown(c, v->s);
            if (reason && (strstr(reason, "timeout") || strstr(reason, "canceled")))
                set_why(why, why_len, "timeout after %.1f s", dt);
            else
                set_why(why, why_len, "unknown (%s)", reason ? reason : "?");
        }
    }
    Z3_solver_pop(c, v->s, 1);
    free(e);
    if (seconds) *seconds = so_now() - t0;
    return SO_OK;
}

static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;
static void tls_free(void *p) { so_verifier_free(p); }
static void tls_init(void) { pthread_key_create(&tls_key, tls_free); }

so_status so_verify_rule(const so_rule *r, double timeout_s, int *status, double *seconds, char *why, size_t why_len)
{
    pthread_once(&tls_once, tls_init);
    so_verifier *v = pthread_getspecific(tls_key);
    if (!v) {
        if (so_verifier_new(&v) != SO_OK) return SO_ERR;
        pthread_setspecific(tls_key, v);
    }
    return so_verifier_prove(v, r, timeout_s, status, seconds, why, why_len);
}

void so_verify_thread_cleanup(void)
{
    pthread_once(&tls_once, tls_init);
    so_verifier *v = pthread_getspecific(tls_key);
    if (v) {
        so_verifier_free(v);
        pthread_setspecific(tls_key, NULL);
    }
}

/* ------------------------------------------------------------------ numeric guard */

/* Marks rule inputs that reach a batchnorm variance (directly or through data movement):
   their random values are made positive on both sides. */
static void mark_positive(const so_model *m, int *pos)
{
    const so_graph *g = m->graph;
    char *need = so_xcalloc((size_t)g->n_nodes + 1, 1);
    for (int32_t j = g->n_nodes - 1; j >= 0; j--) {
        const so_node *nd = &g->nodes[j];
        if (nd->op == SO_OP_BATCHNORM && nd->n_in == 5) need[nd->in[4].node] = 1;
        if (need[j] && (nd->op == SO_OP_SPLIT || nd->op == SO_OP_CONCAT || nd->op == SO_OP_SLICE || nd->op == SO_OP_IDENTITY))
            for (int k = 0; k < nd->n_in; k++) need[nd->in[k].node] = 1;
        if (need[j] && nd->op == SO_OP_INPUT && nd->ref >= 0 && nd->ref < m->n_inputs) pos[nd->ref] = 1;
    }
    free(need);
}

static so_status run_side(so_model *m, const int *pos, uint64_t seed, float ***outs, int64_t **lens)
{
    float **in = so_xcalloc((size_t)m->n_inputs + 1, sizeof *in);
    float **out = so_xcalloc((size_t)m->n_outputs + 1, sizeof *out);
    int64_t *len = so_xcalloc((size_t)m->n_outputs + 1, sizeof *len);
    for (int i = 0; i < m->n_inputs; i++) {
        uint64_t rng = seed + 7919u * (uint64_t)i;
        int64_t n = so_shape_numel(&m->inputs[i].shape);
        in[i] = so_xmalloc((size_t)(n > 0 ? n : 1) * sizeof(float));
        so_rng_fill(&rng, in[i], (size_t)n);
        if (pos[i])
            for (int64_t q = 0; q < n; q++) in[i][q] = fabsf(in[i][q]) + 0.1f;
    }
    for (int k = 0; k < m->n_outputs; k++) {
        so_edge o = m->graph->outputs[k];
        len[k] = so_shape_numel(&m->graph->nodes[o.node].out[o.slot]);
        out[k] = so_xmalloc((size_t)(len[k] > 0 ? len[k] : 1) * sizeof(float));
    }
    so_status st = so_ref_run(m->graph, (const float *const *)in, out);
    for (int i = 0; i < m->n_inputs; i++) free(in[i]);
    free(in);
    *outs = out;
    *lens = len;
    return st;
}

static void free_outs(float **out, int n, int64_t *len)
{
    if (out)
        for (int k = 0; k < n; k++) free(out[k]);
    free(out);
    free(len);
}

so_status so_verify_numeric(const so_rule *r, int n_trials, uint64_t seed, int *ok, char *why, size_t why_len)
{
    *ok = 1;
    set_why(why, why_len, "agrees");
    for (int t = 0; t < n_trials; t++) {
        int64_t syms[SO_RULE_MAX_SYMS];
        if (so_rule_pick_syms(r, seed + (uint64_t)t, 6, syms) != SO_OK) {
            *ok = 0;
            set_why(why, why_len, "no symbol values satisfy the preconditions: %s", so_error());
            return SO_OK;
        }
        float **o0 = NULL, **o1 = NULL;
        int64_t *l0 = NULL, *l1 = NULL;
        so_model *m0 = NULL, *m1 = NULL;
        uint64_t dseed = seed * 1000003u + (uint64_t)t;
        so_status s0 = so_rule_instantiate(r, 0, syms, &m0);
        char msg0[300];
        snprintf(msg0, sizeof msg0, "%s", so_error());
        so_status s1 = s0 == SO_OK ? so_rule_instantiate(r, 1, syms, &m1) : SO_ERR;
        if (s0 == SO_OK && s1 == SO_OK) {
            int pos[SO_RULE_MAX_INPUTS] = {0};
            mark_positive(m0, pos);
            mark_positive(m1, pos);
            s0 = run_side(m0, pos, dseed, &o0, &l0);
            snprintf(msg0, sizeof msg0, "%s", so_error());
            s1 = s0 == SO_OK ? run_side(m1, pos, dseed, &o1, &l1) : SO_ERR;
        }
        int nout = r->n_outputs;
        if (s0 != SO_OK || s1 != SO_OK) {
            *ok = 0;
            set_why(why, why_len, "trial %d: %s", t, s0 != SO_OK ? msg0 : so_error());
        } else {
            for (int k = 0; k < nout && *ok; k++) {
                so_edge e0 = m0->graph->outputs[k], e1 = m1->graph->outputs[k];
                if (!so_shape_eq(&m0->graph->nodes[e0.node].out[e0.slot], &m1->graph->nodes[e1.node].out[e1.slot])) {
                    *ok = 0;
                    set_why(why, why_len, "trial %d: output %d shapes differ", t, k);
                    break;
                }
                for (int64_t i = 0; i < l0[k]; i++) {
                    double a = o0[k][i], b = o1[k][i];
                    if (!(fabs(a - b) <= 1e-4 * (1.0 + fabs(a)))) {
                        *ok = 0;
                        set_why(why, why_len, "trial %d: output %d element %lld: %g vs %g", t, k, (long long)i, a, b);
                        break;
                    }
                }
            }
        }
        free_outs(o0, m0 ? m0->n_outputs : 0, l0);
        free_outs(o1, m1 ? m1->n_outputs : 0, l1);
        so_model_free(m0);
        so_model_free(m1);
        if (!*ok) break;
    }
    return SO_OK;
}

/* ------------------------------------------------------------------ rule sets */

typedef struct pool_job {
    so_ruleset *rs;
    double timeout_s;
    int next;
    char **reasons;
    pthread_mutex_t mu;
    so_status st;
    char err[256];
} pool_job;

static void *pool_worker(void *arg)
{
    pool_job *j = arg;
    so_verifier *v = NULL;
    if (so_verifier_new(&v) != SO_OK) {
        pthread_mutex_lock(&j->mu);
        j->st = SO_ERR;
        snprintf(j->err, sizeof j->err, "%s", so_error());
        pthread_mutex_unlock(&j->mu);
        return NULL;
    }
    for (;;) {
        pthread_mutex_lock(&j->mu);
        int i = j->next++;
        pthread_mutex_unlock(&j->mu);
        if (i >= j->rs->n_rules) break;
        so_rule *r = &j->rs->rules[i];
        int status;
        double secs;
        char why[160];
        if (so_verifier_prove(v, r, j->timeout_s, &status, &secs, why, sizeof why) != SO_OK) {
            status = SO_RULE_FAILED;
            snprintf(why, sizeof why, "%s", so_error());
        }
        r->status = status;
        r->proof_seconds = secs;
        if (j->reasons) j->reasons[i] = so_xstrdup(why);
    }
    so_verifier_free(v);
    return NULL;
}

so_status so_verify_ruleset(so_ruleset *rs, int threads, double timeout_s, so_verify_summary *sum, char ***reasons)
{
    double t0 = so_now();
    if (threads < 1) threads = 1;
    if (threads > 2) threads = 2;
    pool_job j = {.rs = rs, .timeout_s = timeout_s, .next = 0, .reasons = NULL, .st = SO_OK};
    pthread_mutex_init(&j.mu, NULL);
    if (reasons) j.reasons = so_xcalloc((size_t)rs->n_rules + 1, sizeof *j.reasons);
    pthread_t th[2];
    int started = 0;
    for (int t = 1; t < threads; t++)
        if (pthread_create(&th[t], NULL, pool_worker, &j) == 0) started++;
    pool_worker(&j);
    for (int t = 1; t <= started; t++) pthread_join(th[t], NULL);
    pthread_mutex_destroy(&j.mu);
    if (j.st != SO_OK) {
        if (j.reasons) {
            for (int i = 0; i < rs->n_rules; i++) free(j.reasons[i]);
            free(j.reasons);
        }
        return so_errorf("%s", j.err);
    }
    so_verify_summary s = {rs->n_rules, 0, 0, 0.0};
    for (int i = 0; i < rs->n_rules; i++) {
        if (rs->rules[i].status == SO_RULE_PROVED) s.proved++;
        else s.failed++;
    }
    s.seconds = so_now() - t0;
    if (sum) *sum = s;
    if (reasons) *reasons = j.reasons;
    return SO_OK;
}

/* ------------------------------------------------------------------ axiom report */

/* Does axiom k follow from the others? 1 yes (unsat), 0 not shown within the timeout. */
static int axiom_redundant(int k, double timeout_s)
{
    so_verifier *v = so_xcalloc(1, sizeof *v);
    int result = 0;
    if (verifier_init(v, k) != SO_OK) goto done;
    const ax_parsed *all;
    so_axioms_get(&all);
    const ax_parsed *ap = &all[k];
    Z3_context c = v->ctx;
    zenv e;
    for (int i = 0; i < ap->n_vars; i++) e.var[i] = Z3_mk_fresh_const(c, ap->var_names[i], v->T);
    for (int i = 0; i < ap->n_params; i++) e.param[i] = Z3_mk_fresh_const(c, ap->param_names[i], v->I);
    Z3_ast l = zterm(v, &e, ap->lhs), r = zterm(v, &e, ap->rhs);
    Z3_ast g = ap->guard ? zterm(v, &e, ap->guard) : Z3_mk_true(c);
    if (!l || !r || !g) goto done;
    Z3_solver_assert(c, v->s, g);
    Z3_solver_assert(c, v->s, Z3_mk_not(c, Z3_mk_eq(c, l, r)));
    Z3_params p = Z3_mk_params(c);
    Z3_params_inc_ref(c, p);
    Z3_params_set_uint(c, p, Z3_mk_string_symbol(c, "timeout"), (unsigned)(timeout_s * 1000));
    Z3_solver_set_params(c, v->s, p);
    Z3_params_dec_ref(c, p);
    result = check_with_watchdog(c, v->s, (unsigned)(timeout_s * 1000)) == Z3_L_FALSE;
done:
    so_verifier_free(v);
    return result;
}

static int axioms_main(int json, int trials, double timeout_s, int md)
{
    const ax_parsed *all;
    int n = so_axioms_get(&all);
    if (md) {
        printf("| # | name | meaning | for all | guard | lhs = rhs |\n|---|---|---|---|---|---|\n");
        for (int k = 0; k < n; k++) {
            const so_axiom *a = all[k].ax;
            printf("| %d | `%s` | %s | `%s%s%s` | %s%s%s | `%s` = `%s` |\n", k + 1, a->name, a->meaning, a->vars, *a->params ? " " : "", a->params,
                   *a->guard ? "`" : "", *a->guard ? a->guard : "-", *a->guard ? "`" : "", a->lhs, a->rhs);
        }
        return 0;
    }
    int bad = 0, redundant = 0;
    double t0 = so_now();
    for (int k = 0; k < n; k++) {
        int ok = 0, evals = 0;
        char why[512];
        if (so_axiom_selfcheck(k, trials, 1, &ok, &evals, why, sizeof why) != SO_OK) {
            fprintf(stderr, "superopt: %s\n", so_error());
            return 1;
        }
        int red = axiom_redundant(k, timeout_s);
        redundant += red;
        bad += !ok;
        if (!json)
            printf("%-18s %-4s %3d instances  %-10s %s\n", all[k].ax->name, ok ? "ok" : "FAIL", evals, red ? "redundant" : "independent",
                   ok ? all[k].ax->meaning : why);
    }
    if (json)
        printf("{\"axioms\": %d, \"selfcheck_failed\": %d, \"redundant\": %d, \"seconds\": %.3f}\n", n, bad, redundant, so_now() - t0);
    else
        printf("%d axioms: %d pass the numeric self-check, %d fail; %d follow from the others (within %.1f s each)\n", n, n - bad, bad,
               redundant, timeout_s);
    return bad ? 1 : 0;
}

/* ------------------------------------------------------------------ CLI */

static int verify_usage(const char *msg)
{
    if (msg) fprintf(stderr, "superopt verify: %s\n", msg);
    fprintf(stderr, "usage: superopt verify FILE.rules [--json] [--timeout S] [--threads N] [--numeric N] [--write]\n"
                    "       superopt verify --axioms [--json] [--trials N] [--timeout S] [--markdown]\n");
    return 2;
}

int so_verify_main(int argc, char **argv)
{
    const char *path = NULL;
    int json = 0, threads = 2, numeric = 0, write = 0, axioms = 0, trials = 40, md = 0;
    double timeout_s = 2.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--write") || !strcmp(a, "-w")) write = 1;
        else if (!strcmp(a, "--axioms")) axioms = 1;
        else if (!strcmp(a, "--markdown")) md = 1;
        else if ((!strcmp(a, "--timeout") || !strcmp(a, "--threads") || !strcmp(a, "--numeric") || !strcmp(a, "--trials")) && i + 1 < argc) {
            char *end;
            double x = strtod(argv[++i], &end);
            if (*end || x < 0 || x > 1e6) return verify_usage("bad option value");
            if (!strcmp(a, "--timeout")) timeout_s = x;
            else if (!strcmp(a, "--threads")) threads = (int)x;
            else if (!strcmp(a, "--numeric")) numeric = (int)x;
            else trials = (int)x;
        } else if (a[0] == '-') return verify_usage("unknown option");
        else if (!path) path = a;
        else return verify_usage("more than one rule file");
    }
    if (axioms) return axioms_main(json, trials, timeout_s > 0 ? SO_MIN(timeout_s, 2.0) : 1.0, md);
    if (!path) return verify_usage("missing FILE.rules");
    so_ruleset rs = {0};
    if (so_rules_load(path, &rs) != SO_OK) {
        fprintf(stderr, "superopt: %s\n", so_error());
        return 1;
    }
    so_verify_summary sum;
    char **why = NULL;
    if (so_verify_ruleset(&rs, threads, timeout_s, &sum, &why) != SO_OK) {
        fprintf(stderr, "superopt: %s: %s\n", path, so_error());
        so_ruleset_free(&rs);
        return 1;
    }
    int num_failed = 0;
    for (int i = 0; i < rs.n_rules; i++) {
        so_rule *r = &rs.rules[i];
        char nwhy[200] = "";
        int nok = 1;
        if (numeric > 0) {
            if (so_verify_numeric(r, numeric, 1, &nok, nwhy, sizeof nwhy) != SO_OK) {
                nok = 0;
                snprintf(nwhy, sizeof nwhy, "%s", so_error());
            }
            if (!nok) {
                num_failed++;
                if (r->status == SO_RULE_PROVED) {
                    /* a proof contradicted by the kernels: never accept it */
                    r->status = SO_RULE_FAILED;
                    sum.proved--;
                    sum.failed++;
                }
            }
        }
        FILE *f = json ? stderr : stdout;
        if (!json || r->status != SO_RULE_PROVED)
            fprintf(f, "%s:%d: rule %d %s %.3f s%s%s%s%s\n", path, (int)r->line, (int)r->id, r->status == SO_RULE_PROVED ? "proved" : "FAILED",
                    r->proof_seconds, r->status == SO_RULE_PROVED ? "" : " (", r->status == SO_RULE_PROVED ? "" : why[i],
                    r->status == SO_RULE_PROVED ? "" : ")", nok ? "" : " numeric check failed: ");
        if (!nok) fprintf(f, "    %s\n", nwhy);
        free(why[i]);
    }
    free(why);
    if (json)
        printf("{\"rules\": %d, \"proved\": %d, \"failed\": %d, \"seconds\": %.3f}\n", sum.rules, sum.proved, sum.failed, sum.seconds);
    else
        printf("%s: %d rules, %d proved, %d failed%s, %.2f s\n", path, sum.rules, sum.proved, sum.failed,
               numeric > 0 ? (num_failed ? " (numeric check failures above)" : ", numeric check passed") : "", sum.seconds);
    int rc = sum.failed ? 1 : 0;
    if (write && so_rules_save(&rs, path) != SO_OK) {
        fprintf(stderr, "superopt: %s\n", so_error());
        rc = 1;
    }
    so_ruleset_free(&rs);
    return rc;
}
