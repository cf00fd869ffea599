/* chain.c - fusion chains: which single-use successors (BatchNormalization, bias Add, activation, residual Add + activation) a Conv/MatMul/Gemm absorbs, folded into one per-channel epilogue. */
#include "kset_names.h"

#include "chain.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kpriv.h"

/* ---------------- fusion chains ---------------- */

static float *ensure(float **p, int64_t n, float init)
{
    if (!*p) {
        *p = so_xmalloc(sizeof **p * (size_t)(n > 0 ? n : 1));
        for (int64_t j = 0; j < n; j++) (*p)[j] = init;
    }
    return *p;
}

/* The epilogue activation (so_act, or SO_EPI_* of epi.h) of an absorbed activation node and its bounds. */
static int chain_act(const so_node *un, float *lo, float *hi)
{
    *lo = un->attr->clip_min, *hi = un->attr->clip_max;
    if (un->op == SO_OP_HARDSWISH) return SO_EPI_HARDSWISH;
    if (un->op == SO_OP_HARDSIGMOID) {
        *lo = un->attr->alpha, *hi = un->attr->beta;
        return SO_EPI_HARDSIGMOID;
    }
    return act_of_op(un->op);
}

void so_fast_chain_build(const so_fast_ctx *c, int32_t i, int chan_axis, int64_t nch, const float *bias, so_fast_chain *ch)
{
    const so_graph *g = c->g;
    const so_node *h = &g->nodes[i];
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
    /* which users are absorbed is decided once, in kernels/fuse.c (the cost model asks the same) */
    so_fuse f;
    so_fuse_chain(g, c->user, c->absorbed, i, chan_axis, nch, ch->ep.act1 != 0, &f);
    for (int s = 0; s < f.n; s++) {
        int32_t u = f.node[s];
        const so_node *un = &g->nodes[u];
        switch (f.step[s]) {
        case SO_FUSE_BN: {
            const float *sc = weight_f32(g, un->in[1]), *bb = weight_f32(g, un->in[2]), *mean = weight_f32(g, un->in[3]),
                        *var = weight_f32(g, un->in[4]);
            float *S = ensure(&ch->scale, nch, 1.f), *T = ensure(&ch->shift, nch, 0.f);
            for (int64_t k = 0; k < nch; k++) {
                float sv = sc[k] / sqrtf(var[k] + un->attr->epsilon);
                S[k] *= sv;
                T[k] = T[k] * sv + (bb[k] - mean[k] * sv);
            }
            break;
        }
        case SO_FUSE_BIAS: {
            int32_t cur = s ? f.node[s - 1] : i;
            int me = (un->in[0].node == cur && un->in[0].slot == 0) ? 0 : 1;
            so_edge other = un->in[1 - me];
            const float *w = weight_f32(g, other);
            int64_t numel = so_shape_numel(shape_of(g, other));
            float *T = ensure(&ch->shift, nch, 0.f);
            for (int64_t k = 0; k < nch; k++) T[k] += numel == 1 ? w[0] : w[k];
            ch->ep.act1 = un->attr->act;
            ch->ep.lo1 = un->attr->clip_min;
            ch->ep.hi1 = un->attr->clip_max;
            break;
        }
        case SO_FUSE_RESIDUAL:
            ch->has_extra = 1;
            ch->extra = f.extra;
            ch->ep.has_res = 1;
            ch->ep.act2 = un->attr->act;
            ch->ep.lo2 = un->attr->clip_min;
            ch->ep.hi2 = un->attr->clip_max;
            break;
        case SO_FUSE_ACT1: ch->ep.act1 = chain_act(un, &ch->ep.lo1, &ch->ep.hi1); break;
        case SO_FUSE_ACT2: ch->ep.act2 = chain_act(un, &ch->ep.lo2, &ch->ep.hi2); break;
        case SO_FUSE_SILU1: ch->ep.act1 = SO_EPI_SILU; break;
        default: /* SO_FUSE_SILU2 */ ch->ep.act2 = SO_EPI_SILU; break;
        }
        ch->fused[ch->n_fused++] = u;
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
