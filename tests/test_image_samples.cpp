// Image's samples in the type of its bit depth (app/image/image.h): 8-bit
// images hold one byte a sample from decode to encode, 16-bit ones two; the
// accessors refuse the other type; conversions to and from planes and the
// writer's depth change give what an independent reference computes here.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "error.h"
#include "image/image_batch.h"
#include "image/image_io.h"
#include "image_test_files.h"
#include "test_util.h"

namespace imr {
namespace {

using test::build_codecs;
using test::random_image;
using test::same_image;

// Odd sizes: no whole 8-pixel blocks of the AVX2 loops, rows of odd length.
const std::vector<std::pair<int, int>> kOddSizes = {{1, 1}, {7, 3}, {13, 5}, {37, 23}, {101, 3}};

TEST(ImageSamples, BytesFollowTheBitDepth) {
    for (auto [w, h] : kOddSizes)
        for (int channels = 1; channels <= 4; ++channels) {
            Image img;
            img.width = w, img.height = h, img.channels = channels, img.bit_depth = 8;
            img.allocate();
            const size_t n = size_t(w) * h * channels;
            EXPECT_EQ(img.sample_count(), n);
            EXPECT_EQ(img.byte_size(), n);
            EXPECT_NE(img.data<uint8_t>(), nullptr);
            EXPECT_THROW(img.data<uint16_t>(), Error);
            img.bit_depth = 16;
            EXPECT_THROW(img.data<uint16_t>(), Error) << "bit depth changed without allocate()";
            EXPECT_FALSE(img.consistent());
            img.allocate();
            EXPECT_EQ(img.byte_size(), 2 * n);
            EXPECT_NE(img.data<uint16_t>(), nullptr);
            EXPECT_THROW(img.data<uint8_t>(), Error);
            EXPECT_TRUE(img.consistent());
            img.release_samples();
            EXPECT_EQ(img.byte_size(), 0u);
        }
}

TEST(ImageSamples, OneSampleAtATimeChecksRangeAndIndex) {
    Image img;
    img.width = 3, img.height = 1, img.channels = 1, img.bit_depth = 8;
    img.allocate();
    img.set_sample(2, 255);
    EXPECT_EQ(img.data<uint8_t>()[2], 255);
    EXPECT_THROW(img.set_sample(0, 256), Error);
    EXPECT_THROW(img.set_sample(3, 1), Error);
    EXPECT_THROW(img.sample(3), Error);
    EXPECT_THROW(img.assign_samples({1, 2, 300}), Error);
    img.bit_depth = 16;
    img.assign_samples({1, 2, 300});
    EXPECT_EQ(img.data<uint16_t>()[2], 300);
}

TEST(ImageSamples, DecodedImagesHoldTheirDepthsType) {
    test::ScratchDir dir("samples");
    std::mt19937 rng(19);
    for (Codec codec : build_codecs())
        for (auto [w, h] : kOddSizes)
            for (int channels : {1, 3}) {
                SCOPED_TRACE(std::string(codec_name(codec)) + " " + std::to_string(w) + "x" + std::to_string(h) + "x" +
                             std::to_string(channels));
                const size_t n = size_t(w) * h * channels;
                for (int depth : {8, 16}) {
                    const Image img = random_image(rng, w, h, channels, depth);
                    const std::string png = dir / ("x" + std::to_string(depth) + ".png");
                    write_image(png, img, {}, codec);
                    const Image back = read_image(png, codec);
                    EXPECT_EQ(back.bit_depth, depth);
                    EXPECT_EQ(back.byte_size(), n * size_t(depth / 8));
                    EXPECT_TRUE(same_image(back, img));
                }
                const std::string jpg = dir / "x.jpg";
                write_image(jpg, random_image(rng, w, h, channels, 8), {}, codec);
                const Image back = read_image(jpg, codec);
                EXPECT_EQ(back.bit_depth, 8);
                EXPECT_EQ(back.byte_size(), size_t(w) * h * back.channels);  // stb may give gray back as RGB
                EXPECT_NE(back.data<uint8_t>(), nullptr);
            }
}

// 8 bits through planes and back: every value as it was, alpha too.
TEST(ImageSamples, EightBitsThroughPlanesComeBackTheSame) {
    std::mt19937 rng(8);
    for (auto [w, h] : kOddSizes)
        for (int channels = 1; channels <= 4; ++channels)
            for (int model : {1, 3}) {
                const Image img = random_image(rng, w, h, channels, 8);
                std::vector<float> planes(size_t(items_per_image(img, model)) * model * w * h);
                image_to_planes(img, model, planes.data());
                const Image back = planes_to_image(planes.data(), model, img);
                EXPECT_EQ(back.byte_size(), img.sample_count());
                EXPECT_TRUE(same_image(back, img)) << w << "x" << h << "x" << channels << ", model " << model;
            }
}

// The depth changes, computed here in double: 8 -> 16 is v * 65535 / 255
// (= v * 257) and 16 -> 8 is v * 255 / 65535 rounded half up, both through
// planes (planes_to_image with another depth) and through the writer
// (WriteOptions::bit_depth; PNG holds both).
uint16_t want_16(uint16_t v8) {
    return uint16_t(std::lround(v8 * 65535.0 / 255.0));
}
uint16_t want_8(uint16_t v16) {
    return uint16_t(std::floor(v16 * 255.0 / 65535.0 + 0.5));
}

TEST(ImageSamples, DepthChangesMatchAReference) {
    test::ScratchDir dir("depths");
    std::mt19937 rng(16);
    for (auto [w, h] : kOddSizes)
        for (int channels = 1; channels <= 4; ++channels) {
            SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h) + "x" + std::to_string(channels));
            const Image img8 = random_image(rng, w, h, channels, 8);
            const Image img16 = random_image(rng, w, h, channels, 16);
            // Through planes (a model of as many channels as the image has colors).
            const int model = img8.color_channels();
            std::vector<float> planes(size_t(model) * w * h);
            image_to_planes(img8, model, planes.data());
            const Image up = planes_to_image(planes.data(), model, img8, 16);
            image_to_planes(img16, model, planes.data());
            const Image down = planes_to_image(planes.data(), model, img16, 8);
            // Through the writer.
            WriteOptions to16, to8;
            to16.bit_depth = 16, to8.bit_depth = 8;
            write_image(dir / "up.png", img8, to16);
            write_image(dir / "down.png", img16, to8);
            const Image up_file = read_image(dir / "up.png"), down_file = read_image(dir / "down.png");
            for (const Image* got : {&up, &up_file}) {
                ASSERT_EQ(got->bit_depth, 16);
                ASSERT_EQ(got->byte_size(), 2 * img8.sample_count());
                for (size_t i = 0; i < img8.sample_count(); ++i)
                    ASSERT_EQ(got->data<uint16_t>()[i], want_16(img8.data<uint8_t>()[i])) << "sample " << i;
            }
            for (const Image* got : {&down, &down_file}) {
                ASSERT_EQ(got->bit_depth, 8);
                ASSERT_EQ(got->byte_size(), img16.sample_count());
                for (size_t i = 0; i < img16.sample_count(); ++i)
                    ASSERT_EQ(got->data<uint8_t>()[i], want_8(img16.data<uint16_t>()[i])) << "sample " << i;
            }
        }
}

// Every 16-bit value to 8 bits through planes and through the writer.
TEST(ImageSamples, Every16BitValueTo8Bits) {
    Image all;
    all.width = 65536, all.height = 1, all.channels = 1, all.bit_depth = 16;
    all.allocate();
    for (size_t v = 0; v < 65536; ++v) all.data<uint16_t>()[v] = uint16_t(v);
    std::vector<float> planes(65536);
    image_to_planes(all, 1, planes.data());
    const Image down = planes_to_image(planes.data(), 1, all, 8);
    WriteOptions to8;
    to8.bit_depth = 8;
    const Image down_file = decode_image("x.png", encode_image("x.png", all, to8));
    for (size_t v = 0; v < 65536; ++v) {
        ASSERT_EQ(down.data<uint8_t>()[v], want_8(uint16_t(v))) << "planes, value " << v;
        ASSERT_EQ(down_file.data<uint8_t>()[v], want_8(uint16_t(v))) << "writer, value " << v;
    }
}

}  // namespace
}  // namespace imr
