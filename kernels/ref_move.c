/* ref_move.c - reference kernels of data movement: resize, pad, concat/split, views, transpose, gathers and scatters, top-k, grid sampling. */
#include "ref_priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- data movement ---------------- */

/* Resize: the source coordinate of output index x (ONNX coordinate_transformation_mode), in
   float arithmetic as ONNX Runtime computes it: nearest rounding at exact halves depends on it
   (1.5f / 0.6f - 0.5f is just below 2). */
static float resize_src(int cm, int from_sizes, int64_t x, int64_t len_out, int64_t len_in, float scale)
{
    /* align_corners with scales divides by the unrounded output length in * scale - 1 (ONNX's
       reference and ONNX Runtime), with sizes by out - 1 */
    if (cm == SO_RESIZE_ALIGN_CORNERS && !from_sizes) {
        float lr = (float)len_in * scale;
        return lr > 1.0f ? (float)x * (float)(len_in - 1) / (lr - 1.0f) : 0.0f;
    }
    switch (cm) {
    case SO_RESIZE_HALF_PIXEL: return ((float)x + 0.5f) / scale - 0.5f;
    case SO_RESIZE_PYTORCH_HALF_PIXEL: return len_out > 1 ? ((float)x + 0.5f) / scale - 0.5f : 0.0f;
    case SO_RESIZE_ALIGN_CORNERS: return len_out > 1 ? (float)x * (float)(len_in - 1) / (float)(len_out - 1) : 0.0f;
    case SO_RESIZE_TF_HALF_PIXEL_FOR_NN: return ((float)x + 0.5f) / scale;
    case SO_RESIZE_HALF_PIXEL_SYMMETRIC: { /* half_pixel shifted so the rounded output stays centred on the input */
        const float adj = (float)len_out / ((float)len_in * scale), center = (float)len_in / 2.0f;
        return center * (1.0f - adj) + ((float)x + 0.5f) / scale - 0.5f;
    }
    default: return (float)x / scale; /* asymmetric */
    }
}

/* 1 when align_corners divides by the rounded output length (out - 1): the output came from sizes, or the resize
   antialiases (ONNX Runtime's antialias filter takes the integer output length whatever gave it) */
static int by_rounded_len(const so_attr *a) { return a->ints[2] != 0 || (a->n_ints > 6 && a->ints[6] != 0); }

void so_ref_resize_taps(const so_attr *a, int64_t x, int64_t len_out, int64_t len_in, float scale, int64_t *i0, int64_t *i1, double *w)
{
    float v = resize_src((int)a->ints[0], by_rounded_len(a), x, len_out, len_in, scale);
    if (a->mode == 0) {
        float f = floorf(v), r;
        switch (a->ints[1]) {
        case 0: r = v - f == 0.5f ? f : roundf(v); break; /* round_prefer_floor */
        case 1: r = roundf(v); break;                     /* round_prefer_ceil: halves away from zero */
        case 2: r = f; break;
        default: r = ceilf(v); break;
        }
        *i0 = *i1 = r < 0 ? 0 : r > (float)(len_in - 1) ? len_in - 1 : (int64_t)r;
        *w = 0;
        return;
    }
    v = v < 0 ? 0 : v > (float)(len_in - 1) ? (float)(len_in - 1) : v;
    *i0 = (int64_t)v;
    *i1 = *i0 + 1 < len_in ? *i0 + 1 : len_in - 1;
    *w = v - (float)*i0;
}

int so_ref_resize_two_tap(const so_attr *a)
{
    if (a->ints[0] == SO_RESIZE_TF_CROP_AND_RESIZE) return 0; /* so_ref_resize's own path (extrapolation) */
    return a->mode == 0 || (a->mode == 1 && (a->n_ints < 7 || (!a->ints[5] && !(a->ints[6] && (a->alpha < 1.0f || a->beta < 1.0f)))));
}

/* The cubic convolution kernel with coefficient A at distance d >= 0 (Keys; ONNX's cubic_coeffs). */
static double cubic_w(double d, double A)
{
    if (d <= 1.0) return ((A + 2.0) * d - (A + 3.0)) * d * d + 1.0;
    if (d < 2.0) return ((A * d - 5.0 * A) * d + 8.0 * A) * d - 4.0 * A;
    return 0.0;
}

