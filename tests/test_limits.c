/* test_limits.c - hostile input: overflowing dimensions, absurd allocations (--max-memory), deep and
   cyclic graphs, enormous attribute lists, unbounded rule files, the raw input reader; and every
   saved fuzzer finding in tests/fuzz/regressions/ must give a clean result again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cmocka.h>

#include "../kernels/exec.h"
#include "../rules/rule.h"
#include "onnx_io.h"
#include "shape.h"
#include "test_pb.h"

/* ValueInfoProto: float tensor of the given dims (rank < 0: no type at all). */
static void vinfo(pb *graph, int field, const char *name, int rank, const int64_t *dims)
{
    pb vi = {0}, tp = {0}, tt = {0}, sh = {0};
    pb_str(&vi, 1, name);
    if (rank >= 0) {
        pb_int(&tt, 1, 1); /* FLOAT */
        for (int i = 0; i < rank; i++) {
            pb d = {0};
            pb_int(&d, 1, dims[i]);
            pb_msg(&sh, 1, &d);
        }
        pb_msg(&tt, 2, &sh);
        pb_msg(&tp, 1, &tt);
        pb_msg(&vi, 2, &tp);
    }
    pb_msg(graph, field, &vi);
}

/* NodeProto with inputs/outputs (NULL-terminated lists) and optional prepared attributes. */
static void node(pb *graph, const char *op, const char *const *ins, const char *const *outs, pb *attrs)
{
    pb n = {0};
    for (; ins && *ins; ins++) pb_str(&n, 1, *ins);
    for (; outs && *outs; outs++) pb_str(&n, 2, *outs);
    pb_str(&n, 4, op);
    if (attrs) pb_put(&n, attrs->d, attrs->n), free(attrs->d), memset(attrs, 0, sizeof *attrs);
    pb_msg(graph, 1, &n);
}

/* AttributeProto INTS appended (as a field of NodeProto) to attrs. */
static void attr_ints(pb *attrs, const char *name, const int64_t *v, size_t n)
{
    pb a = {0};
    pb_str(&a, 1, name);
    for (size_t i = 0; i < n; i++) pb_int(&a, 8, v[i]);
    pb_int(&a, 20, 7); /* INTS */
    pb_msg(attrs, 5, &a);
}

/* TensorProto initializer with dims and raw_data (data may be NULL with len 0). */
static void init_tensor(pb *graph, const char *name, int dtype, int rank, const int64_t *dims, const void *data,
                        size_t len)
{
    pb t = {0};
    for (int i = 0; i < rank; i++) pb_int(&t, 1, dims[i]);
    pb_int(&t, 2, dtype);
    pb_str(&t, 8, name);
    pb_bytes(&t, 9, data ? data : "", len);
    pb_msg(graph, 5, &t);
}

/* ModelProto (ir_version 8, opset 13) around graph; graph is consumed. */
static pb model(pb *graph)
{
    pb m = {0}, op = {0};
    pb_int(&m, 1, 8);
    pb_str(graph, 2, "g");
    pb_msg(&m, 7, graph);
    pb_str(&op, 1, "");
    pb_int(&op, 2, 13);
    pb_msg(&m, 8, &op);
    return m;
}

#define D(...) ((const int64_t[]){__VA_ARGS__})
#define L(...) ((const char *const[]){__VA_ARGS__, NULL})

/* Loads m (freed) and expects an error with status `code`: one line, starting with the path, containing want. */
static void expect_load_error_code(pb *m, so_status code, const char *want)
{
    so_model *mod = (so_model *)1;
    so_status st = so_onnx_load_buffer("hostile.onnx", m->d, m->n, &mod);
    free(m->d);
    if (st == SO_OK) so_model_free(mod);
    assert_int_equal(st, code);
    assert_null(mod);
    const char *msg = so_error();
    if (!strstr(msg, want)) fail_msg("message '%s' does not contain '%s'", msg, want);
    assert_null(strchr(msg, '\n'));
    assert_int_equal(strncmp(msg, "hostile.onnx: ", 14), 0);
}

static so_model *expect_load_ok(pb *m)
{
    so_model *mod = NULL;
    so_status st = so_onnx_load_buffer("hostile.onnx", m->d, m->n, &mod);
    free(m->d);
    if (st != SO_OK) fail_msg("load failed: %s", so_error());
    return mod;
}

/* ---------------- dimensions and allocation sizes ---------------- */

static void test_input_dims_overflow(void **state)
{
    (void)state;
    pb g = {0};
    vinfo(&g, 11, "x", 4, D(2147483647, 2147483647, 2147483647, 4));
    vinfo(&g, 12, "x", -1, NULL);
    pb m = model(&g);
    expect_load_error_code(&m, SO_ERR, "element count overflows");
}

static void test_input_dim_absurd(void **state)
{
    (void)state;
    pb g = {0};
    vinfo(&g, 11, "x", 2, D(1, (int64_t)1 << 40));
    vinfo(&g, 12, "x", -1, NULL);
    pb m = model(&g);
    expect_load_error_code(&m, SO_ERR, "absurd dimension");
}

static void test_input_rank_too_high(void **state)
{
    (void)state;
    pb g = {0};
    vinfo(&g, 11, "x", 9, D(1, 1, 1, 1, 1, 1, 1, 1, 1));
    vinfo(&g, 12, "x", -1, NULL);
    pb m = model(&g);
    expect_load_error_code(&m, SO_ERR, "rank 9");
}

static void test_initializer_dims_overflow(void **state)
{
    (void)state;
    pb g = {0};
    vinfo(&g, 11, "x", 1, D(4));
    init_tensor(&g, "w", 1, 3, D(2147483647, 2147483647, 2147483647), NULL, 0);
    node(&g, "Add", L("x", "w"), L("y"), NULL);
    vinfo(&g, 12, "y", -1, NULL);
    pb m = model(&g);
    expect_load_error_code(&m, SO_ERR, "overflows");
}

/* An initializer claims 2^40 floats but stores none: refused before any allocation. */
static void test_initializer_absurd_allocation(void **state)
{
    (void)state;
    pb g = {0};
    vinfo(&g, 11, "x", 1, D(4));
    init_tensor(&g, "w", 1, 2, D(1 << 20, 1 << 20), NULL, 0);
    node(&g, "Add", L("x", "w"), L("y"), NULL);
    vinfo(&g, 12, "y", -1, NULL);
    pb m = model(&g);
    expect_load_error_code(&m, SO_ERR_LIMIT, "allocation limit");
}

