#!/usr/bin/env python3
"""Write a PyTorch network as an imrestore model file (format v3 graphs, or
v1/v2 where the network is a plain chain of v1/v2 kinds), by tracing it with
torch.fx.

    import export_graph
    export_graph.export_model(net, "net.h5", name="net", task="denoise",
                              description="...", provenance="...")

What can be traced (anything else raises ExportError naming the node):
  * the network's first input is the image [N, C, H, W]; further inputs
    named noise_level or jpeg_quality become the model's extra inputs (one
    channel at full resolution, each pixel the value);
  * nn.Conv2d: size-keeping (stride 1, padding K//2 or "same", zeros, reflect
    or replicate padding), strided (kernel = stride, no padding), depthwise
    (groups = in = out channels, K odd up to 7, size-keeping);
  * nn.ConvTranspose2d with kernel = stride, no padding; nn.PixelShuffle,
    nn.PixelUnshuffle; nn.ReLU, nn.LeakyReLU, nn.GELU (erf form), nn.SiLU and
    their functional forms; nn.Identity and nn.Dropout (identity: the network
    is exported in eval mode);
  * graph_modules.LayerNorm2d, SimpleGate and LocalChannelAttention;
  * x + y, x * y of two tensors of one shape (torch.add / torch.mul too),
    torch.cat along the channels;
  * x * p where p is a per-channel parameter [1, C, 1, 1] and x the output of
    a convolution that nothing else reads: folded into the convolution's
    weights (NAFNet's beta and gamma).
Fused where exact: a ReLU right after a conv2d into its activation; an add of
a conv2d / conv_transpose2d output (that nothing else reads) and a tensor of
its shape into the convolution's residual input.

The stages are named after the modules (their dotted paths) or the fx nodes.
"""

import json
import operator
import os
import re
import sys

import numpy as np
import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
from torch.fx.passes.shape_prop import ShapeProp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import imrestore_model as im  # noqa: E402
from graph_modules import LayerNorm2d, LocalChannelAttention, SimpleGate  # noqa: E402

PADDING_MODES = {"zeros": "zero", "reflect": "reflect", "replicate": "replicate"}
LEAF_MODULES = (LayerNorm2d, SimpleGate, LocalChannelAttention)


class ExportError(ValueError):
    """A network that cannot be written exactly as a model file (names the node)."""


class _Tracer(torch.fx.Tracer):
    def is_leaf_module(self, m, qualname):
        return isinstance(m, LEAF_MODULES) or super().is_leaf_module(m, qualname)


def _np(t):
    return t.detach().to("cpu", torch.float64).numpy()


def _f32(a):
    return np.ascontiguousarray(a, dtype=np.float64).astype(np.float32)


class _Stage:
    """A stage being built: its dict, the fx values it reads, the fx nodes fused
    into it (the last one gives its output) and the module or node it is named after."""

    def __init__(self, stage, inputs, node, label):
        self.stage, self.inputs, self.nodes, self.label = stage, list(inputs), [node], label
        self.residual = False

    @property
    def last(self):
        return self.nodes[-1]


