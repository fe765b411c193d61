#!/usr/bin/python3
"""Builds the bundled linear model weights/sharpen.h5 and, with
--linear-denoisers, the two linear denoisers that were the bundled denoisers
before the trained CNNs (weights/train.py) replaced them: denoise-linear.h5
and denoise-conv7.h5, written to --out for comparison only (they are not
bundled: a Gaussian blur beats them).

Run from anywhere:  /usr/bin/python3 weights/make_models.py  [--out DIR]

Dependencies (Debian packages): python3-numpy, python3-h5py (the model
module), python3-pil (Pillow, only to decode the PNG/JPEG samples). CI never
runs this script; the .h5 files it writes are committed. It takes under a
minute (about 40 s on 2 cores), is deterministic (fixed seeds; the weights
come out the same with the same numpy/BLAS) and stamps the build date into `provenance` (the date comes
from SOURCE_DATE_EPOCH when that is set, else today, UTC).

What it builds (weights/README.md has the numbers and the reasoning):
  denoise-linear.h5 least-squares 3->3 5x5 linear denoiser for Gaussian noise
                    sigma 15/255, written exactly as one residual_block
                    (hidden 32). The default model until the trained CNNs.
  sharpen.h5        unsharp mask, amount 1.0, Gaussian sigma 1.0 on a 5x5
                    support, written exactly as one residual_block.
  denoise-conv7.h5  least-squares 3->3 7x7 linear denoiser (same data and
                    noise) as one conv2d stage with reflect padding and bias.
Denoisers are fitted on samples/chelsea.png and samples/rocket.jpg and
evaluated on the held-out samples/coffee.png (RGB) and samples/camera.png
(gray, through the gray->RGB path the CLI uses).
"""

import argparse
import datetime
import hashlib
import os
import sys
import time

import numpy as np

try:
    from PIL import Image
except ImportError:
    sys.exit("make_models.py needs Pillow to read the samples: apt-get install python3-pil")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import imrestore_model as im  # noqa: E402

SAMPLES = os.path.join(os.path.dirname(HERE), "samples")
TRAIN = ["chelsea.png", "rocket.jpg"]
HELD_OUT = ["coffee.png", "camera.png"]

SIGMA_255 = 15.0         # noise standard deviation on the 0..255 scale
NOISE_SEED = 20240601    # training noise
EVAL_SEED = 7            # held-out evaluation noise (different from training)
REALIZATIONS = 2         # noise draws per training image
HIDDEN = 32              # residual_block hidden width of denoise.h5 / sharpen.h5
SHARPEN_AMOUNT = 1.0
SHARPEN_SIGMA = 1.0
SHARPEN_EVAL_BLUR = 1.0  # Gaussian blur sigma used to test the sharpener


def load(name):
    path = os.path.join(SAMPLES, name)
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    img = Image.open(path)
    img = img.convert("L" if img.mode in ("L", "I;16", "I") else "RGB")
    return np.asarray(img, dtype=np.uint8), digest


def add_noise(clean_u8, rng):
    """Additive white Gaussian noise, sigma SIGMA_255, then clipped and rounded
    to 8 bits, as a noisy photo saved to a file would be."""
    noisy = clean_u8.astype(np.float64) + rng.normal(0.0, SIGMA_255, size=clean_u8.shape)
    return np.rint(np.clip(noisy, 0, 255)).astype(np.uint8)


def chw(u8):
    """uint8 [H,W,3] -> float [3,H,W] in [0,1]."""
    return u8.astype(np.float64).transpose(2, 0, 1) / 255.0


def features(x, k):
    """x [C,H,W] -> [N, C*k*k + 1]: for every valid output position (the k x k
    window fits), the window values in weight order (c, ky, kx) and a 1."""
    c, h, w = x.shape
    oh, ow = h - k + 1, w - k + 1
    cols = [x[ci, ky:ky + oh, kx:kx + ow].reshape(-1) for ci in range(c) for ky in range(k) for kx in range(k)]
    cols.append(np.ones(oh * ow))
    return np.stack(cols, axis=1)


