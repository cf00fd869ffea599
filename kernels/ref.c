/* ref.c - reference kernels for every operator of ops.def: plain loops with double accumulators, the oracle for all other stages. */
#include "ref.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- helpers ---------------- */

static so_status kfail(const so_graph *g, const so_node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static so_status kfail(const so_graph *g, const so_node *n, const char *fmt, ...)
{
    char desc[256], msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (g && n >= g->nodes && n < g->nodes + g->n_nodes)
        so_node_desc(g, (int32_t)(n - g->nodes), desc, sizeof desc);
    else
        snprintf(desc, sizeof desc, "node '%s' (%s)", n->name ? n->name : "?", so_ops[n->op].onnx ? so_ops[n->op].onnx : so_ops[n->op].name);
    return so_errorf("%s: %s", desc, msg);
}

static size_t esz(const so_shape *s) { return s->dtype == SO_I64 ? 8 : 4; }

static int64_t numel(const so_shape *s)
{
    int64_t n = 1;
    for (int k = 0; k < s->rank; k++) n *= s->dim[k];
    return n;
}

static int one_if0(int32_t v) { return v > 0 ? v : 1; }

/* Product of dims [from, to). */
static int64_t prod(const so_shape *s, int from, int to)
{
    int64_t n = 1;
    for (int k = from; k < to; k++) n *= s->dim[k];
    return n;
}

/* Strides of s (contiguous, row-major) aligned right to rank r, 0 where s broadcasts. */
static void bstrides(const so_shape *s, int r, int64_t *st)
{
    int64_t acc = 1;
    for (int k = r - 1; k >= 0; k--) {
        int j = k - (r - s->rank);
        if (j < 0) { st[k] = 0; continue; }
        st[k] = s->dim[j] == 1 ? 0 : acc;
        acc *= s->dim[j];
    }
}

static void contiguous_strides(const so_shape *s, int64_t *st)
{
    int64_t acc = 1;
    for (int d = s->rank - 1; d >= 0; d--) {
        st[d] = acc;
        acc *= s->dim[d];
    }
}

/* Runs `BODY` with E = an unsigned integer type of the element size (4 or 8 bytes). */
#define BY_ELEM(sz, ...)                                                                                                               \
    do {                                                                                                                               \
        if ((sz) == 8) {                                                                                                               \
            typedef uint64_t E;                                                                                                        \
            __VA_ARGS__                                                                                                                \
        } else {                                                                                                                       \
            typedef uint32_t E;                                                                                                        \
            __VA_ARGS__                                                                                                                \
        }                                                                                                                              \
    } while (0)

void so_ref_act(int act, float clip_min, float clip_max, float *x, int64_t n)
{
    switch (act) {
    case SO_ACT_RELU:
        for (int64_t i = 0; i < n; i++) x[i] = x[i] < 0.0f ? 0.0f : x[i];
        break;
    case SO_ACT_SIGMOID:
        for (int64_t i = 0; i < n; i++) x[i] = (float)(1.0 / (1.0 + exp(-(double)x[i])));
        break;
    case SO_ACT_TANH:
        for (int64_t i = 0; i < n; i++) x[i] = tanhf(x[i]);
        break;
    case SO_ACT_CLIP:
        for (int64_t i = 0; i < n; i++) x[i] = x[i] < clip_min ? clip_min : x[i] > clip_max ? clip_max : x[i];
        break;
    default:
        break;
    }
}

static void act_out(const so_node *n, so_tensor *o)
{
    if (n->attr->act != SO_ACT_NONE && o->shape.dtype == SO_F32)
        so_ref_act(n->attr->act, n->attr->clip_min, n->attr->clip_max, (float *)o->data, numel(&o->shape));
}

/* ---------------- sources ---------------- */

so_status so_ref_input(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)in;
    (void)out;
    return kfail(g, n, "graph input has no kernel (its data comes from the caller)");
}

so_status so_ref_weight(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)in;
    if (!g || n->ref < 0 || n->ref >= g->model->n_weights) return kfail(g, n, "refers to a missing weight");
    const so_weight *w = &g->model->weights[n->ref];
    if (!so_shape_eq(&w->shape, &out[0].shape)) return kfail(g, n, "output shape differs from the weight's");
    if (out[0].data != w->data) memcpy(out[0].data, w->data, (size_t)numel(&w->shape) * esz(&w->shape));
    return SO_OK;
}

so_status so_ref_opaque(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)in;
    (void)out;
    const char *type = "?";
    if (g && n->ref >= 0 && n->ref < g->model->n_opaque) type = g->model->opaque[n->ref].op_type;
    if (n->name && n->name[0]) return so_errorc(SO_ERR_UNSUPPORTED, "unsupported operator '%s' at node '%s'", type, n->name);
    if (g && n >= g->nodes && n < g->nodes + g->n_nodes)
        return so_errorc(SO_ERR_UNSUPPORTED, "unsupported operator '%s' at node #%d", type, (int)(n - g->nodes));
    return so_errorc(SO_ERR_UNSUPPORTED, "unsupported operator '%s'", type);
}

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

/* ---------------- element-wise ---------------- */

