/* layout.c - blocked-channel (NCHWc) layout placement: rewrites a graph so that convs, pools and the element-wise ops between them run on blocked values, with reorders only where a plain operator needs NCHW. */
#include "layout.h"

#include "../rules/rule_shape.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct lctx {
    const so_graph *g;
    so_graph *ng;
    int b;
    int32_t *off;   /* [n_nodes + 1]: first slot of node i in plain[] */
    so_edge *plain; /* NCHW version of each (node, slot) in ng, node -1 if none yet */
    so_edge *blk;   /* [n_nodes]: blocked version of output 0, node -1 if none */
    int64_t *chans; /* [n_nodes]: channels of the blocked value */
    so_layout_stats *st;
} lctx;

static const so_shape *shape_of(const so_graph *g, so_edge e) { return &g->nodes[e.node].out[e.slot]; }

static so_status add_node(lctx *c, so_op op, const so_edge *in, int n_in, int n_out, const so_attr *a, int32_t ref, const char *name,
                          int32_t *id)
{
    *id = so_graph_add(c->ng, op, in, n_in, n_out, a, ref, name);
    return so_graph_infer(c->ng, *id);
}

/* The NCHW version of old edge e (an NCHWC_OUT of its blocked version when it has no plain one yet). */
static so_status get_plain(lctx *c, so_edge e, so_edge *out)
{
    so_edge *p = &c->plain[c->off[e.node] + e.slot];
    if (p->node < 0) {
        so_attr a = {0};
        a.n_ints = 2, a.ints[0] = c->b, a.ints[1] = c->chans[e.node];
        int32_t id;
        if (add_node(c, SO_OP_NCHWC_OUT, &c->blk[e.node], 1, 1, so_model_attr(c->ng->model, &a), -1, NULL, &id) != SO_OK) return SO_ERR;
        *p = (so_edge){id, 0};
        c->st->reorders++;
    }
    *out = *p;
    return SO_OK;
}

/* The blocked version of old edge e (a rank-4 value; an NCHWC_IN of its plain one when needed). blk[] holds
   output 0 of each node only, so another output (a split's slot 1, ...) gets a reorder of its own every time:
   the cache would hand it slot 0's blocked value (Inception-v3's Mixed_7b concat at block 8 read the 384-channel
   half of a merged 1x1 conv's split where the 320-channel half belonged). */
static so_status get_blk(lctx *c, so_edge e, so_edge *out)
{
    if (e.slot == 0 && c->blk[e.node].node >= 0) {
        *out = c->blk[e.node];
        return SO_OK;
    }
    so_attr a = {0};
    a.n_ints = 1, a.ints[0] = c->b;
    so_edge p;
    int32_t id;
    if (get_plain(c, e, &p) != SO_OK || add_node(c, SO_OP_NCHWC_IN, &p, 1, 1, so_model_attr(c->ng->model, &a), -1, NULL, &id) != SO_OK)
        return SO_ERR;
    c->st->reorders++;
    *out = (so_edge){id, 0};
    if (e.slot == 0) {
        c->blk[e.node] = *out;
        c->chans[e.node] = shape_of(c->g, e)->dim[1];
    }
    return SO_OK;
}

static int is_weight(const so_graph *g, so_edge e) { return e.node >= 0 && g->nodes[e.node].op == SO_OP_WEIGHT; }

static const float *wdata(const so_graph *g, so_edge e) { return g->model->weights[g->nodes[e.node].ref].data; }

/* Whether conv node i can run as CONV_NCHWC with block b. */
static int conv_qualifies(const so_graph *g, int32_t i, int b)
{
    const so_node *n = &g->nodes[i];
    if (n->in[0].slot != 0 || !is_weight(g, n->in[1]) || (n->n_in > 2 && n->in[2].node >= 0 && !is_weight(g, n->in[2]))) return 0;
    const so_shape *x = shape_of(g, n->in[0]), *w = shape_of(g, n->in[1]);
    if (x->rank != 4 || w->rank != 4 || x->dtype != SO_F32 || !wdata(g, n->in[1])) return 0;
    const int64_t grp = n->attr->group > 0 ? n->attr->group : 1, Cg = w->dim[1], Og = w->dim[0] / grp;
    /* groups aligned with blocks, or whole groups inside a block (kernels/nchwc.h gsub: ResNeXt's groups of 4, 8) */
    return grp == 1 || (Cg == 1 && Og == 1) || (Cg % b == 0 && Og % b == 0) || (Cg == Og && Cg < b && b % Cg == 0);
}