def fit_filter(pairs, k):
    """Least-squares 3->3 k x k filter + offset mapping noisy -> clean over all
    valid positions of all (noisy, clean) pairs (float [3,H,W]). Returns
    weight [3,3,k,k] (cross-correlation, torch order), bias [3], rows used."""
    r = (k - 1) // 2
    nf = 3 * k * k + 1
    gram = np.zeros((nf, nf))
    rhs = np.zeros((nf, 3))
    rows = 0
    for noisy, clean in pairs:
        X = features(noisy, k)
        Y = clean[:, r:clean.shape[1] - r, r:clean.shape[2] - r].reshape(3, -1).T
        gram += X.T @ X
        rhs += X.T @ Y
        rows += X.shape[0]
    sol = np.linalg.lstsq(gram, rhs, rcond=None)[0]  # [nf, 3]
    weight = sol[:-1].T.reshape(3, 3, k, k)
    bias = sol[-1]
    return weight, bias, rows


# How conv_out's taps are laid out, per axis. A 5-tap offset d in -2..2 is
# reached as d = a + s, a the conv_out offset and s the conv_in shift (both in
# -1..1). Inside the image every (a, s) pair with a + s = d adds up, so the
# interior only fixes those sums. At the first/last row (column) conv_out's
# zero padding drops the pairs with a = -1 (a = +1), and conv_in's zero padding
# drops taps that land outside the image; the layout below uses that to give
# the outermost pixels the filter with *replicate* padding (the taps that fall
# outside are folded onto the edge pixel, so the gain stays right), instead of
# the zero padding that a plain split would give (which darkens a smoothing
# filter's outermost pixels by the missing weight, 17-19% for denoise.h5).
# One pixel further in, nothing is dropped at the hidden level, so the outer
# tap there reads conv_in's zero padding: that pixel gets the filter with the
# 2-away tap zeroed (1-2% of the weight for denoise.h5).
# EDGE_SPLIT[(a, s)] = {d: coefficient}: conv_out weight of pair (a, s) as a
# combination of the 1-D residual taps R[d].
EDGE_SPLIT = {
    (-1, -1): {-2: 1.0},
    (-1, 0): {},
    (-1, 1): {-1: -1.0, -2: -1.0},                       # dropped at the top: folds R-1, R-2 onto d=0
    (0, -1): {-1: 1.0},
    (0, 0): {-2: 1.0, -1: 1.0, 0: 1.0, 1: 1.0, 2: 1.0},
    (0, 1): {1: 1.0},
    (1, -1): {1: -1.0, 2: -1.0},                         # dropped at the bottom: folds R1, R2 onto d=0
    (1, 0): {},
    (1, 1): {2: 1.0},
}
# The plain layout, for comparison only: one pair per offset, a != 0 only when
# s = a, so the block is exactly the 5x5 filter with zero padding everywhere.
ZERO_SPLIT = {(-1, -1): {-2: 1.0}, (0, -1): {-1: 1.0}, (0, 0): {0: 1.0}, (0, 1): {1: 1.0}, (1, 1): {2: 1.0}}


