// Model files (the spec: weights/README.md, and each layer's header in
// app/layers/): what a model is (geometry, limits, validation, description)
// and loading it from what the isolated HDF5 reader (model_isolation.h)
// delivers, through each layer's own load. Every failure becomes an
// imr::Error naming the file, the stage and the dataset.
#include "model_file.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <map>
#include <numeric>
#include <sstream>

#include "model_fusion.h"
#include "model_hdf5.h"
#include "model_isolation.h"
#include "raw_layer_reader.h"
#include "tensor.h"

namespace imr {

namespace fs = std::filesystem;
// ------------------------------------------------------------------ wiring and geometry

std::string ModelFile::stage_name(size_t i) const {
    if (i < links.size() && !links[i].name.empty()) return links[i].name;
    return default_stage_name(i);
}

std::vector<std::string> ModelFile::stage_input_names(size_t i) const {
    if (i < links.size() && !links[i].inputs.empty()) return links[i].inputs;
    return {i == 0 ? std::string("input") : stage_name(i - 1)};
}

bool ModelFile::uses_wiring() const {
    if (!extra_inputs.empty()) return true;
    if (!output.empty() && (stages.empty() || output != stage_name(stages.size() - 1))) return true;
    for (size_t i = 0; i < links.size(); ++i) {
        if (!links[i].name.empty() && links[i].name != default_stage_name(i)) return true;
        if (!links[i].inputs.empty() &&
            links[i].inputs != std::vector<std::string>{i == 0 ? std::string("input") : stage_name(i - 1)})
            return true;
    }
    return false;
}

size_t ModelFile::parameter_count() const {
    size_t count = 0;
    for (const Stage& s : stages) count += std::visit([](const auto& st) { return st.parameter_count(); }, s);
    return count;
}

// The geometry below is of a valid model (validate_model has resolved its
// graph); on an invalid one resolve_graph throws.

int ModelFile::size_multiple() const {
    // Every resolution the stages reach must divide the image exactly: the
    // least common multiple of each stage's input scale times its reduction.
    const ModelGraph g = resolve_graph(*this, path);
    long long m = 1;
    for (size_t i = 0; i < stages.size(); ++i)
        m = std::min<long long>(std::lcm(m, (long long)g.input_scale(i) * stage_geometry(stages[i]).down), 1 << 20);
    return int(m);
}

int ModelFile::radius() const {
    // Worked back from the output: a halo of h image pixels at a stage's
    // output is ceil(h / S_out) of its output pixels (whole blocks at coarse
    // resolutions), which need `radius` more of its first input's pixels of
    // S_in image pixels each, and the same whole blocks of its other inputs
    // (at the output's scale). Each tensor needs the largest halo any reader
    // asks of it.
    const ModelGraph g = resolve_graph(*this, path);
    std::vector<long long> halo(g.tensors.size(), 0);
    for (size_t i = stages.size(); i-- > 0;) {
        const Geometry geo = stage_geometry(stages[i]);
        const long long s_in = g.input_scale(i), s_out = g.output_scale(i);
        const long long blocks = (halo[size_t(g.stage_tensor(i))] + s_out - 1) / s_out * s_out;
        const std::vector<int>& ins = g.stage_inputs[i];
        halo[size_t(ins[0])] = std::max(halo[size_t(ins[0])], blocks + (long long)geo.radius * s_in);
        for (size_t k = 1; k < ins.size(); ++k) halo[size_t(ins[k])] = std::max(halo[size_t(ins[k])], blocks);
        if (stage_adds_model_input(stages[i])) halo[0] = std::max(halo[0], blocks);
    }
    // The tile needs the largest halo any model input needs: the image's,
    // and an extra input's (its plane ends at the tile's edge as well).
    long long most = 0;
    for (int t = 0; t < g.first_stage_tensor; ++t) most = std::max(most, halo[size_t(t)]);
    const long long m = size_multiple();
    return int((most + m - 1) / m * m);  // tiles start on multiples of m, so halos are whole blocks
}

int ModelFile::receptive_field() const {
    const ModelGraph g = resolve_graph(*this, path);
    std::vector<long long> field(g.tensors.size(), 1);
    for (size_t i = 0; i < stages.size(); ++i) {
        const std::vector<int>& ins = g.stage_inputs[i];
        long long f = field[size_t(ins[0])] + (long long)(stage_geometry(stages[i]).window - 1) * g.input_scale(i);
        for (size_t k = 1; k < ins.size(); ++k) f = std::max(f, field[size_t(ins[k])]);
        field[size_t(g.stage_tensor(i))] = f;
    }
    return int(std::min<long long>(field[size_t(g.output)], 1 << 30));
}

double ModelFile::flops_per_pixel() const {
    const ModelGraph g = resolve_graph(*this, path);
    double flops = 0;
    for (size_t i = 0; i < stages.size(); ++i) {
        const double s = g.output_scale(i);
        flops += stage_flops_per_pixel(stages[i]) / (s * s);
    }
    return flops;
}

int ModelFile::min_format_version() const {
    int v = half_weights ? 4 : uses_wiring() ? 3 : 1;
    for (const Stage& s : stages)
        v = std::max(v, std::visit([](const auto& st) { return st.min_format_version(); }, s));
    return v;
}

// ------------------------------------------------------------------ validation

namespace {
// Throws unless every weight is a float16 value (what half_weights promises
// the writer), naming the dataset and the first value that is not.
class HalfWeightsCheck : public LayerWriter {
public:
    explicit HalfWeightsCheck(const std::string& at) : at_(at) {}
    void tensor(const char* name, const std::vector<float>& data, std::vector<int>) override {
        for (size_t i = 0; i < data.size(); ++i)
            if (f16_to_float(float_to_f16(data[i])) != data[i])
                throw Error(at_ + ": dataset '" + name + "' value " + std::to_string(i) + " (" +
                            std::to_string(data[i]) + ") is no float16, but the model stores float16 weights");
    }
    void string_attribute(const char*, const std::string&) override {}
    void int_attribute(const char*, long long) override {}
    void float_attribute(const char*, double) override {}

private:
    std::string at_;
};

// The names of the datasets a stage holds, in the order its layer writes them.
struct TensorNames : LayerWriter {
    std::vector<std::string> names;
    void tensor(const char* name, const std::vector<float>&, std::vector<int>) override { names.push_back(name); }
    void string_attribute(const char*, const std::string&) override {}
    void int_attribute(const char*, long long) override {}
    void float_attribute(const char*, double) override {}
};

std::string stage_where(const std::string& where, size_t i, const Stage& s) {
    return where + ": stage " + std::to_string(i) + " (" + stage_op_name(s) + ")";
}
}  // namespace

namespace {
// The limit from the environment variable `name` when set, else `fallback`.
double limit_from_env(const char* name, double fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    char* end = nullptr;
    const double x = std::strtod(v, &end);
    if (*end || !(x > 0)) throw Error(std::string(name) + "=" + v + ": expected a positive number");
    return x;
}
}  // namespace

double max_model_parameters() {
    return limit_from_env("IMRESTORE_MAX_PARAMETERS", kDefaultMaxParameters);
}

double max_model_flops_per_pixel() {
    return limit_from_env("IMRESTORE_MAX_FLOPS_PER_PIXEL", kDefaultMaxFlopsPerPixel);
}

void validate_model(const ModelFile& m, const std::string& where) {
    if (m.format_version < 1 || m.format_version > kModelFormatVersion)
        throw Error(where + ": format_version " + std::to_string(m.format_version) +
                    " is not supported (this build reads 1.." + std::to_string(kModelFormatVersion) +
                    "; a newer imrestore may read it)");
    if (m.name.empty()) throw Error(where + ": attribute 'name' is empty");
    if (m.channels != 1 && m.channels != 3)
        throw Error(where + ": attribute 'channels' must be 1 (gray) or 3 (RGB), found " + std::to_string(m.channels));
    if (m.stages.empty()) throw Error(where + ": the model has no stages");
    if (!m.validated_precisions.empty()) {  // what the writer joins must load back
        std::string list;
        for (const std::string& p : m.validated_precisions) list += (list.empty() ? "" : ",") + p;
        parse_validated_precisions(list, where);
    }
    for (size_t i = 0; i < m.stages.size(); ++i) {
        const Stage& s = m.stages[i];
        const std::string at = stage_where(where, i, s);
        std::visit([&](const auto& st) { st.validate(at); }, s);
        const int needs = std::visit([](const auto& st) { return st.min_format_version(); }, s);
        if (needs > m.format_version)
            throw Error(at + ": needs format_version " + std::to_string(needs) + ", the model says " +
                        std::to_string(m.format_version));
    }
    if (m.uses_wiring() && m.format_version < 3)
        throw Error(where +
                    ": names stages, wires their inputs or declares inputs or an output: format_version 3 "
                    "(the model says " +
                    std::to_string(m.format_version) + ")");
    resolve_graph(m, where);  // wiring, channels, scales, the output
    if (m.size_multiple() > kMaxSizeMultiple)
        throw Error(where + ": image sides would have to be multiples of " + std::to_string(m.size_multiple()) +
                    " (the least common multiple of its reductions); at most " + std::to_string(kMaxSizeMultiple) +
                    " is supported");
    const double params = double(m.parameter_count()), flops = m.flops_per_pixel();
    const double max_params = max_model_parameters(), max_flops = max_model_flops_per_pixel();
    if (params > max_params)
        throw Error(where + ": " + std::to_string(size_t(params)) + " parameters, more than the limit of " +
                    std::to_string(size_t(max_params)) + " (IMRESTORE_MAX_PARAMETERS raises it)");
    if (flops > max_flops)
        throw Error(where + ": " + std::to_string(size_t(flops)) + " FLOP per pixel, more than the limit of " +
                    std::to_string(size_t(max_flops)) + " (IMRESTORE_MAX_FLOPS_PER_PIXEL raises it)");
}

// ------------------------------------------------------------------ reading

ModelFile load_model_file(const std::string& path) {
    std::error_code ec;
    if (!fs::exists(path, ec)) throw Error(path + ": no such model file");
    if (fs::is_directory(path, ec)) throw Error(path + ": is a directory, not a model file");
    return interpret_raw_model(read_model_isolated(path), path);
}

std::vector<std::string> parse_validated_precisions(const std::string& value, const std::string& path) {
    const std::string at = path + ": attribute 'validated_precisions'";
    if (value.empty()) throw Error(at + " is empty (leave it out when no half precision is validated)");
    std::vector<std::string> list;
    size_t start = 0;
    for (;;) {
        const size_t comma = value.find(',', start);
        const std::string item = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (item != "fp16" && item != "bf16")
            throw Error(at + ": expected a comma-separated list of fp16 and bf16 (e.g. \"fp16,bf16\"), found '" +
                        value + "'");
        if (std::find(list.begin(), list.end(), item) != list.end())
            throw Error(at + ": " + item + " is listed twice in '" + value + "'");
        list.push_back(item);
        if (comma == std::string::npos) return list;
        start = comma + 1;
    }
}

namespace {
// "a,b,c" -> {a, b, c}; empty items (",,", a leading or trailing comma, "")
// are refused: `what` names the attribute.
std::vector<std::string> split_names(const std::string& list, const std::string& what) {
    std::vector<std::string> out;
    size_t start = 0;
    for (;;) {
        const size_t comma = list.find(',', start);
        std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (item.empty())
            throw Error(what + ": '" + list + "' has an empty name (expected names separated by commas, no spaces)");
        out.push_back(std::move(item));
        if (comma == std::string::npos) return out;
        start = comma + 1;
    }
}
}  // namespace

ModelFile interpret_raw_model(const RawModel& raw, const std::string& path) {
    ModelFile m;
    m.path = path;
    RawLayerReader root(raw.root, path, 0);
    if (!root.has_attribute("format"))
        throw Error(path + ": attribute 'format' is missing: not an imrestore model (expected format = '" +
                    kModelFormatName + "')");
    std::string format = root.string_attribute("format");
    if (format != kModelFormatName)
        throw Error(path + ": attribute 'format' is '" + format + "', expected '" + kModelFormatName + "'");
    long long version = root.int_attribute("format_version");
    if (version < 1 || version > kModelFormatVersion)
        throw Error(path + ": format_version " + std::to_string(version) + " is not supported (this build reads 1.." +
                    std::to_string(kModelFormatVersion) + "; a newer imrestore may read it)");
    m.format_version = int(version);
    m.name = root.string_attribute("name");
    m.task = root.string_attribute("task");
    m.description = root.string_attribute("description");
    m.provenance = root.string_attribute("provenance");
    m.license = root.has_attribute("license") ? root.string_attribute("license") : "";
    if (root.has_attribute("validated_precisions"))
        m.validated_precisions = parse_validated_precisions(root.string_attribute("validated_precisions"), path);
    if (root.has_attribute("precision_validation"))
        m.precision_validation = root.string_attribute("precision_validation");
    long long channels = root.int_attribute("channels");
    if (channels != 1 && channels != 3)
        throw Error(path + ": attribute 'channels' must be 1 (gray) or 3 (RGB), found " + std::to_string(channels));
    m.channels = int(channels);

    if (root.has_attribute("extra_inputs") || root.has_attribute("output")) {
        if (m.format_version < 3)
            throw Error(path + ": attributes 'extra_inputs' and 'output' need format_version 3 (the file says " +
                        std::to_string(m.format_version) + ")");
        if (root.has_attribute("extra_inputs"))
            m.extra_inputs = split_names(root.string_attribute("extra_inputs"), path + ": attribute 'extra_inputs'");
        if (root.has_attribute("output")) m.output = root.string_attribute("output");
    }

    if (!raw.has_stages) throw Error(path + ": group 'stages' is missing");
    // The channels of each tensor named so far, to hand each stage's load
    // those of its inputs; resolve_graph (in validate_model) checks the rest.
    std::map<std::string, int> tensor_channels{{"input", m.channels}};
    for (const std::string& e : m.extra_inputs) tensor_channels.emplace(e, 1);
    bool wired = false;
    for (size_t i = 0; i < raw.stages.size(); ++i) {
        std::string at = path + ": stage " + std::to_string(i);
        RawLayerReader plain(raw.stages[i], at, m.format_version);
        const std::string op = plain.string_attribute("op");
        at += " (" + op + ")";
        RawLayerReader reader(raw.stages[i], at, m.format_version);
        StageLinks links;
        if (reader.has_attribute("name") || reader.has_attribute("inputs")) {
            if (m.format_version < 3)
                throw Error(at + ": attributes 'name' and 'inputs' need format_version 3 (the file says " +
                            std::to_string(m.format_version) + ")");
            if (reader.has_attribute("name")) links.name = reader.string_attribute("name");
            if (reader.has_attribute("inputs"))
                links.inputs = split_names(reader.string_attribute("inputs"), at + ": attribute 'inputs'");
            wired = true;
        }
        m.links.push_back(links);
        std::vector<int> in_channels;
        for (const std::string& name : m.stage_input_names(i)) {
            const auto it = tensor_channels.find(name);
            if (it == tensor_channels.end())
                throw Error(at + ": reads '" + name + "', which no earlier stage or model input is named");
            in_channels.push_back(it->second);
        }
        m.stages.push_back(load_stage(op, reader, in_channels));
        tensor_channels[m.stage_name(i)] = stage_out_channels(m.stages.back());
    }
    if (!wired) m.links.clear();  // a chain
    // float16 weights: a format-v4 feature; all of them or none, so that
    // writing the model again (as float16) loses nothing. Counted over the
    // datasets each stage holds (what its layer writes back): unknown extra
    // datasets are ignored, as the format says.
    size_t tensors = 0, halves = 0;
    for (size_t i = 0; i < m.stages.size(); ++i) {
        TensorNames held;
        std::visit([&](const auto& st) { st.write(held); }, m.stages[i]);
        for (const std::string& name : held.names) {
            const auto it = raw.stages[i].datasets.find(name);
            if (it != raw.stages[i].datasets.end() && it->second.kind == RawEntry::Kind::Tensor)
                ++tensors, halves += it->second.half;
        }
    }
    if (halves > 0 && m.format_version < 4)
        throw Error(path + ": float16 datasets need format_version 4 (the file says " +
                    std::to_string(m.format_version) + ")");
    if (halves > 0 && halves != tensors)
        throw Error(path + ": " + std::to_string(halves) + " of its " + std::to_string(tensors) +
                    " datasets are float16: a model stores all its weights as float32 or all as float16");
    m.half_weights = halves > 0;
    validate_model(m, path);
    return m;
}

void write_model_file(const std::string& path, const ModelFile& in_model) {
    ModelFile model = in_model;
    model.format_version = std::max(model.format_version, model.min_format_version());
    validate_model(model, path);
    // Loaded float16 weights are halves by construction; a model built or
    // changed in memory that claims them is checked before they are stored.
    if (model.half_weights)
        for (size_t i = 0; i < model.stages.size(); ++i) {
            HalfWeightsCheck check(stage_where(path, i, model.stages[i]));
            std::visit([&](const auto& st) { st.write(check); }, model.stages[i]);
        }
    write_model_hdf5(path, model);
}

// ------------------------------------------------------------------ describe

std::string describe_model(const ModelFile& m) {
    std::ostringstream s;
    s << "model        " << m.name << (m.path.empty() ? "" : "  (" + m.path + ")") << "\n"
      << "task         " << m.task << "\n"
      << "format       " << kModelFormatName << " v" << m.format_version << "\n"
      << "channels     " << m.channels << "\n"
      << "parameters   " << m.parameter_count() << "\n"
      << "receptive    " << m.receptive_field() << "x" << m.receptive_field() << " pixels\n"
      << "cost         " << std::llround(m.flops_per_pixel() / 1e3) << " kFLOP per pixel\n";
    if (!m.license.empty()) s << "license      " << m.license << "\n";
    if (!m.validated_precisions.empty()) {
        s << "validated   ";
        for (const std::string& p : m.validated_precisions) s << " " << p;
        s << " (--precision auto on a GPU takes the first)\n";
    }
    if (!m.precision_validation.empty()) s << "measured     " << m.precision_validation << "\n";
    s << "description  " << m.description << "\n"
      << "provenance   " << m.provenance << "\n"
      << "stages       name <- inputs, scale (image pixels per pixel), kFLOP per image pixel, what\n";
    const ModelGraph g = resolve_graph(m, m.path);
    size_t name_width = 0, inputs_width = 0;
    std::vector<std::string> inputs(m.stages.size());
    for (size_t i = 0; i < m.stages.size(); ++i) {
        for (const std::string& in : m.stage_input_names(i)) inputs[i] += (inputs[i].empty() ? "" : ",") + in;
        name_width = std::max(name_width, m.stage_name(i).size());
        inputs_width = std::max(inputs_width, inputs[i].size());
    }
    for (size_t i = 0; i < m.stages.size(); ++i) {
        const double scale = g.output_scale(i);
        char cost[32];
        std::snprintf(cost, sizeof cost, "%8.1f", stage_flops_per_pixel(m.stages[i]) / (scale * scale) / 1e3);
        std::string name = m.stage_name(i), in = inputs[i];
        name.resize(name_width, ' '), in.resize(inputs_width, ' ');
        s << (i < 10    ? "   "
              : i < 100 ? "  "
                        : " ")
          << i << "  " << name << " <- " << in << "  1/" << std::left << std::setw(2) << g.output_scale(i) << std::right
          << cost << "  " << std::visit([](const auto& st) { return st.describe(); }, m.stages[i]) << "\n";
    }
    if (!m.extra_inputs.empty()) {
        s << "inputs       input";
        for (const std::string& e : m.extra_inputs) s << ", " << e;
        s << "\n";
    }
    if (m.output.size() && g.output != g.stage_tensor(m.stages.size() - 1)) s << "output       " << m.output << "\n";
    std::vector<std::string> fused;
    const size_t runs = fuse_stages(m, &fused).stages.size();
    if (!fused.empty()) {
        s << "fused        " << m.stages.size() << " stages run as " << runs << " (into the convolution before):";
        for (const std::string& f : fused) s << "\n             " << f;
        s << "\n";
    }
    return s.str();
}

}  // namespace imr
