// simple_gate layer (format v3): NAFNet's SimpleGate, the first half of the
// channels times the second (the op: kernels/ops/simple_gate.h).
//
// In a model file (this comment is the normative spec of the stage; the file
// around it: weights/README.md): op = "simple_gate", no datasets or
// attributes; one input of C channels, C even:
//   out[c] = x[c] * x[c + C/2],  C/2 channels; scale kept; window 1, radius 0.
// Refused: an odd channel count; before format v3.
#pragma once

#include "layer.h"

namespace imr {

struct SimpleGateStage {
    static constexpr const char* kOp = "simple_gate";
    static constexpr int kMinInputs = 1, kMaxInputs = 1;
    int channels = 0;  // received (even)

    static SimpleGateStage load(LayerReader& r, const std::vector<int>& channels);
    void write(LayerWriter&) const {}
    void validate(const std::string& at) const;
    int min_format_version() const { return 3; }
    int channels_in(int = 0) const { return channels; }
    int channels_out() const { return channels / 2; }
    Geometry geometry() const { return {}; }
    size_t parameter_count() const { return 0; }
    double flops_per_pixel() const { return channels / 2; }
    bool adds_model_input() const { return false; }
    std::string describe() const;
    std::vector<double> reference(const ReferenceIO& io) const;
    std::unique_ptr<PreparedStage> prepare(Backend& backend, Precision precision) const;
};

}  // namespace imr
