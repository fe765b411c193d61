// layer_norm's argument check and float64 reference (layer_norm.h).
#include "layer_norm.h"

#include <cmath>
#include <sstream>

#include "error.h"
#include "reference_common.h"

namespace imr {

void check_args(const LayerNormArgs& a) {
    const Shape& in = a.input.shape;
    auto fail = [&](const std::string& what) {
        std::ostringstream eps;
        eps << a.eps;
        throw Error("layer_norm " + in.str() + ", eps " + eps.str() + ": " + what);
    };
    if (!positive(in)) fail("sizes must be positive");
    if (!(std::isfinite(a.eps) && a.eps > 0)) fail("eps must be finite and positive");
    if (!a.input) fail("null input tensor");
    expect_tensor(a.output, "output", in, fail);
    if (!a.output.same_type(a.input))
        fail("output is " + a.output.str() + ", input " + a.input.str() + ": they must share a type");
    expect_tensor(a.weight, "weight", {1, in.c, 1, 1}, fail);
    expect_f32_nchw(a.weight, "weight", fail);
    expect_tensor(a.bias, "bias", {1, in.c, 1, 1}, fail);
    expect_f32_nchw(a.bias, "bias", fail);
    if (overlaps(a.input, a.output)) fail("output must not overlap input");
}

std::vector<double> reference_layer_norm(const LayerNormArgs& a) {
    check_reference_args(a);
    const Shape& s = a.input.shape;
    const std::vector<double> in = reference_values(a.input);
    const float* weight = a.weight.as<const float>();
    const float* bias = a.bias.as<const float>();
    std::vector<double> out(s.count());
    const size_t plane = size_t(s.h) * s.w;
#pragma omp parallel for collapse(2) schedule(static)
    for (int n = 0; n < s.n; ++n)
        for (int y = 0; y < s.h; ++y)
            for (int x = 0; x < s.w; ++x) {
                const size_t base = size_t(n) * s.c * plane + size_t(y) * s.w + x;
                double mean = 0;
                for (int c = 0; c < s.c; ++c) mean += in[base + c * plane];
                mean /= s.c;
                double var = 0;
                for (int c = 0; c < s.c; ++c) var += (in[base + c * plane] - mean) * (in[base + c * plane] - mean);
                var /= s.c;
                const double inv = 1.0 / std::sqrt(var + double(a.eps));
                for (int c = 0; c < s.c; ++c)
                    out[base + c * plane] = (in[base + c * plane] - mean) * inv * double(weight[c]) + double(bias[c]);
            }
    return out;
}

}  // namespace imr