/* Taps of one axis for cubic, antialiased or exclude_outside resizing, as ONNX's reference computes them:
   output index o reads input indices idx[o*n .. o*n+n) (edge-clamped) with weights w[...]. The source
   coordinate x (resize_src) has base = ceil(x) - 1 and ratio r = x - base in (0, 1]; tap j is at base + start
   + j at distance (start + j - r) * s, s the scale when antialiasing a downscale, else 1; cubic:
   start = floor(-2 / s) + 1, linear: floor(-1 / s) + 1; n = 2 - 2 start. Weights are renormalised when
   antialiasing or excluding outside taps (whose weight is 0). Returns n, or 0 when out of memory. */
static int64_t resize_axis_taps(const so_attr *a, int64_t len_out, int64_t len_in, float scale, int64_t **idx, double **w)
{
    const int excl = a->ints[5] != 0, aa = a->ints[6] != 0 && scale < 1.0f;
    const double s = aa ? (double)scale : 1.0;
    const int64_t start = (int64_t)floor((a->mode == 2 ? -2.0 : -1.0) / s) + 1, n = 2 - 2 * start;
    *idx = NULL, *w = NULL;
    if ((double)len_out * (double)n > 1e9) return 0; /* an absurd downscale: refused by the caller */
    *idx = malloc((size_t)(len_out * n) * sizeof **idx);
    *w = malloc((size_t)(len_out * n) * sizeof **w);
    if (!*idx || !*w) return 0;
    for (int64_t o = 0; o < len_out; o++) {
        const float x = resize_src((int)a->ints[0], by_rounded_len(a), o, len_out, len_in, scale);
        const int64_t base = (int64_t)ceilf(x) - 1;
        const double r = (double)x - (double)base;
        double sum = 0;
        for (int64_t j = 0; j < n; j++) {
            const double d = fabs(((double)(start + j) - r) * s);
            double wt = a->mode == 2 ? cubic_w(d, (double)a->value) : (d < 1.0 ? 1.0 - d : 0.0);
            int64_t ix = base + start + j;
            if (excl && (ix < 0 || ix >= len_in)) wt = 0;
            ix = ix < 0 ? 0 : ix >= len_in ? len_in - 1 : ix;
            (*idx)[o * n + j] = ix;
            (*w)[o * n + j] = wt;
            sum += wt;
        }
        if ((aa || excl) && sum != 0)
            for (int64_t j = 0; j < n; j++) (*w)[o * n + j] /= sum;
    }
    return n;
}

static so_status resize_general(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const so_attr *a = n->attr;
    const so_shape *xs = &in[0].shape, *ys = &out[0].shape;
    const int64_t H = xs->dim[2], W = xs->dim[3], Ho = ys->dim[2], Wo = ys->dim[3], planes = xs->dim[0] * xs->dim[1];
    int64_t *iy = NULL, *ix = NULL;
    double *wy = NULL, *wx = NULL;
    const int64_t ny = resize_axis_taps(a, Ho, H, a->alpha, &iy, &wy), nx = resize_axis_taps(a, Wo, W, a->beta, &ix, &wx);
    double *row = malloc((size_t)(W > 0 ? W : 1) * sizeof *row);
    so_status st = SO_OK;
    if (!ny || !nx || !row) st = ref_fail(g, n, "out of memory (or a downscale needing over 1e9 filter taps)");
    for (int64_t p = 0; st == SO_OK && p < planes; p++)
        for (int64_t oy = 0; oy < Ho; oy++) {
            for (int64_t c = 0; c < W; c++) { /* the vertical taps first: one row */
                double acc = 0;
                for (int64_t j = 0; j < ny; j++) acc += wy[oy * ny + j] * ((const float *)in[0].data)[(p * H + iy[oy * ny + j]) * W + c];
                row[c] = acc;
            }
            for (int64_t ox = 0; ox < Wo; ox++) {
                double acc = 0;
                for (int64_t j = 0; j < nx; j++) acc += wx[ox * nx + j] * row[ix[ox * nx + j]];
                ((float *)out[0].data)[(p * Ho + oy) * Wo + ox] = (float)acc;
            }
        }
    free(iy);
    free(ix);
    free(wy);
    free(wx);
    free(row);
    return st;
}

