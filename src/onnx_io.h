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

/* 1 if the importer maps ONNX nodes onto table operator op (ops.def's import decision), 0 for
   operators without an ONNX form (sources, opaque, internal). */
int so_onnx_imports(so_op op);
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
