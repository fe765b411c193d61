#!/usr/bin/env python3
"""PyTorch's best configurations on the bundled models, side by side with
imrestore's own kernels on the same weights and input, in one run on the GPU
host (issue 16, part 3).

Each model file (weights/*.h5) is read with weights/imrestore_model.py (the
format's second implementation, which refuses what the C++ loader refuses)
and rebuilt as an equivalent torch.nn network: conv2d with its padding mode,
bias, ReLU and add_model_input; residual_block as its two zero-padded 3x3
convolutions plus the input; space_to_depth / depth_to_space as
PixelUnshuffle / PixelShuffle. The model input is replicate-padded to the
model's size multiple, as the tool does.

Configurations timed per model, at 12 MP (4000x3000), batch 1:
  fp32          TF32 off, cudnn.benchmark, eager
  tf32          TF32 on (matmul and cuDNN), cudnn.benchmark, eager
  bf16-cl       bf16 weights and activations, channels-last, cudnn.benchmark, eager
  fp16-cl       the same in fp16
  *-graph       each of the above captured once in a CUDA graph and replayed
  *-compile     torch.compile(mode="max-autotune") in bf16/fp16 channels-last,
                for the default model and the model with the most FLOPs per
                pixel only (compiling everything would not fit one run)
Every configuration's output is compared with fp32's: the largest difference
and the fraction of values more than one 8-bit level apart.

Method (METHOD.md): CUDA events around each call, a 2x-L2 buffer written
before every timed call (cold L2), warm-up calls first, the median of --runs.

imrestore (with --imrestore BIN, an OpenCV-free CUDA build): the same model
on a 12 MP PNG of the same input, `BIN --bench N --device cuda --json`, each
--precision in --precisions; its per-stage medians (CUDA events on its
stream) summed, and per stage its TFLOP/s and fraction of the tensor-core
peak (790 TFLOP/s dense fp16/bf16 measured on the H200 here).

    python3 bench/torch_models.py --json OUT.json [--models denoise,deblock]
        [--imrestore build/imrestore] [--precisions fp32,auto] [--runs 20]
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

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "weights"))
import imrestore_model as im  # noqa: E402

PEAK_TC_TFLOPS = 790.0  # dense bf16/fp16 on the H200 here (KINDS.md: 769-798 on random data)
PEAK_FP32_TFLOPS = 60.0  # fp32 FMA on CUDA cores (docs/performance.md)
TORCH_PAD = {"reflect": "reflect", "replicate": "replicate", "zero": "zeros"}


# ------------------------------------------------------------------ the network

class Stage(nn.Module):
    """One stage of a model file, computing what apply_stage (float64) computes."""

    def __init__(self, stage):
        super().__init__()
        self.op = stage["op"]
        self.add_input = bool(int(stage.get("add_model_input", 0)))
        if self.op == "conv2d":
            w = torch.from_numpy(stage["weight"])
            k = w.shape[2]
            if k % 2 == 0:
                raise ValueError("even kernel sizes (asymmetric padding) are not mapped to torch here")
            self.conv = nn.Conv2d(w.shape[1], w.shape[0], k, padding=k // 2,
                                  padding_mode=TORCH_PAD[stage.get("padding", "reflect")],
                                  bias=stage.get("bias") is not None)
            self.conv.weight.data.copy_(w)
            if stage.get("bias") is not None:
                self.conv.bias.data.copy_(torch.from_numpy(stage["bias"]))
            self.relu = stage.get("activation", "none") == "relu"
        elif self.op == "residual_block":
            self.conv_in = nn.Conv2d(stage["conv_in_weight"].shape[1], stage["conv_in_weight"].shape[0], 3, padding=1)
            self.conv_out = nn.Conv2d(stage["conv_out_weight"].shape[1], stage["conv_out_weight"].shape[0], 3, padding=1)
            for conv, key in ((self.conv_in, "conv_in"), (self.conv_out, "conv_out")):
                conv.weight.data.copy_(torch.from_numpy(stage[key + "_weight"]))
                conv.bias.data.copy_(torch.from_numpy(stage[key + "_bias"]))
        elif self.op == "space_to_depth":
            self.shuffle = nn.PixelUnshuffle(int(stage["factor"]))
        elif self.op == "depth_to_space":
            self.shuffle = nn.PixelShuffle(int(stage["factor"]))
        else:
            raise ValueError(f"op {self.op!r} has no torch mapping here")

    def forward(self, x, model_input):
        if self.op == "conv2d":
            y = self.conv(x)
            if self.relu:
                y = F.relu(y)
        elif self.op == "residual_block":
            y = x + self.conv_out(self.conv_in(x))
        else:
            y = self.shuffle(x)
        return y + model_input if self.add_input else y


class ModelNet(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.stages = nn.ModuleList(Stage(s) for s in model["stages"])
        self.multiple = im.downscale(model["stages"])

    def forward(self, x):
        h, w = x.shape[2], x.shape[3]
        ph, pw = -h % self.multiple, -w % self.multiple
        if ph or pw:
            x = F.pad(x, (0, pw, 0, ph), mode="replicate")
        model_input = x
        for s in self.stages:
            x = s(x, model_input)
        return x[:, :, :h, :w]


def flops_per_pixel(model):
    """Multiply-adds x 2 per output pixel of the model, over its stages (at each stage's scale)."""
    total, scale = 0.0, 1.0  # scale: pixels of this stage per model pixel
    for s in model["stages"]:
        if s["op"] == "space_to_depth":
            scale /= int(s["factor"]) ** 2
        elif s["op"] == "depth_to_space":
            scale *= int(s["factor"]) ** 2
        elif s["op"] == "conv2d":
            total += 2.0 * s["weight"].size * scale
        elif s["op"] == "residual_block":
            total += 2.0 * (s["conv_in_weight"].size + s["conv_out_weight"].size) * scale
    return total


def stage_flops(model, pixels):
    """FLOPs of each stage on an image of `pixels` model pixels (0 for data movement)."""
    out, scale = [], 1.0
    for s in model["stages"]:
        f = 0.0
        if s["op"] == "space_to_depth":
            scale /= int(s["factor"]) ** 2
        elif s["op"] == "depth_to_space":
            scale *= int(s["factor"]) ** 2
        elif s["op"] == "conv2d":
            f = 2.0 * s["weight"].size * scale * pixels
        elif s["op"] == "residual_block":
            f = 2.0 * (s["conv_in_weight"].size + s["conv_out_weight"].size) * scale * pixels
        out.append(f)
    return out


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


def torch_configs(model, net32, x32, cold, runs, compile_it):
    """Times each configuration; returns rows {config, ms_median, ms_min, max_levels, frac_over_1}."""
    rows = []
    torch.backends.cudnn.benchmark = True
    with torch.no_grad():
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        ref = net32(x32).clone()

        def variants():
            yield "fp32", net32, x32, False
            yield "tf32", net32, x32, True
            for name, dt in (("bf16-cl", torch.bfloat16), ("fp16-cl", torch.float16)):
                net = ModelNet(model).cuda().to(dt).to(memory_format=torch.channels_last).eval()
                yield name, net, x32.to(dt).contiguous(memory_format=torch.channels_last), False

        for name, net, x, tf32 in variants():
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32
            out = net(x)
            md, fr = compare(out, ref)
            med, mn = time_call(lambda: net(x), cold, runs)
            rows.append({"config": name, "ms_median": med, "ms_min": mn, "max_levels": md, "frac_over_1": fr})
            # The same, captured once as a CUDA graph and replayed (no launch overhead).
            static_x = x.clone()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(2):
                    net(static_x)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                static_out = net(static_x)
            g.replay()
            md, fr = compare(static_out, ref)
            med, mn = time_call(g.replay, cold, runs)
            rows.append({"config": name + "-graph", "ms_median": med, "ms_min": mn, "max_levels": md,
                         "frac_over_1": fr})
            if compile_it and name in ("bf16-cl", "fp16-cl"):
                t0 = time.time()
                cnet = torch.compile(net, mode="max-autotune")
                out = cnet(x)
                torch.cuda.synchronize()
                compile_s = time.time() - t0
                md, fr = compare(out, ref)
                med, mn = time_call(lambda: cnet(x), cold, runs)
                rows.append({"config": name + "-compile", "ms_median": med, "ms_min": mn, "max_levels": md,
                             "frac_over_1": fr, "compile_s": compile_s})
            print(f"  {rows[-1]['config']:<18} done", flush=True)
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
        stages = {k: v["median_ms"] for k, v in bench.items() if k.startswith("stage ")}
        return {"stages": stages, "precision": report.get("precision", precision), "command": " ".join(cmd)}


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", required=True, help="where to write the results")
    ap.add_argument("--models", default="", help="comma-separated names (default: every weights/*.h5)")
    ap.add_argument("--imrestore", default="", help="an imrestore binary (CUDA build) to time beside PyTorch")
    ap.add_argument("--precisions", default="fp32", help="imrestore --precision values, comma-separated")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--width", type=int, default=4000)
    ap.add_argument("--height", type=int, default=3000)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--commit", default="")
    args = ap.parse_args()

    paths = sorted(glob.glob(os.path.join(HERE, "..", "weights", "*.h5")))
    models = {os.path.splitext(os.path.basename(p))[0]: p for p in paths}
    if args.models:
        models = {k: models[k] for k in args.models.split(",")}
    loaded = {k: im.read_model(p) for k, p in models.items()}
    loaded = {k: m for k, m in loaded.items() if all(s["op"] in ("conv2d", "residual_block", "space_to_depth",
                                                                   "depth_to_space") for s in m["stages"])}
    heaviest = max(loaded, key=lambda k: flops_per_pixel(loaded[k]))
    compiled = set() if args.no_compile else {"denoise", heaviest}

    cold = ColdL2()
    gen = torch.Generator(device="cuda").manual_seed(1)
    pixels = args.width * args.height
    # A smooth image plus noise, like a noisy photo (values in [0, 1]).
    base = F.interpolate(torch.rand(1, 3, args.height // 64 + 1, args.width // 64 + 1, device="cuda", generator=gen),
                         size=(args.height, args.width), mode="bilinear", align_corners=False)
    x32 = (base + 0.1 * torch.randn(base.shape, device="cuda", generator=gen)).clamp(0, 1)
    png = None
    if args.imrestore:
        png = os.path.join(tempfile.mkdtemp(), "input.png")
        write_png(png, x32)
        x32 = (x32 * 255).round() / 255  # the network sees what imrestore reads back from the PNG

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
    for name, model in loaded.items():
        print(f"{name}: {flops_per_pixel(model) / 1e3:.0f} kFLOP/pixel", flush=True)
        net32 = ModelNet(model).cuda().eval()
        rows, _ = torch_configs(model, net32, x32, cold, args.runs, name in compiled)
        gflop = flops_per_pixel(model) * pixels / 1e9
        for r in rows:
            r["tflops"] = gflop / r["ms_median"]
            r["mp_per_s"] = pixels / 1e6 / (r["ms_median"] / 1e3)
        entry = {"model": name, "kflop_per_pixel": flops_per_pixel(model) / 1e3, "gflop": gflop, "torch": rows}
        best = min(rows, key=lambda r: r["ms_median"])
        entry["torch_best"] = {"config": best["config"], "ms_median": best["ms_median"]}
        if args.imrestore:
            entry["imrestore"] = []
            sflops = stage_flops(model, pixels)
            for prec in args.precisions.split(","):
                r = imrestore_run(args.imrestore, models[name], png, prec, args.runs)
                if "stages" in r:
                    per_stage = []
                    for key, ms in sorted(r["stages"].items(), key=lambda kv: int(kv[0].split()[1])):
                        i = int(key.split()[1])
                        tf = sflops[i] / 1e12 / (ms / 1e3) if i < len(sflops) else 0.0
                        per_stage.append({"stage": key, "ms_median": ms, "tflops": tf,
                                          "frac_tc_peak": tf / PEAK_TC_TFLOPS})
                    total = sum(s["ms_median"] for s in per_stage)
                    r = {"precision": prec, "ms_sum_of_stages": total, "mp_per_s": pixels / 1e6 / (total / 1e3),
                         "tflops": gflop / total, "vs_torch_best": best["ms_median"] / total,
                         "stages": per_stage, "command": r["command"]}
                entry["imrestore"].append(r)
        result["models"].append(entry)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)

    # The table, last.
    print(f"\n{result['gpu']}, torch {result['torch']}, cuDNN {result['cudnn']}, {args.width}x{args.height}, batch 1")
    print(f"{'model':<14}{'config':<20}{'ms':>9}{'TFLOP/s':>9}{'MP/s':>8}{'max lvl':>9}{'>1 lvl':>9}")
    for e in result["models"]:
        for r in e["torch"]:
            print(f"{e['model']:<14}{'torch ' + r['config']:<20}{r['ms_median']:>9.2f}{r['tflops']:>9.1f}"
                  f"{r['mp_per_s']:>8.0f}{r['max_levels']:>9.0f}{r['frac_over_1']:>9.2e}")
        for r in e.get("imrestore", []):
            if "error" in r:
                print(f"{e['model']:<14}imrestore: {r['error']}")
                continue
            print(f"{e['model']:<14}{'imrestore ' + r['precision']:<20}{r['ms_sum_of_stages']:>9.2f}"
                  f"{r['tflops']:>9.1f}{r['mp_per_s']:>8.0f}   ({r['vs_torch_best']:.2f}x torch best "
                  f"{e['torch_best']['config']})")


if __name__ == "__main__":
    main()
