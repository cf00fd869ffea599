/* vmath.h - static inline math of the kernel set, compiled at each level: exp/erf/sigmoid/tanh approximations for vectorised loops, a softmax row, the 8x8 register transpose (AVX2). */
#ifndef SO_VMATH_H
#define SO_VMATH_H

#include <stdint.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#ifdef __AVX2__
/* In-register 8x8 transpose of eight rows of 8 floats: r[i][j] -> r[j][i] (the conv kernels'
   channel/pixel tiles, the tiled Transpose). */
static inline void so_tr8x8(__m256 *r)
{
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]), t2 = _mm256_unpacklo_ps(r[2], r[3]),
           t3 = _mm256_unpackhi_ps(r[2], r[3]), t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]),
           t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)), s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2)),
           s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)), s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2)),
           s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0)), s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2)),
           s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0)), s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}
#endif

/* expf for vectorised loops (omp simd): range reduction x = n ln2 + r (n by the 1.5*2^23
   rounding trick), degree-6 polynomial (Cephes), 2^n through the exponent bits. The input
   is clamped to [-87, 88] with integer operations (float compares would keep GCC from
   if-converting the loop under -ftrapping-math). Relative error ~2e-7. Like expf, NaN gives
   NaN, +inf gives +inf and -inf gives 0 (selected by the same integer masks at the end). */
static inline float vexpf(float x)
{
    union { float f; int32_t i; } ux = {.f = x};
    const int32_t in = ux.i;
    int32_t mag = ux.i & 0x7fffffff, lim = ux.i < 0 ? 0x42AE0000 : 0x42B00000; /* 87, 88 */
    const int32_t nonfin = (0x7f7fffff - mag) >> 31; /* all ones where x is NaN or +-inf */
    mag = mag > lim ? lim : mag;
    ux.i = (int32_t)((uint32_t)ux.i & 0x80000000u) | mag;
    x = ux.f;
    union { float f; int32_t i; } t = {.f = x * 1.44269504088896341f + 12582912.f};
    float n = t.f - 12582912.f;
    float r = x - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.f;
    union { int32_t i; float f; } u = {.i = (t.i - 0x4B400000 + 127) * (1 << 23)}, res = {.f = p * u.f};
    /* non-finite x: x itself (NaN, +inf), or 0 for -inf */
    const int32_t special = in == (int32_t)0xff800000u ? 0 : in;
    res.i = (res.i & ~nonfin) | (special & nonfin);
    return res.f;
}

/* erf, the same polynomial at every level (tools/fit_erf.py derives it: a Remez fit of our own, run it to
   see the figures): erf(x) = sign(x) * min(1, a * Q(t)) with a = min(|x|, A), t = 2a/A - 1 and Q of degree
   14 in t, Horner. Q minimises the RELATIVE error of a * Q against erf on [0, A] (so erf keeps relative
   accuracy near 0: erf(1e-30) = 1.128e-30), and Q(1) is pinned to (1 + 1.5e-7) / A so that |x| >= A gives
   exactly +-1 (1 - erf(3.8) = 7.7e-8). No divide, no exp, no branch. Error against double erf over EVERY
   float of [0, 4] (exhaustive; absolute, and relative for |x| > 1e-37): at most 4.35e-7 with FMA (the AVX2
   and AVX-512 levels, bit-identical to each other, scalar tails included), 4.97e-7 with a*b+c (the scalar
   level: x86-64-v2 has no FMA); beyond 4 the error is 1 - erf(4) = 1.5e-8. tests/test_fast.c
   test_erf_sweep asserts SO_ERF_MAX_ERR at every level. erf(-x) = -erf(x) bit for bit, NaN gives NaN,
   +-inf gives +-1. (The Abramowitz-Stegun 7.1.26 form it replaced, with exp and a divide: ~1.5e-7.) */
