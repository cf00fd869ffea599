/* fuse.c - the executor's fusion decisions (see fuse.h): epilogue chains (Conv, ConvTranspose, MatMul, Gemm), attention, GELU, pad+pool, stems, channels-last <-> blocked moves. */
#include "fuse.h"

#include <stdlib.h>
#include <string.h>

#include "fast.h"
#include "nchwc.h"

static const so_shape *shape_of(const so_graph *g, so_edge e) { return &g->nodes[e.node].out[e.slot]; }

const float *so_fuse_weight_f32(const so_graph *g, so_edge e)
{
    if (e.node < 0) return NULL;
    const so_node *n = &g->nodes[e.node];
    if (n->op != SO_OP_WEIGHT) return NULL;
    const so_weight *w = &g->model->weights[n->ref];
    return w->shape.dtype == SO_F32 ? w->data : NULL;
}

int so_fuse_scalar_weight(const so_graph *g, so_edge e, float *v)
{
    const float *w = so_fuse_weight_f32(g, e);
    if (!w || so_shape_numel(shape_of(g, e)) != 1) return 0;
    *v = w[0];
    return 1;
}

int so_fuse_other_in(const so_node *nj, int32_t from, so_edge *o)
{
    if (nj->n_in != 2) return 0;
    if (nj->in[0].node == from && nj->in[0].slot == 0) { *o = nj->in[1]; return 1; }
    if (nj->in[1].node == from && nj->in[1].slot == 0) { *o = nj->in[0]; return 1; }
    return 0;
}

/* Byte offset of a Slice's output inside its input when the output is one contiguous run of the
   input (every sliced axis of step 1 or of output size 1, and the run's strides those of a
   contiguous tensor: ShuffleNet's channel halves of a [1, C, H, W] value); -1 otherwise. Such a slice is a
   zero-copy view (exec.c split_in_place) or, where it cannot be, one memcpy (move.c). */
int64_t so_fuse_slice_run(const so_node *n, const so_shape *is)
{
    const so_attr *a = n->attr;
    const so_shape *os = &n->out[0];
    if (!a || os->rank != is->rank || is->rank < 1) return -1;
    int64_t st[SO_MAX_RANK], sst[SO_MAX_RANK], start[SO_MAX_RANK] = {0}, acc = 1;
    for (int d = is->rank - 1; d >= 0; d--) {
        st[d] = sst[d] = acc;
        acc *= is->dim[d];
    }
    for (int q = 0; q + 3 < a->n_ints; q += 4) {
        int ax = (int)a->ints[q];
        if (ax < 0 || ax >= is->rank || a->ints[q + 1] < 0) return -1;
        start[ax] = a->ints[q + 1];
        sst[ax] = st[ax] * a->ints[q + 3];
    }
    int64_t base = 0, want = 1;
    for (int d = is->rank - 1; d >= 0; d--) {
        base += start[d] * st[d];
        if (os->dim[d] == 1) continue;
        if (sst[d] != want) return -1;
        want *= os->dim[d];
    }
    return base * (int64_t)(is->dtype == SO_I64 ? 8 : 4);
}

int so_fuse_per_channel(const so_shape *w, int r, int chan_axis, int64_t nch)
{
    if (chan_axis < 0 || w->dtype != SO_F32 || w->rank > r) return 0;
    int64_t numel = so_shape_numel(w);
    if (numel == 1) return 1;
    if (numel != nch) return 0;
    for (int k = 0; k < w->rank; k++) {
        int ax = r - w->rank + k;
        if (ax != chan_axis && w->dim[k] != 1) return 0;
    }
    return 1;
}