/* The limit is what --max-memory sets: a 400-byte input is refused under a 100-byte limit. */
static void test_max_memory_limit_applies(void **state)
{
    (void)state;
    size_t saved = so_max_alloc_bytes;
    pb g = {0};
    vinfo(&g, 11, "x", 2, D(10, 10));
    node(&g, "Relu", L("x"), L("y"), NULL);
    vinfo(&g, 12, "y", -1, NULL);
    pb m = model(&g);
    pb m2 = {0};
    pb_put(&m2, m.d, m.n);
    so_max_alloc_bytes = 100;
    expect_load_error_code(&m, SO_ERR_LIMIT, "allocation limit");
    so_max_alloc_bytes = saved;
    so_model *mod = expect_load_ok(&m2);
    so_model_free(mod);
}

/* Expand to 2^31-1 x 2^31-1 x 2^31-1: the output shape overflows int64 - an error, not UB. */
static void test_expand_shape_overflow(void **state)
{
    (void)state;
    pb g = {0};
    int64_t shape[3] = {2147483647, 2147483647, 2147483647};
    vinfo(&g, 11, "x", 1, D(1));
    init_tensor(&g, "s", 7, 1, D(3), shape, sizeof shape);
    node(&g, "Expand", L("x", "s"), L("y"), NULL);
    vinfo(&g, 12, "y", -1, NULL);
    pb m = model(&g);
    expect_load_error_code(&m, SO_ERR, "Expand");
}

/* Expand to 2^20 x 2^12 floats (16 GiB): the model loads (shapes only), but planning its
   memory is refused under the allocation limit with a clear message. */
static void test_huge_activation_refused_by_executor(void **state)
{
    (void)state;
    pb g = {0};
    int64_t shape[2] = {1 << 20, 1 << 12};
    vinfo(&g, 11, "x", 1, D(1));
    init_tensor(&g, "s", 7, 1, D(2), shape, sizeof shape);
    node(&g, "Expand", L("x", "s"), L("e"), NULL);
    node(&g, "Relu", L("e"), L("y"), NULL);
    vinfo(&g, 12, "y", -1, NULL);
    pb m = model(&g);
    so_model *mod = NULL;
    so_status st = so_onnx_load_buffer("hostile.onnx", m.d, m.n, &mod);
    free(m.d);
    if (st != SO_OK) {
        /* refusing at load time is as good */
        assert_non_null(strstr(so_error(), "hostile.onnx: "));
        return;
    }
    so_exec *e = NULL;
    assert_int_equal(so_exec_new(mod->graph, NULL, &e), SO_ERR);
    if (!strstr(so_error(), "limit")) fail_msg("message '%s' does not mention the limit", so_error());
    assert_null(strchr(so_error(), '\n'));
    so_model_free(mod);
}

/* ---------------- graph structure ---------------- */

static void test_cycle(void **state)
{
    (void)state;
    pb g = {0};
    vinfo(&g, 11, "x", 1, D(4));
    node(&g, "Add", L("x", "b"), L("a"), NULL);
    node(&g, "Relu", L("a"), L("b"), NULL);
    vinfo(&g, 12, "b", -1, NULL);
    pb m = model(&g);
    expect_load_error_code(&m, SO_ERR, "cycle");
}

static void test_self_loop(void **state)
{
    (void)state;
    pb g = {0};
    vinfo(&g, 11, "x", 1, D(4));
    node(&g, "Relu", L("a"), L("a"), NULL);
    vinfo(&g, 12, "a", -1, NULL);
    pb m = model(&g);
    expect_load_error_code(&m, SO_ERR, "cycle");
}

static void test_undefined_input(void **state)
{
    (void)state;
    pb g = {0};
    vinfo(&g, 11, "x", 1, D(4));
    node(&g, "Relu", L("nowhere"), L("y"), NULL);
    vinfo(&g, 12, "y", -1, NULL);
    pb m = model(&g);
    expect_load_error_code(&m, SO_ERR, "'nowhere' is not produced");
}

/* A chain of 100000 nodes, written last-to-first so the importer must sort it: loads without
   recursion blowing the stack, and keeps every node. */
static void test_deep_chain(void **state)
{
    (void)state;
    enum { DEPTH = 100000 };
    pb g = {0};
    vinfo(&g, 11, "t0", 1, D(4));
    for (int i = DEPTH; i >= 1; i--) {
        char a[16], b[16];
        snprintf(a, sizeof a, "t%d", i - 1);
        snprintf(b, sizeof b, "t%d", i);
        node(&g, i % 2 ? "Relu" : "Neg", L(a), L(b), NULL);
    }
    char last[16];
    snprintf(last, sizeof last, "t%d", DEPTH);
    vinfo(&g, 12, last, -1, NULL);
    pb m = model(&g);
    so_model *mod = expect_load_ok(&m);
    assert_int_equal(mod->graph->n_nodes, DEPTH + 1);
    assert_int_equal(mod->graph->nodes[mod->graph->outputs[0].node].out[0].dim[0], 4);
    /* structural hashing and cloning walk the whole chain too */
    uint64_t h = so_graph_hash(mod->graph);
    so_graph *c = so_graph_clone(mod->graph);
    assert_true(so_graph_hash(c) == h);
    so_graph_free(c);
    so_model_free(mod);
}

/* One node with 100000 inputs: more than any operator takes; a clear error. */
static void test_too_many_node_inputs(void **state)
{
    (void)state;
    enum { N = 100000 };
    pb g = {0};
    vinfo(&g, 11, "x", 1, D(4));
    pb n = {0};
    for (int i = 0; i < N; i++) pb_str(&n, 1, "x");
    pb_str(&n, 2, "y");
    pb_str(&n, 4, "Concat");
    pb a = {0};
    pb_str(&a, 1, "axis");
    pb_int(&a, 3, 0);
    pb_int(&a, 20, 2); /* INT */
    pb_msg(&n, 5, &a);
    pb_msg(&g, 1, &n);
    vinfo(&g, 12, "y", -1, NULL);
    pb m = model(&g);
    so_model *mod = NULL;
    so_status st = so_onnx_load_buffer("hostile.onnx", m.d, m.n, &mod);
    free(m.d);
    if (st == SO_OK) {
        /* accepted only if it really concatenates all of them */
        assert_int_equal(mod->graph->nodes[mod->graph->outputs[0].node].out[0].dim[0], 4 * N);
        so_model_free(mod);
        return;
    }
    assert_null(strchr(so_error(), '\n'));
    assert_int_equal(strncmp(so_error(), "hostile.onnx: ", 14), 0);
}

