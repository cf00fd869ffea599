/* conv.c - fast Conv2d: 1x1 stride-1 as sgemm on the NCHW buffer, general conv as im2col (column-tiled, bounded scratch) + sgemm per group, depthwise as a direct loop; per-channel epilogue (bias, folded BatchNorm, activation, residual). */
#include "conv.h"

#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#define PAR_MIN 32768

enum { CONV_1X1, CONV_IM2COL, CONV_DW };

typedef struct conv_plan {
    int kind;
    int64_t N, C, H, W, O, Ho, Wo, G, Cg, Og, K;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    int64_t tile; /* im2col columns per tile */
    int res_in;   /* index of the residual in in[] or -1 */
    so_fast_chain ch;
} conv_plan;

static void conv_free(void *pp)
{
    conv_plan *p = pp;
    free(p->ch.scale);
    free(p->ch.shift);
    free(p);
}

/* Epilogue over all output channels of image n. */
static void epilogue(const conv_plan *p, float *Y, const float *R)
{
    const so_epi *ep = &p->ch.ep;
    if (!ep->scale && !ep->shift && !ep->act1 && !R) return;
    int64_t hw = p->Ho * p->Wo;
#pragma omp parallel for if (p->O * hw > PAR_MIN)
    for (int64_t o = 0; o < p->O; o++) so_fast_epi_row(ep, o, Y + o * hw, R ? R + o * hw : NULL, hw);
}

/* im2col of group input x (Cg channels of H*W) for output columns [p0, p1) into col [K, p1-p0]. */
static void im2col(const conv_plan *p, const float *x, float *col, int64_t p0, int64_t p1)
{
    int64_t cols = p1 - p0;
#pragma omp parallel for if (p->K * cols > PAR_MIN)
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
                for (int64_t ow = ow0; ow < ow1; ow++) {
                    int64_t iw = ow * p->sw + off;
                    d[ow - ow0] = (iw >= 0 && iw < p->W) ? xr[iw] : 0.f;
                }
            }
            q += ow1 - ow0;
        }
    }
}

static void conv_gemm_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const conv_plan *p = priv;
    const float *X = in[0].data, *Wt = in[1].data;
    const float *R = p->res_in >= 0 ? in[p->res_in].data : NULL;
    float *Y = out[0].data;
    int64_t hw_in = p->H * p->W, hw = p->Ho * p->Wo;
    for (int64_t n = 0; n < p->N; n++) {
        const float *xn = X + n * p->C * hw_in;
        float *yn = Y + n * p->O * hw;
        for (int64_t g = 0; g < p->G; g++) {
            const float *wg = Wt + g * p->Og * p->K;
            const float *xg = xn + g * p->Cg * hw_in;
            float *yg = yn + g * p->Og * hw;
            if (p->kind == CONV_1X1) {
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)p->Og, (int)hw, (int)p->K, 1.f, wg, (int)p->K, xg,
                            (int)hw, 0.f, yg, (int)hw);
            } else {
                for (int64_t p0 = 0; p0 < hw; p0 += p->tile) {
                    int64_t p1 = SO_MIN(hw, p0 + p->tile);
                    im2col(p, xg, scratch, p0, p1);
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)p->Og, (int)(p1 - p0), (int)p->K, 1.f, wg,
                                (int)p->K, scratch, (int)(p1 - p0), 0.f, yg + p0, (int)hw);
                }
            }
        }
        epilogue(p, yn, R ? R + n * p->O * hw : NULL);
    }
}

/* Depthwise (Cg == 1): each output channel o reads input channel o / Og. */
static void conv_dw_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const conv_plan *p = priv;
    const float *X = in[0].data, *Wt = in[1].data;
    const float *R = p->res_in >= 0 ? in[p->res_in].data : NULL;
    float *Y = out[0].data;
    int64_t hw_in = p->H * p->W, hw = p->Ho * p->Wo;
#pragma omp parallel for if (p->N * p->O * hw * p->kh * p->kw > PAR_MIN)
    for (int64_t q = 0; q < p->N * p->O; q++) {
        int64_t n = q / p->O, o = q % p->O;
        const float *x = X + (n * p->C + o / p->Og) * hw_in;
        const float *w = Wt + o * p->kh * p->kw;
        float *y = Y + q * hw;
        memset(y, 0, sizeof *y * (size_t)hw);
        for (int64_t oh = 0; oh < p->Ho; oh++) {
            float *yr = y + oh * p->Wo;
            for (int64_t i = 0; i < p->kh; i++) {
                int64_t ih = oh * p->sh - p->ph + i * p->dh;
                if (ih < 0 || ih >= p->H) continue;
                const float *xr = x + ih * p->W;
                for (int64_t j = 0; j < p->kw; j++) {
                    float wv = w[i * p->kw + j];
                    int64_t off = j * p->dw - p->pw;
                    /* valid ow: 0 <= ow*sw + off < W */
                    int64_t lo = off >= 0 ? 0 : (-off + p->sw - 1) / p->sw;
                    int64_t hi = (p->W - 1 - off) < 0 ? 0 : (p->W - 1 - off) / p->sw + 1;
                    if (hi > p->Wo) hi = p->Wo;
                    if (p->sw == 1) {
                        const float *xs = xr + off;
                        for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * xs[ow];
                    } else {
                        for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * xr[ow * p->sw + off];
                    }
                }
            }
        }
        so_fast_epi_row(&p->ch.ep, o, y, R ? R + q * hw : NULL, hw);
    }
}

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
    if (p->Cg == 1 && p->G > 1) {
        p->kind = CONV_DW;
        k->run = conv_dw_run;
        k->name = "conv_depthwise";
    } else if (p->kh == 1 && p->kw == 1 && p->sh == 1 && p->sw == 1 && a->pad[0] == 0 && a->pad[1] == 0 && a->pad[2] == 0 &&
               a->pad[3] == 0) {
        p->kind = CONV_1X1;
        k->run = conv_gemm_run;
        k->name = "conv1x1_sgemm";
    } else {
        p->kind = CONV_IM2COL;
        int64_t tile = SO_CONV_SCRATCH_FLOATS / (p->K ? p->K : 1);
        if (tile < 64) tile = 64;
        if (tile > hw) tile = hw;
        p->tile = tile;
        k->scratch_bytes = sizeof(float) * (size_t)(p->K * tile);
        k->run = conv_gemm_run;
        k->name = "conv_im2col_sgemm";
    }
    k->priv = p;
    k->free_priv = conv_free;
    return SO_OK;
}
