/* test_exec.c - the executor: memory plan (reuse, views alias, outputs), errors, determinism, profiler, FLOP counter, node timing, real models vs PyTorch outputs. */
#include <cpuid.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../kernels/exec.h"
#include "../kernels/isa.h"
#include "../kernels/ref.h"
#include "onnx_io.h"
#include "shape.h"
#include "test_util.h"

/* A weight of shape s holding v * (j % 7 - 3) at j. */
static int32_t tb_weight_pat(tb *t, so_shape s, float v)
{
    int64_t n = so_shape_numel(&s);
    float *d = malloc(sizeof *d * (size_t)n);
    for (int64_t j = 0; j < n; j++) d[j] = v * (float)(j % 7 - 3);
    return tb_weight_data(t, s, d);
}

static int32_t tb_node(tb *t, so_op op, const int32_t *ins, int n_in, const so_attr *a, const char *name)
{
    return tb_node_named(t, op, ins, n_in, 1, a, name);
}

/* A chain of 12 element-wise ops on a 1000-float tensor: the plan must reuse buffers
   (peak well below 12 tensors), and the result is exact. */
static void test_memory_reuse(void **state)
{
    (void)state;
    tb t;
    tb_begin(&t, 1, 0);
    int32_t x = tb_input(&t, shp(2, 10, 100));
    int32_t cur = x;
    for (int k = 0; k < 12; k++) {
        int32_t ins[2] = {cur, x};
        cur = tb_node(&t, k % 2 ? SO_OP_ADD : SO_OP_MUL, ins, 2, NULL, "op");
    }
    t.g->outputs[0] = (so_edge){cur, 0};
    float in[1000], out[1000], ref[1000];
    for (int j = 0; j < 1000; j++) in[j] = (float)(j % 13) * 0.1f - 0.6f;
    const float *ins[1] = {in};
    float *outs[1] = {out}, *refs[1] = {ref};
    assert_int_equal(so_ref_run(t.g, ins, refs), SO_OK);
    so_exec *e = NULL;
    assert_int_equal(so_exec_new(t.g, NULL, &e), SO_OK);
    assert_int_equal(so_exec_run(e, ins, outs), SO_OK);
    assert_memory_equal(out, ref, sizeof out);
    size_t peak = so_exec_peak_activation_bytes(e);
    assert_true(peak >= 2 * 4000);
    assert_true(peak <= 3 * 4096);
    assert_int_equal(so_exec_n_steps(e), 12);
    so_exec_free(e);
    so_model_free(t.m);
}

/* Views alias their input (no step, no memory); outputs may be inputs, weights or views;
   two outputs of the same value. */
static void test_views_and_outputs(void **state)
{
    (void)state;
    tb t;
    tb_begin(&t, 4, 0);
    int32_t x = tb_input(&t, shp(3, 2, 3, 4));
    so_attr ra = {0};
    ra.n_ints = 2;
    ra.ints[0] = 6;
    ra.ints[1] = 4;
    int32_t r = tb_node(&t, SO_OP_RESHAPE, &x, 1, &ra, "reshape");
    int32_t rl = tb_node(&t, SO_OP_RELU, &r, 1, NULL, "relu");
    so_attr fa = {0};
    fa.axis = 1;
    int32_t fl = tb_node(&t, SO_OP_FLATTEN, &rl, 1, &fa, "flatten");
    int32_t w = tb_weight_pat(&t, shp(1, 5), 0.5f);
    t.g->outputs[0] = (so_edge){fl, 0};
    t.g->outputs[1] = (so_edge){x, 0};
    t.g->outputs[2] = (so_edge){w, 0};
    t.g->outputs[3] = (so_edge){rl, 0};
    float in[24], o0[24], o1[24], o2[5], o3[24];
    for (int j = 0; j < 24; j++) in[j] = (float)j - 11.5f;
    const float *ins[1] = {in};
    float *outs[4] = {o0, o1, o2, o3};
    so_exec *e = NULL;
    assert_int_equal(so_exec_new(t.g, NULL, &e), SO_OK);
    assert_int_equal(so_exec_n_steps(e), 1);
    assert_int_equal(so_exec_run(e, ins, outs), SO_OK);
    for (int j = 0; j < 24; j++) {
        assert_true(o0[j] == (in[j] > 0 ? in[j] : 0.f));
        assert_true(o3[j] == o0[j]);
        assert_true(o1[j] == in[j]);
    }
    for (int j = 0; j < 5; j++) assert_true(o2[j] == 0.5f * (float)(j % 7 - 3));
    assert_true(so_exec_peak_activation_bytes(e) <= 128);
    so_exec_free(e);
    so_model_free(t.m);
}

/* Zero-copy concat: producers write into their slice; a value feeding two concats is
   aliased into the first only; values also used elsewhere stay readable. */
