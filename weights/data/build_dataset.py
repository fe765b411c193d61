#!/usr/bin/python3
"""Build imrestore's training and held-out photo sets from Debian packages.

Usage (from the repository root or anywhere):

    /usr/bin/python3 weights/data/build_dataset.py

Needs: apt-get (with bookworm sources configured), dpkg-deb, python3-numpy,
python3-pil. Writes

    weights/data/cache/*.deb          downloaded packages (git-ignored)
    weights/data/train/NAME.png       training photos (git-ignored)
    weights/data/heldout/NAME.png     held-out photos (git-ignored)
    weights/data/MANIFEST.tsv         one line per photo (committed)

Every source file is pinned by its SHA-256, every package by its version, and
the target sizes come from a fixed seed per photo name, so a rebuild gives the
same bytes. See weights/data/README.md for the sources, licenses and the
files that were rejected (and why).

OpenCV's sample images (opencv-doc, samples/data) are never used here: they
are reserved for independent evaluation.
"""

import hashlib
import io
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image, ImageOps

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join(HERE, "cache")
TRAIN = os.path.join(HERE, "train")
HELDOUT = os.path.join(HERE, "heldout")
MANIFEST = os.path.join(HERE, "MANIFEST.tsv")

# Debian bookworm packages, pinned.
PACKAGES = {
    "lomiri-wallpapers-16.04": "20.04.0-2",
    "lomiri-wallpapers-20.04": "20.04.0-2",
    "mate-backgrounds": "1.26.0-1",
    "plasma-workspace-wallpapers": "4:5.27.5-2",
    "python3-skimage": "0.19.3-8",
    "python3-sklearn": "1.2.1+dfsg-1",
    "python-matplotlib-data": "3.6.3-1",
}

# License strings, from each package's /usr/share/doc/PKG/copyright, or where
# that file has no per-file entry, from the upstream statement named here.
L_PLASMA = ("GPL-2+ (debian/copyright, Files: *); LGPL-3 per the wallpaper's "
            "metadata.json")
L_MATE = "GPL-2+ (debian/copyright, per-file entry)"
L_SKIMAGE_CC0T = ("CC0-1.0 (CC0Textures, per skimage/data/_fetchers.py); "
                  "package BSD-3-Clause")
L_SKLEARN = ("CC-BY-2.0, by danielbuechele / vultilion on Flickr (per "
             "sklearn/datasets/images/README.txt); package BSD-3-Clause")

SK = "/usr/lib/python3/dist-packages/skimage/data/"
LW16 = "/usr/share/backgrounds/"
MATE = "/usr/share/backgrounds/mate/nature/"
PL = "/usr/share/wallpapers/"

