/* shape.c - shape inference for every operator of ops.def (one static function per op, table expanded from ops.def). */
#include "shape.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Everything a per-op shape function needs. in[k] is NULL for an absent optional input
   (edge node < 0, or k >= n_in). */
typedef struct ctx {
    so_graph *g;
    int32_t i;
    so_node *n;
    const so_attr *a;
    int n_in;
    const so_shape *in[SO_MAX_IN];
} ctx;

typedef so_status (*shape_fn)(ctx *c);

#define SHAPE_BUF 200
/* Shape as text for messages; the buffer lives until the end of the enclosing full expression's block. */
#define S(s) so_shape_str((s), (char[SHAPE_BUF]){0}, SHAPE_BUF)

static so_status fail(const ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static so_status fail(const ctx *c, const char *fmt, ...)
{
    char desc[256], msg[800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    so_node_desc(c->g, c->i, desc, sizeof desc);
    return so_errorf("%s: %s", desc, msg);
}

static const char *dtype_name(int32_t dt)
{
    switch (dt) {
    case SO_F32: return "float";
    case SO_I64: return "int64";
    default: return "unsupported dtype";
    }
}

static so_shape mk(int rank, int32_t dtype)
{
    so_shape s;
    memset(&s, 0, sizeof s);
    s.rank = rank;
    s.dtype = dtype;
    return s;
}

static so_status need_f32(const ctx *c, int k)
{
    if (c->in[k] && c->in[k]->dtype != SO_F32)
        return fail(c, "input %d has dtype %s, expected float", k, dtype_name(c->in[k]->dtype));
    return SO_OK;
}

static so_status need_rank(const ctx *c, int k, int rank, const char *what)
{
    if (c->in[k]->rank != rank)
        return fail(c, "%s %s must have rank %d", what, S(c->in[k]), rank);
    return SO_OK;
}

static int stride_of(int32_t s) { return s > 0 ? s : 1; }

int64_t so_window_out(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, int ceil_mode)
{
    int64_t eff, num; /* overflow (hostile dims/attributes) counts as "does not fit" */
    if (__builtin_mul_overflow(d, k - 1, &eff) || __builtin_add_overflow(eff, 1, &eff) ||
        __builtin_add_overflow(in, pb, &num) || __builtin_add_overflow(num, pe, &num) || s <= 0 || s > INT32_MAX)
        return -1;
    if (__builtin_sub_overflow(num, eff, &num)) return -1;
    if (num < 0) return -1;
    int64_t o = ceil_mode ? (num + s - 1) / s + 1 : num / s + 1;
    if (ceil_mode && (o - 1) * s >= in + pb) o--;
    return o;
}

/* ---------------- the dim algebra, concrete instance ---------------- */

static const int64_t one_i64 = 1;
static int i64_is_one(const void *cx, const void *d)
{
    (void)cx;
    return *(const int64_t *)d == 1;
}
static int i64_eq(const void *cx, const void *a, const void *b)
{
    (void)cx;
    return *(const int64_t *)a == *(const int64_t *)b;
}
static int i64_at_least(const void *cx, const void *d, int64_t k)
{
    (void)cx;
    return *(const int64_t *)d >= k;
}
static int i64_add(const void *cx, const void *a, const void *b, void *out)
{
    (void)cx;
    return !__builtin_add_overflow(*(const int64_t *)a, *(const int64_t *)b, (int64_t *)out);
}
static int i64_mul(const void *cx, const void *a, int64_t k, void *out)
{
    (void)cx;
    return !so_i64_mul(*(const int64_t *)a, k, (int64_t *)out);
}
static int i64_muld(const void *cx, const void *a, const void *b, void *out)
{
    (void)cx;
    return !so_i64_mul(*(const int64_t *)a, *(const int64_t *)b, (int64_t *)out);
}
static int i64_div(const void *cx, const void *a, int64_t k, int round_up, void *out)
{
    (void)cx;
    const int64_t v = *(const int64_t *)a;
    if (k < 1 || v < 0) return 0;
    *(int64_t *)out = v / k + (round_up && v % k);
    return 1;
}
static int i64_as_const(const void *cx, const void *d, int64_t *v)
{
    (void)cx;
    *v = *(const int64_t *)d;
    return 1;
}
static int i64_of_const(const void *cx, int64_t v, void *out)
{
    (void)cx;
    *(int64_t *)out = v;
    return 1;
}
static int i64_window(const void *cx, const void *h, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, int ceil_mode, void *out)
{
    (void)cx;
    const int64_t o = so_window_out(*(const int64_t *)h, k, s, pb, pe, d, ceil_mode);
    *(int64_t *)out = o;
    return o >= 1;
}
static void i64_print(const void *cx, const void *d, char *buf, size_t n)
{
    (void)cx;
    snprintf(buf, n, "%lld", (long long)*(const int64_t *)d);
}
const so_dim_alg so_dim_int64 = {sizeof(int64_t), &one_i64, NULL, i64_is_one, i64_eq, i64_at_least, i64_add, i64_mul, i64_muld,
                                 i64_div, i64_as_const, i64_of_const, i64_window, NULL, i64_print, 0};

int so_dim_broadcast(const so_dim_alg *A, const void *a, int ra, const void *b, int rb, void *out)
{
    const int r = SO_MAX(ra, rb);
    for (int k = 0; k < r; k++) {
        const int ia = k - (r - ra), ib = k - (r - rb);
        const char *da = ia >= 0 ? (const char *)a + (size_t)ia * A->size : NULL;
        const char *db = ib >= 0 ? (const char *)b + (size_t)ib * A->size : NULL;
        char *o = (char *)out + (size_t)k * A->size;
        if (!da || !db) {
            memcpy(o, da ? da : db, A->size);
            continue;
        }
        if (A->bcast) {
            if (!A->bcast(A->cx, da, db, o)) return -1 - k;
            continue;
        }
        const void *pick = A->is_one(A->cx, da) ? db : (A->is_one(A->cx, db) || A->eq(A->cx, da, db)) ? da : NULL;
        if (!pick) return -1 - k;
        memcpy(o, pick, A->size);
    }
    return r;
}

/* ---------------- shape rules over the algebra (shape.h so_dims_*) ---------------- */

/* dim k of s, and a dim as text for messages (the buffer lives to the end of the enclosing block) */
#define DIM(A, s, k) ((char *)(s)->dim + (size_t)(k) * (A)->size)
#define DS(A, s) so_dims_str((A), (s), (char[SHAPE_BUF]){0}, SHAPE_BUF)
#define DD(A, d) dim_str((A), (d), (char[64]){0}, 64)
/* a rule's failure: the message (so_errorf) unless the instance is quiet, where nothing is formatted (the
   arguments are not evaluated) and the thread's message is left as it was */
#define DERR(A, ...) ((A)->quiet ? SO_ERR : so_errorf(__VA_ARGS__))

static char *dim_str(const so_dim_alg *A, const void *d, char *buf, size_t n)
{
    A->print(A->cx, d, buf, n);
    return buf;
}

char *so_dims_str(const so_dim_alg *A, const so_dims *s, char *buf, size_t n)
{
    if (n == 0) return buf;
    if (s->rank < 0) {
        snprintf(buf, n, "[?]");
        return buf;
    }
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < s->rank && k < n; i++) {
        char d[64];
        A->print(A->cx, DIM(A, s, i), d, sizeof d);
        k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? "," : "", d);
    }
    if (k < n) snprintf(buf + k, n - k, "]");
    return buf;
}

static void dims_copy(const so_dim_alg *A, const so_dims *x, so_dims *o)
{
    o->rank = x->rank;
    memcpy(o->dim, x->dim, (size_t)x->rank * A->size);
}

/* s is [d] (rank 1, dim d) */
static int is_vec(const so_dim_alg *A, const so_dims *s, const void *d) { return s->rank == 1 && A->eq(A->cx, DIM(A, s, 0), d); }

so_status so_dims_same(const so_dim_alg *A, const so_dims *x, so_dims *o)
{
    dims_copy(A, x, o);
    return SO_OK;
}

so_status so_dims_bcast(const so_dim_alg *A, const so_dims *x, const so_dims *y, so_dims *o)
{
    const int r = so_dim_broadcast(A, x->dim, x->rank, y->dim, y->rank, o->dim);
    if (r < 0) return DERR(A, "cannot broadcast %s with %s", DS(A, x), DS(A, y));
    o->rank = r;
    return SO_OK;
}

so_status so_dims_softmax(const so_dim_alg *A, int axis, const so_dims *x, so_dims *o)
{
    if (axis < 0 || axis >= x->rank) return DERR(A, "axis %d out of range for input %s", axis, DS(A, x));
    dims_copy(A, x, o);
    return SO_OK;
}

so_status so_dims_globalpool(const so_dim_alg *A, const so_dims *x, so_dims *o)
{
    if (x->rank < 3) return DERR(A, "input %s must have rank >= 3 [N,C,spatial...]", DS(A, x));
    dims_copy(A, x, o);
    for (int k = 2; k < o->rank; k++) memcpy(DIM(A, o, k), A->one, A->size);
    return SO_OK;
}

so_status so_dims_batchnorm(const so_dim_alg *A, const so_dims *x, const so_dims *p, so_dims *o)
{
    static const char *const names[4] = {"scale", "B", "mean", "var"};
    if (x->rank < 2) return DERR(A, "input %s must have rank >= 2 [N,C,...]", DS(A, x));
    for (int k = 0; k < 4; k++)
        if (!is_vec(A, &p[k], DIM(A, x, 1)))
            return DERR(A, "%s %s must be [%s] for input %s", names[k], DS(A, &p[k]), DD(A, DIM(A, x, 1)), DS(A, x));
    dims_copy(A, x, o);
    return SO_OK;
}

so_status so_dims_bnfold_w(const so_dim_alg *A, const so_dims *w, const so_dims *p, so_dims *o)
{
    if (w->rank < 1) return DERR(A, "weight %s must have rank >= 1 [O,...]", DS(A, w));
    for (int k = 0; k < 2; k++)
        if (!is_vec(A, &p[k], DIM(A, w, 0)))
            return DERR(A, "%s %s must be [%s] for weight %s", k == 0 ? "scale" : "var", DS(A, &p[k]), DD(A, DIM(A, w, 0)), DS(A, w));
    dims_copy(A, w, o);
    return SO_OK;
}

so_status so_dims_bnfold_b(const so_dim_alg *A, const so_dims *const *in, int n, so_dims *o)
{
    const so_dims *s = in[0];
    for (int k = 0; k < n; k++)
        if (in[k] && (s->rank != 1 || !is_vec(A, in[k], DIM(A, s, 0))))
            return DERR(A, "input %d %s must be a vector like scale %s", k, DS(A, in[k]), DS(A, s));
    dims_copy(A, s, o);
    return SO_OK;
}

so_status so_dims_transpose(const so_dim_alg *A, const int64_t *perm, int n, const so_dims *x, so_dims *o)
{
    o->rank = x->rank;
    if (n == 0) {
        for (int k = 0; k < x->rank; k++) memcpy(DIM(A, o, k), DIM(A, x, x->rank - 1 - k), A->size);
        return SO_OK;
    }
    if (n != x->rank) return DERR(A, "perm has %d entries for input %s", n, DS(A, x));
    int seen[SO_MAX_RANK] = {0};
    for (int k = 0; k < x->rank; k++) {
        int64_t p = perm[k];
        if (p < 0 || p >= x->rank || seen[p]) return DERR(A, "perm is not a permutation of 0..%d", (int)x->rank - 1);
        seen[p] = 1;
        memcpy(DIM(A, o, k), DIM(A, x, p), A->size);
    }
    return SO_OK;
}

so_status so_dims_concat(const so_dim_alg *A, int axis, const so_dims *x, int n, so_dims *o)
{
    if (axis < 0 || axis >= x[0].rank) return DERR(A, "axis %d out of range for input %s", axis, DS(A, &x[0]));
    dims_copy(A, &x[0], o);
    for (int k = 1; k < n; k++) {
        const so_dims *y = &x[k];
        int ok = y->rank == x[0].rank;
        for (int d = 0; ok && d < x[0].rank; d++)
            if (d != axis && !A->eq(A->cx, DIM(A, &x[0], d), DIM(A, y, d))) ok = 0;
        if (!ok) return DERR(A, "input %d %s does not match input 0 %s outside axis %d", k, DS(A, y), DS(A, &x[0]), axis);
        if (!A->add(A->cx, DIM(A, o, axis), DIM(A, y, axis), DIM(A, o, axis))) return DERR(A, "concatenated axis %d overflows", axis);
    }
    return SO_OK;
}

so_status so_dims_split(const so_dim_alg *A, int axis, const so_dims *x, const so_dims *sizes, int n_out, so_dims *o)
{
    if (axis < 0 || axis >= x->rank) return DERR(A, "axis %d out of range for input %s", axis, DS(A, x));
    if (sizes->rank != n_out) return DERR(A, "has %d split sizes for %d outputs", (int)sizes->rank, n_out);
    _Alignas(16) char sum[64];
    if (A->size > sizeof sum || !A->of_const(A->cx, 0, sum)) return DERR(A, "dimension type too large");
    for (int k = 0; k < sizes->rank; k++) {
        if (!A->at_least(A->cx, DIM(A, sizes, k), 1))
            return DERR(A, "split size %s must be positive", DD(A, DIM(A, sizes, k)));
        if (!A->add(A->cx, sum, DIM(A, sizes, k), sum)) return DERR(A, "split sizes overflow");
    }
    if (!A->eq(A->cx, sum, DIM(A, x, axis)))
        return DERR(A, "split sizes sum to %s, input %s has %s on axis %d", DD(A, sum), DS(A, x), DD(A, DIM(A, x, axis)), axis);
    for (int k = 0; k < n_out; k++) {
        dims_copy(A, x, &o[k]);
        memcpy(DIM(A, &o[k], axis), DIM(A, sizes, k), A->size);
    }
    return SO_OK;
}

