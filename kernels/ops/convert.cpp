// convert's argument check and float64 reference (convert.h).
#include "convert.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "error.h"
#include "reference_common.h"

namespace imr {

void check_args(const ConvertArgs& a) {
    auto fail = [&](const std::string& what) {
        throw Error("convert " + a.input.str() + " -> " + std::string(dtype_name(a.output.dtype)) + " " +
                    layout_name(a.output.layout) + ": " + what);
    };
    if (!positive(a.input.shape)) fail("sizes must be positive");
    if (!a.input) fail("null input tensor");
    expect_tensor(a.output, "output", a.input.shape, fail);
    if (overlaps(a.input, a.output)) fail("output must not overlap input");
}

double reference_round(double v, DType t) {
    if (!std::isfinite(v) || v == 0) return v;
    // Mantissa bits after the point, the smallest normal exponent and the
    // largest finite value of each type.
    int mantissa = 23, min_exp = -126;
    double max_finite = std::numeric_limits<float>::max();
    if (t == DType::F16) mantissa = 10, min_exp = -14, max_finite = 65504.0;
    if (t == DType::BF16) mantissa = 7, max_finite = std::ldexp(255.0 / 128.0, 127);
    int e = 0;
    std::frexp(v, &e);  // |v| in [2^(e-1), 2^e)
    const int exponent = std::max(e - 1, min_exp);
    const double quantum = std::ldexp(1.0, exponent - mantissa);
    // v / quantum is exact (a power of two); nearbyint rounds half to even in
    // the default rounding mode.
    const double r = std::nearbyint(v / quantum) * quantum;
    // Beyond the largest finite value by half a quantum or more: infinity
    // (what round to nearest even gives for the next, unrepresentable, binade).
    if (std::fabs(r) > max_finite) return std::copysign(std::numeric_limits<double>::infinity(), v);
    return r;
}

std::vector<double> reference_convert(const ConvertArgs& a) {
    check_reference_args(a);
    std::vector<double> out = reference_values(a.input);
    for (double& v : out) v = reference_round(v, a.output.dtype);
    return out;
}

}  // namespace imr
