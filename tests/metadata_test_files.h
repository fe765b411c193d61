// ICC profiles, EXIF blocks and the JPEG/PNG segments that hold them, built
// and read by hand for the metadata tests (tests/test_metadata.cpp,
// tests/test_cli.cpp): independent of app/image/metadata*.cpp and
// tiff_directory.cpp, which they check.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "image_test_files.h"

namespace imr::test {

using Bytes = std::vector<uint8_t>;

// A synthetic ICC profile of `size` bytes (at least 132) for color space
// `space` ("RGB " or "GRAY"): a version 4 display profile header (size,
// class, color space, PCS, 'acsp', D50), no tags, then a byte pattern, so a
// profile put together in the wrong order shows.
inline Bytes icc_profile(const char* space, size_t size) {
    Bytes p(size, 0);
    for (size_t i = 132; i < size; ++i) p[i] = uint8_t(i * 7 + i / 251);
    for (int k = 0; k < 4; ++k) p[size_t(k)] = uint8_t(size >> (24 - 8 * k));
    p[8] = 4, p[9] = 0x30;  // version 4.3
    std::memcpy(&p[12], "mntr", 4);
    std::memcpy(&p[16], space, 4);
    std::memcpy(&p[20], "XYZ ", 4);
    std::memcpy(&p[36], "acsp", 4);
    const uint8_t d50[12] = {0, 0, 0xF6, 0xD6, 0, 1, 0, 0, 0, 0, 0xD3, 0x2D};
    std::memcpy(&p[68], d50, 12);
    return p;
}

// What an EXIF block built by exif_block holds. IFD0: Make "TestMake",
// Orientation (when not 0), the EXIF directory; EXIF: ExposureTime 1/250,
// PixelXDimension (LONG, or SHORT), PixelYDimension (SHORT); IFD1 (a
// thumbnail's directory, Compression 6) when `thumbnail`.
struct ExifSpec {
    bool little_endian = false;
    int orientation = 0;
    uint32_t pixel_x = 640, pixel_y = 480;
    bool pixel_x_short = false;
    bool thumbnail = true;
};

inline Bytes exif_block(const ExifSpec& s) {
    Bytes b;
    const bool le = s.little_endian;
    auto u16 = [&](uint32_t v) { b.push_back(uint8_t(le ? v : v >> 8)), b.push_back(uint8_t(le ? v >> 8 : v)); };
    auto u32 = [&](uint32_t v) {
        for (int i = 0; i < 4; ++i) b.push_back(uint8_t(v >> (le ? 8 * i : 24 - 8 * i)));
    };
    auto set32 = [&](size_t at, uint32_t v) {
        for (int i = 0; i < 4; ++i) b[at + size_t(i)] = uint8_t(v >> (le ? 8 * i : 24 - 8 * i));
    };
    // An entry; returns where its value field is.
    auto entry = [&](uint32_t tag, uint32_t type, uint32_t count, uint32_t inline_short) {
        u16(tag), u16(type), u32(count);
        const size_t at = b.size();
        if (type == 3)
            u16(inline_short), u16(0);
        else
            u32(inline_short);
        return at;
    };
    b = le ? Bytes{'I', 'I', 42, 0} : Bytes{'M', 'M', 0, 42};
    u32(8);
    u16(s.orientation ? 3 : 2);
    const size_t make_at = entry(0x010F, 2, 9, 0);
    if (s.orientation) entry(0x0112, 3, 1, uint32_t(s.orientation));
    const size_t exif_at = entry(0x8769, 4, 1, 0);
    const size_t next_at = b.size();
    u32(0);
    set32(make_at, uint32_t(b.size()));
    for (char c : std::string("TestMake")) b.push_back(uint8_t(c));
    b.push_back(0), b.push_back(0);  // NUL, and a pad byte to an even offset
    set32(exif_at, uint32_t(b.size()));
    u16(3);
    const size_t exposure_at = entry(0x829A, 5, 1, 0);
    entry(0xA002, s.pixel_x_short ? 3 : 4, 1, s.pixel_x);
    entry(0xA003, 3, 1, s.pixel_y);
    u32(0);
    set32(exposure_at, uint32_t(b.size()));
    u32(1), u32(250);
    if (s.thumbnail) {
        set32(next_at, uint32_t(b.size()));
        u16(1);
        entry(0x0103, 3, 1, 6);
        u32(0);
    }
    return b;
}

// A tag of an EXIF block as text: a SHORT or LONG number, an ASCII string
// without its NUL, a RATIONAL "n/d"; in IFD0 (sub = 0) or in the directory
// IFD0's tag `sub` points to. "" when absent or unreadable.
inline std::string exif_tag(const Bytes& b, uint32_t tag, uint32_t sub = 0) {
    if (b.size() < 8 || (b[0] != 'I' && b[0] != 'M')) return "";
    const bool le = b[0] == 'I';
    auto u16 = [&](size_t at) { return at + 2 > b.size() ? 0u : le ? b[at] | b[at + 1] << 8 : b[at] << 8 | b[at + 1]; };
    auto u32 = [&](size_t at) -> uint32_t {
        if (at + 4 > b.size()) return 0;
        return le ? uint32_t(b[at]) | uint32_t(b[at + 1]) << 8 | uint32_t(b[at + 2]) << 16 | uint32_t(b[at + 3]) << 24
                  : uint32_t(b[at]) << 24 | uint32_t(b[at + 1]) << 16 | uint32_t(b[at + 2]) << 8 | uint32_t(b[at + 3]);
    };
    auto find = [&](size_t ifd, uint32_t wanted) -> size_t {
        const uint32_t n = u16(ifd);
        for (uint32_t i = 0; i < n; ++i)
            if (u16(ifd + 2 + 12 * i) == wanted) return ifd + 2 + 12 * i;
        return 0;
    };
    size_t ifd = u32(4);
    if (sub) {
        const size_t e = find(ifd, sub);
        if (!e) return "";
        ifd = u32(e + 8);
    }
    const size_t e = find(ifd, tag);
    if (!e) return "";
    const uint32_t type = u16(e + 2), count = u32(e + 4);
    if (type == 3) return std::to_string(u16(e + 8));
    if (type == 4) return std::to_string(u32(e + 8));
    if (type == 5) return std::to_string(u32(u32(e + 8))) + "/" + std::to_string(u32(u32(e + 8) + 4));
    if (type == 2 && count >= 1) {
        const size_t at = count <= 4 ? e + 8 : u32(e + 8);
        if (at + count > b.size()) return "";
        return std::string(b.begin() + long(at), b.begin() + long(at + count - 1));
    }
    return "?";
}

// IFD0's next-directory pointer (the thumbnail's IFD1; 0: none).
inline uint32_t exif_next_directory(const Bytes& b) {
    const bool le = b[0] == 'I';
    auto u16 = [&](size_t at) { return le ? b[at] | b[at + 1] << 8 : b[at] << 8 | b[at + 1]; };
    auto u32 = [&](size_t at) {
        return le ? uint32_t(b[at]) | uint32_t(b[at + 1]) << 8 | uint32_t(b[at + 2]) << 16 | uint32_t(b[at + 3]) << 24
                  : uint32_t(b[at]) << 24 | uint32_t(b[at + 1]) << 16 | uint32_t(b[at + 2]) << 8 | uint32_t(b[at + 3]);
    };
    const size_t ifd = u32(4);
    return u32(ifd + 2 + 12 * size_t(u16(ifd)));
}

// A JPEG marker segment: FF marker, length, payload.
inline Bytes jpeg_segment(uint8_t marker, const Bytes& payload) {
    Bytes s(4 + payload.size());
    s[0] = 0xFF, s[1] = marker, s[2] = uint8_t((payload.size() + 2) >> 8), s[3] = uint8_t(payload.size() + 2);
    std::copy(payload.begin(), payload.end(), s.begin() + 4);
    return s;
}

inline Bytes app1_exif(const Bytes& exif) {
    Bytes payload = {'E', 'x', 'i', 'f', 0, 0};
    payload.insert(payload.end(), exif.begin(), exif.end());
    return jpeg_segment(0xE1, payload);
}

// The APP2 segments of `icc` in chunks of `chunk` bytes, numbered 1..count.
inline std::vector<Bytes> app2_icc(const Bytes& icc, size_t chunk = 65519) {
    std::vector<Bytes> out;
    const size_t count = (icc.size() + chunk - 1) / chunk;
    for (size_t i = 0; i < count; ++i) {
        Bytes payload = {'I', 'C', 'C', '_', 'P', 'R', 'O', 'F', 'I', 'L', 'E', 0, uint8_t(i + 1), uint8_t(count)};
        const size_t from = i * chunk, to = std::min(icc.size(), from + chunk);
        payload.insert(payload.end(), icc.begin() + long(from), icc.begin() + long(to));
        out.push_back(jpeg_segment(0xE2, payload));
    }
    return out;
}

// `jpeg` with `segments` right after its SOI marker, in the order given.
inline Bytes with_segments(Bytes jpeg, const std::vector<Bytes>& segments) {
    size_t at = 2;
    for (const Bytes& s : segments) {
        jpeg.insert(jpeg.begin() + long(at), s.begin(), s.end());
        at += s.size();
    }
    return jpeg;
}

// `png` with `chunks` right after its IHDR chunk.
inline Bytes with_chunks(Bytes png, const std::vector<Bytes>& chunks) {
    size_t at = 33;  // signature and IHDR
    for (const Bytes& c : chunks) {
        png.insert(png.begin() + long(at), c.begin(), c.end());
        at += c.size();
    }
    return png;
}

inline Bytes zlib(const Bytes& data) {
    uLongf size = compressBound(uLong(data.size()));
    Bytes out(size);
    if (compress2(out.data(), &size, data.data(), uLong(data.size()), 9) != Z_OK) return {};
    out.resize(size);
    return out;
}

// A PNG iCCP chunk of keyword "icc" and these zlib-compressed bytes.
inline Bytes iccp(const Bytes& compressed) {
    Bytes data = {'i', 'c', 'c', 0, 0};
    data.insert(data.end(), compressed.begin(), compressed.end());
    return png_chunk("iCCP", data);
}

// The markers of a JPEG's segments before its scan, in order ("E0 E1 E2 E2 DB ...").
inline std::string jpeg_markers(const Bytes& d) {
    std::string out;
    size_t pos = 2;
    while (pos + 4 <= d.size() && d[pos] == 0xFF && d[pos + 1] != 0xDA) {
        static const char* hex = "0123456789ABCDEF";
        out += std::string(out.empty() ? "" : " ") + hex[d[pos + 1] >> 4] + hex[d[pos + 1] & 15];
        pos += 2 + size_t(d[pos + 2] << 8 | d[pos + 3]);
    }
    return out;
}

// The chunk types of a PNG in order ("IHDR iCCP eXIf IDAT IEND"), "CRC!" in
// place of a chunk whose CRC is wrong.
inline std::string png_chunk_types(const Bytes& d) {
    std::string out;
    size_t pos = 8;
    while (pos + 12 <= d.size()) {
        const size_t n = size_t(d[pos]) << 24 | size_t(d[pos + 1]) << 16 | size_t(d[pos + 2]) << 8 | d[pos + 3];
        if (pos + 12 + n > d.size()) return out + " TRUNCATED";
        const uint32_t crc = uint32_t(d[pos + 8 + n]) << 24 | uint32_t(d[pos + 9 + n]) << 16 |
                             uint32_t(d[pos + 10 + n]) << 8 | d[pos + 11 + n];
        out += (out.empty() ? "" : " ") + (crc == png_crc32(&d[pos + 4], n + 4)
                                               ? std::string(d.begin() + long(pos + 4), d.begin() + long(pos + 8))
                                               : std::string("CRC!"));
        pos += 12 + n;
    }
    return out;
}

// The chunks of a WebP in order ("VP8X ICCP VP8  EXIF"), or why not.
inline std::string webp_chunk_types(const Bytes& d) {
    if (d.size() < 12 || std::memcmp(d.data(), "RIFF", 4) != 0) return "not RIFF";
    const size_t riff = size_t(d[4]) | size_t(d[5]) << 8 | size_t(d[6]) << 16 | size_t(d[7]) << 24;
    if (riff + 8 != d.size()) return "RIFF size " + std::to_string(riff) + " in a file of " + std::to_string(d.size());
    std::string out;
    size_t pos = 12;
    while (pos + 8 <= d.size()) {
        const size_t n =
            size_t(d[pos + 4]) | size_t(d[pos + 5]) << 8 | size_t(d[pos + 6]) << 16 | size_t(d[pos + 7]) << 24;
        out += (out.empty() ? "" : " ") + std::string(d.begin() + long(pos), d.begin() + long(pos + 4));
        pos += 8 + n + (n & 1);
    }
    return pos == d.size() ? out : out + " MISALIGNED";
}

}  // namespace imr::test
