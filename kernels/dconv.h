/* dconv.h - direct convolution for ungrouped convs with kernels larger than 1x1: a GEMM over the implicit im2col of a zero-padded image (6 pixels x 16 output channels in registers) with weights packed once at load. */
#ifndef SO_DCONV_H
#define SO_DCONV_H

#include <stddef.h>
#include <stdint.h>

#include "epi.h"

#define SO_DCONV_MAX_TAPS 4096 /* kh * kw at most (the selection checks it) */

typedef struct so_dconv {
    int64_t C, H, W, O, Ho, Wo, kh, kw, sh, sw, pt, pl, dh, dw;
    int64_t Hp, Wp;   /* zero-bordered input plane (pt, pl: its top/left border, only as wide as the kept taps need) */
    int64_t K, kc;    /* K = C * (taps that read the input); k steps per K block (weight micro-panel [kc][16] in L1) */
    int64_t nob, pb;  /* 16-channel output blocks; output pixels per work item (whole 6-pixel tiles) */
    int64_t og;       /* output blocks per work item */
    int T;            /* threads the scratch is sized for */
    float *wp;        /* [nob][K][16] packed weights, zero-padded channels (owned) */
    int32_t *koff;    /* [K]: offset of step k = (c, tap (i, j)) in the padded image: c*Hp*Wp + i*dh*Wp + j*dw (owned) */
    int32_t *poff;    /* [Ho*Wo]: offset of each output pixel's window corner in the padded plane (owned) */
} so_dconv;

/* Plans a conv of x [C][H][W] -> y [O][Ho][Wo] (kernel kh x kw, strides, top/left pads,
   dilations) and packs its weights w [O][C][kh][kw] (read only here). Returns the scratch
   floats so_dconv_run needs for up to `threads` OpenMP threads, or -1 when the packed weights
   cannot be allocated (d then holds nothing). */
int64_t so_dconv_plan(so_dconv *d, int64_t C, int64_t H, int64_t W, int64_t O, int64_t Ho, int64_t Wo, int64_t kh, int64_t kw, int64_t sh,
                      int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw, const float *w, int threads);
/* Bytes of packed weights held by d. */
size_t so_dconv_packed_bytes(const so_dconv *d);
/* One image: y = epilogue(conv(x)), the per-output-channel epilogue ep (bias, folded BN,
   activation, residual res [O][Ho][Wo] or NULL) applied to each finished tile. Work items
   (pixel block, channel block) are split statically over the team; every output is computed
   the same way for any thread count (bitwise identical results). */
void so_dconv_run(const so_dconv *d, const float *x, float *y, const so_epi *ep, const float *res, float *scratch);
void so_dconv_free(so_dconv *d);

/* Copies plane x [H][W] into xp [Hp][Wp] with zero borders: xp[r][c] = x[r - pt][c - pl] where that is
   inside x, else 0 (Wp may crop the right edge). Also the grouped/depthwise direct conv's padding. */
void so_dconv_pad_plane(const float *x, int64_t H, int64_t W, float *xp, int64_t Hp, int64_t Wp, int64_t pt, int64_t pl);

#endif
