/* fold.c - canonicalisation: folds weight-only nodes into weights with the reference kernels
   (memoised, content-deduplicated), removes Identity and dead nodes, keeps topological order. */
#include "fold.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "../kernels/ref.h"

void so_fold_init(so_fold_ctx *fc, so_model *m)
{
    memset(fc, 0, sizeof *fc);
    fc->m = m;
    fc->max_elems = (int64_t)1 << 24;
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
