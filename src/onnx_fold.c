/* onnx_fold.c - import-time evaluator: folds helper operators whose inputs are constants (try_fold). */
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
   constant evaluator for the helper ops exporters emit
   ====================================================================== */

static int fold_unary(imp *im, const char *t, const ctensor *a, ctensor *o)
{
    int isnot = strcmp(t, "Not") == 0;
    int st = isnot ? SO_I64 : a->shape.dtype;
    if (onx_ct_new(im, o, st, isnot ? T_BOOL : a->otype, a->shape.rank, a->shape.dim) != SO_OK) return SO_ERR;
    int64_t n = onx_ct_numel(a);
    for (int64_t i = 0; i < n; i++) {
        if (onx_ct_isint(a) && st == SO_I64) {
            int64_t x = ((int64_t *)a->data)[i], y;
            if (isnot) y = !x;
            else if (!strcmp(t, "Neg")) y = (int64_t)(0 - (uint64_t)x);
            else if (!strcmp(t, "Abs")) y = x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
            else if (!strcmp(t, "Relu")) y = x < 0 ? 0 : x;
            else if (!strcmp(t, "Sign")) y = (x > 0) - (x < 0);
            else if (!strcmp(t, "Floor") || !strcmp(t, "Ceil") || !strcmp(t, "Round")) y = x;
            else return free(o->data), o->data = NULL, SO_ERR_UNSUPPORTED;
            ((int64_t *)o->data)[i] = y;
            continue;
        }
        double x = onx_ct_getf(a, i), y;
        if (isnot) { ((int64_t *)o->data)[i] = x == 0; continue; }
        if (!strcmp(t, "Neg")) y = -x;
        else if (!strcmp(t, "Abs")) y = fabs(x);
        else if (!strcmp(t, "Sqrt")) y = sqrt(x);
        else if (!strcmp(t, "Reciprocal")) y = 1.0 / x;
        else if (!strcmp(t, "Exp")) y = exp(x);
        else if (!strcmp(t, "Log")) y = log(x);
        else if (!strcmp(t, "Floor")) y = floor(x);
        else if (!strcmp(t, "Ceil")) y = ceil(x);
        else if (!strcmp(t, "Round")) y = nearbyint(x);
        else if (!strcmp(t, "Sign")) y = (x > 0) - (x < 0);
        else if (!strcmp(t, "Relu")) y = x < 0 ? 0 : x;
        else if (!strcmp(t, "Sigmoid")) y = 1.0 / (1.0 + exp(-x));
        else if (!strcmp(t, "Tanh")) y = tanh(x);
        else if (!strcmp(t, "Erf")) y = erf(x);
        else if (!strcmp(t, "Sin")) y = sin(x);
        else if (!strcmp(t, "Cos")) y = cos(x);
        else return free(o->data), o->data = NULL, SO_ERR_UNSUPPORTED;
        ((float *)o->data)[i] = (float)y;
    }
    return SO_OK;
}

int onx_is_cmp(const char *t)
{
    return !strcmp(t, "Equal") || !strcmp(t, "Less") || !strcmp(t, "Greater") || !strcmp(t, "LessOrEqual") || !strcmp(t, "GreaterOrEqual");
}

int onx_is_logic(const char *t) { return !strcmp(t, "And") || !strcmp(t, "Or") || !strcmp(t, "Xor"); }

static int is_arith(const char *t)
{
    return !strcmp(t, "Add") || !strcmp(t, "Sub") || !strcmp(t, "Mul") || !strcmp(t, "Div") || !strcmp(t, "Pow") ||
           !strcmp(t, "Mod") || !strcmp(t, "Max") || !strcmp(t, "Min") || !strcmp(t, "Sum") || !strcmp(t, "Mean");
}

