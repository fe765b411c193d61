"""Read, write and run imrestore model files (formats v1, v2 and v3).

The format is specified by weights/README.md (the file, its root attributes,
the stages group, the versions, v3's graph wiring and the v3 stage kinds) and,
for each v1/v2 kind of stage, by the comment at the top of its C++ header in
app/layers/, which is normative.

Python 3 with numpy and h5py (Debian: python3-numpy, python3-h5py). This
module implements the format for the kinds in OPS: `write_model` writes what
the C++ loader (app/model_file.h) reads, `read_model` refuses what it refuses,
and `apply_model` computes what the CPU/CUDA backends compute (in float64), so
it can evaluate a model file honestly without building the tool. A kind only
the C++ tool has is refused here as unknown.

    import imrestore_model as im
    im.write_model("my.h5", "my", "denoise", "...", "...", 3, stages)
    model = im.read_model("my.h5")
    out = im.apply_model(model, image_chw)        # float planes [C, H, W]
    out8 = im.restore_uint8(model, image_hwc_u8)  # as the CLI does for 8-bit images

A model is a list of stage dicts (see write_model) plus, in format v3, the
wiring: each stage's optional "name" and "inputs" (a list of tensor names, or
one comma-separated string), and the model's optional `extra_inputs` and
`output`. Everything about a kind of stage (its datasets, attributes, inputs,
the shape it gives, its window, the format version it needs, what it computes)
is in its entry of the table OPS; nothing dispatches on an op name elsewhere.
"""

import hashlib
import math
import os
import re

import h5py
import numpy as np

FORMAT = "imrestore-model"
FORMAT_VERSION = 4  # the newest version this module reads; write_model writes the lowest one the model needs
WEIGHT_DTYPES = ("float32", "float16")  # how write_model may store the weights (float16: format v4)
PADDINGS = ("reflect", "replicate", "zero")
CONV_ACTIVATIONS = ("none", "relu")
ACTIVATIONS = CONV_ACTIVATIONS  # conv2d's (the name before v3)
FUNCTIONS = ("relu", "leaky_relu", "gelu", "silu")  # the activation stage's
FACTOR_RANGE = (2, 8)
MAX_SIZE_MULTIPLE = 64  # image sides are padded to a multiple of at most this
MAX_DOWNSCALE = MAX_SIZE_MULTIPLE  # the name before v3
MAX_CHANNELS = 4096
MAX_KERNEL = 64
DEPTHWISE_KERNELS = (1, 3, 5, 7)
WINDOW_RANGE = (1, 1024)
MAX_CONCAT = 16
EXTRA_INPUTS = ("noise_level", "jpeg_quality")  # what the tool can supply (README: extra_inputs)
MODEL_INPUT = "input"
NAME_RE = re.compile(r"[A-Za-z_.\-][A-Za-z0-9_.\-]{0,63}\Z")
FLOAT32_MAX = float(np.finfo(np.float32).max)
# np.pad mode for each padding name.
NP_PAD_MODE = {"reflect": "reflect", "replicate": "edge", "zero": "constant"}
REQUIRED = object()  # an attribute without a default


class ModelError(ValueError):
    """A model that does not follow the format (message names the file, stage and what)."""


# ---------------------------------------------------------------------------
# Values of attributes, from a stage dict (writing) or an HDF5 file (reading)


def _as_int(where, key, v):
    if isinstance(v, np.ndarray) and v.size == 1:
        v = v.reshape(()).item()
    if isinstance(v, np.integer):
        v = int(v)
    if not isinstance(v, int) or isinstance(v, bool):
        raise ModelError(f"{where}: {key} must be an integer, is {v!r}")
    return v


def _as_float(where, key, v):
    if isinstance(v, np.ndarray) and v.size == 1:
        v = v.reshape(()).item()
    if isinstance(v, (np.integer, np.floating)):
        v = v.item()
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise ModelError(f"{where}: {key} must be a number, is {v!r}")
    v = float(v)
    if not math.isfinite(v) or abs(v) > FLOAT32_MAX:
        raise ModelError(f"{where}: {key} is {v!r}, must be finite and within float32's range")
    return v


def _as_str(where, key, v):
    if isinstance(v, (bytes, np.bytes_)):
        v = bytes(v).decode("utf-8")
    elif isinstance(v, np.ndarray) and v.shape == ():
        v = v.item()
        if isinstance(v, bytes):
            v = v.decode("utf-8")
    if not isinstance(v, str):
        raise ModelError(f"{where}: {key} must be a string, is {type(v).__name__}")
    return v


CONVERT = {"int": _as_int, "float": _as_float, "str": _as_str}


class Attr:
    """A stage attribute: its type ("int", "float" or "str"), its default
    (REQUIRED: none) and whether the writer writes it always or only when it
    differs from the default (the format version it needs is Op.version's)."""

    def __init__(self, name, kind, default=REQUIRED, always=False):
        self.name, self.kind, self.default, self.always = name, kind, default, always

    def value(self, where, stage):
        """The stage dict's value, converted, or the default; ModelError when required and missing."""
        if stage.get(self.name) is None:
            if self.default is REQUIRED:
                raise ModelError(f"{where}: op {stage['op']} needs {self.kind} attribute {self.name!r}")
            return self.default
        return CONVERT[self.kind](where, self.name, stage[self.name])


# ---------------------------------------------------------------------------
# The computations (float64 planes [C, H, W])


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


def _pad_same(x, k, padding, what):
    """Pads by (k-1)//2 at the top/left and the rest at the bottom/right, as conv2d does."""
    before, after = (k - 1) // 2, k - 1 - (k - 1) // 2
    if padding == "reflect" and max(before, after) >= min(x.shape[1], x.shape[2]):
        raise ModelError(f"{what}: reflect padding {max(before, after)} needs an image larger than "
                         f"{x.shape[1]}x{x.shape[2]}")
    return np.pad(x, ((0, 0), (before, after), (before, after)), mode=NP_PAD_MODE[padding])


def _box_sums(x, axis, window):
    """Sums of x along axis over i-(window-1)//2 .. i+window//2, clipped; and their counts."""
    n = x.shape[axis]
    c = np.concatenate([np.zeros_like(np.take(x, [0], axis=axis)), np.cumsum(x, axis=axis)], axis=axis)
    idx = np.arange(n)
    lo = np.clip(idx - (window - 1) // 2, 0, n)
    hi = np.clip(idx + window // 2 + 1, 0, n)
    return np.take(c, hi, axis=axis) - np.take(c, lo, axis=axis), (hi - lo).astype(np.float64)


def box_mean(x, window):
    """Per channel and pixel of x [C, H, W]: the mean over the window x window box
    around the pixel (rows y-(window-1)//2 .. y+window//2, the same for columns),
    clipped to the image (the mean of the pixels inside)."""
    s, count_w = _box_sums(x, 2, window)
    s, count_h = _box_sums(s, 1, window)
    return s / (count_h[:, None] * count_w[None, :])


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def activate(x, function, slope=0.01):
    """The activation stage's functions (float64)."""
    return ACTIVATION_FUNCTIONS[function](x, slope)


ACTIVATION_FUNCTIONS = {
    "relu": lambda x, slope: np.maximum(x, 0.0),
    "leaky_relu": lambda x, slope: np.where(x >= 0.0, x, slope * x),
    "gelu": lambda x, slope: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))),
    "silu": lambda x, slope: x * 0.5 * (1.0 + np.tanh(0.5 * x)),  # x * sigmoid(x), without overflow
}
CONV_ACTIVATION_FUNCTIONS = {"none": lambda x: x, "relu": lambda x: np.maximum(x, 0.0)}


