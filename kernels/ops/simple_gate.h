// The simple_gate op: what it computes, its arguments, their check and its
// float64 reference. Its kernels: kernels/cpu/simple_gate.cpp,
// kernels/cuda/simple_gate.cu. Model files name it as the stage kind
// `simple_gate` (weights/README.md, format version 3).
#pragma once

#include <vector>

#include "op_args.h"

namespace imr {

// simple_gate (NAFNet's SimpleGate: x1, x2 = x.chunk(2, dim=1); x1 * x2):
// the input [N, C, H, W], C even, gives [N, C/2, H, W] with
//   out[n][c][y][x] = in[n][c][y][x] * in[n][c + C/2][y][x]
// computed in float and rounded once to the output type.
// Types: input and output share one dtype and layout (any the backend
// supports). An NHWC8 output's padding channels are written as zeros.
struct SimpleGateArgs {
    Tensor input;   // [N, C, H, W], C even
    Tensor output;  // out_shape(), the input's type; must not overlap input

    Shape out_shape() const { return {input.shape.n, input.shape.c / 2, input.shape.h, input.shape.w}; }
};

// Throws imr::Error naming the op and its shapes if the arguments cannot run
// (non-positive sizes, an odd channel count, null or misshapen tensors, mixed
// types, an output that overlaps the input). Every backend calls it first.
void check_args(const SimpleGateArgs& a);

// Output a.out_shape() of simple_gate, in float64.
std::vector<double> reference_simple_gate(const SimpleGateArgs& a);

}  // namespace imr
