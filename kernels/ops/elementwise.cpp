// elementwise's argument check and float64 reference (elementwise.h).
#include "elementwise.h"

#include "error.h"
#include "reference_common.h"

namespace imr {

const char* elementwise_op_name(ElementwiseOp op) {
    return op == ElementwiseOp::Add ? "add" : "mul";
}

void check_args(const ElementwiseArgs& a) {
    auto fail = [&](const std::string& what) {
        throw Error(std::string("elementwise ") + elementwise_op_name(a.op) + " " + a.lhs.shape.str() + ": " + what);
    };
    if (a.op != ElementwiseOp::Add && a.op != ElementwiseOp::Mul) fail("unknown operation");
    if (!positive(a.lhs.shape)) fail("sizes must be positive");
    if (!a.lhs) fail("null lhs tensor");
    expect_tensor(a.rhs, "rhs", a.lhs.shape, fail);
    if (!a.rhs.same_type(a.lhs)) fail("rhs is " + a.rhs.str() + ", lhs " + a.lhs.str() + ": they must share a type");
    expect_tensor(a.output, "output", a.out_shape(), fail);
    if (!a.output.same_type(a.lhs))
        fail("output is " + a.output.str() + ", lhs " + a.lhs.str() + ": they must share a type");
    if (overlaps(a.output, a.lhs) || overlaps(a.output, a.rhs)) fail("output must not overlap an input");
}

std::vector<double> reference_elementwise(const ElementwiseArgs& a) {
    check_reference_args(a);
    const std::vector<double> lhs = reference_values(a.lhs), rhs = reference_values(a.rhs);
    std::vector<double> out(lhs.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = a.op == ElementwiseOp::Add ? lhs[i] + rhs[i] : lhs[i] * rhs[i];
    return out;
}

}  // namespace imr