def residual_block_from_filter(residual, bias, hidden=HIDDEN, layout=EDGE_SPLIT):
    """Writes x + residual(x) + bias (residual: [C,C,5,5] cross-correlation
    kernel) exactly as one residual_block. Hidden channel ci*9 + (sy+1)*3 +
    (sx+1) is a delta kernel that picks input channel ci shifted by (sy, sx);
    conv_out carries the taps laid out by EDGE_SPLIT on both axes; hidden
    channels past C*9 are zero. See block_reference() for what it computes."""
    c = residual.shape[0]
    assert residual.shape == (c, c, 5, 5) and hidden >= 9 * c
    w_in = np.zeros((hidden, c, 3, 3))
    w_out = np.zeros((c, hidden, 3, 3))
    for ci in range(c):
        for sy in (-1, 0, 1):
            for sx in (-1, 0, 1):
                w_in[ci * 9 + (sy + 1) * 3 + (sx + 1), ci, sy + 1, sx + 1] = 1.0
    for (ay, sy), my in layout.items():
        for (ax, sx), mx in layout.items():
            for ci in range(c):
                h = ci * 9 + (sy + 1) * 3 + (sx + 1)
                for dy, cy in my.items():
                    for dx, cx in mx.items():
                        w_out[:, h, ay + 1, ax + 1] += cy * cx * residual[:, ci, dy + 2, dx + 2]
    return {
        "op": "residual_block",
        "conv_in_weight": w_in.astype(np.float32),
        "conv_in_bias": np.zeros(hidden, dtype=np.float32),
        "conv_out_weight": w_out.astype(np.float32),
        "conv_out_bias": np.asarray(bias, dtype=np.float32),
    }


def block_reference(x, residual, bias):
    """What residual_block_from_filter's block computes, written directly:
    x + bias + sum_d residual[d] * x[p + d], where along each axis a source
    index outside the image is clamped to the edge when p is the first/last
    row (column), and reads 0 when p is one further in (2-away tap). (For
    sides of 3 pixels or more; a 2-pixel side differs.)"""
    c, h, w = x.shape
    out = x + np.asarray(bias, dtype=np.float64)[:, None, None]
    ys, xs = np.arange(h), np.arange(w)

    def axis_index(p, d, n):
        q = p + d
        inside = (q >= 0) & (q < n)
        edge = (p == 0) | (p == n - 1)
        return np.clip(q, 0, n - 1), inside | edge

    for dy in range(-2, 3):
        qy, vy = axis_index(ys, dy, h)
        for dx in range(-2, 3):
            qx, vx = axis_index(xs, dx, w)
            src = x[:, qy][:, :, qx] * (vy[:, None] & vx[None, :])
            out += np.tensordot(residual[:, :, dy + 2, dx + 2], src, axes=(1, 0))
    return out


def zero_padded_filter(x, weight, bias):
    """Reference: x [C,H,W] float, 5x5 (or any odd k) cross-correlation with zero padding."""
    k = weight.shape[2]
    r = (k - 1) // 2
    return im._correlate(np.pad(x, ((0, 0), (r, r), (r, r))), weight, bias)


def gaussian_1d(sigma, radius):
    t = np.arange(-radius, radius + 1, dtype=np.float64)
    g = np.exp(-t * t / (2.0 * sigma * sigma))
    return g / g.sum()


def blur_u8(u8, sigma):
    """Gaussian blur (separable, radius 3*sigma, reflect border) of an 8-bit RGB
    or gray image, rounded back to 8 bits: the test degradation for sharpen."""
    radius = int(np.ceil(3 * sigma))
    g = gaussian_1d(sigma, radius)
    x = u8.astype(np.float64)
    pad = [(radius, radius), (radius, radius)] + ([(0, 0)] if x.ndim == 3 else [])
    xp = np.pad(x, pad, mode="reflect")
    h, w = u8.shape[:2]
    tmp = sum(g[i] * xp[i:i + h] for i in range(2 * radius + 1))
    out = sum(g[i] * tmp[:, i:i + w] for i in range(2 * radius + 1))
    return np.rint(np.clip(out, 0, 255)).astype(np.uint8)


