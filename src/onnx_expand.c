/* onnx_expand.c - import of ONNX nodes that become several table operators (LayerNormalization with its statistics, MVN, Sum / Mean, Tile of a computed tensor, 1-D conv / pool lifted to 2-D and dilated AveragePool to 3-D, batch-first recurrent ops, Instance / Group / Lp normalization, GlobalMaxPool, Einsum, CenterCropPad, Col2Im, AffineGrid). */
#include "onnx_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Binds tensor `name` to the value v (a copy of a constant, or the same edge). */
static void bind_alias(imp *im, const char *name, const val *v)
{
    if (!v->is_const) {
        onx_bind_edge(im, name, v->e.node, v->e.slot);
        return;
    }
    ctensor cc = v->c;
    size_t bytes = (size_t)onx_ct_numel(&cc) * (cc.shape.dtype == SO_I64 ? 8 : 4);
    cc.data = so_weight_xalloc(bytes, 0);
    memcpy(cc.data, v->c.data, bytes);
    onx_bind_const(im, name, &cc);
}

/* One step of an expansion: op on ins, attribute a (NULL: default); *out = the new value. */
static int step(imp *im, so_op op, val **ins, int n_in, const so_attr *a, const char *nm, val **out)
{
    int32_t i;
    int r = onx_emit(im, op, ins, n_in, 1, a, nm, NULL, 0, &i);
    if (r == SO_OK) *out = onx_anon_edge(im, i, 0);
    return r;
}

/* LayerNormalization with its Mean / InvStdDev outputs, as ONNX's function body defines it:
   mean = ReduceMean(X, axes = axis..rank-1), D = X - mean, inv = 1 / sqrt(ReduceMean(D * D) + eps),
   Y = D * inv * scale (+ B). Table operators only; names bound to the node's outputs. */
int onx_layernorm_expanded(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in, so_shape xs)
{
    so_attr ra;
    memset(&ra, 0, sizeof ra);
    int32_t axis;
    int r;
    if (xs.rank < 1 || onx_att_i(n, "stash_type", 1) != 1) return SO_ERR_UNSUPPORTED;
    if (onx_norm_axis(im, onx_att_i(n, "axis", -1), xs.rank, &axis) != SO_OK) return SO_ERR;
    for (int d = axis; d < xs.rank; d++) ra.ints[ra.n_ints++] = d;
    ra.keepdims = 1;
    ctensor c;
    if (onx_ct_new(im, &c, SO_F32, T_FLOAT, 0, NULL) != SO_OK) return SO_ERR;
    ((float *)c.data)[0] = onx_att_f(n, "epsilon", 1e-5f);
    val *eps = onx_bind_const(im, NULL, &c), *mean, *d, *sq, *var, *ve, *sd, *inv, *y0, *y1, *y;
    const char *nm = onx_node_name(im, n, NULL);
    val *a2[2];
    if ((r = step(im, SO_OP_REDUCEMEAN, &ins[0], 1, &ra, nm, &mean)) != SO_OK) return r;
    a2[0] = ins[0], a2[1] = mean;
    if ((r = step(im, SO_OP_SUB, a2, 2, NULL, nm, &d)) != SO_OK) return r;
    a2[0] = d, a2[1] = d;
    if ((r = step(im, SO_OP_MUL, a2, 2, NULL, nm, &sq)) != SO_OK) return r;
    if ((r = step(im, SO_OP_REDUCEMEAN, &sq, 1, &ra, nm, &var)) != SO_OK) return r;
    a2[0] = var, a2[1] = eps;
    if ((r = step(im, SO_OP_ADD, a2, 2, NULL, nm, &ve)) != SO_OK) return r;
    if ((r = step(im, SO_OP_SQRT, &ve, 1, NULL, nm, &sd)) != SO_OK) return r;
    if ((r = step(im, SO_OP_RECIPROCAL, &sd, 1, NULL, nm, &inv)) != SO_OK) return r;
    a2[0] = d, a2[1] = inv;
    if ((r = step(im, SO_OP_MUL, a2, 2, NULL, nm, &y0)) != SO_OK) return r;
    a2[0] = y0, a2[1] = ins[1];
    if ((r = step(im, SO_OP_MUL, a2, 2, NULL, nm, &y1)) != SO_OK) return r;
    y = y1;
    if (n_in > 2 && ins[2]) {
        a2[0] = y1, a2[1] = ins[2];
        if ((r = step(im, SO_OP_ADD, a2, 2, NULL, nm, &y)) != SO_OK) return r;
    }
    val *res[3] = {y, mean, inv};
    for (size_t k = 0; k < n->n_output && k < 3; k++) {
        if (!n->output[k][0]) continue;
        bind_alias(im, n->output[k], res[k]);
    }
    return SO_OK;
}

/* MeanVarianceNormalization (axes, default [0, 2, 3]): d = X - ReduceMean(X); Y = d / (Sqrt(ReduceMean(d * d)) + 1e-9),
   ONNX's function body (epsilon added to the standard deviation). */
