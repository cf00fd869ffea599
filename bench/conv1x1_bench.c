/* conv1x1_bench.c - GFLOP/s of the blocked 1x1 conv (+bias +Relu) at one ISA level on ResNet-50's, MNASNet's and RegNet-Y-400MF's 1x1 shapes, hot, min of interleaved runs (thread CPU time at 1 thread, wall time above), the direct conv's tile (so_nchwc_pw_on = 0) beside the level's default (a strided 1x1 at b = 8: conv_pad's gathered input, and the pointwise path in place beside it) and, when built with -DSO_BENCH_DNNL -ldnnl, oneDNN's nChw<b>c direct primitive; a design check, not a speed claim. */
/* Build (after make all): cc -std=c11 -D_GNU_SOURCE -Isrc -Ibuild/gen -O2 -fopenmp -DSO_BENCH_DNNL bench/conv1x1_bench.c build/libsuperopt.a
   -o build/conv1x1_bench -lz3 -lxxhash -lopenblas -lprotobuf-c -lglpk -lm -lpthread -ldnnl   (drop -DSO_BENCH_DNNL -ldnnl without oneDNN)
   Run: build/conv1x1_bench [ITERS [THREADS [ISA [NAME-SUBSTRING]]]], e.g. build/conv1x1_bench 50 1 avx2 "r50" */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "../src/common.h"

static int bench_T = 1;
/* The timer: the calling thread's CPU time at 1 thread (a shared machine's other jobs preempt us: wall time then
   counts their slices), wall time with a team. */
static double clk(void) { return bench_T == 1 ? so_cpu_now() : so_now(); }
#include "../kernels/isa.h"
#include "../kernels/nchwc.h"

#ifdef SO_BENCH_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

typedef struct shape {
    const char *name;
    int C, H, O, s;
} shape;

static const shape shapes[] = {
    {"r50 64->64 56", 64, 56, 64, 1},      {"r50 64->256 56", 64, 56, 256, 1},    {"r50 256->64 56", 256, 56, 64, 1},
    {"r50 256->128 56", 256, 56, 128, 1},  {"r50 128->512 28", 128, 28, 512, 1},  {"r50 512->128 28", 512, 28, 128, 1},
    {"r50 512->256 28", 512, 28, 256, 1},  {"r50 256->1024 14", 256, 14, 1024, 1}, {"r50 1024->256 14", 1024, 14, 256, 1},
    {"r50 1024->512 14", 1024, 14, 512, 1}, {"r50 512->2048 7", 512, 7, 2048, 1}, {"r50 2048->512 7", 2048, 7, 512, 1},
    {"r50 256->512 56/2", 256, 56, 512, 2}, {"mn 32->16 112", 32, 112, 16, 1},    {"mn 16->48 112", 16, 112, 48, 1},
    {"mn 72->24 56", 72, 56, 24, 1},       {"mn 24->72 56", 24, 56, 72, 1},       {"mn 120->40 28", 120, 28, 40, 1},
    {"mn 40->240 28", 40, 28, 240, 1},     {"mn 480->80 14", 480, 14, 80, 1},     {"mn 80->480 14", 80, 14, 480, 1},
    {"mn 576->96 14", 576, 14, 96, 1},     {"mn 96->576 14", 96, 14, 576, 1},     {"mn 1152->192 7", 1152, 7, 192, 1},
    {"mn 192->1152 7", 192, 7, 1152, 1},   {"mn 1152->320 7", 1152, 7, 320, 1},   {"mn 320->1280 7", 320, 7, 1280, 1},
    /* strided 1x1s (session 23): ResNet-50 / ResNeXt-50's downsamples, RegNet-Y-400MF's projections */
    {"r50 512->1024 28/2", 512, 28, 1024, 2}, {"r50 1024->2048 14/2", 1024, 14, 2048, 2}, {"rg 32->48 112/2", 32, 112, 48, 2},
    {"rg 48->104 56/2", 48, 56, 104, 2},    {"rg 104->208 28/2", 104, 28, 208, 2}, {"rg 208->440 14/2", 208, 14, 440, 2},
};

