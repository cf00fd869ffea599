/* test_nchwc.c - the NCHWc (blocked-channel) kernels at every ISA level the CPU has, against the reference kernels on edge shapes, at 1 and 2 threads. */
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

#include "../kernels/dnnl.h"
#include "../kernels/nchwc.h"
#include "../kernels/ref.h"

#define TOL 1e-4

/* The levels this CPU can run (the portable one always), through the dispatch (kernels/isa.h). */
static int n_levels(const so_nchwc_impl **lv)
{
    int n = 0;
    lv[n++] = &so_nchwc_scalar;
    const so_isa cpu = so_isa_cpu();
    if (cpu >= SO_ISA_AVX2) lv[n++] = so_nchwc_level(8, cpu);
    if (cpu >= SO_ISA_AVX512) lv[n++] = so_nchwc_level(16, cpu);
    return n;
}

/* The levels whose blocked convs oneDNN may run (kernels/nchwc.c conv_backend: nChw8c at avx2, nChw16c at avx512) as
   far as this CPU runs them; none without libdnnl (not installed, sanitizer builds). */
static int dnnl_levels(const so_nchwc_impl **lv)
{
    int n = 0;
    const so_isa cpu = so_isa_cpu();
    if (!so_dnnl_lib()) return 0;
    if (cpu >= SO_ISA_AVX2) lv[n++] = so_nchwc_level(8, cpu);
    if (cpu >= SO_ISA_AVX512) lv[n++] = so_nchwc_level(16, cpu);
    return n;
}

/* Whether kernels/dnnl.c plans no fast primitive for a Relu / Clip before the residual with O channels at block b
   (oneDNN 2.6's AVX-512 jit kernels compute the last channel block wrong there for O % 16 != 0; its AVX2 ones at
   b = 8 right, which test_conv_dnnl_nonfinite checks on the fast primitive: see so_dnnl_conv_plan). */
static int dnnl_fast_excluded(int b, int64_t O) { return b == 16 && O % 16 != 0; }

static uint64_t rng = 88172645463325252ull;
static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / 16777216.0) * 2.0 - 1.0);
}
static float *rand_buf(int64_t n)
{
    float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++) p[i] = frand();
    return p;
}
static so_shape shp4(int64_t a, int64_t b, int64_t c, int64_t d)
{
    int64_t dd[4] = {a, b, c, d};
    return so_shape_make(4, dd);
}

/* x NCHW -> a fresh blocked buffer (garbage first, so only to_blocked's writes count). */
static float *blocked(const so_nchwc_impl *L, const float *x, int64_t N, int64_t C, int64_t HW)
{
    int64_t n = so_nchwc_numel(L->b, N, C, HW);
    float *y = malloc(sizeof(float) * (size_t)n);
    memset(y, 0x7f, sizeof(float) * (size_t)n);
    L->to_blocked(x, y, N, C, HW, 1);
    return y;
}

/* Asserts that blocked y (N, C, HW) has zero padding lanes and equals ref within TOL relative to max |ref|,
   NaN exactly where ref has NaN. */
static void check(const so_nchwc_impl *L, const float *y, const float *ref, int64_t N, int64_t C, int64_t HW, const char *what)
{
    const int b = L->b;
    const int64_t Cb = (C + b - 1) / b;
    for (int64_t n = 0; n < N; n++)
        for (int64_t q = 0; q < HW; q++)
            for (int64_t c = C; c < Cb * b; c++) {
                float v = y[((n * Cb + c / b) * HW + q) * b + c % b];
                if (v != 0.0f) fail_msg("%s (%s): padding lane %lld of pixel %lld is %g", what, L->isa, (long long)c, (long long)q, v);
            }
    float *got = malloc(sizeof(float) * (size_t)(N * C * HW));
    L->from_blocked(y, got, N, C, HW, 2);
    double mx = 0, err = 0;
    for (int64_t i = 0; i < N * C * HW; i++) {
        if ((ref[i] != ref[i]) != (got[i] != got[i])) fail_msg("%s (%s): element %lld is %g, reference %g", what, L->isa, (long long)i, got[i], ref[i]);
        if (ref[i] != ref[i]) continue;
        if (fabs(ref[i]) > mx) mx = fabs(ref[i]);
        if (fabs(got[i] - ref[i]) > err) err = fabs(got[i] - ref[i]);
    }
    if (err / (mx > 1e-6 ? mx : 1e-6) > TOL) fail_msg("%s (%s): max error %g (max |ref| %g)", what, L->isa, err, mx);
    free(got);
}

/* Runs f at 1 and 2 threads: the two blocked outputs must be bitwise equal. */
static void same_for_threads(const float *y1, const float *y2, int64_t n, const char *what)
{
    if (memcmp(y1, y2, sizeof(float) * (size_t)n)) fail_msg("%s: 1 and 2 threads differ", what);
}

/* ---------------- conv ---------------- */

/* The epilogue activations in double: so_ref_act's, and the kernel-only ones of kernels/epi.h (SiLU, HardSwish,
   HardSigmoid with alpha = lo, beta = hi) as the reference kernels compute the operators they replace. */
static void ref_act(int act, float lo, float hi, float *r, int64_t n)
{
    for (int64_t q = 0; q < n; q++) {
        const double v = r[q];
        if (act == SO_EPI_SILU) r[q] = (float)(v / (1.0 + exp(-v)));
        else if (act == SO_EPI_HARDSWISH) r[q] = (float)(v * fmin(1.0, fmax(0.0, v / 6.0 + 0.5)));
        else if (act == SO_EPI_HARDSIGMOID) r[q] = (float)fmin(1.0, fmax(0.0, lo * v + hi));
    }
    if (act < SO_ACT_COUNT) so_ref_act(act, lo, hi, r, n);
}

typedef struct conv_case {
    int N, C, H, W, O, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, group;
    int bias, scale, act1, res, act2;
    float lo, hi;
    int nan; /* put a NaN into the input */
    float big; /* scale factors times this (0: 1): pre-activations far past exp's range */
} conv_case;

/* oneDNN's primitives (kernels/dnnl.c) on the blocked value of the avx2 (b = 8) and AVX-512 (b = 16) levels, direct
   and (where oneDNN has it: AVX-512 only) Winograd, at 1 and 2 threads: within TOL of the reference, padding lanes zero, the same result on a second run.
   A NaN spreads over a Winograd tile (as in our own Winograd), so NaN cases run direct only. Counts the plans. */
static int dnnl_planned;
static void run_conv_dnnl(const conv_case *k, const so_nchwc_impl *L, const float *x, const float *w, const so_epi *ep, const float *res,
                          const float *ref, int64_t Ho, int64_t Wo, const char *what)
{
    if ((L->b != 16 && L != &so_nchwc_avx2) || !so_dnnl_lib()) return;
    const int64_t N = k->N, C = k->C, O = k->O;
    float *xb = blocked(L, x, N, C, k->H * k->W), *rb = k->res ? blocked(L, res, N, O, Ho * Wo) : NULL;
    const int64_t ny = so_nchwc_numel(L->b, N, O, Ho * Wo);
    float *y1 = malloc(sizeof(float) * (size_t)ny), *y2 = malloc(sizeof(float) * (size_t)ny);
    for (int wino = 0; wino <= !k->nan; wino++) {
        so_dnnl_conv *p = so_dnnl_conv_plan(N, C, k->H, k->W, O, Ho, Wo, k->kh, k->kw, k->sh, k->sw, k->pt, k->pl, k->pb, k->pr, k->dh, k->dw,
                                            k->group, w, ep, wino, L->b);
        if (!p) continue;
        dnnl_planned++;
        assert_true(so_dnnl_conv_bytes(p) > 0);
        void *scratch = aligned_alloc(64, (so_dnnl_conv_scratch_bytes(p) + 127) / 64 * 64);
        char w2[200];
        snprintf(w2, sizeof w2, "%s oneDNN %s", what, so_dnnl_conv_impl(p));
        const int t0 = omp_get_max_threads();
        for (int t = 1; t <= 2; t++) {
            omp_set_num_threads(t);
            memset(y1, 0x7f, sizeof(float) * (size_t)ny);
            memset(y2, 0x7f, sizeof(float) * (size_t)ny);
            so_dnnl_conv_run(p, xb, y1, rb, scratch);
            so_dnnl_conv_run(p, xb, y2, rb, scratch);
            check(L, y1, ref, N, O, Ho * Wo, w2);
            same_for_threads(y1, y2, ny, w2); /* here: two runs at t threads */
        }
        omp_set_num_threads(t0);
        free(scratch);
        so_dnnl_conv_free(p);
    }
    free(xb), free(rb), free(y1), free(y2);
}

/* The stem + max pool kernel (stem_pool: the pool of the stem's rows in one pass) against the stem's output s
   pooled by the pool kernel, bit for bit, at 1, 2 and 3 threads: ResNet's 3x3/2 pad 1, ceil mode (extra bottom /
   right pad), 2x2/2 unpadded, stride 1, windows taller than wide, a stride larger than the window. */
static void stem_pool_cases(const so_nchwc_impl *L, const so_nchwc_conv *p, int64_t N, const float *x, const float *s, int64_t O, int64_t Ho,
                            int64_t Wo, const char *what)
{
    static const int pc[][8] = {{3, 3, 2, 2, 1, 1, 1, 1}, {3, 3, 2, 2, 0, 0, 1, 1}, {2, 2, 2, 2, 0, 0, 0, 0},
                                {3, 3, 1, 1, 1, 1, 1, 1}, {4, 2, 1, 2, 2, 0, 1, 1}, {2, 2, 3, 3, 0, 0, 0, 0}};
    for (size_t c = 0; c < sizeof pc / sizeof pc[0]; c++) {
        const int *k = pc[c];
        const int64_t Hp = (Ho + k[4] + k[6] - k[0]) / k[2] + 1, Wp = (Wo + k[5] + k[7] - k[1]) / k[3] + 1;
        if (Hp < 1 || Wp < 1) continue;
        so_nchwc_pool q = {.C = O, .H = Ho, .W = Wo, .Ho = Hp, .Wo = Wp, .kh = k[0], .kw = k[1], .sh = k[2], .sw = k[3], .pt = k[4],
                           .pl = k[5], .pb = k[6], .pr = k[7], .dh = 1, .dw = 1, .is_max = 1};
        const int64_t ny = so_nchwc_numel(L->b, N, O, Hp * Wp);
        float *ref = malloc(sizeof(float) * (size_t)ny), *y = malloc(sizeof(float) * (size_t)ny),
              *sc = malloc(sizeof(float) * (size_t)so_nchwc_stem_pool_scratch(p, &q, 3));
        L->pool(&q, N, s, ref, 1);
        char wp[260];
        for (int T = 1; T <= 3; T++) {
            memset(y, 0x7f, sizeof(float) * (size_t)ny);
            L->stem_pool(p, &q, N, x, y, sc, T);
            snprintf(wp, sizeof wp, "%s + max pool k%dx%d s%d,%d p%d,%d,%d,%d at %d threads", what, k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], T);
            if (memcmp(ref, y, sizeof(float) * (size_t)ny)) fail_msg("%s: not the stem's output pooled", wp);
        }
        free(ref), free(y), free(sc);
    }
}

/* Our blocked Winograd F(m x m, 3x3) (so_nchwc_conv_wino, m = 4 and 2) on the 3x3 stride-1 group-1 cases: within TOL (1e-4 of the
   largest output magnitude) of the reference, padding lanes zero, bitwise the same at 1 and 2 threads and with the
   tiles cut into chunks of 5 (several chunks, a partial last one). A NaN spreads over a Winograd tile, so NaN cases
   do not run it. Counts the runs. */
static int wino_ran;
static int pad_ran;    /* run_conv's conv_pad checks */
static int gather_ran; /* ... of them on a strided 1x1 (conv_pad gathers its input) */
static int gb_ran;     /* run_conv's block-diagonal checks (so_nchwc_gblk: gb_run against the direct conv) */
static void run_conv_wino(const conv_case *k, const so_nchwc_impl *L, so_nchwc_conv *p, const float *w, const float *xb, const float *rb,
                          const float *ref, int64_t Ho, int64_t Wo, const char *what, int m)
{
    if (k->nan || so_nchwc_conv_wino(p, w, m)) return;
    assert_int_equal(p->wm, m);
    wino_ran++;
    const int64_t ny = so_nchwc_numel(L->b, k->N, k->O, Ho * Wo), tc = p->wtc;
    float *y1 = malloc(sizeof(float) * (size_t)ny), *y2 = malloc(sizeof(float) * (size_t)ny);
    float *sc = aligned_alloc(64, ((size_t)so_nchwc_wino_scratch(p, 2) * sizeof(float) + 63) / 64 * 64);
    char w2[200];
    snprintf(w2, sizeof w2, "%s Winograd F(%dx%d,3x3)", what, m, m);
    memset(y1, 0x7f, sizeof(float) * (size_t)ny);
    memset(y2, 0x7f, sizeof(float) * (size_t)ny);
    L->wino(p, k->N, xb, y1, rb, sc, 1);
    L->wino(p, k->N, xb, y2, rb, sc, 2);
    check(L, y1, ref, k->N, k->O, Ho * Wo, w2);
    same_for_threads(y1, y2, ny, w2);
    p->wtc = tc < 5 ? tc : 5; /* fewer tiles per chunk: the scratch above is large enough */
    memset(y2, 0x7f, sizeof(float) * (size_t)ny);
    L->wino(p, k->N, xb, y2, rb, sc, 2);
    if (memcmp(y1, y2, sizeof(float) * (size_t)ny)) fail_msg("%s (%s): chunks of 5 tiles differ", w2, L->isa);
    p->wtc = tc;
    free(p->wu), p->wu = NULL;
    free(y1), free(y2), free(sc);
}

