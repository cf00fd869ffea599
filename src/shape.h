/* shape.h - shape inference per operator (expands ops.def), with errors for shapes that do not fit. */
#ifndef SO_SHAPE_H
#define SO_SHAPE_H

#include "graph.h"

/* Computes g->nodes[i].out[*] from its input shapes and attributes. Inputs with
   unknown shape (rank -1) give unknown outputs. On a misfit, the error names the
   node, the op and both shapes. INPUT/WEIGHT/OPAQUE: copies from the model. */
so_status so_shape_infer(so_graph *g, int32_t i);

/* numpy broadcast of two shapes; error if incompatible. */
so_status so_shape_broadcast(const so_shape *a, const so_shape *b, so_shape *out);

#endif
