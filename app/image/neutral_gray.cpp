#include "image/neutral_gray.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>

#include "error.h"

namespace imr {

bool is_neutral_rgb(const Image& image) {
    if (image.color_channels() != 3 || !image.consistent()) return false;
    const size_t pixels = size_t(image.width) * size_t(image.height);
    const int ch = image.channels;
    return with_samples(image, [&](const auto* s) {
        for (size_t i = 0; i < pixels; ++i, s += ch)
            if (s[0] != s[1] || s[1] != s[2]) return false;
        return true;
    });
}

void make_neutral_rgb(Image& image) {
    if (image.color_channels() != 3 || !image.consistent())
        throw Error("make_neutral_rgb: a consistent RGB(A) image is needed, not " + std::to_string(image.channels) +
                    " channel(s)");
    const size_t pixels = size_t(image.width) * size_t(image.height);
    const int ch = image.channels;
    with_samples(image, [&](auto* s) {
        using T = sample_type<decltype(s)>;
        for (size_t i = 0; i < pixels; ++i, s += ch) {
            // (R + G + B) / 3 to the nearest integer (thirds: no ties).
            const uint32_t sum = uint32_t(s[0]) + s[1] + s[2];
            const T mean = T((sum + 1) / 3);
            s[0] = s[1] = s[2] = mean;
        }
    });
}

bool keep_gray_wanted(const std::string& mode, const std::string& task) {
    if (mode != "auto" && mode != "on" && mode != "off")
        throw Error("--keep-gray " + mode + ": expected auto, on or off");
    static const char* const kOwnColorTasks[] = {"denoise", "deblock", "deblur", "photo", "sharpen"};
    return mode == "on" || (mode == "auto" && std::find(std::begin(kOwnColorTasks), std::end(kOwnColorTasks), task) !=
                                                  std::end(kOwnColorTasks));
}

}  // namespace imr
