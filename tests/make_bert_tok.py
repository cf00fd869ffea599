#!/usr/bin/python3
"""make_bert_tok.py - a tokenizer-fed BERT-style encoder exported from PyTorch (issue 23 item 4), and its check.

make_bert_tok.py                  (re)writes data/bert_tok.onnx and data/bert_tok/test_data_set_0/{input_0..2,output_0..1}.pb:
    2 layers, hidden 128, 4 heads, FFN 256, vocabulary 512, 2 token types, sequence 32 (symbolic 'batch' and
    'seq' dimensions, pinned with --dim); random weights (seed 23); inputs int64 input_ids [batch,seq],
    attention_mask [batch,seq] (last 7 positions padding), token_type_ids [batch,seq]; outputs last_hidden_state
    [batch,seq,128] and pooler_output [batch,128] as computed by PyTorch.
make_bert_tok.py --compare OUT SET  exit 0 when the outputs in OUT match SET/output_K.pb within 1e-4 (abs, or relative
    to the output's largest magnitude), printing the worst error; 1 otherwise. OUT is a folder of output_K.pb
    (superopt run --outputs DIR/) or a raw file of the outputs back to back, each in its own type (--outputs FILE of
    superopt run and tools/ort/ort_run.js).
make_bert_tok.py --raw SET FILE     writes SET/input_K.pb back to back in their own types (numpy tobytes) into FILE,
    the raw --inputs FILE form of superopt run and tools/ort/ort_run.js.
"""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

VOCAB, HIDDEN, LAYERS, HEADS, FFN, SEQ, TYPES = 512, 128, 2, 4, 256, 32, 2


def write_raw(set_dir, path):
    k, parts = 0, []
    while os.path.exists(os.path.join(set_dir, "input_%d.pb" % k)):
        parts.append(numpy_helper.to_array(onnx.load_tensor(os.path.join(set_dir, "input_%d.pb" % k))).tobytes())
        k += 1
    with open(path, "wb") as f:
        f.write(b"".join(parts))
    return 0


def compare(out, set_dir):
    worst, k, off = 0.0, 0, 0
    raw = None if os.path.isdir(out) else open(out, "rb").read()
    while os.path.exists(os.path.join(set_dir, "output_%d.pb" % k)):
        exp = numpy_helper.to_array(onnx.load_tensor(os.path.join(set_dir, "output_%d.pb" % k)))
        p = os.path.join(out, "output_%d.pb" % k)
        if raw is not None:
            n = exp.size * exp.dtype.itemsize
            if off + n > len(raw):
                print("%s: %d bytes, too short for output %d" % (out, len(raw), k))
                return 1
            got = np.frombuffer(raw[off:off + n], exp.dtype).reshape(exp.shape)
            off += n
        elif not os.path.exists(p):
            print("output_%d.pb missing" % k)
            return 1
        else:
            got = numpy_helper.to_array(onnx.load_tensor(p))
        if got.shape != exp.shape or got.dtype != exp.dtype:
            print("output_%d: %s %s, expected %s %s" % (k, got.dtype, got.shape, exp.dtype, exp.shape))
            return 1
        err = float(np.max(np.abs(got.astype(np.float64) - exp)) / max(1.0, float(np.max(np.abs(exp)))))
        worst = max(worst, err)
        k += 1
    if k == 0:
        print("no output_K.pb in %s" % set_dir)
        return 1
    if raw is not None and off != len(raw):
        print("%s: %d bytes, the outputs take %d" % (out, len(raw), off))
        return 1
    print("bert_tok: %d outputs, worst error %.3g (limit 1e-4)" % (k, worst))
    return 0 if worst <= 1e-4 else 1


def build():
    import torch
    from torch import nn

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)
            self.out = nn.Linear(HIDDEN, HIDDEN)
            self.ln1 = nn.LayerNorm(HIDDEN, eps=1e-12)
            self.ff1 = nn.Linear(HIDDEN, FFN)
            self.ff2 = nn.Linear(FFN, HIDDEN)
            self.ln2 = nn.LayerNorm(HIDDEN, eps=1e-12)

        def forward(self, x, bias):
            b, s, _ = x.shape
            q, k, v = self.qkv(x).split(HIDDEN, dim=-1)
            heads = lambda t: t.view(b, s, HEADS, HIDDEN // HEADS).transpose(1, 2)
            q, k, v = heads(q), heads(k), heads(v)
            att = torch.softmax(q @ k.transpose(-1, -2) / (HIDDEN // HEADS) ** 0.5 + bias, dim=-1)
            ctx = (att @ v).transpose(1, 2).reshape(b, s, HIDDEN)
            x = self.ln1(x + self.out(ctx))
            return self.ln2(x + self.ff2(nn.functional.gelu(self.ff1(x))))

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.word = nn.Embedding(VOCAB, HIDDEN)
            self.pos = nn.Embedding(SEQ, HIDDEN)
            self.ttype = nn.Embedding(TYPES, HIDDEN)
            self.ln = nn.LayerNorm(HIDDEN, eps=1e-12)
            self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
            self.pool = nn.Linear(HIDDEN, HIDDEN)
            self.register_buffer("position_ids", torch.arange(SEQ).unsqueeze(0))

        def forward(self, input_ids, attention_mask, token_type_ids):
            s = input_ids.shape[1]
            x = self.word(input_ids) + self.pos(self.position_ids[:, :s]) + self.ttype(token_type_ids)
            x = self.ln(x)
            bias = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
            for layer in self.layers:
                x = layer(x, bias)
            return x, torch.tanh(self.pool(x[:, 0]))

    torch.manual_seed(23)
    m = Encoder().eval()
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, nn.LayerNorm):
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.2, 0.2)
    return torch, m


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--compare":
        return compare(sys.argv[2], sys.argv[3])
    if len(sys.argv) == 4 and sys.argv[1] == "--raw":
        return write_raw(sys.argv[2], sys.argv[3])
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
    torch, m = build()
    rng = np.random.default_rng(23)
    ids = rng.integers(0, VOCAB, (1, SEQ)).astype(np.int64)
    mask = np.ones((1, SEQ), np.int64)
    mask[:, SEQ - 7:] = 0
    ids[:, SEQ - 7:] = 0  # [PAD]
    types = np.zeros((1, SEQ), np.int64)
    types[:, SEQ // 2:] = 1
    path = os.path.join(here, "bert_tok.onnx")
    args = (torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(types))
    names = ["input_ids", "attention_mask", "token_type_ids"]
    dyn = {n: {0: "batch", 1: "seq"} for n in names}
    dyn.update({"last_hidden_state": {0: "batch", 1: "seq"}, "pooler_output": {0: "batch"}})
    torch.onnx.export(m, args, path, input_names=names, output_names=["last_hidden_state", "pooler_output"],
                      dynamic_axes=dyn, opset_version=14, do_constant_folding=True)
    with torch.no_grad():
        outs = m(*args)
    d = os.path.join(here, "bert_tok", "test_data_set_0")
    os.makedirs(d, exist_ok=True)
    for i, (n, a) in enumerate(zip(names, (ids, mask, types))):
        onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(d, "input_%d.pb" % i))
    for i, (n, t) in enumerate(zip(["last_hidden_state", "pooler_output"], outs)):
        onnx.save_tensor(numpy_helper.from_array(t.numpy(), n), os.path.join(d, "output_%d.pb" % i))
    print("wrote %s (%d bytes) and %s" % (path, os.path.getsize(path), d))
    return 0


if __name__ == "__main__":
    sys.exit(main())
