// residual_block's argument check and float64 reference (residual_block.h).
#include "residual_block.h"

#include "error.h"
#include "reference_common.h"

namespace imr {

void check_args(const ResidualBlockArgs& a) {
    auto fail = [&](const std::string& what) {
        throw Error("residual_block " + a.shape.str() + " hidden " + std::to_string(a.hidden) + ": " + what);
    };
    if (!positive(a.shape) || a.hidden <= 0) fail("sizes must be positive");
    if (!a.input || !a.output || !a.conv_in_weight || !a.conv_in_bias || !a.conv_out_weight || !a.conv_out_bias)
        fail("null tensor pointer");
    if (a.input == a.output) fail("output must not alias input");
}

std::vector<double> reference_residual_block(const ResidualBlockArgs& a) {
    check_reference_args(a);
    const Shape& s = a.shape;
    const std::vector<double> in_padded = pad_planes(a.input, s.n * s.c, s.h, s.w, 1, 1, PadMode::Zero);
    const std::vector<double> hidden =
        correlate_padded(in_padded, s.n, s.c, s.h + 2, s.w + 2, a.conv_in_weight, a.conv_in_bias, a.hidden, 3);
    const std::vector<double> hidden_padded = pad_planes(hidden.data(), s.n * a.hidden, s.h, s.w, 1, 1, PadMode::Zero);
    std::vector<double> out =
        correlate_padded(hidden_padded, s.n, a.hidden, s.h + 2, s.w + 2, a.conv_out_weight, a.conv_out_bias, s.c, 3);
    for (size_t i = 0; i < out.size(); ++i) out[i] += double(a.input[i]);
    return out;
}

double reference_residual_block_at(const ResidualBlockArgs& a, int n, int c, int y, int x) {
    const Shape& s = a.shape;
    auto input_at = [&](int ci, int yy, int xx) {
        if (yy < 0 || yy >= s.h || xx < 0 || xx >= s.w) return 0.0;
        return double(a.input[((size_t(n) * s.c + ci) * s.h + yy) * s.w + xx]);
    };
    // The hidden activation is zero-padded too: zero outside the image.
    auto hidden_at = [&](int h, int yy, int xx) {
        if (yy < 0 || yy >= s.h || xx < 0 || xx >= s.w) return 0.0;
        double sum = a.conv_in_bias[h];
        for (int ci = 0; ci < s.c; ++ci)
            for (int ky = 0; ky < 3; ++ky)
                for (int kx = 0; kx < 3; ++kx)
                    sum += double(a.conv_in_weight[((size_t(h) * s.c + ci) * 3 + ky) * 3 + kx]) *
                           input_at(ci, yy + ky - 1, xx + kx - 1);
        return sum;
    };
    double sum = a.conv_out_bias[c];
    for (int h = 0; h < a.hidden; ++h)
        for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx)
                sum += double(a.conv_out_weight[((size_t(c) * a.hidden + h) * 3 + ky) * 3 + kx]) *
                       hidden_at(h, y + ky - 1, x + kx - 1);
    return input_at(c, y, x) + sum;
}

}  // namespace imr
