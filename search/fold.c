/* fold.c - canonicalisation: folds weight-only nodes into weights with the reference kernels
   (memoised, content-deduplicated), removes Identity and dead nodes, keeps topological order. */
#include "fold.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "../kernels/ref.h"

/* The attribute fields an operator uses, as the rule language prints them (rules/RULES.md).
   Importers may fill fields an op ignores (e.g. Conv's kernel, taken from the weight), so a
   graph node's attributes are compared on these fields only. */
enum {
    F_KERNEL = 1 << 0, F_STRIDE = 1 << 1, F_PAD = 1 << 2, F_DIL = 1 << 3, F_GROUP = 1 << 4, F_AXIS = 1 << 5,
    F_ACT = 1 << 6, F_TRANS = 1 << 7, F_KEEPDIMS = 1 << 8, F_CIP = 1 << 9, F_CEIL = 1 << 10, F_HIDDEN = 1 << 11,
    F_DIR = 1 << 12, F_MODE = 1 << 13, F_INTS = 1 << 14, F_ALPHA = 1 << 15, F_CLIP = 1 << 16, F_EPS = 1 << 17,
    F_VALUE = 1 << 18,
};

static unsigned used_fields(so_op op)
{
    switch (op) {
    case SO_OP_CONV: return F_STRIDE | F_PAD | F_DIL | F_GROUP | F_ACT;
    case SO_OP_MATMUL: return F_ACT;
    case SO_OP_GEMM: return F_ALPHA | F_TRANS | F_ACT;
    case SO_OP_ADD: return F_ACT;
    case SO_OP_CLIP: return F_CLIP;
    case SO_OP_BATCHNORM: return F_EPS;
    case SO_OP_MAXPOOL: return F_KERNEL | F_STRIDE | F_PAD | F_DIL | F_CEIL;
    case SO_OP_AVGPOOL: return F_KERNEL | F_STRIDE | F_PAD | F_CIP | F_CEIL;
    case SO_OP_SOFTMAX: return F_AXIS;
    case SO_OP_REDUCEMEAN: return F_INTS | F_KEEPDIMS;
    case SO_OP_LAYERNORM: return F_AXIS | F_EPS;
    case SO_OP_PAD: return F_INTS | F_VALUE | F_MODE;
    case SO_OP_CONCAT: return F_AXIS;
    case SO_OP_SPLIT: return F_AXIS | F_INTS;
    case SO_OP_FLATTEN: return F_AXIS;
    case SO_OP_RESHAPE: return F_INTS;
    case SO_OP_TRANSPOSE: return F_INTS;
    case SO_OP_SQUEEZE: return F_INTS;
    case SO_OP_UNSQUEEZE: return F_INTS;
    case SO_OP_EXPAND: return F_INTS;
    case SO_OP_GATHER: return F_AXIS;
    case SO_OP_SLICE: return F_INTS;
    case SO_OP_LSTM: return F_HIDDEN | F_DIR;
    case SO_OP_ENLARGE: return F_KERNEL;
    case SO_OP_CONST_POOL: case SO_OP_CONST_IDCONV: case SO_OP_CONST_IDMAT: case SO_OP_CONST_ONES: return F_INTS;
    default: return 0;
    }
}

so_attr so_attr_used(so_op op, const so_attr *a)
{
    so_attr z;
    memset(&z, 0, sizeof z);
    unsigned f = used_fields(op);
    if (f & F_KERNEL) memcpy(z.kernel, a->kernel, sizeof z.kernel);
    if (f & F_STRIDE) memcpy(z.stride, a->stride, sizeof z.stride);
    if (f & F_PAD) memcpy(z.pad, a->pad, sizeof z.pad);
    if (f & F_DIL) memcpy(z.dilation, a->dilation, sizeof z.dilation);
    if (f & F_GROUP) z.group = a->group;
    if (f & F_AXIS) z.axis = a->axis;
    if (f & F_ACT) z.act = a->act;
    if (f & F_TRANS) z.trans_a = a->trans_a, z.trans_b = a->trans_b;
    if (f & F_KEEPDIMS) z.keepdims = a->keepdims;
    if (f & F_CIP) z.count_include_pad = a->count_include_pad;
    if (f & F_CEIL) z.ceil_mode = a->ceil_mode;
    if (f & F_HIDDEN) z.hidden = a->hidden;
    if (f & F_DIR) z.direction = a->direction;
    if (f & F_MODE) z.mode = a->mode;
    if (f & F_INTS) {
        z.n_ints = a->n_ints;
        for (int j = 0; j < a->n_ints && j < SO_MAX_INTS; j++) z.ints[j] = a->ints[j];
    }
    if (f & F_ALPHA) z.alpha = a->alpha, z.beta = a->beta;
    if (f & (F_CLIP) || ((f & F_ACT) && a->act == SO_ACT_CLIP)) z.clip_min = a->clip_min, z.clip_max = a->clip_max;
    if (f & F_EPS) z.epsilon = a->epsilon;
    if (f & F_VALUE) z.value = a->value;
    return z;
}

