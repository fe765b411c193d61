// HDF5 model files (weights/README.md is the spec). Uses the HDF5 C API with a
// small RAII handle; every failure becomes an imr::Error naming the file, the
// stage and the dataset.
#include "model_file.h"

#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <sstream>

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
    int m = 1;
    walk_scales(*this, [&](const Stage&, int scale, const Geometry& g) { m = std::lcm(m, scale * g.down); });
    return m;
}

int ModelFile::radius() const {
    int r = 0;
    walk_scales(*this, [&](const Stage&, int scale, const Geometry& g) { r += g.radius * scale; });
    const int m = size_multiple();
    return (r + m - 1) / m * m;  // tiles start on multiples of m, so halos are whole blocks
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

bool ModelFile::adds_model_input() const {
    for (const Stage& s : stages)
        if (std::visit([](const auto& st) { return st.adds_model_input(); }, s)) return true;
    return false;
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

void validate_model(const ModelFile& m, const std::string& where) {
    if (m.format_version < 1 || m.format_version > kModelFormatVersion)
        throw Error(where + ": format_version " + std::to_string(m.format_version) +
                    " is not supported (this build reads 1.." + std::to_string(kModelFormatVersion) +
                    "; a newer imrestore may read it)");
    if (m.name.empty()) throw Error(where + ": attribute 'name' is empty");
    if (m.channels != 1 && m.channels != 3)
        throw Error(where + ": attribute 'channels' must be 1 (gray) or 3 (RGB), found " + std::to_string(m.channels));
    if (m.stages.empty()) throw Error(where + ": the model has no stages");
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
}

// ------------------------------------------------------------------ HDF5 reading

namespace {

// Owns one HDF5 identifier and closes it with the matching H5?close.
class H5Handle {
public:
    H5Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
    H5Handle(const H5Handle&) = delete;
    H5Handle& operator=(const H5Handle&) = delete;
    ~H5Handle() {
        if (id_ >= 0) close_(id_);
    }
    hid_t get() const { return id_; }
    bool valid() const { return id_ >= 0; }

private:
    hid_t id_;
    herr_t (*close_)(hid_t);
};

// HDF5 prints its own error stack to stderr by default; we report our own.
void silence_hdf5() {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

bool has_attribute(hid_t obj, const char* name) {
    return H5Aexists(obj, name) > 0;
}

std::string read_string_attribute(hid_t obj, const char* name, const std::string& where) {
    H5Handle attr(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
    if (!attr.valid()) throw Error(where + ": attribute '" + name + "' is missing");
    H5Handle type(H5Aget_type(attr.get()), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_STRING) throw Error(where + ": attribute '" + name + "' must be a string");
    H5Handle space(H5Aget_space(attr.get()), H5Sclose);
    if (H5Sget_simple_extent_npoints(space.get()) != 1)
        throw Error(where + ": attribute '" + name + "' must be a single string");
    if (H5Tis_variable_str(type.get()) > 0) {
        H5Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
        H5Tset_size(mem.get(), H5T_VARIABLE);
        H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
        char* value = nullptr;
        if (H5Aread(attr.get(), mem.get(), &value) < 0) throw Error(where + ": cannot read attribute '" + name + "'");
        std::string result = value ? value : "";
        H5free_memory(value);
        return result;
    }
    size_t size = H5Tget_size(type.get());
    std::string value(size, '\0');
    H5Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), size);
    if (H5Aread(attr.get(), mem.get(), value.data()) < 0) throw Error(where + ": cannot read attribute '" + name + "'");
    value.resize(std::min(value.size(), value.find('\0')));
    return value;
}

std::string read_optional_string(hid_t obj, const char* name, const std::string& where) {
    return has_attribute(obj, name) ? read_string_attribute(obj, name, where) : std::string();
}

long long read_int_attribute(hid_t obj, const char* name, const std::string& where) {
    H5Handle attr(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
    if (!attr.valid()) throw Error(where + ": attribute '" + name + "' is missing");
    H5Handle type(H5Aget_type(attr.get()), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_INTEGER) throw Error(where + ": attribute '" + name + "' must be an integer");
    H5Handle space(H5Aget_space(attr.get()), H5Sclose);
    if (H5Sget_simple_extent_npoints(space.get()) != 1)
        throw Error(where + ": attribute '" + name + "' must be a single integer");
    long long value = 0;
    if (H5Aread(attr.get(), H5T_NATIVE_LLONG, &value) < 0)
        throw Error(where + ": cannot read attribute '" + name + "'");
    return value;
}

struct Tensor {
    std::vector<hsize_t> shape;
    std::vector<float> data;
};

std::string shape_str(const std::vector<hsize_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
    return s + "]";
}

// Reads a float32 dataset of the given rank; the caller checks the dimensions.
Tensor read_tensor(hid_t group, const char* name, int rank, const std::string& where) {
    if (H5Lexists(group, name, H5P_DEFAULT) <= 0) throw Error(where + ": dataset '" + name + "' is missing");
    H5Handle dset(H5Dopen2(group, name, H5P_DEFAULT), H5Dclose);
    if (!dset.valid()) throw Error(where + ": '" + name + "' is not a dataset");
    H5Handle type(H5Dget_type(dset.get()), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_FLOAT || H5Tget_size(type.get()) != 4)
        throw Error(where + ": dataset '" + name + "': expected float32, found " +
                    (H5Tget_class(type.get()) == H5T_FLOAT ? "float" + std::to_string(8 * H5Tget_size(type.get()))
                                                           : std::string("a non-float type")));
    H5Handle space(H5Dget_space(dset.get()), H5Sclose);
    int found_rank = H5Sget_simple_extent_ndims(space.get());
    Tensor t;
    if (found_rank >= 0) {
        t.shape.resize(found_rank);
        H5Sget_simple_extent_dims(space.get(), t.shape.data(), nullptr);
    }
    if (found_rank != rank)
        throw Error(where + ": dataset '" + name + "': expected rank " + std::to_string(rank) + ", found rank " +
                    std::to_string(found_rank) + " " + shape_str(t.shape));
    hsize_t count = 1;
    for (hsize_t d : t.shape) count *= d;
    if (count > (hsize_t(1) << 30))
        throw Error(where + ": dataset '" + name + "' is implausibly large " + shape_str(t.shape));
    t.data.resize(count);
    if (count && H5Dread(dset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.data.data()) < 0)
        throw Error(where + ": cannot read dataset '" + name + "'");
    return t;
}

// LayerReader over one HDF5 stage group.
class H5LayerReader : public LayerReader {
public:
    H5LayerReader(hid_t group, std::string where, int format_version)
        : group_(group), where_(std::move(where)), version_(format_version) {}
    const std::string& where() const override { return where_; }
    Tensor tensor(const char* name, int rank) override {
        ::imr::Tensor t = read_tensor(group_, name, rank, where_);
        return {std::vector<unsigned long long>(t.shape.begin(), t.shape.end()), std::move(t.data)};
    }
    bool has_tensor(const char* name) override { return H5Lexists(group_, name, H5P_DEFAULT) > 0; }
    bool has_attribute(const char* name) override { return ::imr::has_attribute(group_, name); }
    std::string string_attribute(const char* name) override { return read_string_attribute(group_, name, where_); }
    long long int_attribute(const char* name) override { return read_int_attribute(group_, name, where_); }
    int format_version() const override { return version_; }

private:
    hid_t group_;
    std::string where_;
    int version_;
};

// Stage groups are named "0".."n-1"; returns them in numeric order.
std::vector<std::string> stage_names(hid_t stages, const std::string& where) {
    H5G_info_t info;
    if (H5Gget_info(stages, &info) < 0) throw Error(where + ": cannot list group 'stages'");
    std::vector<bool> seen(info.nlinks, false);
    for (hsize_t i = 0; i < info.nlinks; ++i) {
        char name[64] = {0};
        H5Lget_name_by_idx(stages, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name, H5P_DEFAULT);
        std::string s = name;
        bool numeric =
            !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), ::isdigit) && (s == "0" || s[0] != '0');
        size_t index = numeric ? std::stoul(s) : info.nlinks;
        if (index >= info.nlinks || seen[index])
            throw Error(where + ": group 'stages' holds '" + s + "'; expected stages named 0.." +
                        std::to_string(info.nlinks - 1));
        seen[index] = true;
    }
    std::vector<std::string> names;
    for (hsize_t i = 0; i < info.nlinks; ++i) names.push_back(std::to_string(i));
    return names;
}

}  // namespace

ModelFile load_model_file(const std::string& path) {
    silence_hdf5();
    std::error_code ec;
    if (!fs::exists(path, ec)) throw Error(path + ": no such model file");
    if (fs::is_directory(path, ec)) throw Error(path + ": is a directory, not a model file");
    if (H5Fis_hdf5(path.c_str()) <= 0)
        throw Error(path + ": not an HDF5 file (an imrestore model is HDF5; see weights/README.md)");
    H5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!file.valid()) throw Error(path + ": cannot open the HDF5 file");

    ModelFile m;
    m.path = path;
    hid_t root = file.get();
    if (!has_attribute(root, "format"))
        throw Error(path + ": attribute 'format' is missing: not an imrestore model (expected format = '" +
                    kModelFormatName + "')");
    std::string format = read_string_attribute(root, "format", path);
    if (format != kModelFormatName)
        throw Error(path + ": attribute 'format' is '" + format + "', expected '" + kModelFormatName + "'");
    long long version = read_int_attribute(root, "format_version", path);
    if (version < 1 || version > kModelFormatVersion)
        throw Error(path + ": format_version " + std::to_string(version) + " is not supported (this build reads 1.." +
                    std::to_string(kModelFormatVersion) + "; a newer imrestore may read it)");
    m.format_version = int(version);
    m.name = read_string_attribute(root, "name", path);
    m.task = read_string_attribute(root, "task", path);
    m.description = read_string_attribute(root, "description", path);
    m.provenance = read_string_attribute(root, "provenance", path);
    m.license = read_optional_string(root, "license", path);
    long long channels = read_int_attribute(root, "channels", path);
    if (channels != 1 && channels != 3)
        throw Error(path + ": attribute 'channels' must be 1 (gray) or 3 (RGB), found " + std::to_string(channels));
    m.channels = int(channels);

    if (H5Lexists(root, "stages", H5P_DEFAULT) <= 0) throw Error(path + ": group 'stages' is missing");
    H5Handle stages(H5Gopen2(root, "stages", H5P_DEFAULT), H5Gclose);
    if (!stages.valid()) throw Error(path + ": 'stages' is not a group");
    int current = m.channels;
    for (const std::string& name : stage_names(stages.get(), path)) {
        H5Handle g(H5Gopen2(stages.get(), name.c_str(), H5P_DEFAULT), H5Gclose);
        std::string at = path + ": stage " + name;
        if (!g.valid()) throw Error(at + ": is not a group");
        std::string op = read_string_attribute(g.get(), "op", at);
        at += " (" + op + ")";
        H5LayerReader reader(g.get(), at, m.format_version);
        m.stages.push_back(load_stage(op, reader, current));
        current = stage_out_channels(m.stages.back());
    }
    validate_model(m, path);
    return m;
}
// ------------------------------------------------------------------ writing

