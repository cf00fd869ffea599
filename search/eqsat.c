/* eqsat.c - equality saturation over the proven rules: e-matching, application, e-node costs, extraction to a graph. */
#include "eqsat.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "extract.h"

/* ---------------- e-matching ----------------
   A rule's source pattern is matched top-down: its nodes in reverse topological order (roots
   first), each either determined by a consumer already matched (the e-nodes of the child class
   it reads), or by a bound input (the parents of that class), or, for a root, any live e-node of
   its operator. A value of a multi-output pattern node is a PROJ e-node over its tuple class. */

#define EQ_MAX_PEND 32

/* CPU seconds of the calling thread (so_cpu_now). The phase deadlines below are in it, not in wall
   time: they are a safety net behind the deterministic work limits, and on a machine shared by many
   jobs (load 20 on 2 cores gave the search a tenth of a core) wall-clock deadlines cut the saturation
   at a different point every run. */
#define cpu_now so_cpu_now

typedef struct ematch {
    int32_t rule;
    int32_t en[SO_RULE_MAX_NODES];  /* e-node of each source pattern node */
    int32_t var[SO_RULE_MAX_INPUTS];/* class of each rule input */
    int64_t sym[SO_RULE_MAX_SYMS];
    int32_t lo, hi;                 /* symmetric roots: first and last key (chain_order), else -1 */
    int32_t first, k2;              /* symmetric roots: the first one's e-node, the second one's key */
    int32_t first_chain;            /* 1 if the first symmetric root is a chain (a merge's e-node) */
    int32_t lvl;                    /* symmetric roots: merge level of the chain this match makes (chain_order) */
    int32_t cnt;                    /* symmetric roots: leaves of the chain this match makes */
} ematch;

typedef struct mctx {
    so_egraph *eg;
    const so_rule *r;
    ematch m;
    uint8_t mapped[SO_RULE_MAX_NODES], vbound[SO_RULE_MAX_INPUTS], sbound[SO_RULE_MAX_SYMS];
    so_dimx pd[EQ_MAX_PEND];
    int64_t pv[EQ_MAX_PEND];
    int n_pend;
    const int32_t *op_start, *op_nodes; /* live e-nodes per operator (CSR) */
    ematch *out;                        /* found matches */
    int32_t n_out, cap_out, cap;        /* cap: most per rule */
    double deadline;
    uint64_t tries;                     /* e-node tries so far (all iterations): the work measure */
    uint64_t work_limit;                /* stop when tries reach it (0: none) */
    int stop;
    uint8_t sym_roots[SO_RULE_MAX_NODES]; /* roots of the pattern that share their operator and attributes with another root */
    const int32_t *lab_lo, *lab_hi;     /* per e-node: merge-chain labels (see chain_order); lo < 0: not a chain */
    const int32_t *lab_rule;            /* per chain e-node: the rule whose merges made it */
    const uint8_t *lab_lvl;             /* per chain e-node: 1 if its leaves are start-graph values, 2 otherwise */
    const uint8_t *complete;            /* per chain e-node: 1 if it covers its group's leaves (mark_complete) */
    const int32_t *lab_cnt;             /* per chain e-node: its leaves */
    const uint8_t *orig_cls;            /* per canonical class: 1 if it holds an e-node of the start graph */
    const so_attr *const *uattr;        /* per e-node: so_attr_used of its attributes, interned */
    const so_attr *want[SO_RULE_MAX_NODES]; /* per pattern node without symbolic attributes: the same */
    const int32_t *rank;                /* per class at the iteration's start: topological position, -1 none */
    int32_t n_rank;
} mctx;

/* The ordering key of e-node n as a root of a symmetric multi-root match: a chain (made by such an
   application) carries the keys of its first and last leaf; any other e-node is a leaf whose key is
   its class. */
static int own_chain(const mctx *s, int32_t n) { return s->lab_lo[n] >= 0 && s->lab_rule[n] == s->m.rule; }
static int32_t key_lo(const mctx *s, int32_t n) { return own_chain(s, n) ? s->lab_lo[n] : so_eg_find(s->eg, s->eg->nodes[n].cls); }
static int32_t key_hi(const mctx *s, int32_t n) { return own_chain(s, n) ? s->lab_hi[n] : so_eg_find(s->eg, s->eg->nodes[n].cls); }

/* Merge chains in one canonical order. Roots of the same operator and attributes
   (matmul(X,A), matmul(X,B); matmul(A,W), matmul(C,W)) match any pair of e-nodes, and every merge
   makes a new e-node that matches again: unordered, the k leaves of one shared operand are merged
   in every order and every tree shape (k! orders; NasRNN's x_t.W_g over 5 steps filled 17,000
   e-nodes by the second iteration with at most 4-way merges). A match is kept only when the first
   symmetric root (pattern order) is a leaf or a chain, every later one is a leaf, and the keys
   increase (last key of the first < key of the second < ...): each set of leaves is merged once,
   left-deep in key order, one new e-node per subset, so these rules can run every iteration and
   reach n-way merges. A leaf must be a value of the start graph (its class holds a start-graph
   e-node) and the first e-node of that operator in its class (a conv with a batchnorm folded into
   its weights is the only conv of the batchnorm's class): the other e-nodes of a value
   (matmul(x, t(t(W))) after transpose rules) otherwise seed chains of their own, and NasRNN's
   third iteration hit the match cap on them.
   Merges of merges: a complete chain of another merge rule whose own leaves are start-graph values
   (level 1) is a leaf too, keyed by its class: NasRNN's time-step merges of one weight
   (concat(x0..x4)·W_g, rule 473 reversed) are then merged across the gates that share that
   operand (rule 506 reversed: concat(x0..x4)·[W_1 .. W_k]), as backtracking does; until session 10
   a chain was a leaf for no rule and the e-graph never held that graph. Such a merge makes a level-2
   chain, which is a leaf for nothing, so the nesting stops there. Complete: its chain has every leaf
   of its group (mark_complete, per iteration), so that its partial chains (pairs and runs, O(n^3))
   do not each seed chains of their own.
   Returns 1 if the match is in canonical order. */
static int leaf_value(const mctx *s, int32_t n)
{
    so_egraph *eg = s->eg;
    int32_t c = so_eg_find(eg, eg->nodes[n].cls);
    if (s->lab_lo[n] >= 0) {
        if (s->lab_rule[n] == s->m.rule || s->lab_lvl[n] != 1 || !s->complete[n]) return 0;
    } else if (!s->orig_cls[c])
        return 0;
    const so_eclass *cl = &eg->cls[c];
    for (int32_t i = 0; i < cl->n_nodes; i++) {
        const so_enode *e = &eg->nodes[cl->nodes[i]];
        if (cl->nodes[i] < n && !e->dead && e->op == eg->nodes[n].op && (s->lab_lo[cl->nodes[i]] < 0 || s->lab_lo[n] >= 0)) return 0;
    }
    return 1;
}

static int chain_order(mctx *s)
{
    int32_t prev = -1;
    int first = 1;
    s->m.lo = s->m.hi = s->m.first = s->m.k2 = -1;
    s->m.first_chain = 0;
    s->m.lvl = 1;
    s->m.cnt = 0;
    for (int q = 0; q < s->r->src.n_nodes; q++) {
        if (!s->sym_roots[q]) continue;
        int32_t n = s->m.en[q];
        int own = own_chain(s, n);
        if (!own && !leaf_value(s, n)) return 0;
        if (!first && own) return 0;
        if (!first && key_lo(s, n) <= prev) return 0;
        if (own && s->lab_lvl[n] > s->m.lvl) s->m.lvl = s->lab_lvl[n];
        if (!own && s->lab_lo[n] >= 0) s->m.lvl = 2; /* a merge of merges */
        s->m.cnt += own ? s->lab_cnt[n] : 1;
        if (first) s->m.lo = key_lo(s, n), s->m.first = n, s->m.first_chain = own;
        else if (s->m.k2 < 0) s->m.k2 = key_lo(s, n);
        prev = s->m.hi = key_hi(s, n);
        first = 0;
    }
    return 1;
}

/* The bindings a tried e-node may change, kept to be put back when the try is over. */
typedef struct bsave {
    ematch m;
    uint8_t vb[SO_RULE_MAX_INPUTS], sb[SO_RULE_MAX_SYMS];
    int np;
} bsave;

static void bind_keep(const mctx *s, bsave *k)
{
    k->m = s->m;
    memcpy(k->vb, s->vbound, sizeof k->vb);
    memcpy(k->sb, s->sbound, sizeof k->sb);
    k->np = s->n_pend;
}

static void bind_restore(mctx *s, const bsave *k)
{
    s->m = k->m;
    memcpy(s->vbound, k->vb, sizeof k->vb);
    memcpy(s->sbound, k->sb, sizeof k->sb);
    s->n_pend = k->np;
}

/* Binds the symbols of d so that d == val (deferred when two are unbound); 1 if consistent. */
static int eq_bind_dim(mctx *s, const so_dimx *d, int64_t val)
{
    int64_t rest = val - d->c;
    int free_sym = -1, mult = 0;
    for (int j = 0; j < d->n_sym; j++) {
        int y = d->sym[j];
        if (s->sbound[y]) rest -= s->m.sym[y];
        else if (free_sym < 0 || free_sym == y) free_sym = y, mult++;
        else {
            if (s->n_pend >= EQ_MAX_PEND) return 0;
            s->pd[s->n_pend] = *d;
            s->pv[s->n_pend++] = val;
            return 1;
        }
    }
    if (free_sym < 0) return rest == 0;
    if (rest < mult || rest % mult) return 0; /* symbols are >= 1 */
    s->m.sym[free_sym] = rest / mult;
    s->sbound[free_sym] = 1;
    return 1;
}