so_status onx_mvn(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in)
{
    if (n_in != 1 || !ins[0] || n->n_output != 1) return onx_node_err(im, "needs 1 input and 1 output");
    so_shape xs = onx_vshape(im, ins[0]);
    if (xs.rank < 0 || xs.dtype != SO_F32) return onx_add_opaque(im, n, ins, n_in);
    const int64_t *p;
    long k = onx_att_ints(n, "axes", &p);
    so_attr ra;
    memset(&ra, 0, sizeof ra);
    int64_t ax[SO_MAX_RANK];
    int nax = 0;
    if (k < 0) {
        if (xs.rank != 4) return onx_node_err(im, "default axes [0, 2, 3] need a 4-D input, got rank %d", (int)xs.rank);
        ax[0] = 0, ax[1] = 2, ax[2] = 3, nax = 3;
    } else {
        if (k > SO_MAX_RANK) return onx_node_err(im, "too many axes");
        for (long i = 0; i < k; i++) ax[nax++] = p[i];
    }
    if (onx_norm_axes(im, ax, nax, xs.rank) != SO_OK) return SO_ERR;
    ra.n_ints = nax;
    memcpy(ra.ints, ax, (size_t)nax * 8);
    ra.keepdims = 1;
    char *const no_name[1] = {(char *)""};
    const char *nm = onx_node_name(im, n, NULL);
    int32_t i_mean, i_d, i_sq, i_var, i_std, i_den;
    int r;
    ctensor eps;
    if (onx_ct_new(im, &eps, SO_F32, T_FLOAT, 0, NULL) != SO_OK) return SO_ERR;
    ((float *)eps.data)[0] = 1e-9f;
    val *e = onx_bind_const(im, NULL, &eps), *v2[2];
    if ((r = onx_emit(im, SO_OP_REDUCEMEAN, ins, 1, 1, &ra, nm, no_name, 1, &i_mean)) != SO_OK) return r;
    v2[0] = ins[0], v2[1] = onx_anon_edge(im, i_mean, 0);
    if ((r = onx_emit(im, SO_OP_SUB, v2, 2, 1, NULL, nm, no_name, 1, &i_d)) != SO_OK) return r;
    v2[0] = v2[1] = onx_anon_edge(im, i_d, 0);
    if ((r = onx_emit(im, SO_OP_MUL, v2, 2, 1, NULL, nm, no_name, 1, &i_sq)) != SO_OK) return r;
    v2[0] = onx_anon_edge(im, i_sq, 0);
    if ((r = onx_emit(im, SO_OP_REDUCEMEAN, v2, 1, 1, &ra, nm, no_name, 1, &i_var)) != SO_OK) return r;
    v2[0] = onx_anon_edge(im, i_var, 0);
    if ((r = onx_emit(im, SO_OP_SQRT, v2, 1, 1, NULL, nm, no_name, 1, &i_std)) != SO_OK) return r;
    v2[0] = onx_anon_edge(im, i_std, 0), v2[1] = e;
    if ((r = onx_emit(im, SO_OP_ADD, v2, 2, 1, NULL, nm, no_name, 1, &i_den)) != SO_OK) return r;
    v2[0] = onx_anon_edge(im, i_d, 0), v2[1] = onx_anon_edge(im, i_den, 0);
    return onx_emit(im, SO_OP_DIV, v2, 2, 1, NULL, nm, n->output, 1, NULL);
}

/* A Conv / ConvTranspose / MaxPool / AveragePool with k spatial axes imported as table operator op with k + 1:
   1-D ([N, C, L]) as the 2-D operator on [N, C, 1, L], and a 2-D AveragePool with dilations as avgpool3d on
   [N, C, 1, H, W] (Unsqueeze axis 2 of the input and of the weight; every spatial attribute lifted with a
   leading 1 or 0: kernel_shape, strides, dilations, output_padding, output_shape, pads) and Squeeze axis 2
   of its output. A form the importer of op does not take keeps the original node verbatim. */
so_status onx_lift(imp *im, const Onnx__NodeProto *n, so_op op, val **ins, size_t n_in)
{
    const int rank = onx_vshape(im, ins[0]).rank, k_sp = rank - 2; /* spatial axes before the lift */
    if (n->n_output != 1) return onx_add_opaque(im, n, ins, n_in); /* MaxPool's indices */
    so_attr ua;
    memset(&ua, 0, sizeof ua);
    ua.n_ints = 1;
    ua.ints[0] = 2;
    char *const no_name[1] = {(char *)""};
    val *lifted[SO_MAX_IN * 2] = {0};
    int r;
    for (size_t k = 0; k < n_in && k < 2; k++) { /* X, and W of the convolutions */
        if (!ins[k] || (k == 1 && op != SO_OP_CONV && op != SO_OP_CONVTRANSPOSE)) continue;
        if (onx_vshape(im, ins[k]).rank != rank) { /* a weight of another rank: the 2-D importer's clear error */
            r = onx_build_op(im, n, op, ins, n_in);
            if (r == SO_ERR_UNSUPPORTED) return onx_add_opaque(im, n, ins, n_in);
            return r == SO_OK ? SO_OK : SO_ERR;
        }
        int32_t ni;
        if ((r = onx_emit(im, SO_OP_UNSQUEEZE, &ins[k], 1, 1, &ua, NULL, no_name, 1, &ni)) != SO_OK) return r;
        lifted[k] = onx_anon_edge(im, ni, 0);
    }
    for (size_t k = 0; k < n_in; k++)
        if (!lifted[k]) lifted[k] = ins[k];
    /* the node with lifted attributes and a temporary output name */
    Onnx__NodeProto n2 = *n;
    Onnx__AttributeProto *at = so_xcalloc(n->n_attribute + 1, sizeof *at), **ap = so_xcalloc(n->n_attribute + 1, sizeof *ap);
    int64_t *iv = so_xcalloc(n->n_attribute * 6 + 1, sizeof *iv);
    char out_name[600];
    char *outs[1] = {out_name};
    snprintf(out_name, sizeof out_name, "%s\x01lifted", n->output[0]);
    n2.attribute = ap;
    n2.output = outs;
    for (size_t k = 0; k < n->n_attribute; k++) {
        const Onnx__AttributeProto *a = n->attribute[k];
        at[k] = *a;
        ap[k] = &at[k];
        const char *nm = a->name ? a->name : "";
        int pads = !strcmp(nm, "pads"), zero = !strcmp(nm, "output_padding");
        if (!pads && !zero && strcmp(nm, "kernel_shape") && strcmp(nm, "strides") && strcmp(nm, "dilations") && strcmp(nm, "output_shape")) continue;
        if (a->n_ints != (size_t)(pads ? 2 * k_sp : k_sp) || k_sp > 2) {
            r = onx_add_opaque(im, n, ins, n_in);
            goto out;
        }
        int64_t *v = iv + 6 * k;
        if (pads) {
            v[0] = v[k_sp + 1] = 0;
            for (int j = 0; j < k_sp; j++) v[1 + j] = a->ints[j], v[k_sp + 2 + j] = a->ints[k_sp + j];
        } else {
            v[0] = zero ? 0 : 1;
            for (int j = 0; j < k_sp; j++) v[1 + j] = a->ints[j];
        }
        at[k].ints = v;
        at[k].n_ints = (size_t)(pads ? 2 * (k_sp + 1) : k_sp + 1);
    }
    r = onx_build_op(im, &n2, op, lifted, n_in);
    if (r == SO_ERR_UNSUPPORTED) r = onx_add_opaque(im, n, ins, n_in);
    else if (r == SO_OK) {
        val *y = onx_lookup(im, out_name);
        if (!y) r = onx_node_err(im, "lifted output missing");
        else r = onx_emit(im, SO_OP_SQUEEZE, &y, 1, 1, &ua, NULL, n->output, 1, NULL);
    }
out:
    free(at);
    free(ap);
    free(iv);
    return r;
}

/* LSTM / GRU / RNN with layout = 1 (batch first: X [N,T,I], initial states [N,D,H], Y [N,T,D,H], last states
   [N,D,H]): imported as the layout-0 operator between Transposes (X and the initial states in, every output out).
   A form the layout-0 importer does not take keeps the original node verbatim. */
