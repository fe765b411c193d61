#include "image/jpeg_quality.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>

#include "image/image.h"

namespace imr {

namespace {

// The tables of the JPEG standard's Annex K, in natural (row-major) order,
// as libjpeg's jcparam.c holds them.
constexpr int kLuma[64] = {16, 11, 10, 16, 24,  40,  51,  61,  12, 12, 14, 19, 26,  58,  60,  55,
                           14, 13, 16, 24, 40,  57,  69,  56,  14, 17, 22, 29, 51,  87,  80,  62,
                           18, 22, 37, 56, 68,  109, 103, 77,  24, 35, 55, 64, 81,  104, 113, 92,
                           49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99};
constexpr int kChroma[64] = {17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99,
                             99, 99, 47, 66, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
                             99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99};
// The k-th value of a DQT table (zigzag order) is entry kNatural[k].
constexpr int kNatural[64] = {0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33, 40, 48,
                              41, 34, 27, 20, 13, 6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23,
                              30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63};

// jpeg_set_quality's scaling with force_baseline (entries 1..255).
int scaled(int base, int quality) {
    const int scale = quality < 50 ? 5000 / quality : 200 - quality * 2;
    return std::clamp((base * scale + 50) / 100, 1, 255);
}

using Table = std::array<int, 64>;

// Reads n bytes at an offset into out; false past the end.
using ReadAt = std::function<bool(size_t offset, size_t n, uint8_t* out)>;

std::optional<JpegQuality> from_reader(const ReadAt& read) {
    uint8_t b[4];
    if (!read(0, 3, b) || b[0] != 0xFF || b[1] != 0xD8 || b[2] != 0xFF) return std::nullopt;
    std::array<std::optional<Table>, 4> tables;
    size_t at = 2;
    for (int segments = 0; segments < 10000; ++segments) {
        if (!read(at, 2, b) || b[0] != 0xFF) break;
        const uint8_t marker = b[1];
        if (marker == 0xFF) {  // fill byte
            ++at;
            continue;
        }
        at += 2;
        if (marker == 0xD8 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;  // no length
        if (marker == 0xDA || marker == 0xD9) break;  // the first scan, or the end
        if (!read(at, 2, b)) break;
        const size_t length = size_t(b[0]) << 8 | b[1];
        if (length < 2) break;
        if (marker == 0xDB) {
            std::vector<uint8_t> s(length - 2);
            if (!read(at + 2, s.size(), s.data())) break;
            for (size_t p = 0; p < s.size();) {
                const int precision = s[p] >> 4, id = s[p] & 15;
                const size_t bytes = precision ? 128 : 64;
                if (id > 3 || p + 1 + bytes > s.size()) break;
                Table t;
                for (int k = 0; k < 64; ++k)
                    t[kNatural[k]] = precision ? s[p + 1 + 2 * k] << 8 | s[p + 2 + 2 * k] : s[p + 1 + k];
                tables[id] = t;
                p += 1 + bytes;
            }
        }
        at += length;
    }
    if (!tables[0]) return std::nullopt;
    JpegQuality best;
    double best_error = -1;
    const int entries = tables[1] ? 128 : 64;
    for (int q = 1; q <= 100; ++q) {
        double error = 0;
        for (int i = 0; i < 64; ++i) {
            error += std::abs((*tables[0])[i] - scaled(kLuma[i], q));
            if (tables[1]) error += std::abs((*tables[1])[i] - scaled(kChroma[i], q));
        }
        if (best_error < 0 || error < best_error) best_error = error, best.quality = q;
    }
    best.mismatch = best_error / entries;
    return best;
}

// estimate_jpeg_quality: the coefficients it reads (the first 9 after DC in
// zigzag order: large enough steps at every quality to be told from the
// pixels' rounding, and nonzero in most blocks of a photo), the most blocks
// it reads, and the fewest coefficients above half a step a step needs.
constexpr int kEstimatedCoefficients = 9;
constexpr size_t kMostBlocks = 20000;
constexpr size_t kFewestOnSteps = 20;

// The step the coefficients `values` are multiples of (1: none found).
int quantization_step(const std::vector<double>& values) {
    int step = 1;
    for (int q = 2; q <= 255; ++q) {
        // The pixels' rounding seen in a coefficient (0.6), and more for a
        // larger step (clipped blocks, the decoder's chroma): 0.04 q was the
        // best of 0.04, 0.1 (and 0.8 + 0.04 q) on a third of the held-out
        // photos (weights/README.md, "JPEG quality estimate").
        const double window = 0.6 + 0.04 * q;
        size_t large = 0, near = 0;
        for (double v : values) {
            if (std::abs(v) <= 0.5 * q) continue;  // zero or rounding: says nothing of q
            ++large;
            const double r = v / q;
            near += std::abs(r - std::round(r)) * q < window;
        }
        const double chance = std::min(1.0, 2 * window / q);  // near a multiple by chance
        if (large >= kFewestOnSteps && double(near) / double(large) > chance + 0.5 * (1 - chance)) step = q;
    }
    return step;
}

}  // namespace

std::optional<JpegQuality> estimate_jpeg_quality(const Image& image) {
    const int bw = image.width / 8, bh = image.height / 8;
    if (bw < 1 || bh < 1 || !image.has_samples()) return std::nullopt;
    // The orthonormal 8-point DCT-II basis.
    double basis[8][8];
    for (int u = 0; u < 8; ++u)
        for (int x = 0; x < 8; ++x)
            basis[u][x] = (u == 0 ? std::sqrt(0.125) : 0.5) * std::cos((2 * x + 1) * u * M_PI / 16);
    const int zigzag[kEstimatedCoefficients] = {1, 8, 16, 9, 2, 3, 10, 17, 24};  // natural order (row * 8 + column)
    const size_t blocks = size_t(bw) * size_t(bh), stride = std::max<size_t>(1, blocks / kMostBlocks);
    std::vector<std::vector<double>> values(kEstimatedCoefficients);
    const int color = image.color_channels(), ch = image.channels;
    const double scale = image.bit_depth == 16 ? 1.0 / 257 : 1.0;
    with_samples(image, [&](const auto* s) {
        double luma[8][8];
        for (size_t b = 0; b < blocks; b += stride) {
            const size_t by = b / size_t(bw), bx = b % size_t(bw);
            for (int y = 0; y < 8; ++y)
                for (int x = 0; x < 8; ++x) {
                    const auto* p = s + ((by * 8 + size_t(y)) * size_t(image.width) + bx * 8 + size_t(x)) * size_t(ch);
                    // JFIF's luma (the Y the encoder quantized), level-shifted.
                    const double v = color >= 3 ? 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2] : double(p[0]);
                    luma[y][x] = v * scale - 128;
                }
            for (int k = 0; k < kEstimatedCoefficients; ++k) {
                const int u = zigzag[k] / 8, v = zigzag[k] % 8;  // row (vertical) and column frequency
                double sum = 0;
                for (int y = 0; y < 8; ++y) {
                    double row = 0;
                    for (int x = 0; x < 8; ++x) row += basis[v][x] * luma[y][x];
                    sum += basis[u][y] * row;
                }
                values[size_t(k)].push_back(sum);
            }
        }
    });
    int steps[kEstimatedCoefficients];
    for (int k = 0; k < kEstimatedCoefficients; ++k) steps[k] = quantization_step(values[size_t(k)]);
    JpegQuality best;
    double best_error = -1;
    for (int q = 1; q <= 100; ++q) {
        double error = 0;
        for (int k = 0; k < kEstimatedCoefficients; ++k)
            error += std::abs(std::log(double(scaled(kLuma[zigzag[k]], q)) / steps[k]));
        if (best_error < 0 || error < best_error) best_error = error, best.quality = q;
    }
    best.mismatch = best_error / kEstimatedCoefficients;
    return best;
}

bool is_jpeg(const std::vector<uint8_t>& bytes) {
    return bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF;
}

bool is_jpeg_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::vector<uint8_t> head(3);
    return f.read(reinterpret_cast<char*>(head.data()), 3) && is_jpeg(head);
}

std::optional<JpegQuality> jpeg_quality(const std::vector<uint8_t>& bytes) {
    return from_reader([&](size_t offset, size_t n, uint8_t* out) {
        if (offset > bytes.size() || n > bytes.size() - offset) return false;
        std::copy(bytes.begin() + long(offset), bytes.begin() + long(offset + n), out);
        return true;
    });
}

std::optional<JpegQuality> jpeg_quality_of_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return std::nullopt;
    return from_reader([&](size_t offset, size_t n, uint8_t* out) {
        f.clear();
        f.seekg(std::streamoff(offset));
        return bool(f.read(reinterpret_cast<char*>(out), std::streamsize(n)));
    });
}

}  // namespace imr
