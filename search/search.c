/* search.c - TASO's cost-ordered backtracking search over rule rewrites, a greedy baseline, and none;
   incremental: a rewritten graph is re-matched and re-costed only around the rewritten region. */
#include "search.h"
#include "eqsat.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "../kernels/exec.h"
#include "match.h"

/* Incremental search, in short. A rewrite (so_rewrite_track) reports for each node of the new
   graph the node of the parent it is (or -1 for nodes it added). A node is dirty when it is
   new, when one of its input edges now leads elsewhere, or when its users changed (a
   commutative signature of (user, position, slot) and graph outputs, in parent numbering).
   A match depends only on its nodes, their attributes, their inputs and their users, so a
   match of the parent whose nodes all survive clean is still a match (renumbered), and every
   other match contains a dirty node: those are found by matching only the rules that contain
   the dirty node's operator, anchored at that node. Likewise a node's cost (in the role the
   executor's fusion gives it) is copied from the parent unless its inputs or its role
   changed. So each step does work proportional to the rewritten region plus a few linear
   passes (clone, toposort, hashes) instead of matching every rule over the whole graph. */

/* Rewrite history: a shared linked list from a graph back to the start. */
typedef struct hist {
    int32_t rule;
    int32_t depth;
    struct hist *parent;
} hist;

/* One rewrite available in a graph. */
typedef struct cand {
    so_match m;
    double est;                 /* preview estimate of the cost change (depends on the match only) */
    double cur;                 /* in this graph: est, the exact change once built, INFINITY if rejected */
    uint8_t exact;
    uint8_t bounded;            /* est is the preview bound (PREVIEW_RATE_SLACK): out of reach, nothing timed */
    int32_t dnodes;             /* change in operator nodes (weights and folded nodes not counted) */
} cand;

/* A materialized graph with its incremental-search data. */
typedef struct gref {
    so_graph *g;
    double cost;
    hist *h;
    int32_t refs;
    int32_t n_ops;              /* operator nodes (not weights, inputs, constants) */
    int32_t *origin;            /* per node: the parent's node it is, -1 if new (NULL: no parent) */
    uint8_t *inchg;             /* per node: new, or an input edge differs from the parent's */
    uint64_t *usig;             /* per node: use signature (own numbering) */
    uint8_t *role;              /* per node: so_cost_role */
    double *nc;                 /* per node: cost in its role */
    uint64_t ghash;             /* structural graph hash (dedupe) */
    int probed;                 /* backtracking probed its uphill rewrites (probe()) */
    cand *cands;                /* every match of the graph, previewed; valid once expanded */
    int32_t n_cands, cap_cands;
    int expanded;
} gref;

/* A queue entry: a materialized graph (g != NULL) or lazy: candidate `m` of parent, built
   only when popped. cost is exact for materialized states and parent cost + the candidate's
   estimate for lazy ones. */
typedef struct state {
    double cost;
    int64_t tie;                /* cost in ticks (ctx.tick): equal ticks are a tie */
    int32_t nodes;              /* operator nodes (estimated for lazy states): fewer first among ties */
    int64_t seq;                /* then the latest first (depth-first along a plateau) */
    gref *g;
    gref *parent;
    hist *h;
    so_match m;
} state;

/* Anchored matching: one entry per (rule, source pattern node), found by filter key. */
typedef struct anchor_entry {
    uint64_t key;               /* so_match_node_key of the pattern node */
    int32_t rule;
    int32_t node;
} anchor_entry;

typedef struct ctx {
    const so_rule *rules;
    int32_t n_rules;
    struct anchor_entry *ent;   /* (rule, source pattern node) sorted by filter key */
    int32_t n_ent;
    so_cost_model *cm;
    so_fold_ctx *fc;
    const so_search_opts *o;
    so_search_result *res;
    so_arena hist_arena;
    so_hmap seen;
    state *heap;
    int32_t n_heap, cap_heap;
    so_graph *best;             /* private copy */
    double best_cost;
    hist *best_h;
    double t0, last_progress;
    double cpu0, meas0;         /* the thread's CPU seconds and the cost model's timing CPU seconds at the start */
    int64_t work_checked;       /* c->work when the time limit was last checked */
    int64_t work, work_limit;   /* work units of this phase (greedy, then backtracking) and its limit (0: none) */
    int64_t seq;
    double tick;                /* costs within one tick tie: 1e-9 of the start cost */
    int timed_out;              /* the work limit or the time limit stopped the search */
    int64_t probe_work;         /* work units backtracking's chain probes spent (probe()) */
    double conv_rate;           /* the start graph's fastest conv: most FLOPs per ms of its cost (0: no
                                   conv, no preview bound); see PREVIEW_RATE_SLACK */
    so_graph *scratch;          /* preview graph */
    uint8_t *pv;                /* preview scratch arrays */
    int32_t cap_pv;
    /* per expansion */
    gref *cur;
    const char *dirty;          /* anchored matching: dirty nodes of cur (NULL: full matching) */
    int32_t anchor;
    cand *found;                /* matches found by the current expansion */
    int32_t n_found, cap_found;
} ctx;

#define FOLD_PREVIEW_LIMIT ((int64_t)1 << 18)
/* A graph counts as cheaper only by more than this relative margin: sums of the same node
   costs in another node order differ in the last bits. */
#define IMPROVE_EPS 1e-6
/* Backtracking's chain probes: most applications of one rule in a chain. */
#define CHAIN_MAX 16
/* Chain probes: a rule whose chains failed from this many of a graph's matches is not probed further there. */
#define CHAIN_FAILS 2
/* Chain probes: matches of the rule built per step (lowest estimates first), the cheapest taken. */
#define CHAIN_TRIES 4
/* Chain probes stop once they have spent this fraction (1/N) of backtracking's work limit: the queue
   keeps the rest (with the probes unbounded, nasnet_a and inception_v3 reached the time limit's safety
   net at load 4-7 before the work limit; at 1/4, squeezenet's search under ASan reached it at 994 of
   its 1000 graphs, integration test 11b) */
#define CHAIN_WORK_SHARE 8
/* Preview bound. A preview times every new configuration of a rewrite's target, and TASO's rules
   propose many rewrites that add a large convolution (a 1x1 conv enlarged to 3x3, rule 36 reversed;
   an identity 3x3 conv inserted before a relu, 53 reversed; 2048 channels at 7x7: 151 MB of weights),
   each timed with its weights flushed from the caches, which none of the searches ever takes: they
   were 6.5 of ResNet-50's 6.9 s of search timing and most of ResNeXt-50's 9.1 s (session 16). So a
   preview first bounds the change from below, without timing: each target conv at least its FLOPs at
   PREVIEW_RATE_SLACK times a reference rate (FLOPs per ms of a priced cost): a matched conv's with the
   same groups, input and output shapes when the match has one (the 1x1 conv an enlargement replaces: it runs
   the same shapes with a ninth of the FLOPs), else the start graph's fastest conv's (ctx.conv_rate);
   every other target node at least 0, the matched nodes their cost in the graph. A
   rewrite whose bound is at least (alpha - 1) x best is out of reach for good: backtracking keeps
   only graphs under alpha x best, every graph it expands costs at least best, the best only falls,
   greedy and the chain probes start only from changes below 0 or within alpha x best, and a
   candidate's estimate is carried to child graphs unchanged. Such a candidate takes its bound as its
   estimate, is marked bounded and nothing is timed; a chain probe's later steps, which build the
   rule's matches of the lowest estimates whatever their sign, skip bounded ones (ranked by a bound
   instead of their price, they were built and timed there: ResNet-50, a 375 ms conv). The bound depends only on the graph and the start graph's costs,
   not on what the cache holds, so a cost table gives the same search. The slack is measured, not
   derived: our Winograd F(4x4,3x3) does a quarter of a 3x3 conv's multiplications (2.25x a 1x1 conv's
   on the same shapes), so a real bound would need 4; on the session-16 quiet cost tables of the seven
   literature models no previewed conv ran faster than 1.00x the start graph's fastest conv, in one
   fresh-cache run under load 1.05x (an identity 3x3 conv on Winograd); ResNeXt-50's enlarged convs
   cost 13-25x the 1x1 conv they replace (9x the FLOPs); and with slack 2 every chosen graph is
   unchanged (docs/BENCHMARKS.md, session 17). 0 turns the bound off (A/B runs). */