static void run_conv(const conv_case *k)
{
    const int64_t N = k->N, C = k->C, H = k->H, W = k->W, O = k->O;
    const int64_t Ho = (H + k->pt + k->pb - k->dh * (k->kh - 1) - 1) / k->sh + 1, Wo = (W + k->pl + k->pr - k->dw * (k->kw - 1) - 1) / k->sw + 1;
    float *x = rand_buf(N * C * H * W), *w = rand_buf(O * (C / k->group) * k->kh * k->kw), *bias = rand_buf(O), *scale = rand_buf(O);
    float *res = rand_buf(N * O * Ho * Wo), *ref = malloc(sizeof(float) * (size_t)(N * O * Ho * Wo));
    if (k->nan) x[(N * C * H * W) / 2 + 1] = NAN;
    if (k->big)
        for (int64_t o = 0; o < O; o++) scale[o] *= k->big;
    /* reference: the plain conv, then the epilogue act2(act1(y*scale + shift) + res) in double */
    so_attr a = {0};
    a.stride[0] = k->sh, a.stride[1] = k->sw, a.pad[0] = k->pt, a.pad[1] = k->pl, a.pad[2] = k->pb, a.pad[3] = k->pr;
    a.dilation[0] = k->dh, a.dilation[1] = k->dw, a.group = k->group;
    so_node nd = {.op = SO_OP_CONV, .n_in = 2, .n_out = 1, .attr = &a, .ref = -1};
    so_tensor in[2] = {{shp4(N, C, H, W), x}, {shp4(O, C / k->group, k->kh, k->kw), w}}, out = {shp4(N, O, Ho, Wo), ref};
    assert_int_equal(so_ref_conv(NULL, &nd, in, &out), SO_OK);
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < O; o++) {
            float *r = ref + (n * O + o) * Ho * Wo;
            for (int64_t q = 0; q < Ho * Wo; q++) r[q] = (float)((double)r[q] * (k->scale ? scale[o] : 1.0) + (k->bias ? bias[o] : 0.0));
            ref_act(k->act1, k->lo, k->hi, r, Ho * Wo);
            if (k->res)
                for (int64_t q = 0; q < Ho * Wo; q++) r[q] += res[(n * O + o) * Ho * Wo + q];
            ref_act(k->act2, k->lo, k->hi, r, Ho * Wo);
        }
    const so_nchwc_impl *lv[3];
    const int nl = n_levels(lv);
    for (int l = 0; l < nl; l++) {
        const so_nchwc_impl *L = lv[l];
        so_epi ep = {.scale = k->scale ? scale : NULL, .shift = k->bias ? bias : NULL, .act1 = k->act1, .act2 = k->act2,
                     .lo1 = k->lo, .hi1 = k->hi, .lo2 = k->lo, .hi2 = k->hi, .has_res = k->res};
        so_nchwc_conv p;
        assert_int_equal(so_nchwc_conv_plan(&p, L->b, C, H, W, O, Ho, Wo, k->kh, k->kw, k->sh, k->sw, k->pt, k->pl, k->dh, k->dw, k->group, w, &ep), 0);
        assert_true(so_nchwc_conv_bytes(&p) > 0);
        const int64_t Cg = C / k->group;
        if (k->group > 1 && Cg > 1 && Cg == O / k->group && Cg < L->b && L->b % Cg == 0) assert_int_equal(p.gsub, Cg); /* g_tile runs */
        float *xb = blocked(L, x, N, C, H * W), *rb = k->res ? blocked(L, res, N, O, Ho * Wo) : NULL;
        const int64_t ny = so_nchwc_numel(L->b, N, O, Ho * Wo);
        float *y1 = malloc(sizeof(float) * (size_t)ny), *y2 = malloc(sizeof(float) * (size_t)ny);
        memset(y1, 0x7f, sizeof(float) * (size_t)ny);
        memset(y2, 0x7f, sizeof(float) * (size_t)ny);
        L->conv(&p, N, xb, y1, rb, 1);
        L->conv(&p, N, xb, y2, rb, 2);
        char what[160];
        snprintf(what, sizeof what, "conv N%d C%d %dx%d O%d k%dx%d s%d,%d p%d,%d,%d,%d d%d,%d g%d", k->N, k->C, k->H, k->W, k->O, k->kh, k->kw, k->sh,
                 k->sw, k->pt, k->pl, k->pb, k->pr, k->dh, k->dw, k->group);
        check(L, y1, ref, N, O, Ho * Wo, what);
        same_for_threads(y1, y2, ny, what);
        if (so_nchwc_pad_ok(&p)) { /* the direct conv on a zero-bordered copy: conv's values (finite weights), 1 and 2 threads */
            float *s1 = malloc(sizeof(float) * (size_t)ny), *s2 = malloc(sizeof(float) * (size_t)ny);
            float *sc = aligned_alloc(64, ((size_t)so_nchwc_pad_scratch(&p) * sizeof(float) + 63) / 64 * 64);
            memset(s1, 0x7f, sizeof(float) * (size_t)ny);
            memset(s2, 0x7f, sizeof(float) * (size_t)ny);
            memset(sc, 0x7f, (size_t)so_nchwc_pad_scratch(&p) * sizeof(float)); /* stale scratch: the copy writes every float it reads */
            L->conv_pad(&p, N, xb, s1, rb, sc, 1);
            L->conv_pad(&p, N, xb, s2, rb, sc, 2);
            char pw[200];
            snprintf(pw, sizeof pw, "conv_pad %s", what);
            check(L, s1, ref, N, O, Ho * Wo, pw);
            same_for_threads(s1, s2, ny, pw);
            same_for_threads(y1, s1, ny, pw); /* the same bits as conv */
            assert_int_equal(so_nchwc_pad_rule(&p), L->b == 8 && (so_nchwc_gather_ok(&p) ? O >= SO_NCHWC_GATHER_MIN_O : Wo <= so_nchwc_pad_max_wo));
            if (so_nchwc_gather_ok(&p)) gather_ran++;
            pad_ran++;
            free(s1), free(s2), free(sc);
        }
        if (k->group == 1 && !k->res && C <= 16) { /* the stem kernel on the plain input: the conv's sums, in its order */
            float *s1 = malloc(sizeof(float) * (size_t)ny), *s2 = malloc(sizeof(float) * (size_t)ny);
            memset(s1, 0x7f, sizeof(float) * (size_t)ny);
            memset(s2, 0x7f, sizeof(float) * (size_t)ny);
            L->stem(&p, N, x, s1, 1);
            L->stem(&p, N, x, s2, 2);
            char sw[200];
            snprintf(sw, sizeof sw, "stem %s", what);
            check(L, s1, ref, N, O, Ho * Wo, sw);
            same_for_threads(s1, s2, ny, sw);
            if (!k->nan) same_for_threads(y1, s1, ny, sw);
            stem_pool_cases(L, &p, N, x, s1, O, Ho, Wo, sw);
            free(s1), free(s2);
        }
        if (so_nchwc_gblk(&p)) { /* block-diagonal groups: gb_run (conv) and the direct conv without it, the same bits */
            float *y3 = malloc(sizeof(float) * (size_t)ny);
            memset(y3, 0x7f, sizeof(float) * (size_t)ny);
            so_nchwc_gb_on = 0;
            L->conv(&p, N, xb, y3, rb, 2);
            so_nchwc_gb_on = 1;
            if (memcmp(y1, y3, sizeof(float) * (size_t)ny)) fail_msg("%s (%s): gb_run and the direct conv differ", what, L->isa);
            assert_false(so_nchwc_pad_ok(&p)); /* conv_pad leaves them to gb_run */
            gb_ran++;
            free(y3);
        }
        if (k->kh == 1 && k->kw == 1 && k->group == 1) { /* the pointwise path (levels with PW_OBK) and the direct tile: the same bits */
            float *y3 = malloc(sizeof(float) * (size_t)ny);
            memset(y3, 0x7f, sizeof(float) * (size_t)ny);
            so_nchwc_pw_on = 0;
            L->conv(&p, N, xb, y3, rb, 2);
            so_nchwc_pw_on = 1;
            if (memcmp(y1, y3, sizeof(float) * (size_t)ny)) fail_msg("%s (%s): the pointwise and the direct tile differ", what, L->isa);
            free(y3);
        }
        run_conv_wino(k, L, &p, w, xb, rb, ref, Ho, Wo, what, 4);
        run_conv_wino(k, L, &p, w, xb, rb, ref, Ho, Wo, what, 2);
        so_nchwc_conv_free(&p);
        free(xb), free(rb), free(y1), free(y2);
        run_conv_dnnl(k, L, x, w, &ep, res, ref, Ho, Wo, what);
    }
    free(x), free(w), free(bias), free(scale), free(res), free(ref);
}

/* N C H W O kh kw sh sw pt pl pb pr dh dw group */
#define CV(...) ((conv_case){__VA_ARGS__})

static void test_conv_dense(void **state)
{
    (void)state;
    const conv_case cs[] = {
        CV(1, 19, 5, 5, 21, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1),   /* 1x1, C and O not multiples of b */
        CV(1, 16, 9, 11, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU),
        CV(1, 3, 17, 17, 10, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1, .bias = 1), /* stem-like, stride 2 */
        CV(1, 9, 12, 10, 9, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1, .bias = 0),             /* dilation 2 */
        CV(1, 33, 1, 1, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1),  /* 1x1 plane, only the centre tap */
        CV(1, 33, 1, 1, 17, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 0),             /* 1x1 plane, 1x1 */
        CV(2, 24, 8, 8, 40, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, .bias = 1),  /* strided 1x1 (downsample), batch 2 */
        CV(1, 8, 7, 13, 8, 3, 5, 2, 1, 0, 2, 1, 1, 1, 1, 1, .bias = 0),              /* asymmetric kernel, stride and pads */
        CV(1, 300, 6, 6, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1), /* several input-channel chunks */
        CV(1, 600, 4, 7, 70, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 0),            /* 1x1, several chunks */
        CV(1, 5, 5, 5, 6, 5, 5, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 0),               /* one window covering the whole input */
        CV(1, 5, 3, 3, 6, 3, 3, 3, 3, 4, 4, 4, 4, 1, 1, 1, .bias = 1),    /* outputs that read only padding */
        CV(1, 64, 14, 14, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU, .res = 1, .act2 = SO_ACT_RELU),
        CV(1, 48, 13, 15, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1, .scale = 1, .act1 = SO_ACT_RELU), /* Winograd, O % 16 */
        CV(1, 64, 12, 12, 64, 3, 3, 1, 1, 0, 1, 2, 1, 1, 1, 1, .bias = 1, .res = 1, .act2 = SO_ACT_RELU), /* asymmetric pads */
        CV(1, 32, 9, 9, 48, 1, 7, 1, 1, 0, 3, 0, 3, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU), /* Inception's 1x7 */
        CV(1, 40, 9, 9, 24, 7, 1, 1, 1, 3, 0, 3, 0, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU), /* and 7x1 */
        CV(1, 64, 15, 15, 32, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, 1, .bias = 1), /* stride 2, no pads, odd size */
        /* Winograd: ResNet-50 layer 3's shape (K = 2304 products per output), one output row, no pads, batch 2 */
        CV(1, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1, .scale = 1, .act1 = SO_ACT_RELU),
        CV(1, 20, 3, 30, 17, 3, 3, 1, 1, 0, 1, 0, 1, 1, 1, 1, .bias = 1),
        CV(2, 17, 10, 9, 33, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .res = 1, .act2 = SO_ACT_RELU),
        /* Winograd at 2 threads by output groups (fewer chunks than 2 per thread): 3 groups of 4 blocks at b = 16
           (5 at b = 8) split 1 + 2, the last one partial */
        CV(1, 24, 7, 7, 136, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1, .res = 1, .act2 = SO_ACT_RELU),
        /* Winograd with U outweighing the plane's V and M (one chunk per image, test_wino_chunks), C and O not
           multiples of b, odd plane, batch 2 */
        CV(2, 200, 13, 13, 72, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1, .scale = 1, .act1 = SO_ACT_RELU),
        /* output blocks in groups of unequal size (so_nchwc_conv_split): 5 blocks at b = 16 (2 + 3), 9 at b = 8; at
           2 threads band-major. MNASNet's 24->72 expand (a flattened 1x1, C and O not multiples of 16), its 480->80
           project with the residual on 14x14, 96 outputs (6 blocks: 3 + 3), a 3x3 in row bands with 72 outputs, and
           a 1-pixel plane */
        CV(1, 24, 20, 20, 72, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU),
        CV(1, 480, 14, 14, 80, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .scale = 1, .res = 1),
        CV(2, 40, 7, 7, 96, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU),
        CV(1, 20, 9, 11, 72, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU),
        CV(1, 35, 1, 1, 72, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1),
        /* conv_pad (session 22): ResNet-50's small planes (a 7x7 plane: tiles across row ends), stride 2 onto 7x7 with
           C and O not multiples of b and the residual, asymmetric pads at stride 2, several input-channel chunks with
           a row band per item at 2 threads, a 5x5 with dilation 2 */
        CV(1, 72, 7, 7, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1, .scale = 1, .act1 = SO_ACT_RELU),
        CV(2, 27, 14, 13, 21, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, .bias = 1, .res = 1, .act2 = SO_ACT_RELU),
        CV(1, 16, 11, 12, 24, 3, 3, 2, 2, 0, 1, 1, 0, 1, 1, 1, .bias = 1, .act1 = SO_ACT_CLIP, .lo = -0.5f, .hi = 0.5f),
        CV(1, 130, 23, 9, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1),
        CV(1, 12, 13, 11, 10, 5, 5, 1, 1, 4, 4, 4, 4, 2, 2, 1, .bias = 1, .act1 = SO_ACT_SIGMOID),
        /* strided 1x1 (session 23: conv_pad gathers the strided pixels, then the stride-1 1x1 over them): C and O not
           multiples of b on an odd plane; batch 2 with scale, Relu, the residual and Relu; a 1x1 plane; unequal strides
           onto one output row; several input-channel chunks (C > so_nchwc_pw_kc) with Clip; a not-cheap epilogue
           (Sigmoid); ResNet's downsample shape at a quarter of its channels (bands at 2 threads) */
        CV(1, 19, 9, 11, 21, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU),
        CV(2, 37, 13, 7, 45, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .scale = 1, .act1 = SO_ACT_RELU, .res = 1, .act2 = SO_ACT_RELU),
        CV(1, 33, 1, 1, 17, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .res = 1),
        CV(1, 16, 2, 9, 24, 1, 1, 2, 3, 0, 0, 0, 0, 1, 1, 1, .bias = 0),
        CV(1, 300, 15, 15, 72, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .act1 = SO_ACT_CLIP, .lo = -0.5f, .hi = 0.5f),
        CV(1, 40, 10, 10, 24, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .act1 = SO_ACT_SIGMOID),
        CV(1, 64, 56, 56, 128, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .scale = 1, .res = 1, .act2 = SO_ACT_RELU),
        /* conv_pad's 4 x 3 tile on one-row / one-column kernels (session 23, AVX2): Inception-v3's 1x7 on an odd plane
           with 10 output blocks (groups of 4 and 3, the last partial), input channels in several chunks and the
           residual; a 3x1 on 8x8 with batch 2 and C, O not multiples of b; a strided 1x3 with asymmetric pads */
        CV(1, 200, 17, 17, 76, 1, 7, 1, 1, 0, 3, 0, 3, 1, 1, 1, .bias = 1, .scale = 1, .res = 1, .act2 = SO_ACT_RELU),
        CV(2, 37, 8, 8, 45, 3, 1, 1, 1, 1, 0, 1, 0, 1, 1, 1, .bias = 1, .act1 = SO_ACT_CLIP, .lo = -0.5f, .hi = 0.5f),
        CV(1, 24, 9, 7, 40, 1, 3, 2, 2, 0, 1, 0, 0, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU),
        /* Winograd on SqueezeNet's 13x13 48->192 expand (session 25: its V / M position slices padded, the output
           transform block-major): one chunk per image, 2 threads by output groups; chunks of 5 in run_conv_wino */
        CV(1, 48, 13, 13, 192, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU),
        /* session 25: conv_pad walks a one-row / one-column kernel's taps by a running pointer (toff[1] apart): a 1x3 of
           dilation 2 (taps 2 pixels apart), a 5x1 on a 5-wide odd plane with batch 2 and C, O not multiples of b */
        CV(1, 13, 9, 10, 20, 1, 3, 1, 1, 0, 2, 0, 2, 1, 2, 1, .bias = 1, .act1 = SO_ACT_RELU),
        CV(2, 11, 6, 5, 9, 5, 1, 1, 1, 2, 0, 2, 0, 1, 1, 1, .bias = 1, .res = 1, .act2 = SO_ACT_RELU),
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) run_conv(&cs[i]);
    assert_true(pad_ran >= 20); /* conv_pad ran on the cases with more than one tap (not depthwise, gsub) at every level */
    assert_true(gather_ran >= 8); /* ... and on the strided 1x1s (8 cases, the first of the list too) at every level */
    assert_true(wino_ran >= 20); /* the 3x3 stride-1 cases above ran both our Winograds at every level */
    /* at the avx2 / AVX-512 levels with libdnnl loadable (not in sanitizer builds), oneDNN ran some of them */
    const so_nchwc_impl *dl[2];
    if (dnnl_levels(dl)) assert_true(dnnl_planned >= 10);
}

/* Tiles per chunk of our Winograd (so_nchwc_conv_wino): U is read once per chunk, so where U outweighs the
   plane's V and M (ResNet-50's deep 3x3 layers) the whole plane is one chunk; where V and M outweigh U (large
   planes, few channels) the chunks stay bounded (~512 KB of V and M, at least 24 tiles). At b = 8 and 16. The
   outputs do not depend on the chunking (run_conv_wino compares chunks of 5 bitwise). */
