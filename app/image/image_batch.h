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

// planes_to_image(src, model_channels, image) written into `image`'s own
// samples (its depth, channels and alpha kept): the same values, without a
// new image. A 12 MP photo's output is 36 MB that a fresh allocation maps and
// faults in page by page (~35 ms on one core here, more than the conversion).
void planes_into_image(const float* src, int model_channels, Image& image);

// --strength: out = in + strength * (out - in), the model's output moved
// back toward its input, in fp32 before the rounding to samples (0: the
// input itself, also where the output is not finite; 1: unchanged).
void blend_toward_input(const float* in, float* out, size_t n, float strength);

// The same conversions a rectangle at a time, for an image restored in tiles
// (app/pipeline/host_tiles.h) that never exists as whole planes. Item `item`
// (< items_per_image) of the rectangle, rows y..y+h, columns x..x+w.
struct ImageRect {
    int y = 0, x = 0, h = 0, w = 0;
};

// Writes model_channels x rect.h x rect.w floats at dst: what image_to_planes
// gives there, with rows and columns at or past the image's height and width
// repeating its last ones (the padding to a model's size multiple).
void image_rect_to_planes(const Image& image, int model_channels, int item, ImageRect rect, float* dst);

// Writes the model output `src` (model_channels x rect.h x rect.w, rect
// within the image) into `out` (source's size and channels, its own bit
// depth) as planes_to_image would, alpha from `source` included.
void planes_rect_to_image(const float* src, int model_channels, int item, ImageRect rect, const Image& source,
                          Image& out);

}  // namespace imr
