#!/usr/bin/python3
"""make_typed_fixtures.py - small models for symbolic dimensions and typed tensor I/O (tests/integration.sh 5b).

make_typed_fixtures.py DIR           writes into DIR:
  sym.onnx      x[batch,3,len] float -> y = Relu(x) * 2; sym.in.bin (2x3x5 raw float32), sym.ref.bin (numpy)
  typed.onnx    x[2,3] float, idx[2] int64 -> y = Gather(x, idx, axis 1) float[2,2], z = idx + 1 int64[2]
  typed_set/    input_0.pb, input_1.pb, output_0.pb, output_1.pb (expected, from numpy)
  bad_type/, bad_shape/, extra/, three/, garbage/: inputs folders with one defect each
  mixed.onnx    x[2,3] float, m[2,3] bool, i[2] int32 -> y = Where(m, x, -x) float, z = Gather(x, i, axis 1) float,
                w = Not(m) bool, c = Cast(i, float) + 1 float; mixed.in.bin (raw: each input in its own type,
                back to back), mixed.ref.bin (the outputs likewise, numpy)
  ifshape.onnx  x[batch,3] float -> y = If(Shape(x)[0] == 1, then: Relu(x) * two (a branch initializer),
                else: Neg(x) + x0 (x0 = x * 3 computed outside, read by the branch)); ifshape.in1.bin / in2.bin
                (batch 1, 2), ifshape.ref1.bin / ref2.bin (numpy); ifdata.onnx: the same If on c = ReduceSum(x) > 0
                (known only at run time: kept opaque)
  ifrun.onnx    x[2,3] -> y = If(ReduceSum(x) > 0, then: Relu(x) * two + bo (bo an outer initializer, nested in a
                second If on an outer constant), else: Neg(x) + x0); the condition is known only at run time, so
                the If stays opaque; ifrun.{pos,neg}.bin (raw) and ifrun_{pos,neg}/input_0.pb take each branch,
                ifrun.{pos,neg}.ref.bin (numpy); ifnoshape.onnx: the same with no output shape declared anywhere
  conv1d.onnx   x[1,4,20] -> Conv 1-D (k 3, stride 2, pads 1) + Relu -> MaxPool 1-D (k 2) -> ConvTranspose 1-D
                (k 4, stride 2, output_padding 1) -> AveragePool 1-D (k 3, pads 1, count_include_pad 0) (vs ONNX Runtime)
  aa_linear.onnx, aa_cubic.onnx  Resize-18 antialias downscale (scales 0.4, 0.6; half_pixel; cubic with
                cubic_coeff_a -0.5 and exclude_outside) of x[1,2,16,12] (checked against ONNX Runtime)
make_typed_fixtures.py --compare OUT SET   exit 0 when OUT/output_K.pb equal SET/output_K.pb (floats 1e-6)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper


def save_tensor(path, arr):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(arr).SerializeToString())


def make(d):
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(7)
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mul", ["r", "two"], ["y"])], "sym",
        [helper.make_tensor_value_info("x", T.FLOAT, ["batch", 3, "len"])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["batch", 3, "len"])],
        [numpy_helper.from_array(np.array(2.0, np.float32), "two")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(d, "sym.onnx"))
    x = rng.uniform(-1, 1, (2, 3, 5)).astype(np.float32)
    x.tofile(os.path.join(d, "sym.in.bin"))
    (np.maximum(x, 0) * 2).astype(np.float32).tofile(os.path.join(d, "sym.ref.bin"))

    g = helper.make_graph(
        [helper.make_node("Gather", ["x", "idx"], ["y"], axis=1), helper.make_node("Add", ["idx", "one"], ["z"])], "typed",
        [helper.make_tensor_value_info("x", T.FLOAT, [2, 3]), helper.make_tensor_value_info("idx", T.INT64, [2])],
        [helper.make_tensor_value_info("y", T.FLOAT, [2, 2]), helper.make_tensor_value_info("z", T.INT64, [2])],
        [numpy_helper.from_array(np.array(1, np.int64), "one")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(d, "typed.onnx"))
    x = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    idx = np.array([2, 0], np.int64)
    sets = {
        "typed_set": [x, idx],
        "bad_type": [x.astype(np.int32), idx],
        "bad_shape": [rng.uniform(-1, 1, (2, 4)).astype(np.float32), idx],
        "extra": [x, idx],
        "three": [x, idx, idx],
        "garbage": [x, None],
    }
    for name, arrs in sets.items():
        s = os.path.join(d, name)
        os.makedirs(s, exist_ok=True)
        for k, a in enumerate(arrs):
            p = os.path.join(s, "input_%d.pb" % k)
            if a is None:
                with open(p, "wb") as f:
                    f.write(b"\xff\xff\xff\xff")
            else:
                save_tensor(p, a)
    save_tensor(os.path.join(d, "extra", "input_5.pb"), idx)

    g = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["nx"]), helper.make_node("Where", ["m", "x", "nx"], ["y"]),
         helper.make_node("Gather", ["x", "i"], ["z"], axis=1), helper.make_node("Not", ["m"], ["w"]),
         helper.make_node("Cast", ["i"], ["ci"], to=T.FLOAT), helper.make_node("Add", ["ci", "onef"], ["c"])], "mixed",
        [helper.make_tensor_value_info("x", T.FLOAT, [2, 3]), helper.make_tensor_value_info("m", T.BOOL, [2, 3]),
         helper.make_tensor_value_info("i", T.INT32, [2])],
        [helper.make_tensor_value_info("y", T.FLOAT, [2, 3]), helper.make_tensor_value_info("z", T.FLOAT, [2, 2]),
         helper.make_tensor_value_info("w", T.BOOL, [2, 3]), helper.make_tensor_value_info("c", T.FLOAT, [2])],
        [numpy_helper.from_array(np.array(1, np.float32), "onef")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(d, "mixed.onnx"))
    m = np.array([[True, False, True], [False, False, True]])
    i = np.array([2, 1], np.int32)
    with open(os.path.join(d, "mixed.in.bin"), "wb") as f:
        f.write(x.tobytes() + m.tobytes() + i.tobytes())
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mul", ["r", "two"], ["ty"])], "then", [],
                               [helper.make_tensor_value_info("ty", T.FLOAT, None)], [numpy_helper.from_array(np.array(2.0, np.float32), "two")])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["nx2"]), helper.make_node("Add", ["nx2", "x0"], ["ey"])], "else", [],
                               [helper.make_tensor_value_info("ey", T.FLOAT, None)])
    for name, cond_nodes in (("ifshape", [helper.make_node("Shape", ["x"], ["sh"]), helper.make_node("Gather", ["sh", "zero"], ["b"]),
                                          helper.make_node("Equal", ["b", "onei"], ["cond"])]),
                             ("ifdata", [helper.make_node("ReduceSum", ["x"], ["sx"], keepdims=0),
                                         helper.make_node("Greater", ["sx", "zerof"], ["cond"])])):
        g = helper.make_graph(
            cond_nodes + [helper.make_node("Mul", ["x", "three"], ["x0"]),
                          helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)], name,
            [helper.make_tensor_value_info("x", T.FLOAT, ["batch", 3])], [helper.make_tensor_value_info("y", T.FLOAT, ["batch", 3])],
            [numpy_helper.from_array(np.array(0, np.int64), "zero"), numpy_helper.from_array(np.array(1, np.int64), "onei"),
             numpy_helper.from_array(np.array(3.0, np.float32), "three"), numpy_helper.from_array(np.array(0.0, np.float32), "zerof")])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(d, name + ".onnx"))
    # an If kept opaque: its branches read x, x0 (computed outside) and bo (an outer initializer, from a nested If)
    inner_t = helper.make_graph([helper.make_node("Add", ["r2", "bo"], ["it"])], "inner_then", [], [helper.make_tensor_value_info("it", T.FLOAT, None)])
    inner_e = helper.make_graph([helper.make_node("Sub", ["r2", "bo"], ["ie"])], "inner_else", [], [helper.make_tensor_value_info("ie", T.FLOAT, None)])
    then_r = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mul", ["r", "two"], ["r2"]),
                                helper.make_node("If", ["truec"], ["ty"], then_branch=inner_t, else_branch=inner_e)], "then", [],
                               [helper.make_tensor_value_info("ty", T.FLOAT, [2, 3])], [numpy_helper.from_array(np.array(2.0, np.float32), "two")])
    else_r = helper.make_graph([helper.make_node("Neg", ["x"], ["nx2"]), helper.make_node("Add", ["nx2", "x0"], ["ey"])], "else", [],
                               [helper.make_tensor_value_info("ey", T.FLOAT, [2, 3])])
    bo = np.array([0.5, -0.25, 1.0], np.float32)
    for name, yshape in (("ifrun", [2, 3]), ("ifnoshape", None)):
        tb, eb = then_r, else_r
        if yshape is None:  # no shape declared for y, nor by the branches
            tb, eb = onnx.GraphProto(), onnx.GraphProto()
            tb.CopyFrom(then_r)
            eb.CopyFrom(else_r)
            tb.output[0].type.tensor_type.ClearField("shape")
            eb.output[0].type.tensor_type.ClearField("shape")
        g = helper.make_graph(
            [helper.make_node("ReduceSum", ["x"], ["sx"], keepdims=0), helper.make_node("Greater", ["sx", "zerof"], ["cond"]),
             helper.make_node("Mul", ["x", "three"], ["x0"]), helper.make_node("If", ["cond"], ["y"], then_branch=tb, else_branch=eb, name="pick")],
            name, [helper.make_tensor_value_info("x", T.FLOAT, [2, 3])], [helper.make_tensor_value_info("y", T.FLOAT, yshape)],
            [numpy_helper.from_array(np.array(3.0, np.float32), "three"), numpy_helper.from_array(np.array(0.0, np.float32), "zerof"),
             numpy_helper.from_array(bo, "bo"), numpy_helper.from_array(np.array(True), "truec")])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(d, name + ".onnx"))
    xr = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    xr = xr if xr.sum() > 0 else -xr
    for tag, xv in (("pos", xr), ("neg", -xr)):
        xv.tofile(os.path.join(d, "ifrun.%s.bin" % tag))
        os.makedirs(os.path.join(d, "ifrun_" + tag), exist_ok=True)
        save_tensor(os.path.join(d, "ifrun_" + tag, "input_0.pb"), xv)
        (np.maximum(xv, 0) * 2 + bo if tag == "pos" else -xv + 3 * xv).astype(np.float32).tofile(os.path.join(d, "ifrun.%s.ref.bin" % tag))
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3], strides=[2], pads=[1, 1]), helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2], strides=[2]),
         helper.make_node("ConvTranspose", ["p", "wt"], ["t"], kernel_shape=[4], strides=[2], output_padding=[1]),
         helper.make_node("AveragePool", ["t"], ["y"], kernel_shape=[3], pads=[1, 1], count_include_pad=0)], "conv1d",
        [helper.make_tensor_value_info("x", T.FLOAT, [1, 4, 20])], [helper.make_tensor_value_info("y", T.FLOAT, None)],
        [numpy_helper.from_array(rng.uniform(-1, 1, (6, 4, 3)).astype(np.float32), "w"),
         numpy_helper.from_array(rng.uniform(-1, 1, (6,)).astype(np.float32), "b"),
         numpy_helper.from_array(rng.uniform(-1, 1, (6, 3, 4)).astype(np.float32), "wt")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(d, "conv1d.onnx"))
    for mode, extra in (("linear", {}), ("cubic", {"cubic_coeff_a": -0.5, "exclude_outside": 1})):
        g = helper.make_graph([helper.make_node("Resize", ["x", "", "sc"], ["y"], mode=mode, antialias=1, **extra)], "aa",
                              [helper.make_tensor_value_info("x", T.FLOAT, [1, 2, 16, 12])], [helper.make_tensor_value_info("y", T.FLOAT, None)],
                              [numpy_helper.from_array(np.array([1, 1, 0.4, 0.6], np.float32), "sc")])
        mm = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
        mm.ir_version = 8
        onnx.save(mm, os.path.join(d, "aa_%s.onnx" % mode))
    for b in (1, 2):
        xb = rng.uniform(-1, 1, (b, 3)).astype(np.float32)
        xb.tofile(os.path.join(d, "ifshape.in%d.bin" % b))
        (np.maximum(xb, 0) * 2 if b == 1 else -xb + 3 * xb).astype(np.float32).tofile(os.path.join(d, "ifshape.ref%d.bin" % b))
    with open(os.path.join(d, "mixed.ref.bin"), "wb") as f:
        f.write(np.where(m, x, -x).tobytes() + x[:, i].tobytes() + (~m).tobytes() + (i.astype(np.float32) + 1).tobytes())
    save_tensor(os.path.join(d, "typed_set", "output_0.pb"), x[:, idx])
    save_tensor(os.path.join(d, "typed_set", "output_1.pb"), idx + 1)


def compare(out, ref):
    k = 0
    while os.path.exists(os.path.join(ref, "output_%d.pb" % k)):
        e = numpy_helper.to_array(onnx.load_tensor(os.path.join(ref, "output_%d.pb" % k)))
        g = numpy_helper.to_array(onnx.load_tensor(os.path.join(out, "output_%d.pb" % k)))
        assert g.dtype == e.dtype and g.shape == e.shape, (k, g.dtype, e.dtype, g.shape, e.shape)
        assert np.allclose(g, e, rtol=1e-6, atol=0), (k, g, e)
        k += 1
    assert k > 0, "no outputs to compare"
    print("compare: %d outputs equal" % k)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--compare":
        compare(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 2:
        make(sys.argv[1])
    else:
        sys.exit(__doc__)
