/* onnx_node.c - one ONNX node into the graph: the route table (fold, alias, expand, inline If, refuse), opaque nodes with declared shapes, superopt's layout-domain operators. */
#include "onnx_priv.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 if the node has a dilations attribute with a value other than 1. */
static int pool_dilated(const Onnx__NodeProto *n)
{
    const int64_t *p;
    long k = onx_att_ints(n, "dilations", &p);
    for (long i = 0; i < k; i++)
        if (p[i] != 1) return 1;
    return 0;
}

/* Output shapes of a few common ops the optimizer does not know (used when value_info is silent). */
static int opaque_rule_shape(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in, int k, so_shape *out)
{
    static const char *const same[] = {"LeakyRelu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Softplus",
                                       "Softsign", "Abs", "Floor", "Ceil", "Round", "Sign", "Not", "Mish", "Gelu",
                                       "ThresholdedRelu", "LogSoftmax", "Hardmax", "Sin", "Cos", "IsNaN", "IsInf",
                                       "InstanceNormalization", "LpNormalization", "LRN", "Shrink", "CumSum",
                                       "Cast", "Identity", "Dropout", "Softmax", "Clip", "Relu", "Sigmoid", "Tanh",
                                       "Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Erf", "BatchNormalization"};
    static const char *const bcast[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or",
                                        "Xor", "Mod", "PRelu", "Max", "Min", "Sum", "Mean", "Add", "Sub", "Mul",
                                        "Div", "Pow", "BitShift"};
    const char *t = n->op_type;
    if (n_in == 0 || !ins[0]) return 0;
    so_shape s0 = onx_vshape(im, ins[0]);
    if (s0.rank < 0) return 0;
    int dflt = n->domain == NULL || !n->domain[0] || !strcmp(n->domain, "ai.onnx");
    if (!dflt) return 0;
    if (k == 0) {
        for (size_t i = 0; i < SO_ARRAY_LEN(same); i++)
            if (!strcmp(t, same[i])) {
                *out = s0;
                if (!strcmp(t, "Cast")) out->dtype = (int32_t)onx_att_i(n, "to", s0.dtype);
                if (!strncmp(t, "Is", 2) || !strcmp(t, "Not")) out->dtype = T_BOOL;
                return 1;
            }
        for (size_t i = 0; i < SO_ARRAY_LEN(bcast); i++)
            if (!strcmp(t, bcast[i])) {
                so_shape o = s0;
                for (size_t j = 1; j < n_in; j++) {
                    if (!ins[j]) continue;
                    so_shape sj = onx_vshape(im, ins[j]);
                    if (sj.rank < 0 || onx_bshape(&o, &sj, &o)) return 0;
                }
                if (onx_is_cmp(t) || onx_is_logic(t)) o.dtype = T_BOOL;
                *out = o;
                return 1;
            }
        if (!strcmp(t, "Where") && n_in == 3 && ins[1] && ins[2]) {
            so_shape s1 = onx_vshape(im, ins[1]), s2 = onx_vshape(im, ins[2]), o;
            if (s1.rank < 0 || s2.rank < 0 || onx_bshape(&s1, &s2, &o) || onx_bshape(&s0, &o, &o)) return 0;
            o.dtype = s1.dtype;
            *out = o;
            return 1;
        }
    }
    if (k == 0 && (!strcmp(t, "Resize") || !strcmp(t, "Upsample"))) {
        /* output size from constant sizes, or floor(dim * scale) from constant scales */
        val *sz = !strcmp(t, "Resize") && n_in > 3 ? ins[3] : NULL;
        val *sc = !strcmp(t, "Resize") ? (n_in > 2 ? ins[2] : NULL) : (n_in > 1 ? ins[1] : NULL);
        so_shape o = s0;
        if (onx_att(n, "axes")) return 0;
        if (sz && sz->is_const && onx_ct_numel(&sz->c) == s0.rank) {
            for (int i = 0; i < s0.rank; i++) o.dim[i] = onx_ct_geti(&sz->c, i);
        } else if (sc && sc->is_const && onx_ct_numel(&sc->c) == s0.rank) {
            for (int i = 0; i < s0.rank; i++) o.dim[i] = onx_f2i(floor((double)s0.dim[i] * onx_ct_getf(&sc->c, i)));
        } else {
            const Onnx__AttributeProto *a = onx_att(n, "scales");
            if (!a || a->n_floats != (size_t)s0.rank) return 0;
            for (int i = 0; i < s0.rank; i++) o.dim[i] = onx_f2i(floor((double)s0.dim[i] * a->floats[i]));
        }
        *out = o;
        return 1;
    }
    if (k == 0 && (!strncmp(t, "Reduce", 6) || !strcmp(t, "ArgMax") || !strcmp(t, "ArgMin"))) {
        /* reductions: axes from the attribute or a constant input */
        int64_t ax[SO_MAX_RANK];
        int na = 0, present = 0, arg = t[0] == 'A';
        if (arg) {
            ax[0] = onx_att_i(n, "axis", 0);
            na = present = 1;
        } else {
            int from_input = !strcmp(t, "ReduceSum") ? im->opset >= 13 : im->opset >= 18;
            if (onx_get_axes(im, n, from_input, ax, &na, &present) != SO_OK) return so_errorf("%s", ""), 0;
        }
        if (!present || na == 0) {
            if (onx_att_i(n, "noop_with_empty_axes", 0)) return *out = s0, 1;
            na = s0.rank;
            for (int i = 0; i < na; i++) ax[i] = i;
        } else if (onx_norm_axes(im, ax, na, s0.rank) != SO_OK) {
            return so_errorf("%s", ""), 0;
        }
        int keep = (int)onx_att_i(n, "keepdims", 1), red[SO_MAX_RANK] = {0};
        for (int i = 0; i < na; i++) red[ax[i]] = 1;
        so_shape o = s0;
        o.rank = 0;
        for (int i = 0; i < s0.rank; i++) {
            if (!red[i]) o.dim[o.rank++] = s0.dim[i];
            else if (keep) o.dim[o.rank++] = 1;
        }
        if (arg) o.dtype = T_INT64;
        *out = o;
        return 1;
    }
    if ((!strcmp(t, "LSTM") || !strcmp(t, "GRU") || !strcmp(t, "RNN")) && s0.rank == 3 && k < 3) {
        char buf[32];
        const char *dir = onx_att_s(n, "direction", buf, sizeof buf);
        int64_t D = dir && !strcmp(dir, "bidirectional") ? 2 : 1, H = onx_att_i(n, "hidden_size", 0);
        int layout = (int)onx_att_i(n, "layout", 0);
        int64_t T = layout ? s0.dim[1] : s0.dim[0], B = layout ? s0.dim[0] : s0.dim[1];
        if (H <= 0) return 0;
        memset(out, 0, sizeof *out);
        out->dtype = s0.dtype;
        if (k == 0) {
            out->rank = 4;
            int64_t d0[4] = {T, D, B, H}, d1[4] = {B, T, D, H};
            memcpy(out->dim, layout ? d1 : d0, sizeof d0);
        } else {
            out->rank = 3;
            int64_t d0[3] = {D, B, H}, d1[3] = {B, D, H};
            memcpy(out->dim, layout ? d1 : d0, sizeof d0);
        }
        return 1;
    }
    return 0;
}

