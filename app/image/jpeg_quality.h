// The quality a JPEG was saved at, read from its quantization tables (DQT):
// for models that take a JPEG quality when --jpeg-quality is not given.
// Each quality 1..100 gives libjpeg's (IJG's) standard tables scaled as
// jpeg_set_quality scales them; the estimate is the quality whose tables are
// nearest the file's (sum of absolute differences over the luma table and,
// if there is one, the chroma table). Exact for libjpeg, libjpeg-turbo,
// OpenCV, Pillow, ImageMagick and most cameras' "IJG" files; for encoders
// with their own tables (Photoshop, some phones) it is the IJG quality of
// about the same coarseness.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace imr {

struct JpegQuality {
    int quality = 0;      // 1..100
    double mismatch = 0;  // mean absolute difference per table entry (0: the IJG tables exactly)
};

// True when the bytes start as a JPEG does (FF D8 FF).
bool is_jpeg(const std::vector<uint8_t>& bytes);
bool is_jpeg_file(const std::string& path);

// From a JPEG's bytes (only the markers before its first scan are read);
// nullopt when they are not a JPEG or hold no quantization table.
std::optional<JpegQuality> jpeg_quality(const std::vector<uint8_t>& bytes);
// The same from a file, reading only its header (segments skipped by
// seeking): nullopt also when it cannot be read.
std::optional<JpegQuality> jpeg_quality_of_file(const std::string& path);

struct Image;

// The quality an image was JPEG-compressed at, estimated from its pixels,
// for an image that is no JPEG any more (a decoded JPEG saved as PNG, a
// screenshot of one): the luma of each 8x8 block on the grid from the top
// left corner, the 9 lowest-frequency DCT coefficients of each, and per
// coefficient the largest step q (2..255) whose multiples most of the
// coefficients larger than q/2 sit on (within 0.6 + q/25: the 8-bit
// rounding of the decoded pixels blurs them); then the IJG quality whose
// luma table is nearest those steps (sum of |log| ratios; mismatch: its mean).
// A coefficient with no such step counts as step 1, so an image never
// compressed, or resized since, reads as a high quality (~95-100): what a
// quality-aware model should leave nearly alone. Measured on the held-out
// photos: scripts/jpeg_quality_estimate_accuracy.sh. Up to ~20,000 blocks
// spread over the image are read. nullopt for an image under 8x8 pixels.
std::optional<JpegQuality> estimate_jpeg_quality(const Image& image);

}  // namespace imr