class _Exporter:
    def __init__(self, module, example_size):
        self.module = module
        self.gm = torch.fx.GraphModule(module, _Tracer().trace(module))
        self.graph = self.gm.graph
        self.graph.eliminate_dead_code()  # what the result does not depend on is no stage (the format refuses those)
        self.modules = dict(module.named_modules())
        self.order = {n: i for i, n in enumerate(self.graph.nodes)}
        self.value = {}  # fx node -> "input" / an extra input's name / _Stage / ("param", tensor)
        self.stages = []
        self.extra_inputs = []
        self.example_size = example_size

    # -- helpers ----------------------------------------------------------

    def fail(self, node, why):
        what = node.target if node.op in ("call_module", "get_attr") else getattr(node.target, "__name__", node.target)
        raise ExportError(f"node {node.name!r} ({node.op} {what}): {why}")

    def shape(self, node):
        meta = node.meta.get("tensor_meta")
        if meta is None or not hasattr(meta, "shape"):
            self.fail(node, "gives no single tensor")
        return tuple(meta.shape)

    def tensor(self, node, arg):
        """The value an argument refers to (a placeholder name or a _Stage)."""
        if not isinstance(arg, torch.fx.Node):
            self.fail(node, f"has the non-tensor operand {arg!r} (only tensors from the graph are supported)")
        v = self.value.get(arg)
        if v is None or isinstance(v, tuple):
            self.fail(node, f"reads {arg.name!r}, which is not an image tensor of the graph (a parameter or "
                            "constant is only supported as a per-channel scale after a convolution)")
        return v

    def fusable(self, v, ops):
        """v is a stage of one of ops whose output nothing but the node being converted reads."""
        return isinstance(v, _Stage) and v.stage["op"] in ops and len(v.last.users) == 1

    def add_stage(self, node, stage, inputs, label=None):
        s = _Stage(stage, inputs, node, label or node.name)
        self.stages.append(s)
        self.value[node] = s
        return s

    def fuse(self, node, s):
        s.nodes.append(node)
        self.value[node] = s

    def operands(self, node, count):
        if len(node.args) != count or node.kwargs:
            self.fail(node, f"supported with exactly {count} tensor operands and no further arguments")
        return list(node.args)

    # -- modules ----------------------------------------------------------

    def m_conv2d(self, node, m, x):
        k = m.kernel_size
        if m.dilation != (1, 1) or k[0] != k[1]:
            self.fail(node, "needs a square kernel without dilation")
        k = k[0]
        weight, bias = _np(m.weight), (None if m.bias is None else _np(m.bias))
        padding = PADDING_MODES.get(m.padding_mode)
        if padding is None:
            self.fail(node, f"padding_mode {m.padding_mode!r} is not supported (zeros, reflect, replicate)")
        same = m.padding == "same" or (m.padding == ((k - 1) // 2,) * 2 and k % 2 == 1)
        if m.groups == 1:
            if m.stride == (1, 1):
                if not same:
                    self.fail(node, f"padding {m.padding} does not keep the size (needs K//2 with K odd, or 'same')")
                stage = {"op": "conv2d", "weight": weight, "bias": bias, "padding": padding}
            else:
                if m.stride != (k, k) or m.padding not in ((0, 0), "valid"):
                    self.fail(node, f"a strided convolution needs kernel = stride and no padding (kernel {k}, "
                                    f"stride {m.stride}, padding {m.padding})")
                stage = {"op": "conv2d", "weight": weight, "bias": bias, "padding": "zero", "stride": k}
        elif m.groups == m.in_channels == m.out_channels:
            if m.stride != (1, 1) or not same or k % 2 == 0:
                self.fail(node, "a depthwise convolution needs stride 1, an odd kernel and size-keeping padding")
            stage = {"op": "depthwise_conv2d", "weight": weight, "bias": bias, "padding": padding}
        else:
            self.fail(node, f"groups={m.groups} is supported only as a depthwise convolution (groups = in = out "
                            "channels)")
        self.add_stage(node, stage, [x], node.target)

    def m_conv_transpose2d(self, node, m, x):
        f = m.stride[0]
        if (m.kernel_size != (f, f) or m.stride != (f, f) or m.padding != (0, 0) or m.output_padding != (0, 0)
                or m.groups != 1 or m.dilation != (1, 1)):
            self.fail(node, "needs kernel = stride, square, no padding, no output padding, groups 1")
        self.add_stage(node, {"op": "conv_transpose2d", "weight": _np(m.weight),
                              "bias": None if m.bias is None else _np(m.bias), "stride": f}, [x], node.target)

    def m_pixel_shuffle(self, node, m, x):
        self.add_stage(node, {"op": "depth_to_space", "factor": m.upscale_factor}, [x], node.target)

    def m_pixel_unshuffle(self, node, m, x):
        self.add_stage(node, {"op": "space_to_depth", "factor": m.downscale_factor}, [x], node.target)

    def m_relu(self, node, m, x):
        self.relu(node, node.args[0], x, getattr(m, "inplace", False))

    def m_leaky_relu(self, node, m, x):
        self.activation(node, x, "leaky_relu", m.negative_slope, node.target)

    def m_gelu(self, node, m, x):
        if m.approximate != "none":
            self.fail(node, f"GELU approximate={m.approximate!r}: only the erf form is supported")
        self.activation(node, x, "gelu", None, node.target)

    def m_silu(self, node, m, x):
        self.activation(node, x, "silu", None, node.target)

    def m_identity(self, node, m, x):
        self.value[node] = x

    def m_layer_norm(self, node, m, x):
        self.add_stage(node, {"op": "layer_norm", "weight": _np(m.weight), "bias": _np(m.bias), "eps": m.eps},
                       [x], node.target)

    def m_simple_gate(self, node, m, x):
        self.add_stage(node, {"op": "simple_gate"}, [x], node.target)

    def m_channel_attention(self, node, m, x):
        conv = m.conv
        bias = _np(conv.bias) if conv.bias is not None else np.zeros(conv.out_channels)
        self.add_stage(node, {"op": "channel_attention", "weight": _np(conv.weight)[:, :, 0, 0], "bias": bias,
                              "window": m.window}, [x], node.target)

    MODULES = {
        nn.Conv2d: m_conv2d, nn.ConvTranspose2d: m_conv_transpose2d, nn.PixelShuffle: m_pixel_shuffle,
        nn.PixelUnshuffle: m_pixel_unshuffle, nn.ReLU: m_relu, nn.LeakyReLU: m_leaky_relu, nn.GELU: m_gelu,
        nn.SiLU: m_silu, nn.Identity: m_identity, nn.Dropout: m_identity, LayerNorm2d: m_layer_norm,
        SimpleGate: m_simple_gate, LocalChannelAttention: m_channel_attention,
    }

    # -- activations ------------------------------------------------------

    def relu(self, node, arg, x, inplace):
        if inplace and len(arg.users) > 1:
            self.fail(node, "an in-place ReLU of a tensor something else reads too")
        if (self.fusable(x, ("conv2d",)) and x.stage.get("activation", "none") == "none" and not x.residual
                and not x.stage.get("add_model_input")):
            x.stage["activation"] = "relu"  # exact: act(conv(x) + b)
            self.fuse(node, x)
        else:
            self.activation(node, x, "relu", None)

    def activation(self, node, x, function, slope, label=None):
        stage = {"op": "activation", "function": function}
        if slope is not None:
            stage["slope"] = float(slope)
        self.add_stage(node, stage, [x], label)

    # -- functions and methods --------------------------------------------

    def f_add(self, node):
        a, b = self.operands(node, 2)
        va, vb = self.tensor(node, a), self.tensor(node, b)
        if self.shape(a) != self.shape(b):
            self.fail(node, f"adds tensors of shapes {self.shape(a)} and {self.shape(b)} (no broadcasting)")
        for conv, other in ((va, vb), (vb, va)):
            if self.fusable(conv, ("conv2d", "conv_transpose2d")) and not conv.residual \
                    and not conv.stage.get("add_model_input") and conv is not other:
                conv.inputs.append(other)  # exact: act(conv(x) + b) + r
                conv.residual = True
                self.fuse(node, conv)
                return
        self.add_stage(node, {"op": "add"}, [va, vb])

    def f_mul(self, node):
        a, b = self.operands(node, 2)
        for x, p in ((a, b), (b, a)):
            if isinstance(p, torch.fx.Node) and isinstance(self.value.get(p), tuple):
                self.fold_scale(node, x, self.value[p][1])
                return
        va, vb = self.tensor(node, a), self.tensor(node, b)
        if self.shape(a) != self.shape(b):
            self.fail(node, f"multiplies tensors of shapes {self.shape(a)} and {self.shape(b)} (no broadcasting)")
        self.add_stage(node, {"op": "mul"}, [va, vb])

    def fold_scale(self, node, arg, p):
        """x * p, p a per-channel parameter, x a convolution's output: into its weights."""
        v = self.tensor(node, arg)
        cout = self.shape(arg)[1]
        if not (self.fusable(v, ("conv2d", "conv_transpose2d")) and v.stage.get("activation", "none") == "none"
                and not v.residual and not v.stage.get("add_model_input")):
            self.fail(node, "multiplies by a parameter; supported only right after a convolution (no activation, "
                            "no residual) whose output nothing else reads")
        if tuple(p.shape) not in ((1, cout, 1, 1), (cout, 1, 1)):
            self.fail(node, f"multiplies by a parameter of shape {tuple(p.shape)}, not per channel [1, {cout}, 1, 1]")
        scale = _np(p).reshape(cout)
        if v.stage["op"] == "conv2d":
            v.stage["weight"] = v.stage["weight"] * scale[:, None, None, None]
        else:
            v.stage["weight"] = v.stage["weight"] * scale[None, :, None, None]
        if v.stage.get("bias") is not None:
            v.stage["bias"] = v.stage["bias"] * scale
        self.fuse(node, v)

    def f_cat(self, node):
        tensors = node.args[0] if node.args else node.kwargs.get("tensors")
        dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
        if dim not in (1, -3) or not isinstance(tensors, (list, tuple)):
            self.fail(node, f"concatenates along dimension {dim}; only the channels (1) are supported")
        self.add_stage(node, {"op": "concat"}, [self.tensor(node, t) for t in tensors])

    def f_relu(self, node):
        inplace = node.kwargs.get("inplace", node.args[1] if len(node.args) > 1 else False)
        self.relu(node, node.args[0], self.tensor(node, node.args[0]), inplace)

    def f_leaky_relu(self, node):
        slope = node.kwargs.get("negative_slope", node.args[1] if len(node.args) > 1 else 0.01)
        self.activation(node, self.tensor(node, node.args[0]), "leaky_relu", slope)

    def f_gelu(self, node):
        if node.kwargs.get("approximate", "none") != "none":
            self.fail(node, "only the erf form of GELU is supported")
        self.activation(node, self.tensor(node, node.args[0]), "gelu", None)

    def f_silu(self, node):
        self.activation(node, self.tensor(node, node.args[0]), "silu", None)

    FUNCTIONS = {
        operator.add: f_add, torch.add: f_add, operator.mul: f_mul, torch.mul: f_mul, torch.cat: f_cat,
        torch.concat: f_cat, F.relu: f_relu, torch.relu: f_relu, F.leaky_relu: f_leaky_relu, F.gelu: f_gelu,
        F.silu: f_silu,
    }
    METHODS = {"add": f_add, "mul": f_mul, "relu": f_relu}  # x.add(y), x.mul(y), x.relu()

    # -- the graph ----------------------------------------------------------

    def placeholder(self, node):
        if not self.value:
            self.value[node] = im.MODEL_INPUT
        elif node.target in im.EXTRA_INPUTS:
            self.value[node] = node.target
            self.extra_inputs.append(node.target)
        else:
            self.fail(node, f"is an input other than the image, {' or '.join(im.EXTRA_INPUTS)}")

    def get_attr(self, node):
        t = self.gm
        for part in node.target.split("."):
            t = getattr(t, part)
        if not isinstance(t, torch.Tensor):
            self.fail(node, "is not a tensor")
        self.value[node] = ("param", t)

    def call_module(self, node):
        m = self.modules[node.target]
        convert = self.MODULES.get(type(m))
        if convert is None:
            self.fail(node, f"module {type(m).__name__} is not supported")
        if len(node.args) != 1 or node.kwargs:
            self.fail(node, "a module called with other than one tensor")
        convert(self, node, m, self.tensor(node, node.args[0]))

    def call_function(self, node):
        convert = self.FUNCTIONS.get(node.target)
        if convert is None:
            self.fail(node, "function is not supported")
        convert(self, node)

    def call_method(self, node):
        convert = self.METHODS.get(node.target)
        if convert is None:
            self.fail(node, "method is not supported")
        convert(self, node)

    def output(self, node):
        out = node.args[0]
        if not isinstance(out, torch.fx.Node):
            self.fail(node, "the network must return one tensor")
        v = self.tensor(node, out)
        if not isinstance(v, _Stage):
            self.fail(node, "the network returns one of its inputs unchanged")
        self.output_stage = v

    NODES = {"placeholder": placeholder, "get_attr": get_attr, "call_module": call_module,
             "call_function": call_function, "call_method": call_method, "output": output}

    def run(self, channels):
        size = self.example_size
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        example = [torch.rand(1, channels, size[0], size[1])]
        example += [torch.full((1, 1, size[0], size[1]), 0.25) for _ in placeholders[1:]]
        ShapeProp(self.gm).propagate(*example)
        for node in self.graph.nodes:
            self.NODES[node.op](self, node)
        return self.emit()

    def emit(self):
        # In the order of each stage's last fused node: a topological order in
        # which every input (a residual too) comes before its reader.
        stages = sorted(self.stages, key=lambda s: self.order[s.last])
        names, used = {}, set(im.EXTRA_INPUTS) | {im.MODEL_INPUT}
        for s in stages:
            names[id(s)] = _unique_name(str(s.label), used)
        out = []
        for s in stages:
            stage = {k: v for k, v in s.stage.items() if v is not None}
            for key in ("weight", "bias"):
                if key in stage:
                    stage[key] = _f32(stage[key])
            stage["name"] = names[id(s)]
            stage["inputs"] = [names[id(v)] if isinstance(v, _Stage) else v for v in s.inputs]
            out.append(stage)
        return out, self.extra_inputs, names[id(self.output_stage)]


def _unique_name(label, used):
    name = re.sub(r"[^A-Za-z0-9_.\-]", "_", label)
    if not name or name[0].isdigit():
        name = "m." + name
    if len(name) > 64:
        name = name[:56]
    base, i = name, 1
    while name in used:
        i += 1
        name = f"{base[:56]}_{i}"
    used.add(name)
    return name


def graph_stages(module, channels=None, example_size=None):
    """The network as model stages: (stages, extra_inputs, output), traced in
    eval mode. channels: the image channels (default: module.image_channels,
    else 3); example_size: (H, W) of the example that tracing runs for the
    shapes (default: twice and three times module.size_multiple)."""
    channels = int(channels if channels is not None else getattr(module, "image_channels", 3))
    if example_size is None:
        m = int(getattr(module, "size_multiple", 1))
        example_size = (2 * m, 3 * m)
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            return _Exporter(module, example_size).run(channels)
    finally:
        module.train(was_training)


def export_model(module, path, name, task, description, provenance, channels=None, license=None, extra_attrs=None,
                 example_size=None, weight_dtype="float32"):
    """Traces the network (graph_stages) and writes it with imrestore_model.write_model
    (weight_dtype "float16": format v4, each weight rounded to the nearest half);
    returns the model as imrestore_model.read_model reads it back."""
    channels = int(channels if channels is not None else getattr(module, "image_channels", 3))
    stages, extra_inputs, output = graph_stages(module, channels, example_size)
    im.write_model(path, name, task, description, provenance, channels, stages, license=license,
                   extra_attrs=extra_attrs, extra_inputs=extra_inputs, output=output, weight_dtype=weight_dtype)
    return im.read_model(path)


def main(argv=None):
    import argparse

    import architectures

    p = argparse.ArgumentParser(description="Write a reference architecture (weights/architectures.py), freshly "
                                            "initialized or from a state_dict file, as an imrestore model file.")
    p.add_argument("arch", help="drunet, nafnet, drunet-small, nafnet-large, ...")
    p.add_argument("out", help="the .h5 to write")
    p.add_argument("--state-dict", help="a torch.save'd state_dict (or a dict with 'model') to load")
    p.add_argument("--name", default=None)
    p.add_argument("--task", default="denoise")
    p.add_argument("--arch-kw", default=None,
                   help="JSON constructor sizes, as train.py's, e.g. '{\"widths\": [32, 64, 128, 256], \"blocks\": 2}'")
    args = p.parse_args(argv)
    net = architectures.build(args.arch, **(json.loads(args.arch_kw) if args.arch_kw else {}))
    if args.state_dict:
        sd = torch.load(args.state_dict, map_location="cpu")
        net.load_state_dict(sd.get("model", sd) if isinstance(sd, dict) else sd)
    name = args.name or os.path.splitext(os.path.basename(args.out))[0]
    source = f"weights from {args.state_dict}" if args.state_dict else "untrained"
    what = args.arch + (f" {args.arch_kw}" if args.arch_kw else "")
    model = export_model(net, args.out, name, args.task, f"{what} ({source})",
                         f"weights/export_graph.py {what}, {source}")
    print(f"wrote {args.out}: format_version {model['format_version']}, {len(model['stages'])} stages, "
          f"size multiple {model['size_multiple']}, receptive field {model['receptive_field']}")


if __name__ == "__main__":
    sys.exit(main())
