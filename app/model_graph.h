// A model as the graph it is (format v3, weights/README.md): named tensors,
// the model's input(s) and one per stage, each stage reading some of the
// tensors before it. A chain (v1/v2, or v3 without wiring) is the graph in
// which each stage reads the one before. resolve_graph checks the wiring once
// and works out every tensor's channels and scale, what reads it and when
// it is last read; the geometry (size multiple, radius, receptive field,
// cost) and the runner's tensor lifetimes come from it.
#pragma once

#include <string>
#include <vector>

namespace imr {

struct ModelFile;

// The inputs the tool can supply besides the image (root attribute
// extra_inputs): one channel at full resolution, one value everywhere.
constexpr const char* kExtraInputNames[] = {"noise_level", "jpeg_quality"};

struct GraphTensor {
    std::string name;
    int producer = -1;  // the stage that writes it; -1: a model input
    int channels = 0;
    int scale = 1;               // image pixels per tensor pixel, per axis
    std::vector<int> consumers;  // stages that read it, ascending, each once
    bool is_output = false;      // the model's output
    // The last stage that reads it, or the stage count for the output
    // (which lives to the end); -1 when nothing reads it.
    int last_use = -1;
};

struct ModelGraph {
    // [0]: the image ("input"); [1 .. extra]: the extra inputs in the order
    // the file lists them; then one per stage, in stage order.
    std::vector<GraphTensor> tensors;
    std::vector<std::vector<int>> stage_inputs;  // per stage: the tensors it reads, in order
    int first_stage_tensor = 1;
    int output = 0;  // the model's output tensor

    int stage_tensor(size_t stage) const { return first_stage_tensor + int(stage); }
    int input_scale(size_t stage) const { return tensors[size_t(stage_inputs[stage][0])].scale; }
    int output_scale(size_t stage) const { return tensors[size_t(stage_tensor(stage))].scale; }
};

// The graph of `m`, every rule of weights/README.md checked (names, inputs
// defined before use and their count, channels, scales, the output; no stage
// whose output nothing reads). Throws imr::Error starting with `where` and
// naming the stage.
ModelGraph resolve_graph(const ModelFile& m, const std::string& where);

// The name a stage's output has when the file gives none: its index.
std::string default_stage_name(size_t stage);

}  // namespace imr