static void test_wino_chunks(void **state)
{
    (void)state;
    static const struct {
        int64_t C, H, m, whole; /* C = O channels, H x H plane, F(m x m, 3x3), 1: one chunk per image */
    } cs[] = {
        {256, 14, 2, 1}, /* U 4.2 MB, V + M 1.6 MB (b = 16): one chunk (was 3 of <= 24 tiles) */
        {128, 28, 4, 1}, /* U 2.4 MB, V + M 1.8 MB: one chunk (was 3) */
        {200, 13, 2, 1}, /* channels not a multiple of b, odd plane */
        {512, 7, 4, 1},  /* 4 tiles: one chunk either way */
        {64, 56, 4, 0},  /* U 0.6 MB, V + M 3.6 MB: chunks */
        {128, 28, 2, 0}, /* U 1 MB, V + M 3.2 MB: chunks */
    };
    for (int b = 8; b <= 16; b += 8)
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
            const int64_t C = cs[i].C, H = cs[i].H, m = cs[i].m, nt = ((H + m - 1) / m) * ((H + m - 1) / m);
            float *w = rand_buf(C * C * 9);
            so_nchwc_conv p;
            assert_int_equal(so_nchwc_conv_plan(&p, b, C, H, H, C, H, H, 3, 3, 1, 1, 1, 1, 1, 1, 1, w, NULL), 0);
            assert_int_equal(so_nchwc_conv_wino(&p, w, (int)m), 0);
            const size_t u = so_nchwc_wino_bytes(&p), vm = sizeof(float) * (size_t)(nt * (m + 2) * (m + 2) * (p.Cb + p.Ob) * b);
            if (cs[i].whole) {
                if (p.wtc != nt) fail_msg("b %d, %ld ch %ldx%ld F(%ld): %ld tiles per chunk, not the plane's %ld", b, (long)C, (long)H, (long)H, (long)m, (long)p.wtc, (long)nt);
                assert_true(u >= vm || nt <= 24);
            } else {
                assert_true(p.wtc >= 24 && p.wtc < nt);
                assert_true(u < vm);
            }
            so_nchwc_conv_free(&p);
            free(w);
        }
}

/* The Winograd scratch's position slices (so_nchwc_wino_pstride, session 25): at least n floats, a whole odd number
   of 64-byte lines (so 64 consecutive slices start in 64 different L1 sets), non-decreasing in n; so_nchwc_wino_scratch
   holds T chunks of P such slices of V and of M. On SqueezeNet's 13x13 48->192 F(4x4) at b = 8 (one chunk of 16
   tiles: M's slice 24 x 16 x 8 floats = 12 KB, a multiple of 4 KB) the 36 slices of M start in 36 different sets. */
static void test_wino_pstride(void **state)
{
    (void)state;
    for (int64_t n = 1, prev = 0; n <= 5000; n++) {
        const int64_t s = so_nchwc_wino_pstride(n);
        if (s < n || s % 16 || (s / 16) % 2 != 1 || s < prev || s > n + 31) fail_msg("pstride(%ld) = %ld", (long)n, (long)s);
        prev = s;
    }
    float *w = rand_buf(192 * 48 * 9);
    so_nchwc_conv p;
    assert_int_equal(so_nchwc_conv_plan(&p, 8, 48, 13, 13, 192, 13, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, w, NULL), 0);
    assert_int_equal(so_nchwc_conv_wino(&p, w, 4), 0);
    assert_int_equal(p.wtc, 16);
    const int64_t mq = so_nchwc_wino_pstride(p.wtc * p.Ob * 8), vq = so_nchwc_wino_pstride(p.wtc * p.Cb * 8);
    assert_int_equal(so_nchwc_wino_scratch(&p, 2), 2 * 36 * (mq + vq));
    assert_int_equal(so_nchwc_wino_scratch(&p, 1), 36 * (mq + vq));
    int used[64] = {0};
    for (int q = 0; q < 36; q++) {
        const int set = (int)((q * mq * 4 / 64) % 64);
        if (used[set]++) fail_msg("slices of M: position %d starts in L1 set %d again", q, set);
    }
    so_nchwc_conv_free(&p);
    free(w);
}

/* The direct conv's work split (so_nchwc_conv_split, nchwc.h) at each level's register tile (CONV_OBK x CONV_PX:
   avx512 4 x 6 at b = 16, avx2 2 x 6 and scalar 1 x 6 at b = 8) on MNASNet / MobileNet-v2 / ResNet-50 shapes: groups
   and bands cover the blocks and units once, groups of at most obk_max blocks differing by at most one, bands within
   the partial-sum budget, and at 2 threads (libgomp's schedule(static): contiguous chunks, the first items % T
   threads one item more) no thread gets more than 55 % of the work (blocks x pixels), or half plus one item where
   the items are that coarse (9 rows). Before the balanced split,
   MNASNet's 480->80 on 14x14 gave one thread 80 % (a 4-block group against a 1-block one). */
static void test_conv_split(void **state)
{
    (void)state;
    static const struct { int b, obk, px; } lv[] = {{16, 4, 6}, {8, 2, 6}, {8, 1, 6}};
    /* C is irrelevant to the split; O, the output plane, kernel 1 (flattened) or not */
    static const struct { int N, O, Ho, Wo, flat; } cs[] = {
        {1, 16, 112, 112, 1}, {1, 48, 112, 112, 1}, {1, 72, 56, 56, 1}, {1, 24, 56, 56, 1}, {1, 40, 28, 28, 1}, {1, 120, 28, 28, 1},
        {1, 240, 28, 28, 1}, {1, 80, 14, 14, 1},   {1, 480, 14, 14, 1}, {1, 96, 14, 14, 1}, {1, 576, 14, 14, 1}, {1, 192, 7, 7, 1},
        {1, 1152, 7, 7, 1},  {1, 320, 7, 7, 1},    {1, 1280, 7, 7, 1},  {1, 160, 7, 7, 1},  {1, 960, 7, 7, 1},   {1, 64, 56, 56, 1},
        {1, 256, 56, 56, 1}, {1, 2048, 7, 7, 1},   {1, 72, 9, 11, 0},   {1, 64, 56, 56, 0}, {1, 512, 7, 7, 0},   {2, 96, 7, 7, 1},
    };
    const int64_t psum = 32768; /* NCHWC_PSUM_FLOATS */
    for (size_t l = 0; l < sizeof lv / sizeof lv[0]; l++)
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
            for (int T = 1; T <= 2; T++)
                {
                    so_nchwc_conv p;
                    memset(&p, 0, sizeof p);
                    p.b = lv[l].b, p.Ob = (cs[i].O + p.b - 1) / p.b;
                    p.Ho = cs[i].flat ? 1 : cs[i].Ho, p.Wo = cs[i].flat ? (int64_t)cs[i].Ho * cs[i].Wo : cs[i].Wo;
                    so_nchwc_split s;
                    so_nchwc_conv_split(&p, cs[i].N, T, lv[l].obk, lv[l].px, psum, &s);
                    const int64_t unit = p.Ho > 1 ? p.Wo : lv[l].px, npix = p.Ho * p.Wo;
                    assert_int_equal(s.items, cs[i].N * s.nobg * s.nband);
                    assert_true(s.nband >= 1 && s.nband <= s.Lb && s.nobg * lv[l].obk >= p.Ob);
                    int64_t mn = p.Ob, mx = 0;
                    for (int64_t g = 0; g < s.nobg; g++) {
                        const int64_t k = so_nchwc_group_ob(p.Ob, s.nobg, g + 1) - so_nchwc_group_ob(p.Ob, s.nobg, g);
                        mn = k < mn ? k : mn, mx = k > mx ? k : mx;
                    }
                    assert_int_equal(so_nchwc_group_ob(p.Ob, s.nobg, 0), 0);
                    assert_int_equal(so_nchwc_group_ob(p.Ob, s.nobg, s.nobg), p.Ob);
                    assert_true(mn >= 1 && mx <= lv[l].obk && mx - mn <= 1);
                    assert_int_equal(so_nchwc_band_start(&s, 0), 0);
                    assert_int_equal(so_nchwc_band_start(&s, s.nband), s.Lb);
                    for (int64_t j = 0; j < s.nband; j++) {
                        const int64_t u = so_nchwc_band_start(&s, j + 1) - so_nchwc_band_start(&s, j);
                        assert_true(u >= 1);
                        if (u > 1) assert_true(u * unit * lv[l].obk * p.b <= psum); /* the partial sums fit */
                    }
                    /* every (image, group, band) once; the work of each thread */
                    char *seen = calloc((size_t)s.items, 1);
                    double work[2] = {0, 0}, total = 0, item_max = 0;
                    const int64_t q = s.items / T, r = s.items % T;
                    for (int64_t it = 0; it < s.items; it++) {
                        int64_t n, g, band;
                        so_nchwc_split_item(&s, it, &n, &g, &band);
                        assert_true(n >= 0 && n < cs[i].N && g >= 0 && g < s.nobg && band >= 0 && band < s.nband);
                        const int64_t id = (n * s.nobg + g) * s.nband + band;
                        assert_false(seen[id]);
                        seen[id] = 1;
                        const int64_t u0 = so_nchwc_band_start(&s, band), u1 = so_nchwc_band_start(&s, band + 1);
                        int64_t pix = p.Ho > 1 ? (u1 - u0) * p.Wo : (u1 * unit < npix ? u1 * unit : npix) - u0 * unit;
                        const double w = (double)pix * (double)(so_nchwc_group_ob(p.Ob, s.nobg, g + 1) - so_nchwc_group_ob(p.Ob, s.nobg, g));
                        const int th = it < r * (q + 1) ? (int)(it / (q + 1)) : (int)(r + (it - r * (q + 1)) / q);
                        work[th] += w, total += w, item_max = w > item_max ? w : item_max;
                    }
                    free(seen);
                    assert_true(fabs(total - (double)cs[i].N * (double)npix * (double)p.Ob) < 0.5);
                    if (T == 2) {
                        const double share = (work[0] > work[1] ? work[0] : work[1]) / total;
                        const double lim = 0.5 + item_max / total > 0.55 ? 0.5 + item_max / total : 0.55;
                        if (share > lim)
                            fail_msg("b=%d obk=%d N=%d O=%d %dx%d%s: one thread gets %.0f %% of the work (%lld groups, %lld bands)",
                                     lv[l].b, lv[l].obk, cs[i].N, cs[i].O, cs[i].Ho, cs[i].Wo, cs[i].flat ? " (1x1)" : "", 100 * share,
                                     (long long)s.nobg, (long long)s.nband);
                    }
                }
}

/* Block-diagonal grouped convs (so_nchwc_gblk, nchwc_body.h gb_run, b = 8): RegNet-Y-400MF's group width 8 (one block
   per group: its 48 / 104 / 208 / 440-channel 3x3s, stride 1 and 2, on small planes) and group widths 16 / 32 (ResNeXt),
   rows split into near-equal tiles (Wo 28 = 10 + 9 + 9, 25, 13 = 7 + 6, 7, 1), bands of rows (a 120 x 120 plane: 9
   bands), asymmetric pads and kernels, dilation 2, batch 2, residual, Relu / Sigmoid / SiLU epilogues, a NaN, a group too
   wide for the buffer (the direct conv runs it): within TOL of the reference at every level, 1 and 2 threads bitwise,
   and gb_run bitwise equal to the direct conv (run_conv). */
static void test_conv_gblk(void **state)
{
    (void)state;
    const int before = gb_ran;
    const conv_case cs[] = {
        CV(1, 48, 16, 16, 48, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 6, .bias = 1, .act1 = SO_ACT_RELU),      /* RegNet b1, s2 */
        CV(1, 104, 28, 28, 104, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 13, .bias = 1, .act1 = SO_ACT_RELU),   /* Wo 28: 10 + 9 + 9 */
        CV(1, 208, 14, 14, 208, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 26, .bias = 1, .act1 = SO_ACT_RELU),   /* 14 -> 7, s2 */
        CV(1, 440, 7, 7, 440, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 55, .bias = 1, .scale = 1, .res = 1),   /* 7 x 7, residual */
        CV(2, 16, 5, 13, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, .bias = 1, .act1 = SO_ACT_SIGMOID),    /* 13 = 7 + 6, batch 2 */
        CV(1, 16, 120, 120, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, .bias = 1, .act1 = SO_ACT_RELU),   /* bands of rows */
        CV(1, 24, 9, 25, 24, 3, 5, 2, 1, 0, 2, 1, 1, 1, 1, 3, .bias = 1),                           /* asymmetric, Wo 25 */
        CV(1, 16, 11, 11, 16, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 2, .bias = 1, .act1 = SO_EPI_SILU),     /* dilation 2 */
        CV(1, 64, 10, 10, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4, .bias = 1, .res = 1, .act2 = SO_ACT_RELU), /* groups of 16 */
        CV(2, 64, 6, 9, 64, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2, .bias = 1, .nan = 1),                  /* groups of 32, NaN */
        CV(1, 16, 3, 1, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, .bias = 1),                            /* Wo 1 */
        CV(1, 128, 3, 100, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, .bias = 1),                        /* too wide: direct */
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) run_conv(&cs[i]);
    const so_nchwc_impl *lv[3];
    int b8 = 0;
    for (int l = n_levels(lv) - 1; l >= 0; l--) b8 += lv[l]->b == 8;
    assert_int_equal(gb_ran - before, 11 * b8); /* every case but the last took gb_run at every b = 8 level */
}

/* The direct conv's wide tiles (nchwc_body.h CONV_WIDE): a block group of fewer than CONV_OBK output blocks runs
   tiles of CONV_OBK * CONV_PX / obk pixels (avx512: 24, 12, 8 at 1, 2, 3 blocks; avx2: 12 at 1), then CONV_PX,
   1..5 and border pixels. Pixel counts that end a row (or a flattened 1x1's one row) on every kind of remainder,
   1 to 3 blocks (and 5: 2 + 3), stride 1 and 2, padded 3x3 borders, odd planes, batch 2, C and O not multiples of
   the block, grouped convs (one block per group of work: group widths 16, 32, 20), residual and activations: within
   TOL of the reference at every level, bitwise the same at 1 and 2 threads (run_conv). */
static void test_conv_wide_tiles(void **state)
{
    (void)state;
    const conv_case cs[] = {
        CV(1, 32, 11, 11, 16, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU), /* 121 px: 5 x 24 + 1 */
        CV(2, 19, 7, 5, 16, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .res = 1, .act2 = SO_ACT_RELU), /* 35: 24 + 6 + 5 */
        CV(1, 16, 10, 10, 48, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU), /* 3 blocks: 12 x 8 + 4 */
        CV(1, 40, 13, 13, 32, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .scale = 1, .act1 = SO_ACT_RELU), /* 2: 14 x 12 + 1 */
        CV(1, 8, 1, 29, 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1), /* 29 px, 2 blocks: 2 x 12 + 5 */
        CV(1, 24, 50, 50, 8, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, .bias = 1), /* strided 1x1, O < b: 25 a row = 24 + 1 */
        CV(2, 24, 9, 53, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU), /* 51 interior: 24 + 24 + 3 */
        CV(1, 16, 15, 61, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, .bias = 1, .res = 1), /* stride 2, Wo 31 */
        CV(1, 20, 5, 31, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1, .scale = 1, .res = 1, .act2 = SO_ACT_RELU),
        CV(1, 30, 7, 37, 80, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU), /* 5 blocks: 2 + 3 */
        CV(1, 32, 9, 30, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, .bias = 1, .act1 = SO_ACT_RELU), /* groups of 16 */
        CV(2, 64, 6, 27, 64, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2, .bias = 1), /* groups of 32, stride 2, batch 2 */
        CV(1, 80, 6, 40, 40, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 4, .bias = 1, .res = 1), /* groups of 20 -> 10 */
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) run_conv(&cs[i]);
}

/* The 1x1 taps walked per input block and lane (nchwc_body.h PW_FMA): channel ranges that start inside a block (a
   channel chunk of the direct conv ending mid-block: 200 channels at 3 blocks per group chunk at 170 at b = 16; the
   groups of a grouped 1x1 read from channel 20), C not a multiple of b, the stride-1 (flattened) and strided forms,
   residual, batch 2, NaN; every level, 1 and 2 threads (run_conv). */
static void test_conv_pw_lanes(void **state)
{
    (void)state;
    const conv_case cs[] = {
        CV(1, 200, 7, 7, 72, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU), /* b = 16: groups of 2 + 3 blocks */
        CV(1, 340, 3, 5, 48, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .res = 1),           /* 3 blocks: chunks at 170, 340 */
        CV(1, 60, 5, 9, 30, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 3, .bias = 1),                       /* groups of 20 -> 10 */
        CV(2, 40, 9, 11, 24, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .res = 1, .act2 = SO_ACT_RELU), /* strided */
        CV(2, 72, 5, 7, 36, 1, 1, 2, 1, 0, 0, 0, 0, 1, 1, 3, .scale = 1, .bias = 1),           /* strided groups of 24 */
        CV(1, 33, 6, 6, 20, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .nan = 1),
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) run_conv(&cs[i]);
}

