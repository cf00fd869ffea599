/* test_egraph.c - the e-graph (hash-consing, merge + rebuild congruence, multi-output tuples, cycle
   filtering), extraction (ILP against greedy on a hand-built e-graph with a known optimum, greedy
   fallback) and equality saturation as a search (a multi-output, multi-root rule; numerics kept). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../search/egraph.h"
#include "../search/eqsat.h"
#include "../search/extract.h"
#include "../search/fold.h"
#include "test_util.h"

/* A leaf class: input i of shape s. */
static int32_t leaf(so_egraph *eg, int32_t i, so_shape s)
{
    return so_eg_add(eg, SO_OP_INPUT, so_model_attr_default(eg->model), i, NULL, 0, &s, 1, i, -1, NULL, NULL);
}

static int32_t unary(so_egraph *eg, so_op op, int32_t a, int32_t orig)
{
    so_shape s = eg->cls[so_eg_find(eg, a)].out[0];
    return so_eg_add(eg, op, so_model_attr_default(eg->model), -1, &a, 1, &s, 1, orig, -1, NULL, NULL);
}

static int32_t binary(so_egraph *eg, so_op op, int32_t a, int32_t b)
{
    int32_t k[2] = {a, b};
    so_shape s = eg->cls[so_eg_find(eg, a)].out[0];
    return so_eg_add(eg, op, so_model_attr_default(eg->model), -1, k, 2, &s, 1, -1, -1, NULL, NULL);
}

/* split(a) along axis 1 of a [2,4] class into two [2,2] halves: a tuple class */
static int32_t split_halves(so_egraph *eg, int32_t a)
{
    so_attr at;
    memset(&at, 0, sizeof at);
    at.axis = 1;
    at.n_ints = 2;
    at.ints[0] = at.ints[1] = 2;
    so_shape outs[2] = {shape2(2, 2), shape2(2, 2)};
    return so_eg_add(eg, SO_OP_SPLIT, so_model_attr(eg->model, &at), -1, &a, 1, outs, 2, -1, -1, NULL, NULL);
}

/* every canonical class non-empty and in the topological order (so: acyclic) */
static void assert_acyclic(so_egraph *eg)
{
    int32_t nt;
    free(so_eg_topo(eg, &nt));
    assert_int_equal(nt, eg->n_canon);
    for (int32_t c = 0; c < eg->n_cls; c++)
        if (eg->uf[c] == c) assert_true(eg->cls[c].n_nodes > 0);
}

static void test_hashcons_and_congruence(void **state)
{
    (void)state;
    so_model *m = so_model_new("t");
    so_egraph eg;
    so_eg_init(&eg, m);
    so_shape s = shape2(2, 3);
    int32_t x = leaf(&eg, 0, s), y = leaf(&eg, 1, s);
    int added = -1;
    int32_t rx = unary(&eg, SO_OP_RELU, x, -1), ry = unary(&eg, SO_OP_RELU, y, -1);
    /* the same e-node again: the same class, nothing added */
    int32_t rx2 = so_eg_add(&eg, SO_OP_RELU, so_model_attr_default(m), -1, &x, 1, &s, 1, -1, -1, NULL, &added);
    assert_int_equal(rx2, rx);
    assert_int_equal(added, 0);
    int32_t ax = binary(&eg, SO_OP_ADD, rx, x), ay = binary(&eg, SO_OP_ADD, ry, y);
    assert_int_equal(eg.n_canon, 6);
    assert_int_equal(eg.n_live, 6);
    assert_true(so_eg_find(&eg, rx) != so_eg_find(&eg, ry));
    /* x = y: rebuild makes relu(x) = relu(y) and then add(relu x, x) = add(relu y, y), upward */
    assert_true(so_eg_merge(&eg, x, y) >= 0);
    int64_t cong = so_eg_rebuild(&eg);
    assert_int_equal(cong, 2);
    assert_int_equal(so_eg_find(&eg, rx), so_eg_find(&eg, ry));
    assert_int_equal(so_eg_find(&eg, ax), so_eg_find(&eg, ay));
    assert_int_equal(eg.n_canon, 3);
    /* the duplicates are dropped: one relu and one add left, both inputs kept in the merged class */
    assert_int_equal(eg.n_live, 4);
    assert_int_equal(eg.cls[so_eg_find(&eg, x)].n_nodes, 2);
    assert_int_equal(eg.cls[so_eg_find(&eg, rx)].n_nodes, 1);
    /* children are canonical after the rebuild, and a class's parents read it */
    const so_eclass *cx = &eg.cls[so_eg_find(&eg, x)];
    for (int32_t i = 0; i < cx->n_parents; i++) {
        const so_enode *p = &eg.nodes[cx->parents[i]];
        int reads = 0;
        for (int32_t k = 0; k < p->n_in; k++) reads |= so_eg_kids(&eg, cx->parents[i])[k] == so_eg_find(&eg, x);
        assert_true(reads);
    }
    /* classes of different shapes never merge */
    int32_t z = leaf(&eg, 2, shape2(3, 2));
    assert_int_equal(so_eg_merge(&eg, x, z), -1);
    assert_acyclic(&eg);
    so_eg_free(&eg);
    so_model_free(m);
}

