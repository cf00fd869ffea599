#!/usr/bin/env python3
"""Export superopt's benchmark models to ONNX with seeded inputs and PyTorch reference outputs.

For every model NAME this writes, into the output folder:
  NAME.onnx     the model (torch.onnx.export, eval mode, constant folding on)
  NAME.in.bin   raw little-endian float32: all graph inputs back to back in graph order,
                uniform random in [-1, 1) from a seeded torch.Generator
  NAME.out.bin  raw little-endian float32: all graph outputs back to back in graph order,
                computed by PyTorch eager from exactly the values in NAME.in.bin
and a manifest.json with shapes, op counts, sizes and SHA-256 of every file.

Weights are random (torch.manual_seed before building each model); nothing is downloaded.
Usage:
  python3 data/export_models.py                 # small set -> data/
  python3 data/export_models.py --set full      # full set  -> data/full/
  python3 data/export_models.py --only bert2    # one model (from either set)
"""

import argparse
import collections
import hashlib
import json
import math
import os
import sys
import warnings
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))

WEIGHT_SEED = 0          # torch.manual_seed(WEIGHT_SEED ^ crc32(name)) before building a model
INPUT_SEED = 1           # torch.Generator().manual_seed(INPUT_SEED ^ crc32(name)) for its inputs


def name_seed(base, name):
    return (base ^ zlib.crc32(name.encode())) & 0x7FFFFFFF


def randomize_norm_params(model, gen):
    """Give BatchNorm/LayerNorm non-trivial (seeded) affine params and running stats,
    and all-zero Conv/Linear biases small random values.

    Freshly initialised norms are identities in eval mode (mean 0, var 1, gamma 1, beta 0),
    which would hide bugs in e.g. Conv+BN folding. Values stay in a tame range.
    """
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.LayerNorm)):
                if getattr(m, "weight", None) is not None:
                    m.weight.copy_(torch.rand(m.weight.shape, generator=gen) * 0.5 + 0.75)
                if getattr(m, "bias", None) is not None:
                    m.bias.copy_((torch.rand(m.bias.shape, generator=gen) - 0.5) * 0.2)
            if isinstance(m, (nn.Conv2d, nn.Linear)) and m.bias is not None \
                    and not torch.any(m.bias):
                # zero-initialised biases (torchvision) would hide bias bugs and make the
                # exporter deduplicate them into Identity nodes
                m.bias.copy_((torch.rand(m.bias.shape, generator=gen) - 0.5) * 0.2)
            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)) and m.track_running_stats:
                m.running_mean.copy_((torch.rand(m.running_mean.shape, generator=gen) - 0.5) * 0.2)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) * 0.5 + 0.75)


# ----------------------------------------------------------------------------------------------
# Models written op by op
# ----------------------------------------------------------------------------------------------

class DeepAndWide(nn.Module):
    """Deep & Wide ranking head (as in the TorchScript/TASO-style DLRM micro-benchmark)."""

    def __init__(self, emb=32, wide=50):
        super().__init__()
        self.mu = nn.Parameter(torch.randn(1, 1, emb) * 0.5)
        self.sigma = nn.Parameter(torch.rand(1, 1, emb) + 0.5)
        self.fc_w = nn.Parameter(torch.randn(wide + 1, 1) * 0.2)
        self.fc_b = nn.Parameter(torch.randn(1) * 0.1)

    def forward(self, ad_emb_packed, user_emb, wide):
        x = (ad_emb_packed + self.mu) * self.sigma
        x = torch.clamp(x, 0.0, 10.0)
        dp = torch.bmm(x, user_emb.transpose(1, 2))      # [1,1,1]
        dp = dp.flatten(1)                                  # [1,1]
        cat = torch.cat([dp, wide], dim=1)                  # [1,51]
        fc = torch.addmm(self.fc_b, cat, self.fc_w)         # [1,1]
        return torch.sigmoid(fc)