so_status onx_recurrent_batch_first(imp *im, const Onnx__NodeProto *n, so_op op, val **ins, size_t n_in)
{
    so_attr t3, t4;
    memset(&t3, 0, sizeof t3);
    memset(&t4, 0, sizeof t4);
    t3.n_ints = 3, t3.ints[0] = 1, t3.ints[1] = 0, t3.ints[2] = 2;                 /* [N,T,I] <-> [T,N,I], [D,N,H] <-> [N,D,H] */
    t4.n_ints = 4, t4.ints[0] = 2, t4.ints[1] = 0, t4.ints[2] = 1, t4.ints[3] = 3; /* [T,D,N,H] -> [N,T,D,H] */
    char *const no_name[1] = {(char *)""};
    val *moved[SO_MAX_IN] = {0};
    int r;
    for (size_t k = 0; k < n_in && k < SO_MAX_IN; k++) {
        moved[k] = ins[k];
        if (!ins[k] || (k != 0 && k != 5 && k != 6)) continue;
        if (onx_vshape(im, ins[k]).rank != 3) return onx_add_opaque(im, n, ins, n_in);
        int32_t ni;
        if ((r = onx_emit(im, SO_OP_TRANSPOSE, &ins[k], 1, 1, &t3, NULL, no_name, 1, &ni)) != SO_OK) return r;
        moved[k] = onx_anon_edge(im, ni, 0);
    }
    Onnx__NodeProto n2 = *n;
    Onnx__AttributeProto **ap = so_xcalloc(n->n_attribute + 1, sizeof *ap);
    char (*tmp)[600] = so_xcalloc(n->n_output + 1, sizeof *tmp);
    char **outs = so_xcalloc(n->n_output + 1, sizeof *outs);
    n2.n_attribute = 0;
    n2.attribute = ap;
    for (size_t k = 0; k < n->n_attribute; k++)
        if (!n->attribute[k]->name || strcmp(n->attribute[k]->name, "layout")) ap[n2.n_attribute++] = n->attribute[k];
    for (size_t k = 0; k < n->n_output; k++) {
        if (n->output[k][0]) snprintf(tmp[k], sizeof tmp[k], "%s\x01" "batch_first", n->output[k]);
        outs[k] = tmp[k];
    }
    n2.output = outs;
    r = onx_build_op(im, &n2, op, moved, n_in);
    if (r == SO_ERR_UNSUPPORTED) r = onx_add_opaque(im, n, ins, n_in);
    else if (r == SO_OK) {
        for (size_t k = 0; k < n->n_output && r == SO_OK; k++) {
            if (!n->output[k][0]) continue;
            val *y = onx_lookup(im, tmp[k]);
            if (!y) r = onx_node_err(im, "batch-first output %d missing", (int)k);
            else r = onx_emit(im, SO_OP_TRANSPOSE, &y, 1, 1, k == 0 ? &t4 : &t3, NULL, &n->output[k], 1, NULL);
        }
    }
    free(ap);
    free(tmp);
    free(outs);
    return r;
}

/* Tile of a computed tensor by constant repeats: per axis, a Concat of that many copies. */
so_status onx_tile_concat(imp *im, const Onnx__NodeProto *n, val **ins)
{
    so_shape xs = onx_vshape(im, ins[0]);
    int64_t rep[SO_MAX_RANK];
    int cnt = 0, r;
    if (xs.rank < 0) return onx_add_opaque(im, n, ins, 2);
    if ((r = onx_const_ints(im, ins[1], rep, SO_MAX_RANK, &cnt, "repeats")) != SO_OK) return r;
    if (cnt != xs.rank) return onx_node_err(im, "repeats has %d entries for rank %d", cnt, xs.rank);
    val *acc = ins[0];
    for (int d = 0; d < xs.rank; d++) {
        if (rep[d] < 1 || rep[d] > SO_MAX_IN) {
            if (rep[d] == 1) continue;
            return onx_add_opaque(im, n, ins, 2); /* 0 (empty) or more copies than a Concat takes */
        }
        if (rep[d] == 1) continue;
        val *copies[SO_MAX_IN];
        for (int64_t k = 0; k < rep[d]; k++) copies[k] = acc;
        so_attr ca;
        memset(&ca, 0, sizeof ca);
        ca.axis = d;
        int32_t idx;
        if ((r = onx_emit(im, SO_OP_CONCAT, copies, (int)rep[d], 1, &ca, onx_node_name(im, n, NULL), NULL, 0, &idx)) != SO_OK) return r;
        acc = onx_anon_edge(im, idx, 0);
    }
    if (n->n_output < 1 || !n->output[0][0]) return SO_OK;
    bind_alias(im, n->output[0], acc);
    return SO_OK;
}

/* Sum / Mean of one or more inputs: a chain of Add (Mean: then divided by the count). */
so_status onx_sum_mean(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in)
{
    val *acc = NULL;
    int cnt = 0, r;
    const char *nm = onx_node_name(im, n, NULL);
    int mean = !strcmp(n->op_type, "Mean");
    for (size_t j = 0; j < n_in; j++) {
        if (!ins[j]) continue;
        cnt++;
        if (!acc) {
            acc = ins[j];
            continue;
        }
        val *pair[2] = {acc, ins[j]};
        int32_t idx;
        if ((r = onx_emit(im, SO_OP_ADD, pair, 2, 1, NULL, nm, NULL, 0, &idx)) != SO_OK) return r;
        acc = onx_anon_edge(im, idx, 0);
    }
    if (!acc) return onx_node_err(im, "has no inputs");
    if (mean && cnt > 1) {
        ctensor c;
        if (onx_ct_new(im, &c, SO_F32, T_FLOAT, 0, NULL) != SO_OK) return SO_ERR;
        ((float *)c.data)[0] = (float)cnt;
        val *pair[2] = {acc, onx_bind_const(im, NULL, &c)};
        int32_t idx;
        if ((r = onx_emit(im, SO_OP_DIV, pair, 2, 1, NULL, nm, NULL, 0, &idx)) != SO_OK) return r;
        acc = onx_anon_edge(im, idx, 0);
    }
    if (n->n_output < 1 || !n->output[0][0]) return SO_OK;
    bind_alias(im, n->output[0], acc);
    return SO_OK;
}

/* Unsqueezes a [C] (or [G]) parameter to [C, 1, ..., 1] (`trail` ones) so that it broadcasts over the
   channel axis of a [N, C, ...] tensor. */
