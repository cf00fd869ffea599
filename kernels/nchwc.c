/* nchwc.c - NCHWc conv planning (weight packing), the scalar element function, and the portable-C level (b = 8) of the blocked kernels. */
#include "nchwc.h"
#include "dnnl.h"
#include "fuse.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <omp.h>
#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h> /* _mm_clflush, _mm_mfence: SSE2, in the x86-64 baseline */
#endif

#include "../src/ops.h"

/* ---------------- the portable level: a vector is a struct of 8 floats ---------------- */

typedef struct {
    float v[8];
} vf8;

static inline vf8 s_ld(const float *p)
{
    vf8 r;
    memcpy(r.v, p, sizeof r.v);
    return r;
}
static inline void s_st(float *p, vf8 a) { memcpy(p, a.v, sizeof a.v); }
static inline vf8 s_ldu32(const uint32_t *p)
{
    vf8 r;
    memcpy(r.v, p, sizeof r.v);
    return r;
}
static inline vf8 s_set1(float s)
{
    vf8 r;
    for (int i = 0; i < 8; i++) r.v[i] = s;
    return r;
}
#define S_BIN(name, expr)                                                                                                              \
    static inline vf8 name(vf8 a, vf8 b)                                                                                               \
    {                                                                                                                                  \
        vf8 r;                                                                                                                         \
        for (int i = 0; i < 8; i++) {                                                                                                  \
            const float x = a.v[i], y = b.v[i];                                                                                        \
            r.v[i] = (expr);                                                                                                           \
        }                                                                                                                              \
        return r;                                                                                                                      \
    }
S_BIN(s_add, x + y)
S_BIN(s_sub, x - y)
S_BIN(s_mul, x * y)
S_BIN(s_div, x / y)
S_BIN(s_max, x > y ? x : y)
S_BIN(s_min, x < y ? x : y)
#undef S_BIN
static inline vf8 s_fma(vf8 a, vf8 b, vf8 c)
{
    vf8 r;
    for (int i = 0; i < 8; i++) r.v[i] = a.v[i] * b.v[i] + c.v[i];
    return r;
}
static inline vf8 s_bits(vf8 a, vf8 b, int or)
{
    uint32_t x[8], y[8];
    memcpy(x, a.v, sizeof x);
    memcpy(y, b.v, sizeof y);
    for (int i = 0; i < 8; i++) x[i] = or ? x[i] | y[i] : x[i] & y[i];
    vf8 r;
    memcpy(r.v, x, sizeof x);
    return r;
}
static inline vf8 s_ornan(vf8 m, vf8 a, vf8 b)
{
    uint32_t u[8];
    memcpy(u, m.v, sizeof u);
    for (int i = 0; i < 8; i++) u[i] |= a.v[i] != a.v[i] || b.v[i] != b.v[i] ? 0xffffffffu : 0u;
    return s_ldu32(u);
}

typedef struct {
    uint32_t v[8];
} vi8;
static inline vi8 s_ldi(const uint32_t *p)
{
    vi8 r;
    memcpy(r.v, p, sizeof r.v);
    return r;
}
static inline vf8 s_perm(vf8 a, vi8 i)
{
    vf8 r;
    for (int k = 0; k < 8; k++) r.v[k] = a.v[i.v[k] & 7];
    return r;
}

#define NB 8
#define VF vf8
#define VI vi8
#define VLDI(p) s_ldi(p)
#define VPERM(v, i) s_perm(v, i)
#define VPERM4(v, i) s_perm(v, i)
#define VLD(p) s_ld(p)
#define VST(p, v) s_st(p, v)
#define VLDU32(p) s_ldu32(p)
#define VSET1(s) s_set1(s)
#define VZERO s_set1(0.0f)
#define VFMA(a, b, c) s_fma(a, b, c)
#define VADD(a, b) s_add(a, b)
#define VSUB(a, b) s_sub(a, b)
#define VMUL(a, b) s_mul(a, b)
#define VDIV(a, b) s_div(a, b)
#define VMAX(a, b) s_max(a, b)
#define VMIN(a, b) s_min(a, b)
#define VAND(a, m) s_bits(a, m, 0)
#define VOR(a, b) s_bits(a, b, 1)
#define VORNAN(m, a, b) s_ornan(m, a, b)
#define CONV_OBK 1
#define CONV_PX 6 /* conv_row uses tiles of 1..5 and CONV_PX pixels: at least 6 */
#define DW_PX 8
#define STEM_PX 12
#define DW2_PX 0
#define DW2_MIN_WO 0
#define NCHWC_TABLE so_nchwc_scalar
#define NCHWC_ISA "scalar"
#include "nchwc_body.h"

/* ---------------- level-independent parts ---------------- */

int64_t so_nchwc_numel(int b, int64_t N, int64_t C, int64_t HW) { return N * ((C + b - 1) / b) * HW * b; }

static inline float clamp01(float t) { return t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t; }

float so_nchwc_unary1(const so_nchwc_unary *u, float x)
{
    switch (u->op) {
    case SO_OP_RELU: return x < 0.0f ? 0.0f : x;
    case SO_OP_SIGMOID: return (float)(1.0 / (1.0 + exp(-(double)x)));
    case SO_OP_TANH: return tanhf(x);
    case SO_OP_ERF: return erff(x);
    case SO_OP_SQRT: return sqrtf(x);
    case SO_OP_EXP: return expf(x);
    case SO_OP_LOG: return logf(x);
    case SO_OP_NEG: return -x;
    case SO_OP_RECIPROCAL: return 1.0f / x;
    case SO_OP_CLIP: return x < u->lo ? u->lo : x > u->hi ? u->hi : x;
    case SO_OP_HARDSIGMOID: return clamp01(u->alpha * x + u->beta);
    case SO_OP_HARDSWISH: return x * clamp01(x / 6.0f + 0.5f);
    case SO_OP_LEAKYRELU: return x < 0.0f ? u->alpha * x : x;
    default: return x;
    }
}

int so_nchwc_conv_plan(so_nchwc_conv *p, int b, int64_t C, int64_t H, int64_t W, int64_t O, int64_t Ho, int64_t Wo, int64_t kh,
                       int64_t kw, int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t group,
                       const float *w, const so_epi *ep)
{
    memset(p, 0, sizeof *p);
    p->b = b, p->C = C, p->H = H, p->W = W, p->O = O, p->Ho = Ho, p->Wo = Wo, p->kh = kh, p->kw = kw;
    p->sh = sh, p->sw = sw, p->pt = pt, p->pl = pl, p->dh = dh, p->dw = dw, p->group = group;
    p->Cb = (C + b - 1) / b, p->Ob = (O + b - 1) / b;
    if (kh == 1 && kw == 1 && sh == 1 && sw == 1 && pt == 0 && pl == 0 && Ho == H && Wo == W) /* one row of H*W pixels: no row ends */
        p->W = p->Wo = H * W, p->H = p->Ho = 1;
    p->depthwise = group > 1 && group == C && O == C;
    const int64_t KK = kh * kw, Cg = C / group, Og = O / group, Ob = p->Ob;
    if (group > 1 && Cg > 1 && Cg == Og && Cg < b && b % Cg == 0) {
        p->gsub = Cg;
        for (int64_t c = 0; c < Cg; c++)
            for (int64_t o = 0; o < b; o++) p->gidx[c][o] = (uint32_t)(o / Cg * Cg + c);
    }
    p->ic0 = calloc((size_t)Ob, sizeof *p->ic0);
    p->nic = calloc((size_t)Ob, sizeof *p->nic);
    p->wofs = calloc((size_t)Ob, sizeof *p->wofs);
    p->scale = calloc((size_t)(Ob * b), sizeof *p->scale);
    p->shift = calloc((size_t)(Ob * b), sizeof *p->shift);
    if (!p->ic0 || !p->nic || !p->wofs || !p->scale || !p->shift) goto fail;
    int64_t total = 0;
    for (int64_t ob = 0; ob < Ob; ob++) {
        const int64_t olast = (ob * b + b < O ? ob * b + b : O) - 1;
        if (p->depthwise || p->gsub) {
            p->ic0[ob] = ob * b, p->nic[ob] = p->gsub ? Cg : 1, p->wofs[ob] = total, total += p->nic[ob] * KK * b;
            continue;
        }
        const int64_t g0 = ob * b / Og, g1 = olast / Og; /* the groups of the block's outputs */
        p->ic0[ob] = g0 * Cg, p->nic[ob] = (g1 + 1) * Cg - g0 * Cg;
        p->wofs[ob] = total, total += p->nic[ob] * KK * b;
    }
    const size_t wb = ((size_t)total * sizeof(float) + 63) / 64 * 64;
    p->wp = so_big_alloc(wb);
    if (!p->wp) goto fail;
    memset(p->wp, 0, wb);
    for (int64_t o = 0; o < O; o++) {
        const int64_t ob = o / b, g = o / Og;
        for (int64_t cl = 0; cl < Cg; cl++) {
            const int64_t loc = p->depthwise ? 0 : g * Cg + cl - p->ic0[ob];
            for (int64_t t = 0; t < KK; t++)
                p->wp[p->wofs[ob] + (p->gsub ? t * Cg + cl : loc * KK + t) * b + o % b] = w[(o * Cg + cl) * KK + t];
        }
    }
    for (int64_t o = 0; o < O; o++) {
        p->scale[o] = ep && ep->scale ? ep->scale[o] : 1.0f;
        p->shift[o] = ep && ep->shift ? ep->shift[o] : 0.0f;
    }
    if (ep) {
        p->act1 = ep->act1, p->act2 = ep->act2, p->lo1 = ep->lo1, p->hi1 = ep->hi1, p->lo2 = ep->lo2, p->hi2 = ep->hi2;
        p->has_res = ep->has_res;
    }
    return 0;
fail:
    so_nchwc_conv_free(p);
    return -1;
}

