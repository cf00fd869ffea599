/* conv.c - fast Conv2d: 1x1 stride-1 as sgemm on the NCHW buffer or a packed-weight 6x16 GEMM kernel (small planes, any stride), general conv as im2col (column-tiled, bounded scratch) + sgemm per group, grouped/depthwise/stem convs as a direct register-blocked kernel over stride-phase planes, depthwise 3x3 stride 2 as a row loop, Winograd via winograd.c, other ungrouped convs > 1x1 via dconv.c; per-channel epilogue (bias, folded BatchNorm, activation, residual). */
#include "kset_names.h"

#include "conv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <omp.h>
#if defined(__FMA__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "chain.h"
#include "dconv.h"
#include "epi.h"
#include "gemm.h"
#include "kpriv.h"
#include "pool.h"
#include "sgemm.h"
#include "vmath.h"
#include "winograd.h"

#define CONV_PAR_MIN 32768
#define CONV_ROWS_MIN 32 /* output channels per thread from which a multi-thread 1x1 expansion on oneDNN splits rows (conv_gemm_run) */

enum { CONV_1X1, CONV_IM2COL, CONV_DW, CONV_WINO, CONV_DW3, CONV_STEM, CONV_PW, CONV_PK, CONV_DCONV };

/* Ungrouped convs with at most direct_max_c input channels and >= 3x3 kernels use the direct kernel (stems;
   with AVX2 the register-blocked conv_stem kernel when the weights are constant, and only up to
   so_conv_dconv_min_c channels: above it dconv.c). */
#ifdef __AVX2__
static const int64_t direct_max_c = 16; /* conv_stem: SqueezeNet's 16 -> 64 3x3 at 55x55 0.74 vs 0.81 ms im2col (1 thread) */
#else
static const int64_t direct_max_c = 4;
#endif

typedef struct conv_plan {
    int kind;
    int64_t N, C, H, W, O, Ho, Wo, G, Cg, Og, K;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    int64_t tile; /* im2col columns per tile; CONV_PW, CONV_PK: pixels per chunk */
    int64_t kc;   /* CONV_PK: K block */
    int64_t Hp, Wp; /* CONV_DW: phase plane rows (Hh) and row length (Wh) */
    int64_t ps, band; /* CONV_DW: floats per phase plane (flat outputs + DC_CHUNK + largest tap offset), rows per band */
    int64_t Hq, Wq; /* conv_dw3s2_run, dw3_c8: zero-bordered input plane (dw3_c8: pixels of 8 channels) */
    int32_t *toff;  /* CONV_DW: per tap, offset into a channel's phase planes; CONV_STEM: per (input channel, tap), into the phase planes of all channels (owned) */
    int32_t *ioff; /* CONV_DW3 small planes: input pixel -> padded pixel (owned) */
    so_wino wino;   /* CONV_WINO geometry */
    so_dconv dc;    /* CONV_DCONV plan and packed weights (owned) */
    float *U;       /* CONV_WINO transformed weights (owned) */
    float *Ap;      /* CONV_1X1 on so_gemm: weights packed at load (owned), scratch sized for gT threads */
    int gT;
    int res_in;   /* index of the residual in in[] or -1 */
    so_fast_chain ch;
} conv_plan;

static void conv_free(void *pp)
{
    conv_plan *p = pp;
    free(p->ch.scale);
    free(p->ch.shift);
    free(p->U);
    free(p->Ap);
    free(p->toff);
    free(p->ioff);
    so_dconv_free(&p->dc);
    free(p);
}

/* Epilogue over all output channels of image n. */
static void epilogue(const conv_plan *p, float *Y, const float *R)
{
    const so_epi *ep = &p->ch.ep;
    if (!ep->scale && !ep->shift && !ep->act1 && !R) return;
    int64_t hw = p->Ho * p->Wo;
#pragma omp parallel for if (p->O * hw > CONV_PAR_MIN)
    for (int64_t o = 0; o < p->O; o++) so_epi_row(ep, o, Y + o * hw, R ? R + o * hw : NULL, hw);
}

/* im2col of group input x (Cg channels of H*W) for output columns [p0, p1) into col [K, p1-p0]. */
static void im2col(const conv_plan *p, const float *x, float *col, int64_t p0, int64_t p1)
{
    int64_t cols = p1 - p0;
    for (int64_t r = 0; r < p->K; r++) {
        int64_t c = r / (p->kh * p->kw), ij = r % (p->kh * p->kw), i = ij / p->kw, j = ij % p->kw;
        const float *xc = x + c * p->H * p->W;
        float *dst = col + r * cols;
        int64_t q = p0;
        while (q < p1) {
            int64_t oh = q / p->Wo, ow0 = q % p->Wo;
            int64_t ow1 = SO_MIN(p->Wo, ow0 + (p1 - q));
            float *d = dst + (q - p0);
            int64_t ih = oh * p->sh - p->ph + i * p->dh;
            if (ih < 0 || ih >= p->H) {
                memset(d, 0, sizeof *d * (size_t)(ow1 - ow0));
            } else {
                const float *xr = xc + ih * p->W;
                int64_t off = j * p->dw - p->pw; /* iw = ow*sw + off */
                /* valid ow: 0 <= ow*sw + off < W, i.e. [va, vb); zeros outside, no per-element test inside */
                int64_t va = off >= 0 ? 0 : (-off + p->sw - 1) / p->sw, vb = p->W - off > 0 ? (p->W - off + p->sw - 1) / p->sw : 0;
                int64_t a = SO_MIN(SO_MAX(va, ow0), ow1), b = SO_MAX(a, SO_MIN(vb, ow1));
                for (int64_t ow = ow0; ow < a; ow++) d[ow - ow0] = 0.f;
                if (p->sw == 1) {
                    if (b > a) memcpy(d + (a - ow0), xr + a + off, sizeof *d * (size_t)(b - a));
                } else {
                    for (int64_t ow = a; ow < b; ow++) d[ow - ow0] = xr[ow * p->sw + off];
                }
                for (int64_t ow = b; ow < ow1; ow++) d[ow - ow0] = 0.f;
            }
            q += ow1 - ow0;
        }
    }
}

/* One column tile [p0, p1) of output rows [o0, o1) of one group (o within the group): im2col (unless 1x1), sgemm,
   then the epilogue on the tile while it is still in cache. */
static void conv_tile(const conv_plan *p, const float *xg, const float *wg, float *yg, const float *Rg, int64_t g, int64_t p0,
                      int64_t p1, int64_t o0, int64_t o1, float *col)
{
    const int64_t hw = p->Ho * p->Wo, cols = p1 - p0;
    const float *B = xg + p0;
    int64_t ldb = hw;
    if (p->kind != CONV_1X1) {
        im2col(p, xg, col, p0, p1);
        B = col;
        ldb = cols;
    }
    so_epi local = p->ch.ep;
    const so_epi *ep = &local;
    float beta = 0.f;
    if (!ep->scale && ep->shift) { /* bias only: start the accumulator at the bias (no beta pass, no add pass) */
        for (int64_t o = o0; o < o1; o++) {
            float t = ep->shift[g * p->Og + o], *y = yg + o * hw + p0;
            for (int64_t j = 0; j < cols; j++) y[j] = t;
        }
        local.shift = NULL;
        beta = 1.f;
    }
    so_sgemm(0, 0, o1 - o0, cols, p->K, 1.f, wg + o0 * p->K, p->K, B, ldb, beta, yg + o0 * hw + p0, hw);
    if (!ep->scale && !ep->shift && !ep->act1 && !Rg) return;
    for (int64_t o = o0; o < o1; o++)
        so_epi_row(ep, g * p->Og + o, yg + o * hw + p0, Rg ? Rg + o * hw + p0 : NULL, cols);
}

/* 1x1 stride-1 group-1 conv on our GEMM (gemm.c): weights packed at load as A, the image read
   as B, the per-channel epilogue applied to each finished tile. */
static void conv_1x1_gemm_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const conv_plan *p = priv;
    const float *X = in[0].data, *R = p->res_in >= 0 ? in[p->res_in].data : NULL;
    float *Y = out[0].data;
    const int64_t hw = p->Ho * p->Wo;
    const int T = so_sgemm_threads() < p->gT ? so_sgemm_threads() : p->gT;
    for (int64_t n = 0; n < p->N; n++) {
        so_gemm_bsrc src = {.B = X + n * p->C * hw, .ldb = hw};
        so_gemm_epi ge = {.ep = &p->ch.ep, .per_row = 1, .res = R ? R + n * p->O * hw : NULL, .ldr = hw};
        so_gemm_apacked(p->O, hw, p->K, p->Ap, &src, 0.f, Y + n * p->O * hw, hw, &ge, scratch, T);
    }
}

static void conv_gemm_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const conv_plan *p = priv;
    const float *X = in[0].data, *Wt = in[1].data;
    const float *R = p->res_in >= 0 ? in[p->res_in].data : NULL;
    float *Y = out[0].data;
    const int64_t hw_in = p->H * p->W, hw = p->Ho * p->Wo, ntiles = (hw + p->tile - 1) / p->tile, nwork = p->G * ntiles;
    /* 1x1 convs with several threads: each thread one range of columns (16-multiples) of every group, its sgemm
       single-threaded and its epilogue run on the range while it is in cache; otherwise sgemm threads itself and the
       epilogue (so_epi_row over the O rows) ran on one thread after it (ShuffleNet's 1x1 convs: slower at 2 threads
       than at 1). An expansion (more output channels than input channels) on oneDNN's sgemm with at least
       CONV_ROWS_MIN output channels per thread (one group) splits output rows over all columns instead: each thread
       then writes whole channels, which the next step (a depthwise conv, split by channels) reads from its own core,
       at the price of each thread reading all of the smaller input. MNASNet's NCHW 1x1s, 2 threads, in-model per-step
       minima over 3 x 4 x 300 runs new vs old (Intel Xeon model 207, load 6-9, session 21): the 784-column expansions
       40 -> 120 and 40 -> 240 0.70-0.87 in every comparison; with rows for every shape, its 72 -> 40 / 120 -> 40
       projections read 1.1-1.3 (rows/columns 1.31-1.72 in a micro-benchmark whose input was written by a
       channel-split region, as a depthwise step writes it); 24 -> 72 x 3136 neutral (0.96-1.05). The split is
       fixed: results do not change from run to run. */
    const int T = so_sgemm_threads();
    if (p->kind == CONV_1X1 && T > 1 && hw >= 32 * T && p->N * p->O * hw * p->K >= ((int64_t)1 << 20)) {
        const int rows = p->G == 1 && p->O > p->K && p->Og >= CONV_ROWS_MIN * T && so_sgemm_onednn();
        for (int64_t n = 0; n < p->N; n++) {
            const float *xn = X + n * p->C * hw_in, *Rn = R ? R + n * p->O * hw : NULL;
            float *yn = Y + n * p->O * hw;
            if (rows) {
#pragma omp parallel for num_threads(T) schedule(static)
                for (int t = 0; t < T; t++) conv_tile(p, xn, Wt, yn, Rn, 0, 0, hw, p->Og * t / T, p->Og * (t + 1) / T, NULL);
                continue;
            }
#pragma omp parallel for num_threads(T) schedule(static) collapse(2)
            for (int64_t g = 0; g < p->G; g++)
                for (int t = 0; t < T; t++) {
                    const int64_t j0 = (hw * t / T) & ~(int64_t)15, j1 = t == T - 1 ? hw : (hw * (t + 1) / T) & ~(int64_t)15;
                    if (j1 > j0)
                        conv_tile(p, xn + g * p->Cg * hw_in, Wt + g * p->Og * p->K, yn + g * p->Og * hw, Rn ? Rn + g * p->Og * hw : NULL,
                                  g, j0, j1, 0, p->Og, NULL);
                }
        }
        return;
    }
    for (int64_t n = 0; n < p->N; n++) {
        const float *xn = X + n * p->C * hw_in, *Rn = R ? R + n * p->O * hw : NULL;
        float *yn = Y + n * p->O * hw;
        for (int64_t q = 0; q < nwork; q++) { /* sgemm threads itself */
            int64_t g = q / ntiles, p0 = (q % ntiles) * p->tile;
            conv_tile(p, xn + g * p->Cg * hw_in, Wt + g * p->Og * p->K, yn + g * p->Og * hw, Rn ? Rn + g * p->Og * hw : NULL, g, p0,
                      SO_MIN(hw, p0 + p->tile), 0, p->Og, scratch);
        }
    }
}

