// layer_norm layer (format v3): every pixel normalized over its channels,
// then scaled and shifted per channel (NAFNet's LayerNorm2d; the op:
// kernels/ops/layer_norm.h).
//
// In a model file (this comment is the normative spec of the stage; the file
// around it: weights/README.md): op = "layer_norm" and
//   dataset weight [C]                          required
//   dataset bias [C]                            required
//   float attribute eps (> 0)                   optional, default 1e-6
//   out[c] = (x[c] - mean) / sqrt(var + eps) * weight[c] + bias[c]
// with mean and var (biased) over the C channels of the pixel. One input;
// channels and scale kept; window 1, radius 0.
// Refused: weight or bias missing or not [C]; eps not positive; before format v3.
#pragma once

#include "layer.h"

namespace imr {

struct LayerNormStage {
    static constexpr const char* kOp = "layer_norm";
    static constexpr int kMinInputs = 1, kMaxInputs = 1;
    int channels = 0;
    std::vector<float> weight, bias;  // [channels] each
    float eps = 1e-6f;

    static LayerNormStage load(LayerReader& r, const std::vector<int>& channels);
    void write(LayerWriter& w) const;
    void validate(const std::string& at) const;
    int min_format_version() const { return 3; }
    int channels_in(int = 0) const { return channels; }
    int channels_out() const { return channels; }
    Geometry geometry() const { return {}; }
    size_t parameter_count() const { return weight.size() + bias.size(); }
    double flops_per_pixel() const { return 8.0 * channels; }  // mean, deviations, squares, scale, shift
    bool adds_model_input() const { return false; }
    std::string describe() const;
    std::vector<double> reference(const ReferenceIO& io) const;
    std::unique_ptr<PreparedStage> prepare(Backend& backend, Precision precision) const;
};

}  // namespace imr