static void test_concat_in_place(void **state)
{
    (void)state;
    tb t;
    tb_begin(&t, 2, 0);
    int32_t x = tb_input(&t, shp(4, 1, 3, 4, 5));
    int32_t a = tb_node(&t, SO_OP_RELU, &x, 1, NULL, "a");
    int32_t b = tb_node(&t, SO_OP_NEG, &x, 1, NULL, "b");
    int32_t c = tb_node(&t, SO_OP_SIGMOID, &x, 1, NULL, "c");
    so_attr ax = {0};
    ax.axis = 1;
    int32_t i1[3] = {a, b, c};
    int32_t cat1 = tb_node(&t, SO_OP_CONCAT, i1, 3, &ax, "cat1"); /* in place */
    int32_t i2[2] = {c, a};
    int32_t cat2 = tb_node(&t, SO_OP_CONCAT, i2, 2, &ax, "cat2"); /* c, a already slices of cat1: copies */
    int32_t d = tb_node(&t, SO_OP_TANH, &cat1, 1, NULL, "d");
    int32_t m[2] = {a, b};
    int32_t ad = tb_node(&t, SO_OP_ADD, m, 2, NULL, "add"); /* a, b read after the concat */
    (void)ad;
    int32_t i3[2] = {d, cat2};
    int32_t cat3 = tb_node(&t, SO_OP_CONCAT, i3, 2, &ax, "cat3");
    t.g->outputs[0] = (so_edge){cat3, 0};
    t.g->outputs[1] = (so_edge){ad, 0};
    float in[60], ref0[300], ref1[60], out0[300], out1[60];
    for (int j = 0; j < 60; j++) in[j] = (float)(j % 9) * 0.25f - 1.f;
    const float *ins[1] = {in};
    float *refs[2] = {ref0, ref1}, *outs[2] = {out0, out1};
    assert_int_equal(so_ref_run(t.g, ins, refs), SO_OK);
    for (int ref = 0; ref < 2; ref++) {
        so_exec_opts o = {.threads = 1, .reference = ref};
        so_exec *e = NULL;
        assert_int_equal(so_exec_new(t.g, &o, &e), SO_OK);
        /* steps: a b c cat2 d add */
        assert_int_equal(so_exec_n_steps(e), 6); /* cat1 and cat3 in place, cat2 copies */
        assert_int_equal(so_exec_run(e, ins, outs), SO_OK);
        if (ref) { /* same kernels: bitwise */
            assert_memory_equal(out0, ref0, sizeof out0);
            assert_memory_equal(out1, ref1, sizeof out1);
        } else {
            for (int j = 0; j < 300; j++) assert_true(fabs(out0[j] - ref0[j]) <= 1e-6);
            for (int j = 0; j < 60; j++) assert_true(fabs(out1[j] - ref1[j]) <= 1e-6);
        }
        so_exec_free(e);
    }
    so_model_free(t.m);
}

/* Zero-copy blocked concat (CONCAT_NCHWC, b = 8, one image): in place when every input but the last has whole
   blocks (16, 16, then 20 channels with padding lanes), a copy otherwise (20 channels first). */
static void test_concat_nchwc_in_place(void **state)
{
    (void)state;
    tb t;
    tb_begin(&t, 2, 0);
    int32_t x = tb_input(&t, shp(4, 1, 16, 2, 3)), y = tb_input(&t, shp(4, 1, 20, 2, 3));
    so_attr ab = {0};
    ab.n_ints = 1, ab.ints[0] = 8;
    int32_t bx = tb_node(&t, SO_OP_NCHWC_IN, &x, 1, &ab, "bx"), by = tb_node(&t, SO_OP_NCHWC_IN, &y, 1, &ab, "by");
    int32_t a = tb_node(&t, SO_OP_RELU, &bx, 1, NULL, "a"), b = tb_node(&t, SO_OP_NEG, &bx, 1, NULL, "b");
    int32_t c = tb_node(&t, SO_OP_SIGMOID, &by, 1, NULL, "c"), d = tb_node(&t, SO_OP_TANH, &by, 1, NULL, "d");
    int32_t f = tb_node(&t, SO_OP_EXP, &bx, 1, NULL, "f");
    so_attr a1 = {0}, a2 = {0}, o1 = {0}, o2 = {0};
    a1.n_ints = 4, a1.ints[0] = 8, a1.ints[1] = 16, a1.ints[2] = 16, a1.ints[3] = 20;
    a2.n_ints = 3, a2.ints[0] = 8, a2.ints[1] = 20, a2.ints[2] = 16;
    int32_t i1[3] = {a, b, c}, i2[2] = {d, f};
    int32_t cat1 = tb_node(&t, SO_OP_CONCAT_NCHWC, i1, 3, &a1, "cat1"); /* in place */
    int32_t cat2 = tb_node(&t, SO_OP_CONCAT_NCHWC, i2, 2, &a2, "cat2"); /* 20 channels first: copies */
    o1.n_ints = 2, o1.ints[0] = 8, o1.ints[1] = 52;
    o2.n_ints = 2, o2.ints[0] = 8, o2.ints[1] = 36;
    t.g->outputs[0] = (so_edge){tb_node(&t, SO_OP_NCHWC_OUT, &cat1, 1, &o1, "o1"), 0};
    t.g->outputs[1] = (so_edge){tb_node(&t, SO_OP_NCHWC_OUT, &cat2, 1, &o2, "o2"), 0};
    float in0[96], in1[120], ref0[312], ref1[216], out0[312], out1[216];
    for (int j = 0; j < 96; j++) in0[j] = (float)(j % 9) * 0.25f - 1.f;
    for (int j = 0; j < 120; j++) in1[j] = (float)(j % 11) * 0.2f - 1.f;
    const float *ins[2] = {in0, in1};
    float *refs[2] = {ref0, ref1}, *outs[2] = {out0, out1};
    assert_int_equal(so_ref_run(t.g, ins, refs), SO_OK);
    for (int ref = 0; ref < 2; ref++) {
        so_exec_opts o = {.threads = 2, .reference = ref};
        so_exec *e = NULL;
        assert_int_equal(so_exec_new(t.g, &o, &e), SO_OK);
        assert_int_equal(so_exec_n_steps(e), 10); /* bx by a b c d f cat2 o1 o2: cat1 in place */
        memset(out0, 0xff, sizeof out0), memset(out1, 0xff, sizeof out1);
        assert_int_equal(so_exec_run(e, ins, outs), SO_OK);
        for (int j = 0; j < 312; j++) assert_true(fabs(out0[j] - ref0[j]) <= 1e-6);
        for (int j = 0; j < 216; j++) assert_true(fabs(out1[j] - ref1[j]) <= 1e-6);
        so_exec_free(e);
    }
    so_model_free(t.m);
}