/* Defines static void NAME(a, b, out shapes...) computing O = EXPR(a, b) with numpy broadcasting. */
#define DEF_BINARY(NAME, T, EXPR)                                                                                                      \
    static void NAME(const T *A, const T *B, T *O, const so_shape *sa, const so_shape *sb, const so_shape *so)                       \
    {                                                                                                                                  \
        const int64_t n = numel(so), na = numel(sa), nb = numel(sb);                                                                   \
        if (na == n && nb == n) {                                                                                                      \
            for (int64_t i = 0; i < n; i++) {                                                                                          \
                const T a = A[i], b = B[i];                                                                                            \
                O[i] = (EXPR);                                                                                                         \
            }                                                                                                                          \
            return;                                                                                                                    \
        }                                                                                                                              \
        if (na == n && nb == 1) {                                                                                                      \
            const T b = B[0];                                                                                                          \
            for (int64_t i = 0; i < n; i++) {                                                                                          \
                const T a = A[i];                                                                                                      \
                O[i] = (EXPR);                                                                                                         \
            }                                                                                                                          \
            return;                                                                                                                    \
        }                                                                                                                              \
        if (na == 1 && nb == n) {                                                                                                      \
            const T a = A[0];                                                                                                          \
            for (int64_t i = 0; i < n; i++) {                                                                                          \
                const T b = B[i];                                                                                                      \
                O[i] = (EXPR);                                                                                                         \
            }                                                                                                                          \
            return;                                                                                                                    \
        }                                                                                                                              \
        const int r = so->rank;                                                                                                        \
        int64_t sta[SO_MAX_RANK], stb[SO_MAX_RANK], idx[SO_MAX_RANK] = {0};                                                            \
        bstrides(sa, r, sta);                                                                                                          \
        bstrides(sb, r, stb);                                                                                                          \
        const int64_t last = so->dim[r - 1], la = sta[r - 1], lb = stb[r - 1], outer = n / last;                                       \
        int64_t oa = 0, ob = 0;                                                                                                        \
        for (int64_t o = 0; o < outer; o++) {                                                                                          \
            for (int64_t j = 0; j < last; j++) {                                                                                       \
                const T a = A[oa + j * la], b = B[ob + j * lb];                                                                        \
                O[o * last + j] = (EXPR);                                                                                              \
            }                                                                                                                          \
            for (int k = r - 2; k >= 0; k--) {                                                                                         \
                idx[k]++;                                                                                                              \
                oa += sta[k];                                                                                                          \
                ob += stb[k];                                                                                                          \
                if (idx[k] < so->dim[k]) break;                                                                                        \
                oa -= sta[k] * so->dim[k];                                                                                             \
                ob -= stb[k] * so->dim[k];                                                                                             \
                idx[k] = 0;                                                                                                            \
            }                                                                                                                          \
        }                                                                                                                              \
    }

static int64_t idiv(int64_t a, int64_t b) { return (b == 0 || (a == INT64_MIN && b == -1)) ? 0 : a / b; }
/* wrap-around integer arithmetic without signed-overflow UB */
static int64_t iadd(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t isub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static int64_t imul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

DEF_BINARY(add_f, float, a + b)
DEF_BINARY(sub_f, float, a - b)
DEF_BINARY(mul_f, float, a * b)
DEF_BINARY(div_f, float, a / b)
DEF_BINARY(pow_f, float, (float)pow((double)a, (double)b))
DEF_BINARY(add_i, int64_t, iadd(a, b))
DEF_BINARY(sub_i, int64_t, isub(a, b))
DEF_BINARY(mul_i, int64_t, imul(a, b))
DEF_BINARY(div_i, int64_t, idiv(a, b))

#define BINARY_KERNEL(l, FF, FI)                                                                                                       \
    so_status so_ref_##l(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)                                    \
    {                                                                                                                                  \
        (void)g;                                                                                                                       \
        if (out[0].shape.dtype == SO_I64) {                                                                                            \
            FI(in[0].data, in[1].data, out[0].data, &in[0].shape, &in[1].shape, &out[0].shape);                                        \
            return SO_OK;                                                                                                              \
        }                                                                                                                              \
        FF(in[0].data, in[1].data, out[0].data, &in[0].shape, &in[1].shape, &out[0].shape);                                            \
        act_out(n, &out[0]);                                                                                                           \
        return SO_OK;                                                                                                                  \
    }

static so_status no_int(const so_graph *g, const so_node *n) { return kfail(g, n, "int64 inputs are not supported"); }

/* integer power by squaring; a negative exponent gives 0 except for bases 1 and -1 (ONNX Runtime's) */
static int64_t ipow(int64_t a, int64_t b)
{
    if (b < 0) return a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0;
    int64_t r = 1;
    for (; b; b >>= 1, a = imul(a, a))
        if (b & 1) r = imul(r, a);
    return r;
}
DEF_BINARY(pow_i, int64_t, ipow(a, b))

BINARY_KERNEL(add, add_f, add_i)
BINARY_KERNEL(sub, sub_f, sub_i)
BINARY_KERNEL(mul, mul_f, mul_i)
BINARY_KERNEL(div, div_f, div_i)
BINARY_KERNEL(pow, pow_f, pow_i)

#define UNARY_KERNEL(l, EXPR)                                                                                                          \
    so_status so_ref_##l(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)                                    \
    {                                                                                                                                  \
        (void)g;                                                                                                                       \
        (void)n;                                                                                                                       \
        const float *X = in[0].data;                                                                                                   \
        float *Y = out[0].data;                                                                                                        \
        const int64_t cnt = numel(&out[0].shape);                                                                                      \
        for (int64_t i = 0; i < cnt; i++) {                                                                                            \
            const float x = X[i];                                                                                                      \
            Y[i] = (EXPR);                                                                                                             \
        }                                                                                                                              \
        return SO_OK;                                                                                                                  \
    }

UNARY_KERNEL(relu, x < 0.0f ? 0.0f : x)
UNARY_KERNEL(sigmoid, (float)(1.0 / (1.0 + exp(-(double)x))))
UNARY_KERNEL(tanh, tanhf(x))
UNARY_KERNEL(erf, erff(x))
UNARY_KERNEL(sqrt, sqrtf(x))
UNARY_KERNEL(exp, expf(x))
UNARY_KERNEL(log, logf(x))
UNARY_KERNEL(neg, -x)
UNARY_KERNEL(reciprocal, 1.0f / x)
UNARY_KERNEL(clip, x < n->attr->clip_min ? n->attr->clip_min : x > n->attr->clip_max ? n->attr->clip_max : x)
/* clamp01 by comparisons, not fmaxf/fminf (library calls without -ffinite-math-only: 4 ns per
   element); a NaN passes through both comparisons unchanged. */
static inline float clamp01(float t) { return t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t; }
UNARY_KERNEL(hardsigmoid, clamp01(n->attr->alpha * x + n->attr->beta))
UNARY_KERNEL(hardswish, x * clamp01(x / 6.0f + 0.5f))
UNARY_KERNEL(leakyrelu, x < 0.0f ? n->attr->alpha * x : x)
UNARY_KERNEL(elu, x < 0.0f ? n->attr->alpha * (expf(x) - 1.0f) : x)

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

so_status so_ref_maxpool(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
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
                for (int64_t kh = 0; kh < KH; kh++) {
                    int64_t ih = oh * sh - a->pad[0] + kh * dh;
                    if (ih < 0 || ih >= H) continue;
                    for (int64_t kw = 0; kw < KW; kw++) {
                        int64_t iw = ow * sw - a->pad[1] + kw * dw;
                        if (iw < 0 || iw >= W) continue;
                        float v = x[ih * W + iw];
                        if (v > m || v != v) m = v;
                        if (m != m) goto nan; /* NaN propagates */
                    }
                }
            nan:
                Y[(p * OH + oh) * OW + ow] = m;
            }
    }
    return SO_OK;
}

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

