// The activation op: what it computes, its arguments, their check and its
// float64 reference. Its kernels: kernels/cpu/activation.cpp,
// kernels/cuda/activation.cu. Model files name it as the stage kind
// `activation` (weights/README.md, format version 3). Not to be confused
// with conv2d's fused epilogue (conv2d.h: `Activation`), which this op does
// not change.
#pragma once

#include <vector>

#include "op_args.h"

namespace imr {

// activation: out[n][c][y][x] = f(in[n][c][y][x]), computed in float and
// rounded once to the output type, f one of (as torch.nn):
//   ReLU       x < 0 ? 0 : x
//   LeakyReLU  x < 0 ? slope * x : x
//   GELU       x * Phi(x) = x / 2 * erfc(-x / sqrt(2))  (the exact erf form, torch's default)
//   SiLU       x * sigmoid(x) = x / (1 + exp(-x))
// (kernels evaluate sigmoid from exp(-|x|), which cannot overflow).
// A NaN input gives NaN (ReLU included: torch propagates it, and the runner's
// finiteness check of a half-precision pass must see it).
enum class UnaryFunction { ReLU, LeakyReLU, GELU, SiLU };
const char* unary_function_name(UnaryFunction f);  // "relu", "leaky_relu", "gelu", "silu"

// Types: input and output share one dtype and layout (any the backend
// supports). An NHWC8 output's padding channels are written as zeros.
struct ActivationArgs {
    Tensor input;
    UnaryFunction function = UnaryFunction::ReLU;
    float slope = 0.01f;  // LeakyReLU's slope for x < 0 (torch's default); must be finite
    Tensor output;        // input's shape and type; must not overlap input

    Shape out_shape() const { return input.shape; }
};

// Throws imr::Error naming the op and its shapes if the arguments cannot run
// (non-positive sizes, a slope that is not finite, null or misshapen
// tensors, mixed types, an output that overlaps the input). Every backend
// calls it first.
void check_args(const ActivationArgs& a);

// Output a.out_shape() of activation, in float64.
std::vector<double> reference_activation(const ActivationArgs& a);

}  // namespace imr
