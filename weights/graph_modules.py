"""Small PyTorch modules with an exact counterpart among the format-v3 stage
kinds (weights/README.md, "Model file format, version 3: graphs"), for
networks that weights/export_graph.py writes as imrestore model files:

    LayerNorm2d            -> layer_norm
    SimpleGate             -> simple_gate
    LocalChannelAttention  -> channel_attention

The exporter treats each as one stage (a leaf of the torch.fx trace), so
their forward passes may do anything; what they compute in eval mode is what
the stage kind computes.
"""

import torch
import torch.nn as nn


class LayerNorm2d(nn.Module):
    """Per pixel over the channels: (x - mean) / sqrt(var + eps) * weight + bias,
    var the biased variance (NAFNet's LayerNorm2d). Stage kind layer_norm."""

    def __init__(self, channels, eps=1e-6):
        super().__init__()
        self.eps = float(eps)
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        mu = x.mean(1, keepdim=True)
        d = x - mu
        var = (d * d).mean(1, keepdim=True)
        y = d * torch.rsqrt(var + self.eps)
        return y * self.weight.view(1, -1, 1, 1) + self.bias.view(1, -1, 1, 1)


class SimpleGate(nn.Module):
    """out[c] = x[c] * x[c + C/2]: C channels in, C/2 out (NAFNet). Stage kind simple_gate."""

    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        return a * b


def box_sums(x, dim, window):
    """Along dimension dim of x: the sum over indices i-(window-1)//2 .. i+window//2,
    clipped to the tensor, and how many indices that is (a 1-D tensor)."""
    n = x.shape[dim]
    shape = list(x.shape)
    shape[dim] = 1
    c = torch.cat([x.new_zeros(shape), torch.cumsum(x, dim)], dim)
    idx = torch.arange(n, device=x.device)
    lo = (idx - (window - 1) // 2).clamp(0, n)
    hi = (idx + window // 2 + 1).clamp(0, n)
    return c.index_select(dim, hi) - c.index_select(dim, lo), (hi - lo).to(x.dtype)


def local_box_mean(x, window):
    """x [N, C, H, W] -> per pixel and channel the mean of x over the window x window
    box around the pixel (rows y-(window-1)//2 .. y+window//2, the same for the
    columns), clipped to the image: the mean of the pixels inside. Computed in
    float64 with integral images, returned in x's dtype."""
    xd = x.double()
    s, count_w = box_sums(xd, 3, window)
    s, count_h = box_sums(s, 2, window)
    return (s / (count_h[:, None] * count_w[None, :])).to(x.dtype)


class LocalChannelAttention(nn.Module):
    """NAFNet's simplified channel attention, out = x * (conv1x1(pool(x))), with
    the pooling of its test-time local converter (TLC): in training, on patches
    the window covers, the global average over the patch; otherwise (eval mode,
    and so at export, or a training patch larger than the window) the mean over
    the window x window box around each pixel, clipped to the image. Stage kind
    channel_attention with weight = conv.weight[:, :, 0, 0], bias = conv.bias,
    window = `window` (in pixels of the tensor it runs on)."""

    def __init__(self, channels, window):
        super().__init__()
        if not 1 <= int(window) <= 1024:
            raise ValueError(f"LocalChannelAttention: window {window} is not in 1..1024")
        self.window = int(window)
        self.conv = nn.Conv2d(channels, channels, 1, bias=True)

    def forward(self, x):
        if self.training and x.shape[-2] <= self.window and x.shape[-1] <= self.window:
            m = x.mean((2, 3), keepdim=True)
        else:
            m = local_box_mean(x, self.window)
        return x * self.conv(m)
