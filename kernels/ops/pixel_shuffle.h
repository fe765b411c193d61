// The pixel_shuffle op: what it computes, its arguments, their check and its
// float64 reference. Its kernels: kernels/cpu/pixel_shuffle.cpp,
// kernels/cuda/pixel_shuffle.cu.
#pragma once

#include <vector>

#include "op_args.h"

namespace imr {

// pixel_shuffle moves blocks of factor x factor pixels into channels and back
// (f = factor):
//   ToDepth (torch.nn.PixelUnshuffle): [N, C, H, W] -> [N, C*f*f, H/f, W/f],
//     out[n][c*f*f + dy*f + dx][y][x] = in[n][c][y*f + dy][x*f + dx]
//   ToSpace (torch.nn.PixelShuffle): the inverse.
// H and W must be multiples of f for ToDepth, C a multiple of f*f for ToSpace.
// `residual` (optional, output-shaped) is added to the output: a network that
// ends in ToSpace adds its input back in the same pass.
enum class ShuffleDirection { ToDepth, ToSpace };
// Types: input, output and residual share one dtype and layout (any the
// backend supports: a permutation needs no arithmetic in that type).
struct PixelShuffleArgs {
    Tensor input;
    int factor = 0;
    ShuffleDirection direction = ShuffleDirection::ToDepth;
    Tensor output;    // out_shape(); must not overlap input
    Tensor residual;  // optional, out_shape(); must not overlap output

    Shape out_shape() const {
        const Shape& in = input.shape;
        const int ff = factor * factor;
        if (factor <= 0) return in;
        return direction == ShuffleDirection::ToDepth ? Shape{in.n, in.c * ff, in.h / factor, in.w / factor}
                                                      : Shape{in.n, in.c / ff, in.h * factor, in.w * factor};
    }
};

// Throws imr::Error naming the op and its shapes if the arguments cannot run
// (non-positive sizes, sizes not multiples of the factor, null or misshapen
// tensors, mixed types, overlapping input and output). Every backend calls
// it first.
void check_args(const PixelShuffleArgs& a);

// Output a.out_shape() of pixel_shuffle, in float64 (plus the residual).
std::vector<double> reference_pixel_shuffle(const PixelShuffleArgs& a);

}  // namespace imr
