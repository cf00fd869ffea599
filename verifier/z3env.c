/* z3env.c - the Z3 context of a verifier: operators as uninterpreted functions, the axioms as quantified formulas, permutation facts. */
#include "verify_priv.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <z3.h>

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

Z3_ast vp_mk_int(so_verifier *v, int64_t x) { return Z3_mk_int64(v->ctx, x, v->I); }
Z3_ast vp_mk_and2(so_verifier *v, Z3_ast a, Z3_ast b)
{
    Z3_ast x[2] = {a, b};
    return Z3_mk_and(v->ctx, 2, x);
}
Z3_ast vp_mk_eq(so_verifier *v, Z3_ast a, Z3_ast b) { return Z3_mk_eq(v->ctx, a, b); }
Z3_ast vp_mk_add(so_verifier *v, Z3_ast a, Z3_ast b)
{
    Z3_ast x[2] = {a, b};
    return Z3_mk_add(v->ctx, 2, x);
}
Z3_ast vp_mk_sub(so_verifier *v, Z3_ast a, Z3_ast b)
{
    Z3_ast x[2] = {a, b};
    return Z3_mk_sub(v->ctx, 2, x);
}
Z3_ast vp_mk_shp(so_verifier *v, Z3_ast t) { return Z3_mk_app(v->ctx, v->shp, 1, &t); }
Z3_ast vp_mk_rank(so_verifier *v, Z3_ast t)
{
    Z3_ast s = vp_mk_shp(v, t);
    return Z3_mk_app(v->ctx, v->srk, 1, &s);
}
Z3_ast vp_mk_dim(so_verifier *v, Z3_ast t, Z3_ast i)
{
    Z3_ast a[2] = {vp_mk_shp(v, t), i};
    return Z3_mk_app(v->ctx, v->sdim, 2, a);
}
Z3_ast vp_mk_ok(so_verifier *v, Z3_ast t)
{
    Z3_ast s = vp_mk_shp(v, t);
    return Z3_mk_app(v->ctx, v->okf, 1, &s);
}
Z3_ast vp_mk_fn(so_verifier *v, zfn k, const Z3_ast *ints, const Z3_ast *ts)
{
    Z3_ast a[12];
    int n = 0;
    for (int i = 0; i < sigs[k].n_int; i++) a[n++] = ints[i];
    for (int i = 0; i < sigs[k].n_t; i++) a[n++] = ts[i];
    return Z3_mk_app(v->ctx, v->fn[k], (unsigned)n, a);
}

/* ------------------------------------------------------------------ axioms in Z3 */


/* Translates an axiom term. Returns NULL on an unknown function (a bug in the table). */
Z3_ast vp_zterm(so_verifier *v, const zenv *e, const ax_term *t)
{
    Z3_context c = v->ctx;
    switch (t->kind) {
    case AX_TVAR: return e->var[t->var];
    case AX_IVAR: return e->param[t->var];
    case AX_INT: return vp_mk_int(v, t->val);
    case AX_APP: break;
    }
    Z3_ast a[8];
    for (int k = 0; k < t->n; k++)
        if (!(a[k] = vp_zterm(v, e, t->arg[k]))) return NULL;
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
    if (!strcmp(f, "ok")) return vp_mk_ok(v, a[0]);
    if (!strcmp(f, "same")) return Z3_mk_eq(c, vp_mk_shp(v, a[0]), vp_mk_shp(v, a[1]));
    if (!strcmp(f, "rank")) return vp_mk_rank(v, a[0]);
    if (!strcmp(f, "dim")) return vp_mk_dim(v, a[0], a[1]);
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
    Z3_ast l = vp_zterm(v, &e, ap->lhs), r = vp_zterm(v, &e, ap->rhs);
    Z3_ast g = ap->guard ? vp_zterm(v, &e, ap->guard) : Z3_mk_true(c);
    if (!l || !r || !g) return NULL;
    Z3_ast body = Z3_mk_implies(c, g, Z3_mk_eq(c, l, r));
    unsigned need_t = (1u << ap->n_vars) - 1, need_p = (1u << ap->n_params) - 1;
    Z3_pattern pats[2];
    unsigned np = 0;
    const ax_term *tl = find_trigger(ap->lhs, need_t, need_p);
    if (tl) {
        Z3_ast x = vp_zterm(v, &e, tl);
        pats[np++] = Z3_mk_pattern(c, 1, &x);
    }
    if (!np && ap->guard) {
        const ax_term *tg = find_trigger(ap->guard, need_t, need_p);
        if (tg) {
            Z3_ast x = vp_zterm(v, &e, tg);
            pats[np++] = Z3_mk_pattern(c, 1, &x);
        }
    }
    if (ap->ax->flags & AXF_BIDIR) {
        const ax_term *tr = find_trigger(ap->rhs, need_t, need_p);
        if (tr) {
            Z3_ast x = vp_zterm(v, &e, tr);
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
    int kc = ZF_PCOMP, ki = ZF_PIDX, kv = ZF_PINV, ks = ZF_PSWAP, kd = ZF_PID;
    for (int r = 1; r <= 4; r++) {
        int64_t idp[4] = {0, 1, 2, 3}, sw[4] = {0, 1, 2, 3};
        Z3_ast rr = vp_mk_int(v, r);
        Z3_ast idc = vp_mk_int(v, so_perm_code(r, idp));
        Z3_solver_assert(c, v->s, vp_mk_eq(v, Z3_mk_app(c, v->fn[kd], 1, &rr), idc));
        if (r >= 2) {
            sw[r - 2] = r - 1, sw[r - 1] = r - 2;
            Z3_solver_assert(c, v->s, vp_mk_eq(v, Z3_mk_app(c, v->fn[ks], 1, &rr), vp_mk_int(v, so_perm_code(r, sw))));
        }
        for (int a = 0; a < np[r]; a++) {
            const int64_t *p = perms[r][a];
            Z3_ast pc = vp_mk_int(v, so_perm_code(r, p));
            for (int i = 0; i < r; i++) {
                Z3_ast args[2] = {pc, vp_mk_int(v, i)};
                Z3_solver_assert(c, v->s, vp_mk_eq(v, Z3_mk_app(c, v->fn[ki], 2, args), vp_mk_int(v, p[i])));
                Z3_solver_assert(c, v->s, vp_mk_eq(v, Z3_mk_app(c, v->fn[kv], 2, (Z3_ast[]){pc, vp_mk_int(v, p[i])}), vp_mk_int(v, i)));
            }
            for (int b = 0; b < np[r]; b++) {
                const int64_t *q = perms[r][b];
                int64_t comp[4];
                for (int i = 0; i < r; i++) comp[i] = q[p[i]];
                Z3_ast args[2] = {pc, vp_mk_int(v, so_perm_code(r, q))};
                Z3_solver_assert(c, v->s, vp_mk_eq(v, Z3_mk_app(c, v->fn[kc], 2, args), vp_mk_int(v, so_perm_code(r, comp))));
            }
        }
    }
}

so_status vp_verifier_init(so_verifier *v, int skip_axiom)
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
    if (vp_verifier_init(v, -1) != SO_OK) {
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