void so_nchwc_conv_split(const so_nchwc_conv *p, int64_t N, int T, int obk_max, int64_t px, int64_t psum_floats, so_nchwc_split *s)
{
    const int64_t Lb = p->Ho > 1 ? p->Ho : (p->Wo + px - 1) / px, unit = p->Ho > 1 ? p->Wo : px; /* band units, pixels per unit */
    const int64_t nobg = (p->Ob + obk_max - 1) / obk_max;
    int64_t per = psum_floats / (obk_max * p->b * unit);
    per = per < 1 ? 1 : per > Lb ? Lb : per;
    int64_t nband = (Lb + per - 1) / per;
    if (T > 1) {
        if (N * nobg * nband < 4 * T) nband = (4 * T + N * nobg - 1) / (N * nobg);
        if (nband > Lb) nband = Lb;
        for (int k = 1; k < T && (N * nobg * nband) % T && nband < Lb; k++) nband++; /* whole rounds of T items */
    }
    s->nobg = nobg, s->nband = nband, s->Lb = Lb, s->items = N * nobg * nband;
    s->band_major = T > 1 && p->Ob % nobg != 0;
}

void so_nchwc_pw_split(const so_nchwc_conv *p, int64_t N, int T, int obk_max, int64_t px, int64_t kc, int64_t l2_bytes, so_nchwc_pwsplit *s)
{
    const int64_t Lb = p->Ho > 1 ? p->Ho : (p->Wo + px - 1) / px, f = (int64_t)sizeof(float);
    const int64_t kcb = (kc < p->Cb * p->b ? kc : p->Cb * p->b), in_px = p->Ho > 1 ? p->W : px * p->sw, out_px = p->Ho > 1 ? p->Wo : px;
    int64_t nband = 1, ngs = 1, nobg = (p->Ob + obk_max - 1) / obk_max;
    s->gouter = Lb * in_px * p->Cb * p->b * f <= l2_bytes; /* the whole input in L2: groups outermost, weights read once */
    if (!s->gouter) {
        /* bytes of L2 one band unit holds: its partial sums of every output block and one chunk's input channels of its
           input row (all of the row's lines: a strided row reads every line) or px pixels */
        const int64_t unit = (out_px * p->Ob * p->b + kcb * in_px) * f;
        int64_t per = l2_bytes / unit;
        per = per < 1 ? 1 : per > Lb ? Lb : per;
        nband = (Lb + per - 1) / per;
    }
    if (T > 1 && (N * nband) % T) {
        if (N * nband < 4 * T && nobg >= T) {
            ngs = T; /* few bands: each thread a share of the groups */
            /* the same number of groups per share: nobg in whole rounds of T (groups of fewer blocks, still near-equal)
               where the blocks allow; shares of ceil(nobg / T) and floor(nobg / T) groups gave one of two threads 7 of
               10 blocks (80 channels: 3 groups of 3, 3, 4) or 12 of 20 (160: 5 groups of 4) */
            const int64_t r = (nobg + T - 1) / T * T;
            if (r <= p->Ob) nobg = r;
        } else
            while ((N * nband) % T && nband < Lb) nband++; /* whole rounds of T bands */
    }
    s->nobg = nobg, s->nband = nband, s->Lb = Lb, s->ngs = ngs, s->items = N * nband * ngs;
}

int so_nchwc_pw_on = 1;
int so_nchwc_gb_on = 1;
int64_t so_nchwc_pw_kc = 128, so_nchwc_pw_l2 = 256 * 1024;

int64_t so_nchwc_wino_min_c = 16;
int64_t so_nchwc_pad_max_wo = 32;

int so_nchwc_pad_rule(const so_nchwc_conv *p)
{
    if (p->b != 8 || !so_nchwc_pad_ok(p)) return 0;
    return so_nchwc_gather_ok(p) ? p->O >= SO_NCHWC_GATHER_MIN_O : p->Wo <= so_nchwc_pad_max_wo;
}
int so_nchwc_backend_pin = -1;

/* The weight transform G (g0, g1, g2)^T of F(m x m, 3x3) into r[0 .. m+1]. */
static void gtrans(int m, double g0, double g1, double g2, double *r)
{
    if (m == 4) {
        r[0] = g0 / 4, r[1] = -(g0 + g1 + g2) / 6, r[2] = -(g0 - g1 + g2) / 6;
        r[3] = g0 / 24 + g1 / 12 + g2 / 6, r[4] = g0 / 24 - g1 / 12 + g2 / 6, r[5] = g2;
    } else
        r[0] = g0, r[1] = (g0 + g1 + g2) / 2, r[2] = (g0 - g1 + g2) / 2, r[3] = g2, r[4] = r[5] = 0;
}

int so_nchwc_conv_wino(so_nchwc_conv *p, const float *w, int m)
{
    if ((m != 2 && m != 4) || p->kh != 3 || p->kw != 3 || p->sh != 1 || p->sw != 1 || p->dh != 1 || p->dw != 1 || p->group != 1 || p->wu) return -1;
    const int64_t b = p->b, C = p->C, O = p->O, Ob = p->Ob, Cp = p->Cb * b;
    const int64_t G = SO_NCHWC_WINO_G, nG = (Ob + G - 1) / G;
    const int a = m + 2, P = a * a;
    const size_t nu = (size_t)(P * nG * G * Cp * b), bytes = (nu * sizeof(float) + 63) / 64 * 64;
    float *u = aligned_alloc(64, bytes);
    if (!u) return -1;
    memset(u, 0, bytes);
    for (int64_t o = 0; o < O; o++)
        for (int64_t c = 0; c < C; c++) {
            const float *g = w + (o * C + c) * 9;
            double t[6][3], r[6];
            for (int j = 0; j < 3; j++) /* G g, column j */
                gtrans(m, g[j], g[3 + j], g[6 + j], r), t[0][j] = r[0], t[1][j] = r[1], t[2][j] = r[2], t[3][j] = r[3], t[4][j] = r[4], t[5][j] = r[5];
            for (int i = 0; i < a; i++) { /* (G g) G^T, row i */
                gtrans(m, t[i][0], t[i][1], t[i][2], r);
                for (int j = 0; j < a; j++) u[((((i * a + j) * nG + o / b / G) * Cp + c) * G + o / b % G) * b + o % b] = (float)r[j];
            }
        }
    const int64_t nt = ((p->Ho + m - 1) / m) * ((p->Wo + m - 1) / m);
    const int64_t per = P * (Cp + Ob * b); /* scratch floats per tile */
    /* U is read once per chunk. V and M of a chunk within ~512 KB (L2), or as large as U when U is larger (the
       small planes of deep layers: ResNet-50's 28x28 128-channel F(4x4) and 14x14 256-channel F(2x2) now run the
       image as one chunk, U read once instead of 2-3 times; paired isolated timing at 1 thread, Intel Xeon model
       207, load ~4-5: 0.91 and 0.84-0.90 of the 512 KB chunks; 28x28 F(2x2), whose V and M outgrow U 3x, kept
       its chunks), but >= 24 tiles */
    int64_t tc = (1 << 17) / per;
    if (tc < (int64_t)nu / per) tc = (int64_t)nu / per;
    if (tc < 24) tc = 24;
    p->wtc = tc < nt ? tc : nt;
    p->wu = u, p->wm = m;
    return 0;
}

int64_t so_nchwc_wino_scratch(const so_nchwc_conv *p, int T)
{
    if (!p->wu) return 0;
    const int64_t per = so_nchwc_wino_pstride(p->wtc * p->Cb * p->b) + so_nchwc_wino_pstride(p->wtc * p->Ob * p->b);
    return (T > 1 ? T : 1) * (p->wm + 2) * (p->wm + 2) * per;
}

void so_nchwc_conv_free(so_nchwc_conv *p)
{
    free(p->wu);
    free(p->ic0);
    free(p->nic);
    free(p->wofs);
    free(p->wp);
    free(p->scale);
    free(p->shift);
    memset(p, 0, sizeof *p);
}

size_t so_nchwc_packed_bytes(const so_nchwc_conv *p)
{
    if (!p->wp) return 0;
    const int64_t last = p->Ob - 1;
    return sizeof(float) * (size_t)(p->wofs[last] + (p->depthwise ? 1 : p->nic[last]) * p->kh * p->kw * p->b);
}