static void conv_wino_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const conv_plan *p = priv;
    const float *X = in[0].data;
    const float *R = p->res_in >= 0 ? in[p->res_in].data : NULL;
    float *Y = out[0].data;
    int64_t hw_in = p->H * p->W, hw = p->Ho * p->Wo;
    for (int64_t n = 0; n < p->N; n++) {
        so_wino_run(&p->wino, X + n * p->C * hw_in, Y + n * p->O * hw, scratch);
        epilogue(p, Y + n * p->O * hw, R ? R + n * p->O * hw : NULL);
    }
}

#ifdef __AVX2__
/* Ungrouped conv on dconv.c (weights packed at load), epilogue fused per tile. */
static void conv_dconv_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const conv_plan *p = priv;
    const float *X = in[0].data;
    const float *R = p->res_in >= 0 ? in[p->res_in].data : NULL;
    float *Y = out[0].data;
    const int64_t hw_in = p->H * p->W, hw = p->Ho * p->Wo;
    for (int64_t n = 0; n < p->N; n++)
        so_dconv_run(&p->dc, X + n * p->C * hw_in, Y + n * p->O * hw, &p->ch.ep, R ? R + n * p->O * hw : NULL, scratch);
}
#endif

/* ---- direct conv for depthwise and small-group convs ----
   Each input channel of a group is split into sh*sw phase planes of Hh x Wh (stride
   phases), zero-bordered: phase (a, b) row r col q = x[r*sh + a - pt][q*sw + b - pl]. Tap
   (i, j) of output (oh, ow) then reads phase (i*dh % sh, j*dw % sw) at the flat index
   k + (i*dh / sh) * Wh + (j*dw / sw) with k = oh * Wh + ow: every tap is a contiguous,
   unit-stride run over the whole output plane (Wh - Wo garbage columns per row, dropped
   when the block is copied out), so the loops vectorise over Ho * Wh instead of one short
   row, for any stride and dilation. Outputs are computed OB at a time, the accumulators
   in registers, each input load shared by the OB outputs of the group. */
typedef float v8 __attribute__((vector_size(32)));
/* Below AVX (the scalar level) GCC notes that returning a 32-byte vector changes the ABI; these helpers
   are static and inlined into static functions, and nothing in this file exports a vector type, so no call
   crosses that ABI (GCC reports it where the inlined calls end up: for the rest of the file). */
#pragma GCC diagnostic ignored "-Wpsabi"

static inline v8 ld8(const float *p)
{
    v8 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void st8(float *p, v8 v) { memcpy(p, &v, sizeof v); }

static inline v8 splat8(float w) { return (v8){w, w, w, w, w, w, w, w}; }

static inline v8 fma8(v8 a, v8 b, v8 c)
{
#ifdef __FMA__
    return (v8)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
    return a * b + c;
#endif
}

#define DC_CHUNK 32 /* band lengths (flat outputs) are rounded up to a multiple: both register blocks divide it */

/* OB outputs (weights w, output stride ws between outputs) over planes xp (Cg channels of
   cs floats, tap offsets toff[T]) into z [OB][Lr] (Lr flat outputs, a multiple of 8 * NV).
   NV vectors of 8 per block; OB * NV accumulators live in registers. */
static inline __attribute__((always_inline)) void dc_block(int OB, int NV, const float *xp, int64_t Cg, int64_t cs,
                                                          const int32_t *toff, int64_t T, const float *w, int64_t ws, float *z,
                                                          int64_t Lr)
{
    for (int64_t k0 = 0; k0 < Lr; k0 += 8 * NV) {
        v8 acc[4][4];
#pragma GCC unroll 4
        for (int ob = 0; ob < OB; ob++)
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) acc[ob][v] = splat8(0.f);
        for (int64_t c = 0; c < Cg; c++) {
            const float *xc = xp + c * cs + k0, *wc = w + c * T;
            for (int64_t t = 0; t < T; t++) {
                const float *xt = xc + toff[t];
                v8 x[4];
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++) x[v] = ld8(xt + 8 * v);
#pragma GCC unroll 4
                for (int ob = 0; ob < OB; ob++) {
                    v8 wv = splat8(wc[ob * ws + t]);
#pragma GCC unroll 4
                    for (int v = 0; v < NV; v++) acc[ob][v] = fma8(wv, x[v], acc[ob][v]);
                }
            }
        }
#pragma GCC unroll 4
        for (int ob = 0; ob < OB; ob++)
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) st8(z + ob * Lr + k0 + 8 * v, acc[ob][v]);
    }
}

/* d[q] = src[q + off] where 0 <= q + off < n, else 0, for q in [0, len). */
static void fill_row(float *d, int64_t len, const float *src, int64_t n, int64_t off)
{
    int64_t q0 = SO_MIN(len, SO_MAX(0, -off)), q1 = SO_MAX(q0, SO_MIN(len, n - off));
    for (int64_t q = 0; q < q0; q++) d[q] = 0.f;
    if (q1 > q0) memcpy(d + q0, src + q0 + off, sizeof *d * (size_t)(q1 - q0));
    for (int64_t q = q1; q < len; q++) d[q] = 0.f;
}

static int64_t floor_div2(int64_t a) { return a >= 0 ? a / 2 : -((-a + 1) / 2); }

#define DC_ROW_MAX 4096 /* widest input row deinterleaved on the stack (stride 2) */

/* Fills the sh*sw phase planes (each ps floats, Hh x Wh used, the rest zero) of plane x [H, W]. */
static void dc_phases(const conv_plan *p, const float *x, float *xp)
{
    const int64_t Hh = p->Hp, Wh = p->Wp, W = p->W;
    for (int64_t a = 0; a < p->sh; a++) {
        for (int64_t r = 0; r < Hh; r++) {
            int64_t ir = r * p->sh + a - p->ph;
            const float *xr = x + ir * W;
            if (ir < 0 || ir >= p->H) {
                for (int64_t b = 0; b < p->sw; b++) memset(xp + (a * p->sw + b) * p->ps + r * Wh, 0, sizeof(float) * (size_t)Wh);
            } else if (p->sw == 1) {
                fill_row(xp + a * p->ps + r * Wh, Wh, xr, W, -p->pw);
            } else if (p->sw == 2 && W <= DC_ROW_MAX) { /* deinterleave the row once, then shifted copies */
                float ev[DC_ROW_MAX / 2 + 8], od[DC_ROW_MAX / 2 + 8];
                so_pool_deinterleave2(xr, W, ev, od);
                for (int64_t b = 0; b < 2; b++) {
                    int64_t t = b - p->pw; /* iw = 2q + t */
                    float *d = xp + (a * 2 + b) * p->ps + r * Wh;
                    if (t % 2 == 0)
                        fill_row(d, Wh, ev, (W + 1) / 2, floor_div2(t));
                    else
                        fill_row(d, Wh, od, W / 2, floor_div2(t - 1));
                }
            } else {
                for (int64_t b = 0; b < p->sw; b++) {
                    float *d = xp + (a * p->sw + b) * p->ps + r * Wh;
                    int64_t off = b - p->pw; /* iw = q*sw + off */
                    for (int64_t q = 0; q < Wh; q++) {
                        int64_t iw = q * p->sw + off;
                        d[q] = (iw >= 0 && iw < W) ? xr[iw] : 0.f;
                    }
                }
            }
        }
        for (int64_t b = 0; b < p->sw; b++) {
            float *d = xp + (a * p->sw + b) * p->ps + Hh * Wh;
            memset(d, 0, sizeof *d * (size_t)(p->ps - Hh * Wh));
        }
    }
}

static void conv_dw_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const conv_plan *p = priv;
    const float *X = in[0].data, *Wt = in[1].data;
    const float *R = p->res_in >= 0 ? in[p->res_in].data : NULL;
    float *Y = out[0].data;
    const int64_t hw_in = p->H * p->W, hw = p->Ho * p->Wo, Cg = p->Cg, Og = p->Og, T = p->kh * p->kw;
    const int64_t cs = p->sh * p->sw * p->ps, Wh = p->Wp;
    const int64_t per_thread = Cg * cs + 4 * (p->band * Wh + DC_CHUNK);
    /* few groups (stems: one): each group's outputs split into parts of a multiple of 4 so
       threads share the work; every output is computed the same way whatever the split */
    const int64_t ns = p->N * p->G >= 8 ? 1 : SO_MAX(1, SO_MIN(Og / 16, (8 + p->N * p->G - 1) / (p->N * p->G)));
    const int64_t per = ((Og + ns - 1) / ns + 3) / 4 * 4;
#pragma omp parallel for if (p->N * p->O * hw * Cg * T > CONV_PAR_MIN)
    for (int64_t q = 0; q < p->N * p->G * ns; q++) {
        int64_t n = q / (p->G * ns), g = q / ns % p->G, o0 = g * Og + q % ns * per, o1 = SO_MIN((g + 1) * Og, o0 + per);
        if (o0 >= o1) continue;
        float *xp = scratch + (int64_t)omp_get_thread_num() * per_thread, *z = xp + Cg * cs;
        for (int64_t c = 0; c < Cg; c++) dc_phases(p, X + (n * p->C + g * Cg + c) * hw_in, xp + c * cs);
        for (int64_t o = o0; o < o1;) {
            int ob = o1 - o >= 4 ? 4 : 1;
            const float *w = Wt + o * Cg * T;
            for (int64_t oh0 = 0; oh0 < p->Ho; oh0 += p->band) { /* row bands: z stays in L1 */
                int64_t oh1 = SO_MIN(p->Ho, oh0 + p->band), kb = oh0 * Wh;
                int64_t len = ((oh1 - oh0) * Wh + DC_CHUNK - 1) / DC_CHUNK * DC_CHUNK;
                if (ob == 4)
                    dc_block(4, 2, xp + kb, Cg, cs, p->toff, T, w, Cg * T, z, len);
                else
                    dc_block(1, 4, xp + kb, Cg, cs, p->toff, T, w, Cg * T, z, len);
                for (int b = 0; b < ob; b++) {
                    float *y = Y + (n * p->O + o + b) * hw + oh0 * p->Wo;
                    for (int64_t oh = oh0; oh < oh1; oh++)
                        memcpy(y + (oh - oh0) * p->Wo, z + b * len + (oh - oh0) * Wh, sizeof *y * (size_t)p->Wo);
                    so_epi_row(&p->ch.ep, o + b, y, R ? R + (n * p->O + o + b) * hw + oh0 * p->Wo : NULL,
                                    (oh1 - oh0) * p->Wo);
                }
            }
            o += ob;
        }
    }
}

