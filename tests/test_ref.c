/* test_ref.c - reference kernels: each operator on tiny hand-computed cases, so_ref_run and so_ref_eval_node. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../kernels/ref.h"
#include "shape.h"
#define TEST_MODEL_FIXTURE
#include "test_util.h"

/* ---------------- helpers: tiny graphs of WEIGHT nodes feeding one op ---------------- */

static so_shape shp_of(int rank, const int64_t *d)
{
    return so_shape_make(rank, d);
}

/* Float weight node of shape dims with a copy of data. */
static int32_t wf(int rank, const int64_t *dims, const float *data)
{
    so_shape s = shp_of(rank, dims);
    size_t n = (size_t)so_shape_numel(&s);
    float *p = malloc((n ? n : 1) * sizeof *p);
    memcpy(p, data, n * sizeof *p);
    int32_t id = so_model_add_weight(M, NULL, s, p);
    int32_t node = so_graph_add(G, SO_OP_WEIGHT, NULL, 0, 1, NULL, id, NULL);
    assert_int_equal(so_shape_infer(G, node), SO_OK);
    return node;
}

static int32_t wi(int rank, const int64_t *dims, const int64_t *data)
{
    so_shape s = shp_of(rank, dims);
    s.dtype = SO_I64;
    size_t n = (size_t)so_shape_numel(&s);
    int64_t *p = malloc((n ? n : 1) * sizeof *p);
    memcpy(p, data, n * sizeof *p);
    int32_t id = so_model_add_weight(M, NULL, s, p);
    int32_t node = so_graph_add(G, SO_OP_WEIGHT, NULL, 0, 1, NULL, id, NULL);
    assert_int_equal(so_shape_infer(G, node), SO_OK);
    return node;
}

/* Adds op over inputs (slot 0 of each), infers shapes (must succeed). */
static int32_t op(so_op o, const so_attr *a, int n_in, const int32_t *ins, int n_out)
{
    so_edge e[SO_MAX_IN];
    for (int k = 0; k < n_in; k++) e[k] = (so_edge){ins[k], 0};
    int32_t node = so_graph_add(G, o, e, n_in, n_out, a ? so_model_attr(M, a) : NULL, -1, "t");
    if (so_shape_infer(G, node) != SO_OK) fail_msg("shape inference failed: %s", so_error());
    return node;
}

/* Evaluates node (all inputs are WEIGHT nodes or earlier evaluated nodes) with so_ref_eval_node.
   Results are kept per node so that chains work; freed in free_all. */
static so_tensor R[64][3];

static void eval(int32_t node)
{
    const so_node *n = &G->nodes[node];
    so_tensor in[SO_MAX_IN];
    for (int k = 0; k < n->n_in; k++) {
        const so_node *p = &G->nodes[n->in[k].node];
        if (p->op == SO_OP_WEIGHT) {
            in[k].shape = M->weights[p->ref].shape;
            in[k].data = M->weights[p->ref].data;
        } else {
            in[k] = R[n->in[k].node][n->in[k].slot];
        }
    }
    if (so_ref_eval_node(G, node, in, R[node]) != SO_OK) fail_msg("eval failed: %s", so_error());
}

static void free_all(void)
{
    for (int i = 0; i < 64; i++)
        for (int k = 0; k < 3; k++) {
            free(R[i][k].data);
            R[i][k].data = NULL;
        }
}

static const float *outf(int32_t node, int slot) { return R[node][slot].data; }

static void expect_shape(int32_t node, int slot, int rank, const int64_t *dims)
{
    const so_shape *s = &G->nodes[node].out[slot];
    assert_int_equal(s->rank, rank);
    for (int k = 0; k < rank; k++) assert_int_equal(s->dim[k], dims[k]);
}

static void expect_vals(int32_t node, int slot, const float *want, int n, float eps)
{
    const float *got = outf(node, slot);
    assert_int_equal(so_shape_numel(&G->nodes[node].out[slot]), n);
    for (int i = 0; i < n; i++)
        if (!(fabsf(got[i] - want[i]) <= eps)) fail_msg("element %d: got %.9g, want %.9g", i, (double)got[i], (double)want[i]);
}

#define D(...) ((const int64_t[]){__VA_ARGS__})
#define F(...) ((const float[]){__VA_ARGS__})
#define N(...) (sizeof((const float[]){__VA_ARGS__}) / sizeof(float))
#define EXPECT(node, ...) expect_vals(node, 0, F(__VA_ARGS__), (int)N(__VA_ARGS__), 1e-6f)

static so_attr A0(void)
{
    so_attr a;
    memset(&a, 0, sizeof a);
    return a;
}

static const float X9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};

/* ---------------- Conv ---------------- */

static void test_conv_basic_bias(void **s)
{
    (void)s;
    int32_t x = wf(4, D(1, 1, 3, 3), X9), w = wf(4, D(1, 1, 2, 2), F(1, 0, 0, 1)), b = wf(1, D(1), F(1));
    int32_t c = op(SO_OP_CONV, NULL, 2, (int32_t[]){x, w}, 1);
    int32_t cb = op(SO_OP_CONV, NULL, 3, (int32_t[]){x, w, b}, 1);
    eval(c);
    eval(cb);
    expect_shape(c, 0, 4, D(1, 1, 2, 2));
    EXPECT(c, 6, 8, 12, 14);
    EXPECT(cb, 7, 9, 13, 15);
    free_all();
}

static void test_conv_stride2_pad1(void **s)
{
    (void)s;
    so_attr a = A0();
    a.stride[0] = a.stride[1] = 2;
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
    int32_t x = wf(4, D(1, 1, 3, 3), X9), w = wf(4, D(1, 1, 3, 3), F(1, 1, 1, 1, 1, 1, 1, 1, 1));
    int32_t c = op(SO_OP_CONV, &a, 2, (int32_t[]){x, w}, 1);
    eval(c);
    expect_shape(c, 0, 4, D(1, 1, 2, 2));
    EXPECT(c, 12, 16, 24, 28);
    free_all();
}

static void test_conv_asymmetric_pads(void **s)
{
    (void)s;
    so_attr a = A0();
    a.pad[0] = 1; /* top */
    a.pad[3] = 1; /* right */
    int32_t x = wf(4, D(1, 1, 3, 3), X9), w = wf(4, D(1, 1, 2, 2), F(1, 1, 1, 1));
    int32_t c = op(SO_OP_CONV, &a, 2, (int32_t[]){x, w}, 1);
    eval(c);
    expect_shape(c, 0, 4, D(1, 1, 3, 3));
    /* row 0: only input row 0 inside; col 2: only input col 2 inside */
    EXPECT(c, 3, 5, 3, 12, 16, 9, 24, 28, 15);
    free_all();
}

static void test_conv_dilation(void **s)
{
    (void)s;
    float x25[25];
    for (int i = 0; i < 25; i++) x25[i] = (float)i;
    so_attr a = A0();
    a.dilation[0] = a.dilation[1] = 2;
    int32_t x = wf(4, D(1, 1, 5, 5), x25), w = wf(4, D(1, 1, 3, 3), F(1, 1, 1, 1, 1, 1, 1, 1, 1));
    int32_t c = op(SO_OP_CONV, &a, 2, (int32_t[]){x, w}, 1);
    eval(c);
    expect_shape(c, 0, 4, D(1, 1, 1, 1));
    EXPECT(c, 108); /* rows 0,2,4 x cols 0,2,4 of 5r+c */
    free_all();
}

static void test_conv_groups_depthwise(void **s)
{
    (void)s;
    so_attr a = A0();
    a.group = 2;
    int32_t x = wf(4, D(1, 4, 1, 1), F(1, 2, 3, 4)), w = wf(4, D(2, 2, 1, 1), F(1, 2, 3, 4));
    int32_t c = op(SO_OP_CONV, &a, 2, (int32_t[]){x, w}, 1);
    /* depthwise: 2 channels, one filter each, with bias */
    int32_t xd = wf(4, D(1, 2, 2, 2), F(1, 2, 3, 4, 5, 6, 7, 8)), wd = wf(4, D(2, 1, 1, 1), F(2, 3)), bd = wf(1, D(2), F(0.5f, -1));
    int32_t cd = op(SO_OP_CONV, &a, 3, (int32_t[]){xd, wd, bd}, 1);
    eval(c);
    eval(cd);
    EXPECT(c, 5, 25);
    EXPECT(cd, 2.5f, 4.5f, 6.5f, 8.5f, 14, 17, 20, 23);
    free_all();
}

