// `imrestore degrade`: writes degraded copies of images (blur -> noise ->
// JPEG, the training definitions in eval/degradations.h), to make test sets
// or to look at what a model is trained on. Output paths follow the main
// command's rules (app/jobs/plan_jobs.h: the file loop restore and eval share) with -o required and PNG as the
// default format: a file to a file (its extension says the format), files or
// a folder into a folder (mirrored). Outputs are 8-bit; alpha is copied.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "eval/degradations.h"
#include "jobs/shard.h"
#include "report/json_document.h"

namespace CLI {
class App;
}

namespace imr {

struct DegradeOptions {
    std::vector<std::string> inputs;
    std::string output;
    Degradation degradation;
    uint64_t seed = kDefaultDegradeSeed;
    std::string format = "png";  // of outputs named after their input
    bool recursive = false, force = false, quiet = false;
    bool json = false;                   // the report as JSON on stdout
    bool estimate_noise = false;         // also estimate each written image's noise sigma (eval/noise_estimate.h)
    bool estimate_jpeg_quality = false;  // ... and its JPEG quality from its pixels (image/jpeg_quality.h)
    ShardOptions shard;
};

// --blur, --noise, --jpeg, --subsampling and --seed, the same for degrade and eval (one
// definition of the degradations, one spelling of their options).
void add_degradation_options(CLI::App* cmd, Degradation& d, uint64_t& seed);

// {"blur", "noise", "jpeg", "subsampling" ("420", "444", "none" without
// --jpeg), "seed", "jpeg_codec"}: the degradation in degrade's and eval's JSON.
Json degradation_json(const Degradation& d, uint64_t seed);

// Adds the `degrade` subcommand to app, its options bound to o.
CLI::App* add_degrade_command(CLI::App& app, DegradeOptions& o);

// Runs it: prints "IN -> OUT" per file on stdout (with --json the report
// instead: the degradation, each file with its "levels" when
// --estimate-noise, the counts), errors/notes on stderr.
// Returns 0 (all written or skipped) or 1 (some file failed); throws
// imr::Error for what stops the whole run (nothing to do, bad -o).
int run_degrade(const DegradeOptions& o);

}  // namespace imr
