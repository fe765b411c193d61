// Helpers of the image tests (tests/test_image_io.cpp, tests/test_metadata.cpp):
// random and smooth images, exact comparison, file bytes, PNG chunks, and
// the EXIF orientations built from flips and a transpose.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "image/image_io.h"

namespace imr::test {

using imr::Codec;
using imr::Image;
namespace fs = std::filesystem;

// The codecs this build has: every test runs with each.
inline std::vector<Codec> build_codecs() {
    std::vector<Codec> out = {Codec::Auto, Codec::Stb};
    if (imr::opencv_available()) out.push_back(Codec::OpenCV);
    return out;
}

inline Image random_image(std::mt19937& rng, int w, int h, int channels, int depth) {
    Image img;
    img.width = w, img.height = h, img.channels = channels, img.bit_depth = depth;
    img.allocate();
    std::uniform_int_distribution<int> dist(0, img.max_value());
    for (size_t i = 0; i < img.sample_count(); ++i) img.set_sample(i, uint16_t(dist(rng)));
    return img;
}

// Smooth gradients plus a little noise: what lossy codecs are made for.
inline Image smooth_image(std::mt19937& rng, int w, int h, int channels) {
    Image img;
    img.width = w, img.height = h, img.channels = channels, img.bit_depth = 8;
    img.allocate();
    std::uniform_int_distribution<int> noise(-4, 4);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < channels; ++c) {
                int v = 40 + (x * 150) / w + (y * 50) / h + c * 10 + noise(rng);
                img.set_sample((size_t(y) * w + x) * channels + c, uint16_t(std::clamp(v, 0, 255)));
            }
    return img;
}

inline ::testing::AssertionResult same_image(const Image& a, const Image& b) {
    if (a.width != b.width || a.height != b.height || a.channels != b.channels || a.bit_depth != b.bit_depth)
        return ::testing::AssertionFailure()
               << "shape " << a.width << "x" << a.height << "x" << a.channels << "@" << a.bit_depth << " vs " << b.width
               << "x" << b.height << "x" << b.channels << "@" << b.bit_depth;
    if (a.sample_count() != b.sample_count())
        return ::testing::AssertionFailure() << "sample counts " << a.sample_count() << " vs " << b.sample_count();
    for (size_t i = 0; i < a.sample_count(); ++i)
        if (a.sample(i) != b.sample(i)) {
            size_t px = i / size_t(a.channels);
            return ::testing::AssertionFailure()
                   << "first difference at x=" << px % size_t(a.width) << " y=" << px / size_t(a.width) << " channel "
                   << i % size_t(a.channels) << ": " << a.sample(i) << " vs " << b.sample(i);
        }
    return ::testing::AssertionSuccess();
}

inline std::vector<uint8_t> read_bytes(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

inline void write_bytes(const fs::path& p, const std::vector<uint8_t>& bytes) {
    std::ofstream f(p, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

inline uint32_t png_crc32(const uint8_t* p, size_t n) {
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; ++i) {
        crc ^= p[i];
        for (int k = 0; k < 8; ++k) crc = crc & 1 ? 0xEDB88320u ^ (crc >> 1) : crc >> 1;
    }
    return ~crc;
}

inline void put_be32(std::vector<uint8_t>& out, uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(uint8_t(v >> s));
}

inline std::vector<uint8_t> png_chunk(const char* type, const std::vector<uint8_t>& data) {
    std::vector<uint8_t> out;
    put_be32(out, uint32_t(data.size()));
    out.insert(out.end(), type, type + 4);
    out.insert(out.end(), data.begin(), data.end());
    put_be32(out, png_crc32(out.data() + 4, data.size() + 4));
    return out;
}

// Orientation transforms built from flips and a transpose (independent of
// the library's direct index formula).
inline Image transpose(const Image& a) {
    Image o = a;
    o.width = a.height, o.height = a.width;
    for (int y = 0; y < a.height; ++y)
        for (int x = 0; x < a.width; ++x)
            for (int c = 0; c < a.channels; ++c)
                o.set_sample((size_t(x) * o.width + y) * a.channels + c,
                             a.sample((size_t(y) * a.width + x) * a.channels + c));
    return o;
}
inline Image flip_h(const Image& a) {
    Image o = a;
    for (int y = 0; y < a.height; ++y)
        for (int x = 0; x < a.width; ++x)
            for (int c = 0; c < a.channels; ++c)
                o.set_sample((size_t(y) * a.width + x) * a.channels + c,
                             a.sample((size_t(y) * a.width + (a.width - 1 - x)) * a.channels + c));
    return o;
}
inline Image flip_v(const Image& a) {
    return transpose(flip_h(transpose(a)));
}
inline Image oriented(const Image& a, int orientation) {
    switch (orientation) {
        case 2:
            return flip_h(a);
        case 3:
            return flip_v(flip_h(a));
        case 4:
            return flip_v(a);
        case 5:
            return transpose(a);
        case 6:
            return flip_h(transpose(a));
        case 7:
            return flip_v(flip_h(transpose(a)));
        case 8:
            return flip_v(transpose(a));
        default:
            return a;
    }
}

}  // namespace imr::test
