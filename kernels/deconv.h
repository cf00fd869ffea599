/* deconv.h - fast ConvTranspose (2-D): per group a GEMM of the transposed weights with the input rows (our packed GEMM, a range of output channels per thread; or sgemm), then col2im into the output, the bias as its start value. */
#ifndef SO_DECONV_H
#define SO_DECONV_H

#include "fast.h"

/* Selects the ConvTranspose kernel for node i (so_fast_select's contract): 2-D float, any group,
   stride, dilation, pads and output_padding (already in the output shape). k->run stays NULL for
   anything else (the reference kernel runs). */
so_status so_deconv_select(const so_fast_ctx *c, int32_t i, so_fast_kernel *k);

/* Floats of the column tile (GEMM result [Cog*kh*kw, rows*W]) a ConvTranspose works on at once:
   whole input rows up to this budget (at least one row). Tests lower it to reach the tiling. */
extern int64_t so_deconv_tile_floats;

/* Most threads (output channel ranges) one ConvTranspose is split over. */
#define SO_DECONV_MAX_T 64

#endif