static int per_channel(imp *im, val *p, int trail, const char *nm, val **out)
{
    so_attr ua;
    memset(&ua, 0, sizeof ua);
    for (int d = 0; d < trail; d++) ua.ints[ua.n_ints++] = d + 1;
    if (!trail) {
        *out = p;
        return SO_OK;
    }
    return step(im, SO_OP_UNSQUEEZE, &p, 1, &ua, nm, out);
}

/* (x - mean) / sqrt(var + eps) over the axes in ra (keepdims): the normalisation the Instance / Group
   normalizations share (ONNX's function bodies: variance of the deviations, epsilon inside the root). */
static int normalize(imp *im, val *x, const so_attr *ra, float eps_v, const char *nm, val **out)
{
    ctensor c;
    int r;
    if (onx_ct_new(im, &c, SO_F32, T_FLOAT, 0, NULL) != SO_OK) return SO_ERR;
    ((float *)c.data)[0] = eps_v;
    val *eps = onx_bind_const(im, NULL, &c), *mean, *d, *sq, *var, *ve, *sd, *a2[2];
    if ((r = step(im, SO_OP_REDUCEMEAN, &x, 1, ra, nm, &mean)) != SO_OK) return r;
    a2[0] = x, a2[1] = mean;
    if ((r = step(im, SO_OP_SUB, a2, 2, NULL, nm, &d)) != SO_OK) return r;
    a2[0] = d, a2[1] = d;
    if ((r = step(im, SO_OP_MUL, a2, 2, NULL, nm, &sq)) != SO_OK) return r;
    if ((r = step(im, SO_OP_REDUCEMEAN, &sq, 1, ra, nm, &var)) != SO_OK) return r;
    a2[0] = var, a2[1] = eps;
    if ((r = step(im, SO_OP_ADD, a2, 2, NULL, nm, &ve)) != SO_OK) return r;
    if ((r = step(im, SO_OP_SQRT, &ve, 1, NULL, nm, &sd)) != SO_OK) return r;
    a2[0] = d, a2[1] = sd;
    return step(im, SO_OP_DIV, a2, 2, NULL, nm, out);
}

/* y * scale + bias, scale and bias [C] broadcast over the channel axis of rank-`rank` y. */
static int scale_bias(imp *im, val *y, val *scale, val *bias, int rank, const char *nm, val **out)
{
    val *s, *b, *ys, *a2[2];
    int r;
    if ((r = per_channel(im, scale, rank - 2, nm, &s)) != SO_OK) return r;
    if ((r = per_channel(im, bias, rank - 2, nm, &b)) != SO_OK) return r;
    a2[0] = y, a2[1] = s;
    if ((r = step(im, SO_OP_MUL, a2, 2, NULL, nm, &ys)) != SO_OK) return r;
    a2[0] = ys, a2[1] = b;
    return step(im, SO_OP_ADD, a2, 2, NULL, nm, out);
}

/* The preamble of the reductions over the spatial axes (InstanceNormalization, GlobalMaxPool): n_want inputs,
   one output, X [N, C, D1, ...] float32; fills *xs with X's shape and *ra with the spatial axes, kept. Returns 1
   to go on, else 0 with *st the status to return (the node kept opaque: X's shape or type unknown; or an error). */
static int spatial_axes(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in, size_t n_want, so_shape *xs, so_attr *ra,
                        so_status *st)
{
    int ok = n_in == n_want && n->n_output == 1;
    for (size_t k = 0; ok && k < n_in; k++) ok = ins[k] != NULL;
    if (!ok) return *st = onx_node_err(im, "needs %d input%s and 1 output", (int)n_want, n_want == 1 ? "" : "s"), 0;
    *xs = onx_vshape(im, ins[0]);
    if (xs->rank < 0 || xs->dtype != SO_F32) return *st = onx_add_opaque(im, n, ins, n_in), 0;
    if (xs->rank < 3) return *st = onx_node_err(im, "input of rank %d, expected [N, C, D1, ...]", (int)xs->rank), 0;
    memset(ra, 0, sizeof *ra);
    for (int d = 2; d < xs->rank; d++) ra->ints[ra->n_ints++] = d;
    ra->keepdims = 1;
    return 1;
}

/* InstanceNormalization (X [N, C, ...], scale [C], B [C], epsilon): normalised over the spatial axes per sample
   and channel, then scaled and shifted per channel. */
so_status onx_instancenorm(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in)
{
    so_shape xs;
    so_attr ra;
    so_status st;
    if (!spatial_axes(im, n, ins, n_in, 3, &xs, &ra, &st)) return st;
    const char *nm = onx_node_name(im, n, NULL);
    val *y, *out;
    int r;
    if ((r = normalize(im, ins[0], &ra, onx_att_f(n, "epsilon", 1e-5f), nm, &y)) != SO_OK) return r;
    if ((r = scale_bias(im, y, ins[1], ins[2], xs.rank, nm, &out)) != SO_OK) return r;
    bind_alias(im, n->output[0], out);
    return SO_OK;
}

/* GroupNormalization (X [N, C, ...], scale, bias, epsilon, num_groups): X viewed as [N, G, C/G * spatial],
   normalised over the last axis, viewed back; then scale and bias per channel ([C], opset 21) or per group
   ([G], opset 18: applied on the grouped view). */
