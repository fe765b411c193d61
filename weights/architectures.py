"""Reference U-Net architectures that imrestore's model format v3 can express
exactly (weights/README.md, "Model file format, version 3: graphs"); each is
traced and written as a model file by weights/export_graph.py.

    DRUNetLike   DRUNet's shape: 4 scales, residual blocks (conv3x3, relu,
                 conv3x3, + skip), 2x2 stride-2 convolutions down, 2x2
                 stride-2 transposed convolutions up, skip additions, a global
                 residual; optionally a level input (level_input="jpeg_quality"
                 or "noise_level": a constant plane joined to the image before
                 the head, as FBCNN's quality and DRUNet's noise-level map).
    NAFNetLike   NAFNet's shape: NAFBlocks (LayerNorm2d, 1x1 conv, depthwise
                 3x3, SimpleGate, channel attention, 1x1 conv, learned
                 per-channel scale beta, + skip; LayerNorm2d, 1x1 conv,
                 SimpleGate, 1x1 conv, scale gamma, + skip), 2x2 stride-2
                 convolutions down, 1x1 conv + PixelShuffle up, skip
                 additions, a global residual. The channel attention pools
                 over the patch in training and over a local window at test
                 time (NAFNet's TLC; graph_modules.LocalChannelAttention).

The interface the trainer and the exporter rely on:
  * the constructors take image_channels (default 3) and preset ("small",
    "large"; None = "large") or the explicit sizes, which override the preset;
  * `size_multiple` (a property): forward(x) takes [N, C, H, W] with H and W
    multiples of it (the format pads other sizes by replicating the last
    row/column and crops back: `forward_any_size` does that);
  * `config()`: the constructor arguments, so build(**config()) rebuilds it;
  * `level_input` (None, "jpeg_quality" or "noise_level"): a model with one
    is called as model(x, level), level [N, 1, H, W] the constant plane of the
    value (jpeg_quality: quality / 100; noise_level: sigma / 255, as the
    format's extra inputs); its forward's second argument has that name, so
    weights/export_graph.py writes it as the model's extra input;
  * build(arch_name, **kw): "drunet" or "nafnet", or "drunet-small" etc.
    (the preset in the name).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from graph_modules import LayerNorm2d, LocalChannelAttention, SimpleGate


class _ResBlock(nn.Module):
    """x + conv3x3(relu(conv3x3(x))), zero padding (DRUNet's ResBlock 'CRC')."""

    def __init__(self, channels, bias):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=bias)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=bias)

    def forward(self, x):
        return x + self.conv2(self.relu(self.conv1(x)))


def level_plane(level, x):
    """A level input's plane for x [N, C, H, W]: [N, 1, H, W] of the level (a
    number, or one per item), in x's dtype and on its device."""
    n, _, h, w = x.shape
    return torch.as_tensor(level, dtype=x.dtype, device=x.device).reshape(-1, 1, 1, 1).expand(n, 1, h, w)


class _SizeMixin:
    def forward_any_size(self, x, level=None):
        """The format's rule for other sizes: replicate-pad bottom/right to the
        next multiple of size_multiple, run, crop back. level: a model with a
        level input's value (a number, or one per item), as its plane."""
        h, w = x.shape[-2:]
        m = self.size_multiple
        ph, pw = -h % m, -w % m
        if ph or pw:
            x = F.pad(x, (0, pw, 0, ph), mode="replicate")
        if getattr(self, "level_input", None) is None:
            return self(x)[..., :h, :w]
        return self(x, level_plane(level, x))[..., :h, :w]


