/* test_graph.c - graph IR ordering: so_graph_toposort (breadth-first) and
   so_graph_toposort_track's keep_order (existing order kept, appended nodes placed before
   their first user) with a per-node array permuted along; cycles; so_graph_dce_track. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "graph.h"

/* A model with one input (node 0) and two outputs; unary ops chained as `ins` says:
   node i+1 reads node ins[i]. */
static so_model *chain(const int32_t *ins, int n, int32_t out0, int32_t out1)
{
    static const so_op ops[] = {SO_OP_RELU, SO_OP_TANH, SO_OP_SIGMOID, SO_OP_RELU, SO_OP_TANH};
    so_model *m = so_model_new("order");
    int64_t d[1] = {4};
    m->n_inputs = 1;
    m->inputs = so_arena_alloc(&m->arena, sizeof(so_value_info));
    m->inputs[0].name = "x";
    m->inputs[0].shape = so_shape_make(1, d);
    m->n_outputs = 2;
    m->outputs = so_arena_alloc(&m->arena, 2 * sizeof(so_value_info));
    m->graph = so_graph_new(m);
    so_graph_add(m->graph, SO_OP_INPUT, NULL, 0, 1, NULL, 0, NULL);
    for (int i = 0; i < n; i++) {
        so_edge in[1] = {{ins[i], 0}};
        so_graph_add(m->graph, ops[i], in, 1, 1, NULL, -1, NULL);
    }
    m->graph->outputs[0] = (so_edge){out0, 0};
    m->graph->outputs[1] = (so_edge){out1, 0};
    return m;
}

/* the nodes' ops, in order */
static void expect_ops(const so_graph *g, const so_op *want, int n)
{
    assert_int_equal(g->n_nodes, n);
    for (int i = 0; i < n; i++) assert_int_equal(g->nodes[i].op, want[i]);
}

/* 0 x; 1 relu(3); 2 tanh(x); 3 sigmoid(x). Breadth-first: x, tanh, sigmoid, relu.
   keep_order: relu's producer goes just before it: x, sigmoid, relu, tanh. */
static void test_orders(void **state)
{
    (void)state;
    const int32_t ins[3] = {3, 0, 0};
    so_model *m = chain(ins, 3, 1, 2);
    assert_int_equal(so_graph_toposort(m->graph), SO_OK);
    expect_ops(m->graph, (const so_op[]){SO_OP_INPUT, SO_OP_TANH, SO_OP_SIGMOID, SO_OP_RELU}, 4);
    assert_int_equal(m->graph->nodes[3].in[0].node, 2); /* relu reads sigmoid, renumbered */
    assert_int_equal(m->graph->outputs[0].node, 3);
    assert_int_equal(m->graph->outputs[1].node, 1);
    so_model_free(m);

    m = chain(ins, 3, 1, 2);
    int32_t origin[4] = {10, 11, 12, 13};
    assert_int_equal(so_graph_toposort_track(m->graph, 1, origin), SO_OK);
    expect_ops(m->graph, (const so_op[]){SO_OP_INPUT, SO_OP_SIGMOID, SO_OP_RELU, SO_OP_TANH}, 4);
    assert_int_equal(origin[0], 10);
    assert_int_equal(origin[1], 13);
    assert_int_equal(origin[2], 11);
    assert_int_equal(origin[3], 12);
    assert_int_equal(m->graph->nodes[2].in[0].node, 1);
    assert_int_equal(m->graph->outputs[0].node, 2);
    assert_int_equal(m->graph->outputs[1].node, 3);
    so_model_free(m);
}

/* An already sorted graph: keep_order leaves it as it is; breadth-first reorders it. */
static void test_sorted_kept(void **state)
{
    (void)state;
    const int32_t ins[3] = {0, 1, 0}; /* 1 relu(x), 2 tanh(1), 3 sigmoid(x) */
    so_model *m = chain(ins, 3, 2, 3);
    int32_t origin[4] = {0, 1, 2, 3};
    assert_int_equal(so_graph_toposort_track(m->graph, 1, origin), SO_OK);
    expect_ops(m->graph, (const so_op[]){SO_OP_INPUT, SO_OP_RELU, SO_OP_TANH, SO_OP_SIGMOID}, 4);
    for (int i = 0; i < 4; i++) assert_int_equal(origin[i], i);
    assert_int_equal(so_graph_toposort(m->graph), SO_OK);
    expect_ops(m->graph, (const so_op[]){SO_OP_INPUT, SO_OP_RELU, SO_OP_SIGMOID, SO_OP_TANH}, 4);
    so_model_free(m);
}

static void test_cycle(void **state)
{
    (void)state;
    const int32_t ins[3] = {2, 1, 0}; /* relu(tanh), tanh(relu) */
    for (int keep = 0; keep < 2; keep++) {
        so_model *m = chain(ins, 3, 1, 3);
        assert_int_equal(so_graph_toposort_track(m->graph, keep, NULL), SO_ERR);
        assert_non_null(strstr(so_error(), "graph has a cycle through"));
        so_model_free(m);
    }
}

/* dce_track drops the node no output reaches and compacts origin along. */
static void test_dce_track(void **state)
{
    (void)state;
    const int32_t ins[4] = {0, 0, 2, 1}; /* 1 relu(x), 2 tanh(x) dead, 3 sigmoid(2) dead, 4 relu(1) */
    so_model *m = chain(ins, 4, 1, 4);
    int32_t origin[5] = {20, 21, 22, 23, 24};
    assert_int_equal(so_graph_dce_track(m->graph, origin), 2);
    expect_ops(m->graph, (const so_op[]){SO_OP_INPUT, SO_OP_RELU, SO_OP_RELU}, 3);
    assert_int_equal(origin[0], 20);
    assert_int_equal(origin[1], 21);
    assert_int_equal(origin[2], 24);
    assert_int_equal(m->graph->nodes[2].in[0].node, 1);
    assert_int_equal(m->graph->outputs[1].node, 2);
    so_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_orders),
        cmocka_unit_test(test_sorted_kept),
        cmocka_unit_test(test_cycle),
        cmocka_unit_test(test_dce_track),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