so_status onx_groupnorm(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in)
{
    if (n_in != 3 || !ins[0] || !ins[1] || !ins[2] || n->n_output != 1) return onx_node_err(im, "needs 3 inputs and 1 output");
    so_shape xs = onx_vshape(im, ins[0]), ss = onx_vshape(im, ins[1]);
    if (xs.rank < 0 || xs.dtype != SO_F32 || ss.rank < 0) return onx_add_opaque(im, n, ins, n_in);
    if (onx_att_i(n, "stash_type", 1) != 1) return onx_node_err(im, "stash_type %lld is not supported (1: float)", (long long)onx_att_i(n, "stash_type", 1));
    int64_t g = onx_att_i(n, "num_groups", 0);
    if (xs.rank < 3) return onx_node_err(im, "input of rank %d, expected [N, C, D1, ...]", (int)xs.rank);
    if (g <= 0 || xs.dim[1] % g) return onx_node_err(im, "num_groups %lld does not divide the %lld channels", (long long)g, (long long)xs.dim[1]);
    int per_group = im->opset < 21 && g != xs.dim[1];
    int64_t want = per_group ? g : xs.dim[1];
    if (ss.rank != 1 || ss.dim[0] != want) return onx_node_err(im, "scale of shape rank %d, expected [%lld]", (int)ss.rank, (long long)want);
    const char *nm = onx_node_name(im, n, NULL);
    so_attr va, ra;
    memset(&va, 0, sizeof va);
    memset(&ra, 0, sizeof ra);
    va.n_ints = 3;
    va.ints[0] = xs.dim[0], va.ints[1] = g, va.ints[2] = so_shape_numel(&xs) / xs.dim[0] / g;
    ra.n_ints = 1, ra.ints[0] = 2, ra.keepdims = 1;
    val *xg, *y, *yb, *out;
    int r;
    if ((r = step(im, SO_OP_RESHAPE, &ins[0], 1, &va, nm, &xg)) != SO_OK) return r;
    if ((r = normalize(im, xg, &ra, onx_att_f(n, "epsilon", 1e-5f), nm, &y)) != SO_OK) return r;
    if (per_group && (r = scale_bias(im, y, ins[1], ins[2], 3, nm, &y)) != SO_OK) return r;
    memset(&va, 0, sizeof va);
    va.n_ints = xs.rank;
    for (int d = 0; d < xs.rank; d++) va.ints[d] = xs.dim[d];
    if ((r = step(im, SO_OP_RESHAPE, &y, 1, &va, nm, &yb)) != SO_OK) return r;
    out = yb;
    if (!per_group && (r = scale_bias(im, yb, ins[1], ins[2], xs.rank, nm, &out)) != SO_OK) return r;
    bind_alias(im, n->output[0], out);
    return SO_OK;
}

/* GlobalMaxPool: ReduceMax over the spatial axes, kept. */
so_status onx_globalmaxpool(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in)
{
    so_shape xs;
    so_attr ra;
    so_status st;
    if (!spatial_axes(im, n, ins, n_in, 1, &xs, &ra, &st)) return st;
    return onx_emit(im, SO_OP_REDUCEMAX, ins, 1, 1, &ra, onx_node_name(im, n, NULL), n->output, 1, NULL);
}

/* LpNormalization (axis, p 1 or 2): x / ReduceL1 or ReduceL2 over the axis, kept. */
so_status onx_lpnorm(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in)
{
    if (n_in != 1 || !ins[0] || n->n_output != 1) return onx_node_err(im, "needs 1 input and 1 output");
    so_shape xs = onx_vshape(im, ins[0]);
    if (xs.rank < 0 || xs.dtype != SO_F32) return onx_add_opaque(im, n, ins, n_in);
    int64_t p = onx_att_i(n, "p", 2);
    if (p != 1 && p != 2) return onx_node_err(im, "p = %lld (1 or 2 are defined)", (long long)p);
    int32_t axis;
    if (onx_norm_axis(im, onx_att_i(n, "axis", -1), xs.rank, &axis) != SO_OK) return SO_ERR;
    so_attr ra;
    memset(&ra, 0, sizeof ra);
    ra.n_ints = 1, ra.ints[0] = axis, ra.keepdims = 1;
    const char *nm = onx_node_name(im, n, NULL);
    val *norm, *a2[2];
    int r;
    if ((r = step(im, p == 1 ? SO_OP_REDUCEL1 : SO_OP_REDUCEL2, &ins[0], 1, &ra, nm, &norm)) != SO_OK) return r;
    a2[0] = ins[0], a2[1] = norm;
    return onx_emit(im, SO_OP_DIV, a2, 2, 1, NULL, nm, n->output, 1, NULL);
}

/* ---- Einsum ---- */

#define EIN_MAX 12 /* labels per operand (SO_MAX_RANK bounds what the table takes) */

/* One operand's labels: letters, "..." expanded to `ell` fresh labels ('0'..). Returns the count, -1 if malformed. */
static int ein_labels(const char *s, size_t len, int ell, char *out)
{
    int k = 0, dots = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') continue;
        if (s[i] == '.') {
            if (i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.' || dots++) return -1;
            for (int e = 0; e < ell; e++) {
                if (k == EIN_MAX) return -1;
                out[k++] = (char)('0' + e);
            }
            i += 2;
            continue;
        }
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')) || k == EIN_MAX) return -1;
        out[k++] = s[i];
    }
    return k;
}

static int ein_has(const char *l, int n, char c)
{
    for (int i = 0; i < n; i++)
        if (l[i] == c) return 1;
    return 0;
}

/* Sums operand v (labels l[0..n)) over the labels `keep` lacks; on return l / n are the kept labels. */
static int ein_sum_out(imp *im, val **v, char *l, int *n, const char *k1, int n1, const char *k2, int n2, const char *nm)
{
    so_attr ra;
    memset(&ra, 0, sizeof ra);
    char kept[EIN_MAX];
    int nk = 0;
    for (int i = 0; i < *n; i++) {
        if (ein_has(k1, n1, l[i]) || ein_has(k2, n2, l[i])) kept[nk++] = l[i];
        else ra.ints[ra.n_ints++] = i;
    }
    if (!ra.n_ints) return SO_OK;
    ra.keepdims = 0;
    int r = step(im, SO_OP_REDUCESUM, v, 1, &ra, nm, v);
    memcpy(l, kept, (size_t)nk);
    *n = nk;
    return r;
}

/* Transposes v (labels l[0..n)) into the label order `want` (a permutation of l). */
static int ein_permute(imp *im, val **v, const char *l, int n, const char *want, const char *nm)
{
    so_attr ta;
    memset(&ta, 0, sizeof ta);
    int id = 1;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++)
            if (l[j] == want[i]) ta.ints[i] = j;
        id &= ta.ints[i] == i;
    }
    if (id) return SO_OK;
    ta.n_ints = n;
    return step(im, SO_OP_TRANSPOSE, v, 1, &ta, nm, v);
}

static int ein_reshape(imp *im, val **v, const int64_t *dims, int n, const char *nm)
{
    so_attr ra;
    memset(&ra, 0, sizeof ra);
    ra.n_ints = n;
    for (int i = 0; i < n; i++) ra.ints[i] = dims[i];
    so_shape s = onx_vshape(im, *v);
    if (s.rank == n && !memcmp(s.dim, dims, (size_t)n * sizeof *dims)) return SO_OK;
    return step(im, SO_OP_RESHAPE, v, 1, &ra, nm, v);
}

/* Einsum of one or two float operands: each label at most once per operand (no diagonals), "..." the same
   dimensions in both; an explicit output, or the implicit one (labels seen once, sorted, after the "..."
   ones). Labels an operand alone has and the output lacks are summed first; two operands then become one
   MatMul of [batch, kept A, contracted] by [batch, contracted, kept B] (Transpose, Reshape), reshaped and
   transposed to the output. */
