/* pool.h - pooling kernels: max/average pooling, Pad + AveragePool as one step, GlobalAveragePool. */
#ifndef SO_POOL_H
#define SO_POOL_H

#include "fast.h"

/* Selects a kernel for node i when it is one of MaxPool, AveragePool, GlobalAveragePool (so_fast_select's contract); SO_OK with
   k->run == NULL for any other node. */
so_status so_pool_select(const so_fast_ctx *c, int32_t i, so_fast_kernel *k);

/* Pad (constant 0, spatial) node i followed by an AveragePool without pads as one pool step (the
   Pad's pads counted in the divisor); 1 when k was set. */
int so_pool_fuse_pad(const so_fast_ctx *c, int32_t i, so_fast_kernel *k);
/* Splits x[0..n) into its even (ev[i/2] = x[i], i even) and odd elements; ev and od hold (n+1)/2 floats. */
void so_pool_deinterleave2(const float *restrict x, int64_t n, float *restrict ev, float *restrict od);

#endif
