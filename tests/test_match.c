/* test_match.c - pattern matching and rewriting: multi-output patterns, symbols, external uses,
   cycles, constant folding of weight-only target subgraphs, numeric equivalence after rewrite,
   CSE, node identity through a rewrite, anchored matching keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../kernels/ref.h"
#include "../search/fold.h"
#include "../search/match.h"
#include "test_util.h"

static const char *RULES =
    TEST_RULES_1_2
    TEST_RULE_3("  where k >= 3\n");

static so_ruleset rs;

static int setup(void **state)
{
    (void)state;
    return so_rules_parse("test.rules", RULES, strlen(RULES), &rs) == SO_OK ? 0 : (fprintf(stderr, "%s\n", so_error()), -1);
}

static int teardown(void **state)
{
    (void)state;
    so_ruleset_free(&rs);
    return 0;
}

typedef struct collect {
    so_match m[16];
    int n;
} collect;

static int collect_fn(const so_match *m, void *ud)
{
    collect *c = ud;
    if (c->n < 16) c->m[c->n] = *m;
    c->n++;
    return 0;
}

static int count_op(const so_graph *g, so_op op)
{
    int c = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) c += g->nodes[i].op == op;
    return c;
}

/* Two matmuls sharing X, both graph outputs: rule 2 matches once per order of the pair... the
   pattern is symmetric so both assignments are matches; the rewrite merges them. */
static void test_merge_matmuls(void **state)
{
    (void)state;
    tb t;
    so_shape xs = shape2(4, 6);
    tb_new(&t, 1, &xs, 2);
    int32_t wa = tb_weight(&t, 2, 6, 3), wb = tb_weight(&t, 2, 6, 5);
    int32_t a = tb_op(&t, SO_OP_MATMUL, 0, wa, 0), b = tb_op(&t, SO_OP_MATMUL, 0, wb, 0);
    t.g->outputs[0] = (so_edge){a, 0};
    t.g->outputs[1] = (so_edge){b, 0};
    so_match_index ix;
    so_match_index_init(&ix, t.g);
    collect c = {.n = 0};
    int n = so_match_rule(&ix, &rs.rules[1], 1, collect_fn, &c);
    assert_int_equal(n, 2);
    assert_int_equal(c.n, 2);
    /* symbols bound from the shapes: m k n1 n2 (order of first appearance) */
    assert_int_equal(c.m[0].sym[0], 4);
    assert_int_equal(c.m[0].sym[1], 6);
    assert_true((c.m[0].sym[2] == 3 && c.m[0].sym[3] == 5) || (c.m[0].sym[2] == 5 && c.m[0].sym[3] == 3));
    so_fold_ctx fc;
    so_fold_init(&fc, t.m);
    so_graph *ng = NULL;
    assert_int_equal(so_rewrite(t.g, &c.m[0], &fc, &ng), SO_OK);
    assert_int_equal(count_op(ng, SO_OP_MATMUL), 1);
    assert_int_equal(count_op(ng, SO_OP_SPLIT), 1);
    assert_int_equal(count_op(ng, SO_OP_CONCAT), 0); /* concat of two weights folded */
    assert_int_equal(fc.weights_added, 1);
    assert_true(max_diff(t.g, ng) < 1e-5);
    /* the same rewrite again reuses the folded weight */
    so_graph *ng2 = NULL;
    assert_int_equal(so_rewrite(t.g, &c.m[0], &fc, &ng2), SO_OK);
    assert_int_equal(fc.weights_added, 1);
    assert_int_equal(so_graph_hash(ng), so_graph_hash(ng2));
    /* the reverse rule matches the rewritten graph (split sizes bind n1, n2) */
    so_rule rev;
    so_rule_reverse(&rs.rules[1], &rev);
    so_match_index ix2;
    so_match_index_init(&ix2, ng);
    collect c2 = {.n = 0};
    /* the reverse source contains concat(A, B), which was folded: no match */
    assert_int_equal(so_match_rule(&ix2, &rev, 0, collect_fn, &c2), 0);
    so_match_index_free(&ix2);
    so_graph_free(ng);
    so_graph_free(ng2);
    so_fold_free(&fc);
    so_match_index_free(&ix);
    so_model_free(t.m);
}

/* add(matmul(X,A), matmul(X,B)) with A, B of the same shape matches rule 1; when one matmul has
   another user the match is refused; when n differs (broadcast) it does not match. */