static void test_multi_output(void **state)
{
    (void)state;
    so_model *m = so_model_new("t");
    so_egraph eg;
    so_eg_init(&eg, m);
    int32_t x = leaf(&eg, 0, shape2(2, 4));
    int32_t t = split_halves(&eg, x);
    assert_int_equal(eg.cls[t].n_out, 2);
    int32_t p0 = so_eg_proj(&eg, t, 0, -1), p1 = so_eg_proj(&eg, t, 1, -1);
    assert_int_equal(so_eg_proj(&eg, t, 0, -1), p0);
    assert_true(p0 != p1);
    assert_int_equal(eg.cls[p0].n_out, 1);
    assert_int_equal(eg.cls[p1].out[0].dim[1], 2);
    /* a value merges with a value of its shape, never with the tuple */
    assert_int_equal(so_eg_merge(&eg, t, p0), -1);
    int32_t r = unary(&eg, SO_OP_RELU, p0, -1);
    assert_true(so_eg_merge(&eg, r, p1) >= 0);
    so_eg_rebuild(&eg);
    assert_int_equal(so_eg_find(&eg, r), so_eg_find(&eg, p1));
    assert_acyclic(&eg);
    so_eg_free(&eg);
    so_model_free(m);
}

static void test_cycle_filtering(void **state)
{
    (void)state;
    so_model *m = so_model_new("t");
    so_egraph eg;
    so_eg_init(&eg, m);
    int32_t x = leaf(&eg, 0, shape2(2, 3));
    int32_t y = unary(&eg, SO_OP_RELU, x, 1), z = unary(&eg, SO_OP_RELU, y, 2);
    int32_t w = unary(&eg, SO_OP_SIGMOID, z, 3); /* a reader of z, kept */
    assert_false(so_eg_reaches(&eg, x, z));
    assert_true(so_eg_reaches(&eg, z, x));
    /* z = x (as a rule x = relu(relu(x)) would say): class x would contain relu(y), y = relu(x) */
    so_eg_merge(&eg, z, x);
    so_eg_rebuild(&eg);
    assert_acyclic(&eg);
    assert_int_equal(eg.dropped_cyclic, 1);
    /* x keeps its input e-node; y = relu(x) stays (another reader could need it); the e-node that
       closed the cycle (relu(y) in x's class) is gone */
    const so_eclass *cx = &eg.cls[so_eg_find(&eg, x)];
    assert_int_equal(cx->n_nodes, 1);
    assert_int_equal(eg.nodes[cx->nodes[0]].op, SO_OP_INPUT);
    assert_int_equal(eg.cls[so_eg_find(&eg, y)].n_nodes, 1);
    assert_int_equal(so_eg_find(&eg, z), so_eg_find(&eg, x));
    assert_true(so_eg_reaches(&eg, w, x));
    assert_false(so_eg_reaches(&eg, x, y));
    so_eg_free(&eg);
    so_model_free(m);
}

/* A merge, then a later rule's inverse of it in the merged class: A = {relu(x0), proj0(T)},
   B = {relu(x1), proj1(T)}, T = split(P), P = {tanh(x2), concat(A, B)} closes A -> T -> P -> A. The
   newest e-node on the cycle (the concat) is dropped, the merge's projections stay. */
