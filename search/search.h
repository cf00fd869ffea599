/* search.h - graph search over rule rewrites: TASO's cost-ordered backtracking search, a greedy
   baseline, equality saturation (search/eqsat.h) and "none" (canonicalisation only). */
#ifndef SO_SEARCH_H
#define SO_SEARCH_H

#include <stdio.h>

#include "../rules/rule.h"
#include "cost.h"
#include "fold.h"

typedef enum so_search_kind { SO_SEARCH_NONE = 0, SO_SEARCH_GREEDY = 1, SO_SEARCH_BACKTRACK = 2, SO_SEARCH_EQSAT = 3 } so_search_kind;

/* Work units: one per candidate node the matcher tries (search/match.h work), per anchored match
   call and per node of a previewed rewrite; SO_SEARCH_BUILD_WORK per node of a built graph (clone,
   canonicalisation, hashes, roles, costs). They are what a search does, independent of the machine's
   load and speed, so a search stopped by its work limit finds the same graph on every run with the
   same costs. The default is sized so that every search of the literature models stays well within
   10 s on the reference machine (search/README.md "Limits"). */
#define SO_SEARCH_WORK_DEFAULT ((int64_t)20000000)
/* Work units per node of a built graph: building one (clone, canonicalisation: two topological sorts,
   common subexpressions, dead nodes; hashes, roles, costs) takes 2-3x a matcher's unit per node
   (nasnet_a's two searches, session 15, Intel Xeon). At one unit, that model's first search spent 4/5
   of its time building graphs and reached the CPU-time safety net before its work limit or budget. */
#define SO_SEARCH_BUILD_WORK 2

typedef struct so_search_opts {
    int kind;                   /* so_search_kind */
    double alpha;               /* keep graphs with cost < alpha * best (backtrack); default 1.05 */
    int64_t budget;             /* most graphs popped from the queue (backtrack) or greedy steps */
    int64_t work_limit;         /* deterministic work limit (SO_SEARCH_WORK units, below) of greedy, and
                                   again of backtracking after its greedy warm start; 0:
                                   SO_SEARCH_WORK_DEFAULT; < 0: none */
    double time_limit;          /* safety net: CPU seconds of the calling thread, time spent timing new
                                   cost configurations not counted (so that the run that fills a cost
                                   table stops where the runs that read it stop); <= 0: none */
    int progress;               /* 1: progress line on stderr at most once a second */
    int queue_cap;              /* most graphs kept in the queue (the costliest are dropped); 0: 20000 */
    int verify_incremental;     /* tests: also match every derived graph from scratch and count
                                   differences with the incremental matches (slow) */
    FILE *trace;                /* not NULL: greedy and backtracking write one line per graph they expand
                                   (its exact cost, depth, rewrite path); search/README.md "Tracing" */
    const char *const *labels;  /* the rules' names in trace lines (NULL: their indices) */
} so_search_opts;

