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

/* shape of output slot of node 0 of side 0 of the only rule of text (which must parse), as "[d0,d1,...]" */
static void expect_shape(const char *text, int slot, const char *want)
{
    so_ruleset rs;
    if (so_rules_parse("s.rules", text, strlen(text), &rs) != SO_OK) fail_msg("%s", so_error());
    so_sshape sh;
    assert_int_equal(so_rule_shape(&rs.rules[0], 0, (so_rref){0, (int16_t)slot}, &sh), SO_OK);
    so_sbuf b = {0};
    so_sbuf_printf(&b, "[");
    for (int k = 0; k < sh.rank; k++) {
        if (k) so_sbuf_printf(&b, ",");
        so_dimx_print(&b, &sh.dim[k], &rs.rules[0]);
    }
    so_sbuf_printf(&b, "]");
    if (strcmp(b.s, want)) fail_msg("slot %d: shape %s, expected %s", slot, b.s, want);
    free(b.s);
    so_ruleset_free(&rs);
}

/* The operators moved onto the shared rules in session 12 (recurrent, 3-D, transposed convs, spectral, tf-idf, blocked
   concat): their rule shapes over symbolic dims, and a misfit refused with the importer's message. */
static void test_symbolic_shapes_late_ops(void **state)
{
    (void)state;
    /* LSTM over a symbolic sequence length and batch: Y [t,1,n,2], Y_h = Y_c = [1,n,2] */
    static const char lstm[] = "rule 1\n  input X [t,n,4]\n  input W [1,8,4]\n  input R [1,8,2]\n"
                               "  src a = lstm(X, W, R) hidden=2 direction=0 mode=0 clip_min=0 clip_max=0 ints=\n"
                               "  dst b = lstm(X, W, R) hidden=2 direction=0 mode=0 clip_min=0 clip_max=0 ints=\n  map a.0 -> b.0\n  map a.1 -> b.1\nend\n";
    expect_shape(lstm, 0, "[t,1,n,2]");
    expect_shape(lstm, 1, "[1,n,2]");
    expect_shape(lstm, 2, "[1,n,2]");
    expect_error("rule 1\n  input X [t,n,4]\n  input W [1,8,3]\n  input R [1,8,2]\n  src a = lstm(X, W, R) hidden=2\n  dst b = relu(X)\n  map a.0 -> b\nend\n",
                 "bad.rules:1: rule 1: src node 'a' (lstm): W [1,8,3] must be [1,8,4] for input [t,n,4], hidden 2");
    expect_error("rule 1\n  input X [t,n,4]\n  input W [2,6,4]\n  input R [2,6,2]\n  src a = gru(X, W, R) hidden=2 direction=2 mode=3\n  dst b = relu(X)\n  map a.0 -> b\nend\n",
                 "bad.rules:1: rule 1: src node 'a' (gru): linear_before_reset 3 is not 0 or 1");
    expect_shape("rule 1\n  input X [t,n,4]\n  input W [2,2,4]\n  input R [2,2,2]\n  src a = rnn(X, W, R) hidden=2 direction=2 mode=1\n"
                 "  dst b = rnn(X, W, R) hidden=2 direction=2 mode=1\n  map a.0 -> b.0\nend\n", 0, "[t,2,n,2]");
    /* ConvTranspose: stride 1 adds k - 1 - pads to a symbolic plane; stride 2 on a symbol is refused (no sum of symbols) */
    expect_shape("rule 1\n  input X [n,4,h,w]\n  input W [4,2,3,3]\n  src a = convtranspose(X, W) stride=1,1 pad=1,0,0,0 dilation=1,1 group=2 ints=0,0\n"
                 "  dst b = convtranspose(X, W) stride=1,1 pad=1,0,0,0 dilation=1,1 group=2 ints=0,0\n  map a -> b\nend\n", 0, "[n,4,h+1,w+2]");
    expect_error("rule 1\n  input X [n,3,h,w]\n  input W [4,2,3,3]\n  src a = convtranspose(X, W) stride=1,1 group=1 ints=0,0\n  dst b = relu(X)\n  map a -> b\nend\n",
                 "bad.rules:1: rule 1: src node 'a' (convtranspose): input [n,3,h,w], weight [4,2,3,3] and group 1 do not fit");
    /* the 3-D family: floor windows of stride 1 subtract k - 1 from a symbolic plane */
    static const char c3[] = "rule 1\n  input X [n,2,d,h,w]\n  input W [4,2,3,3,3]\n  src a = conv3d(X, W) group=1 ints=3,3,3,1,1,1,1,1,1,0,0,0,0,0,0\n"
                             "  dst b = conv3d(X, W) group=1 ints=3,3,3,1,1,1,1,1,1,0,0,0,0,0,0\n  map a -> b\nend\n";
    expect_shape(c3, 0, "[n,4,d-2,h-2,w-2]");
    expect_shape("rule 1\n  input X [n,2,d,h,w]\n  src a = maxpool3d(X) ceil_mode=0 ints=2,2,2,1,1,1,1,1,1,1,1,1,0,0,0\n"
                 "  dst b = maxpool3d(X) ceil_mode=0 ints=2,2,2,1,1,1,1,1,1,1,1,1,0,0,0\n  map a -> b\nend\n", 0, "[n,2,d,h,w]");
    expect_error("rule 1\n  input X [n,2,d,h,w]\n  input W [4,2,3,3,2]\n  src a = conv3d(X, W) group=1 ints=3,3,3,1,1,1,1,1,1,0,0,0,0,0,0\n  dst b = relu(X)\n  map a -> b\nend\n",
                 "bad.rules:1: rule 1: src node 'a' (conv3d): weight [4,2,3,3,2] does not match kernel 3 on axis 4");
    expect_error("rule 1\n  input X [n,2,h,w]\n  src a = avgpool3d(X) ceil_mode=0 count_include_pad=0 ints=2,2,2,1,1,1,1,1,1,0,0,0,0,0,0\n  dst b = relu(X)\n  map a -> b\nend\n",
                 "bad.rules:1: rule 1: src node 'a' (avgpool3d): input [N,C,D,H,W] [n,2,h,w] must have rank 5");
    /* DFT / STFT over a symbolic batch; a symbolic frame count only with frame_step 1 */
    expect_shape("rule 1\n  input X [n,16,1]\n  src a = dft(X) axis=1 mode=2 ints=16\n  dst b = dft(X) axis=1 mode=2 ints=16\n  map a -> b\nend\n", 0, "[n,9,2]");
    expect_error("rule 1\n  input X [n,16,c]\n  src a = dft(X) axis=1 mode=0 ints=16\n  dst b = relu(X)\n  map a -> b\nend\n",
                 "bad.rules:1: rule 1: src node 'a' (dft): input [n,16,c] must end in 1 (real) or 2 (complex)");
    expect_shape("rule 1\n  input X [n,l,1]\n  src a = stft(X) mode=1 ints=1,8\n  dst b = stft(X) mode=1 ints=1,8\n  map a -> b\nend\n", 0, "[n,l-7,5,2]");
    expect_error("rule 1\n  input X [n,l,1]\n  src a = stft(X) mode=1 ints=4,8\n  dst b = relu(X)\n  map a -> b\nend\n",
                 "bad.rules:1: rule 1: src node 'a' (stft): frames of signal [n,l,1] are not a dimension");
    /* tf-idf: [N,C] -> [N,K]; blocked concat of two 8-lane values of 8 and 5 channels -> 2 blocks */
    expect_shape("rule 1\n  input X [n,c]\n  input P [p]\n  input S [g]\n  input I [m]\n  src a = tfidfvectorizer(X, P, S, I) mode=0 ints=1,2,0,7\n"
                 "  dst b = tfidfvectorizer(X, P, S, I) mode=0 ints=1,2,0,7\n  map a -> b\nend\n", 0, "[n,7]");
    static const char cn[] = "rule 1\n  input X [n,1,h,w,8]\n  input Y [n,1,h,w,8]\n  src a = concat_nchwc(X, Y) ints=8,8,5\n"
                             "  dst b = concat_nchwc(X, Y) ints=8,8,5\n  map a -> b\nend\n";
    expect_shape(cn, 0, "[n,2,h,w,8]");
    expect_error("rule 1\n  input X [n,1,h,w,8]\n  input Y [n,1,g,w,8]\n  src a = concat_nchwc(X, Y) ints=8,8,5\n  dst b = relu(X)\n  map a -> b\nend\n",
                 "bad.rules:1: rule 1: src node 'a' (concat_nchwc): input 1 [n,1,g,w,8] is not a blocked value of 5 channels matching input 0 [n,1,h,w,8]");
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
        cmocka_unit_test(test_parse_sample), cmocka_unit_test(test_round_trip), cmocka_unit_test(test_errors), cmocka_unit_test(test_symbolic_shapes), cmocka_unit_test(test_symbolic_shapes_late_ops),
        cmocka_unit_test(test_instantiate), cmocka_unit_test(test_reverse_and_canon),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