def _residual(stage, xs, out, model_input):
    """The optional second input (residual) and add_model_input of conv2d, conv_transpose2d, depth_to_space."""
    if len(xs) > 1:
        out = out + xs[1]
    if int(stage.get("add_model_input", 0) or 0):
        out = out + model_input
    return out


def _apply_residual_block(stage, xs, model_input):
    x = xs[0]
    pad = ((0, 0), (1, 1), (1, 1))
    hidden = _correlate(np.pad(x, pad), stage["conv_in_weight"], stage["conv_in_bias"])
    return x + _correlate(np.pad(hidden, pad), stage["conv_out_weight"], stage["conv_out_bias"])


def _apply_conv2d(stage, xs, model_input):
    x, w = xs[0], stage["weight"]
    stride = int(stage.get("stride", 1) or 1)
    if stride > 1:  # f x f blocks, no padding: a 1x1 convolution of space_to_depth(x, f)
        wf = np.asarray(w, dtype=np.float64).reshape(w.shape[0], -1, 1, 1)
        out = _correlate(space_to_depth(x, stride), wf, stage.get("bias"))
    else:
        out = _correlate(_pad_same(x, w.shape[2], stage.get("padding") or "reflect", "conv2d"), w, stage.get("bias"))
    out = CONV_ACTIVATION_FUNCTIONS[stage.get("activation") or "none"](out)
    return _residual(stage, xs, out, model_input)


def _apply_conv_transpose2d(stage, xs, model_input):
    x, w = xs[0], np.asarray(stage["weight"], dtype=np.float64)
    cin, cout, f, _ = w.shape
    # out[o, f*y+i, f*x+j] = b[o] + sum_c w[c,o,i,j] x[c,y,x]: channel o*f*f + i*f + j, then depth_to_space
    t = np.tensordot(w.reshape(cin, cout * f * f), x, axes=(0, 0))
    out = depth_to_space(t, f)
    if stage.get("bias") is not None:
        out = out + np.asarray(stage["bias"], dtype=np.float64)[:, None, None]
    return _residual(stage, xs, out, model_input)


def _apply_space_to_depth(stage, xs, model_input):
    return space_to_depth(xs[0], int(stage["factor"]))


def _apply_depth_to_space(stage, xs, model_input):
    return _residual(stage, xs[:1], depth_to_space(xs[0], int(stage["factor"])), model_input)


def _apply_layer_norm(stage, xs, model_input):
    x = xs[0]
    d = x - x.mean(axis=0, keepdims=True)
    var = (d * d).mean(axis=0, keepdims=True)
    y = d / np.sqrt(var + float(stage.get("eps", 1e-6)))
    return (y * np.asarray(stage["weight"], np.float64)[:, None, None]
            + np.asarray(stage["bias"], np.float64)[:, None, None])


def _apply_depthwise_conv2d(stage, xs, model_input):
    x, w = xs[0], np.asarray(stage["weight"], dtype=np.float64)
    k = w.shape[2]
    xp = _pad_same(x, k, stage.get("padding") or "reflect", "depthwise_conv2d")
    h, wd = x.shape[1], x.shape[2]
    out = np.zeros_like(x)
    for i in range(k):
        for j in range(k):
            out += w[:, 0, i, j][:, None, None] * xp[:, i:i + h, j:j + wd]
    if stage.get("bias") is not None:
        out += np.asarray(stage["bias"], dtype=np.float64)[:, None, None]
    return out


def _apply_channel_attention(stage, xs, model_input):
    x = xs[0]
    m = box_mean(x, int(stage["window"]))
    a = np.tensordot(np.asarray(stage["weight"], np.float64), m, axes=(1, 0))
    return x * (a + np.asarray(stage["bias"], np.float64)[:, None, None])


def _apply_simple_gate(stage, xs, model_input):
    x = xs[0]
    half = x.shape[0] // 2
    return x[:half] * x[half:]


def _apply_activation(stage, xs, model_input):
    slope = stage.get("slope")
    return activate(xs[0], stage["function"], 0.01 if slope is None else float(slope))


# ---------------------------------------------------------------------------
# Checks: each returns (channels, scale) of the stage's output, given
# c = [(channels, scale) of each input], after its datasets passed the
# generic checks (float32, rank, finite) into `arrays`.


def _check_factor(where, stage):
    f = Attr("factor", "int").value(where, stage)
    if not FACTOR_RANGE[0] <= f <= FACTOR_RANGE[1]:
        raise ModelError(f"{where}: factor {f} is not in {FACTOR_RANGE[0]}..{FACTOR_RANGE[1]}")
    return f


def _check_choice(where, stage, key, default, choices):
    v = Attr(key, "str", default).value(where, stage)
    if v not in choices:
        raise ModelError(f"{where}: {key} {v!r} is not one of {', '.join(choices)}")
    return v


def _check_add_model_input(where, stage, cout, scale, model_channels, nin=1):
    """Validates the optional add_model_input (0 or 1) of a stage whose output
    has cout channels at scale `scale`; returns it."""
    add = Attr("add_model_input", "int", 0).value(where, stage)
    if add not in (0, 1):
        raise ModelError(f"{where}: add_model_input is {add}, must be 0 or 1")
    if add and (cout != model_channels or scale != 1):
        raise ModelError(f"{where}: add_model_input needs the model's {model_channels} channels at full "
                         f"resolution, the stage gives {cout} channels at 1/{scale} resolution")
    if add and nin > 1:
        raise ModelError(f"{where}: a stage with a residual input cannot also add the model input")
    return add


def _check_residual(where, ins, cout, scale):
    """The optional second input of conv2d / conv_transpose2d: output-shaped."""
    if len(ins) > 1 and ins[1] != (cout, scale):
        raise ModelError(f"{where}: the residual input has {ins[1][0]} channels at 1/{ins[1][1]} resolution, the "
                         f"stage gives {cout} channels at 1/{scale} resolution")


def _check_same_scale(where, ins):
    scales = sorted({s for _, s in ins})
    if len(scales) > 1:
        raise ModelError(f"{where}: its inputs are at different scales ({', '.join(f'1/{s}' for s in scales)})")


def _check_residual_block(where, stage, arrays, ins, model_channels):
    channels, scale = ins[0]
    wi, bi = arrays["conv_in_weight"], arrays["conv_in_bias"]
    wo, bo = arrays["conv_out_weight"], arrays["conv_out_bias"]
    hidden = wi.shape[0]
    if wi.shape != (hidden, channels, 3, 3):
        raise ModelError(f"{where}: conv_in_weight is {list(wi.shape)}, must be [H,{channels},3,3]")
    if hidden > MAX_CHANNELS:
        raise ModelError(f"{where}: hidden width {hidden} is over {MAX_CHANNELS}")
    if bi.shape != (hidden,):
        raise ModelError(f"{where}: conv_in_bias is {list(bi.shape)}, must be [{hidden}]")
    if wo.shape != (channels, hidden, 3, 3):
        raise ModelError(f"{where}: conv_out_weight is {list(wo.shape)}, must be [{channels},{hidden},3,3]")
    if bo.shape != (channels,):
        raise ModelError(f"{where}: conv_out_bias is {list(bo.shape)}, must be [{channels}]")
    return channels, scale


