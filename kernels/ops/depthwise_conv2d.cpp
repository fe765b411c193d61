// depthwise_conv2d's argument check and float64 reference (depthwise_conv2d.h).
#include "depthwise_conv2d.h"

#include "error.h"
#include "reference_common.h"

namespace imr {

void check_args(const DepthwiseConv2dArgs& a) {
    const Shape& in = a.input.shape;
    auto fail = [&](const std::string& what) {
        throw Error("depthwise_conv2d " + in.str() + ", kernel " + std::to_string(a.kernel) + ", padding " +
                    std::to_string(a.pad_before) + "/" + std::to_string(a.pad_after) + " " + pad_mode_name(a.pad_mode) +
                    ": " + what);
    };
    if (!positive(in) || a.kernel <= 0) fail("sizes must be positive");
    if (a.kernel % 2 == 0 || a.kernel > kDepthwiseMaxKernel)
        fail("kernel must be odd and at most " + std::to_string(kDepthwiseMaxKernel));
    if (a.gate && in.c % 2 != 0) fail("the gate needs an even channel count");
    if (a.pad_before < 0 || a.pad_after < 0) fail("padding must not be negative");
    if (a.pad_mode != PadMode::Zero && a.pad_mode != PadMode::Reflect && a.pad_mode != PadMode::Replicate)
        fail("unknown padding mode");
    const Shape out = a.out_shape();
    if (out.h <= 0 || out.w <= 0) fail("kernel is larger than the padded image");
    // Reflect mirrors without repeating the edge, so it can extend by at most size-1.
    if (a.pad_mode == PadMode::Reflect &&
        (a.pad_before > in.h - 1 || a.pad_after > in.h - 1 || a.pad_before > in.w - 1 || a.pad_after > in.w - 1))
        fail("reflect padding needs the image to be larger than the padding");
    if (!a.input) fail("null input tensor");
    expect_tensor(a.output, "output", out, fail);
    if (!a.output.same_type(a.input))
        fail("output is " + a.output.str() + ", input " + a.input.str() + ": they must share a type");
    expect_tensor(a.weight, "weight", {in.c, 1, a.kernel, a.kernel}, fail);
    expect_f32_nchw(a.weight, "weight", fail);
    if (a.bias) {
        expect_tensor(a.bias, "bias", {1, in.c, 1, 1}, fail);
        expect_f32_nchw(a.bias, "bias", fail);
    }
    if (overlaps(a.input, a.output)) fail("output must not overlap input");
}

std::vector<double> reference_depthwise_conv2d(const DepthwiseConv2dArgs& a) {
    check_reference_args(a);
    const Shape& s = a.input.shape;
    const Shape o = {s.n, s.c, a.out_shape().h, a.out_shape().w};  // before the gate
    const int k = a.kernel;
    const std::vector<double> input = reference_values(a.input);
    // One plane at a time through the shared padding (pad_planes) and a
    // single-channel correlation: channel c of image n is plane n * C + c.
    const std::vector<double> padded =
        pad_planes(input.data(), s.n * s.c, s.h, s.w, a.pad_before, a.pad_after, a.pad_mode);
    const int hp = s.h + a.pad_before + a.pad_after, wp = s.w + a.pad_before + a.pad_after;
    const float* weight = a.weight.as<const float>();
    const float* bias = a.bias.as<const float>();
    std::vector<double> out(o.count());
#pragma omp parallel for collapse(2) schedule(static)
    for (int p = 0; p < s.n * s.c; ++p)
        for (int y = 0; y < o.h; ++y) {
            const int c = p % s.c;
            double* row = out.data() + (size_t(p) * o.h + y) * o.w;
            for (int x = 0; x < o.w; ++x) {
                double sum = bias ? double(bias[c]) : 0.0;
                for (int ky = 0; ky < k; ++ky)
                    for (int kx = 0; kx < k; ++kx)
                        sum += double(weight[(size_t(c) * k + ky) * k + kx]) *
                               padded[(size_t(p) * hp + y + ky) * wp + x + kx];
                row[x] = sum;
            }
        }
    if (!a.gate) return out;
    const size_t plane = size_t(o.h) * o.w;
    const int half = s.c / 2;
    std::vector<double> gated(a.out_shape().count());
    for (int n = 0; n < s.n; ++n)
        for (int c = 0; c < half; ++c)
            for (size_t i = 0; i < plane; ++i)
                gated[(size_t(n) * half + c) * plane + i] =
                    out[(size_t(n) * s.c + c) * plane + i] * out[(size_t(n) * s.c + c + half) * plane + i];
    return gated;
}

}  // namespace imr
