#include "model_fusion.h"

#include <algorithm>

namespace imr {

namespace {

// Whether stage s is a convolution that adds nothing yet (no residual, no
// model input), and so can take an add into its epilogue.
bool adds_nothing(const Stage& s) {
    if (const auto* c = std::get_if<Conv2dStage>(&s)) return !c->adds_input && !c->add_model_input;
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
    // The convolution takes stage j's place (the inputs it now reads may be
    // made between i and j) and its name (what j's readers read).
    Stage fused = m.stages[i];
    StageLinks links{m.links[j].name, in_i};
    m.stages[j] = std::move(fused), m.links[j] = std::move(links);
    m.stages.erase(m.stages.begin() + long(i)), m.links.erase(m.links.begin() + long(i));
    return what_j + " into " + what_i;
}

}  // namespace

ModelFile fuse_stages(const ModelFile& model, std::vector<std::string>* notes) {
    ModelFile m = model;
    // Default names are indices, which removing a stage would shift: every
    // stage gets a name of its own, the defaults prefixed with underscores
    // that no given name starts with (given names may not start with a digit).
    std::string prefix = "_";
    auto taken = [&] {
        for (size_t i = 0; i < m.stages.size(); ++i)
            if (m.stage_name(i).rfind(prefix, 0) == 0) return true;
        return false;
    };
    while (taken()) prefix += "_";
    auto named = [&](const std::string& n) { return !n.empty() && n[0] >= '0' && n[0] <= '9' ? prefix + n : n; };
    std::vector<StageLinks> links;
    for (size_t i = 0; i < m.stages.size(); ++i) {
        links.push_back({named(m.stage_name(i)), {}});
        for (const std::string& in : m.stage_input_names(i)) links.back().inputs.push_back(named(in));
    }
    m.output = named(m.output.empty() ? m.stage_name(m.stages.size() - 1) : m.output);
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
            changed = true;
        }
    }
    m.format_version = std::max(m.format_version, m.min_format_version());
    return m;
}

}  // namespace imr
