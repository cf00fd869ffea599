/* onnx_priv.h - private to the ONNX modules of src/ (onnx_*.c): importer state, constant tensors, raw-initializer scan, helpers shared between import, folding and export. */
#ifndef SO_ONNX_PRIV_H
#define SO_ONNX_PRIV_H

#include "onnx_io.h"
#include "onnx.pb-c.h"
#include "shape.h"
#include "strmap.h"
#include "nodeeval.h"
#include <stddef.h>
#include <stdint.h>

/* Builder results (so_status): SO_OK, SO_ERR (failed, message set), or SO_ERR_UNSUPPORTED: "keep this
   node verbatim as OPAQUE" (a form the table operator does not cover; no message needed). */

/* ONNX TensorProto.DataType codes used here. */
enum {
    T_FLOAT = 1, T_UINT8 = 2, T_INT8 = 3, T_UINT16 = 4, T_INT16 = 5, T_INT32 = 6, T_INT64 = 7,
    T_STRING = 8, T_BOOL = 9, T_FLOAT16 = 10, T_DOUBLE = 11, T_UINT32 = 12, T_UINT64 = 13,
    T_BFLOAT16 = 16
};

/* ======================================================================
   constant tensors (import-time values)
   ====================================================================== */

typedef struct ctensor {
    so_shape shape; /* shape.dtype is the storage: SO_F32 (float) or SO_I64 (int64_t) */
    int32_t otype;  /* ONNX element type the value stands for (FLOAT, INT64, BOOL, INT32, ...) */
    void *data;
} ctensor;
/* ======================================================================
   importer state
   ====================================================================== */

/* A named tensor during import: a known constant or an edge of the graph being built. */
typedef struct val {
    const char *name; /* ONNX tensor name (borrowed from the ModelProto) or NULL */
    int is_const;
    int owns;         /* c.data belongs to this value (else to a model weight) */
    ctensor c;        /* is_const */
    so_edge e;        /* edge; for constants the WEIGHT node once materialised (node -1 before) */
} val;

typedef struct imp {
    const char *path;
    char *dir;                  /* directory of the model, for external data */
    char *realdir;              /* its realpath (malloc'd on first use), what external files must lie in */
    so_model *m;
    so_graph *g;
    int64_t opset;
    val **vals;                 /* every value, individually allocated (stable pointers) */
    int32_t n_vals, cap_vals;
    so_strmap names;               /* tensor name -> index in vals */
    so_strmap vinfo;               /* tensor name -> index in vis (value_info and graph outputs) */
    so_strmap syms;                /* dim_param symbol -> value fixed by an --input-shape (keys borrowed from the ModelProto) */
    Onnx__ValueInfoProto **vis;
    size_t n_vis;
    const Onnx__NodeProto *cur; /* node being imported */
    char desc[600];             /* "node 'x' (Op)" for messages */
    int64_t fold_cap;           /* > 0 while try_fold runs: largest constant it may create */
    int fold_over;              /* set when try_fold wanted a constant above fold_cap */
} imp;
typedef struct rawref {
    const uint8_t *data; /* into the serialized model (borrowed) */
    size_t len;
    int present;         /* the TensorProto had raw_data (the last one wins, as in protobuf-c) */
} rawref;

typedef struct rawset {
    rawref *r;           /* one per graph.initializer, in order */
    size_t n, cap;
    uint8_t *map;        /* our anonymous mapping holding the file (pages released after use), or NULL */
    size_t map_len;
} rawset;

typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
} wbuf;


/* onnx_dtype.c */
int onx_storage_of(int32_t t);
size_t onx_onnx_elem_size(int32_t t);
const char *onx_onnx_type_name(int32_t t);
float onx_half_to_float(uint16_t h);
float onx_bf16_to_float(uint16_t h);
int64_t onx_f2i(double f);
int64_t onx_wrap_int(int64_t v, int32_t t);
void onx_convert_raw(const uint8_t *src, int32_t t, int64_t n, void *dst);
int64_t onx_ct_numel(const ctensor *c);
int onx_ct_isint(const ctensor *c);
double onx_ct_getf(const ctensor *c, int64_t i);
int64_t onx_ct_geti(const ctensor *c, int64_t i);
int64_t onx_bcast_off(const so_shape *o, const so_shape *a, int64_t i);
int onx_bshape(const so_shape *a, const so_shape *b, so_shape *o);

