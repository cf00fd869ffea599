/* eqsat.h - equality saturation (Tensat-style) as a search strategy: the start graph in an e-graph,
   the proven rules applied (single- and multi-output, multi-root patterns) until saturation or a
   node / iteration / time limit, then extraction (search/extract.h) under the same cost models. */
#ifndef SO_EQSAT_H
#define SO_EQSAT_H

#include "egraph.h"
#include "search.h"

/* Limits (0: the default). */
typedef struct so_eqsat_opts {
    int64_t node_limit;         /* stop applying rules once the e-graph has this many live e-nodes (default 30000) */
    int32_t iter_limit;         /* iterations of match-all-then-apply-all (default 12) */
    int32_t multi_iters;        /* iterations in which rules with several root patterns of different operators
                                   are matched (default 2; Tensat's k_multi: their matches multiply with the
                                   e-graph); merges (roots of one operator) run every iteration as chains */
    int32_t match_cap;          /* matches applied per rule per iteration (default 4000; a quarter of it for
                                   rules with several roots) */
    int64_t ilp_node_limit;     /* e-nodes above which extraction is greedy only (default 3000) */
    int64_t work_limit;         /* e-matching work (e-nodes tried against a pattern node, all iterations) after
                                   which saturation stops (default 6e7): the deterministic bound, where a
                                   time limit would make the e-graph depend on the machine's load */
} so_eqsat_opts;

/* Equality saturation from start (canonicalised, toposorted, shapes inferred) with rules[0..n)
   (each direction its own rule, as the other strategies take them). Saturation stops at the
   deterministic limits above (so the result does not depend on the machine's load); the phase
   deadlines are in the thread's CPU time, a safety net: opts->time_limit (default 8) s, saturation
   until 50 % of it, e-node costing until 70 % (new e-nodes not priced by then are never extracted:
   under measured costs each new configuration is timed), the moves until 75 %, the polish (each
   used rule application undone with its merge chain, kept when the whole graph, so_cost_graph,
   prices lower) until 85 %, merge moves (each unused merge taken, kept when the whole graph prices
   lower) until 95 %. Merge rules (roots of one operator) are matched as canonical chains of
   consecutive start-graph leaves (search/README.md "Merge chains"). E-node costs: a start-graph
   node costs what it costs in the start graph as the executor runs it (so_cost_roles: a fused
   epilogue 0, or its own pass when its operand is extracted as a split projection); an e-node a
   rule added costs its configuration alone (so_cost_node), 0 when it computes from weights only
   (folded) or is a zero-copy split; every non-source e-node adds 1e-9 so that ties prefer fewer
   nodes. The extracted graph is canonicalised and priced with so_cost_graph; the start graph is
   returned instead when it is not dearer. res is filled as so_search_run does (path: one entry per
   rule application whose e-nodes the extracted graph uses, in application order), and res->eqsat. */
so_status so_eqsat_run(const so_graph *start, const so_rule *rules, int32_t n_rules, so_cost_model *cm, so_fold_ctx *fc,
                       const so_search_opts *opts, const so_eqsat_opts *eo, so_search_result *res);

#endif
