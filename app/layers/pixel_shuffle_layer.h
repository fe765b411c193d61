// space_to_depth and depth_to_space layers (format v2): blocks of f x f
// pixels to channels and back, exactly torch.nn.PixelUnshuffle /
// PixelShuffle (the op: kernels/ops/pixel_shuffle.h). A network that runs its
// convolutions at 1/f of the resolution sees f times further for the same
// work per pixel; depth_to_space may add the model's input on the way out
// (global residual).
//
// In a model file (this comment is the normative spec of the two stages; the
// file around them: weights/README.md), no datasets:
//   op = "space_to_depth", integer attribute factor f (2..8), required:
//     [C, H, W] -> [C·f·f, H/f, W/f], out[c·f·f + dy·f + dx][y][x] = in[c][y·f + dy][x·f + dx]
//     (torch.nn.PixelUnshuffle(f)). Window f, radius 0; the model's image
//     sides are padded to a multiple of every such reduction (weights/README.md).
//   op = "depth_to_space", integer attribute factor f (2..8), required, and
//     integer attribute add_model_input (0 or 1, default 0): the inverse
//     (torch.nn.PixelShuffle(f)), then + the model's input image if
//     add_model_input is 1 (as conv2d's: only where the output is
//     image-shaped). The channel count it receives must be a multiple of
//     f·f. Window 1, radius 0.
// Refused: factor missing, not an integer or outside 2..8; space_to_depth
// beyond 4096 channels, or with add_model_input; depth_to_space of a channel
// count that is not a multiple of f·f, or enlarging beyond the image's
// resolution; add_model_input other than 0 or 1; either in a format v1 file.
#pragma once

#include "layer.h"

namespace imr {

template <ShuffleDirection D>
struct PixelShuffleStage {
    static constexpr bool kToDepth = D == ShuffleDirection::ToDepth;
    static constexpr const char* kOp = kToDepth ? "space_to_depth" : "depth_to_space";
    static constexpr int kMinInputs = 1, kMaxInputs = 1;
    static constexpr int kMaxFactor = 8;  // more would be a design error, not a model
    int in_channels = 0, factor = 2;
    bool add_model_input = false;  // depth_to_space only

    static PixelShuffleStage load(LayerReader& r, const std::vector<int>& channels);
    void write(LayerWriter& w) const;
    void validate(const std::string& at) const;
    int min_format_version() const { return 2; }
    int channels_in(int = 0) const { return in_channels; }
    int channels_out() const { return kToDepth ? in_channels * factor * factor : in_channels / (factor * factor); }
    // space_to_depth: an output pixel is a whole f x f block; depth_to_space:
    // each output pixel comes from one input pixel.
    Geometry geometry() const { return kToDepth ? Geometry{0, factor, factor, 1} : Geometry{0, 1, 1, factor}; }
    size_t parameter_count() const { return 0; }
    double flops_per_pixel() const { return 0; }  // moves, no arithmetic
    bool adds_model_input() const { return add_model_input; }
    std::string describe() const;
    std::vector<double> reference(const ReferenceIO& io) const;
    std::unique_ptr<PreparedStage> prepare(Backend& backend, Precision precision) const;
};

using SpaceToDepthStage = PixelShuffleStage<ShuffleDirection::ToDepth>;
using DepthToSpaceStage = PixelShuffleStage<ShuffleDirection::ToSpace>;

}  // namespace imr
