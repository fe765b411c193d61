#include "depthwise_conv2d_layer.h"

namespace imr {

namespace {

class PreparedDepthwise : public PreparedStage {
public:
    PreparedDepthwise(const DepthwiseConv2dStage& s, Backend& backend, TensorType type)
        : type_(type), base_(s.args({})), weight_(upload(backend, s.weight)), bias_(upload(backend, s.bias)) {
        base_.weight = weight_.tensor({s.channels, 1, s.kernel, s.kernel});
        if (!s.bias.empty()) base_.bias = bias_.tensor({1, s.channels, 1, 1});
    }
    TensorType type() const override { return type_; }
    void run(Backend& backend, const StageIO& io) override {
        DepthwiseConv2dArgs a = base_;
        a.input = io.inputs[0], a.output = io.output;
        backend.depthwise_conv2d(a);
    }

private:
    TensorType type_;
    DepthwiseConv2dArgs base_;
    DeviceBuffer weight_, bias_;
};

}  // namespace

DepthwiseConv2dStage DepthwiseConv2dStage::load(LayerReader& r, const std::vector<int>& inputs) {
    require_format_v3(r, kOp);
    const std::string& at = r.where();
    DepthwiseConv2dStage s;
    s.channels = inputs[0];
    LayerReader::Tensor w = r.tensor("weight", 4);
    const unsigned long long k = w.shape[2];
    if (w.shape[0] != (unsigned long long)s.channels || w.shape[1] != 1 || w.shape[3] != k || k % 2 == 0 ||
        k > (unsigned long long)kDepthwiseMaxKernel)
        throw Error(at + ": dataset 'weight': expected [" + std::to_string(s.channels) +
                    ",1,K,K] with K odd, 1..7, found " + dims_string(w.shape));
    s.kernel = int(k);
    s.weight = std::move(w.data);
    if (r.has_tensor("bias")) s.bias = read_tensor(r, "bias", {s.channels});
    if (r.has_attribute("padding")) s.padding = read_padding(r);
    return s;
}

void DepthwiseConv2dStage::write(LayerWriter& w) const {
    if (gate) throw Error("depthwise_conv2d: a stage with the simple gate fused in is the runner's, not a file's");
    w.tensor("weight", weight, {channels, 1, kernel, kernel});
    if (!bias.empty()) w.tensor("bias", bias, {channels});
    w.string_attribute("padding", pad_mode_name(padding));
}

void DepthwiseConv2dStage::validate(const std::string& at) const {
    if (channels < 1) throw Error(at + ": channels must be positive");
    if (kernel < 1 || kernel > kDepthwiseMaxKernel || kernel % 2 == 0)
        throw Error(at + ": kernel must be odd, 1..7, found " + std::to_string(kernel));
    check_tensor(at, "weight", weight, size_t(channels) * kernel * kernel, {channels, 1, kernel, kernel});
    if (!bias.empty()) check_tensor(at, "bias", bias, size_t(channels), {channels});
    if (gate && channels % 2 != 0) throw Error(at + ": the fused simple gate needs an even channel count");
}

std::string DepthwiseConv2dStage::describe() const {
    const std::string k = std::to_string(kernel);
    return std::string(kOp) + " " + std::to_string(channels) + " channels, " + k + "x" + k + " each, " +
           pad_mode_name(padding) + " padding" + (bias.empty() ? ", no bias" : ", bias") +
           (gate ? ", simple gate -> " + std::to_string(channels / 2) + " channels" : "");
}

DepthwiseConv2dArgs DepthwiseConv2dStage::args(const Tensor& input) const {
    DepthwiseConv2dArgs a;
    a.input = input, a.kernel = kernel, a.pad_before = kernel / 2, a.pad_after = kernel / 2, a.pad_mode = padding;
    a.gate = gate;
    return a;
}

std::vector<double> DepthwiseConv2dStage::reference(const ReferenceIO& io) const {
    DepthwiseConv2dArgs a = args(io.input());
    a.weight = f32_nchw(weight.data(), {channels, 1, kernel, kernel});
    if (!bias.empty()) a.bias = f32_vector(bias.data(), channels);
    return reference_depthwise_conv2d(a);
}

std::unique_ptr<PreparedStage> DepthwiseConv2dStage::prepare(Backend& backend, Precision precision) const {
    require(backend, Op::DepthwiseConv2d);
    return std::make_unique<PreparedDepthwise>(*this, backend,
                                               activation_type(backend, Op::DepthwiseConv2d, precision));
}

}  // namespace imr
