/* enum.h - the generator's operator instances, input pool, modular-integer fingerprints and
   graph enumeration (every well-typed graph up to N operators, once up to isomorphism). */
#ifndef SO_ENUM_H
#define SO_ENUM_H

#include <stdint.h>

#include "../src/ops.h"
#include "../src/common.h"

#define GEN_MAX_OPS   4                      /* counted operators per graph (--max-ops) */
#define GEN_MAX_NODES (GEN_MAX_OPS + 1)      /* + one free node (weight-side concat, or an enlarge of a pseudo-variable) */
#define GEN_MAX_VARS  24
#define GEN_MAX_OUT   2                      /* outputs per node */
#define GEN_MAX_T     (GEN_MAX_VARS + GEN_MAX_OUT * GEN_MAX_NODES) /* tensor ids */
#define GEN_MAX_NIN   5
#define GEN_P         2147483647u            /* fingerprint modulus 2^31 - 1 */

/* Concrete small shape. */
typedef struct gen_type {
    int8_t rank;
    int16_t dim[5];          /* rank 5: a blocked value [n, c/b, h, w, b] (layout universe) */
} gen_type;

/* Role of an input variable: which operator inputs it may feed. */
typedef enum gen_role {
    GR_ANY = 0,      /* any operator input */
    GR_PARAM = 1,    /* only batchnorm / bnfold parameters and conv bias (per-channel vectors) */
    GR_ENLARGED = 2, /* enlarge(base): a free derived kernel; only feeds concat (axis 0) and add;
                        in a rule it becomes an explicit enlarge node on the base variable */
} gen_role;

typedef struct gen_var {
    char name[8];
    gen_type t;
    int8_t role;     /* gen_role */
    int8_t kernel;   /* rank-4 conv kernel: dims 2,3 stay concrete in rules */
    int8_t base;     /* GR_ENLARGED: the variable it enlarges; else -1 */
    int8_t chan;     /* layout universe: bit i set = dim i counts channels, generalised to b*k
                        (rank 1..4) or to the block count k (rank 5, dim 1) */
    int8_t fixed;    /* bit i set = dim i stays concrete in rules (a padded channel count: a stem's 3) */
} gen_var;

/* ops.def's generator decision for op: 1 if a universe enumerates it (the default one, or the layout
   ones), 2 if gen_universe_add_insts can instantiate it but no universe does, 0 if it is marked "not in
   rules" (never enumerated: no rule will mention it). The decisions are gen_<op> in gen_universe.c
   (an operator without one does not build); the coverage test (tests/test_ops.c) checks them against
   what gen_universe_add_insts instantiates. */
int gen_enumerates(so_op op);
/* 1 if op's decision puts it in the default universe (gen_universe_default), else 0. */
int gen_in_default(so_op op);

typedef struct gen_inst {
    int16_t op;      /* so_op: the ops.def operator this is an instance of */
    int8_t act;      /* so_act for matmul/conv */
    int8_t axis;     /* concat/split axis */
    int8_t n_in, n_out;
    int8_t stride;   /* conv / pool window stride (0: 1) */
    int8_t valid;    /* conv / pool without padding (0: same padding, k/2) */
    int8_t ceil;     /* pool ceil_mode (only without padding) */
    gen_type ct;     /* constants: concrete shape */
} gen_inst;

/* 1 if instance g has its operator's optional per-channel input: conv / conv_nchwc with a bias (3
   inputs), bnfold_b with the conv's bias variable (5 inputs). */
static inline int gen_biased(const gen_inst *g)
{
    return g->op == SO_OP_BNFOLD_B ? g->n_in == 5 : (g->op == SO_OP_CONV || g->op == SO_OP_CONV_NCHWC) && g->n_in == 3;
}

