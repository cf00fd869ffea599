/* onnx_params.c - ONNX attribute access and operator parameters given as attributes or constant inputs (axes, shapes, slices, splits, pads). */
#include "onnx_priv.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

/* ======================================================================
   attributes and constant parameters
   ====================================================================== */

const Onnx__AttributeProto *onx_att(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0) return n->attribute[i];
    return NULL;
}

int64_t onx_att_i(const Onnx__NodeProto *n, const char *name, int64_t def)
{
    const Onnx__AttributeProto *a = onx_att(n, name);
    return a ? a->i : def;
}

float onx_att_f(const Onnx__NodeProto *n, const char *name, float def)
{
    const Onnx__AttributeProto *a = onx_att(n, name);
    if (!a) return def;
    if (a->has_type && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) return (float)a->i;
    return a->f;
}

/* String attribute copied into buf (NUL-terminated); NULL if absent. */
const char *onx_att_s(const Onnx__NodeProto *n, const char *name, char *buf, size_t len)
{
    const Onnx__AttributeProto *a = onx_att(n, name);
    if (!a) return NULL;
    size_t k = a->s.len < len - 1 ? a->s.len : len - 1;
    if (k) memcpy(buf, a->s.data, k);
    buf[k] = 0;
    return buf;
}

/* Index of s in names[0..n), or -1. */
int onx_name_index(const char *s, const char *const *names, int n)
{
    for (int j = 0; j < n; j++)
        if (!strcmp(s, names[j])) return j;
    return -1;
}

/* INTS attribute: count (or -1 if absent) and pointer. */
long onx_att_ints(const Onnx__NodeProto *n, const char *name, const int64_t **p)
{
    const Onnx__AttributeProto *a = onx_att(n, name);
    static const int64_t none[1] = {0};
    if (!a) return -1;
    *p = a->ints ? a->ints : none;
    return (long)a->n_ints;
}

/* Input k of node n as a value, NULL when absent or "". */
val *onx_inval(imp *im, const Onnx__NodeProto *n, size_t k)
{
    if (k >= n->n_input || !n->input[k][0]) return NULL;
    return onx_lookup(im, n->input[k]);
}

/* Integer list from a constant input. SO_ERR_UNSUPPORTED when the input is absent or not constant. */
int onx_const_ints(imp *im, const val *v, int64_t *out, int max, int *count, const char *what)
{
    if (!v || !v->is_const) return SO_ERR_UNSUPPORTED; /* fuzz finding: ConstantOfShape without input */
    if (v->c.shape.rank > 1) return onx_node_err(im, "%s must be a 1-D tensor", what), SO_ERR;
    int64_t n = onx_ct_numel(&v->c);
    if (n > max) return SO_ERR_UNSUPPORTED;
    for (int64_t i = 0; i < n; i++) out[i] = onx_ct_geti(&v->c, i);
    *count = (int)n;
    return SO_OK;
}