def border_interior_psnr(a, b, width):
    """PSNR over the outer `width`-pixel frame and over the rest."""
    mask = np.zeros(a.shape[:2], dtype=bool)
    mask[:width, :] = mask[-width:, :] = mask[:, :width] = mask[:, -width:] = True
    return im.psnr(a[mask], b[mask]), im.psnr(a[~mask], b[~mask])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=HERE, help="output directory (default: weights/)")
    ap.add_argument("--linear-denoisers", action="store_true",
                    help="also write denoise-linear.h5 and denoise-conv7.h5 (not bundled; for comparison)")
    args = ap.parse_args()
    t0 = time.time()
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    date = (datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch
            else datetime.datetime.now(datetime.timezone.utc)).strftime("%Y-%m-%d")

    train = {n: load(n) for n in TRAIN}
    held = {n: load(n) for n in HELD_OUT}
    for n, (img, _) in train.items():
        assert img.ndim == 3, f"{n}: training images must be RGB"
    data_note = ", ".join(f"samples/{n} (sha256 {d[:12]})" for n, (_, d) in train.items())

    # ---- training pairs: noisy (8-bit, clipped) -> clean
    rng = np.random.default_rng(NOISE_SEED)
    pairs = []
    for n, (img, _) in train.items():
        for _ in range(REALIZATIONS):
            pairs.append((chw(add_noise(img, rng)), chw(img)))

    # ---- held-out evaluation inputs (fixed noise, separate seed)
    erng = np.random.default_rng(EVAL_SEED)
    evals = {n: (img, add_noise(img, erng)) for n, (img, _) in held.items()}

    results = []  # rows for the summary table

    def evaluate(model, label):
        out = {}
        for n, (clean, noisy) in evals.items():
            den = im.restore_uint8(model, noisy)
            out[n] = (im.psnr(noisy, clean), im.psnr(den, clean), den)
        return out

    def psnr_text(ev):
        return "; ".join(f"{n} {'gray' if evals[n][0].ndim == 2 else 'RGB'} "
                         f"{ev[n][0]:.2f} dB noisy -> {ev[n][1]:.2f} dB denoised" for n in ev)

    # ================================================================ denoise.h5
    w5, b5, rows5 = fit_filter(pairs, 5)
    residual5 = w5.copy()
    for c in range(3):
        residual5[c, c, 2, 2] -= 1.0
    block = residual_block_from_filter(residual5, b5)
    # Exactness checks. Against the fitted float64 filter where no padding is
    # involved (2+ px from the border); against block_reference() with the
    # float32-rounded taps on the whole image.
    probe = chw(evals["coffee.png"][1])
    got = im.apply_stage(block, probe)
    diff_interior = np.abs(got - zero_padded_filter(probe, w5, b5))[:, 2:-2, 2:-2].max()
    r32 = residual5.astype(np.float32).astype(np.float64)
    diff_all = np.abs(got - block_reference(probe, r32, b5.astype(np.float32))).max()
    assert diff_interior < 1e-5 and diff_all < 1e-5, (diff_interior, diff_all)
    plain = residual_block_from_filter(residual5, b5, layout=ZERO_SPLIT)
    assert np.abs(im.apply_stage(plain, probe) - zero_padded_filter(probe, w5, b5)).max() < 1e-5

    prov_common = (f"Built by weights/make_models.py on {date}. Data: {data_note} (skimage sample photos, "
                   f"CC0/public domain, see samples/README.md), {REALIZATIONS} noise draws each: additive "
                   f"Gaussian noise sigma {SIGMA_255:g}/255 (numpy default_rng seed {NOISE_SEED}), clipped "
                   f"and rounded to 8 bits. ")
    ev5 = evaluate({"channels": 3, "stages": [block]}, "denoise")
    ev5z = evaluate({"channels": 3, "stages": [plain]}, "denoise, zero-padded layout")
    bi = {n: border_interior_psnr(ev5[n][2], evals[n][0], 2) for n in evals}
    biz = {n: border_interior_psnr(ev5z[n][2], evals[n][0], 2) for n in evals}
    edge_note = ("At the image border the outermost pixel row/column gets the filter with replicate "
                 "padding, and the next one in reads zeros for its 2-away taps")
    desc5 = (f"Linear denoiser for additive Gaussian noise of sigma about {SIGMA_255:g}/255 (8-bit images): "
             f"the least-squares 5x5 filter mixing R, G and B, written exactly as one residual block. "
             f"Held-out PSNR (images not used for fitting, noise sigma {SIGMA_255:g}/255): {psnr_text(ev5)}. "
             f"It is a linear filter: it blurs fine texture and edges a little along with the noise and "
             f"does nothing useful for other noise levels, real camera noise that is not white, or JPEG "
             f"artifacts. {edge_note} (1-2% of the weight; coffee.png outer 2 px: "
             f"{bi['coffee.png'][0]:.2f} dB, inside {bi['coffee.png'][1]:.2f} dB). Gray images go through it as "
             f"R=G=B (camera.png above: noise added to the gray image).")
    prov5 = (prov_common + f"Fit: numpy least squares (normal equations, float64) of a 3->3 5x5 filter plus "
             f"a per-channel offset from the noisy to the clean image over all {rows5} positions where the "
             f"window fits. Written as x + conv_out(conv_in(x)): conv_in holds 27 delta kernels (input "
             f"channel x 3x3 shift; hidden channels 27-31 are zero, bias 0), conv_out the residual taps "
             f"(filter minus identity) and the offset as bias, laid out so that the block equals the "
             f"fitted filter away from the border (max abs difference {diff_interior:.1e}) and uses the "
             f"conv_out zero padding to fold outside taps onto the edge pixel at the border "
             f"(make_models.py EDGE_SPLIT).")
    written = ["sharpen.h5"]
    if args.linear_denoisers:
        im.write_model(os.path.join(args.out, "denoise-linear.h5"), "denoise-linear", "denoise", desc5, prov5, 3,
                       [block])
        written.append("denoise-linear.h5")
    results.append(("denoise-linear.h5", "residual_block h32", 5, ev5, bi))
    results.append(("(zero-pad layout)", "not written", 5, ev5z, biz))

    # ================================================================ sharpen.h5
    g1 = gaussian_1d(SHARPEN_SIGMA, 2)
    g2 = np.outer(g1, g1)
    residual_s = np.zeros((3, 3, 5, 5))
    for c in range(3):
        residual_s[c, c] = -SHARPEN_AMOUNT * g2
        residual_s[c, c, 2, 2] += SHARPEN_AMOUNT
    sblock = residual_block_from_filter(residual_s, np.zeros(3))
    got = im.apply_stage(sblock, probe)
    diff_s = max(np.abs(got - probe - zero_padded_filter(probe, residual_s, None))[:, 2:-2, 2:-2].max(),
                 np.abs(got - block_reference(probe, residual_s.astype(np.float32).astype(np.float64),
                                              np.zeros(3))).max())
    assert diff_s < 1e-5, diff_s
    smodel = {"channels": 3, "stages": [sblock]}
    sev = {}
    for n, (clean, _) in held.items():
        blurred = blur_u8(clean, SHARPEN_EVAL_BLUR)
        sharp = im.restore_uint8(smodel, blurred)
        sev[n] = (im.psnr(blurred, clean), im.psnr(sharp, clean),
                  border_interior_psnr(sharp, clean, 2))
    stext = "; ".join(f"{n} {sev[n][0]:.2f} dB blurred -> {sev[n][1]:.2f} dB sharpened" for n in sev)
    descs = (f"Classical unsharp mask: x + {SHARPEN_AMOUNT:g} * (x - gaussian_blur(x)), Gaussian sigma "
             f"{SHARPEN_SIGMA:g} px on a 5x5 support (normalized to sum 1), each channel on its own, written "
             f"exactly as one residual block. It raises edge contrast; it does not invert a blur. On the "
             f"held-out samples blurred with a Gaussian of sigma {SHARPEN_EVAL_BLUR:g} px: {stext} (PSNR "
             f"against the sharp original). It amplifies noise and JPEG artifacts and puts halos on strong "
             f"edges. {edge_note}.")
    provs = (f"Built by weights/make_models.py on {date}; no data, no fitting. Residual kernel "
             f"{SHARPEN_AMOUNT:g} * (delta - G), G the outer product of a 5-tap Gaussian (sigma "
             f"{SHARPEN_SIGMA:g}) normalized to sum 1; conv_in holds 27 delta kernels (hidden channels 27-31 "
             f"zero), conv_out the taps in the same layout as denoise.h5 (make_models.py EDGE_SPLIT; max abs "
             f"difference {diff_s:.1e} against the direct filter).")
    im.write_model(os.path.join(args.out, "sharpen.h5"), "sharpen", "sharpen", descs, provs, 3, [sblock])

    # ================================================================ denoise-conv7.h5
    w7, b7, rows7 = fit_filter(pairs, 7)
    cstage = {"op": "conv2d", "weight": w7.astype(np.float32), "bias": b7.astype(np.float32),
              "padding": "reflect"}
    cmodel = {"channels": 3, "stages": [cstage]}
    ev7 = evaluate(cmodel, "denoise-conv7")
    bi7 = {n: border_interior_psnr(ev7[n][2], evals[n][0], 3) for n in evals}
    desc7 = (f"Linear denoiser for additive Gaussian noise of sigma about {SIGMA_255:g}/255 (8-bit images): "
             f"the least-squares 7x7 filter mixing R, G and B, as one conv2d with reflect padding. "
             f"Held-out PSNR (images not used for fitting, noise sigma {SIGMA_255:g}/255): {psnr_text(ev7)}. "
             f"Same limits as denoise.h5 (a linear filter: blurs fine texture with the noise; tuned to one "
             f"noise level); reflect padding keeps the border clean.")
    prov7 = (prov_common + f"Fit: numpy least squares (normal equations, float64) of a 3->3 7x7 filter plus "
             f"a per-channel offset from the noisy to the clean image over all {rows7} positions where the "
             f"window fits; stored directly as the conv2d weight and bias.")
    if args.linear_denoisers:
        im.write_model(os.path.join(args.out, "denoise-conv7.h5"), "denoise-conv7", "denoise", desc7, prov7, 3,
                       [cstage])
        written.append("denoise-conv7.h5")
    results.append(("denoise-conv7.h5", "conv2d 7x7 reflect", 7, ev7, bi7))

    # ---- read everything back through the reader and re-check
    for f in written:
        m = im.read_model(os.path.join(args.out, f))
        assert m["format_version"] == 1
    if args.linear_denoisers:
        m = im.read_model(os.path.join(args.out, "denoise-linear.h5"))
        re5 = evaluate(m, "reread")
        assert all(np.array_equal(re5[n][2], ev5[n][2]) for n in evals)

    # ---- summary
    print(f"imrestore bundled models ({date}); noise sigma {SIGMA_255:g}/255; "
          f"fitted on {', '.join(TRAIN)}; held out {', '.join(HELD_OUT)}")
    print(f"{'model':<18} {'stages':<20} {'RF':>3} {'image':<11} {'noisy dB':>9} {'out dB':>8} "
          f"{'border dB':>10} {'inside dB':>10}")
    for fname, kind, rf, ev, b in results:
        for n in ev:
            print(f"{fname:<18} {kind:<20} {rf:>3} {n:<11} {ev[n][0]:>9.2f} {ev[n][1]:>8.2f} "
                  f"{b[n][0]:>10.2f} {b[n][1]:>10.2f}")
    for n in sev:
        print(f"{'sharpen.h5':<18} {'residual_block h32':<20} {5:>3} {n:<11} {sev[n][0]:>9.2f} "
              f"{sev[n][1]:>8.2f} {sev[n][2][0]:>10.2f} {sev[n][2][1]:>10.2f}   (blurred sigma "
              f"{SHARPEN_EVAL_BLUR:g}, not noisy)")
    print(f"border = outer 2 px (3 px for conv7), inside = the rest. denoise.h5 block vs fitted 5x5 filter "
          f"(2+ px in): max abs diff {diff_interior:.1e}; vs block_reference (whole image): {diff_all:.1e}; "
          f"sharpen {diff_s:.1e}")
    for f in written:
        p = os.path.join(args.out, f)
        print(f"wrote {p} ({os.path.getsize(p)} bytes)")
    print(f"done in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
