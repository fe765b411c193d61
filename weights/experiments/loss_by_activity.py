#!/usr/bin/env python3
"""Where a restoration loses to its input: the 8x8 blocks of the reference
grouped by their activity (the standard deviation of the reference's first
channel in the block, in quantiles), and for each group the mean squared
error of the input and of the output against the reference, and the group's
share of the output's total change in squared error (> 1 where other groups
gain back part of it). For a model that is worse than its input on a photo
(weights/README.md, "Fifteenth session": `deblock` at JPEG quality 95).
INPUT may also be another restoration's output: where one method loses to
another (the sixteenth session: a denoiser against CBM3D).

    python3 weights/experiments/loss_by_activity.py REFERENCE.png INPUT OUTPUT.png [--json OUT.json]
"""

import argparse
import json
import os
import sys

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from cbm3d_baseline import psnr_8bit  # noqa: E402

QUANTILES = (0.0, 0.25, 0.5, 0.75, 0.9, 1.0)


def load(path):
    return np.asarray(Image.open(path).convert("RGB"), dtype=np.float64)


def block_means(x, h8, w8):
    return x[:h8, :w8].reshape(h8 // 8, 8, w8 // 8, 8).mean(axis=(1, 3))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reference")
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--json", default=None, help="also write the table here")
    args = ap.parse_args()
    ref, inp, out = load(args.reference), load(args.input), load(args.output)
    if not (ref.shape == inp.shape == out.shape):
        raise SystemExit(f"sizes differ: {ref.shape}, {inp.shape}, {out.shape}")
    psnr = lambda x: psnr_8bit(ref, x)  # noqa: E731  (the tool's metric; the arrays hold 8-bit values)
    h8, w8 = ref.shape[0] // 8 * 8, ref.shape[1] // 8 * 8
    activity = ref[:h8, :w8, 0].reshape(h8 // 8, 8, w8 // 8, 8).std(axis=(1, 3))
    err_in = block_means(((inp - ref) ** 2).mean(axis=2), h8, w8)
    err_out = block_means(((out - ref) ** 2).mean(axis=2), h8, w8)
    change = (err_out - err_in).sum()
    edges = np.quantile(activity, QUANTILES)
    rows = []
    for k, (lo, hi) in enumerate(zip(edges[:-1], edges[1:])):
        m = (activity >= lo) & ((activity < hi) if k < len(edges) - 2 else (activity <= hi))
        rows.append({"activity": [round(float(lo), 2), round(float(hi), 2)], "blocks": int(m.sum()),
                     "mse_input": float(err_in[m].mean()), "mse_output": float(err_out[m].mean()),
                     "share_of_change": float((err_out - err_in)[m].sum() / change) if change else 0.0})
    report = {"reference": args.reference, "input": args.input, "output": args.output,
              "psnr_input": psnr(inp), "psnr_output": psnr(out), "groups": rows}
    print(f"PSNR input {report['psnr_input']:.3f} dB, output {report['psnr_output']:.3f} dB")
    print("activity (8x8 std)   blocks  MSE input  MSE output  share of the change")
    for r in rows:
        print(f"{r['activity'][0]:7.1f} - {r['activity'][1]:6.1f}  {r['blocks']:7d}  {r['mse_input']:9.3f}  "
              f"{r['mse_output']:10.3f}  {r['share_of_change']:+8.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
