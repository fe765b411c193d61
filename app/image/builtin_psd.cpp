// The built-in PSD reader: the composite (merged) image of a Photoshop file,
// RGB or grayscale, 8 or 16 bit, raw or PackBits-compressed, with its alpha
// when the file has one extra channel. It replaces stb_image's PSD loader,
// whose "white matte" removal casts out-of-range floats to integers
// (undefined behaviour on any PSD with semi-transparent dark pixels) and
// which turns a grayscale PSD into red. The size checks ran before
// (probe_size, size_problem): here every read is bounds-checked as well.
#include <algorithm>
#include <cmath>

#include "error.h"
#include "image/codecs.h"
#include "image/probe.h"

namespace imr::imageio {

Image decode_psd(const std::string& path, const std::vector<uint8_t>& d) {
    auto fail = [&](const std::string& what) { return Error(path + ": cannot decode PSD: " + what); };
    const size_t n = d.size();
    if (n < 26 || be16(&d[4]) != 1) throw fail("not a version-1 PSD file");
    const uint32_t channels = be16(&d[12]), height = be32(&d[14]), width = be32(&d[18]);
    const uint32_t depth = be16(&d[22]), mode = be16(&d[24]);
    if (depth != 8 && depth != 16) throw fail(std::to_string(depth) + "-bit channels (8 and 16 are read)");
    if (mode != 1 && mode != 3)
        throw fail("color mode " + std::to_string(mode) +
                   " (grayscale and RGB are read; not bitmap, indexed, CMYK, Lab)");
    const uint32_t color = mode == 3 ? 3 : 1;
    if (channels < color || channels > 56)
        throw fail(std::to_string(channels) + " channels for color mode " + std::to_string(mode));
    const uint32_t out_c = color + (channels > color ? 1 : 0);  // the first extra channel is the alpha
    check_dimensions(path, width, height, out_c);
    // Skip the color mode data, image resources and layer sections.
    size_t pos = 26;
    for (int section = 0; section < 3; ++section) {
        if (pos + 4 > n) throw fail("truncated file");
        const uint64_t len = be32(&d[pos]);
        if (len > n - pos - 4) throw fail("truncated file");
        pos += 4 + size_t(len);
    }
    if (pos + 2 > n) throw fail("truncated file");
    const uint32_t compression = be16(&d[pos]);
    pos += 2;
    if (compression > 1) throw fail("compression " + std::to_string(compression) + " (raw and PackBits are read)");

    const size_t bytes_per = depth / 8, row_bytes = size_t(width) * bytes_per;
    Image img;
    img.width = int(width), img.height = int(height), img.channels = int(out_c), img.bit_depth = int(depth);
    img.allocate();
    std::vector<uint8_t> row(row_bytes);
    // PackBits: a row count per (channel, row) of every channel first.
    const size_t rows_total = size_t(height) * channels;
    size_t counts_at = pos;
    if (compression == 1) {
        if (rows_total * 2 > n - pos) throw fail("truncated file");
        pos += rows_total * 2;
    }
    for (uint32_t c = 0; c < out_c; ++c) {
        for (uint32_t y = 0; y < height; ++y) {
            if (compression == 0) {
                if (row_bytes > n - pos) throw fail("truncated file");
                std::copy(&d[pos], &d[pos] + row_bytes, row.begin());
                pos += row_bytes;
            } else {
                const size_t packed = be16(&d[counts_at + 2 * (size_t(c) * height + y)]);
                if (packed > n - pos) throw fail("truncated file");
                size_t in = pos, out = 0;
                const size_t end = pos + packed;
                while (in < end && out < row_bytes) {
                    const int header = int8_t(d[in++]);
                    if (header >= 0) {  // header + 1 literal bytes
                        const size_t count = size_t(header) + 1;
                        if (count > end - in || count > row_bytes - out) throw fail("corrupt PackBits data");
                        std::copy(&d[in], &d[in] + count, row.begin() + long(out));
                        in += count, out += count;
                    } else if (header != -128) {  // one byte repeated 1 - header times
                        const size_t count = size_t(1 - header);
                        if (in >= end || count > row_bytes - out) throw fail("corrupt PackBits data");
                        std::fill(row.begin() + long(out), row.begin() + long(out + count), d[in++]);
                        out += count;
                    }
                }
                if (out != row_bytes) throw fail("corrupt PackBits data (short row)");
                pos = end;
            }
            const size_t at = size_t(y) * width * out_c + c;
            if (depth == 8) {
                uint8_t* dst = img.data<uint8_t>() + at;
                for (uint32_t x = 0; x < width; ++x) dst[size_t(x) * out_c] = row[x];
            } else {
                uint16_t* dst = img.data<uint16_t>() + at;
                for (uint32_t x = 0; x < width; ++x) dst[size_t(x) * out_c] = uint16_t(be16(&row[2 * size_t(x)]));
            }
        }
    }
    // A composite with transparency is stored matted against white:
    // c' = a * c + (1 - a) * max. Undo it where alpha is partial (clamped).
    if (out_c == color + 1) {
        const float max = float(img.max_value());
        with_samples(img, [&](auto* samples) {
            using T = sample_type<decltype(samples)>;
            for (size_t i = 0, pixels = size_t(width) * height; i < pixels; ++i) {
                T* p = samples + i * out_c;
                const float a = float(p[color]) / max;
                if (a <= 0.f || a >= 1.f) continue;
                for (uint32_t c = 0; c < color; ++c) {
                    const float v = std::nearbyint((float(p[c]) - (1.f - a) * max) / a);
                    p[c] = T(std::clamp(v, 0.f, max));
                }
            }
        });
    }
    return img;
}

}  // namespace imr::imageio
