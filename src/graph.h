/* graph.h - the model (weights, names, opaque ops) and the graph IR the whole pipeline works on. */
#ifndef SO_GRAPH_H
#define SO_GRAPH_H

#include <stdint.h>

#include "arena.h"
#include "common.h"
#include "hmap.h"
#include "ops.h"

#define SO_MAX_RANK 8
#define SO_MAX_INTS 32

/* Element types (values are ONNX TensorProto.DataType codes). Values in the graph are STORED as
   float32 or int64 only (so_shape.dtype is SO_F32 or SO_I64): int32 and bool tensors live as int64
   (bool as 0/1). SO_I32 and SO_BOOL name the type a model input or output has at the boundary
   (so_value_info.elem_type), converted with so_to_storage / so_from_storage. */
typedef enum so_dtype { SO_F32 = 1, SO_I32 = 6, SO_I64 = 7, SO_BOOL = 9 } so_dtype;

/* Type of one tensor. rank -1 = unknown (only downstream of opaque nodes). */
typedef struct so_shape {
    int32_t rank;
    int32_t dtype; /* so_dtype */
    int64_t dim[SO_MAX_RANK];
} so_shape;

/* One operator's attributes. Immutable once interned in the model (so_model_attr);
   nodes of all clones share them. Unused fields are zero. Layout per op: ops.def. */
typedef struct so_attr {
    int32_t kernel[2];   /* pool kernel (h, w); ENLARGE target kernel */
    int32_t stride[2];
    int32_t pad[4];      /* top, left, bottom, right */
    int32_t dilation[2];
    int32_t group;
    int32_t axis;        /* normalised to >= 0 */
    int32_t act;         /* so_act epilogue on SO_F_ACT ops */
    int32_t trans_a, trans_b;
    int32_t keepdims, count_include_pad, ceil_mode;
    int32_t hidden, direction; /* LSTM: hidden size; 0 forward, 1 reverse, 2 bidirectional */
    int32_t mode;        /* PAD: 0 constant, 1 reflect, 2 edge */
    int32_t n_ints;
    int64_t ints[SO_MAX_INTS]; /* perm / axes / split sizes / shape / pads / slice quads */
    float alpha, beta;   /* GEMM; HARDSIGMOID (alpha, beta), LEAKYRELU (alpha) */
    float clip_min, clip_max; /* CLIP, and act == SO_ACT_CLIP */
    float epsilon;       /* BATCHNORM, LAYERNORM */
    float value;         /* PAD constant */
} so_attr;

/* Reference to output `slot` of node `node`. */
typedef struct so_edge {
    int32_t node;
    int32_t slot;
} so_edge;

typedef struct so_node {
    so_op op;
    int32_t n_in, n_out;
    so_edge *in;          /* n_in, graph arena */
    so_shape *out;        /* n_out, graph arena */
    const so_attr *attr;  /* interned in the model, never NULL */
    int32_t ref;          /* INPUT: model input index; WEIGHT: weight id; OPAQUE: opaque id; else -1 */
    const char *name;     /* ONNX node name (model arena) or NULL */
} so_node;

typedef struct so_weight {
    const char *name;     /* initializer name (model arena); NULL for weights made by folding */
    so_shape shape;
    void *data;           /* malloc'd, owned by the model; float* or int64_t* per shape.dtype */
    uint64_t hash;        /* XXH3 of the data bytes */
    int32_t onnx_type;    /* element type in the ONNX file when narrower/other than the storage
                             (BOOL, INT32, FLOAT16, ...; widened to int64/float32 here), else 0.
                             Set by the importer; the exporter writes the weight back in this type. */
} so_weight;

typedef struct so_value_info {
    const char *name;
    so_shape shape;
    int32_t elem_type;    /* the element type at the boundary (so_dtype: F32, I64, I32, BOOL); shape.dtype is
                             its storage (SO_F32 or SO_I64) */
    uint32_t pinned;      /* inputs: bit d set when dimension d was symbolic/unknown in the file and
                             fixed by --dim / --input-shape (so_onnx_pin_*) */
    int32_t declared_type; /* outputs: the element type the file declares (ONNX code; 0 if none):
                             boolean and int32 values are computed as int64 and written back in it */
} so_value_info;

