/* onnx_build.c - ONNX node builders: one importer per table operator (ops.def), one NodeProto into graph nodes with so_attr; the dispatch of a node (routes, opaque nodes) is onnx_node.c. */
#include "onnx_priv.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

/* ======================================================================
   graph nodes
   ====================================================================== */

const char *onx_node_name(imp *im, const Onnx__NodeProto *n, const char *suffix)
{
    if (!n->name || !n->name[0]) return NULL;
    if (!suffix) return so_arena_strdup(&im->m->arena, n->name);
    size_t len = strlen(n->name) + strlen(suffix) + 1;
    char *s = so_arena_alloc(&im->m->arena, len);
    snprintf(s, len, "%s%s", n->name, suffix);
    return s;
}

/* Adds table op `op` over the values `ins`, infers its shapes and binds output names
   (onames[k] NULL or "" = unbound). When every input is constant, evaluates it with the
   reference kernels and binds constants instead. *idx = the node. */
int onx_emit(imp *im, so_op op, val **ins, int n_in, int n_out, const so_attr *a, const char *name,
                char *const *onames, int n_onames, int32_t *idx)
{
    so_edge e[SO_MAX_IN];
    int all_const = n_in > 0;
    for (int k = 0; k < n_in; k++) {
        e[k] = onx_materialize(im, ins[k]);
        if (!ins[k]->is_const) all_const = 0;
    }
    int32_t i = so_graph_add(im->g, op, e, n_in, n_out, a ? so_model_attr(im->m, a) : NULL, -1, name);
    if (idx) *idx = i;
    if (so_graph_infer(im->g, i) != SO_OK) return SO_ERR;
    if (all_const && !(so_ops[op].flags & (SO_F_SOURCE | SO_F_OPAQUE))) {
        so_tensor tin[SO_MAX_IN], tout[8];
        int ok = n_out <= 8;
        /* as for helper operators (onnx_io.h): up to so_onnx_fold_max_elems, or the largest input */
        int64_t cap = so_onnx_fold_max_elems;
        for (int k = 0; k < n_in; k++)
            if (onx_ct_numel(&ins[k]->c) > cap) cap = onx_ct_numel(&ins[k]->c);
        for (int k = 0; k < n_out && ok; k++) {
            so_shape s = im->g->nodes[i].out[k];
            int64_t c = so_shape_numel(&s);
            if (c < 0 || c > cap || (s.dtype != SO_F32 && s.dtype != SO_I64)) ok = 0;
            tout[k].shape = s;
            tout[k].data = NULL;
        }
        for (int k = 0; k < n_in && ok; k++) {
            tin[k].shape = ins[k]->c.shape;
            tin[k].data = ins[k]->c.data;
        }
        if (ok && so_node_eval(im->g, i, tin, tout) == SO_OK) {
            for (int k = 0; k < n_out; k++) {
                ctensor c;
                c.shape = tout[k].shape;
                c.otype = c.shape.dtype == SO_I64 ? T_INT64 : T_FLOAT;
                c.data = tout[k].data;
                if (k < n_onames && onames[k] && onames[k][0]) onx_bind_const(im, onames[k], &c);
                else free(c.data);
            }
            return SO_OK; /* the node is left unused; DCE removes it */
        }
        so_errorf("%s", ""); /* not foldable: keep the node */
    }
    for (int k = 0; k < n_out && k < n_onames; k++)
        if (onames[k] && onames[k][0]) onx_bind_edge(im, onames[k], i, k);
    return SO_OK;
}

val *onx_anon_edge(imp *im, int32_t node, int32_t slot) { return onx_bind_edge(im, NULL, node, slot); }

/* Stride/pad/dilation of Conv and pools (2-D only); explicit pads from auto_pad. */
static int conv_pool_attr(imp *im, const Onnx__NodeProto *n, const so_shape *x, const int64_t *kernel, int dilations_ok, so_attr *a)
{
    const int64_t *p;
    long k;
    if (x->rank != 4) return SO_ERR_UNSUPPORTED;
    a->kernel[0] = (int32_t)kernel[0];
    a->kernel[1] = (int32_t)kernel[1];
    a->stride[0] = a->stride[1] = 1;
    a->dilation[0] = a->dilation[1] = 1;
    if ((k = onx_att_ints(n, "strides", &p)) >= 0) {
        if (k != 2) return SO_ERR_UNSUPPORTED;
        if (p[0] <= 0 || p[0] > INT32_MAX || p[1] <= 0 || p[1] > INT32_MAX) /* not truncated to int32 */
            return onx_node_err(im, "invalid kernel/stride/dilation"), SO_ERR;
        a->stride[0] = (int32_t)p[0], a->stride[1] = (int32_t)p[1];
    }
    if ((k = onx_att_ints(n, "dilations", &p)) >= 0) {
        if (k != 2) return SO_ERR_UNSUPPORTED;
        if (!dilations_ok && (p[0] != 1 || p[1] != 1)) return SO_ERR_UNSUPPORTED;
        if (p[0] <= 0 || p[0] > INT32_MAX || p[1] <= 0 || p[1] > INT32_MAX)
            return onx_node_err(im, "invalid kernel/stride/dilation"), SO_ERR;
        a->dilation[0] = (int32_t)p[0], a->dilation[1] = (int32_t)p[1];
    }
    for (int i = 0; i < 2; i++)
        if (a->stride[i] <= 0 || a->dilation[i] <= 0 || kernel[i] <= 0 || kernel[i] > INT32_MAX)
            return onx_node_err(im, "invalid kernel/stride/dilation"), SO_ERR;
    char buf[32];
    const char *ap = onx_att_s(n, "auto_pad", buf, sizeof buf);
    if (!ap || !ap[0] || !strcmp(ap, "NOTSET")) {
        if ((k = onx_att_ints(n, "pads", &p)) >= 0) {
            if (k != 4) return SO_ERR_UNSUPPORTED;
            for (int i = 0; i < 4; i++) {
                if (p[i] < 0 || p[i] > INT32_MAX) return onx_node_err(im, "invalid pad %lld", (long long)p[i]), SO_ERR;
                a->pad[i] = (int32_t)p[i];
            }
        }
    } else if (!strcmp(ap, "VALID")) {
        /* no padding */
    } else if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
        for (int i = 0; i < 2; i++) {
            int64_t in = x->dim[2 + i], s = a->stride[i], ext = (kernel[i] - 1) * a->dilation[i] + 1;
            int64_t out = (in + s - 1) / s, total = (out - 1) * s + ext - in;
            if (total < 0) total = 0;
            int64_t lo = ap[5] == 'U' ? total / 2 : total - total / 2;
            a->pad[i] = (int32_t)lo;
            a->pad[2 + i] = (int32_t)(total - lo);
        }
    } else {
        return onx_node_err(im, "unknown auto_pad '%s'", ap), SO_ERR;
    }
    return SO_OK;
}

int onx_dense_inputs(val **ins, size_t n_in)
{
    int n = (int)n_in;
    while (n > 0 && !ins[n - 1]) n--;
    for (int k = 0; k < n; k++)
        if (!ins[k]) return -1;
    return n;
}

int onx_extra_outputs(const Onnx__NodeProto *n, size_t keep)
{
    for (size_t k = keep; k < n->n_output; k++)
        if (n->output[k][0]) return 1;
    return 0;
}

/* Reads a recurrent node's activations / activation_alpha / activation_beta (cnt functions per direction, ONNX's
   defaults def) into a->ints as ops.h so_ract describes; n_ints stays 0 for the defaults, and an RNN whose one
   function is Tanh, Relu or Sigmoid in every direction keeps it in a->mode. Alphas and betas are consumed in order
   by the functions that take them (ONNX Runtime's reading); a list of cnt names serves both directions. */
static int recurrent_acts(imp *im, const Onnx__NodeProto *n, int dirs, const int *def, int cnt, int is_rnn, so_attr *a)
{
    const Onnx__AttributeProto *acts = onx_att(n, "activations"), *al = onx_att(n, "activation_alpha"), *be = onx_att(n, "activation_beta");
    if (!acts) return SO_OK;
    int total = cnt * dirs, given = (int)acts->n_strings, kinds[6], plain = 1;
    if (given != total && !(dirs == 2 && given == cnt))
        return onx_node_err(im, "has %d activations; %s takes %d per direction", given, n->op_type, cnt), SO_ERR;
    size_t ia = 0, ib = 0;
    for (int i = 0; i < total; i++) {
        const ProtobufCBinaryData *sv = &acts->strings[i % given];
        int k = 0;
        while (k < SO_RACT_COUNT && !(sv->len == strlen(so_ract_names[k]) && strncasecmp((const char *)sv->data, so_ract_names[k], sv->len) == 0)) k++;
        if (k == SO_RACT_COUNT) return onx_node_err(im, "unknown activation '%.*s'", (int)(sv->len > 40 ? 40 : sv->len), (const char *)sv->data), SO_ERR;
        float pa = so_ract_default[k][0], pb = so_ract_default[k][1];
        if ((so_ract_params[k] & 1) && al && ia < al->n_floats) pa = al->floats[ia++];
        if ((so_ract_params[k] & 2) && be && ib < be->n_floats) pb = be->floats[ib++];
        kinds[i] = k;
        plain &= is_rnn ? (k <= SO_RACT_SIGMOID && k == kinds[0]) : k == def[i % cnt];
        a->ints[3 * i] = k, a->ints[3 * i + 1] = so_f32_to_bits(pa), a->ints[3 * i + 2] = so_f32_to_bits(pb);
    }
    if (!plain) {
        a->n_ints = 3 * total;
        return SO_OK;
    }
    memset(a->ints, 0, sizeof a->ints);
    if (is_rnn) a->mode = kinds[0];
    return SO_OK;
}

/* Maps one ONNX node onto table op `op`. SO_ERR_UNSUPPORTED: keep it verbatim instead. */
/* ---------------- one importer per operator (ops.def) ----------------
   imp_<op> maps a NodeProto onto table operator <op> with its attributes; it returns SO_OK,
   SO_ERR (message set) or SO_ERR_UNSUPPORTED (a form we do not cover: the node is kept verbatim as
   an opaque operator). */

/* What every importer gets. */
typedef struct bctx {
    imp *im;
    const Onnx__NodeProto *n;
    so_op op;
    val **ins;          /* inputs (NULL: absent optional input) */
    size_t n_in;
    val *x;             /* ins[0] or NULL */
    so_shape xs;        /* its shape (rank -1 if absent or unknown) */
    const char *nm;     /* the graph node's name */
    char *const *on;    /* ONNX output names */
    int non;
    int nout;           /* ops.def n_out */
} bctx;

