/* test_gemm.c - so_gemm (kernels/gemm.c) against a naive double-precision reference: random and edge shapes, transposes, alpha/beta, every epilogue, small and default blocking, 1 and 2 threads (bitwise equal); the OpenBLAS core classifier and so_sgemm routed around an OpenBLAS below our level (kernels/blas.h) onto so_gemv / so_gemm. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <omp.h>

#include "../kernels/blas.h"
#include "../kernels/fast.h"
#include "../kernels/gemm.h"
#include "../kernels/gemv.h"
#include "../kernels/sgemm.h"
#include "isa_levels.h"

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}
static float frand(uint64_t *s) { return (float)((rnd(s) >> 40) * (1.0 / 16777216.0) * 2.0 - 1.0); }
static int irand(uint64_t *s, int lo, int hi) { return lo + (int)(rnd(s) % (uint64_t)(hi - lo + 1)); }

static double act_ref(int act, double x, double lo, double hi)
{
    switch (act) {
    case SO_ACT_RELU: return x > 0 ? x : 0;
    case SO_ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case SO_ACT_TANH: return tanh(x);
    case SO_ACT_CLIP: return x < lo ? lo : x > hi ? hi : x;
    default: return x;
    }
}

typedef struct gcase {
    int64_t M, N, K;
    int ta, tb;
    float alpha, beta;
    int use_ep, per_row, use_scale, use_shift, act1, act2, use_res;
} gcase;

static void *xalloc(size_t floats)
{
    void *p = aligned_alloc(64, (floats * sizeof(float) + 64) / 64 * 64);
    assert_non_null(p);
    return p;
}

/* Runs one case through both entry points (packed B, unpacked B) at 1 and 2 threads and
   checks each against the reference; the 2-thread results must equal the 1-thread ones. */
