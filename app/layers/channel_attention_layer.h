// channel_attention layer (format v3): NAFNet's simplified channel attention
// with its test-time local pooling: each pixel's channels are scaled by a
// 1x1 convolution of their means over a fixed window around it, so the
// receptive field stays finite and tiles stay exact (global pooling would
// make every output pixel depend on the whole image). The ops:
// kernels/ops/window_mean.h, kernels/ops/conv2d.h (1x1, the input as its
// multiplying residual).
//
// In a model file (this comment is the normative spec of the stage; the file
// around it: weights/README.md): op = "channel_attention" and
//   dataset weight [C, C]                                   required
//   dataset bias [C]                                        required
//   integer attribute window: 1..1024                       required
//   m[c](y,x) = the mean of x[c] over rows y-(window-1)//2 .. y+window//2 and
//               the same columns, clipped to the image (the pixels inside)
//   out[c] = x[c] * (bias[c] + sum_d weight[c,d] * m[d])
// One input; channels and scale kept; window `window` (in the pixels of the
// tensor it runs on), radius window//2.
// Refused: weight not [C, C]; bias not [C]; window missing or outside
// 1..1024; before format v3.
#pragma once

#include "layer.h"

namespace imr {

struct ChannelAttentionStage {
    static constexpr const char* kOp = "channel_attention";
    static constexpr int kMinInputs = 1, kMaxInputs = 1;
    int channels = 0, window = 1;
    std::vector<float> weight;  // [channels, channels]
    std::vector<float> bias;    // [channels]

    static ChannelAttentionStage load(LayerReader& r, const std::vector<int>& channels);
    void write(LayerWriter& w) const;
    void validate(const std::string& at) const;
    int min_format_version() const { return 3; }
    int channels_in(int = 0) const { return channels; }
    int channels_out() const { return channels; }
    Geometry geometry() const { return {window / 2, window, 1, 1}; }
    size_t parameter_count() const { return weight.size() + bias.size(); }
    // The 1x1 convolution, the scaling, and the window mean's running sums.
    double flops_per_pixel() const { return 2.0 * double(parameter_count()) + 5.0 * channels; }
    bool adds_model_input() const { return false; }
    std::string describe() const;
    std::vector<double> reference(const ReferenceIO& io) const;
    std::unique_ptr<PreparedStage> prepare(Backend& backend, Precision precision) const;
};

}  // namespace imr
