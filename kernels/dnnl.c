/* dnnl.c - oneDNN as an optional backend (libdnnl.so.2 via dlopen): the shared library handle, convolution primitives on NCHWc values (b = 8, 16) and matmul primitives against a weight, planned once per node (kernels/README.md, "oneDNN or ours"). */
#include "dnnl.h"

#include "../src/common.h"

#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Not in sanitizer builds (see dnnl.h). */
#if defined(__SANITIZE_ADDRESS__)
#define DNNL_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DNNL_UNDER_SANITIZER 1
#endif
#endif

static void *lib;
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void lib_load(void)
{
#ifndef DNNL_UNDER_SANITIZER
    const char *e = getenv("SUPEROPT_ONEDNN");
    if (e && !strcmp(e, "0")) return;
    lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
#endif
}

void *so_dnnl_lib(void)
{
    pthread_once(&lib_once, lib_load);
    return lib;
}

/* The convolution backend needs oneDNN's C API header (Debian libdnnl-dev) at build time; without it
   so_dnnl_conv_plan always returns NULL and our kernels run. */
#if defined(__has_include)
#if __has_include(<oneapi/dnnl/dnnl.h>)
#define SO_HAVE_DNNL_H 1
#endif
#endif

#ifdef SO_HAVE_DNNL_H
#include <oneapi/dnnl/dnnl.h>

/* The oneDNN functions used, looked up once (typed by the header's own prototypes). */
#define DNNL_FNS(X)                                                                                                                    \
    X(dnnl_engine_create)                                                                                                              \
    X(dnnl_stream_create)                                                                                                              \
    X(dnnl_stream_destroy)                                                                                                             \
    X(dnnl_stream_wait)                                                                                                                \
    X(dnnl_memory_desc_init_by_tag)                                                                                                    \
    X(dnnl_memory_desc_get_size)                                                                                                       \
    X(dnnl_memory_desc_equal)                                                                                                          \
    X(dnnl_memory_create)                                                                                                              \
    X(dnnl_memory_destroy)                                                                                                             \
    X(dnnl_memory_set_data_handle)                                                                                                     \
    X(dnnl_dilated_convolution_forward_desc_init)                                                                                      \
    X(dnnl_matmul_desc_init)                                                                                                           \
    X(dnnl_post_ops_create)                                                                                                            \
    X(dnnl_post_ops_destroy)                                                                                                           \
    X(dnnl_post_ops_append_eltwise)                                                                                                    \
    X(dnnl_post_ops_append_binary)                                                                                                     \
    X(dnnl_primitive_attr_create)                                                                                                      \
    X(dnnl_primitive_attr_destroy)                                                                                                     \
    X(dnnl_primitive_attr_set_post_ops)                                                                                                \
    X(dnnl_primitive_attr_set_scratchpad_mode)                                                                                         \
    X(dnnl_primitive_desc_create)                                                                                                      \
    X(dnnl_primitive_desc_destroy)                                                                                                     \
    X(dnnl_primitive_desc_query)                                                                                                       \
    X(dnnl_primitive_desc_query_md)                                                                                                    \
    X(dnnl_reorder_primitive_desc_create)                                                                                              \
    X(dnnl_primitive_create)                                                                                                           \
    X(dnnl_primitive_destroy)                                                                                                          \
    X(dnnl_primitive_execute)

#define DNNL_PTR(f) static __typeof__(&f) p_##f;
DNNL_FNS(DNNL_PTR)
#undef DNNL_PTR

static dnnl_engine_t engine;
static int fns_ok;
static pthread_once_t fns_once = PTHREAD_ONCE_INIT;

static void fns_load(void)
{
    void *h = so_dnnl_lib();
    if (!h) return;
    void *f;
#define DNNL_SYM(fn)                                                                                                                   \
    if (!(f = dlsym(h, #fn))) return;                                                                                                  \
    memcpy(&p_##fn, &f, sizeof f); /* (object pointer to function pointer without a cast warning) */
    DNNL_FNS(DNNL_SYM)
#undef DNNL_SYM
    if (p_dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success) return;
    fns_ok = 1;
}

struct so_dnnl_conv {
    dnnl_primitive_t prim;
    dnnl_stream_t stream;
    dnnl_memory_t src, wei, bias, dst, res, scratch;
    size_t scratch_bytes; /* the primitives' scratchpad: the caller's memory (user mode), no allocation per run */
    int res_arg;        /* DNNL_ARG_ATTR_MULTIPLE_POST_OP(k) | DNNL_ARG_SRC_1, when prim has the residual post-op */
    float *wbuf, *bbuf; /* reordered weights, bias (owned, 64-byte aligned) */
    size_t bytes, wbytes; /* held in all, in wbuf */
    char impl[64];
    /* convolution only: the tail so_dnnl_conv_run applies after prim (conv_tail) - the epilogue part oneDNN's
       post-ops would get wrong (epi_split) and the zeroing of dst's padding lanes; N images of O channels x HW */
    so_epi tail;
    int64_t N, O, HW, b; /* b: channels per block of x, y and the residual (8: nChw8c, 16: nChw16c) */
    /* convolution with a tail only (else NULL / 0): fast, the same convolution with the whole epilogue as post-ops
       (the same weights layout, reading wbuf), run instead of prim + conv_tail when the input passes the gate (so_dnnl_conv_run_known):
       every |x| bit pattern at most fast_max (finite, and small enough that no pre-activation can overflow),
       and, when scan_res, the residual free of NaN. nx / nres: floats of the blocked x / residual. */
    dnnl_primitive_t fast;
    dnnl_memory_t fscratch;
    int fres_arg, scan_res, scan; /* scan: absmax_bits's vector width (SCAN_*) */
    uint32_t fast_max;
    int64_t nx, nres;
    /* the output bound of a run whose input bound is known (so_dnnl_conv_run_known, y_bound): |y| <= ygrow * (m *
       l1max + bmax) before the activations for |x| <= m, plus the residual's bound; ygrow 0: no bound is given
       (an activation other than Relu / Clip, or too many terms for the rounding argument) */
    double l1max, bmax, ygrow;
    so_epi epi; /* the whole epilogue's activations and residual flag (scale, shift NULL) */
};

static float *alloc64(size_t bytes)
{
    const size_t n = (bytes + 63) / 64 * 64;
    float *p = so_big_alloc(n);
    if (p) memset(p, 0, n ? n : 64);
    return p;
}

static int append_act(dnnl_post_ops_t po, int act, float lo, float hi)
{
    switch (act) {
    case SO_ACT_NONE: return 0;
    case SO_ACT_RELU: return p_dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f) != dnnl_success;
    case SO_ACT_SIGMOID: return p_dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_logistic, 0.0f, 0.0f) != dnnl_success;
    case SO_ACT_TANH: return p_dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_tanh, 0.0f, 0.0f) != dnnl_success;
    case SO_ACT_CLIP: return p_dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip, lo, hi) != dnnl_success;
    case SO_EPI_SILU: return p_dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_swish, 1.0f, 0.0f) != dnnl_success; /* x*sigmoid(1*x) */
    case SO_EPI_HARDSWISH: return p_dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_hardswish, 0.0f, 0.0f) != dnnl_success;
    default: return 1; /* HardSigmoid (two post-ops in oneDNN 2.6): our kernel */
    }
}