/* The enumeration universe: input variables and operator instances. */
typedef struct gen_universe {
    int n_vars;
    gen_var vars[GEN_MAX_VARS];
    int n_insts;
    gen_inst insts[64];
    int elems_max;   /* largest tensor size (elements) */
    int block;       /* layout universe: the block b of the layout instances (8 or 16); 0 otherwise */
    int kmax;        /* largest kernel plane dim (0: 3); rank-4 tensors with larger planes are activations */
    int padded;      /* layout universe: nchwc_in / conv_nchwc accept channel counts that are no multiple of
                        block (zero padding lanes; the stem universes, whose 3 channels stay concrete) */
    int dw;          /* layout universe: convs with a kernel [C,1,kh,kw] on C channels are depthwise (group=dw in
                        rules: the group is the symbolic channel count, SO_RULE_GROUP_DW), blocked too */
    int group;       /* layout universe: convs of this concrete group (> 1) on G*q channels, kernel [G*q,q,kh,kw]
                        (ResNeXt's group 32), the per-group channels q symbolic; blocked too */
    int8_t bn_param[4]; /* batchnorm scale, bias, mean, var variables (-1: none) */
    int8_t sib[2];      /* 1 + index of the sibling 1x1 kernel L and of its conv bias c (0: none): L
                           feeds only conv weights and an axis-0 concat with K, c only L's conv bias
                           and an axis-0 concat with b; such concats of two variables are weight-side
                           ("free") nodes outside --max-ops (at most GEN_MAX_FREE, enum.c) */
} gen_universe;

/* Node of an enumerated graph: instance and input tensor ids (var v -> v; output s of
   node k -> n_vars + GEN_MAX_OUT * k + s). */
typedef struct gen_node {
    uint8_t inst;
    uint8_t in[GEN_MAX_NIN];
} gen_node;

/* One enumerated graph with its fingerprint key. */
typedef struct gen_graph {
    uint64_t key;            /* XXH3 of (input mask, n_out, output hashes) */
    uint64_t canon;          /* structural hash (sorted node hashes) for ordering */
    uint32_t mask;           /* input variables used */
    uint8_t n_nodes, n_out;
    uint8_t out[GEN_MAX_OUT]; /* output tensor ids, ordered by type then values */
    gen_node nodes[GEN_MAX_NODES];
} gen_graph;

/* An empty universe (no variables, no instances). */
void gen_universe_init(gen_universe *u);
void gen_universe_add_var(gen_universe *u, const char *name, int rank, const int *dims, int role, int kernel);
/* Adds enlarge(v) pseudo-variables (3x3) for every kernel variable smaller than 3x3. */
void gen_universe_add_enlarged(gen_universe *u);
/* The default universe (TASO-like operator set, see gen.c docs). */
void gen_universe_default(gen_universe *u);
/* The layout universe of block b (8 or 16): activations whose channels are a multiple of b, their
   blocked forms, 1x1 and 3x3 kernels; reorders, blocked convs, convs, element-wise ops and
   channel concat. Its rules are the exact-blocking layout rules (RULES.md). */
void gen_universe_layout(gen_universe *u, int block);
/* Extended layout universes of block b: part 0 strided (stride 2) and unpadded 3x3 convs with their
   batchnorm folds, part 1 pools (3x3 max pooling stride 2 same-padded, unpadded, ceil_mode; 3x3/1
   unpadded average; global average), each with the reorders and its blocked forms, on 6x9 planes;
   parts 2..6 stride-1 convs with a 1x3, 3x1, 5x5, 1x7 or 7x1 kernel and their folds, on 9x11 planes;
   parts 7..9 stems: a stride-2 conv (7x7 pad 3, 3x3 pad 1, 3x3 unpadded) of 3 input channels (concrete,
   padded to one block: u->padded) and its folds, on 17x19 planes; part 10 the classifier: a 1x1 conv of b*k
   channels to 1000 (concrete, padded to 63 blocks of 16), its relu and global average pool, plain and blocked;
   parts 11, 12 depthwise convs (u->dw; kernel D[b*k,1,3,3] on 6x9 planes, D[b*k,1,5,5] on 9x11) at stride 1 and 2
   (same padding), plain and blocked, with and without bias, and their batchnorm folds; part 13 grouped 3x3 convs of
   group 32 (u->group; ResNeXt-50 32x4d: kernel G[2*32,2,3,3] on 64 channels, channels 32*q in rules) likewise. */
void gen_universe_layout_ext(gen_universe *u, int block, int part);
/* Output size of instance g's window (kernel k) over an input of size in: stride, padding (same
   k/2 or none), ceil_mode; 0 if the window does not fit. */
int gen_win_out(const gen_inst *g, int in, int k);
/* Makes u the universe being enumerated (its kernel size bound); call before enumerating it. */
void gen_universe_activate(const gen_universe *u);
/* The instances of each operator of ops[0..n_ops), in that order: matmul and conv with acts {none, relu}
   (conv and conv_nchwc without, then with a bias input), concat and split on axes 0..3, bnfold_b
   without, then with the conv's bias variable, the constants at their small shapes; an operator
   marked not in rules gets none. */
void gen_universe_add_insts(gen_universe *u, const so_op *ops, int n_ops);

