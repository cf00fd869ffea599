/* ref.c - reference kernels, the drivers: error helper, sources, internal and blocked-layout operators, the kernel table, node and graph evaluation. */
#include "ref_priv.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- helpers ---------------- */

so_status ref_fail(const so_graph *g, const so_node *n, const char *fmt, ...)
{
    char desc[256], msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (g && n >= g->nodes && n < g->nodes + g->n_nodes)
        so_node_desc(g, (int32_t)(n - g->nodes), desc, sizeof desc);
    else
        snprintf(desc, sizeof desc, "node '%s' (%s)", n->name ? n->name : "?", so_ops[n->op].onnx ? so_ops[n->op].onnx : so_ops[n->op].name);
    return so_errorf("%s: %s", desc, msg);
}

void so_ref_act(int act, float clip_min, float clip_max, float *x, int64_t n)
{
    switch (act) {
    case SO_ACT_RELU:
        for (int64_t i = 0; i < n; i++) x[i] = x[i] < 0.0f ? 0.0f : x[i];
        break;
    case SO_ACT_SIGMOID:
        for (int64_t i = 0; i < n; i++) x[i] = (float)(1.0 / (1.0 + exp(-(double)x[i])));
        break;
    case SO_ACT_TANH:
        for (int64_t i = 0; i < n; i++) x[i] = tanhf(x[i]);
        break;
    case SO_ACT_CLIP:
        for (int64_t i = 0; i < n; i++) x[i] = x[i] < clip_min ? clip_min : x[i] > clip_max ? clip_max : x[i];
        break;
    default:
        break;
    }
}

/* ---------------- sources ---------------- */

so_status so_ref_input(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)in;
    (void)out;
    return ref_fail(g, n, "graph input has no kernel (its data comes from the caller)");
}

so_status so_ref_weight(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)in;
    if (!g || n->ref < 0 || n->ref >= g->model->n_weights) return ref_fail(g, n, "refers to a missing weight");
    const so_weight *w = &g->model->weights[n->ref];
    if (!so_shape_eq(&w->shape, &out[0].shape)) return ref_fail(g, n, "output shape differs from the weight's");
    if (out[0].data != w->data) memcpy(out[0].data, w->data, (size_t)numel(&w->shape) * esz(&w->shape));
    return SO_OK;
}

so_status so_ref_opaque(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)in;
    (void)out;
    const char *type = "?";
    if (g && n->ref >= 0 && n->ref < g->model->n_opaque) type = g->model->opaque[n->ref].op_type;
    if (n->name && n->name[0]) return so_errorc(SO_ERR_UNSUPPORTED, "unsupported operator '%s' at node '%s'", type, n->name);
    if (g && n >= g->nodes && n < g->nodes + g->n_nodes)
        return so_errorc(SO_ERR_UNSUPPORTED, "unsupported operator '%s' at node #%d", type, (int)(n - g->nodes));
    return so_errorc(SO_ERR_UNSUPPORTED, "unsupported operator '%s'", type);
}

/* ---------------- internal ---------------- */

so_status so_ref_enlarge(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    (void)n;
    const so_shape *s = &in[0].shape, *os = &out[0].shape;
    const int64_t OI = s->dim[0] * s->dim[1], kh = s->dim[2], kw = s->dim[3], KH = os->dim[2], KW = os->dim[3];
    const int64_t oh = (KH - kh) / 2, ow = (KW - kw) / 2;
    const float *X = in[0].data;
    float *Y = out[0].data;
    memset(Y, 0, (size_t)numel(os) * sizeof *Y);
    for (int64_t p = 0; p < OI; p++)
        for (int64_t i = 0; i < kh; i++)
            for (int64_t j = 0; j < kw; j++) Y[(p * KH + i + oh) * KW + j + ow] = X[(p * kh + i) * kw + j];
    return SO_OK;
}

so_status so_ref_const_pool(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    (void)n;
    (void)in;
    const so_shape *os = &out[0].shape;
    const float v = (float)(1.0 / (double)(os->dim[2] * os->dim[3]));
    float *Y = out[0].data;
    for (int64_t i = 0, m = numel(os); i < m; i++) Y[i] = v;
    return SO_OK;
}

so_status so_ref_const_idconv(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    (void)n;
    (void)in;
    const so_shape *os = &out[0].shape;
    const int64_t C = os->dim[0], KH = os->dim[2], KW = os->dim[3];
    float *Y = out[0].data;
    memset(Y, 0, (size_t)numel(os) * sizeof *Y);
    for (int64_t c = 0; c < C; c++) Y[((c * C + c) * KH + KH / 2) * KW + KW / 2] = 1.0f;
    return SO_OK;
}

