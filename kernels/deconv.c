/* deconv.c - fast ConvTranspose (2-D): per group and tile of input rows, cols[Cog*kh*kw, rows*W] = W_g^T X_g (our packed GEMM with the weights packed at load, or sgemm on the weights in place), then col2im adds each column into the output planes (started at the bias), parallel over output channels. */
#include "kset_names.h"

#include "deconv.h"

#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "gemm.h"
#include "kpriv.h"
#include "sgemm.h"

/* Geometry of one ConvTranspose: X[N, C, H, W], W[C, Og, kh, kw], Y[N, O, Ho, Wo], C = G*Cg, O = G*Og.
   Input pixel (h, w) and tap (i, j) land on output (h*sh - ph + i*dh, w*sw - pw + j*dw) when inside
   Y (the end pads and output_padding only set Ho, Wo). */
typedef struct deconv_plan {
    int64_t N, C, H, W, O, Ho, Wo, G, Cg, Og, kh, kw, sh, sw, ph, pw, dh, dw;
    int64_t M;    /* GEMM rows: Og*kh*kw (row r = (o*kh + i)*kw + j) */
    int64_t rows; /* input rows per column tile */
    int has_bias;
    float *Ap;    /* packed A per group (so_gemm path; owned), NULL: sgemm on the weights in place */
    size_t ap_floats; /* floats of one group's packed A */
    int gT;       /* threads the so_gemm scratch was sized for */
} deconv_plan;

static void deconv_free(void *pp)
{
    deconv_plan *p = pp;
    free(p->Ap);
    free(p);
}

/* Adds the tile's columns (input rows [h0, h1) of one group) into output channel o's plane y. */
static void col2im_channel(const deconv_plan *p, const float *col, int64_t o, int64_t h0, int64_t h1, float *y)
{
    const int64_t cols = (h1 - h0) * p->W;
    for (int64_t i = 0; i < p->kh; i++)
        for (int64_t h = h0; h < h1; h++) {
            const int64_t oh = h * p->sh - p->ph + i * p->dh;
            if (oh < 0 || oh >= p->Ho) continue;
            float *yr = y + oh * p->Wo;
            for (int64_t j = 0; j < p->kw; j++) {
                const float *cr = col + ((o * p->kh + i) * p->kw + j) * cols + (h - h0) * p->W;
                const int64_t off = j * p->dw - p->pw; /* ow = w*sw + off */
                /* valid w: 0 <= w*sw + off < Wo */
                int64_t wa = off >= 0 ? 0 : (-off + p->sw - 1) / p->sw, wb = p->Wo - off > 0 ? (p->Wo - off + p->sw - 1) / p->sw : 0;
                if (wb > p->W) wb = p->W;
                if (p->sw == 1) {
                    float *restrict d = yr + off;
                    for (int64_t w = wa; w < wb; w++) d[w] += cr[w];
                } else {
                    for (int64_t w = wa; w < wb; w++) yr[w * p->sw + off] += cr[w];
                }
            }
        }
}

static void deconv_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const deconv_plan *p = priv;
    const float *X = in[0].data, *Wt = in[1].data, *B = p->has_bias ? in[2].data : NULL;
    float *Y = out[0].data;
    const int64_t hw = p->H * p->W, ohw = p->Ho * p->Wo, wsz = p->Cg * p->M;
    float *col = scratch, *gs = scratch + (p->M * p->rows * p->W + 15) / 16 * 16;
    const int T = so_sgemm_threads() < p->gT ? so_sgemm_threads() : p->gT;
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t g = 0; g < p->G; g++) {
            const float *xg = X + (n * p->C + g * p->Cg) * hw;
            float *yg = Y + (n * p->O + g * p->Og) * ohw;
            for (int64_t h0 = 0; h0 < p->H; h0 += p->rows) {
                const int64_t h1 = SO_MIN(p->H, h0 + p->rows), cols = (h1 - h0) * p->W;
                if (p->Ap) {
                    so_gemm_bsrc src = {.B = xg + h0 * p->W, .ldb = hw};
                    so_gemm_apacked(p->M, cols, p->Cg, p->Ap + (size_t)g * p->ap_floats, &src, 0.f, col, cols, NULL, gs, T);
                } else {
                    so_sgemm(1, 0, p->M, cols, p->Cg, 1.f, Wt + g * wsz, p->M, xg + h0 * p->W, hw, 0.f, col, cols);
                }
                /* each output channel's plane is written by one thread, in a fixed order: results do not depend on the threads */
#pragma omp parallel for schedule(static) if (p->Og * ohw > SO_PAR_MIN && p->Og > 1)
                for (int64_t o = 0; o < p->Og; o++) {
                    float *y = yg + o * ohw;
                    if (h0 == 0) {
                        const float b = B ? B[g * p->Og + o] : 0.f;
                        for (int64_t q = 0; q < ohw; q++) y[q] = b;
                    }
                    col2im_channel(p, col, o, h0, h1, y);
                }
            }
        }
}

