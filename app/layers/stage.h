// The list of layer kinds a model can hold: add a kind here (its file, and
// its example in tests/test_layers.cpp), nowhere else. Everything that
// depends on the kind goes through std::visit over this variant, so a kind
// that lacks a member of the layer interface (layer.h) is a compile error.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "activation_layer.h"
#include "channel_attention_layer.h"
#include "concat_layer.h"
#include "conv2d_layer.h"
#include "conv_transpose2d_layer.h"
#include "depthwise_conv2d_layer.h"
#include "elementwise_layer.h"
#include "layer_norm_layer.h"
#include "pixel_shuffle_layer.h"
#include "residual_block_layer.h"
#include "simple_gate_layer.h"

namespace imr {

using Stage = std::variant<ResidualBlockStage, Conv2dStage, SpaceToDepthStage, DepthToSpaceStage, ConvTranspose2dStage,
                           AddStage, MulStage, ConcatStage, ActivationStage, SimpleGateStage, LayerNormStage,
                           DepthwiseConv2dStage, ChannelAttentionStage>;

// Reads the stage of kind `op` (the group's "op" attribute) that receives
// inputs of these channel counts; unknown ops are an error listing the known
// ones, and so is a number of inputs the kind does not take.
Stage load_stage(const std::string& op, LayerReader& reader, const std::vector<int>& channels);
// "residual_block, conv2d, space_to_depth, depth_to_space"
std::string known_ops();

inline const char* stage_op_name(const Stage& s) {
    return std::visit([](const auto& st) { return std::decay_t<decltype(st)>::kOp; }, s);
}
inline int stage_in_channels(const Stage& s, int k = 0) {
    return std::visit([k](const auto& st) { return st.channels_in(k); }, s);
}
// How many inputs the kind takes: [kMinInputs, kMaxInputs].
inline std::pair<int, int> stage_input_range(const Stage& s) {
    return std::visit(
        [](const auto& st) {
            using K = std::decay_t<decltype(st)>;
            return std::pair<int, int>{K::kMinInputs, K::kMaxInputs};
        },
        s);
}
inline double stage_flops_per_pixel(const Stage& s) {
    return std::visit([](const auto& st) { return st.flops_per_pixel(); }, s);
}
inline int stage_out_channels(const Stage& s) {
    return std::visit([](const auto& st) { return st.channels_out(); }, s);
}
inline bool stage_adds_model_input(const Stage& s) {
    return std::visit([](const auto& st) { return st.adds_model_input(); }, s);
}
inline Geometry stage_geometry(const Stage& s) {
    return std::visit([](const auto& st) { return st.geometry(); }, s);
}

}  // namespace imr
