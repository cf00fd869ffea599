/* onnx_io.c - ONNX import (protobuf-c) into the graph IR with import-time constant folding, and export back to ONNX. */

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
#include "onnx_io.h"

#include "../kernels/ref.h"
#include "onnx.pb-c.h"
#include "shape.h"

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

int64_t so_onnx_symbolic_dim = 0;
int64_t so_onnx_fold_max_elems = (int64_t)1 << 24;

/* Builder results: done, failed (message set), or "keep this node verbatim as OPAQUE". */
enum { B_OK = 0, B_ERR = 1, B_OPAQUE = 2 };

/* ONNX TensorProto.DataType codes used here. */
enum {
    T_FLOAT = 1, T_UINT8 = 2, T_INT8 = 3, T_UINT16 = 4, T_INT16 = 5, T_INT32 = 6, T_INT64 = 7,
    T_STRING = 8, T_BOOL = 9, T_FLOAT16 = 10, T_DOUBLE = 11, T_UINT32 = 12, T_UINT64 = 13,
    T_BFLOAT16 = 16
};


/* ======================================================================
   string -> int map (open addressing; keys are borrowed)
   ====================================================================== */

typedef struct strmap {
    const char **keys;
    int32_t *vals;
    size_t cap, n;
} strmap;

static size_t str_hash(const char *s) { return (size_t)XXH3_64bits(s, strlen(s)); }

static int32_t map_get(const strmap *m, const char *k)
{
    if (!m->cap) return -1;
    size_t mask = m->cap - 1, h = str_hash(k) & mask;
    while (m->keys[h]) {
        if (strcmp(m->keys[h], k) == 0) return m->vals[h];
        h = (h + 1) & mask;
    }
    return -1;
}

static void map_put(strmap *m, const char *k, int32_t v)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        const char **keys = so_xcalloc(cap, sizeof *keys);
        int32_t *vals = so_xcalloc(cap, sizeof *vals);
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->keys[i]) continue;
            size_t h = str_hash(m->keys[i]) & (cap - 1);
            while (keys[h]) h = (h + 1) & (cap - 1);
            keys[h] = m->keys[i];
            vals[h] = m->vals[i];
        }
        free(m->keys);
        free(m->vals);
        m->keys = keys;
        m->vals = vals;
        m->cap = cap;
    }
    size_t mask = m->cap - 1, h = str_hash(k) & mask;
    while (m->keys[h]) {
        if (strcmp(m->keys[h], k) == 0) {
            m->vals[h] = v;
            return;
        }
        h = (h + 1) & mask;
    }
    m->keys[h] = k;
    m->vals[h] = v;
    m->n++;
}

static void map_free(strmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ======================================================================
   element types
   ====================================================================== */

/* Storage class used for a constant of ONNX type t: SO_F32, SO_I64, or 0 (unsupported). */
static int storage_of(int32_t t)
{
    switch (t) {
    case T_FLOAT: case T_FLOAT16: case T_DOUBLE: case T_BFLOAT16:
        return SO_F32;
    case T_UINT8: case T_INT8: case T_UINT16: case T_INT16: case T_INT32: case T_INT64:
    case T_BOOL: case T_UINT32: case T_UINT64:
        return SO_I64;
    default:
        return 0;
    }
}

static size_t onnx_elem_size(int32_t t)
{
    switch (t) {
    case T_UINT8: case T_INT8: case T_BOOL: return 1;
    case T_UINT16: case T_INT16: case T_FLOAT16: case T_BFLOAT16: return 2;
    case T_FLOAT: case T_INT32: case T_UINT32: return 4;
    case T_INT64: case T_DOUBLE: case T_UINT64: return 8;
    default: return 0;
    }
}

static const char *onnx_type_name(int32_t t)
{
    static const char *const names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16",
                                        "INT32", "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE",
                                        "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
    if (t >= 0 && (size_t)t < SO_ARRAY_LEN(names)) return names[t];
    return "unknown";
}

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, ex = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
    if (ex == 0) {
        float f = ldexpf((float)man, -24);
        return sign ? -f : f;
    }
    if (ex == 31) bits = sign | 0x7f800000u | (man << 13);
    else bits = sign | ((ex + 112u) << 23) | (man << 13);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static float bf16_to_float(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* float -> int64 the way a C cast would, saturating instead of undefined behaviour. */
static int64_t f2i(double f)
{
    if (f != f) return 0;
    if (f >= 9.2233720368547758e18) return INT64_MAX;
    if (f <= -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)f;
}

/* Wraps an integer into the range of ONNX integer type t (Cast semantics). */
static int64_t wrap_int(int64_t v, int32_t t)
{
    switch (t) {
    case T_UINT8: return (uint8_t)v;
    case T_INT8: return (int8_t)v;
    case T_UINT16: return (uint16_t)v;
    case T_INT16: return (int16_t)v;
    case T_INT32: return (int32_t)v;
    case T_UINT32: return (uint32_t)v;
    case T_BOOL: return v != 0;
    default: return v;
    }
}

/* Converts n little-endian elements of ONNX type t at src into storage (float or int64). */
static void convert_raw(const uint8_t *src, int32_t t, int64_t n, void *dst)
{
    size_t es = onnx_elem_size(t);
    if (storage_of(t) == SO_F32) {
        float *d = dst;
        for (int64_t i = 0; i < n; i++, src += es) {
            if (t == T_FLOAT) memcpy(&d[i], src, 4);
            else if (t == T_DOUBLE) { double x; memcpy(&x, src, 8); d[i] = (float)x; }
            else { uint16_t h; memcpy(&h, src, 2); d[i] = t == T_FLOAT16 ? half_to_float(h) : bf16_to_float(h); }
        }
        return;
    }
    int64_t *d = dst;
    for (int64_t i = 0; i < n; i++, src += es) {
        switch (t) {
        case T_INT64: memcpy(&d[i], src, 8); break;
        case T_UINT64: { uint64_t x; memcpy(&x, src, 8); d[i] = (int64_t)x; break; }
        case T_INT32: { int32_t x; memcpy(&x, src, 4); d[i] = x; break; }
        case T_UINT32: { uint32_t x; memcpy(&x, src, 4); d[i] = x; break; }
        case T_INT16: { int16_t x; memcpy(&x, src, 2); d[i] = x; break; }
        case T_UINT16: { uint16_t x; memcpy(&x, src, 2); d[i] = x; break; }
        case T_INT8: d[i] = (int8_t)src[0]; break;
        case T_UINT8: d[i] = src[0]; break;
        case T_BOOL: d[i] = src[0] != 0; break;
        default: d[i] = 0; break;
        }
    }
}

/* ======================================================================
   constant tensors (import-time values)
   ====================================================================== */

typedef struct ctensor {
    so_shape shape; /* shape.dtype is the storage: SO_F32 (float) or SO_I64 (int64_t) */
    int32_t otype;  /* ONNX element type the value stands for (FLOAT, INT64, BOOL, INT32, ...) */
    void *data;
} ctensor;

static int64_t ct_numel(const ctensor *c) { return so_shape_numel(&c->shape); }
static int ct_isint(const ctensor *c) { return c->shape.dtype == SO_I64; }

static double ct_getf(const ctensor *c, int64_t i)
{
    return ct_isint(c) ? (double)((const int64_t *)c->data)[i] : (double)((const float *)c->data)[i];
}

static int64_t ct_geti(const ctensor *c, int64_t i)
{
    return ct_isint(c) ? ((const int64_t *)c->data)[i] : f2i(((const float *)c->data)[i]);
}

/* Element offset in shape `a` (right-aligned numpy broadcast) of flat index i of shape o. */
static int64_t bcast_off(const so_shape *o, const so_shape *a, int64_t i)
{
    int64_t off = 0, mul = 1;
    for (int d = o->rank - 1, da = a->rank - 1; d >= 0; d--, da--) {
        int64_t c = i % o->dim[d];
        i /= o->dim[d];
        if (da >= 0) {
            if (a->dim[da] != 1) off += c * mul;
            mul *= a->dim[da];
        }
    }
    return off;
}

/* numpy broadcast shape; 0 on success, -1 if incompatible. dtype copied from a. */
static int bshape(const so_shape *a, const so_shape *b, so_shape *o)
{
    so_shape r;
    memset(&r, 0, sizeof r);
    r.rank = SO_MAX(a->rank, b->rank);
    r.dtype = a->dtype;
    for (int d = 0; d < r.rank; d++) {
        int ia = a->rank - r.rank + d, ib = b->rank - r.rank + d;
        int64_t x = ia >= 0 ? a->dim[ia] : 1, y = ib >= 0 ? b->dim[ib] : 1;
        if (x == y || y == 1) r.dim[d] = x;
        else if (x == 1) r.dim[d] = y;
        else return -1;
    }
    *o = r;
    return 0;
}

/* ======================================================================
   importer state
   ====================================================================== */

/* A named tensor during import: a known constant or an edge of the graph being built. */
typedef struct val {
    const char *name; /* ONNX tensor name (borrowed from the ModelProto) or NULL */
    int is_const;
    int owns;         /* c.data belongs to this value (else to a model weight) */
    ctensor c;        /* is_const */
    so_edge e;        /* edge; for constants the WEIGHT node once materialised (node -1 before) */
} val;

typedef struct imp {
    const char *path;
    char *dir;                  /* directory of the model, for external data */
    so_model *m;
    so_graph *g;
    int64_t opset;
    val **vals;                 /* every value, individually allocated (stable pointers) */
    int32_t n_vals, cap_vals;
    strmap names;               /* tensor name -> index in vals */
    strmap vinfo;               /* tensor name -> index in vis (value_info and graph outputs) */
    Onnx__ValueInfoProto **vis;
    size_t n_vis;
    const Onnx__NodeProto *cur; /* node being imported */
    char desc[600];             /* "node 'x' (Op)" for messages */
    int64_t fold_cap;           /* > 0 while try_fold runs: largest constant it may create */
    int fold_over;              /* set when try_fold wanted a constant above fold_cap */
} imp;

/* Keeps the current message on one line: control characters (from names in the file) become '?'. */
static void one_line_error(void)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", so_error());
    for (char *c = buf; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    so_errorf("%s", buf);
}

static so_status node_err(imp *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static so_status node_err(imp *im, const char *fmt, ...)
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
    if (name && name[0]) map_put(&im->names, name, im->n_vals);
    im->vals[im->n_vals++] = v;
    return v;
}

/* Binds `name` to constant c (takes ownership of c->data). */
static val *bind_const(imp *im, const char *name, ctensor *c)
{
    val *v = new_val(im, name);
    v->is_const = 1;
    v->owns = 1;
    v->c = *c;
    memset(c, 0, sizeof *c);
    return v;
}

static val *bind_edge(imp *im, const char *name, int32_t node, int32_t slot)
{
    val *v = new_val(im, name);
    v->e.node = node;
    v->e.slot = slot;
    return v;
}

static val *lookup(imp *im, const char *name)
{
    int32_t i = map_get(&im->names, name);
    return i < 0 ? NULL : im->vals[i];
}

static so_shape vshape(imp *im, const val *v)
{
    if (v->is_const) return v->c.shape;
    return im->g->nodes[v->e.node].out[v->e.slot];
}

/* The graph edge for a value: constants become WEIGHT nodes (once). */
static so_edge materialize(imp *im, val *v)
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
static int ct_new(imp *im, ctensor *c, int storage, int32_t otype, int rank, const int64_t *dims)
{
    memset(c, 0, sizeof *c);
    if (rank < 0 || rank > SO_MAX_RANK) return node_err(im, "constant of rank %d (at most %d supported)", rank, SO_MAX_RANK), B_ERR;
    c->shape.rank = rank;
    c->shape.dtype = storage;
    c->otype = otype;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0) return node_err(im, "constant with negative dimension %lld", (long long)dims[i]), B_ERR;
        if (so_i64_mul(n, dims[i], &n)) return node_err(im, "constant size overflows"), B_ERR;
        c->shape.dim[i] = dims[i];
    }
    if (im->fold_cap > 0 && n > im->fold_cap) {
        im->fold_over = 1; /* not an error: the caller keeps the node unfolded */
        return node_err(im, "constant of %lld elements is too large to fold", (long long)n), B_ERR;
    }
    size_t bytes;
    if (so_size_mul((size_t)n, storage == SO_I64 ? 8 : 4, &bytes) || bytes > so_max_alloc_bytes)
        return node_err(im, "constant of %lld elements exceeds the allocation limit (%zu bytes)", (long long)n, so_max_alloc_bytes), B_ERR;
    c->data = calloc(bytes ? bytes : 1, 1);
    if (!c->data) return node_err(im, "out of memory allocating %zu bytes", bytes), B_ERR;
    return B_OK;
}

/* ======================================================================
   TensorProto -> constant (raw_data, typed fields, external data)
   ====================================================================== */

static so_status read_external(imp *im, const Onnx__TensorProto *t, const char *what, size_t need, uint8_t *dst)
{
    const char *loc = NULL;
    long long off = 0, len = -1;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *kv = t->external_data[i];
        if (!kv->key || !kv->value) continue;
        char *end;
        if (strcmp(kv->key, "location") == 0) loc = kv->value;
        else if (strcmp(kv->key, "offset") == 0 || strcmp(kv->key, "length") == 0) {
            errno = 0;
            long long x = strtoll(kv->value, &end, 10);
            if (errno || end == kv->value || *end || x < 0)
                return so_errorf("%s: external data %s '%s' is not a valid byte count", what, kv->key, kv->value);
            if (kv->key[0] == 'o') off = x;
            else len = x;
        }
    }
    if (!loc || !loc[0]) return so_errorf("%s: external data without a location", what);
    if (loc[0] == '/' || loc[0] == '\\') return so_errorf("%s: external data path '%s' is absolute (must be relative to the model's directory)", what, loc);
    for (const char *p = loc; *p;) {
        size_t k = strcspn(p, "/\\");
        if (k == 2 && p[0] == '.' && p[1] == '.') return so_errorf("%s: external data path '%s' escapes the model's directory", what, loc);
        p += k;
        if (*p) p++;
    }
    if (len >= 0 && (unsigned long long)len != need)
        return so_errorf("%s: external data length %lld does not match the %zu bytes its shape needs", what, len, need);
    size_t plen = strlen(im->dir) + strlen(loc) + 2;
    char *full = so_xmalloc(plen);
    snprintf(full, plen, "%s/%s", im->dir, loc);
    so_status st = SO_OK;
    FILE *f = fopen(full, "rb");
    if (!f) {
        st = so_errorf("%s: external data file '%s' cannot be opened: %s", what, full, strerror(errno));
        goto done;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        st = so_errorf("%s: external data file '%s' is not a regular file", what, full);
        goto done;
    }
    if ((unsigned long long)off > (unsigned long long)sb.st_size || need > (unsigned long long)sb.st_size - (unsigned long long)off) {
        st = so_errorf("%s: external data file '%s' is too short (%lld bytes; needs %zu from offset %lld)", what, full, (long long)sb.st_size, need, off);
        goto done;
    }
    if (fseeko(f, (off_t)off, SEEK_SET) != 0 || (need && fread(dst, 1, need, f) != need)) {
        st = so_errorf("%s: cannot read external data file '%s': %s", what, full, strerror(errno ? errno : EIO));
        goto done;
    }
done:
    if (f) fclose(f);
    free(full);
    return st;
}

/* Decodes a TensorProto. `what` names it in messages ("initializer 'w'"). */
static so_status tensor_from_proto(imp *im, const Onnx__TensorProto *t, const char *what, ctensor *out)
{
    memset(out, 0, sizeof *out);
    int32_t type = t->has_data_type ? t->data_type : 0;
    int st = storage_of(type);
    uint8_t *tmp = NULL;
    if (!st) return so_errorf("%s: unsupported data type %s (%d)", what, onnx_type_name(type), (int)type);
    if (t->n_dims > SO_MAX_RANK) return so_errorf("%s has rank %zu (at most %d supported)", what, t->n_dims, SO_MAX_RANK);
    int64_t numel = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0) return so_errorf("%s has a negative dimension %lld", what, (long long)t->dims[i]);
        if (t->dims[i] > INT32_MAX) return so_errorf("%s has an absurd dimension %lld", what, (long long)t->dims[i]);
        if (so_i64_mul(numel, t->dims[i], &numel)) return so_errorf("%s: element count overflows", what);
    }
    size_t es = onnx_elem_size(type), sbytes = st == SO_I64 ? 8 : 4, bytes, need;
    if (so_size_mul((size_t)numel, SO_MAX(es, sbytes), &bytes) || bytes > so_max_alloc_bytes)
        return so_errorf("%s: %lld elements exceed the allocation limit (%zu bytes)", what, (long long)numel, so_max_alloc_bytes);
    need = (size_t)numel * es;
    out->shape.rank = (int32_t)t->n_dims;
    out->shape.dtype = st;
    for (size_t i = 0; i < t->n_dims; i++) out->shape.dim[i] = t->dims[i];
    out->otype = type;
    out->data = malloc((size_t)numel * sbytes + 1);
    if (!out->data) return so_errorf("%s: out of memory", what);

    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        tmp = malloc(need + 1);
        if (!tmp) { so_errorf("%s: out of memory", what); goto fail; }
        if (read_external(im, t, what, need, tmp) != SO_OK) goto fail;
        convert_raw(tmp, type, numel, out->data);
        free(tmp);
        return SO_OK;
    }
    if (t->has_raw_data) {
        if (t->raw_data.len != need) {
            char sb[128];
            so_errorf("%s: raw_data has %zu bytes but shape %s of %s needs %zu bytes", what, t->raw_data.len,
                      so_shape_str(&out->shape, sb, sizeof sb), onnx_type_name(type), need);
            goto fail;
        }
        convert_raw(t->raw_data.data, type, numel, out->data);
        return SO_OK;
    }
    size_t have;
    switch (type) {
    case T_FLOAT: have = t->n_float_data; break;
    case T_DOUBLE: have = t->n_double_data; break;
    case T_INT64: have = t->n_int64_data; break;
    case T_UINT32: case T_UINT64: have = t->n_uint64_data; break;
    default: have = t->n_int32_data; break;
    }
    if (have != (size_t)numel) {
        char sb[128];
        so_errorf("%s: %zu values stored but shape %s has %lld elements", what, have,
                  so_shape_str(&out->shape, sb, sizeof sb), (long long)numel);
        goto fail;
    }
    for (int64_t i = 0; i < numel; i++) {
        switch (type) {
        case T_FLOAT: ((float *)out->data)[i] = t->float_data[i]; break;
        case T_DOUBLE: ((float *)out->data)[i] = (float)t->double_data[i]; break;
        case T_FLOAT16: ((float *)out->data)[i] = half_to_float((uint16_t)t->int32_data[i]); break;
        case T_BFLOAT16: ((float *)out->data)[i] = bf16_to_float((uint16_t)t->int32_data[i]); break;
        case T_INT64: ((int64_t *)out->data)[i] = t->int64_data[i]; break;
        case T_UINT32: case T_UINT64: ((int64_t *)out->data)[i] = (int64_t)t->uint64_data[i]; break;
        default: ((int64_t *)out->data)[i] = wrap_int(t->int32_data[i], type); break;
        }
    }
    return SO_OK;