/* An operator the optimizer does not understand: kept as the serialized NodeProto
   (owned by the ONNX module's format; opaque to everyone else). */
typedef struct so_opaque {
    const char *op_type, *domain;
    void *blob;           /* model arena */
    size_t blob_len;
    int32_t n_out;        /* outputs of the node */
    so_shape *out;        /* n_out output shapes known at import (value_info or simple
                             rules; rank -1 = unknown), model arena; shape inference copies these */
    /* An If kept opaque (condition unknown at import): the outer values its branches read by name are
       the node's last n_capture inputs, capture[k] the name the branches use (the exporter gives the
       value that name again); inner[0..n_inner) every name the branches define (the exporter names
       nothing else so). Model arena; 0 / NULL for every other opaque node. */
    int32_t n_capture, n_inner;
    const char **capture, **inner;
} so_opaque;

typedef struct so_graph so_graph;

/* A loaded model. Owns its arena (names, attrs, blobs) and its weights.
   Every graph derived from it points to it; free the model after its graphs. */
typedef struct so_model {
    so_arena arena;
    const char *path;           /* where it was loaded from (for messages) */
    int64_t ir_version, opset;  /* default-domain opset */
    const char *producer_name, *graph_name;
    void *extra_opsets;         /* ONNX module: a ModelProto, serialized, of what export writes back as it came: the other
                                   opset imports, model-local functions, metadata_props, model_version, doc_string, domain */
    size_t extra_opsets_len;
    so_value_info *inputs;      /* graph inputs in order (initializers excluded) */
    int32_t n_inputs;
    so_value_info *outputs;     /* graph outputs in order */
    int32_t n_outputs;
    so_weight *weights;         /* malloc'd, grows; ids are stable */
    int32_t n_weights, cap_weights;
    so_opaque *opaque;          /* arena */
    int32_t n_opaque, cap_opaque;
    so_attr **attrs;            /* interned attribute sets (for cheap lookup/dedupe), in insertion order */
    int32_t n_attrs, cap_attrs;
    so_hmap attr_index;         /* XXH3 of an so_attr -> its position in attrs */
    so_graph *graph;            /* the imported graph (owned) */
    size_t mem_charged;         /* so_mem_charge'd by the importer for the weights; released by so_model_free */
    int32_t n_widened_half;     /* FLOAT16 / BFLOAT16 initializers the importer widened to float32 (reported as a note) */
    int64_t widened_half_values;
    int32_t n_external;         /* tensors the importer read from external data files (the model file alone does not hold them) */
} so_model;

struct so_graph {
    so_model *model;            /* not owned */
    so_arena arena;             /* owns node in/out arrays */
    so_node *nodes;             /* malloc'd */
    int32_t n_nodes, cap_nodes;
    so_edge *outputs;           /* model->n_outputs entries, malloc'd */
};

/* ---- model ---- */
/* New empty model; free with so_model_free (which frees model->graph too). */
so_model *so_model_new(const char *path);
void so_model_free(so_model *m);
/* Interns a copy of *a (identical sets share one pointer). */
const so_attr *so_model_attr(so_model *m, const so_attr *a);
/* The all-zero attribute set (act none, no ints). */
const so_attr *so_model_attr_default(so_model *m);
/* Adds a weight; takes ownership of malloc'd data. Returns the id. name may be NULL. */
int32_t so_model_add_weight(so_model *m, const char *name, so_shape shape, void *data);

/* ---- shapes ---- */
int64_t so_shape_numel(const so_shape *s);   /* product of dims (1 for rank 0); -1 if unknown */
int so_shape_eq(const so_shape *a, const so_shape *b);
so_shape so_shape_make(int rank, const int64_t *dims); /* dtype f32 */
/* Writes "[2,3,4]" into buf (always NUL-terminated). Returns buf. */
char *so_shape_str(const so_shape *s, char *buf, size_t n);

/* ---- element types at the boundary (inputs and outputs given or returned by callers) ---- */
/* The boundary element type of model input k (elem_type, or its storage type for a model built
   without one). */
