/* deconv.c - fast ConvTranspose (2-D): per group and tile of input rows, cols[Og*kh*kw, rows*W] = W_g^T X_g (our packed GEMM with the weights packed at load, each thread the rows of its own output channels; or sgemm on a computed weight), then col2im adds the columns into the output planes, started at the bias; a finished plane gets the epilogue of the
   successors the node absorbs (BatchNormalization, bias Add, activation, residual Add: kernels/fuse.c's chain). */
#include "kset_names.h"

#include "deconv.h"

#include <stdlib.h>
#include <string.h>

#include <omp.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "chain.h"
#include "gemm.h"
#include "kpriv.h"
#include "sgemm.h"

/* Geometry of one ConvTranspose: X[N, C, H, W], W[C, Og, kh, kw], Y[N, O, Ho, Wo], C = G*Cg, O = G*Og.
   Input pixel (h, w) and tap (i, j) land on output (h*sh - ph + i*dh, w*sw - pw + j*dw) when inside
   Y (the end pads and output_padding only set Ho, Wo). */
typedef struct deconv_plan {
    conv2d_geom q;
    int64_t Cg, Og;
    int64_t M;    /* GEMM rows: Og*kh*kw (row r = (o*kh + i)*kw + j) */
    int64_t rows; /* input rows per column tile */
    int has_bias;
    int exact; /* the taps tile the output exactly (kernel = stride, no dilation, pads, output_padding): every output
                  pixel is one GEMM result plus the bias, stored (no start pass, no accumulation) */
    /* our GEMM (weights constant): the output channels of a group split into nch ranges [oc[t], oc[t+1]), one per
       thread, each with its own packed rows of A (Ap + apo[g*nch + t]) and its own scratch (tscr floats: column tile,
       then the GEMM's): no synchronisation between tiles. Ap NULL: sgemm on the weights in place. */
    float *Ap;
    int64_t *apo;
    int nch;
    int64_t oc[SO_DECONV_MAX_T + 1];
    size_t tscr;
    so_fast_chain ch; /* absorbed successors (ch.n_fused > 0: the bias is folded into ch's shift, has_bias 0) */
    int res_in;       /* kernel input holding the residual addend, -1: none */
} deconv_plan;

static void deconv_free(void *pp)
{
    deconv_plan *p = pp;
    free(p->ch.scale);
    free(p->ch.shift);
    free(p->Ap);
    free(p->apo);
    free(p);
}

/* Adds the tile's columns (input rows [h0, h1) of one group) of the channel whose GEMM rows are
   (o*kh + i)*kw + j of col into its output plane y. */
static void col2im_channel(const deconv_plan *p, const float *col, int64_t o, int64_t h0, int64_t h1, float *y)
{
    const int64_t cols = (h1 - h0) * p->q.W;
    for (int64_t i = 0; i < p->q.kh; i++)
        for (int64_t h = h0; h < h1; h++) {
            const int64_t oh = h * p->q.sh - p->q.ph + i * p->q.dh;
            if (oh < 0 || oh >= p->q.Ho) continue;
            float *yr = y + oh * p->q.Wo;
            for (int64_t j = 0; j < p->q.kw; j++) {
                const float *restrict cr = col + ((o * p->q.kh + i) * p->q.kw + j) * cols + (h - h0) * p->q.W;
                const int64_t off = j * p->q.dw - p->q.pw; /* ow = w*sw + off */
                /* valid w: 0 <= w*sw + off < Wo */
                int64_t wa = off >= 0 ? 0 : (-off + p->q.sw - 1) / p->q.sw, wb = p->q.Wo - off > 0 ? (p->q.Wo - off + p->q.sw - 1) / p->q.sw : 0;
                if (wb > p->q.W) wb = p->q.W;
                if (p->q.sw == 1) {
                    float *restrict d = yr + off;
                    for (int64_t w = wa; w < wb; w++) d[w] += cr[w];
                } else {
                    for (int64_t w = wa; w < wb; w++) yr[w * p->q.sw + off] += cr[w];
                }
            }
        }
}

/* The exact tiling's col2im: output rows h*kh + i of the tile's input rows [h0, h1) are the kw GEMM rows
   of taps (i, j) interleaved, plus the bias b. */
