/* test_shape.c - shape inference: output shapes per operator and one-line errors for shapes that do not fit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shape.h"
#define TEST_MODEL_FIXTURE
#include "test_util.h"

#define D(...) ((const int64_t[]){__VA_ARGS__})

/* A source node with a given shape (a weight without data; shape inference never reads data). */
static int32_t src(int rank, const int64_t *dims)
{
    so_shape s = so_shape_make(rank, dims);
    int32_t id = so_model_add_weight(M, NULL, s, NULL);
    int32_t n = so_graph_add(G, SO_OP_WEIGHT, NULL, 0, 1, NULL, id, NULL);
    assert_int_equal(so_shape_infer(G, n), SO_OK);
    return n;
}

static int32_t src_i64(int rank, const int64_t *dims)
{
    so_shape s = so_shape_make(rank, dims);
    s.dtype = SO_I64;
    int32_t id = so_model_add_weight(M, NULL, s, NULL);
    int32_t n = so_graph_add(G, SO_OP_WEIGHT, NULL, 0, 1, NULL, id, NULL);
    assert_int_equal(so_shape_infer(G, n), SO_OK);
    return n;
}

/* Adds a node; returns its index. Shape inference is run by ok()/err(). */
static int32_t add(so_op op, const so_attr *a, int n_in, const int32_t *ins, int n_out, const char *name)
{
    so_edge e[SO_MAX_IN];
    for (int k = 0; k < n_in; k++) e[k] = (so_edge){ins[k], 0};
    return so_graph_add(G, op, e, n_in, n_out, a ? so_model_attr(M, a) : NULL, -1, name);
}

/* Infers node and checks output slot against rank/dims. */
static void ok_shape(int32_t n, int slot, int rank, const int64_t *dims)
{
    if (so_shape_infer(G, n) != SO_OK) fail_msg("unexpected error: %s", so_error());
    const so_shape *s = &G->nodes[n].out[slot];
    char buf[128];
    if (s->rank != rank) fail_msg("rank %d, want %d (%s)", (int)s->rank, rank, so_shape_str(s, buf, sizeof buf));
    for (int k = 0; k < rank; k++)
        if (s->dim[k] != dims[k]) fail_msg("got %s, dim %d want %lld", so_shape_str(s, buf, sizeof buf), k, (long long)dims[k]);
}

/* Infers node, expects an error whose message contains `want`. */
static void err_has(int32_t n, const char *want)
{
    assert_int_equal(so_shape_infer(G, n), SO_ERR);
    if (!strstr(so_error(), want)) fail_msg("message '%s' lacks '%s'", so_error(), want);
}

static so_attr A0(void)
{
    so_attr a;
    memset(&a, 0, sizeof a);
    return a;
}

static so_attr ints(int n, const int64_t *v)
{
    so_attr a = A0();
    a.n_ints = n;
    for (int k = 0; k < n; k++) a.ints[k] = v[k];
    return a;
}

/* ---------------- sources ---------------- */

static void test_sources(void **s)
{
    (void)s;
    M->n_inputs = 2;
    M->inputs = so_arena_alloc(&M->arena, 2 * sizeof *M->inputs);
    M->inputs[0].name = "x";
    M->inputs[0].shape = so_shape_make(4, D(1, 3, 8, 8));
    M->inputs[1].name = "bad";
    M->inputs[1].shape = so_shape_make(2, D(1, -1));
    int32_t x = so_graph_add(G, SO_OP_INPUT, NULL, 0, 1, NULL, 0, "x");
    ok_shape(x, 0, 4, D(1, 3, 8, 8));
    int32_t b = so_graph_add(G, SO_OP_INPUT, NULL, 0, 1, NULL, 1, "bad");
    err_has(b, "graph input 'bad' has unknown or non-positive dimension 1 in [1,-1]");
    int32_t m = so_graph_add(G, SO_OP_INPUT, NULL, 0, 1, NULL, 5, "missing");
    err_has(m, "refers to graph input #5");
    int32_t w = src(2, D(4, 5));
    ok_shape(w, 0, 2, D(4, 5));
    int32_t wm = so_graph_add(G, SO_OP_WEIGHT, NULL, 0, 1, NULL, 99, NULL);
    err_has(wm, "refers to weight #99");
}

