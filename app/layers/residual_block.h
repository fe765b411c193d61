// residual_block layer: out = x + conv_out(conv_in(x)), both 3x3 with zero
// padding 1 and bias, no activation (SOL-ExecBench L1/040; ResidualBlockArgs).
#pragma once

#include "layer.h"

namespace imr {

struct ResidualBlockStage {
    static constexpr const char* kOp = "residual_block";
    int channels = 0, hidden = 0;
    std::vector<float> conv_in_weight;   // [hidden, channels, 3, 3]
    std::vector<float> conv_in_bias;     // [hidden]
    std::vector<float> conv_out_weight;  // [channels, hidden, 3, 3]
    std::vector<float> conv_out_bias;    // [channels]

    static ResidualBlockStage load(LayerReader& r, int channels);
    void write(LayerWriter& w) const;
    void validate(const std::string& at) const;
    int min_format_version() const { return 1; }
    int channels_in() const { return channels; }
    int channels_out() const { return channels; }
    Geometry geometry() const { return {2, 5, 1, 1}; }  // two 3x3 convolutions
    size_t parameter_count() const {
        return conv_in_weight.size() + conv_in_bias.size() + conv_out_weight.size() + conv_out_bias.size();
    }
    bool adds_model_input() const { return false; }
    std::string describe() const;
    std::vector<double> reference(const ReferenceIO& io) const;
    std::unique_ptr<PreparedStage> prepare(Backend& backend) const;
};

}  // namespace imr