/* Depthwise 3x3 stride 2 (measured faster than the phase-plane kernel on MobileNet-v2's
   stride-2 layers): the input plane is copied once into a zero-bordered per-thread buffer
   [Hq, Wq]; nine taps per channel in one vectorised pass per output row, epilogue on the
   row in L1. */
static void conv_dw3s2_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const conv_plan *p = priv;
    const float *X = in[0].data, *Wt = in[1].data;
    const float *R = p->res_in >= 0 ? in[p->res_in].data : NULL;
    float *Y = out[0].data;
    const int64_t hw_in = p->H * p->W, hw = p->Ho * p->Wo, Wo = p->Wo, sw = p->sw, dw = p->dw, kh = p->kh, kw = p->kw;
    const int64_t Hp = p->Hq, Wp = p->Wq, Cg = p->Cg, Og = p->Og, plane = Hp * Wp;
    const int fast3 = kh == 3 && kw == 3 && p->dh == 1 && dw == 1 && (sw == 1 || sw == 2);
#pragma omp parallel for if (p->N * p->O * hw * Cg * kh * kw > CONV_PAR_MIN)
    for (int64_t q = 0; q < p->N * p->G; q++) {
        int64_t n = q / p->G, g = q % p->G;
        float *xp = scratch + (int64_t)omp_get_thread_num() * Cg * plane;
        for (int64_t c = 0; c < Cg; c++)
            so_dconv_pad_plane(X + (n * p->C + g * Cg + c) * hw_in, p->H, p->W, xp + c * plane, Hp, Wp, p->ph, p->pw);
        for (int64_t o = g * Og; o < (g + 1) * Og; o++) {
            const float *w = Wt + o * Cg * kh * kw;
            float *y = Y + (n * p->O + o) * hw;
            const float *Ro = R ? R + (n * p->O + o) * hw : NULL;
            if (fast3) {
                /* 3x3: nine taps per input channel in one pass per output row; epilogue on the row in L1 */
                for (int64_t oh = 0; oh < p->Ho; oh++) {
                    float *restrict yr = y + oh * Wo;
                    for (int64_t c = 0; c < Cg; c++) {
                        const float *wc = w + c * 9;
                        const float w00 = wc[0], w01 = wc[1], w02 = wc[2], w10 = wc[3], w11 = wc[4], w12 = wc[5], w20 = wc[6],
                                    w21 = wc[7], w22 = wc[8];
                        const float *restrict r0 = xp + c * plane + oh * p->sh * Wp, *restrict r1 = r0 + Wp, *restrict r2 = r1 + Wp;
#define TAPS(S)                                                                                                        \
    (w00 * r0[(S) * ow] + w01 * r0[(S) * ow + 1] + w02 * r0[(S) * ow + 2] + w10 * r1[(S) * ow] + w11 * r1[(S) * ow + 1] + \
     w12 * r1[(S) * ow + 2] + w20 * r2[(S) * ow] + w21 * r2[(S) * ow + 1] + w22 * r2[(S) * ow + 2])
                        if (sw == 1 && c == 0) {
#pragma omp simd
                            for (int64_t ow = 0; ow < Wo; ow++) yr[ow] = TAPS(1);
                        } else if (sw == 1) {
#pragma omp simd
                            for (int64_t ow = 0; ow < Wo; ow++) yr[ow] += TAPS(1);
                        } else if (c == 0) {
#pragma omp simd
                            for (int64_t ow = 0; ow < Wo; ow++) yr[ow] = TAPS(2);
                        } else {
#pragma omp simd
                            for (int64_t ow = 0; ow < Wo; ow++) yr[ow] += TAPS(2);
                        }
#undef TAPS
                    }
                    so_epi_row(&p->ch.ep, o, yr, Ro ? Ro + oh * Wo : NULL, Wo);
                }
                continue;
            }
            for (int64_t oh = 0; oh < p->Ho; oh++) {
                float *restrict yr = y + oh * Wo;
                for (int64_t ow = 0; ow < Wo; ow++) yr[ow] = 0.f;
                for (int64_t c = 0; c < Cg; c++)
                    for (int64_t i = 0; i < kh; i++) {
                        const float *restrict xr = xp + c * plane + (oh * p->sh + i * p->dh) * Wp;
                        const float *wi = w + (c * kh + i) * kw;
                        for (int64_t j = 0; j < kw; j++) {
                            float wv = wi[j];
                            const float *xs = xr + j * dw;
#pragma omp simd
                            for (int64_t ow = 0; ow < Wo; ow++) yr[ow] += wv * xs[ow * sw];
                        }
                    }
            }
            so_epi_row(&p->ch.ep, o, y, Ro, hw);
        }
    }
}

#ifdef __AVX2__
/* ---- depthwise 3x3, stride 1 or 2 (CONV_DW3) ----
   Straight from the NCHW input, no padded copy: R output rows per pass, vectorised along W
   (8 output columns per vector). Each input row's three tap vectors are loaded once and feed
   the (up to 3) output rows that use them; the nine weights stay in registers. Rows outside
   the input read a static zero row; column vectors that reach past either edge use masked
   loads (masked-off lanes read as 0 = the padding), interior vectors plain loads. Stride 2:
   the 16 (+2) input floats of 8 outputs are split by in-lane shuffles into even / odd taps,
   which leaves the outputs in the lane order [0 1 4 5 | 2 3 6 7]: one permute per stored
   vector puts them back. Bias / folded BatchNorm / Relu / Clip are applied in registers
   before the one store (other epilogues and residuals: a row pass afterwards). */
typedef struct dw3_epi {
    __m256 s, t, lo, hi;
} dw3_epi;

/* Output channel o's epilogue broadcast into registers: scale/shift and the clamp of act1
   (none / Relu / Clip) when it is applied in registers (inreg), else the identity. */
static inline dw3_epi dw3_epi_of(const so_epi *ep, int inreg, int64_t o)
{
    dw3_epi e;
    e.s = _mm256_set1_ps(inreg && ep->scale ? ep->scale[o] : 1.f);
    e.t = _mm256_set1_ps(inreg && ep->shift ? ep->shift[o] : 0.f);
    e.lo = _mm256_set1_ps(!inreg || ep->act1 == SO_ACT_NONE ? -INFINITY : ep->act1 == SO_ACT_RELU ? 0.f : ep->lo1);
    e.hi = _mm256_set1_ps(inreg && ep->act1 == SO_ACT_CLIP ? ep->hi1 : INFINITY);
    return e;
}

static const float dw3_zeros[DC_ROW_MAX + 64];
static const int32_t dw3_mask_tab[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

/* Lanes l with 0 <= q + l < W. */
static inline __m256i dw3_mask(int64_t q, int64_t W)
{
    __m256i idx = _mm256_add_epi32(_mm256_set1_epi32((int)q), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    return _mm256_and_si256(_mm256_cmpgt_epi32(idx, _mm256_set1_epi32(-1)), _mm256_cmpgt_epi32(_mm256_set1_epi32((int)W), idx));
}

/* m: the mask, read only for EDGE loads (NULL otherwise). */
static inline __attribute__((always_inline)) __m256 dw3_ld(int EDGE, const float *p, const __m256i *m)
{
    return EDGE ? _mm256_maskload_ps(p, *m) : _mm256_loadu_ps(p);
}

/* R output rows (row i at y + i * Wo, columns [ow, ow + 8)) from input rows rows[k],
   k in [0, S*(R-1)+3), reading from column b = ow*S - pl on; mk: the load masks (EDGE). */
static inline __attribute__((always_inline)) void dw3_block(int R, int S, int EDGE, const float *const *rows, int64_t b,
                                                           const __m256i *mk, const __m256 *wv, const dw3_epi *e, float *y,
                                                           int64_t Wo, int64_t ow, int partial)
{
    __m256 acc[4];
#pragma GCC unroll 4
    for (int i = 0; i < R; i++) acc[i] = _mm256_setzero_ps();
#pragma GCC unroll 9
    for (int k = 0; k < S * (R - 1) + 3; k++) {
        const float *xr = rows[k] + b;
        __m256 a0, a1, a2;
        if (S == 1) {
            a0 = dw3_ld(EDGE, xr, mk + 0);
            a1 = dw3_ld(EDGE, xr + 1, mk + 1);
            a2 = dw3_ld(EDGE, xr + 2, mk + 2);
        } else {
            __m256 l0 = dw3_ld(EDGE, xr, mk + 0), l1 = dw3_ld(EDGE, xr + 8, mk + 1);
            __m256 l2 = dw3_ld(EDGE, xr + 2, mk + 2), l3 = dw3_ld(EDGE, xr + 10, mk + 3);
            a0 = _mm256_shuffle_ps(l0, l1, _MM_SHUFFLE(2, 0, 2, 0));
            a1 = _mm256_shuffle_ps(l0, l1, _MM_SHUFFLE(3, 1, 3, 1));
            a2 = _mm256_shuffle_ps(l2, l3, _MM_SHUFFLE(2, 0, 2, 0));
        }
#pragma GCC unroll 4
        for (int i = 0; i < R; i++) {
            int ti = k - S * i;
            if (ti < 0 || ti > 2) continue;
            acc[i] = _mm256_fmadd_ps(wv[ti * 3], a0, acc[i]);
            acc[i] = _mm256_fmadd_ps(wv[ti * 3 + 1], a1, acc[i]);
            acc[i] = _mm256_fmadd_ps(wv[ti * 3 + 2], a2, acc[i]);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < R; i++) {
        __m256 v = _mm256_min_ps(e->hi, _mm256_max_ps(e->lo, _mm256_fmadd_ps(acc[i], e->s, e->t)));
        if (S == 2) v = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), 0xD8));
        if (!partial)
            _mm256_storeu_ps(y + i * Wo + ow, v);
        else
            _mm256_maskstore_ps(y + i * Wo + ow, _mm256_loadu_si256((const __m256i *)(dw3_mask_tab + 8 - (Wo - ow))), v);
    }
}

/* R output rows from oh on, all column vectors: full vectors at 0, 8, ..., the last one
   overlapping at Wo - 8 (outputs recomputed identically), a masked store when Wo < 8. */
static inline __attribute__((always_inline)) void dw3_rows(int R, int S, const conv_plan *p, const float *x, int64_t oh,
                                                          const __m256 *wv, const dw3_epi *e, float *y)
{
    const int64_t W = p->W, Wo = p->Wo, span = S == 1 ? 10 : 18;
    const float *rows[9];
#pragma GCC unroll 9
    for (int k = 0; k < S * (R - 1) + 3; k++) {
        int64_t ir = oh * S - p->ph + k;
        rows[k] = ir >= 0 && ir < p->H ? x + ir * W : dw3_zeros;
    }
    y += oh * Wo;
    for (int64_t ow = 0; ow < Wo; ow += 8) {
        if (ow + 8 > Wo && Wo >= 8) ow = Wo - 8;
        int64_t b = ow * S - p->pw;
        if (b >= 0 && b + span <= W) {
            dw3_block(R, S, 0, rows, b, NULL, wv, e, y, Wo, ow, 0);
        } else {
            __m256i mk[4];
            if (S == 1) {
                for (int j = 0; j < 3; j++) mk[j] = dw3_mask(b + j, W);
            } else {
                mk[0] = dw3_mask(b, W);
                mk[1] = dw3_mask(b + 8, W);
                mk[2] = dw3_mask(b + 2, W);
                mk[3] = dw3_mask(b + 10, W);
            }
            dw3_block(R, S, 1, rows, b, mk, wv, e, y, Wo, ow, Wo < 8);
        }
    }
}

