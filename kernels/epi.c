/* epi.c - activations and the per-channel epilogue (scale/shift, activation, residual + activation) that the conv and GEMM kernels apply to finished tiles. */
#include "kset_names.h"

#include "epi.h"

#include <stddef.h>

#include "vmath.h"

void so_epi_act(int act, float lo, float hi, float *x, int64_t n)
{
    switch (act) {
    case SO_ACT_RELU:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) x[i] = x[i] < 0.f ? 0.f : x[i]; /* NaN passes, as in the reference */
        break;
    case SO_ACT_SIGMOID: so_vsigmoid_row(x, x, n, 0); break;
    case SO_ACT_TANH:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) x[i] = vtanhf(x[i]);
        break;
    case SO_ACT_CLIP:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            float v = x[i] < lo ? lo : x[i];
            x[i] = v > hi ? hi : v;
        }
        break;
    case SO_EPI_SILU: so_vsigmoid_row(x, x, n, 1); break;
    case SO_EPI_HARDSWISH: { /* the reference's float expression (elem.c's HardSwish), NaN passes */
        int64_t i = 0;
#ifdef __AVX2__
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, so_vhardswish8(_mm256_loadu_ps(x + i)));
#endif
        for (; i < n; i++) {
            float t = x[i] / 6.f + 0.5f;
            t = t < 0.f ? 0.f : t;
            x[i] *= t > 1.f ? 1.f : t;
        }
        break;
    }
    case SO_EPI_HARDSIGMOID: /* lo = alpha, hi = beta */
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            float t = lo * x[i] + hi;
            t = t < 0.f ? 0.f : t;
            x[i] = t > 1.f ? 1.f : t;
        }
        break;
    default:
        break;
    }
}

/* y = act(y * s + t) in one vectorised pass for the cheap activations. */
static void affine_act(float *restrict y, int64_t n, float s, float t, int act, float lo, float hi)
{
    switch (act) {
    case SO_ACT_NONE:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) y[i] = y[i] * s + t;
        break;
    case SO_ACT_RELU:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            float v = y[i] * s + t;
            y[i] = v < 0.f ? 0.f : v;
        }
        break;
    case SO_ACT_CLIP:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            float v = y[i] * s + t;
            v = v < lo ? lo : v;
            y[i] = v > hi ? hi : v;
        }
        break;
    default:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) y[i] = y[i] * s + t;
        so_epi_act(act, lo, hi, y, n);
        break;
    }
}

void so_epi_row(const so_epi *ep, int64_t c, float *y, const float *res, int64_t n)
{
    float s = ep->scale ? ep->scale[c] : 1.f, t = ep->shift ? ep->shift[c] : 0.f;
    if (ep->scale || ep->shift || ep->act1) affine_act(y, n, s, t, ep->act1, ep->lo1, ep->hi1);
    if (res) {
        const float *restrict r = res;
        float *restrict yy = y;
        if (ep->act2 == SO_ACT_RELU) {
#pragma omp simd
            for (int64_t i = 0; i < n; i++) {
                float v = yy[i] + r[i];
                yy[i] = v < 0.f ? 0.f : v;
            }
        } else {
#pragma omp simd
            for (int64_t i = 0; i < n; i++) yy[i] += r[i];
            if (ep->act2) so_epi_act(ep->act2, ep->lo2, ep->hi2, y, n);
        }
    }
}

void so_epi_cols(const so_epi *ep, int64_t c0, float *y, const float *res, int64_t n)
{
    const float *sc = ep->scale ? ep->scale + c0 : NULL, *sh = ep->shift ? ep->shift + c0 : NULL;
    if (sc) {
        for (int64_t j = 0; j < n; j++) y[j] = y[j] * sc[j] + (sh ? sh[j] : 0.f);
    } else if (sh) {
        for (int64_t j = 0; j < n; j++) y[j] += sh[j];
    }
    if (ep->act1) so_epi_act(ep->act1, ep->lo1, ep->hi1, y, n);
    if (res) {
        for (int64_t j = 0; j < n; j++) y[j] += res[j];
        if (ep->act2) so_epi_act(ep->act2, ep->lo2, ep->hi2, y, n);
    }
}
