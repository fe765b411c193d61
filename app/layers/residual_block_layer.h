// residual_block layer (format v1): out = x + conv_out(conv_in(x)), both
// convolutions 3x3, stride 1, zero padding 1, with bias, no activation
// (SOL-ExecBench L1/040; the op: kernels/ops/residual_block.h).
//
// In a model file (this comment is the normative spec of the stage; the file
// around it: weights/README.md): op = "residual_block", no attributes, four
// float32 datasets:
//   conv_in_weight   [H, C, 3, 3]
//   conv_in_bias     [H]
//   conv_out_weight  [C, H, 3, 3]
//   conv_out_bias    [C]
// C is the channel count the stage receives, and gives; H (the hidden width)
// is any H in 1..4096 and must agree between the four. It computes
//   hid[h,y,x] = conv_in_bias[h] + sum_{c,i,j} conv_in_weight[h,c,i,j] * x[c, y+i-1, x+j-1]
//   out[c,y,x] = x[c,y,x] + conv_out_bias[c] + sum_{h,i,j} conv_out_weight[c,h,i,j] * hid[h, y+i-1, x+j-1]
// where x[...] and hid[...] outside the image are 0 (the hidden map is padded
// with zeros after its bias is added, as torch does). Window 5, radius 2.
// Refused: a dataset missing or of another shape (a kernel other than 3x3, C
// other than the channels received, H disagreeing or beyond 4096).
#pragma once

#include "layer.h"

namespace imr {

struct ResidualBlockStage {
    static constexpr const char* kOp = "residual_block";
    static constexpr int kMinInputs = 1, kMaxInputs = 1;
    int channels = 0, hidden = 0;
    std::vector<float> conv_in_weight;   // [hidden, channels, 3, 3]
    std::vector<float> conv_in_bias;     // [hidden]
    std::vector<float> conv_out_weight;  // [channels, hidden, 3, 3]
    std::vector<float> conv_out_bias;    // [channels]

    static ResidualBlockStage load(LayerReader& r, const std::vector<int>& channels);
    void write(LayerWriter& w) const;
    void validate(const std::string& at) const;
    int min_format_version() const { return 1; }
    int channels_in(int = 0) const { return channels; }
    int channels_out() const { return channels; }
    Geometry geometry() const { return {2, 5, 1, 1}; }  // two 3x3 convolutions
    size_t parameter_count() const {
        return conv_in_weight.size() + conv_in_bias.size() + conv_out_weight.size() + conv_out_bias.size();
    }
    double flops_per_pixel() const { return 2.0 * double(parameter_count()); }
    bool adds_model_input() const { return false; }
    std::string describe() const;
    std::vector<double> reference(const ReferenceIO& io) const;
    std::unique_ptr<PreparedStage> prepare(Backend& backend, Precision precision) const;
};

}  // namespace imr
