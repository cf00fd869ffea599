/* extract.h - extraction from an acyclic e-graph: one e-node per needed class at least DAG cost, by
   integer linear programming (GLPK) with a greedy bottom-up fallback and warm start. */
#ifndef SO_EXTRACT_H
#define SO_EXTRACT_H

#include "egraph.h"

typedef enum so_extract_method {
    SO_EXTRACT_GREEDY = 0,      /* bottom-up: each class its e-node of least tree cost */
    SO_EXTRACT_ILP_OPTIMAL = 1, /* the ILP solved to optimality */
    SO_EXTRACT_ILP_FEASIBLE = 2, /* the ILP stopped at its time limit with a solution (at most greedy's cost) */
    SO_EXTRACT_MOVES = 3,       /* the best of the above, improved by whole-rewrite moves (search/eqsat.c) */
    SO_EXTRACT_START = 4        /* the start graph's own e-nodes (cheaper than greedy's choice; the ILP found nothing better) */
} so_extract_method;

/* Why the ILP stopped (so_extract_result.ilp_stop). Every limit but the last counts work, not time:
   the same e-graph and costs stop the same way on any machine at any load. */
typedef enum so_ilp_stop {
    SO_ILP_NOT_RUN = 0,         /* not tried (off, or the e-graph over ilp_node_limit) */
    SO_ILP_FINISHED = 1,        /* GLPK finished: the optimum, or it proved none better than the incumbent */
    SO_ILP_LP_ITERS = 2,        /* the LP relaxation over so_extract_limits.lp_iters simplex iterations */
    SO_ILP_BB_NODES = 3,        /* branch and bound over bb_nodes subproblems */
    SO_ILP_BB_ITERS = 4,        /* branch and bound over bb_iters simplex iterations in all */
    SO_ILP_WALL = 5             /* the wall-clock backstop (GLPK's tm_lim) fired: load-dependent, reported */
} so_ilp_stop;

/* The ILP's limits (0 in a field: its default). Deterministic work bounds, then a wall-clock
   backstop far above what they take, so that it fires only on a machine that is stalled. */
typedef struct so_extract_limits {
    int32_t lp_iters;           /* simplex iterations of the LP relaxation (GLPK it_lim; default 20,000) */
    int32_t bb_nodes;           /* branch-and-bound subproblems (glp_ios_tree_size's total; default 1,000) */
    int64_t bb_iters;           /* simplex iterations in all, relaxation included (glp_get_it_cnt; default 200,000) */
    double wall_backstop;       /* seconds of wall time (GLPK tm_lim for the relaxation and the search; default 120) */
} so_extract_limits;

typedef struct so_extract_result {
    int32_t *choice;            /* per class id: the chosen e-node, -1 where not needed (malloc'd, n_cls entries) */
    double cost;                /* DAG cost of the choice: each chosen e-node counted once */
    double greedy_cost;         /* DAG cost of the greedy choice (before the start graph's choice is compared) */
    int method;                 /* so_extract_method */
    int32_t ilp_vars, ilp_rows; /* 0 when the ILP was not tried */
    int ilp_stop;               /* so_ilp_stop */
    int32_t ilp_bb_nodes;       /* branch-and-bound subproblems GLPK created */
    int64_t ilp_iters;          /* simplex iterations, relaxation and branch and bound */
    double seconds;
    char why_greedy[96];        /* why the ILP was not used ("" when it was) */
} so_extract_result;

/* Chooses, for every class needed by roots[0..n_roots) (every class a chosen e-node reads), one
   live e-node, minimising the sum of node_cost[e] over the chosen e-nodes (a class read twice is
   paid once). eg must be rebuilt (so_eg_rebuild) and acyclic, as so_eg_merge keeps it. The
   incumbent is the cheaper of the greedy choice and the start graph's e-nodes (orig >= 0; greedy's
   choice where a class has none). The ILP:
   binary x_e per live e-node of the classes reachable from the roots; sum over a root class >= 1;
   for e-node e and each child class d, sum over d >= x_e; minimise sum node_cost[e] x_e; the greedy
   choice is handed to GLPK as its first incumbent. It is tried when the e-nodes number at most
   ilp_node_limit (0: never), under the limits lim (NULL: the defaults); the incumbent GLPK holds
   when a limit stops it is its answer (the same every time, but for the wall backstop). Otherwise,
   or when GLPK finds nothing better, the incumbent is kept. Caller frees out->choice. */
so_status so_extract(so_egraph *eg, const double *node_cost, const int32_t *roots, int32_t n_roots, int64_t ilp_node_limit,
                     const so_extract_limits *lim, so_extract_result *out);

/* The name of an so_ilp_stop ("not-run", "finished", "lp-iterations", "bb-nodes", "bb-iterations",
   "wall-backstop"). */
const char *so_ilp_stop_name(int stop);

/* E-node costs. alt (may be NULL): per e-node, -1 or the cost when its context breaks (see ctx);
   ctx[e]: 1 the first child, 2 every child: when the chosen e-node of such a child class is a
   projection, split or concat, e costs alt[e] rather than cost[e] (a batchnorm the executor fuses
   into the conv before it runs as its own pass after a merged-then-split conv; a zero-copy concat
   of split outputs is a copy). Greedy, the incumbents and the DAG costs price in context; the ILP
   with cost[] alone (its solution is then priced in context before it is compared). */
typedef struct so_extract_costs {
    const double *cost;
    const double *alt;
    const uint8_t *ctx;
} so_extract_costs;

/* so_extract with context-priced costs. */
so_status so_extract_ctx(so_egraph *eg, const so_extract_costs *ec, const int32_t *roots, int32_t n_roots, int64_t ilp_node_limit,
                         const so_extract_limits *lim, so_extract_result *out);

/* DAG cost of a choice, each chosen e-node priced in context (so_extract_costs). */
double so_extract_dag_cost_ctx(so_egraph *eg, const so_extract_costs *ec, const int32_t *choice, const int32_t *roots, int32_t n_roots);

/* DAG cost of a choice from the roots: the sum of the chosen e-nodes' costs, each class once
   (INFINITY if a needed class has no choice). */
double so_extract_dag_cost(so_egraph *eg, const double *node_cost, const int32_t *choice, const int32_t *roots, int32_t n_roots);

#endif
