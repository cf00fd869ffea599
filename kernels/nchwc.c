/* nchwc.c - NCHWc conv planning (weight packing), the scalar element function, and the portable-C level (b = 8) of the blocked kernels. */
#include "nchwc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
static inline vf8 s_nan(vf8 a)
{
    uint32_t m[8];
    for (int i = 0; i < 8; i++) m[i] = a.v[i] != a.v[i] ? 0xffffffffu : 0u;
    return s_ldu32(m);
}

#define NB 8
#define VF vf8
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
#define VNAN(a) s_nan(a)
#define CONV_OBK 1
#define CONV_PX 6 /* conv_row uses tiles of 1..5 and CONV_PX pixels: at least 6 */
#define DW_PX 8
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
    p->depthwise = group > 1 && group == C && O == C;
    const int64_t KK = kh * kw, Cg = C / group, Og = O / group, Ob = p->Ob;
    p->ic0 = calloc((size_t)Ob, sizeof *p->ic0);
    p->nic = calloc((size_t)Ob, sizeof *p->nic);
    p->wofs = calloc((size_t)Ob, sizeof *p->wofs);
    p->scale = calloc((size_t)(Ob * b), sizeof *p->scale);
    p->shift = calloc((size_t)(Ob * b), sizeof *p->shift);
    if (!p->ic0 || !p->nic || !p->wofs || !p->scale || !p->shift) goto fail;
    int64_t total = 0;
    for (int64_t ob = 0; ob < Ob; ob++) {
        const int64_t olast = (ob * b + b < O ? ob * b + b : O) - 1;
        if (p->depthwise) {
            p->ic0[ob] = ob * b, p->nic[ob] = 1, p->wofs[ob] = total, total += KK * b;
            continue;
        }
        const int64_t g0 = ob * b / Og, g1 = olast / Og; /* the groups of the block's outputs */
        p->ic0[ob] = g0 * Cg, p->nic[ob] = (g1 + 1) * Cg - g0 * Cg;
        p->wofs[ob] = total, total += p->nic[ob] * KK * b;
    }
    const size_t wb = ((size_t)total * sizeof(float) + 63) / 64 * 64;
    p->wp = aligned_alloc(64, wb ? wb : 64);
    if (!p->wp) goto fail;
    memset(p->wp, 0, wb);
    for (int64_t o = 0; o < O; o++) {
        const int64_t ob = o / b, g = o / Og;
        for (int64_t cl = 0; cl < Cg; cl++) {
            const int64_t loc = p->depthwise ? 0 : g * Cg + cl - p->ic0[ob];
            for (int64_t t = 0; t < KK; t++) p->wp[p->wofs[ob] + (loc * KK + t) * b + o % b] = w[(o * Cg + cl) * KK + t];
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

void so_nchwc_conv_free(so_nchwc_conv *p)
{
    free(p->ic0);
    free(p->nic);
    free(p->wofs);
    free(p->wp);
    free(p->scale);
    free(p->shift);
    memset(p, 0, sizeof *p);
}

size_t so_nchwc_conv_bytes(const so_nchwc_conv *p)
{
    if (!p->wp) return 0;
    const int64_t Ob = p->Ob, last = Ob - 1;
    const int64_t wfl = p->wofs[last] + (p->depthwise ? 1 : p->nic[last]) * p->kh * p->kw * p->b;
    return sizeof(float) * (size_t)(wfl + 2 * Ob * p->b);
}