so_status so_dims_matmul(const so_dim_alg *A, const so_dims *x, const so_dims *y, so_dims *o)
{
    if (x->rank < 1 || y->rank < 1) return DERR(A, "operands %s and %s must have rank >= 1", DS(A, x), DS(A, y));
    _Alignas(16) char ab[2][(SO_MAX_RANK + 1) * 64];
    if (A->size > 64) return DERR(A, "dimension type too large");
    so_dims a = {x->rank, ab[0]}, b = {y->rank, ab[1]};
    memcpy(a.dim, x->dim, (size_t)x->rank * A->size);
    memcpy(b.dim, y->dim, (size_t)y->rank * A->size);
    const int drop_m = x->rank == 1, drop_n = y->rank == 1;
    if (drop_m) { /* [k] -> [1,k] */
        memcpy(DIM(A, &a, 1), DIM(A, &a, 0), A->size);
        memcpy(DIM(A, &a, 0), A->one, A->size);
        a.rank = 2;
    }
    if (drop_n) { /* [k] -> [k,1] */
        memcpy(DIM(A, &b, 1), A->one, A->size);
        b.rank = 2;
    }
    const void *K = DIM(A, &a, a.rank - 1), *K2 = DIM(A, &b, b.rank - 2);
    if (!A->eq(A->cx, K, K2)) return DERR(A, "inner dimensions differ: %s x %s (%s vs %s)", DS(A, x), DS(A, y), DD(A, K), DD(A, K2));
    const int r = so_dim_broadcast(A, a.dim, a.rank - 2, b.dim, b.rank - 2, o->dim);
    if (r < 0) return DERR(A, "batch dimensions of %s and %s do not broadcast", DS(A, x), DS(A, y));
    if (r + !drop_m + !drop_n > SO_MAX_RANK) return DERR(A, "result rank exceeds %d", SO_MAX_RANK);
    o->rank = r;
    if (!drop_m) memcpy(DIM(A, o, o->rank++), DIM(A, &a, a.rank - 2), A->size);
    if (!drop_n) memcpy(DIM(A, o, o->rank++), DIM(A, &b, b.rank - 1), A->size);
    return SO_OK;
}

/* requires d to be a multiple of k >= 1: d == floor(d / k) * k (the solver records that) */
static int multiple_of(const so_dim_alg *A, const void *d, int64_t k)
{
    _Alignas(16) char q[64], p[64];
    return A->size <= sizeof q && A->div(A->cx, d, k, 0, q) && A->mul(A->cx, q, k, p) && A->eq(A->cx, d, p);
}

/* pads and strides / dilations of a 2-D window are not negative */
static so_status window_attrs(const so_dim_alg *A, const so_attr *a)
{
    for (int k = 0; k < 4; k++)
        if (a->pad[k] < 0) return DERR(A, "negative pad %d", (int)a->pad[k]);
    if (a->stride[0] < 0 || a->stride[1] < 0 || a->dilation[0] < 0 || a->dilation[1] < 0) return DERR(A, "negative stride or dilation");
    return SO_OK;
}

so_status so_dims_pool(const so_dim_alg *A, const so_attr *a, int dilated, const so_dims *x, so_dims *o)
{
    if (x->rank != 4) return DERR(A, "input %s must have rank 4", DS(A, x));
    if (a->kernel[0] < 1 || a->kernel[1] < 1) return DERR(A, "kernel %dx%d must be positive", (int)a->kernel[0], (int)a->kernel[1]);
    if (window_attrs(A, a)) return SO_ERR;
    const int dil[2] = {dilated ? stride_of(a->dilation[0]) : 1, dilated ? stride_of(a->dilation[1]) : 1};
    if (a->pad[0] >= (int64_t)dil[0] * (a->kernel[0] - 1) + 1 || a->pad[2] >= (int64_t)dil[0] * (a->kernel[0] - 1) + 1 ||
        a->pad[1] >= (int64_t)dil[1] * (a->kernel[1] - 1) + 1 || a->pad[3] >= (int64_t)dil[1] * (a->kernel[1] - 1) + 1)
        return DERR(A, "pads %d,%d,%d,%d must be smaller than the kernel %dx%d", (int)a->pad[0], (int)a->pad[1], (int)a->pad[2],
                         (int)a->pad[3], (int)a->kernel[0], (int)a->kernel[1]);
    dims_copy(A, x, o);
    for (int s = 0; s < 2; s++)
        if (!A->window(A->cx, DIM(A, x, 2 + s), a->kernel[s], stride_of(a->stride[s]), a->pad[s], a->pad[s + 2], dil[s], a->ceil_mode, DIM(A, o, 2 + s)))
            return DERR(A, "kernel %dx%d (pads %d,%d,%d,%d) does not fit input %s", (int)a->kernel[0], (int)a->kernel[1], (int)a->pad[0],
                             (int)a->pad[1], (int)a->pad[2], (int)a->pad[3], DS(A, x));
    return SO_OK;
}

so_status so_dims_conv(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *w, const so_dims *b, so_dims *o)
{
    if (x->rank != 4) return DERR(A, "input %s must have rank 4 [N,C,H,W]", DS(A, x));
    if (w->rank != 4) return DERR(A, "weight %s must have rank 4 [O,C/group,kh,kw]", DS(A, w));
    const int64_t grp = a->group > 0 ? a->group : 1;
    const void *x1 = DIM(A, x, 1), *w0 = DIM(A, w, 0), *w1 = DIM(A, w, 1);
    _Alignas(16) char cin[64];
    int64_t v, k[2];
    if (A->size > sizeof cin) return DERR(A, "dimension type too large");
    if (grp > 1 && !multiple_of(A, w0, grp))
        return DERR(A, "weight %s has %s output channels, not divisible by group %lld", DS(A, w), DD(A, w0), (long long)grp);
    const int mul_ok = A->mul(A->cx, w1, grp, cin);
    /* the exact requirement first; then, for a grouped conv over a channel count that is no known number (rules),
       only the depthwise form [C,1,kh,kw] on C channels: the rule language cannot state group = C */
    if ((!mul_ok || !A->eq(A->cx, x1, cin)) &&
        !(grp > 1 && !A->as_const(A->cx, x1, &v) && A->as_const(A->cx, w1, &v) && v == 1 && A->eq(A->cx, x1, w0))) {
        if (grp == 1)
            return DERR(A, "weight %s needs %s input channels per group, input %s has %s", DS(A, w), DD(A, w1), DS(A, x), DD(A, x1));
        return DERR(A, "weight %s needs %s input channels per group x %lld groups = %s, input %s has %s", DS(A, w), DD(A, w1),
                         (long long)grp, mul_ok ? DD(A, cin) : "too many", DS(A, x), DD(A, x1));
    }
    if (b && !is_vec(A, b, w0)) return DERR(A, "bias %s must be [%s] for weight %s", DS(A, b), DD(A, w0), DS(A, w));
    if (window_attrs(A, a)) return SO_ERR;
    if (!A->as_const(A->cx, DIM(A, w, 2), &k[0]) || !A->as_const(A->cx, DIM(A, w, 3), &k[1])) return DERR(A, "kernel dims of weight %s are not numbers", DS(A, w));
    o->rank = 4;
    memcpy(DIM(A, o, 0), DIM(A, x, 0), A->size);
    memcpy(DIM(A, o, 1), w0, A->size);
    for (int s = 0; s < 2; s++)
        if (!A->window(A->cx, DIM(A, x, 2 + s), k[s], stride_of(a->stride[s]), a->pad[s], a->pad[s + 2], stride_of(a->dilation[s]), 0, DIM(A, o, 2 + s)))
            return DERR(A, "kernel %lldx%lld (dilation %d,%d, pads %d,%d,%d,%d) does not fit input %s", (long long)k[0], (long long)k[1],
                             stride_of(a->dilation[0]), stride_of(a->dilation[1]), (int)a->pad[0], (int)a->pad[1], (int)a->pad[2], (int)a->pad[3],
                             DS(A, x));
    return SO_OK;
}

so_status so_dims_enlarge(const so_dim_alg *A, const so_attr *a, const so_dims *w, so_dims *o)
{
    if (w->rank != 4) return DERR(A, "kernel %s must have rank 4", DS(A, w));
    int64_t k[2];
    if (!A->as_const(A->cx, DIM(A, w, 2), &k[0]) || !A->as_const(A->cx, DIM(A, w, 3), &k[1])) return DERR(A, "kernel dims of %s are not numbers", DS(A, w));
    dims_copy(A, w, o);
    for (int s = 0; s < 2; s++)
        if (a->kernel[s] < k[s] || (a->kernel[s] - k[s]) % 2 != 0 || !A->of_const(A->cx, a->kernel[s], DIM(A, o, 2 + s)))
            return DERR(A, "cannot centre kernel %s in %dx%d", DS(A, w), (int)a->kernel[0], (int)a->kernel[1]);
    return SO_OK;
}

so_status so_dims_const(const so_dim_alg *A, so_op op, const so_dims *s, so_dims *o)
{
    const int rank = op == SO_OP_CONST_IDMAT ? 2 : op == SO_OP_CONST_ONES ? -1 : 4;
    if ((rank >= 0 && s->rank != rank) || s->rank > SO_MAX_RANK) return DERR(A, "shape has %d dims, expected %d", (int)s->rank, rank);
    int64_t kh, kw;
    if (op == SO_OP_CONST_POOL && !A->eq(A->cx, DIM(A, s, 1), A->one)) return DERR(A, "shape %s must be [C,1,kh,kw]", DS(A, s));
    if (op == SO_OP_CONST_IDCONV && (!A->eq(A->cx, DIM(A, s, 0), DIM(A, s, 1)) || !A->as_const(A->cx, DIM(A, s, 2), &kh) ||
                                     !A->as_const(A->cx, DIM(A, s, 3), &kw) || kh % 2 == 0 || kw % 2 == 0))
        return DERR(A, "shape %s must be [C,C,kh,kw] with odd kh, kw", DS(A, s));
    if (op == SO_OP_CONST_IDMAT && !A->eq(A->cx, DIM(A, s, 0), DIM(A, s, 1))) return DERR(A, "shape %s must be square", DS(A, s));
    dims_copy(A, s, o);
    return SO_OK;
}

so_status so_dims_nchwc_in(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o)
{
    if (x->rank != 4) return DERR(A, "input %s must have rank 4", DS(A, x));
    if (a->n_ints != 1 || a->ints[0] < 1 || a->ints[0] > 64) return DERR(A, "needs ints=(b) with a block size b in 1..64");
    dims_copy(A, x, o);
    o->rank = 5;
    if (!A->div(A->cx, DIM(A, x, 1), a->ints[0], 1, DIM(A, o, 1)) || !A->of_const(A->cx, a->ints[0], DIM(A, o, 4)))
        return DERR(A, "channels %s are not a multiple of the block %lld", DD(A, DIM(A, x, 1)), (long long)a->ints[0]);
    return SO_OK;
}

so_status so_dims_nchwc_out(const so_dim_alg *A, const so_dims *bc, const so_dims *x, so_dims *o)
{
    if (x->rank != 5) return DERR(A, "input %s must be a blocked value [N,C/b,H,W,b] (rank 5)", DS(A, x));
    _Alignas(16) char q[64];
    int64_t b;
    if (A->size > sizeof q) return DERR(A, "dimension type too large");
    if (bc->rank != 2 || !A->as_const(A->cx, DIM(A, bc, 0), &b) || !A->eq(A->cx, DIM(A, x, 4), DIM(A, bc, 0)) ||
        !A->at_least(A->cx, DIM(A, bc, 1), 1) || !A->div(A->cx, DIM(A, bc, 1), b, 1, q) || !A->eq(A->cx, DIM(A, x, 1), q))
        return DERR(A, "needs ints=(b, C) with b = %s and ceil(C/b) = %s blocks", DD(A, DIM(A, x, 4)), DD(A, DIM(A, x, 1)));
    dims_copy(A, x, o);
    o->rank = 4;
    memcpy(DIM(A, o, 1), DIM(A, bc, 1), A->size);
    return SO_OK;
}

/* x is a blocked value [N,K,H,W,b] with b a number (*b) */
static so_status blocked(const so_dim_alg *A, const so_dims *x, int64_t *b)
{
    if (x->rank != 5) return DERR(A, "input %s must be a blocked value [N,C/b,H,W,b] (rank 5)", DS(A, x));
    if (!A->as_const(A->cx, DIM(A, x, 4), b) || *b < 1) return DERR(A, "lanes of input %s are not a positive number", DS(A, x));
    return SO_OK;
}