fail:
    free(tmp);
    free(out->data);
    out->data = NULL;
    return SO_ERR;
}

/* ======================================================================
   attributes and constant parameters
   ====================================================================== */

static const Onnx__AttributeProto *att(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0) return n->attribute[i];
    return NULL;
}

static int64_t att_i(const Onnx__NodeProto *n, const char *name, int64_t def)
{
    const Onnx__AttributeProto *a = att(n, name);
    return a ? a->i : def;
}

static float att_f(const Onnx__NodeProto *n, const char *name, float def)
{
    const Onnx__AttributeProto *a = att(n, name);
    if (!a) return def;
    if (a->has_type && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) return (float)a->i;
    return a->f;
}

/* String attribute copied into buf (NUL-terminated); NULL if absent. */
static const char *att_s(const Onnx__NodeProto *n, const char *name, char *buf, size_t len)
{
    const Onnx__AttributeProto *a = att(n, name);
    if (!a) return NULL;
    size_t k = a->s.len < len - 1 ? a->s.len : len - 1;
    if (k) memcpy(buf, a->s.data, k);
    buf[k] = 0;
    return buf;
}

/* Index of s in names[0..n), or -1. */
static int name_index(const char *s, const char *const *names, int n)
{
    for (int j = 0; j < n; j++)
        if (!strcmp(s, names[j])) return j;
    return -1;
}

/* INTS attribute: count (or -1 if absent) and pointer. */
static long att_ints(const Onnx__NodeProto *n, const char *name, const int64_t **p)
{
    const Onnx__AttributeProto *a = att(n, name);
    static const int64_t none[1] = {0};
    if (!a) return -1;
    *p = a->ints ? a->ints : none;
    return (long)a->n_ints;
}

/* Input k of node n as a value, NULL when absent or "". */
static val *inval(imp *im, const Onnx__NodeProto *n, size_t k)
{
    if (k >= n->n_input || !n->input[k][0]) return NULL;
    return lookup(im, n->input[k]);
}

/* Integer list from a constant input. B_OPAQUE when the input is absent or not constant. */
static int const_ints(imp *im, const val *v, int64_t *out, int max, int *count, const char *what)
{
    if (!v || !v->is_const) return B_OPAQUE; /* fuzz finding: ConstantOfShape without input */
    if (v->c.shape.rank > 1) return node_err(im, "%s must be a 1-D tensor", what), B_ERR;
    int64_t n = ct_numel(&v->c);
    if (n > max) return B_OPAQUE;
    for (int64_t i = 0; i < n; i++) out[i] = ct_geti(&v->c, i);
    *count = (int)n;
    return B_OK;
}

