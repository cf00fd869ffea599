/* matmul.c - MatMul and Gemm (OpenBLAS sgemm or our GEMM, fused epilogues), the fused attention step, LSTM on sgemm. */
#include "kset_names.h"

#include "matmul.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <omp.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "chain.h"
#include "dnnl.h"
#include "epi.h"
#include "gemm.h"
#include "gemv.h"
#include "kpriv.h"
#include "sgemm.h"
#include "vmath.h"

/* Epilogue with the channel on the last axis: y is [m, n], channel = column (epi_cols: the rows over the team). */
static void epi_cols_rows(const so_epi *ep, float *y, const float *res, int64_t m, int64_t n)
{
#pragma omp for nowait
    for (int64_t r = 0; r < m; r++) so_epi_cols(ep, 0, y + r * n, res ? res + r * n : NULL, n);
}

static void epi_cols(const so_epi *ep, float *y, const float *res, int64_t m, int64_t n)
{
    if (!ep->scale && !ep->shift && !ep->act1 && !res) return;
    SO_PAR_RUN(m * n > SO_PAR_MIN, , epi_cols_rows(ep, y, res, m, n));
}

/* ---------------- MatMul / Gemm ---------------- */

typedef struct mm_plan {
    int64_t M, N, K, lda, ldb;
    int ta, tb;
    float alpha, beta;
    int64_t nb;           /* batch count */
    int64_t *aoff, *boff; /* per batch, in floats */
    so_fast_chain ch;
    int res_in;           /* index of the residual in in[] or -1 */
    int c_mode;           /* Gemm C: 0 none or folded, 1 broadcast-fill before sgemm */
    int64_t cM, cN;       /* C broadcast dims */
    float *bp;            /* so_gemm: B (a weight) packed at load, or NULL */
    int gemv;             /* M = 1: bp runs on so_gemv_packed instead (mm_use_gemv) */
    int T;                /* threads the so_gemm scratch was sized for */
    so_dnnl_mm *dn;       /* oneDNN's matmul primitive on B reordered at load, the epilogue as post-ops, or NULL */
} mm_plan;

static void mm_free(void *p)
{
    mm_plan *m = p;
    free(m->aoff);
    free(m->boff);
    free(m->ch.scale);
    free(m->ch.shift);
    free(m->bp);
    so_dnnl_mm_free(m->dn);
    free(m);
}

static void mm_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    (void)scratch;
    const mm_plan *p = priv;
    const float *A = in[0].data, *B = in[1].data;
    float *Y = out[0].data;
    float beta = 0.f;
    if (p->c_mode == 1) {
        const float *C = in[2].data;
        for (int64_t m = 0; m < p->M; m++)
            for (int64_t n = 0; n < p->N; n++)
                Y[m * p->N + n] = p->beta * C[(p->cM == 1 ? 0 : m) * p->cN + (p->cN == 1 ? 0 : n)];
        beta = 1.f;
    }
    const float *res = p->res_in >= 0 ? in[p->res_in].data : NULL;
    if (p->dn) { /* oneDNN's matmul primitive: B reordered at load, bias / activation / residual in its post-ops */
        so_dnnl_mm_run(p->dn, A, Y, res, scratch);
        return;
    }
    int T = so_sgemm_threads() < p->T ? so_sgemm_threads() : p->T;
    if (p->bp && p->gemv) { /* M = 1: our GEMV (mm_use_gemv), epilogue on each thread's finished columns */
        so_gemv_packed(p->K, p->N, p->alpha, A, p->ta ? p->lda : 1, p->bp, Y, &p->ch.ep, res, T);
        return;
    }
    if (p->bp) { /* our GEMM, weight packed at load, epilogue on each finished tile */
        so_gemm_epi ge = {.ep = &p->ch.ep, .per_row = 0, .res = res, .ldr = p->N};
        so_gemm_packed(p->ta, p->M, p->N, p->K, p->alpha, A, p->lda, p->bp, beta, Y, p->N, &ge, scratch, T);
        return;
    }
    for (int64_t b = 0; b < p->nb; b++)
        so_sgemm(p->ta, p->tb, p->M, p->N, p->K, p->alpha, A + p->aoff[b], p->lda, B + p->boff[b], p->ldb, beta,
                      Y + b * p->M * p->N, p->N);
    epi_cols(&p->ch.ep, Y, res, p->nb * p->M, p->N);
}

