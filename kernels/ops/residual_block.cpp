// residual_block's argument check (residual_block.h).
#include "residual_block.h"

#include "error.h"

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

}  // namespace imr
