#include "pixel_shuffle_layer.h"

namespace imr {

namespace {

PixelShuffleArgs shuffle_args(ShuffleDirection d, int factor, const Tensor& input) {
    PixelShuffleArgs a;
    a.input = input, a.factor = factor, a.direction = d;
    return a;
}

template <ShuffleDirection D>
class PreparedShuffle : public PreparedStage {
public:
    PreparedShuffle(int factor, bool add_model_input, TensorType type)
        : factor_(factor), add_model_input_(add_model_input), type_(type) {}
    TensorType type() const override { return type_; }
    void run(Backend& backend, const StageIO& io) override {
        PixelShuffleArgs a = shuffle_args(D, factor_, io.inputs[0]);
        a.output = io.output;
        if (add_model_input_) a.residual = io.model_input;
        backend.pixel_shuffle(a);
    }

private:
    int factor_;
    bool add_model_input_;
    TensorType type_;
};

}  // namespace

template <ShuffleDirection D>
PixelShuffleStage<D> PixelShuffleStage<D>::load(LayerReader& r, const std::vector<int>& inputs) {
    const int channels = inputs[0];
    const std::string& at = r.where();
    if (r.format_version() < 2)
        throw Error(at + ": op '" + kOp + "' needs format_version 2 (the file says " +
                    std::to_string(r.format_version()) + ")");
    PixelShuffleStage s;
    s.in_channels = channels;
    const long long f = r.int_attribute("factor");
    if (f < 2 || f > kMaxFactor)
        throw Error(at + ": attribute 'factor': expected 2.." + std::to_string(kMaxFactor) + ", found " +
                    std::to_string(f));
    s.factor = int(f);
    if (kToDepth && (long long)channels * f * f > kMaxChannels)
        throw Error(at + ": " + std::to_string(channels) +
                    " channels x factor^2 = " + std::to_string((long long)channels * f * f) + " channels, more than " +
                    std::to_string(kMaxChannels));
    if (!kToDepth && channels % (s.factor * s.factor) != 0)
        throw Error(at + ": receives " + std::to_string(channels) +
                    " channels, not a multiple of factor^2 = " + std::to_string(s.factor * s.factor));
    if (kToDepth && r.has_attribute("add_model_input"))
        throw Error(at + ": attribute 'add_model_input' is not allowed on space_to_depth");
    s.add_model_input = read_add_model_input(r);
    return s;
}

template <ShuffleDirection D>
void PixelShuffleStage<D>::write(LayerWriter& w) const {
    w.int_attribute("factor", factor);
    if (add_model_input) w.int_attribute("add_model_input", 1);
}

template <ShuffleDirection D>
void PixelShuffleStage<D>::validate(const std::string& at) const {
    if (factor < 2 || factor > kMaxFactor)
        throw Error(at + ": factor must be 2.." + std::to_string(kMaxFactor) + ", found " + std::to_string(factor));
    if (in_channels < 1) throw Error(at + ": channels must be positive");
    if (!kToDepth && in_channels % (factor * factor) != 0)
        throw Error(at + ": " + std::to_string(in_channels) + " channels are not a multiple of factor^2");
    if (kToDepth && add_model_input) throw Error(at + ": space_to_depth cannot add the model input");
}

template <ShuffleDirection D>
std::string PixelShuffleStage<D>::describe() const {
    const std::string f = std::to_string(factor);
    std::string s = std::string(kOp) + "  " + std::to_string(in_channels) + " -> " + std::to_string(channels_out()) +
                    " channels, " + f + "x" + f + " pixel blocks " +
                    (kToDepth ? "to channels (1/" + f + " resolution)" : "back to pixels (x" + f + " resolution)");
    if (add_model_input) s += ", + model input";
    return s;
}

template <ShuffleDirection D>
std::vector<double> PixelShuffleStage<D>::reference(const ReferenceIO& io) const {
    PixelShuffleArgs a = shuffle_args(D, factor, io.input());
    if (add_model_input) a.residual = io.model_input;
    return reference_pixel_shuffle(a);
}

template <ShuffleDirection D>
std::unique_ptr<PreparedStage> PixelShuffleStage<D>::prepare(Backend& backend, Precision precision) const {
    require(backend, Op::PixelShuffle);
    return std::make_unique<PreparedShuffle<D>>(factor, add_model_input,
                                                activation_type(backend, Op::PixelShuffle, precision));
}

template struct PixelShuffleStage<ShuffleDirection::ToDepth>;
template struct PixelShuffleStage<ShuffleDirection::ToSpace>;

}  // namespace imr
