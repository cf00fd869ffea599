#!/usr/bin/python3
"""make_onnx_seeds.py - writes tiny ONNX models into tests/fuzz/onnx/ as seeds for fuzz_onnx: one or
two nodes of each imported operator family, constant-folding chains (Shape/Gather/Concat/Reshape),
opaque operators and optional inputs, nested subgraphs (If in If, Loop), so that the fuzzer starts with
every importer path reachable in a few hundred bytes; and into tests/fuzz/onnx_dir/ the seeds of
fuzz_onnx_dir (4-byte little-endian model length, model, external-data bytes): initializers in external
data inside and outside the model's folder (plain, sub/, through a file symlink and a folder symlink,
'..', absolute, a FIFO), in a subgraph too. Deterministic: rerunning rewrites identical files."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "onnx")
OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "onnx_dir")


def vi(name, shape, t=T.FLOAT):
    return h.make_tensor_value_info(name, t, shape)


def init(name, arr):
    return nh.from_array(np.asarray(arr), name)


def save(name, nodes, inputs, outputs, inits=(), opset=13):
    g = h.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)], producer_name="seed")
    m.ir_version = 8
    with open(os.path.join(OUT, f"seed_{name}.onnx"), "wb") as f:
        f.write(m.SerializeToString())


def f32(*shape, seed=0):
    return np.random.RandomState(seed).uniform(-1, 1, shape).astype(np.float32)


def main():
    os.makedirs(OUT, exist_ok=True)
    x4 = vi("x", [1, 2, 4, 4])
    y = vi("y", None)
    # convolution family
    save("conv", [h.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1], strides=[1, 1])], [x4], [y],
         [init("w", f32(3, 2, 3, 3)), init("b", f32(3))])
    save("conv_group", [h.make_node("Conv", ["x", "w"], ["y"], group=2, dilations=[2, 2], auto_pad="SAME_UPPER")],
         [x4], [y], [init("w", f32(2, 1, 3, 3))])
    save("bn_relu", [h.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["t"], epsilon=1e-5),
                     h.make_node("Relu", ["t"], ["y"])], [x4], [y],
         [init("s", f32(2)), init("b", f32(2)), init("m", f32(2)), init("v", np.ones(2, np.float32))])
    save("pools", [h.make_node("MaxPool", ["x"], ["t"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
                   h.make_node("AveragePool", ["t"], ["u"], kernel_shape=[2, 2], pads=[1, 1, 0, 0],
                               count_include_pad=1),
                   h.make_node("GlobalAveragePool", ["u"], ["y"])], [x4], [y])
    # dense family
    x2 = vi("x", [2, 3])
    save("gemm", [h.make_node("Gemm", ["x", "w", "c"], ["y"], alpha=0.5, beta=2.0, transB=1)], [x2], [y],
         [init("w", f32(4, 3)), init("c", f32(4))])
    save("matmul_add", [h.make_node("MatMul", ["x", "w"], ["t"]), h.make_node("Add", ["t", "b"], ["y"])], [x2], [y],
         [init("w", f32(3, 5)), init("b", f32(5))])
    save("elementwise", [h.make_node("Sub", ["x", "c"], ["a"]), h.make_node("Mul", ["a", "a"], ["b"]),
                         h.make_node("Div", ["b", "c"], ["d"]), h.make_node("Pow", ["d", "e"], ["p"]),
                         h.make_node("Sqrt", ["p"], ["q"]), h.make_node("Exp", ["q"], ["r"]),
                         h.make_node("Log", ["r"], ["s"]), h.make_node("Neg", ["s"], ["t"]),
                         h.make_node("Reciprocal", ["t"], ["u"]), h.make_node("Erf", ["u"], ["v"]),
                         h.make_node("Tanh", ["v"], ["w"]), h.make_node("Sigmoid", ["w"], ["y"])], [x2], [y],
         [init("c", np.float32([2.0, 3.0, 4.0])), init("e", np.float32(2.0))])
    save("clip", [h.make_node("Clip", ["x", "lo", "hi"], ["y"])], [x2], [y],
         [init("lo", np.float32(-0.5)), init("hi", np.float32(0.5))])
    save("clip_opset6", [h.make_node("Clip", ["x"], ["y"], min=-1.0, max=1.0)], [x2], [y], opset=7)
    save("softmax_ln", [h.make_node("Softmax", ["x"], ["t"], axis=-1),
                        h.make_node("LayerNormalization", ["t", "s", "b"], ["y"], axis=-1, epsilon=1e-5)],
         [x2], [y], [init("s", f32(3)), init("b", f32(3))], opset=17)
    save("reducemean", [h.make_node("ReduceMean", ["x"], ["y"], axes=[1], keepdims=0)], [x2], [y])
    save("reducemean18", [h.make_node("ReduceMean", ["x", "ax"], ["y"], keepdims=1)], [x2], [y],
         [init("ax", np.int64([-1]))], opset=18)
    # layout family
    save("reshape_transpose", [h.make_node("Reshape", ["x", "s"], ["t"]),
                               h.make_node("Transpose", ["t"], ["u"], perm=[1, 0, 2]),
                               h.make_node("Flatten", ["u"], ["y"], axis=1)], [x2], [y],
         [init("s", np.int64([1, 3, -1]))])
    save("concat_split", [h.make_node("Concat", ["x", "x"], ["t"], axis=0),
                          h.make_node("Split", ["t", "sp"], ["a", "b"], axis=0),
                          h.make_node("Add", ["a", "b"], ["y"])], [x2], [y], [init("sp", np.int64([1, 3]))])
    save("split_attr", [h.make_node("Split", ["x"], ["a", "b"], axis=1, split=[1, 2]),
                        h.make_node("Identity", ["b"], ["y"])], [x2], [y], opset=11)
    save("squeeze", [h.make_node("Unsqueeze", ["x", "ax"], ["t"]), h.make_node("Squeeze", ["t", "ax"], ["y"])],
         [x2], [y], [init("ax", np.int64([0]))])
    save("slice_gather", [h.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["t"]),
                          h.make_node("Gather", ["t", "i"], ["y"], axis=1)], [x2], [y],
         [init("st", np.int64([0, 2])), init("en", np.int64([2, -4])), init("ax", np.int64([0, 1])),
          init("sp", np.int64([1, -1])), init("i", np.int64([[0, 1], [1, 0]]))])
    save("pad_expand", [h.make_node("Pad", ["x", "p"], ["t"], mode="reflect"),
                        h.make_node("Expand", ["t", "s"], ["y"])], [x2], [y],
         [init("p", np.int64([0, 1, 0, 1])), init("s", np.int64([3, 1, 1]))])
    save("gather_embed", [h.make_node("Gather", ["e", "ids"], ["y"], axis=0)], [vi("ids", [2, 3], T.INT64)], [y],
         [init("e", f32(10, 4))])
    # constant folding chains
    save("shape_chain", [h.make_node("Shape", ["x"], ["s"]),
                         h.make_node("Gather", ["s", "zero"], ["d0"], axis=0),
                         h.make_node("Unsqueeze", ["d0", "ax"], ["d0u"]),
                         h.make_node("Concat", ["d0u", "m1"], ["ns"], axis=0),
                         h.make_node("Reshape", ["x", "ns"], ["y"])], [x4], [y],
         [init("zero", np.int64(0)), init("ax", np.int64([0])), init("m1", np.int64([-1]))])
    save("constant_ops", [h.make_node("Constant", [], ["c"], value=init("cv", f32(2, 3))),
                          h.make_node("ConstantOfShape", ["shp"], ["z"], value=init("zv", np.float32([1.5]))),
                          h.make_node("Range", ["r0", "r1", "r2"], ["r"]),
                          h.make_node("Cast", ["r"], ["rf"], to=T.FLOAT),
                          h.make_node("Where", ["cond", "c", "z"], ["w"]),
                          h.make_node("Tile", ["w", "rep"], ["tw"]),
                          h.make_node("ReduceSum", ["tw"], ["s"], keepdims=0),
                          h.make_node("Add", ["x", "s"], ["t"]), h.make_node("Mul", ["t", "rf"], ["y"])],
         [vi("x", [3])], [y],
         [init("shp", np.int64([2, 3])), init("r0", np.int64(0)), init("r1", np.int64(3)), init("r2", np.int64(1)),
          init("cond", np.array([[True, False, True], [False, True, False]])), init("rep", np.int64([2, 1]))])
    # recurrent
    H = 3
    save("lstm", [h.make_node("LSTM", ["x", "W", "R", "B", "", "h0", "c0"], ["Y", "Yh", "Yc"], hidden_size=H,
                              direction="bidirectional"),
                  h.make_node("Identity", ["Y"], ["y"])], [vi("x", [2, 1, 2])], [y],
         [init("W", f32(2, 4 * H, 2)), init("R", f32(2, 4 * H, H)), init("B", f32(2, 8 * H)),
          init("h0", f32(2, 1, H)), init("c0", f32(2, 1, H))], opset=14)
    # opaque operators with shapes from value_info, dropout with optional outputs
    g = h.make_graph([h.make_node("Softplus", ["x"], ["t"]), h.make_node("Dropout", ["t"], ["u", "mask"]),
                      h.make_node("FancyOp", ["u"], ["v"], domain="com.example"),
                      h.make_node("Relu", ["v"], ["y"])], "opaque", [x2], [y], value_info=[vi("v", [2, 3])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13), h.make_opsetid("com.example", 1)])
    m.ir_version = 8
    with open(os.path.join(OUT, "seed_opaque.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    # typed (non-raw) initializer fields and float16
    w = h.make_tensor("w", T.FLOAT, [3], [1.0, 2.0, 3.0])
    w16 = h.make_tensor("w16", T.FLOAT16, [3], np.float16([1, 2, 3]).view(np.uint16).tolist())
    save("typed_fields", [h.make_node("Cast", ["w16"], ["wf"], to=T.FLOAT), h.make_node("Add", ["x", "w"], ["t"]),
                          h.make_node("Mul", ["t", "wf"], ["y"])], [x2], [y], [w, w16])
    nested_seeds()
    dir_seeds()
    print(f"wrote {len([n for n in os.listdir(OUT) if n.startswith('seed_')])} seeds into {OUT}, "
          f"{len(os.listdir(OUT_DIR))} into {OUT_DIR}")


def if_node(depth, out):
    """If whose then-branch holds an If ... `depth` deep; each branch yields a [2] float."""
    def branch(d, tag):
        o = f"{tag}{d}"
        if d == 0:
            return h.make_graph([h.make_node("Constant", [], [o], value=init(o + "v", f32(2, seed=d)))], o, [],
                                [vi(o, [2])])
        inner = if_node(d - 1, o)
        return h.make_graph([h.make_node("Constant", [], [o + "c"], value=init(o + "cv", np.array(True))), inner], o,
                            [], [vi(o, [2])])
    return h.make_node("If", [out + "c"] if depth else ["cond"], [out], then_branch=branch(depth, out + "t"),
                       else_branch=branch(0, out + "e"))


def nested_seeds():
    """Subgraphs: If nested 3 deep (each level's condition a Constant in the enclosing graph), and a
    Loop whose body adds a weight of the outer graph (an outer-scope reference)."""
    x = vi("x", [2])
    y = vi("y", None)
    top = if_node(3, "r")
    top.input[0] = "cond"
    save("if_nested", [h.make_node("Constant", [], ["cond"], value=init("cv", np.array(False))), top,
                       h.make_node("Add", ["x", "r"], ["y"])], [x], [y])
    body = h.make_graph([h.make_node("Identity", ["c_in"], ["c_out"]), h.make_node("Add", ["v_in", "w"], ["v_out"])],
                        "body", [vi("i", [], T.INT64), vi("c_in", [], T.BOOL), vi("v_in", [2])],
                        [vi("c_out", [], T.BOOL), vi("v_out", [2])])
    save("loop", [h.make_node("Loop", ["n", "", "x"], ["y"], body=body)], [x], [y],
         [init("n", np.int64(3)), init("w", f32(2))])


def ext_tensor(name, arr, location, offset=0):
    from onnx.external_data_helper import set_external_data
    t = nh.from_array(np.asarray(arr), name)
    raw = t.raw_data
    set_external_data(t, location, offset=offset or None, length=len(raw))
    t.data_location = T.EXTERNAL
    t.ClearField("raw_data")
    return t, raw


def dir_seed(name, model, data):
    b = model.SerializeToString()
    with open(os.path.join(OUT_DIR, f"seed_{name}.bin"), "wb") as f:
        f.write(len(b).to_bytes(4, "little") + b + data)


def dir_seeds():
    os.makedirs(OUT_DIR, exist_ok=True)
    w = f32(2, 3, seed=7)
    x2 = vi("x", [2, 3])
    y = vi("y", None)
    for name, loc in [("plain", "w.bin"), ("sub", "sub/w.bin"), ("file_symlink", "wlink.bin"),
                      ("dir_symlink", "link/outside.bin"), ("dotdot", "../outside.bin"), ("absolute", "/etc/passwd"),
                      ("fifo", "fifo"), ("dot_sub", "./sub/../w.bin")]:
        t, raw = ext_tensor("w", w, loc)
        g = h.make_graph([h.make_node("Add", ["x", "w"], ["y"])], name, [x2], [y], initializer=[t])
        m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
        m.ir_version = 8
        dir_seed(name, m, raw)
    # external data at an offset, and an initializer in external data inside a nested subgraph
    t, raw = ext_tensor("w", w, "w.bin", offset=16)
    g = h.make_graph([h.make_node("Add", ["x", "w"], ["y"])], "offset", [x2], [y], initializer=[t])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    dir_seed("offset", m, bytes(16) + raw)
    t, raw = ext_tensor("sw", w, "w.bin")
    then_g = h.make_graph([h.make_node("Identity", ["sw"], ["o"])], "then", [], [vi("o", [2, 3])], initializer=[t])
    else_g = h.make_graph([h.make_node("Identity", ["x"], ["o2"])], "else", [], [vi("o2", [2, 3])])
    g = h.make_graph([h.make_node("Constant", [], ["c"], value=init("cv", np.array(True))),
                      h.make_node("If", ["c"], ["r"], then_branch=then_g, else_branch=else_g),
                      h.make_node("Add", ["x", "r"], ["y"])], "sub_ext", [x2], [y])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    dir_seed("subgraph_ext", m, raw)


if __name__ == "__main__":
    sys.exit(main())