#ifndef PREVIEW_RATE_SLACK
#define PREVIEW_RATE_SLACK 2.0
#endif
/* Greedy: most candidates built to check their exact cost per step. */
#define GREEDY_TRIES 48

static void gref_free(gref *r)
{
    if (!r) return;
    so_graph_free(r->g);
    free(r->origin);
    free(r->inchg);
    free(r->usig);
    free(r->role);
    free(r->nc);
    free(r->cands);
    free(r);
}

static void decref(gref *r)
{
    if (r && --r->refs == 0) gref_free(r);
}

static void state_drop(state *s)
{
    decref(s->g);
    decref(s->parent);
    s->g = NULL;
    s->parent = NULL;
}

/* Queue order: cheapest first; among graphs of equal cost (within a tick: sums of the same node
   costs in another order differ in the last bits), the one with fewer operator nodes, then the
   latest queued. Cost-neutral rewrites (conv+BN folds and conv+relu fusions: the executor fuses
   both already) form plateaus of 2^n graphs; breadth-first (oldest first, as before) a budget of
   1000 graphs only reached pairs of them, so the downhill rewrite that two folds enable (merging
   two folded sibling convs) was never found. Fewer nodes first descends the plateau by the
   node-removing rewrites (depth-first), node-adding neutral ones (unfusing a relu) come after. */
static int less(const state *a, const state *b)
{
    if (a->tie != b->tie) return a->tie < b->tie;
    if (a->nodes != b->nodes) return a->nodes < b->nodes;
    return a->seq > b->seq;
}

static int64_t ticks(const ctx *c, double cost)
{
    double q = floor(cost / c->tick + 0.5);
    return q > 9e18 ? (int64_t)9e18 : q < -9e18 ? (int64_t)-9e18 : (int64_t)q;
}

static void heap_push(ctx *c, const state *in)
{
    state v = *in, *s = &v;
    v.tie = ticks(c, v.cost);
    if (c->n_heap == c->cap_heap) {
        c->cap_heap = c->cap_heap ? c->cap_heap * 2 : 256;
        c->heap = so_xrealloc(c->heap, (size_t)c->cap_heap * sizeof *c->heap);
    }
    int32_t i = c->n_heap++;
    while (i > 0) {
        int32_t p = (i - 1) / 2;
        if (!less(s, &c->heap[p])) break;
        c->heap[i] = c->heap[p];
        i = p;
    }
    c->heap[i] = *s;
}

static state heap_pop(ctx *c)
{
    state top = c->heap[0];
    state last = c->heap[--c->n_heap];
    int32_t i = 0, n = c->n_heap;
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        const state *best = &last;
        if (l < n && less(&c->heap[l], best)) { m = l; best = &c->heap[l]; }
        if (r < n && less(&c->heap[r], best)) m = r;
        if (m == i) break;
        c->heap[i] = c->heap[m];
        i = m;
    }
    if (n > 0) c->heap[i] = last;
    return top;
}

typedef struct rank {
    int64_t tie;
    int64_t seq;
    int32_t nodes, idx;
} rank;

static int cmp_rank(const void *a, const void *b)
{
    const rank *x = a, *y = b;
    if (x->tie != y->tie) return x->tie < y->tie ? -1 : 1; /* as less() */
    if (x->nodes != y->nodes) return x->nodes < y->nodes ? -1 : 1;
    return x->seq > y->seq ? -1 : x->seq < y->seq;
}

/* Drops the costliest half of the queue when it exceeds its cap (sorting small keys, not
   the states). */
static void heap_trim(ctx *c)
{
    int32_t cap = c->o->queue_cap > 0 ? c->o->queue_cap : 20000;
    if (c->n_heap <= cap) return;
    int32_t n = c->n_heap, keep = cap / 2;
    rank *r = so_xmalloc((size_t)n * sizeof *r);
    for (int32_t i = 0; i < n; i++) r[i] = (rank){c->heap[i].tie, c->heap[i].seq, c->heap[i].nodes, i};
    qsort(r, (size_t)n, sizeof *r, cmp_rank);
    state *h = so_xmalloc((size_t)c->cap_heap * sizeof *h);
    for (int32_t i = 0; i < keep; i++) h[i] = c->heap[r[i].idx]; /* a sorted array is a heap */
    for (int32_t i = keep; i < n; i++) state_drop(&c->heap[r[i].idx]);
    free(c->heap);
    free(r);
    c->heap = h;
    c->n_heap = keep;
}

/* CPU seconds the search has spent, timing new cost configurations excluded. */
static double search_cpu(const ctx *c) { return so_cpu_now() - c->cpu0 - (c->cm->measure_cpu_seconds - c->meas0); }

static int out_of_work(const ctx *c) { return c->work_limit > 0 && c->work >= c->work_limit; }

/* The work limit (deterministic) or the time limit (safety net, CPU time: read every 4096 work
   units, since the thread's CPU clock is a system call) reached. */
static int out_of_time(ctx *c)
{
    if (c->timed_out) return 1;
    if (out_of_work(c)) c->timed_out = 1;
    else if (c->o->time_limit > 0 && (c->work - c->work_checked >= 4096 || c->work < c->work_checked)) {
        c->work_checked = c->work;
        if (search_cpu(c) >= c->o->time_limit) c->timed_out = 1;
    }
    return c->timed_out;
}

/* Arms the matcher's work count and limit and its deadline (the time limit, in this thread's CPU
   time); so_match_rule checks them inside the enumeration, c->timed_out is set when one cuts it short. */
static void arm_deadline(ctx *c, so_match_index *ix)
{
    ix->work = &c->work;
    ix->work_limit = c->work_limit;
    ix->expired = &c->timed_out;
    if (c->o->time_limit > 0) ix->deadline = so_cpu_now() + c->o->time_limit - search_cpu(c);
}

static void progress(ctx *c, int final)
{
    if (!c->o->progress) return;
    double now = so_now();
    if (!final && now - c->last_progress < 1.0) return;
    c->last_progress = now;
    fprintf(stderr, "\r  search: %lld explored, %lld generated, queue %d, best cost %.4g (start %.4g), %.1f s%s",
            (long long)c->res->graphs_explored, (long long)c->res->graphs_generated, (int)c->n_heap, c->best_cost,
            c->res->cost_before, now - c->t0, final ? "\n" : "   ");
    fflush(stderr);
}

static int32_t first_entry(const ctx *c, uint64_t key);
static int32_t *hist_path(const hist *h, int32_t *n);

/* One line of the trace (opts.trace): what and its number, the graph's exact cost and its ratio to
   the start graph's, the queue's length, the rewrite path from the start, and `more`. */
static void trace_line(const ctx *c, const char *what, int64_t n, double cost, const hist *h, const char *more)
{
    FILE *f = c->o->trace;
    if (!f) return;
    int32_t np;
    int32_t *path = hist_path(h, &np);
    fprintf(f, "%s %lld cost %.9g ratio %.6f queue %d%s depth %d:", what, (long long)n, cost, cost / c->res->cost_before,
            (int)c->n_heap, more, (int)np);
    for (int32_t k = 0; k < np; k++) {
        if (c->o->labels) fprintf(f, " %s", c->o->labels[path[k]]);
        else fprintf(f, " %d", (int)path[k]);
    }
    fputc('\n', f);
    free(path);
}

/* ---------------- per-graph data ---------------- */

/* Structural graph hash (g topologically sorted): node hashes from operator, attributes (by
   their interned pointer: one model per search), reference (weights by content) and input
   hashes, combined order-independently with the outputs. Equal graphs hash equal. */