static int norm_axis(imp *im, int64_t a, int rank, int32_t *out)
{
    if (a < -rank || a >= rank) return node_err(im, "axis %lld out of range for rank %d", (long long)a, rank), B_ERR;
    *out = (int32_t)(a < 0 ? a + rank : a);
    return B_OK;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Normalises axes into [0, rank), rejects duplicates, sorts ascending. */
static int norm_axes(imp *im, int64_t *ax, int n, int rank)
{
    for (int i = 0; i < n; i++) {
        int32_t a;
        if (norm_axis(im, ax[i], rank, &a) != B_OK) return B_ERR;
        ax[i] = a;
    }
    qsort(ax, (size_t)n, sizeof *ax, cmp_i64);
    for (int i = 1; i < n; i++)
        if (ax[i] == ax[i - 1]) return node_err(im, "axis %lld repeated", (long long)ax[i]), B_ERR;
    return B_OK;
}

/* Axes of Squeeze/Unsqueeze/Reduce*: from input 1 when `from_input`, else from attribute "axes".
   *present = 0 when not given. */
static int get_axes(imp *im, const Onnx__NodeProto *n, int from_input, int64_t *axes, int *count, int *present)
{
    *count = 0;
    *present = 0;
    if (from_input) {
        val *v = inval(im, n, 1);
        if (!v) return B_OK;
        *present = 1;
        return const_ints(im, v, axes, SO_MAX_RANK, count, "axes");
    }
    const int64_t *p;
    long k = att_ints(n, "axes", &p);
    if (k < 0) return B_OK;
    if (k > SO_MAX_RANK) return node_err(im, "too many axes (%ld)", k), B_ERR;
    *present = 1;
    memcpy(axes, p, (size_t)k * sizeof *p);
    *count = (int)k;
    return B_OK;
}

/* Reshape target with 0 (copy, unless allowzero) and -1 resolved. */
static int reshape_target(imp *im, const Onnx__NodeProto *n, const so_shape *in, const val *sv, so_shape *out)
{
    int64_t t[SO_MAX_RANK];
    int k = 0, r;
    if (!sv) return node_err(im, "missing shape input"), B_ERR;
    if ((r = const_ints(im, sv, t, SO_MAX_RANK, &k, "shape")) != B_OK) return r;
    int allowzero = (int)att_i(n, "allowzero", 0);
    int neg = -1;
    int64_t known = 1;
    so_shape o;
    memset(&o, 0, sizeof o);
    o.rank = k;
    o.dtype = in->dtype;
    for (int i = 0; i < k; i++) {
        int64_t d = t[i];
        if (d == 0 && !allowzero) {
            if (in->rank < 0) return B_OPAQUE;
            if (i >= in->rank) return node_err(im, "shape entry %d is 0 but the input has rank %d", i, in->rank), B_ERR;
            d = in->dim[i];
        } else if (d == -1) {
            if (neg >= 0) return node_err(im, "shape has more than one -1"), B_ERR;
            neg = i;
            continue;
        } else if (d < 0) {
            return node_err(im, "shape entry %lld is invalid", (long long)d), B_ERR;
        }
        o.dim[i] = d;
        if (so_i64_mul(known, d, &known)) return node_err(im, "shape size overflows"), B_ERR;
    }
    if (in->rank < 0) return neg >= 0 ? B_OPAQUE : (*out = o, B_OK);
    int64_t total = so_shape_numel(in);
    if (neg >= 0) {
        if (known == 0 || total % known) {
            char a[128];
            return node_err(im, "cannot reshape %s: -1 does not resolve", so_shape_str(in, a, sizeof a)), B_ERR;
        }
        o.dim[neg] = total / known;
        known = total;
    }
    if (known != total) {
        char a[128], b[128];
        return node_err(im, "cannot reshape %s into %s", so_shape_str(in, a, sizeof a), so_shape_str(&o, b, sizeof b)), B_ERR;
    }
    *out = o;
    return B_OK;
}

/* Slice parameters resolved and clamped per the ONNX spec into (axis,start,end,step) quads. */
static int slice_quads(imp *im, const Onnx__NodeProto *n, const so_shape *in, int64_t *q, int *nq, so_shape *outs)
{
    int64_t st[SO_MAX_RANK], en[SO_MAX_RANK], ax[SO_MAX_RANK], sp[SO_MAX_RANK];
    int ns = 0, ne = 0, na = -1, np = -1, r;
    if (in->rank < 0) return B_OPAQUE;
    if (im->opset < 10) {
        const int64_t *p;
        long k;
        if ((k = att_ints(n, "starts", &p)) < 0 || k > SO_MAX_RANK) return B_OPAQUE;
        memcpy(st, p, (size_t)k * 8), ns = (int)k;
        if ((k = att_ints(n, "ends", &p)) < 0 || k > SO_MAX_RANK) return B_OPAQUE;
        memcpy(en, p, (size_t)k * 8), ne = (int)k;
        if ((k = att_ints(n, "axes", &p)) >= 0) {
            if (k > SO_MAX_RANK) return B_OPAQUE;
            memcpy(ax, p, (size_t)k * 8), na = (int)k;
        }
    } else {
        val *v;
        if (!(v = inval(im, n, 1)) || (r = const_ints(im, v, st, SO_MAX_RANK, &ns, "starts")) != B_OK) return v ? r : B_OPAQUE;
        if (!(v = inval(im, n, 2)) || (r = const_ints(im, v, en, SO_MAX_RANK, &ne, "ends")) != B_OK) return v ? r : B_OPAQUE;
        if ((v = inval(im, n, 3)) && (r = const_ints(im, v, ax, SO_MAX_RANK, &na, "axes")) != B_OK) return r;
        if ((v = inval(im, n, 4)) && (r = const_ints(im, v, sp, SO_MAX_RANK, &np, "steps")) != B_OK) return r;
    }
    if (ns != ne || (na >= 0 && na != ns) || (np >= 0 && np != ns))
        return node_err(im, "starts, ends, axes and steps differ in length"), B_ERR;
    if (ns * 4 > SO_MAX_INTS) return B_OPAQUE;
    so_shape o = *in;
    int seen[SO_MAX_RANK] = {0};
    for (int i = 0; i < ns; i++) {
        int32_t a;
        if (norm_axis(im, na >= 0 ? ax[i] : i, in->rank, &a) != B_OK) return B_ERR;
        if (seen[a]++) return node_err(im, "axis %d sliced twice", a), B_ERR;
        int64_t step = np >= 0 ? sp[i] : 1, dim = in->dim[a], s = st[i], e = en[i];
        if (step == 0) return node_err(im, "slice step is 0"), B_ERR;
        /* |step| > dim selects at most one element either way; clamping keeps the length
           arithmetic below from overflowing (fuzz finding: step -INT64_MAX) */
        int64_t lim = dim > 1 ? dim : 1;
        step = step > lim ? lim : step < -lim ? -lim : step;
        if (s < 0) s = s < INT64_MIN + dim ? INT64_MIN : s + dim;
        if (e < 0) e = e < INT64_MIN + dim ? INT64_MIN : e + dim;
        int64_t len;
        if (step > 0) {
            s = s < 0 ? 0 : s > dim ? dim : s;
            e = e < 0 ? 0 : e > dim ? dim : e;
            len = e > s ? (e - s + step - 1) / step : 0;
        } else {
            s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
            len = s > e ? (s - e + (-step) - 1) / (-step) : 0;
        }
        q[4 * i] = a;
        q[4 * i + 1] = s;
        q[4 * i + 2] = e;
        q[4 * i + 3] = step;
        o.dim[a] = len;
    }
    *nq = ns;
    if (outs) *outs = o;
    return B_OK;
}

/* Split sizes and axis. */
static int split_sizes(imp *im, const Onnx__NodeProto *n, const so_shape *in, int32_t *axis, int64_t *sz, int *count)
{
    int r, k = -1;
    if (in->rank < 0) return B_OPAQUE;
    if (norm_axis(im, att_i(n, "axis", 0), in->rank, axis) != B_OK) return B_ERR;
    int64_t dim = in->dim[*axis];
    if (im->opset >= 13) {
        val *v = inval(im, n, 1);
        if (v && (r = const_ints(im, v, sz, SO_MAX_INTS, &k, "split")) != B_OK) return r;
    } else {
        const int64_t *p;
        long c = att_ints(n, "split", &p);
        if (c > SO_MAX_INTS) return B_OPAQUE;
        if (c >= 0) memcpy(sz, p, (size_t)c * 8), k = (int)c;
    }
    if (k < 0) {
        const Onnx__AttributeProto *no = att(n, "num_outputs");
        int64_t parts = no ? no->i : (int64_t)n->n_output;
        if (parts <= 0) return node_err(im, "cannot split into %lld parts", (long long)parts), B_ERR;
        if (parts > SO_MAX_INTS) return B_OPAQUE;
        if (no) {
            int64_t chunk = (dim + parts - 1) / parts;
            if (chunk * (parts - 1) > dim) return node_err(im, "cannot split dimension %lld into %lld parts", (long long)dim, (long long)parts), B_ERR;
            for (int64_t i = 0; i < parts; i++) sz[i] = i < parts - 1 ? chunk : dim - chunk * (parts - 1);
        } else {
            if (dim % parts) return node_err(im, "cannot split dimension %lld into %lld equal parts", (long long)dim, (long long)parts), B_ERR;
            for (int64_t i = 0; i < parts; i++) sz[i] = dim / parts;
        }
        k = (int)parts;
    }
    int64_t sum = 0;
    for (int i = 0; i < k; i++) {
        if (sz[i] < 0) return node_err(im, "negative split size %lld", (long long)sz[i]), B_ERR;
        sum += sz[i];
    }
    if (sum != dim) return node_err(im, "split sizes add up to %lld, dimension is %lld", (long long)sum, (long long)dim), B_ERR;
    if ((size_t)k != n->n_output) return node_err(im, "%d split sizes for %zu outputs", k, n->n_output), B_ERR;
    *count = k;
    return B_OK;
}

/* Pad parameters: full-rank pads (begins then ends), value and mode. */
static int pad_params(imp *im, const Onnx__NodeProto *n, const so_shape *in, int64_t *pads, float *value, int32_t *mode)
{
    char buf[32];
    const char *ms = att_s(n, "mode", buf, sizeof buf);
    if (!ms || strcmp(ms, "constant") == 0) *mode = 0;
    else if (strcmp(ms, "reflect") == 0) *mode = 1;
    else if (strcmp(ms, "edge") == 0) *mode = 2;
    else return B_OPAQUE;
    if (in->rank < 0) return B_OPAQUE;
    int rank = in->rank, k = 0, r;
    int64_t p[2 * SO_MAX_RANK], ax[SO_MAX_RANK];
    int na = -1;
    *value = 0;
    if (im->opset < 11) {
        const int64_t *pp;
        long c = att_ints(n, "pads", &pp);
        if (c < 0) return node_err(im, "missing pads"), B_ERR;
        if (c > 2 * SO_MAX_RANK) return node_err(im, "%ld pads for rank %d", c, rank), B_ERR;
        memcpy(p, pp, (size_t)c * 8);
        k = (int)c;
        *value = att_f(n, "value", 0);
    } else {
        val *v = inval(im, n, 1);
        if (!v) return node_err(im, "missing pads input"), B_ERR;
        if ((r = const_ints(im, v, p, 2 * SO_MAX_RANK, &k, "pads")) != B_OK) return r;
        if ((v = inval(im, n, 2))) {
            if (!v->is_const) return B_OPAQUE;
            if (ct_numel(&v->c) != 1) return node_err(im, "constant_value must be a scalar"), B_ERR;
            *value = (float)ct_getf(&v->c, 0);
        }
        if ((v = inval(im, n, 3)) && (r = const_ints(im, v, ax, SO_MAX_RANK, &na, "axes")) != B_OK) return r;
    }
    int nax = na >= 0 ? na : rank;
    if (k != 2 * nax) return node_err(im, "%d pads for %d axes", k, nax), B_ERR;
    for (int i = 0; i < 2 * rank; i++) pads[i] = 0;
    for (int i = 0; i < nax; i++) {
        int32_t a = i;
        if (na >= 0 && norm_axis(im, ax[i], rank, &a) != B_OK) return B_ERR;
        pads[a] = p[i];
        pads[rank + a] = p[nax + i];
    }
    for (int i = 0; i < 2 * rank; i++)
        if (pads[i] < 0) return B_OPAQUE; /* cropping: keep verbatim */
    return B_OK;
}

/* ======================================================================
   constant evaluator for the helper ops exporters emit
   ====================================================================== */

static int fold_unary(imp *im, const char *t, const ctensor *a, ctensor *o)
{
    int isnot = strcmp(t, "Not") == 0;
    int st = isnot ? SO_I64 : a->shape.dtype;
    if (ct_new(im, o, st, isnot ? T_BOOL : a->otype, a->shape.rank, a->shape.dim) != B_OK) return B_ERR;
    int64_t n = ct_numel(a);
    for (int64_t i = 0; i < n; i++) {
        if (ct_isint(a) && st == SO_I64) {
            int64_t x = ((int64_t *)a->data)[i], y;
            if (isnot) y = !x;
            else if (!strcmp(t, "Neg")) y = (int64_t)(0 - (uint64_t)x);
            else if (!strcmp(t, "Abs")) y = x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
            else if (!strcmp(t, "Relu")) y = x < 0 ? 0 : x;
            else if (!strcmp(t, "Sign")) y = (x > 0) - (x < 0);
            else if (!strcmp(t, "Floor") || !strcmp(t, "Ceil") || !strcmp(t, "Round")) y = x;
            else return free(o->data), o->data = NULL, B_OPAQUE;
            ((int64_t *)o->data)[i] = y;
            continue;
        }
        double x = ct_getf(a, i), y;
        if (isnot) { ((int64_t *)o->data)[i] = x == 0; continue; }
        if (!strcmp(t, "Neg")) y = -x;
        else if (!strcmp(t, "Abs")) y = fabs(x);
        else if (!strcmp(t, "Sqrt")) y = sqrt(x);
        else if (!strcmp(t, "Reciprocal")) y = 1.0 / x;
        else if (!strcmp(t, "Exp")) y = exp(x);
        else if (!strcmp(t, "Log")) y = log(x);
        else if (!strcmp(t, "Floor")) y = floor(x);
        else if (!strcmp(t, "Ceil")) y = ceil(x);
        else if (!strcmp(t, "Round")) y = nearbyint(x);
        else if (!strcmp(t, "Sign")) y = (x > 0) - (x < 0);
        else if (!strcmp(t, "Relu")) y = x < 0 ? 0 : x;
        else if (!strcmp(t, "Sigmoid")) y = 1.0 / (1.0 + exp(-x));
        else if (!strcmp(t, "Tanh")) y = tanh(x);
        else if (!strcmp(t, "Erf")) y = erf(x);
        else if (!strcmp(t, "Sin")) y = sin(x);
        else if (!strcmp(t, "Cos")) y = cos(x);
        else return free(o->data), o->data = NULL, B_OPAQUE;
        ((float *)o->data)[i] = (float)y;
    }
    return B_OK;
}

static int is_cmp(const char *t)
{
    return !strcmp(t, "Equal") || !strcmp(t, "Less") || !strcmp(t, "Greater") || !strcmp(t, "LessOrEqual") || !strcmp(t, "GreaterOrEqual");
}

static int is_logic(const char *t) { return !strcmp(t, "And") || !strcmp(t, "Or") || !strcmp(t, "Xor"); }

static int is_arith(const char *t)
{
    return !strcmp(t, "Add") || !strcmp(t, "Sub") || !strcmp(t, "Mul") || !strcmp(t, "Div") || !strcmp(t, "Pow") ||
           !strcmp(t, "Mod") || !strcmp(t, "Max") || !strcmp(t, "Min") || !strcmp(t, "Sum") || !strcmp(t, "Mean");
}

static int fold_binary(imp *im, const Onnx__NodeProto *n, const ctensor *a, const ctensor *b, ctensor *o)
{
    const char *t = n->op_type;
    so_shape os;
    if (bshape(&a->shape, &b->shape, &os) != 0) {
        char x[128], y[128];
        return node_err(im, "shapes %s and %s do not broadcast", so_shape_str(&a->shape, x, sizeof x), so_shape_str(&b->shape, y, sizeof y)), B_ERR;
    }
    int cmp = is_cmp(t), logic = is_logic(t);
    int ints = ct_isint(a) && ct_isint(b);
    if (!cmp && !logic && a->shape.dtype != b->shape.dtype && strcmp(t, "Pow") != 0) return B_OPAQUE;
    int st = (cmp || logic) ? SO_I64 : a->shape.dtype;
    if (ct_new(im, o, st, (cmp || logic) ? T_BOOL : a->otype, os.rank, os.dim) != B_OK) return B_ERR;
    int fmod_attr = (int)att_i(n, "fmod", 0);
    int64_t cnt = ct_numel(o);
    for (int64_t i = 0; i < cnt; i++) {
        int64_t ia = bcast_off(&os, &a->shape, i), ib = bcast_off(&os, &b->shape, i);
        if (ints && !logic) {
            int64_t x = ((int64_t *)a->data)[ia], y = ((int64_t *)b->data)[ib], z;
            if (cmp) {
                if (!strcmp(t, "Equal")) z = x == y;
                else if (!strcmp(t, "Less")) z = x < y;
                else if (!strcmp(t, "Greater")) z = x > y;
                else if (!strcmp(t, "LessOrEqual")) z = x <= y;
                else z = x >= y;
            } else if (!strcmp(t, "Add") || !strcmp(t, "Sum")) z = (int64_t)((uint64_t)x + (uint64_t)y);
            else if (!strcmp(t, "Sub")) z = (int64_t)((uint64_t)x - (uint64_t)y);
            else if (!strcmp(t, "Mul")) z = (int64_t)((uint64_t)x * (uint64_t)y);
            else if (!strcmp(t, "Div") || !strcmp(t, "Mod")) {
                if (y == 0) return free(o->data), o->data = NULL, node_err(im, "integer division by zero"), B_ERR;
                if (x == INT64_MIN && y == -1) z = t[0] == 'D' ? INT64_MIN : 0;
                else if (t[0] == 'D') z = x / y;
                else {
                    z = x % y;
                    if (!fmod_attr && z != 0 && ((z < 0) != (y < 0))) z += y;
                }
            } else if (!strcmp(t, "Max")) z = x > y ? x : y;
            else if (!strcmp(t, "Min")) z = x < y ? x : y;
            else if (!strcmp(t, "Mean")) z = (int64_t)(((__int128)x + y) / 2);
            else z = f2i(pow((double)x, (double)y));
            ((int64_t *)o->data)[i] = z;
            continue;
        }
        double x = ct_getf(a, ia), y = ct_getf(b, ib), z;
        if (cmp) {
            if (!strcmp(t, "Equal")) z = x == y;
            else if (!strcmp(t, "Less")) z = x < y;
            else if (!strcmp(t, "Greater")) z = x > y;
            else if (!strcmp(t, "LessOrEqual")) z = x <= y;
            else z = x >= y;
            ((int64_t *)o->data)[i] = (int64_t)z;
            continue;
        }
        if (logic) {
            int p = x != 0, q = y != 0;
            ((int64_t *)o->data)[i] = !strcmp(t, "And") ? (p && q) : !strcmp(t, "Or") ? (p || q) : (p != q);
            continue;
        }
        if (!strcmp(t, "Add") || !strcmp(t, "Sum")) z = x + y;
        else if (!strcmp(t, "Sub")) z = x - y;
        else if (!strcmp(t, "Mul")) z = x * y;
        else if (!strcmp(t, "Div")) z = x / y;
        else if (!strcmp(t, "Pow")) z = pow(x, y);
        else if (!strcmp(t, "Mod")) z = fmod(x, y);
        else if (!strcmp(t, "Max")) z = x > y ? x : y;
        else if (!strcmp(t, "Min")) z = x < y ? x : y;
        else z = (x + y) / 2;
        if (st == SO_I64) ((int64_t *)o->data)[i] = f2i(z);
        else ((float *)o->data)[i] = (float)z;
    }
    return B_OK;
}

/* Copies element i of a into element j of o (same storage). */
static void ct_copy_elem(const ctensor *a, int64_t i, ctensor *o, int64_t j)
{
    if (ct_isint(a)) ((int64_t *)o->data)[j] = ((const int64_t *)a->data)[i];
    else ((float *)o->data)[j] = ((const float *)a->data)[i];
}

static int fold_where(imp *im, const ctensor *c, const ctensor *x, const ctensor *y, ctensor *o)
{
    so_shape s1, os;
    if (x->shape.dtype != y->shape.dtype) return B_OPAQUE;
    if (bshape(&x->shape, &y->shape, &s1) || bshape(&c->shape, &s1, &os)) return node_err(im, "inputs do not broadcast"), B_ERR;
    if (ct_new(im, o, x->shape.dtype, x->otype, os.rank, os.dim) != B_OK) return B_ERR;
    for (int64_t i = 0, n = ct_numel(o); i < n; i++) {
        int pick = ct_getf(c, bcast_off(&os, &c->shape, i)) != 0;
        const ctensor *s = pick ? x : y;
        ct_copy_elem(s, bcast_off(&os, &s->shape, i), o, i);
    }
    return B_OK;
}

static int fold_cast(imp *im, const Onnx__NodeProto *n, const ctensor *a, ctensor *o)
{
    int64_t to64 = att_i(n, "to", 0);
    int32_t to = to64 > 0 && to64 <= INT32_MAX ? (int32_t)to64 : 0; /* not its low 32 bits */
    int st = storage_of(to);
    if (!st) return B_OPAQUE;
    if (ct_new(im, o, st, to, a->shape.rank, a->shape.dim) != B_OK) return B_ERR;
    for (int64_t i = 0, c = ct_numel(a); i < c; i++) {
        if (st == SO_F32) ((float *)o->data)[i] = (float)ct_getf(a, i);
        else if (to == T_BOOL) ((int64_t *)o->data)[i] = ct_getf(a, i) != 0;
        else ((int64_t *)o->data)[i] = wrap_int(ct_geti(a, i), to);
    }
    return B_OK;
}

/* Same data, new shape. */
static int fold_view(imp *im, const ctensor *a, const so_shape *s, ctensor *o)
{
    if (ct_new(im, o, a->shape.dtype, a->otype, s->rank, s->dim) != B_OK) return B_ERR;
    if (ct_numel(o) != ct_numel(a)) return free(o->data), o->data = NULL, node_err(im, "reshape changes the element count"), B_ERR;
    memcpy(o->data, a->data, (size_t)ct_numel(a) * (ct_isint(a) ? 8 : 4));
    return B_OK;
}

static int fold_transpose(imp *im, const ctensor *a, const int64_t *perm, ctensor *o)
{
    int64_t d[SO_MAX_RANK], ist[SO_MAX_RANK];
    int r = a->shape.rank;
    for (int i = 0; i < r; i++) d[i] = a->shape.dim[perm[i]];
    if (ct_new(im, o, a->shape.dtype, a->otype, r, d) != B_OK) return B_ERR;
    int64_t acc = 1;
    for (int i = r - 1; i >= 0; i--) ist[i] = acc, acc *= a->shape.dim[i];
    for (int64_t j = 0, n = ct_numel(o); j < n; j++) {
        int64_t rem = j, off = 0;
        for (int k = r - 1; k >= 0; k--) {
            off += (rem % d[k]) * ist[perm[k]];
            rem /= d[k];
        }
        ct_copy_elem(a, off, o, j);
    }
    return B_OK;
}

/* Generic strided gather: out coordinate -> input offset via per-axis maps. */
static int fold_slice(imp *im, const ctensor *a, const int64_t *q, int nq, const so_shape *os, ctensor *o)
{
    int r = a->shape.rank;
    int64_t start[SO_MAX_RANK] = {0}, step[SO_MAX_RANK], ist[SO_MAX_RANK];
    for (int i = 0; i < r; i++) step[i] = 1;
    for (int i = 0; i < nq; i++) start[q[4 * i]] = q[4 * i + 1], step[q[4 * i]] = q[4 * i + 3];
    if (ct_new(im, o, a->shape.dtype, a->otype, r, os->dim) != B_OK) return B_ERR;
    int64_t acc = 1;
    for (int i = r - 1; i >= 0; i--) ist[i] = acc, acc *= a->shape.dim[i];
    for (int64_t j = 0, n = ct_numel(o); j < n; j++) {
        int64_t rem = j, off = 0;
        for (int k = r - 1; k >= 0; k--) {
            off += (start[k] + (rem % os->dim[k]) * step[k]) * ist[k];
            rem /= os->dim[k];
        }
        ct_copy_elem(a, off, o, j);
    }
    return B_OK;
}

static int fold_gather(imp *im, const ctensor *a, const ctensor *idx, int32_t axis, ctensor *o)
{
    int64_t d[SO_MAX_RANK];
    int r = 0;
    if (a->shape.rank - 1 + idx->shape.rank > SO_MAX_RANK) return B_OPAQUE;
    for (int i = 0; i < axis; i++) d[r++] = a->shape.dim[i];
    for (int i = 0; i < idx->shape.rank; i++) d[r++] = idx->shape.dim[i];
    for (int i = axis + 1; i < a->shape.rank; i++) d[r++] = a->shape.dim[i];
    if (ct_new(im, o, a->shape.dtype, a->otype, r, d) != B_OK) return B_ERR;
    int64_t outer = 1, inner = 1, dim = a->shape.dim[axis], ni = ct_numel(idx);
    for (int i = 0; i < axis; i++) outer *= a->shape.dim[i];
    for (int i = axis + 1; i < a->shape.rank; i++) inner *= a->shape.dim[i];
    int64_t j = 0;
    for (int64_t ou = 0; ou < outer; ou++)
        for (int64_t k = 0; k < ni; k++) {
            int64_t ix = ct_geti(idx, k);
            if (ix < 0) ix += dim;
            if (ix < 0 || ix >= dim) {
                free(o->data);
                o->data = NULL;
                return node_err(im, "index %lld out of range for dimension %lld", (long long)ct_geti(idx, k), (long long)dim), B_ERR;
            }
            for (int64_t in = 0; in < inner; in++) ct_copy_elem(a, (ou * dim + ix) * inner + in, o, j++);
        }
    return B_OK;
}

static int fold_concat(imp *im, val **ins, size_t n_in, int32_t axis, ctensor *o)
{
    const ctensor *a = &ins[0]->c;
    int64_t d[SO_MAX_RANK];
    int r = a->shape.rank;
    for (int i = 0; i < r; i++) d[i] = a->shape.dim[i];
    d[axis] = 0;
    for (size_t k = 0; k < n_in; k++) {
        const ctensor *b = &ins[k]->c;
        if (b->shape.rank != r || b->shape.dtype != a->shape.dtype) return B_OPAQUE;
        for (int i = 0; i < r; i++)
            if (i != axis && b->shape.dim[i] != a->shape.dim[i]) return node_err(im, "inputs differ in dimension %d", i), B_ERR;
        d[axis] += b->shape.dim[axis];
    }
    if (ct_new(im, o, a->shape.dtype, a->otype, r, d) != B_OK) return B_ERR;
    int64_t outer = 1, inner = 1, j = 0;
    for (int i = 0; i < axis; i++) outer *= d[i];
    for (int i = axis + 1; i < r; i++) inner *= d[i];
    for (int64_t ou = 0; ou < outer; ou++)
        for (size_t k = 0; k < n_in; k++) {
            const ctensor *b = &ins[k]->c;
            int64_t blk = b->shape.dim[axis] * inner;
            for (int64_t e = 0; e < blk; e++) ct_copy_elem(b, ou * blk + e, o, j++);
        }
    return B_OK;
}

static int fold_expand(imp *im, const ctensor *a, const so_shape *os, ctensor *o)
{
    if (ct_new(im, o, a->shape.dtype, a->otype, os->rank, os->dim) != B_OK) return B_ERR;
    for (int64_t j = 0, n = ct_numel(o); j < n; j++) ct_copy_elem(a, bcast_off(os, &a->shape, j), o, j);
    return B_OK;
}

static int fold_tile(imp *im, const ctensor *a, const int64_t *rep, ctensor *o)
{
    int r = a->shape.rank;
    int64_t d[SO_MAX_RANK], ist[SO_MAX_RANK];
    for (int i = 0; i < r; i++) {
        if (rep[i] < 0) return node_err(im, "negative repeat"), B_ERR;
        if (so_i64_mul(a->shape.dim[i], rep[i], &d[i])) return node_err(im, "tile size overflows"), B_ERR;
    }
    if (ct_new(im, o, a->shape.dtype, a->otype, r, d) != B_OK) return B_ERR;
    int64_t acc = 1;
    for (int i = r - 1; i >= 0; i--) ist[i] = acc, acc *= a->shape.dim[i];
    for (int64_t j = 0, n = ct_numel(o); j < n; j++) {
        int64_t rem = j, off = 0;
        for (int k = r - 1; k >= 0; k--) {
            off += ((rem % d[k]) % a->shape.dim[k]) * ist[k];
            rem /= d[k];
        }
        ct_copy_elem(a, off, o, j);
    }
    return B_OK;
}

static int fold_reduce(imp *im, const char *t, const ctensor *a, const int64_t *axes, int na, int keep, ctensor *o)
{
    int r = a->shape.rank, red[SO_MAX_RANK] = {0};
    int64_t d[SO_MAX_RANK], od[SO_MAX_RANK];
    int orank = 0;
    for (int i = 0; i < na; i++) red[axes[i]] = 1;
    for (int i = 0; i < r; i++) {
        d[i] = red[i] ? 1 : a->shape.dim[i];
        if (!red[i] || keep) od[orank++] = d[i];
    }
    if (ct_new(im, o, a->shape.dtype, a->otype, orank, od) != B_OK) return B_ERR;
    int64_t n_out = ct_numel(o), n_in = ct_numel(a);
    double *acc = so_xcalloc((size_t)(n_out ? n_out : 1), sizeof *acc);
    int64_t *cnt = so_xcalloc((size_t)(n_out ? n_out : 1), sizeof *cnt);
    for (int64_t i = 0; i < n_in; i++) {
        int64_t rem = i, off = 0, mul = 1;
        for (int k = r - 1; k >= 0; k--) {
            int64_t c = rem % a->shape.dim[k];
            rem /= a->shape.dim[k];
            if (!red[k]) off += c * mul;
            mul *= d[k];
        }
        double x = ct_getf(a, i);
        if (cnt[off] == 0) acc[off] = x;
        else if (!strcmp(t, "ReduceSum") || !strcmp(t, "ReduceMean")) acc[off] += x;
        else if (!strcmp(t, "ReduceProd")) acc[off] *= x;
        else if (!strcmp(t, "ReduceMax")) acc[off] = x > acc[off] ? x : acc[off];
        else acc[off] = x < acc[off] ? x : acc[off];
        cnt[off]++;
    }
    for (int64_t j = 0; j < n_out; j++) {
        double v = acc[j];
        if (cnt[j] == 0) v = !strcmp(t, "ReduceProd") ? 1 : 0;
        if (!strcmp(t, "ReduceMean") && cnt[j]) v /= (double)cnt[j];
        if (ct_isint(o)) ((int64_t *)o->data)[j] = f2i(v);
        else ((float *)o->data)[j] = (float)v;
    }
    free(acc);
    free(cnt);
    return B_OK;
}

/* Tries to evaluate node n at import time. B_OPAQUE means "not folded" (not an error). */
static int try_fold(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in)
{
    const char *t = n->op_type;
    ctensor o;
    memset(&o, 0, sizeof o);
    int r = B_OPAQUE;
    if (!strcmp(t, "Shape") || !strcmp(t, "Size")) {
        if (!ins[0]) return B_OPAQUE;
        so_shape s = vshape(im, ins[0]);
        if (s.rank < 0) return B_OPAQUE;
        if (t[1] == 'i') {
            if (ct_new(im, &o, SO_I64, T_INT64, 0, NULL) != B_OK) return B_ERR;
            ((int64_t *)o.data)[0] = so_shape_numel(&s);
        } else {
            int64_t st = att_i(n, "start", 0), en = att_i(n, "end", s.rank);
            if (st < 0) st += s.rank;
            if (en < 0) en += s.rank;
            st = st < 0 ? 0 : st > s.rank ? s.rank : st;
            en = en < 0 ? 0 : en > s.rank ? s.rank : en;
            int64_t len = en > st ? en - st : 0;
            if (ct_new(im, &o, SO_I64, T_INT64, 1, &len) != B_OK) return B_ERR;
            for (int64_t i = 0; i < len; i++) ((int64_t *)o.data)[i] = s.dim[st + i];
        }
        bind_const(im, n->output[0], &o);
        return B_OK;
    }
    for (size_t k = 0; k < n_in; k++)
        if (ins[k] && !ins[k]->is_const) return B_OPAQUE;
    if (n_in == 0 || !ins[0]) {
        if (strcmp(t, "ConstantOfShape") != 0 || n_in == 0) return B_OPAQUE;
    }
    const ctensor *a = ins[0] ? &ins[0]->c : NULL;
    if (!strcmp(t, "Cast")) {
        r = fold_cast(im, n, a, &o);
    } else if ((is_arith(t) || is_cmp(t) || is_logic(t)) && n_in == 2 && ins[1]) {
        r = fold_binary(im, n, a, &ins[1]->c, &o);
    } else if ((!strcmp(t, "Max") || !strcmp(t, "Min") || !strcmp(t, "Sum") || !strcmp(t, "Mean")) && n_in == 1) {
        r = fold_view(im, a, &a->shape, &o);
    } else if (!strcmp(t, "Where") && n_in == 3 && ins[1] && ins[2]) {
        r = fold_where(im, a, &ins[1]->c, &ins[2]->c, &o);
    } else if (n_in == 1 && (!strcmp(t, "Neg") || !strcmp(t, "Abs") || !strcmp(t, "Sqrt") || !strcmp(t, "Reciprocal") ||
                             !strcmp(t, "Exp") || !strcmp(t, "Log") || !strcmp(t, "Floor") || !strcmp(t, "Ceil") ||
                             !strcmp(t, "Round") || !strcmp(t, "Sign") || !strcmp(t, "Not") || !strcmp(t, "Relu") ||
                             !strcmp(t, "Sigmoid") || !strcmp(t, "Tanh") || !strcmp(t, "Erf") || !strcmp(t, "Sin") ||
                             !strcmp(t, "Cos"))) {
        r = fold_unary(im, t, a, &o);
    } else if (!strcmp(t, "Reshape")) {
        so_shape s;
        if ((r = reshape_target(im, n, &a->shape, inval(im, n, 1), &s)) == B_OK) r = fold_view(im, a, &s, &o);
    } else if (!strcmp(t, "Flatten")) {
        int32_t ax;
        int64_t d[2] = {1, 1};
        int64_t axv = att_i(n, "axis", 1);
        if (axv < 0) axv += a->shape.rank;
        if (axv < 0 || axv > a->shape.rank) return node_err(im, "axis out of range"), B_ERR;
        ax = (int32_t)axv;
        for (int i = 0; i < a->shape.rank; i++) d[i < ax ? 0 : 1] *= a->shape.dim[i];
        so_shape s = so_shape_make(2, d);
        r = fold_view(im, a, &s, &o);
    } else if (!strcmp(t, "Squeeze") || !strcmp(t, "Unsqueeze")) {
        int64_t ax[SO_MAX_RANK];
        int na, present, un = t[0] == 'U';
        if ((r = get_axes(im, n, im->opset >= 13, ax, &na, &present)) != B_OK) return r;
        so_shape s = a->shape;
        if (un) {
            int orank = a->shape.rank + na, k = 0;
            if (!present) return node_err(im, "missing axes"), B_ERR;
            if (orank > SO_MAX_RANK) return B_OPAQUE;
            if (norm_axes(im, ax, na, orank) != B_OK) return B_ERR;
            s.rank = orank;
            for (int i = 0, j = 0; i < orank; i++) s.dim[i] = (k < na && ax[k] == i) ? (k++, 1) : a->shape.dim[j++];
        } else {
            if (!present) {
                na = 0;
                for (int i = 0; i < a->shape.rank; i++)
                    if (a->shape.dim[i] == 1) ax[na++] = i;
            } else if (norm_axes(im, ax, na, a->shape.rank) != B_OK) return B_ERR;
            s.rank = 0;
            for (int i = 0, k = 0; i < a->shape.rank; i++) {
                if (k < na && ax[k] == i) {
                    if (a->shape.dim[i] != 1) return node_err(im, "cannot squeeze axis %d of size %lld", i, (long long)a->shape.dim[i]), B_ERR;
                    k++;
                    continue;
                }
                s.dim[s.rank++] = a->shape.dim[i];
            }
        }
        r = fold_view(im, a, &s, &o);
    } else if (!strcmp(t, "Concat")) {
        int32_t ax;
        for (size_t k = 0; k < n_in; k++)
            if (!ins[k]) return B_OPAQUE;
        if (norm_axis(im, att_i(n, "axis", 0), a->shape.rank, &ax) != B_OK) return B_ERR;
        r = fold_concat(im, ins, n_in, ax, &o);
    } else if (!strcmp(t, "Gather") && n_in == 2 && ins[1]) {
        int32_t ax;
        if (norm_axis(im, att_i(n, "axis", 0), a->shape.rank, &ax) != B_OK) return B_ERR;
        r = fold_gather(im, a, &ins[1]->c, ax, &o);
    } else if (!strcmp(t, "Slice")) {
        int64_t q[SO_MAX_INTS];
        int nq;
        so_shape os;
        if ((r = slice_quads(im, n, &a->shape, q, &nq, &os)) == B_OK) r = fold_slice(im, a, q, nq, &os, &o);
    } else if (!strcmp(t, "Transpose")) {
        int64_t perm[SO_MAX_RANK];
        const int64_t *p;
        long k = att_ints(n, "perm", &p);
        int rank = a->shape.rank, seen[SO_MAX_RANK] = {0};
        if (k >= 0 && k != rank) return node_err(im, "perm has %ld entries for rank %d", k, rank), B_ERR;
        for (int i = 0; i < rank; i++) {
            perm[i] = k >= 0 ? p[i] : rank - 1 - i;
            if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]]++) return node_err(im, "perm is not a permutation"), B_ERR;
        }
        r = fold_transpose(im, a, perm, &o);
    } else if (!strcmp(t, "Expand") && n_in == 2 && ins[1]) {
        int64_t d[SO_MAX_RANK];
        int k;
        so_shape s, os;
        if ((r = const_ints(im, ins[1], d, SO_MAX_RANK, &k, "shape")) != B_OK) return r;
        s = so_shape_make(k, d);
        if (bshape(&a->shape, &s, &os)) return node_err(im, "cannot expand to the given shape"), B_ERR;
        r = fold_expand(im, a, &os, &o);
    } else if (!strcmp(t, "Tile") && n_in == 2 && ins[1]) {
        int64_t d[SO_MAX_RANK];
        int k;
        if ((r = const_ints(im, ins[1], d, SO_MAX_RANK, &k, "repeats")) != B_OK) return r;
        if (k != a->shape.rank) return node_err(im, "repeats has %d entries for rank %d", k, a->shape.rank), B_ERR;
        r = fold_tile(im, a, d, &o);
    } else if (!strcmp(t, "ConstantOfShape")) {
        int64_t d[SO_MAX_RANK];
        int k;
        if ((r = const_ints(im, ins[0], d, SO_MAX_RANK, &k, "shape")) != B_OK) return r;
        const Onnx__AttributeProto *va = att(n, "value");
        ctensor v;
        memset(&v, 0, sizeof v);
        if (va && va->t) {
            char what[700];
            snprintf(what, sizeof what, "%s: attribute 'value'", im->desc);
            if (tensor_from_proto(im, va->t, what, &v) != SO_OK) return B_ERR;
            if (ct_numel(&v) != 1) return free(v.data), node_err(im, "value must have one element"), B_ERR;
        }
        if (ct_new(im, &o, v.data ? v.shape.dtype : SO_F32, v.data ? v.otype : T_FLOAT, k, d) != B_OK) return free(v.data), B_ERR;
        for (int64_t i = 0, c = ct_numel(&o); i < c && v.data; i++) ct_copy_elem(&v, 0, &o, i);
        free(v.data);
        r = B_OK;
    } else if (!strcmp(t, "Range") && n_in == 3 && ins[1] && ins[2]) {
        const ctensor *l = &ins[1]->c, *dl = &ins[2]->c;
        if (ct_numel(a) != 1 || ct_numel(l) != 1 || ct_numel(dl) != 1) return node_err(im, "inputs must be scalars"), B_ERR;
        double s0 = ct_getf(a, 0), s1 = ct_getf(l, 0), d = ct_getf(dl, 0);
        if (d == 0) return node_err(im, "delta is 0"), B_ERR;
        double cnt = ceil((s1 - s0) / d);
        if (cnt > 1e12) return node_err(im, "range too long"), B_ERR; /* before the cast (fuzz finding) */
        int64_t len = cnt > 0 ? (int64_t)cnt : 0;
        if (ct_new(im, &o, a->shape.dtype, a->otype, 1, &len) != B_OK) return B_ERR;
        for (int64_t i = 0; i < len; i++) {
            if (ct_isint(a)) /* wraps instead of overflowing for extreme start/delta */
                ((int64_t *)o.data)[i] = (int64_t)((uint64_t)ct_geti(a, 0) + (uint64_t)i * (uint64_t)ct_geti(dl, 0));
            else ((float *)o.data)[i] = (float)(s0 + (double)i * d);
        }
        r = B_OK;
    } else if (!strncmp(t, "Reduce", 6) && (!strcmp(t + 6, "Sum") || !strcmp(t + 6, "Mean") || !strcmp(t + 6, "Prod") ||
                                            !strcmp(t + 6, "Max") || !strcmp(t + 6, "Min"))) {
        int64_t ax[SO_MAX_RANK];
        int na, present;
        int from_input = !strcmp(t, "ReduceSum") ? im->opset >= 13 : im->opset >= 18;
        if ((r = get_axes(im, n, from_input, ax, &na, &present)) != B_OK) return r;
        if (!present || na == 0) {
            if (att_i(n, "noop_with_empty_axes", 0)) return fold_view(im, a, &a->shape, &o) == B_OK ? (bind_const(im, n->output[0], &o), B_OK) : B_ERR;
            na = a->shape.rank;
            for (int i = 0; i < na; i++) ax[i] = i;
        } else if (norm_axes(im, ax, na, a->shape.rank) != B_OK) return B_ERR;
        r = fold_reduce(im, t, a, ax, na, (int)att_i(n, "keepdims", 1), &o);
    } else if (!strcmp(t, "Clip")) {
        double lo = -INFINITY, hi = INFINITY;
        if (im->opset < 11) {
            lo = att_f(n, "min", -FLT_MAX);
            hi = att_f(n, "max", FLT_MAX);
        } else {
            if (n_in > 1 && ins[1]) lo = ct_getf(&ins[1]->c, 0);
            if (n_in > 2 && ins[2]) hi = ct_getf(&ins[2]->c, 0);
        }
        if (ct_new(im, &o, a->shape.dtype, a->otype, a->shape.rank, a->shape.dim) != B_OK) return B_ERR;
        for (int64_t i = 0, c = ct_numel(a); i < c; i++) {
            double x = ct_getf(a, i);
            x = x < lo ? lo : x > hi ? hi : x;
            if (ct_isint(a)) ((int64_t *)o.data)[i] = f2i(x);
            else ((float *)o.data)[i] = (float)x;
        }
        r = B_OK;
    } else if (!strcmp(t, "Split")) {
        int32_t ax;
        int64_t sz[SO_MAX_INTS];
        int k;
        if ((r = split_sizes(im, n, &a->shape, &ax, sz, &k)) != B_OK) return r;
        int64_t off = 0;
        for (int i = 0; i < k; i++) {
            int64_t q[4] = {ax, off, off + sz[i], 1};
            so_shape os = a->shape;
            os.dim[ax] = sz[i];
            if (fold_slice(im, a, q, 1, &os, &o) != B_OK) return B_ERR;
            if (n->output[i][0]) bind_const(im, n->output[i], &o);
            else free(o.data);
            memset(&o, 0, sizeof o);
            off += sz[i];
        }
        return B_OK;
    } else {
        return B_OPAQUE;
    }
    if (r != B_OK) {
        free(o.data);
        return r;
    }
    bind_const(im, n->output[0], &o);
    return B_OK;
}