so_status so_dims_conv_nchwc(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *w, const so_dims *bias, so_dims *o)
{
    int64_t b;
    if (blocked(A, x, &b)) return SO_ERR;
    if (w->rank != 4) return DERR(A, "weight %s must have rank 4", DS(A, w));
    const int64_t grp = a->group > 0 ? a->group : 1;
    _Alignas(16) char v[5 * 64], q[64];
    if (A->size > sizeof q) return DERR(A, "dimension type too large");
    so_dims plain = {4, v};
    memcpy(v, x->dim, 4 * A->size);
    if (!A->mul(A->cx, DIM(A, w, 1), grp, DIM(A, &plain, 1)) || !A->div(A->cx, DIM(A, &plain, 1), b, 1, q) || !A->eq(A->cx, q, DIM(A, x, 1)))
        return DERR(A, "weight %s (group %lld) does not match the %s blocks of %lld lanes of input %s", DS(A, w), (long long)grp,
                         DD(A, DIM(A, x, 1)), (long long)b, DS(A, x));
    if (so_dims_conv(A, a, &plain, w, bias, o)) return SO_ERR;
    if (!A->div(A->cx, DIM(A, o, 1), b, 1, q)) return DERR(A, "output channels %s are not a multiple of the block %lld", DD(A, DIM(A, o, 1)), (long long)b);
    memcpy(DIM(A, o, 1), q, A->size);
    memcpy(DIM(A, o, 4), DIM(A, x, 4), A->size);
    o->rank = 5;
    return SO_OK;
}

so_status so_dims_pool_nchwc(const so_dim_alg *A, const so_attr *a, int dilated, const so_dims *x, so_dims *o)
{
    int64_t b;
    if (blocked(A, x, &b)) return SO_ERR;
    const so_dims plain = {4, x->dim};
    if (so_dims_pool(A, a, dilated, &plain, o)) return SO_ERR;
    memcpy(DIM(A, o, 4), DIM(A, x, 4), A->size);
    o->rank = 5;
    return SO_OK;
}

so_status so_dims_globalpool_nchwc(const so_dim_alg *A, const so_dims *x, so_dims *o)
{
    int64_t b;
    if (blocked(A, x, &b)) return SO_ERR;
    dims_copy(A, x, o);
    memcpy(DIM(A, o, 2), A->one, A->size);
    memcpy(DIM(A, o, 3), A->one, A->size);
    return SO_OK;
}

/* ints[] as sorted, distinct axes in [0, rank) */
static so_status check_axes(const so_dim_alg *A, const so_attr *a, int rank, const char *what)
{
    for (int k = 0; k < a->n_ints; k++) {
        if (a->ints[k] < 0 || a->ints[k] >= rank) return DERR(A, "%s axis %lld out of range for rank %d", what, (long long)a->ints[k], rank);
        if (k > 0 && a->ints[k] <= a->ints[k - 1]) return DERR(A, "%s axes must be sorted and distinct", what);
    }
    return SO_OK;
}

static int in_ints(const so_attr *a, int64_t d)
{
    for (int k = 0; k < a->n_ints; k++)
        if (a->ints[k] == d) return 1;
    return 0;
}

so_status so_dims_reduce(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o)
{
    if (check_axes(A, a, x->rank, "reduce")) return SO_ERR;
    o->rank = 0;
    for (int d = 0; d < x->rank; d++) {
        const int red = a->n_ints == 0 || in_ints(a, d);
        if (!red || a->keepdims) memcpy(DIM(A, o, o->rank++), red ? A->one : DIM(A, x, d), A->size);
    }
    return SO_OK;
}

so_status so_dims_argreduce(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o)
{
    if (a->axis < 0 || a->axis >= x->rank) return DERR(A, "axis %d out of range for input %s", (int)a->axis, DS(A, x));
    o->rank = 0;
    for (int d = 0; d < x->rank; d++)
        if (d != a->axis || a->keepdims) memcpy(DIM(A, o, o->rank++), d == a->axis ? A->one : DIM(A, x, d), A->size);
    return SO_OK;
}

so_status so_dims_squeeze(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o)
{
    if (check_axes(A, a, x->rank, "squeeze")) return SO_ERR;
    o->rank = 0;
    for (int d = 0; d < x->rank; d++) {
        const int one = A->is_one(A->cx, DIM(A, x, d)), named = in_ints(a, d);
        if (named && !one) return DERR(A, "cannot squeeze axis %d of input %s (size %s)", d, DS(A, x), DD(A, DIM(A, x, d)));
        if (!(named || (a->n_ints == 0 && one))) memcpy(DIM(A, o, o->rank++), DIM(A, x, d), A->size);
    }
    return SO_OK;
}

so_status so_dims_unsqueeze(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o)
{
    const int r = x->rank + a->n_ints;
    if (r > SO_MAX_RANK) return DERR(A, "result rank %d exceeds %d", r, SO_MAX_RANK);
    if (check_axes(A, a, r, "unsqueeze")) return SO_ERR;
    o->rank = r;
    for (int d = 0, src = 0; d < r; d++) memcpy(DIM(A, o, d), in_ints(a, d) ? A->one : DIM(A, x, src++), A->size);
    return SO_OK;
}

so_status so_dims_gather(const so_dim_alg *A, int axis, const so_dims *x, const so_dims *idx, so_dims *o)
{
    if (axis < 0 || axis >= x->rank) return DERR(A, "axis %d out of range for data %s", axis, DS(A, x));
    const int r = x->rank + idx->rank - 1;
    if (r > SO_MAX_RANK) return DERR(A, "result rank %d exceeds %d", r, SO_MAX_RANK);
    o->rank = 0;
    for (int d = 0; d < axis; d++) memcpy(DIM(A, o, o->rank++), DIM(A, x, d), A->size);
    for (int d = 0; d < idx->rank; d++) memcpy(DIM(A, o, o->rank++), DIM(A, idx, d), A->size);
    for (int d = axis + 1; d < x->rank; d++) memcpy(DIM(A, o, o->rank++), DIM(A, x, d), A->size);
    return SO_OK;
}

/* s is unidirectionally broadcastable to t (numpy, right-aligned) */
static int unibroadcastable(const so_dim_alg *A, const so_dims *s, const so_dims *t)
{
    if (s->rank > t->rank) return 0;
    for (int k = 1; k <= s->rank; k++)
        if (!A->is_one(A->cx, DIM(A, s, s->rank - k)) && !A->eq(A->cx, DIM(A, s, s->rank - k), DIM(A, t, t->rank - k))) return 0;
    return 1;
}

so_status so_dims_gemm(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *y, const so_dims *c, so_dims *o)
{
    if (x->rank != 2 || y->rank != 2) return DERR(A, "operands %s and %s must have rank 2", DS(A, x), DS(A, y));
    const void *M = DIM(A, x, a->trans_a ? 1 : 0), *K = DIM(A, x, a->trans_a ? 0 : 1);
    const void *K2 = DIM(A, y, a->trans_b ? 1 : 0), *N = DIM(A, y, a->trans_b ? 0 : 1);
    if (!A->eq(A->cx, K, K2))
        return DERR(A, "inner dimensions differ: A %s (trans_a %d) x B %s (trans_b %d)", DS(A, x), (int)a->trans_a, DS(A, y), (int)a->trans_b);
    o->rank = 2;
    memcpy(DIM(A, o, 0), M, A->size);
    memcpy(DIM(A, o, 1), N, A->size);
    if (c && !unibroadcastable(A, c, o)) return DERR(A, "C %s does not broadcast to %s", DS(A, c), DS(A, o));
    return SO_OK;
}

so_status so_dims_layernorm(const so_dim_alg *A, int axis, const so_dims *x, const so_dims *scale, const so_dims *bias, so_dims *o)
{
    if (axis < 0 || axis >= x->rank) return DERR(A, "axis %d out of range for input %s", axis, DS(A, x));
    const so_dims norm = {x->rank - axis, DIM(A, x, axis)};
    const so_dims *p[2] = {scale, bias};
    for (int k = 0; k < 2; k++)
        if (p[k] && !unibroadcastable(A, p[k], &norm))
            return DERR(A, "%s %s does not broadcast to the normalised shape %s of input %s", k == 0 ? "scale" : "bias", DS(A, p[k]),
                             DS(A, &norm), DS(A, x));
    dims_copy(A, x, o);
    return SO_OK;
}

so_status so_dims_expand(const so_dim_alg *A, const so_dims *x, const so_dims *t, so_dims *o)
{
    if (t->rank > SO_MAX_RANK) return DERR(A, "target rank %d exceeds %d", (int)t->rank, SO_MAX_RANK);
    int64_t v;
    for (int k = 0; k < t->rank; k++)
        if (A->as_const(A->cx, DIM(A, t, k), &v) && v <= 0) return DERR(A, "invalid target shape %s", DS(A, t));
    const int r = so_dim_broadcast(A, x->dim, x->rank, t->dim, t->rank, o->dim);
    if (r < 0) return DERR(A, "cannot expand input %s to %s", DS(A, x), DS(A, t));
    o->rank = r;
    return SO_OK;
}

so_status so_dims_pad(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o)
{
    if (a->n_ints != 2 * x->rank)
        return DERR(A, "has %d pads for input %s of rank %d (need %d)", (int)a->n_ints, DS(A, x), (int)x->rank, 2 * (int)x->rank);
    if (a->mode < 0 || a->mode > 3) return DERR(A, "unknown mode %d", (int)a->mode); /* constant, reflect, edge, wrap */
    _Alignas(16) char pb[64], pe[64];
    if (A->size > sizeof pb) return DERR(A, "dimension type too large");
    dims_copy(A, x, o);
    for (int k = 0; k < x->rank; k++) {
        const int64_t b = a->ints[k], e = a->ints[x->rank + k];
        int64_t d, v;
        if (!A->of_const(A->cx, b, pb) || !A->of_const(A->cx, e, pe) || !A->add(A->cx, DIM(A, x, k), pb, DIM(A, o, k)) || !A->add(A->cx, DIM(A, o, k), pe, DIM(A, o, k)))
            return DERR(A, "pads %lld,%lld on axis %d overflow", (long long)b, (long long)e, k); /* fuzz finding */
        if (A->as_const(A->cx, DIM(A, o, k), &v) && v <= 0)
            return DERR(A, "pads %lld,%lld on axis %d leave nothing of input %s", (long long)b, (long long)e, k, DS(A, x));
        if (a->mode == 1 && A->as_const(A->cx, DIM(A, x, k), &d) && (b >= d || e >= d))
            return DERR(A, "reflect pads %lld,%lld on axis %d must be smaller than the dimension of input %s", (long long)b, (long long)e, k, DS(A, x));
    }
    return SO_OK;
}

so_status so_dims_where(const so_dim_alg *A, const so_dims *cnd, const so_dims *x, const so_dims *y, so_dims *o)
{
    _Alignas(16) char v[SO_MAX_RANK * 64];
    if (A->size > 64) return DERR(A, "dimension type too large");
    int r = so_dim_broadcast(A, x->dim, x->rank, y->dim, y->rank, v);
    if (r >= 0) r = so_dim_broadcast(A, v, r, cnd->dim, cnd->rank, o->dim);
    if (r < 0) return DERR(A, "cannot broadcast %s, %s and %s", DS(A, cnd), DS(A, x), DS(A, y));
    o->rank = r;
    return SO_OK;
}

/* d / k exactly (a number: divisible; symbols: the instance's exact quotient) */
static int div_exact(const so_dim_alg *A, const void *d, int64_t k, void *q)
{
    int64_t v;
    if (A->as_const(A->cx, d, &v) && (k < 1 || v % k)) return 0;
    return A->div(A->cx, d, k, 0, q);
}

so_status so_dims_blockmove(const so_dim_alg *A, int to_space, int64_t b, const so_dims *x, so_dims *o)
{
    int64_t bb;
    if (x->rank != 4 || b < 1 || so_i64_mul(b, b, &bb)) goto bad;
    dims_copy(A, x, o);
    if (to_space ? !div_exact(A, DIM(A, x, 1), bb, DIM(A, o, 1)) || !A->mul(A->cx, DIM(A, x, 2), b, DIM(A, o, 2)) || !A->mul(A->cx, DIM(A, x, 3), b, DIM(A, o, 3))
                 : !A->mul(A->cx, DIM(A, x, 1), bb, DIM(A, o, 1)) || !div_exact(A, DIM(A, x, 2), b, DIM(A, o, 2)) || !div_exact(A, DIM(A, x, 3), b, DIM(A, o, 3)))
        goto bad;
    return SO_OK;
bad:
    if (to_space) return DERR(A, "input %s is not [N,C,H,W] with C divisible by blocksize^2 = %lld", DS(A, x), (long long)(b * b));
    return DERR(A, "input %s is not [N,C,H,W] with H, W divisible by blocksize %lld", DS(A, x), (long long)b);
}

so_status so_dims_trilu(const so_dim_alg *A, const so_dims *x, so_dims *o)
{
    if (x->rank < 2) return DERR(A, "input %s has rank < 2", DS(A, x));
    dims_copy(A, x, o);
    return SO_OK;
}

so_status so_dims_gatherelements(const so_dim_alg *A, int axis, const so_dims *x, const so_dims *ix, so_dims *o)
{
    if (ix->rank != x->rank) return DERR(A, "indices %s and data %s differ in rank", DS(A, ix), DS(A, x));
    if (axis < 0 || axis >= x->rank) return DERR(A, "axis %d out of range for input %s", axis, DS(A, x));
    dims_copy(A, ix, o);
    return SO_OK;
}

so_status so_dims_lrn(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o)
{
    if (x->rank < 2 || a->kernel[0] < 1) return DERR(A, "input %s needs a channel axis and size >= 1", DS(A, x));
    dims_copy(A, x, o);
    return SO_OK;
}

so_status so_dims_det(const so_dim_alg *A, const so_dims *x, so_dims *o)
{
    if (x->rank < 2 || !A->eq(A->cx, DIM(A, x, x->rank - 1), DIM(A, x, x->rank - 2)))
        return DERR(A, "input %s is not a stack of square matrices", DS(A, x));
    dims_copy(A, x, o);
    o->rank -= 2;
    return SO_OK;
}

