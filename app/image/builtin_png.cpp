// The built-in PNG encoder (8/16 bit, 1-4 channels): per-row adaptive filter
// + stb's zlib. The stb codec writes PNG with it because stb_image_write has
// no 16-bit and keeps the compression level in a global (see image_io.cpp).
#include <algorithm>
#include <array>
#include <cstdlib>

#include "error.h"
#include "image/codecs.h"

namespace imr::imageio {
namespace {

uint32_t crc32(const uint8_t* p, size_t n, uint32_t crc = 0) {
    static const auto table = [] {
        std::array<uint32_t, 256> t{};
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    crc = ~crc;
    for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

void put32(std::vector<uint8_t>& out, uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(uint8_t(v >> s));
}

void png_chunk(std::vector<uint8_t>& out, const char* type, const uint8_t* data, size_t n) {
    put32(out, uint32_t(n));
    size_t start = out.size();
    out.insert(out.end(), type, type + 4);
    out.insert(out.end(), data, data + n);
    put32(out, crc32(&out[start], n + 4));
}

int paeth(int a, int b, int c) {
    int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

}  // namespace

std::vector<uint8_t> encode_png_builtin(const std::string& path, const Image& img, int compression) {
    const int bytes = img.bit_depth / 8, bpp = img.channels * bytes;
    const size_t stride = size_t(img.width) * bpp, rows = size_t(img.height);
    if ((stride + 1) * rows > size_t(INT32_MAX)) throw Error(path + ": image too large for the stb PNG encoder");
    // Raw rows, big-endian samples.
    std::vector<uint8_t> raw(stride * rows);
    if (bytes == 1) {
        for (size_t i = 0; i < img.samples.size(); ++i) raw[i] = uint8_t(img.samples[i]);
    } else {
        for (size_t i = 0; i < img.samples.size(); ++i)
            raw[2 * i] = uint8_t(img.samples[i] >> 8), raw[2 * i + 1] = uint8_t(img.samples[i]);
    }
    std::vector<uint8_t> filtered((stride + 1) * rows);
    std::vector<uint8_t> zero(stride, 0), trial(stride);
    for (size_t y = 0; y < rows; ++y) {
        const uint8_t* cur = &raw[y * stride];
        const uint8_t* up = y ? &raw[(y - 1) * stride] : zero.data();
        uint8_t* dst = &filtered[y * (stride + 1)];
        // Level 0 stores rows unfiltered; otherwise the filter with the least
        // sum of absolute (signed) residuals, as libpng's heuristic.
        uint64_t best_cost = UINT64_MAX;
        for (int f = 0; f < (compression == 0 ? 1 : 5); ++f) {
            uint64_t cost = 0;
            for (size_t i = 0; i < stride; ++i) {
                int a = i >= size_t(bpp) ? cur[i - bpp] : 0, b = up[i], c = i >= size_t(bpp) ? up[i - bpp] : 0;
                int pred = f == 0 ? 0 : f == 1 ? a : f == 2 ? b : f == 3 ? (a + b) / 2 : paeth(a, b, c);
                uint8_t v = uint8_t(cur[i] - pred);
                trial[i] = v;
                cost += uint64_t(std::abs(int(int8_t(v))));
            }
            if (cost < best_cost) {
                best_cost = cost;
                dst[0] = uint8_t(f);
                std::copy(trial.begin(), trial.end(), dst + 1);
            }
        }
    }
    // stb's deflate: "quality" is the hash-chain length (minimum 5).
    int zlen = 0;
    const auto z = stb_zlib_compress(filtered.data(), int(filtered.size()), zlen, std::max(5, 2 * compression));
    if (!z) throw Error(path + ": PNG compression failed (out of memory)");
    static const uint8_t color_type[5] = {0, 0, 4, 2, 6};
    uint8_t ihdr[13];
    for (int i = 0; i < 4; ++i) ihdr[i] = uint8_t(uint32_t(img.width) >> (24 - 8 * i));
    for (int i = 0; i < 4; ++i) ihdr[4 + i] = uint8_t(uint32_t(img.height) >> (24 - 8 * i));
    ihdr[8] = uint8_t(img.bit_depth), ihdr[9] = color_type[img.channels], ihdr[10] = ihdr[11] = ihdr[12] = 0;
    std::vector<uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    out.reserve(size_t(zlen) + 64);
    png_chunk(out, "IHDR", ihdr, 13);
    png_chunk(out, "IDAT", z.get(), size_t(zlen));
    png_chunk(out, "IEND", nullptr, 0);
    return out;
}

}  // namespace imr::imageio
