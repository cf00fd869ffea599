/* kpriv.h - private to the kernel set: small graph helpers of kernel selection, the parallel-region threshold. */
#ifndef SO_KPRIV_H
#define SO_KPRIV_H

#include "fast.h"

#define SO_PAR_MIN 32768 /* elements below which our loops stay single-threaded */

static inline const so_shape *shape_of(const so_graph *g, so_edge e) { return &g->nodes[e.node].out[e.slot]; }

/* Data of a float WEIGHT input, else NULL. */
static inline const float *weight_f32(const so_graph *g, so_edge e)
{
    if (e.node < 0) return NULL;
    const so_node *n = &g->nodes[e.node];
    if (n->op != SO_OP_WEIGHT) return NULL;
    const so_weight *w = &g->model->weights[n->ref];
    return w->shape.dtype == SO_F32 ? w->data : NULL;
}

/* Scalar f32 weight at edge e into *v. */
static inline int scalar_weight(const so_graph *g, so_edge e, float *v)
{
    const float *w = weight_f32(g, e);
    if (!w || so_shape_numel(shape_of(g, e)) != 1) return 0;
    *v = w[0];
    return 1;
}

/* The other input of binary node j (the one that is not node `from`'s output), or -1 slot. */
static inline int other_in(const so_node *nj, int32_t from, so_edge *o)
{
    if (nj->n_in != 2) return 0;
    if (nj->in[0].node == from && nj->in[0].slot == 0) { *o = nj->in[1]; return 1; }
    if (nj->in[1].node == from && nj->in[1].slot == 0) { *o = nj->in[0]; return 1; }
    return 0;
}

static inline int is_act_op(so_op op)
{
    return op == SO_OP_RELU || op == SO_OP_SIGMOID || op == SO_OP_TANH || op == SO_OP_CLIP;
}

static inline int act_of_op(so_op op)
{
    switch (op) {
    case SO_OP_RELU: return SO_ACT_RELU;
    case SO_OP_SIGMOID: return SO_ACT_SIGMOID;
    case SO_OP_TANH: return SO_ACT_TANH;
    case SO_OP_CLIP: return SO_ACT_CLIP;
    default: return SO_ACT_NONE;
    }
}

#endif
