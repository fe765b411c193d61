// PNG metadata: the ICC profile in an iCCP chunk (a keyword, a compression
// method byte and the zlib-compressed profile), EXIF in an eXIf chunk (the
// TIFF block itself). Both go right after IHDR: iCCP must come before PLTE
// and IDAT, eXIf before IDAT.
#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "image/metadata.h"
#include "image/probe.h"

namespace imr::imageio {
namespace {

constexpr uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
constexpr char kIccKeyword[] = "ICC Profile";

struct Chunk {
    size_t at, size;  // the whole chunk: length, type, data, CRC
    const uint8_t* type;
    const uint8_t* data;
    size_t data_size;
    bool is(const char* name) const { return std::memcmp(type, name, 4) == 0; }
    bool crc_ok() const {
        const uLong crc = crc32(crc32(0, nullptr, 0), type, uInt(4 + data_size));
        return crc == be32(data + data_size);
    }
};

// The chunks of a PNG, in order, up to IEND or the first that does not fit;
// `complete`: IEND was reached.
std::vector<Chunk> chunks_of(const Bytes& d, bool& complete) {
    std::vector<Chunk> out;
    complete = false;
    if (d.size() < 8 || std::memcmp(d.data(), kSignature, 8) != 0) return out;
    size_t pos = 8;
    while (pos + 12 <= d.size()) {
        const uint64_t size = be32(&d[pos]);
        if (size > 0x7FFFFFFF || pos + 12 + size > d.size()) break;
        out.push_back({pos, size_t(12 + size), &d[pos + 4], &d[pos + 8], size_t(size)});
        pos += size_t(12 + size);
        if (out.back().is("IEND")) {
            complete = true;
            break;
        }
    }
    return out;
}

void put_chunk(Bytes& out, const char* type, const uint8_t* data, size_t size) {
    const size_t at = out.size();
    out.insert(out.end(), {uint8_t(size >> 24), uint8_t(size >> 16), uint8_t(size >> 8), uint8_t(size)});
    out.insert(out.end(), type, type + 4);
    out.insert(out.end(), data, data + size);
    const uLong crc = crc32(crc32(0, nullptr, 0), &out[at + 4], uInt(4 + size));
    out.insert(out.end(), {uint8_t(crc >> 24), uint8_t(crc >> 16), uint8_t(crc >> 8), uint8_t(crc)});
}

// Inflates a zlib stream into `out`, at most kMaxMetadataBytes (a few bytes
// can claim gigabytes); "" or what was wrong.
std::string inflate_capped(const uint8_t* data, size_t size, Bytes& out) {
    z_stream z{};
    if (inflateInit(&z) != Z_OK) return "zlib could not start";
    z.next_in = const_cast<Bytef*>(data);
    z.avail_in = uInt(size);
    int rc = Z_OK;
    while (rc == Z_OK) {
        const size_t have = out.size();
        if (have > kMaxMetadataBytes) break;
        const size_t grow = std::min(std::max<size_t>(have, 1 << 16), kMaxMetadataBytes + 1 - have);
        out.resize(have + grow);
        z.next_out = &out[have];
        z.avail_out = uInt(grow);
        rc = inflate(&z, Z_NO_FLUSH);
        out.resize(out.size() - z.avail_out);
    }
    inflateEnd(&z);
    if (out.size() > kMaxMetadataBytes) return "it inflates to over " + std::to_string(kMaxMetadataBytes) + " bytes";
    if (rc != Z_STREAM_END) return "its zlib stream is corrupt or truncated";
    return "";
}

// The profile of an iCCP chunk's data: keyword (1-79 bytes), NUL, method 0, zlib stream.
std::string read_iccp(const Chunk& c, Bytes& icc) {
    const uint8_t* nul = static_cast<const uint8_t*>(std::memchr(c.data, 0, std::min<size_t>(c.data_size, 80)));
    if (!nul || nul == c.data) return "its iCCP chunk has no keyword";
    const size_t at = size_t(nul - c.data) + 1;
    if (at >= c.data_size || c.data[at] != 0) return "its iCCP chunk has an unknown compression method";
    return inflate_capped(c.data + at + 1, c.data_size - at - 1, icc);
}

}  // namespace

void find_png_metadata(const Bytes& file, ImageMetadata& found, Dropped& dropped) {
    bool complete;
    bool have_icc = false, have_exif = false;
    for (const Chunk& c : chunks_of(file, complete)) {
        if (c.is("iCCP") && !have_icc) {
            have_icc = true;
            std::string problem = c.crc_ok() ? read_iccp(c, found.icc) : "its iCCP chunk's CRC is wrong";
            if (!problem.empty()) {
                dropped.push_back("ICC profile dropped: " + problem);
                found.icc.clear();
            }
        }
        if (c.is("eXIf") && !have_exif) {
            have_exif = true;
            if (c.crc_ok())
                found.exif.assign(c.data, c.data + c.data_size);
            else
                dropped.push_back("EXIF dropped: its eXIf chunk's CRC is wrong");
        }
    }
}

void embed_png_metadata(Bytes& file, const Bytes& icc, const Bytes& exif, Dropped& dropped) {
    bool complete;
    const std::vector<Chunk> chunks = chunks_of(file, complete);
    if (!complete || !chunks.front().is("IHDR")) {
        dropped.push_back("metadata not written: the encoded PNG could not be parsed");
        return;
    }
    Bytes iccp;
    if (!icc.empty()) {
        uLongf packed = compressBound(uLong(icc.size()));
        iccp.assign(kIccKeyword, kIccKeyword + sizeof kIccKeyword);  // with its NUL
        iccp.push_back(0);                                           // compression method: zlib
        const size_t header = iccp.size();
        iccp.resize(header + packed);
        if (compress2(&iccp[header], &packed, icc.data(), uLong(icc.size()), Z_DEFAULT_COMPRESSION) != Z_OK) {
            dropped.push_back("ICC profile not written: zlib could not compress it");
            iccp.clear();
        } else {
            iccp.resize(header + packed);
        }
    }
    Bytes out(file.begin(), file.begin() + long(8 + chunks.front().size));  // signature and IHDR
    out.reserve(file.size() + iccp.size() + exif.size() + 24);
    if (!iccp.empty()) put_chunk(out, "iCCP", iccp.data(), iccp.size());
    if (!exif.empty()) put_chunk(out, "eXIf", exif.data(), exif.size());
    for (size_t i = 1; i < chunks.size(); ++i) {
        const Chunk& c = chunks[i];
        // An ICC profile replaces the encoder's color chunks (PNG allows no
        // sRGB next to iCCP; gAMA and cHRM would be ignored or contradict it).
        if (!iccp.empty() && (c.is("iCCP") || c.is("sRGB") || c.is("gAMA") || c.is("cHRM"))) continue;
        if (!exif.empty() && c.is("eXIf")) continue;
        out.insert(out.end(), file.begin() + long(c.at), file.begin() + long(c.at + c.size));
    }
    file.swap(out);
}

}  // namespace imr::imageio