static int eq_resolve(mctx *s)
{
    while (s->n_pend > 0) {
        so_dimx d[EQ_MAX_PEND];
        int64_t v[EQ_MAX_PEND];
        int n = s->n_pend;
        memcpy(d, s->pd, (size_t)n * sizeof *d);
        memcpy(v, s->pv, (size_t)n * sizeof *v);
        s->n_pend = 0;
        for (int i = 0; i < n; i++)
            if (!eq_bind_dim(s, &d[i], v[i])) return 0;
        if (s->n_pend == n) return 0;
    }
    for (int y = 0; y < s->r->n_syms; y++)
        if (!s->sbound[y]) return 0;
    for (int i = 0; i < s->r->n_pre; i++) {
        int64_t v = s->m.sym[s->r->pre[i].sym];
        if (s->r->pre[i].kind == SO_PRE_GE && v < s->r->pre[i].value) return 0;
        if (s->r->pre[i].kind == SO_PRE_DIV && (s->r->pre[i].value <= 0 || v % s->r->pre[i].value)) return 0;
    }
    return 1;
}

static int eq_bind_var(mctx *s, int v, int32_t c)
{
    c = so_eg_find(s->eg, c);
    if (s->vbound[v]) return s->m.var[v] == c;
    const so_rinput *ri = &s->r->inputs[v];
    const so_eclass *cl = &s->eg->cls[c];
    if (cl->n_out != 1 || cl->out[0].rank != ri->rank || cl->out[0].dtype != SO_F32) return 0;
    for (int d = 0; d < ri->rank; d++)
        if (!eq_bind_dim(s, &ri->dim[d], cl->out[0].dim[d])) return 0;
    s->m.var[v] = c;
    s->vbound[v] = 1;
    return 1;
}

/* The value class of (e-node n, slot): its class, or for a tuple the class of PROJ(slot, it); -1 if none. */
static int32_t value_class(so_egraph *eg, int32_t n, int32_t slot)
{
    int32_t c = so_eg_find(eg, eg->nodes[n].cls);
    if (eg->cls[c].n_out == 1) return c;
    const so_eclass *cl = &eg->cls[c];
    for (int32_t i = 0; i < cl->n_parents; i++) {
        const so_enode *p = &eg->nodes[cl->parents[i]];
        if (!p->dead && p->op == SO_EG_PROJ && p->ref == slot) return so_eg_find(eg, p->cls);
    }
    return -1;
}

static int eq_attr_match(mctx *s, int p, int32_t n)
{
    const so_rnode *pn = &s->r->src.nodes[p];
    if (pn->n_dx == 0) return s->want[p] == s->uattr[n]; /* both interned */
    const so_attr *ga = s->eg->nodes[n].attr;
    so_attr have = so_attr_used(pn->op, ga), want = so_attr_used(pn->op, &pn->attr);
    if (pn->n_dx > 0) {
        if (ga->n_ints != pn->n_dx) return 0;
        want.n_ints = pn->n_dx;
        for (int j = 0; j < pn->n_dx; j++) {
            if (!eq_bind_dim(s, &pn->dx[j], ga->ints[j])) return 0;
            want.ints[j] = ga->ints[j];
        }
    }
    return memcmp(&want, &have, sizeof want) == 0;
}

static void eq_step(mctx *s, int p);

/* The pattern node to match next: the highest unmatched one that a matched consumer reads (its
   e-nodes are those of one child class), else the highest that reads a matched node or a bound
   input (the parents of that class), else the highest unmatched one (a root: every e-node of its operator); -1 when all are matched. Taking a
   connected node first matters for roots joined only through a shared child (transpose(split(A).0),
   transpose(split(A).1); matmul(B, s0), matmul(s0, C); matmul(A, split(B).1), matmul(A, split(B).0)): in plain reverse
   order the second root was tried against every e-node of its operator (or every reader of A),
   pairs of them, and on NasRNN four such rules took 13 of the 30 million tries of the work limit
   and found nothing. The matches found are the same. */
static int next_node(const mctx *s)
{
    int best = -1, by_input = -1;
    for (int p = s->r->src.n_nodes - 1; p >= 0; p--) {
        if (s->mapped[p]) continue;
        if (best < 0) best = p;
        for (int q = p + 1; q < s->r->src.n_nodes; q++) {
            if (!s->mapped[q]) continue;
            for (int k = 0; k < s->r->src.nodes[q].n_in; k++)
                if (s->r->src.nodes[q].in[k].node == p) return p;
        }
        const so_rnode *pn = &s->r->src.nodes[p];
        for (int k = 0; k < pn->n_in && by_input < 0; k++) {
            so_rref ref = pn->in[k];
            if (ref.node < 0 ? s->vbound[-(ref.node + 1)] : s->mapped[ref.node]) by_input = p;
        }
    }
    return by_input >= 0 ? by_input : best;
}

/* Merges extend by the next leaf only. Every pair of leaves is kept; of the matches m[0..n) of one
   rule with symmetric roots whose first root is a chain, only the one with the least second key
   per chain (the first of those found): a chain grows by the next leaf in key order, so the chains
   are a pair and then a run of consecutive leaves after it, O(n^3) for n leaves of one shared
   operand rather than 2^n subsets (NasRNN: 8 gate matmuls of each step's input share it, 247
   subsets each). Any two siblings can merge (NasNet-A's win is the merge of two non-adjacent
   1x1 convs), and merging all (NasRNN's) is reachable. At most cap are kept, in the order found.
   Returns the number kept, compacted. */
static int32_t contiguous_runs(ematch *m, int32_t n, int32_t cap)
{
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++) {
        int best = 1;
        if (!m[i].first_chain) /* a pair of leaves: every one is kept */
            ;
        else
            for (int32_t j = 0; j < n && best; j++)
            if (j != i && m[j].first == m[i].first && (m[j].k2 < m[i].k2 || (m[j].k2 == m[i].k2 && j < i))) best = 0;
        if (best && k < cap) m[k++] = m[i];
    }
    return k;
}

static void eq_try(mctx *s, int p, int32_t n)
{
    const so_rnode *pn = &s->r->src.nodes[p];
    so_egraph *eg = s->eg;
    const so_enode *e = &eg->nodes[n];
    if (s->stop) return;
    if (++s->tries >= s->work_limit && s->work_limit) {
        s->stop = 2;
        return;
    }
    if ((s->tries & 1023u) == 0 && s->deadline > 0 && cpu_now() > s->deadline) {
        s->stop = 1;
        return;
    }
    if (e->dead || e->op != (int32_t)pn->op || e->n_in != pn->n_in || eg->cls[so_eg_find(eg, e->cls)].n_out != pn->n_out) return;
    if (pn->n_dx == 0 && s->want[p] != s->uattr[n]) return; /* attributes differ (both interned) */
    for (int q = 0; q < s->r->src.n_nodes; q++)
        if (s->mapped[q] && s->m.en[q] == n) return; /* injective */
    bsave keep;
    bind_keep(s, &keep);
    int ok = eq_attr_match(s, p, n);
    /* consumers already matched read this node's values */
    for (int q = 0; ok && q < s->r->src.n_nodes; q++) {
        if (!s->mapped[q]) continue;
        const so_rnode *qn = &s->r->src.nodes[q];
        for (int k = 0; ok && k < qn->n_in; k++)
            if (qn->in[k].node == p) ok = so_eg_find(eg, so_eg_kids(eg, s->m.en[q])[k]) == value_class(eg, n, qn->in[k].slot);
    }
    const int32_t *kid = so_eg_kids(eg, n);
    for (int k = 0; ok && k < pn->n_in; k++) {
        so_rref ref = pn->in[k];
        if (ref.node < 0) ok = eq_bind_var(s, -(ref.node + 1), kid[k]);
        else if (s->mapped[ref.node]) ok = so_eg_find(eg, kid[k]) == value_class(eg, s->m.en[ref.node], ref.slot);
    }
    if (ok) {
        s->m.en[p] = n;
        s->mapped[p] = 1;
        eq_step(s, next_node(s));
        s->mapped[p] = 0;
    }
    bind_restore(s, &keep);
}