/* The pointwise path (nchwc_body.h pw_run, AVX2: 4 x 3 tiles; run_conv also checks its bits against the direct tile's):
   1 to 4 blocks per group and balanced groups (O = 8 .. 80), every pixel remainder of a 1..4-block tile (flattened
   rows of 1, 2, odd lengths), C not a multiple of b and more channels than one weight chunk (128 at 4 blocks: C 300,
   1100), a 1x1 plane, stride 2 (rows, even and odd widths), planes banded for L2 (C 64 on 40x40: 400 KB of input) and
   the group-major fallback (C 1100: the weights outweigh the input re-reads), residual, Relu / Clip / SiLU /
   HardSwish, NaN, batch 2; every level, 1 and 2 threads. */
static void test_conv_pw_tile(void **state)
{
    (void)state;
    const conv_case cs[] = {
        CV(1, 13, 1, 1, 8, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU),                       /* 1x1 plane, 1 block */
        CV(1, 20, 1, 2, 32, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1),                                           /* 4 blocks x 2 px */
        CV(2, 17, 5, 7, 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .res = 1, .act2 = SO_ACT_RELU),              /* 3 blocks: 35 = 8 x 4 + 3 */
        CV(1, 40, 3, 9, 16, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .scale = 1, .bias = 1, .act1 = SO_ACT_CLIP, .lo = 0.f, .hi = 0.5f), /* 27 = 4 x 6 + 3 */
        CV(1, 9, 1, 23, 8, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .act1 = SO_EPI_SILU),                       /* 1 block: 12 + 11 */
        CV(1, 300, 7, 7, 40, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU),                     /* chunks; 2 + 3 blocks */
        CV(1, 31, 6, 6, 72, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .res = 1, .act1 = SO_EPI_HARDSWISH),        /* 3 x 3 blocks */
        CV(1, 33, 4, 5, 80, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .nan = 1),                                 /* 3 + 3 + 4, NaN */
        CV(2, 24, 9, 13, 40, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .res = 1, .act2 = SO_ACT_RELU),             /* stride 2, Wo 7 */
        CV(1, 16, 10, 10, 32, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU),                    /* stride 2, Wo 5 */
        CV(1, 64, 40, 40, 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .res = 1, .act2 = SO_ACT_RELU),            /* banded */
        CV(1, 1100, 9, 9, 48, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU),                    /* group-major fallback */
        /* group shares at 2 threads in whole rounds (so_nchwc_pw_split): 10 blocks as 2 + 3 + 2 + 3 (1 thread: 3 + 3 + 4),
           20 as six groups (1 thread: five of 4) */
        CV(1, 240, 14, 14, 80, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .res = 1, .act2 = SO_ACT_RELU),
        CV(1, 200, 7, 7, 160, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .act1 = SO_EPI_HARDSWISH),
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) run_conv(&cs[i]);
}

/* so_nchwc_pw_split: every (image, band, group) once, group sets covering the groups; groups outermost exactly when the
   image's input fits the L2 budget (one band then, unless the threads need bands), else bands whose partial sums and
   one chunk of input fit the budget (or one unit); at 2 threads a multiple of 2 items or a share of the groups each. */
static void test_pw_split(void **state)
{
    (void)state;
    static const struct { int N, C, O, H, s; } cs[] = {
        {1, 256, 64, 56, 1}, {1, 64, 256, 56, 1}, {1, 2048, 512, 7, 1}, {1, 1024, 256, 14, 1}, {1, 1152, 192, 7, 1}, {1, 32, 16, 112, 1},
        {2, 96, 24, 56, 1},  {1, 256, 512, 56, 2}, {1, 13, 8, 1, 1},     {1, 1100, 48, 9, 1},  {1, 16, 48, 112, 1},  {3, 320, 1280, 7, 1},
        {1, 512, 2048, 7, 1}, {1, 24, 8, 3, 1},
        /* group shares (ngs = T): 10, 20, 9, 13, 5 and 3 output blocks (nobg 3 -> 4, 5 -> 6, 3 -> 4, 4 -> 6 at 3 threads;
           2: already whole rounds at 2 threads; 1 group: bands) */
        {1, 240, 80, 14, 1}, {1, 672, 160, 7, 1}, {1, 96, 72, 7, 1}, {1, 64, 104, 7, 1}, {1, 96, 40, 7, 1}, {1, 96, 24, 7, 1},
    };
    const int64_t l2 = 256 * 1024, kc = 128;
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
        for (int T = 1; T <= 3; T++) {
            so_nchwc_conv p;
            memset(&p, 0, sizeof p);
            const int64_t Ho = (cs[i].H - 1) / cs[i].s + 1, flat = cs[i].s == 1;
            p.b = 8, p.C = cs[i].C, p.O = cs[i].O, p.Cb = (p.C + 7) / 8, p.Ob = (p.O + 7) / 8, p.sh = p.sw = cs[i].s;
            p.H = flat ? 1 : cs[i].H, p.W = flat ? (int64_t)cs[i].H * cs[i].H : cs[i].H;
            p.Ho = flat ? 1 : Ho, p.Wo = flat ? Ho * Ho : Ho;
            so_nchwc_pwsplit s;
            so_nchwc_pw_split(&p, cs[i].N, T, 4, 3, kc, l2, &s);
            /* groups of at most 4 blocks; with group shares, whole rounds of T groups where the blocks allow */
            const int64_t nobg0 = (p.Ob + 3) / 4, nobgT = (nobg0 + T - 1) / T * T;
            if (s.ngs == T && T > 1 && nobgT <= p.Ob) assert_int_equal(s.nobg, nobgT);
            else assert_int_equal(s.nobg, nobg0);
            if (s.ngs == T && T > 1 && s.nobg % T == 0) { /* the shares' output blocks differ by at most one */
                int64_t lo = p.Ob, hi = 0;
                for (int64_t j = 0; j < T; j++) {
                    const int64_t nb = so_nchwc_group_ob(p.Ob, s.nobg, (j + 1) * s.nobg / T) - so_nchwc_group_ob(p.Ob, s.nobg, j * s.nobg / T);
                    lo = nb < lo ? nb : lo, hi = nb > hi ? nb : hi;
                }
                assert_true(hi - lo <= 1);
            }
            for (int64_t g = 0; g < s.nobg; g++) { /* every group 1..4 blocks */
                const int64_t nb = so_nchwc_group_ob(p.Ob, s.nobg, g + 1) - so_nchwc_group_ob(p.Ob, s.nobg, g);
                assert_true(nb >= 1 && nb <= 4);
            }
            assert_int_equal(s.Lb, flat ? (p.Wo + 2) / 3 : p.Ho);
            assert_int_equal(s.items, cs[i].N * s.nband * s.ngs);
            assert_true(s.nband >= 1 && s.nband <= s.Lb && s.ngs >= 1 && s.ngs <= (s.nobg > T ? s.nobg : T));
            const int64_t in_px = flat ? 3 : p.W, out_px = flat ? 3 : p.Wo, kcb = kc < p.Cb * 8 ? kc : p.Cb * 8;
            assert_int_equal(s.gouter, s.Lb * in_px * p.Cb * 8 * 4 <= l2);
            const int64_t unit = (out_px * p.Ob * 8 + kcb * in_px) * 4;
            if (T == 1) {
                if (s.gouter) assert_int_equal(s.nband, 1);
                else assert_true(s.nband == s.Lb || (s.Lb + s.nband - 1) / s.nband * unit <= l2);
            }
            if (T > 1) assert_true(s.items % T == 0 || s.ngs == T || s.nband == s.Lb);
            char *seen = calloc((size_t)(cs[i].N * s.nband * s.nobg), 1);
            for (int64_t it = 0; it < s.items; it++) {
                int64_t n, band, g0, g1;
                so_nchwc_pw_item(&s, it, &n, &band, &g0, &g1);
                assert_true(n >= 0 && n < cs[i].N && band >= 0 && band < s.nband && g0 >= 0 && g0 <= g1 && g1 <= s.nobg);
                for (int64_t g = g0; g < g1; g++) {
                    const int64_t id = (n * s.nband + band) * s.nobg + g;
                    assert_false(seen[id]);
                    seen[id] = 1;
                }
            }
            for (int64_t id = 0; id < cs[i].N * s.nband * s.nobg; id++) assert_true(seen[id]);
            free(seen);
        }
}

static void test_conv_grouped_depthwise(void **state)
{
    (void)state;
    const conv_case cs[] = {
        CV(1, 12, 6, 6, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3, .bias = 1),   /* groups of 4 -> 8: not aligned with b */
        CV(1, 32, 5, 5, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, .bias = 0),              /* groups of 16 */
        CV(1, 64, 9, 9, 64, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 32, .bias = 1),  /* ResNeXt-like groups of 2, stride 2 */
        /* groups inside a block (gsub): ResNeXt's groups of 4 and 8, C not a multiple of b, 1x1 planes, dilation,
           residual epilogue, rows of 1..DW_PX+ pixels */
        CV(1, 128, 13, 11, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 32, .bias = 1, .act1 = SO_ACT_RELU),
        CV(1, 64, 14, 14, 64, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 8, .bias = 1, .scale = 1, .act1 = SO_ACT_RELU),
        CV(2, 40, 9, 19, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 5, .bias = 1, .res = 1, .act2 = SO_ACT_RELU), /* groups of 8, C % 16 */
        CV(1, 12, 10, 10, 12, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 3, .bias = 0),           /* groups of 4, 12 channels, dilated */
        CV(1, 32, 1, 1, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8, .bias = 1, .act1 = SO_ACT_SIGMOID), /* 1x1 plane */
        CV(1, 32, 6, 7, 32, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 16, .bias = 1),            /* grouped 1x1 (flattened rows) */
        CV(1, 48, 7, 7, 48, 3, 5, 2, 1, 0, 2, 1, 2, 1, 1, 12, .bias = 1, .nan = 1),  /* asymmetric, NaN */
        CV(1, 32, 33, 33, 32, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 8, .bias = 1),           /* a long flattened row of a grouped 1x1 */
        CV(1, 20, 9, 10, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 20, .bias = 1), /* depthwise, C not a multiple of b */
        CV(1, 20, 9, 10, 20, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 20, .bias = 1, .act1 = SO_ACT_CLIP, .lo = 0.f, .hi = 0.25f),
        CV(2, 24, 11, 11, 24, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 24, .bias = 0),           /* depthwise 5x5, batch 2 */
        CV(1, 16, 12, 12, 16, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 16, .bias = 0),           /* depthwise dilated */
        CV(1, 40, 1, 1, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 40, .bias = 1),  /* depthwise on a 1x1 plane */
        /* wide planes (Wo > 2 DW_PX: the row path; 3x3 stride 1 in row pairs, dw_row2 at the AVX-512 level): odd and
           even heights, rows whose taps reach the padding, no padding, asymmetric padding, C not a multiple of b,
           residual, an epilogue that is not cheap, NaN, batch 2 */
        CV(1, 20, 9, 37, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 20, .bias = 1, .act1 = SO_ACT_RELU),
        CV(2, 33, 10, 40, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 33, .bias = 1, .res = 1, .act2 = SO_ACT_RELU),
        CV(1, 16, 7, 35, 16, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 16, .scale = 1, .act1 = SO_EPI_SILU),
        CV(1, 17, 8, 34, 17, 3, 3, 1, 1, 0, 2, 2, 0, 1, 1, 17, .bias = 1, .act1 = SO_EPI_HARDSWISH),
        CV(1, 24, 2, 41, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 24, .bias = 1, .nan = 1),
        CV(1, 16, 6, 36, 16, 3, 3, 1, 1, 2, 1, 2, 1, 1, 1, 16, .bias = 1),
        CV(1, 40, 11, 29, 40, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 40, .bias = 1, .act1 = SO_EPI_SILU),    /* 5x5 in row pairs */
        CV(2, 18, 8, 33, 18, 5, 5, 1, 1, 2, 1, 2, 3, 1, 1, 18, .bias = 1, .res = 1, .act2 = SO_ACT_RELU),
        CV(1, 20, 5, 30, 20, 5, 5, 1, 1, 0, 2, 0, 2, 1, 1, 20, .scale = 1, .nan = 1),
        /* small planes in row pairs (dw_plane): even and odd heights, 3x3 and 5x5, C % b, 1 x W and H x 1 planes */
        CV(1, 36, 14, 14, 36, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 36, .bias = 1, .act1 = SO_EPI_HARDSWISH),
        CV(2, 19, 7, 7, 19, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 19, .bias = 1, .res = 1, .act2 = SO_EPI_SILU),
        CV(1, 33, 9, 11, 33, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 33, .scale = 1, .act1 = SO_ACT_RELU, .nan = 1),
        CV(1, 16, 1, 12, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16, .bias = 1),
        CV(1, 16, 10, 1, 16, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 16, .bias = 1),
        /* stride 2 in row pairs: wide (Wo > 16) and small planes, 3x3 and 5x5, asymmetric pads, odd output heights */
        CV(1, 24, 37, 45, 24, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 24, .bias = 1, .act1 = SO_ACT_RELU),
        CV(1, 20, 30, 70, 20, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 20, .scale = 1, .act1 = SO_EPI_SILU),
        CV(2, 17, 16, 40, 17, 3, 3, 2, 2, 0, 1, 1, 0, 1, 1, 17, .bias = 1, .res = 1, .act2 = SO_ACT_RELU),
        CV(1, 40, 14, 14, 40, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 40, .bias = 1, .nan = 1),
        CV(1, 19, 13, 11, 19, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 19, .bias = 1, .act1 = SO_EPI_HARDSWISH),
        CV(1, 96, 28, 28, 96, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 96, .bias = 1, .act1 = SO_ACT_RELU),
        /* small planes (dw_plane: the block copied into a zero-bordered buffer): MNASNet's 5x5 on 7x7 with a residual,
           stride 2 whose last input row and column are never read, dilation on a non-square plane, asymmetric pads */
        CV(1, 72, 7, 7, 72, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 72, .bias = 1, .act1 = SO_ACT_RELU, .res = 1),
        CV(2, 40, 16, 16, 40, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, 40, .bias = 1, .scale = 1),
        CV(1, 24, 10, 9, 24, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 24, .bias = 0),
        CV(1, 48, 14, 14, 48, 5, 5, 2, 2, 1, 2, 2, 1, 1, 1, 48, .bias = 1, .act1 = SO_ACT_CLIP, .lo = 0.f, .hi = 6.f),
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) run_conv(&cs[i]);
}

/* Depthwise 3x3 / 5x5 at stride 1 and 2 read straight from the input in two-row tiles (dw2_rows, kernels/nchwc_body.h:
   border tiles skip the taps outside, pixel by pixel where a tile would skip more than K columns on a side): MNASNet's
   and EfficientNet's stride-2 shapes, odd input sizes, 1x1 and 2x2 planes, C not a multiple of b, pads of 0, K and
   more than K, asymmetric pads, rows whose every tap is padding, odd output heights (the last row alone), tiles of
   every width 1..8 at the end of a row, batch 2, residual, epilogues that are not cheap, NaN. run_conv: every level,
   within TOL of the reference, padding lanes zero, the same bits at 1 and 2 threads. */
