// The stb codec: stb_image decodes, stb_image_write encodes BMP and TGA
// (and JPEG only in a build without libjpeg); PNG goes to codec_libpng.cpp.
// The stb implementations are compiled here and nowhere else.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "error.h"
#include "image/codecs.h"
#include "image/probe.h"

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#endif
// Only the formats routed to stb are compiled in: stb_image's loader tries
// every format it has on any file, so a file we sniffed as (magic-less) TGA
// could reach its PNM header parser, which overflows an int on long numbers
// (found by fuzz_image_decode; tests/data/fuzz/). PNM and PSD are read by
// builtin_pnm.cpp and builtin_psd.cpp, JPEG by libjpeg where the build has it.
#define STBI_NO_HDR
#define STBI_NO_LINEAR
#define STBI_NO_PIC
#define STBI_NO_PNM
#define STBI_NO_PSD
#ifdef IMRESTORE_WITH_LIBJPEG
#define STBI_NO_JPEG
#endif
#define STB_IMAGE_IMPLEMENTATION
#include "stb_image.h"
#define STBI_WRITE_NO_STDIO
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include "stb_image_write.h"
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace imr::imageio {
namespace {

void append_bytes(void* context, void* data, int size) {
    auto* out = static_cast<std::vector<uint8_t>*>(context);
    const uint8_t* p = static_cast<const uint8_t*>(data);
    out->insert(out->end(), p, p + size);
}

}  // namespace

Image decode_stb(const std::string& path, const std::vector<uint8_t>& data, const FormatInfo& fmt) {
    const int len = int(data.size());
    int w = 0, h = 0, c = 0;
    std::unique_ptr<void, void (*)(void*)> pixels(nullptr, &stbi_image_free);
    const bool is16 = stbi_is_16_bit_from_memory(data.data(), len);
    if (is16)
        pixels.reset(stbi_load_16_from_memory(data.data(), len, &w, &h, &c, 0));
    else
        pixels.reset(stbi_load_from_memory(data.data(), len, &w, &h, &c, 0));
    if (!pixels) {
        const char* why = stbi_failure_reason();
        throw Error(path + ": cannot decode " + fmt.name + ": " + (why ? why : "unknown stb error"));
    }
    if (c < 1 || c > 4) throw Error(path + ": unsupported channel count " + std::to_string(c));
    check_dimensions(path, uint64_t(w), uint64_t(h), uint64_t(c));
    Image img;
    img.width = w, img.height = h, img.channels = c, img.bit_depth = is16 ? 16 : 8;
    img.allocate();
    with_samples(img, [&](auto* samples) {  // stb's buffer holds the image's type: 16-bit as uint16
        std::copy_n(static_cast<const sample_type<decltype(samples)>*>(pixels.get()), img.sample_count(), samples);
    });
    return img;
}

std::vector<uint8_t> encode_stb(const std::string& path, const Image& img, const FormatInfo& fmt,
                                const WriteOptions& options) {
    if (fmt.format == Format::Png) return encode_libpng(path, img, options.png_compression);
    std::vector<uint8_t> out;
    const uint8_t* px = img.data<uint8_t>();  // 8-bit only: check_can_write refused 16-bit for these formats
    int ok = 0;
    switch (fmt.format) {
        case Format::Jpeg:
            ok = stbi_write_jpg_to_func(append_bytes, &out, img.width, img.height, img.channels, px,
                                        options.jpeg_quality);
            break;
        case Format::Bmp:
            ok = stbi_write_bmp_to_func(append_bytes, &out, img.width, img.height, img.channels, px);
            break;
        case Format::Tga:
            ok = stbi_write_tga_to_func(append_bytes, &out, img.width, img.height, img.channels, px);
            break;
        default:
            break;
    }
    if (!ok || out.empty()) throw Error(path + ": stb could not encode the " + std::string(fmt.name) + " image");
    return out;
}

}  // namespace imr::imageio
