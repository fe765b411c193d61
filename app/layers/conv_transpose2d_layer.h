// conv_transpose2d layer (format v3): the transposed convolution with kernel
// = stride = f, a U-Net's way up: each input pixel becomes an f x f block of
// output pixels. The ops: kernels/ops/conv2d.h and kernels/ops/pixel_shuffle.h;
// the stage is exactly a 1x1 convolution to Cout*f*f channels followed by
// depth_to_space(f) (which adds the residual), so it runs on the same
// (tensor-core) kernels as every other convolution.
//
// In a model file (this comment is the normative spec of the stage; the file
// around it: weights/README.md): op = "conv_transpose2d" and
//   dataset weight [Cin, Cout, f, f]                        required (torch ConvTranspose2d's layout)
//   dataset bias [Cout]                                     optional: no bias when absent
//   integer attribute stride: f, 2..8, equal to the kernel  required
// Cin is the channel count of its first input; it gives Cout (1..4096)
// channels at f times its input's resolution:
//   out[o, f*y+i, f*x+j] = bias[o] + sum_c weight[c,o,i,j] * in[c,y,x]   (+ r[o, f*y+i, f*x+j])
// (torch ConvTranspose2d(Cin, Cout, f, stride=f)). A second input r
// (output-shaped) is added last. Window 1, radius 0, scale / f.
// Refused: weight missing, not [Cin, Cout, f, f] with square f x f, Cin other
// than the channels received, Cout outside 1..4096; stride missing, not the
// kernel size or outside 2..8; bias not [Cout]; a second input of other than
// Cout channels; any of it before format v3.
#pragma once

#include "layer.h"

namespace imr {

struct ConvTranspose2dStage {
    static constexpr const char* kOp = "conv_transpose2d";
    static constexpr int kMinInputs = 1, kMaxInputs = 2;
    int in_channels = 0, out_channels = 0, factor = 2;
    std::vector<float> weight;  // [in_channels, out_channels, f, f]
    std::vector<float> bias;    // [out_channels], or empty for none
    bool adds_input = false;    // a second input, added last

    static ConvTranspose2dStage load(LayerReader& r, const std::vector<int>& channels);
    void write(LayerWriter& w) const;
    void validate(const std::string& at) const;
    int min_format_version() const { return 3; }
    int channels_in(int k = 0) const { return k == 0 ? in_channels : out_channels; }
    int channels_out() const { return out_channels; }
    Geometry geometry() const { return {0, 1, 1, factor}; }
    size_t parameter_count() const { return weight.size() + bias.size(); }
    // Per output pixel: Cin multiply-adds (each input pixel's Cin*Cout*f*f
    // spread over f*f output pixels), and the bias.
    double flops_per_pixel() const { return 2.0 * in_channels * out_channels + (bias.empty() ? 0 : 1); }
    bool adds_model_input() const { return false; }
    std::string describe() const;
    std::vector<double> reference(const ReferenceIO& io) const;
    std::unique_ptr<PreparedStage> prepare(Backend& backend, Precision precision) const;
};

}  // namespace imr
