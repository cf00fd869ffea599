/* numeric.c - numeric guard: both sides of a rule run with the reference kernels on random inputs must agree. */
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

/* Input values of one trial: uniform [-1, 1) (seeded), that times 1000, all-negative, small
   integers in [-2, 2]. Inputs marked positive (batchnorm variances) get |v| + 0.1. */
enum { VALS_UNIFORM, VALS_LARGE, VALS_NEGATIVE, VALS_INTS, VALS_COUNT };
static const char *const vals_name[VALS_COUNT] = {"uniform [-1,1)", "uniform [-1000,1000)", "all-negative", "integers in [-2,2]"};

static void fill_input(float *x, int64_t n, uint64_t seed, int vals, int positive)
{
    so_rng_fill(&seed, x, (size_t)n);
    for (int64_t q = 0; q < n; q++) {
        float v = x[q];
        if (vals == VALS_LARGE) v *= 1000.0f;
        else if (vals == VALS_NEGATIVE) v = -fabsf(v) - 0.01f;
        else if (vals == VALS_INTS) v = (float)(int)lrintf(v * 2.0f);
        x[q] = positive ? fabsf(v) + 0.1f : v;
    }
}

/* Runs one side; the inputs are kept in *ins when ins != NULL (caller frees with free_outs). */
static so_status run_side(so_model *m, const int *pos, uint64_t seed, int vals, float ***outs, int64_t **lens, float ***ins)
{
    float **in = so_xcalloc((size_t)m->n_inputs + 1, sizeof *in);
    float **out = so_xcalloc((size_t)m->n_outputs + 1, sizeof *out);
    int64_t *len = so_xcalloc((size_t)m->n_outputs + 1, sizeof *len);
    for (int i = 0; i < m->n_inputs; i++) {
        int64_t n = so_shape_numel(&m->inputs[i].shape);
        in[i] = so_xmalloc((size_t)(n > 0 ? n : 1) * sizeof(float));
        fill_input(in[i], n, seed + 7919u * (uint64_t)i, vals, pos[i]);
    }
    for (int k = 0; k < m->n_outputs; k++) {
        so_edge o = m->graph->outputs[k];
        len[k] = so_shape_numel(&m->graph->nodes[o.node].out[o.slot]);
        out[k] = so_xmalloc((size_t)(len[k] > 0 ? len[k] : 1) * sizeof(float));
    }
    so_status st = so_ref_run(m->graph, (const float *const *)in, out);
    if (ins) *ins = in;
    else {
        for (int i = 0; i < m->n_inputs; i++) free(in[i]);
        free(in);
    }
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
    vp_set_why(why, why_len, "agrees");
    for (int t = 0; t < n_trials; t++) {
        int64_t syms[SO_RULE_MAX_SYMS];
        if (so_rule_pick_syms(r, seed + (uint64_t)t, 6, syms) != SO_OK) {
            *ok = 0;
            vp_set_why(why, why_len, "no symbol values satisfy the preconditions: %s", so_error());
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
            s0 = run_side(m0, pos, dseed, VALS_UNIFORM, &o0, &l0, NULL);
            snprintf(msg0, sizeof msg0, "%s", so_error());
            s1 = s0 == SO_OK ? run_side(m1, pos, dseed, VALS_UNIFORM, &o1, &l1, NULL) : SO_ERR;
        }
        int nout = r->n_outputs;
        if (s0 != SO_OK || s1 != SO_OK) {
            *ok = 0;
            vp_set_why(why, why_len, "trial %d: %s", t, s0 != SO_OK ? msg0 : so_error());
        } else {
            for (int k = 0; k < nout && *ok; k++) {
                so_edge e0 = m0->graph->outputs[k], e1 = m1->graph->outputs[k];
                if (!so_shape_eq(&m0->graph->nodes[e0.node].out[e0.slot], &m1->graph->nodes[e1.node].out[e1.slot])) {
                    *ok = 0;
                    vp_set_why(why, why_len, "trial %d: output %d shapes differ", t, k);
                    break;
                }
                for (int64_t i = 0; i < l0[k]; i++) {
                    double a = o0[k][i], b = o1[k][i];
                    if (!(fabs(a - b) <= 1e-4 * (1.0 + fabs(a)))) {
                        *ok = 0;
                        vp_set_why(why, why_len, "trial %d: output %d element %lld: %g vs %g", t, k, (long long)i, a, b);
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

/* ------------------------------------------------------------------ counterexamples */

/* Do a (source) and b (target) differ? Inf only equals the same Inf, NaN only NaN; finite values
   within 1e-4 * (1 + |a|) agree (the reference kernels of both sides round differently). */
static int differ(float a, float b)
{
    if (isnan(a) || isnan(b)) return !(isnan(a) && isnan(b));
    if (isinf(a) || isinf(b)) return a != b;
    return !(fabs((double)a - (double)b) <= 1e-4 * (1.0 + fabs((double)a)));
}

/* Values of an input: the first `max` (text, "..." after), or all of them exactly (max < 0: JSON). */
static void print_vals(so_sbuf *b, const float *x, int64_t n, int64_t max)
{
    so_sbuf_printf(b, "[");
    for (int64_t q = 0; q < n && (max < 0 || q < max); q++) so_sbuf_printf(b, "%s%.*g", q ? ", " : "", max < 0 ? 9 : 6, (double)x[q]);
    so_sbuf_printf(b, "%s]", max >= 0 && n > max ? ", ..." : "");
}

so_status so_verify_witness(const so_rule *r, int *found, char **text, char **json)
{
    *found = 0;
    *text = *json = NULL;
    /* smallest shapes first: symbols drawn in [1, max] for max = 1, 2, 3, 4, 6, several seeds */
    static const int64_t maxes[] = {1, 2, 2, 3, 3, 4, 6, 6};
    for (int t = 0; t < (int)(sizeof maxes / sizeof *maxes) && !*found; t++) {
        int64_t syms[SO_RULE_MAX_SYMS];
        if (so_rule_pick_syms(r, 977u * (uint64_t)t + 1, maxes[t], syms) != SO_OK) continue;
        so_model *m0 = NULL, *m1 = NULL;
        if (so_rule_instantiate(r, 0, syms, &m0) != SO_OK || so_rule_instantiate(r, 1, syms, &m1) != SO_OK) {
            so_model_free(m0);
            so_model_free(m1);
            continue;
        }
        int pos[SO_RULE_MAX_INPUTS] = {0};
        mark_positive(m0, pos);
        mark_positive(m1, pos);
        for (int vals = 0; vals < VALS_COUNT && !*found; vals++) {
            float **o0 = NULL, **o1 = NULL, **in = NULL;
            int64_t *l0 = NULL, *l1 = NULL;
            uint64_t seed = 1000003u * (uint64_t)t + 17u * (uint64_t)vals + 5;
            so_status s0 = run_side(m0, pos, seed, vals, &o0, &l0, &in);
            so_status s1 = s0 == SO_OK ? run_side(m1, pos, seed, vals, &o1, &l1, NULL) : SO_ERR;
            for (int k = 0; s0 == SO_OK && s1 == SO_OK && k < r->n_outputs && !*found; k++) {
                so_edge e0 = m0->graph->outputs[k], e1 = m1->graph->outputs[k];
                if (!so_shape_eq(&m0->graph->nodes[e0.node].out[e0.slot], &m1->graph->nodes[e1.node].out[e1.slot])) continue;
                for (int64_t i = 0; i < l0[k]; i++) {
                    if (!differ(o0[k][i], o1[k][i])) continue;
                    *found = 1;
                    so_sbuf tb = {0}, jb = {0};
                    so_sbuf_printf(&tb, "witness:");
                    so_sbuf_printf(&jb, "{\"symbols\": {");
                    for (int s = 0; s < r->n_syms; s++) {
                        so_sbuf_printf(&tb, " %s=%lld", r->sym_names[s], (long long)syms[s]);
                        so_sbuf_printf(&jb, "%s\"%s\": %lld", s ? ", " : "", r->sym_names[s], (long long)syms[s]);
                    }
                    so_sbuf_printf(&tb, "%sinputs %s:", r->n_syms ? "; " : " ", vals_name[vals]);
                    so_sbuf_printf(&jb, "}, \"values\": \"%s\", \"inputs\": {", vals_name[vals]);
                    for (int q = 0; q < m0->n_inputs; q++) {
                        char sb[96];
                        int64_t n = so_shape_numel(&m0->inputs[q].shape);
                        so_sbuf_printf(&tb, " %s%s=", m0->inputs[q].name, so_shape_str(&m0->inputs[q].shape, sb, sizeof sb));
                        print_vals(&tb, in[q], n, 12);
                        so_sbuf_printf(&jb, "%s\"%s\": {\"shape\": \"%s\", \"values\": ", q ? ", " : "", m0->inputs[q].name, sb);
                        print_vals(&jb, in[q], n, -1);
                        so_sbuf_printf(&jb, "}");
                    }
                    so_sbuf_printf(&tb, "; output %d element %lld: source %.9g, target %.9g", k, (long long)i, (double)o0[k][i], (double)o1[k][i]);
                    /* JSON has no Inf/NaN literals: the two values as strings */
                    so_sbuf_printf(&jb, "}, \"output\": %d, \"element\": %lld, \"source\": \"%.9g\", \"target\": \"%.9g\"}", k, (long long)i,
                                   (double)o0[k][i], (double)o1[k][i]);
                    *text = tb.s;
                    *json = jb.s;
                    break;
                }
            }
            free_outs(in, m0->n_inputs, NULL);
            free_outs(o0, m0->n_outputs, l0);
            free_outs(o1, m1->n_outputs, l1);
        }
        so_model_free(m0);
        so_model_free(m1);
    }
    return SO_OK;
}
