#include "simple_gate_layer.h"

namespace imr {

namespace {

class PreparedSimpleGate : public PreparedStage {
public:
    explicit PreparedSimpleGate(TensorType type) : type_(type) {}
    TensorType type() const override { return type_; }
    void run(Backend& backend, const StageIO& io) override {
        SimpleGateArgs a;
        a.input = io.inputs[0], a.output = io.output;
        backend.simple_gate(a);
    }

private:
    TensorType type_;
};

}  // namespace

SimpleGateStage SimpleGateStage::load(LayerReader& r, const std::vector<int>& inputs) {
    require_format_v3(r, kOp);
    if (inputs[0] % 2)
        throw Error(r.where() + ": receives " + std::to_string(inputs[0]) +
                    " channels; simple_gate needs an even count");
    SimpleGateStage s;
    s.channels = inputs[0];
    return s;
}

void SimpleGateStage::validate(const std::string& at) const {
    if (channels < 2 || channels % 2) throw Error(at + ": needs an even, positive channel count");
}

std::string SimpleGateStage::describe() const {
    return std::string(kOp) + "     " + std::to_string(channels) + " -> " + std::to_string(channels / 2) +
           " channels, first half * second half";
}

std::vector<double> SimpleGateStage::reference(const ReferenceIO& io) const {
    SimpleGateArgs a;
    a.input = io.input();
    return reference_simple_gate(a);
}

std::unique_ptr<PreparedStage> SimpleGateStage::prepare(Backend& backend, Precision precision) const {
    require(backend, Op::SimpleGate);
    return std::make_unique<PreparedSimpleGate>(activation_type(backend, Op::SimpleGate, precision));
}

}  // namespace imr
