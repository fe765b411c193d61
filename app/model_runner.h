// Runs a loaded model on one backend: weights uploaded once, the graph's
// tensors placed in one arena by their lifetimes (app/runner_plan.h) kept and
// reused across calls of the same (or smaller) size, and
// inputs too large for the backend's free memory split into overlapping tiles
// whose halo equals the model's radius, so the result equals the untiled one.
// On a host-memory backend (the CPU) the stages read the caller's input and
// write the caller's output directly: no upload/download copies. Images whose
// sides are not multiples of the model's size_multiple() are padded by
// replicating the last row/column and cropped back (weights/README.md).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "backend.h"
#include "model_file.h"
#include "runner_options.h"
#include "runner_plan.h"
#include "stage_timer.h"

namespace imr {

class ModelRunner {
public:
    // Applies options.forced_variants to `backend` and resolves the
    // precision (throws imr::Error for one it cannot run). `options` is kept
    // as given and never changes: a lane's runner gets a copy of the whole.
    ModelRunner(ModelFile model, Backend& backend, RunnerOptions options = {});
    // A runner on `sibling`, a sibling of `same_device`'s backend
    // (Backend::make_sibling: the same device, its own stream), with the same
    // settings, that computes with `same_device`'s prepared weights instead
    // of uploading its own (a compute lane: weights once per worker). Both
    // may run at once (a prepared stage only reads its weights). The weights
    // live in memory of `same_device`'s backend: that backend must outlive
    // this runner (ComputeLanes drops lanes newest first).
    ModelRunner(const ModelRunner& same_device, Backend& sibling);

    // input and output: host f32 NCHW [n, model.channels, h, w] of the same
    // shape (the batch as the pipeline hands it over; the stages between may
    // compute in other types). Adds one entry per stage, and
    // "upload"/"download" on a device backend, to timer (if given).
    void run(const Tensor& input, const Tensor& output, StageTimer* timer);

    // An image batch given as its own interleaved samples (host memory;
    // kernels/ops/image_planes.h), restored into `out` (the same layout and
    // size; may be samples.data itself), the --strength blend toward the
    // input included: the values run() gives through the CPU's conversions
    // (app/image/image_batch.h: image_to_planes, blend_toward_input,
    // planes_into_image), bit for bit. On a device the samples cross the bus
    // as they are (one byte each at 8 bits, not four) and are converted
    // there by the image_planes op, in one pass. Returns false, with `out`
    // untouched, where that pass does not fit the device's memory (or
    // options().max_tile), or options().tta asks for 8 passes: the caller
    // then converts on the host and calls run(), which tiles. A host
    // backend always runs it. Adds to timer, on a device, "upload",
    // "to-NCHW on device", the stages, "from-NCHW on device" and "download";
    // on a host, "to-NCHW on the compute lane", run()'s rows and "from-NCHW
    // on the compute lane" (the pipeline's own conversions, on its decoder
    // and writer threads, are "to-NCHW" and "from-NCHW").
    bool run_samples(const ImageSamples& samples, void* out, float strength, StageTimer* timer);

    // The extra inputs' values for the next run() calls, in the model's
    // extra_inputs order, in place of options().extra_inputs' (levels
    // estimated per image: the pipeline sets its batch's before each run).
    void set_extra_values(std::vector<float> values);

    // Whether the next run() calls compute in fp32 whatever precision() is
    // (the pipeline sets it per batch: --precision auto runs a 16-bit image
    // in fp32, since a model's half precision is validated on 8-bit photos,
    // where one level is 256 of 16 bits). The stages in fp32 are prepared
    // on the first such pass, as for a non-finite half-precision result.
    void set_compute_in_fp32(bool fp32) { compute_in_fp32_ = fp32; }

