// The float64 oracle (see reference.h). Every op is written the same way:
// pad the input into a float64 copy (pad_planes), then a plain "valid"
// cross-correlation over that copy (correlate_padded). The single-element
// versions spell the sums out with reference_pad_index instead.
#include "reference.h"

#include <cstddef>

namespace imr {

namespace {

// The Args must pass check_args; the reference never writes a.output, so the
// tests may leave it null.
template <class Args>
void check_reference_args(Args a) {
    float dummy = 0.0f;
    if (!a.output) a.output = &dummy;
    check_args(a);
}

// planes x [h, w] -> planes x [h + pb + pa, w + pb + pa] in float64.
template <class T>
std::vector<double> pad_planes(const T* in, int planes, int h, int w, int pb, int pa, PadMode mode) {
    const int hp = h + pb + pa, wp = w + pb + pa;
    std::vector<double> out(size_t(planes) * hp * wp);
#pragma omp parallel for schedule(static)
    for (int p = 0; p < planes; ++p) {
        const T* src = in + size_t(p) * h * w;
        double* dst = out.data() + size_t(p) * hp * wp;
        for (int y = 0; y < hp; ++y) {
            const int sy = reference_pad_index(y - pb, h, mode);
            for (int x = 0; x < wp; ++x) {
                const int sx = reference_pad_index(x - pb, w, mode);
                dst[size_t(y) * wp + x] = (sy < 0 || sx < 0) ? 0.0 : double(src[size_t(sy) * w + sx]);
            }
        }
    }
    return out;
}

// out[n, co, y, x] = bias[co] + sum over ci, ky, kx of
//                    weight[co, ci, ky, kx] * padded[n, ci, y + ky, x + kx]
// with padded [n, cin, hp, wp] and out [n, cout, hp - k + 1, wp - k + 1].
std::vector<double> correlate_padded(const std::vector<double>& padded, int n, int cin, int hp, int wp,
                                     const float* weight, const float* bias, int cout, int k) {
    const int ho = hp - k + 1, wo = wp - k + 1;
    std::vector<double> out(size_t(n) * cout * ho * wo);
    // One task per output row: parallel enough for a 3-channel image on 16
    // cores, and the row being summed stays in L1.
#pragma omp parallel for collapse(3) schedule(static)
    for (int b = 0; b < n; ++b) {
        for (int co = 0; co < cout; ++co) {
            for (int y = 0; y < ho; ++y) {
                double* o = out.data() + ((size_t(b) * cout + co) * ho + y) * wo;
                for (int x = 0; x < wo; ++x) o[x] = bias ? double(bias[co]) : 0.0;
                for (int ci = 0; ci < cin; ++ci) {
                    for (int ky = 0; ky < k; ++ky) {
                        const double* row = padded.data() + ((size_t(b) * cin + ci) * hp + y + ky) * wp;
                        for (int kx = 0; kx < k; ++kx) {
                            const double w = weight[((size_t(co) * cin + ci) * k + ky) * k + kx];
                            for (int x = 0; x < wo; ++x) o[x] += w * row[x + kx];
                        }
                    }
                }
            }
        }
    }
    return out;
}

// The conv2d epilogue after the bias: activation, then the residual.
double epilogue(const Conv2dArgs& a, double v, size_t i) {
    if (a.activation == Activation::ReLU) v = v > 0 ? v : 0.0;
    if (a.residual) v += double(a.residual[i]);
    return v;
}

}  // namespace

int reference_pad_index(int p, int size, PadMode mode) {
    if (p >= 0 && p < size) return p;
    switch (mode) {
        case PadMode::Zero:
            return -1;
        case PadMode::Reflect:
            return p < 0 ? -p : 2 * (size - 1) - p;
        case PadMode::Replicate:
            return p < 0 ? 0 : size - 1;
    }
    return -1;
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

std::vector<double> reference_pixel_shuffle(const PixelShuffleArgs& a) {
    check_reference_args(a);
    const Shape o = a.out_shape();
    const int f = a.factor;
    // Written from the ToDepth definition: the "deep" tensor [n][c*f*f + dy*f + dx][y][x]
    // and the "wide" one [n][c][y*f + dy][x*f + dx] hold the same values; the
    // direction says which of the two is the input.
    const bool to_depth = a.direction == ShuffleDirection::ToDepth;
    const Shape wide = to_depth ? a.in : o;
    std::vector<double> out(o.count());
    for (int n = 0; n < wide.n; ++n)
        for (int c = 0; c < wide.c; ++c)
            for (int Y = 0; Y < wide.h; ++Y)
                for (int X = 0; X < wide.w; ++X) {
                    const int dc = c * f * f + (Y % f) * f + (X % f);
                    const size_t wi = ((size_t(n) * wide.c + c) * wide.h + Y) * wide.w + X;
                    const size_t di = ((size_t(n) * wide.c * f * f + dc) * (wide.h / f) + Y / f) * (wide.w / f) + X / f;
                    const size_t src = to_depth ? wi : di, dst = to_depth ? di : wi;
                    out[dst] = double(a.input[src]) + (a.residual ? double(a.residual[dst]) : 0.0);
                }
    return out;
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