# (name, split, package, path in package, license)
# split: "train" or "heldout". Held-out photos are never in train.
SOURCES = [
    # --- lomiri-wallpapers-16.04: photos from the Ubuntu Touch wallpaper contest
    ("lomiri-bridge", "train", "lomiri-wallpapers-16.04", LW16 + "Bridge_by_Sander_Klootwijk.jpg",
     "CC-BY-SA-4.0, Sander Klootwijk 2018"),
    ("lomiri-dragonfly", "train", "lomiri-wallpapers-16.04", LW16 + "Dragonfly_by_Bolly.jpg",
     "CC-BY-SA-4.0, \"Bolly\" 2018"),
    ("lomiri-fig", "train", "lomiri-wallpapers-16.04", LW16 + "Picture_0B_by_freespace.jpg",
     "CC-BY-4.0, Trevor \"Freespace\" 2018"),
    ("lomiri-brushes", "heldout", "lomiri-wallpapers-16.04", LW16 + "Picture_1A_by_freespace.jpg",
     "CC-BY-4.0, Trevor \"Freespace\" 2018"),
    ("lomiri-wine", "train", "lomiri-wallpapers-16.04", LW16 + "Wine_by_Jakkub_Mede.jpg",
     "CC-BY-4.0, Jakub Mede 2018"),
    ("lomiri-aitzgorri", "train", "lomiri-wallpapers-16.04", LW16 + "aitzgorri_by_Aitzol_Berasategi.jpg",
     "CC-BY-4.0, Aitzol Berasategi 2018"),
    ("lomiri-lamp", "train", "lomiri-wallpapers-16.04", LW16 + "free_by_Peter_Nerlich.jpg",
     "CC-BY-SA-4.0, Peter Nerlich 2018"),
    ("lomiri-dogs", "heldout", "lomiri-wallpapers-16.04", LW16 + "friends_by_Aitzol_Berasategi.jpg",
     "CC-BY-4.0, Aitzol Berasategi 2018"),
    ("lomiri-clock", "train", "lomiri-wallpapers-16.04", LW16 + "greentock_by_Peter_Nerlich.jpg",
     "CC-BY-SA-4.0, Peter Nerlich 2018"),
    ("lomiri-creek", "train", "lomiri-wallpapers-16.04", LW16 + "life_by_Aitzol_Berasategi.jpg",
     "CC-BY-4.0, Aitzol Berasategi 2018"),
    ("lomiri-mountains", "heldout", "lomiri-wallpapers-16.04", LW16 + "picosdeeuropa_by_Aitzol_Berasategi.jpg",
     "CC-BY-4.0, Aitzol Berasategi 2018"),
    ("lomiri-dandelions", "train", "lomiri-wallpapers-16.04", LW16 + "seeding_by_Clements_Engelhardt.jpg",
     "CC0-1.0, Clemens Engelhardt 2018"),
    ("lomiri-sunset", "train", "lomiri-wallpapers-16.04", LW16 + "sunset_by_Aitzol_Berasategi.jpg",
     "CC-BY-4.0, Aitzol Berasategi 2018"),
    # --- lomiri-wallpapers-20.04
    ("lomiri-nuthatch", "heldout", "lomiri-wallpapers-20.04", LW16 + "Kleiber_by_Lukas_Baubkus.jpg",
     "CC-BY-SA-3.0, Lukas Baubkus 2021"),
    # --- mate-backgrounds, nature/
    ("mate-aqua", "train", "mate-backgrounds", MATE + "Aqua.jpg", L_MATE + ", Charles Barbin 2008"),
    ("mate-leaf", "train", "mate-backgrounds", MATE + "Blinds.jpg", L_MATE + ", Lennart Poettering, Andrea Cimitan 2008"),
    ("mate-dune", "train", "mate-backgrounds", MATE + "Dune.jpg", L_MATE + ", Marco Cogoni 2007, Hylke Bons 2008"),
    ("mate-freshflower", "train", "mate-backgrounds", MATE + "FreshFlower.jpg", L_MATE + ", Jens Ansorg 2005"),
    ("mate-garden", "train", "mate-backgrounds", MATE + "Garden.jpg", L_MATE + ", Charles Barbin 2008"),
    ("mate-meadow", "train", "mate-backgrounds", MATE + "GreenMeadow.jpg", L_MATE + ", Timothy Schellhase 2005, Lapo Calamandrei 2008"),
    ("mate-ladybird", "heldout", "mate-backgrounds", MATE + "LadyBird.jpg", L_MATE + ", Charles Barbin 2008"),
    ("mate-raindrops", "train", "mate-backgrounds", MATE + "RainDrops.jpg", L_MATE + ", \"blackcombwhistler07\" 2008"),
    ("mate-twowings", "train", "mate-backgrounds", MATE + "TwoWings.jpg", L_MATE + ", Charles Barbin, Hylke Bons 2008"),
    ("mate-wood", "train", "mate-backgrounds", MATE + "Wood.jpg", L_MATE + ", Jean-Francois Fortin Tam 2008"),
    ("mate-yellowflower", "train", "mate-backgrounds", MATE + "YellowFlower.jpg", L_MATE + ", Charles Barbin 2008"),
    # --- plasma-workspace-wallpapers (KDE), the photographic ones
    ("plasma-pier", "train", "plasma-workspace-wallpapers", PL + "ColdRipple/contents/images/2560x1600.jpg",
     L_PLASMA + ", Risto Saukonpaa"),
    ("plasma-cups", "heldout", "plasma-workspace-wallpapers", PL + "ColorfulCups/contents/images/2560x1600.jpg",
     L_PLASMA + ", Dmitri Popov"),
    ("plasma-lake", "train", "plasma-workspace-wallpapers", PL + "DarkestHour/contents/images/2560x1600.jpg",
     L_PLASMA + ", Risto Saukonpaa"),
    ("plasma-fallenleaf", "train", "plasma-workspace-wallpapers", PL + "FallenLeaf/contents/images/2560x1600.jpg",
     L_PLASMA + ", Martin Klapetek"),
    ("plasma-facade", "heldout", "plasma-workspace-wallpapers", PL + "Grey/contents/images/2560x1600.jpg",
     L_PLASMA + ", Sigi Sagi"),
    ("plasma-kite", "train", "plasma-workspace-wallpapers", PL + "Kite/contents/images/2560x1600.jpg",
     L_PLASMA + ", Risto Saukonpaa"),
    ("plasma-moss", "heldout", "plasma-workspace-wallpapers", PL + "OneStandsOut/contents/images/2560x1600.jpg",
     L_PLASMA + ", Risto Saukonpaa"),
    ("plasma-forest", "heldout", "plasma-workspace-wallpapers", PL + "Path/contents/images/2560x1600.jpg",
     L_PLASMA + ", Risto Saukonpaa"),
    ("plasma-dawn", "train", "plasma-workspace-wallpapers", PL + "summer_1am/contents/images/2560x1600.jpg",
     L_PLASMA + ", Risto Saukonpaa"),
    # --- python3-skimage, skimage/data
    ("skimage-brick", "train", "python3-skimage", SK + "brick.png", L_SKIMAGE_CC0T),
    ("skimage-grass", "train", "python3-skimage", SK + "grass.png", L_SKIMAGE_CC0T),
    ("skimage-gravel", "heldout", "python3-skimage", SK + "gravel.png", L_SKIMAGE_CC0T),
    ("skimage-coins", "train", "python3-skimage", SK + "coins.png",
     "no known copyright restrictions (Brooklyn Museum, per _fetchers.py); package BSD-3-Clause"),
    ("skimage-text", "train", "python3-skimage", SK + "text.png",
     "public domain (Wikipedia File:Corner.png, per _fetchers.py); package BSD-3-Clause"),
    ("skimage-astronaut", "heldout", "python3-skimage", SK + "astronaut.png",
     "public domain (NASA, per _fetchers.py); package BSD-3-Clause"),
    # the four photos of samples/: held out (the README shows them)
    ("skimage-chelsea", "heldout", "python3-skimage", SK + "chelsea.png",
     "CC0 by the photographer, Stefan van der Walt (per _fetchers.py); package BSD-3-Clause"),
    ("skimage-coffee", "heldout", "python3-skimage", SK + "coffee.png",
     "CC0 by the photographer, Rachel Michetti (per _fetchers.py); package BSD-3-Clause"),
    ("skimage-camera", "heldout", "python3-skimage", SK + "camera.png",
     "CC0 by the photographer, Lav Varshney (per _fetchers.py); package BSD-3-Clause"),
    ("skimage-rocket", "heldout", "python3-skimage", SK + "rocket.jpg",
     "public domain, SpaceX (per _fetchers.py); package BSD-3-Clause"),
    # --- python3-sklearn, sklearn/datasets/images
    ("sklearn-china", "heldout", "python3-sklearn", "/usr/lib/python3/dist-packages/sklearn/datasets/images/china.jpg",
     L_SKLEARN),
    ("sklearn-flower", "train", "python3-sklearn", "/usr/lib/python3/dist-packages/sklearn/datasets/images/flower.jpg",
     L_SKLEARN),
    # --- python-matplotlib-data
    ("matplotlib-hopper", "heldout", "python-matplotlib-data",
     "/usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg",
     "matplotlib license (debian/copyright, Files: *); an official US Navy portrait of Grace Hopper, public domain"),
]