/* Unpacks the context and the scratch every importer starts from (attributes zeroed). */
#define IMP_LOCALS                                                                                               \
    imp *im = cx->im;                                                                                             \
    const Onnx__NodeProto *n = cx->n;                                                                             \
    so_op op = cx->op;                                                                                            \
    val **ins = cx->ins;                                                                                          \
    size_t n_in = cx->n_in;                                                                                       \
    val *x = cx->x;                                                                                               \
    so_shape xs = cx->xs;                                                                                         \
    const char *nm = cx->nm;                                                                                      \
    char *const *on = cx->on;                                                                                     \
    int non = cx->non, nout = cx->nout;                                                                            \
    so_attr a;                                                                                                   \
    memset(&a, 0, sizeof a);                                                                                     \
    val *args[SO_MAX_IN];                                                                                        \
    int na = 0, r = 0;                                                                                           \
    const int64_t *p = NULL;                                                                                     \
    long k = 0;                                                                                                  \
    (void)im, (void)n, (void)op, (void)ins, (void)n_in, (void)x, (void)xs, (void)nm, (void)on, (void)non, (void)nout, \
        (void)args, (void)na, (void)r, (void)p, (void)k

static int imp_conv(bctx *cx)
{
    IMP_LOCALS;
    if ((na = onx_dense_inputs(ins, n_in)) < 2) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "needs at least 2 inputs"), SO_ERR);
    so_shape ws = onx_vshape(im, ins[1]);
    if (xs.rank >= 0 && ws.rank >= 0 && xs.rank != ws.rank) /* invalid ONNX, not an unsupported form */
        return onx_node_err(im, "input of rank %d and weight of rank %d: Conv needs the same rank (N, C, spatial... / M, C/group, kernel...)",
                            xs.rank, ws.rank), SO_ERR;
    int64_t ker[2];
    if (ws.rank == 4) ker[0] = ws.dim[2], ker[1] = ws.dim[3];
    else if ((k = onx_att_ints(n, "kernel_shape", &p)) == 2) ker[0] = p[0], ker[1] = p[1];
    else return SO_ERR_UNSUPPORTED;
    if ((k = onx_att_ints(n, "kernel_shape", &p)) >= 0 && (k != 2 || p[0] != ker[0] || p[1] != ker[1]))
        return k != 2 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "kernel_shape does not match the weight shape"), SO_ERR);
    if ((r = conv_pool_attr(im, n, &xs, ker, 1, &a)) != SO_OK) return r;
    int64_t group = onx_att_i(n, "group", 1);
    if (group <= 0 || group > INT32_MAX) return onx_node_err(im, "invalid group %lld", (long long)group), SO_ERR;
    a.group = (int32_t)group;
    return onx_emit(im, op, ins, na, 1, &a, nm, on, non, NULL);
}

/* a 2-D pool's window: kernel_shape, strides, dilations (if dilations_ok), pads / auto_pad, ceil_mode */
static int pool_window(imp *im, const Onnx__NodeProto *n, const so_shape *xs, int dilations_ok, so_attr *a)
{
    const int64_t *p;
    int r;
    long k = onx_att_ints(n, "kernel_shape", &p);
    if (k != 2) return k < 0 ? (onx_node_err(im, "missing kernel_shape"), SO_ERR) : SO_ERR_UNSUPPORTED;
    const int64_t ker[2] = {p[0], p[1]};
    if ((r = conv_pool_attr(im, n, xs, ker, dilations_ok, a)) != SO_OK) return r;
    a->ceil_mode = onx_att_i(n, "ceil_mode", 0) != 0; /* flags: any nonzero int64, not its low 32 bits */
    return SO_OK;
}

static int imp_maxpool(bctx *cx)
{
    IMP_LOCALS;
    if (onx_att_i(n, "storage_order", 0) != 0) return SO_ERR_UNSUPPORTED;
    if ((r = pool_window(im, n, &xs, op == SO_OP_MAXPOOL, &a)) != SO_OK) return r;
    if (op == SO_OP_AVGPOOL) a.count_include_pad = onx_att_i(n, "count_include_pad", 0) != 0;
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

/* LpPool-2..18: the 2-D window as MaxPool's (dilations, ceil_mode from opset 18) and the integer p (default 2) */
static int imp_lppool(bctx *cx)
{
    IMP_LOCALS;
    if ((r = pool_window(im, n, &xs, 1, &a)) != SO_OK) return r;
    const int64_t pw = onx_att_i(n, "p", 2);
    if (pw < 1 || pw > INT32_MAX) return onx_node_err(im, "p %lld must be a positive integer", (long long)pw), SO_ERR;
    a.mode = (int32_t)pw;
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

/* GlobalLpPool-2..22 (superopt reads opset 7 on): the integer p (default 2) over every spatial dim */
static int imp_globallppool(bctx *cx)
{
    IMP_LOCALS;
    const int64_t pw = onx_att_i(n, "p", 2);
    if (pw < 1 || pw > INT32_MAX) return onx_node_err(im, "p %lld must be a positive integer", (long long)pw), SO_ERR;
    a.mode = (int32_t)pw;
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

static int imp_gemm(bctx *cx)
{
    IMP_LOCALS;
    if ((na = onx_dense_inputs(ins, n_in)) < 2) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "needs at least 2 inputs"), SO_ERR);
    a.alpha = onx_att_f(n, "alpha", 1.0f);
    a.beta = onx_att_f(n, "beta", 1.0f);
    a.trans_a = onx_att_i(n, "transA", 0) != 0;
    a.trans_b = onx_att_i(n, "transB", 0) != 0;
    return onx_emit(im, op, ins, na, 1, &a, nm, on, non, NULL);
}

static int imp_clip(bctx *cx)
{
    IMP_LOCALS;
    float lo = -INFINITY, hi = INFINITY;
    if (im->opset < 11) {
        lo = onx_att_f(n, "min", -FLT_MAX);
        hi = onx_att_f(n, "max", FLT_MAX);
        if (lo == -FLT_MAX) lo = -INFINITY;
        if (hi == FLT_MAX) hi = INFINITY;
    } else {
        /* constant bounds become attributes; with a bound fed at run time, Clip = Min(Max(x, min), max)
           (Max / Min propagate NaN as Clip does) */
        val *v, *b[2] = {onx_inval(im, n, 1), onx_inval(im, n, 2)};
        if ((b[0] && !b[0]->is_const) || (b[1] && !b[1]->is_const)) {
            so_attr pa;
            memset(&pa, 0, sizeof pa);
            char *const no_name[1] = {(char *)""};
            val *cur = ins[0];
            for (int q = 0; q < 2; q++) {
                if (!b[q]) continue;
                val *two[2] = {cur, b[q]};
                int32_t ni;
                int last = q == 1 || !b[1];
                if ((r = onx_emit(im, q ? SO_OP_MIN : SO_OP_MAX, two, 2, 1, &pa, nm, last ? on : no_name, last ? non : 1, &ni)) != SO_OK) return r;
                cur = onx_anon_edge(im, ni, 0);
            }
            return SO_OK;
        }
        if ((v = b[0])) {
            if (onx_ct_numel(&v->c) != 1) return onx_node_err(im, "min must be a scalar"), SO_ERR;
            lo = (float)onx_ct_getf(&v->c, 0);
        }
        if ((v = b[1])) {
            if (onx_ct_numel(&v->c) != 1) return onx_node_err(im, "max must be a scalar"), SO_ERR;
            hi = (float)onx_ct_getf(&v->c, 0);
        }
    }
    a.clip_min = lo;
    a.clip_max = hi;
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

static int imp_batchnorm(bctx *cx)
{
    IMP_LOCALS;
    if (onx_att_i(n, "training_mode", 0) != 0) return onx_node_err(im, "training_mode=1 is not supported (export the model in eval mode)"), SO_ERR;
    if (onx_dense_inputs(ins, n_in) != 5) return onx_node_err(im, "needs 5 inputs"), SO_ERR;
    if (onx_att_i(n, "spatial", 1) != 1) return SO_ERR_UNSUPPORTED;
    a.epsilon = onx_att_f(n, "epsilon", 1e-5f);
    return onx_emit(im, op, ins, 5, 1, &a, nm, on, non, NULL);
}

/* Pow-12+: a float base with an integer exponent constant (the output has the base's type) */
static int imp_pow(bctx *cx)
{
    IMP_LOCALS;
    if ((na = onx_dense_inputs(ins, n_in)) != 2) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "has %d inputs", na), SO_ERR);
    if (xs.dtype == SO_F32 && ins[1]->is_const && ins[1]->c.shape.dtype == SO_I64) {
        ctensor c;
        const ctensor *e = &ins[1]->c;
        if (onx_ct_new(im, &c, SO_F32, T_FLOAT, e->shape.rank, e->shape.dim) != SO_OK) return SO_ERR;
        for (int64_t i = 0; i < onx_ct_numel(e); i++) ((float *)c.data)[i] = (float)onx_ct_geti(e, i);
        args[0] = ins[0];
        args[1] = onx_bind_const(im, NULL, &c);
        return onx_emit(im, op, args, 2, 1, &a, nm, on, non, NULL);
    }
    if (xs.dtype == SO_F32 && onx_vshape(im, ins[1]).dtype == SO_I64) { /* an integer exponent fed at run time */
        so_attr ca;
        int32_t ci;
        memset(&ca, 0, sizeof ca);
        ca.mode = T_FLOAT;
        char *const no_name[1] = {(char *)""};
        if ((r = onx_emit(im, SO_OP_CAST, &ins[1], 1, 1, &ca, nm, no_name, 1, &ci)) != SO_OK) return r;
        args[0] = ins[0];
        args[1] = onx_anon_edge(im, ci, 0);
        return onx_emit(im, op, args, 2, 1, &a, nm, on, non, NULL);
    }
    if (xs.dtype == SO_I64 && onx_vshape(im, ins[1]).dtype == SO_F32) {
        /* an integer base with a float exponent (the result has the base's type): computed in float,
           truncated toward zero as ONNX Runtime's static_cast does */
        so_attr ca;
        int32_t ci, pi;
        memset(&ca, 0, sizeof ca);
        ca.mode = T_FLOAT;
        char *const no_name[1] = {(char *)""};
        if ((r = onx_emit(im, SO_OP_CAST, &ins[0], 1, 1, &ca, nm, no_name, 1, &ci)) != SO_OK) return r;
        args[0] = onx_anon_edge(im, ci, 0);
        args[1] = ins[1];
        if ((r = onx_emit(im, op, args, 2, 1, &a, nm, no_name, 1, &pi)) != SO_OK) return r;
        args[0] = onx_anon_edge(im, pi, 0);
        ca.mode = T_INT64;
        return onx_emit(im, SO_OP_CAST, args, 1, 1, &ca, nm, on, non, NULL);
    }
    return onx_emit(im, op, ins, na, 1, &a, nm, on, non, NULL);
}

static int imp_layernorm(bctx *cx)
{
    IMP_LOCALS;
    if ((na = onx_dense_inputs(ins, n_in)) < 2) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "needs at least 2 inputs"), SO_ERR);
    if (onx_extra_outputs(n, 1)) return onx_layernorm_expanded(im, n, ins, n_in, xs); /* Mean / InvStdDev wanted */
    if (xs.rank < 0) return SO_ERR_UNSUPPORTED;
    if (onx_norm_axis(im, onx_att_i(n, "axis", -1), xs.rank, &a.axis) != SO_OK) return SO_ERR;
    a.epsilon = onx_att_f(n, "epsilon", 1e-5f);
    return onx_emit(im, op, ins, na, 1, &a, nm, on, non, NULL);
}