/* oneDNN 2.6's eltwise Relu (alpha 0) and Clip post-ops are max / min instructions that return the bound for a NaN
   (Relu(NaN) = 0, Clip(NaN) = lo), where the reference and our kernels keep NaN (test_nchwc
   test_conv_dnnl_nonfinite); its Sigmoid, Tanh, SiLU and HardSwish keep it, as do its bias and binary add. No
   post-op form of Relu / Clip keeps NaN (a nonzero alpha does, but then scales the negatives). */
static int drops_nan(int act) { return act == SO_ACT_RELU || act == SO_ACT_CLIP; }

/* Splits the epilogue ep (NULL: none) into what oneDNN's post-ops apply (*post: scale, shift, and the activations
   and residual up to the first one that drops NaN) and the rest, applied by our code after the primitive (*tail:
   act1, the residual add, act2, or act2 alone; its scale and shift NULL). Returns whether there is a tail, -1 when
   the tail would need an activation other than Relu / Clip (tail_act's; such a conv is left to our kernels). */
static int epi_split(const so_epi *ep, so_epi *post, so_epi *tail)
{
    memset(tail, 0, sizeof *tail);
    memset(post, 0, sizeof *post);
    if (!ep) return 0;
    *post = *ep;
    if (drops_nan(ep->act1)) {
        tail->act1 = ep->act1, tail->lo1 = ep->lo1, tail->hi1 = ep->hi1, tail->has_res = ep->has_res;
        tail->act2 = ep->act2, tail->lo2 = ep->lo2, tail->hi2 = ep->hi2;
        post->act1 = post->act2 = SO_ACT_NONE, post->has_res = 0;
        return ep->act2 == SO_ACT_NONE || drops_nan(ep->act2) ? 1 : -1;
    }
    if (drops_nan(ep->act2)) {
        tail->act2 = ep->act2, tail->lo2 = ep->lo2, tail->hi2 = ep->hi2;
        post->act2 = SO_ACT_NONE;
        return 1;
    }
    return 0;
}

/* Relu or Clip on n floats in place, NaN kept (the reference's expressions, kernels/ref.c so_ref_act). */
static void tail_act(int act, float lo, float hi, float *x, int64_t n)
{
    if (act == SO_ACT_RELU) {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) x[i] = x[i] < 0.f ? 0.f : x[i];
    } else if (act == SO_ACT_CLIP) {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) x[i] = x[i] < lo ? lo : x[i] > hi ? hi : x[i];
    }
}

/* Floats per item of conv_tail: 16 KB, so the item's act1 / residual / act2 passes stay in L1. */
#define TAIL_CHUNK 4096

/* After the convolution primitive wrote y (nChw8c / nChw16c, p->b): y = act2(act1(y) + res) for p->tail's parts (with_acts; 0 after
   p->fast, which applied them), and the padding lanes of the last channel block zeroed (oneDNN's 1x1 kernels leave
   them NaN, or a Clip's bound, where an input pixel is not finite: its zero-padded weights times inf or NaN), in
   chunks over the calling thread's team. With no tail activation only the last channel blocks are visited (nothing
   when O is a multiple of b). */
static void conv_tail(const so_dnnl_conv *p, float *y, const float *res, int with_acts)
{
    const int64_t b = p->b, Ob = (p->O + b - 1) / b, plane = p->HW * b, nch = (plane + TAIL_CHUNK - 1) / TAIL_CHUNK, used = p->O - (Ob - 1) * b;
    const int acts = with_acts && (p->tail.act1 || p->tail.has_res || p->tail.act2);
    if (!acts && used == b) return;
    const int64_t nblk = acts ? p->N * Ob : p->N, items = nblk * nch;
    const so_epi *t = &p->tail;
#pragma omp parallel for schedule(static) if (items > 1)
    for (int64_t it = 0; it < items; it++) {
        const int64_t blk = acts ? it / nch : (it / nch + 1) * Ob - 1, c0 = it % nch * TAIL_CHUNK;
        const int64_t n = plane - c0 < TAIL_CHUNK ? plane - c0 : TAIL_CHUNK;
        float *yc = y + blk * plane + c0;
        if (t->act1) tail_act(t->act1, t->lo1, t->hi1, yc, n);
        if (t->has_res) {
            const float *rc = res + blk * plane + c0;
            for (int64_t i = 0; i < n; i++) yc[i] += rc[i];
        }
        if (t->act2) tail_act(t->act2, t->lo2, t->hi2, yc, n);
        if (used < b && blk % Ob == Ob - 1) /* the lanes past used cleared through a bit mask (vectorised; a memset
                                               per pixel was mostly call overhead); TAIL_CHUNK is a multiple of b */
            for (int64_t q = 0; q < n; q += b)
#pragma omp simd
                for (int j = 0; j < b; j++) {
                    uint32_t u;
                    memcpy(&u, yc + q + j, sizeof u);
                    u &= j < used ? 0xffffffffu : 0u;
                    memcpy(yc + q + j, &u, sizeof u);
                }
    }
}

