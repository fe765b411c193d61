// The restore pipeline: which output each input gets (plan_jobs), then
// read -> batch -> run model -> write for every job (run_pipeline). A failure
// on one file is recorded in its result and the rest go on; only the CLI
// turns results into messages and an exit code.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "image/image_io.h"
#include "model_runner.h"
#include "stage_timer.h"

namespace imr {

struct FileJob {
    std::string input;
    std::string output;
    std::string error;  // set when planning already failed (missing input, would overwrite an input)
};

// Maps inputs to outputs.
//   output empty: each file F.ext -> F.restored.ext beside it; a folder D -> D.restored/.
//   one input file and output not an existing folder nor ending in '/': output is the file.
//   otherwise output is a folder: files go to output/<name>, a folder's files to
//   output/<path relative to that folder> (the tree mirrors the input; -r descends).
// Formats that cannot be written (GIF, PSD, ...) get a .png output;
// `format` (an extension such as "png", or empty) sets every derived output's
// format. Throws imr::Error for what can never work (several inputs into one
// file, an output format this build cannot write, folders of the same name).
// The same input given twice is restored once.
std::vector<FileJob> plan_jobs(const std::vector<std::string>& inputs, const std::string& output, bool recursive,
                               Codec codec, const std::string& format = "");

struct PipelineOptions {
    int batch = 4;       // images of one size per model call
    bool force = false;  // overwrite existing outputs
    Codec codec = Codec::Auto;
    WriteOptions write;
    int bench_repeats = 0;  // >0: after each batch, re-run the compute this many times into bench timer
    // When it becomes true (Ctrl-C), no new file is started; the images being
    // written are finished, so no partial or temporary file stays behind.
    const std::atomic<bool>* cancel = nullptr;
};

struct FileResult {
    enum class Status { Restored, Skipped, Failed, NotRun };  // NotRun: the run was interrupted first
    std::string input, output;
    Status status = Status::NotRun;
    std::string message;  // why it failed or was skipped
    int width = 0, height = 0, channels = 0, bit_depth = 0;
};

struct PipelineReport {
    std::vector<FileResult> files;
    StageTimer timer;        // every stage of the real run
    StageTimer bench_timer;  // the --bench repeats (upload, stages, download)
    double wall_ms = 0;
    double megapixels = 0;     // restored pixels
    bool interrupted = false;  // options.cancel became true
    int count(FileResult::Status s) const;
};

// Called after every finished job: (done, total, result).
using ProgressFn = std::function<void(size_t, size_t, const FileResult&)>;

PipelineReport run_pipeline(const std::vector<FileJob>& jobs, ModelRunner& runner, const PipelineOptions& options,
                            const ProgressFn& progress);

}  // namespace imr
