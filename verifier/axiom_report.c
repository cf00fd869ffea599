/* axiom_report.c - axiom report: numeric self-check and redundancy of every axiom (verify --axioms). */
#include "verify_priv.h"
#include "../kernels/ref.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <z3.h>

/* ------------------------------------------------------------------ axiom report */

/* Does axiom k follow from the others? 1 yes (unsat), 0 not shown within the timeout. */
static int axiom_redundant(int k, double timeout_s)
{
    so_verifier *v = so_xcalloc(1, sizeof *v);
    int result = 0;
    if (vp_verifier_init(v, k) != SO_OK) goto done;
    const ax_parsed *all;
    so_axioms_get(&all);
    const ax_parsed *ap = &all[k];
    Z3_context c = v->ctx;
    zenv e;
    for (int i = 0; i < ap->n_vars; i++) e.var[i] = Z3_mk_fresh_const(c, ap->var_names[i], v->T);
    for (int i = 0; i < ap->n_params; i++) e.param[i] = Z3_mk_fresh_const(c, ap->param_names[i], v->I);
    Z3_ast l = vp_zterm(v, &e, ap->lhs), r = vp_zterm(v, &e, ap->rhs);
    Z3_ast g = ap->guard ? vp_zterm(v, &e, ap->guard) : Z3_mk_true(c);
    if (!l || !r || !g) goto done;
    Z3_solver_assert(c, v->s, g);
    Z3_solver_assert(c, v->s, Z3_mk_not(c, Z3_mk_eq(c, l, r)));
    Z3_params p = Z3_mk_params(c);
    Z3_params_inc_ref(c, p);
    Z3_params_set_uint(c, p, Z3_mk_string_symbol(c, "timeout"), (unsigned)(timeout_s * 1000));
    Z3_solver_set_params(c, v->s, p);
    Z3_params_dec_ref(c, p);
    result = vp_check_with_watchdog(c, v->s, (unsigned)(timeout_s * 1000)) == Z3_L_FALSE;
done:
    so_verifier_free(v);
    return result;
}

int so_verify_axiom_report(int json, int trials, double timeout_s, int md)
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
