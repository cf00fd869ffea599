/* test_onnx_scan.c - the ModelProto nesting pre-scan (issue 20 item 1): nested If subgraphs and TypeProto chains at and over the limit, malformed wire data, the real models of data/ pass. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common.h"
#include "onnx_scan.h"

/* A growing byte string. */
typedef struct bytes {
    uint8_t *p;
    size_t n;
} bytes;

static void put_varint(bytes *b, uint64_t v)
{
    b->p = realloc(b->p, b->n + 10);
    do {
        uint8_t c = v & 0x7f;
        v >>= 7;
        b->p[b->n++] = c | (v ? 0x80 : 0);
    } while (v);
}

/* Returns tag(field, LEN) + len + inner; frees inner. */
static bytes wrap(uint64_t field, bytes inner)
{
    bytes b = {0};
    put_varint(&b, field << 3 | 2);
    put_varint(&b, inner.n);
    b.p = realloc(b.p, b.n + inner.n + 1);
    if (inner.n) memcpy(b.p + b.n, inner.p, inner.n);
    b.n += inner.n;
    free(inner.p);
    return b;
}

/* A ModelProto whose graph holds an If nested `d` deep (graph.node.attribute.g ...): 2 + 3 d
   message levels. A varint field (op_type-like noise) at each level keeps it realistic. */
static bytes nested_if(int d)
{
    bytes g = {0};
    put_varint(&g, 2 << 3 | 0); /* an unrelated varint field */
    put_varint(&g, 300);
    for (int k = 0; k < d; k++) {
        bytes attr = wrap(6, g);   /* AttributeProto.g */
        bytes node = wrap(5, attr); /* NodeProto.attribute */
        g = wrap(1, node);          /* GraphProto.node */
    }
    return wrap(7, g); /* ModelProto.graph */
}

/* A ModelProto whose graph input's type is sequence(sequence(...(tensor))) `d` deep: levels
   Model, Graph, ValueInfo, then 2 per sequence, then the innermost Type. */
static bytes nested_type(int d)
{
    bytes t = {0};
    t = wrap(1, t); /* TypeProto.tensor_type (skipped: not nesting) */
    for (int k = 0; k < d; k++) {
        bytes seq = wrap(1, t); /* Sequence.elem_type */
        t = wrap(4, seq);        /* TypeProto.sequence_type */
    }
    bytes vi = wrap(2, t);   /* ValueInfoProto.type */
    bytes g = wrap(11, vi);  /* GraphProto.input */
    return wrap(7, g);
}

static void test_nested_if(void **state)
{
    (void)state;
    size_t at = 0;
    /* 2 + 3 * 84 = 254 <= 256 */
    bytes ok = nested_if(84);
    assert_int_equal(so_onnx_scan_nesting(ok.p, ok.n, SO_ONNX_MAX_NESTING, &at), SO_ONNX_SCAN_OK);
    free(ok.p);
    bytes deep = nested_if(85); /* 257 levels */
    assert_int_equal(so_onnx_scan_nesting(deep.p, deep.n, SO_ONNX_MAX_NESTING, &at), SO_ONNX_SCAN_TOO_DEEP);
    assert_true(at > 0 && at < deep.n);
    free(deep.p);
    bytes huge = nested_if(3000); /* the case: rejected without recursion */
    assert_int_equal(so_onnx_scan_nesting(huge.p, huge.n, SO_ONNX_MAX_NESTING, &at), SO_ONNX_SCAN_TOO_DEEP);
    free(huge.p);
    /* exactly at a small limit */
    bytes two = nested_if(2); /* 8 levels */
    assert_int_equal(so_onnx_scan_nesting(two.p, two.n, 8, NULL), SO_ONNX_SCAN_OK);
    assert_int_equal(so_onnx_scan_nesting(two.p, two.n, 7, NULL), SO_ONNX_SCAN_TOO_DEEP);
    free(two.p);
}