size_t so_nchwc_wino_bytes(const so_nchwc_conv *p)
{
    if (!p->wu) return 0;
    return sizeof(float) * (size_t)((p->wm + 2) * (p->wm + 2) * ((p->Ob + SO_NCHWC_WINO_G - 1) / SO_NCHWC_WINO_G) * SO_NCHWC_WINO_G * p->Cb * p->b * p->b);
}

size_t so_nchwc_conv_bytes(const so_nchwc_conv *p)
{
    if (!p->wp) return 0;
    return so_nchwc_packed_bytes(p) + sizeof(float) * (size_t)(2 * p->Ob * p->b) + so_nchwc_wino_bytes(p);
}

/* ---------------- executor glue ---------------- */

const so_nchwc_impl *so_nchwc_level(int b, so_isa l)
{
    if (b == 16) return l >= SO_ISA_AVX512 ? &so_nchwc_avx512 : NULL;
    if (b == 8) return l >= SO_ISA_AVX2 ? &so_nchwc_avx2 : &so_nchwc_scalar;
    return NULL;
}

int so_nchwc_block(void)
{
    so_isa l = SO_ISA_SCALAR;
    if (so_isa_current(&l) != SO_OK) l = SO_ISA_SCALAR;
    return l >= SO_ISA_AVX512 ? 16 : 8;
}

/* What one layout step runs: the op, its level, its plans. */
typedef struct nchwc_step {
    so_op op;
    const so_nchwc_impl *L;
    int64_t N, C, HW;   /* reorders, global pool */
    so_nchwc_conv conv;
    so_dnnl_conv *dnnl; /* CONV_NCHWC on oneDNN's primitive instead of conv (see conv_backend) */
    int64_t n_runs, n_fast; /* dnnl with a fast primitive: runs so far, and how many took it (step_path) */
    uint32_t *fx, *fres, *fy; /* dnnl: the run's absmax facts of x, the residual, y (step_facts; NULL: none) */
    int wino;           /* CONV_NCHWC: conv runs as our blocked Winograd (L->wino; conv.wu set) */
    int pad;            /* CONV_NCHWC: our direct conv runs on a zero-bordered copy (L->conv_pad; so_nchwc_pad_rule) */
    so_nchwc_pool pool;
    int res_in;         /* CONV_NCHWC: index of the residual in in[], or -1 */
    int n_cat;          /* CONCAT_NCHWC: inputs and their channels */
    int64_t cat_c[SO_MAX_INTS];
    float *cat_s, *cat_t; /* CONCAT_NCHWC with an absorbed blocked batchnorm (concat_ssa): scale, shift [Cb*b] (owned) */
    int cat_relu;
    int stem;             /* NCHWC_IN that absorbed its conv (so_fuse_stem): conv runs on the plain input (L->stem) */
    int stem_pool;        /* ... and the max pool after it (SO_FUSE_POOL, in pool): L->stem_pool */
    int stem_dw;          /* ... or the depthwise conv after it (SO_FUSE_DW, in dwc): L->stem_dw */
    so_nchwc_conv dwc;
    int nhwc;             /* NCHWC_OUT that absorbed its Transpose (so_fuse_nhwc): L->to_nhwc; op TRANSPOSE: L->from_nhwc */
    float *nhwc_s;        /* op TRANSPOSE: the absorbed Mul's per-channel scale [Cb*b], zero padding lanes (owned), or NULL */
} nchwc_step;

static void step_free(void *priv)
{
    nchwc_step *s = priv;
    if (s->op == SO_OP_CONV_NCHWC || s->stem) so_nchwc_conv_free(&s->conv);
    if (s->stem_dw) so_nchwc_conv_free(&s->dwc);
    so_dnnl_conv_free(s->dnnl);
    free(s->cat_s);
    free(s->cat_t);
    free(s->nhwc_s);
    free(s);
}

static void step_run(void *priv, const so_tensor *in, so_tensor *out, float *scratch)
{
    nchwc_step *s = priv;
    const int T = omp_get_max_threads(); /* the executor's fixed team */
    switch (s->op) {
    case SO_OP_NCHWC_IN:
        if (s->stem_pool) s->L->stem_pool(&s->conv, &s->pool, s->N, in[0].data, out[0].data, scratch, T);
        else if (s->stem_dw) s->L->stem_dw(&s->conv, &s->dwc, s->N, in[0].data, out[0].data, scratch, T);
        else if (s->stem) s->L->stem(&s->conv, s->N, in[0].data, out[0].data, T);
        else s->L->to_blocked(in[0].data, out[0].data, s->N, s->C, s->HW, T);
        break;
    case SO_OP_NCHWC_OUT:
        if (s->nhwc) s->L->to_nhwc(in[0].data, out[0].data, s->N, s->C, s->HW, T);
        else s->L->from_blocked(in[0].data, out[0].data, s->N, s->C, s->HW, T);
        break;
    case SO_OP_TRANSPOSE: /* Transpose (0,3,1,2) [-> Mul] -> NCHWC_IN [-> Add] (so_fuse_nhwc) */
        s->L->from_nhwc(in[0].data, s->nhwc_s, s->res_in >= 0 ? in[s->res_in].data : NULL, out[0].data, s->N, s->C, s->HW, T);
        break;
    case SO_OP_CONV_NCHWC:
        if (s->dnnl) { /* (the executor runs its steps one after another on one thread: plain counters) */
            s->n_fast += so_dnnl_conv_run_known(s->dnnl, in[0].data, out[0].data, s->res_in >= 0 ? in[s->res_in].data : NULL, scratch, s->fx,
                                                s->fres, s->fy);
            s->n_runs++;
            break;
        }
        if (s->wino) {
            s->L->wino(&s->conv, s->N, in[0].data, out[0].data, s->res_in >= 0 ? in[s->res_in].data : NULL, scratch, T);
            break;
        }
        if (s->pad) {
            s->L->conv_pad(&s->conv, s->N, in[0].data, out[0].data, s->res_in >= 0 ? in[s->res_in].data : NULL, scratch, T);
            break;
        }
        s->L->conv(&s->conv, s->N, in[0].data, out[0].data, s->res_in >= 0 ? in[s->res_in].data : NULL, T); break;
    case SO_OP_MAXPOOL_NCHWC:
    case SO_OP_AVGPOOL_NCHWC: s->L->pool(&s->pool, s->N, in[0].data, out[0].data, T); break;
    case SO_OP_GLOBALAVGPOOL_NCHWC: s->L->global_pool(0, s->N, s->C, s->HW, in[0].data, out[0].data, T); break;
    case SO_OP_CONCAT_NCHWC: {
        const float *xs[SO_MAX_INTS];
        for (int k = 0; k < s->n_cat; k++) xs[k] = in[k].data;
        if (s->cat_s) s->L->concat_ssa(s->n_cat, s->cat_c, s->N, s->HW, xs, s->cat_s, s->cat_t, s->cat_relu, out[0].data, T);
        else s->L->concat(s->n_cat, s->cat_c, s->N, s->HW, xs, out[0].data, T);
        break;
    }
    default: break;
    }
}

/* so_fast_kernel.path of a conv on oneDNN with a fast primitive (so_dnnl_conv_has_fast): "fast" when every run so
   far took it, "exact" when none did (oneDNN's primitive up to the Relu / Clip and our pass after it), "fastF/R"
   otherwise; nothing for other steps or before the first run. */
static int step_path(const void *priv, char *buf, size_t n)
{
    const nchwc_step *s = priv;
    if (!s->dnnl || !so_dnnl_conv_has_fast(s->dnnl) || !s->n_runs) return 0;
    if (s->n_fast == s->n_runs) return snprintf(buf, n, "fast");
    if (!s->n_fast) return snprintf(buf, n, "exact");
    return snprintf(buf, n, "fast%lld/%lld", (long long)s->n_fast, (long long)s->n_runs);
}

/* so_fast_kernel.facts of a conv on oneDNN: keeps the facts of x, the residual and y (so_dnnl_conv_run_known). */
static void step_facts(void *priv, uint32_t *const *in, uint32_t *const *out)
{
    nchwc_step *s = priv;
    if (!s->dnnl) return;
    s->fx = in[0], s->fres = s->res_in >= 0 ? in[s->res_in] : NULL, s->fy = out[0];
}

/* The epilogue activation (so_act or SO_EPI_*) of an absorbed activation node, its bounds (HardSigmoid: alpha, beta). */
static int act_of(const so_node *un, float *lo, float *hi)
{
    *lo = un->attr->clip_min, *hi = un->attr->clip_max;
    switch (un->op) {
    case SO_OP_RELU: return SO_ACT_RELU;
    case SO_OP_CLIP: return SO_ACT_CLIP;
    case SO_OP_SIGMOID: return SO_ACT_SIGMOID;
    case SO_OP_TANH: return SO_ACT_TANH;
    case SO_OP_HARDSWISH: return SO_EPI_HARDSWISH;
    case SO_OP_HARDSIGMOID: *lo = un->attr->alpha, *hi = un->attr->beta; return SO_EPI_HARDSIGMOID;
    default: return SO_ACT_NONE;
    }
}