static void test_distribute_and_external_use(void **state)
{
    (void)state;
    tb t;
    so_shape xs = shape2(3, 5);
    tb_new(&t, 1, &xs, 1);
    int32_t wa = tb_weight(&t, 2, 5, 4), wb = tb_weight(&t, 2, 5, 4);
    int32_t a = tb_op(&t, SO_OP_MATMUL, 0, wa, 0), b = tb_op(&t, SO_OP_MATMUL, 0, wb, 0);
    int32_t s = tb_op(&t, SO_OP_ADD, a, b, 0);
    t.g->outputs[0] = (so_edge){s, 0};
    so_match_index ix;
    so_match_index_init(&ix, t.g);
    collect c = {.n = 0};
    assert_int_equal(so_match_rule(&ix, &rs.rules[0], 0, collect_fn, &c), 1);
    assert_int_equal(c.m[0].node[2], s);
    so_fold_ctx fc;
    so_fold_init(&fc, t.m);
    so_graph *ng = NULL;
    assert_int_equal(so_rewrite(t.g, &c.m[0], &fc, &ng), SO_OK);
    assert_int_equal(count_op(ng, SO_OP_MATMUL), 1);
    assert_int_equal(count_op(ng, SO_OP_ADD), 0);
    assert_true(max_diff(t.g, ng) < 1e-5);
    so_graph_free(ng);
    so_match_index_free(&ix);
    so_fold_free(&fc);
    so_model_free(t.m);

    /* external use of the intermediate a: relu(a) is a second output */
    so_shape xs2 = shape2(3, 5);
    tb_new(&t, 1, &xs2, 2);
    wa = tb_weight(&t, 2, 5, 4);
    wb = tb_weight(&t, 2, 5, 4);
    a = tb_op(&t, SO_OP_MATMUL, 0, wa, 0);
    b = tb_op(&t, SO_OP_MATMUL, 0, wb, 0);
    s = tb_op(&t, SO_OP_ADD, a, b, 0);
    int32_t r = tb_op(&t, SO_OP_RELU, a, -1, 0);
    t.g->outputs[0] = (so_edge){s, 0};
    t.g->outputs[1] = (so_edge){r, 0};
    so_match_index_init(&ix, t.g);
    assert_int_equal(so_match_rule(&ix, &rs.rules[0], 0, NULL, NULL), 0);
    /* but rule 3 (matmul+relu, k=5 >= 3) matches relu(a): a's other user is outside, and a is
       not a mapped output -> refused as well */
    assert_int_equal(so_match_rule(&ix, &rs.rules[2], 2, NULL, NULL), 0);
    so_match_index_free(&ix);
    so_model_free(t.m);

    /* inconsistent symbol n: A [5,1], B [5,4] (add broadcasts) */
    tb_new(&t, 1, &xs2, 1);
    wa = tb_weight(&t, 2, 5, 1);
    wb = tb_weight(&t, 2, 5, 4);
    a = tb_op(&t, SO_OP_MATMUL, 0, wa, 0);
    b = tb_op(&t, SO_OP_MATMUL, 0, wb, 0);
    s = tb_op(&t, SO_OP_ADD, a, b, 0);
    t.g->outputs[0] = (so_edge){s, 0};
    so_match_index_init(&ix, t.g);
    assert_int_equal(so_match_rule(&ix, &rs.rules[0], 0, NULL, NULL), 0);
    so_match_index_free(&ix);
    so_model_free(t.m);
}

/* Preconditions and anchored matching: rule 3 needs k >= 3. */
static void test_precondition_and_anchor(void **state)
{
    (void)state;
    for (int k = 2; k <= 3; k++) {
        tb t;
        so_shape xs = shape2(4, k);
        tb_new(&t, 1, &xs, 1);
        int32_t w = tb_weight(&t, 2, k, 2);
        int32_t a = tb_op(&t, SO_OP_MATMUL, 0, w, 0);
        int32_t r = tb_op(&t, SO_OP_RELU, a, -1, 0);
        t.g->outputs[0] = (so_edge){r, 0};
        so_match_index ix;
        so_match_index_init(&ix, t.g);
        assert_int_equal(so_match_rule(&ix, &rs.rules[2], 2, NULL, NULL), k >= 3);
        assert_int_equal(so_match_rule_at(&ix, &rs.rules[2], 2, a, NULL, NULL), k >= 3);
        assert_int_equal(so_match_rule_at(&ix, &rs.rules[2], 2, r, NULL, NULL), k >= 3);
        assert_int_equal(so_match_rule_at(&ix, &rs.rules[2], 2, w, NULL, NULL), 0);
        if (k >= 3) {
            collect c = {.n = 0};
            so_match_rule(&ix, &rs.rules[2], 2, collect_fn, &c);
            so_fold_ctx fc;
            so_fold_init(&fc, t.m);
            so_graph *ng = NULL;
            assert_int_equal(so_rewrite(t.g, &c.m[0], &fc, &ng), SO_OK);
            assert_int_equal(ng->n_nodes, 3); /* input, weight, fused matmul */
            assert_int_equal(count_op(ng, SO_OP_RELU), 0);
            assert_int_equal(ng->nodes[ng->outputs[0].node].attr->act, SO_ACT_RELU);
            assert_true(max_diff(t.g, ng) < 1e-6);
            so_graph_free(ng);
            so_fold_free(&fc);
        }
        so_match_index_free(&ix);
        so_model_free(t.m);
    }
}

