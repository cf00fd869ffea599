/* test_util.h - helpers shared by unit tests: a small graph builder, the reference-kernel
   comparison of two graphs, and the dev rules that test_match and test_search both use.
   Static inline: each test binary is one tests/test_*.c linked alone with the library.
   Include after <cmocka.h>. */
#ifndef SO_TEST_UTIL_H
#define SO_TEST_UTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/ref.h"
#include "common.h"
#include "graph.h"

/* Rules 1 and 2 of the dev rule texts: distribute matmul over add, merge two matmuls sharing X
   into a matmul of the concatenated weights and a split. Each test appends its own rule 3. */
#define TEST_RULES_1_2                             \
    "rule 1\n"                                     \
    "  input X [m,k]\n"                            \
    "  input A [k,n]\n"                            \
    "  input B [k,n]\n"                            \
    "  src a = matmul(X, A) act=none\n"            \
    "  src b = matmul(X, B) act=none\n"            \
    "  src c = add(a, b) act=none\n"               \
    "  dst s = add(A, B) act=none\n"               \
    "  dst y = matmul(X, s) act=none\n"            \
    "  map c -> y\n"                               \
    "  proof unverified\n"                         \
    "end\n"                                        \
    "\n"                                           \
    "rule 2\n"                                     \
    "  input X [m,k]\n"                            \
    "  input A [k,n1]\n"                           \
    "  input B [k,n2]\n"                           \
    "  src a = matmul(X, A) act=none\n"            \
    "  src b = matmul(X, B) act=none\n"            \
    "  dst w = concat(A, B) axis=1\n"              \
    "  dst y = matmul(X, w) act=none\n"            \
    "  dst p = split(y) axis=1 sizes=n1,n2\n"      \
    "  map a -> p.0\n"                             \
    "  map b -> p.1\n"                             \
    "  proof unverified\n"                         \
    "end\n"                                        \
    "\n"

/* Rule 3 of the dev rule texts: matmul then relu fuses into matmul act=relu; WHERE is its precondition line ("" for none). */
#define TEST_RULE_3(WHERE)                         \
    "rule 3\n"                                     \
    "  input X [m,k]\n"                            \
    "  input A [k,n]\n"                            \
    "  src a = matmul(X, A) act=none\n"            \
    "  src r = relu(a)\n"                          \
    "  dst y = matmul(X, A) act=relu\n"            \
    "  map r -> y\n"                               \
    WHERE                                          \
    "  proof unverified\n"                         \
    "end\n"

/* ---- a model fixture: M with the empty graph G, fresh for each test (cmocka setup / teardown); a test
   file that wants the globals M and G defines TEST_MODEL_FIXTURE before including this header ---- */
#ifdef TEST_MODEL_FIXTURE
static so_model *M;
static so_graph *G;

static inline int test_model_setup(void **state)
{
    (void)state;
    M = so_model_new("test");
    G = so_graph_new(M);
    M->graph = G;
    return 0;
}

static inline int test_model_teardown(void **state)
{
    (void)state;
    so_model_free(M);
    M = NULL;
    G = NULL;
    return 0;
}
#endif

/* ---- tiny graph builder: a model "test" whose graph is built node by node, shapes inferred ---- */
typedef struct tb {
    so_model *m;
    so_graph *g;
    uint64_t seed; /* weights are so_rng_fill'd from it */
} tb;

static inline so_shape shape2(int64_t a, int64_t b)
{
    int64_t d[2] = {a, b};
    return so_shape_make(2, d);
}

/* Graph inputs are nodes 0 .. n_inputs-1 (named "in"); the caller sets the n_outputs
   t->g->outputs[]. */
static inline void tb_new(tb *t, int n_inputs, const so_shape *in_shapes, int n_outputs)
{
    t->m = so_model_new("test");
    t->seed = 7;
    t->m->n_inputs = n_inputs;
    t->m->inputs = so_arena_alloc(&t->m->arena, sizeof(so_value_info) * (size_t)(n_inputs + 1));
    for (int i = 0; i < n_inputs; i++) {
        t->m->inputs[i].name = "in";
        t->m->inputs[i].shape = in_shapes[i];
    }
    t->m->n_outputs = n_outputs;
    t->m->outputs = so_arena_alloc(&t->m->arena, sizeof(so_value_info) * (size_t)(n_outputs + 1));
    t->g = so_graph_new(t->m);
    t->m->graph = t->g;
    for (int i = 0; i < n_inputs; i++) {
        int32_t n = so_graph_add(t->g, SO_OP_INPUT, NULL, 0, 1, NULL, i, NULL);
        assert_int_equal(so_graph_infer(t->g, n), SO_OK);
    }
}

/* ---- the builder node by node (test_exec, test_fast): inputs added one at a time ---- */
#define TB_MAX_IO 8 /* most graph inputs / outputs of a tb_begin model */

/* A shape from its dims: shp(2, 3, 4) is [3,4]. */
static inline so_shape shp(int rank, ...)
{
    va_list ap;
    va_start(ap, rank);
    int64_t d[SO_MAX_RANK];
    for (int k = 0; k < rank; k++) d[k] = va_arg(ap, int);
    va_end(ap);
    return so_shape_make(rank, d);
}

/* An empty model with room for TB_MAX_IO inputs and outputs (n_outputs set; the caller fills
   t->g->outputs[]); the random weights' state from seed. */