class DRUNetLike(_SizeMixin, nn.Module):
    """DRUNet-like U-Net over len(widths) scales (4 by default: full, 1/2, 1/4,
    1/8): head conv3x3 -> per scale but the last [blocks x ResBlock, 2x2
    stride-2 conv to the next width] -> body blocks x ResBlock -> per scale back
    up [2x2 stride-2 transposed conv, + that scale's skip, blocks x ResBlock]
    -> + head output -> tail conv3x3 -> + input. Biases only with bias=True
    (DRUNet has none). With level_input, the head reads the image and the
    level's plane (image_channels + 1 channels; build() gives the class whose
    forward names the level)."""

    PRESETS = {
        "small": {"widths": (16, 32, 64, 128), "blocks": 1},
        "large": {"widths": (64, 128, 256, 512), "blocks": 4},  # DRUNet's own sizes
    }

    def __init__(self, image_channels=3, preset=None, widths=None, blocks=None, bias=False, level_input=None):
        super().__init__()
        p = self.PRESETS[preset or "large"]
        if level_input not in LEVEL_CLASSES:
            raise ValueError(f"DRUNetLike: level_input {level_input!r} is not one of {list(LEVEL_CLASSES)}")
        if LEVEL_CLASSES[level_input] is not type(self):
            raise ValueError(f"DRUNetLike: level_input {level_input!r} needs class {LEVEL_CLASSES[level_input].__name__} "
                             "(build() picks it)")
        self.level_input = level_input
        self.image_channels = int(image_channels)
        self.preset = preset
        self.widths = tuple(int(w) for w in (widths if widths is not None else p["widths"]))
        self.blocks = int(blocks if blocks is not None else p["blocks"])
        self.bias = bool(bias)
        if len(self.widths) < 2 or self.blocks < 1:
            raise ValueError(f"DRUNetLike: needs at least 2 widths and 1 block, got {self.widths}, {self.blocks}")
        w = self.widths
        self.head = nn.Conv2d(self.image_channels + (1 if level_input else 0), w[0], 3, padding=1, bias=self.bias)
        self.down = nn.ModuleList()
        self.down_blocks = nn.ModuleList()
        for i in range(len(w) - 1):
            self.down_blocks.append(nn.Sequential(*[_ResBlock(w[i], self.bias) for _ in range(self.blocks)]))
            self.down.append(nn.Conv2d(w[i], w[i + 1], 2, stride=2, bias=self.bias))
        self.body = nn.Sequential(*[_ResBlock(w[-1], self.bias) for _ in range(self.blocks)])
        self.up = nn.ModuleList()
        self.up_blocks = nn.ModuleList()
        for i in reversed(range(len(w) - 1)):
            self.up.append(nn.ConvTranspose2d(w[i + 1], w[i], 2, stride=2, bias=self.bias))
            self.up_blocks.append(nn.Sequential(*[_ResBlock(w[i], self.bias) for _ in range(self.blocks)]))
        self.tail = nn.Conv2d(w[0], self.image_channels, 3, padding=1, bias=self.bias)
        with torch.no_grad():  # start near the identity (the + input), not worse than the input
            self.tail.weight.mul_(0.1)

    @property
    def size_multiple(self):
        return 2 ** (len(self.widths) - 1)

    def config(self):
        c = {"arch": "drunet", "image_channels": self.image_channels, "widths": list(self.widths),
             "blocks": self.blocks, "bias": self.bias}
        if self.level_input:
            c["level_input"] = self.level_input
        return c

    def forward(self, x):
        return self._run(x)

    def _run(self, x, level=None):
        y = self.head(x if level is None else torch.cat([x, level], 1))
        skips = [y]
        for blocks, down in zip(self.down_blocks, self.down):
            y = down(blocks(y))
            skips.append(y)
        y = self.body(y)
        for up, blocks, skip in zip(self.up, self.up_blocks, reversed(skips[1:])):
            y = blocks(up(y + skip))
        return self.tail(y + skips[0]) + x


class _NAFBlock(nn.Module):
    """NAFNet's block at width c (expansions 2): y = x + beta * conv3(sca(sg(dw(conv1(ln1(x))))));
    out = y + gamma * conv5(sg(conv4(ln2(y)))). beta and gamma start at 0."""

    def __init__(self, c, window):
        super().__init__()
        self.norm1 = LayerNorm2d(c)
        self.conv1 = nn.Conv2d(c, 2 * c, 1)
        self.conv2 = nn.Conv2d(2 * c, 2 * c, 3, padding=1, groups=2 * c)
        self.sg = SimpleGate()
        self.sca = LocalChannelAttention(c, window)
        self.conv3 = nn.Conv2d(c, c, 1)
        self.norm2 = LayerNorm2d(c)
        self.conv4 = nn.Conv2d(c, 2 * c, 1)
        self.conv5 = nn.Conv2d(c, c, 1)
        self.beta = nn.Parameter(torch.zeros(1, c, 1, 1))
        self.gamma = nn.Parameter(torch.zeros(1, c, 1, 1))

    def forward(self, x):
        t = self.sca(self.sg(self.conv2(self.conv1(self.norm1(x)))))
        y = x + self.conv3(t) * self.beta
        t = self.sg(self.conv4(self.norm2(y)))
        return y + self.conv5(t) * self.gamma