/* Shape of a declared tensor type; 0 if not a tensor with fixed dims (symbolic ones as pinned). */
static int type_shape(imp *im, const Onnx__TypeProto *tp, so_shape *out)
{
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type || !tp->tensor_type->shape) return 0;
    const Onnx__TensorShapeProto *sp = tp->tensor_type->shape;
    if (sp->n_dim > SO_MAX_RANK) return 0;
    so_shape s;
    memset(&s, 0, sizeof s);
    s.rank = (int32_t)sp->n_dim;
    s.dtype = tp->tensor_type->elem_type;
    for (size_t d = 0; d < sp->n_dim; d++) {
        const Onnx__TensorShapeProto__Dimension *dm = sp->dim[d];
        if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && onx_sym_value(im, dm->dim_param, &s.dim[d])) continue;
        if (dm->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE || dm->dim_value < 0) return 0;
        s.dim[d] = dm->dim_value;
    }
    *out = s;
    return 1;
}

/* Shape of tensor `name` from value_info / graph outputs; 0 if not known with fixed dims. */
static int vinfo_shape(imp *im, const char *name, so_shape *out)
{
    int32_t i = so_strmap_get(&im->vinfo, name);
    return i >= 0 && type_shape(im, im->vis[i]->type, out);
}

/* Output k of an If from what both branches declare for their output k (the same fixed shape); 0 otherwise. */
static int if_branch_shape(imp *im, const Onnx__NodeProto *n, size_t k, so_shape *out)
{
    const Onnx__AttributeProto *t = onx_att(n, "then_branch"), *e = onx_att(n, "else_branch");
    so_shape a, b;
    if (!t || !t->g || !e || !e->g || k >= t->g->n_output || k >= e->g->n_output) return 0;
    if (!type_shape(im, t->g->output[k]->type, &a) || !type_shape(im, e->g->output[k]->type, &b)) return 0;
    if (a.dtype != b.dtype || a.rank != b.rank || memcmp(a.dim, b.dim, sizeof a.dim[0] * (size_t)a.rank)) return 0;
    *out = a;
    return 1;
}

so_status onx_add_opaque(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in) { return onx_add_opaque_captures(im, n, ins, n_in, NULL, NULL, 0, NULL, 0); }

/* Keeps node n verbatim: serialized NodeProto in the model, output shapes from value_info, rules or
   (an If) its branches' declared outputs; caps[0..n_cap) (an If's captured outer values, named by
   cap_names) become its last inputs, inner[0..n_inner) the names its branches define. */
