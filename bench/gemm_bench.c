/* gemm_bench.c - so_gemm (B packed once, as at load) vs a library sgemm (OpenBLAS's cblas_sgemm, or oneDNN's dnnl_sgemm with GEMM_REF=onednn) on BERT's, ConvNeXt-T's (its eight pointwise MatMuls) and ResNet-50's shapes and 2048^3: paired, interleaved rounds, median GFLOP/s and median per-round ratio. Build: bash bench/gemm_bench.sh */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gemm.h"
#include "common.h"
#ifdef SO_BENCH_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

/* The library side of each comparison: row-major C = A B (no transposes). */
static int use_dnnl;
static void ref_sgemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc)
{
#ifdef SO_BENCH_DNNL
    if (use_dnnl) {
        dnnl_sgemm('N', 'N', M, N, K, 1.f, A, lda, B, ldb, 0.f, C, ldc);
        return;
    }
#endif
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.f, A, (int)lda, B, (int)ldb, 0.f, C, (int)ldc);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct shape {
    const char *name;
    int M, N, K, batch;
} shape;

/* Conv shapes (ResNet-50's 1x1 and im2col convs): cblas_sgemm on the image (1x1) or after an
   im2col into a buffer, against so_gemm_apacked with the weights packed ahead and B packed
   from the image. */
typedef struct cshape {
    const char *name;
    int O, C, H, k, s, p;
} cshape;

/* One result line: median GFLOP/s of each side, median per-round ratio, and the largest
   relative difference between the two outputs (n floats). */
static void report(const char *name, double *g1, double *g2, double *rat, int rounds, const float *y1, const float *y2,
                   int64_t n)
{
    double maxrel = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)y1[i] - y2[i]) / (fabs((double)y1[i]) + 1e-3);
        if (d > maxrel) maxrel = d;
    }
    printf("%-30s %9.1f GF %9.1f GF %7.3fx %10.2e\n", name, so_median(g1, (size_t)rounds), so_median(g2, (size_t)rounds), so_median(rat, (size_t)rounds), maxrel);
    fflush(stdout);
}

static void im2col_ref(const so_gemm_conv *cv, const float *X, float *col)
{
    int64_t hw = cv->Ho * cv->Wo;
    for (int64_t c = 0; c < cv->C; c++)
        for (int64_t i = 0; i < cv->kh; i++)
            for (int64_t j = 0; j < cv->kw; j++) {
                float *d = col + ((c * cv->kh + i) * cv->kw + j) * hw;
                for (int64_t oh = 0; oh < cv->Ho; oh++)
                    for (int64_t ow = 0; ow < cv->Wo; ow++) {
                        int64_t ih = oh * cv->sh - cv->ph + i, iw = ow * cv->sw - cv->pw + j;
                        d[oh * cv->Wo + ow] = ih >= 0 && ih < cv->H && iw >= 0 && iw < cv->W ? X[(c * cv->H + ih) * cv->W + iw] : 0.f;
                    }
            }
}

