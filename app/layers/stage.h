// The list of layer kinds a model can hold: add a kind here (its file, and
// its example in tests/test_layers.cpp), nowhere else. Everything that
// depends on the kind goes through std::visit over this variant, so a kind
// that lacks a member of the layer interface (layer.h) is a compile error.
#pragma once

#include <string>
#include <variant>

#include "conv2d_layer.h"
#include "pixel_shuffle_layer.h"
#include "residual_block_layer.h"

namespace imr {

using Stage = std::variant<ResidualBlockStage, Conv2dStage, SpaceToDepthStage, DepthToSpaceStage>;

// Reads the stage of kind `op` (the group's "op" attribute); unknown ops are
// an error listing the known ones.
Stage load_stage(const std::string& op, LayerReader& reader, int channels);
// "residual_block, conv2d, space_to_depth, depth_to_space"
std::string known_ops();

inline const char* stage_op_name(const Stage& s) {
    return std::visit([](const auto& st) { return std::decay_t<decltype(st)>::kOp; }, s);
}
inline int stage_in_channels(const Stage& s) {
    return std::visit([](const auto& st) { return st.channels_in(); }, s);
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