static void test_dw_rows_stride2(void **state)
{
    (void)state;
    const conv_case cs[] = {
        CV(1, 240, 28, 28, 240, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 240, .bias = 1, .act1 = SO_ACT_RELU), /* MNASNet */
        CV(1, 250, 28, 28, 250, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 250, .bias = 1, .scale = 1, .act1 = SO_EPI_SILU),
        CV(1, 37, 27, 27, 37, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 37, .bias = 1, .act1 = SO_ACT_CLIP, .lo = 0.f, .hi = 6.f),
        CV(2, 21, 29, 31, 21, 5, 5, 2, 2, 1, 2, 2, 1, 1, 1, 21, .bias = 1, .res = 1, .act2 = SO_ACT_RELU),
        CV(1, 18, 1, 1, 18, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 18, .bias = 1),                       /* 1x1 plane */
        CV(1, 18, 2, 2, 18, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 18, .bias = 1, .act1 = SO_ACT_RELU), /* 2x2 -> 1x1 */
        CV(2, 35, 2, 2, 35, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 35, .bias = 1, .res = 1),             /* 2x2, stride 1 */
        CV(1, 16, 5, 6, 16, 3, 3, 1, 1, 4, 4, 4, 4, 1, 1, 16, .bias = 1),       /* pads > K: pixel by pixel */
        CV(1, 17, 6, 7, 17, 3, 3, 1, 1, 3, 3, 3, 3, 1, 1, 17, .bias = 1),       /* pads == K: whole padding rows */
        CV(1, 20, 9, 8, 20, 5, 5, 2, 2, 5, 5, 6, 6, 1, 1, 20, .scale = 1, .act1 = SO_EPI_HARDSWISH),
        CV(1, 24, 13, 45, 24, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 24, .bias = 1, .act1 = SO_EPI_SILU, .res = 1), /* Wo 23: 8 + 8 + 7 */
        CV(1, 40, 14, 14, 40, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 40, .bias = 1, .nan = 1),
        CV(1, 48, 15, 15, 48, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, 48, .bias = 1),     /* no padding, odd Ho (7) */
        CV(1, 32, 11, 21, 32, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 32, .bias = 1, .act1 = SO_ACT_SIGMOID), /* Wo 21: 8 + 8 + 5 */
        CV(2, 19, 7, 12, 19, 3, 3, 1, 1, 0, 1, 2, 0, 1, 1, 19, .bias = 1, .res = 1, .act2 = SO_ACT_RELU),
        CV(1, 16, 9, 17, 16, 5, 5, 2, 2, 0, 4, 3, 1, 1, 1, 16, .bias = 1),      /* left pad 4 at K 5, Wo 8 */
        /* the AVX2 level's 4-pixel pairs (DW2_PX 4, rows of Wo >= DW2_MIN_WO = 17): rows ending in tiles of 1, 2 and 3,
           Wo exactly 17, stride 2 onto 17 and 19 columns, C not a multiple of b, a residual, a SiLU, NaN */
        CV(1, 20, 9, 17, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 20, .bias = 1, .act1 = SO_ACT_RELU), /* Wo 17: 4 x 4 + 1 */
        CV(2, 11, 7, 18, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 11, .bias = 1, .res = 1, .act2 = SO_ACT_RELU), /* + 2 */
        CV(1, 9, 6, 19, 9, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 9, .scale = 1, .act1 = SO_EPI_SILU),   /* 5x5, + 3 */
        CV(1, 26, 11, 34, 26, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 26, .bias = 1, .nan = 1),           /* stride 2, Wo 17 */
        CV(1, 13, 10, 38, 13, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 13, .bias = 1, .act1 = SO_EPI_HARDSWISH), /* 5x5/2, Wo 19 */
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) run_conv(&cs[i]);
}

static void test_conv_epilogue_nan(void **state)
{
    (void)state;
    const conv_case cs[] = {
        /* clip with lo > 0 maps the padding lanes' 0 to lo: the kernel must clear them */
        CV(1, 13, 6, 6, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1, .scale = 1, .act1 = SO_ACT_CLIP, .lo = 0.1f, .hi = 0.5f),
        /* sigmoid: no vector form, the row pass */
        CV(1, 13, 6, 6, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1, .act1 = SO_ACT_SIGMOID, .res = 1, .act2 = SO_ACT_TANH),
        CV(1, 10, 5, 5, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 10, .scale = 1, .act1 = SO_ACT_SIGMOID),
        CV(1, 18, 6, 6, 20, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .res = 1, .act2 = SO_ACT_RELU),
        /* NaN propagates to exactly the outputs whose window reads it */
        CV(1, 9, 7, 7, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU, .nan = 1),
        CV(1, 9, 7, 7, 12, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .nan = 1),
        CV(1, 12, 7, 7, 12, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 12, .act1 = SO_ACT_CLIP, .lo = 0.f, .hi = 6.f, .nan = 1),
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) run_conv(&cs[i]);
}

/* The mobile-network epilogues (SiLU, HardSwish, HardSigmoid; kernels/epi.h) on the shapes those networks have:
   depthwise 3x3 / 5x5 at stride 1 and 2, 1x1 expansions and projections, squeeze-excite convs on 1x1 planes,
   C not a multiple of b, odd sizes, residuals, NaN, pre-activations far outside exp's range. */
static void test_conv_epilogue_mobile(void **state)
{
    (void)state;
    const conv_case cs[] = {
        CV(1, 20, 9, 10, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 20, .bias = 1, .scale = 1, .act1 = SO_EPI_SILU),
        CV(1, 20, 9, 10, 20, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 20, .bias = 1, .act1 = SO_EPI_SILU),
        CV(2, 40, 11, 7, 40, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 40, .bias = 1, .act1 = SO_EPI_HARDSWISH),
        CV(1, 24, 13, 13, 24, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 24, .scale = 1, .act1 = SO_EPI_SILU),
        CV(1, 19, 7, 7, 45, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .act1 = SO_EPI_SILU),   /* expansion */
        CV(1, 45, 7, 7, 19, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .act1 = SO_EPI_HARDSWISH, .res = 1),
        CV(1, 37, 1, 1, 9, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .act1 = SO_EPI_SILU),     /* SE reduce */
        CV(1, 9, 1, 1, 37, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .act1 = SO_EPI_HARDSIGMOID, .lo = 1.f / 6.f, .hi = 0.5f),
        CV(1, 9, 1, 1, 37, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .bias = 1, .act1 = SO_ACT_SIGMOID),  /* SE expand */
        CV(1, 16, 6, 6, 18, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU, .res = 1, .act2 = SO_EPI_SILU),
        CV(1, 17, 8, 8, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 17, .scale = 1, .big = 300.f, .act1 = SO_EPI_SILU),
        CV(1, 17, 8, 8, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 17, .scale = 1, .big = 300.f, .act1 = SO_ACT_SIGMOID),
        CV(1, 17, 8, 8, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 17, .scale = 1, .big = 300.f, .act1 = SO_EPI_HARDSWISH),
        CV(1, 12, 7, 7, 12, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 12, .act1 = SO_EPI_SILU, .nan = 1),
        CV(1, 9, 7, 7, 12, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, .act1 = SO_EPI_HARDSWISH, .nan = 1),
        CV(1, 64, 14, 14, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 64, .bias = 1, .act1 = SO_EPI_SILU),
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) run_conv(&cs[i]);
}

/* One case of test_conv_dnnl_nonfinite: a conv of N images C -> O, k x k, stride s, pad k / 2, with act1, a residual
   (res), act2 (Clip bounds lo, hi). */
typedef struct nf_case {
    int N, C, H, W, O, k, s, act1, res, act2;
    float lo, hi;
} nf_case;

/* The inputs of test_conv_dnnl_nonfinite (kernels/dnnl.c so_dnnl_conv_run: which primitive runs):
   NF_FINITE    random x, w, residual: the fast primitive (oneDNN's Relu / Clip post-ops) where there is a Relu / Clip;
   NF_X         NaN, +inf, -inf planted in x (and in the residual): the exact pass;
   NF_X_LAST    one NaN, x's last element (the end of the blocked scan: its remainder after whole vectors, its last
                chunk over the team): the exact pass;
   NF_RES_NAN   NaN, +inf, -inf in the residual only: the exact pass when a Relu / Clip follows the residual, the fast
                primitive when none does (the binary add keeps NaN);
   NF_RES_INF   +inf and -inf in the residual only: the fast primitive (finite + inf is inf, mapped as the reference does);
   NF_OVERFLOW  finite x with 3e38 on one pixel of every channel, positive weights and scales (every sum over that pixel
                overflows to +inf, in any order of additions), the residual -inf there: inf - inf = NaN after the
                residual (the reference's NaN, which oneDNN's Relu / Clip would make 0 / a bound): the exact pass. */
enum { NF_FINITE, NF_X, NF_X_LAST, NF_RES_NAN, NF_RES_INF, NF_OVERFLOW, NF_VARIANTS };

static int drops_nan_act(int act) { return act == SO_ACT_RELU || act == SO_ACT_CLIP; }

/* The largest |v| of n floats as a bit pattern (NaN above every infinity: kernels/dnnl.c absmax_bits). */
static uint32_t absmax_of(const float *v, int64_t n)
{
    uint32_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, v + i, sizeof u);
        u &= 0x7fffffffu;
        if (u > m) m = u;
    }
    return m;
}
static int facts_bounded; /* nf_run's runs whose y fact was a bound (not SO_ABSMAX_UNKNOWN) */

/* Runs case k with input variant v (an NF_* value) at 1 and 2 threads: each output element in the reference's class
   (NaN where it has NaN, the same infinity, finite within TOL), padding lanes zero, and the primitive the variant
   must take (so_dnnl_conv_run's return). Returns 1 when planned (0: oneDNN planned no primitive). */
static int nf_run(const so_nchwc_impl *L, const nf_case *k, size_t ci, int v)
{
    const int64_t N = k->N, C = k->C, H = k->H, W = k->W, O = k->O, pd = k->k / 2;
    const int64_t Ho = (H + 2 * pd - k->k) / k->s + 1, Wo = (W + 2 * pd - k->k) / k->s + 1, ny = N * O * Ho * Wo;
    float *x = rand_buf(N * C * H * W), *w = rand_buf(O * C * k->k * k->k), *bias = rand_buf(O), *scale = rand_buf(O);
    float *res = rand_buf(ny), *ref = malloc(sizeof(float) * (size_t)ny), *got = malloc(sizeof(float) * (size_t)ny);
    const float sp[3] = {NAN, INFINITY, -INFINITY};
    if (v == NF_X || v == NF_RES_NAN || v == NF_RES_INF) /* a few of each special value (pixels of several channels) */
        for (int s = v == NF_RES_INF; s < 3; s++)
            for (int j = 0; j < 3; j++) {
                frand();
                if (v == NF_X) x[rng % (uint64_t)(N * C * H * W)] = sp[s];
                frand();
                if (k->res) res[rng % (uint64_t)ny] = sp[s];
            }
    if (v == NF_X_LAST) x[N * C * H * W - 1] = NAN;
    if (v == NF_OVERFLOW) {
        const int64_t n0 = N - 1, h0 = H / 2, w0 = W / 2; /* the big pixel; the residual -inf on every output it reaches */
        for (int64_t i = 0; i < O * C * k->k * k->k; i++) w[i] = 0.5f + 0.5f * fabsf(w[i]);
        for (int64_t o = 0; o < O; o++) scale[o] = 0.5f + 0.5f * fabsf(scale[o]);
        for (int64_t c = 0; c < C; c++) x[((n0 * C + c) * H + h0) * W + w0] = 3e38f;
        for (int64_t o = 0; o < O; o++)
            for (int64_t oh = 0; oh < Ho; oh++)
                for (int64_t ow = 0; ow < Wo; ow++)
                    if (llabs(oh * k->s - pd + pd - h0) <= pd && llabs(ow * k->s - pd + pd - w0) <= pd && k->res)
                        res[((n0 * O + o) * Ho + oh) * Wo + ow] = -INFINITY;
    }
    so_attr a = {0};
    a.stride[0] = a.stride[1] = k->s, a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = (int32_t)pd, a.dilation[0] = a.dilation[1] = 1, a.group = 1;
    so_node nd = {.op = SO_OP_CONV, .n_in = 2, .n_out = 1, .attr = &a, .ref = -1};
    so_tensor in[2] = {{shp4(N, C, H, W), x}, {shp4(O, C, k->k, k->k), w}}, out = {shp4(N, O, Ho, Wo), ref};
    assert_int_equal(so_ref_conv(NULL, &nd, in, &out), SO_OK);
    int ref_nan = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < O; o++) {
            float *r = ref + (n * O + o) * Ho * Wo;
            for (int64_t q = 0; q < Ho * Wo; q++) r[q] = (float)((double)r[q] * scale[o] + bias[o]);
            ref_act(k->act1, k->lo, k->hi, r, Ho * Wo);
            if (k->res)
                for (int64_t q = 0; q < Ho * Wo; q++) r[q] += res[(n * O + o) * Ho * Wo + q];
            ref_act(k->act2, k->lo, k->hi, r, Ho * Wo);
            for (int64_t q = 0; q < Ho * Wo; q++) ref_nan += isnan(r[q]);
        }
    /* the overflow variant must reach a NaN where +inf survives act1 into the residual add (else it tests nothing) */
    if (v == NF_OVERFLOW && k->res && (k->act1 == SO_ACT_NONE || k->act1 == SO_ACT_RELU) && !ref_nan) fail_msg("case %zu: the overflow input gives no NaN", ci);
    so_epi ep = {.scale = scale, .shift = bias, .act1 = k->act1, .act2 = k->act2, .lo1 = k->lo, .hi1 = k->hi, .lo2 = k->lo, .hi2 = k->hi,
                 .has_res = k->res};
    const int b = L->b;
    so_dnnl_conv *p = so_dnnl_conv_plan(N, C, H, W, O, Ho, Wo, k->k, k->k, k->s, k->s, pd, pd, pd, pd, 1, 1, 1, w, &ep, 0, b);
    if (p) {
        const int tail = drops_nan_act(k->act1) || drops_nan_act(k->act2), res_checked = k->res && drops_nan_act(k->act2);
        /* (not for a Relu / Clip before the residual with O % 16 or O % b: oneDNN 2.6 computes that one wrong, kernels/dnnl.c) */
        const int fast_planned = tail && !(drops_nan_act(k->act1) && k->res && dnnl_fast_excluded(b, O));
        const int want_fast = fast_planned && (v == NF_FINITE || v == NF_RES_INF || (v == NF_RES_NAN && !res_checked));
        float *xb = blocked(L, x, N, C, H * W), *rb = k->res ? blocked(L, res, N, O, Ho * Wo) : NULL;
        const int64_t nb = so_nchwc_numel(b, N, O, Ho * Wo), Ob = (O + b - 1) / b;
        float *y = malloc(sizeof(float) * (size_t)nb);
        void *scratch = aligned_alloc(64, (so_dnnl_conv_scratch_bytes(p) + 127) / 64 * 64);
        const int t0 = omp_get_max_threads();
        for (int t = 1; t <= 2; t++) {
            omp_set_num_threads(t);
            memset(y, 0x7f, sizeof(float) * (size_t)nb);
            const int fast = so_dnnl_conv_run(p, xb, y, rb, scratch);
            for (int64_t n = 0; n < N; n++) /* padding lanes */
                for (int64_t q = 0; q < Ho * Wo; q++)
                    for (int64_t c = O; c < Ob * b; c++)
                        if (y[((n * Ob + c / b) * Ho * Wo + q) * b + c % b] != 0.0f)
                            fail_msg("case %zu variant %d (%s), %d threads: padding lane %lld of pixel %lld is %g", ci, v, so_dnnl_conv_impl(p), t,
                                     (long long)c, (long long)q, y[((n * Ob + c / b) * Ho * Wo + q) * b + c % b]);
            L->from_blocked(y, got, N, O, Ho * Wo, 1);
            double mx = 0, err = 0;
            for (int64_t i = 0; i < ny; i++)
                if (isfinite(ref[i]) && fabs(ref[i]) > mx) mx = fabs(ref[i]);
            for (int64_t i = 0; i < ny; i++) {
                const float r = ref[i], g = got[i];
                const int same = isnan(r) ? isnan(g) : isinf(r) ? g == r : isfinite(g);
                if (!same)
                    fail_msg("case %zu variant %d (%s, act1 %d res %d act2 %d), %d threads: element %lld is %g, reference %g", ci, v, so_dnnl_conv_impl(p),
                             k->act1, k->res, k->act2, t, (long long)i, g, r);
                if (isfinite(r) && fabs(g - r) > err) err = fabs(g - r);
            }
            if (err / (mx > 1e-6 ? mx : 1e-6) > TOL)
                fail_msg("case %zu variant %d (%s), %d threads: max error %g (max |ref| %g)", ci, v, so_dnnl_conv_impl(p), t, err, mx);
            if (fast != want_fast)
                fail_msg("case %zu variant %d (%s, act1 %d res %d act2 %d): the %s primitive ran", ci, v, so_dnnl_conv_impl(p), k->act1, k->res, k->act2,
                         fast ? "fast" : "exact");
            /* with the run's facts (so_dnnl_conv_run_known): unknown ones are scanned and left at what the scan found,
               the same primitive runs, y's fact bounds y; exact facts given (a producer's) choose the same without a
               scan; loose ones (true bounds: "finite" / "no NaN") too large for the choice are rescanned */
            const uint32_t tx = absmax_of(xb, so_nchwc_numel(b, N, C, H * W)), tr = rb ? absmax_of(rb, nb) : 0;
            for (int given = 0; given < 3; given++) {
                const uint32_t lx = tx <= 0x7f7fffffu ? 0x7f7fffffu : tx <= 0x7f800000u ? 0x7f800000u : SO_ABSMAX_UNKNOWN;
                const uint32_t lr = tr <= 0x7f800000u ? 0x7f800000u : SO_ABSMAX_UNKNOWN;
                const uint32_t fx0 = given == 0 ? SO_ABSMAX_UNKNOWN : given == 1 ? tx : lx, fr0 = given == 0 ? SO_ABSMAX_UNKNOWN : given == 1 ? tr : lr;
                uint32_t fx = fx0, fr = fr0, fy = 0;
                memset(y, 0x7f, sizeof(float) * (size_t)nb);
                const int kfast = so_dnnl_conv_run_known(p, xb, y, rb, scratch, &fx, rb ? &fr : NULL, &fy);
                if (kfast != want_fast) fail_msg("case %zu variant %d, facts given %d: the %s primitive ran", ci, v, given, kfast ? "fast" : "exact");
                if ((fx != fx0 && fx != tx) || (rb && fr != fr0 && fr != tr))
                    fail_msg("case %zu variant %d: facts x %#x res %#x after the run, the values' %#x %#x", ci, v, fx, fr, tx, tr);
                if (want_fast && fx != tx) fail_msg("case %zu variant %d, facts given %d: x's fact %#x, its absmax %#x", ci, v, given, fx, tx);
                const uint32_t ty = absmax_of(y, nb);
                if (fy != SO_ABSMAX_UNKNOWN && ty > fy) fail_msg("case %zu variant %d, facts given %d: y's fact %#x below its absmax %#x", ci, v, given, fy, ty);
                if (fy != SO_ABSMAX_UNKNOWN) facts_bounded++;
            }
        }
        omp_set_num_threads(t0);
        so_dnnl_conv_free(p);
        free(scratch), free(y), free(xb), free(rb);
    }
    free(x), free(w), free(bias), free(scale), free(res), free(ref), free(got);
    return p != NULL;
}

