// JPEG metadata: EXIF in an APP1 segment after "Exif\0\0", the ICC profile
// in APP2 segments after "ICC_PROFILE\0", a sequence number and a count, each
// holding a chunk of at most 65519 bytes (a segment's length field is 16 bits).
#include <algorithm>
#include <cstring>
#include <functional>

#include "image/metadata.h"
#include "image/probe.h"

namespace imr::imageio {
namespace {

constexpr uint8_t kApp0 = 0xE0, kApp1 = 0xE1, kApp2 = 0xE2;
constexpr char kExifId[] = "Exif\0\0";            // 6 bytes
constexpr char kIccId[] = "ICC_PROFILE\0";        // 12 bytes, then sequence number and count
constexpr size_t kMaxSegmentPayload = 65535 - 2;  // the length field counts itself
constexpr size_t kMaxIccChunk = kMaxSegmentPayload - 14;
constexpr size_t kMaxIccChunks = 255;  // the count is one byte

// One marker segment with a length, before the scan: [at, at + 2 + length).
struct Segment {
    uint8_t marker;
    size_t at, size;  // size: marker and length field included
    const uint8_t* payload;
    size_t payload_size;
};

bool is_exif(const Segment& s) {
    return s.marker == kApp1 && s.payload_size >= 6 && std::memcmp(s.payload, kExifId, 6) == 0;
}
bool is_icc(const Segment& s) {
    return s.marker == kApp2 && s.payload_size >= 12 && std::memcmp(s.payload, kIccId, 12) == 0;
}

// Calls `visit` for each segment from after SOI up to the first scan (or the
// first thing that is not a well-formed segment); returns where it stopped.
size_t for_each_segment(const Bytes& d, const std::function<void(const Segment&)>& visit) {
    size_t pos = 2;
    while (pos + 4 <= d.size() && d[pos] == 0xFF) {
        const uint8_t marker = d[pos + 1];
        if (marker == 0xFF) {  // fill byte
            ++pos;
            continue;
        }
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) {  // no length
            pos += 2;
            continue;
        }
        if (marker == 0xDA || marker == 0xD9) break;
        const size_t length = be16(&d[pos + 2]);
        if (length < 2 || pos + 2 + length > d.size()) break;
        visit({marker, pos, 2 + length, &d[pos + 4], length - 2});
        pos += 2 + length;
    }
    return pos;
}

void put_segment(Bytes& out, uint8_t marker, const char* id, size_t id_size, const uint8_t* data, size_t size,
                 const uint8_t* extra = nullptr, size_t extra_size = 0) {
    const size_t length = 2 + id_size + extra_size + size;
    out.insert(out.end(), {0xFF, marker, uint8_t(length >> 8), uint8_t(length)});
    out.insert(out.end(), id, id + id_size);
    if (extra) out.insert(out.end(), extra, extra + extra_size);
    out.insert(out.end(), data, data + size);
}

}  // namespace

