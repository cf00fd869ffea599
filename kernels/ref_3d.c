/* ref_3d.c - reference kernels of the 3-D convolution and pooling operators (ops.def; declared in ref.h): plain loops, double accumulators. */
#include "ref.h"

#include <math.h>
#include <stdlib.h>

/* ops.def's spatial ints of the 3-D operators, per axis i < 3 */
#define KER(a, i) ((a)->ints[(i)])
#define STR(a, i) ((a)->ints[3 + (i)])
#define DIL(a, i) ((a)->ints[6 + (i)])
#define PADB(a, i) ((a)->ints[9 + (i)])
#define PADE(a, i) ((a)->ints[12 + (i)])

so_status so_ref_conv3d(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_attr *a = n->attr;
    const int64_t *xd = in[0].shape.dim, *wd = in[1].shape.dim, *yd = out[0].shape.dim;
    const int64_t G = a->group > 0 ? a->group : 1, Cg = wd[1], Og = wd[0] / G;
    const float *X = in[0].data, *W = in[1].data, *B = n->n_in > 2 && in[2].data ? in[2].data : NULL;
    float *Y = out[0].data;
    const int64_t xs = xd[2] * xd[3] * xd[4], ks = wd[2] * wd[3] * wd[4];
    for (int64_t b = 0; b < yd[0]; b++)
        for (int64_t o = 0; o < yd[1]; o++) {
            const int64_t grp = o / Og;
            for (int64_t z = 0; z < yd[2]; z++)
                for (int64_t y = 0; y < yd[3]; y++)
                    for (int64_t x = 0; x < yd[4]; x++) {
                        double acc = B ? B[o] : 0.0;
                        for (int64_t c = 0; c < Cg; c++) {
                            const float *xp = X + (b * xd[1] + grp * Cg + c) * xs, *wp = W + (o * Cg + c) * ks;
                            for (int64_t kz = 0; kz < wd[2]; kz++) {
                                int64_t iz = z * STR(a, 0) - PADB(a, 0) + kz * DIL(a, 0);
                                if (iz < 0 || iz >= xd[2]) continue;
                                for (int64_t ky = 0; ky < wd[3]; ky++) {
                                    int64_t iy = y * STR(a, 1) - PADB(a, 1) + ky * DIL(a, 1);
                                    if (iy < 0 || iy >= xd[3]) continue;
                                    for (int64_t kx = 0; kx < wd[4]; kx++) {
                                        int64_t ix = x * STR(a, 2) - PADB(a, 2) + kx * DIL(a, 2);
                                        if (ix < 0 || ix >= xd[4]) continue;
                                        acc += (double)xp[(iz * xd[3] + iy) * xd[4] + ix] * wp[(kz * wd[3] + ky) * wd[4] + kx];
                                    }
                                }
                            }
                        }
                        Y[(((b * yd[1] + o) * yd[2] + z) * yd[3] + y) * yd[4] + x] = (float)acc;
                    }
        }
    return SO_OK;
}

