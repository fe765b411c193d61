// The image_planes op: what it computes, its arguments, their check and its
// float64 reference. Its kernels: kernels/cpu/image_planes.cpp,
// kernels/cuda/image_planes.cu. No model file names it: the runner places it
// at a pass's two ends when it is handed an image batch's own samples
// (ModelRunner::run_samples), so that an 8-bit photo crosses to a GPU as its
// one byte a sample (36 MB for 12 MP RGB) instead of as f32 planes (144 MB),
// and no CPU pass converts it either way. The CPU's conversions of whole
// images (app/image/image_batch.h, interleave.h) define the values; this op
// computes exactly those, bit for bit (the runner's tests compare the two).
#pragma once

#include <cstddef>
#include <vector>

#include "op_args.h"

namespace imr {

// A batch of images of one size as their interleaved samples, in a
// backend's memory: n images of h x w pixels back to back, each pixel
// `channels` samples (the color ones first; alpha last where channels is 2
// or 4), each a uint8_t (bit_depth 8) or uint16_t (16).
struct ImageSamples {
    void* data = nullptr;
    int n = 0, h = 0, w = 0, channels = 0;
    int bit_depth = 8;

    int color_channels() const { return channels == 2 || channels == 4 ? channels - 1 : channels; }
    int max_value() const { return bit_depth == 16 ? 65535 : 255; }
    size_t count() const { return size_t(n) * size_t(h) * size_t(w) * size_t(channels); }
    size_t bytes() const { return count() * (bit_depth == 16 ? 2 : 1); }
    std::string str() const;  // "2 images 7x5, 4 channels of 8 bits"
};

// How many model inputs (items) one image of `color` color channels becomes
// for a model of `model_channels` channels, as image_batch.h's
// items_per_image maps them: 1 where they are equal, 1 for gray through a
// 3-channel model (replicated to R = G = B), 3 for RGB through a 1-channel
// model (one item per color channel); 0 for any other pair.
int image_planes_items(int model_channels, int color);

// image_planes, with items = image_planes_items(planes.c, samples' color
// channels), s = samples, P = planes [s.n * items, C, H, W], H >= s.h,
// W >= s.w, max = s.max_value():
//   FromSamples (writes every element of planes):
//     P[i * items + k][c][y][x] = float(s[i][min(y, h-1)][min(x, w-1)][ch]) * (1.0f / max)
//     with ch = k where items is 3, 0 for gray through 3 channels, else c:
//     the rows and columns past the image repeat its last ones (the
//     padding to a model's size multiple).
//   ToSamples (writes the color samples of the images; alpha and nothing
//   else is touched): per color sample, v = P at the same place (y < h,
//   x < w), moved toward the model's input `input` (P's shape; what
//   FromSamples made) by the strength t: v = in + t * (v - in) for t
//   other than 0 and 1 (no fused multiply-add), in for t = 0, v itself for
//   t = 1; then the sample quantize(v) = trunc(clamp(v * max + 0.5, 0, max))
//   with NaN -> 0 (the product and the sum each rounded to f32). Gray
//   through a 3-channel model takes the mean of its three planes:
//   quantize((clamp01(r) + clamp01(g) + clamp01(b)) * (1.0f / 3)), each
//   blended first, clamp01 clamping to [0, 1] with NaN -> 0.
// Every step is one f32 operation in the order written, so every backend
// gives the CPU's image conversions' bits.
enum class PlanesDirection { FromSamples, ToSamples };
struct ImagePlanesArgs {
    PlanesDirection direction = PlanesDirection::FromSamples;
    ImageSamples samples;
    Tensor planes;  // f32 NCHW; FromSamples' output, ToSamples' input; must not overlap samples
    Tensor input;   // ToSamples with strength != 1: f32 NCHW of planes' shape; must not overlap samples
    float strength = 1;
};

// Throws imr::Error naming the op, the samples and the planes if the
// arguments cannot run (null data, non-positive sizes, a bit depth other
// than 8 or 16, a channel count other than 1-4, planes of another type or
// too small, channels that do not map, an input missing where the strength
// needs it, overlap). Every backend calls it first.
void check_args(const ImagePlanesArgs& a);

// FromSamples: the planes' values in float64, NCHW order (s / max exactly).
std::vector<double> reference_image_planes_from_samples(const ImagePlanesArgs& a);
// ToSamples: each written sample's value before rounding, clamp(v, 0, 1) *
// max in float64 (v blended in float64; NaN -> 0), in the samples' order
// (n, y, x, color channel); the op's sample must lie within 0.5 of it, up to
// the f32 rounding of the steps (the tests' bound).
std::vector<double> reference_image_planes_to_samples(const ImagePlanesArgs& a);

}  // namespace imr