static void test_opaque(void **s)
{
    (void)s;
    int32_t x = src(2, D(2, 3));
    /* without a model record: keeps the node's shapes */
    so_edge e[1] = {{x, 0}};
    int32_t o = so_graph_add(G, SO_OP_OPAQUE, e, 1, 2, NULL, -1, "op");
    G->nodes[o].out[0] = so_shape_make(1, D(7));
    G->nodes[o].out[1].rank = -1;
    ok_shape(o, 0, 1, D(7));
    assert_int_equal(G->nodes[o].out[1].rank, -1);
    /* with a model record: copies from it */
    M->opaque = so_arena_alloc(&M->arena, sizeof *M->opaque);
    M->n_opaque = M->cap_opaque = 1;
    M->opaque[0].op_type = "Foo";
    M->opaque[0].n_out = 1;
    M->opaque[0].out = so_arena_alloc(&M->arena, sizeof(so_shape));
    M->opaque[0].out[0] = so_shape_make(3, D(1, 2, 3));
    int32_t o2 = so_graph_add(G, SO_OP_OPAQUE, e, 1, 1, NULL, 0, "foo");
    ok_shape(o2, 0, 3, D(1, 2, 3));
    /* downstream of an unknown shape: unknown */
    so_edge e2[1] = {{o, 1}};
    int32_t r = so_graph_add(G, SO_OP_RELU, e2, 1, 1, NULL, -1, "r");
    assert_int_equal(so_shape_infer(G, r), SO_OK);
    assert_int_equal(G->nodes[r].out[0].rank, -1);
    int32_t y = src(2, D(3, 4));
    so_edge e3[2] = {{o, 1}, {y, 0}};
    int32_t mm = so_graph_add(G, SO_OP_MATMUL, e3, 2, 1, NULL, -1, "mm");
    assert_int_equal(so_shape_infer(G, mm), SO_OK);
    assert_int_equal(G->nodes[mm].out[0].rank, -1);
}

/* ---------------- Conv ---------------- */

/* The one window formula (src/shape.h), which the rule checker and the generator also use: floor,
   ceil_mode with PyTorch's rule (the last window starts inside the input or the leading pad), dilation,
   does-not-fit, overflow. */
static void test_window_out(void **s)
{
    (void)s;
    assert_int_equal(so_window_out(7, 3, 2, 1, 1, 1, 0), 4);
    assert_int_equal(so_window_out(6, 3, 2, 0, 0, 1, 0), 2);
    assert_int_equal(so_window_out(6, 3, 2, 0, 0, 1, 1), 3);
    assert_int_equal(so_window_out(4, 1, 2, 0, 1, 1, 1), 2); /* ceil would give 3; the third window starts in the trailing pad */
    assert_int_equal(so_window_out(9, 3, 1, 0, 0, 2, 0), 5);
    assert_int_equal(so_window_out(2, 3, 1, 0, 0, 1, 0), -1);
    assert_int_equal(so_window_out(INT64_MAX, 3, 1, 1, 1, 1, 0), -1);
}

static void test_conv(void **s)
{
    (void)s;
    int32_t x = src(4, D(1, 3, 224, 224)), w = src(4, D(64, 3, 7, 7)), b = src(1, D(64));
    so_attr a = A0();
    a.stride[0] = a.stride[1] = 2;
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 3;
    ok_shape(add(SO_OP_CONV, &a, 3, (int32_t[]){x, w, b}, 1, "c"), 0, 4, D(1, 64, 112, 112));
    /* defaults (zero attrs) mean stride 1, dilation 1, group 1 */
    ok_shape(add(SO_OP_CONV, NULL, 2, (int32_t[]){x, w}, 1, "c"), 0, 4, D(1, 64, 218, 218));
    /* dilation 2: effective kernel 13 */
    so_attr d = A0();
    d.dilation[0] = d.dilation[1] = 2;
    ok_shape(add(SO_OP_CONV, &d, 2, (int32_t[]){x, w}, 1, "c"), 0, 4, D(1, 64, 212, 212));
    /* asymmetric pads: top 1, left 0, bottom 0, right 2 */
    so_attr p = A0();
    p.pad[0] = 1;
    p.pad[3] = 2;
    ok_shape(add(SO_OP_CONV, &p, 2, (int32_t[]){x, w}, 1, "c"), 0, 4, D(1, 64, 219, 220));
    /* groups and depthwise */
    int32_t x8 = src(4, D(2, 8, 5, 5)), wg = src(4, D(4, 2, 3, 3)), wd = src(4, D(8, 1, 3, 3));
    so_attr g = A0();
    g.group = 4;
    ok_shape(add(SO_OP_CONV, &g, 2, (int32_t[]){x8, wg}, 1, "c"), 0, 4, D(2, 4, 3, 3));
    g.group = 8;
    ok_shape(add(SO_OP_CONV, &g, 2, (int32_t[]){x8, wd}, 1, "c"), 0, 4, D(2, 8, 3, 3));
}

