// image_to_planes / planes_to_image (app/image/image_batch.*) against plain
// loops written from their definitions, bit for bit: every layout, odd sizes
// (SIMD blocks plus a scalar tail, or only a tail), and model outputs full of
// values that rounding, clamping or fused arithmetic would get wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "error.h"
#include "image/image_batch.h"
#include "image/neutral_gray.h"
#include "image_test_files.h"

using imr::Image;
using imr::test::random_image;
using imr::test::same_image;

namespace {

// Whole 8-pixel blocks or not, and more than one of image_batch.cpp's runs.
const std::vector<std::pair<int, int>> kSizes = {{1, 1},  {7, 3},   {8, 1},    {9, 2},
                                                 {16, 1}, {33, 17}, {1001, 3}, {101, 53}};

std::string layout(const Image& img, int model) {
    return std::to_string(img.width) + "x" + std::to_string(img.height) + "x" + std::to_string(img.channels) + " " +
           std::to_string(img.bit_depth) + "-bit, model " + std::to_string(model);
}

// Plane p holds color channel p (gray: channel 0 in each of the model's planes).
std::vector<float> want_planes(const Image& img, int model) {
    const size_t n = size_t(img.width) * img.height;
    const int color = img.channels == 2 || img.channels == 4 ? img.channels - 1 : img.channels;
    const int planes = model == 3 ? 3 : color;
    const float scale = 1.0f / float(img.bit_depth == 16 ? 65535 : 255);
    std::vector<float> out;
    for (int p = 0; p < planes; ++p)
        for (size_t i = 0; i < n; ++i)
            out.push_back(float(img.sample(i * img.channels + (color == 1 ? 0 : p))) * scale);
    return out;
}

// x * max and + 0.5 each rounded to float, clamped to [0, max] with NaN ->
// 0, truncated: round half up.
uint16_t want_quantize(float x, float max) {
    const float scaled = x * max;
    const float v = scaled + 0.5f;
    if (std::isnan(v) || v <= 0.f) return 0;
    if (v >= max) return uint16_t(max);
    return uint16_t(std::trunc(v));
}

float want_clamp01(float v) {
    return std::isnan(v) ? 0.f : std::fmin(std::fmax(v, 0.f), 1.f);
}

uint16_t want_alpha(uint16_t a, int from, int to) {
    if (from == to) return a;
    return to == 16 ? uint16_t(a * 257) : uint16_t((a * 255u + 32767u) / 65535u);
}

Image want_image(const std::vector<float>& planes, int model, const Image& src, int bit_depth) {
    Image out = src;
    out.bit_depth = bit_depth ? bit_depth : src.bit_depth;
    out.allocate();  // in the new depth's sample type
    const float max = float(out.bit_depth == 16 ? 65535 : 255);
    const size_t n = size_t(src.width) * src.height;
    const int ch = src.channels;
    const bool alpha = ch == 2 || ch == 4;
    const int color = alpha ? ch - 1 : ch;
    for (size_t i = 0; i < n; ++i) {
        if (color == 1 && model == 3) {
            const float sum = want_clamp01(planes[i]) + want_clamp01(planes[n + i]) + want_clamp01(planes[2 * n + i]);
            out.set_sample(i * ch, want_quantize(sum * (1.0f / 3.0f), max));
        } else {
            for (int c = 0; c < color; ++c) out.set_sample(i * ch + c, want_quantize(planes[c * n + i], max));
        }
        if (alpha)
            out.set_sample(i * ch + ch - 1, want_alpha(src.sample(i * ch + ch - 1), src.bit_depth, out.bit_depth));
    }
    return out;
}

// Model output: ordinary values in and around [0, 1], and at random places
// NaN, infinities, signed zeros, huge and tiny values, exact sample values,
// and values at or one float step beside the rounding boundaries (k + 0.5) /
// max of both depths (where round-half-even or a lost + 0.5 shows).
std::vector<float> model_output(std::mt19937& rng, size_t count) {
    const float inf = std::numeric_limits<float>::infinity();
    const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                              -std::numeric_limits<float>::quiet_NaN(),
                              inf,
                              -inf,
                              0.f,
                              -0.f,
                              1.f,
                              -1.f,
                              1e30f,
                              -1e30f,
                              std::numeric_limits<float>::denorm_min(),
                              std::numeric_limits<float>::max(),
                              0.5f / 255,
                              0.5f / 65535,
                              254.5f / 255,
                              65534.5f / 65535};
    std::uniform_real_distribution<float> ordinary(-0.25f, 1.25f);
    std::uniform_int_distribution<int> kind(0, 9), special(0, int(std::size(specials)) - 1), coin(0, 1);
    std::uniform_int_distribution<int> k8(-1, 255), k16(-1, 65535);
    std::vector<float> out(count);
    for (float& v : out) {
        switch (kind(rng)) {
            case 0:
                v = specials[special(rng)];
                break;
            case 1:
            case 2:
                v = (float(k8(rng)) + 0.5f) / 255.f;
                break;
            case 3:
            case 4:
                v = (float(k16(rng)) + 0.5f) / 65535.f;
                break;
            case 5:
                v = float(k8(rng)) / 255.f;
                break;
            default:
                v = ordinary(rng);
        }
        if (kind(rng) == 0) v = std::nextafter(v, coin(rng) ? inf : -inf);
    }
    return out;
}