so_status onx_add_opaque_captures(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in, val **caps, const char **cap_names,
                                  int32_t n_cap, const char **inner, int32_t n_inner)
{
    so_model *m = im->m;
    so_edge e[SO_MAX_IN];
    int ne = 0;
    for (size_t k = 0; k < n_in; k++) {
        if (!ins[k]) continue;
        if (ne == SO_MAX_IN) return onx_node_err(im, "more than %d inputs", SO_MAX_IN);
        e[ne++] = onx_materialize(im, ins[k]);
    }
    for (int32_t k = 0; k < n_cap; k++) {
        if (ne == SO_MAX_IN) return onx_node_err(im, "its branches read more than %d outer values", SO_MAX_IN - (int)n_in);
        e[ne++] = onx_materialize(im, caps[k]);
    }
    if (m->n_opaque == m->cap_opaque) {
        int32_t cap = m->cap_opaque ? m->cap_opaque * 2 : 16;
        so_opaque *o = so_arena_alloc(&m->arena, (size_t)cap * sizeof *o);
        if (m->n_opaque) memcpy(o, m->opaque, (size_t)m->n_opaque * sizeof *o);
        m->opaque = o;
        m->cap_opaque = cap;
    }
    so_opaque *op = &m->opaque[m->n_opaque];
    memset(op, 0, sizeof *op);
    op->op_type = so_arena_strdup(&m->arena, n->op_type);
    op->domain = so_arena_strdup(&m->arena, n->domain ? n->domain : "");
    op->blob_len = onnx__node_proto__get_packed_size(n);
    op->blob = so_arena_alloc(&m->arena, op->blob_len + 1);
    onnx__node_proto__pack(n, op->blob);
    op->n_out = (int32_t)n->n_output;
    op->out = so_arena_alloc(&m->arena, (size_t)(op->n_out ? op->n_out : 1) * sizeof *op->out);
    for (int k = 0; k < op->n_out; k++) {
        op->out[k].rank = -1;
        if (!n->output[k][0]) continue;
        if (!vinfo_shape(im, n->output[k], &op->out[k]) && !opaque_rule_shape(im, n, ins, n_in, k, &op->out[k]) &&
            !(!strcmp(n->op_type, "If") && if_branch_shape(im, n, (size_t)k, &op->out[k])))
            op->out[k].rank = -1;
    }
    op->n_capture = n_cap;
    op->n_inner = n_inner;
    op->capture = n_cap ? so_arena_alloc(&m->arena, sizeof *op->capture * (size_t)n_cap) : NULL;
    op->inner = n_inner ? so_arena_alloc(&m->arena, sizeof *op->inner * (size_t)n_inner) : NULL;
    for (int32_t k = 0; k < n_cap; k++) op->capture[k] = so_arena_strdup(&m->arena, cap_names[k]);
    for (int32_t k = 0; k < n_inner; k++) op->inner[k] = so_arena_strdup(&m->arena, inner[k]);
    int32_t id = m->n_opaque++;
    int32_t i = so_graph_add(im->g, SO_OP_OPAQUE, e, ne, op->n_out, NULL, id, onx_node_name(im, n, NULL));
    for (int k = 0; k < op->n_out; k++) {
        im->g->nodes[i].out[k] = op->out[k];
        if (n->output[k][0]) onx_bind_edge(im, n->output[k], i, k);
    }
    return SO_OK;
}

int onx_is_default_domain(const char *d) { return !d || !d[0] || !strcmp(d, "ai.onnx"); }

/* An int list attribute of a layout node into dst (count entries, each in [lo, 1 << 20]); absent: def. */
static so_status layout_ints(imp *im, const Onnx__NodeProto *n, const char *name, int32_t *dst, long count, int32_t lo, int32_t def)
{
    const int64_t *p;
    long k = onx_att_ints(n, name, &p);
    for (long j = 0; j < count; j++) dst[j] = def;
    if (k < 0) return SO_OK;
    if (k != count) return onx_node_err(im, "attribute '%s' needs %ld values", name, count);
    for (long j = 0; j < count; j++) {
        if (p[j] < lo || p[j] > (1 << 20)) return onx_node_err(im, "attribute '%s' value %lld is out of range", name, (long long)p[j]);
        dst[j] = (int32_t)p[j];
    }
    return SO_OK;
}

/* A node of superopt's layout domain (SO_ONNX_LAYOUT_DOMAIN, written by the optimizer): the ops.def operator
   of that name with its attributes; shapes are checked by shape inference as for any node. */
static so_status build_layout_op(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in)
{
    const int o = so_op_from_name(n->op_type);
    if (o < 0 || !(so_ops[o].flags & SO_F_LAYOUT)) return onx_node_err(im, "unknown operator '%s' in domain %s", n->op_type, SO_ONNX_LAYOUT_DOMAIN);
    so_attr a;
    memset(&a, 0, sizeof a);
    if (o == SO_OP_CONCAT_NCHWC) {
        const int64_t *p;
        const long k = onx_att_ints(n, "channels", &p);
        a.ints[0] = onx_att_i(n, "block", 0);
        if (k < 1 || k >= SO_MAX_INTS || a.ints[0] < 1 || a.ints[0] > 64) return onx_node_err(im, "invalid block or channels attribute");
        a.n_ints = (int32_t)k + 1;
        for (long j = 0; j < k; j++) {
            if (p[j] < 1 || p[j] > INT32_MAX) return onx_node_err(im, "invalid channels attribute");
            a.ints[j + 1] = p[j];
        }
    } else if (o == SO_OP_NCHWC_IN || o == SO_OP_NCHWC_OUT) {
        const int64_t b = onx_att_i(n, "block", 0), c = onx_att_i(n, "channels", 0);
        if (b < 1 || b > 64 || (o == SO_OP_NCHWC_OUT && (c < 1 || c > INT32_MAX))) return onx_node_err(im, "invalid block or channels attribute");
        a.n_ints = o == SO_OP_NCHWC_OUT ? 2 : 1, a.ints[0] = b, a.ints[1] = o == SO_OP_NCHWC_OUT ? c : 0;
    } else if (o != SO_OP_GLOBALAVGPOOL_NCHWC) {
        if ((o != SO_OP_CONV_NCHWC && layout_ints(im, n, "kernel_shape", a.kernel, 2, 1, 0) != SO_OK) ||
            layout_ints(im, n, "strides", a.stride, 2, 1, 1) != SO_OK || layout_ints(im, n, "pads", a.pad, 4, 0, 0) != SO_OK ||
            (o != SO_OP_AVGPOOL_NCHWC && layout_ints(im, n, "dilations", a.dilation, 2, 1, 1) != SO_OK))
            return SO_ERR;
        if (o != SO_OP_CONV_NCHWC && a.kernel[0] < 1) return onx_node_err(im, "missing kernel_shape");
        const int64_t grp = onx_att_i(n, "group", 1);
        if (grp < 1 || grp > INT32_MAX) return onx_node_err(im, "invalid group %lld", (long long)grp);
        if (o == SO_OP_CONV_NCHWC) a.group = (int32_t)grp;
        if (o != SO_OP_CONV_NCHWC) a.ceil_mode = onx_att_i(n, "ceil_mode", 0) != 0;
        if (o == SO_OP_AVGPOOL_NCHWC) a.count_include_pad = onx_att_i(n, "count_include_pad", 0) != 0;
    }
    const int na = onx_dense_inputs(ins, n_in);
    if (na < so_ops[o].min_in || na > so_ops[o].max_in) return onx_node_err(im, "has %d inputs", na);
    return onx_emit(im, (so_op)o, ins, na, 1, &a, onx_node_name(im, n, NULL), n->output, (int)n->n_output, NULL) == SO_OK ? SO_OK : SO_ERR;
}


