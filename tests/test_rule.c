/* test_rule.c - rule text format: parse, print, round trip, error messages, check, instantiate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../rules/rule.h"
#include "../rules/rule_shape.h"

static const char *SAMPLE =
    "# sample rules\n"
    "# second header line\n"
    "\n"
    "rule 1\n"
    "  input X [n,c,h,w]\n"
    "  input W1 [o1,c,3,3]\n"
    "  input W2 [o2,c,3,3]\n"
    "  src a = conv(X, W1) stride=1,1 pad=1,1,1,1 dilation=1,1 group=1 act=none\n"
    "  src b = conv(X, W2) stride=1,1 pad=1,1,1,1 dilation=1,1 group=1 act=none\n"
    "  dst w = concat(W1, W2) axis=0\n"
    "  dst y = conv(X, w) stride=1,1 pad=1,1,1,1 dilation=1,1 group=1 act=none\n"
    "  dst p = split(y) axis=1 sizes=o1,o2\n"
    "  map a -> p.0\n"
    "  map b -> p.1\n"
    "  where c % 2 == 0\n"
    "  where h >= 3\n"
    "  proof proved 0.013 s\n"
    "  from generate max-ops=3 seed=1\n"
    "end\n"
    "\n"
    "rule 2\n"
    "  input A [m,k]\n"
    "  input B [k,n]\n"
    "  input C [n,q]\n"
    "  src s0 = matmul(A, B) act=none\n"
    "  src s1 = matmul(s0, C) act=relu\n"
    "  dst d0 = matmul(B, C) act=none\n"
    "  dst d1 = matmul(A, d0) act=relu\n"
    "  map s1 -> d1\n"
    "  proof unverified\n"
    "end\n"
    "\n"
    "rule 3\n"
    "  input X [n,4,h,w]\n"
    "  input S [4]\n"
    "  input B [4]\n"
    "  input M [4]\n"
    "  input V [4]\n"
    "  src s0 = batchnorm(X, S, B, M, V) epsilon=9.99999975e-06\n"
    "  src s1 = avgpool(s0) kernel=3,3 stride=1,1 pad=1,1,1,1 count_include_pad=1 ceil_mode=0\n"
    "  dst d0 = batchnorm(X, S, B, M, V) epsilon=9.99999975e-06\n"
    "  dst d1 = const_pool() shape=4,1,3,3\n"
    "  dst d2 = conv(d0, d1) stride=1,1 pad=1,1,1,1 dilation=1,1 group=4 act=none\n"
    "  map s1 -> d2\n"
    "  proof failed 2.500 s\n"
    "end\n";

static void test_parse_sample(void **state)
{
    (void)state;
    so_ruleset rs;
    assert_int_equal(so_rules_parse("sample.rules", SAMPLE, strlen(SAMPLE), &rs), SO_OK);
    assert_int_equal(rs.n_rules, 3);
    assert_string_equal(rs.header, "sample rules\nsecond header line");
    const so_rule *r = &rs.rules[0];
    assert_int_equal(r->id, 1);
    assert_int_equal(r->line, 4);
    assert_int_equal(r->n_inputs, 3);
    assert_int_equal(r->n_syms, 6); /* n c h w o1 o2 */
    assert_string_equal(r->sym_names[4], "o1");
    assert_int_equal(r->src.n_nodes, 2);
    assert_int_equal(r->dst.n_nodes, 3);
    assert_int_equal(r->dst.nodes[2].op, SO_OP_SPLIT);
    assert_int_equal(r->dst.nodes[2].n_out, 2);
    assert_int_equal(r->dst.nodes[2].attr.axis, 1);
    assert_int_equal(r->src.nodes[0].attr.pad[3], 1);
    assert_int_equal(r->src.nodes[0].in[1].node, -2);
    assert_int_equal(r->n_outputs, 2);
    assert_int_equal(r->dst_out[1].node, 2);
    assert_int_equal(r->dst_out[1].slot, 1);
    assert_int_equal(r->n_pre, 2);
    assert_int_equal(r->pre[0].kind, SO_PRE_DIV);
    assert_int_equal(r->pre[0].value, 2);
    assert_int_equal(r->pre[1].kind, SO_PRE_GE);
    assert_int_equal(r->status, SO_RULE_PROVED);
    assert_true(r->proof_seconds > 0.0129 && r->proof_seconds < 0.0131);
    assert_string_equal(r->provenance, "generate max-ops=3 seed=1");
    assert_int_equal(rs.rules[1].src.nodes[1].attr.act, SO_ACT_RELU);
    assert_int_equal(rs.rules[1].status, SO_RULE_UNVERIFIED);
    assert_int_equal(rs.rules[2].status, SO_RULE_FAILED);
    assert_int_equal(rs.rules[2].dst.nodes[1].n_dx, 4);
    /* symbolic shape of the merged conv: [n, o1+o2, h, w] */
    so_sshape sh;
    so_rref ref = {1, 0};
    assert_int_equal(so_rule_shape(r, 1, ref, &sh), SO_OK);
    assert_int_equal(sh.rank, 4);
    assert_int_equal(sh.dim[1].n_sym, 2);
    assert_int_equal(sh.dim[2].n_sym, 1);
    assert_int_equal(sh.dim[2].c, 0);
    so_ruleset_free(&rs);
}

