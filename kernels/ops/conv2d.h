// The conv2d op: what it computes, its arguments (and the padding modes and
// activations they name), their check and its float64 reference. Its
// kernels: kernels/cpu/conv2d.cpp (on kernels/cpu/direct_conv.cpp),
// kernels/cuda/conv2d/ (one file per kernel family, the variant table in
// conv2d_variants.cu).
#pragma once

#include <vector>

#include "op_args.h"

namespace imr {

// What a convolution applies to its output after the bias.
enum class Activation { None, ReLU };
const char* activation_name(Activation a);

// How the border is extended before a convolution. Zero: zeros; Reflect: mirror
// without repeating the edge (numpy/torch "reflect"); Replicate: repeat the edge.
enum class PadMode { Zero, Reflect, Replicate };
const char* pad_mode_name(PadMode mode);

// conv2d: the input [N, Cin, H, W] is padded by pad_before rows/columns at the
// top/left and pad_after at the bottom/right (in pad_mode), then convolved
// (cross-correlation, as torch) with weight [Cout, Cin, K, K], stride 1, plus
// bias [1, Cout, 1, 1] when bias is present, then the activation, then
// `residual` (output-shaped) when it is present:
//   output = activation(conv(input) + bias) + residual
// or, with residual_op Multiply, activation(conv(input) + bias) * residual
// (NAFNet's channel attention: x times the 1x1 convolution of its local
// means, without writing and reading back the scale).
// With `gate` (Cout even; no activation or residual: the fusion pass's
// conv2d -> simple_gate, app/model_fusion.h) the output has Cout/2
// channels, output[c] = (conv + bias)[c] * (conv + bias)[c + Cout/2]:
// NAFNet's SimpleGate after the 1x1 expansion, without storing the Cout
// channels in between (where a backend has no kernel with the gate in its
// epilogue it stores the sums in the output's type and gates them after, as
// the two stages would: in half precision two roundings more).
// With no padding, bias, activation or residual this is GPU MODE's
// conv2d_v2: output [N, Cout, H-K+1, W-K+1]. pad_before + pad_after = K-1
// keeps the image size (what model files use). Fusing the activation and the
// residual add into the convolution saves a pass over the output per layer.
// Types: weight and bias are f32 NCHW (a backend's prepare packs them into
// its kernels' type); the residual has the output's dtype and layout; input
// and output may differ in both (a first layer reading the f32 NCHW batch
// and writing f16 NHWC8, a last one writing f32 NCHW) where the backend
// supports each (Backend::supports) and one of its kernels takes the pair.
// What the residual does to the convolution's output.
enum class ResidualOp { Add, Multiply };

struct Conv2dArgs {
    Tensor input;  // [N, Cin, H, W]
    int out_channels = 0;
    int kernel = 0;  // K
    int pad_before = 0, pad_after = 0;
    PadMode pad_mode = PadMode::Zero;
    Tensor output;  // out_shape(); must not overlap input
    Tensor weight;  // f32 NCHW [Cout, Cin, K, K]
    Tensor bias;    // optional: f32 NCHW [1, Cout, 1, 1]
    Activation activation = Activation::None;
    Tensor residual;                            // optional, out_shape(); must not overlap output
    ResidualOp residual_op = ResidualOp::Add;   // with a residual: added, or multiplied
    bool gate = false;                          // out_channels / 2 outputs: first half x second half
    const PreparedWeights* prepared = nullptr;  // optional: Backend::prepare of these weights
    // Allows an f32 call to round the products' operands to TF32 (10
    // mantissa bits; --precision tf32) where the backend has such kernels
    // (Backend::has_tf32_conv2d); the sums stay fp32. Others ignore it.
    bool tf32 = false;
    // The output pixels a backend plans its kernel for, where the plan can
    // change the result (0: this call's own, n * h * w). The model runner
    // gives one whole image's, so that a tile of an image, and an image in a
    // batch, sum as the image alone would: CUDA's fp32 convolution splits a
    // reduction over two blocks where that evens out its waves, which adds in
    // another order, and a tile that split where the image did not (or the
    // reverse) would differ in the last bits, its 8-bit output by a level.
    long long plan_pixels = 0;

    Shape out_shape() const {
        const Shape& in = input.shape;
        return {in.n, gate ? out_channels / 2 : out_channels, in.h + pad_before + pad_after - kernel + 1,
                in.w + pad_before + pad_after - kernel + 1};
    }
};

// Throws imr::Error naming the op and its shapes if the arguments cannot run
// (non-positive sizes, kernel larger than the padded image, reflect padding
// wider than the image allows, null or misshapen tensors, a residual of
// another type than the output, overlapping input and output). Every
// backend calls it first.
void check_args(const Conv2dArgs& a);

// Output a.out_shape() of conv2d (bias, activation and residual included), in
// float64. Calls check_args first.
std::vector<double> reference_conv2d(const Conv2dArgs& a);

// Output element (n, co, y, x) of conv2d.
double reference_conv2d_at(const Conv2dArgs& a, int n, int co, int y, int x);

}  // namespace imr