/* onnx_import.c */
void onx_one_line_error(void);
so_status onx_node_err(imp *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
val *onx_bind_const(imp *im, const char *name, ctensor *c);
val *onx_bind_edge(imp *im, const char *name, int32_t node, int32_t slot);
val *onx_lookup(imp *im, const char *name);
so_shape onx_vshape(imp *im, const val *v);
so_edge onx_materialize(imp *im, val *v);
int onx_sym_value(imp *im, const char *sym, int64_t *out);
int onx_ct_new(imp *im, ctensor *c, int storage, int32_t otype, int rank, const int64_t *dims);

/* onnx_tensor.c */
so_status onx_tensor_from_proto(imp *im, const Onnx__TensorProto *t, const char *what, ctensor *out);

/* onnx_params.c */
const Onnx__AttributeProto *onx_att(const Onnx__NodeProto *n, const char *name);
int64_t onx_att_i(const Onnx__NodeProto *n, const char *name, int64_t def);
float onx_att_f(const Onnx__NodeProto *n, const char *name, float def);
const char *onx_att_s(const Onnx__NodeProto *n, const char *name, char *buf, size_t len);
int onx_name_index(const char *s, const char *const *names, int n);
long onx_att_ints(const Onnx__NodeProto *n, const char *name, const int64_t **p);
val *onx_inval(imp *im, const Onnx__NodeProto *n, size_t k);
int onx_const_ints(imp *im, const val *v, int64_t *out, int max, int *count, const char *what);
int onx_norm_axis(imp *im, int64_t a, int rank, int32_t *out);
int onx_norm_axes(imp *im, int64_t *ax, int n, int rank);
int onx_get_axes(imp *im, const Onnx__NodeProto *n, int from_input, int64_t *axes, int *count, int *present);
int onx_reshape_target(imp *im, const Onnx__NodeProto *n, const so_shape *in, const val *sv, so_shape *out);
int onx_slice_quads(imp *im, const Onnx__NodeProto *n, const so_shape *in, int64_t *q, int *nq, so_shape *outs);
int onx_split_sizes(imp *im, const Onnx__NodeProto *n, const so_shape *in, int32_t *axis, int64_t *sz, int *count);
int onx_pad_params(imp *im, const Onnx__NodeProto *n, const so_shape *in, int64_t *pads, float *value, int32_t *mode);

/* onnx_fold.c */
int onx_is_cmp(const char *t);
int onx_is_logic(const char *t);
int onx_try_fold(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in);

/* onnx_node.c: one node into the graph (routes, opaque nodes, layout-domain operators) */
int onx_is_default_domain(const char *d);
so_status onx_import_node(imp *im, const Onnx__NodeProto *n);
/* Keeps node n verbatim as an opaque operator (output shapes from the file or the op's rules). */
so_status onx_add_opaque(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in);
/* The same with an If's captured outer values caps[0..n_cap) (named cap_names in its branches) as its last
   inputs and the names its branches define (so_opaque.capture / inner). */
so_status onx_add_opaque_captures(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in, val **caps, const char **cap_names,
                                  int32_t n_cap, const char **inner, int32_t n_inner);

/* onnx_build.c: the per-operator importers (ops.def) and the node helpers they share */
/* The node's name plus suffix in the model arena, or NULL when the node has no name. */
const char *onx_node_name(imp *im, const Onnx__NodeProto *n, const char *suffix);
/* Adds table op `op` over the values `ins`, infers its shapes and binds output names (onames[k] NULL or "" =
   unbound); when every input is constant, evaluates it and binds constants instead. *idx = the node. */
int onx_emit(imp *im, so_op op, val **ins, int n_in, int n_out, const so_attr *a, const char *name,
             char *const *onames, int n_onames, int32_t *idx);
/* An unnamed value for output `slot` of graph node `node`. */
val *onx_anon_edge(imp *im, int32_t node, int32_t slot);
/* Imports node n as table operator op with its importer: SO_OK, SO_ERR, or SO_ERR_UNSUPPORTED (a form the
   importer does not take). */
int onx_build_op(imp *im, const Onnx__NodeProto *n, so_op op, val **ins, size_t n_in);
/* Inputs 0..n-1 present without holes: the count after trimming absent trailing ones, or -1 when there is a hole. */
int onx_dense_inputs(val **ins, size_t n_in);
/* 1 if an output beyond the first `keep` is present (named). */
int onx_extra_outputs(const Onnx__NodeProto *n, size_t keep);
/* onnx_expand.c: ONNX nodes imported as several table operators (each returns SO_OK or SO_ERR with a message) */
int onx_layernorm_expanded(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in, so_shape xs);
so_status onx_mvn(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in);
/* InstanceNormalization, GroupNormalization, GlobalMaxPool, LpNormalization as table operators (onnx_expand.c). */
so_status onx_instancenorm(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in);
so_status onx_groupnorm(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in);
so_status onx_globalmaxpool(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in);
so_status onx_lpnorm(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in);
/* Einsum of one or two operands as Transpose / Reshape / ReduceSum / MatMul (onnx_expand.c). */
so_status onx_einsum(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in);
so_status onx_lift(imp *im, const Onnx__NodeProto *n, so_op op, val **ins, size_t n_in);
so_status onx_centercroppad(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in);
so_status onx_col2im(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in);
so_status onx_affinegrid(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in);
so_status onx_recurrent_batch_first(imp *im, const Onnx__NodeProto *n, so_op op, val **ins, size_t n_in);
so_status onx_tile_concat(imp *im, const Onnx__NodeProto *n, val **ins);
so_status onx_sum_mean(imp *im, const Onnx__NodeProto *n, val **ins, size_t n_in);

/* onnx_tfile.c */
const so_tfile *onx_bound_input(int position);
int onx_bound_count(void); /* -1 when no values are bound */
void onx_mark_const_input(int position);

/* onnx_wire.c */
Onnx__ModelProto *onx_unpack_model(const uint8_t *buf, size_t len, rawset *rs);
/* The ModelProto fields import keeps and export writes back as they came (model-local functions,
   metadata_props, model_version, doc_string, domain): pointers copied, src keeps ownership. */
void onx_copy_kept_fields(Onnx__ModelProto *dst, const Onnx__ModelProto *src);
void onx_release_raw(const rawset *rs, const uint8_t *d, size_t len);

#endif
