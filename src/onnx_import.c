/* onnx_import.c - ONNX import driver: importer state, input/initializer reading, node ordering, the so_onnx_load entry points. */
#include "onnx_priv.h"
#include "onnx_scan.h"

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

/* Import walks the NodeProtos in dependency order keeping a table from tensor name to value:
   either a constant (host data) or an edge of the graph being built, whose shape is inferred as
   soon as the node is added. Helper ops whose inputs are constants (or, for Shape/Size, whose
   input shape is known) are evaluated here (try_fold); table ops whose inputs are all constants
   are evaluated with the reference kernels (emit). Constants become WEIGHT nodes only when a
   graph node reads them. Parameters given as tensors (Reshape shape, Slice starts, Split sizes,
   Clip bounds, axes, pads) are resolved into so_attr; when they are not constant the node is kept
   verbatim as OPAQUE, as are operators the table does not know. Finally: toposort, shape
   inference, DCE, unused weights dropped, opaque ids numbered canonically.

   Export clones the graph, toposorts it, names every tensor (graph inputs/outputs and
   initializers keep their names) and writes each node in the ONNX form of the model's opset. */

int64_t so_onnx_symbolic_dim = 0;
int64_t so_onnx_fold_max_elems = (int64_t)1 << 24;

/* ======================================================================
   pinned shapes (--input-shape NAME=D0,D1,..., --dim SYMBOL=N)
   ====================================================================== */

#define MAX_PINS 64
typedef struct pin {
    char name[256];      /* input name (input pins) or dim_param symbol (dim pins) */
    int rank;            /* input pins */
    int64_t dim[SO_MAX_RANK];
} pin;
static pin in_pins[MAX_PINS], dim_pins[MAX_PINS];
static int n_in_pins, n_dim_pins;

void so_onnx_pins_clear(void) { n_in_pins = n_dim_pins = 0; }

/* Splits "NAME=rest": the name into p->name; returns rest or NULL with a message. */
static const char *pin_name(const char *opt, const char *spec, pin *p)
{
    const char *eq = strrchr(spec, '=');
    if (!eq || eq == spec) return so_errorf("%s '%s': expected NAME=VALUE", opt, spec), NULL;
    if ((size_t)(eq - spec) >= sizeof p->name) return so_errorf("%s: name longer than %zu characters", opt, sizeof p->name - 1), NULL;
    memcpy(p->name, spec, (size_t)(eq - spec));
    p->name[eq - spec] = 0;
    return eq + 1;
}

/* An earlier pin of the same name is replaced (the last option wins). */
static pin *pin_slot(pin *set, int *n, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(set[i].name, name)) return &set[i];
    return *n < MAX_PINS ? &set[(*n)++] : NULL;
}

so_status so_onnx_pin_input(const char *spec)
{
    pin p;
    memset(&p, 0, sizeof p);
    const char *rest = pin_name("--input-shape", spec, &p);
    if (!rest) return SO_ERR;
    /* "x=" pins a scalar (rank 0) */
    while (*rest) {
        char *end;
        errno = 0;
        long long v = strtoll(rest, &end, 10);
        if (end == rest || errno || v < 0 || v > INT32_MAX || (*end && *end != ','))
            return so_errorf("--input-shape '%s': dimensions must be integers in 0..%d separated by commas", spec, INT32_MAX);
        if (p.rank == SO_MAX_RANK) return so_errorf("--input-shape '%s': more than %d dimensions", spec, SO_MAX_RANK);
        p.dim[p.rank++] = v;
        rest = *end ? end + 1 : end;
        if (*end && !*rest) return so_errorf("--input-shape '%s': trailing comma", spec);
    }
    pin *slot = pin_slot(in_pins, &n_in_pins, p.name);
    if (!slot) return so_errorf("--input-shape: more than %d inputs pinned", MAX_PINS);
    *slot = p;
    return SO_OK;
}

so_status so_onnx_pin_dim(const char *spec)
{
    pin p;
    memset(&p, 0, sizeof p);
    const char *rest = pin_name("--dim", spec, &p);
    if (!rest) return SO_ERR;
    long long v;
    if (so_parse_int(rest, 0, INT32_MAX, &v)) return so_errorf("--dim '%s': the value must be an integer in 0..%d", spec, INT32_MAX);
    p.dim[0] = v;
    pin *slot = pin_slot(dim_pins, &n_dim_pins, p.name);
    if (!slot) return so_errorf("--dim: more than %d symbols pinned", MAX_PINS);
    *slot = p;
    return SO_OK;
}

/* Value of dim_param `sym` for this load: --dim, else a symbol an --input-shape fixed. */
int onx_sym_value(imp *im, const char *sym, int64_t *out)
{
    if (!sym || !sym[0]) return 0;
    for (int i = 0; i < n_dim_pins; i++)
        if (!strcmp(dim_pins[i].name, sym)) return *out = dim_pins[i].dim[0], 1;
    int32_t k = so_strmap_get(&im->syms, sym);
    if (k >= 0) return *out = k, 1;
    return 0;
}

