/* onnx_export.c - ONNX export: the graph IR back to a ModelProto in the model opset (so_onnx_save). */
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
   export
   ====================================================================== */

typedef struct exporter {
    so_arena ar;                 /* every proto struct, array and string of the export */
    so_graph *g;                 /* clone of the graph: toposorted, dead nodes removed */
    so_model *m;
    int64_t opset;
    int layout_ops;              /* a node of SO_ONNX_LAYOUT_DOMAIN was written: import that domain */
    so_strmap used, used_nodes;     /* tensor / node names taken */
    so_strmap next_used, next_nodes; /* per base name: first suffix ex_unique tries */
    const char **tname;          /* name of each node output: tname[toff[i] + slot] */
    int32_t *toff;
    const char **wname;          /* initializer name per weight id */
    const char **in_names, **out_names; /* graph input / output names (generated when missing) */
    char *wdone;                 /* initializer emitted per weight id */
    void **fdata;                /* per node: data of a folded internal op (malloc'd) */
    Onnx__NodeProto **nodes;
    size_t n_nodes, cap_nodes;
    Onnx__TensorProto **inits;
    size_t n_inits, cap_inits;
    so_strmap cap_names;         /* names an opaque If's branches read (so_opaque.capture): 1 = kept for an Identity
                                    giving it to the captured value, 2 + k = that Identity written, reading cap_src[k] */
    const char **cap_src;        /* malloc'd */
    int32_t n_cap_src;
    Onnx__NodeProto **unpacked;  /* opaque nodes unpacked from their blobs */
    size_t n_unpacked;
    char desc[300];              /* node being exported, for messages */
    int io_err;                  /* the message is so_atomic's, which names the path already */
} exporter;

static char *ex_strdup(exporter *x, const char *s) { return so_arena_strdup(&x->ar, s); }

/* Unique name from base in map `used`: base itself, else base_K with the smallest free K >= 1.
   `next` remembers per base the K to try first: names are never released, so every smaller K is
   still taken, and n names from one base cost O(n) instead of O(n^2). */
static const char *ex_unique(exporter *x, so_strmap *used, so_strmap *next, const char *base)
{
    if (so_strmap_get(used, base) < 0) {
        char *s = ex_strdup(x, base);
        so_strmap_put(used, s, 1);
        return s;
    }
    int32_t k0 = so_strmap_get(next, base);
    size_t len = strlen(base) + 24;
    char *s = so_arena_alloc(&x->ar, len);
    long k = k0 > 0 ? k0 : 1;
    for (;; k++) {
        snprintf(s, len, "%s_%ld", base, k);
        if (so_strmap_get(used, s) < 0) break;
    }
    so_strmap_put(used, s, 1);
    if (k < INT32_MAX) so_strmap_put(next, k0 > 0 ? base : ex_strdup(x, base), (int32_t)(k + 1)); /* key kept when present */
    return s;
}

static const char *ex_name(exporter *x, const char *base) { return ex_unique(x, &x->used, &x->next_used, base); }

static const char *ex_name2(exporter *x, const char *base, const char *suffix)
{
    size_t len = strlen(base) + strlen(suffix) + 1;
    char *tmp = so_xmalloc(len);
    snprintf(tmp, len, "%s%s", base, suffix);
    const char *r = ex_name(x, tmp);
    free(tmp);
    return r;
}