static int fold_binary(imp *im, const Onnx__NodeProto *n, const ctensor *a, const ctensor *b, ctensor *o)
{
    const char *t = n->op_type;
    so_shape os;
    if (onx_bshape(&a->shape, &b->shape, &os) != 0) {
        char x[128], y[128];
        return onx_node_err(im, "shapes %s and %s do not broadcast", so_shape_str(&a->shape, x, sizeof x), so_shape_str(&b->shape, y, sizeof y)), SO_ERR;
    }
    int cmp = onx_is_cmp(t), logic = onx_is_logic(t);
    int ints = onx_ct_isint(a) && onx_ct_isint(b);
    if (!cmp && !logic && a->shape.dtype != b->shape.dtype && strcmp(t, "Pow") != 0) return SO_ERR_UNSUPPORTED;
    int st = (cmp || logic) ? SO_I64 : a->shape.dtype;
    if (onx_ct_new(im, o, st, (cmp || logic) ? T_BOOL : a->otype, os.rank, os.dim) != SO_OK) return SO_ERR;
    int fmod_attr = (int)onx_att_i(n, "fmod", 0);
    int64_t cnt = onx_ct_numel(o);
    for (int64_t i = 0; i < cnt; i++) {
        int64_t ia = onx_bcast_off(&os, &a->shape, i), ib = onx_bcast_off(&os, &b->shape, i);
        if (ints && !logic) {
            int64_t x = ((int64_t *)a->data)[ia], y = ((int64_t *)b->data)[ib], z;
            if (cmp) {
                if (!strcmp(t, "Equal")) z = x == y;
                else if (!strcmp(t, "Less")) z = x < y;
                else if (!strcmp(t, "Greater")) z = x > y;
                else if (!strcmp(t, "LessOrEqual")) z = x <= y;
                else z = x >= y;
            } else if (!strcmp(t, "Add") || !strcmp(t, "Sum")) z = (int64_t)((uint64_t)x + (uint64_t)y);
            else if (!strcmp(t, "Sub")) z = (int64_t)((uint64_t)x - (uint64_t)y);
            else if (!strcmp(t, "Mul")) z = (int64_t)((uint64_t)x * (uint64_t)y);
            else if (!strcmp(t, "Div") || !strcmp(t, "Mod")) {
                if (y == 0) return free(o->data), o->data = NULL, onx_node_err(im, "integer division by zero"), SO_ERR;
                if (x == INT64_MIN && y == -1) z = t[0] == 'D' ? INT64_MIN : 0;
                else if (t[0] == 'D') z = x / y;
                else {
                    z = x % y;
                    if (!fmod_attr && z != 0 && ((z < 0) != (y < 0))) z += y;
                }
            } else if (!strcmp(t, "Max")) z = x > y ? x : y;
            else if (!strcmp(t, "Min")) z = x < y ? x : y;
            else if (!strcmp(t, "Mean")) z = (int64_t)(((__int128)x + y) / 2);
            else z = onx_f2i(pow((double)x, (double)y));
            ((int64_t *)o->data)[i] = z;
            continue;
        }
        double x = onx_ct_getf(a, ia), y = onx_ct_getf(b, ib), z;
        if (cmp) {
            if (!strcmp(t, "Equal")) z = x == y;
            else if (!strcmp(t, "Less")) z = x < y;
            else if (!strcmp(t, "Greater")) z = x > y;
            else if (!strcmp(t, "LessOrEqual")) z = x <= y;
            else z = x >= y;
            ((int64_t *)o->data)[i] = (int64_t)z;
            continue;
        }
        if (logic) {
            int p = x != 0, q = y != 0;
            ((int64_t *)o->data)[i] = !strcmp(t, "And") ? (p && q) : !strcmp(t, "Or") ? (p || q) : (p != q);
            continue;
        }
        if (!strcmp(t, "Add") || !strcmp(t, "Sum")) z = x + y;
        else if (!strcmp(t, "Sub")) z = x - y;
        else if (!strcmp(t, "Mul")) z = x * y;
        else if (!strcmp(t, "Div")) z = x / y;
        else if (!strcmp(t, "Pow")) z = pow(x, y);
        else if (!strcmp(t, "Mod")) z = fmod(x, y);
        else if (!strcmp(t, "Max")) z = x > y ? x : y;
        else if (!strcmp(t, "Min")) z = x < y ? x : y;
        else z = (x + y) / 2;
        if (st == SO_I64) ((int64_t *)o->data)[i] = onx_f2i(z);
        else ((float *)o->data)[i] = (float)z;
    }
    return SO_OK;
}

/* Copies element i of a into element j of o (same storage). */
static void ct_copy_elem(const ctensor *a, int64_t i, ctensor *o, int64_t j)
{
    if (onx_ct_isint(a)) ((int64_t *)o->data)[j] = ((const int64_t *)a->data)[i];
    else ((float *)o->data)[j] = ((const float *)a->data)[i];
}

static int fold_where(imp *im, const ctensor *c, const ctensor *x, const ctensor *y, ctensor *o)
{
    so_shape s1, os;
    if (x->shape.dtype != y->shape.dtype) return SO_ERR_UNSUPPORTED;
    if (onx_bshape(&x->shape, &y->shape, &s1) || onx_bshape(&c->shape, &s1, &os)) return onx_node_err(im, "inputs do not broadcast"), SO_ERR;
    if (onx_ct_new(im, o, x->shape.dtype, x->otype, os.rank, os.dim) != SO_OK) return SO_ERR;
    for (int64_t i = 0, n = onx_ct_numel(o); i < n; i++) {
        int pick = onx_ct_getf(c, onx_bcast_off(&os, &c->shape, i)) != 0;
        const ctensor *s = pick ? x : y;
        ct_copy_elem(s, onx_bcast_off(&os, &s->shape, i), o, i);
    }
    return SO_OK;
}

static int fold_cast(imp *im, const Onnx__NodeProto *n, const ctensor *a, ctensor *o)
{
    int64_t to64 = onx_att_i(n, "to", 0);
    int32_t to = to64 > 0 && to64 <= INT32_MAX ? (int32_t)to64 : 0; /* not its low 32 bits */
    int st = onx_storage_of(to);
    if (!st) return SO_ERR_UNSUPPORTED;
    if (onx_ct_new(im, o, st, to, a->shape.rank, a->shape.dim) != SO_OK) return SO_ERR;
    for (int64_t i = 0, c = onx_ct_numel(a); i < c; i++) {
        if (st == SO_F32) ((float *)o->data)[i] = (float)onx_ct_getf(a, i);
        else if (to == T_BOOL) ((int64_t *)o->data)[i] = onx_ct_getf(a, i) != 0;
        else ((int64_t *)o->data)[i] = onx_wrap_int(onx_ct_geti(a, i), to);
    }
    return SO_OK;
}

/* Same data, new shape. */
static int fold_view(imp *im, const ctensor *a, const so_shape *s, ctensor *o)
{
    if (onx_ct_new(im, o, a->shape.dtype, a->otype, s->rank, s->dim) != SO_OK) return SO_ERR;
    if (onx_ct_numel(o) != onx_ct_numel(a)) return free(o->data), o->data = NULL, onx_node_err(im, "reshape changes the element count"), SO_ERR;
    memcpy(o->data, a->data, (size_t)onx_ct_numel(a) * (onx_ct_isint(a) ? 8 : 4));
    return SO_OK;
}