so_status so_dims_resize(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o)
{
    if (x->rank != 4) return DERR(A, "input %s is not 4-D", DS(A, x));
    if ((a->ints[0] == SO_RESIZE_TF_CROP_AND_RESIZE) != (a->n_ints == 12) || (a->n_ints != 5 && a->n_ints != 7 && a->n_ints != 12) ||
        a->ints[0] < 0 || a->ints[0] >= SO_RESIZE_COORD_COUNT || a->ints[1] < 0 || a->ints[1] > 3 || a->mode < 0 || a->mode > 2 ||
        a->ints[3] <= 0 || a->ints[4] <= 0 || !(a->alpha > 0) || !(a->beta > 0))
        return DERR(A, "invalid resize attributes");
    dims_copy(A, x, o);
    if (!A->of_const(A->cx, a->ints[3], DIM(A, o, 2)) || !A->of_const(A->cx, a->ints[4], DIM(A, o, 3))) return DERR(A, "resize output too large");
    return SO_OK;
}

so_status so_dims_topk(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o)
{
    int64_t d;
    if (a->axis < 0 || a->axis >= x->rank) return DERR(A, "axis %d out of range", (int)a->axis);
    if (a->ints[0] < 0 || (A->as_const(A->cx, DIM(A, x, a->axis), &d) && a->ints[0] > d))
        return DERR(A, "k = %lld out of range for %s", (long long)a->ints[0], DS(A, x));
    dims_copy(A, x, o);
    if (!A->of_const(A->cx, a->ints[0], DIM(A, o, a->axis))) return DERR(A, "k = %lld out of range", (long long)a->ints[0]);
    return SO_OK;
}

so_status so_dims_prelu(const so_dim_alg *A, const so_dims *x, const so_dims *slope, so_dims *o)
{
    if (so_dims_bcast(A, x, slope, o)) return SO_ERR;
    int same = o->rank == x->rank;
    for (int k = 0; same && k < x->rank; k++) same = A->eq(A->cx, DIM(A, o, k), DIM(A, x, k));
    if (!same) return DERR(A, "slope %s does not broadcast to X %s", DS(A, slope), DS(A, x));
    return SO_OK;
}

so_status so_dims_reversesequence(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *lens, so_dims *o)
{
    if (x->rank < 2) return DERR(A, "input %s must have rank >= 2", DS(A, x));
    if ((a->axis != 0 && a->axis != 1) || (a->mode != 0 && a->mode != 1) || a->axis == a->mode)
        return DERR(A, "time_axis %d and batch_axis %d must be 0 and 1", (int)a->axis, (int)a->mode);
    if (!is_vec(A, lens, DIM(A, x, a->mode))) return DERR(A, "sequence_lens %s must be int64 [%s]", DS(A, lens), DD(A, DIM(A, x, a->mode)));
    dims_copy(A, x, o);
    return SO_OK;
}

so_status so_dims_flatten(const so_dim_alg *A, int axis, const so_dims *x, so_dims *o)
{
    if (axis < 0 || axis > x->rank) return DERR(A, "axis %d out of range for input %s", axis, DS(A, x));
    o->rank = 2;
    memcpy(DIM(A, o, 0), A->one, A->size);
    memcpy(DIM(A, o, 1), A->one, A->size);
    for (int k = 0; k < x->rank; k++)
        if (!A->muld(A->cx, DIM(A, o, k >= axis), DIM(A, x, k), DIM(A, o, k >= axis)))
            return DERR(A, "cannot state the product of the dims of input %s on either side of axis %d", DS(A, x), axis);
    return SO_OK;
}

/* the element count of s into n: 1 if it could be formed (the rule language cannot multiply two symbols) */
static int numel(const so_dim_alg *A, const so_dims *s, void *n)
{
    if (!A->of_const(A->cx, 1, n)) return 0;
    for (int k = 0; k < s->rank; k++)
        if (!A->muld(A->cx, n, DIM(A, s, k), n)) return 0;
    return 1;
}

/* every dim of s a known number */
static int all_const(const so_dim_alg *A, const so_dims *s)
{
    int64_t v;
    for (int k = 0; k < s->rank; k++)
        if (!A->as_const(A->cx, DIM(A, s, k), &v)) return 0;
    return 1;
}

so_status so_dims_reshape(const so_dim_alg *A, const so_dims *x, const so_dims *t, so_dims *o)
{
    if (t->rank < 0 || t->rank > SO_MAX_RANK) return DERR(A, "target rank %d exceeds %d", (int)t->rank, SO_MAX_RANK);
    _Alignas(16) char nx[64], nt[64];
    if (A->size > sizeof nx) return DERR(A, "dimension type too large");
    for (int k = 0; k < t->rank; k++)
        if (!A->at_least(A->cx, DIM(A, t, k), 1)) return DERR(A, "invalid target shape %s", DS(A, t));
    const int cx_ok = numel(A, x, nx), ct_ok = numel(A, t, nt);
    if (!ct_ok && all_const(A, t)) return DERR(A, "invalid target shape %s", DS(A, t));
    if (!cx_ok && all_const(A, x)) return DERR(A, "input %s has too many elements", DS(A, x));
    if (cx_ok && ct_ok && !A->eq(A->cx, nx, nt)) return DERR(A, "cannot reshape input %s (%s elements) to %s", DS(A, x), DD(A, nx), DS(A, t));
    dims_copy(A, t, o);
    return SO_OK;
}

so_status so_dims_slice(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o)
{
    if (a->n_ints % 4 != 0) return DERR(A, "has %d slice ints, expected (axis,start,end,step) quads", (int)a->n_ints);
    dims_copy(A, x, o);
    int seen[SO_MAX_RANK] = {0};
    for (int q = 0; q < a->n_ints; q += 4) {
        int64_t ax = a->ints[q], st = a->ints[q + 1], en = a->ints[q + 2], sp = a->ints[q + 3], d, cnt;
        if (ax < 0 || ax >= x->rank || seen[ax]) return DERR(A, "slice axis %lld invalid or repeated for input %s", (long long)ax, DS(A, x));
        seen[ax] = 1;
        if (!A->as_const(A->cx, DIM(A, x, ax), &d)) return DERR(A, "slice axis %lld of input %s has no known size", (long long)ax, DS(A, x));
        if (sp > d) sp = d > 1 ? d : 1; /* same count; keeps the arithmetic below in range */
        if (sp < -d) sp = d > 1 ? -d : -1;
        if (sp > 0) {
            if (st < 0 || st > d || en < 0 || en > d)
                return DERR(A, "slice %lld:%lld:%lld not clamped to axis %lld of input %s", (long long)st, (long long)en, (long long)sp, (long long)ax, DS(A, x));
            cnt = en > st ? (en - st + sp - 1) / sp : 0;
        } else if (sp < 0) {
            if (st < 0 || st > d - 1 || en < -1 || en > d - 1)
                return DERR(A, "slice %lld:%lld:%lld not clamped to axis %lld of input %s", (long long)st, (long long)en, (long long)sp, (long long)ax, DS(A, x));
            cnt = st > en ? (st - en + (-sp) - 1) / (-sp) : 0;
        } else {
            return DERR(A, "slice step 0 on axis %lld", (long long)ax);
        }
        if (cnt <= 0)
            return DERR(A, "slice %lld:%lld:%lld on axis %lld of input %s is empty", (long long)st, (long long)en, (long long)sp, (long long)ax, DS(A, x));
        if (!A->of_const(A->cx, cnt, DIM(A, o, ax))) return DERR(A, "slice of %lld on axis %lld is out of range", (long long)cnt, (long long)ax);
    }
    return SO_OK;
}

/* a and b have the same rank and dims */
static int dims_eq(const so_dim_alg *A, const so_dims *a, const so_dims *b)
{
    if (a->rank != b->rank) return 0;
    for (int k = 0; k < a->rank; k++)
        if (!A->eq(A->cx, DIM(A, a, k), DIM(A, b, k))) return 0;
    return 1;
}

so_status so_dims_scatterelements(const so_dim_alg *A, int axis, const so_dims *x, const so_dims *ix, const so_dims *u, so_dims *o)
{
    if (!dims_eq(A, ix, u) || ix->rank != x->rank)
        return DERR(A, "data %s, int64 indices %s and updates %s do not fit", DS(A, x), DS(A, ix), DS(A, u));
    if (axis < 0 || axis >= x->rank) return DERR(A, "axis %d out of range", axis);
    dims_copy(A, x, o);
    return SO_OK;
}

so_status so_dims_gathernd(const so_dim_alg *A, int b, const so_dims *x, const so_dims *ix, so_dims *o)
{
    int64_t last;
    if (ix->rank < 1) return DERR(A, "indices %s are not int64 of rank >= 1", DS(A, ix));
    if (!A->as_const(A->cx, DIM(A, ix, ix->rank - 1), &last)) return DERR(A, "the last dim of indices %s is no known number", DS(A, ix));
    if (b < 0 || b >= ix->rank || b >= x->rank || last < 1 || b + last > x->rank) return DERR(A, "data %s and indices %s do not fit", DS(A, x), DS(A, ix));
    for (int d = 0; d < b; d++)
        if (!A->eq(A->cx, DIM(A, x, d), DIM(A, ix, d))) return DERR(A, "batch dimensions of %s and %s differ", DS(A, x), DS(A, ix));
    o->rank = 0;
    for (int d = 0; d < ix->rank - 1; d++) memcpy(DIM(A, o, o->rank++), DIM(A, ix, d), A->size);
    for (int d = b + (int)last; d < x->rank; d++) {
        if (o->rank == SO_MAX_RANK) return DERR(A, "output rank over %d", SO_MAX_RANK);
        memcpy(DIM(A, o, o->rank++), DIM(A, x, d), A->size);
    }
    return SO_OK;
}

so_status so_dims_gridsample(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *grid, so_dims *o)
{
    _Alignas(16) char two[64];
    if (A->size > sizeof two || !A->of_const(A->cx, 2, two)) return DERR(A, "dimension type too large");
    if (x->rank != 4 || grid->rank != 4 || !A->eq(A->cx, DIM(A, grid, 3), two) || !A->eq(A->cx, DIM(A, grid, 0), DIM(A, x, 0)))
        return DERR(A, "input %s and grid %s are not [N,C,H,W] and [N,Ho,Wo,2]", DS(A, x), DS(A, grid));
    if (a->mode < 0 || a->mode > 2 || a->n_ints != 2 || a->ints[0] < 0 || a->ints[0] > 2) return DERR(A, "invalid attributes");
    dims_copy(A, x, o);
    memcpy(DIM(A, o, 2), DIM(A, grid, 1), A->size);
    memcpy(DIM(A, o, 3), DIM(A, grid, 2), A->size);
    return SO_OK;
}

/* The concrete instance: a so_shape's dims as so_dims, and the result back (dtype from the caller). */
so_status so_dims_maxpoolidx(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o)
{
    if (a->mode != 0 && a->mode != 1) return DERR(A, "storage_order %d is not 0 or 1", (int)a->mode);
    if (so_dims_pool(A, a, 1, x, &o[0])) return SO_ERR;
    o[1].rank = o[0].rank;
    memcpy(o[1].dim, o[0].dim, (size_t)o[0].rank * A->size);
    return SO_OK;
}

so_status so_dims_maxunpool(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *ix, so_dims *o)
{
    if (x->rank != 4) return DERR(A, "input %s must have rank 4", DS(A, x));
    if (!dims_eq(A, x, ix)) return DERR(A, "indices %s must be int64 of the input's shape %s", DS(A, ix), DS(A, x));
    if (a->n_ints != 4 || a->ints[2] < 1 || a->ints[3] < 1) return DERR(A, "output shape does not fit input %s", DS(A, x));
    o->rank = 4;
    for (int k = 0; k < 4; k++)
        if (!A->of_const(A->cx, a->ints[k], DIM(A, o, k)) || (k < 2 && !A->eq(A->cx, DIM(A, o, k), DIM(A, x, k))))
            return DERR(A, "output shape does not fit input %s", DS(A, x));
    return SO_OK;
}

so_status so_dims_roialign(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *rois, const so_dims *bi, so_dims *o)
{
    _Alignas(16) char four[64];
    if (A->size > sizeof four || !A->of_const(A->cx, 4, four)) return DERR(A, "dimension type too large");
    if (x->rank != 4) return DERR(A, "input [N,C,H,W] %s must have rank 4", DS(A, x));
    if (rois->rank != 2 || !A->eq(A->cx, DIM(A, rois, 1), four)) return DERR(A, "rois %s must be [R,4]", DS(A, rois));
    if (bi->rank != 1 || !A->eq(A->cx, DIM(A, bi, 0), DIM(A, rois, 0)))
        return DERR(A, "batch_indices %s must be int64 [%s]", DS(A, bi), DD(A, DIM(A, rois, 0)));
    if (a->kernel[0] < 1 || a->kernel[1] < 1 || a->n_ints != 2 || a->ints[0] < 0 || (a->ints[1] != 0 && a->ints[1] != 1))
        return DERR(A, "invalid output size, sampling_ratio or mode");
    o->rank = 4;
    memcpy(DIM(A, o, 0), DIM(A, rois, 0), A->size);
    memcpy(DIM(A, o, 1), DIM(A, x, 1), A->size);
    if (!A->of_const(A->cx, a->kernel[0], DIM(A, o, 2)) || !A->of_const(A->cx, a->kernel[1], DIM(A, o, 3))) return DERR(A, "output size too large");
    return SO_OK;
}

