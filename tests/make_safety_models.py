#!/usr/bin/env python3
"""make_safety_models.py - writes the small models of tests/safety.sh (issue 19) into OUT_DIR:
clip.onnx (Clip(X, -1, 1) * 3: differs from X * 3 only outside [-1, 1]), relu_big.onnx (Relu(A)
next to A * 1e5 in one output, A = X + 0.5: relu -> identity is small against the largest value), inf.onnx
(Relu(X * 1e20) * 1e20: outputs hold +Inf and 0; with relu -> identity, -Inf), opaque.onnx (a
custom-domain operator `run` cannot execute), noise.onnx (two outputs: y1 = GlobalAveragePool(X * 1e8) over
64x64 planes, whose float rounding differs between kernel levels by far more than 1; y2 = Relu(X + 0.5), exact).
Usage: make_safety_models.py OUT_DIR"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(out_dir, name, nodes, inits, out_name, shape=(1, 8), out_shape=None):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info(out_name, TensorProto.FLOAT, out_shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("custom.test", 1)])
    onnx.save(m, os.path.join(out_dir, name + ".onnx"))


def c(name, v):
    return numpy_helper.from_array(np.array(v, np.float32), name)


def main():
    d = sys.argv[1]
    save(d, "clip", [helper.make_node("Clip", ["x", "lo", "hi"], ["c"]), helper.make_node("Mul", ["c", "three"], ["y"])],
         [c("lo", -1.0), c("hi", 1.0), c("three", 3.0)], "y")
    save(d, "relu_big", [helper.make_node("Add", ["x", "half"], ["a"]), helper.make_node("Relu", ["a"], ["r"]),
                         helper.make_node("Mul", ["a", "big"], ["b"]), helper.make_node("Concat", ["r", "b"], ["y"], axis=0)],
         [c("half", 0.5), c("big", 1e5)], "y")
    save(d, "inf", [helper.make_node("Mul", ["x", "e20"], ["a"]), helper.make_node("Relu", ["a"], ["r"]),
                    helper.make_node("Mul", ["r", "e20"], ["y"])], [c("e20", 1e20)], "y")
    # per-output noise floor: y1's floor (rounding of a 4096-term mean of values near 1e8) is large, y2's is 0
    g = helper.make_graph([helper.make_node("Mul", ["x", "e8"], ["xb"]), helper.make_node("GlobalAveragePool", ["xb"], ["y1"]),
                           helper.make_node("Add", ["x", "half"], ["a"]), helper.make_node("Relu", ["a"], ["y2"])], "noise",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 64, 64])],
                          [helper.make_tensor_value_info("y1", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("y2", TensorProto.FLOAT, None)], [c("e8", 1e8), c("half", 0.5)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(d, "noise.onnx"))
    save(d, "opaque", [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mystery", ["r"], ["y"], domain="custom.test")],
         [], "y", out_shape=[1, 8])


if __name__ == "__main__":
    main()
