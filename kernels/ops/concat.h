// The concat op: what it computes, its arguments, their check and its
// float64 reference. Its kernels: kernels/cpu/concat.cpp,
// kernels/cuda/concat.cu. Model files name it as the stage kind `concat`
// (weights/README.md, format version 3).
#pragma once

#include <vector>

#include "op_args.h"

namespace imr {

// concat (torch.cat(inputs, dim=1)): 2 to kConcatMaxInputs inputs
// [N, C_k, H, W] of one N, H and W give [N, C_0 + C_1 + ..., H, W], the
// inputs' channels in order:
//   out[n][C_0 + ... + C_(k-1) + c][y][x] = inputs[k][n][c][y][x]
// A copy: every value is stored exactly.
// Types: the inputs and the output share one dtype and layout (any the
// backend supports). An NHWC8 output's padding channels are written as
// zeros; an NHWC8 input's are not part of the output.
constexpr int kConcatMaxInputs = 16;
struct ConcatArgs {
    std::vector<Tensor> inputs;  // 2..kConcatMaxInputs; may repeat a tensor (torch.cat([x, x]))
    Tensor output;               // out_shape(), the inputs' type; must not overlap any input

    // The inputs' channels summed, with the first input's N, H, W (an empty
    // shape without inputs).
    Shape out_shape() const {
        if (inputs.empty()) return {};
        Shape s = inputs.front().shape;
        long long c = 0;
        for (const Tensor& t : inputs) c += t.shape.c;
        s.c = c > (1LL << 30) ? 0 : int(c);  // absurd totals: 0, which check_args refuses
        return s;
    }
};

// Throws imr::Error naming the op and its shapes if the arguments cannot run
// (fewer than 2 or more than kConcatMaxInputs inputs, non-positive sizes,
// inputs of different N, H or W, null or misshapen tensors, mixed types, an
// output that overlaps an input). Every backend calls it first.
void check_args(const ConcatArgs& a);

// Output a.out_shape() of concat, in float64.
std::vector<double> reference_concat(const ConcatArgs& a);

}  // namespace imr
