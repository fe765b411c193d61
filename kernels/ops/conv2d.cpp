// conv2d's argument check, float64 reference and the names of its padding
// modes and activations (conv2d.h).
#include "conv2d.h"

#include "error.h"
#include "reference_common.h"

namespace imr {

namespace {

// The conv2d epilogue after the bias: activation, then the residual.
double epilogue(const Conv2dArgs& a, double v, size_t i) {
    if (a.activation == Activation::ReLU) v = v > 0 ? v : 0.0;
    if (a.residual) v += double(a.residual[i]);
    return v;
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
    auto fail = [&](const std::string& what) {
        throw Error("conv2d " + a.in.str() + " -> " + std::to_string(a.out_channels) + " channels, kernel " +
                    std::to_string(a.kernel) + ", padding " + std::to_string(a.pad_before) + "/" +
                    std::to_string(a.pad_after) + " " + pad_mode_name(a.pad_mode) + ": " + what);
    };
    if (!positive(a.in) || a.out_channels <= 0 || a.kernel <= 0) fail("sizes must be positive");
    if (a.pad_before < 0 || a.pad_after < 0) fail("padding must not be negative");
    Shape out = a.out_shape();
    if (out.h <= 0 || out.w <= 0) fail("kernel is larger than the padded image");
    // Reflect mirrors without repeating the edge, so it can extend by at most size-1.
    if (a.pad_mode == PadMode::Reflect && (a.pad_before > a.in.h - 1 || a.pad_after > a.in.h - 1 ||
                                           a.pad_before > a.in.w - 1 || a.pad_after > a.in.w - 1))
        fail("reflect padding needs the image to be larger than the padding");
    if (!a.input || !a.output || !a.weight) fail("null tensor pointer");
    if (a.input == a.output) fail("output must not alias input");
    if (a.residual == a.output) fail("output must not alias the residual");
    if (a.activation != Activation::None && a.activation != Activation::ReLU) fail("unknown activation");
}

std::vector<double> reference_conv2d(const Conv2dArgs& a) {
    check_reference_args(a);
    const Shape& s = a.in;
    std::vector<double> padded = pad_planes(a.input, s.n * s.c, s.h, s.w, a.pad_before, a.pad_after, a.pad_mode);
    std::vector<double> out =
        correlate_padded(padded, s.n, s.c, s.h + a.pad_before + a.pad_after, s.w + a.pad_before + a.pad_after, a.weight,
                         a.bias, a.out_channels, a.kernel);
    for (size_t i = 0; i < out.size(); ++i) out[i] = epilogue(a, out[i], i);
    return out;
}

double reference_conv2d_at(const Conv2dArgs& a, int n, int co, int y, int x) {
    const Shape& s = a.in;
    const int k = a.kernel;
    double sum = a.bias ? double(a.bias[co]) : 0.0;
    for (int ci = 0; ci < s.c; ++ci) {
        for (int ky = 0; ky < k; ++ky) {
            const int sy = reference_pad_index(y + ky - a.pad_before, s.h, a.pad_mode);
            if (sy < 0) continue;
            for (int kx = 0; kx < k; ++kx) {
                const int sx = reference_pad_index(x + kx - a.pad_before, s.w, a.pad_mode);
                if (sx < 0) continue;
                sum += double(a.weight[((size_t(co) * s.c + ci) * k + ky) * k + kx]) *
                       double(a.input[((size_t(n) * s.c + ci) * s.h + sy) * s.w + sx]);
            }
        }
    }
    const Shape o = a.out_shape();
    return epilogue(a, sum, ((size_t(n) * o.c + co) * o.h + y) * o.w + x);
}

}  // namespace imr