def _check_conv2d(where, stage, arrays, ins, model_channels):
    channels, scale = ins[0]
    w = arrays["weight"]
    cout, cin, k, k2 = w.shape
    if cin != channels:
        raise ModelError(f"{where}: weight is {list(w.shape)}, takes {cin} channels but gets {channels}")
    if k != k2:
        raise ModelError(f"{where}: weight is {list(w.shape)}, kernel must be square")
    if k > MAX_KERNEL:
        raise ModelError(f"{where}: weight is {list(w.shape)}, kernels over {MAX_KERNEL}x{MAX_KERNEL} are refused")
    if "bias" in arrays and arrays["bias"].shape != (cout,):
        raise ModelError(f"{where}: bias is {list(arrays['bias'].shape)}, must be [{cout}]")
    _check_choice(where, stage, "padding", "reflect", PADDINGS)
    _check_choice(where, stage, "activation", "none", CONV_ACTIVATIONS)
    stride = Attr("stride", "int", 1).value(where, stage)
    if stride != 1:
        if not FACTOR_RANGE[0] <= stride <= FACTOR_RANGE[1]:
            raise ModelError(f"{where}: stride {stride} is not 1 or in {FACTOR_RANGE[0]}..{FACTOR_RANGE[1]}")
        if k != stride:
            raise ModelError(f"{where}: stride {stride} needs a {stride}x{stride} kernel, the weight is "
                             f"{list(w.shape)}")
    scale *= stride
    _check_residual(where, ins, cout, scale)
    _check_add_model_input(where, stage, cout, scale, model_channels, len(ins))
    return cout, scale


