#include "image/image.h"

#include <algorithm>
#include <string>

#include "error.h"

namespace imr {
namespace {

std::string describe(const Image& image) {
    return std::to_string(image.width) + "x" + std::to_string(image.height) + "x" + std::to_string(image.channels) +
           " image of bit depth " + std::to_string(image.bit_depth);
}

}  // namespace

void Image::allocate() {
    if (bit_depth != 8 && bit_depth != 16) throw Error("cannot allocate the samples of a " + describe(*this));
    if (width < 0 || height < 0 || channels < 0) throw Error("cannot allocate the samples of a " + describe(*this));
    const size_t n = size_t(width) * size_t(height) * size_t(channels);
    samples_ = {};  // the old samples go before the new ones are allocated
    if (bit_depth == 8)
        samples_.emplace<std::vector<uint8_t>>(n);
    else
        samples_.emplace<std::vector<uint16_t>>(n);
}

void Image::release_samples() {
    samples_ = {};  // a fresh empty vector: its memory goes now, not at the image's end
}

void Image::shrink_samples(size_t count) {
    if (count > sample_count())
        throw Error("cannot keep " + std::to_string(count) + " of the " + std::to_string(sample_count()) +
                    " samples of a " + describe(*this));
    std::visit([&](auto& v) { v.resize(count); }, samples_);
}

size_t Image::sample_count() const {
    return std::visit([](const auto& v) { return v.size(); }, samples_);
}

size_t Image::byte_size() const {
    return std::visit([](const auto& v) { return v.size() * sizeof(v[0]); }, samples_);
}

bool Image::consistent() const {
    const bool held_as_depth = bit_depth == 8    ? std::holds_alternative<std::vector<uint8_t>>(samples_)
                               : bit_depth == 16 ? std::holds_alternative<std::vector<uint16_t>>(samples_)
                                                 : false;
    return held_as_depth && width > 0 && height > 0 && channels >= 1 && channels <= 4 &&
           sample_count() == size_t(width) * size_t(height) * size_t(channels);
}

void Image::wrong_type(int asked) const {
    const char* held = std::holds_alternative<std::vector<uint8_t>>(samples_) ? "8-bit" : "16-bit";
    throw Error("the samples of a " + describe(*this) + " (held as " + held + ", " + std::to_string(sample_count()) +
                ") were asked for as " + std::to_string(asked) + "-bit");
}

uint16_t Image::sample(size_t i) const {
    if (i >= sample_count())
        throw Error("sample " + std::to_string(i) + " of " + std::to_string(sample_count()) + " of a " +
                    describe(*this));
    return with_samples(*this, [&](const auto* p) { return uint16_t(p[i]); });
}

void Image::set_sample(size_t i, uint16_t value) {
    if (i >= sample_count() || value > max_value())
        throw Error("cannot set sample " + std::to_string(i) + " of " + std::to_string(sample_count()) + " of a " +
                    describe(*this) + " to " + std::to_string(value));
    with_samples(*this, [&](auto* p) { p[i] = sample_type<decltype(p)>(value); });
}

std::vector<uint16_t> Image::samples_u16() const {
    std::vector<uint16_t> out(sample_count());
    with_samples(*this, [&](const auto* p) { std::copy(p, p + out.size(), out.begin()); });
    return out;
}

void Image::assign_samples(const std::vector<uint16_t>& values) {
    for (size_t i = 0; i < values.size(); ++i)
        if (values[i] > max_value())
            throw Error("sample " + std::to_string(i) + " is " + std::to_string(values[i]) + ", over the " +
                        std::to_string(max_value()) + " of a " + describe(*this));
    if (bit_depth != 8 && bit_depth != 16) throw Error("cannot assign the samples of a " + describe(*this));
    if (bit_depth == 8)
        samples_.emplace<std::vector<uint8_t>>(values.begin(), values.end());
    else
        samples_.emplace<std::vector<uint16_t>>(values);
}

}  // namespace imr
