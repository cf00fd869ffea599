/* ref_nn.c - reference kernels of linear algebra, convolution, normalisation, pooling, reductions and softmax (the recurrent ones: ref_rnn.c). */
#include "ref_priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- linear algebra ---------------- */

so_status so_ref_conv(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_attr *a = n->attr;
    const float *x = in[0].data, *w = in[1].data, *b = n->n_in > 2 && in[2].data ? in[2].data : NULL;
    float *y = out[0].data;
    const int64_t N = in[0].shape.dim[0], C = in[0].shape.dim[1], H = in[0].shape.dim[2], W = in[0].shape.dim[3];
    const int64_t O = in[1].shape.dim[0], Cg = in[1].shape.dim[1], KH = in[1].shape.dim[2], KW = in[1].shape.dim[3];
    const int64_t OH = out[0].shape.dim[2], OW = out[0].shape.dim[3];
    const int64_t G = one_if0(a->group), Og = O / G;
    const int64_t sh = one_if0(a->stride[0]), sw = one_if0(a->stride[1]), dh = one_if0(a->dilation[0]), dw = one_if0(a->dilation[1]);
    const int64_t pt = a->pad[0], pl = a->pad[1];
    for (int64_t nn = 0; nn < N; nn++)
        for (int64_t o = 0; o < O; o++) {
            const int64_t gi = o / Og;
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double acc = b ? b[o] : 0.0;
                    for (int64_t c = 0; c < Cg; c++) {
                        const float *xc = x + ((nn * C + gi * Cg + c) * H) * W;
                        const float *wc = w + ((o * Cg + c) * KH) * KW;
                        for (int64_t kh = 0; kh < KH; kh++) {
                            int64_t ih = oh * sh - pt + kh * dh;
                            if (ih < 0 || ih >= H) continue;
                            for (int64_t kw = 0; kw < KW; kw++) {
                                int64_t iw = ow * sw - pl + kw * dw;
                                if (iw < 0 || iw >= W) continue;
                                acc += (double)xc[ih * W + iw] * wc[kh * KW + kw];
                            }
                        }
                    }
                    y[((nn * O + o) * OH + oh) * OW + ow] = (float)acc;
                }
        }
    act_out(n, &out[0]);
    return SO_OK;
}

so_status so_ref_matmul(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    so_shape a = in[0].shape, b = in[1].shape;
    if (a.rank == 1) { a.rank = 2; a.dim[1] = a.dim[0]; a.dim[0] = 1; }
    if (b.rank == 1) { b.rank = 2; b.dim[1] = 1; }
    const int64_t M = a.dim[a.rank - 2], K = a.dim[a.rank - 1], N = b.dim[b.rank - 1];
    /* batch dims */
    so_shape ba = a, bb = b;
    ba.rank -= 2;
    bb.rank -= 2;
    const int r = SO_MAX(ba.rank, bb.rank);
    int64_t bd[SO_MAX_RANK], sa[SO_MAX_RANK], sb[SO_MAX_RANK], idx[SO_MAX_RANK] = {0};
    int64_t nb = 1;
    for (int k = 0; k < r; k++) {
        int ia = k - (r - ba.rank), ib = k - (r - bb.rank);
        int64_t da = ia >= 0 ? ba.dim[ia] : 1, db = ib >= 0 ? bb.dim[ib] : 1;
        bd[k] = da > db ? da : db;
        nb *= bd[k];
    }
    bstrides(&ba, r, sa);
    bstrides(&bb, r, sb);
    const float *A = in[0].data, *B = in[1].data;
    float *Y = out[0].data;
    int64_t oa = 0, ob = 0;
    for (int64_t bi = 0; bi < nb; bi++) {
        const float *Ab = A + oa * M * K, *Bb = B + ob * K * N;
        float *Yb = Y + bi * M * N;
        for (int64_t m = 0; m < M; m++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0.0;
                for (int64_t k = 0; k < K; k++) acc += (double)Ab[m * K + k] * Bb[k * N + j];
                Yb[m * N + j] = (float)acc;
            }
        for (int k = r - 1; k >= 0; k--) {
            idx[k]++;
            oa += sa[k];
            ob += sb[k];
            if (idx[k] < bd[k]) break;
            oa -= sa[k] * bd[k];
            ob -= sb[k] * bd[k];
            idx[k] = 0;
        }
    }
    act_out(n, &out[0]);
    return SO_OK;
}