/* Keeps the current message on one line: control characters (from names in the file) become '?'. */
void onx_one_line_error(void)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", so_error());
    for (char *c = buf; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    so_errorc(so_error_code(), "%s", buf); /* keeps the code */
}

so_status onx_node_err(imp *im, const char *fmt, ...)
{
    char msg[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return so_errorf("%s: %s", im->desc, msg);
}

static void proto_node_desc(const Onnx__NodeProto *n, size_t idx, char *buf, size_t len)
{
    const char *type = n->op_type ? n->op_type : "?";
    if (n->name && n->name[0]) snprintf(buf, len, "node '%s' (%s)", n->name, type);
    else if (n->n_output && n->output[0][0]) snprintf(buf, len, "node #%zu (%s) producing '%s'", idx, type, n->output[0]);
    else snprintf(buf, len, "node #%zu (%s)", idx, type);
}

static val *new_val(imp *im, const char *name)
{
    if (im->n_vals == im->cap_vals) {
        im->cap_vals = im->cap_vals ? im->cap_vals * 2 : 256;
        im->vals = so_xrealloc(im->vals, (size_t)im->cap_vals * sizeof *im->vals);
    }
    val *v = so_xcalloc(1, sizeof *v);
    v->name = name;
    v->e.node = -1;
    if (name && name[0]) so_strmap_put(&im->names, name, im->n_vals);
    im->vals[im->n_vals++] = v;
    return v;
}

/* Binds `name` to constant c (takes ownership of c->data). */
val *onx_bind_const(imp *im, const char *name, ctensor *c)
{
    val *v = new_val(im, name);
    v->is_const = 1;
    v->owns = 1;
    v->c = *c;
    memset(c, 0, sizeof *c);
    return v;
}

val *onx_bind_edge(imp *im, const char *name, int32_t node, int32_t slot)
{
    val *v = new_val(im, name);
    v->e.node = node;
    v->e.slot = slot;
    return v;
}

val *onx_lookup(imp *im, const char *name)
{
    int32_t i = so_strmap_get(&im->names, name);
    return i < 0 ? NULL : im->vals[i];
}

so_shape onx_vshape(imp *im, const val *v)
{
    if (v->is_const) return v->c.shape;
    return im->g->nodes[v->e.node].out[v->e.slot];
}

/* The graph edge for a value: constants become WEIGHT nodes (once). */
so_edge onx_materialize(imp *im, val *v)
{
    if (v->is_const && v->e.node < 0) {
        int32_t w = so_model_add_weight(im->m, v->name, v->c.shape, v->c.data);
        int32_t native = v->c.shape.dtype == SO_I64 ? T_INT64 : T_FLOAT;
        if (v->c.otype && v->c.otype != native) im->m->weights[w].onnx_type = v->c.otype;
        v->owns = 0;
        int32_t nd = so_graph_add(im->g, SO_OP_WEIGHT, NULL, 0, 1, NULL, w, NULL);
        im->g->nodes[nd].out[0] = v->c.shape;
        v->e.node = nd;
        v->e.slot = 0;
    }
    return v->e;
}

static void free_vals(imp *im)
{
    for (int32_t i = 0; i < im->n_vals; i++) {
        if (im->vals[i]->owns) free(im->vals[i]->c.data);
        free(im->vals[i]);
    }
    free(im->vals);
    im->vals = NULL;
    im->n_vals = im->cap_vals = 0;
}

/* New constant of the given storage and shape, zero-filled. */
int onx_ct_new(imp *im, ctensor *c, int storage, int32_t otype, int rank, const int64_t *dims)
{
    memset(c, 0, sizeof *c);
    if (rank < 0 || rank > SO_MAX_RANK) return onx_node_err(im, "constant of rank %d (at most %d supported)", rank, SO_MAX_RANK), SO_ERR;
    c->shape.rank = rank;
    c->shape.dtype = storage;
    c->otype = otype;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0) return onx_node_err(im, "constant with negative dimension %lld", (long long)dims[i]), SO_ERR;
        if (so_i64_mul(n, dims[i], &n)) return onx_node_err(im, "constant size overflows"), SO_ERR;
        c->shape.dim[i] = dims[i];
    }
    if (im->fold_cap > 0 && n > im->fold_cap) {
        im->fold_over = 1; /* not an error: the caller keeps the node unfolded */
        return onx_node_err(im, "constant of %lld elements is too large to fold", (long long)n), SO_ERR;
    }
    size_t bytes;
    if (so_size_mul((size_t)n, storage == SO_I64 ? 8 : 4, &bytes) || bytes > so_max_alloc_bytes)
        return onx_node_err(im, "constant of %lld elements exceeds the allocation limit (%zu bytes)", (long long)n, so_max_alloc_bytes), SO_ERR;
    c->data = so_weight_alloc(bytes, 1);
    if (!c->data) return onx_node_err(im, "out of memory allocating %zu bytes", bytes), SO_ERR;
    return SO_OK;
}

/* ======================================================================
   model-level import
   ====================================================================== */

/* Orders nodes so that producers come before users (DFS, keeps the given order when already
   sorted). Checks that every input exists and that there is no cycle. */
