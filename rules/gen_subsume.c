/* gen_subsume.c - generator subsumption: epsilon instances, and rules that are instances of a more general rule dropped. */
#include "gen_priv.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

/* ---------------- subsumption (after generalisation) ---------------- */

/* Epsilon instances: the generator's batchnorm-family operators carry epsilon 1e-5 (PyTorch's
   default); a rule's attributes must match exactly, so models exported with another epsilon
   (Inception-v3 / TensorFlow-style 1e-3) would get no batchnorm rule. Every candidate that
   holds batchnorm / bnfold nodes is instantiated once more per extra epsilon below (all such
   nodes of the rule get the same value); the copies go through the float re-test and the Z3
   proof like any candidate. Appended in order after the originals, so output stays deterministic. */
static const float extra_eps[] = {1e-3f};

void genp_add_eps_instances(so_ruleset *rs)
{
    int32_t n0 = rs->n_rules;
    for (size_t e = 0; e < sizeof extra_eps / sizeof extra_eps[0]; e++)
        for (int32_t k = 0; k < n0; k++) {
            so_rule c = rs->rules[k];
            int hit = 0;
            for (int w = 0; w < 2; w++) {
                so_pattern *p = w ? &c.dst : &c.src;
                for (int i = 0; i < p->n_nodes; i++) {
                    so_op op = p->nodes[i].op;
                    if (op == SO_OP_BATCHNORM || op == SO_OP_BNFOLD_W || op == SO_OP_BNFOLD_B) {
                        p->nodes[i].attr.epsilon = extra_eps[e];
                        hit = 1;
                    }
                }
            }
            if (hit) so_ruleset_push(rs, &c);
        }
}


/* Structure key: the rule text with input shapes and names made positional. */
static char *structure_key(const so_rule *r)
{
    so_rule c = *r;
    c.id = 0;
    c.proof_seconds = -1;
    c.status = 0;
    for (int i = 0; i < c.n_inputs; i++) {
        snprintf(c.inputs[i].name, sizeof c.inputs[i].name, "I%d", i);
        c.inputs[i].rank = 0;
    }
    for (int w = 0; w < 2; w++) {
        so_pattern *p = w ? &c.dst : &c.src;
        for (int i = 0; i < p->n_nodes; i++) memset(p->nodes[i].dx, 0, sizeof p->nodes[i].dx);
    }
    return so_rule_format(&c);
}

typedef struct binding {
    int bound[SO_RULE_MAX_SYMS];
    so_dimx val[SO_RULE_MAX_SYMS];
} binding;

static int bind_dim(binding *B, const so_dimx *e1, const so_dimx *e2, int final)
{
    if (e1->n_sym == 1 && e1->c == 0 && !final) {
        int s = e1->sym[0];
        if (!B->bound[s]) {
            B->bound[s] = 1;
            B->val[s] = *e2;
            return 1;
        }
        return so_dimx_eq(&B->val[s], e2);
    }
    if (e1->n_sym == 0) return e2->n_sym == 0 && e2->c == e1->c;
    if (!final) return 1;
    /* substitute and compare */
    so_dimx r;
    memset(&r, 0, sizeof r);
    r.c = e1->c;
    for (int q = 0; q < e1->n_sym; q++) {
        if (!B->bound[e1->sym[q]]) return 0;
        const so_dimx *v = &B->val[e1->sym[q]];
        if (r.n_sym + v->n_sym > SO_DIMX_MAX_SYM) return 0;
        r.c += v->c;
        for (int t = 0; t < v->n_sym; t++) r.sym[r.n_sym++] = v->sym[t];
    }
    return so_dimx_eq(&r, e2);
}

/* Does r1 (more general) have r2 as an instance? Same structure key assumed. */
static int subsumes(const so_rule *r1, const so_rule *r2)
{
    if (r1->n_inputs != r2->n_inputs) return 0;
    binding B;
    memset(&B, 0, sizeof B);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < r1->n_inputs; i++) {
            if (r1->inputs[i].rank != r2->inputs[i].rank) return 0;
            for (int k = 0; k < r1->inputs[i].rank; k++)
                if (!bind_dim(&B, &r1->inputs[i].dim[k], &r2->inputs[i].dim[k], pass)) return 0;
        }
        for (int w = 0; w < 2; w++) {
            const so_pattern *p1 = w ? &r1->dst : &r1->src, *p2 = w ? &r2->dst : &r2->src;
            for (int i = 0; i < p1->n_nodes; i++)
                for (int k = 0; k < p1->nodes[i].n_dx; k++)
                    if (!bind_dim(&B, &p1->nodes[i].dx[k], &p2->nodes[i].dx[k], pass)) return 0;
        }
    }
    return r2->n_pre == 0 || r1->n_pre == 0 ? 1 : 0;
}

typedef struct skey {
    char *key;
    int idx;
} skey;

static int cmp_skey(const void *x, const void *y)
{
    const skey *a = x, *b = y;
    int c = strcmp(a->key, b->key);
    return c ? c : (a->idx < b->idx ? -1 : a->idx > b->idx);
}

/* Drops rules that are instances of another rule with the same structure (e.g. the same
   identity found on 4-d activations and on conv kernels). Deterministic. Returns the count. */
int32_t so_gen_drop_subsumed(so_ruleset *rs)
{
    int n = rs->n_rules;
    skey *k = so_xmalloc((size_t)(n ? n : 1) * sizeof *k);
    char *drop = so_xcalloc((size_t)(n ? n : 1), 1);
    for (int i = 0; i < n; i++) {
        k[i].key = structure_key(&rs->rules[i]);
        k[i].idx = i;
    }
    qsort(k, (size_t)n, sizeof *k, cmp_skey);
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && strcmp(k[j].key, k[i].key) == 0) j++;
        for (int x = i; x < j; x++)
            for (int y = i; y < j; y++) {
                if (x == y || drop[k[y].idx] || drop[k[x].idx]) continue;
                const so_rule *a = &rs->rules[k[x].idx], *b = &rs->rules[k[y].idx];
                /* a subsumes b: drop b, unless they subsume each other and b comes first */
                if (subsumes(a, b) && !(subsumes(b, a) && k[y].idx < k[x].idx)) drop[k[y].idx] = 1;
            }
        i = j;
    }
    int32_t w = 0;
    for (int i = 0; i < n; i++)
        if (!drop[i]) rs->rules[w++] = rs->rules[i];
    for (int i = 0; i < n; i++) free(k[i].key);
    free(k);
    free(drop);
    int32_t dropped = rs->n_rules - w;
    rs->n_rules = w;
    return dropped;
}