def _check_conv_transpose2d(where, stage, arrays, ins, model_channels):
    channels, scale = ins[0]
    f = Attr("stride", "int").value(where, stage)
    if not FACTOR_RANGE[0] <= f <= FACTOR_RANGE[1]:
        raise ModelError(f"{where}: stride {f} is not in {FACTOR_RANGE[0]}..{FACTOR_RANGE[1]}")
    w = arrays["weight"]
    cin, cout = w.shape[0], w.shape[1]
    if cin != channels:
        raise ModelError(f"{where}: weight is {list(w.shape)}, takes {cin} channels but gets {channels}")
    if w.shape[2:] != (f, f):
        raise ModelError(f"{where}: weight is {list(w.shape)}, must be [{channels},Cout,{f},{f}] for stride {f}")
    if "bias" in arrays and arrays["bias"].shape != (cout,):
        raise ModelError(f"{where}: bias is {list(arrays['bias'].shape)}, must be [{cout}]")
    if scale % f:
        raise ModelError(f"{where}: conv_transpose2d stride {f} at 1/{scale} resolution would go past full "
                         "resolution")
    _check_residual(where, ins, cout, scale // f)
    return cout, scale // f


def _check_space_to_depth(where, stage, arrays, ins, model_channels):
    channels, scale = ins[0]
    f = _check_factor(where, stage)
    if Attr("add_model_input", "int", 0).value(where, stage) != 0:
        raise ModelError(f"{where}: space_to_depth has no add_model_input")
    if scale * f > MAX_SIZE_MULTIPLE:
        raise ModelError(f"{where}: reduces the resolution by more than {MAX_SIZE_MULTIPLE} in all")
    return channels * f * f, scale * f


def _check_depth_to_space(where, stage, arrays, ins, model_channels):
    channels, scale = ins[0]
    f = _check_factor(where, stage)
    if channels % (f * f) != 0:
        raise ModelError(f"{where}: depth_to_space({f}) needs channels divisible by {f * f}, gets {channels}")
    if scale % f != 0:
        raise ModelError(f"{where}: depth_to_space({f}) at 1/{scale} resolution would go past full resolution")
    cout, scale = channels // (f * f), scale // f
    _check_add_model_input(where, stage, cout, scale, model_channels)
    return cout, scale


def _check_elementwise(where, stage, arrays, ins, model_channels):
    _check_same_scale(where, ins)
    if ins[0][0] != ins[1][0]:
        raise ModelError(f"{where}: op {stage['op']} needs inputs of one channel count, gets {ins[0][0]} and "
                         f"{ins[1][0]}")
    return ins[0]


def _check_concat(where, stage, arrays, ins, model_channels):
    _check_same_scale(where, ins)
    return sum(c for c, _ in ins), ins[0][1]


def _check_activation(where, stage, arrays, ins, model_channels):
    function = _check_choice(where, stage, "function", REQUIRED, FUNCTIONS)
    if stage.get("slope") is not None:
        if function != "leaky_relu":
            raise ModelError(f"{where}: slope is for leaky_relu only, the function is {function}")
        Attr("slope", "float").value(where, stage)
    return ins[0]


def _check_simple_gate(where, stage, arrays, ins, model_channels):
    channels, scale = ins[0]
    if channels % 2:
        raise ModelError(f"{where}: simple_gate needs an even channel count, gets {channels}")
    return channels // 2, scale


def _check_per_channel(where, arrays, key, channels, required_shape):
    if key in arrays and arrays[key].shape != required_shape:
        raise ModelError(f"{where}: {key} is {list(arrays[key].shape)}, must be {list(required_shape)} for "
                         f"{channels} channels")


def _check_layer_norm(where, stage, arrays, ins, model_channels):
    channels, scale = ins[0]
    _check_per_channel(where, arrays, "weight", channels, (channels,))
    _check_per_channel(where, arrays, "bias", channels, (channels,))
    eps = Attr("eps", "float", 1e-6).value(where, stage)
    if not eps > 0.0:
        raise ModelError(f"{where}: eps is {eps!r}, must be positive")
    return ins[0]


def _check_depthwise_conv2d(where, stage, arrays, ins, model_channels):
    channels, scale = ins[0]
    w = arrays["weight"]
    k = w.shape[2]
    if w.shape[:2] != (channels, 1) or w.shape[3] != k or k not in DEPTHWISE_KERNELS:
        raise ModelError(f"{where}: weight is {list(w.shape)}, must be [{channels},1,K,K] with K odd, 1..7")
    _check_per_channel(where, arrays, "bias", channels, (channels,))
    _check_choice(where, stage, "padding", "reflect", PADDINGS)
    return ins[0]


def _check_channel_attention(where, stage, arrays, ins, model_channels):
    channels, scale = ins[0]
    _check_per_channel(where, arrays, "weight", channels, (channels, channels))
    _check_per_channel(where, arrays, "bias", channels, (channels,))
    window = Attr("window", "int").value(where, stage)
    if not WINDOW_RANGE[0] <= window <= WINDOW_RANGE[1]:
        raise ModelError(f"{where}: window {window} is not in {WINDOW_RANGE[0]}..{WINDOW_RANGE[1]}")
    return ins[0]


# ---------------------------------------------------------------------------
# The table of kinds


def _nondefault(stage, key, default):
    v = stage.get(key)
    return v is not None and v != default


class Op:
    """One kind of stage. datasets: name -> (required, rank); attrs: the Attr
    list, in the order the writer writes them; inputs: (fewest, most); scale:
    (stage, scale of the first input) -> scale of the output; window: stage ->
    the input pixels one output pixel depends on, per axis; version: stage ->
    the format version its attributes need; check and apply as above."""

    def __init__(self, datasets, attrs, inputs, scale, window, version, check, apply):
        self.datasets, self.attrs, self.inputs = datasets, attrs, inputs
        self.scale, self.window, self.version, self.check, self.apply = scale, window, version, check, apply


def _same_scale(stage, s):
    return s


def _one(stage):
    return 1


def _v3(stage):
    return 3


def _conv2d_version(stage):
    if _nondefault(stage, "stride", 1):
        return 3
    if _nondefault(stage, "activation", "none") or int(stage.get("add_model_input") or 0) != 0:
        return 2
    return 1


def _depth_to_space_version(stage):
    return 2


_WEIGHT_BIAS = {"weight": (True, 4), "bias": (False, 1)}

OPS = {
    "residual_block": Op(
        datasets={"conv_in_weight": (True, 4), "conv_in_bias": (True, 1),
                  "conv_out_weight": (True, 4), "conv_out_bias": (True, 1)},
        attrs=[], inputs=(1, 1), scale=_same_scale, window=lambda s: 5, version=lambda s: 1,
        check=_check_residual_block, apply=_apply_residual_block),
    "conv2d": Op(
        datasets=_WEIGHT_BIAS,
        attrs=[Attr("padding", "str", "reflect", always=True), Attr("activation", "str", "none"),
               Attr("add_model_input", "int", 0), Attr("stride", "int", 1)],
        inputs=(1, 2), scale=lambda st, s: s * int(st.get("stride") or 1),
        window=lambda st: int(np.shape(st["weight"])[2]), version=_conv2d_version,
        check=_check_conv2d, apply=_apply_conv2d),
    "space_to_depth": Op(
        datasets={}, attrs=[Attr("factor", "int", always=True)], inputs=(1, 1),
        scale=lambda st, s: s * int(st["factor"]), window=lambda st: int(st["factor"]), version=lambda st: 2,
        check=_check_space_to_depth, apply=_apply_space_to_depth),
    "depth_to_space": Op(
        datasets={}, attrs=[Attr("factor", "int", always=True), Attr("add_model_input", "int", 0)],
        inputs=(1, 1), scale=lambda st, s: s // int(st["factor"]), window=_one, version=_depth_to_space_version,
        check=_check_depth_to_space, apply=_apply_depth_to_space),
    "conv_transpose2d": Op(
        datasets=_WEIGHT_BIAS, attrs=[Attr("stride", "int", always=True)], inputs=(1, 2),
        scale=lambda st, s: s // int(st["stride"]), window=_one, version=_v3,
        check=_check_conv_transpose2d, apply=_apply_conv_transpose2d),
    "add": Op(datasets={}, attrs=[], inputs=(2, 2), scale=_same_scale, window=_one, version=_v3,
              check=_check_elementwise, apply=lambda st, xs, mi: xs[0] + xs[1]),
    "mul": Op(datasets={}, attrs=[], inputs=(2, 2), scale=_same_scale, window=_one, version=_v3,
              check=_check_elementwise, apply=lambda st, xs, mi: xs[0] * xs[1]),
    "concat": Op(datasets={}, attrs=[], inputs=(2, MAX_CONCAT), scale=_same_scale, window=_one, version=_v3,
                 check=_check_concat, apply=lambda st, xs, mi: np.concatenate(xs, axis=0)),
    "activation": Op(
        datasets={}, attrs=[Attr("function", "str", always=True),
                            Attr("slope", "float", None)],
        inputs=(1, 1), scale=_same_scale, window=_one, version=_v3,
        check=_check_activation, apply=_apply_activation),
    "simple_gate": Op(datasets={}, attrs=[], inputs=(1, 1), scale=_same_scale, window=_one, version=_v3,
                      check=_check_simple_gate, apply=_apply_simple_gate),
    "layer_norm": Op(
        datasets={"weight": (True, 1), "bias": (True, 1)}, attrs=[Attr("eps", "float", 1e-6, always=True)],
        inputs=(1, 1), scale=_same_scale, window=_one, version=_v3,
        check=_check_layer_norm, apply=_apply_layer_norm),
    "depthwise_conv2d": Op(
        datasets=_WEIGHT_BIAS, attrs=[Attr("padding", "str", "reflect", always=True)], inputs=(1, 1),
        scale=_same_scale, window=lambda st: int(np.shape(st["weight"])[2]), version=_v3,
        check=_check_depthwise_conv2d, apply=_apply_depthwise_conv2d),
    "channel_attention": Op(
        datasets={"weight": (True, 2), "bias": (True, 1)}, attrs=[Attr("window", "int", always=True)],
        inputs=(1, 1), scale=_same_scale, window=lambda st: int(st["window"]), version=_v3,
        check=_check_channel_attention, apply=_apply_channel_attention),
}
# Kinds of stage that need format v2 / v3 whatever their attributes (the rest: see Op.version).
V2_OPS = tuple(op for op, spec in OPS.items() if spec.version({"op": op, "weight": np.zeros((1, 1, 1, 1))}) == 2)
V3_OPS = tuple(op for op, spec in OPS.items() if spec.version({"op": op, "weight": np.zeros((1, 1, 1, 1))}) == 3)
# Datasets of each op: name -> (required, rank) (the name before v3).
OP_DATASETS = {op: spec.datasets for op, spec in OPS.items()}
V3_STAGE_ATTRS = ("name", "inputs")
V3_ROOT_ATTRS = ("extra_inputs", "output")


def _op(where, stage):
    op = stage.get("op")
    if op not in OPS:
        raise ModelError(f"{where}: unknown op {op!r} (known: {', '.join(OPS)})")
    return OPS[op]


# ---------------------------------------------------------------------------
# The graph


def _names_list(where, key, value):
    """A list of tensor names from a list or a comma-separated string (no spaces, no empty items)."""
    if isinstance(value, (list, tuple)):
        items = [_as_str(where, key, v) for v in value]
    else:
        items = _as_str(where, key, value).split(",")
    for item in items:
        if not item or item != item.strip():
            raise ModelError(f"{where}: {key} {','.join(items)!r} must be comma-separated names without spaces")
    return items


def parse_extra_inputs(where, value):
    """The root attribute extra_inputs as a list (None, empty list: none)."""
    if value is None:
        return []
    items = _names_list(where, "extra_inputs", value)
    for item in items:
        if item not in EXTRA_INPUTS:
            raise ModelError(f"{where}: extra input {item!r} is not one of {', '.join(EXTRA_INPUTS)}")
    if len(set(items)) != len(items):
        raise ModelError(f"{where}: extra_inputs {','.join(items)!r} names an input twice")
    return items


class Graph:
    """The wiring of a model: per stage its tensor name and input names; the
    extra inputs; the output; what reads each tensor."""

    def __init__(self, stages, extra_inputs=None, output=None, where="model"):
        self.extra_inputs = parse_extra_inputs(where, extra_inputs)
        self.names, self.inputs = [], []
        defined = {MODEL_INPUT: None, **{e: None for e in self.extra_inputs}}
        reserved = (MODEL_INPUT,) + EXTRA_INPUTS
        if len(stages) == 0:
            raise ModelError(f"{where}: no stages")
        for i, stage in enumerate(stages):
            at = f"{where}: stage {i}"
            name = stage.get("name")
            if name is None:
                name = str(i)
            else:
                name = _as_str(at, "name", name)
                if name != str(i) and (not NAME_RE.match(name) or name in reserved):  # str(i): the default
                    raise ModelError(f"{at}: name {name!r} must be 1 to 64 characters from A-Z a-z 0-9 _ . -, not "
                                     f"starting with a digit, and not {', '.join(reserved)}")
                if name in defined:
                    raise ModelError(f"{at}: name {name!r} is given twice")
            if stage.get("inputs") is None:
                inputs = [self.names[-1] if self.names else MODEL_INPUT]
            else:
                inputs = _names_list(at, "inputs", stage["inputs"])
                for n in inputs:
                    if n not in defined:
                        raise ModelError(f"{at}: input {n!r} is not the model input, an extra input or the name of an "
                                         "earlier stage")
            spec = _op(at, stage)
            if not spec.inputs[0] <= len(inputs) <= spec.inputs[1]:
                count = (str(spec.inputs[0]) if spec.inputs[0] == spec.inputs[1]
                         else f"{spec.inputs[0]} to {spec.inputs[1]}")
                raise ModelError(f"{at}: op {stage['op']} takes {count} input(s), gets {len(inputs)} "
                                 f"({','.join(inputs)})")
            self.names.append(name)
            self.inputs.append(inputs)
            defined[name] = i
        self.output = self.names[-1] if output is None else _as_str(where, "output", output)
        if self.output not in defined:
            raise ModelError(f"{where}: output {self.output!r} is not the name of a stage")
        read = {n for ins in self.inputs for n in ins} | {self.output}
        for i, name in enumerate(self.names):
            if name not in read:
                raise ModelError(f"{where}: stage {i} ({name}): nothing reads its output and it is not the model's "
                                 "output (a dead stage)")
        # the last stage that reads each tensor, so apply_model can drop it after
        self.last_use = {}
        for i, ins in enumerate(self.inputs):
            for n in ins:
                self.last_use[n] = i

    def is_chain(self):
        """True for v1/v2 wiring: each stage reads the one before (stage 0 the input), the last is the output."""
        return (not self.extra_inputs and self.output == self.names[-1]
                and all(ins == [self.names[i - 1] if i else MODEL_INPUT] for i, ins in enumerate(self.inputs)))

    def scales(self, stages):
        """Each tensor's scale (image pixels per tensor pixel, per axis)."""
        scale = {MODEL_INPUT: 1, **{e: 1 for e in self.extra_inputs}}
        for stage, name, ins in zip(stages, self.names, self.inputs):
            scale[name] = OPS[stage["op"]].scale(stage, scale[ins[0]])
        return scale


def _validated_arrays(where, stage, spec):
    arrays = {}
    for key, (required, rank) in spec.datasets.items():
        value = stage.get(key)
        if value is None:
            if required:
                raise ModelError(f"{where}: op {stage['op']} needs dataset {key!r}")
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
    return arrays


def check_stages(stages, channels, where="model", extra_inputs=None, output=None):
    """Validates a model (stage dicts, the channels, format v3's extra_inputs and
    output) against the format: wiring, shapes, dtypes, attributes, channels and
    scales. Returns its Graph, with `shapes` (tensor name -> (channels, scale))
    and `size_multiple` set."""
    if channels not in (1, 3):
        raise ModelError(f"{where}: channels is {channels}, must be 1 or 3")
    graph = Graph(stages, extra_inputs, output, where)
    shapes = {MODEL_INPUT: (channels, 1), **{e: (1, 1) for e in graph.extra_inputs}}
    multiple = 1
    for i, (stage, name, ins) in enumerate(zip(stages, graph.names, graph.inputs)):
        at = f"{where}: stage {i}" + (f" ({name})" if name != str(i) else "")
        spec = OPS[stage["op"]]
        arrays = _validated_arrays(at, stage, spec)
        cout, scale = spec.check(at, stage, arrays, [shapes[n] for n in ins], channels)
        if not 1 <= cout <= MAX_CHANNELS:
            raise ModelError(f"{at}: gives {cout} channels, more than {MAX_CHANNELS}")
        multiple = math.lcm(multiple, scale)
        if multiple > MAX_SIZE_MULTIPLE:
            raise ModelError(f"{at}: image sides would have to be multiples of {multiple} (the least common multiple "
                             f"of the scales reached); at most {MAX_SIZE_MULTIPLE} is supported")
        shapes[name] = (cout, scale)
    c, scale = shapes[graph.output]
    if scale != 1:
        raise ModelError(f"{where}: the output ({graph.output}) is at 1/{scale} resolution, the model must end at full "
                         "resolution")
    if c != channels:
        raise ModelError(f"{where}: the output ({graph.output}) has {c} channels, the model takes and gives {channels}")
    graph.shapes, graph.size_multiple = shapes, multiple
    return graph


def stages_version(stages, extra_inputs=None, output=None):
    """The lowest format version that expresses the model: 3 with v3 wiring
    (not a plain chain), extra inputs or a v3 kind or attribute; else 2 when a
    stage uses a v2 feature; else 1."""
    graph = Graph(stages, extra_inputs, output)
    version = max(OPS[s["op"]].version(s) for s in stages)
    return max(version, 1 if graph.is_chain() else 3)


def uses_v2(stages):
    """True when a stage uses a format-v2 (or later) feature."""
    return max(_op("model", s).version(s) for s in stages) >= 2


def downscale(stages, extra_inputs=None, output=None):
    """The model's size multiple M: the least common multiple of every tensor's
    scale; for nested space_to_depth stages (the unshuffle CNN: one of them)
    that is the product of their factors; 1 without any. Images whose height
    or width is not a multiple of M are replicate-padded at the bottom/right up
    to the next multiple, run, and cropped back."""
    graph = Graph(stages, extra_inputs, output)
    m = 1
    for s in graph.scales(stages).values():
        m = math.lcm(m, s)
    return m


size_multiple = downscale


def receptive_field(stages, extra_inputs=None, output=None):
    """The width of the input window one output pixel depends on (at most),
    following every path: the inputs' field is 1; a stage's output field is the
    larger of its first input's field + (W - 1) * that input's scale (W the
    stage's window) and each other input's field (added or joined pixel by
    pixel). For a chain: 1, plus 4 per residual_block and K-1 per
    conv2d, each times the scale it runs at, plus (f-1) times the scale before
    it per space_to_depth(f); v1 models: 1 + 4 * residual_blocks + sum(K-1)."""
    graph = Graph(stages, extra_inputs, output)
    scale = graph.scales(stages)
    field = {MODEL_INPUT: 1, **{e: 1 for e in graph.extra_inputs}}
    for stage, name, ins in zip(stages, graph.names, graph.inputs):
        w = OPS[stage["op"]].window(stage)
        field[name] = max([field[ins[0]] + (w - 1) * scale[ins[0]]] + [field[n] for n in ins[1:]])
    return field[graph.output]


# ---------------------------------------------------------------------------
# Writing


def write_model(path, name, task, description, provenance, channels, stages, license=None, extra_attrs=None,
                extra_inputs=None, output=None, weight_dtype="float32"):
    """Writes a model file, as the lowest format_version that expresses it
    (stages_version). stages: list of dicts, e.g.
        {"op": "residual_block", "conv_in_weight": [H,C,3,3], "conv_in_bias": [H],
         "conv_out_weight": [C,H,3,3], "conv_out_bias": [C]}
        {"op": "conv2d", "weight": [Cout,Cin,K,K], "bias": [Cout] (optional),
         "padding": "reflect" | "replicate" | "zero" (optional, default reflect),
         "activation": "none" | "relu" (v2, optional, default none),
         "add_model_input": 0 | 1 (v2, optional, default 0),
         "stride": 1 | f (v3, optional, default 1; f = K)}
        {"op": "space_to_depth", "factor": f}                        (v2)
        {"op": "depth_to_space", "factor": f, "add_model_input": 0 | 1 (optional)}   (v2)
        {"op": "conv_transpose2d", "weight": [Cin,Cout,f,f], "bias": [Cout] (optional), "stride": f}   (v3)
        {"op": "add" | "mul" | "concat" | "simple_gate"}              (v3)
        {"op": "activation", "function": "relu" | "leaky_relu" | "gelu" | "silu", "slope": s (leaky_relu)}   (v3)
        {"op": "layer_norm", "weight": [C], "bias": [C], "eps": e (optional, default 1e-6)}   (v3)
        {"op": "depthwise_conv2d", "weight": [C,1,K,K], "bias": [C] (optional), "padding": ...}   (v3)
        {"op": "channel_attention", "weight": [C,C], "bias": [C], "window": n}   (v3)
    and in format v3 any stage may carry "name" (its output tensor's name) and
    "inputs" (the tensors it reads: a list of names or one comma-separated
    string); extra_inputs (a list of "noise_level", "jpeg_quality") and output
    (a tensor name) are the model's. Arrays must be float32 (use
    .astype(np.float32)). Raises ModelError for anything the loaders would
    refuse, before writing. extra_attrs: optional dict of further root
    attributes (str or int values), which readers ignore. Optional attributes
    are written only where they differ from their defaults, and a plain chain
    without v3 features is written without wiring, so a v1 model gives the
    same bytes as before v2 existed and a v2 one as before v3.
    weight_dtype "float16" stores every dataset as IEEE float16 (format v4:
    half the file; the tool widens them to float32 exactly), each value
    rounded to the nearest half; a value beyond float16's range raises."""
    for key, value in (("name", name), ("task", task), ("description", description), ("provenance", provenance)):
        if not isinstance(value, str) or not value:
            raise ModelError(f"{path}: {key} must be a non-empty string")
    if license is not None and not isinstance(license, str):
        raise ModelError(f"{path}: license must be a string")
    channels = int(channels)
    graph = check_stages(stages, channels, where=path, extra_inputs=extra_inputs, output=output)
    version = stages_version(stages, extra_inputs, output)
    if weight_dtype not in WEIGHT_DTYPES:
        raise ModelError(f"{path}: weight_dtype {weight_dtype!r} is not one of {', '.join(WEIGHT_DTYPES)}")
    if weight_dtype == "float16":
        version = max(version, 4)
        for i, stage in enumerate(stages):
            for key in OPS[stage["op"]].datasets:
                if stage.get(key) is not None and not np.all(np.isfinite(np.asarray(stage[key], np.float16))):
                    raise ModelError(f"{path}: stage {i} ({stage['op']}): {key} has values beyond float16's range")
    reserved = {"format", "format_version", "name", "task", "description", "provenance", "channels", "license",
                *V3_ROOT_ATTRS}
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
    # The oldest file format that holds the model (h5py's default before HDF5
    # 2.0, which made it v1.8): groups as symbol tables, so any h5py writes
    # the same bytes, and the reader walks 'stages' in name order without
    # sorting it (libhdf5 sorts a v1.8 group of more than 8 links on each
    # look-up by index; glibc's qsort of 61 or more of them asks the kernel
    # for the memory size, a call the C++ reader's sandbox does not allow).
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_libver_bounds(h5py.h5f.LIBVER_EARLIEST, h5py.h5f.LIBVER_LATEST)
    fid = h5py.h5f.create(path.encode() if isinstance(path, str) else path, h5py.h5f.ACC_TRUNC, fcpl=fcpl,
                          fapl=fapl)

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
        if graph.extra_inputs:
            f.attrs["extra_inputs"] = ",".join(graph.extra_inputs)
        if version >= 3 and graph.output != graph.names[-1]:
            f.attrs["output"] = graph.output
        g = group(f, "stages")
        for i, stage in enumerate(stages):
            spec = OPS[stage["op"]]
            sg = group(g, str(i))
            sg.attrs["op"] = stage["op"]
            for attr in spec.attrs:
                value = attr.value(path, stage)
                if value is None or (not attr.always and value == attr.default):
                    continue
                sg.attrs[attr.name] = {"int": np.int64, "float": np.float64, "str": str}[attr.kind](value)
            if version >= 3:
                if stage.get("name") is not None:
                    sg.attrs["name"] = graph.names[i]
                if graph.inputs[i] != [graph.names[i - 1] if i else MODEL_INPUT]:
                    sg.attrs["inputs"] = ",".join(graph.inputs[i])
            for key in spec.datasets:
                if stage.get(key) is not None:
                    sg.create_dataset(key, data=np.ascontiguousarray(stage[key], dtype=weight_dtype),
                                      track_times=False)


# ---------------------------------------------------------------------------
# Reading


def _str_attr(path, attrs, key, required=True):
    if key not in attrs:
        if required:
            raise ModelError(f"{path}: missing attribute {key!r}")
        return None
    v = attrs[key]
    if isinstance(v, np.ndarray) and v.shape != ():
        raise ModelError(f"{path}: attribute {key!r} must be a string, is an array")
    return _as_str(path, f"attribute {key!r}", v)


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


def _float_attr(path, attrs, key):
    v = attrs[key]
    if isinstance(v, np.ndarray) and v.size != 1:
        raise ModelError(f"{path}: attribute {key!r} must be one number")
    if isinstance(v, (str, bytes)):
        raise ModelError(f"{path}: attribute {key!r} must be a number, is a string")
    return _as_float(path, f"attribute {key!r}", v)


READ_ATTR = {"int": lambda where, attrs, key: _int_attr(where, attrs, key),
             "float": _float_attr,
             "str": lambda where, attrs, key: _str_attr(where, attrs, key)}


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


def _is_ieee_half(ds):
    """Whether an h5py dataset is stored as IEEE binary16 as write_model
    writes it (little-endian, sign bit 15, 5 exponent bits at 10 with bias
    15, 10 mantissa bits): the C++ reader's rule (app/model_hdf5.cpp). Other
    16-bit float layouts (bfloat16's, big-endian) are neither this nor
    float32, so they are refused."""
    t = ds.id.get_type()
    return (isinstance(t, h5py.h5t.TypeFloatID) and t.get_size() == 2 and t.get_fields() == (15, 10, 5, 0, 10)
            and t.get_ebias() == 15 and t.get_order() == h5py.h5t.ORDER_LE)


def read_model(path):
    """Reads and validates a model file; returns a dict with the root
    attributes (name, task, description, provenance, channels, license,
    format_version, validated_precisions (a list, empty when none),
    precision_validation, extra_inputs (a list), output (the output tensor's
    name)), "weight_dtype" ("float32" or "float16": how the file stores the
    weights; "stages" holds them as float32 either way), "stages" (list of
    dicts as write_model takes; "name" and "inputs" only where the file gives
    them), "receptive_field" and "size_multiple"
    (also as "downscale"). Raises ModelError for files the loaders refuse."""
    with h5py.File(path, "r") as f:
        fmt = _str_attr(path, f.attrs, "format")
        if fmt != FORMAT:
            raise ModelError(f"{path}: format is {fmt!r}, not {FORMAT!r}")
        version = _int_attr(path, f.attrs, "format_version")
        if version < 1 or version > FORMAT_VERSION:
            raise ModelError(f"{path}: format_version {version} is not supported (this reader knows "
                             f"1..{FORMAT_VERSION})")
        model = {"format_version": version}
        for key in ("name", "task", "description", "provenance"):
            model[key] = _str_attr(path, f.attrs, key)
        model["license"] = _str_attr(path, f.attrs, "license", required=False)
        vp = _str_attr(path, f.attrs, "validated_precisions", required=False)
        model["validated_precisions"] = parse_validated_precisions(path, vp) if vp is not None else []
        model["precision_validation"] = _str_attr(path, f.attrs, "precision_validation", required=False)
        model["channels"] = _int_attr(path, f.attrs, "channels")
        extra_inputs = _str_attr(path, f.attrs, "extra_inputs", required=False)
        output = _str_attr(path, f.attrs, "output", required=False)
        if version < 3:
            for key in V3_ROOT_ATTRS:
                if key in f.attrs:
                    raise ModelError(f"{path}: attribute {key!r} is a format-v3 feature but format_version is "
                                     f"{version}")
        if "stages" not in f or not isinstance(f["stages"], h5py.Group):
            raise ModelError(f"{path}: missing group 'stages'")
        g = f["stages"]
        names = list(g.keys())
        n = len(names)
        if sorted(names) != sorted(str(i) for i in range(n)):
            raise ModelError(f"{path}: stages must be named 0..{n - 1} without gaps, found {sorted(names)}")
        stages = []
        datasets = half_datasets = 0
        for i in range(n):
            sg = g[str(i)]
            where = f"{path}: stage {i}"
            if not isinstance(sg, h5py.Group):
                raise ModelError(f"{where}: is not a group")
            op = _str_attr(where, sg.attrs, "op")
            stage = {"op": op}
            spec = _op(where, stage)
            for attr in spec.attrs:
                if attr.name in sg.attrs:
                    stage[attr.name] = READ_ATTR[attr.kind](where, sg.attrs, attr.name)
                elif attr.default is not REQUIRED and attr.default is not None:
                    stage[attr.name] = attr.default
            for key in V3_STAGE_ATTRS:
                if key in sg.attrs:
                    if version < 3:
                        raise ModelError(f"{where}: attribute {key!r} is a format-v3 feature but format_version is "
                                         f"{version}")
                    stage[key] = _str_attr(where, sg.attrs, key)
            needs = spec.version(stage)
            if needs > version:
                raise ModelError(f"{where}: uses a format-v{needs} feature ({op}"
                                 + (", activation or add_model_input" if needs == 2 and op == "conv2d" else "")
                                 + (", stride" if needs == 3 and op == "conv2d" else "")
                                 + f") but format_version is {version}")
            for key in spec.datasets:  # the all-or-none rule counts these, the op's own, as the C++ reader does
                if key not in sg:
                    continue
                ds = sg[key]
                if not isinstance(ds, h5py.Dataset):
                    raise ModelError(f"{where}: {key} is not a dataset")
                datasets += 1
                if _is_ieee_half(ds):
                    half_datasets += 1
                    if version < 4:
                        raise ModelError(f"{where}: {key} is float16, a format-v4 feature, but format_version is "
                                         f"{version}")
                elif ds.dtype.kind != "f" or ds.dtype.itemsize != 4 or ds.id.get_type().get_size() != 4:
                    raise ModelError(f"{where}: {key} is {ds.dtype} (HDF5 size {ds.id.get_type().get_size()}), "
                                     "must be float32 or IEEE float16")
                stage[key] = ds[()].astype(np.float32)
            stages.append(stage)
        if len(stages) == 0:
            raise ModelError(f"{path}: no stages")
        if half_datasets not in (0, datasets):
            raise ModelError(f"{path}: {half_datasets} of its {datasets} datasets are float16: a model stores all "
                             "its weights as float32 or all as float16")
        model["weight_dtype"] = "float16" if half_datasets else "float32"
        graph = check_stages(stages, model["channels"], where=path, extra_inputs=extra_inputs, output=output)
        if version < 3 and not graph.is_chain():
            raise ModelError(f"{path}: wired as a graph, a format-v3 feature, but format_version is {version}")
        model["stages"] = stages
        model["extra_inputs"] = graph.extra_inputs
        model["output"] = graph.output
        model["receptive_field"] = receptive_field(stages, graph.extra_inputs, graph.output)
        model["size_multiple"] = model["downscale"] = graph.size_multiple
        return model


# ---------------------------------------------------------------------------
# Running


def apply_stage(stage, x, model_input=None):
    """One stage on planes x [C, H, W] (float64; a list of them for a stage with
    several inputs), exactly as the backends define it. model_input: the
    (padded) model input, for add_model_input."""
    xs = list(x) if isinstance(x, (list, tuple)) else [x]
    return _op("apply_stage", stage).apply(stage, [np.asarray(a, dtype=np.float64) for a in xs], model_input)


def apply_model(model, image_chw, extra_inputs=None):
    """Runs the model on float planes [C, H, W] (values in [0, 1]); returns the
    unclamped float64 output [C, H, W]. When H or W is not a multiple of the
    model's size multiple M, the image is replicate-padded at the bottom/right
    to the next multiple first and the output is cropped back to H x W.
    extra_inputs: {name: value} for the model's extra inputs (noise_level: the
    noise's standard deviation / 255; jpeg_quality: the quality / 100), each
    fed as one plane of that value."""
    x = np.asarray(image_chw, dtype=np.float64)
    if x.ndim != 3 or x.shape[0] != model["channels"]:
        raise ModelError(f"apply_model: image is {list(x.shape)}, model takes [{model['channels']},H,W]")
    stages = model["stages"]
    graph = Graph(stages, model.get("extra_inputs"), model.get("output"))
    h, w = x.shape[1], x.shape[2]
    m = downscale(stages, graph.extra_inputs, graph.output)
    ph, pw = -h % m, -w % m
    if ph or pw:
        x = np.pad(x, ((0, 0), (0, ph), (0, pw)), mode="edge")
    tensors = {MODEL_INPUT: x}
    for e in graph.extra_inputs:
        if e not in (extra_inputs or {}):
            raise ModelError(f"apply_model: the model reads extra input {e!r}; pass its value in extra_inputs")
        tensors[e] = np.full((1,) + x.shape[1:], float(extra_inputs[e]), dtype=np.float64)
    for i, (stage, name, ins) in enumerate(zip(stages, graph.names, graph.inputs)):
        tensors[name] = apply_stage(stage, [tensors[n] for n in ins], x)
        for n in set(ins):
            if graph.last_use[n] == i and n != graph.output and n != MODEL_INPUT:
                del tensors[n]
    return tensors[graph.output][:, :h, :w]


def restore_uint8(model, image, extra_inputs=None):
    """What the CLI does to an 8-bit image (app/image/image_batch.h): image is uint8
    [H, W] (gray) or [H, W, 3] (RGB). Samples / 255 -> model -> clamp to [0, 1]
    -> * 255, round to nearest. A gray image through a 3-channel model is
    replicated to R=G=B and the result is the mean of R, G, B; an RGB image
    through a 1-channel model runs each channel on its own. (An RGB image with
    R = G = B everywhere the CLI also keeps gray, --keep-gray; not done here.)
    extra_inputs: as apply_model's."""
    img = np.asarray(image)
    if img.dtype != np.uint8:
        raise ModelError("restore_uint8: image must be uint8")
    x = img.astype(np.float64) / 255.0
    c = model["channels"]

    def run(planes):
        return np.clip(apply_model(model, planes, extra_inputs), 0.0, 1.0)

    if img.ndim == 2 and c == 3:
        out = run(np.stack([x, x, x])).mean(axis=0)
    elif img.ndim == 2 and c == 1:
        out = run(x[None])[0]
    elif img.ndim == 3 and img.shape[2] == 3 and c == 3:
        out = run(x.transpose(2, 0, 1)).transpose(1, 2, 0)
    elif img.ndim == 3 and img.shape[2] == 3 and c == 1:
        out = np.stack([run(x[None, :, :, i])[0] for i in range(3)], axis=2)
    else:
        raise ModelError(f"restore_uint8: image {list(img.shape)} does not fit a {c}-channel model")
    return np.rint(out * 255.0).astype(np.uint8)


def psnr(a, b, peak=255.0):
    """PSNR in dB between two images of the same shape (8-bit scale by default)."""
    mse = np.mean((np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)) ** 2)
    return float("inf") if mse == 0 else float(10.0 * np.log10(peak * peak / mse))