namespace {

void write_string_attribute(hid_t obj, const char* name, const std::string& value) {
    H5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type.get(), H5T_VARIABLE);
    H5Tset_cset(type.get(), H5T_CSET_UTF8);
    H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    H5Handle attr(H5Acreate2(obj, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    const char* data = value.c_str();
    if (!attr.valid() || H5Awrite(attr.get(), type.get(), &data) < 0)
        throw Error(std::string("cannot write attribute '") + name + "'");
}

void write_int_attribute(hid_t obj, const char* name, long long value) {
    H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    H5Handle attr(H5Acreate2(obj, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (!attr.valid() || H5Awrite(attr.get(), H5T_NATIVE_LLONG, &value) < 0)
        throw Error(std::string("cannot write attribute '") + name + "'");
}

void write_tensor(hid_t group, const char* name, const std::vector<float>& data, const std::vector<int>& shape) {
    std::vector<hsize_t> dims(shape.begin(), shape.end());
    H5Handle space(H5Screate_simple(int(dims.size()), dims.data(), nullptr), H5Sclose);
    H5Handle dset(H5Dcreate2(group, name, H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                  H5Dclose);
    if (!dset.valid() || H5Dwrite(dset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) < 0)
        throw Error(std::string("cannot write dataset '") + name + "'");
}

// LayerWriter over one HDF5 stage group.
class H5LayerWriter : public LayerWriter {
public:
    explicit H5LayerWriter(hid_t group) : group_(group) {}
    void tensor(const char* name, const std::vector<float>& data, std::vector<int> shape) override {
        write_tensor(group_, name, data, shape);
    }
    void string_attribute(const char* name, const std::string& value) override {
        write_string_attribute(group_, name, value);
    }
    void int_attribute(const char* name, long long value) override { write_int_attribute(group_, name, value); }

private:
    hid_t group_;
};

void write_stage(hid_t group, const Stage& s) {
    write_string_attribute(group, "op", stage_op_name(s));
    H5LayerWriter writer(group);
    std::visit([&](const auto& st) { st.write(writer); }, s);
}

}  // namespace

void write_model_file(const std::string& path, const ModelFile& in_model) {
    ModelFile model = in_model;
    model.format_version = std::max(model.format_version, model.min_format_version());
    validate_model(model, path);
    silence_hdf5();
    std::string tmp = path + ".tmp-" + std::to_string(getpid());
    try {
        H5Handle file(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
        if (!file.valid()) throw Error("cannot create the file");
        hid_t root = file.get();
        write_string_attribute(root, "format", kModelFormatName);
        write_int_attribute(root, "format_version", model.format_version);
        write_string_attribute(root, "name", model.name);
        write_string_attribute(root, "task", model.task);
        write_string_attribute(root, "description", model.description);
        write_string_attribute(root, "provenance", model.provenance);
        if (!model.license.empty()) write_string_attribute(root, "license", model.license);
        write_int_attribute(root, "channels", model.channels);
        H5Handle stages(H5Gcreate2(root, "stages", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
        for (size_t i = 0; i < model.stages.size(); ++i) {
            H5Handle g(H5Gcreate2(stages.get(), std::to_string(i).c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                       H5Gclose);
            if (!g.valid()) throw Error("cannot create group 'stages/" + std::to_string(i) + "'");
            write_stage(g.get(), model.stages[i]);
        }
    } catch (const Error& e) {
        std::remove(tmp.c_str());
        throw Error(path + ": " + e.what());
    }
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) {
        std::remove(tmp.c_str());
        throw Error(path + ": cannot write: " + ec.message());
    }
}
// ------------------------------------------------------------------ describe

std::string describe_model(const ModelFile& m) {
    std::ostringstream s;
    s << "model        " << m.name << (m.path.empty() ? "" : "  (" + m.path + ")") << "\n"
      << "task         " << m.task << "\n"
      << "format       " << kModelFormatName << " v" << m.format_version << "\n"
      << "channels     " << m.channels << "\n"
      << "parameters   " << m.parameter_count() << "\n"
      << "receptive    " << m.receptive_field() << "x" << m.receptive_field() << " pixels\n";
    if (!m.license.empty()) s << "license      " << m.license << "\n";
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