/* ---- depthwise 3x3 on small planes, 8 channels per vector ----
   For planes of at most so_conv_dw_c8_max_hw input pixels the row kernel's vectors are
   mostly edges. Instead 8 channels are transposed (8x8 in registers) into a zero-bordered
   per-thread buffer of [Hq][Wq][8] floats (pixel-major, the 8 channels in one vector), so
   every tap is an aligned load with no edge cases; 4 adjacent outputs of a row share their
   tap columns (stride 1: 6 loads per tap row for 12 FMAs), go pixel-major into a second
   buffer with the epilogue applied, and every 8 consecutive outputs of the 8 channels are
   transposed back and stored as 8 unit-stride runs. The border is zeroed once per run per
   thread (only pixel positions are rewritten). */

/* Channels [o, o + 8) of image n (multiplier 1: input channel = output channel). */
static void dw3_c8(const conv_plan *p, const float *x, const float *w, const so_epi *ep, int inreg, int64_t o, float *y, float *T)
{
    const int64_t P = p->H * p->W, Q = p->Ho * p->Wo, Wp = p->Wq, hw_in = P, hw = Q;
    const int32_t *ioff = p->ioff;
    int64_t p0 = 0;
    for (; p0 + 8 <= P; p0 += 8) {
        __m256 r[8];
        for (int c = 0; c < 8; c++) r[c] = _mm256_loadu_ps(x + c * hw_in + p0);
        so_tr8x8(r);
        for (int k = 0; k < 8; k++) _mm256_store_ps(T + (int64_t)ioff[p0 + k] * 8, r[k]);
    }
    for (; p0 < P; p0++)
        for (int c = 0; c < 8; c++) T[(int64_t)ioff[p0] * 8 + c] = x[c * hw_in + p0];
    __m256 wv[9];
    for (int t = 0; t < 9; t++)
        wv[t] = _mm256_setr_ps(w[t], w[9 + t], w[18 + t], w[27 + t], w[36 + t], w[45 + t], w[54 + t], w[63 + t]);
    const __m256 one = _mm256_set1_ps(1.f);
    __m256 s = inreg && ep->scale ? _mm256_loadu_ps(ep->scale + o) : one;
    __m256 t = inreg && ep->shift ? _mm256_loadu_ps(ep->shift + o) : _mm256_setzero_ps();
    __m256 lo = _mm256_set1_ps(!inreg || ep->act1 == SO_ACT_NONE ? -INFINITY : ep->act1 == SO_ACT_RELU ? 0.f : ep->lo1);
    __m256 hi = _mm256_set1_ps(inreg && ep->act1 == SO_ACT_CLIP ? ep->hi1 : INFINITY);
    /* outputs pixel-major into O (after the input buffer): per output row, blocks of 4
       pixels sharing their tap columns (stride 1: 6 loads per tap row for 12 FMAs) */
    float *O = T + p->Hq * Wp * 8;
    const int64_t S = p->sw, Wo = p->Wo;
    for (int64_t oh = 0; oh < p->Ho; oh++) {
        int64_t ow = 0;
        for (; ow + 4 <= Wo; ow += 4) {
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
            for (int i = 0; i < 3; i++) {
                const float *b = T + ((oh * S + i) * Wp + ow * S) * 8;
                if (S == 1) {
                    __m256 c0 = _mm256_load_ps(b), c1 = _mm256_load_ps(b + 8), c2 = _mm256_load_ps(b + 16);
                    a0 = _mm256_fmadd_ps(wv[3 * i], c0, a0);
                    a0 = _mm256_fmadd_ps(wv[3 * i + 1], c1, a0);
                    a1 = _mm256_fmadd_ps(wv[3 * i], c1, a1);
                    a0 = _mm256_fmadd_ps(wv[3 * i + 2], c2, a0);
                    a1 = _mm256_fmadd_ps(wv[3 * i + 1], c2, a1);
                    a2 = _mm256_fmadd_ps(wv[3 * i], c2, a2);
                    __m256 c3 = _mm256_load_ps(b + 24), c4 = _mm256_load_ps(b + 32), c5 = _mm256_load_ps(b + 40);
                    a1 = _mm256_fmadd_ps(wv[3 * i + 2], c3, a1);
                    a2 = _mm256_fmadd_ps(wv[3 * i + 1], c3, a2);
                    a3 = _mm256_fmadd_ps(wv[3 * i], c3, a3);
                    a2 = _mm256_fmadd_ps(wv[3 * i + 2], c4, a2);
                    a3 = _mm256_fmadd_ps(wv[3 * i + 1], c4, a3);
                    a3 = _mm256_fmadd_ps(wv[3 * i + 2], c5, a3);
                } else {
                    __m256 c0 = _mm256_load_ps(b), c1 = _mm256_load_ps(b + 8), c2 = _mm256_load_ps(b + 16);
                    a0 = _mm256_fmadd_ps(wv[3 * i], c0, a0);
                    a0 = _mm256_fmadd_ps(wv[3 * i + 1], c1, a0);
                    a0 = _mm256_fmadd_ps(wv[3 * i + 2], c2, a0);
                    a1 = _mm256_fmadd_ps(wv[3 * i], c2, a1);
                    __m256 c3 = _mm256_load_ps(b + 24), c4 = _mm256_load_ps(b + 32), c5 = _mm256_load_ps(b + 40);
                    a1 = _mm256_fmadd_ps(wv[3 * i + 1], c3, a1);
                    a1 = _mm256_fmadd_ps(wv[3 * i + 2], c4, a1);
                    a2 = _mm256_fmadd_ps(wv[3 * i], c4, a2);
                    a2 = _mm256_fmadd_ps(wv[3 * i + 1], c5, a2);
                    __m256 c6 = _mm256_load_ps(b + 48), c7 = _mm256_load_ps(b + 56), c8 = _mm256_load_ps(b + 64);
                    a2 = _mm256_fmadd_ps(wv[3 * i + 2], c6, a2);
                    a3 = _mm256_fmadd_ps(wv[3 * i], c6, a3);
                    a3 = _mm256_fmadd_ps(wv[3 * i + 1], c7, a3);
                    a3 = _mm256_fmadd_ps(wv[3 * i + 2], c8, a3);
                }
            }
            float *d = O + (oh * Wo + ow) * 8;
            _mm256_store_ps(d, _mm256_min_ps(hi, _mm256_max_ps(lo, _mm256_fmadd_ps(a0, s, t))));
            _mm256_store_ps(d + 8, _mm256_min_ps(hi, _mm256_max_ps(lo, _mm256_fmadd_ps(a1, s, t))));
            _mm256_store_ps(d + 16, _mm256_min_ps(hi, _mm256_max_ps(lo, _mm256_fmadd_ps(a2, s, t))));
            _mm256_store_ps(d + 24, _mm256_min_ps(hi, _mm256_max_ps(lo, _mm256_fmadd_ps(a3, s, t))));
        }
        for (; ow < Wo; ow++) {
            __m256 a = _mm256_setzero_ps();
            for (int i = 0; i < 3; i++) {
                const float *b = T + ((oh * S + i) * Wp + ow * S) * 8;
                a = _mm256_fmadd_ps(wv[3 * i], _mm256_load_ps(b), a);
                a = _mm256_fmadd_ps(wv[3 * i + 1], _mm256_load_ps(b + 8), a);
                a = _mm256_fmadd_ps(wv[3 * i + 2], _mm256_load_ps(b + 16), a);
            }
            _mm256_store_ps(O + (oh * Wo + ow) * 8, _mm256_min_ps(hi, _mm256_max_ps(lo, _mm256_fmadd_ps(a, s, t))));
        }
    }
    for (int64_t q0 = 0; q0 < Q; q0 += 8) {
        int cnt = (int)SO_MIN(8, Q - q0);
        __m256 r[8];
        for (int k = 0; k < 8; k++) r[k] = k < cnt ? _mm256_load_ps(O + (q0 + k) * 8) : _mm256_setzero_ps();
        so_tr8x8(r);
        if (cnt == 8) {
            for (int c = 0; c < 8; c++) _mm256_storeu_ps(y + c * hw + q0, r[c]);
        } else {
            float tmp[8];
            for (int c = 0; c < 8; c++) {
                _mm256_storeu_ps(tmp, r[c]);
                memcpy(y + c * hw + q0, tmp, sizeof(float) * (size_t)cnt);
            }
        }
    }
}

#define DW3_R1 4 /* output rows per pass, stride 1 */
#define DW3_R2 4 /* stride 2 */

/* One channel q (= n * O + o) on the row kernel. */
static void dw3_channel(const conv_plan *p, const float *X, const float *Wt, const float *R, float *Y, int inreg, int64_t q)
{
    const so_epi *ep = &p->ch.ep;
    const int64_t hw = p->Ho * p->Wo, Ho = p->Ho;
    int64_t n = q / p->O, o = q % p->O;
    const float *x = X + (n * p->C + o / p->Og) * p->H * p->W, *w = Wt + o * 9;
    __m256 wv[9];
    for (int t = 0; t < 9; t++) wv[t] = _mm256_set1_ps(w[t]);
    const dw3_epi e = dw3_epi_of(ep, inreg, o);
    float *y = Y + q * hw;
    int64_t oh = 0;
    if (p->sw == 1) {
        for (; oh + DW3_R1 <= Ho; oh += DW3_R1) dw3_rows(DW3_R1, 1, p, x, oh, wv, &e, y);
        for (; oh < Ho; oh++) dw3_rows(1, 1, p, x, oh, wv, &e, y);
    } else {
        for (; oh + DW3_R2 <= Ho; oh += DW3_R2) dw3_rows(DW3_R2, 2, p, x, oh, wv, &e, y);
        for (; oh < Ho; oh++) dw3_rows(1, 2, p, x, oh, wv, &e, y);
    }
    if (!inreg) so_epi_row(ep, o, y, R ? R + q * hw : NULL, hw);
}

/* Per image: groups of 8 channels on the small-plane kernel (p->ioff set), then the
   remaining channels one by one on the row kernel (dw3_team: each thread's part, conv_dw3_run: the team). */
static void dw3_team(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const conv_plan *p = priv;
    const float *X = in[0].data, *Wt = in[1].data;
    const float *R = p->res_in >= 0 ? in[p->res_in].data : NULL;
    float *Y = out[0].data;
    const int64_t hw = p->Ho * p->Wo, n8 = p->ioff ? p->O / 8 : 0, per_img = n8 + p->O - 8 * n8, tb = (p->Hq * p->Wq + hw) * 8;
    const so_epi *ep = &p->ch.ep;
    const int inreg = !R && (ep->act1 == SO_ACT_NONE || ep->act1 == SO_ACT_RELU || ep->act1 == SO_ACT_CLIP);
    {
        float *T = scratch + (int64_t)omp_get_thread_num() * tb;
        if (n8) memset(T, 0, sizeof *T * (size_t)(p->Hq * p->Wq * 8));
#pragma omp for schedule(static) nowait
        for (int64_t q = 0; q < p->N * per_img; q++) {
            int64_t n = q / per_img, r = q % per_img;
            if (r < n8) {
                int64_t o = 8 * r;
                dw3_c8(p, X + (n * p->C + o) * p->H * p->W, Wt + o * 9, ep, inreg, o, Y + (n * p->O + o) * hw, T);
                if (!inreg)
                    for (int64_t c = o; c < o + 8; c++)
                        so_epi_row(ep, c, Y + (n * p->O + c) * hw, R ? R + (n * p->O + c) * hw : NULL, hw);
            } else {
                dw3_channel(p, X, Wt, R, Y, inreg, n * p->O + 8 * n8 + (r - n8));
            }
        }
    }
}

