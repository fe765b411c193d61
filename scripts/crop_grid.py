"""The README's before/after pictures (scripts/before_after.py,
scripts/real_noise_crops.py): rows of crops side by side, each framed in
white, upscaled 2x with nearest neighbour so single pixels stay visible, a
title above and a label per row below. Needs numpy and PIL."""
import numpy as np
from PIL import Image, ImageDraw

LABEL_H = 22  # pixels per line of text


def framed_row(crops):
    """One row: the crops ([h, w, 3] uint8, all of one size) side by side, 4 px of white around each."""
    return np.concatenate([np.pad(c, ((4, 4), (4, 4), (0, 0)), constant_values=255) for c in crops], 1)


def save_grid(rows, title, labels, out):
    """The rows (framed_row's) one above the other at 2x, the title above, the labels below; saved to out."""
    grid = np.concatenate(rows, 0).repeat(2, 0).repeat(2, 1)
    canvas = Image.new("RGB", (grid.shape[1], grid.shape[0] + LABEL_H * (len(labels) + 1)), "white")
    canvas.paste(Image.fromarray(grid), (0, LABEL_H))
    draw = ImageDraw.Draw(canvas)
    draw.text((8, 4), title, fill="black")
    for i, text in enumerate(labels):
        draw.text((8, grid.shape[0] + LABEL_H * (i + 1) + 4), text, fill="black")
    canvas.save(out, optimize=True)