static inline void tb_begin(tb *t, int n_outputs, uint64_t seed)
{
    t->m = so_model_new("test");
    t->m->inputs = so_arena_alloc(&t->m->arena, sizeof(so_value_info) * TB_MAX_IO);
    t->m->n_outputs = n_outputs;
    t->m->outputs = so_arena_alloc(&t->m->arena, sizeof(so_value_info) * TB_MAX_IO);
    t->g = so_graph_new(t->m);
    t->m->graph = t->g;
    t->seed = seed * 2654435761u + 12345;
}

/* The next graph input ("x"), shape s. */
static inline int32_t tb_input(tb *t, so_shape s)
{
    int i = t->m->n_inputs++;
    assert_true(i < TB_MAX_IO);
    t->m->inputs[i].name = "x";
    t->m->inputs[i].shape = s;
    int32_t n = so_graph_add(t->g, SO_OP_INPUT, NULL, 0, 1, NULL, i, NULL);
    assert_int_equal(so_graph_infer(t->g, n), SO_OK);
    return n;
}

/* A weight of shape s holding data (malloc'd; the model takes it). */
static inline int32_t tb_weight_data(tb *t, so_shape s, float *data)
{
    int32_t w = so_model_add_weight(t->m, "w", s, data);
    int32_t n = so_graph_add(t->g, SO_OP_WEIGHT, NULL, 0, 1, NULL, w, NULL);
    assert_int_equal(so_graph_infer(t->g, n), SO_OK);
    return n;
}

/* op on output 0 of each of ins[0..n_in), n_out outputs, attributes a (or none), shapes inferred (a misfit fails the test). */
static inline int32_t tb_node_named(tb *t, so_op op, const int32_t *ins, int n_in, int n_out, const so_attr *a, const char *name)
{
    so_edge e[SO_MAX_IN];
    for (int k = 0; k < n_in; k++) e[k] = (so_edge){ins[k], 0};
    int32_t n = so_graph_add(t->g, op, e, n_in, n_out, a ? so_model_attr(t->m, a) : NULL, -1, name);
    if (so_graph_infer(t->g, n) != SO_OK) fail_msg("infer: %s", so_error());
    return n;
}

/* A random weight of rank r (1: [d0], 2: [d0, d1]). */
static inline int32_t tb_weight(tb *t, int r, int64_t d0, int64_t d1)
{
    int64_t dims[2] = {d0, d1};
    so_shape s = so_shape_make(r, dims);
    int64_t n = so_shape_numel(&s);
    float *data = malloc(sizeof(float) * (size_t)n);
    so_rng_fill(&t->seed, data, (size_t)n);
    int32_t w = so_model_add_weight(t->m, "w", s, data);
    int32_t node = so_graph_add(t->g, SO_OP_WEIGHT, NULL, 0, 1, NULL, w, NULL);
    assert_int_equal(so_graph_infer(t->g, node), SO_OK);
    return node;
}

/* op(a) or op(a, b) (b < 0: unary) with activation act. */
static inline int32_t tb_op(tb *t, so_op op, int32_t a, int32_t b, int act)
{
    so_edge in[2] = {{a, 0}, {b, 0}};
    so_attr at;
    memset(&at, 0, sizeof at);
    at.act = act;
    int32_t n = so_graph_add(t->g, op, in, b >= 0 ? 2 : 1, 1, so_model_attr(t->m, &at), -1, NULL);
    assert_int_equal(so_graph_infer(t->g, n), SO_OK);
    return n;
}

/* Runs both graphs (of the same model, at most 4 inputs and outputs) with the reference
   kernels on the same seeded inputs; the largest absolute output difference. */
static inline double max_diff(const so_graph *a, const so_graph *b)
{
    so_model *m = a->model;
    float *ins[4], *oa[4], *ob[4];
    uint64_t seed = 3;
    assert_true(m->n_inputs <= 4 && m->n_outputs <= 4);
    for (int i = 0; i < m->n_inputs; i++) {
        size_t n = (size_t)so_shape_numel(&m->inputs[i].shape);
        ins[i] = malloc(n * sizeof(float));
        so_rng_fill(&seed, ins[i], n);
    }
    double d = 0;
    for (int o = 0; o < m->n_outputs; o++) {
        const so_shape *s = &a->nodes[a->outputs[o].node].out[a->outputs[o].slot];
        size_t n = (size_t)so_shape_numel(s);
        oa[o] = calloc(n, sizeof(float));
        ob[o] = calloc(n, sizeof(float));
    }
    assert_int_equal(so_ref_run(a, (const float *const *)ins, oa), SO_OK);
    assert_int_equal(so_ref_run(b, (const float *const *)ins, ob), SO_OK);
    for (int o = 0; o < m->n_outputs; o++) {
        const so_shape *s = &a->nodes[a->outputs[o].node].out[a->outputs[o].slot];
        size_t n = (size_t)so_shape_numel(s);
        for (size_t j = 0; j < n; j++) {
            double e = oa[o][j] - ob[o][j];
            if (e < 0) e = -e;
            if (e > d) d = e;
        }
        free(oa[o]);
        free(ob[o]);
    }
    for (int i = 0; i < m->n_inputs; i++) free(ins[i]);
    return d;
}

#endif