/* Nodes with no inputs at all where the operator needs one (fuzz finding: ins[0] was read
   uninitialized for Shape). */
static void test_nodes_without_inputs(void **state)
{
    (void)state;
    const char *ops[] = {"Shape", "Size", "Identity", "Relu", "Reshape", "Gather", "Concat", "LSTM", "Dropout",
                         "ConstantOfShape", "Expand", "Tile", "Slice", "Split", "Range", "Where", "Cast", "Squeeze",
                         "Unsqueeze", "ReduceMean", "ReduceSum", "Pad", "Clip", "Conv", "Gemm", "MatMul", "Transpose"};
    for (size_t i = 0; i < SO_ARRAY_LEN(ops); i++) {
        pb g = {0};
        vinfo(&g, 11, "x", 1, D(4));
        node(&g, ops[i], NULL, L("s"), NULL);
        node(&g, "Add", L("x", "s"), L("y"), NULL);
        vinfo(&g, 12, "y", -1, NULL);
        pb m = model(&g);
        so_model *mod = NULL;
        so_status st = so_onnx_load_buffer("hostile.onnx", m.d, m.n, &mod);
        free(m.d);
        /* Concat of nothing may be kept opaque (its shape unknown); anything else is an error */
        if (st == SO_OK) {
            so_model_free(mod);
            continue;
        }
        assert_null(strchr(so_error(), '\n'));
        if (strncmp(so_error(), "hostile.onnx: ", 14) != 0) fail_msg("%s: '%s'", ops[i], so_error());
    }
}

/* ---------------- enormous attribute lists ---------------- */

static void test_huge_perm(void **state)
{
    (void)state;
    enum { N = 1000000 };
    int64_t *v = so_xmalloc(N * sizeof *v);
    for (int i = 0; i < N; i++) v[i] = N - 1 - i;
    pb g = {0}, at = {0};
    vinfo(&g, 11, "x", 2, D(2, 3));
    attr_ints(&at, "perm", v, N);
    node(&g, "Transpose", L("x"), L("y"), &at);
    vinfo(&g, 12, "y", -1, NULL);
    free(v);
    pb m = model(&g);
    expect_load_error_code(&m, SO_ERR, "perm");
}

/* 100000 pads on a 2-D conv: not a form the optimizer understands, so the node is kept opaque
   (exported verbatim); the load neither fails nor reads past the first four. */
static void test_huge_pads(void **state)
{
    (void)state;
    enum { N = 100000 };
    int64_t *v = so_xcalloc(N, sizeof *v);
    pb g = {0}, at = {0};
    vinfo(&g, 11, "x", 4, D(1, 1, 4, 4));
    init_tensor(&g, "w", 1, 4, D(1, 1, 1, 1), (float[]){1.0f}, 4);
    attr_ints(&at, "pads", v, N);
    node(&g, "Conv", L("x", "w"), L("y"), &at);
    vinfo(&g, 12, "y", -1, NULL);
    free(v);
    pb m = model(&g);
    so_model *mod = expect_load_ok(&m);
    assert_int_equal(mod->graph->nodes[mod->graph->outputs[0].node].op, SO_OP_OPAQUE);
    so_model_free(mod);
}

static void test_many_attributes(void **state)
{
    (void)state;
    enum { N = 50000 };
    pb g = {0}, at = {0};
    vinfo(&g, 11, "x", 1, D(4));
    for (int i = 0; i < N; i++) {
        pb a = {0};
        char nm[32];
        snprintf(nm, sizeof nm, "junk%d", i);
        pb_str(&a, 1, nm);
        pb_int(&a, 3, i);
        pb_int(&a, 20, 2);
        pb_msg(&at, 5, &a);
    }
    node(&g, "Relu", L("x"), L("y"), &at);
    vinfo(&g, 12, "y", -1, NULL);
    pb m = model(&g);
    /* unknown attributes are ignored: the model loads, Relu intact */
    so_model *mod = expect_load_ok(&m);
    assert_int_equal(mod->graph->nodes[mod->graph->outputs[0].node].op, SO_OP_RELU);
    so_model_free(mod);
}

/* Perm values far out of range (and INT64_MIN, whose negation overflows). */
static void test_perm_values_out_of_range(void **state)
{
    (void)state;
    pb g = {0}, at = {0};
    vinfo(&g, 11, "x", 2, D(2, 3));
    attr_ints(&at, "perm", D(INT64_MIN, INT64_MAX), 2);
    node(&g, "Transpose", L("x"), L("y"), &at);
    vinfo(&g, 12, "y", -1, NULL);
    pb m = model(&g);
    expect_load_error_code(&m, SO_ERR, "perm");
}

/* Attribute values beyond int32 are refused or read as flags, never truncated to their low
   32 bits (2^32 + 1 used to become stride 1, 2^32 used to become transB = 0). */