so_status so_ref_const_idmat(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    (void)n;
    (void)in;
    const int64_t N = out[0].shape.dim[0];
    float *Y = out[0].data;
    memset(Y, 0, (size_t)(N * N) * sizeof *Y);
    for (int64_t i = 0; i < N; i++) Y[i * N + i] = 1.0f;
    return SO_OK;
}

so_status so_ref_const_ones(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    (void)n;
    (void)in;
    float *Y = out[0].data;
    for (int64_t i = 0, m = numel(&out[0].shape); i < m; i++) Y[i] = 1.0f;
    return SO_OK;
}

so_status so_ref_bnfold_w(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const float *W = in[0].data, *sc = in[1].data, *var = in[2].data;
    float *Y = out[0].data;
    const so_shape *s = &in[0].shape;
    const int64_t O = s->dim[0], inner = prod(s, 1, s->rank);
    for (int64_t o = 0; o < O; o++) {
        const double k = (double)sc[o] / sqrt((double)var[o] + (double)n->attr->epsilon);
        for (int64_t i = 0; i < inner; i++) Y[o * inner + i] = (float)((double)W[o * inner + i] * k);
    }
    return SO_OK;
}

so_status so_ref_bnfold_b(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const float *sc = in[0].data, *bi = in[1].data, *mu = in[2].data, *var = in[3].data;
    const float *cb = n->n_in > 4 && n->in[4].node >= 0 ? in[4].data : NULL;
    float *Y = out[0].data;
    for (int64_t o = 0, O = in[0].shape.dim[0]; o < O; o++) {
        const double k = (double)sc[o] / sqrt((double)var[o] + (double)n->attr->epsilon);
        Y[o] = (float)((double)bi[o] + ((cb ? (double)cb[o] : 0.0) - (double)mu[o]) * k);
    }
    return SO_OK;
}

/* ---------------- blocked-channel layout (NCHWc) ---------------- */

/* x [N][C][HW] -> y [N][ceil(C/b)][HW][b], zero padding lanes; and back (padding dropped). */
static void nchwc_block(const float *x, float *y, int64_t N, int64_t C, int64_t HW, int64_t b)
{
    const int64_t Cb = (C + b - 1) / b;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < Cb * b; c++)
            for (int64_t p = 0; p < HW; p++) y[((n * Cb + c / b) * HW + p) * b + c % b] = c < C ? x[(n * C + c) * HW + p] : 0.0f;
}
static void nchwc_unblock(const float *x, float *y, int64_t N, int64_t C, int64_t HW, int64_t b)
{
    const int64_t Cb = (C + b - 1) / b;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t p = 0; p < HW; p++) y[(n * C + c) * HW + p] = x[((n * Cb + c / b) * HW + p) * b + c % b];
}

so_status so_ref_nchwc_in(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_shape *s = &in[0].shape;
    nchwc_block(in[0].data, out[0].data, s->dim[0], s->dim[1], s->dim[2] * s->dim[3], n->attr->ints[0]);
    return SO_OK;
}

so_status so_ref_nchwc_out(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_shape *s = &out[0].shape;
    nchwc_unblock(in[0].data, out[0].data, s->dim[0], s->dim[1], s->dim[2] * s->dim[3], n->attr->ints[0]);
    return SO_OK;
}

/* A blocked op as its plain kernel between an unblocking of input 0 (C channels; the pools see every lane:
   C = blocks * b) and a blocking of the output (O channels). */
static so_status nchwc_as(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out, so_kernel_fn plain, int64_t C, int64_t O)
{
    const so_shape *xs = &in[0].shape, *ys = &out[0].shape;
    const int64_t N = xs->dim[0], b = xs->dim[4], HW = xs->dim[2] * xs->dim[3], OHW = ys->dim[2] * ys->dim[3];
    so_tensor lin[SO_MAX_IN], lout = out[0];
    for (int k = 0; k < n->n_in && k < SO_MAX_IN; k++) lin[k] = in[k];
    const int64_t d0[4] = {N, C, xs->dim[2], xs->dim[3]}, d1[4] = {N, O, ys->dim[2], ys->dim[3]};
    lin[0].shape = so_shape_make(4, d0);
    lout.shape = so_shape_make(4, d1);
    lin[0].data = malloc(sizeof(float) * (size_t)(N * C * HW));
    lout.data = malloc(sizeof(float) * (size_t)(N * O * OHW));
    so_status st = SO_ERR;
    if (!lin[0].data || !lout.data) {
        ref_fail(g, n, "out of memory");
        goto done;
    }
    nchwc_unblock(in[0].data, lin[0].data, N, C, HW, b);
    if ((st = plain(g, n, lin, &lout)) != SO_OK) goto done;
    nchwc_block(lout.data, out[0].data, N, O, OHW, b);
done:
    free(lin[0].data);
    free(lout.data);
    return st;
}

