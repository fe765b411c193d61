#!/usr/bin/env python3
"""PyTorch's best configurations on any imrestore model file, side by side with
imrestore's own kernels on the same weights and input, in one run on the GPU
host (issue 16, part 3; model graphs: issue 17).

Each model file (weights/*.h5, or any path: a v1/v2 chain or a format-v3
graph) is read with weights/imrestore_model.py (the format's second
implementation, which refuses what the C++ loader refuses) and run by a small
graph interpreter (ModelNet): each stage a torch module reading its named
inputs, in file order, each tensor dropped after its last reader. Stages:
conv2d (padding modes, stride = kernel, bias, ReLU, a residual input,
add_model_input), conv_transpose2d, residual_block, pixel (un)shuffle, add,
mul, cat, the activations (relu, leaky_relu, gelu in the erf form, silu),
simple gate, layer norm over the channels (ATen's fused layer norm on a
channels-last tensor, NAFNet's formula otherwise), depthwise conv (groups),
local-window channel attention (the clipped box mean by integral images as
NAFNet's TLC, or by separable pooling with --box-mean pool, then a 1x1 conv
and the product). The model input is replicate-padded to the model's size
multiple and the output cropped back, as the tool does.
`--self-test` checks the interpreter on the CPU against numpy's float64
forward pass (tests/CMakeLists.txt runs it as torch_models_selftest).

Configurations timed per model, at 12 MP (4000x3000), batch 1:
  fp32          TF32 off, cudnn.benchmark, eager
  tf32          TF32 on (matmul and cuDNN), cudnn.benchmark, eager
  bf16-cl       bf16 weights and activations, channels-last, cudnn.benchmark, eager
  fp16-cl       the same in fp16
  *-graph       each of the above captured once in a CUDA graph and replayed
  *-compile     torch.compile(mode=--compile-mode, default "max-autotune") in
                --compile-configs (bf16/fp16 channels-last), for
                --compile-models (default: the default model and the model
                with the most FLOPs per pixel; compiling everything would not
                fit one run)
Every configuration's output is compared with fp32's: the largest difference
and the fraction of values more than one 8-bit level apart.

Method (METHOD.md): CUDA events around each call, a 2x-L2 buffer written
before every timed call (cold L2), warm-up calls first, the median of --runs.

imrestore (with --imrestore BIN, an OpenCV-free CUDA build): the same model
on a 12 MP PNG of the same input, `BIN --bench N --device cuda --json`, each
--precision in --precisions; its per-stage medians (CUDA events on its
stream; a graph's rows are named by stage, and a stage the runner fused into
a convolution has none) summed, and per stage its TFLOP/s and fraction of the
tensor-core peak (790 TFLOP/s dense fp16/bf16 measured on the H200 here).

`--ops`: PyTorch on the cases of `bench_gpu --suite graph-ops` (the same
shapes and types, cold L2, median of --runs), for the ops cuDNN lacks.

    python3 bench/torch_models.py --json OUT.json [--models denoise,/tmp/nafnet-large.h5]
        [--imrestore build/imrestore] [--precisions fp32,fp16] [--runs 20]
        [--compile-models all|none|NAMES] [--compile-mode max-autotune] [--configs fp32,fp16-cl]
    python3 bench/torch_models.py --ops --json OUT.json [--ops-compile] [--only f16,window_mean]
    python3 bench/torch_models.py --self-test
"""

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "weights"))
try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    import imrestore_model as im
    from graph_modules import box_sums  # integral-image box sums, as the exported NAFNet computes them
except ImportError as e:  # ctest reports exit code 77 as skipped (--self-test), with this reason
    print(f"skipped: {e} (needs torch, numpy and h5py)")
    sys.exit(77)

PEAK_TC_TFLOPS = 790.0  # dense bf16/fp16 on the H200 here (KINDS.md: 769-798 on random data)
PEAK_FP32_TFLOPS = 60.0  # fp32 FMA on CUDA cores (docs/performance.md)
TORCH_PAD_FN = {"reflect": "reflect", "replicate": "replicate", "zero": "constant"}  # format -> F.pad mode


# ------------------------------------------------------------------ the network

def _param(a, shape=None):
    t = torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
    return nn.Parameter(t.reshape(shape) if shape is not None else t, requires_grad=False)


def _pad_same(x, k, mode):
    """The format's size-keeping padding of a K x K window: (K-1)//2 before, the rest after."""
    before, after = (k - 1) // 2, k - 1 - (k - 1) // 2
    return F.pad(x, (before, after, before, after), mode=TORCH_PAD_FN[mode]) if k > 1 else x


def box_mean_integral(x, window):
    """window_mean: the mean over the window x window box around each pixel, clipped to the image,
    by integral images (NAFNet's TLC does the same), accumulated in fp32 for half inputs."""
    acc = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    s, count_w = box_sums(acc, 3, window)
    s, count_h = box_sums(s, 2, window)
    count = (count_h[:, None] * count_w[None, :]).to(acc.dtype)
    return (s / count).to(x.dtype)


