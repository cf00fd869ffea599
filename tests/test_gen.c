/* test_gen.c - rule generator: enumeration counts, forced fingerprint collisions, pruning stages,
   shape generalisation, determinism (thread counts, shards + merge). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

#include "../kernels/ref.h"
#include "../rules/gen.h"
#include "../search/match.h"
#include "../src/onnx_io.h"

/* An operator list and its length, for gen_universe_add_insts. */
#define OPS(...) (const so_op[]){__VA_ARGS__}, (int)(sizeof((const so_op[]){__VA_ARGS__}) / sizeof(so_op))

static void two_matrices(gen_universe *u, const so_op *ops, int n_ops)
{
    int d[2] = {2, 3};
    gen_universe_init(u);
    gen_universe_add_var(u, "A", 2, d, GR_ANY, 0);
    gen_universe_add_var(u, "B", 2, d, GR_ANY, 0);
    gen_universe_add_insts(u, ops, n_ops);
}

static int64_t count_graphs(const gen_universe *u, int max_ops, int threads, int64_t *kept)
{
    gen_inputs in;
    gen_inputs_make(u, 1, &in);
    gen_graph *g = NULL;
    int64_t n = 0;
    gen_enum_stats st;
    assert_int_equal(gen_enumerate(u, &in, max_ops, threads, &g, &n, &st, NULL, NULL), SO_OK);
    free(g);
    gen_inputs_free(&in);
    if (kept) *kept = st.kept;
    return st.graphs;
}

/* Hand count, vars A, B of the same type, operator add (two distinct operands), <= 2 ops:
   1 op: add(A,B), add(B,A)                                     = 2
   2 ops chained: n1 in {add(A,B), add(B,A)}, n2 in {add(n1,A), add(A,n1), add(n1,B), add(B,n1)} = 8
   2 ops parallel: {add(A,B), add(B,A)}                          = 1      total 11.
   Kept for bucketing: the 11 graphs (all have 1 or 2 connected outputs) + 0-op graphs:
   A, B, and the unordered pair (A,B)                            = 14. */
static void test_enum_counts_add(void **state)
{
    (void)state;
    gen_universe u;
    two_matrices(&u, OPS(SO_OP_ADD));
    int64_t kept;
    assert_int_equal(count_graphs(&u, 1, 1, NULL), 2);
    assert_int_equal(count_graphs(&u, 2, 1, &kept), 11);
    assert_int_equal(kept, 14);
    assert_int_equal(count_graphs(&u, 2, 2, NULL), 11);
}

/* One var A [2,3], relu and transpose, <= 2 ops:
   1 op: relu(A), T(A)                                            = 2
   2 ops chained: relu(relu A), relu(T A), T(relu A), T(T A)      = 4
   2 ops parallel: {relu(A), T(A)} (duplicates like {relu A, relu A} are not graphs) = 1   total 7.
   3 ops: chains 2^3 = 8; a node over a chain plus a parallel node: for each 2-chain x(y(A))
   add the other-op root z(A) != y(A)... counted by the enumerator as 8 + 8 + ... — checked
   only for thread independence. */
static void test_enum_counts_unary(void **state)
{
    (void)state;
    gen_universe u;
    int d[2] = {2, 3};
    gen_universe_init(&u);
    gen_universe_add_var(&u, "A", 2, d, GR_ANY, 0);
    gen_universe_add_insts(&u, OPS(SO_OP_TRANSPOSE, SO_OP_RELU));
    assert_int_equal(count_graphs(&u, 1, 1, NULL), 2);
    assert_int_equal(count_graphs(&u, 2, 1, NULL), 7);
    assert_int_equal(count_graphs(&u, 3, 1, NULL), count_graphs(&u, 3, 2, NULL));
}

static char *run_text(const gen_universe *u, int max_ops, int threads, int shard_i, int shard_n, int verify)
{
    so_gen_options o;
    so_gen_options_default(&o);
    o.universe = u;
    o.max_ops = max_ops;
    o.threads = threads;
    o.shard_i = shard_i;
    o.shard_n = shard_n;
    o.verify = verify;
    o.float_test = 1;
    o.quiet = 1;
    so_ruleset rs;
    so_gen_stats st;
    if (so_gen_run(&o, &rs, &st) != SO_OK) fail_msg("%s", so_error());
    so_gen_merge(&rs);
    size_t cap = 1024, len = 0;
    char *all = malloc(cap);
    all[0] = 0;
    for (int i = 0; i < rs.n_rules; i++) {
        char *t = so_rule_format(&rs.rules[i]);
        size_t n = strlen(t);
        while (len + n + 1 > cap) all = realloc(all, cap *= 2);
        memcpy(all + len, t, n + 1);
        len += n;
        free(t);
    }
    so_ruleset_free(&rs);
    return all;
}