static void run_case(const gcase *c, uint64_t *seed)
{
    int64_t M = c->M, N = c->N, K = c->K;
    int64_t lda = (c->ta ? M : K) + (rnd(seed) % 3), ldb = (c->tb ? K : N) + (rnd(seed) % 3), ldc = N + (rnd(seed) % 3);
    size_t na = (size_t)((c->ta ? K : M) * lda), nbf = (size_t)((c->tb ? N : K) * ldb), nc = (size_t)(M * ldc);
    float *A = xalloc(na + 1), *B = xalloc(nbf + 1), *C0 = xalloc(nc + 1), *R = xalloc(nc + 1);
    float *scale = xalloc((size_t)(M > N ? M : N)), *shift = xalloc((size_t)(M > N ? M : N));
    for (size_t i = 0; i < na; i++) A[i] = frand(seed);
    for (size_t i = 0; i < nbf; i++) B[i] = frand(seed);
    for (size_t i = 0; i < nc; i++) C0[i] = frand(seed), R[i] = frand(seed);
    for (int64_t i = 0; i < (M > N ? M : N); i++) scale[i] = 0.5f + frand(seed), shift[i] = frand(seed);
    so_epi ep = {.scale = c->use_scale ? scale : NULL, .shift = c->use_shift ? shift : NULL, .act1 = c->act1, .act2 = c->act2,
                 .lo1 = -0.3f, .hi1 = 0.4f, .lo2 = -0.2f, .hi2 = 0.5f, .has_res = c->use_res};
    so_gemm_epi ge = {.ep = c->use_ep ? &ep : NULL, .per_row = c->per_row, .res = c->use_res ? R : NULL, .ldr = ldc};
    /* reference */
    double *ref = calloc((size_t)(M * N) + 1, sizeof *ref);
    double maxabs = 0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++) {
                double a = c->ta ? A[k * lda + i] : A[i * lda + k], b = c->tb ? B[j * ldb + k] : B[k * ldb + j];
                s += a * b;
            }
            double y = c->alpha * s + (c->beta != 0.f ? (double)c->beta * C0[i * ldc + j] : 0.0);
            if (c->use_ep) {
                int64_t ch = c->per_row ? i : j;
                y = y * (ep.scale ? ep.scale[ch] : 1.0) + (ep.shift ? ep.shift[ch] : 0.0);
                y = act_ref(ep.act1, y, ep.lo1, ep.hi1);
            }
            if (c->use_res) {
                y += R[i * ldc + j];
                if (c->use_ep) y = act_ref(ep.act2, y, ep.lo2, ep.hi2);
            }
            ref[i * N + j] = y;
            if (fabs(y) > maxabs) maxabs = fabs(y);
        }
    float *C1 = xalloc(nc + 1), *C2 = xalloc(nc + 1);
    size_t pbf = so_gemm_packed_b_floats(K, N);
    float *Bp = xalloc(pbf + 1);
    so_gemm_pack_b(c->tb, K, N, B, ldb, Bp);
    float *scr = xalloc(so_gemm_full_scratch_floats(M, N, K, 2) + so_gemm_apacked_scratch_floats(M, N, K, 2) + 16);
    /* path 0: B packed ahead; 1: B packed per call; 2: A packed ahead (weights-as-A, no
       transposes, alpha 1) */
    int npath = !c->ta && !c->tb && c->alpha == 1.f ? 3 : 2;
    float *Ap = xalloc(so_gemm_packed_a_floats(M, K) + 1);
    if (npath == 3) so_gemm_pack_a(M, K, A, lda, Ap);
    for (int path = 0; path < npath; path++) {
        for (int threads = 1; threads <= 2; threads++) {
            float *C = threads == 1 ? C1 : C2;
            memcpy(C, C0, nc * sizeof *C);
            if (c->beta == 0.f) /* stale NaN must not leak through beta = 0 */
                for (size_t i = 0; i < nc; i++) C[i] = NAN;
            if (path == 0) {
                so_gemm_packed(c->ta, M, N, K, c->alpha, A, lda, Bp, c->beta, C, ldc, &ge, scr, threads);
            } else if (path == 2) {
                so_gemm_bsrc src = {.B = B, .ldb = ldb};
                so_gemm_apacked(M, N, K, Ap, &src, c->beta, C, ldc, &ge, scr, threads);
            } else
                so_gemm(c->ta, c->tb, M, N, K, c->alpha, A, lda, B, ldb, c->beta, C, ldc, &ge, scr, threads);
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    double d = fabs(C[i * ldc + j] - ref[i * N + j]);
                    double tol = 1e-4 * (fabs(ref[i * N + j]) + 1e-2 * maxabs) + 1e-6 * (double)(K + 1) / 64;
                    if (!(d <= tol)) {
                        fail_msg("M=%lld N=%lld K=%lld ta=%d tb=%d path=%d threads=%d: C[%lld,%lld] = %g, ref %g", (long long)M,
                                 (long long)N, (long long)K, c->ta, c->tb, path, threads, (long long)i, (long long)j,
                                 (double)C[i * ldc + j], ref[i * N + j]);
                    }
                }
        }
        for (int64_t i = 0; i < M; i++) /* 1 and 2 threads: bitwise equal */
            assert_memory_equal(C1 + i * ldc, C2 + i * ldc, (size_t)N * sizeof(float));
    }
    free(A); free(B); free(C0); free(R); free(scale); free(shift); free(ref); free(C1); free(C2); free(Bp); free(scr); free(Ap);
}

static void test_edge_shapes(void **state)
{
    (void)state;
    uint64_t seed = 0x1234567ull;
    static const int64_t dims[] = {1, 2, 5, 6, 7, 15, 16, 17, 33};
    for (size_t a = 0; a < sizeof dims / sizeof *dims; a++)
        for (size_t b = 0; b < sizeof dims / sizeof *dims; b++)
            for (size_t k = 0; k < sizeof dims / sizeof *dims; k++) {
                gcase c = {.M = dims[a], .N = dims[b], .K = dims[k], .ta = (int)((a + k) & 1), .tb = (int)((b + k) & 1),
                           .alpha = 1.f, .beta = (k % 3) == 0 ? 0.f : 1.f};
                run_case(&c, &seed);
            }
}