/* The fast primitive (oneDNN's Relu / Clip post-ops) gives the exact path's result when no value reaching a Relu /
   Clip is NaN. Every such value is finite when the input is finite, no pre-activation overflows and, for a Relu /
   Clip after the residual add, the residual has no NaN (finite + inf is inf, which Relu / Clip map as the reference
   does; the activations before a residual map finite to finite). A pre-activation is a sum of x * w products plus
   the bias: with |x| <= m each partial sum is at most m * sum_k |w[o][k]| + |b[o]| (times the rounding's growth,
   under 1.001 for fewer than 2^20 terms). FAST_LIMIT keeps that bound 2^24 below FLT_MAX: room for the rounding and
   for Winograd (oneDNN's jit_fp32_wino_2x3 and jit_wino_4x3), whose transforms enlarge the intermediate values
   (F(4x4, 3x3) with the usual points 0, +-1, +-2: at most 10^2 for the input transform, 1 for the weights' and
   23^2 for the output's, under 2^16; F(2x2, 3x3) less). Overflowing sums
   are where the result depends on the order of the additions anyway (oneDNN's FMA chains, the reference's loops);
   the fast path only has to keep a NaN where the exact path would have one, and above this bound the exact path runs. */
#define FAST_LIMIT ((double)FLT_MAX / 16777216.0)

/* The largest m (a float, as its bit pattern in *max_bits) with m * sum_k |w[o][k]| + |b[o]| <= FAST_LIMIT for every
   output channel o of w [O][K] (the scaled weights) and b (NULL: none); -1 when a weight or bias is not finite or no
   m >= 0 qualifies (then only the exact path runs). */
static int fast_bound(const float *w, int64_t O, int64_t K, const float *b, uint32_t *max_bits)
{
    double m = FLT_MAX;
    for (int64_t o = 0; o < O; o++) {
        double l1 = 0;
        for (int64_t k = 0; k < K; k++) {
            if (!isfinite(w[o * K + k])) return -1;
            l1 += fabs(w[o * K + k]);
        }
        const double bo = b ? fabs(b[o]) : 0;
        if (b && !isfinite(b[o])) return -1;
        if (bo > FAST_LIMIT) return -1;
        if (l1 > 0 && (FAST_LIMIT - bo) / l1 < m) m = (FAST_LIMIT - bo) / l1;
    }
    float f = (float)m;
    if ((double)f > m) f = nextafterf(f, 0.f);
    memcpy(max_bits, &f, sizeof f);
    return 0;
}

/* Growth of a Winograd implementation's computed outputs over the direct sum's bound: its transforms enlarge the
   intermediates by under 2^16 (FAST_LIMIT's comment), the rounding of sums of those at most that much again
   relative to the result's bound for the term counts here; 2^20 leaves room. A direct sum of K < 2^20 products and a
   bias rounds to within (1 + K u) < 2 times the sum of their magnitudes (any order of additions, u = 2^-24). */
#define WINO_GROWTH 0x1p20

/* p's output bound parameters (p->l1max, bmax, ygrow, epi; see y_bound) from the scaled weights w [O][K] and the
   epilogue ep (NULL: none): ygrow 0 (no bound) for a weight or bias that is not finite, K >= 2^20, or an activation
   other than Relu / Clip. */
static void out_growth(so_dnnl_conv *p, const float *w, int64_t O, int64_t K, const so_epi *ep, int wino)
{
    memset(&p->epi, 0, sizeof p->epi);
    if (ep) p->epi = *ep, p->epi.scale = p->epi.shift = NULL;
    p->ygrow = 0, p->l1max = 0, p->bmax = 0;
    const int acts_ok = (p->epi.act1 == SO_ACT_NONE || drops_nan(p->epi.act1)) && (p->epi.act2 == SO_ACT_NONE || drops_nan(p->epi.act2));
    if (!acts_ok || K >= (1 << 20)) return;
    for (int64_t o = 0; o < O; o++) {
        double l1 = 0;
        for (int64_t k = 0; k < K; k++) {
            if (!isfinite(w[o * K + k])) return;
            l1 += fabs(w[o * K + k]);
        }
        if (l1 > p->l1max) p->l1max = l1;
        if (ep && ep->shift) {
            if (!isfinite(ep->shift[o])) return;
            if (fabs(ep->shift[o]) > p->bmax) p->bmax = fabs(ep->shift[o]);
        }
    }
    p->ygrow = wino ? WINO_GROWTH : 2;
}

/* Floats from which absmax_bits splits its scan over the team (256 KB: a few microseconds of one thread's scan). */
#define SCAN_PAR 65536

/* The largest |v| of the n floats at x as a bit pattern (sign cleared): finite values order as their bits, 0x7f800000
   is an infinity and anything above a NaN. */
static uint32_t absmax_bits_1(const float *x, int64_t n)
{
    uint32_t m = 0;
#pragma omp simd reduction(max : m)
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, x + i, sizeof u);
        u &= 0x7fffffffu;
        m = u > m ? u : m;
    }
    return m;
}

#if defined(__x86_64__)
#include <immintrin.h>
/* absmax_bits_1 in AVX-512 registers, four chains (2.6x the SSE loop's 41 GB/s on 784 KB in L2, Intel Xeon model 207;
   the same from L3, where memory bounds both). This file is built for the baseline ISA; only called on a CPU with
   AVX-512 F (SCAN_512: a conv planned at b = 16, the AVX-512 level). */
__attribute__((target("avx512f"))) static uint32_t absmax_bits_512(const float *x, int64_t n)
{
    const __m512i k = _mm512_set1_epi32(0x7fffffff);
    __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        a = _mm512_max_epu32(a, _mm512_and_si512(_mm512_loadu_si512(x + i), k));
        b = _mm512_max_epu32(b, _mm512_and_si512(_mm512_loadu_si512(x + i + 16), k));
        c = _mm512_max_epu32(c, _mm512_and_si512(_mm512_loadu_si512(x + i + 32), k));
        d = _mm512_max_epu32(d, _mm512_and_si512(_mm512_loadu_si512(x + i + 48), k));
    }
    const uint32_t m = _mm512_reduce_max_epu32(_mm512_max_epu32(_mm512_max_epu32(a, b), _mm512_max_epu32(c, d)));
    const uint32_t r = absmax_bits_1(x + i, n - i);
    return m > r ? m : r;
}
/* The same in AVX2 registers (SCAN_256: a conv planned at b = 8 on a CPU with AVX2, the avx2 level). */
__attribute__((target("avx2"))) static uint32_t absmax_bits_256(const float *x, int64_t n)
{
    const __m256i k = _mm256_set1_epi32(0x7fffffff);
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a = _mm256_max_epu32(a, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i)), k));
        b = _mm256_max_epu32(b, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i + 8)), k));
        c = _mm256_max_epu32(c, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i + 16)), k));
        d = _mm256_max_epu32(d, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i + 24)), k));
    }
    uint32_t lanes[8];
    _mm256_storeu_si256((__m256i *)lanes, _mm256_max_epu32(_mm256_max_epu32(a, b), _mm256_max_epu32(c, d)));
    uint32_t m = absmax_bits_1(x + i, n - i);
    for (int j = 0; j < 8; j++) m = lanes[j] > m ? lanes[j] : m;
    return m;
}
static int have_avx512(void) { return __builtin_cpu_supports("avx512f"); }
static int have_avx2(void) { return __builtin_cpu_supports("avx2"); }
#else
static uint32_t absmax_bits_512(const float *x, int64_t n) { return absmax_bits_1(x, n); }
static uint32_t absmax_bits_256(const float *x, int64_t n) { return absmax_bits_1(x, n); }
static int have_avx512(void) { return 0; }
static int have_avx2(void) { return 0; }
#endif

