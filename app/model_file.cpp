// Model files (the spec: weights/README.md, and each layer's header in
// app/layers/): what a model is (geometry, limits, validation, description)
// and loading it from what the isolated HDF5 reader (model_isolation.h)
// delivers, through each layer's own load. Every failure becomes an
// imr::Error naming the file, the stage and the dataset.
#include "model_file.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <sstream>

#include "model_hdf5.h"
#include "model_isolation.h"
#include "raw_layer_reader.h"

namespace imr {

namespace fs = std::filesystem;
// ------------------------------------------------------------------ geometry

namespace {

// Calls f(stage, scale) for every stage, scale = image pixels per pixel of
// the stage's input (space_to_depth multiplies it, depth_to_space divides).
template <class F>
void walk_scales(const ModelFile& m, F f) {
    int scale = 1;
    for (const Stage& s : m.stages) {
        const Geometry g = stage_geometry(s);
        f(s, scale, g);
        scale = scale * g.down / g.up;
        if (scale < 1) scale = 1;  // only an invalid model; validate_model reports it
    }
}

}  // namespace

size_t ModelFile::parameter_count() const {
    size_t count = 0;
    for (const Stage& s : stages) count += std::visit([](const auto& st) { return st.parameter_count(); }, s);
    return count;
}

int ModelFile::size_multiple() const {
    // Every resolution the stages reach must divide the image exactly: the
    // least common multiple of those reductions (for nested space_to_depth
    // stages, the product of their factors).
    // Saturates (validate_model refuses anything above kMaxSizeMultiple).
    long long m = 1;
    walk_scales(*this, [&](const Stage&, int scale, const Geometry& g) {
        m = std::min<long long>(std::lcm(m, (long long)scale * g.down), 1 << 20);
    });
    return int(m);
}

int ModelFile::radius() const {
    // Walk back from the output: a halo of h image pixels at a stage's output
    // is ceil(h / S_out) of its output pixels (whole blocks at coarse
    // resolutions), which need `radius` more of its input pixels of S_in
    // image pixels each. Summing radius x scale forwards would miss the
    // rounding to blocks when convolutions run at several resolutions.
    std::vector<std::pair<int, int>> scales;  // (S_in, S_out) per stage
    walk_scales(*this, [&](const Stage&, int scale, const Geometry& g) {
        scales.emplace_back(scale, std::max(1, scale * g.down / g.up));
    });
    long long h = 0;
    for (size_t i = stages.size(); i-- > 0;) {
        const Geometry g = stage_geometry(stages[i]);
        const long long s_in = scales[i].first, s_out = scales[i].second;
        h = (h + s_out - 1) / s_out * s_out + (long long)g.radius * s_in;
    }
    const long long m = size_multiple();
    return int((h + m - 1) / m * m);  // tiles start on multiples of m, so halos are whole blocks
}

int ModelFile::receptive_field() const {
    int field = 1;
    walk_scales(*this, [&](const Stage&, int scale, const Geometry& g) { field += (g.window - 1) * scale; });
    return field;
}

size_t ModelFile::activation_floats(int n, int h, int w) const {
    size_t most = size_t(n) * channels * h * w;
    walk_scales(*this, [&](const Stage& s, int scale, const Geometry& g) {
        const int out_scale = scale * g.down / g.up;
        if (out_scale < 1) return;
        most = std::max(most, size_t(n) * stage_out_channels(s) * size_t(h / out_scale) * size_t(w / out_scale));
    });
    return most;
}

double ModelFile::flops_per_pixel() const {
    double flops = 0;
    walk_scales(*this, [&](const Stage& s, int scale, const Geometry& g) {
        const double out_scale = double(scale) * g.down / g.up;
        const double params = double(std::visit([](const auto& st) { return st.parameter_count(); }, s));
        flops += 2.0 * params / (out_scale * out_scale);
    });
    return flops;
}

int ModelFile::min_format_version() const {
    int v = 1;
    for (const Stage& s : stages)
        v = std::max(v, std::visit([](const auto& st) { return st.min_format_version(); }, s));
    return v;
}

// ------------------------------------------------------------------ validation

namespace {
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
    int channels = m.channels, scale = 1;
    for (size_t i = 0; i < m.stages.size(); ++i) {
        const Stage& s = m.stages[i];
        const std::string at = stage_where(where, i, s);
        if (stage_in_channels(s) != channels)
            throw Error(at + ": takes " + std::to_string(stage_in_channels(s)) + " channels but receives " +
                        std::to_string(channels) + (i == 0 ? " (the model's 'channels')" : " from the stage before"));
        std::visit([&](const auto& st) { st.validate(at); }, s);
        const int needs = std::visit([](const auto& st) { return st.min_format_version(); }, s);
        if (needs > m.format_version)
            throw Error(at + ": needs format_version " + std::to_string(needs) + ", the model says " +
                        std::to_string(m.format_version));
        const Geometry g = stage_geometry(s);
        if (g.up > 1 && scale % g.up != 0)
            throw Error(at + ": enlarges by " + std::to_string(g.up) +
                        " beyond the image's resolution (the stages before reduced it by " + std::to_string(scale) +
                        ")");
        scale = scale * g.down / g.up;
        if (scale > 64) throw Error(at + ": reduces the resolution by more than 64 in all");
        channels = stage_out_channels(s);
        if (std::visit([](const auto& st) { return st.adds_model_input(); }, s) &&
            (channels != m.channels || scale != 1))
            throw Error(at + ": adds the model's input, but its output is not image-shaped (" +
                        std::to_string(channels) + " channels at 1/" + std::to_string(scale) +
                        " resolution; the image has " + std::to_string(m.channels) + " at full resolution)");
    }
    if (channels != m.channels)
        throw Error(where + ": the last stage gives " + std::to_string(channels) +
                    " channels but the model's 'channels' is " + std::to_string(m.channels));
    if (scale != 1)
        throw Error(where + ": the last stage gives 1/" + std::to_string(scale) +
                    " of the image's resolution; the model must end at full resolution");
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

    if (!raw.has_stages) throw Error(path + ": group 'stages' is missing");
    int current = m.channels;
    for (size_t i = 0; i < raw.stages.size(); ++i) {
        std::string at = path + ": stage " + std::to_string(i);
        const std::string op = RawLayerReader(raw.stages[i], at, m.format_version).string_attribute("op");
        at += " (" + op + ")";
        RawLayerReader reader(raw.stages[i], at, m.format_version);
        m.stages.push_back(load_stage(op, reader, current));
        current = stage_out_channels(m.stages.back());
    }
    validate_model(m, path);
    return m;
}

void write_model_file(const std::string& path, const ModelFile& in_model) {
    ModelFile model = in_model;
    model.format_version = std::max(model.format_version, model.min_format_version());
    validate_model(model, path);
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
      << "stages\n";
    for (size_t i = 0; i < m.stages.size(); ++i) {
        s << (i < 10 ? "   " : "  ") << i << "  "
          << std::visit([](const auto& st) { return st.describe(); }, m.stages[i]) << "\n";
    }
    return s.str();
}

}  // namespace imr