typedef struct so_search_result {
    so_graph *best;             /* owned by the caller (so_graph_free) */
    double cost_before, cost_after;
    int64_t graphs_explored;    /* graphs popped and expanded */
    int64_t graphs_generated;   /* rewrites applied and costed (new graphs) */
    int64_t matches;            /* matches found */
    int64_t rejected;           /* matches whose rewrite did not apply (cycle, shapes) */
    int64_t duplicates;         /* rewrites yielding an already seen graph */
    int64_t materialized;       /* rewritten graphs built (exact cost) */
    int64_t full_passes;        /* whole-graph matching passes (every rule over every node) */
    int64_t carried;            /* matches carried over from a parent graph unchanged */
    int64_t anchors;            /* dirty nodes re-matched (rules with that node's operator) */
    int64_t incremental_mismatches; /* with opts.verify_incremental: matches missing or extra */
    int64_t greedy_explored;    /* backtrack: graphs explored by the greedy warm start */
    int64_t probes;             /* backtrack: chain probes (an uphill rewrite, then the same rule while it improves) */
    int64_t preview_bounded;    /* previews whose lower bound put the rewrite out of reach: nothing
                                   timed (search.c PREVIEW_RATE_SLACK) */
    int64_t confirm_timed;      /* backtrack, measured: configurations re-timed to confirm that
                                   the best graph beats greedy's (0: no confirmation needed) */
    int confirm_vetoed;         /* 1: it did not, greedy's graph was returned */
    double seconds;             /* wall */
    double cpu_seconds;         /* CPU time of the calling thread, timing new cost configurations excluded */
    int stopped_by;             /* 0 exhausted, 1 budget, 2 time limit (the safety net), 3 work limit */
    int64_t work;               /* work units spent (greedy warm start included) */
    int64_t built_nodes;        /* nodes of the graphs built (materialized or rejected), each
                                   SO_SEARCH_BUILD_WORK units of work */
    so_graph *greedy_best;      /* backtrack: the greedy warm start's graph (owned by the caller),
                                   which is what --search greedy finds with the same options */
    double greedy_cost;
    int32_t n_greedy_path;      /* backtrack: the warm start's rewrites, as path (malloc'd) */
    int32_t *greedy_path;
    int32_t n_path;             /* rewrites on the path from the input to best */
    int32_t *path;              /* rule indices (into the rules array), in order; malloc'd */
    struct so_eqsat_stats {     /* eqsat only (search/eqsat.h) */
        int64_t enodes, eclasses;       /* live e-nodes and classes at the end of saturation */
        int64_t iterations, applied;    /* iterations run; rule matches applied */
        int64_t dropped_cyclic, congruences; /* e-nodes dropped by cycle filtering; congruence merges */
        int64_t banned;                 /* backoff bans (a rule's matches of one iteration dropped, search/eqsat.c) */
        int stop;                       /* 0 saturated, 1 node limit, 2 iteration limit, 3 time limit, 4 work limit */
        int extract_method;             /* so_extract_method (search/extract.h) */
        double extract_cost, greedy_cost; /* the extraction's e-node cost sum (ILP or greedy), greedy's */
        double saturate_seconds, cost_seconds, extract_seconds;
        int32_t ilp_vars, ilp_rows;
        int ilp_stop;                   /* so_ilp_stop (search/extract.h): what stopped the ILP */
        int32_t ilp_bb_nodes;           /* branch-and-bound subproblems */
        int64_t ilp_iters;              /* simplex iterations */
        int start_kept;                 /* 1: the extracted graph was not cheaper than the start graph */
        int64_t unpriced;               /* new e-nodes not priced by the costing deadline (never extracted) */
        int64_t polished;               /* rule applications undone after extraction because the whole graph priced lower */
        int64_t merged;                 /* merge applications taken after extraction because the whole graph priced lower */
        char why_greedy[96];
    } eqsat;
} so_search_result;

/* Searches from start (canonicalised, topologically sorted, shapes inferred) using rules[0..n).
   Rewrites come only from rules; the only other changes are canonicalisations (fc).
   The result's best graph is never costlier than start under cm. */
so_status so_search_run(const so_graph *start, const so_rule *rules, int32_t n_rules, so_cost_model *cm,
                        so_fold_ctx *fc, const so_search_opts *opts, so_search_result *res);
void so_search_result_free(so_search_result *res);

/* Replays a rule sequence from start, for tracing a path the search does not take (search/README.md
   "Tracing"): step k builds every match of rules[script[k]] in the current graph (exact costs, start
   canonicalised as for so_search_run) and moves to the cheapest; one line per step on opts->trace (if
   set). *n_done: steps taken (a step with no applicable match ends the replay); *cost_end: the cost of
   the last graph, *cost_max: the highest cost on the path (start included); end not NULL: *end
   receives the last graph (owned by the caller). */
so_status so_search_replay(const so_graph *start, const so_rule *rules, int32_t n_rules, so_cost_model *cm,
                           so_fold_ctx *fc, const so_search_opts *opts, const int32_t *script, int32_t n_script,
                           int32_t *n_done, double *cost_end, double *cost_max, so_graph **end);

/* The result becomes backtracking's greedy warm start (res->greedy_best and its path, taken; both
   must be there), or with start not NULL a copy of start at cost cost_start with no rewrites. */
void so_search_take(so_search_result *res, const so_graph *start, double cost_start);

/* The runtime-neutral check of a result written as standard ONNX for other runtimes (--layout none
   under measured costs; search/README.md "Standard ONNX"): res->best is kept only if it costs no
   more than start under the FLOP/byte model with zero-copy concats/splits priced as copies; else
   backtracking's greedy warm start's graph if that one passes, else start (res->cost_before). */
typedef struct so_standard_check {
    int ran;
    double before, searched, greedy; /* FLOP/byte cost of start, of res->best, of the greedy graph (-1: not priced) */
    int kept;                        /* 0 the searched graph, 1 greedy's, 2 start */
} so_standard_check;
void so_search_standard_check(const so_graph *start, so_search_result *res, int threads, so_standard_check *sc);

#endif
