#!/usr/bin/env python3
"""Train one imrestore model (the "unshuffle CNN" of weights/README.md) for one
task, and write it as an imrestore model file (format v2).

    python3 weights/train.py --task denoise --channels 64 --depth 14 --minutes 9 \\
        --out OUT_DIR [--name denoise] [--resume OUT_DIR/denoise.ckpt] [--seed 1] \\
        [--shard weights/data/shards/train-KK.tar --heldout-shard weights/data/shards/heldout.tar]

The photos come from weights/data/train and weights/data/heldout, or from the
shards weights/data/pack_shards.py packs for the GPU host: each call then
takes one training shard (the next one: the end of the log names it) and the
last checkpoint.

Writes OUT_DIR/NAME.ckpt (model + optimizer + step + RNG state, every
--ckpt-every-s seconds and at the end), and at the end OUT_DIR/NAME.h5 (the
model, with description, provenance and the held-out PSNR in its attributes)
and OUT_DIR/NAME.f32 (the model's fp32 output for weights/check_input.png, raw
little-endian float32 NCHW [1, 3, 75, 97], unclamped, for the PyTorch <-> C++
equality test). weights/README.md ("Training") describes the recipe, the
degradations and the schedule.

Needs torch and torchvision (PNG/JPEG codecs), numpy, and h5py for the .h5.
Runs on a CUDA GPU (bf16 autocast, channels_last) or, slowly, on the CPU
(--device cpu, for smoke tests).
"""

import time

START = time.time()  # the --minutes budget counts from here

import argparse  # noqa: E402
import collections  # noqa: E402
import concurrent.futures  # noqa: E402
import glob  # noqa: E402
import hashlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import mmap  # noqa: E402
import multiprocessing  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402
from torchvision.io import ImageReadMode, decode_jpeg, decode_png, encode_jpeg  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK_INPUT = os.path.join(HERE, "check_input.png")
CKPT_FORMAT = "imrestore-train-ckpt-1"

# Training distributions (weights/README.md, "Degradations").
NOISE_MAX = 55.0  # denoise: sigma uniform in [0, 55] (0-255 scale)
JPEG_Q_DEFAULT = (8, 60)  # deblock: quality uniform integer in [8, 60]
JPEG_Q = JPEG_Q_DEFAULT  # the run's range (--jpeg-q, or its checkpoint's)


def set_jpeg_q(q):
    global JPEG_Q
    JPEG_Q = (int(q[0]), int(q[1]))


# deblock, --jpeg-q-power P: quality LO + floor((HI - LO + 1) * u^P), capped at
# HI, u uniform in [0, 1): below 1 the high qualities are drawn more often.
# With the uniform draw a patch is at quality 90-95 one time in 15, and the
# bundled deblock ends below its input at 95 on a textured photo
# (weights/README.md, "Where deblock loses at quality 95"). Per call, as --gray
# (each call's degradation text says it); 1: the uniform draw, as before.
JPEG_Q_POWER = 1.0


def set_jpeg_q_power(power):
    global JPEG_Q_POWER
    JPEG_Q_POWER = float(power)


def draw_jpeg_q(count, gen):
    """count training JPEG qualities (int64) in [JPEG_Q[0], JPEG_Q[1]], drawn per --jpeg-q-power."""
    if JPEG_Q_POWER == 1.0:  # randint, so runs without the option keep their random sequence
        return torch.randint(JPEG_Q[0], JPEG_Q[1] + 1, (count,), generator=gen)
    span = JPEG_Q[1] - JPEG_Q[0] + 1
    u = torch.rand(count, generator=gen, dtype=torch.float64)
    return (JPEG_Q[0] + torch.floor(span * u ** JPEG_Q_POWER)).long().clamp(max=JPEG_Q[1])


# deblock, --jpeg-prior P,LO,HI: with probability P a training patch is itself
# a JPEG of quality uniform in [LO, HI] before the degradation's JPEG, and the
# target keeps it. A photo that was already a JPEG re-encoded at a high
# quality on the same 8x8 grid changes little; a model that saw only pristine
# targets removes the first JPEG's own blocking too and lands below the input
# (weights/README.md: matplotlib-hopper, -7 to -11 dB at quality 80-95).
# (0, 0, 0): never (the default, and what a checkpoint from before it is taken to have).
JPEG_PRIOR = (0.0, 0, 0)


def set_jpeg_prior(prior):
    global JPEG_PRIOR
    JPEG_PRIOR = (float(prior[0]), int(prior[1]), int(prior[2]))


# deblock, --jpeg-444 P: the share of training patches whose JPEG keeps the
# chroma at full resolution (4:4:4, as `imrestore eval --subsampling 444`)
# instead of libjpeg's default 4:2:0; kept in the checkpoint as the prior is.
# 0: never (the default, and what a checkpoint from before it is taken to have).
JPEG_444 = 0.0


def set_jpeg_444(share):
    global JPEG_444
    JPEG_444 = float(share)


# --gray P: the share of training patches made gray before they are degraded
# (each pixel's R, G, B set to its BT.601 luma, rounded), so a network also
# sees black-and-white photos: its training photos are all color, and it gave
# gray ones specks of color (weights/README.md, "Gray photos kept gray").
# Per call (each call's degradation text says its share); 0: never.
GRAY = 0.0


def set_gray(share):
    global GRAY
    GRAY = float(share)


def gray_u8(x):
    """Patches x (uint8 [..., 3, H, W], torch or numpy) with R = G = B = the BT.601 luma, rounded."""
    y = 0.299 * x[..., 0, :, :].astype(np.float32) if isinstance(x, np.ndarray) else 0.299 * x[..., 0, :, :].float()
    y = y + 0.587 * x[..., 1, :, :] + 0.114 * x[..., 2, :, :]
    if isinstance(x, np.ndarray):
        return np.repeat(np.clip(np.rint(y), 0, 255).astype(np.uint8)[..., None, :, :], 3, axis=-3)
    return y.round().clamp(0, 255).to(torch.uint8).unsqueeze(-3).expand_as(x).contiguous()
BLUR_S = (0.4, 2.2)  # deblur: blur sigma uniform in [0.4, 2.2] px ...
BLUR_NOISE_MAX = 4.0  # ... then noise sigma uniform in [0, 4]
# Standard evaluation levels per task: (label, blur s, noise s, jpeg q).
EVAL_LEVELS = {
    "denoise": [("noise 15", 0, 15, None), ("noise 25", 0, 25, None), ("noise 50", 0, 50, None)],
    "deblock": [(f"jpeg q{q}", 0, 0, q) for q in (10, 20, 30, 40)],
    "deblur": [("blur 1.5 + noise 2", 1.5, 2, None)],
    "photo": [("photo mix", None, None, None)],  # each photo its own draw of the mix (PHOTO_MIX), seeded
}
EVAL_SEED = 20250101  # degradation noise of the held-out evaluation
VAL_SEED = 12345  # the fixed validation patches


# ---------------------------------------------------------------------------
# Degradations (the same definitions as `imrestore degrade`; device-agnostic,
# batched, float32 images with 8-bit values / 255)


def quantize8(x):
    """round(clip(x, 0, 1) * 255) / 255."""
    return torch.round(x.clamp(0.0, 1.0) * 255.0) / 255.0


def add_noise(x, sigma, gen):
    """x [N,3,H,W] in [0,1]; sigma [N] on the 0-255 scale; i.i.d. N(0,1) per sample
    and channel; clipped and rounded to 8 bits."""
    n = torch.randn(x.shape, generator=gen, device=x.device, dtype=torch.float32)
    return quantize8(x + (sigma.to(x.device, torch.float32) / 255.0).view(-1, 1, 1, 1) * n)


def gauss_taps(s, radius):
    """Per-image Gaussian taps [N, 2*radius+1] (float32): radius ceil(3 s) for each
    sigma s in the tensor s [N], zero beyond it, normalized to sum 1."""
    s = s.to(torch.float64).view(-1, 1)
    d = torch.arange(-radius, radius + 1, dtype=torch.float64, device=s.device).view(1, -1)
    w = torch.exp(-d * d / (2.0 * s * s)) * (d.abs() <= torch.ceil(3.0 * s)).to(torch.float64)
    return (w / w.sum(dim=1, keepdim=True)).to(torch.float32)


def blur_valid(x, taps):
    """Separable blur, rows then columns, valid part only: x [N,C,H,W], taps [N,K]
    -> [N,C,H-K+1,W-K+1] (not rounded)."""
    n, c, h, w = x.shape
    k = taps.shape[1]
    t = taps.to(x.device).repeat_interleave(c, dim=0)
    y = F.conv2d(x.reshape(1, n * c, h, w), t.view(n * c, 1, 1, k), groups=n * c)
    y = F.conv2d(y, t.view(n * c, 1, k, 1), groups=n * c)
    return y.view(n, c, h - k + 1, w - k + 1)


def blur_full(x, s):
    """Gaussian blur of whole images x [N,C,H,W] with sigma s (px): radius ceil(3 s),
    border reflect-101 (torch 'reflect'), rounded to 8 bits."""
    r = int(math.ceil(3.0 * s))
    taps = gauss_taps(torch.full((x.shape[0],), float(s)), r)
    return quantize8(blur_valid(F.pad(x, (r, r, r, r), mode="reflect"), taps))


def jpeg_u8(img, q, subsampling=420):
    """libjpeg baseline JPEG of uint8 [3,H,W] (CPU) at quality q, decoded:
    4:2:0 through torchvision's codec, or 4:4:4 (subsampling 444) through
    PIL's, whose libjpeg scales the same IJG tables by the quality (torchvision
    has no subsampling setting); both decode with torchvision's."""
    if subsampling == 420:
        data = encode_jpeg(img.contiguous(), quality=int(q))
    elif subsampling == 444:
        from PIL import Image
        buf = io.BytesIO()
        Image.fromarray(img.permute(1, 2, 0).contiguous().numpy()).save(buf, "JPEG", quality=int(q), subsampling=0)
        data = torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8)
    else:
        raise ValueError(f"jpeg_u8: subsampling {subsampling}, expected 420 or 444")
    return decode_jpeg(data, mode=ImageReadMode.RGB)


def degrade_image_cpu(clean_u8, blur, noise, q, gen):
    """One whole image (uint8 [3,H,W], CPU) degraded per the spec: blur, then noise,
    then JPEG. Returns uint8 [3,H,W]."""
    x = clean_u8.float().unsqueeze(0) / 255.0
    if blur:
        x = blur_full(x, blur)
    if noise:
        x = add_noise(x, torch.tensor([float(noise)]), gen)
    y = torch.round(x[0] * 255.0).to(torch.uint8)
    if q is not None:
        y = jpeg_u8(y, q)
    return y


# ---------------------------------------------------------------------------
# The photo mix (task "photo"): the definition is weights/README.md
# ("Degradations", the photo mix); app/eval/photo_mix.cpp implements the same
# for `imrestore degrade|eval --mix photo` (the committed evaluation). Here it
# is batched: every patch its own draw, every step computed for the whole batch
# and kept where the patch's draw runs it, all on the batch's device. Steps
# round to 8 bits as the C++ does. The JPEG is libjpeg's arithmetic in float
# (jpeg_sim: same tables, colour conversion, 2x2 chroma averaging and "fancy"
# triangular upsampling; tests/photo_mix_test.py holds it near libjpeg).

PHOTO_MIX = {
    "blur_p": 0.25, "blur": (0.3, 1.5),
    "noise_p": 0.6, "shot": (1e-4, 3e-2), "read_rel": (2e-4, 2e-3), "chroma_ratio": (1.0, 3.0),
    "chroma_sigma": (0.5, 2.5),
    "camera_jpeg_p": 0.4, "camera_q": (75, 95),
    "resample_p": 0.4, "factor": (0.5, 0.9), "bicubic_p": 0.5,
    "web_jpeg_p": 0.6, "web_q": (30, 95), "p444": 0.2, "web_jpeg_first_p": 0.5,
}
PHOTO_MARGIN = 16  # training patches are degraded with this border, then cropped (a multiple of 16: JPEG's grid)

_JPEG_LUMA = [16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56,
              14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
              49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99]
_JPEG_CHROMA = ([17, 18, 24, 47] + [99] * 4 + [18, 21, 26, 66] + [99] * 4 + [24, 26, 56] + [99] * 5
                + [47, 66] + [99] * 6 + [99] * 32)


def draw_photo_mix(n, gen, device):
    """n draws of the mix (a dict of tensors [n]), every parameter drawn whether its step runs or not."""
    m = PHOTO_MIX
    u = lambda: torch.rand(n, generator=gen, device=device, dtype=torch.float64)  # noqa: E731
    unif = lambda r: r[0] + (r[1] - r[0]) * u()  # noqa: E731
    logu = lambda r: torch.exp(math.log(r[0]) + (math.log(r[1]) - math.log(r[0])) * u())  # noqa: E731
    integer = lambda r: torch.clamp(r[0] + torch.floor(u() * (r[1] - r[0] + 1)), max=r[1]).long()  # noqa: E731
    p = {}
    p["blur_on"] = u() < m["blur_p"]
    p["blur"] = unif(m["blur"])
    p["noise_on"] = u() < m["noise_p"]
    p["shot"] = logu(m["shot"])
    p["read"] = p["shot"] * logu(m["read_rel"])
    p["chroma_ratio"] = unif(m["chroma_ratio"])
    p["chroma_sigma"] = unif(m["chroma_sigma"])
    p["camera_on"] = u() < m["camera_jpeg_p"]
    p["camera_q"] = integer(m["camera_q"])
    p["camera_444"] = u() < m["p444"]
    p["resample_on"] = u() < m["resample_p"]
    p["factor"] = unif(m["factor"])
    p["down_bicubic"] = u() < m["bicubic_p"]
    p["up_bicubic"] = u() < m["bicubic_p"]
    p["web_on"] = u() < m["web_jpeg_p"]
    p["web_q"] = integer(m["web_q"])
    p["web_444"] = u() < m["p444"]
    p["web_first"] = u() < m["web_jpeg_first_p"]
    return p