/* The epilogue chain after CONV_NCHWC node i: act1 (its own or a following activation), a residual Add of a
   same-shape tensor, act2. Records the absorbed nodes in k. */
static void conv_chain(const so_fast_ctx *c, int32_t i, so_epi *ep, so_fast_kernel *k)
{
    const so_graph *g = c->g;
    const so_node *h = &g->nodes[i];
    ep->act1 = h->attr->act, ep->lo1 = h->attr->clip_min, ep->hi1 = h->attr->clip_max;
    /* the decision: kernels/fuse.c, a chain without per-channel steps (no channel axis in a blocked value) */
    so_fuse f;
    so_fuse_chain(g, c->user, c->absorbed, i, -1, 0, ep->act1 != 0, &f);
    for (int s = 0; s < f.n && k->n_fused < SO_FAST_MAX_FUSED; s++) {
        const so_node *un = &g->nodes[f.node[s]];
        if (f.step[s] == SO_FUSE_ACT1) ep->act1 = act_of(un, &ep->lo1, &ep->hi1);
        else if (f.step[s] == SO_FUSE_ACT2) ep->act2 = act_of(un, &ep->lo2, &ep->hi2);
        else if (f.step[s] == SO_FUSE_SILU1) ep->act1 = SO_EPI_SILU;
        else if (f.step[s] == SO_FUSE_SILU2) ep->act2 = SO_EPI_SILU;
        else { /* SO_FUSE_RESIDUAL */
            k->has_extra = 1, k->extra_in = f.extra, ep->has_res = 1;
            ep->act2 = un->attr->act, ep->lo2 = un->attr->clip_min, ep->hi2 = un->attr->clip_max;
        }
        k->fused[k->n_fused++] = f.node[s];
    }
}

/* The blocked per-channel weight [1, Cb, 1, 1, b] that is node u's other input than `from` (constant), or NULL. */
static const float *chan_weight(const so_graph *g, const so_node *u, int32_t from, const so_shape *blk)
{
    if (u->n_in != 2 || u->n_out != 1) return NULL;
    const so_edge w = u->in[0].node == from ? u->in[1] : u->in[0];
    if ((u->in[0].node == from) == (u->in[1].node == from) || w.node < 0 || g->nodes[w.node].op != SO_OP_WEIGHT) return NULL;
    const so_shape *ws = &g->nodes[w.node].out[0];
    if (ws->rank != 5 || ws->dim[0] != 1 || ws->dim[1] != blk->dim[1] || ws->dim[2] != 1 || ws->dim[3] != 1 || ws->dim[4] != blk->dim[4] ||
        ws->dtype != SO_F32)
        return NULL;
    return g->model->weights[g->nodes[w.node].ref].data;
}

/* CONCAT_NCHWC i followed by the blocked batchnorm the layout pass writes (search/layout.c blocked_bn: Mul by a
   per-channel weight, Add of one) and optionally a Relu, each the only user of the one before (DenseNet's
   pre-activation norm1/relu1 on every concatenation): the concat absorbs them (concat_ssa) when every input but the
   last has whole blocks. One pass over the data instead of four. */
static void concat_chain(const so_fast_ctx *c, int32_t i, nchwc_step *s, so_fast_kernel *k)
{
    const so_graph *g = c->g;
    const so_shape *o = &g->nodes[i].out[0];
    if (!c->user || !s->L->concat_ssa) return;
    for (int q = 0; q + 1 < s->n_cat; q++)
        if (s->cat_c[q] % s->L->b) return;
    const int32_t mu = c->user[i];
    if (mu < 0 || (c->absorbed && c->absorbed[mu]) || g->nodes[mu].op != SO_OP_MUL) return;
    const float *S = chan_weight(g, &g->nodes[mu], i, o);
    const int32_t ad = S ? c->user[mu] : -1;
    if (ad < 0 || (c->absorbed && c->absorbed[ad]) || g->nodes[ad].op != SO_OP_ADD) return;
    const float *Tw = chan_weight(g, &g->nodes[ad], mu, o);
    if (!Tw || !so_shape_eq(&g->nodes[mu].out[0], o) || !so_shape_eq(&g->nodes[ad].out[0], o)) return;
    const size_t nb = (size_t)(o->dim[1] * o->dim[4]);
    s->cat_s = malloc(nb * sizeof(float)), s->cat_t = malloc(nb * sizeof(float));
    if (!s->cat_s || !s->cat_t) {
        free(s->cat_s), free(s->cat_t);
        s->cat_s = s->cat_t = NULL;
        return;
    }
    memcpy(s->cat_s, S, nb * sizeof(float)), memcpy(s->cat_t, Tw, nb * sizeof(float));
    k->fused[k->n_fused++] = mu;
    k->fused[k->n_fused++] = ad;
    const int32_t re = c->user[ad];
    if (re >= 0 && !(c->absorbed && c->absorbed[re]) && g->nodes[re].op == SO_OP_RELU && so_shape_eq(&g->nodes[re].out[0], o))
        s->cat_relu = 1, k->fused[k->n_fused++] = re;
}

/* The conv backend, measured per node at plan time: our kernel (s->conv, planned), our blocked Winograd
   F(4x4, 3x3) and F(2x2, 3x3) for 3x3 stride-1 group-1 convs with >= so_nchwc_wino_min_c channels (every level), and at the avx512
   (b = 16) and avx2 (b = 8) levels with oneDNN loaded oneDNN's direct primitive and its Winograd (none at AVX2), each run on zero
   inputs in paired interleaved rounds after a warm-up (pick_rounds; with SUPEROPT_NCHWC_COLD=1 the weights of convs with
   NCHWC_COLD_BYTES or more evicted first) at the executor's thread count; the fastest is kept (s->dnnl set and s->conv
   freed when it is oneDNN's; s->wino set and conv.wu kept when it is our Winograd). The choice is recorded per
   configuration for the process (so_nchwc_choice_*), so every node of one shape, and the cost model's timing of it,
   agree; the cost cache saves the record and a later process on that cache takes it without timing (search/cost.c).
   Why measured and not a rule: oneDNN's Winograd is 1.4-2.6x its direct conv on most 3x3 shapes but 0.6x
   on GoogLeNet's 96->208 at 14x14 and 0.3x on Inception-v3's 32->64 at 147x147 (kernels/README.md). */

/* The recorded choices: configuration key (conv_backend's key hashed) -> pick (0 ours, 1 oneDNN direct, 2 oneDNN
   Winograd, 3 our Winograd F(4x4, 3x3), 4 our F(2x2, 3x3)); grown as needed. */
typedef struct conv_choice {
    uint64_t key;
    int pick;
} conv_choice;
static conv_choice *choices;
static size_t n_choices, cap_choices;
static pthread_mutex_t choices_mu = PTHREAD_MUTEX_INITIALIZER;

double (*so_nchwc_time_hook)(void *ctx, int cand, int64_t seq, double ms);
void *so_nchwc_time_ctx;
static int64_t n_timings; /* timed candidate runs, all convs (so_nchwc_timings) */

static int choice_find(uint64_t key) /* under choices_mu */
{
    for (size_t j = 0; j < n_choices; j++)
        if (choices[j].key == key) return choices[j].pick;
    return -1;
}

int so_nchwc_choice_get(uint64_t key)
{
    pthread_mutex_lock(&choices_mu);
    const int p = choice_find(key);
    pthread_mutex_unlock(&choices_mu);
    return p;
}

int so_nchwc_choice_put(uint64_t key, int pick)
{
    if (pick < 0 || pick >= SO_NCHWC_PICKS) return 0;
    int added = 0;
    pthread_mutex_lock(&choices_mu);
    if (choice_find(key) < 0) {
        if (n_choices == cap_choices) {
            const size_t nc = cap_choices ? 2 * cap_choices : 256;
            conv_choice *g = realloc(choices, nc * sizeof *g);
            if (g) choices = g, cap_choices = nc;
        }
        if (n_choices < cap_choices) choices[n_choices++] = (conv_choice){key, pick}, added = 1;
    }
    pthread_mutex_unlock(&choices_mu);
    return added;
}

size_t so_nchwc_choice_list(uint64_t *keys, int *picks, size_t cap)
{
    pthread_mutex_lock(&choices_mu);
    const size_t n = n_choices;
    for (size_t j = 0; j < n && j < cap; j++) keys[j] = choices[j].key, picks[j] = choices[j].pick;
    pthread_mutex_unlock(&choices_mu);
    return n;
}

void so_nchwc_choice_clear(void)
{
    pthread_mutex_lock(&choices_mu);
    n_choices = 0;
    pthread_mutex_unlock(&choices_mu);
}

int64_t so_nchwc_timings(void)
{
    pthread_mutex_lock(&choices_mu);
    const int64_t n = n_timings;
    pthread_mutex_unlock(&choices_mu);
    return n;
}

