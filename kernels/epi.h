/* epi.h - activations and the per-channel epilogue applied to finished tiles by the conv and GEMM kernels. */
#ifndef SO_EPI_H
#define SO_EPI_H

#include <stdint.h>

#include "../src/ops.h"

/* An absmax fact (kernels/fast.h so_fast_kernel.facts) that says nothing: every |v| of a value is at most the float
   whose bit pattern is the fact (0x7f800000: no NaN; any pattern above it: maybe NaN). */
#define SO_ABSMAX_UNKNOWN 0xffffffffu

/* Activations an epilogue applies beyond so_act, never stored in a graph's attributes (act1/act2 of so_epi and
   so_nchwc_conv only): x * sigmoid(x) (a Sigmoid and the Mul of its input by it, absorbed together), HardSwish,
   HardSigmoid (alpha in lo, beta in hi). The fusion decision (kernels/fuse.c) offers them to Conv and CONV_NCHWC
   heads only: the blocked conv applies them in registers, the NCHW conv kernels through so_epi_act / so_epi_row
   (their row pass for every activation but Relu / Clip). */
enum { SO_EPI_SILU = SO_ACT_COUNT, SO_EPI_HARDSWISH, SO_EPI_HARDSIGMOID, SO_EPI_ACT_END };

/* Epilogue: y = act2(act1(x * scale[c] + shift[c]) + res), per channel c over a row of n. */
typedef struct so_epi {
    const float *scale, *shift; /* NULL: 1 / 0 */
    int act1, act2;             /* so_act */
    float lo1, hi1, lo2, hi2;   /* clip bounds */
    int has_res;
} so_epi;

/* The epilogue of channel c on the n floats of y (res: the residual row, or NULL). */
void so_epi_row(const so_epi *ep, int64_t c, float *y, const float *res, int64_t n);
/* The epilogue with the channel on the last axis (MatMul / Gemm): y[j] is channel c0 + j, j < n (res: the
   residual row, or NULL). */
void so_epi_cols(const so_epi *ep, int64_t c0, float *y, const float *res, int64_t n);
/* Applies a so_act to n floats in place. */
void so_epi_act(int act, float lo, float hi, float *x, int64_t n);

#endif
