// The restore pipeline: read -> batch -> run model -> write for every job
// that plan_jobs (jobs/plan_jobs.h) made. A failure on one file is recorded in
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

struct PipelineOptions {
    int batch = 4;       // images of one size per model call
    bool force = false;  // overwrite existing outputs
    Codec codec = Codec::Auto;
    uint64_t max_pixels = 0;            // images above it are refused before decoding (0: read_image's default)
    std::string stdout_format = "png";  // a job whose output is "-" (kStdio) writes this format to stdout
    WriteOptions write;
    int bench_repeats = 0;  // >0: after each batch, re-run the compute this many times into bench timer
    // When it becomes true (Ctrl-C), no new file is started; the batches
    // being computed and the images being written are finished, so no
    // partial or temporary file stays behind.
    const std::atomic<bool>* cancel = nullptr;
};

struct PipelineReport {
    std::vector<FileResult> files;
    StageTimer timer;        // every stage of the real run
    StageTimer bench_timer;  // the --bench repeats (upload, stages, download)
    double wall_ms = 0;
    double megapixels = 0;     // restored pixels
    bool interrupted = false;  // options.cancel became true
    int compute_lanes = 0;     // lanes that ran a batch (compute_lanes.h)
    int count(FileResult::Status s) const;
};

// Called after every finished job: (done, total, result).
using ProgressFn = std::function<void(size_t, size_t, const FileResult&)>;

PipelineReport run_pipeline(const std::vector<FileJob>& jobs, ModelRunner& runner, const PipelineOptions& options,
                            const ProgressFn& progress);

}  // namespace imr
