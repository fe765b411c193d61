// window_mean on the CPU (semantics in kernels/ops/window_mean.h), f32 NCHW.
//
// Floor: memory-bound, 8 bytes per element (read in, write out) and a few
// FLOPs whatever the window. A task is a band of rows of one channel plane:
// it keeps, in double, the sum over the box's rows of every column
// (`columns`, W values), starts it from scratch at the band's first row and
// then slides it one row down per output row (add the row entering the box,
// subtract the one leaving it: 2 adds per element), and turns each row of
// column sums into box sums with a prefix sum along the row (another 2 adds
// and a division per element). So the work per output is O(1) in the window;
// a band restarts the column sums (window rows of adds), which bands of at
// least kMinBandRows and at least `window` rows keep below 1 add per output.
//
// Error: every sum is in double (unit roundoff 2^-53): the slid column sums
// and the row's prefix sums err by at most ~(band + W) * 2^-53 times the
// magnitudes summed, i.e. (band + W) * 2^-29 of the output's own rounding to
// float (2^-24): below 10^-3 of it for sides up to 10^5 pixels, so the result
// is the exact mean rounded once to float. (In float, a prefix sum along a
// 4000-pixel row would lose ~4000/window * 2^-24 of the box sum to
// cancellation: an error that grows with the image, which double makes
// negligible.)
// Parallel over (plane, band) with OpenMP; the vertical slide streams whole
// rows, vectorized over x.
#include <algorithm>
#include <vector>

#include "cpu_backend.h"

namespace imr::cpu {

namespace {

// Rows per band at least (and at least the window, so a band's restart costs
// at most one add per output). Small enough that a 3-channel image still
// gives every thread a few bands.
constexpr int kMinBandRows = 32;

}  // namespace

void CpuBackend::window_mean(const WindowMeanArgs& a) {
    const int threads = threads_;
    check_args(a);
    check_supported(*this, Op::WindowMean, {&a.input, &a.output});
    const Shape& s = a.input.shape;
    const int before = a.before(), after = a.after();
    const float* input = a.input.as<const float>();
    float* output = a.output.as<float>();
    // Pixels of the clipped box along x, per column (the same in every row).
    std::vector<double> widths(size_t(s.w));
    for (int x = 0; x < s.w; ++x)
        widths[size_t(x)] = double(std::min(s.w - 1, x + after) - std::max(0, x - before) + 1);
    const int band = std::max(kMinBandRows, a.window);
    const int bands = (s.h + band - 1) / band;
    const long tasks = long(s.n) * s.c * bands;
#pragma omp parallel num_threads(threads)
    {
        std::vector<double> columns(size_t(s.w)), prefix(size_t(s.w) + 1);
#pragma omp for schedule(static)
        for (long t = 0; t < tasks; ++t) {
            const long p = t / bands;  // plane n * C + c
            const int y_first = int(t % bands) * band, y_end = std::min(s.h, y_first + band);
            const float* src = input + size_t(p) * s.h * s.w;
            float* dst = output + size_t(p) * s.h * s.w;
            double* __restrict col = columns.data();
            std::fill(columns.begin(), columns.end(), 0.0);
            for (int r = std::max(0, y_first - before); r <= std::min(s.h - 1, y_first + after); ++r) {
                const float* __restrict line = src + size_t(r) * s.w;
                for (int x = 0; x < s.w; ++x) col[x] += double(line[x]);
            }
            for (int y = y_first; y < y_end; ++y) {
                if (y > y_first) {  // slide the box one row down
                    if (y + after < s.h) {
                        const float* __restrict line = src + size_t(y + after) * s.w;
                        for (int x = 0; x < s.w; ++x) col[x] += double(line[x]);
                    }
                    if (y - before - 1 >= 0) {
                        const float* __restrict line = src + size_t(y - before - 1) * s.w;
                        for (int x = 0; x < s.w; ++x) col[x] -= double(line[x]);
                    }
                }
                const double height = double(std::min(s.h - 1, y + after) - std::max(0, y - before) + 1);
                double* __restrict pre = prefix.data();
                pre[0] = 0.0;
                for (int x = 0; x < s.w; ++x) pre[x + 1] = pre[x] + col[x];
                float* __restrict out = dst + size_t(y) * s.w;
                for (int x = 0; x < s.w; ++x) {
                    const int x0 = std::max(0, x - before), x1 = std::min(s.w - 1, x + after);
                    out[x] = float((pre[x1 + 1] - pre[x0]) / (height * widths[size_t(x)]));
                }
            }
        }
    }
}

}  // namespace imr::cpu