static void test_conv_errors(void **s)
{
    (void)s;
    int32_t x4 = src(4, D(1, 4, 224, 224)), w = src(4, D(64, 3, 7, 7)), x = src(4, D(1, 3, 224, 224));
    err_has(add(SO_OP_CONV, NULL, 2, (int32_t[]){x4, w}, 1, "Conv_3"),
            "node 'Conv_3' (Conv): weight [64,3,7,7] needs 3 input channels per group, input [1,4,224,224] has 4");
    so_attr g = A0();
    g.group = 2;
    int32_t wg = src(4, D(6, 3, 3, 3));
    err_has(add(SO_OP_CONV, &g, 2, (int32_t[]){x4, wg}, 1, "cg"), "needs 3 input channels per group x 2 groups = 6, input [1,4,224,224] has 4");
    g.group = 4;
    err_has(add(SO_OP_CONV, &g, 2, (int32_t[]){x4, src(4, D(6, 1, 3, 3))}, 1, "cg"), "not divisible by group 4");
    err_has(add(SO_OP_CONV, NULL, 3, (int32_t[]){x, w, src(1, D(32))}, 1, "cb"), "bias [32] must be [64]");
    err_has(add(SO_OP_CONV, NULL, 2, (int32_t[]){src(3, D(3, 224, 224)), w}, 1, "c3"), "input [3,224,224] must have rank 4");
    err_has(add(SO_OP_CONV, NULL, 2, (int32_t[]){src(4, D(1, 3, 5, 5)), w}, 1, "small"), "does not fit input [1,3,5,5]");
    err_has(add(SO_OP_CONV, NULL, 1, (int32_t[]){x}, 1, "c1"), "node 'c1' (Conv): has 1 inputs, expected 2 to 3");
    err_has(add(SO_OP_CONV, NULL, 2, (int32_t[]){src_i64(4, D(1, 3, 224, 224)), w}, 1, "ci"), "input 0 has dtype int64, expected float");
}

/* ---------------- MatMul, Gemm ---------------- */

static void test_matmul(void **s)
{
    (void)s;
    int32_t a = src(2, D(2, 3)), b = src(2, D(3, 4));
    ok_shape(add(SO_OP_MATMUL, NULL, 2, (int32_t[]){a, b}, 1, "m"), 0, 2, D(2, 4));
    ok_shape(add(SO_OP_MATMUL, NULL, 2, (int32_t[]){src(4, D(2, 1, 5, 3)), src(3, D(7, 3, 4))}, 1, "m"), 0, 4, D(2, 7, 5, 4));
    ok_shape(add(SO_OP_MATMUL, NULL, 2, (int32_t[]){src(1, D(3)), b}, 1, "m"), 0, 1, D(4));
    ok_shape(add(SO_OP_MATMUL, NULL, 2, (int32_t[]){src(3, D(5, 2, 3)), src(1, D(3))}, 1, "m"), 0, 2, D(5, 2));
    ok_shape(add(SO_OP_MATMUL, NULL, 2, (int32_t[]){src(1, D(3)), src(1, D(3))}, 1, "m"), 0, 0, NULL);
    err_has(add(SO_OP_MATMUL, NULL, 2, (int32_t[]){a, a}, 1, "mm"), "node 'mm' (MatMul): inner dimensions differ: [2,3] x [2,3]");
    err_has(add(SO_OP_MATMUL, NULL, 2, (int32_t[]){src(3, D(2, 2, 3)), src(3, D(3, 3, 4))}, 1, "mb"),
            "batch dimensions of [2,2,3] and [3,3,4] do not broadcast");
}

static void test_gemm(void **s)
{
    (void)s;
    int32_t a = src(2, D(2, 3)), b = src(2, D(3, 4)), at = src(2, D(3, 2)), bt = src(2, D(4, 3));
    so_attr t = A0();
    ok_shape(add(SO_OP_GEMM, &t, 3, (int32_t[]){a, b, src(1, D(4))}, 1, "g"), 0, 2, D(2, 4));
    t.trans_a = t.trans_b = 1;
    ok_shape(add(SO_OP_GEMM, &t, 3, (int32_t[]){at, bt, src(2, D(2, 1))}, 1, "g"), 0, 2, D(2, 4));
    ok_shape(add(SO_OP_GEMM, &t, 3, (int32_t[]){at, bt, src(0, NULL)}, 1, "g"), 0, 2, D(2, 4));
    err_has(add(SO_OP_GEMM, &t, 3, (int32_t[]){at, bt, src(1, D(2))}, 1, "g"), "C [2] does not broadcast to [2,4]");
    err_has(add(SO_OP_GEMM, &t, 2, (int32_t[]){a, b}, 1, "g"), "inner dimensions differ: A [2,3] (trans_a 1) x B [3,4] (trans_b 1)");
}

/* ---------------- element-wise ---------------- */