static uint64_t const_hash(const uint32_t *v, int64_t n, const gen_type *t)
{
    (void)v;
    (void)n;
    (void)t;
    return 42;
}

/* Forcing every fingerprint hash to collide must not merge graphs: buckets are split on the
   full fingerprints, so the resulting rules are exactly those of the real hash. */
static void test_forced_collision(void **state)
{
    (void)state;
    gen_universe u;
    two_matrices(&u, OPS(SO_OP_ADD, SO_OP_RELU, SO_OP_CONCAT, SO_OP_SPLIT));
    char *normal = run_text(&u, 2, 1, 0, 1, 0);
    assert_true(strlen(normal) > 0);
    gen_value_hash = const_hash;
    so_gen_options o;
    so_gen_options_default(&o);
    o.universe = &u;
    o.max_ops = 2;
    o.verify = 0;
    o.quiet = 1;
    so_ruleset rs;
    so_gen_stats st;
    assert_int_equal(so_gen_run(&o, &rs, &st), SO_OK);
    assert_true(st.collisions > 0);
    so_ruleset_free(&rs);
    char *forced = run_text(&u, 2, 1, 0, 1, 0);
    gen_value_hash = gen_value_hash_default;
    assert_string_equal(forced, normal);
    free(normal);
    free(forced);
}

/* A forced collision inside one bucket: two graphs with different values stay apart. */
static void test_bucket_split(void **state)
{
    (void)state;
    gen_universe u;
    two_matrices(&u, OPS(SO_OP_RELU, SO_OP_SIGMOID));
    gen_inputs in;
    gen_inputs_make(&u, 5, &in);
    gen_graph g[3];
    memset(g, 0, sizeof g);
    for (int i = 0; i < 3; i++) {
        g[i].n_nodes = 1;
        g[i].n_out = 1;
        g[i].out[0] = 2;
        g[i].mask = 1;
        g[i].key = 7; /* all in one bucket */
    }
    g[0].nodes[0].inst = 0; /* relu(A) */
    g[1].nodes[0].inst = 1; /* sigmoid(A) */
    g[2].nodes[0].inst = 0; /* relu(A) again: same fingerprint as g[0] */
    int cls[3];
    assert_int_equal(so_gen_split_bucket(&u, &in, g, 3, cls), 2);
    assert_int_equal(cls[0], cls[2]);
    assert_int_not_equal(cls[0], cls[1]);
    gen_inputs_free(&in);
}

/* Subsumption: the same identity on [a,b,3,3] tensors is an instance of the one on [a,b,c,d]. */
static void test_subsumption(void **state)
{
    (void)state;
    const char *text = "rule 1\n  input X [a,b,c,d]\n  input Y [a,b,c,d]\n  src s0 = add(X, Y) act=none\n"
                       "  dst d0 = add(Y, X) act=none\n  map s0 -> d0\n  proof proved\nend\n"
                       "rule 2\n  input W [a,b,3,3]\n  input V [a,b,3,3]\n  src s0 = add(W, V) act=none\n"
                       "  dst d0 = add(V, W) act=none\n  map s0 -> d0\n  proof proved\nend\n"
                       "rule 3\n  input A [a,b]\n  input B [a,b]\n  src s0 = add(A, B) act=none\n"
                       "  dst d0 = add(B, A) act=none\n  map s0 -> d0\n  proof proved\nend\n";
    so_ruleset rs;
    if (so_rules_parse("t.rules", text, strlen(text), &rs) != SO_OK) fail_msg("%s", so_error());
    assert_int_equal(so_gen_drop_subsumed(&rs), 1);
    assert_int_equal(rs.n_rules, 2);
    assert_string_equal(rs.rules[0].inputs[0].name, "X");
    assert_string_equal(rs.rules[1].inputs[0].name, "A"); /* rank 2: a different structure */
    so_ruleset_free(&rs);
}

/* gen_graph helpers for hand-made candidates over vars B, C (ids 0, 1) of one type. */
static int inst_of(const gen_universe *u, so_op op, int axis)
{
    for (int i = 0; i < u->n_insts; i++)
        if (u->insts[i].op == (int)op && u->insts[i].axis == axis && u->insts[i].act == 0) return i;
    return -1;
}

static gen_graph mk(const gen_universe *u, int n, const int (*nodes)[3], int out0)
{
    gen_graph g;
    memset(&g, 0, sizeof g);
    g.n_nodes = (uint8_t)n;
    g.n_out = 1;
    for (int i = 0; i < n; i++) {
        g.nodes[i].inst = (uint8_t)nodes[i][0];
        g.nodes[i].in[0] = (uint8_t)nodes[i][1];
        g.nodes[i].in[1] = (uint8_t)nodes[i][2];
        for (int a = 0; a < u->insts[nodes[i][0]].n_in; a++)
            if (nodes[i][1 + a] < u->n_vars) g.mask |= 1u << nodes[i][1 + a];
    }
    g.out[0] = (uint8_t)out0;
    uint64_t h[GEN_MAX_NODES];
    gen_node_hashes(u, &g, h);
    g.canon = h[n - 1];
    return g;
}