#define imp_rmsnorm imp_layernorm /* axis, epsilon (stash_type: computed in double) */

static int imp_softmax(bctx *cx)
{
    IMP_LOCALS;
    if (xs.rank < 0) return SO_ERR_UNSUPPORTED;
    int32_t ax;
    if (onx_norm_axis(im, onx_att_i(n, "axis", im->opset >= 13 ? -1 : 1), xs.rank, &ax) != SO_OK) return SO_ERR;
    if (im->opset >= 13 || ax == xs.rank - 1) {
        a.axis = ax;
        return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
    }
    /* opset < 13: softmax over the flattened trailing dims: Flatten -> Softmax -> Reshape */
    int32_t f, s;
    so_attr fa;
    memset(&fa, 0, sizeof fa);
    fa.axis = ax;
    if ((r = onx_emit(im, SO_OP_FLATTEN, ins, 1, 1, &fa, onx_node_name(im, n, "/flatten"), NULL, 0, &f)) != SO_OK) return r;
    val *fv = onx_anon_edge(im, f, 0);
    a.axis = 1;
    if ((r = onx_emit(im, op, &fv, 1, 1, &a, nm, NULL, 0, &s)) != SO_OK) return r;
    val *sv = onx_anon_edge(im, s, 0);
    so_attr ra;
    memset(&ra, 0, sizeof ra);
    ra.n_ints = xs.rank;
    for (int i = 0; i < xs.rank; i++) ra.ints[i] = xs.dim[i];
    return onx_emit(im, SO_OP_RESHAPE, &sv, 1, 1, &ra, onx_node_name(im, n, "/reshape"), on, non, NULL);
}