int32_t *so_fuse_users(const so_graph *g, const uint8_t *pinned)
{
    int32_t n = g->n_nodes;
    int32_t *uses = so_xcalloc((size_t)n + 1, sizeof *uses);
    int32_t *user = so_xmalloc(((size_t)n + 1) * sizeof *user);
    for (int32_t i = 0; i < n; i++) {
        const so_node *nd = &g->nodes[i];
        user[i] = -1;
        for (int k = 0; k < nd->n_in; k++)
            if (nd->in[k].node >= 0 && nd->in[k].slot == 0) {
                uses[nd->in[k].node]++;
                user[nd->in[k].node] = i;
            }
    }
    for (int32_t o = 0; o < g->model->n_outputs; o++) uses[g->outputs[o].node] += 2; /* never absorbed */
    if (pinned)
        for (int32_t i = 0; i < n; i++)
            if (pinned[i]) uses[i] += 2;
    /* SiLU pairs: Sigmoid j (one reader m, kept in user[j]) of node p, m = Mul(p, j), p read by j and m only */
    int32_t *silu = so_xmalloc(((size_t)n + 1) * sizeof *silu);
    for (int32_t i = 0; i < n; i++) silu[i] = -1;
    for (int32_t j = 0; j < n; j++) {
        const so_node *sj = &g->nodes[j];
        if (sj->op != SO_OP_SIGMOID || sj->n_out != 1 || uses[j] != 1 || sj->in[0].node < 0 || sj->in[0].slot != 0) continue;
        const int32_t p = sj->in[0].node, m = user[j];
        const so_node *mn = &g->nodes[m];
        if (uses[p] != 2 || g->nodes[p].n_out != 1 || mn->op != SO_OP_MUL || mn->n_in != 2 || mn->in[0].slot || mn->in[1].slot)
            continue;
        if ((mn->in[0].node == p && mn->in[1].node == j) || (mn->in[0].node == j && mn->in[1].node == p)) silu[p] = m;
    }
    for (int32_t i = 0; i < n; i++)
        if (uses[i] != 1 || g->nodes[i].n_out != 1) user[i] = silu[i] >= 0 ? -2 - silu[i] : -1;
    free(silu);
    free(uses);
    return user;
}

static int taken(const char *absorbed, int32_t u) { return u < 0 || (absorbed && absorbed[u]); }

void so_fuse_chain(const so_graph *g, const int32_t *user, const char *absorbed, int32_t i, int chan_axis, int64_t nch,
                   int has_act, so_fuse *f)
{
    memset(f, 0, sizeof *f);
    const so_shape *os = &g->nodes[i].out[0];
    /* stage 0: per-channel affine; 1: act1; 2: residual add; 3: act2; 4: done */
    int stage = has_act ? 2 : 0;
    int32_t cur = i;
    /* a conv's epilogue (NCHW or blocked) also applies HardSwish, HardSigmoid and x * sigmoid(x) (kernels/epi.h) */
    const int conv_head = g->nodes[i].op == SO_OP_CONV_NCHWC || g->nodes[i].op == SO_OP_CONV;
    while (user && f->n < SO_FUSE_MAX && stage < 4) {
        int32_t u = user[cur];
        if (conv_head && u < -1 && (stage <= 1 || stage == 3) && f->n + 2 <= SO_FUSE_MAX) { /* SiLU pair (so_fuse_users) */
            const int32_t m = -2 - u;
            const so_node *mn = &g->nodes[m];
            const int32_t sg = mn->in[0].node == cur ? mn->in[1].node : mn->in[0].node;
            if (taken(absorbed, m) || taken(absorbed, sg) || !so_shape_eq(&mn->out[0], os) || !so_shape_eq(&g->nodes[sg].out[0], os))
                break;
            f->kind = SO_FUSE_CHAIN;
            f->step[f->n] = f->step[f->n + 1] = (uint8_t)(stage <= 1 ? SO_FUSE_SILU1 : SO_FUSE_SILU2);
            f->node[f->n++] = sg;
            f->node[f->n++] = m;
            stage = stage <= 1 ? 2 : 4;
            cur = m;
            continue;
        }
        if (taken(absorbed, u)) break;
        const so_node *un = &g->nodes[u];
        if (un->n_out != 1 || !so_shape_eq(&un->out[0], os)) break;
        int step = -1;
        if (stage == 0 && un->op == SO_OP_BATCHNORM && chan_axis == 1 && os->rank >= 2 && un->in[0].node == cur &&
            un->in[0].slot == 0) {
            if (so_fuse_weight_f32(g, un->in[1]) && so_fuse_weight_f32(g, un->in[2]) && so_fuse_weight_f32(g, un->in[3]) &&
                so_fuse_weight_f32(g, un->in[4]))
                step = SO_FUSE_BN;
        } else if (un->op == SO_OP_ADD && stage <= 2) {
            int me = (un->in[0].node == cur && un->in[0].slot == 0) ? 0 : 1;
            so_edge other = un->in[1 - me];
            const so_shape *osh = shape_of(g, other);
            if (stage == 0 && so_fuse_weight_f32(g, other) && so_fuse_per_channel(osh, os->rank, chan_axis, nch)) {
                step = SO_FUSE_BIAS;
                if (un->attr->act) stage = 2;
            } else if (so_shape_eq(osh, os) && osh->dtype == SO_F32) {
                step = SO_FUSE_RESIDUAL;
                f->has_extra = 1;
                f->extra = other;
                stage = un->attr->act ? 4 : 3;
            }
        } else if ((so_ops[un->op].act != SO_ACT_NONE || (conv_head && (un->op == SO_OP_HARDSWISH || un->op == SO_OP_HARDSIGMOID))) &&
                   (stage <= 1 || stage == 3)) {
            step = stage <= 1 ? SO_FUSE_ACT1 : SO_FUSE_ACT2;
            stage = stage <= 1 ? 2 : 4;
        }
        if (step < 0) break;
        f->kind = SO_FUSE_CHAIN;
        f->step[f->n] = (uint8_t)step;
        f->node[f->n++] = u;
        cur = u;
    }
}