static void test_cycle_drops_newest(void **state)
{
    (void)state;
    so_model *m = so_model_new("t");
    so_egraph eg;
    so_eg_init(&eg, m);
    int32_t x0 = leaf(&eg, 0, shape2(2, 2)), x1 = leaf(&eg, 1, shape2(2, 2)), x2 = leaf(&eg, 2, shape2(2, 4));
    int32_t a = unary(&eg, SO_OP_RELU, x0, 1), b = unary(&eg, SO_OP_RELU, x1, 2), p = unary(&eg, SO_OP_TANH, x2, 3);
    int32_t t = split_halves(&eg, p);
    so_eg_merge(&eg, a, so_eg_proj(&eg, t, 0, -1));
    so_eg_merge(&eg, b, so_eg_proj(&eg, t, 1, -1));
    so_eg_rebuild(&eg);
    assert_int_equal(eg.dropped_cyclic, 0);
    so_attr at;
    memset(&at, 0, sizeof at);
    at.axis = 1;
    int32_t k[2] = {a, b};
    so_shape cs = shape2(2, 4);
    int32_t c = so_eg_add(&eg, SO_OP_CONCAT, so_model_attr(m, &at), -1, k, 2, &cs, 1, -1, -1, NULL, NULL);
    int32_t concat_node = eg.last_node;
    so_eg_merge(&eg, c, p);
    so_eg_rebuild(&eg);
    assert_acyclic(&eg);
    assert_int_equal(eg.dropped_cyclic, 1);
    assert_true(eg.nodes[concat_node].dead);
    assert_int_equal(eg.cls[so_eg_find(&eg, a)].n_nodes, 2);
    assert_int_equal(eg.cls[so_eg_find(&eg, b)].n_nodes, 2);
    assert_int_equal(eg.cls[so_eg_find(&eg, p)].n_nodes, 1);
    so_eg_free(&eg);
    so_model_free(m);
}

/* R = add(C, D); C = {relu(x) cost 4, proj0(T)}; D = {sigmoid(x) cost 4, proj1(T)}; T = split(M)
   cost 0; M = {tanh(x2) cost 6} (x2 an input of twice the width). Greedy (tree cost) takes relu and
   sigmoid: 1 + 4 + 4 = 9. The optimum shares T: 1 + 6 = 7. */
static void test_ilp_extraction(void **state)
{
    (void)state;
    so_model *m = so_model_new("t");
    so_egraph eg;
    so_eg_init(&eg, m);
    int32_t x = leaf(&eg, 0, shape2(2, 2)), x2 = leaf(&eg, 1, shape2(2, 4));
    int32_t c = unary(&eg, SO_OP_RELU, x, -1), d = unary(&eg, SO_OP_SIGMOID, x, -1), mm = unary(&eg, SO_OP_TANH, x2, -1);
    int32_t t = split_halves(&eg, mm);
    int32_t p0 = so_eg_proj(&eg, t, 0, -1), p1 = so_eg_proj(&eg, t, 1, -1);
    int32_t r = binary(&eg, SO_OP_ADD, c, d);
    unary(&eg, SO_OP_RELU, leaf(&eg, 2, shape2(2, 2)), -1); /* a class the roots do not need */
    so_eg_merge(&eg, c, p0);
    so_eg_merge(&eg, d, p1);
    so_eg_rebuild(&eg);
    double *cost = calloc((size_t)eg.n_nodes, sizeof *cost);
    for (int32_t n = 0; n < eg.n_nodes; n++) {
        int op = eg.nodes[n].op;
        cost[n] = op == SO_OP_RELU || op == SO_OP_SIGMOID ? 4 : op == SO_OP_TANH ? 6 : op == SO_OP_ADD ? 1 : 0;
    }
    int32_t roots[3] = {r, x, x2};
    so_extract_result ex;
    assert_int_equal(so_extract(&eg, cost, roots, 3, 1000, NULL, &ex), SO_OK);
    assert_int_equal(ex.method, SO_EXTRACT_ILP_OPTIMAL);
    assert_true(ex.greedy_cost == 9.0);
    assert_true(ex.cost == 7.0);
    assert_int_equal(eg.nodes[ex.choice[so_eg_find(&eg, c)]].op, SO_EG_PROJ);
    assert_int_equal(eg.nodes[ex.choice[so_eg_find(&eg, d)]].op, SO_EG_PROJ);
    assert_true(so_extract_dag_cost(&eg, cost, ex.choice, roots, 3) == 7.0);
    /* every class keeps a choice (the ILP's solution where it has one, else the incumbent's): the
       moves and whole-graph steps after extraction change classes outside the solution */
    for (int32_t k = 0; k < eg.n_cls; k++)
        if (eg.uf[k] == k && eg.cls[k].n_nodes > 0) assert_true(ex.choice[k] >= 0);
    free(ex.choice);
    /* over the ILP's limit: greedy, and it says why */
    assert_int_equal(so_extract(&eg, cost, roots, 3, 2, NULL, &ex), SO_OK);
    assert_int_equal(ex.method, SO_EXTRACT_GREEDY);
    assert_true(ex.cost == 9.0);
    assert_non_null(strstr(ex.why_greedy, "ILP limit"));
    free(ex.choice);
    free(cost);
    so_eg_free(&eg);
    so_model_free(m);
}

