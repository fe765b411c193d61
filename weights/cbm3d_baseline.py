#!/usr/bin/env python3
"""CBM3D on the held-out photos: the strongest classical denoising baseline.

    python3 weights/cbm3d_baseline.py HELDOUT --sigma 15 25 50 [--seed 0] [-j N] [--out cbm3d.json]
        [--imrestore BIN] [--save DIR] [--crop N]

HELDOUT is a folder of clean PNGs (weights/data/heldout) or a held-out shard
(weights/data/shards/heldout.tar, pack_shards.py). For each photo and sigma it
adds exactly the noise `imrestore eval --noise SIGMA --seed SEED` and
`imrestore degrade` add (the same seeded stream per file name, the same
8-bit rounding), runs `bm3d.bm3d_rgb` (the `bm3d` package from PyPI, its
default profile, given the true sigma), rounds the result to 8 bits as a saved
image is, and measures PSNR over 8-bit RGB as app/eval/metrics.cpp does (the
exact integer MSE over all samples). Photos and sigmas run in parallel over
N processes (default: all cores); every finished photo is written to --out at
once, and a rerun with the same --out skips what it holds.

The noise comes from a Python copy of app/eval/degradations.cpp
(image_noise_seed, xoshiro256**, Box-Muller with glibc's log/sqrt/cos/sin
through Python's math module, y = round(clip(x/255 + sigma/255 * n, 0, 1) * 255),
halves to even). With --imrestore BIN the noisy inputs are made by
`BIN degrade --noise SIGMA --seed SEED` instead, and the Python copy is
checked against them, bit for bit (--check-only stops there).

--crop N keeps the centre N x N of each photo (for quick local checks): the
noise is then that of a file of the photo's name holding the crop, as
`imrestore degrade` makes it for such a file (--save writes them).

The bm3d package's license allows research and evaluation, not shipping: it
is never linked into or installed with imrestore.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

# One thread per worker: the parallelism is over photos.
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import multiprocessing  # noqa: E402

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
M64 = (1 << 64) - 1


# ---------------------------------------------------------------------------
# The noise of app/eval/degradations.cpp


def splitmix64(state):
    """(new state, output) of splitmix64 (the C++ takes the state by reference)."""
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def image_noise_seed(seed, file_name):
    """FNV-1a 64 of the base name, xor the seed, one splitmix64 step."""
    h = 0xCBF29CE484222325
    for c in os.path.basename(file_name).encode("utf-8"):
        h = ((h ^ c) * 0x100000001B3) & M64
    return splitmix64((seed ^ h) & M64)[1]


def normals(seed, count):
    """The first `count` values of NormalRng(seed).next_normal() (xoshiro256** 1.0,
    uniforms in (0, 1], Box-Muller: cos first, then its sin as the spare)."""
    state = seed
    s = []
    for _ in range(4):
        state, v = splitmix64(state)
        s.append(v)
    s0, s1, s2, s3 = s
    out = np.empty(count + 1, dtype=np.float64)
    log, sqrt, cos, sin, two_pi = math.log, math.sqrt, math.cos, math.sin, 2.0 * math.pi
    scale = 2.0 ** -53
    for i in range(0, count, 2):
        u = []
        for _ in range(2):
            x = (s1 * 5) & M64
            r = (((x << 7) | (x >> 57)) & M64) * 9 & M64
            t = (s1 << 17) & M64
            s2 ^= s0
            s3 ^= s1
            s1 ^= s2
            s0 ^= s3
            s2 ^= t
            s3 = ((s3 << 45) | (s3 >> 19)) & M64
            u.append(((r >> 11) + 1) * scale)
        rad = sqrt(-2.0 * log(u[0]))
        angle = two_pi * u[1]
        out[i] = rad * cos(angle)
        out[i + 1] = rad * sin(angle)
    return out[:count]


def add_noise(clean, sigma, n):
    """clean uint8 [H, W, 3], n the photo's normals in memory order -> noisy uint8."""
    x = clean.astype(np.float64).reshape(-1) / 255.0
    y = np.clip(x + (sigma / 255.0) * n, 0.0, 1.0)
    return np.rint(y * 255.0).astype(np.uint8).reshape(clean.shape)


def psnr_8bit(reference, test):
    """app/eval/metrics.cpp's psnr_8bit: exact integer MSE over all samples."""
    d = reference.astype(np.int64) - test.astype(np.int64)
    mse = float(np.sum(d * d)) / d.size
    return float("inf") if mse == 0 else 10.0 * math.log10(255.0 * 255.0 / mse)


# ---------------------------------------------------------------------------
# Photos


