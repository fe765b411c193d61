"""Read, write and run imrestore model files (formats v1 and v2).

The format is specified by weights/README.md (the file, its root attributes,
the stages group, the versions) and, for each kind of stage, by the comment at
the top of its C++ header in app/layers/, which is normative.

Python 3 with numpy and h5py (Debian: python3-numpy, python3-h5py). This
module implements the format for the kinds in OPS (the ones the training
writes): `write_model` writes what the C++ loader (app/model_file.h) reads,
`read_model` refuses what it refuses, and `apply_model` computes what the
CPU/CUDA backends compute (in float64), so it can evaluate a model file
honestly without building the tool. A kind only the C++ tool has is refused
here as unknown.

    import imrestore_model as im
    im.write_model("my.h5", "my", "denoise", "...", "...", 3, stages)
    model = im.read_model("my.h5")
    out = im.apply_model(model, image_chw)        # float planes [C, H, W]
    out8 = im.restore_uint8(model, image_hwc_u8)  # as the CLI does for 8-bit images
"""

import math

import h5py
import numpy as np

FORMAT = "imrestore-model"
FORMAT_VERSION = 2  # the newest version this module reads; write_model writes 1 unless a v2 feature is used
OPS = ("residual_block", "conv2d", "space_to_depth", "depth_to_space")
V2_OPS = ("space_to_depth", "depth_to_space")
PADDINGS = ("reflect", "replicate", "zero")
ACTIVATIONS = ("none", "relu")
FACTOR_RANGE = (2, 8)
MAX_DOWNSCALE = 64  # the product of the nested space_to_depth factors, at most
# np.pad mode for each conv2d padding name.
NP_PAD_MODE = {"reflect": "reflect", "replicate": "edge", "zero": "constant"}

# Datasets of each op: name -> (required, rank).
OP_DATASETS = {
    "residual_block": {
        "conv_in_weight": (True, 4),
        "conv_in_bias": (True, 1),
        "conv_out_weight": (True, 4),
        "conv_out_bias": (True, 1),
    },
    "conv2d": {
        "weight": (True, 4),
        "bias": (False, 1),
    },
    "space_to_depth": {},
    "depth_to_space": {},
}


class ModelError(ValueError):
    """A model that does not follow the format (message names the file, stage and what)."""


def _int_value(where, stage, key, default):
    v = stage.get(key, default)
    if isinstance(v, np.ndarray) and v.size == 1:
        v = v.reshape(()).item()
    if isinstance(v, np.integer):
        v = int(v)
    if not isinstance(v, int) or isinstance(v, bool):
        raise ModelError(f"{where}: {key} must be an integer, is {v!r}")
    return v


def _add_model_input(where, stage, cout, scale, model_channels):
    """Validates the optional add_model_input (0 or 1) of a stage whose output
    has cout channels at downscale `scale`; returns it."""
    add = _int_value(where, stage, "add_model_input", 0)
    if add not in (0, 1):
        raise ModelError(f"{where}: add_model_input is {add}, must be 0 or 1")
    if add and (cout != model_channels or scale != 1):
        raise ModelError(f"{where}: add_model_input needs the model's {model_channels} channels at full "
                         f"resolution, the stage gives {cout} channels at 1/{scale} resolution")
    return add