static void test_broadcast(void **s)
{
    (void)s;
    ok_shape(add(SO_OP_ADD, NULL, 2, (int32_t[]){src(2, D(3, 1)), src(2, D(1, 4))}, 1, "a"), 0, 2, D(3, 4));
    ok_shape(add(SO_OP_MUL, NULL, 2, (int32_t[]){src(3, D(2, 1, 5)), src(1, D(5))}, 1, "a"), 0, 3, D(2, 1, 5));
    ok_shape(add(SO_OP_SUB, NULL, 2, (int32_t[]){src(0, NULL), src(2, D(2, 2))}, 1, "a"), 0, 2, D(2, 2));
    err_has(add(SO_OP_DIV, NULL, 2, (int32_t[]){src(2, D(3, 2)), src(1, D(4))}, 1, "Div_1"), "node 'Div_1' (Div): cannot broadcast [3,2] with [4]");
    err_has(add(SO_OP_PRELU, NULL, 2, (int32_t[]){src_i64(1, D(2)), src_i64(1, D(2))}, 1, "p"), "inputs have dtype int64, expected float");
    /* integer Pow, Mod, Cast and the boolean operators (values fed at run time) */
    ok_shape(add(SO_OP_POW, NULL, 2, (int32_t[]){src_i64(1, D(2)), src_i64(1, D(2))}, 1, "pi"), 0, 1, D(2));
    ok_shape(add(SO_OP_AND, NULL, 2, (int32_t[]){src_i64(2, D(3, 2)), src_i64(1, D(2))}, 1, "and"), 0, 2, D(3, 2));
    err_has(add(SO_OP_OR, NULL, 2, (int32_t[]){src(1, D(2)), src(1, D(2))}, 1, "or"), "inputs must be bool");
    err_has(add(SO_OP_NOT, NULL, 1, (int32_t[]){src(1, D(2))}, 1, "not"), "expected bool");
    {
        so_attr ca = {.mode = SO_BOOL};
        int32_t c = add(SO_OP_CAST, &ca, 1, (int32_t[]){src(1, D(2))}, 1, "cast");
        ok_shape(c, 0, 1, D(2));
        assert_int_equal(G->nodes[c].out[0].dtype, SO_I64);
        ca.mode = 10; /* float16 */
        err_has(add(SO_OP_CAST, &ca, 1, (int32_t[]){src(1, D(2))}, 1, "cast16"), "cast to ONNX type 10 is not supported");
    }
    err_has(add(SO_OP_ADD, NULL, 2, (int32_t[]){src_i64(1, D(2)), src(1, D(2))}, 1, "p"), "dtypes differ: int64 and float");
    int32_t ia = add(SO_OP_ADD, NULL, 2, (int32_t[]){src_i64(1, D(2)), src_i64(0, NULL)}, 1, "i");
    ok_shape(ia, 0, 1, D(2));
    assert_int_equal(G->nodes[ia].out[0].dtype, SO_I64);
    so_shape o, x = so_shape_make(2, D(3, 1)), y = so_shape_make(3, D(2, 1, 4));
    assert_int_equal(so_shape_broadcast(&x, &y, &o), SO_OK);
    assert_int_equal(o.rank, 3);
    assert_int_equal(o.dim[0], 2);
    assert_int_equal(o.dim[1], 3);
    assert_int_equal(o.dim[2], 4);
    int32_t x5 = src(2, D(2, 5));
    for (int op = SO_OP_RELU; op <= SO_OP_CLIP; op++) ok_shape(add((so_op)op, NULL, 1, &x5, 1, "u"), 0, 2, D(2, 5));
    err_has(add(SO_OP_EXP, NULL, 1, (int32_t[]){src_i64(1, D(2))}, 1, "e"), "expected float");
    err_has(add(SO_OP_RELU, NULL, 2, (int32_t[]){x5, x5}, 1, "r2"), "has 2 inputs, expected 1");
}

/* ---------------- normalisation, pooling ---------------- */

