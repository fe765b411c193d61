// activation layer (format v3): a function applied to every value (the op:
// kernels/ops/activation.h). A ReLU right after a convolution is better
// written as that conv2d's activation attribute (fused, one pass less).
//
// In a model file (this comment is the normative spec of the stage; the file
// around it: weights/README.md): op = "activation", no datasets, and
//   string attribute function: relu, leaky_relu, gelu or silu   required
//   float attribute slope (leaky_relu only)                     optional, default 0.01
//   relu max(0, x); leaky_relu x >= 0 ? x : slope * x; gelu x * Phi(x) (the
//   exact erf form, torch's default); silu x * sigmoid(x)
// One input; channels and scale kept; window 1, radius 0.
// Refused: function missing or unknown; slope with another function; slope
// not finite; before format v3.
#pragma once

#include "layer.h"

namespace imr {

struct ActivationStage {
    static constexpr const char* kOp = "activation";
    static constexpr int kMinInputs = 1, kMaxInputs = 1;
    int channels = 0;
    UnaryFunction function = UnaryFunction::ReLU;
    float slope = 0.01f;  // leaky_relu's

    static ActivationStage load(LayerReader& r, const std::vector<int>& channels);
    void write(LayerWriter& w) const;
    void validate(const std::string& at) const;
    int min_format_version() const { return 3; }
    int channels_in(int = 0) const { return channels; }
    int channels_out() const { return channels; }
    Geometry geometry() const { return {}; }
    size_t parameter_count() const { return 0; }
    double flops_per_pixel() const { return channels; }
    bool adds_model_input() const { return false; }
    std::string describe() const;
    std::vector<double> reference(const ReferenceIO& io) const;
    std::unique_ptr<PreparedStage> prepare(Backend& backend, Precision precision) const;
};

}  // namespace imr