/* The BatchNormalization that is conv i's only user with constant parameters, or -1. */
static int32_t foldable_bn(const so_graph *g, const int32_t *uses, int32_t i)
{
    if (uses[i] != 1) return -1;
    for (int32_t u = i + 1; u < g->n_nodes; u++) {
        const so_node *un = &g->nodes[u];
        for (int k = 0; k < un->n_in; k++)
            if (un->in[k].node == i) {
                if (un->op != SO_OP_BATCHNORM || k != 0) return -1;
                for (int q = 1; q < 5; q++)
                    if (!is_weight(g, un->in[q]) || !wdata(g, un->in[q])) return -1;
                return u;
            }
    }
    return -1;
}

/* New weights W' = W * s, B' = (B - mean) * s + beta with s = scale / sqrt(var + eps) per output channel. */
static void fold_bn(lctx *c, int32_t i, int32_t u, so_edge *w_out, so_edge *b_out)
{
    const so_graph *g = c->g;
    const so_node *n = &g->nodes[i], *bn = &g->nodes[u];
    const so_shape *ws = shape_of(g, n->in[1]);
    const int64_t O = ws->dim[0], per = ws->dim[1] * ws->dim[2] * ws->dim[3];
    const float *W = wdata(g, n->in[1]), *B = n->n_in > 2 && n->in[2].node >= 0 ? wdata(g, n->in[2]) : NULL;
    const float *sc = wdata(g, bn->in[1]), *be = wdata(g, bn->in[2]), *mu = wdata(g, bn->in[3]), *var = wdata(g, bn->in[4]);
    float *W2 = so_weight_xalloc(sizeof(float) * (size_t)(O * per), 0), *B2 = so_weight_xalloc(sizeof(float) * (size_t)O, 0);
    for (int64_t o = 0; o < O; o++) {
        const double s = (double)sc[o] / sqrt((double)var[o] + (double)bn->attr->epsilon);
        for (int64_t k = 0; k < per; k++) W2[o * per + k] = (float)(W[o * per + k] * s);
        B2[o] = (float)(((B ? (double)B[o] : 0.0) - mu[o]) * s + be[o]);
    }
    so_model *m = c->ng->model;
    const int64_t od[1] = {O};
    int32_t wid = so_model_add_weight(m, NULL, *ws, W2), bid = so_model_add_weight(m, NULL, so_shape_make(1, od), B2), id;
    add_node(c, SO_OP_WEIGHT, NULL, 0, 1, NULL, wid, NULL, &id);
    *w_out = (so_edge){id, 0};
    add_node(c, SO_OP_WEIGHT, NULL, 0, 1, NULL, bid, NULL, &id);
    *b_out = (so_edge){id, 0};
}

/* A BatchNormalization (inference form, constant parameters) on a blocked value as x * S + T with S, T new
   blocked weights [1, Cb, 1, 1, b] (zero in the padding lanes). */
static so_status blocked_bn(lctx *c, const so_node *bn, so_edge x, int32_t *id)
{
    const so_graph *g = c->g;
    for (int q = 1; q < 5; q++)
        if (!is_weight(g, bn->in[q]) || !wdata(g, bn->in[q])) return SO_ERR;
    const int64_t C = bn->out[0].dim[1], b = c->b, Cb = (C + b - 1) / b;
    const float *sc = wdata(g, bn->in[1]), *be = wdata(g, bn->in[2]), *mu = wdata(g, bn->in[3]), *var = wdata(g, bn->in[4]);
    float *S = so_weight_xalloc((size_t)(Cb * b) * sizeof *S, 1), *T = so_weight_xalloc((size_t)(Cb * b) * sizeof *T, 1);
    for (int64_t k = 0; k < C; k++) {
        const double s = (double)sc[k] / sqrt((double)var[k] + (double)bn->attr->epsilon);
        S[k] = (float)s;
        T[k] = (float)(be[k] - mu[k] * s);
    }
    const int64_t d[5] = {1, Cb, 1, 1, b};
    so_model *m = c->ng->model;
    int32_t sid = so_model_add_weight(m, NULL, so_shape_make(5, d), S), tid = so_model_add_weight(m, NULL, so_shape_make(5, d), T), ws, wt;
    so_edge in[2];
    if (add_node(c, SO_OP_WEIGHT, NULL, 0, 1, NULL, sid, NULL, &ws) != SO_OK || add_node(c, SO_OP_WEIGHT, NULL, 0, 1, NULL, tid, NULL, &wt) != SO_OK)
        return SO_ERR;
    in[0] = x, in[1] = (so_edge){ws, 0};
    if (add_node(c, SO_OP_MUL, in, 2, 1, NULL, -1, bn->name, id) != SO_OK) return SO_ERR;
    in[0] = (so_edge){*id, 0}, in[1] = (so_edge){wt, 0};
    return add_node(c, SO_OP_ADD, in, 2, 1, NULL, -1, bn->name, id);
}

