/* fuse.h - the executor's fusion decisions, made once: which users a node's kernel absorbs (epilogue chains, attention, GELU, pad+pool); kernels/fast.c builds its kernels from them, search/cost.c prices graphs by them. */
#ifndef SO_FUSE_H
#define SO_FUSE_H

#include "../src/graph.h"

#define SO_FUSE_MAX 4 /* nodes one kernel absorbs at most (SO_FAST_MAX_FUSED) */

typedef enum so_fuse_kind {
    SO_FUSE_NONE = 0,
    SO_FUSE_CHAIN,     /* conv / convtranspose / matmul / gemm epilogue: per-channel affine, activations, residual add */
    SO_FUSE_ATTENTION, /* MatMul(Q,Kt) -> Div|Mul scalar -> Softmax(last) -> MatMul(.,V) [-> Transpose 0,2,1,3] */
    SO_FUSE_GELU,      /* Div(x,c) -> Erf -> Add(a) -> Mul(x) -> Mul(h), scalar weights */
    SO_FUSE_PAD_POOL,  /* Pad (zeros, spatial) -> AveragePool without pads */
    SO_FUSE_STEM,      /* NchwcIn of a few-channel image -> ConvNchwc [-> its epilogue chain]: the conv reads NCHW */
    SO_FUSE_NHWC,      /* NchwcOut -> Transpose (0,2,3,1), or Transpose (0,3,1,2) [-> Mul per channel] -> NchwcIn [-> Add]:
                          a blocked value written channels-last, or read from channels-last, in one pass (so_fuse_nhwc) */
} so_fuse_kind;

/* What each absorbed node of an epilogue chain is. */
typedef enum so_fuse_step {
    SO_FUSE_BN,       /* batchnorm with float weight parameters: per-channel scale and shift */
    SO_FUSE_BIAS,     /* add of a per-channel float weight (its own fused activation becomes act1) */
    SO_FUSE_RESIDUAL, /* add of a same-shape float tensor (the kernel's extra input; its activation: act2) */
    SO_FUSE_ACT1,     /* activation operator before the residual add */
    SO_FUSE_ACT2,     /* activation operator after it */
    SO_FUSE_SILU1,    /* Sigmoid(x) and Mul(x, Sigmoid(x)) in act1's place (two nodes, both marked so) */
    SO_FUSE_SILU2,    /* the same in act2's place */
    SO_FUSE_POOL,     /* SO_FUSE_STEM: the max pool (dilation 1) after the stem conv's chain */
    SO_FUSE_DW,       /* SO_FUSE_STEM: the depthwise conv after the stem conv's chain (its own chain after it) */
    SO_FUSE_REORDER,  /* SO_FUSE_NHWC: the Transpose (after a NchwcOut) or the NchwcIn (after a Transpose) */
    SO_FUSE_SCALE,    /* SO_FUSE_NHWC: Mul of the NCHW value by a float weight that varies along the channel only */
} so_fuse_step;

typedef struct so_fuse {
    so_fuse_kind kind;
    int n;                     /* absorbed nodes, in execution order */
    int32_t node[SO_FUSE_MAX];
    uint8_t step[SO_FUSE_MAX]; /* SO_FUSE_CHAIN: so_fuse_step of each node */
    int has_extra;             /* the kernel reads one more tensor: residual addend (chain), V (attention) */
    so_edge extra;
} so_fuse;

/* user[i] = the one consumer of node i's output when node i has one output, read exactly once
   (through slot 0), and is neither a graph output nor pinned (pinned may be NULL); else -1.
   Only such a user can be absorbed. One exception, the SiLU pair: when node i's output has exactly two
   readers, a Sigmoid s (itself such a single-use node) and a Mul m of i and s, and is no graph output nor
   pinned, user[i] = -2 - m (every value < -1 means "no single user" to code that does not decode it).
   Returns a malloc'd array of g->n_nodes + 1 (caller frees). */
int32_t *so_fuse_users(const so_graph *g, const uint8_t *pinned);

/* The decision for node i: what its kernel absorbs, given user[] (so_fuse_users) and the nodes
   already absorbed by earlier decisions (absorbed[j] != 0; may be NULL). Made for every node in
   node order, marking each decision's nodes absorbed before the next, this is exactly what the
   executor runs (kernels/exec.c plans so; its kernels call the same functions). f->kind is
   SO_FUSE_NONE and f->n 0 when nothing is absorbed. */
void so_fuse_decide(const so_graph *g, const int32_t *user, const char *absorbed, int32_t i, so_fuse *f);

