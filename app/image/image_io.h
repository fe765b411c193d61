// Reading and writing image files. Two codecs sit behind one API: OpenCV
// (TIFF, WebP, EXIF orientation, 16-bit, libjpeg-turbo) when the build has it,
// and stb_image/stb_image_write (GIF first frames, TGA, composited PSD, and every
// format in a build without OpenCV). Codec::Auto picks per format the better one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "image/image.h"

namespace imr {

enum class Codec { Auto, OpenCV, Stb };
const char* codec_name(Codec codec);
Codec parse_codec(const std::string& name);  // "auto" | "opencv" | "stb"; throws imr::Error
bool opencv_available();

struct WriteOptions {
    int bit_depth = 0;        // 0: keep the image's; 8 or 16 (16 only where the format has it: PNG, TIFF)
    int jpeg_quality = 95;    // 1..100
    int webp_quality = 95;    // 1..100; above 100 is lossless with OpenCV
    int png_compression = 1;  // 0..9; 1 encodes ~30% faster than 3 for ~2% larger files (OpenCV/zlib, samples)
    bool overwrite = true;    // false: fail if the file appeared meanwhile (checked atomically by the link/rename)
    bool metadata = true;     // false (--strip): no ICC profile or EXIF in the file
};

// Lower-case extensions (with the dot) this build can read, e.g. ".png".
std::vector<std::string> readable_extensions();
bool is_readable_extension(const std::string& path);
// Throws imr::Error("PATH: what is wrong") when the format cannot be written.
void check_writable_format(const std::string& path, Codec codec);

// Throws imr::Error("PATH: why") unless an image with these channels and bit
// depth can be written to `path` with these options (format, depth, alpha),
// so a batch can be refused before any compute. write_image checks it too.
void check_can_write(const std::string& path, int channels, int bit_depth, const WriteOptions& options,
                     Codec codec = Codec::Auto);

// Throws imr::Error("PATH: what is wrong") for missing/unreadable/corrupt
// files, and before decoding for images over max_pixels pixels (0: the
// default, what this machine's memory allows, at most 2^28) or too large for
// the memory available. The image's metadata (ICC profile, EXIF) comes along
// in Image::metadata; what of it was malformed and dropped is added to
// `warnings` ("PATH: ICC profile dropped: why"), never an error.
Image read_image(const std::string& path, Codec codec = Codec::Auto, uint64_t max_pixels = 0,
                 std::vector<std::string>* warnings = nullptr);

// The whole file read_image decodes, with its checks (missing, a folder,
// unreadable, over 2 GiB): for a caller that keeps the bytes besides.
std::vector<uint8_t> read_image_file(const std::string& path);

// read_image of a file's bytes already in memory; `path` names them in
// messages and its extension hints the format (the bytes decide).
Image decode_image(const std::string& path, const std::vector<uint8_t>& data, Codec codec = Codec::Auto,
                   uint64_t max_pixels = 0, std::vector<std::string>* warnings = nullptr);

// The bytes write_image would write to `path` (format from its extension),
// with the same checks. The image's metadata goes in where the format holds
// it (JPEG, PNG, WebP, TIFF) unless options.metadata is false; what could not
// (over a format's limit, an ICC profile for another color space than the
// image's) is added to `warnings`. Formats without metadata drop it silently.
std::vector<uint8_t> encode_image(const std::string& path, const Image& image, const WriteOptions& options = {},
                                  Codec codec = Codec::Auto, std::vector<std::string>* warnings = nullptr);

// Writes atomically (app/util/atomic_file.h): the encoded bytes go to an
// unnamed O_TMPFILE in the target's directory that is linked into place once
// complete, or, where the file system has no O_TMPFILE, to a hidden temporary
// file renamed over `path`; a failure or a killed process never leaves a
// partial file (not fsync'ed: a power loss may). The format comes from the
// extension; metadata as in encode_image. Throws imr::Error("PATH: what").
void write_image(const std::string& path, const Image& image, const WriteOptions& options = {},
                 Codec codec = Codec::Auto, std::vector<std::string>* warnings = nullptr);

}  // namespace imr
