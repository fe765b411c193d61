"""What the two JPEG experiments of this folder share: the orthonormal 8x8
DCT, JFIF's luma, and libjpeg's (IJG) luma table at a quality."""

import numpy as np

_k = np.arange(8)
DCT = np.sqrt(2 / 8) * np.cos((2 * _k[None, :] + 1) * _k[:, None] * np.pi / 16)
DCT[0] /= np.sqrt(2)
LUMA = np.array([16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56,
                 14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
                 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99], float).reshape(8, 8)


def luma(rgb):
    """JFIF's Y of float RGB [H, W, 3] (0..255)."""
    return 0.299 * rgb[..., 0] + 0.587 * rgb[..., 1] + 0.114 * rgb[..., 2]


def blocks_dct(p):
    """The DCT of each 8x8 block of p [H, W] (H, W multiples of 8): [H/8, W/8, 8, 8]."""
    h, w = p.shape
    b = p.reshape(h // 8, 8, w // 8, 8).transpose(0, 2, 1, 3)
    return np.einsum("ij,abjk,lk->abil", DCT, b, DCT)


def blocks_idct(d):
    b = np.einsum("ji,abjk,kl->abil", DCT, d, DCT)
    return b.transpose(0, 2, 1, 3).reshape(d.shape[0] * 8, d.shape[1] * 8)


def ijg_luma(quality):
    """jpeg_set_quality's luma table (baseline: 1..255)."""
    s = 5000 / quality if quality < 50 else 200 - 2 * quality
    return np.clip(np.floor((LUMA * s + 50) / 100), 1, 255)