TEST(ImageBatchReference, ToPlanesMatchesPlainLoops) {
    const unsigned seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    const float poison = -12345.f;
    for (auto [w, h] : kSizes)
        for (int depth : {8, 16})
            for (int channels = 1; channels <= 4; ++channels)
                for (int model : {1, 3}) {
                    Image img = random_image(rng, w, h, channels, depth);
                    img.set_sample(0, img.max_value()), img.set_sample(img.sample_count() - 1, 0);
                    SCOPED_TRACE(layout(img, model));
                    const std::vector<float> want = want_planes(img, model);
                    ASSERT_EQ(want.size(), size_t(imr::items_per_image(img, model)) * model * w * h);
                    std::vector<float> got(want.size() + 64, poison);  // past the end: must stay poison
                    imr::image_to_planes(img, model, got.data());
                    for (size_t i = 0; i < got.size(); ++i) {
                        const float expected = i < want.size() ? want[i] : poison;
                        ASSERT_EQ(std::memcmp(&got[i], &expected, sizeof(float)), 0)
                            << "float " << i << ": " << got[i] << " vs " << expected;
                    }
                }
}

TEST(ImageBatchReference, FromPlanesMatchesPlainLoops) {
    const unsigned seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    for (auto [w, h] : kSizes)
        for (int depth : {8, 16})
            for (int channels = 1; channels <= 4; ++channels)
                for (int model : {1, 3})
                    for (int out_depth : {0, 8, 16}) {
                        const Image src = random_image(rng, w, h, channels, depth);
                        SCOPED_TRACE(layout(src, model) + " to depth " + std::to_string(out_depth));
                        const std::vector<float> planes =
                            model_output(rng, size_t(imr::items_per_image(src, model)) * model * w * h);
                        const Image want = want_image(planes, model, src, out_depth);
                        EXPECT_TRUE(same_image(imr::planes_to_image(planes.data(), model, src, out_depth), want));
                        if (out_depth == 0 || out_depth == depth) {  // the same, in the image's own samples
                            Image in_place = src;
                            imr::planes_into_image(planes.data(), model, in_place);
                            EXPECT_TRUE(same_image(in_place, want)) << "in place";
                        }
                    }
}

}  // namespace

// A gray photo stays gray (app/image/neutral_gray.h): is_neutral_rgb tells an
// RGB(A) image whose R, G and B agree everywhere, and make_neutral_rgb sets
// each pixel's three to their mean, rounded to nearest (checked against the
// mean in double), alpha untouched; gray images and color photos are not
// neutral, one differing sample anywhere (the last pixel included) is enough.
TEST(NeutralGray, DetectsGrayRgbAndMakesOutputsGray) {
    const unsigned seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    for (int depth : {8, 16})
        for (int channels : {1, 2, 3, 4})
            for (auto [w, h] : kSizes) {
                SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h) + "x" + std::to_string(channels) + " " +
                             std::to_string(depth) + "-bit");
                Image img = random_image(rng, w, h, channels, depth);
                const bool rgb = channels >= 3;
                // A random color image (two pixels at least differ, but a 1x1 may by chance be gray).
                const std::vector<uint16_t> before = img.samples_u16();
                bool gray_by_chance = rgb;
                for (size_t i = 0; rgb && i < size_t(w) * h; ++i)
                    gray_by_chance &= before[i * channels] == before[i * channels + 1] &&
                                      before[i * channels + 1] == before[i * channels + 2];
                EXPECT_EQ(imr::is_neutral_rgb(img), gray_by_chance);
                if (!rgb) {
                    EXPECT_THROW(imr::make_neutral_rgb(img), imr::Error);
                    continue;
                }
                imr::make_neutral_rgb(img);
                const std::vector<uint16_t> after = img.samples_u16();
                for (size_t i = 0; i < size_t(w) * h; ++i) {
                    const double mean =
                        (double(before[i * channels]) + before[i * channels + 1] + before[i * channels + 2]) / 3.0;
                    for (int c = 0; c < 3; ++c)
                        ASSERT_EQ(after[i * channels + c], uint16_t(std::floor(mean + 0.5))) << "pixel " << i;
                    if (channels == 4) ASSERT_EQ(after[i * channels + 3], before[i * channels + 3]) << "pixel " << i;
                }
                EXPECT_TRUE(imr::is_neutral_rgb(img));
                // One sample off, at the last pixel: no longer neutral.
                const size_t last = (size_t(w) * h - 1) * channels + 1;
                img.set_sample(last, uint16_t(after[last] == 0 ? 1 : after[last] - 1));
                EXPECT_FALSE(imr::is_neutral_rgb(img));
            }
}

// --keep-gray: auto keeps gray for the tasks that restore an image's own
// colors, not for a model of another task (a colorizer); on and off say so
// for any task; another mode is refused, naming the option.
TEST(NeutralGray, KeepGrayFollowsTheModelsTask) {
    for (const char* task : {"denoise", "deblock", "deblur", "photo", "sharpen"}) {
        EXPECT_TRUE(imr::keep_gray_wanted("auto", task)) << task;
        EXPECT_FALSE(imr::keep_gray_wanted("off", task)) << task;
    }
    EXPECT_FALSE(imr::keep_gray_wanted("auto", "colorize"));
    EXPECT_FALSE(imr::keep_gray_wanted("auto", ""));
    EXPECT_TRUE(imr::keep_gray_wanted("on", "colorize"));
    try {
        imr::keep_gray_wanted("yes", "denoise");
        ADD_FAILURE() << "--keep-gray yes was taken";
    } catch (const imr::Error& e) {
        EXPECT_NE(std::string(e.what()).find("--keep-gray yes"), std::string::npos) << e.what();
    }
}
