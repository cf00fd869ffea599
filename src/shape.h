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
   A shape rule written against so_dim_alg holds for concrete dims (int64_t, so_dim_int64), for the rule
   language's symbolic dims (rules/rule.h so_dimx: a constant plus a sum of symbols, rules/rule_shape.c dim_sym), for
   the generator's int16 dims (rules/gen_universe.c dim_gen) and for solver terms (verifier/encode.c dim_z3: a
   dim is a Z3 integer term), so the importer's shapes (shape_<op> below), the rule checker and the verifier
   (rules/rule_shape.c so_rule_node_dims) and the generator's typing apply the same statement: so_dims_<family> below.
   Contract of a rule over the algebra: eq and at_least state REQUIREMENTS (a rule fails when they answer 0, and
   never branches on them; a lenient alternative is tried only after the exact requirement failed), because the
   solver instance answers 1 and records a == b (d >= k) as a side condition of the node's well-typedness;
   is_one and as_const are DECISIONS on known numbers (the solver answers for numerals only). Every operation
   gets the instance's context cx (the solver instance builds terms in it). */
typedef struct so_dim_alg {
    size_t size;                             /* bytes of one dimension value */
    const void *one;                         /* the dimension 1 */
    const void *cx;                          /* the instance's context, handed to every operation (rule_shape.c: the rule) */
    int (*is_one)(const void *cx, const void *d); /* d is known to be the dimension 1 */
    int (*eq)(const void *cx, const void *a, const void *b); /* requires a == b: 1 if they are the same dimension
                                                                (provably, for symbols; the solver records it) */
    int (*at_least)(const void *cx, const void *d, int64_t k); /* requires d >= k: numbers answer by value, the rule
                                                                  language's symbols count as >= k, the solver records it */
    int (*add)(const void *cx, const void *a, const void *b, void *out);  /* a + b; 0 if it overflows / is not representable */
    int (*mul)(const void *cx, const void *a, int64_t k, void *out);      /* a * k (k >= 1); 0 likewise */
    int (*muld)(const void *cx, const void *a, const void *b, void *out); /* a * b; 0 likewise (symbols: one side a number) */
    int (*div)(const void *cx, const void *a, int64_t k, int round_up, void *out); /* floor or ceil of a / k (k >= 1); 0 if not
                                                                       a dim of the instance (symbols: only exact quotients) */
    int (*as_const)(const void *cx, const void *d, int64_t *v); /* 1 and *v if d is a known number */
    int (*of_const)(const void *cx, int64_t v, void *out);      /* the dim v; 0 if out of the instance's range */
    /* one plane dim of a sliding window (so_window_out's arguments) over h; 0 if it does not fit (the solver
       requires that it fits and answers 1) */
    int (*window)(const void *cx, const void *h, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, int ceil_mode, void *out);
    /* numpy broadcasting of two present dims into out, 0 if they do not broadcast; NULL: by is_one and eq (a 1 takes
       the other, else they must be equal; the exact instances), the solver: the condition a == b or either is 1 and
       the term ite(a == 1, b, a) */
    int (*bcast)(const void *cx, const void *a, const void *b, void *out);
    void (*print)(const void *cx, const void *d, char *buf, size_t n); /* d as text, as shapes print */
    int quiet; /* 1: a rule that fails only returns SO_ERR, it formats no message (the generator's typing,
                  a hot path where most candidates misfit: rules/gen_universe.c) */
} so_dim_alg;
extern const so_dim_alg so_dim_int64;
/* numpy broadcasting of dims a[0..ra) with b[0..rb) (right-aligned; a missing dim takes the present one) into
   out[0..max(ra, rb)): two present dims by A->bcast (a dim 1 takes the other, equal dims stay). Returns the output rank, or
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
/* 2-D pooling of x [N,C,H,W] by a's kernel, strides, pads, ceil_mode (and dilations if dilated) */
so_status so_dims_pool(const so_dim_alg *A, const so_attr *a, int dilated, const so_dims *x, so_dims *o);
/* 2-D convolution of x [N,C,H,W] by w [O,C/group,kh,kw] (kernel dims known numbers), bias b [O] or NULL */
so_status so_dims_conv(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *w, const so_dims *b, so_dims *o);
/* enlarge: kernel w [O,C,kh,kw] (kh, kw numbers) centred in a->kernel */
so_status so_dims_enlarge(const so_dim_alg *A, const so_attr *a, const so_dims *w, so_dims *o);
/* the internal constants CONST_POOL [C,1,kh,kw], CONST_IDCONV [C,C,kh,kw] (odd kh, kw), CONST_IDMAT [n,n], CONST_ONES: shape s */
so_status so_dims_const(const so_dim_alg *A, so_op op, const so_dims *s, so_dims *o);
/* blocked layout: nchwc_in [N,C,H,W] -> [N,ceil(C/b),H,W,b]; nchwc_out [N,K,H,W,b] -> [N,C,H,W] with bc = (b, C),
   ceil(C/b) = K (symbols: exact blocking) */