static void test_round_trip(void **state)
{
    (void)state;
    so_ruleset a, b;
    assert_int_equal(so_rules_parse("a.rules", SAMPLE, strlen(SAMPLE), &a), SO_OK);
    for (int i = 0; i < a.n_rules; i++) {
        char *t = so_rule_format(&a.rules[i]);
        assert_int_equal(so_rules_parse("b.rules", t, strlen(t), &b), SO_OK);
        assert_int_equal(b.n_rules, 1);
        assert_true(so_rule_eq(&a.rules[i], &b.rules[0]));
        b.rules[0].id = a.rules[i].id;
        char *t2 = so_rule_format(&b.rules[0]);
        assert_string_equal(t, t2);
        free(t);
        free(t2);
        so_ruleset_free(&b);
    }
    /* whole file through save/load */
    char path[] = "/tmp/test_rule_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(so_rules_save(&a, path), SO_OK);
    assert_int_equal(so_rules_load(path, &b), SO_OK);
    assert_int_equal(b.n_rules, a.n_rules);
    assert_string_equal(b.header, a.header);
    for (int i = 0; i < a.n_rules; i++) assert_true(so_rule_eq(&a.rules[i], &b.rules[i]));
    /* the sample is in canonical print form: the saved file equals it byte for byte */
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    assert_string_equal(buf, SAMPLE);
    remove(path);
    so_ruleset_free(&a);
    so_ruleset_free(&b);
}

static void expect_error(const char *text, const char *want)
{
    so_ruleset rs;
    assert_int_equal(so_rules_parse("bad.rules", text, strlen(text), &rs), SO_ERR_PARSE);
    if (!strstr(so_error(), want)) fail_msg("error '%s' does not contain '%s'", so_error(), want);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("rule 1\n  input X [n]\n  src a = frob(X)\n", "bad.rules:3: unknown operator 'frob'");
    expect_error("rule 1\n  input X [n]\n  src a = relu(Y)\n", "bad.rules:3: unknown tensor 'Y'");
    expect_error("rule 1\n  input X [n]\n  src a = relu(X)\n  map a -> X\n", "bad.rules:1: rule is not closed");
    expect_error("\n\nrule 1\n  input X [n]\n  src a = relu(X, X)\nend\n", "bad.rules:5: relu takes 1..1 inputs, got 2");
    expect_error("rule 1\n  input X [n]\n  src a = relu(X) axis=1\nend\n", "bad.rules:3: attribute 'axis' is not used by relu");
    expect_error("rule 1\n  input A [m,k]\n  input B [q,n]\n  src a = matmul(A, B) act=none\n  dst d = relu(A)\n  map a -> d\nend\n",
                 "bad.rules:1: rule 1: src node 'a' (matmul): inner dimensions differ: [m,k] x [q,n] (k vs q)");
    expect_error("rule 1\n  input X [n]\n  src a = relu(X)\n  map a -> X\n  where z >= 2\nend\n",
                 "bad.rules:5: unknown symbol 'z'");
    expect_error("rule 1\n  input X [n,m]\n  src a = relu(X)\n  map a -> X\n  proof maybe\nend\n",
                 "bad.rules:5: unknown proof status 'maybe'");
    expect_error("rule 1\n  input X [n,m]\n  src a = relu(X)\n  dst t = transpose(X) perm=1,0\n  map a -> t\nend\n",
                 "bad.rules:1: rule 1: output 0 has different shapes");
    expect_error("rule 1\n  input X [n]\n  src a = split(X) axis=0 sizes=p,q\n  map a -> X\nend\n", "bad.rules:4: 'a' has 2 outputs");
    expect_error("rule 1\nend\n", "bad.rules:2: rule has no src nodes");
    expect_error("bogus\n", "bad.rules:1: expected 'rule N'");
}

