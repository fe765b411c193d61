// What is learnt from a file's bytes before any decoder sees them: the
// format (sniffed from magic bytes, never trusted from the extension), the
// structural and size checks that refuse truncated or corrupt files before a
// decoder allocates for them; and turning the decoded pixels upright per the
// EXIF orientation (which metadata.h reads).
// Private to app/image/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "image/formats.h"
#include "image/image_io.h"

namespace imr::imageio {

// Absurd-size guard: more samples than this is refused before decoding
// (2 GiB of 8-bit samples, 4 GiB of 16-bit ones).
constexpr uint64_t kMaxSamples = uint64_t(1) << 31;

// Big- and little-endian integers in file headers.
inline uint32_t be16(const uint8_t* p) {
    return uint32_t(p[0]) << 8 | p[1];
}
inline uint32_t be32(const uint8_t* p) {
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}
inline uint32_t le16(const uint8_t* p) {
    return uint32_t(p[1]) << 8 | p[0];
}
inline uint32_t le32(const uint8_t* p) {
    return uint32_t(p[3]) << 24 | uint32_t(p[2]) << 16 | uint32_t(p[1]) << 8 | p[0];
}

// The format named by the file's first bytes (Unknown: none; TGA has no magic).
Format sniff(const std::vector<uint8_t>& d);
// The first (up to) 4 bytes in hex, "89 50 4e 47", for error messages.
std::string first_bytes_hex(const std::vector<uint8_t>& d);

// What the structural checks found: size, PNG color type, or a problem.
struct Probe {
    int png_color_type = -1;
    uint64_t width = 0, height = 0, channels = 0;  // from the header, when parsed (0: unknown)
    std::string problem;                           // non-empty: the file is corrupt or truncated
};

// JPEG: marker structure, Huffman tables, SOF size, and an end-of-image
// marker after the scan. PNG: IHDR, IEND. (libwebp rejects truncated WebP
// files itself.)
Probe probe_jpeg(const std::vector<uint8_t>& d);
Probe probe_png(const std::vector<uint8_t>& d);

// Formats with little or no compression (BMP, TGA, PSD) and GIF (LZW gives
// at most ~2730 pixels per byte) cannot hold more pixels than their size
// allows: a header claiming more is corrupt or truncated, and is refused
// before the decoder allocates for it and reads zeros past the end.
// Returns "" when the size fits (or the format is not one of these).
std::string size_problem(Format f, const std::vector<uint8_t>& d, uint64_t w, uint64_t h);

// Throws imr::Error("PATH: ...") for an image without pixels or with more
// than kMaxSamples samples; every decoder calls it before allocating.
void check_dimensions(const std::string& path, uint64_t w, uint64_t h, uint64_t c);

// The declared size of any readable format, from our own parse of its header
// (JPEG and PNG: probe_jpeg/probe_png; the rest here), so every decode path,
// stb's and OpenCV's, is checked before any pixel is decoded. A header whose
// size cannot be read is a problem (the file is refused).
Probe probe_size(Format f, const std::vector<uint8_t>& d);

// Memory a restore takes per sample of the image, all stages together: the
// decoder's buffer and the decoded image (2 bytes at 16 bits; an 8-bit
// image takes 1, but the estimate keeps the larger), the float planes in and
// out, the output image and its encoding (4 + 2 + 4 + 4 + 2 bytes, rounded).
// The model's own activations are not counted: the runner tiles when they
// do not fit.
constexpr uint64_t kRunBytesPerSample = 16;
// The default pixel limit is what 4-channel images of kRunBytesPerSample fit
// in the available memory, between 16 MP and this cap (~270 MP: beyond the
// largest camera sensors; panoramas above it need --max-pixels).
constexpr uint64_t kMaxDefaultPixels = uint64_t(1) << 28;
uint64_t default_max_pixels();

// check_dimensions, then the pixel limit (w * h <= max_pixels) and the
// memory estimate (w * h * c * kRunBytesPerSample <= available memory):
// imr::Error naming the file, the size and the limit.
void check_pixel_limit(const std::string& path, uint64_t w, uint64_t h, uint64_t c, uint64_t max_pixels);

// Rotates/flips `img` in place per EXIF orientation 1..8.
void apply_orientation(Image& img, int orientation);

}  // namespace imr::imageio