so_status so_dims_nchwc_in(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o);
so_status so_dims_nchwc_out(const so_dim_alg *A, const so_dims *bc, const so_dims *x, so_dims *o);
/* conv / pools on a blocked value x [N,K,H,W,b] (b a number): the plain rule on the logical view [N,C,H,W] (conv: C =
   w's channels x group, ceil(C/b) = K; pools pool every lane: C = K), the result blocked again */
so_status so_dims_conv_nchwc(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *w, const so_dims *b, so_dims *o);
so_status so_dims_pool_nchwc(const so_dim_alg *A, const so_attr *a, int dilated, const so_dims *x, so_dims *o);
so_status so_dims_globalpool_nchwc(const so_dim_alg *A, const so_dims *x, so_dims *o);
/* axes-driven shapes (ints = sorted distinct axes): reduce over ints (all if none; keepdims leaves 1s), argmax/argmin
   over axis (keepdims), squeeze of ints (all 1s if none; each a 1), unsqueeze inserting 1s at ints */
so_status so_dims_reduce(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o);
so_status so_dims_argreduce(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o);
so_status so_dims_squeeze(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o);
so_status so_dims_unsqueeze(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o);
/* gather of data x on axis by indices idx: x[:axis] + idx + x[axis+1:] */
so_status so_dims_gather(const so_dim_alg *A, int axis, const so_dims *x, const so_dims *idx, so_dims *o);
/* gemm of x [M,K] (or [K,M] with trans_a) by y [K,N] (or [N,K] with trans_b), c (or NULL) broadcast to [M,N] */
so_status so_dims_gemm(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *y, const so_dims *c, so_dims *o);
/* layernorm / rmsnorm of x from axis on: scale and bias (or NULL) broadcast to x[axis:] */
so_status so_dims_layernorm(const so_dim_alg *A, int axis, const so_dims *x, const so_dims *scale, const so_dims *bias, so_dims *o);
/* expand x to the target shape t (numpy broadcasting); pad x by ints (begins then ends; mode 1 reflect) */
so_status so_dims_expand(const so_dim_alg *A, const so_dims *x, const so_dims *t, so_dims *o);
so_status so_dims_pad(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o);
/* where(cnd, x, y): the three broadcast together */
so_status so_dims_where(const so_dim_alg *A, const so_dims *cnd, const so_dims *x, const so_dims *y, so_dims *o);
/* depth_to_space (to_space 1: [N,C,H,W] -> [N,C/b^2,H*b,W*b]) and space_to_depth (0: the inverse), block b */
so_status so_dims_blockmove(const so_dim_alg *A, int to_space, int64_t b, const so_dims *x, so_dims *o);
/* trilu: any x of rank >= 2, same shape */
so_status so_dims_trilu(const so_dim_alg *A, const so_dims *x, so_dims *o);
/* gatherelements: indices ix of x's rank, axis in range, the result ix's shape; lrn: a channel axis and size >= 1;
   det: a stack [..., n, n] of square matrices -> [...] */
so_status so_dims_gatherelements(const so_dim_alg *A, int axis, const so_dims *x, const so_dims *ix, so_dims *o);
so_status so_dims_lrn(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o);
so_status so_dims_det(const so_dim_alg *A, const so_dims *x, so_dims *o);
/* resize of x [N,C,H,W] to a's output plane ints[3] x ints[4] (the attributes checked); topk: k = ints[0] along axis
   (values; the indices have the same shape) */
so_status so_dims_resize(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o);
so_status so_dims_topk(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o);
/* prelu: the slope broadcasts to x (the result is x's shape); reversesequence: x of rank >= 2, time axis (axis) and
   batch axis (mode) 0 and 1, lens [batch] */
so_status so_dims_prelu(const so_dim_alg *A, const so_dims *x, const so_dims *slope, so_dims *o);
so_status so_dims_reversesequence(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *lens, so_dims *o);
/* flatten: [prod x[:axis], prod x[axis:]] (axis in 0..rank); slice: ints = (axis, start, end, step) quads, each axis
   at most once, clamped (import), of a known size, not empty */
so_status so_dims_flatten(const so_dim_alg *A, int axis, const so_dims *x, so_dims *o);
/* reshape x to the target t (every dim >= 1): the element counts equal where the instance can form both (the rule
   language cannot multiply two symbols: such a count is checked when the rule is instantiated) */