#define SO_ERF_MAX_ERR 5e-7
#define SO_ERF_A 3.79999995f
#define SO_ERF_S 0.526315808f /* 2 / A */
#define SO_ERF_Q0 5.225213170e-01f
#define SO_ERF_Q1 -4.919945300e-01f
#define SO_ERF_Q2 3.817969263e-01f
#define SO_ERF_Q3 -1.534094810e-01f
#define SO_ERF_Q4 -1.263120621e-01f
#define SO_ERF_Q5 2.838695049e-01f
#define SO_ERF_Q6 -2.034780234e-01f
#define SO_ERF_Q7 -1.985161193e-02f
#define SO_ERF_Q8 1.564018130e-01f
#define SO_ERF_Q9 -9.570188075e-02f
#define SO_ERF_Q10 -2.970392816e-02f
#define SO_ERF_Q11 5.543670803e-02f
#define SO_ERF_Q12 -9.496049024e-03f
#define SO_ERF_Q13 -1.095946226e-02f
#define SO_ERF_Q14 4.038711544e-03f
/* Q's Horner steps with the multiply-add MA(acc, t, c) (acc * t + c) */
#define SO_ERF_HORNER(MA, q, t, C)                                                                                    \
    do {                                                                                                               \
        q = MA(C(SO_ERF_Q14), t, C(SO_ERF_Q13));                                                                       \
        q = MA(q, t, C(SO_ERF_Q12));                                                                                   \
        q = MA(q, t, C(SO_ERF_Q11));                                                                                   \
        q = MA(q, t, C(SO_ERF_Q10));                                                                                   \
        q = MA(q, t, C(SO_ERF_Q9));                                                                                    \
        q = MA(q, t, C(SO_ERF_Q8));                                                                                    \
        q = MA(q, t, C(SO_ERF_Q7));                                                                                    \
        q = MA(q, t, C(SO_ERF_Q6));                                                                                    \
        q = MA(q, t, C(SO_ERF_Q5));                                                                                    \
        q = MA(q, t, C(SO_ERF_Q4));                                                                                    \
        q = MA(q, t, C(SO_ERF_Q3));                                                                                    \
        q = MA(q, t, C(SO_ERF_Q2));                                                                                    \
        q = MA(q, t, C(SO_ERF_Q1));                                                                                    \
        q = MA(q, t, C(SO_ERF_Q0));                                                                                    \
    } while (0)
/* a * b + c: one rounding where the level has FMA (the vector levels' bits), two on the scalar level */
#ifdef __FMA__
#define SO_FMAF(a, b, c) __builtin_fmaf(a, b, c)
#else
#define SO_FMAF(a, b, c) ((a) * (b) + (c))
#endif
#define SO_ERF_SCALAR_C(v) (v)
/* the scalar form: min and the sign by integer operations on the bits (float compares would keep GCC from
   if-converting omp simd loops under -ftrapping-math); a NaN keeps its bits through the clamp below */
static inline float verff(float x)
{
    union { float f; int32_t i; } ux = {.f = x}, ua, up;
    const int32_t mag = ux.i & 0x7fffffff, lim = 0x40733333; /* SO_ERF_A's bits */
    const int32_t nan = (0x7f800000 - mag) >> 31;            /* all ones where x is NaN */
    ua.i = mag > lim ? lim : mag;
    const float a = ua.f, t = SO_FMAF(a, SO_ERF_S, -1.f);
    float q;
    SO_ERF_HORNER(SO_FMAF, q, t, SO_ERF_SCALAR_C);
    up.f = a * q;
    up.i = up.i > 0x3f800000 ? 0x3f800000 : up.i; /* min(1, a q): a q >= 0 */
    up.i = (up.i & ~nan) | (mag & nan);
    up.i |= (int32_t)((uint32_t)ux.i & 0x80000000u);
    return up.f;
}

#ifdef __AVX512F__
/* verff on 16 lanes, the same operations (bit-identical to verff at this level); min with the constant first
   lets a NaN through, the sign goes back by a bit select (ternary logic 0xD8: sign bit from x, the rest from p) */