def _check_stage(where, stage, channels, scale=1, model_channels=None):
    """Validates one stage dict; returns (channels, downscale) after it."""
    op = stage.get("op")
    if op not in OPS:
        raise ModelError(f"{where}: unknown op {op!r} (known: {', '.join(OPS)})")
    if op in V2_OPS:
        f = _int_value(where, stage, "factor", None) if "factor" in stage else None
        if f is None:
            raise ModelError(f"{where}: op {op} needs integer attribute 'factor'")
        if not FACTOR_RANGE[0] <= f <= FACTOR_RANGE[1]:
            raise ModelError(f"{where}: factor {f} is not in {FACTOR_RANGE[0]}..{FACTOR_RANGE[1]}")
        if op == "space_to_depth":
            if "add_model_input" in stage and _int_value(where, stage, "add_model_input", 0) != 0:
                raise ModelError(f"{where}: space_to_depth has no add_model_input")
            if scale * f > MAX_DOWNSCALE:
                raise ModelError(f"{where}: reduces the resolution by more than {MAX_DOWNSCALE} in all")
            return channels * f * f, scale * f
        if channels % (f * f) != 0:
            raise ModelError(f"{where}: depth_to_space({f}) needs channels divisible by {f * f}, gets {channels}")
        if scale % f != 0:
            raise ModelError(f"{where}: depth_to_space({f}) at 1/{scale} resolution would go past full resolution")
        cout, scale = channels // (f * f), scale // f
        _add_model_input(where, stage, cout, scale, model_channels)
        return cout, scale
    spec = OP_DATASETS[op]
    arrays = {}
    for key, (required, rank) in spec.items():
        value = stage.get(key)
        if value is None:
            if required:
                raise ModelError(f"{where}: op {op} needs dataset {key!r}")
            continue
        arr = np.asarray(value)
        if arr.dtype != np.float32:
            raise ModelError(f"{where}: {key} is {arr.dtype}, must be float32")
        if arr.ndim != rank:
            raise ModelError(f"{where}: {key} has rank {arr.ndim} {list(arr.shape)}, must be {rank}")
        if arr.size == 0:
            raise ModelError(f"{where}: {key} is empty {list(arr.shape)}")
        if not np.all(np.isfinite(arr)):
            raise ModelError(f"{where}: {key} holds non-finite values")
        arrays[key] = arr
    if op == "residual_block":
        wi, bi = arrays["conv_in_weight"], arrays["conv_in_bias"]
        wo, bo = arrays["conv_out_weight"], arrays["conv_out_bias"]
        hidden = wi.shape[0]
        if wi.shape != (hidden, channels, 3, 3):
            raise ModelError(f"{where}: conv_in_weight is {list(wi.shape)}, must be [H,{channels},3,3]")
        if bi.shape != (hidden,):
            raise ModelError(f"{where}: conv_in_bias is {list(bi.shape)}, must be [{hidden}]")
        if wo.shape != (channels, hidden, 3, 3):
            raise ModelError(f"{where}: conv_out_weight is {list(wo.shape)}, must be [{channels},{hidden},3,3]")
        if bo.shape != (channels,):
            raise ModelError(f"{where}: conv_out_bias is {list(bo.shape)}, must be [{channels}]")
        return channels, scale
    # conv2d
    w = arrays["weight"]
    cout, cin, k, k2 = w.shape
    if cin != channels:
        raise ModelError(f"{where}: weight is {list(w.shape)}, takes {cin} channels but gets {channels}")
    if k != k2:
        raise ModelError(f"{where}: weight is {list(w.shape)}, kernel must be square")
    if "bias" in arrays and arrays["bias"].shape != (cout,):
        raise ModelError(f"{where}: bias is {list(arrays['bias'].shape)}, must be [{cout}]")
    padding = stage.get("padding", "reflect")
    if padding not in PADDINGS:
        raise ModelError(f"{where}: padding {padding!r} is not one of {', '.join(PADDINGS)}")
    activation = stage.get("activation", "none")
    if activation not in ACTIVATIONS:
        raise ModelError(f"{where}: activation {activation!r} is not one of {', '.join(ACTIVATIONS)}")
    _add_model_input(where, stage, cout, scale, model_channels)
    return cout, scale


def check_stages(stages, channels, where="model"):
    """Validates a list of stage dicts against the format (shapes, dtypes, channel chain)."""
    if channels not in (1, 3):
        raise ModelError(f"{where}: channels is {channels}, must be 1 or 3")
    if len(stages) == 0:
        raise ModelError(f"{where}: no stages")
    c, scale = channels, 1
    for i, stage in enumerate(stages):
        c, scale = _check_stage(f"{where}: stage {i}", stage, c, scale, channels)
    if scale != 1:
        raise ModelError(f"{where}: the last stage gives 1/{scale} resolution, the model must end at full resolution")
    if c != channels:
        raise ModelError(f"{where}: the last stage gives {c} channels, the model takes and gives {channels}")


def uses_v2(stages):
    """True when a stage uses a format-v2 feature (then the file is format_version 2)."""
    for s in stages:
        if s["op"] in V2_OPS:
            return True
        if s["op"] == "conv2d" and (s.get("activation", "none") != "none" or int(s.get("add_model_input", 0)) != 0):
            return True
    return False


