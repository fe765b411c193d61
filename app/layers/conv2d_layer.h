// conv2d layer: a size-keeping KxK convolution, optional bias, then an
// optional activation (v2), then optionally + the model's input image (v2,
// global residual learning). The op: kernels/ops/conv2d.h.
//
// In a model file (this comment is the normative spec of the stage; the file
// around it: weights/README.md): op = "conv2d" and
//   dataset weight [Cout, Cin, K, K]                        required
//   dataset bias [Cout]                                     optional: no bias when absent
//   string attribute padding: reflect, replicate or zero    optional, default reflect
//   string attribute activation: none or relu (v2)          optional, default none
//   integer attribute add_model_input: 0 or 1 (v2)          optional, default 0
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
// Refused: weight missing, not square, over 64x64, with Cin other than the
// channels received or Cout outside 1..4096; bias not [Cout]; an unknown
// padding or activation; add_model_input other than 0 or 1; activation or
// add_model_input in a format v1 file.
#pragma once

#include "layer.h"

namespace imr {

struct Conv2dStage {
    static constexpr const char* kOp = "conv2d";
    int in_channels = 0, out_channels = 0, kernel = 0;
    PadMode padding = PadMode::Reflect;
    std::vector<float> weight;  // [out_channels, in_channels, K, K]
    std::vector<float> bias;    // [out_channels], or empty for none
    Activation activation = Activation::None;
    bool add_model_input = false;

    int pad_before() const { return (kernel - 1) / 2; }
    int pad_after() const { return kernel - 1 - pad_before(); }

    static Conv2dStage load(LayerReader& r, int channels);
    void write(LayerWriter& w) const;
    void validate(const std::string& at) const;
    int min_format_version() const { return activation != Activation::None || add_model_input ? 2 : 1; }
    int channels_in() const { return in_channels; }
    int channels_out() const { return out_channels; }
    Geometry geometry() const { return {std::max(pad_before(), pad_after()), kernel, 1, 1}; }
    size_t parameter_count() const { return weight.size() + bias.size(); }
    bool adds_model_input() const { return add_model_input; }
    std::string describe() const;
    std::vector<double> reference(const ReferenceIO& io) const;
    std::unique_ptr<PreparedStage> prepare(Backend& backend, Precision precision) const;

    // The op arguments for one call on `input` (the other tensors left for the caller).
    Conv2dArgs args(const Tensor& input) const;
};

}  // namespace imr
