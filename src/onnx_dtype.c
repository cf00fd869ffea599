/* onnx_dtype.c - ONNX element types, conversions to float32/int64 storage, constant-tensor element access and broadcasting. */
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
   element types
   ====================================================================== */

/* Storage class used for a constant of ONNX type t: SO_F32, SO_I64, or 0 (unsupported). */
int onx_storage_of(int32_t t)
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

size_t onx_onnx_elem_size(int32_t t)
{
    switch (t) {
    case T_UINT8: case T_INT8: case T_BOOL: return 1;
    case T_UINT16: case T_INT16: case T_FLOAT16: case T_BFLOAT16: return 2;
    case T_FLOAT: case T_INT32: case T_UINT32: return 4;
    case T_INT64: case T_DOUBLE: case T_UINT64: return 8;
    default: return 0;
    }
}

const char *onx_onnx_type_name(int32_t t)
{
    static const char *const names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16",
                                        "INT32", "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE",
                                        "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
    if (t >= 0 && (size_t)t < SO_ARRAY_LEN(names)) return names[t];
    return "unknown";
}

float onx_half_to_float(uint16_t h)
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

float onx_bf16_to_float(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* float -> int64 the way a C cast would, saturating instead of undefined behaviour. */
int64_t onx_f2i(double f)
{
    if (f != f) return 0;
    if (f >= 9.2233720368547758e18) return INT64_MAX;
    if (f <= -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)f;
}

/* Wraps an integer into the range of ONNX integer type t (Cast semantics). */
int64_t onx_wrap_int(int64_t v, int32_t t)
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
void onx_convert_raw(const uint8_t *src, int32_t t, int64_t n, void *dst)
{
    size_t es = onx_onnx_elem_size(t);
    if (onx_storage_of(t) == SO_F32) {
        float *d = dst;
        for (int64_t i = 0; i < n; i++, src += es) {
            if (t == T_FLOAT) memcpy(&d[i], src, 4);
            else if (t == T_DOUBLE) { double x; memcpy(&x, src, 8); d[i] = (float)x; }
            else { uint16_t h; memcpy(&h, src, 2); d[i] = t == T_FLOAT16 ? onx_half_to_float(h) : onx_bf16_to_float(h); }
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


int64_t onx_ct_numel(const ctensor *c) { return so_shape_numel(&c->shape); }
int onx_ct_isint(const ctensor *c) { return c->shape.dtype == SO_I64; }

double onx_ct_getf(const ctensor *c, int64_t i)
{
    return onx_ct_isint(c) ? (double)((const int64_t *)c->data)[i] : (double)((const float *)c->data)[i];
}

int64_t onx_ct_geti(const ctensor *c, int64_t i)
{
    return onx_ct_isint(c) ? ((const int64_t *)c->data)[i] : onx_f2i(((const float *)c->data)[i]);
}

/* Element offset in shape `a` (right-aligned numpy broadcast) of flat index i of shape o. */
int64_t onx_bcast_off(const so_shape *o, const so_shape *a, int64_t i)
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
int onx_bshape(const so_shape *a, const so_shape *b, so_shape *o)
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