static uint64_t graph_hash(const so_graph *g)
{
    uint64_t *h = so_xmalloc(((size_t)g->n_nodes + 1) * sizeof *h);
    uint64_t buf[6 + 2 * SO_MAX_IN], gh = (uint64_t)g->n_nodes;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const so_node *nd = &g->nodes[i];
        int c = 0;
        buf[c++] = (uint64_t)nd->op;
        buf[c++] = (uint64_t)nd->n_out;
        if (nd->op == SO_OP_WEIGHT) {
            const so_weight *w = &g->model->weights[nd->ref];
            buf[c++] = w->hash;
            buf[c++] = XXH3_64bits(&w->shape, sizeof w->shape);
        } else {
            buf[c++] = (uint64_t)(uintptr_t)nd->attr;
            buf[c++] = (uint64_t)(int64_t)nd->ref;
        }
        for (int k = 0; k < nd->n_in && k < SO_MAX_IN; k++) {
            buf[c++] = nd->in[k].node >= 0 ? h[nd->in[k].node] : 0;
            buf[c++] = (uint64_t)(int64_t)nd->in[k].slot;
        }
        h[i] = XXH3_64bits(buf, (size_t)c * sizeof *buf);
        gh += so_mix64(h[i]);
    }
    for (int32_t o = 0; o < g->model->n_outputs; o++)
        gh ^= so_mix64(h[g->outputs[o].node] + so_mix64(((uint64_t)o << 32) | (uint32_t)g->outputs[o].slot));
    free(h);
    return so_mix64(gh);
}

/* Use signature term of one use: user `u` (in some numbering), input position k, slot. */
static inline uint64_t use_term(uint64_t u, int k, int32_t slot) { return so_mix64(u * 0x9e3779b97f4a7c15ULL + ((uint64_t)k << 40) + (uint32_t)slot); }
static inline uint64_t out_term(int32_t o, int32_t slot) { return so_mix64(0x6f75747075740000ULL ^ ((uint64_t)o << 32) ^ (uint32_t)slot); }

/* Use signatures of g's nodes; users numbered by num(u) = num ? num[u] : u. */
static void use_sigs(const so_graph *g, const int64_t *num, uint64_t *sig)
{
    memset(sig, 0, (size_t)g->n_nodes * sizeof *sig);
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const so_node *nd = &g->nodes[i];
        uint64_t u = num ? (uint64_t)num[i] : (uint64_t)i;
        for (int k = 0; k < nd->n_in; k++)
            if (nd->in[k].node >= 0) sig[nd->in[k].node] += use_term(u, k, nd->in[k].slot);
    }
    for (int32_t o = 0; o < g->model->n_outputs; o++) sig[g->outputs[o].node] += out_term(o, g->outputs[o].slot);
}

/* Fills the use signatures, roles and graph hash of r->g (r->nc left to the caller). */
static void gref_index(gref *r)
{
    const so_graph *g = r->g;
    int32_t n = g->n_nodes;
    r->usig = so_xmalloc(((size_t)n + 1) * sizeof *r->usig);
    use_sigs(g, NULL, r->usig);
    r->ghash = graph_hash(g);
    r->role = so_xmalloc((size_t)n + 1);
    so_cost_roles(g, r->role);
    r->nc = so_xmalloc(((size_t)n + 1) * sizeof *r->nc);
    r->n_ops = 0;
    for (int32_t i = 0; i < n; i++) r->n_ops += !(so_ops[g->nodes[i].op].flags & SO_F_SOURCE);
}

/* A new state for g (ownership taken), costed from scratch. */
static gref *gref_new(ctx *c, so_graph *g)
{
    gref *r = so_xcalloc(1, sizeof *r);
    r->g = g;
    r->refs = 1;
    gref_index(r);
    double cost = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) cost += r->nc[i] = so_cost_node_role(c->cm, g, i, r->role[i]);
    r->cost = cost;
    return r;
}

/* A state for g (ownership taken), rewritten from parent p with origin (ownership taken): node
   costs are copied from p for nodes whose inputs and role are unchanged, looked up for the
   others. */
static gref *gref_child(ctx *c, const gref *p, so_graph *g, int32_t *origin)
{
    gref *r = so_xcalloc(1, sizeof *r);
    r->g = g;
    r->refs = 1;
    r->origin = origin;
    gref_index(r);
    int32_t n = g->n_nodes;
    r->inchg = so_xmalloc((size_t)n + 1);
    double cost = 0;
    for (int32_t j = 0; j < n; j++) {
        int32_t i = origin[j];
        int chg = i < 0;
        if (!chg) {
            const so_node *a = &g->nodes[j], *b = &p->g->nodes[i];
            for (int k = 0; k < a->n_in && !chg; k++)
                if (a->in[k].slot != b->in[k].slot || (a->in[k].node >= 0 ? origin[a->in[k].node] : -1) != b->in[k].node) chg = 1;
        }
        r->inchg[j] = (uint8_t)chg;
        /* a fused kernel's head costs what its absorbed nodes make it cost: always looked up */
        if (!chg && p->role[i] == r->role[j] && r->role[j] != SO_COST_HEAD) r->nc[j] = p->nc[i];
        else r->nc[j] = so_cost_node_role(c->cm, g, j, r->role[j]);
        cost += r->nc[j];
    }
    r->cost = cost;
    return r;
}

/* ---------------- candidates ---------------- */

/* Cost change of applying m to the current graph, from a preview of the target nodes: target
   nodes not folded cost what they cost as the executor would run them among themselves
   (fusion inside the target), matched nodes what they cost in the graph now. */
static so_status preview(ctx *c, const gref *r, const so_match *m, double *delta, int32_t *dnodes, uint8_t *bounded)
{
    const so_graph *g = r->g;
    int32_t first;
    so_edge outs[SO_RULE_MAX_OUTPUTS];
    if (so_rewrite_preview(g, m, c->fc, FOLD_PREVIEW_LIMIT, c->scratch, &first, outs) != SO_OK) return SO_ERR;
    /* target nodes on weights only (directly or through other such nodes) are folded when the
       rewrite is built, even those the preview left unfolded for size: they cost nothing */
    const so_graph *sg = c->scratch;
    int32_t n = sg->n_nodes;
    c->work += n + m->rule->src.n_nodes;
    if (n > c->cap_pv) {
        c->cap_pv = n * 2;
        c->pv = so_xrealloc(c->pv, (size_t)c->cap_pv * 3);
    }
    uint8_t *wf = c->pv, *pinned = c->pv + n, *role = c->pv + 2 * n;
    memset(pinned, 0, (size_t)n);
    /* the scratch graph's outputs array is not meaningful: pin the mapped outputs instead (their
       users are outside the preview, so nothing after them fuses) */
    for (int k = 0; k < m->rule->n_outputs; k++) pinned[outs[k].node] = 1;
    so_cost_roles_pinned(sg, pinned, role);
    int32_t dn = -m->rule->src.n_nodes;
    double matched = 0, bound = 0;
    for (int32_t i = 0; i < n; i++) {
        const so_node *nd = &sg->nodes[i];
        int fold = nd->op == SO_OP_WEIGHT;
        if (i >= first && !(so_ops[nd->op].flags & (SO_F_SOURCE | SO_F_OPAQUE)) && (nd->n_in > 0 || (so_ops[nd->op].flags & SO_F_CONST))) {
            fold = 1;
            for (int k = 0; k < nd->n_in; k++)
                if (!wf[nd->in[k].node]) fold = 0;
        }
        wf[i] = (uint8_t)fold;
        if (i >= first && !fold) {
            dn += !(so_ops[nd->op].flags & SO_F_SOURCE);
            if (nd->op == SO_OP_CONV && role[i] != SO_COST_FREE && PREVIEW_RATE_SLACK > 0) {
                const double f = (double)so_node_flops(sg, i);
                double rate = c->conv_rate; /* FLOPs per ms */
                /* a matched conv with the same groups, input and output shapes (a 1x1 conv the rewrite enlarges) */
                const so_shape *xi = &sg->nodes[nd->in[0].node].out[nd->in[0].slot];
                for (int p = 0; p < m->rule->src.n_nodes; p++) {
                    const int32_t q = m->node[p];
                    const so_node *mq = &g->nodes[q];
                    if (mq->op != SO_OP_CONV || !(r->nc[q] > 0) || mq->attr->group != nd->attr->group ||
                        !so_shape_eq(&mq->out[0], &nd->out[0]) ||
                        !so_shape_eq(&g->nodes[mq->in[0].node].out[mq->in[0].slot], xi))
                        continue;
                    const double mr = (double)so_node_flops(g, q) / r->nc[q];
                    if (mr > 0 && (rate <= 0 || mr < rate)) rate = mr;
                }
                if (rate > 0) bound += f / (PREVIEW_RATE_SLACK * rate);
            }
        }
    }
    for (int p = 0; p < m->rule->src.n_nodes; p++) matched += r->nc[m->node[p]];
    *dnodes = dn;
    *bounded = 0;
    const double reach = c->o->alpha > 1 ? (c->o->alpha - 1) * c->best_cost : 0;
    if (bound > 0 && bound - matched >= reach) { /* out of reach: not timed (PREVIEW_RATE_SLACK) */
        c->res->preview_bounded++;
        *bounded = 1;
        *delta = bound - matched;
        return SO_OK;
    }
    double d = 0;
    const int64_t meas0 = c->cm->measured; const double ms0 = c->cm->measure_seconds;
    for (int32_t i = first; i < n; i++)
        if (!wf[i]) d += so_cost_node_role(c->cm, sg, i, role[i]);
    if (getenv("SO_DEBUG_PREVIEW") && c->cm->measured > meas0)
        fprintf(stderr, "preview timed: rule %s %lld cfg %.3f s delta %.4f matched %.4f bound %.4f reach %.4f\n", c->o->labels ? c->o->labels[m->rule_index] : "?", (long long)(c->cm->measured - meas0), c->cm->measure_seconds - ms0, d - matched, matched, bound, reach);
    for (int p = 0; p < m->rule->src.n_nodes; p++) d -= r->nc[m->node[p]]; /* in this order: the same bits as before the bound */
    *delta = d;
    return SO_OK;
}

