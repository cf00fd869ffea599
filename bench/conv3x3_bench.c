/* conv3x3_bench.c - paired, interleaved timing of two builds of the AVX2 (b = 8) blocked conv kernels (an old and a new kernels/nchwc_avx2.c, each compiled into this program under its own table name) on ResNet-50's 3x3, strided and stem shapes: direct conv, our Winograd F(4x4) and F(2x2); a design tool, not a speed claim. */
/* bench/conv3x3_ab.sh builds and runs it (OLD=<tree of the old kernels>, default /work/main). Each round runs every
   candidate of both builds back to back (order alternating), thread CPU time per call; printed per candidate: the
   minima over rounds and the median of the per-round ratios new/old. The plans come from this tree's
   libsuperopt.a (so_nchwc_conv_plan, so_nchwc_conv_wino): both builds must share nchwc.h's structs.
   Usage: conv3x3_bench [ROUNDS [THREADS [FILTER]]]; env NO_PAD: the new build's direct conv without conv_pad; OLD_PAD: the
   old build's with conv_pad (old and new conv_pad against each other); COLD: each timed call's weights (the packed
   weights, or Winograd's U) evicted from every cache level first (clflush), as inside a network whose weights outgrow the
   last-level cache (ResNet-50: ~100 MB per run) - the plan-time choice (kernels/nchwc.c conv_backend) times them hot. */
#include <cblas.h>
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/nchwc.h"
#include "../src/common.h"

extern const so_nchwc_impl cb_old, cb_new;

typedef struct bcase {
    const char *name;
    int C, H, O, k, s, res;
    int kh, kw; /* an asymmetric kernel (k unused, pads kh/2 and kw/2); 0: k x k */
    int g;      /* groups (0: 1) */
} bcase;

static const bcase cases[] = {
    {"l1 3x3 64 56", 64, 56, 64, 3, 1, 0},          {"l2 3x3 128 28", 128, 28, 128, 3, 1, 0},
    {"l3 3x3 256 14", 256, 14, 256, 3, 1, 0},       {"l4 3x3 512 7", 512, 7, 512, 3, 1, 0},
    {"l2.0 3x3/2 128 56", 128, 56, 128, 3, 2, 0},   {"l3.0 3x3/2 256 28", 256, 28, 256, 3, 2, 0},
    {"l4.0 3x3/2 512 14", 512, 14, 512, 3, 2, 0},   {"ds 1x1/2 256->512 56", 256, 56, 512, 1, 2, 0},
    {"ds 1x1/2 512->1024 28", 512, 28, 1024, 1, 2, 0}, {"ds 1x1/2 1024->2048 14", 1024, 14, 2048, 1, 2, 0},
    {"stem 7x7/2 3->64 224", 3, 224, 64, 7, 2, 0},  {"g 3x3 96->208 14", 96, 14, 208, 3, 1, 0},
    {"i3 3x3 32->64 147", 32, 147, 64, 3, 1, 0},    {"i3 3x3/2 288->384 35", 288, 35, 384, 3, 2, 0},
    {"d 3x3 128->32 56", 128, 56, 32, 3, 1, 0},     {"d 3x3 128->32 7", 128, 7, 32, 3, 1, 0},
    {"i3 1x7 192 17", 192, 17, 192, 0, 1, 0, 1, 7}, {"i3 7x1 192 17", 192, 17, 192, 0, 1, 0, 7, 1},
    {"i3 1x7 160 17", 160, 17, 160, 0, 1, 0, 1, 7}, {"i3 7x1 128->192 17", 128, 17, 192, 0, 1, 0, 7, 1},
    {"i3 1x3 384 8", 384, 8, 384, 0, 1, 0, 1, 3},   {"i3 3x1 384 8", 384, 8, 384, 0, 1, 0, 3, 1},
    {"i3 3x3 448->384 8", 448, 8, 384, 3, 1, 0},    {"i3 5x5 48->64 35", 48, 35, 64, 5, 1, 0},
    {"i3 3x3 64->96 35", 64, 35, 96, 3, 1, 0},      {"i3 3x3/2 192->320 17", 192, 17, 320, 3, 2, 0},
    {"g 5x5 16->32 28", 16, 28, 32, 5, 1, 0},
    /* RegNet-Y-400MF's grouped 3x3s (group width 8: one block per group at b = 8) and ResNeXt-50's (widths 8, 16, 32) */
    {"rg 3x3/2 48 112 g6", 48, 112, 48, 3, 2, 0, 0, 0, 6},    {"rg 3x3/2 104 56 g13", 104, 56, 104, 3, 2, 0, 0, 0, 13},
    {"rg 3x3 104 28 g13", 104, 28, 104, 3, 1, 0, 0, 0, 13},   {"rg 3x3/2 208 28 g26", 208, 28, 208, 3, 2, 0, 0, 0, 26},
    {"rg 3x3 208 14 g26", 208, 14, 208, 3, 1, 0, 0, 0, 26},   {"rg 3x3/2 440 14 g55", 440, 14, 440, 3, 2, 0, 0, 0, 55},
    {"rg 3x3 440 7 g55", 440, 7, 440, 3, 1, 0, 0, 0, 55},     {"rx 3x3 256 28 g32", 256, 28, 256, 3, 1, 0, 0, 0, 32},
    {"rx 3x3 512 14 g32", 512, 14, 512, 3, 1, 0, 0, 0, 32},   {"rx 3x3 1024 7 g32", 1024, 7, 1024, 3, 1, 0, 0, 0, 32},
    /* SqueezeNet 1.1's 3x3 expands */
    {"sq 3x3 16->64 55", 16, 55, 64, 3, 1, 0},      {"sq 3x3 32->128 27", 32, 27, 128, 3, 1, 0},
    {"sq 3x3 48->192 13", 48, 13, 192, 3, 1, 0},    {"sq 3x3 64->256 13", 64, 13, 256, 3, 1, 0},
};