/* A candidate's time in ms: at one thread the calling thread's CPU time (so_cpu_now: a descheduled thread does not
   count, the machine is shared); with more, the wall time of the whole parallel call (so_now): the caller's CPU time
   saw only its own share, and how long it spun waiting for the others depended on where the other processes ran, so
   two processes timed different winners (session 23, bench/steps_threads.sh). */
static double now_ms(int T) { return (T > 1 ? so_now() : so_cpu_now()) * 1e3; }

/* With SUPEROPT_NCHWC_COLD=1, candidates of a conv whose weights take at least this many bytes are timed with
   their weights evicted from every cache level first (cold), as they run inside a large network: such weights do
   not stay in the core's L2, and a network of them (ResNet-50: ~100 MB) streams them from memory on every run; hot
   timing favours the candidates that read more weights (Winograd's U is 1.8x / 4x the direct weights for F(2x2) /
   F(4x4)). Off by default: under load it flipped more near-tie choices from one load to the next than hot timing
   did, and no in-model gain was shown (kernels/README.md). */
#define NCHWC_COLD_BYTES (1 << 20)
/* conv_backend's rounds (session 24, as the layout step's paired re-timing, search/cost.c so_cost_paired_ratio): one
   warm-up round, then at least NCHWC_PICK_MIN_ROUNDS timed rounds, each running every candidate once, the order
   reversed every other round (a b c, c b a, ...: a trend in the machine's speed weighs on all alike); more, up to
   NCHWC_PICK_MAX_ROUNDS, while the rounds disagree on the fastest candidate or the two fastest (each at its fastest
   over the rounds) are within NCHWC_PICK_CLOSE of each other. Each candidate counts at its fastest (load only adds
   time). Before: 5 timed rounds in a fixed order, the fastest minimum kept (15 timed runs were tried in session 9: on
   the shared machine 4 loads of ResNet-50 still disagreed on 3 near-tie configurations); under load a burst covering
   one candidate's five timings flipped a choice (Inception-v3's Conv2d_2b to oneDNN at 15.9 ms where our Winograd ran
   10.4-11 ms, session 23). */
#define NCHWC_PICK_MIN_ROUNDS 3
#define NCHWC_PICK_MAX_ROUNDS 7
#define NCHWC_PICK_CLOSE 0.05
static int cold_on;
/* Near-tie margin of conv_backend, percent (SUPEROPT_NCHWC_TIE; 0: off): of the candidates of a conv with weights of at
   least NCHWC_COLD_BYTES timed within this much of the fastest, the one that reads the fewest weight bytes is kept. Such
   weights stream from memory inside a network (ResNet-50: ~100 MB per run), which the hot timing does not see, and two
   threads share the memory bandwidth: e.g. ResNet-50's 14x14 256-channel 3x3 times F(4x4) and F(2x2) alike hot (U 9.4 vs
   4.2 MB) while F(2x2) was ~7 % faster in the model (session 12, noisy). It also settles near-ties the same way from one
   load to the next instead of by timing noise. Off by default: under load (session 13) the picks of ResNet-50 still
   changed from load to load with 5 (timing noise above 5 %), and no in-model A/B has shown a gain yet. */
static int tie_pct;
static unsigned skip_mask; /* bit c: candidate c of conv_backend never tried (SUPEROPT_NCHWC_SKIP, A/B measurements) */

/* SUPEROPT_NCHWC_WINO=0 never tries our blocked Winograd, SUPEROPT_NCHWC_PW=0 runs 1x1s on the direct conv's tile
   (so_nchwc_pw_on), SUPEROPT_NCHWC_GB=0 block-diagonal grouped convs on the direct conv / conv_pad (so_nchwc_gb_on), SUPEROPT_NCHWC_COLD=1 times big convs cold, SUPEROPT_NCHWC_TIE=P
   sets tie_pct,
   SUPEROPT_NCHWC_SKIP=DIGITS never tries those candidates of conv_backend (1..4, e.g. "2": no oneDNN Winograd) (A/B
   measurements). */
static void wino_env(void)
{
    const char *e = getenv("SUPEROPT_NCHWC_WINO");
    if (e && !strcmp(e, "0")) so_nchwc_wino_min_c = -1;
    e = getenv("SUPEROPT_NCHWC_PW");
    if (e && !strcmp(e, "0")) so_nchwc_pw_on = 0;
    e = getenv("SUPEROPT_NCHWC_GB");
    if (e && !strcmp(e, "0")) so_nchwc_gb_on = 0;
    e = getenv("SUPEROPT_NCHWC_COLD");
    cold_on = e && !strcmp(e, "1");
    e = getenv("SUPEROPT_NCHWC_TIE");
    if (e && *e >= '0' && *e <= '9') tie_pct = atoi(e);
    for (e = getenv("SUPEROPT_NCHWC_SKIP"); e && *e; e++)
        if (*e >= '1' && *e <= '4') skip_mask |= 1u << (*e - '0');
}

static pthread_once_t env_once = PTHREAD_ONCE_INIT;

/* Evicts n bytes at p from every cache level (clflush; nothing on an ISA without it). */
static void evict(const void *p, size_t n)
{
#if defined(__x86_64__) || defined(__i386__)
    const char *c = p;
    for (size_t i = 0; i < n; i += 64) _mm_clflush(c + i);
    _mm_mfence();
#else
    (void)p, (void)n;
#endif
}

/* The weights candidate c of conv_backend reads (q: ours and F(4x4), q2: F(2x2), cand: oneDNN's) and their bytes in *nb;
   NULL (and *nb = 0) when c was not planned. */
static const void *cand_weights(int c, const so_nchwc_conv *q, const so_nchwc_conv *q2, so_dnnl_conv *const *cand, size_t *nb)
{
    *nb = 0;
    if (c == 1 || c == 2) return cand[c] ? so_dnnl_conv_weights(cand[c], nb) : NULL;
    const so_nchwc_conv *w = c == 4 ? q2 : q;
    *nb = c == 0 ? so_nchwc_packed_bytes(w) : so_nchwc_wino_bytes(w);
    return c == 0 ? (const void *)w->wp : *nb ? (const void *)w->wu : NULL;
}

/* The candidate with the lowest t[c] among those in mask (-1: none). */
static int fastest_of(const double *t, unsigned mask)
{
    int w = -1;
    for (int c = 0; c < SO_NCHWC_PICKS; c++)
        if ((mask >> c & 1) && (w < 0 || t[c] < t[w])) w = c;
    return w;
}

/* What conv_backend times: the step, our plans (q; q2 for F(2x2)), oneDNN's (cand), zero buffers, threads, cold. */
typedef struct pick_ctx {
    nchwc_step *s;
    so_nchwc_conv *q, *q2;
    so_dnnl_conv **cand;
    float *xb, *yb, *rb, *sb;
    int T, cold;
} pick_ctx;

/* Runs candidate c once. */
static void run_cand(const pick_ctx *p, int c)
{
    nchwc_step *s = p->s;
    const int64_t N = s->N;
    if (c == 4) s->L->wino(p->q2, N, p->xb, p->yb, p->rb, p->sb, p->T);
    else if (c == 3) s->L->wino(p->q, N, p->xb, p->yb, p->rb, p->sb, p->T);
    else if (c) { /* zero inputs: their absmax facts are 0 (no NaN scan, as in a model run whose facts are known) */
        uint32_t xm = 0, rm = 0;
        so_dnnl_conv_run_known(p->cand[c], p->xb, p->yb, p->rb, p->sb, &xm, &rm, NULL);
    } else if (s->pad) s->L->conv_pad(p->q, N, p->xb, p->yb, p->rb, p->sb, p->T);
    else s->L->conv(p->q, N, p->xb, p->yb, p->rb, p->T);
}

/* Times the candidates in mask (bit c: candidate c; run_cand runs one) in paired interleaved rounds (see
   NCHWC_PICK_MIN_ROUNDS) and returns each one's fastest in best[] (1e30 for the others). */
static void pick_rounds(const pick_ctx *p, unsigned mask, double *best)
{
    int order[SO_NCHWC_PICKS], n = 0, won[NCHWC_PICK_MAX_ROUNDS];
    for (int c = 0; c < SO_NCHWC_PICKS; c++) {
        best[c] = 1e30;
        if (mask >> c & 1) order[n++] = c;
    }
    for (int k = 0; k < n; k++) run_cand(p, order[k]); /* warm-up: packing, page faults, oneDNN's first call */
    for (int r = 0; r < NCHWC_PICK_MAX_ROUNDS; r++) {
        if (r >= NCHWC_PICK_MIN_ROUNDS) { /* settled: every round's fastest is the overall fastest, the runner-up clear */
            const int w = fastest_of(best, mask), u = fastest_of(best, mask & ~(1u << w));
            int agree = 1;
            for (int j = 0; j < r; j++) agree &= won[j] == w;
            if (agree && (u < 0 || best[u] > best[w] * (1 + NCHWC_PICK_CLOSE))) break;
        }
        double t[SO_NCHWC_PICKS];
        for (int k = 0; k < n; k++) {
            const int c = order[r % 2 ? n - 1 - k : k];
            if (p->cold) {
                size_t nb;
                const void *wb = cand_weights(c, p->q, p->q2, p->cand, &nb);
                if (wb) evict(wb, nb);
            }
            const double t0 = now_ms(p->T);
            run_cand(p, c);
            t[c] = now_ms(p->T) - t0;
            pthread_mutex_lock(&choices_mu);
            const int64_t seq = n_timings++;
            pthread_mutex_unlock(&choices_mu);
            if (so_nchwc_time_hook) t[c] = so_nchwc_time_hook(so_nchwc_time_ctx, c, seq, t[c]);
            if (t[c] < best[c]) best[c] = t[c];
        }
        won[r] = fastest_of(t, mask);
    }
}