/* One conv X[1,cin,h,w] * W[wd] with attributes `at`, matched against the layout rule r: it must match iff `want`;
   when it does, the rewrite has one conv_nchwc (its group the conv's, resolved), ends in an nchwc_out naming the
   wd[0] output channels, and computes the same values. */
static void layout_case(const so_rule *r, int64_t cin, int64_t h, int64_t w, const int64_t wd[4], const so_attr *at, int want)
{
    tb t;
    so_shape xs = {.rank = 4, .dim = {1, cin, h, w}, .dtype = SO_F32};
    tb_new(&t, 1, &xs, 1);
    so_shape wsh = so_shape_make(4, wd);
    float *data = malloc(sizeof(float) * (size_t)so_shape_numel(&wsh));
    so_rng_fill(&t.seed, data, (size_t)so_shape_numel(&wsh));
    int32_t wt = so_graph_add(t.g, SO_OP_WEIGHT, NULL, 0, 1, NULL, so_model_add_weight(t.m, "w", wsh, data), NULL);
    assert_int_equal(so_graph_infer(t.g, wt), SO_OK);
    so_edge ce[2] = {{0, 0}, {wt, 0}};
    int32_t c = so_graph_add(t.g, SO_OP_CONV, ce, 2, 1, so_model_attr(t.m, at), -1, NULL);
    assert_int_equal(so_graph_infer(t.g, c), SO_OK);
    t.g->outputs[0] = (so_edge){c, 0};
    so_match_index ix;
    so_match_index_init(&ix, t.g);
    assert_int_equal(so_match_rule(&ix, r, 0, NULL, NULL), want);
    if (want) {
        collect col = {.n = 0};
        so_match_rule(&ix, r, 0, collect_fn, &col);
        so_fold_ctx fc;
        so_fold_init(&fc, t.m);
        so_graph *ng = NULL;
        assert_int_equal(so_rewrite(t.g, &col.m[0], &fc, &ng), SO_OK);
        assert_int_equal(count_op(ng, SO_OP_CONV_NCHWC), 1);
        for (int32_t i = 0; i < ng->n_nodes; i++)
            if (ng->nodes[i].op == SO_OP_CONV_NCHWC) assert_int_equal(ng->nodes[i].attr->group, at->group);
        assert_int_equal(ng->nodes[ng->outputs[0].node].op, SO_OP_NCHWC_OUT);
        assert_int_equal(ng->nodes[ng->outputs[0].node].attr->ints[1], wd[0]);
        assert_true(max_diff(t.g, ng) < 1e-5);
        so_graph_free(ng);
        so_fold_free(&fc);
    }
    so_match_index_free(&ix);
    so_model_free(t.m);
}

/* conv attributes: stride s, padding p on every side, dilation 1, group g */
static so_attr conv_at(int s, int p, int g)
{
    so_attr at;
    memset(&at, 0, sizeof at);
    at.stride[0] = at.stride[1] = s;
    at.pad[0] = at.pad[1] = at.pad[2] = at.pad[3] = p;
    at.dilation[0] = at.dilation[1] = 1;
    at.group = g;
    return at;
}

/* A generated layout rule (exact blocking, channels 8*a): conv = nchwc_out . conv_nchwc . nchwc_in
   matches a conv whose input and output channels are multiples of 8 and no other; the rewrite
   computes the same values. */