static void test_blocking(void **state)
{
    (void)state;
    uint64_t seed = 0xfeedull;
    int64_t kc0 = so_gemm_kc, mc0 = so_gemm_mc, nc0 = so_gemm_nc_bytes;
    /* several K, M and column blocks (small KC/MC/NC), then the default blocking on sizes past
       them; M <= MC takes the whole-A path, M > MC the blocked one */
    static const int64_t blk[][3] = {{7, 6, 1}, {16, 12, 2048}, {1, 1, 4096}, {256, 144, 192 << 10}, {40, 200, 5000}};
    for (size_t q = 0; q < sizeof blk / sizeof *blk; q++) {
        so_gemm_kc = blk[q][0];
        so_gemm_mc = blk[q][1];
        so_gemm_nc_bytes = blk[q][2];
        for (int it = 0; it < 6; it++) {
            gcase c = {.M = irand(&seed, 1, 160), .N = irand(&seed, 1, 90), .K = irand(&seed, 1, 300), .ta = it & 1,
                       .tb = (it >> 1) & 1, .alpha = it == 3 ? 0.5f : 1.f, .beta = it % 3 == 0 ? 0.f : it % 3 == 1 ? 1.f : -0.7f};
            run_case(&c, &seed);
        }
    }
    so_gemm_kc = kc0;
    so_gemm_mc = mc0;
    so_gemm_nc_bytes = nc0;
    gcase big = {.M = 301, .N = 77, .K = 600, .alpha = 1.f, .beta = 0.f};
    run_case(&big, &seed);
    gcase bert = {.M = 64, .N = 200, .K = 768, .alpha = 1.f, .beta = 0.f, .use_ep = 1, .use_shift = 1, .act1 = SO_ACT_RELU};
    run_case(&bert, &seed);
    /* M = 6q + 4 read in place: at avx2 its last 10 rows are two 5-row tiles (ukernel_5), here with an N edge
       (37 = 2 x 16 + 5), three K blocks (alpha, beta applied per block) and the residual epilogue */
    gcase five = {.M = 70, .N = 37, .K = 900, .alpha = 0.5f, .beta = 1.5f, .use_ep = 1, .use_shift = 1, .act1 = SO_ACT_CLIP,
                  .use_res = 1};
    run_case(&five, &seed);
    /* few column panels, many rows: the weights-as-A path splits the rows over the threads */
    gcase rows = {.M = 130, .N = 40, .K = 300, .alpha = 1.f, .beta = 0.f, .use_ep = 1, .per_row = 1, .use_shift = 1,
                  .act1 = SO_ACT_CLIP, .use_res = 1};
    run_case(&rows, &seed);
}

static void test_epilogues(void **state)
{
    (void)state;
    uint64_t seed = 0xabcdefull;
    for (int per_row = 0; per_row < 2; per_row++)
        for (int act1 = 0; act1 < SO_ACT_COUNT; act1++)
            for (int v = 0; v < 4; v++) {
                gcase c = {.M = irand(&seed, 1, 40), .N = irand(&seed, 1, 70), .K = irand(&seed, 1, 50), .ta = v & 1,
                           .tb = per_row, .alpha = 1.f, .beta = v == 2 ? 1.f : 0.f, .use_ep = 1, .per_row = per_row,
                           .use_scale = v & 1, .use_shift = v != 0, .act1 = act1, .act2 = v == 3 ? (act1 + 1) % SO_ACT_COUNT : 0,
                           .use_res = v >= 2};
                run_case(&c, &seed);
            }
    /* residual without scale/shift/activations; K = 0 (C = beta C, then the epilogue) */
    gcase r = {.M = 13, .N = 29, .K = 40, .alpha = 1.f, .use_res = 1};
    run_case(&r, &seed);
    gcase k0 = {.M = 9, .N = 18, .K = 0, .alpha = 1.f, .beta = 0.5f, .use_ep = 1, .use_shift = 1, .act1 = SO_ACT_TANH};
    run_case(&k0, &seed);
}

static void test_random(void **state)
{
    (void)state;
    uint64_t seed = 0x5eed5eedull;
    for (int it = 0; it < 40; it++) {
        gcase c = {.M = irand(&seed, 1, 130), .N = irand(&seed, 1, 130), .K = irand(&seed, 1, 400), .ta = irand(&seed, 0, 1),
                   .tb = irand(&seed, 0, 1), .alpha = it % 5 == 0 ? 1.5f : 1.f, .beta = it % 4 == 0 ? 0.25f : 0.f,
                   .use_ep = it & 1, .per_row = (it >> 1) & 1, .use_scale = (it >> 2) & 1, .use_shift = 1,
                   .act1 = it % SO_ACT_COUNT, .use_res = (it >> 3) & 1};
        run_case(&c, &seed);
    }
}