static void eq_step(mctx *s, int p)
{
    if (s->stop) return;
    so_egraph *eg = s->eg;
    if (p < 0) {
        bsave keep;
        bind_keep(s, &keep);
        int ok = eq_resolve(s);
        for (int v = 0; ok && v < s->r->n_inputs; v++) ok = s->vbound[v];
        /* a source on weights only is folded into a weight when extracted: rewriting it is wasted */
        int all_const = 1;
        for (int q = 0; q < s->r->src.n_nodes && all_const; q++) all_const = eg->cls[so_eg_find(eg, eg->nodes[s->m.en[q]].cls)].constant;
        ok &= !all_const;
        /* roots of the same operator and attributes: one canonical merge order (chain_order) */
        if (ok) ok = chain_order(s);
        if (ok) {
            if (s->n_out == s->cap_out) {
                s->cap_out = s->cap_out ? 2 * s->cap_out : 64;
                s->out = so_xrealloc(s->out, (size_t)s->cap_out * sizeof *s->out);
            }
            s->out[s->n_out++] = s->m;
            if (--s->cap <= 0) s->stop = 1;
        }
        bind_restore(s, &keep);
        return;
    }
    const so_rnode *pn = &s->r->src.nodes[p];
    /* 1. a matched consumer determines the class */
    for (int q = p + 1; q < s->r->src.n_nodes; q++) {
        if (!s->mapped[q]) continue;
        const so_rnode *qn = &s->r->src.nodes[q];
        for (int k = 0; k < qn->n_in; k++) {
            if (qn->in[k].node != p) continue;
            const so_eclass *cl = &eg->cls[so_eg_find(eg, so_eg_kids(eg, s->m.en[q])[k])];
            if (pn->n_out == 1) {
                for (int32_t i = 0; i < cl->n_nodes && !s->stop; i++) eq_try(s, p, cl->nodes[i]);
            } else {
                for (int32_t i = 0; i < cl->n_nodes && !s->stop; i++) {
                    const so_enode *pr = &eg->nodes[cl->nodes[i]];
                    if (pr->op != SO_EG_PROJ || pr->ref != qn->in[k].slot) continue;
                    const so_eclass *tc = &eg->cls[so_eg_find(eg, so_eg_kids(eg, cl->nodes[i])[0])];
                    for (int32_t j = 0; j < tc->n_nodes && !s->stop; j++) eq_try(s, p, tc->nodes[j]);
                }
            }
            return;
        }
    }
    /* 2. a bound input: that class's parents */
    for (int k = 0; k < pn->n_in; k++) {
        so_rref ref = pn->in[k];
        int32_t c = -1;
        if (ref.node < 0 && s->vbound[-(ref.node + 1)]) c = s->m.var[-(ref.node + 1)];
        else if (ref.node >= 0 && s->mapped[ref.node]) c = value_class(eg, s->m.en[ref.node], ref.slot);
        else continue;
        if (c < 0) return;
        const so_eclass *cl = &eg->cls[c];
        for (int32_t i = 0; i < cl->n_parents && !s->stop; i++) {
            int32_t u = cl->parents[i];
            if (eg->nodes[u].n_in > k && so_eg_find(eg, so_eg_kids(eg, u)[k]) == c) eq_try(s, p, u);
        }
        return;
    }
    /* 3. every live e-node of the operator */
    for (int32_t j = s->op_start[pn->op]; j < s->op_start[pn->op + 1] && !s->stop; j++) eq_try(s, p, s->op_nodes[j]);
}

/* ---------------- the run ---------------- */

typedef struct run {
    so_egraph eg;
    const so_graph *start;
    const so_rule *rules;
    int32_t n_rules;
    so_cost_model *cm;
    double meas0;               /* cm->measure_cpu_seconds at the start */
    so_fold_ctx *fc;
    so_graph *scratch;
    int32_t *out_cls;          /* value class of each graph output */
    int32_t *input_cls;        /* class of each INPUT node of start */
    int32_t n_inputs;
    int32_t *app_rule;         /* rule of each application */
    int32_t *app_parent;       /* the application that made the merge chain it extends (chain_order), or -1 */
    uint8_t *app_merge;        /* 1: an application of a rule with symmetric roots (a merge) */
    int32_t n_app, cap_app;
    /* each application as an extraction move: for each rule output, the class of the source
       value and the e-node of the target value (moves[app * SO_RULE_MAX_OUTPUTS + k]) */
    int32_t (*moves)[2];
    int32_t *n_moves;
    int32_t f32_weight;        /* a float32 weight of the model (flops placeholders), or -1 */
    const uint8_t *start_fused; /* per start-graph node: 1 if the executor fuses it into its producer */
    int32_t *lab_lo, *lab_hi;  /* per e-node: merge-chain keys (chain_order); lab_lo -1: not a chain */
    int32_t *lab_rule, *lab_cnt; /* per chain e-node: its merge rule, its number of leaves */
    uint8_t *lab_lvl, *complete; /* per chain e-node: its level and whether it is complete (mctx) */
    const so_attr **uattr;     /* per e-node: so_attr_used of its attributes, interned in the model */
    int32_t n_lab, cap_lab;
    int64_t prefiltered;       /* matches skipped: they would close a cycle */
    int32_t *rank, n_rank;     /* per class at the iteration's start: topological position (children first) */
    double *alt;               /* per e-node: its cost out of context, or -1 (so_extract_costs) */
    uint8_t *ctx;              /* per e-node: which children decide the context (so_extract_costs) */
    int64_t unpriced;          /* e-nodes left unpriced at the costing deadline */
} run;

/* The thread's CPU seconds less what timing new cost configurations took since the start: the
   costing, moves and polish deadlines, so that a run that fills a cost table stops where the runs
   that read it stop. */
static double run_cpu(const run *r) { return cpu_now() - (r->cm->measure_cpu_seconds - r->meas0); }

/* Builds in r->scratch the e-node (op, attr, ref, kids) over placeholders of its child classes (a
   weight of the class, a stand-in weight for a computed constant, else an input of its shape);
   returns the node's index. standin: use stand-in weights (costing), else inputs (inference).
   Under the flops model a computed constant's placeholder is any float32 weight of the model given
   the class's shape: that model reads only shapes and which inputs are weights, and a stand-in of
   each new shape (written pages, megabytes for merged conv weights) cost Inception-v3 6.5 s. */
static int32_t scratch_node(run *r, int32_t op, const so_attr *attr, int32_t ref, const int32_t *kids, int32_t n_in, int32_t n_out,
                            int standin)
{
    so_graph *g = r->scratch;
    so_arena_free(&g->arena);
    g->n_nodes = 0;
    so_edge in[SO_MAX_IN];
    for (int32_t k = 0; k < n_in; k++) {
        const so_eclass *cl = &r->eg.cls[so_eg_find(&r->eg, kids[k])];
        int32_t w = -1;
        for (int32_t i = 0; i < cl->n_nodes && w < 0; i++)
            if (r->eg.nodes[cl->nodes[i]].op == SO_OP_WEIGHT) w = r->eg.nodes[cl->nodes[i]].ref;
        if (w < 0 && cl->constant && standin && cl->out[0].rank >= 0)
            w = r->cm->kind == SO_COST_FLOPS && r->f32_weight >= 0 ? r->f32_weight : so_fold_standin(r->fc, &cl->out[0]);
        int32_t j = so_graph_add(g, w >= 0 ? SO_OP_WEIGHT : SO_OP_INPUT, NULL, 0, 1, NULL, w, NULL);
        g->nodes[j].out[0] = cl->out[0];
        in[k] = (so_edge){j, 0};
    }
    return so_graph_add(g, (so_op)op, in, n_in, n_out, attr, ref, NULL);
}

/* Adds the graph start to the e-graph. */
static void add_start(run *r)
{
    const so_graph *g = r->start;
    int32_t *ncls = so_xmalloc(((size_t)g->n_nodes + 1) * sizeof *ncls);
    int32_t *voff = so_xmalloc(((size_t)g->n_nodes + 1) * sizeof *voff), tot = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) voff[i] = tot, tot += g->nodes[i].n_out;
    int32_t *vcls = so_xmalloc(((size_t)tot + 1) * sizeof *vcls);
    r->input_cls = so_xmalloc(((size_t)g->n_nodes + 1) * sizeof *r->input_cls);
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const so_node *n = &g->nodes[i];
        int32_t kids[SO_MAX_IN];
        for (int k = 0; k < n->n_in; k++) kids[k] = vcls[voff[n->in[k].node] + n->in[k].slot];
        ncls[i] = so_eg_add(&r->eg, n->op, n->attr, n->ref, kids, n->n_in, n->out, n->n_out, i, -1, n->name, NULL);
        for (int s = 0; s < n->n_out; s++) vcls[voff[i] + s] = n->n_out == 1 ? ncls[i] : so_eg_proj(&r->eg, ncls[i], s, -1);
        if (n->op == SO_OP_INPUT) r->input_cls[r->n_inputs++] = ncls[i];
    }
    r->out_cls = so_xmalloc(((size_t)g->model->n_outputs + 1) * sizeof *r->out_cls);
    for (int32_t o = 0; o < g->model->n_outputs; o++) r->out_cls[o] = vcls[voff[g->outputs[o].node] + g->outputs[o].slot];
    free(ncls);
    free(voff);
    free(vcls);
}

/* Applies one match: adds the target's e-nodes and merges each mapped output with its source
   value. Returns 1 if the e-graph changed. */
static void label_new(run *r, int32_t lo, int32_t hi, int32_t rule, int lvl, int32_t cnt)
{
    if (r->eg.n_nodes > r->cap_lab) {
        r->cap_lab = r->eg.n_nodes * 2 + 256;
        r->lab_lo = so_xrealloc(r->lab_lo, (size_t)r->cap_lab * sizeof *r->lab_lo);
        r->lab_hi = so_xrealloc(r->lab_hi, (size_t)r->cap_lab * sizeof *r->lab_hi);
        r->lab_rule = so_xrealloc(r->lab_rule, (size_t)r->cap_lab * sizeof *r->lab_rule);
        r->lab_cnt = so_xrealloc(r->lab_cnt, (size_t)r->cap_lab * sizeof *r->lab_cnt);
        r->lab_lvl = so_xrealloc(r->lab_lvl, (size_t)r->cap_lab * sizeof *r->lab_lvl);
        r->complete = so_xrealloc(r->complete, (size_t)r->cap_lab * sizeof *r->complete);
        r->uattr = so_xrealloc(r->uattr, (size_t)r->cap_lab * sizeof *r->uattr);
    }
    for (; r->n_lab < r->eg.n_nodes; r->n_lab++) {
        const so_enode *e = &r->eg.nodes[r->n_lab];
        r->lab_lo[r->n_lab] = lo, r->lab_hi[r->n_lab] = hi;
        r->lab_rule[r->n_lab] = rule, r->lab_lvl[r->n_lab] = (uint8_t)lvl, r->complete[r->n_lab] = 0, r->lab_cnt[r->n_lab] = cnt;
        if (e->op == SO_EG_PROJ || !e->attr) r->uattr[r->n_lab] = NULL;
        else {
            so_attr a = so_attr_used((so_op)e->op, e->attr);
            r->uattr[r->n_lab] = so_model_attr(r->eg.model, &a);
        }
    }
}