static int imp_reducemean(bctx *cx)
{
    IMP_LOCALS;
    int64_t ax[SO_MAX_RANK];
    int nax, present;
    if ((r = onx_get_axes(im, n, im->opset >= (op == SO_OP_REDUCESUM ? 13 : 18), ax, &nax, &present)) != SO_OK) return r;
    if (xs.rank < 0) return SO_ERR_UNSUPPORTED;
    if (!present || nax == 0) {
        if (onx_att_i(n, "noop_with_empty_axes", 0)) { /* no axis reduced: each element's own term (ONNX's reference, ONNX Runtime) */
            const so_op eo = op == SO_OP_REDUCEL1 || op == SO_OP_REDUCEL2 ? SO_OP_ABS
                             : op == SO_OP_REDUCESUMSQUARE                ? SO_OP_MUL
                             : op == SO_OP_REDUCELOGSUM                   ? SO_OP_LOG
                                                                          : SO_OP_IDENTITY; /* sum, mean, prod, max, min, log-sum-exp */
            if (eo != SO_OP_IDENTITY) {
                val *xx[2] = {x, x};
                return onx_emit(im, eo, xx, eo == SO_OP_MUL ? 2 : 1, 1, &a, nm, on, non, NULL);
            }
            so_strmap_put(&im->names, on[0], so_strmap_get(&im->names, n->input[0]));
            return SO_OK;
        }
        nax = xs.rank;
        for (int i = 0; i < nax; i++) ax[i] = i;
    } else if (onx_norm_axes(im, ax, nax, xs.rank) != SO_OK) return SO_ERR;
    a.n_ints = nax;
    memcpy(a.ints, ax, (size_t)nax * 8);
    a.keepdims = onx_att_i(n, "keepdims", 1) != 0;
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

static int imp_pad(bctx *cx)
{
    IMP_LOCALS;
    int64_t pads[2 * SO_MAX_RANK];
    if ((r = onx_pad_params(im, n, &xs, pads, &a.value, &a.mode)) != SO_OK) return r;
    a.n_ints = 2 * xs.rank;
    memcpy(a.ints, pads, (size_t)a.n_ints * 8);
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

static int imp_concat(bctx *cx)
{
    IMP_LOCALS;
    if ((na = onx_dense_inputs(ins, n_in)) < 1 || na > SO_MAX_IN) return na == 0 ? (onx_node_err(im, "no inputs"), SO_ERR) : SO_ERR_UNSUPPORTED;
    if (xs.rank < 0) return SO_ERR_UNSUPPORTED;
    if (onx_norm_axis(im, onx_att_i(n, "axis", 0), xs.rank, &a.axis) != SO_OK) return SO_ERR;
    return onx_emit(im, op, ins, na, 1, &a, nm, on, non, NULL);
}

static int imp_split(bctx *cx)
{
    IMP_LOCALS;
    int64_t sz[SO_MAX_INTS];
    int cnt;
    if ((r = onx_split_sizes(im, n, &xs, &a.axis, sz, &cnt)) != SO_OK) return r;
    a.n_ints = cnt;
    memcpy(a.ints, sz, (size_t)cnt * 8);
    return onx_emit(im, op, ins, 1, cnt, &a, nm, on, non, NULL);
}

static int imp_flatten(bctx *cx)
{
    IMP_LOCALS;
    if (xs.rank < 0) return SO_ERR_UNSUPPORTED;
    int64_t axv = onx_att_i(n, "axis", 1);
    if (axv < 0) axv += xs.rank;
    if (axv < 0 || axv > xs.rank) return onx_node_err(im, "axis %lld out of range for rank %d", (long long)onx_att_i(n, "axis", 1), xs.rank), SO_ERR;
    a.axis = (int32_t)axv;
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

static int imp_reshape(bctx *cx)
{
    IMP_LOCALS;
    so_shape t;
    if ((r = onx_reshape_target(im, n, &xs, onx_inval(im, n, 1), &t)) != SO_OK) return r;
    a.n_ints = t.rank;
    for (int i = 0; i < t.rank; i++) a.ints[i] = t.dim[i];
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

static int imp_transpose(bctx *cx)
{
    IMP_LOCALS;
    if (xs.rank < 0) return SO_ERR_UNSUPPORTED;
    int seen[SO_MAX_RANK] = {0};
    k = onx_att_ints(n, "perm", &p);
    if (k >= 0 && k != xs.rank) return onx_node_err(im, "perm has %ld entries for rank %d", k, xs.rank), SO_ERR;
    a.n_ints = xs.rank;
    for (int i = 0; i < xs.rank; i++) {
        a.ints[i] = k >= 0 ? p[i] : xs.rank - 1 - i;
        if (a.ints[i] < 0 || a.ints[i] >= xs.rank || seen[a.ints[i]]++) return onx_node_err(im, "perm is not a permutation"), SO_ERR;
    }
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

static int imp_squeeze(bctx *cx)
{
    IMP_LOCALS;
    int64_t ax[SO_MAX_RANK];
    int nax, present;
    if ((r = onx_get_axes(im, n, im->opset >= 13, ax, &nax, &present)) != SO_OK) return r;
    if (xs.rank < 0) return SO_ERR_UNSUPPORTED;
    if (op == SO_OP_UNSQUEEZE) {
        if (!present) return onx_node_err(im, "missing axes"), SO_ERR;
        if (xs.rank + nax > SO_MAX_RANK) return SO_ERR_UNSUPPORTED;
        if (onx_norm_axes(im, ax, nax, xs.rank + nax) != SO_OK) return SO_ERR;
    } else if (!present) {
        nax = 0;
        for (int i = 0; i < xs.rank; i++)
            if (xs.dim[i] == 1) ax[nax++] = i;
    } else {
        if (onx_norm_axes(im, ax, nax, xs.rank) != SO_OK) return SO_ERR;
        for (int i = 0; i < nax; i++)
            if (xs.dim[ax[i]] != 1) return onx_node_err(im, "cannot squeeze axis %lld of size %lld", (long long)ax[i], (long long)xs.dim[ax[i]]), SO_ERR;
    }
    a.n_ints = nax;
    memcpy(a.ints, ax, (size_t)nax * 8);
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

static int imp_expand(bctx *cx)
{
    IMP_LOCALS;
    int64_t d[SO_MAX_RANK];
    int cnt;
    val *sv = onx_inval(im, n, 1);
    if (!sv) return onx_node_err(im, "missing shape input"), SO_ERR;
    if ((r = onx_const_ints(im, sv, d, SO_MAX_RANK, &cnt, "shape")) != SO_OK) return r;
    if (xs.rank < 0) return SO_ERR_UNSUPPORTED;
    so_shape s = so_shape_make(cnt, d), os;
    if (onx_bshape(&xs, &s, &os)) {
        char b1[128], b2[128];
        return onx_node_err(im, "cannot expand %s to %s", so_shape_str(&xs, b1, sizeof b1), so_shape_str(&s, b2, sizeof b2)), SO_ERR;
    }
    a.n_ints = os.rank;
    for (int i = 0; i < os.rank; i++) a.ints[i] = os.dim[i];
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

static int imp_gather(bctx *cx)
{
    IMP_LOCALS;
    if (onx_dense_inputs(ins, n_in) != 2) return onx_node_err(im, "needs 2 inputs"), SO_ERR;
    if (xs.rank < 0) return SO_ERR_UNSUPPORTED;
    if (onx_norm_axis(im, onx_att_i(n, "axis", 0), xs.rank, &a.axis) != SO_OK) return SO_ERR;
    args[0] = x;
    args[1] = ins[1];
    if (ins[1]->is_const) {
        /* constant indices: int64, negatives resolved, range-checked */
        const ctensor *ic = &ins[1]->c;
        int64_t dim = xs.dim[a.axis], cnt = onx_ct_numel(ic);
        int need = !onx_ct_isint(ic);
        for (int64_t i = 0; i < cnt; i++) {
            int64_t v = onx_ct_geti(ic, i);
            if (v < -dim || v >= dim) return onx_node_err(im, "index %lld out of range for dimension %lld", (long long)v, (long long)dim), SO_ERR;
            if (v < 0) need = 1;
        }
        if (need) {
            ctensor c;
            if (onx_ct_new(im, &c, SO_I64, T_INT64, ic->shape.rank, ic->shape.dim) != SO_OK) return SO_ERR;
            for (int64_t i = 0; i < cnt; i++) {
                int64_t v = onx_ct_geti(ic, i);
                ((int64_t *)c.data)[i] = v < 0 ? v + dim : v;
            }
            args[1] = onx_bind_const(im, NULL, &c);
        }
    }
    return onx_emit(im, op, args, 2, 1, &a, nm, on, non, NULL);
}

static int imp_slice(bctx *cx)
{
    IMP_LOCALS;
    int nq;
    if ((r = onx_slice_quads(im, n, &xs, a.ints, &nq, NULL)) != SO_OK) return r;
    a.n_ints = 4 * nq;
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

/* LSTM (gates 4), GRU (3), RNN (1) with layout 0 (layout 1 is wrapped in Transposes by recurrent_batch_first);
   any activations (recurrent_acts), clip, LSTM's input_forget. A hole before a later optional input
   is filled with its neutral value, so inputs keep their ONNX positions. */
static int imp_recurrent(bctx *cx, int64_t gates)
{
    IMP_LOCALS;
    char buf[32];
    const char *dir = onx_att_s(n, "direction", buf, sizeof buf);
    if (!dir || !strcmp(dir, "forward")) a.direction = 0;
    else if (!strcmp(dir, "reverse")) a.direction = 1;
    else if (!strcmp(dir, "bidirectional")) a.direction = 2;
    else return onx_node_err(im, "unknown direction '%s'", dir), SO_ERR;
    int dirs = a.direction == 2 ? 2 : 1;
    static const int lstm_acts[3] = {SO_RACT_SIGMOID, SO_RACT_TANH, SO_RACT_TANH};
    if ((r = recurrent_acts(im, n, dirs, lstm_acts, gates == 4 ? 3 : gates == 3 ? 2 : 1, gates == 1, &a)) != SO_OK) return r;
    const Onnx__AttributeProto *clip = onx_att(n, "clip");
    if (clip && !(clip->f > 0.0f)) return onx_node_err(im, "clip %g is not positive", (double)clip->f), SO_ERR;
    a.clip_max = clip ? clip->f : 0.0f;
    int64_t forget = onx_att_i(n, "input_forget", 0);
    if (forget != 0 && (gates != 4 || forget != 1)) return onx_node_err(im, "input_forget %lld is not 0 or 1", (long long)forget), SO_ERR;
    if (gates == 4) a.mode = (int32_t)forget;
    if (onx_att_i(n, "layout", 0) != 0) return SO_ERR_UNSUPPORTED;
    if (gates == 3) {
        int64_t lbr = onx_att_i(n, "linear_before_reset", 0);
        if (lbr != 0 && lbr != 1) return onx_node_err(im, "linear_before_reset %lld is not 0 or 1", (long long)lbr), SO_ERR;
        a.mode = (int32_t)lbr;
    }
    if (xs.rank != 3) return SO_ERR_UNSUPPORTED;
    if (!onx_inval(im, n, 1) || !onx_inval(im, n, 2)) return onx_node_err(im, "missing W or R"), SO_ERR;
    so_shape rs = onx_vshape(im, onx_inval(im, n, 2));
    int64_t hidden = onx_att_i(n, "hidden_size", rs.rank == 3 ? rs.dim[2] : 0);
    if (hidden <= 0 || hidden > INT32_MAX) return onx_node_err(im, "missing or invalid hidden_size"), SO_ERR;
    a.hidden = (int32_t)hidden;
    int last = (int)n_in;
    while (last > 0 && !ins[last - 1]) last--;
    if (last > so_ops[op].max_in) return SO_ERR_UNSUPPORTED;
    int64_t T = xs.dim[0], Bt = xs.dim[1], H = a.hidden;
    for (int i = 0; i < last; i++) {
        if (ins[i]) {
            args[i] = ins[i];
            continue;
        }
        ctensor c;
        int64_t d[3];
        if (i == 3) {
            d[0] = dirs, d[1] = 2 * gates * H;
            if (onx_ct_new(im, &c, SO_F32, T_FLOAT, 2, d) != SO_OK) return SO_ERR;
        } else if (i == 4) {
            d[0] = Bt;
            if (onx_ct_new(im, &c, SO_I64, T_INT32, 1, d) != SO_OK) return SO_ERR;
            for (int64_t b = 0; b < Bt; b++) ((int64_t *)c.data)[b] = T;
        } else if (i == 5 || i == 6) {
            d[0] = dirs, d[1] = Bt, d[2] = H;
            if (onx_ct_new(im, &c, SO_F32, T_FLOAT, 3, d) != SO_OK) return SO_ERR;
        } else {
            return onx_node_err(im, "missing input %d", i), SO_ERR;
        }
        args[i] = onx_bind_const(im, NULL, &c);
    }
    return onx_emit(im, op, args, last, so_ops[op].n_out, &a, nm, on, non, NULL);
}

static int imp_lstm(bctx *cx) { return imp_recurrent(cx, 4); }
static int imp_gru(bctx *cx) { return imp_recurrent(cx, 3); }
static int imp_rnn(bctx *cx) { return imp_recurrent(cx, 1); }

static int imp_resize(bctx *cx)
{
    IMP_LOCALS;
    /* 4-D inputs resized in H and W by constant scales or sizes (of every axis, or of the axes the
       axes attribute lists, opset 18); nearest, linear or cubic
       (cubic_coeff_a, exclude_outside), antialias, keep_aspect_ratio_policy (opset 18), with every coordinate
       transform. Anything else (resizing N or C, computed scales) is kept verbatim. */
    char buf[64];
    const char *s;
    int64_t axes[4] = {0, 1, 2, 3};
    int nax = 4, policy = 0; /* keep_aspect_ratio_policy: stretch, not_larger, not_smaller */
    const char *of_axes = "a 4-D input";
    if (xs.rank != 4 || !x) return SO_ERR_UNSUPPORTED;
    s = onx_att_s(n, "mode", buf, sizeof buf);
    if (!s || !strcmp(s, "nearest")) a.mode = 0;
    else if (!strcmp(s, "linear")) a.mode = 1;
    else if (!strcmp(s, "cubic")) a.mode = 2;
    else return SO_ERR_UNSUPPORTED;
    a.n_ints = 7;
    a.ints[0] = SO_RESIZE_ASYMMETRIC; /* opset 10 */
    a.ints[1] = 0;
    int upsample = !strcmp(n->op_type, "Upsample"); /* opset 7-9: asymmetric, nearest rounds down */
    if (upsample) a.ints[1] = 2;                     /* floor */
    if (!upsample && im->opset >= 11) {
        s = onx_att_s(n, "coordinate_transformation_mode", buf, sizeof buf);
        if ((a.ints[0] = s ? onx_name_index(s, so_resize_coord_names, SO_RESIZE_COORD_COUNT) : SO_RESIZE_HALF_PIXEL) < 0) return SO_ERR_UNSUPPORTED;
        s = onx_att_s(n, "nearest_mode", buf, sizeof buf);
        if ((a.ints[1] = s ? onx_name_index(s, so_resize_nearest_names, 4) : 0) < 0) return SO_ERR_UNSUPPORTED;
        long nl = onx_att_ints(n, "axes", &p);
        if (nl > 4 || nl == 0) return onx_node_err(im, "has %ld axes for a 4-D input", nl), SO_ERR;
        if (nl > 0) {
            nax = (int)nl, of_axes = "the axes listed";
            for (int i = 0; i < nax; i++) { /* in the given order: scales / sizes follow it */
                axes[i] = p[i] < 0 ? p[i] + 4 : p[i];
                if (axes[i] < 0 || axes[i] > 3) return onx_node_err(im, "axis %lld out of range for a 4-D input", (long long)p[i]), SO_ERR;
                for (int j = 0; j < i; j++)
                    if (axes[j] == axes[i]) return onx_node_err(im, "axis %lld listed twice", (long long)p[i]), SO_ERR;
            }
        }
        a.ints[5] = onx_att_i(n, "exclude_outside", 0) != 0;
        a.ints[6] = a.mode != 0 && onx_att_i(n, "antialias", 0) != 0; /* no effect on nearest */
        if (a.mode == 2) a.value = onx_att_f(n, "cubic_coeff_a", -0.75f);
        if ((s = onx_att_s(n, "keep_aspect_ratio_policy", buf, sizeof buf)) && strcmp(s, "stretch")) {
            if (!strcmp(s, "not_larger")) policy = 1;
            else if (!strcmp(s, "not_smaller")) policy = 2;
            else return SO_ERR_UNSUPPORTED;
        }
    }
    float roi[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    if (a.ints[0] == SO_RESIZE_TF_CROP_AND_RESIZE) { /* a constant region, not cropping N or C; nearest or linear */
        val *rv = onx_inval(im, n, 1);
        if (a.mode == 2 || a.ints[5] || a.ints[6] || !rv || !rv->is_const || onx_ct_numel(&rv->c) != 2 * nax) return SO_ERR_UNSUPPORTED;
        for (int i = 0; i < nax; i++) { /* roi of the listed axes: starts, then ends */
            roi[axes[i]] = (float)onx_ct_getf(&rv->c, i);
            roi[4 + axes[i]] = (float)onx_ct_getf(&rv->c, nax + i);
        }
        if (roi[0] != 0 || roi[1] != 0 || roi[4] != 1 || roi[5] != 1) return SO_ERR_UNSUPPORTED;
        a.n_ints = 12;
        a.ints[7] = so_f32_to_bits(roi[2]), a.ints[8] = so_f32_to_bits(roi[3]);
        a.ints[9] = so_f32_to_bits(roi[6]), a.ints[10] = so_f32_to_bits(roi[7]);
        a.ints[11] = so_f32_to_bits(onx_att_f(n, "extrapolation_value", 0.0f));
    }
    val *sc = onx_inval(im, n, im->opset >= 11 && !upsample ? 2 : 1), *sz = im->opset >= 11 && !upsample ? onx_inval(im, n, 3) : NULL;
    if (sc && sc->is_const && onx_ct_numel(&sc->c) == 0) sc = NULL; /* empty scales beside sizes (opset 11-12) */
    float scale[4];
    int64_t out[4];
    const Onnx__AttributeProto *sa = upsample ? onx_att(n, "scales") : NULL; /* Upsample-7 */
    if (sa) {
        if (sa->n_floats != 4) return onx_node_err(im, "has %zu scales for a 4-D input", sa->n_floats), SO_ERR;
        for (int d = 0; d < 4; d++) {
            scale[d] = sa->floats[d];
            if (!(scale[d] > 0) || scale[d] > 1e6f) return onx_node_err(im, "invalid scale %g", (double)scale[d]), SO_ERR;
            out[d] = (int64_t)floorf((float)xs.dim[d] * scale[d]);
        }
        a.ints[2] = 0;
    } else if (sc) {
        if (!sc->is_const) return SO_ERR_UNSUPPORTED;
        if (onx_ct_numel(&sc->c) != nax) return onx_node_err(im, "has %lld scales for %s", (long long)onx_ct_numel(&sc->c), of_axes), SO_ERR;
        for (int d = 0; d < 4; d++) scale[d] = 1.0f;
        for (int i = 0; i < nax; i++) scale[axes[i]] = (float)onx_ct_getf(&sc->c, i);
        for (int d = 0; d < 4; d++) {
            if (!(scale[d] > 0) || scale[d] > 1e6f) return onx_node_err(im, "invalid scale %g", (double)scale[d]), SO_ERR;
            out[d] = (int64_t)floorf((float)xs.dim[d] * (roi[4 + d] - roi[d]) * scale[d]); /* roi: tf_crop_and_resize */
        }
        a.ints[2] = 0;
    } else if (sz) {
        int cnt = 0;
        int64_t given[4];
        if ((r = onx_const_ints(im, sz, given, 4, &cnt, "sizes")) != SO_OK) return r;
        if (cnt != nax) return onx_node_err(im, "has %d sizes for %s", cnt, of_axes), SO_ERR;
        for (int d = 0; d < 4; d++) out[d] = xs.dim[d], scale[d] = 1.0f;
        for (int i = 0; i < nax; i++) out[axes[i]] = given[i], scale[axes[i]] = (float)given[i] / (float)xs.dim[axes[i]];
        a.ints[2] = 1;
        if (policy) { /* one scale for the listed axes, the smallest (not_larger) or largest of theirs; sizes rounded from it */
            float ps = scale[axes[0]];
            for (int i = 1; i < nax; i++) ps = policy == 1 ? fminf(ps, scale[axes[i]]) : fmaxf(ps, scale[axes[i]]);
            int bind = -1; /* the spatial axis whose requested size gave it (the exporter requests that one again) */
            for (int i = 0; i < nax; i++) {
                if (bind < 0 && axes[i] >= 2 && scale[axes[i]] == ps) bind = (int)axes[i] - 2;
                out[axes[i]] = (int64_t)roundf(ps * (float)xs.dim[axes[i]]);
                scale[axes[i]] = ps;
            }
            if (bind < 0 && ps != 1.0f) return SO_ERR_UNSUPPORTED; /* N or C decided it and resizes */
            a.ints[2] = 2 + 2 * (policy - 1) + (bind < 0 ? 0 : bind);
        }
    } else
        return onx_node_err(im, "needs scales or sizes"), SO_ERR;
    if (out[0] != xs.dim[0] || out[1] != xs.dim[1]) return SO_ERR_UNSUPPORTED; /* resizing N or C */
    if (out[2] <= 0 || out[3] <= 0 || out[2] > INT32_MAX || out[3] > INT32_MAX)
        return onx_node_err(im, "invalid output size %lldx%lld", (long long)out[2], (long long)out[3]), SO_ERR;
    a.ints[3] = out[2];
    a.ints[4] = out[3];
    a.alpha = scale[2];
    a.beta = scale[3];
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

static int imp_hardsigmoid(bctx *cx)
{
    IMP_LOCALS;
    if ((na = onx_dense_inputs(ins, n_in)) != 1) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "has %d inputs", na), SO_ERR);
    a.alpha = onx_att_f(n, "alpha", 0.2f);
    a.beta = onx_att_f(n, "beta", 0.5f);
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

static int imp_elu(bctx *cx)
{
    IMP_LOCALS;
    if ((na = onx_dense_inputs(ins, n_in)) != 1) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "has %d inputs", na), SO_ERR);
    a.alpha = onx_att_f(n, "alpha", 1.0f);
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

static int imp_leakyrelu(bctx *cx)
{
    IMP_LOCALS;
    if ((na = onx_dense_inputs(ins, n_in)) != 1) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "has %d inputs", na), SO_ERR);
    a.alpha = onx_att_f(n, "alpha", 0.01f);
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

static int imp_plain(bctx *cx)
{
    IMP_LOCALS;
    /* operators without attributes (element-wise, MatMul): inputs as given */
    if ((na = onx_dense_inputs(ins, n_in)) < so_ops[op].min_in || na > so_ops[op].max_in) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "has %d inputs", na), SO_ERR);
    return onx_emit(im, op, ins, na, nout, &a, nm, on, non, NULL);
}

/* The import decision of every operator: its importer, or IMP_NONE for operators that have no
   ONNX form (sources, opaque, the rule language's internal operators). An operator without a
   decision here is an undeclared identifier: the build fails. */
#define IMP_NONE NULL
#define imp_input IMP_NONE
#define imp_weight IMP_NONE
#define imp_opaque IMP_NONE
#define imp_enlarge IMP_NONE
#define imp_const_pool IMP_NONE
#define imp_const_idconv IMP_NONE
#define imp_const_idmat IMP_NONE
#define imp_const_ones IMP_NONE
#define imp_bnfold_w IMP_NONE
#define imp_bnfold_b IMP_NONE
/* blocked-layout operators: imported from superopt's layout domain by build_layout_op */
#define imp_nchwc_in IMP_NONE
#define imp_nchwc_out IMP_NONE
#define imp_conv_nchwc IMP_NONE
#define imp_maxpool_nchwc IMP_NONE
#define imp_avgpool_nchwc IMP_NONE
#define imp_globalavgpool_nchwc IMP_NONE
#define imp_concat_nchwc IMP_NONE
#define imp_matmul imp_plain
#define imp_add imp_plain
#define imp_sub imp_plain
#define imp_mul imp_plain
#define imp_div imp_plain
#define imp_relu imp_plain
#define imp_sigmoid imp_plain
#define imp_tanh imp_plain
#define imp_erf imp_plain
#define imp_sqrt imp_plain
#define imp_exp imp_plain
#define imp_log imp_plain
#define imp_neg imp_plain
#define imp_reciprocal imp_plain
#define imp_hardswish imp_plain
#define imp_globalavgpool imp_plain
#define imp_identity imp_plain
#define imp_avgpool imp_maxpool
#define imp_reducesum imp_reducemean
#define imp_unsqueeze imp_squeeze

/* ---- operators of other exporters and of the conformance suite ---- */

/* Element-wise with attributes (defaults from the ONNX spec). */
static int imp_unary_attr(bctx *cx)
{
    IMP_LOCALS;
    if ((na = onx_dense_inputs(ins, n_in)) != 1) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "has %d inputs", na), SO_ERR);
    char buf[32];
    const char *s;
    switch (op) {
    case SO_OP_SELU:
        a.alpha = onx_att_f(n, "alpha", 1.67326319217681884765625f);
        a.beta = onx_att_f(n, "gamma", 1.05070102214813232421875f);
        break;
    case SO_OP_CELU:
        a.alpha = onx_att_f(n, "alpha", 1.0f);
        if (a.alpha == 0.0f) return onx_node_err(im, "alpha must not be 0"), SO_ERR;
        break;
    case SO_OP_THRESHOLDEDRELU: a.alpha = onx_att_f(n, "alpha", 1.0f); break;
    case SO_OP_SHRINK:
        a.alpha = onx_att_f(n, "lambd", 0.5f);
        a.beta = onx_att_f(n, "bias", 0.0f);
        break;
    case SO_OP_GELU:
        s = onx_att_s(n, "approximate", buf, sizeof buf);
        if (s && strcmp(s, "none") && strcmp(s, "tanh")) return onx_node_err(im, "unknown approximate '%s'", s), SO_ERR;
        a.mode = s && !strcmp(s, "tanh");
        break;
    default: break;
    }
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

/* Max / Min of one or more inputs: a chain of the binary operator (one input: the identity). */
static int imp_variadic(bctx *cx)
{
    IMP_LOCALS;
    val *acc = NULL;
    for (size_t j = 0; j < n_in; j++) {
        if (!ins[j]) continue;
        if (!acc) {
            acc = ins[j];
            continue;
        }
        val *pair[2] = {acc, ins[j]};
        int last = 1;
        for (size_t q = j + 1; q < n_in; q++) last &= !ins[q];
        int32_t idx;
        if ((r = onx_emit(im, op, pair, 2, 1, &a, nm, last ? on : NULL, last ? non : 0, &idx)) != SO_OK) return r;
        if (last) return SO_OK;
        acc = onx_anon_edge(im, idx, 0);
    }
    if (!acc) return onx_node_err(im, "has no inputs"), SO_ERR;
    so_strmap_put(&im->names, on[0], so_strmap_get(&im->names, n->input[0])); /* one input: itself */
    return SO_OK;
}

static int imp_argmax(bctx *cx)
{
    IMP_LOCALS;
    if (xs.rank < 0) return SO_ERR_UNSUPPORTED;
    if (onx_norm_axis(im, onx_att_i(n, "axis", 0), xs.rank, &a.axis) != SO_OK) return SO_ERR;
    a.keepdims = onx_att_i(n, "keepdims", 1) != 0;
    a.mode = onx_att_i(n, "select_last_index", 0) != 0;
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

/* Trilu: k from the optional second input (a constant), upper attribute */
static int imp_trilu(bctx *cx)
{
    IMP_LOCALS;
    a.mode = onx_att_i(n, "upper", 1) != 0;
    a.n_ints = 1;
    a.ints[0] = 0;
    val *kv = onx_inval(im, n, 1);
    if (kv) {
        int cnt = 0;
        if (!kv->is_const) return SO_ERR_UNSUPPORTED;
        if ((r = onx_const_ints(im, kv, a.ints, 1, &cnt, "k")) != SO_OK) return r;
        if (cnt != 1) return onx_node_err(im, "k must be a scalar"), SO_ERR;
    }
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

static int imp_gatherelements(bctx *cx)
{
    IMP_LOCALS;
    if ((na = onx_dense_inputs(ins, n_in)) != 2) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "has %d inputs", na), SO_ERR);
    if (xs.rank < 0 || onx_vshape(im, ins[1]).dtype != SO_I64) return SO_ERR_UNSUPPORTED; /* indices: int64 storage, constant or run time */
    if (onx_norm_axis(im, onx_att_i(n, "axis", 0), xs.rank, &a.axis) != SO_OK) return SO_ERR;
    return onx_emit(im, op, ins, 2, 1, &a, nm, on, non, NULL);
}

static int imp_depthtospace(bctx *cx)
{
    IMP_LOCALS;
    char buf[16];
    int64_t b = onx_att_i(n, "blocksize", 0);
    if (b < 1 || b > 4096) return onx_node_err(im, "invalid blocksize %lld", (long long)b), SO_ERR;
    a.kernel[0] = (int32_t)b;
    if (op == SO_OP_DEPTHTOSPACE) {
        const char *s = onx_att_s(n, "mode", buf, sizeof buf);
        if (s && strcmp(s, "DCR") && strcmp(s, "CRD")) return onx_node_err(im, "unknown mode '%s'", s), SO_ERR;
        a.mode = s && !strcmp(s, "CRD");
    }
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

#define imp_abs imp_plain
#define imp_floor imp_plain
#define imp_ceil imp_plain
#define imp_round imp_plain
#define imp_sign imp_plain
#define imp_softplus imp_plain
#define imp_softsign imp_plain
#define imp_sin imp_plain
#define imp_cos imp_plain
#define imp_tan imp_plain
#define imp_asin imp_plain
#define imp_acos imp_plain
#define imp_atan imp_plain
#define imp_sinh imp_plain
#define imp_cosh imp_plain
#define imp_asinh imp_plain
#define imp_acosh imp_plain
#define imp_atanh imp_plain
#define imp_mish imp_plain
#define imp_prelu imp_plain
#define imp_selu imp_unary_attr
#define imp_celu imp_unary_attr
#define imp_thresholdedrelu imp_unary_attr
#define imp_shrink imp_unary_attr
#define imp_gelu imp_unary_attr
#define imp_max imp_variadic
#define imp_min imp_variadic
#define imp_reducemax imp_reducemean
#define imp_reducemin imp_reducemean
#define imp_reduceprod imp_reducemean
#define imp_reducel1 imp_reducemean
#define imp_reducel2 imp_reducemean
#define imp_reducesumsquare imp_reducemean
#define imp_reducelogsum imp_reducemean
#define imp_reducelogsumexp imp_reducemean
#define imp_logsoftmax imp_softmax
#define imp_hardmax imp_softmax
#define imp_argmin imp_argmax
#define imp_spacetodepth imp_depthtospace

/* NegativeLogLikelihoodLoss, and SoftmaxCrossEntropyLoss as LogSoftmax (axis 1) + it: the target is
   int64 storage, constant or fed at run time (the kernel range-checks it) */
static int imp_nllloss(bctx *cx)
{
    IMP_LOCALS;
    char buf[16];
    int sce = !strcmp(n->op_type, "SoftmaxCrossEntropyLoss");
    if ((na = onx_dense_inputs(ins, n_in)) < 2) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "needs at least 2 inputs"), SO_ERR);
    if (xs.rank < 2 || onx_vshape(im, ins[1]).dtype != SO_I64) return SO_ERR_UNSUPPORTED;
    const char *s = onx_att_s(n, "reduction", buf, sizeof buf);
    if (!s || !strcmp(s, "mean")) a.mode = 2;
    else if (!strcmp(s, "sum")) a.mode = 1;
    else if (!strcmp(s, "none")) a.mode = 0;
    else return onx_node_err(im, "unknown reduction '%s'", s), SO_ERR;
    a.n_ints = 2;
    const Onnx__AttributeProto *ig = onx_att(n, "ignore_index");
    a.ints[0] = ig != NULL;
    a.ints[1] = ig ? ig->i : 0;
    if (!sce) {
        if (onx_extra_outputs(n, 1)) return SO_ERR_UNSUPPORTED;
        return onx_emit(im, op, ins, na, 1, &a, nm, on, non, NULL);
    }
    if (onx_extra_outputs(n, 2)) return SO_ERR_UNSUPPORTED;
    so_attr la;
    memset(&la, 0, sizeof la);
    la.axis = 1;
    int32_t lsi;
    char *const lp_name[1] = {non > 1 ? on[1] : (char *)""};
    if ((r = onx_emit(im, SO_OP_LOGSOFTMAX, ins, 1, 1, &la, nm, lp_name, 1, &lsi)) != SO_OK) return r;
    args[0] = non > 1 && on[1][0] ? onx_lookup(im, on[1]) : onx_anon_edge(im, lsi, 0);
    args[1] = ins[1];
    if (na > 2) args[2] = ins[2];
    return onx_emit(im, op, args, na, 1, &a, nm, on, 1, NULL);
}

/* Where: the condition is boolean (int64 0/1 storage), constant or fed at run time */
static int imp_where(bctx *cx)
{
    IMP_LOCALS;
    if ((na = onx_dense_inputs(ins, n_in)) != 3) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "has %d inputs", na), SO_ERR);
    if (onx_vshape(im, ins[0]).dtype != SO_I64) return SO_ERR_UNSUPPORTED;
    return onx_emit(im, op, ins, 3, 1, &a, nm, on, non, NULL);
}

static int imp_isinf(bctx *cx)
{
    IMP_LOCALS;
    if ((na = onx_dense_inputs(ins, n_in)) != 1) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "has %d inputs", na), SO_ERR);
    a.mode = (onx_att_i(n, "detect_negative", 1) != 0) | (onx_att_i(n, "detect_positive", 1) != 0) << 1;
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}
#define imp_equal imp_plain
#define imp_less imp_plain
#define imp_greater imp_plain
#define imp_lessorequal imp_plain
#define imp_greaterorequal imp_plain
#define imp_isnan imp_plain
#define imp_not imp_plain
#define imp_and imp_plain
#define imp_or imp_plain
#define imp_xor imp_plain

