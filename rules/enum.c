/* enum.c - parallel enumeration of every well-typed generator graph up to N operators, once per isomorphism class (spilled in key partitions). */
#include "enum_priv.h"

#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

/* ---------------- structure ---------------- */


static uint64_t node_hash(const gen_universe *u, const gen_node *n, const uint64_t *prev)
{
    const gen_inst *g = &u->insts[n->inst];
    uint64_t h = so_mix64(0x1234567ULL + n->inst * 0x9e3779b97f4a7c15ULL);
    for (int k = 0; k < g->n_in; k++) {
        int t = n->in[k];
        int nd = tid_node(u, t);
        uint64_t th = nd < 0 ? so_mix64(0xabcdef00ULL + (uint64_t)t) : so_mix64(prev[nd] + 0x51ULL * (uint64_t)(tid_slot(u, t) + 1));
        h = so_mix64(h ^ (th + (uint64_t)(k + 1) * 0x2545f4914f6cdd1dULL));
    }
    return h;
}

void gen_node_hashes(const gen_universe *u, const gen_graph *g, uint64_t *h)
{
    for (int i = 0; i < g->n_nodes; i++) h[i] = node_hash(u, &g->nodes[i], h);
}

/* Split cut for splitting tensor t (type ty) on axis: the producing concat's cut if t is the
   output of a concat on the same axis, else half of an even dim, else 0. */
/* Cut of a concat that axis `axis` of tensor t carries through, traced back through operators
   that map that axis to an axis of one operand (matmul rows / columns, element-wise and
   unary operators, pools, batchnorm, conv batch / output channels, transpose); 0: none. So
   split(matmul(concat(A, C), B)) cuts at A's rows, whatever the shapes. */
static int traced_cut(const gen_universe *u, const gen_node *nodes, const gen_type *types, int t, int axis, int depth)
{
    int nd = tid_node(u, t);
    if (nd < 0 || depth > GEN_MAX_NODES || axis >= types[t].rank) return 0;
    const gen_node *p = &nodes[nd];
    const gen_inst *pi = &u->insts[p->inst];
    int r;
    switch (pi->op) {
    case SO_OP_CONCAT:
        if (pi->axis == axis) return types[p->in[0]].dim[axis];
        return traced_cut(u, nodes, types, p->in[0], axis, depth + 1);
    case SO_OP_MATMUL: {
        int rank = types[t].rank;
        if (axis == rank - 1) return traced_cut(u, nodes, types, p->in[1], types[p->in[1]].rank - 1, depth + 1);
        return traced_cut(u, nodes, types, p->in[0], axis - (rank - types[p->in[0]].rank), depth + 1);
    }
    case SO_OP_ADD: case SO_OP_MUL:
        if (types[p->in[0]].rank == 1 && types[t].rank > 1) { /* bias add: the vector is the last axis */
            r = axis == types[t].rank - 1 ? traced_cut(u, nodes, types, p->in[0], 0, depth + 1) : 0;
            return r ? r : traced_cut(u, nodes, types, p->in[1], axis, depth + 1);
        }
        r = traced_cut(u, nodes, types, p->in[0], axis, depth + 1);
        if (!r && types[p->in[1]].rank == types[t].rank) r = traced_cut(u, nodes, types, p->in[1], axis, depth + 1);
        return r;
    case SO_OP_RELU: case SO_OP_SIGMOID: case SO_OP_TANH: case SO_OP_AVGPOOL: case SO_OP_MAXPOOL: case SO_OP_BATCHNORM:
        return traced_cut(u, nodes, types, p->in[0], axis, depth + 1);
    case SO_OP_CONV:
        if (axis == 0) return traced_cut(u, nodes, types, p->in[0], 0, depth + 1);
        if (axis == 1) return traced_cut(u, nodes, types, p->in[1], 0, depth + 1);
        return 0;
    case SO_OP_TRANSPOSE:
        return traced_cut(u, nodes, types, p->in[0], 1 - axis, depth + 1);
    default:
        return 0;
    }
}

int enp_split_cut(const gen_universe *u, const gen_node *nodes, const gen_type *types, int t, int axis)
{
    if (axis >= types[t].rank) return 0;
    int c = traced_cut(u, nodes, types, t, axis, 0);
    if (c > 0 && c < types[t].dim[axis]) return c;
    int d = types[t].dim[axis];
    return d % 2 == 0 ? d / 2 : 0;
}

/* Is the node sequence the lexicographically smallest topological order by node hash,
   with all hashes distinct? */