/* oneDNN's matmul primitive instead of dnnl_sgemm + the epilogue pass for a weight B, wherever so_sgemm would run
   dnnl_sgemm (the avx512 level with oneDNN loaded; so_sgemm_onednn) and M >= 2 (M = 1 stays on our GEMV): B is
   reordered once here into oneDNN's brgemm layout, where dnnl_sgemm packs all of B at every call (for ConvNeXt-T's
   [49, 768] x [768, 3072] that is 9.4 MB packed per run for 7.4 MFLOP per MB), and the bias, activation and
   residual run in the product's post-ops instead of a second pass over Y (an epilogue with an activation stays on
   sgemm: see below). A rule, not a plan-time timing (the
   output bits then do not depend on the load of the moment). Measured (Intel Xeon model 207, one thread, cold
   weights, loaded machine: minima of 11 interleaved rounds) on ConvNeXt-T's eight Linear shapes: 0.59-1.02 of
   dnnl_sgemm + bias on seven, 1.27 on [49, 3072] x [3072, 768]; weighted by the model's counts 0.84 (kernels/README.md,
   "AVX-512 kernels and oneDNN or ours"). so_fast_use_onednn = 0 (SUPEROPT_ONEDNN=0) keeps sgemm.
   Except (mm_dnnl_slow) a long reduction onto a narrow output with few rows, K >= 1024, K >= 4N, M < 256 (ConvNeXt-T's
   [49, 3072] x [3072, 768], BERT-base's FFN down-projection [64, 3072] x [3072, 768]), where oneDNN's matmul was the
   slower one in session 19 (Intel Xeon model 207, 1 thread, bias + residual epilogue, thread-CPU minima, 9 paired
   rounds, load ~6.5): 1.14 / 1.19 of dnnl_sgemm + our pass cold, 1.06 / 1.05 warm; ConvNeXt's [196, 1536] x [1536, 384]
   (also in the rule) 0.96 / 1.01, a tie. Left on oneDNN: the same K = 4N with many rows, faster there ([784, 768] x
   [768, 192] 0.88 / 0.86, [3136, 384] x [384, 96] 0.86 / 0.81; BERT-large's [1024, 4096] x [4096, 1024] 1.04 / 1.05 at
   1 thread but 0.64 / 0.61 at 2, loaded), and every K < 4N shape of ConvNeXt-T and BERT (0.66-1.06). */
static int mm_dnnl_slow(int64_t M, int64_t K, int64_t N) { return K >= 1024 && K >= 4 * N && M < 256; }

static void mm_use_dnnl(const so_graph *g, const so_node *n, mm_plan *p, so_fast_kernel *k)
{
    if (p->nb != 1 || p->ta || p->tb || p->lda != p->K || p->c_mode || p->alpha != 1.f || p->M < 2 || p->N < 1 || p->K < 1) return;
    if (mm_dnnl_slow(p->M, p->K, p->N)) return;
    /* no activation: oneDNN's eltwise post-ops give Relu(NaN) = 0 and clip NaN to a bound where ours and the
       reference keep NaN (test_fast test_nonfinite); bias and residual adds keep it */
    if (p->ch.ep.act1 != SO_ACT_NONE || p->ch.ep.act2 != SO_ACT_NONE) return;
    if (!so_sgemm_onednn()) return;
    const float *w = weight_f32(g, n->in[1]);
    if (!w) return;
    p->dn = so_dnnl_mm_plan(p->M, p->K, p->N, 0, w, p->ldb, &p->ch.ep);
    if (!p->dn) return; /* stays on sgemm */
    size_t nb;
    k->packed = so_dnnl_mm_weights(p->dn, &nb);
    k->packed_bytes = nb;
    k->in1_copied = 1;
    k->scratch_bytes = so_dnnl_mm_scratch_bytes(p->dn);
}

/* Our GEMM (gemm.c) instead of sgemm for a weight B (packed once here) when both dims are
   >= 2 (M = 1 / N = 1 stay on sgemv) and M <= 1024. Batched products of activations stay on
   OpenBLAS: BERT's 12 x [64,64]x[64,64] attention products with B packed per batch
   (so_gemm, batches over threads) took 1.05-1.6x OpenBLAS's time in-model. Measured
   against this OpenBLAS in bench/gemm_bench.c. */