static inline int32_t so_input_elem_type(const so_model *m, int32_t k)
{
    return m->inputs[k].elem_type ? m->inputs[k].elem_type : m->inputs[k].shape.dtype;
}
/* Bytes per element of elem_type: 4 float32, 8 int64, 4 int32, 1 bool; 0 for any other type. */
size_t so_dtype_size(int32_t elem_type);
/* Storage type of elem_type: SO_F32 for float32, SO_I64 for int64 / int32 / bool; 0 for any other. */
int32_t so_dtype_storage(int32_t elem_type);
/* "float32", "int64", "int32", "bool", or "of another element type". */
const char *so_dtype_name(int32_t elem_type);
/* Converts n elements of elem_type at src into its storage type at dst (int32 -> int64, bool -> int64
   0/1 with any non-zero byte true; float32 and int64 copied). src and dst must not overlap. */
void so_to_storage(int32_t elem_type, const void *src, int64_t n, void *dst);
/* The reverse: n storage elements at src into elem_type at dst (int64 -> int32 keeps the low 32 bits
   as a C cast does, int64 -> bool is x != 0). */
void so_from_storage(int32_t elem_type, const void *src, int64_t n, void *dst);

/* Boundary element type of graph output k of g: integer values (int64 storage) in the type the file
   declares for the output (bool, int32, int64) or, for a constant, the type it had in the file if
   that is int32 or bool; else the storage type (float32 or int64). */
int32_t so_graph_output_type(const so_graph *g, int32_t k);

/* ---- graph ---- */
/* Empty graph over model m. Free with so_graph_free. */
so_graph *so_graph_new(so_model *m);
void so_graph_free(so_graph *g);
/* Deep copy (nodes, edges, shapes); attrs and weights are shared through the model. */
so_graph *so_graph_clone(const so_graph *g);
/* Appends a node; copies `in` into the graph arena, allocates n_out shapes (zeroed).
   attr may be NULL (default). Returns the node index. Shapes are not inferred. */
int32_t so_graph_add(so_graph *g, so_op op, const so_edge *in, int n_in, int n_out,
                     const so_attr *attr, int32_t ref, const char *name);
/* Runs shape inference on one node (inputs must have shapes). Error names node and op. */
so_status so_graph_infer(so_graph *g, int32_t node);
/* Shape inference over the whole graph in topological order. */
so_status so_graph_infer_all(so_graph *g);
/* Checks edges in range and acyclicity; reorders nodes topologically (inputs before users),
   renumbering edges and outputs. Error on a cycle or a dangling edge. */
so_status so_graph_toposort(so_graph *g);
/* so_graph_toposort (breadth-first) or, with keep_order, the order that keeps the existing one
   wherever it is valid: an already sorted graph keeps its order exactly and a node appended
   by a rewrite lands just before its first user. origin (may be NULL): an array per node,
   permuted along with the nodes. */
so_status so_graph_toposort_track(so_graph *g, int keep_order, int32_t *origin);
/* Removes nodes not reachable from the outputs (keeps all INPUT nodes), compacting
   indices. Returns the number removed. Keeps topological order. */
int so_graph_dce(so_graph *g);
/* so_graph_dce that also compacts origin (an array per node; may be NULL) along. */
int so_graph_dce_track(so_graph *g, int32_t *origin);
/* Canonical structural hash (XXH3-64): independent of node order. */
uint64_t so_graph_hash(const so_graph *g);
/* Per-node structural hashes (array of n_nodes, caller frees). Graph must be topologically sorted. */
uint64_t *so_graph_node_hashes(const so_graph *g);
/* Number of uses of each node output: returns malloc'd array [n_nodes] of total uses (outputs count). */
int32_t *so_graph_use_counts(const so_graph *g);
/* Error for graph output `name` (edge e) whose shape is unknown: walks back to the node where the
   unknown shape starts (an opaque operator whose output the file declares no shape for) and
   names that node and its operator. Returns SO_ERR with the message set. */
so_status so_graph_unknown_shape_error(const so_graph *g, so_edge e, const char *name);
/* Human-readable one-line description of node i, e.g. "node 'Conv_3' (Conv)". */
const char *so_node_desc(const so_graph *g, int32_t i, char *buf, size_t n);

#endif
