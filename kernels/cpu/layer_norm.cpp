// layer_norm on the CPU (semantics in kernels/ops/layer_norm.h), f32 NCHW.
//
// Floor: memory-bound. 8 bytes per element (read the input, write the
// output) and ~8 FLOPs per element (mean, deviation, its square, scale,
// shift). A pixel's channels are H*W floats apart in NCHW, so a task takes a
// run of up to `block` pixels of one row and streams each channel's run as a
// contiguous vector (three passes: sum, squared deviations, output); the
// run's C x block floats (<= kBlockFloats, 64 KB) stay in L1/L2 between the
// passes, so DRAM sees each element read once. Two passes over the channels
// (mean first, then the squared deviations from it) in float: no cancellation
// when |mean| >> the deviation, which a one-pass sum of squares would suffer
// (tests/test_ops.cpp derives the error bound of exactly this algorithm).
// Parallel over (image, row, run of pixels) with OpenMP.
#include <algorithm>
#include <cmath>

#include "cpu_backend.h"

namespace imr::cpu {

namespace {

// Floats of one task's input (C channels x block pixels): a quarter of a
// typical 256 KB L2, so the three passes read the run from cache.
constexpr int kBlockFloats = 16384;
// Pixels per task: at most kMaxBlock (the per-pixel statistics live on the
// stack), at least kMinBlock (a channel's run is then still 64 bytes, a
// cache line).
constexpr int kMaxBlock = 256, kMinBlock = 16;

}  // namespace

void CpuBackend::layer_norm(const LayerNormArgs& a) {
    const int threads = threads_;
    check_args(a);
    check_supported(*this, Op::LayerNorm, {&a.input, &a.output});
    const Shape& s = a.input.shape;
    const float* input = a.input.as<const float>();
    float* output = a.output.as<float>();
    const float* weight = a.weight.as<const float>();
    const float* bias = a.bias.as<const float>();
    const float eps = a.eps, channels = float(s.c);
    const size_t plane = size_t(s.h) * s.w;
    const int block = std::min(std::clamp(kBlockFloats / s.c, kMinBlock, kMaxBlock), s.w);
    const long runs = (s.w + block - 1) / block;
    const long tasks = long(s.n) * s.h * runs;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long t = 0; t < tasks; ++t) {
        const int x0 = int(t % runs) * block, len = std::min(block, s.w - x0);
        const long row = t / runs;  // n * H + y
        const int y = int(row % s.h), n = int(row / s.h);
        const size_t first = size_t(n) * s.c * plane + size_t(y) * s.w + x0;
        const float* in = input + first;
        float* out = output + first;
        float mean[kMaxBlock], scale[kMaxBlock];
        std::fill(mean, mean + len, 0.0f);
        for (int c = 0; c < s.c; ++c) {
            const float* src = in + c * plane;
            for (int i = 0; i < len; ++i) mean[i] += src[i];
        }
        for (int i = 0; i < len; ++i) mean[i] /= channels;
        std::fill(scale, scale + len, 0.0f);
        for (int c = 0; c < s.c; ++c) {
            const float* src = in + c * plane;
            for (int i = 0; i < len; ++i) {
                const float d = src[i] - mean[i];
                scale[i] += d * d;
            }
        }
        for (int i = 0; i < len; ++i) scale[i] = 1.0f / std::sqrt(scale[i] / channels + eps);
        for (int c = 0; c < s.c; ++c) {
            const float* src = in + c * plane;
            float* dst = out + c * plane;
            const float w = weight[c], b = bias[c];
            for (int i = 0; i < len; ++i) dst[i] = (src[i] - mean[i]) * scale[i] * w + b;
        }
    }
}

}  // namespace imr::cpu