static hist *new_hist(ctx *c, int32_t rule, hist *parent)
{
    hist *h = so_arena_alloc(&c->hist_arena, sizeof *h);
    h->rule = rule;
    h->parent = parent;
    h->depth = parent ? parent->depth + 1 : 1;
    return h;
}

static void push_found(ctx *c, const so_match *m)
{
    if (c->n_found == c->cap_found) {
        c->cap_found = c->cap_found ? c->cap_found * 2 : 256;
        c->found = so_xrealloc(c->found, (size_t)c->cap_found * sizeof *c->found);
    }
    cand *k = &c->found[c->n_found++];
    memset(k, 0, sizeof *k);
    k->m = *m;
}

/* Match callback: collects matches (anchored: only those whose smallest dirty node is the
   anchor, so a match with several dirty nodes is taken once). */
static int on_match(const so_match *m, void *ud)
{
    ctx *c = ud;
    if (c->dirty) {
        int32_t lo = INT32_MAX;
        for (int p = 0; p < m->rule->src.n_nodes; p++)
            if (c->dirty[m->node[p]] && m->node[p] < lo) lo = m->node[p];
        if (lo != c->anchor) return 0;
    }
    push_found(c, m);
    if ((c->n_found & 255) == 0 && out_of_time(c)) return 1;
    return 0;
}

/* Previews c->found[from..) in r and appends the applicable ones to r's candidates. */
static void preview_found(ctx *c, gref *r, int32_t from)
{
    for (int32_t k = from; k < c->n_found && !c->timed_out; k++) {
        cand *f = &c->found[k];
        c->res->matches++;
        /* every candidate: a preview may time new configurations (tens of ms each for large
           convolutions), so checking every 64 overshot the limit by seconds (densenet121:
           11 s under an 8 s limit) */
        if (out_of_time(c)) break;
        if ((c->res->matches & 63) == 0) progress(c, 0);
        double d;
        int32_t dn;
        uint8_t bounded = 0;
        if (preview(c, r, &f->m, &d, &dn, &bounded) != SO_OK) {
            c->res->rejected++;
            continue;
        }
        c->res->graphs_generated++;
        f->est = f->cur = d;
        f->dnodes = dn;
        f->exact = 0;
        f->bounded = bounded;
        if (r->n_cands == r->cap_cands) {
            r->cap_cands = r->cap_cands ? r->cap_cands * 2 : 64;
            r->cands = so_xrealloc(r->cands, (size_t)r->cap_cands * sizeof *r->cands);
        }
        r->cands[r->n_cands++] = *f;
    }
}

/* Every match of every rule in r's graph (the start graph). */
static void expand_full(ctx *c, gref *r)
{
    so_match_index ix;
    so_match_index_init(&ix, r->g);
    arm_deadline(c, &ix);
    c->dirty = NULL;
    c->n_found = 0;
    for (int32_t k = 0; k < c->n_rules && !c->timed_out; k++) so_match_rule(&ix, &c->rules[k], k, on_match, c);
    so_match_index_free(&ix);
    preview_found(c, r, 0);
    r->expanded = !c->timed_out;
    c->res->full_passes++;
}

/* The matches of child r (rewritten from parent p, which is expanded): p's matches whose nodes
   are clean in r, renumbered, plus matches anchored at r's dirty nodes. */
static void expand_from(ctx *c, const gref *p, gref *r)
{
    const so_graph *g = r->g;
    int32_t n = g->n_nodes, np = p->g->n_nodes;
    c->work += n;
    /* users in parent numbering (new users get numbers no parent node has) */
    int64_t *num = so_xmalloc(((size_t)n + 1) * sizeof *num);
    for (int32_t j = 0; j < n; j++) num[j] = r->origin[j] >= 0 ? r->origin[j] : (int64_t)np + j;
    uint64_t *sig = so_xmalloc(((size_t)n + 1) * sizeof *sig);
    use_sigs(g, num, sig);
    char *dirty = so_xcalloc((size_t)n + 1, 1);
    int32_t *inv = so_xmalloc(((size_t)np + 1) * sizeof *inv);
    for (int32_t i = 0; i < np; i++) inv[i] = -1;
    for (int32_t j = 0; j < n; j++) {
        dirty[j] = r->inchg[j] || sig[j] != p->usig[r->origin[j]];
        if (r->origin[j] >= 0) inv[r->origin[j]] = j;
    }
    free(sig);
    free(num);
    /* carried */
    r->cap_cands = p->n_cands + 64;
    r->cands = so_xmalloc((size_t)r->cap_cands * sizeof *r->cands);
    for (int32_t k = 0; k < p->n_cands; k++) {
        const cand *pc = &p->cands[k];
        cand nc = *pc;
        int ok = 1;
        for (int q = 0; q < pc->m.rule->src.n_nodes && ok; q++) {
            int32_t j = inv[pc->m.node[q]];
            if (j < 0 || dirty[j]) ok = 0;
            else nc.m.node[q] = j;
        }
        for (int v = 0; v < pc->m.rule->n_inputs && ok; v++) {
            int32_t j = inv[pc->m.var[v].node];
            if (j < 0) ok = 0;
            else nc.m.var[v].node = j;
        }
        if (!ok) continue;
        nc.cur = nc.est;
        nc.exact = 0;
        r->cands[r->n_cands++] = nc;
    }
    c->res->carried += r->n_cands;
    free(inv);
    /* anchored at dirty nodes */
    so_match_index ix;
    so_match_index_init(&ix, g);
    arm_deadline(c, &ix);
    c->dirty = dirty;
    c->n_found = 0;
    for (int32_t j = 0; j < n && !c->timed_out; j++) {
        if (!dirty[j] || (so_ops[g->nodes[j].op].flags & (SO_F_SOURCE | SO_F_OPAQUE))) continue;
        if ((c->res->anchors & 63) == 63 && out_of_time(c)) break;
        c->anchor = j;
        c->res->anchors++;
        const so_node *nd = &g->nodes[j];
        uint64_t keys[2] = {so_match_node_key(nd->op, nd->n_in, nd->n_out, nd->attr, 0),
                            so_match_node_key(nd->op, nd->n_in, nd->n_out, nd->attr, 1)};
        for (int ig = 0; ig < (keys[0] == keys[1] ? 1 : 2); ig++) {
            uint64_t key = keys[ig];
            for (int32_t t = first_entry(c, key); t < c->n_ent && c->ent[t].key == key && !c->timed_out; t++) {
                c->work++;
                so_match_rule_at_node(&ix, &c->rules[c->ent[t].rule], c->ent[t].rule, c->ent[t].node, j, on_match, c);
            }
        }
    }
    c->dirty = NULL;
    so_match_index_free(&ix);
    preview_found(c, r, 0);
    free(dirty);
    r->expanded = !c->timed_out;
}

/* Matches of r from scratch, compared with its incremental candidates (opts.verify_incremental):
   counts matches present in one list and not the other. */