static void test_nested_types(void **state)
{
    (void)state;
    /* levels: Model, Graph, ValueInfo, Type, then (Sequence, Type) per level: 4 + 2 d */
    bytes ok = nested_type(126); /* 256 */
    assert_int_equal(so_onnx_scan_nesting(ok.p, ok.n, SO_ONNX_MAX_NESTING, NULL), SO_ONNX_SCAN_OK);
    free(ok.p);
    bytes deep = nested_type(127);
    assert_int_equal(so_onnx_scan_nesting(deep.p, deep.n, SO_ONNX_MAX_NESTING, NULL), SO_ONNX_SCAN_TOO_DEEP);
    free(deep.p);
}

/* Lengths are skipped, not parsed, in fields that cannot nest: a deep If inside a tensor's
   raw_data (GraphProto.initializer = 5) is just bytes. */
static void test_skips_non_nesting_fields(void **state)
{
    (void)state;
    bytes inner = nested_if(200);
    bytes tensor = wrap(9, inner);     /* TensorProto.raw_data */
    bytes g = wrap(5, tensor);         /* GraphProto.initializer */
    bytes m = wrap(7, g);
    assert_int_equal(so_onnx_scan_nesting(m.p, m.n, SO_ONNX_MAX_NESTING, NULL), SO_ONNX_SCAN_OK);
    free(m.p);
}

static void test_malformed(void **state)
{
    (void)state;
    size_t at = 99;
    const uint8_t trunc_varint[] = {0x08, 0x80};              /* varint field, value cut */
    const uint8_t group[] = {0x0b};                           /* field 1, start group */
    const uint8_t len_past_end[] = {0x3a, 0x05, 0x00};        /* graph of 5 bytes, 1 present */
    const uint8_t field_zero[] = {0x00, 0x01};                /* field number 0 */
    const uint8_t fixed_cut[] = {0x09, 1, 2, 3};              /* 64-bit field, 3 bytes */
    const uint8_t inner_bad[] = {0x3a, 0x02, 0x0a, 0x05};     /* graph.node of 5 bytes past the graph's end */
    assert_int_equal(so_onnx_scan_nesting(trunc_varint, sizeof trunc_varint, 256, &at), SO_ONNX_SCAN_MALFORMED);
    assert_int_equal(at, 0);
    assert_int_equal(so_onnx_scan_nesting(group, sizeof group, 256, NULL), SO_ONNX_SCAN_MALFORMED);
    assert_int_equal(so_onnx_scan_nesting(len_past_end, sizeof len_past_end, 256, NULL), SO_ONNX_SCAN_MALFORMED);
    assert_int_equal(so_onnx_scan_nesting(field_zero, sizeof field_zero, 256, NULL), SO_ONNX_SCAN_MALFORMED);
    assert_int_equal(so_onnx_scan_nesting(fixed_cut, sizeof fixed_cut, 256, NULL), SO_ONNX_SCAN_MALFORMED);
    assert_int_equal(so_onnx_scan_nesting(inner_bad, sizeof inner_bad, 256, &at), SO_ONNX_SCAN_MALFORMED);
    assert_int_equal(at, 2);
    assert_int_equal(so_onnx_scan_nesting(NULL, 0, 256, NULL), SO_ONNX_SCAN_OK); /* empty ModelProto */
}

/* Every model shipped in data/ scans clean (the limit never refuses a real model). */
static void test_real_models(void **state)
{
    (void)state;
    const char *names[] = {"deepandwide", "lstm2", "nasrnn", "bert2", "squeezenet", "resnet_small", "tinyseg"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char path[128], *buf;
        size_t n;
        snprintf(path, sizeof path, "data/%s.onnx", names[i]);
        if (so_read_file(path, &buf, &n) != SO_OK) fail_msg("%s", so_error());
        size_t at = 0;
        so_onnx_scan_result r = so_onnx_scan_nesting((const uint8_t *)buf, n, SO_ONNX_MAX_NESTING, &at);
        if (r != SO_ONNX_SCAN_OK) fail_msg("%s: scan result %d at byte %zu", path, (int)r, at);
        free(buf);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nested_if),    cmocka_unit_test(test_nested_types), cmocka_unit_test(test_skips_non_nesting_fields),
        cmocka_unit_test(test_malformed),    cmocka_unit_test(test_real_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
