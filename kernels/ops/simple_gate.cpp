// simple_gate's argument check and float64 reference (simple_gate.h).
#include "simple_gate.h"

#include "error.h"
#include "reference_common.h"

namespace imr {

void check_args(const SimpleGateArgs& a) {
    auto fail = [&](const std::string& what) { throw Error("simple_gate " + a.input.shape.str() + ": " + what); };
    if (!positive(a.input.shape)) fail("sizes must be positive");
    if (a.input.shape.c % 2) fail("channels must be even");
    if (!a.input) fail("null input tensor");
    expect_tensor(a.output, "output", a.out_shape(), fail);
    if (!a.output.same_type(a.input))
        fail("output is " + a.output.str() + ", input " + a.input.str() + ": they must share a type");
    if (overlaps(a.output, a.input)) fail("output must not overlap input");
}

std::vector<double> reference_simple_gate(const SimpleGateArgs& a) {
    check_reference_args(a);
    const Shape& s = a.input.shape;
    const int half = s.c / 2;
    const size_t plane = size_t(s.h) * s.w;
    const std::vector<double> in = reference_values(a.input);
    std::vector<double> out(a.out_shape().count());
    for (int n = 0; n < s.n; ++n)
        for (int c = 0; c < half; ++c) {
            const double* x1 = in.data() + (size_t(n) * s.c + c) * plane;
            const double* x2 = in.data() + (size_t(n) * s.c + c + half) * plane;
            double* o = out.data() + (size_t(n) * half + c) * plane;
            for (size_t i = 0; i < plane; ++i) o[i] = x1[i] * x2[i];
        }
    return out;
}

}  // namespace imr