static void mm_use_gemm(const so_graph *g, const so_node *n, mm_plan *p, so_fast_kernel *k)
{
    /* M > 1024: this OpenBLAS is as fast or faster (2048^3: 0.88x ours) - unless the reduction is short (K <= 384):
       bench/gemm_bench.c, AMD EPYC Zen 3, OpenBLAS Zen, 1 thread, loaded: [3136, 96] x [96, 384] ours 1.4-2.7x its
       GFLOP/s, [3136, 384] x [384, 96] 1.0-1.25x, [12544, 64] x [64, 64] 1.06x; [4096, 1024] x [1024, 256] 0.83x */
    if (!so_fast_use_gemm || p->M < 2 || p->N < 2 || p->K < 1 || (p->M > so_fast_gemm_max_m && p->K > so_fast_gemm_tall_k)) return;
    if (so_sgemm_onednn()) return; /* oneDNN's sgemm: faster than ours on every shape measured */
    p->T = so_sgemm_threads() < 1 ? 1 : so_sgemm_threads();
    const float *w = weight_f32(g, n->in[1]);
    if (p->nb == 1 && w) {
        p->bp = aligned_alloc(64, (so_gemm_packed_b_floats(p->K, p->N) * sizeof(float) + 63) / 64 * 64);
        if (!p->bp) return; /* stays on sgemm */
        so_gemm_pack_b(p->tb, p->K, p->N, w, p->ldb, p->bp);
        k->packed_bytes = so_gemm_packed_b_floats(p->K, p->N) * sizeof(float);
        k->packed = p->bp;
        k->in1_copied = 1;
        k->scratch_bytes = so_gemm_scratch_floats(p->M, p->K, p->T) * sizeof(float);
    }
}

/* M = 1 against a weight B (the classifiers: MobileNet-v3's 960 -> 1280 -> 1000, MNASNet's 1280 -> 1000): our GEMV
   (gemv.h) on B packed once here, instead of sgemv then the epilogue pass. A rule, not a plan-time measurement:
   it measured faster than this OpenBLAS's sgemv (Haswell kernels, one thread) on every shape tried, 1280 x 1000
   weights evicted 0.12 against 0.16 ms, in L3 0.057 against 0.065 ms, 512 x 2048 0.036 against 0.047, 64 x 256
   0.4 against 0.8 us, and in MobileNet-v3 (per-step profile) 0.135 + 0.138 against 0.236 + 0.209 ms (all loaded,
   interleaved). A per-process measured choice (tried) made the output bits depend on the load of the moment and on
   the thread count (test_gemm's 1-vs-2-thread bitwise check failed with it). so_fast_use_gemv = 0 keeps sgemv. */
static void mm_use_gemv(const so_graph *g, const so_node *n, mm_plan *p, so_fast_kernel *k)
{
    if (!so_fast_use_gemv || p->M != 1 || (int64_t)p->K * p->N < so_fast_gemv_min || p->nb != 1 || p->c_mode || p->bp || p->K < 1 || p->N < 1) return;
    const float *w = weight_f32(g, n->in[1]);
    if (!w) return;
    const size_t nf = so_gemm_packed_b_floats(p->K, p->N);
    p->bp = so_big_alloc(nf * sizeof(float));
    if (!p->bp) return; /* stays on sgemv */
    so_gemm_pack_b(p->tb, p->K, p->N, w, p->ldb, p->bp);
    p->T = so_sgemm_threads() < 1 ? 1 : so_sgemm_threads();
    p->gemv = 1;
    k->packed_bytes = nf * sizeof(float);
    k->packed = p->bp;
    k->in1_copied = 1;
}

/* ---------------- attention ---------------- */
/* MatMul(Q, Kt) -> Div (or Mul) by a scalar weight -> Softmax over the last axis -> MatMul(., V)
   [-> Transpose (0, 2, 1, 3)]: BERT's per-head attention, Q [.., S, D], Kt [.., D, S2],
   V [.., S2, Dv] with the same batch dims (no broadcast). One step: per batch (head), on one
   thread, the S x S2 scores by our GEMM into a thread-private block (L1/L2), scaled and
   softmaxed in place (same operations as the Div and softmax kernels), then times V by our
   GEMM straight into the output, transposed by the output's leading dimension. Pure kernel
   selection: the absorbed nodes' outputs never exist. */
typedef struct attn_plan {
    int64_t nb, S, D, S2, Dv;
    int64_t heads;  /* transposed output [B, S, heads, Dv]: batch b = b0 * heads + h; else 1 */
    float c;
    int mul;        /* scores * c (Mul) instead of / c (Div) */
    int64_t per;    /* scratch floats per thread */
} attn_plan;

