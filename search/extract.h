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

typedef struct so_extract_result {
    int32_t *choice;            /* per class id: the chosen e-node, -1 where not needed (malloc'd, n_cls entries) */
    double cost;                /* DAG cost of the choice: each chosen e-node counted once */
    double greedy_cost;         /* DAG cost of the greedy choice (before the start graph's choice is compared) */
    int method;                 /* so_extract_method */
    int32_t ilp_vars, ilp_rows; /* 0 when the ILP was not tried */
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
   ilp_node_limit (0: never), under time_limit seconds (GLPK's tm_lim); otherwise, or when GLPK
   finds nothing better, the greedy choice is kept. Caller frees out->choice. */
so_status so_extract(so_egraph *eg, const double *node_cost, const int32_t *roots, int32_t n_roots, int64_t ilp_node_limit,
                     double time_limit, so_extract_result *out);

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
                         double time_limit, so_extract_result *out);

/* DAG cost of a choice, each chosen e-node priced in context (so_extract_costs). */
double so_extract_dag_cost_ctx(so_egraph *eg, const so_extract_costs *ec, const int32_t *choice, const int32_t *roots, int32_t n_roots);

/* DAG cost of a choice from the roots: the sum of the chosen e-nodes' costs, each class once
   (INFINITY if a needed class has no choice). */
double so_extract_dag_cost(so_egraph *eg, const double *node_cost, const int32_t *choice, const int32_t *roots, int32_t n_roots);

#endif
