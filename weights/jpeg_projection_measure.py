#!/usr/bin/env python3
"""Measures what projecting a deblocking model's output onto the JPEG's
quantization constraint set gains, on the held-out photos (weights/README.md,
"JPEG consistency"). A measurement to decide on a feature of the tool, not a
part of it.

The set: every image whose DCT coefficients (JPEG's YCbCr, level-shifted,
per 8x8 block of each component, chroma box-averaged 2x2 for 4:2:0 as libjpeg
encodes) quantize to the file's coefficients k, i.e. lie in [(k - 1/2) q,
(k + 1/2) q]. The clean photo lies in it (up to the encoder's rounding), so
projecting onto it (clamping each coefficient to its interval; for
subsampled chroma, the change of each 2x2 average added to its four pixels)
never moves an output farther from the clean photo, in that norm.

For each quality: the clean photos are saved as JPEG (PIL's libjpeg, 4:2:0:
the same files as `imrestore eval --jpeg Q`), the tool restores them with
the model on the CPU, and each output is projected with the file's own
coefficients and tables (weights/jpeg_coefficients.c, built here with gcc and
libjpeg); PSNR over 8-bit RGB against the clean photo.

    python3 weights/jpeg_projection_measure.py --imrestore build/imrestore \\
        [--model deblock] [--qualities 10,40,60,80,90,95] [--json OUT.json]
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

from imrestore_model import psnr  # over 8-bit values, float64

HERE = os.path.dirname(os.path.abspath(__file__))

_n = np.arange(8)
DCT = np.sqrt(2 / 8) * np.cos((2 * _n[None, :] + 1) * _n[:, None] * np.pi / 16)  # orthonormal: JPEG's F(u, v)
DCT[0] = np.sqrt(1 / 8)


def read_coefficients(helper, path, scratch):
    subprocess.run([helper, path, scratch], check=True)
    data, at = open(scratch, "rb").read(), 0

    def take(dtype, count):
        nonlocal at
        a = np.frombuffer(data, dtype, count, at)
        at += a.nbytes
        return a

    components, hmax, vmax, _ = take(np.int32, 4)
    comps = []
    for _ in range(components):
        h, v, wb, hb = take(np.int32, 4)
        q = take(np.int32, 64).reshape(8, 8).astype(np.float64)
        k = take(np.int16, hb * wb * 64).reshape(hb, wb, 8, 8).astype(np.float64)
        comps.append({"full": h == hmax and v == vmax, "q": q, "k": k})
    return comps


def edge_pad(plane, h, w):
    return np.pad(plane, ((0, h - plane.shape[0]), (0, w - plane.shape[1])), mode="edge")


def project_plane(plane, comp):
    """plane (level-shifted) onto the component's cells; the same shape back."""
    hb, wb = comp["k"].shape[:2]
    blocks = edge_pad(plane, hb * 8, wb * 8).reshape(hb, 8, wb, 8).transpose(0, 2, 1, 3)
    f = DCT @ blocks @ DCT.T
    f = np.clip(f, (comp["k"] - 0.5) * comp["q"], (comp["k"] + 0.5) * comp["q"])
    return (DCT.T @ f @ DCT).transpose(0, 2, 1, 3).reshape(hb * 8, wb * 8)[:plane.shape[0], :plane.shape[1]]


def project(rgb, comps):
    x = rgb.astype(np.float64)
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    planes = [0.299 * r + 0.587 * g + 0.114 * b,  # JFIF YCbCr, as libjpeg converts
              -0.168736 * r - 0.331264 * g + 0.5 * b + 128, 0.5 * r - 0.418688 * g - 0.081312 * b + 128]
    if len(comps) != 3:
        raise ValueError(f"{len(comps)} components: only YCbCr JPEGs are measured here")
    h, w = planes[0].shape
    out = []
    for plane, comp in zip(planes, comps):
        if comp["full"]:
            out.append(project_plane(plane - 128, comp) + 128)
            continue
        # As libjpeg pads: the last column repeated out to whole blocks at full
        # resolution, the last row to whole row groups (2 rows), then averaged.
        wb = comp["k"].shape[1]
        even = edge_pad(plane, (h + 1) // 2 * 2, wb * 16)
        down = even.reshape(even.shape[0] // 2, 2, even.shape[1] // 2, 2).mean(axis=(1, 3))
        delta = project_plane(down - 128, comp) + 128 - down
        out.append(plane + np.repeat(np.repeat(delta, 2, 0), 2, 1)[:h, :w])
    y, cb, cr = out
    rgb = np.stack([y + 1.402 * (cr - 128), y - 0.344136 * (cb - 128) - 0.714136 * (cr - 128),
                    y + 1.772 * (cb - 128)], -1)
    return np.clip(np.rint(rgb), 0, 255)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--imrestore", required=True)
    ap.add_argument("--model", default="deblock")
    ap.add_argument("--heldout", default=os.path.join(HERE, "data", "heldout"))
    ap.add_argument("--qualities", default="10,40,60,80,90,95")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    photos = sorted(glob.glob(os.path.join(a.heldout, "*.png")))
    if not photos:
        sys.exit(f"no photos in {a.heldout}")
    result = {"model": a.model, "photos": len(photos), "qualities": {}}
    with tempfile.TemporaryDirectory() as tmp:
        helper = os.path.join(tmp, "jpeg_coefficients")
        subprocess.run(["gcc", "-O2", "-o", helper, os.path.join(HERE, "jpeg_coefficients.c"), "-ljpeg"], check=True)
        for q in (int(s) for s in a.qualities.split(",")):
            folder = os.path.join(tmp, f"q{q}")
            os.makedirs(folder)
            for p in photos:
                Image.open(p).convert("RGB").save(os.path.join(folder, os.path.basename(p)[:-4] + ".jpg"),
                                                  quality=q, subsampling=2)
            subprocess.run([a.imrestore, folder, "-o", folder + "/out", "--format", "png", "-m", a.model,
                            "-d", "cpu", "-q"], check=True)
            rows = {}
            for p in photos:
                name = os.path.basename(p)[:-4]
                clean = np.asarray(Image.open(p).convert("RGB"))
                jpeg = os.path.join(folder, name + ".jpg")
                restored = np.asarray(Image.open(os.path.join(folder, "out", name + ".png")).convert("RGB"))
                comps = read_coefficients(helper, jpeg, os.path.join(tmp, "c.bin"))
                rows[name] = {"input": psnr(np.asarray(Image.open(jpeg).convert("RGB")), clean),
                              "model": psnr(restored, clean), "projected": psnr(project(restored, comps), clean)}
            mean = {k: float(np.mean([r[k] for r in rows.values()])) for k in ("input", "model", "projected")}
            worse = {k: sorted(n for n, r in rows.items() if r[k] < r["input"]) for k in ("model", "projected")}
            result["qualities"][q] = {"mean": mean, "worse_than_input": worse, "photos": rows}
            print(f"q{q}: input {mean['input']:.2f}, {a.model} {mean['model']:.2f}, projected "
                  f"{mean['projected']:.2f} dB; worse than the input: {len(worse['model'])} -> "
                  f"{len(worse['projected'])} photos {worse['projected']}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
