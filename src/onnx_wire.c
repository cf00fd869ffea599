/* onnx_wire.c - protobuf wire scanner: unpacks a ModelProto keeping initializer raw_data out of the copy. */
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
Onnx__ModelProto *onx_unpack_model(const uint8_t *buf, size_t len, rawset *rs)
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
void onx_release_raw(const rawset *rs, const uint8_t *d, size_t len)
{
    if (!rs->map || !len) return;
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)d + pg - 1) & ~(pg - 1), b = ((uintptr_t)d + len) & ~(pg - 1);
    if (b > a) (void)madvise((void *)a, b - a, MADV_DONTNEED);
}

/* Imports an unpacked model (mp may be NULL: parse failure). Frees mp; raw initializer bytes
   (in mp, or where rs says when unpack_model kept them out) are released as soon as they are
   converted, to keep the peak memory near one model copy. */
