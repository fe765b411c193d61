// libFuzzer target: every image codec path on arbitrary bytes. The first
// byte picks the codec (auto, stb, and OpenCV where built) and the file name
// the extension hints (the bytes decide the format: the name only steers
// TGA, which has no magic), the rest is the file. decode_image must return
// an image or throw imr::Error: never crash, over-read or allocate beyond
// its limits. Every decoded image then goes through the conversion to NCHW
// planes and back (image_batch.h) for a 3- and a 1-channel model.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "error.h"
#include "image/image_batch.h"
#include "image/image_io.h"

namespace {

// Small enough that a decoded fuzz input stays cheap: the decoders must
// refuse larger images from their headers, before allocating.
constexpr uint64_t kFuzzMaxPixels = uint64_t(1) << 20;

const char* const kNames[] = {"f.png", "f.jpg", "f.bmp", "f.tga", "f.gif", "f.ppm", "f.psd", "f.tif", "f.webp"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2) return 0;
    const imr::Codec codecs[] = {imr::Codec::Auto, imr::Codec::Stb, imr::Codec::OpenCV};
    const int n_codecs = imr::opencv_available() ? 3 : 2;
    const imr::Codec codec = codecs[data[0] % n_codecs];
    const std::string name = kNames[(data[0] / 3) % (sizeof kNames / sizeof kNames[0])];
    const std::vector<uint8_t> bytes(data + 1, data + size);
    imr::Image img;
    try {
        img = imr::decode_image(name, bytes, codec, kFuzzMaxPixels);
    } catch (const imr::Error&) {
        return 0;
    }
    for (int model_channels : {3, 1}) {
        try {
            const int items = imr::items_per_image(img, model_channels);
            std::vector<float> planes(size_t(items) * model_channels * img.width * img.height);
            imr::image_to_planes(img, model_channels, planes.data());
            const imr::Image back = imr::planes_to_image(planes.data(), model_channels, img);
            if (back.samples.size() != img.samples.size()) __builtin_trap();
        } catch (const imr::Error&) {
        }
    }
    return 0;
}