static void conv_dw3_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const conv_plan *p = priv;
    SO_PAR_RUN(p->N * p->O * p->Ho * p->Wo * 9 > CONV_PAR_MIN, , dw3_team(priv, in, out, scratch));
}
#endif

#ifdef __AVX2__
/* ---- stems: ungrouped conv with few input channels (CONV_STEM) ----
   Each input channel is split once per image into its stride-phase planes (dc_phases, all
   threads), so every tap is a unit-stride load. Then per output row, STEM_OB output
   channels x NV vectors of 8 columns are accumulated in registers over all Cin * kh * kw
   taps (weights packed at load as [O/STEM_OB][Cin*kh*kw][STEM_OB], zero-padded channels
   not stored), the epilogue applied in registers, and stored straight into the output row:
   no intermediate buffer. Column blocks of 3 vectors, then a rest of >= 2 vectors as one
   2-vector block, then blocks of one vector (the last overlapping); rows narrower than a
   vector use masked loads and stores (stem_rows). */
#define STEM_OB 4

/* Shared by the stem and the 1x1 kernels: the epilogue of a STEM_OB x NV register block
   (scale/shift, clamp, optional residual + Relu) and its store, one output channel per row
   of y (hw apart); partial: masked (lm) loads and stores of the pixels lm selects. */
static inline __attribute__((always_inline)) void ob_epilogue_store(int NV, __m256 acc[][3], const dw3_epi *e, int nob,
                                                                   const float *res, int act2, float *y, int64_t hw,
                                                                   int partial, __m256i lm)
{
#pragma GCC unroll 4
    for (int b = 0; b < STEM_OB; b++) {
        if (b >= nob) break;
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++) {
            __m256 r = _mm256_min_ps(e[b].hi, _mm256_max_ps(e[b].lo, _mm256_fmadd_ps(acc[b][v], e[b].s, e[b].t)));
            if (res) {
                __m256 rv = partial ? _mm256_maskload_ps(res + b * hw + 8 * v, lm) : _mm256_loadu_ps(res + b * hw + 8 * v);
                r = _mm256_add_ps(r, rv);
                if (act2 == SO_ACT_RELU) r = _mm256_max_ps(_mm256_setzero_ps(), r); /* r second: NaN passes */
            }
            if (!partial)
                _mm256_storeu_ps(y + b * hw + 8 * v, r);
            else
                _mm256_maskstore_ps(y + b * hw + 8 * v, lm, r);
        }
    }
}

/* The stem's vectors: 16 columns (zmm) at AVX-512, else 8 (ymm). A block narrower than one vector (a row
   narrower than the vector) loads and stores only the columns its mask selects. */
#ifdef __AVX512F__
#define STEM_VW 16
typedef __m512 stem_v;
typedef __mmask16 stem_m;
static inline stem_m stem_mask(int64_t n) { return (stem_m)((1u << n) - 1); }
static inline stem_v stem_zero(void) { return _mm512_setzero_ps(); }
static inline stem_v stem_load(int partial, stem_m m, const float *x) { return partial ? _mm512_maskz_loadu_ps(m, x) : _mm512_loadu_ps(x); }
static inline stem_v stem_set1(float w) { return _mm512_set1_ps(w); }
static inline stem_v stem_fma(stem_v a, stem_v b, stem_v c) { return _mm512_fmadd_ps(a, b, c); }
#else
#define STEM_VW 8
typedef __m256 stem_v;
typedef __m256i stem_m;
static inline stem_m stem_mask(int64_t n) { return _mm256_loadu_si256((const __m256i *)(dw3_mask_tab + 8 - n)); }
static inline stem_v stem_zero(void) { return _mm256_setzero_ps(); }
static inline stem_v stem_load(int partial, stem_m m, const float *x) { return partial ? _mm256_maskload_ps(x, m) : _mm256_loadu_ps(x); }
static inline stem_v stem_set1(float w) { return _mm256_set1_ps(w); }
static inline stem_v stem_fma(stem_v a, stem_v b, stem_v c) { return _mm256_fmadd_ps(a, b, c); }
#endif

/* The epilogue of a STEM_OB x NV block (scale/shift, clamp of act1 in registers) and its store. */
static inline __attribute__((always_inline)) void stem_store(int NV, stem_v acc[][3], const dw3_epi *e, int nob, float *y, int64_t hw,
                                                            int partial, stem_m m)
{
#ifdef __AVX512F__
#pragma GCC unroll 4
    for (int b = 0; b < STEM_OB; b++) {
        if (b >= nob) break;
        const __m512 sv = _mm512_broadcast_f32x8(e[b].s), tv = _mm512_broadcast_f32x8(e[b].t), lo = _mm512_broadcast_f32x8(e[b].lo),
                     hi = _mm512_broadcast_f32x8(e[b].hi);
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++) { /* the value second in max/min: NaN passes, as in ob_epilogue_store */
            const __m512 r = _mm512_min_ps(hi, _mm512_max_ps(lo, _mm512_fmadd_ps(acc[b][v], sv, tv)));
            if (partial) _mm512_mask_storeu_ps(y + b * hw + 16 * v, m, r);
            else _mm512_storeu_ps(y + b * hw + 16 * v, r);
        }
    }
#else
    ob_epilogue_store(NV, acc, e, nob, NULL, SO_ACT_NONE, y, hw, partial, m);
#endif
}

/* STEM_OB output channels x NV vectors of columns from ow, accumulated in registers over all taps. */
static inline __attribute__((always_inline)) void stem_block(int NV, const conv_plan *p, const float *xp, const float *wpk,
                                                            const dw3_epi *e, float *y, int64_t hw, int64_t ow, int nob, int partial)
{
    const int64_t CT = p->Cg * p->kh * p->kw;
    const stem_m m = stem_mask(partial ? p->Wo - ow : STEM_VW);
    stem_v acc[STEM_OB][3];
#pragma GCC unroll 4
    for (int b = 0; b < STEM_OB; b++)
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++) acc[b][v] = stem_zero();
    for (int64_t ct = 0; ct < CT; ct++) { /* one loop over (input channel, tap): p->toff[ct] (CONV_STEM) */
        const float *xt = xp + p->toff[ct] + ow;
        const float *wt = wpk + ct * STEM_OB;
        stem_v xv[3];
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++) xv[v] = stem_load(partial, m, xt + STEM_VW * v);
#pragma GCC unroll 4
        for (int b = 0; b < STEM_OB; b++) {
            const stem_v wv = stem_set1(wt[b]);
#pragma GCC unroll 3
            for (int v = 0; v < NV; v++) acc[b][v] = stem_fma(wv, xv[v], acc[b][v]);
        }
    }
    stem_store(NV, acc, e, nob, y + ow, hw, partial, m);
}

static void stem_rows(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const conv_plan *p = priv;
    const float *X = in[0].data;
    const float *R = p->res_in >= 0 ? in[p->res_in].data : NULL;
    float *Y = out[0].data;
    const so_epi *ep = &p->ch.ep;
    const int inreg = !R && (ep->act1 == SO_ACT_NONE || ep->act1 == SO_ACT_RELU || ep->act1 == SO_ACT_CLIP);
    const int64_t hw_in = p->H * p->W, hw = p->Ho * p->Wo, Wo = p->Wo, Wh = p->Wp, cs = p->sh * p->sw * p->ps;
    const int64_t nbo = (p->O + STEM_OB - 1) / STEM_OB, T = p->kh * p->kw;
    for (int64_t n = 0; n < p->N; n++) {
#pragma omp for
        for (int64_t c = 0; c < p->C; c++) dc_phases(p, X + (n * p->C + c) * hw_in, scratch + c * cs);
#pragma omp for schedule(static) nowait
        for (int64_t q = 0; q < nbo * p->Ho; q++) {
            int64_t bo = q / p->Ho, oh = q % p->Ho, o0 = bo * STEM_OB;
            int nob = (int)SO_MIN(STEM_OB, p->O - o0);
            dw3_epi e[STEM_OB];
            for (int b = 0; b < STEM_OB; b++) e[b] = dw3_epi_of(ep, inreg, SO_MIN(o0 + b, p->O - 1));
            const float *xp = scratch + oh * Wh, *wpk = p->U + bo * p->C * T * STEM_OB;
            float *y = Y + (n * p->O + o0) * hw + oh * Wo;
            /* blocks of 3 vectors; a rest of >= 2 vectors as one 2-vector block, then blocks of one vector, the
               last overlapping the previous one (its outputs are recomputed identically) or masked when the row
               is narrower than a vector. (A second, overlapping 3-vector block for the rest, as before, made GCC
               keep 4 of that instance's 12 accumulators on the stack at AVX2: ResNeXt-50's 112-column stem spent
               ~30 % of its time in that block, perf; the 2-vector block also skips the recomputed columns.) */
            const int64_t V = STEM_VW;
            int64_t ow = 0;
            for (; ow + 3 * V <= Wo; ow += 3 * V) stem_block(3, p, xp, wpk, e, y, hw, ow, nob, 0);
            if (ow + 2 * V <= Wo) {
                stem_block(2, p, xp, wpk, e, y, hw, ow, nob, 0);
                ow += 2 * V;
            }
            for (; ow + V <= Wo; ow += V) stem_block(1, p, xp, wpk, e, y, hw, ow, nob, 0);
            if (ow < Wo && Wo >= V) /* partial as a constant: a run-time one put a test in every tap of the block */
                stem_block(1, p, xp, wpk, e, y, hw, Wo - V, nob, 0);
            else if (ow < Wo)
                stem_block(1, p, xp, wpk, e, y, hw, 0, nob, 1);
            if (!inreg)
                for (int b = 0; b < nob; b++)
                    so_epi_row(ep, o0 + b, y + b * hw, R ? R + (n * p->O + o0 + b) * hw + oh * Wo : NULL, Wo);
        }
        if (n + 1 < p->N) { /* the next image's phases overwrite the scratch this one's rows read */
#pragma omp barrier
        }
    }
}

static void conv_stem_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const conv_plan *p = priv;
    SO_PAR_RUN(p->O * p->Ho * p->Wo * p->C * p->kh * p->kw > CONV_PAR_MIN, , stem_rows(priv, in, out, scratch));
}
#endif

#ifdef __AVX2__
/* ---- 1x1 stride-1 convs on small planes or with small weights (CONV_PW) ----
   Y[o, p] = sum_c W[o, c] X[c, p] straight on the NCHW planes, without sgemm's packing:
   the pixels are cut into equal chunks of about PW_CHUNK / K pixels (their K input rows stay
   in L2), and per
   chunk every block of STEM_OB output channels x 24 pixels is accumulated in registers over
   the K channels (weights read in place, no packed copy), the epilogue (bias,
   folded BatchNorm, Relu/Clip, residual + Relu) applied in registers, stored once. The last
   block of a chunk overlaps the previous one (identical outputs recomputed); chunks below
   24 pixels use blocks of 8, masked below 8. Few chunks (small planes): the output-channel
   blocks are split too, so threads share the work. Chosen where it measured faster than
   so_gemm (see so_conv_select). */
#define PW_CHUNK 16384 /* floats of input per pixel chunk (64 KB: 0.6-0.8x the time of 4096 on MobileNet-v2) */