int onx_norm_axis(imp *im, int64_t a, int rank, int32_t *out)
{
    if (a < -rank || a >= rank) return onx_node_err(im, "axis %lld out of range for rank %d", (long long)a, rank), SO_ERR;
    *out = (int32_t)(a < 0 ? a + rank : a);
    return SO_OK;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Normalises axes into [0, rank), rejects duplicates, sorts ascending. */
int onx_norm_axes(imp *im, int64_t *ax, int n, int rank)
{
    for (int i = 0; i < n; i++) {
        int32_t a;
        if (onx_norm_axis(im, ax[i], rank, &a) != SO_OK) return SO_ERR;
        ax[i] = a;
    }
    qsort(ax, (size_t)n, sizeof *ax, cmp_i64);
    for (int i = 1; i < n; i++)
        if (ax[i] == ax[i - 1]) return onx_node_err(im, "axis %lld repeated", (long long)ax[i]), SO_ERR;
    return SO_OK;
}

/* Axes of Squeeze/Unsqueeze/Reduce*: from input 1 when `from_input`, else from attribute "axes".
   *present = 0 when not given. */
int onx_get_axes(imp *im, const Onnx__NodeProto *n, int from_input, int64_t *axes, int *count, int *present)
{
    *count = 0;
    *present = 0;
    if (from_input) {
        val *v = onx_inval(im, n, 1);
        if (!v) return SO_OK;
        *present = 1;
        return onx_const_ints(im, v, axes, SO_MAX_RANK, count, "axes");
    }
    const int64_t *p;
    long k = onx_att_ints(n, "axes", &p);
    if (k < 0) return SO_OK;
    if (k > SO_MAX_RANK) return onx_node_err(im, "too many axes (%ld)", k), SO_ERR;
    *present = 1;
    memcpy(axes, p, (size_t)k * sizeof *p);
    *count = (int)k;
    return SO_OK;
}

/* Reshape target with 0 (copy, unless allowzero) and -1 resolved. */
int onx_reshape_target(imp *im, const Onnx__NodeProto *n, const so_shape *in, const val *sv, so_shape *out)
{
    int64_t t[SO_MAX_RANK];
    int k = 0, r;
    if (!sv) return onx_node_err(im, "missing shape input"), SO_ERR;
    if ((r = onx_const_ints(im, sv, t, SO_MAX_RANK, &k, "shape")) != SO_OK) return r;
    int allowzero = (int)onx_att_i(n, "allowzero", 0);
    int neg = -1;
    int64_t known = 1;
    so_shape o;
    memset(&o, 0, sizeof o);
    o.rank = k;
    o.dtype = in->dtype;
    for (int i = 0; i < k; i++) {
        int64_t d = t[i];
        if (d == 0 && !allowzero) {
            if (in->rank < 0) return SO_ERR_UNSUPPORTED;
            if (i >= in->rank) return onx_node_err(im, "shape entry %d is 0 but the input has rank %d", i, in->rank), SO_ERR;
            d = in->dim[i];
        } else if (d == -1) {
            if (neg >= 0) return onx_node_err(im, "shape has more than one -1"), SO_ERR;
            neg = i;
            continue;
        } else if (d < 0) {
            return onx_node_err(im, "shape entry %lld is invalid", (long long)d), SO_ERR;
        }
        o.dim[i] = d;
        if (so_i64_mul(known, d, &known)) return onx_node_err(im, "shape size overflows"), SO_ERR;
    }
    if (in->rank < 0) return neg >= 0 ? SO_ERR_UNSUPPORTED : (*out = o, SO_OK);
    int64_t total = so_shape_numel(in);
    if (neg >= 0) {
        if (known == 0 || total % known) {
            char a[128];
            return onx_node_err(im, "cannot reshape %s: -1 does not resolve", so_shape_str(in, a, sizeof a)), SO_ERR;
        }
        o.dim[neg] = total / known;
        known = total;
    }
    if (known != total) {
        char a[128], b[128];
        return onx_node_err(im, "cannot reshape %s into %s", so_shape_str(in, a, sizeof a), so_shape_str(&o, b, sizeof b)), SO_ERR;
    }
    *out = o;
    return SO_OK;
}

/* Slice parameters resolved and clamped per the ONNX spec into (axis,start,end,step) quads. */
int onx_slice_quads(imp *im, const Onnx__NodeProto *n, const so_shape *in, int64_t *q, int *nq, so_shape *outs)
{
    int64_t st[SO_MAX_RANK], en[SO_MAX_RANK], ax[SO_MAX_RANK], sp[SO_MAX_RANK];
    int ns = 0, ne = 0, na = -1, np = -1, r;
    if (in->rank < 0) return SO_ERR_UNSUPPORTED;
    if (im->opset < 10) {
        const int64_t *p;
        long k;
        if ((k = onx_att_ints(n, "starts", &p)) < 0 || k > SO_MAX_RANK) return SO_ERR_UNSUPPORTED;
        memcpy(st, p, (size_t)k * 8), ns = (int)k;
        if ((k = onx_att_ints(n, "ends", &p)) < 0 || k > SO_MAX_RANK) return SO_ERR_UNSUPPORTED;
        memcpy(en, p, (size_t)k * 8), ne = (int)k;
        if ((k = onx_att_ints(n, "axes", &p)) >= 0) {
            if (k > SO_MAX_RANK) return SO_ERR_UNSUPPORTED;
            memcpy(ax, p, (size_t)k * 8), na = (int)k;
        }
    } else {
        val *v;
        if (!(v = onx_inval(im, n, 1)) || (r = onx_const_ints(im, v, st, SO_MAX_RANK, &ns, "starts")) != SO_OK) return v ? r : SO_ERR_UNSUPPORTED;
        if (!(v = onx_inval(im, n, 2)) || (r = onx_const_ints(im, v, en, SO_MAX_RANK, &ne, "ends")) != SO_OK) return v ? r : SO_ERR_UNSUPPORTED;
        if ((v = onx_inval(im, n, 3)) && (r = onx_const_ints(im, v, ax, SO_MAX_RANK, &na, "axes")) != SO_OK) return r;
        if ((v = onx_inval(im, n, 4)) && (r = onx_const_ints(im, v, sp, SO_MAX_RANK, &np, "steps")) != SO_OK) return r;
    }
    if (ns != ne || (na >= 0 && na != ns) || (np >= 0 && np != ns))
        return onx_node_err(im, "starts, ends, axes and steps differ in length"), SO_ERR;
    if (ns * 4 > SO_MAX_INTS) return SO_ERR_UNSUPPORTED;
    so_shape o = *in;
    int seen[SO_MAX_RANK] = {0};
    for (int i = 0; i < ns; i++) {
        int32_t a;
        if (onx_norm_axis(im, na >= 0 ? ax[i] : i, in->rank, &a) != SO_OK) return SO_ERR;
        if (seen[a]++) return onx_node_err(im, "axis %d sliced twice", a), SO_ERR;
        int64_t step = np >= 0 ? sp[i] : 1, dim = in->dim[a], s = st[i], e = en[i];
        if (step == 0) return onx_node_err(im, "slice step is 0"), SO_ERR;
        /* |step| > dim selects at most one element either way; clamping keeps the length
           arithmetic below from overflowing (fuzz finding: step -INT64_MAX) */
        int64_t lim = dim > 1 ? dim : 1;
        step = step > lim ? lim : step < -lim ? -lim : step;
        if (s < 0) s = s < INT64_MIN + dim ? INT64_MIN : s + dim;
        if (e < 0) e = e < INT64_MIN + dim ? INT64_MIN : e + dim;
        int64_t len;
        if (step > 0) {
            s = s < 0 ? 0 : s > dim ? dim : s;
            e = e < 0 ? 0 : e > dim ? dim : e;
            len = e > s ? (e - s + step - 1) / step : 0;
        } else {
            s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
            len = s > e ? (s - e + (-step) - 1) / (-step) : 0;
        }
        q[4 * i] = a;
        q[4 * i + 1] = s;
        q[4 * i + 2] = e;
        q[4 * i + 3] = step;
        o.dim[a] = len;
    }
    *nq = ns;
    if (outs) *outs = o;
    return SO_OK;
}

/* Split sizes and axis. */
int onx_split_sizes(imp *im, const Onnx__NodeProto *n, const so_shape *in, int32_t *axis, int64_t *sz, int *count)
{
    int r, k = -1;
    if (in->rank < 0) return SO_ERR_UNSUPPORTED;
    if (onx_norm_axis(im, onx_att_i(n, "axis", 0), in->rank, axis) != SO_OK) return SO_ERR;
    int64_t dim = in->dim[*axis];
    if (im->opset >= 13) {
        val *v = onx_inval(im, n, 1);
        if (v && (r = onx_const_ints(im, v, sz, SO_MAX_INTS, &k, "split")) != SO_OK) return r;
    } else {
        const int64_t *p;
        long c = onx_att_ints(n, "split", &p);
        if (c > SO_MAX_INTS) return SO_ERR_UNSUPPORTED;
        if (c >= 0) memcpy(sz, p, (size_t)c * 8), k = (int)c;
    }
    if (k < 0) {
        const Onnx__AttributeProto *no = onx_att(n, "num_outputs");
        int64_t parts = no ? no->i : (int64_t)n->n_output;
        if (parts <= 0) return onx_node_err(im, "cannot split into %lld parts", (long long)parts), SO_ERR;
        if (parts > SO_MAX_INTS) return SO_ERR_UNSUPPORTED;
        if (no) {
            int64_t chunk = (dim + parts - 1) / parts;
            if (chunk * (parts - 1) > dim) return onx_node_err(im, "cannot split dimension %lld into %lld parts", (long long)dim, (long long)parts), SO_ERR;
            for (int64_t i = 0; i < parts; i++) sz[i] = i < parts - 1 ? chunk : dim - chunk * (parts - 1);
        } else {
            if (dim % parts) return onx_node_err(im, "cannot split dimension %lld into %lld equal parts", (long long)dim, (long long)parts), SO_ERR;
            for (int64_t i = 0; i < parts; i++) sz[i] = dim / parts;
        }
        k = (int)parts;
    }
    int64_t sum = 0;
    for (int i = 0; i < k; i++) {
        if (sz[i] < 0) return onx_node_err(im, "negative split size %lld", (long long)sz[i]), SO_ERR;
        if (sz[i] > dim - sum) /* checked before adding: huge sizes must not overflow the sum */
            return onx_node_err(im, "split sizes add up to more than the dimension %lld", (long long)dim), SO_ERR;
        sum += sz[i];
    }
    if (sum != dim) return onx_node_err(im, "split sizes add up to %lld, dimension is %lld", (long long)sum, (long long)dim), SO_ERR;
    if ((size_t)k != n->n_output) return onx_node_err(im, "%d split sizes for %zu outputs", k, n->n_output), SO_ERR;
    *count = k;
    return SO_OK;
}

/* Pad parameters: full-rank pads (begins then ends), value and mode. */
int onx_pad_params(imp *im, const Onnx__NodeProto *n, const so_shape *in, int64_t *pads, float *value, int32_t *mode)
{
    char buf[32];
    const char *ms = onx_att_s(n, "mode", buf, sizeof buf);
    if (!ms || strcmp(ms, "constant") == 0) *mode = 0;
    else if (strcmp(ms, "reflect") == 0) *mode = 1;
    else if (strcmp(ms, "edge") == 0) *mode = 2;
    else if (strcmp(ms, "wrap") == 0 && im->opset >= 19) *mode = 3;
    else return SO_ERR_UNSUPPORTED;
    if (in->rank < 0) return SO_ERR_UNSUPPORTED;
    int rank = in->rank, k = 0, r;
    int64_t p[2 * SO_MAX_RANK], ax[SO_MAX_RANK];
    int na = -1;
    *value = 0;
    if (im->opset < 11) {
        const int64_t *pp;
        long c = onx_att_ints(n, "pads", &pp);
        if (c < 0) return onx_node_err(im, "missing pads"), SO_ERR;
        if (c > 2 * SO_MAX_RANK) return onx_node_err(im, "%ld pads for rank %d", c, rank), SO_ERR;
        memcpy(p, pp, (size_t)c * 8);
        k = (int)c;
        *value = onx_att_f(n, "value", 0);
    } else {
        val *v = onx_inval(im, n, 1);
        if (!v) return onx_node_err(im, "missing pads input"), SO_ERR;
        if ((r = onx_const_ints(im, v, p, 2 * SO_MAX_RANK, &k, "pads")) != SO_OK) return r;
        if ((v = onx_inval(im, n, 2))) {
            if (!v->is_const) return SO_ERR_UNSUPPORTED;
            if (onx_ct_numel(&v->c) != 1) return onx_node_err(im, "constant_value must be a scalar"), SO_ERR;
            *value = (float)onx_ct_getf(&v->c, 0);
        }
        if ((v = onx_inval(im, n, 3)) && (r = onx_const_ints(im, v, ax, SO_MAX_RANK, &na, "axes")) != SO_OK) return r;
    }
    int nax = na >= 0 ? na : rank;
    if (k != 2 * nax) return onx_node_err(im, "%d pads for %d axes", k, nax), SO_ERR;
    for (int i = 0; i < 2 * rank; i++) pads[i] = 0;
    for (int i = 0; i < nax; i++) {
        int32_t a = i;
        if (na >= 0 && onx_norm_axis(im, ax[i], rank, &a) != SO_OK) return SO_ERR;
        pads[a] = p[i];
        pads[rank + a] = p[nax + i];
    }
    for (int i = 0; i < 2 * rank; i++)
        if (pads[i] < 0) return SO_ERR_UNSUPPORTED; /* cropping: keep verbatim */
    return SO_OK;
}