int so_fuse_attention(const so_graph *g, const int32_t *user, const char *absorbed, int32_t i, so_fuse *f)
{
    memset(f, 0, sizeof *f);
    const so_node *n = &g->nodes[i];
    if (!user || !so_fast_use_gemm || n->op != SO_OP_MATMUL || n->n_in != 2 || so_fuse_weight_f32(g, n->in[0]) ||
        so_fuse_weight_f32(g, n->in[1]))
        return 0;
    const so_shape *q = shape_of(g, n->in[0]), *kt = shape_of(g, n->in[1]);
    const int r = q->rank;
    if (r < 3 || kt->rank != r || q->dtype != SO_F32 || kt->dtype != SO_F32) return 0;
    for (int d = 0; d < r - 2; d++)
        if (q->dim[d] != kt->dim[d]) return 0;
    if (q->dim[r - 1] != kt->dim[r - 2]) return 0;
    int32_t u[4], prev = i;
    static const so_op want[3] = {SO_OP_DIV, SO_OP_SOFTMAX, SO_OP_MATMUL};
    for (int t = 0; t < 4; t++) {
        u[t] = user[prev];
        if (t == 3) break;
        if (taken(absorbed, u[t])) return 0;
        so_op op = g->nodes[u[t]].op;
        if (op != want[t] && !(t == 0 && op == SO_OP_MUL)) return 0;
        prev = u[t];
    }
    const so_node *dv = &g->nodes[u[0]], *sm = &g->nodes[u[1]], *m2 = &g->nodes[u[2]];
    float cv;
    so_edge o;
    if (dv->in[0].node != i || dv->in[0].slot != 0 || !so_fuse_other_in(dv, i, &o) || !so_fuse_scalar_weight(g, o, &cv)) return 0;
    if (so_shape_numel(&dv->out[0]) != so_shape_numel(&n->out[0]) || sm->attr->axis != r - 1) return 0;
    if (m2->n_in != 2 || m2->in[0].node != u[1] || m2->in[0].slot != 0 || m2->in[1].node == u[1]) return 0;
    const so_shape *v = shape_of(g, m2->in[1]);
    if (v->rank != r || v->dtype != SO_F32 || v->dim[r - 2] != kt->dim[r - 1] || so_fuse_weight_f32(g, m2->in[1])) return 0;
    for (int d = 0; d < r - 2; d++)
        if (v->dim[d] != q->dim[d]) return 0;
    int nf = 3;
    const so_node *tr = !taken(absorbed, u[3]) ? &g->nodes[u[3]] : NULL;
    if (tr && tr->op == SO_OP_TRANSPOSE && r == 4 && tr->attr->n_ints == 4 && tr->attr->ints[0] == 0 && tr->attr->ints[1] == 2 &&
        tr->attr->ints[2] == 1 && tr->attr->ints[3] == 3)
        nf = 4;
    f->kind = SO_FUSE_ATTENTION;
    f->n = nf;
    memcpy(f->node, u, sizeof(int32_t) * (size_t)nf);
    f->has_extra = 1;
    f->extra = m2->in[1];
    return 1;
}