static int apply_match(run *r, const ematch *m, int32_t app);

/* apply_match, then the e-nodes it added labelled as a chain of the match's symmetric roots */
static int apply(run *r, const ematch *m, int32_t app)
{
    /* a rule with several outputs whose target reads a value computed from one of its source
       outputs would close a cycle when merged (matmul(h1,U), matmul(h2,U) merged into
       concat(h1,h2).U while h2 is computed from h1.U): skipped before anything is added (Tensat's
       pre-filtering), rather than added and dropped by the cycle filter */
    const so_rule *ru = &r->rules[m->rule];
    if (ru->n_outputs > 1)
        for (int k = 0; k < ru->n_outputs; k++) {
            so_rref s = ru->src_out[k];
            int32_t sc = value_class(&r->eg, m->en[s.node], s.slot);
            if (sc < 0) continue;
            for (int v = 0; v < ru->n_inputs; v++) {
                int32_t fv = so_eg_find(&r->eg, m->var[v]), fs = so_eg_find(&r->eg, sc);
                if (fv == fs) continue;
                /* a class placed before sc in the iteration's topological order cannot read it (up to
                   this iteration's merges so far; the cycle filter catches the rest) */
                if (fv < r->n_rank && fs < r->n_rank && r->rank[fv] >= 0 && r->rank[fs] >= 0 && r->rank[fv] < r->rank[fs]) continue;
                if (so_eg_reaches(&r->eg, fv, fs)) {
                    r->prefiltered++;
                    return 0;
                }
            }
        }
    label_new(r, -1, -1, -1, 0, 0);
    int changed = apply_match(r, m, app);
    label_new(r, m->lo, m->hi, m->rule, m->lvl, m->cnt);
    return changed;
}

static int apply_match(run *r, const ematch *m, int32_t app)
{
    so_egraph *eg = &r->eg;
    const so_rule *ru = &r->rules[m->rule];
    int32_t dcls[SO_RULE_MAX_NODES], dnode[SO_RULE_MAX_NODES];
    int changed = 0;
    for (int d = 0; d < ru->dst.n_nodes; d++) {
        const so_rnode *dn = &ru->dst.nodes[d];
        int32_t kids[SO_RULE_MAX_IN];
        for (int k = 0; k < dn->n_in; k++) {
            so_rref ref = dn->in[k];
            if (ref.node < 0) kids[k] = m->var[-(ref.node + 1)];
            else kids[k] = ru->dst.nodes[ref.node].n_out == 1 ? dcls[ref.node] : so_eg_proj(eg, dcls[ref.node], ref.slot, app);
        }
        so_attr a = dn->attr;
        if (dn->n_dx > 0) {
            a.n_ints = dn->n_dx;
            for (int j = 0; j < dn->n_dx; j++) a.ints[j] = so_dimx_eval(&dn->dx[j], m->sym);
        }
        a = so_attr_used(dn->op, &a);
        const so_attr *ia = so_model_attr(eg->model, &a);
        int32_t sn = scratch_node(r, dn->op, ia, -1, kids, dn->n_in, dn->n_out, 0);
        if (so_graph_infer(r->scratch, sn) != SO_OK) return changed; /* does not type-check here */
        int added = 0;
        dcls[d] = so_eg_add(eg, dn->op, ia, -1, kids, dn->n_in, r->scratch->nodes[sn].out, dn->n_out, -1, app, NULL, &added);
        dnode[d] = eg->last_node;
        changed |= added;
    }
    r->n_moves[app] = 0;
    for (int k = 0; k < ru->n_outputs; k++) {
        so_rref s = ru->src_out[k], t = ru->dst_out[k];
        int32_t sc = value_class(eg, m->en[s.node], s.slot);
        if (sc < 0) sc = so_eg_proj(eg, so_eg_find(eg, eg->nodes[m->en[s.node]].cls), s.slot, app);
        int32_t tc, tn;
        if (t.node < 0) {
            tc = m->var[-(t.node + 1)];
            tn = eg->cls[so_eg_find(eg, tc)].n_nodes > 0 ? eg->cls[so_eg_find(eg, tc)].nodes[0] : -1;
        } else if (ru->dst.nodes[t.node].n_out == 1) {
            tc = dcls[t.node];
            tn = dnode[t.node];
        } else {
            tc = so_eg_proj(eg, dcls[t.node], t.slot, app);
            tn = eg->last_node;
        }
        if (tn >= 0) {
            r->moves[(size_t)app * SO_RULE_MAX_OUTPUTS + (size_t)r->n_moves[app]][0] = sc;
            r->moves[(size_t)app * SO_RULE_MAX_OUTPUTS + (size_t)r->n_moves[app]++][1] = tn;
        }
        if (so_eg_find(eg, sc) == so_eg_find(eg, tc)) continue;
        if (so_eg_merge(eg, sc, tc) >= 0) changed = 1;
    }
    return changed;
}

/* Marks the complete chains (mctx.complete): the pair matches m[0..n) of each merge rule (first
   root a leaf) join their two leaves' keys into groups (union-find over class ids); a chain of
   that rule whose first and last keys are its group's least and greatest and that has as many
   leaves as the group is complete. Called after
   an iteration's applications, for the next iteration's matching. */
static void mark_complete(run *r, const ematch *m, int32_t n)
{
    int32_t nc = r->eg.n_cls;
    int32_t *uf = so_xmalloc(((size_t)nc + 1) * sizeof *uf), *gmin = so_xmalloc(((size_t)nc + 1) * sizeof *gmin);
    int32_t *gmax = so_xmalloc(((size_t)nc + 1) * sizeof *gmax), *touched = so_xmalloc(((size_t)2 * n + 1) * sizeof *touched);
    int32_t *gcnt = so_xmalloc(((size_t)nc + 1) * sizeof *gcnt);
    for (int32_t c = 0; c < nc; c++) uf[c] = -1;
    for (int32_t i = 0; i < n;) {
        int32_t rule = m[i].rule, j = i, nt = 0;
        for (; j < n && m[j].rule == rule; j++) {
            if (m[j].lo < 0 || m[j].first_chain || m[j].k2 < 0 || m[j].lo >= nc || m[j].k2 >= nc) continue;
            int32_t a = m[j].lo, b = m[j].k2;
            int32_t ab[2] = {a, b};
            for (int k = 0; k < 2; k++)
                if (uf[ab[k]] < 0) uf[ab[k]] = ab[k], gmin[ab[k]] = gmax[ab[k]] = ab[k], gcnt[ab[k]] = 1, touched[nt++] = ab[k];
            while (uf[a] != a) a = uf[a] = uf[uf[a]];
            while (uf[b] != b) b = uf[b] = uf[uf[b]];
            if (a == b) continue;
            if (b < a) { int32_t t = a; a = b; b = t; }
            uf[b] = a;
            gmin[a] = gmin[a] < gmin[b] ? gmin[a] : gmin[b];
            gmax[a] = gmax[a] > gmax[b] ? gmax[a] : gmax[b];
            gcnt[a] += gcnt[b];
        }
        if (nt > 0)
            for (int32_t e = 0; e < r->n_lab; e++) {
                if (r->lab_lo[e] < 0 || r->lab_rule[e] != rule || r->lab_lo[e] >= nc || uf[r->lab_lo[e]] < 0) continue;
                int32_t a = r->lab_lo[e];
                while (uf[a] != a) a = uf[a];
                r->complete[e] = r->lab_lo[e] == gmin[a] && r->lab_hi[e] == gmax[a] && r->lab_cnt[e] == gcnt[a];
            }
        for (int32_t t = 0; t < nt; t++) uf[touched[t]] = -1;
        i = j;
    }
    free(uf);
    free(gmin);
    free(gmax);
    free(gcnt);
    free(touched);
}

/* The CSR of live e-nodes per operator. */
static void op_index(const so_egraph *eg, int32_t **start, int32_t **nodes)
{
    int32_t *st = so_xcalloc(SO_OP_COUNT + 2, sizeof *st), *nd = so_xmalloc(((size_t)eg->n_nodes + 1) * sizeof *nd);
    for (int32_t n = 0; n < eg->n_nodes; n++)
        if (!eg->nodes[n].dead && eg->nodes[n].op >= 0) st[eg->nodes[n].op + 1]++;
    for (int o = 0; o < SO_OP_COUNT; o++) st[o + 1] += st[o];
    int32_t *fill = so_xcalloc(SO_OP_COUNT + 1, sizeof *fill);
    for (int32_t n = 0; n < eg->n_nodes; n++)
        if (!eg->nodes[n].dead && eg->nodes[n].op >= 0) nd[st[eg->nodes[n].op] + fill[eg->nodes[n].op]++] = n;
    free(fill);
    *start = st;
    *nodes = nd;
}

/* Roots of r's source pattern (nodes no other pattern node reads): root[p] = 1; returns their number. */
static int pattern_roots(const so_rule *r, uint8_t *root)
{
    int n = 0;
    for (int p = 0; p < r->src.n_nodes; p++) {
        int used = 0;
        for (int q = p + 1; q < r->src.n_nodes && !used; q++)
            for (int k = 0; k < r->src.nodes[q].n_in; k++) used |= r->src.nodes[q].in[k].node == p;
        root[p] = (uint8_t)!used;
        n += !used;
    }
    return n;
}

