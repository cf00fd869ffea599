/* ref_indexed.c - reference kernels of the operators that read or write by index or region (ops.def; declared in ref.h): ReverseSequence, MaxPool with its indices, MaxUnpool, RoiAlign, TfIdfVectorizer (n-gram counts). */
#include "ref_priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

so_status so_ref_reversesequence(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const so_shape *s = &in[0].shape;
    const int ta = n->attr->axis, ba = n->attr->mode;
    const int64_t T = s->dim[ta], B = s->dim[ba], *L = in[1].data;
    int64_t inner = 1;
    for (int k = 2; k < s->rank; k++) inner *= s->dim[k];
    const size_t es = s->dtype == SO_I64 ? 8 : 4, row = (size_t)inner * es;
    /* element (t, b) of the two leading axes starts at (t * B + b) * inner (time first) or (b * T + t) * inner */
    for (int64_t b = 0; b < B; b++) {
        const int64_t len = L[b];
        if (len < 0 || len > T) return ref_fail(g, n, "sequence length %lld out of range [0, %lld]", (long long)len, (long long)T);
        for (int64_t t = 0; t < T; t++) {
            const int64_t src = t < len ? len - 1 - t : t;
            const int64_t o = ta == 0 ? t * B + b : b * T + t, i = ta == 0 ? src * B + b : b * T + src;
            memcpy((char *)out[0].data + (size_t)o * row, (const char *)in[0].data + (size_t)i * row, row);
        }
    }
    return SO_OK;
}

/* MaxPool (4-D) and the flat index of each maximum over N, C, H, W (storage_order 1: column-major within the
   plane, h + w * H); the first maximum wins, NaN propagates with its index. */
so_status so_ref_maxpoolidx(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_attr *a = n->attr;
    const float *X = in[0].data;
    float *Y = out[0].data;
    int64_t *I = out[1].data;
    const int64_t NC = in[0].shape.dim[0] * in[0].shape.dim[1], H = in[0].shape.dim[2], W = in[0].shape.dim[3];
    const int64_t OH = out[0].shape.dim[2], OW = out[0].shape.dim[3];
    const int64_t sh = a->stride[0] > 0 ? a->stride[0] : 1, sw = a->stride[1] > 0 ? a->stride[1] : 1;
    const int64_t dh = a->dilation[0] > 0 ? a->dilation[0] : 1, dw = a->dilation[1] > 0 ? a->dilation[1] : 1;
    for (int64_t p = 0; p < NC; p++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                float m = -INFINITY;
                int64_t at = -1;
                for (int64_t kh = 0; kh < a->kernel[0]; kh++) {
                    const int64_t ih = oh * sh - a->pad[0] + kh * dh;
                    if (ih < 0 || ih >= H) continue;
                    for (int64_t kw = 0; kw < a->kernel[1]; kw++) {
                        const int64_t iw = ow * sw - a->pad[1] + kw * dw;
                        if (iw < 0 || iw >= W) continue;
                        const float v = X[(p * H + ih) * W + iw];
                        if (at < 0 || (m == m && (v > m || v != v))) {
                            m = v;
                            at = a->mode ? ih + iw * H : ih * W + iw;
                        }
                    }
                }
                Y[(p * OH + oh) * OW + ow] = m;
                I[(p * OH + oh) * OW + ow] = (at < 0 ? 0 : at) + p * H * W;
            }
    return SO_OK;
}

/* Every input element written at its flat index into a zero output (output_shape's N, C, H, W), as ONNX Runtime and
   PyTorch do; ONNX's reference data index the pool's inverse shape instead, which differs when output_shape is larger
   (tests/onnx_conformance.py FOLLOW_ORT). An index outside the output fails. */
so_status so_ref_maxunpool(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const int64_t *xd = in[0].shape.dim, *yd = out[0].shape.dim, cnt = xd[0] * xd[1] * xd[2] * xd[3];
    const int64_t total = yd[0] * yd[1] * yd[2] * yd[3];
    const float *X = in[0].data;
    const int64_t *I = in[1].data;
    float *Y = out[0].data;
    memset(Y, 0, (size_t)total * sizeof *Y);
    for (int64_t j = 0; j < cnt; j++) {
        if (I[j] < 0 || I[j] >= total) return ref_fail(g, n, "index %lld out of range of the output (%lld elements)", (long long)I[j], (long long)total);
        Y[I[j]] = X[j];
    }
    return SO_OK;
}