    // One image of `shape` (n = 1, any height and width) restored in tiles
    // read and written through callbacks, so that neither the whole input
    // nor the whole output has to exist as f32 planes (an 8-bit 100 MP scan
    // stays 8-bit; each tile's planes are made as it runs). `read` fills
    // f32 NCHW [1, c, rect.h, rect.w] with the input's pixels of rect; rows
    // and columns at or past the image's height and width repeat its last
    // ones (the padding to the size multiple). `write` takes the output's
    // pixels of rect (always within the image). Tiles are as large as the
    // memory budget allows (options().max_tile and max_memory included, and
    // max_bytes where given: a pass's backend memory, whatever is free); the
    // result equals run()'s.
    struct PlaneRect {
        int y = 0, x = 0, h = 0, w = 0;
    };
    using TileReader = std::function<void(PlaneRect, float* planes)>;
    using TileWriter = std::function<void(PlaneRect, const float* planes)>;
    void run_tiles(Shape shape, const TileReader& read, const TileWriter& write, StageTimer* timer,
                   size_t max_bytes = 0);

    // The settings it was made with (options.max_tile: the largest tile side
    // in pixels, 0: as large as memory allows; tiling never changes the result).
    const RunnerOptions& options() const { return options_; }
    // What the convolutions compute in (options().precision resolved: never auto).
    Precision precision() const { return precision_; }
    // The model as given (a lane's sibling runner is made from it).
    const ModelFile& model() const { return *file_model_; }
    Backend& backend() { return backend_; }
    const Backend& backend() const { return backend_; }
    // Backend memory in bytes one image pixel needs in an untiled pass
    // (activations, and a device's copy of the input).
    size_t bytes_per_pixel() const;

    // Batches whose half-precision output held a non-finite value and were
    // run again in fp32 (their results are the fp32 ones), since construction.
    size_t fp32_reruns() const { return fp32_reruns_; }
    // The type each stage reads (its first input) and writes, as the plan
    // has it (for reports and tests).
    std::vector<StageTypes> stage_types() const { return plan_stage_types(plan_, model_->stages.size()); }
    // Bytes of backend memory the activations of a pass over `shape` take
    // (the arena: the largest set of tensors alive at once).
    size_t arena_bytes(Shape shape) const;

    // How run() and run_tiles() (without max_bytes) would split one image of
    // h x w pixels under the memory budget as it is now, for the CLI's note
    // where tiling costs much: the tile side (the larger side where the
    // image is one pass); the pixels its passes compute over the image's (1
    // untiled; a wide receptive field's halos make it several); the backend
    // memory an untiled pass takes (what --max-memory must allow for one);
    // and whether this backend could hold such a pass now (a share of its
    // free memory, and the 32-bit element limit of a pass). Not the GPU's
    // tiles of a huge image, which the pipeline bounds with its own max_bytes.
    struct PassPlan {
        int tile = 0;
        double work = 1.0;
        size_t whole_bytes = 0;
        bool one_pass_possible = false;
    };
    PassPlan pass_plan(int h, int w) const;
    // Pixels of the passes computed since construction, halos included
    // (each of --tta's 8 passes counts; an fp32 rerun does not).
    size_t computed_pixels() const { return computed_pixels_; }

private:
    using Stages = std::vector<std::unique_ptr<PreparedStage>>;
    // The same as run(), for sides that are multiples of the model's size_multiple().
    void run_aligned(const float* input, float* output, Shape shape, StageTimer* timer);
    // One pass over a tensor that fits the backend: upload, stages, download.
    // `plan`: the image's size over the pass's where the pass is a tile of it
    // (StageIO::plan: every tile then runs the kernels the whole image would).
    // With options().tta, the average over the 8 flips and transposes of
    // the pass (run_pass_once on each).
    void run_pass(const float* input, float* output, Shape shape, StageTimer* timer, PlanScale plan = {});
    void run_pass_once(const float* input, float* output, Shape shape, StageTimer* timer, PlanScale plan);
    // A pass's memory: its arena laid out and reserved (on a device with
    // room for the f32 input and `samples_bytes` of image samples), the
    // extra inputs' planes uploaded.
    void begin_pass(Shape shape, size_t samples_bytes);
    // The stages of a pass on `src` (the model input in backend memory),
    // in fp32 again where a half-precision result is not finite; returns
    // the result (f32 NCHW; on the host, `output`).
    Tensor compute_pass(const Tensor& src, float* output, PlanScale plan);
    void make_pass_timers();
    // The tiles of one image (padded size `padded`, the image's own h x w in
    // `image`), each read, run and written through the callbacks.
    void run_tiled(Shape padded, Shape image, int tile, const TileReader& read, const TileWriter& write,
                   StageTimer* timer);
    // The tile side run_tiled() uses for `tile` (the whole image where the
    // first tile's halo already covers it), and the pass (core and halo,
    // clipped to the image) of the tile whose core starts at (y0, x0).
    int effective_tile(Shape padded, int tile) const;
    PlaneRect tile_pass(Shape padded, int tile, int y0, int x0) const;
    // The largest tile side (a multiple of the size multiple) whose pass over
    // an image of `shape` fits `pixels_fit`; throws OutOfMemory where not even the smallest does.
    int tile_side(Shape shape, size_t pixels_fit) const;
    // Backend memory of a pass over the smallest tile that spends little on
    // its halo (32 radii wide: ~13% more work than untiled), but at most
    // 512 MiB (a U-Net's 32 radii are a whole photo); the CPU's pass budget
    // is raised to it unless the user set one.
    size_t efficient_pass_bytes() const;
    // Pixels one pass may hold (the memory budget, and the 32-bit element limit).
    size_t pass_pixels_fit(size_t max_bytes = 0) const;
    // Its parts: the share of the backend's memory a pass may take (what is
    // free and what the runner holds), and the pixels the 32-bit element limit allows.
    size_t memory_share_bytes() const;
    size_t pass_index_limit() const;
    // Whether options().max_tile makes a pass over `shape` tiles.
    bool tiles_forced(Shape shape) const;
    void reserve(size_t arena_bytes, size_t input_bytes, size_t extra_bytes, size_t samples_bytes = 0);
    void release_buffers();
    // The plan for `stages` (their types as they report them).
    RunnerPlan plan_for(const Stages& stages) const;
    ArenaLayout layout(const RunnerPlan& plan, const Stages& stages, Shape shape) const;
    // Runs the plan's steps on the pass's model input (f32 NCHW in backend
    // memory) and extra inputs; returns the model's output (f32 NCHW; on the
    // host, `output` itself).
    Tensor execute(const RunnerPlan& plan, const Stages& stages, const ArenaLayout& arena, const Tensor& input,
                   float* output, PlanScale image);