so_status so_dims_reshape(const so_dim_alg *A, const so_dims *x, const so_dims *t, so_dims *o);
so_status so_dims_slice(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o);
/* scatterelements: indices ix and updates u of one shape, of x's rank, axis in range -> x; gathernd with batch_dims b:
   indices ix [..., k] (k a known number) -> ix[:-1] + x[b+k:]; gridsample: x [N,C,H,W] by grid [N,Ho,Wo,2] -> [N,C,Ho,Wo]
   (mode and ints checked) */
so_status so_dims_scatterelements(const so_dim_alg *A, int axis, const so_dims *x, const so_dims *ix, const so_dims *u, so_dims *o);
so_status so_dims_gathernd(const so_dim_alg *A, int b, const so_dims *x, const so_dims *ix, so_dims *o);
so_status so_dims_gridsample(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *grid, so_dims *o);
/* maxpool with indices: the dilated 2-D pool (storage_order, mode, 0 or 1), o[0] and o[1] of one shape; maxunpool of
   x [N,C,H,W] by indices of x's shape to ints = (N, C, H', W'); roialign of x [N,C,H,W] by rois [R,4] and
   batch indices [R] to [R,C,kernel]; nllloss of x [N,C,d...] by target [N,d...] (weight [C] or NULL) to the
   target's shape, or a scalar when reduced (mode != 0); scatternd of updates u into x at indices ix [..., k]
   (k a known number): u = ix[:-1] + x[k:], the result x */
so_status so_dims_maxpoolidx(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o);
so_status so_dims_maxunpool(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *ix, so_dims *o);
so_status so_dims_roialign(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *rois, const so_dims *bi, so_dims *o);
so_status so_dims_nllloss(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *t, const so_dims *w, so_dims *o);
so_status so_dims_scatternd(const so_dim_alg *A, const so_dims *x, const so_dims *ix, const so_dims *u, so_dims *o);
/* LSTM / GRU / RNN (gates 4 / 3 / 1; a->mode: GRU's linear_before_reset, RNN's activation): in[0..8) at their ONNX
   positions X W R B seq_lens h0 c0 P (NULL = absent); outputs o[0..n_out): Y [T,D,N,H], then the last states [D,N,H] */
so_status so_dims_recurrent(const so_dim_alg *A, const so_attr *a, int64_t gates, const so_dims *const *in, int n_out, so_dims *o);
/* 3-D conv / transposed conv / pools over [N,C,D,H,W], spatial ints (kernel, strides, dilations, pad begins, pad ends
   [, output padding]) per axis; b NULL = no bias */
so_status so_dims_conv3d(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *w, const so_dims *b, so_dims *o);
so_status so_dims_convtranspose3d(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *w, const so_dims *b, so_dims *o);
so_status so_dims_pool3d(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o);
/* 2-D transposed conv x [N,Ci,H,W], w [Ci,Co/group,kh,kw] (output padding: ints[0..2)) */
so_status so_dims_convtranspose(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *w, const so_dims *b, so_dims *o);
/* DFT (axis, ints[0] = dft_length, mode bit 1 inverse, bit 2 onesided) over [..., 1|2]; STFT of signal [B,L,1|2]
   (ints = frame_step, frame_length; mode onesided; w NULL = no window) */
so_status so_dims_dft(const so_dim_alg *A, const so_attr *a, const so_dims *x, so_dims *o);
so_status so_dims_stft(const so_dim_alg *A, const so_attr *a, const so_dims *x, const so_dims *w, so_dims *o);
/* TfIdfVectorizer: in[0] [C] or [N,C], in[1..3] [n], in[4] (n_in > 4) weights [in[3] dim 0]; ints[3] the output size */
so_status so_dims_tfidfvectorizer(const so_dim_alg *A, const so_attr *a, const so_dims *const *in, int n_in, so_dims *o);
/* concat of n blocked values x[0..n) along channels, ints = (b, C0, ..., Cn-1) */
so_status so_dims_concat_nchwc(const so_dim_alg *A, const so_attr *a, const so_dims *x, int n, so_dims *o);

/* Output length of a sliding window (conv/pool) over a dim of length in: kernel k, stride s, pads
   pb (leading) and pe (trailing), dilation d, ceil_mode following PyTorch / ONNX Runtime (the last
   window must start inside the input or the leading padding); -1 if the window does not fit (or the
   arithmetic overflows). The one statement of this formula: the importer's shapes, the rule
   checker's concrete dims (rules/rule_shape.c) and the generator's instances (rules/gen_universe.c) use it. */
int64_t so_window_out(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, int ceil_mode);

#endif