#define T(k) (2 + 2 * (k)) /* tensor id of node k's output (2 vars) */

static void test_pruning_stages(void **state)
{
    (void)state;
    gen_universe u;
    two_matrices(&u, OPS(SO_OP_ADD, SO_OP_RELU, SO_OP_CONCAT));
    int add = inst_of(&u, SO_OP_ADD, 0), relu = inst_of(&u, SO_OP_RELU, 0), cat = inst_of(&u, SO_OP_CONCAT, 0);
    gen_inputs in;
    gen_inputs_make(&u, 3, &in);

    /* trivial: a graph paired with itself */
    const int g1n[][3] = {{relu, 0, 0}, {add, T(0), 1}};
    gen_graph g1 = mk(&u, 2, g1n, T(1));
    assert_true(so_gen_trivial(&u, &g1, &g1));

    /* common subgraph: add(relu(A), B) vs add(B, relu(A)) share the node relu(A) */
    const int g2n[][3] = {{relu, 0, 0}, {add, 1, T(0)}};
    gen_graph g2 = mk(&u, 2, g2n, T(1));
    assert_false(so_gen_trivial(&u, &g1, &g2));
    assert_true(so_gen_common_subgraph(&u, &g1, &g2));

    /* renaming: add(relu(A), B) -> add(B, relu(A)) and add(relu(B), A) -> add(A, relu(B)) are one
       orbit; exactly one of them is its orbit's representative */
    const int g3n[][3] = {{relu, 1, 0}, {add, T(0), 0}};
    const int g4n[][3] = {{relu, 1, 0}, {add, 0, T(0)}};
    gen_graph g3 = mk(&u, 2, g3n, T(1)), g4 = mk(&u, 2, g4n, T(1));
    uint64_t s12, s34;
    uint64_t o12 = so_gen_orbit_hash(&u, &g1, &g2, &s12), o34 = so_gen_orbit_hash(&u, &g3, &g4, &s34);
    assert_true(o12 == o34);
    assert_true((o12 == s12) != (o34 == s34));

    /* value redundancy: relu(add(A,B)) vs relu(add(B,A)): the inner adds are equal tensors */
    const int g5n[][3] = {{add, 0, 1}, {relu, T(0), 0}};
    const int g6n[][3] = {{add, 1, 0}, {relu, T(0), 0}};
    gen_graph g5 = mk(&u, 2, g5n, T(1)), g6 = mk(&u, 2, g6n, T(1));
    assert_false(so_gen_common_subgraph(&u, &g5, &g6));
    assert_true(so_gen_value_redundant(&u, &in, &g5, &g6));

    /* not redundant: relu(concat(A,B)) vs concat(relu(A), relu(B)) */
    const int g7n[][3] = {{cat, 0, 1}, {relu, T(0), 0}};
    const int g8n[][3] = {{relu, 0, 0}, {relu, 1, 0}, {cat, T(0), T(1)}};
    gen_graph g7 = mk(&u, 2, g7n, T(1)), g8 = mk(&u, 3, g8n, T(2));
    assert_false(so_gen_common_subgraph(&u, &g8, &g7));
    assert_false(so_gen_value_redundant(&u, &in, &g8, &g7));

    /* the candidate generalises: inputs [a,b], [c,b]; concat on axis 0 */
    so_rule r;
    if (so_gen_make_rule(&u, &g8, &g7, &r) != SO_OK) fail_msg("%s", so_error());
    assert_int_equal(r.n_inputs, 2);
    assert_int_equal(r.n_syms, 3);
    assert_true(so_dimx_eq(&r.inputs[0].dim[1], &r.inputs[1].dim[1]));
    assert_false(so_dimx_eq(&r.inputs[0].dim[0], &r.inputs[1].dim[0]));
    assert_int_equal(r.src.n_nodes, 3);
    assert_int_equal(r.dst.n_nodes, 2);
    gen_inputs_free(&in);
}