/* Element-wise op whose output can stay blocked: every input rank 4 and equal to the output, or [N, C, 1, 1] of
   the output's N and C (a squeeze-excitation scale: its blocked [N, Cb, 1, 1, b] broadcasts the same way). */
static int elementwise_blockable(const so_graph *g, const so_node *n)
{
    const unsigned f = so_ops[n->op].flags;
    const so_shape *o = &n->out[0];
    if (!(f & (SO_F_UNARY | SO_F_BINARY)) || n->n_out != 1 || o->rank != 4 || o->dtype != SO_F32) return 0;
    for (int k = 0; k < n->n_in; k++) {
        const so_shape *s = shape_of(g, n->in[k]);
        const int per_image_channel = s->rank == 4 && s->dim[0] == o->dim[0] && s->dim[1] == o->dim[1] && s->dim[2] == 1 && s->dim[3] == 1;
        if (n->in[k].slot != 0 || g->nodes[n->in[k].node].op == SO_OP_WEIGHT || !(so_shape_eq(s, o) || per_image_channel)) return 0;
    }
    return 1;
}

/* The AveragePool that is Pad node i's only user when the pair is one blocked avgpool: a constant-0 Pad of the
   spatial dims of a rank-4 value (pads >= 0), the pool without pads of its own (as kernels/fuse.c's pad + pool
   fusion: the padded zeros count in the divisor, count_include_pad). -1 otherwise. Inception-v3's branch_pool
   (pads 1) and DenseNet's transitions (an all-zero Pad) then stay blocked. */
static int32_t pad_pool(const so_graph *g, const int32_t *uses, int32_t i)
{
    const so_node *n = &g->nodes[i];
    if (n->op != SO_OP_PAD || n->attr->mode != 0 || uses[i] != 1 || n->n_in < 1 || n->in[0].slot != 0 || shape_of(g, n->in[0])->rank != 4 || n->attr->value != 0.f ||
        n->attr->n_ints < 8)
        return -1;
    const int64_t *q = n->attr->ints; /* begin[0..3], end[0..3] */
    if (q[0] || q[1] || q[4] || q[5] || q[2] < 0 || q[3] < 0 || q[6] < 0 || q[7] < 0) return -1;
    for (int32_t u = i + 1; u < g->n_nodes; u++) {
        const so_node *un = &g->nodes[u];
        for (int k = 0; k < un->n_in; k++)
            if (un->in[k].node == i) {
                const so_attr *pa = un->attr;
                if (un->op != SO_OP_AVGPOOL || k != 0 || un->out[0].rank != 4 || pa->pad[0] || pa->pad[1] || pa->pad[2] || pa->pad[3]) return -1;
                return u;
            }
    }
    return -1;
}

so_status so_layout_fold_bn(const so_graph *g, int b, so_graph **out, int32_t *n_folded)
{
    lctx c = {.g = g, .b = b};
    so_layout_stats st;
    memset(&st, 0, sizeof st);
    c.st = &st;
    c.ng = so_graph_new(g->model);
    so_edge *map = so_xmalloc(sizeof *map * (size_t)(g->n_nodes + 1)); /* output 0 of each node (multi-output: slot kept) */
    int32_t *uses = so_graph_use_counts(g), *bn_of = so_xmalloc(sizeof *bn_of * (size_t)(g->n_nodes + 1));
    for (int32_t i = 0; i < g->n_nodes; i++) bn_of[i] = -1;
    *n_folded = 0;
    so_status rc = SO_ERR;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const so_node *n = &g->nodes[i];
        so_edge in[SO_MAX_IN];
        int32_t id, u;
        if (bn_of[i] >= 0) {
            map[i] = map[bn_of[i]];
            continue;
        }
        for (int k = 0; k < n->n_in; k++)
            in[k] = n->in[k].node < 0 ? n->in[k] : (so_edge){map[n->in[k].node].node, n->in[k].slot};
        if (n->op == SO_OP_CONV && conv_qualifies(g, i, b) && (u = foldable_bn(g, uses, i)) >= 0) {
            fold_bn(&c, i, u, &in[1], &in[2]);
            if (add_node(&c, SO_OP_CONV, in, 3, 1, n->attr, -1, n->name, &id) != SO_OK) goto done;
            bn_of[u] = i;
            (*n_folded)++;
        } else {
            id = so_graph_add(c.ng, n->op, in, n->n_in, n->n_out, n->attr, n->ref, n->name);
            for (int k = 0; k < n->n_out; k++) c.ng->nodes[id].out[k] = n->out[k];
            if (so_graph_infer(c.ng, id) != SO_OK) goto done;
        }
        map[i] = (so_edge){id, 0};
    }
    for (int32_t o = 0; o < g->model->n_outputs; o++) c.ng->outputs[o] = (so_edge){map[g->outputs[o].node].node, g->outputs[o].slot};
    so_graph_dce(c.ng);
    *out = c.ng;
    c.ng = NULL;
    rc = SO_OK;