static void test_conv_fused_act(void **s)
{
    (void)s;
    so_attr a = A0();
    a.act = SO_ACT_RELU;
    int32_t x = wf(4, D(1, 1, 1, 3), F(1, -2, 3)), w = wf(4, D(1, 1, 1, 1), F(-1));
    int32_t c = op(SO_OP_CONV, &a, 2, (int32_t[]){x, w}, 1);
    a.act = SO_ACT_CLIP;
    a.clip_min = -0.5f;
    a.clip_max = 1.5f;
    int32_t c2 = op(SO_OP_CONV, &a, 2, (int32_t[]){x, w}, 1);
    eval(c);
    eval(c2);
    EXPECT(c, 0, 2, 0);
    EXPECT(c2, -0.5f, 1.5f, -0.5f);
    free_all();
}

/* ---------------- MatMul, Gemm ---------------- */

static void test_matmul(void **s)
{
    (void)s;
    int32_t a = wf(2, D(2, 3), F(1, 2, 3, 4, 5, 6)), b = wf(2, D(3, 2), F(7, 8, 9, 10, 11, 12));
    int32_t m = op(SO_OP_MATMUL, NULL, 2, (int32_t[]){a, b}, 1);
    /* batched A [2,2,2] with shared B [2,2] */
    int32_t ab = wf(3, D(2, 2, 2), F(1, 0, 0, 1, 0, 1, 1, 0)), bb = wf(2, D(2, 2), F(1, 2, 3, 4));
    int32_t mb = op(SO_OP_MATMUL, NULL, 2, (int32_t[]){ab, bb}, 1);
    /* 1-D operands */
    int32_t v3 = wf(1, D(3), F(1, 2, 3)), o3 = wf(1, D(3), F(1, 1, 1)), w3 = wf(1, D(3), F(4, 5, 6));
    int32_t m1 = op(SO_OP_MATMUL, NULL, 2, (int32_t[]){v3, b}, 1);
    int32_t m2 = op(SO_OP_MATMUL, NULL, 2, (int32_t[]){a, o3}, 1);
    int32_t m3 = op(SO_OP_MATMUL, NULL, 2, (int32_t[]){v3, w3}, 1);
    /* both sides broadcast: [2,1,1,2] x [3,2,1] -> [2,3,1,1] */
    int32_t a4 = wf(4, D(2, 1, 1, 2), F(1, 2, 3, 4)), b3 = wf(3, D(3, 2, 1), F(1, 1, 1, 2, 0, 1));
    int32_t m4 = op(SO_OP_MATMUL, NULL, 2, (int32_t[]){a4, b3}, 1);
    for (int32_t k = m; k <= m4; k++)
        if (G->nodes[k].op == SO_OP_MATMUL) eval(k);
    EXPECT(m, 58, 64, 139, 154);
    expect_shape(mb, 0, 3, D(2, 2, 2));
    EXPECT(mb, 1, 2, 3, 4, 3, 4, 1, 2);
    expect_shape(m1, 0, 1, D(2));
    EXPECT(m1, 58, 64);
    expect_shape(m2, 0, 1, D(2));
    EXPECT(m2, 6, 15);
    expect_shape(m3, 0, 0, NULL);
    EXPECT(m3, 32);
    expect_shape(m4, 0, 4, D(2, 3, 1, 1));
    EXPECT(m4, 3, 5, 2, 7, 11, 4);
    free_all();
}

static void test_gemm(void **s)
{
    (void)s;
    so_attr at = A0();
    at.alpha = 2;
    at.beta = 0.5f;
    int32_t a = wf(2, D(2, 3), F(1, 2, 3, 4, 5, 6)), b = wf(2, D(3, 2), F(7, 8, 9, 10, 11, 12)), c = wf(1, D(2), F(2, 4));
    int32_t g1 = op(SO_OP_GEMM, &at, 3, (int32_t[]){a, b, c}, 1);
    so_attr bt = A0();
    bt.alpha = bt.beta = 1;
    bt.trans_a = bt.trans_b = 1;
    int32_t at_ = wf(2, D(3, 2), F(1, 4, 2, 5, 3, 6)), bt_ = wf(2, D(2, 3), F(7, 9, 11, 8, 10, 12)), c2 = wf(2, D(2, 1), F(1, 2));
    int32_t g2 = op(SO_OP_GEMM, &bt, 3, (int32_t[]){at_, bt_, c2}, 1);
    int32_t g3 = op(SO_OP_GEMM, &bt, 2, (int32_t[]){at_, bt_}, 1); /* no C */
    so_attr ct = bt;
    ct.trans_a = ct.trans_b = 0;
    ct.act = SO_ACT_RELU;
    int32_t neg = wf(0, NULL, F(-100));
    int32_t g4 = op(SO_OP_GEMM, &ct, 3, (int32_t[]){a, b, neg}, 1); /* scalar C, relu */
    eval(g1);
    eval(g2);
    eval(g3);
    eval(g4);
    EXPECT(g1, 117, 130, 279, 310);
    EXPECT(g2, 59, 65, 141, 156);
    EXPECT(g3, 58, 64, 139, 154);
    EXPECT(g4, 0, 0, 39, 54);
    free_all();
}

/* ---------------- element-wise ---------------- */

static void test_binary_broadcast(void **s)
{
    (void)s;
    int32_t a = wf(2, D(3, 1), F(1, 2, 3)), b = wf(2, D(1, 4), F(10, 20, 30, 40));
    int32_t add = op(SO_OP_ADD, NULL, 2, (int32_t[]){a, b}, 1);
    int32_t sub = op(SO_OP_SUB, NULL, 2, (int32_t[]){a, b}, 1);
    int32_t mul = op(SO_OP_MUL, NULL, 2, (int32_t[]){a, b}, 1);
    int32_t dv = op(SO_OP_DIV, NULL, 2, (int32_t[]){b, a}, 1);
    int32_t two = wf(0, NULL, F(2));
    int32_t pw = op(SO_OP_POW, NULL, 2, (int32_t[]){a, two}, 1);
    /* middle-axis broadcast [2,1,2] + [3,1] -> [2,3,2] */
    int32_t c = wf(3, D(2, 1, 2), F(1, 2, 3, 4)), d = wf(2, D(3, 1), F(10, 20, 30));
    int32_t add3 = op(SO_OP_ADD, NULL, 2, (int32_t[]){c, d}, 1);
    for (int32_t k = add; k <= add3; k++)
        if (G->nodes[k].op != SO_OP_WEIGHT) eval(k);
    expect_shape(add, 0, 2, D(3, 4));
    EXPECT(add, 11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43);
    EXPECT(sub, -9, -19, -29, -39, -8, -18, -28, -38, -7, -17, -27, -37);
    EXPECT(mul, 10, 20, 30, 40, 20, 40, 60, 80, 30, 60, 90, 120);
    EXPECT(dv, 10, 20, 30, 40, 5, 10, 15, 20, 10.f / 3, 20.f / 3, 10, 40.f / 3);
    EXPECT(pw, 1, 4, 9);
    expect_shape(add3, 0, 3, D(2, 3, 2));
    EXPECT(add3, 11, 12, 21, 22, 31, 32, 13, 14, 23, 24, 33, 34);
    free_all();
}