/* Instantiation needs shape inference (src/shape.c). */
/* The rule checker's shapes are shape.c's rules (so_dims_*) over symbolic dims: pad adds to a symbol, squeeze
   drops a 1, gemm/softmax misfits are refused with the importer's message naming the symbolic shapes. */
static void test_symbolic_shapes(void **state)
{
    (void)state;
    static const char pad[] = "rule 1\n  input X [n,c]\n  src a = pad(X) pads=1,0,1,2\n  dst b = pad(X) pads=1,0,1,2\n  map a -> b\nend\n";
    so_ruleset rs;
    assert_int_equal(so_rules_parse("p.rules", pad, strlen(pad), &rs), SO_OK);
    so_sshape sh;
    assert_int_equal(so_rule_shape(&rs.rules[0], 0, (so_rref){0, 0}, &sh), SO_OK);
    assert_int_equal(sh.rank, 2);
    assert_int_equal(sh.dim[0].n_sym, 1);
    assert_int_equal(sh.dim[0].c, 2); /* n + 1 + 1 */
    assert_int_equal(sh.dim[1].n_sym, 1);
    assert_int_equal(sh.dim[1].c, 2); /* c + 0 + 2 */
    assert_int_not_equal(sh.dim[0].sym[0], sh.dim[1].sym[0]);
    so_ruleset_free(&rs);
    static const char sq[] =
        "rule 1\n  input X [n,1,c]\n  src a = squeeze(X) axes=1\n  dst b = reshape(X) shape=n,c\n  map a -> b\nend\n";
    assert_int_equal(so_rules_parse("q.rules", sq, strlen(sq), &rs), SO_OK);
    assert_int_equal(so_rule_shape(&rs.rules[0], 0, (so_rref){0, 0}, &sh), SO_OK);
    assert_int_equal(sh.rank, 2);
    so_ruleset_free(&rs);
    expect_error("rule 1\n  input X [n,1,c]\n  src a = squeeze(X) axes=2\n  dst b = reshape(X) shape=n,1\n  map a -> b\nend\n",
                 "bad.rules:1: rule 1: src node 'a' (squeeze): cannot squeeze axis 2 of input [n,1,c] (size c)");
    /* flatten: products of dims stated when one side is a number; slice: a sliced axis of a known size */
    static const char fl[] = "rule 1\n  input X [n,3,4]\n  src a = flatten(X) axis=1\n  dst b = reshape(X) shape=n,12\n  map a -> b\nend\n"
                             "rule 2\n  input X [n,3,4]\n  src s = slice(X) ints=1,0,2,1\n  src a = relu(s)\n  dst r = relu(X)\n"
                             "  dst b = slice(r) ints=1,0,2,1\n  map a -> b\nend\n";
    if (so_rules_parse("f.rules", fl, strlen(fl), &rs) != SO_OK) fail_msg("%s", so_error());
    assert_int_equal(so_rule_shape(&rs.rules[0], 0, (so_rref){0, 0}, &sh), SO_OK);
    assert_int_equal(sh.rank, 2);
    assert_int_equal(sh.dim[0].n_sym, 1); /* n */
    assert_int_equal(sh.dim[1].n_sym, 0);
    assert_int_equal(sh.dim[1].c, 12);
    assert_int_equal(so_rule_shape(&rs.rules[1], 0, (so_rref){0, 0}, &sh), SO_OK);
    assert_int_equal(sh.rank, 3);
    assert_int_equal(sh.dim[0].n_sym, 1);
    assert_int_equal(sh.dim[1].c, 2);
    assert_int_equal(sh.dim[2].c, 4);
    so_ruleset_free(&rs);
    expect_error("rule 1\n  input X [n,m,k]\n  src a = flatten(X) axis=1\n  dst b = relu(X)\n  map a -> b\nend\n",
                 "bad.rules:1: rule 1: src node 'a' (flatten): cannot state the product of the dims of input [n,m,k] on either side of axis 1");
    expect_error("rule 1\n  input X [n,m]\n  src a = slice(X) ints=1,0,2,1\n  dst b = relu(X)\n  map a -> b\nend\n",
                 "bad.rules:1: rule 1: src node 'a' (slice): slice axis 1 of input [n,m] has no known size");
    expect_error("rule 1\n  input X [n,m]\n  src a = softmax(X) axis=2\n  dst b = relu(X)\n  map a -> b\nend\n",
                 "bad.rules:1: rule 1: src node 'a' (softmax): axis 2 out of range for input [n,m]");
    expect_error("rule 1\n  input A [m,k]\n  input B [q,n]\n  src a = gemm(A, B) trans_a=0 trans_b=0\n  dst d = relu(A)\n  map a -> d\nend\n",
                 "bad.rules:1: rule 1: src node 'a' (gemm): inner dimensions differ: A [m,k] (trans_a 0) x B [q,n] (trans_b 0)");
}

