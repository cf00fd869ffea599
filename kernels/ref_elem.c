/* ref_elem.c - reference kernels of element-wise operators: arithmetic with numpy broadcasting, unary maths, comparisons, logic, casts. */
#include "ref_priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

static so_status no_int(const so_graph *g, const so_node *n) { return ref_fail(g, n, "int64 inputs are not supported"); }

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

/* Comparisons and logic into int64 0/1: Y = EXPR(a, b) over two broadcast operands, read as int64 (when
   input 0 is: integers and booleans) or float. */
#define PRED_KERNEL(l, EXPR)                                                                                                           \
    so_status so_ref_##l(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)                                    \
    {                                                                                                                                  \
        (void)g;                                                                                                                       \
        (void)n;                                                                                                                       \
        const so_shape *o = &out[0].shape;                                                                                             \
        int64_t *Y = out[0].data;                                                                                                      \
        const int64_t cnt = numel(o);                                                                                                  \
        for (int64_t j = 0; j < cnt; j++) {                                                                                            \
            const int64_t ia = bcast_off(&in[0].shape, o->dim, o->rank, j), ib = bcast_off(&in[1].shape, o->dim, o->rank, j);        \
            if (in[0].shape.dtype == SO_I64) {                                                                                         \
                const int64_t a = ((const int64_t *)in[0].data)[ia], b = ((const int64_t *)in[1].data)[ib];                            \
                Y[j] = (EXPR);                                                                                                         \
            } else {                                                                                                                   \
                const float a = ((const float *)in[0].data)[ia], b = ((const float *)in[1].data)[ib];                                  \
                Y[j] = (EXPR);                                                                                                         \
            }                                                                                                                          \
        }                                                                                                                              \
        return SO_OK;                                                                                                                  \
    }
PRED_KERNEL(equal, a == b)
PRED_KERNEL(less, a < b)
PRED_KERNEL(greater, a > b)
PRED_KERNEL(lessorequal, a <= b)
PRED_KERNEL(greaterorequal, a >= b)

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

PRED_KERNEL(and, a != 0 && b != 0)
PRED_KERNEL(or, a != 0 || b != 0)
PRED_KERNEL(xor, (a != 0) != (b != 0))

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