class NAFNetLike(_SizeMixin, nn.Module):
    """NAFNet-like U-Net: intro conv3x3 -> per level [enc_blocks[i] x NAFBlock,
    2x2 stride-2 conv doubling the width] -> middle_blocks x NAFBlock -> per
    level back up, deepest first [1x1 conv to twice the width, no bias,
    PixelShuffle(2), + that level's skip, dec_blocks[j] x NAFBlock] -> ending conv3x3 -> + input.

    window: the channel attention's local window in image pixels at test time
    (each level's window is window / its downscale, in its own pixels); NAFNet's
    TLC uses 1.5 x the training patch (the default suits 128-pixel patches).
    In training the attention pools globally over patches the window covers."""

    PRESETS = {
        "small": {"width": 16, "enc_blocks": (1, 1, 1, 1), "middle_blocks": 1, "dec_blocks": (1, 1, 1, 1)},
        # NAFNet-SIDD-width32's sizes
        "large": {"width": 32, "enc_blocks": (2, 2, 4, 8), "middle_blocks": 12, "dec_blocks": (2, 2, 2, 2)},
    }

    def __init__(self, image_channels=3, preset=None, width=None, enc_blocks=None, middle_blocks=None,
                 dec_blocks=None, window=192):
        super().__init__()
        p = self.PRESETS[preset or "large"]
        self.image_channels = int(image_channels)
        self.width = int(width if width is not None else p["width"])
        self.enc_blocks = tuple(int(b) for b in (enc_blocks if enc_blocks is not None else p["enc_blocks"]))
        self.middle_blocks = int(middle_blocks if middle_blocks is not None else p["middle_blocks"])
        self.dec_blocks = tuple(int(b) for b in (dec_blocks if dec_blocks is not None else p["dec_blocks"]))
        self.window = int(window)
        if len(self.enc_blocks) != len(self.dec_blocks):
            raise ValueError(f"NAFNetLike: {len(self.enc_blocks)} encoder levels but {len(self.dec_blocks)} decoder "
                             "levels")
        levels = len(self.enc_blocks)
        if self.window // 2 ** levels < 1:
            raise ValueError(f"NAFNetLike: window {self.window} is below 1 pixel at 1/{2 ** levels} resolution")
        self.intro = nn.Conv2d(self.image_channels, self.width, 3, padding=1)
        self.encoders = nn.ModuleList()
        self.downs = nn.ModuleList()
        c = self.width
        for i, n in enumerate(self.enc_blocks):
            self.encoders.append(nn.Sequential(*[_NAFBlock(c, self.window // 2 ** i) for _ in range(n)]))
            self.downs.append(nn.Conv2d(c, 2 * c, 2, stride=2))
            c *= 2
        self.middle = nn.Sequential(*[_NAFBlock(c, self.window // 2 ** levels) for _ in range(self.middle_blocks)])
        self.ups = nn.ModuleList()
        self.decoders = nn.ModuleList()
        for j, n in enumerate(self.dec_blocks):  # deepest first, as NAFNet's dec_blk_nums
            self.ups.append(nn.Sequential(nn.Conv2d(c, 2 * c, 1, bias=False), nn.PixelShuffle(2)))
            c //= 2
            level = levels - 1 - j
            self.decoders.append(nn.Sequential(*[_NAFBlock(c, self.window // 2 ** level) for _ in range(n)]))
        self.ending = nn.Conv2d(self.width, self.image_channels, 3, padding=1)

    @property
    def size_multiple(self):
        return 2 ** len(self.enc_blocks)

    def config(self):
        return {"arch": "nafnet", "image_channels": self.image_channels, "width": self.width,
                "enc_blocks": list(self.enc_blocks), "middle_blocks": self.middle_blocks,
                "dec_blocks": list(self.dec_blocks), "window": self.window}

    def forward(self, x):
        y = self.intro(x)
        skips = []
        for enc, down in zip(self.encoders, self.downs):
            y = enc(y)
            skips.append(y)
            y = down(y)
        y = self.middle(y)
        for up, dec, skip in zip(self.ups, self.decoders, reversed(skips)):
            y = dec(up(y) + skip)
        return self.ending(y) + x


class _DRUNetLikeJpegQuality(DRUNetLike):
    """DRUNetLike with level_input="jpeg_quality": forward(x, jpeg_quality)."""

    def forward(self, x, jpeg_quality):
        return self._run(x, jpeg_quality)


class _DRUNetLikeNoiseLevel(DRUNetLike):
    """DRUNetLike with level_input="noise_level": forward(x, noise_level)."""

    def forward(self, x, noise_level):
        return self._run(x, noise_level)


# The class of each level input (torch.fx traces the forward of the class, so
# the level's name is the forward's argument: one class each).
LEVEL_CLASSES = {None: DRUNetLike, "jpeg_quality": _DRUNetLikeJpegQuality, "noise_level": _DRUNetLikeNoiseLevel}
ARCHITECTURES = {"drunet": DRUNetLike, "nafnet": NAFNetLike}


def build(arch_name, **kw):
    """A model by name: "drunet" or "nafnet" (kw: the constructor's arguments),
    or "drunet-small", "nafnet-large", ... (the preset in the name). kw may
    hold an "arch" key (as config() gives), which must agree."""
    arch, _, preset = arch_name.partition("-")
    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown architecture {arch_name!r} (known: {', '.join(ARCHITECTURES)}, with an optional "
                         "-small or -large)")
    kw = dict(kw)
    if kw.pop("arch", arch) != arch:
        raise ValueError(f"build({arch_name!r}): the arguments are of another architecture")
    if preset:
        if preset not in ARCHITECTURES[arch].PRESETS:
            raise ValueError(f"unknown preset {preset!r} of {arch} (known: {', '.join(ARCHITECTURES[arch].PRESETS)})")
        kw["preset"] = preset
    if arch == "drunet":  # the class whose forward names the level (DRUNetLike refuses an unknown one)
        return LEVEL_CLASSES.get(kw.get("level_input"), DRUNetLike)(**kw)
    return ARCHITECTURES[arch](**kw)