/* ======================================================================
   graph nodes
   ====================================================================== */

static const char *node_name(imp *im, const Onnx__NodeProto *n, const char *suffix)
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
static int emit(imp *im, so_op op, val **ins, int n_in, int n_out, const so_attr *a, const char *name,
                char *const *onames, int n_onames, int32_t *idx)
{
    so_edge e[SO_MAX_IN];
    int all_const = n_in > 0;
    for (int k = 0; k < n_in; k++) {
        e[k] = materialize(im, ins[k]);
        if (!ins[k]->is_const) all_const = 0;
    }
    int32_t i = so_graph_add(im->g, op, e, n_in, n_out, a ? so_model_attr(im->m, a) : NULL, -1, name);
    if (idx) *idx = i;
    if (so_graph_infer(im->g, i) != SO_OK) return B_ERR;
    if (all_const && !(so_ops[op].flags & (SO_F_SOURCE | SO_F_OPAQUE))) {
        so_tensor tin[SO_MAX_IN], tout[8];
        int ok = n_out <= 8;
        for (int k = 0; k < n_out && ok; k++) {
            so_shape s = im->g->nodes[i].out[k];
            int64_t c = so_shape_numel(&s);
            if (c < 0 || c > so_onnx_fold_max_elems || (s.dtype != SO_F32 && s.dtype != SO_I64)) ok = 0;
            tout[k].shape = s;
            tout[k].data = NULL;
        }
        for (int k = 0; k < n_in && ok; k++) {
            tin[k].shape = ins[k]->c.shape;
            tin[k].data = ins[k]->c.data;
        }
        if (ok && so_ref_eval_node(im->g, i, tin, tout) == SO_OK) {
            for (int k = 0; k < n_out; k++) {
                ctensor c;
                c.shape = tout[k].shape;
                c.otype = c.shape.dtype == SO_I64 ? T_INT64 : T_FLOAT;
                c.data = tout[k].data;
                if (k < n_onames && onames[k] && onames[k][0]) bind_const(im, onames[k], &c);
                else free(c.data);
            }
            return B_OK; /* the node is left unused; DCE removes it */
        }
        so_errorf("%s", ""); /* not foldable: keep the node */
    }
    for (int k = 0; k < n_out && k < n_onames; k++)
        if (onames[k] && onames[k][0]) bind_edge(im, onames[k], i, k);
    return B_OK;
}

static val *anon_edge(imp *im, int32_t node, int32_t slot) { return bind_edge(im, NULL, node, slot); }