int so_fuse_gelu(const so_graph *g, const int32_t *user, const char *absorbed, int32_t i, so_fuse *f)
{
    memset(f, 0, sizeof *f);
    const so_node *n = &g->nodes[i];
    if (!user || n->op != SO_OP_DIV || n->n_in != 2) return 0;
    const so_shape *xs = shape_of(g, n->in[0]);
    float v;
    if (xs->dtype != SO_F32 || so_shape_numel(&n->out[0]) != so_shape_numel(xs) || !so_fuse_scalar_weight(g, n->in[1], &v)) return 0;
    int32_t u[4], prev = i;
    static const so_op want[4] = {SO_OP_ERF, SO_OP_ADD, SO_OP_MUL, SO_OP_MUL};
    for (int q = 0; q < 4; q++) {
        u[q] = user[prev];
        if (taken(absorbed, u[q]) || g->nodes[u[q]].op != want[q]) return 0;
        if (so_shape_numel(&g->nodes[u[q]].out[0]) != so_shape_numel(xs)) return 0;
        prev = u[q];
    }
    so_edge o;
    if (!so_fuse_other_in(&g->nodes[u[1]], u[0], &o) || !so_fuse_scalar_weight(g, o, &v)) return 0;
    if (!so_fuse_other_in(&g->nodes[u[2]], u[1], &o) || o.node != n->in[0].node || o.slot != n->in[0].slot) return 0;
    if (!so_fuse_other_in(&g->nodes[u[3]], u[2], &o) || !so_fuse_scalar_weight(g, o, &v)) return 0;
    f->kind = SO_FUSE_GELU;
    f->n = 4;
    memcpy(f->node, u, sizeof u);
    return 1;
}

int so_fuse_pad_pool(const so_graph *g, const int32_t *user, const char *absorbed, int32_t i, so_fuse *f)
{
    memset(f, 0, sizeof *f);
    const so_node *n = &g->nodes[i];
    if (!user || n->op != SO_OP_PAD) return 0;
    const so_shape *x = shape_of(g, n->in[0]);
    if (x->rank != 4 || n->attr->mode != 0 || n->attr->value != 0.f) return 0; /* constant zero padding only */
    int32_t u = user[i];
    if (taken(absorbed, u) || g->nodes[u].op != SO_OP_AVGPOOL) return 0;
    const so_node *pn = &g->nodes[u];
    const so_attr *pa = pn->attr;
    if (pn->in[0].node != i || pn->out[0].rank != 4 || pa->pad[0] || pa->pad[1] || pa->pad[2] || pa->pad[3]) return 0;
    const int64_t *q = n->attr->ints; /* begin[0..3], end[0..3] */
    if (q[0] || q[1] || q[4] || q[5] || q[2] < 0 || q[3] < 0 || q[6] < 0 || q[7] < 0) return 0;
    f->kind = SO_FUSE_PAD_POOL;
    f->n = 1;
    f->node[0] = u;
    return 1;
}

/* so_fuse_stem's SO_FUSE_DW part: a depthwise conv of the stem chain's output (MobileNet / MNASNet's first block: a
   3x3 at 112 x 112 after the 3x3/2 stem) and its chain appended to f when they qualify (fuse.h). The stem kernel
   then computes the rows of the stem's output the depthwise conv reads into a few rows per thread
   (kernels/nchwc_body.h stem_dw_run): that output (MNASNet: 1.6 MB) is never written to memory and read back. */
