"""Shards: the photos of weights/data/{train,heldout} packed into tar files small
enough to travel to the GPU host (at most 64 MiB per call for code, data and
checkpoints together). pack_shards.py writes them; train.py reads them with
read_shard(). Only the Python standard library, numpy and PIL are needed, so
the reading side can be tested without PyTorch.

A shard is an uncompressed tar file: first `index.json`, then one image file
per photo. index.json:

    {"format": "imrestore-shard-1",
     "split": "train" or "heldout",
     "shard": k, "shards": n,              this is shard k of n (0-based)
     "codec": "...",                         how the images are encoded (text)
     "manifest_sha256": "...",               of the MANIFEST.tsv the photos came from
     "images": [{"name": NAME, "file": FILE, "width": W, "height": H,
                 "png_sha256": ...,         the photo's PNG (MANIFEST.tsv's sha256)
                 "sha256": ...}, ...]}      of FILE's bytes, checked on reading

The images are 8-bit RGB at the size training uses (no resampling on
reading); README.md says which codec was chosen and why.
"""

import hashlib
import io
import os
import json
import tarfile

import numpy as np
from PIL import Image

FORMAT = "imrestore-shard-1"
INDEX = "index.json"


class ShardError(Exception):
    pass


def read_index(path):
    """The shard's index (dict), without decoding the images."""
    try:
        with tarfile.open(path, "r:") as tar:
            member = tar.next()
            if member is None or member.name != INDEX:
                raise ShardError(f"{path}: not an imrestore shard (its first member is not {INDEX})")
            index = json.loads(tar.extractfile(member).read().decode("utf-8"))
    except (tarfile.TarError, OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ShardError(f"{path}: cannot read the shard's index: {e}") from e
    if index.get("format") != FORMAT:
        raise ShardError(f"{path}: format {index.get('format')!r}, expected {FORMAT!r}")
    return index


def digest(index):
    """One sha256 for a shard's content: over its split, codec and each photo's
    name, PNG sha256 and encoded sha256 (the provenance of a model names it)."""
    lines = [f"{index['split']} {index['codec']}"]
    lines += [f"{e['name']} {e['png_sha256']} {e['sha256']}" for e in index["images"]]
    return hashlib.sha256(("\n".join(lines) + "\n").encode()).hexdigest()


def read_shard(path):
    """(index, [(name, uint8 array [H, W, 3])]) in the index's order. Every file's
    sha256 and decoded size is checked against the index."""
    index = read_index(path)
    want = {e["file"]: e for e in index["images"]}
    data = {}
    try:
        with tarfile.open(path, "r:") as tar:
            for member in tar:
                if member.name in want:
                    data[member.name] = tar.extractfile(member).read()
    except (tarfile.TarError, OSError) as e:
        raise ShardError(f"{path}: cannot read: {e}") from e
    photos = []
    for e in index["images"]:
        b = data.get(e["file"])
        if b is None:
            raise ShardError(f"{path}: {e['file']} is in the index but not in the shard")
        if hashlib.sha256(b).hexdigest() != e["sha256"]:
            raise ShardError(f"{path}: {e['file']} does not match its sha256 in the index (damaged shard)")
        try:
            im = Image.open(io.BytesIO(b))
            im.load()
        except OSError as ex:
            raise ShardError(f"{path}: {e['file']}: cannot decode: {ex}") from ex
        a = np.array(im.convert("RGB"))  # a writable copy (torch.from_numpy shares it)
        if a.shape != (e["height"], e["width"], 3):
            raise ShardError(f"{path}: {e['file']} decodes to {a.shape[1]}x{a.shape[0]}, "
                             f"the index says {e['width']}x{e['height']}")
        photos.append((e["name"], a))
    return index, photos


def write_subset(path, out, every):
    """Writes the shard of every `every`-th photo of `path` (the index's order,
    from the first) to `out`: the same files, an index listing only them, with
    the digest of the shard they came from (subset_of). A held-out subset lets
    train.py's own curve travel in a call beside a model and a training shard
    (the tool's evaluation on all held-out photos runs elsewhere)."""
    if every < 1:
        raise ShardError(f"subset: every must be at least 1, not {every}")
    if os.path.exists(out) and os.path.samefile(path, out):
        raise ShardError(f"subset: {out} is the shard it would be made from")
    index, _ = read_shard(path)  # checks every file first
    keep = index["images"][::every]
    sub = dict(index, images=keep, subset_of=digest(index), subset_every=every)
    tmp = out + ".tmp"  # written whole, then renamed: never a partial shard under OUT's name
    with tarfile.open(path, "r:") as src, tarfile.open(tmp, "w", format=tarfile.USTAR_FORMAT) as dst:
        body = json.dumps(sub, indent=1, sort_keys=True).encode("utf-8")
        info = tarfile.TarInfo(INDEX)
        info.size, info.mode = len(body), 0o644
        dst.addfile(info, io.BytesIO(body))
        files = {e["file"] for e in keep}
        for member in src:
            if member.name in files:
                dst.addfile(member, src.extractfile(member))
    os.replace(tmp, out)
    return len(keep)


if __name__ == "__main__":
    # python3 weights/data/shards.py extract SHARD.tar DIR: every photo of the
    # shard, checked against its index, as DIR/NAME.png (lossless), e.g. the
    # held-out photos on the GPU host for `imrestore model M --validate-precision DIR`.
    # python3 weights/data/shards.py subset SHARD.tar OUT.tar K: every K-th photo (write_subset).
    import sys
    if len(sys.argv) == 5 and sys.argv[1] == "subset":
        n = write_subset(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        print(f"{n} photos of {sys.argv[2]} in {sys.argv[3]}")
        sys.exit(0)
    if len(sys.argv) != 4 or sys.argv[1] != "extract":
        sys.exit("usage: python3 weights/data/shards.py extract SHARD.tar DIR\n"
                 "       python3 weights/data/shards.py subset SHARD.tar OUT.tar K")
    _, photos = read_shard(sys.argv[2])
    os.makedirs(sys.argv[3], exist_ok=True)
    for name, a in photos:
        stem = os.path.splitext(os.path.basename(name))[0]
        Image.fromarray(a).save(os.path.join(sys.argv[3], stem + ".png"))
    print(f"{len(photos)} photos from {sys.argv[2]} in {sys.argv[3]}")