so_status so_ref_conv_nchwc(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const int64_t C = in[1].shape.dim[1] * one_if0(n->attr->group);
    return nchwc_as(g, n, in, out, so_ref_conv, C, in[1].shape.dim[0]);
}

static so_status nchwc_pool(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out, so_kernel_fn plain)
{
    const int64_t C = in[0].shape.dim[1] * in[0].shape.dim[4];
    return nchwc_as(g, n, in, out, plain, C, C);
}
REF_VIA(maxpool_nchwc, nchwc_pool(g, n, in, out, so_ref_maxpool))
REF_VIA(avgpool_nchwc, nchwc_pool(g, n, in, out, so_ref_avgpool))
so_status so_ref_concat_nchwc(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const so_shape *ys = &out[0].shape;
    const int64_t N = ys->dim[0], b = ys->dim[4], HW = ys->dim[2] * ys->dim[3], Cb = ys->dim[1];
    float *y = out[0].data;
    memset(y, 0, sizeof(float) * (size_t)(N * Cb * HW * b));
    for (int64_t nn = 0, off = 0; nn < N; nn++, off = 0)
        for (int k = 0; k < n->n_in; k++) {
            const int64_t ck = n->attr->ints[k + 1], cbk = (ck + b - 1) / b;
            const float *x = in[k].data;
            for (int64_t c = 0; c < ck; c++, off++)
                for (int64_t p = 0; p < HW; p++)
                    y[((nn * Cb + off / b) * HW + p) * b + off % b] = x[((nn * cbk + c / b) * HW + p) * b + c % b];
        }
    (void)g;
    return SO_OK;
}

so_status so_ref_globalavgpool_nchwc(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    return nchwc_pool(g, n, in, out, so_ref_globalavgpool);
}

/* ---------------- tables and drivers ---------------- */

const so_kernel_fn so_ref_kernels[SO_OP_COUNT] = {
#define X(e, l, ...) [SO_OP_##e] = so_ref_##l,
#include "../src/ops.def"
#undef X
};

/* Bytes of a tensor of shape s, or 0 with an error when unknown or too large. */
static so_status tensor_bytes(const so_graph *g, const so_node *n, const so_shape *s, size_t *bytes)
{
    if (s->rank < 0) return ref_fail(g, n, "output shape is unknown");
    if (s->dtype != SO_F32 && s->dtype != SO_I64) return ref_fail(g, n, "output has unsupported element type %d (float and int64 only)", (int)s->dtype);
    int64_t cnt = 1;
    for (int k = 0; k < s->rank; k++)
        if (s->dim[k] < 0 || so_i64_mul(cnt, s->dim[k], &cnt)) return ref_fail(g, n, "invalid output shape");
    size_t b;
    if (so_size_mul((size_t)cnt, esz(s), &b) || b > so_max_alloc_bytes)
        return ref_fail(g, n, "output of %lld elements exceeds the memory limit", (long long)cnt);
    *bytes = b;
    return SO_OK;
}

/* The core folds constants (ONNX import and export) through this evaluator: registered at load. */
__attribute__((constructor)) static void register_node_eval(void) { so_node_eval_register(so_ref_eval_node); }

so_status so_ref_eval_node(const so_graph *g, int32_t i, const so_tensor *in, so_tensor *out)
{
    const so_node *n = &g->nodes[i];
    so_status st = SO_OK;
    for (int k = 0; k < n->n_out; k++) out[k].data = NULL;
    if (n->op == SO_OP_INPUT || n->op == SO_OP_OPAQUE) return so_ref_kernels[n->op](g, n, in, out);
    for (int k = 0; k < n->n_out; k++) {
        size_t b;
        out[k].shape = n->out[k];
        if ((st = tensor_bytes(g, n, &n->out[k], &b)) != SO_OK) goto fail;
        out[k].data = so_weight_alloc(b, 0); /* folds keep it as a weight */
        if (!out[k].data) {
            st = ref_fail(g, n, "out of memory");
            goto fail;
        }
    }
    if ((st = so_ref_kernels[n->op](g, n, in, out)) == SO_OK) return SO_OK;
fail:
    for (int k = 0; k < n->n_out; k++) {
        free(out[k].data);
        out[k].data = NULL;
    }
    return st;
}

#define RUN_SMALL 64       /* tensors kept on the stack for small graphs */
#define RUN_ARENA (1 << 20) /* below this many activation bytes, one allocation for all */

