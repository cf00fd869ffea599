/* onnx_io.h - ONNX import (protobuf-c) into the graph IR, and export back to ONNX: the public API of src/onnx_*.c. */
#ifndef SO_ONNX_IO_H
#define SO_ONNX_IO_H

#include "graph.h"

/* The ONNX domain of superopt's blocked-layout operators (ops.def SO_F_LAYOUT: nchwc_in, nchwc_out, conv_nchwc,
   maxpool_nchwc, avgpool_nchwc, globalavgpool_nchwc, op_type = the table name). Optimized models that keep
   layout decisions import it (version 1); only superopt runs them. */
#define SO_ONNX_LAYOUT_DOMAIN "ai.superopt"

/* Loads an ONNX model file: weights (raw_data, typed fields, external data relative to
   the model's directory), graph inputs/outputs, nodes; folds constant subgraphs
   (Constant, Shape/Gather/Unsqueeze/Concat/Expand... chains, any op whose inputs are all
   known) into weights or attributes; keeps unknown ops as SO_OP_OPAQUE; infers shapes;
   toposorts. On success *out owns everything (so_model_free). On failure the message is
   one line starting with the path. */
/* Conventions of the imported graph:
   - weights are float32 or int64: float16/bfloat16/double initializers become float32, the
     integer and bool types int64;
   - LSTM inputs keep the ops.def positions: an absent optional input followed by a present one
     is filled with its neutral value (B zeros, sequence_lens an int64 weight of full lengths,
     initial_h/initial_c zeros); export writes an all-full sequence_lens as absent;
   - opaque operators are numbered canonically, so importing the same model with its nodes in
     another order gives the same so_graph_hash. */
so_status so_onnx_load(const char *path, so_model **out);
/* Newest default-domain opset read: a later one is refused (its operators might mean something
   the importer does not know). 23 is ONNX 1.18's. */
#define SO_ONNX_MAX_OPSET 23
/* Same, from a memory buffer (path used for messages and external data). */
so_status so_onnx_load_buffer(const char *path, const void *buf, size_t len, so_model **out);

/* Value used for symbolic or unknown input dimensions (dim_param "batch", or no value) instead
   of failing with "input 'x' has a symbolic dimension ..."; 0 (default) = fail. Meant for a
   command-line override such as --dim 1. */
extern int64_t so_onnx_symbolic_dim;

/* Shapes the user pins for symbolic or unknown dimensions (command line --input-shape, --dim);
   every later load applies them. so_onnx_pin_input takes "NAME=D0,D1,..." (the whole shape of
   graph input NAME; dims of the file that are fixed must agree), so_onnx_pin_dim "SYMBOL=N"
   (the dim_param SYMBOL wherever it appears: inputs, value_info, outputs). A symbol that an
   --input-shape pins also resolves that symbol elsewhere. Malformed spec: SO_ERR and a message.
   A pinned input the model lacks is a load error. Inputs with a pinned dimension are marked in
   so_value_info.pinned. so_onnx_pins_clear forgets all pins. */
so_status so_onnx_pin_input(const char *spec);
so_status so_onnx_pin_dim(const char *spec);
void so_onnx_pins_clear(void);

/* A tensor with its ONNX element type: data malloc'd, float (FLOAT) or int64_t (INT64, INT32,
   BOOL) per shape.dtype (SO_F32 / SO_I64). */
typedef struct so_tfile {
    so_shape shape;
    int32_t onnx_type;   /* ONNX TensorProto.DataType: 1 float, 7 int64, 6 int32, 9 bool */
    void *data;
} so_tfile;

/* Reads a file holding one serialized TensorProto (ONNX's test_data_set_N/input_K.pb). Types other
   than float32, int64, int32 and bool are refused. On success out->data is malloc'd (caller frees). */
so_status so_onnx_tensor_read(const char *path, so_tfile *out);
/* Writes x as one TensorProto named `name` (raw_data), atomically. */
so_status so_onnx_tensor_write(const char *path, const char *name, const so_tfile *x);

