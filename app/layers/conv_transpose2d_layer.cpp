#include "conv_transpose2d_layer.h"

namespace imr {

namespace {

class PreparedConvTranspose2d : public PreparedStage {
public:
    // The 1x1 convolution's weight [Cout*f*f, Cin]: row o*f*f + i*f + j is
    // the stage's weight[:, o, i, j]; its bias repeats bias[o] f*f times, so
    // depth_to_space(f) of its output puts each (i, j) where torch does.
    PreparedConvTranspose2d(const ConvTranspose2dStage& s, Backend& backend, TensorType type)
        : type_(type), factor_(s.factor) {
        const int f = s.factor, ff = f * f, cin = s.in_channels, cout = s.out_channels;
        std::vector<float> w(size_t(cout) * ff * cin), b;
        for (int c = 0; c < cin; ++c)
            for (int o = 0; o < cout; ++o)
                for (int k = 0; k < ff; ++k)
                    w[(size_t(o) * ff + k) * cin + c] = s.weight[(size_t(c) * cout + o) * ff + k];
        if (!s.bias.empty())
            for (int o = 0; o < cout; ++o) b.insert(b.end(), size_t(ff), s.bias[size_t(o)]);
        weight_ = upload(backend, w), bias_ = upload(backend, b);
        base_.input = {nullptr, {1, cin, 1, 1}, type.dtype, type.layout};
        base_.out_channels = cout * ff, base_.kernel = 1;
        base_.weight = weight_.tensor({cout * ff, cin, 1, 1});
        if (!b.empty()) base_.bias = bias_.tensor({1, cout * ff, 1, 1});
        base_.output = {nullptr, {1, cout * ff, 1, 1}, type.dtype, type.layout};
        packed_ = backend.prepare(base_);
        base_.prepared = packed_.get();
    }
    TensorType type() const override { return type_; }
    size_t scratch_bytes(const Shape& in, TensorType type) const override {
        return Tensor{nullptr, {in.n, base_.out_channels, in.h, in.w}, type.dtype, type.layout}.bytes();
    }
    void run(Backend& backend, const StageIO& io) override {
        Conv2dArgs c = base_;
        c.input = io.inputs[0];
        c.output = io.inputs[0];
        c.output.data = io.scratch, c.output.shape = c.out_shape();
        c.plan_pixels = plan_pixels(io, c.output.shape);
        backend.conv2d(c);
        PixelShuffleArgs s;
        s.input = c.output, s.factor = factor_, s.direction = ShuffleDirection::ToSpace;
        s.output = io.output;
        if (io.inputs.size() > 1) s.residual = io.inputs[1];
        backend.pixel_shuffle(s);
    }

private:
    TensorType type_;
    int factor_;
    DeviceBuffer weight_, bias_;
    Conv2dArgs base_;
    std::unique_ptr<PreparedWeights> packed_;
};

}  // namespace

ConvTranspose2dStage ConvTranspose2dStage::load(LayerReader& r, const std::vector<int>& inputs) {
    const std::string& at = r.where();
    require_format_v3(r, kOp);
    ConvTranspose2dStage s;
    const long long f = r.int_attribute("stride");
    if (f < 2 || f > 8) throw Error(at + ": attribute 'stride': expected 2..8, found " + std::to_string(f));
    s.factor = int(f);
    LayerReader::Tensor w = r.tensor("weight", 4);
    if (w.shape[0] != (unsigned long long)inputs[0])
        throw Error(at + ": dataset 'weight': expected " + std::to_string(inputs[0]) +
                    " input channels first (from the stage before; [in,out,f,f]), found " + dims_string(w.shape));
    if (w.shape[1] == 0 || w.shape[1] > (unsigned long long)kMaxChannels)
        throw Error(at + ": dataset 'weight': expected 1..4096 output channels, found " + dims_string(w.shape));
    if (w.shape[2] != (unsigned long long)f || w.shape[3] != (unsigned long long)f)
        throw Error(at + ": dataset 'weight': expected a " + std::to_string(f) + "x" + std::to_string(f) +
                    " kernel (the stride), found " + dims_string(w.shape));
    s.in_channels = inputs[0];
    s.out_channels = int(w.shape[1]);
    s.weight = std::move(w.data);
    if (r.has_tensor("bias")) s.bias = read_tensor(r, "bias", {s.out_channels});
    if (inputs.size() > 1) {
        if (inputs[1] != s.out_channels)
            throw Error(at + ": its second input (the residual) has " + std::to_string(inputs[1]) +
                        " channels, the output " + std::to_string(s.out_channels));
        s.adds_input = true;
    }
    return s;
}

void ConvTranspose2dStage::write(LayerWriter& w) const {
    w.tensor("weight", weight, {in_channels, out_channels, factor, factor});
    if (!bias.empty()) w.tensor("bias", bias, {out_channels});
    w.int_attribute("stride", factor);
}

void ConvTranspose2dStage::validate(const std::string& at) const {
    if (in_channels < 1 || out_channels < 1) throw Error(at + ": channels must be positive");
    if (factor < 2 || factor > 8) throw Error(at + ": stride must be 2..8, found " + std::to_string(factor));
    check_tensor(at, "weight", weight, size_t(in_channels) * out_channels * factor * factor,
                 {in_channels, out_channels, factor, factor});
    if (!bias.empty()) check_tensor(at, "bias", bias, size_t(out_channels), {out_channels});
}

std::string ConvTranspose2dStage::describe() const {
    const std::string f = std::to_string(factor);
    std::string s = std::string(kOp) + " " + std::to_string(in_channels) + " -> " + std::to_string(out_channels) +
                    " channels, " + f + "x" + f + " stride " + f + " (x" + f + " resolution)" +
                    (bias.empty() ? ", no bias" : ", bias");
    if (adds_input) s += ", + input 2";
    return s;
}

std::vector<double> ConvTranspose2dStage::reference(const ReferenceIO& io) const {
    const Tensor& in = io.input();
    const Shape s = in.shape;
    const int f = factor;
    const Tensor r = io.inputs.size() > 1 ? io.inputs[1] : Tensor{};
    const int oh = s.h * f, ow = s.w * f;
    std::vector<double> out(size_t(s.n) * out_channels * oh * ow);
    size_t i = 0;
    for (int n = 0; n < s.n; ++n)
        for (int o = 0; o < out_channels; ++o)
            for (int y = 0; y < oh; ++y)
                for (int x = 0; x < ow; ++x, ++i) {
                    double v = bias.empty() ? 0.0 : double(bias[size_t(o)]);
                    for (int c = 0; c < in_channels; ++c)
                        v += double(weight[((size_t(c) * out_channels + o) * f + y % f) * f + x % f]) *
                             double(load_float(in, in.offset(n, c, y / f, x / f)));
                    if (r) v += double(load_float(r, r.offset(n, o, y, x)));
                    out[i] = v;
                }
    return out;
}

std::unique_ptr<PreparedStage> ConvTranspose2dStage::prepare(Backend& backend, Precision precision) const {
    require(backend, Op::Conv2d);
    require(backend, Op::PixelShuffle);
    const TensorType type = activation_type(backend, Op::Conv2d, precision);
    if (type != TensorType{} && backend.supports(Op::PixelShuffle, type.dtype, type.layout)) {
        try {
            return std::make_unique<PreparedConvTranspose2d>(*this, backend, type);
        } catch (const NotApplicable&) {
            // No half-precision kernel for this shape: f32.
        }
    }
    return std::make_unique<PreparedConvTranspose2d>(*this, backend, TensorType{});
}

}  // namespace imr
