/* test_align.c - weight data is SO_WEIGHT_ALIGN-aligned at every site that makes it: so_weight_alloc itself, ONNX import (initializers, import-time folded constants), search folding (so_canonicalize, fold stand-ins) and the layout passes (BN folds, blocked weights). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../search/fold.h"
#include "../search/layout.h"
#include "onnx_io.h"

static int aligned(const void *p) { return ((uintptr_t)p % SO_WEIGHT_ALIGN) == 0; }

/* Every weight of m with data has an aligned pointer; returns how many have data. */
static int32_t check_weights(const so_model *m)
{
    int32_t with_data = 0;
    for (int32_t i = 0; i < m->n_weights; i++) {
        if (!m->weights[i].data) continue;
        with_data++;
        if (!aligned(m->weights[i].data)) fail_msg("weight %d (%s) at %p is not %d-aligned", (int)i,
                                                   m->weights[i].name ? m->weights[i].name : "(folded)",
                                                   m->weights[i].data, SO_WEIGHT_ALIGN);
    }
    return with_data;
}

static void test_alloc(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 3, 63, 64, 65, 4096 + 4, 1 << 20, (1 << 20) + 12};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        unsigned char *p = so_weight_alloc(sizes[k], 1), *q = so_weight_xalloc(sizes[k], 0);
        assert_non_null(p);
        assert_non_null(q);
        assert_true(aligned(p) && aligned(q));
        for (size_t j = 0; j < sizes[k]; j++) assert_int_equal(p[j], 0);
        memset(q, 0xab, sizes[k]); /* the whole requested size is writable (valgrind/ASan check it) */
        free(p);
        free(q);
    }
    assert_null(so_weight_alloc(SIZE_MAX - 8, 0)); /* rounding up would overflow: a failure, not a small block */
}

/* Import: initializers (onx_tensor_from_proto), constants made while importing (onx_ct_new, folded nodes). */
static void test_import(void **state)
{
    (void)state;
    static const char *const models[] = {"data/nasrnn.onnx", "data/lstm2.onnx", "data/squeezenet.onnx", "data/bert2.onnx"};
    for (size_t k = 0; k < sizeof models / sizeof *models; k++) {
        so_model *m = NULL;
        assert_int_equal(so_onnx_load(models[k], &m), SO_OK);
        assert_true(check_weights(m) >= 10); /* these models have many initializers: the check is not vacuous */
        so_model_free(m);
    }
}

/* Search-time folding: so_canonicalize folds weight-only chains through the reference evaluator; stand-ins. */
static void test_fold(void **state)
{
    (void)state;
    static const char *const models[] = {"data/nasrnn.onnx", "data/bert2.onnx"};
    for (size_t k = 0; k < sizeof models / sizeof *models; k++) {
        so_model *m = NULL;
        assert_int_equal(so_onnx_load(models[k], &m), SO_OK);
        so_fold_ctx fc;
        so_fold_init(&fc, m);
        so_graph *g = so_graph_clone(m->graph);
        /* a weight-only node to fold: a transpose of the first 2-D float weight, as the search's rules make */
        int32_t wn = -1;
        for (int32_t i = 0; i < g->n_nodes && wn < 0; i++)
            if (g->nodes[i].op == SO_OP_WEIGHT && g->nodes[i].out[0].rank == 2 && g->nodes[i].out[0].dtype == SO_F32) wn = i;
        assert_true(wn >= 0);
        so_attr a;
        memset(&a, 0, sizeof a);
        a.ints[0] = 1;
        a.ints[1] = 0;
        a.n_ints = 2;
        so_edge in = {wn, 0};
        int32_t t = so_graph_add(g, SO_OP_TRANSPOSE, &in, 1, 1, so_model_attr(m, &a), -1, NULL);
        assert_true(t >= 0);
        assert_int_equal(so_graph_infer(g, t), SO_OK);
        const int32_t nw = m->n_weights;
        int32_t wid = -1;
        assert_int_equal(so_fold_node(&fc, g, t, &wid), SO_OK);
        assert_true(wid >= nw); /* a new weight (the transposed one), made by the reference evaluator */
        so_canon_stats cs;
        assert_int_equal(so_canonicalize(&fc, g, &cs), SO_OK);
        const int64_t d[3] = {3, 5, 7};
        so_shape sh = so_shape_make(3, d);
        assert_true(so_fold_standin(&fc, &sh) >= 0);
        assert_true(check_weights(m) >= 10);
        so_graph_free(g);
        so_fold_free(&fc);
        so_model_free(m);
    }
}

/* Layout: BN folded into conv weights (fold_bn) and blocked scale/shift weights (so_layout_nchwc) on resnet_small.
   (SqueezeNet's blocking makes no weights: its convs read the imported ones, checked by test_import.) */
static void test_layout(void **state)
{
    (void)state;
    so_model *m = NULL;
    assert_int_equal(so_onnx_load("data/resnet_small.onnx", &m), SO_OK);
    const int32_t nw = m->n_weights;
    so_graph *fg = NULL, *lg = NULL;
    int32_t nf = 0;
    assert_int_equal(so_layout_fold_bn(m->graph, 16, &fg, &nf), SO_OK);
    so_layout_stats st;
    assert_int_equal(so_layout_nchwc(m->graph, 16, NULL, &lg, &st), SO_OK);
    assert_true(m->n_weights > nw); /* the passes made weights: they are checked too */
    assert_true(check_weights(m) >= 10);
    so_graph_free(lg);
    so_graph_free(fg);
    so_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc),
        cmocka_unit_test(test_import),
        cmocka_unit_test(test_fold),
        cmocka_unit_test(test_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
