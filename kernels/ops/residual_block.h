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
// Every tensor is f32 NCHW: the op is a benchmark anchor (SOL-ExecBench
// states it in fp32) and stays so.
struct ResidualBlockArgs {
    Tensor input;  // [N, C, H, W]
    int hidden = 0;
    Tensor output;                              // input's shape; must not overlap input
    Tensor conv_in_weight;                      // [hidden, C, 3, 3]
    Tensor conv_in_bias;                        // [1, hidden, 1, 1]
    Tensor conv_out_weight;                     // [C, hidden, 3, 3]
    Tensor conv_out_bias;                       // [1, C, 1, 1]
    const PreparedWeights* prepared = nullptr;  // optional: Backend::prepare of these weights
    // One whole image's size a backend plans its kernel for, where the plan
    // can change the result (0: this call's own): as Conv2dArgs::plan_pixels
    // (CUDA's fused C = 3 kernel splits the hidden channels over two blocks
    // when the image's tiles would fill under half the GPU, which adds in
    // another order).
    int plan_h = 0, plan_w = 0;

    Shape out_shape() const { return input.shape; }
};

// Throws imr::Error naming the op and its shapes if the arguments cannot run
// (non-positive sizes, null, misshapen or non-f32 tensors, output overlapping
// input). Every backend calls it first.
void check_args(const ResidualBlockArgs& a);

// Output [N, C, H, W] of residual_block, in float64 (the hidden activation is
// kept in float64 as well, never rounded to fp32). Calls check_args first.
std::vector<double> reference_residual_block(const ResidualBlockArgs& a);

// Output element (n, c, y, x) of residual_block.
double reference_residual_block_at(const ResidualBlockArgs& a, int n, int c, int y, int x);

}  // namespace imr
