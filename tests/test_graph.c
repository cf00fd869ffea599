/* test_graph.c - graph IR ordering: so_graph_toposort (breadth-first) and
   so_graph_toposort_track's keep_order (existing order kept, appended nodes placed before
   their first user) with a per-node array permuted along, against a direct reading of its
   definition on random graphs; cycles; so_graph_dce_track. */
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

/* keep_order on random graphs (random node numbering, 1-3 sources, adds and relus reading earlier
   nodes of a hidden order, some appended at the end as a rewrite does) against its definition read
   directly: a node's key is the smallest index among itself and its transitive users; the ready
   node of the smallest (key, index) goes next (a quadratic scan here; so_graph_toposort_track keeps
   per-key lists, session 15). origin is permuted along. */
static void test_keep_order_definition(void **state)
{
    (void)state;
    uint64_t rng = 12345;
    for (int it = 0; it < 3000; it++) {
        so_model *m = so_model_new("rand");
        m->n_outputs = 1;
        m->outputs = so_arena_alloc(&m->arena, sizeof(so_value_info));
        m->graph = so_graph_new(m);
        so_graph *g = m->graph;
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
        int n = 2 + (int)((rng >> 33) % 60), n_src = 1 + (int)((rng >> 20) % 3);
        int32_t rank_of[64], at[64]; /* at[r]: the node of rank r (a topological order) */
        for (int i = 0; i < n; i++) at[i] = i;
        int appended = (int)((rng >> 40) % 4); /* the last ranks keep the last indices: appended nodes */
        for (int i = n - 1 - appended; i > 0; i--) {
            rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
            if ((rng >> 60) < 5) { /* mostly sorted, as the search's graphs are */
                int j = (int)((rng >> 33) % (uint64_t)(i + 1)), t = at[i];
                at[i] = at[j];
                at[j] = t;
            }
        }
        for (int r = 0; r < n; r++) rank_of[at[r]] = r;
        int32_t ins[64][2], n_in[64];
        for (int i = 0; i < n; i++) {
            int r = rank_of[i];
            rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
            n_in[i] = r < n_src ? 0 : 1 + (int)((rng >> 50) & 1);
            for (int k = 0; k < n_in[i]; k++) ins[i][k] = at[(int)((rng >> (20 + 7 * k)) % (uint64_t)r)];
        }
        for (int i = 0; i < n; i++) {
            so_edge e[2] = {{ins[i][0], 0}, {ins[i][1], 0}};
            so_graph_add(g, n_in[i] == 0 ? SO_OP_INPUT : n_in[i] == 1 ? SO_OP_RELU : SO_OP_ADD, n_in[i] ? e : NULL, n_in[i], 1, NULL, -1, NULL);
        }
        g->outputs[0] = (so_edge){at[n - 1], 0};
        /* the definition */
        int32_t key[64], want[64], placed[64] = {0};
        for (int i = 0; i < n; i++) key[i] = i;
        for (int r = n - 1; r >= 0; r--) /* users come later in rank */
            for (int j = 0; j < n; j++)
                for (int k = 0; k < n_in[j]; k++)
                    if (ins[j][k] == at[r] && key[j] < key[at[r]]) key[at[r]] = key[j];
        for (int p = 0; p < n; p++) {
            int best = -1;
            for (int i = 0; i < n; i++) {
                int ready = !placed[i];
                for (int k = 0; k < n_in[i] && ready; k++) ready = placed[ins[i][k]];
                if (ready && (best < 0 || key[i] < key[best] || (key[i] == key[best] && i < best))) best = i;
            }
            placed[best] = 1;
            want[p] = best;
        }
        int32_t origin[64];
        for (int i = 0; i < n; i++) origin[i] = 100 + i;
        assert_int_equal(so_graph_toposort_track(g, 1, origin), SO_OK);
        for (int p = 0; p < n; p++) assert_int_equal(origin[p], 100 + want[p]);
        so_model_free(m);
    }
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
        cmocka_unit_test(test_keep_order_definition),
        cmocka_unit_test(test_cycle),
        cmocka_unit_test(test_dce_track),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
