// pixel_shuffle on the CPU (semantics in kernels/ops/pixel_shuffle.h). A pure
// permutation plus an optional add: memory-bound, 8 bytes per element moved
// (12 with the residual). Parallel over rows of the wide ([C, H, W]) tensor:
// each such row maps to f runs of contiguous deep-tensor columns, strided by
// f, so one pass reads or writes every row of both tensors once.
#include "cpu_backend.h"

namespace imr::cpu {

void CpuBackend::pixel_shuffle(const PixelShuffleArgs& a) {
    const int threads = threads_;
    check_args(a);
    check_supported(*this, Op::PixelShuffle, {&a.input, &a.output, &a.residual});
    const float* input = a.input.as<const float>();
    const float* residual = a.residual.as<const float>();
    float* output = a.output.as<float>();
    const bool to_depth = a.direction == ShuffleDirection::ToDepth;
    const Shape wide = to_depth ? a.input.shape : a.out_shape();
    const int f = a.factor, hd = wide.h / f, wd = wide.w / f;
    const long rows = long(wide.n) * wide.c * wide.h;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long r = 0; r < rows; ++r) {
        const int Y = int(r % wide.h);
        const long nc = r / wide.h;  // n * C + c of the wide tensor
        const size_t wide_row = size_t(r) * wide.w;
        for (int dx = 0; dx < f; ++dx) {
            // Deep channel (n, c*f*f + dy*f + dx), row Y / f.
            const size_t deep_row = ((size_t(nc) * f * f + size_t(Y % f) * f + dx) * hd + Y / f) * wd;
            for (int x = 0; x < wd; ++x) {
                const size_t wi = wide_row + size_t(x) * f + dx, di = deep_row + x;
                const size_t src = to_depth ? wi : di, dst = to_depth ? di : wi;
                output[dst] = residual ? input[src] + residual[dst] : input[src];
            }
        }
    }
}

}  // namespace imr::cpu
