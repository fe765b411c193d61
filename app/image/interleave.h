// The inner loops of image_batch.cpp: one run of pixels between interleaved
// uint16 samples and float planes (plane c at dst + c * pixels). AVX2 blocks
// of 8 pixels where the build targets it, the scalar loops otherwise and for
// the last pixels; both give bit-identical results.
//
// (channels, planes) is (1, 1), (2, 1), (3, 3) or (4, 3): the color channels
// come first, alpha (channels 2 and 4) last. quantize(x, max) below is
// x * max + 0.5 clamped to [0, max] with NaN -> 0, then truncated: round
// half up.
#pragma once

#include <cstddef>
#include <cstdint>

namespace imr {

// dst[c * pixels + i] = float(in[i * channels + c]) * scale for c < planes.
void samples_to_planes(const uint16_t* in, int channels, int planes, size_t pixels, float scale, float* dst);

// out[i * channels + c] = quantize(src[c * pixels + i], max) for c < planes;
// the alpha channel, if any, from alpha_src (same layout as out), or 0 when
// alpha_src is null (the caller fills it in).
void planes_to_samples(const float* src, int planes, size_t pixels, float max, int channels, const uint16_t* alpha_src,
                       uint16_t* out);

// Gray (channels 1 or 2) from three planes: out[i * channels] =
// quantize((clamp01(r) + clamp01(g) + clamp01(b)) * (1.0f / 3), max), where
// clamp01 clamps to [0, 1] with NaN -> 0; alpha as in planes_to_samples.
void rgb_planes_to_gray(const float* src, size_t pixels, float max, int channels, const uint16_t* alpha_src,
                        uint16_t* out);

// One plane into one channel of interleaved samples (the others untouched):
// out[i * channels + channel] = quantize(src[i], max). For an RGB image
// through a 1-channel model, whose items are its color channels.
void plane_to_channel(const float* src, size_t pixels, float max, int channels, int channel, uint16_t* out);

}  // namespace imr