static int imp_mod(bctx *cx)
{
    IMP_LOCALS;
    if ((na = onx_dense_inputs(ins, n_in)) != 2) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "has %d inputs", na), SO_ERR);
    a.mode = onx_att_i(n, "fmod", 0) != 0;
    return onx_emit(im, op, ins, 2, 1, &a, nm, on, non, NULL);
}

/* The reduction attribute of ScatterElements / ScatterND into *mode (0 none, 1 add, 2 mul, 3 max, 4 min). */
static int scatter_reduction(imp *im, const Onnx__NodeProto *n, int32_t *mode)
{
    char buf[16];
    static const char *const red[5] = {"none", "add", "mul", "max", "min"};
    const char *s = onx_att_s(n, "reduction", buf, sizeof buf);
    *mode = s ? onx_name_index(s, red, 5) : 0;
    if (*mode < 0) return onx_node_err(im, "unknown reduction '%s'", s), SO_ERR;
    return SO_OK;
}

/* ScatterND: int64 indices, constant or fed at run time (range-checked by the kernel) */
static int imp_scatternd(bctx *cx)
{
    IMP_LOCALS;
    if ((na = onx_dense_inputs(ins, n_in)) != 3) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "has %d inputs", na), SO_ERR);
    if (xs.rank < 0 || onx_vshape(im, ins[1]).dtype != SO_I64) return SO_ERR_UNSUPPORTED;
    if (scatter_reduction(im, n, &a.mode) != SO_OK) return SO_ERR;
    return onx_emit(im, op, ins, 3, 1, &a, nm, on, non, NULL);
}