static void attn_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const attn_plan *p = priv;
    const float *Q = in[0].data, *Kt = in[1].data, *V = in[2].data;
    float *Y = out[0].data;
    const int64_t S = p->S, D = p->D, S2 = p->S2, Dv = p->Dv, H = p->heads;
    const float cv = p->c;
#pragma omp parallel for schedule(static) if (p->nb * S * S2 * (D + Dv) > SO_PAR_MIN)
    for (int64_t b = 0; b < p->nb; b++) {
        float *sc = scratch + (int64_t)omp_get_thread_num() * p->per;
        so_gemm_small(S, S2, D, Q + b * S * D, D, Kt + b * D * S2, S2, sc, S2);
        for (int64_t r = 0; r < S; r++) {
            float *x = sc + r * S2;
            if (p->mul) {
#pragma omp simd
                for (int64_t j = 0; j < S2; j++) x[j] *= cv;
            } else {
#pragma omp simd
                for (int64_t j = 0; j < S2; j++) x[j] /= cv;
            }
            softmax_row(x, x, S2);
        }
        float *y = H > 1 ? Y + (b / H) * S * H * Dv + (b % H) * Dv : Y + b * S * Dv;
        so_gemm_small(S, Dv, S2, sc, S2, V + b * S2 * Dv, Dv, y, H * Dv);
    }
}

static int select_attention(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_graph *g = c->g;
    const so_node *n = &g->nodes[i];
    so_fuse f;
    if (!so_fuse_attention(g, c->user, c->absorbed, i, &f)) return 0; /* the decision: kernels/fuse.c */
    const int32_t *u = f.node;
    const so_shape *q = shape_of(g, n->in[0]), *kt = shape_of(g, n->in[1]), *v = shape_of(g, f.extra);
    const int r = q->rank;
    const so_node *dv = &g->nodes[u[0]];
    float cv;
    so_edge o;
    other_in(dv, i, &o);
    scalar_weight(g, o, &cv);
    attn_plan *p = so_xcalloc(1, sizeof *p);
    p->S = q->dim[r - 2];
    p->D = q->dim[r - 1];
    p->S2 = kt->dim[r - 1];
    p->Dv = v->dim[r - 1];
    p->nb = 1;
    for (int d = 0; d < r - 2; d++) p->nb *= q->dim[d];
    p->heads = f.n == 4 ? q->dim[1] : 1;
    p->c = cv;
    p->mul = dv->op == SO_OP_MUL;
    int nf = f.n;
    const int T = omp_get_max_threads() < 1 ? 1 : omp_get_max_threads();
    p->per = (p->S * p->S2 + 15) / 16 * 16;
    k->scratch_bytes = sizeof(float) * (size_t)p->per * (size_t)T;
    k->n_fused = nf;
    memcpy(k->fused, u, sizeof(int32_t) * (size_t)nf);
    k->has_extra = 1;
    k->extra_in = f.extra;
    k->run = attn_run;
    k->priv = p;
    k->free_priv = free;
    k->name = "attention";
    return 1;
}