def _sha256(path):
    """The first 16 hex digits of a file's SHA-256 (as provenance strings name files)."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def _same_network(a, b, where):
    """Raises ModelError unless models a and b (read_model's dicts) are the
    same network: the same stages, wiring, settings and weight shapes."""
    if (len(a["stages"]) != len(b["stages"]) or a["channels"] != b["channels"] or
            a["extra_inputs"] != b["extra_inputs"] or a["output"] != b["output"]):
        raise ModelError(f"{where}: not the same network (stages, channels, extra inputs or output differ)")
    def pads(stage):  # whether its padding mode changes what it computes
        k = np.shape(stage["weight"])[-1] if "weight" in stage else 3
        return k > 1 and stage.get("stride", 1) != k  # a stride-K conv (the ways down) reads no border
    for i, (sa, sb) in enumerate(zip(a["stages"], b["stages"])):
        if sa.keys() - {"padding"} != sb.keys() - {"padding"}:
            raise ModelError(f"{where}: stage {i} differs ({sorted(sa)} against {sorted(sb)})")
        for k in sa.keys() | sb.keys():
            if k == "padding" and not pads(sa):
                continue
            va, vb = sa.get(k), sb.get(k)
            if isinstance(va, np.ndarray) or isinstance(vb, np.ndarray):
                if np.shape(va) != np.shape(vb):
                    raise ModelError(f"{where}: stage {i} {k} is {np.shape(va)} against {np.shape(vb)}")
            elif va != vb:
                raise ModelError(f"{where}: stage {i} {k} is {va!r} against {vb!r}")


def rewrite_model(src, dst, weight_dtype, name=None, append_description=None, prepend_description=None,
                  replace_description=None, average_with=None, average_weight=0.5):
    """The model file src written again to dst with its weights stored as
    weight_dtype ("float32" or "float16", WEIGHT_DTYPES): every attribute,
    the wiring and the extra root attributes kept (but validated precisions,
    measured with the old weights, when the weights change), the name too
    unless one is given, the description with prepend_description before it
    and append_description after it (what bundling adds: how a variant
    differs, which `imrestore models` shows first; the measured speed) and
    replace_description's (OLD, NEW) applied (OLD must occur exactly once: a
    figure measured again); the provenance says what was done. average_with:
    another model file of the same network (_same_network), whose weights are
    averaged in, each weight average_weight x src's + (1 - average_weight) x
    its (in float64, then stored as weight_dtype): a "model soup" of two runs
    fine-tuned from the same start, often better than either (weights/
    README.md). Returns the largest change of a weight relative to its
    tensor's largest magnitude (0 from float16 to float32; against src's
    weights when averaging)."""
    model = read_model(src)
    averaged = average_with is not None
    if averaged:
        if not 0.0 < average_weight < 1.0:
            raise ModelError(f"the average's weight must lie strictly between 0 and 1, not {average_weight}")
        other = read_model(average_with)
        _same_network(model, other, f"{src} and {average_with}")
    provenance = model["provenance"]
    base_description = model["description"]
    if replace_description:
        old, new = replace_description
        if not old or base_description.count(old) != 1:
            raise ModelError(f"{src}: the description holds {old!r} {base_description.count(old) if old else 0} "
                             "times, not once: nothing replaced")
        base_description = base_description.replace(old, new)
    # Measurements of the old weights (imrestore model --validate-precision)
    # do not hold for new ones: dropped when the weights change.
    new_weights = weight_dtype != model["weight_dtype"] or averaged
    stale = ("validated_precisions", "precision_validation") if new_weights else ()
    if new_weights or name or append_description or prepend_description or replace_description:
        provenance += (f"; then written again by weights/imrestore_model.py rewrite_model"
                       + (f", each weight {average_weight:g} x its own + {1 - average_weight:g} x that of "
                          f"'{other['name']}' ({os.path.basename(average_with)}, sha256 {_sha256(average_with)}; "
                          f"whose provenance: {other['provenance']})" if averaged else "")
                       + (f" with {weight_dtype} weights (each rounded to the nearest)" if weight_dtype !=
                          model["weight_dtype"] else "")
                       + (f" as '{name}' (was '{model['name']}')" if name else "")
                       + (", a sentence put before its description" if prepend_description else "")
                       + (", a sentence added after its description" if append_description else "")
                       + (f", '{replace_description[0]}' in its description replaced by '{replace_description[1]}'"
                          if replace_description else ""))
    with h5py.File(src, "r") as f:
        known = {"format", "format_version", "name", "task", "description", "provenance", "channels", "license",
                 *V3_ROOT_ATTRS}
        extra = {}
        for k, v in f.attrs.items():
            if k in known or k in stale:
                continue
            if isinstance(v, np.ndarray) and v.shape != ():
                raise ModelError(f"{src}: root attribute {k!r} is an array; rewrite_model keeps only str and int ones")
            extra[k] = v.decode() if isinstance(v, bytes) else v.item() if hasattr(v, "item") else v
        if any(k in f.attrs for k in stale):
            provenance += "; its validated precisions dropped (measured with the weights before)"
    worst = 0.0
    for i, stage in enumerate(model["stages"]):
        for key in OPS[stage["op"]].datasets:
            if stage.get(key) is not None:
                w = np.asarray(stage[key], np.float64)
                if averaged:
                    mean = average_weight * w + (1.0 - average_weight) * np.asarray(other["stages"][i][key],
                                                                                      np.float64)
                    stage[key] = mean.astype(weight_dtype).astype(np.float32)  # rounded once, to what is stored
                stored = np.asarray(np.asarray(stage[key]).astype(weight_dtype), np.float64)
                scale = np.max(np.abs(w)) or 1.0
                worst = max(worst, float(np.max(np.abs(stored - w)) / scale))
    description = " ".join(t for t in (prepend_description, base_description, append_description) if t)
    write_model(dst, name or model["name"], model["task"], description, provenance, model["channels"],
                model["stages"], license=model.get("license"), extra_attrs=extra or None,
                extra_inputs=model["extra_inputs"] or None,
                output=model["output"] if model["format_version"] >= 3 else None, weight_dtype=weight_dtype)
    return worst


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="Write a model file again with its weights stored as float32 or "
                                             "float16 (format v4): python3 weights/imrestore_model.py SRC DST "
                                             "--weight-dtype float16")
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--weight-dtype", choices=WEIGHT_DTYPES, required=True)
    ap.add_argument("--name", default=None, help="a new name for the model (default: keep it)")
    ap.add_argument("--append-description", default=None, metavar="TEXT",
                    help="a sentence to add at the end of the description (e.g. its measured speed)")
    ap.add_argument("--prepend-description", default=None, metavar="TEXT",
                    help="a sentence to put first (what `imrestore models` shows: e.g. how a variant differs)")
    ap.add_argument("--replace-description", nargs=2, default=None, metavar=("OLD", "NEW"),
                    help="replace OLD, which must occur exactly once in the description, by NEW (e.g. a speed "
                         "measured again)")
    ap.add_argument("--average-with", default=None, metavar="MODEL",
                    help="average the weights with those of MODEL, the same network (e.g. a fine-tune of SRC)")
    ap.add_argument("--average-weight", type=float, default=0.5, metavar="W",
                    help="with --average-with: W x SRC's weights + (1 - W) x MODEL's (default 0.5)")
    a = ap.parse_args()
    change = rewrite_model(a.src, a.dst, a.weight_dtype, a.name, a.append_description, a.prepend_description,
                           a.replace_description, a.average_with, a.average_weight)
    print(f"wrote {a.dst} ({a.weight_dtype} weights; largest change of a weight: {change:.2e} of its tensor's "
          "largest magnitude)")