/* oneDNN's convolution primitive (kernels/dnnl.c; conv_backend in nchwc.c runs it where its timing wins) on inputs
   and residuals with NaN, +inf and -inf and on finite inputs whose sums overflow, with every activation the oneDNN
   path applies (Relu, Clip with lo = 0, lo < 0 and lo > 0, Sigmoid, Tanh, SiLU, HardSwish; before and after a
   residual), and on finite inputs: each output element in the reference's class, padding lanes zero, 1 and 2
   threads, and the primitive each input must take (nf_run's variants: oneDNN's Relu / Clip post-ops on inputs
   from which no NaN can reach them, our exact pass otherwise). Planned directly (forcing the path); direct only (a
   Winograd tile spreads a non-finite value by design). 1x1, 3x3, stride 2, O not a multiple of 16 or of 8, batch 2;
   on the blocked values of the avx2 (nChw8c) and AVX-512 (nChw16c) levels this CPU runs. Before the Relu / Clip tail
   (dnnl.c epi_split) oneDNN's eltwise post-ops gave Relu(NaN) = 0 and Clip(NaN) = a bound. Counts the plans: at
   those levels with libdnnl loaded, every case. */
static void test_conv_dnnl_nonfinite(void **state)
{
    (void)state;
    const so_nchwc_impl *lv[2];
    const int nl = dnnl_levels(lv);
    if (!nl) skip();
    const nf_case cs[] = {
        {1, 32, 6, 7, 32, 3, 1, SO_ACT_RELU, 0, SO_ACT_NONE, 0.f, 0.f},
        {1, 24, 5, 9, 40, 1, 1, SO_ACT_RELU, 0, SO_ACT_NONE, 0.f, 0.f},       /* 1x1, O % 16 */
        {2, 32, 9, 8, 48, 3, 2, SO_ACT_CLIP, 0, SO_ACT_NONE, 0.f, 6.f},       /* stride 2, batch 2, ReLU6 */
        {1, 24, 5, 9, 40, 1, 1, SO_ACT_CLIP, 0, SO_ACT_NONE, -0.5f, 0.25f},
        {1, 32, 6, 6, 20, 3, 1, SO_ACT_CLIP, 0, SO_ACT_NONE, 0.1f, 0.5f},     /* lo > 0: padding lanes stay zero */
        {1, 32, 6, 7, 32, 3, 1, SO_ACT_NONE, 1, SO_ACT_RELU, 0.f, 0.f},       /* ResNet's conv + residual + Relu */
        {2, 24, 5, 9, 40, 1, 1, SO_ACT_RELU, 1, SO_ACT_RELU, 0.f, 0.f},
        {1, 32, 6, 7, 32, 3, 1, SO_ACT_RELU, 1, SO_ACT_NONE, 0.f, 0.f},
        {1, 32, 6, 7, 24, 3, 1, SO_ACT_SIGMOID, 1, SO_ACT_CLIP, -0.5f, 0.5f},
        {1, 32, 6, 7, 32, 3, 1, SO_ACT_SIGMOID, 0, SO_ACT_NONE, 0.f, 0.f},
        {1, 24, 5, 9, 40, 1, 1, SO_ACT_TANH, 1, SO_ACT_TANH, 0.f, 0.f},
        {1, 32, 6, 7, 32, 3, 1, SO_EPI_SILU, 0, SO_ACT_NONE, 0.f, 0.f},
        {1, 24, 5, 9, 40, 1, 1, SO_EPI_HARDSWISH, 1, SO_ACT_NONE, 0.f, 0.f},
        {1, 32, 6, 7, 32, 3, 1, SO_ACT_NONE, 0, SO_ACT_NONE, 0.f, 0.f},
        {1, 24, 5, 9, 40, 1, 1, SO_ACT_CLIP, 1, SO_ACT_CLIP, -0.5f, 0.5f},   /* 1x1, O % 16, Clip on both sides */
        {1, 40, 36, 40, 24, 1, 1, SO_ACT_RELU, 0, SO_ACT_NONE, 0.f, 0.f},     /* x over the team in chunks (dnnl.c SCAN_PAR) */
        {1, 16, 67, 65, 32, 1, 1, SO_ACT_NONE, 1, SO_ACT_RELU, 0.f, 0.f},     /* x and the residual over the team */
        /* a Relu / Clip before the residual with O a multiple of 8 but not 16 (3x3), and with O not a multiple of 8
           (1x1, 3x3): the last block partial at both levels */
        {1, 32, 6, 7, 24, 3, 1, SO_ACT_RELU, 1, SO_ACT_NONE, 0.f, 0.f},
        {1, 24, 5, 9, 20, 1, 1, SO_ACT_RELU, 1, SO_ACT_RELU, 0.f, 0.f},
        {1, 19, 6, 7, 12, 3, 1, SO_ACT_CLIP, 1, SO_ACT_NONE, 0.f, 6.f},
        {2, 13, 5, 6, 21, 3, 2, SO_ACT_RELU, 0, SO_ACT_NONE, 0.f, 0.f},       /* C and O not multiples of 8, stride 2 */
    };
    for (int li = 0; li < nl; li++) {
        const so_nchwc_impl *L = lv[li];
        int planned = 0, runs = 0;
        facts_bounded = 0;
        for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++)
            for (int v = 0; v < NF_VARIANTS; v++) {
                if ((v == NF_RES_NAN || v == NF_RES_INF) && !cs[ci].res) continue;
                runs++;
                if (nf_run(L, &cs[ci], ci, v)) planned++;
                else fail_msg("b = %d, case %zu: oneDNN planned no primitive", L->b, ci);
            }
        assert_int_equal(planned, runs);
        assert_true(facts_bounded > 0); /* (the finite variants of the Relu / Clip cases give y a bound) */
        /* a Relu before a residual and a SiLU after it: the tail would need the SiLU after our Relu, so not planned */
        float *w = rand_buf(32 * 32 * 9);
        so_epi ep = {.act1 = SO_ACT_RELU, .has_res = 1, .act2 = SO_EPI_SILU};
        assert_null(so_dnnl_conv_plan(1, 32, 6, 7, 32, 6, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, w, &ep, 0, L->b));
        ep.act2 = SO_ACT_CLIP, ep.lo2 = 0.f, ep.hi2 = 6.f;
        so_dnnl_conv *p = so_dnnl_conv_plan(1, 32, 6, 7, 32, 6, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, w, &ep, 0, L->b);
        assert_non_null(p);
        so_dnnl_conv_free(p);
        /* only the blocks our levels have */
        assert_null(so_dnnl_conv_plan(1, 32, 6, 7, 32, 6, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, w, NULL, 0, 4));
        free(w);
    }
}

/* test_conv_dnnl_facts at the level L. */
static void conv_dnnl_facts(const so_nchwc_impl *L)
{
    const int64_t C = 24, O = 40, H = 5, W = 7, nx = so_nchwc_numel(L->b, 1, C, H * W), ny = so_nchwc_numel(L->b, 1, O, H * W);
    float *w = rand_buf(O * C), *bias = rand_buf(O), *x = malloc(sizeof(float) * (size_t)(C * H * W));
    for (int64_t i = 0; i < O * C; i++) w[i] = 0.25f + fabsf(w[i]);
    for (int64_t o = 0; o < O; o++) bias[o] = 0.5f + fabsf(bias[o]);
    for (int64_t i = 0; i < C * H * W; i++) x[i] = 1.5f;
    float *res = malloc(sizeof(float) * (size_t)(O * H * W));
    for (int64_t i = 0; i < O * H * W; i++) res[i] = (float)(i % 7) - 3.f; /* |res| <= 3 */
    float *xb = blocked(L, x, 1, C, H * W), *rb = blocked(L, res, 1, O, H * W), *y = malloc(sizeof(float) * (size_t)ny);
    const uint32_t tx = absmax_of(xb, nx), tr = absmax_of(rb, ny);
    const int t0 = omp_get_max_threads();
    for (int act = 0; act < 2; act++)
        for (int r = 0; r < 2; r++) {
            so_epi ep = {.shift = bias, .act1 = act && !r ? SO_ACT_RELU : SO_ACT_NONE, .has_res = r, .act2 = act && r ? SO_ACT_RELU : SO_ACT_NONE};
            so_dnnl_conv *p = so_dnnl_conv_plan(1, C, H, W, O, H, W, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, w, &ep, 0, L->b);
            assert_non_null(p);
            void *scratch = aligned_alloc(64, (so_dnnl_conv_scratch_bytes(p) + 127) / 64 * 64);
            for (int t = 1; t <= 2; t++) {
                omp_set_num_threads(t);
                for (int known = 0; known < 3; known++) { /* x and res facts: unknown, x known, both known */
                    uint32_t fx = known ? tx : SO_ABSMAX_UNKNOWN, fr = known == 2 ? tr : SO_ABSMAX_UNKNOWN, fy = 0;
                    const int fast = so_dnnl_conv_run_known(p, xb, y, r ? rb : NULL, scratch, &fx, r ? &fr : NULL, &fy);
                    assert_int_equal(fast, act);
                    const uint32_t ty = absmax_of(y, ny);
                    float fyv, tyv;
                    memcpy(&fyv, &fy, sizeof fy), memcpy(&tyv, &ty, sizeof ty);
                    /* a bound is known when x's fact is (or the gate scanned x) and, with a residual, res's is (or was scanned) */
                    const int want = (known || act) && (!r || known == 2 || act);
                    if (!want) {
                        if (fy != SO_ABSMAX_UNKNOWN) fail_msg("b = %d, act %d res %d known %d, %d threads: y's fact %g without known inputs", L->b, act, r, known, t, fyv);
                        continue;
                    }
                    if (fy == SO_ABSMAX_UNKNOWN) fail_msg("b = %d, act %d res %d known %d, %d threads: no bound for y", L->b, act, r, known, t);
                    if (!(fyv >= tyv && fyv <= 4 * tyv)) fail_msg("b = %d, act %d res %d known %d, %d threads: y's fact %g, its absmax %g", L->b, act, r, known, t, fyv, tyv);
                }
            }
            omp_set_num_threads(t0);
            free(scratch);
            so_dnnl_conv_free(p);
        }
    free(w), free(bias), free(x), free(res), free(xb), free(rb), free(y);
}

/* The output fact of so_dnnl_conv_run_known where the bound is nearly reached: a 1x1 conv with positive weights and
   bias on a constant input m, so y[o] = m * sum|w[o]| + b[o] at every pixel; Relu (fast primitive) or no activation
   (plain), with and without a residual of known bound. The fact must be a bound (>= every |y|), within 4x of the
   largest |y| (a bound that is useless would pass the first check only), unknown when x's fact is unknown on the plain
   conv (nothing scanned there) or when the residual's is. 1 and 2 threads; at each level oneDNN runs (b = 8, 16). */
static void test_conv_dnnl_facts(void **state)
{
    (void)state;
    const so_nchwc_impl *lv[2];
    const int nl = dnnl_levels(lv);
    if (!nl) skip();
    for (int li = 0; li < nl; li++) conv_dnnl_facts(lv[li]);
}

/* Stems (kernels/nchwc.h stem: a few-channel plain image into a blocked conv; run_conv runs it on every group-1
   case without a residual): MNASNet / MobileNet / EfficientNet's 3x3/2 to 32 (2 blocks at b = 16, 4 at b = 8),
   ResNet's 7x7/2 to 64, output channels not a multiple of b and more blocks than a register tile, W > 16 with odd
   sizes and asymmetric padding, 1 and 4 input channels, two images, dilation, a 1x1 plane, the stems' epilogues. */
static void test_conv_stem(void **state)
{
    (void)state;
    const conv_case cs[] = {
        CV(1, 3, 37, 35, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU),
        CV(2, 3, 29, 40, 24, 3, 3, 2, 2, 0, 1, 1, 0, 1, 1, 1, .bias = 1, .act1 = SO_EPI_HARDSWISH),
        CV(1, 3, 23, 41, 80, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, .scale = 1, .bias = 1, .act1 = SO_EPI_SILU),
        CV(1, 3, 30, 30, 64, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU),
        CV(1, 1, 19, 26, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1),
        CV(1, 4, 21, 18, 17, 3, 3, 1, 2, 2, 2, 2, 2, 2, 2, 1, .bias = 1, .act1 = SO_ACT_CLIP, .lo = -0.5f, .hi = 0.5f),
        CV(1, 3, 1, 1, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1),
        CV(1, 3, 16, 17, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU, .nan = 1),
        /* MNASNet's stem row (112 pixels: 111 interior = full tiles + a smaller remainder tile at every obk), and
           stride 1 rows whose remainders take each of stem_npx's tile sizes */
        CV(1, 3, 5, 224, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU),
        CV(1, 3, 3, 61, 80, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1),
        CV(2, 2, 4, 47, 48, 3, 3, 1, 1, 0, 1, 0, 1, 1, 1, 1, .bias = 1, .act1 = SO_ACT_RELU),
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) run_conv(&cs[i]);
}

/* The stem + depthwise kernel (stem_dw: the depthwise conv of the stem's rows kept per thread) against the stem
   kernel then the blocked conv, bit for bit, at 1 and 2 threads: MNASNet / MobileNet-v2's 3x3/2 stem to 32 then
   3x3 at stride 1, stride 2, a 5x5, channels not a multiple of b, two images, odd and tiny planes, asymmetric pads
   (a pad row past the stem's last row), the depthwise epilogues, NaN in the image. */
