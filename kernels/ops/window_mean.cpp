// window_mean's argument check and float64 reference (window_mean.h).
#include "window_mean.h"

#include <algorithm>

#include "error.h"
#include "reference_common.h"

namespace imr {

void check_args(const WindowMeanArgs& a) {
    const Shape& in = a.input.shape;
    auto fail = [&](const std::string& what) {
        throw Error("window_mean " + in.str() + ", window " + std::to_string(a.window) + ": " + what);
    };
    if (!positive(in)) fail("sizes must be positive");
    if (a.window < 1 || a.window > kWindowMeanMaxWindow)
        fail("window must be 1.." + std::to_string(kWindowMeanMaxWindow));
    if (!a.input) fail("null input tensor");
    expect_tensor(a.output, "output", in, fail);
    if (!a.output.same_type(a.input))
        fail("output is " + a.output.str() + ", input " + a.input.str() + ": they must share a type");
    if (overlaps(a.input, a.output)) fail("output must not overlap input");
}

std::vector<double> reference_window_mean(const WindowMeanArgs& a) {
    check_reference_args(a);
    const Shape& s = a.input.shape;
    const int before = a.before(), after = a.after();
    const std::vector<double> in = reference_values(a.input);
    // Separable: the sum over the box is the sum over its rows of each row's
    // sum over the box's columns, and the clipped box's pixel count is the
    // product of its clipped height and width.
    std::vector<double> row_sums(in.size()), out(in.size());
#pragma omp parallel for collapse(2) schedule(static)
    for (int p = 0; p < s.n * s.c; ++p)
        for (int y = 0; y < s.h; ++y) {
            const double* src = in.data() + (size_t(p) * s.h + y) * s.w;
            double* dst = row_sums.data() + (size_t(p) * s.h + y) * s.w;
            for (int x = 0; x < s.w; ++x) {
                double sum = 0;
                for (int i = std::max(0, x - before); i <= std::min(s.w - 1, x + after); ++i) sum += src[i];
                dst[x] = sum;
            }
        }
#pragma omp parallel for collapse(2) schedule(static)
    for (int p = 0; p < s.n * s.c; ++p)
        for (int y = 0; y < s.h; ++y) {
            const int y0 = std::max(0, y - before), y1 = std::min(s.h - 1, y + after);
            for (int x = 0; x < s.w; ++x) {
                const int x0 = std::max(0, x - before), x1 = std::min(s.w - 1, x + after);
                double sum = 0;
                for (int i = y0; i <= y1; ++i) sum += row_sums[(size_t(p) * s.h + i) * s.w + x];
                out[(size_t(p) * s.h + y) * s.w + x] = sum / (double(y1 - y0 + 1) * double(x1 - x0 + 1));
            }
        }
    return out;
}

}  // namespace imr
