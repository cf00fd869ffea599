/* ref_indexed.c - reference kernels of the operators that move data by index (ops.def; declared in ref.h): ReverseSequence, MaxPool with its indices, MaxUnpool. */
#include "ref.h"

#include <math.h>
#include <string.h>

static so_status node_fail(const so_node *n, const char *what, long long v)
{
    return so_errorf("node '%s' (%s): %s %lld", n->name ? n->name : "?", so_ops[n->op].onnx, what, v);
}

so_status so_ref_reversesequence(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_shape *s = &in[0].shape;
    const int ta = n->attr->axis, ba = n->attr->mode;
    const int64_t T = s->dim[ta], B = s->dim[ba], *L = in[1].data;
    int64_t inner = 1;
    for (int k = 2; k < s->rank; k++) inner *= s->dim[k];
    const size_t es = s->dtype == SO_I64 ? 8 : 4, row = (size_t)inner * es;
    /* element (t, b) of the two leading axes starts at (t * B + b) * inner (time first) or (b * T + t) * inner */
    for (int64_t b = 0; b < B; b++) {
        const int64_t len = L[b];
        if (len < 0 || len > T) return node_fail(n, "sequence length out of range:", (long long)len);
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
    (void)g;
    const int64_t *xd = in[0].shape.dim, *yd = out[0].shape.dim, cnt = xd[0] * xd[1] * xd[2] * xd[3];
    const int64_t total = yd[0] * yd[1] * yd[2] * yd[3];
    const float *X = in[0].data;
    const int64_t *I = in[1].data;
    float *Y = out[0].data;
    memset(Y, 0, (size_t)total * sizeof *Y);
    for (int64_t j = 0; j < cnt; j++) {
        if (I[j] < 0 || I[j] >= total) return node_fail(n, "index out of range of the output:", (long long)I[j]);
        Y[I[j]] = X[j];
    }
    return SO_OK;
}