static so_status order_nodes(const Onnx__GraphProto *gp, size_t **order_out)
{
    size_t n = gp->n_node;
    so_strmap prod = {0};
    char d[600];
    so_status st = SO_OK;
    size_t *order = so_xmalloc((n + 1) * sizeof *order), n_order = 0;
    unsigned char *state = so_xcalloc(n + 1, 1);
    size_t *stk = so_xmalloc((n + 1) * sizeof *stk), *pos = so_xmalloc((n + 1) * sizeof *pos);
    for (size_t i = 0; i < gp->n_initializer; i++)
        if (gp->initializer[i]->name) so_strmap_put(&prod, gp->initializer[i]->name, -2);
    for (size_t i = 0; i < gp->n_input; i++)
        if (gp->input[i]->name) so_strmap_put(&prod, gp->input[i]->name, -2);
    for (size_t i = 0; i < n; i++) {
        const Onnx__NodeProto *nd = gp->node[i];
        if (!nd->op_type) {
            st = so_errorf("node #%zu has no op_type", i);
            goto done;
        }
        for (size_t k = 0; k < nd->n_output; k++) {
            if (!nd->output[k][0]) continue;
            if (so_strmap_get(&prod, nd->output[k]) != -1) {
                proto_node_desc(nd, i, d, sizeof d);
                st = so_errorf("%s: tensor '%s' is produced more than once", d, nd->output[k]);
                goto done;
            }
            so_strmap_put(&prod, nd->output[k], (int32_t)i);
        }
    }
    for (size_t i = 0; i < n; i++) {
        const Onnx__NodeProto *nd = gp->node[i];
        for (size_t k = 0; k < nd->n_input; k++)
            if (nd->input[k][0] && so_strmap_get(&prod, nd->input[k]) == -1) {
                proto_node_desc(nd, i, d, sizeof d);
                st = so_errorf("%s: input '%s' is not produced by any node, initializer or graph input", d, nd->input[k]);
                goto done;
            }
    }
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *on = gp->output[i]->name;
        if (!on || so_strmap_get(&prod, on) == -1) {
            st = so_errorf("graph output '%s' is not produced by any node, initializer or graph input", on ? on : "");
            goto done;
        }
    }
    for (size_t root = 0; root < n; root++) {
        if (state[root]) continue;
        size_t sp = 0;
        stk[sp] = root;
        pos[sp++] = 0;
        state[root] = 1;
        while (sp) {
            size_t v = stk[sp - 1];
            const Onnx__NodeProto *nd = gp->node[v];
            if (pos[sp - 1] < nd->n_input) {
                const char *in = nd->input[pos[sp - 1]++];
                if (!in[0]) continue;
                int32_t p = so_strmap_get(&prod, in);
                if (p < 0) continue;
                if (state[p] == 1) {
                    proto_node_desc(gp->node[p], (size_t)p, d, sizeof d);
                    st = so_errorf("graph has a cycle through %s", d);
                    goto done;
                }
                if (state[p] == 0) {
                    state[p] = 1;
                    stk[sp] = (size_t)p;
                    pos[sp++] = 0;
                }
                continue;
            }
            state[v] = 2;
            order[n_order++] = v;
            sp--;
        }
    }
done:
    so_strmap_free(&prod);
    free(state);
    free(stk);
    free(pos);
    if (st != SO_OK) {
        free(order);
        order = NULL;
    }
    *order_out = order;
    return st;
}

/* Drops weights no WEIGHT node uses and renumbers the rest. */
static void compact_weights(so_model *m, so_graph *g)
{
    int32_t *map = so_xmalloc(((size_t)m->n_weights + 1) * sizeof *map);
    for (int32_t i = 0; i < m->n_weights; i++) map[i] = -1;
    for (int32_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == SO_OP_WEIGHT) map[g->nodes[i].ref] = 0;
    int32_t k = 0;
    for (int32_t i = 0; i < m->n_weights; i++) {
        if (map[i] < 0) {
            free(m->weights[i].data);
            continue;
        }
        map[i] = k;
        m->weights[k++] = m->weights[i];
    }
    m->n_weights = k;
    for (int32_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == SO_OP_WEIGHT) g->nodes[i].ref = map[g->nodes[i].ref];
    free(map);
}

typedef struct opq_key {
    uint64_t h;
    int32_t node;
} opq_key;

static int cmp_opq(const void *a, const void *b)
{
    const opq_key *x = a, *y = b;
    if (x->h != y->h) return x->h < y->h ? -1 : 1;
    return x->node < y->node ? -1 : x->node > y->node;
}

/* Numbers the opaque operators of g canonically (by content and position in the graph, not by
   node order in the file) and drops unused ones, so that equal graphs hash equal. */