static void test_layout_rule_exact(void **state)
{
    (void)state;
    static const char *TXT = "rule 1\n  input X [a,8*b,c,d]\n  input K [8*e,8*b,1,1]\n"
                             "  src s0 = conv(X, K) stride=1,1 pad=0,0,0,0 dilation=1,1 group=1 act=none\n"
                             "  dst d0 = nchwc_in(X) ints=8\n"
                             "  dst d1 = conv_nchwc(d0, K) stride=1,1 pad=0,0,0,0 dilation=1,1 group=1 act=none\n"
                             "  dst d2 = nchwc_out(d1) ints=8,8*e\n  map s0 -> d2\n  proof proved\nend\n";
    so_ruleset lr = {0};
    assert_int_equal(so_rules_parse("layout.rules", TXT, strlen(TXT), &lr), SO_OK);
    char *f = so_rule_format(&lr.rules[0]);
    assert_non_null(strstr(f, "input X [a,8*b,c,d]"));
    assert_non_null(strstr(f, "ints=8,8*e"));
    free(f);
    const int cin[4] = {16, 12, 8, 16}, cout[4] = {24, 16, 20, 8};
    const so_attr at = conv_at(1, 0, 1);
    for (int k = 0; k < 4; k++) {
        const int64_t wd[4] = {cout[k], cin[k], 1, 1};
        layout_case(&lr.rules[0], cin[k], 3, 4, wd, &at, cin[k] % 8 == 0 && cout[k] % 8 == 0);
    }
    so_ruleset_free(&lr);
}

/* group=dw (SO_RULE_GROUP_DW): one rule blocks every depthwise conv whose channel count is a multiple of 8,
   whatever the count (the group bound from the kernel), and no grouped conv that is not depthwise. */
static void test_layout_rule_depthwise(void **state)
{
    (void)state;
    static const char *TXT = "rule 1\n  input X [a,8*b,c,d]\n  input D [8*b,1,3,3]\n"
                             "  src s0 = conv(X, D) stride=2,2 pad=1,1,1,1 dilation=1,1 group=dw act=none\n"
                             "  dst d0 = nchwc_in(X) ints=8\n"
                             "  dst d1 = conv_nchwc(d0, D) stride=2,2 pad=1,1,1,1 dilation=1,1 group=dw act=none\n"
                             "  dst d2 = nchwc_out(d1) ints=8,8*b\n  map s0 -> d2\n  proof proved\nend\n";
    so_ruleset lr = {0};
    assert_int_equal(so_rules_parse("dw.rules", TXT, strlen(TXT), &lr), SO_OK);
    char *f = so_rule_format(&lr.rules[0]);
    assert_non_null(strstr(f, "group=dw"));
    free(f);
    /* channels, group, kernel dim 1: depthwise 16, 32 (match), 12 (not a multiple of 8), grouped 16/2 (not depthwise) */
    const int ch[4] = {16, 32, 12, 16}, grp[4] = {16, 32, 12, 8}, cg[4] = {1, 1, 1, 2};
    for (int k = 0; k < 4; k++) {
        const int64_t wd[4] = {ch[k], cg[k], 3, 3};
        const so_attr at = conv_at(2, 1, grp[k]);
        layout_case(&lr.rules[0], ch[k], 7, 6, wd, &at, ch[k] % 8 == 0 && cg[k] == 1);
    }
    so_ruleset_free(&lr);
}

/* A grouped layout rule (group 32 concrete, 32*q channels, q per group symbolic, from the grouped universe) binds q
   from the kernel: ResNeXt's 128 and 256 channels (q = 4, 8) and 96 (q = 3: 6 blocks of 16) match, a conv of group 16
   does not. */
static void test_layout_rule_grouped(void **state)
{
    (void)state;
    static const char *TXT = "rule 1\n  input X [a,32*b,c,d]\n  input G [32*b,b,3,3]\n"
                             "  src s0 = conv(X, G) stride=1,1 pad=1,1,1,1 dilation=1,1 group=32 act=none\n"
                             "  dst d0 = nchwc_in(X) ints=16\n"
                             "  dst d1 = conv_nchwc(d0, G) stride=1,1 pad=1,1,1,1 dilation=1,1 group=32 act=none\n"
                             "  dst d2 = nchwc_out(d1) ints=16,32*b\n  map s0 -> d2\n  proof proved\nend\n";
    so_ruleset lr = {0};
    assert_int_equal(so_rules_parse("grouped.rules", TXT, strlen(TXT), &lr), SO_OK);
    const int q[4] = {4, 8, 3, 8}, grp[4] = {32, 32, 32, 16};
    for (int k = 0; k < 4; k++) {
        const int64_t wd[4] = {grp[k] * q[k], q[k], 3, 3};
        const so_attr at = conv_at(1, 1, grp[k]);
        layout_case(&lr.rules[0], grp[k] * q[k], 5, 6, wd, &at, grp[k] == 32);
    }
    so_ruleset_free(&lr);
}