/* Zero-copy split (leading dims 1): the outputs are slices of the input, which stays alive
   while they are read, even after later steps that could reuse its memory; a split along an
   axis with a leading dim > 1 copies. */
static void test_split_in_place(void **state)
{
    (void)state;
    tb t;
    tb_begin(&t, 2, 0);
    int32_t x = tb_input(&t, shp(4, 1, 6, 2, 5));
    int32_t a = tb_node(&t, SO_OP_TANH, &x, 1, NULL, "a");
    so_attr sp = {0};
    sp.axis = 1;
    sp.n_ints = 3;
    sp.ints[0] = 1, sp.ints[1] = 3, sp.ints[2] = 2;
    so_edge ae = {a, 0};
    int32_t s1 = so_graph_add(t.g, SO_OP_SPLIT, &ae, 1, 3, so_model_attr(t.m, &sp), -1, "s1"); /* in place */
    assert_int_equal(so_graph_infer(t.g, s1), SO_OK);
    so_edge p0 = {s1, 0}, p1 = {s1, 1}, p2 = {s1, 2};
    int32_t b = so_graph_add(t.g, SO_OP_NEG, &p2, 1, 1, NULL, -1, "b"); /* the last slice first */
    assert_int_equal(so_graph_infer(t.g, b), SO_OK);
    int32_t c = so_graph_add(t.g, SO_OP_RELU, &p1, 1, 1, NULL, -1, "c");
    assert_int_equal(so_graph_infer(t.g, c), SO_OK);
    int32_t d = so_graph_add(t.g, SO_OP_SIGMOID, &p0, 1, 1, NULL, -1, "d"); /* read last */
    assert_int_equal(so_graph_infer(t.g, d), SO_OK);
    so_attr sp2 = {0};
    sp2.axis = 2;
    sp2.n_ints = 2;
    sp2.ints[0] = 1, sp2.ints[1] = 1;
    so_edge ce = {c, 0};
    int32_t s2 = so_graph_add(t.g, SO_OP_SPLIT, &ce, 1, 2, so_model_attr(t.m, &sp2), -1, "s2"); /* dim 1 is 3: copies */
    assert_int_equal(so_graph_infer(t.g, s2), SO_OK);
    so_edge m1[2] = {{s2, 1}, {s2, 0}};
    int32_t e1 = so_graph_add(t.g, SO_OP_MUL, m1, 2, 1, NULL, -1, "e1");
    assert_int_equal(so_graph_infer(t.g, e1), SO_OK);
    so_attr ax = {0};
    ax.axis = 1;
    so_edge ci[2] = {{d, 0}, {b, 0}};
    int32_t cat = so_graph_add(t.g, SO_OP_CONCAT, ci, 2, 1, so_model_attr(t.m, &ax), -1, "cat");
    assert_int_equal(so_graph_infer(t.g, cat), SO_OK);
    t.g->outputs[0] = (so_edge){cat, 0};
    t.g->outputs[1] = (so_edge){e1, 0};
    float in[60], ref0[30], ref1[15], out0[30], out1[15];
    for (int j = 0; j < 60; j++) in[j] = (float)(j % 11) * 0.2f - 1.f;
    const float *ins[1] = {in};
    float *refs[2] = {ref0, ref1}, *outs[2] = {out0, out1};
    assert_int_equal(so_ref_run(t.g, ins, refs), SO_OK);
    for (int ref = 0; ref < 2; ref++) {
        so_exec_opts o = {.threads = 1, .reference = ref};
        so_exec *e = NULL;
        assert_int_equal(so_exec_new(t.g, &o, &e), SO_OK);
        /* steps: a b c d s2 e1 (s1 in place; cat in place of d and b) */
        assert_int_equal(so_exec_n_steps(e), 6);
        assert_int_equal(so_exec_run(e, ins, outs), SO_OK);
        for (int j = 0; j < 30; j++) assert_true(fabs(out0[j] - ref0[j]) <= 1e-6);
        for (int j = 0; j < 15; j++) assert_true(fabs(out1[j] - ref1[j]) <= 1e-6);
        so_exec_free(e);
    }
    so_model_free(t.m);
}

/* Zero-copy Slice: a slice that is one contiguous run of its input (channel ranges of a
   [1, C, H, W] value, ShuffleNet's halves) is a view at its offset; strided or partial-row
   slices copy. The input outlives every view read after later steps. */
static so_attr slice_attr(int axis, int64_t start, int64_t end, int64_t step)
{
    so_attr a = {0};
    a.n_ints = 4;
    a.ints[0] = axis, a.ints[1] = start, a.ints[2] = end, a.ints[3] = step;
    return a;
}

