#!/usr/bin/env python3
"""The 12-megapixel photo that the models' 12 MP times are taken on
(scripts/bench_models_12mp.sh, the GPU calls' .carry/photo12mp.jpg): the
held-out plasma-cups photo of weights/data/build_dataset.py resized to
4000x3000 (Lanczos) and saved as a quality-95 JPEG. One recipe, so that
times taken here and on the GPU host are of the same pixels.

    /usr/bin/python3 scripts/make_photo12mp.py OUT.jpg
"""

import os
import sys

from PIL import Image

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "weights", "data", "heldout", "plasma-cups.png")

if len(sys.argv) != 2:
    sys.exit(__doc__.strip().splitlines()[-1].strip())
Image.open(SOURCE).convert("RGB").resize((4000, 3000), Image.LANCZOS).save(sys.argv[1], quality=95)