def photo_mix_is_noop(p):
    """[N] bool: draws that skip every step (clean patches; 4.3% of training's)."""
    return ~(p["blur_on"] | p["noise_on"] | p["camera_on"] | p["resample_on"] | p["web_on"])


def srgb_to_linear(x):
    return torch.where(x <= 0.04045, x / 12.92, ((x + 0.055) / 1.055).clamp(min=0) ** 2.4)


def linear_to_srgb(x):
    return torch.where(x <= 0.0031308, 12.92 * x, 1.055 * x.clamp(min=0.0031308) ** (1 / 2.4) - 0.055)


def camera_noise(x, shot, read, ratio, chroma_sigma, gen):
    """Poisson-Gaussian noise in linear light (variance shot * x + read per channel), white luma plus two
    opponent-colour chroma fields Gaussian-blurred by chroma_sigma px (renormalized to unit variance), chroma
    `ratio` times luma's std. x [N,3,H,W] 8-bit values / 255; the parameters [N]. Rounded to 8 bits."""
    n, _, h, w = x.shape
    dev = x.device
    zl = torch.randn((n, 1, h, w), generator=gen, device=dev, dtype=torch.float32)
    zc = torch.randn((n, 2, h, w), generator=gen, device=dev, dtype=torch.float32)
    r = int(math.ceil(3 * PHOTO_MIX["chroma_sigma"][1]))
    taps = gauss_taps(chroma_sigma, r).to(dev)
    zc = blur_valid(F.pad(zc, (r, r, r, r), mode="reflect"), taps) / taps.pow(2).sum(1).view(-1, 1, 1, 1)
    s = math.sqrt(1.5)
    axes = torch.tensor([[s / math.sqrt(2), -s / math.sqrt(2), 0.0],
                         [s / math.sqrt(6), s / math.sqrt(6), -2 * s / math.sqrt(6)]], device=dev)
    chroma = torch.einsum("nkhw,kc->nchw", zc, axes)
    ratio = ratio.to(dev, torch.float32).view(-1, 1, 1, 1)
    z = (zl + ratio * chroma) / torch.sqrt(1 + ratio * ratio)
    lin = srgb_to_linear(x)
    sd = torch.sqrt(shot.to(dev, torch.float32).view(-1, 1, 1, 1) * lin + read.to(dev, torch.float32).view(-1, 1, 1, 1))
    return quantize8(linear_to_srgb((lin + sd * z).clamp(0.0, 1.0)))


def _pillow_filter(t, bicubic):
    t = t.abs()
    a = -0.5
    cubic = torch.where(t < 1, ((a + 2) * t - (a + 3)) * t * t + 1,
                        torch.where(t < 2, (((t - 5) * t + 8) * t - 4) * a, torch.zeros_like(t)))
    linear = (1 - t).clamp(min=0)
    return torch.where(bicubic.view(-1, 1, 1), cubic, linear)


def resample_matrix(in_size, out_size, bicubic, rows):
    """Pillow's resampling (torch's antialias=True) as matrices [N, rows, cols]: image i maps in_size[i]
    samples to out_size[i] (float64 tensors [N]); zero beyond those sizes. The filter (bicubic a = -0.5,
    else triangle) is stretched by the scale when downscaling; each row sums to 1."""
    dev = in_size.device
    cols = int(in_size.max().item())
    scale = (in_size / out_size).view(-1, 1, 1)
    stretch = scale.clamp(min=1.0)
    o = torch.arange(rows, device=dev, dtype=torch.float64).view(1, -1, 1)
    j = torch.arange(cols, device=dev, dtype=torch.float64).view(1, 1, -1)
    center = (o + 0.5) * scale
    wts = _pillow_filter((j - center + 0.5) / stretch, bicubic) * (j < in_size.view(-1, 1, 1))
    wts = wts / wts.sum(-1, keepdim=True).clamp(min=1e-12)
    return (wts * (o < out_size.view(-1, 1, 1))).to(torch.float32)


def resample_round_trip(x, factor, down_bicubic, up_bicubic):
    """Downscale by factor (size max(1, floor(n f + 0.5)) per axis), round, upscale back, round. x [N,C,H,W]."""
    n, c, h, w = x.shape
    dev = x.device
    out = []
    for size in (h, w):
        full = torch.full((n,), float(size), device=dev, dtype=torch.float64)
        small = torch.clamp(torch.floor(size * factor.to(dev, torch.float64) + 0.5), min=1)
        m = int(small.max().item())
        out.append((resample_matrix(full, small, down_bicubic.to(dev), m),
                    resample_matrix(small, full, up_bicubic.to(dev), size)))
    (dh, uh), (dw, uw) = out
    low = quantize8(dh.unsqueeze(1) @ x @ dw.unsqueeze(1).transpose(-1, -2))
    return quantize8(uh.unsqueeze(1) @ low @ uw.unsqueeze(1).transpose(-1, -2))


def _dct_matrix(dev):
    k = torch.arange(8, dtype=torch.float64, device=dev)
    d = torch.cos((2 * k.view(1, -1) + 1) * k.view(-1, 1) * math.pi / 16) * math.sqrt(2 / 8)
    d[0] /= math.sqrt(2)
    return d.to(torch.float32)


