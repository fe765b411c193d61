// WebP metadata lives in the extended format only, which starts with a VP8X
// chunk (feature flags, the canvas size): the ICC profile in an ICCP chunk
// right after it, EXIF in an EXIF chunk after the image data, before XMP.
// Embedding turns a simple file (one VP8 or VP8L chunk) into an extended one.
#include <algorithm>
#include <cstring>

#include "image/metadata.h"
#include "image/probe.h"

namespace imr::imageio {
namespace {

constexpr uint8_t kIccFlag = 0x20, kAlphaFlag = 0x10, kExifFlag = 0x08, kXmpFlag = 0x04, kAnimationFlag = 0x02;

struct Chunk {
    const uint8_t* fourcc;
    const uint8_t* data;
    size_t size;  // of data, without the pad byte
    bool is(const char* name) const { return std::memcmp(fourcc, name, 4) == 0; }
};

// The chunks of a WebP file within its RIFF size, up to the first that does
// not fit; `complete`: they fill it.
std::vector<Chunk> chunks_of(const Bytes& d, bool& complete) {
    std::vector<Chunk> out;
    complete = false;
    if (d.size() < 12 || std::memcmp(d.data(), "RIFF", 4) != 0 || std::memcmp(&d[8], "WEBP", 4) != 0) return out;
    const size_t end = size_t(std::min<uint64_t>(d.size(), 8 + uint64_t(le32(&d[4]))));
    size_t pos = 12;
    while (pos + 8 <= end) {
        const uint64_t size = le32(&d[pos + 4]);
        if (pos + 8 + size > end) break;
        out.push_back({&d[pos], &d[pos + 8], size_t(size)});
        pos += size_t(8 + size + (size & 1));
    }
    complete = pos >= end && !out.empty();
    return out;
}

void put_chunk(Bytes& out, const char* fourcc, const uint8_t* data, size_t size) {
    out.insert(out.end(), fourcc, fourcc + 4);
    out.insert(out.end(), {uint8_t(size), uint8_t(size >> 8), uint8_t(size >> 16), uint8_t(size >> 24)});
    out.insert(out.end(), data, data + size);
    if (size & 1) out.push_back(0);
}

uint32_t le24(const uint8_t* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16;
}

// Whether the image data holds alpha, as a decoder would see it: the old
// VP8X's flag, an ALPH chunk (lossy + alpha), or the VP8L header's bit.
bool has_alpha(const std::vector<Chunk>& chunks) {
    for (const Chunk& c : chunks) {
        if (c.is("VP8X") && c.size >= 1 && (c.data[0] & kAlphaFlag)) return true;
        if (c.is("ALPH")) return true;
        if (c.is("VP8L") && c.size >= 5 && c.data[0] == 0x2f && (le32(c.data + 1) >> 28 & 1)) return true;
    }
    return false;
}

}  // namespace

void find_webp_metadata(const Bytes& file, ImageMetadata& found, Dropped&) {
    bool complete;
    const std::vector<Chunk> chunks = chunks_of(file, complete);
    if (chunks.empty() || !chunks.front().is("VP8X")) return;  // simple format: no metadata
    bool have_icc = false, have_exif = false;
    for (const Chunk& c : chunks) {
        if (c.is("ICCP") && !have_icc) found.icc.assign(c.data, c.data + c.size), have_icc = true;
        if (c.is("EXIF") && !have_exif) found.exif.assign(c.data, c.data + c.size), have_exif = true;
    }
}

void embed_webp_metadata(Bytes& file, const Bytes& icc, const Bytes& exif, Dropped& dropped) {
    bool complete;
    const std::vector<Chunk> chunks = chunks_of(file, complete);
    uint32_t width1 = 0, height1 = 0;  // canvas size minus one, as VP8X stores it
    uint8_t flags = 0;
    if (complete && chunks.front().is("VP8X") && chunks.front().size >= 10) {
        flags = chunks.front().data[0];
        width1 = le24(chunks.front().data + 4), height1 = le24(chunks.front().data + 7);
    } else if (complete) {
        const Probe size = probe_size(Format::Webp, file);  // the VP8 or VP8L frame
        if (size.width == 0 || size.height == 0) complete = false;
        width1 = uint32_t(size.width - 1), height1 = uint32_t(size.height - 1);
    }
    if (!complete) {
        dropped.push_back("metadata not written: the encoded WebP could not be parsed");
        return;
    }
    flags = uint8_t((flags & (kAnimationFlag | kXmpFlag)) | (has_alpha(chunks) ? kAlphaFlag : 0) |
                    (icc.empty() ? 0 : kIccFlag) | (exif.empty() ? 0 : kExifFlag));
    const uint8_t vp8x[10] = {flags,
                              0,
                              0,
                              0,
                              uint8_t(width1),
                              uint8_t(width1 >> 8),
                              uint8_t(width1 >> 16),
                              uint8_t(height1),
                              uint8_t(height1 >> 8),
                              uint8_t(height1 >> 16)};
    Bytes out = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'E', 'B', 'P'};
    out.reserve(file.size() + icc.size() + exif.size() + 64);
    put_chunk(out, "VP8X", vp8x, sizeof vp8x);
    if (!icc.empty()) put_chunk(out, "ICCP", icc.data(), icc.size());
    for (const Chunk& c : chunks)
        if (!c.is("VP8X") && !c.is("ICCP") && !c.is("EXIF") && !c.is("XMP "))
            put_chunk(out, reinterpret_cast<const char*>(c.fourcc), c.data, c.size);
    if (!exif.empty()) put_chunk(out, "EXIF", exif.data(), exif.size());
    for (const Chunk& c : chunks)
        if (c.is("XMP ")) put_chunk(out, "XMP ", c.data, c.size);
    if (out.size() - 8 > 0xFFFFFFFE) {
        dropped.push_back("metadata not written: the WebP would exceed 4 GiB");
        return;
    }
    const size_t riff = out.size() - 8;
    out[4] = uint8_t(riff), out[5] = uint8_t(riff >> 8), out[6] = uint8_t(riff >> 16), out[7] = uint8_t(riff >> 24);
    file.swap(out);
}

}  // namespace imr::imageio
