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

}  // namespace imr