/* n_tri "triangles", a set cover whose LP relaxation is fractional: per triangle t, three classes
   A = relu(x_t), B = sigmoid(x_t), C = tanh(x_t) of cost 1 and three classes of cost 0 that need one
   of two of them, P = {neg(A), neg(B)}, Q = {exp(B), exp(C)}, S = {sqrt(C), sqrt(A)}; the root adds
   every P, Q and S. Greedy (lowest id on ties) takes A, B and C: 3 per triangle; the optimum takes two
   of them: 2; the relaxation takes half of each: 1.5, so branch and bound has to branch. cost[] is
   set for every e-node (malloc'd); roots[0] the root, roots[1 + t] the inputs. */
static double *triangles(so_egraph *eg, int n_tri, int32_t *roots)
{
    int32_t sum = -1;
    for (int t = 0; t < n_tri; t++) {
        int32_t x = leaf(eg, t, shape2(2, 2));
        roots[1 + t] = x;
        int32_t a = unary(eg, SO_OP_RELU, x, -1), b = unary(eg, SO_OP_SIGMOID, x, -1), c = unary(eg, SO_OP_TANH, x, -1);
        int32_t p = unary(eg, SO_OP_NEG, a, -1), q = unary(eg, SO_OP_EXP, b, -1), r = unary(eg, SO_OP_SQRT, c, -1);
        so_eg_merge(eg, p, unary(eg, SO_OP_NEG, b, -1));
        so_eg_merge(eg, q, unary(eg, SO_OP_EXP, c, -1));
        so_eg_merge(eg, r, unary(eg, SO_OP_SQRT, a, -1));
        int32_t pqr = binary(eg, SO_OP_ADD, binary(eg, SO_OP_ADD, p, q), r);
        sum = sum < 0 ? pqr : binary(eg, SO_OP_ADD, sum, pqr);
    }
    roots[0] = sum;
    so_eg_rebuild(eg);
    double *cost = malloc((size_t)eg->n_nodes * sizeof *cost);
    for (int32_t n = 0; n < eg->n_nodes; n++) {
        int op = eg->nodes[n].op;
        cost[n] = op == SO_OP_RELU || op == SO_OP_SIGMOID || op == SO_OP_TANH ? 1 : 0;
    }
    return cost;
}

/* The ILP's limits count work, not time: stopped by a limit, the extraction is the same every time.
   Two triangles under the default limits: the optimum (4 against greedy's 6). Eight triangles with
   at most 2 branch-and-bound subproblems, with 1 simplex iteration in all, and with the relaxation
   cut at 1 iteration: each stops at that limit, says so, and keeps the same choice run after run
   (greedy's, the incumbent it was handed, GLPK having no better one yet); under the default limits
   the same e-graph gets its optimum, 16. */
