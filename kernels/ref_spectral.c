/* ref_spectral.c - reference kernels of the spectral operators DFT and STFT (ops.def; declared in ref.h): direct sums in double. */
#include "ref_priv.h"

#include <math.h>
#include <stdlib.h>

/* The n twiddle factors cos, sin of 2 pi j / n (j < n) in double, malloc'd: tw[2j], tw[2j+1]. */
static double *twiddles(int64_t n)
{
    double *tw = malloc((size_t)(2 * n) * sizeof *tw);
    for (int64_t j = 0; tw && j < n; j++) {
        const double ang = 2.0 * M_PI * (double)j / (double)n;
        tw[2 * j] = cos(ang), tw[2 * j + 1] = sin(ang);
    }
    return tw;
}

/* out[f] (complex, f < n_out) = sum_{k < n} x[k] * e^(-+2 pi i f k / n), x read from `in` (len samples of c = 1 real or
   2 complex floats, stride `st` floats between samples; zero past len), scaled by 1/n when inverse; tw: twiddles(n). */
static void dft_1d(const float *in, int64_t len, int64_t st, int c, int64_t n, int64_t n_out, int inverse, const double *tw, float *out, int64_t ost)
{
    const double sgn = inverse ? 1.0 : -1.0;
    for (int64_t f = 0; f < n_out; f++) {
        double re = 0, im = 0;
        for (int64_t k = 0; k < n && k < len; k++) {
            const int64_t j = (f * k) % n;
            const double cs = tw[2 * j], sn = sgn * tw[2 * j + 1];
            const double xr = in[k * st], xi = c == 2 ? in[k * st + 1] : 0.0;
            re += xr * cs - xi * sn;
            im += xr * sn + xi * cs;
        }
        if (inverse) re /= (double)n, im /= (double)n;
        out[f * ost] = (float)re;
        out[f * ost + 1] = (float)im;
    }
}

so_status so_ref_dft(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const so_attr *a = n->attr;
    const so_shape *xs = &in[0].shape, *ys = &out[0].shape;
    const int ax = a->axis, c = (int)xs->dim[xs->rank - 1];
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < ax; k++) outer *= xs->dim[k];
    for (int k = ax + 1; k < xs->rank - 1; k++) inner *= xs->dim[k];
    const int64_t L = xs->dim[ax], No = ys->dim[ax];
    double *tw = twiddles(a->ints[0]);
    if (!tw) return ref_fail(g, n, "out of memory");
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++)
            dft_1d((const float *)in[0].data + (o * L * inner + i) * c, L, inner * c, c, a->ints[0], No, a->mode & 1, tw,
                   (float *)out[0].data + (o * No * inner + i) * 2, inner * 2);
    free(tw);
    return SO_OK;
}

so_status so_ref_stft(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const so_attr *a = n->attr;
    const int64_t B = in[0].shape.dim[0], L = in[0].shape.dim[1], step = a->ints[0], flen = a->ints[1];
    const int c = (int)in[0].shape.dim[2];
    const int64_t frames = out[0].shape.dim[1], bins = out[0].shape.dim[2];
    const float *W = n->n_in > 1 && in[1].data ? in[1].data : NULL;
    float *buf = malloc((size_t)(flen * c) * sizeof *buf);
    double *tw = twiddles(flen);
    if (!buf || !tw) {
        free(buf), free(tw);
        return ref_fail(g, n, "out of memory");
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < frames; t++) {
            const float *x = (const float *)in[0].data + (b * L + t * step) * c;
            for (int64_t k = 0; k < flen * c; k++) buf[k] = x[k] * (W ? W[k / c] : 1.0f);
            dft_1d(buf, flen, c, c, flen, bins, 0, tw, (float *)out[0].data + (b * frames + t) * bins * 2, 2);
        }
    free(buf);
    free(tw);
    return SO_OK;
}
