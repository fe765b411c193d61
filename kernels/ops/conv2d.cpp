// conv2d's argument check, float64 reference and the names of its padding
// modes and activations (conv2d.h).
#include "conv2d.h"

#include "error.h"
#include "reference_common.h"

namespace imr {

namespace {

// The conv2d epilogue after the bias: activation, then the residual at (n, c, y, x).
double epilogue(const Conv2dArgs& a, double v, int n, int c, int y, int x) {
    if (a.activation == Activation::ReLU) v = v > 0 ? v : 0.0;
    if (!a.residual) return v;
    const double r = reference_value(a.residual, n, c, y, x);
    return a.residual_op == ResidualOp::Multiply ? v * r : v + r;
}

}  // namespace

const char* pad_mode_name(PadMode mode) {
    switch (mode) {
        case PadMode::Zero:
            return "zero";
        case PadMode::Reflect:
            return "reflect";
        case PadMode::Replicate:
            return "replicate";
    }
    return "?";
}

const char* activation_name(Activation a) {
    switch (a) {
        case Activation::None:
            return "none";
        case Activation::ReLU:
            return "relu";
    }
    return "?";
}

void check_args(const Conv2dArgs& a) {
    const Shape& in = a.input.shape;
    auto fail = [&](const std::string& what) {
        throw Error("conv2d " + in.str() + " -> " + std::to_string(a.out_channels) + " channels, kernel " +
                    std::to_string(a.kernel) + ", padding " + std::to_string(a.pad_before) + "/" +
                    std::to_string(a.pad_after) + " " + pad_mode_name(a.pad_mode) + ": " + what);
    };
    if (!positive(in) || a.out_channels <= 0 || a.kernel <= 0) fail("sizes must be positive");
    if (a.pad_before < 0 || a.pad_after < 0) fail("padding must not be negative");
    if (a.gate && (a.out_channels % 2 != 0 || a.activation != Activation::None || a.residual))
        fail("the gate needs an even channel count, and no activation or residual");
    Shape out = a.out_shape();
    if (out.h <= 0 || out.w <= 0) fail("kernel is larger than the padded image");
    // Reflect mirrors without repeating the edge, so it can extend by at most size-1.
    if (a.pad_mode == PadMode::Reflect &&
        (a.pad_before > in.h - 1 || a.pad_after > in.h - 1 || a.pad_before > in.w - 1 || a.pad_after > in.w - 1))
        fail("reflect padding needs the image to be larger than the padding");
    if (!a.input) fail("null input tensor");
    expect_tensor(a.output, "output", out, fail);
    expect_tensor(a.weight, "weight", {a.out_channels, in.c, a.kernel, a.kernel}, fail);
    expect_f32_nchw(a.weight, "weight", fail);
    if (a.bias) {
        expect_tensor(a.bias, "bias", {1, a.out_channels, 1, 1}, fail);
        expect_f32_nchw(a.bias, "bias", fail);
    }
    if (overlaps(a.input, a.output)) fail("output must not overlap input");
    if (a.residual) {
        expect_tensor(a.residual, "residual", out, fail);
        if (!a.residual.same_type(a.output))
            fail("residual is " + a.residual.str() + ", output " + a.output.str() + ": they must share a type");
        if (overlaps(a.residual, a.output)) fail("output must not overlap the residual");
    }
    if (a.activation != Activation::None && a.activation != Activation::ReLU) fail("unknown activation");
}

std::vector<double> reference_conv2d(const Conv2dArgs& a) {
    check_reference_args(a);
    const Shape& s = a.input.shape;
    const std::vector<double> input = reference_values(a.input);
    std::vector<double> padded = pad_planes(input.data(), s.n * s.c, s.h, s.w, a.pad_before, a.pad_after, a.pad_mode);
    std::vector<double> out =
        correlate_padded(padded, s.n, s.c, s.h + a.pad_before + a.pad_after, s.w + a.pad_before + a.pad_after,
                         a.weight.as<const float>(), a.bias.as<const float>(), a.out_channels, a.kernel);
    const Shape o = a.out_shape();
    if (a.gate) {  // the sums' first half times their second (no activation or residual with it)
        const size_t plane = size_t(o.h) * o.w;
        std::vector<double> gated(o.count());
        for (int n = 0; n < o.n; ++n)
            for (int c = 0; c < o.c; ++c)
                for (size_t i = 0; i < plane; ++i)
                    gated[(size_t(n) * o.c + c) * plane + i] = out[(size_t(n) * a.out_channels + c) * plane + i] *
                                                               out[(size_t(n) * a.out_channels + c + o.c) * plane + i];
        return gated;
    }
    for (int n = 0; n < o.n; ++n)
        for (int c = 0; c < o.c; ++c)
            for (int y = 0; y < o.h; ++y)
                for (int x = 0; x < o.w; ++x) {
                    double& v = out[((size_t(n) * o.c + c) * o.h + y) * o.w + x];
                    v = epilogue(a, v, n, c, y, x);
                }
    return out;
}

double reference_conv2d_at(const Conv2dArgs& a, int n, int co, int y, int x) {
    if (a.gate) {
        Conv2dArgs sums = a;
        sums.gate = false;
        return reference_conv2d_at(sums, n, co, y, x) * reference_conv2d_at(sums, n, co + a.out_channels / 2, y, x);
    }
    const Shape& s = a.input.shape;
    const int k = a.kernel;
    const float* weight = a.weight.as<const float>();
    double sum = a.bias ? double(a.bias.as<const float>()[co]) : 0.0;
    for (int ci = 0; ci < s.c; ++ci) {
        for (int ky = 0; ky < k; ++ky) {
            const int sy = reference_pad_index(y + ky - a.pad_before, s.h, a.pad_mode);
            if (sy < 0) continue;
            for (int kx = 0; kx < k; ++kx) {
                const int sx = reference_pad_index(x + kx - a.pad_before, s.w, a.pad_mode);
                if (sx < 0) continue;
                sum += double(weight[((size_t(co) * s.c + ci) * k + ky) * k + kx]) *
                       reference_value(a.input, n, ci, sy, sx);
            }
        }
    }
    return epilogue(a, sum, n, co, y, x);
}

}  // namespace imr