static void canonical_opaque(so_model *m, so_graph *g)
{
    int32_t n = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) n += g->nodes[i].op == SO_OP_OPAQUE;
    opq_key *keys = so_xcalloc((size_t)n + 1, sizeof *keys);
    int32_t *saved = so_xcalloc((size_t)g->n_nodes + 1, sizeof *saved);
    n = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        so_node *nd = &g->nodes[i];
        saved[i] = nd->ref;
        if (nd->op != SO_OP_OPAQUE) continue;
        const so_opaque *o = &m->opaque[nd->ref];
        uint64_t h = XXH3_64bits(o->op_type, strlen(o->op_type)) ^ (XXH3_64bits(o->domain, strlen(o->domain)) * 31);
        Onnx__NodeProto *u = onnx__node_proto__unpack(NULL, o->blob_len, o->blob);
        if (u) {
            /* attributes only: names of the node and its tensors are not part of its identity */
            Onnx__NodeProto c = ONNX__NODE_PROTO__INIT;
            c.op_type = u->op_type;
            c.domain = u->domain;
            c.n_attribute = u->n_attribute;
            c.attribute = u->attribute;
            size_t len = onnx__node_proto__get_packed_size(&c);
            uint8_t *buf = so_xmalloc(len + 1);
            onnx__node_proto__pack(&c, buf);
            h ^= XXH3_64bits(buf, len);
            free(buf);
            onnx__node_proto__free_unpacked(u, NULL);
        }
        nd->ref = (int32_t)(h ^ (h >> 32));
        keys[n++].node = i;
    }
    uint64_t *nh = so_graph_node_hashes(g);
    for (int32_t k = 0; k < n; k++) keys[k].h = nh[keys[k].node];
    free(nh);
    qsort(keys, (size_t)n, sizeof *keys, cmp_opq);
    so_opaque *no = so_arena_alloc(&m->arena, (size_t)(n ? n : 1) * sizeof *no);
    for (int32_t i = 0; i < g->n_nodes; i++) g->nodes[i].ref = saved[i];
    for (int32_t k = 0; k < n; k++) {
        so_node *nd = &g->nodes[keys[k].node];
        no[k] = m->opaque[nd->ref];
        nd->ref = k;
    }
    m->opaque = no;
    m->n_opaque = m->cap_opaque = n;
    free(keys);
    free(saved);
}

static const pin *input_pin(const char *name)
{
    for (int i = 0; i < n_in_pins; i++)
        if (!strcmp(in_pins[i].name, name)) return &in_pins[i];
    return NULL;
}

/* Input k of an operator whose VALUE the importer needs (a parameter turned into attributes or an
   output shape: scales, bounds, a pad value, a ratio, a target shape, axes, starts/ends, k, a
   depth, a condition), or whose output shape depends on the values (NonZero...). A graph input that
   reaches such a position (directly or through other nodes) cannot be fed at run time: given with
   run --inputs DIR it is bound as a constant and the graph specialised to it. Every other input
   position of every operator is data, read by the kernels at run time. */
static int is_param_use(const char *op, size_t k)
{
    static const struct { const char *op; size_t from; } p[] = {
        {"Resize", 1}, {"Upsample", 1}, {"Pad", 1}, {"Dropout", 1}, {"Range", 0}, {"OneHot", 0},
        {"Reshape", 1}, {"Expand", 1}, {"Tile", 1}, {"ConstantOfShape", 0}, {"TopK", 1}, {"Slice", 1},
        {"Squeeze", 1}, {"Unsqueeze", 1}, {"Split", 1}, {"CumSum", 1}, {"Trilu", 1}, {"NonZero", 0},
        {"Compress", 0}, {"Unique", 0}, {"If", 0}, {"Loop", 0}, {"ReduceSum", 1}, {"ReduceMean", 1},
        {"ReduceMax", 1}, {"ReduceMin", 1}, {"ReduceProd", 1}, {"ReduceL1", 1}, {"ReduceL2", 1},
        {"ReduceLogSum", 1}, {"ReduceLogSumExp", 1}, {"ReduceSumSquare", 1}, {"NonMaxSuppression", 0},
        {"CenterCropPad", 1}, {"Col2Im", 1}, {"STFT", 1}, {"DFT", 1}, {"BlackmanWindow", 0}, {"HannWindow", 0},
        {"HammingWindow", 0}, {"MelWeightMatrix", 0}, {"SequenceAt", 1}, {"SplitToSequence", 1}, {"MaxUnpool", 2},
    };
    for (size_t i = 0; i < sizeof p / sizeof *p; i++)
        if (!strcmp(op, p[i].op)) return k >= p[i].from;
    return 0;
}

/* 1 if the value of graph input `name` is needed at import: it reaches a parameter position
   (is_param_use) through any chain of nodes. Shape and Size read only the shape, so the chain stops
   there. Conservative: a value merely passing through a node taints all its outputs. */
static int value_needed_at_import(const Onnx__GraphProto *gp, const char *name)
{
    size_t cap = 16, n = 1, head = 0;
    const char **work = so_xmalloc(cap * sizeof *work);
    unsigned char *seen = so_xcalloc(gp->n_node + 1, 1);
    int needed = 0;
    work[0] = name;
    while (head < n && !needed) {
        const char *v = work[head++];
        for (size_t i = 0; i < gp->n_node && !needed; i++) {
            const Onnx__NodeProto *nd = gp->node[i];
            int uses = 0;
            for (size_t k = 0; k < nd->n_input; k++) {
                if (!nd->input[k] || strcmp(nd->input[k], v)) continue;
                if (!onx_is_default_domain(nd->domain)) continue;
                if (is_param_use(nd->op_type, k)) needed = 1;
                uses = 1;
            }
            if (!uses || seen[i] || !strcmp(nd->op_type, "Shape") || !strcmp(nd->op_type, "Size")) continue;
            seen[i] = 1;
            for (size_t o = 0; o < nd->n_output; o++) {
                if (!nd->output[o] || !nd->output[o][0]) continue;
                if (n == cap) work = so_xrealloc(work, (cap *= 2) * sizeof *work);
                work[n++] = nd->output[o];
            }
        }
    }
    free(work);
    free(seen);
    return needed;
}