def _jpeg_tables(q, base):
    """libjpeg's jpeg_set_quality(q, force_baseline) tables [N, 8, 8] for qualities q [N]."""
    q = q.clamp(1, 100).to(torch.int64)
    scale = torch.where(q < 50, 5000 // q, 200 - 2 * q)
    t = (torch.tensor(base, device=q.device, dtype=torch.int64).view(1, 64) * scale.view(-1, 1) + 50) // 100
    return t.clamp(1, 255).to(torch.float32).view(-1, 8, 8)


def _blocks_codec(p, table):
    """Level-shifted planes p [N,C,H,W] (H, W multiples of 8) through DCT, quantization by table [N,8,8],
    dequantization and IDCT; +128, rounded and clipped to 0..255."""
    n, c, h, w = p.shape
    d = _dct_matrix(p.device)
    b = (p - 128.0).reshape(n, c, h // 8, 8, w // 8, 8).permute(0, 1, 2, 4, 3, 5)
    t = table.view(n, 1, 1, 1, 8, 8)
    coef = torch.round((d @ b @ d.T) / t) * t
    b = d.T @ coef @ d
    return torch.round(b.permute(0, 1, 2, 4, 3, 5).reshape(n, c, h, w) + 128.0).clamp(0, 255)


def _fancy_up(c):
    """libjpeg's h2v2 'fancy' upsampling (triangular: 3/4 nearer, 1/4 farther sample per axis, edges
    replicated) of chroma planes [N,C,h,w] to [N,C,2h,2w]; rounded."""
    def up(x, dim):
        prev = torch.cat([x.narrow(dim, 0, 1), x.narrow(dim, 0, x.shape[dim] - 1)], dim)
        nxt = torch.cat([x.narrow(dim, 1, x.shape[dim] - 1), x.narrow(dim, x.shape[dim] - 1, 1)], dim)
        return torch.stack([3 * x + prev, 3 * x + nxt], dim + 1).flatten(dim, dim + 1)
    return torch.round(up(up(c, 2), 3) / 16.0)


def jpeg_sim(x, q, s444):
    """Baseline JPEG round trip as libjpeg computes it, in float: x [N,3,H,W] 8-bit values / 255, quality
    q [N] (int), s444 [N] bool (4:4:4, else 4:2:0). Returns the decoded image / 255."""
    n, _, h, w = x.shape
    ph, pw = -h % 16, -w % 16
    v = F.pad(x * 255.0, (0, pw, 0, ph), mode="replicate") if ph or pw else x * 255.0
    r, g, b = v[:, 0:1], v[:, 1:2], v[:, 2:3]
    y = torch.round(0.299 * r + 0.587 * g + 0.114 * b)
    cb = torch.round(-0.168735892 * r - 0.331264108 * g + 0.5 * b + 128.0)
    cr = torch.round(0.5 * r - 0.418687589 * g - 0.081312411 * b + 128.0)
    cc = torch.cat([cb, cr], 1)
    q = q.to(x.device)
    y = _blocks_codec(y, _jpeg_tables(q, _JPEG_LUMA))
    ct = _jpeg_tables(q, _JPEG_CHROMA)
    full = _blocks_codec(cc, ct)
    half = _blocks_codec(torch.floor(F.avg_pool2d(cc, 2) + 0.5), ct)
    cc = torch.where(s444.to(x.device).view(-1, 1, 1, 1), full, _fancy_up(half))
    cb, cr = cc[:, 0:1] - 128.0, cc[:, 1:2] - 128.0
    rgb = torch.cat([y + 1.402 * cr, y - 0.344136286 * cb - 0.714136286 * cr, y + 1.772 * cb], 1)
    return (torch.round(rgb).clamp(0, 255) / 255.0)[:, :, :h, :w]


def photo_mix(x, gen, params=None):
    """The photo mix on x [N,3,H,W] (8-bit values / 255, whole images or patches with a margin), each image
    its own draw (params: draw_photo_mix's, drawn from gen when None): blur -> camera noise -> camera JPEG ->
    {resample, web JPEG} in the drawn order; each step kept only where the draw runs it."""
    n, dev = x.shape[0], x.device
    p = params if params is not None else draw_photo_mix(n, gen, dev)
    keep = lambda on, new, old: torch.where(on.to(dev).view(-1, 1, 1, 1), new, old)  # noqa: E731
    r = int(math.ceil(3 * PHOTO_MIX["blur"][1]))

    def blur(v, q):
        return quantize8(blur_valid(F.pad(v, (r, r, r, r), mode="reflect"), gauss_taps(q["blur"], r)))

    x = _only_where(p["blur_on"], x, p, blur)
    # The noise draws its fields for every image (the generator's sequence does not depend on the draws).
    x = keep(p["noise_on"], camera_noise(x, p["shot"], p["read"], p["chroma_ratio"], p["chroma_sigma"], gen), x)
    x = _only_where(p["camera_on"], x, p, lambda v, q: jpeg_sim(v, q["camera_q"], q["camera_444"]))
    web = lambda v, q: jpeg_sim(v, q["web_q"], q["web_444"])  # noqa: E731
    x = _only_where(p["web_on"] & p["web_first"], x, p, web)
    x = _only_where(p["resample_on"], x, p,
                    lambda v, q: resample_round_trip(v, q["factor"], q["down_bicubic"], q["up_bicubic"]))
    x = _only_where(p["web_on"] & ~p["web_first"], x, p, web)
    return x


def _only_where(on, x, p, step):
    """x with step(x[i], the draws of i) in the images i where `on`, the others as they were. The
    deterministic steps (blur, JPEG, resampling) run on those images only: each is skipped for 40-75% of
    them, and computing it for all and keeping some (the definition) gives the same values at 2-4 times
    the work, which bound the photo model's training (17 steps/s against a median 64 for deblur, same network)."""
    idx = on.to(x.device).nonzero().flatten()
    if idx.numel() == 0:
        return x
    if idx.numel() == x.shape[0]:
        return step(x, p)
    out = x.clone()
    out[idx] = step(x[idx], {k: v[idx.to(v.device)] for k, v in p.items()})
    return out


# ---------------------------------------------------------------------------
# Model


class UnshuffleCNN(nn.Module):
    """space_to_depth(f) -> conv3x3 3f^2->C + relu -> (D-2) x [conv3x3 C->C + relu]
    -> conv3x3 C->3f^2 -> depth_to_space(f), plus the model input. factor 1:
    no shuffles, the convolutions run at full resolution (DnCNN's shape) and
    the last one adds the input in its epilogue."""

    def __init__(self, channels=64, depth=14, factor=2, image_channels=3):
        super().__init__()
        self.factor = factor
        inner = image_channels * factor * factor
        layers = [nn.PixelUnshuffle(factor)] if factor > 1 else []
        layers += [nn.Conv2d(inner, channels, 3, padding=1), nn.ReLU(inplace=True)]
        for _ in range(depth - 2):
            layers += [nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU(inplace=True)]
        layers += [nn.Conv2d(channels, inner, 3, padding=1)]
        layers += [nn.PixelShuffle(factor)] if factor > 1 else []
        self.body = nn.Sequential(*layers)
        convs = self.convs()
        for c in convs:
            nn.init.kaiming_normal_(c.weight, nonlinearity="relu")
            nn.init.zeros_(c.bias)
        with torch.no_grad():
            convs[-1].weight.mul_(0.1)  # start close to the identity

    @property
    def size_multiple(self):
        return self.factor

    def convs(self):
        return [m for m in self.body if isinstance(m, nn.Conv2d)]

    def forward(self, x):
        return x + self.body(x)

    def forward_any_size(self, x):
        """The format's rule for sizes that are not a multiple of the downscale:
        replicate-pad bottom/right, run, crop."""
        h, w = x.shape[-2:]
        ph, pw = -h % self.factor, -w % self.factor
        if ph or pw:
            x = F.pad(x, (0, pw, 0, ph), mode="replicate")
        return self(x)[..., :h, :w]

    def stages(self):
        """The model as imrestore format-v2 stages."""
        stages = [{"op": "space_to_depth", "factor": self.factor}] if self.factor > 1 else []
        convs = self.convs()
        for i, c in enumerate(convs):
            stages.append({"op": "conv2d",
                           "weight": c.weight.detach().float().cpu().numpy().astype(np.float32),
                           "bias": c.bias.detach().float().cpu().numpy().astype(np.float32),
                           "padding": "zero", "activation": "none" if i == len(convs) - 1 else "relu"})
        if self.factor > 1:
            stages.append({"op": "depth_to_space", "factor": self.factor, "add_model_input": 1})
        else:
            stages[-1]["add_model_input"] = 1
        return stages


# The U-Nets (DRUNet-like, NAFNet-like) live in weights/architectures.py; their
# presets are built by architectures.build(NAME) and written as format v3 by
# weights/export_graph.py. Defaults per family (weights/README.md, "Recipe"
# says why these batch and patch sizes for an H200):
ARCH_DEFAULTS = {
    "unshuffle": {"batch": 64, "patch": 128, "lr": 5e-4, "ckpt_mode": "full", "rewarmup_steps": 200, "compile": False},
    "drunet": {"batch": 32, "patch": 128, "lr": 3e-4, "ckpt_mode": "compact", "rewarmup_steps": 200, "compile": False},
    "drunet-small": {"batch": 64, "lr": 5e-4},
    "drunet-large": {"lr": 2e-4},
    "nafnet": {"batch": 32, "patch": 128, "lr": 5e-4, "ckpt_mode": "compact", "rewarmup_steps": 200, "compile": True},
    "nafnet-small": {"batch": 64},
}


def arch_defaults(arch):
    """The defaults of a preset: its family's (the name up to '-'), then its own."""
    d = dict(ARCH_DEFAULTS.get(arch.partition("-")[0], ARCH_DEFAULTS["drunet"]))
    d.update(ARCH_DEFAULTS.get(arch, {}) if arch != arch.partition("-")[0] else {})
    return d


def load_architectures():
    if HERE not in sys.path:  # (called each training step by call_net: import is cached, the path must not grow)
        sys.path.insert(0, HERE)
    import architectures

    return architectures


def build_model(args):
    if args.arch == "unshuffle":
        return UnshuffleCNN(args.channels, args.depth, args.factor)
    try:
        arch = load_architectures()
    except ImportError as e:
        raise SystemExit(f"train.py: --arch {args.arch} needs weights/architectures.py: {e}")
    try:
        return arch.build(args.arch, **args.arch_kw)
    except (KeyError, ValueError, TypeError) as e:
        raise SystemExit(f"train.py: --arch {args.arch}: {e}")


def size_multiple(model):
    """What image sides are padded to (the format's size multiple): the model's
    size_multiple (attribute, property or method)."""
    v = getattr(model, "size_multiple", None)
    if callable(v):
        v = v()
    if not v:
        raise SystemExit(f"train.py: {type(model).__name__} has no size_multiple")
    return int(v)


def forward_any_size(model, x, mult, levels=None):
    """The format's rule for sizes that are not a multiple of the size multiple:
    replicate-pad bottom/right, run, crop. levels: as call_net's."""
    h, w = x.shape[-2:]
    ph, pw = -h % mult, -w % mult
    if ph or pw:
        x = F.pad(x, (0, pw, 0, ph), mode="replicate")
    return call_net(model, model, x, levels)[..., :h, :w]


def level_input(model):
    """The model's level input (architectures.py: "jpeg_quality", "noise_level"), or None."""
    return getattr(model, "level_input", None)


# The levels the check input's torch output is computed with, for a model that
# takes one (tests/test_torch_equality.cpp gives the C++ runner the same).
CHECK_LEVELS = {"noise_level": 25.0 / 255.0, "jpeg_quality": 0.5}
# The level a task's degradation has (what a model with that level input is
# given: make_batch, validation_set, eval_set).
TASK_LEVEL = {"denoise": "noise_level", "deblock": "jpeg_quality"}


def call_net(net, model, x, levels):
    """net(x), or net(x, plane) for a model with a level input: plane [N, 1, H, W]
    holds each item's level (levels: {name: [N] tensor or a number}, the values
    as the format's extra inputs take them: sigma / 255, quality / 100). net:
    the model or its compiled forward."""
    name = level_input(model)
    if name is None:
        return net(x)
    if levels is None or name not in levels:
        raise ValueError(f"the model takes {name}; no level was given")
    architectures = load_architectures()  # a level input is an architectures.py model's
    return net(x, architectures.level_plane(levels[name], x).contiguous(memory_format=torch.channels_last))


# ---------------------------------------------------------------------------
# Data


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _load_png(path):
    data = open(path, "rb").read()
    img = decode_png(torch.frombuffer(bytearray(data), dtype=torch.uint8), mode=ImageReadMode.RGB)
    if img.dtype != torch.uint8:  # 16-bit PNG
        img = torch.round(img.to(torch.float32) * (255.0 / 65535.0)).to(torch.uint8)
    return img.contiguous(), hashlib.sha256(data).hexdigest()


def load_folder(folder, threads=4):
    """All *.png in folder (sorted) as uint8 [3,H,W] CPU tensors; returns
    (names, images, digest) where digest is the sha256 of 'name sha256\\n' lines."""
    paths = sorted(glob.glob(os.path.join(folder, "*.png")))
    if not paths:
        raise SystemExit(f"train.py: no *.png in {folder}")
    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        loaded = list(ex.map(_load_png, paths))
    names = [os.path.basename(p) for p in paths]
    digest = hashlib.sha256("".join(f"{n} {d}\n" for n, (_, d) in zip(names, loaded)).encode()).hexdigest()
    return names, [img for img, _ in loaded], digest


def load_shard(path, split):
    """The photos of a shard (weights/data/shards.py; pack_shards.py writes them) as
    load_folder returns them, plus the shard's index."""
    sys.path.insert(0, os.path.join(HERE, "data"))
    import shards

    try:
        index, photos = shards.read_shard(path)
    except shards.ShardError as e:
        raise SystemExit(f"train.py: {e}")
    if index["split"] != split:
        raise SystemExit(f"train.py: {path} is a {index['split']} shard, not {split}")
    if not photos:
        raise SystemExit(f"train.py: {path} holds no photos")
    images = [torch.from_numpy(a).permute(2, 0, 1).contiguous() for _, a in photos]
    return [n for n, _ in photos], images, shards.digest(index), index


def shard_text(path, index, digest):
    """How the provenance names a shard."""
    return (f"{os.path.basename(path)} ({index['split']} shard {index['shard'] + 1} of {index['shards']}, "
            f"{len(index['images'])} photos, {index['codec']}, sha256 {digest}; manifest sha256 "
            f"{index['manifest_sha256']})")


class PhotoPatches:
    """Random size x size crops of a set of photos, positions uniform over all
    crop positions of all photos (photos smaller than a crop are skipped).
    The photos live in one flat uint8 tensor on `device`; a batch is one gather."""

    def __init__(self, photos, size, device):
        keep = [p for p in photos if p.shape[1] >= size and p.shape[2] >= size]
        if not keep:
            raise SystemExit(f"train.py: no photo is at least {size}x{size}")
        self.skipped = len(photos) - len(keep)
        self.size = size
        self.device = device
        sizes = [p.numel() for p in keep]
        self.flat_np = np.concatenate([p.reshape(-1).numpy() for p in keep])
        self.off = torch.tensor(np.cumsum([0] + sizes[:-1]), dtype=torch.int64)
        self.h = torch.tensor([p.shape[1] for p in keep], dtype=torch.int64)
        self.w = torch.tensor([p.shape[2] for p in keep], dtype=torch.int64)
        self.weight = ((self.h - size + 1) * (self.w - size + 1)).to(torch.float64)
        self.flat = None  # on device, made by to_device()

    def to_device(self):
        self.flat = torch.from_numpy(self.flat_np).to(self.device)
        for k in ("off", "h", "w", "weight"):
            setattr(self, k, getattr(self, k).to(self.device))
        self.ar = torch.arange(self.size, device=self.device)
        self.c = torch.arange(3, device=self.device)

    def params(self, n, gen):
        """Random (photo, y0, x0) for n crops and 3 augmentation bits (hflip, vflip, transpose)."""
        dev = self.weight.device
        pid = torch.multinomial(self.weight, n, replacement=True, generator=gen)
        h, w = self.h[pid], self.w[pid]
        y0 = torch.minimum((torch.rand(n, generator=gen, device=dev, dtype=torch.float64) * (h - self.size + 1)).long(),
                           h - self.size)
        x0 = torch.minimum((torch.rand(n, generator=gen, device=dev, dtype=torch.float64) * (w - self.size + 1)).long(),
                           w - self.size)
        aug = torch.rand(n, 3, generator=gen, device=dev) < 0.5
        return pid, y0, x0, aug

    def crops(self, n, gen, gray=0.0):
        """uint8 [n,3,size,size] on the device, randomly flipped / transposed; a
        share `gray` of them made gray (training's --gray; never the validation's)."""
        pid, y0, x0, aug = self.params(n, gen)
        h, w, off = self.h[pid], self.w[pid], self.off[pid]
        v = lambda t: t.view(-1, 1, 1, 1)  # noqa: E731
        idx = (v(off) + self.c.view(1, 3, 1, 1) * v(h * w) + (v(y0) + self.ar.view(1, 1, -1, 1)) * v(w)
               + v(x0) + self.ar.view(1, 1, 1, -1))
        x = augment(self.flat[idx], aug)
        if gray > 0:  # drawn only then, so runs without it keep their random sequence
            g = torch.rand(n, generator=gen, device=x.device) < gray
            x = torch.where(g.view(-1, 1, 1, 1), gray_u8(x), x)
        return x


def augment(x, aug):
    """The 8 flips/rotations of square patches x [N,C,S,S]; aug [N,3] bool."""
    m = lambda i: aug[:, i].view(-1, 1, 1, 1)  # noqa: E731
    x = torch.where(m(0), x.flip(3), x)
    x = torch.where(m(1), x.flip(2), x)
    return torch.where(m(2), x.transpose(2, 3), x)


# JPEG workers (deblock): forked before CUDA starts; they crop the patches
# themselves from the photos (shared copy-on-write by fork), JPEG them with
# libjpeg (torchvision's CPU codec, as the spec defines) and write clean and
# degraded patches into slots of an anonymous shared mapping.
_W = {}


def _jpeg_worker_init():
    torch.set_num_threads(1)


def _jpeg_job(slot, jobs):
    flat, buf, size = _W["flat"], _W["buf"], _W["size"]
    for k, (off, h, w, y0, x0, a0, a1, a2, q, prior, s444, gray) in enumerate(jobs):
        img = flat[off:off + 3 * h * w].reshape(3, h, w)
        p = img[:, y0:y0 + size, x0:x0 + size]
        if a0:
            p = p[:, :, ::-1]
        if a1:
            p = p[:, ::-1, :]
        if a2:
            p = p.transpose(0, 2, 1)
        p = torch.from_numpy(np.ascontiguousarray(gray_u8(p) if gray else p))
        if prior:  # the patch was a JPEG already (--jpeg-prior): the target keeps its blocking
            p = jpeg_u8(p, prior)
        buf[slot, 0, k] = p.numpy()
        buf[slot, 1, k] = jpeg_u8(p, q, 444 if s444 else 420).numpy()
    return slot


class JpegFeeder:
    """Keeps `ahead` batches of (JPEG-degraded, clean) patches in flight in a pool
    of CPU worker processes."""

    def __init__(self, patches, batch, workers, ahead):
        self.patches, self.batch, self.ahead = patches, batch, ahead
        self.slots = ahead + 1
        size = patches.size
        self.shape = (self.slots, 2, batch, 3, size, size)
        self.mem = mmap.mmap(-1, int(np.prod(self.shape)))  # MAP_SHARED | MAP_ANONYMOUS
        self.buf = np.ndarray(self.shape, dtype=np.uint8, buffer=self.mem)
        _W.update(flat=patches.flat_np, buf=self.buf, size=size)
        self.pool = multiprocessing.get_context("fork").Pool(workers, initializer=_jpeg_worker_init)
        self.free = list(range(self.slots))
        self.pending = collections.deque()
        self.pinned = []
        self.events = []

    def start(self, device, gen_cpu):
        self.device, self.gen = device, gen_cpu
        pin = device.type == "cuda"
        try:
            self.pinned = [torch.empty(self.shape[1:], dtype=torch.uint8, pin_memory=pin) for _ in range(3)]
        except RuntimeError as e:  # no page-locked memory: plain copies (slower, still correct)
            print(f"JPEG feeder: pinned memory unavailable ({e}); using pageable buffers", flush=True)
            self.pinned = [torch.empty(self.shape[1:], dtype=torch.uint8) for _ in range(3)]
        self.events = [None] * 3
        self.turn = 0
        while len(self.pending) < self.ahead:
            self._submit()

    def _submit(self):
        p = self.patches
        pid, y0, x0, aug = p.params(self.batch, self.gen)  # the CPU copies of off/h/w stay on the CPU
        q = draw_jpeg_q(self.batch, self.gen)
        prior = torch.zeros(self.batch, dtype=torch.int64)
        if JPEG_PRIOR[0] > 0:  # drawn only then, so runs without it keep their random sequence
            on = torch.rand(self.batch, generator=self.gen) < JPEG_PRIOR[0]
            q0 = torch.randint(JPEG_PRIOR[1], JPEG_PRIOR[2] + 1, (self.batch,), generator=self.gen)
            prior = torch.where(on, q0, prior)
        s444 = torch.zeros(self.batch, dtype=torch.bool)
        if JPEG_444 > 0:  # drawn only then, as the prior
            s444 = torch.rand(self.batch, generator=self.gen) < JPEG_444
        gray = torch.zeros(self.batch, dtype=torch.bool)
        if GRAY > 0:  # drawn only then, as the prior
            gray = torch.rand(self.batch, generator=self.gen) < GRAY
        off, h, w = p.off_cpu[pid], p.h_cpu[pid], p.w_cpu[pid]
        cols = ([t.tolist() for t in (off, h, w, y0, x0)] + [aug[:, k].tolist() for k in range(3)]
                + [q.tolist(), prior.tolist(), s444.tolist(), gray.tolist()])
        jobs = list(zip(*cols))
        slot = self.free.pop()
        self.pending.append((self.pool.apply_async(_jpeg_job, (slot, jobs)), q))

    def next(self):
        """(degraded, clean) uint8 [B,3,S,S] on the device, and each patch's JPEG quality ([B] int64)."""
        job, q = self.pending.popleft()
        slot = job.get()
        i = self.turn
        self.turn = (i + 1) % len(self.pinned)
        if self.events[i] is not None:
            self.events[i].synchronize()
        self.pinned[i].copy_(torch.from_numpy(self.buf[slot]))
        self.free.append(slot)
        self._submit()
        out = self.pinned[i].to(self.device, non_blocking=True)
        if self.device.type == "cuda":
            self.events[i] = torch.cuda.Event()
            self.events[i].record()
        return out[1], out[0], q.to(self.device)

    def close(self):
        self.pool.terminate()
        self.pool.join()


class CpuParams:
    """The patch sampler's parameters on the CPU, for the JPEG feeder's random draws."""

    def __init__(self, patches):
        self.size = patches.size
        self.flat_np = patches.flat_np
        self.off_cpu, self.h_cpu, self.w_cpu = patches.off.cpu(), patches.h.cpu(), patches.w.cpu()
        self.weight = patches.weight.cpu()
        self.h, self.w = self.h_cpu, self.w_cpu

    params = PhotoPatches.params


def make_batch(task, patches, feeder, batch, size, margin, gen, sigma_power=1.0):
    """(degraded, clean, levels): float32 [B,3,P,P] on the device, drawn from the
    task's training distribution (denoise: sigma = NOISE_MAX * u ** sigma_power,
    u uniform in [0, 1): a power above 1 draws low noise levels more often), and
    the level of each item as call_net takes them (denoise: noise_level, deblock:
    jpeg_quality; none for the other tasks)."""
    dev = patches.device
    if task == "photo":  # patches with a margin, degraded whole, cropped
        big = patches.crops(batch, gen, GRAY).float() / 255.0
        crop = lambda t: t[:, :, margin:margin + size, margin:margin + size]  # noqa: E731
        return crop(photo_mix(big, gen)), crop(big), {}
    if task == "deblock":
        d, c, q = feeder.next()
        return d.float() / 255.0, c.float() / 255.0, {"jpeg_quality": q.float() / 100.0}
    clean = patches.crops(batch, gen, GRAY).float() / 255.0
    if task == "denoise":
        sigma = torch.rand(batch, generator=gen, device=dev) ** sigma_power * NOISE_MAX
        return add_noise(clean, sigma, gen), clean, {"noise_level": sigma / 255.0}
    # deblur: crop with a margin, blur (valid), round, crop, noise
    s = BLUR_S[0] + torch.rand(batch, generator=gen, device=dev) * (BLUR_S[1] - BLUR_S[0])
    blurred = quantize8(blur_valid(clean, gauss_taps(s, margin)))
    clean = clean[:, :, margin:margin + size, margin:margin + size]
    sigma = torch.rand(batch, generator=gen, device=dev) * BLUR_NOISE_MAX
    return add_noise(blurred, sigma, gen), clean, {}


def validation_set(task, photos, count, size, margin):
    """Fixed validation patches (CPU generator, VAL_SEED) of held-out photos, degraded
    per the task's training distribution (deblock: 4:2:0 and no --jpeg-prior
    whatever the run's, so runs compare). Returns (degraded, clean, levels):
    float32 on the CPU, levels as make_batch's."""
    gen = torch.Generator().manual_seed(VAL_SEED)
    s = size + 2 * margin if task in ("deblur", "photo") else size
    sampler = PhotoPatches(photos, s, torch.device("cpu"))
    sampler.to_device()
    clean = sampler.crops(count, gen).float() / 255.0
    if task == "denoise":
        sigma = torch.rand(count, generator=gen) * NOISE_MAX
        return add_noise(clean, sigma, gen), clean, {"noise_level": sigma / 255.0}
    if task == "photo":
        crop = lambda t: t[:, :, margin:margin + size, margin:margin + size]  # noqa: E731
        return crop(photo_mix(clean, gen)), crop(clean), {}
    if task == "deblur":
        sb = BLUR_S[0] + torch.rand(count, generator=gen) * (BLUR_S[1] - BLUR_S[0])
        blurred = quantize8(blur_valid(clean, gauss_taps(sb, margin)))
        clean = clean[:, :, margin:margin + size, margin:margin + size]
        return add_noise(blurred, torch.rand(count, generator=gen) * BLUR_NOISE_MAX, gen), clean, {}
    q = torch.randint(JPEG_Q[0], JPEG_Q[1] + 1, (count,), generator=gen)
    u8 = torch.round(clean * 255.0).to(torch.uint8)
    deg = torch.stack([jpeg_u8(u8[i], int(q[i])) for i in range(count)]).float() / 255.0
    return deg, clean, {"jpeg_quality": q.float() / 100.0}


def eval_set(task, photos):
    """The held-out photos degraded at the task's standard levels (fixed seeds):
    list of (label, [(clean u8, degraded u8)], levels as call_net takes them)."""
    out = []
    if task == "photo":  # one draw per photo, in order, from one generator; as `imrestore eval --mix photo`,
        gen = torch.Generator().manual_seed(EVAL_SEED)  # a draw that skips every step is drawn again
        pairs = []
        for p in photos:
            params = draw_photo_mix(1, gen, torch.device("cpu"))
            while photo_mix_is_noop(params)[0]:
                params = draw_photo_mix(1, gen, torch.device("cpu"))
            deg = photo_mix(p.float().unsqueeze(0) / 255.0, gen, params)
            pairs.append((p, torch.round(deg[0] * 255.0).to(torch.uint8)))
        return [(EVAL_LEVELS[task][0][0], pairs, {})]
    for li, (label, blur, noise, q) in enumerate(EVAL_LEVELS[task]):
        gen = torch.Generator().manual_seed(EVAL_SEED + li)
        level = {"noise_level": noise / 255.0, "jpeg_quality": (q or 0) / 100.0}.get(TASK_LEVEL.get(task))
        levels = {TASK_LEVEL[task]: level} if level is not None else {}
        out.append((label, [(p, degrade_image_cpu(p, blur, noise, q, gen)) for p in photos], levels))
    return out


def psnr_u8(a, b):
    mse = (a.double() - b.double()).pow(2).mean().item()
    return float("inf") if mse == 0 else 10.0 * math.log10(255.0 * 255.0 / mse)


@torch.no_grad()
def evaluate_full(model, sets, device, mult):
    """fp32, TF32 off: mean over the photos of the whole-image PSNR (8-bit output as
    the CLI makes it) for each level, and of the degraded input."""
    model.eval()
    results = []
    for label, pairs, levels in sets:
        pin, pout = [], []
        for clean, deg in pairs:
            x = deg.to(device).float().unsqueeze(0) / 255.0
            y = forward_any_size(model, x, mult, levels)
            y8 = torch.round(y.clamp(0, 1) * 255.0)[0]
            cd = clean.to(device)
            pin.append(psnr_u8(deg.to(device), cd))
            pout.append(psnr_u8(y8, cd))
        results.append({"level": label, "input_psnr": sum(pin) / len(pin), "output_psnr": sum(pout) / len(pout),
                        "photos": len(pairs)})
    model.train()
    return results


@torch.no_grad()
def validate(model, val, device, amp):
    model.eval()
    deg, clean, levels = val
    se_in, se_out, n = 0.0, 0.0, 0
    for i in range(0, deg.shape[0], 32):
        d = deg[i:i + 32].to(device)
        c = clean[i:i + 32].to(device)
        lv = {k: v[i:i + 32] for k, v in levels.items()}
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            y = call_net(model, model, d.contiguous(memory_format=torch.channels_last), lv)
        y8 = torch.round(y.float().clamp(0, 1) * 255.0)
        c8 = torch.round(c * 255.0)
        se_in += (torch.round(d * 255.0) - c8).double().pow(2).sum().item()
        se_out += (y8 - c8).double().pow(2).sum().item()
        n += c.numel()
    model.train()
    p = lambda se: 10.0 * math.log10(255.0 ** 2 / max(se / n, 1e-12))  # noqa: E731
    return p(se_in), p(se_out)


# ---------------------------------------------------------------------------
# Check input (for the PyTorch <-> C++ equality test)


def make_check_input(path=CHECK_INPUT):
    """weights/check_input.png: the 97x75 crop of samples/coffee.png at x=300, y=215 (spoon, cup, saucer, wood),
    with Gaussian noise of sigma 25 (torch CPU generator, seed 0), 8-bit RGB."""
    from torchvision.io import encode_png

    img, _ = _load_png(os.path.join(HERE, "..", "samples", "coffee.png"))
    crop = img[:, 215:215 + 75, 300:300 + 97].contiguous()
    gen = torch.Generator().manual_seed(0)
    noisy = add_noise(crop.float().unsqueeze(0) / 255.0, torch.tensor([25.0]), gen)
    out = torch.round(noisy[0] * 255.0).to(torch.uint8)
    with open(path, "wb") as f:
        f.write(encode_png(out, compression_level=9).numpy().tobytes())
    print(f"wrote {path} ({out.shape[2]}x{out.shape[1]})")


# ---------------------------------------------------------------------------
# Checkpoints


def rng_state(gen_dev, gen_cpu):
    return {"dev": gen_dev.get_state(), "cpu": gen_cpu.get_state()}


def optimizer_state_bf16(opt):
    """The optimizer state with Adam's moment estimates stored as bf16 (a third of the
    size; they are running averages, and load_state_dict casts them back to fp32),
    so the four checkpoints and the data fit in what one GPU call can carry."""
    sd = opt.state_dict()
    sd["state"] = {i: {k: (v.detach().to("cpu", torch.bfloat16) if k in ("exp_avg", "exp_avg_sq") else v)
                       for k, v in st.items()} for i, st in sd["state"].items()}
    return sd


INT8_MIN_NUMEL = 4096  # smaller tensors (and every vector) stay fp16 in int8 checkpoints


def encode_compact(sd, weights):
    """A state dict in compact form: float tensors as fp16, or (weights int8) those of
    rank >= 2 and at least INT8_MIN_NUMEL elements as int8 with one fp32 scale per
    slice along dim 0 (symmetric, max |w| -> 127). Tensors whose values fp16 cannot
    hold stay fp32."""
    out = {}
    for k, v in sd.items():
        v = v.detach().cpu()
        if not v.is_floating_point():
            out[k] = v
        elif weights == "int8" and v.dim() >= 2 and v.numel() >= INT8_MIN_NUMEL:
            w = v.float().reshape(v.shape[0], -1)
            scale = (w.abs().amax(dim=1) / 127.0).clamp_min(1e-30)
            q = torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8).reshape(v.shape)
            out[k] = {"int8": q.contiguous(), "scale": scale}
        elif v.numel() == 0 or v.float().abs().max().item() < 60000.0:
            out[k] = v.to(torch.float16).contiguous()
        else:
            out[k] = v.float().contiguous()
    return out


def decode_compact(enc):
    """encode_compact's inverse: fp32 tensors (non-float buffers as stored)."""
    out = {}
    for k, v in enc.items():
        if isinstance(v, dict):
            out[k] = (v["int8"].float().reshape(v["int8"].shape[0], -1) * v["scale"][:, None]).reshape(v["int8"].shape)
        else:
            out[k] = v.float() if v.is_floating_point() else v
    return out


def compact_weights_mode(args, sd):
    """fp16 or int8 for a compact checkpoint of this state dict (--ckpt-weights auto:
    fp16 while the fp16 file stays within --ckpt-max-mib)."""
    if args.ckpt_weights != "auto":
        return args.ckpt_weights
    fp16_bytes = sum(v.numel() * 2 for v in sd.values() if v.is_floating_point()) + 64 * 1024 + 1024 * len(sd)
    return "fp16" if fp16_bytes <= args.ckpt_max_mib * 1024 * 1024 else "int8"


def roundtrip_error(sd, enc):
    """Relative RMS error of the compact weights: ||decoded - w|| / ||w|| over all float tensors."""
    dec = decode_compact(enc)
    num = den = 0.0
    for k, v in sd.items():
        if v.is_floating_point():
            v = v.detach().cpu().double()
            num += (dec[k].double() - v).pow(2).sum().item()
            den += v.pow(2).sum().item()
    return math.sqrt(num / max(den, 1e-300))


def save_ckpt(path, model, opt, state, gen_dev, gen_cpu, args, log=None):
    sd = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    ck = {"format": CKPT_FORMAT, "config": arch_config(args), "hyper": hyper_config(args), "jpeg_q": list(JPEG_Q),
          "jpeg_prior": list(JPEG_PRIOR), "jpeg_444": JPEG_444, "rng": rng_state(gen_dev, gen_cpu), "device_type": gen_dev.device.type,
          "name": args.name,
          **{k: v for k, v in state.items() if not k.startswith("_")}}
    if args.ckpt_mode == "compact":
        mode = compact_weights_mode(args, sd)
        ck["model"] = encode_compact(sd, mode)
        ck["compact"] = {"weights": mode, "rel_rms_error": roundtrip_error(sd, ck["model"])}
    else:
        ck["model"] = sd
        ck["optimizer"] = optimizer_state_bf16(opt)
    tmp = path + ".tmp"
    torch.save(ck, tmp)
    os.replace(tmp, path)
    if log is not None:
        log(f"wrote {path} ({os.path.getsize(path) / 2**20:.2f} MiB"
            + (f", compact: {ck['compact']['weights']} weights, relative RMS weight error "
               f"{ck['compact']['rel_rms_error']:.2e}, no optimizer moments" if "compact" in ck else "") + ")")
        if "compact" in ck and os.path.getsize(path) > args.ckpt_max_mib * 2**20:
            log(f"WARNING: {path} is over --ckpt-max-mib {args.ckpt_max_mib:g}: it does not travel to the GPU host "
                "beside the held-out shard and a training shard (weights/README.md, \"U-Nets\")")


def arch_config(args):
    if args.arch == "unshuffle":  # as before, so older checkpoints still resume
        return {"task": args.task, "channels": args.channels, "depth": args.depth, "factor": args.factor}
    return {"task": args.task, "arch": args.arch, "arch_kw": args.arch_kw}


def hyper_config(args):
    return {k: getattr(args, k) for k in ("batch", "patch", "lr", "lr_min", "warmup_steps", "weight_decay",
                                          "clip", "charbonnier_eps", "seed")}


# ---------------------------------------------------------------------------
# Description and provenance


def task_text(task):
    """(what, trained on, limits) of a task's description; made when the model is
    written, so it states the ranges of this run (--jpeg-q)."""
    return {
        "denoise": ("Blind denoiser for RGB photos with additive white Gaussian noise",
                    f"trained on noise sigma 0-{NOISE_MAX:g} (8-bit scale), one model for all levels, no noise-level input",
                    "Trained on synthetic white Gaussian noise only: real camera noise (signal-dependent, spatially "
                    "correlated after demosaicing, or already JPEG-compressed) is only partly removed; above sigma "
                    f"{NOISE_MAX:g} it is untested; at high noise fine texture is smoothed away."),
        "deblock": ("JPEG artifact remover (deblocking, deringing) for RGB photos",
                    f"trained on libjpeg baseline JPEG, {subsampling_text()}, quality {JPEG_Q[0]}-{JPEG_Q[1]}, "
                    "one model for all qualities"
                    + (f"; {100 * JPEG_PRIOR[0]:g}% of the training patches were a JPEG of quality {JPEG_PRIOR[1]}-"
                       f"{JPEG_PRIOR[2]} already (the target keeps it), as a photo that was a JPEG before"
                       if JPEG_PRIOR[0] > 0 else ""),
                    f"Trained on single-pass libjpeg {subsampling_text()} compression at quality {JPEG_Q[0]}-{JPEG_Q[1]}"
                    + (f" (and on a second pass over a first at {JPEG_PRIOR[1]}-{JPEG_PRIOR[2]} on the same 8x8 grid)"
                       if JPEG_PRIOR[0] > 0 else "")
                    + ": other encoders, " + ("4:4:4, " if JPEG_444 <= 0 else "4:2:0, " if JPEG_444 >= 1 else "")
                    + ("JPEGs recompressed on another grid or with other subsampling, resized JPEGs"
                       if JPEG_PRIOR[0] > 0 else "recompressed or resized JPEGs")
                    + " and qualities outside that range are untested; detail the "
                    "encoder threw away is not recovered, only the blocking and ringing are smoothed."),
        "deblur": ("Deblurring for RGB photos with mild Gaussian blur",
                   f"trained on Gaussian blur sigma {BLUR_S[0]:g}-{BLUR_S[1]:g} px followed by noise sigma 0-{BLUR_NOISE_MAX:g}",
                   f"Trained on Gaussian (defocus-like) blur of sigma {BLUR_S[0]:g}-{BLUR_S[1]:g} px only: motion blur, "
                   "larger blur and strongly noisy or JPEG-compressed blurred images are untested; it can over-sharpen "
                   "(halos) where the blur is weaker than it assumes."),
        "photo": ("General restoration of RGB photos whose problem is unknown (camera noise, JPEG, resampling, mild blur)",
                  "trained on the photo mix (weights/README.md): Poisson-Gaussian camera noise in linear light with "
                  "spatially correlated chroma noise, Gaussian blur, camera and web JPEG (4:2:0 or 4:4:4) and a "
                  "downscale-upscale round trip, each skipped at random, per patch",
                  "Trained on a synthetic model of camera and web processing: real sensors' noise spectra, other "
                  "in-camera processing (sharpening, strong noise reduction), motion blur and heavier damage than the "
                  "mix's ranges are untested; detail lost to compression or resampling is not recovered."),
    }[task]


def describe(args, results, rf, model=None):
    what, trained, limits = task_text(args.task)
    q = "; ".join(f"{r['level']}: {r['input_psnr']:.2f} -> {r['output_psnr']:.2f} dB" for r in results)
    n = results[0]["photos"] if results else 0
    if args.arch != "unshuffle":
        nparams = sum(p.numel() for p in model.parameters())
        cfg = model.config() if hasattr(model, "config") else args.arch_kw
        sizes = ", ".join(f"{k} {v}" for k, v in cfg.items() if k not in ("arch", "image_channels"))
        shape = f"U-Net {args.arch} ({type(model).__name__}: {sizes}; {nparams / 1e6:.2f} M parameters)"
    else:
        shape = (f"Unshuffle CNN (space_to_depth {args.factor}, {args.depth} 3x3 convolutions of width {args.channels} "
                 f"with ReLU, depth_to_space {args.factor}, plus the input" if args.factor > 1 else
                 f"Full-resolution CNN (DnCNN-like: {args.depth} 3x3 convolutions of width {args.channels} with ReLU, "
                 f"the last one plus the input") + f"; receptive field {rf} px)"
    return (f"{what}; {trained}. {shape}. "
            f"Held-out PSNR (degraded input -> output, mean over {n} held-out photos, whole image, 8-bit): {q}. "
            f"Limits: {limits}")


def loss_text(args):
    if args.loss == "psnr":
        # The held-out figure is a mean of per-photo PSNRs: each patch's -PSNR weighs a
        # patch at noise 5 as much as one at 50, where MSE lets the noisiest dominate.
        return f"PSNR (mean over the batch of each patch's 10 log10(MSE + {PSNR_LOSS_EPS:g}))"
    return "MSE" if args.loss == "mse" else f"Charbonnier (eps {args.charbonnier_eps:g})"


# The PSNR loss's floor: 50 dB, so a clean patch (noise 0) cannot pull without bound.
PSNR_LOSS_EPS = 1e-5


def git_commit():
    try:
        return subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or "unknown"
    except Exception:
        return "unknown"


def pil_version():
    import PIL
    return PIL.__version__


def subsampling_text():
    """The training JPEGs' chroma subsampling (--jpeg-444)."""
    if JPEG_444 <= 0:
        return "4:2:0"
    if JPEG_444 >= 1:
        return "4:4:4"
    return f"4:2:0 ({100 * JPEG_444:g}% of the patches 4:4:4)"


def degradation_text(task, sigma_power=1.0):
    text = degradation_of_task(task, sigma_power)
    return text + (f"; {100 * GRAY:g}% of the patches made gray first (--gray)" if GRAY > 0 else "")


def degradation_of_task(task, sigma_power):
    if task == "denoise":
        if sigma_power != 1.0:
            return f"noise sigma {NOISE_MAX:g} * u^{sigma_power:g}, u uniform [0, 1), per patch"
        return f"noise sigma uniform [0, {NOISE_MAX:g}] per patch"
    if task == "photo":
        return ("photo mix per patch (weights/README.md, PHOTO_MIX): "
                + ", ".join(f"{k} {v}" for k, v in PHOTO_MIX.items()))
    if task == "deblock":
        codec = ("libjpeg (torchvision CPU codec) baseline 4:2:0 JPEG" if JPEG_444 <= 0 else  # as before --jpeg-444
                 "libjpeg (PIL's codec) baseline 4:4:4 JPEG" if JPEG_444 >= 1 else
                 f"libjpeg baseline JPEG, 4:2:0 through torchvision's CPU codec, {100 * JPEG_444:g}% of the patches "
                 "4:4:4 through PIL's")
        quality = (f"quality uniform integer [{JPEG_Q[0]}, {JPEG_Q[1]}]" if JPEG_Q_POWER == 1.0 else
                   f"quality {JPEG_Q[0]} + floor({JPEG_Q[1] - JPEG_Q[0] + 1} * u^{JPEG_Q_POWER:g}), u uniform [0, 1) "
                   f"(--jpeg-q-power: the {'high' if JPEG_Q_POWER < 1 else 'low'} qualities more often)")
        return (f"{codec}, {quality}"
                + (f"; with probability {JPEG_PRIOR[0]:g} the clean patch is first a "
                   + ("4:2:0 " if JPEG_444 > 0 else "")  # (the words of runs before --jpeg-444 kept)
                   + f"JPEG of quality uniform integer [{JPEG_PRIOR[1]}, {JPEG_PRIOR[2]}], the target too "
                   "(--jpeg-prior)" if JPEG_PRIOR[0] > 0 else ""))
    return (f"Gaussian blur sigma uniform [{BLUR_S[0]:g}, {BLUR_S[1]:g}] px (radius ceil(3 sigma), rounded to 8 bits), "
            f"then noise sigma uniform [0, {BLUR_NOISE_MAX:g}]")


# ---------------------------------------------------------------------------


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", choices=sorted(EVAL_LEVELS), help="what the model restores")
    ap.add_argument("--arch", default="unshuffle",
                    help="network: unshuffle (the CNN below, default) or a preset of weights/architectures.py "
                         "(e.g. drunet-small, drunet-large, nafnet-small, nafnet-large: U-Nets, written as format v3 "
                         "by weights/export_graph.py)")
    ap.add_argument("--arch-kw", type=json.loads, default={},
                    help="JSON object of constructor arguments for architectures.build, overriding the preset's "
                         "sizes: e.g. --arch drunet --arch-kw '{\"widths\": [48, 96, 192, 384], \"blocks\": 3}'")
    ap.add_argument("--channels", type=int, default=64, help="C, the width (default 64)")
    ap.add_argument("--depth", type=int, default=14, help="D, the number of convolutions (default 14)")
    ap.add_argument("--factor", type=int, default=2, choices=(1, 2, 3, 4),
                    help="space_to_depth factor (default 2); 1: full resolution, no shuffles")
    ap.add_argument("--minutes", type=float, default=9.0,
                    help="wall-clock budget of this call from process start, final evaluation and writing included")
    ap.add_argument("--reserve-s", type=float, default=60.0,
                    help="seconds of --minutes kept for the final evaluation and writing (default 60)")
    ap.add_argument("--total-train-minutes", type=float, default=None,
                    help="training time the cosine schedule spans over all calls (default: the time trained "
                         "before plus this call's)")
    ap.add_argument("--finish", action="store_true",
                    help="this call ends the cosine: what is left of the schedule (from the fraction trained so far "
                         "to the end) is spread over this call's training time (for a last call)")
    ap.add_argument("--max-steps", type=int, default=None, help="stop after this many steps in total (tests)")
    ap.add_argument("--out", required=False, help="output folder for NAME.ckpt, NAME.h5, NAME.f32")
    ap.add_argument("--name", default=None, help="model name (default: the task)")
    ap.add_argument("--resume", default=None, help="checkpoint to continue from")
    ap.add_argument("--init-from", default=None,
                    help="a U-Net model file (.h5) written by this architecture: start from its weights, with a new "
                         "schedule and fresh optimizer state (e.g. to train a bundled model further when its "
                         "checkpoint is gone); not with --resume")
    ap.add_argument("--export-only", action="store_true",
                    help="with --resume: no training, write NAME.h5/.f32 from the checkpoint (its stored "
                         "evaluation is reused when it is of the same step)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--train-dir", default=os.path.join(HERE, "data", "train"))
    ap.add_argument("--heldout-dir", default=os.path.join(HERE, "data", "heldout"))
    ap.add_argument("--shard", default=None,
                    help="train on the photos of this shard (weights/data/pack_shards.py) instead of --train-dir; "
                         "each call takes the next shard and --resume's checkpoint")
    ap.add_argument("--heldout-shard", default=None,
                    help="the held-out photos from this shard (weights/data/shards/heldout.tar) instead of "
                         "--heldout-dir")
    ap.add_argument("--manifest", default=None,
                    help="dataset manifest whose sha256 goes into the provenance (default: the first of "
                         "MANIFEST.{tsv,json,csv,txt} (or lower case) next to the train folder)")
    ap.add_argument("--device", default=None, help="cuda (default when available) or cpu")
    ap.add_argument("--batch", type=int, default=None, help="batch size (default 64; U-Nets: ARCH_DEFAULTS)")
    ap.add_argument("--patch", type=int, default=None,
                    help="patch size (a multiple of 16 and of the network's size multiple; default 128)")
    ap.add_argument("--lr", type=float, default=None, help="peak learning rate (AdamW; default 5e-4; U-Nets: ARCH_DEFAULTS)")
    ap.add_argument("--lr-min", type=float, default=1e-6)
    ap.add_argument("--warmup-steps", type=int, default=300)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--clip", type=float, default=1.0, help="gradient norm clipping")
    ap.add_argument("--loss", choices=("charbonnier", "mse", "psnr"), default="charbonnier",
                    help="training loss of this call (mse: what PSNR measures, for a final fine-tune; psnr: each "
                         "patch's PSNR, so that every noise level counts alike, as in the held-out mean)")
    ap.add_argument("--ema", type=float, default=0.0, metavar="DECAY",
                    help="keep an exponential moving average of the weights (0 <= DECAY < 1, e.g. 0.999) and end "
                         "the call with it: the final evaluation, checkpoint and model file are the average's; the "
                         "checkpoints and evaluations during the call are of the last weights, and a resumed call "
                         "starts a new average (default 0: off)")
    ap.add_argument("--charbonnier-eps", type=float, default=1e-3)
    ap.add_argument("--sigma-power", type=float, default=1.0,
                    help="denoise: sigma = 55 * u^P with u uniform (1: uniform; above 1: low levels more often)")
    ap.add_argument("--no-amp", action="store_true", help="fp32 training (default on CUDA: bf16 autocast)")
    ap.add_argument("--val-count", type=int, default=64, help="validation patches")
    ap.add_argument("--ckpt-every-s", type=float, default=60.0)
    ap.add_argument("--ckpt-mode", choices=("full", "compact"), default=None,
                    help="full: fp32 model + optimizer (the unshuffle default); compact (the U-Net default): the "
                         "weights in --ckpt-weights precision, no optimizer moments (rebuilt on resume with "
                         "--rewarmup-steps of linear lr warm-up), so a big net's checkpoint fits what a GPU call carries")
    ap.add_argument("--ckpt-weights", choices=("auto", "fp16", "int8"), default="auto",
                    help="compact checkpoints: fp16, or int8 per output channel (fp16 scales; vectors and small "
                         "tensors stay fp16); auto: fp16 when the file stays within --ckpt-max-mib, else int8")
    ap.add_argument("--ckpt-max-mib", type=float, default=15.0,
                    help="compact checkpoints, --ckpt-weights auto: the size budget (default 15 MiB: what is left of "
                         "the 64 MiB a call carries after the tree, the held-out shard and one training shard)")
    ap.add_argument("--rewarmup-steps", type=int, default=None,
                    help="after resuming from a compact checkpoint: linear lr warm-up over this many steps while "
                         "Adam's moments are rebuilt (default 200)")
    ap.add_argument("--eval-every-s", type=float, default=0.0,
                    help="also run the held-out evaluation every this many training seconds (0: only at the end of "
                         "the call); each one is a line of NAME.curve.jsonl; its time is not training time")
    ap.add_argument("--eval-photos", type=int, default=0,
                    help="evaluate on the first N held-out photos only (0: all; for smoke tests)")
    ap.add_argument("--eval-crop", type=int, default=0,
                    help="evaluate on the centre SxS crop of each held-out photo (0: whole photos; for smoke tests)")
    ap.add_argument("--compile", choices=("auto", "on", "off"), default="auto",
                    help="torch.compile the training forward/backward (auto: on CUDA for nafnet-*)")
    ap.add_argument("--log-every-s", type=float, default=30.0)
    ap.add_argument("--jpeg-workers", type=int, default=6)
    ap.add_argument("--jpeg-q", default=None, metavar="LO,HI",
                    help=f"deblock: the JPEG qualities trained on, uniform integer in [LO, HI] (default {JPEG_Q[0]},{JPEG_Q[1]}; "
                         "give the same range in every call of a run)")
    ap.add_argument("--jpeg-q-power", type=float, default=1.0, metavar="P",
                    help="deblock: quality = LO + floor((HI - LO + 1) * u^P), u uniform (1: uniform; below 1: the high "
                         "qualities more often); per call, as --gray")
    ap.add_argument("--jpeg-prior", default=None, metavar="P,LO,HI",
                    help="deblock: with probability P a training patch (and its target) is first a JPEG of quality "
                         "uniform integer in [LO, HI], as a photo that was a JPEG before (default: never; kept in "
                         "the checkpoint)")
    ap.add_argument("--jpeg-444", type=float, default=None, metavar="P",
                    help="deblock: the share of training patches JPEG'd 4:4:4 (full-resolution chroma) instead of "
                         "4:2:0 (default 0; kept in the checkpoint)")
    ap.add_argument("--gray", type=float, default=0.0, metavar="P",
                    help="the share of training patches made gray (R = G = B = their luma) before they are degraded, "
                         "so the network also learns black-and-white photos (default 0; per call)")
    ap.add_argument("--cpu-threads", type=int, default=2, help="torch CPU threads (on CUDA)")
    ap.add_argument("--license", default=None, help="license attribute of the .h5")
    ap.add_argument("--weight-dtype", choices=("auto", "float32", "float16"), default="auto",
                    help="how the .h5 stores the weights (auto: float16, format v4, for U-Nets; float32 otherwise)")
    ap.add_argument("--make-check-input", action="store_true", help="(re)write weights/check_input.png and exit")
    args = ap.parse_args(argv)
    if not args.make_check_input and ((args.task is None and not args.export_only) or args.out is None):
        ap.error("--task (except with --export-only) and --out are required")
    if args.patch is not None and args.patch % 16:
        ap.error("--patch must be a multiple of 16")
    if args.export_only and not args.resume:
        ap.error("--export-only needs --resume")
    if not 0.0 <= args.ema < 1.0:
        ap.error(f"--ema {args.ema:g}: the decay must be at least 0 and below 1 (0: off)")
    if args.init_from and args.resume:
        ap.error("--init-from starts a new run from a model file; --resume continues a checkpoint: not both")
    if args.init_from and args.arch == "unshuffle":
        ap.error("--init-from takes a U-Net's model file (--arch drunet..., nafnet...)")
    if args.jpeg_q is not None:
        try:
            lo, hi = (int(v) for v in args.jpeg_q.split(","))
        except ValueError:
            ap.error(f"--jpeg-q {args.jpeg_q}: expected LO,HI (two qualities, e.g. 5,95)")
        if not 1 <= lo <= hi <= 100:
            ap.error(f"--jpeg-q {args.jpeg_q}: expected 1 <= LO <= HI <= 100")
        set_jpeg_q((lo, hi))  # for the whole run (the JPEG workers are forked after)
    if not 0 <= args.gray <= 1:
        ap.error(f"--gray {args.gray:g}: expected a share 0..1")
    set_gray(args.gray)  # before the JPEG workers are forked
    if not 0 < args.jpeg_q_power <= 10:
        ap.error(f"--jpeg-q-power {args.jpeg_q_power:g}: expected 0 < P <= 10")
    if args.jpeg_q_power != 1.0 and args.task not in (None, "deblock"):
        ap.error(f"--jpeg-q-power is for --task deblock (its training JPEGs), not {args.task}")
    set_jpeg_q_power(args.jpeg_q_power)
    if args.jpeg_prior is not None:
        if args.task not in (None, "deblock"):
            ap.error(f"--jpeg-prior is for --task deblock (its training JPEGs), not {args.task}")
        try:
            p, lo, hi = args.jpeg_prior.split(",")
            p, lo, hi = float(p), int(lo), int(hi)
        except ValueError:
            ap.error(f"--jpeg-prior {args.jpeg_prior}: expected P,LO,HI (e.g. 0.3,70,98)")
        if not (0 < p <= 1 and 1 <= lo <= hi <= 100):
            ap.error(f"--jpeg-prior {args.jpeg_prior}: expected 0 < P <= 1 and 1 <= LO <= HI <= 100")
        set_jpeg_prior((p, lo, hi))
    if args.jpeg_444 is not None:
        if args.task not in (None, "deblock"):
            ap.error(f"--jpeg-444 is for --task deblock (its training JPEGs), not {args.task}")
        if not 0 <= args.jpeg_444 <= 1:
            ap.error(f"--jpeg-444 {args.jpeg_444:g}: expected a share 0..1")
        set_jpeg_444(args.jpeg_444)
    return args


def find_manifest(args):
    if args.manifest:
        return args.manifest
    base = os.path.dirname(os.path.abspath(args.train_dir.rstrip("/")))
    for stem in ("MANIFEST", "manifest"):
        for ext in ("tsv", "json", "csv", "txt"):
            p = os.path.join(base, f"{stem}.{ext}")
            if os.path.exists(p):
                return p
    return None


def apply_arch_defaults(args):
    """Fills the options left unset with the architecture family's defaults."""
    d = arch_defaults(args.arch)
    for k in ("batch", "patch", "lr", "ckpt_mode", "rewarmup_steps"):
        if getattr(args, k) is None:
            setattr(args, k, d[k])


def main(argv=None):
    args = parse_args(argv)
    if args.make_check_input:
        make_check_input()
        return 0
    deadline = START + args.minutes * 60.0
    train_deadline = deadline - args.reserve_s
    log = lambda *a: print(f"{time.time() - START:7.1f}s", *a, flush=True)  # noqa: E731

    ck = None
    if args.resume:
        ck = torch.load(args.resume, map_location="cpu", weights_only=False)
        if ck.get("format") != CKPT_FORMAT:
            raise SystemExit(f"train.py: {args.resume} is not a {CKPT_FORMAT} checkpoint")
        cfg = ck["config"]
        if args.export_only:
            args.task, args.arch, args.arch_kw = cfg["task"], cfg.get("arch", "unshuffle"), cfg.get("arch_kw", {})
            if args.arch == "unshuffle":
                args.channels, args.depth = cfg["channels"], cfg["depth"]
                args.factor = cfg.get("factor", args.factor)
            for k, v in ck.get("hyper", {}).items():
                setattr(args, k, v)
        elif cfg != arch_config(args):
            raise SystemExit(f"train.py: {args.resume} is {cfg}, not {arch_config(args)}")
        # The JPEG qualities of the run go on with it; another range would
        # mislabel it. (Checkpoints from before --jpeg-q record none: the
        # command line's range goes on.)
        if "jpeg_q" in ck:
            saved_q = tuple(ck["jpeg_q"])
            if args.jpeg_q is not None and tuple(JPEG_Q) != saved_q:
                raise SystemExit(f"train.py: {args.resume} was trained on JPEG quality {saved_q[0]}-{saved_q[1]}, "
                                 f"not --jpeg-q {args.jpeg_q}")
            set_jpeg_q(saved_q)
        if "jpeg_prior" in ck or args.jpeg_prior is not None:
            # A checkpoint from before --jpeg-prior trained without one: a
            # prior given on resuming it would change the run's data midway.
            saved_prior = tuple(ck.get("jpeg_prior", (0.0, 0, 0)))
            if args.jpeg_prior is not None and tuple(JPEG_PRIOR) != saved_prior:
                raise SystemExit(f"train.py: {args.resume} was trained with "
                                 + (f"--jpeg-prior {','.join(map(str, saved_prior))}" if saved_prior[0] > 0
                                    else "no --jpeg-prior") + f", not --jpeg-prior {args.jpeg_prior}")
            set_jpeg_prior(saved_prior)
        if "jpeg_444" in ck or args.jpeg_444 is not None:  # the same for the 4:4:4 share
            saved_444 = float(ck.get("jpeg_444", 0.0))
            if args.jpeg_444 is not None and JPEG_444 != saved_444:
                raise SystemExit(f"train.py: {args.resume} was trained with --jpeg-444 {saved_444:g}, "
                                 f"not --jpeg-444 {args.jpeg_444:g}")
            set_jpeg_444(saved_444)
    apply_arch_defaults(args)
    default_name = args.task if args.arch == "unshuffle" else f"{args.task}-{args.arch}"
    args.name = args.name or (ck.get("name") if ck is not None and args.export_only else None) or default_name

    os.makedirs(args.out, exist_ok=True)
    paths = {k: os.path.join(args.out, f"{args.name}.{k}") for k in ("ckpt", "h5", "f32")}
    paths["curve"] = os.path.join(args.out, f"{args.name}.curve.jsonl")
    want_cuda = args.device in (None, "cuda") and not (args.device is None and not _cuda_present())
    margin = {"deblur": int(math.ceil(3 * BLUR_S[1])), "photo": PHOTO_MARGIN}.get(args.task, 0)
    torch.set_num_threads(args.cpu_threads if want_cuda else max(1, os.cpu_count() or 1))

    torch.manual_seed(args.seed)
    model = build_model(args)  # before the data: a bad --patch fails at once
    task_level = TASK_LEVEL.get(args.task)
    if level_input(model) not in (None, task_level):
        raise SystemExit(f"train.py: --task {args.task} gives {task_level or 'no level'}; the model takes "
                         f"{level_input(model)}")
    init_from = init_from_model_file(model, args.init_from, log) if args.init_from else None
    mult = size_multiple(model)
    if args.patch % mult:
        raise SystemExit(f"train.py: --patch {args.patch} is not a multiple of {args.arch}'s size multiple {mult}")

    # Data (CPU), then the JPEG worker processes (forked before CUDA starts).
    feeder = None
    train_info = {}
    shard_index = None
    if not args.export_only:
        if args.shard:
            tnames, tphotos, tdigest, shard_index = load_shard(args.shard, "train")
            train_info = {"photos": len(tnames), "digest": tdigest, "shard": shard_text(args.shard, shard_index, tdigest)}
        else:
            tnames, tphotos, tdigest = load_folder(args.train_dir)
            train_info = {"photos": len(tnames), "digest": tdigest}
            manifest = find_manifest(args)
            if manifest:
                train_info["manifest"] = f"{os.path.relpath(manifest, os.path.join(HERE, '..'))} sha256 {sha256_file(manifest)}"
        train_info["pixels"] = sum(p[0].numel() for p in tphotos)
        log(f"train: {len(tnames)} photos, {train_info['pixels'] / 1e6:.1f} MP, set sha256 {tdigest[:16]}"
            + (f", {train_info['shard']}" if args.shard else ""))
    if args.heldout_shard:
        hnames, hphotos, hdigest, hindex = load_shard(args.heldout_shard, "heldout")
        heldout_source = shard_text(args.heldout_shard, hindex, hdigest)
    else:
        hnames, hphotos, hdigest = load_folder(args.heldout_dir)
        heldout_source = "weights/data/heldout"
    log(f"held out: {len(hnames)} photos, {sum(p[0].numel() for p in hphotos) / 1e6:.1f} MP, set sha256 {hdigest[:16]}")
    if not args.export_only:
        patches = PhotoPatches(tphotos, args.patch + 2 * margin, None)
        del tphotos
        if patches.skipped:
            log(f"skipped {patches.skipped} training photos smaller than {patches.size}x{patches.size}")
        if args.task == "deblock":
            feeder = JpegFeeder(patches, args.batch, args.jpeg_workers, ahead=2 * args.jpeg_workers)

    device = torch.device("cuda" if want_cuda else "cpu")
    amp = device.type == "cuda" and not args.no_amp
    # TF32 off everywhere: training runs in bf16 anyway, and the degradations and
    # the final fp32 evaluation must be plain fp32.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    gen_dev = torch.Generator(device=device).manual_seed(args.seed)
    gen_cpu = torch.Generator().manual_seed(args.seed + 1)

    model = model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.99), weight_decay=args.weight_decay)
    state = {"step": 0, "train_seconds": 0.0, "patches": 0, "calls": [], "curve": []}
    if init_from:
        state["init_from"] = init_from
    if ck is not None:
        if ck.get("compact"):
            model.load_state_dict(decode_compact(ck["model"]))
            state["_rewarmup_from"] = ck["step"]  # Adam's moments start afresh: warm the lr up again
        else:
            model.load_state_dict(ck["model"])
            opt.load_state_dict(ck["optimizer"])
        if ck.get("device_type") == device.type:  # a CUDA generator state does not fit a CPU one
            gen_dev.set_state(ck["rng"]["dev"])
        gen_cpu.set_state(ck["rng"]["cpu"])
        for k in list(state):
            if not k.startswith("_"):
                state[k] = ck.get(k, state[k])
        for k in ("final_eval", "final_eval_step", "train_info", "val", "schedule_seconds", "init_from"):
            if k in ck:
                state[k] = ck[k]
        log(f"resumed {args.resume}: step {state['step']}, {state['train_seconds']:.0f} s trained"
            + (f", compact checkpoint ({ck['compact']['weights']} weights; Adam's moments rebuilt with "
               f"{args.rewarmup_steps} steps of lr warm-up)" if ck.get("compact") else ""))
    if args.total_train_minutes is not None:  # one schedule over all calls; kept in the checkpoint
        if state.get("schedule_seconds") not in (None, args.total_train_minutes * 60.0):
            log(f"note: the schedule was over {state['schedule_seconds']:.0f} s, now {args.total_train_minutes * 60:.0f} s")
        state["schedule_seconds"] = args.total_train_minutes * 60.0
    model = model.to(memory_format=torch.channels_last)
    nparams = sum(p.numel() for p in model.parameters())
    if not args.export_only:
        state["train_info"] = train_info

    eval_photos = hphotos[:args.eval_photos] if args.eval_photos else hphotos
    if args.eval_crop:
        eval_photos = [center_crop(p, args.eval_crop) for p in eval_photos]
    eval_sets = None
    if not (args.export_only and state.get("final_eval_step") == state["step"]):
        eval_sets = eval_set(args.task, eval_photos)
    val = None
    if not args.export_only:
        val = validation_set(args.task, hphotos, args.val_count, args.patch, margin)

    call = {"start_step": state["step"], "device": device_name(device), "minutes": args.minutes,
            "precision": "bf16 autocast, channels_last" if amp else "fp32, channels_last",
            "loss": loss_text(args), "degradation": degradation_text(args.task, args.sigma_power)}
    if shard_index is not None:
        call["shard"] = train_info["shard"]
        call["shard_file"] = os.path.basename(args.shard)
    heldout_text = (f"{len(eval_photos)} of {len(hphotos)} held-out photos"
                    + (f", centre {args.eval_crop}x{args.eval_crop} crops" if args.eval_crop else ""))
    evaluator = Evaluator(model, eval_sets, device, mult, state, paths["curve"], call, heldout_text, log)
    if not args.export_only:
        patches.device = device
        patches.to_device()
        if feeder is not None:
            feeder.patches = CpuParams(patches)
            feeder.start(device, gen_cpu)
        else:
            patches.flat_np = None  # the device copy is the one in use
        train(args, model, opt, state, patches, feeder, val, gen_dev, gen_cpu, device, amp, margin, train_deadline,
              paths, log, call, evaluator)
        if feeder is not None:
            feeder.close()

    # Final: checkpoint, fp32 evaluation, model file, check output.
    torch.backends.cudnn.benchmark = False
    model = model.to(memory_format=torch.contiguous_format).float()
    evaluator.model = model
    if eval_sets is not None:
        t0 = time.time()
        state["final_eval"] = evaluator.run(final=True, lr=call.get("last_lr"))
        state["final_eval_step"] = state["step"]
        call["eval_seconds"] = round(time.time() - t0, 1)
    state["heldout_info"] = {"photos": len(hnames), "digest": hdigest, "source": heldout_source,
                             "evaluated": heldout_text}
    call["end_step"] = state["step"]
    if not args.export_only:
        state["calls"] = list(state["calls"]) + [call]
        save_ckpt(paths["ckpt"], model, opt, state, gen_dev, gen_cpu, args, log)
    export(args, model, state, paths, device, nparams, mult, log)
    if shard_index is not None:
        k = (shard_index["shard"] + 1) % shard_index["shards"]
        log(f"next call: --shard train-{k:02d}.tar ({k + 1} of {shard_index['shards']}) --resume {paths['ckpt']}")
    log(f"done in {time.time() - START:.0f} s (budget {args.minutes * 60:.0f} s)")
    return 0


