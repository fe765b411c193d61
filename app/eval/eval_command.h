// `imrestore eval`: how much a model restores, measured. Degrades clean
// images (seeded, eval/degradations.h) or takes given degraded ones
// (--degraded DIR, matched by file name), restores them with the model
// (loaded and placed on a device as the main command does), and reports PSNR
// and SSIM (eval/metrics.h) per image and their mean for the degraded input,
// the model and classical baselines (eval/baselines.h), plus the model's time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "eval/degradations.h"
#include "jobs/shard.h"
#include "model_registry.h"

namespace CLI {
class App;
}

namespace imr {

struct EvalOptions {
    std::vector<std::string> inputs;  // clean images: folders and/or files
    std::string model;                // empty: the device's default (choose_model)
    std::string device = "auto";
    int threads = 0;  // CPU backend compute threads (0: one per core)
    Degradation degradation;
    uint64_t seed = kDefaultDegradeSeed;
    std::string degraded_dir;        // given degraded images instead of degrading
    std::string baselines = "auto";  // auto | none | all | comma-separated names
    bool recursive = false, json = false, quiet = false;
    bool tta = false;                      // --tta: RunnerOptions::tta, as for the restore command
    std::string jpeg_projection = "auto";  // --jpeg-projection, as for the restore command
    std::string keep_gray = "auto";        // --keep-gray, as for the restore command
    ShardOptions shard;
};

// Adds the `eval` subcommand to app, its options bound to o.
CLI::App* add_eval_command(CLI::App& app, EvalOptions& o);

// Runs it: the table (or with json the JSON report) on stdout, notes and
// per-image errors on stderr. Returns 0, or 1 when some image failed (the
// others are still measured); throws imr::Error for what stops the whole run
// (missing folder, bad options, unusable model or device).
int run_eval(const EvalOptions& o);

}  // namespace imr
