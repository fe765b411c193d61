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

Given the imrestore binary (the first argument, or $IMRESTORE_EXE), also the
C++ tool on the CPU: both reference architectures at their small and large
presets (drunet-large: 32.6 M parameters, nafnet-large: 29.2 M), weights
perturbed and the last convolution scaled so the output differs from the
input by a standard deviation of TARGET_CHANGE over the image (and clips
little), exported, run by `imrestore IN -m MODEL -o OUT --device cpu` on a
99x77 crop of a held-out photo (weights/data/heldout/skimage-chelsea.png, or
$IMRESTORE_HELDOUT/...; git-ignored, so where it is absent, as in CI, a
synthetic image of smooth gradients, edges and texture, and the test says
which): the tool's 8-bit output equals PyTorch's fp32 output clamped and
rounded to 8 bits within one level on every sample (the max difference and
how many samples differ are printed; numpy's float64 too for the small
presets). 99x77 is no multiple of 8 or 16, so the padding to the size
multiple and the crop back run. And `imrestore model` lists each exported
graph as the file holds it: every stage with its name, inputs, scale and
kind, the parameter count and the receptive field imrestore_model computes.

    python3 tests/torch_export_test.py [path/to/imrestore]
(needs torch, numpy and h5py, PIL for the photo; weights/ on PYTHONPATH or
found next to tests/; $TORCH_EXPORT_SEED repeats a run's seed)"""

import os
import re
import subprocess
import sys
import tempfile
import time

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(REPO, "weights"))
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
HALF_MIN_PSNR = 40.0  # tool in fp16/bf16 against torch fp32: a wrong kernel lands far below


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


# ---------------------------------------------------------------------------
# The C++ tool against PyTorch: the reference architectures at both presets.

PHOTO = "skimage-chelsea.png"  # a cat's eye and fur: edges, texture, smooth shading; no clipped samples
CROP = (77, 99)                # H, W: no multiple of 8 (DRUNetLike) or 16 (NAFNetLike)
TARGET_CHANGE = 0.04           # the output's standard deviation from the input (about 10 levels)
MAX_CLIPPED = 0.05             # at most this share of torch's output samples outside [0, 1]
NAFNET_WINDOW = 48             # the attention's window: 48, 24, 12, 6, 3 pixels, under the crop at each level


def write_ppm(path, img):
    with open(path, "wb") as f:
        f.write(b"P6\n%d %d\n255\n" % (img.shape[1], img.shape[0]))
        f.write(np.ascontiguousarray(img, dtype=np.uint8).tobytes())


def read_ppm(path):
    data = open(path, "rb").read()
    fields = data.split(maxsplit=4)  # P6, width, height, 255, then one whitespace byte and the samples
    if fields[0] != b"P6" or fields[3] != b"255":
        raise ValueError(f"{path}: not an 8-bit binary PPM")
    w, h = int(fields[1]), int(fields[2])
    return np.frombuffer(data[len(data) - w * h * 3:], dtype=np.uint8).reshape(h, w, 3)