#ifdef SO_BENCH_DNNL
#define CK(x)                                                                                                                          \
    do {                                                                                                                               \
        if ((x) != dnnl_success) {                                                                                                     \
            fprintf(stderr, "oneDNN: %s failed\n", #x);                                                                                \
            exit(1);                                                                                                                   \
        }                                                                                                                              \
    } while (0)
/* oneDNN's direct conv (bias, Relu post-op) on nChw<b>c x/y, planned once; dnnl_run executes it. */
typedef struct dconv {
    dnnl_primitive_t cp;
    dnnl_exec_arg_t ca[4];
    const char *impl;
} dconv;
static dnnl_stream_t st;
static void dnnl_setup(dconv *d, const shape *k, int b, const float *w, const float *bias, const float *x, float *y)
{
    static dnnl_engine_t eng;
    if (!eng) {
        CK(dnnl_engine_create(&eng, dnnl_cpu, 0));
        CK(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
    }
    const int64_t Ho = (k->H - 1) / k->s + 1;
    dnnl_dims_t sd = {1, k->C, k->H, k->H}, dd = {1, k->O, Ho, Ho}, wd = {k->O, k->C, 1, 1}, bd = {k->O}, strides = {k->s, k->s}, pad = {0, 0};
    const dnnl_format_tag_t tag = b == 16 ? dnnl_nChw16c : dnnl_nChw8c;
    dnnl_memory_desc_t smd, dmd, wmd, wumd, bmd;
    CK(dnnl_memory_desc_init_by_tag(&smd, 4, sd, dnnl_f32, tag));
    CK(dnnl_memory_desc_init_by_tag(&dmd, 4, dd, dnnl_f32, tag));
    CK(dnnl_memory_desc_init_by_tag(&wmd, 4, wd, dnnl_f32, dnnl_format_tag_any));
    CK(dnnl_memory_desc_init_by_tag(&wumd, 4, wd, dnnl_f32, dnnl_oihw));
    CK(dnnl_memory_desc_init_by_tag(&bmd, 1, bd, dnnl_f32, dnnl_x));
    dnnl_convolution_desc_t cd;
    CK(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &smd, &wmd, &bmd, &dmd, strides, pad, pad));
    dnnl_post_ops_t po;
    dnnl_primitive_attr_t at;
    CK(dnnl_post_ops_create(&po));
    CK(dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_relu, 0.f, 0.f));
    CK(dnnl_primitive_attr_create(&at));
    CK(dnnl_primitive_attr_set_post_ops(at, po));
    dnnl_primitive_desc_t pd;
    CK(dnnl_primitive_desc_create(&pd, &cd, at, eng, NULL));
    CK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &d->impl));
    const dnnl_memory_desc_t *wq = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_memory_t ms, md, mw, mwu, mb;
    CK(dnnl_memory_create(&ms, &smd, eng, (void *)x));
    CK(dnnl_memory_create(&md, &dmd, eng, y));
    CK(dnnl_memory_create(&mwu, &wumd, eng, (void *)w));
    CK(dnnl_memory_create(&mw, wq, eng, DNNL_MEMORY_ALLOCATE));
    CK(dnnl_memory_create(&mb, &bmd, eng, (void *)bias));
    dnnl_primitive_desc_t rpd;
    dnnl_primitive_t rp;
    CK(dnnl_reorder_primitive_desc_create(&rpd, &wumd, eng, wq, eng, NULL));
    CK(dnnl_primitive_create(&rp, rpd));
    dnnl_exec_arg_t ra[2] = {{DNNL_ARG_SRC, mwu}, {DNNL_ARG_DST, mw}};
    CK(dnnl_primitive_execute(rp, st, 2, ra));
    CK(dnnl_stream_wait(st));
    CK(dnnl_primitive_create(&d->cp, pd));
    d->ca[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, ms}, d->ca[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, mw};
    d->ca[2] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, mb}, d->ca[3] = (dnnl_exec_arg_t){DNNL_ARG_DST, md};
    /* the descriptors and memories are kept (a few per shape in a benchmark) */
}
static void dnnl_run(dconv *d)
{
    CK(dnnl_primitive_execute(d->cp, st, 4, d->ca));
    CK(dnnl_stream_wait(st));
}
#endif

