/* winograd.h - Winograd F(4x4, 3x3) convolution for 3x3 stride-1 ungrouped convs: weights transformed once at load, 36 sgemms per tile block. */
#ifndef SO_WINOGRAD_H
#define SO_WINOGRAD_H

#include <stdint.h>

/* Transformed weights U [36][O][C] of a 3x3 kernel w [O][C][3][3], followed by a copy of w
   itself (for tiles recomputed directly, see so_wino_run): 45 O C floats, malloc'd, caller frees. */
float *so_wino_pack(const float *w, int64_t O, int64_t C);

typedef struct so_wino {
    int64_t C, O, H, W, Ho, Wo, pt, pl;
    int64_t th, tw, T; /* tile rows, tile columns, tiles per image */
    int64_t tb;        /* tiles per block */
    const float *U;    /* [36][O][C] */
} so_wino;

/* Fills the geometry; returns the scratch floats needed. */
int64_t so_wino_plan(so_wino *p, int64_t C, int64_t O, int64_t H, int64_t W, int64_t Ho, int64_t Wo, int64_t pt, int64_t pl,
                     const float *U);
/* One image: x [C][H][W] -> y [O][Ho][Wo] (no bias/epilogue). An output tile that comes out
   non-finite (a NaN or inf in its 6x6 input window spreads over the whole tile through the
   transforms) is recomputed directly from w, so NaN and +-inf land exactly where a direct
   convolution puts them. */
void so_wino_run(const so_wino *p, const float *x, float *y, float *scratch);

#endif
