/* fold.h - canonicalisation: constant folding of weight-only nodes into new weights (memoised,
   deduplicated by content), common-subexpression elimination, Identity removal, dead-node
   removal, topological order. */
#ifndef SO_FOLD_H
#define SO_FOLD_H

#include "../src/graph.h"
#include "../src/hmap.h"

/* Folding state for one model: memo of (op, attributes, input weights) -> result weights and a
   content index (hash, shape) -> weight id, so that a search that folds the same constant
   many times adds one weight. Not thread-safe. */
typedef struct so_fold_ctx {
    so_model *m;                /* not owned; weights are added to it */
    so_hmap memo;               /* key -> index into ids[] of the first output */
    so_hmap content;            /* content key -> weight id */
    int32_t *ids;               /* result weight ids, n_out consecutive per memo entry */
    int32_t n_ids, cap_ids;
    int64_t max_elems;          /* outputs bigger than this are not folded (default 1<<24) */
    int64_t max_total_bytes;    /* no more folding once weights added reach this (default 1 GiB) */
    int64_t bytes_added;        /* bytes of weights added by folding */
    int64_t evaluated;          /* nodes evaluated with the reference kernels */
    int64_t weights_added;
    so_hmap standin;            /* shape key -> stand-in weight id (so_fold_standin) */
} so_fold_ctx;

/* The attribute fields op uses (as the rule language reads and prints them, rules/RULES.md)
   copied into a zeroed set; others (e.g. Conv's kernel, which importers take from the weight)
   are dropped. Rule patterns are compared with graph nodes on these fields. */
so_attr so_attr_used(so_op op, const so_attr *a);
/* Id of a model weight of shape *sh filled with zeros, one per distinct shape (memoised): a
   stand-in for a weight a rewrite would fold, where only its shape matters (costing a preview). */
int32_t so_fold_standin(so_fold_ctx *fc, const so_shape *sh);

/* Canonicalisation of attributes: every non-source, non-opaque node gets so_attr_used of its
   attributes, so that equal operators hash and cost equal whether imported or made by a rule.
   Returns the number of nodes changed. */
int so_normalize_attrs(so_graph *g);

void so_fold_init(so_fold_ctx *fc, so_model *m);
void so_fold_free(so_fold_ctx *fc);

/* 1 if node i of g can be folded now: not a source, not opaque, every input a WEIGHT node
   (or no inputs and a CONST_* op), outputs known and not larger than fc->max_elems. */
int so_fold_can(const so_fold_ctx *fc, const so_graph *g, int32_t i);

/* Evaluates node i with the reference kernels and stores its outputs as weights;
   wids[0..n_out) receive the weight ids. Memoised. */
so_status so_fold_node(so_fold_ctx *fc, const so_graph *g, int32_t i, int32_t *wids);

typedef struct so_canon_stats {
    int32_t folded, identities, dead, cse;
} so_canon_stats;

/* Canonicalises g in place: removes Identity nodes, folds every foldable node (repeatedly,
   so weight-only chains become one weight), merges nodes that compute the same value (same
   operator, attributes and inputs; weights with equal content) so that each value exists once,
   toposorts, removes dead nodes. Shapes of
   existing nodes must be inferred. stats may be NULL. On error g may be partly changed
   (the caller discards it). */
so_status so_canonicalize(so_fold_ctx *fc, so_graph *g, so_canon_stats *stats);
/* Same, tracking node identity: *origin (malloc'd, one entry per node of g on entry) is
   permuted, compacted and reallocated along with the nodes, so that on return (*origin)[j] is
   the entry of the node that node j was on entry, and -1 for nodes canonicalisation added
   (folded weights). origin may be NULL. */
so_status so_canonicalize_track(so_fold_ctx *fc, so_graph *g, so_canon_stats *stats, int32_t **origin);

#endif
