// The schedule of one pass of a model over a batch (ModelRunner's): which
// tensor is held in which type (a value), the steps that make each value
// (a stage, or a convert where a reader wants another type than the writer
// wrote), when each value is first made and last read, and where each lives
// in one arena, so that a pass holds at most the largest set of values alive
// at once, not every tensor of the graph (the greedy offset assignment of
// TFLite's and ncnn's memory planners: largest first, each at the lowest
// offset free over its lifetime).
#pragma once

#include <functional>
#include <vector>

#include "model_graph.h"
#include "tensor.h"

namespace imr {

// The types one stage reads and writes: `in` its first input, `out` its
// output, its other inputs and the model input it adds.
struct StageTypes {
    TensorType in, out;
};

struct PlanValue {
    int tensor = -1;  // the graph tensor it holds; -1: a stage's scratch
    TensorType type;
    bool external = false;  // a model input in f32 NCHW: the caller's memory, not the arena
    int made = -1;          // the step that writes it (-1: external)
    int last = -1;          // the last step that reads it (the step count: to the end of the pass)
};

struct PlanStep {
    int stage = -1;           // the stage it runs; -1: a convert of inputs[0] into output
    std::vector<int> inputs;  // values, in the stage's input order
    int model_input = -1;     // the value of the model input the stage adds, or -1
    int scratch = -1;         // the value of its scratch memory, or -1
    int output = -1;
    int timed_as = 0;  // the stage whose time it counts in (a convert: the stage it feeds)
};

struct RunnerPlan {
    std::vector<PlanValue> values;
    std::vector<PlanStep> steps;
    int result = -1;  // the model's output in f32 NCHW
};

// The plan for stages of types `io`; reads_f32 / writes_f32 / type per stage
// as PreparedStage says (types[i] is the stage's own type()).
struct StageTypeInfo {
    TensorType type;
    bool reads_f32 = false, writes_f32 = false;
    bool adds_model_input = false;
};
RunnerPlan make_plan(const ModelGraph& graph, const std::vector<StageTypeInfo>& stages);

// The types each stage reads and writes in a plan (for reporting and tests).
std::vector<StageTypes> plan_stage_types(const RunnerPlan& plan, size_t stages);

// Where each value lives in the arena for a pass over `shape` (the batch:
// n images of c x h x w, sides multiples of the size multiple): byte
// offsets (external values: 0, unused), and the arena's size in bytes.
// scratch_bytes(stage, first input shape, type) is the stage's scratch.
struct ArenaLayout {
    std::vector<size_t> offset, bytes;
    size_t total = 0;
};
ArenaLayout layout_arena(const RunnerPlan& plan, const ModelGraph& graph, Shape shape,
                         const std::function<size_t(int stage, const Shape&, TensorType)>& scratch_bytes);

// A value's tensor shape for a pass over `shape` (the image batch).
Shape value_shape(const ModelGraph& graph, const PlanValue& v, Shape shape);

}  // namespace imr