/* Stride/pad/dilation of Conv and pools (2-D only); explicit pads from auto_pad. */
static int conv_pool_attr(imp *im, const Onnx__NodeProto *n, const so_shape *x, const int64_t *kernel, int dilations_ok, so_attr *a)
{
    const int64_t *p;
    long k;
    if (x->rank != 4) return B_OPAQUE;
    a->kernel[0] = (int32_t)kernel[0];
    a->kernel[1] = (int32_t)kernel[1];
    a->stride[0] = a->stride[1] = 1;
    a->dilation[0] = a->dilation[1] = 1;
    if ((k = att_ints(n, "strides", &p)) >= 0) {
        if (k != 2) return B_OPAQUE;
        if (p[0] <= 0 || p[0] > INT32_MAX || p[1] <= 0 || p[1] > INT32_MAX) /* not truncated to int32 */
            return node_err(im, "invalid kernel/stride/dilation"), B_ERR;
        a->stride[0] = (int32_t)p[0], a->stride[1] = (int32_t)p[1];
    }
    if ((k = att_ints(n, "dilations", &p)) >= 0) {
        if (k != 2) return B_OPAQUE;
        if (!dilations_ok && (p[0] != 1 || p[1] != 1)) return B_OPAQUE;
        if (p[0] <= 0 || p[0] > INT32_MAX || p[1] <= 0 || p[1] > INT32_MAX)
            return node_err(im, "invalid kernel/stride/dilation"), B_ERR;
        a->dilation[0] = (int32_t)p[0], a->dilation[1] = (int32_t)p[1];
    }
    for (int i = 0; i < 2; i++)
        if (a->stride[i] <= 0 || a->dilation[i] <= 0 || kernel[i] <= 0 || kernel[i] > INT32_MAX)
            return node_err(im, "invalid kernel/stride/dilation"), B_ERR;
    char buf[32];
    const char *ap = att_s(n, "auto_pad", buf, sizeof buf);
    if (!ap || !ap[0] || !strcmp(ap, "NOTSET")) {
        if ((k = att_ints(n, "pads", &p)) >= 0) {
            if (k != 4) return B_OPAQUE;
            for (int i = 0; i < 4; i++) {
                if (p[i] < 0 || p[i] > INT32_MAX) return node_err(im, "invalid pad %lld", (long long)p[i]), B_ERR;
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
        return node_err(im, "unknown auto_pad '%s'", ap), B_ERR;
    }
    return B_OK;
}

/* Inputs 0..n-1 present without holes; returns the count after trimming absent trailing ones,
   or -1 when there is a hole. */
static int dense_inputs(val **ins, size_t n_in)
{
    int n = (int)n_in;
    while (n > 0 && !ins[n - 1]) n--;
    for (int k = 0; k < n; k++)
        if (!ins[k]) return -1;
    return n;
}

/* Outputs beyond `keep` must be absent. */
static int extra_outputs(const Onnx__NodeProto *n, size_t keep)
{
    for (size_t k = keep; k < n->n_output; k++)
        if (n->output[k][0]) return 1;
    return 0;
}

static int lstm_default_acts(const Onnx__NodeProto *n, int dirs)
{
    const Onnx__AttributeProto *a = att(n, "activations");
    if (!a) return 1;
    static const char *const def[3] = {"Sigmoid", "Tanh", "Tanh"};
    if (a->n_strings != (size_t)(3 * dirs)) return 0;
    for (size_t i = 0; i < a->n_strings; i++) {
        const char *d = def[i % 3];
        if (a->strings[i].len != strlen(d) || strncasecmp((const char *)a->strings[i].data, d, strlen(d)) != 0) return 0;
    }
    return 1;
}

/* Maps one ONNX node onto table op `op`. B_OPAQUE: keep it verbatim instead. */
static int build_op(imp *im, const Onnx__NodeProto *n, so_op op, val **ins, size_t n_in)
{
    so_attr a;
    memset(&a, 0, sizeof a);
    val *x = n_in > 0 ? ins[0] : NULL;
    if (!x && so_ops[op].min_in > 0) return node_err(im, "missing input 0"), B_ERR;
    so_shape xs = x ? vshape(im, x) : (so_shape){.rank = -1};
    const char *nm = node_name(im, n, NULL);
    char *const *on = n->output;
    int non = (int)n->n_output;
    val *args[SO_MAX_IN];
    int na = 0, r;
    const int64_t *p;
    long k;
    int nout = so_ops[op].n_out;
    if (nout > 0 && extra_outputs(n, (size_t)nout)) return B_OPAQUE;

    switch (op) {
    case SO_OP_CONV: {
        if ((na = dense_inputs(ins, n_in)) < 2) return na < 0 ? B_OPAQUE : (node_err(im, "needs at least 2 inputs"), B_ERR);
        so_shape ws = vshape(im, ins[1]);
        int64_t ker[2];
        if (ws.rank == 4) ker[0] = ws.dim[2], ker[1] = ws.dim[3];
        else if ((k = att_ints(n, "kernel_shape", &p)) == 2) ker[0] = p[0], ker[1] = p[1];
        else return B_OPAQUE;
        if ((k = att_ints(n, "kernel_shape", &p)) >= 0 && (k != 2 || p[0] != ker[0] || p[1] != ker[1]))
            return k != 2 ? B_OPAQUE : (node_err(im, "kernel_shape does not match the weight shape"), B_ERR);
        if ((r = conv_pool_attr(im, n, &xs, ker, 1, &a)) != B_OK) return r;
        int64_t group = att_i(n, "group", 1);
        if (group <= 0 || group > INT32_MAX) return node_err(im, "invalid group %lld", (long long)group), B_ERR;
        a.group = (int32_t)group;
        return emit(im, op, ins, na, 1, &a, nm, on, non, NULL);
    }
    case SO_OP_MAXPOOL:
    case SO_OP_AVGPOOL: {
        int64_t ker[2];
        if ((k = att_ints(n, "kernel_shape", &p)) != 2) return k < 0 ? (node_err(im, "missing kernel_shape"), B_ERR) : B_OPAQUE;
        ker[0] = p[0], ker[1] = p[1];
        if (att_i(n, "storage_order", 0) != 0) return B_OPAQUE;
        if ((r = conv_pool_attr(im, n, &xs, ker, op == SO_OP_MAXPOOL, &a)) != B_OK) return r;
        a.ceil_mode = att_i(n, "ceil_mode", 0) != 0; /* flags: any nonzero int64, not its low 32 bits */
        if (op == SO_OP_AVGPOOL) a.count_include_pad = att_i(n, "count_include_pad", 0) != 0;
        return emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
    }
    case SO_OP_GEMM:
        if ((na = dense_inputs(ins, n_in)) < 2) return na < 0 ? B_OPAQUE : (node_err(im, "needs at least 2 inputs"), B_ERR);
        a.alpha = att_f(n, "alpha", 1.0f);
        a.beta = att_f(n, "beta", 1.0f);
        a.trans_a = att_i(n, "transA", 0) != 0;
        a.trans_b = att_i(n, "transB", 0) != 0;
        return emit(im, op, ins, na, 1, &a, nm, on, non, NULL);
    case SO_OP_CLIP: {
        float lo = -INFINITY, hi = INFINITY;
        if (im->opset < 11) {
            lo = att_f(n, "min", -FLT_MAX);
            hi = att_f(n, "max", FLT_MAX);
            if (lo == -FLT_MAX) lo = -INFINITY;
            if (hi == FLT_MAX) hi = INFINITY;
        } else {
            val *v;
            if ((v = inval(im, n, 1))) {
                if (!v->is_const) return B_OPAQUE;
                if (ct_numel(&v->c) != 1) return node_err(im, "min must be a scalar"), B_ERR;
                lo = (float)ct_getf(&v->c, 0);
            }
            if ((v = inval(im, n, 2))) {
                if (!v->is_const) return B_OPAQUE;
                if (ct_numel(&v->c) != 1) return node_err(im, "max must be a scalar"), B_ERR;
                hi = (float)ct_getf(&v->c, 0);
            }
        }
        a.clip_min = lo;
        a.clip_max = hi;
        return emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
    }
    case SO_OP_BATCHNORM:
        if (att_i(n, "training_mode", 0) != 0) return node_err(im, "training_mode=1 is not supported (export the model in eval mode)"), B_ERR;
        if (dense_inputs(ins, n_in) != 5) return node_err(im, "needs 5 inputs"), B_ERR;
        if (att_i(n, "spatial", 1) != 1) return B_OPAQUE;
        a.epsilon = att_f(n, "epsilon", 1e-5f);
        return emit(im, op, ins, 5, 1, &a, nm, on, non, NULL);
    case SO_OP_LAYERNORM: {
        if ((na = dense_inputs(ins, n_in)) < 2) return na < 0 ? B_OPAQUE : (node_err(im, "needs at least 2 inputs"), B_ERR);
        if (xs.rank < 0) return B_OPAQUE;
        if (norm_axis(im, att_i(n, "axis", -1), xs.rank, &a.axis) != B_OK) return B_ERR;
        a.epsilon = att_f(n, "epsilon", 1e-5f);
        return emit(im, op, ins, na, 1, &a, nm, on, non, NULL);
    }
    case SO_OP_SOFTMAX: {
        if (xs.rank < 0) return B_OPAQUE;
        int32_t ax;
        if (norm_axis(im, att_i(n, "axis", im->opset >= 13 ? -1 : 1), xs.rank, &ax) != B_OK) return B_ERR;
        if (im->opset >= 13 || ax == xs.rank - 1) {
            a.axis = ax;
            return emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
        }
        /* opset < 13: softmax over the flattened trailing dims: Flatten -> Softmax -> Reshape */
        int32_t f, s;
        so_attr fa;
        memset(&fa, 0, sizeof fa);
        fa.axis = ax;
        if ((r = emit(im, SO_OP_FLATTEN, ins, 1, 1, &fa, node_name(im, n, "/flatten"), NULL, 0, &f)) != B_OK) return r;
        val *fv = anon_edge(im, f, 0);
        a.axis = 1;
        if ((r = emit(im, SO_OP_SOFTMAX, &fv, 1, 1, &a, nm, NULL, 0, &s)) != B_OK) return r;
        val *sv = anon_edge(im, s, 0);
        so_attr ra;
        memset(&ra, 0, sizeof ra);
        ra.n_ints = xs.rank;
        for (int i = 0; i < xs.rank; i++) ra.ints[i] = xs.dim[i];
        return emit(im, SO_OP_RESHAPE, &sv, 1, 1, &ra, node_name(im, n, "/reshape"), on, non, NULL);
    }
    case SO_OP_REDUCEMEAN:
    case SO_OP_REDUCESUM: {
        int64_t ax[SO_MAX_RANK];
        int nax, present;
        if ((r = get_axes(im, n, im->opset >= (op == SO_OP_REDUCESUM ? 13 : 18), ax, &nax, &present)) != B_OK) return r;
        if (xs.rank < 0) return B_OPAQUE;
        if (!present || nax == 0) {
            if (att_i(n, "noop_with_empty_axes", 0)) {
                map_put(&im->names, on[0], map_get(&im->names, n->input[0]));
                return B_OK;
            }
            nax = xs.rank;
            for (int i = 0; i < nax; i++) ax[i] = i;
        } else if (norm_axes(im, ax, nax, xs.rank) != B_OK) return B_ERR;
        a.n_ints = nax;
        memcpy(a.ints, ax, (size_t)nax * 8);
        a.keepdims = att_i(n, "keepdims", 1) != 0;
        return emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
    }
    case SO_OP_PAD: {
        int64_t pads[2 * SO_MAX_RANK];
        if ((r = pad_params(im, n, &xs, pads, &a.value, &a.mode)) != B_OK) return r;
        a.n_ints = 2 * xs.rank;
        memcpy(a.ints, pads, (size_t)a.n_ints * 8);
        return emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
    }
    case SO_OP_CONCAT: {
        if ((na = dense_inputs(ins, n_in)) < 1 || na > SO_MAX_IN) return na == 0 ? (node_err(im, "no inputs"), B_ERR) : B_OPAQUE;
        if (xs.rank < 0) return B_OPAQUE;
        if (norm_axis(im, att_i(n, "axis", 0), xs.rank, &a.axis) != B_OK) return B_ERR;
        return emit(im, op, ins, na, 1, &a, nm, on, non, NULL);
    }
    case SO_OP_SPLIT: {
        int64_t sz[SO_MAX_INTS];
        int cnt;
        if ((r = split_sizes(im, n, &xs, &a.axis, sz, &cnt)) != B_OK) return r;
        a.n_ints = cnt;
        memcpy(a.ints, sz, (size_t)cnt * 8);
        return emit(im, op, ins, 1, cnt, &a, nm, on, non, NULL);
    }
    case SO_OP_FLATTEN: {
        if (xs.rank < 0) return B_OPAQUE;
        int64_t axv = att_i(n, "axis", 1);
        if (axv < 0) axv += xs.rank;
        if (axv < 0 || axv > xs.rank) return node_err(im, "axis %lld out of range for rank %d", (long long)att_i(n, "axis", 1), xs.rank), B_ERR;
        a.axis = (int32_t)axv;
        return emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
    }
    case SO_OP_RESHAPE: {
        so_shape t;
        if ((r = reshape_target(im, n, &xs, inval(im, n, 1), &t)) != B_OK) return r;
        a.n_ints = t.rank;
        for (int i = 0; i < t.rank; i++) a.ints[i] = t.dim[i];
        return emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
    }
    case SO_OP_TRANSPOSE: {
        if (xs.rank < 0) return B_OPAQUE;
        int seen[SO_MAX_RANK] = {0};
        k = att_ints(n, "perm", &p);
        if (k >= 0 && k != xs.rank) return node_err(im, "perm has %ld entries for rank %d", k, xs.rank), B_ERR;
        a.n_ints = xs.rank;
        for (int i = 0; i < xs.rank; i++) {
            a.ints[i] = k >= 0 ? p[i] : xs.rank - 1 - i;
            if (a.ints[i] < 0 || a.ints[i] >= xs.rank || seen[a.ints[i]]++) return node_err(im, "perm is not a permutation"), B_ERR;
        }
        return emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
    }
    case SO_OP_SQUEEZE:
    case SO_OP_UNSQUEEZE: {
        int64_t ax[SO_MAX_RANK];
        int nax, present;
        if ((r = get_axes(im, n, im->opset >= 13, ax, &nax, &present)) != B_OK) return r;
        if (xs.rank < 0) return B_OPAQUE;
        if (op == SO_OP_UNSQUEEZE) {
            if (!present) return node_err(im, "missing axes"), B_ERR;
            if (xs.rank + nax > SO_MAX_RANK) return B_OPAQUE;
            if (norm_axes(im, ax, nax, xs.rank + nax) != B_OK) return B_ERR;
        } else if (!present) {
            nax = 0;
            for (int i = 0; i < xs.rank; i++)
                if (xs.dim[i] == 1) ax[nax++] = i;
        } else {
            if (norm_axes(im, ax, nax, xs.rank) != B_OK) return B_ERR;
            for (int i = 0; i < nax; i++)
                if (xs.dim[ax[i]] != 1) return node_err(im, "cannot squeeze axis %lld of size %lld", (long long)ax[i], (long long)xs.dim[ax[i]]), B_ERR;
        }
        a.n_ints = nax;
        memcpy(a.ints, ax, (size_t)nax * 8);
        return emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
    }
    case SO_OP_EXPAND: {
        int64_t d[SO_MAX_RANK];
        int cnt;
        val *sv = inval(im, n, 1);
        if (!sv) return node_err(im, "missing shape input"), B_ERR;
        if ((r = const_ints(im, sv, d, SO_MAX_RANK, &cnt, "shape")) != B_OK) return r;
        if (xs.rank < 0) return B_OPAQUE;
        so_shape s = so_shape_make(cnt, d), os;
        if (bshape(&xs, &s, &os)) {
            char b1[128], b2[128];
            return node_err(im, "cannot expand %s to %s", so_shape_str(&xs, b1, sizeof b1), so_shape_str(&s, b2, sizeof b2)), B_ERR;
        }
        a.n_ints = os.rank;
        for (int i = 0; i < os.rank; i++) a.ints[i] = os.dim[i];
        return emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
    }
    case SO_OP_GATHER: {
        if (dense_inputs(ins, n_in) != 2) return node_err(im, "needs 2 inputs"), B_ERR;
        if (xs.rank < 0) return B_OPAQUE;
        if (norm_axis(im, att_i(n, "axis", 0), xs.rank, &a.axis) != B_OK) return B_ERR;
        args[0] = x;
        args[1] = ins[1];
        if (ins[1]->is_const) {
            /* constant indices: int64, negatives resolved, range-checked */
            const ctensor *ic = &ins[1]->c;
            int64_t dim = xs.dim[a.axis], cnt = ct_numel(ic);
            int need = !ct_isint(ic);
            for (int64_t i = 0; i < cnt; i++) {
                int64_t v = ct_geti(ic, i);
                if (v < -dim || v >= dim) return node_err(im, "index %lld out of range for dimension %lld", (long long)v, (long long)dim), B_ERR;
                if (v < 0) need = 1;
            }
            if (need) {
                ctensor c;
                if (ct_new(im, &c, SO_I64, T_INT64, ic->shape.rank, ic->shape.dim) != B_OK) return B_ERR;
                for (int64_t i = 0; i < cnt; i++) {
                    int64_t v = ct_geti(ic, i);
                    ((int64_t *)c.data)[i] = v < 0 ? v + dim : v;
                }
                args[1] = bind_const(im, NULL, &c);
            }
        }
        return emit(im, op, args, 2, 1, &a, nm, on, non, NULL);
    }
    case SO_OP_SLICE: {
        int nq;
        if ((r = slice_quads(im, n, &xs, a.ints, &nq, NULL)) != B_OK) return r;
        a.n_ints = 4 * nq;
        return emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
    }
    case SO_OP_LSTM: {
        char buf[32];
        const char *dir = att_s(n, "direction", buf, sizeof buf);
        if (!dir || !strcmp(dir, "forward")) a.direction = 0;
        else if (!strcmp(dir, "reverse")) a.direction = 1;
        else if (!strcmp(dir, "bidirectional")) a.direction = 2;
        else return node_err(im, "unknown direction '%s'", dir), B_ERR;
        int dirs = a.direction == 2 ? 2 : 1;
        if (!lstm_default_acts(n, dirs) || att(n, "clip") || att(n, "activation_alpha") || att(n, "activation_beta") ||
            att_i(n, "input_forget", 0) != 0 || att_i(n, "layout", 0) != 0)
            return B_OPAQUE;
        if (xs.rank != 3) return B_OPAQUE;
        if (!inval(im, n, 1) || !inval(im, n, 2)) return node_err(im, "missing W or R"), B_ERR;
        so_shape rs = vshape(im, inval(im, n, 2));
        int64_t hidden = att_i(n, "hidden_size", rs.rank == 3 ? rs.dim[2] : 0);
        if (hidden <= 0 || hidden > INT32_MAX) return node_err(im, "missing or invalid hidden_size"), B_ERR;
        a.hidden = (int32_t)hidden;
        int last = (int)n_in;
        while (last > 0 && !ins[last - 1]) last--;
        if (last > 8) return B_OPAQUE;
        int64_t T = xs.dim[0], Bt = xs.dim[1], H = a.hidden;
        for (int i = 0; i < last; i++) {
            if (ins[i]) {
                args[i] = ins[i];
                continue;
            }
            /* a hole before a later optional input: fill it with its neutral value */
            ctensor c;
            int64_t d[3];
            if (i == 3) {
                d[0] = dirs, d[1] = 8 * H;
                if (ct_new(im, &c, SO_F32, T_FLOAT, 2, d) != B_OK) return B_ERR;
            } else if (i == 4) {
                d[0] = Bt;
                if (ct_new(im, &c, SO_I64, T_INT32, 1, d) != B_OK) return B_ERR;
                for (int64_t b = 0; b < Bt; b++) ((int64_t *)c.data)[b] = T;
            } else if (i == 5 || i == 6) {
                d[0] = dirs, d[1] = Bt, d[2] = H;
                if (ct_new(im, &c, SO_F32, T_FLOAT, 3, d) != B_OK) return B_ERR;
            } else {
                return node_err(im, "missing input %d", i), B_ERR;
            }
            args[i] = bind_const(im, NULL, &c);
        }
        return emit(im, op, args, last, 3, &a, nm, on, non, NULL);
    }
    case SO_OP_RESIZE: {
        /* 4-D inputs resized in H and W by constant scales or sizes; nearest or linear with the
           half_pixel / pytorch_half_pixel / align_corners / asymmetric transforms. Anything else
           (cubic, antialias, axes, tf_crop_and_resize, computed scales) is kept verbatim. */
        char buf[64];
        const char *s;
        if (xs.rank != 4 || !x) return B_OPAQUE;
        s = att_s(n, "mode", buf, sizeof buf);
        if (!s || !strcmp(s, "nearest")) a.mode = 0;
        else if (!strcmp(s, "linear")) a.mode = 1;
        else return B_OPAQUE;
        a.n_ints = 5;
        a.ints[0] = SO_RESIZE_ASYMMETRIC; /* opset 10 */
        a.ints[1] = 0;
        if (im->opset >= 11) {
            s = att_s(n, "coordinate_transformation_mode", buf, sizeof buf);
            if ((a.ints[0] = s ? name_index(s, so_resize_coord_names, SO_RESIZE_COORD_COUNT) : SO_RESIZE_HALF_PIXEL) < 0) return B_OPAQUE;
            s = att_s(n, "nearest_mode", buf, sizeof buf);
            if ((a.ints[1] = s ? name_index(s, so_resize_nearest_names, 4) : 0) < 0) return B_OPAQUE;
            if (att_i(n, "antialias", 0) != 0 || att_ints(n, "axes", &p) >= 0) return B_OPAQUE;
            if ((s = att_s(n, "keep_aspect_ratio_policy", buf, sizeof buf)) && strcmp(s, "stretch")) return B_OPAQUE;
        }
        val *sc = inval(im, n, im->opset >= 11 ? 2 : 1), *sz = im->opset >= 11 ? inval(im, n, 3) : NULL;
        if (sc && sc->is_const && ct_numel(&sc->c) == 0) sc = NULL; /* empty scales beside sizes (opset 11-12) */
        float scale[4];
        int64_t out[4];
        if (sc) {
            if (!sc->is_const) return B_OPAQUE;
            if (ct_numel(&sc->c) != 4) return node_err(im, "has %lld scales for a 4-D input", (long long)ct_numel(&sc->c)), B_ERR;
            for (int d = 0; d < 4; d++) {
                scale[d] = (float)ct_getf(&sc->c, d);
                if (!(scale[d] > 0) || scale[d] > 1e6f) return node_err(im, "invalid scale %g", (double)scale[d]), B_ERR;
                out[d] = (int64_t)floorf((float)xs.dim[d] * scale[d]);
            }
            a.ints[2] = 0;
        } else if (sz) {
            int cnt = 0;
            if ((r = const_ints(im, sz, out, 4, &cnt, "sizes")) != B_OK) return r;
            if (cnt != 4) return node_err(im, "has %d sizes for a 4-D input", cnt), B_ERR;
            for (int d = 0; d < 4; d++) scale[d] = (float)out[d] / (float)xs.dim[d];
            a.ints[2] = 1;
        } else
            return node_err(im, "needs scales or sizes"), B_ERR;
        if (out[0] != xs.dim[0] || out[1] != xs.dim[1]) return B_OPAQUE; /* resizing N or C */
        if (out[2] <= 0 || out[3] <= 0 || out[2] > INT32_MAX || out[3] > INT32_MAX)
            return node_err(im, "invalid output size %lldx%lld", (long long)out[2], (long long)out[3]), B_ERR;
        a.ints[3] = out[2];
        a.ints[4] = out[3];
        a.alpha = scale[2];
        a.beta = scale[3];
        return emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
    }
    case SO_OP_HARDSIGMOID:
    case SO_OP_LEAKYRELU:
        if ((na = dense_inputs(ins, n_in)) != 1) return na < 0 ? B_OPAQUE : (node_err(im, "has %d inputs", na), B_ERR);
        a.alpha = att_f(n, "alpha", op == SO_OP_LEAKYRELU ? 0.01f : 0.2f);
        if (op == SO_OP_HARDSIGMOID) a.beta = att_f(n, "beta", 0.5f);
        return emit(im, op, ins, 1, 1, &a, nm, on, non, NULL);
    case SO_OP_INPUT:
    case SO_OP_WEIGHT:
    case SO_OP_OPAQUE:
        return B_OPAQUE;
    default:
        /* element-wise and MatMul: inputs as given */
        if ((na = dense_inputs(ins, n_in)) < so_ops[op].min_in || na > so_ops[op].max_in) return na < 0 ? B_OPAQUE : (node_err(im, "has %d inputs", na), B_ERR);
        if (so_ops[op].flags & SO_F_INTERNAL) return B_OPAQUE;
        return emit(im, op, ins, na, nout, &a, nm, on, non, NULL);
    }
}

/* Output shapes of a few common ops the optimizer does not know (used when value_info is silent). */
static int opaque_rule_shape(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in, int k, so_shape *out)
{
    static const char *const same[] = {"LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Softplus",
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
    so_shape s0 = vshape(im, ins[0]);
    if (s0.rank < 0) return 0;
    int dflt = n->domain == NULL || !n->domain[0] || !strcmp(n->domain, "ai.onnx");
    if (!dflt) return 0;
    if (k == 0) {
        for (size_t i = 0; i < SO_ARRAY_LEN(same); i++)
            if (!strcmp(t, same[i])) {
                *out = s0;
                if (!strcmp(t, "Cast")) out->dtype = (int32_t)att_i(n, "to", s0.dtype);
                if (!strncmp(t, "Is", 2) || !strcmp(t, "Not")) out->dtype = T_BOOL;
                return 1;
            }
        for (size_t i = 0; i < SO_ARRAY_LEN(bcast); i++)
            if (!strcmp(t, bcast[i])) {
                so_shape o = s0;
                for (size_t j = 1; j < n_in; j++) {
                    if (!ins[j]) continue;
                    so_shape sj = vshape(im, ins[j]);
                    if (sj.rank < 0 || bshape(&o, &sj, &o)) return 0;
                }
                if (is_cmp(t) || is_logic(t)) o.dtype = T_BOOL;
                *out = o;
                return 1;
            }
        if (!strcmp(t, "Where") && n_in == 3 && ins[1] && ins[2]) {
            so_shape s1 = vshape(im, ins[1]), s2 = vshape(im, ins[2]), o;
            if (s1.rank < 0 || s2.rank < 0 || bshape(&s1, &s2, &o) || bshape(&s0, &o, &o)) return 0;
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
        if (att(n, "axes")) return 0;
        if (sz && sz->is_const && ct_numel(&sz->c) == s0.rank) {
            for (int i = 0; i < s0.rank; i++) o.dim[i] = ct_geti(&sz->c, i);
        } else if (sc && sc->is_const && ct_numel(&sc->c) == s0.rank) {
            for (int i = 0; i < s0.rank; i++) o.dim[i] = f2i(floor((double)s0.dim[i] * ct_getf(&sc->c, i)));
        } else {
            const Onnx__AttributeProto *a = att(n, "scales");
            if (!a || a->n_floats != (size_t)s0.rank) return 0;
            for (int i = 0; i < s0.rank; i++) o.dim[i] = f2i(floor((double)s0.dim[i] * a->floats[i]));
        }
        *out = o;
        return 1;
    }
    if (k == 0 && (!strncmp(t, "Reduce", 6) || !strcmp(t, "ArgMax") || !strcmp(t, "ArgMin"))) {
        /* reductions: axes from the attribute or a constant input */
        int64_t ax[SO_MAX_RANK];
        int na = 0, present = 0, arg = t[0] == 'A';
        if (arg) {
            ax[0] = att_i(n, "axis", 0);
            na = present = 1;
        } else {
            int from_input = !strcmp(t, "ReduceSum") ? im->opset >= 13 : im->opset >= 18;
            if (get_axes(im, n, from_input, ax, &na, &present) != B_OK) return so_errorf("%s", ""), 0;
        }
        if (!present || na == 0) {
            if (att_i(n, "noop_with_empty_axes", 0)) return *out = s0, 1;
            na = s0.rank;
            for (int i = 0; i < na; i++) ax[i] = i;
        } else if (norm_axes(im, ax, na, s0.rank) != B_OK) {
            return so_errorf("%s", ""), 0;
        }
        int keep = (int)att_i(n, "keepdims", 1), red[SO_MAX_RANK] = {0};
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
        const char *dir = att_s(n, "direction", buf, sizeof buf);
        int64_t D = dir && !strcmp(dir, "bidirectional") ? 2 : 1, H = att_i(n, "hidden_size", 0);
        int layout = (int)att_i(n, "layout", 0);
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

/* Shape of tensor `name` from value_info / graph outputs; 0 if not known with fixed dims. */
static int vinfo_shape(imp *im, const char *name, so_shape *out)
{
    int32_t i = map_get(&im->vinfo, name);
    if (i < 0) return 0;
    const Onnx__TypeProto *tp = im->vis[i]->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type || !tp->tensor_type->shape) return 0;
    const Onnx__TensorShapeProto *sp = tp->tensor_type->shape;
    if (sp->n_dim > SO_MAX_RANK) return 0;
    so_shape s;
    memset(&s, 0, sizeof s);
    s.rank = (int32_t)sp->n_dim;
    s.dtype = tp->tensor_type->elem_type;
    for (size_t d = 0; d < sp->n_dim; d++) {
        if (sp->dim[d]->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE || sp->dim[d]->dim_value < 0) return 0;
        s.dim[d] = sp->dim[d]->dim_value;
    }
    *out = s;
    return 1;
}

/* Keeps node n verbatim: serialized NodeProto in the model, output shapes from value_info or rules. */
static so_status add_opaque(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in)
{
    so_model *m = im->m;
    so_edge e[SO_MAX_IN];
    int ne = 0;
    for (size_t k = 0; k < n_in; k++) {
        if (!ins[k]) continue;
        if (ne == SO_MAX_IN) return node_err(im, "more than %d inputs", SO_MAX_IN);
        e[ne++] = materialize(im, ins[k]);
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
        if (!vinfo_shape(im, n->output[k], &op->out[k]) && !opaque_rule_shape(im, n, ins, n_in, k, &op->out[k]))
            op->out[k].rank = -1;
    }
    int32_t id = m->n_opaque++;
    int32_t i = so_graph_add(im->g, SO_OP_OPAQUE, e, ne, op->n_out, NULL, id, node_name(im, n, NULL));
    for (int k = 0; k < op->n_out; k++) {
        im->g->nodes[i].out[k] = op->out[k];
        if (n->output[k][0]) bind_edge(im, n->output[k], i, k);
    }
    return SO_OK;
}

static int is_default_domain(const char *d) { return !d || !d[0] || !strcmp(d, "ai.onnx"); }

/* An int list attribute of a layout node into dst (count entries, each in [lo, 1 << 20]); absent: def. */
static so_status layout_ints(imp *im, const Onnx__NodeProto *n, const char *name, int32_t *dst, long count, int32_t lo, int32_t def)
{
    const int64_t *p;
    long k = att_ints(n, name, &p);
    for (long j = 0; j < count; j++) dst[j] = def;
    if (k < 0) return SO_OK;
    if (k != count) return node_err(im, "attribute '%s' needs %ld values", name, count);
    for (long j = 0; j < count; j++) {
        if (p[j] < lo || p[j] > (1 << 20)) return node_err(im, "attribute '%s' value %lld is out of range", name, (long long)p[j]);
        dst[j] = (int32_t)p[j];
    }
    return SO_OK;
}

/* A node of superopt's layout domain (SO_ONNX_LAYOUT_DOMAIN, written by the optimizer): the ops.def operator
   of that name with its attributes; shapes are checked by shape inference as for any node. */
static so_status build_layout_op(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in)
{
    const int o = so_op_from_name(n->op_type);
    if (o < 0 || !(so_ops[o].flags & SO_F_LAYOUT)) return node_err(im, "unknown operator '%s' in domain %s", n->op_type, SO_ONNX_LAYOUT_DOMAIN);
    so_attr a;
    memset(&a, 0, sizeof a);
    if (o == SO_OP_CONCAT_NCHWC) {
        const int64_t *p;
        const long k = att_ints(n, "channels", &p);
        a.ints[0] = att_i(n, "block", 0);
        if (k < 1 || k >= SO_MAX_INTS || a.ints[0] < 1 || a.ints[0] > 64) return node_err(im, "invalid block or channels attribute");
        a.n_ints = (int32_t)k + 1;
        for (long j = 0; j < k; j++) {
            if (p[j] < 1 || p[j] > INT32_MAX) return node_err(im, "invalid channels attribute");
            a.ints[j + 1] = p[j];
        }
    } else if (o == SO_OP_NCHWC_IN || o == SO_OP_NCHWC_OUT) {
        const int64_t b = att_i(n, "block", 0), c = att_i(n, "channels", 0);
        if (b < 1 || b > 64 || (o == SO_OP_NCHWC_OUT && (c < 1 || c > INT32_MAX))) return node_err(im, "invalid block or channels attribute");
        a.n_ints = o == SO_OP_NCHWC_OUT ? 2 : 1, a.ints[0] = b, a.ints[1] = o == SO_OP_NCHWC_OUT ? c : 0;
    } else if (o != SO_OP_GLOBALAVGPOOL_NCHWC) {
        if ((o != SO_OP_CONV_NCHWC && layout_ints(im, n, "kernel_shape", a.kernel, 2, 1, 0) != SO_OK) ||
            layout_ints(im, n, "strides", a.stride, 2, 1, 1) != SO_OK || layout_ints(im, n, "pads", a.pad, 4, 0, 0) != SO_OK ||
            (o != SO_OP_AVGPOOL_NCHWC && layout_ints(im, n, "dilations", a.dilation, 2, 1, 1) != SO_OK))
            return SO_ERR;
        if (o != SO_OP_CONV_NCHWC && a.kernel[0] < 1) return node_err(im, "missing kernel_shape");
        const int64_t grp = att_i(n, "group", 1);
        if (grp < 1 || grp > INT32_MAX) return node_err(im, "invalid group %lld", (long long)grp);
        if (o == SO_OP_CONV_NCHWC) a.group = (int32_t)grp;
        if (o != SO_OP_CONV_NCHWC) a.ceil_mode = att_i(n, "ceil_mode", 0) != 0;
        if (o == SO_OP_AVGPOOL_NCHWC) a.count_include_pad = att_i(n, "count_include_pad", 0) != 0;
    }
    const int na = dense_inputs(ins, n_in);
    if (na < so_ops[o].min_in || na > so_ops[o].max_in) return node_err(im, "has %d inputs", na);
    return emit(im, (so_op)o, ins, na, 1, &a, node_name(im, n, NULL), n->output, (int)n->n_output, NULL) == B_OK ? SO_OK : SO_ERR;
}

static so_status import_node(imp *im, const Onnx__NodeProto *n)
{
    val *ins[SO_MAX_IN * 2] = {0}; /* ins[0] of a node without inputs reads NULL (fuzz finding) */
    size_t n_in = n->n_input;
    if (n_in > SO_MAX_IN * 2) return node_err(im, "too many inputs (%zu)", n_in);
    for (size_t k = 0; k < n_in; k++) ins[k] = inval(im, n, k);
    for (size_t k = 0; k < n->n_attribute; k++) {
        const Onnx__AttributeProto *a = n->attribute[k];
        if (a->g || a->n_graphs) return node_err(im, "operators with subgraphs (control flow) are not supported");
    }
    if (n->n_output == 0) return SO_OK; /* produces nothing anyone can read */
    if (n->domain && !strcmp(n->domain, SO_ONNX_LAYOUT_DOMAIN)) return build_layout_op(im, n, ins, n_in);
    if (!is_default_domain(n->domain)) return add_opaque(im, n, ins, n_in);
    const char *t = n->op_type;
    if (!strcmp(t, "Identity") || (!strcmp(t, "Dropout") && !extra_outputs(n, 1))) {
        if (!ins[0]) return node_err(im, "missing input 0");
        if (n->n_output < 1 || !n->output[0][0]) return SO_OK;
        map_put(&im->names, n->output[0], map_get(&im->names, n->input[0]));
        return SO_OK;
    }
    if (!strcmp(t, "Constant")) {
        ctensor c;
        memset(&c, 0, sizeof c);
        const Onnx__AttributeProto *a;
        if (n->n_output < 1) return SO_OK;
        if ((a = att(n, "value")) && a->t) {
            char what[700];
            snprintf(what, sizeof what, "%s: attribute 'value'", im->desc);
            if (tensor_from_proto(im, a->t, what, &c) != SO_OK) return SO_ERR;
        } else if ((a = att(n, "value_float"))) {
            if (ct_new(im, &c, SO_F32, T_FLOAT, 0, NULL) != B_OK) return SO_ERR;
            ((float *)c.data)[0] = a->f;
        } else if ((a = att(n, "value_int"))) {
            if (ct_new(im, &c, SO_I64, T_INT64, 0, NULL) != B_OK) return SO_ERR;
            ((int64_t *)c.data)[0] = a->i;
        } else if ((a = att(n, "value_floats"))) {
            int64_t d = (int64_t)a->n_floats;
            if (ct_new(im, &c, SO_F32, T_FLOAT, 1, &d) != B_OK) return SO_ERR;
            if (d) memcpy(c.data, a->floats, (size_t)d * 4);
        } else if ((a = att(n, "value_ints"))) {
            int64_t d = (int64_t)a->n_ints;
            if (ct_new(im, &c, SO_I64, T_INT64, 1, &d) != B_OK) return SO_ERR;
            if (d) memcpy(c.data, a->ints, (size_t)d * 8);
        } else if (att(n, "sparse_value")) {
            return node_err(im, "sparse constants are not supported");
        } else {
            return add_opaque(im, n, ins, n_in); /* strings */
        }
        bind_const(im, n->output[0], &c);
        return SO_OK;
    }
    /* folding may not create a constant larger than so_onnx_fold_max_elems and its largest input */
    im->fold_cap = so_onnx_fold_max_elems > 0 ? so_onnx_fold_max_elems : 1;
    for (size_t k = 0; k < n_in; k++)
        if (ins[k] && ins[k]->is_const && ct_numel(&ins[k]->c) > im->fold_cap) im->fold_cap = ct_numel(&ins[k]->c);
    im->fold_over = 0;
    int r = try_fold(im, n, ins, n_in);
    im->fold_cap = 0;
    if (r == B_ERR && im->fold_over) {
        r = B_OPAQUE; /* too large to fold: keep the node */
        so_errorf("%s", "");
    }
    if (r == B_OK) return SO_OK;
    if (r == B_ERR) return SO_ERR;
    so_op op = so_op_from_onnx(t);
    if (op != SO_OP_OPAQUE) {
        r = build_op(im, n, op, ins, n_in);
        if (r == B_OK) return SO_OK;
        if (r == B_ERR) return SO_ERR;
    }
    return add_opaque(im, n, ins, n_in);
}

/* ======================================================================
   model-level import
   ====================================================================== */

/* Orders nodes so that producers come before users (DFS, keeps the given order when already
   sorted). Checks that every input exists and that there is no cycle. */
static so_status order_nodes(const Onnx__GraphProto *gp, size_t **order_out)
{
    size_t n = gp->n_node;
    strmap prod = {0};
    char d[600];
    so_status st = SO_OK;
    size_t *order = so_xmalloc((n + 1) * sizeof *order), n_order = 0;
    unsigned char *state = so_xcalloc(n + 1, 1);
    size_t *stk = so_xmalloc((n + 1) * sizeof *stk), *pos = so_xmalloc((n + 1) * sizeof *pos);
    for (size_t i = 0; i < gp->n_initializer; i++)
        if (gp->initializer[i]->name) map_put(&prod, gp->initializer[i]->name, -2);
    for (size_t i = 0; i < gp->n_input; i++)
        if (gp->input[i]->name) map_put(&prod, gp->input[i]->name, -2);
    for (size_t i = 0; i < n; i++) {
        const Onnx__NodeProto *nd = gp->node[i];
        if (!nd->op_type) {
            st = so_errorf("node #%zu has no op_type", i);
            goto done;
        }
        for (size_t k = 0; k < nd->n_output; k++) {
            if (!nd->output[k][0]) continue;
            if (map_get(&prod, nd->output[k]) != -1) {
                proto_node_desc(nd, i, d, sizeof d);
                st = so_errorf("%s: tensor '%s' is produced more than once", d, nd->output[k]);
                goto done;
            }
            map_put(&prod, nd->output[k], (int32_t)i);
        }
    }
    for (size_t i = 0; i < n; i++) {
        const Onnx__NodeProto *nd = gp->node[i];
        for (size_t k = 0; k < nd->n_input; k++)
            if (nd->input[k][0] && map_get(&prod, nd->input[k]) == -1) {
                proto_node_desc(nd, i, d, sizeof d);
                st = so_errorf("%s: input '%s' is not produced by any node, initializer or graph input", d, nd->input[k]);
                goto done;
            }
    }
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *on = gp->output[i]->name;
        if (!on || map_get(&prod, on) == -1) {
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
                int32_t p = map_get(&prod, in);
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
    map_free(&prod);
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

static so_status read_inputs(imp *im, const Onnx__GraphProto *gp, strmap *inits)
{
    so_model *m = im->m;
    m->inputs = so_arena_alloc(&m->arena, (gp->n_input + 1) * sizeof *m->inputs);
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || !vi->name[0]) return so_errorf("graph input #%zu has no name", i);
        if (map_get(inits, vi->name) >= 0) continue;
        const Onnx__TypeProto *tp = vi->type;
        if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
            return so_errorf("input '%s' is not a tensor", vi->name);
        const Onnx__TensorShapeProto *sp = tp->tensor_type->shape;
        if (!sp) return so_errorf("input '%s' has no shape; superopt needs fixed shapes", vi->name);
        if (sp->n_dim > SO_MAX_RANK) return so_errorf("input '%s' has rank %zu (at most %d supported)", vi->name, sp->n_dim, SO_MAX_RANK);
        so_value_info *v = &m->inputs[m->n_inputs];
        v->name = so_arena_strdup(&m->arena, vi->name);
        v->shape.rank = (int32_t)sp->n_dim;
        v->shape.dtype = tp->tensor_type->elem_type ? tp->tensor_type->elem_type : SO_F32;
        int64_t numel = 1;
        for (size_t d = 0; d < sp->n_dim; d++) {
            const Onnx__TensorShapeProto__Dimension *dm = sp->dim[d];
            int64_t dv = dm->dim_value;
            if (dm->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
                if (so_onnx_symbolic_dim > 0) dv = so_onnx_symbolic_dim;
                else if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
                    return so_errorf("input '%s' has a symbolic dimension '%s'; superopt needs fixed shapes", vi->name, dm->dim_param);
                else
                    return so_errorf("input '%s' has an unknown dimension %zu; superopt needs fixed shapes", vi->name, d);
            }
            if (dv < 0) return so_errorf("input '%s' has a negative dimension %lld", vi->name, (long long)dv);
            if (dv > INT32_MAX) return so_errorf("input '%s' has an absurd dimension %lld", vi->name, (long long)dv);
            if (so_i64_mul(numel, dv, &numel)) return so_errorf("input '%s': element count overflows", vi->name);
            v->shape.dim[d] = dv;
        }
        size_t bytes;
        if (so_size_mul((size_t)numel, 8, &bytes) || bytes / 2 > so_max_alloc_bytes)
            return so_errorf("input '%s': %lld elements exceed the allocation limit (%zu bytes)", vi->name, (long long)numel, so_max_alloc_bytes);
        m->n_inputs++;
    }
    return SO_OK;
}

/* ======================================================================
   raw initializer bytes kept out of the protobuf-c unpack
   ====================================================================== */

/* protobuf-c copies every bytes field while unpacking, so unpacking a serialized model holds two
   copies of its weights (serialized + unpacked) before the converted one exists. strip_model
   instead writes a copy of the serialized model without the raw_data fields of graph.initializer
   (small: the metadata) and records where each raw_data lies in the original buffer; load_proto
   converts each initializer from there, then releases its pages when the buffer is our own
   mapping (so_onnx_load). The scan follows protobuf-c's wire rules; wherever it would have to
   guess (groups, overlong headers, a repeated graph field, which protobuf-c merges) it gives up
   and the whole buffer is unpacked as before, so both paths accept and reject the same inputs. */

typedef struct rawref {
    const uint8_t *data; /* into the serialized model (borrowed) */
    size_t len;
    int present;         /* the TensorProto had raw_data (the last one wins, as in protobuf-c) */
} rawref;

typedef struct rawset {
    rawref *r;           /* one per graph.initializer, in order */
    size_t n, cap;
    uint8_t *map;        /* our anonymous mapping holding the file (pages released after use), or NULL */
    size_t map_len;
} rawset;

typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
} wbuf;

static void wb_put(wbuf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = SO_MAX(b->cap * 2, b->n + n + 64);
        b->p = so_xrealloc(b->p, b->cap);
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void wb_varint(wbuf *b, uint64_t v)
{
    uint8_t t[10];
    size_t k = 0;
    do {
        t[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    wb_put(b, t, k);
}

/* The field starting at in[pos] (pos < n): tag decoded as protobuf-c decodes it (headers of at
   most 4 bytes accepted here), *hdr = end of the tag, *body = start of the payload (after the
   length prefix for wire type 2), *end = next field. 0 = give up. */
static int wire_field(const uint8_t *in, size_t n, size_t pos, uint32_t *field, int *wt, size_t *hdr, size_t *body, size_t *end)
{
    if ((in[pos] & 0xf8) == 0) return 0;
    uint32_t tag = (in[pos] & 0x7f) >> 3;
    *wt = in[pos] & 7;
    size_t k = 1;
    if (in[pos] & 0x80) {
        unsigned shift = 4;
        for (;; k++) {
            if (k >= 4 || pos + k >= n) return 0;
            tag |= (uint32_t)(in[pos + k] & 0x7f) << shift;
            shift += 7;
            if (!(in[pos + k] & 0x80)) break;
        }
        k++;
    }
    *field = tag;
    pos += k;
    *hdr = pos;
    switch (*wt) {
    case 0:
        for (k = 0;; k++) {
            if (k >= 10 || pos + k >= n) return 0;
            if (!(in[pos + k] & 0x80)) break;
        }
        *body = pos;
        *end = pos + k + 1;
        return 1;
    case 1: case 5: {
        size_t w = *wt == 1 ? 8 : 4;
        if (n - pos < w) return 0;
        *body = pos;
        *end = pos + w;
        return 1;
    }
    case 2: {
        uint64_t len = 0;
        for (k = 0;; k++) {
            if (k >= 5 || pos + k >= n) return 0;
            len |= (uint64_t)(in[pos + k] & 0x7f) << (7 * k);
            if (!(in[pos + k] & 0x80)) break;
        }
        pos += k + 1;
        if (len > INT_MAX || len > n - pos) return 0;
        *body = pos;
        *end = pos + (size_t)len;
        return 1;
    }
    default:
        return 0; /* groups and invalid wire types: left to protobuf-c */
    }
}

/* TensorProto: everything but raw_data (field 9) copied to out. */
static int strip_tensor(const uint8_t *in, size_t n, wbuf *out, rawref *r)
{
    for (size_t pos = 0; pos < n;) {
        uint32_t f;
        int wt;
        size_t hdr, body, end;
        if (!wire_field(in, n, pos, &f, &wt, &hdr, &body, &end)) return 0;
        if (f == 9 && wt == 2) {
            r->data = in + body;
            r->len = end - body;
            r->present = 1;
        } else {
            wb_put(out, in + pos, end - pos);
        }
        pos = end;
    }
    return 1;
}

/* GraphProto: each initializer (field 5) re-encoded through strip_tensor; other fields verbatim. */
static int strip_graph(const uint8_t *in, size_t n, wbuf *out, rawset *rs)
{
    wbuf t = {0};
    int ok = 1;
    for (size_t pos = 0; pos < n;) {
        uint32_t f;
        int wt;
        size_t hdr, body, end;
        if (!wire_field(in, n, pos, &f, &wt, &hdr, &body, &end)) { ok = 0; break; }
        if (f == 5 && wt == 2) {
            if (rs->n == rs->cap) {
                rs->cap = rs->cap ? rs->cap * 2 : 64;
                rs->r = so_xrealloc(rs->r, rs->cap * sizeof *rs->r);
            }
            rawref *r = &rs->r[rs->n++];
            memset(r, 0, sizeof *r);
            t.n = 0;
            if (!strip_tensor(in + body, end - body, &t, r)) { ok = 0; break; }
            wb_put(out, in + pos, hdr - pos);
            wb_varint(out, t.n);
            wb_put(out, t.p, t.n);
        } else {
            wb_put(out, in + pos, end - pos);
        }
        pos = end;
    }
    free(t.p);
    return ok;
}

/* ModelProto: the graph (field 7, at most once) re-encoded through strip_graph. 1 = *out holds
   the stripped model and rs the raw_data locations; 0 = unpack the original instead. */
static int strip_model(const uint8_t *in, size_t n, wbuf *out, rawset *rs)
{
    wbuf g = {0};
    int ok = 1, seen = 0;
    for (size_t pos = 0; pos < n;) {
        uint32_t f;
        int wt;
        size_t hdr, body, end;
        if (!wire_field(in, n, pos, &f, &wt, &hdr, &body, &end)) { ok = 0; break; }
        if (f == 7 && wt == 2) {
            if (seen++ || !strip_graph(in + body, end - body, &g, rs)) { ok = 0; break; }
            wb_put(out, in + pos, hdr - pos);
            wb_varint(out, g.n);
            wb_put(out, g.p, g.n);
        } else {
            wb_put(out, in + pos, end - pos);
        }
        pos = end;
    }
    free(g.p);
    if (!ok) {
        free(rs->r);
        rs->r = NULL;
        rs->n = rs->cap = 0;
    }
    return ok;
}

/* Unpacks buf, keeping graph.initializer raw_data out of the message when possible (rs). */
static Onnx__ModelProto *unpack_model(const uint8_t *buf, size_t len, rawset *rs)
{
    wbuf w = {0};
    if (!len || !strip_model(buf, len, &w, rs)) {
        free(w.p);
        return onnx__model_proto__unpack(NULL, len, buf);
    }
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, w.n, w.p ? w.p : (const uint8_t *)"");
    free(w.p);
    if (!mp || (rs->r && (!mp->graph || mp->graph->n_initializer != rs->n))) {
        /* a rejected model is judged on its original bytes; a count mismatch cannot happen
           (same fields) but would fall back too */
        if (mp) onnx__model_proto__free_unpacked(mp, NULL);
        free(rs->r);
        rs->r = NULL;
        rs->n = rs->cap = 0;
        mp = onnx__model_proto__unpack(NULL, len, buf);
    }
    return mp;
}

/* Gives back the whole pages of our mapping that initializer bytes [d, d+len) occupied. */
static void release_raw(const rawset *rs, const uint8_t *d, size_t len)
{
    if (!rs->map || !len) return;
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)d + pg - 1) & ~(pg - 1), b = ((uintptr_t)d + len) & ~(pg - 1);
    if (b > a) (void)madvise((void *)a, b - a, MADV_DONTNEED);
}

/* Imports an unpacked model (mp may be NULL: parse failure). Frees mp; raw initializer bytes
   (in mp, or where rs says when unpack_model kept them out) are released as soon as they are
   converted, to keep the peak memory near one model copy. */
static so_status load_proto(const char *path, Onnx__ModelProto *mp, const rawset *rs, so_model **out)
{
    imp im;
    memset(&im, 0, sizeof im);
    so_status st = SO_ERR;
    so_model *m = NULL;
    size_t *order = NULL;
    strmap inits = {0};
    const char *p = path ? path : "<memory>";
    im.path = p;
    *out = NULL;

    if (!mp) {
        so_errorf("not a valid ONNX model (protobuf parse failed)");
        goto done;
    }
    Onnx__GraphProto *gp = mp->graph;
    if (!gp) {
        so_errorf("not a valid ONNX model (no graph)");
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
            if (is_default_domain(o->domain)) m->opset = o->version > m->opset ? o->version : m->opset;
            else ex[extra.n_opset_import++] = o;
        }
        extra.opset_import = ex;
        if (extra.n_opset_import) {
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
    im.opset = m->opset;

    /* names of value_info and outputs (for opaque shapes) */
    im.n_vis = gp->n_value_info + gp->n_output;
    im.vis = so_xcalloc(im.n_vis + 1, sizeof *im.vis);
    for (size_t i = 0; i < gp->n_value_info; i++) im.vis[i] = gp->value_info[i];
    for (size_t i = 0; i < gp->n_output; i++) im.vis[gp->n_value_info + i] = gp->output[i];
    for (size_t i = 0; i < im.n_vis; i++)
        if (im.vis[i]->name) map_put(&im.vinfo, im.vis[i]->name, (int32_t)i);

    for (size_t i = 0; i < gp->n_initializer; i++) {
        const char *nm = gp->initializer[i]->name;
        if (!nm || !nm[0]) {
            so_errorf("initializer #%zu has no name", i);
            goto done;
        }
        if (map_get(&inits, nm) >= 0) {
            so_errorf("initializer '%s' appears twice", nm);
            goto done;
        }
        map_put(&inits, nm, (int32_t)i);
    }
    if (read_inputs(&im, gp, &inits) != SO_OK) goto done;
    if (order_nodes(gp, &order) != SO_OK) goto done;

    m->n_outputs = (int32_t)gp->n_output;
    m->outputs = so_arena_alloc(&m->arena, (gp->n_output + 1) * sizeof *m->outputs);
    for (size_t i = 0; i < gp->n_output; i++) m->outputs[i].name = so_arena_strdup(&m->arena, gp->output[i]->name);
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
        bind_edge(&im, m->inputs[i].name, nd, 0);
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
        so_status ts = tensor_from_proto(&im, t, what, &c);
        if (r) {
            t->has_raw_data = 0;
            t->raw_data.data = NULL;
            t->raw_data.len = 0;
            release_raw(rs, r->data, r->len);
        } else if (t->has_raw_data && t->raw_data.data) {
            free(t->raw_data.data); /* protobuf-c's default allocator is malloc */
            t->raw_data.data = NULL;
            t->raw_data.len = 0;
        }
        if (ts != SO_OK) goto done;
        bind_const(&im, t->name, &c);
    }
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *nd = gp->node[order[i]];
        im.cur = nd;
        proto_node_desc(nd, order[i], im.desc, sizeof im.desc);
        if (import_node(&im, nd) != SO_OK) goto done;
    }
    for (int32_t o = 0; o < m->n_outputs; o++) {
        val *v = lookup(&im, m->outputs[o].name);
        if (!v) {
            so_errorf("graph output '%s' is not produced", m->outputs[o].name);
            goto done;
        }
        im.g->outputs[o] = materialize(&im, v);
    }
    if (so_graph_toposort(im.g) != SO_OK) goto done;
    if (so_graph_infer_all(im.g) != SO_OK) goto done;
    so_graph_dce(im.g);
    compact_weights(m, im.g);
    canonical_opaque(m, im.g);
    for (int32_t o = 0; o < m->n_outputs; o++) m->outputs[o].shape = im.g->nodes[im.g->outputs[o].node].out[im.g->outputs[o].slot];
    st = SO_OK;
done:
    if (st != SO_OK) {
        so_error_prefix(p);
        one_line_error();
        so_model_free(m);
        m = NULL;
    }
    free_vals(&im);
    map_free(&im.names);
    map_free(&im.vinfo);
    map_free(&inits);
    free(im.vis);
    free(im.dir);
    free(order);
    if (mp) onnx__model_proto__free_unpacked(mp, NULL);
    *out = m;
    return st;
}

so_status so_onnx_load_buffer(const char *path, const void *buf, size_t len, so_model **out)
{
    rawset rs = {0};
    so_status st = load_proto(path, unpack_model(buf, len, &rs), &rs, out);
    free(rs.r);
    return st;
}

/* The file is read into an anonymous mapping rather than a malloc block so that the pages of each
   initializer can be given back as soon as it is converted (release_raw): the peak is then about
   one copy of the weights plus the metadata, not serialized + unpacked + converted. */
so_status so_onnx_load(const char *path, so_model **out)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return so_errorf("%s: cannot open: %s", path, strerror(errno));
    so_status st = SO_ERR;
    rawset rs = {0};
    uint8_t *buf = NULL;
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        so_errorf("%s: cannot open: not a regular file", path);
        goto done;
    }
    size_t len = (size_t)sb.st_size;
    if (len > so_max_alloc_bytes) {
        so_errorf("%s: file of %zu bytes exceeds the allocation limit (%zu bytes)", path, len, so_max_alloc_bytes);
        goto done;
    }
    if (len) {
        void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
            so_errorf("%s: out of memory reading %zu bytes", path, len);
            goto done;
        }
        buf = rs.map = m;
        rs.map_len = len;
    }
    if (len && fread(buf, 1, len, f) != len) {
        so_errorf("%s: cannot read: %s", path, strerror(errno ? errno : EIO));
        goto done;
    }
    fclose(f);
    f = NULL;
    Onnx__ModelProto *mp = unpack_model(buf ? buf : (const uint8_t *)"", len, &rs);
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

/* ======================================================================
   export
   ====================================================================== */

typedef struct exporter {
    so_arena ar;                 /* every proto struct, array and string of the export */
    so_graph *g;                 /* clone of the graph: toposorted, dead nodes removed */
    so_model *m;
    int64_t opset;
    int layout_ops;              /* a node of SO_ONNX_LAYOUT_DOMAIN was written: import that domain */
    strmap used, used_nodes;     /* tensor / node names taken */
    strmap next_used, next_nodes; /* per base name: first suffix ex_unique tries */
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
    Onnx__NodeProto **unpacked;  /* opaque nodes unpacked from their blobs */
    size_t n_unpacked;
    char desc[300];              /* node being exported, for messages */
    int io_err;                  /* the message is so_atomic's, which names the path already */
} exporter;

static char *ex_strdup(exporter *x, const char *s) { return so_arena_strdup(&x->ar, s); }

/* Unique name from base in map `used`: base itself, else base_K with the smallest free K >= 1.
   `next` remembers per base the K to try first: names are never released, so every smaller K is
   still taken, and n names from one base cost O(n) instead of O(n^2). */
static const char *ex_unique(exporter *x, strmap *used, strmap *next, const char *base)
{
    if (map_get(used, base) < 0) {
        char *s = ex_strdup(x, base);
        map_put(used, s, 1);
        return s;
    }
    int32_t k0 = map_get(next, base);
    size_t len = strlen(base) + 24;
    char *s = so_arena_alloc(&x->ar, len);
    long k = k0 > 0 ? k0 : 1;
    for (;; k++) {
        snprintf(s, len, "%s_%ld", base, k);
        if (map_get(used, s) < 0) break;
    }
    map_put(used, s, 1);
    if (k < INT32_MAX) map_put(next, k0 > 0 ? base : ex_strdup(x, base), (int32_t)(k + 1)); /* key kept when present */
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
    if (!t || t == native || storage_of(t) != wt->shape.dtype) {
        mk_init_named(x, x->wname[w], native, &wt->shape, wt->data, (size_t)cnt * (native == T_INT64 ? 8 : 4));
        return;
    }
    size_t es = onnx_elem_size(t);
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
    if (j != nd->n_in) return ex_err(x, "opaque node has more inputs than its ONNX form");
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
    if (so_ref_eval_node(x->g, i, in, out) != SO_OK) return ex_err(x, "cannot fold internal operator: %s", so_error());
    x->fdata[i] = out[0].data;
    int64_t cnt = so_shape_numel(&nd->out[0]);
    size_t es = nd->out[0].dtype == SO_I64 ? 8 : 4;
    mk_init_named(x, tname(x, (so_edge){i, 0}), nd->out[0].dtype == SO_I64 ? T_INT64 : T_FLOAT, &nd->out[0], out[0].data, (size_t)cnt * es);
    return SO_OK;
}

static so_status export_node(exporter *x, int32_t i)
{
    const so_node *nd = &x->g->nodes[i];
    const so_attr *a = nd->attr;
    so_op op = nd->op;
    const int layout = (so_ops[op].flags & SO_F_LAYOUT) != 0; /* our blocked-layout ops: custom domain, table name */
    const char *ot = layout ? so_ops[op].name : so_ops[op].onnx;
    const char *base = nd->name && nd->name[0] ? nd->name : so_ops[op].name;
    so_shape xs = nd->n_in ? x->g->nodes[nd->in[0].node].out[nd->in[0].slot] : (so_shape){.rank = -1};
    int act = (so_ops[op].flags & SO_F_ACT) && a->act != SO_ACT_NONE;
    const char *final0 = tname(x, (so_edge){i, 0});
    const char *main0 = act ? ex_name2(x, final0, "_preact") : final0;
    Onnx__NodeProto *n;

    if (!ot) return ex_err(x, "operator '%s' has no ONNX form", so_ops[op].name);
    if (op == SO_OP_SOFTMAX && x->opset < 13 && xs.rank >= 0 && a->axis != xs.rank - 1) {
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
        n = mk_node(x, "Softmax", base);
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
    if (op == SO_OP_LSTM) data_inputs = nd->n_in < 4 ? nd->n_in : 4;
    for (int k = 0; k < data_inputs; k++) n_in(n, tname(x, nd->in[k]));
    for (int k = 0; k < nd->n_out; k++) n_out(n, k == 0 ? main0 : tname(x, (so_edge){i, k}));

    switch (op) {
    case SO_OP_NCHWC_IN:
    case SO_OP_NCHWC_OUT:
        a_int(x, n, "block", a->ints[0]);
        if (op == SO_OP_NCHWC_OUT) a_int(x, n, "channels", a->ints[1]);
        break;
    case SO_OP_CONCAT_NCHWC:
        a_int(x, n, "block", a->ints[0]);
        a_ints(x, n, "channels", a->ints + 1, a->n_ints - 1);
        break;
    case SO_OP_CONV_NCHWC:
    case SO_OP_CONV: {
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
        break;
    }
    case SO_OP_GEMM:
        a_float(x, n, "alpha", a->alpha);
        a_float(x, n, "beta", a->beta);
        if (a->trans_a) a_int(x, n, "transA", 1);
        if (a->trans_b) a_int(x, n, "transB", 1);
        break;
    case SO_OP_CLIP:
        clip_params(x, n, base, a->clip_min, a->clip_max);
        break;
    case SO_OP_RESIZE: {
        a_str(x, n, "mode", a->mode ? "linear" : "nearest");
        const float sc[4] = {1, 1, a->alpha, a->beta};
        if (x->opset < 11) {
            if (a->ints[0] != SO_RESIZE_ASYMMETRIC || a->ints[2])
                return ex_err(x, "Resize with coordinate_transformation_mode %s or sizes needs opset >= 11",
                              so_resize_coord_names[a->ints[0]]);
            n_in(n, init_f32v(x, base, "_scales", sc, 4));
            break;
        }
        a_str(x, n, "coordinate_transformation_mode", so_resize_coord_names[a->ints[0]]);
        if (a->mode == 0) a_str(x, n, "nearest_mode", so_resize_nearest_names[a->ints[1]]);
        n_in(n, x->opset < 13 ? init_f32v(x, base, "_roi", NULL, 0) : ""); /* roi: an input until opset 13 */
        if (a->ints[2]) {
            const so_shape *o = &x->g->nodes[i].out[0];
            n_in(n, x->opset < 13 ? init_f32v(x, base, "_scales", NULL, 0) : "");
            n_in(n, init_i64(x, base, "_sizes", o->dim, 4));
        } else
            n_in(n, init_f32v(x, base, "_scales", sc, 4));
        break;
    }
    case SO_OP_HARDSIGMOID:
        a_float(x, n, "alpha", a->alpha);
        a_float(x, n, "beta", a->beta);
        break;
    case SO_OP_LEAKYRELU:
        a_float(x, n, "alpha", a->alpha);
        break;
    case SO_OP_BATCHNORM:
        a_float(x, n, "epsilon", a->epsilon);
        break;
    case SO_OP_MAXPOOL_NCHWC:
    case SO_OP_AVGPOOL_NCHWC:
    case SO_OP_MAXPOOL:
    case SO_OP_AVGPOOL: {
        int32_t pst[2] = {a->stride[0] > 0 ? a->stride[0] : 1, a->stride[1] > 0 ? a->stride[1] : 1};
        a_ints32(x, n, "kernel_shape", a->kernel, 2);
        a_ints32(x, n, "strides", pst, 2);
        a_ints32(x, n, "pads", a->pad, 4);
        if ((op == SO_OP_MAXPOOL || op == SO_OP_MAXPOOL_NCHWC) && (a->dilation[0] > 1 || a->dilation[1] > 1)) {
            if (x->opset < 10) return ex_err(x, "MaxPool dilations need opset >= 10");
            a_ints32(x, n, "dilations", a->dilation, 2);
        }
        if (a->ceil_mode) {
            if (x->opset < 10) return ex_err(x, "ceil_mode needs opset >= 10");
            a_int(x, n, "ceil_mode", 1);
        }
        if ((op == SO_OP_AVGPOOL || op == SO_OP_AVGPOOL_NCHWC) && a->count_include_pad) a_int(x, n, "count_include_pad", 1);
        break;
    }
    case SO_OP_SOFTMAX:
    case SO_OP_CONCAT:
    case SO_OP_FLATTEN:
    case SO_OP_GATHER:
        a_int(x, n, "axis", a->axis);
        break;
    case SO_OP_REDUCEMEAN:
    case SO_OP_REDUCESUM:
        axes_param(x, n, base, a->ints, a->n_ints, op == SO_OP_REDUCESUM ? 13 : 18);
        a_int(x, n, "keepdims", a->keepdims);
        break;
    case SO_OP_LAYERNORM:
        if (x->opset < 17) return ex_err(x, "LayerNormalization needs opset >= 17 (model has opset %lld)", (long long)x->opset);
        a_int(x, n, "axis", a->axis);
        a_float(x, n, "epsilon", a->epsilon);
        break;
    case SO_OP_PAD: {
        static const char *const modes[3] = {"constant", "reflect", "edge"};
        if (a->mode < 0 || a->mode > 2) return ex_err(x, "unknown pad mode %d", a->mode);
        if (x->opset < 11) {
            a_str(x, n, "mode", modes[a->mode]);
            a_ints(x, n, "pads", a->ints, a->n_ints);
            if (a->value != 0) a_float(x, n, "value", a->value);
        } else {
            n_in(n, init_i64(x, base, "_pads", a->ints, a->n_ints));
            if (a->mode == 0 && a->value != 0) n_in(n, init_f32(x, base, "_value", a->value));
            if (a->mode != 0) a_str(x, n, "mode", modes[a->mode]);
        }
        break;
    }
    case SO_OP_SPLIT:
        a_int(x, n, "axis", a->axis);
        if (x->opset >= 13) n_in(n, init_i64(x, base, "_split", a->ints, a->n_ints));
        else a_ints(x, n, "split", a->ints, a->n_ints);
        break;
    case SO_OP_RESHAPE: {
        int zero = 0;
        for (int k = 0; k < a->n_ints; k++) zero |= a->ints[k] == 0;
        if (zero && x->opset < 14) return ex_err(x, "Reshape to a shape with a zero dimension needs opset >= 14");
        n_in(n, init_i64(x, base, "_shape", a->ints, a->n_ints));
        if (zero) a_int(x, n, "allowzero", 1);
        break;
    }
    case SO_OP_TRANSPOSE:
        a_ints(x, n, "perm", a->ints, a->n_ints);
        break;
    case SO_OP_SQUEEZE:
    case SO_OP_UNSQUEEZE:
        axes_param(x, n, base, a->ints, a->n_ints, 13);
        break;
    case SO_OP_EXPAND:
        n_in(n, init_i64(x, base, "_shape", a->ints, a->n_ints));
        break;
    case SO_OP_SLICE: {
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
        break;
    }
    case SO_OP_LSTM: {
        static const char *const dirs[3] = {"forward", "reverse", "bidirectional"};
        a_int(x, n, "hidden_size", a->hidden);
        if (a->direction) a_str(x, n, "direction", dirs[a->direction == 1 ? 1 : 2]);
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
        break;
    }
    default:
        break;
    }
    if (act) {
        static const char *const acts[SO_ACT_COUNT] = {NULL, "Relu", "Sigmoid", "Tanh", "Clip"};
        if (a->act <= 0 || a->act >= SO_ACT_COUNT) return ex_err(x, "unknown fused activation %d", a->act);
        Onnx__NodeProto *an = mk_node(x, acts[a->act], ex_name2(x, base, "_act"));
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
        map_put(&x->used, x->in_names[i], 1);
    }
    for (int32_t o = 0; o < m->n_outputs; o++) {
        char b[32];
        snprintf(b, sizeof b, "output_%d", (int)o);
        x->out_names[o] = m->outputs[o].name && m->outputs[o].name[0] ? ex_strdup(x, m->outputs[o].name) : ex_strdup(x, b);
        map_put(&x->used, x->out_names[o], 1);
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
    }
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const so_node *nd = &g->nodes[i];
        if (nd->op != SO_OP_WEIGHT) continue;
        if (!x->wname[nd->ref]) {
            const char *wn = m->weights[nd->ref].name;
            x->wname[nd->ref] = ex_name(x, wn && wn[0] ? wn : "weight");
        }
        x->tname[x->toff[i]] = x->wname[nd->ref];
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
        strmap read = {0};
        for (size_t k = 0; k < x->n_nodes; k++)
            for (size_t j = 0; j < x->nodes[k]->n_input; j++)
                if (x->nodes[k]->input[j][0]) map_put(&read, x->nodes[k]->input[j], 1);
        for (int32_t i = 0; i < g->n_nodes; i++)
            if (g->nodes[i].op == SO_OP_WEIGHT && map_get(&read, x->wname[g->nodes[i].ref]) >= 0) emit_weight(x, g->nodes[i].ref);
        map_free(&read);
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
    for (int32_t i = 0; i < m->n_inputs; i++) gp->input[i] = mk_value_info(x, x->in_names[i], &m->inputs[i].shape);
    gp->n_output = (size_t)m->n_outputs;
    gp->output = so_arena_alloc(&x->ar, ((size_t)m->n_outputs + 1) * sizeof *gp->output);
    for (int32_t o = 0; o < m->n_outputs; o++) {
        so_edge e = g->outputs[o];
        gp->output[o] = mk_value_info(x, x->out_names[o], &g->nodes[e.node].out[e.slot]);
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
        one_line_error();
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
    map_free(&x.used);
    map_free(&x.used_nodes);
    map_free(&x.next_used);
    map_free(&x.next_nodes);
    so_graph_free(x.g);
    so_arena_free(&x.ar);
    return st;
}
