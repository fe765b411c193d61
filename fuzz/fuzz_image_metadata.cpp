// libFuzzer target: the metadata finder and embedder (app/image/metadata*.cpp,
// tiff_directory.cpp) on arbitrary bytes. Byte 0 picks the container (JPEG,
// PNG, WebP, TIFF: selector % 4), the image's channels (gray or RGB:
// selector / 4 % 2) and the orientation said to be applied (selector / 8 % 8
// + 1); the rest is the input. It is read as a file of that container (find,
// orientation reset, embedding what was found back into it), and as an ICC
// profile and EXIF block embedded into a small valid file of that container
// made by the tool's own encoder. Nothing may crash, read out of bounds or
// allocate beyond the limits, and the valid file must still decode after any
// metadata went in: embedding never breaks an image.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "error.h"
#include "image/image_io.h"
#include "image/metadata.h"

namespace {

using imr::imageio::Format;

const char* extension(Format f) {
    switch (f) {
        case Format::Jpeg:
            return ".jpg";
        case Format::Png:
            return ".png";
        case Format::Webp:
            return ".webp";
        default:
            return ".tif";
    }
}

// An 8x6 gray or RGB image encoded as `f`, made once.
const std::vector<uint8_t>& valid_file(Format f, int channels) {
    static std::map<std::pair<Format, int>, std::vector<uint8_t>> made;
    std::vector<uint8_t>& bytes = made[{f, channels}];
    if (bytes.empty()) {
        imr::Image img;
        img.width = 8, img.height = 6, img.channels = channels;
        img.allocate();
        for (int i = 0; i < 8 * 6 * channels; ++i) img.set_sample(size_t(i), uint16_t(i * 37 % 256));
        bytes = imr::encode_image(std::string("x") + extension(f), img);
    }
    return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2) return 0;
    const Format formats[] = {Format::Jpeg, Format::Png, Format::Webp, Format::Tiff};
    const Format format = formats[data[0] % 4];
    const int channels = data[0] / 4 % 2 ? 3 : 1;
    const int applied = data[0] / 8 % 8 + 1;
    const std::vector<uint8_t> input(data + 1, data + size);
    if ((format == Format::Webp || format == Format::Tiff) && !imr::opencv_available()) return 0;

    // The input as a file.
    imr::imageio::Dropped dropped;
    imr::ImageMetadata found = imr::imageio::find_metadata(format, input, dropped);
    if (found.icc.size() > imr::imageio::kMaxMetadataBytes || found.exif.size() > imr::imageio::kMaxMetadataBytes)
        __builtin_trap();
    (void)imr::imageio::exif_orientation(found.exif);
    imr::imageio::set_exif_upright(found.exif, applied);
    std::vector<uint8_t> file = input;
    imr::imageio::embed_metadata(format, file, found, channels, dropped);

    // The input as metadata, in a valid file.
    file = valid_file(format, channels);
    imr::ImageMetadata raw{input, input};
    if (raw.icc.size() >= 20)  // the color space the embedder checks: make it match, to get past that check
        for (int i = 0; i < 4; ++i) raw.icc[16 + size_t(i)] = uint8_t((channels == 1 ? "GRAY" : "RGB ")[i]);
    imr::imageio::embed_metadata(format, file, raw, format == Format::Webp ? 3 : channels, dropped);
    try {
        const imr::Image back = imr::decode_image(std::string("x") + extension(format), file);
        if (back.width * back.height != 8 * 6) __builtin_trap();
    } catch (const imr::Error&) {
        __builtin_trap();  // the metadata broke a valid file
    }
    return 0;
}