done:
    if (c.ng) so_graph_free(c.ng);
    free(map);
    free(uses);
    free(bn_of);
    return rc;
}

so_status so_layout_nchwc(const so_graph *g, int b, const char *keep, so_graph **out, so_layout_stats *st)
{
    so_layout_stats dummy;
    if (!st) st = &dummy;
    memset(st, 0, sizeof *st);
    lctx c = {.g = g, .b = b, .st = st};
    c.ng = so_graph_new(g->model);
    c.off = so_xmalloc(sizeof *c.off * (size_t)(g->n_nodes + 1));
    c.off[0] = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) c.off[i + 1] = c.off[i] + g->nodes[i].n_out;
    c.plain = so_xmalloc(sizeof *c.plain * (size_t)(c.off[g->n_nodes] + 1));
    for (int32_t k = 0; k < c.off[g->n_nodes]; k++) c.plain[k] = (so_edge){-1, 0};
    c.blk = so_xmalloc(sizeof *c.blk * (size_t)(g->n_nodes + 1));
    c.chans = so_xcalloc((size_t)g->n_nodes + 1, sizeof *c.chans);
    int32_t *bn_of = so_xmalloc(sizeof *bn_of * (size_t)(g->n_nodes + 1)); /* BN node -> the conv it is folded into */
    for (int32_t i = 0; i < g->n_nodes; i++) c.blk[i] = (so_edge){-1, 0}, bn_of[i] = -1;
    int32_t *uses = so_graph_use_counts(g);
    so_status rc = SO_ERR;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const so_node *n = &g->nodes[i];
        so_edge in[SO_MAX_IN];
        int32_t id;
        if (bn_of[i] >= 0) { /* folded into its conv: the same (blocked) value */
            c.blk[i] = c.blk[bn_of[i]];
            c.chans[i] = c.chans[bn_of[i]];
            continue;
        }
        if (n->op == SO_OP_CONV && (!keep || !keep[i]) && conv_qualifies(g, i, b)) {
            if (get_blk(&c, n->in[0], &in[0]) != SO_OK) goto done;
            int nin = 2;
            const int32_t u = foldable_bn(g, uses, i);
            if (u >= 0) {
                fold_bn(&c, i, u, &in[1], &in[2]);
                nin = 3;
                bn_of[u] = i;
                st->bn_folded++;
            } else {
                if (get_plain(&c, n->in[1], &in[1]) != SO_OK) goto done;
                if (n->n_in > 2 && n->in[2].node >= 0) {
                    if (get_plain(&c, n->in[2], &in[2]) != SO_OK) goto done;
                    nin = 3;
                }
            }
            if (add_node(&c, SO_OP_CONV_NCHWC, in, nin, 1, n->attr, -1, n->name, &id) != SO_OK) goto done;
            c.blk[i] = (so_edge){id, 0};
            c.chans[i] = n->out[0].dim[1];
            st->convs++;
            continue;
        }
        int blocked_in = n->n_in > 0 && c.blk[n->in[0].node].node >= 0 && n->in[0].slot == 0;
        if (n->op == SO_OP_ADD || n->op == SO_OP_MUL || n->op == SO_OP_SUB || n->op == SO_OP_DIV)
            blocked_in = blocked_in || (n->n_in > 1 && c.blk[n->in[1].node].node >= 0 && n->in[1].slot == 0);
        so_op bop = n->op == SO_OP_MAXPOOL         ? SO_OP_MAXPOOL_NCHWC
                    : n->op == SO_OP_AVGPOOL       ? SO_OP_AVGPOOL_NCHWC
                    : n->op == SO_OP_GLOBALAVGPOOL ? SO_OP_GLOBALAVGPOOL_NCHWC
                                                   : SO_OP_COUNT;
        if (blocked_in && bop != SO_OP_COUNT && n->out[0].rank == 4) {
            if (get_blk(&c, n->in[0], &in[0]) != SO_OK) goto done;
            if (add_node(&c, bop, in, 1, 1, n->attr, -1, n->name, &id) != SO_OK) goto done;
            c.blk[i] = (so_edge){id, 0};
            c.chans[i] = n->out[0].dim[1];
            st->pools++;
            continue;
        }
        int32_t pu;
        if (blocked_in && (pu = pad_pool(g, uses, i)) >= 0) { /* Pad + AveragePool: one blocked avgpool with the pads */
            so_attr a = *g->nodes[pu].attr;
            const int64_t *q = n->attr->ints;
            a.pad[0] = q[2], a.pad[1] = q[3], a.pad[2] = q[6], a.pad[3] = q[7];
            if (q[2] || q[3] || q[6] || q[7]) a.count_include_pad = 1;
            if (get_blk(&c, n->in[0], &in[0]) != SO_OK ||
                add_node(&c, SO_OP_AVGPOOL_NCHWC, in, 1, 1, so_model_attr(c.ng->model, &a), -1, g->nodes[pu].name, &id) != SO_OK)
                goto done;
            c.blk[i] = (so_edge){id, 0}; /* the Pad's only user reads the pool's output: mapped through bn_of */
            c.chans[i] = g->nodes[pu].out[0].dim[1];
            bn_of[pu] = i;
            st->pools++;
            continue;
        }
        if (n->op == SO_OP_CONCAT && n->attr->axis == 1 && n->out[0].rank == 4 && n->n_in < SO_MAX_INTS && n->out[0].dtype == SO_F32) {
            int any = 0;
            for (int k = 0; k < n->n_in; k++) any |= n->in[k].slot == 0 && c.blk[n->in[k].node].node >= 0;
            if (any) {
                so_attr a = {0};
                a.n_ints = n->n_in + 1, a.ints[0] = b;
                for (int k = 0; k < n->n_in; k++) {
                    if (get_blk(&c, n->in[k], &in[k]) != SO_OK) goto done;
                    a.ints[k + 1] = shape_of(g, n->in[k])->dim[1];
                }
                if (add_node(&c, SO_OP_CONCAT_NCHWC, in, n->n_in, 1, so_model_attr(c.ng->model, &a), -1, n->name, &id) != SO_OK) goto done;
                c.blk[i] = (so_edge){id, 0};
                c.chans[i] = n->out[0].dim[1];
                st->concats++;
                continue;
            }
        }
        if (blocked_in && n->op == SO_OP_BATCHNORM && n->out[0].rank == 4 && n->in[0].slot == 0) {
            int ok = 1;
            for (int q = 1; q < 5; q++) ok = ok && is_weight(g, n->in[q]) && wdata(g, n->in[q]);
            if (ok) {
                if (get_blk(&c, n->in[0], &in[0]) != SO_OK || blocked_bn(&c, n, in[0], &id) != SO_OK) goto done;
                c.blk[i] = (so_edge){id, 0};
                c.chans[i] = n->out[0].dim[1];
                st->elementwise++;
                continue;
            }
        }
        if (blocked_in && elementwise_blockable(g, n)) {
            for (int k = 0; k < n->n_in; k++)
                if (get_blk(&c, n->in[k], &in[k]) != SO_OK) goto done;
            if (add_node(&c, n->op, in, n->n_in, 1, n->attr, -1, n->name, &id) != SO_OK) goto done;
            c.blk[i] = (so_edge){id, 0};
            c.chans[i] = n->out[0].dim[1];
            st->elementwise++;
            continue;
        }
        /* a plain node: NCHW inputs */
        for (int k = 0; k < n->n_in; k++) {
            if (n->in[k].node < 0) in[k] = n->in[k];
            else if (get_plain(&c, n->in[k], &in[k]) != SO_OK) goto done;
        }
        id = so_graph_add(c.ng, n->op, in, n->n_in, n->n_out, n->attr, n->ref, n->name);
        for (int k = 0; k < n->n_out; k++) c.ng->nodes[id].out[k] = n->out[k]; /* opaque nodes keep their shapes */
        if (so_graph_infer(c.ng, id) != SO_OK) goto done;
        for (int k = 0; k < n->n_out; k++) c.plain[c.off[i] + k] = (so_edge){id, k};
    }
    for (int32_t o = 0; o < g->model->n_outputs; o++)
        if (get_plain(&c, g->outputs[o], &c.ng->outputs[o]) != SO_OK) goto done;
    so_graph_dce(c.ng);
    *out = c.ng;
    c.ng = NULL;
    rc = SO_OK;