int main(int argc, char **argv)
{
    const int iters = argc > 1 ? atoi(argv[1]) : 50, T = argc > 2 ? atoi(argv[2]) : 1;
    const char *isa = argc > 3 ? argv[3] : "avx2", *only = argc > 4 ? argv[4] : NULL;
    so_isa lvl;
    if (iters < 1 || T < 1 || so_isa_parse(isa, &lvl) != SO_OK || lvl > so_isa_cpu()) {
        fprintf(stderr, "usage: conv1x1_bench [ITERS [THREADS [ISA [NAME-SUBSTRING]]]] (ISA a level this CPU has)\n");
        return 2;
    }
    const so_nchwc_impl *L = so_nchwc_level(lvl == SO_ISA_AVX512 ? 16 : 8, lvl);
    if (!L) return 1;
    bench_T = T;
    omp_set_num_threads(T); /* before oneDNN plans its first primitive (it keeps the team size it was created with) */
    const int b = L->b;
    printf("blocked 1x1 conv + bias + Relu, %s b=%d, %d thread(s), hot, min of %d runs, %s (CPU: %s)\n", L->isa, b, T, iters, T == 1 ? "thread CPU time" : "wall time", so_isa_cpu_model());
    printf("%-20s %9s %8s %9s %8s", "shape", "tile ms", "GFLOP/s", "ours ms", "GFLOP/s");
#ifdef SO_BENCH_DNNL
    printf(" %9s %8s %6s  %s", "onednn ms", "GFLOP/s", "o/d", "impl");
#endif
    printf("\n");
    uint64_t seed = 7;
    for (size_t ci = 0; ci < sizeof shapes / sizeof shapes[0]; ci++) {
        const shape *k = &shapes[ci];
        if (only && !strstr(k->name, only)) continue;
        const int64_t Ho = (k->H - 1) / k->s + 1;
        float *w = malloc(sizeof(float) * (size_t)(k->O * k->C)), *bias = malloc(sizeof(float) * (size_t)k->O);
        so_rng_fill(&seed, w, (size_t)(k->O * k->C));
        so_rng_fill(&seed, bias, (size_t)k->O);
        const int64_t nx = so_nchwc_numel(b, 1, k->C, k->H * k->H), ny = so_nchwc_numel(b, 1, k->O, Ho * Ho);
        float *x = aligned_alloc(64, sizeof(float) * (size_t)((nx + 15) / 16 * 16)), *y = aligned_alloc(64, sizeof(float) * (size_t)((ny + 15) / 16 * 16));
        so_rng_fill(&seed, x, (size_t)nx);
        for (int64_t c = k->C; c < (k->C + b - 1) / b * b; c++) /* zero padding lanes */
            for (int64_t q = 0; q < k->H * k->H; q++) x[((c / b) * k->H * k->H + q) * b + c % b] = 0;
        so_nchwc_conv p;
        so_epi ep = {.shift = bias, .act1 = SO_ACT_RELU};
        const int flat = k->s == 1;
        if (so_nchwc_conv_plan(&p, b, k->C, flat ? 1 : k->H, flat ? k->H * k->H : k->H, k->O, flat ? 1 : Ho, flat ? Ho * Ho : Ho, 1, 1, k->s,
                               k->s, 0, 0, 1, 1, 1, w, &ep))
            return 1;
        int nv = 2;
#ifdef SO_BENCH_DNNL
        dconv d;
        float *yd = aligned_alloc(64, sizeof(float) * (size_t)((ny + 15) / 16 * 16));
        dnnl_setup(&d, k, b, w, bias, x, yd);
        omp_set_num_threads(T);
        nv = 3;
#endif
        /* [0]: the direct conv's tile (so_nchwc_pw_on = 0), [1]: the level's default (a strided 1x1 at b = 8: conv_pad,
           the gathered input), [2]: oneDNN, [3]: a strided 1x1's pointwise path in place (before session 23); interleaved */
        double best[4] = {1e30, 1e30, 1e30, 1e30};
        const int gather = b == 8 && so_nchwc_gather_ok(&p); /* (whatever so_nchwc_pad_rule's O bound says) */
        float *sc = gather ? aligned_alloc(64, ((size_t)so_nchwc_pad_scratch(&p) * sizeof(float) + 63) / 64 * 64) : NULL;
        for (int i = 0; i <= iters; i++)
            for (int v = 0; v < 4; v++) {
                if (v == 2 && nv < 3) continue;
                if (v == 3 && !gather) continue;
                so_nchwc_pw_on = v == 0 ? 0 : 1;
                const double t0 = clk();
                if (v == 1 && gather) L->conv_pad(&p, 1, x, y, NULL, sc, T);
                else if (v != 2) L->conv(&p, 1, x, y, NULL, T);
#ifdef SO_BENCH_DNNL
                else dnnl_run(&d);
#endif
                const double t = clk() - t0;
                if (i && t < best[v]) best[v] = t;
            }
        free(sc);
        so_nchwc_pw_on = 1;
        const double fl = 2.0 * k->C * k->O * Ho * Ho, ms = best[1] * 1e3;
        printf("%-20s %9.4f %8.1f %9.4f %8.1f", k->name, best[0] * 1e3, fl / best[0] * 1e-9, ms, fl / ms * 1e-6);
#ifdef SO_BENCH_DNNL
        const double dms = best[2] * 1e3;
        printf(" %9.4f %8.1f %6.2f  %s", dms, fl / dms * 1e-6, ms / dms, d.impl);
        free(yd);
#endif
        if (gather) printf("  in place %.4f ms (%.2f)", best[3] * 1e3, best[1] / best[3]);
        printf("\n");
        fflush(stdout);
        so_nchwc_conv_free(&p);
        free(w), free(bias), free(x), free(y);
    }
    return 0;
}
