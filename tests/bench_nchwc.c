/* bench_nchwc.c - paired interleaved A/B timing of one conv (+bias +Relu) on the current NCHW executor against the NCHWc kernels (blocked input, no reorders) on ResNet-50 / MobileNet-v2 layer shapes; a design check, not a speed claim (see the printed note). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/common.h"
#include "../kernels/exec.h"
#include "../kernels/nchwc.h"
#include "../kernels/ref.h"

typedef struct shape_case {
    const char *name;
    int C, H, O, k, s, group;
} shape_case;

static const shape_case cases[] = {
    {"r50 stem 7x7/2 3->64", 3, 224, 64, 7, 2, 1},
    {"r50 l1 1x1 64->64", 64, 56, 64, 1, 1, 1},
    {"r50 l1 3x3 64->64", 64, 56, 64, 3, 1, 1},
    {"r50 l1 1x1 64->256", 64, 56, 256, 1, 1, 1},
    {"r50 l1 1x1 256->64", 256, 56, 64, 1, 1, 1},
    {"r50 l2 3x3 128", 128, 28, 128, 3, 1, 1},
    {"r50 l2 1x1 512->128", 512, 28, 128, 1, 1, 1},
    {"r50 l3 3x3 256", 256, 14, 256, 3, 1, 1},
    {"r50 l3 1x1 256->1024", 256, 14, 1024, 1, 1, 1},
    {"r50 l3 1x1 1024->256", 1024, 14, 256, 1, 1, 1},
    {"r50 l4 3x3 512", 512, 7, 512, 3, 1, 1},
    {"r50 l4 1x1 2048->512", 2048, 7, 512, 1, 1, 1},
    {"mv2 1x1 16->96 112", 16, 112, 96, 1, 1, 1},
    {"mv2 1x1 144->24 56", 144, 56, 24, 1, 1, 1},
    {"mv2 1x1 384->64 14", 384, 14, 64, 1, 1, 1},
    {"mv2 1x1 960->160 7", 960, 7, 160, 1, 1, 1},
    {"mv2 dw 32 112", 32, 112, 32, 3, 1, 32},
    {"mv2 dw 96 112/2", 96, 112, 96, 3, 2, 96},
    {"mv2 dw 144 56", 144, 56, 144, 3, 1, 144},
    {"mv2 dw 384 14", 384, 14, 384, 3, 1, 384},
    {"mv2 dw 960 7", 960, 7, 960, 3, 1, 960},
};

int main(int argc, char **argv)
{
    const int rounds = argc > 1 ? atoi(argv[1]) : 7, iters = argc > 2 ? atoi(argv[2]) : 10, T = argc > 3 ? atoi(argv[3]) : 1;
    const char *isa = argc > 4 ? argv[4] : "avx512";
    so_isa lvl;
    if (so_isa_parse(isa, &lvl) != SO_OK || lvl > so_isa_cpu()) {
        fprintf(stderr, "bench_nchwc: %s is not a level this CPU has\n", isa);
        return 1;
    }
    const so_nchwc_impl *L = so_nchwc_level(lvl == SO_ISA_AVX512 ? 16 : 8, lvl);
    if (so_isa_set(lvl) != SO_OK) return 1; /* the NCHW executor at the same level: a fair pairing */
    printf("NCHWc (%s, b=%d) / NCHW executor, one conv+bias+relu, %d threads; medians of %d paired interleaved rounds of %d runs\n", L->isa,
           L->b, T, rounds, iters);
    printf("%-24s %9s %9s %7s %13s\n", "layer", "nchw ms", "nchwc ms", "ratio", "ratio range");
    uint64_t seed = 1;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const shape_case *k = &cases[ci];
        const int64_t pad = k->k / 2, Ho = (k->H + 2 * pad - k->k) / k->s + 1;
        so_model *m = so_model_new("bench");
        m->n_inputs = 1;
        m->inputs = so_arena_alloc(&m->arena, sizeof(so_value_info));
        m->inputs[0].name = "x";
        int64_t xd[4] = {1, k->C, k->H, k->H}, wd[4] = {k->O, k->C / k->group, k->k, k->k}, bd[1] = {k->O};
        m->inputs[0].shape = so_shape_make(4, xd);
        m->n_outputs = 1;
        m->outputs = so_arena_alloc(&m->arena, sizeof(so_value_info));
        m->outputs[0].name = "y";
        so_graph *g = so_graph_new(m);
        m->graph = g;
        int32_t xin = so_graph_add(g, SO_OP_INPUT, NULL, 0, 1, NULL, 0, NULL);
        so_graph_infer(g, xin);
        so_shape ws = so_shape_make(4, wd), bs = so_shape_make(1, bd);
        float *w = malloc(sizeof(float) * (size_t)so_shape_numel(&ws)), *bias = malloc(sizeof(float) * (size_t)k->O);
        so_rng_fill(&seed, w, (size_t)so_shape_numel(&ws));
        so_rng_fill(&seed, bias, (size_t)k->O);
        int32_t wn = so_graph_add(g, SO_OP_WEIGHT, NULL, 0, 1, NULL, so_model_add_weight(m, "w", ws, w), NULL);
        so_graph_infer(g, wn);
        int32_t bn = so_graph_add(g, SO_OP_WEIGHT, NULL, 0, 1, NULL, so_model_add_weight(m, "b", bs, bias), NULL);
        so_graph_infer(g, bn);
        so_attr a = {0};
        a.stride[0] = a.stride[1] = k->s;
        a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = (int32_t)pad;
        a.dilation[0] = a.dilation[1] = 1;
        a.group = k->group;
        a.act = SO_ACT_RELU;
        so_edge e[3] = {{xin, 0}, {wn, 0}, {bn, 0}};
        int32_t cn = so_graph_add(g, SO_OP_CONV, e, 3, 1, so_model_attr(m, &a), -1, "conv");
        if (so_graph_infer(g, cn) != SO_OK) return 1;
        g->outputs[0] = (so_edge){cn, 0};
        const int64_t nx = k->C * k->H * k->H, ny = k->O * Ho * Ho;
        float *x = malloc(sizeof(float) * (size_t)nx), *y = malloc(sizeof(float) * (size_t)ny);
        so_rng_fill(&seed, x, (size_t)nx);
        so_exec_opts o = {.threads = T};
        so_exec *ex = NULL;
        if (so_exec_new(g, &o, &ex) != SO_OK) {
            fprintf(stderr, "bench_nchwc: %s\n", so_error());
            return 1;
        }
        so_exec_step_info si;
        so_exec_step(ex, 0, &si);
        so_nchwc_conv p;
        so_epi ep = {.shift = bias, .act1 = SO_ACT_RELU};
        if (so_nchwc_conv_plan(&p, L->b, k->C, k->H, k->H, k->O, Ho, Ho, k->k, k->k, k->s, k->s, pad, pad, 1, 1, k->group, w, &ep)) return 1;
        float *xb = aligned_alloc(64, sizeof(float) * (size_t)((so_nchwc_numel(L->b, 1, k->C, k->H * k->H) + 15) / 16 * 16));
        float *yb = aligned_alloc(64, sizeof(float) * (size_t)((so_nchwc_numel(L->b, 1, k->O, Ho * Ho) + 15) / 16 * 16));
        L->to_blocked(x, xb, 1, k->C, k->H * k->H, 1);
        double ta[64], tb[64], ratio[64];
        const int R = rounds > 64 ? 64 : rounds;
        for (int r = 0; r < R; r++) {
            for (int half = 0; half < 2; half++) {
                const int doA = (half == 0) == (r % 2 == 0); /* A B, B A, ... */
                double best[64];
                const int it = iters > 64 ? 64 : iters;
                for (int i = 0; i < it + 1; i++) { /* first run warms up */
                    double t0 = so_now();
                    if (doA) {
                        const float *ins[1] = {x};
                        float *outs[1] = {y};
                        so_exec_run(ex, ins, outs);
                    } else
                        L->conv(&p, 1, xb, yb, NULL, T);
                    if (i) best[i - 1] = so_now() - t0;
                }
                (doA ? ta : tb)[r] = so_median(best, (size_t)it);
            }
            ratio[r] = tb[r] / ta[r];
        }
        double rs[64];
        memcpy(rs, ratio, sizeof(double) * (size_t)R);
        so_sort_doubles(rs, (size_t)R);
        printf("%-24s %9.3f %9.3f %7.3f  %5.2f-%5.2f  (%s)\n", k->name, 1e3 * so_median(ta, (size_t)R), 1e3 * so_median(tb, (size_t)R), so_median(ratio, (size_t)R), rs[0],
               rs[R - 1], si.kernel);
        fflush(stdout);
        so_nchwc_conv_free(&p);
        so_exec_free(ex);
        free(x), free(y), free(xb), free(yb);
        so_model_free(m);
    }
    printf("(shared 2-core machine, other sessions running: noisy; ratio < 1 means the blocked kernel was faster)\n");
    return 0;
}