def box_mean_pool(x, window):
    """The same by separable average pooling over the zero-padded tensor (cuDNN/ATen pooling, O(window)
    per element), rescaled from window to the clipped count."""
    a, b = (window - 1) // 2, window // 2
    h, w = x.shape[2], x.shape[3]
    s = F.avg_pool2d(F.pad(x, (a, b, 0, 0)), (1, window), stride=1)
    s = F.avg_pool2d(F.pad(s, (0, 0, a, b)), (window, 1), stride=1)
    idx_h, idx_w = torch.arange(h, device=x.device), torch.arange(w, device=x.device)
    count_h = (idx_h + b + 1).clamp(max=h) - (idx_h - a).clamp(min=0)
    count_w = (idx_w + b + 1).clamp(max=w) - (idx_w - a).clamp(min=0)
    acc = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    scale = (window * window) / (count_h[:, None] * count_w[None, :]).to(acc)
    return (s.to(acc) * scale).to(x.dtype)


BOX_MEAN = {"integral": box_mean_integral, "pool": box_mean_pool}


class Stage(nn.Module):
    """One stage of a model file (any format version), computing what imrestore_model's apply_stage
    (float64) computes, with torch ops: conv2d (padding modes, stride = kernel, a residual input),
    conv_transpose2d, pixel (un)shuffle, add, mul, cat, the activations, simple gate, layer norm over
    the channels, local-window channel attention."""

    def __init__(self, stage, box_mean="integral"):
        super().__init__()
        self.op = stage["op"]
        self.add_input = bool(int(stage.get("add_model_input", 0) or 0))
        op = self.op
        if op in ("conv2d", "conv_transpose2d", "depthwise_conv2d", "layer_norm", "channel_attention"):
            w = stage["weight"]
            self.weight = _param(w, (w.shape[0], w.shape[1], 1, 1) if op == "channel_attention" else None)
            self.bias = _param(stage["bias"]) if stage.get("bias") is not None else None
        if op in ("conv2d", "depthwise_conv2d"):
            self.k = int(stage["weight"].shape[2])
            self.stride = int(stage.get("stride", 1) or 1)
            self.padding = stage.get("padding") or "reflect"
            self.relu = (stage.get("activation") or "none") == "relu"
        elif op == "conv_transpose2d":
            self.stride = int(stage["stride"])
        elif op == "residual_block":
            self.w1, self.b1 = _param(stage["conv_in_weight"]), _param(stage["conv_in_bias"])
            self.w2, self.b2 = _param(stage["conv_out_weight"]), _param(stage["conv_out_bias"])
        elif op in ("space_to_depth", "depth_to_space"):
            self.factor = int(stage["factor"])
        elif op == "activation":
            self.function = stage["function"]
            self.slope = 0.01 if stage.get("slope") is None else float(stage["slope"])
        elif op == "layer_norm":
            self.eps = float(stage.get("eps", 1e-6))
        elif op == "channel_attention":
            self.window = int(stage["window"])
            self.box_mean = BOX_MEAN[box_mean]
        elif op not in ("add", "mul", "concat", "simple_gate"):
            raise ValueError(f"op {op!r} has no torch mapping here")

    def _conv(self, x, groups=1):
        if self.stride > 1:  # kernel = stride, no padding (space_to_depth + 1x1 in imrestore)
            return F.conv2d(x, self.weight, self.bias, stride=self.stride)
        if self.padding == "zero" and self.k % 2:
            return F.conv2d(x, self.weight, self.bias, padding=self.k // 2, groups=groups)
        return F.conv2d(_pad_same(x, self.k, self.padding), self.weight, self.bias, groups=groups)

    def forward(self, xs, model_input):
        x, op = xs[0], self.op
        if op == "conv2d":
            y = self._conv(x)
            if self.relu:
                y = F.relu(y)
        elif op == "conv_transpose2d":
            y = F.conv_transpose2d(x, self.weight, self.bias, stride=self.stride)
        elif op == "depthwise_conv2d":
            y = self._conv(x, groups=x.shape[1])
        elif op == "residual_block":
            y = x + F.conv2d(F.conv2d(x, self.w1, self.b1, padding=1), self.w2, self.b2, padding=1)
        elif op == "space_to_depth":
            y = F.pixel_unshuffle(x, self.factor)
        elif op == "depth_to_space":
            y = F.pixel_shuffle(x, self.factor)
        elif op == "add":
            y = x + xs[1]
        elif op == "mul":
            y = x * xs[1]
        elif op == "concat":
            y = torch.cat(xs, 1)
        elif op == "activation":
            if self.function == "relu":
                y = F.relu(x)
            elif self.function == "leaky_relu":
                y = F.leaky_relu(x, self.slope)
            elif self.function == "gelu":
                y = F.gelu(x)  # the erf form
            else:
                y = F.silu(x)
        elif op == "simple_gate":
            a, b = x.chunk(2, dim=1)
            y = a * b
        elif op == "layer_norm":
            if x.dim() == 4 and x.shape[1] > 1 and x.is_contiguous(memory_format=torch.channels_last):
                # channels last: the channels are the innermost dimension, so ATen's fused
                # layer norm (fp32 statistics for half inputs) runs on a free permutation
                y = F.layer_norm(x.permute(0, 2, 3, 1), (x.shape[1],), self.weight, self.bias,
                                 self.eps).permute(0, 3, 1, 2)
            else:  # NAFNet's LayerNorm2d
                mu = x.mean(1, keepdim=True)
                d = x - mu
                var = (d * d).mean(1, keepdim=True)
                y = d * torch.rsqrt(var + self.eps) * self.weight.view(1, -1, 1, 1) + self.bias.view(1, -1, 1, 1)
        elif op == "channel_attention":
            y = x * F.conv2d(self.box_mean(x, self.window), self.weight, self.bias)
        if len(xs) > 1 and op in ("conv2d", "conv_transpose2d"):
            y = y + xs[1]
        return y + model_input if self.add_input else y


class ModelNet(nn.Module):
    """A model file (a v1/v2 chain or a v3 graph) as a torch network: the stages run in file order,
    each reading its named inputs; a tensor is dropped after its last reader. The input is
    replicate-padded to the model's size multiple and the output cropped back, as the tool does.
    extra_values: {name: value} for the model's extra inputs (each fed as a plane of that value)."""

    def __init__(self, model, box_mean="integral", extra_values=None):
        super().__init__()
        stages = model["stages"]
        graph = im.Graph(stages, model.get("extra_inputs"), model.get("output"))
        self.stages = nn.ModuleList(Stage(s, box_mean) for s in stages)
        self.names, self.inputs, self.output = graph.names, graph.inputs, graph.output
        self.extra = [(e, float((extra_values or {})[e])) for e in graph.extra_inputs]
        self.multiple = im.downscale(stages, graph.extra_inputs, graph.output)
        # per stage: the tensors whose last reader it is (kept: the model input and the output)
        keep = (im.MODEL_INPUT, graph.output)
        self.drop = [[n for n in dict.fromkeys(ins) if graph.last_use[n] == i and n not in keep]
                     for i, ins in enumerate(graph.inputs)]

    def forward(self, x):
        h, w = x.shape[2], x.shape[3]
        ph, pw = -h % self.multiple, -w % self.multiple
        if ph or pw:
            x = F.pad(x, (0, pw, 0, ph), mode="replicate")
        t = {im.MODEL_INPUT: x}
        for name, value in self.extra:
            t[name] = torch.full_like(x[:, :1], value)
        for stage, name, ins, drop in zip(self.stages, self.names, self.inputs, self.drop):
            t[name] = stage([t[n] for n in ins], x)
            for n in drop:
                del t[n]
        return t[self.output][:, :, :h, :w]


MAC_OPS = ("conv2d", "conv_transpose2d", "residual_block", "depthwise_conv2d", "channel_attention")


def stage_flops(model, pixels):
    """FLOPs (2 x multiply-adds) of each stage on an image of `pixels` model pixels: the
    convolutions' (strided, transposed, depthwise, the residual block's two, channel attention's
    1x1), each at the scale it runs at; 0 for data movement and element-wise stages."""
    stages = model["stages"]
    graph = im.Graph(stages, model.get("extra_inputs"), model.get("output"))
    scale = graph.scales(stages)
    out = []
    for s, name, ins in zip(stages, graph.names, graph.inputs):
        f, op = 0.0, s["op"]
        if op in ("conv2d", "depthwise_conv2d", "channel_attention"):  # per output pixel
            f = 2.0 * s["weight"].size * pixels / scale[name] ** 2
        elif op == "conv_transpose2d":  # per input pixel
            f = 2.0 * s["weight"].size * pixels / scale[ins[0]] ** 2
        elif op == "residual_block":
            f = 2.0 * (s["conv_in_weight"].size + s["conv_out_weight"].size) * pixels / scale[name] ** 2
        out.append(f)
    return out


def flops_per_pixel(model):
    """FLOPs per model pixel, over the stages at each stage's scale."""
    return sum(stage_flops(model, 1.0))


# ------------------------------------------------------------------ timing

class ColdL2:
    """Writes a buffer of twice the L2 size, so the timed call starts with nothing of its data in L2."""

    def __init__(self):
        l2 = torch.cuda.get_device_properties(0).L2_cache_size
        self.buf = torch.empty(2 * l2 // 4, dtype=torch.float32, device="cuda")

    def flush(self):
        self.buf.zero_()


def time_call(fn, cold, runs, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        cold.flush()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times), min(times)


def compare(out, ref):
    """Largest |difference| in 8-bit levels of the clamped outputs, and the fraction over one level."""
    a = (out.float().clamp(0, 1) * 255).round()
    b = (ref.float().clamp(0, 1) * 255).round()
    d = (a - b).abs()
    return float(d.max()), float((d > 1).float().mean())


def capture_graph(fn, x):
    """fn(x) captured once as a CUDA graph; returns (graph, static input, static output)."""
    static_x = x.clone()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn(static_x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_out = fn(static_x)
    g.replay()
    return g, static_x, static_out


CONFIGS = ("fp32", "tf32", "bf16-cl", "fp16-cl")


def torch_configs(model, net32, x32, cold, runs, compile_configs, configs=CONFIGS, compile_mode="max-autotune",
                  box_mean="integral"):
    """Times each configuration (eager, then replayed as a CUDA graph; torch.compile for those in
    compile_configs); returns rows {config, ms_median, ms_min, max_levels, frac_over_1} and the fp32
    reference output (computed whether or not fp32 is in configs)."""
    rows = []
    torch.backends.cudnn.benchmark = True
    with torch.no_grad():
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        ref = net32(x32).clone()

        def variants():
            for name in configs:
                if name in ("fp32", "tf32"):
                    yield name, net32, x32, name == "tf32"
                else:
                    dt = torch.bfloat16 if name.startswith("bf16") else torch.float16
                    net = ModelNet(model, box_mean).cuda().to(dt).to(memory_format=torch.channels_last).eval()
                    yield name, net, x32.to(dt).contiguous(memory_format=torch.channels_last), False

        for name, net, x, tf32 in variants():
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32
            out = net(x)
            md, fr = compare(out, ref)
            del out
            med, mn = time_call(lambda: net(x), cold, runs)
            rows.append({"config": name, "ms_median": med, "ms_min": mn, "max_levels": md, "frac_over_1": fr})
            print(f"  {name:<18} {med:9.2f} ms", flush=True)
            # The same, captured once as a CUDA graph and replayed (no launch overhead).
            g, static_x, static_out = capture_graph(net, x)
            md, fr = compare(static_out, ref)
            med, mn = time_call(g.replay, cold, runs)
            rows.append({"config": name + "-graph", "ms_median": med, "ms_min": mn, "max_levels": md,
                         "frac_over_1": fr})
            print(f"  {name + '-graph':<18} {med:9.2f} ms", flush=True)
            del g, static_x, static_out
            torch.cuda.empty_cache()
            if name in compile_configs:
                t0 = time.time()
                try:
                    cnet = torch.compile(net, mode=compile_mode)
                    out = cnet(x)
                    torch.cuda.synchronize()
                    compile_s = time.time() - t0
                    md, fr = compare(out, ref)
                    del out
                    med, mn = time_call(lambda: cnet(x), cold, runs)
                    rows.append({"config": name + "-compile", "ms_median": med, "ms_min": mn, "max_levels": md,
                                 "frac_over_1": fr, "compile_s": compile_s, "compile_mode": compile_mode})
                    print(f"  {name + '-compile':<18} {med:9.2f} ms (compiled in {compile_s:.0f} s)", flush=True)
                except Exception as e:  # noqa: BLE001 -- a failed compile is a result, not the end of the run
                    rows.append({"config": name + "-compile", "error": f"{type(e).__name__}: {str(e)[:400]}",
                                 "compile_s": time.time() - t0})
                    print(f"  {name + '-compile':<18} failed: {rows[-1]['error'][:200]}", flush=True)
                cnet = None
                torch._dynamo.reset()
                torch.cuda.empty_cache()
            net = x = None  # this configuration's copies, freed before the next one
            torch.cuda.empty_cache()
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    return rows, ref


# ------------------------------------------------------------------ imrestore

def write_png(path, x):
    """x [1, 3, H, W] in [0, 1] -> 8-bit RGB PNG (torchvision, present on the GPU host)."""
    import torchvision.io as tio
    u8 = (x[0].clamp(0, 1) * 255).round().to(torch.uint8).cpu()
    tio.write_png(u8, path, compression_level=1)


def imrestore_run(binary, model_path, png, precision, runs):
    """`imrestore --bench` on the PNG; returns {stage_name: median_ms} of the bench rows, or an error."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [binary, png, "-o", os.path.join(tmp, "out.png"), "--force", "-m", model_path, "--device", "cuda",
               "--bench", str(runs), "--json"]
        if precision:
            cmd += ["--precision", precision]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            return {"error": f"exit {p.returncode}: {p.stderr.strip()[-400:]}", "command": " ".join(cmd)}
        report = json.loads(p.stdout)
        bench = report.get("bench_ms", {})
        # rows "stage LABEL OP [n,c,h,w]": LABEL the index in a chain, the stage's name in a graph
        # (the runner's fused graph: a ReLU or add folded into a convolution has no row of its own)
        stages = {k: v["median_ms"] for k, v in bench.items() if k.startswith("stage ")}
        return {"stages": stages, "precision": report.get("precision", precision), "command": " ".join(cmd)}


# ------------------------------------------------------------------ ops (PyTorch beside bench_gpu --suite graph-ops)

# The cases of bench_gpu's suite graph-ops (bench/bench_gpu.cpp, kGraphOpCases: keep the two lists
# equal): (source network, op, channels of the first input, H, W, window, times the network runs it).
GRAPH_OP_CASES = (
    [("drunet-large", "add", c, h, w, 0, 1) for c, h, w in ((64, 3000, 4000), (128, 1500, 2000), (256, 750, 1000),
                                                            (512, 375, 500))]
    + [("nafnet-large", "add", c, h, w, 0, 1) for c, h, w in ((32, 3008, 4000), (64, 1504, 2000), (128, 752, 1000),
                                                              (256, 376, 500))]
    + [("nafnet-large", "mul", c, h, w, 0, n) for c, h, w, n in ((32, 3008, 4000, 4), (64, 1504, 2000, 4),
                                                                 (128, 752, 1000, 6), (256, 376, 500, 10),
                                                                 (512, 188, 250, 12))]
    + [("nafnet-large", "layer_norm", c, h, w, 0, n) for c, h, w, n in ((32, 3008, 4000, 8), (64, 1504, 2000, 8),
                                                                        (128, 752, 1000, 12), (256, 376, 500, 20),
                                                                        (512, 188, 250, 24))]
    + [("nafnet-large", "depthwise3x3", c, h, w, 0, n) for c, h, w, n in ((64, 3008, 4000, 4), (128, 1504, 2000, 4),
                                                                          (256, 752, 1000, 6), (512, 376, 500, 10),
                                                                          (1024, 188, 250, 12))]
    + [("nafnet-large", "simple_gate", c, h, w, 0, n) for c, h, w, n in ((64, 3008, 4000, 8), (128, 1504, 2000, 8),
                                                                         (256, 752, 1000, 12), (512, 376, 500, 20),
                                                                         (1024, 188, 250, 24))]
    + [("nafnet-large", "window_mean", c, h, w, win, n) for c, h, w, win, n in (
        (32, 3008, 4000, 192, 4), (64, 1504, 2000, 96, 4), (128, 752, 1000, 48, 6), (256, 376, 500, 24, 10),
        (512, 188, 250, 12, 12))]
    + [("representative", f, 64, 3000, 4000, 0, 0) for f in ("relu", "leaky_relu", "gelu", "silu")]
    + [("representative", "relu", 512, 375, 500, 0, 0)]
    + [("representative", "concat", c, h, w, 0, 0) for c, h, w in ((64, 3000, 4000), (128, 1500, 2000),
                                                                   (256, 750, 1000), (512, 375, 500))]
)


def op_bytes(op, c, h, w, elem):
    """The bytes an op must move (each input read once, the output written once), as bench_gpu counts them."""
    n = c * h * w * elem
    return {"add": 3 * n, "mul": 3 * n, "simple_gate": 1.5 * n, "concat": 4 * n}.get(op, 2 * n)


def op_functions(op, c, window, dev):
    """[(impl name, fn(x, x2))] for an op: PyTorch's ways to compute it."""
    if op in ("add", "mul", "concat"):
        f = {"add": lambda x, y: x + y, "mul": lambda x, y: x * y, "concat": lambda x, y: torch.cat([x, y], 1)}[op]
        return [("eager", f)]
    if op in ("relu", "leaky_relu", "gelu", "silu"):
        f = {"relu": F.relu, "leaky_relu": lambda x: F.leaky_relu(x, 0.01), "gelu": F.gelu, "silu": F.silu}[op]
        return [("eager", lambda x, y: f(x))]
    if op == "simple_gate":
        def gate(x, y):
            a, b = x.chunk(2, dim=1)
            return a * b
        return [("eager", gate)]
    if op == "layer_norm":
        st = Stage({"op": "layer_norm", "weight": np.ones(c, np.float32), "bias": np.zeros(c, np.float32)}).to(dev)
        return [("eager", lambda x, y: st([x], None))], st
    if op == "depthwise3x3":
        st = Stage({"op": "depthwise_conv2d", "weight": (np.random.default_rng(c).standard_normal((c, 1, 3, 3)) / 3)
                    .astype(np.float32), "bias": np.zeros(c, np.float32), "padding": "zero"}).to(dev)
        return [("eager", lambda x, y: st([x], None))], st
    if op == "window_mean":
        return [("integral", lambda x, y: box_mean_integral(x, window)),
                ("pool", lambda x, y: box_mean_pool(x, window))]
    raise ValueError(op)


def copy_bandwidth(cold):
    """Device-to-device copy of 1 GiB, bytes read + written per second (bench_gpu's floor)."""
    a = torch.zeros(1 << 28, device="cuda")
    b = torch.empty_like(a)
    med, _ = time_call(lambda: b.copy_(a), cold, 10)
    a = b = None
    return 2 * (1 << 30) / (med / 1e3)


def ops_bench(args, cold, result):
    """PyTorch on bench_gpu's graph-ops cases: eager (and torch.compile with --ops-compile for the
    ops that are several kernels in eager), fp32 NCHW and fp16/bf16 channels-last."""
    torch.backends.cudnn.benchmark = True
    copy_bps = copy_bandwidth(cold)
    result["copy_TBps_read_plus_write"] = copy_bps / 1e12
    rows = result.setdefault("ops", [])
    only = [t for t in args.only.split(",") if t]
    types = (("f32 NCHW", torch.float32, torch.contiguous_format), ("f16 NHWC", torch.float16, torch.channels_last),
             ("bf16 NHWC", torch.bfloat16, torch.channels_last))
    gen = torch.Generator(device="cuda").manual_seed(2)
    with torch.no_grad():
        for source, op, c, h, w, window, count in GRAPH_OP_CASES:
            for tname, dt, fmt in types:
                label = f"{op}{' w' + str(window) if window else ''} {c}x{w}x{h} {tname} [{source}]"
                if only and not any(t in label for t in only):
                    continue
                x = torch.randn(1, c, h, w, device="cuda", generator=gen).to(dt).contiguous(memory_format=fmt)
                y = (torch.randn(1, c, h, w, device="cuda", generator=gen).to(dt).contiguous(memory_format=fmt)
                     if op in ("add", "mul", "concat") else None)
                fns = op_functions(op, c, window, "cuda")
                if isinstance(fns, tuple):  # a module holding weights: in the tensors' type and layout
                    fns, st = fns
                    st.to(dt).to(memory_format=fmt)
                impls = list(fns)
                if args.ops_compile and op in ("layer_norm", "simple_gate", "window_mean", "depthwise3x3"):
                    impls.append(("compile", torch.compile(impls[0][1], dynamic=False)))
                nbytes = op_bytes(op, c, h, w, x.element_size())
                for impl, fn in impls:
                    try:
                        fn(x, y)
                        med, mn = time_call(lambda: fn(x, y), cold, args.runs)
                        row = {"source": source, "op": op, "c": c, "h": h, "w": w, "window": window, "count": count,
                               "type": tname, "impl": impl, "ms_median": med, "ms_min": mn, "bytes": nbytes,
                               "GBps": nbytes / (med / 1e3) / 1e9, "frac_floor": nbytes / copy_bps / (med / 1e3),
                               "frac_hbm_4.8TBps": nbytes / 4.8e12 / (med / 1e3)}
                    except Exception as e:  # noqa: BLE001
                        row = {"source": source, "op": op, "c": c, "h": h, "w": w, "type": tname, "impl": impl,
                               "error": f"{type(e).__name__}: {str(e)[:300]}"}
                    rows.append(row)
                    if "error" in row:
                        print(f"{label:<58} {impl:<9} {row['error'][:80]}", flush=True)
                    else:
                        print(f"{label:<58} {impl:<9} {row['ms_median']:8.3f} ms {row['GBps']:7.0f} GB/s "
                              f"{100 * row['frac_floor']:5.1f}% of floor", flush=True)
                x = y = fns = impls = None
                torch.cuda.empty_cache()
                with open(args.json, "w") as f:
                    json.dump(result, f, indent=1)


# ------------------------------------------------------------------ self-test (CPU)

def self_test():
    """The interpreter against imrestore_model's numpy float64 forward pass on the CPU: the exported
    reference architectures at their small presets (perturbed weights, a channel-attention window
    smaller than the image), the python_interop_test graphs (every stage kind, v1/v2 chains and v3
    graphs, an extra input) and the bundled models, on a small random image of odd size (so the
    padding to the size multiple is exercised); torch in float64 (and float32, and the pooling form of
    window_mean) within 1e-4."""
    sys.path.insert(0, os.path.join(HERE, "..", "tests"))
    import architectures
    import export_graph as eg
    import python_interop_test as pit

    tolerance = 1e-4
    failures, cases = [], []
    torch.manual_seed(7)  # the architectures' initial weights
    gen = torch.Generator().manual_seed(7)
    with tempfile.TemporaryDirectory() as tmp:
        for arch, kw in (("drunet-small", {}), ("nafnet-small", {"window": 16})):
            net = architectures.build(arch, **kw)
            with torch.no_grad():
                for prm in net.parameters():  # no identity blocks (NAFNet's zero beta/gamma), nothing saturating
                    spread = float(prm.std()) if prm.numel() > 1 else 0.0
                    prm.add_(torch.randn(prm.shape, generator=gen) * 0.05 * (spread if spread > 0 else 1.0))
            path = os.path.join(tmp, arch + ".h5")
            cases.append((arch, eg.export_model(net, path, arch, "test", "perturbed", "torch_models.py"), None))
        rng = np.random.default_rng(11)
        v1 = pit.random_model(rng)
        models = [("interop-v1", v1, [])] + [(t, st, []) for t, st, _ in pit.random_v2_models(rng)]
        models += [(t, st, e) for t, st, _, e in pit.random_v3_models(rng)]
        for tag, stages, extra in models:
            path = os.path.join(tmp, tag + ".h5")
            im.write_model(path, tag, "test", "random", "torch_models.py", 3, stages, extra_inputs=extra)
            cases.append((tag, im.read_model(path), {"noise_level": 25 / 255} if extra else None))
    for path in sorted(glob.glob(os.path.join(HERE, "..", "weights", "*.h5"))):
        cases.append((os.path.splitext(os.path.basename(path))[0], im.read_model(path), None))
    kinds = set()
    for tag, model, extra in cases:
        kinds |= {s["op"] for s in model["stages"]}
        x = np.random.default_rng(len(tag)).random((3, 37, 45))  # odd sides
        want = im.apply_model(model, x, extra)
        worst = {}
        has = {s["op"] for s in model["stages"]}
        for dtype, box, fmt in ((torch.float64, "integral", torch.contiguous_format),
                                (torch.float64, "pool", torch.contiguous_format),
                                (torch.float64, "integral", torch.channels_last),
                                (torch.float32, "integral", torch.contiguous_format)):
            if box == "pool" and "channel_attention" not in has:
                continue
            if fmt == torch.channels_last and not has & {"layer_norm", "simple_gate", "concat", "depthwise_conv2d"}:
                continue  # channels last changes the code path of these only
            net = ModelNet(model, box, extra).to(dtype).to(memory_format=fmt).eval()
            with torch.no_grad():
                got = net(torch.from_numpy(x)[None].to(dtype).contiguous(memory_format=fmt))[0].double().numpy()
            d = float(np.abs(got - want).max()) if got.shape == want.shape else float("inf")
            key = f"{str(dtype).split('.')[-1]}/{box}" + ("/channels-last" if fmt == torch.channels_last else "")
            worst[key] = d
            if not d <= tolerance:
                failures.append(f"{tag} ({key}): max |torch - numpy float64| {d:.3e} > {tolerance}")
        change = float(np.abs(want - x).mean())
        print(f"{tag}: {len(model['stages'])} stages, size multiple {model['size_multiple']}, mean change "
              f"{change:.3f}; max |torch - numpy|: " + ", ".join(f"{k} {v:.1e}" for k, v in worst.items()))
    missing = set(im.OPS) - kinds
    if missing:
        failures.append(f"no self-test model has a stage of {sorted(missing)}")
    for f in failures:
        print("FAILED:", f)
    print("torch_models self-test:", "FAILED" if failures else f"passed ({len(cases)} models)")
    return 1 if failures else 0


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="where to write the results (required but for --self-test)")
    ap.add_argument("--self-test", action="store_true",
                    help="on the CPU: the torch interpreter against numpy's float64 forward pass; exit 0/1")
    ap.add_argument("--ops", action="store_true", help="time PyTorch on bench_gpu's graph-ops cases instead")
    ap.add_argument("--ops-compile", action="store_true", help="--ops: also torch.compile the multi-kernel ops")
    ap.add_argument("--only", default="", help="--ops: only cases whose label contains one of these (comma list)")
    ap.add_argument("--models", default="",
                    help="comma-separated bundled model names or model file paths (default: every weights/*.h5)")
    ap.add_argument("--imrestore", default="", help="an imrestore binary (CUDA build) to time beside PyTorch")
    ap.add_argument("--precisions", default="fp32", help="imrestore --precision values, comma-separated")
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help="PyTorch configurations timed (default: all four; fp32's output is the reference anyway)")
    ap.add_argument("--compile-models", default="auto",
                    help="models to torch.compile: auto (denoise and the heaviest), all, none, or names")
    ap.add_argument("--compile-configs", default="bf16-cl,fp16-cl")
    ap.add_argument("--compile-mode", default="max-autotune")
    ap.add_argument("--box-mean", default="integral", choices=sorted(BOX_MEAN),
                    help="channel attention's local mean in PyTorch: integral images or separable pooling")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--width", type=int, default=4000)
    ap.add_argument("--height", type=int, default=3000)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--commit", default="")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not args.json:
        ap.error("--json is required")

    cold = ColdL2()
    props = torch.cuda.get_device_properties(0)
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "gpu": props.name, "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
        "cuda": torch.version.cuda, "commit": args.commit, "image": [args.width, args.height],
        "peak_tc_tflops": PEAK_TC_TFLOPS, "method": "CUDA events, 2x-L2 buffer written before each timed call, "
        f"3 warm-up calls, median of {args.runs}", "models": [],
    }
    try:
        result["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                          capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    if args.ops:
        ops_bench(args, cold, result)
        return 0

    models = {os.path.splitext(os.path.basename(p))[0]: p
              for p in sorted(glob.glob(os.path.join(HERE, "..", "weights", "*.h5")))}
    if args.models:
        chosen = {}
        for item in args.models.split(","):
            if item.endswith(".h5") or os.sep in item:
                chosen[os.path.splitext(os.path.basename(item))[0]] = item
            else:
                chosen[item] = models[item]
        models = chosen
    loaded = {k: im.read_model(p) for k, p in models.items()}
    heaviest = max(loaded, key=lambda k: flops_per_pixel(loaded[k]))
    if args.no_compile or args.compile_models == "none":
        compiled = set()
    elif args.compile_models == "auto":
        compiled = {"denoise", heaviest}
    elif args.compile_models == "all":
        compiled = set(loaded)
    else:
        compiled = set(args.compile_models.split(","))
    configs = [c for c in args.configs.split(",") if c]  # fp32's output is the reference, timed or not
    compile_configs = [c for c in args.compile_configs.split(",") if c]

    gen = torch.Generator(device="cuda").manual_seed(1)
    pixels = args.width * args.height
    # A smooth image plus noise, like a noisy photo (values in [0, 1]).
    base = F.interpolate(torch.rand(1, 3, args.height // 64 + 1, args.width // 64 + 1, device="cuda", generator=gen),
                         size=(args.height, args.width), mode="bilinear", align_corners=False)
    x32 = (base + 0.1 * torch.randn(base.shape, device="cuda", generator=gen)).clamp(0, 1)
    del base
    png = None
    if args.imrestore:
        png = os.path.join(tempfile.mkdtemp(), "input.png")
        write_png(png, x32)
        x32 = (x32 * 255).round() / 255  # the network sees what imrestore reads back from the PNG

    for name, model in loaded.items():
        if model.get("extra_inputs"):
            print(f"{name}: skipped (extra inputs {model['extra_inputs']})", flush=True)
            continue
        print(f"{name}: {len(model['stages'])} stages, {flops_per_pixel(model) / 1e3:.0f} kFLOP/pixel", flush=True)
        net32 = ModelNet(model, args.box_mean).cuda().eval()
        rows, ref = torch_configs(model, net32, x32, cold, args.runs,
                                  compile_configs if name in compiled else [], configs, args.compile_mode,
                                  args.box_mean)
        del net32, ref
        torch.cuda.empty_cache()
        gflop = flops_per_pixel(model) * pixels / 1e9
        for r in rows:
            if "ms_median" in r:
                r["tflops"] = gflop / r["ms_median"]
                r["mp_per_s"] = pixels / 1e6 / (r["ms_median"] / 1e3)
        entry = {"model": name, "path": models[name], "stages": len(model["stages"]),
                 "kflop_per_pixel": flops_per_pixel(model) / 1e3, "gflop": gflop, "torch": rows}
        best = min((r for r in rows if "ms_median" in r), key=lambda r: r["ms_median"])
        entry["torch_best"] = {"config": best["config"], "ms_median": best["ms_median"]}
        if args.imrestore:
            entry["imrestore"] = []
            sflops = stage_flops(model, pixels)
            labels = im.Graph(model["stages"], model.get("extra_inputs"), model.get("output")).names
            for prec in args.precisions.split(","):
                r = imrestore_run(args.imrestore, models[name], png, prec, args.runs)
                if "stages" in r:
                    per_stage = []
                    for key, ms in r["stages"].items():
                        label = key.split()[1]
                        i = labels.index(label) if label in labels else -1
                        tf = sflops[i] / 1e12 / (ms / 1e3) if i >= 0 else 0.0
                        per_stage.append({"stage": key, "ms_median": ms, "tflops": tf,
                                          "frac_tc_peak": tf / PEAK_TC_TFLOPS})
                    total = sum(s["ms_median"] for s in per_stage)
                    r = {"precision": prec, "ms_sum_of_stages": total, "mp_per_s": pixels / 1e6 / (total / 1e3),
                         "tflops": gflop / total, "vs_torch_best": best["ms_median"] / total,
                         "reported_precision": r["precision"], "stages": per_stage, "command": r["command"]}
                entry["imrestore"].append(r)
                print(f"  imrestore {prec}: " + (f"{r['ms_sum_of_stages']:.2f} ms" if "stages" in r
                                                 else r["error"][:200]), flush=True)
        result["models"].append(entry)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)

    # The table, last.
    print(f"\n{result['gpu']}, torch {result['torch']}, cuDNN {result['cudnn']}, {args.width}x{args.height}, batch 1")
    print(f"{'model':<14}{'config':<20}{'ms':>9}{'TFLOP/s':>9}{'MP/s':>8}{'max lvl':>9}{'>1 lvl':>9}")
    for e in result["models"]:
        for r in e["torch"]:
            if "error" in r:
                print(f"{e['model']:<14}{'torch ' + r['config']:<20} {r['error'][:60]}")
                continue
            print(f"{e['model']:<14}{'torch ' + r['config']:<20}{r['ms_median']:>9.2f}{r['tflops']:>9.1f}"
                  f"{r['mp_per_s']:>8.0f}{r['max_levels']:>9.0f}{r['frac_over_1']:>9.2e}")
        for r in e.get("imrestore", []):
            if "error" in r:
                print(f"{e['model']:<14}imrestore: {r['error']}")
                continue
            print(f"{e['model']:<14}{'imrestore ' + r['precision']:<20}{r['ms_sum_of_stages']:>9.2f}"
                  f"{r['tflops']:>9.1f}{r['mp_per_s']:>8.0f}   ({r['vs_torch_best']:.2f}x torch best "
                  f"{e['torch_best']['config']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