so_status so_ref_reducemean(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    return reduce(n, in, out, RED_MEAN);
}

so_status so_ref_reducesum(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    return reduce(n, in, out, RED_SUM);
}

/* Offset into a tensor of shape p (right-aligned, broadcast) for flat index j over dims `norm` (rank nr). */
static int64_t bcast_off(const so_shape *p, const int64_t *norm, int nr, int64_t j)
{
    int64_t off = 0, st = 1;
    for (int k = nr - 1; k >= 0; k--) {
        int64_t ik = j % norm[k];
        j /= norm[k];
        int pk = k - (nr - p->rank);
        if (pk < 0) break;
        if (p->dim[pk] != 1) off += ik * st;
        st *= p->dim[pk];
    }
    return off;
}

so_status so_ref_layernorm(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
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
        for (int64_t j = 0; j < inner; j++) mean += x[j];
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
    default: return (float)x / scale; /* asymmetric */
    }
}

void so_ref_resize_taps(const so_attr *a, int64_t x, int64_t len_out, int64_t len_in, float scale, int64_t *i0, int64_t *i1, double *w)
{
    float v = resize_src((int)a->ints[0], a->ints[2] != 0, x, len_out, len_in, scale);
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
        const float x = resize_src((int)a->ints[0], a->ints[2] != 0, o, len_out, len_in, scale);
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
    if (!ny || !nx || !row) st = kfail(g, n, "out of memory (or a downscale needing over 1e9 filter taps)");
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

so_status so_ref_concat(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_shape *os = &out[0].shape;
    const int axis = n->attr->axis;
    const size_t es = esz(os);
    const int64_t outer = prod(os, 0, axis), inner = prod(os, axis + 1, os->rank);
    char *Y = out[0].data;
    for (int64_t o = 0; o < outer; o++)
        for (int k = 0; k < n->n_in; k++) {
            size_t chunk = (size_t)(in[k].shape.dim[axis] * inner) * es;
            memcpy(Y, (const char *)in[k].data + (size_t)o * chunk, chunk);
            Y += chunk;
        }
    return SO_OK;
}

so_status so_ref_split(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_shape *s = &in[0].shape;
    const int axis = n->attr->axis;
    const size_t es = esz(s);
    const int64_t outer = prod(s, 0, axis), inner = prod(s, axis + 1, s->rank);
    const char *X = in[0].data;
    for (int64_t o = 0; o < outer; o++)
        for (int k = 0; k < n->n_out; k++) {
            size_t chunk = (size_t)(out[k].shape.dim[axis] * inner) * es;
            memcpy((char *)out[k].data + (size_t)o * chunk, X, chunk);
            X += chunk;
        }
    return SO_OK;
}

static so_status view_copy(const so_tensor *in, so_tensor *out)
{
    if (out[0].data != in[0].data) memcpy(out[0].data, in[0].data, (size_t)numel(&in[0].shape) * esz(&in[0].shape));
    return SO_OK;
}

so_status so_ref_flatten(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out) { (void)g; (void)n; return view_copy(in, out); }
so_status so_ref_reshape(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out) { (void)g; (void)n; return view_copy(in, out); }
so_status so_ref_squeeze(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out) { (void)g; (void)n; return view_copy(in, out); }
so_status so_ref_unsqueeze(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out) { (void)g; (void)n; return view_copy(in, out); }
so_status so_ref_identity(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out) { (void)g; (void)n; return view_copy(in, out); }

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
        if (I[j] < -D || I[j] >= D) return kfail(g, n, "index %lld out of range [-%lld, %lld)", (long long)I[j], (long long)D, (long long)D);
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

/* ---------------- recurrent ---------------- */

static double sigm(double x) { return 1.0 / (1.0 + exp(-x)); }

so_status so_ref_lstm(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const so_attr *a = n->attr;
    const int64_t T = in[0].shape.dim[0], NB = in[0].shape.dim[1], I = in[0].shape.dim[2];
    const int64_t D = a->direction == 2 ? 2 : 1, H = in[2].shape.dim[2];
#define OPT(k) (n->n_in > (k) && in[k].data ? (const void *)in[k].data : NULL)
    const float *X = in[0].data, *Wt = in[1].data, *Rt = in[2].data, *Bt = OPT(3), *H0 = OPT(5), *C0 = OPT(6), *Pt = OPT(7);
    const void *SL = OPT(4);
    const int sl_i64 = SL && in[4].shape.dtype == SO_I64;
#undef OPT
    float *Y = out[0].data, *YH = n->n_out > 1 ? out[1].data : NULL, *YC = n->n_out > 2 ? out[2].data : NULL;
    double *buf = malloc((size_t)(6 * H) * sizeof *buf);
    if (!buf) return kfail(g, n, "out of memory");
    double *gt = buf, *h = buf + 4 * H, *c = buf + 5 * H;
    memset(Y, 0, (size_t)(T * D * NB * H) * sizeof *Y);
    for (int64_t d = 0; d < D; d++) {
        const int reverse = a->direction == 1 || d == 1;
        const float *W = Wt + d * 4 * H * I, *R = Rt + d * 4 * H * H;
        const float *B = Bt ? Bt + d * 8 * H : NULL, *P = Pt ? Pt + d * 3 * H : NULL;
        for (int64_t b = 0; b < NB; b++) {
            int64_t L = T;
            if (SL) {
                float lf = sl_i64 ? 0.0f : ((const float *)SL)[b];
                L = sl_i64 ? ((const int64_t *)SL)[b] : (lf >= 0.0f && lf <= (float)T) ? (int64_t)lf : T;
            }
            if (L < 0) L = 0;
            if (L > T) L = T;
            for (int64_t j = 0; j < H; j++) {
                h[j] = H0 ? H0[(d * NB + b) * H + j] : 0.0;
                c[j] = C0 ? C0[(d * NB + b) * H + j] : 0.0;
            }
            for (int64_t s = 0; s < L; s++) {
                const int64_t t = reverse ? L - 1 - s : s;
                const float *x = X + (t * NB + b) * I;
                for (int64_t r = 0; r < 4 * H; r++) {
                    double acc = B ? (double)B[r] + (double)B[4 * H + r] : 0.0;
                    for (int64_t k = 0; k < I; k++) acc += (double)W[r * I + k] * x[k];
                    for (int64_t k = 0; k < H; k++) acc += (double)R[r * H + k] * h[k];
                    gt[r] = acc;
                }
                for (int64_t j = 0; j < H; j++) {
                    /* ONNX gate order: i, o, f, c; peepholes P: i, o, f */
                    double gi = sigm(gt[j] + (P ? P[j] * c[j] : 0.0));
                    double gf = sigm(gt[2 * H + j] + (P ? P[2 * H + j] * c[j] : 0.0));
                    double gc = tanh(gt[3 * H + j]);
                    double cn = gf * c[j] + gi * gc;
                    double go = sigm(gt[H + j] + (P ? P[H + j] * cn : 0.0));
                    c[j] = cn;
                    h[j] = go * tanh(cn);
                }
                for (int64_t j = 0; j < H; j++) Y[((t * D + d) * NB + b) * H + j] = (float)h[j];
            }
            for (int64_t j = 0; j < H; j++) {
                if (YH) YH[(d * NB + b) * H + j] = (float)h[j];
                if (YC) YC[(d * NB + b) * H + j] = (float)c[j];
            }
        }
    }
    free(buf);
    return SO_OK;
}

/* ---------------- internal ---------------- */

so_status so_ref_enlarge(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    (void)n;
    const so_shape *s = &in[0].shape, *os = &out[0].shape;
    const int64_t OI = s->dim[0] * s->dim[1], kh = s->dim[2], kw = s->dim[3], KH = os->dim[2], KW = os->dim[3];
    const int64_t oh = (KH - kh) / 2, ow = (KW - kw) / 2;
    const float *X = in[0].data;
    float *Y = out[0].data;
    memset(Y, 0, (size_t)numel(os) * sizeof *Y);
    for (int64_t p = 0; p < OI; p++)
        for (int64_t i = 0; i < kh; i++)
            for (int64_t j = 0; j < kw; j++) Y[(p * KH + i + oh) * KW + j + ow] = X[(p * kh + i) * kw + j];
    return SO_OK;
}

so_status so_ref_const_pool(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    (void)n;
    (void)in;
    const so_shape *os = &out[0].shape;
    const float v = (float)(1.0 / (double)(os->dim[2] * os->dim[3]));
    float *Y = out[0].data;
    for (int64_t i = 0, m = numel(os); i < m; i++) Y[i] = v;
    return SO_OK;
}

so_status so_ref_const_idconv(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    (void)n;
    (void)in;
    const so_shape *os = &out[0].shape;
    const int64_t C = os->dim[0], KH = os->dim[2], KW = os->dim[3];
    float *Y = out[0].data;
    memset(Y, 0, (size_t)numel(os) * sizeof *Y);
    for (int64_t c = 0; c < C; c++) Y[((c * C + c) * KH + KH / 2) * KW + KW / 2] = 1.0f;
    return SO_OK;
}

so_status so_ref_const_idmat(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    (void)n;
    (void)in;
    const int64_t N = out[0].shape.dim[0];
    float *Y = out[0].data;
    memset(Y, 0, (size_t)(N * N) * sizeof *Y);
    for (int64_t i = 0; i < N; i++) Y[i * N + i] = 1.0f;
    return SO_OK;
}

so_status so_ref_const_ones(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    (void)n;
    (void)in;
    float *Y = out[0].data;
    for (int64_t i = 0, m = numel(&out[0].shape); i < m; i++) Y[i] = 1.0f;
    return SO_OK;
}

so_status so_ref_bnfold_w(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const float *W = in[0].data, *sc = in[1].data, *var = in[2].data;
    float *Y = out[0].data;
    const so_shape *s = &in[0].shape;
    const int64_t O = s->dim[0], inner = prod(s, 1, s->rank);
    for (int64_t o = 0; o < O; o++) {
        const double k = (double)sc[o] / sqrt((double)var[o] + (double)n->attr->epsilon);
        for (int64_t i = 0; i < inner; i++) Y[o * inner + i] = (float)((double)W[o * inner + i] * k);
    }
    return SO_OK;
}

so_status so_ref_bnfold_b(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const float *sc = in[0].data, *bi = in[1].data, *mu = in[2].data, *var = in[3].data;
    const float *cb = n->n_in > 4 && n->in[4].node >= 0 ? in[4].data : NULL;
    float *Y = out[0].data;
    for (int64_t o = 0, O = in[0].shape.dim[0]; o < O; o++) {
        const double k = (double)sc[o] / sqrt((double)var[o] + (double)n->attr->epsilon);
        Y[o] = (float)((double)bi[o] + ((cb ? (double)cb[o] : 0.0) - (double)mu[o]) * k);
    }
    return SO_OK;
}

/* ---------------- blocked-channel layout (NCHWc) ---------------- */

/* x [N][C][HW] -> y [N][ceil(C/b)][HW][b], zero padding lanes; and back (padding dropped). */
static void nchwc_block(const float *x, float *y, int64_t N, int64_t C, int64_t HW, int64_t b)
{
    const int64_t Cb = (C + b - 1) / b;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < Cb * b; c++)
            for (int64_t p = 0; p < HW; p++) y[((n * Cb + c / b) * HW + p) * b + c % b] = c < C ? x[(n * C + c) * HW + p] : 0.0f;
}
static void nchwc_unblock(const float *x, float *y, int64_t N, int64_t C, int64_t HW, int64_t b)
{
    const int64_t Cb = (C + b - 1) / b;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t p = 0; p < HW; p++) y[(n * C + c) * HW + p] = x[((n * Cb + c / b) * HW + p) * b + c % b];
}

