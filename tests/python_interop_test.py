#!/usr/bin/env python3
"""The Python writer and the C++ tool agree: random multi-stage models written
by weights/imrestore_model.py (a format-v1 one, and two format-v2 ones: the
unshuffle CNN with relu and add_model_input, and a space_to_depth(3) one)
load in `imrestore model`, and `imrestore` restores random RGB and gray
images of odd sizes (so the v2 models' replicate padding to a multiple of
their downscale is exercised) to within one 8-bit level of the independent
float64 numpy forward pass (imrestore_model.restore_uint8). A model with a
wrong shape written by plain h5py is refused with exit code 2.

Every kind of stage the Python module knows (imrestore_model.OPS) must be in
one of these models (a kind added there without a stage here fails); kinds
only the C++ tool has are not the module's business and not needed here.

    python3 tests/python_interop_test.py path/to/imrestore
(needs numpy and h5py; weights/ on PYTHONPATH)
"""

import os
import subprocess
import sys
import tempfile

try:
    import h5py
    import numpy as np

    import imrestore_model as im
except ImportError as e:  # ctest reports exit code 77 as skipped, with this reason
    print(f"skipped: {e} (needs numpy and h5py, and weights/ on PYTHONPATH)")
    sys.exit(77)


def write_pnm(path, img):
    kind = b"P5" if img.ndim == 2 else b"P6"
    with open(path, "wb") as f:
        f.write(b"%s\n%d %d\n255\n" % (kind, img.shape[1], img.shape[0]))
        f.write(np.ascontiguousarray(img, dtype=np.uint8).tobytes())