static void conv_backend(nchwc_step *s, const so_shape *x, const so_shape *o, const so_attr *a, const float *wd, const so_epi *ep)
{
    so_nchwc_conv *q = &s->conv;
    /* oneDNN at the avx512 (nChw16c) and avx2 (nChw8c) levels, not the portable one; oneDNN 2.6 has only reference
       code for groups of fewer than 16 channels (gsub): ours runs them */
    const int dnnl_ok = (s->L->b == 16 || s->L == &so_nchwc_avx2) && so_fast_use_onednn && !q->depthwise && !q->gsub && so_dnnl_lib();
    pthread_once(&env_once, wino_env);
    const int wino_ok = s->L->wino && q->kh == 3 && q->kw == 3 && q->sh == 1 && q->sw == 1 && q->dh == 1 && q->dw == 1 && q->group == 1 &&
                        so_nchwc_wino_min_c >= 0 && q->C >= so_nchwc_wino_min_c && q->O >= so_nchwc_wino_min_c;
    if (!dnnl_ok && !wino_ok) return;
    const int64_t N = s->N, H = x->dim[2], W = x->dim[3], Ho = o->dim[2], Wo = o->dim[3];
    const int T = omp_get_max_threads();
    /* the configuration, the level and candidate set, and the knobs that change what a candidate runs or which wins
       (A/B runs must not take another setting's recorded choice); the last word is the kernels' version: a change that
       moves a candidate's speed (session 25: the Winograd scratch layout) takes a new one, so that no choice timed on
       the old kernels is reused */
    const int64_t kv[23] = {N, q->C, H, W, q->O, Ho, Wo, q->kh, q->kw, q->sh, q->sw, a->pad[0], a->pad[1], a->pad[2], a->pad[3], q->dh,
                            q->dw, q->group, (int64_t)ep->act1 << 16 | ep->act2 << 8 | ep->has_res << 1 | !!ep->shift, T,
                            s->L->b << 2 | dnnl_ok << 1 | wino_ok, (int64_t)skip_mask << 24 | tie_pct << 8 | cold_on << 1 | so_nchwc_pw_on,
                            0x5EC25};
    uint64_t key = 0x9E3779B97F4A7C15ull;
    for (int j = 0; j < 23; j++) key = so_mix64(key ^ (uint64_t)kv[j]);
    int pick = so_nchwc_choice_get(key);
    if (so_nchwc_backend_pin == 1 && dnnl_ok) {
        so_dnnl_conv *d = so_dnnl_conv_plan(N, q->C, H, W, q->O, Ho, Wo, q->kh, q->kw, q->sh, q->sw, a->pad[0], a->pad[1], a->pad[2],
                                            a->pad[3], q->dh, q->dw, q->group, wd, ep, 0, s->L->b);
        if (d) {
            s->dnnl = d, so_nchwc_conv_free(&s->conv);
            return;
        }
    }
    if (pick == 0) return;
    so_dnnl_conv *cand[3] = {NULL, NULL, NULL};
    /* alg 2 asks oneDNN for Winograd: only its AVX-512 kernels have one (nChw16c), for a 3x3 of stride and dilation 1,
       group 1 (kernels/dnnl.c); elsewhere (every conv at b = 8) oneDNN planned the direct primitive a second time, with
       its weight reorder, and it was freed below: skipped (session 23) */
    const int dnnl_wino = s->L->b == 16 && q->kh == 3 && q->kw == 3 && q->sh == 1 && q->sw == 1 && q->dh == 1 && q->dw == 1 && q->group == 1;
    for (int alg = 1; alg <= 1 + dnnl_wino && dnnl_ok; alg++)
        if (pick < 0 || pick == alg)
            cand[alg] = so_dnnl_conv_plan(N, q->C, H, W, q->O, Ho, Wo, q->kh, q->kw, q->sh, q->sw, a->pad[0], a->pad[1], a->pad[2],
                                          a->pad[3], q->dh, q->dw, q->group, wd, ep, alg == 2, s->L->b);
    if (cand[2] && !strstr(so_dnnl_conv_impl(cand[2]), "wino")) so_dnnl_conv_free(cand[2]), cand[2] = NULL;
    /* our F(4x4, 3x3) on q itself; F(2x2, 3x3) on a shallow copy sharing q's packed weights and epilogue (only q2.wu
       is its own) */
    const int have_wino = wino_ok && (pick < 0 || pick == 3) && so_nchwc_conv_wino(q, wd, 4) == 0;
    so_nchwc_conv q2 = *q;
    q2.wu = NULL;
    const int have_wino2 = wino_ok && (pick < 0 || pick == 4) && so_nchwc_conv_wino(&q2, wd, 2) == 0;
    if (pick < 0) {
        const size_t nx = (size_t)so_nchwc_numel(s->L->b, N, q->C, H * W), ny = (size_t)so_nchwc_numel(s->L->b, N, q->O, Ho * Wo);
        size_t ns = 64;
        if (s->pad && (size_t)so_nchwc_pad_scratch(q) * sizeof(float) > ns) ns = (size_t)so_nchwc_pad_scratch(q) * sizeof(float);
        for (int c = 1; c < 3; c++)
            if (cand[c] && so_dnnl_conv_scratch_bytes(cand[c]) > ns) ns = so_dnnl_conv_scratch_bytes(cand[c]);
        if (have_wino && (size_t)so_nchwc_wino_scratch(q, T) * sizeof(float) > ns) ns = (size_t)so_nchwc_wino_scratch(q, T) * sizeof(float);
        if (have_wino2 && (size_t)so_nchwc_wino_scratch(&q2, T) * sizeof(float) > ns) ns = (size_t)so_nchwc_wino_scratch(&q2, T) * sizeof(float);
        float *xb = aligned_alloc(64, (nx * 4 + 63) / 64 * 64), *yb = aligned_alloc(64, (ny * 4 + 63) / 64 * 64),
              *rb = aligned_alloc(64, (ny * 4 + 63) / 64 * 64), *sb = aligned_alloc(64, (ns + 63) / 64 * 64);
        double best[SO_NCHWC_PICKS] = {1e30, 1e30, 1e30, 1e30, 1e30};
        const int big = (size_t)(q->O * (q->C / q->group) * q->kh * q->kw) * sizeof(float) >= NCHWC_COLD_BYTES;
        if (xb && yb && rb && sb) {
            memset(xb, 0, nx * 4), memset(rb, 0, ny * 4);
            unsigned mask = 1;
            for (int c = 1; c < SO_NCHWC_PICKS; c++)
                if (!(((c == 1 || c == 2) && !cand[c]) || (c == 3 && !have_wino) || (c == 4 && !have_wino2) || (skip_mask >> c & 1))) mask |= 1u << c;
            const pick_ctx pc = {s, q, &q2, cand, xb, yb, rb, sb, T, cold_on && big};
            pick_rounds(&pc, mask, best);
        }
        free(xb), free(yb), free(rb), free(sb);
        pick = 0;
        for (int c = 1; c < SO_NCHWC_PICKS; c++)
            if (best[c] < best[pick]) pick = c;
        if (tie_pct > 0 && big) { /* near-ties: the candidate that reads the fewest weight bytes */
            size_t nb, least;
            cand_weights(pick, q, &q2, cand, &least);
            const double lim = best[pick] * (1 + tie_pct / 100.0);
            for (int c = 0; c < SO_NCHWC_PICKS; c++)
                if (best[c] <= lim && cand_weights(c, q, &q2, cand, &nb) && (nb < least || (nb == least && best[c] < best[pick]))) pick = c, least = nb;
        }
        /* a choice recorded meanwhile by another thread (two plans of one configuration at once) is not replaced:
           this plan, as every later one, takes the first (every candidate is planned here) */
        if (!so_nchwc_choice_put(key, pick)) {
            const int first = so_nchwc_choice_get(key);
            if (first >= 0) pick = first;
        }
    }
    for (int c = 1; c < 3; c++)
        if (c != pick) so_dnnl_conv_free(cand[c]);
    if (pick == 4 && have_wino2) {
        free(q->wu);
        q->wu = q2.wu, q->wm = q2.wm, q->wtc = q2.wtc;
        s->wino = 1;
        return;
    }
    free(q2.wu);
    if (pick == 3 && have_wino) {
        s->wino = 1;
        return;
    }
    free(q->wu), q->wu = NULL;
    if (pick && pick < 3 && cand[pick]) s->dnnl = cand[pick], so_nchwc_conv_free(&s->conv);
}

