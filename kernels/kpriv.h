/* kpriv.h - private to the kernel set: small graph helpers of kernel selection, the parallel-region threshold and guard. */
#ifndef SO_KPRIV_H
#define SO_KPRIV_H

#include <omp.h>

#include "fast.h"
#include "fuse.h"

#define SO_PAR_MIN 32768 /* elements below which our loops stay single-threaded */

/* Parallel regions only where they run on more than one thread. libgomp enters a `#pragma omp parallel`
   whose if clause is false, or whose team has one thread, by allocating and freeing a one-thread team
   each time (GOMP_parallel: malloc, free, futex calls; ~0.1-0.3 us per region, perf-recorded as most of the
   run time of data/deepandwide, lstm2 and tinyseg). so_par_on(cond): whether to enter the region: cond
   holds and the team would have several threads, or the caller is inside an active region (an orphaned
   worksharing loop run without a region of its own would bind to that enclosing team). */
static inline int so_par_on(int cond) { return omp_in_parallel() || (cond && omp_get_max_threads() > 1); }
#define SO_PRAGMA(x) _Pragma(#x)
/* SO_PAR_RUN(cond, clauses, call): runs `call`, a function whose loops are orphaned `#pragma omp for`
   worksharing loops, inside `#pragma omp parallel clauses` when so_par_on(cond), else directly on the
   calling thread, where each such loop runs all its iterations in order: the split of a one-thread team,
   so the results are those of a team of one. The last worksharing loop of `call` is `nowait`: the region's end is
   its barrier (a barrier of its own there was a second synchronisation per region, 2 per 3x3 stem: data/squeezenet
   at 2 threads entered 62 such barriers per run besides its 45 regions; a19a8e6's `parallel for` had none). So a
   function run by SO_PAR_RUN is called only through it, and its results are complete only after it returns. */
#define SO_PAR_RUN(cond, clauses, call)           \
    do {                                          \
        if (so_par_on(cond)) {                    \
            SO_PRAGMA(omp parallel clauses) { call; } \
        } else {                                  \
            call;                                 \
        }                                         \
    } while (0)

static inline const so_shape *shape_of(const so_graph *g, so_edge e) { return &g->nodes[e.node].out[e.slot]; }

/* A 2-D conv-like node's geometry (Conv, ConvTranspose): input [N, C, H, W], output [N, O, Ho, Wo], a kh x kw
   kernel, group, stride / top-left pad / dilation (ONNX's defaults for a 0: group, stride, dilation 1). */
typedef struct conv2d_geom {
    int64_t N, C, H, W, O, Ho, Wo, G, kh, kw, sh, sw, ph, pw, dh, dw;
} conv2d_geom;
static inline conv2d_geom conv2d_geom_of(const so_attr *a, const so_shape *x, const so_shape *o, int64_t kh, int64_t kw)
{
    conv2d_geom q = {.N = x->dim[0], .C = x->dim[1], .H = x->dim[2], .W = x->dim[3], .O = o->dim[1], .Ho = o->dim[2], .Wo = o->dim[3],
                     .G = a->group > 0 ? a->group : 1, .kh = kh, .kw = kw, .ph = a->pad[0], .pw = a->pad[1]};
    q.sh = a->stride[0] > 0 ? a->stride[0] : 1;
    q.sw = a->stride[1] > 0 ? a->stride[1] : 1;
    q.dh = a->dilation[0] > 0 ? a->dilation[0] : 1;
    q.dw = a->dilation[1] > 0 ? a->dilation[1] : 1;
    return q;
}

/* The graph queries of the fusion decisions (kernels/fuse.c), shared with them. */
static inline const float *weight_f32(const so_graph *g, so_edge e) { return so_fuse_weight_f32(g, e); }
static inline int scalar_weight(const so_graph *g, so_edge e, float *v) { return so_fuse_scalar_weight(g, e, v); }
static inline int other_in(const so_node *nj, int32_t from, so_edge *o) { return so_fuse_other_in(nj, from, o); }
/* activation role (ops.def column) */
static inline int is_act_op(so_op op) { return so_ops[op].act != SO_ACT_NONE; }
static inline int act_of_op(so_op op) { return so_ops[op].act; }

#endif
