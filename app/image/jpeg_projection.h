// JPEG consistency: a restored JPEG moved back into the set of images that
// the file could have come from.
//
// A JPEG stores, per 8x8 block of each component (JFIF YCbCr, level-shifted
// by 128; chroma averaged over the sampling ratio's box, as libjpeg's encoder
// does), the DCT coefficients F divided by the quantization step q and
// rounded: k = round(F / q). The photo before compression had every
// coefficient within [(k - 1/2) q, (k + 1/2) q]. That set is convex (a box in
// an orthonormal basis of the component planes, for subsampled chroma of
// their box averages), so clamping a restored image's coefficients to it is
// the projection onto it, which never moves an image farther from any
// member, the clean photo included (up to the encoder's own rounding). A
// deblocking model's output lies outside the set wherever it smoothed away
// real detail or invented some; the projection takes that back.
//
// Measured on the held-out photos with `deblock` (weights/README.md, "JPEG
// consistency"): +0.03 to +0.42 dB from quality 10 to 95, and fewer photos
// made worse than the JPEG itself (8 -> 2 at quality 95).
//
// Only for models that remove JPEG artifacts: an image with noise or blur
// besides is not in the set.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "image/image.h"

namespace imr {

// What the projection needs of a JPEG file: its quantized coefficients and
// tables as libjpeg reads them (jpeg_read_coefficients), in the file's own
// orientation.
struct JpegCoefficients {
    struct Component {
        int h = 1, v = 1;  // sampling factors
        int blocks_wide = 0, blocks_high = 0;
        std::array<uint16_t, 64> step{};  // quantization steps, natural (row-major) order
        // The quantized coefficients, 64 per block in natural order: each row of
        // blocks where the reader keeps it (blocks_high rows of blocks_wide
        // blocks; read_jpeg_coefficients), or else all of them in k, blocks row
        // by row (tests).
        std::vector<const int16_t*> block_rows;
        std::vector<int16_t> k;
        const int16_t* block(int bx, int by) const {
            return (block_rows.empty() ? &k[size_t(by) * blocks_wide * 64] : block_rows[size_t(by)]) + size_t(bx) * 64;
        }
    };
    int width = 0, height = 0;  // of the image as stored (before its EXIF orientation)
    int max_h = 1, max_v = 1;
    int orientation = 1;                // EXIF 1..8: how the decoded image was turned upright
    std::vector<Component> components;  // 1 (gray) or 3 (YCbCr)
    // What block_rows point into: libjpeg's decompressor, never called again
    // after reading (its error handler's return point is gone). A Component
    // copied out alone has rows that die with this.
    std::shared_ptr<const void> owner;
};

// From a JPEG's bytes. imr::Error naming `path` when they cannot be read, or
// the JPEG is not one the projection takes: only gray and YCbCr files (not
// CMYK, YCCK or RGB-coded ones), with whole-number sampling ratios. Builds
// without libjpeg throw too.
JpegCoefficients read_jpeg_coefficients(const std::string& path, const std::vector<uint8_t>& bytes);
bool jpeg_projection_available();  // whether this build reads coefficients (libjpeg)

// Whether --jpeg-projection MODE ("auto", "on" or "off") projects the
// outputs of a model of `task`: auto for "deblock", the one task whose ideal
// output lies in the file's set (a denoiser's would not: the file holds the
// noise too). imr::Error for "on" where the build cannot (no libjpeg), and
// for another mode.
bool jpeg_projection_wanted(const std::string& mode, const std::string& task);

// Moves `image` (8- or 16-bit gray for a gray JPEG, RGB for a YCbCr one, as
// decoded: turned upright by the file's EXIF orientation, which is followed
// by index, the image never turned back) onto the JPEG's set, in place.
// imr::Error, with the image untouched, when it does not fit the file or the
// coefficients do not fit their size. Floats inside; each sample rounded once.
void project_onto_jpeg(Image& image, const JpegCoefficients& jpeg);

}  // namespace imr
