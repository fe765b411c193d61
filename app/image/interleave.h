// The inner loops of image_batch.cpp: one run of pixels between interleaved
// samples (uint8_t for 8-bit images, uint16_t for 16-bit: one overload each,
// the same template behind both) and float planes (plane c at dst + c *
// pixels). AVX2 blocks of 8 pixels where the build targets it, the scalar
// loops otherwise and for the last pixels; both give bit-identical results.
//
// (channels, planes) is (1, 1), (2, 1), (3, 3) or (4, 3): the color channels
// come first, alpha (channels 2 and 4) last. max is the sample type's largest
// value (255 or 65535, from the pointer's type, never passed), and
// quantize(x) below is x * max + 0.5 clamped to [0, max] with NaN -> 0, then
// truncated: round half up.
#pragma once

#include <cstddef>
#include <cstdint>

namespace imr {

// dst[c * pixels + i] = float(in[i * channels + c]) * (1.0f / max) for c < planes.
void samples_to_planes(const uint8_t* in, int channels, int planes, size_t pixels, float* dst);
void samples_to_planes(const uint16_t* in, int channels, int planes, size_t pixels, float* dst);

// out[i * channels + c] = quantize(src[c * pixels + i]) for c < planes;
// the alpha channel, if any, from alpha_src (same layout as out), or 0 when
// alpha_src is null (the caller fills it in).
void planes_to_samples(const float* src, int planes, size_t pixels, int channels, const uint8_t* alpha_src,
                       uint8_t* out);
void planes_to_samples(const float* src, int planes, size_t pixels, int channels, const uint16_t* alpha_src,
                       uint16_t* out);

// Gray (channels 1 or 2) from three planes: out[i * channels] =
// quantize((clamp01(r) + clamp01(g) + clamp01(b)) * (1.0f / 3)), where
// clamp01 clamps to [0, 1] with NaN -> 0; alpha as in planes_to_samples.
void rgb_planes_to_gray(const float* src, size_t pixels, int channels, const uint8_t* alpha_src, uint8_t* out);
void rgb_planes_to_gray(const float* src, size_t pixels, int channels, const uint16_t* alpha_src, uint16_t* out);

// One plane into one channel of interleaved samples (the others untouched):
// out[i * channels + channel] = quantize(src[i]). For an RGB image through a
// 1-channel model, whose items are its color channels.
void plane_to_channel(const float* src, size_t pixels, int channels, int channel, uint8_t* out);
void plane_to_channel(const float* src, size_t pixels, int channels, int channel, uint16_t* out);

}  // namespace imr