/* Every pruning stage removes something on a small universe, counts are monotone. */
static void test_stage_counts(void **state)
{
    (void)state;
    gen_universe u;
    two_matrices(&u, OPS(SO_OP_ADD, SO_OP_TRANSPOSE, SO_OP_RELU, SO_OP_CONCAT, SO_OP_SPLIT));
    so_gen_options o;
    so_gen_options_default(&o);
    o.universe = &u;
    o.max_ops = 3;
    o.verify = 0;
    o.quiet = 1;
    so_ruleset rs;
    so_gen_stats st;
    assert_int_equal(so_gen_run(&o, &rs, &st), SO_OK);
    assert_true(st.candidates > st.after_renaming);
    assert_true(st.after_renaming > st.after_common_subgraph);
    assert_true(st.after_common_subgraph >= st.after_generalise);
    assert_true(st.rules > 0);
    assert_int_equal(st.rules, rs.n_rules);
    /* relu commutes with concat on axis 0 is among the rules */
    int found = 0;
    for (int i = 0; i < rs.n_rules; i++) {
        char *t = so_rule_format(&rs.rules[i]);
        if (strstr(t, "relu") && strstr(t, "concat") && rs.rules[i].src.n_nodes + rs.rules[i].dst.n_nodes == 5) found = 1;
        free(t);
    }
    assert_true(found);
    so_ruleset_free(&rs);
}

/* Determinism on the default universe at 2 ops: two runs, 1 vs 2 threads, and 2 shards merged. */
static void test_determinism(void **state)
{
    (void)state;
    gen_universe u;
    gen_universe_default(&u);
    char *a = run_text(&u, 2, 1, 0, 1, 0);
    char *b = run_text(&u, 2, 2, 0, 1, 0);
    assert_true(strlen(a) > 1000);
    assert_string_equal(a, b);
    /* shards: concatenate the two shard outputs, merge, compare */
    so_ruleset all;
    memset(&all, 0, sizeof all);
    for (int s = 0; s < 2; s++) {
        so_gen_options o;
        so_gen_options_default(&o);
        o.universe = &u;
        o.max_ops = 2;
        o.shard_i = s;
        o.shard_n = 2;
        o.verify = 0;
        o.quiet = 1;
        so_ruleset rs;
        so_gen_stats st;
        assert_int_equal(so_gen_run(&o, &rs, &st), SO_OK);
        assert_true(rs.n_rules > 0);
        for (int i = 0; i < rs.n_rules; i++) so_ruleset_push(&all, &rs.rules[i]);
        so_ruleset_free(&rs);
    }
    so_gen_merge(&all);
    /* the partitioned enumeration: any partition count, records spilled to temp files or not */
    gen_n_parts = 1;
    char *c = run_text(&u, 2, 2, 0, 1, 0);
    gen_n_parts = 64;
    gen_spill_bytes = 1; /* every record goes through a temp file */
    char *d = run_text(&u, 2, 2, 0, 1, 0);
    gen_n_parts = 0;
    gen_spill_bytes = (int64_t)256 << 20;
    assert_string_equal(a, c);
    assert_string_equal(a, d);
    free(c);
    free(d);
    size_t len = 0;
    for (int i = 0; i < all.n_rules; i++) {
        char *t = so_rule_format(&all.rules[i]);
        assert_memory_equal(t, a + len, strlen(t));
        len += strlen(t);
        free(t);
    }
    assert_int_equal(len, strlen(a));
    so_ruleset_free(&all);
    free(a);
    free(b);
}

/* Op multiset of one side, as a sorted comma-separated string of op names. */
static void side_ops(const so_pattern *p, char *buf, size_t n)
{
    const char *names[SO_RULE_MAX_NODES];
    int k = p->n_nodes;
    for (int i = 0; i < k; i++) names[i] = so_ops[p->nodes[i].op].name;
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            const char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    buf[0] = 0;
    for (int i = 0; i < k; i++) {
        strncat(buf, names[i], n - strlen(buf) - 1);
        if (i + 1 < k) strncat(buf, ",", n - strlen(buf) - 1);
    }
}

static int has_family(const so_ruleset *rs, const char *a, const char *b, int n_out, int (*extra)(const so_rule *))
{
    for (int i = 0; i < rs->n_rules; i++) {
        const so_rule *r = &rs->rules[i];
        char s[128], d[128];
        side_ops(&r->src, s, sizeof s);
        side_ops(&r->dst, d, sizeof d);
        if (r->n_outputs != n_out || r->status != SO_RULE_PROVED) continue;
        if (!((strcmp(s, a) == 0 && strcmp(d, b) == 0) || (strcmp(s, b) == 0 && strcmp(d, a) == 0))) continue;
        if (extra && !extra(r)) continue;
        return 1;
    }
    return 0;
}

static int no_act(const so_rule *r)
{
    for (int w = 0; w < 2; w++) {
        const so_pattern *p = w ? &r->dst : &r->src;
        for (int i = 0; i < p->n_nodes; i++)
            if (p->nodes[i].attr.act) return 0;
    }
    return 1;
}

