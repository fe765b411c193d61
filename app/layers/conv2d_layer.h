// conv2d layer: a size-keeping KxK convolution, optional bias, then an
// optional activation (v2), then optionally + the model's input image (v2,
// global residual learning) or + a second input (v3, a residual block's
// skip); or, with stride f = K (v3), a convolution of the f x f blocks that
// shrinks the image by f (a U-Net's way down). The ops: kernels/ops/conv2d.h,
// and kernels/ops/pixel_shuffle.h for the strided form, which is exactly
// space_to_depth(f) followed by a 1x1 convolution of the same weights.
//
// In a model file (this comment is the normative spec of the stage; the file
// around it: weights/README.md): op = "conv2d" and
//   dataset weight [Cout, Cin, K, K]                        required
//   dataset bias [Cout]                                     optional: no bias when absent
//   string attribute padding: reflect, replicate or zero    optional, default reflect
//   string attribute activation: none or relu (v2)          optional, default none
//   integer attribute add_model_input: 0 or 1 (v2)          optional, default 0
//   integer attribute stride: 1, or f = K in 2..8 (v3)      optional, default 1
// Cin is the channel count the stage receives; it gives Cout (1..4096). K is
// 1..64 (odd K is the usual case; even K is allowed). The image is padded by
// pb = (K-1)//2 rows/columns at the top/left and pa = K-1-pb at the
// bottom/right, then a valid stride-1 cross-correlation is taken (torch
// conv2d semantics), so the size is kept:
//   out[o,y,x] = act(bias[o] + sum_{c,i,j} weight[o,c,i,j] * xp[c, y+i, x+j])  (+ input[o,y,x])
// (xp: the padded image). Padding: zero fills zeros; reflect mirrors without
// repeating the edge (numpy/torch reflect: ..., x[2], x[1] | x[0], x[1], ...);
// replicate repeats the edge value (numpy edge). reflect needs max(pb, pa)
// smaller than the image's height and width (the backends refuse smaller
// images: check_args). relu is max(0, v), applied after the bias.
// add_model_input = 1 then adds the model's input image (the network predicts
// the correction); only where the stage's output has the model's channels at
// the image's full resolution. Window K, radius max(pb, pa).
// A second input r (v3 wiring; output-shaped: Cout channels at the output's
// scale) is added last, out = act(conv + bias) + r, instead of the model
// input (not both). stride f (v3) needs K = f and takes no padding:
//   out[o,y,x] = act(bias[o] + sum_{c,i,j} weight[o,c,i,j] * in[c, f*y+i, f*x+j])  (+ r[o,y,x])
// [Cout, H/f, W/f] (torch Conv2d(Cin, Cout, f, stride=f)); window f, radius
// 0, scale x f (the image is padded to a multiple of f, weights/README.md).
// Refused: weight missing, not square, over 64x64, with Cin other than the
// channels received or Cout outside 1..4096; bias not [Cout]; an unknown
// padding or activation; add_model_input other than 0 or 1; activation or
// add_model_input in a format v1 file; stride other than 1 or K (K in 2..8);
// stride or a second input before format v3; a second input together with
// add_model_input.
// `gate` is not in files: the runner's fusion pass (app/model_fusion.h) sets
// it where a simple_gate reads a stride-1 stage's output alone (nothing
// added, no activation), so the stage writes Cout/2 channels, the first
// half times the second.
#pragma once

#include "layer.h"

namespace imr {

struct Conv2dStage {
    static constexpr const char* kOp = "conv2d";
    static constexpr int kMinInputs = 1, kMaxInputs = 2;
    int in_channels = 0, out_channels = 0, kernel = 0;
    int stride = 1;           // 1, or kernel (the f x f blocks)
    bool adds_input = false;  // a second input, added last (v3)
    PadMode padding = PadMode::Reflect;
    std::vector<float> weight;  // [out_channels, in_channels, K, K]
    std::vector<float> bias;    // [out_channels], or empty for none
    Activation activation = Activation::None;
    bool add_model_input = false;
    bool gate = false;  // fused: out = first half * second half (Cout/2 channels)

    int pad_before() const { return stride > 1 ? 0 : (kernel - 1) / 2; }
    int pad_after() const { return stride > 1 ? 0 : kernel - 1 - pad_before(); }

    static Conv2dStage load(LayerReader& r, const std::vector<int>& channels);
    void write(LayerWriter& w) const;
    void validate(const std::string& at) const;
    int min_format_version() const {
        return stride > 1 || adds_input ? 3 : activation != Activation::None || add_model_input ? 2 : 1;
    }
    int channels_in(int k = 0) const { return k == 0 ? in_channels : out_channels; }
    int channels_out() const { return gate ? out_channels / 2 : out_channels; }
    Geometry geometry() const {
        return stride > 1 ? Geometry{0, kernel, stride, 1}
                          : Geometry{std::max(pad_before(), pad_after()), kernel, 1, 1};
    }
    size_t parameter_count() const { return weight.size() + bias.size(); }
    double flops_per_pixel() const { return 2.0 * double(parameter_count()) + (gate ? out_channels / 2 : 0); }
    bool adds_model_input() const { return add_model_input; }
    std::string describe() const;
    std::vector<double> reference(const ReferenceIO& io) const;
    std::unique_ptr<PreparedStage> prepare(Backend& backend, Precision precision) const;

    // The op arguments for one call on `input` (the other tensors left for
    // the caller); for stride f, of the 1x1 convolution that follows the
    // space_to_depth(f) of the input.
    Conv2dArgs args(const Tensor& input) const;
};

}  // namespace imr
