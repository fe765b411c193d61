// Image <-> NCHW planes. Per-image hot path: every function is a few plain
// loops over contiguous memory (one strided read or write per channel plane),
// which the compiler vectorizes.
#include "image_batch.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "backend.h"

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

// Which image channel feeds model channel `c` of item `item`.
int source_channel(const Image& image, int model_channels, int item, int c) {
    const int color = image.color_channels();
    if (model_channels == 3 && color == 1) return 0;  // gray replicated
    if (model_channels == 1 && color == 3) return item;  // one item per color channel
    return c;
}

// dst[i] = samples[i * stride + offset] * scale, for `pixels` pixels.
void deinterleave(const uint16_t* samples, int stride, size_t pixels, float scale, float* dst) {
    if (stride == 1) {
        for (size_t i = 0; i < pixels; ++i) dst[i] = float(samples[i]) * scale;
    } else {
        for (size_t i = 0; i < pixels; ++i) dst[i] = float(samples[i * stride]) * scale;
    }
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
    const bool replicate = model_channels == 3 && image.color_channels() == 1;
    for (int item = 0; item < items; ++item) {
        for (int c = 0; c < model_channels; ++c) {
            float* plane = dst + (size_t(item) * model_channels + c) * pixels;
            if (replicate && c > 0) {
                std::memcpy(plane, dst + size_t(item) * model_channels * pixels, pixels * sizeof(float));
                continue;
            }
            const int s = source_channel(image, model_channels, item, c);
            deinterleave(image.samples.data() + s, image.channels, pixels, scale, plane);
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
    const float max = float(out.max_value());

    if (model_channels == 3 && source.color_channels() == 1) {
        // Gray through an RGB model: the mean of R, G, B.
        const float *r = src, *g = src + pixels, *b = src + 2 * pixels;
        const float third = 1.0f / 3.0f;
        for (size_t i = 0; i < pixels; ++i) samples[i * ch] = quantize((r[i] + g[i] + b[i]) * third, max);
    } else {
        for (int item = 0; item < items; ++item) {
            for (int c = 0; c < model_channels; ++c) {
                const float* plane = src + (size_t(item) * model_channels + c) * pixels;
                uint16_t* o = samples + source_channel(source, model_channels, item, c);
                if (ch == 1) {
                    for (size_t i = 0; i < pixels; ++i) o[i] = quantize(plane[i], max);
                } else {
                    for (size_t i = 0; i < pixels; ++i) o[i * ch] = quantize(plane[i], max);
                }
            }
        }
    }
    if (source.has_alpha()) {
        // Alpha bypasses the model: copied, converted only if the depth changes.
        const int a = ch - 1;
        const uint16_t* in = source.samples.data();
        if (out.bit_depth == source.bit_depth) {
            for (size_t i = 0; i < pixels; ++i) samples[i * ch + a] = in[i * ch + a];
        } else {
            for (size_t i = 0; i < pixels; ++i)
                samples[i * ch + a] = convert_depth(in[i * ch + a], source.bit_depth, out.bit_depth);
        }
    }
    return out;
}

}  // namespace imr
