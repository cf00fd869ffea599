/* ref.h - reference kernels: plain loops, obviously correct; the oracle for every other stage (kernels/ref.c drivers, ref_elem.c, ref_nn.c, ref_move.c). */
#ifndef SO_REF_H
#define SO_REF_H

#include "../src/graph.h"
#include "../src/nodeeval.h"

/* Kernel contract: in[0..n_in) are the node's inputs, out[0..n_out) have shapes set
   (from shape inference) and data allocated by the caller. The kernel only writes out[].
   Errors (e.g. an unsupported attribute combination) set a message naming the node. */
typedef so_status (*so_kernel_fn)(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out);

/* One reference kernel per operator in ops.def (a missing one fails to link). */
#define X(e, l, ...) so_status so_ref_##l(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out);
#include "../src/ops.def"
#undef X

extern const so_kernel_fn so_ref_kernels[SO_OP_COUNT];

/* Applies a fused activation (so_act) in place to n floats. */
void so_ref_act(int act, float clip_min, float clip_max, float *x, int64_t n);

/* Resize (attr of a SO_OP_RESIZE node) along one axis: for output index x of len_out, nearest mode gives the
   source index (rounded per nearest_mode, clamped to the input) in i0 = i1 with w = 0; linear mode the two
   neighbours and the weight w of i1 (the coordinate clamped to [0, len_in - 1]). scale: the axis's scale. */
/* 1 if the resize of attr a reads two taps per axis (nearest; linear without antialiasing a downscale or
   exclude_outside): so_ref_resize_taps describes it. Cubic and the others take the general path. */
int so_ref_resize_two_tap(const so_attr *a);
void so_ref_resize_taps(const so_attr *a, int64_t x, int64_t len_out, int64_t len_in, float scale, int64_t *i0, int64_t *i1, double *w);

/* Evaluates the whole graph with the reference kernels, allocating every tensor
   separately (no planning; simple and slow). inputs: one float buffer per model input
   in order (shape from the INPUT nodes); outputs: caller-allocated buffers, one per
   model output, sized from the graph's output shapes. Fails with a message naming
   the node for opaque operators ("unsupported operator 'Foo' at node 'bar'"). */
so_status so_ref_run(const so_graph *g, const float *const *inputs, float *const *outputs);

/* Evaluates node i alone on given input tensors into malloc'd outputs (caller frees
   out[k].data). Used for constant folding; registered as the core's node evaluator
   (src/nodeeval.h) when this file is linked. */
so_status so_ref_eval_node(const so_graph *g, int32_t i, const so_tensor *in, so_tensor *out);

#endif
