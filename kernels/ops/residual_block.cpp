// residual_block's argument check and float64 reference (residual_block.h).
#include "residual_block.h"

#include "error.h"
#include "reference_common.h"

namespace imr {

void check_args(const ResidualBlockArgs& a) {
    const Shape& s = a.input.shape;
    auto fail = [&](const std::string& what) {
        throw Error("residual_block " + s.str() + " hidden " + std::to_string(a.hidden) + ": " + what);
    };
    if (!positive(s) || a.hidden <= 0) fail("sizes must be positive");
    if (!a.input) fail("null input tensor");
    expect_tensor(a.output, "output", s, fail);
    expect_tensor(a.conv_in_weight, "conv_in_weight", {a.hidden, s.c, 3, 3}, fail);
    expect_tensor(a.conv_in_bias, "conv_in_bias", {1, a.hidden, 1, 1}, fail);
    expect_tensor(a.conv_out_weight, "conv_out_weight", {s.c, a.hidden, 3, 3}, fail);
    expect_tensor(a.conv_out_bias, "conv_out_bias", {1, s.c, 1, 1}, fail);
    for (const auto& [t, name] : {std::pair{&a.input, "input"},
                                  {&a.output, "output"},
                                  {&a.conv_in_weight, "conv_in_weight"},
                                  {&a.conv_in_bias, "conv_in_bias"},
                                  {&a.conv_out_weight, "conv_out_weight"},
                                  {&a.conv_out_bias, "conv_out_bias"}})
        expect_f32_nchw(*t, name, fail);
    if (overlaps(a.input, a.output)) fail("output must not overlap input");
}

std::vector<double> reference_residual_block(const ResidualBlockArgs& a) {
    check_reference_args(a);
    const Shape& s = a.input.shape;
    const float* x = a.input.as<const float>();
    const std::vector<double> in_padded = pad_planes(x, s.n * s.c, s.h, s.w, 1, 1, PadMode::Zero);
    const std::vector<double> hidden =
        correlate_padded(in_padded, s.n, s.c, s.h + 2, s.w + 2, a.conv_in_weight.as<const float>(),
                         a.conv_in_bias.as<const float>(), a.hidden, 3);
    const std::vector<double> hidden_padded = pad_planes(hidden.data(), s.n * a.hidden, s.h, s.w, 1, 1, PadMode::Zero);
    std::vector<double> out =
        correlate_padded(hidden_padded, s.n, a.hidden, s.h + 2, s.w + 2, a.conv_out_weight.as<const float>(),
                         a.conv_out_bias.as<const float>(), s.c, 3);
    for (size_t i = 0; i < out.size(); ++i) out[i] += double(x[i]);
    return out;
}

double reference_residual_block_at(const ResidualBlockArgs& a, int n, int c, int y, int x) {
    const Shape& s = a.input.shape;
    const float* input = a.input.as<const float>();
    const float *w_in = a.conv_in_weight.as<const float>(), *b_in = a.conv_in_bias.as<const float>();
    const float *w_out = a.conv_out_weight.as<const float>(), *b_out = a.conv_out_bias.as<const float>();
    auto input_at = [&](int ci, int yy, int xx) {
        if (yy < 0 || yy >= s.h || xx < 0 || xx >= s.w) return 0.0;
        return double(input[((size_t(n) * s.c + ci) * s.h + yy) * s.w + xx]);
    };
    // The hidden activation is zero-padded too: zero outside the image.
    auto hidden_at = [&](int h, int yy, int xx) {
        if (yy < 0 || yy >= s.h || xx < 0 || xx >= s.w) return 0.0;
        double sum = b_in[h];
        for (int ci = 0; ci < s.c; ++ci)
            for (int ky = 0; ky < 3; ++ky)
                for (int kx = 0; kx < 3; ++kx)
                    sum += double(w_in[((size_t(h) * s.c + ci) * 3 + ky) * 3 + kx]) *
                           input_at(ci, yy + ky - 1, xx + kx - 1);
        return sum;
    };
    double sum = b_out[c];
    for (int h = 0; h < a.hidden; ++h)
        for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx)
                sum += double(w_out[((size_t(c) * a.hidden + h) * 3 + ky) * 3 + kx]) *
                       hidden_at(h, y + ky - 1, x + kx - 1);
    return input_at(c, y, x) + sum;
}

}  // namespace imr