static int canonical_order(const gen_universe *u, const gen_node *nodes, const uint64_t *h, int k)
{
    for (int i = 0; i < k; i++)
        for (int j = i + 1; j < k; j++)
            if (h[i] == h[j]) return 0;
    /* deps as bit masks */
    uint32_t dep[GEN_MAX_NODES];
    for (int i = 0; i < k; i++) {
        dep[i] = 0;
        for (int a = 0; a < u->insts[nodes[i].inst].n_in; a++) {
            int nd = tid_node(u, nodes[i].in[a]);
            if (nd >= 0) dep[i] |= 1u << nd;
        }
    }
    uint32_t placed = 0;
    for (int i = 0; i < k; i++) {
        int best = -1;
        for (int j = 0; j < k; j++)
            if (!(placed & (1u << j)) && (dep[j] & ~placed) == 0 && (best < 0 || h[j] < h[best])) best = j;
        if (best != i) return 0;
        placed |= 1u << i;
    }
    return 1;
}

/* ---------------- enumeration ---------------- */

typedef struct work_item {
    gen_node node;
} work_item;

typedef struct shared {
    const gen_universe *u;
    const gen_inputs *in;
    int max_ops;
    int shard_i, shard_n;
    int max_reduce;          /* most outputs one node can remove: max (inputs - 1) */
    int n_parts;             /* key partitions of the recorded graphs */
    uint32_t var_ok[256][GEN_MAX_NIN]; /* arg_ok of every variable, per instance and position */
    work_item *items;
    int64_t n_items;
    atomic_llong next, done, graphs;
    gen_progress_fn progress;
    void *pctx;
    pthread_mutex_t mu;
} shared;

typedef struct tstate {
    shared *S;
    gen_type type[GEN_MAX_T];
    uint32_t *val[GEN_MAX_T];
    gen_node nodes[GEN_MAX_NODES];
    uint64_t h[GEN_MAX_NODES];
    int k;
    int n_free;      /* free enlarge nodes in the current graph (0 or 1) */
    struct pbuf *pb; /* [n_parts]: this thread's recorded graphs per key partition */
    int64_t mem_recs; /* records held in memory (spilled beyond gen_spill_bytes) */
    uint64_t unused; /* dfs level: node outputs not consumed yet (bit per tensor id) */
    int n_unused;
    int64_t graphs;
} tstate;

/* A recorded graph, compact (canon and mask are recomputed from the nodes at load). */
typedef struct gen_rec {
    uint64_t key;
    gen_node nodes[GEN_MAX_NODES];
    uint8_t n_nodes, n_out, out[GEN_MAX_OUT];
} gen_rec;

/* One thread's records of one partition: in memory, and spilled to an unlinked temp file. */
typedef struct pbuf {
    gen_rec *mem;
    int64_t n, cap;
    FILE *f;
    int64_t n_file;
} pbuf;

struct gen_parts {
    const gen_universe *u;
    int n_parts, n_threads;
    pbuf *pb;        /* [thread * n_parts + part] */
    int64_t total;
};

int64_t gen_spill_bytes = (int64_t)256 << 20;
int gen_n_parts = 0;

static int part_of(const shared *S, uint64_t key) { return (int)((key >> 40) % (uint64_t)S->n_parts); }

/* Writes every in-memory record of ts to its partition's temp file (kept in memory if no temp
   file can be created). */
static void spill(tstate *ts)
{
    for (int k = 0; k < ts->S->n_parts; k++) {
        pbuf *b = &ts->pb[k];
        if (!b->n) continue;
        if (!b->f) b->f = tmpfile();
        if (!b->f || fwrite(b->mem, sizeof *b->mem, (size_t)b->n, b->f) != (size_t)b->n) {
            if (b->f) fclose(b->f);
            b->f = NULL; /* fall back to memory (a partial write is discarded with the file) */
            b->n_file = 0;
            continue;
        }
        b->n_file += b->n;
        ts->mem_recs -= b->n;
        b->n = 0;
    }
}

static void push_rec(tstate *ts, const gen_rec *r)
{
    pbuf *b = &ts->pb[part_of(ts->S, r->key)];
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 1024;
        b->mem = so_xrealloc(b->mem, (size_t)b->cap * sizeof *b->mem);
    }
    b->mem[b->n++] = *r;
    if (++ts->mem_recs * (int64_t)sizeof *r > gen_spill_bytes) spill(ts);
}

/* Total order on two tensors by type then values. */
static int out_less(const gen_type *type, uint32_t *const *val, int x, int y)
{
    const gen_type *a = &type[x], *b = &type[y];
    if (a->rank != b->rank) return a->rank < b->rank;
    for (int i = 0; i < a->rank; i++)
        if (a->dim[i] != b->dim[i]) return a->dim[i] < b->dim[i];
    return memcmp(val[x], val[y], (size_t)gen_numel(a) * sizeof(uint32_t)) < 0;
}