/* Implicit im2col (weights as A, B packed from the image) against a direct convolution. */
static void test_conv(void **state)
{
    (void)state;
    uint64_t seed = 0xc0ffeeull;
    int64_t kc0 = so_gemm_kc, nc0 = so_gemm_ap_nc, mc0 = so_gemm_mc;
    for (int it = 0; it < 60; it++) {
        so_gemm_conv cv = {.C = irand(&seed, 1, 9), .H = irand(&seed, 1, 13), .W = irand(&seed, 1, 13), .kh = irand(&seed, 1, 3),
                           .kw = irand(&seed, 1, 3), .sh = irand(&seed, 1, 2), .sw = irand(&seed, 1, 3), .ph = irand(&seed, 0, 2),
                           .pw = irand(&seed, 0, 2), .dh = irand(&seed, 1, 2), .dw = irand(&seed, 1, 2)};
        if (it == 0) cv = (so_gemm_conv){.C = 37, .H = 14, .W = 14, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1, .dh = 1, .dw = 1};
        int64_t ekh = (cv.kh - 1) * cv.dh + 1, ekw = (cv.kw - 1) * cv.dw + 1;
        if (cv.H + 2 * cv.ph < ekh || cv.W + 2 * cv.pw < ekw) continue;
        cv.Ho = (cv.H + 2 * cv.ph - ekh) / cv.sh + 1;
        cv.Wo = (cv.W + 2 * cv.pw - ekw) / cv.sw + 1;
        int64_t O = it == 0 ? 70 : irand(&seed, 1, 20), K = cv.C * cv.kh * cv.kw, hw = cv.Ho * cv.Wo;
        so_gemm_kc = it % 3 == 1 ? 5 : kc0; /* several K blocks */
        so_gemm_ap_nc = it % 4 == 2 ? 16 : nc0; /* several column blocks */
        so_gemm_mc = it % 5 == 3 ? 6 : mc0;
        float *X = xalloc((size_t)(cv.C * cv.H * cv.W)), *Wt = xalloc((size_t)(O * K)), *bias = xalloc((size_t)O);
        for (int64_t i = 0; i < cv.C * cv.H * cv.W; i++) X[i] = frand(&seed);
        for (int64_t i = 0; i < O * K; i++) Wt[i] = frand(&seed);
        for (int64_t i = 0; i < O; i++) bias[i] = frand(&seed);
        float *Ap = xalloc(so_gemm_packed_a_floats(O, K)), *Y = xalloc((size_t)(O * hw)), *Y1 = xalloc((size_t)(O * hw));
        float *scr = xalloc(so_gemm_apacked_scratch_floats(O, hw, K, 2));
        so_gemm_pack_a(O, K, Wt, K, Ap);
        so_epi ep = {.shift = bias, .act1 = SO_ACT_RELU};
        so_gemm_epi ge = {.ep = &ep, .per_row = 1};
        so_gemm_bsrc src = {.B = X, .conv = &cv};
        for (int threads = 1; threads <= 2; threads++) {
            float *y = threads == 1 ? Y1 : Y;
            for (int64_t i = 0; i < O * hw; i++) y[i] = NAN;
            so_gemm_apacked(O, hw, K, Ap, &src, 0.f, y, hw, &ge, scr, threads);
        }
        assert_memory_equal(Y, Y1, sizeof *Y * (size_t)(O * hw));
        for (int64_t o = 0; o < O; o++)
            for (int64_t oh = 0; oh < cv.Ho; oh++)
                for (int64_t ow = 0; ow < cv.Wo; ow++) {
                    double s = bias[o], sa = fabs(bias[o]);
                    for (int64_t c = 0; c < cv.C; c++)
                        for (int64_t i = 0; i < cv.kh; i++)
                            for (int64_t j = 0; j < cv.kw; j++) {
                                int64_t ih = oh * cv.sh - cv.ph + i * cv.dh, iw = ow * cv.sw - cv.pw + j * cv.dw;
                                if (ih < 0 || ih >= cv.H || iw < 0 || iw >= cv.W) continue;
                                double v = (double)Wt[(o * cv.C + c) * cv.kh * cv.kw + i * cv.kw + j] * X[(c * cv.H + ih) * cv.W + iw];
                                s += v;
                                sa += fabs(v);
                            }
                    double ref = s > 0 ? s : 0, got = Y[o * hw + oh * cv.Wo + ow];
                    if (!(fabs(got - ref) <= 1e-5 * sa + 1e-6))
                        fail_msg("conv it %d C%lld %lldx%lld k%lldx%lld s%lld,%lld p%lld,%lld d%lld,%lld O%lld: y[%lld,%lld,%lld] = %g, ref %g",
                                 it, (long long)cv.C, (long long)cv.H, (long long)cv.W, (long long)cv.kh, (long long)cv.kw,
                                 (long long)cv.sh, (long long)cv.sw, (long long)cv.ph, (long long)cv.pw, (long long)cv.dh,
                                 (long long)cv.dw, (long long)O, (long long)o, (long long)oh, (long long)ow, got, ref);
                }
        free(X); free(Wt); free(bias); free(Ap); free(Y); free(Y1); free(scr);
    }
    so_gemm_kc = kc0;
    so_gemm_ap_nc = nc0;
    so_gemm_mc = mc0;
}