static void test_slice_in_place(void **state)
{
    (void)state;
    tb t;
    tb_begin(&t, 5, 0);
    int32_t x = tb_input(&t, shp(4, 1, 6, 2, 5));
    int32_t a = tb_node(&t, SO_OP_TANH, &x, 1, NULL, "a");
    so_attr sa[4] = {slice_attr(1, 3, 6, 1), slice_attr(1, 0, 3, 1), slice_attr(1, 0, 6, 2), slice_attr(3, 1, 4, 1)};
    int32_t sl[4], us[4];
    const so_op uop[4] = {SO_OP_NEG, SO_OP_RELU, SO_OP_SIGMOID, SO_OP_EXP};
    for (int q = 0; q < 4; q++) sl[q] = tb_node(&t, SO_OP_SLICE, &a, 1, &sa[q], "slice");
    int32_t b = tb_node(&t, SO_OP_SIGMOID, &x, 1, NULL, "b"); /* would take a's memory if a died with the slices */
    for (int q = 3; q >= 0; q--) us[q] = tb_node(&t, uop[q], &sl[q], 1, NULL, "use");
    for (int q = 0; q < 5; q++) t.g->outputs[q] = (so_edge){q == 4 ? b : us[q], 0};
    float in[60], ref[5][60], out[5][60];
    for (int j = 0; j < 60; j++) in[j] = (float)(j % 13) * 0.25f - 1.5f;
    const float *ins[1] = {in};
    float *refs[5] = {ref[0], ref[1], ref[2], ref[3], ref[4]}, *outs[5] = {out[0], out[1], out[2], out[3], out[4]};
    const int len[5] = {30, 30, 30, 18, 60};
    assert_int_equal(so_ref_run(t.g, ins, refs), SO_OK);
    for (int r = 0; r < 2; r++) {
        so_exec_opts o = {.threads = 1 + r, .reference = r};
        so_exec *e = NULL;
        assert_int_equal(so_exec_new(t.g, &o, &e), SO_OK);
        /* steps: a, the strided and the partial-row slice, b, four uses (the channel ranges in place) */
        assert_int_equal(so_exec_n_steps(e), 8);
        assert_int_equal(so_exec_run(e, ins, outs), SO_OK);
        for (int q = 0; q < 5; q++)
            for (int j = 0; j < len[q]; j++) assert_true(fabs(out[q][j] - ref[q][j]) <= 1e-6);
        so_exec_free(e);
    }
    so_model_free(t.m);
}

static void test_opaque_error(void **state)
{
    (void)state;
    tb t;
    tb_begin(&t, 1, 0);
    int32_t x = tb_input(&t, shp(1, 4));
    t.m->opaque = so_arena_alloc(&t.m->arena, sizeof(so_opaque));
    t.m->n_opaque = 1;
    t.m->opaque[0].op_type = "FancyOp";
    so_edge e = {x, 0};
    int32_t op = so_graph_add(t.g, SO_OP_OPAQUE, &e, 1, 1, NULL, 0, "fancy_1");
    t.g->nodes[op].out[0] = shp(1, 4);
    t.g->outputs[0] = (so_edge){op, 0};
    so_exec *e2 = (so_exec *)&t; /* must be reset to NULL on failure */
    assert_int_equal(so_exec_new(t.g, NULL, &e2), SO_ERR_UNSUPPORTED);
    assert_null(e2);
    assert_non_null(strstr(so_error(), "unsupported operator 'FancyOp' at node 'fancy_1'"));
    so_model_free(t.m);
}

/* Conv graph: FLOP count, profiler, node timing, bitwise determinism at a fixed thread count. */
static void test_flops_profile_timing(void **state)
{
    (void)state;
    tb t;
    tb_begin(&t, 1, 0);
    int32_t x = tb_input(&t, shp(4, 1, 8, 16, 16));
    int32_t w = tb_weight_pat(&t, shp(4, 16, 8, 3, 3), 0.01f);
    so_attr a = {0};
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
    int32_t ins[2] = {x, w};
    int32_t c = tb_node(&t, SO_OP_CONV, ins, 2, &a, "conv");
    int32_t r = tb_node(&t, SO_OP_RELU, &c, 1, NULL, "relu");
    int32_t mi[2] = {r, r};
    int32_t m = tb_node(&t, SO_OP_MUL, mi, 2, NULL, "square");
    t.g->outputs[0] = (so_edge){m, 0};
    assert_int_equal(so_node_flops(t.g, c), 2LL * 16 * 16 * 16 * 8 * 9);
    assert_int_equal(so_node_flops(t.g, r), 16 * 16 * 16);
    assert_int_equal(so_node_flops(t.g, x), 0);

    static float in[8 * 256], o1[16 * 256], o2[16 * 256];
    for (int j = 0; j < 8 * 256; j++) in[j] = (float)((j * 37) % 101) / 50.f - 1.f;
    const float *inp[1] = {in};
    for (int threads = 1; threads <= 2; threads++) {
        so_exec_opts o = {.threads = threads, .profile = 1};
        so_exec *e = NULL;
        assert_int_equal(so_exec_new(t.g, &o, &e), SO_OK);
        assert_int_equal(so_exec_n_steps(e), 2); /* conv+relu fused, mul */
        float *out1[1] = {o1}, *out2[1] = {o2};
        for (int k = 0; k < 3; k++) assert_int_equal(so_exec_run(e, inp, out1), SO_OK);
        assert_int_equal(so_exec_run(e, inp, out2), SO_OK);
        assert_memory_equal(o1, o2, sizeof o1);
        assert_int_equal(so_exec_n_profiled_runs(e), 4);
        so_exec_step_info si;
        so_exec_step(e, 0, &si);
        assert_int_equal(si.node, c);
        assert_int_equal(si.op, SO_OP_CONV);
        assert_int_equal(si.flops, so_node_flops(t.g, c) + so_node_flops(t.g, r));
        assert_true(si.median_ms > 0);
        assert_true(si.min_ms > 0 && si.min_ms <= si.median_ms); /* the fastest of the 4 profiled runs */
        char buf[8192] = {0};
        FILE *f = fmemopen(buf, sizeof buf - 1, "w");
        so_exec_profile_print(e, f);
        fclose(f);
        assert_non_null(strstr(buf, "conv"));
        assert_non_null(strstr(buf, "per op kind"));
        /* the per-run line: wall median / min and the time outside the steps, parsed back: wall >= the steps' minima */
        const char *rl = strstr(buf, "runs: wall median ");
        assert_non_null(rl);
        double wmed = 0, wmin = 0, gap = -1;
        assert_int_equal(sscanf(rl, "runs: wall median %lf ms, min %lf ms; outside the steps median %lf ms per run", &wmed, &wmin, &gap), 3);
        so_exec_step_info s1;
        so_exec_step(e, 1, &s1);
        assert_true(wmin > 0 && wmin <= wmed && gap >= 0 && gap < wmed);
        /* wmin is printed to 0.001 ms and these steps take ~0.01 ms: allow the print's rounding (CI failed on
           exactly this, session 19's tree: the unrounded minimum was above the sum, the printed one below) */
        assert_true(wmin + 0.0005 >= si.min_ms + s1.min_ms);
        assert_non_null(strstr(buf, "min_ms"));
        so_exec_free(e);
    }
    double ms = -1;
    assert_int_equal(so_exec_time_node(t.g, c, 1, 0, 3, &ms), SO_OK);
    assert_true(ms > 0);
    assert_int_equal(so_exec_time_node(t.g, x, 1, 0, 3, &ms), SO_OK);
    assert_true(ms == 0);
    so_model_free(t.m);
}