void find_jpeg_metadata(const Bytes& file, ImageMetadata& found, Dropped& dropped) {
    if (file.size() < 4 || file[0] != 0xFF || file[1] != 0xD8) return;
    struct Chunk {
        int sequence, count;
        const uint8_t* data;
        size_t size;
    };
    std::vector<Chunk> chunks;
    bool have_exif = false, short_chunk = false, too_many = false;
    for_each_segment(file, [&](const Segment& s) {
        if (is_exif(s) && !have_exif) {
            found.exif.assign(s.payload + 6, s.payload + s.payload_size);
            have_exif = true;
        }
        if (!is_icc(s)) return;
        if (s.payload_size < 14) {
            short_chunk = true;
        } else if (chunks.size() == kMaxIccChunks) {
            too_many = true;
        } else {
            chunks.push_back({s.payload[12], s.payload[13], s.payload + 14, s.payload_size - 14});
        }
    });
    if (chunks.empty() && !short_chunk) return;
    // Chunks may come in any order, but every one of 1..count exactly once.
    std::string problem;
    const int count = chunks.empty() ? 0 : chunks.front().count;
    std::vector<const Chunk*> by_sequence(size_t(count), nullptr);
    if (short_chunk) problem = "an APP2 ICC_PROFILE segment is too short for its chunk header";
    if (too_many) problem = "more than 255 APP2 ICC_PROFILE segments";
    for (const Chunk& c : chunks) {
        if (!problem.empty()) break;
        if (c.count != count)
            problem = "its APP2 chunks disagree on their count (" + std::to_string(count) + " and " +
                      std::to_string(c.count) + ")";
        else if (c.sequence < 1 || c.sequence > count)
            problem = "APP2 chunk number " + std::to_string(c.sequence) + " of " + std::to_string(count);
        else if (by_sequence[size_t(c.sequence - 1)])
            problem = "APP2 chunk " + std::to_string(c.sequence) + " appears twice";
        else
            by_sequence[size_t(c.sequence - 1)] = &c;
    }
    if (problem.empty() && chunks.size() != size_t(count))
        problem = std::to_string(chunks.size()) + " of its " + std::to_string(count) + " APP2 chunks are there";
    if (!problem.empty()) {
        dropped.push_back("ICC profile dropped: " + problem);
        return;
    }
    for (const Chunk* c : by_sequence) found.icc.insert(found.icc.end(), c->data, c->data + c->size);
}

void embed_jpeg_metadata(Bytes& file, const Bytes& icc, const Bytes& exif, Dropped& dropped) {
    if (file.size() < 4 || file[0] != 0xFF || file[1] != 0xD8) {
        dropped.push_back("metadata not written: the encoded JPEG could not be parsed (no start-of-image marker)");
        return;
    }
    Bytes segments;
    if (!exif.empty()) {
        if (6 + exif.size() > kMaxSegmentPayload)
            dropped.push_back("EXIF not written: " + std::to_string(exif.size()) + " bytes, over the " +
                              std::to_string(kMaxSegmentPayload - 6) + " a JPEG APP1 segment holds");
        else
            put_segment(segments, kApp1, kExifId, 6, exif.data(), exif.size());
    }
    if (!icc.empty()) {
        const size_t count = (icc.size() + kMaxIccChunk - 1) / kMaxIccChunk;
        if (count > kMaxIccChunks) {
            dropped.push_back("ICC profile not written: " + std::to_string(icc.size()) + " bytes, over the " +
                              std::to_string(kMaxIccChunks * kMaxIccChunk) + " JPEG's APP2 chunks hold");
        } else {
            for (size_t i = 0; i < count; ++i) {
                const size_t from = i * kMaxIccChunk, size = std::min(kMaxIccChunk, icc.size() - from);
                const uint8_t numbers[2] = {uint8_t(i + 1), uint8_t(count)};
                put_segment(segments, kApp2, kIccId, 12, icc.data() + from, size, numbers, 2);
            }
        }
    }
    if (segments.empty()) return;
    // JFIF's APP0 must stay right after SOI; EXIF and ICC follow it. Any
    // EXIF or ICC segments the encoder wrote give way to these.
    // Bytes between segments (fill bytes, markers without a length) are kept.
    Bytes out;
    out.reserve(file.size() + segments.size());
    bool inserted = false;
    size_t copied = 0;  // file[0, copied) is in `out`
    const size_t headers_end = for_each_segment(file, [&](const Segment& s) {
        if (!inserted && s.marker != kApp0) {
            out.insert(out.end(), file.begin() + long(copied), file.begin() + long(s.at));
            copied = s.at;
            out.insert(out.end(), segments.begin(), segments.end());
            inserted = true;
        }
        if (!is_exif(s) && !is_icc(s)) return;
        out.insert(out.end(), file.begin() + long(copied), file.begin() + long(s.at));
        copied = s.at + s.size;
    });
    if (!inserted) {  // only APP0 before the scan
        out.insert(out.end(), file.begin() + long(copied), file.begin() + long(headers_end));
        copied = headers_end;
        out.insert(out.end(), segments.begin(), segments.end());
    }
    out.insert(out.end(), file.begin() + long(copied), file.end());
    file.swap(out);
}

}  // namespace imr::imageio
