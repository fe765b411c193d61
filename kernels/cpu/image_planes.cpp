// image_planes on the CPU (semantics in kernels/ops/image_planes.h): plain
// loops over (item, row), parallel over rows. The pipeline converts images
// on the CPU with app/image/interleave.cpp's vector loops on its decoder and
// writer threads, where they overlap the model; this op is what the runner's
// sample path (ModelRunner::run_samples) runs on a host backend, and the
// second implementation of the same values that the CUDA kernels and the
// runner's tests are held to. Built with -ffp-contract=off (CMakeLists.txt):
// the blend and quantize steps must stay separate f32 roundings.
#include <algorithm>
#include <cstdint>

#include "cpu_backend.h"
#include "ops/sample_rounding.h"

namespace imr::cpu {
namespace {

template <class T>
constexpr float kMax = sizeof(T) == 1 ? 255.f : 65535.f;

template <class T>
T quantize(float x) {
    return T(sample_rounding::quantize(x, kMax<T>));
}

using sample_rounding::clamp_unit;

template <class T>
void from_samples(const ImagePlanesArgs& a, int threads) {
    const ImageSamples& s = a.samples;
    const Shape p = a.planes.shape;
    const int color = s.color_channels(), items = image_planes_items(p.c, color);
    const T* in = static_cast<const T*>(s.data);
    float* out = a.planes.as<float>();
    const float scale = 1.0f / kMax<T>;
    const long rows = long(p.n) * p.c * p.h;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long r = 0; r < rows; ++r) {
        const int y = int(r % p.h), plane = int(r / p.h), c = plane % p.c, item = plane / p.c;
        const int image = item / items, ch = items == 3 ? item % 3 : color == 1 ? 0 : c;
        const T* row = in + (size_t(image) * s.h + std::min(y, s.h - 1)) * s.w * s.channels + ch;
        float* o = out + size_t(r) * p.w;
        for (int x = 0; x < s.w; ++x) o[x] = float(row[size_t(x) * s.channels]) * scale;
        for (int x = s.w; x < p.w; ++x) o[x] = o[s.w - 1];
    }
}

template <class T>
void to_samples(const ImagePlanesArgs& a, int threads) {
    const ImageSamples& s = a.samples;
    const Shape p = a.planes.shape;
    const int color = s.color_channels(), items = image_planes_items(p.c, color);
    const bool gray_of_rgb = p.c == 3 && color == 1;
    const float t = a.strength;
    const float* planes = a.planes.as<const float>();
    const float* input = a.input.as<const float>();
    T* out = static_cast<T*>(s.data);
    const size_t plane = size_t(p.h) * p.w;
    auto value = [&](size_t i) {  // element i of the planes, moved toward the input by t
        const float v = planes[i];
        if (t == 1.f) return v;
        if (t == 0.f) return input[i];
        return input[i] + t * (v - input[i]);
    };
    const long rows = long(s.n) * s.h;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long r = 0; r < rows; ++r) {
        const int image = int(r / s.h), y = int(r % s.h);
        T* o = out + size_t(r) * s.w * s.channels;
        for (int x = 0; x < s.w; ++x) {
            const size_t at = size_t(y) * p.w + x;
            T* px = o + size_t(x) * s.channels;
            if (gray_of_rgb) {
                const size_t first = size_t(image) * 3 * plane + at;
                const float sum =
                    clamp_unit(value(first)) + clamp_unit(value(first + plane)) + clamp_unit(value(first + 2 * plane));
                px[0] = quantize<T>(sum * (1.0f / 3.0f));
                continue;
            }
            for (int ch = 0; ch < color; ++ch) {
                const size_t i =
                    items == 3 ? (size_t(image) * 3 + ch) * plane + at : (size_t(image) * p.c + ch) * plane + at;
                px[ch] = quantize<T>(value(i));
            }
        }
    }
}

}  // namespace

void CpuBackend::image_planes(const ImagePlanesArgs& a) {
    check_args(a);
    check_supported(*this, Op::ImagePlanes, {&a.planes, &a.input});
    const bool wide = a.samples.bit_depth == 16;
    if (a.direction == PlanesDirection::FromSamples)
        wide ? from_samples<uint16_t>(a, threads_) : from_samples<uint8_t>(a, threads_);
    else
        wide ? to_samples<uint16_t>(a, threads_) : to_samples<uint8_t>(a, threads_);
}

}  // namespace imr::cpu