static void test_int64_attributes_not_truncated(void **state)
{
    (void)state;
    const int64_t big = ((int64_t)1 << 32) + 1;
    const char *keys[] = {"strides", "dilations"};
    for (int k = 0; k < 2; k++) {
        pb g = {0}, at = {0};
        vinfo(&g, 11, "x", 4, D(1, 1, 4, 4));
        init_tensor(&g, "w", 1, 4, D(1, 1, 1, 1), (float[]){1.0f}, 4);
        attr_ints(&at, keys[k], D(big, 1), 2);
        node(&g, "Conv", L("x", "w"), L("y"), &at);
        vinfo(&g, 12, "y", -1, NULL);
        pb m = model(&g);
        expect_load_error_code(&m, SO_ERR, "invalid kernel/stride/dilation");
    }
    {
        pb g = {0}, at = {0}, a = {0};
        vinfo(&g, 11, "x", 4, D(1, 2, 4, 4));
        init_tensor(&g, "w", 1, 4, D(2, 1, 1, 1), (float[]){1.0f, 2.0f}, 8);
        pb_str(&a, 1, "group");
        pb_int(&a, 3, ((int64_t)1 << 32) + 2);
        pb_int(&a, 20, 2);
        pb_msg(&at, 5, &a);
        node(&g, "Conv", L("x", "w"), L("y"), &at);
        vinfo(&g, 12, "y", -1, NULL);
        pb m = model(&g);
        expect_load_error_code(&m, SO_ERR, "invalid group 4294967298");
    }
    {
        pb g = {0}, at = {0}, a = {0};
        vinfo(&g, 11, "x", 2, D(2, 3));
        init_tensor(&g, "w", 1, 2, D(4, 3), (float[12]){0}, 48);
        pb_str(&a, 1, "transB");
        pb_int(&a, 3, (int64_t)1 << 32);
        pb_int(&a, 20, 2);
        pb_msg(&at, 5, &a);
        node(&g, "Gemm", L("x", "w"), L("y"), &at);
        vinfo(&g, 12, "y", -1, NULL);
        pb m = model(&g);
        so_model *mod = expect_load_ok(&m);
        const so_node *gm = &mod->graph->nodes[mod->graph->outputs[0].node];
        assert_int_equal(gm->op, SO_OP_GEMM);
        assert_int_equal(gm->attr->trans_b, 1);
        assert_int_equal(gm->out[0].dim[1], 4);
        so_model_free(mod);
    }
}

/* Slice steps at the ends of int64 (fuzz finding: the length arithmetic overflowed for step
   -INT64_MAX): a step longer than the axis selects one element. */
static void test_slice_extreme_steps(void **state)
{
    (void)state;
    const int64_t steps[] = {INT64_MAX, INT64_MIN, -INT64_MAX, 4, -4};
    for (size_t i = 0; i < SO_ARRAY_LEN(steps); i++) {
        int64_t st = steps[i] > 0 ? 0 : -1, en = steps[i] > 0 ? INT64_MAX : INT64_MIN, ax = 1, sp = steps[i];
        pb g = {0};
        vinfo(&g, 11, "x", 2, D(2, 3));
        init_tensor(&g, "st", 7, 1, D(1), &st, 8);
        init_tensor(&g, "en", 7, 1, D(1), &en, 8);
        init_tensor(&g, "ax", 7, 1, D(1), &ax, 8);
        init_tensor(&g, "sp", 7, 1, D(1), &sp, 8);
        node(&g, "Slice", L("x", "st", "en", "ax", "sp"), L("y"), NULL);
        vinfo(&g, 12, "y", -1, NULL);
        pb m = model(&g);
        so_model *mod = expect_load_ok(&m);
        const so_shape *o = &mod->graph->nodes[mod->graph->outputs[0].node].out[0];
        assert_int_equal(o->rank, 2);
        assert_int_equal(o->dim[0], 2);
        assert_int_equal(o->dim[1], 1);
        so_model_free(mod);
    }
}

/* Range over the whole int64 line (fuzz finding: the element count 1.5e19 was converted to
   int64 before the length check, UB) and a short range with a huge delta (no overflow). */
static void test_range_extremes(void **state)
{
    (void)state;
    int64_t vals[2][3] = {{INT64_MIN + 1, INT64_MAX, 1}, {INT64_MAX - 5, INT64_MIN, -(INT64_MAX / 2)}};
    for (int k = 0; k < 2; k++) {
        pb g = {0};
        vinfo(&g, 11, "x", 1, D(4));
        init_tensor(&g, "r0", 7, 0, NULL, &vals[k][0], 8);
        init_tensor(&g, "r1", 7, 0, NULL, &vals[k][1], 8);
        init_tensor(&g, "r2", 7, 0, NULL, &vals[k][2], 8);
        node(&g, "Range", L("r0", "r1", "r2"), L("r"), NULL);
        pb at = {0}, a = {0};
        pb_str(&a, 1, "to");
        pb_int(&a, 3, 1);
        pb_int(&a, 20, 2);
        pb_msg(&at, 5, &a);
        node(&g, "Cast", L("r"), L("rf"), &at);
        node(&g, "Add", L("x", "rf"), L("y"), NULL);
        vinfo(&g, 12, "y", -1, NULL);
        pb m = model(&g);
        so_model *mod = NULL;
        so_status st = so_onnx_load_buffer("hostile.onnx", m.d, m.n, &mod);
        free(m.d);
        if (k == 0) {
            assert_int_equal(st, SO_ERR);
            if (!strstr(so_error(), "range too long")) fail_msg("'%s'", so_error());
        } else {
            /* ceil((MIN - (MAX - 5)) / (-MAX / 2)) = 4 elements, computed without overflow */
            if (st != SO_OK) fail_msg("%s", so_error());
            assert_int_equal(mod->graph->nodes[mod->graph->outputs[0].node].out[0].dim[0], 4);
            so_model_free(mod);
        }
    }
}

/* Shapes of opaque operators come from the file (value_info) or from Resize scales: they get the
   same bounds as inferred shapes instead of flowing into downstream arithmetic. */
static void test_opaque_shapes_bounded(void **state)
{
    (void)state;
    {
        pb g = {0};
        vinfo(&g, 11, "x", 1, D(4));
        pb n = {0};
        pb_str(&n, 1, "x");
        pb_str(&n, 2, "v");
        pb_str(&n, 4, "FancyOp");
        pb_str(&n, 7, "com.example");
        pb_msg(&g, 1, &n);
        node(&g, "Relu", L("v"), L("y"), NULL);
        vinfo(&g, 13, "v", 2, D(INT64_MAX, 2)); /* value_info */
        vinfo(&g, 12, "y", -1, NULL);
        pb m = model(&g);
        expect_load_error_code(&m, SO_ERR, "9223372036854775807,2]");
    }
    {
        pb g = {0};
        float scales[4] = {1.0f, 1.0f, 1e30f, 1e30f};
        vinfo(&g, 11, "x", 4, D(1, 1, 2, 2));
        init_tensor(&g, "roi", 1, 1, D(0), NULL, 0);
        init_tensor(&g, "sc", 1, 1, D(4), scales, sizeof scales);
        node(&g, "Resize", L("x", "roi", "sc"), L("v"), NULL);
        node(&g, "Relu", L("v"), L("y"), NULL);
        vinfo(&g, 12, "y", -1, NULL);
        pb m = model(&g);
        expect_load_error_code(&m, SO_ERR, "hostile.onnx: ");
    }
}