so_status so_ref_gemm(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_attr *at = n->attr;
    const float *A = in[0].data, *B = in[1].data, *C = n->n_in > 2 ? in[2].data : NULL;
    float *Y = out[0].data;
    const int64_t M = out[0].shape.dim[0], N = out[0].shape.dim[1];
    const int64_t K = at->trans_a ? in[0].shape.dim[0] : in[0].shape.dim[1];
    int64_t cm = 0, cn = 0;
    if (C) {
        const so_shape *cs = &in[2].shape;
        int64_t c0 = cs->rank == 2 ? cs->dim[0] : 1, c1 = cs->rank >= 1 ? cs->dim[cs->rank - 1] : 1;
        cm = c0 == 1 ? 0 : c1;
        cn = c1 == 1 ? 0 : 1;
    }
    for (int64_t m = 0; m < M; m++)
        for (int64_t j = 0; j < N; j++) {
            double acc = 0.0;
            for (int64_t k = 0; k < K; k++) {
                double av = at->trans_a ? A[k * M + m] : A[m * K + k];
                double bv = at->trans_b ? B[j * K + k] : B[k * N + j];
                acc += av * bv;
            }
            acc *= (double)at->alpha;
            if (C) acc += (double)at->beta * C[m * cm + j * cn];
            Y[m * N + j] = (float)acc;
        }
    act_out(n, &out[0]);
    return SO_OK;
}

/* ---------------- normalisation, pooling ---------------- */

so_status so_ref_batchnorm(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const float *X = in[0].data, *sc = in[1].data, *bi = in[2].data, *mu = in[3].data, *var = in[4].data;
    float *Y = out[0].data;
    const so_shape *s = &in[0].shape;
    const int64_t N = s->dim[0], C = s->dim[1], inner = prod(s, 2, s->rank);
    for (int64_t nn = 0; nn < N; nn++)
        for (int64_t c = 0; c < C; c++) {
            const double k = (double)sc[c] / sqrt((double)var[c] + (double)n->attr->epsilon), m = mu[c], b = bi[c];
            const float *x = X + (nn * C + c) * inner;
            float *y = Y + (nn * C + c) * inner;
            for (int64_t i = 0; i < inner; i++) y[i] = (float)(((double)x[i] - m) * k + b);
        }
    return SO_OK;
}

/* The dilated 2-D windows of MaxPool (p == 0: the maximum, NaN propagates) and LpPool (p >= 1: (sum |x|^p)^(1/p));
   both see only the window's in-bounds elements (padding adds nothing) */
static so_status dilated_pool(const so_node *n, const so_tensor *in, so_tensor *out, double pw)
{
    const so_attr *a = n->attr;
    const float *X = in[0].data;
    float *Y = out[0].data;
    const int64_t NC = in[0].shape.dim[0] * in[0].shape.dim[1], H = in[0].shape.dim[2], W = in[0].shape.dim[3];
    const int64_t OH = out[0].shape.dim[2], OW = out[0].shape.dim[3], KH = a->kernel[0], KW = a->kernel[1];
    const int64_t sh = one_if0(a->stride[0]), sw = one_if0(a->stride[1]), dh = one_if0(a->dilation[0]), dw = one_if0(a->dilation[1]);
    for (int64_t p = 0; p < NC; p++) {
        const float *x = X + p * H * W;
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                float m = -INFINITY;
                double acc = 0.0;
                for (int64_t kh = 0; kh < KH; kh++) {
                    int64_t ih = oh * sh - a->pad[0] + kh * dh;
                    if (ih < 0 || ih >= H) continue;
                    for (int64_t kw = 0; kw < KW; kw++) {
                        int64_t iw = ow * sw - a->pad[1] + kw * dw;
                        if (iw < 0 || iw >= W) continue;
                        float v = x[ih * W + iw];
                        if (pw > 0) {
                            acc += pow(fabs((double)v), pw);
                            continue;
                        }
                        if (v > m || v != v) m = v;
                        if (m != m) goto nan; /* NaN propagates */
                    }
                }
            nan:
                Y[(p * OH + oh) * OW + ow] = pw > 0 ? (float)pow(acc, 1.0 / pw) : m;
            }
    }
    return SO_OK;
}

REF_VIA(maxpool, dilated_pool(n, in, out, 0))
REF_VIA(lppool, dilated_pool(n, in, out, n->attr->mode > 0 ? n->attr->mode : 2))