static so_status select_matmul(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_graph *g = c->g;
    const so_node *n = &g->nodes[i];
    so_shape a = *shape_of(g, n->in[0]), b = *shape_of(g, n->in[1]);
    const so_shape *o = &n->out[0];
    if (a.dtype != SO_F32 || b.dtype != SO_F32) return SO_OK;
    if (select_attention(c, i, k)) return SO_OK;
    if (a.rank == 1) { a.rank = 2; a.dim[1] = a.dim[0]; a.dim[0] = 1; }
    if (b.rank == 1) { b.rank = 2; b.dim[1] = 1; }
    mm_plan *p = so_xcalloc(1, sizeof *p);
    p->M = a.dim[a.rank - 2];
    p->K = a.dim[a.rank - 1];
    p->N = b.dim[b.rank - 1];
    p->lda = p->K;
    p->ldb = p->N;
    p->alpha = 1.f;
    p->res_in = -1;
    /* broadcast batch dims */
    int ra = a.rank - 2, rb = b.rank - 2, r = SO_MAX(ra, rb);
    int64_t bd[SO_MAX_RANK], sa[SO_MAX_RANK], sb[SO_MAX_RANK];
    int64_t acc_a = p->M * p->K, acc_b = p->K * p->N;
    for (int d = r - 1; d >= 0; d--) {
        int ia = d - (r - ra), ib = d - (r - rb);
        int64_t da = ia >= 0 ? a.dim[ia] : 1, db = ib >= 0 ? b.dim[ib] : 1;
        bd[d] = SO_MAX(da, db);
        sa[d] = da == 1 ? 0 : acc_a;
        sb[d] = db == 1 ? 0 : acc_b;
        acc_a *= da;
        acc_b *= db;
    }
    int64_t nb = 1;
    for (int d = 0; d < r; d++) nb *= bd[d];
    int b_shared = 1;
    for (int d = 0; d < r; d++)
        if (sb[d]) b_shared = 0;
    int a_full = 1;
    for (int d = 0; d < r; d++)
        if (bd[d] > 1 && !sa[d]) a_full = 0;
    if (b_shared && a_full) { /* fold batch into M */
        p->M *= nb;
        nb = 1;
    }
    p->nb = nb;
    p->aoff = so_xcalloc((size_t)nb, sizeof *p->aoff);
    p->boff = so_xcalloc((size_t)nb, sizeof *p->boff);
    if (!(b_shared && a_full))
        for (int64_t t = 0; t < nb; t++) {
            int64_t rem = t, oa = 0, ob = 0;
            for (int d = r - 1; d >= 0; d--) {
                int64_t idx = rem % bd[d];
                rem /= bd[d];
                oa += idx * sa[d];
                ob += idx * sb[d];
            }
            p->aoff[t] = oa;
            p->boff[t] = ob;
        }
    if (shape_of(g, n->in[1])->rank >= 2 && o->rank >= 1) {
        so_fast_chain_build(c, i, o->rank - 1, p->N, NULL, &p->ch);
    } else {
        /* vector B drops N: the last axis is not the channel; no per-channel chain */
        p->ch.ep.act1 = n->attr->act;
        p->ch.ep.lo1 = n->attr->clip_min;
        p->ch.ep.hi1 = n->attr->clip_max;
    }
    if (p->ch.has_extra) p->res_in = n->n_in;
    so_fast_chain_apply(&p->ch, k);
    k->run = mm_run;
    k->priv = p;
    k->free_priv = mm_free;
    mm_use_dnnl(g, n, p, k);
    if (!p->dn) {
        mm_use_gemm(g, n, p, k);
        mm_use_gemv(g, n, p, k);
    }
    k->name = p->dn ? "matmul_onednn" : p->gemv ? "matmul_gemv" : p->bp ? "matmul_so_gemm" : nb > 1 ? "matmul_batched_sgemm" : "matmul_sgemm";
    return SO_OK;
}

static so_status select_gemm(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_graph *g = c->g;
    const so_node *n = &g->nodes[i];
    const so_attr *at = n->attr;
    const so_shape *a = shape_of(g, n->in[0]), *b = shape_of(g, n->in[1]);
    mm_plan *p = so_xcalloc(1, sizeof *p);
    p->ta = at->trans_a;
    p->tb = at->trans_b;
    p->M = p->ta ? a->dim[1] : a->dim[0];
    p->K = p->ta ? a->dim[0] : a->dim[1];
    p->N = p->tb ? b->dim[0] : b->dim[1];
    p->lda = a->dim[1];
    p->ldb = b->dim[1];
    p->alpha = at->alpha;
    p->beta = at->beta;
    p->nb = 1;
    p->aoff = so_xcalloc(1, sizeof *p->aoff);
    p->boff = so_xcalloc(1, sizeof *p->boff);
    p->res_in = -1;
    float *bias = NULL;
    int has_c = n->n_in > 2 && n->in[2].node >= 0;
    if (has_c) {
        const so_shape *cs = shape_of(g, n->in[2]);
        p->cN = cs->rank >= 1 ? cs->dim[cs->rank - 1] : 1;
        p->cM = cs->rank >= 2 ? cs->dim[cs->rank - 2] : 1;
        const float *cw = weight_f32(g, n->in[2]);
        if (cw && p->cM == 1) {
            bias = so_xmalloc(sizeof *bias * (size_t)p->N);
            for (int64_t j = 0; j < p->N; j++) bias[j] = p->beta * cw[p->cN == 1 ? 0 : j];
        } else {
            p->c_mode = 1;
        }
    }
    so_fast_chain_build(c, i, 1, p->N, bias, &p->ch);
    free(bias);
    if (p->ch.has_extra) p->res_in = n->n_in;
    so_fast_chain_apply(&p->ch, k);
    k->run = mm_run;
    k->priv = p;
    k->free_priv = mm_free;
    mm_use_gemm(g, n, p, k);
    mm_use_gemv(g, n, p, k);
    k->name = p->gemv ? "gemm_gemv" : p->bp ? "gemm_so_gemm" : "gemm_sgemm";
    return SO_OK;
}