static so_status read_inputs(imp *im, const Onnx__GraphProto *gp, so_strmap *inits)
{
    so_model *m = im->m;
    m->inputs = so_arena_alloc(&m->arena, (gp->n_input + 1) * sizeof *m->inputs);
    for (int i = 0; i < n_in_pins; i++) { /* every pinned input exists (and is not an initializer) */
        size_t k = 0;
        while (k < gp->n_input && !(gp->input[k]->name && !strcmp(gp->input[k]->name, in_pins[i].name))) k++;
        if (k == gp->n_input || so_strmap_get(inits, in_pins[i].name) >= 0)
            return so_errorf("--input-shape names '%s', which is not an input of the model", in_pins[i].name);
    }
    /* symbols fixed by --input-shape positions first, so that another input using the same
       symbol gets the same value */
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        const pin *p = vi->name ? input_pin(vi->name) : NULL;
        const Onnx__TypeProto *tp = vi->type;
        if (!p || !tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type || !tp->tensor_type->shape) continue;
        const Onnx__TensorShapeProto *sp = tp->tensor_type->shape;
        for (size_t d = 0; d < sp->n_dim && d < (size_t)p->rank; d++)
            if (sp->dim[d]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && sp->dim[d]->dim_param &&
                so_strmap_get(&im->syms, sp->dim[d]->dim_param) < 0)
                so_strmap_put(&im->syms, sp->dim[d]->dim_param, (int32_t)p->dim[d]);
    }
    int position = 0;
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || !vi->name[0]) return so_errorf("graph input #%zu has no name", i);
        if (so_strmap_get(inits, vi->name) >= 0) continue;
        const Onnx__TypeProto *tp = vi->type;
        if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
            return so_errorf("input '%s' is not a tensor", vi->name);
        const Onnx__TensorShapeProto *sp = tp->tensor_type->shape;
        const pin *p = input_pin(vi->name);
        const so_tfile *bv = onx_bound_input(position++);
        pin from_value;
        if (bv) {
            int32_t et = tp->tensor_type->elem_type;
            if (et != bv->onnx_type)
                return so_errorf("input '%s' (#%d) is %s in the model, the given tensor is %s", vi->name, position - 1,
                                 onx_onnx_type_name(et), onx_onnx_type_name(bv->onnx_type));
            if (sp && sp->n_dim != (size_t)bv->shape.rank)
                return so_errorf("input '%s' (#%d) has rank %zu, the given tensor rank %d", vi->name, position - 1, sp->n_dim, (int)bv->shape.rank);
            for (size_t d = 0; sp && d < sp->n_dim; d++)
                if (sp->dim[d]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && sp->dim[d]->dim_value != bv->shape.dim[d])
                    return so_errorf("input '%s' (#%d): dimension %zu is %lld in the model, %lld in the given tensor", vi->name, position - 1,
                                     d, (long long)sp->dim[d]->dim_value, (long long)bv->shape.dim[d]);
            if (value_needed_at_import(gp, vi->name)) { /* the graph is specialised to this value */
                ctensor c;
                if (onx_ct_new(im, &c, bv->shape.dtype, et, bv->shape.rank, bv->shape.dim) != SO_OK) return SO_ERR;
                memcpy(c.data, bv->data, (size_t)onx_ct_numel(&c) * (bv->shape.dtype == SO_I64 ? 8 : 4));
                onx_bind_const(im, vi->name, &c);
                onx_mark_const_input(position - 1);
                continue;
            }
            memset(&from_value, 0, sizeof from_value);
            from_value.rank = bv->shape.rank;
            memcpy(from_value.dim, bv->shape.dim, sizeof from_value.dim);
            if (p && (p->rank != from_value.rank || memcmp(p->dim, from_value.dim, (size_t)p->rank * sizeof *p->dim)))
                return so_errorf("input '%s': --input-shape disagrees with the shape of the given tensor", vi->name);
            p = &from_value;
        }
        if (!sp && !p) return so_errorf("input '%s' has no shape; give it with --input-shape %s=D0,D1,...", vi->name, vi->name);
        size_t rank = sp ? sp->n_dim : (size_t)p->rank;
        if (p && (size_t)p->rank != rank)
            return so_errorf("input '%s' has rank %zu, --input-shape gives %d dimensions", vi->name, rank, p->rank);
        if (rank > SO_MAX_RANK) return so_errorf("input '%s' has rank %zu (at most %d supported)", vi->name, rank, SO_MAX_RANK);
        so_value_info *v = &m->inputs[m->n_inputs];
        v->name = so_arena_strdup(&m->arena, vi->name);
        v->shape.rank = (int32_t)rank;
        v->elem_type = tp->tensor_type->elem_type ? tp->tensor_type->elem_type : SO_F32;
        v->shape.dtype = so_dtype_storage(v->elem_type);
        if (!v->shape.dtype)
            return so_errorf("input '%s' is %s; superopt takes float32, int64, int32 and bool inputs", vi->name,
                             onx_onnx_type_name(v->elem_type));
        v->pinned = 0;
        int64_t numel = 1;
        for (size_t d = 0; d < rank; d++) {
            const Onnx__TensorShapeProto__Dimension *dm = sp ? sp->dim[d] : NULL;
            int fixed = dm && dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            int64_t dv = fixed ? dm->dim_value : -1;
            if (p) {
                if (fixed && dv != p->dim[d])
                    return so_errorf("input '%s': dimension %zu is %lld in the file, --input-shape gives %lld", vi->name, d,
                                     (long long)dv, (long long)p->dim[d]);
                if (!fixed) v->pinned |= 1u << d;
                dv = p->dim[d];
            } else if (!fixed) {
                const char *sym = dm && dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM ? dm->dim_param : NULL;
                if (onx_sym_value(im, sym, &dv)) v->pinned |= 1u << d;
                else if (so_onnx_symbolic_dim > 0) dv = so_onnx_symbolic_dim;
                else if (sym && sym[0])
                    return so_errorf("input '%s' has a symbolic dimension '%s' (dimension %zu); pin it with --dim %s=N or --input-shape %s=D0,D1,...",
                                     vi->name, sym, d, sym, vi->name);
                else
                    return so_errorf("input '%s' has an unknown dimension %zu; pin it with --input-shape %s=D0,D1,...", vi->name, d, vi->name);
            }
            if (dv < 0) return so_errorf("input '%s' has a negative dimension %lld", vi->name, (long long)dv);
            if (dv > INT32_MAX) return so_errorf("input '%s' has an absurd dimension %lld", vi->name, (long long)dv);
            if (so_i64_mul(numel, dv, &numel)) return so_errorf("input '%s': element count overflows", vi->name);
            v->shape.dim[d] = dv;
        }
        size_t bytes;
        if (so_size_mul((size_t)numel, 8, &bytes) || bytes / 2 > so_max_alloc_bytes)
            return so_errorc(SO_ERR_LIMIT, "input '%s': %lld elements exceed the allocation limit (%zu bytes)", vi->name, (long long)numel, so_max_alloc_bytes);
        m->n_inputs++;
    }
    if (onx_bound_count() >= 0 && onx_bound_count() != position)
        return so_errorf("--inputs gives %d tensors for the model's %d inputs", onx_bound_count(), position);
    return SO_OK;
}

