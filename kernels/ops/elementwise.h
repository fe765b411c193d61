// The elementwise op: what it computes, its arguments, their check and its
// float64 reference. Its kernels: kernels/cpu/elementwise.cpp,
// kernels/cuda/elementwise.cu. Model files name it as the stage kinds `add`
// and `mul` (weights/README.md, format version 3).
#pragma once

#include <vector>

#include "op_args.h"

namespace imr {

// elementwise: out[n][c][y][x] = lhs[n][c][y][x] OP rhs[n][c][y][x] for two
// tensors of one shape, OP + (Add) or * (Mul), computed in float and
// rounded once to the output type. lhs and rhs may be the same tensor
// (x * x).
enum class ElementwiseOp { Add, Mul };
const char* elementwise_op_name(ElementwiseOp op);  // "add", "mul"

// Types: lhs, rhs and output share one dtype and layout (any the backend
// supports). An NHWC8 output's padding channels are written as zeros.
struct ElementwiseArgs {
    Tensor lhs;
    Tensor rhs;  // lhs's shape and type
    ElementwiseOp op = ElementwiseOp::Add;
    Tensor output;  // lhs's shape and type; must not overlap lhs or rhs

    Shape out_shape() const { return lhs.shape; }
};

// Throws imr::Error naming the op and its shapes if the arguments cannot run
// (non-positive sizes, null or misshapen tensors, mixed types, an output that
// overlaps an input). Every backend calls it first.
void check_args(const ElementwiseArgs& a);

// Output a.out_shape() of elementwise, in float64.
std::vector<double> reference_elementwise(const ElementwiseArgs& a);

}  // namespace imr