static void test_ilp_work_limits(void **state)
{
    (void)state;
    so_model *m = so_model_new("t");
    so_egraph eg;
    so_eg_init(&eg, m);
    int32_t roots[1 + 8];
    double *cost = triangles(&eg, 2, roots);
    so_extract_result ex;
    assert_int_equal(so_extract(&eg, cost, roots, 3, 1000, NULL, &ex), SO_OK);
    assert_int_equal(ex.ilp_stop, SO_ILP_FINISHED);
    assert_int_equal(ex.method, SO_EXTRACT_ILP_OPTIMAL);
    assert_true(ex.greedy_cost == 6.0);
    assert_true(ex.cost == 4.0);
    assert_true(ex.ilp_bb_nodes > 1); /* the relaxation (3) was fractional: it branched */
    free(ex.choice);
    free(cost);
    so_eg_free(&eg);

    so_eg_init(&eg, m);
    cost = triangles(&eg, 8, roots);
    const so_extract_limits lims[3] = {{.bb_nodes = 2}, {.bb_iters = 1}, {.lp_iters = 1}};
    const int stops[3] = {SO_ILP_BB_NODES, SO_ILP_BB_ITERS, SO_ILP_LP_ITERS};
    for (int l = 0; l < 3; l++) {
        so_extract_result ex2[2];
        for (int run = 0; run < 2; run++) {
            assert_int_equal(so_extract(&eg, cost, roots, 9, 1000, &lims[l], &ex2[run]), SO_OK);
            assert_int_equal(ex2[run].ilp_stop, stops[l]);
            assert_true(ex2[run].greedy_cost == 24.0);
            assert_int_equal(ex2[run].method, SO_EXTRACT_GREEDY);
            assert_true(ex2[run].cost == 24.0);
            assert_non_null(strstr(ex2[run].why_greedy, so_ilp_stop_name(stops[l])));
        }
        assert_memory_equal(ex2[0].choice, ex2[1].choice, (size_t)eg.n_cls * sizeof *ex2[0].choice);
        assert_int_equal(ex2[0].ilp_bb_nodes, ex2[1].ilp_bb_nodes);
        assert_true(ex2[0].ilp_iters == ex2[1].ilp_iters);
        free(ex2[0].choice);
        free(ex2[1].choice);
    }
    /* the same e-graph under the default limits: finished (131 subproblems with GLPK 5.0), the
       optimum 16 */
    assert_int_equal(so_extract(&eg, cost, roots, 9, 1000, NULL, &ex), SO_OK);
    assert_int_equal(ex.ilp_stop, SO_ILP_FINISHED);
    assert_int_equal(ex.method, SO_EXTRACT_ILP_OPTIMAL);
    assert_true(ex.cost == 16.0);
    assert_true(ex.ilp_bb_nodes > 2);
    free(ex.choice);
    free(cost);
    so_eg_free(&eg);
    so_model_free(m);
}

/* Rules 1 and 2 of the dev rules (TEST_RULES_1_2) parsed into rs, each with its reverse: rules[0..4). */
static int dev_rules_both_ways(so_ruleset *rs, so_rule *rules)
{
    static const char *text = TEST_RULES_1_2;
    assert_int_equal(so_rules_parse("t.rules", text, strlen(text), rs), SO_OK);
    int n = 0;
    for (int i = 0; i < rs->n_rules; i++) {
        rules[n++] = rs->rules[i];
        so_rule_reverse(&rs->rules[i], &rules[n++]);
    }
    return n;
}

/* What an eqsat test searches with: the flops cost model, a fold context on t's model, and the canonicalised
   start graph (a clone of t.g). es_free releases them, t's model and rs. */
typedef struct {
    so_cost_model cm;
    so_fold_ctx fc;
    so_graph *start;
} eq_setup;

static void es_begin(eq_setup *e, tb *t)
{
    assert_int_equal(so_cost_init(&e->cm, SO_COST_FLOPS, 1, ""), SO_OK);
    so_fold_init(&e->fc, t->m);
    e->start = so_graph_clone(t->g);
    assert_int_equal(so_canonicalize(&e->fc, e->start, NULL), SO_OK);
}

static void es_free(eq_setup *e, tb *t, so_ruleset *rs)
{
    so_graph_free(e->start);
    so_fold_free(&e->fc);
    so_cost_free(&e->cm);
    so_model_free(t->m);
    so_ruleset_free(rs);
}

/* Equality saturation with rule 2 of the dev rules (two matmuls sharing X = one matmul of the
   concatenated weights, split: two roots, two outputs) and rule 1 (distribution), both ways:
   X[4,8]; outputs relu(X.W0 + X.W1) and X.V. */
