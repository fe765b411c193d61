#!/usr/bin/env python3
"""The Python writer and the C++ tool agree: random multi-stage models written
by weights/imrestore_model.py (a format-v1 one, two format-v2 ones: the
unshuffle CNN with relu and add_model_input, and a space_to_depth(3) one, and
three format-v3 graphs: a small U-Net, a NAFNet-like block and a chain of
activations) load in `imrestore model`, and `imrestore` restores random RGB
and gray images of odd sizes (so the replicate padding to a multiple of the
models' size multiple is exercised) to within one 8-bit level of the
independent float64 numpy forward pass (imrestore_model.restore_uint8). A
model with a wrong shape written by plain h5py is refused with exit code 2.

The C++ half of the format-v3 checks runs only where `imrestore model`
accepts format_version 3 (it says why it skips otherwise); the Python half
(write -> read -> the same stages and the same numpy forward pass, and the
refusals of malformed graphs) always runs.

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


def random_v3_models(rng):
    """Format-v3 graphs: (name, stages, size multiple, extra_inputs). Between
    them every v3 kind and feature: named tensors and wiring, conv2d's stride
    and residual input, conv_transpose2d (with a residual), add, mul, concat,
    the four activation functions, simple_gate, layer_norm, depthwise_conv2d
    (zero and reflect padding), channel_attention whose window is smaller
    than the image (so the clipped local mean matters)."""
    def n(*shape, scale):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    unet = [
        {"op": "conv2d", "name": "head", "weight": n(8, 3, 3, 3, scale=0.2), "bias": n(8, scale=0.05),
         "padding": "zero", "activation": "relu"},
        {"op": "conv2d", "name": "down1", "weight": n(16, 8, 2, 2, scale=0.2), "bias": n(16, scale=0.05),
         "stride": 2, "activation": "relu"},
        {"op": "conv2d", "name": "mid", "inputs": "down1,down1", "weight": n(16, 16, 3, 3, scale=0.05),
         "padding": "reflect"},
        {"op": "conv2d", "name": "down2", "weight": n(16, 16, 2, 2, scale=0.1), "stride": 2},
        {"op": "conv_transpose2d", "name": "up2", "inputs": ["down2", "mid"], "weight": n(16, 16, 2, 2, scale=0.1),
         "stride": 2},
        {"op": "conv_transpose2d", "name": "up1", "weight": n(16, 8, 2, 2, scale=0.1), "bias": n(8, scale=0.05),
         "stride": 2},
        {"op": "add", "name": "skip", "inputs": "up1,head"},
        {"op": "concat", "name": "cat", "inputs": "skip,input,head"},
        {"op": "conv2d", "name": "tail", "inputs": "cat,input", "weight": n(3, 19, 3, 3, scale=0.03),
         "bias": n(3, scale=0.02), "padding": "replicate"},
    ]
    naf = [
        {"op": "layer_norm", "name": "ln", "weight": 1 + n(3, scale=0.1), "bias": n(3, scale=0.1), "eps": 1e-5},
        {"op": "conv2d", "name": "expand", "weight": n(8, 3, 1, 1, scale=0.3), "bias": n(8, scale=0.05)},
        {"op": "depthwise_conv2d", "name": "dw", "weight": n(8, 1, 3, 3, scale=0.3), "bias": n(8, scale=0.05),
         "padding": "zero"},
        {"op": "depthwise_conv2d", "name": "dw5", "weight": n(8, 1, 5, 5, scale=0.1), "padding": "reflect"},
        {"op": "simple_gate", "name": "gate"},
        {"op": "channel_attention", "name": "ca", "weight": n(4, 4, scale=0.5), "bias": 1 + n(4, scale=0.1),
         "window": 5},
        {"op": "conv2d", "name": "proj", "inputs": "ca,input", "weight": n(3, 4, 1, 1, scale=0.1)},
        {"op": "conv2d", "name": "g2", "weight": n(6, 3, 1, 1, scale=0.5), "bias": 0.5 + n(6, scale=0.1)},
        {"op": "simple_gate", "name": "sg2"},
        {"op": "mul", "name": "m", "inputs": "sg2,proj"},
        {"op": "conv2d", "name": "down", "inputs": "proj", "weight": n(12, 3, 2, 2, scale=0.2), "stride": 2},
        {"op": "channel_attention", "name": "ca2", "weight": n(12, 12, scale=0.2), "bias": n(12, scale=0.1),
         "window": 4},
        {"op": "depth_to_space", "name": "up", "factor": 2},
        {"op": "add", "name": "out", "inputs": "up,m"},
        {"op": "add", "name": "final", "inputs": "out,input"},
    ]
    acts = [
        {"op": "conv2d", "weight": n(6, 3, 3, 3, scale=0.3), "bias": n(6, scale=0.1)},
        {"op": "activation", "function": "gelu"},
        {"op": "conv2d", "weight": n(6, 6, 1, 1, scale=0.4), "bias": n(6, scale=0.1)},
        {"op": "activation", "name": "s", "function": "silu"},
        {"op": "conv2d", "weight": n(6, 6, 1, 1, scale=0.4)},
        {"op": "activation", "name": "lr", "function": "leaky_relu", "slope": 0.1},
        {"op": "activation", "name": "r", "function": "relu"},
        {"op": "concat", "inputs": "r,s,lr"},
        {"op": "space_to_depth", "factor": 2},
        {"op": "conv2d", "weight": n(12, 72, 1, 1, scale=0.05)},
        {"op": "depth_to_space", "factor": 2, "add_model_input": 1},
    ]
    extra = [  # a noise-level map, as DRUNet and FFDNet take one (the C++ CLI's option for it is not tested here)
        {"op": "concat", "inputs": "input,noise_level"},
        {"op": "conv2d", "weight": n(3, 4, 3, 3, scale=0.1), "padding": "replicate"},
        {"op": "add", "inputs": "1,input"},
    ]
    return [("v3-unet", unet, 4, []), ("v3-naf", naf, 2, []), ("v3-activations", acts, 2, []),
            ("v3-extra-input", extra, 1, ["noise_level"])]


def check_v3_python(tmp, tag, stages, m, extra_inputs, failures):
    """Write -> read gives the same stages, version 3, the size multiple, and the
    same numpy forward pass as the stages written; returns the model read."""
    path = os.path.join(tmp, tag + ".h5")
    im.write_model(path, tag, "test", "random weights", "tests/python_interop_test.py", 3, stages,
                   extra_inputs=extra_inputs)
    model = im.read_model(path)
    if model["format_version"] != 3 or model["size_multiple"] != m or model["extra_inputs"] != extra_inputs:
        failures.append(f"{tag}: read back as format_version {model['format_version']}, size multiple "
                        f"{model['size_multiple']}, extra inputs {model['extra_inputs']} (expected 3, {m}, "
                        f"{extra_inputs})")
    for i, (a, b) in enumerate(zip(stages, model["stages"])):
        for key, value in a.items():
            got = b.get(key)
            if key == "inputs" and isinstance(value, str):
                value = value.split(",")
            if key == "inputs" and isinstance(got, str):
                got = got.split(",")
            same = (np.array_equal(value, got) if isinstance(value, np.ndarray) else
                    (got == value or (isinstance(value, float) and abs(got - value) < 1e-12)))
            if not same:
                failures.append(f"{tag}: stage {i} {key} read back as {got!r}, written {value!r}")
    memory = {"channels": 3, "stages": stages, "extra_inputs": extra_inputs}
    values = {"noise_level": 25 / 255} if extra_inputs else None
    x = rng_image(tag)
    a, b = im.apply_model(memory, x, values), im.apply_model(model, x, values)
    if a.shape != x.shape or not np.array_equal(a, b) or not np.all(np.isfinite(a)):
        failures.append(f"{tag}: the numpy forward of the file read back differs from the stages written")
    print(f"{tag}: python write -> read -> forward ok ({len(stages)} stages, receptive field "
          f"{model['receptive_field']}, size multiple {m})")
    return path, model


def rng_image(tag):
    return np.random.default_rng(len(tag)).random((3, 23, 30))


def v3_refusals(rng, failures):
    """Graphs the format refuses: the writer raises ModelError before writing."""
    def conv(cin, cout, **kw):
        return {"op": "conv2d", "weight": (rng.standard_normal((cout, cin, 3, 3)) * 0.1).astype(np.float32), **kw}

    cases = {
        "input of a later stage": [conv(3, 3, inputs="b"), conv(3, 3, name="b")],
        "undefined input": [conv(3, 3, inputs="nope")],
        "dead stage": [conv(3, 3, name="a"), conv(3, 3, name="b", inputs="input")],
        "name twice": [conv(3, 3, name="a"), conv(3, 3, name="a")],
        "name starting with a digit": [conv(3, 3, name="1a")],
        "name input": [conv(3, 3, name="input")],
        "name with a space": [conv(3, 3, name="a b")],
        "add of other channel counts": [conv(3, 4, name="a"), {"op": "add", "inputs": "a,input"},
                                        conv(4, 3)],
        "add at other scales": [{"op": "conv2d", "name": "d", "weight": np.zeros((3, 3, 2, 2), np.float32),
                                 "stride": 2}, {"op": "add", "inputs": "d,input"}],
        "add of one input": [{"op": "add", "inputs": "input"}],
        "concat of 17": [{"op": "concat", "inputs": ",".join(["input"] * 17)}],
        "simple_gate of odd channels": [{"op": "simple_gate"}],
        "strided conv2d with K != stride": [{"op": "conv2d", "weight": np.zeros((3, 3, 3, 3), np.float32),
                                             "stride": 2}],
        "size multiple over 64": [{"op": "space_to_depth", "factor": 8},
                                  {"op": "conv2d", "weight": np.zeros((3, 192, 1, 1), np.float32)},
                                  {"op": "space_to_depth", "factor": 8},
                                  {"op": "conv2d", "weight": np.zeros((3, 192, 1, 1), np.float32)},
                                  {"op": "space_to_depth", "factor": 2}],
        "lcm over 64": [{"op": "space_to_depth", "factor": 8}, {"op": "depth_to_space", "factor": 8, "name": "a"},
                        {"op": "space_to_depth", "factor": 3, "inputs": "input"}, {"op": "space_to_depth", "factor": 3},
                        {"op": "depth_to_space", "factor": 3}, {"op": "depth_to_space", "factor": 3},
                        {"op": "add", "inputs": "a,5"}],
        "depth_to_space past full resolution": [conv(3, 12), {"op": "depth_to_space", "factor": 2}],
        "residual of another shape": [conv(3, 6, name="a"), conv(6, 3, inputs="a,a")],
        "residual and add_model_input": [conv(3, 3, inputs="input,input", add_model_input=1)],
        "unknown activation": [{"op": "activation", "function": "tanh"}],
        "slope without leaky_relu": [{"op": "activation", "function": "relu", "slope": 0.1}],
        "channel_attention window 0": [{"op": "channel_attention", "weight": np.eye(3, dtype=np.float32),
                                        "bias": np.zeros(3, np.float32), "window": 0}],
        "depthwise even kernel": [{"op": "depthwise_conv2d", "weight": np.zeros((3, 1, 2, 2), np.float32)}],
        "conv_transpose2d kernel != stride": [{"op": "conv_transpose2d", "stride": 2,
                                               "weight": np.zeros((3, 3, 3, 3), np.float32)}],
        "layer_norm eps 0": [{"op": "layer_norm", "weight": np.ones(3, np.float32), "bias": np.zeros(3, np.float32),
                              "eps": 0.0}],
        "unknown op": [{"op": "tanh"}],
    }
    extra_cases = {"unknown extra input": (["noise"], None), "extra input twice": (["noise_level"] * 2, None),
                   "output not a tensor": ([], "nope")}
    for what, stages in cases.items():
        try:
            im.write_model(os.devnull, "bad", "test", "d", "p", 3, stages)
            failures.append(f"the writer accepted a graph with {what}")
        except im.ModelError as e:
            print(f"refused ({what}): {e}")
    for what, (extra_inputs, output) in extra_cases.items():
        try:
            im.write_model(os.devnull, "bad", "test", "d", "p", 3, [conv(3, 3)], extra_inputs=extra_inputs,
                           output=output)
            failures.append(f"the writer accepted a model with {what}")
        except im.ModelError as e:
            print(f"refused ({what}): {e}")


def cxx_reads_v3(exe, tmp):
    """None when `imrestore model` accepts a format-v3 file, else why not."""
    path = os.path.join(tmp, "v3-probe.h5")
    w = np.zeros((3, 3, 1, 1), np.float32)
    probe = [{"op": "conv2d", "name": "a", "weight": w}, {"op": "conv2d", "inputs": "a,input", "weight": w}]
    im.write_model(path, "probe", "test", "d", "p", 3, probe)
    r = run([exe, "model", path])
    if r.returncode == 0:
        return None
    if "format_version 3" in r.stderr and "not supported" in r.stderr:
        return r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
    return None  # refused for another reason: the comparisons below report it


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

        # Format v3: the Python round trip always, the C++ comparison where the tool reads v3.
        v3_refusals(rng, failures)
        why_not = cxx_reads_v3(exe, tmp)
        if why_not:
            print(f"SKIPPED: the C++ comparison of the format-v3 models: `imrestore model` does not accept "
                  f"format_version 3 ({why_not})")
        for tag, stages, m, extra_inputs in random_v3_models(rng):
            used |= {s["op"] for s in stages}
            path, model = check_v3_python(tmp, tag, stages, m, extra_inputs, failures)
            if why_not or extra_inputs:
                continue  # extra inputs: the CLI's options for their values are not this test's business
            info = run([exe, "model", path])
            if info.returncode != 0 or f"receptive    {model['receptive_field']}x" not in info.stdout:
                failures.append(f"{tag}: `imrestore model` exit {info.returncode} (expected receptive field "
                                f"{model['receptive_field']}):\n{info.stdout}{info.stderr}")
                continue
            check_restores(exe, tmp, tag, path, model, images_v2, failures)
        # Format v4: the U-Net with float16 weights, read back as the halves and run by the tool alike.
        tag, stages = "v4-unet-float16", random_v3_models(rng)[0][1]
        path = os.path.join(tmp, tag + ".h5")
        im.write_model(path, tag, "test", "random weights", "tests/python_interop_test.py", 3, stages,
                       weight_dtype="float16")
        model = im.read_model(path)
        halves = all(np.array_equal(b[k], np.asarray(a[k]).astype(np.float16).astype(np.float32))
                     for a, b in zip(stages, model["stages"]) for k in im.OPS[a["op"]].datasets if k in a)
        if model["format_version"] != 4 or model["weight_dtype"] != "float16" or not halves:
            failures.append(f"{tag}: read back as format_version {model['format_version']}, weights "
                            f"{model['weight_dtype']}, halves {halves} (expected 4, float16, True)")
        print(f"{tag}: python write -> read gives the weights rounded to float16 (format_version "
              f"{model['format_version']})")
        if not why_not:
            check_restores(exe, tmp, tag, path, model, images_v2, failures)
        # Bundling a model: rewrite_model renames it and appends to its description; weights of the
        # same dtype keep their validated precisions, new ones drop them (measured with the old weights).
        with h5py.File(path, "a") as f:
            f.attrs["validated_precisions"] = "fp16"
        renamed = os.path.join(tmp, "renamed.h5")
        im.rewrite_model(path, renamed, "float16", name="bundled", append_description="Speed: fast.",
                         prepend_description="A variant.")
        again = im.read_model(renamed)
        with h5py.File(renamed, "r") as f:
            kept = f.attrs.get("validated_precisions")
        if (again["name"], again["description"], kept) != ("bundled", "A variant. random weights Speed: fast.",
                                                            "fp16") or "put before its description" not in \
                again["provenance"]:
            failures.append(f"rewrite_model --name --append-description: {again['name']!r}, "
                            f"{again['description']!r}, validated {kept!r}")
        replaced = os.path.join(tmp, "replaced.h5")
        im.rewrite_model(renamed, replaced, "float16", replace_description=("fast", "faster"))
        if im.read_model(replaced)["description"] != "A variant. random weights Speed: faster." or \
                "'fast' in its description replaced by 'faster'" not in im.read_model(replaced)["provenance"]:
            failures.append("rewrite_model replace_description: " + im.read_model(replaced)["description"])
        try:
            im.rewrite_model(renamed, replaced, "float16", replace_description=("a", "b"))  # "a" occurs 3 times
            failures.append("rewrite_model replaced a phrase that occurs more than once")
        except im.ModelError:
            pass
        im.rewrite_model(path, renamed, "float32")
        with h5py.File(renamed, "r") as f:
            if "validated_precisions" in f.attrs or im.read_model(renamed)["name"] != tag:
                failures.append("rewrite_model to float32 kept the validated precisions or lost the name")
        print(f"{tag}: rewrite_model renames, adds to the description, keeps or drops validated precisions")
        # Averaging with another run of the same network (a model soup): each
        # weight w x one + (1 - w) x the other in float64, rounded once to the
        # stored type; the validated precisions go; another network is refused.
        other_stages = [{k: (rng.standard_normal(np.shape(v)).astype(np.float32) if isinstance(v, np.ndarray) else v)
                         for k, v in st.items()} for st in stages]
        other = os.path.join(tmp, "other.h5")
        im.write_model(other, "other", "test", "random weights", "tests/python_interop_test.py", 3, other_stages,
                       weight_dtype="float16")
        with h5py.File(path, "a") as f:
            f.attrs["validated_precisions"] = "fp16"
        soup = os.path.join(tmp, "soup.h5")
        w = float(rng.uniform(0.2, 0.8))
        im.rewrite_model(path, soup, "float16", average_with=other, average_weight=w)
        mixed, first, second = im.read_model(soup), im.read_model(path), im.read_model(other)
        exact = all(np.array_equal(m[k], (w * np.asarray(a[k], np.float64) + (1 - w) * np.asarray(b[k], np.float64))
                                   .astype(np.float16).astype(np.float32))
                    for m, a, b in zip(mixed["stages"], first["stages"], second["stages"])
                    for k in im.OPS[a["op"]].datasets if k in a)
        with h5py.File(soup, "r") as f:
            dropped = "validated_precisions" not in f.attrs
        if not exact or not dropped or "that of 'other'" not in mixed["provenance"]:
            failures.append(f"rewrite_model average_with: weights exact {exact}, validated precisions dropped "
                            f"{dropped}, provenance {mixed['provenance'][-200:]!r}")
        if not why_not:
            check_restores(exe, tmp, tag + "-soup", soup, mixed, images_v2, failures)
        for bad_weight, bad_model in ((1.0, other), (0.5, model_path)):  # a weight outside (0, 1); another network
            try:
                im.rewrite_model(path, soup, "float16", average_with=bad_model, average_weight=bad_weight)
                failures.append(f"rewrite_model averaged with {bad_model} at weight {bad_weight}")
            except im.ModelError:
                pass
        print(f"{tag}: rewrite_model averages two runs of one network (weight {w:.3f}), refuses others")
        if not why_not:
            dead = os.path.join(tmp, "dead.h5")  # written by plain h5py: the writer refuses it
            one = [{"op": "conv2d", "name": "a", "weight": np.zeros((3, 3, 1, 1), np.float32)}]
            im.write_model(dead, "dead", "test", "d", "p", 3, one)
            with h5py.File(dead, "a") as f:
                f.attrs["format_version"] = 3
                g = f["stages"].create_group("1")
                g.attrs["op"] = "conv2d"
                g.attrs["inputs"] = "input"
                g["weight"] = np.zeros((3, 3, 1, 1), np.float32)
                f.attrs["output"] = "a"
            r = run([exe, os.path.join(tmp, "rgb.ppm"), "-m", dead, "-o", os.path.join(tmp, "x.ppm")])
            if r.returncode != 2:
                failures.append(f"a model with a dead stage: exit {r.returncode}, stderr: {r.stderr}")
            try:
                im.read_model(dead)
                failures.append("read_model accepted a model with a dead stage")
            except im.ModelError:
                pass

        # A model of 70 stages in a file written with HDF5's v1.8 group format
        # (HDF5 2.0's default): libhdf5 1.10 sorts such a group's links when
        # the reader lists them, and glibc's qsort asks the kernel how much
        # memory there is first; the reader's sandbox must allow that.
        long_path = os.path.join(tmp, "long.h5")
        long_stages = [{"op": "conv2d", "weight": (np.eye(3, dtype=np.float32) * 0.99)[:, :, None, None]}
                       for _ in range(70)]
        im.write_model(long_path, "long", "test", "70 stages", "tests/python_interop_test.py", 3, long_stages)
        v18_path = os.path.join(tmp, "long-v18.h5")
        with h5py.File(long_path, "r") as src, h5py.File(v18_path, "w", libver=("v108", "latest")) as dst:
            for key, value in src.attrs.items():
                dst.attrs[key] = value
            stages_group = dst.create_group("stages")
            for name, group in src["stages"].items():
                g = stages_group.create_group(name)
                for key, value in group.attrs.items():
                    g.attrs[key] = value
                for key, value in group.items():
                    g[key] = value[()]
        info = run([exe, "model", v18_path])
        if info.returncode != 0 or "parameters   630" not in info.stdout:
            failures.append(f"a 70-stage model in the v1.8 group format: `imrestore model` exit {info.returncode}:\n"
                            f"{info.stdout}{info.stderr}")

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