/* tf_crop_and_resize (nearest or linear): source coordinate start * (in - 1) + x * (end - start) * (in - 1) / (out - 1)
   (out = 1: the region's centre), in float as ONNX Runtime; outside [0, in - 1] on either axis the output is the
   extrapolation value. */
static void crop_tap(const so_attr *a, int axis, int64_t x, int64_t len_out, int64_t len_in, int64_t *i0, int64_t *i1, double *w, int *outside)
{
    const float st = so_bits_to_f32(a->ints[7 + axis]), en = so_bits_to_f32(a->ints[9 + axis]), L = (float)(len_in - 1);
    float v = len_out > 1 ? st * L + (float)x * (en - st) * L / (float)(len_out - 1) : 0.5f * (st + en) * L;
    *outside = v < 0.0f || v > L;
    v = v < 0.0f ? 0.0f : v > L ? L : v;
    if (a->mode == 0) { /* nearest_mode rounding, as so_ref_resize_taps */
        float f = floorf(v), r = a->ints[1] == 0 ? (v - f == 0.5f ? f : roundf(v)) : a->ints[1] == 1 ? roundf(v) : a->ints[1] == 2 ? f : ceilf(v);
        *i0 = *i1 = r > L ? len_in - 1 : (int64_t)r;
        *w = 0;
        return;
    }
    *i0 = (int64_t)v;
    *i1 = *i0 + 1 < len_in ? *i0 + 1 : len_in - 1;
    *w = v - (float)*i0;
}

static so_status resize_crop(const so_node *n, const so_tensor *in, so_tensor *out)
{
    const so_attr *a = n->attr;
    const so_shape *xs = &in[0].shape, *ys = &out[0].shape;
    const int64_t H = xs->dim[2], W = xs->dim[3], Ho = ys->dim[2], Wo = ys->dim[3], planes = xs->dim[0] * xs->dim[1];
    const float ext = so_bits_to_f32(a->ints[11]), *X = in[0].data;
    float *Y = out[0].data;
    for (int64_t p = 0; p < planes; p++)
        for (int64_t oy = 0; oy < Ho; oy++) {
            int64_t y0, y1;
            double wy;
            int oy_out;
            crop_tap(a, 0, oy, Ho, H, &y0, &y1, &wy, &oy_out);
            const float *r0 = X + (p * H + y0) * W, *r1 = X + (p * H + y1) * W;
            for (int64_t ox = 0; ox < Wo; ox++) {
                int64_t x0, x1;
                double wx;
                int ox_out;
                crop_tap(a, 1, ox, Wo, W, &x0, &x1, &wx, &ox_out);
                double top = r0[x0] + wx * ((double)r0[x1] - r0[x0]), bot = r1[x0] + wx * ((double)r1[x1] - r1[x0]);
                Y[(p * Ho + oy) * Wo + ox] = oy_out || ox_out ? ext : a->mode == 0 ? r0[x0] : (float)(top + wy * (bot - top));
            }
        }
    return SO_OK;
}

so_status so_ref_resize(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_attr *a = n->attr;
    if (a->ints[0] == SO_RESIZE_TF_CROP_AND_RESIZE) return resize_crop(n, in, out);
    if (!so_ref_resize_two_tap(a)) return resize_general(g, n, in, out);
    const so_shape *xs = &in[0].shape, *ys = &out[0].shape;
    const int64_t H = xs->dim[2], W = xs->dim[3], Ho = ys->dim[2], Wo = ys->dim[3], planes = xs->dim[0] * xs->dim[1];
    const float *X = in[0].data;
    float *Y = out[0].data;
    for (int64_t p = 0; p < planes; p++)
        for (int64_t oy = 0; oy < Ho; oy++) {
            int64_t y0, y1;
            double wy;
            so_ref_resize_taps(a, oy, Ho, H, a->alpha, &y0, &y1, &wy);
            const float *r0 = X + (p * H + y0) * W, *r1 = X + (p * H + y1) * W;
            for (int64_t ox = 0; ox < Wo; ox++) {
                int64_t x0, x1;
                double wx;
                so_ref_resize_taps(a, ox, Wo, W, a->beta, &x0, &x1, &wx);
                if (a->mode == 0) {
                    Y[(p * Ho + oy) * Wo + ox] = r0[x0];
                    continue;
                }
                double top = r0[x0] + wx * ((double)r0[x1] - r0[x0]), bot = r1[x0] + wx * ((double)r1[x1] - r1[x0]);
                Y[(p * Ho + oy) * Wo + ox] = (float)(top + wy * (bot - top));
            }
        }
    return SO_OK;
}