static void test_add_relu_and_int64(void **s)
{
    (void)s;
    so_attr a = A0();
    a.act = SO_ACT_RELU;
    int32_t x = wf(1, D(2), F(1, -5)), y = wf(1, D(2), F(1, 1));
    int32_t add = op(SO_OP_ADD, &a, 2, (int32_t[]){x, y}, 1);
    int32_t i = wi(1, D(3), D(4, -7, 9)), j = wi(0, NULL, D(2));
    int32_t ia = op(SO_OP_ADD, NULL, 2, (int32_t[]){i, j}, 1);
    int32_t im = op(SO_OP_MUL, NULL, 2, (int32_t[]){i, j}, 1);
    int32_t id = op(SO_OP_DIV, NULL, 2, (int32_t[]){i, j}, 1);
    eval(add);
    eval(ia);
    eval(im);
    eval(id);
    EXPECT(add, 2, 0);
    assert_int_equal(G->nodes[ia].out[0].dtype, SO_I64);
    const int64_t *r1 = R[ia][0].data, *r2 = R[im][0].data, *r3 = R[id][0].data;
    assert_int_equal(r1[0], 6);
    assert_int_equal(r1[1], -5);
    assert_int_equal(r1[2], 11);
    assert_int_equal(r2[1], -14);
    assert_int_equal(r3[0], 2);
    assert_int_equal(r3[1], -3); /* truncation toward zero, as C and ONNX Runtime */
    assert_int_equal(r3[2], 4);
    free_all();
}

static void test_unary(void **s)
{
    (void)s;
    int32_t x = wf(1, D(4), F(-2, -0.5f, 0.5f, 4));
    int32_t p = wf(1, D(3), F(0.25f, 1, 4));
    so_attr c = A0();
    c.clip_min = -1;
    c.clip_max = 1;
    int32_t relu = op(SO_OP_RELU, NULL, 1, &x, 1), sig = op(SO_OP_SIGMOID, NULL, 1, &x, 1), th = op(SO_OP_TANH, NULL, 1, &x, 1);
    int32_t er = op(SO_OP_ERF, NULL, 1, &x, 1), sq = op(SO_OP_SQRT, NULL, 1, &p, 1), ex = op(SO_OP_EXP, NULL, 1, &x, 1);
    int32_t lg = op(SO_OP_LOG, NULL, 1, &p, 1), ng = op(SO_OP_NEG, NULL, 1, &x, 1), rc = op(SO_OP_RECIPROCAL, NULL, 1, &x, 1);
    int32_t cl = op(SO_OP_CLIP, &c, 1, &x, 1);
    so_attr ea = A0();
    ea.alpha = 0.5f;
    int32_t el = op(SO_OP_ELU, &ea, 1, &x, 1);
    for (int32_t k = relu; k <= el; k++) eval(k);
    EXPECT(relu, 0, 0, 0.5f, 4);
    expect_vals(sig, 0, F(0.119202922f, 0.377540669f, 0.622459331f, 0.982013790f), 4, 1e-7f);
    expect_vals(th, 0, F(-0.964027580f, -0.462117157f, 0.462117157f, 0.999329300f), 4, 1e-7f);
    expect_vals(er, 0, F(-0.995322265f, -0.520499878f, 0.520499878f, 0.999999985f), 4, 1e-7f);
    EXPECT(sq, 0.5f, 1, 2);
    expect_vals(ex, 0, F(0.135335283f, 0.606530660f, 1.648721271f, 54.59815003f), 4, 1e-5f);
    expect_vals(lg, 0, F(-1.386294361f, 0, 1.386294361f), 3, 1e-7f);
    EXPECT(ng, 2, 0.5f, -0.5f, -4);
    EXPECT(rc, -0.5f, -2, 2, 0.25f);
    EXPECT(cl, -1, -0.5f, 0.5f, 1);
    /* elu, alpha 0.5: 0.5 * (exp(x) - 1) below 0 */
    expect_vals(el, 0, F(-0.432332358f, -0.196734670f, 0.5f, 4), 4, 1e-7f);
    free_all();
}

/* ---------------- normalisation, pooling ---------------- */

static void test_batchnorm(void **s)
{
    (void)s;
    so_attr a = A0();
    a.epsilon = 1;
    int32_t x = wf(4, D(1, 2, 1, 2), F(1, 2, 3, 4));
    int32_t sc = wf(1, D(2), F(2, 3)), b = wf(1, D(2), F(1, -1)), mu = wf(1, D(2), F(1, 3)), var = wf(1, D(2), F(3, 8));
    int32_t bn = op(SO_OP_BATCHNORM, &a, 5, (int32_t[]){x, sc, b, mu, var}, 1);
    eval(bn);
    EXPECT(bn, 1, 2, -1, 0);
    free_all();
}