def synthetic_photo(h, w):
    """Deterministic and natural-looking enough: smooth colour gradients, a
    soft-edged disk, a hard edge, fine oriented texture and a little grain,
    all inside [0.05, 0.95] so nothing clips."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    u, v = x / w, y / h
    rgb = np.stack([0.30 + 0.35 * u + 0.10 * v, 0.25 + 0.20 * v + 0.15 * u * v, 0.55 - 0.25 * u])
    disk = 1.0 / (1.0 + np.exp((np.hypot(x - 0.62 * w, y - 0.45 * h) - 0.22 * h) / 1.5))
    rgb += np.array([0.20, 0.10, -0.15])[:, None, None] * disk
    rgb -= 0.12 * (x > 0.25 * w + 0.3 * y)[None]
    rgb += 0.05 * np.sin(0.9 * x + 0.4 * y + 3.0 * np.sin(0.15 * y))[None] * (0.5 + 0.5 * v)
    rgb += np.random.default_rng(17).normal(0.0, 0.015, rgb.shape)
    return np.rint(np.clip(rgb, 0.05, 0.95) * 255).astype(np.uint8).transpose(1, 2, 0)


def test_photo():
    """(uint8 [H, W, 3], what it is): the crop of the held-out photo, else the synthetic image."""
    h, w = CROP
    folder = os.environ.get("IMRESTORE_HELDOUT") or os.path.join(REPO, "weights", "data", "heldout")
    path = os.path.join(folder, PHOTO)
    why = None
    if not os.path.exists(path):
        why = f"{os.path.normpath(path)} is absent (weights/data/heldout/ is git-ignored)"
    else:
        try:
            from PIL import Image
        except ImportError:
            why = "PIL is not importable"
    if why:
        return synthetic_photo(h, w), f"synthetic {w}x{h} image (gradients, edges, texture), since {why}"
    img = np.asarray(Image.open(path).convert("RGB"))
    y0, x0 = (img.shape[0] - h) // 2, (img.shape[1] - w) // 2
    crop = np.ascontiguousarray(img[y0:y0 + h, x0:x0 + w])
    return crop, f"{w}x{h} crop at ({x0}, {y0}) of held-out photo {PHOTO} ({img.shape[1]}x{img.shape[0]})"


def calibrate(net, last_conv, x):
    """Scales the convolution before the global residual (out = last_conv(y) + x,
    so the change from the input is linear in its weights and bias) so that
    the change has standard deviation TARGET_CHANGE on x."""
    with torch.no_grad():
        change = float((net.forward_any_size(x) - x).std())
        last_conv.weight.mul_(TARGET_CHANGE / change)
        if last_conv.bias is not None:
            last_conv.bias.mul_(TARGET_CHANGE / change)


STAGE_LINE = re.compile(r"^ *(\d+) +(\S+) +<- +(\S+) +1/(\d+) +[0-9.]+ +(\S+)( |$)")


def check_model_listing(exe, tag, path, model, failures):
    """`imrestore model` shows the graph the file holds: one line per stage
    (index, name, inputs, scale, kind, in that order), the parameter count,
    the receptive field that imrestore_model.receptive_field computes."""
    r = subprocess.run([exe, "model", path], capture_output=True, text=True)
    if r.returncode != 0:
        failures.append(f"{tag}: `imrestore model` exit {r.returncode}: {r.stderr.strip()}")
        return
    stages = model["stages"]
    graph = im.Graph(stages, model["extra_inputs"], model["output"])
    scales = graph.scales(stages)
    want = [(str(i), name, ",".join(ins), str(scales[name]), s["op"])
            for i, (s, name, ins) in enumerate(zip(stages, graph.names, graph.inputs))]
    got = [m.groups()[:5] for m in map(STAGE_LINE.match, r.stdout.splitlines()) if m]
    field = im.receptive_field(stages, model["extra_inputs"], model["output"])
    params = sum(a.size for s in stages for a in s.values() if isinstance(a, np.ndarray))
    problems = []
    if got != want:
        wrong = next((f"stage {w[0]}: listed as {g}, the file holds {w}" for g, w in zip(got, want) if g != w),
                     f"{len(got)} stage lines for {len(want)} stages")
        problems.append(wrong)
    if field != model["receptive_field"]:
        problems.append(f"read_model says receptive field {model['receptive_field']}, receptive_field {field}")
    if not re.search(rf"^receptive +{field}x{field} pixels$", r.stdout, re.M):
        problems.append(f"not 'receptive {field}x{field} pixels'")
    if not re.search(rf"^parameters +{params}$", r.stdout, re.M):
        problems.append(f"not 'parameters {params}'")
    if problems:
        failures += [f"{tag}: `imrestore model`: {p}" for p in problems]
        print(r.stdout)
    print(f"{tag}: `imrestore model` lists the {len(got)} stages (names, inputs, scales 1/1..1/{max(scales.values())},"
          f" kinds), {params} parameters, receptive field {field}x{field}"
          + ("" if not problems else ": MISMATCH"))


def tool_runs():
    """(device, precision) pairs the tool runs in: $IMRESTORE_TOOL_DEVICE
    (default cpu) and $IMRESTORE_TOOL_PRECISIONS (comma-separated, default
    fp32; on the GPU host e.g. fp32,fp16,bf16)."""
    device = os.environ.get("IMRESTORE_TOOL_DEVICE") or "cpu"
    precisions = (os.environ.get("IMRESTORE_TOOL_PRECISIONS") or "fp32").split(",")
    return [(device, p) for p in precisions]


def check_tool(exe, tmp, gen, failures):
    """The C++ tool on the photo equals torch's fp32 output rounded to 8 bits
    within one level in fp32 (on any device), for both reference
    architectures at both presets; in a half precision its PSNR against
    torch's output is at least HALF_MIN_PSNR dB (a broken kernel gives
    garbage, far below) and the numbers are printed."""
    photo, what = test_photo()
    print(f"tool vs torch on the {what}")
    src = os.path.join(tmp, "photo.ppm")
    write_ppm(src, photo)
    x = torch.from_numpy(photo.transpose(2, 0, 1).copy())[None].float() / 255  # what the tool feeds the model
    for arch, kw, amount, last in [("drunet-small", {}, 0.05, "tail"),
                                   ("nafnet-small", {"window": NAFNET_WINDOW}, 0.2, "ending"),
                                   ("drunet-large", {}, 0.05, "tail"),
                                   ("nafnet-large", {"window": NAFNET_WINDOW}, 0.2, "ending")]:
        start = time.monotonic()
        net = architectures.build(arch, **kw)
        perturb(net, gen, amount)
        net.eval()
        calibrate(net, getattr(net, last), x)
        count = sum(p.numel() for p in net.parameters())
        path = os.path.join(tmp, arch + ".h5")
        model = eg.export_model(net, path, arch, "test", "perturbed random weights", "tests/torch_export_test.py")
        check_model_listing(exe, arch, path, model, failures)
        with torch.no_grad():
            want = net.forward_any_size(x)[0].double().numpy().transpose(1, 2, 0)
        levels = np.clip(want, 0.0, 1.0) * 255
        clipped = float(((want < 0) | (want > 1)).mean())
        change = want - photo / 255
        print(f"{arch}: {count / 1e6:.1f} M parameters; output - input: std {change.std():.3f}, "
              f"mean {change.mean():+.3f}, {clipped:.1%} clipped ({time.monotonic() - start:.1f} s)")
        for device, precision in tool_runs():
            dst = os.path.join(tmp, f"out-{arch}-{device}-{precision}.ppm")
            tool_start = time.monotonic()
            r = subprocess.run([exe, src, "-m", path, "-o", dst, "--device", device, "--precision", precision, "-q"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                failures.append(f"{arch} {device} {precision}: imrestore exit {r.returncode}: {r.stderr.strip()}")
                continue
            tool_seconds = time.monotonic() - tool_start
            got = read_ppm(dst).astype(np.int64)
            diff = np.abs(got - np.rint(levels).astype(np.int64))  # ties (an fp32 value k + 0.5 levels): none
            mse = float(((got - levels) ** 2).mean())
            psnr = 10 * np.log10(255.0 ** 2 / max(mse, 1e-12))
            line = (f"{arch} {device} {precision}: imrestore vs torch fp32 rounded: max difference {diff.max()} "
                    f"level(s), {int((diff > 0).sum())} of {diff.size} samples differ, PSNR {psnr:.1f} dB")
            numpy_diff = None
            if arch.endswith("small") and precision == "fp32":  # numpy's float64 too (the large ones: ~15 s)
                ref = im.restore_uint8(model, photo).astype(np.int64)
                numpy_diff = int(np.abs(ref - got).max())
                line += (f"; numpy float64 vs imrestore: max {numpy_diff}, vs torch: max "
                         f"{np.abs(ref - np.rint(levels)).max():.0f}")
            print(f"{line} (the tool {tool_seconds:.1f} s)")
            if precision == "fp32" and diff.max() > 1:
                failures.append(f"{arch} {device}: imrestore and torch differ by {diff.max()} levels on the {what}")
            if precision != "fp32" and psnr < HALF_MIN_PSNR:
                failures.append(f"{arch} {device} {precision}: imrestore vs torch PSNR {psnr:.1f} dB < "
                                f"{HALF_MIN_PSNR} dB on the {what}")
            if numpy_diff is not None and numpy_diff > 1:
                failures.append(f"{arch}: imrestore and numpy differ by {numpy_diff} levels on the {what}")
        if not (0.5 * TARGET_CHANGE < change.std() < 2 * TARGET_CHANGE and clipped <= MAX_CLIPPED):
            failures.append(f"{arch}: the output changes by std {change.std():.3f} with {clipped:.1%} clipped: not a "
                            "useful test")


def main():
    exe = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("IMRESTORE_EXE")
    seed = int(os.environ.get("TORCH_EXPORT_SEED") or int.from_bytes(os.urandom(4), "little"))
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

    if exe:
        with tempfile.TemporaryDirectory() as tmp:
            check_tool(exe, tmp, gen, failures)
    else:
        print("SKIPPED: the C++ tool against torch (no imrestore binary: pass it as the first argument or in "
              "$IMRESTORE_EXE)")

    for f in failures:
        print("FAILED:", f)
    print("torch export:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