/* absmax_bits's vector width */
enum { SCAN_1, SCAN_256, SCAN_512 };

/* absmax_bits_1 of the n floats at x in the width scan (SCAN_*). */
static uint32_t absmax_bits_w(const float *x, int64_t n, int scan)
{
    return scan == SCAN_512 ? absmax_bits_512(x, n) : scan == SCAN_256 ? absmax_bits_256(x, n) : absmax_bits_1(x, n);
}

/* absmax_bits_1 of x (n floats), in chunks over the calling thread's team when n is large; read only. */
static uint32_t absmax_bits(const float *x, int64_t n, int scan)
{
    if (n < SCAN_PAR) return absmax_bits_w(x, n, scan);
    const int64_t chunk = 16384, nch = (n + chunk - 1) / chunk;
    uint32_t m = 0;
#pragma omp parallel for schedule(static) reduction(max : m)
    for (int64_t c = 0; c < nch; c++) {
        const int64_t len = n - c * chunk < chunk ? n - c * chunk : chunk;
        const uint32_t v = absmax_bits_w(x + c * chunk, len, scan);
        m = v > m ? v : m;
    }
    return m;
}


/* The primitive descriptor for one algorithm, or NULL (unsupported, or only oneDNN's reference code). */
static dnnl_primitive_desc_t conv_pd(dnnl_alg_kind_t alg, const dnnl_memory_desc_t *smd, const dnnl_memory_desc_t *wmd,
                                     const dnnl_memory_desc_t *bmd, const dnnl_memory_desc_t *dmd, const dnnl_dims_t st,
                                     const dnnl_dims_t dl, const dnnl_dims_t pad_l, const dnnl_dims_t pad_r, const_dnnl_primitive_attr_t attr)
{
    dnnl_convolution_desc_t cd;
    if (p_dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, alg, smd, wmd, bmd, dmd, st, dl, pad_l, pad_r) !=
        dnnl_success)
        return NULL;
    dnnl_primitive_desc_t pd = NULL;
    if (p_dnnl_primitive_desc_create(&pd, &cd, attr, engine, NULL) != dnnl_success) return NULL;
    const char *impl = NULL;
    if (p_dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl || !strncmp(impl, "ref", 3)) {
        p_dnnl_primitive_desc_destroy(pd);
        return NULL;
    }
    return pd;
}

/* The epilogue as post-ops on a new attribute (act1, residual add: binary with src1 of dst's shape and layout,
   act2; *res_arg set when there is a residual) and a user-managed scratchpad (the executor's shared kernel
   scratch: nothing allocated per execution). *po and *attr are the caller's to destroy, also on failure (-1). */
static int epi_attr(int *res_arg, const so_epi *ep, const dnnl_memory_desc_t *dmd, dnnl_post_ops_t *po, dnnl_primitive_attr_t *attr)
{
    if (p_dnnl_post_ops_create(po) != dnnl_success || p_dnnl_primitive_attr_create(attr) != dnnl_success) return -1;
    int npo = 0;
    if (ep) {
        if (append_act(*po, ep->act1, ep->lo1, ep->hi1)) return -1;
        npo += ep->act1 != SO_ACT_NONE;
        if (ep->has_res) {
            if (p_dnnl_post_ops_append_binary(*po, dnnl_binary_add, dmd) != dnnl_success) return -1;
            *res_arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(npo) | DNNL_ARG_SRC_1;
            npo++;
        }
        if (append_act(*po, ep->act2, ep->lo2, ep->hi2)) return -1;
    }
    if (p_dnnl_primitive_attr_set_post_ops(*attr, *po) != dnnl_success ||
        p_dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user) != dnnl_success)
        return -1;
    return 0;
}

/* After the primitive p->prim of pd is created and p->wbuf (wbytes) allocated: the user-layout weights wtmp (memory
   desc wumd) reordered once into p->wbuf in the primitive's layout, the bias (bmd, nb values of shift; bmd NULL: none)
   copied, the scratchpad size and the activation / residual / stream handles made (data set per run). -1 on a oneDNN
   or allocation failure: what was made so far is in p, freed by the caller's so_dnnl_conv_free / so_dnnl_mm_free. */
static int prim_finish(so_dnnl_conv *p, dnnl_primitive_desc_t pd, const dnnl_memory_desc_t *wumd, float *wtmp, size_t wbytes,
                       const dnnl_memory_desc_t *bmd, const float *shift, int64_t nb, const dnnl_memory_desc_t *smd,
                       const dnnl_memory_desc_t *dmd)
{
    const dnnl_memory_desc_t *wq = p_dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t reorder = NULL;
    dnnl_memory_t wuser = NULL;
    dnnl_stream_t rs = NULL;
    int bad = p_dnnl_memory_create(&wuser, wumd, engine, wtmp) != dnnl_success ||
              p_dnnl_memory_create(&p->wei, wq, engine, p->wbuf) != dnnl_success ||
              p_dnnl_reorder_primitive_desc_create(&rpd, wumd, engine, wq, engine, NULL) != dnnl_success ||
              p_dnnl_primitive_create(&reorder, rpd) != dnnl_success ||
              p_dnnl_stream_create(&rs, engine, dnnl_stream_default_flags) != dnnl_success;
    if (!bad) {
        dnnl_exec_arg_t rargs[2] = {{DNNL_ARG_FROM, wuser}, {DNNL_ARG_TO, p->wei}};
        bad = p_dnnl_primitive_execute(reorder, rs, 2, rargs) != dnnl_success || p_dnnl_stream_wait(rs) != dnnl_success;
    }
    if (reorder) p_dnnl_primitive_destroy(reorder);
    if (rpd) p_dnnl_primitive_desc_destroy(rpd);
    if (wuser) p_dnnl_memory_destroy(wuser);
    if (rs) p_dnnl_stream_destroy(rs);
    if (bad) return -1;
    p->bytes = p->wbytes = wbytes;
    if (bmd) {
        p->bbuf = alloc64(sizeof(float) * (size_t)nb);
        if (!p->bbuf) return -1;
        memcpy(p->bbuf, shift, sizeof(float) * (size_t)nb);
        if (p_dnnl_memory_create(&p->bias, bmd, engine, p->bbuf) != dnnl_success) return -1;
        p->bytes += sizeof(float) * (size_t)nb;
    }
    const dnnl_memory_desc_t *sq = p_dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    p->scratch_bytes = sq ? p_dnnl_memory_desc_get_size(sq) : 0;
    if (p->scratch_bytes && p_dnnl_memory_create(&p->scratch, sq, engine, DNNL_MEMORY_NONE) != dnnl_success) return -1;
    if (p_dnnl_memory_create(&p->src, smd, engine, DNNL_MEMORY_NONE) != dnnl_success ||
        p_dnnl_memory_create(&p->dst, dmd, engine, DNNL_MEMORY_NONE) != dnnl_success ||
        ((p->res_arg || p->fres_arg) && p_dnnl_memory_create(&p->res, dmd, engine, DNNL_MEMORY_NONE) != dnnl_success) ||
        p_dnnl_stream_create(&p->stream, engine, dnnl_stream_default_flags) != dnnl_success)
        return -1;
    return 0;
}