def downscale(stages):
    """The model's total downscale M: the smallest size multiple every stage can
    take, i.e. the least common multiple of the resolution reductions the stages
    reach; for nested space_to_depth stages (the unshuffle CNN: one of them) that is
    the product of their factors; 1 without any. Images whose height or width is
    not a multiple of M are replicate-padded at the bottom/right up to the next
    multiple, run, and cropped back."""
    m, scale = 1, 1
    for s in stages:
        if s["op"] == "space_to_depth":
            scale *= int(s["factor"])
        elif s["op"] == "depth_to_space":
            scale //= int(s["factor"])
        m = math.lcm(m, scale)
    return m


def receptive_field(stages):
    """The width of the input window one output pixel depends on (at most): 1, plus
    4 per residual_block and K-1 per conv2d, each times the downscale it runs at,
    plus (f-1) times the downscale before it per space_to_depth(f). v1 models:
    1 + 4 * residual_blocks + sum(K-1)."""
    rf, scale = 1, 1
    for s in stages:
        if s["op"] == "residual_block":
            rf += 4 * scale
        elif s["op"] == "conv2d":
            rf += (np.asarray(s["weight"]).shape[2] - 1) * scale
        elif s["op"] == "space_to_depth":
            rf += (int(s["factor"]) - 1) * scale
            scale *= int(s["factor"])
        else:
            scale //= int(s["factor"])
    return rf


def write_model(path, name, task, description, provenance, channels, stages, license=None, extra_attrs=None):
    """Writes a model file: format_version 1, or 2 when a stage uses a v2
    feature. stages: list of dicts, e.g.
        {"op": "residual_block", "conv_in_weight": [H,C,3,3], "conv_in_bias": [H],
         "conv_out_weight": [C,H,3,3], "conv_out_bias": [C]}
        {"op": "conv2d", "weight": [Cout,Cin,K,K], "bias": [Cout] (optional),
         "padding": "reflect" | "replicate" | "zero" (optional, default reflect),
         "activation": "none" | "relu" (v2, optional, default none),
         "add_model_input": 0 | 1 (v2, optional, default 0)}
        {"op": "space_to_depth", "factor": f}                        (v2)
        {"op": "depth_to_space", "factor": f, "add_model_input": 0 | 1 (optional)}   (v2)
    Arrays must be float32 (use .astype(np.float32)). Raises ModelError for
    anything the loaders would refuse, before writing. extra_attrs: optional
    dict of further root attributes (str or int values), which readers ignore.
    The v2 attributes are written only where they differ from their defaults,
    so a v1 model gives the same bytes as before v2 existed."""
    for key, value in (("name", name), ("task", task), ("description", description), ("provenance", provenance)):
        if not isinstance(value, str) or not value:
            raise ModelError(f"{path}: {key} must be a non-empty string")
    if license is not None and not isinstance(license, str):
        raise ModelError(f"{path}: license must be a string")
    channels = int(channels)
    check_stages(stages, channels, where=path)
    version = 2 if uses_v2(stages) else 1
    reserved = {"format", "format_version", "name", "task", "description", "provenance", "channels", "license"}
    for key, value in (extra_attrs or {}).items():
        if key in reserved or not isinstance(value, (str, int)) or isinstance(value, bool):
            raise ModelError(f"{path}: extra attribute {key!r} must be a new name with a str or int value")
        if key == "validated_precisions":
            parse_validated_precisions(path, value)
    # No modification times in object headers, so the same model gives the
    # same bytes (reproducible builds, no churn in git).
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    fcpl.set_obj_track_times(False)
    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    gcpl.set_obj_track_times(False)
    fid = h5py.h5f.create(path.encode() if isinstance(path, str) else path, h5py.h5f.ACC_TRUNC, fcpl=fcpl)

    def group(parent, name):
        return h5py.Group(h5py.h5g.create(parent.id, name.encode(), gcpl=gcpl))

    with h5py.File(fid) as f:
        f.attrs["format"] = FORMAT
        f.attrs["format_version"] = np.int64(version)
        f.attrs["name"] = name
        f.attrs["task"] = task
        f.attrs["description"] = description
        f.attrs["provenance"] = provenance
        f.attrs["channels"] = np.int64(channels)
        if license is not None:
            f.attrs["license"] = license
        for key, value in (extra_attrs or {}).items():
            f.attrs[key] = value if isinstance(value, str) else np.int64(value)
        g = group(f, "stages")
        for i, stage in enumerate(stages):
            sg = group(g, str(i))
            sg.attrs["op"] = stage["op"]
            if stage["op"] == "conv2d":
                sg.attrs["padding"] = stage.get("padding", "reflect")
                if stage.get("activation", "none") != "none":
                    sg.attrs["activation"] = stage["activation"]
            if stage["op"] in V2_OPS:
                sg.attrs["factor"] = np.int64(int(stage["factor"]))
            if stage["op"] in ("conv2d", "depth_to_space") and int(stage.get("add_model_input", 0)) != 0:
                sg.attrs["add_model_input"] = np.int64(1)
            for key in OP_DATASETS[stage["op"]]:
                if stage.get(key) is not None:
                    sg.create_dataset(key, data=np.ascontiguousarray(stage[key], dtype=np.float32),
                                      track_times=False)


