// Image <-> NCHW planes: which planes an image becomes, gray replication,
// alpha. The per-pixel loops are in interleave.cpp.
#include "image/image_batch.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "error.h"
#include "image/interleave.h"

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
    items_per_image(image, model_channels);  // throws for a model this image cannot go through
    const size_t pixels = size_t(image.width) * size_t(image.height);
    const int color = image.color_channels();
    const uint16_t* in = image.samples.data();
    const float scale = 1.0f / float(image.max_value());
    if (model_channels == 3 && color == 1) {
        // Gray replicated to R = G = B, a run at a time, so the copies read
        // it from L1 rather than from memory.
        const size_t run = 4096;
        for (size_t begin = 0; begin < pixels; begin += run) {
            const size_t n = std::min(run, pixels - begin);
            samples_to_planes(in + begin * image.channels, image.channels, 1, n, scale, dst + begin);
            std::memcpy(dst + pixels + begin, dst + begin, n * sizeof(float));
            std::memcpy(dst + 2 * pixels + begin, dst + begin, n * sizeof(float));
        }
        return;
    }
    // The color channels as planes, in order: for RGB through a 1-channel
    // model these are its three items, each one plane, back to back.
    samples_to_planes(in, image.channels, color, pixels, scale, dst);
}

Image planes_to_image(const float* src, int model_channels, const Image& source, int bit_depth) {
    check_image(source, "planes_to_image");
    if (bit_depth != 0 && bit_depth != 8 && bit_depth != 16)
        throw Error("planes_to_image: bit depth " + std::to_string(bit_depth) + " is not 0, 8 or 16");
    items_per_image(source, model_channels);
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
    const uint16_t* alpha_src = copy_alpha ? in : nullptr;
    // Gray through a 3-channel model: the mean of R, G, B, each clamped first
    // (the model's RGB output as an image, then made gray), as
    // weights/imrestore_model.py restore_uint8 does.
    if (model_channels == 3 && source.color_channels() == 1)
        rgb_planes_to_gray(src, pixels, max, ch, alpha_src, samples);
    else  // as in image_to_planes: one plane per color channel, in order
        planes_to_samples(src, source.color_channels(), pixels, max, ch, alpha_src, samples);
    if (source.has_alpha() && !copy_alpha) {
        const int a = ch - 1;
        for (size_t i = 0; i < pixels; ++i)
            samples[i * ch + a] = convert_depth(in[i * ch + a], source.bit_depth, out.bit_depth);
    }
    return out;
}

}  // namespace imr
