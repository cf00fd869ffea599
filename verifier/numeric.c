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
            s0 = run_side(m0, pos, dseed, &o0, &l0);
            snprintf(msg0, sizeof msg0, "%s", so_error());
            s1 = s0 == SO_OK ? run_side(m1, pos, dseed, &o1, &l1) : SO_ERR;
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