so_status so_deconv_select(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_graph *g = c->g;
    const so_node *n = &g->nodes[i];
    const so_attr *a = n->attr;
    const so_shape *x = shape_of(g, n->in[0]), *w = shape_of(g, n->in[1]), *o = &n->out[0];
    if (n->op != SO_OP_CONVTRANSPOSE || x->rank != 4 || w->rank != 4 || o->rank != 4 || x->dtype != SO_F32 || w->dtype != SO_F32)
        return SO_OK;
    const int has_bias = n->n_in > 2 && n->in[2].node >= 0;
    if (has_bias && shape_of(g, n->in[2])->dtype != SO_F32) return SO_OK;
    deconv_plan *p = so_xcalloc(1, sizeof *p);
    p->N = x->dim[0];
    p->C = x->dim[1];
    p->H = x->dim[2];
    p->W = x->dim[3];
    p->O = o->dim[1];
    p->Ho = o->dim[2];
    p->Wo = o->dim[3];
    p->G = a->group > 0 ? a->group : 1;
    p->Cg = p->C / p->G;
    p->Og = w->dim[1];
    p->kh = w->dim[2];
    p->kw = w->dim[3];
    p->sh = a->stride[0] > 0 ? a->stride[0] : 1;
    p->sw = a->stride[1] > 0 ? a->stride[1] : 1;
    p->ph = a->pad[0];
    p->pw = a->pad[1];
    p->dh = a->dilation[0] > 0 ? a->dilation[0] : 1;
    p->dw = a->dilation[1] > 0 ? a->dilation[1] : 1;
    p->M = p->Og * p->kh * p->kw;
    p->has_bias = has_bias;
    if (p->G * p->Og != p->O || p->G * p->Cg != p->C || p->M < 1 || p->Cg < 1 || p->N * p->H * p->W < 1) {
        free(p); /* empty or inconsistent shapes: the reference kernel */
        return SO_OK;
    }
    p->rows = SO_MAX(1, so_deconv_tile_floats / (p->M * p->W));
    if (p->rows > p->H) p->rows = p->H;
    const int64_t cols = p->rows * p->W;
    size_t sc = (size_t)((p->M * cols + 15) / 16 * 16);
    const so_node *wn = &g->nodes[n->in[1].node];
    p->gT = so_sgemm_threads() < 1 ? 1 : so_sgemm_threads();
    /* our GEMM with the weights packed at load, unless oneDNN's sgemm is there (the conv kernels' preference too) */
    if (so_fast_use_gemm && !so_sgemm_onednn() && wn->op == SO_OP_WEIGHT && g->model->weights[wn->ref].data) {
        const float *Wt = g->model->weights[wn->ref].data;
        p->ap_floats = so_gemm_packed_a_floats(p->M, p->Cg);
        p->Ap = aligned_alloc(64, (sizeof(float) * p->ap_floats * (size_t)p->G + 63) / 64 * 64);
        float *At = malloc(sizeof *At * (size_t)(p->M * p->Cg));
        if (p->Ap && At) {
            for (int64_t gr = 0; gr < p->G; gr++) { /* A = W_g^T: [M, Cg] */
                const float *wg = Wt + gr * p->Cg * p->M;
                for (int64_t r = 0; r < p->M; r++)
                    for (int64_t ci = 0; ci < p->Cg; ci++) At[r * p->Cg + ci] = wg[ci * p->M + r];
                so_gemm_pack_a(p->M, p->Cg, At, p->Cg, p->Ap + (size_t)gr * p->ap_floats);
            }
            k->packed_bytes = sizeof(float) * p->ap_floats * (size_t)p->G;
            k->in1_copied = 1;
            sc += so_gemm_apacked_scratch_floats(p->M, cols, p->Cg, p->gT);
        } else {
            free(p->Ap);
            p->Ap = NULL;
        }
        free(At);
    }
    k->scratch_bytes = sizeof(float) * sc;
    k->run = deconv_run;
    k->priv = p;
    k->free_priv = deconv_free;
    k->name = p->Ap ? "convtranspose_gemm" : "convtranspose_sgemm";
    return SO_OK;
}
