/* test_cost.c - cost models: flops values, configuration keys, graph sums, the measured-cost disk
   cache (round trip, and a cache from another machine/build is ignored). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../search/cost.h"

/* X[4,8] . W[8,16] -> relu; second graph with W[8,32]. */
static so_model *build(int64_t n)
{
    so_model *m = so_model_new("c");
    int64_t xd[2] = {4, 8}, wd[2] = {8, n};
    m->n_inputs = 1;
    m->inputs = so_arena_alloc(&m->arena, sizeof(so_value_info));
    m->inputs[0].name = "x";
    m->inputs[0].shape = so_shape_make(2, xd);
    m->n_outputs = 1;
    m->outputs = so_arena_alloc(&m->arena, sizeof(so_value_info));
    so_graph *g = so_graph_new(m);
    m->graph = g;
    so_graph_add(g, SO_OP_INPUT, NULL, 0, 1, NULL, 0, NULL);
    so_shape ws = so_shape_make(2, wd);
    float *d = calloc((size_t)so_shape_numel(&ws), sizeof(float));
    int32_t w = so_graph_add(g, SO_OP_WEIGHT, NULL, 0, 1, NULL, so_model_add_weight(m, NULL, ws, d), NULL);
    so_edge in[2] = {{0, 0}, {w, 0}};
    int32_t mm = so_graph_add(g, SO_OP_MATMUL, in, 2, 1, NULL, -1, NULL);
    so_edge rin[1] = {{mm, 0}};
    int32_t r = so_graph_add(g, SO_OP_RELU, rin, 1, 1, NULL, -1, NULL);
    g->outputs[0] = (so_edge){r, 0};
    assert_int_equal(so_graph_infer_all(g), SO_OK);
    return m;
}

static void test_flops_values(void **state)
{
    (void)state;
    so_model *m = build(16);
    so_graph *g = m->graph;
    /* matmul: 2*4*8*16 flops, bytes 4*(32 + 128 + 64) */
    double want_mm = 1024 / 1e7 + 896 / 5e6 + 1e-4;
    assert_float_equal(so_cost_flops_node(g, 2), want_mm, 1e-12);
    /* relu: ~64 flops, bytes 4*(64+64) */
    double want_relu = 64 / 1e7 + 512 / 5e6 + 1e-4;
    assert_float_equal(so_cost_flops_node(g, 3), want_relu, 1e-12);
    assert_float_equal(so_cost_flops_node(g, 0), 0, 0);
    assert_float_equal(so_cost_flops_node(g, 1), 0, 0);
    so_cost_model cm;
    assert_int_equal(so_cost_init(&cm, SO_COST_FLOPS, 1, NULL), SO_OK);
    /* the executor fuses the relu into the matmul's epilogue: it costs nothing */
    assert_float_equal(so_cost_graph(&cm, g), want_mm, 1e-12);
    assert_float_equal(so_cost_graph_unfused(&cm, g), want_mm + want_relu, 1e-12);
    so_cost_free(&cm);
    so_model_free(m);
}

static void test_keys(void **state)
{
    (void)state;
    so_model *a = build(16), *b = build(16), *c = build(32);
    /* same configuration in different models: same key; other shapes or threads: different */
    assert_true(so_cost_node_key(a->graph, 2, 1) == so_cost_node_key(b->graph, 2, 1));
    assert_true(so_cost_node_key(a->graph, 2, 1) != so_cost_node_key(c->graph, 2, 1));
    assert_true(so_cost_node_key(a->graph, 2, 1) != so_cost_node_key(a->graph, 2, 2));
    assert_true(so_cost_node_key(a->graph, 2, 1) != so_cost_node_key(a->graph, 3, 1));
    /* a weight input and an activation input of the same shape differ */
    so_graph *g = so_graph_clone(a->graph);
    uint64_t before = so_cost_node_key(g, 2, 1);
    g->nodes[1].op = SO_OP_INPUT; /* pretend W is an activation (only the key is computed) */
    assert_true(so_cost_node_key(g, 2, 1) != before);
    so_graph_free(g);
    so_model_free(a);
    so_model_free(b);
    so_model_free(c);
}

static void test_measured_cache(void **state)
{
    (void)state;
    char dir[] = "/tmp/so_cost_test_XXXXXX";
    assert_non_null(mkdtemp(dir));
    so_model *m = build(16);
    so_cost_model cm;
    assert_int_equal(so_cost_init(&cm, SO_COST_MEASURED, 1, dir), SO_OK);
    assert_int_equal(cm.loaded, 0);
    double c1 = so_cost_node(&cm, m->graph, 2);
    assert_true(c1 >= 0);
    assert_int_equal(cm.measured, 1);
    double c1b = so_cost_node(&cm, m->graph, 2); /* cached in memory */
    assert_true(c1b == c1);
    assert_int_equal(cm.measured, 1);
    assert_true(so_cost_node(&cm, m->graph, 1) == 0); /* weights cost nothing, never timed */
    assert_int_equal(cm.measured, 1);
    assert_int_equal(so_cost_save(&cm), SO_OK);
    char path[512];
    snprintf(path, sizeof path, "%s", cm.path);
    so_cost_free(&cm);

    /* a new process-like instance reads the cache and does not time again */
    assert_int_equal(so_cost_init(&cm, SO_COST_MEASURED, 1, dir), SO_OK);
    assert_int_equal(cm.loaded, 1);
    double c2 = so_cost_node(&cm, m->graph, 2);
    assert_int_equal(cm.measured, 0);
    assert_float_equal(c2, c1, 1e-9 * (c1 + 1));
    so_cost_free(&cm);

    /* a file whose header names another machine/build is ignored */
    FILE *f = fopen(path, "r+");
    assert_non_null(f);
    fputs("# superopt cost cache cpu=other", f);
    fclose(f);
    assert_int_equal(so_cost_init(&cm, SO_COST_MEASURED, 1, dir), SO_OK);
    assert_int_equal(cm.loaded, 0);
    so_cost_free(&cm);
    unlink(path);
    rmdir(dir);
    so_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flops_values),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_measured_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