static void record(tstate *ts)
{
    const gen_universe *u = ts->S->u;
    ts->graphs++;
    int k = ts->k;
    /* outputs: node outputs not consumed */
    uint32_t used[GEN_MAX_NODES] = {0};
    uint32_t mask = 0;
    for (int i = 0; i < k; i++) {
        const gen_inst *g = &u->insts[ts->nodes[i].inst];
        for (int a = 0; a < g->n_in; a++) {
            int t = ts->nodes[i].in[a];
            int nd = tid_node(u, t);
            if (nd < 0) mask |= 1u << (u->vars[t].base >= 0 ? u->vars[t].base : t);
            else used[nd] |= 1u << tid_slot(u, t);
        }
    }
    int outs[8], no = 0;
    for (int i = 0; i < k; i++) {
        int nout = u->insts[ts->nodes[i].inst].n_out;
        for (int s = 0; s < nout; s++)
            if (!(used[i] & (1u << s))) {
                if (no >= GEN_MAX_OUT) return;
                outs[no++] = u->n_vars + GEN_MAX_OUT * i + s;
            }
    }
    if (no == 2) {
        /* connected: nodes that share a tensor (a common input, or one consumes the other's
           output) are adjacent; a node's tensors = its inputs and its own outputs */
        uint64_t tm[GEN_MAX_NODES];
        for (int i = 0; i < k; i++) {
            const gen_inst *gi = &u->insts[ts->nodes[i].inst];
            tm[i] = 0;
            for (int a = 0; a < gi->n_in; a++) tm[i] |= 1ULL << ts->nodes[i].in[a];
            for (int s2 = 0; s2 < gi->n_out; s2++) tm[i] |= 1ULL << (u->n_vars + GEN_MAX_OUT * i + s2);
        }
        uint64_t reach = tm[0];
        uint32_t in_comp = 1;
        for (int grown = 1; grown;) {
            grown = 0;
            for (int i = 1; i < k; i++)
                if (!(in_comp & (1u << i)) && (tm[i] & reach)) {
                    in_comp |= 1u << i;
                    reach |= tm[i];
                    grown = 1;
                }
        }
        if (in_comp != (1u << k) - 1) return;
    }
    gen_rec gr;
    memset(&gr, 0, sizeof gr);
    gr.n_nodes = (uint8_t)k;
    gr.n_out = (uint8_t)no;
    memcpy(gr.nodes, ts->nodes, sizeof(gen_node) * (size_t)k);
    uint64_t oh[GEN_MAX_OUT];
    for (int o = 0; o < no; o++) oh[o] = gen_value_hash(ts->val[outs[o]], gen_numel(&ts->type[outs[o]]), &ts->type[outs[o]]);
    /* output order: by type and value (independent of the hash function) */
    if (no == 2 && out_less(ts->type, ts->val, outs[1], outs[0])) {
        uint64_t t = oh[0];
        oh[0] = oh[1];
        oh[1] = t;
        int q = outs[0];
        outs[0] = outs[1];
        outs[1] = q;
    }
    for (int o = 0; o < no; o++) gr.out[o] = (uint8_t)outs[o];
    uint64_t kk[4] = {mask, (uint64_t)no, oh[0], no > 1 ? oh[1] : 0};
    gr.key = XXH3_64bits(kk, sizeof kk);
    if (ts->S->shard_n > 1 && (int)(gr.key % (uint64_t)ts->S->shard_n) != ts->S->shard_i) return;
    push_rec(ts, &gr);
}

/* Tries node nd as the next node; on success recurses. */
static void dfs(tstate *ts);

#define GEN_MAX_FREE 2 /* weight-side (free) nodes per graph */

/* A free weight-side node: an axis-0 concat of two variables, one of them the sibling kernel L or
   its bias c (concat(K, L), concat(b, c)): folded into a weight before anything runs. */
static int is_free_node(const gen_universe *u, const gen_node *nd)
{
    const gen_inst *g = &u->insts[nd->inst];
    if (g->op != SO_OP_CONCAT || g->axis != 0 || !u->sib[0]) return 0;
    int a = nd->in[0], b = nd->in[1];
    if (a >= u->n_vars || b >= u->n_vars) return 0;
    for (int q = 0; q < 2; q++)
        if (a == u->sib[q] - 1 || b == u->sib[q] - 1) return 1;
    return 0;
}

