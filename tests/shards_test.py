#!/usr/bin/env python3
"""weights/data/shards.py's subset: a shard of every K-th photo of another,
read back by read_shard with the same pixels, its index naming the shard it
came from; a damaged source is refused, not copied. The source shard is made
here from random images (lossless WebP, as the held-out shard), so the test
needs no data folder.

    python3 tests/shards_test.py        (numpy and PIL; skipped, exit 77, without them)
"""

import hashlib
import io
import json
import os
import sys
import tarfile
import tempfile

try:
    import numpy as np
    from PIL import Image
except ImportError as e:  # ctest reports exit code 77 as skipped
    print(f"skipped: {e} (needs numpy and PIL)")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "weights", "data"))
import shards  # noqa: E402


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def make_shard(path, photos, damage=None):
    """A heldout shard of `photos` [(name, uint8 HxWx3)]; `damage`: a name whose
    file is changed after its sha256 went into the index."""
    entries, files = [], []
    for name, a in photos:
        buf = io.BytesIO()
        Image.fromarray(a).save(buf, format="WEBP", lossless=True)
        b = buf.getvalue()
        entries.append({"name": name, "file": name + ".webp", "width": a.shape[1], "height": a.shape[0],
                        "png_sha256": hashlib.sha256(a.tobytes()).hexdigest(), "sha256": hashlib.sha256(b).hexdigest()})
        files.append((name + ".webp", b[:-1] + bytes([b[-1] ^ 1]) if name == damage else b))
    index = {"format": shards.FORMAT, "split": "heldout", "shard": 0, "shards": 1, "codec": "lossless WebP",
             "manifest_sha256": "0" * 64, "images": entries}
    with tarfile.open(path, "w") as tar:
        for name, b in [(shards.INDEX, json.dumps(index).encode())] + files:
            info = tarfile.TarInfo(name)
            info.size = len(b)
            tar.addfile(info, io.BytesIO(b))


def main():
    if "WEBP" not in Image.registered_extensions().values():
        print("skipped: this PIL has no WebP")
        sys.exit(77)
    seed = int(os.environ.get("IMRESTORE_TEST_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"seed {seed} (IMRESTORE_TEST_SEED replays it)")
    rng = np.random.default_rng(seed)
    photos = [(f"p{i}", rng.integers(0, 256, (int(rng.integers(9, 40)), int(rng.integers(9, 40)), 3), np.uint8))
              for i in range(7)]
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "heldout.tar"), os.path.join(tmp, "mini.tar")
        make_shard(src, photos)
        for every, want in ((3, [0, 3, 6]), (1, list(range(7))), (10, [0])):
            n = shards.write_subset(src, out, every)
            index, got = shards.read_shard(out)
            if n != len(want) or [name for name, _ in got] != [photos[i][0] for i in want]:
                fail(f"every {every}: {[name for name, _ in got]}, expected {[photos[i][0] for i in want]}")
            for (_, a), i in zip(got, want):
                if not np.array_equal(a, photos[i][1]):
                    fail(f"every {every}: {photos[i][0]} changed in the subset")
            if index["subset_of"] != shards.digest(shards.read_index(src)) or index["subset_every"] != every:
                fail(f"every {every}: subset_of / subset_every {index.get('subset_of')} {index.get('subset_every')}")
            if index["split"] != "heldout":
                fail(f"every {every}: split {index['split']}")
            with tarfile.open(out) as tar:  # only the kept photos travel: the subset's whole point
                members = [m.name for m in tar]
            if members != [shards.INDEX] + [photos[i][0] + ".webp" for i in want]:
                fail(f"every {every}: the subset holds {members}")
        first = open(out, "rb").read()
        shards.write_subset(src, out, 10)
        if open(out, "rb").read() != first:
            fail("the same subset written twice differs (time stamps or owners in the tar?)")
        expect_refused(lambda: shards.write_subset(src, out, 0), "every 0", "at least 1")
        expect_refused(lambda: shards.write_subset(src, src, 2), "a subset onto its own source", "is the shard")
        shards.read_shard(src)  # and the source is intact
        make_shard(src, photos, damage="p4")  # not in a subset of every 3rd: still refused (the whole source is checked)
        expect_refused(lambda: shards.write_subset(src, out, 3), "a damaged source shard", "p4")
    print("shards subset: ok")


def expect_refused(call, what, words):
    """`call` must raise ShardError with `words` in its message."""
    try:
        call()
    except shards.ShardError as e:
        if words not in str(e):
            fail(f"{what}: refused, but the message lacks {words!r}: {e}")
        return
    fail(f"{what} was accepted")


if __name__ == "__main__":
    main()