def read_pnm(path):
    data = open(path, "rb").read()
    fields, pos = [], 0
    while len(fields) < 4:  # magic, width, height, max value
        while data[pos : pos + 1].isspace():
            pos += 1
        end = pos
        while not data[end : end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    pos += 1
    w, h = int(fields[1]), int(fields[2])
    channels = 1 if fields[0] == b"P5" else 3
    img = np.frombuffer(data[pos:], dtype=np.uint8, count=w * h * channels)
    return img.reshape(h, w) if channels == 1 else img.reshape(h, w, 3)


def random_model(rng):
    def n(*shape, scale):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    return [
        {"op": "residual_block", "conv_in_weight": n(7, 3, 3, 3, scale=0.1), "conv_in_bias": n(7, scale=0.05),
         "conv_out_weight": n(3, 7, 3, 3, scale=0.1), "conv_out_bias": n(3, scale=0.05)},
        {"op": "conv2d", "weight": n(5, 3, 4, 4, scale=1 / 48) + np.float32(1 / 48), "bias": n(5, scale=0.02),
         "padding": "reflect"},
        {"op": "conv2d", "weight": n(3, 5, 3, 3, scale=1 / 45) + np.float32(1 / 45), "padding": "replicate"},
        {"op": "residual_block", "conv_in_weight": n(32, 3, 3, 3, scale=0.05), "conv_in_bias": n(32, scale=0.02),
         "conv_out_weight": n(3, 32, 3, 3, scale=0.05), "conv_out_bias": n(3, scale=0.02)},
    ]


def random_v2_models(rng):
    """Format-v2 models: (name, stages, downscale)."""
    def n(*shape, scale):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    c, k = 6, 3
    unshuffle = [  # the trained architecture, small: space_to_depth(2), D=3 convs of width 6, depth_to_space(2) + input
        {"op": "space_to_depth", "factor": 2},
        {"op": "conv2d", "weight": n(c, 12, k, k, scale=0.15), "bias": n(c, scale=0.05), "padding": "zero",
         "activation": "relu"},
        {"op": "conv2d", "weight": n(c, c, k, k, scale=0.15), "bias": n(c, scale=0.05), "padding": "zero",
         "activation": "relu"},
        {"op": "conv2d", "weight": n(12, c, k, k, scale=0.1), "bias": n(12, scale=0.02), "padding": "zero"},
        {"op": "depth_to_space", "factor": 2, "add_model_input": 1},
        # and a full-resolution conv2d that adds the model input itself
        {"op": "conv2d", "weight": n(3, 3, 3, 3, scale=0.05), "bias": n(3, scale=0.02), "padding": "reflect",
         "activation": "none", "add_model_input": 1},
    ]
    factor3 = [
        {"op": "space_to_depth", "factor": 3},
        {"op": "conv2d", "weight": n(8, 27, 3, 3, scale=0.1), "bias": n(8, scale=0.05), "padding": "replicate",
         "activation": "relu"},
        {"op": "conv2d", "weight": n(27, 8, 1, 1, scale=0.1), "padding": "zero"},
        {"op": "depth_to_space", "factor": 3},
        {"op": "conv2d", "weight": n(3, 3, 3, 3, scale=0.05) + np.float32(1 / 9 / 3), "bias": n(3, scale=0.02),
         "padding": "zero", "activation": "relu", "add_model_input": 1},
    ]
    return [("v2-unshuffle", unshuffle, 2), ("v2-factor3", factor3, 3)]


def check_restores(exe, tmp, tag, model_path, model, images, failures):
    """Runs the tool on each image and compares with the numpy forward pass."""
    for name, img in images:
        src, dst = os.path.join(tmp, name), os.path.join(tmp, f"out-{tag}-{name}")
        write_pnm(src, img)
        r = run([exe, src, "-m", model_path, "-o", dst, "-d", "cpu", "-q"])
        if r.returncode != 0:
            failures.append(f"{tag} {name}: exit {r.returncode}: {r.stderr}")
            continue
        got = read_pnm(dst).astype(int)
        want = im.restore_uint8(model, img).astype(int)
        if got.shape != want.shape:
            failures.append(f"{tag} {name}: output is {got.shape}, expected {want.shape}")
            continue
        diff = np.abs(got - want)
        print(f"{tag} {name} {img.shape[1]}x{img.shape[0]}: max difference {diff.max()} level(s), "
              f"{int((diff > 0).sum())} of {diff.size} samples differ")
        # fp32 (C++) against float64 (numpy), then rounding: a value near a
        # rounding boundary may land one level apart, never more.
        if diff.max() > 1:
            failures.append(f"{tag} {name}: C++ and numpy differ by {diff.max()} levels")
        if np.array_equal(got, img.astype(int)):
            failures.append(f"{tag} {name}: the model changed nothing")


def run(args):
    return subprocess.run(args, capture_output=True, text=True)


def main():
    exe = sys.argv[1]
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        model_path = os.path.join(tmp, "random.h5")
        stages_v1 = random_model(rng)
        used = {s["op"] for s in stages_v1}  # the kinds of stage this test runs
        im.write_model(model_path, "random", "test", "random weights", "tests/python_interop_test.py", 3, stages_v1)
        info = run([exe, "model", model_path])
        if info.returncode != 0 or "receptive    14x14" not in info.stdout:
            failures.append(f"`imrestore model` exit {info.returncode}:\n{info.stdout}{info.stderr}")

        model = im.read_model(model_path)
        if model["format_version"] != 1:
            failures.append(f"the v1 model was written as format_version {model['format_version']}")
        images = [("rgb.ppm", rng.integers(0, 256, (29, 41, 3), dtype=np.uint8)),
                  ("gray.pgm", rng.integers(0, 256, (33, 27), dtype=np.uint8))]
        check_restores(exe, tmp, "v1", model_path, model, images, failures)

        # Format v2. Odd sizes (and, for factor 3, sizes 1 and 2 past a multiple
        # of 3) so the replicate padding to the model's downscale and the crop
        # back are exercised.
        images_v2 = images + [("rgb-b.ppm", rng.integers(0, 256, (31, 40, 3), dtype=np.uint8)),
                              ("gray-b.pgm", rng.integers(0, 256, (28, 26), dtype=np.uint8))]
        for tag, stages, m in random_v2_models(rng):
            used |= {s["op"] for s in stages}
            path = os.path.join(tmp, tag + ".h5")
            im.write_model(path, tag, "test", "random weights", "tests/python_interop_test.py", 3, stages)
            model = im.read_model(path)
            if model["format_version"] != 2 or model["downscale"] != m:
                failures.append(f"{tag}: written as format_version {model['format_version']}, downscale "
                                f"{model['downscale']} (expected 2, {m})")
            info = run([exe, "model", path])
            if info.returncode != 0:
                failures.append(f"{tag}: `imrestore model` exit {info.returncode}:\n{info.stdout}{info.stderr}")
            check_restores(exe, tmp, tag, path, model, images_v2, failures)

        for op in sorted(set(im.OPS) - used):
            failures.append(f"imrestore_model knows op {op!r}, but no model of this test has a stage of it")

        bad = os.path.join(tmp, "bad.h5")
        with h5py.File(bad, "w") as f:
            for key, value in {"format": "imrestore-model", "name": "bad", "task": "t", "description": "d",
                               "provenance": "p"}.items():
                f.attrs[key] = value
            f.attrs["format_version"] = 1
            f.attrs["channels"] = 3
            g = f.create_group("stages").create_group("0")
            g.attrs["op"] = "conv2d"
            g["weight"] = np.zeros((3, 3, 3), np.float32)
        r = run([exe, os.path.join(tmp, "rgb.ppm"), "-m", bad, "-o", os.path.join(tmp, "x.ppm")])
        if r.returncode != 2 or "dataset 'weight': expected rank 4, found rank 3" not in r.stderr:
            failures.append(f"bad model: exit {r.returncode}, stderr: {r.stderr}")

    for f in failures:
        print("FAILED:", f)
    print("python interop:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
