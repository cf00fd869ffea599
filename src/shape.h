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

/* ---- the dim algebra: shape rules stated once over what a dimension is ----
   A shape rule written against so_dim_alg holds for concrete dims (int64_t, so_dim_int64) and for
   the rule language's symbolic dims (rules/rule.h so_dimx: a constant plus a sum of symbols, rules/rule.c
   sym_<op>), so the importer's shapes and the rule checker apply the same statement. Today:
   broadcasting (so_dim_broadcast) and the window formula (so_window_out, concrete dims; the rule
   checker's symbolic windows reduce to it, rule.c dx_window). */
typedef struct so_dim_alg {
    size_t size;                             /* bytes of one dimension value */
    const void *one;                         /* the dimension 1 */
    int (*is_one)(const void *d);            /* d is the dimension 1 */
    int (*eq)(const void *a, const void *b); /* a and b are the same dimension (provably, for symbols) */
} so_dim_alg;
extern const so_dim_alg so_dim_int64;
/* numpy broadcasting of dims a[0..ra) with b[0..rb) (right-aligned; a missing dim is 1) into
   out[0..max(ra, rb)): a dim 1 takes the other, equal dims stay. Returns the output rank, or
   -1 - k when output axis k does not broadcast (out partly written). */
int so_dim_broadcast(const so_dim_alg *A, const void *a, int ra, const void *b, int rb, void *out);

/* Output length of a sliding window (conv/pool) over a dim of length in: kernel k, stride s, pads
   pb (leading) and pe (trailing), dilation d, ceil_mode following PyTorch / ONNX Runtime (the last
   window must start inside the input or the leading padding); -1 if the window does not fit (or the
   arithmetic overflows). The one statement of this formula: the importer's shapes, the rule
   checker's concrete dims (rules/rule.c) and the generator's instances (rules/gen_universe.c) use it. */
int64_t so_window_out(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, int ceil_mode);

#endif