static inline __attribute__((always_inline)) void pw_block(int NV, const float *x, int64_t hw_in, int64_t K, const float *w,
                                                          const dw3_epi *e, int act2, const float *res, float *y, int64_t hw,
                                                          int nob, int partial, int64_t n)
{
    /* the weights in place, W[o][c]: one row per output channel of the block (rows past the last
       channel repeat it; their outputs are not stored) */
    const float *wr[STEM_OB];
#pragma GCC unroll 4
    for (int b = 0; b < STEM_OB; b++) wr[b] = w + (b < nob ? b : nob - 1) * K;
    __m256 acc[STEM_OB][3];
#pragma GCC unroll 4
    for (int b = 0; b < STEM_OB; b++)
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++) acc[b][v] = _mm256_setzero_ps();
    const __m256i lm = _mm256_loadu_si256((const __m256i *)(dw3_mask_tab + 8 - (partial ? n : 8))); /* partial: n < 8 pixels */
    for (int64_t c = 0; c < K; c++) {
        const float *xc = x + c * hw_in;
        __m256 xv[3];
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++) {
            xv[v] = partial ? _mm256_maskload_ps(xc + 8 * v, lm) : _mm256_loadu_ps(xc + 8 * v);
            __asm__("" : "+x"(xv[v])); /* keep it in a register, one load for STEM_OB FMAs (GCC re-loaded it per FMA: 0.62-0.70x time) */
        }
#pragma GCC unroll 4
        for (int b = 0; b < STEM_OB; b++) {
            __m256 wv = _mm256_broadcast_ss(wr[b] + c);
#pragma GCC unroll 3
            for (int v = 0; v < NV; v++) acc[b][v] = _mm256_fmadd_ps(wv, xv[v], acc[b][v]);
        }
    }
    ob_epilogue_store(NV, acc, e, nob, res, act2, y, hw, partial, lm);
}

static void pw_tiles(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const conv_plan *p = priv;
    const float *X = in[0].data, *Wt = in[1].data;
    const float *R = p->res_in >= 0 ? in[p->res_in].data : NULL;
    float *Y = out[0].data;
    const so_epi *ep = &p->ch.ep;
    /* in registers: scale/shift + none/Relu/Clip, then residual + none/Relu; otherwise a row pass after each chunk */
    const int inreg = (ep->act1 == SO_ACT_NONE || ep->act1 == SO_ACT_RELU || ep->act1 == SO_ACT_CLIP) &&
                      (!R || ep->act2 == SO_ACT_NONE || ep->act2 == SO_ACT_RELU);
    const int64_t hw = p->Ho * p->Wo, K = p->C, nbo = (p->O + STEM_OB - 1) / STEM_OB, pc = p->tile;
    const int64_t nch = SO_MAX(1, hw / pc), nog = p->N * nch >= 8 ? 1 : SO_MIN(nbo, (8 + p->N * nch - 1) / (p->N * nch));
#pragma omp for schedule(static) nowait
    for (int64_t q = 0; q < p->N * nch * nog; q++) {
        int64_t n = q / (nch * nog), ch = q / nog % nch, og = q % nog, p0 = ch * hw / nch, p1 = (ch + 1) * hw / nch, len = p1 - p0;
        const float *x = X + n * K * hw + p0;
        for (int64_t bo = og * nbo / nog; bo < (og + 1) * nbo / nog; bo++) {
            int64_t o0 = bo * STEM_OB;
            int nob = (int)SO_MIN(STEM_OB, p->O - o0);
            dw3_epi e[STEM_OB];
            for (int b = 0; b < STEM_OB; b++) e[b] = dw3_epi_of(ep, inreg, SO_MIN(o0 + b, p->O - 1));
            const float *wo = Wt + o0 * K, *res = inreg && R ? R + (n * p->O + o0) * hw + p0 : NULL;
            float *y = Y + (n * p->O + o0) * hw + p0;
            /* blocks of 24 pixels; a rest >= 16 as one more 24-block overlapping the previous one, a smaller
               rest as blocks of 8 (the last overlapping, masked below 8 pixels) */
            int64_t j = 0;
            for (; j + 24 <= len; j += 24) pw_block(3, x + j, hw, K, wo, e, ep->act2, res ? res + j : NULL, y + j, hw, nob, 0, 8);
            if (len - j >= 16 && len >= 24) {
                pw_block(3, x + len - 24, hw, K, wo, e, ep->act2, res ? res + len - 24 : NULL, y + len - 24, hw, nob, 0, 8);
            } else {
                for (; j + 8 <= len; j += 8) pw_block(1, x + j, hw, K, wo, e, ep->act2, res ? res + j : NULL, y + j, hw, nob, 0, 8);
                if (j < len) {
                    int64_t j0 = len >= 8 ? len - 8 : 0;
                    pw_block(1, x + j0, hw, K, wo, e, ep->act2, res ? res + j0 : NULL, y + j0, hw, nob, len < 8, len - j0);
                }
            }
            if (!inreg)
                for (int b = 0; b < nob; b++)
                    so_epi_row(ep, o0 + b, y + b * hw, R ? R + (n * p->O + o0 + b) * hw + p0 : NULL, len);
        }
    }
}

static void conv_pw_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const conv_plan *p = priv;
    SO_PAR_RUN(p->N * p->O * p->Ho * p->Wo * p->C > CONV_PAR_MIN, , pw_tiles(priv, in, out, scratch));
}

/* ---- 1x1 stride-1 convs with the weights packed as the GEMM's B operand (CONV_PK) ----
   Y[o, p] = sum_k W[o, k] X[k, p] as a GEMM whose rows are pixels: the weights are packed once
   at load into panels of 16 output channels, [O/16][K][16] (zero-padded), and the image is the
   A operand read in place: a tile of 6 pixels x 16 output channels is accumulated in 12 ymm
   registers, per k two weight loads (L1-resident panel) and six broadcasts of X[k][p..p+5]
   (consecutive floats of one input row). Pixels are cut into chunks of so_conv_pk_np (the
   chunk's input rows stay in L2 over all output panels), K into blocks of so_conv_pk_kc (a
   kc x 16 weight panel stays in L1 over the chunk's tiles); partial sums of earlier K blocks
   are kept in Y and added back. The tile is transposed in registers (8x8, two padding rows)
   into 16 output rows of 6 pixels, the epilogue (bias, folded BatchNorm, Relu/Clip, residual +
   Relu) applied there and stored once; other epilogues: a row pass per chunk. A chunk's last
   tile of fewer than 6 pixels runs a kernel of as many rows. Every output is accumulated in the same order whatever the
   thread count. */

/* t[r][0..15] = sum over kc of a[k*6 + r] * b[k*16 + 0..15] for the MR rows r < MR (a: a packed
   micro-panel of 6 pixels per k); rows past MR are not read nor written. */
static inline __attribute__((always_inline)) void pk_kern(int MR, int64_t kc, const float *restrict a, const float *restrict b,
                                                         float *restrict t)
{
    __m256 c[6][2];
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) c[r][0] = c[r][1] = _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; k++) {
        const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++) {
            const __m256 av = _mm256_broadcast_ss(a + r);
            c[r][0] = _mm256_fmadd_ps(av, b0, c[r][0]);
            c[r][1] = _mm256_fmadd_ps(av, b1, c[r][1]);
        }
        a += 6;
        b += 16;
    }
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
        _mm256_store_ps(t + 16 * r, c[r][0]);
        _mm256_store_ps(t + 16 * r + 8, c[r][1]);
    }
}

static void __attribute__((noinline)) pk_kernel(int mr, int64_t kc, const float *restrict a, const float *restrict b,
                                                float *restrict t)
{
    switch (mr) {
    case 6: pk_kern(6, kc, a, b, t); break;
    case 5: pk_kern(5, kc, a, b, t); break;
    case 4: pk_kern(4, kc, a, b, t); break;
    case 3: pk_kern(3, kc, a, b, t); break;
    case 2: pk_kern(2, kc, a, b, t); break;
    default: pk_kern(1, kc, a, b, t); break;
    }
}

static inline __m256 pk_ld6(const float *p)
{
    return _mm256_set_m128(_mm_castsi128_ps(_mm_loadu_si64(p + 4)), _mm_loadu_ps(p));
}

/* The tile t[6][16] (pixels x channels o0..o0+15, nob of them real) out to rows y + j*hw,
   pixels [0, mr): added to what is there (accum), then the in-register epilogue (fin). */
static void pk_out(const float *t, int nob, int mr, int accum, int fin, const so_epi *ep, int inreg, int64_t o0, float *y,
                   const float *res, int64_t hw)
{
    for (int v = 0; v < 2 && 8 * v < nob; v++) {
        __m256 r[8];
        for (int i = 0; i < 8; i++) r[i] = i < mr ? _mm256_load_ps(t + 16 * i + 8 * v) : _mm256_setzero_ps();
        so_tr8x8(r);
        for (int j = 0; j < 8 && 8 * v + j < nob; j++) {
            const int64_t o = o0 + 8 * v + j;
            float *yr = y + (8 * v + j) * hw;
            const float *rr = res ? res + (8 * v + j) * hw : NULL;
            __m256 x = r[j];
            if (mr == 6) {
                if (accum) x = _mm256_add_ps(x, pk_ld6(yr));
                if (fin && inreg) {
                    const dw3_epi e = dw3_epi_of(ep, 1, o);
                    x = _mm256_min_ps(e.hi, _mm256_max_ps(e.lo, _mm256_fmadd_ps(x, e.s, e.t)));
                    if (rr) {
                        x = _mm256_add_ps(x, pk_ld6(rr));
                        if (ep->act2 == SO_ACT_RELU) x = _mm256_max_ps(_mm256_setzero_ps(), x); /* x second: NaN passes */
                    }
                }
                _mm_storeu_ps(yr, _mm256_castps256_ps128(x));
                _mm_storeu_si64(yr + 4, _mm_castps_si128(_mm256_extractf128_ps(x, 1)));
            } else {
                _Alignas(32) float s[8];
                _mm256_store_ps(s, x);
                for (int i = 0; i < mr; i++) {
                    float u = s[i] + (accum ? yr[i] : 0.f);
                    if (fin && inreg) {
                        u = u * (ep->scale ? ep->scale[o] : 1.f) + (ep->shift ? ep->shift[o] : 0.f);
                        if (ep->act1 == SO_ACT_RELU) u = u < 0.f ? 0.f : u;
                        if (ep->act1 == SO_ACT_CLIP) u = u < ep->lo1 ? ep->lo1 : u > ep->hi1 ? ep->hi1 : u;
                        if (rr) {
                            u += rr[i];
                            if (ep->act2 == SO_ACT_RELU) u = u < 0.f ? 0.f : u;
                        }
                    }
                    yr[i] = u;
                }
            }
        }
    }
}

static void conv_pk_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const conv_plan *p = priv;
    const float *X = in[0].data;
    const float *R = p->res_in >= 0 ? in[p->res_in].data : NULL;
    float *Y = out[0].data;
    const so_epi *ep = &p->ch.ep;
    const int inreg = (ep->act1 == SO_ACT_NONE || ep->act1 == SO_ACT_RELU || ep->act1 == SO_ACT_CLIP) &&
                      (!R || ep->act2 == SO_ACT_NONE || ep->act2 == SO_ACT_RELU);
    const int64_t hw = p->Ho * p->Wo, hw_in = p->H * p->W, K = p->C, O = p->O, nbo = (O + 15) / 16, KC = p->kc;
    /* fewer chunks than 2 per thread: the output panels are split too (each part packs its chunk) */
    const int64_t T = so_sgemm_threads(), nt = (hw + 5) / 6, nch = (hw + p->tile - 1) / p->tile,
                  nog = T <= 1 || p->N * nch >= 2 * T ? 1 : SO_MIN(nbo, (2 * T + p->N * nch - 1) / (p->N * nch));