/* ---------------- import-time constant folding is bounded ---------------- */

static int count_ops(const so_model *mod, so_op op)
{
    int c = 0;
    for (int32_t i = 0; i < mod->graph->n_nodes; i++) c += mod->graph->nodes[i].op == op;
    return c;
}

/* y = ReduceSum(op(...)) where op builds a constant of n floats: ConstantOfShape [n], or
   Expand of a 1-element weight to [n]. */
static pb big_const_model(const char *op, int64_t n)
{
    pb g = {0};
    float one = 1.0f;
    init_tensor(&g, "s", 7, 1, D(1), &n, sizeof n);
    init_tensor(&g, "one", 1, 1, D(1), &one, sizeof one);
    if (!strcmp(op, "Expand")) node(&g, "Expand", L("one", "s"), L("c"), NULL);
    else node(&g, "ConstantOfShape", L("s"), L("c"), NULL);
    node(&g, "ReduceSum", L("c"), L("y"), NULL);
    vinfo(&g, 12, "y", 1, D(1));
    return model(&g);
}

/* Fuzz finding: a hostile chain built a constant as large as --max-memory allowed and folding a
   Reduce over it took 5 s of CPU. Folding now stops at so_onnx_fold_max_elems elements (or the
   largest constant input, so that a Neg of a big weight still folds): above it the node stays in
   the graph. Same models below the cap fold completely (only weights left). */
static void test_fold_size_capped(void **state)
{
    (void)state;
    int64_t saved = so_onnx_fold_max_elems;
    so_onnx_fold_max_elems = 1000;
    const char *ops[] = {"ConstantOfShape", "Expand"};
    for (int k = 0; k < 2; k++) {
        pb m = big_const_model(ops[k], 4096);
        so_model *mod = NULL;
        so_status st = so_onnx_load_buffer("hostile.onnx", m.d, m.n, &mod);
        free(m.d);
        if (st != SO_OK) fail_msg("%s: load failed: %s", ops[k], so_error());
        /* not folded: something other than weights computes y */
        assert_true(count_ops(mod, SO_OP_WEIGHT) < mod->graph->n_nodes);
        so_model_free(mod);
        m = big_const_model(ops[k], 512); /* below the cap: folded to one weight */
        mod = expect_load_ok(&m);
        assert_int_equal(mod->graph->n_nodes, 1);
        assert_int_equal(count_ops(mod, SO_OP_WEIGHT), 1);
        /* ConstantOfShape without a value attribute is zeros */
        assert_true(((const float *)mod->weights[mod->graph->nodes[0].ref].data)[0] == (k == 0 ? 0.0f : 512.0f));
        so_model_free(mod);
    }
    { /* Neg of a weight of 2048 > 1000 elements does not grow: folded */
        pb g = {0};
        float w[2048];
        for (int i = 0; i < 2048; i++) w[i] = (float)i;
        init_tensor(&g, "w", 1, 1, D(2048), w, sizeof w);
        node(&g, "Neg", L("w"), L("y"), NULL);
        vinfo(&g, 12, "y", 1, D(2048));
        pb m = model(&g);
        so_model *mod = expect_load_ok(&m);
        assert_int_equal(mod->graph->n_nodes, 1);
        assert_true(((const float *)mod->weights[mod->graph->nodes[0].ref].data)[7] == -7.0f);
        so_model_free(mod);
    }
    so_onnx_fold_max_elems = saved;
}

/* ---------------- shape inference on hostile attributes and dims ---------------- */

/* Infers node `op` over weights of the given shapes (no data: shapes only) and expects an error
   containing want (fuzz finding: Pad's output dim overflowed int64; the same arithmetic in
   Concat, Split, Slice, Conv channel and window checks). Run under make test-asan for the UB. */
static void shape_err(so_op op, const so_attr *a, int n_in, const int64_t (*dims)[4], const int *ranks, int n_out,
                      const char *want)
{
    so_model *m = so_model_new("hostile");
    so_graph *g = so_graph_new(m);
    m->graph = g;
    so_edge e[SO_MAX_IN];
    for (int k = 0; k < n_in; k++) {
        int32_t w = so_model_add_weight(m, NULL, so_shape_make(ranks[k], dims[k]), NULL);
        e[k] = (so_edge){so_graph_add(g, SO_OP_WEIGHT, NULL, 0, 1, NULL, w, NULL), 0};
        assert_int_equal(so_graph_infer(g, e[k].node), SO_OK);
    }
    int32_t n = so_graph_add(g, op, e, n_in, n_out, so_model_attr(m, a), -1, "hostile");
    assert_int_equal(so_graph_infer(g, n), SO_ERR);
    if (!strstr(so_error(), want)) fail_msg("message '%s' does not contain '%s'", so_error(), want);
    so_model_free(m);
}

static void test_shape_overflows(void **state)
{
    (void)state;
    so_attr a;
    /* Pad by INT64_MAX on both sides */
    memset(&a, 0, sizeof a);
    a.n_ints = 2;
    a.ints[0] = a.ints[1] = INT64_MAX - 1;
    shape_err(SO_OP_PAD, &a, 1, (const int64_t[][4]){{4}}, (const int[]){1}, 1, "overflow");
    /* Concat of 17 axes of 2^59 */
    memset(&a, 0, sizeof a);
    int64_t big[SO_MAX_IN][4];
    int ranks[SO_MAX_IN];
    for (int k = 0; k < 17; k++) big[k][0] = (int64_t)1 << 59, ranks[k] = 1;
    shape_err(SO_OP_CONCAT, &a, 17, (const int64_t(*)[4])big, ranks, 1, "overflows");
    /* Split sizes summing past INT64_MAX */
    memset(&a, 0, sizeof a);
    a.n_ints = 2;
    a.ints[0] = a.ints[1] = INT64_MAX - 1;
    shape_err(SO_OP_SPLIT, &a, 1, (const int64_t[][4]){{4}}, (const int[]){1}, 2, "overflow");
    /* Conv window: dilation 2^30 x kernel 2^40 */
    memset(&a, 0, sizeof a);
    a.group = 1;
    a.stride[0] = a.stride[1] = 1;
    a.dilation[0] = a.dilation[1] = 1 << 30;
    shape_err(SO_OP_CONV, &a, 2, (const int64_t[][4]){{1, 1, 4, 4}, {1, 1, (int64_t)1 << 40, 1}}, (const int[]){4, 4}, 1,
              "hostile");
}