def init_from_model_file(model, path, log):
    """Loads into `model` the weights of a model file that weights/export_graph.py
    wrote from this architecture (each weighted stage is named after its module:
    stage NAME's weight and bias are NAME.weight and NAME.bias), then checks that
    every parameter was given one and that exporting the model again gives the
    file's stages back; raises SystemExit naming what does not fit. Returns how
    the provenance names the file.
    A model with a level input (architectures.py) may start from a file of the
    same network without one: the head's weights for the image channels come
    from the file, those for the level's plane are zero, so it starts as the
    file's model whatever the level, and learns to use it."""
    sys.path.insert(0, HERE)
    import export_graph
    import imrestore_model as im
    try:
        m = im.read_model(path)
    except (im.ModelError, OSError) as e:
        raise SystemExit(f"train.py: --init-from {path}: {e}")
    params = dict(model.named_parameters())
    assigned = set()
    file_levels = m.get("extra_inputs") or []
    if file_levels and file_levels != [level_input(model)]:
        raise SystemExit(f"train.py: --init-from {path}: the file takes {', '.join(file_levels)}, the model "
                         f"{level_input(model) or 'no level'}")
    added_level = level_input(model) if not file_levels else None
    with torch.no_grad():
        for i, st in enumerate(m["stages"]):
            for key in im.OPS[st["op"]].datasets:
                if st.get(key) is None:
                    continue
                pname = f"{st.get('name', i)}.{key}"
                p = params.get(pname)
                src = torch.from_numpy(np.asarray(st[key], np.float32))
                if (added_level and pname == "head.weight" and p is not None and src.dim() == 4
                        and tuple(p.shape) == (src.shape[0], src.shape[1] + 1) + tuple(src.shape[2:])):
                    p.zero_()
                    p[:, :src.shape[1]].copy_(src)  # the level's plane: weight 0
                    assigned.add(pname)
                    continue
                if p is None or tuple(p.shape) != tuple(src.shape) or pname in assigned:
                    raise SystemExit(f"train.py: --init-from {path}: stage {i} ({st['op']}) {key} "
                                     f"{list(src.shape)} is no parameter '{pname}' of {args_arch_name(model)}"
                                     + (f" (that is {list(p.shape)})" if p is not None else ""))
                p.copy_(src)
                assigned.add(pname)
    missing = sorted(set(params) - assigned)
    if missing:
        raise SystemExit(f"train.py: --init-from {path}: no stage holds {', '.join(missing[:4])}"
                         + (f" and {len(missing) - 4} more" if len(missing) > 4 else ""))
    stages, _, _ = export_graph.graph_stages(model, m["channels"])
    if added_level:  # the level's concat comes first; the rest must be the file's
        if not stages or stages[0]["op"] != "concat":
            raise SystemExit(f"train.py: --init-from {path}: the model with {added_level} does not export a concat first")
        stages = stages[1:]
        head = [i for i, st in enumerate(stages) if st.get("name") == "head"]
        file_head = [st for st in m["stages"] if st.get("name") == "head"]
        if len(head) != 1 or len(file_head) != 1:
            raise SystemExit(f"train.py: --init-from {path}: no one stage named head in the file and the model")
        stages[head[0]] = dict(stages[head[0]], weight=np.asarray(stages[head[0]]["weight"])[:, :file_head[0]["weight"].shape[1]])
    for i, (a, b) in enumerate(zip(stages, m["stages"])):
        for key in im.OPS[a["op"]].datasets:
            if a.get(key) is not None and not np.array_equal(np.asarray(a[key], np.float32), b.get(key)):
                raise SystemExit(f"train.py: --init-from {path}: stage {i} ({a['op']}) {key} does not export back "
                                 "as the file holds it (a folded layer?)")
    if len(stages) != len(m["stages"]):
        raise SystemExit(f"train.py: --init-from {path}: {len(m['stages'])} stages, the architecture exports "
                         f"{len(stages)}")
    text = f"{os.path.basename(path)} (sha256 {sha256_file(path)[:16]}, model '{m['name']}')"
    if added_level:
        text += f", with a {added_level} input added (its head weights zero)"
    log(f"initialized from {text}: {len(assigned)} parameters")
    return text