static so_status onx_import_node_depth(imp *im, const Onnx__NodeProto *n, int depth);

/* Tile with constant repeats: a Concat per repeated axis; other repeats keep the node opaque. */
static so_status expand_tile(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in)
{
    if (n_in == 2 && ins[0] && ins[1] && ins[1]->is_const) return onx_tile_concat(im, n, ins);
    return onx_add_opaque(im, n, ins, n_in);
}

/* The route table (onnx_io.h so_onnx_route): how each ONNX operator that is not simply the table operator of its
   name imports. onx_import_node_depth reads the ALIAS and EXPAND rows (op, expand); the other kinds are
   handled by its code above the table lookup (Identity / Dropout / Cast no-ops, Constant, If, subgraphs) and by
   onx_try_fold (FOLD rows), and are listed here so that docs/OPERATORS.md says what that code does; test_ops
   checks every row's kind against the table (ALIAS / FORMS name table operators, the others none). */
typedef struct route {
    so_onnx_route r;
    so_status (*expand)(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in); /* EXPAND rows */
} route;
static const route routes[] = {
    {{"Identity", SO_ROUTE_NOOP, SO_OP_OPAQUE, "no node: its output names its input"}, NULL},
    {{"Dropout", SO_ROUTE_NOOP, SO_OP_OPAQUE,
      "no node (inference: the mask output a constant all-true); with training_mode not a constant false and ratio > 0 kept opaque"},
     NULL},
    {{"Constant", SO_ROUTE_CONST, SO_OP_OPAQUE, "a constant (value, value_float(s), value_int(s)); sparse_value refused, strings kept opaque"}, NULL},
    {{"Shape", SO_ROUTE_FOLD, SO_OP_OPAQUE, "a constant from the input's shape (start, end)"}, NULL},
    {{"Size", SO_ROUTE_FOLD, SO_OP_OPAQUE, "a constant from the input's shape"}, NULL},
    {{"EyeLike", SO_ROUTE_FOLD, SO_OP_OPAQUE, "a constant from the input's shape (rank 2)"}, NULL},
    {{"ConstantOfShape", SO_ROUTE_FOLD, SO_OP_OPAQUE, "a constant (the shape a constant or computed from shapes)"}, NULL},
    {{"Range", SO_ROUTE_FOLD, SO_OP_OPAQUE, "a constant (start, limit, delta constants or computed from shapes)"}, NULL},
    {{"OneHot", SO_ROUTE_FOLD, SO_OP_OPAQUE, "a constant (indices, depth, values constants)"}, NULL},
    {{"NonZero", SO_ROUTE_FOLD, SO_OP_OPAQUE, "a constant (the input a constant with a non-zero element; on computed data kept opaque)"}, NULL},
    {{"HannWindow", SO_ROUTE_FOLD, SO_OP_OPAQUE, "a constant (size a constant)"}, NULL},
    {{"HammingWindow", SO_ROUTE_FOLD, SO_OP_OPAQUE, "a constant (size a constant)"}, NULL},
    {{"BlackmanWindow", SO_ROUTE_FOLD, SO_OP_OPAQUE, "a constant (size a constant)"}, NULL},
    {{"MelWeightMatrix", SO_ROUTE_FOLD, SO_OP_OPAQUE, "a constant (all five inputs constants, float output; otherwise kept opaque)"}, NULL},
    {{"Upsample", SO_ROUTE_ALIAS, SO_OP_RESIZE, "the opset 7-9 form of Resize (nearest rounding down, linear; asymmetric)"}, NULL},
    {{"Scatter", SO_ROUTE_ALIAS, SO_OP_SCATTERELEMENTS, "ScatterElements (the same operator, deprecated name)"}, NULL},
    {{"SoftmaxCrossEntropyLoss", SO_ROUTE_ALIAS, SO_OP_NLLLOSS, "NegativeLogLikelihoodLoss of the input's LogSoftmax"}, NULL},
    {{"Sum", SO_ROUTE_EXPAND, SO_OP_OPAQUE, "a chain of `add`"}, onx_sum_mean},
    {{"Mean", SO_ROUTE_EXPAND, SO_OP_OPAQUE, "a chain of `add`, then `div` by the count"}, onx_sum_mean},
    {{"MeanVarianceNormalization", SO_ROUTE_EXPAND, SO_OP_OPAQUE, "`reducemean`, `sub`, `mul`, `sqrt`, `add`, `div` (float input)"}, onx_mvn},
    {{"InstanceNormalization", SO_ROUTE_EXPAND, SO_OP_OPAQUE, "`reducemean`, `sub`, `mul`, `add`, `sqrt`, `div`, then `mul` / `add` by the per-channel scale and bias (float input)"},
     onx_instancenorm},
    {{"GroupNormalization", SO_ROUTE_EXPAND, SO_OP_OPAQUE,
      "`reshape` to [N, G, ...], the normalisation of InstanceNormalization, `reshape` back; scale and bias per group (opset 18) or per channel (21)"},
     onx_groupnorm},
    {{"GlobalMaxPool", SO_ROUTE_EXPAND, SO_OP_OPAQUE, "`reducemax` over the spatial axes (float input)"}, onx_globalmaxpool},
    {{"LpNormalization", SO_ROUTE_EXPAND, SO_OP_OPAQUE, "`reducel1` / `reducel2` over the axis, then `div` (float input)"}, onx_lpnorm},
    {{"Einsum", SO_ROUTE_EXPAND, SO_OP_OPAQUE,
      "`transpose`, `reshape`, `reducesum`, `matmul` (one or two float operands, no repeated label within an operand; others kept opaque)"},
     onx_einsum},
    {{"Tile", SO_ROUTE_EXPAND, SO_OP_OPAQUE, "`concat` per repeated axis (repeats a constant; folded on constants; other repeats kept opaque)"},
     expand_tile},
    {{"CenterCropPad", SO_ROUTE_EXPAND, SO_OP_OPAQUE, "`pad` with zeros, then `slice`, centred on each listed axis (shape a constant; otherwise kept opaque)"},
     onx_centercroppad},
    {{"Col2Im", SO_ROUTE_EXPAND, SO_OP_OPAQUE,
      "`reshape` to [N, C*kh*kw, Lh, Lw], then a grouped `convtranspose` with a one-hot weight (2-D, image_shape and block_shape constants; otherwise kept opaque)"},
     onx_col2im},
    {{"AffineGrid", SO_ROUTE_EXPAND, SO_OP_OPAQUE,
      "a constant base grid `matmul` the `transpose`d theta, `reshape`d to [N, (D,) H, W, k] (2-D and 3-D, size a constant; otherwise kept opaque)"},
     onx_affinegrid},
    {{"If", SO_ROUTE_INLINE, SO_OP_OPAQUE, "the taken branch's nodes when the condition is known at import (a constant, or computed from pinned shapes); otherwise kept opaque (its captured outer values as inputs; `superopt run` refuses it)"}, NULL},
    {{"Loop", SO_ROUTE_REFUSE, SO_OP_OPAQUE, "refused at import (control flow with a body graph)"}, NULL},
    {{"Scan", SO_ROUTE_REFUSE, SO_OP_OPAQUE, "refused at import (control flow with a body graph)"}, NULL},
    {{"SequenceMap", SO_ROUTE_REFUSE, SO_OP_OPAQUE, "refused at import (a body graph over sequences)"}, NULL},
    {{"Conv", SO_ROUTE_FORMS, SO_OP_OPAQUE, "`conv` (rank 4), `conv3d` (rank 5), rank 3 lifted to 2-D between `unsqueeze` / `squeeze`; auto_pad resolved into pads"}, NULL},
    {{"ConvTranspose", SO_ROUTE_FORMS, SO_OP_OPAQUE, "`convtranspose` (rank 4), `convtranspose3d` (rank 5), rank 3 lifted to 2-D; output_shape / auto_pad resolved into pads"}, NULL},
    {{"MaxPool", SO_ROUTE_FORMS, SO_OP_OPAQUE, "`maxpool` (rank 4), `maxpoolidx` (Indices output used), `maxpool3d` (rank 5), rank 3 lifted to 2-D"}, NULL},
    {{"AveragePool", SO_ROUTE_FORMS, SO_OP_OPAQUE, "`avgpool` (rank 4), `avgpool3d` (rank 5, and rank 4 with dilations lifted to it), rank 3 lifted to 2-D"}, NULL},
    {{"LSTM", SO_ROUTE_FORMS, SO_OP_OPAQUE, "`lstm`; layout = 1 between `transpose`s"}, NULL},
    {{"GRU", SO_ROUTE_FORMS, SO_OP_OPAQUE, "`gru`; layout = 1 between `transpose`s"}, NULL},
    {{"RNN", SO_ROUTE_FORMS, SO_OP_OPAQUE, "`rnn`; layout = 1 between `transpose`s"}, NULL},
    {{"Cast", SO_ROUTE_FORMS, SO_OP_OPAQUE, "`cast`; float to float no node; folded on constants"}, NULL},
    {{"LayerNormalization", SO_ROUTE_FORMS, SO_OP_OPAQUE, "`layernorm`; with its Mean / InvStdDev outputs used, expanded into `reducemean`, `sub`, `mul`, ..."}, NULL},
};