so_status so_ref_nchwc_in(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_shape *s = &in[0].shape;
    nchwc_block(in[0].data, out[0].data, s->dim[0], s->dim[1], s->dim[2] * s->dim[3], n->attr->ints[0]);
    return SO_OK;
}

so_status so_ref_nchwc_out(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_shape *s = &out[0].shape;
    nchwc_unblock(in[0].data, out[0].data, s->dim[0], s->dim[1], s->dim[2] * s->dim[3], n->attr->ints[0]);
    return SO_OK;
}

/* A blocked op as its plain kernel between an unblocking of input 0 (C channels; the pools see every lane:
   C = blocks * b) and a blocking of the output (O channels). */
static so_status nchwc_as(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out, so_kernel_fn plain, int64_t C, int64_t O)
{
    const so_shape *xs = &in[0].shape, *ys = &out[0].shape;
    const int64_t N = xs->dim[0], b = xs->dim[4], HW = xs->dim[2] * xs->dim[3], OHW = ys->dim[2] * ys->dim[3];
    so_tensor lin[SO_MAX_IN], lout = out[0];
    for (int k = 0; k < n->n_in && k < SO_MAX_IN; k++) lin[k] = in[k];
    const int64_t d0[4] = {N, C, xs->dim[2], xs->dim[3]}, d1[4] = {N, O, ys->dim[2], ys->dim[3]};
    lin[0].shape = so_shape_make(4, d0);
    lout.shape = so_shape_make(4, d1);
    lin[0].data = malloc(sizeof(float) * (size_t)(N * C * HW));
    lout.data = malloc(sizeof(float) * (size_t)(N * O * OHW));
    so_status st = SO_ERR;
    if (!lin[0].data || !lout.data) {
        kfail(g, n, "out of memory");
        goto done;
    }
    nchwc_unblock(in[0].data, lin[0].data, N, C, HW, b);
    if ((st = plain(g, n, lin, &lout)) != SO_OK) goto done;
    nchwc_block(lout.data, out[0].data, N, O, OHW, b);
done:
    free(lin[0].data);
    free(lout.data);
    return st;
}

