/* test_pb.h - a minimal protobuf writer for hand-made ONNX models (well-formed or not), shared
   by test_onnx and test_limits. Static inline: each test binary is one tests/test_*.c.
   Include after <cmocka.h>. */
#ifndef SO_TEST_PB_H
#define SO_TEST_PB_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The encoded bytes d[0 .. n) (malloc'd; free(d) when done). */
typedef struct pb {
    uint8_t *d;
    size_t n, cap;
} pb;

static inline void pb_put(pb *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->d = realloc(b->d, b->cap);
        assert_non_null(b->d);
    }
    if (n) memcpy(b->d + b->n, p, n);
    b->n += n;
}

static inline void pb_varint(pb *b, uint64_t v)
{
    uint8_t c[10];
    int k = 0;
    do {
        c[k] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) c[k] |= 0x80;
        k++;
    } while (v);
    pb_put(b, c, (size_t)k);
}

static inline void pb_int(pb *b, int field, int64_t v)
{
    pb_varint(b, (uint64_t)field << 3);
    pb_varint(b, (uint64_t)v);
}

static inline void pb_float(pb *b, int field, float f)
{
    pb_varint(b, ((uint64_t)field << 3) | 5);
    pb_put(b, &f, 4);
}

static inline void pb_bytes(pb *b, int field, const void *p, size_t n)
{
    pb_varint(b, ((uint64_t)field << 3) | 2);
    pb_varint(b, n);
    pb_put(b, p, n);
}

static inline void pb_str(pb *b, int field, const char *s) { pb_bytes(b, field, s, strlen(s)); }

/* Appends sub as a length-delimited field and frees it. */
static inline void pb_msg(pb *b, int field, pb *sub)
{
    pb_bytes(b, field, sub->d, sub->n);
    free(sub->d);
    memset(sub, 0, sizeof *sub);
}

#endif