so_status so_ref_pad(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_attr *a = n->attr;
    const so_shape *s = &in[0].shape, *os = &out[0].shape;
    const int r = s->rank;
    int64_t st[SO_MAX_RANK];
    contiguous_strides(s, st);
    const int64_t total = numel(os);
    if (r == 0) {
        memcpy(out[0].data, in[0].data, esz(s));
        return SO_OK;
    }
    BY_ELEM(esz(s), {
        const E *X = in[0].data;
        E *Y = out[0].data;
        E padv;
        if (sizeof(E) == 8) {
            int64_t v = isfinite(a->value) && fabsf(a->value) < 9.2e18f ? (int64_t)a->value : 0;
            memcpy(&padv, &v, sizeof padv);
        } else {
            float v = a->value;
            memcpy(&padv, &v, sizeof padv);
        }
        int64_t idx[SO_MAX_RANK] = {0};
        for (int64_t i = 0; i < total; i++) {
            int64_t off = 0;
            int inside = 1;
            for (int d = 0; d < r; d++) {
                int64_t dim = s->dim[d], j = idx[d] - a->ints[d];
                if (j < 0 || j >= dim) {
                    if (a->mode == 0) { inside = 0; break; }
                    if (a->mode == 2) j = j < 0 ? 0 : dim - 1;
                    else if (a->mode == 3) j = (j % dim + dim) % dim; /* wrap */
                    else
                        while (j < 0 || j >= dim) j = j < 0 ? -j : 2 * (dim - 1) - j;
                }
                off += j * st[d];
            }
            Y[i] = inside ? X[off] : padv;
            for (int d = r - 1; d >= 0; d--) {
                if (++idx[d] < os->dim[d]) break;
                idx[d] = 0;
            }
        }
    });
    return SO_OK;
}

/* Concat (gather 1: the parts into whole) and Split (0: whole into the parts) along attr.axis: for each
   outer index, each part's dim[axis] x inner elements in turn. */
static so_status axis_chunks(const so_node *n, const so_shape *ws, char *whole, const so_tensor *parts, int n_parts, int gather)
{
    const int axis = n->attr->axis;
    const size_t es = esz(ws);
    const int64_t outer = prod(ws, 0, axis), inner = prod(ws, axis + 1, ws->rank);
    for (int64_t o = 0; o < outer; o++)
        for (int k = 0; k < n_parts; k++) {
            size_t chunk = (size_t)(parts[k].shape.dim[axis] * inner) * es;
            char *part = (char *)parts[k].data + (size_t)o * chunk;
            if (gather) memcpy(whole, part, chunk);
            else memcpy(part, whole, chunk);
            whole += chunk;
        }
    return SO_OK;
}

REF_VIA(concat, axis_chunks(n, &out[0].shape, out[0].data, in, n->n_in, 1))
REF_VIA(split, axis_chunks(n, &in[0].shape, in[0].data, out, n->n_out, 0))

static so_status view_copy(const so_tensor *in, so_tensor *out)
{
    if (out[0].data != in[0].data) memcpy(out[0].data, in[0].data, (size_t)numel(&in[0].shape) * esz(&in[0].shape));
    return SO_OK;
}

REF_VIA(flatten, view_copy(in, out))
REF_VIA(reshape, view_copy(in, out))
REF_VIA(squeeze, view_copy(in, out))
REF_VIA(unsqueeze, view_copy(in, out))
REF_VIA(identity, view_copy(in, out))

/* out[i] = in[sum idx_d * st[d]] over the output's index space (strides may be 0 or permuted). */
static void strided_copy(const void *in, void *out, const so_shape *os, const int64_t *st, size_t es)
{
    const int r = os->rank;
    const int64_t total = numel(os);
    if (r == 0) {
        memcpy(out, in, es);
        return;
    }
    BY_ELEM(es, {
        const E *X = in;
        E *Y = out;
        const int64_t last = os->dim[r - 1], ls = st[r - 1], outer = total / last;
        int64_t idx[SO_MAX_RANK] = {0}, off = 0;
        for (int64_t o = 0; o < outer; o++) {
            for (int64_t j = 0; j < last; j++) Y[o * last + j] = X[off + j * ls];
            for (int k = r - 2; k >= 0; k--) {
                idx[k]++;
                off += st[k];
                if (idx[k] < os->dim[k]) break;
                off -= st[k] * os->dim[k];
                idx[k] = 0;
            }
        }
    });
}

