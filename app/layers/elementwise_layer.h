// add and mul layers (format v3): the element-wise sum or product of two
// tensors of one shape (a U-Net's skip connection, a gate). The op:
// kernels/ops/elementwise.h.
//
// In a model file (this comment is the normative spec of the two stages; the
// file around them: weights/README.md), no datasets or attributes:
//   op = "add": out = a + b;   op = "mul": out = a * b
// where a and b are the stage's two inputs (attribute 'inputs'), of the same
// channel count and scale (a tensor may be both: add(x, x) is 2x). Window 1,
// radius 0, scale kept.
// Refused: other than two inputs; inputs of different channels or scales;
// either kind before format v3.
#pragma once

#include "layer.h"

namespace imr {

template <ElementwiseOp E>
struct ElementwiseStage {
    static constexpr const char* kOp = E == ElementwiseOp::Add ? "add" : "mul";
    static constexpr int kMinInputs = 2, kMaxInputs = 2;
    int channels = 0;

    static ElementwiseStage load(LayerReader& r, const std::vector<int>& channels);
    void write(LayerWriter&) const {}
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

using AddStage = ElementwiseStage<ElementwiseOp::Add>;
using MulStage = ElementwiseStage<ElementwiseOp::Mul>;

}  // namespace imr