/* Roots that share operator, arity and attributes with another root (sym[p] = 1). */
static void symmetric_roots(const so_rule *r, const uint8_t *root, uint8_t *sym)
{
    memset(sym, 0, SO_RULE_MAX_NODES);
    for (int p = 0; p < r->src.n_nodes; p++)
        for (int q = 0; q < r->src.n_nodes; q++) {
            const so_rnode *a = &r->src.nodes[p], *b = &r->src.nodes[q];
            if (p != q && root[p] && root[q] && a->op == b->op && a->n_in == b->n_in && a->n_out == b->n_out &&
                !memcmp(&a->attr, &b->attr, sizeof a->attr))
                sym[p] = 1;
        }
}

/* Cost of e-node n alone (so_cost_node over placeholders of its child classes). */
static double alone_cost(run *r, int32_t n)
{
    const so_enode *e = &r->eg.nodes[n];
    const so_eclass *cl = &r->eg.cls[so_eg_find(&r->eg, e->cls)];
    int32_t sn = scratch_node(r, e->op, e->attr, e->ref, so_eg_kids(&r->eg, n), e->n_in, cl->n_out, 1);
    memcpy(r->scratch->nodes[sn].out, cl->out, (size_t)cl->n_out * sizeof *cl->out);
    return so_cost_node(r->cm, r->scratch, sn);
}

/* Priced after the deadline: never chosen (the ILP and the moves avoid it, as they would an
   operator that cannot run). */
#define UNPRICED 1e9

/* E-node costs (see so_eqsat_run). start_cost[i]: node i of the start graph as the executor runs it.
   New e-nodes are priced until deadline (measured costs time each new configuration), then UNPRICED. */
static double *node_costs(run *r, const double *start_cost, double deadline)
{
    so_egraph *eg = &r->eg;
    double *c = so_xmalloc(((size_t)eg->n_nodes + 1) * sizeof *c);
    r->alt = so_xmalloc(((size_t)eg->n_nodes + 1) * sizeof *r->alt);
    r->ctx = so_xcalloc((size_t)eg->n_nodes + 1, 1);
    for (int32_t n = 0; n < eg->n_nodes; n++) {
        const so_enode *e = &eg->nodes[n];
        c[n] = 0;
        r->alt[n] = -1;
        if (e->dead || e->op == SO_EG_PROJ || (so_ops[e->op].flags & (SO_F_SOURCE | SO_F_OPAQUE))) continue;
        int all_const = 1;
        for (int32_t k = 0; k < e->n_in; k++) all_const &= eg->cls[so_eg_find(eg, so_eg_kids(eg, n)[k])].constant;
        if (e->n_in == 0 && !(so_ops[e->op].flags & SO_F_CONST)) all_const = 0;
        if (all_const) c[n] = 1e-9; /* folded into a weight */
        else if (e->orig >= 0) {
            c[n] = start_cost[e->orig] + 1e-9;
            /* an epilogue the executor fused into its producer in the start graph (batchnorm, bias,
               relu after a conv) is free only while its producer stays one: after a merged-then-
               split conv (its operand a projection) it runs as its own pass. The same for a
               zero-copy concat: of split outputs it is a copy (Inception-v3: merged sibling convs
               made each block's concat a copy, +3.7 ms of cost the e-graph did not see). Priced
               in context by the extraction (so_extract_costs) */
            if (r->start_fused[e->orig] && e->op != SO_OP_SPLIT) {
                r->alt[n] = so_cost_node(r->cm, r->start, e->orig) + 1e-9;
                r->ctx[n] = e->op == SO_OP_CONCAT ? 2 : 1;
            }
        }
        else if (e->op == SO_OP_SPLIT && e->n_in == 1) {
            /* zero-copy when the dims before the axis are 1 (kernels/exec.c split_in_place) */
            const so_shape *is = &eg->cls[so_eg_find(eg, so_eg_kids(eg, n)[0])].out[0];
            int zc = 1;
            for (int d = 0; d < e->attr->axis && d < is->rank; d++) zc &= is->dim[d] == 1;
            zc &= !r->cm->copies; /* standard-ONNX pricing: other runtimes copy it */
            c[n] = 1e-9;
            if (!zc) c[n] += run_cpu(r) < deadline ? alone_cost(r, n) : (r->unpriced++, UNPRICED);
        } else if (run_cpu(r) < deadline)
            c[n] = alone_cost(r, n) + 1e-9;
        else {
            c[n] = UNPRICED;
            r->unpriced++;
        }
    }
    return c;
}

/* The graph of a choice: the chosen e-nodes of the classes the outputs (and the inputs) need;
   used[a] = 1 for each rule application a whose e-nodes it holds. NULL if a needed class has no
   choice. */
static so_graph *build_graph(run *r, const int32_t *choice, char *used)
{
    so_egraph *eg = &r->eg;
    int32_t nt;
    int32_t *topo = so_eg_topo(eg, &nt);
    char *need = so_xcalloc((size_t)eg->n_cls + 1, 1);
    int32_t *stk = so_xmalloc(((size_t)eg->n_cls + (size_t)eg->model->n_outputs + (size_t)r->n_inputs + 1) * sizeof *stk), ns = 0;
    for (int32_t o = 0; o < eg->model->n_outputs; o++) stk[ns++] = so_eg_find(eg, r->out_cls[o]);
    for (int32_t i = 0; i < r->n_inputs; i++) stk[ns++] = so_eg_find(eg, r->input_cls[i]);
    int complete = 1;
    while (ns > 0) {
        int32_t c = stk[--ns];
        if (need[c]) continue;
        need[c] = 1;
        if (choice[c] < 0) { /* a needed class without a choice: no graph */
            complete = 0;
            continue;
        }
        if (eg->nodes[choice[c]].app >= 0) used[eg->nodes[choice[c]].app] = 1;
        const int32_t *kid = so_eg_kids(eg, choice[c]);
        for (int32_t k = 0; k < eg->nodes[choice[c]].n_in; k++)
            if (!need[so_eg_find(eg, kid[k])]) stk[ns++] = so_eg_find(eg, kid[k]);
    }
    free(stk);
    if (!complete) {
        free(need);
        free(topo);
        return NULL;
    }
    so_graph *g = so_graph_new(eg->model);
    int32_t *gnode = so_xmalloc(((size_t)eg->n_cls + 1) * sizeof *gnode);
    so_edge *gval = so_xmalloc(((size_t)eg->n_cls + 1) * sizeof *gval);
    for (int32_t i = 0; i < nt; i++) {
        int32_t c = topo[i];
        if (!need[c]) continue;
        const so_enode *e = &eg->nodes[choice[c]];
        const int32_t *kid = so_eg_kids(eg, choice[c]);
        if (e->op == SO_EG_PROJ) { /* a value of a tuple built before it */
            gval[c] = (so_edge){gnode[so_eg_find(eg, kid[0])], e->ref};
            continue;
        }
        so_edge in[SO_MAX_IN];
        for (int32_t k = 0; k < e->n_in; k++) in[k] = gval[so_eg_find(eg, kid[k])];
        const so_eclass *cl = &eg->cls[c];
        int32_t j = so_graph_add(g, (so_op)e->op, in, e->n_in, cl->n_out, e->attr, e->ref, e->name);
        memcpy(g->nodes[j].out, cl->out, (size_t)cl->n_out * sizeof *cl->out);
        gnode[c] = j;
        gval[c] = (so_edge){j, 0};
    }
    for (int32_t o = 0; o < eg->model->n_outputs; o++) g->outputs[o] = gval[so_eg_find(eg, r->out_cls[o])];
    free(gnode);
    free(gval);
    free(need);
    free(topo);
    return g;
}

/* Whole-rewrite moves on an extraction (the ILP's relaxation is weak where commuted and merged
   alternatives share children, and greedy pays a merged operator once per reader): a move is one
   rule application, its target e-nodes chosen for all its outputs at once. Each pass prices every
   move that touches a class the choice needs (its DAG cost after the move), then takes the
   improving ones best first, each re-priced and kept only if it still lowers the cost; passes until
   none improves, at most max_passes, or the deadline (a safety net: reached only on a heavily
   loaded machine, then the result depends on the load). Best first matters: NasRNN's zero-copy
   merges of the 8 gate matmuls of one input (saving a launch) taken in application order block
   the time-step merges of one weight (saving 4 reads of 1 MB) that come later. */
#define MOVE_DEPTH 64 /* applications in one chain move, at most */
#define MOVE_MAX (MOVE_DEPTH * SO_RULE_MAX_OUTPUTS)

/* Sets the move of application a (and of the chain it extends: a merge chain's move takes its
   earlier merges too, so that a 5-way merge replaces two disjoint pairs in one step) in choice;
   the classes changed and their old choices in cls/old (MOVE_MAX). Returns how many, 0 (nothing
   changed, choice as it was) if none. */
static int32_t move_set(run *r, int32_t a, int32_t *choice, int32_t *cls, int32_t *old)
{
    so_egraph *eg = &r->eg;
    int32_t n = 0, same = 1;
    for (int depth = 0; a >= 0 && depth < MOVE_DEPTH; depth++, a = r->app_parent[a])
        for (int32_t k = 0; k < r->n_moves[a]; k++) {
            int32_t c = so_eg_find(eg, r->moves[(size_t)a * SO_RULE_MAX_OUTPUTS + k][0]), e = r->moves[(size_t)a * SO_RULE_MAX_OUTPUTS + k][1];
            if (eg->nodes[e].dead || so_eg_find(eg, eg->nodes[e].cls) != c) continue;
            int dup = 0; /* a class an outer merge already set keeps that choice */
            for (int32_t q = 0; q < n && !dup; q++) dup = cls[q] == c;
            if (dup) continue;
            cls[n] = c;
            old[n++] = choice[c];
            same &= choice[c] == e;
            choice[c] = e;
        }
    if (n == 0 || same) {
        for (int32_t k = n - 1; k >= 0; k--) choice[cls[k]] = old[k];
        return 0;
    }
    return n;
}

