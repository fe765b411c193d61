// What every layer (stage) type of a model provides, in the spirit of ncnn's
// layer registry: one struct per layer kind, in its own file under
// app/layers/, holding its parameters and implementing the same members:
//
//   static constexpr const char* kOp           the "op" attribute in model files
//   static constexpr int kMinInputs, kMaxInputs how many tensors it reads (format v3 wiring)
//   static T load(LayerReader&, const std::vector<int>& channels)
//                                              read + check one stage group (channels: of each
//                                              input it receives, kMinInputs..kMaxInputs of them)
//   void write(LayerWriter&) const             the inverse of load
//   void validate(const std::string& at) const tensor sizes, finite values, attribute ranges
//   int min_format_version() const             the oldest format that can express it
//   int channels_in(int k = 0) const           the channels input k must have
//   int channels_out() const
//   Geometry geometry() const                  radius, window and resampling (below)
//   size_t parameter_count() const
//   double flops_per_pixel() const             FLOPs per pixel of its output (2 per multiply-add)
//   bool adds_model_input() const              ends in "+ the model's input image"
//   std::string describe() const               one line for `imrestore model`
//   std::vector<double> reference(...) const   float64 forward (its op's, kernels/ops/)
//   std::unique_ptr<PreparedStage> prepare(Backend&, Precision) const  weights uploaded/packed once,
//                                              activations in activation_type(backend, op, precision)
//
// The comment at the top of each kind's header is the normative spec of its
// stage in model files (weights/README.md specifies the file around them).
// The list of kinds is the std::variant in stage.h. Every use goes through
// std::visit, so a kind missing a member does not compile, and a new kind is
// its file, one entry in that list and an example model in
// tests/test_layers.cpp (which runs every kind through the same tests).
#pragma once

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backend.h"
#include "runner_options.h"