static so_status load_proto(const char *path, Onnx__ModelProto *mp, const rawset *rs, so_model **out)
{
    imp im;
    memset(&im, 0, sizeof im);
    so_status st = SO_ERR;
    so_model *m = NULL;
    size_t *order = NULL;
    so_strmap inits = {0};
    const char *p = path ? path : "<memory>";
    im.path = p;
    *out = NULL;

    if (!mp) {
        so_errorc(SO_ERR_PARSE, "not a valid ONNX model (protobuf parse failed)");
        goto done;
    }
    Onnx__GraphProto *gp = mp->graph;
    if (!gp) {
        so_errorc(SO_ERR_PARSE, "not a valid ONNX model (no graph)");
        goto done;
    }
    {
        const char *slash = strrchr(p, '/');
        im.dir = slash ? so_xstrdup(p) : so_xstrdup(".");
        if (slash) im.dir[slash - p == 0 ? 1 : slash - p] = 0;
    }
    m = so_model_new(p);
    im.m = m;
    m->ir_version = mp->has_ir_version ? mp->ir_version : 0;
    m->opset = -1;
    m->producer_name = so_arena_strdup(&m->arena, mp->producer_name ? mp->producer_name : "");
    m->graph_name = so_arena_strdup(&m->arena, gp->name ? gp->name : "");
    {
        Onnx__ModelProto extra = ONNX__MODEL_PROTO__INIT;
        Onnx__OperatorSetIdProto **ex = so_xcalloc(mp->n_opset_import + 1, sizeof *ex);
        for (size_t i = 0; i < mp->n_opset_import; i++) {
            Onnx__OperatorSetIdProto *o = mp->opset_import[i];
            if (onx_is_default_domain(o->domain)) m->opset = o->version > m->opset ? o->version : m->opset;
            else ex[extra.n_opset_import++] = o;
        }
        extra.opset_import = ex;
        onx_copy_kept_fields(&extra, mp);
        if (extra.n_opset_import || extra.n_functions || extra.n_metadata_props || extra.has_model_version || extra.doc_string ||
            extra.domain) {
            m->extra_opsets_len = onnx__model_proto__get_packed_size(&extra);
            m->extra_opsets = so_arena_alloc(&m->arena, m->extra_opsets_len + 1);
            onnx__model_proto__pack(&extra, m->extra_opsets);
        }
        free(ex);
    }
    if (m->opset < 0) {
        so_errorf("model imports no opset for the default ONNX domain");
        goto done;
    }
    if (m->opset < 7) {
        so_errorf("opset %lld is too old (superopt reads opset 7 and later)", (long long)m->opset);
        goto done;
    }
    if (m->opset > SO_ONNX_MAX_OPSET) { /* operators would be read with older meanings, silently */
        so_errorc(SO_ERR_UNSUPPORTED, "opset %lld is newer than any superopt knows (opset %d and earlier)", (long long)m->opset,
                  SO_ONNX_MAX_OPSET);
        goto done;
    }
    im.opset = m->opset;

    /* names of value_info and outputs (for opaque shapes) */
    im.n_vis = gp->n_value_info + gp->n_output;
    im.vis = so_xcalloc(im.n_vis + 1, sizeof *im.vis);
    for (size_t i = 0; i < gp->n_value_info; i++) im.vis[i] = gp->value_info[i];
    for (size_t i = 0; i < gp->n_output; i++) im.vis[gp->n_value_info + i] = gp->output[i];
    for (size_t i = 0; i < im.n_vis; i++)
        if (im.vis[i]->name) so_strmap_put(&im.vinfo, im.vis[i]->name, (int32_t)i);

    for (size_t i = 0; i < gp->n_initializer; i++) {
        const char *nm = gp->initializer[i]->name;
        if (!nm || !nm[0]) {
            so_errorf("initializer #%zu has no name", i);
            goto done;
        }
        if (so_strmap_get(&inits, nm) >= 0) {
            so_errorf("initializer '%s' appears twice", nm);
            goto done;
        }
        so_strmap_put(&inits, nm, (int32_t)i);
    }
    if (read_inputs(&im, gp, &inits) != SO_OK) goto done;
    if (order_nodes(gp, &order) != SO_OK) goto done;

    m->n_outputs = (int32_t)gp->n_output;
    m->outputs = so_arena_alloc(&m->arena, (gp->n_output + 1) * sizeof *m->outputs);
    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__TypeProto *tp = gp->output[i]->type;
        m->outputs[i].name = so_arena_strdup(&m->arena, gp->output[i]->name);
        if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type) m->outputs[i].declared_type = tp->tensor_type->elem_type;
    }
    if (m->n_outputs == 0) {
        so_errorf("graph has no outputs");
        goto done;
    }
    im.g = so_graph_new(m);
    m->graph = im.g;

    for (int32_t i = 0; i < m->n_inputs; i++) {
        int32_t nd = so_graph_add(im.g, SO_OP_INPUT, NULL, 0, 1, NULL, i, m->inputs[i].name);
        im.g->nodes[nd].out[0] = m->inputs[i].shape;
        if (so_graph_infer(im.g, nd) != SO_OK) goto done;
        onx_bind_edge(&im, m->inputs[i].name, nd, 0);
    }
    for (size_t i = 0; i < gp->n_initializer; i++) {
        Onnx__TensorProto *t = gp->initializer[i];
        char what[600];
        ctensor c;
        snprintf(what, sizeof what, "initializer '%s'", t->name);
        const rawref *r = rs && rs->r && i < rs->n && rs->r[i].present ? &rs->r[i] : NULL;
        if (r) { /* borrowed: put back what strip_model took out, for this call only */
            t->has_raw_data = 1;
            t->raw_data.data = (uint8_t *)r->data;
            t->raw_data.len = r->len;
        }
        so_status ts = onx_tensor_from_proto(&im, t, what, &c);
        if (r) {
            t->has_raw_data = 0;
            t->raw_data.data = NULL;
            t->raw_data.len = 0;
            onx_release_raw(rs, r->data, r->len);
        } else if (t->has_raw_data && t->raw_data.data) {
            free(t->raw_data.data); /* protobuf-c's default allocator is malloc */
            t->raw_data.data = NULL;
            t->raw_data.len = 0;
        }
        if (ts != SO_OK) goto done;
        if (t->data_type == T_FLOAT16 || t->data_type == T_BFLOAT16) m->n_widened_half++, m->widened_half_values += onx_ct_numel(&c);
        onx_bind_const(&im, t->name, &c);
    }
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *nd = gp->node[order[i]];
        im.cur = nd;
        proto_node_desc(nd, order[i], im.desc, sizeof im.desc);
        if (onx_import_node(&im, nd) != SO_OK) goto done;
    }
    for (int32_t o = 0; o < m->n_outputs; o++) {
        val *v = onx_lookup(&im, m->outputs[o].name);
        if (!v) {
            so_errorf("graph output '%s' is not produced", m->outputs[o].name);
            goto done;
        }
        im.g->outputs[o] = onx_materialize(&im, v);
    }
    if (so_graph_toposort(im.g) != SO_OK) goto done;
    if (so_graph_infer_all(im.g) != SO_OK) goto done;
    so_graph_dce(im.g);
    compact_weights(m, im.g);
    canonical_opaque(m, im.g);
    for (int32_t o = 0; o < m->n_outputs; o++) m->outputs[o].shape = im.g->nodes[im.g->outputs[o].node].out[im.g->outputs[o].slot];
    {
        /* the weights count against --max-memory's total for as long as the model lives
           (so_model_free gives them back); during the import each tensor was bounded alone */
        size_t wb = 0;
        for (int32_t i = 0; i < m->n_weights; i++) {
            int64_t n = so_shape_numel(&m->weights[i].shape);
            if (n > 0 && m->weights[i].data) wb += (size_t)n * (m->weights[i].shape.dtype == SO_I64 ? 8 : 4);
        }
        if (so_mem_charge(wb, "the model's weights") != SO_OK) goto done;
        m->mem_charged = wb;
    }
    st = SO_OK;
