// concat layer (format v3): the channels of 2..16 tensors of one scale, in
// order (torch.cat(dim=1); the op: kernels/ops/concat.h).
//
// In a model file (this comment is the normative spec of the stage; the file
// around it: weights/README.md): op = "concat", no datasets or attributes;
// 2..16 inputs at one scale, C_1 + C_2 + ... channels out (at most 4096);
// window 1, radius 0, scale kept.
// Refused: fewer than 2 or more than 16 inputs; more than 4096 channels; inputs
// at different scales; before format v3.
#pragma once

#include "layer.h"

namespace imr {

struct ConcatStage {
    static constexpr const char* kOp = "concat";
    static constexpr int kMinInputs = 2, kMaxInputs = kConcatMaxInputs;
    std::vector<int> channels;  // of each input

    static ConcatStage load(LayerReader& r, const std::vector<int>& channels);
    void write(LayerWriter&) const {}
    void validate(const std::string& at) const;
    int min_format_version() const { return 3; }
    int channels_in(int k = 0) const { return k < int(channels.size()) ? channels[size_t(k)] : 0; }
    int channels_out() const;
    Geometry geometry() const { return {}; }
    size_t parameter_count() const { return 0; }
    double flops_per_pixel() const { return 0; }  // moves, no arithmetic
    bool adds_model_input() const { return false; }
    std::string describe() const;
    std::vector<double> reference(const ReferenceIO& io) const;
    std::unique_ptr<PreparedStage> prepare(Backend& backend, Precision precision) const;
};

}  // namespace imr