/* The cost model's cold timing (weights from memory) flushes what the kernel reads: an M = 1 MatMul on our
   GEMV reads its packed copy of B (kernels/matmul.c mm_use_gemv), so that copy is flushed with the weight
   (session 16: left warm, nasrnn_512's 1 MB GEMVs timed at half their in-model time and the search priced
   its merged products dearer than they run). No time is asserted: what was flushed is. */
static void test_time_cold_flushes_packed(void **state)
{
    (void)state;
    tb t;
    tb_begin(&t, 1, 0);
    const int64_t K = 512, N = 512;
    int32_t x = tb_input(&t, shp(2, 1, K));
    int32_t w = tb_weight_pat(&t, shp(2, K, N), 0.001f);
    int32_t ins[2] = {x, w};
    int32_t mm = tb_node(&t, SO_OP_MATMUL, ins, 2, NULL, "mm");
    t.g->outputs[0] = (so_edge){mm, 0};
    const size_t wb = (size_t)(K * N) * sizeof(float);
    so_exec_timed what;
    double ms = 0;
    /* session 20: the flush is clflushopt where the CPU has it (cpuid leaf 7 EBX bit 23; kernels/exec.c
       so_exec_time_flushopt), clflush otherwise or when turned off, and the same bytes either way */
    unsigned a = 0, b = 0, c = 0, d = 0;
    const int has_opt = __get_cpuid_count(7, 0, &a, &b, &c, &d) && ((b >> 23) & 1u);
    const int saved = so_exec_time_flushopt;
    size_t flushed[2] = {0, 0};
    for (int opt = 1; opt >= 0; opt--) {
        so_exec_time_flushopt = opt;
        assert_int_equal(so_exec_time_step(t.g, mm, NULL, 1, 1, 3, &ms, &what), SO_OK);
        assert_true(ms > 0);
        assert_string_equal(what.kernel, "matmul_gemv");
        assert_true(what.flushed_bytes >= 2 * wb);            /* the weight and the packed B */
        assert_true(what.flushed_bytes <= 2 * wb + 64 * 4 * (size_t)K); /* nothing else */
        assert_non_null(what.flush);
        assert_string_equal(what.flush, opt && has_opt ? "clflushopt" : "clflush");
        flushed[opt] = what.flushed_bytes;
    }
    assert_true(flushed[0] == flushed[1]);
    so_exec_time_flushopt = saved;
    assert_int_equal(so_exec_time_step(t.g, mm, NULL, 1, 0, 3, &ms, &what), SO_OK);
    assert_int_equal(what.flushed_bytes, 0); /* warm: nothing flushed */
    assert_null(what.flush);
    so_model_free(t.m);
}

/* The timer's stop rule (kernels/exec.c so_exec_time_enough) on scripted times, and the lean rule for cold
   configurations (so_exec_time_lean): a GEMV whose 1 MB weight takes far longer to flush (clflush) than its product
   stops after 8 runs once runs and flushes reach 4 ms; the timer before session 16 (lean 0) ran it until 4 ms of
   kernel time alone. Then the real timer on such a GEMV: its accounting, and that it stopped where the rule says,
   with the times it recorded. No speed is asserted, nor which branch of the rule a CPU takes: how much a clflush
   costs against the kernel is the CPU's (~460 ns a line on the Intel Xeon model 207 VM, session 20: the series
   stops at 8; a CPU whose clflush of a cached line costs under ~30 ns does not reach 4 ms in 8 runs and goes on,
   which the real-timer check written before session 20, `lean: runs <= 9`, would have failed). */
