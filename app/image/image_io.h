// Reading and writing image files. Two codecs sit behind one API: OpenCV
// (TIFF, WebP, EXIF orientation, 16-bit, libjpeg-turbo) when the build has it,
// and stb_image/stb_image_write (GIF first frames, TGA, composited PSD, and every
// format in a build without OpenCV). Codec::Auto picks per format the better one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace imr {

// What a photo carries besides its pixels: kept from the file it was read
// from (JPEG, PNG, WebP, TIFF) and written into outputs whose format holds it
// (app/image/metadata.h says where and what is dropped).
struct ImageMetadata {
    std::vector<uint8_t> icc;   // the ICC profile, whole; empty: none (sRGB is assumed)
    std::vector<uint8_t> exif;  // EXIF as a TIFF-structured block ("II*\0" or "MM\0*", no "Exif\0\0" prefix),
                                // its Orientation reset to 1 once the pixels were turned upright
    bool empty() const { return icc.empty() && exif.empty(); }
};

// An image in memory: interleaved samples, row-major, top row first.
// channels: 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA (always RGB order, never BGR).
// Samples are 0..255 when bit_depth is 8 and 0..65535 when it is 16.
struct Image {
    int width = 0, height = 0, channels = 0;
    int bit_depth = 8;
    std::vector<uint16_t> samples;  // width * height * channels
    ImageMetadata metadata;

    bool has_alpha() const { return channels == 2 || channels == 4; }
    int color_channels() const { return has_alpha() ? channels - 1 : channels; }
    uint16_t max_value() const { return bit_depth == 16 ? 65535 : 255; }
};

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
