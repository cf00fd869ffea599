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

typedef struct state {
    so_graph *g;
    double cost;
    int64_t seq;                /* tie-break: earlier first */
    hist *h;
} state;

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
    state best;
    double t0, last_progress;
    int64_t seq;
    int timed_out;
    /* per expansion */
    const so_graph *cur;
    hist *cur_h;
    state cand_best;            /* greedy: best candidate of this expansion */
} ctx;

static int less(const state *a, const state *b) { return a->cost < b->cost || (a->cost == b->cost && a->seq < b->seq); }

static void heap_push(ctx *c, state s)
{
    if (c->n_heap == c->cap_heap) {
        c->cap_heap = c->cap_heap ? c->cap_heap * 2 : 256;
        c->heap = so_xrealloc(c->heap, (size_t)c->cap_heap * sizeof *c->heap);
    }
    int32_t i = c->n_heap++;
    while (i > 0) {
        int32_t p = (i - 1) / 2;
        if (!less(&s, &c->heap[p])) break;
        c->heap[i] = c->heap[p];
        i = p;
    }
    c->heap[i] = s;
}

static state heap_pop(ctx *c)
{
    state top = c->heap[0], last = c->heap[--c->n_heap];
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

static int cmp_state(const void *a, const void *b)
{
    const state *x = a, *y = b;
    return less(x, y) ? -1 : less(y, x) ? 1 : 0;
}

/* Drops the costliest half of the queue when it exceeds its cap. */
static void heap_trim(ctx *c)
{
    int32_t cap = c->o->queue_cap > 0 ? c->o->queue_cap : 2048;
    if (c->n_heap <= cap) return;
    qsort(c->heap, (size_t)c->n_heap, sizeof *c->heap, cmp_state); /* sorted array is a heap */
    for (int32_t i = cap / 2; i < c->n_heap; i++) so_graph_free(c->heap[i].g);
    c->n_heap = cap / 2;
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
            (long long)c->res->graphs_explored, (long long)c->res->graphs_generated, (int)c->n_heap, c->best.cost,
            c->res->cost_before, now - c->t0, final ? "\n" : "   ");
    fflush(stderr);
}

/* Match callback: applies the rewrite and decides what to keep. */
static int on_match(const so_match *m, void *ud)
{
    ctx *c = ud;
    so_search_result *res = c->res;
    res->matches++;
    if ((res->matches & 63) == 0) {
        if (out_of_time(c)) return 1;
        progress(c, 0);
    }
    so_graph *ng = NULL;
    if (so_rewrite(c->cur, m, c->fc, &ng) != SO_OK) {
        res->rejected++;
        return 0;
    }
    uint64_t h = so_graph_hash(ng);
    if (!so_hmap_add(&c->seen, h, 1)) {
        res->duplicates++;
        so_graph_free(ng);
        return 0;
    }
    res->graphs_generated++;
    double cost = so_cost_graph(c->cm, ng);
    hist *hh = so_arena_alloc(&c->hist_arena, sizeof *hh);
    hh->rule = m->rule_index;
    hh->parent = c->cur_h;
    hh->depth = c->cur_h ? c->cur_h->depth + 1 : 1;
    state s = {ng, cost, c->seq++, hh};
    if (c->o->kind == SO_SEARCH_GREEDY) {
        if (!c->cand_best.g || less(&s, &c->cand_best)) {
            so_graph_free(c->cand_best.g);
            c->cand_best = s;
        } else {
            so_graph_free(ng);
        }
        return 0;
    }
    if (cost < c->best.cost) {
        /* keep a private copy of the best: queue entries are freed when popped */
        so_graph_free(c->best.g);
        c->best = s;
        c->best.g = so_graph_clone(ng);
    }
    if (cost < c->o->alpha * c->best.cost) {
        heap_push(c, s);
        heap_trim(c);
    } else {
        so_graph_free(ng);
    }
    return 0;
}