so_status onx_einsum(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in)
{
    const Onnx__AttributeProto *ea = onx_att(n, "equation");
    if (!ea || !ea->s.len) return onx_node_err(im, "needs an equation");
    if (n->n_output != 1) return onx_node_err(im, "needs 1 output");
    if (n_in < 1 || n_in > 2 || !ins[0] || (n_in == 2 && !ins[1])) return onx_add_opaque(im, n, ins, n_in);
    so_shape xs[2];
    for (size_t k = 0; k < n_in; k++) {
        xs[k] = onx_vshape(im, ins[k]);
        if (xs[k].rank < 0 || xs[k].dtype != SO_F32) return onx_add_opaque(im, n, ins, n_in);
    }
    const char *eq = (const char *)ea->s.data, *arrow = NULL;
    size_t len = ea->s.len;
    for (size_t i = 0; i + 1 < len; i++)
        if (eq[i] == '-' && eq[i + 1] == '>') arrow = eq + i;
    size_t lhs = arrow ? (size_t)(arrow - eq) : len;
    const char *comma = memchr(eq, ',', lhs);
    if ((comma != NULL) != (n_in == 2)) return onx_node_err(im, "equation '%.*s' does not have %zu operands", (int)len, eq, n_in);
    char l[2][EIN_MAX], out[EIN_MAX];
    int nl[2], no = 0;
    const char *part[2] = {eq, comma ? comma + 1 : NULL};
    size_t plen[2] = {comma ? (size_t)(comma - eq) : lhs, comma ? lhs - (size_t)(comma + 1 - eq) : 0};
    int ell = -1;
    for (size_t k = 0; k < n_in; k++) {
        int letters = 0, dots = 0;
        for (size_t i = 0; i < plen[k]; i++) letters += part[k][i] != '.' && part[k][i] != ' ', dots += part[k][i] == '.';
        int e = dots ? xs[k].rank - letters : 0;
        if (e < 0 || (dots && ell >= 0 && e != ell)) return onx_node_err(im, "'...' covers different ranks in equation '%.*s'", (int)len, eq);
        if (dots) ell = e;
        if ((nl[k] = ein_labels(part[k], plen[k], e, l[k])) != xs[k].rank)
            return onx_node_err(im, "equation '%.*s' does not fit operand %zu of rank %d", (int)len, eq, k, (int)xs[k].rank);
        for (int i = 0; i < nl[k]; i++)
            for (int j = 0; j < i; j++)
                if (l[k][i] == l[k][j]) return onx_add_opaque(im, n, ins, n_in); /* a diagonal */
    }
    if (arrow) {
        if ((no = ein_labels(arrow + 2, len - lhs - 2, ell > 0 ? ell : 0, out)) < 0) return onx_node_err(im, "malformed equation '%.*s'", (int)len, eq);
    } else { /* implicit output: the "..." labels, then the letters seen once, in alphabetical order */
        for (int e = 0; e < (ell > 0 ? ell : 0); e++) out[no++] = (char)('0' + e);
        for (int c = 'A'; c <= 'z'; c++) {
            int cnt = 0;
            for (size_t k = 0; k < n_in; k++) cnt += ein_has(l[k], nl[k], (char)c);
            if (cnt == 1 && (c < '0' || c > '9')) out[no++] = (char)c;
        }
    }
    int64_t dim_of[128];
    for (int c = 0; c < 128; c++) dim_of[c] = -1;
    for (size_t k = 0; k < n_in; k++)
        for (int i = 0; i < nl[k]; i++) {
            int c = (unsigned char)l[k][i];
            if (dim_of[c] >= 0 && dim_of[c] != xs[k].dim[i])
                return onx_node_err(im, "label '%c' has sizes %lld and %lld", l[k][i], (long long)dim_of[c], (long long)xs[k].dim[i]);
            dim_of[c] = xs[k].dim[i];
        }
    for (int i = 0; i < no; i++)
        if (dim_of[(unsigned char)out[i]] < 0) return onx_node_err(im, "output label '%c' is in no operand", out[i]);
    const char *nm = onx_node_name(im, n, NULL);
    val *v[2] = {ins[0], n_in == 2 ? ins[1] : NULL};
    int r;
    if (n_in == 1) {
        if ((r = ein_sum_out(im, &v[0], l[0], &nl[0], out, no, out, no, nm)) != SO_OK) return r;
        if ((r = ein_permute(im, &v[0], l[0], nl[0], out, nm)) != SO_OK) return r;
        bind_alias(im, n->output[0], v[0]);
        return SO_OK;
    }
    for (int k = 0; k < 2; k++) /* labels only this operand has and the output lacks */
        if ((r = ein_sum_out(im, &v[k], l[k], &nl[k], out, no, l[1 - k], nl[1 - k], nm)) != SO_OK) return r;
    char bat[EIN_MAX], ka[EIN_MAX], kb[EIN_MAX], con[EIN_MAX], wa[EIN_MAX], wb[EIN_MAX], mo[EIN_MAX];
    int nb = 0, nka = 0, nkb = 0, nc = 0;
    for (int i = 0; i < nl[0]; i++) {
        char c = l[0][i];
        if (ein_has(l[1], nl[1], c)) {
            if (ein_has(out, no, c)) bat[nb++] = c;
            else con[nc++] = c;
        } else
            ka[nka++] = c;
    }
    for (int i = 0; i < nl[1]; i++)
        if (!ein_has(l[0], nl[0], l[1][i])) kb[nkb++] = l[1][i];
    int64_t B = 1, M = 1, K = 1, N = 1, d3[3];
    for (int i = 0; i < nb; i++) B *= dim_of[(unsigned char)bat[i]];
    for (int i = 0; i < nka; i++) M *= dim_of[(unsigned char)ka[i]];
    for (int i = 0; i < nkb; i++) N *= dim_of[(unsigned char)kb[i]];
    for (int i = 0; i < nc; i++) K *= dim_of[(unsigned char)con[i]];
    memcpy(wa, bat, (size_t)nb), memcpy(wa + nb, ka, (size_t)nka), memcpy(wa + nb + nka, con, (size_t)nc);
    memcpy(wb, bat, (size_t)nb), memcpy(wb + nb, con, (size_t)nc), memcpy(wb + nb + nc, kb, (size_t)nkb);
    if ((r = ein_permute(im, &v[0], l[0], nl[0], wa, nm)) != SO_OK) return r;
    if ((r = ein_permute(im, &v[1], l[1], nl[1], wb, nm)) != SO_OK) return r;
    d3[0] = B, d3[1] = M, d3[2] = K;
    if ((r = ein_reshape(im, &v[0], d3, 3, nm)) != SO_OK) return r;
    d3[1] = K, d3[2] = N;
    if ((r = ein_reshape(im, &v[1], d3, 3, nm)) != SO_OK) return r;
    val *y;
    if ((r = step(im, SO_OP_MATMUL, v, 2, NULL, nm, &y)) != SO_OK) return r;
    int64_t od[EIN_MAX];
    int nmo = 0;
    for (int i = 0; i < nb; i++) mo[nmo] = bat[i], od[nmo++] = dim_of[(unsigned char)bat[i]];
    for (int i = 0; i < nka; i++) mo[nmo] = ka[i], od[nmo++] = dim_of[(unsigned char)ka[i]];
    for (int i = 0; i < nkb; i++) mo[nmo] = kb[i], od[nmo++] = dim_of[(unsigned char)kb[i]];
    if (nmo != no) return onx_node_err(im, "equation '%.*s': output labels do not match the operands", (int)len, eq);
    if (nmo > SO_MAX_RANK) return onx_add_opaque(im, n, ins, n_in);
    if ((r = ein_reshape(im, &y, od, nmo, nm)) != SO_OK) return r;
    if ((r = ein_permute(im, &y, mo, nmo, out, nm)) != SO_OK) return r;
    bind_alias(im, n->output[0], y);
    return SO_OK;
}