static void try_node(tstate *ts, const gen_node *nd)
{
    const gen_universe *u = ts->S->u;
    const gen_inst *g = &u->insts[nd->inst];
    int k = ts->k;
    /* weight-side nodes (an axis-0 concat of two variables involving the sibling L or c) are
       free: they do not count towards max_ops; at most GEN_MAX_FREE of them, and a graph holds at
       most max_ops + 1 nodes */
    int is_free = is_free_node(u, nd) && ts->n_free < GEN_MAX_FREE;
    int nf = ts->n_free + is_free;
    if (k + 1 - nf > ts->S->max_ops || k + 1 > ts->S->max_ops + (nf > 0)) return;
    /* outputs after adding the node; one more node lowers the output count by at most
       max_reduce (inputs - 1), so a graph with more than 2 + max_reduce * (remaining budget)
       outputs can neither be kept nor extended into one that is: skip it (uncounted) before
       typechecking, hashing and evaluating it */
    int n_outs;
    {
        /* ts->unused: outputs of nodes 0..k-1 not consumed yet (set by dfs for this level) */
        uint64_t m = 0;
        for (int a = 0; a < g->n_in; a++) m |= ts->unused & (1ULL << nd->in[a]);
        n_outs = ts->n_unused - __builtin_popcountll(m) + g->n_out;
    }
    int remaining = ts->S->max_ops - (k + 1 - ts->n_free - is_free);
    if (n_outs > 2 + ts->S->max_reduce * remaining) return;
    gen_type it[GEN_MAX_NIN], ot[GEN_MAX_OUT];
    uint32_t *iv[GEN_MAX_NIN];
    for (int a = 0; a < g->n_in; a++) {
        it[a] = ts->type[nd->in[a]];
        iv[a] = ts->val[nd->in[a]];
    }
    int cut = g->op == SO_OP_SPLIT ? enp_split_cut(u, ts->nodes, ts->type, nd->in[0], g->axis) : 0;
    if (!gen_typecheck(u, nd->inst, it, g->n_in, cut, ot)) return;
    ts->nodes[k] = *nd;
    ts->h[k] = node_hash(u, nd, ts->h);
    if (!canonical_order(u, ts->nodes, ts->h, k + 1)) return;
    int base = u->n_vars + GEN_MAX_OUT * k;
    uint32_t *ov[GEN_MAX_OUT];
    for (int s = 0; s < g->n_out; s++) {
        ts->type[base + s] = ot[s];
        ov[s] = ts->val[base + s];
    }
    enp_eval_inst(u, nd->inst, it, iv, ot, ov);
    ts->k = k + 1;
    ts->n_free += is_free;
    record(ts);
    if (ts->k < GEN_MAX_NODES && ts->k - ts->n_free < ts->S->max_ops && ts->k <= ts->S->max_ops) dfs(ts);
    ts->n_free -= is_free;
    ts->k = k;
}

/* Available tensor ids at depth k. */
static int avail(const tstate *ts, int *ids)
{
    const gen_universe *u = ts->S->u;
    int n = 0;
    for (int v = 0; v < u->n_vars; v++) ids[n++] = v;
    for (int i = 0; i < ts->k; i++) {
        int nout = u->insts[ts->nodes[i].inst].n_out;
        for (int s = 0; s < nout; s++) ids[n++] = u->n_vars + GEN_MAX_OUT * i + s;
    }
    return n;
}

static int is_bn_param(const gen_universe *u, int v)
{
    for (int k = 0; k < 4; k++)
        if (u->bn_param[k] == v) return 1;
    return 0;
}


/* Noise control for the sibling variables (gen_universe.sib): L feeds only the weight of a conv
   with a bias (on a variable input) and concat(K, L); c only the bias of a conv on L and
   concat(b, c); the free concat of K and L only feeds such conv weights, that of b and c only conv
   biases. Sibling convs without biases are not merged through L: in a model they are followed by
   a batchnorm, which a split between them and the merged conv leaves unfused (ONNX Runtime ran
   nasnet_a 3-10% slower with such merges); BN folding first gives the biased merge. */
static int sib_arg_ok(const gen_universe *u, const tstate *ts, const gen_inst *g, const gen_node *nd, int pos, int t)
{
    int L = u->sib[0] - 1, c = u->sib[1] - 1, K = -1, B = -1;
    /* K: the other 1x1 kernel variable; B: the conv bias variable (a per-channel vector that is no
       batchnorm parameter) */
    for (int v = 0; v < u->n_vars; v++) {
        if (v != L && u->vars[v].kernel && u->vars[v].role == GR_ANY && u->vars[v].t.dim[2] == 1 && u->vars[v].t.dim[3] == 1) K = v;
        if (v != c && u->vars[v].role == GR_PARAM && !is_bn_param(u, v) && B < 0) B = v;
    }
    if (t == L) {
        /* sibling convs read the same input: a variable */
        if (g->op == SO_OP_CONV && gen_biased(g) && pos == 1) return nd->in[0] < u->n_vars;
        return g->op == SO_OP_CONCAT && g->axis == 0 && pos == 1 && nd->in[0] == K; /* one order: concat(K, L) */
    }
    if (t == c) {
        if (g->op == SO_OP_CONV && gen_biased(g) && pos == 2) return nd->in[1] == L;
        return g->op == SO_OP_CONCAT && g->axis == 0 && pos == 1 && nd->in[0] == B; /* concat(b, c) */
    }
    if (t >= u->n_vars && is_free_node(u, &ts->nodes[tid_node(u, t)])) {
        int kt = ts->type[t].rank == 4;
        return g->op == SO_OP_CONV && gen_biased(g) && (kt ? pos == 1 && nd->in[0] < u->n_vars : pos == 2);
    }
    return 1;
}