/* ---------------- LSTM on sgemm ---------------- */

/* With constant weights (the usual case), W^T and R^T are packed once at selection in our GEMM's
   B layout (gemm.h: 16-column panels, K rows each): the input projection of all steps runs on
   so_gemm_packed with the summed biases as its epilogue, and each step's recurrent product
   [N, H] x R^T on lstm_rec below. OpenBLAS's sgemm spent more instructions in its own buffer
   handling than in its kernel on these small products (lstm2: [8, 64] x [64, 256], callgrind),
   and its sgemv took ~2x lstm_rec's instructions for [1, 64] x [64, 256]. */
typedef struct lstm_plan {
    int64_t T, N, In, H, D;
    int dir;                  /* attr.direction */
    int has_b, has_h0, has_c0;
    float *wp, *rp;           /* per direction: W^T [In, 4H] and R^T [H, 4H] packed (so_gemm_pack_b), or NULL: sgemm */
    float *bias;              /* per direction: Wb + Rb [4H] (constant B), or NULL */
    int threads;              /* threads the GEMM scratch was sized for */
    size_t gemm_floats;       /* that scratch, at the start of the kernel's scratch (32-byte aligned) */
} lstm_plan;

static void lstm_free(void *priv)
{
    lstm_plan *p = priv;
    free(p->wp);
    free(p->rp);
    free(p->bias);
    free(p);
}

/* g[0, G4) += h[0, H) R^T with R^T packed (rp: K = H rows, N = G4 columns in 16-column panels). The AVX2
   path keeps four panels' sums (8 registers: enough independent FMA chains to hide their latency) over
   the whole K loop. One thread (small products only: select_lstm). */
