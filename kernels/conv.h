/* conv.h - fast Conv2d kernels: 1x1 direct sgemm, im2col + sgemm with bounded scratch, depthwise loop; fused per-channel epilogues. */
#ifndef SO_CONV_H
#define SO_CONV_H

#include "fast.h"

/* Selects a Conv kernel for CONV node i (absorbing BatchNormalization / Add / activation
   successors per c->user). Sets k->run = NULL for unsupported configurations. */
so_status so_conv_select(const so_fast_ctx *c, int32_t i, so_fast_kernel *k);

/* Winograd F(4x4,3x3) is used for 3x3 stride-1 ungrouped convs with weights, at least
   so_conv_wino_min_hw output pixels and so_conv_wino_min_ch input and output channels
   (tests lower them to reach small shapes). */
extern int64_t so_conv_wino_min_hw, so_conv_wino_min_ch;

/* Ungrouped convs with constant kh x kw > 1 weights and more than so_conv_dconv_min_c input channels
   run on dconv.c (direct, packed weights), except Winograd candidates with more than
   so_conv_dconv_max_wino_c input channels (those keep Winograd). */
extern int64_t so_conv_dconv_min_c, so_conv_dconv_max_wino_c;

/* Grouped convs (group > 1) with at most so_conv_direct_max_cg input channels per group
   (depthwise included) use the direct kernel instead of im2col + sgemm per group. */
extern int64_t so_conv_direct_max_cg;
/* Ungrouped stems (few input channels, >= 3x3) also use it: conv.c's direct_max_c, per level. */

/* Depthwise 3x3 convs (multiplier 1, >= 8 channels) with at most so_conv_dw_c8_max_hw input
   pixels run 8 channels per vector (transposed in and out); larger planes along W. */
extern int64_t so_conv_dw_c8_max_hw;

/* 1x1 stride-1 ungrouped convs with at most so_conv_pw_max_k input channels and either at most
   so_conv_pw_max_ko input x output channels or at most so_conv_pw_max_hw output pixels run a
   direct register-blocked kernel (weights read in place). */
extern int64_t so_conv_pw_max_k, so_conv_pw_max_ko, so_conv_pw_max_hw;

/* Other 1x1 ungrouped convs (any stride, no padding) with constant weights and at most so_conv_pk_max_hw
   output pixels run conv1x1_packed:
   weights packed as 16-channel panels, pixel chunks of so_conv_pk_np packed per call, K blocks of so_conv_pk_kc. */
extern int64_t so_conv_pk_kc, so_conv_pk_np, so_conv_pk_max_hw;

/* Largest im2col scratch (floats) a conv kernel uses; larger problems are tiled by columns. */
#define SO_CONV_SCRATCH_FLOATS ((int64_t)1 << 21)

#endif
