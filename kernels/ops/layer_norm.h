// The layer_norm op: what it computes, its arguments, their check and its
// float64 reference. Its kernels: kernels/cpu/layer_norm.cpp,
// kernels/cuda/layer_norm.cu.
#pragma once

#include <vector>

#include "op_args.h"

namespace imr {

// layer_norm normalizes every pixel over its channels (NAFNet's LayerNorm2d):
//   mean = (1/C) sum_c x[c],  var = (1/C) sum_c (x[c] - mean)^2  (biased)
//   out[n][c][y][x] = (x[c] - mean) / sqrt(var + eps) * weight[c] + bias[c]
// with x[c] = in[n][c][y][x].
// Types: input and output share one dtype and layout (any the backend
// supports); weight and bias are f32 NCHW [1, C, 1, 1]. Kernels compute in
// float and round the output once to its type.
struct LayerNormArgs {
    Tensor input;   // [N, C, H, W]
    Tensor output;  // input's shape and type; must not overlap input
    Tensor weight;  // f32 NCHW [1, C, 1, 1]
    Tensor bias;    // f32 NCHW [1, C, 1, 1]
    float eps = 1e-6f;

    Shape out_shape() const { return input.shape; }
};

// Throws imr::Error naming the op and its shapes if the arguments cannot run
// (non-positive sizes, eps not finite and positive, null or misshapen
// tensors, weights not f32 NCHW, mixed input/output types, overlapping input
// and output). Every backend calls it first.
void check_args(const LayerNormArgs& a);

// Output a.out_shape() of layer_norm in float64 (mean and variance in two
// passes over the channels). Calls check_args first.
std::vector<double> reference_layer_norm(const LayerNormArgs& a);

}  // namespace imr
