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

/* erf: odd Taylor series for |x| < 0.5 (relative accuracy near 0), Abramowitz-Stegun
   7.1.26 above (absolute error 1.5e-7, i.e. < 3e-7 relative where erf >= 0.52). */
static inline float verff(float x)
{
    float a = __builtin_fabsf(x);
    float x2 = x * x;
    float small = x * (1.1283791671f + x2 * (-0.3761263890f + x2 * (0.1128379167f + x2 * (-0.0268661706f + x2 * (0.0052239776f + x2 * -0.0008548327f)))));
    float t = 1.f / (1.f + 0.3275911f * a);
    float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
    float big = __builtin_copysignf(1.f - poly * vexpf(-a * a), x);
    /* select small where a < 0.5 by bit masks (non-negative floats order as integers) */
    union { float f; int32_t i; } ua = {.f = a}, us = {.f = small}, ub = {.f = big}, r;
    int32_t m = (ua.i - 0x3F000000) >> 31; /* all ones where a < 0.5 */
    r.i = (us.i & m) | (ub.i & ~m);
    return r.f;
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
