#include "residual_block_layer.h"

namespace imr {

namespace {

class PreparedResidualBlock : public PreparedStage {
public:
    PreparedResidualBlock(const ResidualBlockStage& s, Backend& backend, TensorType type)
        : type_(type),
          w_in_(upload(backend, s.conv_in_weight)),
          b_in_(upload(backend, s.conv_in_bias)),
          w_out_(upload(backend, s.conv_out_weight)),
          b_out_(upload(backend, s.conv_out_bias)) {
        base_.input = {nullptr, {1, s.channels, 1, 1}, type.dtype, type.layout}, base_.hidden = s.hidden;
        base_.conv_in_weight = w_in_.tensor({s.hidden, s.channels, 3, 3});
        base_.conv_in_bias = b_in_.tensor({1, s.hidden, 1, 1});
        base_.conv_out_weight = w_out_.tensor({s.channels, s.hidden, 3, 3});
        base_.conv_out_bias = b_out_.tensor({1, s.channels, 1, 1});
        packed_ = backend.prepare(base_);
        base_.prepared = packed_.get();
    }
    TensorType type() const override { return type_; }
    void run(Backend& backend, const StageIO& io) override {
        ResidualBlockArgs a = base_;
        a.input = io.inputs[0], a.output = io.output;
        const Shape image = plan_image(io, io.output.shape);
        a.plan_h = image.h, a.plan_w = image.w;
        backend.residual_block(a);
    }

private:
    TensorType type_;
    DeviceBuffer w_in_, b_in_, w_out_, b_out_;
    ResidualBlockArgs base_;
    std::unique_ptr<PreparedWeights> packed_;
};

}  // namespace

ResidualBlockStage ResidualBlockStage::load(LayerReader& r, const std::vector<int>& inputs) {
    const int channels = inputs[0];
    const std::string& at = r.where();
    ResidualBlockStage rb;
    LayerReader::Tensor w_in = r.tensor("conv_in_weight", 4);
    if (w_in.shape[2] != 3 || w_in.shape[3] != 3)
        throw Error(at + ": dataset 'conv_in_weight': expected a 3x3 kernel [hidden," + std::to_string(channels) +
                    ",3,3], found " + dims_string(w_in.shape));
    if (w_in.shape[0] == 0 || w_in.shape[0] > (unsigned long long)kMaxChannels)
        throw Error(at + ": dataset 'conv_in_weight': expected 1..4096 hidden channels, found " +
                    dims_string(w_in.shape));
    if (w_in.shape[1] != (unsigned long long)channels)
        throw Error(at + ": dataset 'conv_in_weight': expected " + std::to_string(channels) +
                    " input channels (from the stage before), found " + dims_string(w_in.shape));
    rb.hidden = int(w_in.shape[0]);
    rb.channels = channels;
    LayerReader::Tensor b_in = r.tensor("conv_in_bias", 1);
    expect_shape(r, b_in, "conv_in_bias", {rb.hidden});
    LayerReader::Tensor w_out = r.tensor("conv_out_weight", 4);
    expect_shape(r, w_out, "conv_out_weight", {rb.channels, rb.hidden, 3, 3});
    LayerReader::Tensor b_out = r.tensor("conv_out_bias", 1);
    expect_shape(r, b_out, "conv_out_bias", {rb.channels});
    rb.conv_in_weight = std::move(w_in.data);
    rb.conv_in_bias = std::move(b_in.data);
    rb.conv_out_weight = std::move(w_out.data);
    rb.conv_out_bias = std::move(b_out.data);
    return rb;
}

void ResidualBlockStage::write(LayerWriter& w) const {
    w.tensor("conv_in_weight", conv_in_weight, {hidden, channels, 3, 3});
    w.tensor("conv_in_bias", conv_in_bias, {hidden});
    w.tensor("conv_out_weight", conv_out_weight, {channels, hidden, 3, 3});
    w.tensor("conv_out_bias", conv_out_bias, {channels});
}

void ResidualBlockStage::validate(const std::string& at) const {
    const int c = channels, h = hidden;
    if (c < 1 || h < 1) throw Error(at + ": channels and hidden must be positive");
    check_tensor(at, "conv_in_weight", conv_in_weight, size_t(h) * c * 9, {h, c, 3, 3});
    check_tensor(at, "conv_in_bias", conv_in_bias, size_t(h), {h});
    check_tensor(at, "conv_out_weight", conv_out_weight, size_t(c) * h * 9, {c, h, 3, 3});
    check_tensor(at, "conv_out_bias", conv_out_bias, size_t(c), {c});
}

std::string ResidualBlockStage::describe() const {
    return "residual_block  " + std::to_string(channels) + " -> " + std::to_string(hidden) + " -> " +
           std::to_string(channels) + " channels, 3x3 + 3x3, zero padding, out = x + conv_out(conv_in(x))";
}

std::vector<double> ResidualBlockStage::reference(const ReferenceIO& io) const {
    ResidualBlockArgs a;
    a.input = io.input(), a.hidden = hidden;
    a.conv_in_weight = f32_nchw(conv_in_weight.data(), {hidden, channels, 3, 3});
    a.conv_in_bias = f32_vector(conv_in_bias.data(), hidden);
    a.conv_out_weight = f32_nchw(conv_out_weight.data(), {channels, hidden, 3, 3});
    a.conv_out_bias = f32_vector(conv_out_bias.data(), channels);
    return reference_residual_block(a);
}

std::unique_ptr<PreparedStage> ResidualBlockStage::prepare(Backend& backend, Precision precision) const {
    require(backend, Op::ResidualBlock);
    return std::make_unique<PreparedResidualBlock>(*this, backend,
                                                   activation_type(backend, Op::ResidualBlock, precision));
}

}  // namespace imr
