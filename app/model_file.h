// A restoration model: metadata plus an ordered list of typed stages, each
// reading tensors before it (format v3: a graph; before: a chain), loaded
// from an HDF5 file (format spec: weights/README.md for the file, each layer's
// header in app/layers/ for its stage) and validated once, at load time, so
// nothing downstream has to check shapes again.
#pragma once

#include <string>
#include <vector>

#include "error.h"
#include "layers/stage.h"
#include "model_graph.h"
#include "model_raw.h"

namespace imr {

constexpr const char* kModelFormatName = "imrestore-model";
// The newest version this build reads. v2 added conv2d's activation and
// add_model_input, space_to_depth and depth_to_space; v3 graphs of named
// tensors and the kinds U-Nets are made of; v4 weights stored as IEEE
// float16 (weights/README.md).
constexpr int kModelFormatVersion = 4;

// How a stage is wired (format v3): the name of its output and the tensors
// it reads. An empty name is the stage's index ("0", "1", ...); empty
// inputs: the previous stage's output ("input" for the first).
struct StageLinks {
    std::string name;
    std::vector<std::string> inputs;
};

struct ModelFile {
    std::string path;        // where it was loaded from (empty if built in memory)
    int format_version = 1;  // as read; the writer raises it to min_format_version()
    std::string name, task, description, provenance, license;
    int channels = 3;  // image channels the model takes and gives: 1 (gray) or 3 (RGB)
    // The half precisions ("fp16", "bf16") measured to keep the model's output
    // within the bound of fp32 (`imrestore model NAME --validate-precision`),
    // fastest first; --precision auto takes the first the GPU has. Empty: none
    // (auto runs fp32). precision_validation: the measured figures, as text.
    std::vector<std::string> validated_precisions;
    std::string precision_validation;
    // Every dataset of the file was IEEE float16 (format v4: half the size of
    // float32 for the large models); the values are the halves widened to
    // float, the ops compute in float as ever, and the writer stores them as
    // float16 again (exactly). Set it on a model built in memory only where
    // every weight is a half already (write_model_file refuses it otherwise).
    bool half_weights = false;
    std::vector<Stage> stages;
    // Format v3 wiring: the extra inputs the tool supplies (kExtraInputNames),
    // one StageLinks per stage (or none at all: a chain) and the output
    // tensor's name (empty: the last stage's).
    std::vector<std::string> extra_inputs;
    std::vector<StageLinks> links;
    std::string output;

    // Stage i's output name and the names of the tensors it reads (the
    // defaults filled in).
    std::string stage_name(size_t i) const;
    std::vector<std::string> stage_input_names(size_t i) const;
    // Whether anything needs format v3's wiring (names, inputs, extra
    // inputs or output other than the chain's).
    bool uses_wiring() const;

    size_t parameter_count() const;
    // Image pixels one output pixel depends on, per axis: along every path
    // from the input, 1 + the sum over its stages of (window - 1) in image
    // pixels; the widest path.
    int receptive_field() const;
    // The halo a tile needs, in image pixels (a multiple of size_multiple()),
    // worked back from the output over every path.
    int radius() const;
    // Image sides must be multiples of this (the least common multiple of
    // every reduction the stages reach); the runner pads other sizes.
    int size_multiple() const;
    // FLOPs per image pixel (2 per multiply-add, from each stage's
    // flops_per_pixel at its scale): the model's cost.
    double flops_per_pixel() const;
    int min_format_version() const;  // the oldest format that can hold this model
};

// The root attribute validated_precisions ("fp16", "bf16,fp16", ...: the
// half precisions, fastest first, comma-separated, no spaces, none twice) as
// a list; throws imr::Error "FILE: attribute 'validated_precisions': ..."
// naming what is wrong.
std::vector<std::string> parse_validated_precisions(const std::string& value, const std::string& path);

// What validate_model accepts at most, so that a small hostile file cannot
// declare a model that takes hours or all memory: IMRESTORE_MAX_PARAMETERS
// and IMRESTORE_MAX_FLOPS_PER_PIXEL override them (the bundled models have at
// most 0.5 M parameters and 0.34 MFLOP per pixel).
constexpr double kDefaultMaxParameters = 64e6;
// The largest size multiple (the lcm of the space_to_depth reductions): an
// image is padded to it, so more would pad small images absurdly.
constexpr int kMaxSizeMultiple = 64;
constexpr double kDefaultMaxFlopsPerPixel = 50e6;

// The limits in force (the defaults, or the environment's overrides; a
// malformed override is an imr::Error).
double max_model_parameters();
double max_model_flops_per_pixel();

// Reads and validates a model file. Throws imr::Error naming the file, the
// stage, the dataset or attribute, what was expected and what was found.
ModelFile load_model_file(const std::string& path);

// What load_model_file does with the file's contents once the isolated reader
// has delivered them (exposed for the fuzzers): every layer's own load, then
// validate_model. `path` prefixes the messages.
ModelFile interpret_raw_model(const RawModel& raw, const std::string& path);

// Checks a model in memory (what load_model_file checks after reading).
// `where` prefixes the messages (the file path).
void validate_model(const ModelFile& model, const std::string& where);

// Writes a model file (validated first) atomically: temp file + rename. The
// file's format_version is model.format_version raised to the oldest version
// that can hold the model.
void write_model_file(const std::string& path, const ModelFile& model);

// Human-readable summary: metadata, stages with shapes, parameters, receptive field.
std::string describe_model(const ModelFile& model);

}  // namespace imr