static void verify_incremental(ctx *c, gref *r)
{
    gref tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.g = r->g;
    tmp.nc = r->nc;
    tmp.role = r->role;
    int64_t saved[5] = {c->res->matches, c->res->rejected, c->res->graphs_generated, c->res->full_passes, 0};
    expand_full(c, &tmp);
    c->res->matches = saved[0];
    c->res->rejected = saved[1];
    c->res->graphs_generated = saved[2];
    c->res->full_passes = saved[3];
    if (c->timed_out) { /* the pass was cut short: nothing to compare */
        free(tmp.cands);
        return;
    }
    /* compare as multisets of (rule, nodes, vars) keys */
    so_hmap a = {0};
    uint64_t *ka = so_xmalloc(((size_t)r->n_cands + 1) * sizeof *ka);
    for (int32_t k = 0; k < r->n_cands; k++) {
        const so_match *m = &r->cands[k].m;
        uint64_t buf[1 + SO_RULE_MAX_NODES + 2 * SO_RULE_MAX_INPUTS];
        int q = 0;
        buf[q++] = (uint64_t)m->rule_index;
        for (int p = 0; p < m->rule->src.n_nodes; p++) buf[q++] = (uint64_t)m->node[p];
        for (int v = 0; v < m->rule->n_inputs; v++) buf[q++] = ((uint64_t)m->var[v].node << 8) | (uint64_t)m->var[v].slot;
        ka[k] = XXH3_64bits(buf, (size_t)q * sizeof *buf);
        uint64_t v;
        so_hmap_put(&a, ka[k], so_hmap_get(&a, ka[k], &v) ? v + 1 : 1);
    }
    int64_t diff = 0;
    for (int32_t k = 0; k < tmp.n_cands; k++) {
        const so_match *m = &tmp.cands[k].m;
        uint64_t buf[1 + SO_RULE_MAX_NODES + 2 * SO_RULE_MAX_INPUTS];
        int q = 0;
        buf[q++] = (uint64_t)m->rule_index;
        for (int p = 0; p < m->rule->src.n_nodes; p++) buf[q++] = (uint64_t)m->node[p];
        for (int v = 0; v < m->rule->n_inputs; v++) buf[q++] = ((uint64_t)m->var[v].node << 8) | (uint64_t)m->var[v].slot;
        uint64_t key = XXH3_64bits(buf, (size_t)q * sizeof *buf), v;
        if (so_hmap_get(&a, key, &v) && v > 0) so_hmap_put(&a, key, v - 1);
        else {
            diff++;
            if (getenv("SO_DEBUG_INC")) {
                fprintf(stderr, "missing: rule %d (id %d) nodes", m->rule_index, m->rule->id);
                for (int p = 0; p < m->rule->src.n_nodes; p++)
                    fprintf(stderr, " %d(%s%s)", m->node[p], so_ops[r->g->nodes[m->node[p]].op].name,
                            r->origin && r->origin[m->node[p]] < 0 ? ",new" : "");
                fprintf(stderr, "\n");
            }
        }
    }
    for (int32_t k = 0; k < r->n_cands; k++) {
        uint64_t v;
        if (so_hmap_get(&a, ka[k], &v) && v > 0) {
            diff++;
            so_hmap_put(&a, ka[k], v - 1);
            if (getenv("SO_DEBUG_INC")) {
                const so_match *m = &r->cands[k].m;
                fprintf(stderr, "extra: rule %d (id %d) k=%d nodes", m->rule_index, m->rule->id, (int)k);
                for (int p = 0; p < m->rule->src.n_nodes; p++)
                    fprintf(stderr, " %d(%s%s)", m->node[p], so_ops[r->g->nodes[m->node[p]].op].name,
                            r->origin && r->origin[m->node[p]] < 0 ? ",new" : "");
                fprintf(stderr, " vars");
                for (int q = 0; q < m->rule->n_inputs; q++) fprintf(stderr, " %d.%d", m->var[q].node, m->var[q].slot);
                fprintf(stderr, "\n");
            }
        }
    }
    c->res->incremental_mismatches += diff;
    so_hmap_free(&a);
    free(ka);
    free(tmp.cands);
}

/* Candidates of r: from its parent when it has one that is expanded, else from scratch. */
static void expand(ctx *c, gref *r, const gref *parent)
{
    if (r->expanded) return;
    r->n_cands = 0; /* a pass cut short by the time limit starts over */
    if (parent && parent->expanded) {
        expand_from(c, parent, r);
        if (c->o->verify_incremental && r->expanded) verify_incremental(c, r);
    } else {
        expand_full(c, r);
    }
    c->res->graphs_explored++;
}

/* Builds and costs the rewrite m of p (without its candidates). NULL if it does not apply
   (cycle, shapes) or, with dedupe, when the graph was seen before. */
static gref *materialize(ctx *c, const gref *p, const so_match *m, int dedupe)
{
    so_graph *ng = NULL;
    int32_t *origin = NULL;
    if (so_rewrite_track(p->g, m, c->fc, &ng, &origin) != SO_OK) {
        c->work += SO_SEARCH_BUILD_WORK * p->g->n_nodes; /* cloned, maybe canonicalised, before it failed */
        c->res->built_nodes += p->g->n_nodes;
        c->res->rejected++;
        return NULL;
    }
    c->res->materialized++;
    c->work += SO_SEARCH_BUILD_WORK * ng->n_nodes;
    c->res->built_nodes += ng->n_nodes;
    gref *r = gref_child(c, p, ng, origin);
    if (dedupe && !so_hmap_add(&c->seen, r->ghash, 1)) {
        c->res->duplicates++;
        gref_free(r);
        return NULL;
    }
    return r;
}

static void note_best(ctx *c, const so_graph *g, double cost, hist *h)
{
    if (cost < c->best_cost * (1 - IMPROVE_EPS)) {
        so_graph_free(c->best);
        c->best = so_graph_clone(g);
        c->best_cost = cost;
        c->best_h = h;
    }
}

/* ---------------- greedy ---------------- */

/* Index of the candidate of r with the smallest current value below `below`, or -1. */
static int32_t best_cand(const gref *r, double below)
{
    int32_t b = -1;
    for (int32_t k = 0; k < r->n_cands; k++) {
        double v = r->cands[k].cur;
        if (v < below && (b < 0 || v < r->cands[b].cur)) b = k;
    }
    return b;
}

/* Greedy descent from start: repeatedly applies the rewrite with the best exact improvement,
   building candidates in order of their estimate (an estimate is replaced by the exact change
   once built) until the best one is exact, at most GREEDY_TRIES per step. Stops when nothing
   improves, at the budget or the time limit. Returns the final state (caller decrefs). */
static gref *greedy(ctx *c, gref *start)
{
    so_search_result *res = c->res;
    gref *cur = start;
    cur->refs++;
    expand(c, cur, NULL);
    trace_line(c, "greedy", 0, cur->cost, cur->h, "");
    for (;;) {
        if (c->o->budget > 0 && res->graphs_explored >= c->o->budget) {
            res->stopped_by = 1;
            break;
        }
        if (out_of_time(c)) break;
        progress(c, 0);
        double below = -IMPROVE_EPS * cur->cost;
        gref *next = NULL;
        int32_t next_k = -1, tries = 0;
        for (;;) {
            int32_t k = best_cand(cur, below);
            if (k < 0) break;
            cand *cd = &cur->cands[k];
            if (cd->exact) { /* the best, and its exact value is known: built below */
                if (k != next_k) {
                    decref(next);
                    next = materialize(c, cur, &cd->m, 0);
                    next_k = k;
                }
                break;
            }
            if (tries >= GREEDY_TRIES || out_of_time(c)) break;
            tries++;
            gref *ng = materialize(c, cur, &cd->m, 0);
            cd->exact = 1;
            if (!ng) {
                cd->cur = INFINITY;
                continue;
            }
            cd->cur = ng->cost - cur->cost;
            if (cd->cur < below && (!next || ng->cost < next->cost)) {
                decref(next);
                next = ng;
                next_k = k;
            } else {
                decref(ng);
            }
        }
        if (!next || next->cost >= cur->cost * (1 - IMPROVE_EPS)) {
            decref(next);
            break;
        }
        next->h = new_hist(c, cur->cands[next_k].m.rule_index, cur->h);
        expand(c, next, cur);
        trace_line(c, "greedy", next->h->depth, next->cost, next->h, "");
        decref(cur);
        cur = next;
        note_best(c, cur->g, cur->cost, cur->h);
    }
    return cur;
}

/* ---------------- backtracking ---------------- */