int so_normalize_attrs(so_graph *g)
{
    int changed = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        so_node *n = &g->nodes[i];
        if (so_ops[n->op].flags & (SO_F_SOURCE | SO_F_OPAQUE)) continue;
        so_attr u = so_attr_used(n->op, n->attr);
        if (memcmp(&u, n->attr, sizeof u) != 0) {
            n->attr = so_model_attr(g->model, &u);
            changed++;
        }
    }
    return changed;
}

void so_fold_init(so_fold_ctx *fc, so_model *m)
{
    memset(fc, 0, sizeof *fc);
    fc->m = m;
    fc->max_elems = (int64_t)1 << 24;
    fc->max_total_bytes = (int64_t)1 << 30;
    /* index the model's existing weights by content so folds that reproduce one reuse it */
    for (int32_t w = 0; w < m->n_weights; w++) {
        const so_weight *wt = &m->weights[w];
        uint64_t key[2] = {wt->hash, XXH3_64bits(&wt->shape, sizeof wt->shape)};
        so_hmap_add(&fc->content, XXH3_64bits(key, sizeof key), (uint64_t)w);
    }
}

void so_fold_free(so_fold_ctx *fc)
{
    so_hmap_free(&fc->memo);
    so_hmap_free(&fc->content);
    free(fc->ids);
    memset(fc, 0, sizeof *fc);
}

int so_fold_can(const so_fold_ctx *fc, const so_graph *g, int32_t i)
{
    const so_node *n = &g->nodes[i];
    unsigned fl = so_ops[n->op].flags;
    if (fl & (SO_F_SOURCE | SO_F_OPAQUE)) return 0;
    if (n->n_in == 0 && !(fl & SO_F_CONST)) return 0;
    for (int k = 0; k < n->n_in; k++)
        if (g->nodes[n->in[k].node].op != SO_OP_WEIGHT) return 0;
    /* memory guard for long searches; internal ops must always fold (they cannot be exported) */
    if (fc->bytes_added >= fc->max_total_bytes && !(fl & SO_F_INTERNAL)) return 0;
    for (int s = 0; s < n->n_out; s++) {
        int64_t e = so_shape_numel(&n->out[s]);
        if (e < 0 || e > fc->max_elems) return 0;
    }
    return 1;
}

static uint64_t memo_key(const so_graph *g, const so_node *n)
{
    int64_t buf[4 + SO_MAX_IN];
    int c = 0;
    buf[c++] = n->op;
    buf[c++] = (int64_t)(intptr_t)n->attr;
    buf[c++] = n->n_in;
    buf[c++] = n->n_out;
    for (int k = 0; k < n->n_in && k < SO_MAX_IN; k++) buf[c++] = g->nodes[n->in[k].node].ref;
    return XXH3_64bits(buf, (size_t)c * sizeof *buf);
}

/* Stores data (malloc'd, ownership taken) as a weight, reusing an equal existing one. */
static int32_t intern_weight(so_fold_ctx *fc, so_shape shape, void *data)
{
    int64_t n = so_shape_numel(&shape);
    size_t bytes = (size_t)(n > 0 ? n : 0) * (shape.dtype == SO_I64 ? 8 : 4);
    uint64_t key[2] = {data && bytes ? XXH3_64bits(data, bytes) : 0, XXH3_64bits(&shape, sizeof shape)};
    uint64_t ck = XXH3_64bits(key, sizeof key), v;
    if (so_hmap_get(&fc->content, ck, &v)) {
        const so_weight *w = &fc->m->weights[v];
        if (so_shape_eq(&w->shape, &shape) && (bytes == 0 || memcmp(w->data, data, bytes) == 0)) {
            free(data);
            return (int32_t)v;
        }
    }
    int32_t id = so_model_add_weight(fc->m, NULL, shape, data);
    so_hmap_put(&fc->content, ck, (uint64_t)id);
    fc->weights_added++;
    fc->bytes_added += (int64_t)bytes;
    return id;
}

