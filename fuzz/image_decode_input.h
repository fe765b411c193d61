// The input layout of fuzz_image_decode, shared with the regression test
// that replays its crashers (tests/test_image_io.cpp): byte 0 picks the codec
// (selector % codecs) and the file name the decoder sees (selector / 3 % 9),
// the rest is the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "image/image_io.h"

namespace imr::fuzz {

// Small enough that a decoded fuzz input stays cheap: the decoders must
// refuse larger images from their headers, before allocating.
constexpr uint64_t kImageMaxPixels = uint64_t(1) << 20;

inline std::string image_name(uint8_t selector) {
    static const char* const names[] = {"f.png", "f.jpg", "f.bmp", "f.tga", "f.gif",
                                        "f.ppm", "f.psd", "f.tif", "f.webp"};
    return names[(selector / 3) % (sizeof names / sizeof names[0])];
}

inline Codec image_codec(uint8_t selector) {
    const Codec codecs[] = {Codec::Auto, Codec::Stb, Codec::OpenCV};
    return codecs[selector % (opencv_available() ? 3 : 2)];
}

}  // namespace imr::fuzz
