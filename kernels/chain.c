/* chain.c - fusion chains: which single-use successors (BatchNormalization, bias Add, activation, residual Add + activation) a Conv/MatMul/Gemm absorbs, folded into one per-channel epilogue. */
#include "kset_names.h"

#include "chain.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kpriv.h"

/* ---------------- fusion chains ---------------- */

/* Is w (numel nch or 1) varying only along out axis chan_axis of rank-r output? */
static int per_channel(const so_shape *w, int r, int chan_axis, int64_t nch)
{
    if (w->dtype != SO_F32 || w->rank > r) return 0;
    int64_t numel = so_shape_numel(w);
    if (numel == 1) return 1;
    if (numel != nch) return 0;
    for (int k = 0; k < w->rank; k++) {
        int ax = r - w->rank + k;
        if (ax != chan_axis && w->dim[k] != 1) return 0;
    }
    return 1;
}

static float *ensure(float **p, int64_t n, float init)
{
    if (!*p) {
        *p = so_xmalloc(sizeof **p * (size_t)(n > 0 ? n : 1));
        for (int64_t j = 0; j < n; j++) (*p)[j] = init;
    }
    return *p;
}

void so_fast_chain_build(const so_fast_ctx *c, int32_t i, int chan_axis, int64_t nch, const float *bias, so_fast_chain *ch)
{
    const so_graph *g = c->g;
    const so_node *h = &g->nodes[i];
    const so_shape *os = &h->out[0];
    memset(ch, 0, sizeof *ch);
    if (bias) {
        ch->shift = so_xmalloc(sizeof *ch->shift * (size_t)nch);
        memcpy(ch->shift, bias, sizeof *ch->shift * (size_t)nch);
    }
    if (so_ops[h->op].flags & SO_F_ACT) {
        ch->ep.act1 = h->attr->act;
        ch->ep.lo1 = h->attr->clip_min;
        ch->ep.hi1 = h->attr->clip_max;
    }
    /* stage 0: per-channel affine; 1: act1; 2: residual add; 3: act2; 4: done */
    int stage = ch->ep.act1 ? 2 : 0;
    int32_t cur = i;
    while (c->user && ch->n_fused < SO_FAST_MAX_FUSED && stage < 4) {
        int32_t u = c->user[cur];
        if (u < 0 || (c->absorbed && c->absorbed[u])) break;
        const so_node *un = &g->nodes[u];
        if (un->n_out != 1 || !so_shape_eq(&un->out[0], os)) break;
        int ok = 0;
        if (stage == 0 && un->op == SO_OP_BATCHNORM && chan_axis == 1 && os->rank >= 2 && un->in[0].node == cur &&
            un->in[0].slot == 0) {
            const float *sc = weight_f32(g, un->in[1]), *bb = weight_f32(g, un->in[2]), *mean = weight_f32(g, un->in[3]),
                        *var = weight_f32(g, un->in[4]);
            if (sc && bb && mean && var) {
                float *S = ensure(&ch->scale, nch, 1.f), *T = ensure(&ch->shift, nch, 0.f);
                for (int64_t k = 0; k < nch; k++) {
                    float s = sc[k] / sqrtf(var[k] + un->attr->epsilon);
                    S[k] *= s;
                    T[k] = T[k] * s + (bb[k] - mean[k] * s);
                }
                ok = 1;
            }
        } else if (un->op == SO_OP_ADD && stage <= 2) {
            int me = (un->in[0].node == cur && un->in[0].slot == 0) ? 0 : 1;
            so_edge other = un->in[1 - me];
            const so_shape *osh = shape_of(g, other);
            const float *w = weight_f32(g, other);
            if (stage == 0 && w && per_channel(osh, os->rank, chan_axis, nch)) {
                float *T = ensure(&ch->shift, nch, 0.f);
                int64_t numel = so_shape_numel(osh);
                for (int64_t k = 0; k < nch; k++) T[k] += numel == 1 ? w[0] : w[k];
                ch->ep.act1 = un->attr->act;
                ch->ep.lo1 = un->attr->clip_min;
                ch->ep.hi1 = un->attr->clip_max;
                if (ch->ep.act1) stage = 2;
                ok = 1;
            } else if (so_shape_eq(osh, os) && osh->dtype == SO_F32) {
                ch->has_extra = 1;
                ch->extra = other;
                ch->ep.has_res = 1;
                ch->ep.act2 = un->attr->act;
                ch->ep.lo2 = un->attr->clip_min;
                ch->ep.hi2 = un->attr->clip_max;
                stage = ch->ep.act2 ? 4 : 3;
                ok = 1;
            }
        } else if (is_act_op(un->op) && (stage <= 1 || stage == 3)) {
            if (stage <= 1) {
                ch->ep.act1 = act_of_op(un->op);
                ch->ep.lo1 = un->attr->clip_min;
                ch->ep.hi1 = un->attr->clip_max;
                stage = 2;
            } else {
                ch->ep.act2 = act_of_op(un->op);
                ch->ep.lo2 = un->attr->clip_min;
                ch->ep.hi2 = un->attr->clip_max;
                stage = 4;
            }
            ok = 1;
        }
        if (!ok) break;
        ch->fused[ch->n_fused++] = u;
        cur = u;
    }
    ch->ep.scale = ch->scale;
    ch->ep.shift = ch->shift;
}

void so_fast_chain_apply(const so_fast_chain *ch, so_fast_kernel *k)
{
    k->n_fused = ch->n_fused;
    memcpy(k->fused, ch->fused, sizeof k->fused);
    k->has_extra = ch->has_extra;
    k->extra_in = ch->extra;
}
