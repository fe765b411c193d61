// concat's argument check and float64 reference (concat.h).
#include "concat.h"

#include <cstring>

#include "error.h"
#include "reference_common.h"

namespace imr {

namespace {

std::string describe(const ConcatArgs& a) {
    std::string s = "concat";
    for (size_t k = 0; k < a.inputs.size(); ++k) s += (k ? " + " : " ") + a.inputs[k].shape.str();
    return s;
}

}  // namespace

void check_args(const ConcatArgs& a) {
    auto fail = [&](const std::string& what) { throw Error(describe(a) + ": " + what); };
    if (a.inputs.size() < 2 || a.inputs.size() > size_t(kConcatMaxInputs))
        fail("takes 2 to " + std::to_string(kConcatMaxInputs) + " inputs, not " + std::to_string(a.inputs.size()));
    const Tensor& first = a.inputs.front();
    for (size_t k = 0; k < a.inputs.size(); ++k) {
        const Tensor& t = a.inputs[k];
        const std::string name = "input " + std::to_string(k);
        if (!positive(t.shape)) fail("sizes must be positive");
        if (!t) fail("null " + name + " tensor");
        if (t.shape.n != first.shape.n || t.shape.h != first.shape.h || t.shape.w != first.shape.w)
            fail(name + " is " + t.shape.str() + ", input 0 " + first.shape.str() + ": N, H and W must agree");
        if (!t.same_type(first))
            fail(name + " is " + t.str() + ", input 0 " + first.str() + ": the inputs must share a type");
    }
    const Shape o = a.out_shape();
    if (o.c <= 0) fail("too many channels in all");
    expect_tensor(a.output, "output", o, fail);
    if (!a.output.same_type(first))
        fail("output is " + a.output.str() + ", input 0 " + first.str() + ": they must share a type");
    for (const Tensor& t : a.inputs)
        if (overlaps(a.output, t)) fail("output must not overlap an input");
}

std::vector<double> reference_concat(const ConcatArgs& a) {
    check_reference_args(a);
    const Shape o = a.out_shape();
    const size_t plane = size_t(o.h) * o.w;
    std::vector<double> out(o.count());
    int offset = 0;  // the output channel of the current input's channel 0
    for (const Tensor& t : a.inputs) {
        const std::vector<double> in = reference_values(t);
        for (int n = 0; n < o.n; ++n)
            for (int c = 0; c < t.shape.c; ++c)
                std::memcpy(out.data() + (size_t(n) * o.c + offset + c) * plane,
                            in.data() + (size_t(n) * t.shape.c + c) * plane, plane * sizeof(double));
        offset += t.shape.c;
    }
    return out;
}

}  // namespace imr