#pragma omp parallel for schedule(static) if (p->N * O * hw * K > CONV_PAR_MIN)
    for (int64_t q = 0; q < p->N * nch * nog; q++) {
        /* equal chunks of whole 6-pixel tiles */
        const int64_t n = q / (nch * nog), ch = q / nog % nch, og = q % nog, p0 = ch * nt / nch * 6,
                      len = SO_MIN(hw, (ch + 1) * nt / nch * 6) - p0, b0 = og * nbo / nog, b1 = (og + 1) * nbo / nog;
        _Alignas(32) float t[96];
        float *xp = scratch + (int64_t)omp_get_thread_num() * p->Wq;
        for (int64_t kb = 0; kb < K; kb += KC) {
            const int64_t kc = SO_MIN(KC, K - kb);
            const int accum = kb > 0, fin = kb + kc == K;
            /* the chunk's kc input rows as contiguous 6-pixel micro-panels [tile][kc][6] */
            for (int64_t j = 0; j < len; j += 6) {
                const int m = (int)SO_MIN(6, len - j);
                const float *xr = X + (n * K + kb) * hw_in;
                float *d = xp + j * kc;
                if (p->ioff) { /* strided: the tile's input pixels gathered */
                    const int32_t *io = p->ioff + p0 + j;
                    for (int64_t k = 0; k < kc; k++, xr += hw_in, d += 6)
                        for (int i = 0; i < m; i++) d[i] = xr[io[i]];
                } else if (m == 6) {
                    for (xr += p0 + j; xr < X + (n * K + kb + kc) * hw_in; xr += hw_in, d += 6) {
                        _mm_storeu_ps(d, _mm_loadu_ps(xr));
                        _mm_storeu_si64(d + 4, _mm_loadu_si64(xr + 4));
                    }
                } else {
                    for (int64_t k = 0; k < kc; k++, d += 6)
                        for (int i = 0; i < m; i++) d[i] = xr[k * hw_in + p0 + j + i];
                }
            }
            for (int64_t bo = b0; bo < b1; bo++) {
                const float *w = p->Ap + (bo * K + kb) * 16;
                const int nob = (int)SO_MIN(16, O - bo * 16);
                float *y = Y + (n * O + bo * 16) * hw + p0;
                const float *res = R && inreg ? R + (n * O + bo * 16) * hw + p0 : NULL;
                for (int64_t j = 0; j < len; j += 6) {
                    const int mr = (int)SO_MIN(6, len - j);
                    pk_kernel(mr, kc, xp + j * kc, w, t);
                    pk_out(t, nob, mr, accum, fin, ep, inreg, bo * 16, y + j, res ? res + j : NULL, hw);
                }
            }
        }
        if (!inreg)
            for (int64_t o = b0 * 16; o < SO_MIN(O, b1 * 16); o++)
                so_epi_row(ep, o, Y + (n * O + o) * hw + p0, R ? R + (n * O + o) * hw + p0 : NULL, len);
    }
}
#endif

/* Whether a 1x1 stride-1 conv with constant weights runs on our GEMM (weights packed as A at load) rather than
   OpenBLAS. AVX2: expanding 1x1 convs (O >= 2C) on planes of >= 28x28 only: there so_gemm measured ~10% faster
   than OpenBLAS in ResNet-50 (256<-64 56x56, 512<-128 28x28, with residual epilogues); reducing ones (K = C
   large, 64<-256, 256<-1024) and 14x14 / 7x7 planes measured 5-15% slower (same-run profiles, 1 thread).
   AVX-512: the 16-row zmm kernel measured 1.25-1.48x this OpenBLAS (Haswell kernels) on all eight ResNet-50 1x1
   shapes (bench/gemm_bench.sh 1 5 1x1: paired, 5 rounds, 1 thread, machine loaded: load average 5-7), so every
   such conv up to 4 so_gemm_conv_max_w weights (1M floats: ResNet-50's largest 1x1 and SqueezeNet's
   classifier). Weights up to so_gemm_conv_max_w (AVX2): the packed copy must keep ResNet-50's peak RSS within
   1.5x weights + activations (all its 1x1 weights packed: +37 MB, over; superopt run now gives the originals
   back: ResNet-50 peak RSS 131 -> 145 MB with every 1x1 packed, measured at the avx512 level). */
static int gemm_1x1_wanted(const conv_plan *p, int64_t hw)
{
#ifdef __AVX512F__
    (void)hw;
    return !so_sgemm_onednn() && p->O * p->K <= 4 * so_gemm_conv_max_w;
#else
    return p->O * p->K <= so_gemm_conv_max_w && p->O >= 2 * p->C && hw >= 28 * 28;
#endif
}

#ifdef __AVX2__
/* Measured (1 thread, paired ratios packed / so_gemm or OpenBLAS): 7x7 planes 0.75-0.99 whatever the channels
   (OpenBLAS's N = 49 edges; in-model MobileNet-v2 0.80-0.88, ResNet-50 layer 4 0.73-0.96, Inception-v3 8x8
   0.85-0.98). 14x14 with >= 2^18 weights measured 0.89-0.98 alone with warm caches but 0.94-1.29 in ResNet-50
   (layer 3, the 256->1024 + residual ones 1.09-1.29), SqueezeNet's 13x13 512->1000 0.95-1.01, MobileNet-v2's 14x14
   0.99-1.04, 28x28 0.95-1.09, 56x56 O = 24 1.2-1.4: those keep so_gemm / OpenBLAS / im2col. */
static int pk_wanted(int64_t hw) { return hw <= so_conv_pk_max_hw; }

/* CONV_PK for a 1x1 ungrouped conv with constant weights wsrc [O][C]: packs them as [O/16][C][16]
   (zero-padded), the original given back by exec (in1_copied). Out of memory: k unchanged. */
static void pk_setup(conv_plan *p, so_fast_kernel *k, const float *wsrc)
{
    const int64_t nbo = (p->O + 15) / 16, K = p->C;
    float *ap = aligned_alloc(64, sizeof(float) * (size_t)(nbo * 16 * K)); /* a multiple of 64 bytes */
    if (!ap) return; /* keep the kernel chosen before */
    p->kind = CONV_PK;
    free(p->Ap);
    p->Ap = ap;
    for (int64_t bo = 0; bo < nbo; bo++)
        for (int64_t kk = 0; kk < K; kk++)
            for (int64_t j = 0; j < 16; j++)
                p->Ap[(bo * K + kk) * 16 + j] = bo * 16 + j < p->O ? wsrc[(bo * 16 + j) * K + kk] : 0.f;
    p->kc = so_conv_pk_kc;
    p->tile = SO_MAX(6, so_conv_pk_np / 6 * 6);
    p->Wq = (p->tile + 6) * SO_MIN(p->kc, K); /* floats of packed input per thread (a chunk may have one tile more) */
    k->packed_bytes = sizeof(float) * (size_t)(nbo * 16 * K);
    k->in1_copied = 1;
    k->scratch_bytes = sizeof(float) * (size_t)p->Wq * (size_t)omp_get_max_threads();
    k->run = conv_pk_run;
    k->name = "conv1x1_packed";
}
#endif

#ifdef __AVX2__
/* Ungrouped convs with a constant kh x kw > 1 weight that run faster on dconv.c than on the
   choice below (in-model, 1 thread, per-node time dconv / previous kernel, old and new build
   alternating): vs im2col + sgemm 0.55-0.97 on every Inception-v3 / ResNet-50 / SqueezeNet
   shape but Inception-v3's 3x3/2 288->384 (1.00-1.05); vs Winograd only with <= 32 input
   channels (147x147 32->32 0.63-0.75, 32->64 0.87-1.02, 27x27 32->128 0.97-1.02; 35x35
   64/96->96 1.3-1.45x and 71x71 80->192 1.6x slower); vs conv_stem not for 3-channel stems
   (1.3x slower), SqueezeNet's 16-channel expand3x3 0.79-0.91. */
static int dconv_wins(const conv_plan *p, int wino)
{
    if (p->C <= so_conv_dconv_min_c || p->kh * p->kw > SO_DCONV_MAX_TAPS) return 0; /* conv_stem or im2col */
    if (p->C * (p->H + p->Ho * p->sh + p->kh * p->dh) * (p->W + p->Wo * p->sw + p->kw * p->dw) > INT32_MAX) return 0; /* int32 offsets */
    return !wino || p->C <= so_conv_dconv_max_wino_c;
}
#endif

