// libFuzzer target: every image codec path on arbitrary bytes, laid out as
// image_decode_input.h says (a selector byte for the codec and the file
// name, whose extension only steers TGA, which has no magic; then the file).
// decode_image must return an image or throw imr::Error: never crash,
// over-read or allocate beyond its limits. Every decoded image then goes through the conversion to NCHW
// planes and back (image_batch.h) for a 3- and a 1-channel model.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "error.h"
#include "image/image_batch.h"
#include "image/image_io.h"
#include "image_decode_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2) return 0;
    const imr::Codec codec = imr::fuzz::image_codec(data[0]);
    const std::string name = imr::fuzz::image_name(data[0]);
    const std::vector<uint8_t> bytes(data + 1, data + size);
    imr::Image img;
    try {
        img = imr::decode_image(name, bytes, codec, imr::fuzz::kImageMaxPixels);
    } catch (const imr::Error&) {
        return 0;
    }
    for (int model_channels : {3, 1}) {
        try {
            const int items = imr::items_per_image(img, model_channels);
            std::vector<float> planes(size_t(items) * model_channels * img.width * img.height);
            imr::image_to_planes(img, model_channels, planes.data());
            const imr::Image back = imr::planes_to_image(planes.data(), model_channels, img);
            if (back.sample_count() != img.sample_count()) __builtin_trap();
        } catch (const imr::Error&) {
        }
    }
    return 0;
}