static void expand(ctx *c, const so_graph *g, hist *h)
{
    so_match_index ix;
    so_match_index_init(&ix, g);
    c->cur = g;
    c->cur_h = h;
    for (int32_t r = 0; r < c->n_rules && !c->timed_out; r++) so_match_rule(&ix, &c->rules[r], r, on_match, c);
    so_match_index_free(&ix);
    c->res->graphs_explored++;
}

so_status so_search_run(const so_graph *start, const so_rule *rules, int32_t n_rules, so_cost_model *cm,
                        so_fold_ctx *fc, const so_search_opts *opts, so_search_result *res)
{
    ctx c;
    memset(&c, 0, sizeof c);
    memset(res, 0, sizeof *res);
    c.rules = rules;
    c.n_rules = n_rules;
    c.cm = cm;
    c.fc = fc;
    c.o = opts;
    c.res = res;
    c.t0 = so_now();
    c.last_progress = c.t0;
    double alpha = opts->alpha > 0 ? opts->alpha : 1.05;
    so_search_opts o = *opts;
    o.alpha = alpha;
    c.o = &o;
    res->cost_before = so_cost_graph(cm, start);
    c.best = (state){so_graph_clone(start), res->cost_before, c.seq++, NULL};
    so_hmap_add(&c.seen, so_graph_hash(start), 1);

    if (o.kind == SO_SEARCH_GREEDY) {
        state cur = {so_graph_clone(start), res->cost_before, 0, NULL};
        for (int64_t it = 0; o.budget <= 0 || it < o.budget; it++) {
            c.cand_best = (state){NULL, 0, 0, NULL};
            expand(&c, cur.g, cur.h);
            progress(&c, 0);
            if (c.cand_best.g && c.cand_best.cost < cur.cost * (1 - 1e-9)) {
                so_graph_free(cur.g);
                cur = c.cand_best;
                so_graph_free(c.best.g);
                c.best = cur;
                c.best.g = so_graph_clone(cur.g);
            } else {
                so_graph_free(c.cand_best.g);
                res->stopped_by = 0;
                break;
            }
            if (c.timed_out) break;
            if (o.budget > 0 && it + 1 >= o.budget) res->stopped_by = 1;
        }
        so_graph_free(cur.g);
    } else if (o.kind == SO_SEARCH_BACKTRACK) {
        heap_push(&c, (state){so_graph_clone(start), res->cost_before, c.seq++, NULL});
        while (c.n_heap > 0) {
            if (o.budget > 0 && res->graphs_explored >= o.budget) {
                res->stopped_by = 1;
                break;
            }
            if (out_of_time(&c)) break;
            state s = heap_pop(&c);
            if (s.cost >= o.alpha * c.best.cost && res->graphs_explored > 0) {
                so_graph_free(s.g); /* the best improved since it was queued */
                continue;
            }
            expand(&c, s.g, s.h);
            so_graph_free(s.g);
            progress(&c, 0);
        }
    }
    if (c.timed_out) res->stopped_by = 2;
    for (int32_t i = 0; i < c.n_heap; i++) so_graph_free(c.heap[i].g);
    free(c.heap);
    so_hmap_free(&c.seen);
    res->seconds = so_now() - c.t0;
    res->cost_after = c.best.cost;
    progress(&c, 1);
    /* the path: walk parents, then reverse */
    int32_t depth = c.best.h ? c.best.h->depth : 0;
    res->n_path = depth;
    res->path = so_xmalloc(((size_t)depth + 1) * sizeof *res->path);
    int32_t k = depth;
    for (hist *h = c.best.h; h; h = h->parent) res->path[--k] = h->rule;
    res->best = c.best.g;
    so_arena_free(&c.hist_arena);
    return SO_OK;
}

void so_search_result_free(so_search_result *res)
{
    so_graph_free(res->best);
    free(res->path);
    memset(res, 0, sizeof *res);
}