/* Enumerates argument tuples for instance inst; calls try_node (or collects first-level items). */
static void args_rec(tstate *ts, gen_node *nd, int pos, const int *ids, int n_ids, work_item **items, int64_t *n_items,
                     int64_t *cap)
{
    const gen_universe *u = ts->S->u;
    const gen_inst *g = &u->insts[nd->inst];
    if (!items && pos < g->n_in && ts->n_unused) {
        /* the output bound of try_node, early: after this node at most 2 + max_reduce x
           (remaining budget) outputs may be left, so its inputs must consume enough of the
           current outputs; the positions left can consume at most one each */
        int need = ts->n_unused + g->n_out - 2 - ts->S->max_reduce * (ts->S->max_ops - (ts->k + 1 - ts->n_free));
        if (need > 0) {
            uint64_t m = 0;
            for (int a = 0; a < pos; a++) m |= ts->unused & (1ULL << nd->in[a]);
            if (__builtin_popcountll(m) + (g->n_in - pos) < need) return;
        }
    }
    if (pos == g->n_in) {
        if (items) {
            /* first level: check typing now */
            gen_type it[GEN_MAX_NIN], ot[GEN_MAX_OUT];
            for (int a = 0; a < g->n_in; a++) it[a] = ts->type[nd->in[a]];
            int cut = g->op == SO_OP_SPLIT ? enp_split_cut(u, ts->nodes, ts->type, nd->in[0], g->axis) : 0;
            if (!gen_typecheck(u, nd->inst, it, g->n_in, cut, ot)) return;
            if (*n_items == *cap) {
                *cap = *cap ? *cap * 2 : 256;
                *items = so_xrealloc(*items, (size_t)*cap * sizeof **items);
            }
            (*items)[(*n_items)++].node = *nd;
        } else {
            try_node(ts, nd);
        }
        return;
    }
    {
        /* batchnorm / bnfold parameters: fixed variables (scale, bias, mean, var) */
        int q = -1;
        if (g->op == SO_OP_BATCHNORM && pos >= 1) q = pos - 1;
        else if (g->op == SO_OP_BNFOLD_W && pos >= 1) q = pos == 1 ? 0 : 3;
        else if (g->op == SO_OP_BNFOLD_B && pos < 4) q = pos;
        if (q >= 0) {
            if (u->bn_param[q] < 0) return;
            nd->in[pos] = (uint8_t)u->bn_param[q];
            args_rec(ts, nd, pos + 1, ids, n_ids, items, n_items, cap);
            return;
        }
    }
    for (int j = 0; j < n_ids; j++) {
        int t = ids[j];
        if (t < u->n_vars ? !((ts->S->var_ok[nd->inst][pos] >> t) & 1) : !enp_arg_ok(g->op, g->axis, pos, &ts->type[t], GR_ANY)) continue;
        if (g->op == SO_OP_MUL && pos == 1 && enp_is_kernel_type(&ts->type[nd->in[0]]) && ts->type[t].rank != 0) continue;
        /* element-wise binaries and concat take two distinct tensors (x+x, x*x, concat(x,x) only add noise) */
        if ((g->op == SO_OP_ADD || g->op == SO_OP_MUL || g->op == SO_OP_CONCAT) && pos == 1 && t == nd->in[0]) continue;
        /* bias adds (noise control): two bias vectors (b and the first batchnorm parameter) feed add
           and concat; a concat of vectors feeds only a bias add (no rank-1 concat algebra) */
        if ((g->op == SO_OP_ADD || g->op == SO_OP_CONCAT) && t < u->n_vars && u->vars[t].role == GR_PARAM && is_bn_param(u, t) &&
            t != u->bn_param[0])
            continue;
        if (t >= u->n_vars && ts->type[t].rank == 1 && u->insts[ts->nodes[tid_node(u, t)].inst].op == SO_OP_CONCAT &&
            !(g->op == SO_OP_ADD && pos == 0) && !(g->op == SO_OP_CONV && gen_biased(g) && pos == 2 && is_free_node(u, &ts->nodes[tid_node(u, t)])))
            continue;
        if ((g->op == SO_OP_CONV && gen_biased(g) && pos == 2) || (g->op == SO_OP_BNFOLD_B && gen_biased(g))) {
            if (t < u->n_vars && is_bn_param(u, t)) continue;
        }
        /* bnfold_w folds a kernel variable (noise control) */
        if (g->op == SO_OP_BNFOLD_W && (t >= u->n_vars || u->vars[t].role != GR_ANY)) continue;
        /* bnfold outputs only feed a conv: the folded kernel as its weight, the folded bias as its bias */
        if (t >= u->n_vars) {
            const int pk = u->insts[ts->nodes[tid_node(u, t)].inst].op;
            if (pk == SO_OP_BNFOLD_W && !(g->op == SO_OP_CONV && pos == 1)) continue;
            if (pk == SO_OP_BNFOLD_B && !(g->op == SO_OP_CONV && gen_biased(g) && pos == 2)) continue;
        }
        if (u->sib[0] && !sib_arg_ok(u, ts, g, nd, pos, t)) continue;
        nd->in[pos] = (uint8_t)t;
        args_rec(ts, nd, pos + 1, ids, n_ids, items, n_items, cap);
    }
}