/* add of two activations (input linearity) vs add of two kernels (weight linearity): the add
   node's operands are rule inputs of rank 4 whose dims 2,3 are symbolic (activations) or
   concrete (kernels). */
static int add_of(const so_rule *r, int kernels)
{
    for (int w = 0; w < 2; w++) {
        const so_pattern *p = w ? &r->dst : &r->src;
        for (int i = 0; i < p->n_nodes; i++) {
            const so_rnode *n = &p->nodes[i];
            if (n->op != SO_OP_ADD || n->in[0].node >= 0 || n->in[1].node >= 0) continue;
            const so_rinput *x = &r->inputs[-(n->in[0].node + 1)];
            if (x->rank == 4 && (x->dim[2].n_sym == 0) == kernels) return 1;
        }
    }
    return 0;
}
static int add_of_kernels(const so_rule *r) { return add_of(r, 1); }
static int add_of_acts(const so_rule *r) { return add_of(r, 0); }

/* General row merge: three distinct inputs (A, C concatenated on axis 0, B the shared right
   operand, not one of the concatenated ones). */
static int row_merge_3(const so_rule *r)
{
    if (r->n_inputs != 3) return 0;
    for (int w = 0; w < 2; w++) {
        const so_pattern *p = w ? &r->dst : &r->src;
        for (int i = 0; i < p->n_nodes; i++) {
            const so_rnode *n = &p->nodes[i];
            if (n->op == SO_OP_CONCAT && n->attr.axis == 0 && n->in[0].node < 0 && n->in[1].node < 0 &&
                n->in[0].node != n->in[1].node)
                return 1;
        }
    }
    return 0;
}

/* Some input is a rank-3 activation (PyTorch Linear on [s0,s1,h]). */
static int has_rank3_input(const so_rule *r)
{
    for (int i = 0; i < r->n_inputs; i++)
        if (r->inputs[i].rank == 3) return 1;
    return 0;
}

/* Conv+BN folding: the batchnorm side's conv (group 1) has a bias (3 inputs) or not. */
static int bn_conv_bias(const so_rule *r, int n_in)
{
    for (int w = 0; w < 2; w++) {
        const so_pattern *p = w ? &r->dst : &r->src;
        int has_bn = 0;
        for (int i = 0; i < p->n_nodes; i++) has_bn |= p->nodes[i].op == SO_OP_BATCHNORM;
        if (!has_bn) continue;
        for (int i = 0; i < p->n_nodes; i++)
            if (p->nodes[i].op == SO_OP_CONV && p->nodes[i].n_in == n_in && p->nodes[i].attr.group == 1) return 1;
    }
    return 0;
}
static int bn_conv_plain(const so_rule *r) { return bn_conv_bias(r, 2); }
static int bn_conv_biased(const so_rule *r) { return bn_conv_bias(r, 3); }

/* Sibling convs with biases merged: a conv (3 inputs) whose weight and bias are both axis-0
   concats of two rule inputs (weight-side nodes the search folds into new weights); act as given. */
static int conv_merged_bias(const so_rule *r, int act)
{
    for (int w = 0; w < 2; w++) {
        const so_pattern *p = w ? &r->dst : &r->src;
        for (int i = 0; i < p->n_nodes; i++) {
            const so_rnode *n = &p->nodes[i];
            if (n->op != SO_OP_CONV || n->n_in != 3 || n->attr.act != act) continue;
            int ok = 1;
            for (int a = 1; a <= 2; a++) {
                if (n->in[a].node < 0) {
                    ok = 0;
                    break;
                }
                const so_rnode *c = &p->nodes[n->in[a].node];
                ok &= c->op == SO_OP_CONCAT && c->attr.axis == 0 && c->in[0].node < 0 && c->in[1].node < 0;
            }
            if (ok) return 1;
        }
    }
    return 0;
}
static int conv_merged_bias_none(const so_rule *r) { return conv_merged_bias(r, SO_ACT_NONE); }
static int conv_merged_bias_relu(const so_rule *r) { return conv_merged_bias(r, SO_ACT_RELU); }

/* Every batchnorm-family node of the rule has epsilon e (and there is one). */
static int eps_is(const so_rule *r, float e)
{
    int n = 0;
    for (int w = 0; w < 2; w++) {
        const so_pattern *p = w ? &r->dst : &r->src;
        for (int i = 0; i < p->n_nodes; i++) {
            so_op op = p->nodes[i].op;
            if (op != SO_OP_BATCHNORM && op != SO_OP_BNFOLD_W && op != SO_OP_BNFOLD_B) continue;
            if (p->nodes[i].attr.epsilon != e) return 0;
            n++;
        }
    }
    return n > 0;
}
static int eps_1e3_plain(const so_rule *r) { return eps_is(r, 1e-3f) && bn_conv_bias(r, 2); }
static int eps_1e3_biased(const so_rule *r) { return eps_is(r, 1e-3f) && bn_conv_bias(r, 3); }