so_status so_dims_nllloss(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *t, const so_dims *w, so_dims *o)
{
    if (x->rank < 2 || t->rank != x->rank - 1) return DERR(A, "input %s and int64 target %s do not fit", DS(A, x), DS(A, t));
    if (!A->eq(A->cx, DIM(A, t, 0), DIM(A, x, 0))) return DERR(A, "target %s and input %s differ in N", DS(A, t), DS(A, x));
    for (int d = 1; d < t->rank; d++)
        if (!A->eq(A->cx, DIM(A, t, d), DIM(A, x, d + 1))) return DERR(A, "target %s and input %s differ in dimension %d", DS(A, t), DS(A, x), d + 1);
    if (w && !is_vec(A, w, DIM(A, x, 1))) return DERR(A, "weight %s is not [C] for input %s", DS(A, w), DS(A, x));
    dims_copy(A, t, o);
    if (a->mode != 0) o->rank = 0;
    return SO_OK;
}

so_status so_dims_scatternd(const so_dim_alg *A, const so_dims *x, const so_dims *ix, const so_dims *u, so_dims *o)
{
    int64_t k;
    if (ix->rank < 1) return DERR(A, "indices %s are not int64 of rank >= 1", DS(A, ix));
    if (!A->as_const(A->cx, DIM(A, ix, ix->rank - 1), &k) || k < 1 || k > x->rank)
        return DERR(A, "indices %s index %s dimensions of data %s", DS(A, ix), DD(A, DIM(A, ix, ix->rank - 1)), DS(A, x));
    int ok = u->rank == ix->rank - 1 + x->rank - (int)k;
    for (int d = 0; ok && d < ix->rank - 1; d++) ok = A->eq(A->cx, DIM(A, u, d), DIM(A, ix, d));
    for (int d = (int)k; ok && d < x->rank; d++) ok = A->eq(A->cx, DIM(A, u, ix->rank - 1 + d - k), DIM(A, x, d));
    if (!ok) return DERR(A, "updates %s do not fit indices %s and data %s", DS(A, u), DS(A, ix), DS(A, x));
    dims_copy(A, x, o);
    return SO_OK;
}

/* ---------------- recurrent, 3-D and transposed convolutions, spectral, blocked concat ---------------- */

/* s is [d[0], ..., d[r-1]] (requires each dim equal) */
static int dims_are(const so_dim_alg *A, const so_dims *s, int r, const void *const *d)
{
    if (s->rank != r) return 0;
    for (int k = 0; k < r; k++)
        if (!A->eq(A->cx, DIM(A, s, k), d[k])) return 0;
    return 1;
}

/* the dim v into out (room for one dim of A); 0 if the instance cannot hold it */
static int dim_const(const so_dim_alg *A, int64_t v, void *out) { return A->size <= 64 && A->of_const(A->cx, v, out); }

so_status so_dims_recurrent(const so_dim_alg *A, const so_attr *a, int64_t gates, const so_dims *const *in, int n_out, so_dims *o)
{
    const so_dims *x = in[0], *w = in[1], *r = in[2], *b = in[3], *sl = in[4], *p = in[7];
    _Alignas(16) char D[64], H[64], G[64], G2[64], H3[64];
    if (gates == 3 && a->mode != 0 && a->mode != 1) return DERR(A, "linear_before_reset %d is not 0 or 1", (int)a->mode);
    if (gates == 1 && (a->mode < 0 || a->mode > 2)) return DERR(A, "unknown activation %d (0 Tanh, 1 Relu, 2 Sigmoid)", (int)a->mode);
    if (a->direction < 0 || a->direction > 2) return DERR(A, "unknown direction %d", (int)a->direction);
    if (x->rank != 3) return DERR(A, "input X %s must have rank 3", DS(A, x));
    if (w->rank != 3) return DERR(A, "W %s must have rank 3", DS(A, w));
    if (r->rank != 3) return DERR(A, "R %s must have rank 3", DS(A, r));
    if (!dim_const(A, a->direction == 2 ? 2 : 1, D)) return DERR(A, "dimension type too large");
    if (a->hidden > 0 ? !A->of_const(A->cx, a->hidden, H) : (memcpy(H, DIM(A, r, 2), A->size), 0)) return DERR(A, "hidden size %d too large", (int)a->hidden);
    if (!A->mul(A->cx, H, gates, G) || !A->mul(A->cx, H, 2 * gates, G2) || !A->mul(A->cx, H, 3, H3)) return DERR(A, "hidden size %s too large", DD(A, H));
    const void *T = DIM(A, x, 0), *N = DIM(A, x, 1), *I = DIM(A, x, 2);
    if (!dims_are(A, w, 3, (const void *[]){D, G, I}))
        return DERR(A, "W %s must be [%s,%s,%s] for input %s, hidden %s", DS(A, w), DD(A, D), DD(A, G), DD(A, I), DS(A, x), DD(A, H));
    if (!dims_are(A, r, 3, (const void *[]){D, G, H})) return DERR(A, "R %s must be [%s,%s,%s] for hidden %s", DS(A, r), DD(A, D), DD(A, G), DD(A, H), DD(A, H));
    if (b && !dims_are(A, b, 2, (const void *[]){D, G2})) return DERR(A, "B %s must be [%s,%s]", DS(A, b), DD(A, D), DD(A, G2));
    if (sl && !is_vec(A, sl, N)) return DERR(A, "sequence_lens %s must be [%s]", DS(A, sl), DD(A, N));
    for (int k = 5; k < 7; k++)
        if (in[k] && !dims_are(A, in[k], 3, (const void *[]){D, N, H}))
            return DERR(A, "%s %s must be [%s,%s,%s]", k == 6 ? "initial_c" : "initial_h", DS(A, in[k]), DD(A, D), DD(A, N), DD(A, H));
    if (p && !dims_are(A, p, 2, (const void *[]){D, H3})) return DERR(A, "P %s must be [%s,%s]", DS(A, p), DD(A, D), DD(A, H3));
    const int max_out = gates == 4 ? 3 : 2;
    if (n_out < 1 || n_out > max_out) return DERR(A, "has %d outputs, expected 1 to %d", n_out, max_out);
    const void *y[4] = {T, D, N, H};
    for (int j = 0; j < n_out; j++) {
        o[j].rank = j ? 3 : 4;
        for (int k = 0; k < o[j].rank; k++) memcpy(DIM(A, &o[j], k), y[k + !!j], A->size);
    }
    return SO_OK;
}

/* The 3-D operators' spatial ints (ops.def): kernel, strides, dilations, pad begins, pad ends per axis [, output padding]. */
static so_status spatial3d(const so_dim_alg *A, const so_attr *a, int n_ints, const so_dims *x)
{
    if (a->n_ints != n_ints) return DERR(A, "has %d spatial ints, expected %d", (int)a->n_ints, n_ints);
    for (int k = 0; k < 9; k++)
        if (a->ints[k] < 1 || a->ints[k] > INT32_MAX) return DERR(A, "kernel, stride or dilation %lld is not positive", (long long)a->ints[k]);
    for (int k = 9; k < n_ints; k++)
        if (a->ints[k] < 0 || a->ints[k] > INT32_MAX) return DERR(A, "negative pad or output padding %lld", (long long)a->ints[k]);
    if (x->rank != 5) return DERR(A, "input [N,C,D,H,W] %s must have rank 5", DS(A, x));
    return SO_OK;
}

/* requires kernel dim i of weight w (dims 2..) to be the number k */
static int kernel_is(const so_dim_alg *A, const so_dims *w, int i, int64_t k)
{
    _Alignas(16) char kd[64];
    return dim_const(A, k, kd) && A->eq(A->cx, DIM(A, w, 2 + i), kd);
}

/* one output dim of a transposed convolution over h: s * (h - 1) + op + (k - 1) * d + 1 - pb - pe (op: output padding),
   required >= 1; 0 if it is empty or not a dim of the instance */
static int tconv_out(const so_dim_alg *A, const void *h, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, int64_t op, void *out)
{
    _Alignas(16) char sh[64], c[64];
    return s >= 1 && A->mul(A->cx, h, s, sh) && dim_const(A, op + (k - 1) * d + 1 - pb - pe - s, c) && A->add(A->cx, sh, c, out) &&
           A->at_least(A->cx, out, 1);
}

so_status so_dims_conv3d(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *w, const so_dims *b, so_dims *o)
{
    if (spatial3d(A, a, 15, x)) return SO_ERR;
    if (w->rank != 5) return DERR(A, "weight [O,C/group,kd,kh,kw] %s must have rank 5", DS(A, w));
    const int64_t grp = a->group > 0 ? a->group : 1;
    _Alignas(16) char cin[64];
    if (!multiple_of(A, DIM(A, w, 0), grp) || !A->mul(A->cx, DIM(A, w, 1), grp, cin) || !A->eq(A->cx, cin, DIM(A, x, 1)))
        return DERR(A, "weight %s and group %lld do not fit input %s", DS(A, w), (long long)grp, DS(A, x));
    if (b && !is_vec(A, b, DIM(A, w, 0))) return DERR(A, "bias %s must be [%s]", DS(A, b), DD(A, DIM(A, w, 0)));
    o->rank = 5;
    memcpy(DIM(A, o, 0), DIM(A, x, 0), A->size);
    memcpy(DIM(A, o, 1), DIM(A, w, 0), A->size);
    for (int i = 0; i < 3; i++) {
        if (!kernel_is(A, w, i, a->ints[i])) return DERR(A, "weight %s does not match kernel %lld on axis %d", DS(A, w), (long long)a->ints[i], 2 + i);
        if (!A->window(A->cx, DIM(A, x, 2 + i), a->ints[i], a->ints[3 + i], a->ints[9 + i], a->ints[12 + i], a->ints[6 + i], 0, DIM(A, o, 2 + i)))
            return DERR(A, "kernel %s does not fit input %s", DS(A, w), DS(A, x));
    }
    return SO_OK;
}

so_status so_dims_convtranspose3d(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *w, const so_dims *b, so_dims *o)
{
    if (spatial3d(A, a, 18, x)) return SO_ERR;
    if (w->rank != 5) return DERR(A, "weight [Ci,Co/group,kd,kh,kw] %s must have rank 5", DS(A, w));
    const int64_t grp = a->group > 0 ? a->group : 1;
    if (!A->eq(A->cx, DIM(A, x, 1), DIM(A, w, 0)) || !multiple_of(A, DIM(A, x, 1), grp))
        return DERR(A, "input %s, weight %s and group %lld do not fit", DS(A, x), DS(A, w), (long long)grp);
    o->rank = 5;
    memcpy(DIM(A, o, 0), DIM(A, x, 0), A->size);
    if (!A->mul(A->cx, DIM(A, w, 1), grp, DIM(A, o, 1))) return DERR(A, "too many output channels");
    for (int i = 0; i < 3; i++) {
        if (!kernel_is(A, w, i, a->ints[i])) return DERR(A, "weight %s does not match kernel %lld on axis %d", DS(A, w), (long long)a->ints[i], 2 + i);
        if (!tconv_out(A, DIM(A, x, 2 + i), a->ints[i], a->ints[3 + i], a->ints[6 + i], a->ints[9 + i], a->ints[12 + i], a->ints[15 + i], DIM(A, o, 2 + i)))
            return DERR(A, "output would be empty");
    }
    if (b && !is_vec(A, b, DIM(A, o, 1))) return DERR(A, "bias %s must be [%s]", DS(A, b), DD(A, DIM(A, o, 1)));
    return SO_OK;
}

so_status so_dims_pool3d(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o)
{
    if (spatial3d(A, a, 15, x)) return SO_ERR;
    dims_copy(A, x, o);
    for (int i = 0; i < 3; i++) {
        const int64_t ext = (a->ints[i] - 1) * a->ints[6 + i] + 1;
        if (a->ints[9 + i] >= ext || a->ints[12 + i] >= ext) return DERR(A, "pads must be smaller than the kernel on axis %d", 2 + i);
        if (!A->window(A->cx, DIM(A, x, 2 + i), a->ints[i], a->ints[3 + i], a->ints[9 + i], a->ints[12 + i], a->ints[6 + i], a->ceil_mode, DIM(A, o, 2 + i)))
            return DERR(A, "kernel does not fit input %s", DS(A, x));
    }
    return SO_OK;
}

so_status so_dims_convtranspose(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *w, const so_dims *b, so_dims *o)
{
    if (x->rank != 4 || w->rank != 4) return DERR(A, "input %s and weight %s must be 4-D", DS(A, x), DS(A, w));
    if (a->group < 1 || !A->eq(A->cx, DIM(A, x, 1), DIM(A, w, 0)) || !multiple_of(A, DIM(A, x, 1), a->group))
        return DERR(A, "input %s, weight %s and group %d do not fit", DS(A, x), DS(A, w), (int)a->group);
    o->rank = 4;
    memcpy(DIM(A, o, 0), DIM(A, x, 0), A->size);
    if (!A->mul(A->cx, DIM(A, w, 1), a->group, DIM(A, o, 1))) return DERR(A, "too many output channels");
    for (int i = 0; i < 2; i++) {
        int64_t k;
        if (!A->as_const(A->cx, DIM(A, w, 2 + i), &k)) return DERR(A, "kernel dims of weight %s are not numbers", DS(A, w));
        if (!tconv_out(A, DIM(A, x, 2 + i), k, a->stride[i], a->dilation[i], a->pad[i], a->pad[2 + i], a->ints[i], DIM(A, o, 2 + i)))
            return DERR(A, "output would be empty");
    }
    if (b && !is_vec(A, b, DIM(A, o, 1))) return DERR(A, "bias %s is not [%s]", DS(A, b), DD(A, DIM(A, o, 1)));
    return SO_OK;
}

