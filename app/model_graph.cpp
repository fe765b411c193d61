#include "model_graph.h"

#include <algorithm>
#include <map>

#include "model_file.h"

namespace imr {

std::string default_stage_name(size_t stage) {
    return std::to_string(stage);
}

namespace {

bool is_extra_input_name(const std::string& s) {
    return std::find(std::begin(kExtraInputNames), std::end(kExtraInputNames), s) != std::end(kExtraInputNames);
}

// A name a file may give a stage (weights/README.md): 1..64 of A-Z a-z 0-9 _ . -,
// not starting with a digit; or the stage's own index (the default, written out).
std::string name_problem(const std::string& name, size_t stage) {
    if (name == default_stage_name(stage)) return "";
    if (name.empty() || name.size() > 64) return "must be 1 to 64 characters";
    for (char c : name)
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '-'))
            return "may hold only A-Z a-z 0-9 _ . -";
    if (name[0] >= '0' && name[0] <= '9') return "may not start with a digit (except a stage's own index)";
    if (name == "input" || is_extra_input_name(name)) return "is the name of a model input";
    return "";
}

}  // namespace

ModelGraph resolve_graph(const ModelFile& m, const std::string& where) {
    ModelGraph g;
    std::map<std::string, int> by_name;
    auto add = [&](GraphTensor t) {
        by_name[t.name] = int(g.tensors.size());
        g.tensors.push_back(std::move(t));
    };
    add({"input", -1, m.channels, 1, {}, false, -1});
    for (const std::string& e : m.extra_inputs) {
        if (!is_extra_input_name(e))
            throw Error(where + ": attribute 'extra_inputs': unknown input '" + e +
                        "' (this build supplies noise_level and jpeg_quality)");
        if (by_name.count(e)) throw Error(where + ": attribute 'extra_inputs': '" + e + "' is listed twice");
        add({e, -1, 1, 1, {}, false, -1});
    }
    g.first_stage_tensor = int(g.tensors.size());
    if (!m.links.empty() && m.links.size() != m.stages.size())
        throw Error(where + ": " + std::to_string(m.links.size()) + " stage links for " +
                    std::to_string(m.stages.size()) + " stages");
    for (size_t i = 0; i < m.stages.size(); ++i) {
        const Stage& s = m.stages[i];
        const std::string name = m.stage_name(i);
        const std::string at = where + ": stage " + std::to_string(i) + " (" + stage_op_name(s) + ")";
        if (std::string p = name_problem(name, i); !p.empty())
            throw Error(at + ": attribute 'name' '" + name + "' " + p);
        if (by_name.count(name)) throw Error(at + ": attribute 'name': '" + name + "' names an earlier tensor too");
        std::vector<int> ins;
        for (const std::string& in : m.stage_input_names(i)) {
            const auto it = by_name.find(in);
            if (it == by_name.end())
                throw Error(at + ": reads '" + in + "', which no earlier stage or model input is named");
            ins.push_back(it->second);  // a tensor may be read twice (add(x, x) is 2x)
        }
        const auto [fewest, most] = stage_input_range(s);
        if (int(ins.size()) < fewest || int(ins.size()) > most)
            throw Error(at + ": reads " + std::to_string(ins.size()) + " inputs; " + stage_op_name(s) + " takes " +
                        std::to_string(fewest) + (most > fewest ? ".." + std::to_string(most) : ""));
        const Geometry geo = stage_geometry(s);
        const int s_in = g.tensors[size_t(ins[0])].scale;
        if (geo.up > 1 && s_in % geo.up != 0)
            throw Error(at + ": enlarges by " + std::to_string(geo.up) + " beyond the image's resolution (its input '" +
                        g.tensors[size_t(ins[0])].name + "' is at 1/" + std::to_string(s_in) + ")");
        const long long s_out = (long long)s_in * geo.down / geo.up;
        if (s_out > 64) throw Error(at + ": reduces the resolution by more than 64 in all");
        for (size_t k = 0; k < ins.size(); ++k) {
            const GraphTensor& t = g.tensors[size_t(ins[k])];
            const int want = stage_in_channels(s, int(k));
            if (t.channels != want)
                throw Error(at + ": input " + std::to_string(k + 1) + " '" + t.name + "' has " +
                            std::to_string(t.channels) + " channels; it takes " + std::to_string(want));
            if (k > 0 && t.scale != s_out)
                throw Error(at + ": input " + std::to_string(k + 1) + " '" + t.name + "' is at 1/" +
                            std::to_string(t.scale) + " resolution, its output at 1/" + std::to_string(s_out) +
                            "; they must agree");
        }
        const int channels = stage_out_channels(s);
        if (stage_adds_model_input(s) && (channels != m.channels || s_out != 1))
            throw Error(at + ": adds the model's input, but its output is not image-shaped (" +
                        std::to_string(channels) + " channels at 1/" + std::to_string(s_out) +
                        " resolution; the image has " + std::to_string(m.channels) + " at full resolution)");
        for (int t : ins) {
            auto& c = g.tensors[size_t(t)].consumers;
            if (c.empty() || c.back() != int(i)) c.push_back(int(i));
            g.tensors[size_t(t)].last_use = int(i);
        }
        if (stage_adds_model_input(s)) {
            auto& c = g.tensors[0].consumers;
            if (c.empty() || c.back() != int(i)) c.push_back(int(i));
            g.tensors[0].last_use = int(i);
        }
        g.stage_inputs.push_back(std::move(ins));
        add({name, int(i), channels, int(s_out), {}, false, -1});
    }
    if (m.stages.empty()) throw Error(where + ": the model has no stages");
    const std::string out_name = m.output.empty() ? m.stage_name(m.stages.size() - 1) : m.output;
    const auto out = by_name.find(out_name);
    if (out == by_name.end() || out->second < g.first_stage_tensor)
        throw Error(where + ": attribute 'output': '" + out_name + "' is not the name of a stage");
    g.output = out->second;
    GraphTensor& o = g.tensors[size_t(g.output)];
    o.is_output = true;
    o.last_use = int(m.stages.size());
    if (o.channels != m.channels)
        throw Error(where + ": the output '" + o.name + "' has " + std::to_string(o.channels) +
                    " channels but the model's 'channels' is " + std::to_string(m.channels));
    if (o.scale != 1)
        throw Error(where + ": the output '" + o.name + "' is at 1/" + std::to_string(o.scale) +
                    " of the image's resolution; the model must end at full resolution");
    for (size_t i = 0; i < m.stages.size(); ++i) {
        const GraphTensor& t = g.tensors[size_t(g.stage_tensor(i))];
        if (t.consumers.empty() && !t.is_output)
            throw Error(where + ": stage " + std::to_string(i) + " (" + stage_op_name(m.stages[i]) + ") '" + t.name +
                        "': nothing reads its output and it is not the model's output");
    }
    return g;
}

}  // namespace imr
