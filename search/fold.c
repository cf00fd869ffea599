/* fold.c - canonicalisation: folds weight-only nodes into weights with the reference kernels
   (memoised, content-deduplicated), merges equal nodes (CSE), removes Identity and dead nodes,
   keeps topological order. */
#include "fold.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "../kernels/ref.h"

so_attr so_attr_used(so_op op, const so_attr *a)
{
    so_attr z;
    memset(&z, 0, sizeof z);
    unsigned f = so_ops[op].attrs; /* ops.def's attrs column; symbolic dims are a plain int list here */
    if (f & SO_A_DIMS) f = (f & ~(unsigned)SO_A_DIMS) | SO_A_INTS;
    if (f & SO_A_KERNEL) memcpy(z.kernel, a->kernel, sizeof z.kernel);
    if (f & SO_A_STRIDE) memcpy(z.stride, a->stride, sizeof z.stride);
    if (f & SO_A_PAD) memcpy(z.pad, a->pad, sizeof z.pad);
    if (f & SO_A_DIL) memcpy(z.dilation, a->dilation, sizeof z.dilation);
    if (f & SO_A_GROUP) z.group = a->group;
    if (f & SO_A_AXIS) z.axis = a->axis;
    if (f & SO_A_ACT) z.act = a->act;
    if (f & SO_A_TRANS) z.trans_a = a->trans_a, z.trans_b = a->trans_b;
    if (f & SO_A_KEEPDIMS) z.keepdims = a->keepdims;
    if (f & SO_A_CIP) z.count_include_pad = a->count_include_pad;
    if (f & SO_A_CEIL) z.ceil_mode = a->ceil_mode;
    if (f & SO_A_HIDDEN) z.hidden = a->hidden;
    if (f & SO_A_DIR) z.direction = a->direction;
    if (f & SO_A_MODE) z.mode = a->mode;
    if (f & SO_A_INTS) {
        z.n_ints = a->n_ints;
        for (int j = 0; j < a->n_ints && j < SO_MAX_INTS; j++) z.ints[j] = a->ints[j];
    }
    if (f & SO_A_ALPHA) z.alpha = a->alpha, z.beta = a->beta;
    if (f & (SO_A_CLIP) || ((f & SO_A_ACT) && a->act == SO_ACT_CLIP)) z.clip_min = a->clip_min, z.clip_max = a->clip_max;
    if (f & SO_A_EPS) z.epsilon = a->epsilon;
    if (f & SO_A_VALUE) z.value = a->value;
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

int32_t so_fold_standin(so_fold_ctx *fc, const so_shape *sh)
{
    uint64_t key = XXH3_64bits(sh, sizeof *sh), v;
    if (so_hmap_get(&fc->standin, key, &v)) return (int32_t)v;
    int64_t n = so_shape_numel(sh);
    size_t bytes = (size_t)(n > 0 ? n : 1) * (sh->dtype == SO_I64 ? 8 : 4);
    void *data = so_weight_xalloc(bytes, 1);
    /* every page written: calloc'd memory is the kernel's shared zero page until written, which
       the caches hold, and a measured cost timed on it was that of a weight that is never
       read from memory (nasrnn_512's merged [512,1536] matmul: 0.055 ms against 0.11) */
    for (size_t j = 0; j < bytes; j += 4096) ((volatile unsigned char *)data)[j] = 0;
    int32_t id = so_model_add_weight(fc->m, NULL, *sh, data);
    so_hmap_put(&fc->standin, key, (uint64_t)id);
    return id;
}

void so_fold_free(so_fold_ctx *fc)
{
    so_hmap_free(&fc->standin);
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

/* Key of node i for common-subexpression elimination: operator, interned attributes, model
   reference (weights: content) and input edges (already remapped). */
static uint64_t cse_key(const so_graph *g, const so_node *nd)
{
    uint64_t buf[6 + 2 * SO_MAX_IN];
    int c = 0;
    buf[c++] = (uint64_t)nd->op;
    buf[c++] = (uint64_t)nd->n_out;
    if (nd->op == SO_OP_WEIGHT) {
        const so_weight *w = &g->model->weights[nd->ref];
        buf[c++] = w->hash;
        buf[c++] = XXH3_64bits(&w->shape, sizeof w->shape);
        buf[c++] = (uint64_t)w->onnx_type;
    } else {
        buf[c++] = (uint64_t)(uintptr_t)nd->attr;
        buf[c++] = (uint64_t)(int64_t)nd->ref;
        for (int k = 0; k < nd->n_in && k < SO_MAX_IN; k++) {
            buf[c++] = (uint64_t)(int64_t)nd->in[k].node;
            buf[c++] = (uint64_t)(int64_t)nd->in[k].slot;
        }
    }
    return XXH3_64bits(buf, (size_t)c * sizeof *buf);
}

/* Do nodes a and b compute the same value (same operator, attributes, reference or weight
   content, and input edges)? */
static int cse_equal(const so_graph *g, const so_node *a, const so_node *b)
{
    if (a->op != b->op || a->n_out != b->n_out || a->n_in != b->n_in) return 0;
    if (a->op == SO_OP_WEIGHT) {
        if (a->ref == b->ref) return 1;
        const so_weight *x = &g->model->weights[a->ref], *y = &g->model->weights[b->ref];
        if (x->hash != y->hash || !so_shape_eq(&x->shape, &y->shape) || x->onnx_type != y->onnx_type) return 0;
        int64_t n = so_shape_numel(&x->shape);
        size_t bytes = (size_t)(n > 0 ? n : 0) * (x->shape.dtype == SO_I64 ? 8 : 4);
        return bytes == 0 || memcmp(x->data, y->data, bytes) == 0;
    }
    if (a->attr != b->attr || a->ref != b->ref) return 0;
    for (int k = 0; k < a->n_in; k++)
        if (a->in[k].node != b->in[k].node || a->in[k].slot != b->in[k].slot) return 0;
    return 1;
}

/* Nodes that may be merged with an equal node: not graph inputs (distinct by definition),
   not opaque (kept verbatim). Every other operator is a deterministic function of its inputs. */
static int cse_candidate(const so_node *nd)
{
    return nd->op != SO_OP_INPUT && nd->op != SO_OP_OPAQUE;
}

/* Canonicalisation sorts with so_graph_toposort_track's keep_order: an already sorted graph
   keeps its order exactly (the executor runs nodes in this order), and a node appended by a
   rewrite or a fold is placed just before its first user instead of wherever a breadth-first
   queue puts it. (The importer's so_graph_toposort is breadth-first already, so imported
   graphs keep that order.) */
so_status so_canonicalize(so_fold_ctx *fc, so_graph *g, so_canon_stats *stats)
{
    return so_canonicalize_track(fc, g, stats, NULL);
}

so_status so_canonicalize_track(so_fold_ctx *fc, so_graph *g, so_canon_stats *stats, int32_t **origin)
{
    so_canon_stats cs = {0, 0, 0, 0};
    so_status st = SO_OK;
    int32_t *first = NULL;
    so_edge *remap = NULL;
    so_hmap wnode = {0}, cse = {0};
    if (so_graph_toposort_track(g, 1, origin ? *origin : NULL) != SO_OK) return SO_ERR;
    int32_t n = g->n_nodes, n_weights = 0;
    for (int32_t i = 0; i < n; i++) n_weights += g->nodes[i].op == SO_OP_WEIGHT;
    so_hmap_reserve(&wnode, (uint64_t)n_weights);
    so_hmap_reserve(&cse, (uint64_t)n);
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
        if (!so_fold_can(fc, g, i)) {
            if (!cse_candidate(nd)) continue;
            uint64_t key = cse_key(g, nd), v;
            if (so_hmap_get(&cse, key, &v)) {
                const so_node *rep = &g->nodes[v];
                if (cse_equal(g, rep, nd)) {
                    for (int s = 0; s < nd->n_out; s++) remap[first[i] + s] = (so_edge){(int32_t)v, s};
                    if (nd->op == SO_OP_WEIGHT) so_hmap_put(&wnode, (uint64_t)nd->ref, v); /* folds reuse rep */
                    cs.cse++;
                    changed = 1;
                }
            } else {
                so_hmap_put(&cse, key, (uint64_t)i);
            }
            continue;
        }
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
        if (origin && g->n_nodes > n) { /* folded weights appended: no origin */
            *origin = so_xrealloc(*origin, ((size_t)g->n_nodes + 1) * sizeof **origin);
            for (int32_t i = n; i < g->n_nodes; i++) (*origin)[i] = -1;
        }
        if (so_graph_toposort_track(g, 1, origin ? *origin : NULL) != SO_OK) {
            st = SO_ERR;
            goto done;
        }
    }
    cs.dead = so_graph_dce_track(g, origin ? *origin : NULL);
done:
    free(first);
    free(remap);
    so_hmap_free(&wnode);
    so_hmap_free(&cse);
    if (stats) {
        stats->cse += cs.cse;
        stats->folded += cs.folded;
        stats->identities += cs.identities;
        stats->dead += cs.dead;
    }
    return st;
}