so_dnnl_conv *so_dnnl_conv_plan(int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, int64_t Ho, int64_t Wo, int64_t kh, int64_t kw,
                                int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t pb, int64_t pr, int64_t dh, int64_t dw,
                                int64_t group, const float *w, const so_epi *ep, int wino, int b)
{
    pthread_once(&fns_once, fns_load);
    if (!fns_ok || (b != 8 && b != 16) || group < 1 || C % group || O % group || C / group < 2) return NULL;
    /* oneDNN's output size (floor division, like ONNX's explicit pads) must be the planned one */
    if ((H + pt + pb - (dh * (kh - 1) + 1)) / sh + 1 != Ho || (W + pl + pr - (dw * (kw - 1) + 1)) / sw + 1 != Wo) return NULL;
    so_dnnl_conv *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    dnnl_primitive_desc_t pd = NULL, fpd = NULL;
    dnnl_primitive_attr_t attr = NULL, fattr = NULL;
    dnnl_post_ops_t po = NULL, fpo = NULL;
    float *wtmp = NULL;
    const int64_t Cg = C / group, Og = O / group, KK = kh * kw;

    dnnl_memory_desc_t smd, wmd, wumd, bmd, dmd;
    const dnnl_dims_t sdims = {N, C, H, W}, ddims = {N, O, Ho, Wo}, bdims = {O};
    const dnnl_dims_t st = {sh, sw}, dl = {dh - 1, dw - 1}, pad_l = {pt, pl}, pad_r = {pb, pr};
    const dnnl_format_tag_t tag = b == 16 ? dnnl_nChw16c : dnnl_nChw8c; /* our NCHWc layout at b */
    if (p_dnnl_memory_desc_init_by_tag(&smd, 4, sdims, dnnl_f32, tag) != dnnl_success ||
        p_dnnl_memory_desc_init_by_tag(&dmd, 4, ddims, dnnl_f32, tag) != dnnl_success ||
        p_dnnl_memory_desc_init_by_tag(&bmd, 1, bdims, dnnl_f32, dnnl_x) != dnnl_success)
        goto fail;
    if (group == 1) {
        const dnnl_dims_t wdims = {O, C, kh, kw};
        if (p_dnnl_memory_desc_init_by_tag(&wmd, 4, wdims, dnnl_f32, dnnl_format_tag_any) != dnnl_success ||
            p_dnnl_memory_desc_init_by_tag(&wumd, 4, wdims, dnnl_f32, dnnl_oihw) != dnnl_success)
            goto fail;
    } else {
        const dnnl_dims_t wdims = {group, Og, Cg, kh, kw};
        if (p_dnnl_memory_desc_init_by_tag(&wmd, 5, wdims, dnnl_f32, dnnl_format_tag_any) != dnnl_success ||
            p_dnnl_memory_desc_init_by_tag(&wumd, 5, wdims, dnnl_f32, dnnl_goihw) != dnnl_success)
            goto fail;
    }
    /* the epilogue as post-ops: act1, residual add (binary, src1 = a tensor of dst's shape and layout), act2, up to an
       activation oneDNN would get wrong on NaN; the rest in conv_tail */
    so_epi post;
    p->N = N, p->O = O, p->HW = Ho * Wo, p->b = b;
    const int split = epi_split(ep, &post, &p->tail);
    if (split < 0) goto fail;
    if (epi_attr(&p->res_arg, &post, &dmd, &po, &attr)) goto fail;
    const int has_bias = ep && ep->shift;
    const int wino_ok = wino && kh == 3 && kw == 3 && sh == 1 && sw == 1 && dh == 1 && dw == 1 && group == 1;
    dnnl_alg_kind_t alg = dnnl_convolution_winograd;
    if (wino_ok) pd = conv_pd(alg, &smd, &wmd, has_bias ? &bmd : NULL, &dmd, st, dl, pad_l, pad_r, attr);
    if (!pd) pd = conv_pd(alg = dnnl_convolution_direct, &smd, &wmd, has_bias ? &bmd : NULL, &dmd, st, dl, pad_l, pad_r, attr);
    if (!pd) goto fail;
    const char *impl = NULL;
    p_dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    snprintf(p->impl, sizeof p->impl, "%s", impl ? impl : "?");
    if (p_dnnl_primitive_create(&p->prim, pd) != dnnl_success) goto fail;
    const dnnl_memory_desc_t *wq = p_dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    /* with a tail: the fast primitive, the whole epilogue as post-ops, when oneDNN plans it with the same
       implementation and weights layout (else prim + conv_tail always). Not for a Relu / Clip before the residual
       when O is not a multiple of 16 at b = 16: oneDNN 2.6's AVX-512 jit and jit_1x1 kernels give wrong values in the
       last channel block there (test_nchwc test_conv_dnnl_nonfinite, finite input: up to twice the reference). Its
       AVX2 kernels at b = 8 (jit:avx2, jit_1x1:avx2) compute it right, also for O not a multiple of 8 (the same
       test's cases with O = 12, 20, 24, 40 pass with the fast primitive, AMD EPYC Zen 3, session 22) */
    if (split && !(drops_nan(ep->act1) && ep->has_res && b == 16 && O % 16)) {
        if (epi_attr(&p->fres_arg, ep, &dmd, &fpo, &fattr)) goto fail;
        fpd = conv_pd(alg, &smd, &wmd, has_bias ? &bmd : NULL, &dmd, st, dl, pad_l, pad_r, fattr);
        const char *fimpl = NULL;
        if (fpd && p_dnnl_primitive_desc_query(fpd, dnnl_query_impl_info_str, 0, &fimpl) == dnnl_success && fimpl && !strcmp(fimpl, p->impl) &&
            p_dnnl_memory_desc_equal(wq, p_dnnl_primitive_desc_query_md(fpd, dnnl_query_weights_md, 0)) &&
            p_dnnl_primitive_create(&p->fast, fpd) != dnnl_success)
            p->fast = NULL;
    }

    /* weights: the epilogue's scale folded in, reordered once into the primitive's layout */
    const size_t wbytes = p_dnnl_memory_desc_get_size(wq);
    wtmp = malloc(sizeof(float) * (size_t)(O * Cg * KK));
    p->wbuf = alloc64(wbytes);
    if (!wtmp || !p->wbuf) goto fail;
    for (int64_t o = 0; o < O; o++) {
        const float s = ep && ep->scale ? ep->scale[o] : 1.0f;
        for (int64_t q = 0; q < Cg * KK; q++) wtmp[o * Cg * KK + q] = w[o * Cg * KK + q] * s;
    }
    if (p->fast && fast_bound(wtmp, O, Cg * KK, ep->shift, &p->fast_max)) p_dnnl_primitive_destroy(p->fast), p->fast = NULL;
    out_growth(p, wtmp, O, Cg * KK, ep, strstr(p->impl, "wino") != NULL);
    if (!p->fast) p->fres_arg = 0;
    if (prim_finish(p, pd, &wumd, wtmp, wbytes, has_bias ? &bmd : NULL, ep ? ep->shift : NULL, O, &smd, &dmd)) goto fail;
    if (p->fast) {
        const dnnl_memory_desc_t *sq = p_dnnl_primitive_desc_query_md(fpd, dnnl_query_scratchpad_md, 0);
        const size_t sb = sq ? p_dnnl_memory_desc_get_size(sq) : 0;
        if (sb && p_dnnl_memory_create(&p->fscratch, sq, engine, DNNL_MEMORY_NONE) != dnnl_success) goto fail;
        if (sb > p->scratch_bytes) p->scratch_bytes = sb;
        p->scan_res = ep->has_res && drops_nan(ep->act2);
        p->scan = b == 16 && have_avx512() ? SCAN_512 : have_avx2() ? SCAN_256 : SCAN_1;
        p->nx = N * ((C + b - 1) / b) * b * H * W, p->nres = N * ((O + b - 1) / b) * b * Ho * Wo;
    }
    if (fpd) p_dnnl_primitive_desc_destroy(fpd);
    if (fattr) p_dnnl_primitive_attr_destroy(fattr);
    if (fpo) p_dnnl_post_ops_destroy(fpo);
    p_dnnl_primitive_desc_destroy(pd);
    p_dnnl_primitive_attr_destroy(attr);
    p_dnnl_post_ops_destroy(po);
    free(wtmp);
    return p;
fail:
    if (fpd) p_dnnl_primitive_desc_destroy(fpd);
    if (fattr) p_dnnl_primitive_attr_destroy(fattr);
    if (fpo) p_dnnl_post_ops_destroy(fpo);
    if (pd) p_dnnl_primitive_desc_destroy(pd);
    if (attr) p_dnnl_primitive_attr_destroy(attr);
    if (po) p_dnnl_post_ops_destroy(po);
    free(wtmp);
    so_dnnl_conv_free(p);
    return NULL;
}

