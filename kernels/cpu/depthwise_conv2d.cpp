// depthwise_conv2d on the CPU (semantics in kernels/ops/depthwise_conv2d.h),
// f32 NCHW.
//
// Floor: 2 * K * K FLOPs and 8 bytes (read in, write out) per output element;
// K = 3 is memory-bound on any CPU (18 FLOPs / 8 bytes), K = 7 (98 / 8) is
// compute-bound on a few cores. A task is a band of up to kBandRows output
// rows of one channel plane: it pads the band's K - 1 + rows input rows once
// (any PadMode, columns through a precomputed column map) into its thread's
// buffer, then each output row is K * K passes of `out[x] += w * row[x + kx]`
// over contiguous floats, which the compiler vectorizes (AVX2 FMA); the
// padded band (<= 22 rows) stays in L1/L2. Parallel over (plane, band) with
// OpenMP. With the gate, a task computes its band of output channel c and
// of channel c + C/2 (into a thread buffer) and multiplies them.
#include <algorithm>
#include <vector>

#include "cpu_backend.h"
#include "direct_conv.h"

namespace imr::cpu {

namespace {

// Output rows per task: the K - 1 extra padded rows are <= 6/16 of a band's
// copies, and planes x bands is many tasks for any realistic image.
constexpr int kBandRows = 16;

}  // namespace

void CpuBackend::depthwise_conv2d(const DepthwiseConv2dArgs& a) {
    const int threads = threads_;
    check_args(a);
    check_supported(*this, Op::DepthwiseConv2d, {&a.input, &a.output});
    const Shape& s = a.input.shape;
    const Shape o = a.out_shape();  // with the gate: C/2 channels
    const int k = a.kernel, wp = s.w + a.pad_before + a.pad_after;
    const float* input = a.input.as<const float>();
    float* output = a.output.as<float>();
    const float* weight = a.weight.as<const float>();
    const float* bias = a.bias.as<const float>();
    std::vector<int> columns(static_cast<size_t>(wp));  // padded column -> source column or -1
    for (int x = 0; x < wp; ++x) columns[size_t(x)] = source_index(x - a.pad_before, s.w, a.pad_mode);
    const int bands = (o.h + kBandRows - 1) / kBandRows;
    const long tasks = long(o.n) * o.c * bands;
#pragma omp parallel num_threads(threads)
    {
        std::vector<float> padded(size_t(kBandRows + k - 1) * wp);
        std::vector<float> second(a.gate ? size_t(kBandRows) * o.w : 0);  // the gate's second half
        // Rows y0 .. y0 + rows - 1 of input channel c of image n into dst (rows of o.w floats).
        const auto band = [&](int n, int c, int y0, int rows, float* dst) {
            const float* src = input + (size_t(n) * s.c + c) * s.h * s.w;
            // Padded rows y0 .. y0 + rows + K - 2 of this plane.
            for (int r = 0; r < rows + k - 1; ++r) {
                float* row = padded.data() + size_t(r) * wp;
                const int sy = source_index(y0 + r - a.pad_before, s.h, a.pad_mode);
                if (sy < 0) {
                    std::fill(row, row + wp, 0.0f);
                    continue;
                }
                const float* line = src + size_t(sy) * s.w;
                for (int x = 0; x < wp; ++x) row[x] = columns[size_t(x)] < 0 ? 0.0f : line[columns[size_t(x)]];
            }
            const float* w = weight + size_t(c) * k * k;
            const float b = bias ? bias[c] : 0.0f;
            for (int r = 0; r < rows; ++r) {
                float* __restrict out = dst + size_t(r) * o.w;
                std::fill(out, out + o.w, b);
                for (int ky = 0; ky < k; ++ky) {
                    const float* __restrict line = padded.data() + size_t(r + ky) * wp;
                    for (int kx = 0; kx < k; ++kx) {
                        const float wv = w[ky * k + kx];
                        for (int x = 0; x < o.w; ++x) out[x] += wv * line[x + kx];
                    }
                }
            }
        };
#pragma omp for schedule(static)
        for (long t = 0; t < tasks; ++t) {
            const long p = t / bands;  // output plane n * C_out + c
            const int n = int(p / o.c), c = int(p % o.c);
            const int y0 = int(t % bands) * kBandRows, rows = std::min(kBandRows, o.h - y0);
            float* __restrict out = output + (size_t(p) * o.h + y0) * o.w;
            band(n, c, y0, rows, out);
            if (!a.gate) continue;
            band(n, c + o.c, y0, rows, second.data());
            const float* __restrict g = second.data();
            for (size_t i = 0; i < size_t(rows) * o.w; ++i) out[i] *= g[i];
        }
    }
}

}  // namespace imr::cpu
