// Image <-> NCHW planes. Per-image hot path: every function is a few plain
// loops over contiguous memory (one strided read or write per channel plane),
// which the compiler vectorizes.
#include "image/image_batch.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "error.h"

namespace imr {
namespace {

void check_image(const Image& image, const char* what) {
    if (image.channels < 1 || image.channels > 4 || image.width <= 0 || image.height <= 0 ||
        (image.bit_depth != 8 && image.bit_depth != 16) ||
        image.samples.size() != size_t(image.width) * size_t(image.height) * size_t(image.channels))
        throw Error(std::string(what) + ": inconsistent image (" + std::to_string(image.width) + "x" +
                    std::to_string(image.height) + "x" + std::to_string(image.channels) + ", bit depth " +
                    std::to_string(image.bit_depth) + ", " + std::to_string(image.samples.size()) + " samples)");
}

// Round to nearest, clamp to [0, max]; NaN -> 0. `v > 0 ? v : 0` is false for
// NaN and compiles to maxps, the second comparison to minps.
inline uint16_t quantize(float x, float max) {
    float v = x * max + 0.5f;
    v = v > 0.f ? v : 0.f;
    v = v < max ? v : max;
    return uint16_t(v);
}

uint16_t convert_depth(uint16_t v, int from, int to) {
    if (from == to) return v;
    return to == 8 ? uint16_t((uint32_t(v) * 255u + 32767u) / 65535u) : uint16_t(v * 257u);
}

// One pass over the interleaved image per item: CH image channels, MC planes
// read from image channels first..first+MC-1 (MC = 1 with first = the item
// for RGB through a gray model). Compile-time counts let the compiler unroll
// the channel loop and vectorize over pixels.
template <int CH, int MC>
void to_planes(const uint16_t* in, int first, size_t pixels, float scale, float* dst) {
    for (size_t i = 0; i < pixels; ++i)
        for (int c = 0; c < MC; ++c) dst[c * pixels + i] = float(in[i * CH + first + c]) * scale;
}

// Inverse of to_planes for one item; with COPY_ALPHA the last image channel
// is copied from `alpha_src` in the same pass (same bit depth only).
template <int CH, int MC, bool COPY_ALPHA>
void from_planes(const float* src, int first, size_t pixels, float max, const uint16_t* alpha_src, uint16_t* out) {
    for (size_t i = 0; i < pixels; ++i) {
        for (int c = 0; c < MC; ++c) out[i * CH + first + c] = quantize(src[c * pixels + i], max);
        if (COPY_ALPHA) out[i * CH + CH - 1] = alpha_src[i * CH + CH - 1];
    }
}

// [0, 1]; NaN -> 0 (as quantize).
inline float clamp01(float v) {
    v = v > 0.f ? v : 0.f;
    return v < 1.f ? v : 1.f;
}

// Gray image through a 3-channel model: the mean of R, G, B, each clamped
// first (the model's RGB output as an image, then made gray), as
// weights/imrestore_model.py restore_uint8 does.
template <int CH, bool COPY_ALPHA>
void from_rgb_mean(const float* src, size_t pixels, float max, const uint16_t* alpha_src, uint16_t* out) {
    const float* r = src;
    const float* g = src + pixels;
    const float* b = src + 2 * pixels;
    const float third = 1.0f / 3.0f;
    for (size_t i = 0; i < pixels; ++i) {
        out[i * CH] = quantize((clamp01(r[i]) + clamp01(g[i]) + clamp01(b[i])) * third, max);
        if (COPY_ALPHA) out[i * CH + CH - 1] = alpha_src[i * CH + CH - 1];
    }
}

template <int CH, int MC>
void from_planes_dispatch(bool copy_alpha, const float* src, int first, size_t pixels, float max,
                          const uint16_t* alpha_src, uint16_t* out) {
    if (copy_alpha)
        from_planes<CH, MC, true>(src, first, pixels, max, alpha_src, out);
    else
        from_planes<CH, MC, false>(src, first, pixels, max, alpha_src, out);
}

}  // namespace

int items_per_image(const Image& image, int model_channels) {
    const int color = image.color_channels();
    if (model_channels == 3 && (color == 3 || color == 1)) return 1;
    if (model_channels == 1 && (color == 1 || color == 3)) return color;
    if (model_channels >= 1 && color == model_channels) return 1;
    throw Error("a model with " + std::to_string(model_channels) + " input channel(s) cannot take an image with " +
                std::to_string(color) + " color channel(s)");
}

void image_to_planes(const Image& image, int model_channels, float* dst) {
    check_image(image, "image_to_planes");
    const int items = items_per_image(image, model_channels);
    const size_t pixels = size_t(image.width) * size_t(image.height);
    const float scale = 1.0f / float(image.max_value());
    const uint16_t* in = image.samples.data();
    const int ch = image.channels, color = image.color_channels();
    if (model_channels == 3 && color == 1) {  // gray replicated to R = G = B
        if (ch == 1)
            to_planes<1, 1>(in, 0, pixels, scale, dst);
        else
            to_planes<2, 1>(in, 0, pixels, scale, dst);
        std::memcpy(dst + pixels, dst, pixels * sizeof(float));
        std::memcpy(dst + 2 * pixels, dst, pixels * sizeof(float));
        return;
    }
    for (int item = 0; item < items; ++item) {
        float* out = dst + size_t(item) * size_t(model_channels) * pixels;
        const int first = model_channels == 1 ? item : 0;
        switch (ch * 8 + model_channels) {
            case 1 * 8 + 1:
                to_planes<1, 1>(in, first, pixels, scale, out);
                break;
            case 2 * 8 + 1:
                to_planes<2, 1>(in, first, pixels, scale, out);
                break;
            case 3 * 8 + 1:
                to_planes<3, 1>(in, first, pixels, scale, out);
                break;
            case 4 * 8 + 1:
                to_planes<4, 1>(in, first, pixels, scale, out);
                break;
            case 3 * 8 + 3:
                to_planes<3, 3>(in, first, pixels, scale, out);
                break;
            case 4 * 8 + 3:
                to_planes<4, 3>(in, first, pixels, scale, out);
                break;
            default:  // other model widths (items_per_image checked them): plain strided loops
                for (int c = 0; c < model_channels; ++c)
                    for (size_t i = 0; i < pixels; ++i) out[c * pixels + i] = float(in[i * ch + c]) * scale;
        }
    }
}

Image planes_to_image(const float* src, int model_channels, const Image& source, int bit_depth) {
    check_image(source, "planes_to_image");
    if (bit_depth != 0 && bit_depth != 8 && bit_depth != 16)
        throw Error("planes_to_image: bit depth " + std::to_string(bit_depth) + " is not 0, 8 or 16");
    const int items = items_per_image(source, model_channels);
    Image out;
    out.width = source.width, out.height = source.height, out.channels = source.channels;
    out.bit_depth = bit_depth ? bit_depth : source.bit_depth;
    const size_t pixels = size_t(out.width) * size_t(out.height);
    const int ch = out.channels;
    out.samples.resize(pixels * ch);
    uint16_t* samples = out.samples.data();
    const uint16_t* in = source.samples.data();
    const float max = float(out.max_value());
    // Alpha bypasses the model: copied in the main pass when the depth is kept,
    // converted in a pass of its own when it changes.
    const bool copy_alpha = source.has_alpha() && out.bit_depth == source.bit_depth;

    if (model_channels == 3 && source.color_channels() == 1) {
        if (ch == 1)
            from_rgb_mean<1, false>(src, pixels, max, in, samples);
        else if (copy_alpha)
            from_rgb_mean<2, true>(src, pixels, max, in, samples);
        else
            from_rgb_mean<2, false>(src, pixels, max, in, samples);
    } else {
        for (int item = 0; item < items; ++item) {
            const float* plane = src + size_t(item) * size_t(model_channels) * pixels;
            const int first = model_channels == 1 ? item : 0;
            const bool alpha_now = copy_alpha && item == 0;
            switch (ch * 8 + model_channels) {
                case 1 * 8 + 1:
                    from_planes_dispatch<1, 1>(false, plane, first, pixels, max, in, samples);
                    break;
                case 2 * 8 + 1:
                    from_planes_dispatch<2, 1>(alpha_now, plane, first, pixels, max, in, samples);
                    break;
                case 3 * 8 + 1:
                    from_planes_dispatch<3, 1>(false, plane, first, pixels, max, in, samples);
                    break;
                case 4 * 8 + 1:
                    from_planes_dispatch<4, 1>(alpha_now, plane, first, pixels, max, in, samples);
                    break;
                case 3 * 8 + 3:
                    from_planes_dispatch<3, 3>(false, plane, first, pixels, max, in, samples);
                    break;
                case 4 * 8 + 3:
                    from_planes_dispatch<4, 3>(alpha_now, plane, first, pixels, max, in, samples);
                    break;
                default:
                    for (int c = 0; c < model_channels; ++c)
                        for (size_t i = 0; i < pixels; ++i) samples[i * ch + c] = quantize(plane[c * pixels + i], max);
                    if (alpha_now)
                        for (size_t i = 0; i < pixels; ++i) samples[i * ch + ch - 1] = in[i * ch + ch - 1];
            }
        }
    }
    if (source.has_alpha() && !copy_alpha) {
        const int a = ch - 1;
        for (size_t i = 0; i < pixels; ++i)
            samples[i * ch + a] = convert_depth(in[i * ch + a], source.bit_depth, out.bit_depth);
    }
    return out;
}

}  // namespace imr