static void test_instantiate(void **state)
{
    (void)state;
    so_ruleset rs;
    assert_int_equal(so_rules_parse("a.rules", SAMPLE, strlen(SAMPLE), &rs), SO_OK);
    const so_rule *r = &rs.rules[0];
    int64_t vals[SO_RULE_MAX_SYMS];
    assert_int_equal(so_rule_pick_syms(r, 5, 6, vals), SO_OK);
    assert_int_equal(vals[1] % 2, 0);
    assert_true(vals[2] >= 3);
    so_model *m = NULL;
    if (so_rule_instantiate(r, 1, vals, &m) != SO_OK) fail_msg("%s", so_error());
    assert_non_null(m);
    assert_int_equal(m->n_inputs, 3);
    assert_int_equal(m->n_outputs, 2);
    so_graph *g = m->graph;
    so_edge o = g->outputs[1];
    assert_int_equal(g->nodes[o.node].out[o.slot].dim[1], vals[5]);
    assert_int_equal(g->nodes[o.node].out[o.slot].dim[2], vals[2]);
    so_model_free(m);
    vals[2] = 2; /* violates h >= 3 */
    assert_int_equal(so_rule_instantiate(r, 0, vals, &m), SO_ERR);
    assert_non_null(strstr(so_error(), "h >= 3"));
    so_ruleset_free(&rs);
}

static void test_reverse_and_canon(void **state)
{
    (void)state;
    so_ruleset rs;
    assert_int_equal(so_rules_parse("a.rules", SAMPLE, strlen(SAMPLE), &rs), SO_OK);
    so_rule rev;
    so_rule_reverse(&rs.rules[1], &rev);
    assert_int_equal(rev.src.nodes[0].in[0].node, -2); /* matmul(B, C) */
    assert_int_equal(so_rule_check(&rev), SO_OK);
    /* swap two symbol indices; canonicalisation restores the parse order */
    so_rule r = rs.rules[1];
    so_rule_canon_syms(&r);
    assert_true(so_rule_eq(&r, &rs.rules[1]));
    so_ruleset_free(&rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_sample), cmocka_unit_test(test_round_trip), cmocka_unit_test(test_errors), cmocka_unit_test(test_symbolic_shapes),
        cmocka_unit_test(test_instantiate), cmocka_unit_test(test_reverse_and_canon),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