static void push_children(ctx *c, gref *r, double alpha)
{
    for (int32_t k = 0; k < r->n_cands; k++) {
        const cand *cd = &r->cands[k];
        double est = r->cost + cd->cur;
        if (!(est < alpha * c->best_cost)) continue;
        state s;
        memset(&s, 0, sizeof s);
        s.cost = est;
        s.nodes = r->n_ops + cd->dnodes;
        s.seq = c->seq++;
        s.parent = r;
        r->refs++;
        s.h = new_hist(c, cd->m.rule_index, r->h);
        s.m = cd->m;
        heap_push(c, &s);
        heap_trim(c);
    }
}

typedef struct pcand {
    double est;
    int32_t k;
} pcand;

static int cmp_pcand(const void *a, const void *b)
{
    const pcand *x = a, *y = b;
    if (x->est != y->est) return x->est < y->est ? -1 : 1;
    return x->k - y->k;
}

/* Queues the built (and expanded) state g at its exact cost. */
static void push_built(ctx *c, gref *g)
{
    state t;
    memset(&t, 0, sizeof t);
    t.cost = g->cost;
    t.nodes = g->n_ops;
    t.seq = c->seq++;
    t.g = g;
    g->refs++;
    t.h = g->h;
    heap_push(c, &t);
    heap_trim(c);
}

/* Chain probes from r, the best graph so far (a move made of several rewrites): each uphill rewrite
   of r within alpha x best, cheapest estimate first, is applied and then the same rule again, each
   time at the cheapest of its CHAIN_TRIES matches of the lowest estimates, bounded ones (out of reach,
   PREVIEW_RATE_SLACK) left out (built: the estimate
   prices the target's fusions alone), as long as each application lowers the exact cost; the chain
   counts as one move. Merging one gate's five x.W products in nasrnn_512 is such a chain: 473
   reversed four times, +2.3 % for the first merge, then -0.9 %, -0.9 %, -1.2 % (search/README.md
   "Tracing"). The first chain that ends below the best queues its graph (the new best, probed in turn
   when popped); every chain's first graph is queued as the child it is. A rule whose chains failed
   from CHAIN_FAILS matches of r is not probed further from r (nasrnn_512: 500 matches of 506 reversed,
   all failing, came before the first of 473 reversed), and probing stops once it has spent
   1/CHAIN_WORK_SHARE of the work limit. Chains are counted in res->probes; their graphs are not
   counted in graphs_explored (the budget). */
static void probe(ctx *c, gref *r, double alpha)
{
    pcand *v = so_xmalloc(((size_t)r->n_cands + 1) * sizeof *v);
    int32_t n = 0;
    for (int32_t k = 0; k < r->n_cands; k++) {
        double d = r->cands[k].cur;
        if (d > IMPROVE_EPS * r->cost && r->cost + d < alpha * c->best_cost) v[n++] = (pcand){d, k};
    }
    qsort(v, (size_t)n, sizeof *v, cmp_pcand);
    int found = 0;
    const int64_t explored = c->res->graphs_explored; /* a chain is one move: its graphs are counted in probes */
    uint8_t *failed = so_xcalloc((size_t)c->n_rules + 1, 1); /* chains of each rule that failed from r */
    int32_t cap_w = r->n_cands + 64;
    pcand *w = so_xmalloc((size_t)cap_w * sizeof *w); /* one chain step's matches of the rule */
    const int64_t cap = (c->work_limit > 0 ? c->work_limit : SO_SEARCH_WORK_DEFAULT) / CHAIN_WORK_SHARE;
    for (int32_t q = 0; q < n && !found && !out_of_time(c) && c->probe_work < cap; q++) {
        const cand *cd = &r->cands[v[q].k];
        const int32_t rule = cd->m.rule_index;
        if (failed[rule] >= CHAIN_FAILS) continue;
        const int64_t work0 = c->work;
        gref *g1 = materialize(c, r, &cd->m, 1);
        if (!g1) {
            c->probe_work += c->work - work0;
            continue;
        }
        g1->h = new_hist(c, rule, r->h);
        expand(c, g1, r);
        c->res->probes++;
        trace_line(c, "chain", 1, g1->cost, g1->h, "");
        gref *g = g1;
        g->refs++;
        for (int step = 1; step < CHAIN_MAX && g->expanded && !out_of_time(c); step++) {
            /* the rule's CHAIN_TRIES matches of the lowest estimates, built; the cheapest */
            int32_t nw = 0;
            if (g->n_cands > cap_w) w = so_xrealloc(w, (size_t)(cap_w = g->n_cands) * sizeof *w);
            for (int32_t k = 0; k < g->n_cands; k++)
                if (g->cands[k].m.rule_index == rule && !g->cands[k].bounded) w[nw++] = (pcand){g->cands[k].cur, k};
            qsort(w, (size_t)nw, sizeof *w, cmp_pcand);
            gref *ng = NULL;
            for (int32_t t = 0; t < nw && t < CHAIN_TRIES; t++) {
                gref *tg = materialize(c, g, &g->cands[w[t].k].m, 0);
                if (tg && (!ng || tg->cost < ng->cost)) {
                    decref(ng);
                    ng = tg;
                } else {
                    decref(tg);
                }
            }
            if (!ng || ng->cost >= g->cost * (1 - IMPROVE_EPS) || !so_hmap_add(&c->seen, ng->ghash, 1)) {
                decref(ng);
                break;
            }
            ng->h = new_hist(c, rule, g->h);
            expand(c, ng, g);
            trace_line(c, "chain", step + 1, ng->cost, ng->h, "");
            decref(g);
            g = ng;
        }
        if (g->cost < c->best_cost * (1 - IMPROVE_EPS)) {
            note_best(c, g->g, g->cost, g->h);
            push_built(c, g);
            found = 1;
        }
        if (g1->expanded && g1->cost < alpha * c->best_cost) push_built(c, g1);
        if (!found) failed[rule]++;
        c->probe_work += c->work - work0;
        decref(g);
        decref(g1);
    }
    c->res->graphs_explored = explored;
    free(failed);
    free(w);
    free(v);
}

static void backtrack(ctx *c, gref *start, gref *warm)
{
    const so_search_opts *o = c->o;
    so_search_result *res = c->res;
    so_hmap_add(&c->seen, start->ghash, 1);
    if (warm) {
        so_hmap_add(&c->seen, warm->ghash, 1);
        state s;
        memset(&s, 0, sizeof s);
        s.cost = warm->cost;
        s.nodes = warm->n_ops;
        s.seq = c->seq++;
        s.g = warm;
        warm->refs++;
        s.h = warm->h;
        heap_push(c, &s);
    }
    state s0;
    memset(&s0, 0, sizeof s0);
    s0.cost = start->cost;
    s0.nodes = start->n_ops;
    s0.seq = c->seq++;
    s0.g = start;
    start->refs++;
    heap_push(c, &s0);
    while (c->n_heap > 0) {
        if (o->budget > 0 && res->graphs_explored >= o->budget) {
            res->stopped_by = 1;
            break;
        }
        if (out_of_time(c)) break;
        state s = heap_pop(c);
        if (getenv("SO_DEBUG_POP"))
            fprintf(stderr, "pop %.9g tie %lld depth %d rule %d%s best %.9g\n", s.cost, (long long)s.tie, s.h ? s.h->depth : 0,
                    s.h ? c->rules[s.h->rule].id : 0, s.g ? "" : " lazy", c->best_cost);
        if (s.cost >= o->alpha * c->best_cost) {
            state_drop(&s); /* the best improved since it was queued */
            continue;
        }
        gref *r = s.g;
        if (!r) {
            r = materialize(c, s.parent, &s.m, 1);
            if (!r) {
                state_drop(&s);
                continue;
            }
            r->h = s.h;
            note_best(c, r->g, r->cost, r->h);
            if (r->cost > s.cost * (1 + IMPROVE_EPS) + 1e-12) {
                /* costlier than estimated: back in the queue at its exact cost */
                state t = s;
                t.g = r;
                t.cost = r->cost;
                t.nodes = r->n_ops;
                t.seq = c->seq++;
                if (t.cost < o->alpha * c->best_cost) heap_push(c, &t);
                else state_drop(&t);
                continue;
            }
        }
        note_best(c, r->g, r->cost, r->h);
        if (r->cost >= o->alpha * c->best_cost) {
            s.g = r;
            state_drop(&s);
            continue;
        }
        const int fresh = !r->expanded; /* the start and greedy's graph were expanded (and traced) by greedy */
        expand(c, r, s.parent);
        if (fresh) trace_line(c, "expand", res->graphs_explored, r->cost, r->h, "");
        if (r->expanded) push_children(c, r, o->alpha);
        if (r->expanded && !r->probed && r->cost <= c->best_cost * (1 + IMPROVE_EPS)) { /* the best so far */
            r->probed = 1;
            probe(c, r, o->alpha);
        }
        s.g = r;
        state_drop(&s);
        progress(c, 0);
    }
}

