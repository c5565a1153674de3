#!/usr/bin/env python3
"""Print the shipped pipeline files (configs/pipelines/*.yml) from the published architectures.

The layer lists below follow torchvision's model definitions (resnet.py, mobilenetv3.py,
efficientnet.py, vision_transformer.py), the RepLKNet paper's reference code (RepLKNet-31B:
channels 128/256/512/1024, blocks 2/2/18/2, kernels 31/29/27/13, inference form with the small
5x5 branch re-parameterised into the large kernel) and the OPT-66B config (hidden 9216, 72 heads,
FFN 36864, 64 layers). Eval-mode eager PyTorch runs each BatchNorm, activation and residual add as
its own kernel, so they are phases too. Consecutive identical blocks are one phase with a repeat.
Batch ('batch'), and for OPT tensor parallelism ('tp'), sequence ('seq') and context ('ctx'), are
parameters: the YAML holds expressions of them.

usage: python3 scripts/gen_pipelines.py OUTDIR      (writes OUTDIR/<name>.yml)
       python3 scripts/gen_pipelines.py --check     (runs torchvision, when installed, and
                                                      compares its conv shapes with ours)
"""
import os
import sys


def make_divisible(v, d=8):
    n = max(d, int(v + d / 2) // d * d)
    if n < 0.9 * v:
        n += d
    return n


class Net:
    def __init__(self, h=224, w=224, c=3):
        self.h, self.w, self.c = h, w, c
        self.phases = []

    def add(self, **ph):
        self.phases.append(ph)

    def conv(self, name, cout, k, s=1, p=None, groups=1, dil=1):
        if p is None:
            p = (k - 1) // 2 * dil
        self.add(name=name, type="conv", C=self.c, H=self.h, W=self.w, M=cout, R=k, S=k,
                 stride=s, pad=p, dilation=dil, groups=groups)
        self.h = (self.h + 2 * p - dil * (k - 1) - 1) // s + 1
        self.w = (self.w + 2 * p - dil * (k - 1) - 1) // s + 1
        self.c = cout

    def bn(self, name):
        self.add(name=name, type="norm", op="batch", C=self.c, H=self.h, W=self.w)

    def act(self, name, op, c=None, h=None, w=None):
        self.add(name=name, type="act", op=op, C=c or self.c, H=h or self.h, W=w or self.w)

    def pool(self, name, op, k, s, p=0):
        self.add(name=name, type="pool", op=op, C=self.c, H=self.h, W=self.w, R=k, S=k,
                 stride=s, pad=p)
        self.h = (self.h + 2 * p - k) // s + 1
        self.w = (self.w + 2 * p - k) // s + 1

    def gap(self, name):
        self.pool(name, "avg", self.h, 1) if self.h == self.w else None

    def fc(self, name, cin, cout, rows="batch"):
        self.add(name=name, type="matmul", M=cout, K=cin, N=rows)


def merge(phases):
    """Consecutive runs of identical blocks -> one block with repeat (block = phases whose names
    share the prefix up to the last '.')."""
    def key(p):
        return tuple((k, v) for k, v in sorted(p.items()) if k not in ("name", "repeat"))

    def block_of(p):
        return p["name"].rsplit(".", 1)[0] if "." in p["name"] else p["name"]

    blocks = []
    for p in phases:
        b = block_of(p)
        if blocks and blocks[-1][0] == b:
            blocks[-1][1].append(p)
        else:
            blocks.append([b, [p]])
    out = []
    i = 0
    while i < len(blocks):
        j = i + 1
        while j < len(blocks) and [key(p) for p in blocks[j][1]] == [key(p) for p in blocks[i][1]]:
            j += 1
        n = j - i
        for p in blocks[i][1]:
            q = dict(p)
            if n > 1:
                last = blocks[j - 1][0].rsplit(".", 1)[-1]
                q["name"] = blocks[i][0] + "-" + last + "." + p["name"].rsplit(".", 1)[1]
                q["repeat"] = n * p.get("repeat", 1)
            out.append(q)
        i = j
    return out


def resnet(bottleneck, layers):
    n = Net()
    n.conv("conv1", 64, 7, 2, 3)
    n.bn("bn1")
    n.act("relu", "relu")
    n.pool("maxpool", "max", 3, 2, 1)
    inpl = 64
    for li, (w, blocks) in enumerate(zip((64, 128, 256, 512), layers)):
        for b in range(blocks):
            s = 2 if (li > 0 and b == 0) else 1
            pre = "layer%d.%d" % (li + 1, b)
            h, wd, cin = n.h, n.w, n.c
            out = w * 4 if bottleneck else w
            if bottleneck:
                n.conv(pre + ".conv1", w, 1)
                n.bn(pre + ".bn1")
                n.act(pre + ".relu1", "relu")
                n.conv(pre + ".conv2", w, 3, s)
                n.bn(pre + ".bn2")
                n.act(pre + ".relu2", "relu")
                n.conv(pre + ".conv3", out, 1)
                n.bn(pre + ".bn3")
            else:
                n.conv(pre + ".conv1", w, 3, s)
                n.bn(pre + ".bn1")
                n.act(pre + ".relu1", "relu")
                n.conv(pre + ".conv2", w, 3)
                n.bn(pre + ".bn2")
            if s != 1 or cin != out:
                oh, ow, oc = n.h, n.w, n.c
                n.h, n.w, n.c = h, wd, cin
                n.conv(pre + ".downsample.0", out, 1, s, 0)
                n.bn(pre + ".downsample.1")
                n.h, n.w, n.c = oh, ow, oc
            n.act(pre + ".add", "add")
            n.act(pre + ".relu", "relu")
            inpl = out
    n.pool("avgpool", "avg", n.h, 1)
    n.fc("fc", inpl, 1000)
    return n.phases


def mobilenet_v3_small():
    cfg = [(16, 3, 16, 16, True, "RE", 2), (16, 3, 72, 24, False, "RE", 2),
           (24, 3, 88, 24, False, "RE", 1), (24, 5, 96, 40, True, "HS", 2),
           (40, 5, 240, 40, True, "HS", 1), (40, 5, 240, 40, True, "HS", 1),
           (40, 5, 120, 48, True, "HS", 1), (48, 5, 144, 48, True, "HS", 1),
           (48, 5, 288, 96, True, "HS", 2), (96, 5, 576, 96, True, "HS", 1),
           (96, 5, 576, 96, True, "HS", 1)]
    n = Net()
    n.conv("features.0.conv", 16, 3, 2)
    n.bn("features.0.bn")
    n.act("features.0.hardswish", "hardswish")
    for i, (cin, k, exp, cout, se, a, s) in enumerate(cfg):
        pre = "features.%d" % (i + 1)
        op = "relu" if a == "RE" else "hardswish"
        if exp != cin:
            n.conv(pre + ".expand", exp, 1)
            n.bn(pre + ".expand_bn")
            n.act(pre + ".expand_act", op)
        n.conv(pre + ".dw", exp, k, s, groups=exp)
        n.bn(pre + ".dw_bn")
        n.act(pre + ".dw_act", op)
        if se:
            sq = make_divisible(exp // 4, 8)
            h, w = n.h, n.w
            n.pool(pre + ".se.avgpool", "avg", h, 1)
            n.conv(pre + ".se.fc1", sq, 1)
            n.act(pre + ".se.relu", "relu")
            n.conv(pre + ".se.fc2", exp, 1)
            n.act(pre + ".se.hardsigmoid", "hardsigmoid")
            n.h, n.w = h, w
            n.act(pre + ".se.scale", "mul")
        n.conv(pre + ".project", cout, 1)
        n.bn(pre + ".project_bn")
        if s == 1 and cin == cout:
            n.act(pre + ".add", "add")
    n.conv("features.12.conv", 576, 1)
    n.bn("features.12.bn")
    n.act("features.12.hardswish", "hardswish")
    n.pool("avgpool", "avg", n.h, 1)
    n.fc("classifier.0", 576, 1024)
    n.act("classifier.1", "hardswish", c=1024, h=1, w=1)
    n.fc("classifier.3", 1024, 1000)
    return n.phases


def efficientnet_b0():
    cfg = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
           (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1)]
    n = Net()
    n.conv("features.0.conv", 32, 3, 2)
    n.bn("features.0.bn")
    n.act("features.0.silu", "silu")
    for si, (e, k, s, cin, cout, layers) in enumerate(cfg):
        for li in range(layers):
            pre = "features.%d.%d" % (si + 1, li)
            bin_ = cin if li == 0 else cout
            st = s if li == 0 else 1
            exp = bin_ * e
            if exp != bin_:
                n.conv(pre + ".expand", exp, 1)
                n.bn(pre + ".expand_bn")
                n.act(pre + ".expand_silu", "silu")
            n.conv(pre + ".dw", exp, k, st, groups=exp)
            n.bn(pre + ".dw_bn")
            n.act(pre + ".dw_silu", "silu")
            sq = max(1, bin_ // 4)
            h, w = n.h, n.w
            n.pool(pre + ".se.avgpool", "avg", h, 1)
            n.conv(pre + ".se.fc1", sq, 1)
            n.act(pre + ".se.silu", "silu")
            n.conv(pre + ".se.fc2", exp, 1)
            n.act(pre + ".se.sigmoid", "sigmoid")
            n.h, n.w = h, w
            n.act(pre + ".se.scale", "mul")
            n.conv(pre + ".project", cout, 1)
            n.bn(pre + ".project_bn")
            if st == 1 and bin_ == cout:
                n.act(pre + ".add", "add")
    n.conv("features.8.conv", 1280, 1)
    n.bn("features.8.bn")
    n.act("features.8.silu", "silu")
    n.pool("avgpool", "avg", n.h, 1)
    n.fc("classifier.1", 1280, 1000)
    return n.phases


def replknet31b():
    chans, layers, kernels = (128, 256, 512, 1024), (2, 2, 18, 2), (31, 29, 27, 13)
    n = Net()
    n.conv("stem.0", 128, 3, 2)
    n.bn("stem.0.bn")
    n.act("stem.0.relu", "relu")
    n.conv("stem.1", 128, 3, 1, groups=128)
    n.bn("stem.1.bn")
    n.act("stem.1.relu", "relu")
    n.conv("stem.2", 128, 1)
    n.bn("stem.2.bn")
    n.act("stem.2.relu", "relu")
    n.conv("stem.3", 128, 3, 2, groups=128)
    n.bn("stem.3.bn")
    n.act("stem.3.relu", "relu")
    for si, (c, L, k) in enumerate(zip(chans, layers, kernels)):
        if si > 0:
            pre = "transitions.%d" % (si - 1)
            n.conv(pre + ".pw", c, 1)
            n.bn(pre + ".pw_bn")
            n.act(pre + ".pw_relu", "relu")
            n.conv(pre + ".dw", c, 3, 2, groups=c)
            n.bn(pre + ".dw_bn")
            n.act(pre + ".dw_relu", "relu")
        for b in range(L):
            pre = "stages.%d.%d" % (si, b)
            n.bn(pre + ".lk.prelkb_bn")
            n.conv(pre + ".lk.pw1", c, 1)
            n.bn(pre + ".lk.pw1_bn")
            n.act(pre + ".lk.pw1_relu", "relu")
            n.conv(pre + ".lk.large_kernel", c, k, 1, groups=c)
            n.act(pre + ".lk.lk_relu", "relu")
            n.conv(pre + ".lk.pw2", c, 1)
            n.bn(pre + ".lk.pw2_bn")
            n.act(pre + ".lk.add", "add")
            n.bn(pre + ".ffn.preffn_bn")
            n.conv(pre + ".ffn.pw1", 4 * c, 1)
            n.bn(pre + ".ffn.pw1_bn")
            n.act(pre + ".ffn.gelu", "gelu")
            n.conv(pre + ".ffn.pw2", c, 1)
            n.bn(pre + ".ffn.pw2_bn")
            n.act(pre + ".ffn.add", "add")
    n.bn("norm")
    n.pool("avgpool", "avg", n.h, 1)
    n.fc("head", 1024, 1000)
    return n.phases


def vit_b16():
    n = Net()
    n.conv("conv_proj", 768, 16, 16, 0)
    t = "197*batch"
    ph = n.phases
    ph.append(dict(name="encoder.pos_add", type="act", op="add", N=t, C=768))
    for i in range(12):
        pre = "encoder.layers.%d" % i
        ph.append(dict(name=pre + ".ln_1", type="norm", op="layer", N=t, C=768))
        ph.append(dict(name=pre + ".attn.in_proj", type="matmul", M=2304, K=768, N=t))
        ph.append(dict(name=pre + ".attn.sdpa", type="attention", heads=12, seq=197, head_dim=64))
        ph.append(dict(name=pre + ".attn.out_proj", type="matmul", M=768, K=768, N=t))
        ph.append(dict(name=pre + ".add1", type="act", op="add", N=t, C=768))
        ph.append(dict(name=pre + ".ln_2", type="norm", op="layer", N=t, C=768))
        ph.append(dict(name=pre + ".mlp.fc1", type="matmul", M=3072, K=768, N=t))
        ph.append(dict(name=pre + ".mlp.gelu", type="act", op="gelu", N=t, C=3072))
        ph.append(dict(name=pre + ".mlp.fc2", type="matmul", M=768, K=3072, N=t))
        ph.append(dict(name=pre + ".add2", type="act", op="add", N=t, C=768))
    ph.append(dict(name="encoder.ln", type="norm", op="layer", N=t, C=768))
    ph.append(dict(name="heads.head", type="matmul", M=1000, K=768, N="batch"))
    return ph


def opt66b(decode):
    t = "batch" if decode else "batch*seq"
    ph = [
        dict(name="self_attn_layer_norm", type="norm", op="layer", N=t, C=9216),
        dict(name="self_attn.qkv_proj", type="matmul", M="3*9216/tp", K=9216, N=t),
        dict(name="self_attn.sdpa", type="attention", heads="72/tp", head_dim=128,
             seq_q=1 if decode else "seq", seq_kv="ctx" if decode else "seq",
             causal=0 if decode else 1),
        dict(name="self_attn.out_proj", type="matmul", M=9216, K="9216/tp", N=t),
        dict(name="residual_add1", type="act", op="add", N=t, C=9216),
        dict(name="final_layer_norm", type="norm", op="layer", N=t, C=9216),
        dict(name="fc1", type="matmul", M="36864/tp", K=9216, N=t),
        dict(name="relu", type="act", op="relu", N=t, C="36864/tp"),
        dict(name="fc2", type="matmul", M=9216, K="36864/tp", N=t),
        dict(name="residual_add2", type="act", op="add", N=t, C=9216),
    ]
    for p in ph:
        p["repeat"] = "layers"
    return ph


PIPELINES = [
    ("resnet18", "ResNet-18 (torchvision), 224x224", lambda: resnet(False, (2, 2, 2, 2)), {}),
    ("resnet50", "ResNet-50 (torchvision v1.5), 224x224", lambda: resnet(True, (3, 4, 6, 3)), {}),
    ("mobilenet_v3_small", "MobileNetV3-Small (torchvision), 224x224", mobilenet_v3_small, {}),
    ("efficientnet_b0", "EfficientNet-B0 (torchvision), 224x224", efficientnet_b0, {}),
    ("replknet31b", "RepLKNet-31B (inference form), 224x224", replknet31b, {}),
    ("vit_b_16", "ViT-B/16 (torchvision), 224x224, 197 tokens", vit_b16, {}),
    ("opt66b_prefill", "OPT-66B decoder layer, prefill of seq tokens, tensor-parallel degree tp "
     "(all-reduces not included), repeat = layers", lambda: opt66b(False),
     {"tp": 8, "seq": 2048, "layers": 1}),
    ("opt66b_decode", "OPT-66B decoder layer, one token per sequence against ctx cached keys, "
     "tensor-parallel degree tp (all-reduces not included), repeat = layers", lambda: opt66b(True),
     {"tp": 8, "ctx": 2048, "layers": 1}),
]


def yaml_value(v):
    return str(v)


def emit(name, desc, phases, params):
    lines = ["# generated by scripts/gen_pipelines.py: edit that script, not this file",
             "pipelines:", "  - name: %s" % name, "    description: \"%s\"" % desc,
             "    precision: fp16",
             "    params: {%s}" % ", ".join(["batch: 1"] + ["%s: %s" % kv for kv in params.items()]),
             "    phases:"]
    order = ["name", "type", "op", "N", "C", "H", "W", "M", "K", "R", "S", "stride", "pad",
             "dilation", "groups", "heads", "seq", "seq_q", "seq_kv", "head_dim", "causal", "repeat"]
    for p in phases:
        p = dict(p)
        if p.get("dilation") == 1:
            del p["dilation"]
        if p.get("groups") == 1:
            del p["groups"]
        if p.get("type") in ("norm", "act") and p.get("H") == 1 and p.get("W") == 1:
            del p["H"], p["W"]
        items = ["%s: %s" % (k, yaml_value(p[k])) for k in order if k in p]
        lines.append("      - {%s}" % ", ".join(items))
    return "\n".join(lines) + "\n"


def check():
    import torch
    import torchvision
    m = {"resnet18": torchvision.models.resnet18, "resnet50": torchvision.models.resnet50,
         "mobilenet_v3_small": torchvision.models.mobilenet_v3_small,
         "efficientnet_b0": torchvision.models.efficientnet_b0}
    bad = 0
    for name, ctor in m.items():
        net = ctor(weights=None).eval()
        seen = []
        hooks = [mod.register_forward_hook(
            lambda mod, i, o: seen.append((mod.in_channels, mod.out_channels, mod.kernel_size[0],
                                           mod.stride[0], mod.groups, i[0].shape[2])))
                 for mod in net.modules() if isinstance(mod, torch.nn.Conv2d)]
        with torch.no_grad():
            net(torch.randn(1, 3, 224, 224))
        for h in hooks:
            h.remove()
        fns = {n: fn for n, _, fn, _ in PIPELINES}
        ours = [(p["C"], p["M"], p["R"], p["stride"], p.get("groups", 1), p["H"])
                for p in fns[name]() if p["type"] == "conv"]
        ok = sorted(ours) == sorted(seen)
        bad += not ok
        print("%-20s torchvision convs %3d, ours %3d: %s" % (name, len(seen), len(ours),
                                                             "same" if ok else "DIFFER"))
        if not ok:
            print("  only torchvision:", sorted(set(seen) - set(ours))[:8])
            print("  only ours:", sorted(set(ours) - set(seen))[:8])
    return bad


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--check":
        sys.exit(1 if check() else 0)
    out = sys.argv[1] if len(sys.argv) > 1 else "configs/pipelines"
    os.makedirs(out, exist_ok=True)
    for name, desc, fn, params in PIPELINES:
        ph = merge(fn())
        with open(os.path.join(out, name + ".yml"), "w") as f:
            f.write(emit(name, desc, ph, params))
        print("%s: %d phases" % (name, len(ph)))