so_status so_ref_avgpool(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_attr *a = n->attr;
    const float *X = in[0].data;
    float *Y = out[0].data;
    const int64_t NC = in[0].shape.dim[0] * in[0].shape.dim[1], H = in[0].shape.dim[2], W = in[0].shape.dim[3];
    const int64_t OH = out[0].shape.dim[2], OW = out[0].shape.dim[3], KH = a->kernel[0], KW = a->kernel[1];
    const int64_t sh = one_if0(a->stride[0]), sw = one_if0(a->stride[1]);
    for (int64_t p = 0; p < NC; p++) {
        const float *x = X + p * H * W;
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                /* window clipped to the padded input, then to the input (PyTorch / ONNX Runtime) */
                int64_t h0 = oh * sh - a->pad[0], w0 = ow * sw - a->pad[1];
                int64_t h1 = SO_MIN(h0 + KH, H + a->pad[2]), w1 = SO_MIN(w0 + KW, W + a->pad[3]);
                const int64_t padded = (h1 - h0) * (w1 - w0);
                h0 = SO_MAX(h0, 0);
                w0 = SO_MAX(w0, 0);
                h1 = SO_MIN(h1, H);
                w1 = SO_MIN(w1, W);
                double acc = 0.0;
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = w0; iw < w1; iw++) acc += x[ih * W + iw];
                const int64_t cnt = a->count_include_pad ? padded : (h1 - h0) * (w1 - w0);
                Y[(p * OH + oh) * OW + ow] = cnt > 0 ? (float)(acc / (double)cnt) : 0.0f;
            }
    }
    return SO_OK;
}

so_status so_ref_globalavgpool(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    (void)n;
    const so_shape *s = &in[0].shape;
    const int64_t NC = s->dim[0] * s->dim[1], inner = prod(s, 2, s->rank);
    const float *X = in[0].data;
    float *Y = out[0].data;
    for (int64_t p = 0; p < NC; p++) {
        double acc = 0.0;
        for (int64_t i = 0; i < inner; i++) acc += X[p * inner + i];
        Y[p] = (float)(acc / (double)inner);
    }
    return SO_OK;
}

/* (sum of |x|^p over the spatial dims)^(1/p) per (n, c), in double; a NaN propagates */
so_status so_ref_globallppool(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_shape *s = &in[0].shape;
    const int64_t NC = s->dim[0] * s->dim[1], inner = prod(s, 2, s->rank);
    const double pw = n->attr->mode > 0 ? n->attr->mode : 2;
    const float *X = in[0].data;
    float *Y = out[0].data;
    for (int64_t q = 0; q < NC; q++) {
        double acc = 0.0;
        for (int64_t i = 0; i < inner; i++) acc += pow(fabs((double)X[q * inner + i]), pw);
        Y[q] = (float)pow(acc, 1.0 / pw);
    }
    return SO_OK;
}

so_status so_ref_softmax(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_shape *s = &in[0].shape;
    const int axis = n->attr->axis;
    const int64_t outer = prod(s, 0, axis), D = s->dim[axis], inner = prod(s, axis + 1, s->rank);
    const float *X = in[0].data;
    float *Y = out[0].data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const float *x = X + o * D * inner + i;
            float *y = Y + o * D * inner + i;
            float m = -INFINITY;
            for (int64_t d = 0; d < D; d++)
                if (x[d * inner] > m) m = x[d * inner];
            double sum = 0.0;
            for (int64_t d = 0; d < D; d++) sum += exp((double)x[d * inner] - m);
            for (int64_t d = 0; d < D; d++) y[d * inner] = (float)(exp((double)x[d * inner] - m) / sum);
        }
    return SO_OK;
}