/* Seeded random residues for every input variable; values[v] malloc'd arrays. */
typedef struct gen_inputs {
    uint32_t *val[GEN_MAX_VARS];
} gen_inputs;
void gen_inputs_make(const gen_universe *u, uint64_t seed, gen_inputs *in);
void gen_inputs_free(gen_inputs *in);

/* Hash of a residue vector with its type; replaceable for tests (forced collisions). */
extern uint64_t (*gen_value_hash)(const uint32_t *v, int64_t n, const gen_type *t);
uint64_t gen_value_hash_default(const uint32_t *v, int64_t n, const gen_type *t); /* XXH3 */

/* Enumeration: every graph with 1..max_ops nodes (plus the 0-node graphs of single
   variables and ordered pairs of distinct variables of equal type group); graphs with
   1..2 outputs that are connected are kept. Deterministic result order (sorted by key,
   canon) regardless of threads. *out malloc'd. *n_total counts all graphs visited. */
typedef struct gen_enum_stats {
    int64_t graphs;          /* distinct graphs enumerated (all output counts) */
    int64_t kept;            /* graphs with 1..2 outputs kept for bucketing */
} gen_enum_stats;
typedef void (*gen_progress_fn)(void *ctx, int64_t graphs, int64_t done_items, int64_t total_items);
so_status gen_enumerate(const gen_universe *u, const gen_inputs *in, int max_ops, int threads,
                        gen_graph **out, int64_t *n_out, gen_enum_stats *st,
                        gen_progress_fn progress, void *pctx);

/* Same, keeping only the graphs whose key is in shard shard_i of shard_n (key % shard_n):
   candidates pair graphs of one key, so shards produce disjoint candidate sets. */
so_status gen_enumerate_shard(const gen_universe *u, const gen_inputs *in, int max_ops, int threads, int shard_i,
                              int shard_n, gen_graph **out, int64_t *n_out, gen_enum_stats *st,
                              gen_progress_fn progress, void *pctx);

/* The enumeration's output partitioned by key (one pass, every graph evaluated once): each
   thread appends compact records (48 bytes) to per-partition buffers, spilled to unlinked temp
   files whenever a thread holds more than gen_spill_bytes, so memory stays bounded whatever the
   graph count. Partitions are disjoint in keys, so candidates never cross them and they can be
   bucketed independently (in parallel). gen_n_parts (0: 64 from 4 ops, else 8) and
   gen_spill_bytes (default 256 MB per thread) do not change any result. */
typedef struct gen_parts gen_parts;
extern int gen_n_parts;
extern int64_t gen_spill_bytes;
so_status gen_enumerate_parts(const gen_universe *u, const gen_inputs *in, int max_ops, int threads, int shard_i,
                              int shard_n, gen_parts **out, gen_enum_stats *st, gen_progress_fn progress, void *pctx);
int gen_parts_count(const gen_parts *P);
/* The graphs of partition k, sorted by (key, nodes, structure hash, nodes); drop_single drops
   graphs whose key occurs once (they cannot pair). Thread-safe for distinct k. *out malloc'd. */
so_status gen_parts_load(const gen_parts *P, int k, int drop_single, gen_graph **out, int64_t *n_out);
void gen_parts_free(gen_parts *P);

/* Evaluates graph g on the inputs: tensor values and types for every tensor id (variables'
   values are borrowed from in; node outputs live in one block; free with gen_eval_free, also
   after a 0 return). Returns 0 if ill-typed. */
typedef struct gen_eval {
    gen_type type[GEN_MAX_T];
    uint32_t *val[GEN_MAX_T];
    uint32_t *block;
} gen_eval;
int gen_eval_graph(const gen_universe *u, const gen_inputs *in, const gen_graph *g, gen_eval *ev);
void gen_eval_free(gen_eval *ev);
/* Evaluation memoises conv results in a per-thread table (21 MB, allocated on first use); a
   thread that evaluated frees it with gen_memo_release before it exits (the enumeration and
   so_gen_run do so for their threads). */
void gen_memo_release(void);

/* Output types of instance i on input types; 0 if ill-typed. split_cut: cut for split. */
int gen_typecheck(const gen_universe *u, int inst, const gen_type *in, int n_in, int split_cut, gen_type *out);
int64_t gen_numel(const gen_type *t);

/* Per-node structural hashes of a graph (vars hash by id). */
void gen_node_hashes(const gen_universe *u, const gen_graph *g, uint64_t *h);

#endif