so_status so_dims_dft(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o)
{
    int64_t last;
    if (x->rank < 2 || !A->as_const(A->cx, DIM(A, x, x->rank - 1), &last) || (last != 1 && last != 2))
        return DERR(A, "input %s must end in 1 (real) or 2 (complex)", DS(A, x));
    if (a->axis < 0 || a->axis >= x->rank - 1) return DERR(A, "axis %d must be a signal axis of %s", (int)a->axis, DS(A, x));
    if (a->n_ints != 1 || a->ints[0] < 1) return DERR(A, "invalid dft_length");
    if ((a->mode & 3) == 3) return DERR(A, "onesided inverse DFT is not defined");
    dims_copy(A, x, o);
    if (!dim_const(A, a->mode & 2 ? a->ints[0] / 2 + 1 : a->ints[0], DIM(A, o, a->axis)) || !dim_const(A, 2, DIM(A, o, x->rank - 1)))
        return DERR(A, "dft_length %lld too large", (long long)a->ints[0]);
    return SO_OK;
}

so_status so_dims_stft(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *w, so_dims *o)
{
    int64_t ch;
    _Alignas(16) char L[64], t[64];
    if (x->rank != 3) return DERR(A, "signal [B,L,1|2] %s must have rank 3", DS(A, x));
    if (!A->as_const(A->cx, DIM(A, x, 2), &ch) || (ch != 1 && ch != 2)) return DERR(A, "signal %s must end in 1 (real) or 2 (complex)", DS(A, x));
    if (a->n_ints != 2 || a->ints[0] < 1 || a->ints[1] < 1 || !dim_const(A, a->ints[1], L) || !A->at_least(A->cx, DIM(A, x, 1), a->ints[1]))
        return DERR(A, "frame_step / frame_length do not fit signal %s", DS(A, x));
    if (w && !is_vec(A, w, L)) return DERR(A, "window %s must be [%lld]", DS(A, w), (long long)a->ints[1]);
    if (a->mode && ch == 2) return DERR(A, "onesided STFT of a complex signal is not defined");
    o->rank = 4;
    memcpy(DIM(A, o, 0), DIM(A, x, 0), A->size);
    /* frames: 1 + (L_signal - frame_length) / frame_step */
    if (!dim_const(A, -a->ints[1], t) || !A->add(A->cx, DIM(A, x, 1), t, L) || !A->div(A->cx, L, a->ints[0], 0, t) ||
        !A->add(A->cx, t, A->one, DIM(A, o, 1)) || !dim_const(A, a->mode ? a->ints[1] / 2 + 1 : a->ints[1], DIM(A, o, 2)) ||
        !dim_const(A, 2, DIM(A, o, 3)))
        return DERR(A, "frames of signal %s are not a dimension", DS(A, x));
    return SO_OK;
}

so_status so_dims_tfidfvectorizer(const so_dim_alg *A, const so_attr *a, const so_dims *const *in, int n_in, so_dims *o)
{
    const so_dims *x = in[0];
    if (x->rank != 1 && x->rank != 2) return DERR(A, "input %s must be int [C] or [N, C]", DS(A, x));
    for (int k = 1; k < 4; k++)
        if (in[k]->rank != 1) return DERR(A, "input %d %s must be int64 [n]", k, DS(A, in[k]));
    if (n_in > 4 && !is_vec(A, in[4], DIM(A, in[3], 0))) return DERR(A, "weights %s must be float [%s]", DS(A, in[4]), DD(A, DIM(A, in[3], 0)));
    if (a->n_ints != 4 || a->ints[0] < 1 || a->ints[1] < a->ints[0] || a->ints[2] < 0 || a->ints[3] < 1)
        return DERR(A, "invalid n-gram lengths, skip count or output size");
    dims_copy(A, x, o);
    if (!dim_const(A, a->ints[3], DIM(A, o, x->rank - 1))) return DERR(A, "output size %lld too large", (long long)a->ints[3]);
    return SO_OK;
}

so_status so_dims_concat_nchwc(const so_dim_alg *A, const so_attr *a, const so_dims *x, int n, so_dims *o)
{
    int64_t b, bk, C = 0;
    _Alignas(16) char q[64];
    if (blocked(A, &x[0], &b)) return SO_ERR;
    if (a->n_ints != n + 1 || a->ints[0] != b) return DERR(A, "needs ints=(b, C0, ..., C%d) with b = %lld", n - 1, (long long)b);
    for (int k = 0; k < n; k++) {
        const int64_t ck = a->ints[k + 1];
        if (k && blocked(A, &x[k], &bk)) return SO_ERR;
        int ok = ck >= 1 && ck <= INT32_MAX && dim_const(A, (ck + b - 1) / b, q) && A->eq(A->cx, DIM(A, &x[k], 1), q);
        for (int d = 0; ok && d < 5; d++) ok = d == 1 || A->eq(A->cx, DIM(A, &x[k], d), DIM(A, &x[0], d));
        if (!ok) return DERR(A, "input %d %s is not a blocked value of %lld channels matching input 0 %s", k, DS(A, &x[k]), (long long)ck, DS(A, &x[0]));
        if ((C += ck) > INT32_MAX) return DERR(A, "too many channels");
    }
    dims_copy(A, &x[0], o);
    if (!dim_const(A, (C + b - 1) / b, DIM(A, o, 1))) return DERR(A, "too many channels");
    return SO_OK;
}

static so_dims dims_of(const so_shape *s) { return (so_dims){s->rank, (void *)s->dim}; } /* a view of s */

so_status so_shape_broadcast(const so_shape *a, const so_shape *b, so_shape *out)
{
    so_shape o = mk(0, a->dtype);
    so_dims x = dims_of(a), y = dims_of(b), od = dims_of(&o);
    if (so_dims_bcast(&so_dim_int64, &x, &y, &od) != SO_OK) return SO_ERR;
    o.rank = od.rank;
    *out = o;
    return SO_OK;
}

/* Output 0 of the node from a shape rule's result st over od (o's dims; o has the dtype), or the
   rule's message prefixed with the node. */
static so_status store(ctx *c, so_status st, so_shape *o, const so_dims *od)
{
    if (st != SO_OK) return fail(c, "%s", so_error());
    o->rank = od->rank;
    c->n->out[0] = *o;
    return SO_OK;
}

/* output 0, of dtype DT, from the shape rule CALL that writes so_dims od */
#define RUN(DT, CALL)                         \
    do {                                      \
        so_shape o_ = mk(0, (DT));            \
        so_dims od = dims_of(&o_);            \
        return store(c, (CALL), &o_, &od);    \
    } while (0)

/* so_dims views of input k (NULL if absent) and of an output shape */
#define IN(k) (c->in[k] ? &(so_dims){c->in[k]->rank, (void *)c->in[k]->dim} : NULL)
#define I64 (&so_dim_int64)

/* ---------------- sources ---------------- */

static so_status shape_input(ctx *c)
{
    so_model *m = c->g->model;
    if (c->n->ref < 0 || c->n->ref >= m->n_inputs)
        return fail(c, "refers to graph input #%d, model has %d", (int)c->n->ref, (int)m->n_inputs);
    const so_value_info *v = &m->inputs[c->n->ref];
    if (v->shape.rank > SO_MAX_RANK) return fail(c, "graph input '%s' has rank %d > %d", v->name ? v->name : "?", (int)v->shape.rank, SO_MAX_RANK);
    for (int k = 0; k < v->shape.rank; k++)
        if (v->shape.dim[k] <= 0)
            return fail(c, "graph input '%s' has unknown or non-positive dimension %d in %s", v->name ? v->name : "?", k, S(&v->shape));
    c->n->out[0] = v->shape;
    return SO_OK;
}

static so_status shape_weight(ctx *c)
{
    so_model *m = c->g->model;
    if (c->n->ref < 0 || c->n->ref >= m->n_weights)
        return fail(c, "refers to weight #%d, model has %d", (int)c->n->ref, (int)m->n_weights);
    const so_weight *w = &m->weights[c->n->ref];
    if (w->shape.rank < 0 || w->shape.rank > SO_MAX_RANK)
        return fail(c, "weight '%s' has invalid rank %d", w->name ? w->name : "?", (int)w->shape.rank);
    for (int k = 0; k < w->shape.rank; k++)
        if (w->shape.dim[k] < 0) return fail(c, "weight '%s' has negative dimension in %s", w->name ? w->name : "?", S(&w->shape));
    c->n->out[0] = w->shape;
    return SO_OK;
}

static so_status shape_opaque(ctx *c)
{
    /* shapes known at import (value_info; rank -1 = unknown) live in the model's opaque
       record; without one, keep what is already set on the node */
    so_model *m = c->g->model;
    if (c->n->ref < 0 || c->n->ref >= m->n_opaque) return SO_OK;
    const so_opaque *op = &m->opaque[c->n->ref];
    if (!op->out) return SO_OK;
    for (int k = 0; k < c->n->n_out; k++) c->n->out[k] = k < op->n_out ? op->out[k] : mk(-1, SO_F32);
    return SO_OK;
}

/* ---------------- linear algebra ---------------- */

static so_status shape_conv(ctx *c)
{
    if (need_f32(c, 0) || need_f32(c, 1) || need_f32(c, 2)) return SO_ERR;
    RUN(SO_F32, so_dims_conv(I64, c->a, IN(0), IN(1), IN(2), &od));
}

static so_status shape_matmul(ctx *c)
{
    if (need_f32(c, 0) || need_f32(c, 1)) return SO_ERR;
    RUN(SO_F32, so_dims_matmul(I64, IN(0), IN(1), &od));
}

static so_status shape_gemm(ctx *c)
{
    if (need_f32(c, 0) || need_f32(c, 1) || need_f32(c, 2)) return SO_ERR;
    RUN(SO_F32, so_dims_gemm(I64, c->a, IN(0), IN(1), IN(2), &od));
}

/* ---------------- element-wise ---------------- */

/* both inputs float (or both int64 if allow_i64) */
static so_status binary_dtypes(ctx *c, int allow_i64)
{
    const so_shape *A = c->in[0], *B = c->in[1];
    if (A->dtype != B->dtype) return fail(c, "dtypes differ: %s and %s", dtype_name(A->dtype), dtype_name(B->dtype));
    if (!(A->dtype == SO_F32 || (allow_i64 && A->dtype == SO_I64)))
        return fail(c, "inputs have dtype %s, expected float", dtype_name(A->dtype));
    return SO_OK;
}

static so_status binary(ctx *c, int allow_i64)
{
    if (binary_dtypes(c, allow_i64)) return SO_ERR;
    RUN(c->in[0]->dtype, so_dims_bcast(I64, IN(0), IN(1), &od));
}

static so_status unary(ctx *c)
{
    if (need_f32(c, 0)) return SO_ERR;
    RUN(c->in[0]->dtype, so_dims_same(I64, IN(0), &od));
}

static so_status shape_add(ctx *c) { return binary(c, 1); }
static so_status shape_sub(ctx *c) { return binary(c, 1); }
static so_status shape_mul(ctx *c) { return binary(c, 1); }
static so_status shape_div(ctx *c) { return binary(c, 1); }
static so_status shape_pow(ctx *c) { return binary(c, 1); }
static so_status shape_relu(ctx *c) { return unary(c); }
static so_status shape_sigmoid(ctx *c) { return unary(c); }
static so_status shape_tanh(ctx *c) { return unary(c); }
static so_status shape_erf(ctx *c) { return unary(c); }
static so_status shape_sqrt(ctx *c) { return unary(c); }
static so_status shape_exp(ctx *c) { return unary(c); }
static so_status shape_log(ctx *c) { return unary(c); }
static so_status shape_neg(ctx *c) { return unary(c); }
static so_status shape_reciprocal(ctx *c) { return unary(c); }
static so_status shape_clip(ctx *c) { return unary(c); }
static so_status shape_hardsigmoid(ctx *c) { return unary(c); }
static so_status shape_hardswish(ctx *c) { return unary(c); }
static so_status shape_leakyrelu(ctx *c) { return unary(c); }
static so_status shape_elu(ctx *c) { return unary(c); }

/* ---------------- normalisation, pooling ---------------- */

static so_status shape_batchnorm(ctx *c)
{
    for (int k = 0; k < 5; k++)
        if (need_f32(c, k)) return SO_ERR;
    so_shape o = mk(0, SO_F32);
    so_dims od = dims_of(&o), p[4];
    for (int k = 0; k < 4; k++) p[k] = dims_of(c->in[1 + k]);
    return store(c, so_dims_batchnorm(I64, IN(0), p, &od), &o, &od);
}

static so_status pool(ctx *c, int dilated)
{
    if (need_f32(c, 0)) return SO_ERR;
    RUN(SO_F32, so_dims_pool(I64, c->a, dilated, IN(0), &od));
}

static so_status shape_maxpool(ctx *c) { return pool(c, 1); }
static so_status shape_avgpool(ctx *c) { return pool(c, 0); }
static so_status shape_lppool(ctx *c) { return pool(c, 1); }
#define shape_globallppool shape_globalavgpool

static so_status shape_globalavgpool(ctx *c)
{
    if (need_f32(c, 0)) return SO_ERR;
    RUN(SO_F32, so_dims_globalpool(I64, IN(0), &od));
}

static so_status shape_softmax(ctx *c)
{
    if (need_f32(c, 0)) return SO_ERR;
    RUN(SO_F32, so_dims_softmax(I64, c->a->axis, IN(0), &od));
}

static so_status shape_reducemean(ctx *c)
{
    if (need_f32(c, 0)) return SO_ERR;
    RUN(SO_F32, so_dims_reduce(I64, c->a, IN(0), &od));
}