/* ---- CenterCropPad, Col2Im, AffineGrid (opsets 18 and 20): expanded into table operators ---- */

/* CenterCropPad (input, shape a constant; axes attribute, default every axis): each listed axis padded with zeros
   to the target (floor of half the difference before) by `pad`, then cropped to it (floor of half the
   difference dropped before) by `slice`, as ONNX's function body defines it. */
so_status onx_centercroppad(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in)
{
    if (n_in != 2 || !ins[0] || !ins[1] || n->n_output != 1) return onx_node_err(im, "needs 2 inputs and 1 output");
    so_shape xs = onx_vshape(im, ins[0]);
    if (xs.rank < 0) return onx_add_opaque(im, n, ins, n_in);
    int64_t target[SO_MAX_RANK], axes[SO_MAX_RANK];
    int nt = 0, na = xs.rank, present = 0, r;
    if (!ins[1]->is_const) return onx_add_opaque(im, n, ins, n_in); /* a computed shape */
    if ((r = onx_const_ints(im, ins[1], target, SO_MAX_RANK, &nt, "shape")) != SO_OK) return r;
    const int64_t *p;
    long k = onx_att_ints(n, "axes", &p);
    if (k >= 0) {
        if (k > SO_MAX_RANK) return onx_node_err(im, "has %ld axes", k);
        na = (int)k, present = 1;
        for (int i = 0; i < na; i++) axes[i] = p[i];
        if (onx_norm_axes(im, axes, na, xs.rank) != SO_OK) return SO_ERR;
    } else {
        for (int i = 0; i < na; i++) axes[i] = i;
    }
    if (nt != na) return onx_node_err(im, "shape has %d values for %d %s", nt, na, present ? "axes listed" : "axes of the input");
    so_attr pa, sa;
    memset(&pa, 0, sizeof pa);
    memset(&sa, 0, sizeof sa);
    pa.n_ints = 2 * xs.rank;
    int padded = 0;
    for (int i = 0; i < na; i++) {
        int64_t d = xs.dim[axes[i]], t = target[i];
        if (t <= 0) return onx_node_err(im, "target %lld on axis %lld is not positive", (long long)t, (long long)axes[i]);
        if (t > d) {
            pa.ints[axes[i]] = (t - d) / 2, pa.ints[xs.rank + axes[i]] = t - d - (t - d) / 2;
            padded = 1;
        } else if (t < d) {
            int64_t *q = sa.ints + 4 * (sa.n_ints / 4);
            q[0] = axes[i], q[1] = (d - t) / 2, q[2] = (d - t) / 2 + t, q[3] = 1;
            sa.n_ints += 4;
        }
    }
    const char *nm = onx_node_name(im, n, NULL);
    val *y = ins[0];
    if (padded && (r = step(im, SO_OP_PAD, &y, 1, &pa, nm, &y)) != SO_OK) return r;
    if (sa.n_ints && (r = step(im, SO_OP_SLICE, &y, 1, &sa, nm, &y)) != SO_OK) return r;
    bind_alias(im, n->output[0], y);
    return SO_OK;
}

/* Col2Im (input [N, C*kh*kw, L], image_shape and block_shape constants of 2 values; dilations, pads, strides):
   the input viewed as [N, C*kh*kw, Lh, Lw] (`reshape`), then a `convtranspose` of C groups whose weight
   [C*kh*kw, 1, kh, kw] is one at each channel's own kernel position, output_padding making the image size. */