/* A 1 MB node name: the message stays one bounded line. */
static void test_long_names(void **state)
{
    (void)state;
    enum { N = 1 << 20 };
    char *big = so_xmalloc(N + 1);
    memset(big, 'n', N);
    big[N] = 0;
    pb g = {0};
    vinfo(&g, 11, "x", 1, D(4));
    node(&g, "Relu", L(big), L("y"), NULL);
    vinfo(&g, 12, "y", -1, NULL);
    free(big);
    pb m = model(&g);
    expect_load_error_code(&m, SO_ERR, "input 'nnnn");
    assert_true(strlen(so_error()) < 2048);
}

/* ---------------- rule files ---------------- */

static void expect_rules_error(const char *text, const char *want)
{
    so_ruleset rs = {0};
    so_status st = so_rules_parse("hostile.rules", text, strlen(text), &rs);
    so_ruleset_free(&rs);
    assert_int_equal(st, SO_ERR_PARSE); /* a rule file over a limit is refused as malformed */
    const char *msg = so_error();
    if (!strstr(msg, want)) fail_msg("message '%s' does not contain '%s'", msg, want);
    assert_null(strchr(msg, '\n'));
    assert_int_equal(strncmp(msg, "hostile.rules:", 14), 0);
}

/* A rule whose source pattern has n relu nodes chained on X (and target X). */
static char *chain_rule(int n)
{
    size_t cap = 256 + (size_t)n * 64, len = 0;
    char *s = so_xmalloc(cap);
    len += (size_t)snprintf(s + len, cap - len, "rule 1\n  input X [n]\n");
    for (int i = 0; i < n; i++)
        if (i) len += (size_t)snprintf(s + len, cap - len, "  src s%d = relu(s%d)\n", i, i - 1);
        else len += (size_t)snprintf(s + len, cap - len, "  src s0 = relu(X)\n");
    len += (size_t)snprintf(s + len, cap - len, "  dst d = relu(X)\n  map s%d -> d\n  proof unverified\nend\n", n - 1);
    return s;
}

static void test_rule_pattern_too_long(void **state)
{
    (void)state;
    char *ok = chain_rule(SO_RULE_MAX_NODES);
    so_ruleset rs = {0};
    /* the longest allowed pattern parses (semantics are not checked by the parser) */
    if (so_rules_parse("hostile.rules", ok, strlen(ok), &rs) != SO_OK) fail_msg("%s", so_error());
    assert_int_equal(rs.n_rules, 1);
    assert_int_equal(rs.rules[0].src.n_nodes, SO_RULE_MAX_NODES);
    so_ruleset_free(&rs);
    free(ok);
    char *bad = chain_rule(10000);
    expect_rules_error(bad, "hostile.rules:");
    free(bad);
}

static void test_rule_too_many_inputs(void **state)
{
    (void)state;
    char text[4096];
    size_t len = (size_t)snprintf(text, sizeof text, "rule 1\n");
    for (int i = 0; i < 40; i++) len += (size_t)snprintf(text + len, sizeof text - len, "  input X%d [n]\n", i);
    snprintf(text + len, sizeof text - len, "  src a = relu(X0)\n  dst b = relu(X0)\n  map a -> b\nend\n");
    expect_rules_error(text, "hostile.rules:");
}

static void test_rule_too_many_symbols(void **state)
{
    (void)state;
    char text[4096];
    size_t len = (size_t)snprintf(text, sizeof text, "rule 1\n");
    for (int i = 0; i < 5; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "  input X%d [a%d,b%d,c%d,d%d,e%d]\n", i, i, i, i, i, i);
    snprintf(text + len, sizeof text - len, "  src a = relu(X0)\n  dst b = relu(X0)\n  map a -> b\nend\n");
    expect_rules_error(text, "hostile.rules:");
}

static void test_rule_long_dim_expression(void **state)
{
    (void)state;
    /* more than SO_DIMX_MAX_SYM (32) symbol terms, written out or as K*s */
    expect_rules_error("rule 1\n  input X [a+b+c+d+e+f+g+h+a+b+c+d+e+f+g+h+a+b+c+d+e+f+g+h+a+b+c+d+e+f+g+h+a]\n  src a = relu(X)\n"
                       "  dst b = relu(X)\n  map a -> b\nend\n",
                       "hostile.rules:2");
    expect_rules_error("rule 1\n  input X [16*a+17*b]\n  src a = relu(X)\n  dst b = relu(X)\n  map a -> b\nend\n", "hostile.rules:2");
}

static void test_rule_huge_numbers(void **state)
{
    (void)state;
    expect_rules_error("rule 1\n  input X [99999999999999999999999]\n  src a = relu(X)\n  dst b = relu(X)\n  map a -> b\nend\n",
                       "hostile.rules:2");
    expect_rules_error("rule 1\n  input X [n]\n  src a = relu(X)\n  dst b = relu(X)\n  map a -> b\n"
                       "  where n % 0 == 0\nend\n",
                       "hostile.rules:6");
    /* fuzz finding: constant terms summing past INT32_MIN were signed overflow */
    expect_rules_error("rule 1\n  input X [n,b-2147483648-2]\nend\n", "hostile.rules:2");
    expect_rules_error("rule 1\n  input X [n,b-16777216-16777216]\nend\n", "hostile.rules:2: dimension constant out of range");
    expect_rules_error("rule 1\n  input X [16777216+16777216]\nend\n", "hostile.rules:2: dimension constant out of range");
    /* attribute values beyond the bound are refused, not truncated to int32 */
    expect_rules_error("rule 1\n  input X [n,c,h,w]\n  input W [o,c,3,3]\n"
                       "  src a = conv(X, W) stride=4294967297,1 pad=1,1,1,1 dilation=1,1 group=1 act=none\n"
                       "  dst b = conv(X, W) stride=1,1 pad=1,1,1,1 dilation=1,1 group=1 act=none\n  map a -> b\nend\n",
                       "hostile.rules:4: stride= needs 2 integers");
}