static so_status shape_reducesum(ctx *c) { return shape_reducemean(c); }

static so_status shape_layernorm(ctx *c)
{
    if (need_f32(c, 0) || need_f32(c, 1) || need_f32(c, 2)) return SO_ERR;
    RUN(SO_F32, so_dims_layernorm(I64, c->a->axis, IN(0), IN(1), IN(2), &od));
}

static so_status shape_rmsnorm(ctx *c) { return shape_layernorm(c); } /* no bias input */

/* ---------------- data movement ---------------- */

static so_status shape_pad(ctx *c)
{
    RUN(c->in[0]->dtype, so_dims_pad(I64, c->a, IN(0), &od));
}

static so_status shape_concat(ctx *c)
{
    const so_shape *x = c->in[0];
    so_dims v[SO_MAX_IN];
    for (int k = 0; k < c->n_in; k++) v[k] = dims_of(c->in[k]);
    so_shape o = mk(0, x->dtype);
    so_dims od = dims_of(&o);
    if (so_dims_concat(I64, c->a->axis, v, c->n_in, &od) != SO_OK) return fail(c, "%s", so_error());
    for (int k = 1; k < c->n_in; k++)
        if (c->in[k]->dtype != x->dtype)
            return fail(c, "input %d %s does not match input 0 %s outside axis %d", k, S(c->in[k]), S(x), (int)c->a->axis);
    return store(c, SO_OK, &o, &od);
}

static so_status shape_split(ctx *c)
{
    const so_attr *a = c->a;
    so_dims od[SO_MAX_INTS], sizes = {a->n_ints, (void *)a->ints}; /* written only when n_out == n_ints */
    for (int k = 0; k < c->n->n_out && k < SO_MAX_INTS; k++) od[k] = dims_of(&c->n->out[k]);
    if (so_dims_split(I64, a->axis, IN(0), &sizes, c->n->n_out, od) != SO_OK) return fail(c, "%s", so_error());
    for (int k = 0; k < c->n->n_out; k++) c->n->out[k].rank = od[k].rank, c->n->out[k].dtype = c->in[0]->dtype;
    return SO_OK;
}

static so_status shape_flatten(ctx *c) { RUN(c->in[0]->dtype, so_dims_flatten(I64, c->a->axis, IN(0), &od)); }

static so_status shape_reshape(ctx *c)
{
    RUN(c->in[0]->dtype, so_dims_reshape(I64, IN(0), &(so_dims){c->a->n_ints, (void *)c->a->ints}, &od));
}

static so_status shape_transpose(ctx *c)
{
    RUN(c->in[0]->dtype, so_dims_transpose(I64, c->a->ints, c->a->n_ints, IN(0), &od));
}

static so_status shape_squeeze(ctx *c)
{
    RUN(c->in[0]->dtype, so_dims_squeeze(I64, c->a, IN(0), &od));
}

static so_status shape_unsqueeze(ctx *c)
{
    RUN(c->in[0]->dtype, so_dims_unsqueeze(I64, c->a, IN(0), &od));
}

static so_status shape_identity(ctx *c)
{
    RUN(c->in[0]->dtype, so_dims_same(I64, IN(0), &od));
}

static so_status shape_expand(ctx *c)
{
    so_shape o = mk(0, c->in[0]->dtype);
    so_dims od = dims_of(&o), t = {c->a->n_ints, (void *)c->a->ints};
    return store(c, so_dims_expand(I64, IN(0), &t, &od), &o, &od);
}

static so_status shape_resize(ctx *c) { RUN(c->in[0]->dtype, so_dims_resize(I64, c->a, IN(0), &od)); }

static so_status shape_gather(ctx *c)
{
    const so_shape *x = c->in[0], *idx = c->in[1];
    if (idx->dtype != SO_I64) return fail(c, "indices %s have dtype %s, expected int64", S(idx), dtype_name(idx->dtype));
    RUN(x->dtype, so_dims_gather(I64, c->a->axis, IN(0), IN(1), &od));
}

static so_status shape_slice(ctx *c) { RUN(c->in[0]->dtype, so_dims_slice(I64, c->a, IN(0), &od)); }

/* ---------------- recurrent ---------------- */

/* LSTM (gates 4, states h and c, peepholes), GRU (gates 3, state h) and RNN (gates 1, state h): inputs at
   their ONNX positions X W R [B seq_lens h0 (c0 P)]; outputs Y [T,D,N,H] and the last states [D,N,H]
   (so_dims_recurrent). */
static so_status shape_recurrent(ctx *c, int64_t gates)
{
    for (int k = 0; k < c->n_in; k++)
        if (k != 4 && need_f32(c, k)) return SO_ERR;
    const so_shape *sl = c->in[4];
    if (sl && sl->dtype != SO_I64 && sl->dtype != SO_F32) return fail(c, "sequence_lens has unsupported dtype");
    so_shape o[3];
    so_dims od[3], v[8];
    const so_dims *in[8];
    for (int k = 0; k < 8; k++) in[k] = k < c->n_in && c->in[k] ? (v[k] = dims_of(c->in[k]), &v[k]) : NULL;
    for (int k = 0; k < 3; k++) o[k] = mk(0, SO_F32), od[k] = dims_of(&o[k]);
    if (so_dims_recurrent(I64, c->a, gates, in, c->n->n_out, od) != SO_OK) return fail(c, "%s", so_error());
    for (int k = 0; k < c->n->n_out; k++) o[k].rank = od[k].rank, c->n->out[k] = o[k];
    return SO_OK;
}

static so_status shape_lstm(ctx *c) { return shape_recurrent(c, 4); }
static so_status shape_gru(ctx *c) { return shape_recurrent(c, 3); }
static so_status shape_rnn(ctx *c) { return shape_recurrent(c, 1); }

/* ---------------- 3-D convolution and pooling ---------------- */

/* the 3-D operators (spatial ints: so_dims_conv3d and its kin) */
static so_status shape_conv3d(ctx *c)
{
    if (need_f32(c, 0) || need_f32(c, 1) || need_f32(c, 2)) return SO_ERR;
    RUN(SO_F32, so_dims_conv3d(I64, c->a, IN(0), IN(1), IN(2), &od));
}

static so_status shape_convtranspose3d(ctx *c)
{
    if (need_f32(c, 0) || need_f32(c, 1) || need_f32(c, 2)) return SO_ERR;
    RUN(SO_F32, so_dims_convtranspose3d(I64, c->a, IN(0), IN(1), IN(2), &od));
}

static so_status shape_pool3d(ctx *c)
{
    if (need_f32(c, 0)) return SO_ERR;
    RUN(SO_F32, so_dims_pool3d(I64, c->a, IN(0), &od));
}

#define shape_maxpool3d shape_pool3d
#define shape_avgpool3d shape_pool3d

/* ---------------- sequence reversal, max pooling with indices, max unpooling ---------------- */

static so_status shape_reversesequence(ctx *c)
{
    if (c->in[1]->dtype != SO_I64 && c->in[0]->rank >= 2 && (c->a->mode == 0 || c->a->mode == 1))
        return fail(c, "sequence_lens %s must be int64 [%lld]", S(c->in[1]), (long long)c->in[0]->dim[c->a->mode]);
    RUN(c->in[0]->dtype, so_dims_reversesequence(I64, c->a, IN(0), IN(1), &od));
}

static so_status shape_maxpoolidx(ctx *c)
{
    if (c->n->n_out != 2) return fail(c, "has %d outputs, expected 2", (int)c->n->n_out);
    if (need_f32(c, 0)) return SO_ERR;
    so_shape o[2] = {mk(0, SO_F32), mk(0, SO_I64)};
    so_dims od[2] = {dims_of(&o[0]), dims_of(&o[1])};
    if (so_dims_maxpoolidx(I64, c->a, IN(0), od) != SO_OK) return fail(c, "%s", so_error());
    for (int k = 0; k < 2; k++) o[k].rank = od[k].rank, c->n->out[k] = o[k];
    return SO_OK;
}

static so_status shape_maxunpool(ctx *c)
{
    const so_shape *x = c->in[0], *ix = c->in[1];
    if (need_f32(c, 0) || need_rank(c, 0, 4, "input")) return SO_ERR;
    if (ix->dtype != SO_I64) return fail(c, "indices %s must be int64 of the input's shape %s", S(ix), S(x));
    RUN(SO_F32, so_dims_maxunpool(I64, c->a, IN(0), IN(1), &od));
}

/* ---------------- internal ---------------- */

/* ---------------- spectral ---------------- */

static so_status shape_dft(ctx *c)
{
    if (need_f32(c, 0)) return SO_ERR;
    RUN(SO_F32, so_dims_dft(I64, c->a, IN(0), &od));
}

static so_status shape_tfidfvectorizer(ctx *c)
{
    const so_shape *x = c->in[0];
    if (x->dtype != SO_I64) return fail(c, "input %s must be int [C] or [N, C]", S(x));
    for (int k = 1; k < 4; k++)
        if (c->in[k]->dtype != SO_I64) return fail(c, "input %d %s must be int64 [n]", k, S(c->in[k]));
    if (c->n_in > 4 && need_f32(c, 4)) return SO_ERR;
    const so_dims v[5] = {dims_of(c->in[0]), dims_of(c->in[1]), dims_of(c->in[2]), dims_of(c->in[3]), c->n_in > 4 ? dims_of(c->in[4]) : dims_of(c->in[0])};
    const so_dims *in[5] = {&v[0], &v[1], &v[2], &v[3], &v[4]};
    RUN(SO_F32, so_dims_tfidfvectorizer(I64, c->a, in, c->n_in, &od));
}

static so_status shape_stft(ctx *c)
{
    if (need_f32(c, 0) || need_f32(c, 1)) return SO_ERR;
    RUN(SO_F32, so_dims_stft(I64, c->a, IN(0), IN(1), &od));
}

static so_status shape_roialign(ctx *c)
{
    const so_shape *b = c->in[2];
    if (need_f32(c, 0) || need_f32(c, 1) || need_rank(c, 0, 4, "input [N,C,H,W]")) return SO_ERR;
    if (b->dtype != SO_I64) return fail(c, "batch_indices %s must be int64", S(b));
    RUN(SO_F32, so_dims_roialign(I64, c->a, IN(0), IN(1), IN(2), &od));
}

static so_status shape_enlarge(ctx *c)
{
    if (need_f32(c, 0)) return SO_ERR;
    RUN(SO_F32, so_dims_enlarge(I64, c->a, IN(0), &od));
}

/* Conv+BN folding weights: bnfold_w(W[O,...], scale[O], var[O]) -> W's shape;
   bnfold_b(scale, B, mean, var [, cbias]) -> [O], all inputs [O]. */
static so_status shape_bnfold_w(ctx *c)
{
    for (int k = 0; k < 3; k++)
        if (need_f32(c, k)) return SO_ERR;
    so_shape o = mk(0, SO_F32);
    so_dims od = dims_of(&o), p[2] = {dims_of(c->in[1]), dims_of(c->in[2])};
    return store(c, so_dims_bnfold_w(I64, IN(0), p, &od), &o, &od);
}

static so_status shape_bnfold_b(ctx *c)
{
    so_dims v[SO_MAX_IN];
    const so_dims *in[SO_MAX_IN];
    for (int k = 0; k < c->n_in; k++) {
        if (c->in[k] && need_f32(c, k)) return SO_ERR;
        v[k] = c->in[k] ? dims_of(c->in[k]) : (so_dims){0, NULL};
        in[k] = c->in[k] ? &v[k] : NULL;
    }
    RUN(SO_F32, so_dims_bnfold_b(I64, in, c->n_in, &od));
}

/* CONST_*: the shape is ints */
static so_status shape_const(ctx *c)
{
    so_shape o = mk(0, SO_F32);
    so_dims od = dims_of(&o), s = {c->a->n_ints, (void *)c->a->ints};
    return store(c, so_dims_const(I64, c->n->op, &s, &od), &o, &od);
}
#define shape_const_pool shape_const
#define shape_const_idconv shape_const
#define shape_const_idmat shape_const
#define shape_const_ones shape_const

/* ---------------- blocked-channel layout ---------------- */

static so_status shape_nchwc_in(ctx *c)
{
    if (need_f32(c, 0)) return SO_ERR;
    RUN(SO_F32, so_dims_nchwc_in(I64, c->a, IN(0), &od));
}

static so_status shape_nchwc_out(ctx *c)
{
    if (need_f32(c, 0)) return SO_ERR;
    so_shape o = mk(0, SO_F32);
    so_dims od = dims_of(&o), bc = {c->a->n_ints, (void *)c->a->ints};
    return store(c, so_dims_nchwc_out(I64, &bc, IN(0), &od), &o, &od);
}

static so_status shape_conv_nchwc(ctx *c)
{
    if (need_f32(c, 0) || need_f32(c, 1) || need_f32(c, 2)) return SO_ERR;
    RUN(SO_F32, so_dims_conv_nchwc(I64, c->a, IN(0), IN(1), IN(2), &od));
}

static so_status pool_nchwc(ctx *c, int dilated)
{
    if (need_f32(c, 0)) return SO_ERR;
    RUN(SO_F32, so_dims_pool_nchwc(I64, c->a, dilated, IN(0), &od));
}

static so_status shape_maxpool_nchwc(ctx *c) { return pool_nchwc(c, 1); }
static so_status shape_avgpool_nchwc(ctx *c) { return pool_nchwc(c, 0); }

static so_status shape_concat_nchwc(ctx *c)
{
    so_dims v[SO_MAX_IN];
    for (int k = 0; k < c->n_in; k++) {
        if (need_f32(c, k)) return SO_ERR;
        v[k] = dims_of(c->in[k]);
    }
    RUN(SO_F32, so_dims_concat_nchwc(I64, c->a, v, c->n_in, &od));
}