so_status so_ref_run(const so_graph *g, const float *const *inputs, float *const *outputs)
{
    const int32_t nn = g->n_nodes;
    so_status st = SO_OK;
    so_tensor small_t[RUN_SMALL], *t = small_t;
    int32_t small_off[RUN_SMALL + 1], *off = small_off;
    int32_t small_last[RUN_SMALL], *last = small_last;
    char small_own[RUN_SMALL], *own = small_own;
    char *block = NULL;
    int32_t total = 0;
    for (int32_t i = 0; i < nn; i++) total += g->nodes[i].n_out;
    if (total > RUN_SMALL || nn > RUN_SMALL) {
        t = so_xcalloc((size_t)total + 1, sizeof *t);
        off = so_xmalloc(((size_t)nn + 1) * sizeof *off);
        last = so_xmalloc(((size_t)nn + 1) * sizeof *last);
        own = so_xcalloc((size_t)total + 1, 1);
    }
    memset(t, 0, (size_t)total * sizeof *t);
    memset(own, 0, (size_t)total);
    size_t need = 0;
    off[0] = 0;
    for (int32_t i = 0; i < nn; i++) {
        const so_node *n = &g->nodes[i];
        off[i + 1] = off[i] + n->n_out;
        last[i] = i;
        for (int k = 0; k < n->n_out; k++) {
            size_t b;
            t[off[i] + k].shape = n->out[k];
            if (n->op == SO_OP_INPUT || n->op == SO_OP_WEIGHT || n->op == SO_OP_OPAQUE) continue;
            if ((st = tensor_bytes(g, n, &n->out[k], &b)) != SO_OK) goto done;
            need += (b + 63) & ~(size_t)63;
        }
    }
    char desc[256];
    for (int32_t i = 0; i < nn; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++) {
            int32_t p = g->nodes[i].in[k].node;
            if (p >= i) {
                st = so_errorf("%s: graph is not in topological order", so_node_desc(g, i, desc, sizeof desc));
                goto done;
            }
            if (p >= 0) last[p] = i;
        }
    for (int32_t o = 0; o < g->model->n_outputs; o++) last[g->outputs[o].node] = nn;
    if (need <= RUN_ARENA) block = so_xmalloc(need ? need : 1);
    size_t used = 0;
    for (int32_t i = 0; i < nn; i++) {
        const so_node *n = &g->nodes[i];
        so_tensor *o = &t[off[i]];
        if (n->op == SO_OP_INPUT) {
            if (n->ref < 0 || n->ref >= g->model->n_inputs) {
                st = so_errorf("%s: refers to a missing graph input", so_node_desc(g, i, desc, sizeof desc));
                goto done;
            }
            o->data = (void *)inputs[n->ref];
            continue;
        }
        if (n->op == SO_OP_WEIGHT) {
            if (n->ref < 0 || n->ref >= g->model->n_weights) {
                st = so_errorf("%s: refers to a missing weight", so_node_desc(g, i, desc, sizeof desc));
                goto done;
            }
            o->data = g->model->weights[n->ref].data;
            continue;
        }
        if (n->op == SO_OP_OPAQUE) {
            st = so_ref_opaque(g, n, NULL, o);
            goto done;
        }
        so_tensor ins[SO_MAX_IN];
        for (int k = 0; k < n->n_in; k++) {
            so_edge e = n->in[k];
            if (e.node < 0) memset(&ins[k], 0, sizeof ins[k]); /* absent optional input */
            else ins[k] = t[off[e.node] + e.slot];
        }
        for (int k = 0; k < n->n_out; k++) {
            size_t b;
            tensor_bytes(g, n, &o[k].shape, &b);
            if (block) {
                o[k].data = block + used;
                used += (b + 63) & ~(size_t)63;
            } else {
                o[k].data = malloc(b ? b : 1);
                if (!o[k].data) {
                    st = ref_fail(g, n, "out of memory");
                    goto done;
                }
                own[off[i] + k] = 1;
            }
        }
        if ((st = so_ref_kernels[n->op](g, n, ins, o)) != SO_OK) goto done;
        if (!block)
            for (int k = 0; k < n->n_in; k++) {
                int32_t p = n->in[k].node;
                if (p >= 0 && last[p] == i)
                    for (int s = 0; s < g->nodes[p].n_out; s++)
                        if (own[off[p] + s]) {
                            free(t[off[p] + s].data);
                            t[off[p] + s].data = NULL;
                            own[off[p] + s] = 0;
                        }
            }
    }
    for (int32_t o = 0; o < g->model->n_outputs; o++) {
        const so_tensor *x = &t[off[g->outputs[o].node] + g->outputs[o].slot];
        memcpy(outputs[o], x->data, (size_t)numel(&x->shape) * esz(&x->shape));
    }
done:
    for (int32_t k = 0; k < total; k++)
        if (own[k]) free(t[k].data);
    free(block);
    if (t != small_t) {
        free(t);
        free(off);
        free(last);
        free(own);
    }
    return st;
}
