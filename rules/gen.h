/* gen.h - the rule generator: enumerate graphs, bucket by fingerprint, pair candidates, prune,
   generalise shapes to symbols, re-test in float, verify, write (commands in cli/cmd_generate.c). */
#ifndef SO_GEN_H
#define SO_GEN_H

#include "enum.h"
#include "rule.h"

typedef struct so_gen_options {
    int max_ops;            /* default 3 */
    int threads;            /* default 1 */
    int shard_i, shard_n;   /* --shard I/N (0/1 = everything) */
    uint64_t seed;          /* default 1 */
    int quiet;
    int verify;             /* 1: prove with Z3 and keep proved rules only; 0: keep unverified */
    int float_test;         /* 1: re-test candidates in float with the reference kernels */
    int proof_times;        /* 1: write proof seconds into the file (not byte-reproducible) */
    double timeout_s;       /* per-rule proof timeout */
    const char *failed_path; /* if set, candidates that failed the proof are written there */
    const gen_universe *universe; /* NULL: gen_universe_default, then the layout universes of
                                     blocks 8 and 16 (unless no_layout), results merged */
    int no_layout;          /* 1: without the layout universes */
    const char *ckpt_path;  /* if set, verification progress is checkpointed there (atomically,
                               at most every SO_GEN_CKPT_INTERVAL seconds, default 2) */
    int resume;             /* 1: continue from ckpt_path if it exists; a checkpoint of other
                               options, seed, candidates or binary is refused (SO_ERR) */
} so_gen_options;

void so_gen_options_default(so_gen_options *o);

typedef struct so_gen_stats {
    int64_t graphs;              /* distinct graphs enumerated */
    int64_t kept;                /* graphs with 1..2 outputs (connected), recorded */
    int64_t bucketed;            /* of those, graphs whose key occurs more than once */
    int64_t classes;             /* fingerprint classes with >= 2 graphs */
    int64_t collisions;          /* hash buckets that held graphs with different fingerprints */
    int64_t candidates;          /* pairs of graphs with equal fingerprints */
    int64_t after_trivial;
    int64_t after_renaming;
    int64_t after_common_subgraph;
    int64_t in_shard;            /* generalised candidates in this shard (structure-key hash) */
    int64_t after_generalise;
    int64_t after_subsumed;      /* last stage: instances of a more general rule of the same
                                    structure dropped (also applied by merge) */
    int64_t after_float;
    int64_t proved;
    int64_t rules;
    double seconds, enum_seconds, bucket_seconds, float_seconds, verify_seconds;
} so_gen_stats;

/* Runs the generator; *out receives the rules (sorted, deterministic). Caller frees. */
so_status so_gen_run(const so_gen_options *o, so_ruleset *out, so_gen_stats *st);

/* 1 if a pattern of r has a layout operator (SO_F_LAYOUT). */
int so_rule_has_layout(const so_rule *r);

/* Sort key order used for every generated file (and by merge): rules without layout operators
   first (so that adding layout rules does not renumber the others), then fewer nodes, then text. */
void so_gen_sort(so_ruleset *rs);

/* Merges shards in place: sort (so_gen_sort) and drop exact duplicates; renumbers ids. */
void so_gen_merge(so_ruleset *all);

/* Builds the rule for the candidate (src graph a, dst graph b) of universe u with shape
   generalisation; returns SO_ERR if the shapes cannot be generalised. Exposed for tests. */
so_status so_gen_make_rule(const gen_universe *u, const gen_graph *src, const gen_graph *dst, so_rule *r);

/* Pruning predicates on a candidate, exposed for tests. */
int so_gen_trivial(const gen_universe *u, const gen_graph *a, const gen_graph *b);
int so_gen_common_subgraph(const gen_universe *u, const gen_graph *a, const gen_graph *b);
/* Same root operator over operands that are identical or have equal fingerprints: implied by
   the smaller candidates on the operands (single-output candidates). */
int so_gen_common_suffix(const gen_universe *u, const gen_inputs *in, const gen_graph *a, const gen_graph *b);
/* Implied by smaller candidates through common (sub)values: two distinct tensors of the pair
   (other than a mapped output pair) have equal fingerprints, e.g. the same operand commuted
   inside both graphs; or both graphs compute their two outputs from disjoint nodes. */
int so_gen_value_redundant(const gen_universe *u, const gen_inputs *in, const gen_graph *a, const gen_graph *b);
/* Renaming-canonical hash (min over permutations of interchangeable variables). */
uint64_t so_gen_orbit_hash(const gen_universe *u, const gen_graph *a, const gen_graph *b, uint64_t *self_hash);

/* Drops rules that are instances of another rule of the same structure (positional input
   names); ties between mutual instances keep the earlier rule. Returns the number dropped. */
int32_t so_gen_drop_subsumed(so_ruleset *rs);

/* Fingerprint classes: splits a run of graphs with equal key into classes of equal full
   fingerprints; cls[i] receives a class id per graph (0-based, in first-seen order).
   Returns the number of classes. */
int so_gen_split_bucket(const gen_universe *u, const gen_inputs *in, const gen_graph *g, int n, int *cls);

#endif