static const route *find_route(const char *t)
{
    for (size_t i = 0; i < SO_ARRAY_LEN(routes); i++)
        if (!strcmp(routes[i].r.onnx, t)) return &routes[i];
    return NULL;
}

const so_onnx_route *so_onnx_route_of(const char *onnx)
{
    const route *r = find_route(onnx);
    return r ? &r->r : NULL;
}

/* If whose condition is a constant at import (an initializer, a Constant, or computed from pinned
   shapes or a value given with run --inputs DIR): the taken branch's initializers and nodes are
   imported in its place (nested Ifs likewise) and the If's outputs name the branch's outputs. The
   branch may read the outer graph's values by name (ONNX's scoping); its own names must not shadow
   them (the importer's names are one flat map). */
static so_status inline_if(imp *im, const Onnx__NodeProto *n, const val *cond, int depth)
{
    if (onx_ct_numel(&cond->c) != 1) return onx_node_err(im, "the condition has %lld elements, expected 1", (long long)onx_ct_numel(&cond->c));
    int taken = cond->c.shape.dtype == SO_F32 ? onx_ct_getf(&cond->c, 0) != 0 : onx_ct_geti(&cond->c, 0) != 0;
    const char *which = taken ? "then_branch" : "else_branch";
    const Onnx__AttributeProto *a = onx_att(n, which);
    if (!a || !a->g) return onx_node_err(im, "has no %s graph", which);
    const Onnx__GraphProto *b = a->g;
    if (b->n_output != n->n_output) return onx_node_err(im, "%s has %zu outputs, the node %zu", which, b->n_output, n->n_output);
    if (depth > 64) return onx_node_err(im, "Ifs nested more than 64 deep");
    char outer[sizeof im->desc];
    memcpy(outer, im->desc, sizeof outer);
    for (size_t i = 0; i < b->n_initializer; i++) {
        ctensor c;
        char what[700];
        snprintf(what, sizeof what, "%s: %s initializer '%s'", outer, which, b->initializer[i]->name ? b->initializer[i]->name : "");
        if (!b->initializer[i]->name || onx_tensor_from_proto(im, b->initializer[i], what, &c) != SO_OK) return SO_ERR;
        onx_bind_const(im, b->initializer[i]->name, &c);
    }
    for (size_t i = 0; i < b->n_node; i++) {
        const Onnx__NodeProto *bn = b->node[i];
        const char *type = bn->op_type ? bn->op_type : "?";
        if (bn->name && bn->name[0]) snprintf(im->desc, sizeof im->desc, "node '%.200s' (%.60s) in the %s of %.250s", bn->name, type, which, outer);
        else snprintf(im->desc, sizeof im->desc, "node #%zu (%.60s) in the %s of %.250s", i, type, which, outer);
        for (size_t k = 0; k < bn->n_input; k++)
            if (bn->input[k] && bn->input[k][0] && !onx_lookup(im, bn->input[k]))
                return onx_node_err(im, "input '%s' is not produced before it", bn->input[k]);
        so_status st = onx_import_node_depth(im, bn, depth + 1);
        if (st != SO_OK) return st;
    }
    memcpy(im->desc, outer, sizeof outer);
    for (size_t k = 0; k < n->n_output; k++) {
        if (!n->output[k] || !n->output[k][0]) continue;
        const char *bo = b->output[k]->name;
        if (!bo || !onx_lookup(im, bo)) return onx_node_err(im, "%s output '%s' is not produced", which, bo ? bo : "");
        so_strmap_put(&im->names, n->output[k], so_strmap_get(&im->names, bo));
    }
    return SO_OK;
}