/* ---------------- confirmation (measured costs) ---------------- */

#define CONFIRM_ROUNDS 3
/* b's side must be cheaper by this fraction of greedy's side: a configuration's fastest of 3
   timings still moves by a percent or two between runs on a loaded machine */
#define CONFIRM_MARGIN 0.02

/* Backtracking's best graph b beats greedy's graph g under the measured costs, each
   configuration timed once, at different moments: a difference of a few configurations can be
   the load of the moment (resnet50: a conv merge "saved" 0.6 ms of 136, and four fresh-cache
   re-costings of the two graphs put it at +0.18, +0.09, +0.67 and -0.11 ms). The configurations
   one graph runs more often than the other (multiset difference; shared ones cancel) are timed
   again, once per round whatever their count, the two sides interleaved, CONFIRM_ROUNDS rounds,
   each configuration at its fastest; 1 if b's side is still cheaper by CONFIRM_MARGIN. The prices in the cache
   (shared with other runs, whose reported costs must stay comparable) are not changed; each configuration's
   confirmation timing (its fastest round) is recorded beside them (so_cost_confirm_put) and a configuration
   already recorded is not timed again (so_cost_confirm_get): with a disk cache, every later run that reaches the
   same two graphs decides the same way (otherwise two runs on one cache could write different graphs). */
static int confirm_best(ctx *c, const so_graph *b, const so_graph *g)
{
    so_cost_side *ob, *og;
    int32_t kb, kg;
    so_cost_side_diff(c->cm, b, g, &ob, &kb, &og, &kg);
    double *tb = so_xmalloc(((size_t)kb + 1) * sizeof *tb), *tg = so_xmalloc(((size_t)kg + 1) * sizeof *tg);
    /* recorded by an earlier confirmation: not timed again (rec) */
    char *rb = so_xcalloc((size_t)kb + 1, 1), *rg = so_xcalloc((size_t)kg + 1, 1);
    for (int32_t q = 0; q < kb; q++) rb[q] = (char)so_cost_confirm_get(c->cm, ob[q].key, &tb[q]);
    for (int32_t q = 0; q < kg; q++) rg[q] = (char)so_cost_confirm_get(c->cm, og[q].key, &tg[q]);
    for (int32_t q = 0; q < kb; q++)
        if (!rb[q]) tb[q] = INFINITY;
    for (int32_t q = 0; q < kg; q++)
        if (!rg[q]) tg[q] = INFINITY;
    int ok = 1;
    for (int r = 0; r < CONFIRM_ROUNDS && ok; r++)
        for (int side = 0; side < 2 && ok; side++) {
            int bs = (side + r) % 2 == 0; /* b first in even rounds */
            const so_graph *gr = bs ? b : g;
            const so_cost_side *o = bs ? ob : og;
            double *t = bs ? tb : tg;
            const char *rec = bs ? rb : rg;
            int32_t k = bs ? kb : kg;
            double round_ms = 0;
            for (int32_t q = 0; q < k; q++) {
                double ms;
                if (rec[q]) {
                    round_ms += o[q].count * t[q];
                    continue;
                }
                if (so_cost_time_node(c->cm, gr, o[q].node, o[q].role, &ms) != SO_OK) {
                    ok = 0; /* cannot time it: keep the search's decision */
                    break;
                }
                if (ms < t[q]) t[q] = ms;
                round_ms += o[q].count * ms;
                c->res->confirm_timed++;
            }
            if (getenv("SO_DEBUG_CONFIRM")) fprintf(stderr, "confirm round %d %s: %.4f ms\n", r, bs ? "backtrack" : "greedy", round_ms);
        }
    double sb = 0, sg = 0;
    for (int32_t q = 0; q < kb; q++) sb += ob[q].count * tb[q];
    for (int32_t q = 0; q < kg; q++) sg += og[q].count * tg[q];
    if (ok) { /* every configuration timed: recorded for the next confirmation */
        for (int32_t q = 0; q < kb; q++)
            if (!rb[q]) so_cost_confirm_put(c->cm, ob[q].key, tb[q]);
        for (int32_t q = 0; q < kg; q++)
            if (!rg[q]) so_cost_confirm_put(c->cm, og[q].key, tg[q]);
    }
    int keep = !ok || sb < sg * (1 - CONFIRM_MARGIN);
    if (getenv("SO_DEBUG_CONFIRM"))
        fprintf(stderr, "confirm: %d configurations only in backtracking's best (%.4f ms re-timed), %d only in greedy's (%.4f ms): %s\n",
                (int)kb, sb, (int)kg, sg, keep ? "kept" : "vetoed");
    free(ob);
    free(og);
    free(tb);
    free(tg);
    free(rb);
    free(rg);
    return keep;
}

/* ---------------- entry ---------------- */

/* The rule indices from the start to h, in order (malloc'd); *n their count. */
static int32_t *hist_path(const hist *h, int32_t *n)
{
    int32_t depth = h ? h->depth : 0, k = depth;
    int32_t *path = so_xmalloc(((size_t)depth + 1) * sizeof *path);
    for (; h; h = h->parent) path[--k] = h->rule;
    *n = depth;
    return path;
}

static int cmp_entry(const void *a, const void *b)
{
    const anchor_entry *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    if (x->rule != y->rule) return x->rule < y->rule ? -1 : 1;
    return x->node - y->node;
}