def _str_attr(path, attrs, key, required=True):
    if key not in attrs:
        if required:
            raise ModelError(f"{path}: missing attribute {key!r}")
        return None
    v = attrs[key]
    if isinstance(v, bytes):
        v = v.decode("utf-8")
    elif isinstance(v, np.ndarray) and v.shape == () or isinstance(v, np.bytes_):
        v = v.item()
        if isinstance(v, bytes):
            v = v.decode("utf-8")
    if not isinstance(v, str):
        raise ModelError(f"{path}: attribute {key!r} must be a string, is {type(v).__name__}")
    return v


def _int_attr(path, attrs, key, default=None):
    if key not in attrs:
        if default is not None:
            return default
        raise ModelError(f"{path}: missing attribute {key!r}")
    v = attrs[key]
    if isinstance(v, np.ndarray):
        if v.size != 1:
            raise ModelError(f"{path}: attribute {key!r} must be one integer")
        v = v.reshape(()).item()
    if isinstance(v, (np.integer,)):
        v = int(v)
    if not isinstance(v, int) or isinstance(v, bool):
        raise ModelError(f"{path}: attribute {key!r} must be an integer, is {type(v).__name__}")
    return v


HALF_PRECISIONS = ("fp16", "bf16")


def parse_validated_precisions(path, value):
    """The root attribute validated_precisions ("fp16", "bf16,fp16": the half
    precisions `imrestore model NAME --validate-precision` measured within the
    bound of fp32, fastest first) as a list; ModelError for anything else
    (empty, spaces, unknown names, one listed twice), as the C++ loader."""
    if not isinstance(value, str) or not value:
        raise ModelError(f"{path}: attribute 'validated_precisions' must be a non-empty string")
    items = value.split(",")
    for item in items:
        if item not in HALF_PRECISIONS:
            raise ModelError(f"{path}: attribute 'validated_precisions': expected a comma-separated list of "
                             f"fp16 and bf16, found {value!r}")
    if len(set(items)) != len(items):
        raise ModelError(f"{path}: attribute 'validated_precisions': a precision is listed twice in {value!r}")
    return items


