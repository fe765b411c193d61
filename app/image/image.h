// The image in memory: its dimensions, its samples in the type of its bit
// depth, and the metadata it came with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <variant>
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
//
// The samples are held in the type of the bit depth: uint8_t (0..255) when
// bit_depth is 8, uint16_t (0..65535) when it is 16, so an 8-bit photo takes
// one byte a sample from decode to encode, not two (a 100 MP RGB photo 300 MB
// rather than 600 MB, in and again out). They are reached in that type only:
// data<uint8_t>() / data<uint16_t>(), or with_samples() below, which hands a
// generic function whichever pointer it is (hot loops are templates on the
// sample type, chosen once per image, not per sample). Asking in the other
// type throws imr::Error, as does asking after bit_depth was changed without
// allocate(): 8-bit bytes can never be read as 16-bit samples. sample() and
// set_sample() reach one sample in either depth, for tests and cold code.
struct Image {
    int width = 0, height = 0, channels = 0;
    int bit_depth = 8;  // 8 or 16; set it before allocate()
    ImageMetadata metadata;

    bool has_alpha() const { return channels == 2 || channels == 4; }
    int color_channels() const { return has_alpha() ? channels - 1 : channels; }
    uint16_t max_value() const { return bit_depth == 16 ? 65535 : 255; }

    // width * height * channels samples, all 0, in bit_depth's type (what was
    // held before is freed first). Throws imr::Error for a bit depth other
    // than 8 or 16 or negative dimensions.
    void allocate();
    // Frees the samples (sample_count() becomes 0); dimensions and depth stay.
    void release_samples();
    // Keeps the first `count` samples (at most sample_count(), else throws),
    // the memory as it is: for dropping channels in place, after which the
    // caller sets `channels`.
    void shrink_samples(size_t count);

    // The samples as T, which must be bit_depth's type (uint8_t for 8,
    // uint16_t for 16; else imr::Error). Null while none are allocated.
    template <class T>
    T* data();
    template <class T>
    const T* data() const;

    size_t sample_count() const;  // 0 until allocate()
    size_t byte_size() const;     // sample_count() * the size of one sample (1 or 2)
    bool has_samples() const { return sample_count() != 0; }
    // Whether the samples were allocated for this image's bit depth and
    // dimensions (what the converters and encoders check first).
    bool consistent() const;

    // One sample (index into the interleaved samples) in either depth; checks
    // the index, and that a value fits the depth (set_sample).
    uint16_t sample(size_t i) const;
    void set_sample(size_t i, uint16_t value);
    // All samples widened to uint16 (a copy: for tests and comparisons), and
    // their replacement by values that must fit bit_depth (allocates them).
    std::vector<uint16_t> samples_u16() const;
    void assign_samples(const std::vector<uint16_t>& values);

private:
    template <class T>
    static constexpr int depth_of() {
        static_assert(std::is_same_v<T, uint8_t> || std::is_same_v<T, uint16_t>, "samples are uint8_t or uint16_t");
        return std::is_same_v<T, uint8_t> ? 8 : 16;
    }
    [[noreturn]] void wrong_type(int asked) const;

    std::variant<std::vector<uint8_t>, std::vector<uint16_t>> samples_;
};

template <class T>
T* Image::data() {
    return const_cast<T*>(static_cast<const Image*>(this)->data<T>());
}

template <class T>
const T* Image::data() const {
    if (bit_depth != depth_of<T>()) wrong_type(depth_of<T>());
    if (const auto* held = std::get_if<std::vector<T>>(&samples_)) return held->empty() ? nullptr : held->data();
    if (sample_count() != 0) wrong_type(depth_of<T>());  // held in the other type: bit_depth changed since
    return nullptr;
}

// Calls f(p) with p the image's samples as `const uint8_t*` or `const
// uint16_t*` (non-const for a non-const image), whichever its bit depth holds,
// and returns what f returns: one generic lambda, two instantiations.
template <class ImageT, class F>
decltype(auto) with_samples(ImageT& image, F&& f) {
    if (image.bit_depth == 16) return f(image.template data<uint16_t>());
    return f(image.template data<uint8_t>());
}

// The sample type behind a pointer with_samples handed out (T from `const T*`).
template <class P>
using sample_type = std::remove_cv_t<std::remove_pointer_t<P>>;

}  // namespace imr