typedef struct cand {
    double delta;
    int32_t app;
} cand;

static int cand_cmp(const void *x, const void *y)
{
    const cand *a = x, *b = y;
    if (a->delta != b->delta) return a->delta < b->delta ? -1 : 1;
    return (a->app > b->app) - (a->app < b->app);
}

static void moves(run *r, const double *cost, const int32_t *roots, int32_t n_roots, int max_passes, double deadline, so_extract_result *ex)
{
    so_egraph *eg = &r->eg;
    so_extract_costs ec = {cost, r->alt, r->ctx};
    double best = ex->cost;
    char *need = so_xmalloc((size_t)eg->n_cls + 1);
    int32_t *stk = so_xmalloc(((size_t)eg->n_cls + (size_t)n_roots + 1) * sizeof *stk);
    cand *cd = so_xmalloc(((size_t)r->n_app + 1) * sizeof *cd);
    for (int pass = 0; pass < max_passes && run_cpu(r) < deadline; pass++) {
        /* the classes the choice needs */
        memset(need, 0, (size_t)eg->n_cls + 1);
        int32_t ns = 0;
        for (int32_t q = 0; q < n_roots; q++) stk[ns++] = so_eg_find(eg, roots[q]);
        while (ns > 0) {
            int32_t c = stk[--ns];
            if (need[c] || ex->choice[c] < 0) continue;
            need[c] = 1;
            const int32_t *kid = so_eg_kids(eg, ex->choice[c]);
            for (int32_t k = 0; k < eg->nodes[ex->choice[c]].n_in; k++)
                if (!need[so_eg_find(eg, kid[k])]) stk[ns++] = so_eg_find(eg, kid[k]);
        }
        int32_t nc = 0;
        for (int32_t a = 0; a < r->n_app && run_cpu(r) < deadline; a++) {
            int touches = 0;
            for (int32_t b = a, depth = 0; b >= 0 && depth < MOVE_DEPTH && !touches; b = r->app_parent[b], depth++)
                for (int32_t k = 0; k < r->n_moves[b] && !touches; k++) touches = need[so_eg_find(eg, r->moves[(size_t)b * SO_RULE_MAX_OUTPUTS + k][0])];
            if (!touches) continue;
            int32_t old[MOVE_MAX], cls[MOVE_MAX];
            int32_t n = move_set(r, a, ex->choice, cls, old);
            if (!n) continue;
            double c2 = so_extract_dag_cost_ctx(eg, &ec, ex->choice, roots, n_roots);
            for (int32_t k = n - 1; k >= 0; k--) ex->choice[cls[k]] = old[k];
            if (c2 < best - 1e-12 * fabs(best)) cd[nc++] = (cand){c2 - best, a};
        }
        if (nc == 0) break;
        qsort(cd, (size_t)nc, sizeof *cd, cand_cmp);
        if (getenv("SO_DEBUG_EQSAT")) {
            fprintf(stderr, "moves pass %d: cost %.9g, %d improving:", pass, best, (int)nc);
            for (int32_t i = 0; i < nc && i < 12; i++) fprintf(stderr, " %d:%.4g", (int)r->rules[r->app_rule[cd[i].app]].id, cd[i].delta);
            fprintf(stderr, "\n");
        }
        int improved = 0;
        for (int32_t i = 0; i < nc && run_cpu(r) < deadline; i++) {
            int32_t old[MOVE_MAX], cls[MOVE_MAX];
            int32_t n = move_set(r, cd[i].app, ex->choice, cls, old);
            if (!n) continue;
            double c2 = so_extract_dag_cost_ctx(eg, &ec, ex->choice, roots, n_roots);
            if (c2 < best - 1e-12 * fabs(best)) {
                best = c2;
                improved = 1;
            } else
                for (int32_t k = n - 1; k >= 0; k--) ex->choice[cls[k]] = old[k];
        }
        if (!improved) break;
    }
    free(need);
    free(stk);
    free(cd);
    if (best < ex->cost) {
        ex->cost = best;
        ex->method = SO_EXTRACT_MOVES;
    }
}

/* The graph of a choice, canonicalised, and its cost as the executor runs it (so_cost_graph:
   fusion and zero-copy concats as they fall in this graph). used: as build_graph. */
static so_status priced_graph(run *r, const int32_t *choice, char *used, so_graph **out, double *cost)
{
    memset(used, 0, (size_t)r->n_app + 1);
    so_graph *g = build_graph(r, choice, used);
    if (!g) return so_errorf("eqsat: a class the extracted graph needs has no choice");
    if (so_canonicalize(r->fc, g, NULL) != SO_OK) {
        so_graph_free(g);
        return so_errorf("eqsat: the extracted graph does not canonicalise: %s", so_error());
    }
    *out = g;
    *cost = so_cost_graph(r->cm, g);
    return SO_OK;
}

/* Prices the graph of choice trial (tu: its used applications, scratch) as a whole; if cheaper
   than *gc, it becomes the current state (*choice, used, *g, *gc). Returns 1 if kept. */
static int keep_if_cheaper(run *r, const int32_t *trial, char *tu, int32_t **choice, char *used, so_graph **g, double *gc)
{
    so_graph *tg = NULL;
    double tc = 0;
    if (priced_graph(r, trial, tu, &tg, &tc) != SO_OK) return 0;
    if (!(tc < *gc)) {
        so_graph_free(tg);
        return 0;
    }
    so_graph_free(*g);
    *g = tg;
    *gc = tc;
    memcpy(*choice, trial, (size_t)r->eg.n_cls * sizeof *trial);
    memcpy(used, tu, (size_t)r->n_app + 1);
    return 1;
}

/* The extraction's costs are per e-node, blind to what the executor fuses in context (an epilogue
   after a merged-then-split conv, a concat of split outputs): each rule application the extracted
   graph uses is undone in turn, latest first, with the merge chain it extends (its output classes
   back to their start-graph e-nodes: a 6-way merge of gate matmuls whose split outputs lose their
   fused bias adds is undone whole) and the graph priced as a whole; an undo is kept when it is
   cheaper. Returns the number kept. *choice,
   used, *g and *gc follow the kept state. */
static int64_t polish(run *r, int32_t **choice, char *used, so_graph **g, double *gc, double deadline)
{
    so_egraph *eg = &r->eg;
    int64_t kept = 0;
    int32_t *trial = so_xmalloc(((size_t)eg->n_cls + 1) * sizeof *trial);
    char *tu = so_xmalloc((size_t)r->n_app + 1);
    for (int32_t a = r->n_app - 1; a >= 0 && run_cpu(r) < deadline; a--) {
        if (!used[a]) continue;
        memcpy(trial, *choice, (size_t)eg->n_cls * sizeof *trial);
        int changed = 0;
        for (int32_t b = a, depth = 0; b >= 0 && depth < MOVE_DEPTH; b = r->app_parent[b], depth++)
            for (int32_t k = 0; k < r->n_moves[b]; k++) {
                int32_t c = so_eg_find(eg, r->moves[(size_t)b * SO_RULE_MAX_OUTPUTS + k][0]), orig = -1;
                const so_eclass *cl = &eg->cls[c];
                for (int32_t j = 0; j < cl->n_nodes; j++)
                    if (eg->nodes[cl->nodes[j]].orig >= 0 && (orig < 0 || eg->nodes[cl->nodes[j]].orig < eg->nodes[orig].orig)) orig = cl->nodes[j];
                if (orig >= 0 && trial[c] != orig) trial[c] = orig, changed = 1;
            }
        if (!changed) continue;
        kept += keep_if_cheaper(r, trial, tu, choice, used, g, gc);
    }
    free(trial);
    free(tu);
    return kept;
}

/* The converse of the polish, for merges (applications of rules with symmetric roots, whose worth
   depends most on fusion in context): each merge application not in use, in order, at most
   MERGE_TRIES of them, is taken with its chain (move_set) and the whole graph priced; kept when
   cheaper. NasNet-A: a merge of two sibling 1x1 convs after their batchnorms are folded pays only
   as a graph (its e-node delta, with the epilogues after the split priced as passes, did not).
   Returns the number kept. */
#define MERGE_TRIES 400
static int64_t merge_moves(run *r, int32_t **choice, char *used, so_graph **g, double *gc, double deadline)
{
    so_egraph *eg = &r->eg;
    int64_t kept = 0;
    int32_t tries = 0;
    int32_t *trial = so_xmalloc(((size_t)eg->n_cls + 1) * sizeof *trial);
    char *tu = so_xmalloc((size_t)r->n_app + 1);
    for (int32_t a = 0; a < r->n_app && tries < MERGE_TRIES && run_cpu(r) < deadline; a++) {
        if (used[a] || !r->app_merge[a]) continue;
        memcpy(trial, *choice, (size_t)eg->n_cls * sizeof *trial);
        int32_t old[MOVE_MAX], cls[MOVE_MAX];
        if (!move_set(r, a, trial, cls, old)) continue;
        tries++;
        kept += keep_if_cheaper(r, trial, tu, choice, used, g, gc);
    }
    free(trial);
    free(tu);
    return kept;
}