/* The core classifier (kernels/blas.h) on OpenBLAS's names, whatever this CPU is: the names OpenBLAS 0.3.21 gives
   (dynamic.c), the capitals of static builds, cores it does not know. */
static void test_blas_classify(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int isa;
    } t[] = {{"Prescott", SO_ISA_SCALAR}, {"prescott", SO_ISA_SCALAR}, {"Nehalem", SO_ISA_SCALAR}, {"Sandybridge", SO_ISA_SCALAR},
             {"Core2", SO_ISA_SCALAR},    {"Excavator", SO_ISA_SCALAR}, {"Haswell", SO_ISA_AVX2},    {"HASWELL", SO_ISA_AVX2},
             {"Zen", SO_ISA_AVX2},        {"SkylakeX", SO_ISA_AVX512},  {"SKYLAKEX", SO_ISA_AVX512}, {"Cooperlake", SO_ISA_AVX512},
             {"SapphireRapids", SO_ISA_AVX512}, {"NEOVERSEN1", -1},    {"POWER9", -1},              {"", -1},
             {"Haswell2", -1}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (so_blas_core_isa(t[i].name) != t[i].isa) fail_msg("core '%s': class %d, want %d", t[i].name, so_blas_core_isa(t[i].name), t[i].isa);
    assert_int_equal(so_blas_core_isa(NULL), -1);
    assert_int_equal(so_blas_core_isa(so_blas_core()), so_blas_core_isa(so_blas_core())); /* this process's core reads */
    const int route0 = so_blas_route;
    so_blas_route = 1;
    assert_int_equal(so_blas_ours(SO_ISA_SCALAR), 0); /* the portable level never goes around OpenBLAS */
    assert_int_equal(so_blas_ours(SO_ISA_AVX2), 1);
    assert_int_equal(so_blas_ours(SO_ISA_AVX512), 1);
    so_blas_route = 0;
    assert_int_equal(so_blas_ours(SO_ISA_AVX2), 0);
    assert_int_equal(so_blas_ours(SO_ISA_AVX512), 0);
    so_blas_route = -1; /* the rule: OpenBLAS's class below the level */
    const int c = so_blas_core_isa(so_blas_core());
    for (int l = SO_ISA_AVX2; l <= SO_ISA_AVX512; l++) assert_int_equal(so_blas_ours((so_isa)l), c >= 0 && c < l);
    char buf[160];
    so_blas_route = 1;
    assert_non_null(strstr(so_blas_describe(SO_ISA_AVX512, buf, sizeof buf), "on superopt's kernels"));
    so_blas_route = 0;
    assert_null(strstr(so_blas_describe(SO_ISA_AVX512, buf, sizeof buf), "superopt"));
    so_blas_route = route0;
}

/* so_sgemm with OpenBLAS routed around (so_blas_route = 1, as on a CPU newer than its OpenBLAS), at this level:
   vector products (M = 1 or N = 1, every transpose, strided x and y, alpha, beta 0 / 1, sizes that split over
   threads) and matrix products against a double reference; 1 and 2 threads bitwise equal; and the bits are those
   of our kernel called directly (so_gemv; so_gemm_small / so_gemm where oneDNN does not take the product), which
   OpenBLAS's sgemv / sgemm does not reproduce: a so_sgemm that ignores the routing fails here. */
