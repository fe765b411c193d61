// depthwise_conv2d layer (format v3): a size-keeping KxK convolution of each
// channel on its own (groups = channels; NAFNet's 3x3), optional bias. The
// op: kernels/ops/depthwise_conv2d.h.
//
// In a model file (this comment is the normative spec of the stage; the file
// around it: weights/README.md): op = "depthwise_conv2d" and
//   dataset weight [C, 1, K, K], K odd, 1..7               required
//   dataset bias [C]                                        optional: no bias when absent
//   string attribute padding: reflect, replicate or zero    optional, default reflect
//   out[c,y,x] = bias[c] + sum_{i,j} weight[c,0,i,j] * xp[c, y+i, x+j]
// (xp: the image padded by K//2 on every side, as conv2d pads; torch
// Conv2d(C, C, K, padding=K//2, groups=C) for zero padding). One input;
// channels and scale kept; window K, radius K//2.
// Refused: weight missing or not [C, 1, K, K] with K odd 1..7; bias not [C];
// an unknown padding; before format v3.
// `gate` is not in files: the runner's fusion pass (app/model_fusion.h) sets
// it where a simple_gate reads this stage's output alone, so the stage
// writes C/2 channels, the first half times the second, in one pass.
#pragma once

#include "layer.h"

namespace imr {

struct DepthwiseConv2dStage {
    static constexpr const char* kOp = "depthwise_conv2d";
    static constexpr int kMinInputs = 1, kMaxInputs = 1;
    int channels = 0, kernel = 3;
    PadMode padding = PadMode::Reflect;
    bool gate = false;          // fused: out = first half * second half (C/2 channels)
    std::vector<float> weight;  // [channels, 1, K, K]
    std::vector<float> bias;    // [channels], or empty

    static DepthwiseConv2dStage load(LayerReader& r, const std::vector<int>& channels);
    void write(LayerWriter& w) const;
    void validate(const std::string& at) const;
    int min_format_version() const { return 3; }
    int channels_in(int = 0) const { return channels; }
    int channels_out() const { return gate ? channels / 2 : channels; }
    Geometry geometry() const { return {kernel / 2, kernel, 1, 1}; }
    size_t parameter_count() const { return weight.size() + bias.size(); }
    double flops_per_pixel() const { return 2.0 * double(parameter_count()) + (gate ? channels / 2 : 0); }
    bool adds_model_input() const { return false; }
    std::string describe() const;
    std::vector<double> reference(const ReferenceIO& io) const;
    std::unique_ptr<PreparedStage> prepare(Backend& backend, Precision precision) const;
    DepthwiseConv2dArgs args(const Tensor& input) const;  // without weight and bias
};

}  // namespace imr