static void test_eqsat_search(void **state)
{
    (void)state;
    so_ruleset rs = {0};
    so_rule rules[4];
    int n = dev_rules_both_ways(&rs, rules);
    tb t;
    so_shape xs = shape2(4, 8);
    tb_new(&t, 1, &xs, 2);
    int32_t a = tb_op(&t, SO_OP_MATMUL, 0, tb_weight(&t, 2, 8, 16), 0), b = tb_op(&t, SO_OP_MATMUL, 0, tb_weight(&t, 2, 8, 16), 0);
    t.g->outputs[0] = (so_edge){tb_op(&t, SO_OP_RELU, tb_op(&t, SO_OP_ADD, a, b, 0), -1, 0), 0};
    t.g->outputs[1] = (so_edge){tb_op(&t, SO_OP_MATMUL, 0, tb_weight(&t, 2, 8, 5), 0), 0};
    eq_setup e;
    es_begin(&e, &t);
    so_search_opts o = {.kind = SO_SEARCH_EQSAT, .time_limit = 5};
    so_search_result res;
    assert_int_equal(so_search_run(e.start, rules, n, &e.cm, &e.fc, &o, &res), SO_OK);
    /* the multi-root rule matched (pairs of matmuls on X) and was applied */
    assert_true(res.matches >= 2);
    assert_true(res.eqsat.applied >= 2);
    assert_true(res.eqsat.enodes > 10);
    assert_int_equal(res.eqsat.stop, 0); /* this small e-graph saturates */
    /* distribution (X.W0 + X.W1 = X.(W0+W1), the sum folded) is found: cheaper, same values */
    assert_true(res.cost_after < 0.8 * res.cost_before);
    assert_true(res.n_path >= 1);
    assert_true(max_diff(t.g, res.best) < 1e-4);
    double c = so_cost_graph(&e.cm, res.best);
    assert_true(c > res.cost_after * (1 - 1e-9) && c < res.cost_after * (1 + 1e-9));
    so_search_result_free(&res);
    es_free(&e, &t, &rs);
}

/* eqsat on e's start graph at the default limits, twice: the graph has n_mm matmuls, is cheaper
   than the start, computes t's values, and the second run is the same as the first (cost, e-nodes,
   applications). Returns the first run's applications; *stop its stop reason. */
static int64_t eq_run_twice(eq_setup *e, tb *t, const so_rule *rules, int n, int n_mm, int *stop)
{
    so_search_opts o = {.kind = SO_SEARCH_EQSAT, .time_limit = 60};
    so_search_result res, res2;
    assert_int_equal(so_eqsat_run(e->start, rules, n, &e->cm, &e->fc, &o, NULL, &res), SO_OK);
    int got = 0;
    for (int32_t i = 0; i < res.best->n_nodes; i++) got += res.best->nodes[i].op == SO_OP_MATMUL;
    assert_int_equal(got, n_mm);
    assert_true(res.cost_after < res.cost_before);
    assert_true(max_diff(t->g, res.best) < 1e-4);
    assert_int_equal(so_eqsat_run(e->start, rules, n, &e->cm, &e->fc, &o, NULL, &res2), SO_OK);
    assert_true(res2.cost_after == res.cost_after);
    assert_int_equal(res2.eqsat.enodes, res.eqsat.enodes);
    assert_int_equal(res2.eqsat.applied, res.eqsat.applied);
    int64_t applied = res.eqsat.applied;
    *stop = res.eqsat.stop;
    so_search_result_free(&res);
    so_search_result_free(&res2);
    return applied;
}

/* Merge chains: five matmuls of one input X[1,8] by five weights (outputs X.W0, X.W1, X.W2 and
   X.W3 * X.W4), rule 2 of the dev rules both ways. The merge rule's roots are symmetric: matches
   are kept in one canonical order, every pair of leaves, a chain extended by the next leaf only
   (search/eqsat.c chain_order, contiguous_runs), so the e-graph holds 10 pairs and 10 extensions
   rather than every subset in every order, and the rule runs every iteration: the 5-way merge
   (four iterations of it) is reached and extracted (one matmul; the splits are zero-copy). The
   run is deterministic: twice the same, and under a small work limit it stops with "work-limit",
   the same way twice. */
