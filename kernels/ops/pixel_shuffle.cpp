// pixel_shuffle's argument check (pixel_shuffle.h).
#include "pixel_shuffle.h"

#include "error.h"

namespace imr {

void check_args(const PixelShuffleArgs& a) {
    const bool to_depth = a.direction == ShuffleDirection::ToDepth;
    auto fail = [&](const std::string& what) {
        throw Error(std::string("pixel_shuffle ") + (to_depth ? "to depth " : "to space ") + a.in.str() + ", factor " +
                    std::to_string(a.factor) + ": " + what);
    };
    if (!positive(a.in) || a.factor <= 0) fail("sizes must be positive");
    if (a.factor > 64) fail("factor must be at most 64");
    if (to_depth && (a.in.h % a.factor || a.in.w % a.factor)) fail("height and width must be multiples of the factor");
    if (!to_depth && a.in.c % (a.factor * a.factor)) fail("channels must be a multiple of factor * factor");
    if (!to_depth && (size_t(a.in.h) * a.factor > size_t(1) << 30 || size_t(a.in.w) * a.factor > size_t(1) << 30))
        fail("output is too large");
    if (!a.input || !a.output) fail("null tensor pointer");
    if (a.input == a.output) fail("output must not alias input");
    if (a.residual == a.output) fail("output must not alias the residual");
}

}  // namespace imr