/* GridSample (opset 16 names bilinear / bicubic, opset 20 linear / cubic), 4-D only */
static int imp_gridsample(bctx *cx)
{
    IMP_LOCALS;
    char buf[32];
    if ((na = onx_dense_inputs(ins, n_in)) != 2) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "has %d inputs", na), SO_ERR);
    if (xs.rank != 4) return SO_ERR_UNSUPPORTED;
    const char *s = onx_att_s(n, "mode", buf, sizeof buf);
    if (!s || !strcmp(s, "bilinear") || !strcmp(s, "linear")) a.mode = 0;
    else if (!strcmp(s, "nearest")) a.mode = 1;
    else if (!strcmp(s, "bicubic") || !strcmp(s, "cubic")) a.mode = 2;
    else return onx_node_err(im, "unknown mode '%s'", s), SO_ERR;
    static const char *const pad[3] = {"zeros", "border", "reflection"};
    s = onx_att_s(n, "padding_mode", buf, sizeof buf);
    a.n_ints = 2;
    if ((a.ints[0] = s ? onx_name_index(s, pad, 3) : 0) < 0) return onx_node_err(im, "unknown padding_mode '%s'", s), SO_ERR;
    a.ints[1] = onx_att_i(n, "align_corners", 0) != 0;
    return onx_emit(im, op, ins, 2, 1, &a, nm, on, non, NULL);
}

/* Cast of a value computed at run time (constants fold at import; float -> float is aliased in
   onx_import_node) */
static int imp_cast(bctx *cx)
{
    IMP_LOCALS;
    if ((na = onx_dense_inputs(ins, n_in)) != 1) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "has %d inputs", na), SO_ERR);
    int64_t to = onx_att_i(n, "to", 0);
    if (!so_dtype_storage((int32_t)to))
        return onx_node_err(im, "Cast to %s is not supported (float32, int64, int32, bool)", onx_onnx_type_name((int32_t)to)), SO_ERR;
    a.mode = (int32_t)to;
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

/* ConvTranspose (2-D): output_padding, and output_shape / auto_pad resolved into explicit pads */
static int imp_convtranspose(bctx *cx)
{
    IMP_LOCALS;
    if ((na = onx_dense_inputs(ins, n_in)) < 2) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "needs at least 2 inputs"), SO_ERR);
    so_shape ws = onx_vshape(im, ins[1]);
    if (xs.rank != 4 || ws.rank != 4) return SO_ERR_UNSUPPORTED;
    int64_t ker[2] = {ws.dim[2], ws.dim[3]};
    if ((k = onx_att_ints(n, "kernel_shape", &p)) >= 0 && (k != 2 || p[0] != ker[0] || p[1] != ker[1]))
        return k != 2 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "kernel_shape does not match the weight shape"), SO_ERR);
    /* strides, dilations and explicit pads as for Conv (auto_pad handled below) */
    char buf[32];
    const char *ap = onx_att_s(n, "auto_pad", buf, sizeof buf);
    int same = ap && (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER"));
    if (ap && ap[0] && strcmp(ap, "NOTSET") && strcmp(ap, "VALID") && !same) return onx_node_err(im, "unknown auto_pad '%s'", ap), SO_ERR;
    if ((r = conv_pool_attr(im, n, &xs, ker, 1, &a)) != SO_OK && !same) return r;
    if (same) memset(a.pad, 0, sizeof a.pad);
    int64_t group = onx_att_i(n, "group", 1);
    if (group <= 0 || group > INT32_MAX) return onx_node_err(im, "invalid group %lld", (long long)group), SO_ERR;
    a.group = (int32_t)group;
    a.n_ints = 2;
    if ((k = onx_att_ints(n, "output_padding", &p)) >= 0) {
        if (k != 2) return SO_ERR_UNSUPPORTED;
        for (int i = 0; i < 2; i++) {
            if (p[i] < 0 || p[i] >= (a.stride[i] > a.dilation[i] ? a.stride[i] : a.dilation[i])) return onx_node_err(im, "invalid output_padding"), SO_ERR;
            a.ints[i] = p[i];
        }
    }
    const int64_t *os = NULL;
    if ((k = onx_att_ints(n, "output_shape", &os)) >= 0 && k != 2 && k != 4) return SO_ERR_UNSUPPORTED;
    if (os || same) {
        for (int i = 0; i < 2; i++) {
            int64_t in = xs.dim[2 + i], ext = (ker[i] - 1) * a.dilation[i] + 1;
            int64_t want = os ? os[k - 2 + i] : in * a.stride[i];
            int64_t tot = a.stride[i] * (in - 1) + a.ints[i] + ext - want;
            if (tot < 0) { /* a larger output than the pads can give: the extra goes into output_padding */
                a.ints[i] -= tot;
                tot = 0;
            }
            int64_t lo = same && !strcmp(ap, "SAME_LOWER") ? tot - tot / 2 : tot / 2;
            a.pad[i] = (int32_t)lo;
            a.pad[2 + i] = (int32_t)(tot - lo);
        }
    }
    return onx_emit(im, op, ins, na, 1, &a, nm, on, non, NULL);
}

/* ---------------- 3-D convolution and pooling (rank-5 inputs; ops.def's ints layout) ---------------- */

/* Reads strides, dilations, pads / auto_pad (and, transposed, output_padding / output_shape) of a 3-D Conv,
   ConvTranspose or pool with kernel ker into a->ints (15 or 18). */