/* Kernel rows [*lo, *hi) that read the input for some output row (taps outside only ever read padding). */
static void used_taps(int64_t k, int64_t s, int64_t p, int64_t d, int64_t H, int64_t Ho, int64_t *lo, int64_t *hi)
{
    *lo = k, *hi = 0;
    for (int64_t t = 0; t < k; t++)
        for (int64_t oh = 0; oh < Ho; oh++) {
            const int64_t ih = oh * s - p + t * d;
            if (ih >= 0 && ih < H) {
                if (t < *lo) *lo = t;
                if (t + 1 > *hi) *hi = t + 1;
                break;
            }
        }
}

/* A blocked conv whose outer kernel rows or columns only ever read padding (the search's 1x1 -> 3x3 enlargement
   of MobileNet-v3's squeeze-excite convs on 1x1 planes: 9x the packed weights, 8 of 9 read for nothing): the
   weights of the used taps (malloc'd, the caller frees), *kh / *kw and at's pads for them; NULL when every tap is
   used. Same arithmetic: the dropped taps add nothing in the reference either. */
static float *trim_taps(so_attr *at, const so_shape *x, const so_shape *o, const so_shape *w, const float *wd, int64_t *kh, int64_t *kw)
{
    const int64_t sh = at->stride[0] > 0 ? at->stride[0] : 1, sw = at->stride[1] > 0 ? at->stride[1] : 1;
    const int64_t dh = at->dilation[0] > 0 ? at->dilation[0] : 1, dw = at->dilation[1] > 0 ? at->dilation[1] : 1;
    const int64_t H = x->dim[2], W = x->dim[3], Ho = o->dim[2], Wo = o->dim[3];
    int64_t r0, r1, c0, c1;
    used_taps(*kh, sh, at->pad[0], dh, H, Ho, &r0, &r1);
    used_taps(*kw, sw, at->pad[1], dw, W, Wo, &c0, &c1);
    if (r0 >= r1 || c0 >= c1 || (r1 - r0 == *kh && c1 - c0 == *kw)) return NULL;
    const int64_t nkh = r1 - r0, nkw = c1 - c0, pt = at->pad[0] - r0 * dh, pl = at->pad[1] - c0 * dw;
    const int64_t pb = (Ho - 1) * sh + (nkh - 1) * dh + 1 - H - pt, pr = (Wo - 1) * sw + (nkw - 1) * dw + 1 - W - pl;
    if (pt < 0 || pl < 0 || pb < 0 || pr < 0) return NULL;
    const int64_t OC = w->dim[0] * w->dim[1];
    float *wt = malloc(sizeof *wt * (size_t)(OC * nkh * nkw));
    if (!wt) return NULL;
    for (int64_t q = 0; q < OC; q++)
        for (int64_t i = 0; i < nkh; i++)
            for (int64_t j = 0; j < nkw; j++) wt[(q * nkh + i) * nkw + j] = wd[(q * *kh + i + r0) * *kw + j + c0];
    at->pad[0] = (int32_t)pt, at->pad[1] = (int32_t)pl, at->pad[2] = (int32_t)pb, at->pad[3] = (int32_t)pr;
    *kh = nkh, *kw = nkw;
    return wt;
}

/* Plans CONV_NCHWC node ci (input shape x: blocked, or the plain image of a stem) into s->conv with its epilogue
   chain (recorded in k), and, when backend, the measured choice of oneDNN / Winograd (conv_backend; a stem has
   only ours). Returns 0, 1 when the weights are computed at run time (nothing planned), -1 when memory ran out. */
static int plan_conv(const so_fast_ctx *c, int32_t ci, const so_shape *x, nchwc_step *s, so_fast_kernel *k, int backend)
{
    const so_graph *g = c->g;
    const so_node *n = &g->nodes[ci];
    const so_shape *o = &n->out[0];
    const so_attr *a = n->attr;
    const so_node *wn = &g->nodes[n->in[1].node];
    const so_node *bn = n->n_in > 2 && n->in[2].node >= 0 ? &g->nodes[n->in[2].node] : NULL;
    if (wn->op != SO_OP_WEIGHT || !g->model->weights[wn->ref].data || (bn && bn->op != SO_OP_WEIGHT)) return 1;
    const so_shape *w = &wn->out[0];
    const int64_t grp = a->group > 0 ? a->group : 1;
    so_epi ep = {0};
    ep.shift = bn ? g->model->weights[bn->ref].data : NULL;
    conv_chain(c, ci, &ep, k);
    so_attr at = *a;
    int64_t kh = w->dim[2], kw = w->dim[3];
    float *wt = trim_taps(&at, x, o, w, g->model->weights[wn->ref].data, &kh, &kw);
    const float *wd = wt ? wt : g->model->weights[wn->ref].data;
    if (so_nchwc_conv_plan(&s->conv, s->L->b, w->dim[1] * grp, x->dim[2], x->dim[3], w->dim[0], o->dim[2], o->dim[3], kh, kw,
                           at.stride[0] > 0 ? at.stride[0] : 1, at.stride[1] > 0 ? at.stride[1] : 1, at.pad[0], at.pad[1],
                           at.dilation[0] > 0 ? at.dilation[0] : 1, at.dilation[1] > 0 ? at.dilation[1] : 1, grp, wd, &ep)) {
        free(wt);
        return -1;
    }
    pthread_once(&env_once, wino_env); /* SUPEROPT_NCHWC_GB before the pad rule reads so_nchwc_gb_on */
    s->pad = backend && so_nchwc_pad_rule(&s->conv); /* (a stem runs L->stem) */
    if (backend) conv_backend(s, x, o, &at, wd, &ep);
    free(wt);
    if (s->dnnl || s->wino) s->pad = 0;
    if (k->has_extra) s->res_in = n->n_in;
    k->packed_bytes = s->dnnl ? so_dnnl_conv_bytes(s->dnnl) : so_nchwc_conv_bytes(&s->conv);
    k->scratch_bytes = s->dnnl   ? so_dnnl_conv_scratch_bytes(s->dnnl)
                       : s->wino ? (size_t)so_nchwc_wino_scratch(&s->conv, omp_get_max_threads()) * sizeof(float)
                       : s->pad  ? (size_t)so_nchwc_pad_scratch(&s->conv) * sizeof(float)
                                 : 0;
    k->in1_copied = 1;
    return 0;
}

/* The pool plan of MAXPOOL_NCHWC / AVGPOOL_NCHWC node n (blocked input and output). */
static so_nchwc_pool pool_of(const so_graph *g, const so_node *n)
{
    const so_shape *x = &g->nodes[n->in[0].node].out[n->in[0].slot], *o = &n->out[0];
    const so_attr *a = n->attr;
    const int mx = n->op == SO_OP_MAXPOOL_NCHWC;
    return (so_nchwc_pool){.C = x->dim[1] * x->dim[4], .H = x->dim[2], .W = x->dim[3], .Ho = o->dim[2], .Wo = o->dim[3],
                           .kh = a->kernel[0], .kw = a->kernel[1], .sh = a->stride[0] > 0 ? a->stride[0] : 1,
                           .sw = a->stride[1] > 0 ? a->stride[1] : 1, .pt = a->pad[0], .pl = a->pad[1], .pb = a->pad[2],
                           .pr = a->pad[3], .dh = mx && a->dilation[0] > 0 ? a->dilation[0] : 1,
                           .dw = mx && a->dilation[1] > 0 ? a->dilation[1] : 1, .is_max = mx, .count_include_pad = a->count_include_pad};
}

int64_t so_nchwc_stem_pool_scratch(const so_nchwc_conv *p, const so_nchwc_pool *q, int T) { return (int64_t)T * q->kh * p->Ob * q->W * p->b; }

int64_t so_nchwc_stem_dw_scratch(const so_nchwc_conv *p, const so_nchwc_conv *d, int T)
{
    return (int64_t)T * p->Ob * (d->kh + d->sh) * so_nchwc_stem_dw_width(d->W, d->Wo, d->kw, d->sh, d->pl) * p->b;
}