static void dfs(tstate *ts)
{
    const gen_universe *u = ts->S->u;
    int ids[GEN_MAX_T];
    int n = avail(ts, ids);
    uint64_t prod = 0, used = 0;
    for (int i = 0; i < ts->k; i++) {
        const gen_inst *gi = &u->insts[ts->nodes[i].inst];
        for (int s2 = 0; s2 < gi->n_out; s2++) prod |= 1ULL << (u->n_vars + GEN_MAX_OUT * i + s2);
        for (int a = 0; a < gi->n_in; a++) used |= 1ULL << ts->nodes[i].in[a];
    }
    uint64_t saved = ts->unused;
    int saved_n = ts->n_unused;
    ts->unused = prod & ~used;
    ts->n_unused = __builtin_popcountll(ts->unused);
    for (int i = 0; i < u->n_insts; i++) {
        gen_node nd;
        memset(&nd, 0, sizeof nd);
        nd.inst = (uint8_t)i;
        args_rec(ts, &nd, 0, ids, n, NULL, NULL, NULL);
    }
    ts->unused = saved;
    ts->n_unused = saved_n;
}

static void tstate_init(tstate *ts, shared *S)
{
    memset(ts, 0, sizeof *ts);
    ts->S = S;
    const gen_universe *u = S->u;
    for (int v = 0; v < u->n_vars; v++) {
        ts->type[v] = u->vars[v].t;
        ts->val[v] = S->in->val[v];
    }
    for (int t = u->n_vars; t < GEN_MAX_T; t++) ts->val[t] = so_xmalloc((size_t)u->elems_max * 8 * sizeof(uint32_t) + 64);
}

static void tstate_free_bufs(tstate *ts)
{
    for (int t = ts->S->u->n_vars; t < GEN_MAX_T; t++) free(ts->val[t]);
}

static void *worker(void *arg)
{
    tstate *ts = arg;
    shared *S = ts->S;
    for (;;) {
        long long i = atomic_fetch_add(&S->next, 1);
        if (i >= S->n_items) break;
        int64_t before = ts->graphs;
        ts->k = 0;
        ts->n_free = 0;
        try_node(ts, &S->items[i].node);
        long long d = atomic_fetch_add(&S->done, 1) + 1;
        long long gsum = atomic_fetch_add(&S->graphs, ts->graphs - before) + (ts->graphs - before);
        if (S->progress) {
            pthread_mutex_lock(&S->mu);
            S->progress(S->pctx, gsum, d, S->n_items);
            pthread_mutex_unlock(&S->mu);
        }
    }
    gen_memo_release();
    return NULL;
}

static int cmp_graph(const void *a, const void *b)
{
    const gen_graph *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    if (x->n_nodes != y->n_nodes) return x->n_nodes < y->n_nodes ? -1 : 1;
    if (x->canon != y->canon) return x->canon < y->canon ? -1 : 1;
    return memcmp(x->nodes, y->nodes, sizeof x->nodes);
}

static int cmp_rec_key(const void *a, const void *b)
{
    const gen_rec *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* The full graph of a record: mask and canonical structure hash from the nodes. */
static void rec_to_graph(const gen_universe *u, const gen_rec *r, gen_graph *g)
{
    memset(g, 0, sizeof *g);
    g->key = r->key;
    g->n_nodes = r->n_nodes;
    g->n_out = r->n_out;
    memcpy(g->out, r->out, sizeof g->out);
    memcpy(g->nodes, r->nodes, sizeof g->nodes);
    int k = r->n_nodes;
    if (k == 0) {
        int a = r->out[0], b = r->n_out > 1 ? r->out[1] : -1;
        g->mask = (1u << a) | (b >= 0 ? 1u << b : 0);
        g->canon = (uint64_t)(a * 64 + b + 1);
        return;
    }
    for (int i = 0; i < k; i++) {
        const gen_inst *gi = &u->insts[g->nodes[i].inst];
        for (int a = 0; a < gi->n_in; a++) {
            int t = g->nodes[i].in[a];
            if (t < u->n_vars) g->mask |= 1u << (u->vars[t].base >= 0 ? u->vars[t].base : t);
        }
    }
    uint64_t hs[GEN_MAX_NODES];
    gen_node_hashes(u, g, hs);
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && hs[j - 1] > hs[j]; j--) {
            uint64_t t = hs[j];
            hs[j] = hs[j - 1];
            hs[j - 1] = t;
        }
    g->canon = XXH3_64bits(hs, sizeof(uint64_t) * (size_t)k);
}

