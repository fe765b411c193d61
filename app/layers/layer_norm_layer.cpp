#include "layer_norm_layer.h"

#include <cmath>
#include <limits>

namespace imr {

namespace {

class PreparedLayerNorm : public PreparedStage {
public:
    PreparedLayerNorm(const LayerNormStage& s, Backend& backend, TensorType type)
        : type_(type), weight_(upload(backend, s.weight)), bias_(upload(backend, s.bias)), eps_(s.eps) {
        shape_ = {1, s.channels, 1, 1};
    }
    TensorType type() const override { return type_; }
    void run(Backend& backend, const StageIO& io) override {
        LayerNormArgs a;
        a.input = io.inputs[0], a.output = io.output;
        a.weight = weight_.tensor(shape_), a.bias = bias_.tensor(shape_), a.eps = eps_;
        backend.layer_norm(a);
    }

private:
    TensorType type_;
    DeviceBuffer weight_, bias_;
    float eps_;
    Shape shape_;
};

}  // namespace

LayerNormStage LayerNormStage::load(LayerReader& r, const std::vector<int>& inputs) {
    require_format_v3(r, kOp);
    LayerNormStage s;
    s.channels = inputs[0];
    s.weight = read_tensor(r, "weight", {s.channels});
    s.bias = read_tensor(r, "bias", {s.channels});
    if (r.has_attribute("eps")) {
        const double eps = r.float_attribute("eps");
        if (!(eps >= double(std::numeric_limits<float>::min())))  // float32 would flush a smaller one to 0
            throw Error(r.where() +
                        ": attribute 'eps': expected a positive number of at least 1.2e-38 (float32's "
                        "smallest normal), found " +
                        std::to_string(eps));
        s.eps = float(eps);
    }
    return s;
}

void LayerNormStage::write(LayerWriter& w) const {
    w.tensor("weight", weight, {channels});
    w.tensor("bias", bias, {channels});
    w.float_attribute("eps", eps);
}

void LayerNormStage::validate(const std::string& at) const {
    if (channels < 1) throw Error(at + ": channels must be positive");
    check_tensor(at, "weight", weight, size_t(channels), {channels});
    check_tensor(at, "bias", bias, size_t(channels), {channels});
    if (!(eps > 0) || !std::isfinite(eps)) throw Error(at + ": eps must be positive and finite");
}

std::string LayerNormStage::describe() const {
    char e[32];
    std::snprintf(e, sizeof e, "%g", double(eps));
    return std::string(kOp) + "      " + std::to_string(channels) + " channels, over the channels of each pixel, eps " +
           e;
}

std::vector<double> LayerNormStage::reference(const ReferenceIO& io) const {
    LayerNormArgs a;
    a.input = io.input();
    a.weight = f32_vector(weight.data(), channels), a.bias = f32_vector(bias.data(), channels), a.eps = eps;
    return reference_layer_norm(a);
}

std::unique_ptr<PreparedStage> LayerNormStage::prepare(Backend& backend, Precision precision) const {
    require(backend, Op::LayerNorm);
    return std::make_unique<PreparedLayerNorm>(*this, backend, activation_type(backend, Op::LayerNorm, precision));
}

}  // namespace imr
