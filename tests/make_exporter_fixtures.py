#!/usr/bin/python3
"""make_exporter_fixtures.py - small models in the styles of other exporters, written with onnx.helper
(the exporters themselves are not installable here); tests/exporter_fixtures.sh checks each against ONNX Runtime.

usage: make_exporter_fixtures.py OUTDIR
Writes OUTDIR/NAME.onnx and OUTDIR/list.txt, one line per model: "NAME STYLE OPTIONS..." where OPTIONS
are the --dim / --input-shape pins its symbolic dimensions need (the same options work for
tools/ort/ort_run.js). Styles:
  paddle   Paddle2ONNX: opsets 9-11, weights and shape tensors as Constant nodes, attribute forms of
           Clip / Pad (opset < 11), Upsample (opset 9) or Resize, a ConvTranspose head (one model),
           symbolic dims named p2o.DynamicDimension.K
  tf2onnx  NHWC input with a Transpose around every Conv / pool, auto_pad SAME_UPPER / VALID, bias as
           an Add on the channel-last tensor, ReduceMean over H, W, symbolic batch unk__N
  pt18     PyTorch at opset 18+: axes as inputs (ReduceMean, Unsqueeze, Squeeze), Split num_outputs,
           LayerNormalization, Shape/Gather/Concat-built Reshape targets, symbolic batch and sequence
  onnx18   opset 18-21 forms operator by operator: one model per group of operators whose signature changed
           (Reduce axes inputs / noop_with_empty_axes, Split num_outputs, Pad axes and wrap, Resize
           half_pixel_symmetric, Gelu, GridSample's renamed modes, scatter reductions, opset-21 views)
           and two operators of ONNX's conformance suite: MelWeightMatrix (constant inputs), TfIdfVectorizer (token ids)
Recurrent models in two of these styles: tf2onnx (a Keras sequence model: batch-major input transposed to
time-major, GRU with linear_before_reset = 1 as Keras' reset_after, SimpleRNN with Relu, a reverse LSTM, the
last state squeezed into a Dense head) and Paddle2ONNX (opset 11, Constant weights, bidirectional GRU / RNN
with Constant initial states and per-sequence lengths).
3-D CNNs (video / volumetric, [N,C,D,H,W]) in two styles: tf2onnx (NDHWC input, Transposes, auto_pad SAME_UPPER on
Conv and MaxPool) and PyTorch's opset-17 form of a 3-D CNN ("pt3d": explicit pads, dilations, groups,
BatchNormalization, AveragePool with count_include_pad and ceil_mode, ConvTranspose with output_padding).
tf2onnx's Resize forms: nearest with tf_half_pixel_for_nn (ResizeNearestNeighbor, half_pixel_centers) and
bilinear tf_crop_and_resize with a region reaching outside the image (extrapolation_value); a bidirectional
LSTM over sequences of different lengths as tf2onnx writes it (two forward LSTMs, the backward one between
ReverseSequence nodes). PyTorch's MaxPool2d(return_indices=True) + MaxUnpool2d (a SegNet-style encoder/decoder,
the unpooling back to an odd-sized map through output_shape); torchvision's RoiAlign (half_pixel, sampling_ratio,
spatial_scale) on a feature map, boxes and batch indices as constants; torch.stft (STFT with a Hann window,
onesided) into a log-magnitude spectrogram and a mel projection, and torch.fft.fft / ifft (DFT, inverse) on a
complex signal.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else "exporter_fixtures"
os.makedirs(OUT, exist_ok=True)
rng = np.random.default_rng(11)
listing = []


def f32(*shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def save(name, style, nodes, inputs, outputs, inits, opset, opts):
    g = helper.make_graph(nodes, name, inputs, outputs, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name=style)
    m.ir_version = 7 if opset < 15 else 8
    onnx.save(m, os.path.join(OUT, name + ".onnx"))
    listing.append(" ".join([name, style] + opts))


class Namer:
    def __init__(self):
        self.k = 0

    def __call__(self, base):
        self.k += 1
        return "%s_%d" % (base, self.k)


# ---------------------------------------------------------------- Paddle2ONNX style
def const(nodes, nm, value):
    """Paddle2ONNX writes many tensors as Constant nodes."""
    out = nm("const")
    nodes.append(helper.make_node("Constant", [], [out], value=numpy_helper.from_array(np.asarray(value), out + "_v")))
    return out


def paddle(idx, opset, act, up, cin, mid):
    nm = Namer()
    nodes, inits = [], {}
    x = "x"
    w1 = const(nodes, nm, f32(mid, cin, 3, 3))
    b1 = const(nodes, nm, f32(mid, scale=0.1))
    c1 = nm("conv")
    nodes.append(helper.make_node("Conv", [x, w1, b1], [c1], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]))
    sc, bi, mu = (const(nodes, nm, f32(mid, scale=0.1) + 1), const(nodes, nm, f32(mid, scale=0.1)),
                  const(nodes, nm, f32(mid, scale=0.1)))
    var = const(nodes, nm, np.abs(f32(mid)) + 0.5)
    bn = nm("bn")
    nodes.append(helper.make_node("BatchNormalization", [c1, sc, bi, mu, var], [bn], epsilon=1e-5))
    a = nm("act")
    if act == "relu6":
        if opset < 11:
            nodes.append(helper.make_node("Clip", [bn], [a], min=0.0, max=6.0))
        else:
            lo, hi = const(nodes, nm, np.array(0, np.float32)), const(nodes, nm, np.array(6, np.float32))
            nodes.append(helper.make_node("Clip", [bn, lo, hi], [a]))
    else:  # hard_swish as Paddle2ONNX writes it before opset 14: x * HardSigmoid(x)
        hs = nm("hsig")
        nodes.append(helper.make_node("HardSigmoid", [bn], [hs], alpha=1 / 6, beta=0.5))
        nodes.append(helper.make_node("Mul", [bn, hs], [a]))
    wd = const(nodes, nm, f32(mid, 1, 3, 3))
    dw = nm("dw")
    nodes.append(helper.make_node("Conv", [a, wd], [dw], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=mid))
    pd = nm("pad")
    if opset < 11:
        nodes.append(helper.make_node("Pad", [dw], [pd], pads=[0, 0, 0, 0, 0, 0, 1, 1], mode="constant", value=0.0))
    else:
        pads = const(nodes, nm, np.array([0, 0, 0, 0, 0, 0, 1, 1], np.int64))
        nodes.append(helper.make_node("Pad", [dw, pads], [pd], mode="constant"))
    mp = nm("pool")
    nodes.append(helper.make_node("MaxPool", [pd], [mp], kernel_shape=[2, 2], strides=[2, 2]))
    r = nm("relu")
    nodes.append(helper.make_node("Relu", [mp], [r]))
    feat = r
    if idx == 9:  # a detector's upsampling head: ConvTranspose (stride 2, groups, output_padding)
        wt = const(nodes, nm, f32(mid, mid // 2, 3, 3))
        bt = const(nodes, nm, f32(mid, scale=0.1))
        ct = nm("deconv")
        nodes.append(helper.make_node("ConvTranspose", [r, wt, bt], [ct], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                      output_padding=[1, 1], group=2))
        feat = ct
    if up:
        u = nm("up")
        if opset == 9:
            scales = const(nodes, nm, np.array([1, 1, 2, 2], np.float32))
            nodes.append(helper.make_node("Upsample", [r, scales], [u], mode="nearest"))
        elif opset == 10:
            scales = const(nodes, nm, np.array([1, 1, 2, 2], np.float32))
            nodes.append(helper.make_node("Resize", [r, scales], [u], mode="nearest"))
        else:
            roi = const(nodes, nm, np.array([], np.float32))
            scales = const(nodes, nm, np.array([1, 1, 2, 2], np.float32))
            nodes.append(helper.make_node("Resize", [r, roi, scales], [u], mode="nearest", coordinate_transformation_mode="asymmetric",
                                          nearest_mode="floor"))
        w2 = const(nodes, nm, f32(mid, mid, 1, 1))
        c2 = nm("conv")
        nodes.append(helper.make_node("Conv", [u, w2], [c2], kernel_shape=[1, 1]))
        feat = c2
    gp = nm("gap")
    nodes.append(helper.make_node("GlobalAveragePool", [feat], [gp]))
    shp = const(nodes, nm, np.array([0, -1], np.int64))
    rs = nm("flat")
    nodes.append(helper.make_node("Reshape", [gp, shp], [rs]))
    wf, bf = const(nodes, nm, f32(mid, 5)), const(nodes, nm, f32(5, scale=0.1))
    mm, ad = nm("mm"), nm("add")
    nodes.append(helper.make_node("MatMul", [rs, wf], [mm]))
    nodes.append(helper.make_node("Add", [mm, bf], [ad]))
    nodes.append(helper.make_node("Softmax", [ad], ["y"], axis=1))
    d0, d2, d3 = "p2o.DynamicDimension.0", "p2o.DynamicDimension.1", "p2o.DynamicDimension.2"
    save("paddle_%02d_op%d_%s%s" % (idx, opset, act, "_up" if up else ""), "paddle", nodes,
         [helper.make_tensor_value_info("x", T.FLOAT, [d0, cin, d2, d3])],
         [helper.make_tensor_value_info("y", T.FLOAT, [d0, 5])], inits, opset,
         ["--dim", "%s=%d" % (d0, 1 + idx % 2), "--dim", "%s=%d" % (d2, 8 + 4 * (idx % 3)), "--dim", "%s=%d" % (d3, 12)])


# ---------------------------------------------------------------- tf2onnx style
def tf2onnx(idx, opset, stride, pad_mode, cin, mid):
    nm = Namer()
    nodes, inits = [], {}
    h = "input_1:0"

    def conv_nhwc(inp, cout, k, s, group=1, ap="SAME_UPPER"):
        t1, c, t2, b = nm("transpose"), nm("conv"), nm("transpose"), nm("biasadd")
        wn, bn = nm("kernel"), nm("bias")
        cin_ = inits_shape[inp]
        inits[wn] = f32(cout, cin_ // group, k, k)
        inits[bn] = f32(cout, scale=0.1)
        nodes.append(helper.make_node("Transpose", [inp], [t1], perm=[0, 3, 1, 2]))
        nodes.append(helper.make_node("Conv", [t1, wn], [c], kernel_shape=[k, k], strides=[s, s], auto_pad=ap, group=group,
                                      dilations=[1, 1]))
        nodes.append(helper.make_node("Transpose", [c], [t2], perm=[0, 2, 3, 1]))
        nodes.append(helper.make_node("Add", [t2, bn], [b]))
        inits_shape[b] = cout
        return b

    inits_shape = {h: cin}
    a = conv_nhwc(h, mid, 3, stride, ap=pad_mode)
    r = nm("Relu")
    nodes.append(helper.make_node("Relu", [a], [r]))
    inits_shape[r] = mid
    a2 = conv_nhwc(r, mid, 3, 1, group=mid)  # depthwise, SAME_UPPER
    r2 = nm("Relu6")
    lo, hi = nm("clip_min"), nm("clip_max")
    inits[lo], inits[hi] = np.array(0, np.float32), np.array(6, np.float32)
    nodes.append(helper.make_node("Clip", [a2, lo, hi], [r2]))
    t1, p, t2 = nm("transpose"), nm("maxpool"), nm("transpose")
    nodes.append(helper.make_node("Transpose", [r2], [t1], perm=[0, 3, 1, 2]))
    nodes.append(helper.make_node("MaxPool", [t1], [p], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"))
    nodes.append(helper.make_node("Transpose", [p], [t2], perm=[0, 2, 3, 1]))
    inits_shape[t2] = mid
    a3 = conv_nhwc(t2, mid, 1, 1, ap="VALID")
    m = nm("Mean")
    nodes.append(helper.make_node("ReduceMean", [a3], [m], axes=[1, 2], keepdims=0))
    wn, bn, mm, ad = nm("dense_kernel"), nm("dense_bias"), nm("MatMul"), nm("BiasAdd")
    inits[wn], inits[bn] = f32(mid, 4), f32(4, scale=0.1)
    nodes.append(helper.make_node("MatMul", [m, wn], [mm]))
    nodes.append(helper.make_node("Add", [mm, bn], [ad]))
    nodes.append(helper.make_node("Softmax", [ad], ["Identity:0"], axis=-1 if opset >= 13 else 1))
    hw = 9 + idx
    save("tf2onnx_%02d_op%d_s%d_%s" % (idx, opset, stride, pad_mode.lower()), "tf2onnx", nodes,
         [helper.make_tensor_value_info(h, T.FLOAT, ["unk__%d" % (600 + idx), hw, hw, cin])],
         [helper.make_tensor_value_info("Identity:0", T.FLOAT, ["unk__%d" % (600 + idx), 4])], inits, opset,
         ["--dim", "unk__%d=%d" % (600 + idx, 1 + idx % 2)])


# ---------------------------------------------------------------- PyTorch opset 18+ style
def pt18(idx, opset, d, heads):
    nm = Namer()
    nodes, inits = [], {}
    x = "input"
    g, b = nm("ln.weight"), nm("ln.bias")
    inits[g], inits[b] = 1 + f32(d, scale=0.1), f32(d, scale=0.1)
    ln = nm("/ln/LayerNormalization_output_0")
    nodes.append(helper.make_node("LayerNormalization", [x, g, b], [ln], axis=-1, epsilon=1e-5))
    wq = nm("onnx::MatMul")
    inits[wq] = f32(d, 3 * d, scale=0.2)
    qkv = nm("/attn/MatMul_output_0")
    nodes.append(helper.make_node("MatMul", [ln, wq], [qkv]))
    q, k, v = nm("q"), nm("k"), nm("v")
    nodes.append(helper.make_node("Split", [qkv], [q, k, v], axis=-1, num_outputs=3))
    # dynamic head reshape: Shape -> Gather(0), Gather(1) -> Unsqueeze(axes input) -> Concat -> Reshape
    shp = nm("/attn/Shape_output_0")
    nodes.append(helper.make_node("Shape", [x], [shp]))
    i0, i1 = nm("c0"), nm("c1")
    inits[i0], inits[i1] = np.array(0, np.int64), np.array(1, np.int64)
    bsz, seq = nm("/attn/Gather_output_0"), nm("/attn/Gather_1_output_0")
    nodes.append(helper.make_node("Gather", [shp, i0], [bsz], axis=0))
    nodes.append(helper.make_node("Gather", [shp, i1], [seq], axis=0))
    ax0 = nm("axes0")
    inits[ax0] = np.array([0], np.int64)
    ub, us = nm("ub"), nm("us")
    nodes.append(helper.make_node("Unsqueeze", [bsz, ax0], [ub]))
    nodes.append(helper.make_node("Unsqueeze", [seq, ax0], [us]))
    hd = nm("heads")
    inits[hd] = np.array([heads, d // heads], np.int64)
    tgt = nm("/attn/Concat_output_0")
    nodes.append(helper.make_node("Concat", [ub, us, hd], [tgt], axis=0))
    heads_out = []
    for t, perm in ((q, [0, 2, 1, 3]), (k, [0, 2, 3, 1]), (v, [0, 2, 1, 3])):
        r, tr = nm("/attn/Reshape_output_0"), nm("/attn/Transpose_output_0")
        nodes.append(helper.make_node("Reshape", [t, tgt], [r]))
        nodes.append(helper.make_node("Transpose", [r], [tr], perm=perm))
        heads_out.append(tr)
    qk, sc, sm, av = nm("qk"), nm("scaled"), nm("softmax"), nm("av")
    dv = nm("scale")
    inits[dv] = np.array(np.sqrt(d // heads), np.float32)
    nodes.append(helper.make_node("MatMul", [heads_out[0], heads_out[1]], [qk]))
    nodes.append(helper.make_node("Div", [qk, dv], [sc]))
    nodes.append(helper.make_node("Softmax", [sc], [sm], axis=-1))
    nodes.append(helper.make_node("MatMul", [sm, heads_out[2]], [av]))
    tb, rb = nm("back"), nm("merged")
    nodes.append(helper.make_node("Transpose", [av], [tb], perm=[0, 2, 1, 3]))
    tgt2 = nm("tgt2")
    inits[tgt2] = np.array([0, 0, d], np.int64)
    nodes.append(helper.make_node("Reshape", [tb, tgt2], [rb]))
    wo = nm("onnx::MatMul")
    inits[wo] = f32(d, d, scale=0.2)
    o, res = nm("o"), nm("residual")
    nodes.append(helper.make_node("MatMul", [rb, wo], [o]))
    nodes.append(helper.make_node("Add", [o, x], [res]))
    # pooled output: ReduceMean with axes as input (opset 18), then Squeeze / Unsqueeze with axes inputs
    ax1, axm = nm("axes1"), nm("axesm")
    inits[ax1], inits[axm] = np.array([1], np.int64), np.array([-1], np.int64)
    mean, sq, us2 = nm("mean"), nm("sq"), nm("us2")
    nodes.append(helper.make_node("ReduceMean", [res, ax1], [mean], keepdims=1))
    nodes.append(helper.make_node("Squeeze", [mean, ax1], [sq]))
    nodes.append(helper.make_node("Unsqueeze", [sq, axm], [us2]))
    nodes.append(helper.make_node("Relu", [us2], ["pooled"]))
    nodes.append(helper.make_node("Identity", [res], ["hidden"]))
    save("pt18_%02d_op%d_d%d_h%d" % (idx, opset, d, heads), "pt18", nodes,
         [helper.make_tensor_value_info(x, T.FLOAT, ["batch", "sequence", d])],
         [helper.make_tensor_value_info("hidden", T.FLOAT, ["batch", "sequence", d]),
          helper.make_tensor_value_info("pooled", T.FLOAT, ["batch", d, 1])], inits, opset,
         ["--dim", "batch=%d" % (1 + idx % 2), "--dim", "sequence=%d" % (5 + 3 * idx)])


# ---------------------------------------------------------------- recurrent cells (tf2onnx and Paddle2ONNX styles)
def recurrent(name, style, opset, cell, direction, seq, feat, hidden, extra_attrs, paddle_consts):
    nm = Namer()
    nodes, inits = [], {}
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[cell]
    dirs = 2 if direction == "bidirectional" else 1
    batch = 2
    sym = "unk__%d" % (700 + len(listing)) if style == "tf2onnx" else "p2o.DynamicDimension.%d" % len(listing)

    def tensor(base, value):
        if paddle_consts:
            return const(nodes, nm, value)
        t = nm(base)
        inits[t] = value
        return t
    x = "input_1" if style == "tf2onnx" else "x"
    xt = nm("transpose")
    nodes.append(helper.make_node("Transpose", [x], [xt], perm=[1, 0, 2]))  # [N,T,I] -> [T,N,I]
    w = tensor("W", f32(dirs, gates * hidden, feat, scale=0.4))
    r = tensor("R", f32(dirs, gates * hidden, hidden, scale=0.4))
    b = tensor("B", f32(dirs, 2 * gates * hidden, scale=0.2))
    ins = [xt, w, r, b]
    if paddle_consts:  # per-sequence lengths and a zero initial state, as Constants
        ins.append(const(nodes, nm, np.array([seq, seq - 2][:batch], np.int32)))
        ins.append(const(nodes, nm, np.zeros((dirs, batch, hidden), np.float32)))
    y, yh = nm("Y"), nm("Y_h")
    nodes.append(helper.make_node(cell, ins, [y, yh], hidden_size=hidden, direction=direction, **extra_attrs))
    # head: the last state of every direction, [D,N,H] -> [N,D*H], Dense
    t2 = nm("transpose")
    nodes.append(helper.make_node("Transpose", [yh], [t2], perm=[1, 0, 2]))
    fl = nm("flatten")
    nodes.append(helper.make_node("Flatten", [t2], [fl], axis=1))
    wd, bd = tensor("dense_W", f32(dirs * hidden, 5, scale=0.3)), tensor("dense_b", f32(5, scale=0.1))
    mm, logits = nm("matmul"), "logits"
    nodes.append(helper.make_node("MatMul", [fl, wd], [mm]))
    nodes.append(helper.make_node("Add", [mm, bd], [logits]))
    # and the whole sequence, batch-major: [T,D,N,H] -> [N,T,D,H]
    seqout = "sequence_out"
    nodes.append(helper.make_node("Transpose", [y], [seqout], perm=[2, 0, 1, 3]))
    n_batch = batch if paddle_consts else 1 + len(listing) % 2
    save(name, style, nodes,
         [helper.make_tensor_value_info(x, T.FLOAT, [sym if not paddle_consts else batch, seq, feat])],
         [helper.make_tensor_value_info(logits, T.FLOAT, [sym if not paddle_consts else batch, 5]),
          helper.make_tensor_value_info(seqout, T.FLOAT, [sym if not paddle_consts else batch, seq, dirs, hidden])],
         inits, opset, ["--dim", "%s=%d" % (sym, n_batch)] if not paddle_consts else [])


# ---------------------------------------------------------------- 3-D CNNs (tf2onnx and PyTorch styles)
def cnn3d(name, style, opset, cin, mid, d, hw):
    nm = Namer()
    nodes, inits = [], {}

    def t(base, value):
        n = nm(base)
        inits[n] = value
        return n
    sym = "unk__%d" % (800 + len(listing)) if style == "tf2onnx" else "batch"
    if style == "tf2onnx":
        x = "input_1"
        xin = helper.make_tensor_value_info(x, T.FLOAT, [sym, d, hw, hw, cin])
        xt = nm("transpose")
        nodes.append(helper.make_node("Transpose", [x], [xt], perm=[0, 4, 1, 2, 3]))
        c1 = nm("conv3d")
        nodes.append(helper.make_node("Conv", [xt, t("kernel", f32(mid, cin, 3, 3, 3, scale=0.3)), t("bias", f32(mid, scale=0.1))],
                                      [c1], kernel_shape=[3, 3, 3], strides=[1, 2, 2], auto_pad="SAME_UPPER"))
        r1 = nm("relu")
        nodes.append(helper.make_node("Relu", [c1], [r1]))
        p1 = nm("maxpool3d")
        nodes.append(helper.make_node("MaxPool", [r1], [p1], kernel_shape=[2, 2, 2], strides=[2, 2, 2], auto_pad="SAME_UPPER"))
        c2 = nm("conv3d")
        nodes.append(helper.make_node("Conv", [p1, t("kernel", f32(mid, mid, 1, 3, 3, scale=0.3))], [c2], kernel_shape=[1, 3, 3],
                                      auto_pad="VALID"))
        feat = c2
    else:
        x = "input"
        xin = helper.make_tensor_value_info(x, T.FLOAT, [sym, cin, d, hw, hw])
        c1 = nm("/conv1/Conv_output_0")
        nodes.append(helper.make_node("Conv", [x, t("conv1.weight", f32(mid, cin, 3, 3, 3, scale=0.3)), t("conv1.bias", f32(mid, scale=0.1))],
                                      [c1], kernel_shape=[3, 3, 3], pads=[1, 2, 2, 1, 2, 2], dilations=[1, 2, 2], strides=[1, 1, 1]))
        bn = nm("/bn/BatchNormalization_output_0")
        nodes.append(helper.make_node("BatchNormalization", [c1, t("bn.weight", 1 + f32(mid, scale=0.1)), t("bn.bias", f32(mid, scale=0.1)),
                                                             t("bn.running_mean", f32(mid, scale=0.1)), t("bn.running_var", np.abs(f32(mid)) + 0.5)],
                                      [bn], epsilon=1e-5))
        r1 = nm("/relu/Relu_output_0")
        nodes.append(helper.make_node("Relu", [bn], [r1]))
        c2 = nm("/conv2/Conv_output_0")
        nodes.append(helper.make_node("Conv", [r1, t("conv2.weight", f32(mid, mid // 2, 3, 1, 3, scale=0.3))], [c2],
                                      kernel_shape=[3, 1, 3], pads=[1, 0, 1, 1, 0, 1], strides=[2, 1, 2], group=2))
        ap = nm("/pool/AveragePool_output_0")
        nodes.append(helper.make_node("AveragePool", [c2], [ap], kernel_shape=[3, 3, 3], strides=[2, 2, 2], pads=[1, 1, 1, 1, 1, 1],
                                      count_include_pad=1, ceil_mode=1))
        ct = nm("/up/ConvTranspose_output_0")
        nodes.append(helper.make_node("ConvTranspose", [ap, t("up.weight", f32(mid, mid // 2, 2, 3, 3, scale=0.3)), t("up.bias", f32(mid, scale=0.1))],
                                      [ct], kernel_shape=[2, 3, 3], strides=[2, 2, 2], pads=[0, 1, 1, 0, 1, 1], output_padding=[0, 1, 1], group=2))
        mp = nm("/pool2/MaxPool_output_0")
        nodes.append(helper.make_node("MaxPool", [ct], [mp], kernel_shape=[2, 3, 3], strides=[1, 2, 2], pads=[0, 1, 1, 1, 1, 1], ceil_mode=1))
        feat = mp
    g = nm("gap")
    nodes.append(helper.make_node("GlobalAveragePool", [feat], [g]))
    fl = nm("flatten")
    nodes.append(helper.make_node("Flatten", [g], [fl], axis=1))
    nodes.append(helper.make_node("Gemm", [fl, t("fc.weight", f32(6, mid, scale=0.3)), t("fc.bias", f32(6, scale=0.1))], ["logits"], transB=1))
    nodes.append(helper.make_node("Identity", [feat], ["features"]))  # the feature map too: pooling errors cannot average out
    save(name, style, nodes, [xin], [helper.make_tensor_value_info("logits", T.FLOAT, [sym, 6]),
                                     helper.make_tensor_value_info("features", T.FLOAT, None)], inits, opset,
         ["--dim", "%s=%d" % (sym, 1 + len(listing) % 2)])


def tf_resize(name, opset, roi, sizes, extrap, nearest_mode):
    nm = Namer()
    nodes, inits = [], {}
    sym = "unk__%d" % (900 + len(listing))
    x = "input_1"
    xt = nm("transpose")
    nodes.append(helper.make_node("Transpose", [x], [xt], perm=[0, 3, 1, 2]))
    empty_roi, sc = nm("roi"), nm("scales")
    inits[empty_roi] = np.zeros(0, np.float32)
    inits[sc] = np.array([1, 1, 2, 2], np.float32)
    up = nm("ResizeNearestNeighbor")
    nodes.append(helper.make_node("Resize", [xt, empty_roi, sc], [up], mode="nearest",
                                  coordinate_transformation_mode="tf_half_pixel_for_nn", nearest_mode=nearest_mode))
    r, e, sz = nm("crop_roi"), nm("crop_scales"), nm("crop_sizes")
    inits[r] = np.array(roi, np.float32)
    inits[e] = np.zeros(0, np.float32)
    inits[sz] = np.array(sizes, np.int64)
    cr = nm("CropAndResize")
    nodes.append(helper.make_node("Resize", [up, r, e, sz], [cr], mode="linear", coordinate_transformation_mode="tf_crop_and_resize",
                                  extrapolation_value=extrap))
    w = nm("kernel")
    inits[w] = f32(4, sizes[1], 1, 1)
    cv = nm("conv")
    nodes.append(helper.make_node("Conv", [cr, w], [cv], kernel_shape=[1, 1]))
    nodes.append(helper.make_node("Transpose", [cv], ["Identity:0"], perm=[0, 2, 3, 1]))
    save(name, "tf2onnx", nodes, [helper.make_tensor_value_info(x, T.FLOAT, [sizes[0], 6, 7, sizes[1]])],
         [helper.make_tensor_value_info("Identity:0", T.FLOAT, [sizes[0], sizes[2], sizes[3], 4])], inits, opset, [])


def tf_bidir_reverse(name, opset, seq, feat, hidden):
    nm = Namer()
    nodes, inits = [], {}
    batch = 3
    x, lens = "input_1", "seq_lens"
    inits[lens] = np.array([seq, seq - 2, 2], np.int64)  # the lengths as a constant: seeded integer inputs would be 0
    xt = nm("transpose")
    nodes.append(helper.make_node("Transpose", [x], [xt], perm=[1, 0, 2]))  # [N,T,I] -> [T,N,I]
    outs = []
    for dname in ("fw", "bw"):
        w, r, b = nm(dname + "_W"), nm(dname + "_R"), nm(dname + "_B")
        inits[w], inits[r], inits[b] = f32(1, 4 * hidden, feat, scale=0.4), f32(1, 4 * hidden, hidden, scale=0.4), f32(1, 8 * hidden, scale=0.2)
        src = xt
        if dname == "bw":
            src = nm("ReverseSequence")
            nodes.append(helper.make_node("ReverseSequence", [xt, lens], [src], batch_axis=1, time_axis=0))
        y = nm(dname + "_Y")
        nodes.append(helper.make_node("LSTM", [src, w, r, b], [y], hidden_size=hidden))
        sq = nm(dname + "_squeeze")
        ax = nm("axes")
        inits[ax] = np.array([1], np.int64)
        nodes.append(helper.make_node("Squeeze", [y, ax], [sq]))  # [T,1,N,H] -> [T,N,H]
        if dname == "bw":
            rv = nm("ReverseSequence")
            nodes.append(helper.make_node("ReverseSequence", [sq, lens], [rv], batch_axis=1, time_axis=0))
            sq = rv
        outs.append(sq)
    cat = nm("concat")
    nodes.append(helper.make_node("Concat", outs, [cat], axis=2))
    nodes.append(helper.make_node("Transpose", [cat], ["Identity:0"], perm=[1, 0, 2]))
    save(name, "tf2onnx", nodes, [helper.make_tensor_value_info(x, T.FLOAT, [batch, seq, feat])],
         [helper.make_tensor_value_info("Identity:0", T.FLOAT, [batch, seq, 2 * hidden])], inits, opset, [])


def pt_unpool(name, opset, c, hw):
    nm = Namer()
    nodes, inits = [], {}
    x = "input"
    w1, b1 = nm("enc.weight"), nm("enc.bias")
    inits[w1], inits[b1] = f32(c, 3, 3, 3, scale=0.3), f32(c, scale=0.1)
    c1 = nm("/enc/Conv_output_0")
    nodes.append(helper.make_node("Conv", [x, w1, b1], [c1], kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    p, idx = nm("/pool/MaxPool_output_0"), nm("/pool/MaxPool_output_1")
    nodes.append(helper.make_node("MaxPool", [c1], [p, idx], kernel_shape=[2, 2], strides=[2, 2]))
    w2 = nm("mid.weight")
    inits[w2] = f32(c, c, 3, 3, scale=0.3)
    c2 = nm("/mid/Conv_output_0")
    nodes.append(helper.make_node("Conv", [p, w2], [c2], kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    os_ = nm("output_shape")
    inits[os_] = np.array([1, c, hw, hw], np.int64)
    un = nm("/unpool/MaxUnpool_output_0")
    nodes.append(helper.make_node("MaxUnpool", [c2, idx, os_], [un], kernel_shape=[2, 2], strides=[2, 2]))
    w3 = nm("dec.weight")
    inits[w3] = f32(2, c, 3, 3, scale=0.3)
    nodes.append(helper.make_node("Conv", [un, w3], ["output"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    save(name, "pt18" if opset >= 18 else "torchscript-style", nodes, [helper.make_tensor_value_info(x, T.FLOAT, [1, 3, hw, hw])],
         [helper.make_tensor_value_info("output", T.FLOAT, [1, 2, hw, hw])], inits, opset, [])


def pt_roialign(name, opset, c, hw, sampling, mode="avg"):
    nm = Namer()
    nodes, inits = [], {}
    x = "images"
    w1 = nm("backbone.weight")
    inits[w1] = f32(c, 3, 3, 3, scale=0.3)
    f = nm("/backbone/Conv_output_0")
    nodes.append(helper.make_node("Conv", [x, w1], [f], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    rois, bidx = nm("boxes"), nm("batch_idx")
    inits[rois] = np.array([[1.5, 2.0, 20.0, 17.5], [0.0, 0.0, 31.0, 31.0], [10.2, 5.1, 14.9, 30.3], [-3.0, 4.0, 8.0, 9.0]], np.float32) * hw / 32
    inits[bidx] = np.array([0, 1, 1, 0], np.int64)
    ra = nm("/roi/RoiAlign_output_0")
    nodes.append(helper.make_node("RoiAlign", [f, rois, bidx], [ra], mode=mode, output_height=5, output_width=4,
                                  sampling_ratio=sampling, spatial_scale=0.5, coordinate_transformation_mode="half_pixel"))
    fl = nm("flatten")
    nodes.append(helper.make_node("Flatten", [ra], [fl], axis=1))
    w2, b2 = nm("head.weight"), nm("head.bias")
    inits[w2], inits[b2] = f32(3, c * 20, scale=0.2), f32(3, scale=0.1)
    nodes.append(helper.make_node("Gemm", [fl, w2, b2], ["scores"], transB=1))
    nodes.append(helper.make_node("Identity", [ra], ["pooled"]))
    save(name, "pt18", nodes, [helper.make_tensor_value_info(x, T.FLOAT, [2, 3, hw, hw])],
         [helper.make_tensor_value_info("scores", T.FLOAT, [4, 3]), helper.make_tensor_value_info("pooled", T.FLOAT, [4, c, 5, 4])],
         inits, opset, [])


def pt_stft(name, opset, length, nfft, hop):
    nm = Namer()
    nodes, inits = [], {}
    x = "waveform"
    sh = nm("shape")
    inits[sh] = np.array([2, length, 1], np.int64)
    r = nm("/Reshape_output_0")
    nodes.append(helper.make_node("Reshape", [x, sh], [r]))
    step, win, fl = nm("hop"), nm("window"), nm("n_fft")
    inits[step], inits[fl] = np.array(hop, np.int64), np.array(nfft, np.int64)
    inits[win] = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(nfft) / nfft)).astype(np.float32)
    st = nm("/STFT_output_0")
    nodes.append(helper.make_node("STFT", [r, step, win, fl], [st], onesided=1))
    two = nm("two")
    inits[two] = np.array(2, np.float32)
    p2, axes = nm("/Pow_output_0"), nm("axes")
    nodes.append(helper.make_node("Pow", [st, two], [p2]))
    inits[axes] = np.array([-1], np.int64)
    pw = nm("/ReduceSum_output_0")
    nodes.append(helper.make_node("ReduceSum", [p2, axes], [pw], keepdims=0))
    eps = nm("eps")
    inits[eps] = np.array(1e-6, np.float32)
    ad, lg = nm("/Add_output_0"), nm("/Log_output_0")
    nodes.append(helper.make_node("Add", [pw, eps], [ad]))
    nodes.append(helper.make_node("Log", [ad], [lg]))
    mel = nm("mel_fb")
    inits[mel] = np.abs(f32(nfft // 2 + 1, 8, scale=0.3))
    nodes.append(helper.make_node("MatMul", [lg, mel], ["mel"]))
    save(name, "pt18", nodes, [helper.make_tensor_value_info(x, T.FLOAT, [2, length])],
         [helper.make_tensor_value_info("mel", T.FLOAT, [2, 1 + (length - nfft) // hop, 8])], inits, opset, [])


def pt_dft(name, opset, n):
    nm = Namer()
    nodes, inits = [], {}
    x = "signal"  # [B, n, 2]: complex
    f = nm("/DFT_output_0")
    nodes.append(helper.make_node("DFT", [x], [f], axis=1))
    w = nm("filter")
    inits[w] = f32(1, n, 2, scale=0.5)
    m = nm("/Mul_output_0")
    nodes.append(helper.make_node("Mul", [f, w], [m]))
    nodes.append(helper.make_node("DFT", [m], ["filtered"], axis=1, inverse=1))
    save(name, "pt18", nodes, [helper.make_tensor_value_info(x, T.FLOAT, [3, n, 2])],
         [helper.make_tensor_value_info("filtered", T.FLOAT, [3, n, 2])], inits, opset, [])


def norms(name, style, opset, c, hw, groups, inorm):
    """Conv, then InstanceNormalization (Paddle2ONNX's style transfer nets) or GroupNormalization (PyTorch's
    nn.GroupNorm at opset 18 per group / 21 per channel), LpNormalization over channels, Relu and a
    GlobalMaxPool head."""
    nm = Namer()
    nodes, inits = [], {}
    w, b = nm("conv.weight"), nm("conv.bias")
    inits[w], inits[b] = f32(c, 3, 3, 3, scale=0.3), f32(c, scale=0.1)
    c1 = nm("conv_out")
    nodes.append(helper.make_node("Conv", ["x", w, b], [c1], kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    s_, b_ = nm("norm.weight"), nm("norm.bias")
    n1 = nm("norm_out")
    if inorm:
        inits[s_], inits[b_] = 1 + f32(c, scale=0.2), f32(c, scale=0.2)
        nodes.append(helper.make_node("InstanceNormalization", [c1, s_, b_], [n1], epsilon=1e-5))
    else:
        k = groups if opset < 21 else c
        inits[s_], inits[b_] = 1 + f32(k, scale=0.2), f32(k, scale=0.2)
        nodes.append(helper.make_node("GroupNormalization", [c1, s_, b_], [n1], epsilon=1e-5, num_groups=groups))
    lp = nm("lp_out")
    nodes.append(helper.make_node("LpNormalization", [n1], [lp], axis=1, p=2))
    r = nm("relu_out")
    nodes.append(helper.make_node("Relu", [lp], [r]))
    nodes.append(helper.make_node("GlobalMaxPool", [r], ["y"]))
    save(name, style, nodes, [helper.make_tensor_value_info("x", T.FLOAT, [2, 3, hw, hw])],
         [helper.make_tensor_value_info("y", T.FLOAT, [2, c, 1, 1])], inits, opset, [])


def resize_axes(name, opset, mode, axes, scales, sizes, policy, ctm, antialias=0):
    """Resize-18/19 with the axes attribute (scales or sizes of the listed axes only), between two convolutions."""
    nm = Namer()
    nodes, inits = [], {}
    w, w2 = nm("conv.weight"), nm("head.weight")
    inits[w], inits[w2] = f32(4, 3, 3, 3, scale=0.3), f32(2, 4, 1, 1, scale=0.3)
    c1 = nm("conv_out")
    nodes.append(helper.make_node("Conv", ["x", w], [c1], kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    ins = [c1, ""]
    if scales is not None:
        sc = nm("scales")
        inits[sc] = np.array(scales, np.float32)
        ins.append(sc)
    else:
        sz = nm("sizes")
        inits[sz] = np.array(sizes, np.int64)
        ins += ["", sz]
    r = nm("resize_out")
    attrs = dict(mode=mode, axes=axes, coordinate_transformation_mode=ctm)
    if policy:
        attrs["keep_aspect_ratio_policy"] = policy
    if antialias:
        attrs["antialias"] = 1
    nodes.append(helper.make_node("Resize", ins, [r], **attrs))
    nodes.append(helper.make_node("Conv", [r, w2], ["y"], kernel_shape=[1, 1]))
    save(name, "pt18", nodes, [helper.make_tensor_value_info("x", T.FLOAT, [1, 3, 10, 14])],
         [helper.make_tensor_value_info("y", T.FLOAT, None)], inits, opset, [])


def einsum_attn(name, opset, b, h, s, d, extras):
    """Attention written with Einsum (transformer code using torch.einsum exports it so): projections, q k^T
    scores, softmax, weighted values; then extra equations on the input x (operands "x" or initializer shapes):
    ellipsis, implicit outputs, single-operand transposes and sums, outer products."""
    nm = Namer()
    nodes, inits = [], {}
    proj = {}
    for tag in ("q", "k", "v"):
        w_ = nm(tag + ".weight")
        inits[w_] = f32(d * h, d * h, scale=0.2)
        p = nm(tag + "_proj")
        nodes.append(helper.make_node("Einsum", ["x", w_], [p], equation="bsc,oc->bso"))
        shp = nm(tag + "_shape")
        inits[shp] = np.array([b, s, h, d], np.int64)
        r = nm(tag + "_heads")
        nodes.append(helper.make_node("Reshape", [p, shp], [r]))
        proj[tag] = r
    sc = nm("scores")
    nodes.append(helper.make_node("Einsum", [proj["q"], proj["k"]], [sc], equation="bqhd,bkhd->bhqk"))
    sm = nm("probs")
    nodes.append(helper.make_node("Softmax", [sc], [sm], axis=-1))
    nodes.append(helper.make_node("Einsum", [sm, proj["v"]], ["context"], equation="bhqk,bkhd->bqhd"))
    outs = [helper.make_tensor_value_info("context", T.FLOAT, None)]
    for k, (eq, operands) in enumerate(extras):
        args = []
        for j, spec in enumerate(operands):
            if spec == "x":
                args.append("x")
            else:
                a = nm("e%d_%d" % (k, j))
                inits[a] = f32(*spec)
                args.append(a)
        o = "extra%d" % k
        nodes.append(helper.make_node("Einsum", args, [o], equation=eq))
        outs.append(helper.make_tensor_value_info(o, T.FLOAT, None))
    save(name, "pt18", nodes, [helper.make_tensor_value_info("x", T.FLOAT, [b, s, d * h])], outs, inits, opset, [])




# ---------------------------------------------------------------- opset 18-21 forms, operator by operator
def sweep(name, opset, x_shape, build):
    """One model per opset whose signature changes (axes as inputs, noop_with_empty_axes, Split num_outputs, Pad axes,
    Resize half_pixel_symmetric, Pad wrap, Gelu, GridSample's renamed modes, DFT's axis input, opset-21 version bumps): build(nodes,
    inits, nm) adds each form on the input "x" and returns its outputs, which are flattened and concatenated into y."""
    nm = Namer()
    nodes, inits = [], {}
    outs = build(nodes, inits, nm)
    flat = []
    for o in outs:
        f = nm("flat")
        nodes.append(helper.make_node("Flatten", [o], [f], axis=0))
        flat.append(f)
    nodes.append(helper.make_node("Concat", flat, ["y"], axis=1))
    save(name, "onnx18", nodes, [helper.make_tensor_value_info("x", T.FLOAT, x_shape)], [helper.make_tensor_value_info("y", T.FLOAT, None)],
         inits, opset, [])


REDUCE_OPS = ("ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare",
              "ReduceMean", "ReduceSum")


def reduce_forms(form):
    def build(nodes, inits, nm):
        pos = nm("pos")
        inits[nm("half")] = np.array(0.5, np.float32)
        nodes.append(helper.make_node("Abs", ["x"], [pos + "_a"]))
        nodes.append(helper.make_node("Add", [pos + "_a", list(inits)[-1]], [pos]))  # ReduceLogSum of a positive tensor
        outs = []
        for op in REDUCE_OPS:
            src, o = pos if op == "ReduceLogSum" else "x", nm(op.lower())
            if form == "axes":
                ax = nm("axes")
                inits[ax] = np.array([1, -1], np.int64)
                nodes.append(helper.make_node(op, [src, ax], [o], keepdims=1))
            elif form == "noop":
                ax = nm("axes")
                inits[ax] = np.array([], np.int64)
                nodes.append(helper.make_node(op, [src, ax], [o], noop_with_empty_axes=1))
            else:
                nodes.append(helper.make_node(op, [src], [o], keepdims=0))
            outs.append(o)
        return outs
    return build


def split_pad(nodes, inits, nm):
    outs = [nm("s") for _ in range(3)]
    nodes.append(helper.make_node("Split", ["x"], outs, axis=3, num_outputs=3))  # 10 -> 4, 4, 2
    sp, s2 = nm("split"), [nm("t"), nm("t")]
    inits[sp] = np.array([2, 3], np.int64)
    nodes.append(helper.make_node("Split", ["x", sp], s2, axis=2))
    for mode in ("constant", "reflect", "edge"):
        p, cv, ax, o = nm("pads"), nm("cv"), nm("axes"), nm("pad_" + mode)
        inits[p], inits[cv], inits[ax] = np.array([1, 2, 2, 1], np.int64), np.array(0.5, np.float32), np.array([2, -1], np.int64)
        nodes.append(helper.make_node("Pad", ["x", p, cv if mode == "constant" else "", ax], [o], mode=mode))
        outs.append(o)
    return outs + s2


def resize19(nodes, inits, nm):
    p, ax, o = nm("pads"), nm("axes"), nm("pad_wrap")
    inits[p], inits[ax] = np.array([2, 1, 7, 3], np.int64), np.array([2, 3], np.int64)  # more than the extent: wraps twice
    nodes.append(helper.make_node("Pad", ["x", p, "", ax], [o], mode="wrap"))
    outs = [o]
    for mode, sc in (("linear", [1, 1, 1.6, 0.7]), ("cubic", [1, 1, 0.6, 1.3]), ("nearest", [1, 1, 2.5, 0.45])):
        s, o = nm("scales"), nm("resize_" + mode)
        inits[s] = np.array(sc, np.float32)
        nodes.append(helper.make_node("Resize", ["x", "", s], [o], mode=mode, coordinate_transformation_mode="half_pixel_symmetric"))
        outs.append(o)
    return outs


def avgpool19(nodes, inits, nm):
    """AveragePool-19 with dilations (imported as avgpool3d on a unit depth axis): pads, count_include_pad, ceil_mode."""
    outs = []
    for k, d, st, pads, cip, ceil in (([3, 3], [2, 2], [1, 1], [0, 0, 0, 0], 0, 0), ([2, 3], [2, 1], [2, 1], [1, 2, 1, 0], 0, 1),
                                      ([3, 2], [1, 3], [1, 2], [2, 1, 2, 1], 1, 0), ([2, 2], [3, 2], [2, 2], [1, 1, 1, 1], 1, 1)):
        o = nm("avgpool")
        nodes.append(helper.make_node("AveragePool", ["x"], [o], kernel_shape=k, dilations=d, strides=st, pads=pads,
                                      count_include_pad=cip, ceil_mode=ceil))
        outs.append(o)
    return outs


def centercroppad(nodes, inits, nm):
    """CenterCropPad-18 (x [2, 3, 9, 11]): crop one axis and pad another by odd amounts (axes listed, one negative),
    and every axis at once."""
    outs = []
    for shape, axes in (([6, 14], [2, -1]), ([2, 4, 10, 8], None), ([3, 12], [1, 2])):
        s, o = nm("shape"), nm("centercroppad")
        inits[s] = np.array(shape, np.int64)
        attrs = {"axes": axes} if axes else {}
        nodes.append(helper.make_node("CenterCropPad", ["x", s], [o], **attrs))
        outs.append(o)
    return outs


def col2im(nodes, inits, nm):
    """Col2Im-18 (x [2, 12, 20]: 3 channels of 2x2 blocks at 20 positions) into three images: plain; dilated, strided
    and padded; strided with an output row left over by the last block."""
    outs = []
    for img, attrs in (([5, 6], {}), ([9, 5], {"dilations": [2, 1], "strides": [2, 1], "pads": [1, 0, 1, 0]}),
                       ([5, 9], {"strides": [1, 2], "pads": [0, 1, 0, 1]})):
        i, b, o = nm("image_shape"), nm("block_shape"), nm("col2im")
        inits[i], inits[b] = np.array(img, np.int64), np.array([2, 2], np.int64)
        nodes.append(helper.make_node("Col2Im", ["x", i, b], [o], **attrs))
        outs.append(o)
    return outs


def affinegrid(size):
    """AffineGrid-20 of theta x ([N, 2, 3] or [N, 3, 4]) for a constant size, align_corners 0 and 1."""
    def build(nodes, inits, nm):
        outs = []
        for ac in (0, 1):
            s, o = nm("size"), nm("affinegrid")
            inits[s] = np.array(size, np.int64)
            nodes.append(helper.make_node("AffineGrid", ["x", s], [o], align_corners=ac))
            outs.append(o)
        return outs
    return build


def melweight(nodes, inits, nm):
    """MelWeightMatrix-17 (torchaudio-style log-mel front ends) of constant scalars, x [3, 257] (a 512-point onesided
    spectrum) projected on each: the full band at 16 kHz, an inner band at 22.05 kHz, a narrow band at 8 kHz."""
    outs = []
    for mels, rate, lo, hi in ((40, 16000, 0.0, 8000.0), (64, 22050, 30.0, 11025.0), (20, 8000, 100.0, 3000.0)):
        names = [nm(k) for k in ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz")]
        for k, v in zip(names, (np.array(mels, np.int32), np.array(512, np.int32), np.array(rate, np.int32),
                                np.array(lo, np.float32), np.array(hi, np.float32))):
            inits[k] = v
        w, o = nm("mel"), nm("proj")
        nodes += [helper.make_node("MelWeightMatrix", names, [w]), helper.make_node("MatMul", ["x", w], [o])]
        outs.append(o)
    return outs


def tfidf(nodes, inits, nm):
    """TfIdfVectorizer-9 on token ids (x [2, 9] floats in [-1, 1) mapped to ids 0-3 by Mul, Add, Floor, Cast): TF of
    uni- and bigrams with skips, IDF and TFIDF with weights (ONNX Runtime reads them in pool order, like
    ngram_indexes, here a permutation), TFIDF without weights over 1-3-grams, and a 1-D row."""
    s, b, mu, ad, f, t = nm("scale"), nm("bias"), nm("mul"), nm("add"), nm("floor"), nm("ids")
    inits[s], inits[b] = np.array(2, np.float32), np.array(2, np.float32)
    nodes += [helper.make_node("Mul", ["x", s], [mu]), helper.make_node("Add", [mu, b], [ad]), helper.make_node("Floor", [ad], [f]),
              helper.make_node("Cast", [f], [t], to=T.INT64)]
    pool = [0, 1, 2, 3, 0, 1, 1, 2, 2, 2, 3, 0, 0, 1, 2]
    forms = (dict(mode="TF", min_gram_length=1, max_gram_length=2, max_skip_count=2, ngram_counts=[0, 4],
                  ngram_indexes=[0, 1, 2, 3, 4, 5, 6, 7], pool_int64s=pool[:12]),
             dict(mode="IDF", min_gram_length=1, max_gram_length=2, max_skip_count=1, ngram_counts=[0, 4],
                  ngram_indexes=[7, 5, 3, 1, 0, 2, 4, 6], pool_int64s=pool[:12], weights=[0.5, 2, 3, 4, 5, 6, 7, 8]),
             dict(mode="TFIDF", min_gram_length=2, max_gram_length=3, max_skip_count=3, ngram_counts=[0, 4, 12],
                  ngram_indexes=[3, 2, 1, 0, 4, 5, 6, 8, 7], pool_int64s=pool, weights=[1, 0.5, 2, 1.5, 3, 0.25, 4, 5, 6]),
             dict(mode="TFIDF", min_gram_length=1, max_gram_length=3, max_skip_count=0, ngram_counts=[0, 4, 12],
                  ngram_indexes=[0, 1, 2, 3, 4, 5, 6, 7, 8], pool_int64s=pool))
    outs = []
    for attrs in forms:
        outs.append(nm("tfidf"))
        nodes.append(helper.make_node("TfIdfVectorizer", [t], [outs[-1]], **attrs))
    row, i = nm("row"), nm("i")
    inits[i] = np.array(1, np.int64)
    nodes += [helper.make_node("Gather", [t, i], [row], axis=0), helper.make_node("TfIdfVectorizer", [row], [nm("tfidf1d")], **forms[0])]
    outs.append(nodes[-1].output[0])
    return outs


def op20(nodes, inits, nm):
    outs = []
    for appr in ("none", "tanh"):
        o = nm("gelu")
        nodes.append(helper.make_node("Gelu", ["x"], [o], approximate=appr))
        outs.append(o)
    grid = nm("grid")
    inits[grid] = np.random.default_rng(20).uniform(-1.1, 1.1, (2, 4, 3, 2)).astype(np.float32)
    for mode, pad, ac in (("linear", "zeros", 0), ("linear", "border", 1), ("nearest", "reflection", 0), ("cubic", "border", 0),
                          ("cubic", "zeros", 1)):
        o = nm("grid_" + mode)
        nodes.append(helper.make_node("GridSample", ["x", grid], [o], mode=mode, padding_mode=pad, align_corners=ac))
        outs.append(o)
    for op in ("ReduceMax", "ReduceMin"):
        ax, o = nm("axes"), nm(op.lower())
        inits[ax] = np.array([2], np.int64)
        nodes.append(helper.make_node(op, ["x", ax], [o], keepdims=0))
        outs.append(o)
    return outs


def op21(nodes, inits, nm):
    t, f, u, q, r, s, c, m, p, gn = (nm(k) for k in ("t", "f", "u", "q", "r", "s", "c", "m", "p", "gn"))
    a0, shp, pads, sc, b = nm("a0"), nm("shape"), nm("pads"), nm("scale"), nm("bias")
    inits[a0], inits[shp], inits[pads] = np.array([2], np.int64), np.array([0, 0, -1], np.int64), np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)
    inits[sc], inits[b] = np.array([1.0, 0.5, 2.0], np.float32), np.array([0.1, 0.0, -0.1], np.float32)
    nodes += [helper.make_node("Transpose", ["x"], [t], perm=[0, 2, 3, 1]), helper.make_node("Flatten", [t], [f], axis=2),
              helper.make_node("Unsqueeze", ["x", a0], [u]), helper.make_node("Squeeze", [u, a0], [q]),
              helper.make_node("Reshape", [q, shp], [r]), helper.make_node("Shape", ["x"], [s]),
              helper.make_node("ConstantOfShape", [s], [c], value=numpy_helper.from_array(np.array([2.0], np.float32))),
              helper.make_node("Mul", ["x", c], [m]), helper.make_node("Pad", [m, pads], [p]),
              helper.make_node("GroupNormalization", ["x", sc, b], [gn], num_groups=3, epsilon=1e-5)]
    return [f, r, p, gn]


def scatter_mish(nodes, inits, nm):
    rng = np.random.default_rng(18)
    outs = []
    for red in ("max", "min", "mul"):
        i, u, o = nm("idx"), nm("upd"), nm("scatter_" + red)
        inits[i], inits[u] = rng.integers(0, 10, (2, 3, 5, 2)).astype(np.int64), rng.uniform(-1, 1, (2, 3, 5, 2)).astype(np.float32)
        nodes.append(helper.make_node("ScatterElements", ["x", i, u], [o], axis=3, reduction=red))
        i2, u2, o2 = nm("idx"), nm("upd"), nm("scatternd_" + red)
        inits[i2], inits[u2] = np.array([[0, 1], [1, 2]], np.int64), rng.uniform(-1, 1, (2, 5, 10)).astype(np.float32)
        nodes.append(helper.make_node("ScatterND", ["x", i2, u2], [o2], reduction=red))
        outs += [o, o2]
    o = nm("mish")
    nodes.append(helper.make_node("Mish", ["x"], [o]))
    return outs + [o]


k = 0
for opset in (9, 10, 11):
    for act, up in (("relu6", False), ("hswish", True), ("relu6", True)):
        paddle(k, opset, act, up, 3 + k % 2, 8 + 4 * (k % 3))
        k += 1
paddle(k, 11, "hswish", False, 3, 16)
k = 0
for opset in (11, 13, 15):
    for stride, mode in ((1, "SAME_UPPER"), (2, "SAME_UPPER"), (2, "VALID")):
        tf2onnx(k, opset, stride, mode, 3, 8 + 4 * (k % 2))
        k += 1
tf2onnx(k, 13, 2, "SAME_LOWER", 3, 8)
k = 0
for opset in (18, 19, 20):
    for d, heads in ((16, 2), (32, 4), (24, 3)):
        pt18(k, opset, d, heads)
        k += 1
pt18(k, 18, 64, 8)
recurrent("tf2onnx_10_op13_gru", "tf2onnx", 13, "GRU", "forward", 7, 6, 8, {"linear_before_reset": 1}, False)
recurrent("tf2onnx_11_op13_rnn_relu", "tf2onnx", 13, "RNN", "forward", 6, 5, 12, {"activations": ["Relu"]}, False)
recurrent("tf2onnx_12_op15_lstm_reverse", "tf2onnx", 15, "LSTM", "reverse", 5, 4, 10, {}, False)
recurrent("paddle_10_op11_gru_bidir", "paddle", 11, "GRU", "bidirectional", 6, 5, 7, {}, True)
recurrent("paddle_11_op11_rnn_bidir", "paddle", 11, "RNN", "bidirectional", 5, 3, 9, {}, True)
# clip and non-default activations with their alpha / beta lists (Paddle's and tf2onnx's LSTM / GRU / RNN forms)
recurrent("paddle_13_op11_lstm_clip_acts", "paddle", 11, "LSTM", "bidirectional", 6, 4, 6,
          {"clip": 0.8, "activations": ["HardSigmoid", "Tanh", "Softsign", "Sigmoid", "ScaledTanh", "Tanh"],
           "activation_alpha": [0.25, 1.2], "activation_beta": [0.45, 0.9]}, True)
recurrent("tf2onnx_17_op13_lstm_input_forget", "tf2onnx", 13, "LSTM", "forward", 5, 4, 7, {"input_forget": 1, "clip": 0.4}, False)
recurrent("tf2onnx_18_op13_gru_acts_clip", "tf2onnx", 13, "GRU", "reverse", 6, 5, 6,
          {"clip": 0.6, "activations": ["LeakyRelu", "Elu"], "activation_alpha": [0.1, 0.8]}, False)
recurrent("paddle_14_op11_rnn_acts_bidir", "paddle", 11, "RNN", "bidirectional", 5, 3, 5,
          {"activations": ["Affine", "ThresholdedRelu"], "activation_alpha": [0.5, 0.1], "activation_beta": [0.2]}, True)
recurrent("paddle_15_op11_gru_softplus", "paddle", 11, "GRU", "forward", 4, 3, 5,
          {"activations": ["Sigmoid", "Softplus"], "clip": 0.3, "linear_before_reset": 1}, True)
cnn3d("tf2onnx_13_op13_cnn3d", "tf2onnx", 13, 3, 8, 6, 12)
cnn3d("pt3d_00_op17_cnn3d", "pt3d", 17, 3, 8, 7, 11)
cnn3d("pt3d_01_op13_cnn3d", "pt3d", 13, 2, 6, 5, 9)
tf_resize("tf2onnx_14_op13_crop_resize", 13, [0, 0, -0.1, 0.2, 1, 1, 1.15, 0.9], [1, 3, 9, 8], 0.5, "round_prefer_ceil")
tf_resize("tf2onnx_15_op11_crop_resize", 11, [0, 0, 0.25, 0.0, 1, 1, 0.75, 1.0], [2, 2, 5, 1], 0.0, "floor")
tf_bidir_reverse("tf2onnx_16_op13_bilstm_reverse", 13, 6, 4, 5)
pt_unpool("pt18_10_op18_unpool", 18, 4, 9)
pt_roialign("pt18_11_op18_roialign", 18, 4, 32, 2)
pt_roialign("pt18_12_op16_roialign_adaptive", 16, 3, 24, 0)
pt_roialign("pt18_21_op16_roialign_max", 16, 4, 24, 2, "max")
pt_roialign("pt18_22_op18_roialign_max_adaptive", 18, 3, 32, 0, "max")
pt_stft("pt18_13_op18_stft_mel", 18, 400, 64, 16)
pt_dft("pt18_14_op18_dft_filter", 18, 24)
norms("paddle_12_op9_instancenorm", "paddle", 9, 8, 12, 0, True)
norms("pt18_15_op18_groupnorm", "pt18", 18, 8, 10, 4, False)
norms("pt18_16_op21_groupnorm", "pt18", 21, 12, 9, 3, False)
resize_axes("pt18_17_op18_resize_axes_scales", 18, "linear", [2, 3], [2.0, 1.5], None, None, "half_pixel")
resize_axes("pt18_18_op18_resize_axes_sizes", 18, "nearest", [3, 2], None, [21, 17], None, "asymmetric")
resize_axes("pt18_19_op19_resize_axes_cubic", 19, "cubic", [2, 3], None, [25, 25], None, "half_pixel")
einsum_attn("pt18_23_op18_einsum_attention", 18, 2, 2, 5, 4,
            [("...c,dc->...d", ["x", (3, 8)]), ("bsc,cd", ["x", (8, 3)]), ("bsc->cbs", ["x"]), ("bsc->bc", ["x"]),
             ("bsc,t->bsct", ["x", (3,)]), ("bsc,bsc->bs", ["x", "x"]), ("bsc,c->", ["x", (8,)])])
einsum_attn("pt18_24_op12_einsum_attention", 12, 1, 4, 3, 2, [("bsc,sc->b", ["x", (3, 8)])])
resize_axes("pt18_20_op18_resize_axes_corners", 18, "linear", [3, 2], [1.5, 0.8], None, None, "align_corners")
resize_axes("pt18_25_op18_resize_keep_not_larger", 18, "linear", [2, 3], None, [7, 30], "not_larger", "half_pixel")
resize_axes("pt18_26_op19_resize_keep_not_smaller", 19, "nearest", [3, 2], None, [20, 15], "not_smaller", "asymmetric")
resize_axes("pt18_27_op18_resize_keep_corners", 18, "linear", [2, 3], None, [12, 12], "not_larger", "align_corners")
# antialias with align_corners: ONNX Runtime's filter divides by the rounded output length, from scales too
resize_axes("pt18_28_op18_resize_antialias_corners_down", 18, "linear", [2, 3], [0.65, 0.45], None, None, "align_corners", 1)
resize_axes("pt18_29_op18_resize_antialias_corners_cubic", 18, "cubic", [2, 3], None, [6, 20], None, "align_corners", 1)
resize_axes("pt18_30_op18_resize_antialias_corners_up", 18, "linear", [3, 2], [1.75, 1.3], None, None, "align_corners", 1)

sweep("onnx18_00_op18_reduce_axes_input", 18, [2, 3, 5, 6], reduce_forms("axes"))
sweep("onnx18_01_op18_reduce_noop_empty_axes", 18, [2, 3, 5, 6], reduce_forms("noop"))
sweep("onnx18_02_op18_reduce_all", 18, [2, 3, 5, 6], reduce_forms("all"))
sweep("onnx18_03_op18_split_pad_axes", 18, [2, 3, 5, 10], split_pad)
sweep("onnx18_04_op18_scatter_reduction_mish", 18, [2, 3, 5, 10], scatter_mish)
sweep("onnx18_05_op19_resize_half_pixel_symmetric_pad_wrap", 19, [2, 3, 5, 6], resize19)
sweep("onnx18_06_op20_gelu_gridsample_reduce", 20, [2, 3, 5, 6], op20)
sweep("onnx18_07_op21_views_pad_groupnorm", 21, [2, 3, 5, 6], op21)
sweep("onnx18_08_op19_avgpool_dilations", 19, [2, 3, 9, 11], avgpool19)
sweep("onnx18_09_op18_centercroppad", 18, [2, 3, 9, 11], centercroppad)
sweep("onnx18_10_op18_col2im", 18, [2, 12, 20], col2im)
sweep("onnx18_11_op20_affinegrid_2d", 20, [2, 2, 3], affinegrid([2, 3, 5, 7]))
sweep("onnx18_12_op20_affinegrid_3d", 20, [2, 3, 4], affinegrid([2, 1, 3, 4, 5]))
sweep("onnx18_13_op17_melweightmatrix", 17, [3, 257], melweight)
sweep("onnx18_14_op9_tfidfvectorizer", 9, [2, 9], tfidf)

with open(os.path.join(OUT, "list.txt"), "w") as f:
    f.write("\n".join(listing) + "\n")
print("wrote %d models to %s" % (len(listing), OUT))