/* a = X.A1, b = X.relu(a) with k == m: merging a and b would make b's weight depend on the
   merged output: the rewrite must be rejected as a cycle. */
static void test_cycle_rejected(void **state)
{
    (void)state;
    tb t;
    so_shape xs = shape2(4, 4);
    tb_new(&t, 1, &xs, 1);
    int32_t w = tb_weight(&t, 2, 4, 4);
    int32_t a = tb_op(&t, SO_OP_MATMUL, 0, w, 0);
    int32_t r = tb_op(&t, SO_OP_RELU, a, -1, 0);
    int32_t b = tb_op(&t, SO_OP_MATMUL, 0, r, 0);
    t.g->outputs[0] = (so_edge){b, 0};
    so_match_index ix;
    so_match_index_init(&ix, t.g);
    collect c = {.n = 0};
    int n = so_match_rule(&ix, &rs.rules[1], 1, collect_fn, &c);
    assert_true(n >= 1);
    so_fold_ctx fc;
    so_fold_init(&fc, t.m);
    for (int i = 0; i < c.n && i < 16; i++) {
        so_graph *ng = NULL;
        assert_int_equal(so_rewrite(t.g, &c.m[i], &fc, &ng), SO_ERR);
        assert_non_null(strstr(so_error(), "cycle"));
    }
    so_fold_free(&fc);
    so_match_index_free(&ix);
    so_model_free(t.m);
}

/* Canonicalisation: identity removed, weight-only chains folded into one weight. */
static void test_canonicalize(void **state)
{
    (void)state;
    tb t;
    so_shape xs = shape2(2, 3);
    tb_new(&t, 1, &xs, 1);
    int32_t w1 = tb_weight(&t, 2, 2, 3), w2 = tb_weight(&t, 2, 2, 3);
    int32_t s = tb_op(&t, SO_OP_ADD, w1, w2, 0);
    int32_t e = tb_op(&t, SO_OP_EXP, s, -1, 0);
    int32_t id = tb_op(&t, SO_OP_IDENTITY, 0, -1, 0); /* identity of an input is kept */
    int32_t m = tb_op(&t, SO_OP_MUL, id, e, 0);
    int32_t id2 = tb_op(&t, SO_OP_IDENTITY, m, -1, 0);
    int32_t r = tb_op(&t, SO_OP_RELU, id2, -1, 0);
    t.g->outputs[0] = (so_edge){r, 0};
    so_graph *g2 = so_graph_clone(t.g);
    so_fold_ctx fc;
    so_fold_init(&fc, t.m);
    so_canon_stats st = {0, 0, 0, 0};
    assert_int_equal(so_canonicalize(&fc, g2, &st), SO_OK);
    assert_int_equal(st.folded, 2);
    assert_int_equal(st.identities, 1);
    assert_int_equal(count_op(g2, SO_OP_ADD), 0);
    assert_int_equal(count_op(g2, SO_OP_EXP), 0);
    assert_int_equal(count_op(g2, SO_OP_IDENTITY), 1);
    assert_int_equal(count_op(g2, SO_OP_WEIGHT), 1);
    assert_int_equal(g2->n_nodes, 5); /* input, identity, weight, mul, relu */
    assert_true(max_diff(t.g, g2) < 1e-6);
    so_graph_free(g2);
    so_fold_free(&fc);
    so_model_free(t.m);
}

/* CSE: equal nodes (same op, attributes, inputs) merge, equal-content weights merge, nodes that
   differ in an attribute or an input do not; graph inputs never merge. */
