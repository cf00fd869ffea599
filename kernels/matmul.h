/* matmul.h - MatMul and Gemm (OpenBLAS sgemm or our GEMM, fused epilogues), the fused attention step, LSTM on sgemm. */
#ifndef SO_MATMUL_H
#define SO_MATMUL_H

#include "fast.h"

/* Selects a kernel for node i when it is one of MatMul, Gemm (and the attention chain it heads), LSTM (so_fast_select's contract); SO_OK with
   k->run == NULL for any other node. */
so_status so_matmul_select(const so_fast_ctx *c, int32_t i, so_fast_kernel *k);

#endif
