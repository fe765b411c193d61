// The built-in PNM reader (P1-P6) and encoder (P5/P6), see codecs.h.
#include <cctype>

#include "error.h"
#include "image/codecs.h"
#include "image/probe.h"

namespace imr::imageio {

Image decode_pnm(const std::string& path, const std::vector<uint8_t>& d, bool check_only) {
    const size_t n = d.size();
    size_t pos = 2;
    auto fail = [&](const std::string& what) { return Error(path + ": cannot decode PNM: " + what); };
    auto skip_space = [&] {
        for (;;) {  // whitespace and comments
            while (pos < n && std::isspace(d[pos])) ++pos;
            if (pos < n && d[pos] == '#') {
                while (pos < n && d[pos] != '\n' && d[pos] != '\r') ++pos;
                continue;
            }
            return;
        }
    };
    auto number = [&](const char* what) -> uint64_t {
        skip_space();
        if (pos >= n || !std::isdigit(d[pos])) throw fail(std::string("bad or missing ") + what);
        uint64_t v = 0;
        while (pos < n && std::isdigit(d[pos]) && v < (uint64_t(1) << 40)) v = v * 10 + uint64_t(d[pos++] - '0');
        return v;
    };
    const char kind = char(d[1]);
    const bool bitmap = kind == '1' || kind == '4', binary = kind >= '4';
    const uint64_t w = number("width"), h = number("height"), maxval = bitmap ? 1 : number("maxval");
    const int c = kind == '3' || kind == '6' ? 3 : 1;
    if (maxval == 0 || maxval > 65535) throw fail("maxval " + std::to_string(maxval) + " is not 1..65535");
    check_dimensions(path, w, h, uint64_t(c));
    const size_t count = size_t(w * h * uint64_t(c));
    const size_t bytes = bitmap ? size_t((w + 7) / 8 * h) : count * (maxval > 255 ? 2 : 1);
    if (binary) {
        ++pos;  // the single whitespace byte after the header
        if (pos > n || n - pos < bytes)
            throw fail("truncated file (" + std::to_string(n > pos ? n - pos : 0) + " of " + std::to_string(bytes) +
                       " pixel bytes)");
    } else if (n - pos < count) {  // at least one character per sample
        throw fail("truncated file (fewer characters than samples)");
    }
    if (check_only) return {};
    Image img;
    img.width = int(w), img.height = int(h), img.channels = c, img.bit_depth = maxval > 255 ? 16 : 8;
    img.allocate();
    const uint32_t out_max = img.max_value();
    uint8_t* samples8 = img.bit_depth == 8 ? img.data<uint8_t>() : nullptr;  // maxval up to 255
    uint16_t* samples16 = img.bit_depth == 16 ? img.data<uint16_t>() : nullptr;
    auto store = [&](size_t i, uint64_t v) {
        if (v > maxval) throw fail("sample " + std::to_string(v) + " above maxval " + std::to_string(maxval));
        const uint64_t out = bitmap ? (v ? 0 : 255) : maxval == out_max ? v : (v * out_max + maxval / 2) / maxval;
        if (samples8)
            samples8[i] = uint8_t(out);
        else
            samples16[i] = uint16_t(out);
    };
    if (binary) {
        const uint8_t* p = &d[pos];
        if (bitmap) {
            const size_t row = size_t((w + 7) / 8);
            for (size_t y = 0; y < h; ++y)
                for (size_t x = 0; x < w; ++x) store(y * w + x, (p[y * row + x / 8] >> (7 - x % 8)) & 1);
        } else if (maxval > 255) {
            for (size_t i = 0; i < count; ++i) store(i, be16(p + 2 * i));
        } else {
            for (size_t i = 0; i < count; ++i) store(i, p[i]);
        }
    } else if (bitmap) {  // P1: single digits, separators optional
        for (size_t i = 0; i < count; ++i) {
            skip_space();
            if (pos >= n || (d[pos] != '0' && d[pos] != '1')) throw fail("bad or missing bit");
            store(i, uint64_t(d[pos++] - '0'));
        }
    } else {
        for (size_t i = 0; i < count; ++i) store(i, number("sample"));
    }
    return img;
}

std::vector<uint8_t> encode_pnm(const Image& img) {
    const std::string header = std::string(img.channels == 1 ? "P5" : "P6") + "\n" + std::to_string(img.width) + " " +
                               std::to_string(img.height) + "\n" + std::to_string(img.max_value()) + "\n";
    std::vector<uint8_t> out(header.begin(), header.end());
    const size_t start = out.size();
    const size_t count = img.sample_count();
    if (img.bit_depth == 8) {
        const uint8_t* samples = img.data<uint8_t>();
        out.insert(out.end(), samples, samples + count);
    } else {
        const uint16_t* samples = img.data<uint16_t>();
        out.resize(start + 2 * count);
        for (size_t i = 0; i < count; ++i)
            out[start + 2 * i] = uint8_t(samples[i] >> 8), out[start + 2 * i + 1] = uint8_t(samples[i]);
    }
    return out;
}

}  // namespace imr::imageio
