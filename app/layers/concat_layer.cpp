#include "concat_layer.h"

#include <numeric>

namespace imr {

namespace {

class PreparedConcat : public PreparedStage {
public:
    explicit PreparedConcat(TensorType type) : type_(type) {}
    TensorType type() const override { return type_; }
    void run(Backend& backend, const StageIO& io) override {
        ConcatArgs a;
        a.inputs = io.inputs, a.output = io.output;
        backend.concat(a);
    }

private:
    TensorType type_;
};

}  // namespace

ConcatStage ConcatStage::load(LayerReader& r, const std::vector<int>& inputs) {
    require_format_v3(r, kOp);
    ConcatStage s;
    s.channels = inputs;
    if (s.channels_out() > kMaxChannels)
        throw Error(r.where() + ": gives " + std::to_string(s.channels_out()) + " channels, more than " +
                    std::to_string(kMaxChannels));
    return s;
}

int ConcatStage::channels_out() const {
    return int(std::min<long long>(std::accumulate(channels.begin(), channels.end(), 0LL), 1 << 30));
}

void ConcatStage::validate(const std::string& at) const {
    if (channels.size() < 2 || channels.size() > size_t(kConcatMaxInputs))
        throw Error(at + ": takes 2.." + std::to_string(kConcatMaxInputs) + " inputs");
    for (int c : channels)
        if (c < 1) throw Error(at + ": channels must be positive");
    if (channels_out() > kMaxChannels) throw Error(at + ": more than 4096 channels");
}

std::string ConcatStage::describe() const {
    std::string s = std::string(kOp) + "          ";
    for (size_t k = 0; k < channels.size(); ++k) s += (k ? " + " : "") + std::to_string(channels[k]);
    return s + " -> " + std::to_string(channels_out()) + " channels";
}

std::vector<double> ConcatStage::reference(const ReferenceIO& io) const {
    ConcatArgs a;
    a.inputs = io.inputs;
    return reference_concat(a);
}

std::unique_ptr<PreparedStage> ConcatStage::prepare(Backend& backend, Precision precision) const {
    require(backend, Op::Concat);
    return std::make_unique<PreparedConcat>(activation_type(backend, Op::Concat, precision));
}

}  // namespace imr
