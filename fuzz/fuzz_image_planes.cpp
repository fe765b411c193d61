// libFuzzer target: the conversion between images and NCHW planes
// (image_batch.h) on images of any declared shape and any float values the
// model might return (NaN, infinities, huge). The first bytes give width,
// height, channels, bit depth and the model's channel count; the rest fills
// the samples and the model output. It must throw imr::Error for
// inconsistent images and otherwise round-trip within the clamping rules:
// never crash or touch memory outside the buffers.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "error.h"
#include "image/image_batch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 6) return 0;
    imr::Image img;
    img.width = 1 + data[0] % 64, img.height = 1 + data[1] % 64;
    img.channels = data[2] % 6;  // 0 and 5: invalid
    img.bit_depth = (data[3] & 1) ? 16 : 8;
    if (data[3] & 2) img.bit_depth = data[3];  // sometimes an invalid depth
    const int model_channels = 1 + data[4] % 4;
    const bool truncate = data[5] & 1;  // a samples vector that does not match the shape
    data += 6, size -= 6;
    size_t count = size_t(img.width) * img.height * size_t(img.channels);
    if (truncate && count > 0) --count;
    std::vector<uint16_t> values(count);
    for (size_t i = 0; i < count; ++i) values[i] = size ? uint16_t(data[i % size] | data[(i * 7) % size] << 8) : 0;
    if (img.bit_depth == 8)
        for (uint16_t& v : values) v &= 0xff;
    // An invalid depth has no sample type: such an image holds none.
    if (img.bit_depth == 8 || img.bit_depth == 16) img.assign_samples(values);
    try {
        const int items = imr::items_per_image(img, model_channels);
        std::vector<float> planes(size_t(items) * model_channels * img.width * img.height);
        imr::image_to_planes(img, model_channels, planes.data());
        for (float v : planes)
            if (!(v >= 0.f && v <= 1.f)) __builtin_trap();  // samples map into [0, 1]
        // The model's output: the planes, with some values replaced by
        // whatever the fuzzer's bytes say as floats (NaN, inf, huge).
        for (size_t i = 0; i + 4 <= size && i / 4 < planes.size(); i += 4 * 13)
            std::memcpy(&planes[i / 4], data + i, 4);
        const imr::Image back = imr::planes_to_image(planes.data(), model_channels, img);
        if (back.sample_count() != size_t(back.width) * back.height * back.channels) __builtin_trap();
        for (uint16_t v : back.samples_u16())
            if (v > back.max_value()) __builtin_trap();
    } catch (const imr::Error&) {
    }
    return 0;
}