so_status so_ref_transpose(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_shape *s = &in[0].shape;
    int64_t st[SO_MAX_RANK], pst[SO_MAX_RANK];
    contiguous_strides(s, st);
    for (int k = 0; k < s->rank; k++) pst[k] = n->attr->n_ints ? st[n->attr->ints[k]] : st[s->rank - 1 - k];
    strided_copy(in[0].data, out[0].data, &out[0].shape, pst, esz(s));
    return SO_OK;
}

so_status so_ref_expand(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    (void)n;
    int64_t st[SO_MAX_RANK];
    bstrides(&in[0].shape, out[0].shape.rank, st);
    strided_copy(in[0].data, out[0].data, &out[0].shape, st, esz(&in[0].shape));
    return SO_OK;
}

so_status so_ref_gather(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const so_shape *s = &in[0].shape;
    const int axis = n->attr->axis;
    const size_t es = esz(s);
    const int64_t outer = prod(s, 0, axis), D = s->dim[axis], inner = prod(s, axis + 1, s->rank);
    const int64_t ni = numel(&in[1].shape);
    const int64_t *I = in[1].data;
    const char *X = in[0].data;
    char *Y = out[0].data;
    for (int64_t j = 0; j < ni; j++)
        if (I[j] < -D || I[j] >= D) return ref_fail(g, n, "index %lld out of range [-%lld, %lld)", (long long)I[j], (long long)D, (long long)D);
    const size_t row = (size_t)inner * es;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < ni; j++) {
            int64_t ix = I[j] < 0 ? I[j] + D : I[j];
            memcpy(Y, X + ((size_t)(o * D + ix)) * row, row);
            Y += row;
        }
    return SO_OK;
}

so_status so_ref_slice(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_attr *a = n->attr;
    const so_shape *s = &in[0].shape;
    int64_t st[SO_MAX_RANK] = {0}, sst[SO_MAX_RANK], start[SO_MAX_RANK] = {0}; /* st zeroed past the rank: the memcpy below reads it all */
    contiguous_strides(s, st);
    memcpy(sst, st, sizeof sst);
    for (int q = 0; q + 3 < a->n_ints; q += 4) {
        int ax = (int)a->ints[q];
        start[ax] = a->ints[q + 1];
        sst[ax] = st[ax] * a->ints[q + 3];
    }
    int64_t base = 0;
    for (int d = 0; d < s->rank; d++) base += start[d] * st[d];
    strided_copy((const char *)in[0].data + (size_t)base * esz(s), out[0].data, &out[0].shape, sst, esz(s));
    return SO_OK;
}

/* Trilu over the last two dims: keeps j - i >= k (upper) or j - i <= k (lower); any element type. */
so_status so_ref_trilu(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_shape *s = &in[0].shape;
    const int64_t R = s->dim[s->rank - 2], C = s->dim[s->rank - 1], mats = prod(s, 0, s->rank - 2), k = n->attr->ints[0];
    const size_t es = s->dtype == SO_I64 ? 8 : 4;
    const unsigned char *X = in[0].data;
    unsigned char *Y = out[0].data;
    for (int64_t m = 0; m < mats; m++)
        for (int64_t i = 0; i < R; i++)
            for (int64_t j = 0; j < C; j++) {
                const int64_t off = (m * R + i) * C + j;
                const int keep = n->attr->mode ? j - i >= k : j - i <= k;
                if (keep) memcpy(Y + off * es, X + off * es, es);
                else memset(Y + off * es, 0, es);
            }
    return SO_OK;
}