static int spatial3d(imp *im, const Onnx__NodeProto *n, const so_shape *xs, const int64_t *ker, int transposed, so_attr *a)
{
    const int64_t *p;
    long k;
    int64_t *v = a->ints;
    a->n_ints = transposed ? 18 : 15;
    for (int i = 0; i < 3; i++) v[i] = ker[i], v[3 + i] = 1, v[6 + i] = 1, v[9 + i] = v[12 + i] = 0, v[15 + i] = 0;
    static const char *const names[2] = {"strides", "dilations"};
    for (int q = 0; q < 2; q++)
        if ((k = onx_att_ints(n, names[q], &p)) >= 0) {
            if (k != 3) return onx_node_err(im, "%s has %ld values for 3 spatial axes", names[q], k), SO_ERR;
            for (int i = 0; i < 3; i++) v[3 * (q + 1) + i] = p[i];
        }
    for (int i = 0; i < 9; i++)
        if (v[i] <= 0 || v[i] > INT32_MAX) return onx_node_err(im, "invalid kernel/stride/dilation"), SO_ERR;
    if (transposed && (k = onx_att_ints(n, "output_padding", &p)) >= 0) {
        if (k != 3) return onx_node_err(im, "output_padding has %ld values for 3 spatial axes", k), SO_ERR;
        for (int i = 0; i < 3; i++) {
            if (p[i] < 0 || p[i] >= SO_MAX(v[3 + i], v[6 + i])) return onx_node_err(im, "invalid output_padding"), SO_ERR;
            v[15 + i] = p[i];
        }
    }
    char buf[32];
    const char *ap = onx_att_s(n, "auto_pad", buf, sizeof buf);
    int same = ap && (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")), lower = same && ap[5] == 'L';
    if (ap && ap[0] && strcmp(ap, "NOTSET") && strcmp(ap, "VALID") && !same) return onx_node_err(im, "unknown auto_pad '%s'", ap), SO_ERR;
    if ((!ap || !ap[0] || !strcmp(ap, "NOTSET")) && (k = onx_att_ints(n, "pads", &p)) >= 0) {
        if (k != 6) return onx_node_err(im, "pads has %ld values for 3 spatial axes", k), SO_ERR;
        for (int i = 0; i < 6; i++) {
            if (p[i] < 0 || p[i] > INT32_MAX) return onx_node_err(im, "invalid pad %lld", (long long)p[i]), SO_ERR;
            v[9 + i] = p[i];
        }
    }
    const int64_t *os = NULL;
    if (transposed && (k = onx_att_ints(n, "output_shape", &os)) >= 0 && k != 3 && k != 5)
        return onx_node_err(im, "output_shape has %ld values", k), SO_ERR;
    if (!same && !os) return SO_OK;
    for (int i = 0; i < 3; i++) {
        int64_t in = xs->dim[2 + i], s = v[3 + i], ext = (ker[i] - 1) * v[6 + i] + 1, tot;
        if (transposed) { /* as for 2-D ConvTranspose: the output is output_shape, or input x stride */
            int64_t want = os ? os[k - 3 + i] : in * s;
            tot = s * (in - 1) + v[15 + i] + ext - want;
            if (tot < 0) v[15 + i] -= tot, tot = 0;
            int64_t lo = lower ? tot - tot / 2 : tot / 2;
            v[9 + i] = lo, v[12 + i] = tot - lo;
        } else {
            int64_t out = (in + s - 1) / s;
            tot = (out - 1) * s + ext - in;
            if (tot < 0) tot = 0;
            int64_t lo = lower ? tot - tot / 2 : tot / 2;
            v[9 + i] = lo, v[12 + i] = tot - lo;
        }
    }
    return SO_OK;
}

/* Conv / ConvTranspose on [N,C,D,H,W]: the kernel from the weight [., ., kd, kh, kw] */
static int imp_conv3d_any(bctx *cx, int transposed)
{
    IMP_LOCALS;
    if ((na = onx_dense_inputs(ins, n_in)) < 2) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "needs at least 2 inputs"), SO_ERR);
    so_shape ws = onx_vshape(im, ins[1]);
    if (xs.rank != 5 || ws.rank != 5) return onx_node_err(im, "input of rank %d and weight of rank %d: a 3-D %s needs both of rank 5", xs.rank, ws.rank, n->op_type), SO_ERR;
    int64_t ker[3] = {ws.dim[2], ws.dim[3], ws.dim[4]};
    if ((k = onx_att_ints(n, "kernel_shape", &p)) >= 0 && (k != 3 || p[0] != ker[0] || p[1] != ker[1] || p[2] != ker[2]))
        return onx_node_err(im, "kernel_shape does not match the weight shape"), SO_ERR;
    if ((r = spatial3d(im, n, &xs, ker, transposed, &a)) != SO_OK) return r;
    int64_t group = onx_att_i(n, "group", 1);
    if (group <= 0 || group > INT32_MAX) return onx_node_err(im, "invalid group %lld", (long long)group), SO_ERR;
    a.group = (int32_t)group;
    return onx_emit(im, op, ins, na, 1, &a, nm, on, non, NULL);
}

static int imp_conv3d(bctx *cx) { return imp_conv3d_any(cx, 0); }
static int imp_convtranspose3d(bctx *cx) { return imp_conv3d_any(cx, 1); }

/* MaxPool (one output: no indices, storage_order 0) / AveragePool on [N,C,D,H,W] */
static int imp_pool3d(bctx *cx)
{
    IMP_LOCALS;
    if ((k = onx_att_ints(n, "kernel_shape", &p)) != 3) return onx_node_err(im, "kernel_shape has %ld values for 3 spatial axes", k), SO_ERR;
    if (onx_extra_outputs(n, 1) || onx_att_i(n, "storage_order", 0) != 0) return SO_ERR_UNSUPPORTED;
    if ((r = spatial3d(im, n, &xs, p, 0, &a)) != SO_OK) return r;
    a.ceil_mode = onx_att_i(n, "ceil_mode", 0) != 0;
    if (op == SO_OP_AVGPOOL3D) a.count_include_pad = onx_att_i(n, "count_include_pad", 0) != 0;
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

#define imp_maxpool3d imp_pool3d
#define imp_avgpool3d imp_pool3d

/* ReverseSequence: batch_axis / time_axis 0 and 1; int64 sequence_lens (fed at run time or constant) */
static int imp_reversesequence(bctx *cx)
{
    IMP_LOCALS;
    if ((na = onx_dense_inputs(ins, n_in)) != 2) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "has %d inputs", na), SO_ERR);
    int64_t bt = onx_att_i(n, "batch_axis", 1), tm = onx_att_i(n, "time_axis", 0);
    if ((bt != 0 && bt != 1) || (tm != 0 && tm != 1) || bt == tm) return onx_node_err(im, "batch_axis %lld and time_axis %lld must be 0 and 1", (long long)bt, (long long)tm), SO_ERR;
    if (onx_vshape(im, ins[1]).dtype != SO_I64) return SO_ERR_UNSUPPORTED;
    a.axis = (int32_t)tm;
    a.mode = (int32_t)bt;
    return onx_emit(im, op, ins, 2, 1, &a, nm, on, non, NULL);
}

/* MaxPool (4-D) whose Indices output is used */
static int imp_maxpoolidx(bctx *cx)
{
    IMP_LOCALS;
    if ((r = pool_window(im, n, &xs, 1, &a)) != SO_OK) return r;
    int64_t so = onx_att_i(n, "storage_order", 0);
    if (so != 0 && so != 1) return onx_node_err(im, "storage_order %lld is not 0 or 1", (long long)so), SO_ERR;
    a.mode = (int32_t)so;
    return onx_emit(im, op, ins, 1, 2, &a, nm, on, non, NULL);
}

/* MaxUnpool (4-D): the output shape from the output_shape input (constant) or as the pool's inverse,
   (in - 1) * stride + kernel - pads */
static int imp_maxunpool(bctx *cx)
{
    IMP_LOCALS;
    if (n_in < 2 || !ins[0] || !ins[1] || xs.rank != 4 || onx_vshape(im, ins[1]).dtype != SO_I64) return SO_ERR_UNSUPPORTED;
    int64_t ker[2];
    if ((k = onx_att_ints(n, "kernel_shape", &p)) != 2) return k < 0 ? (onx_node_err(im, "missing kernel_shape"), SO_ERR) : SO_ERR_UNSUPPORTED;
    ker[0] = p[0], ker[1] = p[1];
    if ((r = conv_pool_attr(im, n, &xs, ker, 0, &a)) != SO_OK) return r;
    a.n_ints = 4;
    if (n_in > 2 && ins[2]) {
        int cnt = 0;
        if ((r = onx_const_ints(im, ins[2], a.ints, 4, &cnt, "output_shape")) != SO_OK) return r;
        if (cnt != 4) return onx_node_err(im, "output_shape has %d values for a 4-D input", cnt), SO_ERR;
    } else {
        a.ints[0] = xs.dim[0], a.ints[1] = xs.dim[1];
        for (int i = 0; i < 2; i++) a.ints[2 + i] = (xs.dim[2 + i] - 1) * a.stride[i] + ker[i] - a.pad[i] - a.pad[2 + i];
    }
    return onx_emit(im, op, ins, 2, 1, &a, nm, on, non, NULL);
}

/* RoiAlign, average mode: output size, sampling_ratio, spatial_scale, half_pixel (opset 16) or output_half_pixel */
static int imp_roialign(bctx *cx)
{
    IMP_LOCALS;
    char buf[32];
    const char *s = onx_att_s(n, "mode", buf, sizeof buf);
    if ((na = onx_dense_inputs(ins, n_in)) != 3) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "has %d inputs", na), SO_ERR);
    int max_mode = s && !strcmp(s, "max");
    if (s && !max_mode && strcmp(s, "avg")) return onx_node_err(im, "unknown mode '%s' (avg or max)", s), SO_ERR;
    if (xs.rank != 4 || onx_vshape(im, ins[2]).dtype != SO_I64) return SO_ERR_UNSUPPORTED;
    s = onx_att_s(n, "coordinate_transformation_mode", buf, sizeof buf);
    a.mode = im->opset >= 16 ? 1 : 0;
    if (s) {
        if (!strcmp(s, "half_pixel")) a.mode = 1;
        else if (!strcmp(s, "output_half_pixel")) a.mode = 0;
        else return onx_node_err(im, "unknown coordinate_transformation_mode '%s'", s), SO_ERR;
    }
    int64_t oh = onx_att_i(n, "output_height", 1), ow = onx_att_i(n, "output_width", 1), sr = onx_att_i(n, "sampling_ratio", 0);
    if (oh < 1 || ow < 1 || oh > INT32_MAX || ow > INT32_MAX || sr < 0 || sr > INT32_MAX) return onx_node_err(im, "invalid output size or sampling_ratio"), SO_ERR;
    a.kernel[0] = (int32_t)oh, a.kernel[1] = (int32_t)ow;
    a.n_ints = 2;
    a.ints[0] = sr;
    a.ints[1] = max_mode;
    a.alpha = onx_att_f(n, "spatial_scale", 1.0f);
    return onx_emit(im, op, ins, 3, 1, &a, nm, on, non, NULL);
}

