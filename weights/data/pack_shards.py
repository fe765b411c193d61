#!/usr/bin/python3
"""Pack weights/data/train and weights/data/heldout into shards for the GPU host.

    /usr/bin/python3 weights/data/pack_shards.py [--out DIR] [--max-mib 24] [--codec jpeg97|webp] [-j N]

At most 64 MiB travels to the GPU host per call (code, data and checkpoints
together), so the training photos go as shards of at most --max-mib MiB each
(DIR/train-KK.tar, K of N; a call carries one and train.py --shard reads it),
and the held-out photos as their own shard (DIR/heldout.tar, always lossless:
they are the evaluation's references). The format is described in shards.py;
weights/data/README.md ("Shards") says why the training codec is JPEG 4:4:4 at
quality 97 (measured against lossless WebP and 2x-oversized JPEG).

Every photo's PNG is checked against MANIFEST.tsv's sha256 first, so the
shards are made from the set the manifest describes. The shards are
deterministic: the photos are spread over the shards in a seeded order (each
shard a mix of all sources), and the tar members carry no time stamps or
owners. DIR (default weights/data/shards) is git-ignored.
"""

import argparse
import hashlib
import io
import json
import multiprocessing
import os
import sys
import tarfile

from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shards  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = "imrestore-shards-1"
CODECS = {
    # name: (file extension, PIL save arguments, text for the index)
    "jpeg97": (".jpg", {"format": "JPEG", "quality": 97, "subsampling": 0, "optimize": True},
               "JPEG baseline, 4:4:4, quality 97 (PIL/libjpeg), optimized Huffman tables"),
    "webp": (".webp", {"format": "WEBP", "lossless": True, "quality": 100, "method": 6, "exact": True},
             "lossless WebP (method 6)"),
}
TAR_OVERHEAD = 1024  # a member's header and padding, at most


def read_manifest(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            rows.append(dict(zip(header, line.rstrip("\n").split("\t"))))
    return rows


def encode(job):
    name, png_path, want_sha, codec = job
    with open(png_path, "rb") as f:
        png = f.read()
    if hashlib.sha256(png).hexdigest() != want_sha:
        raise SystemExit(f"{png_path}: sha256 differs from MANIFEST.tsv: rebuild with build_dataset.py")
    im = Image.open(io.BytesIO(png)).convert("RGB")
    ext, args, _ = CODECS[codec]
    buf = io.BytesIO()
    im.save(buf, **args)
    return name, ext, im.size, buf.getvalue()


def add_bytes(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0
    info.mode = 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    tar.addfile(info, io.BytesIO(data))


def write_shard(path, index, encoded):
    tmp = path + ".tmp"
    with tarfile.open(tmp, "w:", format=tarfile.USTAR_FORMAT) as tar:
        add_bytes(tar, shards.INDEX, json.dumps(index, indent=1, sort_keys=True).encode("utf-8"))
        for e in index["images"]:
            add_bytes(tar, e["file"], encoded[e["name"]][2])
    os.replace(tmp, path)


def entry(name, ext, size, data, png_sha):
    return {"name": name, "file": name + ext, "width": size[0], "height": size[1], "png_sha256": png_sha,
            "sha256": hashlib.sha256(data).hexdigest()}


def seeded_order(names):
    return sorted(names, key=lambda n: hashlib.sha256(f"{SEED}:{n}".encode()).hexdigest())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=HERE, help="folder with MANIFEST.tsv, train/ and heldout/ (default: this one)")
    ap.add_argument("--out", default=os.path.join(HERE, "shards"))
    ap.add_argument("--max-mib", type=float, default=24.0, help="largest training shard (MiB, default 24)")
    ap.add_argument("--codec", choices=sorted(CODECS), default="jpeg97", help="training shards' codec")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)

    manifest = os.path.join(args.data, "MANIFEST.tsv")
    with open(manifest, "rb") as f:
        manifest_sha = hashlib.sha256(f.read()).hexdigest()
    rows = read_manifest(manifest)
    png_sha = {r["name"]: r["sha256"] for r in rows}
    split = {r["name"]: r["split"] for r in rows}
    jobs = [(r["name"], os.path.join(args.data, r["split"], r["name"] + ".png"), r["sha256"],
             args.codec if r["split"] == "train" else "webp") for r in rows]
    with multiprocessing.get_context("fork").Pool(max(1, args.jobs)) as pool:
        encoded = {name: (ext, size, data) for name, ext, size, data in pool.imap(encode, jobs, chunksize=4)}
    os.makedirs(args.out, exist_ok=True)

    # Training shards: balanced sizes, no shard over --max-mib.
    limit = int(args.max_mib * 1024 * 1024)
    train = seeded_order([n for n in encoded if split[n] == "train"])
    cost = {n: len(encoded[n][2]) + TAR_OVERHEAD for n in train}
    big = [n for n in train if cost[n] + 64 * 1024 > limit]
    if big:
        sys.exit(f"{big[0]} alone is {cost[big[0]] / 2**20:.1f} MiB, over --max-mib {args.max_mib}")
    total = sum(cost.values())
    count = -(-total // (limit - 64 * 1024))  # 64 KiB kept for the index
    while True:
        target = total / count
        groups, cur, size = [], [], 0
        for n in train:
            if cur and (size + cost[n] > limit - 64 * 1024 or (size >= target and len(groups) < count - 1)):
                groups.append(cur)
                cur, size = [], 0
            cur.append(n)
            size += cost[n]
        groups.append(cur)
        if len(groups) <= count:
            break
        count += 1
    count = len(groups)
    stale = {f for f in os.listdir(args.out) if f.startswith("train-") and f.endswith(".tar")}
    _, _, codec_text = CODECS[args.codec]
    pixels = 0
    for k, names in enumerate(groups):
        index = {"format": shards.FORMAT, "split": "train", "shard": k, "shards": count, "codec": codec_text,
                 "manifest_sha256": manifest_sha,
                 "images": [entry(n, *encoded[n], png_sha[n]) for n in names]}
        path = os.path.join(args.out, f"train-{k:02d}.tar")
        write_shard(path, index, encoded)
        stale.discard(os.path.basename(path))
        px = sum(e["width"] * e["height"] for e in index["images"])
        pixels += px
        print(f"{path}: {len(names)} photos, {px / 1e6:.1f} MP, {os.path.getsize(path) / 2**20:.1f} MiB, "
              f"sha256 {shards.digest(index)[:16]}", flush=True)
    for f in sorted(stale):
        os.remove(os.path.join(args.out, f))
        print(f"removed stale {f}")

    held = sorted(n for n in encoded if split[n] == "heldout")
    index = {"format": shards.FORMAT, "split": "heldout", "shard": 0, "shards": 1, "codec": CODECS["webp"][2],
             "manifest_sha256": manifest_sha, "images": [entry(n, *encoded[n], png_sha[n]) for n in held]}
    path = os.path.join(args.out, "heldout.tar")
    write_shard(path, index, encoded)
    hpx = sum(e["width"] * e["height"] for e in index["images"])
    print(f"{path}: {len(held)} photos, {hpx / 1e6:.1f} MP, {os.path.getsize(path) / 2**20:.1f} MiB, "
          f"sha256 {shards.digest(index)[:16]}")
    print(f"train: {len(train)} photos, {pixels / 1e6:.1f} MP in {count} shards ({codec_text}), "
          f"{total / 2**20:.1f} MiB; {total / pixels:.3f} bytes per pixel")


if __name__ == "__main__":
    main()
