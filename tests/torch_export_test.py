#!/usr/bin/env python3
"""PyTorch networks exported with weights/export_graph.py compute, as model
files, what they compute in PyTorch: the reference architectures of
weights/architectures.py at their small size (DRUNetLike, NAFNetLike with a
channel-attention window smaller than the image at every level, so the
clipped local box mean is what runs), with briefly perturbed weights, and a
small network using the remaining supported layers. For each, the numpy
float64 forward pass of the written file (imrestore_model.apply_model, which
pads odd sizes to the size multiple by replicating the last row/column and
crops back) equals PyTorch's fp32 output (forward_any_size: the same padding)
within 1e-4 on a random image of odd size. Also: the fusions happened (no
separate ReLU, no per-channel scale as a stage), and unsupported layers are
refused naming the node.

    python3 tests/torch_export_test.py
(needs torch, numpy and h5py; weights/ on PYTHONPATH or found next to tests/)
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "weights"))
try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    import architectures
    import export_graph as eg
    import imrestore_model as im
    from graph_modules import LayerNorm2d, LocalChannelAttention, SimpleGate
except ImportError as e:  # ctest reports exit code 77 as skipped, with this reason
    print(f"skipped: {e} (needs torch, numpy and h5py)")
    sys.exit(77)

TOLERANCE = 1e-4


def perturb(net, gen, amount=0.05):
    """Adds noise to every parameter (amount x its spread, or amount for the
    constant ones: LayerNorm's ones and zeros, NAFNet's zero beta and gamma),
    so no layer is an identity and nothing saturates."""
    with torch.no_grad():
        for p in net.parameters():
            spread = float(p.std()) if p.numel() > 1 else 0.0
            p.add_(torch.randn(p.shape, generator=gen) * amount * (spread if spread > 0 else 1.0))


class MixedNet(nn.Module):
    """The layers the reference architectures do not use: a noise-level input,
    PixelUnshuffle, LeakyReLU, GELU, SiLU (module and functional), torch.cat,
    the product of two tensors, reflect and replicate padding, a ReLU that
    cannot be fused (its conv's output is read twice), a 5x5 depthwise conv."""

    size_multiple = 2
    image_channels = 3

    def __init__(self):
        super().__init__()
        self.unshuffle = nn.PixelUnshuffle(2)
        self.nl = nn.PixelUnshuffle(2)
        self.c1 = nn.Conv2d(16, 16, 3, padding=1, padding_mode="reflect")
        self.act = nn.LeakyReLU(0.2)
        self.c2 = nn.Conv2d(16, 16, 3, padding="same", padding_mode="replicate")
        self.gelu = nn.GELU()
        self.dw = nn.Conv2d(16, 16, 5, padding=2, groups=16)
        self.ln = LayerNorm2d(16)
        self.gate = SimpleGate()
        self.ca = LocalChannelAttention(8, 3)
        self.c3 = nn.Conv2d(40, 12, 1)
        self.shuffle = nn.PixelShuffle(2)

    def forward(self, x, noise_level):
        y = torch.cat([self.unshuffle(x), self.nl(noise_level)], 1)   # 12 + 4 channels at 1/2
        a = self.act(self.c1(y))
        b = self.c2(a)
        r = F.relu(b)                      # b is read again below: not fused
        g = self.gelu(b) * F.silu(r)       # the product of two tensors
        h = self.gate(self.ln(self.dw(g)))
        h = self.ca(h)
        z = torch.cat([h, a, r], 1)        # 8 + 16 + 16
        return self.shuffle(self.c3(z)) + x


class Attention(nn.Module):
    size_multiple = 1
    image_channels = 3

    def __init__(self):
        super().__init__()
        self.ca = LocalChannelAttention(3, 5)

    def forward(self, x):
        return self.ca(x)

    def forward_any_size(self, x):
        return self(x)


def compare(tag, net, x, extra=None, failures=None):
    """Exports net, runs the file with numpy and net with torch; returns the model read back."""
    net.eval()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, tag + ".h5")
        model = eg.export_model(net, path, tag, "test", "perturbed random weights", "tests/torch_export_test.py")
    h, w = x.shape[-2:]
    m = model["size_multiple"]
    with torch.no_grad():
        if extra is None:
            want = net.forward_any_size(x)[0]
        else:
            pad = (0, -w % m, 0, -h % m)
            args = [F.pad(x, pad, mode="replicate")] + [torch.full_like(x[:, :1], v) for v in extra.values()]
            args[1:] = [F.pad(a, pad, mode="replicate") for a in args[1:]]
            want = net(*args)[0, :, :h, :w]
    got = im.apply_model(model, x[0].double().numpy(), extra)
    diff = float(np.abs(got - want.double().numpy()).max())
    change = float((want - x[0]).abs().mean())
    ops = {}
    for s in model["stages"]:
        ops[s["op"]] = ops.get(s["op"], 0) + 1
    print(f"{tag}: format_version {model['format_version']}, {len(model['stages'])} stages "
          f"({', '.join(f'{k} {v}' for k, v in sorted(ops.items()))}), size multiple {m}, receptive field "
          f"{model['receptive_field']}; image {w}x{h}: max |numpy float64 - torch fp32| {diff:.2e}, mean change "
          f"{change:.3f}")
    if not diff <= TOLERANCE:
        failures.append(f"{tag}: numpy and torch differ by {diff:.3e} > {TOLERANCE}")
    if not 1e-3 < change < 1.0:
        failures.append(f"{tag}: the network changes the image by {change:.3e} on average: not a useful test")
    return model, want