static void lstm_rec(const float *restrict rp, int64_t H, int64_t G4, const float *restrict h, float *restrict g)
{
    int64_t j0 = 0;
#ifdef __AVX2__
    for (; j0 + 4 * SO_GEMM_NR <= G4; j0 += 4 * SO_GEMM_NR) {
        const float *b = rp + j0 * H; /* panel j0 / SO_GEMM_NR starts at (j0 / SO_GEMM_NR) * K * SO_GEMM_NR; the next three follow */
        const float *b1 = b + H * SO_GEMM_NR, *b2 = b1 + H * SO_GEMM_NR, *b3 = b2 + H * SO_GEMM_NR;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0; /* (named: an array stayed in memory) */
        for (int64_t k = 0; k < H; k++) {
            const __m256 hk = _mm256_broadcast_ss(h + k);
            const int64_t o = k * SO_GEMM_NR;
            a0 = _mm256_fmadd_ps(hk, _mm256_loadu_ps(b + o), a0);
            a1 = _mm256_fmadd_ps(hk, _mm256_loadu_ps(b + o + 8), a1);
            a2 = _mm256_fmadd_ps(hk, _mm256_loadu_ps(b1 + o), a2);
            a3 = _mm256_fmadd_ps(hk, _mm256_loadu_ps(b1 + o + 8), a3);
            a4 = _mm256_fmadd_ps(hk, _mm256_loadu_ps(b2 + o), a4);
            a5 = _mm256_fmadd_ps(hk, _mm256_loadu_ps(b2 + o + 8), a5);
            a6 = _mm256_fmadd_ps(hk, _mm256_loadu_ps(b3 + o), a6);
            a7 = _mm256_fmadd_ps(hk, _mm256_loadu_ps(b3 + o + 8), a7);
        }
        const __m256 acc[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
        for (int q = 0; q < 8; q++) _mm256_storeu_ps(g + j0 + 8 * q, _mm256_add_ps(_mm256_loadu_ps(g + j0 + 8 * q), acc[q]));
    }
#endif
    for (; j0 < G4; j0 += SO_GEMM_NR) {
        const float *b = rp + j0 * H;
        float acc[SO_GEMM_NR] = {0};
        for (int64_t k = 0; k < H; k++) {
            const float hk = h[k];
#pragma omp simd
            for (int j = 0; j < SO_GEMM_NR; j++) acc[j] += hk * b[k * SO_GEMM_NR + j];
        }
        const int64_t nr = G4 - j0 < SO_GEMM_NR ? G4 - j0 : SO_GEMM_NR;
        for (int64_t j = 0; j < nr; j++) g[j0 + j] += acc[j];
    }
}

static void lstm_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    const lstm_plan *p = priv;
    const int64_t T = p->T, N = p->N, In = p->In, H = p->H, G4 = 4 * H;
    const float *X = in[0].data, *Wt = in[1].data, *Rt = in[2].data;
    const float *Bt = p->has_b ? in[3].data : NULL, *H0 = p->has_h0 ? in[5].data : NULL, *C0 = p->has_c0 ? in[6].data : NULL;
    float *Y = out[0].data;
    float *gscr = scratch, *gates = scratch + p->gemm_floats, *h = gates + T * N * G4, *c = h + N * H;
    const size_t wpf = so_gemm_packed_b_floats(In, G4), rpf = so_gemm_packed_b_floats(H, G4);
    for (int64_t d = 0; d < p->D; d++) {
        const int reverse = p->dir == 1 || d == 1;
        const float *W = Wt + d * G4 * In, *R = Rt + d * G4 * H;
        /* input projection for all steps: gates[T*N, 4H] = X W^T (+ Wb + Rb) */
        if (p->wp) {
            so_epi ep = {.shift = p->bias ? p->bias + d * G4 : NULL};
            so_gemm_epi ge = {.ep = &ep, .per_row = 0};
            int th = so_sgemm_threads() < p->threads ? so_sgemm_threads() : p->threads;
            so_gemm_packed(0, T * N, G4, In, 1.f, X, In, p->wp + d * wpf, 0.f, gates, G4, p->bias ? &ge : NULL, gscr, th);
        } else {
            so_sgemm(0, 1, T * N, G4, In, 1.f, X, In, W, In, 0.f, gates, G4);
        }
        if (Bt && !p->bias) {
            const float *wb = Bt + d * 8 * H, *rb = wb + G4;
            for (int64_t r = 0; r < T * N; r++) {
                float *gr = gates + r * G4;
#pragma omp simd /* (gates is scratch: it cannot alias the biases; GCC did not vectorise this loop without the pragma) */
                for (int64_t j = 0; j < G4; j++) gr[j] += wb[j] + rb[j];
            }
        }
        for (int64_t j = 0; j < N * H; j++) {
            h[j] = H0 ? H0[d * N * H + j] : 0.f;
            c[j] = C0 ? C0[d * N * H + j] : 0.f;
        }
        for (int64_t s = 0; s < T; s++) {
            const int64_t t = reverse ? T - 1 - s : s;
            float *gt = gates + t * N * G4;
            if (p->rp)
                for (int64_t b = 0; b < N; b++) lstm_rec(p->rp + d * rpf, H, G4, h + b * H, gt + b * G4);
            else
                so_sgemm(0, 1, N, G4, H, 1.f, h, H, R, H, 1.f, gt, G4);
            for (int64_t b = 0; b < N; b++) {
                const float *g = gt + b * G4;
                float *hb = h + b * H, *cb = c + b * H;
                float *yb = Y + ((t * p->D + d) * N + b) * H;
#pragma omp simd
                for (int64_t j = 0; j < H; j++) { /* ONNX gate order i, o, f, c */
                    float gi = vsigmoidf(g[j]), go = vsigmoidf(g[H + j]), gf = vsigmoidf(g[2 * H + j]), gc = vtanhf(g[3 * H + j]);
                    float cn = gf * cb[j] + gi * gc;
                    cb[j] = cn;
                    hb[j] = go * vtanhf(cn);
                    yb[j] = hb[j];
                }
            }
        }
        for (int64_t j = 0; j < N * H; j++) {
            if (out[1].data) ((float *)out[1].data)[d * N * H + j] = h[j];
            if (out[2].data) ((float *)out[2].data)[d * N * H + j] = c[j];
        }
    }
}

/* Packs the D directions of a constant [D, 4H, K] weight as D so_gemm_pack_b(trans_b = 1) blocks; NULL when
   the weight is not constant or memory is short (the kernel then stays on sgemm). */