static void test_time_lean_cold(void **state)
{
    (void)state;
    const int saved = so_exec_time_lean;
    /* scripted: kernel 0.05 ms, flush 5 ms (this VM's 1 MB) */
    so_exec_time_lean = 1;
    assert_false(so_exec_time_enough(7, 0.05, 5.0, 1));
    assert_true(so_exec_time_enough(8, 0.05, 5.0, 1)); /* COLD_RUNS runs and 8 * 5.05 ms >= 4 ms */
    assert_false(so_exec_time_enough(8, 0.05, 5.0, 0)); /* warm: the kernel time alone decides */
    assert_false(so_exec_time_enough(79, 0.05, 5.0, 0));
    assert_true(so_exec_time_enough(80, 0.05, 5.0, 0)); /* 80 * 0.05 ms = 4 ms */
    /* a cheap flush (0.1 ms): 8 runs with their flushes are 1.2 ms, not enough; 27 runs are 4.05 ms */
    assert_false(so_exec_time_enough(8, 0.05, 0.1, 1));
    assert_false(so_exec_time_enough(26, 0.05, 0.1, 1));
    assert_true(so_exec_time_enough(27, 0.05, 0.1, 1));
    /* a flush no dearer than the kernel: the lean rule does not apply */
    assert_false(so_exec_time_enough(15, 0.2, 0.2, 1)); /* 15 runs with flushes: 6 ms, but the flush is not dearer */
    assert_true(so_exec_time_enough(20, 0.2, 0.2, 1));
    /* MIN_RUNS: one long run is not enough, two are */
    assert_false(so_exec_time_enough(1, 10.0, 0.0, 0));
    assert_true(so_exec_time_enough(2, 10.0, 0.0, 0));
    /* lean 0 (before session 16): a cold series stops on kernel time only */
    so_exec_time_lean = 0;
    assert_false(so_exec_time_enough(8, 0.05, 5.0, 1));
    assert_false(so_exec_time_enough(79, 0.05, 5.0, 1));
    assert_true(so_exec_time_enough(80, 0.05, 5.0, 1));

    tb t;
    tb_begin(&t, 1, 0);
    int32_t x = tb_input(&t, shp(2, 1, 64));
    int32_t w = tb_weight_pat(&t, shp(2, 64, 4096), 0.01f);
    int32_t ins[2] = {x, w};
    int32_t mm = tb_node(&t, SO_OP_MATMUL, ins, 2, NULL, "mm");
    t.g->outputs[0] = (so_edge){mm, 0};
    for (int lean = 1; lean >= 0; lean--) {
        so_exec_time_lean = lean;
        for (int cold = 1; cold >= 0; cold--) {
            double ms = -1;
            so_exec_timed what;
            assert_int_equal(so_exec_time_step(t.g, mm, NULL, 1, cold, 400, &ms, &what), SO_OK);
            assert_true(ms > 0);
            assert_true(what.kernel_seconds > 0 && what.select_seconds >= 0 && what.setup_seconds >= 0);
            assert_true(cold ? what.flush_seconds > 0 : what.flush_seconds >= 0);
            assert_true(what.fastest_ms > 0 && what.fastest_ms <= ms && what.least_flush_ms >= 0);
            /* the series stopped where the rule says with the times it recorded, or ran out of runs: all 400, or the
               3 / 2 a warm-up over 5 / 20 ms allows */
            const int done = what.runs - 1;
            assert_true(done >= 2 && done <= 400);
            if (!(so_exec_time_enough(done, what.fastest_ms, what.least_flush_ms, cold) || done == 400 || done <= 3))
                fail_msg("lean %d cold %d: stopped after %d runs (fastest %g ms, least flush %g ms), not by the rule", lean, cold, done,
                         what.fastest_ms, what.least_flush_ms);
            /* and not later on the kernel-time target: one run earlier the fastest time was no smaller, so had
               (done - 1) * fastest reached 4 ms the series would have stopped there */
            if (done - 1 >= 2) assert_false(what.fastest_ms * (done - 1) >= 4.0);
        }
    }
    so_exec_time_lean = saved;
    so_model_free(t.m);
}

/* Real models: fast executor vs PyTorch outputs within 1e-4 relative (max-normalised). */
static void test_models(void **state)
{
    (void)state;
    const char *models[] = {"deepandwide", "lstm2", "nasrnn", "bert2", "squeezenet", "resnet_small", "tinyseg"};
    int ran = 0;
    for (size_t k = 0; k < sizeof models / sizeof *models; k++) {
        char path[256], ip[256], op[256];
        snprintf(path, sizeof path, "data/%s.onnx", models[k]);
        snprintf(ip, sizeof ip, "data/%s.in.bin", models[k]);
        snprintf(op, sizeof op, "data/%s.out.bin", models[k]);
        FILE *fi = fopen(ip, "rb"), *fo = fopen(op, "rb");
        if (!fi || !fo) {
            if (fi) fclose(fi);
            if (fo) fclose(fo);
            continue;
        }
        so_model *m = NULL;
        if (so_onnx_load(path, &m) != SO_OK) fail_msg("%s", so_error());
        so_graph *g = m->graph;
        float **ins = calloc((size_t)m->n_inputs, sizeof *ins), **outs = calloc((size_t)m->n_outputs, sizeof *outs);
        for (int i = 0; i < m->n_inputs; i++) {
            size_t n = (size_t)so_shape_numel(&m->inputs[i].shape);
            ins[i] = malloc(n * sizeof(float));
            assert_int_equal(fread(ins[i], sizeof(float), n, fi), n);
        }
        for (int threads = 1; threads <= 2; threads++) {
            so_exec_opts o = {.threads = threads};
            so_exec *e = NULL;
            if (so_exec_new(g, &o, &e) != SO_OK) fail_msg("%s: %s", path, so_error());
            for (int q = 0; q < m->n_outputs; q++)
                outs[q] = realloc(outs[q], (size_t)so_shape_numel(&g->nodes[g->outputs[q].node].out[g->outputs[q].slot]) * sizeof(float));
            assert_int_equal(so_exec_run(e, (const float *const *)ins, outs), SO_OK);
            rewind(fo);
            for (int q = 0; q < m->n_outputs; q++) {
                size_t n = (size_t)so_shape_numel(&g->nodes[g->outputs[q].node].out[g->outputs[q].slot]);
                float *want = malloc(n * sizeof(float));
                assert_int_equal(fread(want, sizeof(float), n, fo), n);
                double mx = 0, err = 0;
                for (size_t j = 0; j < n; j++) {
                    mx = fmax(mx, fabs(want[j]));
                    double d = fabs((double)outs[q][j] - want[j]);
                    err = d > err || d != d ? d : err;
                }
                if (!(err <= 1e-4 * fmax(mx, 1e-6))) fail_msg("%s output %d: max error %g (max |ref| %g)", path, q, err, mx);
                free(want);
            }
            so_exec_free(e);
        }
        for (int i = 0; i < m->n_inputs; i++) free(ins[i]);
        for (int q = 0; q < m->n_outputs; q++) free(outs[q]);
        free(ins);
        free(outs);
        fclose(fi);
        fclose(fo);
        so_model_free(m);
        ran++;
    }
    assert_true(ran >= 1);
}

