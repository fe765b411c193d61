#!/usr/bin/env python3
"""Writes a model file's torch fp32 output for weights/check_input.png, the
expected output tests/test_torch_equality.cpp holds the C++ forward pass to
(tests/data/torch/NAME.f32, raw little-endian float32 NCHW), for a model
that has no training checkpoint to export it from (train.py writes it for
the ones it trains): a model soup (rewrite_model --average-with), say. The
network is bench/torch_models.py's ModelNet of the file, in fp32 on the CPU
(for a model that takes a noise level or JPEG quality: train.py's
CHECK_LEVELS).

    python3 weights/torch_expected_output.py weights/NAME.h5 tests/data/torch/NAME.f32
"""
import os
import sys

import numpy as np
import torch
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
import imrestore_model as im  # noqa: E402
import torch_models as tm  # noqa: E402

CHECK_LEVELS = {"noise_level": 25.0 / 255.0, "jpeg_quality": 0.5}  # train.py's, as the model's planes take them


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    model = im.read_model(sys.argv[1])
    levels = {k: CHECK_LEVELS[k] for k in model.get("extra_inputs") or []}
    net = tm.ModelNet(model, extra_values=levels).float().eval()
    img = np.asarray(Image.open(os.path.join(HERE, "check_input.png")).convert("RGB"))
    x = torch.from_numpy(img.astype(np.float32) / 255.0).permute(2, 0, 1).unsqueeze(0)
    with torch.no_grad():
        y = net(x).float().contiguous().numpy()
    y.astype("<f4").tofile(sys.argv[2])
    print(f"wrote {sys.argv[2]} ({list(y.shape)} float32, torch fp32 output of {sys.argv[1]} for check_input.png)")


if __name__ == "__main__":
    main()