static void test_pools(void **s)
{
    (void)s;
    int32_t x = src(4, D(1, 8, 32, 32));
    so_attr a = A0();
    a.kernel[0] = a.kernel[1] = 3;
    a.stride[0] = a.stride[1] = 2;
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
    ok_shape(add(SO_OP_MAXPOOL, &a, 1, &x, 1, "p"), 0, 4, D(1, 8, 16, 16));
    ok_shape(add(SO_OP_AVGPOOL, &a, 1, &x, 1, "p"), 0, 4, D(1, 8, 16, 16));
    /* ceil_mode: 6 with kernel 2 stride 3 -> ceil gives 3, but the last window would start
       at 6 (outside): PyTorch/ORT drop it -> 2 */
    int32_t x6 = src(4, D(1, 1, 6, 7));
    so_attr c = A0();
    c.kernel[0] = c.kernel[1] = 2;
    c.stride[0] = c.stride[1] = 3;
    c.ceil_mode = 1;
    ok_shape(add(SO_OP_MAXPOOL, &c, 1, &x6, 1, "p"), 0, 4, D(1, 1, 2, 3));
    c.ceil_mode = 0;
    ok_shape(add(SO_OP_MAXPOOL, &c, 1, &x6, 1, "p"), 0, 4, D(1, 1, 2, 2));
    /* ceil with pads: 5 + 1 + 1, kernel 2, stride 3 -> 2 (third window would start in the end pad) */
    int32_t x5 = src(4, D(1, 1, 5, 5));
    c.ceil_mode = 1;
    c.pad[0] = c.pad[1] = c.pad[2] = c.pad[3] = 1;
    ok_shape(add(SO_OP_AVGPOOL, &c, 1, &x5, 1, "p"), 0, 4, D(1, 1, 2, 2));
    /* dilation on maxpool */
    so_attr d = A0();
    d.kernel[0] = d.kernel[1] = 3;
    d.dilation[0] = d.dilation[1] = 2;
    ok_shape(add(SO_OP_MAXPOOL, &d, 1, &x, 1, "p"), 0, 4, D(1, 8, 28, 28));
    ok_shape(add(SO_OP_GLOBALAVGPOOL, NULL, 1, &x, 1, "g"), 0, 4, D(1, 8, 1, 1));
    so_attr big = A0();
    big.kernel[0] = big.kernel[1] = 7;
    err_has(add(SO_OP_MAXPOOL, &big, 1, &x5, 1, "MaxPool_9"), "node 'MaxPool_9' (MaxPool): kernel 7x7 (pads 0,0,0,0) does not fit input [1,1,5,5]");
    so_attr z = A0();
    err_has(add(SO_OP_AVGPOOL, &z, 1, &x5, 1, "ap"), "kernel 0x0 must be positive");
    err_has(add(SO_OP_GLOBALAVGPOOL, NULL, 1, (int32_t[]){src(2, D(2, 2))}, 1, "gp"), "must have rank >= 3");
}

static void test_norms(void **s)
{
    (void)s;
    int32_t x = src(4, D(2, 3, 4, 4)), c3 = src(1, D(3)), c4 = src(1, D(4));
    so_attr e = A0();
    e.epsilon = 1e-5f;
    ok_shape(add(SO_OP_BATCHNORM, &e, 5, (int32_t[]){x, c3, c3, c3, c3}, 1, "bn"), 0, 4, D(2, 3, 4, 4));
    err_has(add(SO_OP_BATCHNORM, &e, 5, (int32_t[]){x, c3, c3, c4, c3}, 1, "bn"), "mean [4] must be [3] for input [2,3,4,4]");
    so_attr sm = A0();
    sm.axis = 3;
    ok_shape(add(SO_OP_SOFTMAX, &sm, 1, &x, 1, "sm"), 0, 4, D(2, 3, 4, 4));
    sm.axis = 4;
    err_has(add(SO_OP_SOFTMAX, &sm, 1, &x, 1, "sm"), "axis 4 out of range for input [2,3,4,4]");
    so_attr r = ints(2, D(2, 3));
    ok_shape(add(SO_OP_REDUCEMEAN, &r, 1, &x, 1, "r"), 0, 2, D(2, 3));
    r.keepdims = 1;
    ok_shape(add(SO_OP_REDUCEMEAN, &r, 1, &x, 1, "r"), 0, 4, D(2, 3, 1, 1));
    so_attr all = A0();
    ok_shape(add(SO_OP_REDUCEMEAN, &all, 1, &x, 1, "r"), 0, 0, NULL);
    so_attr bad = ints(2, D(3, 1));
    err_has(add(SO_OP_REDUCEMEAN, &bad, 1, &x, 1, "r"), "reduce axes must be sorted and distinct");
    so_attr ln = A0();
    ln.axis = 2;
    int32_t s44 = src(2, D(4, 4));
    ok_shape(add(SO_OP_LAYERNORM, &ln, 3, (int32_t[]){x, s44, c4}, 1, "ln"), 0, 4, D(2, 3, 4, 4));
    err_has(add(SO_OP_LAYERNORM, &ln, 2, (int32_t[]){x, c3}, 1, "ln"), "scale [3] does not broadcast to the normalised shape [4,4] of input [2,3,4,4]");
}

/* ---------------- data movement ---------------- */