def load_photos(source, crop):
    """[(file name, uint8 [H, W, 3])] from a folder of PNGs or a held-out shard."""
    if os.path.isdir(source):
        names = sorted(f for f in os.listdir(source) if f.lower().endswith(".png"))
        photos = []
        for f in names:
            im = Image.open(os.path.join(source, f))
            if im.mode != "RGB":  # imrestore would noise a gray or RGBA file's channels otherwise
                sys.exit(f"cbm3d_baseline.py: {os.path.join(source, f)} is {im.mode}, not 8-bit RGB "
                         f"(as build_dataset.py writes)")
            photos.append((f, np.asarray(im)))
    else:
        sys.path.insert(0, os.path.join(HERE, "data"))
        import shards

        try:
            index, photos = shards.read_shard(source)
        except shards.ShardError as e:
            sys.exit(f"cbm3d_baseline.py: {e}")
        if index["split"] != "heldout":
            sys.exit(f"cbm3d_baseline.py: {source} is a {index['split']} shard, not the held-out one")
        photos = [(n + ".png", a) for n, a in photos]  # the names of weights/data/heldout, which seed the noise
    if not photos:
        sys.exit(f"cbm3d_baseline.py: no photos in {source}")
    if crop:
        out = []
        for name, a in photos:
            h, w = a.shape[:2]
            ch, cw = min(crop, h), min(crop, w)
            y, x = (h - ch) // 2, (w - cw) // 2
            out.append((name, np.ascontiguousarray(a[y:y + ch, x:x + cw])))
        photos = out
    return photos


def imrestore_noisy(binary, photos, sigma, seed, workdir):
    """{name: uint8 array} made by `imrestore degrade` from the photos as PNGs."""
    clean_dir = os.path.join(workdir, "clean")
    out_dir = os.path.join(workdir, f"noise{sigma:g}")
    os.makedirs(clean_dir, exist_ok=True)
    for name, a in photos:
        p = os.path.join(clean_dir, name)
        if not os.path.exists(p):
            Image.fromarray(a).save(p)
    subprocess.run([binary, "degrade", clean_dir, "-o", out_dir, "--noise", f"{sigma:g}", "--seed", str(seed),
                    "--quiet", "--force"], check=True)
    return {name: np.asarray(Image.open(os.path.join(out_dir, name)).convert("RGB")) for name, _ in photos}


# ---------------------------------------------------------------------------
# CBM3D jobs


_PHOTOS = {}


def run_job(job):
    name, sigma, seed, noisy_given, save = job
    import bm3d

    clean = _PHOTOS[name]
    noisy = noisy_given if noisy_given is not None else add_noise(clean, sigma, normals(
        image_noise_seed(seed, name), clean.size))
    t0 = time.time()
    den = bm3d.bm3d_rgb(noisy.astype(np.float64) / 255.0, sigma / 255.0)
    seconds = time.time() - t0
    out = np.rint(np.clip(den, 0.0, 1.0) * 255.0).astype(np.uint8)
    if save:
        d = os.path.join(save, f"noise{sigma:g}")
        os.makedirs(os.path.join(d, "noisy"), exist_ok=True)
        os.makedirs(os.path.join(d, "cbm3d"), exist_ok=True)
        Image.fromarray(noisy).save(os.path.join(d, "noisy", name))
        Image.fromarray(out).save(os.path.join(d, "cbm3d", name))
    return name, sigma, {"input_psnr": psnr_8bit(clean, noisy), "output_psnr": psnr_8bit(clean, out),
                         "seconds": round(seconds, 1), "megapixels": round(clean.shape[0] * clean.shape[1] / 1e6, 3)}


