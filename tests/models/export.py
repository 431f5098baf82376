#!/usr/bin/python3
"""Export the model-test models from PyTorch to ONNX, with inputs and PyTorch's outputs.

Run with Debian's /usr/bin/python3 (python3-torch, python3-torchvision, python3-onnx):

    /usr/bin/python3 tests/models/export.py OUT_DIR [--small | --full] [--opset 13 17]
                                            [--models resnet50 bert ...]

Each model is built at a fixed seed with random weights and written as

    OUT_DIR/<model>/model_op<N>.onnx   one file per opset (static shapes)
    OUT_DIR/<model>/inputs/<name>.npy  the inputs fed to PyTorch
    OUT_DIR/<model>/expected/<name>.npy PyTorch's outputs (eval mode, float32)
    OUT_DIR/<model>/meta.json          input/output names, opsets, the configuration

Full size (--full): ResNet-50, MobileNet-V2 (torchvision, 1x3x224x224), Inception-V3
(torchvision, 1x3x299x299, eval, no aux logits), BERT-base (12 layers, hidden 768, 12 heads,
FFN 3072, vocab 30522, seq 128, attention mask) and GPT-2 (12 layers, hidden 768, 12 heads,
vocab 50257, seq 128, causal mask, tanh-GELU), the last two written here as torch modules,
and a recurrent tagger (bidirectional LSTM + GRU, hidden 256, sequence 64).

Small (--small, the default test suite): the same code at reduced size, named <model>-small:
the CNNs at a smaller image with fewer blocks (see SMALL_* below), the transformers with 2
layers and a vocabulary of 1000 (hidden size, heads, FFN and sequence length unchanged).

The output folder must not be inside the source tree's tests/ (the files are large); the
test script exports into the build tree.
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torchvision

SEED = 20240613

# ---------------------------------------------------------------------------------------
# Weight initialization: random but well scaled, so that activations stay in a moderate
# range through deep networks and every parameter (BN statistics included) is non-trivial.


def init_cnn(model):
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            fan_in = m.weight[0].numel()
            nn.init.normal_(m.weight, 0.0, math.sqrt(2.0 / fan_in))
            if m.bias is not None:
                nn.init.uniform_(m.bias, -0.1, 0.1)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.uniform_(m.weight, 0.5, 1.0)
            nn.init.uniform_(m.bias, -0.2, 0.2)
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 2.0)
        elif isinstance(m, nn.Linear):
            bound = 1.0 / math.sqrt(m.in_features)
            nn.init.uniform_(m.weight, -bound, bound)
            nn.init.uniform_(m.bias, -bound, bound)


def init_transformer(model):
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, 0.02)
            if getattr(m, "bias", None) is not None:
                nn.init.uniform_(m.bias, -0.02, 0.02)
        elif isinstance(m, nn.LayerNorm):
            nn.init.uniform_(m.weight, 0.8, 1.2)
            nn.init.uniform_(m.bias, -0.1, 0.1)


# ---------------------------------------------------------------------------------------
# BERT (Devlin et al. 2018), the encoder and pooler, written as plain torch modules.


class BertSelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.output = nn.Linear(hidden, hidden)

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        probs = torch.softmax(scores + mask, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return self.output(ctx.view(x.shape))


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.attention = BertSelfAttention(hidden, heads)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, ffn)
        self.output = nn.Linear(ffn, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x, mask):
        x = self.ln1(x + self.attention(x, mask))
        f = self.output(nn.functional.gelu(self.intermediate(x)))  # erf GELU
        return self.ln2(x + f)


class Bert(nn.Module):
    def __init__(self, layers, hidden, heads, ffn, vocab, seq):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(512, hidden)
        self.token_type = nn.Embedding(2, hidden)
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(hidden, heads, ffn) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)
        # the table's length, sliced to the input's: one export serves any sequence length
        self.register_buffer("position_ids", torch.arange(512).unsqueeze(0))

    def forward(self, input_ids, attention_mask):
        token_types = torch.zeros_like(input_ids)
        pos = self.position_ids[:, :input_ids.shape[1]]
        x = self.word(input_ids) + self.position(pos) + self.token_type(token_types)
        x = self.ln(x)
        mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return x, pooled


# ---------------------------------------------------------------------------------------
# GPT-2 (Radford et al. 2019), the language model with tied embeddings, as torch modules.


def gelu_tanh(x):
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
    return 0.5 * x * (1.0 + torch.tanh(inner))


class Gpt2Attention(nn.Module):
    def __init__(self, hidden, heads, seq, max_pos=1024):
        super().__init__()
        self.heads, self.head_dim, self.hidden = heads, hidden // heads, hidden
        self.c_attn = nn.Linear(hidden, 3 * hidden)
        self.c_proj = nn.Linear(hidden, hidden)
        # as long as the position table (GPT-2's "bias"), sliced to the input's length
        causal = torch.tril(torch.ones(max_pos, max_pos, dtype=torch.bool))
        causal = causal.view(1, 1, max_pos, max_pos)
        self.register_buffer("causal", causal)

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x):
        q, k, v = self.c_attn(x).split(self.hidden, dim=2)
        q, k, v = self.split(q), self.split(k), self.split(v)
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        s = x.shape[1]
        w = torch.where(self.causal[:, :, :s, :s], w, torch.full((), torch.finfo(w.dtype).min))
        ctx = torch.matmul(torch.softmax(w, dim=-1), v).permute(0, 2, 1, 3).contiguous()
        return self.c_proj(ctx.view(x.shape))


class Gpt2Block(nn.Module):
    def __init__(self, hidden, heads, seq, max_pos=1024):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden, eps=1e-5)
        self.attn = Gpt2Attention(hidden, heads, seq, max_pos)
        self.ln_2 = nn.LayerNorm(hidden, eps=1e-5)
        self.c_fc = nn.Linear(hidden, 4 * hidden)
        self.c_proj = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(gelu_tanh(self.c_fc(self.ln_2(x))))


class Gpt2(nn.Module):
    def __init__(self, layers, hidden, heads, vocab, seq, max_pos=1024):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(max_pos, hidden)
        self.blocks = nn.ModuleList(Gpt2Block(hidden, heads, seq, max_pos) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden, eps=1e-5)
        self.register_buffer("position_ids", torch.arange(max_pos).unsqueeze(0))

    def forward(self, input_ids):
        x = self.wte(input_ids) + self.wpe(self.position_ids[:, :input_ids.shape[1]])
        for block in self.blocks:
            x = block(x)
        return torch.matmul(self.ln_f(x), self.wte.weight.t())  # tied LM head


# ---------------------------------------------------------------------------------------
# The five models at both sizes. Each entry builds (model, inputs, input names, output names).

# Small CNNs: torchvision's classes with one or two blocks per stage at a small image.
SMALL_RESNET_BLOCKS = [2, 1, 1, 1]  # the second block of stage 1 has an identity shortcut
SMALL_MOBILENET_SETTING = [  # t, c, n, s: one block per stage, two in the second (residual)
    [1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 1, 2], [6, 64, 1, 2],
    [6, 96, 1, 1], [6, 160, 1, 2], [6, 320, 1, 1],
]
SMALL_INCEPTION_DROPPED = ["Mixed_5d", "Mixed_6c", "Mixed_6d", "Mixed_6e", "Mixed_7c"]
SMALL_CNN_IMAGE = 64
SMALL_INCEPTION_IMAGE = 107  # Inception-V3 needs >= 75; 107 leaves 2x2 at the end
SMALL_TRANSFORMER = dict(layers=2, vocab=1000)


def image(size):
    return [torch.randn(1, 3, size, size)]


def resnet50(small):
    if small:
        m = torchvision.models.resnet.ResNet(torchvision.models.resnet.Bottleneck,
                                             SMALL_RESNET_BLOCKS)
        size, config = SMALL_CNN_IMAGE, {"blocks": SMALL_RESNET_BLOCKS}
    else:
        m, size, config = torchvision.models.resnet50(weights=None), 224, {}
    init_cnn(m)
    config["image"] = size
    return m, image(size), ["input"], ["logits"], config


def mobilenet_v2(small):
    if small:
        m = torchvision.models.MobileNetV2(inverted_residual_setting=SMALL_MOBILENET_SETTING)
        size, config = SMALL_CNN_IMAGE, {"setting": SMALL_MOBILENET_SETTING}
    else:
        m, size, config = torchvision.models.mobilenet_v2(weights=None), 224, {}
    init_cnn(m)
    config["image"] = size
    return m, image(size), ["input"], ["logits"], config


def inception_v3(small):
    m = torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=False)
    size, config = 299, {}
    if small:
        for name in SMALL_INCEPTION_DROPPED:
            setattr(m, name, nn.Identity())
        size, config = SMALL_INCEPTION_IMAGE, {"dropped_blocks": SMALL_INCEPTION_DROPPED}
    init_cnn(m)
    config["image"] = size
    return m, image(size), ["input"], ["logits"], config


def bert(small):
    c = dict(layers=12, hidden=768, heads=12, ffn=3072, vocab=30522, seq=128)
    if small:
        c.update(SMALL_TRANSFORMER)
    m = Bert(**c)
    init_transformer(m)
    ids = torch.randint(0, c["vocab"], (1, c["seq"]), dtype=torch.int64)
    mask = torch.ones(1, c["seq"], dtype=torch.int64)
    mask[:, c["seq"] * 3 // 4:] = 0  # padding at the end, as a tokenizer makes
    return m, [ids, mask], ["input_ids", "attention_mask"], ["last_hidden_state",
                                                               "pooler_output"], c


def gpt2(small):
    c = dict(layers=12, hidden=768, heads=12, vocab=50257, seq=128)
    if small:
        c.update(SMALL_TRANSFORMER)
    m = Gpt2(**c)
    init_transformer(m)
    ids = torch.randint(0, c["vocab"], (1, c["seq"]), dtype=torch.int64)
    return m, [ids], ["input_ids"], ["logits"], c


class Tagger(nn.Module):
    """A recurrent sequence tagger: Linear -> Tanh -> bidirectional LSTM -> GRU -> Linear
    -> log_softmax, batch first; returns the tags and the GRU's last hidden state."""

    def __init__(self, features, embed, hidden, tags):
        super().__init__()
        self.emb = nn.Linear(features, embed)
        self.lstm = nn.LSTM(embed, hidden, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(2 * hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, tags)

    def forward(self, x):
        y, _ = self.lstm(torch.tanh(self.emb(x)))
        y, h = self.gru(y)
        return self.out(y).log_softmax(-1), h


def tagger(small):
    c = dict(features=64, embed=128, hidden=256, tags=32, batch=1, seq=64)
    if small:
        c = dict(features=16, embed=24, hidden=32, tags=9, batch=3, seq=11)
    m = Tagger(c["features"], c["embed"], c["hidden"], c["tags"])
    x = torch.randn(c["batch"], c["seq"], c["features"])
    return m, [x], ["x"], ["tags", "h"], c


MODELS = {"resnet50": resnet50, "mobilenet_v2": mobilenet_v2, "inception_v3": inception_v3,
          "bert": bert, "gpt2": gpt2, "tagger": tagger}


def export_mode(opset):
    """Opset 13 is exported raw: BatchNormalization nodes kept (TrainingMode.PRESERVE on a
    model in eval mode) and no constant folding, so shape subgraphs (Shape, Gather, Concat,
    ...) reach hidetc's own passes. Later opsets are exported the usual way: BN folded into
    the convolutions and constants folded by the exporter."""
    if opset <= 13:
        return dict(training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    return dict(training=torch.onnx.TrainingMode.EVAL, do_constant_folding=True)


# --dynamic: the symbolic axes of each model's inputs and outputs (torch.onnx.export's
# dynamic_axes), so that one file serves every batch size and sequence length.
DYNAMIC_AXES = {
    "resnet50": {"input": {0: "batch"}, "logits": {0: "batch"}},
    "mobilenet_v2": {"input": {0: "batch"}, "logits": {0: "batch"}},
    "inception_v3": {"input": {0: "batch"}, "logits": {0: "batch"}},
    "bert": {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
             "last_hidden_state": {0: "batch", 1: "seq"}, "pooler_output": {0: "batch"}},
    "gpt2": {"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}},
    "tagger": {"x": {0: "batch", 1: "seq"}, "tags": {0: "batch", 1: "seq"}, "h": {1: "batch"}},
}


# --dynamic: PyTorch's outputs at other values of the symbols too, in
# shapes/batchB_seqS/{inputs,expected} (one export serves them all).
DYNAMIC_BINDINGS = [{"batch": 2, "seq": 7}, {"batch": 3, "seq": 17}, {"batch": 1, "seq": 1}]


def export_dynamic_references(name, model, inputs, in_names, out_names, config, folder):
    done = []
    for k, b in enumerate(DYNAMIC_BINDINGS):
        torch.manual_seed(SEED + 1 + k)
        new = []
        for n, t in zip(in_names, inputs):
            shape = list(t.shape)
            for axis, sym in DYNAMIC_AXES[name].get(n, {}).items():
                shape[axis] = b[sym]
            if t.dtype.is_floating_point:
                new.append(torch.randn(*shape, dtype=t.dtype))
            elif n == "attention_mask":  # padding at the end, as a tokenizer makes
                m = torch.ones(*shape, dtype=t.dtype)
                m[..., shape[-1] * 3 // 4 + 1:] = 0
                new.append(m)
            else:
                new.append(torch.randint(0, config.get("vocab", 100), shape, dtype=t.dtype))
        with torch.no_grad():
            outs = model(*new)
        if isinstance(outs, torch.Tensor):
            outs = (outs,)
        sub = "batch%d_seq%d" % (b["batch"], b["seq"])
        for kind, names, ts in (("inputs", in_names, new), ("expected", out_names, outs)):
            os.makedirs(os.path.join(folder, "shapes", sub, kind), exist_ok=True)
            for n, t in zip(names, ts):
                np.save(os.path.join(folder, "shapes", sub, kind, n + ".npy"), t.numpy())
        done.append(sub)
    return done


def export_model(name, build, small, opsets, out_dir, dynamic=False):
    torch.manual_seed(SEED)  # per model: a model does not depend on which others are exported
    model, inputs, in_names, out_names, config = build(small)
    model.eval()
    folder = os.path.join(out_dir, name + ("-small" if small else "") + ("-dyn" if dynamic else ""))
    os.makedirs(os.path.join(folder, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(folder, "expected"), exist_ok=True)
    with torch.no_grad():
        outputs = model(*inputs)
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    for n, t in zip(in_names, inputs):
        np.save(os.path.join(folder, "inputs", n + ".npy"), t.numpy())
    for n, t in zip(out_names, outputs):
        np.save(os.path.join(folder, "expected", n + ".npy"), t.numpy())
    for opset in opsets:
        path = os.path.join(folder, "model_op%d.onnx" % opset)
        with torch.no_grad():
            torch.onnx.export(model, tuple(inputs), path, opset_version=opset,
                              input_names=in_names, output_names=out_names,
                              dynamic_axes=DYNAMIC_AXES[name] if dynamic else None,
                              **export_mode(opset))
        check_onnx(path, opset, in_names, out_names)
    shapes = export_dynamic_references(name, model, inputs, in_names, out_names, config,
                                       folder) if dynamic else []
    meta = {"model": name, "small": small, "seed": SEED, "opsets": opsets,
            "dynamic_axes": DYNAMIC_AXES[name] if dynamic else None, "shapes": shapes,
            "inputs": in_names, "outputs": out_names, "config": config,
            "torch": torch.__version__, "torchvision": torchvision.__version__}
    with open(os.path.join(folder, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return folder


def check_onnx(path, opset, in_names, out_names):
    import onnx
    # the checker loads big models by path (protobuf's 2 GB limit applies to bytes)
    onnx.checker.check_model(path)
    m = onnx.load(path, load_external_data=False)
    got = [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")]
    if got != [opset]:
        raise RuntimeError("%s: opset %s, expected %d" % (path, got, opset))
    if [i.name for i in m.graph.input] != in_names or [o.name for o in m.graph.output] != out_names:
        raise RuntimeError("%s: unexpected input/output names" % path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out_dir")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--small", action="store_true", help="small variants (default)")
    size.add_argument("--full", action="store_true", help="full-size models")
    p.add_argument("--opset", type=int, nargs="+", default=[13, 17])
    p.add_argument("--models", nargs="+", choices=sorted(MODELS), default=list(MODELS))
    p.add_argument("--dynamic", action="store_true",
                   help="symbolic batch (and sequence) axes (folders NAME[-small]-dyn)")
    args = p.parse_args()
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = os.path.abspath(args.out_dir)
    for d in (os.path.join(repo, "src"), os.path.join(repo, "tests")):
        if out == repo or out == d or out.startswith(d + os.sep):
            sys.exit("export.py: write the models outside the sources (got %s)" % out)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    for name in args.models:
        t0 = time.time()
        folder = export_model(name, MODELS[name], not args.full, args.opset, out, args.dynamic)
        print("exported %s (%.1f s)" % (folder, time.time() - t0), flush=True)


if __name__ == "__main__":
    main()