static void test_data_movement(void **s)
{
    (void)s;
    int32_t x = src(3, D(2, 3, 4));
    so_attr p = ints(6, D(0, 1, 2, 0, 1, 0));
    ok_shape(add(SO_OP_PAD, &p, 1, &x, 1, "pad"), 0, 3, D(2, 5, 6));
    so_attr pr = ints(6, D(0, 3, 0, 0, 0, 0));
    pr.mode = 1;
    err_has(add(SO_OP_PAD, &pr, 1, &x, 1, "pad"), "reflect pads 3,0 on axis 1 must be smaller than the dimension");
    so_attr p4 = ints(4, D(0, 0, 0, 0));
    err_has(add(SO_OP_PAD, &p4, 1, &x, 1, "pad"), "has 4 pads for input [2,3,4] of rank 3 (need 6)");

    so_attr cat = A0();
    cat.axis = 1;
    ok_shape(add(SO_OP_CONCAT, &cat, 3, (int32_t[]){x, src(3, D(2, 1, 4)), x}, 1, "cat"), 0, 3, D(2, 7, 4));
    err_has(add(SO_OP_CONCAT, &cat, 2, (int32_t[]){x, src(3, D(2, 1, 5))}, 1, "Concat_2"),
            "node 'Concat_2' (Concat): input 1 [2,1,5] does not match input 0 [2,3,4] outside axis 1");

    so_attr sp = ints(2, D(1, 2));
    sp.axis = 1;
    int32_t spn = add(SO_OP_SPLIT, &sp, 1, &x, 2, "split");
    ok_shape(spn, 0, 3, D(2, 1, 4));
    ok_shape(spn, 1, 3, D(2, 2, 4));
    so_attr sp2 = ints(2, D(1, 1));
    sp2.axis = 1;
    err_has(add(SO_OP_SPLIT, &sp2, 1, &x, 2, "split"), "split sizes sum to 2, input [2,3,4] has 3 on axis 1");
    err_has(add(SO_OP_SPLIT, &sp, 1, &x, 3, "split"), "has 2 split sizes for 3 outputs");

    so_attr f = A0();
    f.axis = 1;
    ok_shape(add(SO_OP_FLATTEN, &f, 1, &x, 1, "f"), 0, 2, D(2, 12));
    f.axis = 0;
    ok_shape(add(SO_OP_FLATTEN, &f, 1, &x, 1, "f"), 0, 2, D(1, 24));
    f.axis = 3;
    ok_shape(add(SO_OP_FLATTEN, &f, 1, &x, 1, "f"), 0, 2, D(24, 1));

    so_attr rs = ints(2, D(6, 4));
    ok_shape(add(SO_OP_RESHAPE, &rs, 1, &x, 1, "rs"), 0, 2, D(6, 4));
    so_attr rb = ints(2, D(5, 5));
    err_has(add(SO_OP_RESHAPE, &rb, 1, &x, 1, "rs"), "cannot reshape input [2,3,4] (24 elements) to [5,5]");

    so_attr tp = ints(3, D(2, 0, 1));
    ok_shape(add(SO_OP_TRANSPOSE, &tp, 1, &x, 1, "t"), 0, 3, D(4, 2, 3));
    so_attr t0 = A0();
    ok_shape(add(SO_OP_TRANSPOSE, &t0, 1, &x, 1, "t"), 0, 3, D(4, 3, 2));
    so_attr bad_perm = ints(3, D(0, 0, 1));
    err_has(add(SO_OP_TRANSPOSE, &bad_perm, 1, &x, 1, "t"), "perm is not a permutation of 0..2");

    int32_t y = src(4, D(1, 3, 1, 2));
    so_attr sq = ints(2, D(0, 2));
    ok_shape(add(SO_OP_SQUEEZE, &sq, 1, &y, 1, "sq"), 0, 2, D(3, 2));
    so_attr sq0 = A0();
    ok_shape(add(SO_OP_SQUEEZE, &sq0, 1, &y, 1, "sq"), 0, 2, D(3, 2));
    so_attr sqb = ints(1, D(1));
    err_has(add(SO_OP_SQUEEZE, &sqb, 1, &y, 1, "sq"), "cannot squeeze axis 1 of input [1,3,1,2] (size 3)");
    so_attr us = ints(2, D(0, 4));
    ok_shape(add(SO_OP_UNSQUEEZE, &us, 1, &x, 1, "us"), 0, 5, D(1, 2, 3, 4, 1));
    ok_shape(add(SO_OP_IDENTITY, NULL, 1, &x, 1, "id"), 0, 3, D(2, 3, 4));

    so_attr ex = ints(4, D(5, 2, 1, 4));
    ok_shape(add(SO_OP_EXPAND, &ex, 1, &x, 1, "ex"), 0, 4, D(5, 2, 3, 4));
    so_attr exb = ints(2, D(2, 4));
    err_has(add(SO_OP_EXPAND, &exb, 1, &x, 1, "ex"), "cannot expand input [2,3,4] to [2,4]");
    so_attr huge = ints(5, D((int64_t)1 << 40, (int64_t)1 << 40, 1, 1, 1));
    err_has(add(SO_OP_EXPAND, &huge, 1, &x, 1, "ex"), "too many elements");
}

