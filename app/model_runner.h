// Runs a loaded model on one backend: weights uploaded once, activation
// buffers kept and reused across calls of the same (or smaller) size, and
// inputs too large for the backend's free memory split into overlapping tiles
// whose halo equals the model's radius, so the result equals the untiled one.
// On a host-memory backend (the CPU) the stages read the caller's input and
// write the caller's output directly: no upload/download copies. Images whose
// sides are not multiples of the model's size_multiple() are padded by
// replicating the last row/column and cropped back (weights/README.md).
#pragma once

#include <memory>
#include <vector>

#include "backend.h"
#include "model_file.h"
#include "runner_options.h"
#include "stage_timer.h"

namespace imr {

class ModelRunner {
public:
    // Applies options.forced_variants to `backend` and resolves the
    // precision (throws imr::Error for one it cannot run). `options` is kept
    // as given and never changes: a lane's runner gets a copy of the whole.
    ModelRunner(ModelFile model, Backend& backend, RunnerOptions options = {});

    // input and output: host f32 NCHW [n, model.channels, h, w] of the same
    // shape (the batch as the pipeline hands it over; the stages between may
    // compute in other types). Adds one entry per stage, and
    // "upload"/"download" on a device backend, to timer (if given).
    void run(const Tensor& input, const Tensor& output, StageTimer* timer);

    // The settings it was made with (options.max_tile: the largest tile side
    // in pixels, 0: as large as memory allows; tiling never changes the result).
    const RunnerOptions& options() const { return options_; }
    // What the convolutions compute in (options().precision resolved: never auto).
    Precision precision() const { return precision_; }
    const ModelFile& model() const { return model_; }
    Backend& backend() { return backend_; }
    const Backend& backend() const { return backend_; }
    // Backend memory in bytes one image pixel needs in an untiled pass
    // (activations, and a device's copy of the input).
    size_t bytes_per_pixel() const;

private:
    // The same as run(), for sides that are multiples of the model's size_multiple().
    void run_aligned(const float* input, float* output, Shape shape, StageTimer* timer);
    // One pass over a tensor that fits the backend: upload, stages, download.
    void run_pass(const float* input, float* output, Shape shape, StageTimer* timer);
    void run_tiled(const float* input, float* output, Shape shape, int tile, StageTimer* timer);
    void reserve(size_t activation_bytes, size_t input_bytes, size_t typed_input_bytes);
    void release_buffers();
    // The largest tensor of a pass over `shape` that is not f32 NCHW (a
    // stage's input, output or model input in its own type), in bytes and
    // stored elements; zero when every stage runs in f32 NCHW.
    struct Size {
        size_t bytes = 0, elements = 0, model_input_bytes = 0;
    };
    Size typed_tensors(Shape shape) const;
    // The model input (f32 NCHW) in `type`: itself, or its copy in
    // typed_input_, converted when `held` (the type that copy is in, f32:
    // none yet) is another.
    Tensor model_input_as(TensorType type, const Tensor& model_input, TensorType& held);

    const ModelFile model_;
    Backend& backend_;
    const RunnerOptions options_;
    Precision precision_;  // set once in the constructor

public:
    // Batches whose half-precision output held a non-finite value and were
    // run again in fp32 (their results are the fp32 ones), since construction.
    size_t fp32_reruns() const { return fp32_reruns_; }

private:
    // The type each stage reads and writes (and adds the model input in): its
    // own type(), or f32 NCHW where it takes that directly and its neighbour
    // (or the runner's input/output) is f32 NCHW; the runner converts
    // between stages only where one's output type is not the next's input.
    struct StageTypes {
        TensorType in, out;
    };
    using Stages = std::vector<std::unique_ptr<PreparedStage>>;
    static std::vector<StageTypes> stage_types(const Stages& stages);
    std::vector<StageTypes> io_;
    // The stages in fp32, made on the first batch whose half-precision output
    // is not finite (fp16 overflow), which is then run again with them.
    Stages prepared_fp32_;
    std::vector<StageTypes> io_fp32_;
    size_t fp32_reruns_ = 0;
    // Runs `stages` from src (the pass's input, f32 NCHW); returns the last
    // stage's output in f32 NCHW (on the host: `output` where the last stage
    // writes f32 NCHW).
    Tensor run_stages(const Stages& stages, const std::vector<StageTypes>& io, Tensor src, float* output);
    double activation_floats_per_pixel_ = 0;                // of the largest f32 tensor in a pass
    Size typed_per_pixel_;                                  // typed_tensors() per image pixel
    std::vector<std::unique_ptr<PreparedStage>> prepared_;  // weights in the backend, packed once
    DeviceBuffer ping_, pong_;                              // activations, each the largest tensor of the pass
    DeviceBuffer input_;        // a device backend's copy of the pass's input (stages may add it)
    DeviceBuffer typed_input_;  // the model input in the type of the stages that add it, where not f32
    std::vector<std::unique_ptr<BackendTimer>> stage_timers_;
    std::unique_ptr<BackendTimer> upload_timer_, download_timer_;
    std::vector<std::string> stage_labels_;
};

}  // namespace imr