/* so_fuse_decide for node i from its neighbourhood alone, for pricing one fused kernel: user[]
   (g->n_nodes + 1 entries, all -1 on entry) gets so_fuse_users' entries along the chain from i,
   without pinned nodes or SiLU pairs, and nothing counts as absorbed before i. For a node that
   heads an attention, GELU or pad+pool kernel in the plan (so_fuse_decide in node order) the
   decision is the plan's; an epilogue chain may differ from the plan's (SiLU pairs). Returns f->kind. */
so_fuse_kind so_fuse_decide_at(const so_graph *g, int32_t i, int32_t *user, so_fuse *f);

/* The parts so_fuse_decide dispatches to (fast.c's kernel builders call them directly).
   so_fuse_chain: producer i whose output channels lie on chan_axis (nch of them); has_act: i's
   own fused activation already fills act1. The others return 1 when the pattern matches. */
void so_fuse_chain(const so_graph *g, const int32_t *user, const char *absorbed, int32_t i, int chan_axis, int64_t nch,
                   int has_act, so_fuse *f);
int so_fuse_attention(const so_graph *g, const int32_t *user, const char *absorbed, int32_t i, so_fuse *f);
int so_fuse_gelu(const so_graph *g, const int32_t *user, const char *absorbed, int32_t i, so_fuse *f);
int so_fuse_pad_pool(const so_graph *g, const int32_t *user, const char *absorbed, int32_t i, so_fuse *f);
/* NCHWC_IN i of at most SO_FUSE_STEM_C channels whose one user is a group-1 CONV_NCHWC with constant weights reading
   it as input 0: f->node = the conv, then its epilogue chain (so_fuse_chain, no residual add, whole or not at all),
   then (step SO_FUSE_POOL) the one user of the chain's output when it is a MAXPOOL_NCHWC of dilation 1 and at most
   SO_FUSE_POOL_K kernel rows (the rows the fused kernel keeps per thread), or else (step SO_FUSE_DW) when it is a
   depthwise CONV_NCHWC (multiplier 1, square kernel of at most SO_FUSE_DW_K, stride 1 or 2 on both axes, dilation 1,
   constant weights) whose epilogue chain has no residual add and fits (whole) in SO_FUSE_MAX with the rest, the
   stem's rows the fused kernel keeps per thread taking at most SO_FUSE_DW_BYTES: that conv, then its chain. */
#define SO_FUSE_STEM_C 4
#define SO_FUSE_POOL_K 8
#define SO_FUSE_DW_K 7
#define SO_FUSE_DW_BYTES (256 << 10)
int so_fuse_stem(const so_graph *g, const int32_t *user, const char *absorbed, int32_t i, so_fuse *f);
/* ConvNeXt's channels-last sections between blocked depthwise convs. Either NCHWC_OUT i (a rank-5 float input)
   whose one user is a Transpose of perm (0,2,3,1) reading it: f->node = that Transpose (step SO_FUSE_REORDER); or
   Transpose i of perm (0,3,1,2) on a rank-4 float value, then optionally (step SO_FUSE_SCALE) its one user when it
   is a Mul (no activation) of it by a float weight varying along axis 1 only (so_fuse_per_channel) with the
   Transpose's output shape, then the one user of that (step SO_FUSE_REORDER) when it is an NCHWC_IN of the same
   N, H, W, then optionally (step SO_FUSE_RESIDUAL, f->extra) its one user when it is an Add without activation of
   another float value of the blocked shape. The blocked kernels (kernels/nchwc.h to_nhwc / from_nhwc) then move
   the value between channels-last and blocked in one pass: the intermediate NCHW values never exist. */
int so_fuse_nhwc(const so_graph *g, const int32_t *user, const char *absorbed, int32_t i, so_fuse *f);

/* Small queries the decisions are made of. */
const float *so_fuse_weight_f32(const so_graph *g, so_edge e);         /* data of a float WEIGHT input, else NULL */
int so_fuse_scalar_weight(const so_graph *g, so_edge e, float *v);     /* one-element float weight */
int so_fuse_other_in(const so_node *nj, int32_t from, so_edge *o);     /* binary nj's input that is not from:0 */
int so_fuse_per_channel(const so_shape *w, int r, int chan_axis, int64_t nch); /* w varies along chan_axis only */
int64_t so_fuse_slice_run(const so_node *n, const so_shape *is); /* Slice n of input shape is: byte offset of its one contiguous run, or -1 */

#endif
