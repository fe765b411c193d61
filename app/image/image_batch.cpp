// Image <-> NCHW planes: which planes an image becomes, gray replication,
// alpha. The per-pixel loops are in interleave.cpp.
#include "image/image_batch.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "error.h"
#include "image/interleave.h"
#include "ops/image_planes.h"

namespace imr {
namespace {

void check_image(const Image& image, const char* what) {
    if (!image.consistent())
        throw Error(std::string(what) + ": inconsistent image (" + std::to_string(image.width) + "x" +
                    std::to_string(image.height) + "x" + std::to_string(image.channels) + ", bit depth " +
                    std::to_string(image.bit_depth) + ", " + std::to_string(image.sample_count()) + " samples)");
}

// One sample from the source's depth (In's) to the output's (Out's): the
// rounding encode_image's depth change uses (app/image/image_io.cpp).
template <class Out, class In>
Out convert_depth(In v) {
    if constexpr (std::is_same_v<In, Out>)
        return v;
    else if constexpr (std::is_same_v<Out, uint8_t>)
        return Out((uint32_t(v) * 255u + 32767u) / 65535u);
    else
        return Out(v * 257u);
}

// planes_to_image's loops for one pair of sample types: alpha bypasses the
// model, copied in the main pass when the depth (so the type) is kept,
// converted in a pass of its own when it changes.
template <class In, class Out>
void planes_to_samples_of(const float* src, int model_channels, const Image& source, const In* in, Out* samples) {
    const size_t pixels = size_t(source.width) * size_t(source.height);
    const int ch = source.channels;
    const Out* alpha_src = nullptr;
    if constexpr (std::is_same_v<In, Out>) alpha_src = source.has_alpha() ? in : nullptr;
    // Gray through a 3-channel model: the mean of R, G, B, each clamped first
    // (the model's RGB output as an image, then made gray), as
    // weights/imrestore_model.py restore_uint8 does.
    if (model_channels == 3 && source.color_channels() == 1)
        rgb_planes_to_gray(src, pixels, ch, alpha_src, samples);
    else  // as in image_to_planes: one plane per color channel, in order
        planes_to_samples(src, source.color_channels(), pixels, ch, alpha_src, samples);
    if (source.has_alpha() && !alpha_src) {
        const int a = ch - 1;
        for (size_t i = 0; i < pixels; ++i) samples[i * ch + a] = convert_depth<Out>(in[i * ch + a]);
    }
}

}  // namespace

int items_per_image(const Image& image, int model_channels) {
    // The mapping the backends' image_planes op takes too (kernels/ops/image_planes.h).
    const int color = image.color_channels();
    if (const int items = image_planes_items(model_channels, color)) return items;
    throw Error("a model with " + std::to_string(model_channels) + " input channel(s) cannot take an image with " +
                std::to_string(color) + " color channel(s)");
}

void image_to_planes(const Image& image, int model_channels, float* dst) {
    check_image(image, "image_to_planes");
    items_per_image(image, model_channels);  // throws for a model this image cannot go through
    const size_t pixels = size_t(image.width) * size_t(image.height);
    const int color = image.color_channels();
    with_samples(image, [&](const auto* in) {
        if (model_channels == 3 && color == 1) {
            // Gray replicated to R = G = B, a run at a time, so the copies read
            // it from L1 rather than from memory.
            const size_t run = 4096;
            for (size_t begin = 0; begin < pixels; begin += run) {
                const size_t n = std::min(run, pixels - begin);
                samples_to_planes(in + begin * image.channels, image.channels, 1, n, dst + begin);
                std::memcpy(dst + pixels + begin, dst + begin, n * sizeof(float));
                std::memcpy(dst + 2 * pixels + begin, dst + begin, n * sizeof(float));
            }
            return;
        }
        // The color channels as planes, in order: for RGB through a 1-channel
        // model these are its three items, each one plane, back to back.
        samples_to_planes(in, image.channels, color, pixels, dst);
    });
}

Image planes_to_image(const float* src, int model_channels, const Image& source, int bit_depth) {
    check_image(source, "planes_to_image");
    if (bit_depth != 0 && bit_depth != 8 && bit_depth != 16)
        throw Error("planes_to_image: bit depth " + std::to_string(bit_depth) + " is not 0, 8 or 16");
    items_per_image(source, model_channels);
    Image out;
    out.width = source.width, out.height = source.height, out.channels = source.channels;
    out.bit_depth = bit_depth ? bit_depth : source.bit_depth;
    out.allocate();
    with_samples(source, [&](const auto* in) {
        with_samples(out, [&](auto* samples) { planes_to_samples_of(src, model_channels, source, in, samples); });
    });
    return out;
}

void planes_into_image(const float* src, int model_channels, Image& image) {
    check_image(image, "planes_into_image");
    items_per_image(image, model_channels);
    // In place: each block of pixels reads its alpha before it is stored,
    // and stores the same alpha back.
    with_samples(image, [&](auto* samples) { planes_to_samples_of(src, model_channels, image, samples, samples); });
}

void blend_toward_input(const float* in, float* out, size_t n, float strength) {
    if (strength == 1) return;
    if (strength == 0) return void(std::copy(in, in + n, out));
    for (size_t i = 0; i < n; ++i) out[i] = in[i] + strength * (out[i] - in[i]);
}

void image_rect_to_planes(const Image& image, int model_channels, int item, ImageRect rect, float* dst) {
    check_image(image, "image_rect_to_planes");
    const int items = items_per_image(image, model_channels);
    if (item < 0 || item >= items || rect.h < 1 || rect.w < 1 || rect.y < 0 || rect.x < 0)
        throw Error("image_rect_to_planes: item " + std::to_string(item) + " of " + std::to_string(items) +
                    ", rectangle " + std::to_string(rect.h) + "x" + std::to_string(rect.w) + " at " +
                    std::to_string(rect.y) + "," + std::to_string(rect.x));
    const int color = image.color_channels(), ch = image.channels;
    // Per row: the columns within the image converted by the same loops as
    // image_to_planes (so the same values), the rest repeat the last.
    const int first = std::min(rect.x, image.width - 1);
    const int inside = std::max(1, std::min(rect.w, image.width - first));
    std::vector<float> row(size_t(color) * inside);
    const size_t plane = size_t(rect.h) * rect.w;
    with_samples(image, [&](const auto* samples) {
        for (int y = 0; y < rect.h; ++y) {
            const int sy = std::min(rect.y + y, image.height - 1);
            samples_to_planes(samples + (size_t(sy) * image.width + first) * ch, ch, color, size_t(inside), row.data());
            for (int c = 0; c < model_channels; ++c) {
                // Gray through a 3-channel model: the gray plane for each; RGB
                // through a 1-channel model: the item's color; else plane c.
                const int from = color == 1 ? 0 : model_channels == 1 ? item : c;
                const float* src = row.data() + size_t(from) * inside;
                float* out = dst + c * plane + size_t(y) * rect.w;
                std::copy(src, src + inside, out);
                std::fill(out + inside, out + rect.w, src[inside - 1]);
            }
        }
    });
}

namespace {

// planes_rect_to_image's loops for one pair of sample types (alpha as in
// planes_to_samples_of: copied where the type is kept).
template <class In, class Out>
void planes_rect_to_samples(const float* src, int model_channels, int item, ImageRect rect, const Image& source,
                            const In* in_samples, Out* out_samples) {
    const int ch = source.channels, color = source.color_channels();
    constexpr bool copy_alpha = std::is_same_v<In, Out>;
    const size_t plane = size_t(rect.h) * rect.w;
    std::vector<float> row(size_t(model_channels) * rect.w);  // the row's planes, back to back
    for (int y = 0; y < rect.h; ++y) {
        const size_t at = (size_t(rect.y + y) * source.width + rect.x) * ch;
        const In* in = in_samples + at;
        Out* samples = out_samples + at;
        for (int c = 0; c < model_channels; ++c)
            std::copy(src + c * plane + size_t(y) * rect.w, src + c * plane + size_t(y + 1) * rect.w,
                      row.begin() + size_t(c) * rect.w);
        const Out* alpha_src = nullptr;
        if constexpr (copy_alpha) alpha_src = source.has_alpha() ? in : nullptr;
        if (model_channels == 3 && color == 1)
            rgb_planes_to_gray(row.data(), size_t(rect.w), ch, alpha_src, samples);
        else if (model_channels == 1 && color == 3)
            plane_to_channel(row.data(), size_t(rect.w), ch, item, samples);
        else
            planes_to_samples(row.data(), color, size_t(rect.w), ch, alpha_src, samples);
        // Alpha: once per pixel (by item 0 where the items are colors), in
        // the source's depth or converted.
        const bool alpha_now =
            source.has_alpha() && (item == 0) && (!copy_alpha || (model_channels == 1 && color == 3));
        if (alpha_now)
            for (int i = 0; i < rect.w; ++i)
                samples[size_t(i) * ch + ch - 1] = convert_depth<Out>(in[size_t(i) * ch + ch - 1]);
    }
}

}  // namespace

void planes_rect_to_image(const float* src, int model_channels, int item, ImageRect rect, const Image& source,
                          Image& out) {
    check_image(source, "planes_rect_to_image");
    const int items = items_per_image(source, model_channels);
    if (out.width != source.width || out.height != source.height || out.channels != source.channels ||
        !out.consistent())
        throw Error("planes_rect_to_image: the output image is not the source's size");
    if (item < 0 || item >= items || rect.h < 1 || rect.w < 1 || rect.y < 0 || rect.x < 0 ||
        rect.y + rect.h > source.height || rect.x + rect.w > source.width)
        throw Error("planes_rect_to_image: item " + std::to_string(item) + ", rectangle " + std::to_string(rect.h) +
                    "x" + std::to_string(rect.w) + " at " + std::to_string(rect.y) + "," + std::to_string(rect.x) +
                    " outside the image");
    with_samples(source, [&](const auto* in) {
        with_samples(
            out, [&](auto* samples) { planes_rect_to_samples(src, model_channels, item, rect, source, in, samples); });
    });
}

}  // namespace imr
