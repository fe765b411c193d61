#include "runner_plan.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace imr {

namespace {
// Arena offsets are multiples of this: what any kernel's vector loads need
// (16 bytes) with room for cache-line and DRAM-burst alignment.
constexpr size_t kArenaAlignment = 256;
}  // namespace

RunnerPlan make_plan(const ModelGraph& g, const std::vector<StageTypeInfo>& stages) {
    RunnerPlan plan;
    const TensorType f32{};
    std::map<std::pair<int, std::pair<int, int>>, int> value_of;  // (tensor, type) -> value
    auto key = [](int t, TensorType type) {
        return std::make_pair(t, std::make_pair(int(type.dtype), int(type.layout)));
    };
    std::vector<int> native(g.tensors.size(), -1);  // the value its writer writes
    for (int t = 0; t < g.first_stage_tensor; ++t) {
        PlanValue v;
        v.tensor = t, v.external = true;
        native[size_t(t)] = int(plan.values.size());
        value_of[key(t, f32)] = native[size_t(t)];
        plan.values.push_back(v);
    }
    // The type stage i writes: its own, or f32 NCHW where it can write that
    // and every reader of its output computes in f32 NCHW (the model's
    // output counts as such a reader).
    std::vector<StageTypes> io(stages.size());
    for (size_t i = 0; i < stages.size(); ++i) {
        const StageTypeInfo& s = stages[i];
        io[i] = {s.type, s.type};
        const GraphTensor& out = g.tensors[size_t(g.stage_tensor(i))];
        if (s.type != f32 && s.writes_f32 && std::all_of(out.consumers.begin(), out.consumers.end(), [&](int c) {
                return stages[size_t(c)].type == f32;
            }))
            io[i].out = f32;
    }
    auto touch = [&](int value, int step) {
        plan.values[size_t(value)].last = std::max(plan.values[size_t(value)].last, step);
    };
    // The value of tensor t in `type` by step `step`: the writer's own, or a
    // convert placed before the step (shared by later readers that want it).
    auto want = [&](int t, TensorType type, int timed_as) {
        const auto it = value_of.find(key(t, type));
        if (it != value_of.end()) return it->second;
        PlanValue v;
        v.tensor = t, v.type = type, v.made = int(plan.steps.size());
        const int id = int(plan.values.size());
        plan.values.push_back(v);
        PlanStep c;
        c.inputs = {native[size_t(t)]}, c.output = id, c.timed_as = timed_as;
        touch(c.inputs[0], int(plan.steps.size()));
        plan.steps.push_back(c);
        value_of[key(t, type)] = id;
        return id;
    };
    for (size_t i = 0; i < stages.size(); ++i) {
        const std::vector<int>& ins = g.stage_inputs[i];
        // The first input: f32 NCHW as it is where the stage reads that.
        TensorType in = io[i].in;
        if (in != f32 && stages[i].reads_f32 && plan.values[size_t(native[size_t(ins[0])])].type == f32) in = f32;
        io[i].in = in;
        PlanStep s;
        s.stage = int(i), s.timed_as = int(i);
        for (size_t k = 0; k < ins.size(); ++k) s.inputs.push_back(want(ins[k], k == 0 ? in : io[i].out, int(i)));
        if (stages[i].adds_model_input) s.model_input = want(0, io[i].out, int(i));
        const int step = int(plan.steps.size());
        for (int v : s.inputs) touch(v, step);
        if (s.model_input >= 0) touch(s.model_input, step);
        PlanValue scratch;
        scratch.made = step, scratch.last = step, scratch.type = in;
        s.scratch = int(plan.values.size());
        plan.values.push_back(scratch);
        PlanValue out;
        out.tensor = g.stage_tensor(i), out.type = io[i].out, out.made = step;
        s.output = int(plan.values.size());
        native[size_t(out.tensor)] = s.output;
        value_of[key(out.tensor, out.type)] = s.output;
        plan.values.push_back(out);
        plan.steps.push_back(s);
    }
    plan.result = want(g.output, f32, int(stages.size()) - 1);
    plan.values[size_t(plan.result)].last = int(plan.steps.size());
    return plan;
}

std::vector<StageTypes> plan_stage_types(const RunnerPlan& plan, size_t stages) {
    std::vector<StageTypes> io(stages);
    for (const PlanStep& s : plan.steps)
        if (s.stage >= 0)
            io[size_t(s.stage)] = {plan.values[size_t(s.inputs[0])].type, plan.values[size_t(s.output)].type};
    return io;
}

Shape value_shape(const ModelGraph& g, const PlanValue& v, Shape shape) {
    const GraphTensor& t = g.tensors[size_t(v.tensor)];
    return {shape.n, t.channels, shape.h / t.scale, shape.w / t.scale};
}

ArenaLayout layout_arena(const RunnerPlan& plan, const ModelGraph& g, Shape shape,
                         const std::function<size_t(int, const Shape&, TensorType)>& scratch_bytes) {
    ArenaLayout a;
    const size_t n = plan.values.size();
    a.offset.assign(n, 0), a.bytes.assign(n, 0);
    for (const PlanStep& s : plan.steps) {
        if (s.stage < 0) continue;
        const PlanValue& in = plan.values[size_t(s.inputs[0])];
        a.bytes[size_t(s.scratch)] =
            scratch_bytes(s.stage, value_shape(g, in, shape), plan.values[size_t(s.scratch)].type);
    }
    std::vector<int> order;
    for (size_t v = 0; v < n; ++v) {
        const PlanValue& pv = plan.values[v];
        if (pv.external) continue;
        if (pv.tensor >= 0)
            a.bytes[v] = Tensor{nullptr, value_shape(g, pv, shape), pv.type.dtype, pv.type.layout}.bytes();
        if (a.bytes[v]) order.push_back(int(v));
    }
    // Largest first; ties by when they are made, so the layout is deterministic.
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return a.bytes[size_t(x)] > a.bytes[size_t(y)]; });
    std::vector<int> placed;
    for (int v : order) {
        const PlanValue& pv = plan.values[size_t(v)];
        // Intervals taken by placed values whose lifetimes overlap this one's.
        std::vector<std::pair<size_t, size_t>> taken;
        for (int u : placed) {
            const PlanValue& pu = plan.values[size_t(u)];
            if (pu.made <= pv.last && pv.made <= pu.last)
                taken.emplace_back(a.offset[size_t(u)], a.offset[size_t(u)] + a.bytes[size_t(u)]);
        }
        std::sort(taken.begin(), taken.end());
        size_t at = 0;
        for (const auto& [lo, hi] : taken) {
            if (at + a.bytes[size_t(v)] <= lo) break;
            at = std::max(at, (hi + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment);
        }
        a.offset[size_t(v)] = at;
        a.total = std::max(a.total, at + a.bytes[size_t(v)]);
        placed.push_back(v);
    }
    a.total = (a.total + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    return a;
}

}  // namespace imr