static void test_cse(void **state)
{
    (void)state;
    tb t;
    so_shape xs[2] = {shape2(2, 3), shape2(2, 3)};
    tb_new(&t, 2, xs, 3);
    int32_t w1 = tb_weight(&t, 2, 3, 4);
    /* w2: a second weight with w1's content */
    const so_weight *src = &t.m->weights[t.g->nodes[w1].ref];
    float *copy = malloc(12 * sizeof(float));
    memcpy(copy, src->data, 12 * sizeof(float));
    int32_t w2 = so_graph_add(t.g, SO_OP_WEIGHT, NULL, 0, 1, NULL, so_model_add_weight(t.m, "w2", src->shape, copy), NULL);
    assert_int_equal(so_graph_infer(t.g, w2), SO_OK);
    int32_t a = tb_op(&t, SO_OP_MATMUL, 0, w1, 0);
    int32_t b = tb_op(&t, SO_OP_MATMUL, 0, w2, 0);     /* = a once the weights merge */
    int32_t c = tb_op(&t, SO_OP_MATMUL, 0, w1, SO_ACT_RELU); /* other attributes */
    int32_t d = tb_op(&t, SO_OP_MATMUL, 1, w1, 0);     /* other input (equal shape) */
    int32_t ab = tb_op(&t, SO_OP_ADD, a, b, 0);
    int32_t cd = tb_op(&t, SO_OP_ADD, c, d, 0);
    int32_t ab2 = tb_op(&t, SO_OP_ADD, a, b, 0);       /* = ab */
    t.g->outputs[0] = (so_edge){ab, 0};
    t.g->outputs[1] = (so_edge){cd, 0};
    t.g->outputs[2] = (so_edge){ab2, 0};
    so_graph *g2 = so_graph_clone(t.g);
    so_fold_ctx fc;
    so_fold_init(&fc, t.m);
    so_canon_stats st = {0, 0, 0, 0};
    assert_int_equal(so_canonicalize(&fc, g2, &st), SO_OK);
    assert_int_equal(st.cse, 3); /* w2, b, ab2 */
    assert_int_equal(count_op(g2, SO_OP_WEIGHT), 1);
    assert_int_equal(count_op(g2, SO_OP_MATMUL), 3);
    assert_int_equal(count_op(g2, SO_OP_ADD), 2);
    assert_int_equal(count_op(g2, SO_OP_INPUT), 2);
    assert_true(g2->outputs[0].node == g2->outputs[2].node);
    assert_true(g2->outputs[0].node != g2->outputs[1].node);
    assert_true(max_diff(t.g, g2) < 1e-6);
    so_graph_free(g2);
    so_fold_free(&fc);
    so_model_free(t.m);
}

/* so_rewrite_track: every node of the result names the node of the input it is (inputs may be
   redirected), -1 for what the rewrite added; the numbering changes (toposort, DCE). */
static void test_rewrite_origin(void **state)
{
    (void)state;
    tb t;
    so_shape xs = shape2(4, 6);
    tb_new(&t, 1, &xs, 1);
    int32_t wa = tb_weight(&t, 2, 6, 3), wb = tb_weight(&t, 2, 6, 3);
    int32_t e = tb_op(&t, SO_OP_EXP, 0, -1, 0);
    int32_t a = tb_op(&t, SO_OP_MATMUL, e, wa, 0), b = tb_op(&t, SO_OP_MATMUL, e, wb, 0);
    int32_t r = tb_op(&t, SO_OP_ADD, a, b, 0);
    int32_t th = tb_op(&t, SO_OP_TANH, r, -1, 0);
    t.g->outputs[0] = (so_edge){th, 0};
    so_match_index ix;
    so_match_index_init(&ix, t.g);
    collect c = {.n = 0};
    assert_int_equal(so_match_rule(&ix, &rs.rules[0], 0, collect_fn, &c), 1);
    so_fold_ctx fc;
    so_fold_init(&fc, t.m);
    so_graph *g2 = NULL;
    int32_t *origin = NULL;
    assert_int_equal(so_rewrite_track(t.g, &c.m[0], &fc, &g2, &origin), SO_OK);
    assert_non_null(origin);
    int news = 0, seen_e = 0, seen_th = 0;
    for (int32_t j = 0; j < g2->n_nodes; j++) {
        int32_t i = origin[j];
        if (i < 0) {
            news++;
            continue;
        }
        assert_true(i < t.g->n_nodes);
        assert_int_equal(g2->nodes[j].op, t.g->nodes[i].op);
        assert_true(g2->nodes[j].attr == t.g->nodes[i].attr);
        assert_int_equal(g2->nodes[j].ref, t.g->nodes[i].ref);
        seen_e += i == e;
        seen_th += i == th;
        assert_true(i != a && i != b && i != r); /* the matched nodes are gone */
    }
    /* new: the folded sum of the weights and the matmul */
    assert_int_equal(news, 2);
    assert_int_equal(seen_e, 1);
    assert_int_equal(seen_th, 1);
    /* the tanh's input was redirected to a new node */
    int32_t jt = g2->outputs[0].node;
    assert_int_equal(origin[jt], th);
    assert_int_equal(origin[g2->nodes[jt].in[0].node], -1);
    assert_true(max_diff(t.g, g2) < 1e-5);
    free(origin);
    so_graph_free(g2);
    so_fold_free(&fc);
    so_match_index_free(&ix);
    so_model_free(t.m);
}