# SHA-256 of each source file, checked on every run (filled from the first
# build; a mismatch means the package changed and the output would too).
SOURCE_SHA256 = {
    "lomiri-bridge": "bd86b081f9975e2b83527f71e49b9271a8ab40885428395969d9f7d834d7f050",
    "lomiri-dragonfly": "af5af17841009732def24b09bb1e669a1b09d2b4bdeee7812c371101c30d2bb3",
    "lomiri-fig": "c8c0ab18e48d9e0419fe42881112137f3afafc27dfddc29ec3a6d54c56d225ad",
    "lomiri-brushes": "89e86af38d04daaef975665dc2127e9fa76f0fd68f4eea105a2d0ae3390b010b",
    "lomiri-wine": "d2e96e6d4da40dd804b3d0ce295e94de04a2d7d9b6785d42cd9d92ba58bced74",
    "lomiri-aitzgorri": "66268e7b48f8854d36a28765fac6e23ec1aee251daa6da1f64715f201020ad36",
    "lomiri-lamp": "85a5453c2fed514c75973016f3d862aca62eb7ca087618822469274ac1092373",
    "lomiri-dogs": "cc40e313c74e421edffe3403def413c16878ce14661cce7ec5915baeab35538d",
    "lomiri-clock": "e7b20e2db9dcd6e2b278ca55873c2110b35d89cd38b04d0b18728726888e6889",
    "lomiri-creek": "4c119350ead80201fe256850c3d316309ddfb4bdf10b235ce982dcde0c667c05",
    "lomiri-mountains": "414d0072b2f6f2c555deafeaef6e45c4fed6fa9ad26eba6560ca8803959cf97a",
    "lomiri-dandelions": "a5634d1ab5e41a3568e92d4a894a500c92b891f9ff734e50bd224d6e185a605f",
    "lomiri-sunset": "474dab6a4b9f94dc76c29dfe30e9f5db4af0fd2e33fe5d695f8152b371efca18",
    "lomiri-nuthatch": "6572410c09f4492c74ccadde133565a14c0161617d5917d4c820c66d65a44ba7",
    "mate-aqua": "5c30118205982da441bf7e6a1ada636a8a0be879408140b3148280c665ed6bce",
    "mate-leaf": "f7aac0dcc2e06d0491643e84df3da1d9db7c4610f58806a880d56e074799f600",
    "mate-dune": "8a67c2cb0be8c46b70c237311a4fa4d2b4ac7d39568135384787801fa5cc9a91",
    "mate-freshflower": "972b0a0c4e5e3fa93f4f244fc84bc64b121a5eac3aaa5856f1308c1f38a02f8e",
    "mate-garden": "d3095ee09d425ef23d27155412136cf14fc3c9af76ca58b452f55e23da324e78",
    "mate-meadow": "8fa0de0aa4089f7319c9fb7a6d006d4cab6023e8c8853731557cff53567b4832",
    "mate-ladybird": "e35a9a4126ef969c90b29c038058c5a575a20eadd84106a37bf1fa9931e7b61d",
    "mate-raindrops": "3e4ea9671c28c90a86cf67b3db9daf18c4741587c596333a7529ca589aaa0c16",
    "mate-twowings": "665e5abf8a5399070a91a9a8e455fe071e5b61697ff78fdeda4e9843ef545aeb",
    "mate-wood": "19c78500ac00a622e19907ab9cc7d06d46fe08c4a6142759a84195696150ec07",
    "mate-yellowflower": "254da96256acb7add685679775a04d1e4a5bc8cd13e5a5a3d61351ce198a5306",
    "plasma-pier": "05bef6722fc0ed81292cceb3ed026c38d17e510f3c84be7d68610c2b1a723c3f",
    "plasma-cups": "6e0f3a72feb5a4a9fec191b77e34874c3c69e2d93040deb3f07773e73385023d",
    "plasma-lake": "8e3703fae3a3c217b1fc2b399b706cd3720584268d071ba153e4809daa55f1ce",
    "plasma-fallenleaf": "95603a6560c7e8d50e0e03b3f4adbe39c5258c72528e74e4ecaea1daf4e499de",
    "plasma-facade": "88c31d8944b7e6935d1b9a296654c692f0772cb512491713eb30a972a604c0ed",
    "plasma-kite": "bdca288ce296a981e80659c021cf707caddc702c0c8d4247e60bd618476d47f8",
    "plasma-moss": "cb507baf1dafdcae362264f3aba9483ed4be5f6c9fdd770f0ec0920c6d9e80fd",
    "plasma-forest": "7477457d7f17b736259f1b021864778ad4ba802cf3214e6728181ff29126bba8",
    "plasma-dawn": "c868b50789591dd42910153c768053f1ba0a98cb36bbfc2b7a96a1045d0477f8",
    "skimage-brick": "7966caf324f6ba843118d98f7a07746d22f6a343430add0233eca5f6eaaa8fcf",
    "skimage-grass": "b6b6022426b38936c43a4ac09635cd78af074e90f42ffa8227ac8b7452d39f89",
    "skimage-gravel": "c48615b451bf1e606fbd72c0aa9f8cc0f068ab7111ef7d93bb9b0f2586440c12",
    "skimage-coins": "f8d773fc9cfa6f4d8e5942dc34d0a0788fcaed2a4fefbbed0aef5398d7ef4cba",
    "skimage-text": "bd84aa3a6e3c9887850d45d606c96b2e59433fbef50338570b63c319e668e6d1",
    "skimage-astronaut": "88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5",
    "skimage-chelsea": "596aa1e7cb875eb79f437e310381d26b338a81c2da23439704a73c4651e8c4bb",
    "skimage-coffee": "cc02f8ca188b167c775a7101b5d767d1e71792cf762c33d6fa15a4599b5a8de7",
    "skimage-camera": "b0793d2adda0fa6ae899c03989482bff9a42d3d5690fc7e3648f2795d730c23a",
    "skimage-rocket": "c2dd0de7c538df8d111e479619b129464d0269d0ae5fd18ca91d33a7fdfea95c",
    "sklearn-china": "8378025ad2519d649d02e32bd98990db4ab572357d9f09841c2fbfbb4fefad29",
    "sklearn-flower": "a77f6ec41e353afdf8bdff2ea981b2955535d8d83294f8cfa49cf4e423dd5638",
    "matplotlib-hopper": "a8ca6d734765703b09728ab47fe59f473d93ae3967fc24c7c0288c3c7adb7130",
}