namespace imr {

// The most channels any layer may produce: far beyond any restoration
// network, and small enough that no channel arithmetic overflows.
constexpr int kMaxChannels = 4096;

// Reads one stage group of a model file. Every failure throws imr::Error
// starting with where(): "FILE: stage N (op)".
class LayerReader {
public:
    virtual ~LayerReader() = default;
    virtual const std::string& where() const = 0;
    struct Tensor {
        std::vector<unsigned long long> shape;
        std::vector<float> data;
    };
    // A float32 dataset of exactly `rank` dimensions (missing: error).
    virtual Tensor tensor(const char* name, int rank) = 0;
    virtual bool has_tensor(const char* name) = 0;
    virtual bool has_attribute(const char* name) = 0;
    virtual std::string string_attribute(const char* name) = 0;
    virtual long long int_attribute(const char* name) = 0;
    // A number: a scalar float attribute of any width (read as float64) or an
    // integer one (converted). Missing, another type, not finite or beyond
    // float32's range (the ops compute in float32): error.
    virtual double float_attribute(const char* name) = 0;
    // The model file's format_version (a v2 feature in a v1 file is an error).
    virtual int format_version() const = 0;
};

// Writes one stage group ("op" is written by the caller).
class LayerWriter {
public:
    virtual ~LayerWriter() = default;
    virtual void tensor(const char* name, const std::vector<float>& data, std::vector<int> shape) = 0;
    virtual void string_attribute(const char* name, const std::string& value) = 0;
    virtual void int_attribute(const char* name, long long value) = 0;
    virtual void float_attribute(const char* name, double value) = 0;  // written as float64
};

// How a layer moves pixels, from its first input to its output. Sizes are in
// the layer's own input pixels. Inputs after the first (a residual, the
// second operand of add, the rest of a concat) are at the output's scale.
struct Geometry {
    int radius = 0;  // how far an output pixel sees beyond itself, on the larger side
    int window = 1;  // the input window one output pixel depends on, per axis (K for a KxK conv)
    int down = 1;    // output pixels are `down` input pixels wide (space_to_depth)...
    int up = 1;      // ...or 1/`up` of one (depth_to_space)
};

// A pass's image over the pass, per axis (StageIO::plan).
struct PlanScale {
    double h = 1, w = 1;
};

// What a prepared stage reads and writes in one call (PreparedStage::run).
struct StageIO {
    std::vector<Tensor> inputs;
    Tensor output;
    Tensor model_input;
    void* scratch = nullptr;
    // The image's size over the pass's, per axis, where the pass is a tile of
    // it (1: whole images): what the stage's kernels are planned for
    // (plan_image below).
    PlanScale plan;
};

// The size of one whole image at a stage's output `out` in this call (a
// tile's image; one image of a batch): what a kernel that is planned by size
// where that can change its result is planned for (Conv2dArgs::plan_pixels,
// ResidualBlockArgs::plan_h), so that neither tiling nor batching changes how
// an image's pixels are computed.
inline Shape plan_image(const StageIO& io, const Shape& out) {
    return {1, out.c, int(std::llround(out.h * io.plan.h)), int(std::llround(out.w * io.plan.w))};
}
inline long long plan_pixels(const StageIO& io, const Shape& out) {
    const Shape s = plan_image(io, out);
    return (long long)s.h * s.w;
}

// A layer with its weights in a backend's memory, in whatever layout that
// backend's kernels want (packed once, not per call).
class PreparedStage {
public:
    virtual ~PreparedStage() = default;
    // The type it computes in: of its input, its output and the model input
    // it adds (the runner converts to and from it where the stage before or
    // after differs), except where the two below allow f32 NCHW.
    virtual TensorType type() const = 0;
    // Where type() is not f32 NCHW: whether the stage also reads its input in
    // f32 NCHW directly (a first tensor-core convolution reads the batch),
    // and whether it also writes its output, and adds the model input, in
    // f32 NCHW (a last one), so that the runner needs no convert pass there.
    virtual bool reads_f32() const { return false; }
    virtual bool writes_f32() const { return false; }
    // Backend memory the stage needs besides its inputs and output, for one
    // call on `input` (its first input, in `type`): an intermediate tensor
    // of a stage made of two ops. The runner places it with the activations.
    virtual size_t scratch_bytes(const Shape& input, TensorType type) const {
        (void)input, (void)type;
        return 0;
    }
    // One call: io.inputs holds one tensor per input the stage reads
    // (inputs[0] of shape [n, channels_in(0), h, w] at the stage's input
    // scale, the others at its output scale), io.output the stage's output
    // shape, io.model_input the image the model was given (same scale as the
    // model's output; used by stages that add it), io.scratch
    // scratch_bytes() of backend memory; all in backend memory. The tensors'
    // types are the runner's choice within what the stage's ops support:
    // type(), or f32 NCHW for inputs[0] where reads_f32() allows it and for
    // the output, the other inputs and the model input where writes_f32() does.
    virtual void run(Backend& backend, const StageIO& io) = 0;
};

// A layer's float64 forward for the tests' model-level reference: input as
// the backends see it between stages (host memory), output in float64.
struct ReferenceIO {
    std::vector<Tensor> inputs;  // one per input the stage reads
    Tensor model_input;          // host, the model's output shape
    const Tensor& input() const { return inputs.at(0); }
};

// Throws "AT: attribute 'add_model_input': expected 0 or 1, found N" etc.;
// shared by the layers that can add the model input.
bool read_add_model_input(LayerReader& r);

// Throws "AT: op 'KIND' needs format_version 3 ..." in an older file (every
// kind new in v3 calls it first in its load).
void require_format_v3(const LayerReader& r, const char* op);

// The attribute 'padding' (reflect, replicate or zero); throws naming it otherwise.
PadMode read_padding(LayerReader& r);

// Throws imr::Error unless the backend implements `op` on f32 NCHW tensors
// (Backend::supports), the type every stage can fall back to.
void require(const Backend& backend, Op op);

// The activation type of a stage that runs `op` at `precision` on `backend`:
// for bf16 and fp16, the first of NHWC8, NHWC and NCHW in that dtype that
// the backend supports for the op; else (fp32, tf32 and ops without a half
// kernel) f32 NCHW.
TensorType activation_type(const Backend& backend, Op op, Precision precision);

// Copies weights into the backend's memory (empty: no buffer).
DeviceBuffer upload(Backend& backend, const std::vector<float>& v);

// "[a,b,c]"
std::string dims_string(const std::vector<unsigned long long>& shape);

// The float32 dataset `name` of exactly `shape` (missing or another shape:
// the usual error naming it).
std::vector<float> read_tensor(LayerReader& r, const char* name, std::initializer_list<long long> shape);

// Throws unless `t` has exactly this shape.
void expect_shape(const LayerReader& r, const LayerReader::Tensor& t, const char* name,
                  std::initializer_list<long long> expected);

// Throws unless data holds `expected` finite values.
void check_tensor(const std::string& at, const char* name, const std::vector<float>& data, size_t expected,
                  std::initializer_list<int> shape);

}  // namespace imr
