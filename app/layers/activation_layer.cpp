#include "activation_layer.h"

#include <cmath>

namespace imr {

namespace {

class PreparedActivation : public PreparedStage {
public:
    PreparedActivation(const ActivationStage& s, TensorType type)
        : function_(s.function), slope_(s.slope), type_(type) {}
    TensorType type() const override { return type_; }
    void run(Backend& backend, const StageIO& io) override {
        ActivationArgs a;
        a.input = io.inputs[0], a.function = function_, a.slope = slope_, a.output = io.output;
        backend.activation(a);
    }

private:
    UnaryFunction function_;
    float slope_;
    TensorType type_;
};

}  // namespace

ActivationStage ActivationStage::load(LayerReader& r, const std::vector<int>& inputs) {
    require_format_v3(r, kOp);
    const std::string& at = r.where();
    ActivationStage s;
    s.channels = inputs[0];
    const std::string f = r.string_attribute("function");
    bool known = false;
    for (UnaryFunction u : {UnaryFunction::ReLU, UnaryFunction::LeakyReLU, UnaryFunction::GELU, UnaryFunction::SiLU})
        if (f == unary_function_name(u)) s.function = u, known = true;
    if (!known) throw Error(at + ": attribute 'function': expected relu, leaky_relu, gelu or silu, found '" + f + "'");
    if (r.has_attribute("slope")) {
        if (s.function != UnaryFunction::LeakyReLU)
            throw Error(at + ": attribute 'slope' is leaky_relu's; the function is " + f);
        s.slope = float(r.float_attribute("slope"));
    }
    return s;
}

void ActivationStage::write(LayerWriter& w) const {
    w.string_attribute("function", unary_function_name(function));
    if (function == UnaryFunction::LeakyReLU) w.float_attribute("slope", slope);
}

void ActivationStage::validate(const std::string& at) const {
    if (channels < 1) throw Error(at + ": channels must be positive");
    if (!std::isfinite(slope)) throw Error(at + ": slope is not finite");
}

std::string ActivationStage::describe() const {
    std::string s =
        std::string(kOp) + "      " + std::to_string(channels) + " channels, " + unary_function_name(function);
    if (function == UnaryFunction::LeakyReLU) s += " (slope " + std::to_string(slope) + ")";
    return s;
}

std::vector<double> ActivationStage::reference(const ReferenceIO& io) const {
    ActivationArgs a;
    a.input = io.input(), a.function = function, a.slope = slope;
    return reference_activation(a);
}

std::unique_ptr<PreparedStage> ActivationStage::prepare(Backend& backend, Precision precision) const {
    require(backend, Op::Activation);
    return std::make_unique<PreparedActivation>(*this, activation_type(backend, Op::Activation, precision));
}

}  // namespace imr