/* Bilinear sample of plane P [H,W] at (y, x) as ONNX Runtime's RoiAlign: 0 beyond one pixel outside, clamped at the
   border, in float. */
/* The bilinear sample of plane P at (y, x); max: the largest of its four weighted corner terms instead of their
   sum (ONNX Runtime's and ONNX's reference max mode). */
static float roi_sample(const float *P, int64_t H, int64_t W, float y, float x, int max)
{
    if (y < -1.0f || y > (float)H || x < -1.0f || x > (float)W) return 0.0f;
    if (y <= 0) y = 0;
    if (x <= 0) x = 0;
    int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1, x1;
    if (y0 >= H - 1) y1 = y0 = H - 1, y = (float)y0;
    else y1 = y0 + 1;
    if (x0 >= W - 1) x1 = x0 = W - 1, x = (float)x0;
    else x1 = x0 + 1;
    const float ly = y - (float)y0, lx = x - (float)x0, hy = 1.0f - ly, hx = 1.0f - lx;
    const float t00 = hy * hx * P[y0 * W + x0], t01 = hy * lx * P[y0 * W + x1], t10 = ly * hx * P[y1 * W + x0], t11 = ly * lx * P[y1 * W + x1];
    if (max) return fmaxf(fmaxf(t00, t01), fmaxf(t10, t11));
    return t00 + t01 + t10 + t11;
}

/* RoiAlign: each output bin averages (ints[1] = 0) or takes the largest (ints[1] = 1, max mode; see roi_sample)
   of grid_h x grid_w bilinear samples (sampling_ratio, or ceil(roi extent / output size) when 0); half_pixel shifts the region by -0.5 pixel, output_half_pixel (opset
   10) keeps it and makes it at least 1 x 1. A batch index outside the input fails. */
so_status so_ref_roialign(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const so_attr *a = n->attr;
    const int64_t *xd = in[0].shape.dim, R = in[1].shape.dim[0], OH = a->kernel[0], OW = a->kernel[1];
    const float *X = in[0].data, *rois = in[1].data, ss = a->alpha, off = a->mode ? 0.5f : 0.0f;
    const int64_t *bi = in[2].data;
    float *Y = out[0].data;
    for (int64_t r = 0; r < R; r++) {
        if (bi[r] < 0 || bi[r] >= xd[0]) return ref_fail(g, n, "batch index %lld out of range [0, %lld)", (long long)bi[r], (long long)xd[0]);
        const float *roi = rois + 4 * r;
        const float sw = roi[0] * ss - off, sh = roi[1] * ss - off, ew = roi[2] * ss - off, eh = roi[3] * ss - off;
        float rw = ew - sw, rh = eh - sh;
        if (!a->mode) rw = rw > 1.0f ? rw : 1.0f, rh = rh > 1.0f ? rh : 1.0f;
        const float bh = rh / (float)OH, bw = rw / (float)OW;
        const int64_t gh = a->ints[0] > 0 ? a->ints[0] : (int64_t)ceilf(rh / (float)OH), gw = a->ints[0] > 0 ? a->ints[0] : (int64_t)ceilf(rw / (float)OW);
        const int64_t cnt = gh * gw > 1 ? gh * gw : 1;
        for (int64_t c = 0; c < xd[1]; c++) {
            const float *P = X + (bi[r] * xd[1] + c) * xd[2] * xd[3];
            for (int64_t ph = 0; ph < OH; ph++)
                for (int64_t pw = 0; pw < OW; pw++) {
                    double acc = 0;
                    float mx = -INFINITY;
                    for (int64_t iy = 0; iy < gh; iy++) {
                        const float y = sh + (float)ph * bh + ((float)iy + 0.5f) * bh / (float)gh;
                        for (int64_t ix = 0; ix < gw; ix++) {
                            const float x = sw + (float)pw * bw + ((float)ix + 0.5f) * bw / (float)gw;
                            const float v = roi_sample(P, xd[2], xd[3], y, x, (int)a->ints[1]);
                            acc += v;
                            mx = fmaxf(mx, v);
                        }
                    }
                    Y[((r * xd[1] + c) * OH + ph) * OW + pw] = a->ints[1] ? (gh > 0 && gw > 0 ? mx : 0.0f) : (float)(acc / (double)cnt);
                }
        }
    }
    return SO_OK;
}

