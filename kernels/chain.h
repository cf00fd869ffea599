/* chain.h - fusion chains: the single-use successors a Conv/MatMul/Gemm absorbs, folded into one per-channel epilogue. */
#ifndef SO_CHAIN_H
#define SO_CHAIN_H

#include "epi.h"
#include "fast.h"

/* Fusion chain after a head node (Conv/MatMul/Gemm) whose output has nch channels on
   axis chan_axis: absorbs BatchNormalization (chan_axis 1 only), Add of a per-channel
   weight, one activation, Add of a same-shape tensor (residual) and its activation.
   bias (length nch, may be NULL) is folded into the shift. ch->scale/shift are
   malloc'd (or NULL) and owned by the caller; ep points into them. */
typedef struct so_fast_chain {
    so_epi ep;
    float *scale, *shift;
    int32_t n_fused, fused[SO_FAST_MAX_FUSED];
    int has_extra;
    so_edge extra;
} so_fast_chain;
void so_fast_chain_build(const so_fast_ctx *c, int32_t i, int chan_axis, int64_t nch, const float *bias, so_fast_chain *ch);
/* Copies chain results into k (fused nodes, extra input). */
void so_fast_chain_apply(const so_fast_chain *ch, so_fast_kernel *k);

#endif
