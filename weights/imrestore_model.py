"""Read, write and run imrestore model files (format v1, see weights/README.md).

Python 3 with numpy and h5py (Debian: python3-numpy, python3-h5py). This
module is the Python reference of the format: `write_model` writes what the
C++ loader (app/model_file.h) reads, `read_model` refuses what it refuses, and
`apply_model` computes what the CPU/CUDA backends compute (in float64), so it
can evaluate a model file honestly without building the tool.

    import imrestore_model as im
    im.write_model("my.h5", "my", "denoise", "...", "...", 3, stages)
    model = im.read_model("my.h5")
    out = im.apply_model(model, image_chw)        # float planes [C, H, W]
    out8 = im.restore_uint8(model, image_hwc_u8)  # as the CLI does for 8-bit images
"""

import h5py
import numpy as np

FORMAT = "imrestore-model"
FORMAT_VERSION = 1
OPS = ("residual_block", "conv2d")
PADDINGS = ("reflect", "replicate", "zero")
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
}


class ModelError(ValueError):
    """A model that does not follow the format (message names the file, stage and what)."""


def _check_stage(where, stage, channels):
    """Validates one stage dict; returns the channel count after it."""
    op = stage.get("op")
    if op not in OPS:
        raise ModelError(f"{where}: unknown op {op!r} (known: {', '.join(OPS)})")
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
        return channels
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
    return cout


def check_stages(stages, channels, where="model"):
    """Validates a list of stage dicts against the format (shapes, dtypes, channel chain)."""
    if channels not in (1, 3):
        raise ModelError(f"{where}: channels is {channels}, must be 1 or 3")
    if len(stages) == 0:
        raise ModelError(f"{where}: no stages")
    c = channels
    for i, stage in enumerate(stages):
        c = _check_stage(f"{where}: stage {i}", stage, c)
    if c != channels:
        raise ModelError(f"{where}: the last stage gives {c} channels, the model takes and gives {channels}")


def receptive_field(stages):
    """1 + 4 per residual_block + (K-1) per conv2d: the output pixel's input window width."""
    rf = 1
    for s in stages:
        rf += 4 if s["op"] == "residual_block" else np.asarray(s["weight"]).shape[2] - 1
    return rf


def write_model(path, name, task, description, provenance, channels, stages, license=None):
    """Writes a format-v1 model file. stages: list of dicts, e.g.
        {"op": "residual_block", "conv_in_weight": [H,C,3,3], "conv_in_bias": [H],
         "conv_out_weight": [C,H,3,3], "conv_out_bias": [C]}
        {"op": "conv2d", "weight": [Cout,Cin,K,K], "bias": [Cout] (optional),
         "padding": "reflect" | "replicate" | "zero" (optional, default reflect)}
    Arrays must be float32 (use .astype(np.float32)). Raises ModelError for
    anything the loaders would refuse, before writing."""
    for key, value in (("name", name), ("task", task), ("description", description), ("provenance", provenance)):
        if not isinstance(value, str) or not value:
            raise ModelError(f"{path}: {key} must be a non-empty string")
    if license is not None and not isinstance(license, str):
        raise ModelError(f"{path}: license must be a string")
    channels = int(channels)
    check_stages(stages, channels, where=path)
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
        f.attrs["format_version"] = np.int64(FORMAT_VERSION)
        f.attrs["name"] = name
        f.attrs["task"] = task
        f.attrs["description"] = description
        f.attrs["provenance"] = provenance
        f.attrs["channels"] = np.int64(channels)
        if license is not None:
            f.attrs["license"] = license
        g = group(f, "stages")
        for i, stage in enumerate(stages):
            sg = group(g, str(i))
            sg.attrs["op"] = stage["op"]
            if stage["op"] == "conv2d":
                sg.attrs["padding"] = stage.get("padding", "reflect")
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


def _int_attr(path, attrs, key):
    if key not in attrs:
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


def read_model(path):
    """Reads and validates a model file; returns a dict with the root
    attributes (name, task, description, provenance, channels, license,
    format_version), "stages" (list of dicts as write_model takes) and
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


def apply_stage(stage, x):
    """One stage on planes x [C, H, W] (float64), exactly as the backends define it."""
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
    return _correlate(xp, w, stage.get("bias"))


def apply_model(model, image_chw):
    """Runs every stage on float planes [C, H, W] (values in [0, 1]); returns the
    unclamped float64 output [C, H, W]."""
    x = np.asarray(image_chw, dtype=np.float64)
    if x.ndim != 3 or x.shape[0] != model["channels"]:
        raise ModelError(f"apply_model: image is {list(x.shape)}, model takes [{model['channels']},H,W]")
    for stage in model["stages"]:
        x = apply_stage(stage, x)
    return x


def restore_uint8(model, image):
    """What the CLI does to an 8-bit image (app/image_batch.h): image is uint8
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