static int fold_transpose(imp *im, const ctensor *a, const int64_t *perm, ctensor *o)
{
    int64_t d[SO_MAX_RANK], ist[SO_MAX_RANK];
    int r = a->shape.rank;
    for (int i = 0; i < r; i++) d[i] = a->shape.dim[perm[i]];
    if (onx_ct_new(im, o, a->shape.dtype, a->otype, r, d) != SO_OK) return SO_ERR;
    int64_t acc = 1;
    for (int i = r - 1; i >= 0; i--) ist[i] = acc, acc *= a->shape.dim[i];
    for (int64_t j = 0, n = onx_ct_numel(o); j < n; j++) {
        int64_t rem = j, off = 0;
        for (int k = r - 1; k >= 0; k--) {
            off += (rem % d[k]) * ist[perm[k]];
            rem /= d[k];
        }
        ct_copy_elem(a, off, o, j);
    }
    return SO_OK;
}

/* Generic strided gather: out coordinate -> input offset via per-axis maps. */
static int fold_slice(imp *im, const ctensor *a, const int64_t *q, int nq, const so_shape *os, ctensor *o)
{
    int r = a->shape.rank;
    int64_t start[SO_MAX_RANK] = {0}, step[SO_MAX_RANK], ist[SO_MAX_RANK];
    for (int i = 0; i < r; i++) step[i] = 1;
    for (int i = 0; i < nq; i++) start[q[4 * i]] = q[4 * i + 1], step[q[4 * i]] = q[4 * i + 3];
    if (onx_ct_new(im, o, a->shape.dtype, a->otype, r, os->dim) != SO_OK) return SO_ERR;
    int64_t acc = 1;
    for (int i = r - 1; i >= 0; i--) ist[i] = acc, acc *= a->shape.dim[i];
    for (int64_t j = 0, n = onx_ct_numel(o); j < n; j++) {
        int64_t rem = j, off = 0;
        for (int k = r - 1; k >= 0; k--) {
            off += (start[k] + (rem % os->dim[k]) * step[k]) * ist[k];
            rem /= os->dim[k];
        }
        ct_copy_elem(a, off, o, j);
    }
    return SO_OK;
}

static int fold_gather(imp *im, const ctensor *a, const ctensor *idx, int32_t axis, ctensor *o)
{
    int64_t d[SO_MAX_RANK];
    int r = 0;
    if (a->shape.rank - 1 + idx->shape.rank > SO_MAX_RANK) return SO_ERR_UNSUPPORTED;
    for (int i = 0; i < axis; i++) d[r++] = a->shape.dim[i];
    for (int i = 0; i < idx->shape.rank; i++) d[r++] = idx->shape.dim[i];
    for (int i = axis + 1; i < a->shape.rank; i++) d[r++] = a->shape.dim[i];
    if (onx_ct_new(im, o, a->shape.dtype, a->otype, r, d) != SO_OK) return SO_ERR;
    int64_t outer = 1, inner = 1, dim = a->shape.dim[axis], ni = onx_ct_numel(idx);
    for (int i = 0; i < axis; i++) outer *= a->shape.dim[i];
    for (int i = axis + 1; i < a->shape.rank; i++) inner *= a->shape.dim[i];
    int64_t j = 0;
    for (int64_t ou = 0; ou < outer; ou++)
        for (int64_t k = 0; k < ni; k++) {
            int64_t ix = onx_ct_geti(idx, k);
            if (ix < 0) ix += dim;
            if (ix < 0 || ix >= dim) {
                free(o->data);
                o->data = NULL;
                return onx_node_err(im, "index %lld out of range for dimension %lld", (long long)onx_ct_geti(idx, k), (long long)dim), SO_ERR;
            }
            for (int64_t in = 0; in < inner; in++) ct_copy_elem(a, (ou * dim + ix) * inner + in, o, j++);
        }
    return SO_OK;
}

static int fold_concat(imp *im, val **ins, size_t n_in, int32_t axis, ctensor *o)
{
    const ctensor *a = &ins[0]->c;
    int64_t d[SO_MAX_RANK];
    int r = a->shape.rank;
    for (int i = 0; i < r; i++) d[i] = a->shape.dim[i];
    d[axis] = 0;
    for (size_t k = 0; k < n_in; k++) {
        const ctensor *b = &ins[k]->c;
        if (b->shape.rank != r || b->shape.dtype != a->shape.dtype) return SO_ERR_UNSUPPORTED;
        for (int i = 0; i < r; i++)
            if (i != axis && b->shape.dim[i] != a->shape.dim[i]) return onx_node_err(im, "inputs differ in dimension %d", i), SO_ERR;
        d[axis] += b->shape.dim[axis];
    }
    if (onx_ct_new(im, o, a->shape.dtype, a->otype, r, d) != SO_OK) return SO_ERR;
    int64_t outer = 1, inner = 1, j = 0;
    for (int i = 0; i < axis; i++) outer *= d[i];
    for (int i = axis + 1; i < r; i++) inner *= d[i];
    for (int64_t ou = 0; ou < outer; ou++)
        for (size_t k = 0; k < n_in; k++) {
            const ctensor *b = &ins[k]->c;
            int64_t blk = b->shape.dim[axis] * inner;
            for (int64_t e = 0; e < blk; e++) ct_copy_elem(b, ou * blk + e, o, j++);
        }
    return SO_OK;
}

static int fold_expand(imp *im, const ctensor *a, const so_shape *os, ctensor *o)
{
    if (onx_ct_new(im, o, a->shape.dtype, a->otype, os->rank, os->dim) != SO_OK) return SO_ERR;
    for (int64_t j = 0, n = onx_ct_numel(o); j < n; j++) ct_copy_elem(a, onx_bcast_off(os, &a->shape, j), o, j);
    return SO_OK;
}