/* Executes prim (p->prim or p->fast: sm its scratchpad memory, res_arg its residual argument, 0 without) on x -> y
   (res: the residual post-op's tensor), scratch the scratchpad. */
static void prim_run(so_dnnl_conv *p, dnnl_primitive_t prim, dnnl_memory_t sm, int res_arg, const float *x, float *y, const float *res,
                     void *scratch)
{
    /* oneDNN takes non-const handles; it writes only dst (its padding lanes too: a convolution's are zeroed again
       by conv_tail) */
    p_dnnl_memory_set_data_handle(p->src, (void *)(uintptr_t)x);
    p_dnnl_memory_set_data_handle(p->dst, y);
    dnnl_exec_arg_t args[6];
    int n = 0;
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, p->src};
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, p->wei};
    if (p->bias) args[n++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, p->bias};
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DST, p->dst};
    if (res_arg) {
        p_dnnl_memory_set_data_handle(p->res, (void *)(uintptr_t)res);
        args[n++] = (dnnl_exec_arg_t){res_arg, p->res};
    }
    if (sm) {
        p_dnnl_memory_set_data_handle(sm, scratch);
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, sm};
    }
    p_dnnl_primitive_execute(prim, p->stream, n, args);
    p_dnnl_stream_wait(p->stream);
}

/* *f when there is a fact at most limit (enough for the caller), else absmax_bits of the n floats at v (a fact above
   limit is only a bound: the values may be smaller), stored into *f when there is one (the value was read entirely:
   its fact may be lowered to what was found, kernels/fast.h so_fast_kernel.facts). */
static uint32_t absmax_known(uint32_t *f, const float *v, int64_t n, int scan, uint32_t limit)
{
    if (f && *f <= limit) return *f;
    const uint32_t m = absmax_bits(v, n, scan);
    if (f) *f = m;
    return m;
}

/* The float bit pattern of |v| rounded up (v >= 0 finite); SO_ABSMAX_UNKNOWN when v is not finite or above FLT_MAX. */
static uint32_t bound_bits(double v)
{
    if (!(v >= 0 && v <= FLT_MAX)) return SO_ABSMAX_UNKNOWN;
    float f = (float)v;
    if ((double)f < v) f = nextafterf(f, INFINITY);
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u <= 0x7f7fffffu ? u : SO_ABSMAX_UNKNOWN;
}

