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

/* Output length of a sliding window (conv/pool) over a dim of length in: kernel k, stride s, pads
   pb (leading) and pe (trailing), dilation d, ceil_mode following PyTorch / ONNX Runtime (the last
   window must start inside the input or the leading padding); -1 if the window does not fit (or the
   arithmetic overflows). The one statement of this formula: the importer's shapes, the rule
   checker's concrete dims (rules/rule.c) and the generator's instances (rules/gen_universe.c) use it. */
int64_t so_window_out(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, int ceil_mode);

#endif