static void stem_dw(const so_graph *g, const int32_t *user, const char *absorbed, const so_node *cn, so_fuse *f)
{
    const int32_t last = f->node[f->n - 1], du = user[last];
    const so_attr *ca = cn->attr;
    if (f->n >= SO_FUSE_MAX || taken(absorbed, du)) return;
    /* a 1x1 stride-1 unpadded stem is planned as one row of H*W pixels (kernels/nchwc.h): no rows to keep */
    const so_shape *cw = &g->nodes[cn->in[1].node].out[0];
    if (cw->dim[2] == 1 && cw->dim[3] == 1 && ca->stride[0] <= 1 && ca->stride[1] <= 1 && !ca->pad[0] && !ca->pad[1] && !ca->pad[2] &&
        !ca->pad[3])
        return;
    const so_node *dn = &g->nodes[du];
    const so_attr *da = dn->attr;
    if (dn->op != SO_OP_CONV_NCHWC || dn->in[0].node != last || dn->in[0].slot != 0 || dn->in[1].node < 0) return;
    const so_node *wn = &g->nodes[dn->in[1].node];
    const so_node *bn = dn->n_in > 2 && dn->in[2].node >= 0 ? &g->nodes[dn->in[2].node] : NULL;
    if (wn->op != SO_OP_WEIGHT || !g->model->weights[wn->ref].data || (bn && bn->op != SO_OP_WEIGHT)) return;
    const so_shape *x = shape_of(g, dn->in[0]), *w = &wn->out[0], *o = &dn->out[0];
    if (x->rank != 5 || o->rank != 5 || w->rank != 4) return;
    const int64_t C = w->dim[0], K = w->dim[2], S = da->stride[0] > 0 ? da->stride[0] : 1;
    if (da->group != C || w->dim[1] != 1 || C > x->dim[1] * x->dim[4] || w->dim[3] != K || K > SO_FUSE_DW_K ||
        (da->stride[1] > 0 ? da->stride[1] : 1) != S || S > 2 || da->dilation[0] > 1 || da->dilation[1] > 1)
        return;
    /* the kept rows (kernels/nchwc.h so_nchwc_stem_dw_scratch, at the largest block) */
    const int64_t Wp = so_nchwc_stem_dw_width(x->dim[3], o->dim[3], K, S, da->pad[1]);
    if ((C + 15) / 16 * 16 * (K + S) * Wp * (int64_t)sizeof(float) > SO_FUSE_DW_BYTES) return;
    so_fuse ch;
    so_fuse_chain(g, user, absorbed, du, -1, 0, da->act != 0, &ch);
    if (ch.has_extra || f->n + 1 + ch.n > SO_FUSE_MAX) return;
    f->node[f->n] = du, f->step[f->n++] = SO_FUSE_DW;
    for (int k = 0; k < ch.n; k++) f->node[f->n] = ch.node[k], f->step[f->n++] = ch.step[k];
}

int so_fuse_stem(const so_graph *g, const int32_t *user, const char *absorbed, int32_t i, so_fuse *f)
{
    memset(f, 0, sizeof *f);
    const so_node *n = &g->nodes[i];
    if (!user || n->op != SO_OP_NCHWC_IN || n->n_in != 1) return 0;
    const so_shape *x = shape_of(g, n->in[0]);
    const int32_t u = user[i];
    if (x->rank != 4 || x->dtype != SO_F32 || x->dim[1] > SO_FUSE_STEM_C || taken(absorbed, u)) return 0;
    const so_node *cn = &g->nodes[u];
    if (cn->op != SO_OP_CONV_NCHWC || cn->in[0].node != i || cn->in[0].slot != 0 || (cn->attr->group > 1)) return 0;
    const so_node *wn = &g->nodes[cn->in[1].node];
    const so_node *bn = cn->n_in > 2 && cn->in[2].node >= 0 ? &g->nodes[cn->in[2].node] : NULL;
    if (wn->op != SO_OP_WEIGHT || !g->model->weights[wn->ref].data || (bn && bn->op != SO_OP_WEIGHT)) return 0;
    so_fuse ch; /* the conv's own decision (kernels/nchwc.c conv_chain), whole: a residual add would be a second input */
    so_fuse_chain(g, user, absorbed, u, -1, 0, cn->attr->act != 0, &ch);
    if (ch.has_extra || ch.n + 1 > SO_FUSE_MAX) return 0;
    f->kind = SO_FUSE_STEM;
    f->node[0] = u;
    for (int k = 0; k < ch.n; k++) f->node[k + 1] = ch.node[k], f->step[k + 1] = ch.step[k];
    f->n = ch.n + 1;
    /* a max pool of the chain's output (ResNet's 3x3/2 after its 7x7/2 stem): the stem kernel pools the conv rows
       it computes (kernels/nchwc_body.h stem_pool_run), the conv's output is never stored */
    const int32_t last = f->node[f->n - 1], pu = user[last];
    if (f->n < SO_FUSE_MAX && !taken(absorbed, pu)) {
        const so_node *pn = &g->nodes[pu];
        const so_attr *pa = pn->attr;
        const so_shape *px = shape_of(g, pn->in[0]);
        if (pn->op == SO_OP_MAXPOOL_NCHWC && pn->in[0].node == last && pn->in[0].slot == 0 && px->rank == 5 && px->dim[2] > 0 &&
            px->dim[3] > 0 && pa->kernel[0] >= 1 && pa->kernel[0] <= SO_FUSE_POOL_K && pa->dilation[0] <= 1 && pa->dilation[1] <= 1)
            f->node[f->n] = pu, f->step[f->n++] = SO_FUSE_POOL;
    }
    if (f->step[f->n - 1] != SO_FUSE_POOL) stem_dw(g, user, absorbed, cn, f);
    return 1;
}

