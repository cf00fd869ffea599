#!/usr/bin/env python3
"""make_layout_models.py - the two small models of tests/integration.sh 4c (issue 15, `--layout auto`): lay_rules.onnx
(32 channels: 1x1 conv + relu, 3x3/2 max pool pad 1, 3x3/2 conv + batchnorm + relu, 3x3 conv + relu, global average
pool: every node is covered by proven layout rules at b = 8 and 16, so the rule placement is the pass's and auto must
keep the rules) and lay_pass.onnx (20 channels, not a multiple of 8 or 16: no exact blocking, so no layout rule applies
and only the hand-written pass, which pads channels, can block it); lay_dw.onnx (32 channels: 1x1 conv + relu, depthwise
3x3 conv + batchnorm + relu, depthwise 3x3/2 conv + relu, 1x1 conv, global average pool: MobileNet's block, covered by
the depthwise layout rules, group=dw). Usage: make_layout_models.py OUT_DIR"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)


def w(name, *shape):
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), name)


def model(path, C, full):
    inits, nodes = [], []

    def conv(k, s, name, src):
        inits.extend([w(name + "_w", C, C, k, k), w(name + "_b", C)])
        nodes.append(helper.make_node("Conv", [src, name + "_w", name + "_b"], [name], kernel_shape=[k, k], strides=[s, s], pads=[k // 2] * 4))
        return name

    nodes.append(helper.make_node("Relu", [conv(1, 1, "c1", "x")], ["r1"]))
    y = "r1"
    if full:
        nodes.append(helper.make_node("MaxPool", [y], ["p1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
        y = conv(3, 2, "c2", "p1")
        inits.extend([w("bn_s", C), w("bn_b", C), w("bn_m", C), numpy_helper.from_array((rng.random(C) + 0.5).astype(np.float32), "bn_v")])
        nodes.append(helper.make_node("BatchNormalization", [y, "bn_s", "bn_b", "bn_m", "bn_v"], ["bn"], epsilon=1e-5))
        nodes.append(helper.make_node("Relu", ["bn"], ["r2"]))
        y = "r2"
    nodes.append(helper.make_node("Relu", [conv(3, 1, "c3", y)], ["r3"]))
    nodes.append(helper.make_node("GlobalAveragePool", ["r3"], ["out"]))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, 28, 28])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def model_dw(path, C):
    inits = [w("c1_w", C, C, 1, 1), w("c1_b", C), w("d1_w", C, 1, 3, 3), w("d2_w", C, 1, 3, 3), w("d2_b", C), w("c2_w", C, C, 1, 1),
             w("bn_s", C), w("bn_b", C), w("bn_m", C), numpy_helper.from_array((rng.random(C) + 0.5).astype(np.float32), "bn_v")]
    nodes = [helper.make_node("Conv", ["x", "c1_w", "c1_b"], ["c1"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "d1_w"], ["d1"], kernel_shape=[3, 3], pads=[1] * 4, group=C),
             helper.make_node("BatchNormalization", ["d1", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn"], epsilon=1e-5),
             helper.make_node("Relu", ["bn"], ["r2"]),
             helper.make_node("Conv", ["r2", "d2_w", "d2_b"], ["d2"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4, group=C),
             helper.make_node("Relu", ["d2"], ["r3"]),
             helper.make_node("Conv", ["r3", "c2_w"], ["c2"], kernel_shape=[1, 1]),
             helper.make_node("GlobalAveragePool", ["c2"], ["out"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, 28, 28])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def main():
    d = sys.argv[1]
    model(os.path.join(d, "lay_rules.onnx"), 32, True)
    model(os.path.join(d, "lay_pass.onnx"), 20, False)
    model_dw(os.path.join(d, "lay_dw.onnx"), 32)


if __name__ == "__main__":
    main()