/* The names a subgraph (and the graphs nested in it) defines: inputs, initializers, node outputs. */
typedef struct subnames {
    so_strmap def, seen;
    const char **list; /* defined (pass 0) or captured (pass 1) names, in order; borrowed from the proto */
    int32_t n, cap;
} subnames;

static void subnames_add(subnames *s, const char *name)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->list = so_xrealloc(s->list, sizeof *s->list * (size_t)s->cap);
    }
    s->list[s->n++] = name;
}

/* pass 0: records every name gp defines into s->def (and s->list); pass 1: every name its nodes read
   that no branch defines, once each, into s->list (the outer values it captures). */
static so_status subgraph_walk(imp *im, const Onnx__GraphProto *gp, subnames *s, int pass, int depth)
{
    if (depth > 64) return onx_node_err(im, "subgraphs nested more than 64 deep");
    if (pass == 0) {
        for (size_t i = 0; i < gp->n_input; i++)
            if (gp->input[i]->name && gp->input[i]->name[0]) so_strmap_put(&s->def, gp->input[i]->name, 1), subnames_add(s, gp->input[i]->name);
        for (size_t i = 0; i < gp->n_initializer; i++)
            if (gp->initializer[i]->name) so_strmap_put(&s->def, gp->initializer[i]->name, 1), subnames_add(s, gp->initializer[i]->name);
    }
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *bn = gp->node[i];
        for (size_t k = 0; k < (pass ? bn->n_input : bn->n_output); k++) {
            const char *nm = pass ? bn->input[k] : bn->output[k];
            if (!nm || !nm[0]) continue;
            if (pass == 0) so_strmap_put(&s->def, nm, 1), subnames_add(s, nm);
            else if (so_strmap_get(&s->def, nm) < 0 && so_strmap_get(&s->seen, nm) < 0) so_strmap_put(&s->seen, nm, 1), subnames_add(s, nm);
        }
        for (size_t k = 0; k < bn->n_attribute; k++) {
            const Onnx__AttributeProto *a = bn->attribute[k];
            if (a->g && subgraph_walk(im, a->g, s, pass, depth + 1) != SO_OK) return SO_ERR;
            for (size_t j = 0; j < a->n_graphs; j++)
                if (subgraph_walk(im, a->graphs[j], s, pass, depth + 1) != SO_OK) return SO_ERR;
        }
    }
    if (pass == 1) /* a branch output may name an outer value directly */
        for (size_t i = 0; i < gp->n_output; i++) {
            const char *nm = gp->output[i]->name;
            if (depth == 0 && nm && nm[0] && so_strmap_get(&s->def, nm) < 0 && so_strmap_get(&s->seen, nm) < 0)
                so_strmap_put(&s->seen, nm, 1), subnames_add(s, nm);
        }
    return SO_OK;
}