static void test_sgemm_routed(void **state)
{
    (void)state;
    if (test_level == SO_ISA_SCALAR) return; /* never routed (so_blas_ours) */
    static const int64_t shapes[][3] = {{1, 64, 64},   {1, 100, 37},  {1, 2048, 256}, {1, 17, 1000}, {64, 1, 64}, {37, 1, 100},
                                        {1000, 1, 300}, {1, 1, 50},   {1, 3, 1},      {2, 40, 300},  {40, 40, 40}, {130, 200, 150},
                                        {7, 1200, 64}};
    const int route0 = so_blas_route, onednn0 = so_fast_use_onednn;
    so_blas_route = 1;
    so_fast_use_onednn = 0; /* the matrix products on our GEMM (oneDNN's sgemm is tested in test_fast) */
    omp_set_dynamic(0);
    uint64_t rng = 4242;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int tr = 0; tr < 8; tr++) {
            const int64_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
            const int ta = tr & 1, tb = (tr >> 1) & 1, pad = (tr >> 2) & 1; /* pad: leading dimensions past the width */
            const float alpha = pad ? 0.75f : 1.f, beta = (float)(tr & 1);
            const int64_t lda = (ta ? M : K) + pad * 3, ldb = (tb ? K : N) + pad * 5, ldc = N + pad * 2;
            const size_t na = (size_t)((ta ? K : M) * lda), nb = (size_t)((tb ? N : K) * ldb), nc = (size_t)(M * ldc);
            float *A = xalloc(na + 1), *B = xalloc(nb + 1), *C0 = xalloc(nc + 1), *C1 = xalloc(nc + 1), *C2 = xalloc(nc + 1),
                  *C3 = xalloc(nc + 1);
            for (size_t i = 0; i < na; i++) A[i] = frand(&rng);
            for (size_t i = 0; i < nb; i++) B[i] = frand(&rng);
            for (size_t i = 0; i < nc; i++) C0[i] = frand(&rng);
            float *out[2] = {C1, C2};
            for (int threads = 1; threads <= 2; threads++) {
                float *C = out[threads - 1];
                memcpy(C, C0, nc * sizeof *C);
                if (beta == 0.f)
                    for (size_t i = 0; i < nc; i++) C[i] = NAN; /* stale NaN must not leak through beta = 0 */
                omp_set_num_threads(threads);
                so_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
            }
            omp_set_num_threads(1);
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    double acc = 0;
                    for (int64_t k = 0; k < K; k++) acc += (double)(ta ? A[k * lda + i] : A[i * lda + k]) * (tb ? B[j * ldb + k] : B[k * ldb + j]);
                    const double want = alpha * acc + (beta != 0.f ? beta * (double)C0[i * ldc + j] : 0.0);
                    if (!(fabs((double)C1[i * ldc + j] - want) <= 1e-4 * (fabs(want) + 1.0)))
                        fail_msg("M=%lld N=%lld K=%lld trans %d: C[%lld,%lld] = %g, want %g", (long long)M, (long long)N, (long long)K, tr,
                                 (long long)i, (long long)j, (double)C1[i * ldc + j], want);
                }
            for (int64_t i = 0; i < M; i++) assert_memory_equal(C1 + i * ldc, C2 + i * ldc, (size_t)N * sizeof(float));
            /* the same product by our kernel called directly */
            memcpy(C3, C0, nc * sizeof *C3);
            int direct = 1;
            if (M == 1 && K > 0)
                so_gemv(tb, N, K, alpha, B, ldb, A, ta ? lda : 1, beta, C3, 1, 1);
            else if (N == 1 && K > 0)
                so_gemv(!ta, M, K, alpha, A, lda, B, tb ? 1 : ldb, beta, C3, ldc, 1);
            else if (M >= 2 && M <= 8 && !ta && !tb && K >= 128 && N >= 128)
                direct = 0; /* the small-M streaming path (ours already, not routed) */
            else if (!ta && !tb && alpha == 1.f && beta == 0.f && M * N * K <= ((int64_t)1 << 18))
                so_gemm_small(M, N, K, A, lda, B, ldb, C3, ldc);
            else {
                float *scr = xalloc(so_gemm_full_scratch_floats(M, N, K, 1) + 16);
                so_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C3, ldc, NULL, scr, 1);
                free(scr);
            }
            if (direct)
                for (int64_t i = 0; i < M; i++)
                    if (memcmp(C1 + i * ldc, C3 + i * ldc, (size_t)N * sizeof(float)))
                        fail_msg("M=%lld N=%lld K=%lld trans %d: so_sgemm's row %lld is not our kernel's", (long long)M, (long long)N,
                                 (long long)K, tr, (long long)i);
            free(A), free(B), free(C0), free(C1), free(C2), free(C3);
        }
    so_blas_route = route0;
    so_fast_use_onednn = onednn0;
}

int main(void)
{
    omp_set_dynamic(0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edge_shapes),
        cmocka_unit_test(test_blocking),
        cmocka_unit_test(test_epilogues),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_conv),
        cmocka_unit_test(test_blas_classify),
        cmocka_unit_test(test_sgemm_routed),
    };
    return run_at_levels("test_gemm", tests, sizeof tests / sizeof tests[0]);
}
