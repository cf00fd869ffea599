#!/usr/bin/python3
"""make_unsupported.py - models with constructs superopt cannot handle, one per file; tests/integration.sh checks
that `superopt run` and `superopt MODEL` refuse each with one line naming the file, the node and its operator
(exit 1), never a crash or a half-written output.

usage: make_unsupported.py OUTDIR
Writes OUTDIR/NAME.onnx and OUTDIR/list.txt, one line per model: "NAME NODE OPERATOR" (the node's name and the
ONNX operator the message must name).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else "unsupported"
os.makedirs(OUT, exist_ok=True)
rng = np.random.default_rng(5)
listing = []


def save(name, node, op, nodes, inputs, outputs, inits=(), opset=17, extra_opsets=(), value_info=()):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits), value_info=list(value_info))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)] + list(extra_opsets))
    m.ir_version = 8
    onnx.save(m, os.path.join(OUT, name + ".onnx"))
    listing.append("%s %s %s" % (name, node, op))


def vi(name, shape, t=T.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def w(name, *shape):
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)


# a custom-domain operator with no shape declared for its output
save("custom_op", "fancy_0", "FancyOp",
     [helper.make_node("Relu", ["x"], ["r"], name="relu_0"),
      helper.make_node("FancyOp", ["r"], ["f"], name="fancy_0", domain="com.example"),
      helper.make_node("Relu", ["f"], ["y"], name="relu_1")],
     [vi("x", [1, 4])], [vi("y", [1, 4])], extra_opsets=[helper.make_opsetid("com.example", 1)])
# a custom-domain operator whose output shape is declared: kept opaque, but nothing can run it
save("custom_op_declared", "fancy_1", "FancyOp",
     [helper.make_node("FancyOp", ["x"], ["f"], name="fancy_1", domain="com.example"),
      helper.make_node("Relu", ["f"], ["y"], name="relu_0")],
     [vi("x", [1, 4])], [vi("y", [1, 4])], extra_opsets=[helper.make_opsetid("com.example", 1)], value_info=[vi("f", [1, 4])])
# NonZero of a computed tensor: a data-dependent output shape
save("nonzero_computed", "nz_0", "NonZero",
     [helper.make_node("Relu", ["x"], ["r"], name="relu_0"),
      helper.make_node("NonZero", ["r"], ["y"], name="nz_0")],
     [vi("x", [2, 3])], [vi("y", [2, None], T.INT64)])
# Loop: control flow with a subgraph
body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"], name="b_id"),
                          helper.make_node("Add", ["v_in", "one"], ["v_out"], name="b_add")], "body",
                         [vi("i", [], T.INT64), vi("cond_in", [], T.BOOL), vi("v_in", [1])],
                         [vi("cond_out", [], T.BOOL), vi("v_out", [1])],
                         [numpy_helper.from_array(np.ones(1, np.float32), "one")])
save("loop", "loop_0", "Loop",
     [helper.make_node("Loop", ["trip", "cond", "x"], ["y"], name="loop_0", body=body)],
     [vi("x", [1])], [vi("y", [1])],
     [numpy_helper.from_array(np.array(3, np.int64), "trip"), numpy_helper.from_array(np.array(True), "cond")])
# float16 arithmetic: a Cast to FLOAT16 (float16 initializers are widened to float32; float16 compute is refused)
save("cast_float16", "cast_0", "Cast",
     [helper.make_node("Cast", ["x"], ["h"], name="cast_0", to=T.FLOAT16), helper.make_node("Cast", ["h"], ["y"], name="back", to=T.FLOAT)],
     [vi("x", [2, 3])], [vi("y", [2, 3])])
# an LSTM whose activation ONNX does not define
save("lstm_bad_activation", "lstm_0", "LSTM",
     [helper.make_node("LSTM", ["x", "W", "R"], ["y"], name="lstm_0", hidden_size=3, activations=["Sigmoid", "Swish", "Tanh"])],
     [vi("x", [2, 1, 4])], [vi("y", [2, 1, 1, 3])], [w("W", 1, 12, 4), w("R", 1, 12, 3)])
# a GRU with a clip that is not positive
save("gru_clip_negative", "gru_0", "GRU",
     [helper.make_node("GRU", ["x", "W", "R"], ["y"], name="gru_0", hidden_size=3, clip=-1.0)],
     [vi("x", [2, 1, 4])], [vi("y", [2, 1, 1, 3])], [w("W", 1, 9, 4), w("R", 1, 9, 3)])
# a pooling superopt does not implement (MaxRoiPool; LpPool was this case until it joined the operator table)
save("maxroipool", "roi_0", "MaxRoiPool",
     [helper.make_node("MaxRoiPool", ["x", "rois"], ["y"], name="roi_0", pooled_shape=[2, 2])],
     [vi("x", [1, 2, 4, 4])], [vi("y", [1, 2, 2, 2])],
     [numpy_helper.from_array(np.array([[0, 0, 0, 3, 3]], np.float32), "rois")])
# a TfIdfVectorizer whose ngram_counts do not split the pool into n-grams (ONNX Runtime 1.30 aborts on it)
save("tfidf_bad_counts", "tfidf_0", "TfIdfVectorizer",
     [helper.make_node("TfIdfVectorizer", ["x"], ["y"], name="tfidf_0", mode="TF", min_gram_length=1, max_gram_length=3,
                       max_skip_count=0, ngram_counts=[0, 3, 7], ngram_indexes=list(range(8)), pool_int64s=list(range(14)))],
     [vi("x", [9], T.INT32)], [vi("y", [8])], opset=9)

with open(os.path.join(OUT, "list.txt"), "w") as f:
    f.write("\n".join(listing) + "\n")
print("wrote %d models to %s" % (len(listing), OUT))