static float *lstm_pack(const so_graph *g, so_edge e, int64_t D, int64_t K, int64_t G4, size_t *bytes)
{
    const float *w = weight_f32(g, e);
    if (!w) return NULL;
    const size_t per = so_gemm_packed_b_floats(K, G4);
    float *dst = aligned_alloc(64, (D * per * sizeof(float) + 63) / 64 * 64);
    if (!dst) return NULL;
    for (int64_t d = 0; d < D; d++) so_gemm_pack_b(1, K, G4, w + d * G4 * K, K, dst + d * per);
    *bytes += D * per * sizeof(float);
    return dst;
}

static so_status select_lstm(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    const so_graph *g = c->g;
    const so_node *n = &g->nodes[i];
    const so_shape *x = shape_of(g, n->in[0]), *r = shape_of(g, n->in[2]);
    int present[8] = {0};
    for (int q = 0; q < n->n_in && q < 8; q++) present[q] = n->in[q].node >= 0;
    if (present[4]) { /* sequence_lens: only all-full lengths (a weight) are handled here */
        const so_node *sl = &g->nodes[n->in[4].node];
        if (sl->op != SO_OP_WEIGHT) return SO_OK;
        const so_weight *w = &g->model->weights[sl->ref];
        int64_t cnt = so_shape_numel(&w->shape);
        for (int64_t j = 0; j < cnt; j++) {
            double v = w->shape.dtype == SO_I64 ? (double)((const int64_t *)w->data)[j] : (double)((const float *)w->data)[j];
            if (v < (double)x->dim[0]) return SO_OK;
        }
    }
    if (present[7] || n->n_out != 3) return SO_OK; /* peepholes: reference */
    const so_attr *at = n->attr;
    if (at->n_ints > 0 || at->clip_max > 0.0f || at->mode) return SO_OK; /* other activations, clip, input_forget: reference */
    lstm_plan *p = so_xcalloc(1, sizeof *p);
    p->T = x->dim[0];
    p->N = x->dim[1];
    p->In = x->dim[2];
    p->H = r->dim[2];
    p->dir = n->attr->direction;
    p->D = p->dir == 2 ? 2 : 1;
    p->has_b = present[3];
    p->has_h0 = present[5];
    p->has_c0 = present[6];
    const int64_t G4 = 4 * p->H;
    /* our GEMM for the input projection (as mm_use_gemm: not where oneDNN's sgemm is used), lstm_rec for the
       recurrent product while R is small (a larger R stays on sgemv, which splits it over the threads) */
    if (so_fast_use_gemm && !so_sgemm_onednn()) {
        p->threads = so_sgemm_threads() < 1 ? 1 : so_sgemm_threads();
        p->wp = lstm_pack(g, n->in[1], p->D, p->In, G4, &k->packed_bytes);
        if (p->wp) p->gemm_floats = (so_gemm_scratch_floats(p->T * p->N, p->In, p->threads) + 15) & ~(size_t)15;
    }
    if (so_fast_use_gemm && G4 * p->H < ((int64_t)1 << 18)) p->rp = lstm_pack(g, n->in[2], p->D, p->H, G4, &k->packed_bytes);
    const float *bw = present[3] ? weight_f32(g, n->in[3]) : NULL;
    if (p->wp && bw) {
        p->bias = so_xmalloc(sizeof *p->bias * (size_t)(p->D * G4));
        for (int64_t d = 0; d < p->D; d++)
            for (int64_t j = 0; j < G4; j++) p->bias[d * G4 + j] = bw[d * 2 * G4 + j] + bw[d * 2 * G4 + G4 + j];
    }
    k->scratch_bytes = sizeof(float) * (p->gemm_floats + (size_t)(p->T * p->N * G4 + 2 * p->N * p->H));
    k->run = lstm_run;
    k->priv = p;
    k->free_priv = lstm_free;
    k->name = p->wp || p->rp ? "lstm_gemm" : "lstm_sgemm";
    return SO_OK;
}


so_status so_matmul_select(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    switch (c->g->nodes[i].op) {
    case SO_OP_MATMUL: return select_matmul(c, i, k);
    case SO_OP_GEMM: return select_gemm(c, i, k);
    case SO_OP_LSTM: return select_lstm(c, i, k);
    default: return so_errorf("so_matmul_select: no case for %s (kernels/fast.c sends it here)", so_ops[c->g->nodes[i].op].name);
    }
}
