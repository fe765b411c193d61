#include "conv2d_layer.h"

#include <algorithm>

namespace imr {

namespace {

PadMode parse_padding(const std::string& s, const std::string& at) {
    if (s == "reflect") return PadMode::Reflect;
    if (s == "replicate") return PadMode::Replicate;
    if (s == "zero") return PadMode::Zero;
    throw Error(at + ": attribute 'padding': expected reflect, replicate or zero, found '" + s + "'");
}

Activation parse_activation(const std::string& s, const std::string& at) {
    if (s == "none") return Activation::None;
    if (s == "relu") return Activation::ReLU;
    throw Error(at + ": attribute 'activation': expected none or relu, found '" + s + "'");
}

class PreparedConv2d : public PreparedStage {
public:
    // Throws imr::NotApplicable when the backend has no kernel for this shape
    // in `type` (Conv2dStage::prepare then takes f32).
    PreparedConv2d(const Conv2dStage& s, Backend& backend, TensorType type)
        : type_(type),
          base_(s.args(Tensor{nullptr, {1, s.in_channels, 1, 1}, type.dtype, type.layout})),
          add_model_input_(s.add_model_input),
          weight_(upload(backend, s.weight)),
          bias_(upload(backend, s.bias)) {
        base_.weight = weight_.tensor({s.out_channels, s.in_channels, s.kernel, s.kernel});
        if (!s.bias.empty()) base_.bias = bias_.tensor({1, s.out_channels, 1, 1});
        base_.output = Tensor{nullptr, {1, s.out_channels, 1, 1}, type.dtype, type.layout};
        packed_ = backend.prepare(base_);
        base_.prepared = packed_.get();
        const TensorType f32{};
        if (type != f32) {  // does a kernel take the f32 NCHW batch in, or write it out?
            reads_f32_ = takes(backend, f32, type), writes_f32_ = takes(backend, type, f32);
        }
    }
    TensorType type() const override { return type_; }
    bool reads_f32() const override { return reads_f32_; }
    bool writes_f32() const override { return writes_f32_; }
    void run(Backend& backend, const Tensor& input, const Tensor& output, const Tensor& model_input) override {
        Conv2dArgs a = base_;
        a.input = input, a.output = output;
        if (add_model_input_) a.residual = model_input;
        backend.conv2d(a);
    }

private:
    // Whether the backend has a kernel for this layer from `in` to `out` (its
    // prepare says NotApplicable where not; the weights it packs are those of
    // the same compute type, so the first packing serves every pair).
    bool takes(Backend& backend, TensorType in, TensorType out) const {
        Conv2dArgs a = base_;
        a.input.dtype = in.dtype, a.input.layout = in.layout;
        a.output.dtype = out.dtype, a.output.layout = out.layout;
        a.prepared = nullptr;
        try {
            backend.prepare(a);
            return true;
        } catch (const NotApplicable&) {
            return false;
        }
    }
    TensorType type_;
    bool reads_f32_ = false, writes_f32_ = false;
    Conv2dArgs base_;
    bool add_model_input_;
    DeviceBuffer weight_, bias_;
    std::unique_ptr<PreparedWeights> packed_;
};

}  // namespace

Conv2dStage Conv2dStage::load(LayerReader& r, int channels) {
    const std::string& at = r.where();
    Conv2dStage conv;
    LayerReader::Tensor w = r.tensor("weight", 4);
    if (w.shape[2] != w.shape[3] || w.shape[2] == 0 || w.shape[2] > 64)
        throw Error(at + ": dataset 'weight': expected a square kernel of at most 64x64 [out,in,K,K], found " +
                    dims_string(w.shape));
    if (w.shape[0] == 0 || w.shape[0] > (unsigned long long)kMaxChannels)
        throw Error(at + ": dataset 'weight': expected 1..4096 output channels, found " + dims_string(w.shape));
    conv.out_channels = int(w.shape[0]);
    conv.kernel = int(w.shape[2]);
    if (w.shape[1] != (unsigned long long)channels)
        throw Error(at + ": dataset 'weight': expected " + std::to_string(channels) +
                    " input channels (from the stage before), found " + dims_string(w.shape));
    conv.in_channels = channels;
    conv.weight = std::move(w.data);
    if (r.has_tensor("bias")) {
        LayerReader::Tensor b = r.tensor("bias", 1);
        expect_shape(r, b, "bias", {conv.out_channels});
        conv.bias = std::move(b.data);
    }
    if (r.has_attribute("padding")) conv.padding = parse_padding(r.string_attribute("padding"), at);
    if (r.has_attribute("activation")) {
        if (r.format_version() < 2)
            throw Error(at + ": attribute 'activation' needs format_version 2 (the file says " +
                        std::to_string(r.format_version()) + ")");
        conv.activation = parse_activation(r.string_attribute("activation"), at);
    }
    conv.add_model_input = read_add_model_input(r);
    return conv;
}

void Conv2dStage::write(LayerWriter& w) const {
    w.tensor("weight", weight, {out_channels, in_channels, kernel, kernel});
    if (!bias.empty()) w.tensor("bias", bias, {out_channels});
    w.string_attribute("padding", pad_mode_name(padding));
    if (activation != Activation::None) w.string_attribute("activation", activation_name(activation));
    if (add_model_input) w.int_attribute("add_model_input", 1);
}

void Conv2dStage::validate(const std::string& at) const {
    if (out_channels < 1 || in_channels < 1 || kernel < 1)
        throw Error(at + ": channels and kernel size must be positive");
    check_tensor(at, "weight", weight, size_t(out_channels) * in_channels * kernel * kernel,
                 {out_channels, in_channels, kernel, kernel});
    if (!bias.empty()) check_tensor(at, "bias", bias, size_t(out_channels), {out_channels});
}

std::string Conv2dStage::describe() const {
    std::string s = "conv2d          " + std::to_string(in_channels) + " -> " + std::to_string(out_channels) +
                    " channels, " + std::to_string(kernel) + "x" + std::to_string(kernel) + ", " +
                    pad_mode_name(padding) + " padding " + std::to_string(pad_before()) + "/" +
                    std::to_string(pad_after()) + (bias.empty() ? ", no bias" : ", bias");
    if (activation != Activation::None) s += std::string(", ") + activation_name(activation);
    if (add_model_input) s += ", + model input";
    return s;
}

Conv2dArgs Conv2dStage::args(const Tensor& input) const {
    Conv2dArgs a;
    a.input = input;
    a.out_channels = out_channels;
    a.kernel = kernel;
    a.pad_before = pad_before(), a.pad_after = pad_after();
    a.pad_mode = padding;
    a.activation = activation;
    return a;
}

std::vector<double> Conv2dStage::reference(const ReferenceIO& io) const {
    Conv2dArgs a = args(io.input);
    a.weight = f32_nchw(weight.data(), {out_channels, in_channels, kernel, kernel});
    if (!bias.empty()) a.bias = f32_vector(bias.data(), out_channels);
    if (add_model_input) a.residual = io.model_input;
    return reference_conv2d(a);
}

std::unique_ptr<PreparedStage> Conv2dStage::prepare(Backend& backend, Precision precision) const {
    require(backend, Op::Conv2d);
    const TensorType type = activation_type(backend, Op::Conv2d, precision);
    if (type != TensorType{}) {
        try {
            return std::make_unique<PreparedConv2d>(*this, backend, type);
        } catch (const NotApplicable&) {
            // No half-precision kernel for this shape (a 5x5 on tensor cores): f32.
        }
    }
    return std::make_unique<PreparedConv2d>(*this, backend, TensorType{});
}

}  // namespace imr
