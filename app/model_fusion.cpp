#include "model_fusion.h"

#include <algorithm>
#include <map>

namespace imr {

namespace {

// Whether stage s is a convolution that adds nothing yet (no residual, no
// model input) and computes no gate (whose product an activation or an add
// would have to follow), and so can take an activation or an add into its
// epilogue.
bool adds_nothing(const Stage& s) {
    if (const auto* c = std::get_if<Conv2dStage>(&s)) return !c->adds_input && !c->add_model_input && !c->gate;
    if (const auto* t = std::get_if<ConvTranspose2dStage>(&s)) return !t->adds_input;
    return false;
}

// Folds stage j into stage i (i < j, j the only reader of i's output) if one
// of the rules applies; returns the note, or "" when it does not.
std::string try_fuse(ModelFile& m, size_t i, size_t j) {
    const std::string what_i = m.stage_name(i) + " (" + stage_op_name(m.stages[i]) + ")";
    const std::string what_j = m.stage_name(j) + " (" + stage_op_name(m.stages[j]) + ")";
    std::vector<std::string>& in_j = m.links[j].inputs;
    std::vector<std::string>& in_i = m.links[i].inputs;
    if (const auto* a = std::get_if<ActivationStage>(&m.stages[j]); a && a->function == UnaryFunction::ReLU) {
        auto* c = std::get_if<Conv2dStage>(&m.stages[i]);
        if (!c || c->activation != Activation::None || !adds_nothing(m.stages[i])) return "";
        c->activation = Activation::ReLU;
    } else if (std::holds_alternative<SimpleGateStage>(m.stages[j])) {
        auto* d = std::get_if<DepthwiseConv2dStage>(&m.stages[i]);
        auto* c = std::get_if<Conv2dStage>(&m.stages[i]);
        if (d && !d->gate) {
            d->gate = true;
        } else if (c && c->stride == 1 && c->activation == Activation::None && adds_nothing(m.stages[i])) {
            c->gate = true;
        } else {
            return "";
        }
    } else if (std::holds_alternative<AddStage>(m.stages[j]) && adds_nothing(m.stages[i])) {
        const std::string& mine = m.stage_name(i);
        if (in_j.size() != 2 || in_j[0] == in_j[1]) return "";  // add(x, x) is not a residual
        const std::string other = in_j[0] == mine ? in_j[1] : in_j[0];
        in_i.push_back(other);
        if (auto* c = std::get_if<Conv2dStage>(&m.stages[i])) c->adds_input = true;
        if (auto* t = std::get_if<ConvTranspose2dStage>(&m.stages[i])) t->adds_input = true;
    } else {
        return "";
    }
    // The convolution (plain or depthwise) takes stage j's place (the inputs it now reads may be
    // made between i and j) and its name (what j's readers read).
    Stage fused = m.stages[i];
    StageLinks links{m.links[j].name, in_i};
    m.stages[j] = std::move(fused), m.links[j] = std::move(links);
    m.stages.erase(m.stages.begin() + long(i)), m.links.erase(m.links.begin() + long(i));
    return what_j + " into " + what_i;
}

// After a stage is removed, the stages named by default (their index) take
// their new index, in their names and wherever they are read.
void renumber_default_names(ModelFile& m) {
    std::map<std::string, std::string> renamed;
    for (size_t i = 0; i < m.stages.size(); ++i) {
        std::string& name = m.links[i].name;
        if (!name.empty() && name[0] >= '0' && name[0] <= '9' && name != default_stage_name(i))
            name = renamed[name] = default_stage_name(i);
    }
    for (StageLinks& l : m.links)
        for (std::string& in : l.inputs)
            if (const auto it = renamed.find(in); it != renamed.end()) in = it->second;
    if (const auto it = renamed.find(m.output); it != renamed.end()) m.output = it->second;
}

}  // namespace

ModelFile fuse_stages(const ModelFile& model, std::vector<std::string>* notes) {
    ModelFile m = model;
    // Every stage named explicitly while stages are removed (a default name
    // is the stage's index, which removing a stage before it would shift);
    // after each removal the default-named ones take their new index (given
    // names never start with a digit, so no name can collide).
    std::vector<StageLinks> links;
    for (size_t i = 0; i < m.stages.size(); ++i) links.push_back({m.stage_name(i), m.stage_input_names(i)});
    m.output = m.output.empty() ? m.stage_name(m.stages.size() - 1) : m.output;
    m.links = std::move(links);
    for (bool changed = true; changed;) {
        changed = false;
        const ModelGraph g = resolve_graph(m, m.path);
        for (size_t i = 0; i < m.stages.size() && !changed; ++i) {
            const GraphTensor& t = g.tensors[size_t(g.stage_tensor(i))];
            if (t.is_output || t.consumers.size() != 1) continue;
            const size_t j = size_t(t.consumers[0]);
            // j must read i's output once (a stage reading it twice is not an epilogue).
            const auto& ins = g.stage_inputs[j];
            if (std::count(ins.begin(), ins.end(), g.stage_tensor(i)) != 1) continue;
            const std::string note = try_fuse(m, i, j);
            if (note.empty()) continue;
            if (notes) notes->push_back(note);
            renumber_default_names(m);
            changed = true;
        }
    }
    m.format_version = std::max(m.format_version, m.min_format_version());
    return m;
}

}  // namespace imr