def expect_refusal(tag, net, words, failures):
    try:
        eg.graph_stages(net)
        failures.append(f"{tag}: exported, but it should have been refused")
    except eg.ExportError as e:
        print(f"{tag}: refused: {e}")
        if not all(w in str(e) for w in words):
            failures.append(f"{tag}: the message does not name {words}: {e}")


class Tanh(nn.Module):
    size_multiple = 1

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.act = nn.Tanh()

    def forward(self, x):
        return self.act(self.conv(x))


class Scalar(nn.Module):
    size_multiple = 1

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)

    def forward(self, x):
        return self.conv(x) * 0.5


class EvenPadding(nn.Module):
    size_multiple = 1

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 4, padding=2)

    def forward(self, x):
        return self.conv(x)


def main():
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"seed {seed}; torch {torch.__version__}")
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    failures = []
    x = torch.rand(1, 3, 45, 37, generator=gen)  # odd sides: padded to the size multiple and cropped back

    drunet = architectures.build("drunet-small")
    perturb(drunet, gen)
    model, _ = compare("drunet-small", drunet, x, failures=failures)
    ops = [s["op"] for s in model["stages"]]
    if "activation" in ops or "add" not in ops or "conv_transpose2d" not in ops:
        failures.append(f"drunet-small: expected ReLUs fused, adds and transposed convs, got {ops}")
    if not any(s["op"] == "conv2d" and len(s.get("inputs", "").split(",")) == 2 for s in model["stages"]):
        failures.append("drunet-small: no residual add was fused into a conv2d")

    # The window (in image pixels; each level: window / its downscale) is smaller
    # than the image at every level: 16, 8, 4, 2 and 1 in the middle, so the
    # attention's clipped local box mean differs from the global mean.
    nafnet = architectures.build("nafnet-small", window=16)
    perturb(nafnet, gen, 0.2)
    model, want = compare("nafnet-small", nafnet, x, failures=failures)
    ops = [s["op"] for s in model["stages"]]
    windows = sorted({s["window"] for s in model["stages"] if s["op"] == "channel_attention"})
    if "mul" in ops or windows != [1, 2, 4, 8, 16]:
        failures.append(f"nafnet-small: beta/gamma not folded or windows {windows} (expected [1, 2, 4, 8, 16]): "
                        f"{ops}")
    for mod in nafnet.modules():  # the same network with global pooling must give something else
        if isinstance(mod, LocalChannelAttention):
            mod.window = 1024
    with torch.no_grad():
        global_pool = nafnet.forward_any_size(x)[0]
    local_effect = float((global_pool - want).abs().max())
    print(f"nafnet-small: local window vs global pooling: max difference {local_effect:.3e}")
    if local_effect < 1e-4:
        failures.append("nafnet-small: the local window changes nothing; the test does not exercise it")

    # LocalChannelAttention in training pools globally over patches its window covers.
    lca = LocalChannelAttention(4, 16)
    patch = torch.rand(2, 4, 16, 12, generator=gen)
    lca.train()
    with torch.no_grad():
        trained = lca(patch)
        expected = patch * lca.conv(patch.mean((2, 3), keepdim=True))
    if float((trained - expected).abs().max()) > 1e-6:
        failures.append("LocalChannelAttention: training mode does not pool globally")

    # The attention alone, window 5 on the full image: its local mean is the whole result.
    attention = Attention()
    perturb(attention, gen, 0.5)
    compare("attention", attention, x, failures=failures)

    mixed = MixedNet()
    perturb(mixed, gen, 0.1)
    model, _ = compare("mixed", mixed, x, extra={"noise_level": 25 / 255}, failures=failures)
    ops = {s["op"] for s in model["stages"]}
    needed = {"space_to_depth", "concat", "activation", "mul", "depthwise_conv2d", "layer_norm", "simple_gate",
              "channel_attention", "depth_to_space", "conv2d"}
    if not needed <= ops or model["extra_inputs"] != ["noise_level"]:
        failures.append(f"mixed: expected the kinds {sorted(needed)} and the extra input, got {sorted(ops)}, "
                        f"{model['extra_inputs']}")

    expect_refusal("tanh", Tanh(), ["act", "Tanh"], failures)
    expect_refusal("scalar", Scalar(), ["mul", "0.5"], failures)
    expect_refusal("even padding", EvenPadding(), ["conv", "padding"], failures)

    for f in failures:
        print("FAILED:", f)
    print("torch export:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
