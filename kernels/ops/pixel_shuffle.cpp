// pixel_shuffle's argument check and float64 reference (pixel_shuffle.h).
#include "pixel_shuffle.h"

#include "error.h"
#include "reference_common.h"

namespace imr {

void check_args(const PixelShuffleArgs& a) {
    const Shape& in = a.input.shape;
    const bool to_depth = a.direction == ShuffleDirection::ToDepth;
    auto fail = [&](const std::string& what) {
        throw Error(std::string("pixel_shuffle ") + (to_depth ? "to depth " : "to space ") + in.str() + ", factor " +
                    std::to_string(a.factor) + ": " + what);
    };
    if (!positive(in) || a.factor <= 0) fail("sizes must be positive");
    if (a.factor > 64) fail("factor must be at most 64");
    if (to_depth && (in.h % a.factor || in.w % a.factor)) fail("height and width must be multiples of the factor");
    if (!to_depth && in.c % (a.factor * a.factor)) fail("channels must be a multiple of factor * factor");
    if (!to_depth && (size_t(in.h) * a.factor > size_t(1) << 30 || size_t(in.w) * a.factor > size_t(1) << 30))
        fail("output is too large");
    if (!a.input) fail("null input tensor");
    expect_tensor(a.output, "output", a.out_shape(), fail);
    if (!a.output.same_type(a.input))
        fail("output is " + a.output.str() + ", input " + a.input.str() + ": they must share a type");
    if (overlaps(a.input, a.output)) fail("output must not overlap input");
    if (a.residual) {
        expect_tensor(a.residual, "residual", a.out_shape(), fail);
        if (!a.residual.same_type(a.output))
            fail("residual is " + a.residual.str() + ", output " + a.output.str() + ": they must share a type");
        if (overlaps(a.residual, a.output)) fail("output must not overlap the residual");
    }
}

std::vector<double> reference_pixel_shuffle(const PixelShuffleArgs& a) {
    check_reference_args(a);
    const Shape o = a.out_shape();
    const int f = a.factor;
    const std::vector<double> input = reference_values(a.input);
    const std::vector<double> residual = a.residual ? reference_values(a.residual) : std::vector<double>();
    // Written from the ToDepth definition: the "deep" tensor [n][c*f*f + dy*f + dx][y][x]
    // and the "wide" one [n][c][y*f + dy][x*f + dx] hold the same values; the
    // direction says which of the two is the input.
    const bool to_depth = a.direction == ShuffleDirection::ToDepth;
    const Shape wide = to_depth ? a.input.shape : o;
    std::vector<double> out(o.count());
    for (int n = 0; n < wide.n; ++n)
        for (int c = 0; c < wide.c; ++c)
            for (int Y = 0; Y < wide.h; ++Y)
                for (int X = 0; X < wide.w; ++X) {
                    const int dc = c * f * f + (Y % f) * f + (X % f);
                    const size_t wi = ((size_t(n) * wide.c + c) * wide.h + Y) * wide.w + X;
                    const size_t di = ((size_t(n) * wide.c * f * f + dc) * (wide.h / f) + Y / f) * (wide.w / f) + X / f;
                    const size_t src = to_depth ? wi : di, dst = to_depth ? di : wi;
                    out[dst] = input[src] + (a.residual ? residual[dst] : 0.0);
                }
    return out;
}

}  // namespace imr
