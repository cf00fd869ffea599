#!/usr/bin/env python3
"""make_chain.py - writes a deep chain model for the scale checks: N unnamed nodes on a 1x64 tensor,
Add(+1) / Relu alternating with a MatMul (0.5 * I) every 50th node. Usage: make_chain.py N OUT.onnx"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    nodes, prev = [], "x"
    for k in range(n):
        if k % 50 == 49:
            nodes.append(helper.make_node("MatMul", [prev, "wm"], ["m%d" % k]))
            prev = "m%d" % k
        elif k % 2 == 0:
            nodes.append(helper.make_node("Add", [prev, "w"], ["a%d" % k]))
            prev = "a%d" % k
        else:
            nodes.append(helper.make_node("Relu", [prev], ["r%d" % k]))
            prev = "r%d" % k
    inits = [numpy_helper.from_array(np.ones((1, 64), np.float32), "w"),
             numpy_helper.from_array((np.eye(64) * 0.5).astype(np.float32), "wm")]
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 64])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out)


if __name__ == "__main__":
    main()