done:
    if (c.ng) so_graph_free(c.ng);
    free(c.off);
    free(c.plain);
    free(c.blk);
    free(c.chans);
    free(bn_of);
    free(uses);
    return rc;
}

/* ---------------- rule-driven placement (proven layout rules, issue 15) ---------------- */

/* Output rank of pattern node k of side `which`, or -1 when the rule check cannot say. */
static int pnode_rank(const so_rule *r, int which, int k)
{
    so_sshape sh;
    so_rref ref = {(int16_t)k, 0};
    if (so_rule_shape(r, which, ref, &sh) != SO_OK) return -1;
    return sh.rank;
}

/* Potential of one side of a rule: plain operators (non-layout nodes whose output is not blocked) and reorders. */
static void side_potential(const so_rule *r, int which, int *plain, int *reorders)
{
    const so_pattern *p = which ? &r->dst : &r->src;
    *plain = *reorders = 0;
    for (int k = 0; k < p->n_nodes; k++) {
        so_op op = p->nodes[k].op;
        if (op == SO_OP_NCHWC_IN || op == SO_OP_NCHWC_OUT) (*reorders)++;
        else if (!(so_ops[op].flags & (SO_F_LAYOUT | SO_F_INTERNAL)) && pnode_rank(r, which, k) != 5) (*plain)++;
    }
}