/* Anchored matching at one pattern node equals the anchored matches of so_match_rule_at
   restricted to that node; node keys filter on operator, arity and used attributes. */
static void test_anchor_node_and_keys(void **state)
{
    (void)state;
    tb t;
    so_shape xs = shape2(4, 6);
    tb_new(&t, 1, &xs, 2);
    int32_t wa = tb_weight(&t, 2, 6, 3), wb = tb_weight(&t, 2, 6, 5);
    int32_t a = tb_op(&t, SO_OP_MATMUL, 0, wa, 0), b = tb_op(&t, SO_OP_MATMUL, 0, wb, 0);
    t.g->outputs[0] = (so_edge){a, 0};
    t.g->outputs[1] = (so_edge){b, 0};
    so_match_index ix;
    so_match_index_init(&ix, t.g);
    const so_rule *r2 = &rs.rules[1];
    int total = 0;
    for (int p = 0; p < r2->src.n_nodes; p++) total += so_match_rule_at_node(&ix, r2, 1, p, a, NULL, NULL);
    assert_int_equal(total, so_match_rule_at(&ix, r2, 1, a, NULL, NULL));
    assert_int_equal(total, 2); /* a as pattern node "a" and as "b" */
    /* keys: the graph's matmul (act none) has the key of rule 2's matmuls, not of a relu-fused one */
    const so_node *n = &t.g->nodes[a];
    uint64_t kg = so_match_node_key(n->op, n->n_in, n->n_out, n->attr, 0);
    const so_rnode *pn = &r2->src.nodes[0];
    assert_true(kg == so_match_node_key(pn->op, pn->n_in, pn->n_out, &pn->attr, 0));
    so_attr relu = pn->attr;
    relu.act = SO_ACT_RELU;
    assert_true(kg != so_match_node_key(pn->op, pn->n_in, pn->n_out, &relu, 0));
    /* ignoring ints: split sizes do not change the key */
    so_attr s1, s2;
    memset(&s1, 0, sizeof s1);
    memset(&s2, 0, sizeof s2);
    s1.axis = s2.axis = 1;
    s1.n_ints = s2.n_ints = 2;
    s1.ints[0] = 3, s1.ints[1] = 5;
    s2.ints[0] = 4, s2.ints[1] = 4;
    assert_true(so_match_node_key(SO_OP_SPLIT, 1, 2, &s1, 1) == so_match_node_key(SO_OP_SPLIT, 1, 2, &s2, 1));
    assert_true(so_match_node_key(SO_OP_SPLIT, 1, 2, &s1, 0) != so_match_node_key(SO_OP_SPLIT, 1, 2, &s2, 0));
    so_match_index_free(&ix);
    so_model_free(t.m);
}

/* Canonicalisation keeps a valid node order (the executor's order): two independent branches
   stay one after the other instead of being interleaved; a node a rewrite appends lands just
   before its first user. */
static void test_order_kept(void **state)
{
    (void)state;
    tb t;
    so_shape xs = shape2(2, 3);
    tb_new(&t, 1, &xs, 1);
    int32_t a1 = tb_op(&t, SO_OP_EXP, 0, -1, 0), a2 = tb_op(&t, SO_OP_TANH, a1, -1, 0);
    int32_t b1 = tb_op(&t, SO_OP_NEG, 0, -1, 0), b2 = tb_op(&t, SO_OP_RELU, b1, -1, 0);
    int32_t s = tb_op(&t, SO_OP_ADD, a2, b2, 0);
    t.g->outputs[0] = (so_edge){s, 0};
    so_graph *g2 = so_graph_clone(t.g);
    so_fold_ctx fc;
    so_fold_init(&fc, t.m);
    assert_int_equal(so_canonicalize(&fc, g2, NULL), SO_OK);
    so_op want[6] = {SO_OP_INPUT, SO_OP_EXP, SO_OP_TANH, SO_OP_NEG, SO_OP_RELU, SO_OP_ADD};
    assert_int_equal(g2->n_nodes, 6);
    for (int i = 0; i < 6; i++) assert_int_equal(g2->nodes[i].op, want[i]);
    /* append sigmoid(b1) and make the add read it instead of b2: it must come right after b1's
       branch position, before the add, not at the end */
    so_edge in = {3, 0};
    int32_t sg = so_graph_add(g2, SO_OP_SIGMOID, &in, 1, 1, NULL, -1, NULL);
    assert_int_equal(so_graph_infer(g2, sg), SO_OK);
    g2->nodes[5].in[1] = (so_edge){sg, 0};
    assert_int_equal(so_canonicalize(&fc, g2, NULL), SO_OK);
    so_op want2[6] = {SO_OP_INPUT, SO_OP_EXP, SO_OP_TANH, SO_OP_NEG, SO_OP_SIGMOID, SO_OP_ADD};
    assert_int_equal(g2->n_nodes, 6); /* the relu is dead */
    for (int i = 0; i < 6; i++) assert_int_equal(g2->nodes[i].op, want2[i]);
    so_graph_free(g2);
    so_fold_free(&fc);
    so_model_free(t.m);
}