so_status so_conv_select(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_graph *g = c->g;
    const so_node *n = &g->nodes[i];
    const so_attr *a = n->attr;
    const so_shape *x = &g->nodes[n->in[0].node].out[n->in[0].slot];
    const so_shape *w = &g->nodes[n->in[1].node].out[n->in[1].slot];
    const so_shape *o = &n->out[0];
    if (x->rank != 4 || w->rank != 4) return SO_OK;
    const float *bias = NULL;
    if (n->n_in > 2 && n->in[2].node >= 0) {
        const so_node *bn = &g->nodes[n->in[2].node];
        if (bn->op != SO_OP_WEIGHT) return SO_OK; /* activation bias: reference */
        bias = g->model->weights[bn->ref].data;
    }
    conv_plan *p = so_xcalloc(1, sizeof *p);
    p->N = x->dim[0];
    p->C = x->dim[1];
    p->H = x->dim[2];
    p->W = x->dim[3];
    p->O = o->dim[1];
    p->Ho = o->dim[2];
    p->Wo = o->dim[3];
    p->G = a->group > 0 ? a->group : 1;
    p->Cg = p->C / p->G;
    p->Og = p->O / p->G;
    p->kh = w->dim[2];
    p->kw = w->dim[3];
    p->K = p->Cg * p->kh * p->kw;
    p->sh = a->stride[0] > 0 ? a->stride[0] : 1;
    p->sw = a->stride[1] > 0 ? a->stride[1] : 1;
    p->ph = a->pad[0];
    p->pw = a->pad[1];
    p->dh = a->dilation[0] > 0 ? a->dilation[0] : 1;
    p->dw = a->dilation[1] > 0 ? a->dilation[1] : 1;
    p->res_in = -1;
    so_fast_chain_build(c, i, 1, p->O, bias, &p->ch);
    if (p->ch.has_extra) p->res_in = n->n_in;
    so_fast_chain_apply(&p->ch, k);
    int64_t hw = p->Ho * p->Wo;
    const int wino = p->G == 1 && p->kh == 3 && p->kw == 3 && p->sh == 1 && p->sw == 1 && p->dh == 1 && p->dw == 1 &&
                     hw >= so_conv_wino_min_hw && p->C >= so_conv_wino_min_ch && p->O >= so_conv_wino_min_ch &&
                     g->nodes[n->in[1].node].op == SO_OP_WEIGHT;
    int64_t sc = 0; /* scratch floats of the dconv / Winograd plan */
#ifdef __AVX2__
    if (p->G == 1 && p->kh * p->kw > 1 && g->nodes[n->in[1].node].op == SO_OP_WEIGHT && dconv_wins(p, wino) &&
        (sc = so_dconv_plan(&p->dc, p->C, p->H, p->W, p->O, p->Ho, p->Wo, p->kh, p->kw, p->sh, p->sw, p->ph, p->pw, p->dh, p->dw,
                            g->model->weights[g->nodes[n->in[1].node].ref].data, omp_get_max_threads())) >= 0) {
        p->kind = CONV_DCONV;
        k->scratch_bytes = sizeof(float) * (size_t)sc;
        k->packed_bytes = so_dconv_packed_bytes(&p->dc);
        k->in1_copied = 1;
        k->run = conv_dconv_run;
        k->name = "conv_direct_packed";
    } else
#endif
#ifdef __AVX2__
    if (p->G > 1 && p->Cg == 1 && p->kh == 3 && p->kw == 3 && p->sh == p->sw && (p->sw == 1 || p->sw == 2) && p->dh == 1 &&
        p->dw == 1 && p->W <= DC_ROW_MAX) {
        p->kind = CONV_DW3;
        if (p->Og == 1 && p->O >= 8 && p->H * p->W <= so_conv_dw_c8_max_hw) { /* small planes: 8 channels per vector */
            p->Hq = SO_MAX((p->Ho - 1) * p->sh + 3, p->H + p->ph);
            p->Wq = SO_MAX((p->Wo - 1) * p->sw + 3, p->W + p->pw);
            p->ioff = so_xmalloc(sizeof *p->ioff * (size_t)(p->H * p->W));
            for (int64_t r = 0; r < p->H * p->W; r++) p->ioff[r] = (int32_t)((r / p->W + p->ph) * p->Wq + r % p->W + p->pw);
            k->scratch_bytes = sizeof(float) * (size_t)((p->Hq * p->Wq + p->Ho * p->Wo) * 8) * (size_t)omp_get_max_threads();
        }
        k->run = conv_dw3_run;
        k->name = p->sw == 1 ? "conv_dw3x3" : "conv_dw3x3_s2";
    } else
#endif
    if (p->G > 1 && p->Cg == 1 && p->kh == 3 && p->kw == 3 && p->sh == 2 && p->sw == 2 && p->dh == 1 && p->dw == 1) {
        p->kind = CONV_DW;
        p->Hq = (p->Ho - 1) * p->sh + (p->kh - 1) * p->dh + 1;
        p->Wq = (p->Wo - 1) * p->sw + (p->kw - 1) * p->dw + 1;
        k->scratch_bytes = sizeof(float) * (size_t)(p->Cg * p->Hq * p->Wq) * (size_t)omp_get_max_threads();
        k->run = conv_dw3s2_run;
        k->name = "conv_depthwise_s2";
    } else if (((p->G > 1 && p->Cg <= so_conv_direct_max_cg) || (p->G == 1 && !wino && p->C <= direct_max_c && p->kh * p->kw >= 9)) &&
               p->kh * p->kw <= 64) {
        p->kind = CONV_DW;
        p->Hp = p->Ho + (p->kh - 1) * p->dh / p->sh;
        p->Wp = p->Wo + (p->kw - 1) * p->dw / p->sw;
        p->band = SO_MAX(1, 1024 / p->Wp);
        p->ps = (p->Ho * p->Wp + DC_CHUNK + (p->kh - 1) * p->dh / p->sh * p->Wp + (p->kw - 1) * p->dw / p->sw + 7) / 8 * 8;
        p->toff = so_xmalloc(sizeof *p->toff * (size_t)(p->kh * p->kw));
        for (int64_t ti = 0; ti < p->kh; ti++)
            for (int64_t tj = 0; tj < p->kw; tj++) {
                int64_t pa = ti * p->dh % p->sh, pb = tj * p->dw % p->sw;
                p->toff[ti * p->kw + tj] = (int32_t)((pa * p->sw + pb) * p->ps + ti * p->dh / p->sh * p->Wp + tj * p->dw / p->sw);
            }
        k->scratch_bytes =
            sizeof(float) * (size_t)(p->Cg * p->sh * p->sw * p->ps + 4 * (p->band * p->Wp + DC_CHUNK)) * (size_t)omp_get_max_threads();
        k->run = conv_dw_run;
        k->name = p->Cg == 1 ? "conv_depthwise" : p->G > 1 ? "conv_grouped_direct" : "conv_direct";
#ifdef __AVX2__
        if (p->G == 1 && g->nodes[n->in[1].node].op == SO_OP_WEIGHT) { /* stem: packed weights, output rows in registers */
            p->kind = CONV_STEM;
            const float *wsrc = g->model->weights[g->nodes[n->in[1].node].ref].data;
            int64_t T = p->kh * p->kw, nbo = (p->O + STEM_OB - 1) / STEM_OB;
            p->U = so_xcalloc((size_t)(nbo * STEM_OB * p->C * T), sizeof *p->U);
            for (int64_t oc = 0; oc < p->O; oc++)
                for (int64_t r = 0; r < p->C * T; r++)
                    p->U[(oc / STEM_OB * p->C * T + r) * STEM_OB + oc % STEM_OB] = wsrc[oc * p->C * T + r];
            k->packed_bytes = sizeof(float) * (size_t)(nbo * STEM_OB * p->C * T);
            k->in1_copied = 1;
            k->scratch_bytes = sizeof(float) * (size_t)(p->C * p->sh * p->sw * p->ps);
            /* per (input channel, tap): one loop in stem_block (offsets below the scratch's floats, as toff's) */
            int32_t *ct = so_xmalloc(sizeof *ct * (size_t)(p->C * T));
            for (int64_t ci = 0; ci < p->C; ci++)
                for (int64_t t = 0; t < T; t++) ct[ci * T + t] = (int32_t)(ci * p->sh * p->sw * p->ps + p->toff[t]);
            free(p->toff);
            p->toff = ct;
            k->run = conv_stem_run;
            k->name = "conv_stem";
        }
#endif

    } else if (wino) {
        p->kind = CONV_WINO;
        p->U = so_wino_pack(g->model->weights[g->nodes[n->in[1].node].ref].data, p->O, p->C);
        sc = so_wino_plan(&p->wino, p->C, p->O, p->H, p->W, p->Ho, p->Wo, p->ph, p->pw, p->U);
        k->scratch_bytes = sizeof(float) * (size_t)sc;
        k->packed_bytes = sizeof(float) * (size_t)(45 * p->O * p->C);
        k->in1_copied = 1;
        k->run = conv_wino_run;
        k->name = "conv3x3_winograd_f4";
    } else if (p->kh == 1 && p->kw == 1 && p->sh == 1 && p->sw == 1 && a->pad[0] == 0 && a->pad[1] == 0 && a->pad[2] == 0 &&
               a->pad[3] == 0) {
        p->kind = CONV_1X1;
        k->run = conv_gemm_run;
        k->name = "conv1x1_sgemm";
        /* our GEMM where gemm_1x1_wanted (measured per level) */
        if (p->G == 1 && so_fast_use_gemm && g->nodes[n->in[1].node].op == SO_OP_WEIGHT && gemm_1x1_wanted(p, hw) &&
            (p->Ap = aligned_alloc(64, (so_gemm_packed_a_floats(p->O, p->K) * sizeof(float) + 63) / 64 * 64))) {
            so_gemm_pack_a(p->O, p->K, g->model->weights[g->nodes[n->in[1].node].ref].data, p->K, p->Ap);
            p->gT = so_sgemm_threads() < 1 ? 1 : so_sgemm_threads();
            k->packed_bytes = sizeof(float) * so_gemm_packed_a_floats(p->O, p->K);
            k->in1_copied = 1;
            k->scratch_bytes = sizeof(float) * so_gemm_apacked_scratch_floats(p->O, hw, p->K, p->gT);
            k->run = conv_1x1_gemm_run;
            k->name = "conv1x1_so_gemm";
        }
#ifdef __AVX2__
        /* the direct kernel where it measured faster (MobileNet-v2 in-model, 1 thread, 4 alternating runs, paired
           per-node ratios direct / the so_gemm or OpenBLAS choice), K <= 96 and a small weight matrix (K*O <= 8192)
           or a <= 28x28 plane: 0.61-0.89 (MobileNet-v2 15 convs, SqueezeNet 0.56-0.93; ResNet-50's 56x56 64->64 and
           Inception-v3's 73x73 64->80 1.00-1.02). K 128-256 measured 0.99-1.26 (Inception-v3 35x35 192->32 1.26),
           K 384-960 on 14x14 / 7x7 1.06-1.38, ResNet-50 / Inception-v3 large K 1.1-1.6: those keep so_gemm / OpenBLAS. */
        /* with oneDNN's sgemm (avx512 level) neither the direct nor the packed kernel below: MobileNet-v2 in-model,
           1 thread, 3 alternating rounds (loaded machine), summed node medians: its 15 conv1x1_direct convs 2.21-2.30
           -> 1.33-1.47 ms on oneDNN, its 8 conv1x1_packed convs 1.67-1.73 -> 1.15-1.18 ms; all 34 1x1s 4.67 -> 3.20 ms */
        const int lib1x1 = so_sgemm_onednn();
        if (!lib1x1 && p->G == 1 && p->C <= so_conv_pw_max_k && (p->C * p->O <= so_conv_pw_max_ko || hw <= so_conv_pw_max_hw)) {
            p->kind = CONV_PW;
            free(p->Ap);
            p->Ap = NULL;
            k->packed_bytes = 0; /* weights read in place */
            k->in1_copied = 0;
            k->scratch_bytes = 0;
            p->tile = SO_MAX(24, PW_CHUNK / p->C); /* pixels per chunk (at least): K rows of it in L2 */
            k->run = conv_pw_run;
            k->name = "conv1x1_direct";
        }
        /* the packed 6x16 kernel where it measured faster than so_gemm / OpenBLAS (see pk_wanted) */
        if (!lib1x1 && p->kind != CONV_PW && p->G == 1 && g->nodes[n->in[1].node].op == SO_OP_WEIGHT && pk_wanted(hw))
            pk_setup(p, k, g->model->weights[g->nodes[n->in[1].node].ref].data);
#endif
#ifdef __AVX2__
    } else if (p->kh == 1 && p->kw == 1 && a->pad[0] == 0 && a->pad[1] == 0 && a->pad[2] == 0 && a->pad[3] == 0 && p->G == 1 &&
               g->nodes[n->in[1].node].op == SO_OP_WEIGHT && pk_wanted(hw)) {
        /* strided 1x1 (ResNet's downsampling): the packed kernel gathers the input pixels, no im2col
           (1024->2048 14x14 -> 7x7 0.78 alone, 0.84-0.90 in ResNet-50, the im2col + sgemm time; -> 14x14 0.97 alone,
           1.03-1.14 in-model, -> 28x28 1.23: not taken) */
        p->kind = CONV_IM2COL; /* if pk_setup runs out of memory */
        k->run = conv_gemm_run;
        k->name = "conv_im2col_sgemm";
        p->ioff = so_xmalloc(sizeof *p->ioff * (size_t)hw);
        for (int64_t q = 0; q < hw; q++) p->ioff[q] = (int32_t)(q / p->Wo * p->sh * p->W + q % p->Wo * p->sw);
        pk_setup(p, k, g->model->weights[g->nodes[n->in[1].node].ref].data);
#endif
    } else {
        p->kind = CONV_IM2COL;
        k->run = conv_gemm_run;
        k->name = "conv_im2col_sgemm";
    }
    if (p->kind == CONV_1X1 || p->kind == CONV_IM2COL) {
        /* one sgemm over all columns (1x1), or column tiles only as far as the im2col scratch
           bound needs: tiling to keep the output tile in L2 for the epilogue measured 2-5%
           slower on ResNet-50/MobileNet-v2 (every tile repacks the weights) */
        int64_t tile = hw;
        if (p->kind == CONV_IM2COL && tile > SO_CONV_SCRATCH_FLOATS / (p->K ? p->K : 1))
            tile = SO_MAX(16, SO_CONV_SCRATCH_FLOATS / (p->K ? p->K : 1) / 16 * 16);
        p->tile = tile;
        if (p->kind == CONV_IM2COL) k->scratch_bytes = sizeof(float) * (size_t)(p->K * tile);
    }
    k->priv = p;
    k->free_priv = conv_free;
    return SO_OK;
}