so_status so_ref_conv_nchwc(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const int64_t C = in[1].shape.dim[1] * one_if0(n->attr->group);
    return nchwc_as(g, n, in, out, so_ref_conv, C, in[1].shape.dim[0]);
}

static so_status nchwc_pool(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out, so_kernel_fn plain)
{
    const int64_t C = in[0].shape.dim[1] * in[0].shape.dim[4];
    return nchwc_as(g, n, in, out, plain, C, C);
}
so_status so_ref_maxpool_nchwc(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out) { return nchwc_pool(g, n, in, out, so_ref_maxpool); }
so_status so_ref_avgpool_nchwc(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out) { return nchwc_pool(g, n, in, out, so_ref_avgpool); }
so_status so_ref_concat_nchwc(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const so_shape *ys = &out[0].shape;
    const int64_t N = ys->dim[0], b = ys->dim[4], HW = ys->dim[2] * ys->dim[3], Cb = ys->dim[1];
    float *y = out[0].data;
    memset(y, 0, sizeof(float) * (size_t)(N * Cb * HW * b));
    for (int64_t nn = 0, off = 0; nn < N; nn++, off = 0)
        for (int k = 0; k < n->n_in; k++) {
            const int64_t ck = n->attr->ints[k + 1], cbk = (ck + b - 1) / b;
            const float *x = in[k].data;
            for (int64_t c = 0; c < ck; c++, off++)
                for (int64_t p = 0; p < HW; p++)
                    y[((nn * Cb + off / b) * HW + p) * b + off % b] = x[((nn * cbk + c / b) * HW + p) * b + c % b];
        }
    (void)g;
    return SO_OK;
}

so_status so_ref_globalavgpool_nchwc(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    return nchwc_pool(g, n, in, out, so_ref_globalavgpool);
}

/* ---------------- tables and drivers ---------------- */

/* ---------------- operators of other exporters and of the conformance suite ---------------- */

UNARY_KERNEL(abs, fabsf(x))
UNARY_KERNEL(floor, floorf(x))
UNARY_KERNEL(ceil, ceilf(x))
UNARY_KERNEL(round, nearbyintf(x))
UNARY_KERNEL(sign, x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x)
UNARY_KERNEL(softplus, x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x)))
UNARY_KERNEL(softsign, x / (1.0f + fabsf(x)))
UNARY_KERNEL(sin, sinf(x))
UNARY_KERNEL(cos, cosf(x))
UNARY_KERNEL(tan, tanf(x))
UNARY_KERNEL(asin, asinf(x))
UNARY_KERNEL(acos, acosf(x))
UNARY_KERNEL(atan, atanf(x))
UNARY_KERNEL(sinh, sinhf(x))
UNARY_KERNEL(cosh, coshf(x))
UNARY_KERNEL(asinh, asinhf(x))
UNARY_KERNEL(acosh, acoshf(x))
UNARY_KERNEL(atanh, atanhf(x))
UNARY_KERNEL(mish, x * tanhf(x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x))))
UNARY_KERNEL(selu, x > 0.0f ? n->attr->beta * x : n->attr->beta * n->attr->alpha * (expf(x) - 1.0f))
UNARY_KERNEL(celu, x > 0.0f ? x : n->attr->alpha * (expf(x / n->attr->alpha) - 1.0f))
UNARY_KERNEL(thresholdedrelu, x > n->attr->alpha ? x : 0.0f)
UNARY_KERNEL(shrink, x < -n->attr->alpha ? x + n->attr->beta : x > n->attr->alpha ? x - n->attr->beta : 0.0f)
UNARY_KERNEL(gelu, n->attr->mode ? 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x))) : (float)(0.5 * x * (1.0 + erf(x * 0.7071067811865476))))

