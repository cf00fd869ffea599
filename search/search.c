/* search.c - TASO's cost-ordered backtracking search over rule rewrites, a greedy baseline, and none. */
#include "search.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "match.h"

/* Rewrite history: a shared linked list from a graph back to the start. */
typedef struct hist {
    int32_t rule;
    int32_t depth;
    struct hist *parent;
} hist;

/* A materialized graph that lazy states refer to as their parent. */
typedef struct gref {
    so_graph *g;
    double cost;
    hist *h;
    int32_t refs;
} gref;

/* A queue entry: either materialized (g != NULL, the start) or lazy: the rewrite m applied to
   parent->g, built only when popped. cost is exact for materialized states and the preview
   estimate (parent cost + cost of the added nodes - cost of the matched nodes) for lazy ones. */
typedef struct state {
    double cost;
    int64_t seq;                /* tie-break: earlier first */
    so_graph *g;
    gref *parent;
    hist *h;
    so_match m;
} state;

typedef struct cand {
    double cost;
    int64_t seq;
    so_match m;
} cand;

typedef struct ctx {
    const so_rule *rules;
    int32_t n_rules;
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
    int64_t seq;
    int timed_out;
    so_graph *scratch;          /* preview graph */
    /* per expansion */
    gref *cur;
    cand *cands;                /* greedy: all candidates of this expansion */
    int32_t n_cands, cap_cands;
} ctx;

#define FOLD_PREVIEW_LIMIT ((int64_t)1 << 18)
/* A graph counts as cheaper only by more than this relative margin: sums of the same node
   costs in another node order differ in the last bits. */
#define IMPROVE_EPS 1e-6

static void decref(gref *r)
{
    if (r && --r->refs == 0) {
        so_graph_free(r->g);
        free(r);
    }
}

static void state_drop(state *s)
{
    so_graph_free(s->g);
    decref(s->parent);
    s->g = NULL;
    s->parent = NULL;
}

static int less(const state *a, const state *b) { return a->cost < b->cost || (a->cost == b->cost && a->seq < b->seq); }

static void heap_push(ctx *c, const state *s)
{
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
    double cost;
    int64_t seq;
    int32_t idx;
} rank;