class LSTMSeq(nn.Module):
    """torch.nn.LSTM returning only the output sequence (exports ONNX LSTM ops)."""

    def __init__(self, inp=32, hidden=64, layers=2, batch=1):
        super().__init__()
        self.lstm = nn.LSTM(inp, hidden, num_layers=layers)
        # Explicit constant zero state: without it the exporter builds the zero state from
        # Shape/Gather/Concat/Expand chains on the input.
        self.register_buffer("h0", torch.zeros(layers, batch, hidden))
        self.register_buffer("c0", torch.zeros(layers, batch, hidden))

    def forward(self, x):
        out, _ = self.lstm(x, (self.h0, self.c0))
        return out


class NasRNN(nn.Module):
    """TASO's NasRNN benchmark cell, unrolled.

    Each step computes 8 gates t_i = x @ W_i + h @ U_i and combines them in the NAS cell
    tree (relu/sigmoid/tanh/add/mul). Weights are shared across time steps (TASO's script
    allocates fresh weights per step; sharing them is what a real RNN does and changes
    no operator). The initial state is a learned parameter, as in TASO.
    """

    def __init__(self, hidden=64, steps=5):
        super().__init__()
        self.steps = steps
        bound = 1.0 / math.sqrt(hidden)
        self.w = nn.ParameterList(
            [nn.Parameter((torch.rand(hidden, hidden) * 2 - 1) * bound) for _ in range(8)])
        self.u = nn.ParameterList(
            [nn.Parameter((torch.rand(hidden, hidden) * 2 - 1) * bound) for _ in range(8)])
        self.h0 = nn.Parameter(torch.rand(1, hidden) * 2 - 1)

    def cell(self, x, h):
        t = [torch.matmul(x, self.w[i]) + torch.matmul(h, self.u[i]) for i in range(8)]
        m0 = torch.relu(t[0]) + torch.sigmoid(t[3])
        m1 = torch.sigmoid(t[1]) + torch.tanh(t[2])
        m2 = torch.sigmoid(t[4]) * torch.tanh(t[5])
        m3 = torch.sigmoid(t[6]) * torch.relu(t[7])
        m4 = torch.sigmoid(m1) + torch.tanh(m2)
        m5 = torch.tanh(m0) * torch.tanh(m3)
        m6 = torch.tanh(m4) * torch.tanh(m5)
        return torch.tanh(m6)

    def forward(self, *xs):
        h = self.h0
        for x in xs:
            h = self.cell(x, h)
        return h


class BertLayer(nn.Module):
    """One post-LN BERT encoder layer written op by op (no nn.MultiheadAttention)."""

    def __init__(self, batch, seq, hidden, heads, ffn):
        super().__init__()
        assert hidden % heads == 0
        self.b, self.s, self.h, self.nh, self.dh = batch, seq, hidden, heads, hidden // heads
        self.q = nn.Linear(hidden, hidden)
        self.k = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, hidden)
        self.o = nn.Linear(hidden, hidden)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.ff1 = nn.Linear(hidden, ffn)
        self.ff2 = nn.Linear(ffn, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

    def heads(self, t):
        # Python-int shapes so the exported Reshape gets a constant shape (no Shape/Gather chain).
        return t.reshape(self.b, self.s, self.nh, self.dh).transpose(1, 2)   # [B,NH,S,DH]

    def forward(self, x):
        q = self.heads(self.q(x))
        k = self.heads(self.k(x))
        v = self.heads(self.v(x))
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.dh)   # [B,NH,S,S]
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v)                                        # [B,NH,S,DH]
        ctx = ctx.transpose(1, 2).reshape(self.b, self.s, self.h)
        x = F.layer_norm(x + self.o(ctx), (self.h,), self.ln1.weight, self.ln1.bias, self.ln1.eps)
        f = self.ff2(F.gelu(self.ff1(x)))
        return F.layer_norm(x + f, (self.h,), self.ln2.weight, self.ln2.bias, self.ln2.eps)