static void col2im_exact(const deconv_plan *p, const float *col, int64_t o, int64_t h0, int64_t h1, float b, float *y)
{
    const int64_t cols = (h1 - h0) * p->q.W, W = p->q.W;
    for (int64_t h = h0; h < h1; h++)
        for (int64_t i = 0; i < p->q.kh; i++) {
            float *restrict yr = y + (h * p->q.kh + i) * p->q.Wo;
            const float *c0 = col + ((o * p->q.kh + i) * p->q.kw) * cols + (h - h0) * W;
            if (p->q.kw == 2) {
                const float *restrict a = c0, *restrict d = c0 + cols;
                int64_t w = 0;
#ifdef __AVX2__
                const __m256 vb = _mm256_set1_ps(b);
                for (; w + 8 <= W; w += 8) {
                    const __m256 va = _mm256_add_ps(_mm256_loadu_ps(a + w), vb), vd = _mm256_add_ps(_mm256_loadu_ps(d + w), vb);
                    const __m256 lo = _mm256_unpacklo_ps(va, vd), hi = _mm256_unpackhi_ps(va, vd); /* a0 d0 a1 d1 | a4 d4 a5 d5 */
                    _mm256_storeu_ps(yr + 2 * w, _mm256_permute2f128_ps(lo, hi, 0x20));
                    _mm256_storeu_ps(yr + 2 * w + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
                }
#endif
                for (; w < W; w++) {
                    yr[2 * w] = a[w] + b;
                    yr[2 * w + 1] = d[w] + b;
                }
            } else {
                for (int64_t j = 0; j < p->q.kw; j++) {
                    const float *restrict cj = c0 + j * cols;
                    for (int64_t w = 0; w < W; w++) yr[w * p->q.kw + j] = cj[w] + b;
                }
            }
        }
}

/* Output channels [o0, o1) of group g of image n: per tile of input rows, their GEMM rows then col2im
   (planes started at the bias on the first tile). A: the packed rows of these channels (our GEMM), or
   NULL: sgemm on W_g (it threads itself). R: the residual addend of the absorbed chain, or NULL. */
static void deconv_channels(const deconv_plan *p, const float *X, const float *Wt, const float *B, const float *R, float *Y, int64_t n,
                            int64_t g, int64_t o0, int64_t o1, const float *A, float *scr, int T)
{
    const int64_t hw = p->q.H * p->q.W, ohw = p->q.Ho * p->q.Wo, kk = p->q.kh * p->q.kw, mr = (o1 - o0) * kk;
    const float *xg = X + (n * p->q.C + g * p->Cg) * hw;
    float *yg = Y + (n * p->q.O + g * p->Og) * ohw;
    float *col = scr, *gs = scr + (mr * p->rows * p->q.W + 15) / 16 * 16;
    for (int64_t h0 = 0; h0 < p->q.H; h0 += p->rows) {
        const int64_t h1 = SO_MIN(p->q.H, h0 + p->rows), cols = (h1 - h0) * p->q.W;
        if (A) {
            so_gemm_bsrc src = {.B = xg + h0 * p->q.W, .ldb = hw};
            so_gemm_apacked(mr, cols, p->Cg, A, &src, 0.f, col, cols, NULL, gs, 1);
        } else {
            so_sgemm(1, 0, p->M, cols, p->Cg, 1.f, Wt + g * p->Cg * p->M, p->M, xg + h0 * p->q.W, hw, 0.f, col, cols);
        }
        /* each output channel's plane is written by one thread, in a fixed order: results do not depend on the threads */
#pragma omp parallel for schedule(static) num_threads(T) if (!A && T > 1 && p->Og > 1 && p->Og * ohw > SO_PAR_MIN)
        for (int64_t o = o0; o < o1; o++) {
            float *y = yg + o * ohw;
            if (p->exact) {
                col2im_exact(p, col, o - o0, h0, h1, B ? B[g * p->Og + o] : 0.f, y);
            } else {
                if (h0 == 0) {
                    const float b = B ? B[g * p->Og + o] : 0.f;
                    for (int64_t q = 0; q < ohw; q++) y[q] = b;
                }
                col2im_channel(p, col, o - o0, h0, h1, y);
            }
            if (p->ch.n_fused && h1 == p->q.H) { /* the plane is finished */
                const int64_t c = g * p->Og + o;
                so_epi_row(&p->ch.ep, c, y, R ? R + (n * p->q.O + c) * ohw : NULL, ohw);
            }
        }
    }
}

static void deconv_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const deconv_plan *p = priv;
    const float *X = in[0].data, *Wt = in[1].data, *B = p->has_bias ? in[2].data : NULL, *R = p->res_in >= 0 ? in[p->res_in].data : NULL;
    float *Y = out[0].data;
    if (!p->Ap) {
        for (int64_t n = 0; n < p->q.N; n++)
            for (int64_t g = 0; g < p->q.G; g++) deconv_channels(p, X, Wt, B, R, Y, n, g, 0, p->Og, NULL, scratch, so_sgemm_threads());
        return;
    }
    /* one parallel region for the whole node: thread t computes channel range t of every group and image */
#pragma omp parallel num_threads(p->nch) if (p->nch > 1)
    for (int t = omp_get_thread_num(); t < p->nch; t += omp_get_num_threads())
        for (int64_t n = 0; n < p->q.N; n++)
            for (int64_t g = 0; g < p->q.G; g++)
                deconv_channels(p, X, Wt, B, R, Y, n, g, p->oc[t], p->oc[t + 1], p->Ap + p->apo[g * p->nch + t], scratch + (size_t)t * p->tscr, 1);
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
    p->q = conv2d_geom_of(a, x, o, w->dim[2], w->dim[3]);
    p->Cg = p->q.C / p->q.G;
    p->Og = w->dim[1];
    p->M = p->Og * p->q.kh * p->q.kw;
    p->has_bias = has_bias;
    p->exact = p->q.kh == p->q.sh && p->q.kw == p->q.sw && p->q.dh == 1 && p->q.dw == 1 && p->q.ph == 0 && p->q.pw == 0 && p->q.Ho == p->q.H * p->q.kh &&
               p->q.Wo == p->q.W * p->q.kw;
    if (p->q.G * p->Og != p->q.O || p->q.G * p->Cg != p->q.C || p->M < 1 || p->Cg < 1 || p->q.N * p->q.H * p->q.W < 1) {
        free(p); /* empty or inconsistent shapes: the reference kernel */
        return SO_OK;
    }
    /* the successors kernels/fuse.c lets it absorb (a bias computed in the graph: none); their epilogue starts from
       the bias, so the planes then start at 0 */
    const float *bw = has_bias ? so_fuse_weight_f32(g, n->in[2]) : NULL;
    p->res_in = -1;
    if (!has_bias || bw) {
        so_fast_chain_build(c, i, 1, p->q.O, bw, &p->ch);
        so_fast_chain_apply(&p->ch, k);
        if (p->ch.n_fused) p->has_bias = 0;
        if (p->ch.has_extra) p->res_in = n->n_in;
    }
    p->rows = SO_MAX(1, so_deconv_tile_floats / (p->M * p->q.W));
    if (p->rows > p->q.H) p->rows = p->q.H;
    const int64_t cols = p->rows * p->q.W, kk = p->q.kh * p->q.kw;
    size_t sc = (size_t)((p->M * cols + 15) / 16 * 16);
    const so_node *wn = &g->nodes[n->in[1].node];
    /* our GEMM with the weights packed at load, a range of output channels per thread; sgemm (threading itself) on a
       weight computed in the graph */
    if (so_fast_use_gemm && wn->op == SO_OP_WEIGHT && g->model->weights[wn->ref].data) {
        const float *Wt = g->model->weights[wn->ref].data;
        const int T = so_sgemm_threads();
        p->nch = (int)SO_MAX(1, SO_MIN(SO_MIN(T, SO_DECONV_MAX_T), p->Og));
        int64_t mx = 0;
        for (int t = 0; t <= p->nch; t++) p->oc[t] = p->Og * t / p->nch;
        for (int t = 0; t < p->nch; t++) mx = SO_MAX(mx, (p->oc[t + 1] - p->oc[t]) * kk);
        p->apo = so_xmalloc(sizeof *p->apo * (size_t)(p->q.G * p->nch + 1));
        int64_t tot = 0;
        for (int64_t gr = 0; gr < p->q.G; gr++)
            for (int t = 0; t < p->nch; t++) {
                p->apo[gr * p->nch + t] = tot;
                tot += ((int64_t)so_gemm_packed_a_floats((p->oc[t + 1] - p->oc[t]) * kk, p->Cg) + 15) / 16 * 16;
            }
        p->Ap = aligned_alloc(64, (sizeof(float) * (size_t)tot + 63) / 64 * 64);
        float *At = malloc(sizeof *At * (size_t)(p->M * p->Cg));
        if (p->Ap && At) {
            for (int64_t gr = 0; gr < p->q.G; gr++) { /* A = W_g^T: [M, Cg], rows of channel range t packed on their own */
                const float *wg = Wt + gr * p->Cg * p->M;
                for (int64_t r = 0; r < p->M; r++)
                    for (int64_t ci = 0; ci < p->Cg; ci++) At[r * p->Cg + ci] = wg[ci * p->M + r];
                for (int t = 0; t < p->nch; t++)
                    so_gemm_pack_a((p->oc[t + 1] - p->oc[t]) * kk, p->Cg, At + p->oc[t] * kk * p->Cg, p->Cg, p->Ap + p->apo[gr * p->nch + t]);
            }
            k->packed_bytes = sizeof(float) * (size_t)tot;
            k->in1_copied = 1;
            p->tscr = (size_t)((mx * cols + 15) / 16 * 16) + (so_gemm_apacked_scratch_floats(mx, cols, p->Cg, 1) + 15) / 16 * 16;
            sc = p->tscr * (size_t)p->nch;
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
