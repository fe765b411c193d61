#include "conv2d_layer.h"

#include <algorithm>

namespace imr {

namespace {

Activation parse_activation(const std::string& s, const std::string& at) {
    if (s == "none") return Activation::None;
    if (s == "relu") return Activation::ReLU;
    throw Error(at + ": attribute 'activation': expected none or relu, found '" + s + "'");
}

class PreparedConv2d : public PreparedStage {
public:
    // Throws imr::NotApplicable when the backend has no kernel for this shape
    // in `type` (Conv2dStage::prepare then takes f32). A strided stage is a
    // space_to_depth into scratch and a 1x1 convolution of that, whose
    // weight is the same array read as [Cout, Cin*f*f, 1, 1].
    PreparedConv2d(const Conv2dStage& s, Backend& backend, TensorType type, bool tf32)
        : type_(type),
          stride_(s.stride),
          base_(s.args(Tensor{nullptr, {1, s.in_channels * s.stride * s.stride, 1, 1}, type.dtype, type.layout})),
          add_model_input_(s.add_model_input),
          weight_(upload(backend, s.weight)),
          bias_(upload(backend, s.bias)) {
        base_.weight = weight_.tensor({s.out_channels, base_.input.shape.c, base_.kernel, base_.kernel});
        if (!s.bias.empty()) base_.bias = bias_.tensor({1, s.out_channels, 1, 1});
        base_.output = Tensor{nullptr, {1, s.channels_out(), 1, 1}, type.dtype, type.layout};
        base_.tf32 = tf32;
        // A fused gate the backend's kernel cannot take (f32, a 3x3, odd
        // channel counts): the layer convolves into its scratch (which the
        // runner's memory plan counts) and runs simple_gate after.
        gate_after_ = s.gate && !backend.conv2d_gates_in_epilogue(base_);
        if (gate_after_) base_.gate = false, base_.output.shape.c = s.out_channels;
        packed_ = backend.prepare(base_);
        base_.prepared = packed_.get();
        const TensorType f32{};
        // Does a kernel take the f32 NCHW batch in, or write it out? (Not
        // with a gate: its epilogue writes half, and gating after keeps the
        // stage's type at both ends, which its scratch is sized for.)
        if (type != f32 && !s.gate) {
            reads_f32_ = stride_ == 1 && takes(backend, f32, type);  // space_to_depth keeps the type
            writes_f32_ = takes(backend, type, f32);
        }
    }
    TensorType type() const override { return type_; }
    bool reads_f32() const override { return reads_f32_; }
    bool writes_f32() const override { return writes_f32_; }
    size_t scratch_bytes(const Shape& in, TensorType type) const override {
        if (gate_after_) return sums(Tensor{nullptr, in, type.dtype, type.layout}).bytes();
        if (stride_ == 1) return 0;
        return blocks(Tensor{nullptr, in, type.dtype, type.layout}).bytes();
    }
    void run(Backend& backend, const StageIO& io) override {
        Conv2dArgs a = base_;
        a.input = io.inputs[0], a.output = io.output;
        if (io.inputs.size() > 1) a.residual = io.inputs[1];
        if (add_model_input_) a.residual = io.model_input;
        a.plan_pixels = plan_pixels(io, io.output.shape);
        if (stride_ > 1) {
            PixelShuffleArgs s;
            s.input = io.inputs[0], s.factor = stride_, s.direction = ShuffleDirection::ToDepth;
            s.output = blocks(io.inputs[0]);
            s.output.data = io.scratch;
            backend.pixel_shuffle(s);
            a.input = s.output;
        }
        if (!gate_after_) return backend.conv2d(a);
        SimpleGateArgs g;  // stride 1, the stage's own type at both ends: the scratch holds the sums
        g.input = sums(io.output), g.output = io.output;
        g.input.data = io.scratch;
        a.output = g.input;
        backend.conv2d(a);
        backend.simple_gate(g);
    }

private:
    // The un-gated sums a stride-1 convolution of `in` makes: its type, no data.
    Tensor sums(const Tensor& in) const {
        Tensor t = in;
        t.data = nullptr;
        t.shape.c = base_.out_channels;
        return t;
    }
    // The space_to_depth(stride) of `in`: its type, no data.
    Tensor blocks(const Tensor& in) const {
        Tensor t = in;
        t.data = nullptr;
        t.shape = {in.shape.n, in.shape.c * stride_ * stride_, in.shape.h / stride_, in.shape.w / stride_};
        return t;
    }
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
    int stride_;
    bool gate_after_ = false;  // simple_gate after the convolution, from the scratch
    bool reads_f32_ = false, writes_f32_ = false;
    Conv2dArgs base_;
    bool add_model_input_;
    DeviceBuffer weight_, bias_;
    std::unique_ptr<PreparedWeights> packed_;
};

}  // namespace

Conv2dStage Conv2dStage::load(LayerReader& r, const std::vector<int>& inputs) {
    const std::string& at = r.where();
    const int channels = inputs[0];
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
    if (r.has_tensor("bias")) conv.bias = read_tensor(r, "bias", {conv.out_channels});
    if (r.has_attribute("padding")) conv.padding = read_padding(r);
    if (r.has_attribute("activation")) {
        if (r.format_version() < 2)
            throw Error(at + ": attribute 'activation' needs format_version 2 (the file says " +
                        std::to_string(r.format_version()) + ")");
        conv.activation = parse_activation(r.string_attribute("activation"), at);
    }
    conv.add_model_input = read_add_model_input(r);
    if (r.has_attribute("stride")) {
        if (r.format_version() < 3)
            throw Error(at + ": attribute 'stride' needs format_version 3 (the file says " +
                        std::to_string(r.format_version()) + ")");
        const long long stride = r.int_attribute("stride");
        if (stride != 1 && (stride != conv.kernel || stride < 2 || stride > 8))
            throw Error(at + ": attribute 'stride': expected 1, or the kernel size " + std::to_string(conv.kernel) +
                        " when that is 2..8, found " + std::to_string(stride));
        conv.stride = int(stride);
    }
    if (inputs.size() > 1) {
        if (conv.add_model_input) throw Error(at + ": adds a second input and the model input; one residual at most");
        if (inputs[1] != conv.out_channels)
            throw Error(at + ": its second input (the residual) has " + std::to_string(inputs[1]) +
                        " channels, the output " + std::to_string(conv.out_channels));
        conv.adds_input = true;
    }
    return conv;
}

void Conv2dStage::write(LayerWriter& w) const {
    if (gate) throw Error("conv2d: a stage with the simple gate fused in is the runner's, not a file's");
    w.tensor("weight", weight, {out_channels, in_channels, kernel, kernel});
    if (!bias.empty()) w.tensor("bias", bias, {out_channels});
    if (stride == 1) w.string_attribute("padding", pad_mode_name(padding));  // blocks are never padded
    if (activation != Activation::None) w.string_attribute("activation", activation_name(activation));
    if (add_model_input) w.int_attribute("add_model_input", 1);
    if (stride != 1) w.int_attribute("stride", stride);
}

void Conv2dStage::validate(const std::string& at) const {
    if (out_channels < 1 || in_channels < 1 || kernel < 1)
        throw Error(at + ": channels and kernel size must be positive");
    check_tensor(at, "weight", weight, size_t(out_channels) * in_channels * kernel * kernel,
                 {out_channels, in_channels, kernel, kernel});
    if (!bias.empty()) check_tensor(at, "bias", bias, size_t(out_channels), {out_channels});
    if (stride != 1 && (stride != kernel || stride < 2 || stride > 8))
        throw Error(at + ": stride " + std::to_string(stride) + " with a " + std::to_string(kernel) + "x" +
                    std::to_string(kernel) + " kernel: expected 1, or the kernel size when that is 2..8");
    if (adds_input && add_model_input) throw Error(at + ": adds a second input and the model input");
    if (gate &&
        (stride != 1 || out_channels % 2 != 0 || activation != Activation::None || adds_input || add_model_input))
        throw Error(at +
                    ": the fused simple gate needs stride 1, an even channel count, no activation and nothing added");
}

std::string Conv2dStage::describe() const {
    std::string s = "conv2d          " + std::to_string(in_channels) + " -> " + std::to_string(out_channels) +
                    " channels, " + std::to_string(kernel) + "x" + std::to_string(kernel) +
                    (stride > 1    ? ", stride " + std::to_string(stride)
                     : kernel == 1 ? std::string()
                                   : ", " + std::string(pad_mode_name(padding)) + " padding " +
                                         std::to_string(pad_before()) + "/" + std::to_string(pad_after())) +
                    (bias.empty() ? ", no bias" : ", bias");
    if (activation != Activation::None) s += std::string(", ") + activation_name(activation);
    if (add_model_input) s += ", + model input";
    if (adds_input) s += ", + input 2";
    if (gate) s += ", simple gate -> " + std::to_string(out_channels / 2) + " channels";
    return s;
}

Conv2dArgs Conv2dStage::args(const Tensor& input) const {
    Conv2dArgs a;
    a.input = input;
    a.out_channels = out_channels;
    a.kernel = stride > 1 ? 1 : kernel;
    a.pad_before = pad_before(), a.pad_after = pad_after();
    a.pad_mode = padding;
    a.activation = activation;
    a.gate = gate;
    return a;
}

std::vector<double> Conv2dStage::reference(const ReferenceIO& io) const {
    if (stride > 1) {  // the definition itself, independent of the space_to_depth + 1x1 route the backends take
        const Tensor& in = io.input();
        const Shape s = in.shape;
        const int f = stride, oh = s.h / f, ow = s.w / f;
        const Tensor r = io.inputs.size() > 1 ? io.inputs[1] : add_model_input ? io.model_input : Tensor{};
        std::vector<double> out(size_t(s.n) * out_channels * oh * ow);
        size_t i = 0;
        for (int n = 0; n < s.n; ++n)
            for (int o = 0; o < out_channels; ++o)
                for (int y = 0; y < oh; ++y)
                    for (int x = 0; x < ow; ++x, ++i) {
                        double v = bias.empty() ? 0.0 : double(bias[size_t(o)]);
                        for (int c = 0; c < in_channels; ++c)
                            for (int dy = 0; dy < f; ++dy)
                                for (int dx = 0; dx < f; ++dx)
                                    v += double(weight[((size_t(o) * in_channels + c) * f + dy) * f + dx]) *
                                         double(load_float(in, in.offset(n, c, f * y + dy, f * x + dx)));
                        if (activation == Activation::ReLU) v = std::max(v, 0.0);
                        if (r) v += double(load_float(r, r.offset(n, o, y, x)));
                        out[i] = v;
                    }
        return out;
    }
    Conv2dArgs a = args(io.input());
    a.weight = f32_nchw(weight.data(), {out_channels, in_channels, kernel, kernel});
    if (!bias.empty()) a.bias = f32_vector(bias.data(), out_channels);
    if (add_model_input) a.residual = io.model_input;
    if (io.inputs.size() > 1) a.residual = io.inputs[1];
    return reference_conv2d(a);
}

std::unique_ptr<PreparedStage> Conv2dStage::prepare(Backend& backend, Precision precision) const {
    require(backend, Op::Conv2d);
    if (gate) require(backend, Op::SimpleGate);
    if (stride > 1) require(backend, Op::PixelShuffle);
    const TensorType type = activation_type(backend, Op::Conv2d, precision);
    if (type != TensorType{} && (stride == 1 || backend.supports(Op::PixelShuffle, type.dtype, type.layout))) {
        try {
            return std::make_unique<PreparedConv2d>(*this, backend, type, false);
        } catch (const NotApplicable&) {
            // No half-precision kernel for this shape (a 5x5 on tensor cores): f32.
        }
    }
    return std::make_unique<PreparedConv2d>(*this, backend, TensorType{}, precision == Precision::Tf32);
}

}  // namespace imr
