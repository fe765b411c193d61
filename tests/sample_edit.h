// Test helpers that change an image's samples through uint16 values, in
// either bit depth (Image holds 8-bit samples as bytes: app/image/image.h).
#pragma once

#include <cstdint>
#include <vector>

#include "image/image.h"

namespace imr::test {

// f(uint16_t& v) on every sample, widened and put back (each must still fit
// the image's depth: Image::assign_samples throws otherwise).
template <class F>
void edit_samples(Image& img, F f) {
    std::vector<uint16_t> v = img.samples_u16();
    for (uint16_t& x : v) f(x);
    img.assign_samples(v);
}

// The image at bit depth `depth`, each sample f(its value at the old depth),
// metadata included.
template <class F>
Image with_depth(const Image& img, int depth, F f) {
    std::vector<uint16_t> v = img.samples_u16();
    for (uint16_t& x : v) x = uint16_t(f(x));
    Image out = img;
    out.bit_depth = depth;
    out.assign_samples(v);
    return out;
}

}  // namespace imr::test
