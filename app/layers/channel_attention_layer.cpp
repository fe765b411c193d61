#include "channel_attention_layer.h"

namespace imr {

namespace {

// window_mean into the scratch, then the 1x1 convolution of that with the
// input as its multiplying residual, into the output: x * (W mean + b),
// the product in the convolution's epilogue (on the tensor cores; a pass
// after the fp32 kernels), so the scale is never stored.
class PreparedChannelAttention : public PreparedStage {
public:
    PreparedChannelAttention(const ChannelAttentionStage& s, Backend& backend, TensorType type)
        : type_(type), window_(s.window), weight_(upload(backend, s.weight)), bias_(upload(backend, s.bias)) {
        const int c = s.channels;
        conv_.input = {nullptr, {1, c, 1, 1}, type.dtype, type.layout};
        conv_.out_channels = c, conv_.kernel = 1;
        conv_.weight = weight_.tensor({c, c, 1, 1}), conv_.bias = bias_.tensor({1, c, 1, 1});
        conv_.output = conv_.input;
        conv_.residual_op = ResidualOp::Multiply;
        packed_ = backend.prepare(conv_);
        conv_.prepared = packed_.get();
    }
    TensorType type() const override { return type_; }
    size_t scratch_bytes(const Shape& in, TensorType type) const override {
        return Tensor{nullptr, in, type.dtype, type.layout}.bytes();
    }
    void run(Backend& backend, const StageIO& io) override {
        const Tensor& x = io.inputs[0];
        Tensor mean = x;
        mean.data = io.scratch;
        WindowMeanArgs w;
        w.input = x, w.window = window_, w.output = mean;
        backend.window_mean(w);
        Conv2dArgs c = conv_;
        c.input = mean, c.residual = x, c.output = io.output;
        c.plan_pixels = plan_pixels(io, io.output.shape);
        backend.conv2d(c);
    }

private:
    TensorType type_;
    int window_;
    DeviceBuffer weight_, bias_;
    Conv2dArgs conv_;
    std::unique_ptr<PreparedWeights> packed_;
};

}  // namespace

ChannelAttentionStage ChannelAttentionStage::load(LayerReader& r, const std::vector<int>& inputs) {
    require_format_v3(r, kOp);
    const std::string& at = r.where();
    ChannelAttentionStage s;
    s.channels = inputs[0];
    s.weight = read_tensor(r, "weight", {s.channels, s.channels});
    s.bias = read_tensor(r, "bias", {s.channels});
    const long long window = r.int_attribute("window");
    if (window < 1 || window > kWindowMeanMaxWindow)
        throw Error(at + ": attribute 'window': expected 1.." + std::to_string(kWindowMeanMaxWindow) + ", found " +
                    std::to_string(window));
    s.window = int(window);
    return s;
}

void ChannelAttentionStage::write(LayerWriter& w) const {
    w.tensor("weight", weight, {channels, channels});
    w.tensor("bias", bias, {channels});
    w.int_attribute("window", window);
}

void ChannelAttentionStage::validate(const std::string& at) const {
    if (channels < 1) throw Error(at + ": channels must be positive");
    if (window < 1 || window > kWindowMeanMaxWindow) throw Error(at + ": window must be 1..1024");
    check_tensor(at, "weight", weight, size_t(channels) * channels, {channels, channels});
    check_tensor(at, "bias", bias, size_t(channels), {channels});
}

std::string ChannelAttentionStage::describe() const {
    const std::string w = std::to_string(window);
    return std::string(kOp) + " " + std::to_string(channels) + " channels, x * (1x1 conv of their means over " + w +
           "x" + w + ")";
}

std::vector<double> ChannelAttentionStage::reference(const ReferenceIO& io) const {
    // The definition in float64, independent of the three ops the backends run.
    const Tensor& x = io.input();
    const Shape s = x.shape;
    const int a = (window - 1) / 2, b = window / 2, c = channels;
    std::vector<double> out(s.count()), m(size_t(c), 0.0);
    for (int n = 0; n < s.n; ++n)
        for (int y = 0; y < s.h; ++y)
            for (int xx = 0; xx < s.w; ++xx) {
                const int y0 = std::max(0, y - a), y1 = std::min(s.h - 1, y + b);
                const int x0 = std::max(0, xx - a), x1 = std::min(s.w - 1, xx + b);
                for (int d = 0; d < c; ++d) {
                    double sum = 0;
                    for (int yy = y0; yy <= y1; ++yy)
                        for (int xi = x0; xi <= x1; ++xi) sum += double(load_float(x, x.offset(n, d, yy, xi)));
                    m[size_t(d)] = sum / (double(y1 - y0 + 1) * double(x1 - x0 + 1));
                }
                for (int o = 0; o < c; ++o) {
                    double v = bias[size_t(o)];
                    for (int d = 0; d < c; ++d) v += double(weight[size_t(o) * c + d]) * m[size_t(d)];
                    out[((size_t(n) * c + o) * s.h + y) * s.w + xx] = double(load_float(x, x.offset(n, o, y, xx))) * v;
                }
            }
    return out;
}

std::unique_ptr<PreparedStage> ChannelAttentionStage::prepare(Backend& backend, Precision precision) const {
    for (Op op : {Op::WindowMean, Op::Conv2d}) require(backend, op);
    TensorType type = activation_type(backend, Op::Conv2d, precision);
    if (!backend.supports(Op::WindowMean, type.dtype, type.layout)) type = {};
    if (type != TensorType{}) {
        try {
            return std::make_unique<PreparedChannelAttention>(*this, backend, type);
        } catch (const NotApplicable&) {
            // No half-precision kernel for this 1x1 shape: f32.
        }
    }
    return std::make_unique<PreparedChannelAttention>(*this, backend, TensorType{});
}

}  // namespace imr