/* NaN from either side propagates (numpy maximum / minimum) */
DEF_BINARY(max_f, float, (a != a || a > b) ? a : b)
DEF_BINARY(min_f, float, (a != a || a < b) ? a : b)
DEF_BINARY(max_i, int64_t, a > b ? a : b)
DEF_BINARY(min_i, int64_t, a < b ? a : b)
DEF_BINARY(prelu_f, float, a < 0.0f ? b * a : a)
#define prelu_i(...) return no_int(g, n)
BINARY_KERNEL(max, max_f, max_i)
BINARY_KERNEL(min, min_f, min_i)
BINARY_KERNEL(prelu, prelu_f, prelu_i)
#undef prelu_i

so_status so_ref_reducemax(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out) { (void)g; return reduce(n, in, out, RED_MAX); }
so_status so_ref_reducemin(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out) { (void)g; return reduce(n, in, out, RED_MIN); }
so_status so_ref_reduceprod(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out) { (void)g; return reduce(n, in, out, RED_PROD); }
so_status so_ref_reducel1(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out) { (void)g; return reduce(n, in, out, RED_L1); }
so_status so_ref_reducel2(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out) { (void)g; return reduce(n, in, out, RED_L2); }
so_status so_ref_reducesumsquare(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out) { (void)g; return reduce(n, in, out, RED_SUMSQ); }
so_status so_ref_reducelogsum(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out) { (void)g; return reduce(n, in, out, RED_LOGSUM); }
so_status so_ref_reducelogsumexp(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out) { (void)g; return reduce(n, in, out, RED_LOGSUMEXP); }

/* LogSoftmax (log of Softmax, computed as x - max - log(sum(exp(x - max)))) and Hardmax (1 at the
   first maximum) along attr.axis */
static void softmax_like(const so_node *n, const so_tensor *in, so_tensor *out, int hard)
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
}

so_status so_ref_logsoftmax(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    softmax_like(n, in, out, 0);
    return SO_OK;
}

so_status so_ref_hardmax(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    softmax_like(n, in, out, 1);
    return SO_OK;
}

/* ArgMax / ArgMin along attr.axis into int64; attr.mode = select_last_index. NaN counts as larger
   than everything for ArgMax and smaller for ArgMin (the first NaN wins), as numpy. */
static void arg_extreme(const so_node *n, const so_tensor *in, so_tensor *out, int want_min)
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
}

so_status so_ref_argmax(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    arg_extreme(n, in, out, 0);
    return SO_OK;
}

so_status so_ref_argmin(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    arg_extreme(n, in, out, 1);
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
        if (v < 0 || v >= s->dim[axis]) return kfail(g, n, "index %lld out of range for axis %d of size %lld", (long long)I[e], axis, (long long)s->dim[axis]);
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
static void depth_space(const so_node *n, const float *X, float *Y, const so_shape *big, int to_space)
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
}

so_status so_ref_depthtospace(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    depth_space(n, in[0].data, out[0].data, &out[0].shape, 1);
    return SO_OK;
}

so_status so_ref_spacetodepth(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    depth_space(n, in[0].data, out[0].data, &in[0].shape, 0);
    return SO_OK;
}

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
                if (t < 0 || t >= C) return kfail(g, n, "target %lld out of range for %lld classes", (long long)t, (long long)C);
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

/* Where with numpy broadcasting of condition, X and Y (any element size). */
so_status so_ref_where(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    (void)n;
    const so_shape *o = &out[0].shape;
    const size_t es = o->dtype == SO_I64 ? 8 : 4;
    const int64_t cnt = numel(o);
    const int64_t *Cn = in[0].data;
    const unsigned char *X = in[1].data, *Yv = in[2].data;
    unsigned char *Out = out[0].data;
    for (int64_t j = 0; j < cnt; j++) {
        const int64_t c = Cn[bcast_off(&in[0].shape, o->dim, o->rank, j)];
        const unsigned char *src = c ? X + es * bcast_off(&in[1].shape, o->dim, o->rank, j) : Yv + es * bcast_off(&in[2].shape, o->dim, o->rank, j);
        memcpy(Out + es * j, src, es);
    }
    return SO_OK;
}

/* Comparisons into int64 0/1, float or int64 operands, numpy broadcasting. */
#define COMPARE_KERNEL(l, OP)                                                                                                          \
    so_status so_ref_##l(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)                                    \
    {                                                                                                                                  \
        (void)g;                                                                                                                       \
        (void)n;                                                                                                                       \
        const so_shape *o = &out[0].shape;                                                                                             \
        int64_t *Y = out[0].data;                                                                                                      \
        const int64_t cnt = numel(o);                                                                                                  \
        for (int64_t j = 0; j < cnt; j++) {                                                                                            \
            const int64_t ia = bcast_off(&in[0].shape, o->dim, o->rank, j), ib = bcast_off(&in[1].shape, o->dim, o->rank, j);        \
            if (in[0].shape.dtype == SO_I64) Y[j] = ((const int64_t *)in[0].data)[ia] OP((const int64_t *)in[1].data)[ib];           \
            else Y[j] = ((const float *)in[0].data)[ia] OP((const float *)in[1].data)[ib];                                           \
        }                                                                                                                              \
        return SO_OK;                                                                                                                  \
    }
COMPARE_KERNEL(equal, ==)
COMPARE_KERNEL(less, <)
COMPARE_KERNEL(greater, >)
COMPARE_KERNEL(lessorequal, <=)
COMPARE_KERNEL(greaterorequal, >=)

so_status so_ref_isinf(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const float *X = in[0].data;
    int64_t *Y = out[0].data;
    const int neg = n->attr->mode & 1, pos = (n->attr->mode >> 1) & 1;
    for (int64_t j = 0; j < numel(&out[0].shape); j++) Y[j] = isinf(X[j]) && (X[j] < 0 ? neg : pos);
    return SO_OK;
}

