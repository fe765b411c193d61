// space_to_depth and depth_to_space layers (format v2): blocks of f x f
// pixels to channels and back, exactly torch.nn.PixelUnshuffle /
// PixelShuffle (PixelShuffleArgs). A network that runs its convolutions at
// 1/f of the resolution sees f times further for the same work per pixel;
// depth_to_space may add the model's input on the way out (global residual).
#pragma once

#include "layer.h"

namespace imr {

template <ShuffleDirection D>
struct PixelShuffleStage {
    static constexpr bool kToDepth = D == ShuffleDirection::ToDepth;
    static constexpr const char* kOp = kToDepth ? "space_to_depth" : "depth_to_space";
    static constexpr int kMaxFactor = 8;  // more would be a design error, not a model
    int in_channels = 0, factor = 2;
    bool add_model_input = false;  // depth_to_space only

    static PixelShuffleStage load(LayerReader& r, int channels);
    void write(LayerWriter& w) const;
    void validate(const std::string& at) const;
    int min_format_version() const { return 2; }
    int channels_in() const { return in_channels; }
    int channels_out() const { return kToDepth ? in_channels * factor * factor : in_channels / (factor * factor); }
    // space_to_depth: an output pixel is a whole f x f block; depth_to_space:
    // each output pixel comes from one input pixel.
    Geometry geometry() const { return kToDepth ? Geometry{0, factor, factor, 1} : Geometry{0, 1, 1, factor}; }
    size_t parameter_count() const { return 0; }
    bool adds_model_input() const { return add_model_input; }
    std::string describe() const;
    std::vector<double> reference(const ReferenceIO& io) const;
    std::unique_ptr<PreparedStage> prepare(Backend& backend) const;
};

using SpaceToDepthStage = PixelShuffleStage<ShuffleDirection::ToDepth>;
using DepthToSpaceStage = PixelShuffleStage<ShuffleDirection::ToSpace>;

}  // namespace imr