/* The shipped rule set holds every family of the acceptance list. */
static void test_default_rules_families(void **state)
{
    (void)state;
    so_ruleset rs;
    if (so_rules_load("rules/default.rules", &rs) != SO_OK) fail_msg("%s", so_error());
    assert_true(rs.n_rules >= 500);
    assert_true(has_family(&rs, "matmul,matmul", "matmul,matmul", 1, no_act));              /* associativity */
    assert_true(has_family(&rs, "add,matmul,matmul", "add,matmul", 1, NULL));               /* distributivity */
    assert_true(has_family(&rs, "concat,matmul,split", "matmul,matmul", 2, NULL));          /* shared-input merge */
    assert_true(has_family(&rs, "concat,matmul,split", "matmul,matmul", 2, row_merge_3));   /* row merge */
    assert_true(has_family(&rs, "concat,matmul,split", "matmul,matmul", 2, has_rank3_input)); /* Q/K/V merge (rank 3) */
    assert_true(has_family(&rs, "matmul,matmul", "matmul,matmul", 1, has_rank3_input));    /* rank-3 associativity */
    assert_true(has_family(&rs, "add,add,split", "add,concat,split", 2, has_rank3_input));  /* merged bias (Q/K/V) */
    assert_true(has_family(&rs, "concat,conv,split", "conv,conv", 2, NULL));                /* conv merge */
    assert_true(has_family(&rs, "concat,conv,enlarge,split", "conv,conv", 2, NULL));        /* with enlarge */
    assert_true(has_family(&rs, "add,conv,conv", "add,conv", 1, add_of_acts));              /* linear in input */
    assert_true(has_family(&rs, "add,conv,conv", "add,conv", 1, add_of_kernels));           /* linear in weight */
    assert_true(has_family(&rs, "concat,split", "", 2, NULL));                              /* split(concat) */
    assert_true(has_family(&rs, "concat,split", "", 1, NULL));                              /* concat(split) */
    assert_true(has_family(&rs, "matmul,transpose", "matmul,transpose,transpose", 1, NULL)); /* transpose */
    assert_true(has_family(&rs, "concat,relu,relu", "concat,relu", 1, NULL));               /* relu/concat */
    assert_true(has_family(&rs, "relu,relu,split", "relu,split", 2, NULL));                 /* relu/split */
    assert_true(has_family(&rs, "avgpool", "const_pool,conv", 1, NULL));                    /* pool as conv */
    assert_true(has_family(&rs, "conv,relu", "conv", 1, NULL));                             /* fused relu */
    assert_true(has_family(&rs, "batchnorm,conv", "bnfold_b,bnfold_w,conv", 1, bn_conv_plain));  /* conv+BN folding */
    assert_true(has_family(&rs, "batchnorm,conv", "bnfold_b,bnfold_w,conv", 1, bn_conv_biased)); /* conv+bias+BN */
    assert_true(has_family(&rs, "batchnorm,conv,relu", "bnfold_b,bnfold_w,conv", 1, NULL));      /* + fused relu */
    /* conv+BN folding at epsilon 1e-3 (Inception-v3), the epsilon instances */
    assert_true(has_family(&rs, "batchnorm,conv", "bnfold_b,bnfold_w,conv", 1, eps_1e3_plain));
    assert_true(has_family(&rs, "batchnorm,conv", "bnfold_b,bnfold_w,conv", 1, eps_1e3_biased));
    /* sibling convs with biases merged over concatenated weights and biases (two free weight-side
       concats), with and without a fused relu; and the output-concat form */
    assert_true(has_family(&rs, "concat,concat,conv,split", "conv,conv", 2, conv_merged_bias_none));
    assert_true(has_family(&rs, "concat,concat,conv,split", "conv,conv", 2, conv_merged_bias_relu));
    assert_true(has_family(&rs, "concat,concat,conv", "concat,conv,conv", 1, conv_merged_bias_relu));
    so_ruleset_free(&rs);
}

static int grab_first(const so_match *m, void *ud)
{
    *(so_match *)ud = *m;
    return 1;
}

static int count_op(const so_graph *g, so_op op)
{
    int n = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) n += g->nodes[i].op == op;
    return n;
}