/* Reductions over the axes in attr.ints (all when none), accumulated in double. */
enum { RED_SUM, RED_MEAN, RED_MAX, RED_MIN, RED_PROD, RED_L1, RED_L2, RED_SUMSQ, RED_LOGSUM, RED_LOGSUMEXP };
static so_status reduce(const so_node *n, const so_tensor *in, so_tensor *out, int mode)
{
    const so_attr *a = n->attr;
    const so_shape *s = &in[0].shape;
    const float *X = in[0].data;
    float *Y = out[0].data;
    /* split dims into kept (outer odometer) and reduced (inner odometer) */
    int64_t st[SO_MAX_RANK], kd[SO_MAX_RANK], ks[SO_MAX_RANK], rd[SO_MAX_RANK], rs[SO_MAX_RANK];
    int nk = 0, nr = 0;
    contiguous_strides(s, st);
    for (int d = 0; d < s->rank; d++) {
        int red = a->n_ints == 0;
        for (int k = 0; k < a->n_ints; k++)
            if (a->ints[k] == d) red = 1;
        if (red) { rd[nr] = s->dim[d]; rs[nr++] = st[d]; }
        else { kd[nk] = s->dim[d]; ks[nk++] = st[d]; }
    }
    int64_t nout = 1, nred = 1;
    for (int k = 0; k < nk; k++) nout *= kd[k];
    for (int k = 0; k < nr; k++) nred *= rd[k];
    int64_t ki[SO_MAX_RANK] = {0}, base = 0;
    for (int64_t o = 0; o < nout; o++) {
        int64_t ri[SO_MAX_RANK] = {0}, off = 0;
        double acc = mode == RED_MAX ? -INFINITY : mode == RED_MIN ? INFINITY : mode == RED_PROD ? 1.0 : 0.0;
        for (int64_t r = 0; r < nred; r++) {
            const double v = X[base + off];
            switch (mode) {
            case RED_MAX: acc = (v != v || v > acc) ? v : acc; break;
            case RED_MIN: acc = (v != v || v < acc) ? v : acc; break;
            case RED_PROD: acc *= v; break;
            case RED_L1: acc += fabs(v); break;
            case RED_L2: case RED_SUMSQ: acc += v * v; break;
            case RED_LOGSUMEXP: acc += exp(v); break;
            default: acc += v; break;
            }
            for (int k = nr - 1; k >= 0; k--) {
                ri[k]++;
                off += rs[k];
                if (ri[k] < rd[k]) break;
                off -= rs[k] * rd[k];
                ri[k] = 0;
            }
        }
        Y[o] = (float)(mode == RED_MEAN ? acc / (double)nred : mode == RED_L2 ? sqrt(acc) : (mode == RED_LOGSUM || mode == RED_LOGSUMEXP) ? log(acc) : acc);
        for (int k = nk - 1; k >= 0; k--) {
            ki[k]++;
            base += ks[k];
            if (ki[k] < kd[k]) break;
            base -= ks[k] * kd[k];
            ki[k] = 0;
        }
    }
    return SO_OK;
}

REF_VIA(reducemean, reduce(n, in, out, RED_MEAN))
REF_VIA(reducesum, reduce(n, in, out, RED_SUM))

/* LayerNormalization (center: subtract the mean, add the bias) and RMSNormalization (neither) over axis.. */
static so_status layer_norm(const so_node *n, const so_tensor *in, so_tensor *out, int center)
{
    const so_shape *s = &in[0].shape;
    const int axis = n->attr->axis;
    const int64_t outer = prod(s, 0, axis), inner = prod(s, axis, s->rank);
    const float *X = in[0].data, *sc = in[1].data, *bi = n->n_in > 2 ? in[2].data : NULL;
    float *Y = out[0].data;
    const int nr = s->rank - axis;
    const int full_s = numel(&in[1].shape) == inner, full_b = !bi || numel(&in[2].shape) == inner;
    for (int64_t o = 0; o < outer; o++) {
        const float *x = X + o * inner;
        float *y = Y + o * inner;
        double mean = 0.0, var = 0.0;
        for (int64_t j = 0; j < inner && center; j++) mean += x[j];
        mean /= (double)inner;
        for (int64_t j = 0; j < inner; j++) var += ((double)x[j] - mean) * ((double)x[j] - mean);
        var /= (double)inner;
        const double inv = 1.0 / sqrt(var + (double)n->attr->epsilon);
        for (int64_t j = 0; j < inner; j++) {
            double scale = sc[full_s ? j : bcast_off(&in[1].shape, s->dim + axis, nr, j)];
            double bias = bi ? bi[full_b ? j : bcast_off(&in[2].shape, s->dim + axis, nr, j)] : 0.0;
            y[j] = (float)(((double)x[j] - mean) * inv * scale + bias);
        }
    }
    return SO_OK;
}

REF_VIA(layernorm, layer_norm(n, in, out, 1))
REF_VIA(rmsnorm, layer_norm(n, in, out, 0))