/* DFT (opset 17: axis attribute; 20: axis input): constant dft_length and axis */
static int imp_dft(bctx *cx)
{
    IMP_LOCALS;
    if (!x || xs.rank < 2) return SO_ERR_UNSUPPORTED;
    int64_t ax = onx_att_i(n, "axis", 1), len;
    int cnt = 0;
    if (n_in > 2 && ins[2]) { /* opset 20: axis as an input */
        if ((r = onx_const_ints(im, ins[2], &ax, 1, &cnt, "axis")) != SO_OK) return r;
        if (cnt != 1) return onx_node_err(im, "axis must be a scalar"), SO_ERR;
    } else if (im->opset >= 20)
        ax = -2;
    if (ax < 0) ax += xs.rank;
    if (ax < 0 || ax >= xs.rank - 1) return onx_node_err(im, "axis %lld is not a signal axis", (long long)ax), SO_ERR;
    a.axis = (int32_t)ax;
    len = xs.dim[ax];
    if (n_in > 1 && ins[1]) {
        if ((r = onx_const_ints(im, ins[1], &len, 1, &cnt, "dft_length")) != SO_OK) return r;
        if (cnt != 1 || len < 1) return onx_node_err(im, "invalid dft_length"), SO_ERR;
    }
    a.n_ints = 1;
    a.ints[0] = len;
    a.mode = (onx_att_i(n, "inverse", 0) != 0) | (onx_att_i(n, "onesided", 0) != 0) << 1;
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

/* STFT: constant frame_step and frame_length (or the window's length), optional window */
static int imp_stft(bctx *cx)
{
    IMP_LOCALS;
    int64_t step = 0, flen = 0;
    int cnt = 0;
    if (!x || n_in < 2 || !ins[1]) return onx_node_err(im, "needs a frame_step"), SO_ERR;
    if ((r = onx_const_ints(im, ins[1], &step, 1, &cnt, "frame_step")) != SO_OK) return r;
    val *win = n_in > 2 ? ins[2] : NULL;
    if (n_in > 3 && ins[3]) {
        if ((r = onx_const_ints(im, ins[3], &flen, 1, &cnt, "frame_length")) != SO_OK) return r;
    } else if (win) {
        so_shape ws = onx_vshape(im, win);
        flen = ws.rank == 1 ? ws.dim[0] : 0;
    }
    if (step < 1 || flen < 1) return onx_node_err(im, "invalid frame_step %lld or frame_length %lld", (long long)step, (long long)flen), SO_ERR;
    a.n_ints = 2;
    a.ints[0] = step, a.ints[1] = flen;
    a.mode = onx_att_i(n, "onesided", 1) != 0;
    args[0] = x;
    if (win) args[1] = win;
    return onx_emit(im, op, args, win ? 2 : 1, 1, &a, nm, on, non, NULL);
}

static int imp_lrn(bctx *cx)
{
    IMP_LOCALS;
    int64_t size = onx_att_i(n, "size", 0);
    if (size < 1 || size > INT32_MAX) return onx_node_err(im, "invalid size %lld", (long long)size), SO_ERR;
    a.kernel[0] = (int32_t)size;
    a.alpha = onx_att_f(n, "alpha", 1e-4f);
    a.beta = onx_att_f(n, "beta", 0.75f);
    a.value = onx_att_f(n, "bias", 1.0f);
    return onx_emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
}

/* ScatterElements (and Scatter-9/11): int64 indices, constant or fed at run time (range-checked by the kernel) */
static int imp_scatterelements(bctx *cx)
{
    IMP_LOCALS;
    if ((na = onx_dense_inputs(ins, n_in)) != 3) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "has %d inputs", na), SO_ERR);
    if (xs.rank < 0 || onx_vshape(im, ins[1]).dtype != SO_I64) return SO_ERR_UNSUPPORTED;
    if (onx_norm_axis(im, onx_att_i(n, "axis", 0), xs.rank, &a.axis) != SO_OK) return SO_ERR;
    if (scatter_reduction(im, n, &a.mode) != SO_OK) return SO_ERR;
    return onx_emit(im, op, ins, 3, 1, &a, nm, on, non, NULL);
}

static int imp_gathernd(bctx *cx)
{
    IMP_LOCALS;
    if ((na = onx_dense_inputs(ins, n_in)) != 2) return na < 0 ? SO_ERR_UNSUPPORTED : (onx_node_err(im, "has %d inputs", na), SO_ERR);
    if (onx_vshape(im, ins[1]).dtype != SO_I64) return SO_ERR_UNSUPPORTED;
    int64_t b = onx_att_i(n, "batch_dims", 0);
    if (b < 0 || b >= SO_MAX_RANK) return onx_node_err(im, "invalid batch_dims %lld", (long long)b), SO_ERR;
    a.axis = (int32_t)b;
    return onx_emit(im, op, ins, 2, 1, &a, nm, on, non, NULL);
}

/* TopK: k from the second input (opset 10+, a constant) or the attribute (opset 1-9) */
static int imp_topk(bctx *cx)
{
    IMP_LOCALS;
    if (xs.rank < 0) return SO_ERR_UNSUPPORTED;
    if (onx_norm_axis(im, onx_att_i(n, "axis", -1), xs.rank, &a.axis) != SO_OK) return SO_ERR;
    a.n_ints = 1;
    val *kv = onx_inval(im, n, 1);
    if (kv) {
        int cnt = 0;
        if (!kv->is_const) return SO_ERR_UNSUPPORTED;
        if ((r = onx_const_ints(im, kv, a.ints, 1, &cnt, "k")) != SO_OK) return r;
        if (cnt != 1) return onx_node_err(im, "k must have one element"), SO_ERR;
    } else
        a.ints[0] = onx_att_i(n, "k", -1);
    if (a.ints[0] < 0) return onx_node_err(im, "missing or negative k"), SO_ERR;
    a.mode = (onx_att_i(n, "largest", 1) != 0) | 2; /* the values come out sorted either way */
    return onx_emit(im, op, ins, 1, 2, &a, nm, on, non, NULL);
}

#define imp_det imp_plain

/* TfIdfVectorizer: the attributes' pool, n-gram starts, output indexes and weights become constant inputs 1-4
   (too long for so_attr), checked here so that the kernel can trust them; pool_strings (string input) refused. */
static int imp_tfidfvectorizer(bctx *cx)
{
    IMP_LOCALS;
    char buf[16];
    if (onx_att(n, "pool_strings")) return onx_node_err(im, "string n-grams (pool_strings) are not supported: superopt holds no strings"), SO_ERR;
    if (xs.rank < 0) return SO_ERR_UNSUPPORTED;
    char sb[64];
    if (xs.dtype != SO_I64 || (xs.rank != 1 && xs.rank != 2))
        return onx_node_err(im, "input %s must be an int32 / int64 [C] or [N, C]", so_shape_str(&xs, sb, sizeof sb)), SO_ERR;
    const char *s = onx_att_s(n, "mode", buf, sizeof buf);
    static const char *const modes[3] = {"TF", "IDF", "TFIDF"};
    if (!s || (a.mode = onx_name_index(s, modes, 3)) < 0) return onx_node_err(im, "mode '%s' is not TF, IDF or TFIDF", s ? s : ""), SO_ERR;
    const int64_t lo = onx_att_i(n, "min_gram_length", 0), hi = onx_att_i(n, "max_gram_length", 0), skip = onx_att_i(n, "max_skip_count", 0);
    if (lo < 1 || hi < lo || hi > 64 || skip < 0 || skip > 1 << 20)
        return onx_node_err(im, "invalid min_gram_length %lld, max_gram_length %lld or max_skip_count %lld", (long long)lo, (long long)hi, (long long)skip), SO_ERR;
    const int64_t *pool, *starts, *idx;
    const long P = onx_att_ints(n, "pool_int64s", &pool), G = onx_att_ints(n, "ngram_counts", &starts), M = onx_att_ints(n, "ngram_indexes", &idx);
    if (P < 1 || G < 1 || M < 1) return onx_node_err(im, "needs pool_int64s, ngram_counts and ngram_indexes"), SO_ERR;
    int64_t total = 0, K = 0;
    for (long g = 0; g < G; g++) { /* level g holds (g+1)-grams from starts[g] to the next start (or the pool's end) */
        const int64_t end = g + 1 < G ? starts[g + 1] : P;
        if (starts[g] < 0 || end < starts[g] || end > P || (end - starts[g]) % (g + 1))
            return onx_node_err(im, "ngram_counts [%ld] = %lld does not split pool_int64s (%ld values) into %ld-grams", g, (long long)starts[g], P, g + 1), SO_ERR;
        total += (end - starts[g]) / (g + 1);
    }
    if (starts[0] != 0 || total != M) return onx_node_err(im, "ngram_indexes has %ld values for %lld n-grams in the pool", M, (long long)total), SO_ERR;
    for (long m = 0; m < M; m++) {
        if (idx[m] < 0 || idx[m] > INT32_MAX) return onx_node_err(im, "ngram_indexes [%ld] = %lld out of range", m, (long long)idx[m]), SO_ERR;
        K = idx[m] + 1 > K ? idx[m] + 1 : K;
    }
    const Onnx__AttributeProto *wa = onx_att(n, "weights");
    if (wa && wa->n_floats && (long)wa->n_floats != M) return onx_node_err(im, "weights has %zu values for %ld n-grams", wa->n_floats, M), SO_ERR;
    a.n_ints = 4, a.ints[0] = lo, a.ints[1] = hi, a.ints[2] = skip, a.ints[3] = K;
    const int64_t lens[3] = {P, G, M};
    const int64_t *src[3] = {pool, starts, idx};
    args[0] = x;
    for (int q = 0; q < 3; q++) {
        ctensor c;
        if (onx_ct_new(im, &c, SO_I64, T_INT64, 1, &lens[q]) != SO_OK) return SO_ERR;
        memcpy(c.data, src[q], (size_t)lens[q] * sizeof *src[q]);
        args[q + 1] = onx_bind_const(im, NULL, &c);
    }
    na = 4;
    if (wa && wa->n_floats) {
        ctensor c;
        if (onx_ct_new(im, &c, SO_F32, T_FLOAT, 1, &lens[2]) != SO_OK) return SO_ERR;
        memcpy(c.data, wa->floats, (size_t)M * sizeof(float));
        args[na++] = onx_bind_const(im, NULL, &c);
    }
    return onx_emit(im, op, args, na, 1, &a, nm, on, non, NULL);
}

typedef int (*import_fn)(bctx *cx);
static const import_fn importers[SO_OP_COUNT] = {
#define X(e, l, ...) [SO_OP_##e] = imp_##l,
#include "ops.def"
#undef X
};

int so_onnx_imports(so_op op) { return importers[op] != IMP_NONE; }

int so_onnx_import_drops_attrs(so_op op) { return importers[op] == imp_plain && (so_ops[op].attrs & ~(unsigned)SO_A_ACT) != 0; }

/* Maps one ONNX node onto table op `op` through its importer. SO_ERR_UNSUPPORTED: keep it verbatim instead. */
int onx_build_op(imp *im, const Onnx__NodeProto *n, so_op op, val **ins, size_t n_in)
{
    if (importers[op] == IMP_NONE) return SO_ERR_UNSUPPORTED; /* never reached: such operators have no ONNX name */
    val *x = n_in > 0 ? ins[0] : NULL;
    if (!x && so_ops[op].min_in > 0) return onx_node_err(im, "missing input 0"), SO_ERR;
    int nout = so_ops[op].n_out;
    if (nout > 0 && onx_extra_outputs(n, (size_t)nout) && op != SO_OP_LAYERNORM && op != SO_OP_NLLLOSS) return SO_ERR_UNSUPPORTED;
    bctx cx = {im, n, op, ins, n_in, x, x ? onx_vshape(im, x) : (so_shape){.rank = -1}, onx_node_name(im, n, NULL), n->output, (int)n->n_output, nout};
    return importers[op](&cx);
}