/* Values for the graph inputs of the next loads, by position among the inputs that are not
   initializers (the test_data_set order); active 0 clears (values may be NULL when n is 0). Borrowed: values must outlive the loads.
   The count must equal the model's; types must agree with the model's. An input of any type stays an input
   (fed at run time; its symbolic dimensions are pinned from the value's shape, fixed ones must agree),
   except an input whose VALUE the importer needs: one that reaches, through any chain of nodes, a shape
   or parameter position (Reshape's shape, Expand / Tile / Slice / Squeeze / Unsqueeze / Split / Reduce*
   axes, TopK's k, Resize / Upsample scales, Pad's pads, Range, OneHot, ConstantOfShape, Trilu's k,
   CumSum's axis, Dropout's ratio, If's condition, NonZero...). That one becomes a constant of the given
   value (the graph is specialised to it) and is no longer among model->inputs. */
void so_onnx_bind_inputs(const so_tfile *values, int n, int active);
/* After a load with bound values: 1 if the value at `position` became a constant. Valid until
   the next so_onnx_bind_inputs. */
int so_onnx_input_bound_const(int position);

/* 1 if the importer maps ONNX nodes onto table operator op (ops.def's import decision), 0 for
   operators without an ONNX form (sources, opaque, internal). */
int so_onnx_imports(so_op op);
/* How the importer takes an ONNX operator of the default domain that is not simply the table operator of the
   same name (the route table in onnx_node.c, which the node dispatcher reads; docs/OPERATORS.md lists it):
   NOOP no node (the output names the input), CONST a constant, FOLD evaluated at import when its inputs are
   constants or depend on shapes only (otherwise kept opaque), ALIAS imported as table operator `op`, EXPAND
   imported as several table operators, INLINE (If) the taken branch when the condition is known at import,
   REFUSE an import error naming the node and its operator, FORMS the table operator(s) of that name with the
   import forms `how` describes. */
typedef enum so_onnx_route_kind {
    SO_ROUTE_NOOP, SO_ROUTE_CONST, SO_ROUTE_FOLD, SO_ROUTE_ALIAS, SO_ROUTE_EXPAND, SO_ROUTE_INLINE, SO_ROUTE_REFUSE,
    SO_ROUTE_FORMS
} so_onnx_route_kind;
typedef struct so_onnx_route {
    const char *onnx;        /* ONNX op_type */
    so_onnx_route_kind kind;
    so_op op;                /* ALIAS: the table operator; else SO_OP_OPAQUE */
    const char *how;         /* one phrase for docs/OPERATORS.md */
} so_onnx_route;
/* The route of ONNX op_type `onnx` (default domain), or NULL: the table operator of that name
   (so_op_from_onnx), or, without one, kept opaque. */
const so_onnx_route *so_onnx_route_of(const char *onnx);

/* Table self-checks (the coverage test asserts 0 for every operator): 1 if op's importer is the
   attribute-less one although ops.def says op has attributes (they would import zeroed), or its
   exporter writes no attributes although it has some. */
int so_onnx_import_drops_attrs(so_op op);
int so_onnx_export_drops_attrs(so_op op);
/* 1 if the exporter writes op (ops.def's export decision); internal operators are folded first. */
int so_onnx_exports(so_op op);

/* Import-time folding of helper ops (ConstantOfShape, Expand, Tile, Concat, Range, broadcasting
   arithmetic...) produces a constant only up to this many elements, or the size of its largest
   constant input if that is larger (a Cast or Transpose of a big weight still folds); above it
   the node stays in the graph unfolded. Bounds import time and memory on hostile models
   independently of --max-memory. Default 2^24. */
extern int64_t so_onnx_fold_max_elems;

/* Writes graph g (of model g->model) as an ONNX model: same input/output names, opset and
   producer; weights used by g become initializers (names kept where known); internal ops
   must have been folded (error otherwise). Written to a temporary file in the same
   directory and renamed into place: never a half-written file. */
so_status so_onnx_save(const so_graph *g, const char *path);

#endif