/* If whose condition is not known at import: kept opaque (issue 16 item 2). The outer values its branches
   read by name become its inputs after the condition, so the optimizer keeps them and the exporter gives
   them those names again; output shapes come from value_info / graph outputs or both branches' declared
   outputs (else they stay unknown, and whatever needs them says so naming the node). The executor does
   not run it: `superopt run` refuses the model (unsupported operator 'If' at the node). */
static so_status opaque_if(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in)
{
    static const char *const br[2] = {"then_branch", "else_branch"};
    subnames d = {0}, c = {0};
    so_status st = SO_OK;
    for (int b = 0; b < 2 && st == SO_OK; b++) {
        const Onnx__AttributeProto *a = onx_att(n, br[b]);
        if (!a || !a->g) st = onx_node_err(im, "has no %s graph", br[b]);
        else if (a->g->n_output != n->n_output) st = onx_node_err(im, "%s has %zu outputs, the node %zu", br[b], a->g->n_output, n->n_output);
        else st = subgraph_walk(im, a->g, &d, 0, 0);
    }
    c.def = d.def;
    for (int b = 0; b < 2 && st == SO_OK; b++) st = subgraph_walk(im, onx_att(n, br[b])->g, &c, 1, 0);
    c.def = (so_strmap){0};
    val **caps = so_xcalloc((size_t)c.n + 1, sizeof *caps);
    for (int32_t k = 0; k < c.n && st == SO_OK; k++)
        if (!(caps[k] = onx_lookup(im, c.list[k]))) st = onx_node_err(im, "its branches read '%s', which is not defined before the node", c.list[k]);
    if (st == SO_OK) st = onx_add_opaque_captures(im, n, ins, n_in, caps, c.list, c.n, d.list, d.n);
    free(caps);
    free(c.list);
    free(d.list);
    so_strmap_free(&c.seen);
    so_strmap_free(&d.def);
    return st;
}

so_status onx_import_node(imp *im, const Onnx__NodeProto *n) { return onx_import_node_depth(im, n, 0); }