static int perm_is(const so_node *t, int a, int b, int c, int d)
{
    const so_attr *at = t->attr;
    return at && at->n_ints == 4 && at->ints[0] == a && at->ints[1] == b && at->ints[2] == c && at->ints[3] == d;
}

int so_fuse_nhwc(const so_graph *g, const int32_t *user, const char *absorbed, int32_t i, so_fuse *f)
{
    memset(f, 0, sizeof *f);
    const so_node *n = &g->nodes[i];
    if (!user || n->n_in != 1 || n->n_out != 1 || n->in[0].node < 0) return 0;
    const so_shape *x = shape_of(g, n->in[0]), *o = &n->out[0];
    if (x->dtype != SO_F32) return 0;
    int32_t cur = i, u = user[i];
    if (taken(absorbed, u)) return 0;
    const so_node *un = &g->nodes[u];
    if (n->op == SO_OP_NCHWC_OUT) { /* blocked -> NCHW -> NHWC */
        if (x->rank != 5 || o->rank != 4 || un->op != SO_OP_TRANSPOSE || un->in[0].node != i || un->in[0].slot != 0 ||
            !perm_is(un, 0, 2, 3, 1))
            return 0;
        f->kind = SO_FUSE_NHWC;
        f->n = 1;
        f->node[0] = u;
        f->step[0] = SO_FUSE_REORDER;
        return 1;
    }
    if (n->op != SO_OP_TRANSPOSE || x->rank != 4 || !perm_is(n, 0, 3, 1, 2)) return 0;
    if (un->op == SO_OP_MUL) { /* the per-channel scale (ConvNeXt's layer scale) */
        so_edge w;
        if (un->n_out != 1 || (un->attr && un->attr->act) || !so_fuse_other_in(un, cur, &w) || !so_fuse_weight_f32(g, w) ||
            !so_fuse_per_channel(shape_of(g, w), 4, 1, o->dim[1]) || !so_shape_eq(&un->out[0], o))
            return 0;
        f->node[f->n] = u, f->step[f->n++] = SO_FUSE_SCALE;
        cur = u, u = user[cur];
        if (taken(absorbed, u)) return 0;
        un = &g->nodes[u];
    }
    const so_shape *bo = &un->out[0];
    if (un->op != SO_OP_NCHWC_IN || un->n_out != 1 || un->in[0].node != cur || un->in[0].slot != 0 || bo->rank != 5 ||
        bo->dim[0] != o->dim[0] || bo->dim[4] < 1 || bo->dim[1] != (o->dim[1] + bo->dim[4] - 1) / bo->dim[4] || bo->dim[2] != o->dim[2] || bo->dim[3] != o->dim[3])
        return 0;
    f->node[f->n] = u, f->step[f->n++] = SO_FUSE_REORDER;
    cur = u, u = user[cur];
    if (!taken(absorbed, u)) { /* the residual add in the blocked layout */
        const so_node *an = &g->nodes[u];
        so_edge r;
        if (an->op == SO_OP_ADD && an->n_out == 1 && !an->attr->act && so_fuse_other_in(an, cur, &r) && r.node != cur &&
            so_shape_eq(shape_of(g, r), bo) && so_shape_eq(&an->out[0], bo)) {
            f->node[f->n] = u, f->step[f->n++] = SO_FUSE_RESIDUAL;
            f->has_extra = 1;
            f->extra = r;
        }
    }
    f->kind = SO_FUSE_NHWC;
    return 1;
}