/* Scatters every input element through the kernel: output position = input * stride - pad begin + k * dilation. */
so_status so_ref_convtranspose3d(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_attr *a = n->attr;
    const int64_t *xd = in[0].shape.dim, *wd = in[1].shape.dim, *yd = out[0].shape.dim;
    const int64_t G = a->group > 0 ? a->group : 1, Cig = xd[1] / G, Cog = wd[1];
    const float *X = in[0].data, *W = in[1].data, *B = n->n_in > 2 && in[2].data ? in[2].data : NULL;
    float *Y = out[0].data;
    const int64_t ys = yd[2] * yd[3] * yd[4], xs = xd[2] * xd[3] * xd[4], ks = wd[2] * wd[3] * wd[4], total = yd[0] * yd[1] * ys;
    double *acc = calloc((size_t)(total ? total : 1), sizeof *acc);
    if (!acc) return so_errorf("node '%s' (ConvTranspose): out of memory", n->name ? n->name : "?");
    for (int64_t b = 0; b < xd[0]; b++)
        for (int64_t ci = 0; ci < xd[1]; ci++) {
            const int64_t grp = ci / Cig;
            const float *xp = X + (b * xd[1] + ci) * xs;
            for (int64_t o = 0; o < Cog; o++) {
                const float *wp = W + (ci * Cog + o) * ks;
                double *yp = acc + (b * yd[1] + grp * Cog + o) * ys;
                for (int64_t z = 0; z < xd[2]; z++)
                    for (int64_t y = 0; y < xd[3]; y++)
                        for (int64_t x = 0; x < xd[4]; x++) {
                            const double v = xp[(z * xd[3] + y) * xd[4] + x];
                            for (int64_t kz = 0; kz < wd[2]; kz++) {
                                int64_t oz = z * STR(a, 0) - PADB(a, 0) + kz * DIL(a, 0);
                                if (oz < 0 || oz >= yd[2]) continue;
                                for (int64_t ky = 0; ky < wd[3]; ky++) {
                                    int64_t oy = y * STR(a, 1) - PADB(a, 1) + ky * DIL(a, 1);
                                    if (oy < 0 || oy >= yd[3]) continue;
                                    for (int64_t kx = 0; kx < wd[4]; kx++) {
                                        int64_t ox = x * STR(a, 2) - PADB(a, 2) + kx * DIL(a, 2);
                                        if (ox < 0 || ox >= yd[4]) continue;
                                        yp[(oz * yd[3] + oy) * yd[4] + ox] += v * wp[(kz * wd[3] + ky) * wd[4] + kx];
                                    }
                                }
                            }
                        }
            }
        }
    for (int64_t i = 0; i < total; i++) Y[i] = (float)(acc[i] + (B ? B[(i / ys) % yd[1]] : 0.0));
    free(acc);
    return SO_OK;
}

/* Max (NaN propagates) or average over the dilated window; the average divides by the window positions inside
   the input, or with count_include_pad inside the padded input (as ONNX Runtime). */
static so_status pool3d(const so_node *n, const so_tensor *in, so_tensor *out, int is_max)
{
    const so_attr *a = n->attr;
    const int64_t *xd = in[0].shape.dim, *yd = out[0].shape.dim;
    const float *X = in[0].data;
    float *Y = out[0].data;
    const int64_t xs = xd[2] * xd[3] * xd[4];
    for (int64_t p = 0; p < xd[0] * xd[1]; p++) {
        const float *xp = X + p * xs;
        for (int64_t z = 0; z < yd[2]; z++)
            for (int64_t y = 0; y < yd[3]; y++)
                for (int64_t x = 0; x < yd[4]; x++) {
                    double acc = 0.0;
                    float m = -INFINITY;
                    int64_t inside = 0, padded = 0;
                    const int64_t o[3] = {z, y, x};
                    int64_t pos[3], k[3];
                    for (k[0] = 0; k[0] < KER(a, 0); k[0]++)
                        for (k[1] = 0; k[1] < KER(a, 1); k[1]++)
                            for (k[2] = 0; k[2] < KER(a, 2); k[2]++) {
                                int in_pad = 1, in_x = 1;
                                for (int i = 0; i < 3; i++) {
                                    pos[i] = o[i] * STR(a, i) - PADB(a, i) + k[i] * DIL(a, i);
                                    in_x &= pos[i] >= 0 && pos[i] < xd[2 + i];
                                    in_pad &= pos[i] >= -PADB(a, i) && pos[i] < xd[2 + i] + PADE(a, i);
                                }
                                padded += in_pad;
                                if (!in_x) continue;
                                const float v = xp[(pos[0] * xd[3] + pos[1]) * xd[4] + pos[2]];
                                inside++;
                                acc += v;
                                if (m == m && (v > m || v != v)) m = v; /* NaN stays */
                            }
                    const int64_t cnt = a->count_include_pad ? padded : inside;
                    Y[((p * yd[2] + z) * yd[3] + y) * yd[4] + x] = is_max ? m : cnt > 0 ? (float)(acc / (double)cnt) : 0.0f;
                }
    }
    return SO_OK;
}

so_status so_ref_maxpool3d(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    return pool3d(n, in, out, 1);
}

so_status so_ref_avgpool3d(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    return pool3d(n, in, out, 0);
}