int so_layout_rule_block(const so_rule *r)
{
    for (int w = 0; w < 2; w++) {
        const so_pattern *p = w ? &r->dst : &r->src;
        for (int k = 0; k < p->n_nodes; k++) {
            const so_rnode *n = &p->nodes[k];
            if (n->op == SO_OP_NCHWC_IN && n->attr.n_ints == 1) return (int)n->attr.ints[0];
            if (n->op == SO_OP_NCHWC_OUT && n->n_dx == 2) return n->dx[0].c;
        }
    }
    for (int i = 0; i < r->n_inputs; i++)
        if (r->inputs[i].rank == 5 && r->inputs[i].dim[4].n_sym == 0) return r->inputs[i].dim[4].c;
    return 0;
}

static int pattern_has(const so_pattern *p, so_op op)
{
    for (int k = 0; k < p->n_nodes; k++)
        if (p->nodes[k].op == op) return 1;
    return 0;
}

int so_layout_rule_class(const so_rule *r, int b)
{
    int ps, rs_, pd, rd;
    int fold = pattern_has(&r->src, SO_OP_BATCHNORM) && pattern_has(&r->src, SO_OP_CONV) && pattern_has(&r->dst, SO_OP_BNFOLD_W) &&
               !pattern_has(&r->dst, SO_OP_BATCHNORM);
    if (!fold && so_layout_rule_block(r) != b) return SO_LAYOUT_RULE_NONE;
    side_potential(r, 0, &ps, &rs_);
    side_potential(r, 1, &pd, &rd);
    if (fold) return pd < ps ? SO_LAYOUT_RULE_PUSH : SO_LAYOUT_RULE_NONE;
    if (pd == ps && rd < rs_) return SO_LAYOUT_RULE_REDUCE;
    if (pd < ps && rd <= rs_) return SO_LAYOUT_RULE_PUSH;
    if (pd < ps) return SO_LAYOUT_RULE_SEED; /* a plain conv blocked, an add moved onto blocked values */
    if (pd > ps && r->src.n_nodes == 1 && r->src.nodes[0].op == SO_OP_CONV_NCHWC && pattern_has(&r->dst, SO_OP_CONV))
        return SO_LAYOUT_RULE_UNBLOCK;
    return SO_LAYOUT_RULE_NONE;
}

typedef struct try_ctx {
    const so_graph *g;
    so_fold_ctx *fc;
    so_graph *ng;
    int32_t only_node; /* >= 0: the match must contain this node */
} try_ctx;

static int try_fn(const so_match *m, void *ud)
{
    try_ctx *t = ud;
    if (t->only_node >= 0) {
        int hit = 0;
        for (int k = 0; k < m->rule->src.n_nodes; k++) hit |= m->node[k] == t->only_node;
        if (!hit) return 0;
    }
    so_graph *ng = NULL;
    if (so_rewrite(t->g, m, t->fc, &ng) != SO_OK) return 0; /* e.g. a cycle: try the next match */
    t->ng = ng;
    return 1;
}

/* Applies the first applicable match of the first rule of class cls; 1 if *g was replaced. */
static so_status apply_one(so_graph **g, const so_rule *rules, const int8_t *cls, int32_t n_rules, int want, so_fold_ctx *fc,
                           int32_t *counts, int *done)
{
    so_match_index ix;
    so_match_index_init(&ix, *g);
    ix.share_reorders = 1; /* a reorder with several users cancels or moves for each of them */
    try_ctx t = {*g, fc, NULL, -1};
    *done = 0;
    for (int32_t i = 0; i < n_rules && !t.ng; i++) {
        if (cls[i] != want) continue;
        so_match_rule(&ix, &rules[i], i, try_fn, &t);
        if (t.ng) {
            if (counts) counts[i]++;
            *done = 1;
        }
    }
    so_match_index_free(&ix);
    if (t.ng) {
        so_graph_free(*g);
        *g = t.ng;
    }
    return SO_OK;
}

