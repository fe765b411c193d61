#include "elementwise_layer.h"

namespace imr {

namespace {

template <ElementwiseOp E>
class PreparedElementwise : public PreparedStage {
public:
    explicit PreparedElementwise(TensorType type) : type_(type) {}
    TensorType type() const override { return type_; }
    void run(Backend& backend, const StageIO& io) override {
        ElementwiseArgs a;
        a.lhs = io.inputs[0], a.rhs = io.inputs[1], a.op = E, a.output = io.output;
        backend.elementwise(a);
    }

private:
    TensorType type_;
};

}  // namespace

template <ElementwiseOp E>
ElementwiseStage<E> ElementwiseStage<E>::load(LayerReader& r, const std::vector<int>& inputs) {
    require_format_v3(r, kOp);
    if (inputs[1] != inputs[0])
        throw Error(r.where() + ": its inputs have " + std::to_string(inputs[0]) + " and " + std::to_string(inputs[1]) +
                    " channels; " + kOp + " needs one count");
    ElementwiseStage s;
    s.channels = inputs[0];
    return s;
}

template <ElementwiseOp E>
void ElementwiseStage<E>::validate(const std::string& at) const {
    if (channels < 1) throw Error(at + ": channels must be positive");
}

template <ElementwiseOp E>
std::string ElementwiseStage<E>::describe() const {
    return std::string(kOp) + "             " + std::to_string(channels) + " channels, " +
           (E == ElementwiseOp::Add ? "input 1 + input 2" : "input 1 * input 2");
}

template <ElementwiseOp E>
std::vector<double> ElementwiseStage<E>::reference(const ReferenceIO& io) const {
    ElementwiseArgs a;
    a.lhs = io.inputs.at(0), a.rhs = io.inputs.at(1), a.op = E;
    return reference_elementwise(a);
}

template <ElementwiseOp E>
std::unique_ptr<PreparedStage> ElementwiseStage<E>::prepare(Backend& backend, Precision precision) const {
    require(backend, Op::Elementwise);
    return std::make_unique<PreparedElementwise<E>>(activation_type(backend, Op::Elementwise, precision));
}

template struct ElementwiseStage<ElementwiseOp::Add>;
template struct ElementwiseStage<ElementwiseOp::Mul>;

}  // namespace imr