/* The matcher's deadline: rule 2 (two matmuls sharing X) has k*(k-1) matches among k matmuls of
   one X; with a deadline already past, the enumeration stops at once, reports fewer matches and
   sets the expired flag; with a far deadline it finds them all and leaves the flag alone. */
static int count_fn(const so_match *m, void *ud)
{
    (void)m;
    (*(int64_t *)ud)++;
    return 0;
}

static void test_deadline(void **state)
{
    (void)state;
    tb t;
    so_shape xs = shape2(2, 4);
    tb_new(&t, 1, &xs, 1);
    enum { K = 300 };
    int32_t w = tb_weight(&t, 2, 4, 3), last = -1;
    for (int i = 0; i < K; i++) last = tb_op(&t, SO_OP_MATMUL, 0, w, 0);
    t.g->outputs[0] = (so_edge){last, 0};
    so_match_index ix;
    so_match_index_init(&ix, t.g);
    int expired = 0;
    ix.expired = &expired;
    int64_t seen = 0;
    ix.deadline = so_cpu_now() + 3600;
    int64_t work = 0;
    ix.work = &work;
    assert_int_equal(so_match_rule(&ix, &rs.rules[1], 1, count_fn, &seen), K * (K - 1));
    assert_int_equal(seen, K * (K - 1));
    assert_int_equal(expired, 0);
    /* the work count: every candidate node tried, the same every time */
    const int64_t full = work;
    assert_true(full >= K * (K - 1));
    work = 0;
    seen = 0;
    assert_int_equal(so_match_rule(&ix, &rs.rules[1], 1, count_fn, &seen), K * (K - 1));
    assert_int_equal(work, full);
    /* a work limit stops the enumeration at exactly that count, the same matches every time */
    work = 0;
    seen = 0;
    ix.work_limit = full / 3;
    int n1 = so_match_rule(&ix, &rs.rules[1], 1, count_fn, &seen);
    assert_true(n1 > 0 && n1 < K * (K - 1));
    assert_int_equal(work, full / 3);
    assert_int_equal(expired, 1);
    expired = 0;
    work = 0;
    seen = 0;
    assert_int_equal(so_match_rule(&ix, &rs.rules[1], 1, count_fn, &seen), n1);
    ix.work = NULL;
    ix.work_limit = 0;
    expired = 0;
    seen = 0;
    ix.deadline = 1e-6; /* already past: this thread has used more CPU time than that */
    int n = so_match_rule(&ix, &rs.rules[1], 1, count_fn, &seen);
    assert_true(n < K * (K - 1));
    assert_int_equal(n, seen);
    assert_int_equal(expired, 1);
    /* anchored matching stops too once the deadline has expired */
    assert_int_equal(so_match_rule_at(&ix, &rs.rules[1], 1, last, count_fn, &seen), 0);
    so_match_index_free(&ix);
    so_model_free(t.m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_kept),
        cmocka_unit_test(test_cse),
        cmocka_unit_test(test_rewrite_origin),
        cmocka_unit_test(test_anchor_node_and_keys),
        cmocka_unit_test(test_merge_matmuls),
        cmocka_unit_test(test_deadline),
        cmocka_unit_test(test_layout_rule_exact),
        cmocka_unit_test(test_layout_rule_depthwise),
        cmocka_unit_test(test_layout_rule_grouped),
        cmocka_unit_test(test_distribute_and_external_use),
        cmocka_unit_test(test_precondition_and_anchor),
        cmocka_unit_test(test_cycle_rejected),
        cmocka_unit_test(test_canonicalize),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
