/* onnx_tensor.c - ONNX TensorProto (typed fields, raw and external data) into constant tensors. */
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
   TensorProto -> constant (raw_data, typed fields, external data)
   ====================================================================== */

static so_status read_external(imp *im, const Onnx__TensorProto *t, const char *what, size_t need, uint8_t *dst)
{
    const char *loc = NULL;
    long long off = 0, len = -1;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *kv = t->external_data[i];
        if (!kv->key || !kv->value) continue;
        if (strcmp(kv->key, "location") == 0) loc = kv->value;
        else if (strcmp(kv->key, "offset") == 0 || strcmp(kv->key, "length") == 0) {
            long long x;
            if (so_parse_int(kv->value, 0, LLONG_MAX, &x))
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
    char *full = so_xmalloc(plen), *real = NULL;
    snprintf(full, plen, "%s/%s", im->dir, loc);
    so_status st = SO_OK;
    FILE *f = NULL;
    /* The text checks above see only the path as written; a symlink (file or folder) can still
       lead out. So the file is resolved (realpath) and must lie inside the real path of the
       model's folder, and the resolved path is what is opened: non-blocking (a FIFO never
       hangs the import) and regular files only. */
    if (!im->realdir && !(im->realdir = realpath(im->dir, NULL))) {
        st = so_errorf("%s: the model's folder '%s' cannot be resolved: %s", what, im->dir, strerror(errno));
        goto done;
    }
    if (!(real = realpath(full, NULL))) {
        st = so_errorf("%s: external data file '%s' cannot be opened: %s", what, full, strerror(errno));
        goto done;
    }
    size_t dl = strlen(im->realdir);
    if (strncmp(real, im->realdir, dl) != 0 || (real[dl] != '/' && !(dl == 1 && im->realdir[0] == '/'))) {
        st = so_errorf("%s: external data file '%s' resolves to '%s', outside the model's folder '%s'", what, full, real, im->realdir);
        goto done;
    }
    struct stat sb;
    if (!(f = so_open_regular(real, &sb))) {
        st = so_errorf("%s: external data file '%s' %s", what, full,
                       strstr(so_error(), "not a regular file") ? "is not a regular file" : "cannot be opened");
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
    im->m->n_external++;
done:
    if (f) fclose(f);
    free(full);
    free(real);
    return st;
}

/* Decodes a TensorProto. `what` names it in messages ("initializer 'w'"). */
so_status onx_tensor_from_proto(imp *im, const Onnx__TensorProto *t, const char *what, ctensor *out)
{
    memset(out, 0, sizeof *out);
    int32_t type = t->has_data_type ? t->data_type : 0;
    int st = onx_storage_of(type);
    uint8_t *tmp = NULL;
    if (!st) return so_errorf("%s: unsupported data type %s (%d)", what, onx_onnx_type_name(type), (int)type);
    if (t->n_dims > SO_MAX_RANK) return so_errorf("%s has rank %zu (at most %d supported)", what, t->n_dims, SO_MAX_RANK);
    int64_t numel = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0) return so_errorf("%s has a negative dimension %lld", what, (long long)t->dims[i]);
        if (t->dims[i] > INT32_MAX) return so_errorf("%s has an absurd dimension %lld", what, (long long)t->dims[i]);
        if (so_i64_mul(numel, t->dims[i], &numel)) return so_errorf("%s: element count overflows", what);
    }
    size_t es = onx_onnx_elem_size(type), sbytes = st == SO_I64 ? 8 : 4, bytes, need;
    if (so_size_mul((size_t)numel, SO_MAX(es, sbytes), &bytes) || bytes > so_max_alloc_bytes)
        return so_errorc(SO_ERR_LIMIT, "%s: %lld elements exceed the allocation limit (%zu bytes)", what, (long long)numel, so_max_alloc_bytes);
    need = (size_t)numel * es;
    out->shape.rank = (int32_t)t->n_dims;
    out->shape.dtype = st;
    for (size_t i = 0; i < t->n_dims; i++) out->shape.dim[i] = t->dims[i];
    out->otype = type;
    out->data = so_weight_alloc((size_t)numel * sbytes, 0);
    if (!out->data) return so_errorf("%s: out of memory", what);

    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        tmp = malloc(need + 1);
        if (!tmp) { so_errorf("%s: out of memory", what); goto fail; }
        if (read_external(im, t, what, need, tmp) != SO_OK) goto fail;
        onx_convert_raw(tmp, type, numel, out->data);
        free(tmp);
        return SO_OK;
    }
    if (t->has_raw_data) {
        if (t->raw_data.len != need) {
            char sb[128];
            so_errorf("%s: raw_data has %zu bytes but shape %s of %s needs %zu bytes", what, t->raw_data.len,
                      so_shape_str(&out->shape, sb, sizeof sb), onx_onnx_type_name(type), need);
            goto fail;
        }
        onx_convert_raw(t->raw_data.data, type, numel, out->data);
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
        case T_FLOAT16: ((float *)out->data)[i] = onx_half_to_float((uint16_t)t->int32_data[i]); break;
        case T_BFLOAT16: ((float *)out->data)[i] = onx_bf16_to_float((uint16_t)t->int32_data[i]); break;
        case T_INT64: ((int64_t *)out->data)[i] = t->int64_data[i]; break;
        case T_UINT32: case T_UINT64: ((int64_t *)out->data)[i] = (int64_t)t->uint64_data[i]; break;
        default: ((int64_t *)out->data)[i] = onx_wrap_int(t->int32_data[i], type); break;
        }
    }
    return SO_OK;
fail:
    free(tmp);
    free(out->data);
    out->data = NULL;
    return SO_ERR;
}