static void test_conv_stem_dw(void **state)
{
    (void)state;
    typedef struct sdw_case {
        int N, C, H, W, O, k, s, p; /* stem: C -> O, k x k, stride s, pad p on every side */
        int dk, ds, dpt, dpl, dpb, dpr; /* depthwise: dk x dk, stride ds, pads */
        int act, dact, nan;
    } sdw_case;
    const sdw_case cs[] = {
        {1, 3, 40, 37, 32, 3, 2, 1, 3, 1, 1, 1, 1, 1, SO_ACT_RELU, SO_ACT_RELU, 0},
        {2, 3, 23, 30, 24, 3, 2, 1, 3, 2, 1, 1, 1, 1, SO_ACT_RELU, SO_ACT_CLIP, 0},
        {1, 3, 29, 26, 40, 3, 2, 1, 5, 1, 2, 2, 2, 2, SO_EPI_HARDSWISH, SO_ACT_NONE, 0},
        {1, 3, 27, 33, 16, 3, 2, 1, 5, 2, 2, 2, 2, 2, SO_ACT_RELU, SO_ACT_RELU, 1},
        {1, 1, 9, 12, 20, 3, 1, 1, 3, 1, 0, 1, 2, 0, SO_ACT_NONE, SO_ACT_RELU, 0},
        {1, 3, 4, 5, 8, 3, 2, 1, 3, 1, 1, 1, 1, 1, SO_ACT_RELU, SO_ACT_RELU, 0},
    };
    for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++) {
        const sdw_case *k = &cs[ci];
        const int64_t N = k->N, C = k->C, H = k->H, W = k->W, O = k->O;
        const int64_t Hs = (H + 2 * k->p - k->k) / k->s + 1, Ws = (W + 2 * k->p - k->k) / k->s + 1;
        const int64_t Ho = (Hs + k->dpt + k->dpb - k->dk) / k->ds + 1, Wo = (Ws + k->dpl + k->dpr - k->dk) / k->ds + 1;
        float *x = rand_buf(N * C * H * W), *w = rand_buf(O * C * k->k * k->k), *b = rand_buf(O);
        float *dwt = rand_buf(O * k->dk * k->dk), *db = rand_buf(O), *ds = rand_buf(O);
        if (k->nan) x[N * C * H * W / 3] = NAN;
        const so_nchwc_impl *lv[3];
        const int nl = n_levels(lv);
        for (int l = 0; l < nl; l++) {
            const so_nchwc_impl *L = lv[l];
            char what[200];
            snprintf(what, sizeof what, "stem_dw N%d C%d %dx%d O%d k%d s%d then dw k%d s%d p%d,%d,%d,%d (%s)", k->N, k->C, k->H, k->W, k->O,
                     k->k, k->s, k->dk, k->ds, k->dpt, k->dpl, k->dpb, k->dpr, L->isa);
            so_epi ep = {.shift = b, .act1 = k->act, .lo1 = 0, .hi1 = 6}, dep = {.scale = ds, .shift = db, .act1 = k->dact, .lo1 = 0, .hi1 = 6};
            so_nchwc_conv p, d;
            assert_int_equal(so_nchwc_conv_plan(&p, L->b, C, H, W, O, Hs, Ws, k->k, k->k, k->s, k->s, k->p, k->p, 1, 1, 1, w, &ep), 0);
            assert_int_equal(so_nchwc_conv_plan(&d, L->b, O, Hs, Ws, O, Ho, Wo, k->dk, k->dk, k->ds, k->ds, k->dpt, k->dpl, 1, 1, O, dwt, &dep), 0);
            const int64_t ns = so_nchwc_numel(L->b, N, O, Hs * Ws), ny = so_nchwc_numel(L->b, N, O, Ho * Wo);
            float *s1 = malloc(sizeof(float) * (size_t)ns), *ref = malloc(sizeof(float) * (size_t)ny);
            L->stem(&p, N, x, s1, 1);
            L->conv(&d, N, s1, ref, NULL, 1);
            for (int T = 1; T <= 2; T++) {
                float *y = malloc(sizeof(float) * (size_t)ny), *sc = malloc(sizeof(float) * (size_t)so_nchwc_stem_dw_scratch(&p, &d, T));
                memset(y, 0x7f, sizeof(float) * (size_t)ny);
                memset(sc, 0x7f, sizeof(float) * (size_t)so_nchwc_stem_dw_scratch(&p, &d, T));
                L->stem_dw(&p, &d, N, x, y, sc, T);
                if (memcmp(ref, y, sizeof(float) * (size_t)ny)) fail_msg("%s at %d threads: not the stem then the depthwise conv", what, T);
                free(y), free(sc);
            }
            so_nchwc_conv_free(&p), so_nchwc_conv_free(&d);
            free(s1), free(ref);
        }
        free(x), free(w), free(b), free(dwt), free(db), free(ds);
    }
}

/* ---------------- pooling ---------------- */

static void run_pool(int is_max, int C, int H, int W, int kh, int kw, int sh, int sw, int pt, int pl, int pb, int pr, int dh, int cip, int nan)
{
    const int64_t N = 2, Ho = (H + pt + pb - dh * (kh - 1) - 1) / sh + 1, Wo = (W + pl + pr - dh * (kw - 1) - 1) / sw + 1;
    float *x = rand_buf(N * C * H * W), *ref = malloc(sizeof(float) * (size_t)(N * C * Ho * Wo));
    if (nan) x[C * H * W / 3] = NAN;
    so_attr a = {0};
    a.kernel[0] = kh, a.kernel[1] = kw, a.stride[0] = sh, a.stride[1] = sw, a.pad[0] = pt, a.pad[1] = pl, a.pad[2] = pb, a.pad[3] = pr;
    a.dilation[0] = a.dilation[1] = dh, a.count_include_pad = cip;
    so_node nd = {.op = is_max ? SO_OP_MAXPOOL : SO_OP_AVGPOOL, .n_in = 1, .n_out = 1, .attr = &a, .ref = -1};
    so_tensor in = {shp4(N, C, H, W), x}, out = {shp4(N, C, Ho, Wo), ref};
    assert_int_equal((is_max ? so_ref_maxpool : so_ref_avgpool)(NULL, &nd, &in, &out), SO_OK);
    const so_nchwc_impl *lv[3];
    const int nl = n_levels(lv);
    for (int l = 0; l < nl; l++) {
        const so_nchwc_impl *L = lv[l];
        so_nchwc_pool p = {.C = C, .H = H, .W = W, .Ho = Ho, .Wo = Wo, .kh = kh, .kw = kw, .sh = sh, .sw = sw, .pt = pt, .pl = pl,
                           .pb = pb, .pr = pr, .dh = dh, .dw = dh, .is_max = is_max, .count_include_pad = cip};
        float *xb = blocked(L, x, N, C, H * W);
        const int64_t ny = so_nchwc_numel(L->b, N, C, Ho * Wo);
        float *y1 = malloc(sizeof(float) * (size_t)ny), *y2 = malloc(sizeof(float) * (size_t)ny);
        L->pool(&p, N, xb, y1, 1);
        L->pool(&p, N, xb, y2, 2);
        char what[120];
        snprintf(what, sizeof what, "%s pool C%d %dx%d k%dx%d s%d p%d,%d,%d,%d d%d cip%d", is_max ? "max" : "avg", C, H, W, kh, kw, sh, pt, pl, pb, pr, dh, cip);
        check(L, y1, ref, N, C, Ho * Wo, what);
        same_for_threads(y1, y2, ny, what);
        if (!is_max) { /* the kernel's float sums, rows then columns, times 1/count: the same bits at every pixel,
                          whether it ran in a tile of several pixels or alone (pool_run's avg_tile) */
            float *got = malloc(sizeof(float) * (size_t)(N * C * Ho * Wo));
            L->from_blocked(y1, got, N, C, Ho * Wo, 1);
            for (int64_t q = 0; q < N * C; q++)
                for (int64_t oh = 0; oh < Ho; oh++)
                    for (int64_t ow = 0; ow < Wo; ow++) {
                        int64_t h0 = oh * sh - pt, w0 = ow * sw - pl;
                        int64_t h1 = h0 + kh < H + pb ? h0 + kh : H + pb, w1 = w0 + kw < W + pr ? w0 + kw : W + pr;
                        const int64_t padded = (h1 - h0) * (w1 - w0);
                        h0 = h0 > 0 ? h0 : 0, w0 = w0 > 0 ? w0 : 0, h1 = h1 < H ? h1 : H, w1 = w1 < W ? w1 : W;
                        float acc = 0;
                        for (int64_t ih = h0; ih < h1; ih++)
                            for (int64_t iw = w0; iw < w1; iw++) acc += x[(q * H + ih) * W + iw];
                        const int64_t cnt = cip ? padded : (h1 - h0) * (w1 - w0);
                        const float want = cnt > 0 ? acc * (float)(1.0 / (double)cnt) : 0.0f, g = got[(q * Ho + oh) * Wo + ow];
                        if (memcmp(&want, &g, sizeof g) && !(want != want && g != g))
                            fail_msg("%s (%s): plane %lld pixel (%lld, %lld) is %.9g, the one-pixel sum %.9g (bits differ)", what, L->isa,
                                     (long long)q, (long long)oh, (long long)ow, g, want);
                    }
            free(got);
        }
        free(xb), free(y1), free(y2);
    }
    free(x), free(ref);
}

static void test_pool(void **state)
{
    (void)state;
    run_pool(1, 19, 13, 12, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, 0); /* ResNet's max pool */
    run_pool(1, 19, 13, 12, 3, 3, 2, 2, 0, 0, 1, 1, 1, 0, 1); /* ceil mode as an extra bottom/right pad; NaN */
    run_pool(1, 8, 9, 9, 3, 3, 1, 1, 2, 2, 2, 2, 2, 0, 0);    /* dilated */
    run_pool(1, 5, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0);    /* 1x1 plane */
    run_pool(0, 21, 8, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0);   /* average, padding not counted */
    run_pool(0, 21, 8, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0);   /* counted */
    run_pool(0, 21, 9, 9, 3, 3, 2, 2, 0, 0, 1, 1, 1, 0, 1);   /* ceil mode, NaN */
    run_pool(0, 3, 7, 7, 7, 7, 1, 1, 0, 0, 0, 0, 1, 0, 0);    /* one window */
    /* rows wide enough for pool_run's multi-pixel tiles (8, 4, 2 pixels at b = 16; 4, 2 at b = 8) and the one-pixel
       remainders: Inception-v3's 3x3/1 pad 1 average (counted and not), a 3x3/2 average with ceil mode and NaN, a
       5x5 average, ResNet's max pool on a wide row with NaN, a dilated max pool, a 2x2/2 max pool */
    run_pool(0, 21, 9, 35, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0);
    run_pool(0, 21, 9, 35, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0);
    run_pool(0, 19, 7, 30, 3, 3, 2, 2, 0, 0, 1, 1, 1, 0, 1);
    run_pool(0, 5, 6, 27, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 0);
    run_pool(1, 19, 7, 37, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, 1);
    run_pool(1, 8, 9, 27, 3, 3, 1, 1, 2, 2, 2, 2, 2, 0, 0);
    run_pool(1, 17, 6, 34, 2, 2, 2, 2, 0, 0, 0, 0, 1, 0, 0);
}

/* Blocked max pooling is the reference bit for bit, NaN included: one NaN, +inf or -inf planted at each input
   pixel in turn (in channel pixel % C; every other input a distinct non-zero finite value), 3x3 stride 2 with pads
   and ceil mode, dilation 2, 2x2 stride 2, and the global max pool, every level, 1 and 2 threads: NaN exactly
   where the reference has NaN, every other output the same bits, padding lanes zero. */
static void test_pool_special_positions(void **state)
{
    (void)state;
    static const int pc[][10] = {/* H, W, k, s, pads t l b r, dilation, global */
                                 {9, 11, 3, 2, 1, 1, 1, 1, 1, 0}, {8, 9, 3, 2, 0, 0, 1, 1, 1, 0}, {7, 7, 3, 1, 2, 2, 2, 2, 2, 0},
                                 {6, 6, 2, 2, 0, 0, 0, 0, 1, 0}, {5, 7, 0, 0, 0, 0, 0, 0, 0, 1},
                                 /* rows wide enough for pool_run's multi-pixel tiles and their remainders */
                                 {3, 37, 3, 2, 1, 1, 1, 1, 1, 0}, {3, 23, 3, 1, 1, 1, 1, 1, 1, 0}, {5, 25, 3, 1, 2, 2, 2, 2, 2, 0}};
    const float sp[3] = {NAN, INFINITY, -INFINITY};
    const int64_t N = 1, C = 11;
    const so_nchwc_impl *lv[3];
    const int nl = n_levels(lv);
    for (size_t c = 0; c < sizeof pc / sizeof pc[0]; c++) {
        const int *k = pc[c], glob = k[9];
        const int64_t H = k[0], W = k[1], kk = glob ? 0 : k[2], d = k[8];
        const int64_t Ho = glob ? 1 : (H + k[4] + k[6] - d * (kk - 1) - 1) / k[3] + 1, Wo = glob ? 1 : (W + k[5] + k[7] - d * (kk - 1) - 1) / k[3] + 1;
        float *x = malloc(sizeof(float) * (size_t)(N * C * H * W)), *ref = malloc(sizeof(float) * (size_t)(N * C * Ho * Wo));
        for (int64_t i = 0; i < N * C * H * W; i++) x[i] = (float)((i * 37) % 101) - 50.5f;
        so_attr a = {0};
        a.kernel[0] = (int32_t)(glob ? H : kk), a.kernel[1] = (int32_t)(glob ? W : kk), a.stride[0] = a.stride[1] = glob ? 1 : k[3];
        a.pad[0] = k[4], a.pad[1] = k[5], a.pad[2] = k[6], a.pad[3] = k[7], a.dilation[0] = a.dilation[1] = glob ? 1 : (int32_t)d;
        so_node nd = {.op = SO_OP_MAXPOOL, .n_in = 1, .n_out = 1, .attr = &a, .ref = -1};
        so_tensor in = {shp4(N, C, H, W), x}, out = {shp4(N, C, Ho, Wo), ref};
        so_nchwc_pool p = {.C = C, .H = H, .W = W, .Ho = Ho, .Wo = Wo, .kh = kk, .kw = kk, .sh = k[3], .sw = k[3], .pt = k[4], .pl = k[5],
                           .pb = k[6], .pr = k[7], .dh = d, .dw = d, .is_max = 1};
        for (int64_t q = 0; q < H * W; q++)
            for (int s = 0; s < 3; s++) {
                const int64_t at = (q % C) * H * W + q;
                const float keep = x[at];
                x[at] = sp[s];
                assert_int_equal(so_ref_maxpool(NULL, &nd, &in, &out), SO_OK);
                for (int l = 0; l < nl; l++) {
                    const so_nchwc_impl *L = lv[l];
                    float *xb = blocked(L, x, N, C, H * W), *got = malloc(sizeof(float) * (size_t)(N * C * Ho * Wo));
                    const int64_t ny = so_nchwc_numel(L->b, N, C, Ho * Wo);
                    float *y[2] = {malloc(sizeof(float) * (size_t)ny), malloc(sizeof(float) * (size_t)ny)};
                    for (int T = 1; T <= 2; T++) {
                        if (glob)
                            L->global_pool(1, N, C, H * W, xb, y[T - 1], T);
                        else
                            L->pool(&p, N, xb, y[T - 1], T);
                    }
                    char what[160];
                    snprintf(what, sizeof what, "%smax pool %lldx%lld k%lld s%d p%d,%d,%d,%d d%lld, %g at pixel %lld", glob ? "global " : "",
                             (long long)H, (long long)W, (long long)kk, k[3], k[4], k[5], k[6], k[7], (long long)d, sp[s], (long long)q);
                    check(L, y[0], ref, N, C, Ho * Wo, what);
                    same_for_threads(y[0], y[1], ny, what);
                    L->from_blocked(y[0], got, N, C, Ho * Wo, 1);
                    for (int64_t j = 0; j < N * C * Ho * Wo; j++)
                        if (ref[j] == ref[j] && memcmp(&ref[j], &got[j], sizeof(float)))
                            fail_msg("%s (%s): element %lld is %g, reference %g (bits differ)", what, L->isa, (long long)j, got[j], ref[j]);
                    free(xb), free(got), free(y[0]), free(y[1]);
                }
                x[at] = keep;
            }
        free(x), free(ref);
    }
}