/* x[8,64] -> MatMul(W1) -> MatMul(W1) -> MatMul(W2) = y, MatMul(W3) = z; Relu(W2) and W3 itself are
   outputs too. W1 is read only by packed so_gemm MatMuls (twice): the only releasable weight.
   w_nodes: W1, W2, W3, then the two W1 MatMuls. */
static void consume_graph(tb *t, int32_t *w_nodes)
{
    tb_begin(t, 4, 0);
    int32_t x = tb_input(t, shp(2, 8, 64));
    w_nodes[0] = tb_weight_pat(t, shp(2, 64, 64), 0.01f);
    w_nodes[1] = tb_weight_pat(t, shp(2, 64, 16), 0.02f);
    w_nodes[2] = tb_weight_pat(t, shp(2, 64, 16), 0.03f);
    int32_t a[2] = {x, w_nodes[0]};
    int32_t h1 = tb_node(t, SO_OP_MATMUL, a, 2, NULL, "h1");
    int32_t b[2] = {h1, w_nodes[0]};
    int32_t h2 = tb_node(t, SO_OP_MATMUL, b, 2, NULL, "h2");
    int32_t c[2] = {h2, w_nodes[1]};
    int32_t y = tb_node(t, SO_OP_MATMUL, c, 2, NULL, "y");
    int32_t d[2] = {h2, w_nodes[2]};
    int32_t z = tb_node(t, SO_OP_MATMUL, d, 2, NULL, "z");
    w_nodes[3] = h1;
    w_nodes[4] = h2;
    int32_t r = tb_node(t, SO_OP_RELU, &w_nodes[1], 1, NULL, "r");
    t->g->outputs[0] = (so_edge){y, 0};
    t->g->outputs[1] = (so_edge){z, 0};
    t->g->outputs[2] = (so_edge){r, 0};
    t->g->outputs[3] = (so_edge){w_nodes[2], 0};
}

/* opts.consume_weights: off leaves every weight intact; on frees exactly the weights only packed
   kernels read (model data NULL), keeps shared/output weights, and gives bit-identical outputs. */
/* The consume tests name kernels that keep their own copy of a weight (so_gemm's packed B): at the
   avx512 level MatMul runs oneDNN's sgemm on the weight in place, so they run at most at avx2. Returns
   the level to restore. */
static so_isa at_most_avx2(void)
{
    so_isa cur;
    assert_int_equal(so_isa_current(&cur), SO_OK);
    if (cur > SO_ISA_AVX2) assert_int_equal(so_isa_set(SO_ISA_AVX2), SO_OK);
    return cur;
}

static void test_consume_weights(void **state)
{
    (void)state;
    const so_isa prev_isa = at_most_avx2();
    float in[8 * 64];
    for (int j = 0; j < 8 * 64; j++) in[j] = (float)(j % 11) * 0.1f - 0.5f;
    const float *ins[1] = {in};
    static float out[2][4][64 * 16]; /* largest output: W3, Relu(W2) */
    size_t wbytes[3] = {64 * 64 * 4, 64 * 16 * 4, 64 * 16 * 4};
    for (int consume = 0; consume <= 1; consume++) {
        tb t;
        int32_t wn[5];
        consume_graph(&t, wn);
        float *copy[3];
        for (int k = 0; k < 3; k++) {
            copy[k] = malloc(wbytes[k]);
            memcpy(copy[k], t.m->weights[t.g->nodes[wn[k]].ref].data, wbytes[k]);
        }
        so_exec_opts o = {.threads = 1, .consume_weights = consume};
        so_exec *e = NULL;
        assert_int_equal(so_exec_new(t.g, &o, &e), SO_OK);
        for (int32_t k = 0; k < so_exec_n_steps(e); k++) { /* h1, h2 must be on the packed GEMM, or nothing is tested */
            so_exec_step_info si;
            so_exec_step(e, k, &si);
            if (si.node == wn[3] || si.node == wn[4]) assert_string_equal(si.kernel, "matmul_so_gemm");
        }
        float *outs[4] = {out[consume][0], out[consume][1], out[consume][2], out[consume][3]};
        assert_int_equal(so_exec_run(e, ins, outs), SO_OK);
        assert_int_equal(so_exec_run(e, ins, outs), SO_OK); /* a second run reads nothing released either */
        assert_int_equal(so_exec_n_released_weights(e), consume ? 1 : 0);
        assert_int_equal(so_exec_released_weight_bytes(e), consume ? wbytes[0] : 0);
        for (int k = 0; k < 3; k++) {
            const void *d = t.m->weights[t.g->nodes[wn[k]].ref].data;
            if (consume && k == 0) {
                assert_null(d);
            } else {
                assert_non_null(d);
                assert_memory_equal(d, copy[k], wbytes[k]);
            }
            free(copy[k]);
        }
        so_exec_free(e);
        so_model_free(t.m);
    }
    assert_memory_equal(out[0][0], out[1][0], 8 * 16 * sizeof(float));
    assert_memory_equal(out[0][1], out[1][1], 8 * 16 * sizeof(float));
    assert_memory_equal(out[0][2], out[1][2], 64 * 16 * sizeof(float));
    assert_memory_equal(out[0][3], out[1][3], 64 * 16 * sizeof(float));
    assert_int_equal(so_isa_set(prev_isa), SO_OK);
}