so_status so_eqsat_run(const so_graph *start, const so_rule *rules, int32_t n_rules, so_cost_model *cm, so_fold_ctx *fc,
                       const so_search_opts *opts, const so_eqsat_opts *eo_in, so_search_result *res)
{
    memset(res, 0, sizeof *res);
    so_eqsat_opts eo = eo_in ? *eo_in : (so_eqsat_opts){0};
    /* tuning knobs for experiments (search/README.md): SO_EQSAT_NODES, SO_EQSAT_ITERS, SO_EQSAT_MULTI, SO_EQSAT_WORK;
       a value that is not a positive integer is an error, not a silent 0 */
    long long kn[5] = {0, 0, 0, 0, 0};
    static const char *const knob[5] = {"SO_EQSAT_NODES", "SO_EQSAT_ITERS", "SO_EQSAT_MULTI", "SO_EQSAT_WORK", "SO_EQSAT_BACKOFF"};
    for (int k = 0; k < 5; k++) {
        const char *v = getenv(knob[k]);
        if (v && so_parse_int(v, 1, k == 1 || k == 2 || k == 4 ? INT32_MAX : INT64_MAX, &kn[k]))
            return so_errorf("%s=%s: expected a positive integer", knob[k], v);
    }
    if (!eo.node_limit && kn[0]) eo.node_limit = kn[0];
    if (!eo.iter_limit && kn[1]) eo.iter_limit = (int)kn[1];
    if (!eo.multi_iters && kn[2]) eo.multi_iters = (int)kn[2];
    if (eo.node_limit <= 0) eo.node_limit = 30000;
    if (eo.iter_limit <= 0) eo.iter_limit = 12;
    if (eo.multi_iters <= 0) eo.multi_iters = 2;
    if (eo.match_cap <= 0) eo.match_cap = 4000;
    if (!eo.work_limit && kn[3]) eo.work_limit = kn[3];
    if (eo.work_limit <= 0) eo.work_limit = 60000000;
    if (eo.ilp_node_limit == 0) eo.ilp_node_limit = 3000;
    const double t0 = so_now(), c0 = cpu_now(), tl = opts->time_limit > 0 ? opts->time_limit : 8.0;
    const double sat_deadline = c0 + 0.5 * tl;
    struct so_eqsat_stats *st = &res->eqsat;
    run R;
    memset(&R, 0, sizeof R);
    run *r = &R;
    r->start = start;
    r->rules = rules;
    r->n_rules = n_rules;
    r->cm = cm;
    r->meas0 = cm->measure_cpu_seconds;
    r->fc = fc;
    r->scratch = so_graph_new(start->model);
    r->f32_weight = -1;
    for (int32_t w = 0; w < start->model->n_weights && r->f32_weight < 0; w++)
        if (start->model->weights[w].shape.dtype == SO_F32) r->f32_weight = w;
    so_eg_init(&r->eg, start->model);
    add_start(r);
    label_new(r, -1, -1, -1, 0, 0);
    if (getenv("SO_DEBUG_EQSAT")) fprintf(stderr, "eqsat start: %lld live e-nodes, %lld classes\n", (long long)r->eg.n_live, (long long)r->eg.n_canon);
    so_eg_rebuild(&r->eg);
    if (getenv("SO_DEBUG_EQSAT")) fprintf(stderr, "eqsat start rebuilt: %lld live e-nodes, %lld classes, %lld dropped\n", (long long)r->eg.n_live, (long long)r->eg.n_canon, (long long)r->eg.dropped_cyclic);
    /* the start graph's node costs as the executor runs it */
    uint8_t *role = so_xmalloc((size_t)start->n_nodes + 1);
    so_cost_roles(start, role);
    double *start_cost = so_xmalloc(((size_t)start->n_nodes + 1) * sizeof *start_cost);
    res->cost_before = 0;
    for (int32_t i = 0; i < start->n_nodes; i++) {
        res->cost_before += start_cost[i] = so_cost_node_role(cm, start, i, role[i]);
        /* free only in context: a fused epilogue, a zero-copy concat or split (priced as a copy
           already under standard-ONNX pricing, cm->copies) */
        role[i] = role[i] == SO_COST_FUSED ||
                  (role[i] == SO_COST_FREE && !cm->copies && (start->nodes[i].op == SO_OP_CONCAT || start->nodes[i].op == SO_OP_SPLIT));
    }
    r->start_fused = role;
    int *multi = so_xmalloc(((size_t)n_rules + 1) * sizeof *multi);
    /* backoff scheduling (egg's BackoffScheduler): a rule that is not a merge and matches more than
       backoff_matches (300; egg's default is 1000; SO_EQSAT_BACKOFF) << times_banned times in an iteration has those matches dropped and is not
       matched for BACKOFF_ITERS << times_banned iterations. NasRNN: the transpose rules (244, 249 and
       their kin) doubled their matches every iteration and filled the e-graph to its node limit
       before the merges of merges (leaf_value) were reached. Merges (multi 1) are bounded by their
       canonical chains and not banned. When nothing changes while a rule is banned, the bans are
       lifted and saturation goes on. Deterministic: it counts matches, not time. */
    int32_t *ban_until = so_xcalloc((size_t)n_rules + 1, sizeof *ban_until);
    int32_t *times_banned = so_xcalloc((size_t)n_rules + 1, sizeof *times_banned);
    const int64_t backoff_matches = kn[4] ? kn[4] : 300;
#define BACKOFF_ITERS 2
    for (int32_t k = 0; k < n_rules; k++) {
        uint8_t root[SO_RULE_MAX_NODES], sym[SO_RULE_MAX_NODES];
        int nr = pattern_roots(&rules[k], root), ns = 0;
        symmetric_roots(&rules[k], root, sym);
        for (int p = 0; p < SO_RULE_MAX_NODES; p++) ns += sym[p];
        /* 1: several roots, all of one operator (merges, canonical by chain_order: every iteration);
           2: several roots otherwise (only in the first multi_iters iterations) */
        multi[k] = nr <= 1 ? 0 : ns == nr ? 1 : 2;
    }

    /* saturation: match every rule on the e-graph as it is, then apply every match, then rebuild */
    mctx mc;
    memset(&mc, 0, sizeof mc);
    mc.eg = &r->eg;
    mc.deadline = sat_deadline;
    mc.work_limit = (uint64_t)eo.work_limit;
    st->stop = 0;
    for (int32_t it = 0;; it++) {
        if (it >= eo.iter_limit) {
            st->stop = 2;
            break;
        }
        if (cpu_now() > sat_deadline) {
            st->stop = 3;
            break;
        }
        int32_t *ost, *ond;
        op_index(&r->eg, &ost, &ond);
        mc.op_start = ost;
        mc.op_nodes = ond;
        label_new(r, -1, -1, -1, 0, 0);
        mc.lab_lo = r->lab_lo;
        mc.lab_hi = r->lab_hi;
        mc.lab_rule = r->lab_rule;
        mc.lab_lvl = r->lab_lvl;
        mc.complete = r->complete;
        mc.lab_cnt = r->lab_cnt;
        mc.uattr = r->uattr;
        {
            int32_t nt;
            int32_t *topo = so_eg_topo(&r->eg, &nt);
            r->rank = so_xrealloc(r->rank, ((size_t)r->eg.n_cls + 1) * sizeof *r->rank);
            r->n_rank = r->eg.n_cls;
            for (int32_t c = 0; c < r->eg.n_cls; c++) r->rank[c] = -1;
            for (int32_t i = 0; i < nt; i++) r->rank[topo[i]] = i;
            free(topo);
        }
        uint8_t *ocls = so_xcalloc((size_t)r->eg.n_cls + 1, 1);
        for (int32_t n = 0; n < r->eg.n_nodes; n++)
            if (!r->eg.nodes[n].dead && r->eg.nodes[n].orig >= 0) ocls[so_eg_find(&r->eg, r->eg.nodes[n].cls)] = 1;
        mc.orig_cls = ocls;
        mc.n_out = 0;
        mc.stop = 0;
        int any_banned = 0;
        for (int32_t k = 0; k < n_rules && !mc.stop; k++) {
            const so_rule *ru = &rules[k];
            if (ru->src.n_nodes <= 0 || (multi[k] == 2 && it >= eo.multi_iters)) continue;
            if (it < ban_until[k]) {
                any_banned = 1;
                continue;
            }
            mc.r = ru;
            memset(mc.mapped, 0, sizeof mc.mapped);
            memset(mc.vbound, 0, sizeof mc.vbound);
            memset(mc.sbound, 0, sizeof mc.sbound);
            mc.n_pend = 0;
            mc.m.rule = k;
            mc.cap = multi[k] ? eo.match_cap / 4 : eo.match_cap;
            for (int p = 0; p < ru->src.n_nodes; p++)
                if (ru->src.nodes[p].n_dx == 0) {
                    so_attr a = so_attr_used(ru->src.nodes[p].op, &ru->src.nodes[p].attr);
                    mc.want[p] = so_model_attr(r->eg.model, &a);
                }
            {
                uint8_t root[SO_RULE_MAX_NODES];
                pattern_roots(ru, root);
                symmetric_roots(ru, root, mc.sym_roots);
            }
            int32_t from = mc.n_out;
            uint64_t t_before = mc.tries;
            if (multi[k] == 1) mc.cap = INT32_MAX; /* capped after contiguous_runs */
            eq_step(&mc, next_node(&mc));
            if (getenv("SO_DEBUG_TRIES") && mc.tries - t_before > 200000) fprintf(stderr, "  it %d rule %d%s multi %d: %.3g tries, %d matches\n", (int)it, (int)ru->id, "", multi[k], (double)(mc.tries - t_before), (int)(mc.n_out - from));
            if (multi[k] == 1) {
                mc.n_out = from + contiguous_runs(mc.out + from, mc.n_out - from, eo.match_cap / 4);
                if (mc.cap <= 0) mc.cap = 1;
            }
            if (mc.stop && mc.cap <= 0) mc.stop = 0; /* that rule's cap, not the deadline */
            if (multi[k] != 1 && mc.n_out - from > (backoff_matches << times_banned[k]) && !mc.stop) {
                ban_until[k] = it + 1 + (BACKOFF_ITERS << times_banned[k]);
                times_banned[k]++;
                mc.n_out = from;
                any_banned = 1;
                st->banned++;
            }
        }
        free(ost);
        free(ond);
        free(ocls);
        res->matches += mc.n_out;
        int changed = 0;
        for (int32_t q = 0; q < mc.n_out; q++) {
            if (r->eg.n_live >= eo.node_limit) {
                st->stop = 1;
                break;
            }
            if ((q & 255) == 255 && cpu_now() > sat_deadline) {
                mc.stop = 1; /* timed out */
                break;
            }
            if (r->n_app == r->cap_app) {
                r->cap_app = r->cap_app ? 2 * r->cap_app : 256;
                r->app_rule = so_xrealloc(r->app_rule, (size_t)r->cap_app * sizeof *r->app_rule);
                r->app_parent = so_xrealloc(r->app_parent, (size_t)r->cap_app * sizeof *r->app_parent);
                r->app_merge = so_xrealloc(r->app_merge, (size_t)r->cap_app * sizeof *r->app_merge);
                r->moves = so_xrealloc(r->moves, (size_t)r->cap_app * SO_RULE_MAX_OUTPUTS * sizeof *r->moves);
                r->n_moves = so_xrealloc(r->n_moves, (size_t)r->cap_app * sizeof *r->n_moves);
            }
            r->app_rule[r->n_app] = mc.out[q].rule;
            {
                int32_t f = mc.out[q].first;
                r->app_parent[r->n_app] = f >= 0 && mc.out[q].first_chain ? r->eg.nodes[f].app : -1;
                r->app_merge[r->n_app] = mc.out[q].lo >= 0;
            }
            if (apply(r, &mc.out[q], r->n_app)) {
                r->n_app++;
                changed = 1;
                st->applied++;
            }
        }
        label_new(r, -1, -1, -1, 0, 0);
        mark_complete(r, mc.out, mc.n_out);
        st->congruences += so_eg_rebuild(&r->eg);
        st->iterations = it + 1;
        if (getenv("SO_DEBUG_EQSAT")) {
            int32_t ntp;
            free(so_eg_topo(&r->eg, &ntp));
            int64_t empty = 0;
            for (int32_t c = 0; c < r->eg.n_cls; c++) empty += r->eg.uf[c] == c && r->eg.cls[c].n_nodes == 0;
            int64_t bad = 0, outs_empty = 0;
            for (int32_t n = 0; n < r->eg.n_nodes; n++)
                if (!r->eg.nodes[n].dead)
                    for (int32_t k = 0; k < r->eg.nodes[n].n_in; k++) bad += r->eg.cls[so_eg_find(&r->eg, so_eg_kids(&r->eg, n)[k])].n_nodes == 0;
            for (int32_t o = 0; o < start->model->n_outputs; o++) outs_empty += r->eg.cls[so_eg_find(&r->eg, r->out_cls[o])].n_nodes == 0;
            fprintf(stderr, "eqsat check: topo %d of %lld classes, %lld empty, %lld reads of empty, %lld outputs empty, %lld dropped\n", (int)ntp,
                    (long long)r->eg.n_canon, (long long)empty, (long long)bad, (long long)outs_empty, (long long)r->eg.dropped_cyclic);
        }
        if (getenv("SO_DEBUG_EQSAT")) {
            int32_t *per = so_xcalloc((size_t)n_rules + 1, sizeof *per);
            for (int32_t q = 0; q < mc.n_out; q++) per[mc.out[q].rule]++;
            fprintf(stderr, "eqsat iteration %d: %.3g tries, %d matches, %lld e-nodes, %lld classes, %.2f s; most matched:", (int)it, (double)mc.tries, (int)mc.n_out,
                    (long long)r->eg.n_live, (long long)r->eg.n_canon, so_now() - t0);
            for (int t = 0; t < 8; t++) {
                int32_t b = -1;
                for (int32_t k = 0; k < n_rules; k++)
                    if (per[k] && (b < 0 || per[k] > per[b])) b = k;
                if (b < 0) break;
                fprintf(stderr, " rule %d%s x%d", (int)rules[b].id, "", (int)per[b]);
                per[b] = 0;
            }
            fprintf(stderr, "\n");
            free(per);
        }
        res->graphs_explored = it + 1;
        if (st->stop == 1) break;
        if (mc.stop) {
            st->stop = mc.stop == 2 ? 4 : 3;
            break;
        }
        if (!changed && any_banned) { /* not saturated: banned rules go on */
            for (int32_t k = 0; k < n_rules; k++) ban_until[k] = 0;
            continue;
        }
        if (!changed) { /* saturated */
            st->stop = 0;
            break;
        }
    }
    free(mc.out);
    free(multi);
    free(ban_until);
    free(times_banned);
    st->saturate_seconds = so_now() - t0;
    st->enodes = r->eg.n_live;
    st->eclasses = r->eg.n_canon;
    st->dropped_cyclic = r->eg.dropped_cyclic;
    res->graphs_generated = st->applied;

    /* costs, extraction */
    double tc = so_now();
    double *cost = node_costs(r, start_cost, c0 + 0.7 * tl);
    st->unpriced = r->unpriced;
    st->cost_seconds = so_now() - tc;
    int32_t n_rt = start->model->n_outputs + r->n_inputs;
    int32_t *roots = so_xmalloc(((size_t)n_rt + 1) * sizeof *roots);
    for (int32_t o = 0; o < start->model->n_outputs; o++) roots[o] = r->out_cls[o];
    for (int32_t i = 0; i < r->n_inputs; i++) roots[start->model->n_outputs + i] = r->input_cls[i];
    so_extract_result ex;
    const double t_ex = so_now();
    /* the ILP stops at its deterministic work bounds (search/extract.c: simplex iterations,
       branch-and-bound subproblems); GLPK's wall-clock limit is only a backstop far above them,
       and the report names it (eqsat.ilp_stop "wall-backstop") when it fires */
    so_extract_costs ecs = {cost, r->alt, r->ctx};
    so_status rc = so_extract_ctx(&r->eg, &ecs, roots, n_rt, eo.ilp_node_limit, NULL, &ex);
    if (rc != SO_OK) {
        free(roots);
        goto out;
    }
    moves(r, cost, roots, n_rt, 100, c0 + 0.75 * tl, &ex);
    ex.seconds = so_now() - t_ex;
    free(roots);
    st->extract_method = ex.method;
    st->extract_cost = ex.cost;
    st->greedy_cost = ex.greedy_cost;
    st->extract_seconds = ex.seconds;
    st->ilp_vars = ex.ilp_vars;
    st->ilp_rows = ex.ilp_rows;
    st->ilp_stop = ex.ilp_stop;
    st->ilp_bb_nodes = ex.ilp_bb_nodes;
    st->ilp_iters = ex.ilp_iters;
    snprintf(st->why_greedy, sizeof st->why_greedy, "%s", ex.why_greedy);
    char *used = so_xcalloc((size_t)r->n_app + 1, 1);
    so_graph *g = NULL;
    double gc = 0;
    if (priced_graph(r, ex.choice, used, &g, &gc) != SO_OK) {
        free(used);
        free(ex.choice);
        goto out;
    }
    st->polished = polish(r, &ex.choice, used, &g, &gc, c0 + 0.85 * tl);
    st->merged = merge_moves(r, &ex.choice, used, &g, &gc, c0 + 0.95 * tl);
    /* the rule applications the extracted graph uses, in order */
    res->path = so_xmalloc(((size_t)r->n_app + 1) * sizeof *res->path);
    for (int32_t a = 0; a < r->n_app; a++)
        if (used[a]) res->path[res->n_path++] = r->app_rule[a];
    free(used);
    free(ex.choice);
    double sc = so_cost_graph(cm, start);
    res->cost_before = sc;
    if (getenv("SO_DEBUG_EQSAT"))
        fprintf(stderr, "eqsat: extracted e-graph cost %.9g, as a graph %.9g (%d nodes, %d applications reverted by true cost), start %.9g\n",
                ex.cost, gc, (int)g->n_nodes, (int)st->polished, sc);
    if (gc < sc) {
        res->best = g;
        res->cost_after = gc;
    } else {
        so_graph_free(g);
        res->best = so_graph_clone(start);
        res->cost_after = sc;
        st->start_kept = 1;
        res->n_path = 0;
    }
    res->stopped_by = st->stop == 0 ? 0 : st->stop == 3 ? 2 : 1;
out:
    free(cost);
    free(start_cost);
    free(role);
    free(r->out_cls);
    free(r->input_cls);
    free(r->app_rule);
    free(r->app_parent);
    free(r->app_merge);
    free(r->moves);
    free(r->n_moves);
    free(r->lab_lo);
    free(r->lab_hi);
    free(r->lab_rule);
    free(r->lab_cnt);
    free(r->lab_lvl);
    free(r->complete);
    free(r->uattr);
    free(r->rank);
    free(r->alt);
    free(r->ctx);
    so_graph_free(r->scratch);
    so_eg_free(&r->eg);
    res->seconds = so_now() - t0;
    res->cpu_seconds = run_cpu(r) - c0;
    if (rc != SO_OK) {
        free(res->path);
        res->path = NULL;
        res->n_path = 0;
    }
    return rc;
}