void so_fuse_decide(const so_graph *g, const int32_t *user, const char *absorbed, int32_t i, so_fuse *f)
{
    memset(f, 0, sizeof *f);
    const so_node *nd = &g->nodes[i];
    if (nd->n_out < 1 || (so_ops[nd->op].flags & (SO_F_SOURCE | SO_F_VIEW | SO_F_OPAQUE))) return;
    for (int32_t q = 0; q < nd->n_out; q++)
        if (nd->out[q].rank < 0) return; /* so_fast_select: reference kernel, nothing fused */
    const so_shape *o = &nd->out[0];
    switch (nd->op) {
    case SO_OP_CONV: { /* kernels/conv.c so_conv_select */
        const so_shape *x = shape_of(g, nd->in[0]), *w = shape_of(g, nd->in[1]);
        if (x->rank != 4 || w->rank != 4) return;
        if (nd->n_in > 2 && nd->in[2].node >= 0 && g->nodes[nd->in[2].node].op != SO_OP_WEIGHT) return;
        so_fuse_chain(g, user, absorbed, i, 1, o->dim[1], nd->attr->act != 0, f);
        return;
    }
    case SO_OP_CONV_NCHWC: { /* kernels/nchwc.c so_nchwc_select + conv_chain: activation, residual add, activation */
        const so_node *wn = &g->nodes[nd->in[1].node];
        const so_node *bn = nd->n_in > 2 && nd->in[2].node >= 0 ? &g->nodes[nd->in[2].node] : NULL;
        if (wn->op != SO_OP_WEIGHT || !g->model->weights[wn->ref].data || (bn && bn->op != SO_OP_WEIGHT)) return;
        so_fuse_chain(g, user, absorbed, i, -1, 0, nd->attr->act != 0, f);
        return;
    }
    case SO_OP_MATMUL: { /* matmul.c select_matmul */
        const so_shape *a = shape_of(g, nd->in[0]), *b = shape_of(g, nd->in[1]);
        if (a->dtype != SO_F32 || b->dtype != SO_F32) return;
        if (so_fuse_attention(g, user, absorbed, i, f)) return;
        if (b->rank >= 2 && o->rank >= 1) so_fuse_chain(g, user, absorbed, i, o->rank - 1, b->dim[b->rank - 1], nd->attr->act != 0, f);
        return;
    }
    case SO_OP_GEMM: { /* matmul.c select_gemm */
        const so_shape *b = shape_of(g, nd->in[1]);
        if (b->rank != 2) return;
        so_fuse_chain(g, user, absorbed, i, 1, nd->attr->trans_b ? b->dim[0] : b->dim[1], nd->attr->act != 0, f);
        return;
    }
    case SO_OP_CONVTRANSPOSE: { /* kernels/deconv.c so_deconv_select */
        const so_shape *x = shape_of(g, nd->in[0]), *w = shape_of(g, nd->in[1]);
        if (x->rank != 4 || w->rank != 4 || o->rank != 4 || x->dtype != SO_F32 || w->dtype != SO_F32) return;
        if (nd->n_in > 2 && nd->in[2].node >= 0 && !so_fuse_weight_f32(g, nd->in[2])) return;
        so_fuse_chain(g, user, absorbed, i, 1, o->dim[1], 0, f);
        return;
    }
    case SO_OP_DIV: so_fuse_gelu(g, user, absorbed, i, f); return;
    case SO_OP_PAD: so_fuse_pad_pool(g, user, absorbed, i, f); return;
    case SO_OP_NCHWC_IN: so_fuse_stem(g, user, absorbed, i, f); return; /* kernels/nchwc.c so_nchwc_select */
    case SO_OP_NCHWC_OUT:
    case SO_OP_TRANSPOSE: so_fuse_nhwc(g, user, absorbed, i, f); return; /* kernels/nchwc.c so_nchwc_select (move.c) */
    default: return;
    }
}

/* so_fuse_users' entry for node j, found by scanning the nodes after it (readers follow their
   producers): no pinned nodes, no SiLU pairs. */
static int32_t single_user(const so_graph *g, int32_t j)
{
    if (g->nodes[j].n_out != 1) return -1;
    for (int32_t o = 0; o < g->model->n_outputs; o++)
        if (g->outputs[o].node == j) return -1;
    int32_t user = -1, uses = 0;
    for (int32_t i = j + 1; i < g->n_nodes && uses < 2; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++)
            if (g->nodes[i].in[k].node == j && g->nodes[i].in[k].slot == 0) {
                uses++;
                user = i;
            }
    return uses == 1 ? user : -1;
}

so_fuse_kind so_fuse_decide_at(const so_graph *g, int32_t i, int32_t *user, so_fuse *f)
{
    int32_t cur = i;
    for (int t = 0; t <= SO_FUSE_MAX && cur >= 0; t++) cur = user[cur] = single_user(g, cur);
    so_fuse_decide(g, user, NULL, i, f);
    return f->kind;
}
