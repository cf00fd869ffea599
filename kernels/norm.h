/* norm.h - normalisation and reduction kernels: Softmax, LayerNorm, BatchNorm (unfused), ReduceMean. */
#ifndef SO_NORM_H
#define SO_NORM_H

#include "fast.h"

/* Selects a kernel for node i when it is one of Softmax, LayerNormalization, BatchNormalization, ReduceMean (so_fast_select's contract); SO_OK with
   k->run == NULL for any other node. */
so_status so_norm_select(const so_fast_ctx *c, int32_t i, so_fast_kernel *k);

#endif
