// The residual_block op: what it computes, its arguments, their check and its
// float64 reference. Its kernels: kernels/cpu/residual_block.cpp,
// kernels/cuda/residual_block.cu.
#pragma once

#include <vector>

#include "op_args.h"

namespace imr {

// residual_block: output = input + conv_out(conv_in(input)), both convolutions
// 3x3, zero padding 1, stride 1, with bias, no activation (SOL-ExecBench
// L1/040, NAFNet's intro/ending convs).
//   conv_in_weight  [hidden, C, 3, 3]   conv_in_bias  [hidden]
//   conv_out_weight [C, hidden, 3, 3]   conv_out_bias [C]
struct ResidualBlockArgs {
    Shape shape;  // input and output, [N, C, H, W]
    int hidden = 0;
    const float* input = nullptr;
    float* output = nullptr;  // must not alias input
    const float* conv_in_weight = nullptr;
    const float* conv_in_bias = nullptr;
    const float* conv_out_weight = nullptr;
    const float* conv_out_bias = nullptr;
    const PreparedWeights* prepared = nullptr;  // optional: Backend::prepare of these weights
};

// Throws imr::Error naming the op and its shapes if the arguments cannot run
// (non-positive sizes, null pointers, output aliasing input). Every backend
// calls it first.
void check_args(const ResidualBlockArgs& a);

// Output [N, C, H, W] of residual_block, in float64 (the hidden activation is
// kept in float64 as well, never rounded to fp32). Calls check_args first.
std::vector<double> reference_residual_block(const ResidualBlockArgs& a);

// Output element (n, c, y, x) of residual_block.
double reference_residual_block_at(const ResidualBlockArgs& a, int n, int c, int y, int x);

}  // namespace imr
