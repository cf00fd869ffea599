/* nodeeval.h - the core's interface to a node evaluator: the kernels layer registers one; the ONNX importer and exporter fold constants through it. */
#ifndef SO_NODEEVAL_H
#define SO_NODEEVAL_H

#include "graph.h"

/* A tensor view: shape (with dtype) and data (float* or int64_t* per shape.dtype). Not owning. */
typedef struct so_tensor {
    so_shape shape;
    void *data;
} so_tensor;

/* Evaluates node i of g alone: in[] are its inputs; out[k].shape is set by the caller, and the
   evaluator stores a malloc'd buffer in out[k].data (the caller frees it). */
typedef so_status (*so_node_eval_fn)(const so_graph *g, int32_t i, const so_tensor *in, so_tensor *out);

/* Registers the evaluator (kernels/ref.c registers so_ref_eval_node at load time). The core
   depends on no layer above it: this pointer is the only way it reaches the kernels. */
void so_node_eval_register(so_node_eval_fn fn);

/* Evaluates node i with the registered evaluator. Fails with "no node evaluator registered (the
   kernels are not linked)" when none is. */
so_status so_node_eval(const so_graph *g, int32_t i, const so_tensor *in, so_tensor *out);

#endif