static int fold_tile(imp *im, const ctensor *a, const int64_t *rep, ctensor *o)
{
    int r = a->shape.rank;
    int64_t d[SO_MAX_RANK], ist[SO_MAX_RANK];
    for (int i = 0; i < r; i++) {
        if (rep[i] < 0) return onx_node_err(im, "negative repeat"), SO_ERR;
        if (so_i64_mul(a->shape.dim[i], rep[i], &d[i])) return onx_node_err(im, "tile size overflows"), SO_ERR;
    }
    if (onx_ct_new(im, o, a->shape.dtype, a->otype, r, d) != SO_OK) return SO_ERR;
    int64_t acc = 1;
    for (int i = r - 1; i >= 0; i--) ist[i] = acc, acc *= a->shape.dim[i];
    for (int64_t j = 0, n = onx_ct_numel(o); j < n; j++) {
        int64_t rem = j, off = 0;
        for (int k = r - 1; k >= 0; k--) {
            off += ((rem % d[k]) % a->shape.dim[k]) * ist[k];
            rem /= d[k];
        }
        ct_copy_elem(a, off, o, j);
    }
    return SO_OK;
}

static int fold_reduce(imp *im, const char *t, const ctensor *a, const int64_t *axes, int na, int keep, ctensor *o)
{
    int r = a->shape.rank, red[SO_MAX_RANK] = {0};
    int64_t d[SO_MAX_RANK], od[SO_MAX_RANK];
    int orank = 0;
    for (int i = 0; i < na; i++) red[axes[i]] = 1;
    for (int i = 0; i < r; i++) {
        d[i] = red[i] ? 1 : a->shape.dim[i];
        if (!red[i] || keep) od[orank++] = d[i];
    }
    if (onx_ct_new(im, o, a->shape.dtype, a->otype, orank, od) != SO_OK) return SO_ERR;
    int64_t n_out = onx_ct_numel(o), n_in = onx_ct_numel(a);
    double *acc = so_xcalloc((size_t)(n_out ? n_out : 1), sizeof *acc);
    int64_t *cnt = so_xcalloc((size_t)(n_out ? n_out : 1), sizeof *cnt);
    for (int64_t i = 0; i < n_in; i++) {
        int64_t rem = i, off = 0, mul = 1;
        for (int k = r - 1; k >= 0; k--) {
            int64_t c = rem % a->shape.dim[k];
            rem /= a->shape.dim[k];
            if (!red[k]) off += c * mul;
            mul *= d[k];
        }
        double x = onx_ct_getf(a, i);
        if (cnt[off] == 0) acc[off] = x;
        else if (!strcmp(t, "ReduceSum") || !strcmp(t, "ReduceMean")) acc[off] += x;
        else if (!strcmp(t, "ReduceProd")) acc[off] *= x;
        else if (!strcmp(t, "ReduceMax")) acc[off] = x > acc[off] ? x : acc[off];
        else acc[off] = x < acc[off] ? x : acc[off];
        cnt[off]++;
    }
    for (int64_t j = 0; j < n_out; j++) {
        double v = acc[j];
        if (cnt[j] == 0) v = !strcmp(t, "ReduceProd") ? 1 : 0;
        if (!strcmp(t, "ReduceMean") && cnt[j]) v /= (double)cnt[j];
        if (onx_ct_isint(o)) ((int64_t *)o->data)[j] = onx_f2i(v);
        else ((float *)o->data)[j] = (float)v;
    }
    free(acc);
    free(cnt);
    return SO_OK;
}

/* MelWeightMatrix (opset 17) of constant scalars num_mel_bins, dft_length, sample_rate, lower and upper edge
   (Hz): [dft_length/2 + 1, num_mel_bins] triangular filters, as ONNX's reference computes them: num_mel_bins + 2
   points evenly spaced on the mel scale (2595 log10(1 + f/700)) from the lower edge in steps of
   (high - low) / (num_mel_bins + 2), back to Hz, to bins floor((dft_length + 1) f / sample_rate); filter i
   rises linearly from point i to point i+1 (1 at i+1; a single 1 when they coincide), then falls to point i+2.
   float32 output only (other output_datatypes kept verbatim). */
static int fold_melweightmatrix(imp *im, const Onnx__NodeProto *n, val **ins, ctensor *o)
{
    for (int k = 0; k < 5; k++)
        if (onx_ct_numel(&ins[k]->c) != 1) return onx_node_err(im, "input %d must be a scalar", k), SO_ERR;
    if (onx_att_i(n, "output_datatype", T_FLOAT) != T_FLOAT) return SO_ERR_UNSUPPORTED;
    const int64_t mels = onx_ct_geti(&ins[0]->c, 0), dft = onx_ct_geti(&ins[1]->c, 0), rate = onx_ct_geti(&ins[2]->c, 0);
    const double lo = onx_ct_getf(&ins[3]->c, 0), hi = onx_ct_getf(&ins[4]->c, 0);
    if (mels < 1 || mels > 1 << 16 || dft < 1 || dft > 1 << 24 || rate < 1 || !(lo >= 0) || !(hi >= lo) || !(hi < 1e9))
        return onx_node_err(im, "invalid num_mel_bins %lld, dft_length %lld, sample_rate %lld or edges %g..%g Hz", (long long)mels,
                            (long long)dft, (long long)rate, lo, hi),
               SO_ERR;
    const int64_t bins = dft / 2 + 1, od[2] = {bins, mels};
    if (onx_ct_new(im, o, SO_F32, T_FLOAT, 2, od) != SO_OK) return SO_ERR;
    int64_t *pt = so_xmalloc((size_t)(mels + 2) * sizeof *pt);
    const double mlo = 2595.0 * log10(1.0 + lo / 700.0), mhi = 2595.0 * log10(1.0 + hi / 700.0);
    const double step = (mhi - mlo) / (double)(mels + 2);
    for (int64_t i = 0; i < mels + 2; i++) {
        const double hz = 700.0 * (pow(10.0, ((double)i * step + mlo) / 2595.0) - 1.0);
        pt[i] = (int64_t)floor((double)(dft + 1) * hz / (double)rate);
    }
    float *w = o->data;
    int r = SO_OK;
    for (int64_t i = 0; i < mels && r == SO_OK; i++) {
        const int64_t l = pt[i], c = pt[i + 1], h = pt[i + 2];
        if (l < 0 || h >= bins) r = onx_node_err(im, "the upper edge %g Hz is above the Nyquist bin of dft_length %lld", hi, (long long)dft);
        for (int64_t j = l; r == SO_OK && j <= c; j++) w[j * mels + i] = c == l ? 1.0f : (float)((double)(j - l) / (double)(c - l));
        for (int64_t j = c; r == SO_OK && j < h; j++) w[j * mels + i] = (float)((double)(h - j) / (double)(h - c));
    }
    free(pt);
    return r; /* the caller frees o on error */
}

