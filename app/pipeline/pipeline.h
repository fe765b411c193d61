// The restore pipeline: read -> batch -> run model -> write for every job
// that the plan (jobs/plan_jobs.h) streams, as it streams. A failure on one file is recorded in
// its result and the rest go on; only the CLI turns results into messages
// and an exit code.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "image/image_io.h"
#include "jobs/file_job.h"
#include "jobs/file_result.h"
#include "model_runner.h"
#include "stage_timer.h"

namespace imr {

// The extra inputs of one image (a model that takes a noise level or a JPEG
// quality): their values in the model's extra_inputs order, and what the
// report says of each.
struct ImageLevels {
    std::vector<float> values;
    std::vector<FileResult::Level> levels;
};
// Called on a decoder thread with the decoded image, its input's path and
// the bytes it was decoded from (null: none at hand); throws imr::Error when
// a level cannot be had (the file fails).
using LevelsFn = std::function<ImageLevels(const Image&, const std::string& input, const std::vector<uint8_t>* bytes)>;

// A batch holds --batch images, but no more pixels than this (one image
// always fits): batching helps small images fill the GPU (the anchor suite's
// 8x512x512 = 2 MP already does), while 4 photos of 48 MP would take 4.6 GB
// of float planes for nothing.
inline constexpr size_t kLargestBatchPixels = size_t(16) << 20;

struct PipelineOptions {
    int batch = 4;       // images of one size per model call
    bool force = false;  // overwrite existing outputs
    Codec codec = Codec::Auto;
    uint64_t max_pixels = 0;            // images above it are refused before decoding (0: read_image's default)
    std::string stdout_format = "png";  // a job whose output is "-" (kStdio) writes this format to stdout
    WriteOptions write;
    int bench_repeats = 0;  // >0: after each batch, re-run the compute this many times into bench timer
    // An image whose model input is over this many pixels (items x height x
    // width) is restored in tiles straight from its samples (host_tiles.h),
    // never held as float planes; below it, images go through planes and
    // batches. The default is where a batch holds one image anyway; tests
    // lower it to compare both ways.
    size_t tiled_above_pixels = kLargestBatchPixels;
    // --strength for a model that takes no level: each output plane is
    // input + blend * (restored - input), in fp32 before the rounding to
    // samples (which clamps); 1: the model's output untouched, 0: the input.
    float blend = 1;
    // Set for a model that takes extra inputs: each image's values, in
    // batches of equal values (ModelRunner::set_extra_values before each).
    LevelsFn levels;
    // For a model that removes JPEG artifacts: each JPEG input's output is
    // projected onto the images its file could have come from
    // (image/jpeg_projection.h), on the writer's thread before encoding. The
    // file's bytes go along from decode to write (a few MB a photo); a JPEG
    // the projection does not take is written as restored, with a warning.
    bool jpeg_projection = false;
    // An RGB input with R = G = B everywhere gets an output so too
    // (image/neutral_gray.h, keep_gray_wanted), on the writer's thread
    // before the projection; each file's FileResult::kept_gray says so.
    bool keep_gray = false;
    // How an image reaches the model: as its own samples, converted to the
    // model's planes and back by the backend (ModelRunner::run_samples: on
    // a GPU one byte a sample crosses the bus instead of four, and no CPU
    // pass converts it either way), or as f32 planes made on the decoder's
    // thread and converted back on the writer's. Auto: samples on a device
    // backend, planes on the CPU (where the decoder and writer threads
    // convert beside the model). An image whose output changes its bit
    // depth, or is tiled, always goes as planes. Tests set On to run the
    // sample path on the CPU.
    enum class Samples { Auto, On, Off };
    Samples samples = Samples::Auto;
    // When it becomes true (Ctrl-C), no new file is started; the batches
    // being computed and the images being written are finished, so no
    // partial or temporary file stays behind.
    const std::atomic<bool>* cancel = nullptr;
};

struct PipelineReport {
    // How many files ended in each FileResult::Status; the results
    // themselves went to the ProgressFn, one at a time, and are not kept.
    size_t counts[4] = {0, 0, 0, 0};
    StageTimer timer;        // every stage of the real run
    StageTimer bench_timer;  // the --bench repeats (upload, stages, download)
    double wall_ms = 0;
    double megapixels = 0;                    // restored pixels
    bool interrupted = false;                 // options.cancel became true
    bool listing_done = true;                 // the source gave every job (false when interrupted first)
    int compute_lanes = 0;                    // lanes that ran a batch (compute_lanes.h)
    int compute_workers = 0;                  // workers (--device cuda:0,2: one per GPU listed) that ran a batch
    std::vector<std::string> workers_unused;  // "cuda:1 not used: why", per worker that could not start
    // The most jobs held at once between being taken from the source and
    // being reported: bounded by the read-ahead, batch and write-behind,
    // whatever the number of files.
    size_t peak_jobs_held = 0;
    int count(FileResult::Status s) const { return int(counts[int(s)]); }
};

// The jobs, one at a time (jobs/plan_jobs.h JobStream::next): false when
// there are no more. Called on the pipeline's own thread, only as far ahead
// as the read-ahead needs.
using JobSource = std::function<bool(FileJob&)>;

// Called once per finished job, in the order they finish: (finished so
// far, its result).
using ProgressFn = std::function<void(size_t, const FileResult&)>;

// Each job's output folder is checked (jobs/output_folders.h) as it comes.
PipelineReport run_pipeline(const JobSource& jobs, ModelRunner& runner, const PipelineOptions& options,
                            const ProgressFn& progress);

}  // namespace imr