so_status so_fold_node(so_fold_ctx *fc, const so_graph *g, int32_t i, int32_t *wids)
{
    const so_node *n = &g->nodes[i];
    uint64_t key = memo_key(g, n), v;
    if (so_hmap_get(&fc->memo, key, &v)) {
        for (int s = 0; s < n->n_out; s++) wids[s] = fc->ids[v + (uint64_t)s];
        return SO_OK;
    }
    so_tensor in[SO_MAX_IN], out[SO_MAX_IN];
    int n_out = n->n_out;
    if (n->n_in > SO_MAX_IN || n_out > SO_MAX_IN || n_out < 1) return so_errorf("cannot fold a node with %d inputs and %d outputs", n->n_in, n_out);
    for (int k = 0; k < n->n_in; k++) {
        const so_weight *w = &fc->m->weights[g->nodes[n->in[k].node].ref];
        in[k].shape = w->shape;
        in[k].data = w->data;
    }
    for (int s = 0; s < n_out; s++) {
        out[s].shape = n->out[s];
        out[s].data = NULL;
    }
    fc->evaluated++;
    if (so_ref_eval_node(g, i, in, out) != SO_OK) {
        for (int s = 0; s < n_out; s++) free(out[s].data);
        return SO_ERR;
    }
    if (fc->n_ids + n_out > fc->cap_ids) {
        fc->cap_ids = (fc->cap_ids + n_out) * 2;
        fc->ids = so_xrealloc(fc->ids, (size_t)fc->cap_ids * sizeof *fc->ids);
    }
    int32_t at = fc->n_ids;
    for (int s = 0; s < n_out; s++) {
        so_shape sh = n->out[s];
        wids[s] = intern_weight(fc, sh, out[s].data);
        fc->ids[fc->n_ids++] = wids[s];
    }
    so_hmap_put(&fc->memo, key, (uint64_t)at);
    return SO_OK;
}

so_status so_canonicalize(so_fold_ctx *fc, so_graph *g, so_canon_stats *stats)
{
    so_canon_stats cs = {0, 0, 0};
    so_status st = SO_OK;
    int32_t *first = NULL;
    so_edge *remap = NULL;
    so_hmap wnode = {0};
    if (so_graph_toposort(g) != SO_OK) return SO_ERR;
    int32_t n = g->n_nodes;
    first = so_xmalloc(((size_t)n + 1) * sizeof *first);
    int32_t tot = 0;
    for (int32_t i = 0; i < n; i++) {
        first[i] = tot;
        tot += g->nodes[i].n_out > 0 ? g->nodes[i].n_out : 0;
        if (g->nodes[i].op == SO_OP_WEIGHT) so_hmap_add(&wnode, (uint64_t)g->nodes[i].ref, (uint64_t)i);
    }
    first[n] = tot;
    remap = so_xmalloc(((size_t)tot + 1) * sizeof *remap);
    for (int32_t i = 0; i < n; i++)
        for (int s = 0; s < g->nodes[i].n_out; s++) remap[first[i] + s] = (so_edge){i, s};
    int changed = 0;
    for (int32_t i = 0; i < n; i++) {
        so_node *nd = &g->nodes[i];
        for (int k = 0; k < nd->n_in; k++) {
            so_edge e = nd->in[k];
            if (e.node < n) nd->in[k] = remap[first[e.node] + e.slot];
        }
        if (nd->op == SO_OP_IDENTITY && nd->n_in == 1 && !(so_ops[g->nodes[nd->in[0].node].op].flags & SO_F_SOURCE)) {
            remap[first[i]] = nd->in[0];
            cs.identities++;
            changed = 1;
            continue;
        }
        if (!so_fold_can(fc, g, i)) continue;
        int32_t wids[SO_MAX_IN];
        if (so_fold_node(fc, g, i, wids) != SO_OK) {
            char d[160];
            st = so_errorf("folding %s: %s", so_node_desc(g, i, d, sizeof d), so_error());
            goto done;
        }
        int n_out = g->nodes[i].n_out;
        for (int s = 0; s < n_out; s++) {
            uint64_t v;
            int32_t wn;
            if (so_hmap_get(&wnode, (uint64_t)wids[s], &v)) {
                wn = (int32_t)v;
            } else {
                wn = so_graph_add(g, SO_OP_WEIGHT, NULL, 0, 1, NULL, wids[s], NULL);
                g->nodes[wn].out[0] = fc->m->weights[wids[s]].shape;
                so_hmap_put(&wnode, (uint64_t)wids[s], (uint64_t)wn);
            }
            remap[first[i] + s] = (so_edge){wn, 0};
        }
        cs.folded++;
        changed = 1;
    }
    if (changed) {
        for (int32_t o = 0; o < g->model->n_outputs; o++) {
            so_edge e = g->outputs[o];
            if (e.node < n) g->outputs[o] = remap[first[e.node] + e.slot];
        }
        if (so_graph_toposort(g) != SO_OK) {
            st = SO_ERR;
            goto done;
        }
    }
    cs.dead = so_graph_dce(g);
done:
    free(first);
    free(remap);
    so_hmap_free(&wnode);
    if (stats) {
        stats->folded += cs.folded;
        stats->identities += cs.identities;
        stats->dead += cs.dead;
    }
    return st;
}