# Target long side (pixels), drawn per photo from a fixed seed. Sources whose
# long side is at most NATIVE_MAX are kept at their own size (no resampling);
# larger ones are downscaled by at least 2 (factor >= MIN_FACTOR), which
# averages away their JPEG artifacts and sensor noise.
TRAIN_LONG = (1100, 1700)
HELDOUT_LONG = (800, 1100)
NATIVE_MAX = 1000
MIN_FACTOR = 2.0
SEED = 20240611
# Downscaling by >= 2 leaves training photos cleaner and smoother at the pixel
# level than photos straight from a camera (the native-resolution held-out
# photos): a denoiser trained only on them takes fine grain and texture for
# noise and smooths it away (seen: -3 dB against a bilateral filter on
# sklearn-china). So each large training source also gives one NATIVE_CROP
# square crop at a scale of 1/1 .. 1/NATIVE_MAX_FACTOR (drawn per photo),
# stored as NAME@native.png.
NATIVE_CROP = 512
NATIVE_MAX_FACTOR = 1.5
TRAIN_BUDGET_BYTES = 45 * 1000 * 1000


def log(*a):
    print(*a, flush=True)


def sha256_bytes(b):
    return hashlib.sha256(b).hexdigest()


def fetch_deb(pkg, ver):
    """Return the path of the cached .deb for pkg=ver, downloading it if needed."""
    os.makedirs(CACHE, exist_ok=True)
    fname_ver = ver.replace(":", "%3a")
    for f in sorted(os.listdir(CACHE)):
        if f.startswith(pkg + "_" + fname_ver + "_") and f.endswith(".deb"):
            return os.path.join(CACHE, f), False
    subprocess.run(["apt-get", "download", f"{pkg}={ver}"], cwd=CACHE, check=True,
                   stdout=subprocess.DEVNULL)
    for f in sorted(os.listdir(CACHE)):
        if f.startswith(pkg + "_" + fname_ver + "_") and f.endswith(".deb"):
            return os.path.join(CACHE, f), True
    sys.exit(f"apt-get download {pkg}={ver} gave no .deb in {CACHE}")


