// activation's argument check and float64 reference (activation.h).
#include "activation.h"

#include <cmath>

#include "error.h"
#include "reference_common.h"

namespace imr {

const char* unary_function_name(UnaryFunction f) {
    switch (f) {
        case UnaryFunction::ReLU:
            return "relu";
        case UnaryFunction::LeakyReLU:
            return "leaky_relu";
        case UnaryFunction::GELU:
            return "gelu";
        case UnaryFunction::SiLU:
            return "silu";
    }
    return "unknown";
}

void check_args(const ActivationArgs& a) {
    auto fail = [&](const std::string& what) {
        throw Error(std::string("activation ") + unary_function_name(a.function) + " " + a.input.shape.str() + ": " +
                    what);
    };
    switch (a.function) {
        case UnaryFunction::ReLU:
        case UnaryFunction::LeakyReLU:
        case UnaryFunction::GELU:
        case UnaryFunction::SiLU:
            break;
        default:
            fail("unknown function");
    }
    if (!std::isfinite(a.slope)) fail("slope must be finite");
    if (!positive(a.input.shape)) fail("sizes must be positive");
    if (!a.input) fail("null input tensor");
    expect_tensor(a.output, "output", a.out_shape(), fail);
    if (!a.output.same_type(a.input))
        fail("output is " + a.output.str() + ", input " + a.input.str() + ": they must share a type");
    if (overlaps(a.output, a.input)) fail("output must not overlap input");
}

std::vector<double> reference_activation(const ActivationArgs& a) {
    check_reference_args(a);
    std::vector<double> v = reference_values(a.input);
    const double slope = a.slope;
    for (double& x : v) {
        switch (a.function) {
            case UnaryFunction::ReLU:
                x = x < 0 ? 0.0 : x;
                break;
            case UnaryFunction::LeakyReLU:
                x = x < 0 ? slope * x : x;
                break;
            case UnaryFunction::GELU:
                x = 0.5 * x * std::erfc(-x / std::sqrt(2.0));
                break;
            case UnaryFunction::SiLU:
                x = x / (1.0 + std::exp(-x));
                break;
        }
    }
    return v;
}

}  // namespace imr