/* GatherElements: out[i...] = data[i... with index[i...] on axis]; negative indices count from the end. */
so_status so_ref_gatherelements(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const so_shape *s = &in[0].shape, *is = &in[1].shape;
    const int axis = n->attr->axis;
    const float *X = in[0].data;
    const int64_t *I = in[1].data;
    float *Y = out[0].data;
    int64_t st[SO_MAX_RANK], idx[SO_MAX_RANK] = {0};
    contiguous_strides(s, st);
    const int64_t cnt = numel(is);
    for (int64_t e = 0; e < cnt; e++) {
        int64_t v = I[e];
        if (v < 0) v += s->dim[axis];
        if (v < 0 || v >= s->dim[axis]) return ref_fail(g, n, "index %lld out of range for axis %d of size %lld", (long long)I[e], axis, (long long)s->dim[axis]);
        int64_t off = 0;
        for (int d = 0; d < s->rank; d++) off += (d == axis ? v : idx[d]) * st[d];
        Y[e] = X[off];
        for (int d = is->rank - 1; d >= 0; d--) {
            if (++idx[d] < is->dim[d]) break;
            idx[d] = 0;
        }
    }
    return SO_OK;
}

/* DepthToSpace (DCR: channel = (by*b + bx)*C' + c; CRD: c*b*b + by*b + bx) and SpaceToDepth (DCR). */
static so_status depth_space(const so_node *n, const float *X, float *Y, const so_shape *big, int to_space)
{
    /* big: the [N, C', H*b, W*b] side; the depth side is [N, C'*b*b, H, W] */
    const int64_t b = n->attr->kernel[0], N = big->dim[0], Cs = big->dim[1], Hb = big->dim[2], Wb = big->dim[3];
    const int64_t H = Hb / b, W = Wb / b, Cd = Cs * b * b;
    for (int64_t i = 0; i < N; i++)
        for (int64_t c = 0; c < Cs; c++)
            for (int64_t y = 0; y < Hb; y++)
                for (int64_t x = 0; x < Wb; x++) {
                    const int64_t by = y % b, bx = x % b;
                    const int64_t cd = n->attr->mode ? (c * b + by) * b + bx : (by * b + bx) * Cs + c;
                    const int64_t so = ((i * Cs + c) * Hb + y) * Wb + x, dof = ((i * Cd + cd) * H + y / b) * W + x / b;
                    if (to_space) Y[so] = X[dof];
                    else Y[dof] = X[so];
                }
    return SO_OK;
}

REF_VIA(depthtospace, depth_space(n, in[0].data, out[0].data, &out[0].shape, 1))
REF_VIA(spacetodepth, depth_space(n, in[0].data, out[0].data, &in[0].shape, 0))

/* out[off] combined with update u[ui] by reduction mode (0 none, 1 add, 2 mul, 3 max, 4 min) of the
   scatter operators; wide: int64 elements (wrap-around add and mul), else float. */
static void scatter_put(void *out, int64_t off, const void *u, int64_t ui, int wide, int mode)
{
    if (wide) {
        int64_t *o = (int64_t *)out + off, v = ((const int64_t *)u)[ui];
        *o = mode == 1 ? iadd(*o, v) : mode == 2 ? imul(*o, v) : mode == 3 ? (v > *o ? v : *o) : mode == 4 ? (v < *o ? v : *o) : v;
    } else {
        float *o = (float *)out + off, v = ((const float *)u)[ui];
        *o = mode == 1 ? *o + v : mode == 2 ? *o * v : mode == 3 ? (v > *o ? v : *o) : mode == 4 ? (v < *o ? v : *o) : v;
    }
}

/* ScatterElements: a copy of data, then each update written (or combined) at its index along axis. */
so_status so_ref_scatterelements(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const so_shape *s = &in[0].shape, *is = &in[1].shape;
    const int axis = n->attr->axis, mode = n->attr->mode;
    const int64_t *I = in[1].data;
    const int64_t cnt = numel(is);
    const int wide = s->dtype == SO_I64;
    memcpy(out[0].data, in[0].data, (size_t)numel(s) * (wide ? 8 : 4));
    int64_t st[SO_MAX_RANK], idx[SO_MAX_RANK] = {0};
    contiguous_strides(s, st);
    for (int64_t e = 0; e < cnt; e++) {
        int64_t v = I[e];
        if (v < 0) v += s->dim[axis];
        if (v < 0 || v >= s->dim[axis]) return ref_fail(g, n, "index %lld out of range for axis %d of size %lld", (long long)I[e], axis, (long long)s->dim[axis]);
        int64_t off = 0;
        for (int d = 0; d < s->rank; d++) off += (d == axis ? v : idx[d]) * st[d];
        scatter_put(out[0].data, off, in[2].data, e, wide, mode);
        for (int d = is->rank - 1; d >= 0; d--) {
            if (++idx[d] < is->dim[d]) break;
            idx[d] = 0;
        }
    }
    return SO_OK;
}

