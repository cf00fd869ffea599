/* match.h - finds a rule's source pattern in a graph (multi-output patterns, attributes, shape
   symbols, preconditions) and rewrites a match into a new graph (target nodes, redirect, fold, DCE). */
#ifndef SO_MATCH_H
#define SO_MATCH_H

#include "../rules/rule.h"
#include "fold.h"

/* One occurrence of a rule's source pattern in a graph. */
typedef struct so_match {
    const so_rule *rule;
    int32_t rule_index;                    /* caller's index of the rule (e.g. in the search's rule list) */
    int32_t node[SO_RULE_MAX_NODES];       /* graph node of source pattern node p */
    so_edge var[SO_RULE_MAX_INPUTS];       /* graph edge bound to rule input v */
    int64_t sym[SO_RULE_MAX_SYMS];         /* value of each dimension symbol */
} so_match;

/* Per-graph lookup tables for matching: nodes per op and users per node. Built once per graph
   (O(nodes + edges)); the graph must not change while the index is used. */
typedef struct so_match_index {
    const so_graph *g;
    int32_t *op_start, *op_nodes;          /* CSR: nodes of op o are op_nodes[op_start[o]..op_start[o+1]) */
    int32_t *use_start;                    /* CSR over nodes: users of node i (any slot) */
    int32_t *use_node, *use_k;             /* user node and its input position */
    int32_t *n_uses;                       /* uses of node i (node inputs + graph outputs) */
    char *is_output;                       /* node i feeds a graph output */
    double deadline;                       /* so_cpu_now() time (the thread's CPU seconds) after
                                              which enumerations stop early (0, as
                                              so_match_index_init leaves it: none); checked every
                                              few thousand candidate nodes */
    int64_t *work;                         /* if not NULL: every candidate node tried adds 1 (the
                                              searches' deterministic work count) */
    int64_t work_limit;                    /* with work: enumerations stop once *work reaches it
                                              (0: none) */
    int *expired;                          /* if not NULL, set to 1 when the deadline or the work
                                              limit cut an enumeration short (its count is then
                                              partial) */
    int share_reorders;                    /* 1: an intermediate nchwc_in / nchwc_out of the source
                                              pattern may have users outside the match (the rewrite
                                              then keeps it for them); 0 (init): never */
} so_match_index;

/* Builds the index of g (caller frees with so_match_index_free). */
void so_match_index_init(so_match_index *ix, const so_graph *g);
void so_match_index_free(so_match_index *ix);

/* Called once per match; return nonzero to stop the enumeration. The match is only valid
   during the call (copy it to keep it). */
typedef int (*so_match_fn)(const so_match *m, void *ud);

/* Enumerates every match of r's source pattern in ix->g: operators, arity, attributes, shape
   symbols (consistent across inputs and list attributes), preconditions; injective on nodes;
   intermediate pattern outputs not in the output map have no users outside the match; no
   rule input is bound to an output of a matched node; opaque nodes are never matched.
   Returns the number of matches reported; stops early (fewer matches) once ix->deadline has
   passed or *ix->work has reached ix->work_limit. */
int so_match_rule(const so_match_index *ix, const so_rule *r, int32_t rule_index, so_match_fn fn, void *ud);

/* Same, restricted to matches that include graph node `anchor` (the incremental form). */
int so_match_rule_at(const so_match_index *ix, const so_rule *r, int32_t rule_index, int32_t anchor,
                     so_match_fn fn, void *ud);

/* Same, with the anchor taken as source pattern node a only. */
int so_match_rule_at_node(const so_match_index *ix, const so_rule *r, int32_t rule_index, int a, int32_t anchor,
                          so_match_fn fn, void *ud);

/* Filter key of a node for anchored matching: operator, arity, outputs and the attribute
   fields the operator uses (so_attr_used); with ignore_ints the int list is left out (for
   pattern nodes whose list is symbolic: split sizes, const shapes). A graph node can match
   pattern node p only if so_match_node_key(graph node, p->n_dx > 0) equals
   so_match_node_key(p, p->n_dx > 0). */
uint64_t so_match_node_key(so_op op, int n_in, int n_out, const so_attr *a, int ignore_ints);

/* Applies match m to g: adds the target nodes (symbols substituted; CONST_* and weight-only
   nodes folded into weights through fc), redirects every use of each mapped source output to
   the target output, toposorts (a cycle rejects the rewrite), removes dead nodes, infers
   shapes of the new nodes and checks that each mapped output keeps its shape. On success
   *out is a new graph over the same model (caller frees); g is unchanged. On failure
   (SO_ERR) the message says why the rewrite does not apply. */
so_status so_rewrite(const so_graph *g, const so_match *m, so_fold_ctx *fc, so_graph **out);
/* Same; when origin != NULL, *origin receives (malloc'd, caller frees; NULL on failure) for
   each node of *out the index of the node of g it is (its inputs may have been redirected),
   or -1 for nodes the rewrite added (target nodes, folded weights). */
so_status so_rewrite_track(const so_graph *g, const so_match *m, so_fold_ctx *fc, so_graph **out, int32_t **origin);

/* Builds in `scratch` (a graph over g->model; its nodes are discarded first) the target nodes
   of m as the rewrite would add them, for costing without building the new graph: one
   placeholder per rule input (a WEIGHT node with the same weight when the bound edge is a
   weight, else an INPUT-like node with ref -1), then the target nodes with symbols
   substituted and shapes inferred; target nodes on weights only are folded through fc into
   WEIGHT nodes when their outputs total at most fold_limit elements (else left as nodes whose
   inputs are placeholders). *first receives the index of the first target node; nodes
   from *first on that are not sources are the work the rewrite adds. Fails when a target node
   does not type-check or a mapped output would change shape. outs (may be NULL) receives, per
   rule output, the scratch edge that replaces it. */
so_status so_rewrite_preview(const so_graph *g, const so_match *m, so_fold_ctx *fc, int64_t fold_limit,
                             so_graph *scratch, int32_t *first, so_edge *outs);

/* Estimated change in node count if m were applied: target nodes that are not folded minus
   source nodes. Cheap, no graph built. */
int so_rewrite_node_delta(const so_graph *g, const so_match *m);

#endif
