// conv2d layer: size-keeping KxK convolution (pad (K-1)/2 before and the rest
// after, in `padding`), optional bias, then an optional activation (v2), then
// optionally + the model's input image (v2, global residual learning).
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
    std::unique_ptr<PreparedStage> prepare(Backend& backend) const;

    // The op arguments for one call (pointers left for the caller).
    Conv2dArgs args(Shape in) const;
};

}  // namespace imr