so_status gen_enumerate(const gen_universe *u, const gen_inputs *in, int max_ops, int threads, gen_graph **out,
                        int64_t *n_out, gen_enum_stats *st, gen_progress_fn progress, void *pctx)
{
    return gen_enumerate_shard(u, in, max_ops, threads, 0, 1, out, n_out, st, progress, pctx);
}

so_status gen_enumerate_shard(const gen_universe *u, const gen_inputs *in, int max_ops, int threads, int shard_i,
                              int shard_n, gen_graph **out, int64_t *n_out, gen_enum_stats *st,
                              gen_progress_fn progress, void *pctx)
{
    gen_parts *P = NULL;
    if (gen_enumerate_parts(u, in, max_ops, threads, shard_i, shard_n, &P, st, progress, pctx) != SO_OK) return SO_ERR;
    gen_graph *all = so_xmalloc((size_t)(P->total + 1) * sizeof *all);
    int64_t m = 0;
    for (int k = 0; k < P->n_parts; k++) {
        gen_graph *g = NULL;
        int64_t n = 0;
        if (gen_parts_load(P, k, 0, &g, &n) != SO_OK) {
            free(all);
            gen_parts_free(P);
            return SO_ERR;
        }
        if (n) memcpy(all + m, g, (size_t)n * sizeof *g);
        m += n;
        free(g);
    }
    gen_parts_free(P);
    qsort(all, (size_t)m, sizeof *all, cmp_graph);
    *out = all;
    *n_out = m;
    return SO_OK;
}

so_status gen_enumerate_parts(const gen_universe *u, const gen_inputs *in, int max_ops, int threads, int shard_i,
                              int shard_n, gen_parts **out, gen_enum_stats *st, gen_progress_fn progress, void *pctx)
{
    if (max_ops < 1 || max_ops > GEN_MAX_OPS) return so_errorf("--max-ops must be 1..%d", GEN_MAX_OPS);
    if (u->n_vars > 32 || u->n_insts > 255) return so_errorf("generator universe too large");
    if (threads < 1) threads = 1;
    shared S;
    memset(&S, 0, sizeof S);
    S.u = u;
    S.in = in;
    S.max_ops = max_ops;
    S.shard_i = shard_i;
    S.shard_n = shard_n > 0 ? shard_n : 1;
    S.n_parts = gen_n_parts > 0 ? gen_n_parts : max_ops >= 4 ? 64 : 8;
    for (int i = 0; i < u->n_insts; i++)
        for (int pos = 0; pos < u->insts[i].n_in && pos < GEN_MAX_NIN; pos++)
            for (int v = 0; v < u->n_vars; v++)
                if (enp_arg_ok(u->insts[i].op, u->insts[i].axis, pos, &u->vars[v].t, u->vars[v].role)) S.var_ok[i][pos] |= 1u << v;
    for (int i = 0; i < u->n_insts; i++) {
        int kd = u->insts[i].op;
        /* batchnorm / bnfold parameters are fixed variables: they consume no graph output */
        int r = kd == SO_OP_BATCHNORM || kd == SO_OP_BNFOLD_W || kd == SO_OP_BNFOLD_B ? 0 : u->insts[i].n_in - 1;
        if (r > S.max_reduce) S.max_reduce = r;
    }
    S.progress = progress;
    S.pctx = pctx;
    pthread_mutex_init(&S.mu, NULL);
    gen_parts *P = so_xcalloc(1, sizeof *P);
    P->u = u;
    P->n_parts = S.n_parts;
    P->n_threads = threads;
    P->pb = so_xcalloc((size_t)threads * (size_t)S.n_parts, sizeof *P->pb);
    /* first-level work items */
    tstate t0;
    tstate_init(&t0, &S);
    int64_t cap = 0;
    {
        int ids[GEN_MAX_T];
        int n = avail(&t0, ids);
        for (int i = 0; i < u->n_insts; i++) {
            gen_node nd;
            memset(&nd, 0, sizeof nd);
            nd.inst = (uint8_t)i;
            args_rec(&t0, &nd, 0, ids, n, &S.items, &S.n_items, &cap);
        }
    }
    tstate *ts = so_xcalloc((size_t)threads, sizeof *ts);
    pthread_t *th = so_xcalloc((size_t)threads, sizeof *th);
    for (int i = 0; i < threads; i++) {
        tstate_init(&ts[i], &S);
        ts[i].pb = P->pb + (size_t)i * (size_t)S.n_parts;
    }
    for (int i = 1; i < threads; i++) pthread_create(&th[i], NULL, worker, &ts[i]);
    worker(&ts[0]);
    for (int i = 1; i < threads; i++) pthread_join(th[i], NULL);
    /* 0-node graphs: single variables and ordered pairs of distinct variables of equal type */
    int64_t graphs = 0;
    for (int i = 0; i < threads; i++) graphs += ts[i].graphs;
    int nv = u->n_vars;
    for (int a = 0; a < nv; a++)
        for (int b = -1; b < nv; b++) {
            if (b == a) continue;
            if (u->vars[a].role != GR_ANY || (b >= 0 && u->vars[b].role != GR_ANY)) continue;
            gen_rec gr;
            memset(&gr, 0, sizeof gr);
            int no = b < 0 ? 1 : 2;
            int outs[2] = {a, b};
            uint64_t oh[2] = {gen_value_hash(in->val[a], gen_numel(&u->vars[a].t), &u->vars[a].t), 0};
            if (no == 2) {
                oh[1] = gen_value_hash(in->val[b], gen_numel(&u->vars[b].t), &u->vars[b].t);
                gen_type ty[GEN_MAX_VARS];
                for (int v = 0; v < nv; v++) ty[v] = u->vars[v].t;
                if (out_less(ty, in->val, b, a)) continue; /* one order per unordered pair */
            }
            gr.n_out = (uint8_t)no;
            for (int o = 0; o < no; o++) gr.out[o] = (uint8_t)outs[o];
            uint32_t mask = (1u << a) | (b >= 0 ? 1u << b : 0);
            uint64_t kk[4] = {mask, (uint64_t)no, oh[0], no > 1 ? oh[1] : 0};
            gr.key = XXH3_64bits(kk, sizeof kk);
            if (S.shard_n > 1 && (int)(gr.key % (uint64_t)S.shard_n) != S.shard_i) continue;
            push_rec(&ts[0], &gr);
        }
    int64_t total = 0;
    for (int i = 0; i < threads; i++) {
        for (int k = 0; k < S.n_parts; k++) {
            pbuf *b = &ts[i].pb[k];
            total += b->n + b->n_file;
            if (b->f) fflush(b->f); /* loads read the files with pread */
        }
        tstate_free_bufs(&ts[i]);
    }
    P->total = total;
    tstate_free_bufs(&t0);
    free(S.items);
    free(ts);
    free(th);
    pthread_mutex_destroy(&S.mu);
    *out = P;
    if (st) {
        st->graphs = graphs;
        st->kept = total;
    }
    return SO_OK;
}

