/* kpriv.h - private to the kernel set: small graph helpers of kernel selection, the parallel-region threshold. */
#ifndef SO_KPRIV_H
#define SO_KPRIV_H

#include "fast.h"
#include "fuse.h"

#define SO_PAR_MIN 32768 /* elements below which our loops stay single-threaded */

static inline const so_shape *shape_of(const so_graph *g, so_edge e) { return &g->nodes[e.node].out[e.slot]; }

/* The graph queries of the fusion decisions (kernels/fuse.c), shared with them. */
static inline const float *weight_f32(const so_graph *g, so_edge e) { return so_fuse_weight_f32(g, e); }
static inline int scalar_weight(const so_graph *g, so_edge e, float *v) { return so_fuse_scalar_weight(g, e, v); }
static inline int other_in(const so_node *nj, int32_t from, so_edge *o) { return so_fuse_other_in(nj, from, o); }
/* activation role (ops.def column) */
static inline int is_act_op(so_op op) { return so_ops[op].act != SO_ACT_NONE; }
static inline int act_of_op(so_op op) { return so_ops[op].act; }

#endif