static void test_gather_slice(void **s)
{
    (void)s;
    int32_t x = src(3, D(5, 6, 7)), idx = src_i64(2, D(2, 3)), sc = src_i64(0, NULL);
    so_attr g = A0();
    g.axis = 1;
    int32_t gn = add(SO_OP_GATHER, &g, 2, (int32_t[]){x, idx}, 1, "g");
    ok_shape(gn, 0, 4, D(5, 2, 3, 7));
    ok_shape(add(SO_OP_GATHER, &g, 2, (int32_t[]){x, sc}, 1, "g"), 0, 2, D(5, 7));
    err_has(add(SO_OP_GATHER, &g, 2, (int32_t[]){x, src(1, D(2))}, 1, "Gather_0"), "node 'Gather_0' (Gather): indices [2] have dtype float, expected int64");
    int32_t xi = src_i64(1, D(4));
    g.axis = 0;
    int32_t gi = add(SO_OP_GATHER, &g, 2, (int32_t[]){xi, sc}, 1, "g");
    ok_shape(gi, 0, 0, NULL);
    assert_int_equal(G->nodes[gi].out[0].dtype, SO_I64);

    so_attr sl = ints(8, D(1, 1, 6, 2, 2, 6, -1, -3));
    ok_shape(add(SO_OP_SLICE, &sl, 1, &x, 1, "s"), 0, 3, D(5, 3, 3));
    so_attr se = ints(4, D(0, 3, 3, 1));
    err_has(add(SO_OP_SLICE, &se, 1, &x, 1, "s"), "slice 3:3:1 on axis 0 of input [5,6,7] is empty");
    so_attr sz = ints(4, D(0, 0, 3, 0));
    err_has(add(SO_OP_SLICE, &sz, 1, &x, 1, "s"), "slice step 0");
    so_attr su = ints(4, D(0, 0, 9, 1));
    err_has(add(SO_OP_SLICE, &su, 1, &x, 1, "s"), "not clamped");

    /* gathernd (batch_dims 1): [5,6,7] by [5,2,1] -> [5,2,7]; scatterelements: data's shape; gridsample [N,C,Ho,Wo] */
    so_attr gb = A0();
    gb.axis = 1;
    ok_shape(add(SO_OP_GATHERND, &gb, 2, (int32_t[]){x, src_i64(3, D(5, 2, 1))}, 1, "gn"), 0, 3, D(5, 2, 7));
    err_has(add(SO_OP_GATHERND, &gb, 2, (int32_t[]){x, src_i64(3, D(4, 2, 1))}, 1, "gn"), "batch dimensions of [5,6,7] and [4,2,1] differ");
    int32_t ix = src_i64(3, D(5, 2, 7));
    ok_shape(add(SO_OP_SCATTERELEMENTS, &gb, 3, (int32_t[]){x, ix, src(3, D(5, 2, 7))}, 1, "se"), 0, 3, D(5, 6, 7));
    err_has(add(SO_OP_SCATTERELEMENTS, &gb, 3, (int32_t[]){x, ix, src(3, D(5, 2, 6))}, 1, "se"),
            "data [5,6,7], int64 indices [5,2,7] and updates [5,2,6] do not fit");
    so_attr gs = ints(2, D(0, 0));
    int32_t im = src(4, D(2, 3, 8, 8));
    ok_shape(add(SO_OP_GRIDSAMPLE, &gs, 2, (int32_t[]){im, src(4, D(2, 4, 5, 2))}, 1, "gs"), 0, 4, D(2, 3, 4, 5));
    err_has(add(SO_OP_GRIDSAMPLE, &gs, 2, (int32_t[]){im, src(4, D(2, 4, 5, 3))}, 1, "gs"),
            "input [2,3,8,8] and grid [2,4,5,3] are not [N,C,H,W] and [N,Ho,Wo,2]");
}