static void test_global_pool(void **state)
{
    (void)state;
    const int64_t N = 2, C = 37, H = 7, W = 5;
    for (int is_max = 0; is_max < 2; is_max++)
        for (int nan = 0; nan < 2; nan++) {
            float *x = rand_buf(N * C * H * W), *ref = malloc(sizeof(float) * (size_t)(N * C));
            if (nan) x[C * H * W + 40] = NAN;
            so_attr a = {0};
            a.kernel[0] = (int32_t)H, a.kernel[1] = (int32_t)W;
            so_node nd = {.op = is_max ? SO_OP_MAXPOOL : SO_OP_GLOBALAVGPOOL, .n_in = 1, .n_out = 1, .attr = &a, .ref = -1};
            so_tensor in = {shp4(N, C, H, W), x}, out = {shp4(N, C, 1, 1), ref};
            assert_int_equal((is_max ? so_ref_maxpool : so_ref_globalavgpool)(NULL, &nd, &in, &out), SO_OK);
            const so_nchwc_impl *lv[3];
            const int nl = n_levels(lv);
            for (int l = 0; l < nl; l++) {
                const so_nchwc_impl *L = lv[l];
                float *xb = blocked(L, x, N, C, H * W);
                const int64_t ny = so_nchwc_numel(L->b, N, C, 1);
                float *y1 = malloc(sizeof(float) * (size_t)ny), *y2 = malloc(sizeof(float) * (size_t)ny);
                L->global_pool(is_max, N, C, H * W, xb, y1, 1);
                L->global_pool(is_max, N, C, H * W, xb, y2, 2);
                check(L, y1, ref, N, C, 1, is_max ? "global max pool" : "global average pool");
                same_for_threads(y1, y2, ny, "global pool");
                free(xb), free(y1), free(y2);
            }
            free(x), free(ref);
        }
}

/* ---------------- element-wise, concat ---------------- */

static void test_unary(void **state)
{
    (void)state;
    const so_op ops[] = {SO_OP_RELU, SO_OP_CLIP, SO_OP_NEG, SO_OP_SIGMOID, SO_OP_TANH, SO_OP_HARDSWISH, SO_OP_HARDSIGMOID, SO_OP_LEAKYRELU, SO_OP_EXP};
    const int64_t N = 2, C = 11, HW = 13;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        float *x = rand_buf(N * C * HW), *ref = malloc(sizeof(float) * (size_t)(N * C * HW));
        x[5] = NAN;
        so_attr a = {0};
        a.clip_min = 0.1f, a.clip_max = 0.6f, a.alpha = 0.2f, a.beta = 0.5f;
        so_node nd = {.op = ops[i], .n_in = 1, .n_out = 1, .attr = &a, .ref = -1};
        so_tensor in = {shp4(N, C, 1, HW), x}, out = {shp4(N, C, 1, HW), ref};
        assert_int_equal(so_ref_kernels[ops[i]](NULL, &nd, &in, &out), SO_OK);
        so_nchwc_unary u = {.op = ops[i], .alpha = a.alpha, .beta = a.beta, .lo = a.clip_min, .hi = a.clip_max};
        const so_nchwc_impl *lv[3];
        const int nl = n_levels(lv);
        for (int l = 0; l < nl; l++) {
            const so_nchwc_impl *L = lv[l];
            float *xb = blocked(L, x, N, C, HW);
            const int64_t ny = so_nchwc_numel(L->b, N, C, HW);
            float *y1 = malloc(sizeof(float) * (size_t)ny), *y2 = malloc(sizeof(float) * (size_t)ny);
            L->unary(&u, N, C, HW, xb, y1, 1);
            L->unary(&u, N, C, HW, xb, y2, 2);
            check(L, y1, ref, N, C, HW, so_ops[ops[i]].name);
            same_for_threads(y1, y2, ny, "unary");
            free(xb), free(y1), free(y2);
        }
        free(x), free(ref);
    }
}

static void test_binary(void **state)
{
    (void)state;
    const int64_t N = 2, C = 19, hws[3] = {10, 1, 13}; /* the kernels' 4-pixel unroll with 2, 1 and 1 left over */
    const struct {
        so_op op;
        int bcast, act;
    } cs[] = {{SO_OP_ADD, SO_NCHWC_SAME, SO_ACT_NONE},     {SO_OP_ADD, SO_NCHWC_SAME, SO_ACT_RELU}, {SO_OP_DIV, SO_NCHWC_SAME, SO_ACT_NONE},
              {SO_OP_MUL, SO_NCHWC_CHANNEL, SO_ACT_NONE},  {SO_OP_SUB, SO_NCHWC_CHANNEL, SO_ACT_NONE},
              {SO_OP_ADD, SO_NCHWC_SCALAR, SO_ACT_RELU},   {SO_OP_MUL, SO_NCHWC_SCALAR, SO_ACT_NONE},
              {SO_OP_MUL, SO_NCHWC_SAME, SO_ACT_NONE},     {SO_OP_SUB, SO_NCHWC_SAME, SO_ACT_RELU}};
    for (size_t i = 0; i < 3 * (sizeof cs / sizeof cs[0]); i++) {
        const int64_t HW = hws[i % 3];
        const so_shape sb = cs[i / 3].bcast == SO_NCHWC_SAME ? shp4(N, C, 1, HW) : cs[i / 3].bcast == SO_NCHWC_CHANNEL ? shp4(1, C, 1, 1) : shp4(1, 1, 1, 1);
        float *a = rand_buf(N * C * HW), *b = rand_buf(so_shape_numel(&sb)), *ref = malloc(sizeof(float) * (size_t)(N * C * HW));
        a[7] = NAN;
        so_attr at = {0};
        at.act = cs[i / 3].act;
        so_node nd = {.op = cs[i / 3].op, .n_in = 2, .n_out = 1, .attr = &at, .ref = -1};
        so_tensor in[2] = {{shp4(N, C, 1, HW), a}, {sb, b}}, out = {shp4(N, C, 1, HW), ref};
        assert_int_equal(so_ref_kernels[cs[i / 3].op](NULL, &nd, in, &out), SO_OK);
        const so_nchwc_impl *lv[3];
        const int nl = n_levels(lv);
        for (int l = 0; l < nl; l++) {
            const so_nchwc_impl *L = lv[l];
            float *ab = blocked(L, a, N, C, HW), *bb = cs[i / 3].bcast == SO_NCHWC_SAME ? blocked(L, b, N, C, HW) : NULL;
            const int64_t ny = so_nchwc_numel(L->b, N, C, HW);
            float *y1 = malloc(sizeof(float) * (size_t)ny), *y2 = malloc(sizeof(float) * (size_t)ny);
            L->binary(cs[i / 3].op, cs[i / 3].bcast, cs[i / 3].act, N, C, HW, ab, bb ? bb : b, y1, 1);
            L->binary(cs[i / 3].op, cs[i / 3].bcast, cs[i / 3].act, N, C, HW, ab, bb ? bb : b, y2, 2);
            check(L, y1, ref, N, C, HW, so_ops[cs[i / 3].op].name);
            same_for_threads(y1, y2, ny, "binary");
            free(ab), free(bb), free(y1), free(y2);
        }
        free(a), free(b), free(ref);
    }
}

/* concat_ssa: the concat of whole blocks (but the last input) fused with x*scale + shift and Relu per channel, against
   the reference concat then the same arithmetic; a NaN input stays NaN through the Relu; HW large enough for 2 threads. */
static void test_concat_ssa(void **state)
{
    (void)state;
    const int64_t N = 2, HW = 300;
    const int64_t sets[][3] = {{16, 32, 5}, {32, 16, 16}, {16, 16, 20}};
    for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++)
        for (int relu = 0; relu < 2; relu++) {
            const int64_t *Cs = sets[s], C = Cs[0] + Cs[1] + Cs[2];
            float *x[3], *ref = malloc(sizeof(float) * (size_t)(N * C * HW)), *sc = rand_buf(C), *sh = rand_buf(C);
            for (int i = 0; i < 3; i++) x[i] = rand_buf(N * Cs[i] * HW);
            x[1][7] = NAN;
            so_attr a = {0};
            a.axis = 1;
            so_node nd = {.op = SO_OP_CONCAT, .n_in = 3, .n_out = 1, .attr = &a, .ref = -1};
            so_tensor in[3], out = {shp4(N, C, 1, HW), ref};
            for (int i = 0; i < 3; i++) in[i] = (so_tensor){shp4(N, Cs[i], 1, HW), x[i]};
            assert_int_equal(so_ref_concat(NULL, &nd, in, &out), SO_OK);
            for (int64_t n = 0; n < N; n++)
                for (int64_t c = 0; c < C; c++)
                    for (int64_t q = 0; q < HW; q++) {
                        float *r = &ref[(n * C + c) * HW + q];
                        *r = *r * sc[c] + sh[c];
                        if (relu && *r < 0.0f) *r = 0.0f;
                    }
            const so_nchwc_impl *lv[3];
            const int nl = n_levels(lv);
            for (int l = 0; l < nl; l++) {
                const so_nchwc_impl *L = lv[l];
                if (Cs[0] % L->b || Cs[1] % L->b) continue; /* not whole blocks at this b: never selected */
                float *xb[3];
                for (int i = 0; i < 3; i++) xb[i] = blocked(L, x[i], N, Cs[i], HW);
                const int64_t ny = so_nchwc_numel(L->b, N, C, HW), Cp = (C + L->b - 1) / L->b * L->b;
                float *sb = calloc((size_t)Cp, sizeof(float)), *tb = calloc((size_t)Cp, sizeof(float));
                memcpy(sb, sc, sizeof(float) * (size_t)C), memcpy(tb, sh, sizeof(float) * (size_t)C);
                float *y1 = malloc(sizeof(float) * (size_t)ny), *y2 = malloc(sizeof(float) * (size_t)ny);
                memset(y1, 0x7f, sizeof(float) * (size_t)ny);
                memset(y2, 0x7f, sizeof(float) * (size_t)ny);
                L->concat_ssa(3, Cs, N, HW, (const float *const *)xb, sb, tb, relu, y1, 1);
                L->concat_ssa(3, Cs, N, HW, (const float *const *)xb, sb, tb, relu, y2, 2);
                check(L, y1, ref, N, C, HW, relu ? "concat_ssa relu" : "concat_ssa");
                same_for_threads(y1, y2, ny, "concat_ssa");
                for (int i = 0; i < 3; i++) free(xb[i]);
                free(y1), free(y2), free(sb), free(tb);
            }
            for (int i = 0; i < 3; i++) free(x[i]);
            free(ref), free(sc), free(sh);
        }
}

static void test_concat(void **state)
{
    (void)state;
    const int64_t N = 2, HW = 9;
    const int64_t sets[][3] = {{5, 11, 8}, {16, 32, 3}, {16, 16, 16}, {1, 1, 1}};
    for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
        const int64_t *Cs = sets[s], C = Cs[0] + Cs[1] + Cs[2];
        float *x[3], *ref = malloc(sizeof(float) * (size_t)(N * C * HW));
        for (int i = 0; i < 3; i++) x[i] = rand_buf(N * Cs[i] * HW);
        so_attr a = {0};
        a.axis = 1;
        so_node nd = {.op = SO_OP_CONCAT, .n_in = 3, .n_out = 1, .attr = &a, .ref = -1};
        so_tensor in[3], out = {shp4(N, C, 1, HW), ref};
        for (int i = 0; i < 3; i++) in[i] = (so_tensor){shp4(N, Cs[i], 1, HW), x[i]};
        assert_int_equal(so_ref_concat(NULL, &nd, in, &out), SO_OK);
        const so_nchwc_impl *lv[3];
        const int nl = n_levels(lv);
        for (int l = 0; l < nl; l++) {
            const so_nchwc_impl *L = lv[l];
            float *xb[3];
            for (int i = 0; i < 3; i++) xb[i] = blocked(L, x[i], N, Cs[i], HW);
            const int64_t ny = so_nchwc_numel(L->b, N, C, HW);
            float *y1 = malloc(sizeof(float) * (size_t)ny), *y2 = malloc(sizeof(float) * (size_t)ny);
            memset(y1, 0x7f, sizeof(float) * (size_t)ny);
            memset(y2, 0x7f, sizeof(float) * (size_t)ny);
            L->concat(3, Cs, N, HW, (const float *const *)xb, y1, 1);
            L->concat(3, Cs, N, HW, (const float *const *)xb, y2, 2);
            check(L, y1, ref, N, C, HW, "concat");
            same_for_threads(y1, y2, ny, "concat");
            for (int i = 0; i < 3; i++) free(xb[i]);
            free(y1), free(y2);
        }
        for (int i = 0; i < 3; i++) free(x[i]);
        free(ref);
    }
}

/* The reorders are each other's inverse and put zeros in the padding lanes. */
static void test_reorder(void **state)
{
    (void)state;
    /* the AVX2 8 x 8 tiles: full and partial 8-channel groups, 8-pixel and 64-pixel tails, an image's 3 channels
       (one partial group, at b = 16 a group of padding only) */
    const int64_t cs[][3] = {{1, 1, 1}, {2, 7, 3}, {1, 16, 65}, {3, 17, 1}, {1, 33, 130}, {2, 24, 77}, {1, 40, 200}, {1, 9, 8},
                             {1, 3, 70}, {2, 5, 16}};
    const so_nchwc_impl *lv[3];
    const int nl = n_levels(lv);
    for (size_t s = 0; s < sizeof cs / sizeof cs[0]; s++) {
        const int64_t N = cs[s][0], C = cs[s][1], HW = cs[s][2];
        float *x = rand_buf(N * C * HW);
        for (int l = 0; l < nl; l++) {
            float *xb = blocked(lv[l], x, N, C, HW);
            check(lv[l], xb, x, N, C, HW, "reorder"); /* padding zero, round trip exact (within TOL: exact here) */
            float *back = malloc(sizeof(float) * (size_t)(N * C * HW));
            lv[l]->from_blocked(xb, back, N, C, HW, 1);
            assert_memory_equal(back, x, sizeof(float) * (size_t)(N * C * HW));
            /* element (n, c, p) lands where the layout contract says */
            const int b = lv[l]->b;
            const int64_t n = N - 1, c = C - 1, q = HW / 2, Cb = (C + b - 1) / b;
            assert_true(xb[((n * Cb + c / b) * HW + q) * b + c % b] == x[(n * C + c) * HW + q]);
            free(xb), free(back);
        }
        free(x);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reorder),     cmocka_unit_test(test_conv_dense), cmocka_unit_test(test_wino_chunks), cmocka_unit_test(test_wino_pstride), cmocka_unit_test(test_conv_split), cmocka_unit_test(test_conv_wide_tiles), cmocka_unit_test(test_conv_gblk), cmocka_unit_test(test_conv_pw_lanes),
        cmocka_unit_test(test_conv_pw_tile), cmocka_unit_test(test_pw_split),
        cmocka_unit_test(test_conv_grouped_depthwise), cmocka_unit_test(test_dw_rows_stride2),
        cmocka_unit_test(test_conv_epilogue_nan), cmocka_unit_test(test_conv_epilogue_mobile), cmocka_unit_test(test_conv_dnnl_nonfinite), cmocka_unit_test(test_conv_dnnl_facts), cmocka_unit_test(test_conv_stem), cmocka_unit_test(test_conv_stem_dw), cmocka_unit_test(test_pool), cmocka_unit_test(test_pool_special_positions), cmocka_unit_test(test_global_pool),
        cmocka_unit_test(test_unary),       cmocka_unit_test(test_binary),     cmocka_unit_test(test_concat), cmocka_unit_test(test_concat_ssa),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