static void fill(float *p, int64_t n, uint64_t *s)
{
    for (int64_t i = 0; i < n; i++) {
        *s = *s * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (float)((*s >> 40) & 0xffff) / 65536.0f - 0.5f;
    }
}

static int cmpd(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Evicts n bytes at q from every cache level (clflush), as a network's weights arrive from memory (COLD=1). */
static void evict(const void *q, size_t n)
{
    for (size_t i = 0; i < n; i += 64) _mm_clflush((const char *)q + i);
    _mm_mfence();
}

int main(int argc, char **argv)
{
    const int rounds = argc > 1 ? atoi(argv[1]) : 9, T = argc > 2 ? atoi(argv[2]) : 1;
    const char *filt = argc > 3 ? argv[3] : NULL;
    const so_nchwc_impl *Ls[2] = {&cb_old, &cb_new};
    const int use_pad = !getenv("NO_PAD"); /* the new build's direct conv: conv_pad where it applies (the old: conv) */
    const int old_pad = getenv("OLD_PAD") != NULL; /* the old build's direct conv on conv_pad too (both trees have it) */
    const int cold = getenv("COLD") != NULL; /* each call's weights (packed, or Winograd's U) evicted from every cache level first */
    uint64_t seed = 7;
    if (!filt) {
        const int n = 1024;
        float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n), *cc = malloc(sizeof(float) * n * n);
        fill(a, (int64_t)n * n, &seed), fill(b, (int64_t)n * n, &seed);
        openblas_set_num_threads(T);
        double bt = 1e30;
        for (int r = 0; r < 6; r++) {
            const double t0 = so_cpu_now();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, cc, n);
            const double t = (so_cpu_now() - t0) * 1e3;
            if (r && t < bt) bt = t;
        }
        printf("sgemm 1024^3 (OpenBLAS %s): %.1f GFLOP/s, thread CPU time\n", openblas_get_corename(), 2.0 * n * n * n / bt * 1e-6);
        free(a), free(b), free(cc);
    }
    printf("avx2 b=8, %d thread(s), %d interleaved rounds, thread CPU time per call; min ms (direct-conv GFLOP/s) old | new, median "
           "ratio new/old\n",
           T, rounds);
    double *rat = malloc(sizeof(double) * (size_t)rounds);
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const bcase *k = &cases[ci];
        if (filt && !strstr(k->name, filt)) continue;
        const int kh = k->kh ? k->kh : k->k, kw = k->kw ? k->kw : k->k;
        const int64_t ph = kh / 2, pw = kw / 2, Ho = (k->H + 2 * ph - kh) / k->s + 1, Wo = (k->H + 2 * pw - kw) / k->s + 1, N = 1;
        const int grp = k->g ? k->g : 1;
        const int64_t nw = (int64_t)k->O * (k->C / grp) * kh * kw;
        float *w = malloc(sizeof(float) * (size_t)nw), *bias = malloc(sizeof(float) * (size_t)k->O);
        fill(w, nw, &seed), fill(bias, k->O, &seed);
        so_epi ep = {0};
        ep.shift = bias, ep.act1 = SO_ACT_RELU, ep.has_res = k->res;
        so_nchwc_conv p[3];
        int have[3] = {1, 0, 0};
        for (int c = 0; c < 3; c++)
            so_nchwc_conv_plan(&p[c], 8, k->C, k->H, k->H, k->O, Ho, Wo, kh, kw, k->s, k->s, ph, pw, 1, 1, grp, w, &ep);
        if (kh == 3 && kw == 3 && k->s == 1 && grp == 1) have[1] = so_nchwc_conv_wino(&p[1], w, 4) == 0, have[2] = so_nchwc_conv_wino(&p[2], w, 2) == 0;
        const int64_t nx = so_nchwc_numel(8, N, k->C, (int64_t)k->H * k->H), ny = so_nchwc_numel(8, N, k->O, Ho * Wo);
        float *x = aligned_alloc(64, (size_t)(nx * 4 + 63) / 64 * 64), *y = aligned_alloc(64, (size_t)(ny * 4 + 63) / 64 * 64);
        float *xp = malloc(sizeof(float) * (size_t)(N * k->C * k->H * k->H));
        fill(x, nx, &seed);
        fill(xp, N * k->C * k->H * k->H, &seed);
        int64_t ns = so_nchwc_pad_scratch(&p[0]) + 1;
        for (int c = 1; c < 3; c++)
            if (have[c] && so_nchwc_wino_scratch(&p[c], T) > ns) ns = so_nchwc_wino_scratch(&p[c], T);
        float *sc = aligned_alloc(64, (size_t)(ns * 4 + 63) / 64 * 64);
        const double gf = 2.0 * (double)nw * (double)(Ho * Wo) * N * 1e-6;
        if (k->C > 4 && so_nchwc_pad_ok(&p[0])) { /* the new direct path against the old one */
            float *y2 = aligned_alloc(64, (size_t)(ny * 4 + 63) / 64 * 64);
            if (old_pad) cb_old.conv_pad(&p[0], N, x, y2, NULL, sc, T);
            else cb_old.conv(&p[0], N, x, y2, NULL, T);
            if (use_pad) cb_new.conv_pad(&p[0], N, x, y, NULL, sc, T);
            else cb_new.conv(&p[0], N, x, y, NULL, T);
            double md = 0;
            for (int64_t i = 0; i < ny; i++) md = fabs((double)y[i] - y2[i]) > md ? fabs((double)y[i] - y2[i]) : md;
            printf("[max |new - old| %.3g] ", md);
            free(y2);
        }
        printf("%-24s", k->name);
        for (int c = 0; c < 3; c++) {
            if (!have[c]) continue;
            double best[2] = {1e30, 1e30};
            int nr = 0;
            for (int r = 0; r < rounds + 1; r++) {
                double t[2];
                for (int o = 0; o < 2; o++) {
                    const int v = (r & 1) ? 1 - o : o;
                    const so_nchwc_impl *L = Ls[v];
                    if (cold) evict(c ? (const void *)p[c].wu : (const void *)p[0].wp, c ? so_nchwc_wino_bytes(&p[c]) : so_nchwc_packed_bytes(&p[0]));
                    const double t0 = so_cpu_now();
                    if (c == 0 && k->C <= 4) L->stem(&p[0], N, xp, y, T);
                    else if (c == 0 && (v == 1 ? use_pad : old_pad) && so_nchwc_pad_ok(&p[0])) L->conv_pad(&p[0], N, x, y, NULL, sc, T);
                    else if (c == 0) L->conv(&p[0], N, x, y, NULL, T);
                    else L->wino(&p[c], N, x, y, NULL, sc, T);
                    t[v] = (so_cpu_now() - t0) * 1e3;
                }
                if (!r) continue; /* warm-up */
                for (int v = 0; v < 2; v++)
                    if (t[v] < best[v]) best[v] = t[v];
                rat[nr++] = t[1] / t[0];
            }
            qsort(rat, (size_t)nr, sizeof *rat, cmpd);
            printf("  %s %.3f|%.3f ms (%.0f|%.0f) %.3f", c == 0 ? "dir" : c == 1 ? "F4" : "F2", best[0], best[1], gf / best[0], gf / best[1],
                   rat[nr / 2]);
        }
        printf("\n");
        fflush(stdout);
        for (int c = 0; c < 3; c++) so_nchwc_conv_free(&p[c]);
        free(w), free(bias), free(x), free(y), free(xp), free(sc);
    }
    free(rat);
    return 0;
}