/* Runs g with the reference kernels on seeded inputs; returns the malloc'd outputs concatenated. */
static float *run_ref(const so_graph *g, int64_t *n_out)
{
    const so_model *m = g->model;
    float *in[8] = {0}, *out[8] = {0};
    assert_true(m->n_inputs <= 8 && m->n_outputs <= 8);
    uint64_t rng = 7;
    for (int32_t i = 0; i < m->n_inputs; i++) {
        int64_t n = so_shape_numel(&m->inputs[i].shape);
        in[i] = malloc((size_t)n * sizeof(float));
        for (int64_t k = 0; k < n; k++) {
            rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
            in[i][k] = (float)((double)(rng >> 40) / (double)(1ULL << 24)) * 2.0f - 1.0f;
        }
    }
    int64_t total = 0, off = 0;
    for (int32_t o = 0; o < m->n_outputs; o++) total += so_shape_numel(&g->nodes[g->outputs[o].node].out[g->outputs[o].slot]);
    float *all = malloc((size_t)total * sizeof(float));
    for (int32_t o = 0; o < m->n_outputs; o++) {
        out[o] = all + off;
        off += so_shape_numel(&g->nodes[g->outputs[o].node].out[g->outputs[o].slot]);
    }
    if (so_ref_run(g, (const float *const *)in, out) != SO_OK) fail_msg("%s", so_error());
    for (int32_t i = 0; i < m->n_inputs; i++) free(in[i]);
    *n_out = total;
    return all;
}

/* Conv+BN folding applies where the imported graph has BatchNormalization nodes (the importer
   keeps them; data/resnet_small.onnx is exported with BN kept): every generated folding rule,
   read backwards (batchnorm(conv) -> conv(bnfold_w, bnfold_b)), is matched and applied until
   none matches; the bnfold_* nodes are folded into weights, one batchnorm disappears per
   application, and the folded graph computes what the original does. */
static void test_bn_fold_applies(void **state)
{
    (void)state;
    so_model *m = NULL;
    so_ruleset rs;
    if (so_onnx_load("data/resnet_small.onnx", &m) != SO_OK) {
        skip(); /* run from the repository root */
        return;
    }
    if (so_rules_load("rules/default.rules", &rs) != SO_OK) fail_msg("%s", so_error());
    so_fold_ctx fc;
    so_fold_init(&fc, m);
    so_graph *g = so_graph_clone(m->graph);
    int bn0 = count_op(g, SO_OP_BATCHNORM), applied = 0, n_fold_rules = 0, n_fold_rules_seen = 0;
    assert_true(bn0 > 0);
    for (int progress = 1; progress;) {
        progress = 0;
        for (int32_t i = 0; i < rs.n_rules && !progress; i++) {
            const so_rule *r = &rs.rules[i];
            int has_fold = 0, has_bn = 0;
            for (int k = 0; k < r->src.n_nodes; k++) has_fold |= r->src.nodes[k].op == SO_OP_BNFOLD_W;
            for (int k = 0; k < r->dst.n_nodes; k++) has_bn |= r->dst.nodes[k].op == SO_OP_BATCHNORM;
            if (!has_fold || !has_bn) continue;
            n_fold_rules += i >= n_fold_rules_seen;
            if (i >= n_fold_rules_seen) n_fold_rules_seen = i + 1;
            so_rule rv;
            so_rule_reverse(r, &rv);
            so_match_index ix;
            so_match_index_init(&ix, g);
            so_match mt;
            if (so_match_rule(&ix, &rv, i, grab_first, &mt) > 0) {
                mt.rule = &rv;
                so_graph *ng = NULL;
                if (so_rewrite(g, &mt, &fc, &ng) != SO_OK) fail_msg("rule %d: %s", (int)r->id, so_error());
                so_graph_free(g);
                g = ng;
                applied++;
                progress = 1;
            }
            so_match_index_free(&ix);
        }
    }
    print_message("conv+BN folding: %d folding rules, %d of %d batchnorms folded\n", n_fold_rules, applied, bn0);
    assert_true(n_fold_rules >= 4);
    assert_true(applied >= 1);
    assert_int_equal(count_op(g, SO_OP_BATCHNORM), bn0 - applied);
    assert_int_equal(count_op(g, SO_OP_BNFOLD_W) + count_op(g, SO_OP_BNFOLD_B), 0); /* folded into weights */
    int64_t na, nb;
    float *a = run_ref(m->graph, &na), *b = run_ref(g, &nb);
    assert_int_equal(na, nb);
    for (int64_t k = 0; k < na; k++)
        if (fabsf(a[k] - b[k]) > 1e-4f * (1.0f + fabsf(a[k]))) fail_msg("output %lld: %g vs %g", (long long)k, a[k], b[k]);
    free(a);
    free(b);
    so_graph_free(g);
    so_fold_free(&fc);
    so_ruleset_free(&rs);
    so_model_free(m);
}

/* The generator's typing runs the shared shape rules (src/shape.c so_dims_*) over its int16 dims, quietly: a
   candidate whose shapes misfit is rejected without a message (the thread's last error is left as it was), one
   that fits gets the rule's shape with the dims past its rank zero (types are compared and hashed whole). */
