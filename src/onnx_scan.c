/* onnx_scan.c - wire-format pre-scan of a serialized ONNX ModelProto: how deep its messages nest, measured without recursion before protobuf-c's recursive unpack can overflow the stack. */
#include "onnx_scan.h"

#include "common.h"

#include <stdlib.h>

/* The message types through which ONNX messages nest (field numbers from onnx.proto, the Debian
   libonnx-dev copy the protobuf-c code is generated from: exactly the fields protobuf-c recurses into). */
typedef enum kind { K_NONE, K_MODEL, K_GRAPH, K_NODE, K_ATTR, K_FUNC, K_TRAIN, K_VALUE_INFO, K_TYPE, K_TYPE_ELEM, K_TYPE_MAP } kind;

/* The kind of field `field` of a `k` message when it is one that can lead to nesting, else K_NONE
   (skipped by its length: tensors, strings, shapes, ...). */
static kind child(kind k, uint64_t field)
{
    switch (k) {
    case K_MODEL: return field == 7 ? K_GRAPH : field == 25 ? K_FUNC : field == 20 ? K_TRAIN : K_NONE;
    case K_TRAIN: return field == 1 || field == 2 ? K_GRAPH : K_NONE;
    case K_GRAPH: return field == 1 ? K_NODE : field == 11 || field == 12 || field == 13 ? K_VALUE_INFO : K_NONE;
    case K_NODE: return field == 5 ? K_ATTR : K_NONE;
    case K_ATTR: return field == 6 || field == 11 ? K_GRAPH : field == 14 || field == 15 ? K_TYPE : K_NONE;
    /* FunctionProto: only node = 7 in Debian's onnx.proto (newer attribute_proto 11 and value_info 12
       are unknown fields to protobuf-c, kept as bytes without recursion) */
    case K_FUNC: return field == 7 ? K_NODE : K_NONE;
    case K_VALUE_INFO: return field == 2 ? K_TYPE : K_NONE;
    /* TypeProto: sequence_type 4 and optional_type 9 hold elem_type = 1, map_type 5 value_type = 2 */
    case K_TYPE: return field == 4 || field == 9 ? K_TYPE_ELEM : field == 5 ? K_TYPE_MAP : K_NONE;
    case K_TYPE_ELEM: return field == 1 ? K_TYPE : K_NONE;
    case K_TYPE_MAP: return field == 2 ? K_TYPE : K_NONE;
    default: return K_NONE;
    }
}

/* Reads a varint at *pos (< end); 0 on success. */
static int varint(const uint8_t *buf, size_t *pos, size_t end, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*pos >= end) return -1;
        uint8_t b = buf[(*pos)++];
        if (shift == 63 && b > 1) return -1; /* more than 64 bits */
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

so_onnx_scan_result so_onnx_scan_nesting(const uint8_t *buf, size_t len, int limit, size_t *at)
{
    typedef struct frame {
        kind k;
        size_t end;
    } frame;
    if (limit < 1) limit = 1;
    frame *st = so_xmalloc(sizeof *st * ((size_t)limit + 1));
    int depth = 1;
    st[0] = (frame){K_MODEL, len};
    size_t pos = 0;
    so_onnx_scan_result r = SO_ONNX_SCAN_OK;
    while (depth > 0) {
        frame *f = &st[depth - 1];
        if (pos == f->end) { /* this message is done */
            depth--;
            continue;
        }
        size_t field_at = pos;
        uint64_t tag, v;
        if (varint(buf, &pos, f->end, &tag) || (tag >> 3) == 0) goto malformed;
        switch (tag & 7) {
        case 0: /* varint */
            if (varint(buf, &pos, f->end, &v)) goto malformed;
            break;
        case 1: /* 64-bit */
            if (f->end - pos < 8) goto malformed;
            pos += 8;
            break;
        case 5: /* 32-bit */
            if (f->end - pos < 4) goto malformed;
            pos += 4;
            break;
        case 2: { /* length-delimited: a nested message of interest, or skipped */
            if (varint(buf, &pos, f->end, &v) || v > f->end - pos) goto malformed;
            kind c = child(f->k, tag >> 3);
            if (c == K_NONE) {
                pos += (size_t)v;
                break;
            }
            if (depth >= limit) {
                if (at) *at = field_at;
                r = SO_ONNX_SCAN_TOO_DEEP;
                goto done;
            }
            st[depth++] = (frame){c, pos + (size_t)v};
            break;
        }
        default: /* groups (3, 4) and the undefined wire types */
            goto malformed;
        }
        continue;
    malformed:
        if (at) *at = field_at;
        r = SO_ONNX_SCAN_MALFORMED;
        goto done;
    }
done:
    free(st);
    return r;
}
