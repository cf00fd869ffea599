/* onnx_tfile.c - tensor files of ONNX's test_data_set layout (one serialized TensorProto each): read, write, and graph inputs bound to given values. */
#include "onnx_priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int supported_type(int32_t t) { return t == T_FLOAT || t == T_INT64 || t == T_INT32 || t == T_BOOL; }

so_status so_onnx_tensor_read(const char *path, so_tfile *out)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return so_errorc(SO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    so_status st = SO_ERR;
    uint8_t *buf = NULL;
    Onnx__TensorProto *t = NULL;
    if (fseek(f, 0, SEEK_END) != 0) goto io;
    long len = ftell(f);
    if (len < 0 || fseek(f, 0, SEEK_SET) != 0) goto io;
    if ((size_t)len > so_max_alloc_bytes) {
        st = so_errorc(SO_ERR_LIMIT, "%s: file of %ld bytes exceeds the allocation limit (%zu bytes)", path, len, so_max_alloc_bytes);
        goto done;
    }
    buf = so_xmalloc((size_t)len + 1);
    if (len && fread(buf, 1, (size_t)len, f) != (size_t)len) goto io;
    t = onnx__tensor_proto__unpack(NULL, (size_t)len, buf);
    if (!t) {
        st = so_errorc(SO_ERR_PARSE, "%s: not a serialized ONNX TensorProto", path);
        goto done;
    }
    int32_t type = t->has_data_type ? t->data_type : 0;
    if (!supported_type(type)) {
        st = so_errorc(SO_ERR_UNSUPPORTED, "%s: tensor of type %s is not supported (float32, int64, int32 and bool are)", path,
                       onx_onnx_type_name(type));
        goto done;
    }
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        st = so_errorc(SO_ERR_UNSUPPORTED, "%s: tensor with external data is not supported here", path);
        goto done;
    }
    imp im;
    memset(&im, 0, sizeof im);
    im.path = path;
    ctensor c;
    if (onx_tensor_from_proto(&im, t, path, &c) != SO_OK) goto done;
    out->shape = c.shape;
    out->onnx_type = type;
    out->data = c.data;
    st = SO_OK;
    goto done;
io:
    st = so_errorc(SO_ERR_IO, "%s: cannot read: %s", path, strerror(errno ? errno : EIO));
done:
    if (t) onnx__tensor_proto__free_unpacked(t, NULL);
    free(buf);
    fclose(f);
    return st;
}

so_status so_onnx_tensor_write(const char *path, const char *name, const so_tfile *x)
{
    if (!supported_type(x->onnx_type))
        return so_errorf("%s: cannot write a tensor of type %s", path, onx_onnx_type_name(x->onnx_type));
    int64_t n = so_shape_numel(&x->shape);
    if (n < 0) return so_errorf("%s: tensor of unknown shape", path);
    size_t es = onx_onnx_elem_size(x->onnx_type);
    uint8_t *raw = so_xmalloc((size_t)n * es + 1);
    for (int64_t i = 0; i < n; i++) {
        if (x->onnx_type == T_FLOAT) {
            memcpy(raw + 4 * i, (const float *)x->data + i, 4);
            continue;
        }
        int64_t v = ((const int64_t *)x->data)[i];
        if (x->onnx_type == T_INT64) memcpy(raw + 8 * i, &v, 8);
        else if (x->onnx_type == T_INT32) {
            int32_t w = (int32_t)v;
            memcpy(raw + 4 * i, &w, 4);
        } else raw[i] = v != 0;
    }
    int64_t dims[SO_MAX_RANK];
    for (int d = 0; d < x->shape.rank; d++) dims[d] = x->shape.dim[d];
    Onnx__TensorProto t = ONNX__TENSOR_PROTO__INIT;
    t.n_dims = (size_t)x->shape.rank;
    t.dims = dims;
    t.has_data_type = 1;
    t.data_type = x->onnx_type;
    t.name = (char *)(name ? name : "");
    t.has_raw_data = 1;
    t.raw_data.data = raw;
    t.raw_data.len = (size_t)n * es;
    size_t len = onnx__tensor_proto__get_packed_size(&t);
    uint8_t *buf = so_xmalloc(len + 1);
    onnx__tensor_proto__pack(&t, buf);
    so_status st = so_write_file_atomic(path, buf, len);
    free(buf);
    free(raw);
    return st;
}

/* ======================================================================
   graph inputs bound by position (so_onnx_bind_inputs)
   ====================================================================== */

static const so_tfile *bound;
static int n_bound, bind_active;
static unsigned char *as_const; /* [n_bound]: the last load made value k a constant */

void so_onnx_bind_inputs(const so_tfile *values, int n, int active)
{
    bound = values;
    n_bound = active ? n : 0;
    bind_active = active;
    free(as_const);
    as_const = n_bound ? so_xcalloc((size_t)n_bound, 1) : NULL;
}

void onx_mark_const_input(int position)
{
    if (position < n_bound) as_const[position] = 1;
}

int so_onnx_input_bound_const(int position) { return position < n_bound && as_const[position]; }

const so_tfile *onx_bound_input(int position) { return position < n_bound ? &bound[position] : NULL; }

int onx_bound_count(void) { return bind_active ? n_bound : -1; }