def read_model(path):
    """Reads and validates a model file; returns a dict with the root
    attributes (name, task, description, provenance, channels, license,
    format_version, validated_precisions (a list, empty when none),
    precision_validation), "stages" (list of dicts as write_model takes) and
    "receptive_field". Raises ModelError for files the loaders refuse."""
    with h5py.File(path, "r") as f:
        fmt = _str_attr(path, f.attrs, "format")
        if fmt != FORMAT:
            raise ModelError(f"{path}: format is {fmt!r}, not {FORMAT!r}")
        version = _int_attr(path, f.attrs, "format_version")
        if version < 1 or version > FORMAT_VERSION:
            raise ModelError(f"{path}: format_version {version} is not supported (this reader knows 1..{FORMAT_VERSION})")
        model = {"format_version": version}
        for key in ("name", "task", "description", "provenance"):
            model[key] = _str_attr(path, f.attrs, key)
        model["license"] = _str_attr(path, f.attrs, "license", required=False)
        vp = _str_attr(path, f.attrs, "validated_precisions", required=False)
        model["validated_precisions"] = parse_validated_precisions(path, vp) if vp is not None else []
        model["precision_validation"] = _str_attr(path, f.attrs, "precision_validation", required=False)
        model["channels"] = _int_attr(path, f.attrs, "channels")
        if "stages" not in f or not isinstance(f["stages"], h5py.Group):
            raise ModelError(f"{path}: missing group 'stages'")
        g = f["stages"]
        names = list(g.keys())
        n = len(names)
        if sorted(names) != sorted(str(i) for i in range(n)):
            raise ModelError(f"{path}: stages must be named 0..{n - 1} without gaps, found {sorted(names)}")
        stages = []
        for i in range(n):
            sg = g[str(i)]
            where = f"{path}: stage {i}"
            if not isinstance(sg, h5py.Group):
                raise ModelError(f"{where}: is not a group")
            op = _str_attr(where, sg.attrs, "op")
            stage = {"op": op}
            if op not in OPS:
                raise ModelError(f"{where}: unknown op {op!r} (known: {', '.join(OPS)})")
            if op == "conv2d":
                pad = _str_attr(where, sg.attrs, "padding", required=False)
                stage["padding"] = "reflect" if pad is None else pad
                act = _str_attr(where, sg.attrs, "activation", required=False)
                stage["activation"] = "none" if act is None else act
            if op in V2_OPS:
                stage["factor"] = _int_attr(where, sg.attrs, "factor")
            if op in ("conv2d", "depth_to_space"):
                stage["add_model_input"] = _int_attr(where, sg.attrs, "add_model_input", 0)
            if version < 2 and uses_v2([stage]):
                raise ModelError(f"{where}: uses a format-v2 feature ({op}, activation or add_model_input) "
                                 f"but format_version is {version}")
            for key, (required, rank) in OP_DATASETS[op].items():
                if key not in sg:
                    continue
                ds = sg[key]
                if not isinstance(ds, h5py.Dataset):
                    raise ModelError(f"{where}: {key} is not a dataset")
                if ds.dtype.kind != "f" or ds.dtype.itemsize != 4:
                    raise ModelError(f"{where}: {key} is {ds.dtype}, must be float32")
                stage[key] = ds[()].astype(np.float32)
            stages.append(stage)
        check_stages(stages, model["channels"], where=path)
        model["stages"] = stages
        model["receptive_field"] = receptive_field(stages)
        model["downscale"] = downscale(stages)
        if model["downscale"] > MAX_DOWNSCALE:
            raise ModelError(f"{path}: image sides would have to be multiples of {model['downscale']} (the least "
                             f"common multiple of its reductions); at most {MAX_DOWNSCALE} is supported")
        return model


def _correlate(x, w, bias=None):
    """Valid stride-1 cross-correlation: x [Cin, H+K-1, W+K-1], w [Cout, Cin, K, K] -> [Cout, H, W]."""
    cout, cin, k, _ = w.shape
    h, wd = x.shape[1] - k + 1, x.shape[2] - k + 1
    out = np.zeros((cout, h, wd), dtype=np.float64)
    w = w.astype(np.float64)
    for ky in range(k):
        for kx in range(k):
            out += np.tensordot(w[:, :, ky, kx], x[:, ky:ky + h, kx:kx + wd], axes=(1, 0))
    if bias is not None:
        out += np.asarray(bias, dtype=np.float64)[:, None, None]
    return out