/* Index of the first entry with key `key` (or where it would be). */
static int32_t first_entry(const ctx *c, uint64_t key)
{
    int32_t lo = 0, hi = c->n_ent;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (c->ent[mid].key < key) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Entries (rule, pattern node) keyed by so_match_node_key, symbolic int lists ignored where
   the pattern node has them. */
static void index_rules(ctx *c)
{
    int32_t n = 0;
    for (int32_t k = 0; k < c->n_rules; k++) n += c->rules[k].src.n_nodes;
    c->ent = so_xmalloc(((size_t)n + 1) * sizeof *c->ent);
    for (int32_t k = 0; k < c->n_rules; k++) {
        const so_rule *r = &c->rules[k];
        for (int p = 0; p < r->src.n_nodes; p++) {
            const so_rnode *pn = &r->src.nodes[p];
            if (so_ops[pn->op].flags & (SO_F_SOURCE | SO_F_OPAQUE | SO_F_CONST)) continue;
            c->ent[c->n_ent++] = (anchor_entry){so_match_node_key(pn->op, pn->n_in, pn->n_out, &pn->attr, pn->n_dx > 0), k, p};
        }
    }
    qsort(c->ent, (size_t)c->n_ent, sizeof *c->ent, cmp_entry);
}

/* Sets up c (zeroed) for a search from start with options o (alpha set); returns the start's state
   (the caller decrefs it, then calls ctx_free). */
static gref *ctx_init(ctx *c, const so_graph *start, const so_rule *rules, int32_t n_rules, so_cost_model *cm, so_fold_ctx *fc,
                      const so_search_opts *o, so_search_result *res)
{
    c->rules = rules;
    c->n_rules = n_rules;
    c->cm = cm;
    c->fc = fc;
    c->o = o;
    c->res = res;
    c->t0 = so_now();
    c->cpu0 = so_cpu_now();
    c->meas0 = cm->measure_cpu_seconds;
    c->work_limit = o->work_limit == 0 ? SO_SEARCH_WORK_DEFAULT : o->work_limit < 0 ? 0 : o->work_limit;
    c->last_progress = c->t0;
    c->scratch = so_graph_new(start->model);
    index_rules(c);
    gref *g0 = gref_new(c, so_graph_clone(start));
    res->cost_before = g0->cost;
    c->tick = g0->cost > 0 ? g0->cost * 1e-9 : 1e-12;
    c->best = so_graph_clone(start);
    c->best_cost = res->cost_before;
    for (int32_t i = 0; i < g0->g->n_nodes; i++) { /* the preview bound's rate (PREVIEW_RATE_SLACK) */
        if (g0->g->nodes[i].op != SO_OP_CONV || !(g0->nc[i] > 0)) continue;
        const double rate = (double)so_node_flops(g0->g, i) / g0->nc[i];
        if (rate > c->conv_rate) c->conv_rate = rate;
    }
    return g0;
}

/* Frees what ctx_init and the search allocated, except c->best, c->best_h's history and the queue's states. */
static void ctx_free(ctx *c)
{
    free(c->heap);
    free(c->found);
    free(c->pv);
    free(c->ent);
    so_hmap_free(&c->seen);
    so_graph_free(c->scratch);
}

so_status so_search_run(const so_graph *start, const so_rule *rules, int32_t n_rules, so_cost_model *cm,
                        so_fold_ctx *fc, const so_search_opts *opts, so_search_result *res)
{
    if (opts->kind == SO_SEARCH_EQSAT) return so_eqsat_run(start, rules, n_rules, cm, fc, opts, NULL, res);
    ctx c;
    memset(&c, 0, sizeof c);
    memset(res, 0, sizeof *res);
    so_search_opts o = *opts;
    if (o.alpha <= 0) o.alpha = 1.05;
    gref *g0 = ctx_init(&c, start, rules, n_rules, cm, fc, &o, res);

    int stop = 0; /* 2 time limit, 3 work limit */
    if (o.kind == SO_SEARCH_GREEDY) {
        gref *g = greedy(&c, g0);
        decref(g);
    } else if (o.kind == SO_SEARCH_BACKTRACK) {
        /* warm start: the greedy descent --search greedy runs with these options (the same work
           limit: the same graph); its result is queued next to the input, so backtracking never ends
           worse than greedy. Backtracking then gets the work limit again. */
        gref *gs = greedy(&c, g0);
        if (c.timed_out && !out_of_work(&c)) stop = 2; /* the safety net: the whole search's time */
        res->work = c.work;
        c.work = 0;
        c.timed_out = stop != 0;
        res->stopped_by = 0;
        res->greedy_explored = res->graphs_explored;
        res->greedy_best = so_graph_clone(gs->g);
        res->greedy_cost = gs->cost;
        res->greedy_path = hist_path(gs->h, &res->n_greedy_path);
        backtrack(&c, g0, gs != g0 ? gs : NULL);
        /* with a cost table the costs are the table's (measured in interleaved rounds): no re-timing,
           so that the same table gives the same graph */
        if (cm->kind == SO_COST_MEASURED && !cm->table && c.best_cost < gs->cost * (1 - IMPROVE_EPS) && !confirm_best(&c, c.best, gs->g)) {
            so_graph_free(c.best);
            c.best = so_graph_clone(gs->g);
            c.best_cost = gs->cost;
            c.best_h = gs->h;
            res->confirm_vetoed = 1;
        }
        decref(gs);
    }
    if (c.timed_out) res->stopped_by = stop ? stop : out_of_work(&c) ? 3 : 2;
    res->work += c.work;
    if (getenv("SO_DEBUG_WORK"))
        fprintf(stderr, "search: work %lld (limit %lld; built nodes %lld), %.3f s CPU (timing excluded), %.3f s wall, stopped_by %d, explored %lld, materialized %lld, matches %lld, anchors %lld\n",
                (long long)res->work, (long long)c.work_limit, (long long)res->built_nodes, search_cpu(&c), so_now() - c.t0, res->stopped_by,
                (long long)res->graphs_explored, (long long)res->materialized, (long long)res->matches, (long long)res->anchors);
    for (int32_t i = 0; i < c.n_heap; i++) state_drop(&c.heap[i]);
    decref(g0);
    ctx_free(&c);
    res->seconds = so_now() - c.t0;
    res->cpu_seconds = search_cpu(&c);
    res->cost_after = c.best_cost;
    progress(&c, 1);
    res->path = hist_path(c.best_h, &res->n_path);
    res->best = c.best;
    so_arena_free(&c.hist_arena);
    return SO_OK;
}

so_status so_search_replay(const so_graph *start, const so_rule *rules, int32_t n_rules, so_cost_model *cm,
                           so_fold_ctx *fc, const so_search_opts *opts, const int32_t *script, int32_t n_script,
                           int32_t *n_done, double *cost_end, double *cost_max, so_graph **end)
{
    ctx c;
    so_search_result res;
    memset(&c, 0, sizeof c);
    memset(&res, 0, sizeof res);
    so_search_opts o = *opts;
    o.work_limit = -1; /* every step is built whole: no limit */
    o.time_limit = 0;
    o.progress = 0;
    gref *cur = ctx_init(&c, start, rules, n_rules, cm, fc, &o, &res);
    expand(&c, cur, NULL);
    trace_line(&c, "replay", 0, cur->cost, NULL, "");
    double top = cur->cost;
    int32_t k = 0;
    for (; k < n_script; k++) {
        gref *next = NULL;
        int32_t matches = 0, built = 0;
        for (int32_t q = 0; q < cur->n_cands; q++) {
            if (cur->cands[q].m.rule_index != script[k]) continue;
            matches++;
            gref *ng = materialize(&c, cur, &cur->cands[q].m, 0);
            if (!ng) continue;
            built++;
            if (!next || ng->cost < next->cost * (1 - IMPROVE_EPS)) {
                decref(next);
                next = ng;
            } else {
                decref(ng);
            }
        }
        if (!next) break;
        next->h = new_hist(&c, script[k], cur->h);
        expand(&c, next, cur);
        decref(cur);
        cur = next;
        if (cur->cost > top) top = cur->cost;
        char more[64];
        snprintf(more, sizeof more, " matches %d built %d", (int)matches, (int)built);
        trace_line(&c, "replay", k + 1, cur->cost, cur->h, more);
    }
    *n_done = k;
    *cost_end = cur->cost;
    *cost_max = top;
    if (end) *end = so_graph_clone(cur->g);
    decref(cur);
    so_graph_free(c.best);
    ctx_free(&c);
    so_arena_free(&c.hist_arena);
    return SO_OK;
}

void so_search_result_free(so_search_result *res)
{
    so_graph_free(res->best);
    so_graph_free(res->greedy_best);
    free(res->greedy_path);
    free(res->path);
    memset(res, 0, sizeof *res);
}

void so_search_take(so_search_result *res, const so_graph *start, double cost_start)
{
    so_graph_free(res->best);
    free(res->path);
    if (start) {
        res->best = so_graph_clone(start);
        res->cost_after = cost_start;
        res->path = NULL;
        res->n_path = 0;
        return;
    }
    res->best = res->greedy_best;
    res->greedy_best = NULL;
    res->cost_after = res->greedy_cost;
    res->path = res->greedy_path;
    res->n_path = res->n_greedy_path;
    res->greedy_path = NULL;
    res->n_greedy_path = 0;
}

/* Another runtime runs other kernels than the ones we time, so a rewrite is written for it only if
   it does not also raise what every runtime pays: FLOPs, bytes read and written, a launch per
   kernel, and copies where our executor makes views. bert_taso's merged Q/K/V projection paid 0.6 %
   on our GEMM and ran 1.029x the original's time under ONNX Runtime: the one bigger GEMM saves two
   reads of its 4 MB input, its split reads and writes the 12.6 MB product once more. */
void so_search_standard_check(const so_graph *start, so_search_result *res, int threads, so_standard_check *sc)
{
    so_cost_model fm;
    so_cost_init(&fm, SO_COST_FLOPS, threads, ""); /* flops: no disk cache, cannot fail */
    fm.copies = 1;
    sc->ran = 1;
    sc->greedy = -1;
    sc->kept = 0;
    sc->before = so_cost_graph(&fm, start);
    sc->searched = so_cost_graph(&fm, res->best);
    const double tol = 1e-9 * sc->before;
    if (sc->searched > sc->before + tol) {
        if (res->greedy_best && res->greedy_cost < res->cost_before) sc->greedy = so_cost_graph(&fm, res->greedy_best);
        sc->kept = sc->greedy >= 0 && sc->greedy <= sc->before + tol ? 1 : 2;
        so_search_take(res, sc->kept == 2 ? start : NULL, res->cost_before);
    }
    so_cost_free(&fm);
}