static void test_maxpool(void **s)
{
    (void)s;
    float x16[16], n16[16];
    for (int i = 0; i < 16; i++) {
        x16[i] = (float)(i + 1);
        n16[i] = -(float)(i + 1);
    }
    so_attr a = A0();
    a.kernel[0] = a.kernel[1] = 2;
    a.stride[0] = a.stride[1] = 2;
    int32_t x = wf(4, D(1, 1, 4, 4), x16), xn = wf(4, D(1, 1, 4, 4), n16);
    int32_t p1 = op(SO_OP_MAXPOOL, &a, 1, &x, 1);
    so_attr b = A0();
    b.kernel[0] = b.kernel[1] = 3;
    b.stride[0] = b.stride[1] = 2;
    b.pad[0] = b.pad[1] = b.pad[2] = b.pad[3] = 1;
    int32_t p2 = op(SO_OP_MAXPOOL, &b, 1, &x, 1);
    int32_t p3 = op(SO_OP_MAXPOOL, &b, 1, &xn, 1); /* padding is -inf, not 0 */
    so_attr d = A0();
    d.kernel[0] = d.kernel[1] = 2;
    d.dilation[0] = d.dilation[1] = 2;
    d.stride[0] = d.stride[1] = 1;
    int32_t p4 = op(SO_OP_MAXPOOL, &d, 1, &xn, 1);
    /* ceil_mode: [2,5] with 2x2 stride 2 -> 1x3, last window is one column */
    so_attr e = a;
    e.ceil_mode = 1;
    int32_t x10 = wf(4, D(1, 1, 2, 5), F(1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
    int32_t p5 = op(SO_OP_MAXPOOL, &e, 1, &x10, 1);
    int32_t p6 = op(SO_OP_MAXPOOL, &a, 1, &x10, 1);
    eval(p1);
    eval(p2);
    eval(p3);
    eval(p4);
    eval(p5);
    eval(p6);
    EXPECT(p1, 6, 8, 14, 16);
    EXPECT(p2, 6, 8, 14, 16);
    EXPECT(p3, -1, -2, -5, -6);
    expect_shape(p4, 0, 4, D(1, 1, 2, 2));
    EXPECT(p4, -1, -2, -5, -6);
    expect_shape(p5, 0, 4, D(1, 1, 1, 3));
    EXPECT(p5, 7, 9, 10);
    expect_shape(p6, 0, 4, D(1, 1, 1, 2));
    EXPECT(p6, 7, 9);
    free_all();
}

static void test_avgpool(void **s)
{
    (void)s;
    so_attr a = A0();
    a.kernel[0] = a.kernel[1] = 3;
    a.stride[0] = a.stride[1] = 1;
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
    a.count_include_pad = 1;
    int32_t x = wf(4, D(1, 1, 3, 3), X9);
    int32_t inc = op(SO_OP_AVGPOOL, &a, 1, &x, 1);
    a.count_include_pad = 0;
    int32_t exc = op(SO_OP_AVGPOOL, &a, 1, &x, 1);
    /* ceil_mode with pads (PyTorch): 1x6, kernel 1x3, stride 2, pad 1 left/right -> 4 windows;
       the last window [5,7] is clipped to the padded input [5,6]: divisor 2 with pad counted. */
    so_attr c = A0();
    c.kernel[0] = 1;
    c.kernel[1] = 3;
    c.stride[0] = 1;
    c.stride[1] = 2;
    c.pad[1] = c.pad[3] = 1;
    c.ceil_mode = 1;
    c.count_include_pad = 1;
    int32_t x6 = wf(4, D(1, 1, 1, 6), F(1, 2, 3, 4, 5, 6));
    int32_t ci = op(SO_OP_AVGPOOL, &c, 1, &x6, 1);
    c.count_include_pad = 0;
    int32_t ce = op(SO_OP_AVGPOOL, &c, 1, &x6, 1);
    /* ceil_mode without pads: [1..5], kernel 1x2 stride 2 -> last window is one element */
    so_attr d = A0();
    d.kernel[0] = 1;
    d.kernel[1] = 2;
    d.stride[0] = 1;
    d.stride[1] = 2;
    d.ceil_mode = 1;
    d.count_include_pad = 1;
    int32_t x5 = wf(4, D(1, 1, 1, 5), F(1, 2, 3, 4, 5));
    int32_t cd = op(SO_OP_AVGPOOL, &d, 1, &x5, 1);
    eval(inc);
    eval(exc);
    eval(ci);
    eval(ce);
    eval(cd);
    EXPECT(inc, 12.f / 9, 21.f / 9, 16.f / 9, 27.f / 9, 5, 33.f / 9, 24.f / 9, 39.f / 9, 28.f / 9);
    EXPECT(exc, 3, 3.5f, 4, 4.5f, 5, 5.5f, 6, 6.5f, 7);
    expect_shape(ci, 0, 4, D(1, 1, 1, 4));
    EXPECT(ci, 1, 3, 5, 3);
    EXPECT(ce, 1.5f, 3, 5, 6);
    expect_shape(cd, 0, 4, D(1, 1, 1, 3));
    EXPECT(cd, 1.5f, 3.5f, 5);
    free_all();
}

static void test_globalavgpool_softmax(void **s)
{
    (void)s;
    int32_t x = wf(4, D(1, 2, 2, 2), F(1, 2, 3, 4, 5, 6, 7, 9));
    int32_t gp = op(SO_OP_GLOBALAVGPOOL, NULL, 1, &x, 1);
    so_attr a = A0();
    a.axis = 1;
    int32_t y = wf(2, D(2, 3), F(1, 2, 3, 0, 0, 0));
    int32_t sm = op(SO_OP_SOFTMAX, &a, 1, &y, 1);
    a.axis = 0;
    int32_t z = wf(2, D(2, 2), F(0, 1, 1000, 1)); /* large values: must not overflow */
    int32_t sm0 = op(SO_OP_SOFTMAX, &a, 1, &z, 1);
    eval(gp);
    eval(sm);
    eval(sm0);
    expect_shape(gp, 0, 4, D(1, 2, 1, 1));
    EXPECT(gp, 2.5f, 6.75f);
    double e1 = exp(1), e2 = exp(2), e3 = exp(3), t = e1 + e2 + e3;
    expect_vals(sm, 0, F((float)(e1 / t), (float)(e2 / t), (float)(e3 / t), 1.f / 3, 1.f / 3, 1.f / 3), 6, 1e-7f);
    EXPECT(sm0, 0, 0.5f, 1, 0.5f);
    free_all();
}

static void test_reducemean(void **s)
{
    (void)s;
    int32_t x = wf(2, D(2, 3), F(1, 2, 3, 4, 5, 6));
    so_attr a = A0();
    a.n_ints = 1;
    a.ints[0] = 1;
    a.keepdims = 1;
    int32_t r1 = op(SO_OP_REDUCEMEAN, &a, 1, &x, 1);
    a.ints[0] = 0;
    a.keepdims = 0;
    int32_t r0 = op(SO_OP_REDUCEMEAN, &a, 1, &x, 1);
    so_attr all = A0();
    int32_t ra = op(SO_OP_REDUCEMEAN, &all, 1, &x, 1);
    float x8[8];
    for (int i = 0; i < 8; i++) x8[i] = (float)i;
    int32_t y = wf(3, D(2, 2, 2), x8);
    so_attr b = A0();
    b.n_ints = 2;
    b.ints[0] = 0;
    b.ints[1] = 2;
    int32_t r02 = op(SO_OP_REDUCEMEAN, &b, 1, &y, 1);
    eval(r1);
    eval(r0);
    eval(ra);
    eval(r02);
    expect_shape(r1, 0, 2, D(2, 1));
    EXPECT(r1, 2, 5);
    expect_shape(r0, 0, 1, D(3));
    EXPECT(r0, 2.5f, 3.5f, 4.5f);
    expect_shape(ra, 0, 0, NULL);
    EXPECT(ra, 3.5f);
    expect_shape(r02, 0, 1, D(2));
    EXPECT(r02, 2.5f, 4.5f);
    free_all();
}

static void test_layernorm(void **s)
{
    (void)s;
    so_attr a = A0();
    a.axis = 1;
    a.epsilon = 0;
    int32_t x = wf(2, D(2, 2), F(1, 3, 0, 4)), sc = wf(1, D(2), F(2, 3)), b = wf(1, D(2), F(1, 1));
    int32_t ln = op(SO_OP_LAYERNORM, &a, 3, (int32_t[]){x, sc, b}, 1);
    int32_t ln_nob = op(SO_OP_LAYERNORM, &a, 2, (int32_t[]){x, sc}, 1);
    /* axis 0: normalise over everything; scale [2] broadcast over the last axis */
    so_attr a0 = A0();
    a0.epsilon = 0.75f;
    int32_t y = wf(2, D(2, 2), F(1, 2, 3, 4));
    int32_t ln0 = op(SO_OP_LAYERNORM, &a0, 3, (int32_t[]){y, sc, b}, 1);
    eval(ln);
    eval(ln_nob);
    eval(ln0);
    EXPECT(ln, -1, 4, -1, 4);
    EXPECT(ln_nob, -2, 3, -2, 3);
    /* mean 2.5, var 1.25, +eps 0.75 -> std sqrt(2) */
    const double r = 1 / sqrt(2.0);
    expect_vals(ln0, 0, F((float)(-1.5 * r * 2 + 1), (float)(-0.5 * r * 3 + 1), (float)(0.5 * r * 2 + 1), (float)(1.5 * r * 3 + 1)), 4, 1e-6f);
    free_all();
}

/* ---------------- data movement ---------------- */

static void test_pad(void **s)
{
    (void)s;
    int32_t x = wf(1, D(3), F(1, 2, 3));
    so_attr a = A0();
    a.n_ints = 2;
    a.ints[0] = 1;
    a.ints[1] = 2;
    a.value = 9;
    int32_t pc = op(SO_OP_PAD, &a, 1, &x, 1);
    a.ints[0] = a.ints[1] = 2;
    a.mode = 1;
    int32_t pr = op(SO_OP_PAD, &a, 1, &x, 1);
    a.mode = 2;
    int32_t pe = op(SO_OP_PAD, &a, 1, &x, 1);
    so_attr n = A0();
    n.n_ints = 2;
    n.ints[0] = -1;
    n.ints[1] = 1;
    int32_t pn = op(SO_OP_PAD, &n, 1, &x, 1);
    so_attr b = A0();
    b.n_ints = 4;
    b.ints[0] = 1; /* rows begin */
    b.ints[3] = 1; /* cols end */
    int32_t y = wf(2, D(2, 2), F(1, 2, 3, 4));
    int32_t p2 = op(SO_OP_PAD, &b, 1, &y, 1);
    b.mode = 1;
    int32_t p2r = op(SO_OP_PAD, &b, 1, &y, 1);
    for (int32_t k = pc; k <= p2r; k++)
        if (G->nodes[k].op == SO_OP_PAD) eval(k);
    EXPECT(pc, 9, 1, 2, 3, 9, 9);
    EXPECT(pr, 3, 2, 1, 2, 3, 2, 1);
    EXPECT(pe, 1, 1, 1, 2, 3, 3, 3);
    EXPECT(pn, 2, 3, 0);
    expect_shape(p2, 0, 2, D(3, 3));
    EXPECT(p2, 0, 0, 0, 1, 2, 0, 3, 4, 0);
    EXPECT(p2r, 3, 4, 3, 1, 2, 1, 3, 4, 3);
    free_all();
}

static void test_concat_split(void **s)
{
    (void)s;
    int32_t a = wf(2, D(2, 1), F(1, 2)), b = wf(2, D(2, 2), F(3, 4, 5, 6));
    so_attr ax = A0();
    ax.axis = 1;
    int32_t c = op(SO_OP_CONCAT, &ax, 2, (int32_t[]){a, b}, 1);
    so_attr sp = A0();
    sp.axis = 1;
    sp.n_ints = 2;
    sp.ints[0] = 2;
    sp.ints[1] = 1;
    int32_t x = wf(2, D(2, 3), F(1, 2, 3, 4, 5, 6));
    int32_t s2 = op(SO_OP_SPLIT, &sp, 1, &x, 2);
    int32_t i1 = wi(1, D(2), D(7, 8)), i2 = wi(1, D(1), D(9));
    so_attr a0 = A0();
    int32_t ci = op(SO_OP_CONCAT, &a0, 2, (int32_t[]){i1, i2}, 1);
    eval(c);
    eval(s2);
    eval(ci);
    expect_shape(c, 0, 2, D(2, 3));
    EXPECT(c, 1, 3, 4, 2, 5, 6);
    expect_shape(s2, 0, 2, D(2, 2));
    expect_shape(s2, 1, 2, D(2, 1));
    expect_vals(s2, 0, F(1, 2, 4, 5), 4, 0);
    expect_vals(s2, 1, F(3, 6), 2, 0);
    const int64_t *r = R[ci][0].data;
    assert_int_equal(r[0], 7);
    assert_int_equal(r[2], 9);
    free_all();
}

static void test_views_transpose_expand(void **s)
{
    (void)s;
    float x24[24];
    for (int i = 0; i < 24; i++) x24[i] = (float)i;
    int32_t x = wf(3, D(2, 3, 4), x24);
    so_attr f = A0();
    f.axis = 2;
    int32_t fl = op(SO_OP_FLATTEN, &f, 1, &x, 1);
    so_attr r = A0();
    r.n_ints = 2;
    r.ints[0] = 4;
    r.ints[1] = 6;
    int32_t rs = op(SO_OP_RESHAPE, &r, 1, &x, 1);
    so_attr t = A0();
    t.n_ints = 3;
    t.ints[0] = 2;
    t.ints[1] = 0;
    t.ints[2] = 1;
    int32_t tp = op(SO_OP_TRANSPOSE, &t, 1, &x, 1);
    int32_t y = wf(2, D(2, 3), F(1, 2, 3, 4, 5, 6));
    so_attr t0 = A0();
    int32_t tr = op(SO_OP_TRANSPOSE, &t0, 1, &y, 1); /* no perm: reverse */
    int32_t e = wf(2, D(3, 1), F(1, 2, 3));
    so_attr ex = A0();
    ex.n_ints = 3;
    ex.ints[0] = 2;
    ex.ints[1] = 1;
    ex.ints[2] = 2;
    int32_t ep = op(SO_OP_EXPAND, &ex, 1, &e, 1);
    so_attr u = A0();
    u.n_ints = 2;
    u.ints[0] = 0;
    u.ints[1] = 3;
    int32_t un = op(SO_OP_UNSQUEEZE, &u, 1, &y, 1);
    so_attr sq = A0();
    sq.n_ints = 1;
    sq.ints[0] = 1;
    int32_t sqz = op(SO_OP_SQUEEZE, &sq, 1, &e, 1);
    int32_t idn = op(SO_OP_IDENTITY, NULL, 1, &y, 1);
    for (int32_t k = fl; k <= idn; k++)
        if (G->nodes[k].op != SO_OP_WEIGHT) eval(k);
    expect_shape(fl, 0, 2, D(6, 4));
    expect_vals(fl, 0, x24, 24, 0);
    expect_shape(rs, 0, 2, D(4, 6));
    expect_vals(rs, 0, x24, 24, 0);
    expect_shape(tp, 0, 3, D(4, 2, 3));
    /* out[k][i][j] = x[i][j][k] = 12i + 4j + k */
    const float *o = outf(tp, 0);
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) assert_float_equal(o[(k * 2 + i) * 3 + j], 12 * i + 4 * j + k, 0);
    expect_shape(tr, 0, 2, D(3, 2));
    EXPECT(tr, 1, 4, 2, 5, 3, 6);
    expect_shape(ep, 0, 3, D(2, 3, 2));
    EXPECT(ep, 1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3);
    expect_shape(un, 0, 4, D(1, 2, 3, 1));
    expect_shape(sqz, 0, 1, D(3));
    EXPECT(sqz, 1, 2, 3);
    EXPECT(idn, 1, 2, 3, 4, 5, 6);
    free_all();
}

static void test_gather(void **s)
{
    (void)s;
    int32_t x = wf(2, D(3, 2), F(1, 2, 3, 4, 5, 6));
    int32_t i = wi(1, D(2), D(-1, 0));
    so_attr a = A0();
    int32_t g0 = op(SO_OP_GATHER, &a, 2, (int32_t[]){x, i}, 1);
    int32_t i2 = wi(2, D(2, 2), D(1, 0, 0, -2));
    a.axis = 1;
    int32_t g1 = op(SO_OP_GATHER, &a, 2, (int32_t[]){x, i2}, 1);
    int32_t isc = wi(0, NULL, D(1));
    a.axis = 0;
    int32_t gs = op(SO_OP_GATHER, &a, 2, (int32_t[]){x, isc}, 1);
    int32_t bad = wi(1, D(1), D(3));
    int32_t gb = op(SO_OP_GATHER, &a, 2, (int32_t[]){x, bad}, 1);
    /* int64 data (shape computations folded at import) */
    int32_t xi = wi(1, D(4), D(1, 3, 224, 224)), i3 = wi(1, D(1), D(1));
    int32_t gi = op(SO_OP_GATHER, &a, 2, (int32_t[]){xi, i3}, 1);
    eval(g0);
    eval(g1);
    eval(gs);
    eval(gi);
    expect_shape(g0, 0, 2, D(2, 2));
    EXPECT(g0, 5, 6, 1, 2);
    expect_shape(g1, 0, 3, D(3, 2, 2));
    EXPECT(g1, 2, 1, 1, 1, 4, 3, 3, 3, 6, 5, 5, 5);
    expect_shape(gs, 0, 1, D(2));
    EXPECT(gs, 3, 4);
    assert_int_equal(((const int64_t *)R[gi][0].data)[0], 3);
    so_tensor in[2] = {{M->weights[G->nodes[x].ref].shape, M->weights[G->nodes[x].ref].data},
                       {M->weights[G->nodes[bad].ref].shape, M->weights[G->nodes[bad].ref].data}};
    so_tensor out[1];
    assert_int_equal(so_ref_eval_node(G, gb, in, out), SO_ERR);
    assert_non_null(strstr(so_error(), "index 3 out of range"));
    assert_null(out[0].data);
    free_all();
}

static void test_slice(void **s)
{
    (void)s;
    int32_t x = wf(1, D(5), F(0, 1, 2, 3, 4));
    so_attr a = A0();
    a.n_ints = 4;
    a.ints[0] = 0;
    a.ints[1] = 1;
    a.ints[2] = 5;
    a.ints[3] = 2;
    int32_t s1 = op(SO_OP_SLICE, &a, 1, &x, 1);
    a.ints[1] = 4;
    a.ints[2] = -1;
    a.ints[3] = -2;
    int32_t s2 = op(SO_OP_SLICE, &a, 1, &x, 1);
    int32_t y = wf(2, D(2, 3), F(1, 2, 3, 4, 5, 6));
    so_attr b = A0();
    b.n_ints = 8;
    b.ints[0] = 1; /* axis 1: 2 down to 1 */
    b.ints[1] = 2;
    b.ints[2] = 0;
    b.ints[3] = -1;
    b.ints[4] = 0; /* axis 0: row 1 */
    b.ints[5] = 1;
    b.ints[6] = 2;
    b.ints[7] = 1;
    int32_t s3 = op(SO_OP_SLICE, &b, 1, &y, 1);
    eval(s1);
    eval(s2);
    eval(s3);
    EXPECT(s1, 1, 3);
    EXPECT(s2, 4, 2, 0);
    expect_shape(s3, 0, 2, D(1, 2));
    EXPECT(s3, 6, 5);
    free_all();
}

/* ---------------- LSTM ---------------- */

static double sg(double v) { return 1 / (1 + exp(-v)); }

static void test_lstm_one_step(void **s)
{
    (void)s;
    so_attr a = A0();
    a.hidden = 1;
    int32_t x = wf(3, D(1, 1, 1), F(0.5f));
    int32_t w = wf(3, D(1, 4, 1), F(1, 2, 3, 4)); /* gates i, o, f, c */
    int32_t r = wf(3, D(1, 4, 1), F(0.1f, 0.2f, 0.3f, 0.4f));
    int32_t b = wf(2, D(1, 8), F(0.01f, 0.02f, 0.03f, 0.04f, 0.1f, 0.2f, 0.3f, 0.4f));
    int32_t sl = wi(1, D(1), D(1));
    int32_t h0 = wf(3, D(1, 1, 1), F(0.1f)), c0 = wf(3, D(1, 1, 1), F(0.2f));
    int32_t l = op(SO_OP_LSTM, &a, 7, (int32_t[]){x, w, r, b, sl, h0, c0}, 3);
    eval(l);
    expect_shape(l, 0, 4, D(1, 1, 1, 1));
    expect_shape(l, 1, 3, D(1, 1, 1));
    /* hand computation: pre-activations W x + R h0 + Wb + Rb */
    double pi = 1 * 0.5 + 0.1 * 0.1 + 0.01 + 0.1, po = 2 * 0.5 + 0.2 * 0.1 + 0.02 + 0.2;
    double pf = 3 * 0.5 + 0.3 * 0.1 + 0.03 + 0.3, pc = 4 * 0.5 + 0.4 * 0.1 + 0.04 + 0.4;
    double c1 = sg(pf) * 0.2 + sg(pi) * tanh(pc), h1 = sg(po) * tanh(c1);
    expect_vals(l, 0, F((float)h1), 1, 1e-6f);
    expect_vals(l, 1, F((float)h1), 1, 1e-6f);
    expect_vals(l, 2, F((float)c1), 1, 1e-6f);
    free_all();
}

static void test_lstm_bidirectional_seqlens(void **s)
{
    (void)s;
    so_attr a = A0();
    a.hidden = 1;
    a.direction = 2;
    /* T=2, batch 2, I=1, R=0 and B absent so each step depends on x and c only */
    int32_t x = wf(3, D(2, 2, 1), F(1, -1, 2, 0.5f)); /* x[t][b] */
    int32_t w = wf(3, D(2, 4, 1), F(0.5f, 1, 1.5f, 2, 0.5f, 1, 1.5f, 2));
    int32_t r = wf(3, D(2, 4, 1), F(0, 0, 0, 0, 0, 0, 0, 0));
    int32_t l = op(SO_OP_LSTM, &a, 3, (int32_t[]){x, w, r}, 3);
    int32_t b = wf(2, D(2, 8), F(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
    int32_t sl = wi(1, D(2), D(2, 1));
    int32_t l2 = op(SO_OP_LSTM, &a, 5, (int32_t[]){x, w, r, b, sl}, 3);
    eval(l);
    eval(l2);
    expect_shape(l, 0, 4, D(2, 2, 2, 1));
    expect_shape(l, 2, 3, D(2, 2, 1));
    /* one step from state c: returns h, updates c */
#define STEP(xv, c) (c = sg(1.5 * (xv)) * (c) + sg(0.5 * (xv)) * tanh(2 * (xv)), sg(1.0 * (xv)) * tanh(c))
    double xs[2][2] = {{1, -1}, {2, 0.5}};
    float want[8], wh[4], wc[4];
    for (int bb = 0; bb < 2; bb++) {
        double c = 0, h = 0;
        for (int t = 0; t < 2; t++) {
            h = STEP(xs[t][bb], c);
            want[(t * 2 + 0) * 2 + bb] = (float)h;
        }
        wh[0 * 2 + bb] = (float)h;
        wc[0 * 2 + bb] = (float)c;
        c = 0;
        for (int t = 1; t >= 0; t--) {
            h = STEP(xs[t][bb], c);
            want[(t * 2 + 1) * 2 + bb] = (float)h;
        }
        wh[1 * 2 + bb] = (float)h;
        wc[1 * 2 + bb] = (float)c;
    }
    expect_vals(l, 0, want, 8, 1e-6f);
    expect_vals(l, 1, wh, 4, 1e-6f);
    expect_vals(l, 2, wc, 4, 1e-6f);
    /* seq_lens [2,1]: batch 1 stops after t=0 (reverse starts at t=0), Y zero at t=1 */
    const float *y2 = outf(l2, 0), *h2 = outf(l2, 1);
    double c = 0, h = STEP(xs[0][1], c);
    assert_float_equal(y2[(0 * 2 + 0) * 2 + 1], (float)h, 1e-6f);
    assert_float_equal(y2[(0 * 2 + 1) * 2 + 1], (float)h, 1e-6f);
    assert_float_equal(y2[(1 * 2 + 0) * 2 + 1], 0, 0);
    assert_float_equal(y2[(1 * 2 + 1) * 2 + 1], 0, 0);
    assert_float_equal(h2[0 * 2 + 1], (float)h, 1e-6f);
    assert_float_equal(h2[1 * 2 + 1], (float)h, 1e-6f);
    /* batch 0 has full length: same as without seq_lens */
    for (int k = 0; k < 8; k += 2) assert_float_equal(y2[k], want[k], 1e-6f);
#undef STEP
    free_all();
}

/* ---------------- internal ops ---------------- */

static void test_internal(void **s)
{
    (void)s;
    so_attr e = A0();
    e.kernel[0] = e.kernel[1] = 3;
    int32_t w = wf(4, D(2, 1, 1, 1), F(5, 7));
    int32_t en = op(SO_OP_ENLARGE, &e, 1, &w, 1);
    so_attr p = A0();
    p.n_ints = 4;
    p.ints[0] = 2;
    p.ints[1] = 1;
    p.ints[2] = 2;
    p.ints[3] = 2;
    int32_t cp = op(SO_OP_CONST_POOL, &p, 0, NULL, 1);
    so_attr ic = A0();
    ic.n_ints = 4;
    ic.ints[0] = ic.ints[1] = 2;
    ic.ints[2] = ic.ints[3] = 3;
    int32_t ci = op(SO_OP_CONST_IDCONV, &ic, 0, NULL, 1);
    so_attr im = A0();
    im.n_ints = 2;
    im.ints[0] = im.ints[1] = 3;
    int32_t cm = op(SO_OP_CONST_IDMAT, &im, 0, NULL, 1);
    so_attr on = A0();
    on.n_ints = 2;
    on.ints[0] = 2;
    on.ints[1] = 3;
    int32_t co = op(SO_OP_CONST_ONES, &on, 0, NULL, 1);
    for (int32_t k = en; k <= co; k++) eval(k);
    expect_shape(en, 0, 4, D(2, 1, 3, 3));
    EXPECT(en, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0);
    EXPECT(cp, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f);
    const float *id = outf(ci, 0);
    for (int o = 0; o < 2; o++)
        for (int i = 0; i < 2; i++)
            for (int k = 0; k < 9; k++) assert_float_equal(id[(o * 2 + i) * 9 + k], o == i && k == 4 ? 1 : 0, 0);
    EXPECT(cm, 1, 0, 0, 0, 1, 0, 0, 0, 1);
    EXPECT(co, 1, 1, 1, 1, 1, 1);
    /* identity conv really is the identity; enlarged kernel with pad 1 equals the 1x1 conv */
    int32_t x = wf(4, D(1, 2, 2, 2), F(1, 2, 3, 4, 5, 6, 7, 8));
    so_attr pad1 = A0();
    pad1.pad[0] = pad1.pad[1] = pad1.pad[2] = pad1.pad[3] = 1;
    int32_t cv = op(SO_OP_CONV, &pad1, 2, (int32_t[]){x, ci}, 1);
    eval(cv);
    EXPECT(cv, 1, 2, 3, 4, 5, 6, 7, 8);
    free_all();
}

/* ---------------- so_ref_run ---------------- */

static void set_io(int n_in, const so_shape *ins, int n_out)
{
    M->n_inputs = n_in;
    M->inputs = so_arena_alloc(&M->arena, (size_t)(n_in ? n_in : 1) * sizeof *M->inputs);
    for (int k = 0; k < n_in; k++) {
        M->inputs[k].name = "x";
        M->inputs[k].shape = ins[k];
    }
    M->n_outputs = n_out;
    M->outputs = so_arena_alloc(&M->arena, (size_t)n_out * sizeof *M->outputs);
    free(G->outputs);
    G->outputs = calloc((size_t)n_out, sizeof *G->outputs);
}

static void test_run_graph(void **s)
{
    (void)s;
    so_shape xs = shp_of(2, D(2, 2)), ys = shp_of(1, D(2));
    set_io(2, (so_shape[]){xs, ys}, 2);
    int32_t x = so_graph_add(G, SO_OP_INPUT, NULL, 0, 1, NULL, 0, "x");
    int32_t y = so_graph_add(G, SO_OP_INPUT, NULL, 0, 1, NULL, 1, "y");
    int32_t w = wf(2, D(2, 2), F(1, 2, 3, 4));
    so_edge e1[2] = {{x, 0}, {w, 0}};
    int32_t mm = so_graph_add(G, SO_OP_MATMUL, e1, 2, 1, NULL, -1, "mm");
    so_attr ar = A0();
    ar.act = SO_ACT_RELU;
    so_edge e2[2] = {{mm, 0}, {y, 0}};
    int32_t ad = so_graph_add(G, SO_OP_ADD, e2, 2, 1, so_model_attr(M, &ar), -1, "add");
    so_edge e3[1] = {{x, 0}};
    int32_t ng = so_graph_add(G, SO_OP_NEG, e3, 1, 1, NULL, -1, "neg");
    G->outputs[0] = (so_edge){ad, 0};
    G->outputs[1] = (so_edge){ng, 0};
    assert_int_equal(so_graph_infer_all(G), SO_OK);
    const float xin[4] = {1, 0, 0, -1}, yin[2] = {0.5f, 10};
    float o1[4] = {0}, o2[4] = {0};
    const float *ins[2] = {xin, yin};
    float *outs[2] = {o1, o2};
    assert_int_equal(so_ref_run(G, ins, outs), SO_OK);
    /* x@w = [[1,2],[-3,-4]] + [0.5,10] = [[1.5,12],[-2.5,6]] -> relu */
    assert_float_equal(o1[0], 1.5f, 0);
    assert_float_equal(o1[1], 12, 0);
    assert_float_equal(o1[2], 0, 0);
    assert_float_equal(o1[3], 6, 0);
    assert_float_equal(o2[0], -1, 0);
    assert_float_equal(o2[3], 1, 0);
}

static void test_run_opaque_fails(void **s)
{
    (void)s;
    so_shape xs = shp_of(1, D(2));
    set_io(1, &xs, 1);
    M->opaque = so_arena_alloc(&M->arena, sizeof *M->opaque);
    M->opaque[0].op_type = "Foo";
    M->n_opaque = M->cap_opaque = 1;
    int32_t x = so_graph_add(G, SO_OP_INPUT, NULL, 0, 1, NULL, 0, "x");
    so_edge e[1] = {{x, 0}};
    int32_t o = so_graph_add(G, SO_OP_OPAQUE, e, 1, 1, NULL, 0, "bar");
    G->nodes[o].out[0] = xs;
    G->outputs[0] = (so_edge){o, 0};
    assert_int_equal(so_graph_infer_all(G), SO_OK);
    const float xin[2] = {1, 2};
    float out[2];
    const float *ins[1] = {xin};
    float *outs[1] = {out};
    assert_int_equal(so_ref_run(G, ins, outs), SO_ERR_UNSUPPORTED);
    assert_string_equal(so_error(), "unsupported operator 'Foo' at node 'bar'");
}

/* A larger chain (more nodes than the small-graph stack path) through so_ref_run. */
static void test_run_long_chain(void **s)
{
    (void)s;
    so_shape xs = shp_of(1, D(3));
    set_io(1, &xs, 1);
    int32_t prev = so_graph_add(G, SO_OP_INPUT, NULL, 0, 1, NULL, 0, "x");
    int32_t one = wf(1, D(3), F(1, 1, 1));
    for (int i = 0; i < 100; i++) {
        so_edge e[2] = {{prev, 0}, {one, 0}};
        prev = so_graph_add(G, SO_OP_ADD, e, 2, 1, NULL, -1, NULL);
    }
    G->outputs[0] = (so_edge){prev, 0};
    assert_int_equal(so_graph_infer_all(G), SO_OK);
    const float xin[3] = {0, -100, 0.5f};
    float out[3];
    const float *ins[1] = {xin};
    float *outs[1] = {out};
    assert_int_equal(so_ref_run(G, ins, outs), SO_OK);
    assert_float_equal(out[0], 100, 0);
    assert_float_equal(out[1], 0, 0);
    assert_float_equal(out[2], 100.5f, 0);
}

/* Every element-wise operator's reference kernel writes every output element (an operator that
   reached a kernel family without a case of its own would leave the output untouched): outputs
   are filled with a NaN of a payload no arithmetic produces first, and must not hold it after
   (inputs outside an operator's domain, asin(2), may give an ordinary NaN). */
static void test_elementwise_kernels_write_all(void **s)
{
    (void)s;
    int32_t a = wf(2, D(2, 3), F(0.25f, 0.5f, 0.75f, 1, 1.5f, 2)), b = wf(1, D(3), F(0.5f, 1, 2));
    for (int o = 0; o < SO_OP_COUNT; o++) {
        unsigned fl = so_ops[o].flags;
        if (!(fl & (SO_F_UNARY | SO_F_BINARY))) continue;
        so_attr at = A0();
        at.alpha = 0.2f, at.beta = 0.5f, at.clip_min = 0.3f, at.clip_max = 1.2f;
        int32_t ins[2] = {a, b};
        int32_t node = op((so_op)o, &at, (fl & SO_F_BINARY) ? 2 : 1, ins, 1);
        const so_node *n = &G->nodes[node];
        so_tensor in[2], out;
        for (int k = 0; k < n->n_in; k++) {
            const so_weight *w = &M->weights[G->nodes[n->in[k].node].ref];
            in[k].shape = w->shape;
            in[k].data = w->data;
        }
        float buf[6];
        const uint32_t mark = 0x7fa5a5a5u; /* a signalling NaN with a payload */
        for (int j = 0; j < 6; j++) memcpy(&buf[j], &mark, 4);
        out.shape = n->out[0];
        out.data = buf;
        assert_int_equal(so_shape_numel(&out.shape), 6);
        if (so_ref_kernels[o](G, n, in, &out) != SO_OK) fail_msg("%s: %s", so_ops[o].name, so_error());
        for (int j = 0; j < 6; j++) {
            uint32_t bits;
            memcpy(&bits, &buf[j], 4);
            if (bits == mark) fail_msg("%s left output element %d unwritten", so_ops[o].name, j);
        }
    }
    free_all();
}

static void test_act_clip(void **s)
{
    (void)s;
    float v[3] = {-1, 0.5f, 2};
    so_ref_act(SO_ACT_CLIP, 0, 1, v, 3);
    assert_float_equal(v[0], 0, 0);
    assert_float_equal(v[1], 0.5f, 0);
    assert_float_equal(v[2], 1, 0);
}


static void test_eval_node_sources_and_errors(void **s)
{
    (void)s;
    int32_t w = wf(2, D(2, 2), F(1, 2, 3, 4));
    so_tensor out[1];
    assert_int_equal(so_ref_eval_node(G, w, NULL, out), SO_OK);
    assert_int_equal(out[0].shape.rank, 2);
    assert_float_equal(((float *)out[0].data)[3], 4, 0);
    free(out[0].data);
    /* int64 constant pad (shape chains folded at import) */
    int32_t i = wi(1, D(2), D(5, 6));
    so_attr p = A0();
    p.n_ints = 2;
    p.ints[0] = 1;
    p.value = -1;
    int32_t pi = op(SO_OP_PAD, &p, 1, &i, 1);
    eval(pi);
    const int64_t *r = R[pi][0].data;
    assert_int_equal(r[0], -1);
    assert_int_equal(r[1], 5);
    assert_int_equal(r[2], 6);
    /* unknown output shapes and unsupported element types are errors, not crashes */
    int32_t rl = op(SO_OP_RELU, NULL, 1, &w, 1);
    G->nodes[rl].out[0].rank = -1;
    so_tensor in[1] = {{M->weights[G->nodes[w].ref].shape, M->weights[G->nodes[w].ref].data}};
    assert_int_equal(so_ref_eval_node(G, rl, in, out), SO_ERR);
    assert_non_null(strstr(so_error(), "output shape is unknown"));
    G->nodes[rl].out[0] = so_shape_make(2, D(2, 2));
    G->nodes[rl].out[0].dtype = 9; /* bool */
    assert_int_equal(so_ref_eval_node(G, rl, in, out), SO_ERR);
    assert_non_null(strstr(so_error(), "unsupported element type 9"));
    free_all();
}

/* Cast, Mod, Pow on integers and the boolean operators: the kernels values fed at run time go through. */
static void test_int_bool_ops(void **state)
{
    (void)state;
    int32_t f = wf(1, D(6), F(2.7f, -2.7f, NAN, 3e9f, 0.0f, -1e30f));
    so_attr c = A0();
    c.mode = SO_I64;
    int32_t ci = op(SO_OP_CAST, &c, 1, &f, 1);
    c.mode = SO_I32;
    int32_t c32 = op(SO_OP_CAST, &c, 1, &f, 1);
    c.mode = SO_BOOL;
    int32_t cb = op(SO_OP_CAST, &c, 1, &f, 1);
    eval(ci);
    eval(c32);
    eval(cb);
    const int64_t *r = R[ci][0].data;
    assert_int_equal(r[0], 2); /* toward zero */
    assert_int_equal(r[1], -2);
    assert_int_equal(r[2], 0); /* NaN: 0, not undefined behaviour */
    assert_int_equal(r[3], 3000000000LL);
    assert_int_equal(r[5], INT64_MIN); /* saturated */
    assert_int_equal(((const int64_t *)R[c32][0].data)[3], (int64_t)(int32_t)(uint32_t)3000000000u); /* wraps to 32 bits */
    const int64_t *rb = R[cb][0].data;
    assert_int_equal(rb[0], 1);
    assert_int_equal(rb[2], 1); /* NaN is true */
    assert_int_equal(rb[4], 0);
    int32_t i = wi(1, D(4), D(7, -7, 7, -7)), j = wi(1, D(4), D(3, 3, -3, 0));
    c.mode = SO_F32;
    int32_t cf = op(SO_OP_CAST, &c, 1, &i, 1);
    so_attr m = A0();
    int32_t md = op(SO_OP_MOD, &m, 2, (int32_t[]){i, j}, 1);
    m.mode = 1;
    int32_t mf = op(SO_OP_MOD, &m, 2, (int32_t[]){i, j}, 1);
    int32_t pw = op(SO_OP_POW, NULL, 2, (int32_t[]){i, wi(0, NULL, D(2))}, 1);
    eval(cf);
    eval(md);
    eval(mf);
    eval(pw);
    EXPECT(cf, 7, -7, 7, -7);
    const int64_t *rm = R[md][0].data, *rf = R[mf][0].data, *rp = R[pw][0].data;
    assert_int_equal(rm[0], 1);  /* Python: the divisor's sign */
    assert_int_equal(rm[1], 2);
    assert_int_equal(rm[2], -2);
    assert_int_equal(rm[3], 0);  /* x % 0 = 0 */
    assert_int_equal(rf[1], -1); /* fmod: the dividend's sign */
    assert_int_equal(rf[2], 1);
    assert_int_equal(rp[1], 49);
    int32_t fa = wf(1, D(2), F(-7.5f, 7.5f)), fb = wf(0, NULL, F(2));
    int32_t fm = op(SO_OP_MOD, NULL, 2, (int32_t[]){fa, fb}, 1);
    eval(fm);
    EXPECT(fm, 0.5f, 1.5f);
    int32_t p = wi(2, D(2, 2), D(0, 1, 1, 0)), q = wi(1, D(2), D(1, 0));
    int32_t an = op(SO_OP_AND, NULL, 2, (int32_t[]){p, q}, 1), orr = op(SO_OP_OR, NULL, 2, (int32_t[]){p, q}, 1);
    int32_t xo = op(SO_OP_XOR, NULL, 2, (int32_t[]){p, q}, 1), no = op(SO_OP_NOT, NULL, 1, &p, 1);
    eval(an);
    eval(orr);
    eval(xo);
    eval(no);
    const int64_t want_and[4] = {0, 0, 1, 0}, want_or[4] = {1, 1, 1, 0}, want_xor[4] = {1, 1, 0, 0}, want_not[4] = {1, 0, 0, 1};
    for (int k = 0; k < 4; k++) {
        assert_int_equal(((const int64_t *)R[an][0].data)[k], want_and[k]);
        assert_int_equal(((const int64_t *)R[orr][0].data)[k], want_or[k]);
        assert_int_equal(((const int64_t *)R[xo][0].data)[k], want_xor[k]);
        assert_int_equal(((const int64_t *)R[no][0].data)[k], want_not[k]);
    }
    free_all();
}

/* Boundary element types: sizes and the conversions to and from int64 storage. */
static void test_storage_conversions(void **state)
{
    (void)state;
    assert_int_equal(so_dtype_size(SO_BOOL), 1);
    assert_int_equal(so_dtype_size(SO_I32), 4);
    assert_int_equal(so_dtype_size(SO_I64), 8);
    assert_int_equal(so_dtype_size(10), 0);
    assert_int_equal(so_dtype_storage(SO_BOOL), SO_I64);
    assert_int_equal(so_dtype_storage(SO_F32), SO_F32);
    assert_int_equal(so_dtype_storage(11), 0);
    const unsigned char b[3] = {0, 1, 7};
    const int32_t i32[2] = {-5, INT32_MAX};
    int64_t st[3];
    so_to_storage(SO_BOOL, b, 3, st);
    assert_int_equal(st[2], 1);
    assert_int_equal(st[0], 0);
    so_to_storage(SO_I32, i32, 2, st);
    assert_int_equal(st[0], -5);
    assert_int_equal(st[1], INT32_MAX);
    int32_t back[2];
    st[1] = 0x100000005LL;
    so_from_storage(SO_I32, st, 2, back);
    assert_int_equal(back[0], -5);
    assert_int_equal(back[1], 5);
    unsigned char bb[2];
    st[0] = -3;
    st[1] = 0;
    so_from_storage(SO_BOOL, st, 2, bb);
    assert_int_equal(bb[0], 1);
    assert_int_equal(bb[1], 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, test_model_setup, test_model_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_conv_basic_bias),
        T(test_conv_stride2_pad1),
        T(test_conv_asymmetric_pads),
        T(test_conv_dilation),
        T(test_conv_groups_depthwise),
        T(test_conv_fused_act),
        T(test_matmul),
        T(test_gemm),
        T(test_binary_broadcast),
        T(test_add_relu_and_int64),
        T(test_int_bool_ops),
        T(test_storage_conversions),
        T(test_unary),
        T(test_batchnorm),
        T(test_maxpool),
        T(test_avgpool),
        T(test_globalavgpool_softmax),
        T(test_reducemean),
        T(test_layernorm),
        T(test_pad),
        T(test_concat_split),
        T(test_views_transpose_expand),
        T(test_gather),
        T(test_slice),
        T(test_lstm_one_step),
        T(test_lstm_bidirectional_seqlens),
        T(test_internal),
        T(test_run_graph),
        T(test_run_opaque_fails),
        T(test_run_long_chain),
        T(test_elementwise_kernels_write_all),
        T(test_act_clip),
        T(test_eval_node_sources_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