def target_long(name, split, long_side):
    """The stored long side for a source of long side `long_side`."""
    if long_side <= NATIVE_MAX:
        return long_side
    lo, hi = TRAIN_LONG if split == "train" else HELDOUT_LONG
    seed = int.from_bytes(hashlib.sha256(f"{SEED}:{name}".encode()).digest()[:8], "little")
    t = int(np.random.default_rng(seed).integers(lo, hi + 1))
    return int(min(t, long_side / MIN_FACTOR))


def convert(name, split, data):
    im = Image.open(io.BytesIO(data))
    im = ImageOps.exif_transpose(im)
    orig = im.size
    # 8-bit gray stays gray while resampling; everything else goes to 8-bit RGB
    if im.mode not in ("L", "RGB"):
        if im.mode in ("I;16", "I;16B", "I"):
            sys.exit(f"{name}: unexpected {im.mode} image")
        im = im.convert("RGB")
    w, h = orig
    t = target_long(name, split, max(w, h))
    if t != max(w, h):
        s = t / max(w, h)
        size = (max(1, round(w * s)), max(1, round(h * s)))
        im = im.resize(size, Image.LANCZOS)
    im = im.convert("RGB")
    buf = io.BytesIO()
    im.save(buf, format="PNG", compress_level=9)
    return orig, im.size, buf.getvalue()


