/* shape.h - shape inference per operator (expands ops.def), with errors for shapes that do not fit. */
#ifndef SO_SHAPE_H
#define SO_SHAPE_H

#include "graph.h"

/* Computes g->nodes[i].out[*] from its input shapes and attributes. Inputs with
   unknown shape (rank -1) give unknown outputs. On a misfit, the error names the
   node, the op and both shapes. INPUT/WEIGHT/OPAQUE: copies from the model. */
so_status so_shape_infer(so_graph *g, int32_t i);

/* numpy broadcast of two shapes; error if incompatible. */
so_status so_shape_broadcast(const so_shape *a, const so_shape *b, so_shape *out);

/* ---- the dim algebra: shape rules stated once over what a dimension is ----
   A shape rule written against so_dim_alg holds for concrete dims (int64_t, so_dim_int64) and for
   the rule language's symbolic dims (rules/rule.h so_dimx: a constant plus a sum of symbols, rules/rule.c
   dim_sym), so the importer's shapes (shape_<op> below) and the rule checker (rule.c sym_<op>) apply the
   same statement: so_dims_<family> further down. An instance over solver terms would let eq record
   a == b as a side condition and answer 1 (verifier/encode.c does not use the algebra yet). */
typedef struct so_dim_alg {
    size_t size;                             /* bytes of one dimension value */
    const void *one;                         /* the dimension 1 */
    const void *cx;                          /* the instance's context, handed to eq and print (rule.c: the rule) */
    int (*is_one)(const void *d);            /* d is the dimension 1 */
    int (*eq)(const void *cx, const void *a, const void *b); /* a and b are the same dimension (provably, for symbols) */
    int (*add)(const void *a, const void *b, void *out);       /* a + b; 0 if it overflows / is not representable */
    int (*mul)(const void *a, int64_t k, void *out);           /* a * k (k >= 1); 0 likewise */
    int (*div)(const void *a, int64_t k, int round_up, void *out); /* floor or ceil of a / k (k >= 1); 0 if not a dim
                                                                       of the instance (symbols: only exact quotients) */
    int (*as_const)(const void *d, int64_t *v); /* 1 and *v if d is a known number */
    int (*of_const)(int64_t v, void *out);      /* the dim v; 0 if out of the instance's range */
    /* one plane dim of a sliding window (so_window_out's arguments) over h; 0 if it does not fit */
    int (*window)(const void *h, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, int ceil_mode, void *out);
    void (*print)(const void *cx, const void *d, char *buf, size_t n); /* d as text, as shapes print */
} so_dim_alg;
extern const so_dim_alg so_dim_int64;
/* numpy broadcasting of dims a[0..ra) with b[0..rb) (right-aligned; a missing dim is 1) into
   out[0..max(ra, rb)): a dim 1 takes the other, equal dims stay. Returns the output rank, or
   -1 - k when output axis k does not broadcast (out partly written). */
int so_dim_broadcast(const so_dim_alg *A, const void *a, int ra, const void *b, int rb, void *out);

/* A shape in an algebra: rank dims of A->size bytes at dim (an output's dim has room for SO_MAX_RANK). */
typedef struct so_dims {
    int32_t rank;
    void *dim;
} so_dims;
/* "[d0,d1,...]" as so_shape_str prints ("[?]" for rank < 0); returns buf. */
char *so_dims_str(const so_dim_alg *A, const so_dims *s, char *buf, size_t n);

/* The per-operator shape rules over the algebra, the one statement each of shape_<op> (concrete) and
   sym_<op> (rules) calls: each writes o (o->dim set by the caller) or fails with a one-line message
   (so_errorf; the caller prefixes the node) naming the shapes. Dtypes are the concrete caller's. */
so_status so_dims_same(const so_dim_alg *A, const so_dims *x, so_dims *o);                 /* element-wise unary */
so_status so_dims_bcast(const so_dim_alg *A, const so_dims *x, const so_dims *y, so_dims *o); /* element-wise binary */
so_status so_dims_softmax(const so_dim_alg *A, int axis, const so_dims *x, so_dims *o);     /* axis in range, same shape */
so_status so_dims_globalpool(const so_dim_alg *A, const so_dims *x, so_dims *o);           /* [N,C,1,...] */
/* batchnorm(x [N,C,...], p[0..3] = scale, B, mean, var each [C]) */
so_status so_dims_batchnorm(const so_dim_alg *A, const so_dims *x, const so_dims *p, so_dims *o);
/* bnfold_w(w [O,...], scale [O], var [O]); bnfold_b(in[0..n) each [O] like in[0], NULL = absent) */
so_status so_dims_bnfold_w(const so_dim_alg *A, const so_dims *w, const so_dims *p, so_dims *o);
so_status so_dims_bnfold_b(const so_dim_alg *A, const so_dims *const *in, int n, so_dims *o);
/* transpose by perm ints[0..n) (n == 0: reversed) */
so_status so_dims_transpose(const so_dim_alg *A, const int64_t *perm, int n, const so_dims *x, so_dims *o);
/* concat of x[0..n) on axis; split of x on axis into sizes->rank parts of sizes->dim (o[k] each) for n_out outputs */
so_status so_dims_concat(const so_dim_alg *A, int axis, const so_dims *x, int n, so_dims *o);
so_status so_dims_split(const so_dim_alg *A, int axis, const so_dims *x, const so_dims *sizes, int n_out, so_dims *o);
/* numpy matmul: [...,m,k] x [...,k,n] with broadcast batch dims; a rank-1 operand is a row / column dropped from the result */
so_status so_dims_matmul(const so_dim_alg *A, const so_dims *x, const so_dims *y, so_dims *o);

/* Output length of a sliding window (conv/pool) over a dim of length in: kernel k, stride s, pads
   pb (leading) and pe (trailing), dilation d, ceil_mode following PyTorch / ONNX Runtime (the last
   window must start inside the input or the leading padding); -1 if the window does not fit (or the
   arithmetic overflows). The one statement of this formula: the importer's shapes, the rule
   checker's concrete dims (rules/rule.c) and the generator's instances (rules/gen_universe.c) use it. */
int64_t so_window_out(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, int ceil_mode);

#endif