static Onnx__AttributeProto *mk_attr(exporter *x, const char *name, Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *a = so_arena_alloc(&x->ar, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = ex_strdup(x, name);
    a->has_type = 1;
    a->type = type;
    return a;
}

static Onnx__NodeProto *mk_node(exporter *x, const char *op_type, const char *name)
{
    Onnx__NodeProto *n = so_arena_alloc(&x->ar, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = ex_strdup(x, op_type);
    n->name = (char *)ex_unique(x, &x->used_nodes, &x->next_nodes, name && name[0] ? name : op_type);
    n->input = so_arena_alloc(&x->ar, (SO_MAX_IN + 8) * sizeof *n->input);
    n->output = so_arena_alloc(&x->ar, (SO_MAX_INTS + 4) * sizeof *n->output);
    n->attribute = so_arena_alloc(&x->ar, 16 * sizeof *n->attribute);
    if (x->n_nodes == x->cap_nodes) {
        x->cap_nodes = x->cap_nodes ? 2 * x->cap_nodes : 256;
        x->nodes = so_xrealloc(x->nodes, x->cap_nodes * sizeof *x->nodes);
    }
    x->nodes[x->n_nodes++] = n;
    return n;
}

static void n_in(Onnx__NodeProto *n, const char *s) { n->input[n->n_input++] = (char *)s; }
static void n_out(Onnx__NodeProto *n, const char *s) { n->output[n->n_output++] = (char *)s; }

static void a_int(exporter *x, Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = mk_attr(x, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
    n->attribute[n->n_attribute++] = a;
}

static void a_float(exporter *x, Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = mk_attr(x, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
    n->attribute[n->n_attribute++] = a;
}

static void a_floats(exporter *x, Onnx__NodeProto *n, const char *name, const float *v, int cnt)
{
    Onnx__AttributeProto *a = mk_attr(x, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = (size_t)cnt;
    a->floats = so_arena_dup(&x->ar, v, (size_t)cnt * sizeof *v);
    n->attribute[n->n_attribute++] = a;
}

static void a_ints(exporter *x, Onnx__NodeProto *n, const char *name, const int64_t *v, int cnt)
{
    Onnx__AttributeProto *a = mk_attr(x, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = (size_t)cnt;
    a->ints = so_arena_dup(&x->ar, v, (size_t)cnt * sizeof *v);
    n->attribute[n->n_attribute++] = a;
}

static void a_ints32(exporter *x, Onnx__NodeProto *n, const char *name, const int32_t *v, int cnt)
{
    int64_t t[8];
    for (int i = 0; i < cnt; i++) t[i] = v[i];
    a_ints(x, n, name, t, cnt);
}

static void a_str(exporter *x, Onnx__NodeProto *n, const char *name, const char *s)
{
    Onnx__AttributeProto *a = mk_attr(x, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.len = strlen(s);
    a->s.data = (uint8_t *)ex_strdup(x, s);
    n->attribute[n->n_attribute++] = a;
}

static void a_strs(exporter *x, Onnx__NodeProto *n, const char *name, const char *const *v, int cnt)
{
    Onnx__AttributeProto *a = mk_attr(x, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    a->n_strings = (size_t)cnt;
    a->strings = so_arena_alloc(&x->ar, (size_t)(cnt ? cnt : 1) * sizeof *a->strings);
    for (int i = 0; i < cnt; i++) {
        a->strings[i].len = strlen(v[i]);
        a->strings[i].data = (uint8_t *)ex_strdup(x, v[i]);
    }
    n->attribute[n->n_attribute++] = a;
}

/* Adds an initializer (data is borrowed until the model is written). Returns its name. */
static const char *mk_init_named(exporter *x, const char *name, int32_t type, const so_shape *s, const void *data, size_t bytes)
{
    Onnx__TensorProto *t = so_arena_alloc(&x->ar, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = (char *)name;
    t->n_dims = (size_t)s->rank;
    t->dims = so_arena_dup(&x->ar, s->dim, (size_t)(s->rank > 0 ? s->rank : 1) * sizeof *t->dims);
    t->has_data_type = 1;
    t->data_type = type;
    t->has_raw_data = 1;
    t->raw_data.len = bytes;
    t->raw_data.data = (uint8_t *)(data ? data : (const void *)"");
    if (x->n_inits == x->cap_inits) {
        x->cap_inits = x->cap_inits ? 2 * x->cap_inits : 256;
        x->inits = so_xrealloc(x->inits, x->cap_inits * sizeof *x->inits);
    }
    x->inits[x->n_inits++] = t;
    return name;
}

static const char *init_i64(exporter *x, const char *base, const char *suffix, const int64_t *v, int cnt)
{
    int64_t d = cnt;
    so_shape s = so_shape_make(1, &d);
    void *data = so_arena_dup(&x->ar, v, (size_t)(cnt ? cnt : 1) * 8);
    return mk_init_named(x, ex_name2(x, base, suffix), T_INT64, &s, data, (size_t)cnt * 8);
}

static const char *init_f32(exporter *x, const char *base, const char *suffix, float v)
{
    so_shape s = so_shape_make(0, NULL);
    float *data = so_arena_alloc(&x->ar, sizeof *data);
    *data = v;
    return mk_init_named(x, ex_name2(x, base, suffix), T_FLOAT, &s, data, 4);
}

/* A 1-D float initializer of cnt values (cnt may be 0: an empty tensor). */
static const char *init_f32v(exporter *x, const char *base, const char *suffix, const float *v, int cnt)
{
    int64_t d = cnt;
    so_shape s = so_shape_make(1, &d);
    float *data = so_arena_alloc(&x->ar, sizeof *data * (size_t)(cnt ? cnt : 1));
    if (cnt) memcpy(data, v, sizeof *data * (size_t)cnt);
    return mk_init_named(x, ex_name2(x, base, suffix), T_FLOAT, &s, data, (size_t)cnt * 4);
}

static const char *tname(exporter *x, so_edge e) { return x->tname[x->toff[e.node] + e.slot]; }

static so_status ex_err(exporter *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static so_status ex_err(exporter *x, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return so_errorf("%s: %s", x->desc, msg);
}

/* Data of a constant node (weight or folded internal op), or NULL. */
static const void *const_data(exporter *x, int32_t node)
{
    const so_node *nd = &x->g->nodes[node];
    if (nd->op == SO_OP_WEIGHT) return x->m->weights[nd->ref].data;
    return x->fdata[node];
}

static uint16_t float_to_half(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    uint32_t sign = (b >> 16) & 0x8000u, ex = (b >> 23) & 0xffu, man = b & 0x7fffffu;
    if (ex == 0xff) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
    int e = (int)ex - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e), half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) half++;
    return (uint16_t)half;
}

/* Writes weight w as an initializer, in its original ONNX element type when it had one. */
static void emit_weight(exporter *x, int32_t w)
{
    if (x->wdone[w]) return;
    x->wdone[w] = 1;
    const so_weight *wt = &x->m->weights[w];
    int64_t cnt = so_shape_numel(&wt->shape);
    int32_t native = wt->shape.dtype == SO_I64 ? T_INT64 : T_FLOAT, t = wt->onnx_type;
    if (!t || t == native || onx_storage_of(t) != wt->shape.dtype) {
        mk_init_named(x, x->wname[w], native, &wt->shape, wt->data, (size_t)cnt * (native == T_INT64 ? 8 : 4));
        return;
    }
    size_t es = onx_onnx_elem_size(t);
    uint8_t *d = so_arena_alloc(&x->ar, (size_t)cnt * es + 1);
    for (int64_t i = 0; i < cnt; i++) {
        uint8_t *o = d + (size_t)i * es;
        if (native == T_FLOAT) {
            float f = ((const float *)wt->data)[i];
            if (t == T_DOUBLE) { double v = f; memcpy(o, &v, 8); }
            else if (t == T_FLOAT16) { uint16_t h = float_to_half(f); memcpy(o, &h, 2); }
            else { uint32_t b; memcpy(&b, &f, 4); uint16_t h = (uint16_t)(b >> 16); memcpy(o, &h, 2); }
        } else {
            int64_t v = ((const int64_t *)wt->data)[i];
            switch (es) {
            case 1: o[0] = (uint8_t)(t == T_BOOL ? v != 0 : v); break;
            case 2: { uint16_t u = (uint16_t)v; memcpy(o, &u, 2); break; }
            case 4: { uint32_t u = (uint32_t)v; memcpy(o, &u, 4); break; }
            default: memcpy(o, &v, 8); break;
            }
        }
    }
    mk_init_named(x, x->wname[w], t, &wt->shape, d, (size_t)cnt * es);
}

/* Min/max of a Clip at the model's opset: attributes before 11, optional inputs after. */
static void clip_params(exporter *x, Onnx__NodeProto *n, const char *base, float lo, float hi)
{
    if (x->opset < 11) {
        if (lo != -INFINITY) a_float(x, n, "min", lo);
        if (hi != INFINITY) a_float(x, n, "max", hi);
        return;
    }
    if (lo != -INFINITY || hi != INFINITY) n_in(n, lo != -INFINITY ? init_f32(x, base, "_min", lo) : "");
    if (hi != INFINITY) n_in(n, init_f32(x, base, "_max", hi));
}

/* Axes as attribute (opset < min_input_opset) or as int64 input. */
static void axes_param(exporter *x, Onnx__NodeProto *n, const char *base, const int64_t *ax, int cnt, int64_t input_opset)
{
    if (x->opset >= input_opset) n_in(n, init_i64(x, base, "_axes", ax, cnt));
    else a_ints(x, n, "axes", ax, cnt);
}

static so_status export_opaque(exporter *x, int32_t i)
{
    const so_node *nd = &x->g->nodes[i];
    const so_opaque *op = &x->m->opaque[nd->ref];
    Onnx__NodeProto *u = onnx__node_proto__unpack(NULL, op->blob_len, op->blob);
    if (!u) return ex_err(x, "corrupt opaque node blob");
    x->unpacked = so_xrealloc(x->unpacked, (x->n_unpacked + 1) * sizeof *x->unpacked);
    x->unpacked[x->n_unpacked++] = u;
    Onnx__NodeProto *n = so_arena_alloc(&x->ar, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = u->op_type;
    n->domain = u->domain;
    n->doc_string = u->doc_string;
    n->name = (char *)ex_unique(x, &x->used_nodes, &x->next_nodes, u->name && u->name[0] ? u->name : u->op_type);
    n->n_attribute = u->n_attribute;
    n->attribute = u->attribute;
    n->input = so_arena_alloc(&x->ar, (u->n_input + 1) * sizeof *n->input);
    n->output = so_arena_alloc(&x->ar, (u->n_output + 1) * sizeof *n->output);
    int j = 0;
    for (size_t k = 0; k < u->n_input; k++) {
        if (!u->input[k][0]) {
            n_in(n, "");
            continue;
        }
        if (j >= nd->n_in) return ex_err(x, "opaque node has fewer inputs than its ONNX form");
        n_in(n, tname(x, nd->in[j++]));
    }
    if (j != nd->n_in - op->n_capture) return ex_err(x, "opaque node has more inputs than its ONNX form");
    /* an If's captured outer values: under the names its branches read (assign_names gave them to the values
       where it could, else an Identity does; two Ifs may capture one name: one Identity) */
    for (int32_t k = 0; k < op->n_capture; k++) {
        const char *t = tname(x, nd->in[j + k]), *c = op->capture[k];
        if (!strcmp(t, c)) continue;
        int32_t v = so_strmap_get(&x->cap_names, c);
        if (v >= 2 && !strcmp(x->cap_src[v - 2], t)) continue;
        if (v != 1) return ex_err(x, "its branches read '%s', a name another tensor of the optimized graph has", c);
        Onnx__NodeProto *id = mk_node(x, "Identity", c);
        n_in(id, t);
        n_out(id, c);
        x->cap_src = so_xrealloc(x->cap_src, ((size_t)x->n_cap_src + 1) * sizeof *x->cap_src);
        x->cap_src[x->n_cap_src] = t;
        so_strmap_put(&x->cap_names, c, 2 + x->n_cap_src++);
    }
    if ((int32_t)u->n_output != nd->n_out) return ex_err(x, "opaque node outputs changed");
    for (size_t k = 0; k < u->n_output; k++) n_out(n, u->output[k][0] ? tname(x, (so_edge){i, (int32_t)k}) : "");
    if (x->n_nodes == x->cap_nodes) {
        x->cap_nodes = x->cap_nodes ? 2 * x->cap_nodes : 256;
        x->nodes = so_xrealloc(x->nodes, x->cap_nodes * sizeof *x->nodes);
    }
    x->nodes[x->n_nodes++] = n;
    return SO_OK;
}

/* Folds an internal operator (ENLARGE, CONST_*) on constant inputs into an initializer. */
static so_status export_internal(exporter *x, int32_t i)
{
    const so_node *nd = &x->g->nodes[i];
    so_tensor in[SO_MAX_IN], out[1];
    if (nd->n_out != 1) return ex_err(x, "internal operator with %d outputs", nd->n_out);
    for (int k = 0; k < nd->n_in; k++) {
        const void *d = const_data(x, nd->in[k].node);
        if (!d) return ex_err(x, "internal operator '%s' has a non-constant input %d and cannot be exported", so_ops[nd->op].name, k);
        in[k].shape = x->g->nodes[nd->in[k].node].out[nd->in[k].slot];
        in[k].data = (void *)d;
    }
    out[0].shape = nd->out[0];
    out[0].data = NULL;
    if (so_node_eval(x->g, i, in, out) != SO_OK) return ex_err(x, "cannot fold internal operator: %s", so_error());
    x->fdata[i] = out[0].data;
    int64_t cnt = so_shape_numel(&nd->out[0]);
    size_t es = nd->out[0].dtype == SO_I64 ? 8 : 4;
    mk_init_named(x, tname(x, (so_edge){i, 0}), nd->out[0].dtype == SO_I64 ? T_INT64 : T_FLOAT, &nd->out[0], out[0].data, (size_t)cnt * es);
    return SO_OK;
}

/* ---------------- one exporter per operator (ops.def) ----------------
   exp_<op> writes the attributes (and attribute inputs) of graph node i, whose NodeProto n
   export_node has made with its data inputs and outputs, in the model's opset. */

typedef struct ectx {
    exporter *x;
    int32_t i;
    const so_node *nd;
    const so_attr *a;
    so_op op;
    const char *base;      /* name base for generated initializers */
    so_shape xs;           /* shape of input 0 (rank -1 if none) */
    Onnx__NodeProto *n;
} ectx;

#define EXP_LOCALS                                                                              \
    exporter *x = cx->x;                                                                        \
    int32_t i = cx->i;                                                                          \
    const so_node *nd = cx->nd;                                                                 \
    const so_attr *a = cx->a;                                                                   \
    so_op op = cx->op;                                                                          \
    const char *base = cx->base;                                                                \
    so_shape xs = cx->xs;                                                                       \
    Onnx__NodeProto *n = cx->n;                                                                 \
    (void)x, (void)i, (void)nd, (void)a, (void)op, (void)base, (void)xs, (void)n

static so_status exp_conv(ectx *cx)
{
    EXP_LOCALS;
    int32_t ker[2] = {a->kernel[0], a->kernel[1]};
    if (nd->n_in > 1) {
        so_shape ws = x->g->nodes[nd->in[1].node].out[nd->in[1].slot];
        if (ws.rank == 4) ker[0] = (int32_t)ws.dim[2], ker[1] = (int32_t)ws.dim[3];
    }
    int32_t st[2] = {a->stride[0] > 0 ? a->stride[0] : 1, a->stride[1] > 0 ? a->stride[1] : 1};
    int32_t dl[2] = {a->dilation[0] > 0 ? a->dilation[0] : 1, a->dilation[1] > 0 ? a->dilation[1] : 1};
    a_ints32(x, n, "kernel_shape", ker, 2);
    a_ints32(x, n, "strides", st, 2);
    a_ints32(x, n, "pads", a->pad, 4);
    a_ints32(x, n, "dilations", dl, 2);
    a_int(x, n, "group", a->group ? a->group : 1);
    return SO_OK;
}

static so_status exp_gemm(ectx *cx)
{
    EXP_LOCALS;
    a_float(x, n, "alpha", a->alpha);
    a_float(x, n, "beta", a->beta);
    if (a->trans_a) a_int(x, n, "transA", 1);
    if (a->trans_b) a_int(x, n, "transB", 1);
    return SO_OK;
}

static so_status exp_clip(ectx *cx)
{
    EXP_LOCALS;
    clip_params(x, n, base, a->clip_min, a->clip_max);
    return SO_OK;
}

static so_status exp_resize(ectx *cx)
{
    EXP_LOCALS;
    a_str(x, n, "mode", a->mode == 2 ? "cubic" : a->mode ? "linear" : "nearest");
    const int excl = a->n_ints > 5 && a->ints[5], aa = a->n_ints > 6 && a->ints[6];
    if ((a->mode == 2 || excl) && x->opset < 11) return ex_err(x, "Resize cubic or exclude_outside needs opset >= 11");
    if (aa && x->opset < 18) return ex_err(x, "Resize antialias needs opset >= 18 (model has opset %lld)", (long long)x->opset);
    if (a->mode == 2 && a->value != -0.75f) a_float(x, n, "cubic_coeff_a", a->value);
    if (excl) a_int(x, n, "exclude_outside", 1);
    if (aa) a_int(x, n, "antialias", 1);
    const float sc[4] = {1, 1, a->alpha, a->beta};
    if (x->opset < 10 && (a->ints[0] != SO_RESIZE_ASYMMETRIC || a->ints[2] || (a->mode == 0 && a->ints[1] != 2)))
        return ex_err(x, "Resize other than Upsample's (asymmetric, nearest rounding down, scales) needs opset >= 10");
    if (x->opset < 9) { /* Upsample-7: scales attribute */
        a_floats(x, n, "scales", sc, 4);
        return SO_OK;
    }
    if (x->opset < 11) {
        if (a->ints[0] != SO_RESIZE_ASYMMETRIC || a->ints[2])
            return ex_err(x, "Resize with coordinate_transformation_mode %s or sizes needs opset >= 11",
                          so_resize_coord_names[a->ints[0]]);
        n_in(n, init_f32v(x, base, "_scales", sc, 4));
        return SO_OK;
    }
    if (a->ints[0] == SO_RESIZE_HALF_PIXEL_SYMMETRIC && x->opset < 19)
        return ex_err(x, "Resize half_pixel_symmetric needs opset >= 19 (model has opset %lld)", (long long)x->opset);
    a_str(x, n, "coordinate_transformation_mode", so_resize_coord_names[a->ints[0]]);
    if (a->mode == 0) a_str(x, n, "nearest_mode", so_resize_nearest_names[a->ints[1]]);
    if (a->ints[0] == SO_RESIZE_TF_CROP_AND_RESIZE && a->n_ints >= 12) {
        const float roi[8] = {0, 0, so_bits_to_f32(a->ints[7]), so_bits_to_f32(a->ints[8]), 1, 1, so_bits_to_f32(a->ints[9]), so_bits_to_f32(a->ints[10])};
        n_in(n, init_f32v(x, base, "_roi", roi, 8));
        if (so_bits_to_f32(a->ints[11]) != 0.0f) a_float(x, n, "extrapolation_value", so_bits_to_f32(a->ints[11]));
    } else
        n_in(n, x->opset < 13 ? init_f32v(x, base, "_roi", NULL, 0) : ""); /* roi: an input until opset 13 */
    if (a->ints[2] >= 2) { /* keep_aspect_ratio_policy on H, W: the deciding axis asks for its size again, the other never decides */
        const so_shape *o = &x->g->nodes[i].out[0];
        const int larger = a->ints[2] < 4, bind = (int)(a->ints[2] - 2) % 2;
        const int64_t ax[2] = {2, 3};
        int64_t sz[2];
        if (x->opset < 18) return ex_err(x, "Resize keep_aspect_ratio_policy needs opset >= 18 (model has opset %lld)", (long long)x->opset);
        for (int k = 0; k < 2; k++) sz[k] = k == bind ? o->dim[2 + k] : larger ? (int64_t)1 << 30 : 1;
        a_str(x, n, "keep_aspect_ratio_policy", larger ? "not_larger" : "not_smaller");
        a_ints(x, n, "axes", ax, 2);
        n_in(n, "");
        n_in(n, init_i64(x, base, "_sizes", sz, 2));
    } else if (a->ints[2]) {
        const so_shape *o = &x->g->nodes[i].out[0];
        n_in(n, x->opset < 13 ? init_f32v(x, base, "_scales", NULL, 0) : "");
        n_in(n, init_i64(x, base, "_sizes", o->dim, 4));
    } else
        n_in(n, init_f32v(x, base, "_scales", sc, 4));
    return SO_OK;
}

static so_status exp_hardsigmoid(ectx *cx)
{
    EXP_LOCALS;
    a_float(x, n, "alpha", a->alpha);
    a_float(x, n, "beta", a->beta);
    return SO_OK;
}

/* blocked-layout operators (superopt's layout domain): the block, and the channel counts */
static so_status exp_nchwc_in(ectx *cx)
{
    EXP_LOCALS;
    a_int(x, n, "block", a->ints[0]);
    if (op == SO_OP_NCHWC_OUT) a_int(x, n, "channels", a->ints[1]);
    return SO_OK;
}

static so_status exp_concat_nchwc(ectx *cx)
{
    EXP_LOCALS;
    a_int(x, n, "block", a->ints[0]);
    a_ints(x, n, "channels", a->ints + 1, a->n_ints - 1);
    return SO_OK;
}

/* the operators whose one attribute is alpha */
static so_status exp_alpha(ectx *cx)
{
    EXP_LOCALS;
    a_float(x, n, "alpha", a->alpha);
    return SO_OK;
}

static so_status exp_batchnorm(ectx *cx)
{
    EXP_LOCALS;
    a_float(x, n, "epsilon", a->epsilon);
    return SO_OK;
}

static so_status exp_maxpool(ectx *cx)
{
    EXP_LOCALS;
    int32_t pst[2] = {a->stride[0] > 0 ? a->stride[0] : 1, a->stride[1] > 0 ? a->stride[1] : 1};
    a_ints32(x, n, "kernel_shape", a->kernel, 2);
    a_ints32(x, n, "strides", pst, 2);
    a_ints32(x, n, "pads", a->pad, 4);
    if ((op == SO_OP_MAXPOOL || op == SO_OP_MAXPOOLIDX) && (a->dilation[0] > 1 || a->dilation[1] > 1)) {
        if (x->opset < 10) return ex_err(x, "MaxPool dilations need opset >= 10");
        a_ints32(x, n, "dilations", a->dilation, 2);
    }
    if (a->ceil_mode) {
        if (x->opset < 10) return ex_err(x, "ceil_mode needs opset >= 10");
        a_int(x, n, "ceil_mode", 1);
    }
    if ((op == SO_OP_AVGPOOL || op == SO_OP_AVGPOOL_NCHWC) && a->count_include_pad) a_int(x, n, "count_include_pad", 1);
    if (op == SO_OP_MAXPOOLIDX) {
        if (x->opset < 8) return ex_err(x, "MaxPool's Indices output needs opset >= 8");
        if (a->mode) a_int(x, n, "storage_order", 1);
    }
    if (op == SO_OP_MAXUNPOOL) {
        if (x->opset < 9) return ex_err(x, "MaxUnpool needs opset >= 9");
        n_in(n, init_i64(x, base, "_output_shape", a->ints, 4));
    }
    return SO_OK;
}

#define exp_maxpoolidx exp_maxpool

static so_status exp_lppool(ectx *cx)
{
    EXP_LOCALS;
    int32_t pst[2] = {a->stride[0] > 0 ? a->stride[0] : 1, a->stride[1] > 0 ? a->stride[1] : 1};
    if (x->opset < 2) return ex_err(x, "LpPool with an integer p needs opset >= 2");
    if ((a->dilation[0] > 1 || a->dilation[1] > 1 || a->ceil_mode) && x->opset < 18)
        return ex_err(x, "LpPool dilations and ceil_mode need opset >= 18 (model has opset %lld)", (long long)x->opset);
    a_ints32(x, n, "kernel_shape", a->kernel, 2);
    a_ints32(x, n, "strides", pst, 2);
    a_ints32(x, n, "pads", a->pad, 4);
    if (a->dilation[0] > 1 || a->dilation[1] > 1) a_ints32(x, n, "dilations", a->dilation, 2);
    if (a->ceil_mode) a_int(x, n, "ceil_mode", 1);
    a_int(x, n, "p", a->mode);
    return SO_OK;
}
static so_status exp_globallppool(ectx *cx)
{
    EXP_LOCALS;
    a_int(x, n, "p", a->mode);
    return SO_OK;
}
#define exp_maxunpool exp_maxpool

static so_status exp_roialign(ectx *cx)
{
    EXP_LOCALS;
    if (x->opset < 10) return ex_err(x, "RoiAlign needs opset >= 10");
    if (a->mode && x->opset < 16) return ex_err(x, "RoiAlign with half_pixel coordinates needs opset >= 16");
    if (x->opset >= 16) a_str(x, n, "coordinate_transformation_mode", a->mode ? "half_pixel" : "output_half_pixel");
    a_int(x, n, "output_height", a->kernel[0]);
    a_int(x, n, "output_width", a->kernel[1]);
    a_int(x, n, "sampling_ratio", a->ints[0]);
    a_float(x, n, "spatial_scale", a->alpha);
    if (a->ints[1]) a_str(x, n, "mode", "max");
    return SO_OK;
}

/* an int64 scalar initializer (DFT's dft_length and axis, STFT's frame_step and frame_length) */
static const char *init_i64_scalar(exporter *x, const char *base, const char *suffix, int64_t v)
{
    so_shape s = so_shape_make(0, NULL);
    int64_t *data = so_arena_alloc(&x->ar, sizeof *data);
    *data = v;
    return mk_init_named(x, ex_name2(x, base, suffix), T_INT64, &s, data, sizeof *data);
}

static so_status exp_dft(ectx *cx)
{
    EXP_LOCALS;
    if (x->opset < 17) return ex_err(x, "DFT needs opset >= 17");
    n_in(n, init_i64_scalar(x, base, "_dft_length", a->ints[0]));
    if (x->opset >= 20) n_in(n, init_i64_scalar(x, base, "_axis", a->axis));
    else a_int(x, n, "axis", a->axis);
    if (a->mode & 1) a_int(x, n, "inverse", 1);
    if (a->mode & 2) a_int(x, n, "onesided", 1);
    return SO_OK;
}

static so_status exp_stft(ectx *cx)
{
    EXP_LOCALS;
    if (x->opset < 17) return ex_err(x, "STFT needs opset >= 17");
    const char *w = nd->n_in > 1 ? n->input[1] : "";
    n->n_input = 1;
    n_in(n, init_i64_scalar(x, base, "_frame_step", a->ints[0]));
    n_in(n, w);
    n_in(n, init_i64_scalar(x, base, "_frame_length", a->ints[1]));
    a_int(x, n, "onesided", a->mode);
    return SO_OK;
}

/* TfIdfVectorizer: inputs 1-4 (pool, n-gram starts, output indexes, weights: constants since import) go back into
   the attributes; the node keeps X only. */
static so_status exp_tfidfvectorizer(ectx *cx)
{
    EXP_LOCALS;
    static const char *const names[4] = {"pool_int64s", "ngram_counts", "ngram_indexes", "weights"};
    static const char *const modes[3] = {"TF", "IDF", "TFIDF"};
    if (x->opset < 9) return ex_err(x, "TfIdfVectorizer needs opset >= 9 (model has opset %lld)", (long long)x->opset);
    for (int k = 1; k < nd->n_in; k++) {
        const so_node *src = &x->g->nodes[nd->in[k].node];
        if (src->op != SO_OP_WEIGHT) return ex_err(x, "TfIdfVectorizer's %s is not a constant", names[k - 1]);
        const so_weight *wt = &x->m->weights[src->ref];
        const int cnt = (int)so_shape_numel(&wt->shape);
        if (k < 4) a_ints(x, n, names[k - 1], wt->data, cnt);
        else a_floats(x, n, names[k - 1], wt->data, cnt);
    }
    n->n_input = 1;
    a_str(x, n, "mode", modes[a->mode]);
    a_int(x, n, "min_gram_length", a->ints[0]);
    a_int(x, n, "max_gram_length", a->ints[1]);
    a_int(x, n, "max_skip_count", a->ints[2]);
    return SO_OK;
}

static so_status exp_reversesequence(ectx *cx)
{
    EXP_LOCALS;
    a_int(x, n, "batch_axis", a->mode);
    a_int(x, n, "time_axis", a->axis);
    return SO_OK;
}

/* the one-axis operators */
static so_status exp_axis(ectx *cx)
{
    EXP_LOCALS;
    a_int(x, n, "axis", a->axis);
    return SO_OK;
}

static so_status exp_reducemean(ectx *cx)
{
    EXP_LOCALS;
    axes_param(x, n, base, a->ints, a->n_ints, op == SO_OP_REDUCESUM ? 13 : 18);
    a_int(x, n, "keepdims", a->keepdims);
    return SO_OK;
}

/* LayerNormalization (opset 17) and RMSNormalization (opset 23): axis, epsilon */
static so_status exp_layernorm(ectx *cx)
{
    EXP_LOCALS;
    const int since = op == SO_OP_RMSNORM ? 23 : 17;
    if (x->opset < since) return ex_err(x, "%s needs opset >= %d (model has opset %lld)", so_ops[op].onnx, since, (long long)x->opset);
    a_int(x, n, "axis", a->axis);
    a_float(x, n, "epsilon", a->epsilon);
    return SO_OK;
}

#define exp_rmsnorm exp_layernorm

static so_status exp_pad(ectx *cx)
{
    EXP_LOCALS;
    static const char *const modes[4] = {"constant", "reflect", "edge", "wrap"};
    if (a->mode < 0 || a->mode > 3) return ex_err(x, "unknown pad mode %d", a->mode);
    if (a->mode == 3 && x->opset < 19) return ex_err(x, "Pad wrap needs opset >= 19 (model has opset %lld)", (long long)x->opset);
    if (x->opset < 11) {
        a_str(x, n, "mode", modes[a->mode]);
        a_ints(x, n, "pads", a->ints, a->n_ints);
        if (a->value != 0) a_float(x, n, "value", a->value);
    } else {
        n_in(n, init_i64(x, base, "_pads", a->ints, a->n_ints));
        if (a->mode == 0 && a->value != 0) n_in(n, init_f32(x, base, "_value", a->value));
        if (a->mode != 0) a_str(x, n, "mode", modes[a->mode]);
    }
    return SO_OK;
}

static so_status exp_split(ectx *cx)
{
    EXP_LOCALS;
    a_int(x, n, "axis", a->axis);
    if (x->opset >= 13) n_in(n, init_i64(x, base, "_split", a->ints, a->n_ints));
    else a_ints(x, n, "split", a->ints, a->n_ints);
    return SO_OK;
}

static so_status exp_reshape(ectx *cx)
{
    EXP_LOCALS;
    int zero = 0;
    for (int k = 0; k < a->n_ints; k++) zero |= a->ints[k] == 0;
    if (zero && x->opset < 14) return ex_err(x, "Reshape to a shape with a zero dimension needs opset >= 14");
    n_in(n, init_i64(x, base, "_shape", a->ints, a->n_ints));
    if (zero) a_int(x, n, "allowzero", 1);
    return SO_OK;
}

static so_status exp_transpose(ectx *cx)
{
    EXP_LOCALS;
    a_ints(x, n, "perm", a->ints, a->n_ints);
    return SO_OK;
}

static so_status exp_squeeze(ectx *cx)
{
    EXP_LOCALS;
    axes_param(x, n, base, a->ints, a->n_ints, 13);
    return SO_OK;
}

static so_status exp_expand(ectx *cx)
{
    EXP_LOCALS;
    n_in(n, init_i64(x, base, "_shape", a->ints, a->n_ints));
    return SO_OK;
}

static so_status exp_slice(ectx *cx)
{
    EXP_LOCALS;
    int nq = a->n_ints / 4;
    int64_t st[8], en[8], ax[8], sp[8];
    for (int k = 0; k < nq; k++) {
        ax[k] = a->ints[4 * k];
        st[k] = a->ints[4 * k + 1];
        en[k] = a->ints[4 * k + 2];
        sp[k] = a->ints[4 * k + 3];
        if (en[k] < 0) en[k] = INT64_MIN; /* "before index 0" of a negative-step slice */
    }
    if (x->opset < 10) {
        for (int k = 0; k < nq; k++)
            if (sp[k] != 1) return ex_err(x, "Slice steps need opset >= 10");
        a_ints(x, n, "starts", st, nq);
        a_ints(x, n, "ends", en, nq);
        a_ints(x, n, "axes", ax, nq);
    } else {
        n_in(n, init_i64(x, base, "_starts", st, nq));
        n_in(n, init_i64(x, base, "_ends", en, nq));
        n_in(n, init_i64(x, base, "_axes", ax, nq));
        n_in(n, init_i64(x, base, "_steps", sp, nq));
    }
    return SO_OK;
}

/* LSTM, GRU (mode = linear_before_reset) and RNN (mode = activation): the optional inputs after B */
static so_status exp_recurrent(ectx *cx)
{
    EXP_LOCALS;
    static const char *const dirs[3] = {"forward", "reverse", "bidirectional"};
    static const char *const rnn_acts[3] = {"Tanh", "Relu", "Sigmoid"};
    a_int(x, n, "hidden_size", a->hidden);
    if (a->direction) a_str(x, n, "direction", dirs[a->direction == 1 ? 1 : 2]);
    if (cx->op == SO_OP_GRU && a->mode) a_int(x, n, "linear_before_reset", a->mode);
    if (cx->op == SO_OP_LSTM && a->mode) a_int(x, n, "input_forget", 1);
    if (a->clip_max > 0.0f) a_float(x, n, "clip", a->clip_max);
    if (cx->op == SO_OP_RNN && a->n_ints == 0 && a->mode > 0 && a->mode < 3) {
        const char *acts[2] = {rnn_acts[a->mode], rnn_acts[a->mode]};
        a_strs(x, n, "activations", acts, a->direction == 2 ? 2 : 1);
    }
    if (a->n_ints > 0) { /* ops.h so_ract: (kind, alpha bits, beta bits) per function; each parameter it takes */
        const char *acts[6] = {0};
        float al[6], be[6];
        int cnt = a->n_ints / 3 < 6 ? a->n_ints / 3 : 6, na = 0, nb = 0;
        for (int q = 0; q < cnt; q++) {
            int kd = a->ints[3 * q] >= 0 && a->ints[3 * q] < SO_RACT_COUNT ? (int)a->ints[3 * q] : 0;
            acts[q] = so_ract_names[kd];
            if (so_ract_params[kd] & 1) al[na++] = so_bits_to_f32(a->ints[3 * q + 1]);
            if (so_ract_params[kd] & 2) be[nb++] = so_bits_to_f32(a->ints[3 * q + 2]);
        }
        a_strs(x, n, "activations", acts, cnt);
        if (na) a_floats(x, n, "activation_alpha", al, na);
        if (nb) a_floats(x, n, "activation_beta", be, nb);
    }
    for (int k = 4; k < nd->n_in; k++) {
        so_edge e = nd->in[k];
        if (k != 4) {
            n_in(n, tname(x, e));
            continue;
        }
        /* sequence_lens is int32 in ONNX; all-full lengths are written as absent */
        const so_node *pn = &x->g->nodes[e.node];
        const void *d = const_data(x, e.node);
        so_shape s = pn->out[e.slot];
        int64_t cnt = so_shape_numel(&s);
        if (d && s.dtype == SO_I64) {
            int full = xs.rank == 3;
            for (int64_t b = 0; b < cnt && full; b++) full = ((const int64_t *)d)[b] == xs.dim[0];
            if (full) {
                n_in(n, "");
                continue;
            }
            int32_t *v = so_arena_alloc(&x->ar, (size_t)(cnt ? cnt : 1) * 4);
            for (int64_t b = 0; b < cnt; b++) v[b] = (int32_t)((const int64_t *)d)[b];
            n_in(n, mk_init_named(x, ex_name2(x, base, "_seq_lens"), T_INT32, &s, v, (size_t)cnt * 4));
        } else {
            const char *c = ex_name2(x, tname(x, e), "_i32");
            Onnx__NodeProto *cn = mk_node(x, "Cast", NULL);
            n_in(cn, tname(x, e));
            n_out(cn, c);
            a_int(x, cn, "to", T_INT32);
            /* the Cast must precede the LSTM: swap the two last nodes */
            x->nodes[x->n_nodes - 1] = n;
            x->nodes[x->n_nodes - 2] = cn;
            n_in(n, c);
        }
    }
    return SO_OK;
}

#define exp_lstm exp_recurrent
#define exp_gru exp_recurrent
#define exp_rnn exp_recurrent

/* operators without attributes (element-wise, MatMul...): inputs and outputs only */
static so_status exp_plain(ectx *cx)
{
    (void)cx;
    return SO_OK;
}


/* The export decision of every operator: its exporter, or EXP_NONE for operators without an
   ONNX form (sources and opaque operators are written elsewhere; internal operators are folded
   into initializers first). The blocked-layout operators are written in superopt's layout domain. An operator without a decision is an undeclared identifier. */
#define EXP_NONE NULL
#define exp_input EXP_NONE
#define exp_weight EXP_NONE
#define exp_opaque EXP_NONE
#define exp_enlarge EXP_NONE
#define exp_const_pool EXP_NONE
#define exp_const_idconv EXP_NONE
#define exp_const_idmat EXP_NONE
#define exp_const_ones EXP_NONE
#define exp_bnfold_w EXP_NONE
#define exp_bnfold_b EXP_NONE
#define exp_matmul exp_plain
#define exp_add exp_plain
#define exp_sub exp_plain
#define exp_mul exp_plain
#define exp_div exp_plain
#define exp_pow exp_plain
#define exp_relu exp_plain
#define exp_sigmoid exp_plain
#define exp_tanh exp_plain
#define exp_erf exp_plain
#define exp_sqrt exp_plain
#define exp_exp exp_plain
#define exp_log exp_plain
#define exp_neg exp_plain
#define exp_reciprocal exp_plain
#define exp_hardswish exp_plain
#define exp_globalavgpool exp_plain
#define exp_identity exp_plain
#define exp_avgpool exp_maxpool
#define exp_reducesum exp_reducemean
#define exp_unsqueeze exp_squeeze
#define exp_softmax exp_axis
#define exp_nchwc_out exp_nchwc_in
#define exp_conv_nchwc exp_conv
#define exp_maxpool_nchwc exp_maxpool
#define exp_avgpool_nchwc exp_maxpool
#define exp_globalavgpool_nchwc exp_plain
#define exp_leakyrelu exp_alpha
#define exp_elu exp_alpha
#define exp_concat exp_axis
#define exp_flatten exp_axis
#define exp_gather exp_axis

typedef so_status (*export_fn)(ectx *cx);
/* ---- operators of other exporters and of the conformance suite ---- */

static so_status exp_selu(ectx *cx)
{
    EXP_LOCALS;
    a_float(x, n, "alpha", a->alpha);
    a_float(x, n, "gamma", a->beta);
    return SO_OK;
}

static so_status exp_shrink(ectx *cx)
{
    EXP_LOCALS;
    a_float(x, n, "lambd", a->alpha);
    a_float(x, n, "bias", a->beta);
    return SO_OK;
}

static so_status exp_gelu(ectx *cx)
{
    EXP_LOCALS;
    if (x->opset < 20) return ex_err(x, "Gelu needs opset >= 20 (model has opset %lld)", (long long)x->opset);
    if (a->mode) a_str(x, n, "approximate", "tanh");
    return SO_OK;
}

static so_status exp_argmax(ectx *cx)
{
    EXP_LOCALS;
    a_int(x, n, "axis", a->axis);
    a_int(x, n, "keepdims", a->keepdims);
    if (a->mode) {
        if (x->opset < 12) return ex_err(x, "select_last_index needs opset >= 12");
        a_int(x, n, "select_last_index", 1);
    }
    return SO_OK;
}

static so_status exp_trilu(ectx *cx)
{
    EXP_LOCALS;
    if (x->opset < 14) return ex_err(x, "Trilu needs opset >= 14 (model has opset %lld)", (long long)x->opset);
    a_int(x, n, "upper", a->mode);
    if (a->ints[0]) { /* k: a 0-D int64 initializer */
        so_shape ks = so_shape_make(0, NULL);
        n_in(n, mk_init_named(x, ex_name2(x, base, "_k"), T_INT64, &ks, so_arena_dup(&x->ar, a->ints, 8), 8));
    }
    return SO_OK;
}

static so_status exp_gatherelements(ectx *cx)
{
    EXP_LOCALS;
    if (x->opset < 11) return ex_err(x, "GatherElements needs opset >= 11 (model has opset %lld)", (long long)x->opset);
    a_int(x, n, "axis", a->axis);
    return SO_OK;
}

static so_status exp_depthtospace(ectx *cx)
{
    EXP_LOCALS;
    a_int(x, n, "blocksize", a->kernel[0]);
    if (op == SO_OP_DEPTHTOSPACE && a->mode) {
        if (x->opset < 11) return ex_err(x, "DepthToSpace mode CRD needs opset >= 11");
        a_str(x, n, "mode", "CRD");
    }
    return SO_OK;
}

#define exp_abs exp_plain
#define exp_floor exp_plain
#define exp_ceil exp_plain
#define exp_round exp_plain
#define exp_sign exp_plain
#define exp_softplus exp_plain
#define exp_softsign exp_plain
#define exp_sin exp_plain
#define exp_cos exp_plain
#define exp_tan exp_plain
#define exp_asin exp_plain
#define exp_acos exp_plain
#define exp_atan exp_plain
#define exp_sinh exp_plain
#define exp_cosh exp_plain
#define exp_asinh exp_plain
#define exp_acosh exp_plain
#define exp_atanh exp_plain
#define exp_mish exp_plain
#define exp_max exp_plain
#define exp_min exp_plain
#define exp_prelu exp_plain
#define exp_celu exp_alpha
#define exp_thresholdedrelu exp_alpha
#define exp_reducemax exp_reducemean
#define exp_reducemin exp_reducemean
#define exp_reduceprod exp_reducemean
#define exp_reducel1 exp_reducemean
#define exp_reducel2 exp_reducemean
#define exp_reducesumsquare exp_reducemean
#define exp_reducelogsum exp_reducemean
#define exp_reducelogsumexp exp_reducemean
#define exp_logsoftmax exp_axis
#define exp_hardmax exp_axis
#define exp_argmin exp_argmax
#define exp_spacetodepth exp_depthtospace

static so_status exp_nllloss(ectx *cx)
{
    EXP_LOCALS;
    static const char *const red[3] = {"none", "sum", "mean"};
    if (x->opset < 12) return ex_err(x, "NegativeLogLikelihoodLoss needs opset >= 12 (model has opset %lld)", (long long)x->opset);
    a_str(x, n, "reduction", red[a->mode]);
    if (a->ints[0]) a_int(x, n, "ignore_index", a->ints[1]);
    return SO_OK;
}
#define exp_where exp_plain

static so_status exp_isinf(ectx *cx)
{
    EXP_LOCALS;
    if (!(a->mode & 1)) a_int(x, n, "detect_negative", 0);
    if (!(a->mode & 2)) a_int(x, n, "detect_positive", 0);
    return SO_OK;
}
#define exp_equal exp_plain
#define exp_less exp_plain
#define exp_greater exp_plain
#define exp_lessorequal exp_plain
#define exp_greaterorequal exp_plain
#define exp_isnan exp_plain
#define exp_not exp_plain
#define exp_and exp_plain
#define exp_or exp_plain
#define exp_xor exp_plain
static so_status exp_mod(ectx *cx)
{
    EXP_LOCALS;
    if (a->mode) a_int(x, n, "fmod", 1);
    return SO_OK;
}
static so_status exp_scatternd(ectx *cx)
{
    EXP_LOCALS;
    static const char *const red[5] = {"none", "add", "mul", "max", "min"};
    if (x->opset < 11) return ex_err(x, "ScatterND needs opset >= 11 (model has opset %lld)", (long long)x->opset);
    if (a->mode) {
        if (x->opset < (a->mode >= 3 ? 18 : 16)) return ex_err(x, "ScatterND reduction '%s' needs a newer opset", red[a->mode]);
        a_str(x, n, "reduction", red[a->mode]);
    }
    return SO_OK;
}
static so_status exp_gridsample(ectx *cx)
{
    EXP_LOCALS;
    static const char *const pad[3] = {"zeros", "border", "reflection"};
    if (x->opset < 16) return ex_err(x, "GridSample needs opset >= 16 (model has opset %lld)", (long long)x->opset);
    const char *m16[3] = {"bilinear", "nearest", "bicubic"}, *m20[3] = {"linear", "nearest", "cubic"};
    a_str(x, n, "mode", (x->opset >= 20 ? m20 : m16)[a->mode]);
    a_str(x, n, "padding_mode", pad[a->ints[0]]);
    if (a->ints[1]) a_int(x, n, "align_corners", 1);
    return SO_OK;
}
static so_status exp_cast(ectx *cx)
{
    EXP_LOCALS;
    a_int(x, n, "to", a->mode);
    return SO_OK;
}

static so_status exp_convtranspose(ectx *cx)
{
    EXP_LOCALS;
    so_shape ws = x->g->nodes[nd->in[1].node].out[nd->in[1].slot];
    int32_t ker[2] = {(int32_t)ws.dim[2], (int32_t)ws.dim[3]};
    a_ints32(x, n, "kernel_shape", ker, 2);
    a_ints32(x, n, "strides", a->stride, 2);
    a_ints32(x, n, "pads", a->pad, 4);
    a_ints32(x, n, "dilations", a->dilation, 2);
    a_int(x, n, "group", a->group);
    if (a->ints[0] || a->ints[1]) a_ints(x, n, "output_padding", a->ints, 2);
    return SO_OK;
}

/* the 3-D operators: ints = kernel, strides, dilations, pad begins, pad ends[, output_padding] (ops.def) */
static so_status exp_spatial3d(ectx *cx)
{
    EXP_LOCALS;
    const int64_t *v = a->ints;
    const int pool = op == SO_OP_MAXPOOL3D || op == SO_OP_AVGPOOL3D;
    const int dilated = v[6] != 1 || v[7] != 1 || v[8] != 1;
    a_ints(x, n, "kernel_shape", v, 3);
    a_ints(x, n, "strides", v + 3, 3);
    a_ints(x, n, "pads", v + 9, 6);
    if (!pool || dilated) {
        if (op == SO_OP_MAXPOOL3D && x->opset < 10) return ex_err(x, "MaxPool dilations need opset >= 10");
        if (op == SO_OP_AVGPOOL3D && x->opset < 19) return ex_err(x, "AveragePool dilations need opset >= 19");
        a_ints(x, n, "dilations", v + 6, 3);
    }
    if (!pool) a_int(x, n, "group", a->group ? a->group : 1);
    if (op == SO_OP_CONVTRANSPOSE3D && (v[15] || v[16] || v[17])) a_ints(x, n, "output_padding", v + 15, 3);
    if (pool && a->ceil_mode) {
        if (x->opset < 10) return ex_err(x, "ceil_mode needs opset >= 10");
        a_int(x, n, "ceil_mode", 1);
    }
    if (op == SO_OP_AVGPOOL3D && a->count_include_pad) a_int(x, n, "count_include_pad", 1);
    return SO_OK;
}

#define exp_conv3d exp_spatial3d
#define exp_convtranspose3d exp_spatial3d
#define exp_maxpool3d exp_spatial3d
#define exp_avgpool3d exp_spatial3d

static so_status exp_lrn(ectx *cx)
{
    EXP_LOCALS;
    a_int(x, n, "size", a->kernel[0]);
    a_float(x, n, "alpha", a->alpha);
    a_float(x, n, "beta", a->beta);
    a_float(x, n, "bias", a->value);
    return SO_OK;
}

static so_status exp_scatterelements(ectx *cx)
{
    EXP_LOCALS;
    static const char *const red[5] = {"none", "add", "mul", "max", "min"};
    if (x->opset < 11) return ex_err(x, "ScatterElements needs opset >= 11 (model has opset %lld)", (long long)x->opset);
    a_int(x, n, "axis", a->axis);
    if (a->mode) {
        if (x->opset < (a->mode >= 3 ? 18 : 16)) return ex_err(x, "ScatterElements reduction '%s' needs a newer opset", red[a->mode]);
        a_str(x, n, "reduction", red[a->mode]);
    }
    return SO_OK;
}

static so_status exp_gathernd(ectx *cx)
{
    EXP_LOCALS;
    if (x->opset < 11) return ex_err(x, "GatherND needs opset >= 11 (model has opset %lld)", (long long)x->opset);
    if (a->axis) {
        if (x->opset < 12) return ex_err(x, "GatherND batch_dims needs opset >= 12");
        a_int(x, n, "batch_dims", a->axis);
    }
    return SO_OK;
}

static so_status exp_topk(ectx *cx)
{
    EXP_LOCALS;
    a_int(x, n, "axis", a->axis);
    if (x->opset < 10) {
        a_int(x, n, "k", a->ints[0]);
        return (a->mode & 1) ? SO_OK : ex_err(x, "TopK smallest needs opset >= 11");
    }
    n_in(n, init_i64(x, base, "_k", a->ints, 1));
    if (!(a->mode & 1)) {
        if (x->opset < 11) return ex_err(x, "TopK smallest needs opset >= 11");
        a_int(x, n, "largest", 0);
    }
    return SO_OK;
}

#define exp_det exp_plain

static const export_fn exporters[SO_OP_COUNT] = {
#define X(e, l, ...) [SO_OP_##e] = exp_##l,
#include "ops.def"
#undef X
};

int so_onnx_exports(so_op op) { return exporters[op] != EXP_NONE; }

int so_onnx_export_drops_attrs(so_op op) { return exporters[op] == exp_plain && (so_ops[op].attrs & ~(unsigned)SO_A_ACT) != 0; }

static so_status export_node(exporter *x, int32_t i)
{
    const so_node *nd = &x->g->nodes[i];
    const so_attr *a = nd->attr;
    so_op op = nd->op;
    const int layout = (so_ops[op].flags & SO_F_LAYOUT) != 0; /* our blocked-layout ops: custom domain, table name */
    const char *ot = layout ? so_ops[op].name : so_ops[op].onnx;
    if (op == SO_OP_RESIZE && x->opset < 10) ot = "Upsample"; /* Resize exists from opset 10 */
    const char *base = nd->name && nd->name[0] ? nd->name : so_ops[op].name;
    so_shape xs = nd->n_in ? x->g->nodes[nd->in[0].node].out[nd->in[0].slot] : (so_shape){.rank = -1};
    int act = (so_ops[op].flags & SO_F_ACT) && a->act != SO_ACT_NONE;
    const char *final0 = tname(x, (so_edge){i, 0});
    const char *main0 = act ? ex_name2(x, final0, "_preact") : final0;
    Onnx__NodeProto *n;

    if (!ot) return ex_err(x, "operator '%s' has no ONNX form", so_ops[op].name);
    if ((op == SO_OP_SOFTMAX || op == SO_OP_LOGSOFTMAX || op == SO_OP_HARDMAX) && x->opset < 13 && xs.rank >= 0 && a->axis != xs.rank - 1) {
        /* single-axis softmax under the old flattening semantics: move the axis last */
        int64_t perm[SO_MAX_RANK];
        for (int k = 0; k < xs.rank; k++) perm[k] = k;
        perm[a->axis] = xs.rank - 1;
        perm[xs.rank - 1] = a->axis;
        const char *t1 = ex_name2(x, final0, "_t"), *t2 = ex_name2(x, final0, "_sm");
        n = mk_node(x, "Transpose", base);
        n_in(n, tname(x, nd->in[0]));
        n_out(n, t1);
        a_ints(x, n, "perm", perm, xs.rank);
        n = mk_node(x, ot, base);
        n_in(n, t1);
        n_out(n, t2);
        a_int(x, n, "axis", xs.rank - 1);
        n = mk_node(x, "Transpose", base);
        n_in(n, t2);
        n_out(n, final0);
        a_ints(x, n, "perm", perm, xs.rank);
        return SO_OK;
    }

    n = mk_node(x, ot, nd->name);
    if (layout) {
        n->domain = ex_strdup(x, SO_ONNX_LAYOUT_DOMAIN);
        x->layout_ops = 1;
    }
    int data_inputs = nd->n_in;
    if (op == SO_OP_LSTM || op == SO_OP_GRU || op == SO_OP_RNN) data_inputs = nd->n_in < 4 ? nd->n_in : 4;
    for (int k = 0; k < data_inputs; k++) n_in(n, tname(x, nd->in[k]));
    for (int k = 0; k < nd->n_out; k++) n_out(n, k == 0 ? main0 : tname(x, (so_edge){i, k}));
    if (exporters[op] == EXP_NONE) return ex_err(x, "operator '%s' has no exporter", so_ops[op].name);
    ectx cx = {x, i, nd, a, op, base, xs, n};
    so_status st = exporters[op](&cx);
    if (st != SO_OK) return st;
    if (act) {
        /* the operator whose activation role (ops.def) is this epilogue */
        const char *act_type = NULL;
        for (int k = 0; k < SO_OP_COUNT && !act_type; k++)
            if (so_ops[k].act == a->act) act_type = so_ops[k].onnx;
        if (!act_type) return ex_err(x, "unknown fused activation %d", a->act);
        Onnx__NodeProto *an = mk_node(x, act_type, ex_name2(x, base, "_act"));
        n_in(an, main0);
        if (a->act == SO_ACT_CLIP) clip_params(x, an, base, a->clip_min, a->clip_max);
        n_out(an, final0);
    }
    return SO_OK;
}

static Onnx__ValueInfoProto *mk_value_info(exporter *x, const char *name, const so_shape *s)
{
    Onnx__ValueInfoProto *v = so_arena_alloc(&x->ar, sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = (char *)name;
    Onnx__TypeProto *tp = so_arena_alloc(&x->ar, sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = so_arena_alloc(&x->ar, sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = s->dtype ? s->dtype : T_FLOAT;
    if (s->rank >= 0) {
        Onnx__TensorShapeProto *sp = so_arena_alloc(&x->ar, sizeof *sp);
        onnx__tensor_shape_proto__init(sp);
        sp->n_dim = (size_t)s->rank;
        sp->dim = so_arena_alloc(&x->ar, (size_t)(s->rank + 1) * sizeof *sp->dim);
        for (int d = 0; d < s->rank; d++) {
            Onnx__TensorShapeProto__Dimension *dm = so_arena_alloc(&x->ar, sizeof *dm);
            onnx__tensor_shape_proto__dimension__init(dm);
            dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dm->dim_value = s->dim[d];
            sp->dim[d] = dm;
        }
        tt->shape = sp;
    }
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->type = tp;
    return v;
}

typedef struct filebuf {
    ProtobufCBuffer base;
    FILE *f;
    int err;
} filebuf;

static void filebuf_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
    filebuf *fb = (filebuf *)b;
    if (!fb->err && len && fwrite(data, 1, len, fb->f) != len) fb->err = errno ? errno : EIO;
}

/* Names every node output: inputs, graph outputs and initializers keep theirs. Returns a mask of
   graph outputs that need an Identity (their tensor already has another name). */
static char *assign_names(exporter *x)
{
    so_graph *g = x->g;
    so_model *m = x->m;
    int32_t total = 0;
    x->toff = so_xmalloc(((size_t)g->n_nodes + 1) * sizeof *x->toff);
    for (int32_t i = 0; i < g->n_nodes; i++) {
        x->toff[i] = total;
        total += g->nodes[i].n_out;
    }
    x->tname = so_xcalloc((size_t)total + 1, sizeof *x->tname);
    x->wname = so_xcalloc((size_t)m->n_weights + 1, sizeof *x->wname);
    x->wdone = so_xcalloc((size_t)m->n_weights + 1, 1);
    x->fdata = so_xcalloc((size_t)g->n_nodes + 1, sizeof *x->fdata);
    char *need_id = so_xcalloc((size_t)m->n_outputs + 1, 1);
    x->in_names = so_arena_alloc(&x->ar, ((size_t)m->n_inputs + 1) * sizeof *x->in_names);
    x->out_names = so_arena_alloc(&x->ar, ((size_t)m->n_outputs + 1) * sizeof *x->out_names);
    for (int32_t i = 0; i < m->n_inputs; i++) {
        char b[32];
        snprintf(b, sizeof b, "input_%d", (int)i);
        x->in_names[i] = m->inputs[i].name && m->inputs[i].name[0] ? ex_strdup(x, m->inputs[i].name) : ex_strdup(x, b);
        so_strmap_put(&x->used, x->in_names[i], 1);
    }
    for (int32_t o = 0; o < m->n_outputs; o++) {
        char b[32];
        snprintf(b, sizeof b, "output_%d", (int)o);
        x->out_names[o] = m->outputs[o].name && m->outputs[o].name[0] ? ex_strdup(x, m->outputs[o].name) : ex_strdup(x, b);
        so_strmap_put(&x->used, x->out_names[o], 1);
    }
    for (int32_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == SO_OP_INPUT) x->tname[x->toff[i]] = x->in_names[g->nodes[i].ref];
    for (int32_t o = 0; o < m->n_outputs; o++) {
        so_edge e = g->outputs[o];
        const so_node *nd = &g->nodes[e.node];
        const char **slot = &x->tname[x->toff[e.node] + e.slot];
        int is_const = nd->op == SO_OP_WEIGHT || (so_ops[nd->op].flags & (SO_F_INTERNAL | SO_F_LAYOUT)) == SO_F_INTERNAL;
        if (*slot || nd->op == SO_OP_INPUT || is_const) need_id[o] = 1;
        else *slot = x->out_names[o];
        /* a graph output that is a graph input of the same name, or listed twice: the tensor
           already has the output's name, and Identity(x) -> x would define x twice */
        if (need_id[o] && *slot && !strcmp(*slot, x->out_names[o])) need_id[o] = 0;
    }
    for (int32_t i = 0; i < g->n_nodes; i++) /* the names an opaque If's branches define: no outer tensor may take one */
        if (g->nodes[i].op == SO_OP_OPAQUE)
            for (int32_t k = 0; k < m->opaque[g->nodes[i].ref].n_inner; k++) so_strmap_put(&x->used, m->opaque[g->nodes[i].ref].inner[k], 1);
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const so_node *nd = &g->nodes[i];
        if (nd->op != SO_OP_WEIGHT) continue;
        if (!x->wname[nd->ref]) {
            const char *wn = m->weights[nd->ref].name;
            x->wname[nd->ref] = ex_name(x, wn && wn[0] ? wn : "weight");
        }
        x->tname[x->toff[i]] = x->wname[nd->ref];
    }
    for (int32_t i = 0; i < g->n_nodes; i++) { /* the values an opaque If captures: the names its branches read */
        const so_node *nd = &g->nodes[i];
        const so_opaque *op = nd->op == SO_OP_OPAQUE ? &m->opaque[nd->ref] : NULL;
        for (int32_t k = 0; op && k < op->n_capture; k++) {
            const so_edge e = nd->in[nd->n_in - op->n_capture + k];
            const char **slot = &x->tname[x->toff[e.node] + e.slot], *c = op->capture[k];
            if (*slot && !strcmp(*slot, c)) continue;
            if (!*slot && so_strmap_get(&x->used, c) < 0) *slot = ex_strdup(x, c);
            else if (so_strmap_get(&x->used, c) < 0) so_strmap_put(&x->cap_names, c, 1); /* export_opaque's Identity */
            so_strmap_put(&x->used, c, 1);
        }
    }
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const so_node *nd = &g->nodes[i];
        const char *base = nd->name && nd->name[0] ? nd->name : so_ops[nd->op].name;
        for (int k = 0; k < nd->n_out; k++) {
            if (x->tname[x->toff[i] + k]) continue;
            char suf[32];
            snprintf(suf, sizeof suf, nd->n_out > 1 ? "_out%d" : "_out", k);
            x->tname[x->toff[i] + k] = ex_name2(x, base, suf);
        }
    }
    return need_id;
}

static so_status build_and_write(exporter *x, const char *path)
{
    so_graph *g = x->g;
    so_model *m = x->m;
    so_status st = SO_ERR;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const so_node *nd = &g->nodes[i];
        int32_t lim = nd->op == SO_OP_INPUT ? m->n_inputs : nd->op == SO_OP_WEIGHT ? m->n_weights : nd->op == SO_OP_OPAQUE ? m->n_opaque : INT32_MAX;
        if (nd->ref < 0 ? lim != INT32_MAX : nd->ref >= lim) {
            so_node_desc(g, i, x->desc, sizeof x->desc);
            return ex_err(x, "refers to a missing model entry %d", nd->ref);
        }
    }
    if (m->n_outputs <= 0) return so_errorf("graph has no outputs");
    char *need_id = assign_names(x);
    Onnx__ModelProto *extra = NULL;
    so_atomic out;

    for (int32_t i = 0; i < g->n_nodes; i++) {
        const so_node *nd = &g->nodes[i];
        so_node_desc(g, i, x->desc, sizeof x->desc);
        if (nd->op == SO_OP_INPUT) continue;
        if (nd->op == SO_OP_WEIGHT) continue; /* emitted below when referenced */
        so_status r;
        if (nd->op == SO_OP_OPAQUE) r = export_opaque(x, i);
        else if ((so_ops[nd->op].flags & (SO_F_INTERNAL | SO_F_LAYOUT)) == SO_F_INTERNAL) r = export_internal(x, i);
        else r = export_node(x, i);
        if (r != SO_OK) goto done;
    }
    for (int32_t o = 0; o < m->n_outputs; o++) {
        if (!need_id[o]) continue;
        Onnx__NodeProto *n = mk_node(x, "Identity", x->out_names[o]);
        n_in(n, tname(x, g->outputs[o]));
        n_out(n, x->out_names[o]);
    }
    {
        /* initializers for the weights some node reads (an all-full LSTM sequence_lens is not read) */
        so_strmap read = {0};
        for (size_t k = 0; k < x->n_nodes; k++)
            for (size_t j = 0; j < x->nodes[k]->n_input; j++)
                if (x->nodes[k]->input[j][0]) so_strmap_put(&read, x->nodes[k]->input[j], 1);
        for (int32_t i = 0; i < g->n_nodes; i++) /* and the weights an opaque If's branches read by name */
            if (g->nodes[i].op == SO_OP_OPAQUE)
                for (int32_t k = 0; k < m->opaque[g->nodes[i].ref].n_capture; k++)
                    so_strmap_put(&read, tname(x, g->nodes[i].in[g->nodes[i].n_in - m->opaque[g->nodes[i].ref].n_capture + k]), 1);
        for (int32_t i = 0; i < g->n_nodes; i++)
            if (g->nodes[i].op == SO_OP_WEIGHT && so_strmap_get(&read, x->wname[g->nodes[i].ref]) >= 0) emit_weight(x, g->nodes[i].ref);
        so_strmap_free(&read);
    }

    Onnx__GraphProto *gp = so_arena_alloc(&x->ar, sizeof *gp);
    onnx__graph_proto__init(gp);
    gp->name = ex_strdup(x, m->graph_name && m->graph_name[0] ? m->graph_name : "superopt");
    gp->n_node = x->n_nodes;
    gp->node = x->nodes;
    gp->n_initializer = x->n_inits;
    gp->initializer = x->inits;
    gp->n_input = (size_t)m->n_inputs;
    gp->input = so_arena_alloc(&x->ar, ((size_t)m->n_inputs + 1) * sizeof *gp->input);
    for (int32_t i = 0; i < m->n_inputs; i++) { /* in the type the file had (int32 / bool inputs are stored as int64) */
        so_shape is = m->inputs[i].shape;
        is.dtype = so_input_elem_type(m, i);
        gp->input[i] = mk_value_info(x, x->in_names[i], &is);
    }
    gp->n_output = (size_t)m->n_outputs;
    gp->output = so_arena_alloc(&x->ar, ((size_t)m->n_outputs + 1) * sizeof *gp->output);
    for (int32_t o = 0; o < m->n_outputs; o++) {
        so_edge e = g->outputs[o];
        so_shape os = g->nodes[e.node].out[e.slot];
        int32_t decl = m->outputs[o].declared_type;
        if (os.dtype == SO_I64 && (decl == T_BOOL || decl == T_INT32)) os.dtype = decl; /* computed as int64, declared narrower */
        gp->output[o] = mk_value_info(x, x->out_names[o], &os);
    }

    Onnx__ModelProto mp = ONNX__MODEL_PROTO__INIT;
    mp.has_ir_version = 1;
    mp.ir_version = m->ir_version > 0 ? m->ir_version : 8;
    mp.producer_name = ex_strdup(x, m->producer_name && m->producer_name[0] ? m->producer_name : "superopt");
    mp.graph = gp;
    size_t n_extra = 0;
    if (m->extra_opsets_len) {
        extra = onnx__model_proto__unpack(NULL, m->extra_opsets_len, m->extra_opsets);
        if (extra) n_extra = extra->n_opset_import;
    }
    mp.opset_import = so_arena_alloc(&x->ar, (n_extra + 2) * sizeof *mp.opset_import);
    Onnx__OperatorSetIdProto *def = so_arena_alloc(&x->ar, sizeof *def);
    onnx__operator_set_id_proto__init(def);
    def->domain = ex_strdup(x, "");
    def->has_version = 1;
    def->version = x->opset;
    mp.opset_import[mp.n_opset_import++] = def;
    for (size_t i = 0; i < n_extra; i++) mp.opset_import[mp.n_opset_import++] = extra->opset_import[i];
    if (extra) onx_copy_kept_fields(&mp, extra); /* kept from the input model (onnx_import.c) */
    if (x->layout_ops) {
        Onnx__OperatorSetIdProto *lo = so_arena_alloc(&x->ar, sizeof *lo);
        onnx__operator_set_id_proto__init(lo);
        lo->domain = ex_strdup(x, SO_ONNX_LAYOUT_DOMAIN);
        lo->has_version = 1;
        lo->version = 1;
        mp.opset_import[mp.n_opset_import++] = lo;
    }

    x->io_err = 1;
    if (so_atomic_open(&out, path, "wb") != SO_OK) goto done;
    filebuf fb;
    memset(&fb, 0, sizeof fb);
    fb.base.append = filebuf_append;
    fb.f = out.f;
    errno = 0;
    protobuf_c_message_pack_to_buffer(&mp.base, &fb.base);
    if (fb.err) errno = fb.err; /* so_atomic_commit reports errno */
    st = so_atomic_commit(&out, path, !fb.err);
done:
    free(need_id);
    if (extra) onnx__model_proto__free_unpacked(extra, NULL);
    return st;
}

so_status so_onnx_save(const so_graph *g0, const char *path)
{
    exporter x;
    memset(&x, 0, sizeof x);
    so_status st = SO_ERR;
    x.m = g0->model;
    x.opset = x.m->opset > 0 ? x.m->opset : 17;
    x.g = so_graph_clone(g0);
    if (so_graph_toposort(x.g) != SO_OK) goto done;
    so_graph_dce(x.g);
    st = build_and_write(&x, path);
done:
    if (st != SO_OK) {
        if (!x.io_err) so_error_prefix(path);
        onx_one_line_error();
    }
    if (x.fdata)
        for (int32_t i = 0; i < x.g->n_nodes; i++) free(x.fdata[i]);
    for (size_t i = 0; i < x.n_unpacked; i++) onnx__node_proto__free_unpacked(x.unpacked[i], NULL);
    free(x.unpacked);
    free(x.fdata);
    free(x.tname);
    free(x.toff);
    free(x.wname);
    free(x.wdone);
    free(x.nodes);
    free(x.inits);
    so_strmap_free(&x.used);
    so_strmap_free(&x.used_nodes);
    so_strmap_free(&x.next_used);
    so_strmap_free(&x.next_nodes);
    so_strmap_free(&x.cap_names);
    free(x.cap_src);
    so_graph_free(x.g);
    so_arena_free(&x.ar);
    return st;
}