def args_arch_name(model):
    return type(model).__name__


def center_crop(p, s):
    h, w = p.shape[1], p.shape[2]
    y, x = max(0, (h - s) // 2), max(0, (w - s) // 2)
    return p[:, y:y + s, x:x + s].contiguous()


class Evaluator:
    """The held-out evaluation (evaluate_full) at any point of training: logs it,
    appends it to state['curve'] and rewrites NAME.curve.jsonl (one JSON object a
    line: step, cumulative training seconds, the PSNR per level, the call, the shard)."""

    def __init__(self, model, sets, device, mult, state, path, call, heldout_text, log):
        self.model, self.sets, self.device, self.mult = model, sets, device, mult
        self.state, self.path, self.call, self.heldout_text, self.log = state, path, call, heldout_text, log

    def run(self, final=False, lr=None):
        if self.sets is None:
            return None
        t0 = time.time()
        bench = torch.backends.cudnn.benchmark
        torch.backends.cudnn.benchmark = False  # every photo has its own size
        res = evaluate_full(self.model, self.sets, self.device, self.mult)
        torch.backends.cudnn.benchmark = bench
        secs = time.time() - t0
        for r in res:
            self.log(f"held-out {r['level']}: input {r['input_psnr']:.2f} dB -> output {r['output_psnr']:.2f} dB "
                     f"({r['photos']} photos, fp32, {secs:.1f} s; step {self.state['step']}, "
                     f"{self.state['train_seconds']:.0f} s trained)")
        point = {"step": self.state["step"], "train_seconds": round(self.state["train_seconds"], 2),
                 "call": len(self.state.get("calls") or []) + 1, "final": final,
                 "heldout": {r["level"]: round(r["output_psnr"], 4) for r in res},
                 "heldout_input": {r["level"]: round(r["input_psnr"], 4) for r in res},
                 "photos": self.heldout_text, "shard": self.call.get("shard_file"), "lr": lr,
                 "eval_seconds": round(secs, 1), "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        if not self.state["curve"] or self.state["curve"][-1]["step"] != point["step"]:
            self.state["curve"] = list(self.state["curve"]) + [point]
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            for p in self.state["curve"]:
                f.write(json.dumps(p, sort_keys=True) + "\n")
        os.replace(tmp, self.path)
        return res


def _cuda_present():
    try:
        return torch.cuda.is_available()
    except Exception:
        return False


def device_name(device):
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"CPU ({platform.processor() or platform.machine()})"


def use_compile(args, device):
    if args.compile == "auto":
        return device.type == "cuda" and arch_defaults(args.arch)["compile"]
    return args.compile == "on"


def compile_model(args, model, device, amp, log):
    """torch.compile of the training forward (the module itself stays uncompiled for
    validation and evaluation, whose shapes vary). Compiles it with one forward and
    backward pass on random data outside the training clock (no optimizer step, no
    draw from the training generators)."""
    if not use_compile(args, device):
        return model, 0.0
    t0 = time.time()
    model.train()  # compiled for training mode (NAFNet's attention pools differently in eval)
    try:
        fwd = torch.compile(model)
        g = torch.Generator(device=device).manual_seed(0)
        x = torch.rand(args.batch, 3, args.patch, args.patch, generator=g, device=device)
        x = x.contiguous(memory_format=torch.channels_last)
        example_levels = {k: torch.full((args.batch,), v, device=device) for k, v in CHECK_LEVELS.items()}
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            y = call_net(fwd, model, x, example_levels)
        y.float().mean().backward()
        if device.type == "cuda":
            torch.cuda.synchronize()
    except Exception as e:  # a compiler that fails here must not cost the call: train eagerly
        log(f"torch.compile failed ({type(e).__name__}: {str(e)[:500]}); training without it")
        fwd = model
    model.zero_grad(set_to_none=True)
    secs = time.time() - t0
    if fwd is not model:
        log(f"torch.compile: {secs:.1f} s (not counted as training time)")
    return fwd, (secs if fwd is not model else 0.0)


def train(args, model, opt, state, patches, feeder, val, gen_dev, gen_cpu, device, amp, margin, train_deadline,
          paths, log, call, evaluator):
    fwd, call["compile_seconds"] = compile_model(args, model, device, amp, log)
    torch.backends.cudnn.benchmark = device.type == "cuda"
    model.train()
    t_loop = time.time()
    prev_seconds = state["train_seconds"]
    if state.get("schedule_seconds"):  # one schedule over several calls (--total-train-minutes)
        total = max(1.0, state["schedule_seconds"])
    else:  # re-planned by each call: what was trained before plus what this call has
        total = prev_seconds + max(1.0, train_deadline - t_loop)
    frac0 = min(1.0, prev_seconds / total)
    this_call = max(1.0, train_deadline - t_loop)
    if args.finish:
        call["finish"] = True
    call["schedule_seconds"] = round(total, 1)
    rewarm_from = state.get("_rewarmup_from")
    name = (f"C={args.channels} D={args.depth}" if args.arch == "unshuffle" else args.arch)
    log(f"training {args.task}: {name}, {sum(p.numel() for p in model.parameters())} "
        f"parameters, batch {args.batch} x {args.patch}^2, {'bf16 autocast' if amp else 'fp32'}"
        f"{', torch.compile' if fwd is not model else ''} on {device_name(device)}; "
        f"{max(0.0, train_deadline - t_loop):.0f} s this call, cosine over {total:.0f} s of training"
        f" (at {frac0:.1%} now{', ending in this call' if args.finish else ''})"
        + (f"; lr re-warm-up over {args.rewarmup_steps} steps (compact checkpoint)" if rewarm_from is not None else ""))
    if val is not None:
        vin, vout = validate(model, val, device, amp)
        log(f"step {state['step']}: val PSNR {vin:.2f} -> {vout:.2f} dB")
    paused = 0.0
    last_log = last_ckpt = time.time()
    last_eval = prev_seconds
    steps0, loss_acc, loss_n = state["step"], torch.zeros((), device=device), 0
    lr = 0.0
    params = [p for p in model.parameters()]
    ema = [p.detach().clone() for p in params] if args.ema > 0 else None
    while True:
        now = time.time()
        elapsed = now - t_loop - paused
        if now >= train_deadline or (args.max_steps is not None and state["step"] >= args.max_steps):
            break
        if args.eval_every_s and prev_seconds + elapsed - last_eval >= args.eval_every_s:
            t0 = time.time()
            state["train_seconds"] = prev_seconds + elapsed
            evaluator.run(lr=lr)
            last_eval = state["train_seconds"]
            paused += time.time() - t0
            continue
        if args.finish:
            frac = min(1.0, frac0 + (1.0 - frac0) * (now - t_loop) / this_call)  # wall clock: ends at the deadline
        else:
            frac = min(1.0, (prev_seconds + elapsed) / total)
        lr = args.lr_min + 0.5 * (args.lr - args.lr_min) * (1.0 + math.cos(math.pi * frac))
        if state["step"] < args.warmup_steps:
            lr *= (state["step"] + 1) / args.warmup_steps
        if rewarm_from is not None and state["step"] - rewarm_from < args.rewarmup_steps:
            lr *= (state["step"] - rewarm_from + 1) / args.rewarmup_steps
        for g in opt.param_groups:
            g["lr"] = lr
        deg, clean, levels = make_batch(args.task, patches, feeder, args.batch, args.patch, margin, gen_dev,
                                        args.sigma_power)
        deg = deg.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            out = call_net(fwd, model, deg, levels)
        diff = out.float() - clean
        if args.loss == "mse":
            loss = (diff * diff).mean()
        elif args.loss == "psnr":
            loss = 10.0 * torch.log10((diff * diff).mean(dim=(1, 2, 3)) + PSNR_LOSS_EPS).mean()
        else:
            loss = torch.sqrt(diff * diff + args.charbonnier_eps ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        if ema is not None:
            torch._foreach_lerp_(ema, params, 1.0 - args.ema)
        loss_acc += loss.detach()
        loss_n += 1
        state["step"] += 1
        state["patches"] += args.batch
        now = time.time()
        if now - last_log >= args.log_every_s or now - last_ckpt >= args.ckpt_every_s:
            t0 = time.time()
            state["train_seconds"] = prev_seconds + (t0 - t_loop - paused)
            rate = (state["step"] - steps0) / max(1e-9, t0 - last_log)
            msg = (f"step {state['step']}: loss {loss_acc.item() / max(1, loss_n):.5f}, lr {lr:.2e}, "
                   f"{rate:.1f} steps/s, {state['train_seconds']:.0f} s trained")
            loss_acc.zero_()
            loss_n, steps0, last_log = 0, state["step"], now
            if now - last_ckpt >= args.ckpt_every_s:
                vin, vout = validate(model, val, device, amp)
                state["val"] = {"step": state["step"], "input_psnr": vin, "output_psnr": vout}
                msg += f"; val PSNR {vin:.2f} -> {vout:.2f} dB"
                save_ckpt(paths["ckpt"], model, opt, state, gen_dev, gen_cpu, args)
                last_ckpt = time.time()
                msg += ", checkpoint"
            log(msg)
            paused += time.time() - t0
    if device.type == "cuda":
        torch.cuda.synchronize()
    state["train_seconds"] = prev_seconds + (time.time() - t_loop - paused)
    vin, vout = validate(model, val, device, amp)
    if ema is not None:  # the call ends with the average: say what it is worth on the same patches
        with torch.no_grad():
            for p, e in zip(params, ema):
                p.copy_(e)
        raw = vout
        vin, vout = validate(model, val, device, amp)
        call["ema"] = {"decay": args.ema, "val_psnr_last_weights": raw, "val_psnr_average": vout}
        log(f"weight average (decay {args.ema:g}): val PSNR {raw:.3f} dB (last weights) -> {vout:.3f} dB (average)")
    state["val"] = {"step": state["step"], "input_psnr": vin, "output_psnr": vout}
    call["train_seconds"] = round(state["train_seconds"] - prev_seconds, 1)
    call["last_lr"] = lr
    log(f"step {state['step']}: training ends after {state['train_seconds']:.0f} s in total "
        f"({state['patches']} patches); val PSNR {vin:.2f} -> {vout:.2f} dB")


@torch.no_grad()
def export(args, model, state, paths, device, nparams, mult, log):
    """Writes NAME.f32 (torch fp32 output for check_input.png) and NAME.h5 (unshuffle:
    format v2 via imrestore_model; U-Nets: format v3 via weights/export_graph.py, v4
    with float16 weights, --weight-dtype), and
    checks the numpy float64 forward of the written file against torch."""
    img, _ = _load_png(CHECK_INPUT)
    x = img.float().unsqueeze(0).to(device) / 255.0
    model.eval()
    if weight_dtype(args) == "float16":  # the weights the file will hold, so NAME.f32 is their output
        for p in model.parameters():
            p.copy_(p.half().float())
        log("weights rounded to float16 for the model file (format v4), after the checkpoint and the evaluation")
    y = forward_any_size(model, x, mult, CHECK_LEVELS).float().cpu().contiguous()
    with open(paths["f32"], "wb") as f:
        f.write(y.numpy().astype("<f4").tobytes())
    log(f"wrote {paths['f32']} ({list(y.shape)} float32, fp32 torch output for {os.path.basename(CHECK_INPUT)})")
    try:
        sys.path.insert(0, HERE)
        import imrestore_model as im
    except ImportError as e:
        log(f"NOT writing {paths['h5']}: {e} (run train.py --resume {paths['ckpt']} --export-only where h5py is)")
        return
    res = state.get("final_eval") or []
    quality = {"step": state.get("final_eval_step"), "heldout": res, "val_patches": state.get("val"),
               "heldout_evaluated": (state.get("heldout_info") or {}).get("evaluated"),
               "curve": state.get("curve") or []}
    if args.arch == "unshuffle":
        stages = model.stages()
        rf = im.receptive_field(stages)
        im.write_model(paths["h5"], args.name, args.task, describe(args, res, rf), provenance_text(args, state, nparams),
                       3, stages, license=args.license, extra_attrs={"quality_json": json.dumps(quality)},
                       weight_dtype=weight_dtype(args))
    else:
        try:
            import export_graph
        except Exception as e:  # not there yet, or broken: the checkpoint still has the weights
            log(f"NOT writing {paths['h5']}: weights/export_graph.py is not importable ({type(e).__name__}: {e}); "
                f"{paths['ckpt']} holds the weights: train.py --resume {paths['ckpt']} --export-only --out DIR "
                f"writes it where export_graph.py is")
            return
        write_unet_model(export_graph, args, model, paths["h5"], describe(args, res, None, model),
                         provenance_text(args, state, nparams, model), quality)
    m = im.read_model(paths["h5"])
    try:
        ref = im.apply_model(m, img.numpy().astype(np.float64) / 255.0,
                             {k: CHECK_LEVELS[k] for k in m.get("extra_inputs") or []})
    except Exception as e:  # a reader that cannot run this graph yet
        log(f"wrote {paths['h5']} (format_version {m.get('format_version')}); NOT checked: "
            f"imrestore_model.apply_model: {type(e).__name__}: {e}")
        return
    diff = float(np.abs(ref - y[0].numpy().astype(np.float64)).max())
    log(f"wrote {paths['h5']} (format_version {m['format_version']}, receptive field {m.get('receptive_field')}); "
        f"numpy float64 forward vs torch fp32 on {os.path.basename(CHECK_INPUT)}: max |diff| {diff:.2e}")
    if diff > 1e-4:
        log("WARNING: the numpy forward of the written file differs from torch by more than 1e-4")


def weight_dtype(args):
    """How NAME.h5 stores the weights: --weight-dtype, where auto is float16
    (format v4, half the file) for the U-Nets and float32 for the small
    unshuffle CNNs (whose files stay as they were)."""
    if args.weight_dtype != "auto":
        return args.weight_dtype
    return "float32" if args.arch == "unshuffle" else "float16"


def write_unet_model(export_graph, args, model, path, description, provenance, quality):
    """A U-Net as format v3 (v4 with float16 weights) through weights/export_graph.py."""
    model = model.to("cpu", memory_format=torch.contiguous_format).float().eval()
    export_graph.export_model(model, path, args.name, args.task, description, provenance, license=args.license,
                              extra_attrs={"quality_json": json.dumps(quality)}, weight_dtype=weight_dtype(args))


def arch_text(args, model, nparams):
    if args.arch == "unshuffle":
        if args.factor > 1:
            return (f"unshuffle CNN, space_to_depth {args.factor}, {args.depth} conv3x3 (zero padding, bias) of width "
                    f"{args.channels} with ReLU, depth_to_space {args.factor} + input, {nparams} parameters")
        return (f"full-resolution CNN, {args.depth} conv3x3 (zero padding, bias) of width {args.channels} with ReLU, "
                f"the last + input, {nparams} parameters")
    cfg = model.config() if hasattr(model, "config") else args.arch_kw
    return f"{args.arch} ({type(model).__name__} of weights/architectures.py, {json.dumps(cfg)}), {nparams} parameters"


def provenance_text(args, state, nparams, model=None):
    ti = state.get("train_info") or {}
    hi = state.get("heldout_info") or {}
    calls = state.get("calls") or []
    hyper = hyper_config(args)
    if any(c.get("shard") for c in calls):
        data = "training photos from the shards of weights/data/pack_shards.py (each call's below)"
    else:
        data = f"{ti.get('photos', '?')} training photos from weights/data/train (set sha256 {ti.get('digest', '?')}"
        if ti.get("manifest"):
            data += f"; manifest {ti['manifest']}"
        data += ")"
    data += (f", {hi.get('photos', '?')} held-out photos from {hi.get('source', 'weights/data/heldout')} "
             f"(set sha256 {hi.get('digest', '?')})")
    wall = sum(c.get("train_seconds", 0) for c in calls)
    if state.get("schedule_seconds"):
        sched = f"one schedule over {state['schedule_seconds']:.0f} s of training across the calls"
    else:
        sched = "re-planned by each call over the time trained before plus its own"
    compact = ""
    if args.ckpt_mode == "compact":
        compact = (f"; between calls the weights travel as compact checkpoints (fp16, or int8 per output channel for "
                   f"big nets; no optimizer moments: each resumed call rebuilds them under {args.rewarmup_steps} "
                   f"steps of linear lr warm-up)")
    return (
        f"weights/train.py (git {git_commit()}, sha256 {sha256_file(os.path.abspath(__file__))[:16]}); data: {data}; "
        f"degradation: {degradation_text(args.task)} (each call's own below where it differs); architecture: "
        + arch_text(args, model, nparams)
        + f"; training: {state['step']} steps of batch {hyper['batch']} x {hyper['patch']}x"
        f"{hyper['patch']} random crops (uniform over positions, 8 flips/rotations), AdamW (betas 0.9/0.99, "
        f"weight decay {hyper['weight_decay']:g}) lr {hyper['lr']:g} with {hyper['warmup_steps']} warm-up steps and "
        f"cosine decay to {hyper['lr_min']:g} over the training time ({sched}), Charbonnier loss "
        f"(eps {hyper['charbonnier_eps']:g}) unless a call says otherwise, "
        f"gradient norm clip {hyper['clip']:g}; seed {args.seed}{compact}; "
        + (f"started from the weights of {state['init_from']}; " if state.get("init_from") else "")
        + f"{len(calls)} call(s), {wall:.0f} s of training in total ("
        + ", ".join(f"steps {c['start_step']}-{c['end_step']} on {c['device']} in {c.get('precision', '?')}"
                    + (", torch.compile" if c.get("compile_seconds") else "")
                    + (f", {c['loss']} loss" if c.get("loss", "").startswith(("MSE", "PSNR")) else "")
                    + (f", ending with the weights' moving average (decay {c['ema']['decay']:g})" if c.get("ema") else "")
                    + (f", {c['train_seconds']:.0f} s" if "train_seconds" in c else "")
                    + (f", training photos from {c['shard']}" if c.get("shard") else "")
                    + (f", {c['degradation']}" if c.get("degradation", degradation_text(args.task))
                       != degradation_text(args.task) else "")
                    for c in calls)
        + f"); torch {torch.__version__}, torchvision {torchvision.__version__}"
        + (f", PIL {pil_version()}" if JPEG_444 > 0 else "") + "; evaluation: fp32 with TF32 off, "
        f"degradation seeds {EVAL_SEED}+level, {hi.get('evaluated', 'all held-out photos')}; "
        f"written {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}")


if __name__ == "__main__":
    sys.exit(main())