REF_VIA(reducemax, reduce(n, in, out, RED_MAX))
REF_VIA(reducemin, reduce(n, in, out, RED_MIN))
REF_VIA(reduceprod, reduce(n, in, out, RED_PROD))
REF_VIA(reducel1, reduce(n, in, out, RED_L1))
REF_VIA(reducel2, reduce(n, in, out, RED_L2))
REF_VIA(reducesumsquare, reduce(n, in, out, RED_SUMSQ))
REF_VIA(reducelogsum, reduce(n, in, out, RED_LOGSUM))
REF_VIA(reducelogsumexp, reduce(n, in, out, RED_LOGSUMEXP))

/* LogSoftmax (log of Softmax, computed as x - max - log(sum(exp(x - max)))) and Hardmax (1 at the
   first maximum) along attr.axis */
static so_status softmax_like(const so_node *n, const so_tensor *in, so_tensor *out, int hard)
{
    const so_shape *s = &in[0].shape;
    const int axis = n->attr->axis;
    const int64_t outer = prod(s, 0, axis), D = s->dim[axis], inner = prod(s, axis + 1, s->rank);
    const float *X = in[0].data;
    float *Y = out[0].data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const float *x = X + o * D * inner + i;
            float *y = Y + o * D * inner + i;
            float m = -INFINITY;
            int64_t am = 0;
            for (int64_t d = 0; d < D; d++)
                if (x[d * inner] > m) m = x[d * inner], am = d;
            if (hard) {
                for (int64_t d = 0; d < D; d++) y[d * inner] = d == am ? 1.0f : 0.0f;
                continue;
            }
            double sum = 0.0;
            for (int64_t d = 0; d < D; d++) sum += exp((double)x[d * inner] - m);
            const double ls = log(sum);
            for (int64_t d = 0; d < D; d++) y[d * inner] = (float)((double)x[d * inner] - m - ls);
        }
    return SO_OK;
}

REF_VIA(logsoftmax, softmax_like(n, in, out, 0))
REF_VIA(hardmax, softmax_like(n, in, out, 1))

/* ArgMax / ArgMin along attr.axis into int64; attr.mode = select_last_index. NaN counts as larger
   than everything for ArgMax and smaller for ArgMin (the first NaN wins), as numpy. */
static so_status arg_extreme(const so_node *n, const so_tensor *in, so_tensor *out, int want_min)
{
    const so_shape *s = &in[0].shape;
    const int axis = n->attr->axis, last = n->attr->mode;
    const int64_t outer = prod(s, 0, axis), D = s->dim[axis], inner = prod(s, axis + 1, s->rank);
    const float *X = in[0].data;
    int64_t *Y = out[0].data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const float *x = X + o * D * inner + i;
            int64_t best = 0;
            for (int64_t d = 1; d < D; d++) {
                const float v = x[d * inner], b = x[best * inner];
                if (b != b) break;
                int better = v != v || (want_min ? v < b : v > b) || (last && v == b);
                if (better) best = d;
            }
            Y[o * inner + i] = best;
        }
    return SO_OK;
}

REF_VIA(argmax, arg_extreme(n, in, out, 0))
REF_VIA(argmin, arg_extreme(n, in, out, 1))

/* NegativeLogLikelihoodLoss: loss[n,d] = -input[n, t, d] * w[t] (0 where t == ignore_index); mean
   divides the sum by the sum of the weights used. */
so_status so_ref_nllloss(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const so_shape *xs = &in[0].shape;
    const float *X = in[0].data, *Wt = n->n_in > 2 ? in[2].data : NULL;
    const int64_t *T = in[1].data;
    float *Y = out[0].data;
    const int64_t N = xs->dim[0], C = xs->dim[1], D = prod(xs, 2, xs->rank);
    const int has_ignore = n->attr->ints[0] != 0;
    const int64_t ignore = n->attr->ints[1];
    double sum = 0.0, wsum = 0.0;
    for (int64_t i = 0; i < N; i++)
        for (int64_t d = 0; d < D; d++) {
            const int64_t t = T[i * D + d];
            double l = 0.0, w = 0.0;
            if (!(has_ignore && t == ignore)) {
                if (t < 0 || t >= C) return ref_fail(g, n, "target %lld out of range for %lld classes", (long long)t, (long long)C);
                w = Wt ? Wt[t] : 1.0;
                l = -(double)X[(i * C + t) * D + d] * w;
            }
            if (n->attr->mode == 0) Y[i * D + d] = (float)l;
            sum += l;
            wsum += w;
        }
    if (n->attr->mode == 1) Y[0] = (float)sum;
    if (n->attr->mode == 2) Y[0] = (float)(sum / wsum);
    return SO_OK;
}

