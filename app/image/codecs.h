// The decoders and encoders behind read_image / write_image, one file per
// codec: codec_opencv.cpp, codec_stb.cpp, codec_libjpeg.cpp,
// codec_libpng.cpp, and the built-in PNM reader and writer (builtin_pnm.cpp). They work on whole
// files in memory; which one runs for a format is decided in image_io.cpp
// (its top comment says why). Declared here, not in image_io.h, because
// nothing outside app/image/ may call them: read_image / write_image add the
// checks (sniffing, size limits, options) a codec relies on.
//
// Decoders return samples as image_io.h's Image holds them (RGB order,
// 8 or 16 bit) and call check_dimensions before allocating; encoders return
// the file's bytes. Both throw imr::Error("PATH: what").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "image/formats.h"
#include "image/image_io.h"

namespace imr::imageio {

#ifdef IMRESTORE_WITH_OPENCV
// codec_opencv.cpp: cv::imdecode / cv::imencode (built only with OpenCV).
Image decode_opencv(const std::string& path, const std::vector<uint8_t>& data, const FormatInfo& fmt);
// `ext` picks OpenCV's encoder; options give JPEG/WebP quality and PNG compression.
std::vector<uint8_t> encode_opencv(const std::string& path, const Image& img, const std::string& ext,
                                   const FormatInfo& fmt, const WriteOptions& options);
#endif

#ifdef IMRESTORE_WITH_LIBJPEG
// codec_libjpeg.cpp: JPEG through libjpeg(-turbo), in place of stb's JPEG
// decoder and encoder wherever OpenCV does not read/write the JPEG.
Image decode_libjpeg(const std::string& path, const std::vector<uint8_t>& data);
// subsampling: 420 (libjpeg's default) or 444 (every component 1x1).
std::vector<uint8_t> encode_libjpeg(const std::string& path, const Image& img, int quality, int subsampling = 420);
#endif

// codec_stb.cpp: stb_image / stb_image_write (the only file that compiles
// their implementations).
Image decode_stb(const std::string& path, const std::vector<uint8_t>& data, const FormatInfo& fmt);
// BMP, TGA (and JPEG without libjpeg) with stb_image_write; PNG with libpng (codec_libpng.cpp).
std::vector<uint8_t> encode_stb(const std::string& path, const Image& img, const FormatInfo& fmt,
                                const WriteOptions& options);

// codec_libpng.cpp: PNG through libpng (8/16 bit, 1-4 channels, zlib level
// 0..9), for every PNG that OpenCV does not write.
std::vector<uint8_t> encode_libpng(const std::string& path, const Image& img, int compression);

// Built-in PNM reader (P1 to P6), used in place of stb's: stb 2.27 returns
// 16-bit PNM samples byte-swapped, does not notice truncation and has no
// P1-P4. Bitmaps (P1/P4) read as 8-bit gray with 1 = black. A maxval other
// than 255/65535 is rescaled to 8 bit (maxval <= 255) or 16 bit.
// check_only: checks the header and the size only, returns an empty Image.
Image decode_pnm(const std::string& path, const std::vector<uint8_t>& d, bool check_only = false);

// builtin_psd.cpp: the composite image of a PSD (RGB or gray, 8/16 bit, raw
// or PackBits, alpha from the first extra channel), in place of stb's loader.
Image decode_psd(const std::string& path, const std::vector<uint8_t>& d);
// The built-in PNM encoder: P5 (gray) / P6 (RGB), 8 or 16 bit (big-endian),
// whatever the codec.
std::vector<uint8_t> encode_pnm(const Image& img);

}  // namespace imr::imageio