/* Real models: with consume_weights (and hugepages, as superopt run sets both) the outputs are bit-identical to the
   run without (same thread count), and some weights are actually released (BERT's MatMuls, the CNN's convs). */
static void test_consume_weights_models(void **state)
{
    (void)state;
    const so_isa prev_isa = at_most_avx2();
    const char *models[] = {"bert2", "resnet_small", "squeezenet"};
    int ran = 0;
    for (size_t k = 0; k < sizeof models / sizeof *models; k++) {
        char path[256];
        snprintf(path, sizeof path, "data/%s.onnx", models[k]);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        fclose(f);
        so_model *m = NULL;
        if (so_onnx_load(path, &m) != SO_OK) fail_msg("%s", so_error());
        so_graph *g = m->graph;
        float **ins = calloc((size_t)m->n_inputs, sizeof *ins), *outs[2][8] = {{0}};
        assert_true(m->n_outputs <= 8);
        for (int i = 0; i < m->n_inputs; i++) {
            size_t n = (size_t)so_shape_numel(&m->inputs[i].shape);
            ins[i] = malloc(n * sizeof(float));
            for (size_t j = 0; j < n; j++) ins[i][j] = (float)((j * 7 + (size_t)i) % 17) * 0.05f - 0.4f;
        }
        size_t before = 0;
        for (int32_t w = 0; w < m->n_weights; w++) before += m->weights[w].data != NULL;
        for (int consume = 0; consume <= 1; consume++) {
            so_exec_opts o = {.threads = 1, .consume_weights = consume, .hugepages = consume};
            so_exec *e = NULL;
            if (so_exec_new(g, &o, &e) != SO_OK) fail_msg("%s: %s", path, so_error());
            for (int q = 0; q < m->n_outputs; q++)
                outs[consume][q] = malloc((size_t)so_shape_numel(&g->nodes[g->outputs[q].node].out[g->outputs[q].slot]) * sizeof(float));
            assert_int_equal(so_exec_run(e, (const float *const *)ins, outs[consume]), SO_OK);
            size_t present = 0;
            for (int32_t w = 0; w < m->n_weights; w++) present += m->weights[w].data != NULL;
            if (consume) {
                if (so_exec_n_released_weights(e) < 1) fail_msg("%s: no weight released", path);
                assert_int_equal(present, before - (size_t)so_exec_n_released_weights(e));
            } else {
                assert_int_equal(so_exec_n_released_weights(e), 0);
                assert_int_equal(present, before);
            }
            so_exec_free(e);
        }
        for (int q = 0; q < m->n_outputs; q++) {
            size_t n = (size_t)so_shape_numel(&g->nodes[g->outputs[q].node].out[g->outputs[q].slot]);
            if (memcmp(outs[0][q], outs[1][q], n * sizeof(float))) fail_msg("%s output %d differs with consume_weights", path, q);
            free(outs[0][q]);
            free(outs[1][q]);
        }
        for (int i = 0; i < m->n_inputs; i++) free(ins[i]);
        free(ins);
        so_model_free(m);
        ran++;
    }
    assert_true(ran >= 1);
    assert_int_equal(so_isa_set(prev_isa), SO_OK);
}

/* so_big_alloc: 64-byte aligned below 2 MB, 2 MB aligned from 2 MB on, all of it writable; so_heap_hugepages moves
   heap pages (copies them when it collapses a range) without changing a byte of what they hold. */
static void test_hugepages(void **state)
{
    (void)state;
    const size_t sizes[] = {1, 100, (2u << 20) - 4, 2u << 20, (3u << 20) + 12};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        unsigned char *p = so_big_alloc(sizes[k]);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % (sizes[k] >= (2u << 20) ? (2u << 20) : 64), 0);
        memset(p, 0x5a, sizes[k]);
        assert_int_equal(p[sizes[k] - 1], 0x5a);
        free(p);
    }
    enum { NB = 256, BS = 24 << 10 }; /* 6 MB in blocks below the mmap threshold: on the heap */
    unsigned char *b[NB];
    for (int i = 0; i < NB; i++) {
        b[i] = malloc(BS);
        assert_non_null(b[i]);
        for (int j = 0; j < BS; j++) b[i][j] = (unsigned char)(i * 31 + j * 7);
    }
    so_heap_hugepages();
    for (int i = 0; i < NB; i++) {
        for (int j = 0; j < BS; j++)
            if (b[i][j] != (unsigned char)(i * 31 + j * 7)) fail_msg("block %d byte %d changed", i, j);
        free(b[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hugepages),
        cmocka_unit_test(test_memory_reuse),
        cmocka_unit_test(test_views_and_outputs),
        cmocka_unit_test(test_concat_in_place),
        cmocka_unit_test(test_concat_nchwc_in_place),
        cmocka_unit_test(test_split_in_place),
        cmocka_unit_test(test_slice_in_place),
        cmocka_unit_test(test_opaque_error),
        cmocka_unit_test(test_flops_profile_timing),
        cmocka_unit_test(test_time_cold_flushes_packed),
        cmocka_unit_test(test_time_lean_cold),
        cmocka_unit_test(test_models),
        cmocka_unit_test(test_consume_weights),
        cmocka_unit_test(test_consume_weights_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