static void conv_bench(int threads, int rounds, const char *only)
{
    static const cshape cs[] = {
        {"1x1 64<-256 56x56", 64, 256, 56, 1, 1, 0},    {"1x1 256<-64 56x56", 256, 64, 56, 1, 1, 0},
        {"1x1 128<-512 28x28", 128, 512, 28, 1, 1, 0},  {"1x1 512<-128 28x28", 512, 128, 28, 1, 1, 0},
        {"1x1 256<-1024 14x14", 256, 1024, 14, 1, 1, 0}, {"1x1 1024<-256 14x14", 1024, 256, 14, 1, 1, 0},
        {"1x1 512<-2048 7x7", 512, 2048, 7, 1, 1, 0},   {"1x1 2048<-512 7x7", 2048, 512, 7, 1, 1, 0},
        {"3x3 256 14x14", 256, 256, 14, 3, 1, 1},       {"3x3 512 7x7", 512, 512, 7, 3, 1, 1},
        {"3x3 s2 128 56->28", 128, 128, 56, 3, 2, 1},   {"3x3 s2 256 28->14", 256, 256, 28, 3, 2, 1},
    };
    printf("conv: %s sgemm (+ im2col buffer) vs so_gemm_apacked (weights packed ahead, B from the image)\n", use_dnnl ? "oneDNN" : "OpenBLAS");
    for (size_t q = 0; q < sizeof cs / sizeof *cs; q++) {
        const cshape *c = &cs[q];
        if (only && !strstr(c->name, only)) continue;
        so_gemm_conv cv = {.C = c->C, .H = c->H, .W = c->H, .kh = c->k, .kw = c->k, .sh = c->s, .sw = c->s, .ph = c->p, .pw = c->p,
                           .dh = 1, .dw = 1};
        cv.Ho = (c->H + 2 * c->p - c->k) / c->s + 1;
        cv.Wo = cv.Ho;
        int64_t M = c->O, N = cv.Ho * cv.Wo, K = c->C * c->k * c->k;
        float *X = malloc(sizeof *X * (size_t)(c->C * c->H * c->H)), *Wt = malloc(sizeof *Wt * (size_t)(M * K));
        float *col = malloc(sizeof *col * (size_t)(K * N)), *Y1 = malloc(sizeof *Y1 * (size_t)(M * N)), *Y2 = malloc(sizeof *Y2 * (size_t)(M * N));
        for (int64_t i = 0; i < c->C * c->H * c->H; i++) X[i] = (float)((i * 7919) % 1001) / 1001.f - 0.5f;
        for (int64_t i = 0; i < M * K; i++) Wt[i] = (float)((i * 104729) % 997) / 997.f - 0.5f;
        float *Ap = aligned_alloc(64, (so_gemm_packed_a_floats(M, K) * 4 + 63) / 64 * 64);
        so_gemm_pack_a(M, K, Wt, K, Ap);
        float *scr = aligned_alloc(64, (so_gemm_apacked_scratch_floats(M, N, K, threads) * 4 + 63) / 64 * 64);
        so_gemm_bsrc src = {.B = X, .ldb = N, .conv = c->k == 1 && c->s == 1 ? NULL : &cv};
        double flop = 2.0 * (double)M * N * K;
        int reps = (int)(1e9 / flop) + 3;
        double *g1 = malloc(sizeof(double) * (size_t)rounds), *g2 = malloc(sizeof(double) * (size_t)rounds),
               *rat = malloc(sizeof(double) * (size_t)rounds);
        for (int r = -1; r < rounds; r++) {
            double t1 = 1e30, t2 = 1e30;
            for (int qq = 0; qq < 2 * reps; qq++) {
                int which = (qq + r) & 1;
                double t0 = now();
                if (which == 0) {
                    const float *B = X;
                    if (src.conv) { im2col_ref(&cv, X, col); B = col; }
                    ref_sgemm(M, N, K, Wt, K, B, N, Y1, N);
                } else {
                    so_gemm_apacked(M, N, K, Ap, &src, 0.f, Y2, N, NULL, scr, threads);
                }
                double dt = now() - t0;
                if (which == 0) { if (dt < t1) t1 = dt; } else if (dt < t2) t2 = dt;
            }
            if (r < 0) continue;
            g1[r] = flop / t1 / 1e9;
            g2[r] = flop / t2 / 1e9;
            rat[r] = t1 / t2;
        }
        report(c->name, g1, g2, rat, rounds, Y1, Y2, M * N);
        free(X); free(Wt); free(col); free(Y1); free(Y2); free(Ap); free(scr); free(g1); free(g2); free(rat);
    }
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1, rounds = argc > 2 ? atoi(argv[2]) : 7;
    const char *only = argc > 3 ? argv[3] : NULL;
    /* COLD=1: each call reads a different copy of B (copies spanning > 64 MB, twice L3), as in a
       model whose weights do not fit in L3 */
    int cold = getenv("COLD") && atoi(getenv("COLD"));
    if (getenv("GEMM_KC")) so_gemm_kc = atoll(getenv("GEMM_KC"));
    if (getenv("GEMM_MC")) so_gemm_mc = atoll(getenv("GEMM_MC"));
    if (getenv("GEMM_NC")) so_gemm_nc_bytes = atoll(getenv("GEMM_NC"));
    if (getenv("GEMM_DIRECT_A")) so_gemm_direct_a = atoi(getenv("GEMM_DIRECT_A"));
    if (getenv("GEMM_APNC")) so_gemm_ap_nc = atoll(getenv("GEMM_APNC"));
    if (getenv("GEMM_REF") && !strcmp(getenv("GEMM_REF"), "onednn")) {
#ifdef SO_BENCH_DNNL
        use_dnnl = 1;
#else
        fprintf(stderr, "gemm_bench: built without oneDNN (libdnnl-dev's oneapi/dnnl/dnnl.h not found)\n");
        return 1;
#endif
    }
    openblas_set_num_threads(threads);
    omp_set_num_threads(threads);
    static const shape shapes[] = {
        {"qkvo [64,768]x[768,768]", 64, 768, 768, 1},
        {"ff1 [64,768]x[768,3072]", 64, 3072, 768, 1},
        {"ff2 [64,3072]x[3072,768]", 64, 768, 3072, 1},
        {"attn 12x[64,64]x[64,64]", 64, 64, 64, 12},
        {"cls [1..] [5,512]x[512,4096]", 5, 4096, 512, 1},
        {"odd [67,1001]x[1001,333]", 67, 333, 1001, 1},
        {"mid [128,768]x[768,768]", 128, 768, 768, 1},
        {"mid [256,768]x[768,768]", 256, 768, 768, 1},
        {"mid [512,768]x[768,768]", 512, 768, 768, 1},
        {"mid [1024,1024]x[1024,1024]", 1024, 1024, 1024, 1},
        {"cnx1a [3136,96]x[96,384]", 3136, 384, 96, 1},
        {"cnx1b [3136,384]x[384,96]", 3136, 96, 384, 1},
        {"cnx2a [784,192]x[192,768]", 784, 768, 192, 1},
        {"cnx2b [784,768]x[768,192]", 784, 192, 768, 1},
        {"cnx3a [196,384]x[384,1536]", 196, 1536, 384, 1},
        {"cnx3b [196,1536]x[1536,384]", 196, 384, 1536, 1},
        {"cnx4a [49,768]x[768,3072]", 49, 3072, 768, 1},
        {"cnx4b [49,3072]x[3072,768]", 49, 768, 3072, 1},
        {"sq 2048^3", 2048, 2048, 2048, 1},
        {"tall [4096,1024]x[1024,256]", 4096, 256, 1024, 1},
        {"tall [2048,512]x[512,2048]", 2048, 2048, 512, 1},
        {"tall [12544,64]x[64,64]", 12544, 64, 64, 1},
    };
    printf("threads %d, rounds %d, KC %lld, MC %lld, NC bytes %lld, %s B\n", threads, rounds, (long long)so_gemm_kc,
           (long long)so_gemm_mc, (long long)so_gemm_nc_bytes,
           cold ? "cold (> 64 MB of copies)" : "warm");
    printf("%-30s %12s %12s %8s %10s\n", "shape", use_dnnl ? "onednn" : "openblas", "so_gemm", "ratio", "maxrel");
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const shape *sh = &shapes[s];
        if (only && !strstr(sh->name, only)) continue;
        int64_t M = sh->M, N = sh->N, K = sh->K, nb = sh->batch;
        int64_t ncp = cold ? ((int64_t)64 << 20) / (K * N * nb * 4) + 1 : 1, cp = 0;
        float *A = malloc(sizeof *A * (size_t)(M * K * nb)), *B = malloc(sizeof *B * (size_t)(K * N * nb * ncp));
        float *C1 = malloc(sizeof *C1 * (size_t)(M * N * nb)), *C2 = malloc(sizeof *C2 * (size_t)(M * N * nb));
        for (int64_t i = 0; i < M * K * nb; i++) A[i] = (float)((i * 7919) % 1001) / 1001.f - 0.5f;
        for (int64_t i = 0; i < K * N * nb; i++) B[i] = (float)((i * 104729) % 997) / 997.f - 0.5f;
        for (int64_t q = 1; q < ncp; q++) memcpy(B + q * K * N * nb, B, sizeof *B * (size_t)(K * N * nb));
        size_t pbf = so_gemm_packed_b_floats(K, N);
        float *Bp = aligned_alloc(64, (pbf * (size_t)(nb * ncp) * 4 + 63) / 64 * 64);
        for (int64_t b = 0; b < nb * ncp; b++) so_gemm_pack_b(0, K, N, B + b * K * N, N, Bp + b * pbf);
        size_t scf = so_gemm_scratch_floats(M, K, threads);
        float *scr = aligned_alloc(64, (scf * 4 + 63) / 64 * 64);
        double flop = 2.0 * (double)M * N * K * nb;
        int reps = (int)(1e9 / flop) + 3; /* timed calls of each per round */
        double *g1 = malloc(sizeof(double) * (size_t)rounds), *g2 = malloc(sizeof(double) * (size_t)rounds),
               *rat = malloc(sizeof(double) * (size_t)rounds);
        for (int r = -1; r < rounds; r++) {
            /* one call of each, alternating, reps times: the per-round minimum of each (robust to
               preemption on the shared machine) */
            double t1 = 1e30, t2 = 1e30;
            for (int q = 0; q < 2 * reps; q++) {
                int which = (q + r) & 1;
                float *Bq = B + cp * K * N * nb, *Bpq = Bp + cp * pbf * nb;
                if (which) cp = (cp + 1) % ncp;
                double t0 = now();
                if (which == 0) {
                    for (int64_t b = 0; b < nb; b++)
                        ref_sgemm(M, N, K, A + b * M * K, K, Bq + b * K * N, N, C1 + b * M * N, N);
                } else {
                    for (int64_t b = 0; b < nb; b++)
                        so_gemm_packed(0, M, N, K, 1.f, A + b * M * K, K, Bpq + b * pbf, 0.f, C2 + b * M * N, N, NULL, scr,
                                       threads);
                }
                double dt = now() - t0;
                if (which == 0) { if (dt < t1) t1 = dt; } else if (dt < t2) t2 = dt;
            }
            if (r < 0) continue;
            g1[r] = flop / t1 / 1e9;
            g2[r] = flop / t2 / 1e9;
            rat[r] = t1 / t2;
        }
        report(sh->name, g1, g2, rat, rounds, C1, C2, M * N * nb);
        free(A); free(B); free(C1); free(C2); free(Bp); free(scr); free(g1); free(g2); free(rat);
    }
    if (!only || !strcmp(only, "conv") || strstr(only, "x")) conv_bench(threads, rounds, only && strcmp(only, "conv") ? only : NULL);
    return 0;
}