done:
    if (st != SO_OK) {
        st = so_error_prefix(p); /* the code of the failure: parse error, over a limit, unsupported... */
        onx_one_line_error();
        so_model_free(m);
        m = NULL;
    }
    free_vals(&im);
    so_strmap_free(&im.names);
    so_strmap_free(&im.vinfo);
    so_strmap_free(&im.syms);
    so_strmap_free(&inits);
    free(im.vis);
    free(im.dir);
    free(im.realdir);
    free(order);
    if (mp) onnx__model_proto__free_unpacked(mp, NULL);
    *out = m;
    return st;
}

/* protobuf-c unpacks nested messages by recursion, one stack frame chain per level: a model
   whose subgraphs (If/Loop bodies) or types nest thousands deep overflowed the stack before any
   check ran (issue 20). The wire-format pre-scan measures the depth without recursion first. */
static so_status check_nesting(const char *path, const uint8_t *buf, size_t len)
{
    size_t at = 0;
    switch (so_onnx_scan_nesting(buf, len, SO_ONNX_MAX_NESTING, &at)) {
    case SO_ONNX_SCAN_TOO_DEEP:
        return so_errorc(SO_ERR_LIMIT, "%s: messages nest more than %d levels deep (subgraphs or types; at byte %zu)", path ? path : "<memory>",
                         SO_ONNX_MAX_NESTING, at);
    case SO_ONNX_SCAN_MALFORMED:
        return so_errorc(SO_ERR_PARSE, "%s: not a valid ONNX model (protobuf parse failed at byte %zu)", path ? path : "<memory>", at);
    default: return SO_OK;
    }
}