static void test_rule_long_line_and_names(void **state)
{
    (void)state;
    enum { N = 1 << 20 };
    char *text = so_xmalloc(N + 128);
    int len = snprintf(text, 128, "rule 1\n  input ");
    memset(text + len, 'X', N);
    strcpy(text + len + N, " [n]\nend\n");
    expect_rules_error(text, "hostile.rules:2");
    assert_true(strlen(so_error()) < 2048);
    free(text);
}

static void test_rule_unterminated_and_nul(void **state)
{
    (void)state;
    expect_rules_error("rule 1\n  input X [n]\n  src a = relu(X)\n", "hostile.rules:");
    static const char with_nul[] = "rule 1\n  input X [n]\0\n  src a = relu(X)\n  dst b = relu(X)\n  map a -> b\nend\n";
    so_ruleset rs = {0};
    /* a NUL byte would cut strings copied from the line (fuzz finding: provenance changed
       through format -> parse); it is an error naming its line */
    assert_int_equal(so_rules_parse("hostile.rules", with_nul, sizeof with_nul - 1, &rs), SO_ERR_PARSE);
    assert_string_equal(so_error(), "hostile.rules:2: NUL byte in rule text");
    assert_int_equal(rs.n_rules, 0);
}

/* An attribute list with no values prints as "ints=" and must parse back (fuzz finding). */
static void test_rule_empty_list_round_trip(void **state)
{
    (void)state;
    const char *text = "rule 1\n  input X [n,c,h,w]\n  src a = slice(X)\n  dst b = slice(X) ints=\n  map a -> b\nend\n";
    so_ruleset rs = {0};
    if (so_rules_parse("hostile.rules", text, strlen(text), &rs) != SO_OK) fail_msg("%s", so_error());
    assert_int_equal(rs.rules[0].src.nodes[0].attr.n_ints, 0);
    assert_int_equal(rs.rules[0].dst.nodes[0].attr.n_ints, 0);
    char *f = so_rule_format(&rs.rules[0]);
    assert_non_null(strstr(f, "slice(X) ints=\n"));
    so_ruleset again = {0};
    if (so_rules_parse("formatted.rules", f, strlen(f), &again) != SO_OK) fail_msg("%s", so_error());
    assert_true(so_rule_eq(&rs.rules[0], &again.rules[0]));
    so_ruleset_free(&again);
    so_ruleset_free(&rs);
    free(f);
}

/* clip_min/clip_max on an op with an activation are only printed with act=clip, so they are
   refused otherwise instead of being lost through format -> parse (fuzz finding). */
static void test_rule_clip_needs_act(void **state)
{
    (void)state;
    expect_rules_error("rule 1\n  input A [m,k]\n  input B [k,n]\n  src a = matmul(A, B) clip_min=1 act=none\n"
                       "  dst b = matmul(A, B) act=none\n  map a -> b\nend\n",
                       "hostile.rules:4: clip_min/clip_max need act=clip");
    const char *ok = "rule 1\n  input A [m,k]\n  input B [k,n]\n  src a = matmul(A, B) clip_max=6 act=clip\n"
                     "  dst b = matmul(A, B) act=clip clip_min=0 clip_max=6\n  map a -> b\nend\n";
    so_ruleset rs = {0};
    if (so_rules_parse("hostile.rules", ok, strlen(ok), &rs) != SO_OK) fail_msg("%s", so_error());
    assert_true(rs.rules[0].src.nodes[0].attr.clip_max == 6.0f);
    so_ruleset_free(&rs);
}

/* A key given twice on one line is an error (fuzz finding: "shape=at shape=n,n" left the
   symbol 'at' in the rule, and format -> parse dropped it). */
static void test_rule_repeated_attribute(void **state)
{
    (void)state;
    expect_rules_error("rule 1\n  input X [n,n]\n  src k = const_idmat() shape=at shape=n,n\n  src y = flatten(k)\n"
                       "  map y -> X\nend\n",
                       "hostile.rules:3: attribute 'shape' given twice");
}

/* Many rules are fine: the set grows. */
static void test_many_rules(void **state)
{
    (void)state;
    enum { N = 20000 };
    const char *one = "rule 1\n  input X [n]\n  src a = relu(X)\n  dst b = relu(X)\n  map a -> b\n  proof unverified\nend\n\n";
    size_t ol = strlen(one);
    char *text = so_xmalloc(ol * N + 1);
    for (int i = 0; i < N; i++) memcpy(text + (size_t)i * ol, one, ol);
    so_ruleset rs = {0};
    if (so_rules_parse("hostile.rules", text, ol * N, &rs) != SO_OK) fail_msg("%s", so_error());
    assert_int_equal(rs.n_rules, N);
    assert_int_equal(rs.rules[N - 1].id, N);
    so_ruleset_free(&rs);
    free(text);
}

/* ---------------- raw input reader (superopt run --inputs) ---------------- */

static char tmpdir[64];