def native_crop(name, data):
    """NATIVE_CROP x NATIVE_CROP crop of the source at a scale of 1/1 .. 1/NATIVE_MAX_FACTOR, as PNG bytes."""
    im = ImageOps.exif_transpose(Image.open(io.BytesIO(data))).convert("RGB")
    seed = int.from_bytes(hashlib.sha256(f"{SEED}:native:{name}".encode()).digest()[:8], "little")
    rng = np.random.default_rng(seed)
    f = float(rng.uniform(1.0, NATIVE_MAX_FACTOR))
    w, h = im.size
    size = (max(NATIVE_CROP, round(w / f)), max(NATIVE_CROP, round(h / f)))
    if size != (w, h):
        im = im.resize(size, Image.LANCZOS)
    x = int(rng.integers(0, size[0] - NATIVE_CROP + 1))
    y = int(rng.integers(0, size[1] - NATIVE_CROP + 1))
    im = im.crop((x, y, x + NATIVE_CROP, y + NATIVE_CROP))
    buf = io.BytesIO()
    im.save(buf, format="PNG", compress_level=9)
    return f"1/{f:.3f} crop {NATIVE_CROP}x{NATIVE_CROP} at {x},{y}", buf.getvalue()


def write_if_changed(path, data):
    if os.path.exists(path):
        with open(path, "rb") as f:
            if f.read() == data:
                return False
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return True