static void test_typing_shared_rules_quiet(void **state)
{
    (void)state;
    gen_universe u;
    gen_universe_default(&u);
    gen_universe_activate(&u);
    int cat = -1, mm = -1;
    for (int i = 0; i < u.n_insts; i++) {
        if (u.insts[i].op == SO_OP_CONCAT && u.insts[i].axis == 0 && cat < 0) cat = i;
        if (u.insts[i].op == SO_OP_MATMUL && mm < 0) mm = i;
    }
    assert_true(cat >= 0 && mm >= 0);
    /* each case: a misfit (rejected quietly), then one dim changed so that it fits, and the shape the rule gives */
    const struct { int inst, fix_in, fix_dim, fix_to, out0, out1; } cs[2] = {
        {cat, 1, 1, 3, 6, 3}, /* [2,3] ++ [4,5] on axis 0: columns differ; [2,3] ++ [4,3] = [6,3] */
        {mm, 1, 0, 3, 2, 5},  /* [2,3] @ [4,5]: inner dims differ; [2,3] @ [3,5] = [2,5] */
    };
    so_errorf("sentinel");
    for (int k = 0; k < 2; k++) {
        gen_type in[2] = {{2, {2, 3}}, {2, {4, 5}}}, out[2];
        memset(out, 0x55, sizeof out);
        assert_int_equal(gen_typecheck(&u, cs[k].inst, in, 2, 0, out), 0);
        assert_string_equal(so_error(), "sentinel");
        in[cs[k].fix_in].dim[cs[k].fix_dim] = (int16_t)cs[k].fix_to;
        assert_int_equal(gen_typecheck(&u, cs[k].inst, in, 2, 0, out), 1);
        assert_int_equal(out[0].rank, 2);
        assert_int_equal(out[0].dim[0], cs[k].out0);
        assert_int_equal(out[0].dim[1], cs[k].out1);
        assert_int_equal(out[0].dim[2], 0);
    }
}

/* Issue 19: no shipped rule rewrites a graph into itself. 28 of the 2,705 rules of session 5 did
   (e.g. enlarge(H) + V -> enlarge(H) + V): pruning compared the unexpanded graphs, where an enlarged
   pseudo-variable and an enumerated enlarge of the same kernel differ. so_rule_same_sides is first
   shown to catch that rule, then run over rules/default.rules. */
static void test_no_same_sides(void **state)
{
    (void)state;
    so_ruleset t;
    static const char txt2[] = "rule 1\n  input H [a,b,1,3]\n  input V [a,b,3,3]\n"
                               "  src s0 = enlarge(H) kernel=3,3\n  src s1 = add(s0, V) act=none\n"
                               "  dst d0 = enlarge(H) kernel=3,3\n  dst d1 = add(d0, V) act=none\n"
                               "  map s1 -> d1\n  proof proved\nend\n"
                               "rule 2\n  input H [a,b,1,3]\n  input V [a,b,3,3]\n"
                               "  src s0 = enlarge(H) kernel=3,3\n  src s1 = add(s0, V) act=none\n"
                               "  dst d0 = enlarge(H) kernel=3,3\n  dst d1 = add(V, d0) act=none\n"
                               "  map s1 -> d1\n  proof proved\nend\n";
    if (so_rules_parse("same.rules", txt2, sizeof txt2 - 1, &t) != SO_OK) fail_msg("%s", so_error());
    assert_int_equal(t.n_rules, 2);
    assert_true(so_rule_same_sides(&t.rules[0]));
    assert_false(so_rule_same_sides(&t.rules[1])); /* operands swapped: a different graph */
    so_ruleset_free(&t);
    so_ruleset rs;
    if (so_rules_load("rules/default.rules", &rs) != SO_OK) fail_msg("%s", so_error());
    int same = 0;
    for (int32_t i = 0; i < rs.n_rules; i++)
        if (so_rule_same_sides(&rs.rules[i])) {
            print_message("rule %d (line %d) has the same two sides\n", (int)rs.rules[i].id, (int)rs.rules[i].line);
            same++;
        }
    assert_true(rs.n_rules > 1000);
    assert_int_equal(same, 0);
    so_ruleset_free(&rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_enum_counts_add),  cmocka_unit_test(test_enum_counts_unary),
        cmocka_unit_test(test_forced_collision), cmocka_unit_test(test_pruning_stages),
        cmocka_unit_test(test_stage_counts),     cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_default_rules_families), cmocka_unit_test(test_bucket_split),
        cmocka_unit_test(test_subsumption),      cmocka_unit_test(test_bn_fold_applies),
        cmocka_unit_test(test_no_same_sides),     cmocka_unit_test(test_typing_shared_rules_quiet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
