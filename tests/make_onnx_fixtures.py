#!/usr/bin/python3
"""make_onnx_fixtures.py - writes small ONNX models exercising the importer (constant-folding chains,
opset-dependent attribute forms, opaque ops, external data, LSTM holes) with numpy reference outputs.

usage: make_onnx_fixtures.py OUTDIR
For each case NAME: NAME.onnx, NAME.in.bin (float32 inputs back to back), NAME.out.bin (float32
outputs back to back; absent when the model cannot be run by the reference kernels), and a line
"NAME runnable|opaque" in OUTDIR/list.txt.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)
OUT = sys.argv[1] if len(sys.argv) > 1 else "fixtures"
os.makedirs(OUT, exist_ok=True)
listing = []


def f32(*shape):
    return rng.uniform(-1, 1, size=shape).astype(np.float32)


def i64(v):
    return np.array(v, dtype=np.int64)


def save(name, nodes, inputs, outputs, inits, opset, feeds, expect, runnable=True, domains=(), check=True):
    """inputs: [(name, shape)], outputs: [(name, shape or None)], inits: {name: ndarray}."""
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    ops = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    model = helper.make_model(graph, opset_imports=ops, producer_name="make_onnx_fixtures")
    model.ir_version = 7 if opset < 15 else 8
    if check:
        onnx.checker.check_model(model)
    onnx.save(model, os.path.join(OUT, name + ".onnx"))
    np.concatenate([feeds[n].ravel() for n, _ in inputs]).astype(np.float32).tofile(os.path.join(OUT, name + ".in.bin"))
    if runnable:
        np.concatenate([np.asarray(e, np.float32).ravel() for e in expect]).tofile(os.path.join(OUT, name + ".out.bin"))
    listing.append(f"{name} {'runnable' if runnable else 'opaque'}")


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def C(name, value):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value), name + "_v"))


# 1. torch's x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze(axes input) -> Concat -> Reshape
x = f32(2, 3, 4, 4)
W = f32(48, 5)
save("view_flatten", [
    helper.make_node("Shape", ["x"], ["s"]),
    C("zero", i64(0)),
    helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
    C("ax0", i64([0])),
    helper.make_node("Unsqueeze", ["b", "ax0"], ["b1"]),
    C("m1", i64([-1])),
    helper.make_node("Concat", ["b1", "m1"], ["shape"], axis=0),
    helper.make_node("Reshape", ["x", "shape"], ["flat"]),
    helper.make_node("MatMul", ["flat", "W"], ["y"]),
], [("x", [2, 3, 4, 4])], [("y", [2, 5])], {"W": W}, 13, {"x": x}, [x.reshape(2, -1) @ W])

# 2. BERT-style reshape at opset 11 (Unsqueeze axes attribute), last-axis softmax, and an
#    opset-11 softmax on a middle axis (coerced 2-D semantics)
x = f32(1, 8, 16)
save("bert_reshape_op11", [
    helper.make_node("Shape", ["x"], ["s"]),
    C("i0", i64(0)), C("i1", i64(1)),
    helper.make_node("Gather", ["s", "i0"], ["d0"]),
    helper.make_node("Gather", ["s", "i1"], ["d1"]),
    helper.make_node("Unsqueeze", ["d0"], ["u0"], axes=[0]),
    helper.make_node("Unsqueeze", ["d1"], ["u1"], axes=[0]),
    C("heads", i64([4, 4])),
    helper.make_node("Concat", ["u0", "u1", "heads"], ["shape"], axis=0),
    helper.make_node("Reshape", ["x", "shape"], ["r"]),
    helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3]),
    helper.make_node("Softmax", ["t"], ["y1"], axis=3),
    helper.make_node("Softmax", ["x"], ["y2"], axis=1),
], [("x", [1, 8, 16])], [("y1", [1, 4, 8, 4]), ("y2", [1, 8, 16])], {}, 11, {"x": x},
    [softmax(x.reshape(1, 8, 4, 4).transpose(0, 2, 1, 3), 3), softmax(x.reshape(1, -1), 1).reshape(1, 8, 16)])

# 3. integer helper chains: ConstantOfShape, Range, Equal, Where, Cast, Mul, Expand, ReduceProd
x = f32(2, 6)
save("int_chains", [
    C("two", i64([2])),
    helper.make_node("ConstantOfShape", ["two"], ["ones"], value=numpy_helper.from_array(i64([1]), "v")),
    C("r0", i64(0)), C("r1", i64(3)), C("r2", i64(1)),
    helper.make_node("Range", ["r0", "r1", "r2"], ["rng"]),           # [0,1,2]
    C("neg", i64([3, -1])),
    C("m1", i64(-1)),
    helper.make_node("Equal", ["neg", "m1"], ["isneg"]),
    helper.make_node("Where", ["isneg", "ones", "neg"], ["sh"]),       # [3,1]
    helper.make_node("Mul", ["sh", "two"], ["sh2"]),                   # [6,2]
    helper.make_node("Cast", ["sh2"], ["sh3"], to=TensorProto.INT64),
    helper.make_node("ReduceProd", ["sh3"], ["prod"], keepdims=1),     # [12]
    helper.make_node("Reshape", ["x", "prod"], ["flat"]),
    helper.make_node("Reshape", ["flat", "sh3"], ["x62"]),
    helper.make_node("Cast", ["rng"], ["rf"], to=TensorProto.FLOAT),
    helper.make_node("Unsqueeze", ["rf", "r0b"], ["rf2"]),             # [1,3]
    C("r0b", i64([0])),
    helper.make_node("Tile", ["rf2", "tl"], ["rft"]),                  # [1,6]... via repeats [1,2]
    C("tl", i64([1, 2])),
    helper.make_node("Add", ["x62", "b62"], ["sum"]),
    helper.make_node("Reshape", ["rft", "sh1"], ["rf3"]),              # [6,1]
    C("sh1", i64([6, 1])),
    helper.make_node("Expand", ["rf3", "sh3"], ["b62"]),               # [6,2]
    helper.make_node("Identity", ["sum"], ["y"]),
], [("x", [2, 6])], [("y", [6, 2])], {}, 13, {"x": x},
    [x.reshape(6, 2) + np.tile(np.arange(3, dtype=np.float32), 2).reshape(6, 1)], check=False)  # deliberately not sorted

# 4. Slice with negative steps and axes, Split with sizes input, Pad with value, Concat
x = f32(2, 5, 6)
p = np.pad(x, ((0, 0), (1, 2), (0, 1)), constant_values=0.5)
sl = x[:, ::-2, 1:5]
a, b = x[:, :, :2], x[:, :, 2:]
save("slice_split_pad", [
    C("st", i64([-1, 1])), C("en", i64([-100, 5])), C("ax", i64([1, -1])), C("sp", i64([-2, 1])),
    helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["s"]),
    C("sizes", i64([2, 4])),
    helper.make_node("Split", ["x", "sizes"], ["a", "b"], axis=2),
    C("pads", i64([0, 1, 0, 0, 2, 1])), C("pv", np.array(0.5, np.float32)),
    helper.make_node("Pad", ["x", "pads", "pv"], ["p"]),
    helper.make_node("Relu", ["b"], ["rb"]),
    helper.make_node("Concat", ["rb", "a"], ["c"], axis=2),
], [("x", [2, 5, 6])], [("s", [2, 3, 4]), ("c", [2, 5, 6]), ("p", [2, 8, 7])], {}, 13, {"x": x},
    [sl, np.concatenate([np.maximum(b, 0), a], axis=2), p])

# 5. opset 18: ReduceMean / Squeeze / Unsqueeze axes as inputs, keepdims 0, Split num_outputs
x = f32(2, 1, 6)
save("axes_op18", [
    C("a2", i64([-1])),
    helper.make_node("ReduceMean", ["x", "a2"], ["m"], keepdims=0),    # [2,1]
    C("a1", i64([1])),
    helper.make_node("Squeeze", ["x", "a1"], ["sq"]),                  # [2,6]
    helper.make_node("Unsqueeze", ["m", "a1"], ["um"]),                # [2,1,1]
    helper.make_node("Split", ["sq"], ["s0", "s1", "s2"], axis=1, num_outputs=3),
    helper.make_node("Sub", ["s2", "s0"], ["d"]),
], [("x", [2, 1, 6])], [("um", [2, 1, 1]), ("d", [2, 2])], {}, 18, {"x": x},
    [x.mean(axis=-1).reshape(2, 1, 1), x[:, 0, 4:6] - x[:, 0, 0:2]], check=False)  # onnx 1.12 predates opset 18

# 6. opset 9/10 attribute forms: Clip min/max, Slice attributes, Split attribute, Squeeze axes,
#    Pad attributes, Softmax default axis 1 on rank 3
x = f32(2, 4, 6)
save("old_attrs_op9", [
    helper.make_node("Clip", ["x"], ["c"], min=-0.5, max=0.25),
    helper.make_node("Slice", ["c"], ["s"], starts=[1], ends=[100], axes=[2]),
    helper.make_node("Split", ["s"], ["s0", "s1"], axis=1, split=[1, 3]),
    helper.make_node("Squeeze", ["s0"], ["q"], axes=[1]),
    helper.make_node("Pad", ["q"], ["p"], pads=[1, 0, 0, 2], mode="edge"),
    helper.make_node("Softmax", ["s1"], ["sm"]),
], [("x", [2, 4, 6])], [("p", [3, 7]), ("sm", [2, 3, 5])], {}, 9, {"x": x},
    [np.pad(np.clip(x, -0.5, 0.25)[:, 0, 1:], ((1, 0), (0, 2)), mode="edge"),
     softmax(np.clip(x, -0.5, 0.25)[:, 1:, 1:].reshape(2, -1), 1).reshape(2, 3, 5)])

# 7. Conv auto_pad SAME_UPPER with stride 2, MaxPool ceil_mode, AveragePool, Gemm transB/alpha,
#    BatchNormalization, Flatten
x = f32(1, 2, 7, 7)
Wc = f32(3, 2, 3, 3)
bc = f32(3)
Wg = f32(4, 12)
bg = f32(4)
sc, bb, mu, var = f32(3), f32(3), f32(3), np.abs(f32(3)) + 0.5


def conv2d(x, w, b, stride, pads):
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    N, C, H, W_ = xp.shape
    O, _, kh, kw = w.shape
    oh, ow = (H - kh) // stride + 1, (W_ - kw) // stride + 1
    y = np.zeros((N, O, oh, ow), np.float32)
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            y[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return y + b.reshape(1, -1, 1, 1)


cv = conv2d(x, Wc, bc, 2, [1, 1, 1, 1])                       # 7 -> 4 (SAME_UPPER total pad 2)
bn = (cv - mu.reshape(1, -1, 1, 1)) / np.sqrt(var.reshape(1, -1, 1, 1) + 1e-3) * sc.reshape(1, -1, 1, 1) + bb.reshape(1, -1, 1, 1)
mp = np.zeros((1, 3, 2, 2), np.float32)                        # kernel 3 stride 2 ceil: 4 -> 2
for i in range(2):
    for j in range(2):
        mp[:, :, i, j] = bn[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].max(axis=(2, 3))
gm = 0.5 * mp.reshape(1, -1) @ Wg.T + bg
save("conv_pool_gemm", [
    helper.make_node("Conv", ["x", "Wc", "bc"], ["cv"], auto_pad="SAME_UPPER", strides=[2, 2]),
    helper.make_node("BatchNormalization", ["cv", "sc", "bb", "mu", "var"], ["bn"], epsilon=1e-3),
    helper.make_node("MaxPool", ["bn"], ["mp"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
    helper.make_node("Flatten", ["mp"], ["f"]),
    helper.make_node("Gemm", ["f", "Wg", "bg"], ["y"], transB=1, alpha=0.5),
], [("x", [1, 2, 7, 7])], [("y", [1, 4])], {"Wc": Wc, "bc": bc, "Wg": Wg, "bg": bg, "sc": sc, "bb": bb, "mu": mu, "var": var},
    13, {"x": x}, [gm])

# 8. LSTM, bidirectional, with h0/c0 after an absent sequence_lens, and a forward LSTM
#    without bias but with initial state (hole at B and sequence_lens)
T, B, I, H = 3, 2, 4, 5


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def lstm_dir(x, W, R, Bi, h, c, reverse):
    ys = [None] * x.shape[0]
    order = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    for t in order:
        g = x[t] @ W.T + h @ R.T + Bi[:4 * H] + Bi[4 * H:]
        i, o, f, cc = np.split(g, 4, axis=1)
        i, o, f, cc = sigmoid(i), sigmoid(o), sigmoid(f), np.tanh(cc)
        c = f * c + i * cc
        h = o * np.tanh(c)
        ys[t] = h
    return np.stack(ys), h, c


x = f32(T, B, I)
Wl, Rl, Bl = f32(2, 4 * H, I), f32(2, 4 * H, H), f32(2, 8 * H)
h0, c0 = f32(2, B, H), f32(2, B, H)
yf, hf, cf = lstm_dir(x, Wl[0], Rl[0], Bl[0], h0[0], c0[0], False)
yb, hb, cb = lstm_dir(x, Wl[1], Rl[1], Bl[1], h0[1], c0[1], True)
Y = np.stack([yf, yb], axis=1)
W1, R1, h1, c1 = f32(1, 4 * H, I), f32(1, 4 * H, H), f32(1, B, H), f32(1, B, H)
y1, hh1, _ = lstm_dir(x, W1[0], R1[0], np.zeros(8 * H, np.float32), h1[0], c1[0], False)
save("lstm_holes", [
    helper.make_node("LSTM", ["x", "W", "R", "B", "", "h0", "c0"], ["Y", "Yh"], hidden_size=H, direction="bidirectional"),
    helper.make_node("LSTM", ["x", "W1", "R1", "", "", "h1", "c1"], ["Y1", "Yh1", "Yc1"], hidden_size=H),
], [("x", [T, B, I])], [("Y", [T, 2, B, H]), ("Yh", [2, B, H]), ("Y1", [T, 1, B, H])],
    {"W": Wl, "R": Rl, "B": Bl, "h0": h0, "c0": c0, "W1": W1, "R1": R1, "h1": h1, "c1": c1}, 14, {"x": x},
    [Y, np.stack([hf, hb]), y1[:, None]])

# 9. initializers in other element types: double and float16 weights cast to float, int32 shape
x = f32(2, 3)
wd = rng.uniform(-1, 1, size=(3,)).astype(np.float64)
wh = rng.uniform(-1, 1, size=(3,)).astype(np.float16)
save("dtypes", [
    helper.make_node("Cast", ["wd"], ["wdf"], to=TensorProto.FLOAT),
    helper.make_node("Cast", ["wh"], ["whf"], to=TensorProto.FLOAT),
    helper.make_node("Add", ["x", "wdf"], ["a"]),
    helper.make_node("Mul", ["a", "whf"], ["m"]),
    helper.make_node("Cast", ["sh32"], ["sh"], to=TensorProto.INT64),
    helper.make_node("Reshape", ["m", "sh"], ["y"]),
], [("x", [2, 3])], [("y", [3, 2])], {"wd": wd, "wh": wh, "sh32": np.array([3, 2], np.int32)}, 13, {"x": x},
    [((x + wd.astype(np.float32)) * wh.astype(np.float32)).reshape(3, 2)])

# 9b. activations of MobileNet-v3 / detection models with their attributes (LeakyRelu alpha, HardSigmoid
#     alpha and beta, HardSwish; opset 14), values on both sides of every kink
x = np.array([[-8, -3, -1.5, -0.2, 0, 0.3, 1, 2.5, 3, 7]], np.float32)
hs = np.clip(0.25 * x + 0.4, 0, 1)
lr = np.where(x < 0, 0.1 * x, x)
hw = x * np.clip(x / 6 + 0.5, 0, 1)
save("activations", [
    helper.make_node("LeakyRelu", ["x"], ["l"], alpha=0.1),
    helper.make_node("HardSigmoid", ["x"], ["h"], alpha=0.25, beta=0.4),
    helper.make_node("HardSwish", ["x"], ["w"]),
    helper.make_node("LeakyRelu", ["x"], ["d"]),
    helper.make_node("HardSigmoid", ["x"], ["e"]),
], [("x", [1, 10])], [("l", [1, 10]), ("h", [1, 10]), ("w", [1, 10]), ("d", [1, 10]), ("e", [1, 10])], {}, 14, {"x": x},
    [lr, hs, hw, np.where(x < 0, 0.01 * x, x), np.clip(0.2 * x + 0.5, 0, 1)])

# 9c. Resize (H and W of a 4-D input) with hand-checked values: nearest asymmetric floor by scales
#     (rows doubled, columns x/0.5), linear half_pixel (coordinates (x+0.5)/2-0.5 clamped to [0,3]),
#     align_corners (x*3/6), nearest half_pixel at exact halves (0.5, 2.5) with both preferences,
#     and a 1-pixel output: pytorch_half_pixel samples 0, half_pixel samples 1.5.
x = np.array([10, 20, 30, 40], np.float32).reshape(1, 1, 1, 4)
def rs(out, mode, cm, sizes=None, scales=None, nm="round_prefer_floor"):
    ins = ["x", "roi", out + "_sc" if scales else "", out + "_sz" if sizes else ""]
    return helper.make_node("Resize", ins, [out], mode=mode, coordinate_transformation_mode=cm, nearest_mode=nm)
inits = {"roi": np.array([], np.float32), "a_sc": np.array([1, 1, 2, 0.5], np.float32)}
for o, n in [("b", 8), ("c", 7), ("d", 2), ("e", 2), ("f", 1), ("g", 1)]:
    inits[o + "_sz"] = np.array([1, 1, 1, n], np.int64)
save("resize", [
    rs("a", "nearest", "asymmetric", scales=True, nm="floor"),
    rs("b", "linear", "half_pixel", sizes=True),
    rs("c", "linear", "align_corners", sizes=True),
    rs("d", "nearest", "half_pixel", sizes=True, nm="round_prefer_ceil"),
    rs("e", "nearest", "half_pixel", sizes=True, nm="round_prefer_floor"),
    rs("f", "linear", "pytorch_half_pixel", sizes=True),
    rs("g", "linear", "half_pixel", sizes=True),
], [("x", [1, 1, 1, 4])], [("a", [1, 1, 2, 2]), ("b", [1, 1, 1, 8]), ("c", [1, 1, 1, 7]), ("d", [1, 1, 1, 2]),
                           ("e", [1, 1, 1, 2]), ("f", [1, 1, 1, 1]), ("g", [1, 1, 1, 1])], inits, 13, {"x": x},
    [[10, 30, 10, 30], [10, 12.5, 17.5, 22.5, 27.5, 32.5, 37.5, 40], [10, 15, 20, 25, 30, 35, 40], [20, 40], [10, 30], [10], [25]])

# 9d. ReduceSum (opset 13: axes as an input) over one axis without keepdims, and over all axes
x = f32(2, 3, 4)
save("reducesum", [
    helper.make_node("ReduceSum", ["x", "ax"], ["a"], keepdims=0),
    helper.make_node("ReduceSum", ["x"], ["b"]),
], [("x", [2, 3, 4])], [("a", [2, 4]), ("b", [1, 1, 1])], {"ax": np.array([-2], np.int64)}, 13, {"x": x},
    [x.sum(axis=1), x.sum(keepdims=True)])

# 10. operators the optimizer does not know: kept verbatim (one with value_info, one by rule, one
#     from a custom domain with a value_info shape)
x = f32(2, 3)
nodes = [
    helper.make_node("CumSum", ["x", "axis"], ["l"]),
    helper.make_node("Relu", ["l"], ["r"]),
    helper.make_node("CumSum", ["r", "axis"], ["h"], reverse=1),
    helper.make_node("Foo", ["h"], ["f"], domain="com.example", scale=2.0),
    helper.make_node("Add", ["f", "r"], ["y"]),
]
graph = helper.make_graph(nodes, "opaque", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                          [numpy_helper.from_array(np.array(1, np.int64), "axis")],
                          value_info=[helper.make_tensor_value_info("f", TensorProto.FLOAT, [2, 3])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)])
model.ir_version = 7
onnx.save(model, os.path.join(OUT, "opaque_ops.onnx"))
x.tofile(os.path.join(OUT, "opaque_ops.in.bin"))
listing.append("opaque_ops opaque")

# 11. narrow-typed initializers read by kept-verbatim ops (a bool mask for Where, int32 Gather
#     indices): the export must write them back in their own type (checked by onnx.checker)
x = f32(1, 4, 4)
graph = helper.make_graph([
    helper.make_node("Where", ["mask", "x", "neg"], ["w"]),
    helper.make_node("Softmax", ["w"], ["y"], axis=-1),
    helper.make_node("Gather", ["x", "idx"], ["g"], axis=2),
], "typed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4]), helper.make_tensor_value_info("g", TensorProto.FLOAT, [1, 4, 2])],
    [numpy_helper.from_array(np.tril(np.ones((4, 4), bool)), "mask"), numpy_helper.from_array(np.array(-1e9, np.float32), "neg"),
     numpy_helper.from_array(np.array([3, 0], np.int32), "idx")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 7
onnx.checker.check_model(model, full_check=True)
onnx.save(model, os.path.join(OUT, "typed_consts.onnx"))
x.tofile(os.path.join(OUT, "typed_consts.in.bin"))
listing.append("typed_consts opaque")

# 12. external data next to the model
x = f32(2, 4)
W = f32(4, 3)
graph = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"])], "ext",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                          [numpy_helper.from_array(W, "W")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 7
onnx.save(model, os.path.join(OUT, "external.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
          location="external.weights", size_threshold=0)
x.tofile(os.path.join(OUT, "external.in.bin"))
(x @ W).astype(np.float32).tofile(os.path.join(OUT, "external.out.bin"))
listing.append("external runnable")

# Elu, a table operator (ops.def): its alpha is imported, run by the reference kernel and exported
x = f32(2, 3, 4)
save("elu", [helper.make_node("Elu", ["x"], ["y"], alpha=0.5)], [("x", [2, 3, 4])], [("y", [2, 3, 4])], {}, 13,
     {"x": x}, [np.where(x < 0, 0.5 * (np.exp(x) - 1), x).astype(np.float32)])

with open(os.path.join(OUT, "list.txt"), "w") as f:
    f.write("\n".join(listing) + "\n")
print(f"wrote {len(listing)} fixtures to {OUT}")
