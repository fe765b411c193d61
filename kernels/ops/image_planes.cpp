// image_planes' argument check and float64 reference (image_planes.h).
#include "image_planes.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "error.h"

namespace imr {

std::string ImageSamples::str() const {
    return std::to_string(n) + " image(s) " + std::to_string(w) + "x" + std::to_string(h) + ", " +
           std::to_string(channels) + " channel(s) of " + std::to_string(bit_depth) + " bits";
}

int image_planes_items(int model_channels, int color) {
    if (model_channels == color) return 1;
    if (model_channels == 3 && color == 1) return 1;
    if (model_channels == 1 && color == 3) return 3;
    return 0;
}

void check_args(const ImagePlanesArgs& a) {
    const ImageSamples& s = a.samples;
    auto fail = [&](const std::string& what) {
        throw Error(std::string("image_planes ") +
                    (a.direction == PlanesDirection::FromSamples ? "from samples" : "to samples") + " (" + s.str() +
                    ", planes " + a.planes.str() + "): " + what);
    };
    if (!s.data) fail("null samples");
    if (s.n < 1 || s.h < 1 || s.w < 1) fail("sizes must be positive");
    if (s.channels < 1 || s.channels > 4) fail("an image has 1 to 4 channels");
    if (s.bit_depth != 8 && s.bit_depth != 16) fail("samples are of 8 or 16 bits");
    if (!a.planes) fail("null planes");
    expect_f32_nchw(a.planes, "planes", fail);
    const Shape& p = a.planes.shape;
    const int items = image_planes_items(p.c, s.color_channels());
    if (items == 0)
        fail("a model of " + std::to_string(p.c) + " channel(s) cannot take images of " +
             std::to_string(s.color_channels()) + " color channel(s)");
    if (p.n != s.n * items)
        fail("planes hold " + std::to_string(p.n) + " items, expected " + std::to_string(s.n * items));
    if (p.h < s.h || p.w < s.w) fail("planes smaller than the images");
    const auto overlap = [&](const Tensor& t) {
        const auto* b = static_cast<const unsigned char*>(s.data);
        const auto* tb = static_cast<const unsigned char*>(t.data);
        return tb < b + s.bytes() && b < tb + t.bytes();
    };
    if (overlap(a.planes)) fail("planes must not overlap the samples");
    if (a.direction == PlanesDirection::ToSamples && !std::isfinite(a.strength)) fail("the strength must be finite");
    if (a.direction == PlanesDirection::ToSamples && a.strength != 1) {
        if (!a.input) fail("a strength other than 1 needs the model's input");
        expect_f32_nchw(a.input, "input", fail);
        expect_tensor(a.input, "input", p, fail);
        if (overlap(a.input)) fail("input must not overlap the samples");
    }
}

namespace {

double sample_at(const ImageSamples& s, size_t i) {
    return s.bit_depth == 16 ? double(static_cast<const uint16_t*>(s.data)[i])
                             : double(static_cast<const uint8_t*>(s.data)[i]);
}

// Where item `item`'s channel `c` reads from in its image: (image, channel).
struct Source {
    int image, channel;
};
Source source_of(int item, int c, int items, int color) {
    return {item / items, items == 3 ? item % items : color == 1 ? 0 : c};
}

}  // namespace

std::vector<double> reference_image_planes_from_samples(const ImagePlanesArgs& a) {
    check_args(a);
    const ImageSamples& s = a.samples;
    const Shape& p = a.planes.shape;
    const int items = image_planes_items(p.c, s.color_channels());
    const double max = s.max_value();
    std::vector<double> out(p.count());
    for (int n = 0; n < p.n; ++n)
        for (int c = 0; c < p.c; ++c) {
            const Source src = source_of(n, c, items, s.color_channels());
            for (int y = 0; y < p.h; ++y)
                for (int x = 0; x < p.w; ++x) {
                    const size_t pixel = (size_t(src.image) * s.h + std::min(y, s.h - 1)) * s.w + std::min(x, s.w - 1);
                    out[((size_t(n) * p.c + c) * p.h + y) * p.w + x] =
                        sample_at(s, pixel * s.channels + src.channel) / max;
                }
        }
    return out;
}

std::vector<double> reference_image_planes_to_samples(const ImagePlanesArgs& a) {
    check_args(a);
    const ImageSamples& s = a.samples;
    const Shape& p = a.planes.shape;
    const int color = s.color_channels(), items = image_planes_items(p.c, color);
    const double max = s.max_value(), t = a.strength;
    const bool gray_of_rgb = p.c == 3 && color == 1;
    auto blended = [&](int n, int c, int y, int x) {
        const size_t i = ((size_t(n) * p.c + c) * p.h + y) * p.w + x;
        const double v = a.planes.as<const float>()[i];
        if (t == 1) return v;
        const double in = a.input.as<const float>()[i];
        return t == 0 ? in : in + t * (v - in);
    };
    auto clamp01 = [](double v) { return v > 0 ? (v < 1 ? v : 1.0) : 0.0; };  // NaN -> 0
    std::vector<double> out;
    out.reserve(size_t(s.n) * s.h * s.w * color);
    for (int i = 0; i < s.n; ++i)
        for (int y = 0; y < s.h; ++y)
            for (int x = 0; x < s.w; ++x)
                for (int ch = 0; ch < color; ++ch) {
                    double v;
                    if (gray_of_rgb)
                        v = (clamp01(blended(i, 0, y, x)) + clamp01(blended(i, 1, y, x)) +
                             clamp01(blended(i, 2, y, x))) /
                            3;
                    else if (items == 3)
                        v = clamp01(blended(i * 3 + ch, 0, y, x));
                    else
                        v = clamp01(blended(i, ch, y, x));
                    out.push_back(v * max);
                }
    return out;
}

}  // namespace imr