static void test_lstm(void **s)
{
    (void)s;
    int32_t x = src(3, D(8, 2, 32)), w = src(3, D(1, 256, 32)), r = src(3, D(1, 256, 64)), b = src(2, D(1, 512));
    so_attr a = A0();
    a.hidden = 64;
    int32_t l = add(SO_OP_LSTM, &a, 4, (int32_t[]){x, w, r, b}, 3, "lstm");
    ok_shape(l, 0, 4, D(8, 1, 2, 64));
    ok_shape(l, 1, 3, D(1, 2, 64));
    ok_shape(l, 2, 3, D(1, 2, 64));
    so_attr bi = a;
    bi.direction = 2;
    int32_t w2 = src(3, D(2, 256, 32)), r2 = src(3, D(2, 256, 64)), h0 = src(3, D(2, 2, 64)), sl = src_i64(1, D(2));
    int32_t l2 = add(SO_OP_LSTM, &bi, 7, (int32_t[]){x, w2, r2, src(2, D(2, 512)), sl, h0, h0}, 3, "lstm");
    ok_shape(l2, 0, 4, D(8, 2, 2, 64));
    ok_shape(l2, 2, 3, D(2, 2, 64));
    err_has(add(SO_OP_LSTM, &bi, 3, (int32_t[]){x, w, r}, 3, "LSTM_1"), "node 'LSTM_1' (LSTM): W [1,256,32] must be [2,256,32]");
    err_has(add(SO_OP_LSTM, &a, 3, (int32_t[]){src(3, D(8, 2, 16)), w, r}, 3, "l"), "W [1,256,32] must be [1,256,16] for input [8,2,16], hidden 64");
    err_has(add(SO_OP_LSTM, &bi, 6, (int32_t[]){x, w2, r2, src(2, D(2, 512)), sl, src(3, D(2, 1, 64))}, 3, "l"), "initial_h [2,1,64] must be [2,2,64]");
}

static void test_internal(void **s)
{
    (void)s;
    int32_t w = src(4, D(8, 4, 1, 1));
    so_attr e = A0();
    e.kernel[0] = e.kernel[1] = 3;
    ok_shape(add(SO_OP_ENLARGE, &e, 1, &w, 1, "en"), 0, 4, D(8, 4, 3, 3));
    e.kernel[0] = 2;
    err_has(add(SO_OP_ENLARGE, &e, 1, &w, 1, "en"), "cannot centre kernel [8,4,1,1] in 2x3");
    so_attr cp = ints(4, D(8, 1, 3, 3));
    ok_shape(add(SO_OP_CONST_POOL, &cp, 0, NULL, 1, "cp"), 0, 4, D(8, 1, 3, 3));
    so_attr ci = ints(4, D(8, 8, 3, 3));
    ok_shape(add(SO_OP_CONST_IDCONV, &ci, 0, NULL, 1, "ci"), 0, 4, D(8, 8, 3, 3));
    so_attr cib = ints(4, D(8, 4, 3, 3));
    err_has(add(SO_OP_CONST_IDCONV, &cib, 0, NULL, 1, "ci"), "must be [C,C,kh,kw]");
    so_attr im = ints(2, D(5, 5));
    ok_shape(add(SO_OP_CONST_IDMAT, &im, 0, NULL, 1, "im"), 0, 2, D(5, 5));
    so_attr on = ints(3, D(2, 3, 4));
    ok_shape(add(SO_OP_CONST_ONES, &on, 0, NULL, 1, "on"), 0, 3, D(2, 3, 4));
    so_attr z = ints(2, D(2, 0));
    err_has(add(SO_OP_CONST_ONES, &z, 0, NULL, 1, "on"), "non-positive dimension");
}

/* Every op has a shape function: each accepts its minimal valid case via the generic driver
   (input-count errors name the op). */
static void test_input_count_messages(void **s)
{
    (void)s;
    int32_t x = src(2, D(2, 2));
    err_has(add(SO_OP_BATCHNORM, NULL, 2, (int32_t[]){x, x}, 1, "bn"), "node 'bn' (BatchNormalization): has 2 inputs, expected 5");
    err_has(add(SO_OP_LSTM, NULL, 2, (int32_t[]){x, x}, 3, "l"), "has 2 inputs, expected 3 to 8");
    err_has(add(SO_OP_ADD, NULL, 2, (int32_t[]){x, x}, 2, "a"), "has 2 outputs, expected 1");
    so_edge e[1] = {{99, 0}};
    int32_t bad = so_graph_add(G, SO_OP_RELU, e, 1, 1, NULL, -1, NULL);
    err_has(bad, "input 0 refers to a missing tensor");
    /* unnamed nodes are described by index */
    char want[64];
    snprintf(want, sizeof want, "node #%d (Relu)", (int)bad);
    err_has(bad, want);
}

#define T(f) cmocka_unit_test_setup_teardown(f, test_model_setup, test_model_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_sources),     T(test_opaque),       T(test_window_out), T(test_conv), T(test_conv_errors), T(test_matmul),   T(test_gemm),
        T(test_broadcast),   T(test_pools),        T(test_norms), T(test_data_movement), T(test_gather_slice), T(test_lstm),
        T(test_internal),    T(test_input_count_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