def main():
    names = [s[0] for s in SOURCES]
    assert len(names) == len(set(names)), "duplicate names"
    for s in SOURCES:
        assert s[1] in ("train", "heldout"), s
        assert "opencv" not in s[2].lower() and "opencv" not in s[3].lower(), s
        if os.path.basename(s[3]) in ("chelsea.png", "coffee.png", "camera.png", "rocket.jpg"):
            assert s[1] == "heldout", s
    os.makedirs(TRAIN, exist_ok=True)
    os.makedirs(HELDOUT, exist_ok=True)

    rows = []
    new_sha = {}
    counts = {"train": [0, 0], "heldout": [0, 0]}
    with tempfile.TemporaryDirectory(prefix="imrestore-data-") as tmp:
        extracted = {}
        for pkg in sorted({s[2] for s in SOURCES}):
            ver = PACKAGES[pkg]
            deb, fresh = fetch_deb(pkg, ver)
            log(f"{'downloaded' if fresh else 'cached    '} {os.path.basename(deb)}")
            root = os.path.join(tmp, pkg)
            subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
            extracted[pkg] = root
        for name, split, pkg, path, lic in SOURCES:
            src = os.path.join(extracted[pkg], path.lstrip("/"))
            with open(src, "rb") as f:
                data = f.read()
            h = sha256_bytes(data)
            new_sha[name] = h
            want = SOURCE_SHA256.get(name)
            if want is not None and want != h:
                sys.exit(f"{name}: {pkg} {path} has sha256 {h}, expected {want}")
            orig, stored, png = convert(name, split, data)
            out = os.path.join(TRAIN if split == "train" else HELDOUT, name + ".png")
            changed = write_if_changed(out, png)
            counts[split][0] += 1
            counts[split][1] += len(png)
            log(f"{'wrote    ' if changed else 'unchanged'} {split:7s} {name:22s} "
                f"{orig[0]}x{orig[1]} -> {stored[0]}x{stored[1]}  {len(png) / 1e6:6.2f} MB")
            rows.append((name, split, f"{pkg}={PACKAGES[pkg]}", path, lic,
                         f"{orig[0]}x{orig[1]}", f"{stored[0]}x{stored[1]}", sha256_bytes(png)))
            if split == "train" and max(orig) > NATIVE_MAX:
                how, crop = native_crop(name, data)
                changed = write_if_changed(os.path.join(TRAIN, name + "@native.png"), crop)
                counts[split][1] += len(crop)
                log(f"{'wrote    ' if changed else 'unchanged'} {split:7s} {name + '@native':22s} "
                    f"{how}  {len(crop) / 1e6:6.2f} MB")
                rows.append((name + "@native", split, f"{pkg}={PACKAGES[pkg]}", path, lic,
                             f"{orig[0]}x{orig[1]}", how, sha256_bytes(crop)))

    # remove stale outputs (only PNGs this script could have written)
    for d, split in ((TRAIN, "train"), (HELDOUT, "heldout")):
        keep = {s[0] + ".png" for s in SOURCES if s[1] == split}
        keep |= {s[0] + "@native.png" for s in SOURCES if s[1] == split}
        for f in sorted(os.listdir(d)):
            if f.endswith(".png") and f not in keep:
                os.remove(os.path.join(d, f))
                log(f"removed stale {split}/{f}")

    header = ("name", "split", "package", "source_path", "license",
              "original_size", "stored_size", "sha256")
    lines = ["\t".join(header)] + ["\t".join(r) for r in rows]
    text = "\n".join(lines) + "\n"
    changed = write_if_changed(MANIFEST, text.encode("utf-8"))
    log(f"{'wrote' if changed else 'unchanged'} {os.path.relpath(MANIFEST)}")

    missing = [n for n in names if n not in SOURCE_SHA256]
    if missing:
        log(f"note: {len(missing)} sources have no pinned SHA-256; their current sums:")
        for n in missing:
            log(f'    "{n}": "{new_sha[n]}",')

    for split in ("train", "heldout"):
        n, b = counts[split]
        log(f"{split}: {n} photos, {b / 1e6:.1f} MB")
    if counts["train"][1] > TRAIN_BUDGET_BYTES:
        sys.exit(f"train set is {counts['train'][1] / 1e6:.1f} MB, over the "
                 f"{TRAIN_BUDGET_BYTES / 1e6:.0f} MB budget")


if __name__ == "__main__":
    main()