/* Tries to evaluate node n at import time. SO_ERR_UNSUPPORTED means "not folded" (not an error). */
int onx_try_fold(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in)
{
    const char *t = n->op_type;
    ctensor o;
    memset(&o, 0, sizeof o);
    int r = SO_ERR_UNSUPPORTED;
    if (!strcmp(t, "Shape") || !strcmp(t, "Size")) {
        if (!ins[0]) return SO_ERR_UNSUPPORTED;
        so_shape s = onx_vshape(im, ins[0]);
        if (s.rank < 0) return SO_ERR_UNSUPPORTED;
        if (t[1] == 'i') {
            if (onx_ct_new(im, &o, SO_I64, T_INT64, 0, NULL) != SO_OK) return SO_ERR;
            ((int64_t *)o.data)[0] = so_shape_numel(&s);
        } else {
            int64_t st = onx_att_i(n, "start", 0), en = onx_att_i(n, "end", s.rank);
            if (st < 0) st += s.rank;
            if (en < 0) en += s.rank;
            st = st < 0 ? 0 : st > s.rank ? s.rank : st;
            en = en < 0 ? 0 : en > s.rank ? s.rank : en;
            int64_t len = en > st ? en - st : 0;
            if (onx_ct_new(im, &o, SO_I64, T_INT64, 1, &len) != SO_OK) return SO_ERR;
            for (int64_t i = 0; i < len; i++) ((int64_t *)o.data)[i] = s.dim[st + i];
        }
        onx_bind_const(im, n->output[0], &o);
        return SO_OK;
    }
    if (!strcmp(t, "EyeLike") && n_in == 1 && ins[0]) { /* needs the input's shape only */
        so_shape s = onx_vshape(im, ins[0]);
        if (s.rank != 2) return SO_ERR_UNSUPPORTED;
        int32_t ot = (int32_t)onx_att_i(n, "dtype", s.dtype == SO_I64 && ins[0]->is_const ? ins[0]->c.otype : s.dtype);
        int st = onx_storage_of(ot);
        if (!st) return onx_node_err(im, "unsupported dtype %d", (int)ot), SO_ERR;
        int64_t k = onx_att_i(n, "k", 0);
        if (onx_ct_new(im, &o, st, ot, 2, s.dim) != SO_OK) return SO_ERR;
        for (int64_t i = 0; i < s.dim[0]; i++)
            if (i + k >= 0 && i + k < s.dim[1]) {
                if (st == SO_I64) ((int64_t *)o.data)[i * s.dim[1] + i + k] = 1;
                else ((float *)o.data)[i * s.dim[1] + i + k] = 1.0f;
            }
        onx_bind_const(im, n->output[0], &o);
        return SO_OK;
    }
    for (size_t k = 0; k < n_in; k++)
        if (ins[k] && !ins[k]->is_const) return SO_ERR_UNSUPPORTED;
    if (n_in == 0 || !ins[0]) {
        if (strcmp(t, "ConstantOfShape") != 0 || n_in == 0) return SO_ERR_UNSUPPORTED;
    }
    const ctensor *a = ins[0] ? &ins[0]->c : NULL;
    /* An element-wise operator of the table (ops.def) on float32 constants is not evaluated here:
       the importer adds it as a node and folds it with the reference kernels through the table
       (emit -> so_node_eval). What stays here is the integer and boolean arithmetic of shape
       chains and the ONNX operators the table does not have (Cast, Where, Range, ...). */
    so_op top = so_op_from_onnx(t);
    if (top != SO_OP_OPAQUE && (so_ops[top].flags & (SO_F_UNARY | SO_F_BINARY))) {
        int all_float = 1;
        for (size_t k = 0; k < n_in; k++)
            if (ins[k] && (onx_ct_isint(&ins[k]->c) || ins[k]->c.otype != T_FLOAT)) all_float = 0;
        if (all_float) return SO_ERR_UNSUPPORTED;
    }
    if (!strcmp(t, "Cast")) {
        r = fold_cast(im, n, a, &o);
    } else if ((is_arith(t) || onx_is_cmp(t) || onx_is_logic(t)) && n_in == 2 && ins[1]) {
        r = fold_binary(im, n, a, &ins[1]->c, &o);
    } else if ((!strcmp(t, "Max") || !strcmp(t, "Min") || !strcmp(t, "Sum") || !strcmp(t, "Mean")) && n_in == 1) {
        r = fold_view(im, a, &a->shape, &o);
    } else if (!strcmp(t, "Where") && n_in == 3 && ins[1] && ins[2]) {
        r = fold_where(im, a, &ins[1]->c, &ins[2]->c, &o);
    } else if (n_in == 1 && (!strcmp(t, "Neg") || !strcmp(t, "Abs") || !strcmp(t, "Sqrt") || !strcmp(t, "Reciprocal") ||
                             !strcmp(t, "Exp") || !strcmp(t, "Log") || !strcmp(t, "Floor") || !strcmp(t, "Ceil") ||
                             !strcmp(t, "Round") || !strcmp(t, "Sign") || !strcmp(t, "Not") || !strcmp(t, "Relu") ||
                             !strcmp(t, "Sigmoid") || !strcmp(t, "Tanh") || !strcmp(t, "Erf") || !strcmp(t, "Sin") ||
                             !strcmp(t, "Cos"))) {
        r = fold_unary(im, t, a, &o);
    } else if (!strcmp(t, "Reshape")) {
        so_shape s;
        if ((r = onx_reshape_target(im, n, &a->shape, onx_inval(im, n, 1), &s)) == SO_OK) r = fold_view(im, a, &s, &o);
    } else if (!strcmp(t, "Flatten")) {
        int32_t ax;
        int64_t d[2] = {1, 1};
        int64_t axv = onx_att_i(n, "axis", 1);
        if (axv < 0) axv += a->shape.rank;
        if (axv < 0 || axv > a->shape.rank) return onx_node_err(im, "axis out of range"), SO_ERR;
        ax = (int32_t)axv;
        for (int i = 0; i < a->shape.rank; i++) d[i < ax ? 0 : 1] *= a->shape.dim[i];
        so_shape s = so_shape_make(2, d);
        r = fold_view(im, a, &s, &o);
    } else if (!strcmp(t, "Squeeze") || !strcmp(t, "Unsqueeze")) {
        int64_t ax[SO_MAX_RANK];
        int na, present, un = t[0] == 'U';
        if ((r = onx_get_axes(im, n, im->opset >= 13, ax, &na, &present)) != SO_OK) return r;
        so_shape s = a->shape;
        if (un) {
            int orank = a->shape.rank + na, k = 0;
            if (!present) return onx_node_err(im, "missing axes"), SO_ERR;
            if (orank > SO_MAX_RANK) return SO_ERR_UNSUPPORTED;
            if (onx_norm_axes(im, ax, na, orank) != SO_OK) return SO_ERR;
            s.rank = orank;
            for (int i = 0, j = 0; i < orank; i++) s.dim[i] = (k < na && ax[k] == i) ? (k++, 1) : a->shape.dim[j++];
        } else {
            if (!present) {
                na = 0;
                for (int i = 0; i < a->shape.rank; i++)
                    if (a->shape.dim[i] == 1) ax[na++] = i;
            } else if (onx_norm_axes(im, ax, na, a->shape.rank) != SO_OK) return SO_ERR;
            s.rank = 0;
            for (int i = 0, k = 0; i < a->shape.rank; i++) {
                if (k < na && ax[k] == i) {
                    if (a->shape.dim[i] != 1) return onx_node_err(im, "cannot squeeze axis %d of size %lld", i, (long long)a->shape.dim[i]), SO_ERR;
                    k++;
                    continue;
                }
                s.dim[s.rank++] = a->shape.dim[i];
            }
        }
        r = fold_view(im, a, &s, &o);
    } else if (!strcmp(t, "Concat")) {
        int32_t ax;
        for (size_t k = 0; k < n_in; k++)
            if (!ins[k]) return SO_ERR_UNSUPPORTED;
        if (onx_norm_axis(im, onx_att_i(n, "axis", 0), a->shape.rank, &ax) != SO_OK) return SO_ERR;
        r = fold_concat(im, ins, n_in, ax, &o);
    } else if (!strcmp(t, "Gather") && n_in == 2 && ins[1]) {
        int32_t ax;
        if (onx_norm_axis(im, onx_att_i(n, "axis", 0), a->shape.rank, &ax) != SO_OK) return SO_ERR;
        r = fold_gather(im, a, &ins[1]->c, ax, &o);
    } else if (!strcmp(t, "Slice")) {
        int64_t q[SO_MAX_INTS];
        int nq;
        so_shape os;
        if ((r = onx_slice_quads(im, n, &a->shape, q, &nq, &os)) == SO_OK) r = fold_slice(im, a, q, nq, &os, &o);
    } else if (!strcmp(t, "Transpose")) {
        int64_t perm[SO_MAX_RANK];
        const int64_t *p;
        long k = onx_att_ints(n, "perm", &p);
        int rank = a->shape.rank, seen[SO_MAX_RANK] = {0};
        if (k >= 0 && k != rank) return onx_node_err(im, "perm has %ld entries for rank %d", k, rank), SO_ERR;
        for (int i = 0; i < rank; i++) {
            perm[i] = k >= 0 ? p[i] : rank - 1 - i;
            if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]]++) return onx_node_err(im, "perm is not a permutation"), SO_ERR;
        }
        r = fold_transpose(im, a, perm, &o);
    } else if (!strcmp(t, "Expand") && n_in == 2 && ins[1]) {
        int64_t d[SO_MAX_RANK];
        int k;
        so_shape s, os;
        if ((r = onx_const_ints(im, ins[1], d, SO_MAX_RANK, &k, "shape")) != SO_OK) return r;
        s = so_shape_make(k, d);
        if (onx_bshape(&a->shape, &s, &os)) return onx_node_err(im, "cannot expand to the given shape"), SO_ERR;
        r = fold_expand(im, a, &os, &o);
    } else if (!strcmp(t, "Tile") && n_in == 2 && ins[1]) {
        int64_t d[SO_MAX_RANK];
        int k;
        if ((r = onx_const_ints(im, ins[1], d, SO_MAX_RANK, &k, "repeats")) != SO_OK) return r;
        if (k != a->shape.rank) return onx_node_err(im, "repeats has %d entries for rank %d", k, a->shape.rank), SO_ERR;
        r = fold_tile(im, a, d, &o);
    } else if (!strcmp(t, "OneHot") && n_in == 3 && ins[1] && ins[2]) {
        /* indices (any integer), depth (scalar), values [off, on]; axis (default -1) of the output */
        const ctensor *dp = &ins[1]->c, *vals = &ins[2]->c;
        if (onx_ct_numel(dp) != 1 || onx_ct_numel(vals) != 2) return onx_node_err(im, "depth must be a scalar and values have 2 elements"), SO_ERR;
        int64_t depth = (int64_t)onx_ct_getf(dp, 0), rank = a->shape.rank + 1, axis = onx_att_i(n, "axis", -1);
        if (depth < 1 || depth > (int64_t)1 << 24) return onx_node_err(im, "invalid depth %lld", (long long)depth), SO_ERR;
        if (axis < 0) axis += rank;
        if (axis < 0 || axis >= rank || rank > SO_MAX_RANK) return onx_node_err(im, "axis out of range"), SO_ERR;
        int64_t od[SO_MAX_RANK];
        for (int64_t d = 0, j = 0; d < rank; d++) od[d] = d == axis ? depth : a->shape.dim[j++];
        if (onx_ct_new(im, &o, vals->shape.dtype, vals->otype, (int)rank, od) != SO_OK) return SO_ERR;
        int64_t outer = 1, inner = 1;
        for (int64_t d = 0; d < axis; d++) outer *= od[d];
        for (int64_t d = axis + 1; d < rank; d++) inner *= od[d];
        for (int64_t p = 0; p < outer; p++)
            for (int64_t c = 0; c < depth; c++)
                for (int64_t q = 0; q < inner; q++) {
                    int64_t ix = (int64_t)onx_ct_getf(a, p * inner + q);
                    if (ix < 0) ix += depth;
                    ct_copy_elem(vals, ix == c ? 1 : 0, &o, (p * depth + c) * inner + q);
                }
        r = SO_OK;
    } else if (!strcmp(t, "NonZero") && n_in == 1) {
        /* indices of the non-zero elements of a constant, [rank, count] int64 in row-major order */
        int64_t cnt = 0, nel = onx_ct_numel(a), od[2];
        for (int64_t i = 0; i < nel; i++) cnt += onx_ct_getf(a, i) != 0;
        if (cnt == 0 || a->shape.rank == 0)
            return onx_node_err(im, "a constant %s gives a zero-size output", cnt ? "scalar" : "without a non-zero element"), SO_ERR;
        od[0] = a->shape.rank, od[1] = cnt;
        if (onx_ct_new(im, &o, SO_I64, T_INT64, 2, od) != SO_OK) return SO_ERR;
        for (int64_t i = 0, j = 0; i < nel; i++) {
            if (onx_ct_getf(a, i) == 0) continue;
            for (int64_t d = a->shape.rank - 1, rem = i; d >= 0; d--) {
                ((int64_t *)o.data)[d * cnt + j] = rem % a->shape.dim[d];
                rem /= a->shape.dim[d];
            }
            j++;
        }
        r = SO_OK;
    } else if (!strcmp(t, "ConstantOfShape")) {
        int64_t d[SO_MAX_RANK];
        int k;
        if ((r = onx_const_ints(im, ins[0], d, SO_MAX_RANK, &k, "shape")) != SO_OK) return r;
        const Onnx__AttributeProto *va = onx_att(n, "value");
        ctensor v;
        memset(&v, 0, sizeof v);
        if (va && va->t) {
            char what[700];
            snprintf(what, sizeof what, "%s: attribute 'value'", im->desc);
            if (onx_tensor_from_proto(im, va->t, what, &v) != SO_OK) return SO_ERR;
            if (onx_ct_numel(&v) != 1) return free(v.data), onx_node_err(im, "value must have one element"), SO_ERR;
        }
        if (onx_ct_new(im, &o, v.data ? v.shape.dtype : SO_F32, v.data ? v.otype : T_FLOAT, k, d) != SO_OK) return free(v.data), SO_ERR;
        for (int64_t i = 0, c = onx_ct_numel(&o); i < c && v.data; i++) ct_copy_elem(&v, 0, &o, i);
        free(v.data);
        r = SO_OK;
    } else if (!strcmp(t, "HannWindow") || !strcmp(t, "HammingWindow") || !strcmp(t, "BlackmanWindow")) {
        /* window functions of a constant size (opset 17): w[i] = sum_k (-1)^k c_k cos(2 pi k i / N),
           N = size (periodic) or size - 1 (symmetric); float32 output (other output_datatypes kept verbatim) */
        if (onx_ct_numel(a) != 1) return onx_node_err(im, "size must be a scalar"), SO_ERR;
        int64_t len = onx_ct_geti(a, 0);
        if (len < 1 || len > (int64_t)1 << 24) return onx_node_err(im, "invalid window size %lld", (long long)len), SO_ERR;
        if (onx_att_i(n, "output_datatype", T_FLOAT) != T_FLOAT) return SO_ERR_UNSUPPORTED;
        const double pi = 3.14159265358979323846;
        double c[3] = {0.5, 0.5, 0}; /* Hann */
        if (t[0] == 'H' && t[2] == 'm') c[0] = 25.0 / 46.0, c[1] = 21.0 / 46.0; /* Hamming */
        if (t[0] == 'B') c[0] = 0.42, c[1] = 0.5, c[2] = 0.08;                  /* Blackman */
        double N = (double)(onx_att_i(n, "periodic", 1) ? len : len - 1);
        if (onx_ct_new(im, &o, SO_F32, T_FLOAT, 1, &len) != SO_OK) return SO_ERR;
        for (int64_t i = 0; i < len; i++) {
            double ph = N > 0 ? 2.0 * pi * (double)i / N : 0.0;
            ((float *)o.data)[i] = (float)(c[0] - c[1] * cos(ph) + c[2] * cos(2.0 * ph));
        }
        r = SO_OK;
    } else if (!strcmp(t, "MelWeightMatrix") && n_in == 5 && ins[1] && ins[2] && ins[3] && ins[4]) {
        r = fold_melweightmatrix(im, n, ins, &o);
    } else if (!strcmp(t, "Range") && n_in == 3 && ins[1] && ins[2]) {
        const ctensor *l = &ins[1]->c, *dl = &ins[2]->c;
        if (onx_ct_numel(a) != 1 || onx_ct_numel(l) != 1 || onx_ct_numel(dl) != 1) return onx_node_err(im, "inputs must be scalars"), SO_ERR;
        double s0 = onx_ct_getf(a, 0), s1 = onx_ct_getf(l, 0), d = onx_ct_getf(dl, 0);
        if (d == 0) return onx_node_err(im, "delta is 0"), SO_ERR;
        double cnt = ceil((s1 - s0) / d);
        if (cnt > 1e12) return onx_node_err(im, "range too long"), SO_ERR; /* before the cast (fuzz finding) */
        int64_t len = cnt > 0 ? (int64_t)cnt : 0;
        if (onx_ct_new(im, &o, a->shape.dtype, a->otype, 1, &len) != SO_OK) return SO_ERR;
        for (int64_t i = 0; i < len; i++) {
            if (onx_ct_isint(a)) /* wraps instead of overflowing for extreme start/delta */
                ((int64_t *)o.data)[i] = (int64_t)((uint64_t)onx_ct_geti(a, 0) + (uint64_t)i * (uint64_t)onx_ct_geti(dl, 0));
            else ((float *)o.data)[i] = (float)(s0 + (double)i * d);
        }
        r = SO_OK;
    } else if (!strncmp(t, "Reduce", 6) && (!strcmp(t + 6, "Sum") || !strcmp(t + 6, "Mean") || !strcmp(t + 6, "Prod") ||
                                            !strcmp(t + 6, "Max") || !strcmp(t + 6, "Min"))) {
        int64_t ax[SO_MAX_RANK];
        int na, present;
        int from_input = !strcmp(t, "ReduceSum") ? im->opset >= 13 : im->opset >= 18;
        if ((r = onx_get_axes(im, n, from_input, ax, &na, &present)) != SO_OK) return r;
        if (!present || na == 0) {
            if (onx_att_i(n, "noop_with_empty_axes", 0)) return fold_view(im, a, &a->shape, &o) == SO_OK ? (onx_bind_const(im, n->output[0], &o), SO_OK) : SO_ERR;
            na = a->shape.rank;
            for (int i = 0; i < na; i++) ax[i] = i;
        } else if (onx_norm_axes(im, ax, na, a->shape.rank) != SO_OK) return SO_ERR;
        r = fold_reduce(im, t, a, ax, na, (int)onx_att_i(n, "keepdims", 1), &o);
    } else if (!strcmp(t, "Clip")) {
        double lo = -INFINITY, hi = INFINITY;
        if (im->opset < 11) {
            lo = onx_att_f(n, "min", -FLT_MAX);
            hi = onx_att_f(n, "max", FLT_MAX);
        } else {
            if (n_in > 1 && ins[1]) lo = onx_ct_getf(&ins[1]->c, 0);
            if (n_in > 2 && ins[2]) hi = onx_ct_getf(&ins[2]->c, 0);
        }
        if (onx_ct_new(im, &o, a->shape.dtype, a->otype, a->shape.rank, a->shape.dim) != SO_OK) return SO_ERR;
        for (int64_t i = 0, c = onx_ct_numel(a); i < c; i++) {
            double x = onx_ct_getf(a, i);
            x = x < lo ? lo : x > hi ? hi : x;
            if (onx_ct_isint(a)) ((int64_t *)o.data)[i] = onx_f2i(x);
            else ((float *)o.data)[i] = (float)x;
        }
        r = SO_OK;
    } else if (!strcmp(t, "Split")) {
        int32_t ax;
        int64_t sz[SO_MAX_INTS];
        int k;
        if ((r = onx_split_sizes(im, n, &a->shape, &ax, sz, &k)) != SO_OK) return r;
        int64_t off = 0;
        for (int i = 0; i < k; i++) {
            int64_t q[4] = {ax, off, off + sz[i], 1};
            so_shape os = a->shape;
            os.dim[ax] = sz[i];
            if (fold_slice(im, a, q, 1, &os, &o) != SO_OK) return SO_ERR;
            if (n->output[i][0]) onx_bind_const(im, n->output[i], &o);
            else free(o.data);
            memset(&o, 0, sizeof o);
            off += sz[i];
        }
        return SO_OK;
    } else {
        return SO_ERR_UNSUPPORTED;
    }
    if (r != SO_OK) {
        free(o.data);
        return r;
    }
    onx_bind_const(im, n->output[0], &o);
    return SO_OK;
}