static int make_tmpdir(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/so_limits_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_read_file_exact(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/in.bin", tmpdir);
    float vals[3] = {1.5f, -2.0f, 3.25f}, got[3] = {0};
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(vals, sizeof vals, 1, f), 1);
    fclose(f);
    assert_int_equal(so_read_file_exact(path, got, sizeof got), SO_OK);
    assert_memory_equal(vals, got, sizeof vals);
    /* too short and too long requests */
    assert_int_equal(so_read_file_exact(path, got, sizeof got - 1), SO_ERR);
    assert_non_null(strstr(so_error(), "expected 11 bytes"));
    assert_non_null(strstr(so_error(), "file has 12"));
    assert_int_equal(strncmp(so_error(), path, strlen(path)), 0);
    float big[4];
    assert_int_equal(so_read_file_exact(path, big, sizeof big), SO_ERR);
    /* missing file, directory, FIFO (must not block waiting for a writer) */
    char missing[160];
    snprintf(missing, sizeof missing, "%s/missing.bin", tmpdir);
    assert_int_equal(so_read_file_exact(missing, got, sizeof got), SO_ERR_IO);
    assert_non_null(strstr(so_error(), "cannot open"));
    assert_int_equal(so_read_file_exact(tmpdir, got, sizeof got), SO_ERR_IO);
    assert_non_null(strstr(so_error(), "not a regular file"));
    char fifo[160];
    snprintf(fifo, sizeof fifo, "%s/fifo", tmpdir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(so_read_file_exact(fifo, got, sizeof got), SO_ERR_IO);
    assert_non_null(strstr(so_error(), "not a regular file"));
    /* empty file for a model without input elements */
    char empty[160];
    snprintf(empty, sizeof empty, "%s/empty.bin", tmpdir);
    f = fopen(empty, "wb");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(so_read_file_exact(empty, got, 0), SO_OK);
}

static void test_parse_bytes(void **state)
{
    (void)state;
    size_t v = 0;
    assert_int_equal(so_parse_bytes("1000", &v), 0);
    assert_int_equal(v, 1000);
    assert_int_equal(so_parse_bytes("512M", &v), 0);
    assert_int_equal(v, (size_t)512 << 20);
    assert_int_equal(so_parse_bytes("2G", &v), 0);
    assert_int_equal(v, (size_t)2 << 30);
    assert_int_equal(so_parse_bytes("4KiB", &v), 0);
    assert_int_equal(v, 4096);
    assert_int_equal(so_parse_bytes("3GB", &v), 0);
    assert_int_equal(v, (size_t)3 << 30);
    assert_int_equal(so_parse_bytes("1t", &v), 0);
    assert_int_equal(v, (size_t)1 << 40);
    const char *bad[] = {"", "0", "-1", "G", "12X", "1.5G", "99999999999999999999", "16777216T", " 5", "5 "};
    for (size_t i = 0; i < SO_ARRAY_LEN(bad); i++)
        if (so_parse_bytes(bad[i], &v) == 0) fail_msg("'%s' accepted", bad[i]);
}

/* ---------------- saved fuzzer findings ---------------- */

/* Every file in dir gives SO_OK or a clean SO_ERR from load(path, data, len); returns the count. */
static int replay_dir(const char *dir, int rules)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int count = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        rewind(f);
        char *buf = so_xmalloc((size_t)n + 1);
        assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
        fclose(f);
        so_status st;
        if (rules) {
            so_ruleset rs = {0};
            st = so_rules_parse(path, buf, (size_t)n, &rs);
            /* as the fuzz target checks: accepted rules survive format -> parse unchanged */
            for (int32_t i = 0; st == SO_OK && i < rs.n_rules; i++) {
                char *text = so_rule_format(&rs.rules[i]);
                so_ruleset again = {0};
                if (so_rules_parse("formatted.rules", text, strlen(text), &again) != SO_OK || again.n_rules != 1 ||
                    !so_rule_eq(&rs.rules[i], &again.rules[0]))
                    fail_msg("%s: rule %d changes through format -> parse:\n%s", path, (int)i + 1, text);
                so_ruleset_free(&again);
                free(text);
            }
            so_ruleset_free(&rs);
        } else {
            so_model *m = NULL;
            st = so_onnx_load_buffer(path, buf, (size_t)n, &m);
            so_model_free(m);
        }
        if (st != SO_OK) {
            const char *msg = so_error();
            if (!msg[0] || strchr(msg, '\n') || strncmp(msg, path, strlen(path)) != 0)
                fail_msg("%s: unclean error message '%s'", path, msg);
        }
        free(buf);
        count++;
    }
    closedir(d);
    return count;
}

static void test_fuzz_regressions(void **state)
{
    (void)state;
    size_t saved = so_max_alloc_bytes;
    so_max_alloc_bytes = (size_t)16 << 20; /* as in the fuzz target */
    int n = replay_dir("tests/fuzz/regressions/onnx", 0) + replay_dir("tests/fuzz/regressions/rules", 1);
    so_max_alloc_bytes = saved;
    print_message("%d saved fuzzer inputs replayed\n", n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_input_dims_overflow),
        cmocka_unit_test(test_input_dim_absurd),
        cmocka_unit_test(test_input_rank_too_high),
        cmocka_unit_test(test_initializer_dims_overflow),
        cmocka_unit_test(test_initializer_absurd_allocation),
        cmocka_unit_test(test_max_memory_limit_applies),
        cmocka_unit_test(test_expand_shape_overflow),
        cmocka_unit_test(test_fold_size_capped),
        cmocka_unit_test(test_huge_activation_refused_by_executor),
        cmocka_unit_test(test_cycle),
        cmocka_unit_test(test_self_loop),
        cmocka_unit_test(test_undefined_input),
        cmocka_unit_test(test_deep_chain),
        cmocka_unit_test(test_too_many_node_inputs),
        cmocka_unit_test(test_nodes_without_inputs),
        cmocka_unit_test(test_huge_perm),
        cmocka_unit_test(test_huge_pads),
        cmocka_unit_test(test_many_attributes),
        cmocka_unit_test(test_perm_values_out_of_range),
        cmocka_unit_test(test_int64_attributes_not_truncated),
        cmocka_unit_test(test_slice_extreme_steps),
        cmocka_unit_test(test_range_extremes),
        cmocka_unit_test(test_opaque_shapes_bounded),
        cmocka_unit_test(test_shape_overflows),
        cmocka_unit_test(test_long_names),
        cmocka_unit_test(test_rule_pattern_too_long),
        cmocka_unit_test(test_rule_too_many_inputs),
        cmocka_unit_test(test_rule_too_many_symbols),
        cmocka_unit_test(test_rule_long_dim_expression),
        cmocka_unit_test(test_rule_huge_numbers),
        cmocka_unit_test(test_rule_long_line_and_names),
        cmocka_unit_test(test_rule_unterminated_and_nul),
        cmocka_unit_test(test_rule_empty_list_round_trip),
        cmocka_unit_test(test_rule_clip_needs_act),
        cmocka_unit_test(test_rule_repeated_attribute),
        cmocka_unit_test(test_many_rules),
        cmocka_unit_test_setup_teardown(test_read_file_exact, make_tmpdir, remove_tmpdir),
        cmocka_unit_test(test_parse_bytes),
        cmocka_unit_test(test_fuzz_regressions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