class BertEncoder(nn.Module):
    def __init__(self, layers, batch, seq, hidden, heads, ffn):
        super().__init__()
        self.layers = nn.ModuleList(
            [BertLayer(batch, seq, hidden, heads, ffn) for _ in range(layers)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def conv_bn_relu(cin, cout, k, stride=1, groups=1, relu=True):
    layers = [nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    if relu:
        layers.append(nn.ReLU(inplace=False))
    return nn.Sequential(*layers)


class Bottleneck(nn.Module):
    """1x1 reduce -> grouped 3x3 -> 1x1 expand, each with BN; residual add; ReLU."""

    def __init__(self, cin, mid, cout, groups, stride=1):
        super().__init__()
        self.body = nn.Sequential(
            conv_bn_relu(cin, mid, 1),
            conv_bn_relu(mid, mid, 3, stride=stride, groups=groups),
            conv_bn_relu(mid, cout, 1, relu=False))
        self.short = None
        if stride != 1 or cin != cout:
            self.short = conv_bn_relu(cin, cout, 1, stride=stride, relu=False)

    def forward(self, x):
        s = x if self.short is None else self.short(x)
        return torch.relu(self.body(x) + s)


class ResNetSmall(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = conv_bn_relu(3, 32, 3, stride=2)                    # 64 -> 32
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)                 # 32 -> 16
        self.block1 = Bottleneck(32, 32, 64, groups=4)                   # projection shortcut
        self.block2 = Bottleneck(64, 32, 64, groups=4)                   # identity shortcut
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.pool(self.stem(x))
        x = self.block2(self.block1(x))
        return self.fc(torch.flatten(self.gap(x), 1))


class TinySeg(nn.Module):
    """MobileNet-v3-style segmentation head in miniature: Hardswish stem, depthwise block with a
    squeeze-excite (ReLU, Hardsigmoid, Mul), LeakyReLU, bilinear upsampling to the input size
    (Resize, sizes) plus a nearest 2x branch (Resize, scales), and a ReduceSum output."""

    def __init__(self, classes=5):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.Hardswish())
        self.dw = nn.Sequential(nn.Conv2d(16, 16, 3, 1, 1, groups=16, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(16, 8, 1), nn.ReLU(), nn.Conv2d(8, 16, 1),
                                nn.Hardsigmoid())
        self.down = nn.Sequential(nn.Conv2d(16, 32, 3, 2, 1), nn.LeakyReLU(0.1))
        self.head = nn.Conv2d(32, classes, 1)
        self.skip = nn.Conv2d(16, classes, 1)

    def forward(self, x):
        h = self.dw(self.stem(x))                                        # 32 -> 16
        h = h * self.se(h)
        y = self.head(self.down(h))                                      # 16 -> 8
        y = nn.functional.interpolate(y, scale_factor=2, mode="nearest") + self.skip(h)
        y = nn.functional.interpolate(y, size=x.shape[2:], mode="bilinear", align_corners=False)
        return y, y.sum(dim=1)


# --- NasNet-A-like CIFAR network ---------------------------------------------------------------

class SepConv(nn.Module):
    """NASNet 'separable_KxK_2': twice (ReLU, depthwise KxK, pointwise 1x1, BN); stride on first."""

    def __init__(self, c, k, stride=1):
        super().__init__()
        p = k // 2
        self.ops = nn.Sequential(
            nn.ReLU(), nn.Conv2d(c, c, k, stride, p, groups=c, bias=False),
            nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c),
            nn.ReLU(), nn.Conv2d(c, c, k, 1, p, groups=c, bias=False),
            nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        return self.ops(x)


class ReLUConvBN(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.ops = nn.Sequential(nn.ReLU(), nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return self.ops(x)


class FactorizedReduce(nn.Module):
    """Halve resolution of the previous-previous state: two 1x1 stride-2 convs, the second on
    the input shifted by one pixel (x[:, :, 1:, 1:]; for even H, W no padding is needed to get
    H/2 x W/2), concat, BN."""

    def __init__(self, cin, cout):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout // 2, 1, stride=2, bias=False)
        self.c2 = nn.Conv2d(cin, cout - cout // 2, 1, stride=2, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        x = torch.relu(x)
        return self.bn(torch.cat([self.c1(x), self.c2(x[:, :, 1:, 1:])], dim=1))


def avg3(stride=1):
    return nn.AvgPool2d(3, stride, 1, count_include_pad=False)


def max3(stride=1):
    return nn.MaxPool2d(3, stride, 1)


class NormalCell(nn.Module):
    """NASNet-A normal cell (TF-slim nasnet_utils.NasNetANormalCell), output 6C channels."""

    def __init__(self, c_prev_prev, c_prev, c, reduce_prev):
        super().__init__()
        self.pre0 = FactorizedReduce(c_prev_prev, c) if reduce_prev else ReLUConvBN(c_prev_prev, c)
        self.pre1 = ReLUConvBN(c_prev, c)
        self.b0l, self.b0r = SepConv(c, 5), SepConv(c, 3)
        self.b1l, self.b1r = SepConv(c, 5), SepConv(c, 3)
        self.b2l = avg3()
        self.b3l, self.b3r = avg3(), avg3()
        self.b4l = SepConv(c, 3)

    def forward(self, h_prev, h):
        s0, s1 = self.pre0(h_prev), self.pre1(h)
        b0 = self.b0l(s0) + self.b0r(s1)
        b1 = self.b1l(s1) + self.b1r(s1)
        b2 = self.b2l(s0) + s1
        b3 = self.b3l(s1) + self.b3r(s1)
        b4 = self.b4l(s0) + s0
        return torch.cat([s1, b0, b1, b2, b3, b4], dim=1)


class ReductionCell(nn.Module):
    """NASNet-A reduction cell (TF-slim NasNetAReductionCell), stride 2, output 4C channels."""

    def __init__(self, c_prev_prev, c_prev, c, reduce_prev):
        super().__init__()
        self.pre0 = FactorizedReduce(c_prev_prev, c) if reduce_prev else ReLUConvBN(c_prev_prev, c)
        self.pre1 = ReLUConvBN(c_prev, c)
        self.b0l, self.b0r = SepConv(c, 5, 2), SepConv(c, 7, 2)
        self.b1l, self.b1r = max3(2), SepConv(c, 7, 2)
        self.b2l, self.b2r = avg3(2), SepConv(c, 5, 2)
        self.b3r = avg3(1)
        self.b4l, self.b4r = SepConv(c, 3), max3(2)

    def forward(self, h_prev, h):
        s0, s1 = self.pre0(h_prev), self.pre1(h)
        b0 = self.b0l(s0) + self.b0r(s1)
        b1 = self.b1l(s0) + self.b1r(s1)
        b2 = self.b2l(s0) + self.b2r(s1)
        b3 = b1 + self.b3r(b0)
        b4 = self.b4l(b0) + self.b4r(s0)
        return torch.cat([b1, b2, b3, b4], dim=1)


class NasNetA(nn.Module):
    """CIFAR-style NASNet-A: stem, N normal, reduction, N normal, reduction, N normal, GAP, FC."""

    def __init__(self, c=16, n=2, classes=10):
        super().__init__()
        stem_c = 3 * c
        self.stem = nn.Sequential(nn.Conv2d(3, stem_c, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(stem_c))
        cells = []
        cpp, cp, cur = stem_c, stem_c, c
        reduce_prev = False
        for stage in range(3):
            if stage > 0:
                cur *= 2
                cells.append(ReductionCell(cpp, cp, cur, reduce_prev))
                cpp, cp, reduce_prev = cp, 4 * cur, True
            for _ in range(n):
                cells.append(NormalCell(cpp, cp, cur, reduce_prev))
                cpp, cp, reduce_prev = cp, 6 * cur, False
        self.cells = nn.ModuleList(cells)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cp, classes)

    def forward(self, x):
        s0 = s1 = self.stem(x)
        for cell in self.cells:
            s0, s1 = s1, cell(s0, s1)
        return self.fc(torch.flatten(self.gap(torch.relu(s1)), 1))


# ----------------------------------------------------------------------------------------------
# Registry
# ----------------------------------------------------------------------------------------------

Spec = collections.namedtuple("Spec", "build inputs input_names output_names doc")


def tv(name, **kw):
    def build():
        import torchvision.models as tvm
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return getattr(tvm, name)(weights=None, **kw)
    return build


def bert(layers, batch, seq, hidden, heads, ffn):
    return lambda: BertEncoder(layers, batch, seq, hidden, heads, ffn)


MODELS = {
    "deepandwide": Spec(DeepAndWide, [(1, 1, 32), (1, 1, 32), (1, 50)],
                        ["ad_emb_packed", "user_emb", "wide"], ["prob"],
                        "Deep & Wide ranking head: (x+mu)*sigma, clamp[0,10], bmm with user "
                        "embedding, concat with 50 wide features, addmm (Gemm) 51->1, sigmoid."),
    "lstm2": Spec(LSTMSeq, [(8, 1, 32)], ["x"], ["y"],
                  "torch.nn.LSTM, 2 layers, input 32, hidden 64, seq 8 (seq-first), batch 1, "
                  "zero initial state; output is the full output sequence [8,1,64]."),
    "nasrnn": Spec(lambda: NasRNN(64, 5), [(1, 64)] * 5, ["x%d" % i for i in range(5)], ["h"],
                   "TASO NasRNN cell (8 gates x@W_i + h@U_i, NAS combination tree), hidden 64, "
                   "unrolled 5 steps, batch 1; one input per step, output is the final state."),
    "bert2": Spec(bert(2, 1, 16, 128, 4, 512), [(1, 16, 128)], ["hidden_states"], ["output"],
                  "2-layer post-LN BERT encoder written op by op: hidden 128, 4 heads, FFN 512 "
                  "with erf GELU, seq 16, batch 1. Input is hidden states (no embeddings/mask)."),
    "squeezenet": Spec(tv("squeezenet1_1"), [(1, 3, 224, 224)], ["input"], ["logits"],
                       "torchvision squeezenet1_1, random weights, 1000 classes."),
    "tinyseg": Spec(TinySeg, [(1, 3, 32, 32)], ["input"], ["logits", "class_sum"],
                    "Tiny MobileNet-v3-style segmentation net: Hardswish, squeeze-excite with "
                    "Hardsigmoid, LeakyReLU, nearest 2x and bilinear Resize, ReduceSum."),
    "resnet_small": Spec(ResNetSmall, [(1, 3, 64, 64)], ["input"], ["logits"],
                         "Small ResNeXt-style net: stem conv3x3/2+BN+ReLU, maxpool3x3/2, two "
                         "bottlenecks (1x1, grouped 3x3 g=4, 1x1, BN, residual add, ReLU; the "
                         "first with a 1x1 projection shortcut), global avg pool, linear 64->10."),
    # ---- full set only ----
    "resnet50": Spec(tv("resnet50"), [(1, 3, 224, 224)], ["input"], ["logits"],
                     "torchvision resnet50, random weights."),
    "resnext50_32x4d": Spec(tv("resnext50_32x4d"), [(1, 3, 224, 224)], ["input"], ["logits"],
                            "torchvision resnext50_32x4d, random weights."),
    "inception_v3": Spec(tv("inception_v3", aux_logits=False, init_weights=False),
                         [(1, 3, 299, 299)], ["input"], ["logits"],
                         "torchvision inception_v3 (aux_logits=False, init_weights=False), 299x299."),
    "mobilenet_v2": Spec(tv("mobilenet_v2"), [(1, 3, 224, 224)], ["input"], ["logits"],
                         "torchvision mobilenet_v2, random weights."),
    "densenet121": Spec(tv("densenet121"), [(1, 3, 224, 224)], ["input"], ["logits"],
                        "torchvision densenet121, random weights."),
    "squeezenet1_1": Spec(tv("squeezenet1_1"), [(1, 3, 224, 224)], ["input"], ["logits"],
                          "torchvision squeezenet1_1, random weights (same graph as 'squeezenet')."),
    "efficientnet_b0": Spec(tv("efficientnet_b0"), [(1, 3, 224, 224)], ["input"], ["logits"],
                            "torchvision efficientnet_b0, random weights."),
    "regnet_y_400mf": Spec(tv("regnet_y_400mf"), [(1, 3, 224, 224)], ["input"], ["logits"],
                           "torchvision regnet_y_400mf, random weights."),
    "mnasnet1_0": Spec(tv("mnasnet1_0"), [(1, 3, 224, 224)], ["input"], ["logits"],
                       "torchvision mnasnet1_0, random weights."),
    "mobilenet_v3_large": Spec(tv("mobilenet_v3_large"), [(1, 3, 224, 224)], ["input"], ["logits"],
                               "torchvision mobilenet_v3_large, random weights."),
    "googlenet": Spec(tv("googlenet", aux_logits=False, init_weights=False), [(1, 3, 224, 224)],
                      ["input"], ["logits"],
                      "torchvision googlenet (aux_logits=False, init_weights=False)."),
    "shufflenet_v2_x1_0": Spec(tv("shufflenet_v2_x1_0"), [(1, 3, 224, 224)], ["input"], ["logits"],
                               "torchvision shufflenet_v2_x1_0, random weights."),
    "convnext_tiny": Spec(tv("convnext_tiny"), [(1, 3, 224, 224)], ["input"], ["logits"],
                          "torchvision convnext_tiny, random weights."),
    "bert_base4": Spec(bert(4, 1, 64, 768, 12, 3072), [(1, 64, 768)], ["hidden_states"], ["output"],
                       "4-layer BERT-base encoder op by op: hidden 768, 12 heads, FFN 3072, seq 64, "
                       "batch 1."),
    "bert_taso": Spec(bert(8, 16, 64, 1024, 16, 4096), [(16, 64, 1024)], ["hidden_states"],
                      ["output"],
                      "8-layer BERT encoder op by op at TASO's size: hidden 1024, 16 heads, seq 64, "
                      "FFN 4096, batch 16. (TASO's own script is attention-only, batch 1.)"),
    "nasrnn_512": Spec(lambda: NasRNN(512, 5), [(1, 512)] * 5, ["x%d" % i for i in range(5)], ["h"],
                       "TASO NasRNN cell at TASO's size: hidden 512, unrolled 5 steps, batch 1."),
    "nasnet_a": Spec(NasNetA, [(1, 3, 32, 32)], ["input"], ["logits"],
                     "NASNet-A-like CIFAR net (C=16, N=2): stem conv3x3+BN, 2 normal cells, "
                     "reduction cell, 2 normal, reduction, 2 normal, ReLU, GAP, linear->10. Cells "
                     "follow TF-slim's NASNet-A normal/reduction cells (separable 3/5/7 convs as "
                     "ReLU-depthwise-pointwise-BN x2, 3x3 avg/max pools, identity, adds, concat); "
                     "factorized reduction uses Slice + two 1x1/2 convs."),
}

SMALL = ["deepandwide", "lstm2", "nasrnn", "bert2", "squeezenet", "resnet_small", "tinyseg"]
FULL = ["resnet50", "resnext50_32x4d", "inception_v3", "mobilenet_v2", "densenet121",
        "squeezenet1_1", "bert_base4", "bert_taso", "nasrnn_512", "nasnet_a", "deepandwide"]
# The other torchvision CNNs of issue 15's acceptance set (make models-cnn -> data/full/).
CNN = ["efficientnet_b0", "regnet_y_400mf", "mnasnet1_0", "mobilenet_v3_large", "googlenet",
       "shufflenet_v2_x1_0", "convnext_tiny"]


# ----------------------------------------------------------------------------------------------
# Export
# ----------------------------------------------------------------------------------------------

def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_f32(path, tensors):
    with open(path, "wb") as f:
        for t in tensors:
            a = t.detach().contiguous().to(torch.float32).numpy()
            f.write(a.astype("<f4", copy=False).tobytes())


def materialize_identity_initializers(path):
    """Replace `Identity(initializer)` nodes (the exporter's deduplication of equal weights)
    by a copy of the initializer under the Identity's output name. Returns nodes removed."""
    import onnx
    m = onnx.load(path)
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    keep, removed = [], 0
    for n in g.node:
        if (n.op_type == "Identity" and n.input[0] in inits
                and n.output[0] not in {o.name for o in g.output}):
            t = onnx.TensorProto()
            t.CopyFrom(inits[n.input[0]])
            t.name = n.output[0]
            g.initializer.append(t)
            removed += 1
        else:
            keep.append(n)
    if removed:
        del g.node[:]
        g.node.extend(keep)
        onnx.save(m, path)
    return removed


def onnx_summary(path):
    import onnx
    m = onnx.load(path)
    onnx.checker.check_model(m)
    g = m.graph
    inits = {i.name for i in g.initializer}

    def shape(vi):
        return [d.dim_value if d.HasField("dim_value") else d.dim_param
                for d in vi.type.tensor_type.shape.dim]

    def dtype(vi):
        return onnx.TensorProto.DataType.Name(vi.type.tensor_type.elem_type).lower()

    ops = collections.Counter(n.op_type for n in g.node)
    return {
        "opset": max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")),
        "inputs": [{"name": i.name, "shape": shape(i), "dtype": dtype(i)}
                   for i in g.input if i.name not in inits],
        "outputs": [{"name": o.name, "shape": shape(o), "dtype": dtype(o)} for o in g.output],
        "nodes": len(g.node),
        "initializers": len(g.initializer),
        "parameters": int(sum(math.prod(i.dims) for i in g.initializer)),
        "ops": dict(sorted(ops.items())),
    }


def export_one(name, outdir, opset, fold_bn):
    spec = MODELS[name]
    torch.manual_seed(name_seed(WEIGHT_SEED, name))
    model = spec.build()
    gen = torch.Generator().manual_seed(name_seed(WEIGHT_SEED, name) + 1)
    randomize_norm_params(model, gen)
    model.eval()

    gen = torch.Generator().manual_seed(name_seed(INPUT_SEED, name))
    inputs = tuple(torch.rand(s, generator=gen, dtype=torch.float32) * 2 - 1 for s in spec.inputs)

    with torch.no_grad():
        out = model(*inputs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    assert len(outs) == len(spec.output_names), name

    onnx_path = os.path.join(outdir, name + ".onnx")
    # EVAL runs the exporter's eval peephole, which folds BatchNorm into the preceding Conv;
    # PRESERVE (the model is in eval mode) keeps BatchNormalization nodes in the graph.
    training = torch.onnx.TrainingMode.EVAL if fold_bn else torch.onnx.TrainingMode.PRESERVE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad():
            torch.onnx.export(model, inputs, onnx_path, opset_version=opset,
                              do_constant_folding=True, training=training,
                              input_names=spec.input_names, output_names=spec.output_names,
                              export_params=True)
    materialize_identity_initializers(onnx_path)
    write_f32(os.path.join(outdir, name + ".in.bin"), inputs)
    write_f32(os.path.join(outdir, name + ".out.bin"), outs)

    info = {"description": spec.doc}
    info.update(onnx_summary(onnx_path))
    info["reference_output_shapes"] = [list(o.shape) for o in outs]
    for ext in (".onnx", ".in.bin", ".out.bin"):
        p = os.path.join(outdir, name + ext)
        info["files"] = info.get("files", {})
        info["files"][name + ext] = {"bytes": os.path.getsize(p), "sha256": sha256(p)}
    return info


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", choices=["small", "full", "cnn"], default="small",
                    help="small: committed models into data/; full: benchmark models into data/full/; cnn: the "
                         "other torchvision CNNs into data/full/")
    ap.add_argument("--only", metavar="NAME", action="append",
                    help="export only this model (repeatable); any registered name: "
                         + ", ".join(MODELS))
    ap.add_argument("--out", metavar="DIR", help="output folder (default data/ or data/full/)")
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--fold-bn", action="store_true",
                    help="let the exporter fold BatchNorm into Conv (default: keep BatchNormalization)")
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: default)")
    args = ap.parse_args(argv)

    if args.threads:
        torch.set_num_threads(args.threads)
    names = args.only or {"small": SMALL, "full": FULL, "cnn": CNN}[args.set]
    for n in names:
        if n not in MODELS:
            ap.error("unknown model %r (known: %s)" % (n, ", ".join(MODELS)))
    outdir = args.out or (HERE if args.set == "small" else os.path.join(HERE, "full"))
    os.makedirs(outdir, exist_ok=True)

    manifest_path = os.path.join(outdir, "manifest.json")
    manifest = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f).get("models", {})
    for n in names:
        print("exporting %s ..." % n, file=sys.stderr, flush=True)
        info = export_one(n, outdir, args.opset, args.fold_bn)
        manifest[n] = info
        print("  %s: %d nodes, %d params, ops %s" % (n, info["nodes"], info["parameters"],
                                                    info["ops"]), file=sys.stderr, flush=True)
    doc = {
        "generator": "data/export_models.py",
        "torch": torch.__version__.split("+")[0],
        "weight_seed": WEIGHT_SEED,
        "input_seed": INPUT_SEED,
        "format": "in.bin/out.bin: raw little-endian float32, all graph inputs/outputs back to "
                  "back in graph order",
        "models": dict(sorted(manifest.items())),
    }
    with open(manifest_path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