void onx_copy_kept_fields(Onnx__ModelProto *dst, const Onnx__ModelProto *src)
{
    dst->n_functions = src->n_functions;
    dst->functions = src->functions;
    dst->n_metadata_props = src->n_metadata_props;
    dst->metadata_props = src->metadata_props;
    dst->has_model_version = src->has_model_version;
    dst->model_version = src->model_version;
    dst->doc_string = src->doc_string;
    dst->domain = src->domain;
}

so_status so_onnx_load_buffer(const char *path, const void *buf, size_t len, so_model **out)
{
    *out = NULL;
    if (check_nesting(path, buf, len) != SO_OK) return so_error_code();
    rawset rs = {0};
    so_status st = load_proto(path, onx_unpack_model(buf, len, &rs), &rs, out);
    free(rs.r);
    return st;
}

/* The file is read into an anonymous mapping rather than a malloc block so that the pages of each
   initializer can be given back as soon as it is converted (release_raw): the peak is then about
   one copy of the weights plus the metadata, not serialized + unpacked + converted. */
so_status so_onnx_load(const char *path, so_model **out)
{
    *out = NULL;
    struct stat sb;
    FILE *f = so_open_regular(path, &sb); /* a FIFO or device is refused, never waited on */
    if (!f) return so_error_code();
    so_status st = SO_ERR;
    rawset rs = {0};
    uint8_t *buf = NULL;
    size_t len = (size_t)sb.st_size;
    if (len > so_max_alloc_bytes) {
        st = so_errorc(SO_ERR_LIMIT, "%s: file of %zu bytes exceeds the allocation limit (%zu bytes)", path, len, so_max_alloc_bytes);
        goto done;
    }
    if (len) {
        void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
            st = so_errorc(SO_ERR_LIMIT, "%s: out of memory reading %zu bytes", path, len);
            goto done;
        }
        buf = rs.map = m;
        rs.map_len = len;
    }
    if (len && fread(buf, 1, len, f) != len) {
        st = so_errorc(SO_ERR_IO, "%s: cannot read: %s", path, strerror(errno ? errno : EIO));
        goto done;
    }
    fclose(f);
    f = NULL;
    if (check_nesting(path, buf, len) != SO_OK) {
        st = so_error_code();
        goto done;
    }
    Onnx__ModelProto *mp = onx_unpack_model(buf ? buf : (const uint8_t *)"", len, &rs);
    if (!rs.r && rs.map) { /* unpacked whole: protobuf-c has its own copies */
        munmap(rs.map, rs.map_len);
        rs.map = NULL;
    }
    st = load_proto(path, mp, &rs, out);
done:
    if (rs.map) munmap(rs.map, rs.map_len);
    free(rs.r);
    if (f) fclose(f);
    return st;
}