static so_status onx_import_node_depth(imp *im, const Onnx__NodeProto *n, int depth)
{
    val *ins[SO_MAX_IN * 2] = {0}; /* ins[0] of a node without inputs reads NULL (fuzz finding) */
    size_t n_in = n->n_input;
    if (n_in > SO_MAX_IN * 2) return onx_node_err(im, "too many inputs (%zu)", n_in);
    for (size_t k = 0; k < n_in; k++) ins[k] = onx_inval(im, n, k);
    if (onx_is_default_domain(n->domain) && !strcmp(n->op_type, "If") && n_in == 1 && ins[0] && ins[0]->is_const)
        return inline_if(im, n, ins[0], depth);
    if (onx_is_default_domain(n->domain) && !strcmp(n->op_type, "If") && n_in == 1 && ins[0] && n->n_output > 0)
        return opaque_if(im, n, ins, n_in);
    for (size_t k = 0; k < n->n_attribute; k++) {
        const Onnx__AttributeProto *a = n->attribute[k];
        if (a->g || a->n_graphs)
            return onx_node_err(im, "operators with subgraphs (control flow) are not supported");
    }
    if (n->n_output == 0) return SO_OK; /* produces nothing anyone can read */
    if (n->domain && !strcmp(n->domain, SO_ONNX_LAYOUT_DOMAIN)) return build_layout_op(im, n, ins, n_in);
    if (!onx_is_default_domain(n->domain)) return onx_add_opaque(im, n, ins, n_in);
    const char *t = n->op_type;
    if (!strcmp(t, "Dropout") && n_in >= 3 && ins[2]) {
        /* training_mode given: only a constant false (or ratio 0) is the inference no-op; otherwise
           the output is random and the node is kept verbatim */
        int64_t mode = 1, nm = 0;
        double ratio = 0.5;
        if (ins[2]->is_const && onx_ct_numel(&ins[2]->c) == 1) mode = onx_ct_geti(&ins[2]->c, 0), nm = 1;
        if (n_in >= 2 && ins[1] && ins[1]->is_const && onx_ct_numel(&ins[1]->c) == 1) ratio = onx_ct_getf(&ins[1]->c, 0);
        if (!nm || (mode && ratio != 0)) return onx_add_opaque(im, n, ins, n_in);
    }
    /* Cast float -> float: the same values. (An integer Cast stays a node even to int64: int64 storage
       may hold a bool or int32 value whose ONNX type the exported model must keep.) */
    int same_type_cast = !strcmp(t, "Cast") && n_in == 1 && ins[0] && !ins[0]->is_const &&
                         onx_vshape(im, ins[0]).dtype == SO_F32 && onx_att_i(n, "to", 0) == T_FLOAT;
    int dropout_mask = !strcmp(t, "Dropout") && n->n_output == 2 && n->output[1][0]; /* inference: the mask is all true */
    if (!strcmp(t, "Identity") || same_type_cast || (!strcmp(t, "Dropout") && (dropout_mask || !onx_extra_outputs(n, 1)))) {
        if (!ins[0]) return onx_node_err(im, "missing input 0");
        if (dropout_mask) {
            so_shape xs = onx_vshape(im, ins[0]);
            ctensor mc;
            if (xs.rank < 0) return onx_add_opaque(im, n, ins, n_in);
            if (onx_ct_new(im, &mc, SO_I64, T_BOOL, xs.rank, xs.dim) != SO_OK) return SO_ERR;
            for (int64_t i = 0; i < onx_ct_numel(&mc); i++) ((int64_t *)mc.data)[i] = 1;
            onx_bind_const(im, n->output[1], &mc);
        }
        if (n->n_output < 1 || !n->output[0][0]) return SO_OK;
        so_strmap_put(&im->names, n->output[0], so_strmap_get(&im->names, n->input[0]));
        return SO_OK;
    }
    if (!strcmp(t, "Constant")) {
        ctensor c;
        memset(&c, 0, sizeof c);
        const Onnx__AttributeProto *a;
        if (n->n_output < 1) return SO_OK;
        if ((a = onx_att(n, "value")) && a->t) {
            char what[700];
            snprintf(what, sizeof what, "%s: attribute 'value'", im->desc);
            if (onx_tensor_from_proto(im, a->t, what, &c) != SO_OK) return SO_ERR;
        } else if ((a = onx_att(n, "value_float"))) {
            if (onx_ct_new(im, &c, SO_F32, T_FLOAT, 0, NULL) != SO_OK) return SO_ERR;
            ((float *)c.data)[0] = a->f;
        } else if ((a = onx_att(n, "value_int"))) {
            if (onx_ct_new(im, &c, SO_I64, T_INT64, 0, NULL) != SO_OK) return SO_ERR;
            ((int64_t *)c.data)[0] = a->i;
        } else if ((a = onx_att(n, "value_floats"))) {
            int64_t d = (int64_t)a->n_floats;
            if (onx_ct_new(im, &c, SO_F32, T_FLOAT, 1, &d) != SO_OK) return SO_ERR;
            if (d) memcpy(c.data, a->floats, (size_t)d * 4);
        } else if ((a = onx_att(n, "value_ints"))) {
            int64_t d = (int64_t)a->n_ints;
            if (onx_ct_new(im, &c, SO_I64, T_INT64, 1, &d) != SO_OK) return SO_ERR;
            if (d) memcpy(c.data, a->ints, (size_t)d * 8);
        } else if (onx_att(n, "sparse_value")) {
            return onx_node_err(im, "sparse constants are not supported");
        } else {
            return onx_add_opaque(im, n, ins, n_in); /* strings */
        }
        onx_bind_const(im, n->output[0], &c);
        return SO_OK;
    }
    /* folding may not create a constant larger than so_onnx_fold_max_elems and its largest input */
    im->fold_cap = so_onnx_fold_max_elems > 0 ? so_onnx_fold_max_elems : 1;
    for (size_t k = 0; k < n_in; k++)
        if (ins[k] && ins[k]->is_const && onx_ct_numel(&ins[k]->c) > im->fold_cap) im->fold_cap = onx_ct_numel(&ins[k]->c);
    im->fold_over = 0;
    int r = onx_try_fold(im, n, ins, n_in);
    im->fold_cap = 0;
    if (r == SO_ERR && im->fold_over) {
        r = SO_ERR_UNSUPPORTED; /* too large to fold: keep the node */
        so_errorf("%s", "");
    }
    if (r == SO_OK) return SO_OK;
    if (r == SO_ERR) return SO_ERR;
    so_op op = so_op_from_onnx(t);
    const route *rt = find_route(t);
    if (rt && rt->r.kind == SO_ROUTE_ALIAS) op = rt->r.op;
    if (rt && rt->r.kind == SO_ROUTE_EXPAND) return rt->expand(im, n, ins, n_in);
    if ((op == SO_OP_CONV || op == SO_OP_CONVTRANSPOSE || op == SO_OP_MAXPOOL || op == SO_OP_AVGPOOL) && n_in > 0 && ins[0] &&
        onx_vshape(im, ins[0]).rank == 3)
        return onx_lift(im, n, op, ins, n_in);
    if (op == SO_OP_AVGPOOL && n_in > 0 && ins[0] && onx_vshape(im, ins[0]).rank == 4 && pool_dilated(n)) /* AveragePool-19 */
        return onx_lift(im, n, SO_OP_AVGPOOL3D, ins, n_in);
    if (n_in > 0 && ins[0] && onx_vshape(im, ins[0]).rank == 5) { /* the 3-D operators of the table */
        if (op == SO_OP_CONV) op = SO_OP_CONV3D;
        else if (op == SO_OP_CONVTRANSPOSE) op = SO_OP_CONVTRANSPOSE3D;
        else if (op == SO_OP_MAXPOOL) op = SO_OP_MAXPOOL3D;
        else if (op == SO_OP_AVGPOOL) op = SO_OP_AVGPOOL3D;
    }
    if (op == SO_OP_MAXPOOL && n->n_output > 1 && n->output[1][0]) op = SO_OP_MAXPOOLIDX; /* the Indices output is used */
    if ((op == SO_OP_LSTM || op == SO_OP_GRU || op == SO_OP_RNN) && onx_att_i(n, "layout", 0) == 1)
        return onx_recurrent_batch_first(im, n, op, ins, n_in);
    if (op != SO_OP_OPAQUE) {
        r = onx_build_op(im, n, op, ins, n_in);
        if (r == SO_OK) return SO_OK;
        if (r == SO_ERR) return SO_ERR;
    }
    return onx_add_opaque(im, n, ins, n_in);
}