so_status onx_col2im(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in)
{
    if (n_in != 3 || !ins[0] || !ins[1] || !ins[2] || n->n_output != 1) return onx_node_err(im, "needs 3 inputs and 1 output");
    so_shape xs = onx_vshape(im, ins[0]);
    if (xs.rank != 3 || xs.dtype != SO_F32 || !ins[1]->is_const || !ins[2]->is_const) return onx_add_opaque(im, n, ins, n_in);
    int64_t img[3], blk[3], dil[2] = {1, 1}, str[2] = {1, 1}, pad[4] = {0, 0, 0, 0};
    int ni, nb, r;
    if ((r = onx_const_ints(im, ins[1], img, 3, &ni, "image_shape")) != SO_OK) return r;
    if ((r = onx_const_ints(im, ins[2], blk, 3, &nb, "block_shape")) != SO_OK) return r;
    if (ni != 2 || nb != 2) return onx_add_opaque(im, n, ins, n_in); /* not 2-D: kept verbatim */
    static const char *const names[3] = {"dilations", "strides", "pads"};
    int64_t *dst[3] = {dil, str, pad};
    for (int q = 0; q < 3; q++) {
        const int64_t *p;
        long k = onx_att_ints(n, names[q], &p);
        if (k < 0) continue;
        if (k != (q == 2 ? 4 : 2)) return onx_node_err(im, "%s has %ld values for 2 spatial axes", names[q], k);
        for (long i = 0; i < k; i++) dst[q][i] = p[i];
    }
    int64_t L[2], kk = blk[0] * blk[1];
    for (int i = 0; i < 2; i++) {
        if (img[i] <= 0 || blk[i] <= 0 || dil[i] <= 0 || str[i] <= 0 || pad[i] < 0 || pad[i + 2] < 0 || img[i] > INT32_MAX || blk[i] > 64)
            return onx_node_err(im, "invalid image_shape, block_shape, dilations, strides or pads");
        int64_t span = img[i] + pad[i] + pad[i + 2] - (dil[i] * (blk[i] - 1) + 1);
        if (span < 0) return onx_node_err(im, "block %lld with dilation %lld does not fit the padded image %lld", (long long)blk[i], (long long)dil[i], (long long)img[i]);
        L[i] = span / str[i] + 1;
    }
    if (xs.dim[1] % kk || xs.dim[2] != L[0] * L[1])
        return onx_node_err(im, "input [%lld, %lld, %lld] does not hold C x %lld channels of %lld x %lld blocks", (long long)xs.dim[0],
                            (long long)xs.dim[1], (long long)xs.dim[2], (long long)kk, (long long)L[0], (long long)L[1]);
    int64_t C = xs.dim[1] / kk;
    if (C > INT32_MAX) return onx_node_err(im, "too many channels");
    so_attr va, ca;
    memset(&va, 0, sizeof va);
    memset(&ca, 0, sizeof ca);
    va.n_ints = 4, va.ints[0] = xs.dim[0], va.ints[1] = xs.dim[1], va.ints[2] = L[0], va.ints[3] = L[1];
    ca.group = (int32_t)C;
    ca.n_ints = 2;
    for (int i = 0; i < 2; i++) {
        ca.stride[i] = (int32_t)str[i], ca.dilation[i] = (int32_t)dil[i];
        ca.pad[i] = (int32_t)pad[i], ca.pad[2 + i] = (int32_t)pad[2 + i];
        /* the transposed convolution's own output, and the rows / columns output_padding adds to reach the image */
        ca.ints[i] = img[i] - ((L[i] - 1) * str[i] - pad[i] - pad[i + 2] + dil[i] * (blk[i] - 1) + 1);
    }
    ctensor w;
    int64_t wd[4] = {xs.dim[1], 1, blk[0], blk[1]};
    if (onx_ct_new(im, &w, SO_F32, T_FLOAT, 4, wd) != SO_OK) return SO_ERR;
    for (int64_t ch = 0; ch < xs.dim[1]; ch++) ((float *)w.data)[ch * kk + ch % kk] = 1.0f; /* zeroed by onx_ct_new */
    const char *nm = onx_node_name(im, n, NULL);
    val *xv, *a2[2];
    if ((r = step(im, SO_OP_RESHAPE, &ins[0], 1, &va, nm, &xv)) != SO_OK) return r;
    a2[0] = xv, a2[1] = onx_bind_const(im, NULL, &w);
    return onx_emit(im, SO_OP_CONVTRANSPOSE, a2, 2, 1, &ca, nm, n->output, 1, NULL);
}

/* AffineGrid (theta [N, k, k+1], size a constant [N, C, (D,) H, W]; align_corners), k = 2 or 3: the base grid
   [(D*)H*W, k+1] of normalised coordinates (x fastest, then y, z; a last column of ones) as a constant, times
   theta transposed (`transpose`, `matmul` broadcast over N), viewed as [N, (D,) H, W, k] (`reshape`). */
so_status onx_affinegrid(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in)
{
    if (n_in != 2 || !ins[0] || !ins[1] || n->n_output != 1) return onx_node_err(im, "needs 2 inputs and 1 output");
    so_shape ts = onx_vshape(im, ins[0]);
    if (ts.rank != 3 || ts.dtype != SO_F32 || !ins[1]->is_const) return onx_add_opaque(im, n, ins, n_in);
    int64_t sz[6];
    int ns, r;
    if ((r = onx_const_ints(im, ins[1], sz, 6, &ns, "size")) != SO_OK) return r;
    const int k = ns - 2;
    if (k != 2 && k != 3) return onx_node_err(im, "size has %d values (4 or 5: [N, C, (D,) H, W])", ns);
    if (ts.dim[0] != sz[0] || ts.dim[1] != k || ts.dim[2] != k + 1)
        return onx_node_err(im, "theta [%lld, %lld, %lld] does not match size (N = %lld, %d-D)", (long long)ts.dim[0], (long long)ts.dim[1],
                            (long long)ts.dim[2], (long long)sz[0], k);
    int64_t pts = 1;
    for (int i = 2; i < ns; i++) {
        if (sz[i] <= 0 || sz[i] > (1 << 20)) return onx_node_err(im, "invalid size %lld", (long long)sz[i]);
        pts *= sz[i];
    }
    if (pts > (1 << 24)) return onx_node_err(im, "a grid of %lld points is too large", (long long)pts);
    const int ac = onx_att_i(n, "align_corners", 0) != 0;
    ctensor b;
    int64_t bd[2] = {pts, k + 1};
    if (onx_ct_new(im, &b, SO_F32, T_FLOAT, 2, bd) != SO_OK) return SO_ERR;
    float *bv = b.data;
    for (int64_t p = 0; p < pts; p++) {
        int64_t rest = p;
        for (int c = 0; c < k; c++) { /* column c: x (the last axis of size), y, z */
            int64_t len = sz[ns - 1 - c], i = rest % len;
            rest /= len;
            bv[p * (k + 1) + c] = ac ? (len > 1 ? -1.0f + 2.0f * (float)i / (float)(len - 1) : -1.0f)
                                     : (2.0f * (float)i + 1.0f) / (float)len - 1.0f;
        }
        bv[p * (k + 1) + k] = 1.0f;
    }
    so_attr ta, va;
    memset(&ta, 0, sizeof ta);
    memset(&va, 0, sizeof va);
    ta.n_ints = 3, ta.ints[0] = 0, ta.ints[1] = 2, ta.ints[2] = 1;
    va.n_ints = ns;
    va.ints[0] = sz[0];
    for (int i = 2; i < ns; i++) va.ints[i - 1] = sz[i];
    va.ints[ns - 1] = k;
    const char *nm = onx_node_name(im, n, NULL);
    val *tt, *g, *a2[2];
    if ((r = step(im, SO_OP_TRANSPOSE, &ins[0], 1, &ta, nm, &tt)) != SO_OK) return r;
    a2[0] = onx_bind_const(im, NULL, &b), a2[1] = tt;
    if ((r = step(im, SO_OP_MATMUL, a2, 2, NULL, nm, &g)) != SO_OK) return r;
    return onx_emit(im, SO_OP_RESHAPE, &g, 1, 1, &va, nm, n->output, 1, NULL);
}