/* ConvTranspose as the scatter of each input element through its group's weights, accumulated in
   double, then the bias. */
so_status so_ref_convtranspose(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_attr *a = n->attr;
    const so_shape *xs = &in[0].shape, *ws = &in[1].shape, *ys = &out[0].shape;
    const float *X = in[0].data, *Wt = in[1].data, *B = n->n_in > 2 ? in[2].data : NULL;
    float *Y = out[0].data;
    const int64_t N = xs->dim[0], Ci = xs->dim[1], H = xs->dim[2], Wd = xs->dim[3], G = a->group;
    const int64_t Cog = ws->dim[1], KH = ws->dim[2], KW = ws->dim[3], Co = ys->dim[1], Ho = ys->dim[2], Wo = ys->dim[3], Cig = Ci / G;
    const int64_t total = numel(ys);
    double *acc = calloc((size_t)(total ? total : 1), sizeof *acc);
    if (!acc) return ref_fail(g, n, "out of memory");
    for (int64_t i = 0; i < N; i++)
        for (int64_t ci = 0; ci < Ci; ci++) {
            const int64_t gr = ci / Cig;
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < Wd; w++) {
                    const double xv = X[((i * Ci + ci) * H + h) * Wd + w];
                    for (int64_t co = 0; co < Cog; co++)
                        for (int64_t kh = 0; kh < KH; kh++) {
                            const int64_t oh = h * a->stride[0] - a->pad[0] + kh * a->dilation[0];
                            if (oh < 0 || oh >= Ho) continue;
                            for (int64_t kw = 0; kw < KW; kw++) {
                                const int64_t ow = w * a->stride[1] - a->pad[1] + kw * a->dilation[1];
                                if (ow < 0 || ow >= Wo) continue;
                                acc[((i * Co + gr * Cog + co) * Ho + oh) * Wo + ow] += xv * Wt[((ci * Cog + co) * KH + kh) * KW + kw];
                            }
                        }
                }
        }
    for (int64_t j = 0; j < total; j++) Y[j] = (float)(acc[j] + (B ? B[(j / (Ho * Wo)) % Co] : 0.0f));
    free(acc);
    return SO_OK;
}

so_status so_ref_lrn(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_attr *a = n->attr;
    const so_shape *s = &in[0].shape;
    const float *X = in[0].data;
    float *Y = out[0].data;
    const int64_t N = s->dim[0], C = s->dim[1], inner = prod(s, 2, s->rank), size = a->kernel[0];
    const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
    for (int64_t i = 0; i < N; i++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t q = 0; q < inner; q++) {
                double sq = 0.0;
                for (int64_t cc = ch - lo; cc <= ch + hi; cc++)
                    if (cc >= 0 && cc < C) {
                        const double v = X[(i * C + cc) * inner + q];
                        sq += v * v;
                    }
                const int64_t o = (i * C + ch) * inner + q;
                Y[o] = (float)(X[o] / pow((double)a->value + (double)a->alpha / (double)size * sq, (double)a->beta));
            }
    return SO_OK;
}

so_status so_ref_det(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const so_shape *s = &in[0].shape;
    const int64_t M = s->dim[s->rank - 1], mats = prod(s, 0, s->rank - 2);
    const float *X = in[0].data;
    float *Y = out[0].data;
    double *A = malloc((size_t)(M > 0 ? M * M : 1) * sizeof *A);
    if (!A) return ref_fail(g, n, "out of memory");
    for (int64_t m = 0; m < mats; m++) {
        for (int64_t i = 0; i < M * M; i++) A[i] = X[m * M * M + i];
        double det = 1.0;
        for (int64_t c = 0; c < M; c++) {
            int64_t p = c;
            for (int64_t r = c + 1; r < M; r++)
                if (fabs(A[r * M + c]) > fabs(A[p * M + c])) p = r;
            if (A[p * M + c] == 0.0) {
                det = 0.0;
                break;
            }
            if (p != c) {
                for (int64_t k = 0; k < M; k++) {
                    const double t = A[c * M + k];
                    A[c * M + k] = A[p * M + k];
                    A[p * M + k] = t;
                }
                det = -det;
            }
            det *= A[c * M + c];
            for (int64_t r = c + 1; r < M; r++) {
                const double f = A[r * M + c] / A[c * M + c];
                for (int64_t k = c; k < M; k++) A[r * M + k] -= f * A[c * M + k];
            }
        }
        Y[m] = (float)det;
    }
    free(A);
    return SO_OK;
}

