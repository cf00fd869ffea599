/* ref_priv.h - private to the reference kernels (kernels/ref*.c): shape arithmetic, broadcasting, the error helper. */
#ifndef SO_REF_PRIV_H
#define SO_REF_PRIV_H

#include "ref.h"

/* Defines reference kernel so_ref_<l> as `return CALL;`, CALL an expression of g, n, in, out giving the
   so_status (the kernels of a family that differ by a constant share one body). */
#define REF_VIA(l, CALL)                                                                                                               \
    so_status so_ref_##l(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)                                    \
    {                                                                                                                                  \
        (void)g, (void)n, (void)in, (void)out;                                                                                         \
        return CALL;                                                                                                                   \
    }

/* Fails with "node 'x' (Op): <message>" (the node described from g when it is one of g's nodes). */
so_status ref_fail(const so_graph *g, const so_node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static inline size_t esz(const so_shape *s) { return s->dtype == SO_I64 ? 8 : 4; }

static inline int64_t numel(const so_shape *s)
{
    int64_t n = 1;
    for (int k = 0; k < s->rank; k++) n *= s->dim[k];
    return n;
}

static inline int one_if0(int32_t v) { return v > 0 ? v : 1; }

/* Product of dims [from, to). */
static inline int64_t prod(const so_shape *s, int from, int to)
{
    int64_t n = 1;
    for (int k = from; k < to; k++) n *= s->dim[k];
    return n;
}

/* Strides of s (contiguous, row-major) aligned right to rank r, 0 where s broadcasts. */
static inline void bstrides(const so_shape *s, int r, int64_t *st)
{
    int64_t acc = 1;
    for (int k = r - 1; k >= 0; k--) {
        int j = k - (r - s->rank);
        if (j < 0) { st[k] = 0; continue; }
        st[k] = s->dim[j] == 1 ? 0 : acc;
        acc *= s->dim[j];
    }
}

static inline void contiguous_strides(const so_shape *s, int64_t *st)
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

/* Offset into a tensor of shape p (right-aligned, broadcast) for flat index j over dims `norm` (rank nr). */
static inline int64_t bcast_off(const so_shape *p, const int64_t *norm, int nr, int64_t j)
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

static inline int64_t idiv(int64_t a, int64_t b) { return (b == 0 || (a == INT64_MIN && b == -1)) ? 0 : a / b; }
/* wrap-around integer arithmetic without signed-overflow UB */
static inline int64_t iadd(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static inline int64_t isub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static inline int64_t imul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

/* Applies the node's fused activation (attr.act) to a float output in place. */
static inline void act_out(const so_node *n, so_tensor *o)
{
    if (n->attr->act != SO_ACT_NONE && o->shape.dtype == SO_F32)
        so_ref_act(n->attr->act, n->attr->clip_min, n->attr->clip_max, (float *)o->data, numel(&o->shape));
}

#endif