/* Transpose i heading an SO_FUSE_NHWC kernel (channels-last -> blocked): one from_nhwc step, or k->run NULL. */
static so_status select_from_nhwc(const so_fast_ctx *c, int32_t i, so_fast_kernel *k, so_isa l)
{
    const so_graph *g = c->g;
    const so_node *n = &g->nodes[i];
    so_fuse f;
    if (!so_fuse_nhwc(g, c->user, c->absorbed, i, &f)) return SO_OK;
    const so_shape *x = &g->nodes[n->in[0].node].out[n->in[0].slot];
    int r = 0;
    while (r < f.n && f.step[r] != SO_FUSE_REORDER) r++;
    const so_shape *blk = &g->nodes[f.node[r]].out[0];
    const so_nchwc_impl *L = so_nchwc_level((int)blk->dim[4], l);
    if (!L) return SO_OK;
    nchwc_step *s = calloc(1, sizeof *s);
    if (!s) return SO_OK; /* the unfused kernels run */
    s->op = SO_OP_TRANSPOSE, s->L = L, s->nhwc = 1, s->res_in = -1;
    s->N = x->dim[0], s->C = x->dim[3], s->HW = x->dim[1] * x->dim[2];
    for (int q = 0; q < f.n; q++) {
        if (f.step[q] == SO_FUSE_SCALE) {
            const so_node *mn = &g->nodes[f.node[q]];
            so_edge w;
            so_fuse_other_in(mn, q ? f.node[q - 1] : i, &w);
            const float *wd = so_fuse_weight_f32(g, w);
            const int64_t nw = so_shape_numel(&g->nodes[w.node].out[w.slot]), nb = blk->dim[1] * blk->dim[4];
            s->nhwc_s = calloc((size_t)nb, sizeof(float));
            if (!s->nhwc_s) {
                free(s);
                return SO_OK;
            }
            for (int64_t ch = 0; ch < s->C; ch++) s->nhwc_s[ch] = wd[nw == 1 ? 0 : ch];
        }
        if (f.step[q] == SO_FUSE_RESIDUAL) {
            k->has_extra = 1;
            k->extra_in = f.extra;
            s->res_in = n->n_in;
        }
        k->fused[k->n_fused++] = f.node[q];
    }
    static const char *const names[3] = {"nchwc_in_nhwc_scalar", "nchwc_in_nhwc_avx2", "nchwc_in_nhwc_avx512"};
    k->run = step_run, k->priv = s, k->free_priv = step_free;
    k->name = names[L == &so_nchwc_scalar ? 0 : L == &so_nchwc_avx2 ? 1 : 2];
    return SO_OK;
}

so_status so_nchwc_select(const so_fast_ctx *c, int32_t i, so_fast_kernel *k, so_isa l)
{
    const so_graph *g = c->g;
    const so_node *n = &g->nodes[i];
    if (n->op == SO_OP_TRANSPOSE) return select_from_nhwc(c, i, k, l);
    const so_shape *x = &g->nodes[n->in[0].node].out[n->in[0].slot], *o = &n->out[0];
    const so_shape *blk = n->op == SO_OP_NCHWC_IN ? o : x; /* the blocked side */
    if (blk->rank != 5) return SO_OK;
    const so_nchwc_impl *L = so_nchwc_level((int)blk->dim[4], l);
    if (!L) return SO_OK;
    nchwc_step *s = calloc(1, sizeof *s);
    if (!s) return SO_OK; /* the reference kernel runs */
    s->op = n->op, s->L = L, s->N = x->dim[0], s->res_in = -1;
    const so_attr *a = n->attr;
    switch (n->op) {
    case SO_OP_NCHWC_IN: {
        s->C = x->dim[1], s->HW = x->dim[2] * x->dim[3];
        so_fuse f; /* a stem (kernels/fuse.c): the conv reads the plain image, the blocked copy never exists */
        if (L->stem && so_fuse_stem(g, c->user, c->absorbed, i, &f)) {
            k->fused[k->n_fused++] = f.node[0];
            if (plan_conv(c, f.node[0], x, s, k, 0)) {
                free(s);
                memset(k, 0, sizeof *k);
                return SO_OK;
            }
            s->stem = 1;
            if (f.n > 1 && f.step[f.n - 1] == SO_FUSE_POOL) { /* the max pool after the stem's chain */
                const int32_t pn = f.node[f.n - 1];
                s->pool = pool_of(g, &g->nodes[pn]);
                s->stem_pool = 1;
                k->fused[k->n_fused++] = pn;
                k->scratch_bytes = (size_t)so_nchwc_stem_pool_scratch(&s->conv, &s->pool, omp_get_max_threads()) * sizeof(float);
            }
            int dwi = 1; /* the depthwise conv after the stem's chain (SO_FUSE_DW): planned as its own step would be */
            while (dwi < f.n && f.step[dwi] != SO_FUSE_DW) dwi++;
            if (dwi < f.n) {
                const int32_t dn = f.node[dwi];
                const size_t stem_bytes = k->packed_bytes;
                nchwc_step d = {.op = SO_OP_CONV_NCHWC, .L = L, .N = s->N, .res_in = -1};
                k->fused[k->n_fused++] = dn;
                const int bad = plan_conv(c, dn, &g->nodes[g->nodes[dn].in[0].node].out[g->nodes[dn].in[0].slot], &d, k, 0);
                if (bad || k->has_extra) { /* has_extra: so_fuse_stem took no chain with a residual add */
                    if (!bad) so_nchwc_conv_free(&d.conv);
                    so_nchwc_conv_free(&s->conv);
                    free(s);
                    memset(k, 0, sizeof *k);
                    return SO_OK;
                }
                s->dwc = d.conv, s->stem_dw = 1;
                k->packed_bytes += stem_bytes;
                k->scratch_bytes = (size_t)so_nchwc_stem_dw_scratch(&s->conv, &s->dwc, omp_get_max_threads()) * sizeof(float);
            }
        }
        break;
    }
    case SO_OP_NCHWC_OUT: {
        s->C = o->dim[1], s->HW = o->dim[2] * o->dim[3];
        so_fuse f; /* its Transpose (0,2,3,1) (kernels/fuse.c so_fuse_nhwc): blocked straight to channels-last */
        if (so_fuse_nhwc(g, c->user, c->absorbed, i, &f)) {
            k->fused[k->n_fused++] = f.node[0];
            s->nhwc = 1;
        }
        break;
    }
    case SO_OP_GLOBALAVGPOOL_NCHWC: s->C = x->dim[1] * x->dim[4], s->HW = x->dim[2] * x->dim[3]; break;
    case SO_OP_CONCAT_NCHWC:
        s->n_cat = n->n_in, s->HW = x->dim[2] * x->dim[3];
        for (int q = 0; q < n->n_in; q++) s->cat_c[q] = a->ints[q + 1];
        concat_chain(c, i, s, k);
        break;
    case SO_OP_MAXPOOL_NCHWC:
    case SO_OP_AVGPOOL_NCHWC: s->pool = pool_of(g, n); break;
    case SO_OP_CONV_NCHWC: {
        const int r = plan_conv(c, i, x, s, k, 1);
        if (r) {
            free(s);
            if (r < 0) memset(k, 0, sizeof *k);
            return SO_OK; /* weights computed at run time, or no memory: reference */
        }
        break;
    }
    default: free(s); return SO_OK;
    }
    static const char *const names[][3] = {{"nchwc_in_scalar", "nchwc_in_avx2", "nchwc_in_avx512"},
                                           {"nchwc_out_scalar", "nchwc_out_avx2", "nchwc_out_avx512"},
                                           {"conv_nchwc_scalar", "conv_nchwc_avx2", "conv_nchwc_avx512"},
                                           {"pool_nchwc_scalar", "pool_nchwc_avx2", "pool_nchwc_avx512"},
                                           {"concat_nchwc_scalar", "concat_nchwc_avx2", "concat_nchwc_avx512"},
                                           {"conv_nchwc_onednn", "conv_nchwc_onednn", "conv_nchwc_onednn"},
                                           {"conv_nchwc_onednn_wino", "conv_nchwc_onednn_wino", "conv_nchwc_onednn_wino"},
                                           {"conv_nchwc_wino_scalar", "conv_nchwc_wino_avx2", "conv_nchwc_wino_avx512"},
                                           {"conv_nchwc_stem_scalar", "conv_nchwc_stem_avx2", "conv_nchwc_stem_avx512"},
                                           {"conv_nchwc_wino2_scalar", "conv_nchwc_wino2_avx2", "conv_nchwc_wino2_avx512"},
                                           {"nchwc_out_nhwc_scalar", "nchwc_out_nhwc_avx2", "nchwc_out_nhwc_avx512"},
                                           {"conv_nchwc_pad_scalar", "conv_nchwc_pad_avx2", "conv_nchwc_pad_avx512"}};
    const int li = L == &so_nchwc_scalar ? 0 : L == &so_nchwc_avx2 ? 1 : 2;
    const int oi = s->stem                       ? 8
                   : n->op == SO_OP_NCHWC_IN     ? 0
                   : n->op == SO_OP_NCHWC_OUT    ? (s->nhwc ? 10 : 1)
                   : s->dnnl                     ? 5 + !!strstr(so_dnnl_conv_impl(s->dnnl), "wino")
                   : s->wino                     ? (s->conv.wm == 2 ? 9 : 7) /* F(2x2, 3x3) named apart from F(4x4, 3x3) */
                   : s->pad                      ? 11
                   : n->op == SO_OP_CONV_NCHWC   ? 2
                   : n->op == SO_OP_CONCAT_NCHWC ? 4
                                                 : 3;
    k->run = step_run, k->priv = s, k->free_priv = step_free, k->name = names[oi][li], k->path = step_path;
    if (s->dnnl) k->facts = step_facts;
    return SO_OK;
}