/* The m (in pool order, over all levels) of the n-gram tok[0], tok[sd], ..., tok[(len-1)*sd] among the len-grams of
   the pool (level len-1: from starts[len-1] to the next start or the pool's end), or -1. Linear search; a repeated
   n-gram counts for its first occurrence. */
static int64_t tfidf_find(const int64_t *pool, int64_t P, const int64_t *starts, int64_t G, const int64_t *tok, int64_t sd, int64_t len)
{
    if (len > G) return -1;
    int64_t m0 = 0; /* n-grams before level len-1 */
    for (int64_t g = 0; g < len - 1; g++) m0 += ((g + 1 < G ? starts[g + 1] : P) - starts[g]) / (g + 1);
    const int64_t b = starts[len - 1], e = len < G ? starts[len] : P;
    for (int64_t q = b; q < e; q += len) {
        int64_t k = 0;
        while (k < len && pool[q + k] == tok[k * sd]) k++;
        if (k == len) return m0 + (q - b) / len;
    }
    return -1;
}

/* TfIdfVectorizer, as ONNX Runtime counts: per row, for each skip distance sd = 1 .. max_skip_count + 1 and each
   start position, the n-grams of lengths min..max taken every sd tokens; unigrams only at sd = 1 (the skip does not
   change them). Counts go to the n-gram's output index indexes[m]; TF gives the counts, IDF the n-gram's weight
   (weights[m]; 1 without weights) where the count is non-zero, TFIDF count * weight (ONNX Runtime's reading of
   weights: in pool order, like indexes; with a repeated output index the last n-gram's weight). */
so_status so_ref_tfidfvectorizer(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const so_attr *a = n->attr;
    const so_shape *xs = &in[0].shape;
    const int64_t N = xs->rank == 2 ? xs->dim[0] : 1, C = xs->dim[xs->rank - 1], K = a->ints[3];
    const int64_t *X = in[0].data, *pool = in[1].data, *starts = in[2].data, *idx = in[3].data;
    const int64_t P = in[1].shape.dim[0], G = in[2].shape.dim[0];
    float *Y = out[0].data, *w = NULL;
    memset(Y, 0, (size_t)(N * K) * sizeof *Y);
    if (n->n_in > 4) { /* the weight of each output index */
        if (!(w = calloc((size_t)K, sizeof *w))) return ref_fail(g, n, "out of memory");
        for (int64_t m = 0; m < in[3].shape.dim[0]; m++) w[idx[m]] = ((const float *)in[4].data)[m];
    }
    for (int64_t r = 0; r < N; r++) {
        const int64_t *row = X + r * C;
        float *y = Y + r * K;
        int64_t lo = a->ints[0];
        for (int64_t sd = 1; sd <= a->ints[2] + 1 && lo <= a->ints[1]; sd++) {
            for (int64_t i = 0; i < C; i++)
                for (int64_t len = lo; len <= a->ints[1] && i + (len - 1) * sd < C; len++) {
                    const int64_t m = tfidf_find(pool, P, starts, G, row + i, sd, len);
                    if (m >= 0) y[idx[m]] += 1.0f;
                }
            if (lo == 1) lo = 2; /* unigrams once */
        }
        for (int64_t k = 0; k < K; k++) {
            if (a->mode == 1) y[k] = y[k] > 0 ? (w ? w[k] : 1.0f) : 0.0f;
            else if (a->mode == 2 && w) y[k] *= w[k];
        }
    }
    free(w);
    return SO_OK;
}