    // The file's model, and the model as it runs: its element-wise stages
    // fused into the convolutions before them where exact
    // (app/model_fusion.h). Shared, never changed: the runners of a run's
    // lanes hold one copy of the weights on the host between them.
    const std::shared_ptr<const ModelFile> file_model_;
    const std::shared_ptr<const ModelFile> model_;
    const ModelGraph graph_;
    Backend& backend_;
    const RunnerOptions options_;
    Precision precision_;              // set once in the constructor
    std::vector<float> extra_values_;  // per extra input of the model, its value (options_.extra_inputs)

    // Weights in the backend, packed once; shared with the runners of lanes
    // on the same device (the sharing constructor).
    std::shared_ptr<Stages> prepared_;
    RunnerPlan plan_;
    // The stages in fp32, made on the first batch whose half-precision output
    // is not finite (fp16 overflow), which is then run again with them, or
    // on the first pass set_compute_in_fp32 asks for.
    Stages prepared_fp32_;
    RunnerPlan plan_fp32_;
    size_t fp32_reruns_ = 0;
    size_t computed_pixels_ = 0;  // computed_pixels()
    bool compute_in_fp32_ = false;
    void prepare_fp32_stages();
    // Per image pixel, for the memory budget: the arena's bytes (the larger
    // of the plan's and an all-f32 plan's, which a rerun needs) and the most
    // elements of one tensor (kernels index with 32-bit integers).
    double arena_bytes_per_pixel_ = 0, largest_elements_per_pixel_ = 0;
    DeviceBuffer arena_;  // every value of a pass, placed by layout_arena
    Shape arena_shape_;   // the pass shape arena_layout_ is for
    ArenaLayout arena_layout_;
    DeviceBuffer input_;    // a device backend's copy of the pass's input
    DeviceBuffer extra_;    // the extra inputs' constant planes
    DeviceBuffer samples_;  // run_samples: a device's copy of the batch's samples, converted in place
    std::vector<std::unique_ptr<BackendTimer>> stage_timers_;
    std::unique_ptr<BackendTimer> upload_timer_, download_timer_, to_planes_timer_, to_samples_timer_;
    std::vector<std::string> stage_labels_;
};

}  // namespace imr