static int cmp_rank(const void *a, const void *b)
{
    const rank *x = a, *y = b;
    if (x->cost != y->cost) return x->cost < y->cost ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Drops the costliest half of the queue when it exceeds its cap (sorting small keys, not
   the states). */
static void heap_trim(ctx *c)
{
    int32_t cap = c->o->queue_cap > 0 ? c->o->queue_cap : 20000;
    if (c->n_heap <= cap) return;
    int32_t n = c->n_heap, keep = cap / 2;
    rank *r = so_xmalloc((size_t)n * sizeof *r);
    for (int32_t i = 0; i < n; i++) r[i] = (rank){c->heap[i].cost, c->heap[i].seq, i};
    qsort(r, (size_t)n, sizeof *r, cmp_rank);
    state *h = so_xmalloc((size_t)c->cap_heap * sizeof *h);
    for (int32_t i = 0; i < keep; i++) h[i] = c->heap[r[i].idx]; /* a sorted array is a heap */
    for (int32_t i = keep; i < n; i++) state_drop(&c->heap[r[i].idx]);
    free(c->heap);
    free(r);
    c->heap = h;
    c->n_heap = keep;
}

static int out_of_time(ctx *c)
{
    if (c->timed_out) return 1;
    if (c->o->time_limit > 0 && so_now() - c->t0 >= c->o->time_limit) c->timed_out = 1;
    return c->timed_out;
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

/* Cost change of applying m to the current graph, from a preview of the target nodes. */
static so_status delta_cost(ctx *c, const so_match *m, double *delta)
{
    const so_graph *g = c->cur->g;
    int32_t first;
    if (so_rewrite_preview(g, m, c->fc, FOLD_PREVIEW_LIMIT, c->scratch, &first) != SO_OK) return SO_ERR;
    /* target nodes on weights only (directly or through other such nodes) are folded when the
       rewrite is built, even those the preview left unfolded for size: they cost nothing */
    const so_graph *sg = c->scratch;
    char wf[64];
    double d = 0;
    for (int32_t i = 0; i < sg->n_nodes; i++) {
        const so_node *n = &sg->nodes[i];
        int fold = n->op == SO_OP_WEIGHT;
        if (i >= first && !(so_ops[n->op].flags & (SO_F_SOURCE | SO_F_OPAQUE)) && (n->n_in > 0 || (so_ops[n->op].flags & SO_F_CONST))) {
            fold = 1;
            for (int k = 0; k < n->n_in; k++)
                if (n->in[k].node >= 64 || !wf[n->in[k].node]) fold = 0;
        }
        if (i < 64) wf[i] = (char)fold;
        if (i >= first && !fold) d += so_cost_node(c->cm, sg, i);
    }
    for (int p = 0; p < m->rule->src.n_nodes; p++) d -= so_cost_node(c->cm, g, m->node[p]);
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

/* Match callback: costs the rewrite by preview and queues it (lazily) or collects it. */
static int on_match(const so_match *m, void *ud)
{
    ctx *c = ud;
    so_search_result *res = c->res;
    res->matches++;
    if ((res->matches & 63) == 0) {
        if (out_of_time(c)) return 1;
        progress(c, 0);
    }
    double delta;
    if (delta_cost(c, m, &delta) != SO_OK) {
        res->rejected++;
        return 0;
    }
    res->graphs_generated++;
    double est = c->cur->cost + delta;
    if (c->o->kind == SO_SEARCH_GREEDY) {
        if (est >= c->cur->cost * (1 - IMPROVE_EPS)) return 0;
        if (c->n_cands == c->cap_cands) {
            c->cap_cands = c->cap_cands ? c->cap_cands * 2 : 64;
            c->cands = so_xrealloc(c->cands, (size_t)c->cap_cands * sizeof *c->cands);
        }
        c->cands[c->n_cands++] = (cand){est, c->seq++, *m};
        return 0;
    }
    if (est < c->o->alpha * c->best_cost) {
        state s;
        memset(&s, 0, sizeof s);
        s.cost = est;
        s.seq = c->seq++;
        s.parent = c->cur;
        c->cur->refs++;
        s.h = new_hist(c, m->rule_index, c->cur->h);
        s.m = *m;
        heap_push(c, &s);
        heap_trim(c);
    }
    return 0;
}

static void expand(ctx *c, gref *cur)
{
    so_match_index ix;
    so_match_index_init(&ix, cur->g);
    c->cur = cur;
    for (int32_t r = 0; r < c->n_rules && !c->timed_out; r++) so_match_rule(&ix, &c->rules[r], r, on_match, c);
    so_match_index_free(&ix);
    c->res->graphs_explored++;
}

/* Builds, dedupes and costs a popped/chosen rewrite. Returns the new graph or NULL. */
static so_graph *materialize(ctx *c, const so_graph *parent, const so_match *m, double *cost)
{
    so_graph *ng = NULL;
    if (so_rewrite(parent, m, c->fc, &ng) != SO_OK) {
        c->res->rejected++;
        return NULL;
    }
    if (!so_hmap_add(&c->seen, so_graph_hash(ng), 1)) {
        c->res->duplicates++;
        so_graph_free(ng);
        return NULL;
    }
    *cost = so_cost_graph(c->cm, ng);
    return ng;
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

static int cmp_cand(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->cost != y->cost) return x->cost < y->cost ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Greedy descent from start: repeatedly applies the best improving rewrite (by preview, then
   checked exactly) until none improves, the budget or the time limit.
   Returns the final graph (caller decrefs). */
static gref *greedy(ctx *c, const so_graph *start, double cost0)
{
    so_search_result *res = c->res;
    gref *cur = so_xcalloc(1, sizeof *cur);
    cur->g = so_graph_clone(start);
    cur->cost = cost0;
    cur->refs = 1;
    for (;;) {
        if (c->o->budget > 0 && res->graphs_explored >= c->o->budget) {
            res->stopped_by = 1;
            break;
        }
        if (out_of_time(c)) break;
        c->n_cands = 0;
        expand(c, cur);
        progress(c, 0);
        if (c->n_cands > 1) qsort(c->cands, (size_t)c->n_cands, sizeof *c->cands, cmp_cand);
        gref *next = NULL;
        for (int32_t k = 0; k < c->n_cands && k < 16 && !next; k++) {
            double cost;
            so_graph *ng = materialize(c, cur->g, &c->cands[k].m, &cost);
            if (!ng) continue;
            if (cost < cur->cost * (1 - IMPROVE_EPS)) {
                next = so_xcalloc(1, sizeof *next);
                next->g = ng;
                next->cost = cost;
                next->h = new_hist(c, c->cands[k].m.rule_index, cur->h);
                next->refs = 1;
            } else {
                so_graph_free(ng);
            }
        }
        if (!next) break;
        decref(cur);
        cur = next;
        note_best(c, cur->g, cur->cost, cur->h);
    }
    return cur;
}

so_status so_search_run(const so_graph *start, const so_rule *rules, int32_t n_rules, so_cost_model *cm,
                        so_fold_ctx *fc, const so_search_opts *opts, so_search_result *res)
{
    ctx c;
    memset(&c, 0, sizeof c);
    memset(res, 0, sizeof *res);
    so_search_opts o = *opts;
    if (o.alpha <= 0) o.alpha = 1.05;
    c.rules = rules;
    c.n_rules = n_rules;
    c.cm = cm;
    c.fc = fc;
    c.o = &o;
    c.res = res;
    c.t0 = so_now();
    c.last_progress = c.t0;
    c.scratch = so_graph_new(start->model);
    res->cost_before = so_cost_graph(cm, start);
    c.best = so_graph_clone(start);
    c.best_cost = res->cost_before;
    so_hmap_add(&c.seen, so_graph_hash(start), 1);

    if (o.kind == SO_SEARCH_GREEDY) {
        gref *g = greedy(&c, start, res->cost_before);
        decref(g);
    } else if (o.kind == SO_SEARCH_BACKTRACK) {
        /* warm start: a greedy descent first (at most a third of the time limit); its result is
           queued next to the input, so backtracking never ends worse than greedy */
        so_search_opts go = o;
        go.kind = SO_SEARCH_GREEDY;
        go.time_limit = o.time_limit > 0 ? o.time_limit / 3 : 0;
        c.o = &go;
        gref *gs = greedy(&c, start, res->cost_before);
        c.o = &o;
        c.timed_out = 0;
        res->stopped_by = 0;
        /* graphs greedy built were not expanded into the queue: let backtracking reach them */
        so_hmap_free(&c.seen);
        so_hmap_add(&c.seen, so_graph_hash(start), 1);
        if (gs->h) {
            state sg;
            memset(&sg, 0, sizeof sg);
            sg.cost = gs->cost;
            sg.seq = c.seq++;
            sg.g = so_graph_clone(gs->g);
            sg.h = gs->h;
            heap_push(&c, &sg);
        }
        decref(gs);
        state s0;
        memset(&s0, 0, sizeof s0);
        s0.cost = res->cost_before;
        s0.seq = c.seq++;
        s0.g = so_graph_clone(start);
        heap_push(&c, &s0);
        while (c.n_heap > 0) {
            if (o.budget > 0 && res->graphs_explored >= o.budget) {
                res->stopped_by = 1;
                break;
            }
            if (out_of_time(&c)) break;
            state s = heap_pop(&c);
            if (s.cost >= o.alpha * c.best_cost) {
                state_drop(&s); /* the best improved since it was queued */
                continue;
            }
            so_graph *ng = s.g;
            double cost = s.cost;
            if (!ng) ng = materialize(&c, s.parent->g, &s.m, &cost);
            s.g = NULL;
            decref(s.parent);
            if (!ng) continue;
            note_best(&c, ng, cost, s.h);
            if (cost >= o.alpha * c.best_cost) {
                so_graph_free(ng);
                continue;
            }
            gref *cur = so_xcalloc(1, sizeof *cur);
            cur->g = ng;
            cur->cost = cost;
            cur->h = s.h;
            cur->refs = 1;
            expand(&c, cur);
            decref(cur);
            progress(&c, 0);
        }
    }
    if (c.timed_out) res->stopped_by = 2;
    for (int32_t i = 0; i < c.n_heap; i++) state_drop(&c.heap[i]);
    free(c.heap);
    free(c.cands);
    so_hmap_free(&c.seen);
    so_graph_free(c.scratch);
    res->seconds = so_now() - c.t0;
    res->cost_after = c.best_cost;
    progress(&c, 1);
    int32_t depth = c.best_h ? c.best_h->depth : 0;
    res->n_path = depth;
    res->path = so_xmalloc(((size_t)depth + 1) * sizeof *res->path);
    int32_t k = depth;
    for (hist *h = c.best_h; h; h = h->parent) res->path[--k] = h->rule;
    res->best = c.best;
    so_arena_free(&c.hist_arena);
    return SO_OK;
}

void so_search_result_free(so_search_result *res)
{
    so_graph_free(res->best);
    free(res->path);
    memset(res, 0, sizeof *res);
}
