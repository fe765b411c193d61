#!/usr/bin/env python3
"""Floors and predicted times of a model file on the H200 at 12 MP, per class
of stage, for imrestore in fp16 (f16 NHWC8 activations, tensor-core
convolutions) and for PyTorch fp16 channels-last (cuDNN, each op its own
kernel), written before the GPU session that measures them
(docs/performance.md, "Model graphs: what the next GPU session measures").

    python3 bench/graph_floors.py MODEL.h5 [MODEL.h5 ...] [--width 4000 --height 3000]

Floor of a stage: max(FLOPs / 790 TFLOP/s, bytes it must move / 4.27 TB/s
(the measured device-to-device copy, read + write)), bytes counted in f16
(NHWC8: channels padded to 8; the network's ends read and write f32 NCHW, as
the runner does). The predictions divide each floor by the fraction of it the
kernel class reached in earlier measurements on this GPU (EFF_OURS, EFF_TORCH
below, with where each number comes from); PyTorch also pays a pass per op
that imrestore fuses (a conv's ReLU, residual add and bias; the skip adds).
These are estimates to compare the outcome with, not measurements.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "weights"))
import imrestore_model as im  # noqa: E402

TC_PEAK = 790e12  # dense fp16 on the H200 (docs/performance.md)
COPY_BPS = 4.27e12  # measured device-to-device copy, read + write

# Fraction of the floor each class reaches, imrestore fp16. Sources: docs/performance.md.
EFF_OURS = {
    "conv3x3": 0.40,   # mma.sync kernel: 36-40% of 790 on 64..1024 channels (v5 table), 45% at 48
    "conv3x3 end": 0.45,  # first layer 0.59 ms on a 0.30 floor (51%), last 0.83 on 0.34 (41%)
    "conv1x1": 0.40,   # 1x1 128->128 3 MP: 0.931 ms on a 0.36 ms memory floor (39%)
    "strided conv": 0.45,  # space_to_depth (NHWC8) + 1x1: a shuffle at ~60% and a 1x1 at ~40%
    "transposed conv": 0.45,  # 1x1 + depth_to_space, likewise
    "pixel shuffle": 0.60,
    "elementwise": 0.75,  # add, mul, activation, simple_gate, concat: flat 16-byte passes
    "layer_norm": 0.75,
    "depthwise": 0.70,
    "window_mean": 0.30,  # by design 12 B per element in half (f32 scratch, two passes) on a 4 B floor
}
# PyTorch fp16 channels-last, CUDA graph (cuDNN 9.19 in PyTorch).
EFF_TORCH = {
    "conv3x3": 0.56,   # cuDNN 64 -> 64 12 MP: 1.998 ms (56% of 790); 85-94% at >= 128 channels (below)
    "conv3x3 wide": 0.85,
    "conv3x3 end": 0.40,
    "conv1x1": 0.70,   # cuDNN 1x1 128 -> 128 3 MP: 0.517 ms on a 0.36 ms floor
    "strided conv": 0.50,
    "transposed conv": 0.50,
    "pixel shuffle": 0.50,  # a channels-last permute copy
    "elementwise": 0.80,
    "layer_norm": 0.70,  # ATen's fused layer norm on the channels-last permutation
    "depthwise": 0.50,
    "channel attention": 0.70,  # integral images: ~120 B per element (fp32 cumsums and gathers), see below
}


def stage_costs(model, width, height):
    """[(class, FLOPs, bytes, torch_extra_bytes, torch_class, torch_bytes)] per stage, f16 storage."""
    stages = model["stages"]
    graph = im.check_stages(stages, model["channels"], extra_inputs=model["extra_inputs"], output=model["output"])
    m = model["size_multiple"]
    hp, wp = -(-height // m) * m, -(-width // m) * m
    out = []
    for s, name, ins in zip(stages, graph.names, graph.inputs):
        c_in, sc_in = graph.shapes[ins[0]]
        c_out, sc_out = graph.shapes[name]
        px_in, px_out = hp * wp / sc_in ** 2, hp * wp / sc_out ** 2

        def b(c, px, ends=False):  # bytes of a tensor: f32 NCHW at the ends, else f16 NHWC8
            return px * (4 * c if ends else 2 * (-(-c // 8) * 8))

        op = s["op"]
        first = ins[0] == im.MODEL_INPUT
        last = name == graph.output
        t_in, t_out = b(c_in, px_in, first), b(c_out, px_out, last)
        resid = sum(b(graph.shapes[n][0], px_out, last) for n in ins[1:])
        if int(s.get("add_model_input", 0) or 0):
            resid += b(c_out, px_out, True)
        flops, extra = 0.0, 0.0  # extra: the passes PyTorch adds for what imrestore fuses
        if op == "conv2d":
            k, stride = s["weight"].shape[2], int(s.get("stride", 1) or 1)
            flops = 2.0 * s["weight"].size * px_out
            if s.get("activation") == "relu":
                extra += 2 * t_out
            if resid:
                extra += 3 * t_out
            if s.get("bias") is not None:
                extra += 2 * t_out
            if stride > 1:
                cls, tcls, byts, tbytes = "strided conv", "strided conv", 3 * t_in + t_out, t_in + t_out
            elif k == 1:
                cls = tcls = "conv1x1"
                byts = tbytes = t_in + t_out + resid
            else:
                end = min(c_in, c_out) <= 4
                cls = "conv3x3 end" if end else "conv3x3"
                tcls = "conv3x3 end" if end else ("conv3x3 wide" if min(c_in, c_out) >= 128 else "conv3x3")
                byts = tbytes = t_in + t_out + resid
        elif op == "conv_transpose2d":
            flops = 2.0 * s["weight"].size * px_in
            cls = tcls = "transposed conv"
            byts, tbytes = t_in + 3 * t_out + resid, t_in + t_out
            extra += (3 * t_out if resid else 0) + (2 * t_out if s.get("bias") is not None else 0)
        elif op in ("space_to_depth", "depth_to_space"):
            cls = tcls = "pixel shuffle"
            byts = tbytes = t_in + t_out + resid
            extra += 3 * t_out if resid else 0
        elif op in ("add", "mul"):
            cls, tcls, byts = "elementwise", "elementwise", 3 * t_out
            tbytes = byts
        elif op in ("activation", "simple_gate", "concat"):
            cls = tcls = "elementwise"
            byts = tbytes = sum(b(graph.shapes[n][0], px_out) for n in ins) + t_out
        elif op == "layer_norm":
            cls = tcls = "layer_norm"
            byts = tbytes = 2 * t_out
        elif op == "depthwise_conv2d":
            flops = 2.0 * s["weight"].size * px_out
            cls = tcls = "depthwise"
            byts = tbytes = 2 * t_out
            extra += 2 * t_out if s.get("bias") is not None else 0
        elif op == "channel_attention":
            flops = 2.0 * s["weight"].size * px_out
            # imrestore: window_mean (2x floor), 1x1 conv (in + out), mul (3x): three kernels
            out.append(("window_mean", 0.0, 2 * t_out, 0.0, None, 0.0))
            out.append(("conv1x1", flops, 2 * t_out, 0.0, None, 0.0))
            # PyTorch: integral images in fp32 (to float, two cumsums, four gathers, three
            # subtractions, the count division, back to half), the 1x1 conv with its bias pass, the
            # product: ~60 element-bytes per f16 byte of the tensor
            cls, tcls, byts, tbytes = "elementwise", "channel attention", 3 * t_out, 60 * t_out / 2
            flops = 0.0  # counted with the 1x1 above
        elif op == "residual_block":
            flops = 2.0 * (s["conv_in_weight"].size + s["conv_out_weight"].size) * px_out
            cls = tcls = "conv3x3"
            byts = tbytes = 2 * t_in + 2 * b(s["conv_in_weight"].shape[0], px_out)
        else:
            raise ValueError(op)
        out.append((cls, flops, byts, extra, tcls, tbytes))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--width", type=int, default=4000)
    ap.add_argument("--height", type=int, default=3000)
    args = ap.parse_args()
    for path in args.models:
        model = im.read_model(path)
        rows = stage_costs(model, args.width, args.height)
        classes = {}
        torch_ms = 0.0
        for cls, flops, byts, extra, tcls, tbytes in rows:
            floor = max(flops / TC_PEAK, byts / COPY_BPS) * 1e3
            e = classes.setdefault(cls, [0, 0.0, 0.0, 0.0, 0.0])
            e[0] += 1
            e[1] += flops
            e[2] += floor
            e[3] += floor / EFF_OURS[cls]
            if tcls is not None:
                tfloor = max(flops / TC_PEAK, tbytes / COPY_BPS) * 1e3
                t = tfloor / EFF_TORCH[tcls] + extra / COPY_BPS * 1e3 / EFF_TORCH["elementwise"]
                e[4] += t
                torch_ms += t
        print(f"{os.path.basename(path)}: {len(model['stages'])} stages at {args.width}x{args.height} "
              f"(padded to a multiple of {model['size_multiple']}), f16")
        print(f"  {'class (ours)':<16}{'kernels':>8}{'TFLOP':>8}{'floor ms':>10}{'ours ms':>10}{'torch ms':>10}"
              "   (torch: the same stages as PyTorch runs them)")
        tot = [0, 0.0, 0.0, 0.0, 0.0]
        for cls, e in sorted(classes.items(), key=lambda kv: -kv[1][3]):
            print(f"  {cls:<16}{e[0]:>8}{e[1] / 1e12:>8.2f}{e[2]:>10.2f}{e[3]:>10.2f}{e[4]:>10.2f}")
            tot = [a + b for a, b in zip(tot, e)]
        print(f"  {'total':<16}{tot[0]:>8}{tot[1] / 1e12:>8.2f}{tot[2]:>10.2f}{tot[3]:>10.2f}{torch_ms:>10.2f}"
              f"   ours/torch {tot[3] / torch_ms:.2f} (the goal: <= 0.67)")


if __name__ == "__main__":
    main()
