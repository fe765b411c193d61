// Image <-> NCHW plane conversion (app/image/image_batch.cpp) on a 12 MP
// photo, one thread: the per-image cost around every model run; and, in
// builds with libjpeg, the JPEG consistency projection (app/image/
// jpeg_projection.cpp) of a 12 MP image onto a JPEG of it, the cost every
// deblocked JPEG adds on a writer thread, with the coefficient read beside.
//
//   bench_image [--benchmark_filter=...]
//
// Arguments: image channels, bit depth, model channels. Bytes/s counts the
// interleaved samples read or written (1 byte each at 8 bits, 2 at 16) plus
// the float planes.
// planes_to_image returns a fresh Image, so its time includes allocating and
// zero-filling the samples; BM_AllocSamples measures that part alone, and
// BM_FromPlanesInPlace the conversion into an existing image (what the
// pipeline does when the output keeps the input's depth). glibc
// maps a block that large afresh on every call (page faults), so to time the
// conversion as with a warm allocator, keep freed memory in the heap:
//
//   GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4000000000 bench_image
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "image/image_batch.h"
#ifdef IMRESTORE_WITH_LIBJPEG
#include "image/codecs.h"
#include "image/jpeg_projection.h"
#endif

namespace {

constexpr int kWidth = 4000, kHeight = 3000;

imr::Image photo(int channels, int bit_depth) {
    imr::Image img;
    img.width = kWidth, img.height = kHeight, img.channels = channels, img.bit_depth = bit_depth;
    img.allocate();
    std::mt19937 rng(1);
    std::uniform_int_distribution<int> d(0, img.max_value());
    imr::with_samples(img, [&](auto* samples) {
        for (size_t i = 0; i < img.sample_count(); ++i) samples[i] = imr::sample_type<decltype(samples)>(d(rng));
    });
    return img;
}

size_t plane_floats(const imr::Image& img, int model) {
    return size_t(imr::items_per_image(img, model)) * model * img.width * img.height;
}

void set_bytes(benchmark::State& state, const imr::Image& img, size_t floats) {
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(img.byte_size() + floats * 4));
}

void BM_ToPlanes(benchmark::State& state) {
    const imr::Image img = photo(int(state.range(0)), int(state.range(1)));
    const int model = int(state.range(2));
    std::vector<float> planes(plane_floats(img, model));  // reused, as callers pool it
    imr::image_to_planes(img, model, planes.data());      // first touch outside the timing
    for (auto _ : state) {
        imr::image_to_planes(img, model, planes.data());
        benchmark::DoNotOptimize(planes.data());
        benchmark::ClobberMemory();
    }
    set_bytes(state, img, planes.size());
}

void BM_FromPlanes(benchmark::State& state) {
    const imr::Image img = photo(int(state.range(0)), int(state.range(1)));
    const int model = int(state.range(2));
    std::vector<float> planes(plane_floats(img, model));
    imr::image_to_planes(img, model, planes.data());
    for (auto _ : state) {
        imr::Image out = imr::planes_to_image(planes.data(), model, img);
        benchmark::DoNotOptimize(out.byte_size());
    }
    set_bytes(state, img, planes.size());
}

// What the pipeline does where the output keeps the input's depth: the
// output written into the input image's own samples (warm pages).
void BM_FromPlanesInPlace(benchmark::State& state) {
    imr::Image img = photo(int(state.range(0)), int(state.range(1)));
    const int model = int(state.range(2));
    std::vector<float> planes(plane_floats(img, model));
    imr::image_to_planes(img, model, planes.data());
    for (auto _ : state) {
        imr::planes_into_image(planes.data(), model, img);
        benchmark::DoNotOptimize(img.byte_size());
        benchmark::ClobberMemory();
    }
    set_bytes(state, img, planes.size());
}

void BM_AllocSamples(benchmark::State& state) {
    for (auto _ : state) {
        imr::Image img;
        img.width = kWidth, img.height = kHeight, img.channels = int(state.range(0)),
        img.bit_depth = int(state.range(1));
        img.allocate();
        benchmark::DoNotOptimize(img.byte_size());
    }
}

void cases(benchmark::internal::Benchmark* b) {
    b->ArgNames({"ch", "bits", "model"});
    b->Args({3, 8, 3})->Args({3, 16, 3})->Args({1, 8, 3})->Args({1, 8, 1})->Args({4, 8, 3})->Args({3, 8, 1});
    b->Unit(benchmark::kMillisecond);
}

#ifdef IMRESTORE_WITH_LIBJPEG
// A JPEG of the 12 MP test image at quality range(0), chroma subsampling
// range(1) (420 or 444), as libjpeg writes it for `imrestore`.
std::vector<uint8_t> jpeg_of(const imr::Image& img, const benchmark::State& state) {
    return imr::imageio::encode_libjpeg("bench.jpg", img, int(state.range(0)), int(state.range(1)));
}

void BM_JpegProjection(benchmark::State& state) {
    imr::Image img = photo(3, 8);
    const std::vector<uint8_t> bytes = jpeg_of(img, state);
    const imr::JpegCoefficients jpeg = imr::read_jpeg_coefficients("bench.jpg", bytes);
    for (auto _ : state) {  // every block is transformed and clamped whether or not it moves
        imr::project_onto_jpeg(img, jpeg);
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(int64_t(state.iterations()) * kWidth * kHeight);
}

void BM_JpegCoefficientRead(benchmark::State& state) {
    const std::vector<uint8_t> bytes = jpeg_of(photo(3, 8), state);
    for (auto _ : state) {
        const imr::JpegCoefficients jpeg = imr::read_jpeg_coefficients("bench.jpg", bytes);
        benchmark::DoNotOptimize(jpeg.components.size());
    }
    state.SetItemsProcessed(int64_t(state.iterations()) * kWidth * kHeight);
}

void jpeg_cases(benchmark::internal::Benchmark* b) {
    b->ArgNames({"quality", "subsampling"})->Args({40, 420})->Args({40, 444})->Args({90, 420});
    b->Unit(benchmark::kMillisecond);
}
#endif

}  // namespace

BENCHMARK(BM_ToPlanes)->Apply(cases);
BENCHMARK(BM_FromPlanes)->Apply(cases);
BENCHMARK(BM_FromPlanesInPlace)->Apply(cases);
BENCHMARK(BM_AllocSamples)->Args({3, 8})->Args({3, 16})->Unit(benchmark::kMillisecond);
#ifdef IMRESTORE_WITH_LIBJPEG
BENCHMARK(BM_JpegProjection)->Apply(jpeg_cases);
BENCHMARK(BM_JpegCoefficientRead)->Apply(jpeg_cases);
#endif

BENCHMARK_MAIN();