/* GatherND with batch_dims (attr.axis): slices of data addressed by the last axis of indices. */
so_status so_ref_gathernd(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const so_shape *s = &in[0].shape, *is = &in[1].shape;
    const int b = n->attr->axis;
    const int64_t last = is->dim[is->rank - 1], batch = prod(s, 0, b), per_batch = prod(is, b, is->rank - 1);
    const int64_t slice = prod(s, b + (int)last, s->rank), data_batch = prod(s, b, s->rank);
    const size_t es = s->dtype == SO_I64 ? 8 : 4;
    const int64_t *I = in[1].data;
    const unsigned char *X = in[0].data;
    unsigned char *Y = out[0].data;
    for (int64_t bi = 0; bi < batch; bi++)
        for (int64_t q = 0; q < per_batch; q++) {
            const int64_t *ix = I + (bi * per_batch + q) * last;
            int64_t off = 0;
            for (int64_t k = 0; k < last; k++) {
                int64_t dimk = s->dim[b + k], v = ix[k] < 0 ? ix[k] + dimk : ix[k];
                if (v < 0 || v >= dimk) return ref_fail(g, n, "index %lld out of range for a dimension of size %lld", (long long)ix[k], (long long)dimk);
                off = off * dimk + v;
            }
            memcpy(Y + (size_t)((bi * per_batch + q) * slice) * es, X + (size_t)(bi * data_batch + off * slice) * es, (size_t)slice * es);
        }
    return SO_OK;
}

/* TopK: the k largest (mode bit 0) or smallest along axis, sorted by value (ties: lower index
   first), with their int64 indices. */
so_status so_ref_topk(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const so_shape *s = &in[0].shape;
    const int axis = n->attr->axis, largest = n->attr->mode & 1;
    const int64_t outer = prod(s, 0, axis), D = s->dim[axis], inner = prod(s, axis + 1, s->rank), K = n->attr->ints[0];
    const float *X = in[0].data;
    float *V = out[0].data;
    int64_t *I = out[1].data;
    int64_t *ord = malloc((size_t)(D ? D : 1) * sizeof *ord);
    if (!ord) return ref_fail(g, n, "out of memory");
    for (int64_t o = 0; o < outer; o++)
        for (int64_t q = 0; q < inner; q++) {
            const float *x = X + o * D * inner + q;
            for (int64_t d = 0; d < D; d++) ord[d] = d;
            for (int64_t i = 0; i < K; i++) { /* selection: K passes */
                int64_t best = i;
                for (int64_t j = i + 1; j < D; j++) {
                    const float vj = x[ord[j] * inner], vb = x[ord[best] * inner];
                    int better = largest ? vj > vb : vj < vb;
                    if (vj == vb && ord[j] < ord[best]) better = 1;
                    if (better) best = j;
                }
                const int64_t t = ord[i];
                ord[i] = ord[best];
                ord[best] = t;
                V[(o * K + i) * inner + q] = x[ord[i] * inner];
                I[(o * K + i) * inner + q] = ord[i];
            }
        }
    free(ord);
    return SO_OK;
}

/* ScatterND: a copy of data, then each update slice written (or combined) at its index tuple. */
so_status so_ref_scatternd(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const so_shape *s = &in[0].shape, *is = &in[1].shape;
    const int mode = n->attr->mode, wide = s->dtype == SO_I64;
    const int64_t k = is->dim[is->rank - 1], tuples = numel(is) / k, slice = prod(s, (int)k, s->rank);
    const int64_t *I = in[1].data;
    int64_t st[SO_MAX_RANK];
    contiguous_strides(s, st);
    memcpy(out[0].data, in[0].data, (size_t)numel(s) * (wide ? 8 : 4));
    for (int64_t t = 0; t < tuples; t++) {
        int64_t off = 0;
        for (int64_t j = 0; j < k; j++) {
            int64_t v = I[t * k + j];
            if (v < 0) v += s->dim[j];
            if (v < 0 || v >= s->dim[j]) return ref_fail(g, n, "index %lld out of range for a dimension of size %lld", (long long)I[t * k + j], (long long)s->dim[j]);
            off += v * st[j];
        }
        for (int64_t e = 0; e < slice; e++) scatter_put(out[0].data, off + e, in[2].data, t * slice + e, wide, mode);
    }
    return SO_OK;
}