static double bits_value(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* |act(v)| <= this for |v| <= m (act Relu, Clip (bounds lo, hi) or none). */
static double act_bound(int act, float lo, float hi, double m)
{
    if (act != SO_ACT_CLIP) return m;
    double c = m;
    if (fabs(lo) > c) c = fabs(lo);
    if (fabs(hi) > c) c = fabs(hi);
    return c;
}

/* A bound of y's fact after a run on x with |x| <= xm (bits; finite) and a residual with |res| <= rm (bits; any, or
   SO_ABSMAX_UNKNOWN): the bound of the pre-activation (ygrow * (xm * l1max + bmax)), through act1, plus the
   residual's, through act2. 0x7f800000 (no NaN) when that bound is not finite but the residual has no NaN (a finite
   sum plus an infinity is that infinity, which Relu / Clip keep or map to a number); SO_ABSMAX_UNKNOWN when nothing
   can be said. */
static uint32_t y_bound(const so_dnnl_conv *p, const so_epi *ep, uint32_t xm, uint32_t rm)
{
    if (!(p->ygrow > 0) || xm > 0x7f7fffffu) return SO_ABSMAX_UNKNOWN;
    double b = p->ygrow * (bits_value(xm) * p->l1max + p->bmax);
    b = act_bound(ep->act1, ep->lo1, ep->hi1, b);
    if (!(b <= FLT_MAX)) return SO_ABSMAX_UNKNOWN;
    if (ep->has_res) {
        if (rm > 0x7f800000u) return SO_ABSMAX_UNKNOWN; /* NaN, or nothing known */
        if (rm == 0x7f800000u) return 0x7f800000u;
        b = (b + bits_value(rm)) * (1 + 0x1p-20); /* the add's rounding */
        if (!(b <= FLT_MAX)) return 0x7f800000u; /* finite + finite: at worst an infinity, no NaN */
    }
    b = act_bound(ep->act2, ep->lo2, ep->hi2, b);
    return bound_bits(b);
}

int so_dnnl_conv_run_known(so_dnnl_conv *p, const float *x, float *y, const float *res, void *scratch, uint32_t *xmax, uint32_t *rmax, uint32_t *ymax)
{
    const so_epi *all = &p->epi;
    if (p->fast) {
        /* no NaN or inf in x, small enough for no overflow, and (scan_res) no NaN in res: y's padding lanes are
           zero (zero-padded weights) */
        const uint32_t xm = absmax_known(xmax, x, p->nx, p->scan, p->fast_max);
        const uint32_t rm = xm <= p->fast_max && p->scan_res ? absmax_known(rmax, res, p->nres, p->scan, 0x7f800000u) : 0;
        if (xm <= p->fast_max && rm <= 0x7f800000u) {
            prim_run(p, p->fast, p->fscratch, p->fres_arg, x, y, res, scratch);
            if (ymax) *ymax = y_bound(p, all, xm, all->has_res ? (rmax ? *rmax : SO_ABSMAX_UNKNOWN) : 0);
            return 1;
        }
    }
    prim_run(p, p->prim, p->scratch, p->res_arg, x, y, res, scratch);
    conv_tail(p, y, res, 1);
    /* a bound without any scan only from known facts (the exact pass keeps whatever NaN x has) */
    if (ymax) *ymax = y_bound(p, all, xmax ? *xmax : SO_ABSMAX_UNKNOWN, all->has_res ? (rmax ? *rmax : SO_ABSMAX_UNKNOWN) : 0);
    return 0;
}

int so_dnnl_conv_run(so_dnnl_conv *p, const float *x, float *y, const float *res, void *scratch)
{
    return so_dnnl_conv_run_known(p, x, y, res, scratch, NULL, NULL, NULL);
}

/* Destroys what a planned primitive holds (not p itself). */
static void prim_release(so_dnnl_conv *p)
{
    if (p->prim) p_dnnl_primitive_destroy(p->prim);
    if (p->fast) p_dnnl_primitive_destroy(p->fast);
    if (p->fscratch) p_dnnl_memory_destroy(p->fscratch);
    if (p->stream) p_dnnl_stream_destroy(p->stream);
    if (p->src) p_dnnl_memory_destroy(p->src);
    if (p->wei) p_dnnl_memory_destroy(p->wei);
    if (p->bias) p_dnnl_memory_destroy(p->bias);
    if (p->dst) p_dnnl_memory_destroy(p->dst);
    if (p->res) p_dnnl_memory_destroy(p->res);
    if (p->scratch) p_dnnl_memory_destroy(p->scratch);
    free(p->wbuf);
    free(p->bbuf);
}

void so_dnnl_conv_free(so_dnnl_conv *p)
{
    if (!p) return;
    prim_release(p);
    free(p);
}

const char *so_dnnl_conv_impl(const so_dnnl_conv *p) { return p->impl; }
const void *so_dnnl_conv_weights(const so_dnnl_conv *p, size_t *bytes)
{
    *bytes = p->wbytes;
    return p->wbuf;
}
size_t so_dnnl_conv_bytes(const so_dnnl_conv *p) { return p->bytes; }
size_t so_dnnl_conv_scratch_bytes(const so_dnnl_conv *p) { return p->scratch_bytes; }
int so_dnnl_conv_has_fast(const so_dnnl_conv *p) { return p->fast != NULL; }

/* ---------------- matmul: a weight B, row-major A [M, K] -> Y [M, N] ---------------- */
/* The same planned-primitive object as a convolution (primitive, memories, reordered weights); only the descriptor
   and the weights' source layout differ. */
struct so_dnnl_mm {
    so_dnnl_conv c;
};

so_dnnl_mm *so_dnnl_mm_plan(int64_t M, int64_t K, int64_t N, int trans_b, const float *w, int64_t ldb, const so_epi *ep)
{
    pthread_once(&fns_once, fns_load);
    if (!fns_ok || M < 1 || K < 1 || N < 1) return NULL;
    so_dnnl_mm *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    so_dnnl_conv *p = &m->c;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    float *wtmp = NULL;
    dnnl_memory_desc_t smd, wmd, wumd, bmd, dmd;
    const dnnl_dims_t sdims = {M, K}, wdims = {K, N}, bdims = {1, N}, ddims = {M, N};
    if (p_dnnl_memory_desc_init_by_tag(&smd, 2, sdims, dnnl_f32, dnnl_ab) != dnnl_success ||
        p_dnnl_memory_desc_init_by_tag(&wmd, 2, wdims, dnnl_f32, dnnl_format_tag_any) != dnnl_success ||
        p_dnnl_memory_desc_init_by_tag(&wumd, 2, wdims, dnnl_f32, dnnl_ab) != dnnl_success ||
        p_dnnl_memory_desc_init_by_tag(&bmd, 2, bdims, dnnl_f32, dnnl_ab) != dnnl_success ||
        p_dnnl_memory_desc_init_by_tag(&dmd, 2, ddims, dnnl_f32, dnnl_ab) != dnnl_success)
        goto fail;
    /* the epilogue as post-ops, as for a convolution (epi_attr); an activation oneDNN gets wrong on NaN: not planned
       (no tail here: sgemm and our epilogue instead) */
    so_epi post, tail;
    if (epi_split(ep, &post, &tail)) goto fail;
    if (epi_attr(&p->res_arg, &post, &dmd, &po, &attr)) goto fail;
    const int has_bias = ep && ep->shift;
    dnnl_matmul_desc_t md;
    if (p_dnnl_matmul_desc_init(&md, &smd, &wmd, has_bias ? &bmd : NULL, &dmd) != dnnl_success ||
        p_dnnl_primitive_desc_create(&pd, &md, attr, engine, NULL) != dnnl_success)
        goto fail;
    const char *impl = NULL;
    if (p_dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl || !strncmp(impl, "ref", 3))
        goto fail; /* only oneDNN's reference code: sgemm and our epilogue instead */
    snprintf(p->impl, sizeof p->impl, "%s", impl);
    if (p_dnnl_primitive_create(&p->prim, pd) != dnnl_success) goto fail;

    /* weights: op(B) with the epilogue's per-column scale folded in, contiguous [K][N], reordered once */
    const dnnl_memory_desc_t *wq = p_dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const size_t wbytes = p_dnnl_memory_desc_get_size(wq);
    wtmp = malloc(sizeof(float) * (size_t)(K * N));
    p->wbuf = alloc64(wbytes);
    if (!wtmp || !p->wbuf) goto fail;
    for (int64_t k = 0; k < K; k++)
        for (int64_t n = 0; n < N; n++)
            wtmp[k * N + n] = (trans_b ? w[n * ldb + k] : w[k * ldb + n]) * (ep && ep->scale ? ep->scale[n] : 1.0f);
    if (prim_finish(p, pd, &wumd, wtmp, wbytes, has_bias ? &bmd : NULL, ep ? ep->shift : NULL, N, &smd, &dmd)) goto fail;
    p_dnnl_primitive_desc_destroy(pd);
    p_dnnl_primitive_attr_destroy(attr);
    p_dnnl_post_ops_destroy(po);
    free(wtmp);
    return m;
fail:
    if (pd) p_dnnl_primitive_desc_destroy(pd);
    if (attr) p_dnnl_primitive_attr_destroy(attr);
    if (po) p_dnnl_post_ops_destroy(po);
    free(wtmp);
    so_dnnl_mm_free(m);
    return NULL;
}

void so_dnnl_mm_run(so_dnnl_mm *p, const float *a, float *y, const float *res, void *scratch)
{
    prim_run(&p->c, p->c.prim, p->c.scratch, p->c.res_arg, a, y, res, scratch);
}
size_t so_dnnl_mm_scratch_bytes(const so_dnnl_mm *p) { return p->c.scratch_bytes; }
const char *so_dnnl_mm_impl(const so_dnnl_mm *p) { return p->c.impl; }
const void *so_dnnl_mm_weights(const so_dnnl_mm *p, size_t *bytes) { return so_dnnl_conv_weights(&p->c, bytes); }
void so_dnnl_mm_free(so_dnnl_mm *p)
{
    if (!p) return;
    prim_release(&p->c);
    free(p);
}

#else /* no oneDNN header at build time */

so_dnnl_conv *so_dnnl_conv_plan(int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, int64_t Ho, int64_t Wo, int64_t kh, int64_t kw,
                                int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t pb, int64_t pr, int64_t dh, int64_t dw,
                                int64_t group, const float *w, const so_epi *ep, int wino, int b)
{
    (void)b, (void)N, (void)C, (void)H, (void)W, (void)O, (void)Ho, (void)Wo, (void)kh, (void)kw, (void)sh, (void)sw, (void)pt, (void)pl;
    (void)pb, (void)pr, (void)dh, (void)dw, (void)group, (void)w, (void)ep, (void)wino;
    return NULL;
}
int so_dnnl_conv_run(so_dnnl_conv *p, const float *x, float *y, const float *res, void *scratch)
{
    return (void)p, (void)x, (void)y, (void)res, (void)scratch, 0;
}
int so_dnnl_conv_run_known(so_dnnl_conv *p, const float *x, float *y, const float *res, void *scratch, uint32_t *xmax, uint32_t *rmax, uint32_t *ymax)
{
    return (void)p, (void)x, (void)y, (void)res, (void)scratch, (void)xmax, (void)rmax, (void)ymax, 0;
}
const char *so_dnnl_conv_impl(const so_dnnl_conv *p) { return (void)p, ""; }
const void *so_dnnl_conv_weights(const so_dnnl_conv *p, size_t *bytes)
{
    *bytes = 0;
    return (void)p, NULL;
}
size_t so_dnnl_conv_bytes(const so_dnnl_conv *p) { return (void)p, 0; }
size_t so_dnnl_conv_scratch_bytes(const so_dnnl_conv *p) { return (void)p, 0; }
int so_dnnl_conv_has_fast(const so_dnnl_conv *p) { return (void)p, 0; }
void so_dnnl_conv_free(so_dnnl_conv *p) { (void)p; }

so_dnnl_mm *so_dnnl_mm_plan(int64_t M, int64_t K, int64_t N, int trans_b, const float *w, int64_t ldb, const so_epi *ep)
{
    (void)M, (void)K, (void)N, (void)trans_b, (void)w, (void)ldb, (void)ep;
    return NULL;
}
void so_dnnl_mm_run(so_dnnl_mm *p, const float *a, float *y, const float *res, void *scratch) { (void)p, (void)a, (void)y, (void)res, (void)scratch; }
size_t so_dnnl_mm_scratch_bytes(const so_dnnl_mm *p) { return (void)p, 0; }
const char *so_dnnl_mm_impl(const so_dnnl_mm *p) { return (void)p, ""; }
const void *so_dnnl_mm_weights(const so_dnnl_mm *p, size_t *bytes)
{
    *bytes = 0;
    return (void)p, NULL;
}
void so_dnnl_mm_free(so_dnnl_mm *p) { (void)p; }

#endif
