// conv2d's argument check and the names of its padding modes and activations
// (conv2d.h).
#include "conv2d.h"

#include "error.h"

namespace imr {

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

}  // namespace imr