so_status so_layout_by_rules(const so_graph *g, const so_rule *rules, int32_t n_rules, int b, so_fold_ctx *fc,
                             so_graph **out, int32_t *counts, so_layout_stats *st)
{
    memset(st, 0, sizeof *st);
    int8_t *cls = so_xmalloc((size_t)n_rules + 1);
    int any = 0;
    for (int32_t i = 0; i < n_rules; i++) {
        cls[i] = (int8_t)so_layout_rule_class(&rules[i], b);
        any |= cls[i] == SO_LAYOUT_RULE_SEED;
    }
    so_graph *cur = so_graph_clone(g);
    /* every step lowers (plain operators, reorders) lexicographically (so_layout_rule_class), so
       the loop ends; the cap is a guard against a rule set that breaks that */
    int64_t cap = 8 * (int64_t)g->n_nodes + 64;
    static const int order[3] = {SO_LAYOUT_RULE_REDUCE, SO_LAYOUT_RULE_PUSH, SO_LAYOUT_RULE_SEED};
    for (int64_t step = 0; any && step < cap; step++) {
        int done = 0;
        for (int k = 0; k < 3 && !done; k++)
            if (apply_one(&cur, rules, cls, n_rules, order[k], fc, counts, &done) != SO_OK) {
                so_graph_free(cur);
                free(cls);
                return SO_ERR;
            }
        if (!done) break;
    }
    free(cls);
    for (int32_t i = 0; i < cur->n_nodes; i++) {
        so_op op = cur->nodes[i].op;
        st->convs += op == SO_OP_CONV_NCHWC;
        st->reorders += op == SO_OP_NCHWC_IN || op == SO_OP_NCHWC_OUT;
        if (!(so_ops[op].flags & (SO_F_LAYOUT | SO_F_SOURCE)) && cur->nodes[i].n_out > 0 && cur->nodes[i].out[0].rank == 5) {
            st->concats += op == SO_OP_CONCAT;
            st->elementwise += op != SO_OP_CONCAT;
        }
    }
    *out = cur;
    return SO_OK;
}

so_status so_layout_unblock_at(const so_graph *g, const so_rule *rules, int32_t n_rules, int b, int32_t node, so_fold_ctx *fc,
                               so_graph **out, int32_t *rule_used)
{
    *out = NULL;
    *rule_used = -1;
    so_match_index ix;
    so_match_index_init(&ix, g);
    try_ctx t = {g, fc, NULL, node};
    for (int32_t i = 0; i < n_rules && !t.ng; i++) {
        if (so_layout_rule_class(&rules[i], b) != SO_LAYOUT_RULE_UNBLOCK) continue;
        so_match_rule_at(&ix, &rules[i], i, node, try_fn, &t);
        if (t.ng) *rule_used = i;
    }
    so_match_index_free(&ix);
    *out = t.ng;
    return SO_OK;
}

/* Does rule r (of block b) lower the reorders, whatever it does to the plain operators? (A REDUCE
   rule, or one that runs a blocked operator between a reorder round trip plain again:
   nchwc_out(relu(nchwc_in(X))) = relu(X).) */
static int cancels_reorders(const so_rule *r, int b)
{
    if (so_layout_rule_block(r) != b) return 0;
    int ps, rs_, pd, rd;
    side_potential(r, 0, &ps, &rs_);
    side_potential(r, 1, &pd, &rd);
    return rd < rs_;
}

so_status so_layout_cancel(const so_graph *g, const so_rule *rules, int32_t n_rules, int b, so_fold_ctx *fc, so_graph **out,
                           int32_t *counts)
{
    int8_t *cls = so_xmalloc((size_t)n_rules + 1);
    for (int32_t i = 0; i < n_rules; i++) cls[i] = (int8_t)cancels_reorders(&rules[i], b);
    so_graph *cur = so_graph_clone(g);
    int64_t cap = 8 * (int64_t)g->n_nodes + 64; /* guard, as so_layout_by_rules */
    for (int64_t step = 0; step < cap; step++) {
        int done = 0;
        if (apply_one(&cur, rules, cls, n_rules, 1, fc, counts, &done) != SO_OK) {
            so_graph_free(cur);
            free(cls);
            return SO_ERR;
        }
        if (!done) break;
    }
    free(cls);
    *out = cur;
    return SO_OK;
}

/* The changed nodes' priced ratio new / old (so_cost_graph_diff): 1 when nothing differs. */
static double diff_ratio(double d_new, double d_old) { return d_old > 0 ? d_new / d_old : d_new > 0 ? INFINITY : 1; }

/* What a measured layout decision saw: the cached prices' ratio, and the paired re-timing's (-1: not re-timed). */
typedef struct decided {
    double priced, paired;
    int how; /* SO_PAIRED_* of the re-timing, -1: none */
} decided;

static const char *how_name(int how)
{
    return how == SO_PAIRED_TIMED      ? "re-timed paired"
           : how == SO_PAIRED_RECORDED ? "recorded paired"
           : how == SO_PAIRED_SAME     ? "no difference"
           : how == SO_PAIRED_CUT      ? "priced (re-timing budget spent)"
                                       : "priced";
}