/* GridSample, as PyTorch's grid_sampler_2d (which ONNX's reference follows). */
static double gs_unnormalize(double v, int64_t size, int align)
{
    return align ? (v + 1.0) / 2.0 * (double)(size - 1) : ((v + 1.0) * (double)size - 1.0) / 2.0;
}
static double gs_reflect(double v, double twice_low, double twice_high)
{
    if (twice_low == twice_high) return 0;
    const double lo = twice_low / 2, span = (twice_high - twice_low) / 2;
    v = fabs(v - lo);
    const double extra = fmod(v, span);
    return fmod(floor(v / span), 2.0) == 0 ? extra + lo : span - extra + lo;
}
/* the padding of a coordinate: border clips, reflection reflects then clips, zeros leaves it */
static double gs_pad(double v, int64_t size, int padding, int align)
{
    if (padding == 2) v = align ? gs_reflect(v, 0, 2.0 * (double)(size - 1)) : gs_reflect(v, -1, 2.0 * (double)size - 1);
    if (padding >= 1) v = v < 0 ? 0 : v > (double)(size - 1) ? (double)(size - 1) : v;
    return v;
}
/* the pixel at integral coordinates (y, x) given as doubles (NaN or far out: outside), 0 outside */
static double gs_at(const float *p, int64_t H, int64_t W, double y, double x)
{
    return y >= 0 && y < (double)H && x >= 0 && x < (double)W ? (double)p[(int64_t)y * W + (int64_t)x] : 0.0;
}

so_status so_ref_gridsample(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_shape *xs = &in[0].shape, *os = &out[0].shape;
    const int64_t N = xs->dim[0], C = xs->dim[1], H = xs->dim[2], W = xs->dim[3], Ho = os->dim[2], Wo = os->dim[3];
    const int mode = n->attr->mode, padding = (int)n->attr->ints[0], align = (int)n->attr->ints[1];
    const float *X = in[0].data, *G = in[1].data;
    float *Y = out[0].data;
    for (int64_t b = 0; b < N; b++)
        for (int64_t oy = 0; oy < Ho; oy++)
            for (int64_t ox = 0; ox < Wo; ox++) {
                const float *gp = G + ((b * Ho + oy) * Wo + ox) * 2;
                double ix = gs_unnormalize(gp[0], W, align), iy = gs_unnormalize(gp[1], H, align);
                for (int64_t c = 0; c < C; c++) {
                    const float *p = X + (b * C + c) * H * W;
                    double v;
                    if (mode == 2) { /* bicubic: the padding applies to each of the 16 taps */
                        const double fx = floor(ix), fy = floor(iy), tx = ix - fx, ty = iy - fy;
                        double wx[4] = {cubic_w(tx + 1, -0.75), cubic_w(tx, -0.75), cubic_w(1 - tx, -0.75), cubic_w(2 - tx, -0.75)};
                        double wy[4] = {cubic_w(ty + 1, -0.75), cubic_w(ty, -0.75), cubic_w(1 - ty, -0.75), cubic_w(2 - ty, -0.75)};
                        v = 0;
                        for (int j = 0; j < 4; j++)
                            for (int i = 0; i < 4; i++) {
                                double tapx = gs_pad(fx - 1 + i, W, padding, align), tapy = gs_pad(fy - 1 + j, H, padding, align);
                                v += wy[j] * wx[i] * gs_at(p, H, W, floor(tapy), floor(tapx));
                            }
                    } else {
                        const double sx = gs_pad(ix, W, padding, align), sy = gs_pad(iy, H, padding, align);
                        if (mode == 1) {
                            v = gs_at(p, H, W, nearbyint(sy), nearbyint(sx));
                        } else {
                            const double fx = floor(sx), fy = floor(sy), tx = sx - fx, ty = sy - fy;
                            v = (1 - ty) * ((1 - tx) * gs_at(p, H, W, fy, fx) + tx * gs_at(p, H, W, fy, fx + 1)) +
                                ty * ((1 - tx) * gs_at(p, H, W, fy + 1, fx) + tx * gs_at(p, H, W, fy + 1, fx + 1));
                        }
                    }
                    Y[((b * C + c) * Ho + oy) * Wo + ox] = (float)v;
                }
            }
    return SO_OK;
}

