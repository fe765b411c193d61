// Conversion between images and the NCHW fp32 planes the ops work on.
// Values map to [0, 1] (sample / max_value); back again with rounding to
// nearest and clamping. Alpha never goes through the model: it is copied from
// the source image to the result untouched.
#pragma once

#include "image/image_io.h"

namespace imr {

// How many model inputs (batch items) an image becomes for a model that takes
// `model_channels` channels:
//   model 3, image RGB(A): 1 item, RGB.
//   model 3, image gray:   1 item, gray replicated to R=G=B; the result is
//                          converted back to gray as the mean of R, G, B
//                          (each clamped to [0, 1] first).
//   model 1, image gray:   1 item.
//   model 1, image RGB(A): 3 items, one per color channel.
// Other model channel counts need an image with exactly that many color channels
// (else imr::Error naming the counts).
int items_per_image(const Image& image, int model_channels);

// Writes items_per_image() planes of model_channels x height x width floats
// at dst (contiguous NCHW).
void image_to_planes(const Image& image, int model_channels, float* dst);

// Inverse of image_to_planes: `src` holds the model output for `source`;
// returns an image of source's size, channels and alpha, with the given bit
// depth (0 = source's).
Image planes_to_image(const float* src, int model_channels, const Image& source, int bit_depth = 0);

}  // namespace imr