static void test_eqsat_merge_chain(void **state)
{
    (void)state;
    so_ruleset rs = {0};
    so_rule rules[4];
    int n = dev_rules_both_ways(&rs, rules);
    tb t;
    so_shape xs = shape2(1, 8);
    tb_new(&t, 1, &xs, 4);
    int32_t mm[5];
    for (int i = 0; i < 5; i++) mm[i] = tb_op(&t, SO_OP_MATMUL, 0, tb_weight(&t, 2, 8, 16), 0);
    for (int i = 0; i < 3; i++) t.g->outputs[i] = (so_edge){mm[i], 0};
    t.g->outputs[3] = (so_edge){tb_op(&t, SO_OP_MUL, mm[3], mm[4], 0), 0};
    eq_setup e;
    es_begin(&e, &t);
    int stop = -1;
    /* the merges: 10 pairs + 10 extensions (the 26 subsets of >= 2 in every order would be far more) */
    assert_true(eq_run_twice(&e, &t, rules, n, 1, &stop) <= 20);
    assert_int_equal(stop, 0); /* saturated */
    so_search_opts o = {.kind = SO_SEARCH_EQSAT, .time_limit = 60};
    so_search_result res, res2;
    /* a small work limit: stops early, deterministically */
    so_eqsat_opts eo = {.work_limit = 40};
    assert_int_equal(so_eqsat_run(e.start, rules, n, &e.cm, &e.fc, &o, &eo, &res), SO_OK);
    assert_int_equal(so_eqsat_run(e.start, rules, n, &e.cm, &e.fc, &o, &eo, &res2), SO_OK);
    assert_int_equal(res.eqsat.stop, 4);
    assert_int_equal(res2.eqsat.stop, 4);
    assert_int_equal(res2.eqsat.enodes, res.eqsat.enodes);
    assert_true(res2.cost_after == res.cost_after);
    so_search_result_free(&res);
    so_search_result_free(&res2);
    es_free(&e, &t, &rs);
}

/* Merges of merges (session 10): X0, X1 [1,8] by W0, W1 [8,16], the four products as outputs; rule 2
   of the dev rules (X.A, X.B = split(X.concat(A,B))) and a row merge (A.W, C.W =
   split(concat(A,C).W), as rule 473 reversed), both ways. The row merges of one weight (X0.W0 with
   X1.W0) are chains of the row rule; with the merges of merges (search/eqsat.c leaf_value) the
   complete ones are leaves of the column rule, which merges concat(X0,X1).W0 with
   concat(X0,X1).W1: one matmul of everything. Before, a chain was a leaf for no rule and the best
   graph had two matmuls. Also: the e-matching order (next_node) and the backoff scheduler keep the
   run deterministic (twice the same). */
static void test_eqsat_merge_of_merges(void **state)
{
    (void)state;
    static const char *rowtext = "rule 3\n"
                                 "  input A [m1,k]\n"
                                 "  input C [m2,k]\n"
                                 "  input W [k,n]\n"
                                 "  src a = matmul(A, W) act=none\n"
                                 "  src b = matmul(C, W) act=none\n"
                                 "  dst x = concat(A, C) axis=0\n"
                                 "  dst y = matmul(x, W) act=none\n"
                                 "  dst p = split(y) axis=0 sizes=m1,m2\n"
                                 "  map a -> p.0\n"
                                 "  map b -> p.1\n"
                                 "  proof unverified\n"
                                 "end\n";
    so_ruleset rs = {0}, rs2 = {0};
    so_rule rules[6];
    int n = dev_rules_both_ways(&rs, rules);
    assert_int_equal(so_rules_parse("r.rules", rowtext, strlen(rowtext), &rs2), SO_OK);
    rules[n++] = rs2.rules[0];
    so_rule_reverse(&rs2.rules[0], &rules[n++]);
    tb t;
    so_shape xs[2] = {shape2(1, 8), shape2(1, 8)};
    tb_new(&t, 2, xs, 4);
    int32_t w0 = tb_weight(&t, 2, 8, 16), w1 = tb_weight(&t, 2, 8, 16);
    t.g->outputs[0] = (so_edge){tb_op(&t, SO_OP_MATMUL, 0, w0, 0), 0};
    t.g->outputs[1] = (so_edge){tb_op(&t, SO_OP_MATMUL, 1, w0, 0), 0};
    t.g->outputs[2] = (so_edge){tb_op(&t, SO_OP_MATMUL, 0, w1, 0), 0};
    t.g->outputs[3] = (so_edge){tb_op(&t, SO_OP_MATMUL, 1, w1, 0), 0};
    eq_setup e;
    es_begin(&e, &t);
    int stop = -1;
    eq_run_twice(&e, &t, rules, n, 1, &stop); /* one matmul of everything */
    so_ruleset_free(&rs2);
    es_free(&e, &t, &rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hashcons_and_congruence),
        cmocka_unit_test(test_multi_output),
        cmocka_unit_test(test_cycle_filtering),
        cmocka_unit_test(test_cycle_drops_newest),
        cmocka_unit_test(test_ilp_extraction),
        cmocka_unit_test(test_ilp_work_limits),
        cmocka_unit_test(test_eqsat_search),
        cmocka_unit_test(test_eqsat_merge_chain),
        cmocka_unit_test(test_eqsat_merge_of_merges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
