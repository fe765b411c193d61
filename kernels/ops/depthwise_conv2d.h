// The depthwise_conv2d op: what it computes, its arguments, their check and
// its float64 reference. Its kernels: kernels/cpu/depthwise_conv2d.cpp,
// kernels/cuda/depthwise_conv2d.cu.
#pragma once

#include <vector>

#include "conv2d.h"
#include "op_args.h"

namespace imr {

// depthwise_conv2d: every channel convolved with its own K x K filter (torch
// Conv2d(C, C, K, groups=C)). The input [N, C, H, W] is padded by pad_before
// rows/columns at the top/left and pad_after at the bottom/right in pad_mode
// (conv2d's padding: zero, reflect, replicate; kernels/ops/conv2d.h), then
//   out[n][c][y][x] = bias[c] + sum over ky, kx of
//                     weight[c][0][ky][kx] * padded[n][c][y + ky][x + kx]
// (cross-correlation, stride 1; bias 0 when absent): [N, C, H + pb + pa - K + 1,
// W + pb + pa - K + 1]. pad_before = pad_after = K/2 keeps the size (what
// model files use; torch's padding=K//2 with zero padding). K is odd, 1..7
// (the model format's range, so kernels may unroll the taps).
// With `gate` (C even; the fusion pass's depthwise_conv2d -> simple_gate,
// app/model_fusion.h) the output has C/2 channels,
//   out[n][c][y][x] = dw[n][c][y][x] * dw[n][c + C/2][y][x]
// where dw is the convolution above: NAFNet's SimpleGate applied to it
// without writing and reading back the C-channel tensor in between.
// Types: input and output share one dtype and layout (any the backend
// supports); weight and bias are f32 NCHW. Kernels compute in float and round
// the output once to its type (with `gate`: the product, in float).
struct DepthwiseConv2dArgs {
    Tensor input;    // [N, C, H, W]
    int kernel = 0;  // K
    int pad_before = 0, pad_after = 0;
    PadMode pad_mode = PadMode::Zero;
    bool gate = false;  // out = first half * second half of the channels
    Tensor output;      // out_shape(), input's type; must not overlap input
    Tensor weight;      // f32 NCHW [C, 1, K, K]
    Tensor bias;        // optional: f32 NCHW [1, C, 1, 1]

    Shape out_shape() const {
        const Shape& in = input.shape;
        return {in.n, gate ? in.c / 2 : in.c, in.h + pad_before + pad_after - kernel + 1,
                in.w + pad_before + pad_after - kernel + 1};
    }
};

// The largest K the op takes.
constexpr int kDepthwiseMaxKernel = 7;

// Throws imr::Error naming the op and its shapes if the arguments cannot run
// (non-positive sizes, K even or outside 1..7, an odd C with `gate`, negative padding, kernel larger
// than the padded image, reflect padding wider than the image allows, null or
// misshapen tensors, weights not f32 NCHW, mixed input/output types,
// overlapping input and output). Every backend calls it first.
void check_args(const DepthwiseConv2dArgs& a);

// Output a.out_shape() of depthwise_conv2d in float64. Calls check_args first.
std::vector<double> reference_depthwise_conv2d(const DepthwiseConv2dArgs& a);

}  // namespace imr