def summarize(results, sigmas, names):
    out = {}
    for s in sigmas:
        per = results.get(f"{s:g}", {})
        done = [per[n] for n in names if n in per]
        out[f"{s:g}"] = {"photos": len(done), "of": len(names),
                         "mean_input_psnr": sum(r["input_psnr"] for r in done) / len(done) if done else None,
                         "mean_output_psnr": sum(r["output_psnr"] for r in done) / len(done) if done else None}
    return out


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("heldout", help="folder of clean PNGs or a held-out shard")
    ap.add_argument("--sigma", type=float, nargs="+", default=[15.0, 25.0, 50.0])
    ap.add_argument("--seed", type=int, default=0, help="noise seed, as imrestore eval --seed (default 0)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", default="cbm3d.json", help="per-photo PSNR JSON (written as photos finish)")
    ap.add_argument("--imrestore", default=None, help="make the noisy inputs with this imrestore binary's degrade")
    ap.add_argument("--check-only", action="store_true",
                    help="with --imrestore: only compare the Python noise with imrestore degrade's")
    ap.add_argument("--save", default=None,
                    help="also write the clean, noisy and CBM3D images here (DIR/clean, DIR/noiseS/{noisy,cbm3d})")
    ap.add_argument("--crop", type=int, default=0, help="the centre N x N of each photo only (quick checks)")
    ap.add_argument("--limit", type=int, default=0, help="the first N photos only (quick checks)")
    args = ap.parse_args(argv)
    if args.check_only and not args.imrestore:
        ap.error("--check-only needs --imrestore")

    photos = load_photos(args.heldout, args.crop)
    if args.limit:
        photos = photos[:args.limit]
    names = [n for n, _ in photos]
    _PHOTOS.update(photos)
    mp = sum(a.shape[0] * a.shape[1] for _, a in photos) / 1e6
    print(f"{len(photos)} photos, {mp:.2f} MP; sigma {', '.join(f'{s:g}' for s in args.sigma)}; seed {args.seed}; "
          f"{args.jobs} processes", flush=True)

    if args.save:  # the clean references too, so that imrestore eval can check the numbers
        os.makedirs(os.path.join(args.save, "clean"), exist_ok=True)
        for name, a in photos:
            Image.fromarray(a).save(os.path.join(args.save, "clean", name))
    given = {}
    if args.imrestore:
        with tempfile.TemporaryDirectory(prefix="cbm3d-") as tmp:
            mismatches = 0
            for s in args.sigma:
                noisy = imrestore_noisy(args.imrestore, photos, s, args.seed, tmp)
                bad = 0
                for name, clean in photos:
                    mine = add_noise(clean, s, normals(image_noise_seed(args.seed, name), clean.size))
                    diff = int(np.count_nonzero(mine != noisy[name]))
                    if diff:
                        bad += 1
                        print(f"MISMATCH sigma {s:g} {name}: {diff} of {mine.size} samples differ from imrestore "
                              f"degrade's (max {int(np.abs(mine.astype(int) - noisy[name]).max())})", flush=True)
                    given[(name, s)] = noisy[name]
                mismatches += bad
                print(f"sigma {s:g}: the Python noise equals imrestore degrade's on "
                      f"{len(photos) - bad} of {len(photos)} photos", flush=True)
        if args.check_only:
            return 1 if mismatches else 0

    import bm3d  # noqa: F401  (fail here, once, when it is missing)
    try:
        from importlib.metadata import version
        bm3d_version = version("bm3d")
    except Exception:
        bm3d_version = "?"
    doc = {}
    if os.path.exists(args.out):
        with open(args.out) as f:
            doc = json.load(f)
        if doc.get("seed") != args.seed or doc.get("source") != os.path.basename(os.path.normpath(args.heldout)) \
                or doc.get("crop") != args.crop:
            sys.exit(f"cbm3d_baseline.py: {args.out} holds another run (seed, source or crop differ); "
                     f"give another --out")
    results = doc.get("results", {})
    doc.update({
        "method": f"CBM3D: bm3d.bm3d_rgb (bm3d {bm3d_version}, default profile), given the true sigma / 255; "
                  "output clipped to [0, 1] and rounded to 8 bits",
        "noise": "imrestore degrade/eval --noise SIGMA --seed SEED (app/eval/degradations.cpp); "
                 + ("made by imrestore degrade" if args.imrestore else "the Python copy in weights/cbm3d_baseline.py"),
        "psnr": "over 8-bit RGB, exact integer MSE over all samples (app/eval/metrics.cpp psnr_8bit); mean over photos",
        "seed": args.seed, "source": os.path.basename(os.path.normpath(args.heldout)), "crop": args.crop,
        "photos": names, "results": results})
    jobs = [(n, s, args.seed, given.get((n, s)), args.save) for s in args.sigma for n in names
            if n not in results.get(f"{s:g}", {})]
    jobs.sort(key=lambda j: -_PHOTOS[j[0]].size)  # largest first: the pool ends evenly
    t0 = time.time()
    with multiprocessing.get_context("fork").Pool(max(1, args.jobs)) as pool:
        for k, (name, s, r) in enumerate(pool.imap_unordered(run_job, jobs)):
            results.setdefault(f"{s:g}", {})[name] = r
            doc["summary"] = summarize(results, args.sigma, names)
            write_json(args.out, doc)
            print(f"[{k + 1}/{len(jobs)} {time.time() - t0:6.0f} s] sigma {s:g} {name}: {r['input_psnr']:.2f} -> "
                  f"{r['output_psnr']:.2f} dB ({r['megapixels']} MP, {r['seconds']} s)", flush=True)
    doc["summary"] = summarize(results, args.sigma, names)
    write_json(args.out, doc)
    for s, v in doc["summary"].items():
        if v["photos"]:
            print(f"sigma {s}: {v['photos']}/{v['of']} photos, noisy {v['mean_input_psnr']:.2f} dB, "
                  f"CBM3D {v['mean_output_psnr']:.2f} dB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