static so_status shape_globalavgpool_nchwc(ctx *c)
{
    if (need_f32(c, 0)) return SO_ERR;
    RUN(SO_F32, so_dims_globalpool_nchwc(I64, IN(0), &od));
}

/* ---------------- driver ---------------- */

/* ---- operators of other exporters and of the conformance suite ---- */
static so_status shape_abs(ctx *c) { return unary(c); }
static so_status shape_floor(ctx *c) { return unary(c); }
static so_status shape_ceil(ctx *c) { return unary(c); }
static so_status shape_round(ctx *c) { return unary(c); }
static so_status shape_sign(ctx *c) { return unary(c); }
static so_status shape_softplus(ctx *c) { return unary(c); }
static so_status shape_softsign(ctx *c) { return unary(c); }
static so_status shape_sin(ctx *c) { return unary(c); }
static so_status shape_cos(ctx *c) { return unary(c); }
static so_status shape_tan(ctx *c) { return unary(c); }
static so_status shape_asin(ctx *c) { return unary(c); }
static so_status shape_acos(ctx *c) { return unary(c); }
static so_status shape_atan(ctx *c) { return unary(c); }
static so_status shape_sinh(ctx *c) { return unary(c); }
static so_status shape_cosh(ctx *c) { return unary(c); }
static so_status shape_asinh(ctx *c) { return unary(c); }
static so_status shape_acosh(ctx *c) { return unary(c); }
static so_status shape_atanh(ctx *c) { return unary(c); }
static so_status shape_mish(ctx *c) { return unary(c); }
static so_status shape_selu(ctx *c) { return unary(c); }
static so_status shape_celu(ctx *c) { return unary(c); }
static so_status shape_thresholdedrelu(ctx *c) { return unary(c); }
static so_status shape_shrink(ctx *c) { return unary(c); }
static so_status shape_gelu(ctx *c) { return unary(c); }
static so_status shape_max(ctx *c) { return binary(c, 1); }
static so_status shape_min(ctx *c) { return binary(c, 1); }
static so_status shape_prelu(ctx *c)
{
    if (binary_dtypes(c, 0)) return SO_ERR;
    RUN(SO_F32, so_dims_prelu(I64, IN(0), IN(1), &od));
}
static so_status shape_reducemax(ctx *c) { return shape_reducemean(c); }
static so_status shape_reducemin(ctx *c) { return shape_reducemean(c); }
static so_status shape_reduceprod(ctx *c) { return shape_reducemean(c); }
static so_status shape_reducel1(ctx *c) { return shape_reducemean(c); }
static so_status shape_reducel2(ctx *c) { return shape_reducemean(c); }
static so_status shape_reducesumsquare(ctx *c) { return shape_reducemean(c); }
static so_status shape_reducelogsum(ctx *c) { return shape_reducemean(c); }
static so_status shape_reducelogsumexp(ctx *c) { return shape_reducemean(c); }
static so_status shape_logsoftmax(ctx *c) { return shape_softmax(c); }
static so_status shape_hardmax(ctx *c) { return shape_softmax(c); }

/* ArgMax / ArgMin: the reduced shape over one axis, int64 */
static so_status shape_argmax(ctx *c)
{
    if (need_f32(c, 0)) return SO_ERR;
    RUN(SO_I64, so_dims_argreduce(I64, c->a, IN(0), &od));
}
static so_status shape_argmin(ctx *c) { return shape_argmax(c); }

static so_status shape_trilu(ctx *c) { RUN(c->in[0]->dtype, so_dims_trilu(I64, IN(0), &od)); }

static so_status shape_gatherelements(ctx *c)
{
    if (need_f32(c, 0)) return SO_ERR;
    if (c->in[1]->dtype != SO_I64) return fail(c, "indices are not int64");
    RUN(SO_F32, so_dims_gatherelements(I64, c->a->axis, IN(0), IN(1), &od));
}

static so_status shape_depthtospace(ctx *c)
{
    if (need_f32(c, 0)) return SO_ERR;
    RUN(SO_F32, so_dims_blockmove(I64, 1, c->a->kernel[0], IN(0), &od));
}
static so_status shape_spacetodepth(ctx *c)
{
    if (need_f32(c, 0)) return SO_ERR;
    RUN(SO_F32, so_dims_blockmove(I64, 0, c->a->kernel[0], IN(0), &od));
}

/* NegativeLogLikelihoodLoss: input [N,C,d...], target [N,d...] int64, weight [C]; reduction none keeps
   the target's shape, sum and mean give a scalar */
static so_status shape_nllloss(ctx *c)
{
    const so_shape *x = c->in[0], *t = c->in[1];
    if (need_f32(c, 0)) return SO_ERR;
    if (t->dtype != SO_I64) return fail(c, "input %s and int64 target %s do not fit", S(x), S(t));
    if (c->n->n_in > 2 && c->in[2] && need_f32(c, 2)) return SO_ERR;
    RUN(SO_F32, so_dims_nllloss(I64, c->a, IN(0), IN(1), c->n->n_in > 2 ? IN(2) : NULL, &od));
}

static so_status shape_where(ctx *c)
{
    const so_shape *cnd = c->in[0], *x = c->in[1], *y = c->in[2];
    if (cnd->dtype != SO_I64) return fail(c, "condition is not a boolean (int64) tensor");
    if (x->dtype != y->dtype) return fail(c, "X and Y differ in type");
    RUN(x->dtype, so_dims_where(I64, IN(0), IN(1), IN(2), &od));
}
static so_status compare(ctx *c)
{
    const so_shape *A = c->in[0], *B = c->in[1];
    if (A->dtype != B->dtype) return fail(c, "dtypes differ: %s and %s", dtype_name(A->dtype), dtype_name(B->dtype));
    RUN(SO_I64, so_dims_bcast(I64, IN(0), IN(1), &od));
}
static so_status shape_equal(ctx *c) { return compare(c); }
static so_status shape_less(ctx *c) { return compare(c); }
static so_status shape_greater(ctx *c) { return compare(c); }
static so_status shape_lessorequal(ctx *c) { return compare(c); }
static so_status shape_greaterorequal(ctx *c) { return compare(c); }
/* an element-wise result of dtype dt */
static so_status same_as(ctx *c, int32_t dt)
{
    RUN(dt, so_dims_same(I64, IN(0), &od));
}

static so_status shape_isinf(ctx *c) { return need_f32(c, 0) ? SO_ERR : same_as(c, SO_I64); }
static so_status shape_isnan(ctx *c) { return shape_isinf(c); }

static so_status shape_convtranspose(ctx *c)
{
    if (need_f32(c, 0) || need_f32(c, 1)) return SO_ERR;
    RUN(SO_F32, so_dims_convtranspose(I64, c->a, IN(0), IN(1), c->n->n_in > 2 ? IN(2) : NULL, &od));
}

static so_status shape_lrn(ctx *c)
{
    if (need_f32(c, 0)) return SO_ERR;
    RUN(SO_F32, so_dims_lrn(I64, c->a, IN(0), &od));
}

static so_status shape_scatterelements(ctx *c)
{
    const so_shape *x = c->in[0], *ix = c->in[1], *u = c->in[2];
    if (ix->dtype != SO_I64 || u->dtype != x->dtype) return fail(c, "data %s, int64 indices %s and updates %s do not fit", S(x), S(ix), S(u));
    RUN(x->dtype, so_dims_scatterelements(I64, c->a->axis, IN(0), IN(1), IN(2), &od));
}

static so_status shape_gathernd(ctx *c)
{
    const so_shape *ix = c->in[1];
    if (ix->dtype != SO_I64) return fail(c, "indices %s are not int64 of rank >= 1", S(ix));
    RUN(c->in[0]->dtype, so_dims_gathernd(I64, c->a->axis, IN(0), IN(1), &od));
}

static so_status shape_topk(ctx *c)
{
    if (need_f32(c, 0)) return SO_ERR;
    so_shape o = mk(0, SO_F32);
    so_dims od = dims_of(&o);
    if (store(c, so_dims_topk(I64, c->a, IN(0), &od), &o, &od)) return SO_ERR;
    o.dtype = SO_I64;
    c->n->out[1] = o;
    return SO_OK;
}

static so_status shape_det(ctx *c)
{
    if (need_f32(c, 0)) return SO_ERR;
    RUN(SO_F32, so_dims_det(I64, IN(0), &od));
}

/* boolean operators: int64 0/1 storage in and out */
static so_status shape_not(ctx *c)
{
    if (c->in[0]->dtype != SO_I64) return fail(c, "input has dtype %s, expected bool", dtype_name(c->in[0]->dtype));
    return same_as(c, SO_I64);
}
static so_status logic(ctx *c)
{
    if (c->in[0]->dtype != SO_I64 || c->in[1]->dtype != SO_I64) return fail(c, "inputs must be bool");
    return compare(c);
}
static so_status shape_and(ctx *c) { return logic(c); }
static so_status shape_or(ctx *c) { return logic(c); }
static so_status shape_xor(ctx *c) { return logic(c); }
static so_status shape_mod(ctx *c) { return binary(c, 1); }

static so_status shape_scatternd(ctx *c)
{
    const so_shape *x = c->in[0], *ix = c->in[1], *u = c->in[2];
    if (ix->dtype != SO_I64) return fail(c, "indices %s are not int64 of rank >= 1", S(ix));
    if (u->dtype != x->dtype) return fail(c, "updates and data differ in type");
    RUN(x->dtype, so_dims_scatternd(I64, IN(0), IN(1), IN(2), &od));
}

static so_status shape_gridsample(ctx *c)
{
    if (need_f32(c, 0) || need_f32(c, 1)) return SO_ERR;
    RUN(SO_F32, so_dims_gridsample(I64, c->a, IN(0), IN(1), &od));
}

static so_status shape_cast(ctx *c)
{
    int32_t to = so_dtype_storage(c->a->mode);
    if (!to) return fail(c, "cast to ONNX type %d is not supported (float32, int64, int32, bool)", (int)c->a->mode);
    return same_as(c, to);
}

static const shape_fn shape_fns[SO_OP_COUNT] = {
#define X(e, l, ...) [SO_OP_##e] = shape_##l,
#include "ops.def"
#undef X
};

so_status so_shape_infer(so_graph *g, int32_t i)
{
    ctx c;
    memset(&c, 0, sizeof c);
    c.g = g;
    c.i = i;
    c.n = &g->nodes[i];
    c.a = c.n->attr;
    c.n_in = c.n->n_in;
    so_node *n = c.n;
    if ((int)n->op < 0 || n->op >= SO_OP_COUNT) return so_errorf("node #%d has invalid op %d", (int)i, (int)n->op);
    const so_op_info *info = &so_ops[n->op];
    if (n->n_in < info->min_in || n->n_in > info->max_in) {
        if (info->min_in == info->max_in) return fail(&c, "has %d inputs, expected %d", (int)n->n_in, info->min_in);
        return fail(&c, "has %d inputs, expected %d to %d", (int)n->n_in, info->min_in, info->max_in);
    }
    if (info->n_out >= 0 && n->op != SO_OP_LSTM && n->op != SO_OP_GRU && n->op != SO_OP_RNN && n->n_out != info->n_out)
        return fail(&c, "has %d outputs, expected %d", (int)n->n_out, info->n_out);
    if (n->n_out < 1) return fail(&c, "has no outputs");
    int unknown = 0;
    for (int k = 0; k < n->n_in; k++) {
        so_edge e = n->in[k];
        if (e.node < 0 && k >= info->min_in) continue; /* absent optional input */
        if (e.node < 0 || e.node >= g->n_nodes || e.slot < 0 || e.slot >= g->nodes[e.node].n_out)
            return fail(&c, "input %d refers to a missing tensor", k);
        c.in[k] = &g->nodes[e.node].out[e.slot];
        if (c.in[k]->rank < 0) unknown = 1;
        else if (c.in[k]->rank > SO_MAX_RANK) return fail(&c, "input %d has invalid rank %d", k, (int)c.in[k]->rank);
    }
    if (n->op == SO_OP_OPAQUE) {
        if (shape_opaque(&c) != SO_OK) return SO_ERR;
        /* shapes from the file (value_info, Resize scales): same bounds as inferred ones */
        for (int k = 0; k < n->n_out; k++) {
            const so_shape *o = &n->out[k];
            int64_t cnt = 1;
            for (int d = 0; d < o->rank && d < SO_MAX_RANK; d++)
                if (o->dim[d] < 0 || so_i64_mul(cnt, o->dim[d], &cnt) || cnt > INT64_MAX / 8)
                    return fail(&c, "output %d has an invalid or too large shape %s", k, S(o));
        }
        return SO_OK;
    }
    if (unknown) {
        for (int k = 0; k < n->n_out; k++) n->out[k] = mk(-1, SO_F32);
        return SO_OK;
    }
    if (shape_fns[n->op](&c) != SO_OK) return SO_ERR;
    if (info->flags & SO_F_SOURCE) return SO_OK;
    for (int k = 0; k < n->n_out; k++) {
        const so_shape *o = &n->out[k];
        int64_t cnt = 1;
        for (int d = 0; d < o->rank; d++) {
            if (o->dim[d] <= 0) return fail(&c, "output %d would have non-positive dimension: %s", k, S(o));
            if (so_i64_mul(cnt, o->dim[d], &cnt) || cnt > INT64_MAX / 8)
                return fail(&c, "output %d has too many elements: %s", k, S(o));
        }
    }
    return SO_OK;
}