so_status so_ref_isnan(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    (void)n;
    const float *X = in[0].data;
    int64_t *Y = out[0].data;
    for (int64_t j = 0; j < numel(&out[0].shape); j++) Y[j] = X[j] != X[j];
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
    if (!acc) return kfail(g, n, "out of memory");
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
        if (v < 0 || v >= s->dim[axis]) return kfail(g, n, "index %lld out of range for axis %d of size %lld", (long long)I[e], axis, (long long)s->dim[axis]);
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
                if (v < 0 || v >= dimk) return kfail(g, n, "index %lld out of range for a dimension of size %lld", (long long)ix[k], (long long)dimk);
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
    if (!ord) return kfail(g, n, "out of memory");
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

so_status so_ref_det(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const so_shape *s = &in[0].shape;
    const int64_t M = s->dim[s->rank - 1], mats = prod(s, 0, s->rank - 2);
    const float *X = in[0].data;
    float *Y = out[0].data;
    double *A = malloc((size_t)(M > 0 ? M * M : 1) * sizeof *A);
    if (!A) return kfail(g, n, "out of memory");
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

/* ---------------- integer and boolean operators ---------------- */

so_status so_ref_not(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    (void)n;
    const int64_t *X = in[0].data;
    int64_t *Y = out[0].data;
    for (int64_t j = 0; j < numel(&out[0].shape); j++) Y[j] = !X[j];
    return SO_OK;
}

#define LOGIC_KERNEL(l, EXPR)                                                                                                          \
    so_status so_ref_##l(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)                                    \
    {                                                                                                                                  \
        (void)g;                                                                                                                       \
        (void)n;                                                                                                                       \
        const so_shape *o = &out[0].shape;                                                                                             \
        const int64_t *A = in[0].data, *B = in[1].data;                                                                                \
        int64_t *Y = out[0].data;                                                                                                      \
        for (int64_t j = 0; j < numel(o); j++) {                                                                                       \
            const int64_t p = A[bcast_off(&in[0].shape, o->dim, o->rank, j)] != 0, q = B[bcast_off(&in[1].shape, o->dim, o->rank, j)] != 0; \
            Y[j] = (EXPR);                                                                                                             \
        }                                                                                                                              \
        return SO_OK;                                                                                                                  \
    }
LOGIC_KERNEL(and, p && q)
LOGIC_KERNEL(or, p || q)
LOGIC_KERNEL(xor, p != q)

/* integer remainder: fmod 1 takes the dividend's sign (C), 0 the divisor's (Python); x % 0 = 0 */
static int64_t imod(int64_t a, int64_t b, int fm)
{
    if (b == 0 || (a == INT64_MIN && b == -1)) return 0;
    int64_t r = a % b;
    if (!fm && r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
static float fmod_py(float a, float b, int fm)
{
    float r = fmodf(a, b);
    if (!fm && r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

so_status so_ref_mod(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const so_shape *o = &out[0].shape;
    const int fm = n->attr->mode;
    for (int64_t j = 0; j < numel(o); j++) {
        const int64_t ia = bcast_off(&in[0].shape, o->dim, o->rank, j), ib = bcast_off(&in[1].shape, o->dim, o->rank, j);
        if (o->dtype == SO_I64) ((int64_t *)out[0].data)[j] = imod(((const int64_t *)in[0].data)[ia], ((const int64_t *)in[1].data)[ib], fm);
        else ((float *)out[0].data)[j] = fmod_py(((const float *)in[0].data)[ia], ((const float *)in[1].data)[ib], fm);
    }
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
            if (v < 0 || v >= s->dim[j]) return kfail(g, n, "index %lld out of range for a dimension of size %lld", (long long)I[t * k + j], (long long)s->dim[j]);
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

/* float -> integer: truncation toward zero, saturating at the int64 range, NaN -> 0 (no undefined
   conversion); then the target's width */
static int64_t f2i(float x)
{
    if (x != x) return 0;
    if (x >= 9.2233720368547758e18f) return INT64_MAX;
    if (x <= -9.2233720368547758e18f) return INT64_MIN;
    return (int64_t)x;
}

so_status so_ref_cast(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    (void)g;
    const int32_t to = n->attr->mode;
    const int64_t cnt = numel(&out[0].shape);
    if (in[0].shape.dtype == SO_F32) {
        const float *X = in[0].data;
        if (to == SO_F32) memcpy(out[0].data, X, (size_t)cnt * 4);
        else
            for (int64_t j = 0; j < cnt; j++) {
                int64_t v = to == SO_BOOL ? X[j] != 0.0f : f2i(X[j]);
                ((int64_t *)out[0].data)[j] = to == SO_I32 ? (int64_t)(int32_t)(uint32_t)(uint64_t)v : v;
            }
        return SO_OK;
    }
    const int64_t *X = in[0].data;
    for (int64_t j = 0; j < cnt; j++) {
        if (to == SO_F32) ((float *)out[0].data)[j] = (float)X[j];
        else ((int64_t *)out[0].data)[j] = to == SO_BOOL ? X[j] != 0 : to == SO_I32 ? (int64_t)(int32_t)(uint32_t)(uint64_t)X[j] : X[j];
    }
    return SO_OK;
}

const so_kernel_fn so_ref_kernels[SO_OP_COUNT] = {
#define X(e, l, ...) [SO_OP_##e] = so_ref_##l,
#include "../src/ops.def"
#undef X
};

/* Bytes of a tensor of shape s, or 0 with an error when unknown or too large. */
static so_status tensor_bytes(const so_graph *g, const so_node *n, const so_shape *s, size_t *bytes)
{
    if (s->rank < 0) return kfail(g, n, "output shape is unknown");
    if (s->dtype != SO_F32 && s->dtype != SO_I64) return kfail(g, n, "output has unsupported element type %d (float and int64 only)", (int)s->dtype);
    int64_t cnt = 1;
    for (int k = 0; k < s->rank; k++)
        if (s->dim[k] < 0 || so_i64_mul(cnt, s->dim[k], &cnt)) return kfail(g, n, "invalid output shape");
    size_t b;
    if (so_size_mul((size_t)cnt, esz(s), &b) || b > so_max_alloc_bytes)
        return kfail(g, n, "output of %lld elements exceeds the memory limit", (long long)cnt);
    *bytes = b;
    return SO_OK;
}

/* The core folds constants (ONNX import and export) through this evaluator: registered at load. */
__attribute__((constructor)) static void register_node_eval(void) { so_node_eval_register(so_ref_eval_node); }

so_status so_ref_eval_node(const so_graph *g, int32_t i, const so_tensor *in, so_tensor *out)
{
    const so_node *n = &g->nodes[i];
    so_status st = SO_OK;
    for (int k = 0; k < n->n_out; k++) out[k].data = NULL;
    if (n->op == SO_OP_INPUT || n->op == SO_OP_OPAQUE) return so_ref_kernels[n->op](g, n, in, out);
    for (int k = 0; k < n->n_out; k++) {
        size_t b;
        out[k].shape = n->out[k];
        if ((st = tensor_bytes(g, n, &n->out[k], &b)) != SO_OK) goto fail;
        out[k].data = malloc(b ? b : 1);
        if (!out[k].data) {
            st = kfail(g, n, "out of memory");
            goto fail;
        }
    }
    if ((st = so_ref_kernels[n->op](g, n, in, out)) == SO_OK) return SO_OK;
fail:
    for (int k = 0; k < n->n_out; k++) {
        free(out[k].data);
        out[k].data = NULL;
    }
    return st;
}

#define RUN_SMALL 64       /* tensors kept on the stack for small graphs */
#define RUN_ARENA (1 << 20) /* below this many activation bytes, one allocation for all */

so_status so_ref_run(const so_graph *g, const float *const *inputs, float *const *outputs)
{
    const int32_t nn = g->n_nodes;
    so_status st = SO_OK;
    so_tensor small_t[RUN_SMALL], *t = small_t;
    int32_t small_off[RUN_SMALL + 1], *off = small_off;
    int32_t small_last[RUN_SMALL], *last = small_last;
    char small_own[RUN_SMALL], *own = small_own;
    char *block = NULL;
    int32_t total = 0;
    for (int32_t i = 0; i < nn; i++) total += g->nodes[i].n_out;
    if (total > RUN_SMALL || nn > RUN_SMALL) {
        t = so_xcalloc((size_t)total + 1, sizeof *t);
        off = so_xmalloc(((size_t)nn + 1) * sizeof *off);
        last = so_xmalloc(((size_t)nn + 1) * sizeof *last);
        own = so_xcalloc((size_t)total + 1, 1);
    }
    memset(t, 0, (size_t)total * sizeof *t);
    memset(own, 0, (size_t)total);
    size_t need = 0;
    off[0] = 0;
    for (int32_t i = 0; i < nn; i++) {
        const so_node *n = &g->nodes[i];
        off[i + 1] = off[i] + n->n_out;
        last[i] = i;
        for (int k = 0; k < n->n_out; k++) {
            size_t b;
            t[off[i] + k].shape = n->out[k];
            if (n->op == SO_OP_INPUT || n->op == SO_OP_WEIGHT || n->op == SO_OP_OPAQUE) continue;
            if ((st = tensor_bytes(g, n, &n->out[k], &b)) != SO_OK) goto done;
            need += (b + 63) & ~(size_t)63;
        }
    }
    char desc[256];
    for (int32_t i = 0; i < nn; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++) {
            int32_t p = g->nodes[i].in[k].node;
            if (p >= i) {
                st = so_errorf("%s: graph is not in topological order", so_node_desc(g, i, desc, sizeof desc));
                goto done;
            }
            if (p >= 0) last[p] = i;
        }
    for (int32_t o = 0; o < g->model->n_outputs; o++) last[g->outputs[o].node] = nn;
    if (need <= RUN_ARENA) block = so_xmalloc(need ? need : 1);
    size_t used = 0;
    for (int32_t i = 0; i < nn; i++) {
        const so_node *n = &g->nodes[i];
        so_tensor *o = &t[off[i]];
        if (n->op == SO_OP_INPUT) {
            if (n->ref < 0 || n->ref >= g->model->n_inputs) {
                st = so_errorf("%s: refers to a missing graph input", so_node_desc(g, i, desc, sizeof desc));
                goto done;
            }
            o->data = (void *)inputs[n->ref];
            continue;
        }
        if (n->op == SO_OP_WEIGHT) {
            if (n->ref < 0 || n->ref >= g->model->n_weights) {
                st = so_errorf("%s: refers to a missing weight", so_node_desc(g, i, desc, sizeof desc));
                goto done;
            }
            o->data = g->model->weights[n->ref].data;
            continue;
        }
        if (n->op == SO_OP_OPAQUE) {
            st = so_ref_opaque(g, n, NULL, o);
            goto done;
        }
        so_tensor ins[SO_MAX_IN];
        for (int k = 0; k < n->n_in; k++) {
            so_edge e = n->in[k];
            if (e.node < 0) memset(&ins[k], 0, sizeof ins[k]); /* absent optional input */
            else ins[k] = t[off[e.node] + e.slot];
        }
        for (int k = 0; k < n->n_out; k++) {
            size_t b;
            tensor_bytes(g, n, &o[k].shape, &b);
            if (block) {
                o[k].data = block + used;
                used += (b + 63) & ~(size_t)63;
            } else {
                o[k].data = malloc(b ? b : 1);
                if (!o[k].data) {
                    st = kfail(g, n, "out of memory");
                    goto done;
                }
                own[off[i] + k] = 1;
            }
        }
        if ((st = so_ref_kernels[n->op](g, n, ins, o)) != SO_OK) goto done;
        if (!block)
            for (int k = 0; k < n->n_in; k++) {
                int32_t p = n->in[k].node;
                if (p >= 0 && last[p] == i)
                    for (int s = 0; s < g->nodes[p].n_out; s++)
                        if (own[off[p] + s]) {
                            free(t[off[p] + s].data);
                            t[off[p] + s].data = NULL;
                            own[off[p] + s] = 0;
                        }
            }
    }
    for (int32_t o = 0; o < g->model->n_outputs; o++) {
        const so_tensor *x = &t[off[g->outputs[o].node] + g->outputs[o].slot];
        memcpy(outputs[o], x->data, (size_t)numel(&x->shape) * esz(&x->shape));
    }
done:
    for (int32_t k = 0; k < total; k++)
        if (own[k]) free(t[k].data);
    free(block);
    if (t != small_t) {
        free(t);
        free(off);
        free(last);
        free(own);
    }
    return st;
}