static inline __m512 so_verf16(__m512 x)
{
    const __m512 a = _mm512_min_ps(_mm512_set1_ps(SO_ERF_A), _mm512_abs_ps(x));
    const __m512 t = _mm512_fmadd_ps(a, _mm512_set1_ps(SO_ERF_S), _mm512_set1_ps(-1.f));
    __m512 q;
    SO_ERF_HORNER(_mm512_fmadd_ps, q, t, _mm512_set1_ps);
    const __m512 p = _mm512_min_ps(_mm512_set1_ps(1.f), _mm512_mul_ps(a, q));
    return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(p), _mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN), 0xD8));
}
#endif
#ifdef __AVX2__
/* verff on 8 lanes, the same operations (bit-identical to verff at this level) */
static inline __m256 so_verf8(__m256 x)
{
    const __m256 sign = _mm256_set1_ps(-0.f);
    const __m256 a = _mm256_min_ps(_mm256_set1_ps(SO_ERF_A), _mm256_andnot_ps(sign, x));
    const __m256 t = _mm256_fmadd_ps(a, _mm256_set1_ps(SO_ERF_S), _mm256_set1_ps(-1.f));
    __m256 q;
    SO_ERF_HORNER(_mm256_fmadd_ps, q, t, _mm256_set1_ps);
    const __m256 p = _mm256_min_ps(_mm256_set1_ps(1.f), _mm256_mul_ps(a, q));
    return _mm256_or_ps(p, _mm256_and_ps(x, sign));
}
#endif

/* y[i] = erf(x[i]) for i < n (y may be x): the widest level's lanes, verff for the rest (the same bits). */
static inline void so_verf_row(const float *x, float *y, int64_t n)
{
    int64_t i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, so_verf16(_mm512_loadu_ps(x + i)));
#elif defined(__AVX2__)
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, so_verf8(_mm256_loadu_ps(x + i)));
#endif
#pragma omp simd
    for (int64_t j = i; j < n; j++) y[j] = verff(x[j]);
}

static inline float vsigmoidf(float x) { return 1.f / (1.f + vexpf(-x)); }

/* exp and sigmoid on 16 (AVX-512) / 8 (AVX2) lanes: vexpf's reduction and polynomial, x clamped to [-87.3, 89]
   (a NaN passes: min/max return their second operand then) so that e^89 = inf as expf's overflow is, and
   sigmoid(-inf) = 1/(1 + inf) = 0 exactly (x * sigmoid(x) is then NaN at -inf, as the reference's Sigmoid + Mul).
   AVX-512 scales by 2^n with scalef; AVX2 builds 2^n in the exponent bits (n = 128 gives inf). */