def space_to_depth(x, f):
    """[C, H, W] -> [C*f*f, H/f, W/f], out[c*f*f + dy*f + dx][y][x] = x[c][y*f+dy][x*f+dx] (torch PixelUnshuffle)."""
    c, h, w = x.shape
    if h % f or w % f:
        raise ModelError(f"space_to_depth({f}): image {h}x{w} is not a multiple of {f}")
    return x.reshape(c, h // f, f, w // f, f).transpose(0, 2, 4, 1, 3).reshape(c * f * f, h // f, w // f)


def depth_to_space(x, f):
    """The inverse of space_to_depth (torch PixelShuffle): [C*f*f, H, W] -> [C, H*f, W*f]."""
    cff, h, w = x.shape
    c = cff // (f * f)
    return x.reshape(c, f, f, h, w).transpose(0, 3, 1, 4, 2).reshape(c, h * f, w * f)


def apply_stage(stage, x, model_input=None):
    """One stage on planes x [C, H, W] (float64), exactly as the backends define it.
    model_input: the (padded) model input, for add_model_input."""
    if stage["op"] == "space_to_depth":
        return space_to_depth(x, int(stage["factor"]))
    if stage["op"] == "depth_to_space":
        out = depth_to_space(x, int(stage["factor"]))
        return out + model_input if int(stage.get("add_model_input", 0)) else out
    if stage["op"] == "residual_block":
        pad = ((0, 0), (1, 1), (1, 1))
        hidden = _correlate(np.pad(x, pad), stage["conv_in_weight"], stage["conv_in_bias"])
        return x + _correlate(np.pad(hidden, pad), stage["conv_out_weight"], stage["conv_out_bias"])
    w = stage["weight"]
    k = w.shape[2]
    before, after = (k - 1) // 2, k - 1 - (k - 1) // 2
    padding = stage.get("padding", "reflect")
    if padding == "reflect" and max(before, after) >= min(x.shape[1], x.shape[2]):
        raise ModelError(f"conv2d: reflect padding {max(before, after)} needs an image larger than "
                         f"{x.shape[1]}x{x.shape[2]}")
    xp = np.pad(x, ((0, 0), (before, after), (before, after)), mode=NP_PAD_MODE[padding])
    out = _correlate(xp, w, stage.get("bias"))
    if stage.get("activation", "none") == "relu":
        out = np.maximum(out, 0.0)
    if int(stage.get("add_model_input", 0)):
        out = out + model_input
    return out


def apply_model(model, image_chw):
    """Runs every stage on float planes [C, H, W] (values in [0, 1]); returns the
    unclamped float64 output [C, H, W]. When H or W is not a multiple of the
    model's downscale M, the image is replicate-padded at the bottom/right to
    the next multiple first and the output is cropped back to H x W."""
    x = np.asarray(image_chw, dtype=np.float64)
    if x.ndim != 3 or x.shape[0] != model["channels"]:
        raise ModelError(f"apply_model: image is {list(x.shape)}, model takes [{model['channels']},H,W]")
    h, w = x.shape[1], x.shape[2]
    m = downscale(model["stages"])
    ph, pw = -h % m, -w % m
    if ph or pw:
        x = np.pad(x, ((0, 0), (0, ph), (0, pw)), mode="edge")
    model_input = x
    for stage in model["stages"]:
        x = apply_stage(stage, x, model_input)
    return x[:, :h, :w]


def restore_uint8(model, image):
    """What the CLI does to an 8-bit image (app/image/image_batch.h): image is uint8
    [H, W] (gray) or [H, W, 3] (RGB). Samples / 255 -> model -> clamp to [0, 1]
    -> * 255, round to nearest. A gray image through a 3-channel model is
    replicated to R=G=B and the result is the mean of R, G, B; an RGB image
    through a 1-channel model runs each channel on its own."""
    img = np.asarray(image)
    if img.dtype != np.uint8:
        raise ModelError("restore_uint8: image must be uint8")
    x = img.astype(np.float64) / 255.0
    c = model["channels"]
    if img.ndim == 2 and c == 3:
        out = np.clip(apply_model(model, np.stack([x, x, x])), 0.0, 1.0).mean(axis=0)
    elif img.ndim == 2 and c == 1:
        out = np.clip(apply_model(model, x[None]), 0.0, 1.0)[0]
    elif img.ndim == 3 and img.shape[2] == 3 and c == 3:
        out = np.clip(apply_model(model, x.transpose(2, 0, 1)), 0.0, 1.0).transpose(1, 2, 0)
    elif img.ndim == 3 and img.shape[2] == 3 and c == 1:
        out = np.stack([np.clip(apply_model(model, x[None, :, :, i]), 0.0, 1.0)[0] for i in range(3)], axis=2)
    else:
        raise ModelError(f"restore_uint8: image {list(img.shape)} does not fit a {c}-channel model")
    return np.rint(out * 255.0).astype(np.uint8)


def psnr(a, b, peak=255.0):
    """PSNR in dB between two images of the same shape (8-bit scale by default)."""
    mse = np.mean((np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)) ** 2)
    return float("inf") if mse == 0 else float(10.0 * np.log10(peak * peak / mse))