int gen_parts_count(const gen_parts *P) { return P->n_parts; }

so_status gen_parts_load(const gen_parts *P, int k, int drop_single, gen_graph **out, int64_t *n_out)
{
    int64_t n = 0;
    for (int t = 0; t < P->n_threads; t++) {
        const pbuf *b = &P->pb[(size_t)t * (size_t)P->n_parts + (size_t)k];
        n += b->n + b->n_file;
    }
    gen_rec *r = so_xmalloc((size_t)(n ? n : 1) * sizeof *r);
    int64_t m = 0;
    for (int t = 0; t < P->n_threads; t++) {
        const pbuf *b = &P->pb[(size_t)t * (size_t)P->n_parts + (size_t)k];
        if (b->n_file) {
            size_t want = (size_t)b->n_file * sizeof *r, got = 0;
            while (got < want) {
                ssize_t x = pread(fileno(b->f), (char *)(r + m) + got, want - got, (off_t)got);
                if (x <= 0) {
                    free(r);
                    return so_errorf("generator partition %d: cannot read its temporary file", k);
                }
                got += (size_t)x;
            }
            m += b->n_file;
        }
        if (b->n) memcpy(r + m, b->mem, (size_t)b->n * sizeof *r);
        m += b->n;
    }
    if (drop_single) {
        /* a key seen once cannot form a candidate */
        qsort(r, (size_t)n, sizeof *r, cmp_rec_key);
        int64_t w = 0;
        for (int64_t i = 0; i < n;) {
            int64_t j = i;
            while (j < n && r[j].key == r[i].key) j++;
            if (j - i >= 2)
                for (int64_t q = i; q < j; q++) r[w++] = r[q];
            i = j;
        }
        n = w;
    }
    gen_graph *g = so_xmalloc((size_t)(n ? n : 1) * sizeof *g);
    for (int64_t i = 0; i < n; i++) rec_to_graph(P->u, &r[i], &g[i]);
    free(r);
    if (drop_single) {
        /* already grouped by key: order each key's run (cmp_graph orders by key first) */
        for (int64_t i = 0; i < n;) {
            int64_t j = i;
            while (j < n && g[j].key == g[i].key) j++;
            qsort(g + i, (size_t)(j - i), sizeof *g, cmp_graph);
            i = j;
        }
        /* runs in ascending key order: the result is sorted by cmp_graph */
    } else {
        qsort(g, (size_t)n, sizeof *g, cmp_graph);
    }
    *out = g;
    *n_out = n;
    return SO_OK;
}

void gen_parts_free(gen_parts *P)
{
    if (!P) return;
    for (int i = 0; i < P->n_threads * P->n_parts; i++) {
        free(P->pb[i].mem);
        if (P->pb[i].f) fclose(P->pb[i].f);
    }
    free(P->pb);
    free(P);
}