/* x clamped, n = round(x / ln2), q = e^(x - n ln2) by vexpf's polynomial: the part both widths share. */
#define SO_VEXP_REDUCE(P, ROUND, x, n, q)                                                                              \
    do {                                                                                                               \
        x = P##_max_ps(P##_set1_ps(-87.3f), P##_min_ps(P##_set1_ps(89.0f), x));                                         \
        n = ROUND(P##_mul_ps(x, P##_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);    \
        const __typeof__(x) r_ = P##_fmadd_ps(n, P##_set1_ps(2.12194440e-4f), P##_fmadd_ps(n, P##_set1_ps(-0.693359375f), x)); \
        q = P##_fmadd_ps(P##_set1_ps(1.9875691500e-4f), r_, P##_set1_ps(1.3981999507e-3f));                            \
        q = P##_fmadd_ps(q, r_, P##_set1_ps(8.3334519073e-3f));                                                        \
        q = P##_fmadd_ps(q, r_, P##_set1_ps(4.1665795894e-2f));                                                        \
        q = P##_fmadd_ps(q, r_, P##_set1_ps(1.6666665459e-1f));                                                        \
        q = P##_fmadd_ps(q, r_, P##_set1_ps(5.0000001201e-1f));                                                        \
        q = P##_add_ps(P##_fmadd_ps(P##_mul_ps(q, r_), r_, r_), P##_set1_ps(1.f));                                     \
    } while (0)
/* 1 / (1 + e^-x) on the lanes of width P with exp function E */
#define SO_VSIGMOID(P, E, x) P##_div_ps(P##_set1_ps(1.f), P##_add_ps(P##_set1_ps(1.f), E(P##_sub_ps(P##_setzero_ps(), x))))
#ifdef __AVX512F__
static inline __m512 so_vexp16(__m512 x)
{
    __m512 n, q;
    SO_VEXP_REDUCE(_mm512, _mm512_roundscale_ps, x, n, q);
    return _mm512_scalef_ps(q, n);
}
static inline __m512 so_vsigmoid16(__m512 x) { return SO_VSIGMOID(_mm512, so_vexp16, x); }
#endif
#ifdef __AVX2__
static inline __m256 so_vexp8(__m256 x)
{
    __m256 n, q;
    SO_VEXP_REDUCE(_mm256, _mm256_round_ps, x, n, q);
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(q, _mm256_castsi256_ps(e));
}
static inline __m256 so_vsigmoid8(__m256 x) { return SO_VSIGMOID(_mm256, so_vexp8, x); }
/* HardSwish x * min(1, max(0, x / 6 + 0.5)) on 8 lanes: the reference's float operations (GCC does not
   if-convert its scalar loop); max/min with the constant first let a NaN through as the reference's
   comparisons do. */
static inline __m256 so_vhardswish8(__m256 v)
{
    const __m256 t = _mm256_add_ps(_mm256_div_ps(v, _mm256_set1_ps(6.f)), _mm256_set1_ps(0.5f));
    return _mm256_mul_ps(v, _mm256_min_ps(_mm256_set1_ps(1.f), _mm256_max_ps(_mm256_setzero_ps(), t)));
}
#endif

/* y[i] = sigmoid(x[i]) (silu: x[i] * sigmoid(x[i])) for i < n (y may be x): the widest level's lanes, vsigmoidf
   for the rest. */
static inline void so_vsigmoid_row(const float *x, float *y, int64_t n, int silu)
{
    int64_t i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_loadu_ps(x + i), s = so_vsigmoid16(v);
        _mm512_storeu_ps(y + i, silu ? _mm512_mul_ps(v, s) : s);
    }
#elif defined(__AVX2__)
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i), s = so_vsigmoid8(v);
        _mm256_storeu_ps(y + i, silu ? _mm256_mul_ps(v, s) : s);
    }
#endif
    for (; i < n; i++) y[i] = silu ? x[i] * vsigmoidf(x[i]) : vsigmoidf(x[i]);
}

/* Softmax of one contiguous row x[0..L) into y (y may be x): vectorised max, exp + sum, scale. */
static inline void softmax_row(const float *x, float *y, int64_t L)
{
    float mx = x[0], sum = 0.f;
#pragma omp simd reduction(max : mx)
    for (int64_t j = 1; j < L; j++) mx = x[j] > mx ? x[j] : mx;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < L; j++) {
        float e = vexpf(x[j] - mx);
        y[j] = e;
        sum += e;
    }
    float inv = 1.f / sum;
#pragma omp simd
    for (int64_t j = 0; j < L; j++) y[j] *= inv;
}

/* tanh: odd Cephes polynomial for |x| < 0.625 (relative accuracy near 0), 1 - 2/(e^{2|x|}+1)
   above (vexpf clamps, so large |x| gives exactly +-1); selected by bit masks like verff. */
static inline float vtanhf(float x)
{
    float a = __builtin_fabsf(x);
    float z = x * x;
    float small = x + x * z * ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z + 1.33314422036e-1f) * z - 3.33332819422e-1f);
    float big = __builtin_copysignf(1.f - 2.f / (vexpf(2.f * a) + 1.f), x);
    union { float f; int32_t i; } ua = {.f = a}, us = {.f = small}, ub = {.f = big}, r;
    int32_t m = (ua.i - 0x3F200000) >> 31; /* all ones where a < 0.625 */
    r.i = (us.i & m) | (ub.i & ~m);
    return r.f;
}

#endif
