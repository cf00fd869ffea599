/* feed.c - seeded values for graph inputs of every element type, valid for how the graph uses them. */
#include "feed.h"

/* Narrows [0, *hi) by the uses of output (node, 0), following values that carry the same
   elements (views, Expand, Transpose, Slice, Concat). depth bounds the walk. */
static void narrow(const so_graph *g, int32_t node, int64_t *hi, int *bool_use, int depth)
{
    if (depth > 16) return;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const so_node *n = &g->nodes[i];
        for (int32_t q = 0; q < n->n_in; q++) {
            if (n->in[q].node != node || n->in[q].slot != 0) continue;
            const so_shape *x = &g->nodes[n->in[0].node].out[n->in[0].slot];
            int64_t lim = -1;
            switch (n->op) {
            case SO_OP_GATHER:
                if (q == 1 && n->attr->axis < x->rank) lim = x->dim[n->attr->axis];
                break;
            case SO_OP_GATHERELEMENTS:
            case SO_OP_SCATTERELEMENTS:
                if (q == 1 && n->attr->axis < x->rank) lim = x->dim[n->attr->axis];
                break;
            case SO_OP_GATHERND:
            case SO_OP_SCATTERND:
                if (q == 1)
                    for (int d = n->attr->axis; d < x->rank; d++)
                        if (lim < 0 || x->dim[d] < lim) lim = x->dim[d];
                break;
            case SO_OP_NLLLOSS:
                if (q == 1 && x->rank >= 2) lim = x->dim[1];
                break;
            case SO_OP_WHERE:
                if (q == 0) *bool_use = 1;
                break;
            case SO_OP_EXPAND:
            case SO_OP_TRANSPOSE:
            case SO_OP_SLICE:
            case SO_OP_CONCAT:
                narrow(g, i, hi, bool_use, depth + 1);
                break;
            default:
                if (so_ops[n->op].flags & SO_F_VIEW) narrow(g, i, hi, bool_use, depth + 1);
                break;
            }
            if (lim >= 0 && lim < *hi) *hi = lim; /* [0, lim) is valid for this use */
        }
    }
}

void so_feed_int_range(const so_graph *g, int32_t k, int64_t *lo, int64_t *hi)
{
    int bool_use = so_input_elem_type(g->model, k) == SO_BOOL;
    *lo = 0;
    *hi = INT64_MAX;
    for (int32_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == SO_OP_INPUT && g->nodes[i].ref == k) narrow(g, i, hi, &bool_use, 0);
    if (bool_use && *hi > 2) *hi = 2;
    if (*hi == INT64_MAX) *hi = 8;
    if (*hi <= *lo) *hi = *lo + 1; /* an indexed dimension of size 0: nothing valid; 0 at least */
}

void so_feed_fill(const so_graph *g, int32_t k, uint64_t *state, void *buf)
{
    const so_shape *s = &g->model->inputs[k].shape;
    int64_t n = so_shape_numel(s);
    if (s->dtype != SO_I64) {
        so_rng_fill(state, buf, (size_t)(n > 0 ? n : 0));
        return;
    }
    int64_t lo, hi;
    so_feed_int_range(g, k, &lo, &hi);
    uint64_t span = (uint64_t)(hi - lo);
    for (int64_t i = 0; i < n; i++) ((int64_t *)buf)[i] = lo + (int64_t)(so_rng_next(state) % span);
}
