/* sgemm_peak.c - measures cblas_sgemm GFLOP/s (or oneDNN's dnnl_sgemm with SGEMM=onednn, built with -DSO_BENCH_DNNL -ldnnl) on an N x N x N product (best of R runs) at T threads: the machine's practical peak for the kernel benchmarks. */
#include <cblas.h>
#include <string.h>
#ifdef SO_BENCH_DNNL
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2048, threads = argc > 2 ? atoi(argv[2]) : 1, reps = argc > 3 ? atoi(argv[3]) : 5;
    if (n <= 0 || threads <= 0 || reps <= 0) {
        fprintf(stderr, "usage: sgemm_peak [N [THREADS [REPS]]]\n");
        return 2;
    }
    openblas_set_num_threads(threads);
    int dnnl = getenv("SGEMM") && !strcmp(getenv("SGEMM"), "onednn");
#ifdef SO_BENCH_DNNL
    omp_set_num_threads(threads);
#else
    if (dnnl) {
        fprintf(stderr, "sgemm_peak: built without oneDNN\n");
        return 1;
    }
#endif
    size_t nn = (size_t)n * (size_t)n;
    float *a = malloc(nn * sizeof *a), *b = malloc(nn * sizeof *b), *c = malloc(nn * sizeof *c);
    if (!a || !b || !c) {
        fprintf(stderr, "sgemm_peak: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < nn; i++) {
        a[i] = 1e-3f * (float)(i % 7);
        b[i] = 1e-3f * (float)(i % 5);
    }
    double best = 1e30, sum = 0;
    for (int r = 0; r <= reps; r++) {
        double t = now();
#ifdef SO_BENCH_DNNL
        if (dnnl)
            dnnl_sgemm('N', 'N', n, n, n, 1.f, a, n, b, n, 0.f, c, n);
        else
#endif
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a, n, b, n, 0.f, c, n);
        t = now() - t;
        if (r == 0) continue; /* warm-up */
        if (t < best) best = t;
        sum += (double)c[(size_t)r % nn];
    }
    printf("{\"n\": %d, \"threads\": %d, \"sgemm\": \"%s\", \"gflops\": %.2f, \"check\": %g}\n", n, threads, dnnl ? "onednn" : "openblas", 2.0 * n * (double)n * n / best / 1e9, sum);
    free(a);
    free(b);
    free(c);
    return 0;
}