/* Measured (disk-cache) model: is `cand` clearly cheaper than `cur` (their changed nodes beyond SO_COST_NOISE)? The
   cached prices decide alone when they put the change at SO_LAYOUT_RETIME_BELOW or beyond (clearly dearer: no load
   makes that a gain); otherwise both sides are re-timed paired (so_cost_paired_ratio) and that ratio decides. A
   cost table's prices decide alone (medians of interleaved rounds already), as does a re-timing that failed or that
   the budget cut (cm->paired_budget): then the change is not made (a cached "cheaper" under load is the error that
   cascades), except that a change priced dearer is decided by its price either way. */
static int clearly_cheaper(so_cost_model *cm, const so_graph *cand, const so_graph *cur, double d_new, double d_old, decided *dd)
{
    dd->priced = diff_ratio(d_new, d_old);
    dd->paired = -1;
    dd->how = -1;
    int take = so_cost_clearly_lower(d_new, d_old);
    if (cm->table || !(dd->priced < SO_LAYOUT_RETIME_BELOW)) return take;
    /* the dearer side of the band gets only the first half of the budget: the rest is kept for the changes priced
       cheaper, whose false "yes" cascades (session 24: spending it all on the dearer side left ResNet-50's cheaper-
       priced unblocks to the loaded prices, 9 NCHW convs) */
    if (dd->priced >= 1 && !(cm->paired_seconds < cm->paired_budget / 2)) {
        cm->paired_cut++;
        dd->how = SO_PAIRED_CUT;
        return take;
    }
    double r = 1;
    int how = -1;
    if (so_cost_paired_ratio(cm, cand, cur, 1 - SO_COST_NOISE, &r, &how) != SO_OK) return take;
    dd->how = how;
    if (how == SO_PAIRED_CUT) return 0; /* not confirmed: the change is not made (blocked stays blocked) */
    dd->paired = r;
    return so_cost_clearly_lower(r, 1.0);
}

int so_layout_gain(so_cost_model *cm, const so_graph *cand, double cc, const so_graph *cur, double cb, const so_graph *at_g, int32_t at)
{
    if (cm->kind != SO_COST_MEASURED) return cc < cb;
    double d_new = 0, d_old = 0;
    so_cost_graph_diff(cm, cand, cur, &d_new, &d_old);
    decided dd;
    const int take = clearly_cheaper(cm, cand, cur, d_new, d_old, &dd);
    if (getenv("SO_DEBUG_LAYOUT")) { /* what the decision saw (docs/BENCHMARKS.md "layout margin") */
        char d[200];
        fprintf(stderr, "layout %s: plain %.6f ms, blocked %.6f ms, ratio %.4f, %s %.4f, %s\n", so_node_desc(at_g, at, d, sizeof d), d_new,
                d_old, dd.priced, how_name(dd.how), dd.paired, take ? "plain" : "blocked");
    }
    return take;
}

int so_layout_search_keep(so_cost_model *cm, const so_graph *best, double cost_best, const so_graph *placed, double cost_placed)
{
    if (!best) return 0;
    if (cm->kind != SO_COST_MEASURED) return cost_best < cost_placed;
    double d_new = 0, d_old = 0;
    so_cost_graph_diff(cm, best, placed, &d_new, &d_old);
    decided dd;
    const int take = clearly_cheaper(cm, best, placed, d_new, d_old, &dd);
    if (getenv("SO_DEBUG_LAYOUT"))
        fprintf(stderr, "layout search: %.6f -> %.6f ms, changed nodes %.6f -> %.6f ms, ratio %.4f, %s %.4f, %s\n", cost_placed, cost_best, d_old,
                d_new, dd.priced, how_name(dd.how), dd.paired, take ? "kept" : "dropped");
    return take;
}

int so_layout_prefer(so_cost_model *cm, const so_graph *a, double ca, const so_graph *b, double cb, double lo, double hi, int *retimed)
{
    if (retimed) *retimed = 0;
    if (cm->kind != SO_COST_MEASURED || cm->table) return ca < cb;
    double da = 0, db = 0;
    so_cost_graph_diff(cm, a, b, &da, &db);
    const double q = diff_ratio(da, db);
    int take = ca < cb, how = -1;
    double r = -1;
    /* within the caller's band: the two sides re-timed paired decide */
    if (q >= lo && q < hi && so_cost_paired_ratio(cm, a, b, 1.0, &r, &how) == SO_OK) {
        if (how != SO_PAIRED_CUT) {
            take = r < 1;
            if (retimed) *retimed = 1;
        } else if (isinf(hi)) take = 1; /* the budget spent on the apply decision ([1, inf)): the placement is applied */
    }
    if (getenv("SO_DEBUG_LAYOUT"))
        fprintf(stderr, "layout placement: %.6f vs %.6f ms, changed nodes %.6f vs %.6f ms, ratio %.4f, %s %.4f, %s\n", ca, cb, da, db, q,
                how_name(how), r, take ? "first" : "second");
    return take;
}
