// A restoration model: metadata plus an ordered list of typed stages, loaded
// from an HDF5 file (format spec: weights/README.md) and validated once, at
// load time, so nothing downstream has to check shapes again.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "backend.h"

namespace imr {

constexpr const char* kModelFormatName = "imrestore-model";
constexpr int kModelFormatVersion = 1;  // the newest version this build reads

// out = x + conv_out(conv_in(x)); see ResidualBlockArgs.
struct ResidualBlockStage {
    int channels = 0, hidden = 0;
    std::vector<float> conv_in_weight;   // [hidden, channels, 3, 3]
    std::vector<float> conv_in_bias;     // [hidden]
    std::vector<float> conv_out_weight;  // [channels, hidden, 3, 3]
    std::vector<float> conv_out_bias;    // [channels]
};

// Size-keeping convolution: pad (K-1)/2 before and the rest after, then valid conv.
struct Conv2dStage {
    int in_channels = 0, out_channels = 0, kernel = 0;
    PadMode padding = PadMode::Reflect;
    std::vector<float> weight;  // [out_channels, in_channels, K, K]
    std::vector<float> bias;    // [out_channels], or empty for none

    int pad_before() const { return (kernel - 1) / 2; }
    int pad_after() const { return kernel - 1 - pad_before(); }
};

using Stage = std::variant<ResidualBlockStage, Conv2dStage>;
const char* stage_op_name(const Stage& stage);
int stage_in_channels(const Stage& stage);
int stage_out_channels(const Stage& stage);
// How far (in pixels) an output pixel sees beyond itself on the larger side.
int stage_radius(const Stage& stage);

struct ModelFile {
    std::string path;  // where it was loaded from (empty if built in memory)
    int format_version = kModelFormatVersion;
    std::string name, task, description, provenance, license;
    int channels = 3;  // image channels the model takes and gives: 1 (gray) or 3 (RGB)
    std::vector<Stage> stages;

    size_t parameter_count() const;
    int receptive_field() const;  // 1 + 2 * sum of stage radii
    int radius() const;           // sum of stage radii: the halo a tile needs
    int max_channels() const;     // widest tensor between stages
};

// Reads and validates a model file. Throws imr::Error naming the file, the
// stage, the dataset or attribute, what was expected and what was found.
ModelFile load_model_file(const std::string& path);

// Checks a model in memory (what load_model_file checks after reading).
// `where` prefixes the messages (the file path).
void validate_model(const ModelFile& model, const std::string& where);

// Writes a model file (validated first) atomically: temp file + rename.
void write_model_file(const std::string& path, const ModelFile& model);

// Human-readable summary: metadata, stages with shapes, parameters, receptive field.
std::string describe_model(const ModelFile& model);

}  // namespace imr
